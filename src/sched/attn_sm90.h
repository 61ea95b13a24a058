/* attn_sm90.h — the sm_90a flash-attention kernel of the attention
 * strategy (docs/sched.md, "Attention on Hopper"): one kernel per head-dim
 * pair, written from the shape below. */
#ifndef TSL_SCHED_ATTN_SM90_H
#define TSL_SCHED_ATTN_SM90_H

#include "base/base.h"

/* What the kernel computes: O = softmax(S) V with S = (Q K^T) * scale, per
 * entry of the leading batch dims, masked columns dropped from the softmax:
 *   Q [batch..., Tq, d], K [batch..., Tk, d], V [batch..., Tk, e],
 *   O [batch..., Tq, e], all of dtype dt (f16 or bf16), f32 accumulation.
 * The batch extents are shared by the four tensors (symbols B0, B1). */
typedef struct sched_attn_sm90 {
    int nbatch;        /* 0, 1 or 2 leading batch dims */
    int d, e;          /* 64, 128, 192 or 256 each */
    tsl_dtype dt;      /* TSL_DTYPE_F16 or TSL_DTYPE_BF16 */
    int causal;        /* keep column j of row i only when j <= i */
    const char *scale; /* a float literal, or the name of a typed f32
                          scalar parameter the kernel then takes last */
    int bn_wide;       /* K/V rows a block when e > 128: 64 (or 0) or 80 */
    int pingpong;      /* the two consumers issue their products in turns */
    int persistent;    /* a block a multiprocessor, looping over the tiles
                          (the last parameter c_nsm: the multiprocessor count) */
} sched_attn_sm90;

/* Whether the kernel can be written for a (0 and a reason in *why when
 * not). */
int sched_attn_sm90_fits(const sched_attn_sm90 *a, const char **why);

/* The kernel `kname` as tile IR text (malloc'd; the caller frees), its
 * parameters Q, K, V, O in that order, then the scale when it is a
 * parameter, then (persistent) c_nsm. NULL when it does not fit. */
char *sched_attn_sm90_text(const sched_attn_sm90 *a, const char *kname);

#endif
