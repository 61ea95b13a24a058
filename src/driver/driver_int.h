/* driver_int.h — what the driver's files share (nothing outside src/driver/
 * includes it). */
#ifndef TSL_DRIVER_INT_H
#define TSL_DRIVER_INT_H

#include "driver/driver.h"
#include "sched/sched.h"

/* Emit every kernel the scheduler's plan launches (kern[i] is what launch
 * i runs after expansion; m the module they belong to) and fill p with the
 * launch plan as data: tensors, kernels (source, ABI, symbol bindings,
 * grid, size branches, error table), launches. `sources` gets the sources
 * per launch, separated by blank lines (`--emit=c|cuda`). Scratch in a. */
tsl_status drv_plan_build(const lang_def *def, const sched_plan *sp, const tile_kernel *const *kern,
                          const tile_module *m, const drv_target *t, const sched_options *o, tsl_arena *a, rt_plan *p,
                          strbuf *sources, tsl_diag *d);

#endif
