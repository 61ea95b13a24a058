/* test_lowbit.c — low-bit types through the compiled targets: every
 * type's round trip (cast from float32, copy, widen) on the CPU target
 * against the reference interpreter, bit for bit, at sizes no tile
 * divides; the CUDA C of the same programs compiles with NVRTC for sm_80
 * and sm_90a. The encodings themselves: tests/e2e/test_lowbit_formats.py. */
#include <math.h>
#include <string.h>

#include "test.h"
#include "codegen/cuda.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "runtime/runtime.h"
#include "sched/sched.h"

/* def f(float32(N) X, T(N) W) -> (Q, C, Y): Q = T(X), C = W, Y = float32(W) * 2 + float32(Q) */
static char *program_for(tsl_dtype t)
{
    const char *n = tsl_dtype_name(t);
    char *s = NULL;
    TSL_ASSERT(asprintf(&s,
                        "def f(float32(N) X, %s(N) W) -> (Q, C, Y) {\n"
                        "  Q(i) = %s(X(i))\n"
                        "  C(i) = W(i)\n"
                        "  Y(i) = float32(W(i)) * 2 + float32(Q(i))\n"
                        "}\n",
                        n, n) > 0);
    return s;
}

static int is_lowbit(tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(t);
    return d->bits < 8 || (d->is_float && d->bits <= 8);
}

static void run_on(tsl_context *ctx, tsl_program *p, tsl_target tg, DLTensor *x, DLTensor *w, DLTensor **outs)
{
    tsl_args *a = tsl_args_create(p);
    CHECK(tsl_args_set_tensor(a, "X", x) == TSL_OK);
    CHECK(tsl_args_set_tensor(a, "W", w) == TSL_OK);
    tsl_status st = tsl_program_run(p, a, tg);
    CHECK_MSG(st == TSL_OK, "%s: %s", tsl_target_name(tg), tsl_context_error(ctx));
    const char *names[] = {"Q", "C", "Y"};
    for (int i = 0; i < 3; i++) {
        const DLTensor *o = tsl_args_output(a, names[i]);
        tsl_dtype dt;
        outs[i] = NULL;
        if (!o || tsl_dtype_from_dlpack(o->dtype, &dt)) continue;
        outs[i] = tsl_tensor_alloc(dt, o->ndim, o->shape);
        memcpy(outs[i]->data, o->data, tsl_dtype_nbytes(dt, o->shape[0]));
    }
    tsl_args_free(a);
}

static void test_cpu_matches_interp_every_type(void)
{
    tsl_context *ctx = tsl_context_create();
    int compared = 0;
    static const int64_t sizes[] = {1, 13, 777};
    for (int t = 0; t < TSL_DTYPE_COUNT; t++) {
        if (!is_lowbit((tsl_dtype)t)) continue;
        char *src = program_for((tsl_dtype)t);
        tsl_program *p = NULL;
        tsl_status st = tsl_program_compile(ctx, src, "lowbit.tc", NULL, &p);
        CHECK_MSG(st == TSL_OK, "%s: %s", tsl_dtype_name((tsl_dtype)t), tsl_context_error(ctx));
        for (size_t si = 0; p && si < TSL_COUNTOF(sizes); si++) {
            int64_t n = sizes[si];
            DLTensor *x = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n), *w = tsl_tensor_alloc((tsl_dtype)t, 1, &n);
            const dtype_info *d = dtype_info_of((tsl_dtype)t);
            for (int64_t i = 0; i < n; i++) {
                /* X spans the format's range and past it; W every code in turn */
                ((float *)x->data)[i] = (float)test_rand_double(-300, 300) * (i % 3 ? 0.01f : 1.0f);
                dtype_set_bits((tsl_dtype)t, w->data, i, (uint64_t)test_rand_int(0, (1 << d->bits) - 1));
                if (d->is_float && !isfinite(dtype_get((tsl_dtype)t, w->data, i))) dtype_set_bits((tsl_dtype)t, w->data, i, 1);
            }
            DLTensor *ref[3], *got[3];
            run_on(ctx, p, TSL_TARGET_INTERP, x, w, ref);
            run_on(ctx, p, TSL_TARGET_CPU, x, w, got);
            for (int o = 0; o < 3; o++) {
                if (!ref[o] || !got[o]) continue;
                tsl_dtype dt;
                tsl_dtype_from_dlpack(ref[o]->dtype, &dt);
                size_t nb = tsl_dtype_nbytes(dt, n);
                CHECK_MSG(!memcmp(ref[o]->data, got[o]->data, nb), "%s n=%lld output %d: the CPU target differs "
                          "from the interpreter", tsl_dtype_name((tsl_dtype)t), (long long)n, o);
                compared++;
                tsl_tensor_free(ref[o]);
                tsl_tensor_free(got[o]);
            }
            tsl_tensor_free(x);
            tsl_tensor_free(w);
        }
        tsl_program_free(p);
        free(src);
    }
    printf("    %d outputs compared bit for bit\n", compared);
    CHECK(compared == 40 * 3 * 3);
    tsl_context_free(ctx);
}

static void test_cuda_compiles_every_type(void)
{
    tsl_diag d = {0};
    if (rt_cuda_nvrtc_available(&d) != TSL_OK) {
        printf("    skipped: no NVRTC\n");
        diag_free(&d);
        return;
    }
    int compiled = 0;
    for (int t = 0; t < TSL_DTYPE_COUNT; t++) {
        if (!is_lowbit((tsl_dtype)t) || (t % 5 && t != TSL_DTYPE_F8E4M3 && t != TSL_DTYPE_U4)) continue;
        char *src = program_for((tsl_dtype)t);
        tsl_arena *a = arena_create();
        tsl_source ts = {"lowbit.tc", src};
        diag_reset(&d);
        lang_module *mod = lang_parse_check(a, &ts, &d);
        graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
        sched_plan *plan = g ? sched_lower_for(a, g, TSL_TARGET_CUDA, &d) : NULL;
        CHECK_MSG(plan != NULL, "%s: %s", tsl_dtype_name((tsl_dtype)t), sb_str(&d.msg));
        for (int l = 0; plan && l < plan->nlaunches; l++) {
            strbuf cu = {0};
            tsl_status st = cg_cuda_emit(plan->m, plan->launches[l].k, &cu, &d);
            CHECK_MSG(st == TSL_OK, "%s: emit: %s", tsl_dtype_name((tsl_dtype)t), sb_str(&d.msg));
            static const char *const archs[] = {"sm_80", "sm_90a"};
            for (int ar = 0; st == TSL_OK && ar < 2; ar++) {
                rt_cuda_options o = {0};
                o.name = plan->launches[l].k->name;
                void *cubin = NULL;
                size_t n = 0;
                char *log = NULL;
                tsl_status cs = rt_cuda_compile(sb_str(&cu), archs[ar], &o, &cubin, &n, &log, &d);
                CHECK_MSG(cs == TSL_OK, "%s %s: NVRTC: %s", tsl_dtype_name((tsl_dtype)t), archs[ar], sb_str(&d.msg));
                compiled += cs == TSL_OK;
                free(cubin);
                free(log);
            }
            sb_free(&cu);
        }
        arena_free(a);
        free(src);
    }
    printf("    %d kernels compiled by NVRTC\n", compiled);
    diag_free(&d);
}

TEST_SUITE(lowbit) = {
    {"cpu_matches_interp_every_type", test_cpu_matches_interp_every_type},
    {"cuda_compiles_every_type", test_cuda_compiles_every_type},
    {0},
};
