/* strategy_int.h — internals shared by rowred.c (the engine) and
 * elementwise.c: the lowering state of one group lowered as one kernel.
 * Not part of the scheduler's interface (strategy.h is). */
#ifndef TSL_SCHED_STRATEGY_INT_H
#define TSL_SCHED_STRATEGY_INT_H

#include "sched/strategy.h"

/* Register tile shapes of the engine (rowred.c "tiles"). */
typedef enum rr_shape { RR_VEC, RR_ROW, RR_TWO, RR_G1, RR_ONE, RR_CVEC, RR_K1 } rr_shape;

typedef struct rr_memo {
    int key, id;         /* what: a load, a recomputed op, a broadcast, ... */
    int sub;             /* which sub-chunk of an unrolled pass */
    rr_shape sh;
    tile_block *blk;     /* where it was emitted (visible while open) */
    tile_value *v;
    const void *ex;      /* keys 50/51: the expression it is the value of */
} rr_memo;

typedef struct rr {
    sched_plan *p;
    const graph *g;
    const lang_def *def;
    const graph_group *grp;
    tile_module *m;
    tile_kernel *k;
    tile_builder b;
    sched_launch *launch;
    int rows;               /* row dims: vars [0, rows); var `rows` is the column */
    int flat;               /* flat form: the whole box is one row, a chunk per block */
    int single;             /* row forms: this path holds the whole row in one chunk */
    int full;               /* single path taken only when the row is exactly one
                             * chunk (D == width): no lane is past the row, so
                             * reductions need no tail mask */
    int warp;               /* row forms: this path gives the block `warp` > 1
                             * rows (rowc[0] the first), each on threads / 32 /
                             * warp warps; 0: the block's one row */
    int gpu;                /* the plan is for TSL_TARGET_CUDA */
    int chunked;            /* row form without reductions on the GPU: a block per
                             * chunk of a row (R->off set), no loop */
    int sub;                /* the sub-chunk being lowered (memo key) */
    int pass_op;            /* the op whose pass is being lowered */
    int stream;             /* that pass loops over chunks (the CPU's long rows) */
    int stage_val, stage_in, stage_out; /* CPU streaming: op stage_val's value is
                             * stored into the row of op stage_out's LHS by
                             * stage_in's pass and read back by stage_out's,
                             * not recomputed (rr_plan_stage); -1: none */
    int pass;               /* passes lowered so far: values in f32 are memoized
                             * per pass, their 16-bit sources across passes */
    int threads, locals, width; /* width = threads * locals columns per chunk */
    tsl_dtype ct;           /* arithmetic dtype: f32, or f64 */
    const lang_sexpr *colhi;/* the column range [0, colhi) (row forms) */
    tile_expr *colext;      /* its value in the kernel (flat: the box size) */
    tile_expr *off;         /* the current chunk's first column */
    tile_expr **rowc;       /* [rows] the block's row coordinates */
    int *kind;              /* per group op: rr_kind */
    tile_value **one;       /* per group op: a row scalar's value ([1], ct) */
    imap tparam;            /* def tensor -> its kernel parameter (a map: a kernel
                             * names few of a program's thousands of tensors) */
    tile_expr **size;       /* per size symbol: its value in the kernel */
    tile_layout *lay_vec, *lay_row, *lay_two, *lay_g1, *lay_one;
    tile_layout *lay_cvec; /* rows form: a column vector's chunk, replicated per row */
    tile_layout *lay_k1;   /* rows form: a row's value after the reduction across its warps */
    rr_memo *memo;
    int nmemo, capmemo;
} rr;

/* Lower group grp as one kernel in the given form (rows row dims; flat);
 * `tag` ends the kernel's name. 1 when lowered, 0 when declined. */
int sched_rr_lower(sched_plan *p, const graph *g, const graph_group *grp, int rows, int flat, const char *tag);

/* The latest op of the group before op i (group-relative) writing tensor,
 * or -1; and whether any op of the group writes it. */
int rr_writer_before(const rr *R, int tensor, int i);
int rr_written_in_group(const rr *R, int tensor);

#endif
