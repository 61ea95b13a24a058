/* test_sched_attention.c — the attention strategy (src/sched/attention.c):
 * attention chains as users write them in TC (scale as a constant, a size
 * or a scalar; causal masks by index comparison; additive, key-padding and
 * boolean mask tensors; batch and heads as leading dims; Tq != Tk; rows
 * where every score is masked; f32, f16, bf16; head dims 64 and 128) must
 * become ONE `*_attention` kernel whose module verifies and round-trips,
 * and the CPU plan (generated C), the CUDA plan in the tile interpreter
 * (blocks shuffled) and in the host emulation of the generated CUDA must
 * give the TC interpreter's answer on fresh random inputs, outputs poisoned,
 * at sizes 1, primes and non-multiples of every tile (128/64 rows, 64/32 keys,
 * 64/32-deep head blocks, 64 value columns). The CUDA kernels compile with
 * NVRTC for sm_80 and sm_90a. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "sched/attention.h"
#include "sched/sched.h"
#include "sched_runners.h"
#include "test.h"
#include "tile/tile.h"

typedef struct at_case {
    const char *src;
    sched_attn_mask mask;  /* what sched_attn_recognise must summarise */
    int64_t sets[3][8];    /* size slots in declaration order; all 0: unused */
    int emu;               /* sets run in the CUDA emulation (slow: pthreads) */
} at_case;

#define ATT_TAIL                                                                                                     \
    "  m(b,i) max=! t(b,i,j)\n  p(b,i,j) = exp(t(b,i,j) - m(b,i))\n  l(b,i) +=! p(b,i,j)\n"                         \
    "  O(b,i,e) +=! p(b,i,j) * V(b,j,e)\n  O(b,i,e) = O(b,i,e) / l(b,i)\n}\n"

static const at_case cases[] = {
    /* examples/attention.tc: / sqrt(D) */
    {"def attention(float(B,Tq,D) Q, float(B,Tk,D) K, float(B,Tk,E) V) -> (O) {\n"
     "  scores(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  scores(b,i,j) = scores(b,i,j) / sqrt(D)\n"
     "  rowmax(b,i) max=! scores(b,i,j)\n  p(b,i,j) = exp(scores(b,i,j) - rowmax(b,i))\n"
     "  denom(b,i) +=! p(b,i,j)\n  O(b,i,e) +=! p(b,i,j) * V(b,j,e)\n  O(b,i,e) = O(b,i,e) / denom(b,i)\n}\n",
     SCHED_ATTN_MASK_NONE,
     {{1, 1, 1, 1, 1}, {2, 67, 71, 37, 41}, {1, 5, 131, 64, 64}},
     1},
    /* heads, a scalar scale, causal (row 0 has one key), PV before the sum */
    {"def mha(float(B,H,T,D) Q, float(B,H,S,D) K, float(B,H,S,D) V, float sc) -> (O) {\n"
     "  s(b,h,i,j) +=! Q(b,h,i,d) * K(b,h,j,d)\n  t(b,h,i,j) = j <= i ? s(b,h,i,j) * sc : -1e30\n"
     "  m(b,h,i) max=! t(b,h,i,j)\n  p(b,h,i,j) = exp(t(b,h,i,j) - m(b,h,i))\n"
     "  O(b,h,i,e) +=! p(b,h,i,j) * V(b,h,j,e)\n  l(b,h,i) +=! p(b,h,i,j)\n"
     "  O(b,h,i,e) = O(b,h,i,e) / l(b,h,i)\n}\n",
     SCHED_ATTN_MASK_GENERAL,
     {{1, 1, 1, 1, 1}, {2, 3, 13, 70, 5}, {1, 2, 67, 67, 64}},
     1},
    /* j < i: row 0 is masked everywhere (-1e30: the mean of V, as the
     * interpreter gives) */
    {"def strict(float(B,Tq,D) Q, float(B,Tk,D) K, float(B,Tk,E) V) -> (O) {\n"
     "  s(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  t(b,i,j) = j < i ? s(b,i,j) * 0.125 : -1e30\n" ATT_TAIL,
     SCHED_ATTN_MASK_GENERAL,
     {{1, 1, 1, 1, 1}, {2, 70, 67, 3, 7}},
     1},
    /* an additive mask M(i,j) and a key-padding mask P(b,j) */
    {"def madd(float(B,Tq,D) Q, float(B,Tk,D) K, float(B,Tk,E) V, float(Tq,Tk) M, float(B,Tk) P) -> (O) {\n"
     "  s(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  u(b,i,j) = s(b,i,j) + M(i,j)\n  t(b,i,j) = u(b,i,j) - 4 * P(b,j)\n" ATT_TAIL,
     SCHED_ATTN_MASK_GENERAL,
     {{1, 1, 1, 1, 1}, {2, 29, 67, 11, 3}},
     1},
    /* a boolean mask tensor (its rows may be all false) */
    {"def mbool(float(B,Tq,D) Q, float(B,Tk,D) K, float(B,Tk,E) V, bool(B,Tq,Tk) A) -> (O) {\n"
     "  s(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  t(b,i,j) = A(b,i,j) ? s(b,i,j) : -1e30\n" ATT_TAIL,
     SCHED_ATTN_MASK_GENERAL,
     {{1, 1, 1, 1, 1}, {3, 7, 66, 5, 9}},
     1},
    /* f16 and bf16, head dims 64 and 128 */
    {"def h16(float16(B,Tq,D) Q, float16(B,Tk,D) K, float16(B,Tk,E) V) -> (O) {\n"
     "  s(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  t(b,i,j) = s(b,i,j) * 0.125\n" ATT_TAIL,
     SCHED_ATTN_MASK_NONE,
     {{1, 1, 1, 1, 1}, {2, 67, 71, 64, 64}, {1, 19, 37, 128, 128}},
     0},
    {"def b16(bfloat16(B,Tq,D) Q, bfloat16(B,Tk,D) K, bfloat16(B,Tk,E) V) -> (O) {\n"
     "  s(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  t(b,i,j) = j <= i + 3 ? s(b,i,j) / 8 : -1e30\n" ATT_TAIL,
     SCHED_ATTN_MASK_GENERAL,
     {{1, 1, 1, 1, 1}, {2, 67, 13, 128, 128}},
     0},
    /* P normalised before PV, written as users often do */
    {"def pnorm(float(B,Tq,D) Q, float(B,Tk,D) K, float(B,Tk,E) V) -> (O) {\n"
     "  s(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  m(b,i) max=! s(b,i,j)\n  p(b,i,j) = exp(s(b,i,j) - m(b,i))\n"
     "  l(b,i) +=! p(b,i,j)\n  pn(b,i,j) = p(b,i,j) / l(b,i)\n  O(b,i,e) +=! pn(b,i,j) * V(b,j,e)\n}\n",
     SCHED_ATTN_MASK_NONE,
     {{1, 1, 1, 1, 1}, {2, 67, 71, 37, 65}},
     1},
    /* no batch dim */
    {"def nob(float(Tq,D) Q, float(Tk,D) K, float(Tk,E) V) -> (O) {\n"
     "  s(i,j) +=! Q(i,d) * K(j,d)\n  m(i) max=! s(i,j)\n  p(i,j) = exp(s(i,j) - m(i))\n"
     "  l(i) +=! p(i,j)\n  O(i,e) +=! p(i,j) * V(j,e)\n  O(i,e) = O(i,e) / l(i)\n}\n",
     SCHED_ATTN_MASK_NONE,
     {{1, 1, 1, 1}, {67, 71, 37, 65}},
     1},
};

static int count_attn(const sched_plan *p)
{
    int n = 0;
    for (int i = 0; i < p->nlaunches; i++) n += strstr(p->launches[i].k->name, "_attention") != NULL;
    return n;
}

/* Lower for target; one attention kernel, verified, print/parse/print
 * identical. */
static sched_plan *lower_checked(tsl_arena *a, const lang_def *def, tsl_target target)
{
    tsl_diag d = {0};
    graph *g = graph_build(a, def, &d);
    sched_plan *p = g ? sched_lower_for(a, g, target, &d) : NULL;
    CHECK_MSG(p != NULL, "%s: lowering failed: %s", def->name, sb_str(&d.msg));
    if (!p) {
        diag_free(&d);
        return NULL;
    }
    CHECK_MSG(p->nlaunches == 1 && count_attn(p) == 1, "%s: %d launches, %d attention kernels (notes: %s)",
              def->name, p->nlaunches, count_attn(p), p->notes ? p->notes : "none");
    diag_free(&d);
    return test_plan_round_trip(a, p, def->name) == TSL_OK ? p : NULL;
}

static lang_def *parse_case(tsl_arena *a, size_t c)
{
    tsl_source src = {"attention.tc", cases[c].src};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK_MSG(mod != NULL && mod->ndefs == 1, "case %zu: %s", c, sb_str(&d.msg));
    diag_free(&d);
    return mod && mod->ndefs == 1 ? mod->defs[0] : NULL;
}

/* The struct a Hopper plan reads: tensors, sizes, dtypes, the summary. */
static void test_recognised(void)
{
    for (size_t c = 0; c < TSL_COUNTOF(cases); c++) {
        tsl_arena *a = arena_create();
        lang_def *def = parse_case(a, c);
        tsl_diag d = {0};
        graph *g = def ? graph_build(a, def, &d) : NULL;
        if (g) {
            CHECK_MSG(g->ngroups == 1 && g->groups[0].strategy == GRAPH_ATTENTION, "%s: %d groups", def->name,
                      g->ngroups);
            sched_attn at;
            CHECK(sched_attn_recognise(g, &g->groups[0], &at));
            CHECK_EQ_INT(at.mask, cases[c].mask);
            CHECK(!strcmp(def->tensors[at.at.q]->name, "Q") && !strcmp(def->tensors[at.at.k]->name, "K") &&
                  !strcmp(def->tensors[at.at.v]->name, "V") && !strcmp(def->tensors[at.at.o]->name, "O"));
            CHECK_EQ_INT(at.dq, def->tensors[at.at.q]->dtype);
            if (c == 0) CHECK(at.simple && at.scale_rsqrt_size >= 0 && at.nb == 1);
            if (c == 1) CHECK(at.nb == 2);
            if (c == 5) CHECK(at.simple && fabs(at.scale - 0.125) < 1e-12 && at.scale_scalar < 0);
        }
        diag_free(&d);
        arena_free(a);
    }
    /* the summary of a scale then a causal mask */
    tsl_arena *a = arena_create();
    tsl_source src = {"c.tc", "def c(float(T,D) Q, float(T,D) K, float(T,D) V, float sc) -> (O) {\n"
                              "  s(i,j) +=! Q(i,d) * K(j,d)\n  u(i,j) = s(i,j) * sc\n"
                              "  t(i,j) = j <= i ? u(i,j) : -1e30\n  m(i) max=! t(i,j)\n"
                              "  p(i,j) = exp(t(i,j) - m(i))\n  l(i) +=! p(i,j)\n"
                              "  O(i,e) +=! p(i,j) * V(j,e)\n  O(i,e) = O(i,e) / l(i)\n}\n"};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
    CHECK(g != NULL);
    if (g) {
        sched_attn at;
        CHECK(sched_attn_recognise(g, &g->groups[0], &at));
        CHECK(at.simple && at.scale_scalar >= 0 && at.mask == SCHED_ATTN_MASK_CAUSAL && at.mask_fill == -1e30);
    }
    diag_free(&d);
    arena_free(a);
}

static void each_case(tsl_target target, const test_runner *r, const char *what, int emu_only)
{
    for (size_t c = 0; c < TSL_COUNTOF(cases); c++) {
        if (emu_only && !cases[c].emu) continue;
        tsl_arena *a = arena_create();
        lang_def *def = parse_case(a, c);
        sched_plan *p = def ? lower_checked(a, def, target) : NULL;
        for (int s = 0; p && s < 3; s++) {
            if (!cases[c].sets[s][0]) continue;
            /* the emulation runs every thread as a pthread: the small sets */
            if (emu_only && s == 2) continue;
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

/* Every CUDA attention kernel compiles with NVRTC for sm_80 and sm_90a. */
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
        for (int i = 0; p && i < p->nlaunches; i++) {
            const tile_kernel *k = p->launches[i].k;
            static const char *const archs[] = {"sm_80", "sm_90a"};
            for (int ai = 0; ai < 2; ai++) {
                rt_ptxas_report worst;
                int narms = 0;
                diag_reset(&d);
                tsl_status st = test_nvrtc_arms(p->m, k, archs[ai], &worst, &narms, &d);
                CHECK_MSG(st == TSL_OK, "%s %s: %s", k->name, archs[ai], sb_str(&d.msg));
                if (st == TSL_OK)
                    printf("    %s %s: %d registers, spills %d/%d, stack %d (%d arms)\n", k->name, archs[ai],
                           worst.registers, worst.spill_stores, worst.spill_loads, worst.stack_frame, narms);
            }
        }
        diag_free(&d);
        arena_free(a);
    }
}

/* sched.generic=1: the group lowers generically, one kernel per op. */
static void test_generic_switch(void)
{
    tsl_arena *a = arena_create();
    lang_def *def = parse_case(a, 0);
    tsl_diag d = {0};
    sched_options o = sched_options_defaults;
    CHECK(sched_options_parse("sched.generic=1", &o, &d) == TSL_OK);
    graph *g = def ? graph_build(a, def, &d) : NULL;
    sched_plan *p = g ? sched_lower_opt(a, g, TSL_TARGET_CPU, 0, &o, &d) : NULL;
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(count_attn(p), 0);
        CHECK_EQ_INT(p->nlaunches, 7);
        static const int64_t sz[5] = {2, 5, 7, 3, 4};
        test_compare_plan(a, def, p, sz, test_run_cpu, "cpu, generic");
    }
    diag_free(&d);
    arena_free(a);
}

/* sched.chains=0: the groups before the merge (a kernel or more
 * each, their intermediates stored), same answers. */
static void test_parts_fallback(void)
{
    for (size_t c = 0; c < TSL_COUNTOF(cases); c++) {
        tsl_arena *a = arena_create();
        lang_def *def = parse_case(a, c);
        tsl_diag d = {0};
        sched_options o = sched_options_defaults;
        CHECK(sched_options_parse("sched.chains=0", &o, &d) == TSL_OK);
        graph *g = def ? graph_build(a, def, &d) : NULL;
        for (int t = 0; g && t < 2; t++) {
            tsl_target target = t ? TSL_TARGET_CUDA : TSL_TARGET_CPU;
            sched_plan *p = sched_lower_opt(a, g, target, 80, &o, &d);
            CHECK(p != NULL);
            if (!p) continue;
            CHECK_EQ_INT(count_attn(p), 0);
            CHECK_MSG(g->ngroups == 1 && g->groups[0].nparts >= 2 && p->nlaunches >= g->groups[0].nparts,
                      "%s: %d launches", def->name, p->nlaunches);
            CHECK(tile_verify(p->m, NULL, &d) == TSL_OK);
            test_compare_plan(a, def, p, cases[c].sets[1], t ? test_run_tile_interp : test_run_cpu,
                              t ? "cuda plan of the parts, tile interpreter" : "cpu plan of the parts");
        }
        diag_free(&d);
        arena_free(a);
    }
}

TEST_SUITE(sched_attention) = {
    {"parts_fallback", test_parts_fallback},
    {"recognised", test_recognised},
    {"cpu_matches", test_cpu_matches},
    {"cuda_plan_interp", test_cuda_plan_interp},
    {"cuda_plan_emulated", test_cuda_plan_emulated},
    {"nvrtc", test_nvrtc},
    {"generic_switch", test_generic_switch},
    {0},
};
