/* test_sched_strategies.c — the row-reduction and elementwise strategies
 * (src/sched/rowred.c, elementwise.c): each program below, in float32 and
 * float16, must lower to ONE kernel with no gather or scatter, verify,
 * round-trip through the text format, and give the TC interpreter's answer
 * through the TILE INTERPRETER and the CPU target (generated C) on fresh
 * random data (outputs poisoned with NaN) for row lengths 1, 7, 31, 33,
 * 127, 1000, 1025, 4099, 8193, 20000 and row counts 1, 3, 67 (every size
 * class of the GPU plan each run, and a fresh sample of that grid). The CUDA source of every kernel compiles
 * with NVRTC for sm_90a with no spills (skipped when NVRTC is absent). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/cuda.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "sched/sched.h"
#include "sched/strategy.h"
#include "sched_runners.h"
#include "test.h"
#include "tessel.h"
#include "tile/interp.h"

/* `T` is replaced by the dtype. Sizes: N rows, D row length. */
static const struct prog {
    const char *name, *src;
} progs[] = {
    /* two row dims (B is 3): the GPU plan has no warp class for these */
    {"bsoftmax", "def bsoftmax(T(B,N,D) X) -> (Y) {\n"
                 "  mx(b,n) max=! X(b,n,d)\n"
                 "  e(b,n,d) = exp(X(b,n,d) - mx(b,n))\n"
                 "  s(b,n) +=! e(b,n,d)\n"
                 "  Y(b,n,d) = e(b,n,d) / s(b,n)\n"
                 "}\n"},
    {"softmax", "def softmax(T(N,D) X) -> (Y) {\n"
                "  mx(n) max=! X(n,d)\n"
                "  e(n,d) = exp(X(n,d) - mx(n))\n"
                "  s(n) +=! e(n,d)\n"
                "  Y(n,d) = e(n,d) / s(n)\n"
                "}\n"},
    {"layernorm", "def layernorm(T(N,D) X, T(D) gamma, T(D) beta) -> (Y) {\n"
                  "  mean(n) +=! X(n,d)\n"
                  "  mean(n) = mean(n) / D\n"
                  "  xc(n,d) = X(n,d) - mean(n)\n"
                  "  var(n) +=! xc(n,d) * xc(n,d)\n"
                  "  var(n) = var(n) / D\n"
                  "  Y(n,d) = xc(n,d) * rsqrt(var(n) + 1e-5) * gamma(d) + beta(d)\n"
                  "}\n"},
    {"rmsnorm", "def rmsnorm(T(N,D) X, T(D) g) -> (Y) {\n"
                "  ms(n) +=! X(n,d) * X(n,d)\n"
                "  Y(n,d) = X(n,d) * rsqrt(ms(n) / D + 1e-5) * g(d)\n"
                "}\n"},
    {"rowsum", "def rowsum(T(N,D) X) -> (S) {\n"
               "  S(n) +=! X(n,d)\n"
               "}\n"},
    {"rowmax", "def rowmax(T(N,D) X) -> (M, Z) {\n"
               "  M(n) max=! X(n,d)\n"
               "  Z(n) min=! X(n,d) * M(n)\n"
               "}\n"},
    {"mv", "def mv(T(N,D) A, T(D) x) -> (C) {\n"
           "  C(n) = 0.5\n"
           "  C(n) += A(n,d) * x(d)\n"
           "}\n"},
    {"biasrelu", "def biasrelu(T(N,D) X, T(D) b) -> (O) {\n"
                 "  O(n,d) = fmaxf(X(n,d) + b(d), 0)\n"
                 "}\n"},
    {"chain3", "def chain3(T(N,D) X, T(N,D) Z, float alpha) -> (Y) {\n"
               "  t(n,d) = X(n,d) * alpha\n"
               "  u(n,d) = t(n,d) + Z(n,d)\n"
               "  Y(n,d) = tanh(u(n,d)) - (u(n,d) > 0.25 ? u(n,d) : 0.0)\n"
               "}\n"},
};

static const int64_t lens[] = {1, 7, 31, 33, 127, 1000, 1025, 4099, 8193, 20000};
static const int64_t nrows[] = {1, 3, 67};

/* ---- helpers ---------------------------------------------------------------------- */

/* The program text with T replaced by the dtype name. */
static char *prog_text(const struct prog *pr, const char *dt)
{
    strbuf b = {0};
    for (const char *s = pr->src; *s; s++) {
        if (*s == 'T' && (s[1] == '(')) sb_puts(&b, dt);
        else sb_putc(&b, *s);
    }
    return sb_take(&b);
}

typedef struct lowered {
    tsl_arena *a;
    const lang_def *def;
    sched_plan *p;
} lowered;

/* Parse, lower, verify, round-trip; check one kernel with no gather. */
static int lower_prog(const struct prog *pr, const char *dt, lowered *out)
{
    memset(out, 0, sizeof *out);
    out->a = arena_create();
    char *text = prog_text(pr, dt);
    tsl_source src = {pr->name, text};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(out->a, &src, &d);
    CHECK_MSG(mod != NULL, "%s/%s: %s", pr->name, dt, sb_str(&d.msg));
    free(text);
    if (!mod) {
        diag_free(&d);
        return 0;
    }
    out->def = mod->defs[0];
    graph *g = graph_build(out->a, out->def, &d);
    out->p = g ? sched_lower(out->a, g, &d) : NULL;
    CHECK_MSG(out->p != NULL, "%s/%s: lowering failed: %s", pr->name, dt, sb_str(&d.msg));
    if (!out->p) {
        diag_free(&d);
        return 0;
    }
    char *t1 = tile_print(out->p->m);
    tsl_status st = tile_verify(out->p->m, NULL, &d);
    CHECK_MSG(st == TSL_OK, "%s/%s: does not verify: %s\n%s", pr->name, dt, sb_str(&d.msg), t1);
    CHECK_MSG(out->p->nlaunches == 1, "%s/%s: %d kernels, want one\n%s", pr->name, dt, out->p->nlaunches, t1);
    CHECK_MSG(!strstr(t1, "gather") && !strstr(t1, "scatter"), "%s/%s: gathers in the kernel\n%s", pr->name, dt, t1);
    CHECK_MSG(strstr(t1, "_rowred(") || strstr(t1, "_elementwise("), "%s/%s: not a fast strategy\n%s", pr->name, dt,
              t1);
    tsl_source s2 = {pr->name, t1};
    tile_module *m2 = NULL;
    diag_reset(&d);
    CHECK_MSG(tile_parse(out->a, &s2, &d, &m2) == TSL_OK, "%s/%s: reparse: %s", pr->name, dt, sb_str(&d.msg));
    if (m2) {
        char *t2 = tile_print(m2);
        CHECK_MSG(!strcmp(t1, t2), "%s/%s: print/parse/print differs", pr->name, dt);
        free(t2);
    }
    free(t1);
    diag_free(&d);
    return st == TSL_OK && out->p->nlaunches == 1;
}

/* An input element: uniform in [-2, 2] (kind 0), mostly -inf with whole
 * rows of -inf (1), or of magnitude up to 1e30 (2: exp of anything but
 * x - max overflows). */
static double input_value(int kind, int64_t e, int64_t len)
{
    if (kind == 1) {
        int64_t row = len ? e / len : 0;
        if (row % 3 == 2) return -INFINITY;
        return test_rand_int(0, 3) ? -INFINITY : test_rand_double(-2.0, 2.0);
    }
    if (kind == 2) return test_rand_double(-1.0, 1.0) * pow(10.0, (double)test_rand_int(0, 30));
    return test_rand_double(-2.0, 2.0);
}

/* Run with N = rows, D = len (every other size 1) through fn and through
 * the reference interpreter, inputs of the given kind (input_value);
 * compare every output (NaN where the reference is NaN: a row of -inf). */
static void compare_kind(const lowered *L, int64_t rows, int64_t len, const test_runner *fn, const char *what,
                         int kind)
{
    const lang_def *def = L->def;
    tsl_arena *a = arena_create();
    int64_t *sz = arena_alloc(a, sizeof *sz * (size_t)(def->nsizes + 1));
    for (int i = 0; i < def->nsizes; i++)
        sz[i] = !strcmp(def->sizes[i], "N") ? rows : !strcmp(def->sizes[i], "D") ? len : !strcmp(def->sizes[i], "B") ? 3 : 1;
    tsl_diag d = {0};
    lang_bound *b = NULL;
    tsl_status st = lang_bind(a, def, sz, &b, &d);
    CHECK_MSG(st == TSL_OK, "%s: bind: %s", def->name, sb_str(&d.msg));
    int n = def->ntensors;
    void **ref = arena_alloc(a, sizeof *ref * (size_t)(n + 1));
    void **got = arena_alloc(a, sizeof *got * (size_t)(n + 1));
    DLTensor **dls = arena_alloc(a, sizeof *dls * (size_t)(n + 1));
    DLTensor *dlv = arena_alloc(a, sizeof *dlv * (size_t)(n + 1));
    double *scal = arena_alloc(a, sizeof *scal * (size_t)(n + 1));
    interp_tensor *views = arena_alloc(a, sizeof *views * (size_t)(n + 1));
    int64_t *cnt = arena_alloc(a, sizeof *cnt * (size_t)(n + 1));
    for (int i = 0; st == TSL_OK && i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        views[i].dtype = t->dtype;
        if (t->is_scalar) {
            scal[i] = views[i].scalar = test_rand_double(0.5, 1.5);
            continue;
        }
        if (t->flags & LANG_TENSOR_TEMP) continue;
        cnt[i] = 1;
        for (int k = 0; k < t->rank; k++) cnt[i] *= b->shapes[i][k];
        size_t bytes = (size_t)cnt[i] * tsl_dtype_size(t->dtype);
        ref[i] = arena_alloc(a, bytes + 1);
        got[i] = arena_alloc(a, bytes + 1);
        for (int64_t e = 0; e < cnt[i]; e++)
            dtype_store(t->dtype, (char *)ref[i] + (size_t)e * tsl_dtype_size(t->dtype),
                        (t->flags & LANG_TENSOR_INPUT) ? input_value(kind, e, len) : NAN);
        memcpy(got[i], ref[i], bytes);
        views[i].base = ref[i];
        views[i].rank = t->rank;
        int64_t stride = 1;
        for (int k = t->rank - 1; k >= 0; k--) {
            views[i].shape[k] = b->shapes[i][k];
            views[i].stride[k] = stride;
            stride *= b->shapes[i][k];
        }
        dlv[i].data = got[i];
        dlv[i].device.device_type = kDLCPU;
        dlv[i].ndim = t->rank;
        dlv[i].dtype = tsl_dtype_to_dlpack(t->dtype);
        dlv[i].shape = b->shapes[i];
        dls[i] = &dlv[i];
    }
    if (st == TSL_OK) st = interp_run(b, views, &d);
    CHECK_MSG(st == TSL_OK, "%s: reference: %s", def->name, sb_str(&d.msg));
    if (st == TSL_OK) st = test_plan_run(L->p, b, dls, scal, fn, &d);
    CHECK_MSG(st == TSL_OK, "%s (%s, N=%lld D=%lld): %s", def->name, what, (long long)rows, (long long)len,
              sb_str(&d.msg));
    for (int i = 0; st == TSL_OK && i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (!(t->flags & LANG_TENSOR_OUTPUT)) continue;
        double tol = t->dtype == TSL_DTYPE_F16 ? 1e-2 : 1e-4;
        int bad = 0;
        for (int64_t e = 0; e < cnt[i] && bad < 3; e++) {
            double x = dtype_load(t->dtype, (char *)ref[i] + (size_t)e * tsl_dtype_size(t->dtype));
            double y = dtype_load(t->dtype, (char *)got[i] + (size_t)e * tsl_dtype_size(t->dtype));
            int ok = x == y || (isnan(x) && isnan(y)) || /* == : an empty max is -inf */
                     (fabs(x - y) <= tol * (1.0 + fabs(x)) && !isnan(y) && !isnan(x));
            bad += !ok;
            CHECK_MSG(ok, "%s (%s, N=%lld D=%lld): %s[%lld] = %.9g, reference %.9g", def->name, what,
                      (long long)rows, (long long)len, t->name, (long long)e, y, x);
        }
    }
    diag_free(&d);
    arena_free(a);
}

static void compare(const lowered *L, int64_t rows, int64_t len, const test_runner *fn, const char *what)
{
    compare_kind(L, rows, len, fn, what, 0);
}

static const char *const dtypes[] = {"float32", "float16"};

/* Every program and dtype through fn on `per` (rows, length) pairs of the
 * size grid drawn fresh each run, always including the smallest and, for
 * each program, a row longer than one chunk (4099 > 2048: the chunk loop
 * and its masked tail). Both runners simulate every thread of a block, so
 * the whole grid each run would take minutes; over runs every pair is
 * covered. Boxes over max_elems are skipped. */
static void each(const test_runner *fn, const char *what, int per, int64_t max_elems)
{
    for (size_t pi = 0; pi < TSL_COUNTOF(progs); pi++)
        for (int di = 0; di < 2; di++) {
            lowered L;
            if (lower_prog(&progs[pi], dtypes[di], &L)) {
                /* every size class of the GPU plan (strategy.h): a warp per
                 * row (67 rows: 8 per block, a partial last block), a
                 * block per row in registers, the stream with its tail */
                compare(&L, 1, 1, fn, what);
                compare(&L, 67, 33, fn, what);
                compare(&L, (int)test_rand_int(1, 3), 4099, fn, what);
                compare(&L, 1, 8193, fn, what);
                for (int k = 0; k < per; k++) {
                    int64_t r = nrows[test_rand_int(0, (int)TSL_COUNTOF(nrows) - 1)];
                    int64_t l = lens[test_rand_int(0, (int)TSL_COUNTOF(lens) - 1)];
                    if (r * l > max_elems) r = 1;
                    compare(&L, r, l, fn, what);
                }
            }
            arena_free(L.a);
        }
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_lowered_one_kernel(void)
{
    for (size_t pi = 0; pi < TSL_COUNTOF(progs); pi++)
        for (int di = 0; di < 2; di++) {
            lowered L;
            lower_prog(&progs[pi], dtypes[di], &L);
            arena_free(L.a);
        }
}

static void test_tile_interp(void) { each(test_run_tile_interp, "tile interpreter", 1, 8000); }
static void test_cpu(void) { each(test_run_cpu, "cpu", 2, 1 << 20); }

/* Groups the strategies do not recognise are lowered by the generic
 * strategy, and still right: a column reduction, a shifted read, an
 * in-place update of a tensor the group reads. */
static void test_fallback(void)
{
    static const struct prog others[] = {
        {"colsum", "def colsum(T(N,D) X) -> (S) {\n  S(d) +=! X(n,d)\n}\n"},
        {"shift", "def shift(T(N,D) X) -> (Y) {\n  m(n) max=! X(n,d)\n  Y(n,d) = X(n,d) - m(n) where d in 0:D\n}\n"},
        {"prod", "def prod(T(N,D) X) -> (P) {\n  P(n) *=! X(n,d)\n}\n"},
    };
    for (size_t i = 0; i < TSL_COUNTOF(others); i++) {
        tsl_arena *a = arena_create();
        char *text = prog_text(&others[i], "float32");
        tsl_source src = {others[i].name, text};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &src, &d);
        CHECK_MSG(mod != NULL, "%s: %s", others[i].name, sb_str(&d.msg));
        if (mod) {
            lowered L = {a, mod->defs[0], NULL};
            graph *g = graph_build(a, L.def, &d);
            L.p = sched_lower(a, g, &d);
            CHECK(L.p != NULL && tile_verify(L.p->m, NULL, &d) == TSL_OK);
            if (L.p) {
                compare(&L, 3, 7, test_run_tile_interp, "tile interpreter");
                compare(&L, 1, 5, test_run_cpu, "cpu");
            }
        }
        diag_free(&d);
        free(text);
        arena_free(a);
    }
}

/* The CPU plans (sched_lower_for(..., TSL_TARGET_CPU)): the blocked
 * transpose (T x T tiles: sizes 1, primes, non-multiples of T, and an
 * empty dim), the column reduction's row segments, the row reductions'
 * unmasked whole chunks and masked tail (rows of 1, a partial chunk, whole
 * chunks only, whole chunks and a tail), in several dtypes, each against
 * the TC interpreter through the tile interpreter and the generated C. */
static void test_cpu_plans(void)
{
    static const struct cpu_prog {
        struct prog pr;
        const char *want;   /* in the printed plan */
        const char *dts[3]; /* dtypes it runs in */
    } cps[] = {
        {{"tr", "def tr(T(N,D) X) -> (Y) {\n  Y(d,n) = X(n,d)\n}\n"}, "_transpose(", {"float32", "float16", "int8"}},
        {{"colsum", "def colsum(T(N,D) X) -> (S) {\n  S(d) +=! X(n,d)\n}\n"}, "load_global X[n, ", {"float32", "float16", "int32"}},
        {{"colmax", "def colmax(T(N,D) X, T(D) b) -> (S) {\n  S(d) max=! X(n,d) * b(d) + X(N - 1 - n, d)\n}\n"},
         "load_global X[N - 1 - n, ", {"float32", "float64", 0}},
        {{"rowsum", "def rowsum(T(N,D) X) -> (S) {\n  S(n) +=! X(n,d)\n}\n"}, "for c in 0 : D / ", {"float32", "float16", 0}},
        {{"softmax", "def softmax(T(N,D) X) -> (Y) {\n  m(n) max=! X(n,d)\n  e(n,d) = exp(X(n,d) - m(n))\n"
                     "  s(n) +=! e(n,d)\n  Y(n,d) = e(n,d) / s(n)\n}\n"},
         "for c in 0 : D / ", {"float32", "float16", 0}},
    };
    static const int64_t sizes[][2] = {{1, 1}, {1, 67}, {67, 1}, {3, 64}, {64, 3}, {65, 131}, {131, 65},
                                       {2, 1031}, {3, 2048}, {1, 4099}, {0, 5}, {5, 0}};
    for (size_t pi = 0; pi < TSL_COUNTOF(cps); pi++)
        for (int di = 0; di < 3 && cps[pi].dts[di]; di++) {
            const char *dt = cps[pi].dts[di];
            tsl_arena *a = arena_create();
            char *text = prog_text(&cps[pi].pr, dt);
            tsl_source src = {cps[pi].pr.name, text};
            tsl_diag d = {0};
            lang_module *mod = lang_parse_check(a, &src, &d);
            CHECK_MSG(mod != NULL, "%s/%s: %s", cps[pi].pr.name, dt, sb_str(&d.msg));
            graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
            lowered L = {a, mod ? mod->defs[0] : NULL, g ? sched_lower_for(a, g, TSL_TARGET_CPU, &d) : NULL};
            CHECK_MSG(L.p != NULL, "%s/%s: lowering failed: %s", cps[pi].pr.name, dt, sb_str(&d.msg));
            if (L.p) {
                char *t1 = tile_print(L.p->m);
                CHECK_MSG(tile_verify(L.p->m, NULL, &d) == TSL_OK, "%s/%s: does not verify: %s\n%s", cps[pi].pr.name,
                          dt, sb_str(&d.msg), t1);
                CHECK_MSG(strstr(t1, cps[pi].want) != NULL, "%s/%s: not the CPU plan (no '%s')\n%s", cps[pi].pr.name,
                          dt, cps[pi].want, t1);
                CHECK_MSG(!strstr(t1, "gather X"), "%s/%s: X is gathered\n%s", cps[pi].pr.name, dt, t1);
                free(t1);
                for (size_t k = 0; k < TSL_COUNTOF(sizes); k++) {
                    if (sizes[k][0] * sizes[k][1] <= 20000) compare(&L, sizes[k][0], sizes[k][1], test_run_tile_interp, "tile interpreter");
                    compare(&L, sizes[k][0], sizes[k][1], test_run_cpu, "cpu");
                }
            }
            diag_free(&d);
            free(text);
            arena_free(a);
        }
}

/* The CPU plan of softmax (float32, sched_lower_for CPU): rows that fit
 * one chunk and rows streamed in chunks, whose exp is computed once and
 * staged through Y's row (rowred.c rr_plan_stage), against the TC
 * interpreter through the generated C: rows 1, 7, 130 by widths 1, 3, 17,
 * 1000 (one chunk), 1025, 2048 (whole chunks only), 4099 (a masked tail);
 * inputs uniform, -inf-heavy (whole rows of -inf give NaN, as in the
 * interpreter) and up to 1e30 (exp(x) overflows for all but x - max <= 0).
 * Tolerance 1e-4 (compare): f32 exp is within 2 ulp, the row sum of at
 * most 4099 positive terms accumulates per lane (<= 33 terms) and then in
 * a tree (<= 32 + 4 more), so its relative error is under 70 ulp (4.2e-6); 1/s times e
 * adds 2 ulp. */
static void test_cpu_softmax(void)
{
    static const int64_t rows[] = {1, 7, 130}, widths[] = {1, 3, 17, 1000, 1025, 2048, 4099};
    tsl_arena *a = arena_create();
    char *text = prog_text(&progs[1], "float32");
    tsl_source src = {"softmax", text};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK_MSG(mod != NULL, "softmax: %s", sb_str(&d.msg));
    graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
    lowered L = {a, mod ? mod->defs[0] : NULL, g ? sched_lower_for(a, g, TSL_TARGET_CPU, &d) : NULL};
    CHECK_MSG(L.p != NULL, "softmax: lowering failed: %s", sb_str(&d.msg));
    if (L.p) {
        char *t1 = tile_print(L.p->m);
        /* the streaming path stores exp into Y and reads it back: one exp per element there */
        CHECK_MSG(strstr(t1, "load_global Y[") != NULL, "softmax: exp is not staged through Y\n%s", t1);
        free(t1);
        for (size_t r = 0; r < TSL_COUNTOF(rows); r++)
            for (size_t w = 0; w < TSL_COUNTOF(widths); w++)
                for (int kind = 0; kind < 3; kind++) compare_kind(&L, rows[r], widths[w], test_run_cpu, "cpu", kind);
    }
    diag_free(&d);
    free(text);
    arena_free(a);
}

/* NVRTC for sm_90a: every size arm of every kernel compiles with no spills
 * and no stack (min_blocks kernels: a few bytes). */
static void test_nvrtc(void)
{
    tsl_diag d = {0};
    if (rt_cuda_nvrtc_available(&d) != TSL_OK) {
        printf("    NVRTC not available: skipped\n");
        diag_free(&d);
        return;
    }
    for (size_t pi = 0; pi < TSL_COUNTOF(progs); pi++)
        for (int di = 0; di < 2; di++) {
            lowered L;
            if (lower_prog(&progs[pi], dtypes[di], &L)) {
                const tile_kernel *k = L.p->launches[0].k;
                rt_ptxas_report r;
                int narms;
                diag_reset(&d);
                tsl_status st = test_nvrtc_arms(L.p->m, k, "sm_90a", &r, &narms, &d);
                CHECK_MSG(st == TSL_OK, "%s: NVRTC: %s", k->name, sb_str(&d.msg));
                if (st == TSL_OK) {
                    /* min_blocks kernels may spill a little (occupancy bought
                     * with a few L1-resident bytes, measured faster); others not */
                    int allow = k->min_blocks ? 128 : 0;
                    CHECK_MSG(r.found == narms && r.spill_stores <= allow && r.spill_loads <= allow &&
                                  r.stack_frame <= allow,
                              "%s: spills %d/%d, stack %d (allowed %d)", k->name, r.spill_stores, r.spill_loads,
                              r.stack_frame, allow);
                    printf("    %s (%s): %d registers, spills %d/%d, stack %d (the most of %d size arm%s)\n", k->name,
                           dtypes[di], r.registers, r.spill_stores, r.spill_loads, r.stack_frame, narms,
                           narms == 1 ? "" : "s");
                }
            }
            arena_free(L.a);
        }
    diag_free(&d);
}

TEST_SUITE(sched_strategies) = {
    {"lowered_one_kernel", test_lowered_one_kernel},
    {"tile_interp", test_tile_interp},
    {"cpu", test_cpu},
    {"fallback", test_fallback},
    {"cpu_plans", test_cpu_plans},
    {"cpu_softmax", test_cpu_softmax},
    {"nvrtc", test_nvrtc},
    {0},
};
