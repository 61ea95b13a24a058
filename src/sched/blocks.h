/* blocks.h — the strategies' building blocks over the tile-IR builder
 * (docs/sched.md, "Building blocks"). A strategy that turns a group into
 * one tiled kernel is a recogniser plus a few of these:
 *
 *   the kernel shell   (blocks.c)   parameters from the def's tensors,
 *                                   scalars and sizes, the header, the
 *                                   verified kernel appended to the plan as
 *                                   a launch with its arguments
 *   instructions       (blocks.c)   one call per tile instruction or
 *                                   statement (alloc, loads, stores, casts,
 *                                   elementwise, for/if/var, pipeline,
 *                                   warpgroups, the Hopper rows)
 *   a statement body   (blocks.c)   a pointwise op's scalar body lowered on
 *                                   a register tile: the epilogue and init
 *                                   ops of a contraction
 *   a row reduction    (blocks.c)   reduce.sum / .max of a register tile
 *                                   along one dim
 *   the main loops     (blocks_mma.c) the pipelined block product
 *                                   C[BM, BN] += A[BM, K] B[K, BN]: mma.sync
 *                                   (sm_80), FMA micro-tiles (f32 GPU and
 *                                   CPU), and the sm_90a TMA ring with
 *                                   wgmma consumers
 *   an epilogue        (blocks_mma.c) the tile cast to C's dtype and stored
 *                                   (masked stores, or shared memory and a
 *                                   TMA store)
 *   online softmax     (blocks_softmax.c, to come with the attention
 *                                   strategy): running max and sum with
 *                                   rescaling, over the blocks above
 *
 * The kernel is built twice (sched_blk_build): a first pass records which
 * tensors, scalars and sizes the body uses, the second writes the header
 * in parameter order (tensors, typed scalars, int sizes, a scratch buffer,
 * the SM count) and
 * then the body, so a strategy names a parameter where it needs it and
 * never writes or parses tile text. Builder misuse (a layout text that
 * does not parse) is recorded and the kernel declined, never a crash. */
#ifndef TSL_SCHED_BLOCKS_H
#define TSL_SCHED_BLOCKS_H

#include "sched/strategy.h"

#define SCHED_BLK_MAX_PARAMS 64

/* One kernel being built. */
typedef struct sched_blk {
    sched_plan *p;
    const lang_def *def;
    tile_module *m;    /* a module of its own in the plan's arena: the kernel
                        * moves to p->m when added (sched_blk_add) */
    tile_kernel *k;
    tile_builder b;
    int pass;          /* 0: recording the parameters; 1: building */
    int ntens, nscal, nsize;
    int tens[SCHED_BLK_MAX_PARAMS]; /* def tensors passed, in use order */
    int scal[SCHED_BLK_MAX_PARAMS]; /* def scalars (typed) */
    int size[SCHED_BLK_MAX_PARAMS]; /* size slots used as values */
    tile_value *tv[SCHED_BLK_MAX_PARAMS], *sv[SCHED_BLK_MAX_PARAMS], *zv[SCHED_BLK_MAX_PARAMS];
    int scratch;       /* 1 + the plan scratch buffer it takes (one at most); 0: none */
    tsl_dtype scratch_dt;
    int64_t scratch_count;
    tile_value *scv;
    int sms;           /* the kernel takes the SM count (a persistent grid) */
    tile_value *smsv;
    char why[200];     /* the first builder error; "" when none */
} sched_blk;

/* Build one kernel named kname: build(kb, ctx) writes the header's grid,
 * threads and budget (sched_blk_grid) and the body; it returns 1, or 0 when
 * the group is not its shape (nothing is added). It runs twice and must do
 * the same both times. Returns the kernel (verified, not yet in the plan)
 * or NULL; a kernel that does not verify is noted on the plan (`--emit=tile`
 * prints why) and NULL returned: the group then falls back. */
typedef int (*sched_blk_fn)(sched_blk *kb, void *ctx);
tile_kernel *sched_blk_build(sched_blk *kb, sched_plan *p, const lang_def *def, const char *kname, sched_blk_fn build,
                             void *ctx);
/* Append the built kernel to the plan as a launch over statements
 * [stmt, stmt + nstmts), its arguments in parameter order; guard may be
 * NULL. kb must be the sched_blk that built k. */
void sched_blk_add(sched_blk *kb, tile_kernel *k, int stmt, int nstmts, const sched_guard *guard);

/* ---- parameters ------------------------------------------------------------------------- */
/* The kernel-visible name of a def name: itself, or NAME_p when it is a
 * tile keyword or starts with "c_" (the strategies' own values do). */
const char *sched_blk_pname(sched_blk *kb, const char *name);
/* Def tensor ti as a global parameter (dims: its size symbols, bound from
 * the arrays, or constants). */
tile_value *sched_blk_tensor(sched_blk *kb, int ti);
/* Def scalar ti as a typed scalar parameter, as an operand expression. */
tile_expr *sched_blk_scalar(sched_blk *kb, int ti);
/* Size slot `slot` as an int expression: the symbol when some tensor
 * parameter has it as an extent, else an int parameter. */
tile_expr *sched_blk_size(sched_blk *kb, int slot);
/* A plain extent (a size symbol or a constant) as an int expression. */
tile_expr *sched_blk_extent(sched_blk *kb, const lang_sexpr *e);
/* Plan scratch buffer si (p->scratch[si]: count elements of dt) as a 1-D
 * global parameter `c_ws` (after the sizes). */
tile_value *sched_blk_scratch(sched_blk *kb, int si, tsl_dtype dt, int64_t count);
/* The SM count (an int parameter the run binds; 1 off the GPU). */
tile_expr *sched_blk_sms(sched_blk *kb);
/* The header: grid (ngrid exprs), threads, shared budget (0: none). */
void sched_blk_grid(sched_blk *kb, int ngrid, tile_expr **grid, int threads, int64_t smem);

/* ---- expressions -------------------------------------------------------------------------- */
tile_expr *sched_blk_int(sched_blk *kb, int64_t i);
tile_expr *sched_blk_bin(sched_blk *kb, tile_binop op, tile_expr *a, tile_expr *b); /* not folded */
tile_expr *sched_blk_v(sched_blk *kb, tile_value *v);
tile_expr *sched_blk_bidx(sched_blk *kb, int dim);
/* A float literal printed as `text` (the round trip keeps it). */
tile_expr *sched_blk_float(sched_blk *kb, double f, const char *text);

/* ---- types and operands -------------------------------------------------------------------- */
/* A layout from printf-style text; NULL and kb->why set when it does not parse. */
tile_layout *sched_blk_layout(sched_blk *kb, const char *fmt, ...) TSL_PRINTF(2, 3);
/* A shared or register type of constant dims (layout may be NULL for shared). */
tile_type sched_blk_type(sched_blk *kb, tile_space sp, tsl_dtype dt, int rank, const int64_t *dims, tile_layout *lay);
tile_type sched_blk_type2(sched_blk *kb, tile_space sp, tsl_dtype dt, int64_t d0, int64_t d1, tile_layout *lay);
/* Operand v[idx...] (n indices; n == 0: v itself). */
tile_operand sched_blk_at(sched_blk *kb, tile_value *v, int n, tile_expr **idx);
tile_operand sched_blk_at1(sched_blk *kb, tile_value *v, tile_expr *i0);

/* ---- instructions -------------------------------------------------------------------------- */
/* name = op args... -> type (RES_TYPE ops), or name = op args... (result
 * like the first tensor operand), or op args... -> dst (dst.v non-NULL,
 * name NULL), or op args... (no result). Returns the statement. */
tile_stmt *sched_blk_op(sched_blk *kb, tile_op op, const char *name, int nargs, const tile_operand *args,
                        const tile_type *type, const tile_operand *dst);
tile_value *sched_blk_alloc(sched_blk *kb, const char *name, tile_type t, tile_expr *init);
tile_value *sched_blk_load_global(sched_blk *kb, const char *name, tile_operand src, tile_type t);
tile_value *sched_blk_load_shared(sched_blk *kb, const char *name, tile_operand src, tile_type t);
void sched_blk_store_global(sched_blk *kb, tile_value *x, tile_operand dst);
tile_value *sched_blk_cast(sched_blk *kb, const char *name, tile_value *x, tile_type t);
tile_value *sched_blk_view(sched_blk *kb, const char *name, tile_value *x, tile_type t);
tile_value *sched_blk_broadcast(sched_blk *kb, const char *name, tile_value *x, tile_type t, int dim);
/* An elementwise op: unary (b == NULL) or binary; a, b tensors or scalars. */
tile_value *sched_blk_ew(sched_blk *kb, tile_op op, const char *name, tile_operand a, const tile_operand *b);
/* Statements. */
tile_stmt *sched_blk_for(sched_blk *kb, const char *var, tile_expr *lo, tile_expr *hi, tile_expr *step);
void sched_blk_end(sched_blk *kb); /* closes a for / if / pipeline / role body */
tile_value *sched_blk_let(sched_blk *kb, const char *name, tile_expr *e);
tile_value *sched_blk_var(sched_blk *kb, const char *name, tile_expr *e);
void sched_blk_set(sched_blk *kb, tile_value *var, tile_expr *e);
void sched_blk_if(sched_blk *kb, tile_expr *cond); /* then sched_blk_end */
void sched_blk_sync(sched_blk *kb);

/* pipeline(grid=(gvar: extent), stages=S, in=[specs], out=[]) { body }:
 * begin, add the in specs, open the body (the grid var is sched_blk_pipe's
 * result), then sched_blk_end. A spec: view = tensor[block...] at (index...)
 * shared [layout L]. */
tile_stmt *sched_blk_pipe(sched_blk *kb, const char *gvar, tile_expr *extent, int stages, tile_value **gv);
tile_value *sched_blk_pipe_in(sched_blk *kb, tile_stmt *pipe, const char *view, tile_value *tensor, int rank,
                              const int64_t *block, tile_expr **index, tile_layout *lay);
void sched_blk_pipe_open(sched_blk *kb, tile_stmt *pipe);

/* warpgroups { role ... }: begin, then per role sched_blk_role (opens its
 * body; index the instance's number or NULL) ... sched_blk_end. */
tile_stmt *sched_blk_warpgroups(sched_blk *kb);
tile_value *sched_blk_role(sched_blk *kb, tile_stmt *wg, const char *name, int count, const char *index, int regs);

/* ---- a statement body on a register tile ------------------------------------------------------
 * A pointwise op's scalar body computed on a rows x cols f32 tile of the
 * box (vars vm along rows, vn along cols, batch var 0 when nb): reads of
 * tensor tc are the tile's current value, reads of other tensors indexed
 * by (batch?, vm?, vn?) load their tile (a row or column vector loaded
 * once and broadcast), scalars and literals are scalar operands. */
typedef struct sched_blk_val {
    tile_value *tile;   /* a register tile, or NULL */
    tile_expr *scalar;  /* else: a scalar operand (literal, typed scalar) */
} sched_blk_val;

typedef struct sched_blk_tile {
    sched_blk *kb;
    int tc;             /* the tensor the tile is the value of */
    tile_value *cur;    /* its value on chip; NULL: in memory (load_c loads it) */
    int rows, cols;     /* the tile */
    int threads;        /* the threads it spans */
    const char *lay;    /* its layout text */
    int vec_reduced;    /* vectors along a dim (bias) load in lay reduced over
                         * the other dim (blocks.c, blk_vector_layout) */
    int nb, vm, vn;     /* batch dims (0, 1) and the row and column vars */
    /* the tile's first coordinate along var v (a batch var: its index) */
    tile_expr *(*origin)(void *ctx, int var);
    void *ctx;
    int tmp;            /* the next c_v<N> */
    /* may a tensor be read here? (recognisers' checks: covers the box) */
    int (*covers)(void *ctx, const graph_op *op, int var, int ti, int dim);
    /* reads the strategy holds on chip (NULL: none): the tile for read o
     * of op, or NULL for the rules above (an LSTM cell's gates) */
    tile_value *(*held)(void *ctx, const graph_op *op, const graph_operand *o);
} sched_blk_tile;

/* The body e of op on the tile; 0 when the body is not one this block
 * lowers (nothing useful emitted: the caller declines the group). */
int sched_blk_body(sched_blk_tile *T, const graph_op *op, const graph_expr *e, sched_blk_val *out);
/* x as a tile (a scalar filled in). */
tile_value *sched_blk_as_tile(sched_blk_tile *T, sched_blk_val x);
/* The current value of tc on the tile (cur, else loaded and cast to f32). */
tile_value *sched_blk_load_c(sched_blk_tile *T);
/* op (add sub mul div max min) of two values (a scalar first operand of a
 * commutative op is swapped; of another, filled into a tile). */
sched_blk_val sched_blk_binary(sched_blk_tile *T, tile_op op, sched_blk_val x, sched_blk_val y);
/* The tile type f32[rows, cols] in the tile's layout. */
tile_type sched_blk_tile_type(sched_blk_tile *T, tsl_dtype dt);
/* The next fresh c_v<N> name. */
const char *sched_blk_tile_name(sched_blk_tile *T);

/* ---- a row reduction ------------------------------------------------------------------------
 * reduce.sum / reduce.max / reduce.min (op) of register tile x along dim,
 * the result in layout `lay` (the reduced dim dropped). */
tile_value *sched_blk_reduce(sched_blk *kb, tile_op op, const char *name, tile_value *x, int dim, tile_layout *lay);

#endif
