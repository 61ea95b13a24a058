/* gpu_bench.c — tessel's GPU benchmark table (issue 4 item 6), run by
 * bench/gpu.sh on a GPU machine. Build here, carry build/ (gpu.sh says how):
 *
 *   make -s -j2 all && cc -std=c11 -D_GNU_SOURCE -O2 -Iinclude -Isrc bench/gpu_bench.c \
 *       build/libtessel.a -lsqlite3 -ldl -lm -lpthread -o build/gpu_bench
 *
 * For each benchmark program (a TC def from examples/, or one of
 * bench_inline's elementwise programs, with float16 or float32
 * declarations):
 *   1. correctness at a small size: tsl_program_run on the CUDA target
 *      against the reference interpreter (relative L2 error, fresh inputs);
 *   2. the full size planned once (sched_lower), compiled once (NVRTC for
 *      the device's arch), tensors resident on the device, one checked run
 *      (index errors surface) whose output is compared on sampled rows or
 *      elements with a float64 computation on the host;
 *   3. timing: CUDA events around each whole plan run (every launch,
 *      temporaries zeroed), after warm-up, median of many repetitions,
 *      inputs rotated over several sets so that together they exceed twice
 *      a 60 MB L2. Nothing is timed that did not pass 1 and 2; then the
 *      same memsets of the def's temporaries that a plan run does, timed
 *      alone (how much of the figure is not the kernels).
 * Then the cold NVRTC compile of one kernel (a source no cache has seen)
 * and the overhead a cached tsl_program_run adds (end-to-end wall time of a
 * tiny run minus its device time). Prints a table; --json PATH writes the
 * rows in bench/anchors.py's schema (work, check, rate, unit, median_s) plus
 * the two latencies, for bench/report.py. Exit 0 when every check passed, 1
 * when one failed, 2 without a GPU. --quick: small sizes (a smoke run).
 * --precompile: fill the cubin cache first, every kernel of examples/ and
 * of the benchmark programs compiled on all cores with the exact options
 * later users ask for (gpu.sh runs it before the tests: NVRTC takes
 * seconds per generated kernel, one core at a time otherwise). */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/cuda.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "runtime/runtime.h"
#include "driver/driver.h"
#include "sched/sched.h"

#define BENCH_L2_BYTES (60.0 * 1024 * 1024)
#define BENCH_MAX_SETS 8
#define BENCH_MAX_TENSORS 64 /* mlp20: X, 20 weights, 20 biases, Y, 19 temporaries */

static uint64_t bench_rng = 0x9e3779b97f4a7c15ull;

static double bench_rand(void) /* uniform in [-1, 1) */
{
    bench_rng ^= bench_rng << 13;
    bench_rng ^= bench_rng >> 7;
    bench_rng ^= bench_rng << 17;
    return (double)(bench_rng >> 11) / 9007199254740992.0 * 2 - 1;
}

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp);
    return n ? v[n / 2] : 0;
}

/* ---- the programs ---------------------------------------------------------------------- */

typedef enum { REF_MATMUL, REF_LAYERNORM, REF_SOFTMAX, REF_ATTENTION, REF_ATTN_CAUSAL, REF_ATTN_DECODE, REF_SCALEBIAS, REF_SILU, REF_BMM, REF_GEMM_GELU, REF_SUM, REF_MLP, REF_LSTM } bench_ref;

typedef struct bench_case {
    const char *work;    /* the row's name; bench/anchors.py names the same work */
    const char *file;    /* examples/FILE, or a program of bench_inline */
    const char *dtype;   /* "float16", "float32"...: replaces `float(` in the source;
                          * "tf32": float32 with the option allow_tf32=1 */
    bench_ref ref;
    const char *big;     /* sizes "M=4096,K=4096,N=4096" */
    const char *small;   /* the interpreter check's sizes */
    const char *quick;   /* --quick: the "big" run's sizes */
    const char *unit;    /* TFLOP/s or TB/s */
} bench_case;

static const bench_case bench_cases[] = {
    {"GEMM fp16 4096^3", "matmul.tc", "float16", REF_MATMUL, "M=4096,K=4096,N=4096", "M=67,K=131,N=45",
     "M=257,K=131,N=129", "TFLOP/s"},
    {"GEMM fp32 4096^3", "matmul.tc", "float32", REF_MATMUL, "M=4096,K=4096,N=4096", "M=67,K=131,N=45",
     "M=257,K=131,N=129", "TFLOP/s"},
    {"GEMM tf32 4096^3", "matmul.tc", "tf32", REF_MATMUL, "M=4096,K=4096,N=4096", "M=67,K=131,N=45",
     "M=257,K=131,N=129", "TFLOP/s"},
    {"GEMM fp16 8192^3", "matmul.tc", "float16", REF_MATMUL, "M=8192,K=8192,N=8192", "M=130,K=72,N=264",
     "M=257,K=136,N=264", "TFLOP/s"},
    {"GEMM bf16 4096^3", "matmul.tc", "bfloat16", REF_MATMUL, "M=4096,K=4096,N=4096", "M=130,K=72,N=264",
     "M=257,K=136,N=264", "TFLOP/s"},
    {"GEMM bf16 8192^3", "matmul.tc", "bfloat16", REF_MATMUL, "M=8192,K=8192,N=8192", "M=67,K=131,N=45",
     "M=257,K=136,N=264", "TFLOP/s"},
    {"GEMM fp16 4096x14336x4096", "matmul.tc", "float16", REF_MATMUL, "M=4096,N=14336,K=4096", "M=130,K=72,N=264",
     "M=257,K=136,N=264", "TFLOP/s"},
    {"GEMM fp16 4096x4096x14336", "matmul.tc", "float16", REF_MATMUL, "M=4096,N=4096,K=14336", "M=130,K=72,N=264",
     "M=257,K=136,N=264", "TFLOP/s"},
    {"GEMM fp16 128x8192x8192", "matmul.tc", "float16", REF_MATMUL, "M=128,N=8192,K=8192", "M=17,K=72,N=264",
     "M=128,K=136,N=264", "TFLOP/s"},
    {"GEMM fp16 16x8192x8192", "matmul.tc", "float16", REF_MATMUL, "M=16,N=8192,K=8192", "M=5,K=72,N=264",
     "M=16,K=136,N=264", "TFLOP/s"},
    {"GEMM fp16 1x8192x8192", "matmul.tc", "float16", REF_MATMUL, "M=1,N=8192,K=8192", "M=1,K=131,N=264",
     "M=1,K=8192,N=264", "TFLOP/s"},
    {"GEMM+bias+GELU fp16 4096^3", "gemm_gelu", "float16", REF_GEMM_GELU, "M=4096,K=4096,N=4096", "M=130,K=72,N=264",
     "M=257,K=136,N=264", "TFLOP/s"},
    {"bmm fp16 B512 384x384x64", "bmm", "float16", REF_BMM, "B=512,M=384,N=384,K=64", "B=3,M=130,N=72,K=40",
     "B=8,M=384,N=384,K=64", "TFLOP/s"},
    {"layernorm fp16 12288x1024", "layernorm.tc", "float16", REF_LAYERNORM, "N=12288,D=1024", "N=37,D=257",
     "N=123,D=1024", "TB/s"},
    {"softmax fp16 12288x1024", "softmax.tc", "float16", REF_SOFTMAX, "N=12288,D=1024", "N=37,D=257",
     "N=123,D=1024", "TB/s"},
    {"layernorm fp16 8192x8192", "layernorm.tc", "float16", REF_LAYERNORM, "N=8192,D=8192", "N=13,D=1031",
     "N=31,D=8192", "TB/s"},
    {"softmax fp16 8192x8192", "softmax.tc", "float16", REF_SOFTMAX, "N=8192,D=8192", "N=13,D=1031",
     "N=31,D=8192", "TB/s"},
    {"attention fp16 B32 H16 S384 D64", "attention.tc", "float16", REF_ATTENTION,
     "B=512,Tq=384,Tk=384,D=64,E=64", "B=3,Tq=17,Tk=23,D=64,E=64", "B=4,Tq=384,Tk=384,D=64,E=64", "TFLOP/s"},
    /* issue 15: long sequences, head dim 128 (heads folded into B), with
     * and without the causal mask (its TFLOP/s count the half computed),
     * and decode (one query against a long KV: TB/s of the K and V bytes) */
    {"attention fp16 B4 H32 S4096 D128", "attention.tc", "float16", REF_ATTENTION,
     "B=128,Tq=4096,Tk=4096,D=128,E=128", "B=2,Tq=17,Tk=131,D=128,E=128", "B=2,Tq=1024,Tk=1024,D=128,E=128",
     "TFLOP/s"},
    {"attention causal fp16 B4 H32 S4096 D128", "attention_causal.tc", "float16", REF_ATTN_CAUSAL,
     "B=128,Tq=4096,Tk=4096,D=128,E=128", "B=2,Tq=131,Tk=131,D=128,E=128", "B=2,Tq=1024,Tk=1024,D=128,E=128",
     "TFLOP/s"},
    /* head dim 256 (bf16): K/V blocks of 80 rows, two stages a ring */
    {"attention bf16 B4 H16 S4096 D256", "attention.tc", "bfloat16", REF_ATTENTION,
     "B=64,Tq=4096,Tk=4096,D=256,E=256", "B=2,Tq=17,Tk=131,D=256,E=256", "B=2,Tq=1024,Tk=1024,D=256,E=256",
     "TFLOP/s"},
    {"attention decode fp16 B32 H32 Tq1 KV8192 D128", "attention.tc", "float16", REF_ATTN_DECODE,
     "B=1024,Tq=1,Tk=8192,D=128,E=128", "B=2,Tq=1,Tk=300,D=128,E=128", "B=64,Tq=1,Tk=8192,D=128,E=128", "TB/s"},
    {"scale-bias-relu fp16 8192x8192", "scalebiasrelu", "float16", REF_SCALEBIAS, "N=8192,D=8192", "N=13,D=1031",
     "N=31,D=8192", "TB/s"},
    {"silu fp16 8192x8192", "silu", "float16", REF_SILU, "N=8192,D=8192", "N=13,D=1031", "N=31,D=8192", "TB/s"},
    /* issue 15: Graphene's MLP, 20 layers of 128 with bias + ReLU (scaled
     * by 1/8: the values stay in range), one chain kernel; TFLOP/s of the
     * 20 products */
    {"MLP20 fp16 8192x128", "mlp20", "float16", REF_MLP, "B=8192,H=128", "B=130,H=72", "B=1024,H=128", "TFLOP/s"},
    /* issue 15: one LSTM cell step (examples/lstm.tc), one kernel: the
     * four gates' GEMM (K = I + H), bias, nonlinearities and cell update;
     * TFLOP/s of the products (2 B 4H (I + H)) */
    {"LSTM cell fp16 B4096 H1024 I1024", "lstm.tc", "float16", REF_LSTM, "B=4096,I=1024,H=1024,G=4",
     "B=130,I=64,H=72,G=4", "B=257,I=256,H=264,G=4", "TFLOP/s"},
    /* a full reduction to a scalar (issue 10: >= 80% of copy), bytes read */
    {"sum fp32 1e8", "sum", "float32", REF_SUM, "N=100000000", "N=100003", "N=1000003", "TB/s"},
};

/* Elementwise programs that are not examples (no e2e check of their own
 * there): a row-broadcast one (the row engine's forms) and a flat one. */
static const struct {
    const char *name, *text;
} bench_inline[] = {
    {"scalebiasrelu", "def scalebiasrelu(float(N,D) X, float(D) g, float(D) b) -> (Y) {\n"
                      "  Y(n,d) = fmaxf(X(n,d) * g(d) + b(d), 0)\n"
                      "}\n"},
    {"silu", "def silu(float(N,D) X) -> (Y) {\n"
             "  Y(n,d) = X(n,d) * sigmoid(X(n,d))\n"
             "}\n"},
    /* the GEMM epilogue benchmark: bias, then GELU (tanh form) */
    {"gemm_gelu", "def gemm_gelu(float(M,K) A, float(K,N) B, float(N) bias) -> (C) {\n"
                  "  C(m,n) +=! A(m,k) * B(k,n)\n"
                  "  C(m,n) = C(m,n) + bias(n)\n"
                  "  C(m,n) = 0.5 * C(m,n) * (1 + tanh(0.7978845608028654 * (C(m,n) + 0.044715 * C(m,n) * C(m,n) * C(m,n))))\n"
                  "}\n"},
    {"bmm", "def bmm(float(B,M,K) X, float(B,K,N) Y) -> (Z) {\n"
            "  Z(b,m,n) +=! X(b,m,k) * Y(b,k,n)\n"
            "}\n"},
    {"sum", "def sum(float(N) X) -> (S) {\n  S() +=! X(i)\n}\n"},
};

/* The compute capability x 10 of the device the plans are made for (90 on
 * Hopper: the sm_90a plans); set in main. */
static int bench_sm = 80;
/* The strategies' options: $TESSEL_OPTIONS ("contract.mma.bm=128,..."; the
 * library reads no environment), for plan sweeps. */
static sched_options bench_opts;

#define BENCH_MLP_LAYERS 20

/* mlp20: h_k(b,o) = max(h_{k-1} W_k^T + c_k, 0) / 8, 20 layers of H. */
static char *bench_mlp_text(void)
{
    strbuf b = {0};
    sb_puts(&b, "def mlp20(float(B,H) X");
    for (int k = 1; k <= BENCH_MLP_LAYERS; k++) sb_printf(&b, ", float(H,H) W%d, float(H) c%d", k, k);
    sb_puts(&b, ") -> (Y) {\n");
    for (int k = 1; k <= BENCH_MLP_LAYERS; k++) {
        char h[8], prev[8];
        snprintf(h, sizeof h, k == BENCH_MLP_LAYERS ? "Y" : "h%d", k);
        snprintf(prev, sizeof prev, k == 1 ? "X" : "h%d", k - 1);
        sb_printf(&b, "  %s(b,o) +=! %s(b,i) * W%d(o,i)\n  %s(b,o) = fmaxf(%s(b,o) + c%d(o), 0) * 0.125\n", h, prev, k,
                  h, h, k);
    }
    sb_puts(&b, "}\n");
    return sb_take(&b);
}

/* The example's source with `float(` declarations turned into `dtype(`. */
static char *bench_source(const char *file, const char *dtype)
{
    char path[512];
    snprintf(path, sizeof path, "examples/%s", file);
    size_t n;
    char *text = !strcmp(file, "mlp20") ? bench_mlp_text() : NULL;
    for (size_t i = 0; i < sizeof bench_inline / sizeof bench_inline[0]; i++)
        if (!strcmp(file, bench_inline[i].name)) text = strdup(bench_inline[i].text);
    if (!text) text = file_read_all(path, &n);
    if (!text) return NULL;
    strbuf b = {0};
    for (const char *p = text; *p;) {
        if (!strncmp(p, "float(", 6) && (p == text || !((p[-1] >= 'a' && p[-1] <= 'z') || p[-1] == '_'))) {
            sb_printf(&b, "%s(", dtype);
            p += 6;
        } else {
            sb_putc(&b, *p++);
        }
    }
    free(text);
    return sb_take(&b);
}

/* Size of symbol `name` in a "A=1,B=2" list; -1 when absent. */
static int64_t bench_size(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        if (!strncmp(p, name, len) && p[len] == '=') return atoll(p + len + 1);
        p = strchr(p, ',');
        if (p) p++;
    }
    return -1;
}

/* ---- correctness at a small size: CUDA target vs the interpreter ------------------- */

/* Relative L2 error of the CUDA target against the interpreter on fresh
 * inputs at `sizes`; < 0 (message printed) when a run fails. */
static double bench_check_small(const char *src, const char *sizes, int tf32)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    double err = -1;
    tsl_args *ar[2] = {NULL, NULL};
    DLTensor *owned[BENCH_MAX_TENSORS];
    int nowned = 0;
    if (tsl_program_compile(ctx, src, "bench.tc", NULL, &p)) goto done;
    if (getenv("TESSEL_OPTIONS") && tsl_program_set_options(p, getenv("TESSEL_OPTIONS"))) goto done;
    if (tf32 && tsl_program_set_allow_tf32(p, 1)) goto done;
    ar[0] = tsl_args_create(p);
    ar[1] = tsl_args_create(p);
    for (int i = 0; i < tsl_program_param_count(p) && nowned < BENCH_MAX_TENSORS; i++) {
        tsl_param_info pi;
        const char *dims[TSL_MAX_RANK];
        int64_t shape[TSL_MAX_RANK];
        tsl_program_param(p, i, &pi);
        tsl_program_param_dims(p, i, dims);
        for (int k = 0; k < pi.rank; k++) shape[k] = dims[k] ? bench_size(sizes, dims[k]) : 1;
        DLTensor *t = tsl_tensor_alloc(pi.dtype, pi.rank, shape);
        if (!t) goto done;
        owned[nowned++] = t;
        int64_t n = 1;
        for (int k = 0; k < pi.rank; k++) n *= shape[k];
        for (int64_t e = 0; e < n; e++)
            dtype_store(pi.dtype, (char *)t->data + (size_t)e * tsl_dtype_size(pi.dtype), bench_rand());
        tsl_args_set_tensor(ar[0], pi.name, t);
        tsl_args_set_tensor(ar[1], pi.name, t);
    }
    if (tsl_program_run(p, ar[0], TSL_TARGET_INTERP)) goto done;
    if (tsl_program_run(p, ar[1], TSL_TARGET_CUDA)) goto done;
    double num = 0, den = 0;
    for (int o = 0; o < tsl_program_output_count(p); o++) {
        const char *name = tsl_program_output_name(p, o);
        const DLTensor *r = tsl_args_output(ar[0], name), *g = tsl_args_output(ar[1], name);
        tsl_dtype dt;
        tsl_dtype_from_dlpack(r->dtype, &dt);
        int64_t n = 1;
        for (int k = 0; k < r->ndim; k++) n *= r->shape[k];
        for (int64_t e = 0; e < n; e++) {
            double x = dtype_load(dt, (char *)r->data + (size_t)e * tsl_dtype_size(dt));
            double y = dtype_load(dt, (char *)g->data + (size_t)e * tsl_dtype_size(dt));
            num += (y - x) * (y - x);
            den += x * x;
        }
    }
    err = isnan(num) ? INFINITY : sqrt(num / (den > 0 ? den : 1));
done:
    if (err < 0) printf("  small-size check failed: %s\n", tsl_context_error(ctx));
    tsl_args_free(ar[0]);
    tsl_args_free(ar[1]);
    for (int i = 0; i < nowned; i++) tsl_tensor_free(owned[i]);
    tsl_program_free(p);
    tsl_context_free(ctx);
    return err;
}

/* ---- float64 references on sampled outputs ----------------------------------------- */

/* Host copies of one input set and the device run's outputs, by def tensor. */
typedef struct bench_host {
    const lang_def *def;
    const lang_bound *b;
    void *t[BENCH_MAX_TENSORS];
} bench_host;

static int bench_index(const lang_def *def, const char *name)
{
    for (int i = 0; i < def->ntensors; i++)
        if (!strcmp(def->tensors[i]->name, name)) return i;
    return -1;
}

/* Element e of tensor `name` as a double. */
static double bench_at(const bench_host *h, const char *name, int64_t e)
{
    int i = bench_index(h->def, name);
    tsl_dtype dt = h->def->tensors[i]->dtype;
    return dtype_load(dt, (const char *)h->t[i] + (size_t)e * tsl_dtype_size(dt));
}

/* Accumulates ||got - ref|| / ||ref|| over the sampled elements. */
typedef struct bench_err {
    double num, den;
    int nan;
} bench_err;

static void bench_err_add(bench_err *e, double got, double ref)
{
    if (isnan(got)) e->nan = 1;
    e->num += (got - ref) * (got - ref);
    e->den += ref * ref;
}

/* Sample 32 rows (or 256 elements) of the output and compare in float64. */
static double bench_sample_check(const bench_case *bc, const bench_host *h)
{
    const lang_bound *b = h->b;
    const lang_def *def = h->def;
    bench_err e = {0};
    if (bc->ref == REF_MATMUL || bc->ref == REF_GEMM_GELU) {
        int64_t M = h->b->shapes[bench_index(def, "A")][0], K = h->b->shapes[bench_index(def, "A")][1],
                N = h->b->shapes[bench_index(def, "B")][1];
        for (int s = 0; s < 256; s++) {
            int64_t m = (int64_t)((bench_rand() + 1) / 2 * (double)M), n = (int64_t)((bench_rand() + 1) / 2 * (double)N);
            double acc = 0;
            for (int64_t k = 0; k < K; k++) acc += bench_at(h, "A", m * K + k) * bench_at(h, "B", k * N + n);
            if (bc->ref == REF_GEMM_GELU) {
                double x = acc + bench_at(h, "bias", n);
                acc = 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
            }
            bench_err_add(&e, bench_at(h, "C", m * N + n), acc);
        }
    } else if (bc->ref == REF_BMM) {
        int ix = bench_index(def, "X"), iy = bench_index(def, "Y");
        int64_t B = h->b->shapes[ix][0], M = h->b->shapes[ix][1], K = h->b->shapes[ix][2], N = h->b->shapes[iy][2];
        for (int s = 0; s < 256; s++) {
            int64_t bb = (int64_t)((bench_rand() + 1) / 2 * (double)B), m = (int64_t)((bench_rand() + 1) / 2 * (double)M),
                    n = (int64_t)((bench_rand() + 1) / 2 * (double)N);
            double acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += bench_at(h, "X", (bb * M + m) * K + k) * bench_at(h, "Y", (bb * K + k) * N + n);
            bench_err_add(&e, bench_at(h, "Z", (bb * M + m) * N + n), acc);
        }
    } else if (bc->ref == REF_LAYERNORM || bc->ref == REF_SOFTMAX) {
        int64_t R = h->b->shapes[bench_index(def, "X")][0], C = h->b->shapes[bench_index(def, "X")][1];
        double *row = malloc(sizeof *row * (size_t)C);
        for (int s = 0; s < 32 && row; s++) {
            int64_t r = (int64_t)((bench_rand() + 1) / 2 * (double)R);
            double mean = 0, var = 0, mx = -INFINITY, sum = 0;
            for (int64_t c = 0; c < C; c++) {
                row[c] = bench_at(h, "X", r * C + c);
                mean += row[c];
                if (row[c] > mx) mx = row[c];
            }
            mean /= (double)C;
            for (int64_t c = 0; c < C; c++) {
                var += (row[c] - mean) * (row[c] - mean);
                sum += exp(row[c] - mx);
            }
            var /= (double)C;
            for (int64_t c = 0; c < C; c++) {
                double ref = bc->ref == REF_SOFTMAX
                                 ? exp(row[c] - mx) / sum
                                 : (row[c] - mean) / sqrt(var + 1e-5) * bench_at(h, "gamma", c) + bench_at(h, "beta", c);
                bench_err_add(&e, bench_at(h, "Y", r * C + c), ref);
            }
        }
        free(row);
    } else if (bc->ref == REF_MLP) {
        int64_t R = h->b->shapes[bench_index(def, "X")][0], H = h->b->shapes[bench_index(def, "X")][1];
        double *x = malloc(sizeof *x * (size_t)H * 2);
        for (int s = 0; s < 32 && x; s++) {
            int64_t r = (int64_t)((bench_rand() + 1) / 2 * (double)R);
            double *cur = x, *nxt = x + H;
            for (int64_t i = 0; i < H; i++) cur[i] = bench_at(h, "X", r * H + i);
            for (int k = 1; k <= BENCH_MLP_LAYERS; k++) {
                char w[8], c[8];
                snprintf(w, sizeof w, "W%d", k);
                snprintf(c, sizeof c, "c%d", k);
                for (int64_t o = 0; o < H; o++) {
                    double acc = 0;
                    for (int64_t i = 0; i < H; i++) acc += cur[i] * bench_at(h, w, o * H + i);
                    nxt[o] = fmax(acc + bench_at(h, c, o), 0) * 0.125;
                }
                double *t = cur;
                cur = nxt, nxt = t;
            }
            for (int64_t o = 0; o < H; o++) bench_err_add(&e, bench_at(h, "Y", r * H + o), cur[o]);
        }
        free(x);
    } else if (bc->ref == REF_LSTM) {
        int ix = bench_index(def, "X"), iw = bench_index(def, "Wx");
        int64_t B = b->shapes[ix][0], I = b->shapes[ix][1], H = b->shapes[iw][1];
        for (int s = 0; s < 256; s++) {
            int64_t r = (int64_t)((bench_rand() + 1) / 2 * (double)B), o = (int64_t)((bench_rand() + 1) / 2 * (double)H);
            double gt[4];
            for (int c = 0; c < 4; c++) {
                double acc = bench_at(h, "bias", c * H + o);
                for (int64_t i = 0; i < I; i++) acc += bench_at(h, "X", r * I + i) * bench_at(h, "Wx", (c * H + o) * I + i);
                for (int64_t j = 0; j < H; j++)
                    acc += bench_at(h, "Hprev", r * H + j) * bench_at(h, "Wh", (c * H + o) * H + j);
                gt[c] = acc;
            }
            double cn = 1 / (1 + exp(-gt[1])) * bench_at(h, "Cprev", r * H + o) + 1 / (1 + exp(-gt[0])) * tanh(gt[2]);
            bench_err_add(&e, bench_at(h, "Cn", r * H + o), cn);
            bench_err_add(&e, bench_at(h, "Hn", r * H + o), 1 / (1 + exp(-gt[3])) * tanh(cn));
        }
    } else if (bc->ref == REF_SUM) {
        int64_t N = h->b->shapes[bench_index(def, "X")][0];
        double acc = 0, comp = 0; /* compensated, in double */
        for (int64_t i = 0; i < N; i++) {
            double y = bench_at(h, "X", i) - comp, t = acc + y;
            comp = (t - acc) - y;
            acc = t;
        }
        bench_err_add(&e, bench_at(h, "S", 0), acc);
    } else if (bc->ref == REF_SCALEBIAS || bc->ref == REF_SILU) {
        int64_t R = h->b->shapes[bench_index(def, "X")][0], C = h->b->shapes[bench_index(def, "X")][1];
        for (int s = 0; s < 4096; s++) {
            int64_t r = (int64_t)((bench_rand() + 1) / 2 * (double)R), c = (int64_t)((bench_rand() + 1) / 2 * (double)C);
            double x = bench_at(h, "X", r * C + c), ref;
            if (bc->ref == REF_SILU) ref = x / (1 + exp(-x));
            else ref = fmax(x * bench_at(h, "g", c) + bench_at(h, "b", c), 0);
            bench_err_add(&e, bench_at(h, "Y", r * C + c), ref);
        }
    } else {
        int iq = bench_index(def, "Q"), ik = bench_index(def, "K"), iv = bench_index(def, "V");
        int64_t B = b->shapes[iq][0], Tq = b->shapes[iq][1], D = b->shapes[iq][2];
        int64_t Tk = b->shapes[ik][1], E = b->shapes[iv][2];
        double *p = malloc(sizeof *p * (size_t)Tk);
        for (int s = 0; s < 32 && p; s++) {
            int64_t bb = (int64_t)((bench_rand() + 1) / 2 * (double)B), i = (int64_t)((bench_rand() + 1) / 2 * (double)Tq);
            double mx = -INFINITY, den = 0;
            for (int64_t j = 0; j < Tk; j++) {
                double acc = 0;
                for (int64_t d = 0; d < D; d++)
                    acc += bench_at(h, "Q", (bb * Tq + i) * D + d) * bench_at(h, "K", (bb * Tk + j) * D + d);
                p[j] = bc->ref == REF_ATTN_CAUSAL && j > i ? -INFINITY : acc / sqrt((double)D);
                if (p[j] > mx) mx = p[j];
            }
            for (int64_t j = 0; j < Tk; j++) den += (p[j] = exp(p[j] - mx));
            for (int64_t x = 0; x < E; x++) {
                double acc = 0;
                for (int64_t j = 0; j < Tk; j++) acc += p[j] * bench_at(h, "V", (bb * Tk + j) * E + x);
                bench_err_add(&e, bench_at(h, "O", (bb * Tq + i) * E + x), acc / den);
            }
        }
        free(p);
    }
    return e.nan ? INFINITY : sqrt(e.num / (e.den > 0 ? e.den : 1));
}

/* ---- one benchmark ------------------------------------------------------------------- */

typedef struct bench_row {
    char work[96];
    char check[64];
    double rate;
    const char *unit;
    double median_s;
    int ok;
} bench_row;

#define BENCH_TRY(call)                                                                         \
    do {                                                                                        \
        if ((st = (call)) != TSL_OK) {                                                          \
            printf("  %s failed:\n%s\n", #call, sb_str(&d.msg));                               \
            goto done;                                                                          \
        }                                                                                       \
    } while (0)

static void bench_run_case(const bench_case *bc, rt_cuda_device *dev, int quick, bench_row *row)
{
    snprintf(row->work, sizeof row->work, "%s", bc->work);
    row->unit = bc->unit;
    const char *sizes = quick ? bc->quick : bc->big;
    printf("== %s  (examples/%s as %s, %s)\n", bc->work, bc->file, bc->dtype, sizes);
    int tf32 = !strcmp(bc->dtype, "tf32");
    char *src = bench_source(bc->file, tf32 ? "float32" : bc->dtype);
    if (!src) {
        snprintf(row->check, sizeof row->check, "no source");
        printf("  cannot read examples/%s (run from the repository root)\n", bc->file);
        return;
    }
    /* tf32 rounds A and B to 11 significant bits: 2^-11 a product */
    double tol = tf32 ? 5e-3 : strcmp(bc->dtype, "float32") ? 1e-2 : 1e-4;
    double small_err = bench_check_small(src, bc->small, tf32);
    printf("  small-size check (%s) vs interpreter: rel L2 error %.2e (tolerance %.0e)\n", bc->small, small_err, tol);
    if (small_err < 0 || !(small_err < tol)) {
        snprintf(row->check, sizeof row->check, "FAIL small %.1e", small_err);
        free(src);
        return;
    }
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    tsl_source ts = {bc->file, src};
    drv_prepared *x = NULL;
    rt_cuda_ptr ptr[BENCH_MAX_SETS][BENCH_MAX_TENSORS];
    memset(ptr, 0, sizeof ptr);
    bench_host h = {0};
    rt_cuda_event *e0 = NULL, *e1 = NULL;
    double *times = NULL;
    int nsets = 1;
    tsl_status st = TSL_OK;
    lang_module *mod = lang_parse_check(a, &ts, &d);
    const lang_def *def = mod ? lang_module_def(mod, 0) : NULL;
    if (!def || def->ntensors > BENCH_MAX_TENSORS) {
        printf("  %s\n", def ? "too many tensors" : sb_str(&d.msg));
        goto done;
    }
    int64_t *sz = arena_alloc(a, sizeof *sz * (size_t)(def->nsizes + 1));
    for (int i = 0; i < def->nsizes; i++) sz[i] = bench_size(sizes, def->sizes[i]);
    lang_bound *b = NULL;
    if (lang_bind(a, def, sz, &b, &d)) {
        printf("  binding %s: %s\n", sizes, sb_str(&d.msg));
        goto done;
    }
    graph *g = graph_build(a, def, &d);
    sched_options opts = bench_opts;
    if (tf32) opts.allow_tf32 = 1;
    sched_plan *plan = g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, bench_sm, &opts, &d) : NULL;
    if (!plan) {
        printf("  scheduling: %s\n", sb_str(&d.msg));
        goto done;
    }
    long compiles = rt_cuda_compile_count();
    double t0 = bench_now();
    BENCH_TRY(drv_prepare_plan(def, plan, &drv_target_cuda, dev, &x, &d));
    printf("  plan: %d launch%s; kernels ready in %.1f ms (%ld NVRTC compiles, the rest from the cache)\n",
           plan->nlaunches, plan->nlaunches == 1 ? "" : "es", (bench_now() - t0) * 1e3,
           rt_cuda_compile_count() - compiles);
    /* inputs: enough sets that they do not all sit in L2 */
    double in_bytes = 0;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || !(t->flags & LANG_TENSOR_INPUT)) continue;
        double n = 1;
        for (int k = 0; k < t->rank; k++) n *= (double)b->shapes[i][k];
        in_bytes += n * (double)tsl_dtype_size(t->dtype);
    }
    nsets = (int)ceil(2 * BENCH_L2_BYTES / (in_bytes > 1 ? in_bytes : 1));
    if (nsets < 1) nsets = 1;
    if (nsets > BENCH_MAX_SETS) nsets = BENCH_MAX_SETS;
    h.def = def;
    h.b = b;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || (t->flags & LANG_TENSOR_TEMP)) continue;
        int64_t n = 1;
        for (int k = 0; k < t->rank; k++) n *= b->shapes[i][k];
        size_t es = tsl_dtype_size(t->dtype), bytes = (size_t)n * es;
        h.t[i] = malloc(bytes ? bytes : 1);
        if (!h.t[i]) goto done;
        int input = (t->flags & LANG_TENSOR_INPUT) != 0;
        for (int s = 0; s < (input ? nsets : 1); s++) {
            for (int64_t e = 0; e < n; e++) /* fresh values per set; outputs poisoned */
                dtype_store(t->dtype, (char *)h.t[i] + (size_t)e * es, input ? bench_rand() : NAN);
            BENCH_TRY(rt_cuda_alloc(dev, bytes, &ptr[s][i], &d));
            BENCH_TRY(rt_cuda_copy_htod(dev, ptr[s][i], h.t[i], bytes, &d));
        }
        for (int s = input ? nsets : 1; s < nsets; s++) ptr[s][i] = ptr[0][i]; /* one output for all sets */
    }
    /* the host copy of each input now holds the last set: run that one checked */
    BENCH_TRY(drv_run_device(drv_prepared_exec(x), b, ptr[nsets - 1], NULL, 1, &d));
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || !(t->flags & LANG_TENSOR_OUTPUT)) continue;
        int64_t n = 1;
        for (int k = 0; k < t->rank; k++) n *= b->shapes[i][k];
        BENCH_TRY(rt_cuda_copy_dtoh(dev, h.t[i], ptr[nsets - 1][i], (size_t)n * tsl_dtype_size(t->dtype), &d));
    }
    double big_err = bench_sample_check(bc, &h);
    printf("  full-size check: sampled outputs vs float64 on the host: rel L2 error %.2e\n", big_err);
    if (!(big_err < tol)) {
        snprintf(row->check, sizeof row->check, "FAIL full %.1e", big_err);
        goto done;
    }
    /* timing: a first timed run sets the repetition count (about 3 s in all) */
    BENCH_TRY(rt_cuda_event_create(dev, &e0, &d));
    BENCH_TRY(rt_cuda_event_create(dev, &e1, &d));
    float ms = 0;
    for (int w = 0; w < 2 && !(w == 1 && ms > 2000); w++) {
        BENCH_TRY(rt_cuda_event_record(dev, e0, &d));
        BENCH_TRY(drv_run_device(drv_prepared_exec(x), b, ptr[w % nsets], NULL, 0, &d));
        BENCH_TRY(rt_cuda_event_record(dev, e1, &d));
        BENCH_TRY(rt_cuda_event_elapsed(dev, e0, e1, &ms, &d));
    }
    int reps = ms > 0 ? (int)(3000.0 / ms) : 100;
    if (reps > 200) reps = 200;
    if (reps < 5) reps = ms > 2000 ? 3 : 5; /* a very slow plan: few repetitions, still a median */
    times = calloc((size_t)reps, sizeof *times);
    for (int r = 0; times && r < reps; r++) {
        BENCH_TRY(rt_cuda_event_record(dev, e0, &d));
        BENCH_TRY(drv_run_device(drv_prepared_exec(x), b, ptr[r % nsets], NULL, 0, &d));
        BENCH_TRY(rt_cuda_event_record(dev, e1, &d));
        BENCH_TRY(rt_cuda_event_elapsed(dev, e0, e1, &ms, &d));
        times[r] = ms * 1e-3;
    }
    if (!times) goto done;
    double lo = 0, hi = 0;
    row->median_s = bench_median(times, reps);
    lo = times[reps / 10];
    hi = times[reps - 1 - reps / 10];
    double work = 0;
    if (bc->ref == REF_MATMUL || bc->ref == REF_GEMM_GELU || bc->ref == REF_BMM) {
        work = 2;
        for (int i = 0; i < def->nsizes; i++) work *= (double)b->sizes[i];
    }
    else if (bc->ref == REF_MLP) {
        int ix = bench_index(def, "X");
        work = 2.0 * BENCH_MLP_LAYERS * (double)b->shapes[ix][0] * (double)b->shapes[ix][1] * (double)b->shapes[ix][1];
    } else if (bc->ref == REF_LSTM) {
        int ix = bench_index(def, "X"), iw = bench_index(def, "Wx");
        work = 2.0 * (double)b->shapes[ix][0] * 4 * (double)b->shapes[iw][1] * (double)(b->shapes[ix][1] + b->shapes[iw][1]);
    } else if (bc->ref == REF_ATTENTION || bc->ref == REF_ATTN_CAUSAL) {
        int iq = bench_index(def, "Q"), ik = bench_index(def, "K");
        work = 4.0 * (double)b->shapes[iq][0] * (double)b->shapes[iq][1] * (double)b->shapes[ik][1] *
               (double)b->shapes[iq][2] * (bc->ref == REF_ATTN_CAUSAL ? 0.5 : 1.0);
    } else if (bc->ref == REF_ATTN_DECODE) { /* the K and V bytes (fp16) */
        int ik = bench_index(def, "K"), iv = bench_index(def, "V");
        work = 2.0 * ((double)b->shapes[ik][0] * (double)b->shapes[ik][1] * (double)b->shapes[ik][2] +
                      (double)b->shapes[iv][0] * (double)b->shapes[iv][1] * (double)b->shapes[iv][2]);
    } else if (bc->ref == REF_SUM) {
        work = 4.0 * (double)b->shapes[bench_index(def, "X")][0]; /* X read once: f32 */
    } else {
        int ix = bench_index(def, "X");
        work = 2.0 * (double)b->shapes[ix][0] * (double)b->shapes[ix][1] * 2; /* read X, write Y: fp16 */
    }
    row->rate = work / row->median_s / 1e12;
    /* how much of a plan run is zeroing the def's temporaries (drv_run_device
     * zeroes every one per run, also those no kernel touches): the same
     * memsets alone, median of 20 */
    {
        double tbytes = 0;
        rt_cuda_ptr tp[BENCH_MAX_TENSORS] = {0};
        size_t tb[BENCH_MAX_TENSORS] = {0};
        for (int i = 0; i < def->ntensors; i++) {
            const lang_tensor *t = def->tensors[i];
            if (t->is_scalar || !(t->flags & LANG_TENSOR_TEMP)) continue;
            double n = 1;
            for (int k = 0; k < t->rank; k++) n *= (double)b->shapes[i][k];
            tb[i] = (size_t)n * tsl_dtype_size(t->dtype);
            tbytes += (double)tb[i];
            if (tb[i]) BENCH_TRY(rt_cuda_alloc(dev, tb[i], &tp[i], &d));
        }
        double zt[20];
        for (int r = 0; r < 20 && tbytes > 0; r++) {
            BENCH_TRY(rt_cuda_event_record(dev, e0, &d));
            for (int i = 0; i < def->ntensors; i++)
                if (tb[i]) BENCH_TRY(rt_cuda_memset8(dev, tp[i], 0, tb[i], &d));
            BENCH_TRY(rt_cuda_event_record(dev, e1, &d));
            BENCH_TRY(rt_cuda_event_elapsed(dev, e0, e1, &ms, &d));
            zt[r] = ms * 1e-3;
        }
        for (int i = 0; i < BENCH_MAX_TENSORS; i++)
            if (tp[i]) rt_cuda_free(dev, tp[i]);
        if (tbytes > 0) {
            double z = bench_median(zt, 20);
            printf("  of which zeroing %.1f MB of temporaries: %.3f ms; without it %.3f %s\n", tbytes / 1e6, z * 1e3,
                   row->median_s > z ? work / (row->median_s - z) / 1e12 : 0.0, row->unit);
        }
    }
    row->ok = 1;
    snprintf(row->check, sizeof row->check, "err %.1e", big_err > small_err ? big_err : small_err);
    printf("  %d reps over %d input set%s: median %.3f ms (p10 %.3f, p90 %.3f) -> %.3f %s\n", reps, nsets,
           nsets == 1 ? "" : "s", row->median_s * 1e3, lo * 1e3, hi * 1e3, row->rate, row->unit);
done:
    if (st) snprintf(row->check, sizeof row->check, "FAIL %s", tsl_status_name(st));
    free(times);
    rt_cuda_event_destroy(dev, e0);
    rt_cuda_event_destroy(dev, e1);
    for (int s = 0; s < BENCH_MAX_SETS; s++)
        for (int i = 0; i < BENCH_MAX_TENSORS; i++)
            if (ptr[s][i] && (s == 0 || ptr[s][i] != ptr[0][i])) rt_cuda_free(dev, ptr[s][i]);
    for (int i = 0; i < BENCH_MAX_TENSORS; i++) free(h.t[i]);
    drv_prepared_free(x);
    diag_free(&d);
    arena_free(a);
    free(src);
}

/* ---- the weight-only quantized matmul (issue 14) ---------------------------------------
 * Y(m,n) +=! float16(W(k,n)) * S(k / 128, n) * X(m,k), W of each width,
 * f16 activations and scales, group 128: the Llama-3.3-70B shapes (N, K)
 * at M = 1 and 16. Checked at a small size against the interpreter
 * (tsl_program_run, W's packed bytes), then at full size on 64 sampled
 * outputs against float64 on the host; the rate is the bytes of W and S
 * over the time (GB read: compare with the copy's bytes read + written). */
typedef struct bench_qmm {
    const char *w;   /* W's dtype */
    int64_t m, n, k;
} bench_qmm;

static const char *const bench_qmm_widths[] = {"uint1", "uint2", "uint3",      "uint4",     "uint5", "uint6",
                                               "uint7", "uint8", "int4",       "float6e3m2", "float8e4m3"};

static char *bench_qmm_source(const char *w)
{
    char *s = NULL;
    if (asprintf(&s,
                 "def qmm(float16(M,K) X, %s(K,N) W, float16(G,N) S) -> (Y) {\n"
                 "  Y(m,n) +=! float16(W(k,n)) * S(k / 128, n) * X(m,k)\n}\n",
                 w) < 0)
        return NULL;
    return s;
}

/* A random code of W's dtype with a finite value. */
static uint64_t bench_qmm_code(tsl_dtype t)
{
    uint8_t b[2] = {0, 0};
    for (;;) {
        uint64_t c = (uint64_t)((bench_rand() + 1) / 2 * (double)(1u << tsl_dtype_bits(t))) & ((1u << tsl_dtype_bits(t)) - 1);
        dtype_set_bits(t, b, 0, c);
        if (isfinite(dtype_get(t, b, 0))) return c;
    }
}

/* Relative L2 error of the CUDA target against the interpreter at M, K, N
 * (G = K / 128 rounded up); < 0 when a run fails. */
static double bench_qmm_small(const char *src, tsl_dtype wt, int64_t M, int64_t K, int64_t N)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    double err = -1;
    int64_t G = (K + 127) / 128, sx[2] = {M, K}, sw[2] = {K, N}, ss[2] = {G, N};
    DLTensor *X = tsl_tensor_alloc(TSL_DTYPE_F16, 2, sx), *W = tsl_tensor_alloc(wt, 2, sw),
             *S = tsl_tensor_alloc(TSL_DTYPE_F16, 2, ss);
    tsl_args *ar[2] = {NULL, NULL};
    if (!X || !W || !S || tsl_program_compile(ctx, src, "qmm.tc", NULL, &p)) goto done;
    for (int64_t e = 0; e < M * K; e++) dtype_set(TSL_DTYPE_F16, X->data, e, bench_rand());
    for (int64_t e = 0; e < K * N; e++) dtype_set_bits(wt, W->data, e, bench_qmm_code(wt));
    for (int64_t e = 0; e < G * N; e++) dtype_set(TSL_DTYPE_F16, S->data, e, bench_rand() * 0.1);
    for (int r = 0; r < 2; r++) {
        ar[r] = tsl_args_create(p);
        tsl_args_set_tensor(ar[r], "X", X);
        tsl_args_set_tensor(ar[r], "W", W);
        tsl_args_set_tensor(ar[r], "S", S);
        if (tsl_program_run(p, ar[r], r ? TSL_TARGET_CUDA : TSL_TARGET_INTERP)) goto done;
    }
    const DLTensor *y0 = tsl_args_output(ar[0], "Y"), *y1 = tsl_args_output(ar[1], "Y");
    double num = 0, den = 0;
    for (int64_t e = 0; e < M * N; e++) {
        double x = dtype_get(TSL_DTYPE_F16, y0->data, e), y = dtype_get(TSL_DTYPE_F16, y1->data, e);
        num += (y - x) * (y - x);
        den += x * x;
    }
    err = isnan(num) ? INFINITY : sqrt(num / (den > 0 ? den : 1));
done:
    if (err < 0) printf("  small-size check failed: %s\n", tsl_context_error(ctx));
    tsl_args_free(ar[0]);
    tsl_args_free(ar[1]);
    tsl_tensor_free(X);
    tsl_tensor_free(W);
    tsl_tensor_free(S);
    tsl_program_free(p);
    tsl_context_free(ctx);
    return err;
}

static void bench_run_qmm(const bench_qmm *q, rt_cuda_device *dev, int quick, bench_row *row)
{
    tsl_dtype wt;
    snprintf(row->work, sizeof row->work, "qgemv M=%lld %s %lldx%lld", (long long)q->m, q->w, (long long)q->n,
             (long long)q->k);
    row->unit = "TB/s";
    if (dtype_parse(q->w, strlen(q->w), &wt)) return;
    int64_t M = q->m, N = quick ? q->n / 8 : q->n, K = quick ? q->k / 8 : q->k, G = (K + 127) / 128;
    printf("== %s  (W + S bytes over time)\n", row->work);
    char *src = bench_qmm_source(q->w);
    if (!src) return;
    double small = bench_qmm_small(src, wt, 3, 300, 200);
    printf("  small-size check (M=3 K=300 N=200) vs interpreter: rel L2 error %.2e (tolerance 1e-02)\n", small);
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    tsl_source ts = {"qmm.tc", src};
    drv_prepared *x = NULL;
    rt_cuda_ptr ptr[BENCH_MAX_SETS][4];
    memset(ptr, 0, sizeof ptr);
    void *host[4] = {0};
    rt_cuda_event *e0 = NULL, *e1 = NULL;
    double *times = NULL;
    tsl_status st = TSL_OK;
    if (small < 0 || !(small < 1e-2)) {
        snprintf(row->check, sizeof row->check, "FAIL small %.1e", small);
        goto done;
    }
    lang_module *mod = lang_parse_check(a, &ts, &d);
    const lang_def *def = mod ? lang_module_def(mod, 0) : NULL;
    if (!def) goto done;
    int64_t sz[8];
    for (int i = 0; i < def->nsizes; i++) {
        const char *n = def->sizes[i];
        sz[i] = !strcmp(n, "M") ? M : !strcmp(n, "K") ? K : !strcmp(n, "N") ? N : G;
    }
    lang_bound *b = NULL;
    if (lang_bind(a, def, sz, &b, &d)) goto done;
    graph *g = graph_build(a, def, &d);
    sched_plan *plan = g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, bench_sm, &bench_opts, &d) : NULL;
    if (!plan) goto done;
    BENCH_TRY(drv_prepare_plan(def, plan, &drv_target_cuda, dev, &x, &d));
    printf("  plan: %d launch%s (%s)\n", plan->nlaunches, plan->nlaunches == 1 ? "" : "es", plan->launches[0].k->name);
    /* X, W, S, Y by def tensor index (the def's order: X W S Y) */
    size_t bytes[4] = {tsl_dtype_nbytes(TSL_DTYPE_F16, M * K), tsl_dtype_nbytes(wt, K * N),
                       tsl_dtype_nbytes(TSL_DTYPE_F16, G * N), tsl_dtype_nbytes(TSL_DTYPE_F16, M * N)};
    double in_bytes = (double)(bytes[0] + bytes[1] + bytes[2]);
    int nsets = (int)ceil(2 * BENCH_L2_BYTES / in_bytes);
    if (nsets < 1) nsets = 1;
    if (nsets > BENCH_MAX_SETS) nsets = BENCH_MAX_SETS;
    for (int i = 0; i < 4; i++) {
        host[i] = malloc(bytes[i] + 1);
        if (!host[i]) goto done;
    }
    for (int s = 0; s < nsets; s++) {
        for (int64_t e = 0; e < M * K; e++) dtype_set(TSL_DTYPE_F16, host[0], e, bench_rand());
        /* random bytes: every code of the integers; float8e4m3's NaN bytes replaced */
        for (size_t j = 0; j < bytes[1]; j++) {
            bench_rng ^= bench_rng << 13;
            bench_rng ^= bench_rng >> 7;
            bench_rng ^= bench_rng << 17;
            unsigned char c = (unsigned char)(bench_rng >> 24);
            if (wt == TSL_DTYPE_F8E4M3 && (c & 0x7f) == 0x7f) c ^= 1;
            ((unsigned char *)host[1])[j] = c;
        }
        for (int64_t e = 0; e < G * N; e++) dtype_set(TSL_DTYPE_F16, host[2], e, bench_rand() * 0.1);
        for (int i = 0; i < 3; i++) {
            BENCH_TRY(rt_cuda_alloc(dev, bytes[i], &ptr[s][i], &d));
            BENCH_TRY(rt_cuda_copy_htod(dev, ptr[s][i], host[i], bytes[i], &d));
        }
        if (s == 0) BENCH_TRY(rt_cuda_alloc(dev, bytes[3], &ptr[0][3], &d));
        ptr[s][3] = ptr[0][3];
    }
    /* Y poisoned (0xffff: f16 NaN) so that an output the plan leaves
     * unwritten fails the check */
    BENCH_TRY(rt_cuda_memset8(dev, ptr[0][3], 0xff, bytes[3], &d));
    BENCH_TRY(drv_run_device(drv_prepared_exec(x), b, ptr[nsets - 1], NULL, 1, &d));
    BENCH_TRY(rt_cuda_copy_dtoh(dev, host[3], ptr[nsets - 1][3], bytes[3], &d));
    bench_err e = {0};
    for (int smp = 0; smp < 64; smp++) {
        int64_t m = (int64_t)((bench_rand() + 1) / 2 * (double)M), n = (int64_t)((bench_rand() + 1) / 2 * (double)N);
        double acc = 0;
        for (int64_t k = 0; k < K; k++)
            acc += dtype_get(wt, host[1], k * N + n) * dtype_get(TSL_DTYPE_F16, host[2], (k / 128) * N + n) *
                   dtype_get(TSL_DTYPE_F16, host[0], m * K + k);
        bench_err_add(&e, dtype_get(TSL_DTYPE_F16, host[3], m * N + n), acc);
    }
    double big = e.nan ? INFINITY : sqrt(e.num / (e.den > 0 ? e.den : 1));
    printf("  full-size check: 64 sampled outputs vs float64: rel L2 error %.2e\n", big);
    if (!(big < 1e-2)) {
        snprintf(row->check, sizeof row->check, "FAIL full %.1e", big);
        goto done;
    }
    BENCH_TRY(rt_cuda_event_create(dev, &e0, &d));
    BENCH_TRY(rt_cuda_event_create(dev, &e1, &d));
    float ms = 0;
    for (int w = 0; w < 3; w++) {
        BENCH_TRY(rt_cuda_event_record(dev, e0, &d));
        BENCH_TRY(drv_run_device(drv_prepared_exec(x), b, ptr[w % nsets], NULL, 0, &d));
        BENCH_TRY(rt_cuda_event_record(dev, e1, &d));
        BENCH_TRY(rt_cuda_event_elapsed(dev, e0, e1, &ms, &d));
    }
    int reps = ms > 0 ? (int)(1500.0 / ms) : 100;
    if (reps > 300) reps = 300;
    if (reps < 5) reps = 5;
    times = calloc((size_t)reps, sizeof *times);
    for (int r = 0; times && r < reps; r++) {
        BENCH_TRY(rt_cuda_event_record(dev, e0, &d));
        BENCH_TRY(drv_run_device(drv_prepared_exec(x), b, ptr[r % nsets], NULL, 0, &d));
        BENCH_TRY(rt_cuda_event_record(dev, e1, &d));
        BENCH_TRY(rt_cuda_event_elapsed(dev, e0, e1, &ms, &d));
        times[r] = ms * 1e-3;
    }
    if (!times) goto done;
    row->median_s = bench_median(times, reps);
    row->rate = (double)(bytes[1] + bytes[2]) / row->median_s / 1e12;
    row->ok = 1;
    snprintf(row->check, sizeof row->check, "err %.1e", big > small ? big : small);
    printf("  %d reps over %d input sets: median %.2f us -> %.3f TB/s of W + S (%.1f MB)\n", reps, nsets,
           row->median_s * 1e6, row->rate, (double)(bytes[1] + bytes[2]) / 1e6);
done:
    if (st) snprintf(row->check, sizeof row->check, "FAIL %s", tsl_status_name(st));
    if (!row->ok && !row->check[0]) {
        snprintf(row->check, sizeof row->check, "FAIL");
        printf("  %s\n", sb_str(&d.msg));
    }
    free(times);
    rt_cuda_event_destroy(dev, e0);
    rt_cuda_event_destroy(dev, e1);
    for (int s = 0; s < BENCH_MAX_SETS; s++)
        for (int i = 0; i < 4; i++)
            if (ptr[s][i] && (i < 3 || s == 0)) rt_cuda_free(dev, ptr[s][i]);
    for (int i = 0; i < 4; i++) free(host[i]);
    drv_prepared_free(x);
    diag_free(&d);
    arena_free(a);
    free(src);
}

/* ---- latencies ---------------------------------------------------------------------- */

/* Cold NVRTC compile of the first kernel of matmul: its source with a
 * comment no cache has seen, compiled for the device's arch; the median of
 * three such compiles, NVRTC's own cache off (one alone varied 650-1100 ms
 * on the H200's host, and NVRTC 13 served ptxas from its cache).
 * ms, < 0 on error. */
static double bench_cold_compile(rt_cuda_device *dev)
{
    char *src = bench_source("matmul.tc", "float16");
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    double ms = -1;
    tsl_source ts = {"matmul.tc", src ? src : ""};
    lang_module *mod = src ? lang_parse_check(a, &ts, &d) : NULL;
    graph *g = mod ? graph_build(a, lang_module_def(mod, 0), &d) : NULL;
    sched_plan *p = g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, bench_sm, &bench_opts, &d) : NULL;
    strbuf cu = {0};
    if (p && p->nlaunches && !cg_cuda_emit(p->m, p->launches[0].k, &cu, &d)) {
        double t[3];
        int ok = 0;
        size_t base = cu.len;
        for (int r = 0; r < 3; r++) {
            cu.len = base;
            sb_printf(&cu, "\n// cold-compile probe %d %.9f %p\n", r, bench_now(), (void *)&cu);
            void *cubin = NULL;
            size_t n = 0;
            /* ptxas_verbose adds --no-cache: NVRTC 13 keeps ptxas results
             * keyed by the PTX (the precompile step's compile of this very
             * kernel would be a hit, and so would the 2nd and 3rd probe) */
            rt_cuda_options o = {.name = "cold.cu", .ptxas_verbose = 1};
            double t0 = bench_now();
            if (!rt_cuda_compile(sb_str(&cu), rt_cuda_device_info(dev)->arch, &o, &cubin, &n, NULL, &d))
                t[ok++] = (bench_now() - t0) * 1e3;
            free(cubin);
        }
        if (ok == 3) {
            printf("  cold compiles: %.1f, %.1f, %.1f ms\n", t[0], t[1], t[2]);
            ms = bench_median(t, 3);
        }
    }
    if (ms < 0) printf("  cold compile failed: %s\n", sb_str(&d.msg));
    sb_free(&cu);
    diag_free(&d);
    arena_free(a);
    free(src);
    return ms;
}

/* A cached tsl_program_run of matmul fp32 64^3, end to end (median of 30
 * after a warm run), and the device time of its kernels alone; ms. */
static void bench_cached_run(rt_cuda_device *dev, double *wall_ms, double *device_ms)
{
    *wall_ms = *device_ms = -1;
    char *src = bench_source("matmul.tc", "float32");
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    int64_t sh[2] = {64, 64};
    DLTensor *A = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sh), *B = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sh);
    tsl_args *a = NULL;
    double t[30];
    if (!src || !A || !B || tsl_program_compile(ctx, src, "matmul.tc", NULL, &p)) goto done;
    for (int i = 0; i < 64 * 64; i++) {
        ((float *)A->data)[i] = (float)bench_rand();
        ((float *)B->data)[i] = (float)bench_rand();
    }
    a = tsl_args_create(p);
    tsl_args_set_tensor(a, "A", A);
    tsl_args_set_tensor(a, "B", B);
    if (tsl_program_run(p, a, TSL_TARGET_CUDA)) goto done;
    long compiles = rt_cuda_compile_count();
    for (int r = 0; r < 30; r++) {
        double t0 = bench_now();
        if (tsl_program_run(p, a, TSL_TARGET_CUDA)) goto done;
        t[r] = (bench_now() - t0) * 1e3;
    }
    if (rt_cuda_compile_count() != compiles) printf("  note: cached runs compiled again\n");
    *wall_ms = bench_median(t, 30);
    /* the same plan's device time, resident */
    {
        tsl_arena *ar = arena_create();
        tsl_diag d = {0};
        tsl_source ts = {"matmul.tc", src};
        lang_module *mod = lang_parse_check(ar, &ts, &d);
        const lang_def *def = mod ? lang_module_def(mod, 0) : NULL;
        int64_t sz[3] = {64, 64, 64};
        lang_bound *b = NULL;
        graph *g = def && !lang_bind(ar, def, sz, &b, &d) ? graph_build(ar, def, &d) : NULL;
        sched_plan *plan = g ? sched_lower_opt(ar, g, TSL_TARGET_CUDA, bench_sm, &bench_opts, &d) : NULL;
        drv_prepared *x = NULL;
        rt_cuda_ptr ptr[BENCH_MAX_TENSORS] = {0};
        rt_cuda_event *e0 = NULL, *e1 = NULL;
        if (plan && def->ntensors <= BENCH_MAX_TENSORS && !drv_prepare_plan(def, plan, &drv_target_cuda, dev, &x, &d) &&
            !rt_cuda_event_create(dev, &e0, &d) && !rt_cuda_event_create(dev, &e1, &d)) {
            int ok = 1;
            for (int i = 0; i < def->ntensors && ok; i++) ok = !rt_cuda_alloc(dev, 64 * 64 * 4, &ptr[i], &d);
            for (int r = 0; r < 30 && ok; r++) {
                float ms = 0;
                ok = !rt_cuda_event_record(dev, e0, &d) && !drv_run_device(drv_prepared_exec(x), b, ptr, NULL, 0, &d) &&
                     !rt_cuda_event_record(dev, e1, &d) && !rt_cuda_event_elapsed(dev, e0, e1, &ms, &d);
                t[r] = ms;
            }
            if (ok) *device_ms = bench_median(t, 30);
            for (int i = 0; i < def->ntensors; i++) rt_cuda_free(dev, ptr[i]);
        }
        rt_cuda_event_destroy(dev, e0);
        rt_cuda_event_destroy(dev, e1);
        drv_prepared_free(x);
        diag_free(&d);
        arena_free(ar);
    }
done:
    if (*wall_ms < 0) printf("  cached run failed: %s\n", tsl_context_error(ctx));
    tsl_args_free(a);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_program_free(p);
    tsl_context_free(ctx);
    free(src);
}

/* ---- --precompile: fill the cubin cache in parallel ---------------------------------- */

/* One NVRTC compile, with exactly the arch, name and options a later user
 * (the CUDA target, test_cuda_target's NVRTC pass) asks for, so that its
 * rt_cuda_compile is a cache hit. */
typedef struct bench_job {
    char *src;
    char name[160];
    const char *arch;
    int verbose;
} bench_job;

typedef struct bench_pool {
    bench_job *jobs;
    int njobs, failed;
    _Atomic int next;
    pthread_mutex_t mu;
} bench_pool;

static void *bench_worker(void *arg)
{
    bench_pool *pl = arg;
    for (;;) {
        int i = pl->next++;
        if (i >= pl->njobs) return NULL;
        bench_job *j = &pl->jobs[i];
        rt_cuda_options o = {.name = j->name, .ptxas_verbose = j->verbose};
        void *cubin = NULL;
        size_t n = 0;
        char *log = NULL;
        tsl_diag d = {0};
        if (rt_cuda_compile(j->src, j->arch, &o, &cubin, &n, j->verbose ? &log : NULL, &d)) {
            pthread_mutex_lock(&pl->mu);
            pl->failed++;
            printf("  %s %s: %.300s\n", j->name, j->arch, sb_str(&d.msg));
            pthread_mutex_unlock(&pl->mu);
        }
        free(cubin);
        free(log);
        diag_free(&d);
    }
}

/* Jobs for every kernel of every def of `text`: the CUDA target's compile
 * for dev_arch (NULL: none) and, when `tests`, the ptxas-verbose sm_80 and
 * sm_90a compiles of tests/unit/test_cuda_target.c. */
static void bench_add_jobs(const char *file, const char *text, const char *dev_arch, int tests, bench_job **jobs,
                           int *njobs, int *cap)
{
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    tsl_source src = {file, text};
    lang_module *mod = lang_parse_check(a, &src, &d);
    for (int i = 0; mod && i < lang_module_count(mod); i++) {
        graph *g = graph_build(a, lang_module_def(mod, i), &d);
        sched_plan *p = g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, bench_sm, &bench_opts, &d) : NULL;
        for (int l = 0; p && l < p->nlaunches; l++) {
            const tile_kernel *k = p->launches[l].k;
            strbuf cu = {0};
            if (cg_cuda_emit(p->m, k, &cu, &d)) {
                sb_free(&cu);
                continue;
            }
            for (int v = 0; v < 3; v++) {
                if ((v < 2 && !tests) || (v == 2 && !dev_arch)) continue;
                if (*njobs == *cap) {
                    *cap = *cap ? 2 * *cap : 64;
                    *jobs = realloc(*jobs, sizeof **jobs * (size_t)*cap);
                }
                bench_job *j = &(*jobs)[(*njobs)++];
                j->src = strdup(sb_str(&cu));
                j->arch = v == 0 ? "sm_80" : v == 1 ? "sm_90a" : dev_arch;
                j->verbose = v < 2;
                snprintf(j->name, sizeof j->name, v < 2 ? "%s" : "%s.cu", k->name);
            }
            sb_free(&cu);
        }
    }
    diag_free(&d);
    arena_free(a);
}

static int bench_precompile(const char *dev_arch, int nthreads)
{
    bench_job *jobs = NULL;
    int njobs = 0, cap = 0;
    DIR *dp = opendir("examples");
    struct dirent *e;
    while (dp && (e = readdir(dp))) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".tc")) continue;
        char path[512];
        snprintf(path, sizeof path, "examples/%s", e->d_name);
        size_t n;
        char *text = file_read_all(path, &n);
        if (text) bench_add_jobs(e->d_name, text, dev_arch, 1, &jobs, &njobs, &cap);
        free(text);
    }
    if (dp) closedir(dp);
    for (size_t i = 0; dev_arch && i < sizeof bench_cases / sizeof bench_cases[0]; i++) {
        char *text = bench_source(bench_cases[i].file, bench_cases[i].dtype);
        if (text) bench_add_jobs(bench_cases[i].file, text, dev_arch, 0, &jobs, &njobs, &cap);
        free(text);
    }
    bench_pool pl = {.jobs = jobs, .njobs = njobs};
    pthread_mutex_init(&pl.mu, NULL);
    long before = rt_cuda_compile_count();
    double t0 = bench_now();
    pthread_t th[64];
    if (nthreads > 64) nthreads = 64;
    if (nthreads < 1) nthreads = 1;
    for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, bench_worker, &pl);
    for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    printf("precompile: %d jobs on %d threads in %.1f s (%ld NVRTC runs, the rest cache hits), %d failed\n", njobs,
           nthreads, bench_now() - t0, rt_cuda_compile_count() - before, pl.failed);
    for (int i = 0; i < njobs; i++) free(jobs[i].src);
    free(jobs);
    pthread_mutex_destroy(&pl.mu);
    return pl.failed ? 1 : 0;
}

/* The JSON for bench/report.py, rewritten after every row so that a run
 * cut short by its time limit still leaves the rows it finished. */
static void bench_write_json(const char *path, const rt_cuda_info *in, int quick, double cold, double wall,
                             double devms, const bench_row *rows, int nrows)
{
    if (!path) return;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "gpu_bench: cannot write %s\n", path);
        return;
    }
    fprintf(f, "{\"device\": \"%s\", \"arch\": \"%s\", \"quick\": %d, \"cold_compile_ms\": %.3f, "
               "\"cached_run_ms\": %.4f, \"cached_run_device_ms\": %.4f, \"rows\": [",
            in->name, in->arch, quick, cold, wall, devms);
    for (int i = 0; i < nrows; i++)
        fprintf(f, "%s\n {\"work\": \"%s\", \"check\": \"%s\", \"rate\": %.6g, \"unit\": \"%s\", "
                   "\"median_s\": %.9g, \"ok\": %d}",
                i ? "," : "", rows[i].work, rows[i].check, rows[i].rate, rows[i].unit, rows[i].median_s, rows[i].ok);
    fprintf(f, "]}\n");
    fclose(f);
}

/* Does work name one of the '|'-separated substrings of only (NULL: all)? */
static int bench_wanted(const char *only, const char *work)
{
    if (!only) return 1;
    for (const char *p = only;;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        for (const char *w = work; n && *w; w++)
            if (!strncmp(w, p, n)) return 1;
        if (!bar) return 0;
        p = bar + 1;
    }
}

int main(int argc, char **argv)
{
    const char *json = NULL, *only = NULL;
    int quick = 0, precompile = 0;
    bench_opts = sched_options_defaults;
    {
        tsl_diag od = {0};
        char why[256];
        if (sched_options_parse(getenv("TESSEL_OPTIONS"), &bench_opts, &od) ||
            sched_options_check(&bench_opts, TSL_TARGET_CUDA, why, sizeof why)) {
            fprintf(stderr, "gpu_bench: TESSEL_OPTIONS: %s\n", od.nerr ? sb_str(&od.msg) : why);
            return 2;
        }
        diag_free(&od);
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--precompile")) precompile = 1;
        else {
            fprintf(stderr, "usage: gpu_bench [--quick] [--only SUBSTRING[|SUBSTRING...]] [--json PATH] | --precompile\n");
            return 2;
        }
    }
    bench_rng ^= (uint64_t)time(NULL) * 0x2545f4914f6cdd1dull;
    tsl_diag d = {0};
    rt_cuda_device *dev = NULL;
    if (precompile) {
        /* without a device: only the arch-named compiles of the tests */
        char arch[16] = "";
        if (rt_cuda_open(&dev, &d) == TSL_OK) snprintf(arch, sizeof arch, "%s", rt_cuda_device_info(dev)->arch);
        bench_sm = sched_sm_of_arch(arch[0] ? arch : NULL);
        rt_cuda_close(dev);
        diag_free(&d);
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        return bench_precompile(arch[0] ? arch : NULL, (int)(ncpu > 0 ? ncpu : 4));
    }
    if (rt_cuda_open(&dev, &d) != TSL_OK) {
        fprintf(stderr, "gpu_bench: %s\n", sb_str(&d.msg));
        diag_free(&d);
        return 2;
    }
    const rt_cuda_info *in = rt_cuda_device_info(dev);
    bench_sm = sched_sm_of_arch(in->arch);
    printf("device: %s (%s, %d SMs), driver %d, NVRTC %d\n", in->name, in->arch, in->sm_count, in->driver_version,
           rt_cuda_nvrtc_version());
    /* the latencies first: quick, and kept even if a slow case runs out of time */
    printf("== latencies\n");
    double cold = bench_cold_compile(dev), wall = 0, devms = 0;
    bench_cached_run(dev, &wall, &devms);
    printf("  cold NVRTC compile of one kernel (matmul, %s), median of 3: %.1f ms (target < 1000)\n", in->arch, cold);
    printf("  cached tsl_program_run, matmul fp32 64^3: %.2f ms end to end, %.3f ms on the device: "
           "overhead %.2f ms (target < 5)\n", wall, devms, wall - devms);
    int n = (int)(sizeof bench_cases / sizeof bench_cases[0]), failed = 0;
    bench_row rows[160];
    memset(rows, 0, sizeof rows);
    int nrows = 0;
    bench_write_json(json, in, quick, cold, wall, devms, rows, nrows);
    for (int i = 0; i < n; i++) {
        if (!bench_wanted(only, bench_cases[i].work)) continue;
        bench_run_case(&bench_cases[i], dev, quick, &rows[nrows]);
        failed += !rows[nrows].ok;
        nrows++;
        bench_write_json(json, in, quick, cold, wall, devms, rows, nrows);
        fflush(stdout);
    }
    /* the quantized matmul: every width at M = 1 and 16 over the Llama-3.3-70B shapes */
    static const int64_t qshapes[3][2] = {{8192, 8192}, {57344, 8192}, {8192, 28672}};
    for (int mi = 0; mi < 2; mi++)
        for (int si = 0; si < 3; si++)
            for (size_t wi = 0; wi < sizeof bench_qmm_widths / sizeof bench_qmm_widths[0]; wi++) {
                bench_qmm q = {bench_qmm_widths[wi], mi ? 16 : 1, qshapes[si][0], qshapes[si][1]};
                char work[96];
                snprintf(work, sizeof work, "qgemv M=%lld %s %lldx%lld", (long long)q.m, q.w, (long long)q.n,
                         (long long)q.k);
                if (!bench_wanted(only, work)) continue;
                if (!only && nrows >= (int)(sizeof rows / sizeof rows[0])) continue;
                bench_run_qmm(&q, dev, quick, &rows[nrows]);
                failed += !rows[nrows].ok;
                nrows++;
                bench_write_json(json, in, quick, cold, wall, devms, rows, nrows);
                fflush(stdout);
            }
    printf("\ntessel on %s%s\n", in->name, quick ? " (--quick sizes: not the benchmark)" : "");
    printf("%-36s %-16s %10s %-8s %12s\n", "work", "check", "rate", "unit", "median");
    for (int i = 0; i < nrows; i++)
        printf("%-36s %-16s %10.3f %-8s %9.1f us\n", rows[i].work, rows[i].check, rows[i].rate, rows[i].unit,
               rows[i].median_s * 1e6);
    rt_cuda_close(dev);
    diag_free(&d);
    return failed ? 1 : 0;
}
