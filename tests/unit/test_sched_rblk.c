/* test_sched_rblk.c — the CPU plan of two-operand reductions (lower.c
 * lower_rblk, c_emit_rblk.c): convolutions and their relatives in f32 must
 * take the register-blocked plan (the generated C has the micro-kernel),
 * other dtypes and shapes must not, and every one must give the TC
 * interpreter's answer through the tile interpreter and the generated C
 * on fresh random inputs (never zeros), outputs poisoned with NaN, sizes
 * 1, primes, non-multiples of the 16 x 32 tile and zero-size dims. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "sched/sched.h"
#include "sched_runners.h"
#include "test.h"
#include "tessel.h"
#include "tile/interp.h"

typedef struct rb_case {
    const char *src;
    int rblk;            /* the plan must (1) or must not (0) be the register-blocked one */
    int64_t sets[6][8];  /* size slots in declaration order; all 0: unused */
} rb_case;

static const rb_case cases[] = {
    {"def conv2d(float(N,C,H,W) I, float(K,C,R,S) Wt) -> (O) {\n  O(n,k,h,w) +=! I(n,c,h + r,w + s) * Wt(k,c,r,s)\n}\n",
     1,
     {{1, 1, 1, 1, 1, 1, 1}, {2, 3, 11, 13, 5, 3, 3}, {3, 7, 13, 41, 17, 2, 5}, {2, 5, 6, 70, 33, 3, 3},
      {2, 0, 5, 5, 3, 3, 3}, {0, 2, 5, 5, 3, 3, 3}}},
    {"def sconv(float(N,C,H,W) I, float(K,C,R,S) Wt) -> (O) {\n  O(n,k,h,w) +=! Wt(k,c,r,s) * I(n,c,2 * h + r,w + s)\n}\n",
     1,
     {{1, 1, 1, 1, 1, 1, 1}, {2, 3, 11, 37, 19, 3, 3}, {1, 2, 9, 5, 3, 2, 5}}},
    {"def conv1d(float(N,C,W) I, float(K,C,S) F) -> (O) {\n  O(n,k,w) +=! I(n,c,w + s) * F(k,c,s)\n}\n",
     1,
     {{1, 1, 1, 1, 1}, {3, 5, 67, 31, 7}, {2, 4, 1, 3, 1}, {2, 3, 40, 0, 2}}},
    {"def conv1d(float(N,C,W) I, float(K,C,S) F) -> (O) {\n  O(n,k,w) max=! I(n,c,w + s) * F(k,c,s)\n}\n",
     0,
     {{3, 5, 67, 31, 7}}},
    {"def conv1d(double(N,C,W) I, double(K,C,S) F) -> (O) {\n  O(n,k,w) +=! I(n,c,w + s) * F(k,c,s)\n}\n",
     0,
     {{3, 5, 67, 31, 7}}},
    {"def conv1d(half(N,C,W) I, half(K,C,S) F) -> (O) {\n  O(n,k,w) +=! I(n,c,w + s) * F(k,c,s)\n}\n",
     0,
     {{3, 5, 37, 17, 3}}},
    {"def sconv(float(N,C,W) I, float(K,C,S) F) -> (O) {\n  O(n,k,w) +=! I(n,c,2 * w + s) * F(k,c,s)\n}\n",
     0,
     {{3, 5, 67, 31, 7}}},
};

static void each_case(int interp)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tsl_arena *a = arena_create();
        tsl_source src = {"rblk.tc", cases[c].src};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &src, &d);
        CHECK_MSG(mod != NULL && mod->ndefs == 1, "case %zu: %s", c, sb_str(&d.msg));
        graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
        sched_plan *p = g ? sched_lower_for(a, g, TSL_TARGET_CPU, &d) : NULL;
        CHECK_MSG(p != NULL, "case %zu: lowering failed: %s", c, sb_str(&d.msg));
        if (p) {
            char *t = tile_print(p->m);
            CHECK_MSG(tile_verify(p->m, NULL, &d) == TSL_OK, "case %zu: does not verify: %s\n%s", c, sb_str(&d.msg), t);
            int is_rb = strstr(t, "bb = broadcast b") != NULL;
            CHECK_MSG(is_rb == cases[c].rblk, "case %zu: register-blocked plan %d, expected %d\n%s", c, is_rb,
                      cases[c].rblk, t);
            if (is_rb) {
                strbuf cs = {0};
                tsl_diag d2 = {0};
                CHECK(cg_c_emit(p->m, p->launches[0].k, &cs, &d2) == TSL_OK);
                CHECK_MSG(strstr(sb_str(&cs), "tsl_rbk") != NULL, "case %zu: no micro-kernel in the C", c);
                sb_free(&cs);
                diag_free(&d2);
            }
            free(t);
        }
        diag_free(&d);
        for (int s = 0; p && s < 6; s++) {
            if (!cases[c].sets[s][0] && !cases[c].sets[s][1]) continue;
            if (interp) test_compare_plan(a, mod->defs[0], p, cases[c].sets[s], test_run_tile_interp, "tile interpreter");
            else test_compare_plan(a, mod->defs[0], p, cases[c].sets[s], test_run_cpu, "cpu");
        }
        arena_free(a);
    }
}

static void test_tile_interp_matches(void) { each_case(1); }
static void test_cpu_matches(void) { each_case(0); }

TEST_SUITE(sched_rblk) = {
    {"tile_interp_matches", test_tile_interp_matches},
    {"cpu_matches", test_cpu_matches},
    {0},
};
