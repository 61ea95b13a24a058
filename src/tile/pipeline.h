/* pipeline.h — expansion of `pipeline(grid, stages=S, in=[...], out=[...])
 * { body }` (Pallas) into plain tile IR: S shared buffers per input,
 * a prologue issuing the first S-1 stages' cp.async groups, a steady state
 * (wait for stage i, synchronize, issue stage i+S-1 into the buffer stage
 * i-1 used, run the body on buffer i % S), and out blocks that stay
 * resident while their index does not change and are written back when it
 * does or at the end. An input whose block index did not change from the
 * previous iteration is not copied again. docs/tile-interp.md has the
 * exact shape of the output. */
#ifndef TSL_TILE_PIPELINE_H
#define TSL_TILE_PIPELINE_H

#include "tile/tile.h"

/* Expand every pipeline of every kernel of m, in place (new IR in m's
 * arena; the body's statements are reused). Before expanding, checks the
 * shared memory the kernel will need against its smem_budget (or
 * `default_budget` bytes when the kernel states none; 0 = no check): the
 * message names the budget and the request. src may be NULL. */
tsl_status tile_pipeline_expand(tile_module *m, const tsl_source *src, int64_t default_budget,
                                tsl_diag *d);

#endif
