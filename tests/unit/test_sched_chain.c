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
                  p->launches[1].guard.negate,
              "%s: %d groups, %d launches, %d chain kernels (notes: %s)", def->name, g->ngroups, p->nlaunches,
              count_chain(p), p->notes ? p->notes : "none");
    tsl_status st = tile_verify(p->m, NULL, &d);
    char *t1 = tile_print(p->m);
    CHECK_MSG(st == TSL_OK, "%s: the schedule does not verify: %s\n%s", def->name, sb_str(&d.msg), t1);
    tsl_source src = {def->name, t1};
    tile_module *m2 = NULL;
    diag_reset(&d);
    if (!st) st = tile_parse(a, &src, &d, &m2);
    CHECK_MSG(st == TSL_OK, "%s: the printed schedule does not parse: %s", def->name, sb_str(&d.msg));
    if (m2) {
        char *t2 = tile_print(m2);
        CHECK_MSG(!strcmp(t1, t2), "%s: print/parse/print differs", def->name);
        free(t2);
    }
    free(t1);
    diag_free(&d);
    return st == TSL_OK ? p : NULL;
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

/* With split-K (the default on CUDA): the layers' kernels only, right. */
static void test_cuda_splitk_parts(void)
{
    tsl_arena *a = arena_create();
    lang_def *def = parse_case(a, 0);
    tsl_diag d = {0};
    graph *g = def ? graph_build(a, def, &d) : NULL;
    sched_plan *p = g ? sched_lower_for(a, g, TSL_TARGET_CUDA, &d) : NULL;
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(count_chain(p), 0);
        test_compare_plan(a, def, p, cases[0].sets[1], test_run_tile_interp, "cuda plan with split-K parts");
    }
    diag_free(&d);
    arena_free(a);
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
    {"nvrtc", test_nvrtc},
    {"off", test_off},
    {0},
};
