/* interp_impl.h — what the tile interpreter's files share (interp.c:
 * values, views, memory access, statements, binding, the grid;
 * interp_ops.c: register-tensor instructions; interp_spec.c:
 * decompositions and pipelines). Internal to src/tile/interp*.c. */
#ifndef TSL_TILE_INTERP_IMPL_H
#define TSL_TILE_INTERP_IMPL_H

#include <math.h>
#include <string.h>

#include "tile/interp.h"
#include "target/target.h"
#include "tile/interp_mem.h"

/* ---- runtime values ------------------------------------------------------ */

#define IMAX_RANK 8
#define IMAX_CHAIN 8
#define DEFAULT_SMEM (228 * 1024)

typedef struct rt_tensor {
    tile_space space;
    tile_dtype dt;
    tsl_dtype tdt;   /* byte-addressable dtype of shared/global data */
    int rank;
    int64_t dims[IMAX_RANK];
    /* global */
    char *gdata;                 /* first element */
    int64_t gstride[IMAX_RANK];  /* in elements */
    /* shared */
    size_t soff;                 /* byte offset in the block's shared memory */
    const layout *slay;          /* coordinate -> element offset; NULL row-major */
    /* register */
    const dist_layout *rlay;
    int64_t nthreads, nlocals;
    double *regs;                /* [nthreads * nlocals], rounded to dt */
    int64_t cap;
} rt_tensor;

typedef struct rt_slot {
    int64_t ival; /* int scalars */
    double fval;  /* typed scalar parameters: their value */
    rt_tensor *t; /* tensors */
} rt_slot;

/* One dimension of a view: coord = chain[0].off + T0(chain[1].off + T1(...x)). */
typedef struct vstep {
    const layout *tiler; /* NULL: identity */
    int64_t off;
} vstep;

typedef struct rt_view {
    rt_tensor *t;
    const char *name;
    int rank;                      /* == t->rank, or the layout's rank for .local */
    int local;                     /* R.local: coordinates are this thread's local coords */
    int64_t ldims[IMAX_RANK];      /* .local: the thread's local shape */
    int nchain[IMAX_RANK];
    vstep chain[IMAX_RANK][IMAX_CHAIN];
    int64_t ext[IMAX_RANK];        /* extent; -1: the other operand's */
    /* pending tile step (tile without an index yet) */
    int tiled;
    const layout *ptiler[IMAX_RANK];
    int64_t psize[IMAX_RANK];
} rt_view;

struct interp {
    const tile_kernel *k;
    const tsl_source *src;
    tsl_diag *d;
    const tile_interp_opts *o;
    rt_slot *slots;       /* [k->nvalues] */
    rt_tensor *tensors;   /* storage per value id */
    int64_t bidx[3];
    int nthreads;
    imem_shared sm;
    size_t *soff;         /* shared byte offset per value id */
    size_t smem_used;
    int64_t cur_thread;   /* per-thread decomposition mode: the thread, else -1 */
    int in_grid;          /* messages name the block */
    FILE *out;
};


typedef struct interp interp;

/* interp.c */
tsl_status interp_err(interp *I, size_t pos, tsl_status st, const char *fmt, ...) TSL_PRINTF(4, 5);
void interp_coord_str(char *buf, size_t n, const int64_t *c, int rank);
double interp_round(tile_dtype dt, double v);   /* to what an element of dt holds */
size_t interp_dt_bytes(tsl_dtype t);
tsl_status interp_eval_int(interp *I, const tile_expr *e, int64_t *out);
tsl_status interp_eval_num(interp *I, const tile_expr *e, double *out);
tsl_status interp_tensor_of(interp *I, const tile_value *v, rt_tensor **out);
int interp_in_dims(const rt_tensor *t, const int64_t *c);
int interp_reg_coord(const rt_tensor *t, int64_t th, int64_t l, int64_t *c);
void interp_local_shape(const dist_layout *l, int64_t *ld);
int64_t interp_local_slot(const dist_layout *l, const int64_t *lc);
tsl_status interp_view_of(interp *I, const tile_operand *o, rt_view *vw);
void interp_view_map(const rt_view *vw, const int64_t *vc, int64_t *c);
double interp_global_get(const rt_tensor *t, const int64_t *c);
void interp_global_set(const rt_tensor *t, const int64_t *c, double v);
tsl_status interp_shared_get(interp *I, size_t pos, const rt_view *vw, const int64_t *c, int64_t thread,
                             double *out);
tsl_status interp_shared_put(interp *I, size_t pos, const rt_view *vw, const int64_t *c, int64_t thread,
                             double v, int async);
tsl_status interp_reg_dst(interp *I, const tile_stmt *s, rt_tensor **out);
tsl_status interp_reg_arg(interp *I, const tile_operand *o, rt_tensor **out);
int interp_first_owner(const rt_tensor *t, int64_t th, int64_t l);
tsl_status interp_exec_block(interp *I, const tile_block *b);

/* interp_ops.c */
tsl_status interp_exec_mma(interp *I, const tile_stmt *s);
tsl_status interp_exec_elementwise(interp *I, const tile_stmt *s);
tsl_status interp_exec_view(interp *I, const tile_stmt *s);
tsl_status interp_exec_reduce(interp *I, const tile_stmt *s);
tsl_status interp_exec_broadcast(interp *I, const tile_stmt *s);
tsl_status interp_exec_shuffle(interp *I, const tile_stmt *s);
tsl_status interp_exec_print(interp *I, const tile_stmt *s);
tsl_status interp_exec_alloc(interp *I, const tile_stmt *s);
tsl_status interp_exec_iota(interp *I, const tile_stmt *s);
tsl_status interp_exec_gather(interp *I, const tile_stmt *s); /* and scatter */

/* interp_spec.c */
tsl_status interp_exec_decomp(interp *I, const tile_stmt *s);
tsl_status interp_exec_indices(interp *I, const tile_stmt *s);
tsl_status interp_exec_pipeline(interp *I, const tile_stmt *s);

#endif
