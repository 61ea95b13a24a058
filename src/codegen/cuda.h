/* cuda.h — tile IR -> CUDA C (cuda.c); kernels run through the compile
 * driver and the runtime's executor (runtime/target_cuda.c).
 *
 * One `extern "C" __global__` kernel per tile kernel, in two variants:
 * <entry>_i32 (32-bit index arithmetic) and <entry>_i64 (64-bit), both
 * instances of one template body. A compile makes one of them: the source
 * defines <entry>_i32 unless it is compiled with CG_CUDA_INDEX64 as an
 * NVRTC option, then <entry>_i64 (one variant halves the cold compile; the
 * 64-bit one is built only when a launch's sizes need it). Each GPU thread executes its share of every block-level
 * instruction: register tensors are per-thread arrays indexed only by
 * compile-time constants (their coordinates come in closed form from the
 * distributed layout), shared tensors live in one dynamic `extern __shared__`
 * buffer at fixed byte offsets, global accesses are masked to the bounds.
 * The semantics are the tile interpreter's (src/tile/interp.c is the
 * oracle); docs/codegen.md lists the fast paths and the fallbacks.
 *
 * (This header stands beside src/codegen/codegen.h, which was not yet
 * committed when the CUDA generator was written.) */
#ifndef TSL_CODEGEN_CUDA_H
#define TSL_CODEGEN_CUDA_H

#include "base/base.h"
#include "tile/interp.h"
#include "tile/tile.h"

/* Append the CUDA source of kernel k (of module m) to *out. Pipelines are
 * expanded first on a copy of the module; then instruction selection
 * (target/select.h, target sm_80) gives every spec an atom, written into
 * k (or into the expanded copy): the generator prints what was selected.
 * Errors (a spec no atom fits, an instruction or type the generator does
 * not support) go to d naming the instruction; TSL_OK on success. */
tsl_status cg_cuda_emit(const tile_module *m, const tile_kernel *k, strbuf *out, tsl_diag *d);

/* Size branches. An `if` whose condition reads only size symbols, int
 * parameters and constants (the row strategy's `if D <= 1024`) is emitted
 * as `#ifdef TSL_IF<n> if (TSL_IF<n>) #else if (cond) #endif`: compiled
 * with -DTSL_IF<n>=0 or 1 the untaken arm folds away before optimisation,
 * so a kernel with size classes costs one class's compile. cond[n] is the
 * condition in kernel k itself (not filled for kernels with a pipeline,
 * which are emitted from an expanded copy; nor past the maximum). */
#define CG_CUDA_MAX_BRANCHES 8
typedef struct cg_cuda_branches {
    int n;
    const tile_expr *cond[CG_CUDA_MAX_BRANCHES];
    int parent[CG_CUDA_MAX_BRANCHES]; /* the branch it is nested in, or -1 */
    int arm[CG_CUDA_MAX_BRANCHES];    /* in the parent's then (1) or else (0) arm */
} cg_cuda_branches;

/* The kernel's distinct specialisations: each a bit set (bit n = the
 * value of TSL_IF<n>; branches its path does not reach are 0). Writes up
 * to max into keys; returns how many there are. */
int cg_cuda_branch_leaves(const cg_cuda_branches *br, unsigned *keys, int max);

/* cg_cuda_emit that also lists the size branches (br may be NULL). */
tsl_status cg_cuda_emit_branches(const tile_module *m, const tile_kernel *k, strbuf *out, cg_cuda_branches *br,
                                 tsl_diag *d);

/* cg_cuda_emit_branches that also gives cg_cuda_smem_bytes (one generation). */
tsl_status cg_cuda_emit_info(const tile_module *m, const tile_kernel *k, strbuf *out, cg_cuda_branches *br,
                             int64_t *smem, tsl_diag *d);

/* The NVRTC option that selects the 64-bit index variant. */
#define CG_CUDA_INDEX64 "-DTSL_INDEX64"

/* The entry symbol base of kernel `name`: "tsl_cuda_<name>" (characters
 * other than [A-Za-z0-9_] become '_'); the source defines <base>_i32, or
 * <base>_i64 when compiled with CG_CUDA_INDEX64. Writes into buf (n bytes). */
const char *cg_cuda_entry_name(const char *name, char *buf, size_t n);

/* Bytes of dynamic shared memory the emitted kernel needs (allocations
 * plus the scratch of generic fallbacks); -1 with a message on error. */
int64_t cg_cuda_smem_bytes(const tile_module *m, const tile_kernel *k, tsl_diag *d);

/* TMA tensor maps. A kernel with tma_load / tma_store takes one tensor map
 * per distinct (global tensor, box, swizzle), in this order, as
 * `const __grid_constant__` parameters after its regular ones; the
 * launcher builds each with rt_cuda_tmap_encode from the tensor's bound
 * pointer, shape and strides. */
#define CG_MAX_TMAPS 8
typedef struct cg_cuda_tmap {
    int param;       /* the kernel parameter (a global tensor) */
    int rank;        /* the tensor's rank, 1..5 */
    int64_t box[5];  /* elements per dim, outermost first */
    int swizzle;     /* shared swizzle in bytes: 0, 32, 64, 128 */
    int esize;       /* element bytes */
    tile_dtype dtype;
    int guarded;     /* used only under a size branch that checks the rows are
                        16-byte aligned: a tensor TMA cannot describe gets a
                        zero map, which the arm that runs never reads */
} cg_cuda_tmap;
/* The kernel's tensor maps (writes up to max; returns how many). */
int cg_cuda_tmaps(const tile_kernel *k, cg_cuda_tmap *out, int max);

#endif
