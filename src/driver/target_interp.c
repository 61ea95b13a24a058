/* target_interp.c — the tile interpreter as a target: the "source" of a
 * kernel is its tile IR text, compiling keeps the text, loading parses it,
 * and a launch runs tile_interp_run with the executor's bound arguments.
 * So a scheduled plan runs through the same executor on the oracle as on
 * the CPU or a GPU (the scheduler's tests compare the three). Device memory
 * is host memory; `dev` may point at tile_interp_opts (block order, shared
 * budget), NULL for the defaults. */
#include <string.h>

#include "driver/driver.h"
#include "tile/interp.h"

static tsl_status emit_tile(const tile_module *m, const tile_kernel *k, const sched_options *o, tsl_arena *a,
                            strbuf *out, drv_emitted *e, tsl_diag *d)
{
    (void)m;
    (void)o;
    (void)d;
    tile_print_kernel(out, k);
    e->entry = arena_strdup(a, k->name);
    return TSL_OK;
}

static const char *tinterp_arch(void *dev)
{
    (void)dev;
    return "tile";
}

static int tinterp_units(void *dev)
{
    (void)dev;
    return 1;
}

static tsl_status tinterp_compile(const char *arch, const rt_kernel *k, unsigned variant, void **bin, size_t *size,
                                  tsl_diag *d)
{
    (void)arch;
    (void)variant;
    *size = strlen(k->source) + 1;
    if (!(*bin = malloc(*size))) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    memcpy(*bin, k->source, *size);
    return TSL_OK;
}

/* A loaded kernel: its parse. */
typedef struct tinterp_module {
    tsl_arena *a;
    tsl_source src;
    const tile_kernel *k;
} tinterp_module;

static tsl_status tinterp_load(void *dev, const rt_kernel *k, unsigned variant, const void *bin, size_t size,
                               void **module, void **fn, tsl_diag *d)
{
    (void)dev;
    (void)variant;
    tinterp_module *m = calloc(1, sizeof *m);
    tile_module *tm = NULL;
    tsl_status st = m && (m->a = arena_create()) ? TSL_OK : TSL_ERR_NOMEM;
    if (st) diag_error(d, st, "out of memory");
    if (!st) {
        m->src.name = arena_printf(m->a, "%s.tile", k->name);
        m->src.text = arena_strndup(m->a, bin, size);
        st = tile_parse(m->a, &m->src, d, &tm);
    }
    if (!st && !(m->k = tile_module_find(tm, k->name))) {
        diag_error(d, TSL_ERR_INTERNAL, "kernel '%s' is not in its own text", k->name);
        st = TSL_ERR_INTERNAL;
    }
    if (st) {
        if (m) arena_free(m->a);
        free(m);
        return st;
    }
    *module = m;
    *fn = m;
    return TSL_OK;
}

static void tinterp_unload(void *module)
{
    tinterp_module *m = module;
    if (!m) return;
    arena_free(m->a);
    free(m);
}

static tsl_status tinterp_launch(void *dev, void *fn, const rt_bound *b, rt_fault *fault, tsl_diag *d)
{
    (void)fault;
    const tinterp_module *m = fn;
    const rt_kernel *k = b->k;
    tile_interp_arg args[RT_MAX_PARAMS];
    DLTensor dl[RT_MAX_PARAMS];
    for (int q = 0; q < k->nparams; q++) {
        const rt_param *pa = &k->params[q];
        args[q] = (tile_interp_arg){.name = pa->name, .ival = b->word[q]};
        if (!pa->is_tensor) continue;
        dl[q] = (DLTensor){.data = (void *)(uintptr_t)b->ptr[q],
                           .device = {kDLCPU, 0},
                           .ndim = pa->rank,
                           .dtype = tsl_dtype_to_dlpack((tsl_dtype)(pa->dtype >= 0 ? pa->dtype : TSL_DTYPE_U8)),
                           .shape = (int64_t *)b->shape[q],
                           .strides = (int64_t *)b->stride[q]};
        args[q].t = &dl[q];
    }
    return tile_interp_run(m->k, &m->src, args, k->nparams, dev, d);
}

/* memory and timing are the CPU target's (host memory, the monotonic clock) */
static tsl_status tinterp_alloc(void *dev, size_t size, rt_ptr *out, tsl_diag *d)
{
    return rt_target_cpu.alloc(dev, size, out, d);
}
static void tinterp_free(void *dev, rt_ptr p) { rt_target_cpu.free(dev, p); }
static tsl_status tinterp_copy(void *dev, rt_ptr dst, rt_ptr src, size_t size, rt_copy_kind kind, tsl_diag *d)
{
    return rt_target_cpu.copy(dev, dst, src, size, kind, d);
}
static tsl_status tinterp_memset(void *dev, rt_ptr p, int byte, size_t size, tsl_diag *d)
{
    return rt_target_cpu.memset(dev, p, byte, size, d);
}
static tsl_status tinterp_sync(void *dev, tsl_diag *d) { return rt_target_cpu.sync(dev, d); }
static tsl_status tinterp_event_create(void *dev, void **ev, tsl_diag *d) { return rt_target_cpu.event_create(dev, ev, d); }
static tsl_status tinterp_event_record(void *dev, void *ev, tsl_diag *d) { return rt_target_cpu.event_record(dev, ev, d); }
static tsl_status tinterp_event_elapsed(void *dev, void *a, void *b, double *ms, tsl_diag *d)
{
    return rt_target_cpu.event_elapsed(dev, a, b, ms, d);
}
static void tinterp_event_destroy(void *dev, void *ev) { rt_target_cpu.event_destroy(dev, ev); }

const rt_target drv_rt_interp = {
    .name = "tile-interp",
    .host_memory = 1,
    .arch = tinterp_arch,
    .units = tinterp_units,
    .toolchain = tinterp_arch,
    .compile = tinterp_compile,
    .load = tinterp_load,
    .unload = tinterp_unload,
    .launch = tinterp_launch,
    .alloc = tinterp_alloc,
    .free = tinterp_free,
    .copy = tinterp_copy,
    .memset = tinterp_memset,
    .sync = tinterp_sync,
    .event_create = tinterp_event_create,
    .event_record = tinterp_event_record,
    .event_elapsed = tinterp_event_elapsed,
    .event_destroy = tinterp_event_destroy,
};

const drv_target drv_target_tile_interp = {
    .name = "tile-interp",
    .id = TSL_TARGET_INTERP,
    .source_ext = ".tile",
    .emit = emit_tile,
    .rt = &drv_rt_interp,
};
