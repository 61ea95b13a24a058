/* fma_cases.h — the inputs of the tile IR's fma tests, shared by the
 * interpreter's suite (against an exact model) and the C and CUDA
 * generators' (against the interpreter, bit for bit). Defined in
 * tests/unit/fma_cases.c. */
#ifndef TSL_TEST_FMA_CASES_H
#define TSL_TEST_FMA_CASES_H

#include "base/base.h"

/* The text of kernel fma_<dt> (malloc'd) over 1-D global tensors of N
 * elements, 96 a block in spatial(32).local(3) registers (an odd local
 * count: the CUDA generator's pairs and its single last local):
 *   Z = fma A, B, C
 *   W = fma A, -0.3, C   (a scalar operand, in place: `-> c`) */
char *test_fma_program(tsl_dtype dt);

/* A, B, C (n elements of dt: f16, bf16, f32 or f64) filled with triples
 * of four kinds, by i % 4: random bit patterns (subnormals, infinities and
 * NaN among them); c = -(a*b rounded to dt), so the result is a*b's
 * rounding error; c = m - a*b for m a midpoint of dt next to a*b (a tie
 * whenever dt holds that c); the double-rounding corner: a*b exactly a
 * midpoint of dt (a = ±1.5 2^i, b = ±(1 + 2^-man) 2^j) and c = ±2^k far
 * below its half unit, so the result must round toward c. */
void test_fma_fill(tsl_dtype dt, void *A, void *B, void *C, int64_t n);

/* The first element of n where x and y (dt) differ in bits (NaN equals
 * NaN, whatever its payload), or -1. */
int64_t test_fma_first_diff(tsl_dtype dt, const void *x, const void *y, int64_t n);

#endif
