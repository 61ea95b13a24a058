/* interp.h — the reference interpreter: runs one bound def (lang_bound) on
 * host arrays. It is the oracle every other target is checked against, so
 * it favours obviously-right over fast: per statement, the right-hand side
 * is evaluated over the whole iteration box by plain recursion over the
 * expression tree into a per-statement accumulator (float64 when the LHS
 * dtype is a float, exact int64 wrapped to the LHS dtype otherwise), and
 * only then written to the LHS tensor. The semantics are lang.h's. */
#ifndef TSL_INTERP_H
#define TSL_INTERP_H

#include "lang/lang.h"

/* One tensor of the def as the interpreter sees it: a strided view of host
 * memory. Element (i0, ..., i{rank-1}) lives at
 *     element e = i0*stride[0] + ... + i{rank-1}*stride[rank-1] of base:
 *     byte base + e * bytes(dtype), or for a packed low-bit dtype bits
 *     [e * bits, (e+1) * bits) (strides in elements, may be any sign or
 *     zero; a packed tensor's are non-negative). */
typedef struct interp_tensor {
    char *base;                    /* temporaries: ignored, allocated per run */
    tsl_dtype dtype;
    int rank;
    int64_t shape[TSL_MAX_RANK];
    int64_t stride[TSL_MAX_RANK];  /* elements */
    double scalar;                 /* scalar parameters: the value */
} interp_tensor;

/* Run b->def. `tensors` has b->def->ntensors entries in def->tensors order:
 * parameters and outputs point at caller memory with the bound shapes
 * (b->shapes); scalar parameters carry `scalar`; temporaries
 * (LANG_TENSOR_TEMP) are allocated, zeroed, and freed by this call. Outputs are written in place;
 * inputs are only read. Run-time errors (an indirect index out of range,
 * integer division by zero) go to d with the source location, and the
 * status is returned; outputs may then be partly written. */
tsl_status interp_run(const lang_bound *b, const interp_tensor *tensors, tsl_diag *d);

/* The tolerance of def tensor `out` against the interpreter (tolerance.c):
 * the base tolerance of the narrowest float the output is computed through
 * (its own dtype, the temporaries and the float arithmetic and casts of the
 * statements behind it: float64 1e-12, float32 1e-5, float16 and bfloat16
 * 1e-2, a low-bit float one mantissa step; integers 0, exact), grown by
 * sqrt(len / 256) past 256 terms of the longest reduction behind it (len,
 * also given in *reduction_length when not NULL). */
double interp_tolerance(const lang_bound *b, int out, int64_t *reduction_length);

#endif
