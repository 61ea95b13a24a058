/* dequant.h — the CUDA target's conversions of low-bit codes to floats
 * (Tilus section 5, "fast dequantization"), as table rows: which bit trick
 * turns a thread's packed words into f16 or f32 registers, the PTX the CUDA
 * generator prints for it (codegen/cuda_dequant.c) and its semantics, which
 * this file computes instruction by instruction (lop3's truth table,
 * prmt's byte selection, f16x2 arithmetic) for the tile interpreter's
 * contract and the tests: every row equals the reference conversion
 * (dtype_get, then rounding to the output type) on every code of every
 * dtype it takes (tests/unit/test_dequant.c). */
#ifndef TSL_TARGET_DEQUANT_H
#define TSL_TARGET_DEQUANT_H

#include <stdint.h>

#include "base/base.h"

/* How a row converts. The f16 rows work on pairs of slots (the two halves
 * of one f16x2 register); the f32 rows on one slot at a time. */
typedef enum target_dq_how {
    TARGET_DQ_PRMT,    /* 8-bit ints: prmt sets bytes 2i, 2i+1 of a word under the byte 0x64 (f16 1024 + c), sub.f16x2 */
    TARGET_DQ_LOP3,    /* 1, 2, 4-bit ints: one lop3 masks fields i and i + 16/N of a word under 0x6400, sub.f16x2 */
    TARGET_DQ_PAIR,    /* other int widths: two fields (shift, funnel shift) side by side, the same lop3 and sub */
    TARGET_DQ_FLOAT,   /* low-bit floats every value of which is an f16: sign and exponent|mantissa moved to f16's
                        * fields, mul.f16x2 by 2^(15 - bias) (a NaN-only-at-all-ones format fixes that code up) */
    TARGET_DQ_MAGIC32, /* ints to f32: the float 2^23 + c (or 1.5 * 2^23 + c, sign-extended) minus its magic */
    TARGET_DQ_DEC32,   /* low-bit floats to f32: lowbit_conv.h's tsl_lbdec (exact, flush-to-zero safe) */
    TARGET_DQ_COUNT
} target_dq_how;

typedef struct target_dequant {
    const char *name;   /* e.g. "dequant.lop3.f16x2" */
    target_dq_how how;
    unsigned kinds;     /* 1 << DT_UINT | 1 << DT_INT | 1 << DT_FLOAT: source kinds it takes */
    unsigned widths;    /* 1 << N for every source width N it takes (1..8) */
    int out_bits;       /* 16: f16 out, 32: f32 out */
    const char *ptx;    /* the bit instruction the CUDA generator prints (an asm template), or NULL:
                         * C shifts and masks (ptxas makes them bfe / shf / lop3) */
    const char *ptx2;   /* the f16x2 arithmetic after it, or NULL (f32 rows) */
    const char *what;
} target_dequant;

extern const target_dequant target_dequant_rows[];
extern const int target_dequant_nrows;

/* The first row converting codes of q to float y (f16 or f32) exactly, or
 * NULL (then the generators' generic element-wise conversion). */
const target_dequant *target_dequant_find(dtype_desc q, dtype_desc y);

/* Slot l of n (slot l is bits [l*N, (l+1)*N) of the thread's bit stream)
 * shares its f16x2 register with slot *partner (-1: none, an f32 row or
 * the last odd slot; a partner >= n is a padding field), in the high half
 * when *hi. The pair's low slot computes the register. */
void target_dequant_pair(const target_dequant *r, dtype_desc q, int64_t l, int64_t n, int64_t *partner, int *hi);

/* The row's semantics: the result bits (f16 in the low 16 bits, or f32) of
 * slot l of the bit stream `w` (32-bit words, bit 0 the lowest of w[0]; one
 * zero word past the last field). */
uint32_t target_dequant_eval(const target_dequant *r, dtype_desc q, const uint32_t *w, int64_t l);

/* Parts of a row's instructions, for the generator and eval: the lop3
 * operands of a pair (mask, magic, truth table: (a & b) | c for unsigned,
 * (a & b) ^ c for signed), the f16x2 constant the pair is subtracted
 * (ints) or multiplied (floats, 0: no multiply) by, the prmt selector of
 * the pair starting at byte 2k. */
void target_dequant_lop3(dtype_desc q, uint32_t *mask, uint32_t *magic, unsigned *lut);
uint32_t target_dequant_f16x2(dtype_desc q);
uint32_t target_dequant_prmt_sel(int k);
/* The f16 bits of FLOAT slot code c before the multiply (sign at bit 15,
 * exponent and mantissa at the top of f16's). */
uint32_t target_dequant_place(dtype_desc q, uint32_t c);

#endif
