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
/* For a conversion to integer dtype `to`: the linear index of the first
 * element of src that is not integral or not in to's range (its value in
 * *bad), or -1 when every one fits (and for float, bool and 64-bit `to`). */
int64_t cli_tensor_check_range(const DLTensor *src, tsl_dtype to, double *bad);
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

/* The tolerance `--check` uses for a result dtype: f64 1e-12, f32 1e-5,
 * f16/bf16 1e-2, a low-bit float 2^-mantissa bits, integers and bool 0
 * (exact); for an output behind reductions of more than 256 terms
 * (tsl_args_reduction_length), times sqrt(length / 256). */
double cli_dtype_tolerance(tsl_dtype t, int64_t reduction_length);

#endif
