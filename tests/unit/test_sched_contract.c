/* test_sched_contract.c — the contraction strategy (src/sched/contract.c):
 * GEMM-shaped groups (matmul, transposed A or B, batched, fcrelu, MLP
 * layers, sgemm with alpha/beta, attention's QK^T with its scale) in f32,
 * f16 and bf16 must be lowered to one `*_contract` kernel per group, the
 * module must verify and round-trip, and the TILE INTERPRETER and the CPU
 * target (generated C) must give the TC interpreter's answer on fresh
 * random inputs, outputs poisoned with NaN, sizes 1, primes and
 * non-multiples of every tile (67x45x40, 129x257x33); the f32 CUDA plan
 * also through the CUDA generator's host emulation. Shapes the strategy
 * does not take (conv) must fall back to the generic strategy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/cuda.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "sched/sched.h"
#include "sched_runners.h"
#include "test.h"
#include "tessel.h"
#include "tile/interp.h"

/* One program and the size sets it runs on (values by size slot; 0 ends). */
typedef struct ct_case {
    const char *src;
    int ncontract;      /* kernels the strategy must produce */
    int64_t sets[3][8]; /* size slots in declaration order; a set of all 0 is unused */
    int big;            /* the last set is large: cpu only (the interpreter is slow) */
} ct_case;

static const ct_case cases[] = {
    {"def matmul(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n",
     1,
     {{1, 1, 1}, {67, 40, 45}, {129, 33, 257}},
     1},
    {"def tmm(float(M,K) A, float(N,K) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(n,k)\n}\n", 1, {{1, 1, 1}, {13, 40, 7}}, 0},
    {"def amm(float(K,M) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(k,m) * B(k,n)\n}\n", 1, {{1, 1, 1}, {37, 11, 5}}, 0},
    {"def tbmm(float(B,N,M) X, float(B,K,M) Y) -> (Z) {\n  Z(b,n,k) +=! X(b,n,m) * Y(b,k,m)\n}\n",
     1,
     {{1, 1, 1, 1}, {3, 5, 7, 2}},
     0},
    {"def fcrelu(float(B,I) in, float(O,I) weight, float(O) bias) -> (out) {\n"
     "  out(b,o) = bias(o)\n  out(b,o) += in(b,i) * weight(o,i)\n  out(b,o) = fmaxf(out(b,o), 0)\n}\n",
     1,
     {{1, 1, 1}, {67, 45, 40}},
     0},
    {"def mlp2(float(B,I) X, float(H,I) W1, float(H) B1, float(O,H) W2, float(O) B2) -> (Y) {\n"
     "  h(b,o) +=! X(b,i) * W1(o,i)\n  h(b,o) = fmaxf(h(b,o) + B1(o), 0)\n"
     "  Y(b,o) +=! h(b,i) * W2(o,i)\n  Y(b,o) = tanh(Y(b,o) + B2(o))\n}\n",
     2,
     {{1, 1, 1, 1}, {5, 13, 70, 3}},
     0},
    {"def sgemm(float alpha, float beta, float(N,M) A, float(M,K) B, float(N,K) C) -> (C) {\n"
     "  C(i,j) = beta * C(i,j)\n  C(i,j) += alpha * A(i,k) * B(k,j)\n}\n",
     1,
     {{1, 1, 1}, {67, 45, 40}},
     0},
    {"def qk(float(B,T,D) Q, float(B,S,D) K, float(B,T) w) -> (s) {\n"
     "  s(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  s(b,i,j) = s(b,i,j) / sqrt(D) * w(b,i) - 0.5\n}\n",
     1,
     {{1, 1, 1, 1}, {2, 67, 11, 3}},
     0},
    {"def hmm(float16(M,K) A, float16(K,N) B) -> (C) {\n  C(m,n) +=! float(A(m,k)) * float(B(k,n))\n}\n",
     1,
     {{1, 1, 1}, {67, 40, 45}},
     0},
    {"def h16(float16(M,K) A, float16(N,K) B, float16(N) bias) -> (C) {\n"
     "  C(m,n) +=! A(m,k) * B(n,k)\n  C(m,n) = fmaxf(C(m,n) + bias(n), 0)\n}\n",
     1,
     {{1, 1, 1}, {67, 40, 45}, {129, 33, 257}},
     1},
    {"def ha16(float16(K,M) A, float16(K,N) B) -> (C) {\n  C(m,n) +=! A(k,m) * B(k,n)\n}\n",
     1,
     {{1, 1, 1}, {17, 67, 45}},
     0},
    {"def hb16(bfloat16(B,M,K) A, bfloat16(B,K,N) V) -> (C) {\n  C(b,m,n) +=! A(b,m,k) * V(b,k,n)\n}\n",
     1,
     {{1, 1, 1, 1}, {2, 19, 35, 9}},
     0},
    /* one tensor as both operands; C in/out accumulated without `!` */
    {"def gram(float(M,K) A) -> (C) {\n  C(m,n) +=! A(m,k) * A(n,k) where n in 0:M\n}\n", 1, {{1, 1}, {23, 7}}, 0},
    {"def sq(float(M,M) A) -> (C) {\n  C(m,n) +=! A(m,k) * A(k,n)\n}\n", 1, {{1}, {17}}, 0},
    {"def acc(float(M,K) A, float(K,N) B, float(M,N) C) -> (C) {\n  C(m,n) += A(m,k) * B(k,n)\n}\n",
     1,
     {{1, 1, 1}, {11, 5, 13}},
     0},
    /* C^T = B^T A^T: the same GEMM with the operands' roles swapped */
    {"def ct(float(M,K) A, float(K,N) B) -> (C) {\n  C(n,m) +=! A(m,k) * B(k,n)\n}\n", 1, {{1, 1, 1}, {5, 3, 7}}, 0},
    {"def conv(float(N,C,H,W) I, float(F,C,KH,KW) W1) -> (O) {\n"
     "  O(n,f,h,w) +=! I(n,c,h + kh,w + kw) * W1(f,c,kh,kw)\n}\n",
     0, /* not this strategy's shape: the generic strategy lowers it */
     {{1, 1, 1, 1, 1, 1, 1}, {2, 3, 5, 4, 2, 2, 2}},
     0},
};

static int gpu_state = -1; /* -1 unknown, 0 none, 1 present */

static int have_gpu(void)
{
    if (gpu_state < 0) {
        tsl_diag d = {0};
        rt_cuda_device *dev = NULL;
        gpu_state = rt_cuda_open(&dev, &d) == TSL_OK;
        if (gpu_state) printf("    GPU: %s (%s)\n", rt_cuda_device_info(dev)->name, rt_cuda_device_info(dev)->arch);
        else printf("    skipped: no GPU (%s)\n", sb_str(&d.msg));
        rt_cuda_close(dev);
        diag_free(&d);
    }
    return gpu_state;
}

static int count_contract(const sched_plan *p)
{
    int n = 0;
    /* (a split-K pair is another plan of the same group: test_sched_splitk.c) */
    for (int i = 0; i < p->nlaunches; i++)
        n += strstr(p->launches[i].k->name, "_contract") != NULL && !strstr(p->launches[i].k->name, "_splitk");
    return n;
}

/* Lower for `target`, verify, round-trip the text; the number of
 * contraction kernels. */
static sched_plan *lower_checked_for(tsl_arena *a, const lang_def *def, int want, tsl_target target)
{
    tsl_diag d = {0};
    graph *g = graph_build(a, def, &d);
    sched_plan *p = g ? sched_lower_for(a, g, target, &d) : NULL;
    CHECK_MSG(p != NULL, "%s: lowering failed: %s", def->name, sb_str(&d.msg));
    if (!p) {
        diag_free(&d);
        return NULL;
    }
    CHECK_MSG(count_contract(p) == want, "%s: %d contraction kernels, expected %d", def->name, count_contract(p),
              want);
    diag_free(&d);
    return test_plan_round_trip(a, p, def->name) == TSL_OK ? p : NULL;
}

static sched_plan *lower_checked(tsl_arena *a, const lang_def *def, int want)
{
    return lower_checked_for(a, def, want, TSL_TARGET_CUDA);
}

static void each_case_gpu(void);

static void each_case(int interp, int cpu)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tsl_arena *a = arena_create();
        tsl_source src = {"contract.tc", cases[c].src};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &src, &d);
        CHECK_MSG(mod != NULL && mod->ndefs == 1, "case %zu: %s", c, sb_str(&d.msg));
        diag_free(&d);
        sched_plan *p = mod ? lower_checked(a, mod->defs[0], cases[c].ncontract) : NULL;
        for (int s = 0; p && s < 3; s++) {
            if (!cases[c].sets[s][0]) continue;
            int last = s == 2 || !cases[c].sets[s + 1][0];
            if (interp && !(cases[c].big && last && s > 0)) test_compare_plan(a, mod->defs[0], p, cases[c].sets[s], test_run_tile_interp, "tile interpreter");
            if (cpu) test_compare_plan(a, mod->defs[0], p, cases[c].sets[s], test_run_cpu, "cpu");
        }
        arena_free(a);
    }
}

/* Every contraction kernel compiles with NVRTC for sm_90a with no spills
 * and no stack frame (ptxas report); sm_80 must compile, its report is
 * printed. */
static void test_nvrtc_no_spills(void)
{
    tsl_diag d = {0};
    if (rt_cuda_nvrtc_available(&d) != TSL_OK) {
        printf("    skipped: no NVRTC (%s)\n", sb_str(&d.msg));
        diag_free(&d);
        return;
    }
    diag_free(&d);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tsl_arena *a = arena_create();
        tsl_source src = {"contract.tc", cases[c].src};
        lang_module *mod = lang_parse_check(a, &src, &d);
        sched_plan *p = mod ? lower_checked(a, mod->defs[0], cases[c].ncontract) : NULL;
        for (int i = 0; p && i < p->nlaunches; i++) {
            const tile_kernel *k = p->launches[i].k;
            if (!strstr(k->name, "_contract")) continue;
            strbuf cu = {0};
            diag_reset(&d);
            tsl_status st = cg_cuda_emit(p->m, k, &cu, &d);
            CHECK_MSG(st == TSL_OK, "%s: CUDA emit: %s", k->name, sb_str(&d.msg));
            static const char *const archs[] = {"sm_90a", "sm_80"};
            for (int ai = 0; st == TSL_OK && ai < 2; ai++) {
                rt_cuda_options o = {0};
                o.ptxas_verbose = 1;
                o.name = k->name;
                void *cubin = NULL;
                size_t n = 0;
                char *log = NULL;
                diag_reset(&d);
                tsl_status cs = rt_cuda_compile(sb_str(&cu), archs[ai], &o, &cubin, &n, &log, &d);
                CHECK_MSG(cs == TSL_OK, "%s: NVRTC %s: %s", k->name, archs[ai], sb_str(&d.msg));
                if (cs == TSL_OK) {
                    rt_ptxas_report r;
                    rt_cuda_ptxas_parse(log, &r);
                    CHECK_MSG(r.found >= 1, "%s: no ptxas report", k->name);
                    /* the brief's target is sm_90a; sm_80 is reported only */
                    CHECK_MSG(ai == 1 || (r.spill_stores == 0 && r.spill_loads == 0 && r.stack_frame == 0),
                              "%s %s: spills %d/%d bytes, stack frame %d bytes", k->name, archs[ai], r.spill_stores,
                              r.spill_loads, r.stack_frame);
                    printf("    %s %s: %d registers, spills %d/%d, stack %d\n", k->name, archs[ai], r.registers,
                           r.spill_stores, r.spill_loads, r.stack_frame);
                }
                free(cubin);
                free(log);
            }
            sb_free(&cu);
        }
        diag_free(&d);
        arena_free(a);
    }
}

/* With a GPU: every case through the CUDA generator against the TC
 * interpreter. */
static void test_gpu_matches(void)
{
    if (!have_gpu()) return;
    each_case_gpu();
}

/* With a GPU: fp16 4096^3 (f32 accumulate, f16 out) and f32 2048^3 matmul
 * kernels timed (median of 10 launches) after a checked run on 67x40x45. */
static void test_gpu_timing(void)
{
    if (!have_gpu()) return;
    static const char *const srcs[] = {
        "def hmm(float16(M,K) A, float16(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n",
        "def hmmt(float16(M,K) A, float16(N,K) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(n,k)\n}\n",
        "def smm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n",
    };
    for (int si = 0; si < 3; si++) {
        int64_t n = si < 2 ? 4096 : 2048;
        tsl_arena *a = arena_create();
        tsl_source src = {"timing.tc", srcs[si]};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &src, &d);
        sched_plan *p = mod ? lower_checked(a, mod->defs[0], 1) : NULL;
        if (p) {
            int64_t small[3] = {67, 40, 45};
            test_compare_plan(a, mod->defs[0], p, small, test_run_gpu, "gpu");
            DLTensor t[3];
            int64_t shp[3][2] = {{n, n}, {n, n}, {n, n}};
            void *buf[3];
            for (int i = 0; i < 3; i++) {
                tsl_dtype dt = mod->defs[0]->tensors[i]->dtype;
                buf[i] = malloc((size_t)(n * n) * tsl_dtype_size(dt));
                for (int64_t e = 0; e < n * n; e += 1) dtype_store(dt, (char *)buf[i] + (size_t)e * tsl_dtype_size(dt), i < 2 ? test_rand_double(-1, 1) : NAN);
                memset(&t[i], 0, sizeof t[i]);
                t[i].data = buf[i];
                t[i].device.device_type = kDLCPU;
                t[i].ndim = 2;
                t[i].dtype = tsl_dtype_to_dlpack(dt);
                t[i].shape = shp[i];
            }
            const sched_launch *l = &p->launches[0];
            tile_interp_arg args[3];
            memset(args, 0, sizeof args);
            for (int j = 0; j < l->nargs && j < 3; j++) {
                args[j].name = l->args[j].name;
                args[j].t = &t[l->args[j].tensor];
            }
            drv_kernel_opts o = {0};
            o.reps = 10;
            tsl_status st = drv_kernel_run(&drv_target_cuda, p->m, l->k, args, l->nargs, &o, &d);
            CHECK_MSG(st == TSL_OK, "%s: %s", mod->defs[0]->name, sb_str(&d.msg));
            if (st == TSL_OK)
                printf("    %s %lld^3: %.3f ms, %.1f TFLOP/s\n", mod->defs[0]->name, (long long)n, o.median_ms,
                       2.0 * (double)n * (double)n * (double)n / (o.median_ms * 1e-3) / 1e12);
            for (int i = 0; i < 3; i++) free(buf[i]);
        }
        diag_free(&d);
        arena_free(a);
    }
}

static void test_chosen_and_verified(void) { each_case(0, 0); }
static void each_case_gpu(void)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tsl_arena *a = arena_create();
        tsl_source src = {"contract.tc", cases[c].src};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &src, &d);
        diag_free(&d);
        sched_plan *p = mod ? lower_checked(a, mod->defs[0], cases[c].ncontract) : NULL;
        for (int s = 0; p && s < 3; s++)
            if (cases[c].sets[s][0]) test_compare_plan(a, mod->defs[0], p, cases[c].sets[s], test_run_gpu, "gpu");
        arena_free(a);
    }
}

/* The f32 CUDA plan through the CUDA generator in the host emulation (its
 * sub-tiled micro-tiles, the unrolled k steps, the copies' in-box fast
 * path beside the edge path): the f32 cases' sets, and sizes where whole
 * 128 x 128 x 16 tiles meet edges that no tile divides. */
static void test_cuda_emu_f32(void)
{
    if (!test_have_cxx()) return;
    /* size slots in declaration order */
    static const struct {
        const char *name;
        int64_t sz[4];
    } extra[] = {
        {"matmul", {257, 35, 131}}, /* M, K, N */
        {"matmul", {128, 32, 128}},
        {"tmm", {131, 37, 257}},    /* M, K, N */
        {"amm", {33, 257, 129}},    /* K, M, N */
        {"sgemm", {130, 131, 17}},  /* N, M, K */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (strstr(cases[c].src, "float16") || !cases[c].ncontract) continue;
        tsl_arena *a = arena_create();
        tsl_source src = {"contract.tc", cases[c].src};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &src, &d);
        diag_free(&d);
        sched_plan *p = mod ? lower_checked(a, mod->defs[0], cases[c].ncontract) : NULL;
        for (int s = 0; p && s < 3; s++) {
            int last = s == 2 || !cases[c].sets[s + 1][0];
            if (cases[c].sets[s][0] && !(cases[c].big && last && s > 0))
                test_compare_plan(a, mod->defs[0], p, cases[c].sets[s], test_run_cuda_emu, "cuda plan, emulated");
        }
        for (size_t e = 0; p && e < sizeof extra / sizeof extra[0]; e++)
            if (!strcmp(mod->defs[0]->name, extra[e].name))
                test_compare_plan(a, mod->defs[0], p, extra[e].sz, test_run_cuda_emu, "cuda plan, emulated");
        arena_free(a);
    }
}

static void test_tile_interp_matches(void) { each_case(1, 0); }
static void test_cpu_matches(void) { each_case(0, 1); }

/* The option sched.generic=1 turns the strategy off (same program, no
 * contraction kernel). */
static void test_generic_switch(void)
{
    tsl_arena *a = arena_create();
    tsl_source src = {"contract.tc", cases[0].src};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK(mod != NULL);
    sched_options o = sched_options_defaults;
    CHECK(sched_options_parse("sched.generic=1", &o, &d) == TSL_OK);
    graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
    sched_plan *p = g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, 80, &o, &d) : NULL;
    CHECK(p != NULL && count_contract(p) == 0);
    diag_free(&d);
    arena_free(a);
}

/* ---- tf32 (the option allow_tf32=1) ---- */

/* tf32 rounds A and B to 11 significant bits: each product is off by up
 * to ~2^-10 of itself, so K terms of +-[0.1, 1] stay well inside 1e-2 x
 * (1 + |ref|); a wrong fragment element is off by O(1). */
static int tf32_count(const sched_plan *p)
{
    char *t = tile_print(p->m);
    int n = 0;
    for (const char *q = t; (q = strstr(q, "f32.tf32.tf32.f32")); q++) n++;
    free(t);
    return n;
}

/* With allow_tf32=1, f32 contractions on CUDA (sm_80 and sm_90a) run the
 * mma.sync plan on the m16n8k8 .tf32 row; without it, none does (never
 * silently). Every f32 case through the tile interpreter and the emulated
 * CUDA at odd sizes, against the TC interpreter. */
static void test_tf32_plan(void)
{
    static const int f32_cases[] = {0, 1, 2, 3, 4, 6};
    test_draw dr = {.tol = 1e-2};
    for (size_t ci = 0; ci < sizeof f32_cases / sizeof f32_cases[0]; ci++) {
        const ct_case *cc = &cases[f32_cases[ci]];
        tsl_arena *a = arena_create();
        tsl_source src = {"tf32.tc", cc->src};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &src, &d);
        CHECK_MSG(mod != NULL, "case %zu: %s", ci, sb_str(&d.msg));
        graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
        for (int sm = 80; g && sm <= 90; sm += 10) {
            sched_options o = sched_options_defaults;
            sched_plan *p0 = sched_lower_opt(a, g, TSL_TARGET_CUDA, sm, &o, &d);
            CHECK_MSG(p0 && tf32_count(p0) == 0, "%s sm_%d: tf32 without allow_tf32", mod->defs[0]->name, sm);
            o.allow_tf32 = 1;
            sched_plan *p = sched_lower_opt(a, g, TSL_TARGET_CUDA, sm, &o, &d);
            CHECK_MSG(p != NULL, "%s sm_%d: %s", mod->defs[0]->name, sm, sb_str(&d.msg));
            if (!p) continue;
            CHECK_MSG(tf32_count(p) >= 1, "%s sm_%d: no tf32 mma with allow_tf32=1", mod->defs[0]->name, sm);
            CHECK_MSG(tile_verify(p->m, NULL, &d) == TSL_OK, "%s sm_%d: %s", mod->defs[0]->name, sm, sb_str(&d.msg));
            for (int s = 0; s < 3; s++) {
                if (!cc->sets[s][0] || (cc->big && s > 0 && (s == 2 || !cc->sets[s + 1][0]))) continue;
                test_compare_plan_draw(a, mod->defs[0], p, cc->sets[s], test_run_tile_interp, "tf32 tile interpreter", &dr);
                if (sm == 80)
                    test_compare_plan_draw(a, mod->defs[0], p, cc->sets[s], test_run_cuda_emu, "tf32 emulated cuda", &dr);
            }
        }
        diag_free(&d);
        arena_free(a);
    }
}

/* ---- the CPU plan (sched_lower_for TSL_TARGET_CPU) and the C generator's
 * micro-kernel (src/codegen/c_emit_gemm.c) ---- */

/* f32 programs, each on 1x1x1, 67x45x40, 129x257x33, 1000x3x7 (size slots
 * in declaration order; a batch slot or 4th slot gets the 4th value). */
static const struct {
    const char *src;
    int ncontract;
    int64_t sets[4][4];
} cpu_cases[] = {
    {"def matmul(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n",
     1, {{1, 1, 1}, {67, 40, 45}, {129, 33, 257}, {1000, 7, 3}}},
    {"def tmm(float(M,K) A, float(N,K) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(n,k)\n}\n",
     1, {{1, 1, 1}, {67, 40, 45}, {129, 33, 257}, {1000, 7, 3}}},
    {"def amm(float(K,M) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(k,m) * B(k,n)\n}\n",
     1, {{1, 1, 1}, {40, 67, 45}, {33, 129, 257}, {7, 1000, 3}}},
    {"def tbmm(float(B,N,M) X, float(B,K,M) Y) -> (Z) {\n  Z(b,n,k) +=! X(b,n,m) * Y(b,k,m)\n}\n",
     1, {{1, 1, 1, 1}, {2, 67, 40, 45}, {1, 129, 33, 257}, {3, 1000, 7, 3}}},
    {"def fcrelu(float(B,I) in, float(O,I) weight, float(O) bias) -> (out) {\n"
     "  out(b,o) = bias(o)\n  out(b,o) += in(b,i) * weight(o,i)\n  out(b,o) = fmaxf(out(b,o), 0)\n}\n",
     1, {{1, 1, 1}, {67, 40, 45}, {129, 33, 257}, {1000, 7, 3}}},
    {"def sgemm(float alpha, float beta, float(N,M) A, float(M,K) B, float(N,K) C) -> (C) {\n"
     "  C(i,j) = beta * C(i,j)\n  C(i,j) += alpha * A(i,k) * B(k,j)\n}\n",
     1, {{1, 1, 1}, {67, 40, 45}, {129, 33, 257}, {1000, 7, 3}}},
    {"def mlp2(float(B,I) X, float(H,I) W1, float(H) B1, float(O,H) W2, float(O) B2) -> (Y) {\n"
     "  h(b,o) +=! X(b,i) * W1(o,i)\n  h(b,o) = fmaxf(h(b,o) + B1(o), 0)\n"
     "  Y(b,o) +=! h(b,i) * W2(o,i)\n  Y(b,o) = tanh(Y(b,o) + B2(o))\n}\n",
     2, {{1, 1, 1, 1}, {67, 40, 45, 13}, {129, 33, 257, 2}, {1000, 7, 3, 5}}},
};

/* Every contraction kernel of the plan, as C: does each use the
 * micro-kernel (marker: the tsl_ukr function)? */
static int plan_uses_ukr(const sched_plan *p, const char *name)
{
    int all = 1;
    for (int i = 0; i < p->nlaunches; i++) {
        if (!strstr(p->launches[i].k->name, "_contract")) continue;
        strbuf sb = {0};
        tsl_diag d = {0};
        tsl_status st = cg_c_emit(p->m, p->launches[i].k, &sb, &d);
        CHECK_MSG(st == TSL_OK, "%s: cg_c_emit: %s", name, sb_str(&d.msg));
        all &= st == TSL_OK && strstr(sb_str(&sb), "tsl_ukr") != NULL;
        sb_free(&sb);
        diag_free(&d);
    }
    return all;
}

/* The CPU plan on the CPU target against the TC interpreter, and the
 * micro-kernel taken for every f32 contraction (plain, transposed A or B,
 * batched, with init and epilogue ops). The tile interpreter runs the CPU
 * plan on the smallest set (it is slow on 96x128 tiles with BK 128). */
static void test_cpu_plan(void)
{
    for (size_t c = 0; c < sizeof cpu_cases / sizeof cpu_cases[0]; c++) {
        tsl_arena *a = arena_create();
        tsl_source src = {"contract_cpu.tc", cpu_cases[c].src};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &src, &d);
        CHECK_MSG(mod != NULL && mod->ndefs == 1, "cpu case %zu: %s", c, sb_str(&d.msg));
        diag_free(&d);
        sched_plan *p = mod ? lower_checked_for(a, mod->defs[0], cpu_cases[c].ncontract, TSL_TARGET_CPU) : NULL;
        if (p) {
            CHECK_MSG(p->target == TSL_TARGET_CPU, "%s: plan target", mod->defs[0]->name);
            CHECK_MSG(plan_uses_ukr(p, mod->defs[0]->name), "%s: the micro-kernel was not taken",
                      mod->defs[0]->name);
        }
        for (int s = 0; p && s < 4; s++) {
            if (s == 0) test_compare_plan(a, mod->defs[0], p, cpu_cases[c].sets[s], test_run_tile_interp, "tile interp, cpu plan");
            test_compare_plan(a, mod->defs[0], p, cpu_cases[c].sets[s], test_run_cpu, "cpu plan");
        }
        arena_free(a);
    }
}

/* The CPU plan's k loop with one detail changed (the add's operands
 * swapped: same value, not the micro-kernel's pattern). Asking for the
 * micro-kernel there is an error at selection, not a silent fallback;
 * without the ask the loop is emitted slot by slot and still gives the
 * right answer. */
static tile_module *variant_module(tsl_arena *a, const sched_plan *p, int keep_atom, tsl_diag *d)
{
    char *t = tile_print(p->m);
    const char *from = "add c_acc, c_p -> c_acc atom cpu.ukr.f32";
    char *at = strstr(t, from);
    CHECK(at != NULL);
    strbuf sb = {0};
    if (at) {
        sb_printf(&sb, "%.*s", (int)(at - t), t);
        sb_puts(&sb, keep_atom ? "add c_p, c_acc -> c_acc atom cpu.ukr.f32" : "add c_p, c_acc -> c_acc");
        sb_puts(&sb, at + strlen(from));
    }
    free(t);
    tsl_source s2 = {"variant.tile", arena_strdup(a, sb_str(&sb))};
    sb_free(&sb);
    tile_module *m2 = NULL;
    tsl_status st = tile_parse(a, &s2, d, &m2);
    if (!st) st = tile_verify(m2, &s2, d);
    CHECK_MSG(st == TSL_OK, "variant: %s", sb_str(&d->msg));
    return st ? NULL : m2;
}

static void test_cpu_plan_variant(void)
{
    tsl_arena *a = arena_create();
    tsl_source src = {"contract_cpu.tc", cpu_cases[0].src};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    sched_plan *p = mod ? lower_checked_for(a, mod->defs[0], 1, TSL_TARGET_CPU) : NULL;
    CHECK(p != NULL);
    tile_module *asked = p ? variant_module(a, p, 1, &d) : NULL;
    for (int i = 0; asked && i < asked->nkernels; i++) {
        if (!strstr(asked->kernels[i]->name, "_contract")) continue;
        strbuf sb = {0};
        tsl_diag d2 = {0};
        tsl_status st = cg_c_emit(asked, asked->kernels[i], &sb, &d2);
        CHECK_MSG(st == TSL_ERR_SEMANTIC && strstr(sb_str(&d2.msg), "add: atom cpu.ukr.f32 does not fit: the add is not "
                                                                     "`add acc, p -> acc`"),
                  "asking for the micro-kernel on the variant: %d %s", st, sb_str(&d2.msg));
        sb_free(&sb);
        diag_free(&d2);
    }
    tile_module *m2 = p ? variant_module(a, p, 0, &d) : NULL;
    if (m2) {
        for (int i = 0; i < p->nlaunches; i++) {
            tile_kernel *k2 = tile_module_find(m2, p->launches[i].k->name);
            CHECK(k2 != NULL);
            if (k2) p->launches[i].k = k2;
        }
        p->m = m2;
        CHECK_MSG(!plan_uses_ukr(p, "variant"), "the variant must not take the micro-kernel");
        static const int64_t sets[2][3] = {{1, 1, 1}, {67, 40, 45}};
        for (int i = 0; i < 2; i++) test_compare_plan(a, mod->defs[0], p, sets[i], test_run_cpu, "cpu, variant");
    }
    diag_free(&d);
    arena_free(a);
}

TEST_SUITE(sched_contract) = {
    {"cpu_plan", test_cpu_plan},
    {"cpu_plan_variant", test_cpu_plan_variant},
    {"chosen_and_verified", test_chosen_and_verified},
    {"tile_interp_matches", test_tile_interp_matches},
    {"cpu_matches", test_cpu_matches},
    {"cuda_emu_f32", test_cuda_emu_f32},
    {"generic_switch", test_generic_switch},
    {"tf32_plan", test_tf32_plan},
    {"nvrtc_no_spills", test_nvrtc_no_spills},
    {"gpu_matches", test_gpu_matches},
    {"gpu_timing", test_gpu_timing},
    {0},
};
