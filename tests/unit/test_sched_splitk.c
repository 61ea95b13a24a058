/* test_sched_splitk.c — the contraction strategy's split-K plan for small
 * M on the GPU (src/sched/contract.c, "split-K"): the CUDA plans (sm_80
 * and sm_90a) of f16, bf16 and f32 GEMMs (plain, transposed, with a bias
 * and ReLU epilogue, sgemm's C = beta C + alpha A B) at M = 1, 5, 16 with
 * a prime K and N no tile divides (and M = 0, K = 0) must hold the `_splitk` pair, verify,
 * and give the TC interpreter's answer on fresh random inputs (outputs
 * poisoned) through the tile interpreter (blocks shuffled) and the
 * emulated CUDA path, with S forced by the option contract.splitk and
 * chosen by the SM count; M = 65 takes the one-kernel plan; every split
 * kernel compiles with NVRTC for sm_90a. */
#include <string.h>

#include "codegen/cuda.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "sched/sched.h"
#include "sched_runners.h"
#include "test.h"

typedef struct sk_case {
    const char *src;
    int64_t sizes[4]; /* M, N, K or in declaration order */
} sk_case;

static const char *const sk_src[] = {
    "def mm(float16(M,K) A, float16(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n",
    "def mmt(bfloat16(M,K) A, bfloat16(N,K) B, bfloat16(N) bias) -> (C) {\n"
    "  C(m,n) +=! A(m,k) * B(n,k)\n  C(m,n) = fmaxf(C(m,n) + bias(n), 0)\n}\n",
    "def amm(float16(K,M) A, float16(K,N) B) -> (C) {\n  C(m,n) +=! A(k,m) * B(k,n)\n}\n",
    "def sgemm(float alpha, float beta, float(M,K) A, float(K,N) B, float(M,N) C) -> (C) {\n"
    "  C(i,j) = beta * C(i,j)\n  C(i,j) += alpha * A(i,k) * B(k,j)\n}\n",
};

/* Size slots in declaration order: M, K, N for every program above. */
static int64_t sk_sizes[][3] = {{1, 97, 45}, {5, 131, 67}, {16, 97, 130}, {0, 7, 9}, {3, 0, 9}};

static int count_split(const sched_plan *p)
{
    int n = 0;
    for (int i = 0; i < p->nlaunches; i++) n += strstr(p->launches[i].k->name, "_splitk") != NULL;
    return n;
}

static sched_plan *sk_lower(tsl_arena *a, const lang_def *def, int sm, const char *opts)
{
    tsl_diag d = {0};
    sched_options o = sched_options_defaults;
    CHECK(sched_options_parse(opts, &o, &d) == TSL_OK);
    graph *g = graph_build(a, def, &d);
    sched_plan *p = g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, sm, &o, &d) : NULL;
    CHECK_MSG(p != NULL, "%s: lowering failed: %s", def->name, sb_str(&d.msg));
    if (p) {
        tsl_status st = tile_verify(p->m, NULL, &d);
        CHECK_MSG(st == TSL_OK, "%s: does not verify: %s", def->name, sb_str(&d.msg));
        CHECK_MSG(p->notes == NULL, "%s: a plan was refused: %s", def->name, p->notes);
    }
    diag_free(&d);
    return p;
}

static lang_def *sk_def(tsl_arena *a, const char *text)
{
    tsl_source src = {"splitk.tc", text};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK_MSG(mod != NULL, "parse: %s", sb_str(&d.msg));
    diag_free(&d);
    return mod ? mod->defs[0] : NULL;
}

/* Every program x size x arch x {S = 3, S from the SM count}: the pair is
 * planned and the tile interpreter matches. */
static void test_tile_interp(void)
{
    static const char *const opts[] = {"contract.splitk=3", ""};
    for (size_t c = 0; c < TSL_COUNTOF(sk_src); c++)
        for (int sm = 80; sm <= 90; sm += 10)
            for (int oi = 0; oi < 2; oi++) {
                tsl_arena *a = arena_create();
                lang_def *def = sk_def(a, sk_src[c]);
                sched_plan *p = def ? sk_lower(a, def, sm, opts[oi]) : NULL;
                if (p) {
                    /* sm_90a keeps its wgmma plans (f16, bf16) for M > 64 */
                    int wg = 0;
                    for (int l = 0; l < p->nlaunches; l++) wg |= strstr(p->launches[l].k->name, "_wgmma") != NULL;
                    int want = 2;
                    CHECK_MSG(sm == 80 || wg || !strcmp(def->name, "sgemm"), "%s sm_90: no wgmma plan", def->name);
                    CHECK_MSG(count_split(p) == want, "%s sm_%d: %d split kernels, want %d", def->name, sm,
                              count_split(p), want);
                    for (size_t s = 0; s < TSL_COUNTOF(sk_sizes); s++) {
                        int64_t sz[4] = {sk_sizes[s][0], sk_sizes[s][1], sk_sizes[s][2], 0};
                        if (def->nsizes == 3 && !strcmp(def->sizes[1], "K")) {
                            /* M, K, N already */
                        } else if (def->nsizes == 3 && !strcmp(def->sizes[0], "K")) {
                            sz[0] = sk_sizes[s][1], sz[1] = sk_sizes[s][0]; /* amm: K, M, N */
                        } else if (def->nsizes == 3 && !strcmp(def->sizes[1], "N")) {
                            sz[1] = sk_sizes[s][2], sz[2] = sk_sizes[s][1]; /* mmt: M, N, K */
                        }
                        test_compare_plan(a, def, p, sz, test_run_tile_interp, "tile interpreter, split-K");
                    }
                }
                arena_free(a);
            }
}

/* The emulated CUDA path (the generator's iota, scatter and gather in the
 * mma layout) on one size per program. */
static void test_cuda_emu(void)
{
    if (!test_have_cxx()) return;
    for (size_t c = 0; c < TSL_COUNTOF(sk_src); c++) {
        tsl_arena *a = arena_create();
        lang_def *def = sk_def(a, sk_src[c]);
        sched_plan *p = def ? sk_lower(a, def, 80, "contract.splitk=2") : NULL;
        if (p) {
            int64_t sz[4] = {5, 131, 67, 0};
            if (!strcmp(def->sizes[0], "K")) sz[0] = 131, sz[1] = 5;
            else if (!strcmp(def->sizes[1], "N")) sz[1] = 67, sz[2] = 131;
            test_compare_plan(a, def, p, sz, test_run_cuda_emu, "emulated CUDA, split-K");
        }
        arena_free(a);
    }
}

/* M = 65: the one-kernel plan runs (the pair's guard fails), and its answer
 * matches; a constant M of 16 plans only the pair (on sm_90a too, with
 * S given or from the SM count), and contract.splitk=1 none. */
static void test_guard(void)
{
    tsl_arena *a = arena_create();
    lang_def *def = sk_def(a, sk_src[0]);
    sched_plan *p = def ? sk_lower(a, def, 80, "") : NULL;
    if (p) {
        int64_t sz[4] = {65, 37, 45, 0};
        test_compare_plan(a, def, p, sz, test_run_tile_interp, "tile interpreter, M = 65");
    }
    lang_def *d16 = sk_def(a, "def m16(float16(16,K) A, float16(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n");
    sched_plan *p16 = d16 ? sk_lower(a, d16, 90, "contract.splitk=4") : NULL;
    if (p16) CHECK_MSG(p16->nlaunches == 3 && count_split(p16) == 2, "M = 16: %d launches", p16->nlaunches);
    sched_plan *n16 = d16 ? sk_lower(a, d16, 90, "") : NULL;
    if (n16) CHECK_MSG(n16->nlaunches == 3 && count_split(n16) == 2, "M = 16 on sm_90a: %d launches", n16->nlaunches);
    sched_plan *w16 = d16 ? sk_lower(a, d16, 90, "contract.splitk=1") : NULL; /* the narrow wgmma plan */
    if (w16) CHECK_MSG(count_split(w16) == 0, "M = 16 on sm_90a, splitk=1: %d split kernels", count_split(w16));
    sched_plan *off = def ? sk_lower(a, def, 80, "contract.splitk=1") : NULL;
    if (off) CHECK(count_split(off) == 0);
    arena_free(a);
}

/* The split kernels compile with NVRTC for sm_90a (every size arm). */
static void test_nvrtc(void)
{
    tsl_diag d = {0};
    if (rt_cuda_nvrtc_available(&d) != TSL_OK) {
        printf("    skipped: no NVRTC (%s)\n", sb_str(&d.msg));
        diag_free(&d);
        return;
    }
    for (size_t c = 0; c < TSL_COUNTOF(sk_src); c++) {
        tsl_arena *a = arena_create();
        lang_def *def = sk_def(a, sk_src[c]);
        sched_plan *p = def ? sk_lower(a, def, 90, "") : NULL;
        for (int i = 0; p && i < p->nlaunches; i++) {
            const tile_kernel *k = p->launches[i].k;
            if (!strstr(k->name, "_splitk")) continue;
            rt_ptxas_report r;
            int narms = 0;
            diag_reset(&d);
            tsl_status st = test_nvrtc_arms(p->m, k, "sm_90a", &r, &narms, &d);
            CHECK_MSG(st == TSL_OK, "%s: NVRTC sm_90a: %s", k->name, sb_str(&d.msg));
            if (st == TSL_OK)
                printf("    %s sm_90a: %d arms, %d registers, spills %d/%d\n", k->name, narms, r.registers,
                       r.spill_stores, r.spill_loads);
        }
        arena_free(a);
    }
    diag_free(&d);
}

TEST_SUITE(sched_splitk) = {
    {"tile_interp", test_tile_interp},
    {"cuda_emu", test_cuda_emu},
    {"guard", test_guard},
    {"nvrtc", test_nvrtc},
    {0},
};
