/* test_api_call.c — what language bindings rely on in the C API:
 * positional binding (tsl_args_bind, tsl_program_call) with scalars, in/out
 * and allocated outputs, sizes changing between calls; one program run from many threads at once, each thread with its
 * own args and its own error; tsl_layout_table; emit "ptx"; the calls
 * through references and through a DLPack exchange API; a call whose
 * descriptors read as the last call's. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "base/base.h"
#include "test.h"

static DLTensor *rnd1(int64_t n)
{
    DLTensor *t = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n);
    for (int64_t k = 0; k < n; k++) ((float *)t->data)[k] = (float)test_rand_double(-1, 1);
    return t;
}

/* axpy with an in/out accumulator: Z = a X + Y (allocated or bound), S += X. */
static const char *axpy_src = "def axpy(float(N) X, float a, float(N) Y, float(N) S) -> (Z, S) {\n"
                              "  Z(i) = a * X(i) + Y(i)\n"
                              "  S(i) += X(i)\n}\n";

static void test_bind_positional(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK_MSG(tsl_program_compile(ctx, axpy_src, "axpy.tc", NULL, &p) == TSL_OK, "%s", tsl_context_error(ctx));
    if (!p) goto out;
    int64_t N = test_rand_int(1, 40);
    DLTensor *X = rnd1(N), *Y = rnd1(N), *S = rnd1(N), *Z = rnd1(N);
    float *s0 = malloc(sizeof(float) * (size_t)N);
    memcpy(s0, S->data, sizeof(float) * (size_t)N);
    double a = test_rand_double(-2, 2);
    double scalars[4] = {0, a, 0, 0};
    tsl_args *args = tsl_args_create(p);
    /* Z allocated by the args */
    const DLTensor *t1[6] = {X, NULL, Y, S, NULL, NULL};
    CHECK_MSG(tsl_args_bind(args, t1, scalars) == TSL_OK, "%s", tsl_context_error(ctx));
    CHECK_MSG(tsl_program_run(p, args, TSL_TARGET_CPU) == TSL_OK, "%s", tsl_context_error(ctx));
    const DLTensor *z = tsl_args_output(args, "Z");
    CHECK(z && z != Z);
    for (int64_t i = 0; z && i < N; i++) {
        float x = ((float *)X->data)[i];
        CHECK_CLOSE(((float *)z->data)[i], (float)a * x + ((float *)Y->data)[i], 1e-6);
        CHECK_CLOSE(((float *)S->data)[i], s0[i] + x, 1e-6);
    }
    /* Z bound by the caller (poisoned first), S given again as its own output entry */
    for (int64_t i = 0; i < N; i++) ((float *)Z->data)[i] = 99.0f;
    const DLTensor *t2[6] = {X, NULL, Y, S, Z, S};
    CHECK_MSG(tsl_program_call(p, args, t2, scalars, TSL_TARGET_CPU) == TSL_OK, "%s", tsl_context_error(ctx));
    CHECK(tsl_args_output(args, "Z") == Z);
    for (int64_t i = 0; i < N; i++) {
        float x = ((float *)X->data)[i];
        CHECK_CLOSE(((float *)Z->data)[i], (float)a * x + ((float *)Y->data)[i], 1e-6);
        CHECK_CLOSE(((float *)S->data)[i], s0[i] + 2 * x, 1e-6);
    }
    /* errors name what is wrong */
    const DLTensor *t3[6] = {X, NULL, Y, S, NULL, Z};
    CHECK(tsl_args_bind(args, t3, scalars) == TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "'S' is in/out") != NULL);
    CHECK(tsl_args_bind(args, t1, NULL) == TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "scalar parameter 'a'") != NULL);
    const DLTensor *t4[6] = {X, NULL, NULL, S, NULL, NULL};
    CHECK(tsl_args_bind(args, t4, scalars) == TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "tensor 'Y'") != NULL);
    int64_t n2 = N + 1;
    DLTensor *Zbad = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n2);
    const DLTensor *t5[6] = {X, NULL, Y, S, Zbad, NULL};
    CHECK_EQ_INT(tsl_args_bind(args, t5, scalars), TSL_OK);
    CHECK(tsl_program_run(p, args, TSL_TARGET_CPU) == TSL_ERR_SHAPE);
    CHECK(strstr(tsl_context_error(ctx), "output 'Z' has shape") != NULL);
    CHECK(tsl_program_call(p, NULL, t5, scalars, TSL_TARGET_CPU) == TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "tsl_program_call: args is NULL") != NULL);
    /* other sizes after runs of these (the kept binding is for N only) */
    DLTensor *X2 = rnd1(n2), *Y2 = rnd1(n2), *S2 = rnd1(n2);
    float s2 = ((float *)S2->data)[n2 - 1];
    const DLTensor *t6[6] = {X2, NULL, Y2, S2, Zbad, NULL};
    CHECK_MSG(tsl_program_call(p, args, t6, scalars, TSL_TARGET_CPU) == TSL_OK, "%s", tsl_context_error(ctx));
    CHECK_CLOSE(((float *)Zbad->data)[n2 - 1], (float)a * ((float *)X2->data)[n2 - 1] + ((float *)Y2->data)[n2 - 1],
                1e-6);
    CHECK_CLOSE(((float *)S2->data)[n2 - 1], s2 + ((float *)X2->data)[n2 - 1], 1e-6);
    tsl_tensor_free(X2);
    tsl_tensor_free(Y2);
    tsl_tensor_free(S2);
    tsl_tensor_free(Zbad);
    tsl_args_free(args);
    free(s0);
    tsl_tensor_free(X);
    tsl_tensor_free(Y);
    tsl_tensor_free(S);
    tsl_tensor_free(Z);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* Each thread runs the same program on its own inputs, reps times, then
 * provokes an error of its own and reads it back: no result and no message
 * of another thread may show up. */
enum { THREADS = 8, REPS = 20 };
typedef struct thread_job {
    tsl_context *ctx;
    tsl_program *p;
    DLTensor *X, *Y, *S, *Z;
    int64_t N;
    double a;
    int wrong;    /* elements off, over all reps */
    int failed;   /* runs that did not return TSL_OK */
    int err_ok;   /* the provoked error was this thread's */
} thread_job;

static void *thread_main(void *arg)
{
    thread_job *j = arg;
    tsl_args *args = tsl_args_create(j->p);
    double scalars[4] = {0, j->a, 0, 0};
    for (int r = 0; r < REPS; r++) {
        for (int64_t i = 0; i < j->N; i++) ((float *)j->Z->data)[i] = -77.0f;
        const DLTensor *t[6] = {j->X, NULL, j->Y, j->S, j->Z, NULL};
        if (tsl_args_bind(args, t, scalars) || tsl_program_run(j->p, args, TSL_TARGET_CPU)) {
            j->failed++;
            continue;
        }
        for (int64_t i = 0; i < j->N; i++) {
            float want = (float)j->a * ((float *)j->X->data)[i] + ((float *)j->Y->data)[i];
            if (fabsf(((float *)j->Z->data)[i] - want) > 1e-5f * (1 + fabsf(want))) j->wrong++;
        }
    }
    /* an unknown name that only this thread uses */
    char name[32];
    snprintf(name, sizeof name, "nope%lld", (long long)j->N);
    tsl_status st = tsl_args_set_scalar(args, name, 1);
    j->err_ok = st == TSL_ERR_ARG && strstr(tsl_context_error(j->ctx), name) != NULL;
    tsl_args_free(args);
    return NULL;
}

static void test_threads_one_program(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK_MSG(tsl_program_compile(ctx, axpy_src, "axpy.tc", NULL, &p) == TSL_OK, "%s", tsl_context_error(ctx));
    if (!p) goto out;
    thread_job jobs[THREADS];
    pthread_t th[THREADS];
    for (int k = 0; k < THREADS; k++) {
        thread_job *j = &jobs[k];
        memset(j, 0, sizeof *j);
        j->ctx = ctx;
        j->p = p;
        j->N = 3 + 7 * k + test_rand_int(0, 6); /* distinct per thread */
        j->X = rnd1(j->N);
        j->Y = rnd1(j->N);
        j->S = rnd1(j->N);
        j->Z = rnd1(j->N);
        j->a = test_rand_double(-2, 2);
    }
    for (int k = 0; k < THREADS; k++) CHECK(pthread_create(&th[k], NULL, thread_main, &jobs[k]) == 0);
    for (int k = 0; k < THREADS; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < THREADS; k++) {
        thread_job *j = &jobs[k];
        CHECK_MSG(j->failed == 0 && j->wrong == 0, "thread %d: %d runs failed, %d wrong elements", k, j->failed,
                  j->wrong);
        CHECK_MSG(j->err_ok, "thread %d did not read its own error", k);
        tsl_tensor_free(j->X);
        tsl_tensor_free(j->Y);
        tsl_tensor_free(j->S);
        tsl_tensor_free(j->Z);
    }
    /* the main thread's error is untouched by the threads' */
    CHECK_EQ_STR(tsl_context_error(ctx), "");
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

static void test_layout_table(void)
{
    tsl_context *ctx = tsl_context_create();
    char *text = NULL;
    CHECK_MSG(tsl_layout_table(ctx, "(2,3):(3,1)", 0, &text) == TSL_OK, "%s", tsl_context_error(ctx));
    /* the header, then mode 0 down: row i holds 3 i + j */
    CHECK(text && strstr(text, "size=6 cosize=6") != NULL);
    CHECK(text && strstr(text, " 1 | 3 | 4 | 5 |") != NULL);
    free(text);
    text = NULL;
    CHECK_MSG(tsl_layout_table(ctx, "(2,3):(3,1)", 1, &text) == TSL_OK, "%s", tsl_context_error(ctx));
    CHECK(text && strstr(text, "\"map\":[0,3,1,4,2,5]") != NULL);
    free(text);
    text = (char *)1;
    CHECK(tsl_layout_table(ctx, "(4,(2", 0, &text) == TSL_ERR_SYNTAX);
    CHECK(text == NULL);
    CHECK(strstr(tsl_context_error(ctx), "<layout>:1:") != NULL);
    CHECK(strstr(tsl_context_error(ctx), "^") != NULL);
    CHECK(tsl_layout_table(ctx, "(1000,1000)", 0, &text) == TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "too large for a table") != NULL);
    tsl_context_free(ctx);
}

/* "ptx": NVRTC's PTX of every kernel (needs NVRTC, not a GPU). */
static void test_emit_ptx(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK_MSG(tsl_program_compile(ctx, axpy_src, "axpy.tc", NULL, &p) == TSL_OK, "%s", tsl_context_error(ctx));
    char *s = NULL;
    tsl_status st = p ? tsl_program_emit(p, "ptx", &s) : TSL_ERR_INTERNAL;
    if (st == TSL_ERR_UNAVAILABLE) {
        printf("    skipped: %s\n", tsl_context_error(ctx));
    } else {
        CHECK_MSG(st == TSL_OK, "%s", tsl_context_error(ctx));
        CHECK(s && strstr(s, ".visible .entry") != NULL && strstr(s, ".target sm_") != NULL);
    }
    free(s);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* tsl_program_call_refs: tensors found through references shaped like a
 * Python capsule (two header words, then the pointer), DLManagedTensor
 * and DLManagedTensorVersioned ones, beside plain DLTensors; results as
 * through tsl_program_call; bad references are errors. */
typedef struct fake_capsule {
    void *head[2]; /* what an object header would hold */
    void *pointer;
} fake_capsule;

static void test_call_refs(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK_MSG(tsl_program_compile(ctx, axpy_src, "axpy.tc", NULL, &p) == TSL_OK, "%s", tsl_context_error(ctx));
    if (!p) goto out;
    int64_t N = test_rand_int(1, 40);
    DLTensor *X = rnd1(N), *Y = rnd1(N), *S = rnd1(N), *Z = rnd1(N);
    float *s0 = malloc(sizeof(float) * (size_t)N);
    memcpy(s0, S->data, sizeof(float) * (size_t)N);
    for (int64_t i = 0; i < N; i++) ((float *)Z->data)[i] = NAN; /* poisoned */
    double a = test_rand_double(-2, 2), scalars[4] = {0, a, 0, 0};
    /* X as a DLManagedTensor behind a capsule, Y as a versioned one, S and Z plain */
    DLManagedTensor mx = {.dl_tensor = *X};
    struct {
        uint32_t version[2];
        void *manager_ctx, *deleter;
        uint64_t flags;
        DLTensor dl_tensor;
    } my = {.dl_tensor = *Y};
    fake_capsule cx = {.pointer = &mx}, cy = {.pointer = &my};
    const void *refs[6] = {&cx, NULL, &cy, S, Z, NULL};
    uint8_t kinds[6] = {TSL_REF_MANAGED, TSL_REF_NONE, TSL_REF_VERSIONED, TSL_REF_TENSOR, TSL_REF_TENSOR, TSL_REF_NONE};
    tsl_args *args = tsl_args_create(p);
    CHECK_MSG(tsl_program_call_refs(p, args, refs, kinds, offsetof(fake_capsule, pointer), scalars, TSL_TARGET_CPU) ==
                  TSL_OK, "%s", tsl_context_error(ctx));
    for (int64_t i = 0; i < N; i++) {
        float x = ((float *)X->data)[i];
        CHECK_CLOSE(((float *)Z->data)[i], (float)a * x + ((float *)Y->data)[i], 1e-6);
        CHECK_CLOSE(((float *)S->data)[i], s0[i] + x, 1e-6);
    }
    /* Z allocated by the args this time */
    kinds[4] = TSL_REF_NONE;
    CHECK_MSG(tsl_program_call_refs(p, args, refs, kinds, offsetof(fake_capsule, pointer), scalars, TSL_TARGET_CPU) ==
                  TSL_OK, "%s", tsl_context_error(ctx));
    const DLTensor *z = tsl_args_output(args, "Z");
    CHECK(z && z != Z);
    for (int64_t i = 0; z && i < N; i++) CHECK_EQ_INT(((float *)z->data)[i] == ((float *)Z->data)[i], 1);
    /* errors: a kind that is none, a reference to nothing, a missing input */
    kinds[0] = 9;
    CHECK_EQ_INT(tsl_program_call_refs(p, args, refs, kinds, 16, scalars, TSL_TARGET_CPU), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "kinds[0] is 9"), "%s", tsl_context_error(ctx));
    kinds[0] = TSL_REF_MANAGED;
    cx.pointer = NULL;
    CHECK_EQ_INT(tsl_program_call_refs(p, args, refs, kinds, offsetof(fake_capsule, pointer), scalars, TSL_TARGET_CPU),
                 TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "reference 0 leads to no tensor"), "%s", tsl_context_error(ctx));
    cx.pointer = &mx;
    kinds[2] = TSL_REF_NONE;
    CHECK_EQ_INT(tsl_program_call_refs(p, args, refs, kinds, offsetof(fake_capsule, pointer), scalars, TSL_TARGET_CPU),
                 TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "tensor 'Y'"), "%s", tsl_context_error(ctx));
    CHECK_EQ_INT(tsl_program_call_refs(p, args, NULL, kinds, 16, scalars, TSL_TARGET_CPU), TSL_ERR_ARG);
    tsl_args_free(args);
    free(s0);
    tsl_tensor_free(X);
    tsl_tensor_free(Y);
    tsl_tensor_free(S);
    tsl_tensor_free(Z);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* tsl_dlpack_fill through a fake exchange API whose objects are
 * DLTensors to copy (one of them refuses): filled in order, the device
 * given back, OTHER_WAY for mixed devices and strided device tensors,
 * UNUSABLE for an API of another version. */
typedef struct fake_api {
    uint32_t major, minor;
    const void *prev;
    void *fns[3];
    int (*fill)(void *obj, DLTensor *out);
    int (*stream)(DLDeviceType type, int32_t id, void **out);
} fake_api;

/* The framework's lock, as tsl_program_call_dlpack's hooks take and give
 * it: nothing of the framework may be called without it. */
static struct {
    int held, unlocks, relocks, unheld_use;
} fake_lock = {1, 0, 0, 0};

static void *fake_unlock(void)
{
    fake_lock.held = 0;
    fake_lock.unlocks++;
    return &fake_lock;
}

static void fake_relock(void *token)
{
    fake_lock.held = token == &fake_lock;
    fake_lock.relocks++;
}

static int fake_fill(void *obj, DLTensor *out)
{
    fake_lock.unheld_use += !fake_lock.held;
    if (!obj) return -1; /* the framework's refusal */
    *out = *(const DLTensor *)obj;
    return 0;
}

static void *fake_current_stream = (void *)0x5157;

static int fake_stream(DLDeviceType type, int32_t id, void **out)
{
    fake_lock.unheld_use += !fake_lock.held;
    if (id > 0) return -1; /* refused */
    *out = type == kDLCUDA ? fake_current_stream : NULL;
    return 0;
}

static void test_dlpack_fill(void)
{
    fake_api api = {.major = 1, .minor = 3, .fill = fake_fill};
    int64_t shape[2] = {test_rand_int(2, 9), test_rand_int(2, 9)}, strides[2] = {1, shape[0]};
    char mem[8];
    DLTensor a = {.data = mem, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = shape};
    DLTensor b = a, c = a;
    b.strides = strides; /* transposed: fine on the host */
    c.dtype.bits = 16;
    void *objs[3] = {&a, &b, &c};
    DLTensor out[3];
    memset(out, 0x5a, sizeof out);
    DLDevice dev = {0, -1};
    CHECK_EQ_INT(tsl_dlpack_fill(&api, objs, 3, out, &dev), 0);
    CHECK_EQ_INT(dev.device_type, kDLCPU);
    CHECK(out[0].data == mem && out[1].strides == strides && out[2].dtype.bits == 16 && out[0].shape == shape);
    /* on a GPU the transposed one cannot be taken in place */
    a.device = b.device = c.device = (DLDevice){kDLCUDA, 1};
    CHECK_EQ_INT(tsl_dlpack_fill(&api, objs, 3, out, &dev), TSL_DLPACK_OTHER_WAY);
    CHECK_EQ_INT(dev.device_type, kDLCUDA);
    CHECK_EQ_INT(dev.device_id, 1);
    b.strides = NULL;
    CHECK_EQ_INT(tsl_dlpack_fill(&api, objs, 3, out, &dev), 0);
    c.device.device_id = 0; /* two GPUs */
    CHECK_EQ_INT(tsl_dlpack_fill(&api, objs, 3, out, &dev), TSL_DLPACK_OTHER_WAY);
    /* a refusal names the object */
    objs[1] = NULL;
    CHECK_EQ_INT(tsl_dlpack_fill(&api, objs, 3, out, &dev), -2);
    /* not an API this library knows */
    api.minor = 1;
    CHECK_EQ_INT(tsl_dlpack_fill(&api, objs, 3, out, &dev), TSL_DLPACK_UNUSABLE);
    api.minor = 2;
    api.fill = NULL;
    CHECK_EQ_INT(tsl_dlpack_fill(&api, objs, 3, out, &dev), TSL_DLPACK_UNUSABLE);
    CHECK_EQ_INT(tsl_dlpack_fill(NULL, objs, 3, out, &dev), TSL_DLPACK_UNUSABLE);
}

/* tsl_program_call_dlpack: the fill and the run in one call, results as
 * tsl_program_call's (in/out, an allocated output, a scalar), the lock let
 * go for the run only and the framework never called without it; nothing
 * kept between calls (a tensor re-pointed and resized in place is read
 * anew); each reason for not running named in c.fill and in the error;
 * CUDA tensors need the args set up for their GPU first, and get the
 * framework's current stream (tests/unit/test_cuda_calls.c runs them). */
static void test_call_dlpack(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK_MSG(tsl_program_compile(ctx, axpy_src, "axpy.tc", NULL, &p) == TSL_OK, "%s", tsl_context_error(ctx));
    if (!p) goto out;
    int64_t N = test_rand_int(1, 40), M = N + test_rand_int(1, 9);
    DLTensor *X = rnd1(N), *Y = rnd1(N), *S = rnd1(N), *Z = rnd1(N), *X2 = rnd1(M), *Y2 = rnd1(M), *S2 = rnd1(M),
             *Z2 = rnd1(M);
    float *s0 = malloc(sizeof(float) * (size_t)M);
    memcpy(s0, S->data, sizeof(float) * (size_t)N);
    for (int64_t i = 0; i < N; i++) ((float *)Z->data)[i] = NAN; /* poisoned */
    double a = test_rand_double(-2, 2), scalars[4] = {0, a, 0, 0};
    /* the framework's objects: X, Y, S, Z (here DLTensors that fake_fill copies) */
    DLTensor ox = *X, oy = *Y, os = *S, oz = *Z;
    void *objs[4] = {&ox, &oy, &os, &oz};
    DLTensor filled[4];
    const DLTensor *ts[6] = {&filled[0], NULL, &filled[1], &filled[2], &filled[3], NULL};
    fake_api api = {.major = 1, .minor = 2, .fill = fake_fill, .stream = fake_stream};
    tsl_dlpack_call c = {.exchange_api = &api, .objects = objs, .n = 4, .filled = filled, .tensors = ts,
                         .scalars = scalars, .host_target = TSL_TARGET_CPU, .device_target = TSL_TARGET_CUDA,
                         .unlock = fake_unlock, .relock = fake_relock, .fill = 99};
    tsl_args *args = tsl_args_create(p);
    fake_lock.unlocks = fake_lock.relocks = fake_lock.unheld_use = 0;
    CHECK_MSG(tsl_program_call_dlpack(p, args, &c, 0) == TSL_OK, "%s", tsl_context_error(ctx));
    CHECK_EQ_INT(c.fill, 0);
    CHECK_EQ_INT(c.device.device_type, kDLCPU);
    CHECK_EQ_INT(fake_lock.unlocks, 1);
    CHECK_EQ_INT(fake_lock.relocks, 1);
    CHECK_EQ_INT(fake_lock.held, 1);
    for (int64_t i = 0; i < N; i++) {
        float x = ((float *)X->data)[i];
        CHECK_CLOSE(((float *)Z->data)[i], (float)a * x + ((float *)Y->data)[i], 1e-6);
        CHECK_CLOSE(((float *)S->data)[i], s0[i] + x, 1e-6);
    }
    /* the same objects changed in place (set_, resize_): read anew */
    ox = *X2, oy = *Y2, os = *S2, oz = *Z2;
    memcpy(s0, S2->data, sizeof(float) * (size_t)M);
    CHECK_MSG(tsl_program_call_dlpack(p, args, &c, 0) == TSL_OK, "%s", tsl_context_error(ctx));
    for (int64_t i = 0; i < M; i++) {
        float x = ((float *)X2->data)[i];
        CHECK_CLOSE(((float *)Z2->data)[i], (float)a * x + ((float *)Y2->data)[i], 1e-6);
        CHECK_CLOSE(((float *)S2->data)[i], s0[i] + x, 1e-6);
    }
    /* Z allocated by the args: three objects */
    c.n = 3;
    ts[4] = NULL;
    CHECK_MSG(tsl_program_call_dlpack(p, args, &c, 0) == TSL_OK, "%s", tsl_context_error(ctx));
    const DLTensor *z = tsl_args_output(args, "Z");
    CHECK(z && z != Z2 && z->shape[0] == M);
    for (int64_t i = 0; z && i < M; i++) CHECK_EQ_INT(((float *)z->data)[i] == ((float *)Z2->data)[i], 1);
    c.n = 4;
    ts[4] = &filled[3];
    CHECK_EQ_INT(fake_lock.unlocks, 3);
    CHECK_EQ_INT(fake_lock.relocks, 3);
    /* the run's own errors, as tsl_program_call gives them */
    oy.shape = &N;
    CHECK_EQ_INT(tsl_program_call_dlpack(p, args, &c, 0), TSL_ERR_SHAPE);
    CHECK_EQ_INT(c.fill, 0);
    CHECK_EQ_INT(fake_lock.held, 1);
    oy = *Y2;
    /* nothing runs, and the lock is kept, when the fill says no */
    int unlocks = fake_lock.unlocks;
    objs[2] = NULL;
    CHECK_EQ_INT(tsl_program_call_dlpack(p, args, &c, 0), TSL_ERR_ARG);
    CHECK_EQ_INT(c.fill, -3);
    CHECK_MSG(strstr(tsl_context_error(ctx), "refused object 2"), "%s", tsl_context_error(ctx));
    objs[2] = &os;
    oy.device = (DLDevice){kDLCUDA, 0}; /* two devices */
    CHECK_EQ_INT(tsl_program_call_dlpack(p, args, &c, 0), TSL_ERR_ARG);
    CHECK_EQ_INT(c.fill, TSL_DLPACK_OTHER_WAY);
    CHECK_MSG(strstr(tsl_context_error(ctx), "two devices"), "%s", tsl_context_error(ctx));
    /* CUDA tensors on a GPU the args are not set up for, then one whose
     * stream the framework cannot give */
    ox.device = os.device = oz.device = oy.device;
    CHECK_EQ_INT(tsl_program_call_dlpack(p, args, &c, 0), TSL_ERR_ARG);
    CHECK_EQ_INT(c.fill, TSL_DLPACK_SETUP);
    CHECK_EQ_INT(c.device.device_type, kDLCUDA);
    CHECK_MSG(strstr(tsl_context_error(ctx), "cuda:0, which the args are not set up for"), "%s",
              tsl_context_error(ctx));
    c.ready = (DLDevice){kDLCUDA, 1};
    ox.device.device_id = oy.device.device_id = os.device.device_id = oz.device.device_id = 1;
    CHECK_EQ_INT(tsl_program_call_dlpack(p, args, &c, 0), TSL_ERR_ARG);
    CHECK_EQ_INT(c.fill, TSL_DLPACK_NO_STREAM);
    CHECK_EQ_INT(c.device.device_id, 1);
    ox.device = oy.device = os.device = oz.device = (DLDevice){kDLCPU, 0};
    api.minor = 1;
    CHECK_EQ_INT(tsl_program_call_dlpack(p, args, &c, 0), TSL_ERR_ARG);
    CHECK_EQ_INT(c.fill, TSL_DLPACK_UNUSABLE);
    CHECK_MSG(strstr(tsl_context_error(ctx), "DLPack >= 1.2"), "%s", tsl_context_error(ctx));
    api.minor = 2;
    CHECK_EQ_INT(fake_lock.unlocks, unlocks);
    CHECK_EQ_INT(tsl_program_call_dlpack(p, NULL, &c, 0), TSL_ERR_ARG);
    CHECK_EQ_INT(tsl_program_call_dlpack(p, args, NULL, 0), TSL_ERR_ARG);
    CHECK_EQ_INT(tsl_program_call_dlpack(NULL, args, &c, 0), TSL_ERR_ARG);
    /* no hooks: run as it is */
    c.unlock = NULL;
    CHECK_MSG(tsl_program_call_dlpack(p, args, &c, 0) == TSL_OK, "%s", tsl_context_error(ctx));
    CHECK_EQ_INT(fake_lock.unlocks, unlocks);
    CHECK_EQ_INT(fake_lock.relocks, unlocks);
    CHECK_EQ_INT(fake_lock.unheld_use, 0);
    tsl_args_free(args);
    free(s0);
    DLTensor *all[8] = {X, Y, S, Z, X2, Y2, S2, Z2};
    for (int i = 0; i < 8; i++) tsl_tensor_free(all[i]);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* Z = a X + Y (Z given), S += X: each checked against the host's sum. */
static int axpy_right(const DLTensor *X, const DLTensor *Y, const DLTensor *Z, const DLTensor *S, const float *s0,
                      double a)
{
    int ok = 1;
    for (int64_t i = 0; i < X->shape[0]; i++) {
        float x = ((float *)X->data)[i];
        ok &= fabsf(((float *)Z->data)[i] - ((float)a * x + ((float *)Y->data)[i])) < 1e-5f;
        ok &= fabsf(((float *)S->data)[i] - (s0[i] + x)) < 1e-5f;
    }
    return ok;
}

/* tsl_program_call skips the checks its last call passed when the
 * descriptors read as then (args.c, args_seen), and checks everything
 * when anything differs: a descriptor refilled in place with another
 * shape (the executor's kept launch bindings follow: exec.c), dtype or
 * overlapping address, a size set in between, an in/out entry, another
 * target; scalars and data change freely. A scalar's tensor entry is
 * never read. */
static void test_call_seen(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK_MSG(tsl_program_compile(ctx, axpy_src, "axpy.tc", NULL, &p) == TSL_OK, "%s", tsl_context_error(ctx));
    if (!p) goto out;
    int64_t N = test_rand_int(2, 30), M = N + test_rand_int(1, 9);
    DLTensor *X = rnd1(M), *Y = rnd1(M), *S = rnd1(M), *Z = rnd1(M); /* room for M, shape N at first */
    DLTensor *all[4] = {X, Y, S, Z};
    for (int k = 0; k < 4; k++) all[k]->shape[0] = N;
    float *s0 = malloc(sizeof(float) * (size_t)M);
    double scalars[4] = {0, 0, 0, 0};
    const DLTensor *t[6] = {X, (const DLTensor *)(uintptr_t)8 /* never read */, Y, S, Z, NULL};
    tsl_args *args = tsl_args_create(p);
    static const tsl_target targets[] = {TSL_TARGET_CPU, TSL_TARGET_CPU, TSL_TARGET_CPU, TSL_TARGET_INTERP,
                                         TSL_TARGET_CPU};
    /* refilled in place: other sizes (0 and 1 too), each twice or once */
    const int64_t sizes[] = {N, N, M, M, 0, 0, N, 1, 1, M, N, N, 0, M};
    for (int r = 0; r < (int)TSL_COUNTOF(sizes); r++) {
        int64_t n = sizes[r];
        for (int k = 0; k < 4; k++) all[k]->shape[0] = n;
        scalars[1] = r % 3 ? test_rand_double(-2, 2) : 0.5; /* a scalar the kernel reads, changing */
        for (int64_t i = 0; i < n; i++) ((float *)X->data)[i] = (float)test_rand_double(-1, 1), ((float *)Z->data)[i] = NAN;
        memcpy(s0, S->data, sizeof(float) * (size_t)n);
        tsl_target tg = targets[r % 5];
        CHECK_MSG(tsl_program_call(p, args, t, scalars, tg) == TSL_OK, "call %d: %s", r, tsl_context_error(ctx));
        CHECK_MSG(axpy_right(X, Y, Z, S, s0, scalars[1]), "call %d (n %lld, %s) is wrong", r, (long long)n,
                  tsl_target_name(tg));
    }
    for (int k = 0; k < 4; k++) all[k]->shape[0] = N;
    /* each refilled in place after a call that ran: the answer of a call
     * that checks everything */
#define SEEN_OK() CHECK_MSG(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU) == TSL_OK, "%s", tsl_context_error(ctx))
    SEEN_OK();
    X->dtype.bits = 64;
    CHECK_EQ_INT(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "parameter 'X' is float32 but the tensor given is float64"), "%s",
              tsl_context_error(ctx));
    X->dtype.bits = 32;
    SEEN_OK();
    Y->shape[0] = N - 1;
    CHECK_EQ_INT(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU), TSL_ERR_SHAPE);
    CHECK_MSG(strstr(tsl_context_error(ctx), "size N is"), "%s", tsl_context_error(ctx));
    Y->shape[0] = N;
    SEEN_OK();
    void *zdata = Z->data;
    Z->data = Y->data; /* the same descriptors at an address that overlaps */
    CHECK_EQ_INT(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "output 'Z' shares memory with parameter 'Y'"), "%s",
              tsl_context_error(ctx));
    Z->data = zdata;
    SEEN_OK();
    Z->device.device_type = kDLCUDA;
    CHECK_EQ_INT(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "must be on one device"), "%s", tsl_context_error(ctx));
    Z->device.device_type = kDLCPU;
    SEEN_OK();
    int64_t *yshape = Y->shape;
    Y->shape = NULL;
    CHECK_EQ_INT(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "rank 1 but shape is NULL"), "%s", tsl_context_error(ctx));
    Y->shape = yshape;
    SEEN_OK();
    void *xdata = X->data;
    X->data = NULL;
    CHECK_EQ_INT(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "data is NULL"), "%s", tsl_context_error(ctx));
    X->data = xdata;
    SEEN_OK();
    /* an in/out entry: its parameter's tensor, else an error, every time */
    t[5] = S;
    for (int r = 0; r < 2; r++)
        CHECK_MSG(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU) == TSL_OK, "%s", tsl_context_error(ctx));
    t[5] = Y;
    CHECK_EQ_INT(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "'S' is in/out"), "%s", tsl_context_error(ctx));
    t[5] = NULL;
    SEEN_OK();
    /* a size set on the args in between is checked against the tensors */
    CHECK_EQ_INT(tsl_args_set_size(args, "N", N + 1), TSL_OK);
    CHECK_EQ_INT(tsl_program_call(p, args, t, scalars, TSL_TARGET_CPU), TSL_ERR_SHAPE);
    CHECK_MSG(strstr(tsl_context_error(ctx), "size N is"), "%s", tsl_context_error(ctx));
    /* no scalars where the def has one */
    CHECK_EQ_INT(tsl_args_set_size(args, "N", N), TSL_OK);
    SEEN_OK();
    CHECK_EQ_INT(tsl_program_call(p, args, t, NULL, TSL_TARGET_CPU), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "scalar parameter 'a'"), "%s", tsl_context_error(ctx));
#undef SEEN_OK
    tsl_args_free(args);
    free(s0);
    for (int k = 0; k < 4; k++) tsl_tensor_free(all[k]);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* tsl_args_tolerance: the narrowest float an output is computed through
 * (a float32 temporary or cast feeding a float64 output gives float32's),
 * grown past 256 reduction terms; integers exact. */
static void test_tolerance(void)
{
    static const char src[] = "def f(float64(N) A, int32(N) I, half(N) H) -> (P, Q, R, S, U) {\n"
                              "  T(i) = float32(A(i)) * 2\n"
                              "  P(i) = T(i) + A(i)\n"
                              "  Q(i) = A(i) * A(i)\n"
                              "  R() +=! A(i) * A(i)\n"
                              "  S(i) = I(i) * 3\n"
                              "  U(i) = H(i) * 2.0\n}\n";
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK_MSG(tsl_program_compile(ctx, src, "t.tc", NULL, &p) == TSL_OK, "%s", tsl_context_error(ctx));
    tsl_args *a = p ? tsl_args_create(p) : NULL;
    int64_t n = 1024 + test_rand_int(1, 100);
    DLTensor *A = tsl_tensor_alloc(TSL_DTYPE_F64, 1, &n), *I = tsl_tensor_alloc(TSL_DTYPE_I32, 1, &n),
             *H = tsl_tensor_alloc(TSL_DTYPE_F16, 1, &n);
    if (a && A && I && H) {
        CHECK_EQ_INT(tsl_args_set_tensor(a, "A", A), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "I", I), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "H", H), TSL_OK);
        CHECK_EQ_INT(tsl_args_infer(a), TSL_OK);
        CHECK_CLOSE(tsl_args_tolerance(a, "P"), 1e-5, 1e-12);
        CHECK_CLOSE(tsl_args_tolerance(a, "Q"), 1e-12, 1e-20);
        CHECK_CLOSE(tsl_args_tolerance(a, "R"), 1e-12 * sqrt((double)n / 256), 1e-20);
        CHECK_EQ_INT(tsl_args_reduction_length(a, "R"), n);
        CHECK(tsl_args_tolerance(a, "S") == 0);
        CHECK_CLOSE(tsl_args_tolerance(a, "U"), 1e-2, 1e-12);
        CHECK(tsl_args_tolerance(a, "nope") < 0);
    }
    tsl_tensor_free(A);
    tsl_tensor_free(I);
    tsl_tensor_free(H);
    tsl_args_free(a);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

TEST_SUITE(api_call) = {
    {"tolerance", test_tolerance},
    {"emit_ptx", test_emit_ptx},
    {"bind_positional", test_bind_positional},
    {"threads_one_program", test_threads_one_program},
    {"layout_table", test_layout_table},
    {"call_refs", test_call_refs},
    {"dlpack_fill", test_dlpack_fill},
    {"call_dlpack", test_call_dlpack},
    {"call_seen", test_call_seen},
    {0, 0},
};
