/* pipeline_int.h — what the files of the pipeline expansion share:
 * pipeline.c (the walk over kernels, the helpers below, the cp.async
 * form), pipeline_tma.c (the TMA form) and pipeline_clone.c (a second
 * copy of a pipeline for the size branch between the two forms). */
#ifndef TSL_TILE_PIPELINE_INT_H
#define TSL_TILE_PIPELINE_INT_H

#include "tile/pipeline.h"

/* The expansion's state for one kernel. The context of a pipeline is the
 * kernel body, or the body of the role it is written in. */
typedef struct pexp {
    tile_module *m;
    tile_kernel *k;
    const tsl_source *src;
    tsl_diag *d;
    tile_pipeline_opts o;
    int serial;          /* pipelines expanded so far in this kernel */
    char pre[32];        /* name prefix of the current pipeline: pipeN_ */
    const tile_pipeline *p;
    tile_expr *total;    /* T, the grid points (the value of `let pipeN_T`) */
    tile_expr *texpr;    /* T's expression E0 * E1 * ... */
    tile_expr **stride;  /* per grid dim: product of the later extents */
    int threads;         /* threads of the context: the kernel's, or 128 in a role */
    int loops;           /* for / while statements around the pipeline, inside its context */
    int nest;            /* statements of any kind around it, inside its context */
    int in_loop_wg;      /* the warpgroups statement being expanded is inside a loop */
    const tile_stmt *wg; /* the warpgroups statement around the pipeline; NULL */
    const tile_role *role;     /* the role the pipeline is in; NULL */
    const tile_role *producer; /* TMA: the wg's empty role, the producer; NULL */
    tile_block *prod;          /* its body being filled */
    tile_block *top;     /* TMA: buffers, barriers and mbar_init, put at the kernel's start */
    tile_block *ctx_top; /* TMA: counters kept across runs, put at the context's start */
} pexp;

/* Per input of the pipeline being expanded (bs NULL for a register block):
 * its ring buffer [S, block...], the counters of the cp.async form
 * (copies issued / consumed), and the stage the body reads. */
typedef struct pin {
    const tile_blockspec *bs;
    tile_value *buf, *n, *u, *slot;
} pin;

/* ---- helpers (pipeline.c) ------------------------------------------------------ */
const char *pipe_name(pexp *X, const char *a, const char *b); /* pre + a + b */
tsl_status pipe_err(pexp *X, size_t pos, const char *fmt, ...) TSL_PRINTF(3, 4);
tile_expr *pipe_int(pexp *X, int64_t v);
tile_expr *pipe_val(pexp *X, tile_value *v);
/* a op b, folding the 1s and 0s the expansion itself introduces */
tile_expr *pipe_bin(pexp *X, tile_binop op, tile_expr *a, tile_expr *b);
/* it == 0 || the spec's block index at it differs from the one at it-1 */
tile_expr *pipe_changed(pexp *X, const tile_blockspec *bs, tile_expr *it);

tile_stmt *pipe_stmt(pexp *X, tile_block *b, tile_stmt_kind kind, size_t pos);
tile_value *pipe_let(pexp *X, tile_block *b, tile_stmt_kind kind, const char *name, tile_expr *e, size_t pos);
void pipe_set(pexp *X, tile_block *b, tile_value *v, tile_expr *e, size_t pos);
tile_block *pipe_if(pexp *X, tile_block *b, tile_expr *cond, size_t pos); /* b itself when cond is 1 */
tile_stmt *pipe_instr(pexp *X, tile_block *b, tile_op op, size_t pos);
tile_stmt *pipe_for(pexp *X, tile_block *b, const char *name, tile_expr *lo, tile_expr *hi, size_t pos);

/* G[e0*b0, ...]: the block at the spec's index, the grid variables taken
 * at linear iteration `it` (or as they are when it is NULL) */
tile_operand pipe_block_operand(pexp *X, const tile_blockspec *bs, tile_expr *it);
/* o's first index step gets `slot` in front: one stage of a ring buffer */
void pipe_add_slot(pexp *X, tile_operand *o, tile_expr *slot);
/* every use of a shared input's view in b read as buf[slot, ...] */
tsl_status pipe_rewrite(pexp *X, pin *ins, int nin, tile_block *b);
tsl_status pipe_write_back(pexp *X, const tile_blockspec *bs, tile_block *b);
/* The shared layout of the ring buffer [S, block...] of shared spec bs */
tile_layout *pipe_stage_layout(pexp *X, const tile_blockspec *bs, int64_t S, char *why, size_t nwhy);
/* pipeN_ prefix, strides, `let pipeN_T` into out */
void pipe_begin(pexp *X, const tile_pipeline *p, tile_block *out, size_t pos);
/* let g0 = ..., the grid point of iteration j, at the top of a loop body */
void pipe_grid_lets(pexp *X, tile_block *b, tile_expr *j, size_t pos);
/* the storage of register input blocks and of out blocks, into out */
void pipe_alloc_views(pexp *X, tile_block *out);
/* per register input: load_global when its index changed at j */
void pipe_load_registers(pexp *X, tile_block *b, tile_expr *j);
/* out blocks written back when their index changes after j or at the end */
tsl_status pipe_write_backs(pexp *X, tile_block *b, tile_expr *j);
/* N when the body's last statement is `wgmma_wait N` (its last N steps'
 * wgmma groups may still read their stages), else 0 */
int pipe_trailing_wait(const tile_block *body);
/* L = S-1-N, the steps a copy is issued ahead; an error when negative */
tsl_status pipe_lookahead(pexp *X, const tile_pipeline *p, size_t pos, int64_t *L);

/* ---- the forms ---------------------------------------------------------------------- */
/* The cp.async form of pipeline p (the statement at pos) into out. bufs:
 * the ring buffers of the shared inputs already allocated (by index of
 * p->ins), or NULL to allocate them here. */
tsl_status pipe_expand_cp_async(pexp *X, const tile_pipeline *p, size_t pos, tile_value **bufs, tile_block *out);
/* The TMA form (pipeline_tma.c). Sets *fallback and returns TSL_OK when
 * the pipeline is to keep the cp.async form (opts.tma_only is 0). */
tsl_status pipe_expand_tma(pexp *X, tile_stmt *ps, tile_block *out, int *fallback);

/* A copy of p for a second expansion: fresh grid variables, block views
 * and values for everything its body defines (pipeline_clone.c). */
tsl_status pipe_clone(pexp *X, const tile_pipeline *p, tile_pipeline **out);

#endif
