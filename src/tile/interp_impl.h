/* interp_impl.h — what the tile interpreter's files share (interp.c:
 * values, views, memory access, statements, binding, the grid;
 * interp_ops.c: register-tensor instructions; interp_spec.c:
 * decompositions and pipelines; interp_roles.c: warpgroup instances and
 * their scheduler; interp_hopper.c: mbarriers, TMA, wgmma). Internal to
 * src/tile/interp*.c. */
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
    int wg_busy;                 /* wgmmas in flight that read or write it */
    uint64_t wseq;               /* interp.seq of its last write by another instruction */
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

/* One block of a cluster being co-simulated (interp_cluster.c): its
 * block-level values and its index. */
typedef struct icl_block {
    rt_slot *slots;
    rt_tensor *tensors;
    int64_t bidx[3];
} icl_block;

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
    /* warpgroups and Hopper (interp_roles.c, interp_hopper.c) */
    int hopper;           /* the kernel uses them: tasks, 1024-aligned swizzled shared */
    int task;             /* the running task: 0 the block, 1.. warpgroup instances */
    int64_t tbase;        /* the block thread of its thread 0 */
    uint64_t seq;         /* register writes and wgmma_fences, in order */
    struct ihop *hop;     /* barriers, TMA loads, async reads, wgmma groups */
    /* clusters (interp_cluster.c): the blocks of one cluster run together
     * over one shared memory, block rank r's at r * cspan */
    int csize;            /* blocks of a cluster; 1 without one */
    int crank;            /* the running block's rank in it */
    size_t cspan;         /* bytes of one block's shared memory */
    uint32_t csync;       /* cluster_syncs the cluster has completed */
    int cfinal;           /* a cluster_sync follows the kernel's last warpgroups */
    uint8_t cexited[TILE_MAX_CLUSTER]; /* the rank's warpgroups have finished and no
                                        * cluster_sync keeps its shared memory */
    icl_block *cl;        /* [csize]: each block's values; NULL without a cluster */
};


typedef struct interp interp;

/* interp.c */
uint64_t interp_mix(uint64_t *s); /* the next of a seeded sequence (splitmix64) */
/* With opts.shuffle_blocks, *out = a seeded random order of 0..n-1
 * (malloc'd; n at most 2^26, `what` names the items in the message); else
 * *out = NULL (in order). */
tsl_status interp_order(interp *I, int64_t n, const char *what, int64_t **out);
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
/* View coordinate of a rank-r tile coordinate (right-aligned); 0 if it does not fit. */
int interp_view_coord(const rt_view *vw, const int64_t *rc, int r, int64_t *vc);
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
tsl_status interp_exec_stmt(interp *I, const tile_stmt *s);
size_t interp_shared_off(const rt_tensor *t, const int64_t *c); /* byte offset of an element */
tsl_status interp_hazard(interp *I, size_t pos, imem_hazard h, const char *name, const int64_t *c, int rank,
                         int64_t thread, int other, int write);

/* interp_cluster.c */
/* Run the grid cluster by cluster (k->cluster >= 2): gdim the grid,
 * order a shuffled cluster order or NULL. */
tsl_status interp_cluster_grid(interp *I, const int64_t *gdim, int64_t nblocks);
/* Make block rank r of the cluster the running block (its values, index). */
void interp_cluster_enter(interp *I, int r);
/* The shared byte offset that `off` of the running block has in block
 * rank r; with the checks of a remote access named by what/pos: r is in
 * the cluster and its block still holds its shared memory. */
tsl_status interp_cluster_peer(interp *I, size_t pos, const char *what, const tile_expr *rank, int *r);
static inline size_t interp_peer_off(const interp *I, size_t off, int r)
{
    return off - (size_t)I->crank * I->cspan + (size_t)r * I->cspan;
}

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

/* interp_roles.c */
int interp_uses_hopper(const tile_block *b);
int interp_instances(const tile_block *b); /* warpgroup instances of its warpgroups statements */
tsl_status interp_exec_warpgroups(interp *I, const tile_stmt *s);

/* interp_hopper.c */
tsl_status interp_hop_begin(interp *I);        /* per block */
tsl_status interp_hop_task_end(interp *I, size_t pos); /* the running task finishes */
void interp_hop_free(interp *I);
tsl_status interp_exec_hopper(interp *I, const tile_stmt *s);
/* A register tensor used while a wgmma holds it (missing wgmma_wait). */
tsl_status interp_wgmma_busy(interp *I, size_t pos, const char *name, int write);
/* The new hazards of the task model (IMEM_XRAW ..), from I->sm.why. */
tsl_status interp_hazard_ext(interp *I, size_t pos, imem_hazard h, const char *subject, const char *name,
                             const int64_t *c, int rank, int write);
/* "thread 130 (consumer 0)", or "thread 5" outside warpgroups. */
const char *interp_thread_name(interp *I, int64_t thread, int task, char *buf, size_t n);

#endif
