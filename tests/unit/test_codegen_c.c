/* test_codegen_c.c — the C code generator against the tile interpreter:
 * every program of examples/tile/ and tests/tile_golden/ that the
 * interpreter runs is run both ways on fresh random data, with sizes of 1,
 * primes and non-multiples of the tiles, outputs poisoned before each run;
 * results must agree (integers exactly, f32 to 1e-5, f16 to 1e-3). Also:
 * the emitted source compiles with -Wall -Wextra -Werror, a compile
 * failure is TSL_ERR_COMPILE with the compiler's message, zero-size grids
 * launch nothing, run-time errors name the instruction; fma bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "driver/driver.h"
#include "fma_cases.h"
#include "runtime/runtime.h"
#include "test.h"
#include "tile/interp.h"
#include "tile/tile.h"

static tile_module *parse_text(tsl_arena *ar, const char *text);

static char *read_file(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_root(), rel);
    size_t n;
    char *t = file_read_all(path, &n);
    CHECK_MSG(t != NULL, "cannot read %s", path);
    return t;
}

/* Drop every line containing `what` (print statements: the generated code
 * prints to stdout, the comparison needs none of it). */
static void drop_lines(char *text, const char *what)
{
    char *p;
    while ((p = strstr(text, what))) {
        char *b = p, *e = strchr(p, '\n');
        while (b > text && b[-1] != '\n') b--;
        e = e ? e + 1 : p + strlen(p);
        memmove(b, e, strlen(e) + 1);
    }
}

static int64_t sym_lookup(void *ctx, const tile_value *v, int *ok)
{
    const int64_t *vals = ctx;
    if (v->origin == TILE_O_SYMBOL || v->origin == TILE_O_PARAM) return vals[v->id];
    *ok = 0;
    return 0;
}

static int is_int_dtype(tsl_dtype t)
{
    return t != TSL_DTYPE_F16 && t != TSL_DTYPE_BF16 && t != TSL_DTYPE_F32 && t != TSL_DTYPE_F64;
}

static double at(const DLTensor *t, int64_t i)
{
    tsl_dtype dt;
    tsl_dtype_from_dlpack(t->dtype, &dt);
    return dtype_load(dt, (char *)t->data + i * (int64_t)tsl_dtype_size(dt));
}

static int64_t numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* Run kernel k of module m on the interpreter and on the C back end with
 * the same random inputs; `sizes` gives a value per symbol (by name) or
 * picks one in [1, maxsize]. Returns 1 when both ran and agree, 0 when the
 * interpreter cannot run it (msg set), -1 on a mismatch or C failure. */
static int compare(const tile_module *m, const tile_kernel *k, int64_t maxsize, int ones, char *why,
                   size_t nwhy)
{
    int64_t *vals = calloc((size_t)k->nvalues + 1, sizeof *vals);
    tile_interp_arg *a1 = calloc((size_t)k->nparams + 1, sizeof *a1);
    tile_interp_arg *a2 = calloc((size_t)k->nparams + 1, sizeof *a2);
    const tile_value *outs[32];
    int nout = tile_interp_outputs(k, outs, 32), result = 1;
    for (int s = 0; s < k->nsyms; s++) vals[k->syms[s]->id] = ones ? 1 : test_rand_int(1, maxsize);
    for (int p = 0; p < k->nparams; p++)
        if (k->params[p]->kind == TILE_V_SCALAR) vals[k->params[p]->id] = test_rand_int(1, 9);
    for (int p = 0; p < k->nparams; p++) {
        const tile_value *v = k->params[p];
        a1[p].name = a2[p].name = v->name;
        if (v->kind == TILE_V_SCALAR) {
            if (tile_value_is_typed_scalar(v) && v->type.dt.kind == TILE_DT_FLOAT) {
                double f = test_rand_double(0.5, 2); /* float scalars: the double's bits in ival */
                memcpy(&a1[p].ival, &f, 8);
                a2[p].ival = a1[p].ival;
            } else
                a1[p].ival = a2[p].ival = vals[v->id];
            continue;
        }
        int64_t shape[8];
        for (int i = 0; i < v->type.rank; i++) {
            int ok = 1;
            shape[i] = tile_expr_eval(v->type.dims[i], sym_lookup, vals, NULL, -1, &ok);
        }
        tsl_dtype dt;
        tile_dtype_to_tsl(v->type.dt, &dt);
        DLTensor *t1 = tsl_tensor_alloc(dt, v->type.rank, shape), *t2 = tsl_tensor_alloc(dt, v->type.rank, shape);
        int out = 0;
        for (int o = 0; o < nout; o++) out |= outs[o] == v;
        double poison = test_rand_int(-100, 100);
        int64_t n = numel(t1);
        size_t es = tsl_dtype_size(dt);
        for (int64_t i = 0; i < n; i++) {
            double x = out ? (is_int_dtype(dt) ? poison : NAN)
                           : is_int_dtype(dt) ? (double)test_rand_int(-50, 50) : test_rand_double(-1, 1);
            if (!out && !is_int_dtype(dt) && x == 0) x = 0.5;
            dtype_store(dt, (char *)t1->data + i * (int64_t)es, x);
        }
        memcpy(t2->data, t1->data, (size_t)n * es);
        a1[p].t = t1;
        a2[p].t = t2;
    }
    tsl_diag d1 = {0}, d2 = {0};
    tile_interp_opts o = {0};
    o.shuffle_blocks = 1;
    o.seed = test_rand();
    FILE *devnull = fopen("/dev/null", "w");
    o.print_to = devnull;
    tsl_status s1 = tile_interp_run(k, NULL, a1, k->nparams, &o, &d1);
    if (devnull) fclose(devnull);
    if (s1) {
        snprintf(why, nwhy, "interpreter: %s", sb_str(&d1.msg));
        result = 0;
        goto done;
    }
    tsl_status s2 = drv_kernel_run(&drv_target_cpu, m, k, a2, k->nparams, NULL, &d2);
    if (s2) {
        snprintf(why, nwhy, "C back end: %s", sb_str(&d2.msg));
        result = -1;
        goto done;
    }
    for (int p = 0; p < k->nparams && result == 1; p++) {
        if (!a1[p].t) continue;
        tsl_dtype dt;
        tsl_dtype_from_dlpack(a1[p].t->dtype, &dt);
        double tol = dt == TSL_DTYPE_F16 || dt == TSL_DTYPE_BF16 ? 1e-3 : dt == TSL_DTYPE_F32 ? 1e-5 : 0;
        for (int64_t i = 0; i < numel(a1[p].t); i++) {
            double x = at(a1[p].t, i), y = at(a2[p].t, i);
            int same = (isnan(x) && isnan(y)) || x == y || (!isinf(x) && fabs(x - y) <= tol * fmax(1, fabs(x)));
            if (!same) {
                snprintf(why, nwhy, "'%s'[%lld]: interpreter %.9g, C %.9g", a1[p].name, (long long)i, x, y);
                result = -1;
                break;
            }
        }
    }
done:
    for (int p = 0; p < k->nparams; p++) {
        tsl_tensor_free((DLTensor *)a1[p].t);
        tsl_tensor_free((DLTensor *)a2[p].t);
    }
    free(a1);
    free(a2);
    free(vals);
    diag_free(&d1);
    diag_free(&d2);
    return result;
}

/* Every kernel of a file: both back ends agree (3 random size sets + all
 * ones). Kernels listed in `skip` are ones the interpreter cannot run;
 * every other kernel must run. */
static void compare_file(const char *rel, const char *skip, int64_t maxsize)
{
    char *text = read_file(rel);
    if (!text) return;
    drop_lines(text, "print ");
    tsl_arena *ar = arena_create();
    tsl_source src = {rel, text};
    tsl_diag d = {0};
    tile_module *m = NULL;
    CHECK_MSG(tile_parse(ar, &src, &d, &m) == TSL_OK, "%s: %s", rel, sb_str(&d.msg));
    for (int i = 0; m && i < m->nkernels; i++) {
        const tile_kernel *k = m->kernels[i];
        char pat[128];
        snprintf(pat, sizeof pat, " %s ", k->name);
        int skipped = skip && strstr(skip, pat);
        snprintf(pat, sizeof pat, " %s?", k->name);
        int maybe = skip && strstr(skip, pat); /* the interpreter may not run it yet */
        snprintf(pat, sizeof pat, " %s!", k->name);
        int c_fails = skip && strstr(skip, pat); /* known: the C back end may refuse it */
        for (int rep = 0; rep < 4; rep++) {
            char why[2048] = "";
            int r = compare(m, k, maxsize, rep == 0, why, sizeof why);
            if (c_fails && r == -1) {
                /* refused by pipeline expansion: a located message, nothing run */
                CHECK_MSG(strstr(why, "C back end") && strstr(why, "pipeline"),
                          "%s: kernel %s: expected a pipeline expansion message: %s", rel, k->name, why);
                break;
            }
            if (skipped) {
                CHECK_MSG(r == 0, "%s: kernel %s was expected not to run on the interpreter", rel, k->name);
                break;
            }
            if (maybe && r <= 0) break; /* not run, or refused by the C back end */
            CHECK_MSG(r == 1, "%s: kernel %s (rep %d): %s", rel, k->name, rep, why);
            if (r != 1) break;
        }
    }
    diag_free(&d);
    arena_free(ar);
    free(text);
}

static void test_examples(void)
{
    compare_file("examples/tile/blocked_sum.tile", NULL, 40);
    compare_file("examples/tile/gemm.tile", NULL, 90);
    compare_file("examples/tile/gemm_pipelined.tile", NULL, 90);
    compare_file("examples/tile/ldmatrix_move.tile", NULL, 10);
}

static void test_golden(void)
{
    compare_file("tests/tile_golden/async_copy.tile", NULL, 70);
    compare_file("tests/tile_golden/blocked_sum.tile", NULL, 150);
    compare_file("tests/tile_golden/blocks_out.tile", NULL, 100);
    compare_file("tests/tile_golden/control.tile", NULL, 200);
    /* packed global tensors: the interpreters hold them, the generators not yet */
    compare_file("tests/tile_golden/dequant.tile", " lowbit_types?", 10);
    compare_file("tests/tile_golden/elementwise.tile", NULL, 700);
    /* f64 math in double, bit for bit (the CUDA generator once used float) */
    compare_file("tests/tile_golden/f64_math.tile", NULL, 300);
    compare_file("tests/tile_golden/fma.tile", NULL, 300);
    compare_file("tests/tile_golden/gemm.tile", NULL, 90);
    /* a swizzled shared block spec: pipeline expansion does not take it yet */
    compare_file("tests/tile_golden/gemm_pipelined.tile", " gemm_pipelined!", 90);
    compare_file("tests/tile_golden/ldmatrix.tile", NULL, 10);
    /* ldmatrix.x1 / .x2 / .x2.trans: the interpreter and the C generator once disagreed on them */
    compare_file("tests/tile_golden/ldmatrix_x1x2.tile", NULL, 10);
    /* max / min with NaN, +-0 and +-inf: IEEE maximumNumber / minimumNumber */
    compare_file("tests/tile_golden/max_min_special.tile", NULL, 10);
    compare_file("tests/tile_golden/quadpairs.tile", NULL, 10);
    compare_file("tests/tile_golden/shuffle.tile", NULL, 10);
    compare_file("tests/tile_golden/shared_view.tile", NULL, 20);
    compare_file("tests/tile_golden/softmax_rows.tile", NULL, 13);
    compare_file("tests/tile_golden/tiny.tile", NULL, 10);
    /* random sizes break its preconditions (n <= N): test_sched_ops runs it */
    compare_file("tests/tile_golden/sched_ops.tile", " sched_ops?", 200);
}

/* The TC-lowering ops (iota, comparisons, mod, masked gather/scatter,
 * pow, erf, not/and/or, select, a float scalar parameter) against a plain
 * C reference: Y[f] = f % 3 == 0 ? -1.5 : erf(pow(X[j] * alpha, 2)) with
 * j = I[f, f % 3], X[j] taken as 0 when j is outside [0, n). */
static void test_sched_ops(void)
{
    char *text = read_file("tests/tile_golden/sched_ops.tile");
    tsl_arena *ar = arena_create();
    tile_module *m = text ? parse_text(ar, text) : NULL;
    for (int rep = 0; m && rep < 3; rep++) {
        int64_t n = rep == 0 ? 1 : test_rand_int(2, 300), sh2[2] = {n, 3};
        DLTensor *x = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n), *ix = tsl_tensor_alloc(TSL_DTYPE_I32, 2, sh2),
                 *y = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n);
        for (int64_t i = 0; i < n; i++) {
            ((float *)x->data)[i] = (float)test_rand_double(-1, 1);
            ((float *)y->data)[i] = NAN;
            for (int k = 0; k < 3; k++) ((int32_t *)ix->data)[i * 3 + k] = (int32_t)test_rand_int(-2, n + 2);
        }
        double alpha = test_rand_double(0.5, 2);
        tile_interp_arg args[5] = {{.name = "X", .t = x}, {.name = "I", .t = ix}, {.name = "Y", .t = y},
                                   {.name = "n", .ival = n}, {.name = "alpha"}};
        memcpy(&args[4].ival, &alpha, 8);
        tsl_diag d = {0};
        /* the interpreter on the same inputs (into y2) */
        DLTensor *y2 = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n);
        memcpy(y2->data, y->data, (size_t)n * 4);
        tile_interp_arg iargs[5];
        memcpy(iargs, args, sizeof iargs);
        iargs[2].t = y2;
        tsl_status ist = tile_interp_run(m->kernels[0], NULL, iargs, 5, NULL, &d);
        CHECK_MSG(ist == TSL_OK, "sched_ops on the interpreter: %s", sb_str(&d.msg));
        tsl_status st = drv_kernel_run(&drv_target_cpu, m, m->kernels[0], args, 5, NULL, &d);
        CHECK_MSG(st == TSL_OK, "sched_ops: %s", sb_str(&d.msg));
        for (int64_t f = 0; f < n && !st && !ist; f++)
            CHECK_CLOSE(((float *)y->data)[f], ((float *)y2->data)[f], 1e-6);
        tsl_tensor_free(y2);
        for (int64_t f = 0; f < n && !st; f++) {
            int32_t j = ((int32_t *)ix->data)[f * 3 + f % 3];
            float xv = j >= 0 && j < n ? ((float *)x->data)[j] : 0.0f;
            float want = f % 3 == 0 ? -1.5f : erff(powf(xv * (float)alpha, 2.0f));
            CHECK_CLOSE(((float *)y->data)[f], want, 1e-6);
        }
        diag_free(&d);
        tsl_tensor_free(x);
        tsl_tensor_free(ix);
        tsl_tensor_free(y);
    }
    /* an unmasked gather index out of range is a located run-time error */
    tile_module *g = parse_text(ar, "kernel g(X: global f32[N], J: global i32[32], Y: global f32[32]) grid(1) threads(32) {\n"
                                    "  j = load_global J[0] -> register i32[32] layout spatial(32)\n"
                                    "  x = gather X, j -> register f32[32] layout spatial(32)\n"
                                    "  store_global x -> Y[0]\n}\n");
    int64_t n = test_rand_int(1, 40), n32 = 32;
    DLTensor *x = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n), *jj = tsl_tensor_alloc(TSL_DTYPE_I32, 1, &n32),
             *y = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n32);
    memset(x->data, 0, (size_t)n * 4);
    for (int i = 0; i < 32; i++) ((int32_t *)jj->data)[i] = (int32_t)test_rand_int(0, n - 1);
    int bad = (int)test_rand_int(0, 31);
    ((int32_t *)jj->data)[bad] = (int32_t)(n + test_rand_int(0, 5));
    tile_interp_arg ga[3] = {{.name = "X", .t = x}, {.name = "J", .t = jj}, {.name = "Y", .t = y}};
    tsl_diag d = {0};
    tsl_status st = g ? drv_kernel_run(&drv_target_cpu, g, g->kernels[0], ga, 3, NULL, &d) : TSL_ERR_INTERNAL;
    char want[64];
    snprintf(want, sizeof want, "index %d in dim 0 is outside [0, %lld)", ((int32_t *)jj->data)[bad], (long long)n);
    CHECK_MSG(st == TSL_ERR_BOUNDS && strstr(sb_str(&d.msg), want) && strstr(sb_str(&d.msg), "gather of 'X'"),
              "status %d: %s", st, sb_str(&d.msg));
    diag_free(&d);
    tsl_tensor_free(x);
    tsl_tensor_free(jj);
    tsl_tensor_free(y);
    arena_free(ar);
    free(text);
}

/* Small programs whose every output element depends on the instruction
 * under test (the goldens reduce some of them away): each shuffle kind
 * with lanes in and out of range, broadcasts and reductions over
 * replicated and column layouts, integer rows, casts with rounding. */
static void test_instructions(void)
{
    static const char *const progs[] = {
        "kernel shuf(X: global f32[64], A: global f32[64], B: global f32[64], C: global f32[64], D: global f32[64], k: int) grid(1) threads(64) {\n"
        "  x = load_global X[0] -> register f32[64] layout spatial(64)\n"
        "  a = shuffle.xor x, k\n  b = shuffle.up x, k\n  c = shuffle.down x, k + 3\n  d = shuffle.idx x, k * 3\n"
        "  store_global a -> A[0]\n  store_global b -> B[0]\n  store_global c -> C[0]\n  store_global d -> D[0]\n}\n",
        "kernel red(X: global f32[M, 24], S: global f32[M], T: global f32[M, 24], U: global f32[B, 24]) grid(B) threads(32) {\n"
        "  x = load_global X[block_idx.x * 8, 0] -> register f32[8, 24] layout column_local(2, 3).spatial(4, 8).local(1, 1) fill 0.5\n"
        "  m = reduce.max x -> register f32[8] layout spatial(8).replicate(4) dim 1\n"
        "  n = reduce.min x -> register f32[1, 24] layout replicate(4).local(1, 3).spatial(1, 8) dim 0\n"
        "  s = reduce.sum x -> register f32[8] layout spatial(8).replicate(4) dim 1\n"
        "  t = add m, s\n"
        "  b = broadcast t -> register f32[8, 24] layout column_local(2, 3).spatial(4, 8).local(1, 1) dim 1\n"
        "  y = sub x, b\n"
        "  store_global t -> S[block_idx.x * 8]\n  store_global y -> T[block_idx.x * 8, 0]\n  store_global n -> U[block_idx.x, 0]\n}\n",
        "kernel ints(X: global i32[N], Y: global i8[N], Z: global u16[N], W: global f16[N], q: int) grid(cdiv(N, 96)) threads(32) {\n"
        "  x = load_global X[block_idx.x * 96] -> register i32[96] layout local(3).spatial(32)\n"
        "  a = mul x, x\n  b = sub a, q\n  c = max b, -7\n  e = cast c -> register i8[96] layout local(3).spatial(32)\n"
        "  f = cast x -> register u16[96] layout local(3).spatial(32)\n"
        "  g = cast x -> register f32[96] layout local(3).spatial(32)\n  h = mul g, 0.37\n"
        "  w = cast h -> register f16[96] layout local(3).spatial(32)\n"
        "  store_global e -> Y[block_idx.x * 96]\n  store_global f -> Z[block_idx.x * 96]\n  store_global w -> W[block_idx.x * 96]\n}\n",
        /* gathers: a run of consecutive last indices (the contiguous fast
         * path inside the tensor, the lane loop at the edge), a reversed
         * one (always the lane loop); a view sharing its source's
         * registers; select on floats with a bool condition; integer div
         * and mod of negative lanes by a scalar (the double quotient) */
        "kernel gth(A: global f32[M, N], S: global f32[G]) grid(cdiv(N, 64)) threads(16) {\n"
        "  flat = iota block_idx.x * 64 -> register i64[64] layout spatial(16).local(4) dim 0\n"
        "  live = lt flat, N\n"
        "  x = gather A, M - 1, flat -> register f32[64] layout spatial(16).local(4) mask live\n"
        "  nf = neg flat\n  rev = add nf, N - 1\n  ok = ge rev, 0\n  both = and live, ok\n"
        "  y = gather A, 0, rev -> register f32[64] layout spatial(16).local(4) mask both\n"
        "  xv = view x -> register f32[16, 4] layout spatial(16, 1).local(1, 4)\n"
        "  yv = view y -> register f32[16, 4] layout spatial(16, 1).local(1, 4)\n"
        "  s = add xv, yv\n"
        "  t = select both, y, 2.5\n"
        "  sf = view s -> register f32[64] layout spatial(16).local(4)\n"
        "  u = mul sf, t\n"
        "  dq = div nf, 3\n  mq = mod nf, 5\n  dm = add dq, mq\n"
        "  df = cast dm -> register f32[64] layout spatial(16).local(4)\n"
        "  w = add u, df\n"
        "  store_global w -> S[block_idx.x * 64]\n}\n",
    };
    for (size_t i = 0; i < TSL_COUNTOF(progs); i++) {
        tsl_arena *ar = arena_create();
        tile_module *m = parse_text(ar, progs[i]);
        for (int rep = 0; m && rep < 3; rep++) {
            char why[2048] = "";
            int r = compare(m, m->kernels[0], 300, rep == 0, why, sizeof why);
            CHECK_MSG(r == 1, "%s (rep %d): %s", m->kernels[0]->name, rep, why);
        }
        arena_free(ar);
    }
}

/* fma on every float dtype, bit for bit against the interpreter, on
 * test_fma_fill's inputs (random bits, ties, the double-rounding corner):
 * z = fma a, b, c and the in-place scalar form, n not a multiple of the
 * block's 96 (and n = 1). */
static void test_fma_bits(void)
{
    static const tsl_dtype dts[] = {TSL_DTYPE_F16, TSL_DTYPE_BF16, TSL_DTYPE_F32, TSL_DTYPE_F64};
    for (size_t di = 0; di < TSL_COUNTOF(dts); di++) {
        tsl_dtype dt = dts[di];
        tsl_arena *ar = arena_create();
        char *text = test_fma_program(dt);
        tile_module *m = text ? parse_text(ar, text) : NULL;
        for (int rep = 0; m && rep < 2; rep++) {
            int64_t n = rep ? 2000 + test_rand_int(1, 95) : 1;
            DLTensor *t[2][5];
            for (int k = 0; k < 2; k++)
                for (int j = 0; j < 5; j++) t[k][j] = tsl_tensor_alloc(dt, 1, &n);
            test_fma_fill(dt, t[0][0]->data, t[0][1]->data, t[0][2]->data, n);
            for (int j = 0; j < 5; j++) memcpy(t[1][j]->data, t[0][j]->data, (size_t)n * tsl_dtype_size(dt));
            tile_interp_arg a[2][5];
            for (int k = 0; k < 2; k++)
                for (int j = 0; j < 5; j++) a[k][j] = (tile_interp_arg){.name = m->kernels[0]->params[j]->name, .t = t[k][j]};
            tsl_diag d = {0};
            tsl_status st = tile_interp_run(m->kernels[0], NULL, a[0], 5, NULL, &d);
            CHECK_MSG(st == TSL_OK, "fma %s, interpreter: %s", dtype_info_of(dt)->tname, sb_str(&d.msg));
            if (!st) st = drv_kernel_run(&drv_target_cpu, m, m->kernels[0], a[1], 5, NULL, &d);
            CHECK_MSG(st == TSL_OK, "fma %s, C: %s", dtype_info_of(dt)->tname, sb_str(&d.msg));
            for (int j = 3; j < 5 && !st; j++) {
                int64_t i = test_fma_first_diff(dt, t[0][j]->data, t[1][j]->data, n);
                CHECK_MSG(i < 0, "fma %s, %s[%lld]: %a * %a + %a: interpreter %a, C %a", dtype_info_of(dt)->tname,
                          j == 3 ? "Z" : "W", (long long)i, at(t[0][0], i), j == 3 ? at(t[0][1], i) : dtype_round(dt, -0.3),
                          at(t[0][2], i), at(t[0][j], i), at(t[1][j], i));
            }
            diag_free(&d);
            for (int k = 0; k < 2; k++)
                for (int j = 0; j < 5; j++) tsl_tensor_free(t[k][j]);
        }
        free(text);
        arena_free(ar);
    }
}

/* Parse one kernel from text (the module lives in *ar). */
static tile_module *parse_text(tsl_arena *ar, const char *text)
{
    tsl_source src = {"test.tile", text};
    tsl_diag d = {0};
    tile_module *m = NULL;
    tsl_status st = tile_parse(ar, &src, &d, &m);
    CHECK_MSG(st == TSL_OK, "parse: %s", sb_str(&d.msg));
    diag_free(&d);
    return st ? NULL : m;
}

/* The emitted source of every example compiles with -Wall -Wextra -Werror. */
static void test_warning_free(void)
{
    const char *files[] = {"examples/tile/gemm.tile", "examples/tile/ldmatrix_move.tile",
                           "tests/tile_golden/softmax_rows.tile", "tests/tile_golden/elementwise.tile",
                           "tests/tile_golden/control.tile", "tests/tile_golden/shuffle.tile",
                           "tests/tile_golden/blocks_out.tile", "examples/tile/blocked_sum.tile"};
    char dir[] = "/tmp/tessel-cgc-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    for (size_t f = 0; f < TSL_COUNTOF(files); f++) {
        char *text = read_file(files[f]);
        if (!text) continue;
        tsl_arena *ar = arena_create();
        tile_module *m = parse_text(ar, text);
        strbuf sb = {0};
        tsl_diag d = {0};
        for (int i = 0; m && i < m->nkernels; i++) {
            sb.len = 0;
            if (sb.buf) sb.buf[0] = 0;
            tsl_status st = cg_c_emit(m, m->kernels[i], &sb, &d);
            /* strided_tiles decomposes into st.shared.v2, an atom neither back end runs */
            if (st == TSL_ERR_UNAVAILABLE && !strcmp(m->kernels[i]->name, "strided_tiles")) continue;
            CHECK_MSG(st == TSL_OK, "%s: %s", files[f], sb_str(&d.msg));
            if (st) continue;
            CHECK(strstr(sb_str(&sb), "/* ") != NULL);
            char path[256], cmd[1024];
            snprintf(path, sizeof path, "%s/k.c", dir);
            FILE *fp = fopen(path, "w");
            CHECK(fp != NULL);
            if (!fp) continue;
            fputs(sb_str(&sb), fp);
            fclose(fp);
            /* cc, and clang too when there is one */
            snprintf(cmd, sizeof cmd,
                     "cc -std=c11 -Wall -Wextra -Werror -fsyntax-only %s 2>%s/err.txt && "
                     "{ ! command -v clang >/dev/null || clang -std=c11 -Wall -Wextra -Werror -fsyntax-only %s "
                     "2>%s/err.txt; }",
                     path, dir, path, dir);
            int rc = system(cmd);
            if (rc) {
                snprintf(path, sizeof path, "%s/err.txt", dir);
                size_t n;
                char *err = file_read_all(path, &n);
                CHECK_MSG(0, "%s kernel %s: warnings or errors:\n%.2000s", files[f], m->kernels[i]->name,
                          err ? err : "?");
                free(err);
            }
        }
        sb_free(&sb);
        diag_free(&d);
        arena_free(ar);
        free(text);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* A compile failure is TSL_ERR_COMPILE carrying the compiler's message. */
static void test_compile_error(void)
{
    tsl_arena *ar = arena_create();
    tile_module *m = parse_text(ar, "kernel k(X: global f32[N]) grid(1) threads(32) {\n"
                                    "  x = load_global X[0] -> register f32[32] layout spatial(32)\n"
                                    "  store_global x -> X[0]\n}\n");
    strbuf sb = {0};
    tsl_diag d = {0};
    CHECK(m && cg_c_emit(m, m->kernels[0], &sb, &d) == TSL_OK);
    /* break the generated source the way a generator bug would */
    char *bad = malloc(sb.len + 64);
    char *at = strstr(sb_str(&sb), "return 0;\n}");
    CHECK(at != NULL);
    if (at) {
        size_t pre = (size_t)(at - sb.buf);
        memcpy(bad, sb.buf, pre);
        sprintf(bad + pre, "undeclared_%llu = 1;\n%s", (unsigned long long)test_rand(), at);
        rt_cpu_module *mod = NULL;
        tsl_status st = rt_cpu_compile(bad, "k.c", &mod, &d);
        CHECK_EQ_INT(st, TSL_ERR_COMPILE);
        CHECK_MSG(strstr(sb_str(&d.msg), "undeclared_") != NULL, "message: %s", sb_str(&d.msg));
        rt_cpu_module_free(mod);
    }
    free(bad);
    sb_free(&sb);
    diag_free(&d);
    arena_free(ar);
}

/* A grid with no blocks launches nothing: the output stays poisoned. */
static void test_zero_grid(void)
{
    tsl_arena *ar = arena_create();
    tile_module *m = parse_text(ar, "kernel z(X: global f32[N], Y: global f32[32]) grid(N) threads(32) {\n"
                                    "  x = load_global X[0] -> register f32[32] layout spatial(32) fill 1.0\n"
                                    "  store_global x -> Y[0]\n}\n");
    int64_t n0 = 0, n32 = 32;
    DLTensor *x = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n0), *y = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n32);
    for (int i = 0; i < 32; i++) ((float *)y->data)[i] = NAN;
    tile_interp_arg args[2] = {{.name = "X", .t = x}, {.name = "Y", .t = y}};
    tsl_diag d = {0};
    CHECK(m && drv_kernel_run(&drv_target_cpu, m, m->kernels[0], args, 2, NULL, &d) == TSL_OK);
    for (int i = 0; i < 32; i++) CHECK(isnan(((float *)y->data)[i]));
    /* one block: the fill value everywhere */
    int64_t n1 = 1;
    tsl_tensor_free(x);
    x = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n1);
    ((float *)x->data)[0] = (float)test_rand_double(2, 3);
    args[0].t = x;
    CHECK(m && drv_kernel_run(&drv_target_cpu, m, m->kernels[0], args, 2, NULL, &d) == TSL_OK);
    CHECK(((float *)y->data)[0] == ((float *)x->data)[0]);
    for (int i = 1; i < 32; i++) CHECK(((float *)y->data)[i] == 1.0f);
    tsl_tensor_free(x);
    tsl_tensor_free(y);
    diag_free(&d);
    arena_free(ar);
}

/* Run-time errors: an out-of-shape shared access and a division by zero
 * name the instruction and the block, as the interpreter does. */
static void test_runtime_errors(void)
{
    tsl_arena *ar = arena_create();
    tile_module *m = parse_text(ar, "kernel e(X: global f32[N], n: int) grid(2) threads(32) {\n"
                                    "  s = alloc shared f32[32]\n"
                                    "  x = load_global X[0] -> register f32[32] layout spatial(32)\n"
                                    "  store_shared x -> s[block_idx.x * n]\n"
                                    "  let q = 5 / (n - 3)\n"
                                    "}\n");
    int64_t n = 40;
    DLTensor *x = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n);
    memset(x->data, 0, 160);
    tile_interp_arg args[2] = {{.name = "X", .t = x}, {.name = "n", .ival = 1}};
    tsl_diag d = {0};
    tsl_status st = m ? drv_kernel_run(&drv_target_cpu, m, m->kernels[0], args, 2, NULL, &d) : TSL_ERR_INTERNAL;
    CHECK_MSG(st == TSL_ERR_BOUNDS && strstr(sb_str(&d.msg), "store_shared") && strstr(sb_str(&d.msg), "block 1"),
              "status %d: %s", st, sb_str(&d.msg));
    diag_reset(&d);
    /* block 0 divides by zero before block 1 writes out of shape: the
     * lowest failing block is reported, as the interpreter's order gives */
    args[1].ival = 3;
    st = m ? drv_kernel_run(&drv_target_cpu, m, m->kernels[0], args, 2, NULL, &d) : TSL_ERR_INTERNAL;
    CHECK_MSG(st == TSL_ERR_RUNTIME && strstr(sb_str(&d.msg), "block 0"), "status %d: %s", st, sb_str(&d.msg));
    diag_reset(&d);
    args[1].ival = 0;
    st = m ? drv_kernel_run(&drv_target_cpu, m, m->kernels[0], args, 2, NULL, &d) : TSL_ERR_INTERNAL;
    CHECK_MSG(st == TSL_OK, "status %d: %s", st, sb_str(&d.msg));
    tsl_tensor_free(x);
    diag_free(&d);
    arena_free(ar);
    /* division by zero */
    ar = arena_create();
    m = parse_text(ar, "kernel e(n: int) grid(1) threads(1) {\n  let q = 5 / (n - 3)\n}\n");
    tile_interp_arg a1 = {.name = "n", .ival = 3};
    st = m ? drv_kernel_run(&drv_target_cpu, m, m->kernels[0], &a1, 1, NULL, &d) : TSL_ERR_INTERNAL;
    CHECK_MSG(st == TSL_ERR_RUNTIME && strstr(sb_str(&d.msg), "division by zero"), "status %d: %s", st,
              sb_str(&d.msg));
    diag_free(&d);
    arena_free(ar);
}

/* A load_global that nothing writes reads the global run in place (its
 * register name points there, no copy) and its own storage past the
 * tensor's end; a kernel that also stores to the tensor keeps the copy.
 * Inside `for i`, A[i, ...] prefetches the run of a later row. */
static void test_load_by_ref(void)
{
    tsl_arena *ar = arena_create();
    tile_module *m = parse_text(ar, "kernel k(X: global f32[N], Y: global f32[N]) grid(cdiv(N, 32)) threads(32) {\n"
                                    "  x = load_global X[block_idx.x * 32] -> register f32[32] layout spatial(32)\n"
                                    "  v = view x -> register f32[32] layout spatial(32)\n"
                                    "  y = add v, x\n"
                                    "  store_global y -> Y[block_idx.x * 32]\n}\n");
    strbuf sb = {0};
    tsl_diag d = {0};
    CHECK(m && cg_c_emit(m, m->kernels[0], &sb, &d) == TSL_OK);
    CHECK_MSG(strstr(sb_str(&sb), " = gp;") != NULL, "%s", sb_str(&sb));
    int64_t n = 40; /* one whole run, one partial */
    DLTensor *x = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n), *y = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n);
    for (int i = 0; i < n; i++) ((float *)x->data)[i] = (float)test_rand_double(-4, 4);
    tile_interp_arg args[2] = {{.name = "X", .t = x}, {.name = "Y", .t = y}};
    CHECK(m && drv_kernel_run(&drv_target_cpu, m, m->kernels[0], args, 2, NULL, &d) == TSL_OK);
    for (int i = 0; i < n; i++) CHECK(((float *)y->data)[i] == 2 * ((float *)x->data)[i]);
    CHECK(strstr(sb_str(&sb), "TSL_PREFETCH((") == NULL); /* not in a loop over rows */
    sb_free(&sb);
    /* a column sum: row i's run inside `for i` prefetches a later row's */
    tile_module *cs = parse_text(ar, "kernel k(A: global f32[M, N], S: global f32[N]) grid(1) threads(32) {\n"
                                     "  acc = alloc register f32[32] layout spatial(32) init 0\n"
                                     "  for i in 0 : M {\n"
                                     "    x = load_global A[i, 0] -> register f32[32] layout spatial(32)\n"
                                     "    add acc, x -> acc\n"
                                     "  }\n"
                                     "  store_global acc -> S[0]\n}\n");
    CHECK(cs && cg_c_emit(cs, cs->kernels[0], &sb, &d) == TSL_OK);
    CHECK_MSG(strstr(sb_str(&sb), "TSL_PREFETCH((") != NULL, "%s", sb_str(&sb));
    int64_t sh[2] = {7, 32};
    DLTensor *a = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sh), *sum = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &sh[1]);
    for (int i = 0; i < 7 * 32; i++) ((float *)a->data)[i] = (float)(i % 5);
    tile_interp_arg cargs[2] = {{.name = "A", .t = a}, {.name = "S", .t = sum}};
    CHECK(cs && drv_kernel_run(&drv_target_cpu, cs, cs->kernels[0], cargs, 2, NULL, &d) == TSL_OK);
    for (int j = 0; j < 32; j++) {
        float want = 0;
        for (int i = 0; i < 7; i++) want += (float)((i * 32 + j) % 5);
        CHECK(((float *)sum->data)[j] == want);
    }
    tsl_tensor_free(a);
    tsl_tensor_free(sum);
    sb_free(&sb);
    tile_module *w = parse_text(ar, "kernel k(X: global f32[N]) grid(1) threads(32) {\n"
                                    "  x = load_global X[0] -> register f32[32] layout spatial(32)\n"
                                    "  store_global x -> X[1]\n"
                                    "  y = add x, x\n"
                                    "  store_global y -> X[0]\n}\n");
    CHECK(w && cg_c_emit(w, w->kernels[0], &sb, &d) == TSL_OK);
    CHECK_MSG(strstr(sb_str(&sb), " = gp;") == NULL, "%s", sb_str(&sb));
    sb_free(&sb);
    tsl_tensor_free(x);
    tsl_tensor_free(y);
    diag_free(&d);
    arena_free(ar);
}

TEST_SUITE(codegen_c) = {
    {"examples", test_examples},
    {"golden", test_golden},
    {"sched_ops", test_sched_ops},
    {"instructions", test_instructions},
    {"fma_bits", test_fma_bits},
    {"warning_free", test_warning_free},
    {"compile_error", test_compile_error},
    {"zero_grid", test_zero_grid},
    {"runtime_errors", test_runtime_errors},
    {"load_by_ref", test_load_by_ref},
    {0},
};
