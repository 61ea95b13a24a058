/* test_vmath.c — the C target's vectorizable float32 transcendentals and
 * float16 rounding (src/codegen/c_vmath.c) over their whole domain, as the
 * C target compiles and runs them: one tile kernel applies exp, log, tanh,
 * sigmoid and erf to 4.2 million float32 values (every 1021st bit pattern
 * of both signs, subnormals to infinities, plus NaN, +-0, +-inf and the
 * overflow thresholds) and rounds them to float16; each result must lie
 * within the documented bound of the exact value (float64 libm, rounded to
 * float32), in units of the float32 spacing there, with the limits and
 * NaN exactly right; the float16 rounding must equal the library's bit for
 * bit (the interpreter's rounding). The kernel's C must also vectorize
 * them: the loops hold no call to expf, logf, tanhf or erff. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "codegen/codegen.h"
#include "driver/driver.h"
#include "tile/tile.h"

static const char vm_src[] =
    "kernel vm(X: global f32[N], E: global f32[N], L: global f32[N], T: global f32[N], S: global f32[N],"
    " F: global f32[N], H: global f16[N]) grid(cdiv(N, 1024)) threads(128) {\n"
    "  x = load_global X[block_idx.x * 1024] -> register f32[1024] layout spatial(128).local(8)\n"
    "  e = exp x\n  store_global e -> E[block_idx.x * 1024]\n"
    "  l = log x\n  store_global l -> L[block_idx.x * 1024]\n"
    "  t = tanh x\n  store_global t -> T[block_idx.x * 1024]\n"
    "  s = sigmoid x\n  store_global s -> S[block_idx.x * 1024]\n"
    "  f = erf x\n  store_global f -> F[block_idx.x * 1024]\n"
    "  h = cast x -> register f16[1024] layout spatial(128).local(8)\n"
    "  store_global h -> H[block_idx.x * 1024]\n"
    "}\n";

/* |got - want| in float32 spacings at want (want exact, in double) */
static double vm_ulps(float got, double want)
{
    float wf = (float)want;
    if (isinf(wf)) wf = want > 0 ? 3.40282347e38f : -3.40282347e38f;
    double sp = (double)nextafterf(fabsf(wf), INFINITY) - (double)fabsf(wf);
    if (fabsf(wf) < 1.17549435e-38f) sp = 1.4012984643248171e-45;
    return fabs((double)got - want) / sp;
}

typedef struct vm_fn {
    const char *name;
    double (*ref)(double);
    double bound;
    double worst, at;
    long bad;
} vm_fn;

static double vm_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static void vm_check(vm_fn *f, float x, float got)
{
    double want = f->ref((double)x);
    float wf = (float)want;
    int ok;
    double u = 0;
    if (isnan(want)) ok = isnan(got);
    else if (isinf(wf)) ok = got == wf; /* overflow: exactly inf */
    else if (wf == 0 && want != 0 && fabs(want) < 1e-45) ok = fabsf(got) <= 1.5e-45f; /* underflow */
    else {
        u = vm_ulps(got, want);
        ok = u <= f->bound;
    }
    if (u > f->worst) f->worst = u, f->at = x;
    if (!ok && f->bad++ < 3)
        CHECK_MSG(0, "%s(%.9g) = %.9g, exact %.17g (%.2f ulp; bound %.1f)", f->name, (double)x, (double)got, want, u,
                  f->bound);
}

static void test_domain(void)
{
    tsl_arena *ar = arena_create();
    tsl_source src = {"vm.tile", vm_src};
    tsl_diag d = {0};
    tile_module *m = NULL;
    CHECK_MSG(tile_parse(ar, &src, &d, &m) == TSL_OK, "%s", sb_str(&d.msg));
    if (!m) goto out;
    /* the inputs: every 1021st pattern below +inf, both signs, and specials */
    int64_t n = 0, cap = 2 * (0x7f800000 / 1021 + 2) + 64;
    float *x = malloc(sizeof *x * (size_t)cap);
    for (uint32_t u = 0; u < 0x7f800000u; u += 1021) {
        float v;
        memcpy(&v, &u, 4);
        x[n++] = v;
        x[n++] = -v;
    }
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.7228394f, 88.7228470f,
                                     -103.972084f, -103.9721f, -87.33655f, 1.0f, -1.0f, 0.625f, -0.625f,
                                     0.875f, -0.875f, 3.92f, -3.92f, 9.1f, 65504.0f, 65519.99f, 65520.0f,
                                     6.1035156e-05f, 5.96e-08f, 2.98e-08f, 1.17549435e-38f, 1.4e-45f};
    for (size_t k = 0; k < TSL_COUNTOF(specials); k++) x[n++] = specials[k];
    DLTensor *t[7];
    float *o[6];
    uint16_t *h;
    tile_interp_arg args[7];
    for (int i = 0; i < 7; i++) {
        t[i] = tsl_tensor_alloc(i == 6 ? TSL_DTYPE_F16 : TSL_DTYPE_F32, 1, &n);
        args[i] = (tile_interp_arg){.name = m->kernels[0]->params[i]->name, .t = t[i]};
    }
    memcpy(t[0]->data, x, sizeof *x * (size_t)n);
    for (int i = 1; i < 6; i++) o[i - 1] = t[i]->data, memset(t[i]->data, 0xff, sizeof(float) * (size_t)n);
    h = t[6]->data;
    tsl_status st = drv_kernel_run(&drv_target_cpu, m, m->kernels[0], args, 7, NULL, &d);
    CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
    if (!st) {
        vm_fn fn[5] = {{.name = "exp", .ref = exp, .bound = 2},
                       {.name = "log", .ref = log, .bound = 2},
                       {.name = "tanh", .ref = tanh, .bound = 2},
                       {.name = "sigmoid", .ref = vm_sigmoid, .bound = 3},
                       {.name = "erf", .ref = erf, .bound = 2}};
        long hbad = 0;
        for (int64_t i = 0; i < n; i++) {
            for (int f = 0; f < 5; f++) vm_check(&fn[f], x[i], o[f][i]);
            uint16_t want = 0;
            dtype_store(TSL_DTYPE_F16, &want, (double)x[i]);
            int same = h[i] == want || (isnan(x[i]) && (h[i] & 0x7c00u) == 0x7c00u && (h[i] & 0x3ffu));
            if (!same && hbad++ < 3)
                CHECK_MSG(0, "float16 rounding of %.9g: 0x%04x, the library's 0x%04x", (double)x[i], h[i], want);
        }
        for (int f = 0; f < 5; f++)
            printf("    %-8s worst %.2f ulp (at %.9g) over %lld values\n", fn[f].name, fn[f].worst, fn[f].at,
                   (long long)n);
    }
    for (int i = 0; i < 7; i++) tsl_tensor_free(t[i]);
    free(x);
    /* the kernel's loops call no libm transcendental: they vectorize */
    strbuf c = {0};
    if (cg_c_emit(m, m->kernels[0], &c, &d) == TSL_OK) {
        const char *body = strstr(sb_str(&c), "static int blk(");
        CHECK(body && !strstr(body, "(expf(") && !strstr(body, "(logf(") && !strstr(body, "(tanhf(") &&
              !strstr(body, "(erff("));
        CHECK(body && strstr(body, "tsl_expf(x)") && strstr(body, "tsl_erff(x)"));
    }
    sb_free(&c);
out:
    diag_free(&d);
    arena_free(ar);
}

/* float16 -> float32 loads, every one of the 65536 patterns, against the
 * library (the interpreter's conversion): exactly, NaNs as NaNs. */
static void test_f16_loads(void)
{
    tsl_arena *ar = arena_create();
    tsl_source src = {"h.tile", "kernel h(H: global f16[N], F: global f32[N]) grid(cdiv(N, 1024)) threads(128) {\n"
                                "  x = load_global H[block_idx.x * 1024] -> register f16[1024] layout spatial(128).local(8)\n"
                                "  y = cast x -> register f32[1024] layout spatial(128).local(8)\n"
                                "  store_global y -> F[block_idx.x * 1024]\n}\n"};
    tsl_diag d = {0};
    tile_module *m = NULL;
    CHECK_MSG(tile_parse(ar, &src, &d, &m) == TSL_OK, "%s", sb_str(&d.msg));
    int64_t n = 65536;
    DLTensor *h = tsl_tensor_alloc(TSL_DTYPE_F16, 1, &n), *f = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n);
    for (int64_t i = 0; i < n; i++) ((uint16_t *)h->data)[i] = (uint16_t)i;
    tile_interp_arg args[2] = {{.name = "H", .t = h}, {.name = "F", .t = f}};
    tsl_status st = m ? drv_kernel_run(&drv_target_cpu, m, m->kernels[0], args, 2, NULL, &d) : TSL_ERR_INTERNAL;
    CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
    int bad = 0;
    for (int64_t i = 0; !st && i < n && bad < 3; i++) {
        double want = dtype_load(TSL_DTYPE_F16, (uint16_t *)h->data + i);
        float got = ((float *)f->data)[i];
        if (isnan(want) ? isnan(got) : (double)got == want && !signbit(got) == !signbit(want)) continue;
        CHECK_MSG(0, "f16 0x%04llx loads as %.9g, the library's %.9g", (long long)i, (double)got, want);
        bad++;
    }
    tsl_tensor_free(h);
    tsl_tensor_free(f);
    diag_free(&d);
    arena_free(ar);
}

TEST_SUITE(vmath) = {
    {"domain", test_domain},
    {"f16_loads", test_f16_loads},
    {0},
};
