/* test_api.c — the public C API's contract: compiling and entry selection,
 * introspection, emit, binding by name, every error path (unknown names,
 * wrong dtype or rank, disagreeing size symbols, missing arguments, bad
 * output storage, NULLs, device tensors, unavailable targets), strided and
 * offset views. */
#include <string.h>

#include "base/base.h"
#include "runtime/runtime.h"
#include "test.h"

static const char *mm_src = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n"
                            "  C(m,n) +=! A(m,k) * B(k,n)\n}\n";

static tsl_program *compile(tsl_context *ctx, const char *src)
{
    tsl_program *p = NULL;
    tsl_status st = tsl_program_compile(ctx, src, "api.tc", NULL, &p);
    CHECK_MSG(st == TSL_OK, "compile failed: %s", tsl_context_error(ctx));
    return p;
}

static DLTensor *rnd_f32(int rank, int64_t d0, int64_t d1)
{
    int64_t shape[2] = {d0, d1};
    DLTensor *t = tsl_tensor_alloc(TSL_DTYPE_F32, rank, shape);
    int64_t n = rank == 0 ? 1 : rank == 1 ? d0 : d0 * d1;
    for (int64_t k = 0; k < n; k++) ((float *)t->data)[k] = (float)test_rand_double(-1, 1);
    return t;
}

#define CHECK_ERR(call, status, frag)                                                      \
    do {                                                                                   \
        tsl_status st_ = (call);                                                           \
        CHECK_MSG(st_ == (status), "%s: got %s, want %s (%s)", #call, tsl_status_name(st_), \
                  tsl_status_name(status), tsl_context_error(ctx));                        \
        CHECK_MSG(strstr(tsl_context_error(ctx), (frag)) != NULL, "want '%s' in: %s", (frag), \
                  tsl_context_error(ctx));                                                 \
    } while (0)

static void test_compile_errors(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = (tsl_program *)1;
    CHECK_ERR(tsl_program_compile(ctx, "def f(float(N) A) -> (B) {\n  B(i) = A(i) +\n}\n", "bad.tc",
                                  NULL, &p),
              TSL_ERR_SYNTAX, "bad.tc:3:");
    CHECK(p == NULL);
    CHECK(strstr(tsl_context_error(ctx), "^") != NULL);
    const char *two = "def f(float(N) A) -> (B) { B(i) = A(i) }\n"
                      "def g(float(N) A) -> (B) { B(i) = A(i) * 2 }\n";
    CHECK_ERR(tsl_program_compile(ctx, two, "two.tc", NULL, &p), TSL_ERR_ARG, "2 defs (f, g)");
    CHECK_ERR(tsl_program_compile(ctx, two, "two.tc", "h", &p), TSL_ERR_ARG,
              "no def named 'h' (defs: f, g)");
    CHECK_EQ_INT(tsl_program_compile(ctx, two, "two.tc", "g", &p), TSL_OK);
    CHECK_EQ_STR(tsl_program_name(p), "g");
    tsl_program_free(p);
    CHECK_ERR(tsl_program_compile(ctx, NULL, "x.tc", NULL, &p), TSL_ERR_ARG, "source is NULL");
    CHECK_EQ_INT(tsl_program_compile(NULL, mm_src, NULL, NULL, &p), TSL_ERR_ARG);
    CHECK_ERR(tsl_program_compile_file(ctx, "/nonexistent/x.tc", NULL, &p), TSL_ERR_IO,
              "/nonexistent/x.tc");
    CHECK_ERR(tsl_check(ctx, "def f(float(N) A) -> (B) {\n  B(i) = C(i)\n}\n", "chk.tc"),
              TSL_ERR_SEMANTIC, "chk.tc:2:");
    CHECK_EQ_INT(tsl_check(ctx, two, NULL), TSL_OK);
    tsl_context_clear_error(ctx);
    CHECK_EQ_STR(tsl_context_error(ctx), "");
    CHECK_EQ_STR(tsl_context_error(NULL), "");
    tsl_context_free(ctx);
    tsl_context_free(NULL);
}

static void test_introspection_emit(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def f(float alpha, float(M,K) A, int32(K) I, float(M) Y)"
                                  " -> (Y, Z) {\n  Y(m) += alpha * A(m,k)\n  Z(m) = Y(m)\n}\n");
    if (!p) goto out;
    CHECK_EQ_STR(tsl_program_name(p), "f");
    CHECK_EQ_INT(tsl_program_param_count(p), 4);
    tsl_param_info info;
    CHECK_EQ_INT(tsl_program_param(p, 0, &info), TSL_OK);
    CHECK(info.is_scalar && !info.is_output && info.dtype == TSL_DTYPE_F32 && info.rank == 0);
    CHECK_EQ_STR(info.name, "alpha");
    CHECK_EQ_INT(tsl_program_param(p, 2, &info), TSL_OK);
    CHECK(!info.is_scalar && info.dtype == TSL_DTYPE_I32 && info.rank == 1);
    CHECK_EQ_INT(tsl_program_param(p, 3, &info), TSL_OK);
    CHECK(info.is_output);
    CHECK_ERR(tsl_program_param(p, 4, &info), TSL_ERR_ARG, "out of range");
    CHECK_EQ_INT(tsl_program_output_count(p), 2);
    CHECK_EQ_STR(tsl_program_output_name(p, 0), "Y");
    CHECK_EQ_STR(tsl_program_output_name(p, 1), "Z");
    CHECK(tsl_program_output_name(p, 2) == NULL);
    const char *names[TSL_MAX_RANK];
    CHECK_EQ_INT(tsl_program_param_dims(p, 1, names), TSL_OK);
    CHECK_EQ_STR(names[0], "M");
    CHECK_EQ_STR(names[1], "K");
    CHECK(names[2] == NULL);
    char *s = NULL;
    CHECK_EQ_INT(tsl_program_emit(p, "ast", &s), TSL_OK);
    CHECK(s && strstr(s, "def f") != NULL);
    free(s);
    s = NULL;
    CHECK_EQ_INT(tsl_program_emit(p, "ranges", &s), TSL_OK);
    CHECK(s && strlen(s) > 0);
    free(s);
    s = NULL;
    CHECK_MSG(tsl_program_emit(p, "graph", &s) == TSL_OK, "%s", tsl_context_error(ctx));
    CHECK(s && strlen(s) > 0);
    free(s);
    CHECK_ERR(tsl_program_emit(p, "sass", &s), TSL_ERR_ARG, "unknown emit kind 'sass'");
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

static void test_bind_errors(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, mm_src);
    if (!p) goto out;
    tsl_args *a = tsl_args_create(p);
    DLTensor *A = rnd_f32(2, 3, 7), *B5 = rnd_f32(2, 5, 4), *B7 = rnd_f32(2, 7, 4);
    DLTensor *R3 = rnd_f32(1, 3, 0);
    CHECK_ERR(tsl_args_set_tensor(a, "Q", A), TSL_ERR_ARG, "no parameter or output named 'Q'");
    CHECK_ERR(tsl_args_set_tensor(a, "A", NULL), TSL_ERR_ARG, "NULL");
    CHECK_ERR(tsl_args_set_tensor(a, NULL, A), TSL_ERR_ARG, "name is NULL");
    CHECK_ERR(tsl_args_set_tensor(a, "C", A), TSL_ERR_ARG, "tsl_args_set_output");
    CHECK_ERR(tsl_args_set_scalar(a, "A", 1.0), TSL_ERR_ARG, "'A' is a tensor");
    CHECK_ERR(tsl_args_set_scalar(a, "nope", 1.0), TSL_ERR_ARG, "'nope'");
    CHECK_ERR(tsl_args_set_tensor(a, "A", R3), TSL_ERR_SHAPE, "parameter 'A' has rank 2");
    /* wrong dtype: names the parameter, the declared and the given dtype */
    int64_t sh[2] = {3, 7};
    DLTensor *D = tsl_tensor_alloc(TSL_DTYPE_F64, 2, sh);
    CHECK_ERR(tsl_args_set_tensor(a, "A", D), TSL_ERR_ARG,
              "parameter 'A' is float32 but the tensor given is float64");
    /* a device tessel has no runtime for (CUDA tensors: test_api_call.c) */
    DLTensor dev = *A;
    dev.device.device_type = kDLOpenCL;
    CHECK_ERR(tsl_args_set_tensor(a, "A", &dev), TSL_ERR_ARG, "device type 4 is not supported");
    /* missing input */
    CHECK_EQ_INT(tsl_args_set_tensor(a, "A", A), TSL_OK);
    CHECK_ERR(tsl_args_infer(a), TSL_ERR_ARG, "missing input tensor 'B'");
    CHECK_ERR(tsl_program_run(p, a, TSL_TARGET_INTERP), TSL_ERR_ARG, "missing input tensor 'B'");
    CHECK(tsl_args_output(a, "C") == NULL);
    /* size symbols disagree: the message names both tensors and dims */
    CHECK_EQ_INT(tsl_args_set_tensor(a, "B", B5), TSL_OK);
    CHECK_ERR(tsl_args_infer(a), TSL_ERR_SHAPE, "size K is 7 from A dim 1 but 5 from B dim 0");
    CHECK_EQ_INT(tsl_args_set_tensor(a, "B", B7), TSL_OK);
    CHECK_EQ_INT(tsl_args_infer(a), TSL_OK);
    int rank = -1;
    int64_t shape[TSL_MAX_RANK];
    tsl_dtype dt;
    CHECK_EQ_INT(tsl_args_output_shape(a, "C", &rank, shape, &dt), TSL_OK);
    CHECK(rank == 2 && shape[0] == 3 && shape[1] == 4 && dt == TSL_DTYPE_F32);
    CHECK_ERR(tsl_args_output_shape(a, "A", &rank, shape, &dt), TSL_ERR_ARG, "not an output");
    /* output storage of the wrong shape or dtype */
    DLTensor *Cbad = rnd_f32(2, 4, 3);
    CHECK_ERR(tsl_args_set_output(a, "C", Cbad), TSL_ERR_SHAPE,
              "output 'C' has shape (3, 4) but the tensor given has shape (4, 3)");
    int64_t sh34[2] = {3, 4};
    DLTensor *Ci = tsl_tensor_alloc(TSL_DTYPE_I32, 2, sh34);
    CHECK_ERR(tsl_args_set_output(a, "C", Ci), TSL_ERR_ARG, "output 'C' is float32");
    CHECK_ERR(tsl_args_set_output(a, "Z", Ci), TSL_ERR_ARG, "'Z'");
    /* with no GPU the cuda target is a clear error (tests/unit/test_cuda_target.c
     * runs it where there is one) */
    if (tsl_target_default() != TSL_TARGET_CUDA)
        CHECK_ERR(tsl_program_run(p, a, TSL_TARGET_CUDA), TSL_ERR_UNAVAILABLE, "'cuda'");
    CHECK_ERR(tsl_program_run(p, NULL, TSL_TARGET_INTERP), TSL_ERR_ARG, "args is NULL");
    CHECK_EQ_INT(tsl_program_run(NULL, a, TSL_TARGET_INTERP), TSL_ERR_ARG);
    /* a good run after all that, with storage owned by the args */
    CHECK_EQ_INT(tsl_program_run(p, a, TSL_TARGET_INTERP), TSL_OK);
    const DLTensor *C = tsl_args_output(a, "C");
    CHECK(C && C->ndim == 2 && C->shape[0] == 3 && C->shape[1] == 4);
    CHECK(tsl_args_output(a, "A") == NULL);
    CHECK(tsl_args_create(NULL) == NULL);
    tsl_args_free(NULL);
    tsl_args_free(a);
    tsl_tensor_free(A);
    tsl_tensor_free(B5);
    tsl_tensor_free(B7);
    tsl_tensor_free(R3);
    tsl_tensor_free(D);
    tsl_tensor_free(Cbad);
    tsl_tensor_free(Ci);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

static void test_missing_scalar_and_constant_dims(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def sc(float s, float(N,3) X) -> (Y) {\n"
                                  "  Y(n,j) = s * X(n,j)\n}\n");
    if (!p) goto out;
    tsl_args *a = tsl_args_create(p);
    DLTensor *X = rnd_f32(2, 5, 3), *X4 = rnd_f32(2, 5, 4);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "X", X), TSL_OK);
    CHECK_ERR(tsl_args_infer(a), TSL_ERR_ARG, "missing scalar parameter 's'");
    CHECK_EQ_INT(tsl_args_set_scalar(a, "s", 2.5), TSL_OK);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "X", X4), TSL_OK);
    CHECK_ERR(tsl_args_infer(a), TSL_ERR_SHAPE, "dimension 1 of 'X' is 4 but 'sc' declares it 3");
    CHECK_EQ_INT(tsl_args_set_tensor(a, "X", X), TSL_OK);
    CHECK_EQ_INT(tsl_program_run(p, a, TSL_TARGET_INTERP), TSL_OK);
    const DLTensor *Y = tsl_args_output(a, "Y");
    for (int k = 0; Y && k < 15; k++)
        CHECK_CLOSE(((float *)Y->data)[k], 2.5 * ((float *)X->data)[k], 1e-6);
    tsl_args_free(a);
    tsl_tensor_free(X);
    tsl_tensor_free(X4);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* A transposed view given through strides, and a view at a byte offset
 * into a larger buffer, give the same answer as plain C-order inputs. */
static void test_strides_and_offset(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, mm_src);
    if (!p) goto out;
    int64_t M = test_rand_int(1, 9), K = test_rand_int(1, 9), N = test_rand_int(1, 9);
    DLTensor *A = rnd_f32(2, M, K), *B = rnd_f32(2, K, N);
    /* At: storage (K, M) holding A transposed; the view has shape (M, K)
     * and strides (1, M). */
    DLTensor *At = rnd_f32(2, K, M);
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++)
            ((float *)At->data)[k * M + m] = ((float *)A->data)[m * K + k];
    int64_t at_shape[2] = {M, K}, at_str[2] = {1, M};
    DLTensor Aview = *At;
    Aview.shape = at_shape;
    Aview.strides = at_str;
    /* Bo: B placed after `pad` junk floats, addressed with byte_offset */
    int64_t pad = test_rand_int(1, 5), total = pad + K * N;
    DLTensor *Bbuf = rnd_f32(1, total, 0);
    memcpy((float *)Bbuf->data + pad, B->data, sizeof(float) * (size_t)(K * N));
    int64_t b_shape[2] = {K, N};
    DLTensor Bview = *Bbuf;
    Bview.ndim = 2;
    Bview.shape = b_shape;
    Bview.byte_offset = (uint64_t)pad * sizeof(float);
    /* C written through a strided output view too: column-major storage */
    DLTensor *Cst = rnd_f32(2, N, M);
    int64_t c_shape[2] = {M, N}, c_str[2] = {1, M};
    DLTensor Cview = *Cst;
    Cview.shape = c_shape;
    Cview.strides = c_str;
    tsl_args *a = tsl_args_create(p);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "A", &Aview), TSL_OK);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "B", &Bview), TSL_OK);
    CHECK_EQ_INT(tsl_args_set_output(a, "C", &Cview), TSL_OK);
    CHECK_MSG(tsl_program_run(p, a, TSL_TARGET_INTERP) == TSL_OK, "%s", tsl_context_error(ctx));
    CHECK(tsl_args_output(a, "C") == &Cview);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += (double)((float *)A->data)[m * K + k] * ((float *)B->data)[k * N + n];
            CHECK_CLOSE(((float *)Cst->data)[n * M + m], s, 1e-6);
        }
    tsl_args_free(a);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_tensor_free(At);
    tsl_tensor_free(Bbuf);
    tsl_tensor_free(Cst);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* An output sharing memory with a parameter (or another output) is a
 * clear error on every target; tensors side by side in one allocation are
 * fine. */
static void test_output_overlap(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, mm_src);
    if (!p) goto out;
    int64_t M = test_rand_int(2, 9), K = test_rand_int(2, 9), N = test_rand_int(2, 9);
    /* one buffer: A (M x K), then B (K x N), then room for C (M x N) */
    DLTensor *buf = rnd_f32(1, M * K + K * N + M * N, 0);
    int64_t ash[2] = {M, K}, bsh[2] = {K, N}, csh[2] = {M, N};
    DLTensor A = *buf, B = *buf, C = *buf;
    A.ndim = B.ndim = C.ndim = 2;
    A.shape = ash;
    B.shape = bsh;
    C.shape = csh;
    B.byte_offset = (uint64_t)(M * K) * sizeof(float);
    C.byte_offset = (uint64_t)(M * K + K * N) * sizeof(float);
    static const tsl_target targets[] = {TSL_TARGET_INTERP, TSL_TARGET_CPU};
    for (int ti = 0; ti < 2; ti++) {
        tsl_args *a = tsl_args_create(p);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "A", &A), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "B", &B), TSL_OK);
        C.byte_offset = (uint64_t)(M * K + K * N) * sizeof(float);
        CHECK_EQ_INT(tsl_args_set_output(a, "C", &C), TSL_OK);
        tsl_status st = tsl_program_run(p, a, targets[ti]);
        CHECK_MSG(st == TSL_OK || st == TSL_ERR_UNAVAILABLE, "side by side: %s", tsl_context_error(ctx));
        /* C's last row now overlaps B's last element */
        C.byte_offset = (uint64_t)(M * K + K * N - 1) * sizeof(float);
        CHECK_ERR(tsl_program_run(p, a, targets[ti]), TSL_ERR_ARG, "output 'C' shares memory with parameter 'B'");
        /* and C exactly over A */
        C.byte_offset = 0;
        CHECK_ERR(tsl_program_run(p, a, targets[ti]), TSL_ERR_ARG, "output 'C' shares memory with parameter 'A'");
        tsl_args_free(a);
    }
    tsl_tensor_free(buf);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* Strides the caller cannot vouch for (issue 11): an output whose stride
 * 0 (or interleaved dims) puts two elements in one location, a stride
 * reaching past the address space (it segfaulted). A reversed and a
 * transposed output still bind, the latter runs against a reference
 * computed here. */
static void test_bad_strides(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, mm_src);
    if (!p) goto out;
    int64_t M = test_rand_int(2, 9), K = test_rand_int(1, 9), N = test_rand_int(2, 9);
    DLTensor *A = rnd_f32(2, M, K), *B = rnd_f32(2, K, N), *Cbuf = rnd_f32(2, N, 2 * M);
    tsl_args *a = tsl_args_create(p);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "A", A), TSL_OK);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "B", B), TSL_OK);
    int64_t csh[2] = {M, N};
    DLTensor C = *Cbuf;
    C.shape = csh;
    int64_t s0[2] = {0, 1}, sx[2] = {2, 1}, big[2] = {(int64_t)1 << 45, 1}, neg[2] = {-N, 1};
    C.strides = s0;
    CHECK_ERR(tsl_args_set_output(a, "C", &C), TSL_ERR_ARG, "dim 0's stride 0 makes two of its elements one");
    C.strides = sx; /* rows 2 apart, each N long: rows overlap when N > 2 */
    if (N > 2) CHECK_ERR(tsl_args_set_output(a, "C", &C), TSL_ERR_ARG, "makes two of its elements one");
    C.strides = big;
    CHECK_ERR(tsl_args_set_output(a, "C", &C), TSL_ERR_ARG, "beyond the address space");
    CHECK_ERR(tsl_args_set_tensor(a, "A", &C), TSL_ERR_ARG, "beyond the address space");
    C.strides = neg; /* last row first (NumPy's reversed views) */
    C.byte_offset = (uint64_t)((M - 1) * N) * sizeof(float);
    CHECK_EQ_INT(tsl_args_set_output(a, "C", &C), TSL_OK);
    /* the transposed view of Cbuf (N x 2M): C(m, n) at n * 2M + m */
    int64_t tr[2] = {1, 2 * M};
    C.strides = tr;
    C.byte_offset = 0;
    CHECK_EQ_INT(tsl_args_set_output(a, "C", &C), TSL_OK);
    CHECK_EQ_INT(tsl_program_run(p, a, TSL_TARGET_INTERP), TSL_OK);
    const float *x = A->data, *y = B->data, *c = Cbuf->data;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += (double)x[m * K + k] * y[k * N + n];
            CHECK_CLOSE(c[n * 2 * M + m], s, 1e-5);
        }
    tsl_args_free(a);
    tsl_program_free(p);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_tensor_free(Cbuf);
out:
    tsl_context_free(ctx);
}

/* In/out parameters are bound as tensors, never as output storage. */
static void test_inout_binding(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def inc(float(N) Y) -> (Y) {\n  Y(i) += 1\n}\n");
    if (!p) goto out;
    int64_t N = test_rand_int(1, 20);
    DLTensor *Y = rnd_f32(1, N, 0);
    float *y0 = malloc(sizeof(float) * (size_t)N);
    memcpy(y0, Y->data, sizeof(float) * (size_t)N);
    tsl_args *a = tsl_args_create(p);
    CHECK_ERR(tsl_args_set_output(a, "Y", Y), TSL_ERR_ARG, "in/out");
    CHECK_EQ_INT(tsl_args_set_tensor(a, "Y", Y), TSL_OK);
    CHECK_EQ_INT(tsl_program_run(p, a, TSL_TARGET_INTERP), TSL_OK);
    CHECK(tsl_args_output(a, "Y") == Y);
    for (int64_t i = 0; i < N; i++) CHECK_CLOSE(((float *)Y->data)[i], y0[i] + 1.0f, 1e-6);
    free(y0);
    tsl_args_free(a);
    tsl_tensor_free(Y);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* A size symbol that only a where clause uses is supplied with
 * tsl_args_set_scalar; one that an input also fixes must agree with it. */
static void test_size_symbols_set(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def bc(float(N) A) -> (O) {\n"
                                  "  O(i,j) = A(i) where j in 0:R\n}\n");
    if (!p) goto out;
    int64_t N = test_rand_int(1, 9), R = test_rand_int(1, 9);
    DLTensor *A = rnd_f32(1, N, 0);
    tsl_args *a = tsl_args_create(p);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "A", A), TSL_OK);
    CHECK(tsl_args_infer(a) != TSL_OK);
    CHECK_MSG(strstr(tsl_context_error(ctx), "R") != NULL, "%s", tsl_context_error(ctx));
    CHECK_ERR(tsl_args_set_scalar(a, "R", -2), TSL_ERR_ARG, "non-negative integer");
    CHECK_ERR(tsl_args_set_scalar(a, "R", 2.5), TSL_ERR_ARG, "non-negative integer");
    CHECK_EQ_INT(tsl_args_set_scalar(a, "R", (double)R), TSL_OK);
    CHECK_MSG(tsl_program_run(p, a, TSL_TARGET_INTERP) == TSL_OK, "%s", tsl_context_error(ctx));
    const DLTensor *O = tsl_args_output(a, "O");
    CHECK(O && O->ndim == 2 && O->shape[0] == N && O->shape[1] == R);
    for (int64_t i = 0; O && i < N; i++)
        for (int64_t j = 0; j < R; j++)
            CHECK(((float *)O->data)[i * R + j] == ((float *)A->data)[i]);
    CHECK_EQ_INT(tsl_args_set_scalar(a, "N", (double)(N + 1)), TSL_OK);
    CHECK_ERR(tsl_args_infer(a), TSL_ERR_SHAPE, "but");
    CHECK_MSG(strstr(tsl_context_error(ctx), "as set") && strstr(tsl_context_error(ctx), "A dim 0"),
              "%s", tsl_context_error(ctx));
    tsl_args_free(a);
    tsl_tensor_free(A);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* A size only a `where` bound uses (one-hot's class count) is listed by
 * tsl_program_size_name and bound with tsl_args_set_size; a name that is
 * no size is an error listing the sizes; constant dims have extents. */
static void test_where_only_size(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def onehot(int64(N) L, float(N,3) W) -> (Y) {\n"
                                  "  Y(n,c) = L(n) == c ? W(n,1) : 0.0 where c in 0:C\n}\n");
    if (!p) goto out;
    CHECK_EQ_INT(tsl_program_size_count(p), 2);
    CHECK(tsl_program_size_name(p, 0) && tsl_program_size_name(p, 1) && !tsl_program_size_name(p, 2));
    CHECK(!strcmp(tsl_program_size_name(p, 0), "N") && !strcmp(tsl_program_size_name(p, 1), "C"));
    int64_t ext[TSL_MAX_RANK];
    CHECK_EQ_INT(tsl_program_param_extents(p, 1, ext), TSL_OK);
    CHECK(ext[0] == -1 && ext[1] == 3);
    int64_t N = test_rand_int(1, 9), C = test_rand_int(2, 9), shape[2] = {N, 3};
    DLTensor *L = tsl_tensor_alloc(TSL_DTYPE_I64, 1, &N), *W = tsl_tensor_alloc(TSL_DTYPE_F32, 2, shape);
    for (int64_t i = 0; i < N; i++) ((int64_t *)L->data)[i] = test_rand_int(0, C - 1);
    for (int64_t i = 0; i < 3 * N; i++) ((float *)W->data)[i] = (float)test_rand_double(0.5, 1.5);
    for (int t = 0; t < 2; t++) {
        tsl_target target = t ? TSL_TARGET_CPU : TSL_TARGET_INTERP;
        tsl_args *a = tsl_args_create(p);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "L", L), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "W", W), TSL_OK);
        CHECK_ERR(tsl_args_infer(a), TSL_ERR_SHAPE, "tsl_args_set_size");
        CHECK_ERR(tsl_args_set_size(a, "K", 3), TSL_ERR_ARG, "its sizes: N, C");
        CHECK_ERR(tsl_args_set_size(a, "C", -1), TSL_ERR_ARG, "non-negative");
        CHECK_EQ_INT(tsl_args_set_size(a, "C", C), TSL_OK);
        CHECK_MSG(tsl_program_run(p, a, target) == TSL_OK, "%s", tsl_context_error(ctx));
        const DLTensor *Y = tsl_args_output(a, "Y");
        CHECK(Y && Y->ndim == 2 && Y->shape[0] == N && Y->shape[1] == C);
        for (int64_t i = 0; Y && i < N; i++)
            for (int64_t c = 0; c < C; c++)
                CHECK(((float *)Y->data)[i * C + c] ==
                      (((int64_t *)L->data)[i] == c ? ((float *)W->data)[i * 3 + 1] : 0.0f));
        tsl_args_free(a);
    }
    tsl_tensor_free(L);
    tsl_tensor_free(W);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* Descriptors are borrowed: a change made to one after binding is seen by
 * the next run (shapes re-inferred, owned outputs resized, a rank that no
 * longer matches is an error naming the parameter). */
static void test_descriptor_changed_after_binding(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def sq(float(N) X) -> (Y) {\n  Y(i) = X(i) * X(i)\n}\n");
    if (!p) goto out;
    DLTensor *X = rnd_f32(1, 13, 0);
    int64_t n0 = X->shape[0];
    tsl_args *a = tsl_args_create(p);
    CHECK_EQ_INT(tsl_args_set_tensor(a, "X", X), TSL_OK);
    CHECK_EQ_INT(tsl_program_run(p, a, TSL_TARGET_INTERP), TSL_OK);
    const DLTensor *Y = tsl_args_output(a, "Y");
    CHECK(Y && Y->shape[0] == 13);
    X->shape[0] = 5; /* a shorter view of the same data */
    CHECK_EQ_INT(tsl_program_run(p, a, TSL_TARGET_INTERP), TSL_OK);
    Y = tsl_args_output(a, "Y");
    CHECK(Y && Y->shape[0] == 5);
    for (int i = 0; Y && i < 5; i++)
        CHECK_CLOSE(((float *)Y->data)[i], (double)((float *)X->data)[i] * ((float *)X->data)[i], 1e-6);
    X->shape[0] = n0;
    X->ndim = 2;
    CHECK_ERR(tsl_program_run(p, a, TSL_TARGET_INTERP), TSL_ERR_SHAPE, "parameter 'X' has rank 1");
    CHECK(tsl_args_output(a, "Y") == NULL);
    X->ndim = 1;
    tsl_args_free(a);
    tsl_tensor_free(X);
    tsl_program_free(p);
out:
    tsl_context_free(ctx);
}

/* A TESSEL_TARGET that names no target is an error from every API call
 * that takes the default target, naming the variable and its values (it
 * was ignored: the run went to the default). The setting stands for the
 * variable (runtime.h; api/env.c reads it). */
static void test_bad_target_setting(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, mm_src);
    tsl_args *a = tsl_args_create(p);
    DLTensor *A = rnd_f32(2, test_rand_int(1, 9), 7), *B = rnd_f32(2, 7, test_rand_int(1, 9));
    CHECK(tsl_args_set_tensor(a, "A", A) == TSL_OK && tsl_args_set_tensor(a, "B", B) == TSL_OK);
    const char *old = rt_settings_get()->target;
    char *keep = old ? strdup(old) : NULL;
    static const char *const bad[] = {"gpux", "CPU", "cuda ", "interp,cpu"};
    const char *want = "TESSEL_TARGET=";
    for (size_t i = 0; i < TSL_COUNTOF(bad); i++) {
        TEST_SETTING(target, bad[i]);
        CHECK_EQ_INT(tsl_target_default(), TSL_TARGET_INVALID);
        tsl_target t = TSL_TARGET_CPU;
        CHECK_ERR(tsl_target_choose(ctx, &t), TSL_ERR_ARG, want);
        CHECK_ERR(tsl_target_choose(ctx, &t), TSL_ERR_ARG, bad[i]);
        CHECK_ERR(tsl_target_choose(ctx, &t), TSL_ERR_ARG, "is not a target (interp, cpu or cuda");
        CHECK_EQ_INT(t, TSL_TARGET_INVALID);
        CHECK_ERR(tsl_program_run(p, a, tsl_target_default()), TSL_ERR_ARG, "tsl_program_run: TESSEL_TARGET=");
        tsl_bench_result br;
        CHECK_ERR(tsl_program_bench(p, a, tsl_target_default(), NULL, &br), TSL_ERR_ARG, want);
        tsl_tune_result tr;
        CHECK_ERR(tsl_program_tune(p, a, tsl_target_default(), NULL, &tr), TSL_ERR_ARG, want);
    }
    /* a good one is taken; unset gives the CPU or CUDA */
    TEST_SETTING(target, "interp");
    tsl_target t = TSL_TARGET_INVALID;
    CHECK_EQ_INT(tsl_target_choose(ctx, &t), TSL_OK);
    CHECK_EQ_INT(t, TSL_TARGET_INTERP);
    CHECK_EQ_INT(tsl_program_run(p, a, tsl_target_default()), TSL_OK);
    TEST_SETTING(target, NULL);
    CHECK(tsl_target_default() == TSL_TARGET_CPU || tsl_target_default() == TSL_TARGET_CUDA);
    CHECK_ERR(tsl_program_run(p, a, (tsl_target)7), TSL_ERR_ARG, "unknown target 7");
    TEST_SETTING(target, keep);
    free(keep);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_args_free(a);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* tsl_tensor_check_buffer against a brute-force walk over every element's
 * bytes, on random shapes (size 0 and 1 dims too), strides (negative and
 * zero), byte offsets, dtypes, data pointers around the buffer and buffer
 * sizes; the message says "before" or "past" as the walk finds. Then
 * fixed cases: C order, overflow, a NULL buffer, a packed int4 tensor. */
static void test_check_buffer(void)
{
    static const tsl_dtype dts[] = {TSL_DTYPE_I8, TSL_DTYPE_F16, TSL_DTYPE_F32, TSL_DTYPE_F64};
    static char buf[512];
    tsl_context *ctx = tsl_context_create();
    int ok = 0, before = 0, past = 0;
    for (int round = 0; round < 400; round++) {
        tsl_dtype dt = dts[test_rand_int(0, 3)];
        int64_t esz = (int64_t)tsl_dtype_size(dt), shape[TSL_MAX_RANK], strides[TSL_MAX_RANK];
        int rank = (int)test_rand_int(0, 4);
        for (int d = 0; d < rank; d++) {
            shape[d] = test_rand_int(0, 9) == 0 ? 0 : test_rand_int(1, 5);
            strides[d] = test_rand_int(-6, 6);
        }
        int c_order = test_rand_int(0, 5) == 0;
        for (int d = rank - 1, c = 1; c_order && d >= 0; c *= (int)shape[d], d--) strides[d] = c;
        DLTensor t = {.ndim = rank, .shape = shape, .strides = c_order ? NULL : strides,
                      .dtype = tsl_dtype_to_dlpack(dt), .device = {kDLCPU, 0},
                      .byte_offset = (uint64_t)test_rand_int(0, 40)};
        char *b0 = buf + 200;
        size_t bytes = (size_t)test_rand_int(0, 200);
        t.data = b0 + test_rand_int(-120, 120); /* within buf: never read */
        /* the walk: every element's bytes, by counting through the index space */
        int64_t idx[TSL_MAX_RANK] = {0}, n = 1;
        for (int d = 0; d < rank; d++) n *= shape[d];
        int w_before = 0, w_past = 0;
        for (int64_t e = 0; e < n; e++) {
            int64_t o = 0;
            for (int d = 0; d < rank; d++) o += idx[d] * strides[d];
            const char *at = (const char *)t.data + t.byte_offset + o * esz;
            w_before |= at < b0;
            w_past |= at + esz > b0 + bytes;
            for (int d = rank - 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
        }
        tsl_status st = tsl_tensor_check_buffer(ctx, &t, b0, bytes);
        const char *msg = tsl_context_error(ctx);
        CHECK_MSG((st == TSL_OK) == (!w_before && !w_past),
                  "round %d: rank %d, byte_offset %llu, data at %lld from a buffer of %zu bytes: %s, the walk: %s%s",
                  round, rank, (unsigned long long)t.byte_offset, (long long)((char *)t.data - b0), bytes,
                  st ? msg : "ok", w_before ? "before " : "", w_past ? "past" : "");
        if (st && w_before) CHECK_MSG(strstr(msg, "before the buffer's start"), "round %d: %s", round, msg);
        if (st && !w_before) CHECK_MSG(strstr(msg, "past the buffer's end"), "round %d: %s", round, msg);
        ok += st == TSL_OK;
        before += w_before;
        past += !w_before && w_past;
    }
    CHECK_MSG(ok > 20 && before > 20 && past > 20, "the random cases cover too little: %d ok, %d before, %d past", ok,
              before, past);
    /* fixed cases: a 2x3 float32 view of a 24-byte buffer fits exactly */
    int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
    DLTensor t = {.data = buf, .ndim = 2, .shape = shape, .strides = NULL,
                  .dtype = tsl_dtype_to_dlpack(TSL_DTYPE_F32), .device = {kDLCPU, 0}};
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &t, buf, 24), TSL_OK);
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &t, buf, 23), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "1 bytes past the buffer's end (23 bytes): element (1, 2)"), "%s",
              tsl_context_error(ctx));
    /* a reversed dim names itself */
    strides[0] = -3;
    t.strides = strides;
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &t, buf, 24), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "12 bytes before the buffer's start: element (1, 0), reached through "
                                             "dim 0 (size 2, stride -3)"), "%s", tsl_context_error(ctx));
    t.byte_offset = 12;
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &t, buf, 24), TSL_OK);
    /* strides that overflow, a buffer that wraps, a NULL buffer: errors, no crash */
    strides[0] = INT64_MAX / 2;
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &t, buf, 24), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "overflows"), "%s", tsl_context_error(ctx));
    strides[0] = 3;
    t.byte_offset = UINT64_MAX;
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &t, buf, 24), TSL_ERR_ARG);
    t.byte_offset = 0;
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &t, buf, SIZE_MAX), TSL_ERR_ARG);
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &t, NULL, 24), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "NULL"), "%s", tsl_context_error(ctx));
    CHECK_EQ_INT(tsl_tensor_check_buffer(NULL, &t, buf, 24), TSL_OK); /* no context: fine */
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, NULL, buf, 24), TSL_ERR_ARG);
    /* no element: nothing addressed, whatever the pointers */
    shape[1] = 0;
    t.data = NULL;
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &t, NULL, 0), TSL_OK);
    /* packed int4: 5 elements take 3 bytes */
    int64_t n5 = 5;
    DLTensor q = {.data = buf, .ndim = 1, .shape = &n5, .dtype = tsl_dtype_to_dlpack(TSL_DTYPE_I4),
                  .device = {kDLCPU, 0}};
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &q, buf, 3), TSL_OK);
    CHECK_EQ_INT(tsl_tensor_check_buffer(ctx, &q, buf, 2), TSL_ERR_ARG);
    tsl_context_free(ctx);
}

TEST_SUITE(api) = {
    {"bad_target_setting", test_bad_target_setting},
    {"compile_errors", test_compile_errors},
    {"introspection_emit", test_introspection_emit},
    {"bind_errors", test_bind_errors},
    {"missing_scalar_and_constant_dims", test_missing_scalar_and_constant_dims},
    {"strides_and_offset", test_strides_and_offset},
    {"output_overlap", test_output_overlap},
    {"bad_strides", test_bad_strides},
    {"inout_binding", test_inout_binding},
    {"size_symbols_set", test_size_symbols_set},
    {"where_only_size", test_where_only_size},
    {"descriptor_changed_after_binding", test_descriptor_changed_after_binding},
    {"check_buffer", test_check_buffer},
    {0},
};
