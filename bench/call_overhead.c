/* call_overhead.c — what a cached tsl_program_call costs the host, in C
 * alone (bench/py_overhead.py's `c-run` row without Python): C = A + B on
 * float32[4], the program compiled and prepared by a first call.
 *
 *   make -s -j2 all && bench/call_overhead.sh --build     # here
 *   bench/call_overhead.sh                                # on the GPU machine, carrying build/
 *
 * Rows (each checked against the host's A + B before it is timed):
 *   interp         tsl_program_call on host tensors, the reference interpreter;
 *   cpu            the same on the CPU target (the generated C kernel);
 *   cuda           on CUDA tensors, the legacy default stream (what a torch
 *                  tensor on the default stream gives);
 *   cuda, stream   the same on a stream of tessel's context (torch's side
 *                  streams): the stream's checks are on this path;
 *   cuda, launch   rt_cuda_launch of an add kernel alone: the driver's floor.
 * Each is the best per-call time of 40 batches of about 2 ms (at most --n
 * calls): a batch short enough to fit in one time slice of a shared
 * machine, and the best because interference only adds time. CUDA calls
 * are asynchronous; a batch ends with a synchronize, so the figure is the
 * host time per call as long as the GPU keeps up.
 *
 * Without a GPU the CUDA rows print "no CUDA device" and the exit status
 * is still 0; a wrong result is status 1. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/env.h"
#include "runtime/cuda_api.h"
#include "runtime/runtime.h"
#include "tessel.h"

static const char *add_src = "def add(float(N) A, float(N) B) -> (C) { C(i) = A(i) + B(i) }";
static const char *add_kernel =
    "extern \"C\" __global__ void add4(const float *a, const float *b, float *c) {\n"
    "    int i = threadIdx.x;\n"
    "    if (i < 4) c[i] = a[i] + b[i];\n"
    "}\n";

enum { NELEM = 4 };

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* One timed thing: run() once per call, sync() (may be NULL) at a batch's end. */
typedef struct timed {
    int (*run)(void *ctx);
    int (*sync)(void *ctx);
    void *ctx;
} timed;

/* Best per-call microseconds over 40 batches of about 2 ms (n caps a
 * batch); -1 when a call failed. */
static double best_of_batches(const timed *t, int n)
{
    double t0 = now_us();
    for (int i = 0; i < 10; i++)
        if (t->run(t->ctx)) return -1;
    if (t->sync && t->sync(t->ctx)) return -1;
    double per = (now_us() - t0) / 10;
    int batch = (int)(2000 / (per > 1e-3 ? per : 1e-3));
    batch = batch < 5 ? 5 : batch > n ? n : batch;
    double best = 1e30;
    for (int b = 0; b < 40; b++) {
        t0 = now_us();
        for (int i = 0; i < batch; i++)
            if (t->run(t->ctx)) return -1;
        if (t->sync && t->sync(t->ctx)) return -1;
        double us = (now_us() - t0) / batch;
        if (us < best) best = us;
    }
    return best;
}

/* ---- tsl_program_call ---------------------------------------------------------------------- */

typedef struct call {
    tsl_program *p;
    tsl_args *a;
    const DLTensor *t[3];
    tsl_target target;
    rt_cuda_device *dev; /* CUDA rows: the batch's synchronize */
} call;

static int call_run(void *ctx)
{
    call *c = ctx;
    return tsl_program_call(c->p, c->a, c->t, NULL, c->target) != TSL_OK;
}

static int call_sync(void *ctx)
{
    call *c = ctx;
    return rt_cuda_synchronize(c->dev, NULL) != TSL_OK;
}

static float frand(void) { return (float)rand() / (float)RAND_MAX * 2 - 1; }

static void row(const char *what, double us)
{
    if (us < 0) printf("  %-14s %9s\n", what, "FAILED");
    else printf("  %-14s %9.2f\n", what, us);
}

/* The host rows; 1 when a result is wrong or a call fails. */
static int host_rows(tsl_context *ctx, tsl_program *p, int n)
{
    static const tsl_target targets[] = {TSL_TARGET_INTERP, TSL_TARGET_CPU};
    static const char *names[] = {"interp", "cpu"};
    int64_t shape = NELEM;
    float a[NELEM], b[NELEM], c[NELEM];
    for (int i = 0; i < NELEM; i++) a[i] = frand(), b[i] = frand();
    DLTensor ta = {a, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &shape, NULL, 0};
    DLTensor tb = ta, tc = ta;
    tb.data = b;
    tc.data = c;
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        call cl = {p, tsl_args_create(p), {&ta, &tb, &tc}, targets[k], NULL};
        for (int i = 0; i < NELEM; i++) c[i] = 0.0f / 0.0f;
        int ok = cl.a && !call_run(&cl);
        for (int i = 0; ok && i < NELEM; i++) ok = c[i] == a[i] + b[i];
        if (!ok) {
            printf("  %-14s FAILED: %s\n", names[k], cl.a ? tsl_context_error(ctx) : "no args");
            bad = 1;
        } else {
            timed t = {call_run, NULL, &cl};
            row(names[k], best_of_batches(&t, n));
        }
        tsl_args_free(cl.a);
    }
    return bad;
}

/* ---- CUDA ---------------------------------------------------------------------------------- */

typedef struct launch {
    rt_cuda_device *dev;
    rt_cuda_function f;
    rt_cuda_ptr a, b, c;
    void *params[3];
} launch;

static int launch_run(void *ctx)
{
    launch *l = ctx;
    static const unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    return rt_cuda_launch(l->dev, l->f, grid, block, 0, l->params, NULL) != TSL_OK;
}

static int launch_sync(void *ctx)
{
    launch *l = ctx;
    return rt_cuda_synchronize(l->dev, NULL) != TSL_OK;
}

/* c (device) == a + b (host)? */
static int cuda_check(rt_cuda_device *dev, rt_cuda_ptr c, const float *a, const float *b, tsl_diag *d)
{
    float h[NELEM];
    if (rt_cuda_synchronize(dev, d) || rt_cuda_copy_dtoh(dev, h, c, sizeof h, d)) return 0;
    for (int i = 0; i < NELEM; i++)
        if (h[i] != a[i] + b[i]) return 0;
    return 1;
}

/* A stream of the device's primary context (current on this thread after
 * rt_cuda_open), from the driver itself: the runtime creates none. */
static void *cuda_stream_create(void)
{
    void *lib = dlopen(rt_settings_get()->libcuda ? rt_settings_get()->libcuda : "libcuda.so.1",
                       RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return NULL;
    CUresult (*create)(CUstream *, unsigned) = NULL;
    void *sym = dlsym(lib, "cuStreamCreate");
    memcpy(&create, &sym, sizeof sym);
    CUstream s = NULL;
    if (!create || create(&s, 1 /* CU_STREAM_NON_BLOCKING */) != CUDA_SUCCESS) s = NULL;
    dlclose(lib);
    return s;
}

/* The CUDA rows; 1 when a result is wrong or a call fails. */
static int cuda_rows(tsl_context *ctx, tsl_program *p, int n)
{
    tsl_diag d = {0};
    rt_cuda_device *dev = NULL;
    if (rt_cuda_open(&dev, &d) != TSL_OK) {
        const char *why = sb_str(&d.msg);
        if (!strncmp(why, "error: ", 7)) why += 7;
        printf("  %-14s no CUDA device (%.*s)\n", "cuda", (int)strcspn(why, "\n"), why);
        diag_free(&d);
        return 0;
    }
    const rt_cuda_info *in = rt_cuda_device_info(dev);
    float a[NELEM], b[NELEM], nan[NELEM];
    for (int i = 0; i < NELEM; i++) a[i] = frand(), b[i] = frand(), nan[i] = 0.0f / 0.0f;
    rt_cuda_ptr da = 0, db = 0, dc = 0;
    int bad = rt_cuda_alloc(dev, sizeof a, &da, &d) || rt_cuda_alloc(dev, sizeof b, &db, &d) ||
              rt_cuda_alloc(dev, sizeof a, &dc, &d) || rt_cuda_copy_htod(dev, da, a, sizeof a, &d) ||
              rt_cuda_copy_htod(dev, db, b, sizeof b, &d);
    int64_t shape = NELEM;
    DLTensor ta = {(void *)(uintptr_t)da, {kDLCUDA, in->ordinal}, 1, {kDLFloat, 32, 1}, &shape, NULL, 0};
    DLTensor tb = ta, tc = ta;
    tb.data = (void *)(uintptr_t)db;
    tc.data = (void *)(uintptr_t)dc;
    void *stream = bad ? NULL : cuda_stream_create();
    for (int k = 0; !bad && k < 2; k++) {
        const char *name = k ? "cuda, stream" : "cuda";
        if (k && !stream) {
            printf("  %-14s no stream (cuStreamCreate failed)\n", name);
            continue;
        }
        call cl = {p, tsl_args_create(p), {&ta, &tb, &tc}, TSL_TARGET_CUDA, dev};
        if (cl.a) tsl_args_set_stream(cl.a, k ? stream : NULL);
        int ok = cl.a && !rt_cuda_copy_htod(dev, dc, nan, sizeof nan, &d) && !call_run(&cl);
        if (!ok) printf("  %-14s FAILED: %s\n", name, cl.a ? tsl_context_error(ctx) : "no args");
        else if (!(ok = cuda_check(dev, dc, a, b, &d))) printf("  %-14s FAILED: C != A + B\n", name);
        if (ok) {
            timed t = {call_run, call_sync, &cl};
            row(name, best_of_batches(&t, n));
            ok = cuda_check(dev, dc, a, b, &d);
        }
        bad |= !ok;
        tsl_args_free(cl.a);
    }
    /* the floor: one launch of a hand-written add through the runtime */
    void *cubin = NULL;
    size_t nbin = 0;
    rt_cuda_module *mod = NULL;
    launch l = {dev, NULL, da, db, dc, {&l.a, &l.b, &l.c}};
    rt_cuda_options o = {.name = "add4.cu"};
    if (!bad && (rt_cuda_compile(add_kernel, NULL, &o, &cubin, &nbin, NULL, &d) ||
                 rt_cuda_module_load(dev, cubin, nbin, &mod, &d) || rt_cuda_function_get(mod, "add4", &l.f, &d) ||
                 rt_cuda_copy_htod(dev, dc, nan, sizeof nan, &d) || launch_run(&l) || !cuda_check(dev, dc, a, b, &d))) {
        printf("  %-14s FAILED: %s\n", "cuda, launch", sb_str(&d.msg));
        bad = 1;
    } else if (!bad) {
        timed t = {launch_run, launch_sync, &l};
        row("cuda, launch", best_of_batches(&t, n));
    }
    printf("(device %d: %s, driver %d)\n", in->ordinal, in->name, in->driver_version);
    rt_cuda_module_free(mod);
    free(cubin);
    rt_cuda_free(dev, da);
    rt_cuda_free(dev, db);
    rt_cuda_free(dev, dc);
    rt_cuda_close(dev);
    diag_free(&d);
    return bad;
}

int main(int argc, char **argv)
{
    api_settings_load(); /* TESSEL_CACHE_DIR, TESSEL_CUDA_DEVICE, ... */
    int n = 20000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) {
            n = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: call_overhead [--n CALLS]\n");
            return 2;
        }
    }
    if (n < 5) n = 5;
    srand((unsigned)time(NULL));
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    if (!ctx || tsl_program_compile(ctx, add_src, "add.tc", NULL, &p) != TSL_OK) {
        fprintf(stderr, "call_overhead: %s\n", ctx ? tsl_context_error(ctx) : "no context");
        return 1;
    }
    printf("tessel %s: a cached tsl_program_call of C = A + B, float32[%d]; best of 40 batches of ~2 ms\n",
           tsl_version(), NELEM);
    printf("  %-14s %9s\n", "what", "us/call");
    int bad = host_rows(ctx, p, n);
    bad |= cuda_rows(ctx, p, n);
    if (!bad) printf("All results match.\n");
    tsl_program_free(p);
    tsl_context_free(ctx);
    return bad;
}
