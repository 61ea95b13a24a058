/* tiletext.h — a building block of the strategies that write their kernel
 * as tile text and parse it (attention.c, chain.c): pointwise TC bodies
 * lowered elementwise on a [bm, bn] register tile (index vars as iota
 * tiles, other tensors gathered), FMA outer-product loops over shared
 * blocks, pipeline block specs, the kernel's header from the tensors,
 * scalars and sizes used, parsing and the launch.
 *
 * The tile's rows are var `nb` of the lowered op (`t_ri`... written as
 * `a_ri`: the caller defines `a_ri` and `a_ci`, i64 [bm, bn] iota tiles of
 * the block's row and column coordinates, and `a_live`, their in-bounds
 * mask, before lowering a body that needs them); vars below nb are batch
 * coordinates (tt_zc), var nb + 1 the column. Every value this block
 * defines is named a_<base><n>. */
#ifndef TSL_SCHED_TILETEXT_H
#define TSL_SCHED_TILETEXT_H

#include "sched/strategy.h"

/* A value of a body lowered on the tile. */
typedef enum { TT_F, TT_I, TT_B, TT_SF, TT_SI } tt_kind; /* f32 / i64 / bool tiles; float / int scalars */
typedef struct tt_val {
    tt_kind k;
    char t[160]; /* the value's name, or the scalar's text */
    int param;   /* TT_SF: t names a scalar parameter (not a literal) */
} tt_val;

typedef struct tt {
    sched_plan *p;
    const graph *g;
    const lang_def *def;
    int cpu;
    int nb;            /* batch dims: grid z (one) or block_idx.z / and % (two: t_z0, t_z1) */
    const char *in;    /* indentation of the statements tt_expr writes */
    int bm, bn, tr, tc, pad; /* the [bm, bn] tile over tr x tc threads; shared row padding */
    char lay[64], lrow[96], lcol[96], lkc[96];
    int ptensor[32], npt;
    int pscalar[16], nsc;
    int psize[32], nsz;
    const char **cur; /* per def tensor: the name of the tile holding it (the
                         accumulator, a score tile), else NULL */
    const char **gat; /* per def tensor: its gathered tile (reset per block) */
    const graph_op *op; /* the op whose body tt_expr lowers */
    int n;             /* fresh names */
    int fail;
    strbuf b;
} tt;


void tt_init(tt *k, sched_plan *p, const graph *g, int bm, int bn, int tr, int tc, int pad);

/* A def tensor's / size expression's kernel-visible text, recording the
 * parameter it needs; a TC dtype's tile spelling (f16 bf16 bool, else f32);
 * batch coordinate z as an int expression. */
const char *tt_tname(tt *k, int ti);
void tt_use(int *list, int *n, int cap, int x);
void tt_sexpr_text(tt *k, strbuf *b, const lang_sexpr *e);
const char *tt_sx(tt *k, const lang_sexpr *e);
const char *tt_dt(tsl_dtype t);
const char *tt_zc(tt *k, int z);

/* Body e of op lowered into k->b; k->fail set when it cannot be. */
tt_val tt_expr(tt *k, const graph_op *op, const graph_expr *e);
tt_val tt_as_tile(tt *k, tt_val x, tt_kind want);

/* acc += A·B over `depth` steps of loop var `var`: A's column from shared
 * `<acols>var]` (acols: "s[0, 0, " or "h[0, c * 64 + ") as [bm, 1] (cast to f32), B's row from shared block
 * bsh as [1, n] (from a transposed [n, depth] block viewed as a row when
 * btrans); `lead` leading block dims of 1; the CPU micro-kernel atom when
 * both are f32. */
void tt_fma_loop(tt *k, const char *var, int depth, const char *acols, tsl_dtype adt, const char *bsh,
                 tsl_dtype bdt, int btrans, int n, const char *lacc, const char *lcol, const char *acc, int lead);

/* A pipeline's shared block spec of tensor ti: [1.. (nb), r, c] at
 * (batch.., ri, ci); a transposed layout stores (x, y) at y * (r + pad) + x. */
void tt_block_spec(tt *k, strbuf *b, const char *view, int ti, int r, int c, const char *ri, const char *ci,
                   int trans);

/* The kernel: header (tensors, scalars, unbound sizes recorded so far),
 * grid, k->b as the body. NULL when a body failed. malloc'd. */
char *tt_kernel_text(tt *k, const char *kname, const char *grid, int64_t smem);
/* Parse and verify into the plan's module; NULL (with a plan note naming
 * `what`) when it does not verify. */
tile_kernel *tt_parse_kernel(sched_plan *p, char *text, const char *kname, const char *what);
/* Append kern as a launch of grp with the arguments tt_kernel_text named. */
void tt_push_launch(tt *k, tile_kernel *kern, const graph_group *grp, const sched_guard *guard);

#endif
