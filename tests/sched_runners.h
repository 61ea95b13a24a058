/* sched_runners.h — kernel runners (sched_kernel_fn) the scheduler tests
 * share: the tile interpreter with blocks in a shuffled order (seeded from
 * the test's randomness, so inter-block dependences show), and the CPU
 * target's cg_c_run. Defined in tests/unit/sched_runners.c. */
#ifndef TSL_TEST_SCHED_RUNNERS_H
#define TSL_TEST_SCHED_RUNNERS_H

#include "sched/sched.h"

tsl_status test_run_tile_interp(void *ctx, const tile_module *m, const tile_kernel *k,
                                const tile_interp_arg *args, int nargs, tsl_diag *d);
tsl_status test_run_cpu(void *ctx, const tile_module *m, const tile_kernel *k,
                        const tile_interp_arg *args, int nargs, tsl_diag *d);

#endif
