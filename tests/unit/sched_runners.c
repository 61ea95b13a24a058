/* sched_runners.c — the kernel runners of tests/sched_runners.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/cuda.h"
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

tsl_status test_nvrtc_arms(const tile_module *m, const tile_kernel *k, const char *arch, rt_ptxas_report *worst,
                           int *narms, tsl_diag *d)
{
    memset(worst, 0, sizeof *worst);
    *narms = 0;
    strbuf src = {0};
    cg_cuda_branches br;
    tsl_status st = cg_cuda_emit_branches(m, k, &src, &br, d);
    unsigned leaves[64];
    int n = st ? 0 : cg_cuda_branch_leaves(&br, leaves, 64);
    for (int lf = 0; !st && lf < n && lf < 64; lf++) {
        char defs[CG_CUDA_MAX_BRANCHES][24];
        const char *extra[CG_CUDA_MAX_BRANCHES];
        for (int b = 0; b < br.n; b++) {
            snprintf(defs[b], sizeof defs[b], "-DTSL_IF%d=%u", b, (leaves[lf] >> b) & 1u);
            extra[b] = defs[b];
        }
        rt_cuda_options o = {0};
        o.ptxas_verbose = 1;
        o.name = k->name;
        o.extra = extra;
        o.n_extra = br.n;
        void *cubin = NULL;
        size_t bytes = 0;
        char *log = NULL;
        st = rt_cuda_compile(sb_str(&src), arch, &o, &cubin, &bytes, &log, d);
        if (!st) {
            rt_ptxas_report r;
            rt_cuda_ptxas_parse(log, &r);
            worst->found += r.found >= 1;
            if (r.registers > worst->registers) worst->registers = r.registers;
            if (r.spill_stores > worst->spill_stores) worst->spill_stores = r.spill_stores;
            if (r.spill_loads > worst->spill_loads) worst->spill_loads = r.spill_loads;
            if (r.stack_frame > worst->stack_frame) worst->stack_frame = r.stack_frame;
            (*narms)++;
        }
        free(cubin);
        free(log);
    }
    sb_free(&src);
    return st;
}
