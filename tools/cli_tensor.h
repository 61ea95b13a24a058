/* cli_tensor.h — host-tensor helpers for the `tessel run` command: random
 * inputs, dtype conversion, summaries, and comparison against a reference.
 * Every function works on any DLTensor the API hands out (strides NULL or
 * not, byte_offset honoured). */
#ifndef TSL_CLI_TENSOR_H
#define TSL_CLI_TENSOR_H

#include <stdint.h>
#include <stdio.h>

#include "tessel.h"

/* splitmix64: small, fast, and good enough for test inputs. */
typedef struct cli_rng {
    uint64_t state;
} cli_rng;

void cli_rng_seed(cli_rng *r, uint64_t seed);
uint64_t cli_rng_next(cli_rng *r);
/* A seed that differs from run to run (time, pid, address). */
uint64_t cli_rng_fresh_seed(void);

/* Element count; 1 for rank 0. */
int64_t cli_tensor_numel(const DLTensor *t);
/* The tensor's tessel dtype; -1 if DLPack has no tessel equivalent. */
int cli_tensor_dtype(const DLTensor *t, tsl_dtype *out);

/* Fill with fresh random values: floats uniform in [-1,1), signed ints in
 * [-8,8), unsigned ints in [0,8), bools 0/1; the low-bit types over their
 * whole range (integers uniform, floats a uniform finite code). */
void cli_tensor_fill_random(DLTensor *t, cli_rng *r);
/* Fill an integer tensor with random values uniform in [lo, hi) (hi > lo). */
void cli_tensor_fill_range(DLTensor *t, cli_rng *r, int64_t lo, int64_t hi);

/* A new C-order tensor of dtype `to` holding `src`'s values converted
 * element by element (through double). NULL when out of memory. */
DLTensor *cli_tensor_convert(const DLTensor *src, tsl_dtype to);
/* v in the fewest significant digits that read back as v ("0.1", "1.9"). */
void cli_fmt_double(char *buf, size_t cap, double v);
/* For a conversion to integer or bool dtype `to` (of any width): the
 * linear index of the first element of src whose value the conversion
 * would change -- not integral, NaN, infinite or out of to's range --
 * with that value, exactly, as text in bad[cap]; -1 when every one
 * converts exactly (and for a float `to`). */
int64_t cli_tensor_check_exact(const DLTensor *src, tsl_dtype to, char *bad, size_t cap);
/* For a conversion to float dtype `to`: how many elements of src change
 * value (rounded or out of range); the first one's linear index, value
 * and converted value in *first, *was, *now. 0 for an integer `to`. */
int64_t cli_tensor_count_inexact(const DLTensor *src, tsl_dtype to, int64_t *first, double *was, double *now);
/* A low-bit tensor's storage as a uint8 tensor: the packed bytes (1-D,
 * tsl_dtype_nbytes long) of a packed dtype, the codes (same shape) of a
 * byte-sized one. NULL for wider dtypes or when out of memory. */
DLTensor *cli_tensor_packed_bytes(const DLTensor *src);
/* A new C-order copy. */
DLTensor *cli_tensor_copy(const DLTensor *src);

/* "A(384,257) float32" into buf. */
void cli_tensor_describe(char *buf, size_t cap, const char *name, const DLTensor *t);

/* One line: min, max, mean and the first few values; with `all`, every
 * value of a small tensor (larger ones still get the first few). */
void cli_tensor_print_summary(FILE *f, const char *name, const DLTensor *t, int all);

/* Compare `got` to `ref` (same shape): max |got - ref| over the largest
 * |ref| (or over 1 when every |ref| < 1, so near-zero results do not blow
 * up); for integer and bool results the largest absolute difference. A NaN
 * in one but not the other, or a shape mismatch, gives +inf. */
double cli_tensor_max_rel_error(const DLTensor *got, const DLTensor *ref);

/* (the tolerance `--check` compares this with: tsl_args_tolerance) */

#endif
