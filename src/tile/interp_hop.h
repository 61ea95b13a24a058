/* interp_hop.h — the tile interpreter's Hopper state, shared by
 * interp_hopper.c (mbarriers, TMA, wgmma, tma_store) and interp_roles.c
 * (warpgroup instances and their scheduler). One `ihop` per run, reset
 * per block. Internal to src/tile/interp*.c. */
#ifndef TSL_TILE_INTERP_HOP_H
#define TSL_TILE_INTERP_HOP_H

#include "tile/interp_impl.h"

/* An mbarrier (docs/tile-ir.md section 5b): an element of a shared u64
 * tensor, known by its byte offset. */
typedef struct hop_bar {
    size_t off;
    const char *name;      /* the tensor */
    char coord[48];        /* "1" for full[1] */
    int init;              /* mbar_init has run */
    int init_task;         /* ... in this task, at this clock of it */
    uint32_t init_clock;
    uint32_t init_csync;   /* ... after this many cluster_syncs */
    int64_t count;         /* arrivals per phase */
    int64_t pending;       /* arrivals the current phase still expects */
    int64_t tx;            /* transaction bytes it still expects (may go below 0) */
    uint32_t phase;        /* the current phase; its parity is phase % 2 */
    imem_vc acc;           /* what the current phase's arrivals observed */
    imem_vc done[2];       /* ... the last completed phase of each parity */
    int *loads;            /* TMA loads that land when the current phase completes */
    int nloads, caploads;
} hop_bar;

/* A TMA load in flight (issued, its phase not completed). */
typedef struct hop_load {
    size_t pos;
    int task, bar;
    const char *name;      /* the shared tensor */
    const rt_tensor *t;
    uint32_t *offs;        /* per element: its shared byte offset */
    uint8_t *data;         /* per element: its bytes, read from global at issue */
    int64_t n;
    int eb;
} hop_load;

typedef enum hop_aread_kind { HOP_WGMMA, HOP_TMA_STORE } hop_aread_kind;

/* An async-proxy read in flight: a wgmma (reads its shared operands at
 * completion, through its descriptors) or a tma_store (reads at issue,
 * holds the bytes until bulk_wait). */
typedef struct hop_aread {
    hop_aread_kind kind;
    int task, live, group;  /* group: -1 while open */
    size_t pos;
    uint32_t *offs;         /* element byte offsets (wgmma: A's 64 x K if shared, then B's K x N) */
    int64_t n;
    int eb;
    /* wgmma */
    rt_tensor *a, *c, *d;   /* a: register A, or NULL */
    int64_t na, K, N;       /* na: A elements in offs (0 for a register A) */
    tile_dtype in_dt;
} hop_aread;

typedef struct hop_task {
    const char *role;      /* NULL: the block */
    int inst;
    int rank;              /* its block's rank in the cluster; -1 without one */
    uint64_t fence_seq;    /* interp.seq at its last wgmma_fence */
    int wg_group, bulk_group; /* the id its next wgmma_commit / bulk_commit gives */
    int wait_bar;          /* the barrier it is blocked on, -1 */
} hop_task;

struct ihop {
    hop_bar *bars;
    int nbars, capbars;
    int32_t *bar_at;       /* [smem / 8]: barrier id at that u64, -1 */
    size_t nbar_at;
    hop_load *loads;
    int nloads, caploads;
    hop_aread *areads;
    int nareads, capareads;
    hop_task tasks[IMEM_MAX_TASKS];
    int next_task;         /* the task id the next instance gets */
    int live_first;        /* the first task id of the running warpgroups */
    /* set by the last statement, read by the scheduler */
    int blocked, block_bar, block_parity; /* an mbar_wait that cannot pass yet */
    int completed;         /* a barrier phase completed */
};

/* Can a wait for `parity` on barrier b pass now? */
int interp_hop_bar_ready(const interp *I, int b, int parity);
/* "full[1]" and "phase 2, 1 arrival and 16384 transaction bytes pending". */
const char *interp_hop_bar_name(const interp *I, int b, char *buf, size_t n);
const char *interp_hop_bar_state(const interp *I, int b, char *buf, size_t n);
/* "consumer 1", or "the block". */
const char *interp_task_name(const interp *I, int task, char *buf, size_t n);

#endif
