/* attention.h — the attention strategy (attention.c; docs/sched.md "The
 * attention strategy"): a group fuse.c merged from an attention chain
 * (graph/attention.c) becomes ONE kernel that never materialises the
 * Tq x Tk scores: per block of query rows it streams K and V in blocks,
 * S = Q·Kᵀ, the score ops (scale, masks), the online softmax (softmax.h),
 * O += P·V, and divides by the row sums at the end.
 *
 * sched_attn is what every per-target plan reads: the recognised chain,
 * its tensors, sizes, scale and mask. A plan function takes it and returns
 * 1 when it appended its launch(es), 0 to decline (the next plan, finally
 * the generic lowering, takes the group):
 *
 *   sched_attn_plan_sm90   sm_90a flash attention (wgmma + TMA; attn_sm90.c):
 *                          f16/bf16, head dims 64 and 128, no mask or j <= i;
 *                          one launch per head-dim pair, guarded by the sizes,
 *                          and *rest the guard of the sizes it leaves to the
 *                          next plan (n == 0: none)
 *   sched_attn_plan_tile   CPU and generic CUDA: FMA outer products in f32
 *                          on register tiles, K/V blocks through shared
 */
#ifndef TSL_SCHED_ATTENTION_H
#define TSL_SCHED_ATTENTION_H

#include "sched/strategy.h"

/* What the score ops do, as far as a plan with a fixed epilogue (a
 * hand-written flash kernel) needs to know. */
typedef enum sched_attn_mask {
    SCHED_ATTN_MASK_NONE,    /* no mask */
    SCHED_ATTN_MASK_CAUSAL,  /* select(j <= i, s, c) or j < i + 1 ...: an
                                index comparison (causal_off: j <= i + off) */
    SCHED_ATTN_MASK_TENSOR,  /* reads a mask tensor (mask_tensor) */
    SCHED_ATTN_MASK_GENERAL  /* anything else the score ops compute */
} sched_attn_mask;

typedef struct sched_attn {
    const graph *g;
    const graph_group *grp;
    graph_attention at;       /* the ops by role, Q K V O tensors */
    int nb;                   /* batch dims (0..2), leading in Q K V O */
    const lang_sexpr *batch[2]; /* their extents */
    const lang_sexpr *tq, *tk, *d, *e; /* query rows, keys, head dim of Q/K, of V/O */
    tsl_dtype dq, dk, dv, dout; /* dtypes of Q, K, V, O */
    /* the score ops, summarised: S' = mask(S * scale) when `simple` */
    int simple;               /* the score ops are exactly scale then mask */
    double scale;             /* constant factor (1 when none) */
    int scale_scalar;         /* a scalar parameter multiplying S, or -1 */
    int scale_rsqrt_size;     /* S / sqrt(size symbol) : that symbol, or -1 */
    sched_attn_mask mask;
    int64_t causal_off;       /* CAUSAL: keep j <= i + causal_off */
    double mask_fill;         /* CAUSAL: the value of masked scores (-1e30) */
    int mask_tensor;          /* TENSOR: its def tensor, else -1 */
} sched_attn;

/* Fill *a from an attention group; 0 when the group is not one. */
int sched_attn_recognise(const graph *g, const graph_group *grp, sched_attn *a);

int sched_attn_plan_sm90(sched_plan *p, const sched_attn *a, sched_guard *rest);
int sched_attn_plan_tile(sched_plan *p, const sched_attn *a, const sched_guard *guard);

/* The dispatch entry (strategy.h): recognise, then the plans in order. */
int sched_lower_attention(sched_plan *p, const graph *g, const graph_group *grp);

#endif
