/* interp.h — the tile interpreter: runs one kernel of a tile module on the
 * CPU over its whole grid, one simulated block at a time, exactly as a GPU
 * would (docs/tile-interp.md):
 *   - register tensors are held per thread, placed by their distributed
 *     layout; collective instructions (mma, ldmatrix) move data through the
 *     hardware's fragment ownership, so a wrong layout gives a wrong answer
 *     or a located error;
 *   - shared memory is a byte array per block with per-byte hazard
 *     tracking (missing `sync`) and cp.async groups whose data lands only
 *     when the group completes (missing `wait`);
 *   - global loads/stores are masked to the tensor bounds;
 *   - an instruction with a decomposition runs its decomposition;
 *   - warpgroup instances run interleaved as tasks, ordered only by
 *     mbarriers; TMA lands at its barrier phase's completion, wgmma
 *     results exist only after the wait that completes them, and a
 *     missing wait, fence or arrive is a located hazard or deadlock.
 * Errors never abort: a located message goes to the diag and a status is
 * returned. */
#ifndef TSL_TILE_INTERP_H
#define TSL_TILE_INTERP_H

#include <stdint.h>

#include "tile/tile.h"

/* One argument: a global tensor (t != NULL; host memory, strides NULL =
 * C order) or a scalar parameter (t == NULL): `n: int` and integer typed
 * scalars take ival; a float typed scalar (`alpha: f32`) takes the bits of
 * a double in ival — build it with tile_interp_arg_float(). (Three fields
 * so that existing `{name, t, 0}` initialisers stay valid.) */
typedef struct tile_interp_arg {
    const char *name;
    const DLTensor *t;
    int64_t ival;
} tile_interp_arg;

tile_interp_arg tile_interp_arg_float(const char *name, double v);

typedef struct tile_interp_opts {
    int shuffle_blocks;  /* run blocks in a shuffled order (catches inter-block deps),
                          * and interleave warpgroup instances at random */
    uint64_t seed;       /* for the shuffles */
    int64_t smem_budget; /* bytes; 0 = the kernel's stated budget or 228 KiB */
    FILE *print_to;      /* `print` output; NULL = stdout */
} tile_interp_opts;

/* Values of the kernel's size symbols (k->syms order), bound from the
 * shapes of the tensor arguments and from `sizes` (name=value pairs, e.g.
 * from --size). A conflict or a missing symbol is a TSL_ERR_SHAPE naming
 * the tensor and dim. sym_vals has k->nsyms entries. */
tsl_status tile_interp_bind_symbols(const tile_kernel *k, const tile_interp_arg *args, int nargs,
                                    const char *const *size_names, const int64_t *size_vals,
                                    int nsizes, int64_t *sym_vals, tsl_diag *d);
/* Shape of tensor parameter `p` under the symbol values. */
tsl_status tile_interp_param_shape(const tile_kernel *k, const tile_value *p,
                                   const int64_t *sym_vals, int64_t *shape, tsl_diag *d);
/* The tensor parameters the kernel writes (store_global or a pipeline out
 * spec), in parameter order; returns the count (at most max). */
int tile_interp_outputs(const tile_kernel *k, const tile_value **out, int max);

/* Run kernel k. Every tensor parameter must be bound in args (shapes and
 * dtypes are checked); outputs are written in place. src (may be NULL)
 * locates messages. */
tsl_status tile_interp_run(const tile_kernel *k, const tsl_source *src, const tile_interp_arg *args,
                           int nargs, const tile_interp_opts *opts, tsl_diag *d);

#endif
