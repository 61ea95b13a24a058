/* cpu_bench.c — the measurements behind bench/cpu.sh, one phase per run so
 * that thread counts (OPENBLAS_NUM_THREADS, TESSEL_NUM_THREADS, read once
 * per process) can differ between phases. Every phase prints lines
 * `key value...` that cpu.sh turns into a table:
 *
 *   cpu_bench machine        bw <threads> <GB/s>   (large copy, bytes read + written, best of 5)
 *                            fma 1 <GFLOP/s>       (single-core f32 FMA peak, vector extensions)
 *   cpu_bench blas           sgemm <ms> <GFLOP/s>  (cblas_sgemm 1024^3, median of 7; needs -DHAVE_OPENBLAS)
 *   cpu_bench tessel         op <name> <ms> <rate> <GB/s|GFLOP/s> <runs> | op <name> n/a <why>
 *                            err sum <relative error>  (the full sum against a compensated double sum)
 *                            (qgemv_u4, qgemv_u3: the quantized GEMV, GB/s of W's packed bytes)
 *
 * The sum's full-size input is $CPU_BENCH_SUM_NPY when set (cpu.sh writes
 * it from bench/cpu_numpy.py, so that NumPy and tessel sum the same
 * values), else the generator's.
 *
 * tessel's programs run through the public API with TSL_TARGET_CPU; each is
 * first run on a small size on the interpreter and the CPU target and
 * compared (llm.c's "check before timing") and only then timed at full size
 * (one warm-up run, then the median of up to 5 runs, fewer when one run is
 * slow: the last field is the count; a warm-up over 4 s is the only run).
 *
 * Build (cpu.sh does this):
 *   cc -std=c11 -D_GNU_SOURCE -O2 -march=native -ffp-contract=fast -Iinclude -Isrc bench/cpu_bench.c build/libtessel.a [-DHAVE_OPENBLAS -lopenblas] -lsqlite3 -ldl -lm -lpthread -o build/cpu_bench */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "tessel.h"
#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static uint64_t bench_rng = 0x2545f4914f6cdd1dull;
static float rand_unit(void) /* +-[0.1, 1], never zero */
{
    bench_rng ^= bench_rng << 13, bench_rng ^= bench_rng >> 7, bench_rng ^= bench_rng << 17;
    float u = 0.1f + 0.9f * (float)(bench_rng >> 40) / (float)(1u << 24);
    return (bench_rng & 1) ? u : -u;
}

/* ---- the machine: bandwidth and FMA peak ------------------------------- */

typedef struct bw_job {
    char *dst;
    const char *src;
    size_t bytes;
} bw_job;

static void *bw_worker(void *arg)
{
    bw_job *j = arg;
    memcpy(j->dst, j->src, j->bytes);
    return NULL;
}

/* Best copy bandwidth over `reps` copies of `bytes` split across `threads`:
 * (bytes read + bytes written) / time. */
static double measure_bw(size_t bytes, int threads, int reps)
{
    char *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    memset(a, 1, bytes);
    memset(b, 2, bytes); /* fault the pages in before timing */
    double best = 1e30;
    pthread_t th[256];
    bw_job jobs[256];
    if (threads > 256) threads = 256;
    for (int r = 0; r < reps; r++) {
        size_t chunk = bytes / (size_t)threads / 64 * 64;
        double t0 = now_s();
        for (int t = 0; t < threads; t++) {
            jobs[t].src = a + (size_t)t * chunk;
            jobs[t].dst = b + (size_t)t * chunk;
            jobs[t].bytes = t == threads - 1 ? bytes - (size_t)t * chunk : chunk;
            if (threads == 1) bw_worker(&jobs[t]);
            else pthread_create(&th[t], NULL, bw_worker, &jobs[t]);
        }
        if (threads > 1)
            for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    volatile char sink = b[bytes / 2];
    (void)sink;
    free(a);
    free(b);
    return 2.0 * (double)bytes / best / 1e9;
}

typedef float v8f __attribute__((vector_size(32)));

/* Single-core f32 FMA rate: 10 independent vector accumulators in registers
 * hide the FMA latency (up to 2 units x 5 cycles); -march=native and
 * -ffp-contract=fast make each update one FMA. */
static double measure_fma(void)
{
    v8f m, x, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9;
    for (int k = 0; k < 8; k++) m[k] = 0.999999f, x[k] = 1e-7f;
    a0 = m, a1 = m * 2, a2 = m * 3, a3 = m * 4, a4 = m * 5;
    a5 = m * 6, a6 = m * 7, a7 = m * 8, a8 = m * 9, a9 = m * 10;
    long iters = 30000000;
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        a0 = a0 * m + x, a1 = a1 * m + x, a2 = a2 * m + x, a3 = a3 * m + x, a4 = a4 * m + x;
        a5 = a5 * m + x, a6 = a6 * m + x, a7 = a7 * m + x, a8 = a8 * m + x, a9 = a9 * m + x;
    }
    double dt = now_s() - t0;
    v8f sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9;
    volatile float sink = sum[0] + sum[7];
    (void)sink;
    return (double)iters * 10 * 8 * 2 / dt / 1e9;
}

static int phase_machine(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    size_t bytes = (size_t)256 << 20;
    printf("bw 1 %.2f\n", measure_bw(bytes, 1, 5));
    if (cores > 1) printf("bw %ld %.2f\n", cores, measure_bw(bytes, (int)cores, 5));
    printf("fma 1 %.2f\n", measure_fma());
    return 0;
}

/* ---- OpenBLAS ---------------------------------------------------------- */

static int phase_blas(void)
{
#ifdef HAVE_OPENBLAS
    int n = 1024;
    float *a = malloc(sizeof(float) * (size_t)n * n), *b = malloc(sizeof(float) * (size_t)n * n),
          *c = malloc(sizeof(float) * (size_t)n * n);
    for (long k = 0; k < (long)n * n; k++) a[k] = rand_unit(), b[k] = rand_unit(), c[k] = NAN;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    /* spot-check a few elements in double precision */
    for (int s = 0; s < 16; s++) {
        int i = (s * 131) % n, j = (s * 617) % n;
        double ref = 0, mag = 0;
        for (int k = 0; k < n; k++) ref += (double)a[(long)i * n + k] * b[(long)k * n + j], mag += fabs((double)a[(long)i * n + k] * b[(long)k * n + j]);
        if (!(fabs(c[(long)i * n + j] - ref) <= 1e-5 * mag)) {
            printf("sgemm n/a wrong-result\n");
            return 1;
        }
    }
    double t[7];
    for (int r = 0; r < 7; r++) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        t[r] = now_s() - t0;
    }
    double m = median(t, 7);
    printf("sgemm %.3f %.2f\n", m * 1e3, 2.0 * n * n * (double)n / m / 1e9);
    free(a);
    free(b);
    free(c);
#else
    printf("sgemm n/a openblas-not-installed\n");
#endif
    return 0;
}

/* ---- tessel ------------------------------------------------------------ */

typedef struct bench_op {
    const char *name;
    const char *src;
    int nin;
    const char *in_names[2];
    int rank[2];
    int64_t small[2][4]; /* shapes for the check against the interpreter */
    int64_t full[2][4];  /* shapes for timing */
    const char *out;
    int flops;           /* rate in GFLOP/s (else GB/s of bytes moved) */
} bench_op;

static const bench_op bench_ops[] = {
    {"copy", "def copy(float(M,N) A) -> (B) {\n  B(i,j) = A(i,j)\n}\n", 1, {"A"}, {2},
     {{67, 131}}, {{4096, 4096}}, "B", 0},
    {"transpose", "def transpose(float(M,N) A) -> (B) {\n  B(i,j) = A(j,i)\n}\n", 1, {"A"}, {2},
     {{67, 131}}, {{4096, 4096}}, "B", 0},
    {"row_reduction", "def rowsum(float(M,N) A) -> (R) {\n  R(i) +=! A(i,j)\n}\n", 1, {"A"}, {2},
     {{67, 131}}, {{4096, 4096}}, "R", 0},
    {"col_reduction", "def colsum(float(M,N) A) -> (S) {\n  S(j) +=! A(i,j)\n}\n", 1, {"A"}, {2},
     {{67, 131}}, {{4096, 4096}}, "S", 0},
    {"matmul", "def matmul(float(M,K) A, float(K,N) B) -> (C) {\n  C(i,j) +=! A(i,k) * B(k,j)\n}\n",
     2, {"A", "B"}, {2, 2}, {{67, 45}, {45, 53}}, {{1024, 1024}, {1024, 1024}}, "C", 1},
    {"conv2d",
     "def conv2d(float(N,C,H,W) I, float(K,C,R,S) Wt) -> (O) {\n"
     "  O(n,k,h,w) +=! I(n,c,h + r,w + s) * Wt(k,c,r,s)\n}\n",
     2, {"I", "Wt"}, {4, 4}, {{2, 3, 11, 13}, {5, 3, 3, 3}}, {{8, 64, 56, 56}, {64, 64, 3, 3}}, "O", 1},
    /* a full reduction (the data: bench/cpu.sh's .npy when given, so that
     * NumPy sums the same values) and a softmax, beside NumPy */
    {"sum", "def sum(float(N) X) -> (S) {\n  S() +=! X(i)\n}\n", 1, {"X"}, {1}, {{100003}}, {{100000000}}, "S", 0},
    {"softmax",
     "def softmax(float(N,D) X) -> (Y) {\n  mx(n) max=! X(n,d)\n  e(n,d) = exp(X(n,d) - mx(n))\n"
     "  s(n) +=! e(n,d)\n  Y(n,d) = e(n,d) / s(n)\n}\n",
     1, {"X"}, {2}, {{67, 131}}, {{4096, 4096}}, "Y", 0},
};

static int64_t numel(int rank, const int64_t *s)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= s[d];
    return n;
}

/* Run op on `target` with inputs `in`; the output is returned (owned by the
 * args, which the caller frees). */
static tsl_status run_op(tsl_program *p, DLTensor **in, const bench_op *op, tsl_target target,
                         tsl_args **args_out, DLTensor **out_storage)
{
    tsl_args *a = tsl_args_create(p);
    *args_out = a;
    tsl_status st;
    for (int k = 0; k < op->nin; k++)
        if ((st = tsl_args_set_tensor(a, op->in_names[k], in[k]))) return st;
    if ((st = tsl_args_infer(a))) return st;
    int rank;
    int64_t shape[TSL_MAX_RANK];
    tsl_dtype dt;
    if ((st = tsl_args_output_shape(a, op->out, &rank, shape, &dt))) return st;
    if (!*out_storage) {
        *out_storage = tsl_tensor_alloc(dt, rank, shape);
        float *o = (*out_storage)->data;
        for (int64_t k = 0; k < numel(rank, shape); k++) o[k] = NAN; /* poison */
    }
    if ((st = tsl_args_set_output(a, op->out, *out_storage))) return st;
    return tsl_program_run(p, a, target);
}

static void free_inputs(DLTensor **in, int n)
{
    for (int k = 0; k < n; k++) tsl_tensor_free(in[k]), in[k] = NULL;
}

static void make_inputs(tsl_context *ctx, const bench_op *op, int full, DLTensor **in)
{
    const char *npy = getenv("CPU_BENCH_SUM_NPY");
    if (full && !strcmp(op->name, "sum") && npy && *npy) {
        if (tsl_npy_read(ctx, npy, &in[0]) == TSL_OK && in[0]->ndim == 1 && in[0]->dtype.code == kDLFloat &&
            in[0]->dtype.bits == 32)
            return;
        fprintf(stderr, "cpu_bench: cannot use %s as the sum's input (%s); generating it\n", npy,
                tsl_context_error(ctx));
        tsl_tensor_free(in[0]);
        in[0] = NULL;
    }
    for (int k = 0; k < op->nin; k++) {
        const int64_t *s = full ? op->full[k] : op->small[k];
        in[k] = tsl_tensor_alloc(TSL_DTYPE_F32, op->rank[k], s);
        float *d = in[k]->data;
        for (int64_t e = 0; e < numel(op->rank[k], s); e++) d[e] = rand_unit();
    }
}

static void bench_one(tsl_context *ctx, const bench_op *op)
{
    tsl_program *p = NULL;
    if (tsl_program_compile(ctx, op->src, op->name, NULL, &p)) {
        printf("op %s n/a compile-error: %s\n", op->name, tsl_context_error(ctx));
        return;
    }
    DLTensor *in[2] = {0}, *ref = NULL, *got = NULL;
    tsl_args *ra = NULL, *ga = NULL;
    make_inputs(ctx, op, 0, in);
    tsl_status st = run_op(p, in, op, TSL_TARGET_INTERP, &ra, &ref);
    if (st) {
        printf("op %s n/a interpreter-error: %s\n", op->name, tsl_context_error(ctx));
        goto out;
    }
    st = run_op(p, in, op, TSL_TARGET_CPU, &ga, &got);
    if (st == TSL_ERR_UNAVAILABLE) {
        printf("op %s n/a cpu target not available\n", op->name);
        goto out;
    }
    if (st) {
        printf("op %s n/a cpu-error: %s\n", op->name, tsl_context_error(ctx));
        goto out;
    }
    int64_t n = numel(ref->ndim, ref->shape);
    double maxabs = 0, maxerr = 0;
    for (int64_t k = 0; k < n; k++) {
        double r = ((float *)ref->data)[k], x = ((float *)got->data)[k];
        maxabs = fmax(maxabs, fabs(r));
        double e = fabs(x - r);
        if (!(e <= maxerr)) maxerr = isnan(e) ? INFINITY : fmax(maxerr, e);
    }
    if (!(maxerr <= 1e-4 * fmax(maxabs, 1e-3))) {
        printf("op %s n/a WRONG: max error %.3g vs max|ref| %.3g on the check size\n", op->name,
               maxerr, maxabs);
        goto out;
    }
    printf("check %s ok (rel. error %.2g)\n", op->name, maxerr / fmax(maxabs, 1e-30));
    fflush(stdout);
    tsl_args_free(ga), ga = NULL;
    tsl_tensor_free(got), got = NULL;
    free_inputs(in, op->nin);
    make_inputs(ctx, op, 1, in);
    /* r = -1: warm-up (the check above compiled the kernels already unless
     * they depend on the sizes); then up to 5 timed runs within about 6 s.
     * A warm-up over 4 s is itself the one measurement, so that slow
     * kernels keep the script short. */
    double t[5], warm = 0;
    int runs = 5;
    for (int r = -1; r < runs; r++) {
        tsl_args_free(ga), ga = NULL;
        double t0 = now_s();
        st = run_op(p, in, op, TSL_TARGET_CPU, &ga, &got);
        double dt = now_s() - t0;
        if (st) {
            printf("op %s n/a cpu-error at full size: %s\n", op->name, tsl_context_error(ctx));
            goto out;
        }
        if (r >= 0) {
            t[r] = dt;
        } else if ((warm = dt) > 4) {
            t[0] = warm;
            runs = 1;
            break;
        } else {
            runs = warm * 5 <= 6 ? 5 : warm >= 6 ? 1 : (int)(6 / warm);
        }
    }
    double m = median(t, runs);
    double rate;
    if (op->flops) {
        /* 2 flops per multiply-add of the reduction box */
        double box = op->name[0] == 'm' ? 1024.0 * 1024 * 1024
                                        : (double)numel(got->ndim, got->shape) * 64 * 3 * 3;
        rate = 2 * box / m / 1e9;
    } else {
        double bytes = (double)numel(in[0]->ndim, in[0]->shape) * 4 + (double)numel(got->ndim, got->shape) * 4;
        rate = bytes / m / 1e9;
    }
    printf("op %s %.3f %.2f %s %d\n", op->name, m * 1e3, rate, op->flops ? "GFLOP/s" : "GB/s", runs);
    if (!strcmp(op->name, "sum")) {
        /* its accuracy: against a Kahan-compensated double sum */
        const float *x = in[0]->data;
        double s = 0, c = 0;
        for (int64_t k = 0; k < in[0]->shape[0]; k++) {
            double y = (double)x[k] - c, t = s + y;
            c = (t - s) - y;
            s = t;
        }
        printf("err sum %.3g\n", fabs((double)((float *)got->data)[0] - s) / fmax(fabs(s), 1e-300));
    }
out:
    fflush(stdout);
    tsl_args_free(ra);
    tsl_args_free(ga);
    tsl_tensor_free(ref);
    tsl_tensor_free(got);
    free_inputs(in, op->nin);
    tsl_program_free(p);
}

/* ---- the quantized GEMV (issue 14) ----------------------------------------
 * Y(m,n) +=! float16(W(k,n)) * S(k / 128, n) * X(m,k), fp16 X and S, W of
 * `w` bits packed, M = 1, 8192 x 8192: checked against the interpreter at
 * M 1, K 300, N 200 (relative L2 error under 1e-2), then timed as the
 * other rows; the rate is W's packed bytes over the time. */
static tsl_status qgemv_run(tsl_program *p, DLTensor *X, DLTensor *W, DLTensor *S, DLTensor **Y, tsl_target t,
                            tsl_args **out)
{
    tsl_args *a = tsl_args_create(p);
    *out = a;
    tsl_status st;
    if ((st = tsl_args_set_tensor(a, "X", X)) || (st = tsl_args_set_tensor(a, "W", W)) ||
        (st = tsl_args_set_tensor(a, "S", S)) || (st = tsl_args_infer(a)))
        return st;
    if (!*Y) {
        int rank;
        int64_t shape[TSL_MAX_RANK];
        tsl_dtype dt;
        if ((st = tsl_args_output_shape(a, "Y", &rank, shape, &dt))) return st;
        *Y = tsl_tensor_alloc(dt, rank, shape);
        for (int64_t e = 0; e < shape[0] * shape[1]; e++) dtype_set(dt, (*Y)->data, e, NAN);
    }
    if ((st = tsl_args_set_output(a, "Y", *Y))) return st;
    return tsl_program_run(p, a, t);
}

static void qgemv_inputs(tsl_dtype wt, int64_t M, int64_t K, int64_t N, DLTensor **in)
{
    int64_t G = (K + 127) / 128, sx[2] = {M, K}, sw[2] = {K, N}, ss[2] = {G, N};
    in[0] = tsl_tensor_alloc(TSL_DTYPE_F16, 2, sx);
    in[1] = tsl_tensor_alloc(wt, 2, sw);
    in[2] = tsl_tensor_alloc(TSL_DTYPE_F16, 2, ss);
    for (int64_t e = 0; e < M * K; e++) dtype_set(TSL_DTYPE_F16, in[0]->data, e, rand_unit());
    unsigned char *w = in[1]->data;
    for (size_t j = 0; j < tsl_dtype_nbytes(wt, K * N); j++) w[j] = (unsigned char)((int)(fabsf(rand_unit()) * 1e4f) & 255); /* every code */
    for (int64_t e = 0; e < G * N; e++) dtype_set(TSL_DTYPE_F16, in[2]->data, e, rand_unit() * 0.1);
}

static void bench_qgemv(tsl_context *ctx, const char *name, tsl_dtype wt)
{
    char src[256];
    snprintf(src, sizeof src,
             "def qgemv(float16(M,K) X, %s(K,N) W, float16(G,N) S) -> (Y) {\n"
             "  Y(m,n) +=! float16(W(k,n)) * S(k / 128, n) * X(m,k)\n}\n",
             tsl_dtype_name(wt));
    tsl_program *p = NULL;
    DLTensor *in[3] = {0}, *ref = NULL, *got = NULL;
    tsl_args *ra = NULL, *ga = NULL;
    if (tsl_program_compile(ctx, src, name, NULL, &p)) {
        printf("op %s n/a compile-error: %s\n", name, tsl_context_error(ctx));
        return;
    }
    /* the check size: K past two groups, a partial third (the CPU plan
     * splits it into 3 slices, as the timed size into 16); N past one
     * 4096-column CPU block, so the check runs the CPU plan's
     * micro-kernel as the timed size does */
    const int64_t CN = 4096 + 136;
    qgemv_inputs(wt, 1, 300, CN, in);
    if (qgemv_run(p, in[0], in[1], in[2], &ref, TSL_TARGET_INTERP, &ra) ||
        qgemv_run(p, in[0], in[1], in[2], &got, TSL_TARGET_CPU, &ga)) {
        printf("op %s n/a error: %s\n", name, tsl_context_error(ctx));
        goto out;
    }
    double num = 0, den = 0;
    for (int64_t e = 0; e < CN; e++) {
        double r = dtype_get(TSL_DTYPE_F16, ref->data, e), x = dtype_get(TSL_DTYPE_F16, got->data, e);
        num += (x - r) * (x - r);
        den += r * r;
    }
    double rel = sqrt(num / (den > 0 ? den : 1));
    if (!(rel < 1e-2)) {
        printf("op %s n/a WRONG: relative L2 error %.3g on the check size\n", name, rel);
        goto out;
    }
    printf("check %s ok (rel. L2 error %.2g)\n", name, rel);
    fflush(stdout);
    for (int k = 0; k < 3; k++) tsl_tensor_free(in[k]);
    tsl_tensor_free(got), got = NULL;
    tsl_args_free(ga), ga = NULL;
    const int64_t K = 8192, N = 8192;
    qgemv_inputs(wt, 1, K, N, in);
    double t[7];
    int runs = 7;
    for (int r = -1; r < runs; r++) {
        tsl_args_free(ga), ga = NULL;
        double t0 = now_s();
        if (qgemv_run(p, in[0], in[1], in[2], &got, TSL_TARGET_CPU, &ga)) {
            printf("op %s n/a cpu-error at full size: %s\n", name, tsl_context_error(ctx));
            goto out;
        }
        if (r >= 0) t[r] = now_s() - t0;
    }
    double m = median(t, runs);
    printf("op %s %.3f %.2f GB/s %d\n", name, m * 1e3, (double)tsl_dtype_nbytes(wt, K * N) / m / 1e9, runs);
out:
    fflush(stdout);
    tsl_args_free(ra);
    tsl_args_free(ga);
    tsl_tensor_free(ref);
    tsl_tensor_free(got);
    for (int k = 0; k < 3; k++) tsl_tensor_free(in[k]);
    tsl_program_free(p);
}

static int phase_tessel(const char *only)
{
    tsl_context *ctx = tsl_context_create();
    for (size_t k = 0; k < sizeof bench_ops / sizeof *bench_ops; k++)
        if (!only || !strcmp(only, bench_ops[k].name)) bench_one(ctx, &bench_ops[k]);
    if (!only || !strcmp(only, "qgemv_u4")) bench_qgemv(ctx, "qgemv_u4", TSL_DTYPE_U4);
    if (!only || !strcmp(only, "qgemv_u3")) bench_qgemv(ctx, "qgemv_u3", TSL_DTYPE_U3);
    tsl_context_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "machine")) return phase_machine();
    if (argc >= 2 && !strcmp(argv[1], "blas")) return phase_blas();
    if (argc >= 2 && !strcmp(argv[1], "tessel")) return phase_tessel(argc >= 3 ? argv[2] : NULL);
    fprintf(stderr, "usage: cpu_bench machine | blas | tessel [OP]\n");
    return 2;
}
