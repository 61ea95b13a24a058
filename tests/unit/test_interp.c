/* test_interp.c — the reference interpreter against loops written here:
 * contractions, convolutions, pooling, gathers (in and out of range),
 * reductions with and without `!`, integer exactness and wrap-around,
 * float16 rounding, zero-dim and zero-size tensors, temporaries. Inputs are
 * fresh random values; outputs are poisoned before every run. */
#include <string.h>

#include "base/base.h"
#include "interp/interp.h"
#include "test.h"

/* ---- helpers ---------------------------------------------------------------- */

static tsl_program *compile(tsl_context *ctx, const char *src)
{
    tsl_program *p = NULL;
    tsl_status st = tsl_program_compile(ctx, src, "t.tc", NULL, &p);
    CHECK_MSG(st == TSL_OK, "compile failed (%s):\n%s", tsl_status_name(st),
              tsl_context_error(ctx));
    return p;
}

static int64_t numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

static tsl_dtype dt_of(const DLTensor *t)
{
    tsl_dtype d = TSL_DTYPE_F32;
    tsl_dtype_from_dlpack(t->dtype, &d);
    return d;
}

/* Element k (C order) of a C-order tensor, as double. */
static double at(const DLTensor *t, int64_t k)
{
    return dtype_load(dt_of(t), (const char *)t->data + k * (int64_t)tsl_dtype_size(dt_of(t)));
}

static void set_at(DLTensor *t, int64_t k, double v)
{
    dtype_store(dt_of(t), (char *)t->data + k * (int64_t)tsl_dtype_size(dt_of(t)), v);
}

/* A C-order tensor of fresh random values in [lo, hi) (integers: rounded). */
static DLTensor *rnd(tsl_dtype dt, double lo, double hi, int rank, int64_t d0, int64_t d1,
                     int64_t d2)
{
    int64_t shape[3] = {d0, d1, d2};
    DLTensor *t = tsl_tensor_alloc(dt, rank, shape);
    for (int64_t k = 0; k < numel(t); k++) {
        double v = test_rand_double(lo, hi);
        set_at(t, k, dtype_info_of(dt)->is_float ? v : floor(v));
    }
    return t;
}

/* An output tensor filled with NaN (floats) or a marker value (ints). */
static DLTensor *poisoned(tsl_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    int64_t shape[3] = {d0, d1, d2};
    DLTensor *t = tsl_tensor_alloc(dt, rank, shape);
    memset(t->data, 0x5b, (size_t)numel(t) * tsl_dtype_size(dt));
    if (dtype_info_of(dt)->is_float)
        for (int64_t k = 0; k < numel(t); k++) set_at(t, k, NAN);
    return t;
}

/* Bind names[i] = ts[i] (inputs, then outputs after a NULL name), run. */
static tsl_status run(tsl_context *ctx, tsl_program *p, const char *const *in_names,
                      DLTensor *const *ins, const char *const *out_names, DLTensor *const *outs)
{
    tsl_args *a = tsl_args_create(p);
    tsl_status st = TSL_OK;
    for (int i = 0; in_names && in_names[i] && !st; i++)
        st = tsl_args_set_tensor(a, in_names[i], ins[i]);
    for (int i = 0; out_names && out_names[i] && !st; i++)
        st = tsl_args_set_output(a, out_names[i], outs[i]);
    if (!st) st = tsl_program_run(p, a, TSL_TARGET_INTERP);
    tsl_args_free(a);
    return st;
}

static int64_t pick_size(void)
{
    static const int64_t sizes[] = {1, 2, 3, 5, 7, 11, 13, 17};
    return sizes[test_rand_int(0, (long)TSL_COUNTOF(sizes) - 1)];
}

/* ---- float programs --------------------------------------------------------- */

static void test_matmul(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def mm(float(M,K) A, float(K,N) B) -> (C) {\n"
                                  "  C(m,n) +=! A(m,k) * B(k,n)\n}\n");
    for (int rep = 0; p && rep < 6; rep++) {
        int64_t M = rep == 0 ? 1 : pick_size(), K = rep == 0 ? 1 : pick_size(),
                N = rep == 0 ? 1 : pick_size();
        DLTensor *A = rnd(TSL_DTYPE_F32, -1, 1, 2, M, K, 0), *B = rnd(TSL_DTYPE_F32, -1, 1, 2, K, N, 0);
        DLTensor *C = poisoned(TSL_DTYPE_F32, 2, M, N, 0);
        CHECK_MSG(run(ctx, p, (const char *[]){"A", "B", 0}, (DLTensor *[]){A, B},
                      (const char *[]){"C", 0}, (DLTensor *[]){C}) == TSL_OK,
                  "%s", tsl_context_error(ctx));
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) s += at(A, m * K + k) * at(B, k * N + n);
                CHECK_CLOSE(at(C, m * N + n), s, 1e-6);
            }
        tsl_tensor_free(A);
        tsl_tensor_free(B);
        tsl_tensor_free(C);
    }
    tsl_program_free(p);
    tsl_context_free(ctx);
}

static void test_matvec_scalar(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def mv(float64 alpha, double(M,K) A, double(K) x) -> (y) {\n"
                                  "  y(m) +=! alpha * A(m,k) * x(k)\n}\n");
    int64_t M = pick_size(), K = pick_size();
    DLTensor *A = rnd(TSL_DTYPE_F64, -1, 1, 2, M, K, 0), *x = rnd(TSL_DTYPE_F64, -1, 1, 1, K, 0, 0);
    double alpha = test_rand_double(0.5, 2);
    tsl_args *a = p ? tsl_args_create(p) : NULL;
    if (a) {
        CHECK_EQ_INT(tsl_args_set_tensor(a, "A", A), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "x", x), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_scalar(a, "alpha", alpha), TSL_OK);
        CHECK_MSG(tsl_program_run(p, a, TSL_TARGET_INTERP) == TSL_OK, "%s", tsl_context_error(ctx));
        const DLTensor *y = tsl_args_output(a, "y"); /* owned by the args */
        CHECK(y != NULL);
        if (y) {
            CHECK_EQ_INT(y->ndim, 1);
            CHECK_EQ_INT(y->shape[0], M);
            for (int64_t m = 0; m < M; m++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) s += alpha * at(A, m * K + k) * at(x, k);
                CHECK_CLOSE(at(y, m), s, 1e-12);
            }
        }
    }
    tsl_args_free(a);
    tsl_tensor_free(A);
    tsl_tensor_free(x);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

static void test_conv1d(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def conv1d(float(B,L) I, float(F,W) Wt) -> (O) {\n"
                                  "  O(b,f,l) +=! I(b, l + w) * Wt(f,w)\n}\n");
    int64_t B = pick_size(), W = pick_size(), L = W + pick_size() - 1, F = pick_size();
    int64_t Lo = L - W + 1;
    DLTensor *I = rnd(TSL_DTYPE_F32, -1, 1, 2, B, L, 0), *Wt = rnd(TSL_DTYPE_F32, -1, 1, 2, F, W, 0);
    DLTensor *O = poisoned(TSL_DTYPE_F32, 3, B, F, Lo);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"I", "Wt", 0}, (DLTensor *[]){I, Wt},
                       (const char *[]){"O", 0}, (DLTensor *[]){O}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < F; f++)
            for (int64_t l = 0; l < Lo; l++) {
                double s = 0;
                for (int64_t w = 0; w < W; w++) s += at(I, b * L + l + w) * at(Wt, f * W + w);
                CHECK_CLOSE(at(O, (b * F + f) * Lo + l), s, 1e-6);
            }
    tsl_tensor_free(I);
    tsl_tensor_free(Wt);
    tsl_tensor_free(O);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* max=! over a where-bounded window, on all-negative data (an identity of
 * 0 instead of -inf would show). */
static void test_maxpool_negative(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def pool(float(H,W) I) -> (O) {\n"
                                  "  O(i,j) max=! I(2*i + kh, 2*j + kw) where kh in 0:2, kw in 0:2\n"
                                  "}\n");
    int64_t H = 2 * pick_size() + test_rand_int(0, 1), W = 2 * pick_size() + test_rand_int(0, 1);
    int64_t Ho = H / 2, Wo = W / 2;
    DLTensor *I = rnd(TSL_DTYPE_F32, -100, -1, 2, H, W, 0);
    DLTensor *O = poisoned(TSL_DTYPE_F32, 2, Ho, Wo, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"I", 0}, (DLTensor *[]){I},
                       (const char *[]){"O", 0}, (DLTensor *[]){O}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t i = 0; i < Ho; i++)
        for (int64_t j = 0; j < Wo; j++) {
            double m = -INFINITY;
            for (int kh = 0; kh < 2; kh++)
                for (int kw = 0; kw < 2; kw++) m = fmax(m, at(I, (2 * i + kh) * W + 2 * j + kw));
            CHECK_CLOSE(at(O, i * Wo + j), m, 0);
        }
    tsl_tensor_free(I);
    tsl_tensor_free(O);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

static const char *gather_src = "def gather(float(N,D) X, int32(B) Idx) -> (O) {\n"
                                "  O(b,d) = X(Idx(b), d)\n}\n";

static void test_gather(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, gather_src);
    int64_t N = pick_size(), D = pick_size(), B = pick_size();
    DLTensor *X = rnd(TSL_DTYPE_F32, -1, 1, 2, N, D, 0), *Idx = rnd(TSL_DTYPE_I32, 0, (double)N, 1, B, 0, 0);
    DLTensor *O = poisoned(TSL_DTYPE_F32, 2, B, D, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"X", "Idx", 0}, (DLTensor *[]){X, Idx},
                       (const char *[]){"O", 0}, (DLTensor *[]){O}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t b = 0; b < B; b++)
        for (int64_t d = 0; d < D; d++) CHECK(at(O, b * D + d) == at(X, (int64_t)at(Idx, b) * D + d));
    tsl_tensor_free(X);
    tsl_tensor_free(Idx);
    tsl_tensor_free(O);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

static void test_gather_out_of_range(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, gather_src);
    DLTensor *X = rnd(TSL_DTYPE_F32, -1, 1, 2, 5, 3, 0), *Idx = rnd(TSL_DTYPE_I32, 0, 5, 1, 4, 0, 0);
    DLTensor *O = poisoned(TSL_DTYPE_F32, 2, 4, 3, 0);
    int64_t bad = test_rand_int(0, 3);
    ((int32_t *)Idx->data)[bad] = 9;
    CHECK_EQ_INT(run(ctx, p, (const char *[]){"X", "Idx", 0}, (DLTensor *[]){X, Idx},
                     (const char *[]){"O", 0}, (DLTensor *[]){O}),
                 TSL_ERR_BOUNDS);
    const char *msg = tsl_context_error(ctx);
    CHECK_MSG(strstr(msg, "t.tc:2:") && strstr(msg, "error: index 9 out of range for "
                                                     "dimension 0 of 'X' (size 5)"),
              "message: %s", msg);
    CHECK_MSG(strstr(msg, "O(b,d) = X(Idx(b), d)\n") != NULL, "source line: %s", msg);
    ((int32_t *)Idx->data)[bad] = -1;
    CHECK_EQ_INT(run(ctx, p, (const char *[]){"X", "Idx", 0}, (DLTensor *[]){X, Idx},
                     (const char *[]){"O", 0}, (DLTensor *[]){O}),
                 TSL_ERR_BOUNDS);
    CHECK(strstr(tsl_context_error(ctx), "index -1 out of range") != NULL);
    tsl_tensor_free(X);
    tsl_tensor_free(Idx);
    tsl_tensor_free(O);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* `+=` (no `!`) accumulates into an in/out tensor's values. */
static void test_inout_accumulate(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def acc(float(M,K) A, float(M) Y) -> (Y) {\n"
                                  "  Y(m) += A(m,k)\n}\n");
    int64_t M = pick_size(), K = pick_size();
    DLTensor *A = rnd(TSL_DTYPE_F32, -1, 1, 2, M, K, 0), *Y = rnd(TSL_DTYPE_F32, 1, 2, 1, M, 0, 0);
    double *y0 = malloc(sizeof(double) * (size_t)M);
    for (int64_t m = 0; m < M; m++) y0[m] = at(Y, m);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"A", "Y", 0}, (DLTensor *[]){A, Y}, NULL, NULL) ==
                       TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t m = 0; m < M; m++) {
        double s = y0[m];
        for (int64_t k = 0; k < K; k++) s += at(A, m * K + k);
        CHECK_CLOSE(at(Y, m), s, 1e-6);
    }
    free(y0);
    tsl_tensor_free(A);
    tsl_tensor_free(Y);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

static void test_product_bang(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def prod(float(M,K) A) -> (P) {\n  P(m) *=! A(m,k)\n}\n");
    int64_t M = pick_size(), K = pick_size();
    DLTensor *A = rnd(TSL_DTYPE_F32, 0.5, 1.5, 2, M, K, 0), *P = poisoned(TSL_DTYPE_F32, 1, M, 0, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"A", 0}, (DLTensor *[]){A},
                       (const char *[]){"P", 0}, (DLTensor *[]){P}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t m = 0; m < M; m++) {
        double s = 1;
        for (int64_t k = 0; k < K; k++) s *= at(A, m * K + k);
        CHECK_CLOSE(at(P, m), s, 1e-6);
    }
    tsl_tensor_free(A);
    tsl_tensor_free(P);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* s() +=! A(i): a zero-dim output; min=! and max=! alongside. */
static void test_zero_dim_reduction(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def stats(float(N) A) -> (s, lo, hi) {\n"
                                  "  s() +=! A(i)\n  lo() min=! A(i)\n  hi() max=! A(i)\n}\n");
    int64_t N = pick_size();
    DLTensor *A = rnd(TSL_DTYPE_F32, -10, 10, 1, N, 0, 0);
    DLTensor *s = poisoned(TSL_DTYPE_F32, 0, 0, 0, 0), *lo = poisoned(TSL_DTYPE_F32, 0, 0, 0, 0),
             *hi = poisoned(TSL_DTYPE_F32, 0, 0, 0, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"A", 0}, (DLTensor *[]){A},
                       (const char *[]){"s", "lo", "hi", 0}, (DLTensor *[]){s, lo, hi}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    double sum = 0, mn = INFINITY, mx = -INFINITY;
    for (int64_t i = 0; i < N; i++) {
        sum += at(A, i);
        mn = fmin(mn, at(A, i));
        mx = fmax(mx, at(A, i));
    }
    CHECK_CLOSE(at(s, 0), sum, 1e-6);
    CHECK_CLOSE(at(lo, 0), mn, 0);
    CHECK_CLOSE(at(hi, 0), mx, 0);
    tsl_tensor_free(A);
    tsl_tensor_free(s);
    tsl_tensor_free(lo);
    tsl_tensor_free(hi);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* A temporary chain: softmax over rows. */
static void test_temporaries_softmax(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def softmax(float(N,D) X) -> (Y) {\n"
                                  "  mx(n) max=! X(n,d)\n"
                                  "  e(n,d) = exp(X(n,d) - mx(n))\n"
                                  "  s(n) +=! e(n,d)\n"
                                  "  Y(n,d) = e(n,d) / s(n)\n}\n");
    int64_t N = pick_size(), D = pick_size();
    DLTensor *X = rnd(TSL_DTYPE_F32, -5, 5, 2, N, D, 0), *Y = poisoned(TSL_DTYPE_F32, 2, N, D, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"X", 0}, (DLTensor *[]){X},
                       (const char *[]){"Y", 0}, (DLTensor *[]){Y}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t n = 0; n < N; n++) {
        double m = -INFINITY, s = 0;
        for (int64_t d = 0; d < D; d++) m = fmax(m, at(X, n * D + d));
        for (int64_t d = 0; d < D; d++) s += exp(at(X, n * D + d) - m);
        for (int64_t d = 0; d < D; d++) CHECK_CLOSE(at(Y, n * D + d), exp(at(X, n * D + d) - m) / s, 1e-6);
    }
    tsl_tensor_free(X);
    tsl_tensor_free(Y);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* Lower triangle through a comparison of index variables and ?:. */
static void test_select_on_indices(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def tril(float(N,N) X) -> (Y) {\n"
                                  "  Y(i,j) = i >= j ? X(i,j) : 0\n}\n");
    int64_t N = pick_size();
    DLTensor *X = rnd(TSL_DTYPE_F32, 1, 2, 2, N, N, 0), *Y = poisoned(TSL_DTYPE_F32, 2, N, N, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"X", 0}, (DLTensor *[]){X},
                       (const char *[]){"Y", 0}, (DLTensor *[]){Y}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < N; j++) CHECK(at(Y, i * N + j) == (i >= j ? at(X, i * N + j) : 0));
    tsl_tensor_free(X);
    tsl_tensor_free(Y);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* float16 output: computed in float64, rounded once to the nearest half. */
static void test_float16_rounding(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def h(half(N,K) A, half(N,K) B) -> (C) {\n"
                                  "  C(n) +=! A(n,k) * B(n,k)\n}\n");
    int64_t N = pick_size(), K = pick_size();
    DLTensor *A = rnd(TSL_DTYPE_F16, -4, 4, 2, N, K, 0), *B = rnd(TSL_DTYPE_F16, -4, 4, 2, N, K, 0);
    DLTensor *C = poisoned(TSL_DTYPE_F16, 1, N, 0, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"A", "B", 0}, (DLTensor *[]){A, B},
                       (const char *[]){"C", 0}, (DLTensor *[]){C}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t n = 0; n < N; n++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++) s += at(A, n * K + k) * at(B, n * K + k);
        uint16_t want = f32_to_f16((float)s);
        CHECK_MSG(((uint16_t *)C->data)[n] == want, "n=%lld: %04x vs %04x (%g)", (long long)n,
                  ((uint16_t *)C->data)[n], want, s);
    }
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_tensor_free(C);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* ?: and && evaluate only what C would: a guarded gather with negative
 * (padding) indices never reads out of range. Also a nested gather. */
static void test_guarded_gather(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def gg(float(N) X, int64(B) Idx, int32(N) J) -> (O, P, Q) {\n"
                                  "  O(b) = Idx(b) >= 0 ? X(Idx(b)) : -1\n"
                                  "  P(b) = Idx(b) >= 0 && X(Idx(b)) > 0 ? 1 : 0\n"
                                  "  Q(n) = X(J(J(n)))\n}\n");
    int64_t N = pick_size(), B = pick_size() + 1;
    DLTensor *X = rnd(TSL_DTYPE_F32, -1, 1, 1, N, 0, 0), *Idx = rnd(TSL_DTYPE_I64, -3, (double)N, 1, B, 0, 0);
    DLTensor *J = rnd(TSL_DTYPE_I32, 0, (double)N, 1, N, 0, 0);
    ((int64_t *)Idx->data)[0] = -1;
    DLTensor *O = poisoned(TSL_DTYPE_F32, 1, B, 0, 0), *P = poisoned(TSL_DTYPE_I32, 1, B, 0, 0),
             *Q = poisoned(TSL_DTYPE_F32, 1, N, 0, 0);
    tsl_args *a = p ? tsl_args_create(p) : NULL;
    if (a) {
        CHECK_EQ_INT(tsl_args_set_tensor(a, "X", X), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "Idx", Idx), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_tensor(a, "J", J), TSL_OK);
        tsl_dtype pt = TSL_DTYPE_BOOL;
        CHECK_EQ_INT(tsl_args_output_shape(a, "P", NULL, NULL, &pt), TSL_OK);
        tsl_tensor_free(P);
        P = poisoned(pt, 1, B, 0, 0);
        CHECK_EQ_INT(tsl_args_set_output(a, "O", O), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_output(a, "P", P), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_output(a, "Q", Q), TSL_OK);
        CHECK_MSG(tsl_program_run(p, a, TSL_TARGET_INTERP) == TSL_OK, "%s", tsl_context_error(ctx));
    }
    for (int64_t b = 0; b < B; b++) {
        int64_t ix = ((int64_t *)Idx->data)[b];
        CHECK(at(O, b) == (ix >= 0 ? at(X, ix) : -1));
        CHECK(at(P, b) == (ix >= 0 && at(X, ix) > 0 ? 1 : 0));
    }
    const int32_t *j = J->data;
    for (int64_t n = 0; n < N; n++) CHECK(at(Q, n) == at(X, j[j[n]]));
    tsl_args_free(a);
    tsl_tensor_free(X);
    tsl_tensor_free(Idx);
    tsl_tensor_free(J);
    tsl_tensor_free(O);
    tsl_tensor_free(P);
    tsl_tensor_free(Q);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* ---- integer programs ------------------------------------------------------- */

/* int32 products wrap modulo 2^32; `/` truncates toward zero; `%` is C's. */
static void test_int32_wrap_div(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def ints(int32(N) A, int32(N) B) -> (P, Q, R) {\n"
                                  "  P(i) = A(i) * B(i)\n  Q(i) = A(i) / B(i)\n"
                                  "  R(i) = A(i) % B(i)\n}\n");
    int64_t N = pick_size() + 4;
    DLTensor *A = rnd(TSL_DTYPE_I32, -2e9, 2e9, 1, N, 0, 0), *B = rnd(TSL_DTYPE_I32, -1e5, 1e5, 1, N, 0, 0);
    int32_t *a = A->data, *b = B->data;
    for (int64_t i = 0; i < N; i++)
        if (b[i] == 0) b[i] = 3;
    a[0] = -7, b[0] = 2; /* -3, -1 */
    DLTensor *P = poisoned(TSL_DTYPE_I32, 1, N, 0, 0), *Q = poisoned(TSL_DTYPE_I32, 1, N, 0, 0),
             *R = poisoned(TSL_DTYPE_I32, 1, N, 0, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"A", "B", 0}, (DLTensor *[]){A, B},
                       (const char *[]){"P", "Q", "R", 0}, (DLTensor *[]){P, Q, R}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t i = 0; i < N; i++) {
        CHECK_EQ_INT(((int32_t *)P->data)[i], (int32_t)((uint32_t)a[i] * (uint32_t)b[i]));
        CHECK_EQ_INT(((int32_t *)Q->data)[i], a[i] / b[i]);
        CHECK_EQ_INT(((int32_t *)R->data)[i], a[i] % b[i]);
    }
    CHECK_EQ_INT(((int32_t *)Q->data)[0], -3);
    CHECK_EQ_INT(((int32_t *)R->data)[0], -1);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_tensor_free(P);
    tsl_tensor_free(Q);
    tsl_tensor_free(R);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* int64 sums beyond 2^53 are exact; integer max=! starts at the minimum. */
static void test_int64_exact(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def s(int64(N) A) -> (S, M) {\n"
                                  "  S() +=! A(i)\n  M() max=! A(i)\n}\n");
    int64_t N = pick_size();
    DLTensor *A = tsl_tensor_alloc(TSL_DTYPE_I64, 1, &N);
    int64_t *a = A->data, sum = 0, mx = INT64_MIN;
    for (int64_t i = 0; i < N; i++) {
        a[i] = -((int64_t)1 << 60) + (int64_t)(test_rand() % 1000) * 7 + 1;
        sum = (int64_t)((uint64_t)sum + (uint64_t)a[i]);
        if (a[i] > mx) mx = a[i];
    }
    DLTensor *S = poisoned(TSL_DTYPE_I64, 0, 0, 0, 0), *M = poisoned(TSL_DTYPE_I64, 0, 0, 0, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"A", 0}, (DLTensor *[]){A},
                       (const char *[]){"S", "M", 0}, (DLTensor *[]){S, M}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    CHECK_MSG(*(int64_t *)S->data == sum, "%lld vs %lld", (long long)*(int64_t *)S->data,
              (long long)sum);
    CHECK(*(int64_t *)M->data == mx);
    tsl_tensor_free(A);
    tsl_tensor_free(S);
    tsl_tensor_free(M);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

static void test_int_division_by_zero(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def d(int32(N) A, int32(N) B) -> (Q) {\n  Q(i) = A(i) / B(i)\n}\n");
    int64_t N = pick_size();
    DLTensor *A = rnd(TSL_DTYPE_I32, 1, 100, 1, N, 0, 0), *B = rnd(TSL_DTYPE_I32, 1, 100, 1, N, 0, 0);
    ((int32_t *)B->data)[test_rand_int(0, N - 1)] = 0;
    DLTensor *Q = poisoned(TSL_DTYPE_I32, 1, N, 0, 0);
    CHECK_EQ_INT(run(ctx, p, (const char *[]){"A", "B", 0}, (DLTensor *[]){A, B},
                     (const char *[]){"Q", 0}, (DLTensor *[]){Q}),
                 TSL_ERR_RUNTIME);
    CHECK_MSG(strstr(tsl_context_error(ctx), "t.tc:2:") &&
                  strstr(tsl_context_error(ctx), "integer division by zero"),
              "%s", tsl_context_error(ctx));
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_tensor_free(Q);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* Builtins in float64, casts (truncation toward zero), integer division
 * mixed with index variables, and float division of a cast integer. */
static void test_builtins_and_casts(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def f(float(N) X, int32(N) I) -> (A, B, C, D) {\n"
                                  "  A(i) = sigmoid(X(i)) + tanh(X(i)) + abs(X(i)) + fmaxf(X(i), 0.25)"
                                  " + pow(abs(X(i)), 1.5) + sqrt(abs(X(i))) + rsqrt(abs(X(i)) + 1)"
                                  " + erf(X(i)) + exp(X(i)) + log(abs(X(i)) + 1) + min(X(i), -0.5)\n"
                                  "  B(i) = int32(X(i) * 100)\n"
                                  "  C(i) = float32(I(i)) / 3\n"
                                  "  D(i) = I(i) / 3 + i\n}\n");
    int64_t N = pick_size() + 2;
    DLTensor *X = rnd(TSL_DTYPE_F32, -3, 3, 1, N, 0, 0), *I = rnd(TSL_DTYPE_I32, -1000, 1000, 1, N, 0, 0);
    DLTensor *A = poisoned(TSL_DTYPE_F32, 1, N, 0, 0), *B = poisoned(TSL_DTYPE_I32, 1, N, 0, 0),
             *C = poisoned(TSL_DTYPE_F32, 1, N, 0, 0), *D = poisoned(TSL_DTYPE_I64, 1, N, 0, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"X", "I", 0}, (DLTensor *[]){X, I},
                       (const char *[]){"A", "B", "C", "D", 0}, (DLTensor *[]){A, B, C, D}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    for (int64_t i = 0; i < N; i++) {
        double x = at(X, i);
        double want = 1 / (1 + exp(-x)) + tanh(x) + fabs(x) + fmax(x, 0.25) + pow(fabs(x), 1.5) +
                      sqrt(fabs(x)) + 1 / sqrt(fabs(x) + 1) + erf(x) + exp(x) + log(fabs(x) + 1) +
                      fmin(x, -0.5);
        CHECK_CLOSE(at(A, i), want, 1e-6);
        /* X*100 evaluated in float64 (the interpreter's rule), truncated */
        CHECK_EQ_INT(((int32_t *)B->data)[i], (int32_t)(x * 100));
        CHECK_CLOSE(at(C, i), at(I, i) / 3.0, 1e-6);
        /* index variables are int64, so D is int64 */
        CHECK_EQ_INT(((int64_t *)D->data)[i], ((int32_t *)I->data)[i] / 3 + i);
    }
    tsl_tensor_free(X);
    tsl_tensor_free(I);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_tensor_free(C);
    tsl_tensor_free(D);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* uint8 wraps modulo 256; integer min=! starts at the dtype's maximum. */
static void test_uint8_wrap_min(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def u(uint8(N) A, uint8(N) B) -> (S, M) {\n"
                                  "  S(i) = A(i) + B(i)\n  M() min=! A(i)\n}\n");
    int64_t N = pick_size();
    DLTensor *A = rnd(TSL_DTYPE_U8, 100, 256, 1, N, 0, 0), *B = rnd(TSL_DTYPE_U8, 100, 256, 1, N, 0, 0);
    DLTensor *S = poisoned(TSL_DTYPE_U8, 1, N, 0, 0), *M = poisoned(TSL_DTYPE_U8, 0, 0, 0, 0);
    CHECK_MSG(p && run(ctx, p, (const char *[]){"A", "B", 0}, (DLTensor *[]){A, B},
                       (const char *[]){"S", "M", 0}, (DLTensor *[]){S, M}) == TSL_OK,
              "%s", tsl_context_error(ctx));
    const uint8_t *a = A->data, *b = B->data;
    uint8_t mn = 255;
    for (int64_t i = 0; i < N; i++) {
        CHECK_EQ_INT(((uint8_t *)S->data)[i], (uint8_t)(a[i] + b[i]));
        if (a[i] < mn) mn = a[i];
    }
    CHECK_EQ_INT(*(uint8_t *)M->data, mn);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_tensor_free(S);
    tsl_tensor_free(M);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* ---- sizes of zero ---------------------------------------------------------- */

/* Zero-size inputs through the API: a box emptied by a zero size runs
 * nothing, so C(M,N) keeps the `+=!` identity (every element written). */
static void test_zero_size_api(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = compile(ctx, "def mm(float(M,K) A, float(K,N) B) -> (C) {\n"
                                  "  C(m,n) +=! A(m,k) * B(k,n)\n}\n");
    int64_t M = pick_size(), N = pick_size();
    DLTensor *A = rnd(TSL_DTYPE_F32, -1, 1, 2, M, 0, 0), *B = rnd(TSL_DTYPE_F32, -1, 1, 2, 0, N, 0);
    DLTensor *C = poisoned(TSL_DTYPE_F32, 2, M, N, 0);
    tsl_status st = run(ctx, p, (const char *[]){"A", "B", 0}, (DLTensor *[]){A, B},
                        (const char *[]){"C", 0}, (DLTensor *[]){C});
    CHECK_MSG(st == TSL_OK, "%s", tsl_context_error(ctx));
    for (int64_t k = 0; k < M * N; k++) CHECK(at(C, k) == 0);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_tensor_free(C);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

static interp_tensor view_of(const DLTensor *t)
{
    interp_tensor v = {0};
    v.base = t->data;
    v.dtype = dt_of(t);
    v.rank = t->ndim;
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        v.shape[d] = t->shape[d];
        v.stride[d] = s;
        s *= t->shape[d];
    }
    return v;
}

/* The interpreter itself on empty boxes: an empty reduction box leaves the
 * `!` identity; an empty LHS box writes nothing. */
static void test_zero_size_boxes(void)
{
    const char *src_text = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n"
                           "  C(m,n) +=! A(m,k) * B(k,n)\n}\n";
    tsl_arena *ar = arena_create();
    tsl_source src = {"z.tc", src_text};
    tsl_diag d = {0};
    lang_module *m = lang_parse_check(ar, &src, &d);
    CHECK_MSG(m != NULL, "%s", sb_str(&d.msg));
    if (!m) goto out;
    const lang_def *def = lang_module_def(m, 0);
    int64_t M = pick_size(), K = pick_size(), N = pick_size();
    int64_t sizes[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    sizes[lang_def_size_slot(def, "M")] = M;
    sizes[lang_def_size_slot(def, "K")] = K;
    sizes[lang_def_size_slot(def, "N")] = N;
    lang_bound *b = NULL;
    CHECK_EQ_INT(lang_bind(ar, def, sizes, &b, &d), TSL_OK);
    if (!b) goto out;
    DLTensor *A = rnd(TSL_DTYPE_F32, -1, 1, 2, M, K, 0), *B = rnd(TSL_DTYPE_F32, -1, 1, 2, K, N, 0);
    DLTensor *C = poisoned(TSL_DTYPE_F32, 2, M, N, 0);
    interp_tensor views[3];
    views[lang_def_tensor(def, "A")->index] = view_of(A);
    views[lang_def_tensor(def, "B")->index] = view_of(B);
    views[lang_def_tensor(def, "C")->index] = view_of(C);
    lang_bound_stmt *bs = &b->stmts[0];
    CHECK_EQ_INT(def->stmts[0].nvars, 3);
    bs->hi[2] = bs->lo[2]; /* k: empty */
    CHECK_MSG(interp_run(b, views, &d) == TSL_OK, "%s", sb_str(&d.msg));
    for (int64_t k = 0; k < M * N; k++) CHECK(at(C, k) == 0);
    C = (tsl_tensor_free(C), poisoned(TSL_DTYPE_F32, 2, M, N, 0));
    views[lang_def_tensor(def, "C")->index] = view_of(C);
    bs->hi[2] = K;
    bs->hi[0] = bs->lo[0]; /* m: empty */
    CHECK_MSG(interp_run(b, views, &d) == TSL_OK, "%s", sb_str(&d.msg));
    for (int64_t k = 0; k < M * N; k++) CHECK(isnan(at(C, k)));
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_tensor_free(C);
out:
    diag_free(&d);
    arena_free(ar);
}

TEST_SUITE(interp) = {
    {"matmul", test_matmul},
    {"matvec_scalar", test_matvec_scalar},
    {"conv1d", test_conv1d},
    {"maxpool_negative", test_maxpool_negative},
    {"gather", test_gather},
    {"gather_out_of_range", test_gather_out_of_range},
    {"guarded_gather", test_guarded_gather},
    {"inout_accumulate", test_inout_accumulate},
    {"product_bang", test_product_bang},
    {"zero_dim_reduction", test_zero_dim_reduction},
    {"temporaries_softmax", test_temporaries_softmax},
    {"select_on_indices", test_select_on_indices},
    {"float16_rounding", test_float16_rounding},
    {"int32_wrap_div", test_int32_wrap_div},
    {"int64_exact", test_int64_exact},
    {"int_division_by_zero", test_int_division_by_zero},
    {"builtins_and_casts", test_builtins_and_casts},
    {"uint8_wrap_min", test_uint8_wrap_min},
    {"zero_size_api", test_zero_size_api},
    {"zero_size_boxes", test_zero_size_boxes},
    {0},
};
