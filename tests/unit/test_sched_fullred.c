/* test_sched_fullred.c — full reductions (a rank-0 LHS: sums, norms,
 * max/min to a scalar) run as two launches, the box spread over many
 * blocks (sched/lower.c lower_full, docs/sched.md "Full reductions").
 *
 * Every program on the CPU plan (cg_c_run) and the CUDA plan (the tile
 * interpreter with blocks shuffled, and the CUDA generator in the host
 * emulation), against the interpreter: float sums, sums of squares,
 * bodies with coordinates and gathers, max/min, `+=` onto a value,
 * every float dtype and integers (exact); sizes 1, primes, one past the
 * lane count, past one block. And the accuracy: a float32 sum of 2^22 + 3
 * values in [0, 1) is within 1e-7 of the exact sum (NumPy's pairwise sum
 * is at about 2e-8 there; one lane looping in f32 was at 1e-4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sched_runners.h"
#include "../test.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "runtime/runtime.h"
#include "sched/sched.h"

static const char fr_src[] =
    "def sum(float(N) X) -> (S) { S() +=! X(i) }\n"
    "def sumsq2(float(M,N) X) -> (S) { S() +=! X(i,j) * X(i,j) }\n"
    "def norm(float(N) X) -> (R) { S() +=! X(i) * X(i)\n  R() = sqrt(S()) }\n"
    "def dot(float(N) X, float(N) Y) -> (S) { S() +=! X(i) * Y(i) }\n"
    "def mx(float(N) X) -> (S) { S() max=! X(i) }\n"
    "def mxneg(float(N) X) -> (S) { S() max=! X(i) - 2.0 }\n"
    "def mn(float(M,N) X) -> (S) { S() min=! X(j,i) - 1.5 }\n"
    "def upd(float(N) X, float() S) -> (S) { S() += exp(X(i)) }\n"
    "def updmax(float(N) X, float() S) -> (S) { S() max= X(i) * 3.0 }\n"
    "def coords(float(M,N) X) -> (S) { S() +=! (i + j) % 3 == 0 ? X(i,j) : 0.5 }\n"
    "def win(float(N) X) -> (S) { S() +=! X(i + k) where k in 0:3 }\n"
    "def gath(float(N) X, int32(M) I) -> (S) { S() max=! X(I(j)) }\n"
    "def h16(float16(N) X) -> (S) { S() +=! X(i) }\n"
    "def b16(bfloat16(M,N) X) -> (S) { S() max=! X(i,j) }\n"
    "def f64(float64(N) X) -> (S) { S() +=! X(i) * 0.5 }\n"
    "def i32(int32(N) X) -> (S) { S() +=! X(i) }\n"
    "def i8max(int8(M,N) X) -> (S) { S() max=! X(i,j) }\n"
    "def u64min(uint64(N) X) -> (S) { S() min=! X(i) }\n"
    "def i64sum(int64(N) X) -> (S) { S() +=! X(i) * 1000003 }\n"
    "def wide(int8(N) X) -> (S) { S() +=! int64(X(i)) }\n";

static sched_plan *fr_plan(tsl_arena *a, const lang_def *def, tsl_target t)
{
    tsl_diag d = {0};
    graph *g = graph_build(a, def, &d);
    sched_plan *p = g ? sched_lower_for(a, g, t, &d) : NULL;
    CHECK_MSG(p != NULL, "%s: %s", def->name, sb_str(&d.msg));
    diag_free(&d);
    return p;
}

/* Floats in [0.1, 1]: sums without cancellation, so that the result's
 * own size is the scale of its error (the bodies make negative values
 * where they matter: mn, mxneg). */
static double fr_pos(tsl_dtype t, void *ctx)
{
    (void)t;
    (void)ctx;
    return test_rand_double(0.1, 1.0);
}

static int64_t fr_index(tsl_dtype t, void *ctx)
{
    (void)t;
    return test_rand_int(0, *(int64_t *)ctx - 1);
}

/* Sizes: M, N (other symbols 3); gathers index [0, N). */
static void fr_run(const char *which, tsl_target target, const test_runner *fn, const char *what, int64_t M, int64_t N)
{
    tsl_arena *a = arena_create();
    tsl_source ts = {"fullred.tc", fr_src};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &ts, &d);
    CHECK_MSG(mod != NULL, "%s", sb_str(&d.msg));
    for (int di = 0; mod && di < mod->ndefs; di++) {
        const lang_def *def = mod->defs[di];
        if (which && strcmp(which, def->name)) continue;
        sched_plan *p = fr_plan(a, def, target);
        if (!p) continue;
        /* the statement with the rank-0 LHS is two launches: _part, then S */
        int part = 0;
        for (int l = 0; l < p->nlaunches; l++) part += strstr(p->launches[l].k->name, "_part") != NULL;
        CHECK_MSG(part == 1 && p->nscratch == 1, "%s: %d partial launches, %d scratch buffers", def->name, part,
                  p->nscratch);
        int64_t sz[8];
        for (int s = 0; s < def->nsizes && s < 8; s++)
            sz[s] = !strcmp(def->sizes[s], "M") ? M : !strcmp(def->sizes[s], "N") ? N : 3;
        if (!strcmp(def->name, "win") && N < 3) continue; /* (its range would be empty) */
        test_draw dr = {.float_value = fr_pos};
        int64_t nidx = N;
        if (!strcmp(def->name, "gath")) dr.int_value = fr_index, dr.ctx = &nidx;
        test_compare_plan_draw(a, def, p, sz, fn, what, &dr);
    }
    diag_free(&d);
    arena_free(a);
}

static void test_cpu(void)
{
    /* one lane step, one past it, past one block (65536 points), past 256 blocks' worth */
    static const int64_t n[][2] = {{1, 1}, {3, 7}, {1, 2049}, {7, 2047}, {5, 70001}, {2, 200003}};
    for (size_t k = 0; k < TSL_COUNTOF(n); k++) fr_run(NULL, TSL_TARGET_CPU, test_run_cpu, "cpu", n[k][0], n[k][1]);
}

static void test_gpu_plan_interp(void)
{
    /* the GPU plan's steps are 4096 lanes, grid-stride over the blocks */
    static const int64_t n[][2] = {{1, 1}, {3, 4097}, {2, 13001}};
    for (size_t k = 0; k < TSL_COUNTOF(n); k++)
        fr_run(NULL, TSL_TARGET_CUDA, test_run_tile_interp, "gpu plan, tile interpreter", n[k][0], n[k][1]);
}

static void test_gpu_plan_emulated(void)
{
    if (!test_have_cxx()) return;
    static const char *const which[] = {"sum", "coords", "upd", "b16", "u64min", "i64sum"};
    for (size_t w = 0; w < TSL_COUNTOF(which); w++) {
        fr_run(which[w], TSL_TARGET_CUDA, test_run_cuda_emu, "gpu plan, cuda emulated", 1, 1);
        fr_run(which[w], TSL_TARGET_CUDA, test_run_cuda_emu, "gpu plan, cuda emulated", 3, 9001);
    }
}

/* NVRTC compiles the GPU plan for Hopper without spills. */
static void test_gpu_plan_nvrtc(void)
{
    tsl_diag d = {0};
    if (rt_cuda_nvrtc_available(&d) != TSL_OK) {
        printf("    skipped: no NVRTC (%s)\n", sb_str(&d.msg));
        diag_free(&d);
        return;
    }
    tsl_arena *a = arena_create();
    tsl_source ts = {"fullred.tc", fr_src};
    lang_module *mod = lang_parse_check(a, &ts, &d);
    static const char *const which[] = {"sum", "sumsq2", "h16", "i64sum"};
    for (int di = 0; mod && di < mod->ndefs; di++) {
        int take = 0;
        for (size_t w = 0; w < TSL_COUNTOF(which); w++) take |= !strcmp(which[w], mod->defs[di]->name);
        if (!take) continue;
        sched_plan *p = fr_plan(a, mod->defs[di], TSL_TARGET_CUDA);
        for (int l = 0; p && l < p->nlaunches; l++) {
            rt_ptxas_report worst;
            int narms = 0;
            tsl_status st = test_nvrtc_arms(p->m, p->launches[l].k, "sm_90a", &worst, &narms, &d);
            CHECK_MSG(st == TSL_OK, "%s: %s", p->launches[l].k->name, sb_str(&d.msg));
            CHECK_MSG(worst.spill_stores == 0 && worst.stack_frame == 0, "%s: %d spilled bytes, %d stack",
                      p->launches[l].k->name, worst.spill_stores, worst.stack_frame);
            printf("    %s: %d registers\n", p->launches[l].k->name, worst.registers);
            diag_reset(&d);
        }
    }
    diag_free(&d);
    arena_free(a);
}

static double fr_unit(tsl_dtype t, void *ctx)
{
    (void)t;
    (void)ctx;
    return test_rand_double(0, 1);
}

/* A float32 sum of 2^22 + 3 values in [0, 1): the result within 1e-7 of
 * the exact sum (compensated, in double), on the CPU plan. */
static void test_accuracy(void)
{
    tsl_arena *a = arena_create();
    tsl_source ts = {"acc.tc", "def sum(float(N) X) -> (S) { S() +=! X(i) }\n"};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &ts, &d);
    sched_plan *p = mod ? fr_plan(a, mod->defs[0], TSL_TARGET_CPU) : NULL;
    int64_t n = (INT64_C(1) << 22) + 3;
    float *x = malloc(sizeof *x * (size_t)n);
    float s = NAN;
    double exact = 0, comp = 0;
    if (p && x) {
        for (int64_t i = 0; i < n; i++) {
            x[i] = (float)fr_unit(TSL_DTYPE_F32, NULL);
            double y = (double)x[i] - comp, t = exact + y; /* Kahan in double: exact enough here */
            comp = (t - exact) - y;
            exact = t;
        }
        lang_bound *b = NULL;
        CHECK(lang_bind(a, mod->defs[0], &n, &b, &d) == TSL_OK);
        DLTensor tx = {0}, ts0 = {0};
        tx.data = x, tx.device.device_type = kDLCPU, tx.ndim = 1, tx.dtype = tsl_dtype_to_dlpack(TSL_DTYPE_F32);
        tx.shape = &n;
        ts0.data = &s, ts0.device.device_type = kDLCPU, ts0.ndim = 0, ts0.dtype = tx.dtype;
        DLTensor *t[4] = {NULL, NULL, NULL, NULL};
        for (int i = 0; i < mod->defs[0]->ntensors; i++)
            t[i] = !strcmp(mod->defs[0]->tensors[i]->name, "X") ? &tx : &ts0;
        double sc[4] = {0};
        CHECK_MSG(b && test_plan_run(p, b, t, sc, test_run_cpu, &d) == TSL_OK, "%s", sb_str(&d.msg));
        double rel = fabs((double)s - exact) / exact;
        printf("    float32 sum of %lld values in [0, 1): relative error %.2g\n", (long long)n, rel);
        CHECK_MSG(rel < 1e-7, "relative error %.3g (sum %.9g, exact %.9g)", rel, (double)s, exact);
    }
    free(x);
    diag_free(&d);
    arena_free(a);
}

TEST_SUITE(sched_fullred) = {
    {"cpu", test_cpu},
    {"gpu_plan_interp", test_gpu_plan_interp},
    {"gpu_plan_emulated", test_gpu_plan_emulated},
    {"gpu_plan_nvrtc", test_gpu_plan_nvrtc},
    {"accuracy", test_accuracy},
    {0},
};
