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

static double tolerance(tsl_dtype t)
{
    return t == TSL_DTYPE_F16 ? 2e-2 : t == TSL_DTYPE_BF16 ? 5e-2 : 2e-4;
}

/* Run def on sizes sz with the reference interpreter and the plan through
 * fn; compare every output. */
static void compare_run(tsl_arena *a, const lang_def *def, const sched_plan *p, const int64_t *sz,
                        sched_kernel_fn fn, const char *what)
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
    void **ref = arena_alloc(a, sizeof *ref * (size_t)(n + 1));
    void **got = arena_alloc(a, sizeof *got * (size_t)(n + 1));
    DLTensor **dls = arena_alloc(a, sizeof *dls * (size_t)(n + 1));
    DLTensor *dlv = arena_alloc(a, sizeof *dlv * (size_t)(n + 1));
    double *scal = arena_alloc(a, sizeof *scal * (size_t)(n + 1));
    interp_tensor *views = arena_alloc(a, sizeof *views * (size_t)(n + 1));
    int64_t *cnt = arena_alloc(a, sizeof *cnt * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
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
        for (int64_t e = 0; e < cnt[i]; e++) {
            double v = (t->flags & LANG_TENSOR_INPUT) ? test_rand_double(-1.0, 1.0) : NAN;
            dtype_store(t->dtype, (char *)ref[i] + (size_t)e * tsl_dtype_size(t->dtype), v);
        }
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
    st = interp_run(b, views, &d);
    CHECK_MSG(st == TSL_OK, "%s: reference run failed: %s", def->name, sb_str(&d.msg));
    diag_reset(&d);
    tsl_status st2 = st ? st : sched_run(p, b, dls, scal, fn, NULL, &d);
    CHECK_MSG(st2 == TSL_OK, "%s (%s): run failed: %s", def->name, what, sb_str(&d.msg));
    diag_free(&d);
    if (st || st2) return;
    for (int i = 0; i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (!(t->flags & LANG_TENSOR_OUTPUT)) continue;
        double tol = tolerance(t->dtype);
        int bad = 0;
        for (int64_t e = 0; e < cnt[i] && bad < 3; e++) {
            double x = dtype_load(t->dtype, (char *)ref[i] + (size_t)e * tsl_dtype_size(t->dtype));
            double y = dtype_load(t->dtype, (char *)got[i] + (size_t)e * tsl_dtype_size(t->dtype));
            int ok = !isnan(y) && fabs(x - y) <= tol * (1.0 + fabs(x));
            if (!ok) bad++;
            CHECK_MSG(ok, "%s (%s, sizes %lld %lld %lld): %s[%lld] = %.9g, reference %.9g", def->name, what,
                      (long long)sz[0], (long long)sz[1], (long long)sz[2], t->name, (long long)e, y, x);
        }
    }
}

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
            if (interp) compare_run(a, mod->defs[0], p, cases[c].sets[s], test_run_tile_interp, "tile interpreter");
            else compare_run(a, mod->defs[0], p, cases[c].sets[s], test_run_cpu, "cpu");
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
