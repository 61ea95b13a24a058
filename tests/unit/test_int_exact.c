/* test_int_exact.c — integers are exact on every target: reduction
 * identities, integer constants and conversions for every integer width,
 * on the C generator (CPU plan, cg_c_run) and the CUDA generator (CUDA
 * plan, compiled for the host with the GPU emulation), against the
 * reference interpreter, bit for bit.
 *
 * The inputs are what breaks a double: each dtype's minimum and maximum
 * and their neighbours, -1, 2^53 + 1, mixed with small random values; and
 * all-negative tensors (max=! must start below every one of them). The
 * bug this guards against: `r(n) min=! X(n,d) + 100` over int64 gave 0 on
 * the CPU, the identity INT64_MAX having gone through a double (2^63,
 * which the conversion mapped to 0). */
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

typedef enum { IX_EXTREME, IX_NEGATIVE } ix_mode;

/* The extreme values of integer dtype t as int64 bit patterns. */
static int64_t ix_lo(tsl_dtype t)
{
    const dtype_info *di = dtype_info_of(t);
    if (t == TSL_DTYPE_BOOL || !di->is_signed) return 0;
    return di->bits == 64 ? INT64_MIN : -(INT64_C(1) << (di->bits - 1));
}

static int64_t ix_hi(tsl_dtype t)
{
    const dtype_info *di = dtype_info_of(t);
    if (t == TSL_DTYPE_BOOL) return 1;
    if (!di->is_signed) return di->bits == 64 ? -1 : (int64_t)((UINT64_C(1) << di->bits) - 1);
    return di->bits == 64 ? INT64_MAX : (INT64_C(1) << (di->bits - 1)) - 1;
}

/* One element: mostly extremes and their neighbours, sometimes small. */
static int64_t ix_value(tsl_dtype t, ix_mode mode)
{
    int64_t lo = ix_lo(t), hi = ix_hi(t);
    if (t == TSL_DTYPE_BOOL) return test_rand_int(0, 1);
    if (mode == IX_NEGATIVE && lo < 0) {
        switch (test_rand_int(0, 3)) {
        case 0: return lo;
        case 1: return lo + test_rand_int(1, 3);
        case 2: return -test_rand_int(1, 5);
        default: return lo / 2 - test_rand_int(0, 7);
        }
    }
    switch (test_rand_int(0, 8)) {
    case 0: return lo;
    case 1: return (int64_t)((uint64_t)lo + (uint64_t)test_rand_int(1, 2));
    case 2: return hi;
    case 3: return (int64_t)((uint64_t)hi - (uint64_t)test_rand_int(1, 2));
    case 4: return lo < 0 ? -1 : 1;
    case 5: /* 2^53 + 1 where the width has it: no double holds it */
        if (dtype_info_of(t)->bits == 64) return (INT64_C(1) << 53) + 1;
        return hi / 3;
    default: {
        int64_t v = test_rand_int(1, 9);
        return lo < 0 && test_rand_int(0, 1) ? -v : v;
    }
    }
}

static const char *ix_name(tsl_target t) { return t == TSL_TARGET_CPU ? "cpu" : "cuda (emulated)"; }

static int64_t ix_draw(tsl_dtype t, void *ctx) { return ix_value(t, *(ix_mode *)ctx); }

/* Run def (sizes sz) with the interpreter and with the plan for target
 * through its runner on inputs of `mode`; every output must agree bit for
 * bit. The CUDA plan also compiles for Hopper with NVRTC (as the runtime
 * would, size arm by size arm) when NVRTC is here: the 64-bit programs
 * (the narrower widths differ only in their constants). */
static void ix_compare(tsl_arena *a, const lang_def *def, const int64_t *sz, tsl_target target, ix_mode mode)
{
    tsl_diag d = {0};
    graph *g = graph_build(a, def, &d);
    sched_plan *p = g ? sched_lower_for(a, g, target, &d) : NULL;
    CHECK_MSG(p != NULL, "%s: %s", def->name, sb_str(&d.msg));
    size_t nl = strlen(def->name);
    int wide = strncmp(def->name, "red_", 4) || (nl > 2 && !strcmp(def->name + nl - 2, "64"));
    if (p && target == TSL_TARGET_CUDA && mode == IX_EXTREME && wide && rt_cuda_nvrtc_available(NULL) == TSL_OK) {
        for (int l = 0; l < p->nlaunches; l++) {
            rt_ptxas_report worst;
            int narms = 0;
            tsl_status cs = test_nvrtc_arms(p->m, p->launches[l].k, "sm_90a", &worst, &narms, &d);
            CHECK_MSG(cs == TSL_OK && narms >= 1, "%s: %s does not compile for sm_90a: %s", def->name,
                      p->launches[l].k->name, sb_str(&d.msg));
            diag_reset(&d);
        }
    }
    diag_free(&d);
    if (!p) return;
    char what[96];
    snprintf(what, sizeof what, "%s, %s inputs", ix_name(target), mode == IX_EXTREME ? "extreme" : "all-negative");
    test_draw dr = {.int_value = ix_draw, .ctx = &mode};
    test_compare_plan_draw(a, def, p, sz, target == TSL_TARGET_CPU ? test_run_cpu : test_run_cuda_emu, what, &dr);
}

static void ix_run(const char *src, tsl_target target)
{
    tsl_arena *a = arena_create();
    tsl_source ts = {"int_exact.tc", src};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &ts, &d);
    CHECK_MSG(mod != NULL, "%s\n%s", sb_str(&d.msg), src);
    for (int di = 0; mod && di < mod->ndefs; di++) {
        const lang_def *def = mod->defs[di];
        /* N = 3 rows, D = 5 columns (odd, not a tile multiple) */
        int64_t sz[8] = {0};
        for (int s = 0; s < def->nsizes && s < 8; s++) sz[s] = !strcmp(def->sizes[s], "N") ? 3 : 5;
        ix_compare(a, def, sz, target, IX_EXTREME);
        ix_compare(a, def, sz, target, IX_NEGATIVE);
    }
    diag_free(&d);
    arena_free(a);
}

static const char *const ix_types[] = {"int8", "int16", "int32", "int64", "uint8",
                                       "uint16", "uint32", "uint64", "bool"};

/* Every integer width: the four reduction operators from their identity,
 * and the updates without `!` from an in/out tensor's values. */
static char *ix_reductions(const char *ty)
{
    strbuf b = {0};
    sb_printf(&b,
              "def red_%s(%s(N,D) X, %s(N) Y) -> (S, P, MX, MN, Y) {\n"
              "  S(n) +=! X(n,d)\n  P(n) *=! X(n,d)\n  MX(n) max=! X(n,d)\n  MN(n) min=! X(n,d)\n"
              "  Y(n) min= X(n,d)\n}\n",
              ty, ty, ty);
    return sb_take(&b);
}

static void ix_reductions_on(tsl_target target)
{
    if (target == TSL_TARGET_CUDA && !test_have_cxx()) return;
    for (size_t i = 0; i < TSL_COUNTOF(ix_types); i++) {
        char *src = ix_reductions(ix_types[i]);
        ix_run(src, target);
        free(src);
    }
}

/* The 64-bit programs of the issue and their kin: constants past 2^53,
 * argmax through an index-valued min=!, u64 reductions of negative int64
 * values, conversions between the widths. */
static const char ix_wide[] =
    "def m(int64(N,D) X) -> (r) { r(n) min=! X(n,d) + 100 }\n"
    "def argmax(int64(N,D) X) -> (mx, idx) {\n"
    "  mx(n) max=! X(n,d)\n  idx(n) min=! (X(n,d) == mx(n) ? d : D)\n}\n"
    "def umax(int64(N,D) X) -> (U, V) {\n"
    "  U(n) max=! uint64(X(n,d))\n  V(n) min=! uint64(X(n,d))\n}\n"
    "def consts(int64(N,D) X, uint64(N,D) Y) -> (A, B, C, E, F) {\n"
    "  A(n,d) = X(n,d) + 9007199254740993\n"
    "  B(n,d) = Y(n,d) > 18446744073709551 ? Y(n,d) - 9223372036854775807 : Y(n,d)\n"
    "  C(n,d) = max(X(n,d), -9223372036854775807) / (X(n,d) < 0 ? -3 : 7)\n"
    "  E(n,d) = int8(X(n,d)) + uint32(Y(n,d))\n"
    "  F(n,d) = Y(n,d) / (Y(n,d) % 5 + 1) + Y(n,d) % 3\n"
    "}\n";

static void test_reductions_cpu(void) { ix_reductions_on(TSL_TARGET_CPU); }
static void test_reductions_cuda_emu(void) { ix_reductions_on(TSL_TARGET_CUDA); }
static void test_wide_cpu(void) { ix_run(ix_wide, TSL_TARGET_CPU); }
static void test_wide_cuda_emu(void)
{
    if (test_have_cxx()) ix_run(ix_wide, TSL_TARGET_CUDA);
}

TEST_SUITE(int_exact) = {
    {"reductions_cpu", test_reductions_cpu},
    {"wide_cpu", test_wide_cpu},
    {"reductions_cuda_emu", test_reductions_cuda_emu},
    {"wide_cuda_emu", test_wide_cuda_emu},
    {0},
};
