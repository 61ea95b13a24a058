/* test_api_device.c — device tensors, streams and allocators in the C API:
 * a caller's allocator for outputs (host, everywhere; GPU with a GPU), the
 * errors for tensors on two devices, on two GPUs, on a GPU with a host
 * target, and strided GPU tensors (no GPU needed: they are refused before
 * any memory is touched), and with a GPU: runs on device memory checked
 * against the host, no copy, an index out of range reported when synced.
 * The executor's per-run memory (what a device run on a caller's stream
 * uses) is checked on the CPU target too: temporaries and scratch taken
 * from it and all given back, results against the interpreter. */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "driver/driver.h"
#include "interp/interp.h"
#include "lang/lang.h"
#include "runtime/runtime.h"
#include "test.h"

static const char *add_src = "def add(float(N) A, float(N) B) -> (C) {\n  C(i) = A(i) * 2 + B(i)\n}\n";

static tsl_program *compile(tsl_context *ctx, const char *src)
{
    tsl_program *p = NULL;
    CHECK_MSG(tsl_program_compile(ctx, src, "dev.tc", NULL, &p) == TSL_OK, "%s", tsl_context_error(ctx));
    return p;
}

static DLTensor *rnd1(int64_t n)
{
    DLTensor *t = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n);
    for (int64_t k = 0; k < n; k++) ((float *)t->data)[k] = (float)test_rand_double(-1, 1);
    return t;
}

/* A counting allocator over malloc (host) or rt_cuda (GPU). */
typedef struct count_alloc {
    int allocs, frees;
    size_t last_bytes;
    DLDevice last_dev;
    rt_cuda_device *dev;
} count_alloc;

static void *ca_alloc(void *user, DLDevice device, size_t bytes, void *stream)
{
    count_alloc *c = user;
    (void)stream;
    c->allocs++;
    c->last_bytes = bytes;
    c->last_dev = device;
    if (device.device_type == kDLCUDA) {
        rt_cuda_ptr p = 0;
        return rt_cuda_alloc(c->dev, bytes, &p, NULL) == TSL_OK ? (void *)(uintptr_t)p : NULL;
    }
    void *p = malloc(bytes);
    if (p) memset(p, 0x7f, bytes); /* poison */
    return p;
}

static void ca_free(void *user, DLDevice device, void *data, void *stream)
{
    count_alloc *c = user;
    (void)stream;
    c->frees++;
    if (device.device_type == kDLCUDA)
        rt_cuda_free(c->dev, (rt_cuda_ptr)(uintptr_t)data);
    else
        free(data);
}

static void test_allocator_host(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, add_src);
    if (!p) goto out;
    count_alloc c = {0};
    tsl_allocator al = {ca_alloc, ca_free, &c};
    tsl_args *a = tsl_args_create(p);
    CHECK_EQ_INT(tsl_args_set_allocator(a, &al), TSL_OK);
    for (int rep = 0; rep < 3; rep++) {
        int64_t n = rep < 2 ? 37 : 101; /* the third run needs another shape */
        DLTensor *A = rnd1(n), *B = rnd1(n);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "A", A), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "B", B), TSL_OK);
        CHECK_MSG(tsl_program_run(p, a, TSL_TARGET_CPU) == TSL_OK, "%s", tsl_context_error(ctx));
        const DLTensor *C = tsl_args_output(a, "C");
        CHECK(C && C->device.device_type == kDLCPU);
        for (int64_t i = 0; C && i < n; i++)
            CHECK_CLOSE(((float *)C->data)[i], 2 * ((float *)A->data)[i] + ((float *)B->data)[i], 1e-6);
        tsl_tensor_free(A);
        tsl_tensor_free(B);
    }
    CHECK_EQ_INT(c.allocs, 2); /* same shape reuses; a new shape frees and allocates */
    CHECK_EQ_INT(c.frees, 1);
    CHECK(c.last_bytes >= 101 * sizeof(float) && c.last_dev.device_type == kDLCPU);
    tsl_args_free(a);
    CHECK_EQ_INT(c.frees, 2);
    tsl_allocator half = {ca_alloc, NULL, &c};
    a = tsl_args_create(p);
    CHECK(tsl_args_set_allocator(a, &half) == TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "alloc and free must both be set") != NULL);
    tsl_args_free(a);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* ---- the executor's per-run memory, on the CPU target ---------------------- */

/* A counting rt_mem over malloc (each block poisoned: temporaries must be
 * zeroed by the executor, scratch is undefined). */
typedef struct count_mem {
    int allocs, frees, live;
} count_mem;

static rt_ptr cm_alloc(void *user, size_t bytes)
{
    count_mem *c = user;
    void *p = malloc(bytes);
    if (!p) return 0;
    memset(p, 0xff, bytes);
    c->allocs++;
    c->live++;
    return (rt_ptr)(uintptr_t)p;
}

static void cm_free(void *user, rt_ptr p)
{
    count_mem *c = user;
    c->frees++;
    c->live--;
    free((void *)(uintptr_t)p);
}

/* def (one with a temporary, one with a scratch buffer) prepared for the
 * CPU and run by drv_run_device_mem on random inputs, sizes 1, primes and
 * odd ones, against the interpreter; the memory's blocks all come back and
 * every temporary and scratch buffer came from it. */
static void test_executor_mem(void)
{
    static const char *srcs[] = {
        "def two(float(N,K) A, float(K,M) B, float(M) c) -> (Y) {\n"
        "  T(n,m) +=! A(n,k) * B(k,m)\n"
        "  U(n) max=! T(n,m) + c(m)\n"
        "  Y(n,m) = T(n,m) - U(n)\n"
        "}\n",
        "def total(float(N,M) X) -> (S) {\n  S() +=! X(n,m)\n}\n",
    };
    for (size_t s = 0; s < TSL_COUNTOF(srcs); s++) {
        tsl_arena *a = arena_create();
        tsl_source src = {"mem.tc", srcs[s]};
        tsl_diag d = {0};
        lang_module *m = lang_parse_check(a, &src, &d);
        const lang_def *def = m ? lang_module_def(m, 0) : NULL;
        CHECK_MSG(def != NULL, "%s", sb_str(&d.msg));
        drv_executable *x = NULL;
        drv_prepared *pp = NULL;
        if (def) CHECK_MSG(drv_compile(def, &drv_target_cpu, rt_target_cpu.arch(NULL), NULL, &x, &d) == TSL_OK, "%s",
                           sb_str(&d.msg));
        if (x) CHECK_MSG(drv_prepare(x, &drv_target_cpu, NULL, &pp, &d) == TSL_OK, "%s", sb_str(&d.msg));
        int want_blocks = 0; /* temporaries some launch takes, and scratch buffers */
        const rt_plan *plan = pp ? drv_prepared_executable(pp)->plan : NULL;
        for (int i = 0; plan && i < plan->ntensors; i++)
            want_blocks += (plan->tensors[i].flags & RT_T_TEMP) && rt_plan_tensor_used(plan, i);
        if (plan) want_blocks += plan->nscratch;
        CHECK(!plan || want_blocks >= 1);
        for (int rep = 0; pp && rep < 3; rep++) {
            int64_t sizes[8];
            for (int k = 0; k < def->nsizes; k++) sizes[k] = rep == 0 ? 1 : test_rand_int(2, rep == 1 ? 13 : 300);
            lang_bound *bd = NULL;
            CHECK_EQ_INT(lang_bind(a, def, sizes, &bd, &d), TSL_OK);
            if (!bd) break;
            interp_tensor v[8], w[8];
            rt_ptr data[8] = {0};
            double scal[8] = {0};
            char *mem[8] = {0}, *ref[8] = {0};
            memset(v, 0, sizeof v);
            for (int i = 0; i < def->ntensors; i++) {
                const lang_tensor *t = def->tensors[i];
                int64_t n = 1;
                v[i].dtype = t->dtype;
                v[i].rank = t->rank;
                for (int j = t->rank - 1; j >= 0; j--) {
                    v[i].shape[j] = bd->shapes[i][j];
                    v[i].stride[j] = n;
                    n *= bd->shapes[i][j];
                }
                if (t->flags & LANG_TENSOR_TEMP) continue;
                mem[i] = malloc((size_t)n * 4 + 4);
                ref[i] = malloc((size_t)n * 4 + 4);
                for (int64_t e = 0; e < n; e++)
                    ((float *)mem[i])[e] = (t->flags & LANG_TENSOR_INPUT) ? (float)test_rand_double(-1, 1) : NAN;
                memcpy(ref[i], mem[i], (size_t)n * 4);
                data[i] = (rt_ptr)(uintptr_t)mem[i];
            }
            memcpy(w, v, sizeof v);
            for (int i = 0; i < def->ntensors; i++) w[i].base = ref[i];
            count_mem c = {0};
            rt_mem cm = {cm_alloc, cm_free, &c};
            CHECK_MSG(drv_run_device_mem(drv_prepared_exec(pp), bd, data, scal, 1, &cm, &d) == TSL_OK, "%s",
                      sb_str(&d.msg));
            CHECK_EQ_INT(c.allocs, want_blocks);
            CHECK_EQ_INT(c.live, 0);
            CHECK_MSG(interp_run(bd, w, &d) == TSL_OK, "%s", sb_str(&d.msg));
            for (int i = 0; i < def->ntensors; i++) {
                const lang_tensor *t = def->tensors[i];
                if (!(t->flags & LANG_TENSOR_OUTPUT)) continue;
                int64_t n = 1;
                for (int j = 0; j < t->rank; j++) n *= bd->shapes[i][j];
                int bad = 0;
                for (int64_t e = 0; e < n && bad < 3; e++) {
                    float got = ((float *)mem[i])[e], want = ((float *)ref[i])[e];
                    if (!(fabsf(got - want) <= 1e-4f * (1 + fabsf(want)))) {
                        bad++;
                        CHECK_MSG(0, "%s: %s[%lld] %g vs %g", def->name, t->name, (long long)e, got, want);
                    }
                }
            }
            for (int i = 0; i < 8; i++) {
                free(mem[i]);
                free(ref[i]);
            }
        }
        drv_prepared_free(pp);
        diag_free(&d);
        arena_free(a);
    }
}

/* Whether the CUDA target runs here (a GPU and a driver). */
static int have_gpu(void)
{
    rt_cuda_device *dev = NULL;
    int ok = rt_cuda_open(&dev, NULL) == TSL_OK;
    rt_cuda_close(dev);
    return ok;
}

static void test_device_errors(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, add_src);
    if (!p) goto out;
    int64_t n = 8, n2[2] = {4, 2}, st2[2] = {1, 4};
    float host[8] = {0};
    /* fake device addresses: every case is refused before memory is touched */
    DLTensor hA = {host, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &n, NULL, 0};
    DLTensor gA = {(void *)(uintptr_t)0x1000, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, &n, NULL, 0};
    DLTensor gB = gA, g1 = gA;
    gB.data = (void *)(uintptr_t)0x2000;
    g1.device.device_id = 1;
    tsl_args *a = tsl_args_create(p);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "A", &hA), TSL_OK);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "B", &gB), TSL_OK);
    CHECK(tsl_program_run(p, a, TSL_TARGET_CUDA) == TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "'A' is on cpu but 'B' is on cuda:0") != NULL, "%s",
              tsl_context_error(ctx));
    CHECK_EQ_INT(tsl_args_set_tensor(a, "A", &gA), TSL_OK);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "B", &g1), TSL_OK);
    CHECK(tsl_program_run(p, a, TSL_TARGET_CUDA) == TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "'A' is on cuda:0 but 'B' is on cuda:1") != NULL);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "B", &gB), TSL_OK);
    CHECK(tsl_program_run(p, a, TSL_TARGET_CPU) == TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "the cpu target takes host tensors") != NULL);
    CHECK(tsl_program_run(p, a, TSL_TARGET_INTERP) == TSL_ERR_ARG);
    /* a host output with device inputs */
    float hc[8];
    DLTensor hC = hA;
    hC.data = hc;
    CHECK_EQ_INT(tsl_args_set_output(a, "C", &hC), TSL_OK);
    CHECK(tsl_program_run(p, a, TSL_TARGET_CUDA) == TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "is on cpu") != NULL);
    /* a strided GPU tensor is refused where it is bound */
    tsl_program *q = compile(ctx, "def t(float(M,N) X) -> (Y) { Y(i,j) = X(i,j) }");
    tsl_args *b = q ? tsl_args_create(q) : NULL;
    DLTensor gS = {(void *)(uintptr_t)0x1000, {kDLCUDA, 0}, 2, {kDLFloat, 32, 1}, n2, st2, 0};
    if (b) {
        CHECK(tsl_args_set_tensor(b, "X", &gS) == TSL_ERR_ARG);
        CHECK_MSG(strstr(tsl_context_error(ctx), "on cuda:0 is not C-contiguous (strides (1, 4)") != NULL, "%s",
                  tsl_context_error(ctx));
        st2[0] = 2; /* dense */
        st2[1] = 1;
        CHECK_EQ_INT(tsl_args_set_tensor(b, "X", &gS), TSL_OK);
    }
    /* without a GPU: unavailable, the process fine */
    if (!have_gpu()) {
        tsl_args *c = tsl_args_create(p);
        tsl_args_set_tensor(c, "A", &gA);
        tsl_args_set_tensor(c, "B", &gB);
        CHECK(tsl_program_run(p, c, TSL_TARGET_CUDA) == TSL_ERR_UNAVAILABLE);
        CHECK(strstr(tsl_context_error(ctx), "target 'cuda' is unavailable") != NULL);
        tsl_args_free(c);
    }
    tsl_args_free(b);
    tsl_program_free(q);
    tsl_args_free(a);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* With a GPU: device tensors in, device outputs (the caller's, the args',
 * the allocator's) out, against the host. */
static void test_device_run(void)
{
    rt_cuda_device *dev = NULL;
    tsl_diag d = {0};
    if (rt_cuda_open(&dev, &d) != TSL_OK) {
        printf("    skipped: no GPU (%s)\n", sb_str(&d.msg));
        diag_free(&d);
        return;
    }
    int ord = rt_cuda_device_info(dev)->ordinal;
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, add_src);
    int64_t n = test_rand_int(1, 5000), pad = 3;
    DLTensor *A = rnd1(n), *B = rnd1(n);
    size_t bytes = (size_t)n * sizeof(float);
    rt_cuda_ptr dA = 0, dB = 0, dC = 0;
    CHECK(rt_cuda_alloc(dev, bytes + pad * sizeof(float), &dA, &d) == TSL_OK);
    CHECK(rt_cuda_alloc(dev, bytes, &dB, &d) == TSL_OK);
    CHECK(rt_cuda_alloc(dev, bytes, &dC, &d) == TSL_OK);
    CHECK(rt_cuda_copy_htod(dev, dA + pad * sizeof(float), A->data, bytes, &d) == TSL_OK);
    CHECK(rt_cuda_copy_htod(dev, dB, B->data, bytes, &d) == TSL_OK);
    CHECK(rt_cuda_memset8(dev, dC, 0xff, bytes, &d) == TSL_OK); /* NaN */
    DLTensor tA = {(void *)(uintptr_t)dA, {kDLCUDA, ord}, 1, {kDLFloat, 32, 1}, &n, NULL, pad * sizeof(float)};
    DLTensor tB = tA, tC = tA;
    tB.data = (void *)(uintptr_t)dB;
    tB.byte_offset = 0;
    tC.data = (void *)(uintptr_t)dC;
    tC.byte_offset = 0;
    float *h = malloc(bytes);
    tsl_args *a = tsl_args_create(p);
    count_alloc cs[3] = {{0}}; /* outlive a: its outputs go back to their allocator */
    for (int mode = 0; p && mode < 3; mode++) {
        /* 0: the caller's output; 1: the args' own; 2: the allocator's */
        count_alloc *cp = &cs[mode];
        cp->dev = dev;
        tsl_allocator al = {ca_alloc, ca_free, cp};
        CHECK_EQ_INT(tsl_args_set_allocator(a, mode == 2 ? &al : NULL), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_sync(a, 1), TSL_OK);
        tsl_args_set_tensor(a, "A", &tA);
        tsl_args_set_tensor(a, "B", &tB);
        if (mode == 0) tsl_args_set_output(a, "C", &tC);
        else {
            const DLTensor *t[3] = {&tA, &tB, NULL};
            tsl_args_bind(a, t, NULL);
        }
        CHECK_MSG(tsl_program_run(p, a, TSL_TARGET_CUDA) == TSL_OK, "%s", tsl_context_error(ctx));
        const DLTensor *C = tsl_args_output(a, "C");
        CHECK(C && C->device.device_type == kDLCUDA && C->device.device_id == ord);
        CHECK(mode != 0 || C == &tC);
        CHECK(mode != 2 || cp->allocs == 1);
        if (C) CHECK(rt_cuda_copy_dtoh(dev, h, (rt_cuda_ptr)(uintptr_t)C->data, bytes, &d) == TSL_OK);
        for (int64_t i = 0; C && i < n; i++)
            CHECK_CLOSE(h[i], 2 * ((float *)A->data)[i] + ((float *)B->data)[i], 1e-6);
    }
    /* temporaries and scratch per run from the caller's allocator: a
     * contraction's T, a full reduction's partials; outputs the args own */
    tsl_program *w = compile(ctx, "def two(float(N,K) X, float(K,M) W) -> (Y, S) {\n"
                                  "  T(n,m) +=! X(n,k) * W(k,m)\n  U(n) max=! T(n,m)\n"
                                  "  Y(n,m) = T(n,m) - U(n)\n  S() +=! Y(n,m)\n}\n");
    int64_t sx[2] = {test_rand_int(1, 70), test_rand_int(1, 90)}, sw[2] = {sx[1], test_rand_int(1, 110)};
    DLTensor *X = w ? tsl_tensor_alloc(TSL_DTYPE_F32, 2, sx) : NULL, *W = w ? tsl_tensor_alloc(TSL_DTYPE_F32, 2, sw) : NULL;
    rt_cuda_ptr dX = 0, dW = 0;
    tsl_args *wa = w ? tsl_args_create(w) : NULL;
    if (wa && X && W) {
        size_t bx = (size_t)(sx[0] * sx[1]) * 4, bw = (size_t)(sw[0] * sw[1]) * 4;
        for (int64_t i = 0; i < sx[0] * sx[1]; i++) ((float *)X->data)[i] = (float)test_rand_double(-1, 1);
        for (int64_t i = 0; i < sw[0] * sw[1]; i++) ((float *)W->data)[i] = (float)test_rand_double(-1, 1);
        CHECK(rt_cuda_alloc(dev, bx, &dX, &d) == TSL_OK && rt_cuda_alloc(dev, bw, &dW, &d) == TSL_OK);
        CHECK(rt_cuda_copy_htod(dev, dX, X->data, bx, &d) == TSL_OK);
        CHECK(rt_cuda_copy_htod(dev, dW, W->data, bw, &d) == TSL_OK);
        DLTensor tX = {(void *)(uintptr_t)dX, {kDLCUDA, ord}, 2, {kDLFloat, 32, 1}, sx, NULL, 0};
        DLTensor tW = {(void *)(uintptr_t)dW, {kDLCUDA, ord}, 2, {kDLFloat, 32, 1}, sw, NULL, 0};
        count_alloc c = {0};
        c.dev = dev;
        tsl_allocator al = {ca_alloc, ca_free, &c};
        tsl_args_set_allocator(wa, &al);
        tsl_args_set_sync(wa, 1);
        tsl_args_set_tensor(wa, "X", &tX);
        tsl_args_set_tensor(wa, "W", &tW);
        /* Y and S once (kept); per run the same temporaries and scratch
         * (T, the partials, a split's workspace: how many depends on
         * the plan for these sizes), each given back by the run */
        CHECK_MSG(tsl_program_run(w, wa, TSL_TARGET_CUDA) == TSL_OK, "%s", tsl_context_error(ctx));
        int a0 = c.allocs, f0 = c.frees;
        CHECK_MSG(f0 >= 2 && a0 == 2 + f0, "first run: allocs %d frees %d", a0, f0);
        CHECK_MSG(tsl_program_run(w, wa, TSL_TARGET_CUDA) == TSL_OK, "%s", tsl_context_error(ctx));
        CHECK_MSG(c.allocs == a0 + f0 && c.frees == 2 * f0, "second run: allocs %d frees %d (first: %d, %d)", c.allocs,
                  c.frees, a0, f0);
        const DLTensor *Y = tsl_args_output(wa, "Y"), *S = tsl_args_output(wa, "S");
        float *hy = malloc((size_t)(sx[0] * sw[1]) * 4 + 4), hs = 0;
        CHECK(Y && S && rt_cuda_copy_dtoh(dev, hy, (rt_cuda_ptr)(uintptr_t)Y->data, (size_t)(sx[0] * sw[1]) * 4, &d) == TSL_OK);
        CHECK(S && rt_cuda_copy_dtoh(dev, &hs, (rt_cuda_ptr)(uintptr_t)S->data, 4, &d) == TSL_OK);
        double sum = 0, asum = 0;
        for (int64_t i = 0; i < sx[0]; i++) {
            double t[128], mx = -INFINITY;
            for (int64_t j = 0; j < sw[1]; j++) {
                t[j] = 0;
                for (int64_t k = 0; k < sx[1]; k++)
                    t[j] += (double)((float *)X->data)[i * sx[1] + k] * ((float *)W->data)[k * sw[1] + j];
                mx = t[j] > mx ? t[j] : mx;
            }
            for (int64_t j = 0; j < sw[1]; j++) {
                CHECK_CLOSE(hy[i * sw[1] + j], t[j] - mx, 1e-4);
                sum += t[j] - mx;
                asum += fabs(t[j] - mx);
            }
        }
        CHECK_MSG(fabs(hs - sum) <= 1e-5 * (1 + asum), "S %g vs %g", hs, sum);
        free(hy);
        tsl_args_free(wa); /* its outputs go back to c's allocator */
        wa = NULL;
        CHECK_EQ_INT(c.frees, c.allocs);
    }
    tsl_args_free(wa);
    rt_cuda_free(dev, dX);
    rt_cuda_free(dev, dW);
    tsl_tensor_free(X);
    tsl_tensor_free(W);
    tsl_program_free(w);
    /* an index out of range, reported when the run is synced: X is B (n
     * elements, n random up to 5000), so the bad index is n itself, the
     * first one past the end (a fixed 999 was in range for n > 999) */
    tsl_program *g = compile(ctx, "def gather(float(N) X, int32(M) I) -> (Y) {\n  Y(i) = X(I(i))\n}");
    int32_t idx[4] = {0, (int32_t)(n - 1), (int32_t)n, 0};
    char want[64];
    snprintf(want, sizeof want, "index %lld out of range", (long long)n);
    rt_cuda_ptr dI = 0;
    int64_t m = 4;
    CHECK(rt_cuda_alloc(dev, sizeof idx, &dI, &d) == TSL_OK);
    CHECK(rt_cuda_copy_htod(dev, dI, idx, sizeof idx, &d) == TSL_OK);
    DLTensor tI = {(void *)(uintptr_t)dI, {kDLCUDA, ord}, 1, {kDLInt, 32, 1}, &m, NULL, 0};
    tsl_args *ga = g ? tsl_args_create(g) : NULL;
    if (ga) {
        tsl_args_set_tensor(ga, "X", &tB);
        tsl_args_set_tensor(ga, "I", &tI);
        tsl_args_set_sync(ga, 1);
        CHECK(tsl_program_run(g, ga, TSL_TARGET_CUDA) == TSL_ERR_BOUNDS);
        CHECK_MSG(strstr(tsl_context_error(ctx), want) != NULL, "%s", tsl_context_error(ctx));
    }
    tsl_args_free(ga);
    tsl_program_free(g);
    rt_cuda_free(dev, dI);
    free(h);
    tsl_args_free(a);
    rt_cuda_free(dev, dA);
    rt_cuda_free(dev, dB);
    rt_cuda_free(dev, dC);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_program_free(p);
    tsl_context_free(ctx);
    rt_cuda_close(dev);
    diag_free(&d);
}

TEST_SUITE(api_device) = {
    {"allocator_host", test_allocator_host},
    {"executor_mem", test_executor_mem},
    {"device_errors", test_device_errors},
    {"device_run", test_device_run},
    {0, 0},
};
