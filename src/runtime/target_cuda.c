/* target_cuda.c — an NVIDIA GPU as an rt_target (plan.h), over cuda.c:
 * NVRTC for the device's own arch (cached), the driver API for modules,
 * launches, memory and events. `dev` is an rt_cuda_device.
 *
 * Variants: bit 0 of a variant key is the 64-bit index variant (compiled
 * with RT_CUDA_INDEX64; entry <base>_i64, else <base>_i32), bit i + 1 the
 * arm of size branch i (compiled with -DTSL_IF<i>=0|1, so the untaken arm
 * folds away before optimisation).
 *
 * Kernel ABI (codegen/cuda.c writes the wrapper): one 8-byte slot per
 * value — per tensor parameter its device pointer then (extent, stride)
 * per dim in elements; per scalar its word (a double's bits for a float);
 * the size symbols; a pointer to the launch's error record (8 x u64:
 * flag, parameter, dim, index, thread, block x/y/z); last, by value, each
 * TMA tensor map the kernel takes (sm_90a), built per launch from the
 * bound tensor. */
#include <string.h>

#include "runtime/plan.h"
#include "runtime/runtime.h"

static const char *tcuda_arch(void *dev) { return rt_cuda_device_info(dev)->arch; }

static int tcuda_units(void *dev) { return dev ? rt_cuda_device_info(dev)->sm_count : 1; }

static int tcuda_cluster_units(void *dev, void *fn, const rt_kernel *k)
{
    return rt_cuda_cluster_blocks(dev, fn, k->cluster, (unsigned)k->threads, (unsigned)k->smem);
}
static const char *tcuda_toolchain(void *dev)
{
    static _Thread_local char buf[64];
    snprintf(buf, sizeof buf, "nvrtc %d driver %d", rt_cuda_nvrtc_version(),
             dev ? rt_cuda_device_info(dev)->driver_version : 0);
    return buf;
}

static tsl_status tcuda_compile(const char *arch, const rt_kernel *k, unsigned variant, void **bin, size_t *size,
                                tsl_diag *d)
{
    char defs[32][24];
    const char *extra[33];
    int ne = 0;
    if (variant & 1) extra[ne++] = RT_CUDA_INDEX64;
    for (int i = 0; i < k->nbranches && i < 32; i++) {
        snprintf(defs[i], sizeof defs[i], RT_CUDA_BRANCH_FMT, i, (variant >> (i + 1)) & 1u);
        extra[ne++] = defs[i];
    }
    char name[300];
    snprintf(name, sizeof name, "%s.cu", k->name);
    rt_cuda_options o = {.name = name, .extra = extra, .n_extra = ne};
    return rt_cuda_compile(k->source, arch, &o, bin, size, NULL, d);
}

static tsl_status tcuda_load(void *dev, const rt_kernel *k, unsigned variant, const void *bin, size_t size,
                             void **module, void **fn, tsl_diag *d)
{
    rt_cuda_module *m = NULL;
    tsl_status st = rt_cuda_module_load(dev, bin, size, &m, d);
    if (st) return st;
    char sym[320];
    snprintf(sym, sizeof sym, "%s_%s", k->entry, (variant & 1) ? "i64" : "i32");
    rt_cuda_function f = NULL;
    st = rt_cuda_function_get(m, sym, &f, d);
    if (st) {
        rt_cuda_module_free(m);
        return st;
    }
    *module = m;
    *fn = f;
    return TSL_OK;
}

static void tcuda_unload(void *module) { rt_cuda_module_free(module); }

/* The condition the pipeline's size branch tests (tile/pipeline_tma.c,
 * aligned_rows): the last dimension contiguous, every other stride a
 * multiple of 16 bytes. */
static int rows_aligned(const rt_param *pa, const int64_t *stride)
{
    int64_t es = (int64_t)tsl_dtype_size((tsl_dtype)pa->dtype);
    if (es <= 0 || pa->rank < 1 || stride[pa->rank - 1] != 1) return 0;
    for (int i = 0; i + 1 < pa->rank; i++)
        if (stride[i] * es % 16) return 0;
    return 1;
}

static tsl_status tcuda_launch(void *dev, void *fn, const rt_bound *b, rt_fault *fault, tsl_diag *d)
{
    (void)fault; /* faults come back in the error record */
    const rt_kernel *k = b->k;
    unsigned grid[3], block[3] = {(unsigned)k->threads, 1, 1};
    for (int i = 0; i < 3; i++) {
        if (b->grid[i] > 2147483647LL || (i > 0 && b->grid[i] > 65535)) {
            diag_error(d, TSL_ERR_SHAPE, "kernel '%s': grid dimension %d is %lld (not launchable)", k->name, i,
                       (long long)b->grid[i]);
            return TSL_ERR_SHAPE;
        }
        grid[i] = (unsigned)b->grid[i];
    }
    uint64_t slot[RT_MAX_PARAMS * (1 + 2 * RT_MAX_RANK) + RT_MAX_PARAMS + 1];
    void *params[TSL_COUNTOF(slot) + RT_MAX_TMAPS];
    int ns = 0;
    for (int q = 0; q < k->nparams; q++) {
        const rt_param *pa = &k->params[q];
        if (!pa->is_tensor) {
            memcpy(&slot[ns++], &b->word[q], 8);
            continue;
        }
        slot[ns++] = b->ptr[q];
        for (int i = 0; i < pa->rank; i++) {
            slot[ns++] = (uint64_t)b->shape[q][i];
            slot[ns++] = (uint64_t)b->stride[q][i];
        }
    }
    for (int s = 0; s < k->nsyms; s++) slot[ns++] = (uint64_t)b->syms[s];
    slot[ns++] = b->err;
    for (int i = 0; i < ns; i++) params[i] = &slot[i];
    /* TMA tensor maps (CUtensorMap, 128 bytes, 64-byte aligned), passed by
     * value after the regular parameters; an empty tensor copies nothing
     * and gets a zero map, as does a guarded map's tensor whose rows are
     * not aligned (the kernel's size branch then copies with cp.async) */
    _Alignas(64) unsigned long long maps[RT_MAX_TMAPS][16];
    for (int i = 0; i < k->ntmaps && i < RT_MAX_TMAPS; i++) {
        const rt_tmap *m = &k->tmaps[i];
        const rt_param *pa = &k->params[m->param];
        int64_t n = 1;
        for (int j = 0; j < pa->rank; j++) n *= b->shape[m->param][j];
        params[ns + i] = maps[i];
        memset(maps[i], 0, sizeof maps[i]);
        if (!n || (m->guarded && !rows_aligned(pa, b->stride[m->param]))) continue;
        tsl_status st = rt_cuda_tmap_encode(dev, maps[i], pa->name, (tsl_dtype)pa->dtype, m->rank, b->ptr[m->param],
                                            b->shape[m->param], b->stride[m->param], m->box, m->swizzle, d);
        if (st) return st;
    }
    return rt_cuda_launch(dev, fn, grid, block, (unsigned)k->smem, params, d);
}

static tsl_status tcuda_alloc(void *dev, size_t size, rt_ptr *out, tsl_diag *d)
{
    return rt_cuda_alloc(dev, size, out, d);
}

static void tcuda_free(void *dev, rt_ptr p) { rt_cuda_free(dev, p); }

static tsl_status tcuda_copy(void *dev, rt_ptr dst, rt_ptr src, size_t size, rt_copy_kind kind, tsl_diag *d)
{
    if (!size) return TSL_OK;
    switch (kind) {
    case RT_COPY_HTOD: return rt_cuda_copy_htod(dev, dst, (const void *)(uintptr_t)src, size, d);
    case RT_COPY_DTOH: return rt_cuda_copy_dtoh(dev, (void *)(uintptr_t)dst, src, size, d);
    case RT_COPY_DTOD: return rt_cuda_copy_dtod(dev, dst, src, size, d);
    }
    return TSL_ERR_INTERNAL;
}

/* Memsets and launches go to the device's stream (rt_cuda_set_stream: a
 * caller's, else the legacy default one, which the synchronous copies
 * order with); a sync waits for that stream alone when a caller set it. */
static tsl_status tcuda_memset(void *dev, rt_ptr p, int byte, size_t size, tsl_diag *d)
{
    return rt_cuda_memset8_async(dev, p, (unsigned char)byte, size, d);
}

static tsl_status tcuda_sync(void *dev, tsl_diag *d)
{
    return rt_cuda_stream(dev) ? rt_cuda_stream_synchronize(dev, d) : rt_cuda_synchronize(dev, d);
}

static tsl_status tcuda_event_create(void *dev, void **ev, tsl_diag *d)
{
    return rt_cuda_event_create(dev, (rt_cuda_event **)ev, d);
}

static tsl_status tcuda_event_record(void *dev, void *ev, tsl_diag *d) { return rt_cuda_event_record(dev, ev, d); }

static tsl_status tcuda_event_elapsed(void *dev, void *start, void *end, double *ms, tsl_diag *d)
{
    float f = 0;
    tsl_status st = rt_cuda_event_elapsed(dev, start, end, &f, d);
    *ms = f;
    return st;
}

static void tcuda_event_destroy(void *dev, void *ev) { rt_cuda_event_destroy(dev, ev); }

const rt_target rt_target_cuda = {
    .name = "cuda",
    .host_memory = 0,
    .index_variants = 1,
    .fault_records = 1,
    .arch = tcuda_arch,
    .units = tcuda_units,
    .cluster_units = tcuda_cluster_units,
    .toolchain = tcuda_toolchain,
    .compile = tcuda_compile,
    .load = tcuda_load,
    .unload = tcuda_unload,
    .launch = tcuda_launch,
    .alloc = tcuda_alloc,
    .free = tcuda_free,
    .copy = tcuda_copy,
    .memset = tcuda_memset,
    .sync = tcuda_sync,
    .event_create = tcuda_event_create,
    .event_record = tcuda_event_record,
    .event_elapsed = tcuda_event_elapsed,
    .event_destroy = tcuda_event_destroy,
};
