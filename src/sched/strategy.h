/* strategy.h — the fast strategies of the scheduler (docs/sched.md,
 * "Row-reduction and elementwise strategies"): a group of the op graph
 * whose strategy they recognise becomes ONE tile kernel appended to the
 * plan; anything they do not recognise is left to the generic lowering
 * (lower.c), so a group is never lowered wrongly, only slowly.
 *
 *   sched_lower_rowred       rowred.c: one block per row, the row streamed
 *                            in chunks of SCHED_RR_WIDTH, reductions across
 *                            the block, internal temporaries recomputed on
 *                            chip (never stored)
 *   sched_lower_elementwise  elementwise.c: pointwise groups over one box,
 *                            flat contiguous tiles of SCHED_EW_WIDTH
 *
 * Each returns 1 when it lowered the group (one launch added to p), 0 when
 * the group is not its shape (p unchanged). */
#ifndef TSL_SCHED_STRATEGY_H
#define TSL_SCHED_STRATEGY_H

#include "graph/graph.h"
#include "sched/sched.h"

enum {
    SCHED_RR_THREADS = 128, /* threads per row (4 warps) */
    SCHED_RR_LOCALS = 8,    /* contiguous elements per thread per chunk */
    SCHED_RR_WIDTH = SCHED_RR_THREADS * SCHED_RR_LOCALS,
    SCHED_EW_THREADS = 256,
    SCHED_EW_LOCALS = 8,
    SCHED_EW_WIDTH = SCHED_EW_THREADS * SCHED_EW_LOCALS
};

int sched_lower_rowred(sched_plan *p, const graph *g, const graph_group *grp);
int sched_lower_elementwise(sched_plan *p, const graph *g, const graph_group *grp);
/* contract.c: GEMM-shaped contraction groups (matmul, transposed, batched,
 * with init/epilogue ops) as one tiled kernel: mma.m16n8k16 for f16/bf16,
 * f32 FMA micro-tiles for f32 (docs/sched.md, "The contraction strategy"). */
int sched_lower_contract(sched_plan *p, const graph *g, const graph_group *grp);

/* qmatmul.c: the weight-only quantized matmul Y(m,n) +=! T(W(k,n)) *
 * S(k / G, n) * X(m,k) (optional zero points Z) with W low-bit and packed:
 * W's bytes streamed once, dequantized in registers (docs/sched.md, "The
 * quantized matmul"). */
int sched_lower_qmatmul(sched_plan *p, const graph *g, const graph_group *grp);

/* attention.c (attention.h): a merged attention group as one kernel that
 * never stores the scores (docs/sched.md, "The attention strategy"). */
int sched_lower_attention(sched_plan *p, const graph *g, const graph_group *grp);

/* chain.c: a merged GEMM chain (an MLP) as one kernel, activations kept
 * on chip (docs/sched.md, "The GEMM-chain strategy"); its launch may be
 * guarded by the hidden widths (lower.c then adds the layers' own
 * kernels under the negated guard). */
int sched_lower_gemm_chain(sched_plan *p, const graph *g, const graph_group *grp);
/* chain_mma.c: the chain's tensor-core plan (f16/bf16 on CUDA), its launch
 * under guard (NULL or no terms: always); hmax bounds every hidden width.
 * 0 when the chain is not its shape (nothing added). */
int sched_chain_mma(sched_plan *p, const graph *g, const graph_group *grp, const graph_gemm_chain *ch,
                    const sched_guard *guard, int hmax);

/* lstm.c: a merged LSTM cell (graph/lstm.c) as one kernel: the four
 * gates' GEMM (K = I + H) with the bias, the nonlinearities and the cell
 * update in its epilogue, gates never stored (docs/sched.md, "The
 * LSTM-cell strategy"); its launch guarded by G == 4 when G is a size. */
int sched_lower_lstm(sched_plan *p, const graph *g, const graph_group *grp);

/* The dispatch lower.c calls per group (strategies.c: one table row per
 * strategy, tried in order): the group's strategy, else 0. The option
 * sched.generic=1 turns the fast strategies off (comparisons, bisecting). */
int sched_lower_strategy(sched_plan *p, const graph *g, const graph_group *grp);

/* The GPU plans (sched_plan.target == TSL_TARGET_CUDA; docs/sched.md):
 * row reductions with SCHED_RR_THREADS_GPU threads in three classes by row
 * length D (the first needs one row dim; with more it is skipped):
 *   D <= T / SHORT_ROWS * SHORT_LOCALS   SHORT_ROWS rows per block, each on
 *                                        T / 32 / SHORT_ROWS warps
 *   D <= T * BLOCK_LOCALS                a block per row, in registers
 *   else                                 a block per row streaming chunks
 *                                        of T * STREAM_LOCALS, one pass
 *                                        per reduction
 * Elementwise groups (no reduction, nothing re-read): a block per chunk of
 * SCHED_EW_THREADS_GPU * SCHED_EW_LOCALS_GPU elements, of the flat tensor
 * or of a row (broadcast reads): one 16-byte f16 access per thread and
 * tensor. Measured on an H200: many small blocks (32-46 registers, 8
 * blocks per SM) beat four accesses in flight per thread (80 registers,
 * 3 blocks per SM): SiLU 3.27 against 2.68 TB/s. */
#ifndef SCHED_RR_THREADS_GPU
#define SCHED_RR_THREADS_GPU 256
#endif
#ifndef SCHED_RR_SHORT_ROWS
#define SCHED_RR_SHORT_ROWS 8
#endif
#ifndef SCHED_RR_SHORT_LOCALS
#define SCHED_RR_SHORT_LOCALS 32
#endif
#ifndef SCHED_RR_BLOCK_LOCALS
#define SCHED_RR_BLOCK_LOCALS 32
#endif
#define SCHED_RR_STREAM_LOCALS 8
/* The CPU plan's streaming path: chunks of SCHED_RR_THREADS x this. The
 * accumulator of a reduction is one chunk and is reduced once per row
 * through the emulated threads (slot tables), so a narrow chunk keeps that
 * tail short against the row. Rows of 4096 f32 (bench/cpu.sh, 1 core):
 * 1: 15-16 GB/s, 2: 10-11, 4: 8-9 (noisy machine, same session). */
/* The CPU plan of a transpose (elementwise.c): T x T tiles, T threads. */
/* The CPU plan of two-operand reductions (lower.c, lower_rblk): an
 * SCHED_RB_M x SCHED_RB_N output tile per block, SCHED_RB_TM x SCHED_RB_TN
 * per thread (the micro-kernel's register tile). */
#ifndef SCHED_RB_M
#define SCHED_RB_M 16
#endif
#ifndef SCHED_RB_N
#define SCHED_RB_N 32
#endif
#ifndef SCHED_RB_TM
#define SCHED_RB_TM 4
#endif
#ifndef SCHED_RB_TN
#define SCHED_RB_TN 16
#endif
#ifndef SCHED_TR_TILE_CPU
#define SCHED_TR_TILE_CPU 64
#endif
#ifndef SCHED_RR_STREAM_LOCALS_CPU
#define SCHED_RR_STREAM_LOCALS_CPU 1
#endif
/* Full reductions (lower.c, lower_full: a rank-0 LHS): per block T x LOC
 * lanes, at most BLOCKS blocks of at least MIN points (CPU) or of one
 * step (GPU), then one block over the blocks' partials. */
#ifndef SCHED_FR_THREADS_CPU
#define SCHED_FR_THREADS_CPU 128
#endif
#ifndef SCHED_FR_LOCALS_CPU
#define SCHED_FR_LOCALS_CPU 16
#endif
#ifndef SCHED_FR_BLOCKS_CPU
#define SCHED_FR_BLOCKS_CPU 256
#endif
#ifndef SCHED_FR_MIN_CPU
#define SCHED_FR_MIN_CPU 65536
#endif
#ifndef SCHED_FR_THREADS_GPU
#define SCHED_FR_THREADS_GPU 256
#endif
#ifndef SCHED_FR_LOCALS_GPU
#define SCHED_FR_LOCALS_GPU 16
#endif
#ifndef SCHED_FR_BLOCKS_GPU
#define SCHED_FR_BLOCKS_GPU 1024
#endif
/* GPU row kernels that stream at most SCHED_RR_MIN_BLOCKS_STREAMS tensors
 * (full rows and column vectors) ask for SCHED_RR_MIN_BLOCKS blocks per SM
 * (min_blocks: 80 registers at 256 threads). On an H200: softmax f16
 * +8-9% at 3 against 2 (no spills), 4 spilled and lost at D = 1024;
 * layernorm f16 (X, gamma, beta; gamma and beta loaded where used)
 * +12-15% at 3 with 12-52 spilled bytes. More streams: none stated. */
#ifndef SCHED_RR_MIN_BLOCKS
#define SCHED_RR_MIN_BLOCKS 3
#endif
#define SCHED_RR_MIN_BLOCKS_STREAMS 3
#define SCHED_EW_THREADS_GPU 256
#define SCHED_EW_LOCALS_GPU 8
/* Chunks per iteration of the streaming path (their loads issued first).
 * 4 was slower on an H200 (150-195 registers: 2-3 blocks per SM). */
#define SCHED_RR_UNROLL 1

#endif
