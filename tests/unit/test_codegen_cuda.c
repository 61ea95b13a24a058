/* test_codegen_cuda.c — the CUDA generator (src/codegen/cuda*.c).
 *
 * Every kernel of examples/tile/ and tests/tile_golden/ that the tile
 * interpreter runs: the generated CUDA compiles with NVRTC for sm_80 and
 * sm_90a with no spills and no stack frame (ptxas report). With a GPU
 * (rt_cuda_open succeeds) each also runs on random data — sizes 1 and
 * sizes that are no tile multiple, outputs poisoned with NaN first — and
 * is compared with the interpreter, then timed (events, median of 10);
 * the fp16 GEMM also runs at 4096^3 and prints its TFLOP/s. fma is
 * compared bit for bit, in the emulation and on a GPU, and its PTX
 * checked. Without NVRTC or without a GPU those parts print "skipped: ..."
 * and pass. */

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fma_cases.h"
#include "../sched_runners.h"
#include "../test.h"
#include "codegen/cuda.h"
#include "driver/driver.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "sched/sched.h"
#include "target/target.h"
#include "runtime/runtime.h"
#include "tile/interp.h"
#include "tile/tile.h"

#define MAXP 16

static int have_nvrtc(void)
{
    tsl_diag d = {0};
    int ok = rt_cuda_nvrtc_available(&d) == TSL_OK;
    if (!ok) printf("    skipped: no NVRTC (%s)\n", sb_str(&d.msg));
    diag_free(&d);
    return ok;
}

static int gpu_state = -1; /* -1 unknown, 0 none, 1 present */

static int have_gpu(void)
{
    if (gpu_state < 0) {
        tsl_diag d = {0};
        rt_cuda_device *dev = NULL;
        gpu_state = rt_cuda_open(&dev, &d) == TSL_OK;
        if (gpu_state) printf("    GPU: %s (%s)\n", rt_cuda_device_info(dev)->name, rt_cuda_device_info(dev)->arch);
        rt_cuda_close(dev);
        diag_free(&d);
    }
    return gpu_state;
}

/* ---- arguments ------------------------------------------------------------------------ */

typedef struct run_set {
    tile_interp_arg args[MAXP];
    DLTensor *t[MAXP];
    int n;
} run_set;

static void set_free(run_set *r)
{
    for (int i = 0; i < r->n; i++) tsl_tensor_free(r->t[i]);
    memset(r, 0, sizeof *r);
}

static int is_output(const tile_kernel *k, const tile_value *v)
{
    const tile_value *outs[MAXP];
    int n = tile_interp_outputs(k, outs, MAXP);
    for (int i = 0; i < n; i++)
        if (outs[i] == v) return 1;
    return 0;
}

static int64_t sym_value(const tile_kernel *k, const tile_value *s, const int64_t *symv)
{
    for (int i = 0; i < k->nsyms; i++)
        if (k->syms[i] == s) return symv[i];
    return 1;
}

/* Random inputs (never all zeros), outputs poisoned (NaN for floats). */
static int make_set(const tile_kernel *k, const int64_t *symv, run_set *r)
{
    memset(r, 0, sizeof *r);
    for (int p = 0; p < k->nparams && p < MAXP; p++) {
        const tile_value *v = k->params[p];
        r->args[p].name = v->name;
        r->n = p + 1;
        if (v->kind == TILE_V_SCALAR) {
            if (tile_value_is_typed_scalar(v) && v->type.dt.kind == TILE_DT_FLOAT)
                r->args[p] = tile_interp_arg_float(v->name, test_rand_double(-2, 2));
            else
                r->args[p].ival = test_rand_int(1, 9);
            continue;
        }
        tsl_dtype dt;
        if (tile_dtype_to_tsl(v->type.dt, &dt)) return 0;
        int64_t shape[8];
        for (int i = 0; i < v->type.rank; i++) {
            int64_t x;
            if (tile_expr_const(v->type.dims[i], &x)) shape[i] = x;
            else if (v->type.dims[i]->kind == TILE_E_VALUE) shape[i] = sym_value(k, v->type.dims[i]->v, symv);
            else return 0;
        }
        DLTensor *t = tsl_tensor_alloc(dt, v->type.rank, shape);
        if (!t) return 0;
        r->t[p] = t;
        r->args[p].t = t;
        int64_t n = 1;
        for (int i = 0; i < v->type.rank; i++) n *= shape[i];
        size_t es = tsl_dtype_size(dt);
        int out = is_output(k, v);
        for (int64_t i = 0; i < n; i++) {
            double x = dt == TSL_DTYPE_BOOL ? (double)test_rand_int(0, 1)
                       : dtype_info_of(dt)->is_float ? test_rand_double(-1, 1)
                                                     : (double)test_rand_int(1, 9);
            if (out && dtype_info_of(dt)->is_float) x = NAN;
            dtype_store(dt, (char *)t->data + i * (int64_t)es, x);
        }
    }
    return 1;
}

static int copy_set(const tile_kernel *k, const run_set *a, run_set *b)
{
    *b = *a;
    for (int p = 0; p < a->n; p++) {
        if (!a->t[p]) continue;
        tsl_dtype dt;
        tsl_dtype_from_dlpack(a->t[p]->dtype, &dt);
        b->t[p] = tsl_tensor_alloc(dt, a->t[p]->ndim, a->t[p]->shape);
        if (!b->t[p]) return 0;
        int64_t n = 1;
        for (int i = 0; i < a->t[p]->ndim; i++) n *= a->t[p]->shape[i];
        memcpy(b->t[p]->data, a->t[p]->data, (size_t)n * tsl_dtype_size(dt));
        b->args[p].t = b->t[p];
    }
    (void)k;
    return 1;
}

/* Largest relative error of got vs want over the written tensors; NaN
 * equals NaN, an infinity only itself (a relative tolerance of an infinity
 * is infinite). *bad gets the worst element's description. */
static int compare_sets(const tile_kernel *k, const run_set *want, const run_set *got, char *bad, size_t nbad)
{
    int ok = 1;
    for (int p = 0; p < want->n; p++) {
        if (!want->t[p] || !is_output(k, k->params[p])) continue;
        tsl_dtype dt;
        tsl_dtype_from_dlpack(want->t[p]->dtype, &dt);
        double tol = dt == TSL_DTYPE_F16 ? 2e-3 : dt == TSL_DTYPE_BF16 ? 1e-2 : dt == TSL_DTYPE_F32 ? 1e-5
                     : dt == TSL_DTYPE_F64                               ? 1e-12
                                                                         : 0;
        int64_t n = 1;
        for (int i = 0; i < want->t[p]->ndim; i++) n *= want->t[p]->shape[i];
        size_t es = tsl_dtype_size(dt);
        for (int64_t i = 0; i < n; i++) {
            double w = dtype_load(dt, (char *)want->t[p]->data + i * (int64_t)es);
            double g = dtype_load(dt, (char *)got->t[p]->data + i * (int64_t)es);
            if (isnan(w) && isnan(g)) continue;
            if (isnan(w) != isnan(g) || ((isinf(w) || isinf(g)) && w != g) || fabs(w - g) > tol * (1 + fabs(w))) {
                if (ok) snprintf(bad, nbad, "%s[%lld]: GPU %.9g, interpreter %.9g", k->params[p]->name, (long long)i, g, w);
                ok = 0;
            }
        }
    }
    return ok;
}

/* ---- the programs ------------------------------------------------------------------------ */

typedef struct prog {
    char *path;
    char *text;
    tsl_arena *ar;
    tile_module *m;
} prog;

static int load_prog(const char *path, prog *p)
{
    memset(p, 0, sizeof *p);
    p->path = strdup(path);
    p->text = file_read_all(path, NULL);
    if (!p->text) return 0;
    p->ar = arena_create();
    tsl_source src = {path, p->text};
    tsl_diag d = {0};
    tsl_status st = tile_parse(p->ar, &src, &d, &p->m);
    if (!st) st = tile_verify(p->m, &src, &d);
    CHECK_MSG(st == TSL_OK, "%s: %s", path, sb_str(&d.msg));
    diag_free(&d);
    return st == TSL_OK;
}

static void free_prog(prog *p)
{
    arena_free(p->ar);
    free(p->text);
    free(p->path);
}

/* Every .tile file of the two folders. */
static int list_programs(char ***out)
{
    static const char *const dirs[] = {"examples/tile", "tests/tile_golden"};
    char **files = NULL;
    int n = 0;
    for (int i = 0; i < 2; i++) {
        char *dir = NULL;
        if (asprintf(&dir, "%s/%s", test_root(), dirs[i]) < 0) continue;
        DIR *dp = opendir(dir);
        struct dirent *e;
        while (dp && (e = readdir(dp))) {
            size_t l = strlen(e->d_name);
            if (l < 6 || strcmp(e->d_name + l - 5, ".tile")) continue;
            files = realloc(files, sizeof *files * (size_t)(n + 1));
            if (asprintf(&files[n], "%s/%s", dir, e->d_name) < 0) continue;
            n++;
        }
        if (dp) closedir(dp);
        free(dir);
    }
    *out = files;
    return n;
}

/* Run the interpreter on a copy; 1 when it runs. */
static int interp_runs(const prog *p, const tile_kernel *k, run_set *set, char **msg)
{
    tsl_source src = {p->path, p->text};
    tsl_diag d = {0};
    tile_interp_opts o = {0};
    FILE *devnull = fopen("/dev/null", "w");
    o.print_to = devnull;
    tsl_status st = tile_interp_run(k, &src, set->args, set->n, &o, &d);
    if (devnull) fclose(devnull);
    if (msg) *msg = strdup(sb_str(&d.msg));
    diag_free(&d);
    return st == TSL_OK;
}

static void pick_sizes(const tile_kernel *k, int ones, int64_t *symv)
{
    static const int64_t odd[] = {17, 23, 29, 37, 41, 47, 53, 61, 67, 71};
    for (int i = 0; i < k->nsyms; i++) symv[i] = ones ? 1 : odd[test_rand_int(0, 9)];
}

/* ---- NVRTC: every program compiles for sm_80 and sm_90a without spills ---------------- */

static void test_compile_all(void)
{
    if (!have_nvrtc()) return;
    char **files = NULL;
    int nf = list_programs(&files);
    CHECK(nf >= 10);
    int compiled = 0;
    for (int f = 0; f < nf; f++) {
        prog p;
        if (!load_prog(files[f], &p)) {
            free_prog(&p);
            continue;
        }
        const char *base = strrchr(files[f], '/') + 1;
        for (int ki = 0; ki < p.m->nkernels; ki++) {
            const tile_kernel *k = p.m->kernels[ki];
            int64_t symv[16] = {0};
            pick_sizes(k, 0, symv);
            run_set set;
            char *msg = NULL;
            int runs = make_set(k, symv, &set) && interp_runs(&p, k, &set, &msg);
            set_free(&set);
            if (!runs) {
                printf("    %s:%s: skipped (the interpreter does not run it: %.120s)\n", base, k->name,
                       msg ? msg : "unsupported dtype");
                free(msg);
                continue;
            }
            free(msg);
            strbuf src = {0};
            tsl_diag d = {0};
            tsl_status st = cg_cuda_emit(p.m, k, &src, &d);
            if (st && (strstr(sb_str(&d.msg), "pipeline expansion") || strstr(sb_str(&d.msg), "stores of them are not generated"))) {
                /* src/tile/pipeline.c's limits, and packed stores (the
                 * generator reads packed memory; plans store carriers) */
                printf("    %s:%s: skipped (%.160s)\n", base, k->name, sb_str(&d.msg));
                diag_free(&d);
                sb_free(&src);
                continue;
            }
            CHECK_MSG(st == TSL_OK, "%s:%s: emit: %s", base, k->name, sb_str(&d.msg));
            /* Hopper kernels (warpgroups, TMA, wgmma) exist for sm_90a only */
            static const char *const archs[] = {"sm_80", "sm_90a"};
            /* a Hopper kernel, or one naming an sm_90 row (stmatrix), is compiled for sm_90a only */
            for (int a = cg_cuda_select_target(k)->sm >= 90; st == TSL_OK && a < 2; a++) {
                rt_cuda_options o = {0};
                o.ptxas_verbose = 1;
                o.name = k->name;
                void *cubin = NULL;
                size_t n = 0;
                char *log = NULL;
                diag_reset(&d);
                tsl_status cs = rt_cuda_compile(sb_str(&src), archs[a], &o, &cubin, &n, &log, &d);
                CHECK_MSG(cs == TSL_OK, "%s:%s: NVRTC %s: %s", base, k->name, archs[a], sb_str(&d.msg));
                if (cs == TSL_OK) {
                    rt_ptxas_report r;
                    rt_cuda_ptxas_parse(log, &r);
                    CHECK_MSG(r.found >= 1, "%s:%s: no ptxas report in the log", base, k->name);
                    /* printf's argument buffer is a stack frame: kernels that print may have one */
                    int prints = strstr(sb_str(&src), "printf(") != NULL;
                    CHECK_MSG(r.spill_stores == 0 && r.spill_loads == 0 && (r.stack_frame == 0 || prints),
                              "%s:%s %s: spills %d/%d bytes, stack frame %d bytes", base, k->name, archs[a],
                              r.spill_stores, r.spill_loads, r.stack_frame);
                    printf("    %s:%s %s: %d registers, spills %d/%d, stack %d\n", base, k->name, archs[a],
                           r.registers, r.spill_stores, r.spill_loads, r.stack_frame);
                    compiled++;
                }
                free(cubin);
                free(log);
            }
            diag_free(&d);
            sb_free(&src);
        }
        free_prog(&p);
    }
    CHECK(compiled >= 2 * 10);
    for (int f = 0; f < nf; f++) free(files[f]);
    free(files);
}

/* ---- GPU: the same answers as the interpreter ------------------------------------------ */

/* Every kernel of one .tile file on the GPU against the interpreter (sizes
 * 1 and odd, 32- and 64-bit indexing); the number of compared runs. */
static int gpu_compare_file(const char *path)
{
    int compared = 0;
    prog p;
    if (!load_prog(path, &p)) {
        free_prog(&p);
        return 0;
    }
    const char *base = strrchr(path, '/') + 1;
    for (int ki = 0; ki < p.m->nkernels; ki++) {
        const tile_kernel *k = p.m->kernels[ki];
        for (int round = 0; round < 3; round++) {
            int64_t symv[16] = {0};
            pick_sizes(k, round == 0, symv);
            run_set want, got;
            if (!make_set(k, symv, &want)) break;
            if (!copy_set(k, &want, &got) || !interp_runs(&p, k, &want, NULL)) {
                set_free(&want);
                for (int i = 0; i < got.n; i++) tsl_tensor_free(got.t[i]);
                break;
            }
            tsl_diag d = {0};
            drv_kernel_opts o = {0};
            o.reps = round == 2 ? 10 : 0;
            o.force_wide = round == 1;
            /* device printf of kernels that `print` would flood the log */
            fflush(stdout);
            int saved = dup(1), null = open("/dev/null", O_WRONLY);
            if (null >= 0) dup2(null, 1);
            tsl_status st = drv_kernel_run(&drv_target_cuda, p.m, k, got.args, got.n, &o, &d);
            fflush(stdout);
            if (saved >= 0) dup2(saved, 1), close(saved);
            if (null >= 0) close(null);
            if (st && (strstr(sb_str(&d.msg), "pipeline expansion") || strstr(sb_str(&d.msg), "stores of them are not generated"))) {
                printf("    %s:%s: skipped (%.160s)\n", base, k->name, sb_str(&d.msg));
                diag_free(&d);
                set_free(&want);
                set_free(&got);
                break;
            }
            CHECK_MSG(st == TSL_OK, "%s:%s: GPU run: %s", base, k->name, sb_str(&d.msg));
            char bad[256] = "";
            if (st == TSL_OK)
                CHECK_MSG(compare_sets(k, &want, &got, bad, sizeof bad), "%s:%s (sizes %s, i%s): %s", base,
                          k->name, round == 0 ? "1" : "odd", o.used_wide ? "64" : "32", bad);
            if (st == TSL_OK && round == 2)
                printf("    time %s:%s: %.4f ms (median of 10)\n", base, k->name, o.median_ms);
            compared += st == TSL_OK;
            diag_free(&d);
            set_free(&want);
            set_free(&got);
        }
    }
    free_prog(&p);
    return compared;
}

static void test_gpu_matches_interp(void)
{
    if (!have_nvrtc() || !have_gpu()) {
        printf("    skipped: no GPU\n");
        return;
    }
    char **files = NULL;
    int nf = list_programs(&files);
    for (int f = 0; f < nf; f++) gpu_compare_file(files[f]);
    for (int f = 0; f < nf; f++) free(files[f]);
    free(files);
}

/* The goldens of fixed wrong answers alone (bench/gpu.sh's regress-gpu
 * step): f64 math in double, abs of the int8/int16 minimum, cdiv of
 * every sign (once miscompiled by ptxas inside a three-way minimum). */
static void test_gpu_regress_goldens(void)
{
    if (!have_nvrtc() || !have_gpu()) {
        printf("    skipped: no GPU\n");
        return;
    }
    static const char *const files[] = {"f64_math.tile", "abs_narrow.tile", "cdiv_signs.tile"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *path = NULL;
        CHECK(asprintf(&path, "%s/tests/tile_golden/%s", test_root(), files[i]) > 0);
        int n = path ? gpu_compare_file(path) : 0;
        CHECK_MSG(n == 3, "%s: %d of 3 GPU runs compared", files[i], n);
        printf("    %s: %d GPU runs compared with the interpreter\n", files[i], n);
        free(path);
    }
}

/* gemm.tile at 4096^3 fp16: sampled elements against a double dot product,
 * then the time and TFLOP/s. */
static void test_gpu_gemm_4096(void)
{
    if (!have_nvrtc() || !have_gpu()) {
        printf("    skipped: no GPU\n");
        return;
    }
    static const char *const names[] = {"examples/tile/gemm.tile", "examples/tile/gemm_pipelined.tile"};
    for (int g = 0; g < 2; g++) {
        char *path = NULL;
        if (asprintf(&path, "%s/%s", test_root(), names[g]) < 0) return;
        prog p;
        if (!load_prog(path, &p)) {
            free_prog(&p);
            free(path);
            continue;
        }
        const tile_kernel *k = p.m->kernels[0];
        const int64_t S = 4096;
        int64_t sa[2] = {S, S};
        DLTensor *a = tsl_tensor_alloc(TSL_DTYPE_F16, 2, sa), *b = tsl_tensor_alloc(TSL_DTYPE_F16, 2, sa),
                 *c = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sa);
        uint16_t *ah = a->data, *bh = b->data;
        float *ch = c->data;
        for (int64_t i = 0; i < S * S; i++) {
            ah[i] = f32_to_f16((float)test_rand_double(-1, 1));
            bh[i] = f32_to_f16((float)test_rand_double(-1, 1));
            ch[i] = NAN;
        }
        tile_interp_arg args[3] = {{.name = k->params[0]->name, .t = a},
                                   {.name = k->params[1]->name, .t = b},
                                   {.name = k->params[2]->name, .t = c}};
        tsl_diag d = {0};
        drv_kernel_opts o = {0};
        o.reps = 10;
        tsl_status st = drv_kernel_run(&drv_target_cuda, p.m, k, args, 3, &o, &d);
        CHECK_MSG(st == TSL_OK, "%s 4096^3: %s", names[g], sb_str(&d.msg));
        if (st == TSL_OK) {
            int bad = 0;
            for (int s = 0; s < 64; s++) {
                int64_t i = test_rand_int(0, S - 1), j = test_rand_int(0, S - 1);
                double ref = 0;
                for (int64_t kk = 0; kk < S; kk++) ref += (double)f16_to_f32(ah[i * S + kk]) * f16_to_f32(bh[kk * S + j]);
                if (!(fabs(ch[i * S + j] - ref) <= 1e-3 * (1 + fabs(ref)))) {
                    if (!bad) CHECK_MSG(0, "%s 4096^3: C[%lld,%lld] = %g, want %g", names[g], (long long)i, (long long)j,
                                        ch[i * S + j], ref);
                    bad = 1;
                }
            }
            double tflops = 2.0 * S * S * S / (o.median_ms * 1e-3) / 1e12;
            printf("    time %s fp16 4096x4096x4096: %.3f ms (median of 10), %.1f TFLOP/s\n", names[g], o.median_ms,
                   tflops);
        }
        diag_free(&d);
        tsl_tensor_free(a);
        tsl_tensor_free(b);
        tsl_tensor_free(c);
        free_prog(&p);
        free(path);
    }
}


/* ---- host emulation: the generated kernels' logic against the interpreter ---------------- */

typedef int (*emu_launch_fn)(void (*)(void **), void **, const unsigned *, unsigned, unsigned);

typedef struct emu_lookup {
    const tile_kernel *k;
    const int64_t *symv;
    const run_set *set;
} emu_lookup;

static int64_t emu_value(void *ctx, const tile_value *v, int *ok)
{
    const emu_lookup *e = ctx;
    for (int i = 0; i < e->k->nsyms; i++)
        if (e->k->syms[i] == v) return e->symv[i];
    for (int p = 0; p < e->set->n; p++)
        if (!e->set->t[p] && !strcmp(e->set->args[p].name, v->name)) return e->set->args[p].ival;
    *ok = 0;
    return 0;
}

/* Run kernel k in the emulation on `set` (outputs written in place). */
static int emu_run(void *h, const tile_module *m, const tile_kernel *k, const int64_t *symv, run_set *set)
{
    char entry[160], sym[200];
    cg_cuda_entry_name(k->name, entry, sizeof entry);
    snprintf(sym, sizeof sym, "%s_emu", entry);
    void (*fn)(void **) = (void (*)(void **))dlsym(h, sym);
    emu_launch_fn launch = (emu_launch_fn)dlsym(h, "tsl_emu_launch");
    if (!fn || !launch) return 0;
    long long vals[256];
    void *params[256];
    int nv = 0;
    for (int p = 0; p < k->nparams; p++) {
        const tile_value *v = k->params[p];
        if (v->kind == TILE_V_SCALAR) {
            vals[nv] = set->args[p].ival;
            params[nv] = &vals[nv];
            nv++;
            continue;
        }
        const DLTensor *t = set->t[p];
        vals[nv] = (long long)(uintptr_t)t->data;
        params[nv] = &vals[nv];
        nv++;
        int64_t acc = 1;
        for (int i = t->ndim - 1; i >= 0; i--) acc *= t->shape[i];
        int64_t stride = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            vals[nv + 2 * i] = t->shape[i];
            vals[nv + 2 * i + 1] = stride;
            stride *= t->shape[i];
        }
        for (int i = 0; i < 2 * t->ndim; i++) params[nv + i] = &vals[nv + i];
        nv += 2 * t->ndim;
    }
    for (int s = 0; s < k->nsyms; s++) {
        vals[nv] = symv[s];
        params[nv] = &vals[nv];
        nv++;
    }
    unsigned long long err[8] = {0};
    vals[nv] = (long long)(uintptr_t)err;
    params[nv] = &vals[nv];
    nv++;
    emu_lookup el = {k, symv, set};
    unsigned grid[3] = {1, 1, 1};
    for (int i = 0; i < k->ngrid; i++) {
        int ok = 1;
        int64_t g = tile_expr_eval(k->grid[i], emu_value, &el, NULL, -1, &ok);
        if (!ok || g < 0) return 0;
        grid[i] = (unsigned)g;
    }
    if (!grid[0] || !grid[1] || !grid[2]) return 1;
    tsl_diag d = {0};
    int64_t smem = cg_cuda_smem_bytes(m, k, &d);
    diag_free(&d);
    if (smem < 0) return 0;
    /* kernels that `print` would flood the test log: stdout to /dev/null meanwhile */
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
    int rc = launch(fn, params, grid, (unsigned)k->threads, (unsigned)smem);
    fflush(stdout);
    if (saved >= 0) dup2(saved, 1);
    if (saved >= 0) close(saved);
    if (null >= 0) close(null);
    return rc == 0 && !err[0];
}

static void test_emulated_matches_interp(void)
{
    if (!test_have_cxx()) return;
    char **files = NULL;
    int nf = list_programs(&files);
    int compared = 0;
    for (int f = 0; f < nf; f++) {
        prog p;
        if (!load_prog(files[f], &p)) {
            free_prog(&p);
            continue;
        }
        const char *base = strrchr(files[f], '/') + 1;
        for (int ki = 0; ki < p.m->nkernels; ki++) {
            const tile_kernel *k = p.m->kernels[ki];
            strbuf src = {0};
            tsl_diag d = {0};
            if (cg_cuda_emit(p.m, k, &src, &d)) {
                printf("    %s:%s: not emitted (%.100s)\n", base, k->name, sb_str(&d.msg));
                diag_free(&d);
                sb_free(&src);
                continue;
            }
            diag_free(&d);
            if (tile_block_uses_hopper(k->body)) { /* no host emulation of TMA and wgmma: the GPU checks them */
                printf("    %s:%s: skipped (a Hopper kernel)\n", base, k->name);
                sb_free(&src);
                continue;
            }
            void *h = NULL;
            for (int round = 0; round < 2; round++) {
                int64_t symv[16] = {0};
                pick_sizes(k, round == 0, symv);
                run_set want, got;
                if (!make_set(k, symv, &want)) break;
                if (!copy_set(k, &want, &got) || !interp_runs(&p, k, &want, NULL)) {
                    set_free(&want);
                    for (int i = 0; i < got.n; i++) tsl_tensor_free(got.t[i]);
                    break;
                }
                if (!h) h = test_emu_build(sb_str(&src), k->name);
                CHECK_MSG(h != NULL, "%s:%s: the emulation does not build", base, k->name);
                if (h) {
                    if (getenv("TSL_EMU_VERBOSE")) printf("    emulating %s:%s\n", base, k->name), fflush(stdout);
                    int ran = emu_run(h, p.m, k, symv, &got);
                    CHECK_MSG(ran, "%s:%s: the emulated launch failed", base, k->name);
                    char bad[256] = "";
                    if (ran)
                        CHECK_MSG(compare_sets(k, &want, &got, bad, sizeof bad), "%s:%s emulated (sizes %s): %s", base,
                                  k->name, round == 0 ? "1" : "odd", bad);
                    compared += ran;
                }
                set_free(&want);
                set_free(&got);
            }
            if (h) dlclose(h);
            sb_free(&src);
        }
        free_prog(&p);
    }
    printf("    %d emulated runs compared with the interpreter\n", compared);
    CHECK(compared >= 10);
    for (int f = 0; f < nf; f++) free(files[f]);
    free(files);
}

/* The row-reduction and elementwise strategies' GPU plans (sched/rowred.c:
 * a warp per row, a block per row in registers, the stream; the flat form)
 * as CUDA in the host emulation against the interpreter: every size class
 * with tails (rows not a multiple of the warps, columns not of the 16-byte
 * runs), so the wide-load fast path and its element-wise fallback both run. */
/* Size-branch conditions of the row tests: symbols from symv, the int
 * parameters N and D (the flat form's) by name. */
typedef struct branch_lookup {
    const tile_kernel *k;
    const int64_t *symv;
    int64_t N, D;
} branch_lookup;

static int64_t branch_value(void *ctx, const tile_value *v, int *ok)
{
    const branch_lookup *b = ctx;
    for (int i = 0; i < b->k->nsyms; i++)
        if (b->k->syms[i] == v) return b->symv[i];
    if (!strcmp(v->name, "N")) return b->N;
    if (!strcmp(v->name, "D")) return b->D;
    *ok = 0;
    return 0;
}

static void test_emulated_row_kernels(void)
{
    if (!test_have_cxx()) return;
    static const struct {
        const char *name, *src;
    } progs[] = {
        {"softmax16", "def softmax(float16(N,D) X) -> (Y) {\n  mx(n) max=! X(n,d)\n  e(n,d) = exp(X(n,d) - mx(n))\n"
                      "  s(n) +=! e(n,d)\n  Y(n,d) = e(n,d) / s(n)\n}\n"},
        {"layernorm32", "def layernorm(float32(N,D) X, float32(D) g, float32(D) b) -> (Y) {\n"
                        "  mean(n) +=! X(n,d)\n  mean(n) = mean(n) / D\n  xc(n,d) = X(n,d) - mean(n)\n"
                        "  var(n) +=! xc(n,d) * xc(n,d)\n  var(n) = var(n) / D\n"
                        "  Y(n,d) = xc(n,d) * rsqrt(var(n) + 1e-5) * g(d) + b(d)\n}\n"},
        {"silu16", "def silu(float16(N,D) X) -> (Y) {\n  Y(n,d) = X(n,d) * sigmoid(X(n,d))\n}\n"},
        {"scalebiasrelu16", "def sbr(float16(N,D) X, float16(D) g, float16(D) b) -> (Y) {\n"
                            "  Y(n,d) = fmaxf(X(n,d) * g(d) + b(d), 0)\n}\n"},
    };
    /* (N, D): warp class with tail rows and a short tail run, its
     * full-width arm (D = 1024), the block class, its full-width arm,
     * the stream */
    static const int64_t sizes[][2] = {{1, 1}, {11, 1000}, {9, 1024}, {3, 4099}, {2, 8192}, {2, 8193}};
    int compared = 0;
    for (size_t pi = 0; pi < TSL_COUNTOF(progs); pi++) {
        tsl_arena *a = arena_create();
        tsl_source ts = {progs[pi].name, progs[pi].src};
        tsl_diag d = {0};
        lang_module *mod = lang_parse_check(a, &ts, &d);
        graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
        sched_plan *plan = g ? sched_lower_for(a, g, TSL_TARGET_CUDA, &d) : NULL;
        CHECK_MSG(plan && plan->nlaunches == 1, "%s: %s", progs[pi].name, sb_str(&d.msg));
        if (plan && plan->nlaunches == 1) {
            prog p = {0};
            p.path = strdup(progs[pi].name);
            p.text = tile_print(plan->m);
            p.ar = arena_create();
            tsl_source s2 = {p.path, p.text};
            CHECK(tile_parse(p.ar, &s2, &d, &p.m) == TSL_OK);
            const tile_kernel *k = p.m ? p.m->kernels[0] : NULL;
            strbuf src = {0};
            cg_cuda_branches br;
            int emitted = k && cg_cuda_emit_branches(p.m, k, &src, &br, &d) == TSL_OK;
            CHECK_MSG(emitted, "%s: %s", progs[pi].name, sb_str(&d.msg));
            /* the generic source (no TSL_IF defined) is checked at the
             * first size, each size's specialisation (the arms its sizes
             * take, as the runtime compiles it) at every size */
            for (size_t si = 0; emitted && si < TSL_COUNTOF(sizes); si++) {
                int64_t symv[16] = {0};
                int64_t N = sizes[si][0], D = sizes[si][1];
                /* the flat form's extents are X_n = N * D, its N and D int parameters */
                for (int i = 0; i < k->nsyms && i < 16; i++) {
                    const char *nm = k->syms[i]->name;
                    size_t l = strlen(nm);
                    symv[i] = !strcmp(nm, "N") ? N : !strcmp(nm, "D") ? D : l > 2 && !strcmp(nm + l - 2, "_n") ? N * D : 1;
                }
                strbuf vs = {0};
                branch_lookup bl = {k, symv, N, D};
                for (int b = 0; si > 0 && b < br.n; b++) {
                    int ok = 1;
                    int64_t c = tile_expr_eval(br.cond[b], branch_value, &bl, NULL, -1, &ok);
                    CHECK_MSG(ok, "%s: size branch %d does not evaluate", progs[pi].name, b);
                    sb_printf(&vs, "#define TSL_IF%d %d\n", b, c ? 1 : 0);
                }
                sb_puts(&vs, sb_str(&src));
                void *h = test_emu_build(sb_str(&vs), k->name);
                sb_free(&vs);
                CHECK_MSG(h != NULL, "%s: no emulation: %s", progs[pi].name, sb_str(&d.msg));
                if (!h) break;
                run_set want, got;
                if (!make_set(k, symv, &want)) {
                    dlclose(h);
                    break;
                }
                for (int i = 0; i < want.n; i++)
                    if (!want.t[i] && (!strcmp(want.args[i].name, "N") || !strcmp(want.args[i].name, "D")))
                        want.args[i].ival = !strcmp(want.args[i].name, "N") ? N : D;
                if (!copy_set(k, &want, &got) || !interp_runs(&p, k, &want, NULL)) {
                    CHECK_MSG(0, "%s: the interpreter does not run it", progs[pi].name);
                    set_free(&want);
                    for (int i = 0; i < got.n; i++) tsl_tensor_free(got.t[i]);
                    dlclose(h);
                    break;
                }
                int ran = emu_run(h, p.m, k, symv, &got);
                CHECK_MSG(ran, "%s: the emulated launch failed (N=%lld D=%lld)", progs[pi].name,
                          (long long)sizes[si][0], (long long)sizes[si][1]);
                char bad[256] = "";
                if (ran)
                    CHECK_MSG(compare_sets(k, &want, &got, bad, sizeof bad), "%s emulated (N=%lld D=%lld): %s",
                              progs[pi].name, (long long)sizes[si][0], (long long)sizes[si][1], bad);
                compared += ran;
                set_free(&want);
                set_free(&got);
                dlclose(h);
            }
            sb_free(&src);
            arena_free(p.ar);
            free(p.text);
            free(p.path);
        }
        diag_free(&d);
        arena_free(a);
    }
    printf("    %d emulated row/elementwise runs compared with the interpreter\n", compared);
}

/* fma on every float dtype against the interpreter, bit for bit, on
 * test_fma_fill's inputs (ties, the double-rounding corner): in the host
 * emulation (tsl_fma16, fmaf, fma: the interpreter's text and calls) or
 * on the GPU (fma.rn.{f16,bf16}x2 and single, fma.rn.f32/f64). */
static void fma_bits(int gpu)
{
    static const tsl_dtype dts[] = {TSL_DTYPE_F16, TSL_DTYPE_BF16, TSL_DTYPE_F32, TSL_DTYPE_F64};
    const char *where = gpu ? "GPU" : "emulation";
    for (size_t di = 0; di < TSL_COUNTOF(dts); di++) {
        tsl_dtype dt = dts[di];
        const char *tn = dtype_info_of(dt)->tname;
        char *text = test_fma_program(dt);
        tsl_arena *ar = arena_create();
        tsl_source src = {"fma.tile", text};
        tsl_diag d = {0};
        tile_module *m = NULL;
        strbuf cu = {0};
        void *h = NULL;
        tsl_status st = tile_parse(ar, &src, &d, &m);
        if (!st && !gpu) st = cg_cuda_emit(m, m->kernels[0], &cu, &d);
        CHECK_MSG(st == TSL_OK, "fma %s: %s", tn, sb_str(&d.msg));
        if (!st && !gpu) {
            h = test_emu_build(sb_str(&cu), tn);
            CHECK_MSG(h != NULL, "fma %s: the emulation does not build", tn);
            if (!h) st = TSL_ERR_COMPILE;
        }
        int64_t n = (gpu ? 100000 : 1000) + test_rand_int(1, 95);
        run_set want = {.n = 5}, got = {.n = 5};
        for (int j = 0; j < 5 && !st; j++) {
            want.t[j] = tsl_tensor_alloc(dt, 1, &n), got.t[j] = tsl_tensor_alloc(dt, 1, &n);
            want.args[j] = (tile_interp_arg){.name = m->kernels[0]->params[j]->name, .t = want.t[j]};
            got.args[j] = (tile_interp_arg){.name = want.args[j].name, .t = got.t[j]};
        }
        if (!st) {
            test_fma_fill(dt, want.t[0]->data, want.t[1]->data, want.t[2]->data, n);
            for (int j = 0; j < 3; j++) memcpy(got.t[j]->data, want.t[j]->data, (size_t)n * tsl_dtype_size(dt));
            st = tile_interp_run(m->kernels[0], &src, want.args, 5, NULL, &d);
            CHECK_MSG(st == TSL_OK, "fma %s, interpreter: %s", tn, sb_str(&d.msg));
        }
        if (!st && gpu) {
            st = drv_kernel_run(&drv_target_cuda, m, m->kernels[0], got.args, 5, NULL, &d);
            CHECK_MSG(st == TSL_OK, "fma %s, GPU: %s", tn, sb_str(&d.msg));
        } else if (!st) {
            int ran = emu_run(h, m, m->kernels[0], &n, &got);
            CHECK_MSG(ran, "fma %s: the emulated launch failed", tn);
            if (!ran) st = TSL_ERR_RUNTIME;
        }
        for (int j = 3; j < 5 && !st; j++) {
            int64_t i = test_fma_first_diff(dt, want.t[j]->data, got.t[j]->data, n);
            CHECK_MSG(i < 0, "fma %s, %s[%lld]: interpreter %a, %s %a", tn, j == 3 ? "Z" : "W", (long long)i,
                      i < 0 ? 0 : dtype_get(dt, want.t[j]->data, i), where,
                      i < 0 ? 0 : dtype_get(dt, got.t[j]->data, i));
        }
        if (!st) printf("    fma %s: %lld elements x 2, %s == interpreter\n", tn, (long long)n, where);
        if (h) dlclose(h);
        set_free(&want);
        set_free(&got);
        diag_free(&d);
        sb_free(&cu);
        arena_free(ar);
        free(text);
    }
}

static void test_emulated_fma_bits(void)
{
    if (test_have_cxx()) fma_bits(0);
}

static void test_gpu_fma_bits(void)
{
    if (!have_nvrtc() || !have_gpu()) {
        printf("    skipped: no GPU\n");
        return;
    }
    fma_bits(1);
}

/* ---- generator properties (no NVRTC needed) ------------------------------------------------ */

static tsl_status emit_text(const char *text, strbuf *out, tsl_diag *d)
{
    tsl_arena *ar = arena_create();
    tsl_source src = {"t.tile", text};
    tile_module *m = NULL;
    tsl_status st = tile_parse(ar, &src, d, &m);
    if (!st) st = cg_cuda_emit(m, m->kernels[0], out, d);
    arena_free(ar);
    return st;
}

static void test_emit_shape(void)
{
    strbuf sb = {0};
    tsl_diag d = {0};
    const char *text =
        "kernel scale(X: global f32[N], Y: global f32[N]) grid(cdiv(N, 256)) threads(128) {\n"
        "  x = load_global X[block_idx.x * 256] -> register f32[256] layout spatial(128).local(2) fill 0.0\n"
        "  y = mul x, 3\n"
        "  store_global y -> Y[block_idx.x * 256]\n"
        "}\n";
    CHECK_EQ_INT(emit_text(text, &sb, &d), TSL_OK);
    const char *s = sb_str(&sb);
    CHECK(strstr(s, "extern \"C\" __global__ void __launch_bounds__(128, 1) tsl_cuda_scale_i32("));
    CHECK(strstr(s, "tsl_cuda_scale_i64("));
    CHECK(strstr(s, "/* x = load_global X[block_idx.x * 256] -> register f32[256]"));
    /* the comment is the statement after selection: its atom is what is printed */
    CHECK(strstr(s, "/* store_global y -> Y[block_idx.x * 256] atom st.global.v2.u32 */"));
    sb_free(&sb);
    diag_free(&d);

    /* a pipeline is expanded first (on a copy) */
    char *path = NULL;
    CHECK(asprintf(&path, "%s/examples/tile/gemm_pipelined.tile", test_root()) > 0);
    prog p;
    if (load_prog(path, &p)) {
        char *before = tile_print(p.m);
        CHECK_EQ_INT(cg_cuda_emit(p.m, p.m->kernels[0], &sb, &d), TSL_OK);
        CHECK(strstr(sb_str(&sb), "cp.async.wait_group"));
        CHECK(strstr(sb_str(&sb), "tsl_mma_f16("));
        char *after = tile_print(p.m);
        CHECK_EQ_STR(before, after);
        free(before);
        free(after);
    }
    free_prog(&p);
    free(path);
    sb_free(&sb);
    diag_free(&d);
}

/* A decomposition prints as itself: the atoms it names are the
 * instructions emitted (the emulated runs above check the values). */
static void test_decomp_printed(void)
{
    char *path = NULL;
    CHECK(asprintf(&path, "%s/tests/tile_golden/ldmatrix_x1x2.tile", test_root()) > 0);
    prog p;
    if (load_prog(path, &p)) {
        static const char *const want[] = {"tsl_ldsm_x1(r0, p);", "tsl_ldsm_x2(r0, r1, p);",
                                           "tsl_ldsm_x2_trans(r0, r1, p);"};
        CHECK_EQ_INT(p.m->nkernels, 3);
        for (int i = 0; i < p.m->nkernels && i < 3; i++) {
            strbuf sb = {0};
            tsl_diag d = {0};
            CHECK_EQ_INT(cg_cuda_emit(p.m, p.m->kernels[i], &sb, &d), TSL_OK);
            CHECK_MSG(strstr(sb_str(&sb), want[i]) && strstr(sb_str(&sb), "decomposed: the body per thread"),
                      "%s: no %s", p.m->kernels[i]->name, want[i]);
            sb_free(&sb);
            diag_free(&d);
        }
    }
    free_prog(&p);
    free(path);
}

/* Every mma / ldmatrix row the table says the CUDA generator prints (its
 * `cu` helper) has that helper in the CUDA preamble, issuing the row's PTX:
 * the table and the printed instruction cannot drift apart. */
static void test_table_helpers(void)
{
    strbuf sb = {0};
    tsl_diag d = {0};
    const char *text = "kernel k(X: global f32[N]) grid(1) threads(32) {\n"
                       "  x = load_global X[0] -> register f32[32] layout spatial(32) fill 0.0\n"
                       "  store_global x -> X[0]\n"
                       "}\n";
    CHECK_EQ_INT(emit_text(text, &sb, &d), TSL_OK);
    const char *s = sb_str(&sb);
    int n = 0;
    for (int i = 0; i < target_atom_count(); i++) {
        const target_atom *a = target_atom_at(i);
        if (!a->cu) continue;
        n++;
        char def[128];
        snprintf(def, sizeof def, " void %s(", a->cu);
        const char *at = strstr(s, def);
        CHECK_MSG(at != NULL, "%s: helper %s is not in the CUDA preamble", a->name, a->cu);
        if (!at) continue;
        const char *next = strstr(at + 1, "static __device__");
        const char *ptx = strstr(at, a->ptx);
        CHECK_MSG(ptx && (!next || ptx < next), "%s: helper %s does not issue %s", a->name, a->cu, a->ptx);
    }
    CHECK(n == 26); /* the 7 mma.sync rows (m16n8k16 / m16n8k8, f32 and f16 accumulators, tf32), the 4 dequantizing
                       mma.q rows, 6 ldmatrix, 6 stmatrix, 3 cp.async */
    sb_free(&sb);
    diag_free(&d);
}

/* Signed 8/16-bit abs: NVVM narrowed the generator's 64-bit abs to
 * abs.s16 (its result for -32768 is the machine's: the H100 gave
 * abs(int16(-32768)) % 3 = 2, the definition -2) and dropped the sign
 * extension after it. The PTX must keep it in 64 bits (abs.s64). */
static void test_abs_narrow_ptx(void)
{
    if (!have_nvrtc()) return;
    char *path = NULL;
    CHECK(asprintf(&path, "%s/tests/tile_golden/abs_narrow.tile", test_root()) > 0);
    prog p;
    if (load_prog(path, &p)) {
        strbuf src = {0};
        tsl_diag d = {0};
        CHECK_EQ_INT(cg_cuda_emit(p.m, p.m->kernels[0], &src, &d), TSL_OK);
        static const char *const archs[] = {"sm_80", "sm_90a"};
        for (int a = 0; a < 2; a++) {
            char *ptx = NULL;
            diag_reset(&d);
            tsl_status st = rt_cuda_compile_ptx(sb_str(&src), archs[a], NULL, &ptx, &d);
            CHECK_MSG(st == TSL_OK, "%s: %s", archs[a], sb_str(&d.msg));
            if (ptx) {
                CHECK_MSG(!strstr(ptx, "abs.s16") && !strstr(ptx, "abs.s8"), "%s: the PTX narrows abs", archs[a]);
                CHECK_MSG(strstr(ptx, "abs.s64") != NULL, "%s: no abs.s64 in the PTX", archs[a]);
            }
            free(ptx);
        }
        diag_free(&d);
        sb_free(&src);
    }
    free_prog(&p);
    free(path);
}

/* The PTX of fma: f16 and bf16 registers pair adjacent locals into one
 * fma.rn.{f16,bf16}x2 and take an odd last local alone (the program's 3
 * locals a thread: one of each), f32 and f64 are fma.rn; sm_80 and sm_90a. */
static void test_fma_ptx(void)
{
    if (!have_nvrtc()) return;
    static const struct {
        tsl_dtype dt;
        const char *want[2];
    } rows[] = {
        {TSL_DTYPE_F16, {"fma.rn.f16x2 ", "fma.rn.f16 "}},
        {TSL_DTYPE_BF16, {"fma.rn.bf16x2 ", "fma.rn.bf16 "}},
        {TSL_DTYPE_F32, {"fma.rn.f32 ", "fma.rn.f32 "}},
        {TSL_DTYPE_F64, {"fma.rn.f64 ", "fma.rn.f64 "}},
    };
    for (size_t r = 0; r < TSL_COUNTOF(rows); r++) {
        char *text = test_fma_program(rows[r].dt);
        strbuf cu = {0};
        tsl_diag d = {0};
        CHECK_EQ_INT(emit_text(text, &cu, &d), TSL_OK);
        static const char *const archs[] = {"sm_80", "sm_90a"};
        for (int a = 0; a < 2; a++) {
            char *ptx = NULL;
            diag_reset(&d);
            tsl_status st = rt_cuda_compile_ptx(sb_str(&cu), archs[a], NULL, &ptx, &d);
            CHECK_MSG(st == TSL_OK, "%s: %s", archs[a], sb_str(&d.msg));
            for (int w = 0; w < 2 && ptx; w++)
                CHECK_MSG(strstr(ptx, rows[r].want[w]), "fma %s, %s: no '%s' in the PTX",
                          dtype_info_of(rows[r].dt)->tname, archs[a], rows[r].want[w]);
            free(ptx);
        }
        diag_free(&d);
        sb_free(&cu);
        free(text);
    }
}

static void test_emit_errors(void)
{
    strbuf sb = {0};
    tsl_diag d = {0};
    const char *text = "kernel lb(A: global u4[64]) grid(1) threads(64) {\n"
                       "  a = load_global A[0] -> register u4[64] layout spatial(64)\n"
                       "  store_global a -> A[0]\n"
                       "}\n";
    CHECK_EQ_INT(emit_text(text, &sb, &d), TSL_ERR_UNAVAILABLE);
    CHECK(strstr(sb_str(&d.msg), "u4"));
    sb_free(&sb);
    diag_free(&d);
}

/* Without a GPU, running is a clear TSL_ERR_UNAVAILABLE and nothing else;
 * with one, an out-of-range gather index is TSL_ERR_BOUNDS naming it. */
static void test_run_errors(void)
{
    const char *text = "kernel g(X: global f32[N], I: global i32[N], Y: global f32[N]) grid(1) threads(32) {\n"
                       "  i = load_global I[0] -> register i32[32] layout spatial(32)\n"
                       "  x = gather X, i -> register f32[32] layout spatial(32)\n"
                       "  store_global x -> Y[0]\n"
                       "}\n";
    tsl_arena *ar = arena_create();
    tsl_source src = {"g.tile", text};
    tsl_diag d = {0};
    tile_module *m = NULL;
    CHECK_EQ_INT(tile_parse(ar, &src, &d, &m), TSL_OK);
    int64_t n = 32;
    DLTensor *x = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n), *i = tsl_tensor_alloc(TSL_DTYPE_I32, 1, &n),
             *y = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n);
    for (int k = 0; k < 32; k++) {
        ((float *)x->data)[k] = (float)test_rand_double(-1, 1);
        ((int32_t *)i->data)[k] = (int32_t)test_rand_int(0, 31);
    }
    int bad = (int)test_rand_int(0, 31);
    ((int32_t *)i->data)[bad] = 32 + (int32_t)test_rand_int(0, 5);
    tile_interp_arg args[3] = {{.name = "X", .t = x}, {.name = "I", .t = i}, {.name = "Y", .t = y}};
    tsl_status st = m ? drv_kernel_run(&drv_target_cuda, m, m->kernels[0], args, 3, NULL, &d) : TSL_ERR_INTERNAL;
    if (!have_gpu()) {
        CHECK_EQ_INT(st, TSL_ERR_UNAVAILABLE);
        CHECK(sb_str(&d.msg)[0] != 0);
    } else {
        CHECK_EQ_INT(st, TSL_ERR_BOUNDS);
        CHECK_MSG(strstr(sb_str(&d.msg), "dimension 0 of 'X'") != NULL, "%s", sb_str(&d.msg));
    }
    tsl_tensor_free(x);
    tsl_tensor_free(i);
    tsl_tensor_free(y);
    diag_free(&d);
    arena_free(ar);
}

TEST_SUITE(codegen_cuda) = {
    {"run_errors", test_run_errors},
    {"emit_shape", test_emit_shape},
    {"table_helpers", test_table_helpers},
    {"decomp_printed", test_decomp_printed},
    {"emit_errors", test_emit_errors},
    {"abs_narrow_ptx", test_abs_narrow_ptx},
    {"fma_ptx", test_fma_ptx},
    {"compile_all", test_compile_all},
    {"emulated_matches_interp", test_emulated_matches_interp},
    {"emulated_row_kernels", test_emulated_row_kernels},
    {"emulated_fma_bits", test_emulated_fma_bits},
    {"gpu_matches_interp", test_gpu_matches_interp},
    {"gpu_regress_goldens", test_gpu_regress_goldens},
    {"gpu_fma_bits", test_gpu_fma_bits},
    {"gpu_gemm_4096", test_gpu_gemm_4096},
    {0},
};
