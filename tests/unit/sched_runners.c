/* sched_runners.c — the kernel runners of tests/sched_runners.h. */
#include <string.h>

#include "codegen/codegen.h"
#include "sched_runners.h"
#include "test.h"

tsl_status test_run_tile_interp(void *ctx, const tile_module *m, const tile_kernel *k,
                                const tile_interp_arg *args, int nargs, tsl_diag *d)
{
    (void)ctx;
    (void)m;
    tile_interp_opts o;
    memset(&o, 0, sizeof o);
    o.shuffle_blocks = 1;
    o.seed = test_rand();
    return tile_interp_run(k, NULL, args, nargs, &o, d);
}

tsl_status test_run_cpu(void *ctx, const tile_module *m, const tile_kernel *k,
                        const tile_interp_arg *args, int nargs, tsl_diag *d)
{
    (void)ctx;
    return cg_c_run(m, k, args, nargs, d);
}
