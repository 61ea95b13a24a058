/* test_driver.c — the compile driver's pass list and dumps, the launch
 * plan as bytes (round trip; damaged blobs refused, never a crash), and the
 * executor running a plan read back from bytes against the interpreter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda.h"
#include "driver/driver.h"
#include "graph/graph.h"
#include "sched/sched.h"
#include "interp/interp.h"
#include "lang/lang.h"
#include "runtime/runtime.h"
#include "test.h"

static const char *const softmax_src =
    "def softmax(float(N,D) X) -> (Y) {\n"
    "  mx(n) max=! X(n,d)\n"
    "  e(n,d) = exp(X(n,d) - mx(n))\n"
    "  s(n) +=! e(n,d)\n"
    "  Y(n,d) = e(n,d) / s(n)\n"
    "}\n";

static const lang_def *parse_def(tsl_arena *a, const char *text)
{
    tsl_source src = {"t.tc", text};
    tsl_diag d = {0};
    lang_module *m = lang_parse_check(a, &src, &d);
    CHECK_MSG(m != NULL, "%s", sb_str(&d.msg));
    diag_free(&d);
    return m ? lang_module_def(m, 0) : NULL;
}

/* The runtime spells the variant macros as the CUDA generator reads them. */
static void test_variant_spelling(void)
{
    CHECK_EQ_STR(RT_CUDA_INDEX64, CG_CUDA_INDEX64);
    char buf[32];
    snprintf(buf, sizeof buf, RT_CUDA_BRANCH_FMT, 3, 1u);
    CHECK_EQ_STR(buf, "-DTSL_IF3=1");
}

static void test_stage_mask(void)
{
    const char *bad = NULL;
    size_t n = 0;
    CHECK_EQ_INT(drv_stage_mask("tile,source", &bad, &n), (1 << DRV_STAGE_SCHED) | (1 << DRV_STAGE_SOURCE));
    CHECK_EQ_INT(drv_stage_mask("all", &bad, &n), (1 << DRV_STAGE_COUNT) - 1);
    CHECK_EQ_INT(drv_stage_mask("tile,bogus,c", &bad, &n), -1);
    CHECK(bad && n == 5 && !strncmp(bad, "bogus", 5));
}

typedef struct seen {
    int order[16];
    int n;
    int source_has_entry;
} seen;

static void record(void *ctx, drv_stage s, const char *text)
{
    seen *v = ctx;
    if (v->n < 16) v->order[v->n++] = s;
    if (s == DRV_STAGE_SOURCE) v->source_has_entry = strstr(text, "tsl_kernel_softmax") != NULL;
}

/* Every stage is dumped once, in pass order; stop_after stops there. */
static void test_dumps_in_order(void)
{
    tsl_arena *a = arena_create();
    const lang_def *def = parse_def(a, softmax_src);
    seen v = {0};
    drv_options o = {.dump = (1u << DRV_STAGE_COUNT) - 1, .dump_fn = record, .dump_ctx = &v};
    drv_executable *x = NULL;
    tsl_diag d = {0};
    CHECK_MSG(def && drv_compile(def, &drv_target_cpu, NULL, &o, &x, &d) == TSL_OK, "%s", sb_str(&d.msg));
    CHECK_EQ_INT(v.n, DRV_STAGE_COUNT);
    for (int i = 0; i < v.n; i++) CHECK_EQ_INT(v.order[i], i);
    CHECK(v.source_has_entry);
    CHECK(x && x->plan->nlaunches >= 1 && x->plan->kernels[0].nbins == 0); /* no arch: nothing compiled */
    drv_executable_free(x);
    x = NULL;
    v.n = 0;
    o.stop_after = DRV_STAGE_SCHED + 1;
    CHECK(def && drv_compile(def, &drv_target_cpu, NULL, &o, &x, &d) == TSL_OK);
    CHECK_EQ_INT(v.n, 2); /* graph, tile */
    drv_executable_free(x);
    diag_free(&d);
    arena_free(a);
}

/* Plan written, read back and written again: the read plan (NULL when the
 * read fails; CHECKed, with what), which must write the same bytes. */
static rt_plan *plan_reread(const rt_plan *plan, const char *what)
{
    strbuf b1 = {0}, b2 = {0};
    tsl_diag d = {0};
    rt_plan *p = NULL;
    rt_plan_write(&b1, plan);
    CHECK_MSG(rt_plan_read(b1.buf, b1.len, &p, &d) == TSL_OK, "%s: %s", what, sb_str(&d.msg));
    if (p) rt_plan_write(&b2, p);
    CHECK_MSG(p && b1.len == b2.len && !memcmp(b1.buf, b2.buf, b1.len), "%s: other bytes the second time", what);
    sb_free(&b1);
    sb_free(&b2);
    diag_free(&d);
    return p;
}

/* Compile softmax for this CPU, write the plan, read it back, run the read
 * plan on random rows against the interpreter. */
static void test_plan_round_trip_runs(void)
{
    tsl_arena *a = arena_create();
    const lang_def *def = parse_def(a, softmax_src);
    drv_executable *x = NULL;
    tsl_diag d = {0};
    tsl_status st = def ? drv_compile(def, &drv_target_cpu, rt_target_cpu.arch(NULL), NULL, &x, &d) : TSL_ERR_INTERNAL;
    CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
    if (st) {
        diag_free(&d);
        arena_free(a);
        return;
    }
    rt_plan *p = plan_reread(x->plan, "softmax");
    int64_t sizes[][2] = {{1, 1}, {7, 1000}, {3, test_rand_int(1025, 3000)}};
    rt_exec *e = NULL;
    CHECK(p && rt_exec_create(p, &rt_target_cpu, NULL, &e, &d) == TSL_OK);
    for (size_t k = 0; e && k < TSL_COUNTOF(sizes); k++) {
        lang_bound *bd = NULL;
        CHECK_EQ_INT(lang_bind(a, def, sizes[k], &bd, &d), TSL_OK);
        int64_t n = sizes[k][0] * sizes[k][1];
        float *X = malloc(sizeof *X * (size_t)n), *Y = malloc(sizeof *Y * (size_t)n), *R = malloc(sizeof *R * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            X[i] = (float)test_rand_double(-3, 3);
            Y[i] = R[i] = NAN;
        }
        interp_tensor v[8], w[8];
        memset(v, 0, sizeof v);
        for (int i = 0; i < def->ntensors; i++) {
            v[i].dtype = def->tensors[i]->dtype;
            v[i].rank = def->tensors[i]->rank;
            for (int j = 0; j < v[i].rank; j++) v[i].shape[j] = bd->shapes[i][j];
            v[i].stride[v[i].rank - 1] = 1;
            for (int j = v[i].rank - 2; j >= 0; j--) v[i].stride[j] = v[i].stride[j + 1] * v[i].shape[j + 1];
        }
        memcpy(w, v, sizeof v);
        v[0].base = w[0].base = (char *)X;
        int y = 1; /* Y is the def's second tensor */
        CHECK_EQ_STR(def->tensors[y]->name, "Y");
        v[y].base = (char *)Y;
        w[y].base = (char *)R;
        CHECK_MSG(drv_run(e, bd, v, &d) == TSL_OK, "%s", sb_str(&d.msg));
        CHECK(interp_run(bd, w, &d) == TSL_OK);
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 3; i++)
            if (!(fabsf(Y[i] - R[i]) <= 1e-5f * (1 + fabsf(R[i])))) {
                bad++;
                CHECK_MSG(0, "softmax %lldx%lld [%lld]: %g vs %g", (long long)sizes[k][0], (long long)sizes[k][1],
                          (long long)i, Y[i], R[i]);
            }
        free(X);
        free(Y);
        free(R);
    }
    rt_exec_free(e);
    rt_plan_free(p);
    drv_executable_free(x);
    diag_free(&d);
    arena_free(a);
}

/* Truncations and flipped bytes: refused with TSL_ERR_IO or read into a
 * plan whose indices the executor may trust; never a crash (ASan build). */
static void test_plan_damaged(void)
{
    tsl_arena *a = arena_create();
    const lang_def *def = parse_def(a, softmax_src);
    drv_executable *x = NULL;
    tsl_diag d = {0};
    CHECK(def && drv_compile(def, &drv_target_cuda, NULL, NULL, &x, &d) == TSL_OK);
    strbuf b = {0};
    if (x) rt_plan_write(&b, x->plan);
    int refused = 0;
    for (size_t cut = 0; x && cut < b.len; cut += 1 + cut / 8) {
        rt_plan *p = NULL;
        diag_reset(&d);
        tsl_status st = rt_plan_read(b.buf, cut, &p, &d);
        CHECK(st == TSL_ERR_IO && !p && strstr(sb_str(&d.msg), "damaged"));
        refused += st == TSL_ERR_IO;
    }
    char *copy = x ? malloc(b.len) : NULL;
    for (int i = 0; copy && i < 2000; i++) {
        memcpy(copy, b.buf, b.len);
        int flips = (int)test_rand_int(1, 4);
        for (int f = 0; f < flips; f++) copy[test_rand_int(0, (long)b.len - 1)] ^= (char)(1 << test_rand_int(0, 7));
        rt_plan *p = NULL;
        diag_reset(&d);
        tsl_status st = rt_plan_read(copy, b.len, &p, &d);
        CHECK(st == TSL_OK || st == TSL_ERR_IO);
        if (p) {
            strbuf t = {0};
            rt_plan_describe(&t, p); /* walks every index */
            sb_free(&t);
        }
        rt_plan_free(p);
    }
    CHECK(refused > 10);
    free(copy);
    sb_free(&b);
    drv_executable_free(x);
    diag_free(&d);
    arena_free(a);
}

/* The executable (options, arch, tile text, plan with binaries) as bytes
 * and back, its CPU threads with it (the tuner times executables the cache
 * serves: cpu.threads=4 ran on every core there, 1.00 ms, and 2.67 ms in
 * the bench after); damaged bytes refused. */
static void test_executable_round_trip(void)
{
    tsl_arena *a = arena_create();
    const lang_def *def = parse_def(a, softmax_src);
    drv_executable *x = NULL, *y = NULL;
    tsl_diag d = {0};
    sched_options o = sched_options_defaults;
    int threads = (int)test_rand_int(2, 7);
    char text[32];
    snprintf(text, sizeof text, "cpu.threads=%d", threads);
    CHECK(sched_options_parse(text, &o, &d) == TSL_OK);
    drv_options dopt = {.sched = &o};
    CHECK(def && drv_compile(def, &drv_target_cpu, rt_target_cpu.arch(NULL), &dopt, &x, &d) == TSL_OK);
    CHECK(x && x->threads == threads);
    strbuf b1 = {0}, b2 = {0};
    if (x) drv_executable_write(&b1, x);
    CHECK(x && drv_executable_read(b1.buf, b1.len, &y, &d) == TSL_OK);
    if (y) {
        drv_executable_write(&b2, y);
        CHECK(b1.len == b2.len && !memcmp(b1.buf, b2.buf, b1.len));
        CHECK_EQ_STR(y->arch, x->arch);
        CHECK_EQ_STR(y->tile, x->tile);
        CHECK(y->target == TSL_TARGET_CPU && y->plan->kernels[0].nbins == 1);
        CHECK_EQ_INT(y->threads, threads);
    }
    drv_executable_free(y);
    y = NULL;
    for (size_t cut = 0; x && cut < b1.len; cut += 1 + cut / 4) {
        CHECK_EQ_INT(drv_executable_read(b1.buf, cut, &y, &d), TSL_ERR_IO);
        CHECK(y == NULL);
    }
    sb_free(&b1);
    sb_free(&b2);
    drv_executable_free(x);
    diag_free(&d);
    arena_free(a);
}

/* The sm_90a GEMM plan's launches are guarded by the sizes: the plan's
 * guard expressions agree with the scheduler's on random sizes, exactly
 * one plan runs for any sizes (one launch, or the split-K pair), its tensor maps survive the bytes. */
static void test_guards_and_tmaps(void)
{
    tsl_arena *a = arena_create();
    const lang_def *def = parse_def(a, "def mm(float16(M,K) A, float16(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n");
    graph *g = def ? graph_build(a, def, NULL) : NULL;
    sched_plan *sp = g ? sched_lower_sm(a, g, TSL_TARGET_CUDA, 90, NULL) : NULL;
    drv_executable *x = NULL;
    tsl_diag d = {0};
    drv_options o = {.no_compile = 1};
    CHECK_MSG(sp && drv_compile(def, &drv_target_cuda, "sm_90a", &o, &x, &d) == TSL_OK, "%s", sb_str(&d.msg));
    if (x) {
        strbuf b = {0};
        rt_plan *p = NULL;
        rt_plan_write(&b, x->plan);
        CHECK(rt_plan_read(b.buf, b.len, &p, &d) == TSL_OK);
        int guarded = 0, maps = 0;
        for (int li = 0; p && li < p->nlaunches; li++) {
            guarded += p->launches[li].when.n > 0;
            maps += p->kernels[p->launches[li].kernel].ntmaps;
        }
        CHECK(p && p->nlaunches == sp->nlaunches && guarded >= 2 && maps >= 2);
        for (int t = 0; p && t < 500; t++) {
            int64_t sz[3];
            for (int i = 0; i < 3; i++) sz[i] = test_rand_int(1, 3) == 1 ? test_rand_int(1, 300) : 8 * test_rand_int(1, 40);
            int runs = 0;
            for (int li = 0; li < p->nlaunches; li++) {
                int ok = 1;
                const rt_expr *w = &p->launches[li].when;
                int holds = w->n ? rt_expr_eval(w, sz, 3, &ok) != 0 : 1;
                CHECK(ok && holds == sched_guard_holds(&sp->launches[li].guard, sz));
                /* a split-K pair (M <= 64) is one plan of two launches */
                runs += holds && !strstr(sp->launches[li].k->name, "_splitk_sum");
            }
            CHECK_EQ_INT(runs, 1);
        }
        rt_plan_free(p);
        sb_free(&b);
    }
    drv_executable_free(x);
    diag_free(&d);
    arena_free(a);
}

/* The quantized matmul's CUDA plans pass W as bytes; for weights of 8 bits
 * the bytes are the tensor itself. Every weight dtype's plan, on both
 * architectures, reads back from its bytes and writes the same bytes (the
 * cache once called the uint8 plan damaged on every read and rebuilt it);
 * the same plan with bytes over a 16-bit tensor is refused. */
static void test_qmatmul_plans_read_back(void)
{
    static const char *const wts[] = {"uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "uint8",
                                      "int2", "int4", "int8", "float4e2m1", "float6e3m2", "float8e4m3"};
    static const char *const arch[] = {"sm_80", "sm_90a"};
    for (size_t w = 0; w < TSL_COUNTOF(wts); w++)
        for (size_t ai = 0; ai < TSL_COUNTOF(arch); ai++) {
            char src[256];
            snprintf(src, sizeof src,
                     "def qmm(float16(M,K) X, %s(K,N) W, float16(G,N) S) -> (Y) {\n"
                     "  Y(m,n) +=! float16(W(k,n)) * S(k / 128, n) * X(m,k)\n}\n",
                     wts[w]);
            tsl_arena *a = arena_create();
            const lang_def *def = parse_def(a, src);
            drv_executable *x = NULL;
            tsl_diag d = {0};
            drv_options o = {.no_compile = 1};
            CHECK_MSG(def && drv_compile(def, &drv_target_cuda, arch[ai], &o, &x, &d) == TSL_OK, "%s %s: %s", wts[w],
                      arch[ai], sb_str(&d.msg));
            char what[64];
            snprintf(what, sizeof what, "%s %s", wts[w], arch[ai]);
            if (x) rt_plan_free(plan_reread(x->plan, what));
            /* bytes over a 16-bit tensor (X, S or Y) is damage */
            rt_plan *pl = x ? x->plan : NULL;
            int marked = 0;
            for (int li = 0; pl && li < pl->nlaunches && !marked; li++)
                for (int j = 0; j < pl->kernels[pl->launches[li].kernel].nparams && !marked; j++) {
                    rt_arg *ar = &pl->launches[li].args[j];
                    if (ar->kind == RT_ARG_TENSOR && !ar->flat && !ar->bytes &&
                        tsl_dtype_bits((tsl_dtype)pl->tensors[ar->index].dtype) == 16)
                        ar->bytes = marked = 1;
                }
            if (marked) {
                strbuf b = {0};
                rt_plan *p = NULL;
                rt_plan_write(&b, pl);
                CHECK_MSG(rt_plan_read(b.buf, b.len, &p, &d) == TSL_ERR_IO, "%s: bytes over a 16-bit tensor read", what);
                rt_plan_free(p);
                sb_free(&b);
            }
            CHECK_MSG(marked, "%s: no 16-bit tensor argument", what);
            drv_executable_free(x);
            diag_free(&d);
            arena_free(a);
        }
}

/* Guards with unless groups (sched.h): a 3-layer f16 MLP on sm_90a is a
 * chain kernel (when H <= 256) beside the layers' wgmma / mma.sync plans,
 * each run unless the chain's guard holds. The plan's guard expressions
 * agree with the scheduler's on random sizes, and exactly one plan runs:
 * the chain, or one per layer. */
static void test_guards_unless(void)
{
    tsl_arena *a = arena_create();
    const lang_def *def = parse_def(a, "def mlp(float16(B,H) X, float16(H,H) W1, float16(H,H) W2, float16(H,H) W3) -> (Y) {\n"
                                       "  h1(b,o) +=! X(b,i) * W1(o,i)\n  h2(b,o) +=! h1(b,i) * W2(o,i)\n"
                                       "  Y(b,o) +=! h2(b,i) * W3(o,i)\n}\n");
    graph *g = def ? graph_build(a, def, NULL) : NULL;
    sched_plan *sp = g ? sched_lower_sm(a, g, TSL_TARGET_CUDA, 90, NULL) : NULL;
    drv_executable *x = NULL;
    tsl_diag d = {0};
    drv_options o = {.no_compile = 1};
    CHECK_MSG(sp && drv_compile(def, &drv_target_cuda, "sm_90a", &o, &x, &d) == TSL_OK, "%s", sb_str(&d.msg));
    if (x) {
        rt_plan *p = x->plan;
        int unless = 0;
        for (int li = 0; li < sp->nlaunches; li++) unless += sched_guard_nunless(&sp->launches[li].guard) > 0;
        CHECK(p->nlaunches == sp->nlaunches && strstr(sp->launches[0].k->name, "_gemmchain") && unless == sp->nlaunches - 1);
        for (int t = 0; t < 500; t++) {
            int64_t sz[2];
            for (int i = 0; i < 2; i++) sz[i] = test_rand_int(1, 3) == 1 ? test_rand_int(1, 300) : 8 * test_rand_int(1, 40);
            int chain = 0, parts = 0;
            for (int li = 0; li < p->nlaunches; li++) {
                int ok = 1;
                const rt_expr *w = &p->launches[li].when;
                int holds = w->n ? rt_expr_eval(w, sz, 2, &ok) != 0 : 1;
                CHECK(ok && holds == sched_guard_holds(&sp->launches[li].guard, sz));
                if (li == 0) chain = holds;
                else parts += holds && !strstr(sp->launches[li].k->name, "_splitk_sum");
            }
            CHECK_MSG(chain == (sz[1] <= 256) && parts == (chain ? 0 : 3), "B=%lld H=%lld: chain %d, %d part plans",
                      (long long)sz[0], (long long)sz[1], chain, parts);
        }
    }
    drv_executable_free(x);
    diag_free(&d);
    arena_free(a);
}

TEST_SUITE(driver) = {
    {"guards_and_tmaps", test_guards_and_tmaps},
    {"guards_unless", test_guards_unless},
    {"qmatmul_plans_read_back", test_qmatmul_plans_read_back},
    {"executable_round_trip", test_executable_round_trip},
    {"variant_spelling", test_variant_spelling},
    {"stage_mask", test_stage_mask},
    {"dumps_in_order", test_dumps_in_order},
    {"plan_round_trip_runs", test_plan_round_trip_runs},
    {"plan_damaged", test_plan_damaged},
    {0, 0},
};
