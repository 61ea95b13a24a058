/* test_cuda_calls.c — which CUDA driver calls the runtime makes, and in
 * which context, without a GPU: the suite runs again in a child process
 * whose driver is the stand-in build/libfakecuda.so (tests/fake/; the
 * runtime opens its driver once per process, so the child is the only
 * place it can be the fake). In the child: a run's context span sets the
 * context once; a stream's context is asked once per handle (a reused
 * handle fails once, then is refused); the shared-memory attribute is set
 * once per function and size; and a cached tsl_program_call on CUDA
 * tensors makes one cuCtxSetCurrent and one cuLaunchKernel (one
 * cuStreamIsCapturing more on a stream) and nothing else, whatever context
 * the caller's thread had current, its launches in the primary context;
 * so does one through tsl_program_call_dlpack, on the framework's stream. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake/fake_cuda.h"
#include "runtime/runtime.h"
#include "tessel.h"
#include "test.h"

static fake_cuda_state *fake; /* in the child: the fake driver's state */

/* The fake driver next to this executable (build/libfakecuda.so). */
static int fake_path(char *buf, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", buf, n - 32);
    if (len <= 0) return 0;
    buf[len] = 0;
    char *slash = strrchr(buf, '/');
    if (!slash) return 0;
    strcpy(slash + 1, "libfakecuda.so");
    return access(buf, R_OK) == 0;
}

/* In the child: the fake's state once the runtime loaded it as its driver
 * (NULL, and a failed check, otherwise). */
static fake_cuda_state *fake_state(void)
{
    if (fake) return fake;
    rt_cuda_device *dev = NULL;
    tsl_diag d = {0};
    CHECK_MSG(rt_cuda_open(&dev, &d) == TSL_OK, "the fake driver does not open: %s", sb_str(&d.msg));
    rt_cuda_close(dev);
    diag_free(&d);
    void *h = dlopen(rt_settings_get()->libcuda, RTLD_NOW | RTLD_NOLOAD);
    fake = h ? dlsym(h, "fake_cuda") : NULL;
    CHECK_MSG(fake != NULL, "%s is not the fake driver", rt_settings_get()->libcuda);
    dlclose(h);
    return fake;
}

static int in_child(void) { return getenv("TESSEL_TEST_FAKE_CUDA") != NULL; }

/* In the parent: run this suite in a child whose driver is the fake, its
 * output indented under this test's line. */
static void test_in_child(void)
{
    if (in_child()) return;
    char path[4096], exe[4096];
    if (!fake_path(path, sizeof path)) {
        printf("    skipped: no libfakecuda.so beside the test runner (make all builds it)\n");
        return;
    }
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char cache[] = "/tmp/tessel-fakecuda-XXXXXX";
    if (len <= 0 || !mkdtemp(cache)) {
        CHECK_MSG(0, "no executable path or temporary folder");
        return;
    }
    exe[len] = 0;
    int fd[2];
    CHECK(pipe(fd) == 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        setenv("TESSEL_LIBCUDA", path, 1);
        setenv("TESSEL_CACHE_DIR", cache, 1);
        setenv("TESSEL_TEST_FAKE_CUDA", "1", 1);
        execl(exe, exe, "cuda_calls.", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) printf("    | %s", line);
    if (f) fclose(f);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child with the fake driver failed (status %d)",
              status);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", cache);
    CHECK(system(rm) == 0);
}

/* ---- in the child ---------------------------------------------------------------------------- */

/* calls[] since `before`, of one entry point */
#define SINCE(before, field) (fake->calls[FAKE_CU_##field] - (before)[FAKE_CU_##field])

static void snap(long *out) { memcpy(out, fake->calls, sizeof fake->calls); }

/* Every entry point called since `before`, for a failed check's message. */
static void describe_since(const long *before, char *buf, size_t n)
{
    static const char *names[] = {
#define X(field, sym, ret, params) sym,
        CUDA_DRIVER_FUNCS(X)
#undef X
    };
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < FAKE_CU_N && at < n; i++)
        if (fake->calls[i] != before[i])
            at += (size_t)snprintf(buf + at, n - at, "%s%s x%ld", at ? ", " : "", names[i], fake->calls[i] - before[i]);
}

/* What a cached call's test needs: tessel's context, the program C = A + B
 * compiled, its args, the three CUDA tensors of n floats (the fake's
 * device memory is host memory) and a stream of the primary context. */
typedef struct call_fixture {
    tsl_context *ctx;
    tsl_program *p;
    tsl_args *args;
    float a[9], b[9], c[9];
    int64_t n;
    DLTensor t[3]; /* A B C */
    CUstream s;
} call_fixture;

/* Set up f in place (its tensors point into it); 0, with nothing to tear
 * down, where the test cannot run: not the child, no NVRTC (skipped), or
 * the program did not compile (a failed check). */
static int call_setup(call_fixture *f)
{
    if (!in_child() || !fake_state()) return 0;
    if (rt_cuda_nvrtc_available(NULL) != TSL_OK) {
        printf("    skipped: no NVRTC (the run compiles its kernel)\n");
        return 0;
    }
    f->ctx = tsl_context_create();
    f->p = NULL;
    CHECK_MSG(tsl_program_compile(f->ctx, "def add(float(N) A, float(N) B) -> (C) { C(i) = A(i) + B(i) }", "add.tc",
                                  NULL, &f->p) == TSL_OK,
              "%s", tsl_context_error(f->ctx));
    f->args = f->p ? tsl_args_create(f->p) : NULL;
    if (!f->args) {
        tsl_program_free(f->p);
        tsl_context_free(f->ctx);
        return 0;
    }
    f->n = (int64_t)TSL_COUNTOF(f->a);
    float *data[3] = {f->a, f->b, f->c};
    for (int i = 0; i < 3; i++) f->t[i] = (DLTensor){data[i], {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, &f->n, NULL, 0};
    f->s = fake->stream_new(fake->primary);
    return 1;
}

static void call_teardown(call_fixture *f)
{
    fake->stream_free(f->s);
    tsl_args_free(f->args);
    tsl_program_free(f->p);
    tsl_context_free(f->ctx);
}

/* A cached call on CUDA tensors: per call one cuCtxSetCurrent, one
 * cuLaunchKernel; on a stream of tessel's context one cuStreamIsCapturing
 * more (its context asked once); in the primary context even when the
 * caller's thread had another current. */
static void test_api_call(void)
{
    call_fixture f;
    if (!call_setup(&f)) return;
    const DLTensor *ts[3] = {&f.t[0], &f.t[1], &f.t[2]};
    CUresult (*set_current)(CUcontext) = NULL;
    void *h = dlopen(rt_settings_get()->libcuda, RTLD_NOW | RTLD_NOLOAD);
    void *sym = h ? dlsym(h, "cuCtxSetCurrent") : NULL;
    memcpy(&set_current, &sym, sizeof sym);
    for (int k = 0; set_current && k < 2; k++) {
        tsl_args_set_stream(f.args, k ? f.s : NULL);
        CHECK_MSG(tsl_program_call(f.p, f.args, ts, NULL, TSL_TARGET_CUDA) == TSL_OK, "%s", tsl_context_error(f.ctx));
        long before[FAKE_CU_N];
        enum { CALLS = 10 };
        snap(before);
        long refused = fake->refused;
        for (int i = 0; i < CALLS; i++) {
            set_current(fake->other); /* the caller's thread has another context current */
            CHECK_MSG(tsl_program_call(f.p, f.args, ts, NULL, TSL_TARGET_CUDA) == TSL_OK, "%s",
                      tsl_context_error(f.ctx));
            CHECK(fake->launch_ctx == fake->primary);
            CHECK(fake->launch_stream == (k ? f.s : NULL));
        }
        before[FAKE_CU_CtxSetCurrent] += CALLS; /* the test's own */
        char what[1024];
        describe_since(before, what, sizeof what);
        printf("    %s stream, per %d cached calls: %s\n", k ? "a" : "the default", CALLS, what);
        CHECK_EQ_INT(fake->refused, refused);
        CHECK_EQ_INT(SINCE(before, LaunchKernel), CALLS);
        CHECK_EQ_INT(SINCE(before, CtxSetCurrent), CALLS);
        CHECK_EQ_INT(SINCE(before, StreamIsCapturing), k ? CALLS : 0);
        long all = 0;
        for (int i = 0; i < FAKE_CU_N; i++) all += fake->calls[i] - before[i];
        CHECK_MSG(all == (k ? 3 : 2) * CALLS, "%ld driver calls: %s", all, what);
    }
    dlclose(h);
    call_teardown(&f);
}

/* An exchange API over DLTensors (tsl_program_call_dlpack's framework):
 * its current stream is fake_dl_stream. */
typedef struct fake_dl_api {
    uint32_t major, minor;
    const void *prev;
    void *fns[3];
    int (*fill)(void *obj, DLTensor *out);
    int (*stream)(DLDeviceType type, int32_t id, void **out);
} fake_dl_api;

static CUstream fake_dl_stream;

static int fake_dl_fill(void *obj, DLTensor *out)
{
    *out = *(const DLTensor *)obj;
    return 0;
}

static int fake_dl_current(DLDeviceType type, int32_t id, void **out)
{
    (void)id;
    *out = type == kDLCUDA ? fake_dl_stream : NULL;
    return 0;
}

/* The same cached call through tsl_program_call_dlpack (a binding's one
 * foreign call): the framework's current stream, and the same driver
 * calls as tsl_program_call (the fill and the stream lookup make none). */
static void test_api_call_dlpack(void)
{
    call_fixture f;
    if (!call_setup(&f)) return;
    void *objs[3] = {&f.t[0], &f.t[1], &f.t[2]};
    DLTensor filled[3];
    const DLTensor *ts[3] = {&filled[0], &filled[1], &filled[2]};
    fake_dl_api api = {.major = 1, .minor = 2, .fill = fake_dl_fill, .stream = fake_dl_current};
    tsl_dlpack_call call = {.exchange_api = &api, .objects = objs, .n = 3, .filled = filled, .tensors = ts,
                            .host_target = TSL_TARGET_CPU, .device_target = TSL_TARGET_CUDA,
                            .ready = {kDLCUDA, 0}};
    for (int k = 0; k < 2; k++) {
        fake_dl_stream = k ? f.s : NULL;
        CHECK_MSG(tsl_program_call_dlpack(f.p, f.args, &call, 0) == TSL_OK, "%s", tsl_context_error(f.ctx));
        long before[FAKE_CU_N];
        enum { CALLS = 10 };
        snap(before);
        long refused = fake->refused;
        for (int i = 0; i < CALLS; i++) {
            CHECK_MSG(tsl_program_call_dlpack(f.p, f.args, &call, 0) == TSL_OK, "%s", tsl_context_error(f.ctx));
            CHECK(fake->launch_ctx == fake->primary);
            CHECK(fake->launch_stream == (k ? f.s : NULL));
        }
        char what[1024];
        describe_since(before, what, sizeof what);
        printf("    %s stream, per %d cached calls: %s\n", k ? "a" : "the default", CALLS, what);
        CHECK_EQ_INT(fake->refused, refused);
        CHECK_EQ_INT(SINCE(before, LaunchKernel), CALLS);
        CHECK_EQ_INT(SINCE(before, StreamIsCapturing), k ? CALLS : 0);
        long all = 0;
        for (int i = 0; i < FAKE_CU_N; i++) all += fake->calls[i] - before[i];
        CHECK_MSG(all == (k ? 3 : 2) * CALLS, "%ld driver calls: %s", all, what);
    }
    /* back to the default stream when the framework's current one is */
    fake_dl_stream = NULL;
    CHECK_MSG(tsl_program_call_dlpack(f.p, f.args, &call, 0) == TSL_OK, "%s", tsl_context_error(f.ctx));
    CHECK(fake->launch_stream == NULL);
    call_teardown(&f);
}

/* A module of the fake driver with one function. */
static rt_cuda_module *load(rt_cuda_device *dev, rt_cuda_function *f)
{
    static const char image[] = "\177ELF (a fake cubin)";
    rt_cuda_module *m = NULL;
    tsl_diag d = {0};
    CHECK(rt_cuda_module_load(dev, image, sizeof image, &m, &d) == TSL_OK);
    CHECK(!m || rt_cuda_function_get(m, "k", f, &d) == TSL_OK);
    diag_free(&d);
    return m;
}

static tsl_status launch(rt_cuda_device *dev, rt_cuda_function f, unsigned shared, tsl_diag *d)
{
    static const unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    void *params[1] = {NULL};
    return rt_cuda_launch(dev, f, grid, block, shared, params, d);
}

/* A span sets the context once; outside one, or after a recheck, or
 * after a call on another device, every call sets it. */
static void test_context_span(void)
{
    if (!in_child() || !fake_state()) return;
    rt_cuda_device *dev = NULL, *dev2 = NULL;
    tsl_diag d = {0};
    CHECK(rt_cuda_open(&dev, &d) == TSL_OK && rt_cuda_open(&dev2, &d) == TSL_OK);
    rt_cuda_function f = NULL;
    rt_cuda_module *m = dev ? load(dev, &f) : NULL;
    long before[FAKE_CU_N];
    for (int span = 0; m && span < 2; span++) {
        snap(before);
        if (span) CHECK(rt_cuda_begin(dev, &d) == TSL_OK);
        for (int i = 0; i < 5; i++) CHECK(launch(dev, f, 0, &d) == TSL_OK);
        CHECK(fake->launch_ctx == fake->primary && fake->current() == fake->primary);
        CHECK_EQ_INT(SINCE(before, CtxSetCurrent), span ? 1 : 5);
        if (!span) continue;
        rt_cuda_recheck(dev); /* foreign code ran */
        CHECK(launch(dev, f, 0, &d) == TSL_OK && launch(dev, f, 0, &d) == TSL_OK);
        CHECK_EQ_INT(SINCE(before, CtxSetCurrent), 2);
        rt_cuda_ptr p = 0;
        CHECK(rt_cuda_alloc(dev2, 16, &p, &d) == TSL_OK); /* another device's call sets its context */
        rt_cuda_free(dev2, p);
        CHECK(launch(dev, f, 0, &d) == TSL_OK);
        CHECK_EQ_INT(SINCE(before, CtxSetCurrent), 5);
        rt_cuda_end(dev);
        CHECK(launch(dev, f, 0, &d) == TSL_OK);
        CHECK_EQ_INT(SINCE(before, CtxSetCurrent), 6);
        rt_cuda_end(dev); /* not held: nothing */
    }
    rt_cuda_module_free(m);
    rt_cuda_close(dev2);
    rt_cuda_close(dev);
    diag_free(&d);
}

/* The stream's context is asked once per handle; whether it is capturing
 * at every set; a handle whose stream changed context under it (destroyed,
 * the handle reused) fails its launch once, then is refused. */
static void test_stream_check(void)
{
    if (!in_child() || !fake_state()) return;
    rt_cuda_device *dev = NULL;
    tsl_diag d = {0};
    CHECK(rt_cuda_open(&dev, &d) == TSL_OK);
    rt_cuda_function f = NULL;
    rt_cuda_module *m = dev ? load(dev, &f) : NULL;
    CUstream s = fake->stream_new(fake->primary), t = fake->stream_new(fake->primary);
    CUstream o = fake->stream_new(fake->other);
    long before[FAKE_CU_N];
    snap(before);
    for (int i = 0; m && i < 3; i++) {
        CHECK(rt_cuda_set_stream(dev, s, &d) == TSL_OK);
        CHECK(launch(dev, f, 0, &d) == TSL_OK && fake->launch_stream == s);
        CHECK(rt_cuda_set_stream(dev, NULL, &d) == TSL_OK);
    }
    CHECK_EQ_INT(SINCE(before, StreamGetCtx), 1);
    CHECK_EQ_INT(SINCE(before, StreamIsCapturing), 3);
    /* another handle is asked; then s again */
    CHECK(rt_cuda_set_stream(dev, t, &d) == TSL_OK);
    CHECK(rt_cuda_set_stream(dev, s, &d) == TSL_OK);
    CHECK_EQ_INT(SINCE(before, StreamGetCtx), 3);
    /* another context's stream: refused every time */
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(rt_cuda_set_stream(dev, o, &d), TSL_ERR_ARG);
        CHECK(strstr(sb_str(&d.msg), "belongs to another context") != NULL);
        diag_reset(&d);
    }
    /* capturing: reported at each set, its context not asked */
    CHECK(rt_cuda_set_stream(dev, s, &d) == TSL_OK && !rt_cuda_stream_capturing(dev));
    s->capturing = 1;
    snap(before);
    CHECK(rt_cuda_set_stream(dev, s, &d) == TSL_OK && rt_cuda_stream_capturing(dev));
    o->capturing = 1;
    CHECK(rt_cuda_set_stream(dev, o, &d) == TSL_OK && rt_cuda_stream_capturing(dev));
    o->capturing = 0;
    s->capturing = 0;
    CHECK(rt_cuda_set_stream(dev, s, &d) == TSL_OK && !rt_cuda_stream_capturing(dev));
    CHECK_EQ_INT(SINCE(before, StreamGetCtx), 0); /* s is still the handle checked last */
    /* s's handle now names a stream of another context (the trade-off:
     * its check is remembered, so the set passes and the launch fails) */
    CHECK(rt_cuda_set_stream(dev, s, &d) == TSL_OK);
    s->ctx = fake->other;
    CHECK(rt_cuda_set_stream(dev, s, &d) == TSL_OK);
    CHECK_EQ_INT(launch(dev, f, 0, &d), TSL_ERR_RUNTIME);
    CHECK(strstr(sb_str(&d.msg), "CUDA_ERROR_INVALID_HANDLE") != NULL);
    diag_reset(&d);
    CHECK_EQ_INT(rt_cuda_set_stream(dev, s, &d), TSL_ERR_ARG);
    diag_reset(&d);
    CHECK(rt_cuda_set_stream(dev, NULL, &d) == TSL_OK);
    fake->stream_free(s);
    fake->stream_free(t);
    fake->stream_free(o);
    rt_cuda_module_free(m);
    rt_cuda_close(dev);
    diag_free(&d);
}

/* Dynamic shared memory above 48 KiB: the attribute is set once per
 * function and size, again for a function of a module loaded after its
 * handle's module was freed, and the opt-in limit is still checked. */
static void test_smem_attribute(void)
{
    if (!in_child() || !fake_state()) return;
    rt_cuda_device *dev = NULL;
    tsl_diag d = {0};
    CHECK(rt_cuda_open(&dev, &d) == TSL_OK);
    rt_cuda_function f = NULL, g = NULL;
    rt_cuda_module *m = dev ? load(dev, &f) : NULL;
    long before[FAKE_CU_N], refused = fake->refused;
    snap(before);
    for (int i = 0; m && i < 4; i++) CHECK(launch(dev, f, 100 * 1024, &d) == TSL_OK);
    CHECK(launch(dev, f, 0, &d) == TSL_OK && launch(dev, f, 64 * 1024, &d) == TSL_OK);
    CHECK_EQ_INT(SINCE(before, FuncSetAttribute), 1);
    CHECK(launch(dev, f, 200 * 1024, &d) == TSL_OK && launch(dev, f, 150 * 1024, &d) == TSL_OK);
    CHECK_EQ_INT(SINCE(before, FuncSetAttribute), 2);
    CHECK_EQ_INT(launch(dev, f, 300 * 1024, &d), TSL_ERR_ARG);
    CHECK(strstr(sb_str(&d.msg), "dynamic shared memory but device 0") != NULL);
    diag_reset(&d);
    rt_cuda_module_free(m);
    m = dev ? load(dev, &g) : NULL;
    CHECK(g == f); /* the fake hands the freed handle out again, its attribute reset */
    CHECK(launch(dev, g, 100 * 1024, &d) == TSL_OK);
    CHECK_EQ_INT(SINCE(before, FuncSetAttribute), 3);
    CHECK_EQ_INT(fake->refused, refused);
    rt_cuda_module_free(m);
    rt_cuda_close(dev);
    diag_free(&d);
}

TEST_SUITE(cuda_calls) = {
    {"in_child", test_in_child},
    {"context_span", test_context_span},
    {"stream_check", test_stream_check},
    {"smem_attribute", test_smem_attribute},
    {"api_call", test_api_call},
    {"api_call_dlpack", test_api_call_dlpack},
    {0, 0},
};
