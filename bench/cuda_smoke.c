/* cuda_smoke.c — a smoke test and copy-bandwidth probe for the CUDA runtime,
 * run by hand on a GPU machine (nothing in the Makefile builds it):
 *
 *   make -s && cc -std=c11 -D_GNU_SOURCE -O2 -Iinclude -Isrc bench/cuda_smoke.c \
 *       build/libtessel.a -lsqlite3 -ldl -lm -lpthread -o build/cuda_smoke && build/cuda_smoke
 *
 * It opens the device, prints its name, SM count and compute capability,
 * compiles a vector add and a copy kernel through rt_cuda_compile for the
 * device's own arch, runs both on random data and checks every element,
 * and only then times the copy kernel over 1 GiB with events (median of 20)
 * and prints the bandwidth beside the driver's own cuMemcpyDtoD. Exit
 * status 0 when everything checked out; 2 when there is no GPU.
 * `--small` checks a 1 MiB copy and times nothing (for compute-sanitizer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/env.h"
#include "runtime/runtime.h"

static const char *smoke_source =
    "extern \"C\" __global__ void vadd(long n, const float *a, const float *b, float *c) {\n"
    "    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long)gridDim.x * blockDim.x)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n"
    "// n4 16-byte vectors: the copy moves 16 bytes per thread per step\n"
    "extern \"C\" __global__ void copy4(long n4, const float4 *__restrict__ src,\n"
    "                                   float4 *__restrict__ dst) {\n"
    "    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4;\n"
    "         i += (long)gridDim.x * blockDim.x)\n"
    "        dst[i] = src[i];\n"
    "}\n";

#define TRY(call)                                                                          \
    do {                                                                                   \
        if ((call) != TSL_OK) {                                                            \
            fprintf(stderr, "cuda_smoke: %s failed:\n%s\n", #call, sb_str(&d.msg));        \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float smoke_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    api_settings_load(); /* TESSEL_NVRTC, TESSEL_CUDA_DEVICE, TESSEL_CACHE_DIR */
    int small = argc > 1 && strcmp(argv[1], "--small") == 0;
    rng ^= (uint64_t)time(NULL) * 0x2545f4914f6cdd1dull;
    tsl_diag d = {0};
    rt_cuda_device *dev = NULL;
    if (rt_cuda_open(&dev, &d) != TSL_OK) {
        fprintf(stderr, "cuda_smoke: %s\n", sb_str(&d.msg));
        diag_free(&d);
        return 2;
    }
    const rt_cuda_info *in = rt_cuda_device_info(dev);
    printf("device %d: %s, %d SMs, compute capability %d.%d (%s), %d B shared/block opt-in, "
           "driver %d, NVRTC %d\n",
           in->ordinal, in->name, in->sm_count, in->cc_major, in->cc_minor, in->arch,
           in->max_shared_optin, in->driver_version, rt_cuda_nvrtc_version());

    void *cubin = NULL;
    size_t nbin = 0;
    char *log = NULL;
    rt_cuda_options opt = {.name = "smoke.cu", .ptxas_verbose = 1};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    TRY(rt_cuda_compile(smoke_source, NULL, &opt, &cubin, &nbin, &log, &d));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    rt_ptxas_report rep;
    rt_cuda_ptxas_parse(log, &rep);
    printf("compiled for %s in %.1f ms (%s): %zu-byte cubin, max %d registers, %d B spills\n",
           in->arch, (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
           rt_cuda_compile_count() ? "NVRTC" : "cache", nbin, rep.registers,
           rep.spill_stores + rep.spill_loads);
    rt_cuda_module *mod = NULL;
    rt_cuda_function vadd = NULL, copy4 = NULL;
    TRY(rt_cuda_module_load(dev, cubin, nbin, &mod, &d));
    TRY(rt_cuda_function_get(mod, "vadd", &vadd, &d));
    TRY(rt_cuda_function_get(mod, "copy4", &copy4, &d));

    /* vector add on an odd size, checked */
    long n = 1000003;
    size_t bytes = sizeof(float) * (size_t)n;
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    for (long i = 0; i < n; i++) {
        a[i] = smoke_rand();
        b[i] = smoke_rand();
    }
    rt_cuda_ptr da, db, dc;
    TRY(rt_cuda_alloc(dev, bytes, &da, &d));
    TRY(rt_cuda_alloc(dev, bytes, &db, &d));
    TRY(rt_cuda_alloc(dev, bytes, &dc, &d));
    TRY(rt_cuda_copy_htod(dev, da, a, bytes, &d));
    TRY(rt_cuda_copy_htod(dev, db, b, bytes, &d));
    TRY(rt_cuda_memset8(dev, dc, 0xff, bytes, &d)); /* NaN until written */
    unsigned grid[3] = {(unsigned)in->sm_count * 8, 1, 1}, block[3] = {256, 1, 1};
    void *vp[] = {&n, &da, &db, &dc};
    TRY(rt_cuda_launch(dev, vadd, grid, block, 0, vp, &d));
    TRY(rt_cuda_synchronize(dev, &d));
    TRY(rt_cuda_copy_dtoh(dev, c, dc, bytes, &d));
    long bad = 0;
    for (long i = 0; i < n; i++) bad += !(fabsf(c[i] - (a[i] + b[i])) <= 1e-6f);
    printf("vadd n=%ld: %s (%ld wrong)\n", n, bad ? "FAILED" : "ok", bad);
    rt_cuda_free(dev, da);
    rt_cuda_free(dev, db);
    rt_cuda_free(dev, dc);
    free(a);
    free(b);
    free(c);
    if (bad) return 1;

    /* 1 GiB copy (1 MiB with --small): check once, then time */
    size_t gib = small ? (size_t)1 << 20 : (size_t)1 << 30;
    long n4 = (long)(gib / 16);
    rt_cuda_ptr src, dst;
    TRY(rt_cuda_alloc(dev, gib, &src, &d));
    TRY(rt_cuda_alloc(dev, gib, &dst, &d));
    size_t chunk = small ? gib : (size_t)64 << 20;
    float *h = malloc(chunk), *back = malloc(chunk);
    for (size_t off = 0; off < gib; off += chunk) {
        for (size_t i = 0; i < chunk / 4; i++) h[i] = smoke_rand();
        TRY(rt_cuda_copy_htod(dev, src + off, h, chunk, &d));
    }
    TRY(rt_cuda_memset8(dev, dst, 0xff, gib, &d));
    void *cp[] = {&n4, &src, &dst};
    TRY(rt_cuda_launch(dev, copy4, grid, block, 0, cp, &d));
    TRY(rt_cuda_synchronize(dev, &d));
    /* compare the last chunk written from the host with what came back */
    TRY(rt_cuda_copy_dtoh(dev, back, dst + gib - chunk, chunk, &d));
    bad = memcmp(back, h, chunk) != 0;
    TRY(rt_cuda_copy_dtoh(dev, back, dst, chunk, &d));
    TRY(rt_cuda_copy_dtoh(dev, h, src, chunk, &d));
    bad += memcmp(back, h, chunk) != 0;
    printf("copy4 %s: %s\n", small ? "1 MiB" : "1 GiB", bad ? "FAILED" : "ok");
    free(h);
    free(back);
    if (bad) return 1;
    if (small) {
        rt_cuda_free(dev, src);
        rt_cuda_free(dev, dst);
        rt_cuda_module_free(mod);
        rt_cuda_close(dev);
        free(cubin);
        free(log);
        diag_free(&d);
        printf("All results match (--small: no timing).\n");
        return 0;
    }
    printf("All results match. Starting benchmarks.\n");

    rt_cuda_event *e0, *e1;
    TRY(rt_cuda_event_create(dev, &e0, &d));
    TRY(rt_cuda_event_create(dev, &e1, &d));
    enum { REPS = 20 };
    float ms[REPS], ms_drv[REPS];
    int grids[] = {in->sm_count * 4, in->sm_count * 8, in->sm_count * 16};
    float best_med = 1e30f;
    int best_grid = 0;
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
        grid[0] = (unsigned)grids[g];
        TRY(rt_cuda_launch(dev, copy4, grid, block, 0, cp, &d)); /* warm-up */
        for (int r = 0; r < REPS; r++) {
            TRY(rt_cuda_event_record(dev, e0, &d));
            TRY(rt_cuda_launch(dev, copy4, grid, block, 0, cp, &d));
            TRY(rt_cuda_event_record(dev, e1, &d));
            TRY(rt_cuda_event_elapsed(dev, e0, e1, &ms[r], &d));
        }
        qsort(ms, REPS, sizeof ms[0], cmp_float);
        float med = (ms[REPS / 2 - 1] + ms[REPS / 2]) / 2;
        printf("copy4 kernel, grid %6d x 256: median %.3f ms, %.1f GB/s (read + write)\n",
               grids[g], med, 2.0 * gib / (med * 1e-3) / 1e9);
        if (med < best_med) best_med = med, best_grid = grids[g];
    }
    for (int r = 0; r < REPS; r++) {
        TRY(rt_cuda_event_record(dev, e0, &d));
        TRY(rt_cuda_copy_dtod(dev, dst, src, gib, &d));
        TRY(rt_cuda_event_record(dev, e1, &d));
        TRY(rt_cuda_event_elapsed(dev, e0, e1, &ms_drv[r], &d));
    }
    qsort(ms_drv, REPS, sizeof ms_drv[0], cmp_float);
    float med_drv = (ms_drv[REPS / 2 - 1] + ms_drv[REPS / 2]) / 2;
    printf("cuMemcpyDtoD:                  median %.3f ms, %.1f GB/s (read + write)\n", med_drv,
           2.0 * gib / (med_drv * 1e-3) / 1e9);
    printf("best copy kernel (grid %d): %.1f GB/s = %.0f%% of cuMemcpyDtoD\n", best_grid,
           2.0 * gib / (best_med * 1e-3) / 1e9, 100.0 * med_drv / best_med);

    rt_cuda_event_destroy(dev, e0);
    rt_cuda_event_destroy(dev, e1);
    rt_cuda_free(dev, src);
    rt_cuda_free(dev, dst);
    rt_cuda_module_free(mod);
    rt_cuda_close(dev);
    free(cubin);
    free(log);
    diag_free(&d);
    return 0;
}
