/* test_runtime_cuda.c — the CUDA runtime: NVRTC to cubin for sm_80 and
 * sm_90a (works without a GPU), the cubin cache, compile errors quoting the
 * source, the ptxas report, and the device side: on a machine without a GPU
 * opening the device is a clear TSL_ERR_UNAVAILABLE; with one, kernels run
 * on random data and are checked, and errors (out of memory, bad launch,
 * device fault) leave the process usable. Tests needing NVRTC print
 * "skipped: no NVRTC" and pass when it cannot be found. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "test.h"

static char *prior_cache_dir; /* the setting before the fresh cache */

static char *fresh_cache(void)
{
    char tmpl[] = "/tmp/tessel-test-cuda-XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (!dir) return NULL;
    free(prior_cache_dir);
    prior_cache_dir = rt_settings_get()->cache_dir ? strdup(rt_settings_get()->cache_dir) : NULL;
    TEST_SETTING(cache_dir, dir);
    return strdup(dir);
}

static void drop_cache(char *dir)
{
    if (!dir) return;
    char *cmd = NULL;
    if (asprintf(&cmd, "rm -rf '%s'", dir) > 0 && system(cmd) != 0) fprintf(stderr, "rm failed\n");
    free(cmd);
    free(dir);
    TEST_SETTING(cache_dir, prior_cache_dir); /* the run's own cache again */
}

static int have_nvrtc(void)
{
    tsl_diag d = {0};
    int ok = rt_cuda_nvrtc_available(&d) == TSL_OK;
    if (!ok) printf("    skipped: no NVRTC (%s)\n", sb_str(&d.msg));
    diag_free(&d);
    return ok;
}

/* y[i] = a * x[i] + y[i] + (lane id - i % 32): the inline PTX's result
 * cancels out only if %laneid is what it should be (1-D blocks of 32k). */
static char *lane_saxpy_source(void)
{
    char *s = NULL;
    int rc = asprintf(&s,
                      "// salt %llu\n"
                      "extern \"C\" __global__ void lane_saxpy(int n, float a, const float *x,\n"
                      "                                        float *y) {\n"
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "    unsigned lane;\n"
                      "    asm(\"mov.u32 %%0, %%%%laneid;\" : \"=r\"(lane));\n"
                      "    if (i < n) y[i] = a * x[i] + y[i] + (float)((int)lane - i %% 32);\n"
                      "}\n",
                      (unsigned long long)test_rand());
    return rc > 0 ? s : NULL;
}

static void test_nvrtc_archs_and_cache(void)
{
    if (!have_nvrtc()) return;
    char *dir = fresh_cache();
    char *src = lane_saxpy_source();
    const char *archs[] = {"sm_80", "sm_90a"};
    for (size_t i = 0; i < TSL_COUNTOF(archs); i++) {
        tsl_diag d = {0};
        void *cubin = NULL;
        size_t n = 0;
        long before = rt_cuda_compile_count();
        tsl_status st = rt_cuda_compile(src, archs[i], NULL, &cubin, &n, NULL, &d);
        CHECK_MSG(st == TSL_OK, "%s: %s", archs[i], sb_str(&d.msg));
        CHECK_EQ_INT(rt_cuda_compile_count(), before + 1);
        CHECK(n > 64 && cubin && memcmp(cubin, "\177ELF", 4) == 0);
        /* the same again: from the cache, byte for byte */
        void *again = NULL;
        size_t n2 = 0;
        st = rt_cuda_compile(src, archs[i], NULL, &again, &n2, NULL, &d);
        CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
        CHECK_EQ_INT(rt_cuda_compile_count(), before + 1);
        CHECK(n2 == n && again && cubin && memcmp(again, cubin, n) == 0);
        free(cubin);
        free(again);
        diag_free(&d);
    }
    /* a different option is a different key */
    const char *extra[] = {"-DUNUSED_MACRO=1"};
    rt_cuda_options o = {.extra = extra, .n_extra = 1};
    void *cubin = NULL;
    size_t n = 0;
    long before = rt_cuda_compile_count();
    CHECK(rt_cuda_compile(src, "sm_80", &o, &cubin, &n, NULL, NULL) == TSL_OK);
    CHECK_EQ_INT(rt_cuda_compile_count(), before + 1);
    free(cubin);
    free(src);
    drop_cache(dir);
}

static void test_nvrtc_syntax_error(void)
{
    if (!have_nvrtc()) return;
    char *dir = fresh_cache();
    char *src = NULL;
    CHECK(asprintf(&src,
                   "// %llu\n"
                   "extern \"C\" __global__ void broken(float *y) {\n"
                   "    y[0] = 1.0f +* ;\n"
                   "}\n",
                   (unsigned long long)test_rand()) > 0);
    tsl_diag d = {0};
    void *cubin = (void *)1;
    size_t n = 7;
    char *log = NULL;
    rt_cuda_options o = {.name = "broken.cu"};
    tsl_status st = rt_cuda_compile(src, "sm_80", &o, &cubin, &n, &log, &d);
    CHECK_EQ_INT(st, TSL_ERR_COMPILE);
    CHECK(cubin == NULL && n == 0 && log == NULL);
    const char *msg = sb_str(&d.msg);
    CHECK_MSG(strstr(msg, "broken.cu(3): error") != NULL, "no NVRTC log line in: %s", msg);
    CHECK_MSG(strstr(msg, "    3 |     y[0] = 1.0f +* ;") != NULL, "no quoted line in: %s", msg);
    /* not cached: a second try compiles (and fails) again */
    long before = rt_cuda_compile_count();
    diag_reset(&d);
    CHECK_EQ_INT(rt_cuda_compile(src, "sm_80", &o, &cubin, &n, NULL, &d), TSL_ERR_COMPILE);
    CHECK_EQ_INT(rt_cuda_compile_count(), before + 1);
    diag_free(&d);
    free(src);
    drop_cache(dir);
}

static void test_nvrtc_bad_arch(void)
{
    if (!have_nvrtc()) return;
    tsl_diag d = {0};
    void *cubin = NULL;
    size_t n = 0;
    CHECK_EQ_INT(rt_cuda_compile("__global__ void k() {}", "compute_80", NULL, &cubin, &n, NULL, &d),
                 TSL_ERR_ARG);
    CHECK(strstr(sb_str(&d.msg), "compute_80") != NULL);
    diag_free(&d);
}

static void test_nvrtc_ptx(void)
{
    if (!have_nvrtc()) return;
    char *src = lane_saxpy_source();
    tsl_diag d = {0};
    char *ptx = NULL;
    tsl_status st = rt_cuda_compile_ptx(src, "sm_80", NULL, &ptx, &d);
    CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
    CHECK(ptx && strstr(ptx, ".target sm_80") != NULL);
    CHECK(ptx && strstr(ptx, ".entry lane_saxpy") != NULL);
    CHECK(ptx && strstr(ptx, "%laneid") != NULL); /* the inline PTX went through */
    free(ptx);
    ptx = NULL;
    diag_reset(&d);
    CHECK_EQ_INT(rt_cuda_compile_ptx("__global__ void k() { int x = ; }\n", "sm_90a", NULL, &ptx, &d),
                 TSL_ERR_COMPILE);
    CHECK(ptx == NULL);
    CHECK_MSG(strstr(sb_str(&d.msg), "kernel.cu(1): error") != NULL, "%s", sb_str(&d.msg));
    diag_free(&d);
    free(src);
}

static void test_ptxas_report(void)
{
    /* the parser on a canned log with spills: it must be able to say no */
    const char *canned =
        "ptxas info    : Compiling entry function 'a' for 'sm_80'\n"
        "ptxas info    : Function properties for a\n"
        "    24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 255 registers, 380 bytes cmem[0]\n"
        "ptxas info    : Function properties for b\n"
        "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers\n";
    rt_ptxas_report r;
    rt_cuda_ptxas_parse(canned, &r);
    CHECK_EQ_INT(r.found, 2);
    CHECK_EQ_INT(r.registers, 255);
    CHECK_EQ_INT(r.spill_stores, 20);
    CHECK_EQ_INT(r.spill_loads, 16);
    CHECK_EQ_INT(r.stack_frame, 24);

    if (!have_nvrtc()) return;
    char *dir = fresh_cache();
    char *src = lane_saxpy_source();
    const char *archs[] = {"sm_80", "sm_90a"};
    for (size_t i = 0; i < TSL_COUNTOF(archs); i++) {
        rt_cuda_options o = {.ptxas_verbose = 1};
        tsl_diag d = {0};
        void *cubin = NULL;
        size_t n = 0;
        char *log = NULL;
        for (int round = 0; round < 2; round++) { /* compiled, then cached */
            tsl_status st = rt_cuda_compile(src, archs[i], &o, &cubin, &n, &log, &d);
            CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
            rt_cuda_ptxas_parse(log, &r);
            CHECK_MSG(r.found == 1, "%s round %d: no ptxas report in log (%zu-byte cubin): [%s] %s",
                      archs[i], round, n, log ? log : "(null)", sb_str(&d.msg));
            CHECK(r.registers > 0 && r.registers < 64);
            CHECK_EQ_INT(r.spill_stores, 0);
            CHECK_EQ_INT(r.spill_loads, 0);
            free(cubin);
            free(log);
        }
        diag_free(&d);
    }
    free(src);
    drop_cache(dir);
}

/* ---- device side ---- */

static void run_lane_saxpy(rt_cuda_device *dev)
{
    char *dir = fresh_cache();
    char *src = lane_saxpy_source();
    tsl_diag d = {0};
    void *cubin = NULL;
    size_t nbin = 0;
    tsl_status st = rt_cuda_compile(src, NULL, NULL, &cubin, &nbin, NULL, &d);
    CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
    rt_cuda_module *m = NULL;
    rt_cuda_function f = NULL;
    if (st == TSL_OK) st = rt_cuda_module_load(dev, cubin, nbin, &m, &d);
    if (st == TSL_OK) st = rt_cuda_function_get(m, "lane_saxpy", &f, &d);
    CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
    int sizes[] = {1, 31, 1000003, (int)test_rand_int(2, 100000)};
    for (size_t k = 0; st == TSL_OK && k < TSL_COUNTOF(sizes); k++) {
        int n = sizes[k];
        float a = (float)test_rand_double(-2, 2);
        float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
        float *out = malloc(sizeof(float) * ((size_t)n + 1));
        for (int i = 0; i < n; i++) {
            x[i] = (float)test_rand_double(-4, 4);
            y[i] = (float)test_rand_double(-4, 4);
        }
        rt_cuda_ptr dx = 0, dy = 0;
        size_t bytes = sizeof(float) * (size_t)n;
        /* one float past the end, poisoned with NaN bits, must survive */
        CHECK(rt_cuda_alloc(dev, bytes, &dx, &d) == TSL_OK);
        CHECK(rt_cuda_alloc(dev, bytes + 4, &dy, &d) == TSL_OK);
        CHECK(rt_cuda_memset8(dev, dy, 0xff, bytes + 4, &d) == TSL_OK);
        CHECK(rt_cuda_copy_htod(dev, dx, x, bytes, &d) == TSL_OK);
        CHECK(rt_cuda_copy_htod(dev, dy, y, bytes, &d) == TSL_OK);
        void *params[] = {&n, &a, &dx, &dy};
        unsigned grid[3] = {(unsigned)(n + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
        CHECK(rt_cuda_launch(dev, f, grid, block, 0, params, &d) == TSL_OK);
        CHECK(rt_cuda_synchronize(dev, &d) == TSL_OK);
        CHECK(rt_cuda_copy_dtoh(dev, out, dy, bytes + 4, &d) == TSL_OK);
        int bad = 0;
        for (int i = 0; i < n; i++) bad += !(fabsf(out[i] - (a * x[i] + y[i])) <= 1e-5f * (1 + fabsf(y[i]) + fabsf(a * x[i])));
        CHECK_MSG(bad == 0, "n=%d: %d wrong (%s)", n, bad, sb_str(&d.msg));
        CHECK(isnan(out[n]));
        rt_cuda_free(dev, dx);
        rt_cuda_free(dev, dy);
        free(x);
        free(y);
        free(out);
    }
    /* errors that leave the device usable */
    rt_cuda_ptr huge = 0;
    diag_reset(&d);
    CHECK_EQ_INT(rt_cuda_alloc(dev, (size_t)1 << 50, &huge, &d), TSL_ERR_NOMEM);
    CHECK_MSG(strstr(sb_str(&d.msg), "1125899906842624 bytes") != NULL, "%s", sb_str(&d.msg));
    if (f) {
        int n = 1;
        float a = 1;
        rt_cuda_ptr p = 0;
        CHECK(rt_cuda_alloc(dev, 64, &p, NULL) == TSL_OK); /* still usable */
        void *params[] = {&n, &a, &p, &p};
        unsigned grid[3] = {1, 1, 1}, block[3] = {4096, 1, 1}; /* too many threads */
        diag_reset(&d);
        CHECK_EQ_INT(rt_cuda_launch(dev, f, grid, block, 0, params, &d), TSL_ERR_RUNTIME);
        CHECK_MSG(strstr(sb_str(&d.msg), "CUDA_ERROR_") != NULL, "%s", sb_str(&d.msg));
        block[0] = 32;
        unsigned too_much = (unsigned)rt_cuda_device_info(dev)->max_shared_optin + 1024;
        diag_reset(&d);
        CHECK_EQ_INT(rt_cuda_launch(dev, f, grid, block, too_much, params, &d), TSL_ERR_ARG);
        CHECK(rt_cuda_launch(dev, f, grid, block, 0, params, NULL) == TSL_OK);
        CHECK(rt_cuda_synchronize(dev, NULL) == TSL_OK);
        rt_cuda_free(dev, p);
    }
    rt_cuda_module_free(m);
    free(cubin);
    free(src);
    diag_free(&d);
    drop_cache(dir);
}

/* A kernel that writes through a bad pointer poisons the context: the
 * device then refuses work with a message, and reopening it recovers. */
static void run_fault_and_recover(rt_cuda_device **devp)
{
    const char *src = "extern \"C\" __global__ void fault(int *p) { p[threadIdx.x * 4096] = 1; }\n";
    char *dir = fresh_cache();
    tsl_diag d = {0};
    void *cubin = NULL;
    size_t n = 0;
    rt_cuda_module *m = NULL;
    rt_cuda_function f = NULL;
    if (rt_cuda_compile(src, NULL, NULL, &cubin, &n, NULL, &d) != TSL_OK ||
        rt_cuda_module_load(*devp, cubin, n, &m, &d) != TSL_OK ||
        rt_cuda_function_get(m, "fault", &f, &d) != TSL_OK) {
        CHECK_MSG(0, "%s", sb_str(&d.msg));
        goto out;
    }
    rt_cuda_ptr bad = 0x10; /* never a valid device address */
    void *params[] = {&bad};
    unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    tsl_status st = rt_cuda_launch(*devp, f, grid, block, 0, params, &d);
    if (st == TSL_OK) st = rt_cuda_synchronize(*devp, &d);
    CHECK_EQ_INT(st, TSL_ERR_RUNTIME);
    CHECK_MSG(strstr(sb_str(&d.msg), "poisoned") != NULL, "%s", sb_str(&d.msg));
    diag_reset(&d);
    rt_cuda_ptr p = 0;
    CHECK_EQ_INT(rt_cuda_alloc(*devp, 64, &p, &d), TSL_ERR_RUNTIME);
    CHECK_MSG(strstr(sb_str(&d.msg), "poisoned") != NULL, "%s", sb_str(&d.msg));
    rt_cuda_module_free(m);
    m = NULL;
    rt_cuda_close(*devp);
    *devp = NULL;
    diag_reset(&d);
    /* The driver may refuse the device to this process for good after a
     * fault; then reopening must say so clearly. */
    st = rt_cuda_open(devp, &d);
    CHECK_MSG(st == TSL_OK || strstr(sb_str(&d.msg), "restart the process") != NULL,
              "reopen: %s", sb_str(&d.msg));
    printf("    reopen after a fault: %s\n", st == TSL_OK ? "recovered" : sb_str(&d.msg));
    if (*devp) {
        CHECK_MSG(rt_cuda_alloc(*devp, 64, &p, &d) == TSL_OK, "after reopen: %s", sb_str(&d.msg));
        rt_cuda_free(*devp, p);
    }
out:
    rt_cuda_module_free(m);
    free(cubin);
    diag_free(&d);
    drop_cache(dir);
}

static void test_device(void)
{
    tsl_diag d = {0};
    rt_cuda_device *dev = NULL;
    tsl_status st = rt_cuda_open(&dev, &d);
    if (st != TSL_OK) {
        /* the GPU-less machine: a clear error, not a crash */
        CHECK_EQ_INT(st, TSL_ERR_UNAVAILABLE);
        const char *msg = sb_str(&d.msg);
        CHECK_MSG(strstr(msg, "CUDA") != NULL && strlen(msg) > 20, "unclear: %s", msg);
        printf("    no GPU here: %s\n", msg);
        /* and again: nothing sticky */
        diag_reset(&d);
        CHECK_EQ_INT(rt_cuda_open(&dev, &d), TSL_ERR_UNAVAILABLE);
        /* compiling for "the device's arch" says the same */
        if (rt_cuda_nvrtc_available(NULL) == TSL_OK) {
            void *cubin = NULL;
            size_t n = 0;
            diag_reset(&d);
            CHECK_EQ_INT(rt_cuda_compile("__global__ void k() {}", NULL, NULL, &cubin, &n, NULL, &d),
                         TSL_ERR_UNAVAILABLE);
        }
        diag_free(&d);
        return;
    }
    const rt_cuda_info *in = rt_cuda_device_info(dev);
    printf("    GPU %d: %s, %d SMs, sm_%d%d (%s), %d B shared opt-in, driver %d\n", in->ordinal,
           in->name, in->sm_count, in->cc_major, in->cc_minor, in->arch, in->max_shared_optin,
           in->driver_version);
    CHECK(in->sm_count > 0 && in->cc_major >= 3 && in->max_shared_optin >= 48 * 1024);
    if (have_nvrtc()) {
        run_lane_saxpy(dev);
        run_fault_and_recover(&dev);
    }
    rt_cuda_close(dev);
    diag_free(&d);
}

TEST_SUITE(runtime_cuda) = {
    {"nvrtc_archs_and_cache", test_nvrtc_archs_and_cache},
    {"nvrtc_syntax_error", test_nvrtc_syntax_error},
    {"nvrtc_bad_arch", test_nvrtc_bad_arch},
    {"nvrtc_ptx", test_nvrtc_ptx},
    {"ptxas_report", test_ptxas_report},
    {"device", test_device},
    {0},
};
