/* call_overhead.c — what a cached tsl_program_call costs the host, in C
 * alone (bench/py_overhead.py's `c-run` row without Python): C = A + B on
 * float32[4], the program compiled and prepared by a first call.
 *
 *   make -s -j2 all && bench/call_overhead.sh --build     # here
 *   bench/call_overhead.sh [--n CALLS] [--cuda-only]      # on the GPU machine, carrying build/
 *
 * Rows (each checked against the host's A + B before it is timed):
 *   interp         tsl_program_call on host tensors, the reference interpreter;
 *   cpu            the same on the CPU target (the generated C kernel);
 *   cuda           on CUDA tensors, the legacy default stream (what a torch
 *                  tensor on the default stream gives);
 *   cuda, stream   the same on a stream of tessel's context (torch's side
 *                  streams): the stream's checks are on this path;
 *   cuda, dlpack   tsl_program_call_dlpack on the default stream, through a
 *                  C exchange API that copies each DLTensor: the one foreign
 *                  call the Python package makes on torch tensors, fill
 *                  included (torch's own fill costs more than this copy);
 *   cuda, launch   rt_cuda_launch of an add kernel alone: the driver's floor.
 * Each is the best per-call time of 40 batches of about 2 ms (at most --n
 * calls): a batch short enough to fit in one time slice of a shared
 * machine, and the best because interference only adds time. CUDA calls
 * are asynchronous; a batch ends with a synchronize, so the figure is the
 * host time per call as long as the GPU keeps up.
 *
 * Without a GPU the CUDA rows print "no CUDA device" and the exit status
 * is still 0; a wrong result is status 1. With the stand-in driver
 * (TESSEL_LIBCUDA=build/libfakecuda.so: nothing runs, so nothing can be
 * checked) the CUDA rows are the host's time alone, each followed by the
 * driver calls one call makes:
 *
 *   TESSEL_LIBCUDA=$PWD/build/libfakecuda.so bench/call_overhead.sh */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/env.h"
#include "fake/fake_cuda.h"
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
    if (us < 0) printf("  %-16s %9s\n", what, "FAILED");
    else printf("  %-16s %9.2f\n", what, us);
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
            printf("  %-16s FAILED: %s\n", names[k], cl.a ? tsl_context_error(ctx) : "no args");
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

/* The stand-in driver's state when it is the driver (nothing runs on it). */
static fake_cuda_state *fake;

/* c (device) == a + b (host)? (Under the stand-in driver: the calls made,
 * nothing to check.) */
static int cuda_check(rt_cuda_device *dev, rt_cuda_ptr c, const float *a, const float *b, tsl_diag *d)
{
    float h[NELEM];
    if (rt_cuda_synchronize(dev, d) || rt_cuda_copy_dtoh(dev, h, c, sizeof h, d)) return 0;
    for (int i = 0; !fake && i < NELEM; i++)
        if (h[i] != a[i] + b[i]) return 0;
    return 1;
}

/* Under the stand-in driver: the driver calls one t->run makes, by entry
 * point ("2: cuCtxSetCurrent 1, cuLaunchKernel 1"). */
static void driver_calls(const timed *t)
{
    static const char *names[] = {
#define X(field, sym, ret, params) sym,
        CUDA_DRIVER_FUNCS(X)
#undef X
    };
    enum { CALLS = 100 };
    long before[FAKE_CU_N], all = 0;
    memcpy(before, fake->calls, sizeof before);
    for (int i = 0; i < CALLS; i++)
        if (t->run(t->ctx)) return;
    for (int i = 0; i < FAKE_CU_N; i++) all += fake->calls[i] - before[i];
    printf("  %-16s %9.2f driver calls/call:", "", (double)all / CALLS);
    for (int i = 0, n = 0; i < FAKE_CU_N; i++)
        if (fake->calls[i] != before[i])
            printf("%s %s %.2f", n++ ? "," : "", names[i], (double)(fake->calls[i] - before[i]) / CALLS);
    printf("\n");
}

/* A DLPack exchange API over plain DLTensors (tsl_program_call_dlpack's
 * framework, as tests/unit/test_cuda_calls.c has it): objects are
 * DLTensors, the current stream the default one. */
typedef struct dl_api {
    uint32_t major, minor;
    const void *prev;
    void *fns[3];
    int (*fill)(void *obj, DLTensor *out);
    int (*stream)(DLDeviceType type, int32_t id, void **out);
} dl_api;

static int dl_fill(void *obj, DLTensor *out)
{
    *out = *(const DLTensor *)obj;
    return 0;
}

static int dl_stream(DLDeviceType type, int32_t id, void **out)
{
    (void)type, (void)id;
    *out = NULL;
    return 0;
}

typedef struct dl_call {
    tsl_program *p;
    tsl_args *a;
    tsl_dlpack_call c;
    rt_cuda_device *dev; /* the batch's synchronize */
} dl_call;

static int dl_run(void *ctx)
{
    dl_call *c = ctx;
    return tsl_program_call_dlpack(c->p, c->a, &c->c, 0) != TSL_OK;
}

static int dl_sync(void *ctx)
{
    dl_call *c = ctx;
    return rt_cuda_synchronize(c->dev, NULL) != TSL_OK;
}

/* The driver's own context calls, timed alone (the current context set again). */
static CUresult (*ctx_get)(CUcontext *), (*ctx_set)(CUcontext);
static CUcontext ctx_current;

static int ctx_get_run(void *ctx)
{
    (void)ctx;
    CUcontext c = NULL;
    return ctx_get(&c) != CUDA_SUCCESS || c != ctx_current;
}

static int ctx_set_run(void *ctx)
{
    (void)ctx;
    return ctx_set(ctx_current) != CUDA_SUCCESS;
}

/* A stream of the device's primary context (current on this thread after
 * rt_cuda_open), from the driver itself: the runtime creates none. */
static void *cuda_stream_create(void)
{
    if (fake) return fake->stream_new(fake->primary);
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
        printf("  %-16s no CUDA device (%.*s)\n", "cuda", (int)strcspn(why, "\n"), why);
        diag_free(&d);
        return 0;
    }
    const rt_cuda_info *in = rt_cuda_device_info(dev);
    const char *lib = rt_settings_get()->libcuda;
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (h) {
        fake = dlsym(h, "fake_cuda");
        dlclose(h);
    }
    if (fake)
        printf("  (the stand-in driver %s: nothing runs and nothing is checked; the host's time alone)\n", lib);
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
            printf("  %-16s no stream (cuStreamCreate failed)\n", name);
            continue;
        }
        call cl = {p, tsl_args_create(p), {&ta, &tb, &tc}, TSL_TARGET_CUDA, dev};
        if (cl.a) tsl_args_set_stream(cl.a, k ? stream : NULL);
        int ok = cl.a && !rt_cuda_copy_htod(dev, dc, nan, sizeof nan, &d) && !call_run(&cl);
        if (!ok) printf("  %-16s FAILED: %s\n", name, cl.a ? tsl_context_error(ctx) : "no args");
        else if (!(ok = cuda_check(dev, dc, a, b, &d))) printf("  %-16s FAILED: C != A + B\n", name);
        if (ok) {
            timed t = {call_run, call_sync, &cl};
            row(name, best_of_batches(&t, n));
            if (fake) driver_calls(&t);
            ok = cuda_check(dev, dc, a, b, &d);
        }
        bad |= !ok;
        tsl_args_free(cl.a);
    }
    /* the Python package's one foreign call on torch tensors */
    void *objs[3] = {&ta, &tb, &tc};
    DLTensor filled[3];
    const DLTensor *fts[3] = {&filled[0], &filled[1], &filled[2]};
    dl_api api = {.major = 1, .minor = 2, .fill = dl_fill, .stream = dl_stream};
    dl_call dc_ = {p, bad ? NULL : tsl_args_create(p),
                   {.exchange_api = &api, .objects = objs, .n = 3, .filled = filled, .tensors = fts,
                    .host_target = TSL_TARGET_CPU, .device_target = TSL_TARGET_CUDA,
                    .ready = {kDLCUDA, in->ordinal}},
                   dev};
    if (!bad) {
        int ok = dc_.a && !rt_cuda_copy_htod(dev, dc, nan, sizeof nan, &d) && !dl_run(&dc_);
        if (!ok) printf("  %-16s FAILED: %s\n", "cuda, dlpack", dc_.a ? tsl_context_error(ctx) : "no args");
        else if (!(ok = cuda_check(dev, dc, a, b, &d))) printf("  %-16s FAILED: C != A + B\n", "cuda, dlpack");
        if (ok) {
            timed t = {dl_run, dl_sync, &dc_};
            row("cuda, dlpack", best_of_batches(&t, n));
            if (fake) driver_calls(&t);
            ok = cuda_check(dev, dc, a, b, &d);
        }
        bad |= !ok;
    }
    tsl_args_free(dc_.a);
    /* the floor: one launch of a hand-written add through the runtime */
    void *cubin = NULL;
    size_t nbin = 0;
    rt_cuda_module *mod = NULL;
    launch l = {dev, NULL, da, db, dc, {&l.a, &l.b, &l.c}};
    rt_cuda_options o = {.name = "add4.cu"};
    if (!bad && (rt_cuda_compile(add_kernel, NULL, &o, &cubin, &nbin, NULL, &d) ||
                 rt_cuda_module_load(dev, cubin, nbin, &mod, &d) || rt_cuda_function_get(mod, "add4", &l.f, &d) ||
                 rt_cuda_copy_htod(dev, dc, nan, sizeof nan, &d) || launch_run(&l) || !cuda_check(dev, dc, a, b, &d))) {
        printf("  %-16s FAILED: %s\n", "cuda, launch", sb_str(&d.msg));
        bad = 1;
    } else if (!bad) {
        timed t = {launch_run, launch_sync, &l};
        row("cuda, launch", best_of_batches(&t, n));
        if (fake) driver_calls(&t);
    }
    /* what asking and setting the current context cost (the runtime sets
     * it once per run) */
    if (!bad) {
        void *dh = dlopen(lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        void *gs = dh ? dlsym(dh, "cuCtxGetCurrent") : NULL, *ss = dh ? dlsym(dh, "cuCtxSetCurrent") : NULL;
        memcpy(&ctx_get, &gs, sizeof gs);
        memcpy(&ctx_set, &ss, sizeof ss);
        if (ctx_get && ctx_get(&ctx_current) == CUDA_SUCCESS && ctx_current) {
            timed tg = {ctx_get_run, NULL, NULL}, ts = {ctx_set_run, NULL, NULL};
            row("cuCtxGetCurrent", best_of_batches(&tg, n));
            if (ctx_set) row("cuCtxSetCurrent", best_of_batches(&ts, n));
        }
        if (dh) dlclose(dh);
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
    int n = 20000, cuda_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) {
            n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--cuda-only")) {
            cuda_only = 1;
        } else {
            fprintf(stderr, "usage: call_overhead [--n CALLS] [--cuda-only]\n");
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
    printf("  %-16s %9s\n", "what", "us/call");
    int bad = cuda_only ? 0 : host_rows(ctx, p, n);
    bad |= cuda_rows(ctx, p, n);
    if (!bad) printf(fake ? "The host rows match; the CUDA rows ran on the stand-in driver (nothing checked).\n"
                          : "All results match.\n");
    tsl_program_free(p);
    tsl_context_free(ctx);
    return bad;
}
