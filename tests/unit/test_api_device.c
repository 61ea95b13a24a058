/* test_api_device.c — device tensors, streams and allocators in the C API:
 * a caller's allocator for outputs (host, everywhere; GPU with a GPU), the
 * errors for tensors on two devices, on two GPUs, on a GPU with a host
 * target, and strided GPU tensors (no GPU needed: they are refused before
 * any memory is touched), and with a GPU: runs on device memory checked
 * against the host, no copy, an index out of range reported when synced. */
#include <string.h>

#include "base/base.h"
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
    for (int mode = 0; p && mode < 3; mode++) {
        /* 0: the caller's output; 1: the args' own; 2: the allocator's */
        count_alloc c = {0};
        c.dev = dev;
        tsl_allocator al = {ca_alloc, ca_free, &c};
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
        CHECK(mode != 2 || c.allocs == 1);
        if (C) CHECK(rt_cuda_copy_dtoh(dev, h, (rt_cuda_ptr)(uintptr_t)C->data, bytes, &d) == TSL_OK);
        for (int64_t i = 0; C && i < n; i++)
            CHECK_CLOSE(h[i], 2 * ((float *)A->data)[i] + ((float *)B->data)[i], 1e-6);
    }
    /* an index out of range, reported when the run is synced */
    tsl_program *g = compile(ctx, "def gather(float(N) X, int32(M) I) -> (Y) {\n  Y(i) = X(I(i))\n}");
    int32_t idx[4] = {0, 1, 999, 2};
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
        CHECK_MSG(strstr(tsl_context_error(ctx), "index 999 out of range") != NULL, "%s", tsl_context_error(ctx));
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
    {"device_errors", test_device_errors},
    {"device_run", test_device_run},
    {0, 0},
};
