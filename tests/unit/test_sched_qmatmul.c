/* test_sched_qmatmul.c — the weight-only quantized matmul strategy
 * (src/sched/qmatmul.c): Y(m,n) +=! T(W(k,n)) * S(k / G, n) * X(m,k) with
 * W of every low-bit width (and int8/uint8), with and without zero points,
 * scales per group, per column or none, must become the strategy's
 * kernels (the byte-reading one and, for widths whose rows need not be
 * whole bytes, the element-reading one behind the guard), verify, and give
 * the TC interpreter's answer on the tile interpreter and the CPU target
 * (and the GPU plan's CUDA in the host emulation), for the CPU and the GPU
 * plans, at sizes no tile divides: M 1 and 3, K 77 and 200 (groups of 32,
 * and 7, 48, 64, 128: a partial last group), N 19 and 72 (a partial
 * column block; odd N takes the element-reading kernel for odd widths).
 * W covers its whole range (every code), X, S, Z fresh random values,
 * outputs poisoned with NaN. The GPU plans compile with NVRTC for sm_80
 * and sm_90a without spills. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "sched/sched.h"
#include "sched_runners.h"
#include "test.h"
#include "tessel.h"

/* The program for weight dtype `w`: form 0 grouped scales, 1 grouped
 * scales and zero points, 2 per-column scale and zero point, 3 no scale,
 * 4 float32 activations and output, grouped scales. */
static char *program(const char *w, int form, int gs)
{
    char *s = NULL;
    switch (form) {
    case 0:
        TSL_ASSERT(asprintf(&s,
                            "def q(float16(M,K) X, %s(K,N) W, float16(G,N) S) -> (Y) {\n"
                            "  Y(m,n) +=! float16(W(k,n)) * S(k / %d, n) * X(m,k)\n}\n",
                            w, gs) > 0);
        break;
    case 1:
        TSL_ASSERT(asprintf(&s,
                            "def q(float16(M,K) X, %s(K,N) W, float16(G,N) S, float16(G,N) Z) -> (Y) {\n"
                            "  Y(m,n) +=! X(m,k) * ((float16(W(k,n)) - Z(k / %d, n)) * S(k / %d, n))\n}\n",
                            w, gs, gs) > 0);
        break;
    case 2:
        TSL_ASSERT(asprintf(&s,
                            "def q(float16(M,K) X, %s(K,N) W, float16(N) S, float16(N) Z) -> (Y) {\n"
                            "  Y(m,n) +=! S(n) * (float16(W(k,n)) - Z(n)) * X(m,k)\n}\n",
                            w) > 0);
        break;
    case 3:
        TSL_ASSERT(asprintf(&s,
                            "def q(float16(M,K) X, %s(K,N) W) -> (Y) {\n"
                            "  Y(m,n) +=! float16(W(k,n)) * X(m,k)\n}\n",
                            w) > 0);
        break;
    case 5:
        TSL_ASSERT(asprintf(&s,
                            "def q(float16(M,K) X, %s(K,N) W, float16(N) S) -> (Y) {\n"
                            "  Y(m,n) +=! S(n) * float16(W(k,n)) * X(m,k)\n}\n",
                            w) > 0);
        break;
    default:
        TSL_ASSERT(asprintf(&s,
                            "def q(float(M,K) X, %s(K,N) W, float(G,N) S) -> (Y) {\n"
                            "  Y(m,n) +=! float(W(k,n)) * S(k / %d, n) * X(m,k)\n}\n",
                            w, gs) > 0);
        break;
    }
    return s;
}

/* The def of program src (a parse failure CHECKed); NULL when it fails. */
static const lang_def *parse_def(tsl_arena *a, const char *src)
{
    tsl_source *s = arena_alloc(a, sizeof *s);
    s->name = "q.tc";
    s->text = src;
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, s, &d);
    CHECK_MSG(mod != NULL, "%s", sb_str(&d.msg));
    diag_free(&d);
    return mod ? mod->defs[0] : NULL;
}

/* The same program computing in float32 (the casts of W to float32): the
 * reference interpreter on it gives the products unrounded, which is what
 * the kernels compute (exact products, f32 sums); on the float16 program
 * it rounds every product to float16, and with values up to 255 and
 * cancelling sums that rounding alone can exceed any fair tolerance. */
static const lang_def *exact_def(tsl_arena *a, const char *src)
{
    char *t = arena_strdup(a, src);
    for (char *p = strstr(t, "float16(W"); p; p = strstr(p, "float16(W")) memcpy(p, "float32", 7);
    return parse_def(a, t);
}

/* W every code of its dtype (finite), the other inputs in [-1, 1]. */
static void fill_input(const lang_tensor *t, void *data, int64_t n, void *ctx)
{
    (void)ctx;
    const dtype_info *di = dtype_info_of(t->dtype);
    for (int64_t e = 0; e < n; e++) {
        if (di->bits <= 8) {
            uint64_t c = (uint64_t)test_rand_int(0, (1 << di->bits) - 1);
            dtype_set_bits(t->dtype, data, e, c);
            if (!isfinite(dtype_get(t->dtype, data, e))) dtype_set_bits(t->dtype, data, e, 1);
        } else {
            dtype_set(t->dtype, data, e, test_rand_double(-1.0, 1.0));
        }
    }
}

/* Fresh inputs (fill_input); Y poisoned. Runs the reference (on xdef, the
 * float32 form of def) and the plan through fn, and compares. */
static void compare(tsl_arena *a, const lang_def *def, const lang_def *xdef, const sched_plan *p, const int64_t *sz,
                    const test_runner *fn, const char *what)
{
    tsl_diag d = {0};
    lang_bound *b = NULL;
    tsl_status st = lang_bind(a, def, sz, &b, &d);
    CHECK_MSG(st == TSL_OK, "%s: binding sizes failed: %s", def->name, sb_str(&d.msg));
    if (st) {
        diag_free(&d);
        return;
    }
    int n = def->ntensors;
    test_plan_fill f = {.input = fill_input};
    test_plan_data c;
    test_plan_data_make(a, def, b, &f, &c);
    /* the reference: xdef on the same inputs, its float32 Y */
    lang_bound *xb = NULL;
    st = lang_bind(a, xdef, sz, &xb, &d);
    const lang_tensor *Y = def->outputs[0], *XY = xdef->outputs[0];
    int i = Y->index;
    void *xref = arena_alloc(a, tsl_dtype_nbytes(XY->dtype, c.cnt[i]) + 1);
    interp_tensor *xviews = arena_alloc(a, sizeof *xviews * (size_t)(n + 1));
    memcpy(xviews, c.views, sizeof *xviews * (size_t)n);
    xviews[i].dtype = XY->dtype;
    xviews[i].base = xref;
    if (!st) st = interp_run(xb, xviews, &d);
    CHECK_MSG(st == TSL_OK, "%s: reference run failed: %s", def->name, sb_str(&d.msg));
    diag_free(&d);
    char label[160];
    snprintf(label, sizeof label, "%s (%s)", def->name, what);
    if (st || test_plan_data_run(&c, p, fn, label)) return;
    /* Y rounded to its dtype (f16: 2^-11 relative) after f32 sums of
     * exact products (a few 2^-24 of the sum of |products|, some times
     * the largest |Y|) */
    double tol = Y->dtype == TSL_DTYPE_F16 ? 1e-3 : 1e-5, scale = 0;
    for (int64_t e = 0; e < c.cnt[i]; e++) scale = fmax(scale, fabs(dtype_get(XY->dtype, xref, e)));
    int bad = 0;
    for (int64_t e = 0; e < c.cnt[i] && bad < 3; e++) {
        double x = dtype_get(XY->dtype, xref, e), y = dtype_get(Y->dtype, c.got[i], e);
        int ok = !isnan(y) && fabs(x - y) <= tol * fabs(x) + 1e-5 * scale + 1e-6;
        /* past float16's largest value (float8e5m2 weights): infinity */
        if (Y->dtype == TSL_DTYPE_F16 && fabs(x) >= 65504) ok = isinf(y) || fabs(y) >= 65000;
        if (!ok) bad++;
        CHECK_MSG(ok, "%s (%s, M %lld K %lld N %lld): Y[%lld] = %.9g, reference %.9g\n%s", tsl_dtype_name(def->tensors[1]->dtype),
                  what, (long long)b->shapes[0][0], (long long)b->shapes[0][1], (long long)b->shapes[i][1],
                  (long long)e, y, x, def->src->text);
    }
}

static sched_plan *plan_for(tsl_arena *a, const lang_def *def, tsl_target tg, int *nq)
{
    tsl_diag d = {0};
    graph *g = graph_build(a, def, &d);
    sched_plan *p = g ? sched_lower_for(a, g, tg, &d) : NULL;
    CHECK_MSG(p != NULL, "lowering failed: %s", sb_str(&d.msg));
    if (p) {
        tsl_status st = tile_verify(p->m, NULL, &d);
        CHECK_MSG(st == TSL_OK, "the plan does not verify: %s", sb_str(&d.msg));
    }
    diag_free(&d);
    *nq = 0;
    for (int i = 0; p && i < p->nlaunches; i++) *nq += strstr(p->launches[i].k->name, "_qgemv") != NULL;
    return p;
}

/* def lowered for target tg (compute capability sm x 10; 0 on the CPU)
 * under option string opt, parsed into *o, and verified; NULL (a failed
 * check) when lowering fails. */
static sched_plan *plan_opt(tsl_arena *a, const lang_def *def, tsl_target tg, int sm, const char *opt,
                            sched_options *o)
{
    tsl_diag d = {0};
    *o = sched_options_defaults;
    CHECK(sched_options_parse(opt, o, &d) == TSL_OK);
    graph *g = graph_build(a, def, &d);
    sched_plan *p = g ? sched_lower_opt(a, g, tg, sm, o, &d) : NULL;
    CHECK_MSG(p != NULL, "lowering failed: %s", sb_str(&d.msg));
    if (p) CHECK_MSG(tile_verify(p->m, NULL, &d) == TSL_OK, "the plan does not verify: %s", sb_str(&d.msg));
    diag_free(&d);
    return p;
}

/* The GPU plans of program(w, form, gs) in turn, one for each option
 * string opts[k], at compute capability sms[k] / 10 (8.0 for all where
 * sms is NULL), lowered and verified by plan_opt; a plan that does not
 * lower (a failed check) is skipped:
 *
 *     option_plans it;
 *     for (option_plans_open(&it, w, form, gs, opts, sms, n); option_plans_next(&it);)
 *         ... it.p, lowered under opts[it.oi] (its options it.o) ...
 *
 * it.def is the program, it.xdef its reference (exact_def), both in the
 * arena it.a, which the last option_plans_next frees with the source. */
typedef struct {
    char *src;
    tsl_arena *a;
    const lang_def *def, *xdef;
    const char *const *opts;
    const int *sms;
    int nopts, oi;
    sched_options o;
    sched_plan *p;
} option_plans;

static void option_plans_open(option_plans *it, const char *w, int form, int gs, const char *const *opts,
                              const int *sms, int nopts)
{
    memset(it, 0, sizeof *it);
    it->src = program(w, form, gs);
    it->a = arena_create();
    it->def = parse_def(it->a, it->src);
    it->xdef = it->def ? exact_def(it->a, it->src) : NULL;
    it->opts = opts;
    it->sms = sms;
    it->nopts = nopts;
    it->oi = -1;
}

/* The next option string's plan into it->p: 1, or 0 (and the program
 * freed) past the last one. */
static int option_plans_next(option_plans *it)
{
    while (it->def && it->xdef && ++it->oi < it->nopts) {
        it->p = plan_opt(it->a, it->def, TSL_TARGET_CUDA, it->sms ? it->sms[it->oi] : 80, it->opts[it->oi], &it->o);
        if (it->p) return 1;
    }
    arena_free(it->a);
    free(it->src);
    memset(it, 0, sizeof *it);
    return 0;
}

/* The sizes by slot that compare takes: M, K, N from mkn, G the groups of
 * gs rows in K (where the program has G), the others unset. */
static void case_sizes(const lang_def *def, const int64_t mkn[3], int gs, int64_t *sz)
{
    for (int k = 0; k < def->nsizes; k++) sz[k] = -1;
    sz[lang_def_size_slot(def, "M")] = mkn[0];
    sz[lang_def_size_slot(def, "K")] = mkn[1];
    sz[lang_def_size_slot(def, "N")] = mkn[2];
    if (lang_def_size_slot(def, "G") >= 0) sz[lang_def_size_slot(def, "G")] = (mkn[1] + gs - 1) / gs;
}

/* The plan's tensor-core kernel (qgemm), if any. */
static int has_qgemm(const sched_plan *p)
{
    int n = 0;
    for (int i = 0; p && i < p->nlaunches; i++)
        n += strstr(p->launches[i].k->name, "_qgemm") != NULL && !strstr(p->launches[i].k->name, "_qsum");
    return n;
}

/* The dtypes of W: every low-bit one, and int8/uint8. */
static int weight_dtype(int t)
{
    const dtype_info *d = dtype_info_of((tsl_dtype)t);
    return (d->bits < 8 || (d->is_float && d->bits <= 8) || t == TSL_DTYPE_I8 || t == TSL_DTYPE_U8) &&
           t != TSL_DTYPE_BOOL;
}

/* Can float16 hold every value of W (the program's cast)? */
static int fits_f16(tsl_dtype t)
{
    uint8_t buf[2] = {0, 0};
    for (uint64_t c = 0; c < (1u << tsl_dtype_bits(t)); c++) {
        dtype_set_bits(t, buf, 0, c);
        double v = dtype_get(t, buf, 0);
        if (v == v && dtype_round(TSL_DTYPE_F16, v) != v) return 0;
    }
    return 1;
}

static void run_dtype(tsl_dtype wt, int form, int tile_interp, int gs, int emu)
{
    char *src = program(tsl_dtype_name(wt), form, gs);
    tsl_arena *a = arena_create();
    const lang_def *def = parse_def(a, src);
    const lang_def *xdef = def ? exact_def(a, src) : NULL;
    /* sizes by slot: M K N (G) */
    /* the third: a whole CPU column block (4096) and a partial one, so the
     * CPU plan's micro-kernel (cpu.ukr.dequant) runs beside the generic loop */
    /* the GPU plan also at M 17 (the tensor-core kernel: a partial second
     * block of 16 rows) */
    static const int64_t sets[4][3] = {{1, 77, 19}, {3, 200, 72}, {2, 45, 4096 + 24}, {17, 200, 72}};
    for (int tg = 0; def && xdef && tg < 2; tg++) {
        int nq = 0;
        sched_plan *p = plan_for(a, def, tg ? TSL_TARGET_CUDA : TSL_TARGET_CPU, &nq);
        if (!p) break;
        int odd = dtype_info_of(wt)->bits % 2;
        CHECK_MSG(nq == 2 || (nq == 1 && !odd && tsl_dtype_bits(wt) == 8), "%s form %d: %d qgemv kernels",
                  tsl_dtype_name(wt), form, nq);
        for (int si = 0; si < (tg ? 4 : 3); si++) {
            if (tg && si == 2) continue;
            int64_t sz[8];
            case_sizes(def, sets[si], gs, sz);
            const char *what = tg ? "gpu plan" : "cpu plan";
            char w1[64], w2[64];
            snprintf(w1, sizeof w1, "%s, C", what);
            snprintf(w2, sizeof w2, "%s, tile interpreter", what);
            /* the CPU plan on the CPU target; the GPU plan on the tile
             * interpreter (and, for a few widths, also as C) */
            if (!tg || tile_interp) compare(a, def, xdef, p, sz, test_run_cpu, w1);
            if (tg) compare(a, def, xdef, p, sz, test_run_tile_interp, w2);
            /* the GPU plan's CUDA source, every thread a host thread */
            if (tg && emu && test_have_cxx()) compare(a, def, xdef, p, sz, test_run_cuda_emu, "gpu plan, CUDA emulated");
        }
    }
    arena_free(a);
    free(src);
}

/* Every width, grouped scales, on the CPU target's C for both plans, and
 * the tile interpreter for the common widths. */
static void test_every_width(void)
{
    int n = 0;
    for (int t = 0; t < TSL_DTYPE_COUNT; t++) {
        if (!weight_dtype(t) || !fits_f16((tsl_dtype)t)) continue;
        int common = t == TSL_DTYPE_U4 || t == TSL_DTYPE_I4 || t == TSL_DTYPE_U3 || t == TSL_DTYPE_U1 ||
                     t == TSL_DTYPE_F6E3M2;
        run_dtype((tsl_dtype)t, 0, common, 32, 0);
        n++;
    }
    printf("    %d weight dtypes\n", n);
}

/* Zero points (grouped, per column), no scale, float32 I/O. */
static void test_forms(void)
{
    static const char *const ws[] = {"uint4", "int4", "uint3", "uint8", "float8e4m3", "uint1"};
    for (size_t i = 0; i < TSL_COUNTOF(ws); i++) {
        tsl_dtype t;
        TSL_ASSERT(dtype_parse(ws[i], strlen(ws[i]), &t) == 0);
        for (int form = 1; form <= 4; form++) run_dtype(t, form, i < 2, 32, 0);
    }
}

/* Group sizes that divide neither K nor the kernels' row steps (7, 48)
 * and the usual 64 and 128 (K 77: one partial group; K 200: a partial
 * last one), every width class (1, 3, 4, 8 bits, a signed and a float
 * one), with and without zero points; the GPU plan also as its CUDA
 * source in the host emulation. */
static void test_group_sizes(void)
{
    static const char *const ws[] = {"uint1", "uint3", "int4", "uint8", "float6e2m3"};
    static const int gss[] = {7, 48, 64, 128};
    for (size_t i = 0; i < TSL_COUNTOF(ws); i++) {
        tsl_dtype t;
        TSL_ASSERT(dtype_parse(ws[i], strlen(ws[i]), &t) == 0);
        for (size_t g = 0; g < TSL_COUNTOF(gss); g++) run_dtype(t, (int)((i + g) % 2), 0, gss[g], g == i % 4);
    }
}

/* Shapes the strategy does not take go to the other strategies, still right. */
static void test_declined(void)
{
    static const char *const srcs[] = {
        /* W transposed */
        "def q(float16(M,K) X, uint4(N,K) W, float16(G,N) S) -> (Y) {\n"
        "  Y(m,n) +=! float16(W(n,k)) * S(k / 32, n) * X(m,k)\n}\n",
        /* a cast that loses values (f16 cannot hold float8e7m0) */
        "def q(float16(M,K) X, float8e7m0(K,N) W) -> (Y) {\n  Y(m,n) +=! float16(W(k,n)) * X(m,k)\n}\n",
        /* two groupings */
        "def q(float16(M,K) X, uint4(K,N) W, float16(G,N) S, float16(H,N) Z) -> (Y) {\n"
        "  Y(m,n) +=! (float16(W(k,n)) - Z(k / 64, n)) * S(k / 32, n) * X(m,k)\n}\n",
        /* without ! */
        "def q(float16(M,K) X, uint4(K,N) W, float16(M,N) Y) -> (Y) {\n  Y(m,n) += float16(W(k,n)) * X(m,k)\n}\n",
    };
    for (size_t i = 0; i < TSL_COUNTOF(srcs); i++) {
        tsl_arena *a = arena_create();
        tsl_source s = {"q.tc", srcs[i]};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &s, &d);
        CHECK_MSG(mod != NULL, "%s", sb_str(&d.msg));
        diag_free(&d);
        int nq = 0;
        if (mod) plan_for(a, mod->defs[0], TSL_TARGET_CUDA, &nq);
        CHECK_MSG(nq == 0, "case %zu: taken", i);
        arena_free(a);
    }
}

/* The GPU plans' CUDA compiles without spills (at most 32 bytes where a
 * kernel asks for two blocks an SM): the sm_80 plan for sm_80, the sm_90
 * plan (min_blocks differ) for sm_90a. */
static void test_nvrtc(void)
{
    tsl_diag nd = {0};
    tsl_status av = rt_cuda_nvrtc_available(&nd);
    diag_free(&nd);
    if (av) {
        printf("    skipped: no NVRTC\n");
        return;
    }
    static const char *const ws[] = {"uint1", "uint2", "uint3", "uint4", "int4", "uint5", "uint6",
                                     "uint7", "uint8", "float6e3m2", "float8e4m3"};
    for (size_t i = 0; i < TSL_COUNTOF(ws); i++) {
        char *src = program(ws[i], i % 3 == 1 ? 1 : 0, 128);
        tsl_arena *a = arena_create();
        tsl_source s = {"q.tc", src};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &s, &d);
        int nq = 0;
        /* the plans for sm_80 and for sm_90 (min_blocks differ); for
         * some widths the sm_90 plan's qgemm pair with K split
         * (contract.splitk=4) */
        sched_plan *ps[3] = {mod ? plan_for(a, mod->defs[0], TSL_TARGET_CUDA, &nq) : NULL, NULL, NULL};
        graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
        ps[1] = g ? sched_lower_sm(a, g, TSL_TARGET_CUDA, 90, &d) : NULL;
        CHECK_MSG(ps[1] != NULL, "%s: lowering for sm_90 failed: %s", ws[i], sb_str(&d.msg));
        sched_options so = sched_options_defaults;
        so.splitk = 4;
        ps[2] = g && (i % 4 == 0 || i == 3) && i % 3 != 1 ? sched_lower_opt(a, g, TSL_TARGET_CUDA, 90, &so, &d) : NULL;
        for (int pi = 0; pi < 3; pi++) {
            const sched_plan *p = ps[pi];
            int arch = pi > 0;
            for (int li = 0; p && li < p->nlaunches; li++) {
                const tile_kernel *k = p->launches[li].k;
                if (pi == 2 && !strstr(k->name, "_qgemm")) continue;
                rt_ptxas_report r;
                int narms = 0;
                diag_reset(&d);
                tsl_status st = test_nvrtc_arms(p->m, k, arch ? "sm_90a" : "sm_80", &r, &narms, &d);
                CHECK_MSG(st == TSL_OK, "%s %s: %s", ws[i], k->name, sb_str(&d.msg));
                if (st) continue;
                /* a kernel held to two blocks an SM (min_blocks(2): 128
                 * registers) may keep a little on the stack: ptxas keeps up
                 * to 20 bytes of the streaming GEMV's uint4 step there (24
                 * with the frame), and that form measured fastest on an
                 * H200 (2026-11-29: against a load per row, two or four
                 * tiles a step, and f32 dequantization). More than 32 bytes
                 * is a regression; every other kernel spills nothing. */
                int allow = k->min_blocks >= 2 ? 32 : 0;
                /* the tensor-core GEMV's 128-byte loads (uint4, uint8 on
                 * sm_90a) spill about 100 bytes at 3 blocks' 168 registers
                 * and still measured 1.1-1.24x faster on an H200
                 * (2026-11-30) than the 64-byte loads that fit; uint8's
                 * cp.async prefetch of X and the scales (qmatmul.prefetch)
                 * takes it to 164 stored / 248 loaded and measured 1-5%
                 * faster again than without it (three calls) */
                if (arch && strstr(k->name, "_qgemv_mma") && (!strcmp(ws[i], "uint4") || !strcmp(ws[i], "uint8")))
                    allow = !strcmp(ws[i], "uint8") ? 256 : 192;
                CHECK_MSG(r.spill_stores <= allow && r.spill_loads <= allow && r.stack_frame <= allow,
                          "%s %s %s: spills %d/%d, stack %d", ws[i], k->name, arch ? "sm_90a" : "sm_80", r.spill_stores,
                          r.spill_loads, r.stack_frame);
                printf("    %s %s %s%s: %d registers, spills %d/%d, stack %d\n", ws[i], k->name, arch ? "sm_90a" : "sm_80",
                       pi == 2 ? " splitk=4" : "", r.registers, r.spill_stores, r.spill_loads, r.stack_frame);
            }
        }
        diag_free(&d);
        arena_free(a);
        free(src);
    }
}

/* The tensor-core kernel (M >= 16 on the GPU): taken for f16 X without
 * zero points, for every width class, scales per group (G 32, 48: steps of
 * 16 rows, 64, 128), per column and none; declined (the GEMV per row) for
 * f32 X and zero points. At M 16, 17 (a partial block), 40; K not a
 * multiple of the step or the group; N a partial column block; the plan on
 * the tile interpreter and as CUDA in the host emulation. */
static void test_tensor_cores(void)
{
    static const struct { const char *w; int form, gs, want; } cs[] = {
        {"uint4", 0, 128, 1}, {"int4", 0, 32, 1},  {"uint3", 0, 64, 1},     {"uint8", 0, 48, 1},
        {"uint1", 3, 32, 1},  {"int2", 5, 32, 1},  {"float6e3m2", 0, 32, 1}, {"float8e4m3", 0, 128, 1},
        {"uint5", 0, 32, 1},  {"uint4", 1, 32, 0}, {"uint4", 4, 32, 0},     {"int8", 0, 7, 0},
    };
    static const int64_t sets[3][3] = {{16, 128, 64}, {17, 200, 72}, {40, 77, 136}};
    for (size_t i = 0; i < TSL_COUNTOF(cs); i++) {
        tsl_dtype wt;
        TSL_ASSERT(dtype_parse(cs[i].w, strlen(cs[i].w), &wt) == 0);
        char *src = program(cs[i].w, cs[i].form, cs[i].gs);
        tsl_arena *a = arena_create();
        const lang_def *def = parse_def(a, src);
        const lang_def *xdef = def ? exact_def(a, src) : NULL;
        int nq = 0;
        sched_plan *p = def ? plan_for(a, def, TSL_TARGET_CUDA, &nq) : NULL;
        CHECK_MSG(has_qgemm(p) == cs[i].want, "%s form %d G %d: qgemm kernels %d, want %d", cs[i].w, cs[i].form,
                  cs[i].gs, has_qgemm(p), cs[i].want);
        for (int si = 0; p && xdef && si < 3; si++) {
            int64_t sz[8];
            case_sizes(def, sets[si], cs[i].gs, sz);
            compare(a, def, xdef, p, sz, test_run_tile_interp, "gpu plan M >= 16, tile interpreter");
            if (test_have_cxx() && (si == 1 || i % 3 == 0))
                compare(a, def, xdef, p, sz, test_run_cuda_emu, "gpu plan M >= 16, CUDA emulated");
        }
        arena_free(a);
        free(src);
    }
}

/* The plan's launch of the tensor-core kernel, -1 if none. */
static int qgemm_launch(const sched_plan *p)
{
    for (int i = 0; i < p->nlaunches; i++)
        if (strstr(p->launches[i].k->name, "_qgemm") && !strstr(p->launches[i].k->name, "_qsum")) return i;
    return -1;
}

/* The tensor-core kernel's K split (the option contract.splitk): the
 * default's slices from the sizes, 2, 3 and 8 slices of whole groups
 * (grid z, the f32 partials summed by `_qgemm_qsum` right after qgemm
 * under the same guard), and contract.splitk=1's single pass (a 2-D
 * grid, no sum). Groups of 32 (4 at K 128: splitk=3
 * leaves an empty third slice; 17 at K 520: splitk=8 leaves two empty),
 * 48 (steps of 16, a partial last group), 64 (128 columns a block), no
 * scale and a scale per column (slices of whole 128-row steps: K 77 is
 * one, so every split clamps to 1); M 16, 17, 40, K no step or group
 * divides, N partial column blocks; the tile interpreter and, for some,
 * the CUDA source in the host emulation. */
static void test_tensor_cores_split(void)
{
    static const struct { const char *w; int form, gs; } cs[] = {
        {"uint4", 0, 32}, {"uint3", 0, 64}, {"uint8", 0, 48}, {"uint1", 3, 32}, {"int2", 5, 32},
    };
    static const int64_t sets[4][3] = {{16, 128, 64}, {17, 200, 72}, {40, 77, 136}, {16, 520, 40}};
    static const char *const opts[] = {"", "contract.splitk=2", "contract.splitk=3", "contract.splitk=8",
                                       "contract.splitk=4", "contract.splitk=1"};
    for (size_t i = 0; i < TSL_COUNTOF(cs); i++) {
        option_plans it;
        for (option_plans_open(&it, cs[i].w, cs[i].form, cs[i].gs, opts, NULL, (int)TSL_COUNTOF(opts));
             option_plans_next(&it);) {
            const sched_plan *p = it.p;
            int oi = it.oi;
            /* the plan: qgemm's grid has a z dimension and its sum follows
             * under the same guard, only when split */
            int l = qgemm_launch(p), split = it.o.splitk != 1;
            CHECK_MSG(l >= 0, "%s form %d %s: no qgemm", cs[i].w, cs[i].form, opts[oi]);
            if (l < 0) continue;
            const sched_launch *lg = &p->launches[l];
            CHECK_MSG(lg->k->ngrid == (split ? 3 : 2), "%s form %d %s: qgemm's grid has %d dims", cs[i].w,
                      cs[i].form, opts[oi], lg->k->ngrid);
            int sum = l + 1 < p->nlaunches && strstr(p->launches[l + 1].k->name, "_qgemm_qsum") != NULL;
            CHECK_MSG(sum == split, "%s form %d %s: a qgemm_qsum after qgemm: %d", cs[i].w, cs[i].form, opts[oi], sum);
            if (sum) {
                const sched_guard *g0 = &lg->guard, *g1 = &p->launches[l + 1].guard;
                CHECK_MSG(g0->n == g1->n && g0->n > 0 && !memcmp(g0->sym, g1->sym, sizeof g0->sym[0] * (size_t)g0->n) && !memcmp(g0->op, g1->op, sizeof g0->op[0] * (size_t)g0->n) &&
                              !memcmp(g0->val, g1->val, sizeof g0->val[0] * (size_t)g0->n),
                          "%s: the sum's guard is not qgemm's", opts[oi]);
            }
            int ns = 0;
            for (int k = 0; k < p->nlaunches; k++) ns += strstr(p->launches[k].k->name, "_qgemm_qsum") != NULL;
            CHECK_MSG(ns == split, "%s: %d qgemm_qsum launches", opts[oi], ns);
            if (it.o.splitk == 4) continue; /* the plan's shape only */
            for (int si = 0; si < 4; si++) {
                int64_t sz[8];
                case_sizes(it.def, sets[si], cs[i].gs, sz);
                char what[96];
                snprintf(what, sizeof what, "qgemm %s, tile interpreter", oi ? opts[oi] : "default options");
                compare(it.a, it.def, it.xdef, p, sz, test_run_tile_interp, what);
                if (test_have_cxx() && (si == (int)(i + oi) % 4) && (oi > 0 || i == 0)) {
                    snprintf(what, sizeof what, "qgemm %s, CUDA emulated", oi ? opts[oi] : "default options");
                    compare(it.a, it.def, it.xdef, p, sz, test_run_cuda_emu, what);
                }
            }
        }
    }
}

/* The streaming GEMV (qgemv_vec and its qsum): taken on the GPU for the
 * byte-reading form without zero points; K split into slices (the
 * default's 8, the option splitk's 3 and 1) whose sums qsum adds; the
 * emulated cases take the defaults; dequantization to f32 and through
 * f16 (the options qmatmul.dequant=32 and 16); the sm_80 and sm_90
 * plans. K of many groups and a
 * partial last one, slices of unequal groups (K 1000 at G 128: 8 groups
 * in 3 slices), N no column block divides; grouped, per-column and no
 * scales, f32 I/O; the tile interpreter and, for a few, the CUDA source in
 * the host emulation. */
static void test_streaming(void)
{
    static const struct { const char *w; int form, gs; } cs[] = {
        {"uint4", 0, 128}, {"uint3", 0, 64},  {"uint1", 0, 128}, {"uint8", 5, 128},
        {"int4", 3, 128},  {"float6e3m2", 4, 128}, {"uint7", 0, 128}, {"float8e4m3", 0, 64},
        {"uint5", 0, 128},
    };
    static const int64_t sets[3][3] = {{1, 1000, 300}, {3, 515, 72}, {2, 128, 40}};
    /* the defaults first: their split is the one the GPU takes unless told;
     * the sm_90 plans differ (two blocks an SM, uint5/uint7 one row a step) */
    /* qmatmul.mma=0: the CUDA-core kernel also for uint1 (by default on
     * tensor cores: test_mma_gemv) */
    static const char *const opts[] = {"qmatmul.mma=0", "contract.splitk=3,qmatmul.mma=0",
                                       "contract.splitk=1,qmatmul.mma=0",
                                       "contract.splitk=2,qmatmul.dequant=16,qmatmul.mma=0", "qmatmul.mma=0",
                                       "qmatmul.dequant=32,qmatmul.mma=0"};
    static const int sms[] = {80, 80, 80, 80, 90, 90};
    for (size_t i = 0; i < TSL_COUNTOF(cs); i++) {
        option_plans it;
        for (option_plans_open(&it, cs[i].w, cs[i].form, cs[i].gs, opts, sms, (int)TSL_COUNTOF(opts));
             option_plans_next(&it);) {
            const sched_plan *p = it.p;
            int oi = it.oi;
            int nv = 0, ns = 0;
            for (int l = 0; l < p->nlaunches; l++) {
                nv += strstr(p->launches[l].k->name, "_qgemv_vec") != NULL;
                /* the GEMV's sum (qgemm's own follows qgemm when split) */
                ns += strstr(p->launches[l].k->name, "_qsum") && !strstr(p->launches[l].k->name, "_qgemm");
            }
            CHECK_MSG(nv == 1 && ns == 1, "%s form %d: %d streaming kernels, %d sums", cs[i].w, cs[i].form, nv, ns);
            for (int si = 0; si < 3; si++) {
                int64_t sz[8];
                case_sizes(it.def, sets[si], cs[i].gs, sz);
                char what[64];
                snprintf(what, sizeof what, "streaming GEMV sm_%d %s, tile interpreter", sms[oi], opts[oi]);
                compare(it.a, it.def, it.xdef, p, sz, test_run_tile_interp, what);
                if (test_have_cxx() && si == 0 && oi == 0 && i % 3 == 0) {
                    snprintf(what, sizeof what, "streaming GEMV %s, CUDA emulated", opts[oi]);
                    compare(it.a, it.def, it.xdef, p, sz, test_run_cuda_emu, what);
                }
            }
        }
    }
}

/* The GEMV on tensor cores (qmatmul.mma=2: qt_text, the dequantizing mma.q rows): uint1,
 * uint2, uint4, uint8 weights with grouped scales (form 0), a scale per
 * column (5) and none (3), M 1, 3 and 9 (two row blocks), K and N no tile
 * divides, K split into 16 slices (11 at K 1400, its groups: qsum's
 * rounds of 8 and its remainder), 3, not at all, and by default (3
 * blocks a multiprocessor, one multiprocessor off the GPU: 3 slices at N
 * 136, one at N 520 and 1040); X and the scales a group ahead by
 * cp.async (qmatmul.prefetch: uint1's and uint8's default, every width
 * with 2) and
 * by plain loads (0); loads of 32 and 128 bytes a lane (qmatmul.load);
 * the tile interpreter, the host emulation of the CUDA and the C
 * generator against the reference. */
static void test_mma_gemv(void)
{
    static const struct { const char *w; int form, gs; } cs[] = {
        {"uint4", 0, 128}, {"uint1", 0, 64}, {"uint2", 5, 128}, {"uint8", 0, 32}, {"uint4", 3, 128}, {"uint8", 5, 128},
    };
    static const int64_t sets[3][3] = {{1, 1400, 520}, {3, 515, 136}, {9, 160, 1040}};
    static const char *const opts[] = {"qmatmul.mma=2,contract.splitk=16", "qmatmul.mma=2,contract.splitk=3",
                                       "qmatmul.mma=2,contract.splitk=1", "qmatmul.mma=2",
                                       "qmatmul.mma=2,qmatmul.prefetch=2,contract.splitk=3",
                                       "qmatmul.mma=2,qmatmul.prefetch=0,contract.splitk=16",
                                       "qmatmul.mma=2,qmatmul.load=32,contract.splitk=2",
                                       "qmatmul.mma=2,qmatmul.load=128"};
    static const int sms[] = {80, 80, 80, 90, 90, 80, 90, 80};
    for (size_t i = 0; i < TSL_COUNTOF(cs); i++) {
        option_plans it;
        for (option_plans_open(&it, cs[i].w, cs[i].form, cs[i].gs, opts, sms, (int)TSL_COUNTOF(opts));
             option_plans_next(&it);) {
            const sched_plan *p = it.p;
            int oi = it.oi, nq = 0;
            for (int l = 0; l < p->nlaunches; l++) nq += strstr(p->launches[l].k->name, "_qgemv_mma") != NULL;
            CHECK_MSG(nq == 1, "%s form %d: %d tensor-core GEMV kernels", cs[i].w, cs[i].form, nq);
            for (int si = 0; si < 3; si++) {
                int64_t sz[8];
                case_sizes(it.def, sets[si], cs[i].gs, sz);
                char what[96];
                snprintf(what, sizeof what, "tensor-core GEMV %s sm_%d '%s', tile interpreter", cs[i].w, sms[oi], opts[oi]);
                compare(it.a, it.def, it.xdef, p, sz, test_run_tile_interp, what);
                if (si == 1 && oi < 2) { /* the C generator's form of the rows (tsl_mma_frag) */
                    snprintf(what, sizeof what, "tensor-core GEMV %s '%s', C", cs[i].w, opts[oi]);
                    compare(it.a, it.def, it.xdef, p, sz, test_run_cpu, what);
                }
                /* emulated: every case once, uint4's three splits, uint1 at
                 * every size, every case prefetched */
                if (test_have_cxx() && ((oi < 3 && (si == 0 || i == 1) && (oi == 0 || i == 0)) || (oi >= 4 && si == 1))) {
                    snprintf(what, sizeof what, "tensor-core GEMV %s '%s', CUDA emulated", cs[i].w, opts[oi]);
                    compare(it.a, it.def, it.xdef, p, sz, test_run_cuda_emu, what);
                }
            }
        }
    }
}

/* A CPU case: W's dtype, the program's form and group size (program). */
typedef struct {
    const char *w;
    int form, gs;
} cpu_case;

/* What a test checks of a case's CPU plan (lowered under option string
 * opt) before it runs. */
typedef void cpu_plan_check(const sched_plan *p, const cpu_case *c, const char *opt);

/* Case c lowered for the CPU under each option string of opts, verified,
 * checked by check, and compared (compare: fresh inputs, Y poisoned) with
 * the reference at each of the sizes: M K N, and G the groups of gs in K. */
static void run_cpu_case(const cpu_case *c, const char *const *opts, int nopts, const int64_t (*sizes)[3], int nsizes,
                         cpu_plan_check *check)
{
    char *src = program(c->w, c->form, c->gs);
    tsl_arena *a = arena_create();
    const lang_def *def = parse_def(a, src);
    const lang_def *xdef = def ? exact_def(a, src) : NULL;
    for (int oi = 0; def && xdef && oi < nopts; oi++) {
        sched_options o;
        sched_plan *p = plan_opt(a, def, TSL_TARGET_CPU, 0, opts[oi], &o);
        if (!p) continue;
        check(p, c, opts[oi]);
        char what[64];
        snprintf(what, sizeof what, "cpu plan, C, %s", opts[oi][0] ? opts[oi] : "default options");
        for (int si = 0; si < nsizes; si++) {
            int64_t sz[8];
            case_sizes(def, sizes[si], c->gs, sz);
            compare(a, def, xdef, p, sz, test_run_cpu, what);
        }
    }
    arena_free(a);
    free(src);
}

/* A 3- or 4-bit W's slice kernels emit cpu.ukr.dequant's table path. */
static void check_table_path(const sched_plan *p, const cpu_case *c, const char *opt)
{
    (void)opt;
    int bits = tsl_dtype_bits(p->def->tensors[1]->dtype);
    for (int l = 0; (bits == 3 || bits == 4) && l < p->nlaunches; l++) {
        const char *kn = p->launches[l].k->name;
        if (!strstr(kn, "_qgemv") || strstr(kn, "_codes")) continue;
        strbuf s = {0};
        tsl_diag d = {0};
        CHECK(cg_c_emit(p->m, p->launches[l].k, &s, &d) == TSL_OK);
        CHECK_MSG(strstr(sb_str(&s), "_zrows") && (bits == 4 || strstr(sb_str(&s), "_yrows")),
                  "%s: no table path in the C", c->w);
        sb_free(&s);
        diag_free(&d);
    }
}

/* The CPU plan at sizes no block, chunk or group divides, every width 1..8
 * and the signed and float classes, against the interpreter (Y poisoned):
 * K and N each 1, 7, 129 and 300 (groups of 128: K 129 and 300 end in a
 * partial group; a row count no pass divides), M 1 and 3, and columns past
 * one 4096-column block (N a multiple of 8, so every width takes the
 * byte-reading kernel): the first block through cpu.ukr.dequant, the
 * partial second one through the generic loop. The micro-kernel's paths:
 * 3- and 4-bit dtypes (unsigned, signed, float: uint3, uint4, int3, int4,
 * float3e1m1, float4e2m1) through its table path where the machine has
 * AVX-512 (8-row passes, K 129, 300 and 7 leaving 1, 4 and 7 rows for a
 * shorter last pass; the last chunk's masked loads; the emitted C must
 * hold it), 3 bits through the 8-lane table path with AVX2 alone (also
 * in the C); other widths dividing 8 (and 4 without AVX-512) through the
 * byte path where the machine has AVX2 (4-row passes), the rest through
 * its 32-bit lanes (the single rows left, the last chunks read exactly).
 * TESSEL_CC="gcc -mno-avx512f" (or -mno-avx2) runs the others here. */
static void test_cpu_sizes(void)
{
    static const char *const ws[] = {"uint1",      "uint2",      "uint3", "uint4", "uint5", "uint6",
                                     "uint7",      "uint8",      "int2",  "int3",  "int4",  "int8",
                                     "float3e1m1", "float4e2m1", "float6e3m2", "float8e4m3"};
    static const int64_t ext[4] = {1, 7, 129, 300};
    static const int64_t wide[4][3] = {{1, 129, 4104}, {2, 300, 4096 + 136}, {1, 7, 4096}, {3, 129, 300}};
    static const char *const opts[] = {""};
    int64_t sizes[16 + 4][3];
    for (int si = 0; si < 16; si++) {
        sizes[si][0] = 1;
        sizes[si][1] = ext[si / 4];
        sizes[si][2] = ext[si % 4];
    }
    memcpy(sizes + 16, wide, sizeof wide);
    for (size_t i = 0; i < TSL_COUNTOF(ws); i++) {
        cpu_case c = {ws[i], 0, 128};
        run_cpu_case(&c, opts, 1, sizes, (int)TSL_COUNTOF(sizes), check_table_path);
    }
}

/* The plan splits K: every slice kernel has its sum kernel. */
static void check_split(const sched_plan *p, const cpu_case *c, const char *opt)
{
    int nv = 0, ns = 0;
    for (int l = 0; l < p->nlaunches; l++) {
        const char *kn = p->launches[l].k->name;
        nv += strstr(kn, "_qgemv") != NULL;
        ns += strstr(kn, "_qsum") != NULL;
    }
    CHECK_MSG(nv >= 1 && ns == nv, "%s %s: %d slice kernels, %d sums", c->w, opt, nv, ns);
}

/* The CPU plan's K split (qmatmul.c cpu_text: KS slices of whole groups,
 * their f32 sums into the workspace, then qsum adds them in order) at
 * sizes no block, chunk, pass or group divides: the default split (enough
 * slices for 32 blocks, at most the groups: the 5 groups of K 520 in 5
 * slices, the 9 of K 1100 over 3 column blocks in 9), the option
 * splitk=4 (5 groups in slices of 2, 2, 1 and an empty fourth; 9 in 3, 3,
 * 3) and splitk=1 (the slice kernel stores Y, qsum does nothing); M 1 and
 * 2, N past one and two 4096-column blocks (4104, 8200: a partial last
 * block), K 8 (one group, one 8-row pass permuting acc in and out), 520
 * (a last group of 8 rows) and 1100 (76: 4 rows past the 8-row passes);
 * groups of 128 and 64; 3- and 4-bit dtypes, whose full blocks take
 * cpu.ukr.dequant's table path (test_cpu_sizes), a 3-bit float among
 * them, and f32 X and Y. */
static void test_cpu_split(void)
{
    static const cpu_case cs[] = {
        {"uint4", 0, 128}, {"uint3", 0, 128}, {"int4", 0, 64}, {"float3e1m1", 0, 128}, {"int3", 4, 128},
    };
    static const int64_t sizes[3][3] = {{1, 520, 4104}, {2, 1100, 8200}, {1, 8, 4096}};
    static const char *const opts[] = {"", "contract.splitk=4", "contract.splitk=1"};
    for (size_t i = 0; i < TSL_COUNTOF(cs); i++)
        run_cpu_case(&cs[i], opts, (int)TSL_COUNTOF(opts), sizes, (int)TSL_COUNTOF(sizes), check_split);
}

TEST_SUITE(sched_qmatmul) = {
    {"every_width", test_every_width},
    {"forms", test_forms},
    {"group_sizes", test_group_sizes},
    {"cpu_sizes", test_cpu_sizes},
    {"cpu_split", test_cpu_split},
    {"declined", test_declined},
    {"tensor_cores", test_tensor_cores},
    {"tensor_cores_split", test_tensor_cores_split},
    {"streaming", test_streaming},
    {"mma_gemv", test_mma_gemv},
    {"nvrtc", test_nvrtc},
    {0},
};
