/* test_sched_chain.c — the GEMM-chain strategy (src/sched/chain.c): MLPs
 * as users write them in TC (W stored (o,i) or (i,o), bias + relu, tanh,
 * sigmoid epilogues, 2-4 layers, f32/f16/bf16) must become ONE
 * `*_gemmchain` kernel, guarded by the hidden widths (<= 256), with the
 * layers' own kernels under the negated guard; the module verifies and
 * round-trips; the CPU plan (generated C), the CUDA plan in the tile
 * interpreter (blocks shuffled) and in the host emulation of the
 * generated CUDA give the TC interpreter's answer at sizes 1, primes and
 * tile remainders, on both sides of the guard; NVRTC compiles the CUDA
 * kernels for sm_80. */
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "sched/sched.h"
#include "sched_runners.h"
#include "test.h"
#include "tile/tile.h"

typedef struct ch_case {
    const char *src;
    int64_t sets[3][8]; /* size slots in declaration order; all 0: unused */
    int emu;            /* set 1 also in the CUDA emulation */
} ch_case;

static const ch_case cases[] = {
    /* examples/mlp3.tc; the last set has H1 = 300: the layers' kernels */
    {"def mlp3(float(B,I) X, float(H1,I) W1, float(H1) B1, float(H2,H1) W2, float(H2) B2,\n"
     "         float(O,H2) W3, float(O) B3) -> (Y) {\n"
     "  h1(b,o) +=! X(b,i) * W1(o,i)\n  h1(b,o) = fmaxf(h1(b,o) + B1(o), 0)\n"
     "  h2(b,o) +=! h1(b,i) * W2(o,i)\n  h2(b,o) = fmaxf(h2(b,o) + B2(o), 0)\n"
     "  Y(b,o) +=! h2(b,i) * W3(o,i)\n  Y(b,o) = fmaxf(Y(b,o) + B3(o), 0)\n}\n",
     {{1, 1, 1, 1, 1}, {67, 37, 129, 65, 70}, {5, 7, 300, 11, 3}},
     1},
    /* weights stored (i, o), no epilogue on the hidden layer, tanh after */
    {"def mlp2t(float(B,I) X, float(I,H) W1, float(H,O) W2) -> (Y) {\n"
     "  h(b,o) +=! X(b,i) * W1(i,o)\n  Y(b,o) +=! h(b,i) * W2(i,o)\n  Y(b,o) = tanh(Y(b,o))\n}\n",
     {{1, 1, 1, 1}, {19, 131, 256, 33}},
     1},
    /* four layers of one width (Graphene's MLP in small), sigmoid, f16 */
    {"def mlp4(float16(B,H) X, float16(H,H) W1, float16(H,H) W2, float16(H,H) W3, float16(H,H) W4, float16(H) bb)"
     " -> (Y) {\n"
     "  h1(b,o) +=! X(b,i) * W1(o,i)\n  h1(b,o) = sigmoid(h1(b,o) + bb(o))\n"
     "  h2(b,o) +=! h1(b,i) * W2(o,i)\n  h2(b,o) = fmaxf(h2(b,o), 0)\n"
     "  h3(b,o) +=! h2(b,i) * W3(o,i)\n  h3(b,o) = h3(b,o) * 0.25\n"
     "  Y(b,o) +=! h3(b,i) * W4(o,i)\n}\n",
     {{1, 1}, {70, 67}},
     0},
    {"def mlpb(bfloat16(B,I) X, bfloat16(H,I) W1, bfloat16(O,H) W2, bfloat16(H) c) -> (Y) {\n"
     "  h(b,o) +=! X(b,i) * W1(o,i)\n  h(b,o) = fmaxf(h(b,o) - c(o), 0)\n  Y(b,o) +=! h(b,i) * W2(o,i)\n}\n",
     {{1, 1, 1, 1}, {33, 17, 97, 5}},
     0},
    /* the tensor-core plan (chain_mma.c): f16, weights stored (i, o),
     * widths 16, 72, 256 against its 128 x 64 tiles, rows 1, 7, 130 */
    {"def mlp2h(float16(B,I) X, float16(I,H) W1, float16(H,O) W2, float16(H) c1, float16(O) c2) -> (Y) {\n"
     "  h(b,o) +=! X(b,i) * W1(i,o)\n  h(b,o) = fmaxf(h(b,o) + c1(o), 0)\n"
     "  Y(b,o) +=! h(b,i) * W2(i,o)\n  Y(b,o) = fmaxf(Y(b,o) + c2(o), 0)\n}\n",
     {{1, 16, 16, 8}, {7, 37, 72, 29}, {130, 64, 256, 130}},
     1},
    /* bf16, GELU (erf) and residual reads of X in the epilogues (scaled:
     * the values stay O(1), where bf16's rounding of the layers' results,
     * which the kernel skips, stays within the tolerance) */
    {"def mlp3g(bfloat16(B,H) X, bfloat16(H,H) W1, bfloat16(H,H) W2, bfloat16(O,H) W3, bfloat16(H) c1) -> (Y) {\n"
     "  h1(b,o) +=! X(b,i) * W1(o,i)\n"
     "  h1(b,o) = 0.125 * (h1(b,o) + c1(o)) * (1 + erf((h1(b,o) + c1(o)) * 0.1767767)) + X(b,o)\n"
     "  h2(b,o) +=! h1(b,i) * W2(o,i)\n  h2(b,o) = h2(b,o) * 0.125 + X(b,o)\n"
     "  Y(b,o) +=! h2(b,i) * W3(o,i)\n  Y(b,o) = Y(b,o) * 0.125\n}\n",
     {{1, 16, 3}, {7, 72, 40}, {130, 128, 17}},
     1},
};

static int count_chain(const sched_plan *p)
{
    int n = 0;
    for (int i = 0; i < p->nlaunches; i++) n += strstr(p->launches[i].k->name, "_gemmchain") != NULL;
    return n;
}

static lang_def *parse_case(tsl_arena *a, size_t c)
{
    tsl_source src = {"chain.tc", cases[c].src};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK_MSG(mod != NULL && mod->ndefs == 1, "case %zu: %s", c, sb_str(&d.msg));
    diag_free(&d);
    return mod && mod->ndefs == 1 ? mod->defs[0] : NULL;
}

static sched_plan *lower_checked(tsl_arena *a, const lang_def *def, tsl_target target)
{
    tsl_diag d = {0};
    graph *g = graph_build(a, def, &d);
    /* on CUDA the layers' contraction plans have split-K launches guarded
     * by M; guards do not combine, so with them the chain plan steps back
     * (lower.c): contract.splitk=1 (never) keeps it */
    sched_options o = sched_options_defaults;
    CHECK(sched_options_parse("contract.splitk=1", &o, &d) == TSL_OK);
    sched_plan *p = g ? sched_lower_opt(a, g, target, 80, &o, &d) : NULL;
    CHECK_MSG(p != NULL, "%s: lowering failed: %s", def->name, sb_str(&d.msg));
    if (!p) {
        diag_free(&d);
        return NULL;
    }
    CHECK_MSG(g->ngroups == 1 && count_chain(p) == 1 && p->launches[0].guard.n >= 1 && p->nlaunches > 1 &&
                  sched_guard_nunless(&p->launches[1].guard) > 0,
              "%s: %d groups, %d launches, %d chain kernels (notes: %s)", def->name, g->ngroups, p->nlaunches,
              count_chain(p), p->notes ? p->notes : "none");
    diag_free(&d);
    return test_plan_round_trip(a, p, def->name) == TSL_OK ? p : NULL;
}

static void each_case(tsl_target target, const test_runner *r, const char *what, int emu)
{
    for (size_t c = 0; c < TSL_COUNTOF(cases); c++) {
        if (emu && !cases[c].emu) continue;
        tsl_arena *a = arena_create();
        lang_def *def = parse_case(a, c);
        sched_plan *p = def ? lower_checked(a, def, target) : NULL;
        for (int s = 0; p && s < 3; s++) {
            if (!cases[c].sets[s][0] || (emu && s != 1)) continue;
            test_compare_plan(a, def, p, cases[c].sets[s], r, what);
        }
        arena_free(a);
    }
}

static void test_cpu_matches(void) { each_case(TSL_TARGET_CPU, test_run_cpu, "cpu", 0); }
static void test_cuda_plan_interp(void)
{
    each_case(TSL_TARGET_CUDA, test_run_tile_interp, "cuda plan, tile interpreter", 0);
}
static void test_cuda_plan_emulated(void)
{
    if (!test_have_cxx()) return;
    each_case(TSL_TARGET_CUDA, test_run_cuda_emu, "cuda plan, emulated", 1);
}

/* With split-K (the default on CUDA) and on sm_90a (the layers' wgmma
 * plans): the parts' launches have guards of their own, and run them
 * unless the chain's guard holds; the chain stays. Right on both sides. */
static void test_cuda_splitk_parts(void)
{
    const int sms[2] = {80, 90};
    for (int si = 0; si < 2; si++)
        for (size_t c = sms[si] == 90 ? 4 : 0; c < TSL_COUNTOF(cases); c += 4) {
            /* (f32 chains take the FMA plan, not on sm_90a) */
            tsl_arena *a = arena_create();
            lang_def *def = parse_case(a, c);
            tsl_diag d = {0};
            graph *g = def ? graph_build(a, def, &d) : NULL;
            sched_plan *p = g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, sms[si], NULL, &d) : NULL;
            CHECK(p != NULL);
            if (p) {
                CHECK_EQ_INT(count_chain(p), 1);
                int own = 0;
                for (int i = 1; i < p->nlaunches; i++) {
                    const sched_guard *gd = &p->launches[i].guard;
                    CHECK_MSG(sched_guard_nunless(gd) >= 1 && gd->grp[gd->n - 1] == sched_guard_nunless(gd),
                              "%s: launch %d runs whatever the chain's guard", def->name, i);
                    own += gd->grp[0] == 0 || sched_guard_nunless(gd) > 1;
                }
                CHECK_MSG(own > 0, "%s sm_%d: no part has a guard of its own", def->name, sms[si]);
                if (sms[si] == 80)
                    for (int s = 0; s < 3; s++)
                        test_compare_plan(a, def, p, cases[c].sets[s], test_run_tile_interp, "cuda plan with split-K parts");
            }
            diag_free(&d);
            arena_free(a);
        }
}

/* Graphene's MLP: 20 f16 layers of one width, bias + ReLU, at widths 72
 * and 128 and rows 7 and 130, in the tile interpreter: one chain kernel,
 * the interpreter's answer. Scaled by 1/8 so that a layer halves a
 * difference: the interpreter rounds each product to f16 before the
 * epilogue, the kernel does not, and at a gain of 1 (scale 1/4) those
 * differences random-walk through the 20 layers past f16's tolerance
 * (8% on some elements). Within 1e-2 x (1 + |ref|). */
static void test_mlp20(void)
{
    strbuf s = {0};
    sb_puts(&s, "def mlp20(float16(B,H) X");
    for (int k = 1; k <= 20; k++) sb_printf(&s, ", float16(H,H) W%d, float16(H) c%d", k, k);
    sb_puts(&s, ") -> (Y) {\n");
    for (int k = 1; k <= 20; k++) {
        char h[8], prev[8];
        snprintf(h, sizeof h, k == 20 ? "Y" : "h%d", k);
        snprintf(prev, sizeof prev, k == 1 ? "X" : "h%d", k - 1);
        sb_printf(&s, "  %s(b,o) +=! %s(b,i) * W%d(o,i)\n  %s(b,o) = fmaxf(%s(b,o) + c%d(o), 0) * 0.125\n", h, prev, k, h,
                  h, k);
    }
    sb_puts(&s, "}\n");
    tsl_arena *a = arena_create();
    tsl_source src = {"mlp20.tc", sb_str(&s)};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK_MSG(mod && mod->ndefs == 1, "%s", sb_str(&d.msg));
    graph *g = mod && mod->ndefs == 1 ? graph_build(a, mod->defs[0], &d) : NULL;
    sched_plan *p = g ? sched_lower_for(a, g, TSL_TARGET_CUDA, &d) : NULL;
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(count_chain(p), 1);
        const int64_t sets[2][8] = {{130, 72}, {7, 128}};
        test_draw dr = {.tol = 1e-2};
        for (int i = 0; i < 2; i++)
            CHECK_EQ_INT(test_compare_plan_draw(a, mod->defs[0], p, sets[i], test_run_tile_interp, "mlp20, tile interpreter", &dr), 0);
    }
    diag_free(&d);
    sb_free(&s);
    arena_free(a);
}

/* chain.mma.bm=32 (4 warps a block, two blocks an SM): the f16/bf16
 * cases in the tile interpreter. */
static void test_mma_bm32(void)
{
    for (size_t c = 4; c < TSL_COUNTOF(cases); c++) {
        tsl_arena *a = arena_create();
        lang_def *def = parse_case(a, c);
        tsl_diag d = {0};
        sched_options o = sched_options_defaults;
        CHECK(sched_options_parse("chain.mma.bm=32", &o, &d) == TSL_OK);
        graph *g = def ? graph_build(a, def, &d) : NULL;
        sched_plan *p = g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, 90, &o, &d) : NULL;
        CHECK(p && count_chain(p) == 1 && p->launches[0].k->threads == 128);
        for (int s = 0; p && s < 3; s++) test_compare_plan(a, def, p, cases[c].sets[s], test_run_tile_interp, "chain.mma.bm=32");
        diag_free(&d);
        arena_free(a);
    }
}

static void test_nvrtc(void)
{
    tsl_diag d = {0};
    if (rt_cuda_nvrtc_available(&d) != TSL_OK) {
        printf("    skipped: no NVRTC (%s)\n", sb_str(&d.msg));
        diag_free(&d);
        return;
    }
    diag_free(&d);
    for (size_t c = 0; c < TSL_COUNTOF(cases); c++) {
        tsl_arena *a = arena_create();
        lang_def *def = parse_case(a, c);
        sched_plan *p = def ? lower_checked(a, def, TSL_TARGET_CUDA) : NULL;
        if (p) {
            const tile_kernel *k = p->launches[0].k;
            rt_ptxas_report worst;
            int narms = 0;
            diag_reset(&d);
            tsl_status st = test_nvrtc_arms(p->m, k, "sm_80", &worst, &narms, &d);
            CHECK_MSG(st == TSL_OK, "%s: %s", k->name, sb_str(&d.msg));
            if (st == TSL_OK)
                printf("    %s sm_80: %d registers, spills %d/%d, stack %d\n", k->name, worst.registers,
                       worst.spill_stores, worst.spill_loads, worst.stack_frame);
        }
        diag_free(&d);
        arena_free(a);
    }
}

/* sched.chains=0: only the layers' kernels, unguarded. */
static void test_off(void)
{
    tsl_arena *a = arena_create();
    lang_def *def = parse_case(a, 0);
    tsl_diag d = {0};
    sched_options o = sched_options_defaults;
    CHECK(sched_options_parse("sched.chains=0", &o, &d) == TSL_OK);
    graph *g = def ? graph_build(a, def, &d) : NULL;
    sched_plan *p = g ? sched_lower_opt(a, g, TSL_TARGET_CPU, 0, &o, &d) : NULL;
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(count_chain(p), 0);
        CHECK_EQ_INT(p->nlaunches, 3);
        for (int i = 0; i < p->nlaunches; i++) CHECK_EQ_INT(p->launches[i].guard.n, 0);
        test_compare_plan(a, def, p, cases[0].sets[1], test_run_cpu, "cpu, chains off");
    }
    diag_free(&d);
    arena_free(a);
}

TEST_SUITE(sched_chain) = {
    {"cpu_matches", test_cpu_matches},
    {"cuda_plan_interp", test_cuda_plan_interp},
    {"cuda_plan_emulated", test_cuda_plan_emulated},
    {"cuda_splitk_parts", test_cuda_splitk_parts},
    {"mlp20", test_mlp20},
    {"mma_bm32", test_mma_bm32},
    {"nvrtc", test_nvrtc},
    {"off", test_off},
    {0},
};
