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
 *     read by another thread still needs a `synchronize` after the wait. */
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
    IMEM_OOB            /* the access leaves the block's shared memory */
} imem_hazard;

typedef struct imem_copy {
    size_t off, n;  /* destination bytes [off, off+n) */
    size_t src;     /* offset of the staged source bytes in `stage` */
    int thread;     /* issuing thread */
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
    uint32_t epoch;    /* number of barriers passed + 1 */
    imem_copy *copies; /* pending copies (completed ones have n == 0) */
    int ncopies, capcopies;
    uint8_t *stage;    /* source bytes captured when each copy was issued */
    size_t nstage, capstage;
    int next_group;    /* id the next commit gives */
    int oldest_group;  /* every group below it has completed */
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
/* Barrier: a new epoch. Does not complete async copies. */
void imem_sync(imem_shared *s);
/* Number of copies not yet completed (committed or not). */
int imem_pending_count(const imem_shared *s);

const char *imem_hazard_text(imem_hazard h);

#endif
