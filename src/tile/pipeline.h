/* pipeline.h — expansion of `pipeline(grid, stages=S, in=[...], out=[...])
 * { body }` (Pallas) into plain tile IR. Two forms, chosen by the caller
 * that knows the target (tile_pipeline_opts_for_arch):
 *
 *   cp.async (sm_80, the default): S shared buffers per input, a prologue
 *   issuing the first S-1 stages' cp.async groups, a steady state (wait
 *   for stage i, synchronize, issue stage i+S-1 into the buffer stage i-1
 *   used, run the body on buffer i % S);
 *
 *   TMA (sm_90a): a ring of S shared buffers per input loaded by TMA, a
 *   full mbarrier per stage (expect_tx of the stage's bytes) and an empty
 *   one released by the consumers, parities from the copy counts. In a
 *   `warpgroups` statement with an empty role, that role is the producer
 *   issuing every copy and the role holding the pipeline consumes them;
 *   otherwise the block (or the role's one warpgroup) issues its own
 *   copies ahead and waits on the full barriers.
 *
 * In both, out blocks stay resident while their index does not change and
 * are written back when it does or at the end, and an input whose block
 * index did not change from the previous iteration is not copied again.
 * docs/tile-interp.md has the exact shape of the output. */
#ifndef TSL_TILE_PIPELINE_H
#define TSL_TILE_PIPELINE_H

#include "tile/tile.h"

typedef enum tile_pipe_copy {
    TILE_PIPE_CP_ASYNC = 0, /* cp.async groups, `wait`, `sync` (sm_80) */
    TILE_PIPE_TMA           /* TMA, full/empty mbarriers (sm_90a) */
} tile_pipe_copy;

/* Options; all zero = the cp.async form with no budget check. */
typedef struct tile_pipeline_opts {
    int64_t default_budget; /* shared bytes when a kernel states no smem_budget; 0 = no check */
    tile_pipe_copy copy;
    /* TMA only: 0 (what compiling for sm_90a uses): a pipeline whose shared
     * blocks TMA cannot take (a padded layout, a row not a multiple of 16
     * bytes, ...) keeps the cp.async form, and one whose global rows are
     * 16-byte aligned only for some sizes gets both forms under a size
     * branch; 1: the first is a located error and the second is left to
     * the run (TMA reports rows it cannot take). */
    int tma_only;
} tile_pipeline_opts;

/* The options for code compiled for `arch`: TMA for "sm_90a" / "sm_90",
 * cp.async otherwise (NULL too). */
tile_pipeline_opts tile_pipeline_opts_for_arch(const char *arch);

/* Expand every pipeline of every kernel of m, in place (new IR in m's
 * arena; the body's statements are reused). Before expanding, checks the
 * shared memory each kernel will need against its smem_budget (or
 * o->default_budget): the message names the budget and the request. src
 * may be NULL; o NULL means all zero. */
tsl_status tile_pipeline_expand_opts(tile_module *m, const tsl_source *src, const tile_pipeline_opts *o,
                                     tsl_diag *d);

/* The cp.async form with `default_budget` (tile_pipeline_expand_opts). */
tsl_status tile_pipeline_expand(tile_module *m, const tsl_source *src, int64_t default_budget,
                                tsl_diag *d);

#endif
