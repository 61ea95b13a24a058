/* test_sched_lstm.c — the LSTM-cell strategy (graph/lstm.c, sched/lstm.c):
 * examples/lstm.tc and variants (f32, f16, bf16; G a size symbol, then
 * guarded G == 4, or the constant 4; the product's factors swapped, a
 * private temporary in the cell update) become ONE group and ONE
 * `*_lstm` kernel; the module verifies and round-trips; the CPU plan, the
 * CUDA plan in the tile interpreter (blocks shuffled) and in the host
 * emulation of the generated CUDA give the TC interpreter's answer at
 * B in {1, 7, 130}, H in {1, 5, 72, 130}, I in {1, 3, 64} (no tile divides
 * them), outputs poisoned; the sm_90a wgmma plan (f16, bf16) in the tile
 * interpreter at B in {1, 7, 130, 131}, H, I in {8, 72, 136, 200}, and its
 * mma.sync fallback where H or I is not a multiple of 8; G = 5 runs the
 * parts; NVRTC compiles the kernels for sm_80 and sm_90a without spills; near misses keep the
 * unfused groups and still match; sched.lstm=0 takes the parts. */
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "sched/sched.h"
#include "sched_runners.h"
#include "test.h"
#include "tile/tile.h"

/* examples/lstm.tc with the dtype spliced in (%s x 6) */
#define LSTM_TC                                                                                                       \
    "def lstm_cell(%s(B,I) X, %s(B,H) Hprev, %s(B,H) Cprev, %s(G,H,I) Wx,\n"                                         \
    "              %s(G,H,H) Wh, %s(G,H) bias) -> (Hn, Cn) {\n"                                                       \
    "  gates(b,g,h) +=! X(b,i) * Wx(g,h,i)\n"                                                                         \
    "  gates(b,g,h) += Hprev(b,j) * Wh(g,h,j)\n"                                                                      \
    "  gates(b,g,h) = gates(b,g,h) + bias(g,h)\n"                                                                     \
    "  Cn(b,h) = sigmoid(gates(b,1,h)) * Cprev(b,h) + sigmoid(gates(b,0,h)) * tanh(gates(b,2,h))\n"                   \
    "  Hn(b,h) = sigmoid(gates(b,3,h)) * tanh(Cn(b,h))\n"                                                             \
    "}\n"

/* G the constant 4, the factors swapped, no bias op, a per-row scale,
 * a private temporary t */
#define LSTM_C4_TC                                                                                                    \
    "def lstm_c4(%s(B,I) X, %s(B,H) Hprev, %s(B,H) Cprev, %s(4,H,I) Wx,\n"                                           \
    "            %s(4,H,H) Wh, %s(B) s) -> (Hn, Cn) {\n"                                                              \
    "  gates(b,g,h) +=! Wx(g,h,i) * X(b,i)\n"                                                                         \
    "  gates(b,g,h) += Wh(g,h,j) * Hprev(b,j)\n"                                                                      \
    "  gates(b,g,h) = gates(b,g,h) * s(b)\n"                                                                          \
    "  Cn(b,h) = sigmoid(gates(b,1,h)) * Cprev(b,h) + sigmoid(gates(b,0,h)) * tanh(gates(b,2,h))\n"                   \
    "  t(b,h) = tanh(Cn(b,h))\n"                                                                                      \
    "  Hn(b,h) = sigmoid(gates(b,3,h)) * t(b,h)\n"                                                                    \
    "}\n"

static const char *const dtypes[3] = {"float", "float16", "bfloat16"};

/* size sets (B, I, H, G): every B, H and I of the brief at least once */
static const int64_t sets[6][4] = {
    {1, 1, 1, 4}, {7, 3, 5, 4}, {130, 64, 72, 4}, {7, 64, 130, 4}, {130, 3, 1, 4}, {1, 64, 72, 4},
};

static int count_lstm(const sched_plan *p)
{
    int n = 0;
    for (int i = 0; i < p->nlaunches; i++) n += strstr(p->launches[i].k->name, "_lstm") != NULL;
    return n;
}

static lang_def *parse_text(tsl_arena *a, const char *text)
{
    tsl_source src = {"lstm.tc", text};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK_MSG(mod != NULL && mod->ndefs == 1, "%s\n%s", sb_str(&d.msg), text);
    diag_free(&d);
    return mod && mod->ndefs == 1 ? mod->defs[0] : NULL;
}

/* Case c (0: lstm.tc, 1: lstm_c4) in dtype dt. */
static lang_def *parse_case(tsl_arena *a, int c, int dt)
{
    const char *d = dtypes[dt];
    char *text = arena_printf(a, c ? LSTM_C4_TC : LSTM_TC, d, d, d, d, d, d);
    return parse_text(a, text);
}

static sched_plan *lower_opt(tsl_arena *a, const lang_def *def, tsl_target target, int sm, const char *opts, graph **gout)
{
    tsl_diag d = {0};
    graph *g = graph_build(a, def, &d);
    sched_options o = sched_options_defaults;
    CHECK(sched_options_parse(opts ? opts : "", &o, &d) == TSL_OK);
    sched_plan *p = g ? sched_lower_opt(a, g, target, sm, &o, &d) : NULL;
    CHECK_MSG(p != NULL, "%s: lowering failed: %s", def->name, sb_str(&d.msg));
    diag_free(&d);
    if (gout) *gout = g;
    return p;
}

/* The plan: one group, its kernel first (guarded by G == 4 when G is a
 * size, the parts after under the negated guard), verifying and round
 * tripping. On sm_90a (f16, bf16): the wgmma kernel first, guarded also
 * by I % 8 == 0 && H % 8 == 0, then the mma.sync kernel unless that. */
static sched_plan *lower_checked(tsl_arena *a, const lang_def *def, tsl_target target, int sm)
{
    graph *g = NULL;
    sched_plan *p = lower_opt(a, def, target, sm, NULL, &g);
    if (!p) return NULL;
    int symbolic = strcmp(def->name, "lstm_cell") == 0;
    int wg = sm >= 90 && target == TSL_TARGET_CUDA && def->tensors[0]->dtype != TSL_DTYPE_F32;
    int n0 = (symbolic ? 2 : 0) + (wg ? 2 : 0), lstm = wg ? 2 : 1;
    CHECK_MSG(g->ngroups == 1 && g->groups[0].strategy == GRAPH_LSTM && count_lstm(p) == lstm &&
                  strstr(p->launches[0].k->name, wg ? "_lstm_wgmma" : "_lstm") && p->launches[0].guard.n == n0 &&
                  (symbolic ? p->nlaunches > lstm : p->nlaunches == lstm),
              "%s: %d groups, %d launches, %d lstm kernels, guard %d terms (notes: %s)", def->name, g->ngroups,
              p->nlaunches, count_lstm(p), p->launches[0].guard.n, p->notes ? p->notes : "none");
    for (int i = 1; i < p->nlaunches; i++) CHECK(sched_guard_nunless(&p->launches[i].guard) >= 1);
    return test_plan_round_trip(a, p, def->name) == TSL_OK ? p : NULL;
}

/* Every case and dtype on a runner, at the size sets in `which` (bits).
 * Tolerances: test_compare_plan's (f32 2e-4; f16 2e-2 and bf16 5e-2 of
 * 1 + rms/4 + |ref|). The kernel keeps gates in f32 where the
 * interpreter rounds them to the 16-bit dtype after each product and the
 * bias: with inputs in [-1, 1) a product's partial sum over I <= 64
 * terms has rms sqrt(64/9) < 2.7, so each rounding moves a gate by at
 * most a half ulp of a few units (bf16: ~0.01-0.03 at the tail of the
 * distribution, f16 16 times less), and sigmoid' <= 1/4, tanh' <= 1,
 * |Cprev| < 1 pass at most that to Cn and Hn, which the interpreter then
 * rounds once more (half an ulp of |x| <= 2: inside tol * |x|). Where a
 * gate is large enough for its rounding to exceed the tolerance the
 * nonlinearities saturate (sigmoid'(8) < 4e-4). */
static void each_case(tsl_target target, int sm, const test_runner *r, const char *what, unsigned which)
{
    for (int c = 0; c < 2; c++)
        for (int dt = 0; dt < 3; dt++) {
            tsl_arena *a = arena_create();
            lang_def *def = parse_case(a, c, dt);
            sched_plan *p = def ? lower_checked(a, def, target, sm) : NULL;
            for (int s = 0; p && s < 6; s++) {
                if (!(which >> s & 1)) continue;
                int64_t sz[4];
                memcpy(sz, sets[s], sizeof sz);
                test_compare_plan(a, def, p, sz, r, what);
            }
            arena_free(a);
        }
}

static void test_graph_one_group(void)
{
    tsl_arena *a = arena_create();
    char *text = NULL;
    size_t n = 0;
    char *path = NULL;
    if (asprintf(&path, "%s/examples/lstm.tc", test_root()) > 0) text = file_read_all(path, &n);
    CHECK(text != NULL);
    lang_def *def = text ? parse_text(a, text) : NULL;
    tsl_diag d = {0};
    graph *g = def ? graph_build(a, def, &d) : NULL;
    CHECK(g && g->ngroups == 1 && g->groups[0].strategy == GRAPH_LSTM && g->groups[0].nparts == 3);
    if (g) {
        int gates = -1;
        for (int t = 0; t < g->ntensors; t++)
            if (!strcmp(g->def->tensors[t]->name, "gates")) gates = t;
        CHECK(gates >= 0 && g->tensors[gates].internal);
    }
    diag_free(&d);
    free(text);
    free(path);
    arena_free(a);
}

static void test_cpu_matches(void) { each_case(TSL_TARGET_CPU, 0, test_run_cpu, "cpu", 0x3f); }
static void test_cuda_plan_interp(void)
{
    each_case(TSL_TARGET_CUDA, 80, test_run_tile_interp, "cuda plan, tile interpreter", 0x3f);
}
/* sm_90a (f16, bf16): the wgmma plan (TMA ring over X Wx then Hprev Wh,
 * four gates' accumulators a consumer) in the tile interpreter at sizes
 * its guard takes (I, H multiples of 8) that no tile divides (B 1, 7,
 * 131; H 8, 72, 136; I 8, 72, 136, 200: the k segments end mid-block),
 * where the tile loop runs several tiles per block (the SM count is 1
 * off the GPU); then sizes the guard refuses (H 5, I 3: the mma.sync
 * kernel) and G = 5 (the parts). */
static const int64_t sets90[6][4] = {
    {1, 8, 8, 4}, {7, 72, 136, 4}, {131, 136, 72, 4}, {130, 200, 8, 4}, {7, 3, 72, 4}, {7, 64, 5, 5},
};

static void test_sm90_plan_interp(void)
{
    for (int c = 0; c < 2; c++)
        for (int dt = 1; dt < 3; dt++) {
            tsl_arena *a = arena_create();
            lang_def *def = parse_case(a, c, dt);
            sched_plan *p = def ? lower_checked(a, def, TSL_TARGET_CUDA, 90) : NULL;
            for (int s = 0; p && s < 6; s++) {
                if (c == 1 && sets90[s][3] != 4) continue; /* (G is the constant 4) */
                int64_t sz[4];
                memcpy(sz, sets90[s], sizeof sz);
                test_compare_plan(a, def, p, sz, test_run_tile_interp, "sm_90a plan, tile interpreter");
            }
            arena_free(a);
        }
}

static void test_cuda_plan_emulated(void)
{
    if (!test_have_cxx()) return;
    each_case(TSL_TARGET_CUDA, 80, test_run_cuda_emu, "cuda plan, emulated", 0x06);
}

/* G = 5 (a size): the guard fails, the parts run; still the interpreter's
 * answer (the tail reads gates 0..3 only). */
static void test_guard_parts(void)
{
    for (int dt = 0; dt < 3; dt += 2) {
        tsl_arena *a = arena_create();
        lang_def *def = parse_case(a, 0, dt);
        sched_plan *p = def ? lower_checked(a, def, TSL_TARGET_CUDA, 80) : NULL;
        const int64_t sz[4] = {7, 3, 5, 5};
        if (p) test_compare_plan(a, def, p, sz, test_run_tile_interp, "G = 5: the parts");
        arena_free(a);
    }
}

/* lstm.mma.bm=64 and lstm.mma.bh=64, f16, in the tile interpreter. */
static void test_mma_options(void)
{
    const char *opts[2] = {"lstm.mma.bm=64", "lstm.mma.bh=64"};
    for (int i = 0; i < 2; i++) {
        tsl_arena *a = arena_create();
        lang_def *def = parse_case(a, 0, 1);
        sched_plan *p = def ? lower_opt(a, def, TSL_TARGET_CUDA, 80, opts[i], NULL) : NULL;
        CHECK(p && count_lstm(p) == 1);
        for (int s = 1; p && s < 4; s++) {
            int64_t sz[4];
            memcpy(sz, sets[s], sizeof sz);
            test_compare_plan(a, def, p, sz, test_run_tile_interp, opts[i]);
        }
        arena_free(a);
    }
}

/* NVRTC for sm_80 and sm_90a: every dtype's kernel compiles, no spills. */
static void test_nvrtc(void)
{
    tsl_diag d = {0};
    if (rt_cuda_nvrtc_available(&d) != TSL_OK) {
        printf("    skipped: no NVRTC (%s)\n", sb_str(&d.msg));
        diag_free(&d);
        return;
    }
    diag_free(&d);
    const char *arch[2] = {"sm_80", "sm_90a"};
    for (int dt = 0; dt < 3; dt++)
        for (int ai = 0; ai < 2; ai++) {
            tsl_arena *a = arena_create();
            lang_def *def = parse_case(a, 0, dt);
            sched_plan *p = def ? lower_checked(a, def, TSL_TARGET_CUDA, ai ? 90 : 80) : NULL;
            for (int l = 0; p && l < p->nlaunches; l++) {
                const tile_kernel *k = p->launches[l].k;
                if (!strstr(k->name, "_lstm")) continue;
                rt_ptxas_report worst;
                int narms = 0;
                diag_reset(&d);
                tsl_status st = test_nvrtc_arms(p->m, k, arch[ai], &worst, &narms, &d);
                CHECK_MSG(st == TSL_OK, "%s %s: %s", k->name, arch[ai], sb_str(&d.msg));
                if (st == TSL_OK) {
                    printf("    %s %s %s: %d registers, spills %d/%d, stack %d\n", k->name, dtypes[dt], arch[ai],
                           worst.registers, worst.spill_stores, worst.spill_loads, worst.stack_frame);
                    CHECK_MSG(worst.spill_stores == 0 && worst.spill_loads == 0, "%s %s %s spills", k->name,
                              dtypes[dt], arch[ai]);
                }
            }
            diag_free(&d);
            arena_free(a);
        }
}

/* Near misses: each keeps the groups of the fusion rules (no lstm group,
 * no lstm kernel) and matches the interpreter on the CPU and in the tile
 * interpreter. */
static const char *const near_misses[] = {
    /* the gate index through a size: G-1 is 3 only when G is 4 */
    "def nm_gsize(float(B,I) X, float(B,H) Hprev, float(B,H) Cprev, float(G,H,I) Wx, float(G,H,H) Wh) -> (Hn, Cn) {\n"
    "  gates(b,g,h) +=! X(b,i) * Wx(g,h,i)\n  gates(b,g,h) += Hprev(b,j) * Wh(g,h,j)\n"
    "  Cn(b,h) = sigmoid(gates(b,1,h)) * Cprev(b,h) + sigmoid(gates(b,0,h)) * tanh(gates(b,2,h))\n"
    "  Hn(b,h) = sigmoid(gates(b,G-1,h)) * tanh(Cn(b,h))\n}\n",
    /* five gates (a constant G other than 4) */
    "def nm_g5(float(B,I) X, float(B,H) Hprev, float(B,H) Cprev, float(5,H,I) Wx, float(5,H,H) Wh) -> (Hn, Cn) {\n"
    "  gates(b,g,h) +=! X(b,i) * Wx(g,h,i)\n  gates(b,g,h) += Hprev(b,j) * Wh(g,h,j)\n"
    "  Cn(b,h) = sigmoid(gates(b,1,h)) * Cprev(b,h) + sigmoid(gates(b,4,h)) * tanh(gates(b,2,h))\n"
    "  Hn(b,h) = sigmoid(gates(b,3,h)) * tanh(Cn(b,h))\n}\n",
    /* the tail reads gates at another column: another block's values */
    "def nm_col(float(B,I) X, float(B,H) Hprev, float(B,H) Cprev, float(G,H,I) Wx, float(G,H,H) Wh) -> (Hn, Cn) {\n"
    "  gates(b,g,h) +=! X(b,i) * Wx(g,h,i)\n  gates(b,g,h) += Hprev(b,j) * Wh(g,h,j)\n"
    "  Cn(b,h) = sigmoid(gates(b,1,h)) * Cprev(b,h) + sigmoid(gates(b,0,h)) * tanh(gates(b,2,0))\n"
    "  Hn(b,h) = sigmoid(gates(b,3,h)) * tanh(Cn(b,h))\n}\n",
    /* gates is also an output */
    "def nm_out(float(B,I) X, float(B,H) Hprev, float(B,H) Cprev, float(G,H,I) Wx, float(G,H,H) Wh) -> (Hn, Cn, "
    "gates) {\n"
    "  gates(b,g,h) +=! X(b,i) * Wx(g,h,i)\n  gates(b,g,h) += Hprev(b,j) * Wh(g,h,j)\n"
    "  Cn(b,h) = sigmoid(gates(b,1,h)) * Cprev(b,h) + sigmoid(gates(b,0,h)) * tanh(gates(b,2,h))\n"
    "  Hn(b,h) = sigmoid(gates(b,3,h)) * tanh(Cn(b,h))\n}\n",
    /* the cell update overwrites what the products read (Hprev in place) */
    "def nm_inplace(float(B,I) X, float(B,H) Hprev, float(B,H) Cprev, float(G,H,I) Wx, float(G,H,H) Wh) -> (Cn, "
    "Hprev) {\n"
    "  gates(b,g,h) +=! X(b,i) * Wx(g,h,i)\n  gates(b,g,h) += Hprev(b,j) * Wh(g,h,j)\n"
    "  Cn(b,h) = sigmoid(gates(b,1,h)) * Cprev(b,h) + sigmoid(gates(b,0,h)) * tanh(gates(b,2,h))\n"
    "  Hprev(b,h) = sigmoid(gates(b,3,h)) * tanh(Cn(b,h))\n}\n",
};

static void test_near_misses(void)
{
    for (size_t c = 0; c < TSL_COUNTOF(near_misses); c++) {
        tsl_arena *a = arena_create();
        lang_def *def = parse_text(a, near_misses[c]);
        for (int ti = 0; def && ti < 2; ti++) {
            graph *g = NULL;
            sched_plan *p = lower_opt(a, def, ti ? TSL_TARGET_CUDA : TSL_TARGET_CPU, 80, NULL, &g);
            if (!p) continue;
            int lstm_groups = 0;
            for (int i = 0; i < g->ngroups; i++) lstm_groups += g->groups[i].strategy == GRAPH_LSTM;
            CHECK_MSG(lstm_groups == 0 && count_lstm(p) == 0 && g->ngroups >= 2, "%s: %d groups, %d lstm", def->name,
                      g->ngroups, lstm_groups);
            int64_t sz[4] = {7, 3, 5, 4};
            if (strstr(def->name, "g5")) sz[3] = 0; /* (three sizes) */
            test_compare_plan(a, def, p, sz, ti ? test_run_tile_interp : test_run_cpu, "near miss");
        }
        arena_free(a);
    }
}

/* sched.lstm=0 (and sched.chains=0): the parts only, unguarded. */
static void test_off(void)
{
    const char *opts[2] = {"sched.lstm=0", "sched.chains=0"};
    for (int i = 0; i < 2; i++) {
        tsl_arena *a = arena_create();
        lang_def *def = parse_case(a, 0, 0);
        sched_plan *p = def ? lower_opt(a, def, TSL_TARGET_CPU, 0, opts[i], NULL) : NULL;
        CHECK(p != NULL);
        if (p) {
            CHECK_EQ_INT(count_lstm(p), 0);
            for (int l = 0; l < p->nlaunches; l++) CHECK_EQ_INT(p->launches[l].guard.n, 0);
            int64_t sz[4] = {7, 3, 5, 4};
            test_compare_plan(a, def, p, sz, test_run_cpu, opts[i]);
        }
        arena_free(a);
    }
}

TEST_SUITE(sched_lstm) = {
    {"graph_one_group", test_graph_one_group},
    {"cpu_matches", test_cpu_matches},
    {"cuda_plan_interp", test_cuda_plan_interp},
    {"cuda_plan_emulated", test_cuda_plan_emulated},
    {"sm90_plan_interp", test_sm90_plan_interp},
    {"guard_parts", test_guard_parts},
    {"mma_options", test_mma_options},
    {"nvrtc", test_nvrtc},
    {"near_misses", test_near_misses},
    {"off", test_off},
    {0},
};
