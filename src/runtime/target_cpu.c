/* target_cpu.c — the CPU as an rt_target (plan.h): kernels are generated
 * C compiled by the system C compiler (cpu.c, cached), loaded from a
 * private memory file, and run block by block over the thread pool
 * (pool.c); device memory is host memory.
 *
 * Kernel ABI (codegen/c.c writes the entry): int entry(void *const *P,
 * const int64_t *I, int64_t begin, int64_t end, int64_t *fail, int64_t
 * *info) runs blocks [begin, end) of the flattened grid. P[q] is tensor
 * parameter q's data (NULL for scalars); I holds, per parameter in order,
 * a scalar's word or a tensor's extents then its strides (elements), then
 * the size symbols, then the grid's 3 dims (at least 1 each). A nonzero
 * return is 1 + an index into the kernel's error table; *fail the block,
 * info[0..1] the message's numbers. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "runtime/plan.h"
#include "runtime/runtime.h"

typedef int (*cpu_entry_fn)(void *const *P, const int64_t *I, int64_t begin, int64_t end, int64_t *fail,
                            int64_t *info);

static const char *tcpu_arch(void *dev)
{
    (void)dev;
    return rt_cpu_isa();
}

static int tcpu_units(void *dev)
{
    (void)dev;
    return 1;
}

static const char *tcpu_toolchain(void *dev)
{
    (void)dev;
    return rt_cpu_toolchain();
}

static tsl_status tcpu_compile(const char *arch, const rt_kernel *k, unsigned variant, void **bin, size_t *size,
                               tsl_diag *d)
{
    (void)arch; /* the compiler builds for this machine (-march=native): rt_cpu_isa() says which */
    (void)variant;
    char hint[300];
    snprintf(hint, sizeof hint, "%s.c", k->name);
    return rt_cpu_build(k->source, hint, bin, size, d);
}

static tsl_status tcpu_load(void *dev, const rt_kernel *k, unsigned variant, const void *bin, size_t size,
                            void **module, void **fn, tsl_diag *d)
{
    (void)dev;
    (void)variant;
    rt_cpu_module *m = NULL;
    char hint[300];
    snprintf(hint, sizeof hint, "%s.c", k->name);
    tsl_status st = rt_cpu_load(bin, size, hint, &m, d);
    if (st) return st;
    void *f = rt_cpu_symbol(m, k->entry, d);
    if (!f) {
        rt_cpu_module_free(m);
        return TSL_ERR_RUNTIME;
    }
    *module = m;
    *fn = f;
    return TSL_OK;
}

static void tcpu_unload(void *module) { rt_cpu_module_free(module); }

typedef struct tcpu_run {
    cpu_entry_fn fn;
    void **P;
    int64_t *I;
    pthread_mutex_t mu;
    int rc;
    int64_t fail;
    int64_t info[2];
} tcpu_run;

static void tcpu_range(void *ctx, int64_t begin, int64_t end)
{
    tcpu_run *l = ctx;
    int64_t fail = -1, info[2] = {0, 0};
    int rc = l->fn(l->P, l->I, begin, end, &fail, info);
    if (!rc) return;
    pthread_mutex_lock(&l->mu);
    if (!l->rc || (fail >= 0 && fail < l->fail)) { /* the lowest failing block, as the interpreter's order gives */
        l->rc = rc;
        l->fail = fail;
        l->info[0] = info[0];
        l->info[1] = info[1];
    }
    pthread_mutex_unlock(&l->mu);
}

static tsl_status tcpu_launch(void *dev, void *fn, const rt_bound *b, rt_fault *fault, tsl_diag *d)
{
    (void)dev;
    const rt_kernel *k = b->k;
    void *P[RT_MAX_PARAMS + 1];
    int64_t I[RT_MAX_PARAMS * (2 * RT_MAX_RANK) + RT_MAX_PARAMS + 4];
    int w = 0;
    for (int q = 0; q < k->nparams; q++) {
        const rt_param *pa = &k->params[q];
        if (!pa->is_tensor) {
            P[q] = NULL;
            I[w++] = b->word[q];
            continue;
        }
        P[q] = (void *)(uintptr_t)b->ptr[q];
        for (int i = 0; i < pa->rank; i++) I[w++] = b->shape[q][i];
        for (int i = 0; i < pa->rank; i++) I[w++] = b->stride[q][i];
    }
    for (int s = 0; s < k->nsyms; s++) I[w++] = b->syms[s];
    int64_t nblocks = 1;
    for (int i = 0; i < 3; i++) {
        I[w++] = b->grid[i] > 0 ? b->grid[i] : 1;
        nblocks *= b->grid[i] > 0 ? b->grid[i] : 0;
    }
    if (nblocks <= 0) return TSL_OK;
    tcpu_run l = {.fn = (cpu_entry_fn)fn, .P = P, .I = I, .fail = INT64_MAX};
    pthread_mutex_init(&l.mu, NULL);
    rt_cpu_parallel_for_max(nblocks, tcpu_range, &l, b->threads);
    pthread_mutex_destroy(&l.mu);
    if (!l.rc) return TSL_OK;
    fault->code = l.rc;
    fault->block = l.fail;
    fault->info[0] = l.info[0];
    fault->info[1] = l.info[1];
    (void)d; /* the executor words the message from the kernel's table */
    return TSL_ERR_RUNTIME;
}

static tsl_status tcpu_alloc(void *dev, size_t size, rt_ptr *out, tsl_diag *d)
{
    (void)dev;
    void *p = calloc(size ? size : 1, 1);
    if (!p) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory (%zu bytes)", size);
        return TSL_ERR_NOMEM;
    }
    *out = (rt_ptr)(uintptr_t)p;
    return TSL_OK;
}

static void tcpu_free(void *dev, rt_ptr p)
{
    (void)dev;
    free((void *)(uintptr_t)p);
}

static tsl_status tcpu_copy(void *dev, rt_ptr dst, rt_ptr src, size_t size, rt_copy_kind kind, tsl_diag *d)
{
    (void)dev;
    (void)kind;
    (void)d;
    if (size) memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, size);
    return TSL_OK;
}

static tsl_status tcpu_memset(void *dev, rt_ptr p, int byte, size_t size, tsl_diag *d)
{
    (void)dev;
    (void)d;
    if (size) memset((void *)(uintptr_t)p, byte, size);
    return TSL_OK;
}

static tsl_status tcpu_sync(void *dev, tsl_diag *d)
{
    (void)dev;
    (void)d;
    return TSL_OK; /* launches return when their blocks are done */
}

static tsl_status tcpu_event_create(void *dev, void **ev, tsl_diag *d)
{
    (void)dev;
    *ev = calloc(1, sizeof(double));
    if (!*ev) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    return TSL_OK;
}

static tsl_status tcpu_event_record(void *dev, void *ev, tsl_diag *d)
{
    (void)dev;
    (void)d;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)ev = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    return TSL_OK;
}

static tsl_status tcpu_event_elapsed(void *dev, void *start, void *end, double *ms, tsl_diag *d)
{
    (void)dev;
    (void)d;
    *ms = *(double *)end - *(double *)start;
    return TSL_OK;
}

static void tcpu_event_destroy(void *dev, void *ev)
{
    (void)dev;
    free(ev);
}

const rt_target rt_target_cpu = {
    .name = "cpu",
    .host_memory = 1,
    .index_variants = 0,
    .fault_records = 0,
    .arch = tcpu_arch,
    .units = tcpu_units,
    .toolchain = tcpu_toolchain,
    .compile = tcpu_compile,
    .load = tcpu_load,
    .unload = tcpu_unload,
    .launch = tcpu_launch,
    .alloc = tcpu_alloc,
    .free = tcpu_free,
    .copy = tcpu_copy,
    .memset = tcpu_memset,
    .sync = tcpu_sync,
    .event_create = tcpu_event_create,
    .event_record = tcpu_event_record,
    .event_elapsed = tcpu_event_elapsed,
    .event_destroy = tcpu_event_destroy,
};
