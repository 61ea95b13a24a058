/* targets.c — the compiled targets as structs of operations: the
 * generator's emit (here) and the runtime's compile, load, launch,
 * allocate and copy (runtime/target_*.c). A new target is one more
 * table, not an if-chain. */
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/cuda.h"
#include "driver/driver.h"

static tsl_status emit_c(const tile_module *m, const tile_kernel *k, const sched_options *o, tsl_arena *a,
                         strbuf *out, drv_emitted *e, tsl_diag *d)
{
    const cg_c_error *errs = NULL;
    int n = 0;
    (void)o; /* the plan itself asks for the micro-kernel atoms (cpu.micro_kernels) */
    tsl_status st = cg_c_emit_table(m, k, a, out, &errs, &n, d);
    if (st) return st;
    char entry[256];
    e->entry = arena_strdup(a, cg_c_entry_name(k->name, entry, sizeof entry));
    e->nerrs = n;
    e->errs = arena_alloc(a, sizeof *e->errs * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        e->errs[i] = (rt_kerr){(int)errs[i].st, (char *)errs[i].msg, (char *)errs[i].where, errs[i].info};
    return TSL_OK;
}

static tsl_status emit_cuda(const tile_module *m, const tile_kernel *k, const sched_options *o, tsl_arena *a,
                            strbuf *out, drv_emitted *e, tsl_diag *d)
{
    (void)o;
    cg_cuda_branches br;
    memset(&br, 0, sizeof br);
    tsl_status st = cg_cuda_emit_info(m, k, out, &br, &e->smem, d);
    if (st) return st;
    char entry[256];
    e->entry = arena_strdup(a, cg_cuda_entry_name(k->name, entry, sizeof entry));
    e->nbranches = br.n;
    const tile_expr **c = arena_alloc(a, sizeof *c * (size_t)(br.n + 1));
    for (int i = 0; i < br.n; i++) c[i] = br.cond[i];
    e->branches = c;
    cg_cuda_tmap maps[CG_MAX_TMAPS];
    int n = cg_cuda_tmaps(k, maps, CG_MAX_TMAPS);
    if (n > CG_MAX_TMAPS || n > RT_MAX_TMAPS) {
        diag_error(d, TSL_ERR_UNAVAILABLE, "kernel '%s': more than %d TMA tensor maps", k->name, CG_MAX_TMAPS);
        return TSL_ERR_UNAVAILABLE;
    }
    e->ntmaps = n;
    e->tmaps = arena_alloc(a, sizeof *e->tmaps * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        e->tmaps[i] = (rt_tmap){.param = maps[i].param, .rank = maps[i].rank, .swizzle = maps[i].swizzle,
                                 .guarded = maps[i].guarded};
        memcpy(e->tmaps[i].box, maps[i].box, sizeof e->tmaps[i].box);
    }
    return TSL_OK;
}

const drv_target drv_target_cpu = {
    .name = "cpu",
    .id = TSL_TARGET_CPU,
    .source_ext = ".c",
    .emit = emit_c,
    .rt = &rt_target_cpu,
};

const drv_target drv_target_cuda = {
    .name = "cuda",
    .id = TSL_TARGET_CUDA,
    .source_ext = ".cu",
    .emit = emit_cuda,
    .rt = &rt_target_cuda,
};

const drv_target *drv_target_of(tsl_target t)
{
    return t == TSL_TARGET_CPU ? &drv_target_cpu : t == TSL_TARGET_CUDA ? &drv_target_cuda : NULL;
}
