/* sched.h — the scheduler: lowers the op graph of a checked TC def to a
 * tile module plus a host-side plan (which kernel runs when, with which
 * tensors, scalars and int parameters). docs/sched.md describes the
 * strategies; the generic one is correct for every TC program:
 *
 *   - one kernel per statement (or per run of fused pointwise statements
 *     sharing one iteration box), run in statement order; every tensor,
 *     temporaries included, lives in memory the run path allocates;
 *   - the grid tiles the flattened parallel box into blocks of
 *     SCHED_THREADS x SCHED_LOCALS lanes; a lane's box coordinates come
 *     from its flat index by div/mod with the box extents (int
 *     parameters); lanes past the box are masked off;
 *   - the RHS becomes elementwise instructions on register tiles, each
 *     tensor read a gather, or a contiguous load_global of the tensor
 *     viewed 1-D when the read is the identity and the box is the whole
 *     tensor, reductions `for` loops accumulating
 *     in f32 (f16/bf16/f32 LHS), f64 (f64 LHS) or i64 (integer LHS); the
 *     result is cast to the LHS dtype and scattered (masked).
 *
 * Everything lives in the arena given to sched_lower. */
#ifndef TSL_SCHED_H
#define TSL_SCHED_H

#include "base/base.h"
#include "graph/graph.h"
#include "sched/options.h"
#include "tile/interp.h"
#include "tile/tile.h"

enum { SCHED_THREADS = 128, SCHED_LOCALS = 4, SCHED_BLOCK = SCHED_THREADS * SCHED_LOCALS };

typedef enum sched_arg_kind {
    SCHED_ARG_TENSOR, /* a tensor of the def (def->tensors[tensor]) */
    SCHED_ARG_SCALAR, /* a scalar parameter of the def, passed as a typed scalar */
    SCHED_ARG_SIZE,   /* int: size symbol `sym` of the def (box bounds are int
                         expressions over the size symbols) */
    SCHED_ARG_SMS,    /* int: the device's multiprocessor count (a persistent
                         grid's size; 1 off the GPU) */
    SCHED_ARG_SCRATCH /* a buffer of the plan (plan->scratch[scratch]) that the
                         run allocates: values one launch leaves for the next
                         (a full reduction's per-block partials) */
} sched_arg_kind;

/* One kernel parameter and where its value comes from. */
typedef struct sched_arg {
    const char *name; /* the kernel parameter's name */
    sched_arg_kind kind;
    int tensor;       /* TENSOR, SCALAR */
    int flat;         /* TENSOR: passed as 1-D of all its elements (C order) */
    int bytes;        /* TENSOR: a tensor of at most 8 bits (packed, or an
                         8-bit weight read by the same kernels) passed as its
                         storage, u8 of the same rank with the last extent in
                         bytes (extent * bits / 8: the launch's guard makes it
                         whole) */
    int rows;         /* TENSOR: 1 + v: dim 0's extent is cut to the range hi of
                         var v of the launch's statement (a prefix of rows: the
                         reduction box of a quantized matmul); 0: the tensor's */
    int sym;          /* SIZE */
    int scratch;      /* SCRATCH */
} sched_arg;

/* A launch's condition on the sizes: n terms, each size symbol `sym[i]` a
 * multiple of val[i] (MOD: the sm_90a GEMM's TMA rows need 16-byte
 * strides), at most val[i] (LE), above it (GT: small-M and large-M
 * plans) or other than it (NE: a head dim no attention kernel is written
 * for). Term i belongs to group grp[i]: the `when` terms (group 0) must
 * all hold, and for each `unless` group u > 0 not all of its terms may
 * hold: "when A && B unless C unless D && E". A fallback plan runs unless
 * its fast plan's condition holds; a part of a merged chain that has
 * guarded plans of its own runs them unless the chain's condition holds.
 * Several launches of one group have exclusive guards. */
#define SCHED_MAX_GUARD 16
typedef enum { SCHED_GUARD_MOD, SCHED_GUARD_LE, SCHED_GUARD_GT, SCHED_GUARD_NE } sched_guard_op;
typedef struct sched_guard {
    int n;
    int sym[SCHED_MAX_GUARD];
    sched_guard_op op[SCHED_MAX_GUARD];
    int64_t val[SCHED_MAX_GUARD];
    int grp[SCHED_MAX_GUARD];
} sched_guard;
/* Whether the guard lets the launch run under the sizes (by slot). */
int sched_guard_holds(const sched_guard *g, const int64_t *sizes);
/* The number of unless groups of g (the largest group number). */
int sched_guard_nunless(const sched_guard *g);
/* g's when terms as one unless group: runs exactly when g's condition
 * fails (g must have no unless group). */
void sched_guard_negate(sched_guard *g);
/* The guard that the n extents are multiples of m (TMA's 16-byte rows):
 * g = `sym % m == 0` for each distinct size symbol among them. 0 when a
 * constant one is not a multiple (no guard can help). */
int sched_guard_multiples(sched_guard *g, const lang_sexpr *const *ext, int n, int64_t m);
/* g && !(u's condition): u's when terms appended as a new unless group.
 * 0 (g unchanged) when u has unless groups of its own or the terms do not
 * fit. */
int sched_guard_unless(sched_guard *g, const sched_guard *u);
/* A buffer the plan owns: `count` elements of `dtype`, 1-D. Its contents
 * are undefined at the start of a run (the launch that writes it runs
 * before any that reads it). */
typedef struct sched_scratch {
    tsl_dtype dtype;
    int64_t count;
} sched_scratch;

/* One kernel launch of the plan. */
typedef struct sched_launch {
    tile_kernel *k;
    int stmt;         /* the statement whose parallel box the grid covers */
    int nstmts;       /* statements [stmt, stmt + nstmts) it computes */
    sched_arg *args;  /* one per kernel parameter, in parameter order */
    int nargs, capargs;
    sched_guard guard; /* n == 0: always runs */
} sched_launch;

typedef struct sched_plan {
    const lang_def *def;
    tsl_target target;      /* what the plan is for: strategies may choose
                             * tile shapes per target (TSL_TARGET_CUDA
                             * when the caller did not say) */
    int sm;                 /* CUDA: the compute capability x 10 the plan is
                             * for: 80 (mma.sync, cp.async; the default) or
                             * 90 (sm_90a: TMA, wgmma, warpgroups) */
    const sched_options *opt; /* the strategies' choices (never NULL) */
    tile_module *m;
    sched_launch *launches; /* in execution order */
    int nlaunches, caplaunches;
    sched_scratch *scratch; /* buffers between launches */
    int nscratch, capscratch;
    unsigned char *tensor_used; /* per def tensor: some launch takes it */
    char *notes;            /* why a strategy declined a group it matched
                             * (its own plan did not verify), one line each;
                             * NULL when none */
    int partial;            /* set by a strategy whose launches cover only
                             * the sizes where `covered` (when terms) holds:
                             * lower.c runs the group's parts unless it */
    sched_guard covered;
} sched_plan;

/* Lower every group of g (built from def) to tile IR. The module verifies
 * (the caller may check with tile_verify). NULL only on an internal error,
 * reported in d. */
sched_plan *sched_lower(tsl_arena *a, const graph *g, tsl_diag *d);
/* The same, with the plan's tile shapes chosen for target (TSL_TARGET_CPU
 * or TSL_TARGET_CUDA; sched_lower is this with TSL_TARGET_CUDA). Every plan
 * is correct on every target; only its speed depends on the choice. */
sched_plan *sched_lower_for(tsl_arena *a, const graph *g, tsl_target target, tsl_diag *d);
/* The same for a CUDA arch: sm = 80 or 90 (sm_90a). sched_lower_for is
 * this with sm = 80. */
sched_plan *sched_lower_sm(tsl_arena *a, const graph *g, tsl_target target, int sm, tsl_diag *d);
/* The same with the strategies' options (NULL: sched_options_defaults);
 * the caller checks them first (sched_options_check). */
sched_plan *sched_lower_opt(tsl_arena *a, const graph *g, tsl_target target, int sm, const sched_options *opt,
                            tsl_diag *d);
/* Record why a strategy declined (sched_plan.notes). */
void sched_note(sched_plan *p, const char *fmt, ...) TSL_PRINTF(2, 3);
/* The compute capability x 10 of an arch spelling ("sm_90a" -> 90); 80 for
 * NULL or anything unknown. */
int sched_sm_of_arch(const char *arch);

/* Retype p's tile IR so that low-bit tensors cross the kernels' boundary
 * as their carriers, except packed inputs (lowbit.c; sched_lower_for runs
 * it after every strategy). */
void sched_lowbit_carry(sched_plan *p);
/* A low-bit tensor that only is read (a parameter, not an output) crosses
 * the kernels' boundary packed, with its logical dtype; every other
 * low-bit tensor as its carrier (dtype_carrier). The dtype the run paths
 * hand the kernels for def tensor t: */
int sched_tensor_packed(const lang_tensor *t);
tsl_dtype sched_tensor_boundary_dtype(const lang_tensor *t);
/* The view a `bytes` or `rows` argument passes (lowbit.c): *out is t with
 * its dim 0 cut, as u8 bytes when `bytes`; shape written into shape[]
 * (rank entries). */
void sched_arg_view(const sched_plan *p, const sched_launch *l, const sched_arg *sa, const lang_bound *b,
                    const DLTensor *t, DLTensor *out, int64_t *shape);

/* An int argument's value under bound sizes (SIZE). */
int64_t sched_arg_int(const sched_plan *p, const sched_arg *arg, const lang_bound *b);

/* Whether some launch of p takes tensor t as an argument. A temporary no
 * launch takes (one a fused kernel keeps in registers) needs no memory. */
int sched_tensor_used(const sched_plan *p, int t);

/* The number of lanes of a launch's box under bound sizes (0: nothing
 * runs, also when the launch's guard says so). */
int64_t sched_launch_lanes(const sched_plan *p, const sched_launch *l, const lang_bound *b);

/* The plan as `//` comment lines (one per launch: kernel, statements,
 * arguments and their sources), then the module's tile text: the whole is
 * valid tile IR (tessel tile check accepts it). Appends to b. */
void sched_print(strbuf *b, const sched_plan *p);

#endif
