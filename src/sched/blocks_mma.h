/* blocks_mma.h — the block product's building blocks (blocks_mma.c; see
 * blocks.h for the library): the pipelined main loop that accumulates
 * C[BM, BN] += A[BM, K] B[K, BN] of one block, on sm_80 (cp.async
 * pipeline, mma.sync or f32 FMA micro-tiles), on the CPU (the f32
 * micro-kernel) and on sm_90a (a TMA ring filled by a producer warpgroup,
 * wgmma consumers, a persistent grouped tile loop), and the sm_90a
 * epilogue store. A contraction, attention's two products or a quantized
 * matmul's dequantized B describe their operands in a sched_blk_gemm. */
#ifndef TSL_SCHED_BLOCKS_MMA_H
#define TSL_SCHED_BLOCKS_MMA_H

#include "sched/blocks.h"

/* One K segment of the sm_90a ring: A and B of the product over k in
 * [0, kext), stored as sched_blk_gemm's a and b. */
typedef struct sched_blk_kseg {
    tile_value *a, *b;
    tile_expr *kext;
} sched_blk_kseg;

/* One block product. A is stored (batch?, M, K), or (batch?, K, M) when
 * a_trans; B (batch?, K, N), or (batch?, N, K) when b_trans. */
typedef struct sched_blk_gemm {
    tile_value *a, *b;     /* the global operands */
    tsl_dtype in;          /* their dtype */
    int a_trans, b_trans;
    int nb;                /* batch dims (0 or 1) */
    int bm, bn, bk;        /* block tile of C, depth of a k step */
    int wm, wn;            /* mma: warps along m and n */
    int tm, tn;            /* f32: the thread's micro-tile */
    int threads;
    int pad;               /* elements of padding per shared row */
    int stages;            /* pipeline depth */
    int mma;               /* tensor cores: f16/bf16, or f32 with tf32 (else f32 FMA) */
    int tf32;              /* mma on f32 operands through the m16n8k8 .tf32 row
                            * (the user allowed tf32: never chosen otherwise) */
    int cpu;               /* the CPU target's f32 plan */
    int ukr;               /* CPU: ask for the f32 micro-kernel atom */
    tile_expr *kext;       /* K (elements) */
    tile_expr *kblocks;    /* k steps of this block: NULL = cdiv(K, bk) */
    tile_expr *k0;         /* the first k step: NULL = 0 (split-K slices) */
    const char *lc;        /* the accumulator's layout */
    /* the sm_90a ring only (0 / NULL: a GEMM) */
    int nseg;              /* K segments, in order, into the same accumulators
                            * (seg[0..nseg)); 0: the one of a, b and kext */
    const sched_blk_kseg *seg;
    int bgroup;            /* G > 0: B is stored (G, N, K) (b_trans, no batch)
                            * and a stage holds its G blocks [G, bn, bk] (one
                            * TMA box at (0, n, k)); the consumer runs one
                            * wgmma per block, into G accumulators (the LSTM
                            * cell's gates) */
} sched_blk_gemm;

/* The mma fragments of the block (warps wm x wn, each warp (bm/wm) x
 * (bn/wn) of C) over the row sched_blk_mma_row names (m16n8k16, or the
 * m16n8k8 .tf32 row when g->tf32): A, A stored transposed, B, B stored
 * transposed, and C, as layout text of at most n bytes each. */
#define SCHED_BLK_TF32_ROW "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
const char *sched_blk_mma_row(const sched_blk_gemm *g);
void sched_blk_mma_layouts(const sched_blk_gemm *g, char *la, char *lat, char *lb, char *lbt, char *lc, size_t n);

/* The f32 FMA micro-tiles of the block (bm/tm x bn/tn threads, each tm x
 * tn of C): C's layout, A's column, B's row, B^T's column and A^T's row at
 * one k, as layout text of at most n bytes each (see blocks_mma.c). */
void sched_blk_fma_layouts(const sched_blk_gemm *g, char *lc, char *lcol, char *lrow, char *lcolb, char *lrowa, size_t n);

/* The sm_80 / CPU main loop: pipeline(grid=(k: steps), stages) over A's
 * and B's blocks (at block_idx.x, .y, .z), the product accumulated into
 * acc (f32[bm, bn] in g->lc). */
void sched_blk_mainloop(sched_blk *kb, const sched_blk_gemm *g, tile_value *acc);

/* ---- sm_90a --------------------------------------------------------------------------------------- */
/* The persistent warp-specialised kernel: values the epilogue uses. */
#define SCHED_BLK_RING_MAXG 4
typedef struct sched_blk_ring {
    int cluster;            /* set by the caller: 2 runs blocks in clusters of two along M,
                             * B multicast (half from each), stages released in both; else 1 */
    int stages;
    int em, en;             /* each consumer's tile of C */
    int tma_store;          /* C leaves through shared memory and TMA */
    tsl_dtype cdt;          /* C's dtype */
    tile_value *as, *bs;    /* the stages as wgmma sees them: [S, BM, BK], [S, BK, BN] */
    tile_value *full, *empty, *cs;
    tile_value *wg;         /* the consumer's number */
    tile_value *it;         /* the consumer's stage counter */
    tile_value *tm, *tn, *tb; /* the tile's coordinates (tb: batch, or NULL) */
    tile_value *gm;         /* M-tiles (a cluster's second block may be one past them) */
    tile_value *rank;       /* the block's rank in its cluster; NULL without one */
    tile_stmt *wgs;
    tile_value *acc[SCHED_BLK_RING_MAXG]; /* the consumer's accumulators
                            * (sched_blk_ring_mainloop: max(1, bgroup) of them) */
} sched_blk_ring;

/* The ring's depth for the block shape (what is left beside C's tiles). */
int sched_blk_ring_stages(const sched_blk_gemm *g, int tma_store);
/* The shared bytes the ring asks for (the header's budget). */
int64_t sched_blk_ring_smem(const sched_blk_gemm *g, int tma_store);
/* The persistent grid: min(tiles, SMs) blocks, or with r->cluster 2
 * twice min(pairs of M-tiles x N-tiles [x batch], SMs / 2). */
tile_expr *sched_blk_ring_grid(sched_blk *kb, const sched_blk_gemm *g, const sched_blk_ring *r, tile_expr *M, tile_expr *N,
                               tile_expr *B);
/* Allocate the ring, open warpgroups, write the producer role, open the
 * consumer role and its tile loop over C (M x N [x batch], tiles
 * bm x bn, `group` tiles down M before moving right; with r->cluster 2
 * the two blocks of a cluster take M-tiles 2i and 2i + 1 of one N-tile). */
void sched_blk_ring_open(sched_blk *kb, const sched_blk_gemm *g, sched_blk_ring *r, tile_expr *M, tile_expr *N,
                         tile_expr *B, int group);
/* The consumer's k loop over every segment: acc (f32[em, en] in g->lc)
 * += its 64 rows of A times B, one wgmma group in flight. Returns acc;
 * with g->bgroup, r->acc[c] += A times B's block c (c < bgroup), one
 * group of bgroup wgmmas a stage, and returns r->acc[0]. */
tile_value *sched_blk_ring_mainloop(sched_blk *kb, const sched_blk_gemm *g, sched_blk_ring *r);
/* The consumer's tile store of out to C at `at` (indices), through shared
 * memory and TMA when r->tma_store, else masked; then closes the tile
 * loop, the role and warpgroups (sched_blk_ring_close). */
void sched_blk_ring_store(sched_blk *kb, sched_blk_ring *r, tile_value *out, tile_value *c, int n, tile_expr **at);
/* Closes the consumer's tile loop (waiting for its TMA stores), the role
 * and warpgroups: for an epilogue that stores by itself. */
void sched_blk_ring_close(sched_blk *kb, sched_blk_ring *r);

#endif
