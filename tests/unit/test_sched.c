/* test_sched.c — the scheduler: every def of the examples (examples/NAME.tc) and of the
 * programs below is lowered to tile IR, which must verify and round-trip
 * through the text format; then the lowered module is run by the TILE
 * INTERPRETER (no C compiler involved) and by the CPU target (generated C)
 * on fresh random data, sizes of 1 and primes, outputs poisoned, and
 * compared with the TC reference interpreter. Also: the new tile ops'
 * golden program and verifier rules, and the out-of-range gather error. */
#include <math.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "sched/sched.h"
#include "sched_runners.h"
#include "test.h"
#include "tessel.h"
#include "tile/interp.h"

/* Programs beyond the examples: every lowering path (dtypes, comparisons,
 * guarded gathers, && ||, integer / and %, casts, integer max/min, scalars,
 * where-clause offsets, constant indices, in/out, non-bang reductions,
 * quasi-affine indices k / 4, k % 3). */
static const char extra_src[] =
    "def ops(float(N) x, float(N) y, float alpha) -> (z, w) {\n"
    "  z(i) = x(i) > y(i) ? pow(abs(x(i)), 1.5) + erf(y(i)) : alpha * fmaxf(x(i), 0) - y(i) % 0.3\n"
    "  w(i) = (x(i) < 0 && y(i) >= 0) || !(x(i) != y(i)) ? 1.0 : exp(-x(i)) * sqrt(abs(y(i)))\n"
    "}\n"
    "def guarded(float(N) X, int64(M) I) -> (Z) {\n"
    "  Z(j) = I(j) >= 0 && I(j) < N ? X(I(j)) : -1.0\n"
    "}\n"
    "def intdiv(int32(N) a, int32(N) b) -> (q, r, s) {\n"
    "  q(i) = b(i) != 0 ? a(i) / b(i) : 7\n"
    "  r(i) = a(i) % 3 + (i - 2) / 2\n"
    "  s(k) max=! a(j) * (j % 2 == 0 ? 1 : -1) where k in 0:2\n"
    "}\n"
    "def prec(float64(N,K) A, float16(K) h) -> (o, p) {\n"
    "  o(n) +=! A(n,k) * float64(h(k))\n"
    "  p(k) min=! float16(A(n,k)) where n in 0:N\n"
    "}\n"
    "def offs(float(N) x) -> (y) {\n"
    "  y(i) = 0\n"
    "  y(i) += x(i + 1) + x(i - 1) where i in 1:N-1\n"
    "  y(i) *= 2.0\n"
    "}\n"
    "def inout(float(N,M) acc, float(N,M) x) -> (acc) {\n"
    "  acc(i,j) += x(i,j) * x(i,0)\n"
    "}\n"
    "def quasi(float(K,N) W, float(G,N) S, float(M,K) X) -> (Y, Z) {\n"
    "  Y(m,n) +=! W(k,n) * S(k / 4, n) * X(m,k)\n"
    "  Z(k,n) = W(k,n) * S(k % 3, (n + 1) / 2) - S((2 * k + 1) / 5, n)\n"
    "}\n";

/* ---- helpers ------------------------------------------------------------------------- */

typedef struct arr {
    void *data;
    DLTensor dl;
    int64_t shape[TSL_MAX_RANK];
    size_t bytes;
} arr;

/* Lower def; check it verifies and that print -> parse -> print is exact. */
static sched_plan *lower_checked(tsl_arena *a, const lang_def *def)
{
    tsl_diag d = {0};
    graph *g = graph_build(a, def, &d);
    sched_plan *p = g ? sched_lower(a, g, &d) : NULL;
    CHECK_MSG(p != NULL, "%s: lowering failed: %s", def->name, sb_str(&d.msg));
    if (!p) {
        diag_free(&d);
        return NULL;
    }
    tsl_status st = tile_verify(p->m, NULL, &d);
    char *t1 = tile_print(p->m);
    CHECK_MSG(st == TSL_OK, "%s: the schedule does not verify: %s\n%s", def->name, sb_str(&d.msg), t1);
    tsl_source src = {def->name, t1};
    tile_module *m2 = NULL;
    diag_reset(&d);
    st = tile_parse(a, &src, &d, &m2);
    CHECK_MSG(st == TSL_OK, "%s: the printed schedule does not parse: %s\n%s", def->name, sb_str(&d.msg), t1);
    if (m2) {
        st = tile_verify(m2, &src, &d);
        CHECK_MSG(st == TSL_OK, "%s: the reparsed schedule does not verify: %s", def->name, sb_str(&d.msg));
        char *t2 = tile_print(m2);
        CHECK_MSG(!strcmp(t1, t2), "%s: print/parse/print differs:\n%s\n---\n%s", def->name, t1, t2);
        free(t2);
    }
    free(t1);
    diag_free(&d);
    return st == TSL_OK ? p : NULL;
}

/* Bind sizes: set 0 all ones, set 1 distinct primes, then fallbacks of all
 * 5s and all 7s (some programs need a size >= a constant index), set 2
 * every other size 0 (empty boxes; skipped where the program cannot bind). */
static lang_bound *bind_sizes(tsl_arena *a, const lang_def *def, int set, int64_t *minsize)
{
    static const int64_t primes[] = {7, 5, 3, 11, 13, 2, 17, 19};
    int64_t *sz = arena_alloc(a, sizeof *sz * (size_t)(def->nsizes + 1));
    for (int tries = 0; tries < 3; tries++) {
        for (int i = 0; i < def->nsizes; i++) {
            if (set == 0) sz[i] = 1;
            else if (set == 2) sz[i] = i % 2 ? 3 : 0; /* zero-size boxes */
            else if (tries == 0) sz[i] = primes[i % 8];
            else sz[i] = tries == 1 ? 5 : 7;
        }
        if (set != 1 && tries > 0) return NULL;
        /* a where-only size must leave room for the ranges that use it */
        tsl_diag d = {0};
        lang_bound *b = NULL;
        int st = lang_bind(a, def, sz, &b, &d);
        diag_free(&d);
        if (st == TSL_OK) {
            *minsize = INT64_MAX;
            for (int i = 0; i < def->nsizes; i++)
                if (sz[i] < *minsize) *minsize = sz[i];
            if (def->nsizes == 0) *minsize = 1;
            return b;
        }
    }
    return NULL;
}

static void fill_random(void *p, tsl_dtype t, int64_t n, int64_t intmax)
{
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (dtype_info_of(t)->is_float) v = test_rand_double(-1.0, 1.0);
        else if (t == TSL_DTYPE_BOOL) v = (double)test_rand_int(0, 1);
        else v = (double)test_rand_int(0, intmax > 1 ? intmax - 1 : 0);
        dtype_store(t, (char *)p + (size_t)i * tsl_dtype_size(t), v);
    }
}

static double tolerance(tsl_dtype t)
{
    switch (t) {
    case TSL_DTYPE_F16: return 2e-2;
    case TSL_DTYPE_BF16: return 5e-2;
    case TSL_DTYPE_F32: return 2e-4;
    case TSL_DTYPE_F64: return 1e-9;
    default: return 0;
    }
}

/* Inputs for compare_run: integers below the smallest size (ctx), so that
 * gathers stay in range. */
static void fill_input(const lang_tensor *t, void *data, int64_t n, void *ctx)
{
    fill_random(data, t->dtype, n, *(const int64_t *)ctx);
}

/* Run def on one size set with the reference interpreter and with the plan
 * through `fn`; compare every output. Returns 1 when it ran. */
static int compare_run(tsl_arena *a, const lang_def *def, const sched_plan *p, int set, const test_runner *fn,
                       const char *what)
{
    int64_t minsize = 1;
    lang_bound *b = bind_sizes(a, def, set, &minsize);
    if (!b) return 0;
    test_plan_fill f = {.input = fill_input, .ctx = &minsize};
    test_plan_data c;
    test_plan_data_make(a, def, b, &f, &c);
    tsl_diag d = {0};
    tsl_status st = interp_run(b, c.views, &d);
    if (set == 2 && st == TSL_ERR_BOUNDS) { /* indices into an empty tensor: nothing to compare */
        diag_free(&d);
        return 0;
    }
    CHECK_MSG(st == TSL_OK, "%s: reference run failed: %s", def->name, sb_str(&d.msg));
    diag_free(&d);
    char label[200];
    snprintf(label, sizeof label, "%s (%s, set %d)", def->name, what, set);
    if (st || test_plan_data_run(&c, p, fn, label)) return 1;
    for (int i = 0; i < def->ntensors; i++)
        if (def->tensors[i]->flags & LANG_TENSOR_OUTPUT) test_plan_data_compare(&c, i, tolerance(def->tensors[i]->dtype), 3, label);
    return 1;
}

/* Every def of a source: lower + round trip, then runs on two size sets. */
static void check_source(const char *name, const char *text, int tile_interp, int cpu)
{
    tsl_arena *a = arena_create();
    tsl_source src = {name, text};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK_MSG(mod != NULL, "%s: %s", name, sb_str(&d.msg));
    diag_free(&d);
    for (int i = 0; mod && i < mod->ndefs; i++) {
        const lang_def *def = mod->defs[i];
        sched_plan *p = lower_checked(a, def);
        if (!p) continue;
        int ran = 0;
        for (int set = 0; set < 3; set++) {
            if (tile_interp) ran += compare_run(a, def, p, set, test_run_tile_interp, "tile interpreter");
            if (cpu) ran += compare_run(a, def, p, set, test_run_cpu, "cpu");
        }
        CHECK_MSG(ran > 0 || (!tile_interp && !cpu), "%s: no size set binds", def->name);
    }
    arena_free(a);
}

static const char *const examples[] = {
    "attention.tc", "conv1d.tc", "conv2d.tc", "fcrelu.tc", "gather.tc",  "group_conv.tc", "layernorm.tc",
    "lstm.tc",      "lut2.tc",   "matmul.tc", "maxpool2x2.tc", "mlp3.tc", "mv.tc", "outer_product_mm.tc",
    "sconv2d.tc",   "sgemm.tc",  "softmax.tc", "tmm.tc",
};

static void each_example(int tile_interp, int cpu)
{
    for (size_t i = 0; i < TSL_COUNTOF(examples); i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/%s", test_root(), examples[i]);
        size_t len;
        char *text = file_read_all(path, &len);
        CHECK_MSG(text != NULL, "cannot read %s", path);
        if (!text) continue;
        check_source(examples[i], text, tile_interp, cpu);
        free(text);
    }
    check_source("extra.tc", extra_src, tile_interp, cpu);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_lower_verify_roundtrip(void) { each_example(0, 0); }
static void test_tile_interp_matches(void) { each_example(1, 0); }
static void test_cpu_matches(void) { each_example(0, 1); }

static void test_ops_golden(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/tile_golden/sched_ops.tile", test_root());
    size_t len;
    char *text = file_read_all(path, &len);
    CHECK(text != NULL);
    if (!text) return;
    tsl_arena *a = arena_create();
    tsl_source src = {"sched_ops.tile", text};
    tsl_diag d = {0};
    tile_module *m = NULL;
    CHECK_EQ_INT(tile_parse(a, &src, &d, &m), TSL_OK);
    if (m) {
        CHECK_MSG(tile_verify(m, &src, &d) == TSL_OK, "%s", sb_str(&d.msg));
        char *p = tile_print(m);
        CHECK_EQ_STR(p, text);
        free(p);
    }
    diag_free(&d);
    arena_free(a);
    free(text);
}

/* The golden program's semantics on the tile interpreter: Y[i] = i % 3 != 0
 * ? erf(pow(X[I[i, i % 3]] * alpha, 2)) : -1.5, where an index outside
 * [0, n) reads 0 instead (the mask), computed here in float. */
static void test_ops_interp(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/tile_golden/sched_ops.tile", test_root());
    size_t len;
    char *text = file_read_all(path, &len);
    CHECK(text != NULL);
    if (!text) return;
    tsl_arena *a = arena_create();
    tsl_source src = {"sched_ops.tile", text};
    tsl_diag d = {0};
    tile_module *m = NULL;
    CHECK_EQ_INT(tile_parse(a, &src, &d, &m), TSL_OK);
    static const int64_t sizes[] = {1, 2, 3, 61, 64, 131};
    for (size_t t = 0; m && t < TSL_COUNTOF(sizes); t++) {
        int64_t n = sizes[t], shi[2] = {n, 3};
        float *X = malloc(sizeof *X * (size_t)n), *Y = malloc(sizeof *Y * (size_t)n);
        int32_t *I = malloc(sizeof *I * (size_t)n * 3);
        float alpha = (float)test_rand_double(0.5, 2.0);
        for (int64_t i = 0; i < n; i++) {
            X[i] = (float)test_rand_double(-1.0, 1.0);
            Y[i] = NAN;
        }
        for (int64_t i = 0; i < n * 3; i++) I[i] = (int32_t)test_rand_int(-2, (long)n + 2);
        DLTensor tx = {.data = X, .device = {kDLCPU, 0}, .ndim = 1, .dtype = tsl_dtype_to_dlpack(TSL_DTYPE_F32), .shape = &n};
        DLTensor ti = {.data = I, .device = {kDLCPU, 0}, .ndim = 2, .dtype = tsl_dtype_to_dlpack(TSL_DTYPE_I32), .shape = shi};
        DLTensor ty = {.data = Y, .device = {kDLCPU, 0}, .ndim = 1, .dtype = tsl_dtype_to_dlpack(TSL_DTYPE_F32), .shape = &n};
        tile_interp_arg args[5] = {{"X", &tx, 0}, {"I", &ti, 0}, {"Y", &ty, 0}, {"n", NULL, n},
                                   tile_interp_arg_float("alpha", alpha)};
        tile_interp_opts o;
        memset(&o, 0, sizeof o);
        diag_reset(&d);
        tsl_status st = tile_interp_run(m->kernels[0], &src, args, 5, &o, &d);
        CHECK_MSG(st == TSL_OK, "n=%lld: %s", (long long)n, sb_str(&d.msg));
        for (int64_t i = 0; !st && i < n; i++) {
            int64_t j = I[i * 3 + i % 3];
            float x = j >= 0 && j < n ? X[j] : 0.0f;
            float want = i % 3 ? erff(powf(x * alpha, 2.0f)) : -1.5f;
            CHECK_MSG(fabsf(Y[i] - want) <= 1e-6f, "n=%lld: Y[%lld] = %g, want %g", (long long)n, (long long)i,
                      Y[i], want);
        }
        free(X);
        free(Y);
        free(I);
    }
    diag_free(&d);
    arena_free(a);
    free(text);
}

/* Each verifier rule of the new ops, by a one-line mutation of a valid kernel. */
static void test_ops_verifier(void)
{
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"  g = gather X, f -> register f32[64] layout spatial(32).local(2)\n", NULL},
        {"  g = gather X, f, f -> register f32[64] layout spatial(32).local(2)\n", "2 indices for the rank-1"},
        {"  g = gather X, f -> register f16[64] layout spatial(32).local(2)\n", "but the elements are"},
        {"  g = gather X, b -> register f32[64] layout spatial(32).local(2)\n", "must be an int tensor"},
        {"  g = gather X, f -> register f32[64] layout spatial(32).local(2) mask f\n", "must be a bool"},
        {"  scatter x -> X, f mask b\n", NULL},
        {"  scatter x -> X, 3\n", NULL},
        {"  scatter f -> X, f\n", "but the elements are"},
        {"  y = erf f\n", "takes float tensors"},
        {"  y = not x\n", "takes bool tensors"},
        {"  y = and b, b\n", NULL},
        {"  y = select x, x, x\n", "must be bool"},
        {"  y = select b, x, 1.0\n", NULL},
        {"  y = lt x, f\n", "differ in dtype or shape"},
        {"  y = iota -> register f32[64] layout spatial(32).local(2) dim 0\n", "integer type"},
        {"  y = iota -> register i32[64] layout spatial(32).local(2)\n", "needs 'dim D'"},
        {"  y = add x, alpha\n", NULL},
        {"  y = iota alpha -> register i32[64] layout spatial(32).local(2) dim 0\n", "typed scalar"},
        {"  y = add x, 1 mask b\n", "takes no 'mask'"},
    };
    for (size_t i = 0; i < TSL_COUNTOF(cases); i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "kernel k(X: global f32[N], alpha: f32) grid(1) threads(32) {\n"
                 "  f = iota -> register i64[64] layout spatial(32).local(2) dim 0\n"
                 "  b = lt f, N\n"
                 "  x = gather X, f -> register f32[64] layout spatial(32).local(2) mask b\n"
                 "%s}\n",
                 cases[i].body);
        tsl_arena *a = arena_create();
        tsl_source src = {"v.tile", text};
        tsl_diag d = {0};
        tile_module *m = NULL;
        tsl_status st = tile_parse(a, &src, &d, &m);
        CHECK_MSG(st == TSL_OK, "case %zu does not parse: %s", i, sb_str(&d.msg));
        if (m) {
            st = tile_verify(m, &src, &d);
            if (!cases[i].want) {
                CHECK_MSG(st == TSL_OK, "case %zu: %s", i, sb_str(&d.msg));
                char *p = tile_print(m);
                CHECK_MSG(!strcmp(p, text), "case %zu prints differently:\n%s", i, p);
                free(p);
            } else {
                CHECK_MSG(st != TSL_OK && strstr(sb_str(&d.msg), cases[i].want), "case %zu: want '%s' in: %s", i,
                          cases[i].want, sb_str(&d.msg));
            }
        }
        diag_free(&d);
        arena_free(a);
    }
}

/* An index out of range is a run-time error naming the tensor, the
 * dimension, the index and the bound: from the tile interpreter running the
 * schedule, and from the CPU target through the public API, where it has
 * the reference interpreter's located message. */
static void test_gather_out_of_range(void)
{
    static const char src_text[] = "def g(float(N) X, int64(A) I) -> (Z) {\n  Z(i) = X(I(i))\n}\n";
    float X[5] = {1, 2, 3, 4, 5}, Z[3] = {NAN, NAN, NAN};
    int64_t I[3] = {1, 9, 0}, shx[1] = {5}, shi[1] = {3};
    DLTensor tx = {.data = X, .device = {kDLCPU, 0}, .ndim = 1, .dtype = tsl_dtype_to_dlpack(TSL_DTYPE_F32), .shape = shx};
    DLTensor ti = {.data = I, .device = {kDLCPU, 0}, .ndim = 1, .dtype = tsl_dtype_to_dlpack(TSL_DTYPE_I64), .shape = shi};
    DLTensor tz = {.data = Z, .device = {kDLCPU, 0}, .ndim = 1, .dtype = tsl_dtype_to_dlpack(TSL_DTYPE_F32), .shape = shi};

    tsl_arena *a = arena_create();
    tsl_source src = {"g.tc", src_text};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK(mod != NULL);
    const lang_def *def = mod ? mod->defs[0] : NULL;
    sched_plan *p = def ? lower_checked(a, def) : NULL;
    int64_t sizes[2] = {5, 3}; /* N, A */
    lang_bound *b = NULL;
    if (p) CHECK_EQ_INT(lang_bind(a, def, sizes, &b, &d), TSL_OK);
    if (b) {
        DLTensor *ts[3] = {&tx, &ti, &tz};
        double scal[3] = {0};
        diag_reset(&d);
        CHECK_EQ_INT(test_plan_run(p, b, ts, scal, test_run_tile_interp, &d), TSL_ERR_BOUNDS);
        const char *msg = sb_str(&d.msg);
        CHECK_MSG(strstr(msg, "index 9") && strstr(msg, "dimension 0") && strstr(msg, "'X'") && strstr(msg, "5"),
                  "tile interpreter: %s", msg);
    }
    diag_free(&d);
    arena_free(a);

    tsl_context *ctx = tsl_context_create();
    tsl_program *prog = NULL;
    CHECK_EQ_INT(tsl_program_compile(ctx, src_text, "g.tc", NULL, &prog), TSL_OK);
    tsl_args *args = prog ? tsl_args_create(prog) : NULL;
    if (args) {
        CHECK_EQ_INT(tsl_args_set_tensor(args, "X", &tx), TSL_OK);
        CHECK_EQ_INT(tsl_args_set_tensor(args, "I", &ti), TSL_OK);
        CHECK_EQ_INT(tsl_program_run(prog, args, TSL_TARGET_CPU), TSL_ERR_BOUNDS);
        const char *msg = tsl_context_error(ctx);
        CHECK_MSG(strstr(msg, "g.tc:2:") && strstr(msg, "index 9 out of range for dimension 0 of 'X' (size 5)"),
                  "cpu: %s", msg);
        I[1] = 4;
        CHECK_EQ_INT(tsl_program_run(prog, args, TSL_TARGET_CPU), TSL_OK);
        /* a second run finds the compiled kernels in the cache */
        long compiles = rt_cpu_compile_count();
        CHECK_EQ_INT(tsl_program_run(prog, args, TSL_TARGET_CPU), TSL_OK);
        CHECK_EQ_INT(rt_cpu_compile_count(), compiles);
        const DLTensor *out = tsl_args_output(args, "Z");
        CHECK(out && ((float *)out->data)[0] == 2 && ((float *)out->data)[1] == 5 && ((float *)out->data)[2] == 1);
    }
    tsl_args_free(args);
    tsl_program_free(prog);
    tsl_context_free(ctx);
}

TEST_SUITE(sched) = {
    {"ops_golden", test_ops_golden},
    {"ops_interp", test_ops_interp},
    {"ops_verifier", test_ops_verifier},
    {"lower_verify_roundtrip", test_lower_verify_roundtrip},
    {"tile_interp_matches", test_tile_interp_matches},
    {"gather_out_of_range", test_gather_out_of_range},
    {"cpu_matches", test_cpu_matches},
    {0},
};
