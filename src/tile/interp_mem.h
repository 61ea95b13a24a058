/* interp_mem.h — the tile interpreter's model of one block's shared memory:
 * bytes, the barrier epoch, per-byte hazard tracking and the cp.async
 * groups. Internal to src/tile/interp*.c.
 *
 * The model is the CUDA memory model reduced to what a block can observe:
 *   - a plain write by thread t to a byte is visible to another thread only
 *     after a `synchronize` (a read before it is a RAW hazard);
 *   - a write over a byte another thread read or wrote in the same epoch is
 *     a WAR / WAW hazard (the order between the threads is undefined);
 *   - an async copy lands ONLY when its group completes (`wait N` completes
 *     all but the N most recent committed groups); a read of a byte a
 *     pending copy will write is a hazard ("missing wait"), and a completed
 *     copy counts as a write by its issuing thread at completion time, so a
 *     read by another thread still needs a `synchronize` after the wait.
 *
 * Warpgroup instances (docs/tile-interp.md "Warpgroups"): with tasks
 * enabled (imem_enable_tasks) the block is task 0 and each running
 * warpgroup instance a task 1..IMEM_MAX_TASKS-1. `synchronize` and the
 * cp.async groups are per task; between tasks, order comes only from
 * mbarriers, tracked with vector clocks (per task: its clock, its clock at
 * its last synchronize, its fence_async count; per barrier: its completed
 * phases):
 *   - an arrive is by the task's thread 0 (as the CUDA generator emits
 *     it): it releases what that thread and the task's async operations
 *     did, and what every thread of the task did before its last
 *     synchronize — not the other threads' accesses since;
 *   - a write records its agent (a task, or the barrier whose phase
 *     completion landed a TMA load), that agent's clock and whether it is
 *     the task's thread 0 (or its async proxy); another task may read or
 *     overwrite it only once its own vector clock has passed that clock
 *     (it waited on a barrier phase whose arrivals came after the write,
 *     transitively);
 *   - a read records, per task, the reader's clock; a write by another
 *     task must have passed it (write after read);
 *   - the async proxy (wgmma, tma_store) reads bytes at issue and holds
 *     them until it completes: writing them meanwhile is a hazard; an
 *     ordinary write it reads must be followed by a fence_async of the
 *     writing task that the reader has passed;
 *   - a TMA load marks its bytes pending from issue until its barrier
 *     phase completes, when they land. */
#ifndef TSL_TILE_INTERP_MEM_H
#define TSL_TILE_INTERP_MEM_H

#include <stddef.h>
#include <stdint.h>

typedef enum imem_hazard {
    IMEM_OK = 0,
    IMEM_RAW,           /* read of a byte another thread wrote this epoch */
    IMEM_WAR,           /* write over a byte another thread read this epoch */
    IMEM_WAW,           /* write over a byte another thread wrote this epoch */
    IMEM_PENDING_READ,  /* read of a byte an uncompleted cp.async writes */
    IMEM_PENDING_WRITE, /* write over a byte an uncompleted cp.async writes */
    IMEM_OOB,           /* the access leaves the block's shared memory */
    /* with tasks (warpgroup instances, the async proxy) */
    IMEM_XRAW,          /* read of a byte another task wrote, not ordered by an mbarrier */
    IMEM_XWAW,          /* write over a byte another task wrote, not ordered */
    IMEM_XWAR,          /* write over a byte another task read, not ordered */
    IMEM_TMA_PENDING,   /* access to a byte a TMA load in flight writes */
    IMEM_TMA_UNSEEN,    /* access to a byte a TMA load landed on before waiting on its phase */
    IMEM_ASYNC_READING, /* write over a byte an async read in flight (wgmma, tma_store) holds */
    IMEM_UNFENCED,      /* async read of an ordinary write with no fence_async between */
    IMEM_UNWRITTEN      /* async read of a byte nothing has written since the block began */
} imem_hazard;

#define IMEM_MAX_TASKS 17    /* the block and up to 16 warpgroup instances (a cluster's) */
#define IMEM_MAX_BARRIERS 110
/* Vector clock components: task t's clock (what its thread 0 and async
 * proxy did), its clock at its last synchronize (what all its threads
 * did), its fence_async count; barrier b's completed phases. */
#define IMEM_VC_SYNC(t) (IMEM_MAX_TASKS + (t))
#define IMEM_VC_FENCE(t) (2 * IMEM_MAX_TASKS + (t))
#define IMEM_VC_BAR(b) (3 * IMEM_MAX_TASKS + (b))
#define IMEM_VC_LEN IMEM_VC_BAR(IMEM_MAX_BARRIERS)
#define IMEM_AGENT_NONE 255

typedef struct imem_vc {
    uint32_t c[IMEM_VC_LEN];
} imem_vc;

void imem_vc_join(imem_vc *into, const imem_vc *from);

typedef struct imem_task {
    uint32_t epoch;    /* its `synchronize` count + 1 */
    int thread0;       /* the block thread that is its thread 0 */
    imem_vc vc;        /* what it has observed; vc.c[t] its own clock */
    int next_group;    /* cp.async: the id its next commit gives */
} imem_task;

/* Details of the last hazard reported (for the message). */
typedef struct imem_why {
    size_t off;        /* the byte */
    int other;         /* the other thread, or -1 */
    int agent;         /* the other access's task, or IMEM_VC_BAR(b) */
    uint32_t clock;    /* TMA landing: the barrier phase */
    int32_t op;        /* TMA_PENDING: the load; ASYNC_READING: the async read */
    int nosync;        /* XRAW/XWAW/XWAR: an arrive of the other task ordered the
                        * two for its thread 0, but the access was another
                        * thread's with no synchronize before that arrive */
} imem_why;

/* Per-byte state of the task model (allocated by imem_enable_tasks). */
typedef struct imem_ext {
    uint8_t *wagent;   /* last writer: task, IMEM_VC_BAR(b) (a TMA landing), NONE */
    uint8_t *wall;     /* ... by a thread of the task other than its thread 0 */
    uint32_t *wclock;  /* its clock then (TMA landing: the phase) */
    uint32_t *wfence;  /* ordinary writes: the writer's fence count then; UINT32_MAX async */
    uint8_t *rtask;    /* task of the reader/repoch slot */
    uint32_t *rclock;  /* [task * size + byte]: 2 (1 + the task's clock at its last read)
                        * + 1 if by a thread other than its thread 0; 0 none */
    int32_t *tpend;    /* the TMA load in flight that writes it; -1 */
    uint16_t *acount;  /* async reads in flight holding it */
    int32_t *alast;    /* the latest of them */
} imem_ext;

typedef struct imem_copy {
    size_t off, n;  /* destination bytes [off, off+n) */
    size_t src;     /* offset of the staged source bytes in `stage` */
    int thread;     /* issuing thread */
    int task;       /* issuing task */
    int group;      /* commit group id; -1 while the group is open */
} imem_copy;

typedef struct imem_shared {
    size_t size;       /* bytes of shared memory of the block */
    uint8_t *data;
    int32_t *writer;   /* per byte: last writing thread, -1 none */
    uint32_t *wepoch;  /* per byte: epoch of that write */
    int32_t *reader;   /* per byte: reading thread in repoch; -2 several */
    uint32_t *repoch;
    int32_t *pending;  /* per byte: index of a pending copy, -1 none */
    imem_copy *copies; /* pending copies (completed ones have n == 0) */
    int ncopies, capcopies;
    uint8_t *stage;    /* source bytes captured when each copy was issued */
    size_t nstage, capstage;
    imem_task tasks[IMEM_MAX_TASKS]; /* task 0 is the block */
    int cur;           /* the running task */
    int ntasks;        /* task ids used since the reset */
    int maxtasks;      /* task ids the per-byte state has room for (imem_enable_tasks) */
    imem_ext *x;       /* NULL unless tasks are enabled */
    imem_why why;
} imem_shared;

/* 0 on success, -1 when out of memory. */
int imem_init(imem_shared *s, size_t size);
void imem_free(imem_shared *s);
/* Forget everything (a new block starts); contents become 0xAB garbage. */
void imem_reset(imem_shared *s);

/* Thread `thread` reads / writes n bytes at off. On a hazard nothing is
 * done and *other is the other thread involved (or -1). */
imem_hazard imem_read(imem_shared *s, size_t off, size_t n, int thread, void *out, int *other);
imem_hazard imem_write(imem_shared *s, size_t off, size_t n, int thread, const void *src,
                       int *other);
/* Issue an async copy of n bytes (captured now) into the open group. */
imem_hazard imem_copy_async(imem_shared *s, size_t off, size_t n, int thread, const void *src,
                            int *other);
/* Close the open group (an empty group is allowed, as in PTX). */
void imem_commit(imem_shared *s);
/* Complete every committed group but the `keep` most recent. */
void imem_wait(imem_shared *s, int keep);
/* Barrier of the running task: a new epoch. Does not complete async
 * copies. The block's barrier (task 0) also orders everything the
 * finished tasks did before it. */
void imem_sync(imem_shared *s);
/* Number of copies not yet completed (committed or not). */
int imem_pending_count(const imem_shared *s);

const char *imem_hazard_text(imem_hazard h);

/* ---- tasks (warpgroup instances) and the async proxy ---------------------------- */
/* Allocate the per-byte task state for task ids 0..ntasks-1 (at most
 * IMEM_MAX_TASKS). 0, or -1 when out of memory. */
int imem_enable_tasks(imem_shared *s, int ntasks);
/* Task `child` (thread 0: block thread thread0) starts from what the
 * running task has observed. */
void imem_task_spawn(imem_shared *s, int child, int thread0);
void imem_task_switch(imem_shared *s, int task);
/* mbarrier arrive (release, by the task's thread 0): the running task's
 * clock advances and what it has observed is joined into `into`. Wait
 * (acquire): join `from`. */
void imem_release(imem_shared *s, imem_vc *into);
void imem_acquire(imem_shared *s, const imem_vc *from);
/* fence_async of the running task. */
void imem_fence_async(imem_shared *s);
/* An async read (wgmma, tma_store; op is its id) of n bytes at off by the
 * running task: checked, then held until imem_async_done (called in the
 * same task; the read counts as made then). out may be NULL. */
imem_hazard imem_async_read(imem_shared *s, size_t off, size_t n, int32_t op, void *out);
void imem_async_done(imem_shared *s, size_t off, size_t n);
/* A TMA load (id) issued by the running task into n bytes at off: checked
 * against earlier accesses and marked pending. */
imem_hazard imem_tma_issue(imem_shared *s, size_t off, size_t n, int32_t id);
/* It lands at the completion of phase `phase` of barrier `bar`. */
imem_hazard imem_tma_land(imem_shared *s, size_t off, size_t n, int bar, uint32_t phase, const void *src);

#endif
