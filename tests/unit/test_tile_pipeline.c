/* test_tile_pipeline.c — the two expansions of `pipeline` (src/tile/pipeline*.c,
 * docs/tile-ir.md section 5, docs/tile-interp.md "Pipelines"):
 *
 *   - every pipeline program (examples/tile, tests/tile_golden and
 *     tests/tile_pipeline) runs unexpanded, in the cp.async form, in the TMA
 *     form (with the cp.async arm of its size branch) and in the TMA form
 *     alone, on the same random inputs at sizes no tile divides, with rows
 *     16-byte aligned and not: every run that applies gives the same bits,
 *     checked against a float64 reference; each expansion verifies and the
 *     printed program is what runs; the TMA form alone refuses rows TMA
 *     cannot take with the runtime's words;
 *   - the TMA form's CUDA compiles for sm_90a with NVRTC, without spills;
 *   - the TMA form with a wait, an arrive or a sync taken out, or a wrong
 *     parity, is a located hazard or deadlock in the interpreter;
 *   - misuse (tests/tile_pipeline/err_*.tile) is the located error its
 *     `// expect:` line gives, in the form its `// mode:` line names. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codegen/cuda.h"
#include "runtime/runtime.h"
#include "test.h"
#include "tile/interp.h"
#include "tile/pipeline.h"
#include "tile/tile.h"

enum { PLAIN, CP_ASYNC, TMA, TMA_ONLY, NMODES };
static const char *const mode_name[NMODES] = {"unexpanded", "cp.async", "TMA", "TMA only"};

static tile_pipeline_opts opts_of(int mode)
{
    tile_pipeline_opts o = tile_pipeline_opts_for_arch(mode >= TMA ? "sm_90a" : "sm_80");
    o.tma_only = mode == TMA_ONLY;
    return o;
}

/* A program as it runs: parsed, expanded in `mode`, verified, printed and
 * parsed again (the printed text is the program). */
typedef struct built {
    tsl_arena *ar;
    tsl_source src;
    char *text; /* what src points at */
    tile_module *m;
    tsl_diag d;
    tsl_status st;
} built;

static void build(built *b, const char *name, const char *text, int mode)
{
    memset(b, 0, sizeof *b);
    b->ar = arena_create();
    tsl_source s0 = {name, text};
    tile_module *m0 = NULL;
    b->st = tile_parse(b->ar, &s0, &b->d, &m0);
    if (!b->st) b->st = tile_verify(m0, &s0, &b->d);
    if (!b->st && mode != PLAIN) {
        tile_pipeline_opts o = opts_of(mode);
        b->st = tile_pipeline_expand_opts(m0, &s0, &o, &b->d);
        if (!b->st) b->st = tile_verify(m0, &s0, &b->d);
    }
    b->text = b->st ? strdup(text) : mode == PLAIN ? strdup(text) : tile_print(m0);
    b->src.name = name;
    b->src.text = b->text;
    if (!b->st) b->st = tile_parse(b->ar, &b->src, &b->d, &b->m);
    if (!b->st) b->st = tile_verify(b->m, &b->src, &b->d);
    CHECK_MSG(b->st || mode == PLAIN || !strstr(b->text, "pipeline(grid"), "%s %s: a pipeline is left", name,
              mode_name[mode]);
}

static void built_free(built *b)
{
    diag_free(&b->d);
    arena_free(b->ar);
    free(b->text);
}

/* ---- data ------------------------------------------------------------------------------- */

#define MAXT 8

typedef struct data {
    int n;
    char *name[MAXT];
    tsl_dtype dt[MAXT];
    int out[MAXT];
    DLTensor *t[MAXT];
} data;

static void fill(DLTensor *t, tsl_dtype dt, int nan)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    size_t es = tsl_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) dtype_store(dt, (char *)t->data + i * (int64_t)es, nan ? NAN : test_rand_double(-1, 1));
}

static size_t nbytes(const data *x, int k)
{
    size_t n = tsl_dtype_size(x->dt[k]);
    for (int i = 0; i < x->t[k]->ndim; i++) n *= (size_t)x->t[k]->shape[i];
    return n;
}

/* Bind `sizes` (NAME=N ...) for kernel k, random inputs, NaN outputs. */
static int make_data(const tile_kernel *k, const char *sizes, data *x, char *why, size_t nwhy)
{
    memset(x, 0, sizeof *x);
    const char *names[8];
    int64_t vals[8], symv[16];
    char buf[256];
    int ns = 0;
    snprintf(buf, sizeof buf, "%s", sizes);
    for (char *tok = strtok(buf, " "); tok && ns < 8; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        names[ns] = tok;
        vals[ns++] = strtoll(eq + 1, NULL, 10);
    }
    tsl_diag d = {0};
    tsl_status st = tile_interp_bind_symbols(k, NULL, 0, names, vals, ns, symv, &d);
    const tile_value *outs[MAXT];
    int nout = tile_interp_outputs(k, outs, MAXT);
    for (int i = 0; i < k->nparams && !st && x->n < MAXT; i++) {
        const tile_value *v = k->params[i];
        if (v->kind != TILE_V_TENSOR) continue;
        int64_t shape[8];
        if ((st = tile_interp_param_shape(k, v, symv, shape, &d))) break;
        int isout = 0;
        for (int j = 0; j < nout; j++) isout |= outs[j] == v;
        tile_dtype_to_tsl(v->type.dt, &x->dt[x->n]);
        x->name[x->n] = strdup(v->name);
        x->out[x->n] = isout;
        x->t[x->n] = tsl_tensor_alloc(x->dt[x->n], v->type.rank, shape);
        fill(x->t[x->n], x->dt[x->n], isout);
        x->n++;
    }
    snprintf(why, nwhy, "%s", sb_str(&d.msg));
    diag_free(&d);
    return st == TSL_OK;
}

static void data_free(data *x)
{
    for (int k = 0; k < x->n; k++) {
        tsl_tensor_free(x->t[k]);
        free(x->name[k]);
    }
}

static int find(const data *x, const char *name)
{
    for (int k = 0; k < x->n; k++)
        if (!strcasecmp(x->name[k], name)) return k;
    return -1;
}

static double at(const data *x, int k, int64_t i)
{
    return dtype_load(x->dt[k], (char *)x->t[k]->data + i * (int64_t)tsl_dtype_size(x->dt[k]));
}

/* Run b's kernel on x (outputs poisoned first), shuffled. */
static tsl_status run(built *b, data *x)
{
    tile_interp_arg args[MAXT];
    for (int k = 0; k < x->n; k++) {
        if (x->out[k]) fill(x->t[k], x->dt[k], 1);
        args[k] = (tile_interp_arg){x->name[k], x->t[k], 0};
    }
    tile_interp_opts o = {0};
    o.shuffle_blocks = 1;
    o.seed = test_rand();
    return tile_interp_run(b->m->kernels[0], &b->src, args, x->n, &o, &b->d);
}

/* ---- references ------------------------------------------------------------------------ */

typedef int (*check_fn)(const data *x, char *why, size_t nwhy);

/* C = A B: f32 accumulation (a float64 bound), then C's rounding. */
static int check_matmul(const data *x, char *why, size_t nwhy)
{
    int ia = find(x, "A"), ib = find(x, "B"), ic = find(x, "C");
    int64_t M = x->t[ia]->shape[0], K = x->t[ia]->shape[1], N = x->t[ib]->shape[1];
    double rel = x->dt[ic] == TSL_DTYPE_F16 ? 4.9e-4 : 1e-6;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double p = at(x, ia, i * K + k) * at(x, ib, k * N + j);
                want += p;
                mag += fabs(p);
            }
            double got = at(x, ic, i * N + j);
            if (!(fabs(got - want) <= rel * fabs(want) + 1e-5 * mag + 1e-6)) {
                snprintf(why, nwhy, "C[%lld,%lld] = %.7g, want %.7g", (long long)i, (long long)j, got, want);
                return 0;
            }
        }
    return 1;
}

/* o = the sum of x over its first dim */
static int check_sum(const data *x, char *why, size_t nwhy)
{
    int ix = find(x, "x"), io = find(x, "o");
    int64_t R = x->t[ix]->shape[0], n = x->t[ix]->shape[1] * x->t[ix]->shape[2];
    for (int64_t i = 0; i < n; i++) {
        double want = 0;
        for (int64_t r = 0; r < R; r++) want += at(x, ix, r * n + i);
        if (!(fabs(at(x, io, i) - want) <= 1e-5 * (1 + fabs(want)))) {
            snprintf(why, nwhy, "o[%lld] = %.7g, want %.7g", (long long)i, at(x, io, i), want);
            return 0;
        }
    }
    return 1;
}

/* O = X + V, V's one row added to every row */
static int check_bias(const data *x, char *why, size_t nwhy)
{
    int ix = find(x, "X"), iv = find(x, "V"), io = find(x, "O");
    int64_t M = x->t[ix]->shape[0], N = x->t[ix]->shape[1];
    for (int64_t i = 0; i < M * N; i++) {
        double want = (double)(float)(at(x, ix, i) + at(x, iv, i % N));
        if (at(x, io, i) != want) {
            snprintf(why, nwhy, "O[%lld] = %.9g, want %.9g", (long long)i, at(x, io, i), want);
            return 0;
        }
    }
    return 1;
}

/* Y = 2 X (exact in f16) */
static int check_twice(const data *x, char *why, size_t nwhy)
{
    int ix = find(x, "X"), iy = find(x, "Y");
    int64_t n = x->t[ix]->shape[0] * x->t[ix]->shape[1];
    for (int64_t i = 0; i < n; i++)
        if (at(x, iy, i) != 2 * at(x, ix, i)) {
            snprintf(why, nwhy, "Y[%lld] = %g, want %g", (long long)i, at(x, iy, i), 2 * at(x, ix, i));
            return 0;
        }
    return 1;
}

/* ---- the programs ------------------------------------------------------------------------ */

#define M_ALL ((1u << PLAIN) | (1u << CP_ASYNC) | (1u << TMA) | (1u << TMA_ONLY))
#define M_EXPANDED ((1u << CP_ASYNC) | (1u << TMA) | (1u << TMA_ONLY))

/* Sizes starting with '!' have rows TMA cannot take (the TMA form alone
 * refuses them at run time). A random case is added: every size a random
 * multiple of 8 (aligned), or any (then either outcome of TMA only). */
static const struct {
    const char *dir, *file;
    unsigned modes;
    check_fn check;
    const char *sizes[4];
} progs[] = {
    {"examples/tile", "gemm_pipelined.tile", M_ALL, check_matmul,
     {"M=67 N=72 K=40", "!M=67 N=45 K=40", "M=1 N=8 K=8", "!M=1 N=1 K=1"}},
    {"tests/tile_golden", "gemm_pipelined.tile", M_ALL, check_matmul,
     {"M=67 N=72 K=40", "!M=130 N=64 K=203", "M=1 N=8 K=8", "M=64 N=64 K=96"}},
    {"examples/tile", "blocked_sum.tile", M_ALL, check_sum, {"R=3 M=37 N=68", "!R=3 M=37 N=45", "R=1 M=1 N=4", "!R=5 M=1 N=1"}},
    {"tests/tile_pipeline", "gemm_tma.tile", M_ALL, check_matmul,
     {"M=100 N=72 K=200", "!M=100 N=70 K=200", "M=1 N=8 K=8", "M=64 N=64 K=64"}},
    {"tests/tile_pipeline", "gemm_tma_persistent.tile", M_EXPANDED, check_matmul,
     {"M=70 N=136 K=136", "!M=70 N=130 K=131", "M=1 N=8 K=8", "M=130 N=8 K=264"}},
    {"tests/tile_pipeline", "bias_add.tile", M_ALL, check_bias, {"M=70 N=100", "!M=70 N=99", "M=1 N=4", "M=33 N=64"}},
    {"tests/tile_pipeline", "role_single.tile", M_ALL, check_twice, {"M=45 N=200", "!M=45 N=199", "M=1 N=8", "M=64 N=128"}},
    /* a producer role: the TMA form only (TMA alone is the same program) */
    {"examples/tile", "gemm_wgmma_pipeline.tile", 1u << TMA, check_matmul,
     {"M=100 N=264 K=328", "M=1 N=8 K=8", "M=130 N=264 K=136", "M=37 N=72 K=64"}},
};

static void random_sizes(const tile_kernel *k, int aligned, char *buf, size_t n)
{
    size_t len = 0;
    if (!aligned) buf[len++] = '!';
    buf[len] = 0;
    for (int i = 0; i < k->nsyms && len + 32 < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s=%ld", i ? " " : "", k->syms[i]->name,
                                aligned ? 8 * test_rand_int(1, 20) : test_rand_int(1, 150));
}

/* One program at one size in every mode it takes: same bits, right answer. */
static void run_case(int pi, const char *text, const char *sizes_in, int random)
{
    const char *file = progs[pi].file;
    int unaligned = sizes_in[0] == '!';
    const char *sizes = sizes_in + unaligned;
    data x;
    int have = 0;
    unsigned char *first[MAXT] = {0};
    int first_mode = -1;
    for (int mode = 0; mode < NMODES; mode++) {
        if (!(progs[pi].modes >> mode & 1)) continue;
        built b;
        build(&b, file, text, mode);
        CHECK_MSG(b.st == TSL_OK, "%s %s: %s", file, mode_name[mode], sb_str(&b.d.msg));
        char why[512] = "";
        if (b.st == TSL_OK && !have) {
            have = make_data(b.m->kernels[0], sizes, &x, why, sizeof why);
            CHECK_MSG(have, "%s %s: %s", file, sizes, why);
        }
        if (b.st || !have) {
            built_free(&b);
            continue;
        }
        tsl_status st = run(&b, &x);
        /* TMA alone, or a form with no cp.async arm (a producer role) */
        int tma_alone = mode == TMA_ONLY || (mode == TMA && !(progs[pi].modes >> CP_ASYNC & 1));
        if (tma_alone && unaligned) {
            /* TMA cannot take these rows: the run says so (or, for random
             * sizes that happen to be aligned, runs) */
            CHECK_MSG((st != TSL_OK && strstr(sb_str(&b.d.msg), "16 bytes")) || (random && st == TSL_OK),
                      "%s %s at %s: status %d: %s", file, mode_name[mode], sizes, st, sb_str(&b.d.msg));
            built_free(&b);
            if (st != TSL_OK) continue;
        } else {
            CHECK_MSG(st == TSL_OK, "%s %s at %s: %s", file, mode_name[mode], sizes, sb_str(&b.d.msg));
            built_free(&b);
            if (st != TSL_OK) continue;
        }
        CHECK_MSG(progs[pi].check(&x, why, sizeof why), "%s %s at %s: %s", file, mode_name[mode], sizes, why);
        for (int k = 0; k < x.n; k++) {
            if (!x.out[k]) continue;
            if (first_mode < 0) {
                first[k] = malloc(nbytes(&x, k));
                memcpy(first[k], x.t[k]->data, nbytes(&x, k));
            } else {
                CHECK_MSG(!memcmp(first[k], x.t[k]->data, nbytes(&x, k)), "%s at %s: %s and %s differ in '%s'", file,
                          sizes, mode_name[first_mode], mode_name[mode], x.name[k]);
            }
        }
        if (first_mode < 0) first_mode = mode;
    }
    for (int k = 0; k < MAXT; k++) free(first[k]);
    if (have) data_free(&x);
}

static void test_programs(void)
{
    for (size_t pi = 0; pi < TSL_COUNTOF(progs); pi++) {
        char *text = test_read_text(progs[pi].dir, progs[pi].file);
        if (!text) continue;
        for (int s = 0; s < 4; s++) run_case((int)pi, text, progs[pi].sizes[s], 0);
        /* random sizes, aligned and any */
        built b;
        build(&b, progs[pi].file, text, PLAIN);
        for (int aligned = 1; aligned >= 0 && b.st == TSL_OK; aligned--) {
            char sz[160];
            random_sizes(b.m->kernels[0], aligned, sz, sizeof sz);
            run_case((int)pi, text, sz, 1);
        }
        built_free(&b);
        free(text);
    }
}

/* The forms have the shape docs/tile-interp.md gives. */
static void test_shapes(void)
{
    static const struct {
        const char *dir, *file;
        int mode;
        const char *has, *hasnt;
    } cases[] = {
        {"tests/tile_golden", "gemm_pipelined.tile", TMA, "if K % 8 == 0 && N % 8 == 0 {", NULL},
        {"tests/tile_golden", "gemm_pipelined.tile", TMA_ONLY, "tma_load A[", "copy_async"},
        {"tests/tile_golden", "gemm_pipelined.tile", CP_ASYNC, "copy_async A[", "tma_load"},
        {"examples/tile", "gemm_wgmma_pipeline.tile", TMA, "mbar_init pipe0_empty, 2", "copy_async"},
        {"examples/tile", "gemm_wgmma_pipeline.tile", TMA, "if pipe0_j >= 1 {\n          mbar_arrive pipe0_empty[(pipe0_j - 1) % 4]", NULL},
        {"tests/tile_pipeline", "gemm_tma_persistent.tile", TMA, "  var pipe0_r = 0\n  sync\n", NULL},
        {"tests/tile_pipeline", "bias_add.tile", TMA, "mbar_arrive pipe0_full_vb[pipe0_ps_vb] bytes 128", NULL},
        /* a padded block keeps the cp.async form for sm_90a */
        {"tests/tile_pipeline", "err_padded_tma_only.tile", TMA, "copy_async X[", "tma_load"},
        {"tests/tile_pipeline", "err_never_aligned.tile", TMA, "copy_async X[", "tma_load"},
    };
    for (size_t i = 0; i < TSL_COUNTOF(cases); i++) {
        char *text = test_read_text(cases[i].dir, cases[i].file);
        if (!text) continue;
        built b;
        build(&b, cases[i].file, text, cases[i].mode);
        CHECK_MSG(b.st == TSL_OK, "%s %s: %s", cases[i].file, mode_name[cases[i].mode], sb_str(&b.d.msg));
        CHECK_MSG(!b.st && strstr(b.text, cases[i].has), "%s %s: no '%s' in\n%s", cases[i].file,
                  mode_name[cases[i].mode], cases[i].has, b.text);
        CHECK_MSG(!cases[i].hasnt || !strstr(b.text, cases[i].hasnt), "%s %s: '%s' in it", cases[i].file,
                  mode_name[cases[i].mode], cases[i].hasnt);
        built_free(&b);
        free(text);
    }
    tile_pipeline_opts o = tile_pipeline_opts_for_arch("sm_90a");
    CHECK(o.copy == TILE_PIPE_TMA && !o.tma_only);
    CHECK(tile_pipeline_opts_for_arch("sm_80").copy == TILE_PIPE_CP_ASYNC);
    CHECK(tile_pipeline_opts_for_arch(NULL).copy == TILE_PIPE_CP_ASYNC);
}

/* ---- mutations of the TMA form ------------------------------------------------------------ */

static void test_mutations(void)
{
    static const struct {
        const char *dir, *file, *sizes, *from, *to, *want;
    } cases[] = {
        /* the consumers read a stage before its copy landed */
        {"examples/tile", "gemm_wgmma_pipeline.tile", "M=100 N=264 K=520",
         "        mbar_wait pipe0_full[pipe0_slot], pipe0_j / 4 % 2\n", "", "missing mbar_wait"},
        /* the producer overwrites a stage the consumers may still read */
        {"examples/tile", "gemm_wgmma_pipeline.tile", "M=100 N=264 K=520",
         "        mbar_wait pipe0_empty[pipe0_ps], (pipe0_i / 4 + 1) % 2\n", "", "hazard: "},
        /* a stage never released */
        {"examples/tile", "gemm_wgmma_pipeline.tile", "M=100 N=264 K=520",
         "          mbar_arrive pipe0_empty[(pipe0_j - 1) % 4]\n", "", "deadlock: "},
        /* the wrong round */
        {"examples/tile", "gemm_wgmma_pipeline.tile", "M=100 N=264 K=520", "pipe0_j / 4 % 2",
         "(pipe0_j / 4 + 1) % 2", "error: "},
        /* the last group never waited for */
        {"tests/tile_pipeline", "gemm_tma_persistent.tile", "M=70 N=136 K=136",
         "      wgmma_wait 0\n      for pipe0_t", "      for pipe0_t", "hazard: "},
        /* a stage released before every thread's reads */
        {"tests/tile_pipeline", "bias_add.tile", "M=70 N=100", "      sync\n      if pipe0_j + 1 == pipe0_T",
         "      if pipe0_j + 1 == pipe0_T", "hazard: "},
    };
    for (size_t i = 0; i < TSL_COUNTOF(cases); i++) {
        char *text = test_read_text(cases[i].dir, cases[i].file);
        if (!text) continue;
        built b;
        build(&b, cases[i].file, text, TMA);
        char *at = b.st ? NULL : strstr(b.text, cases[i].from);
        CHECK_MSG(at != NULL, "%s: '%s' not in its TMA form", cases[i].file, cases[i].from);
        if (at) {
            size_t n = strlen(b.text) - strlen(cases[i].from) + strlen(cases[i].to) + 1;
            char *mut = malloc(n);
            memcpy(mut, b.text, (size_t)(at - b.text));
            strcpy(mut + (at - b.text), cases[i].to);
            strcat(mut, at + strlen(cases[i].from));
            built m;
            build(&m, "mut.tile", mut, PLAIN);
            data x;
            char why[256];
            tsl_status st = m.st;
            if (!st && make_data(m.m->kernels[0], cases[i].sizes, &x, why, sizeof why)) {
                st = run(&m, &x);
                data_free(&x);
            }
            const char *msg = sb_str(&m.d.msg);
            CHECK_MSG(st != TSL_OK && strstr(msg, cases[i].want) && strstr(msg, "mut.tile:"),
                      "%s without '%s': status %d: %.300s", cases[i].file, cases[i].from, st, msg);
            built_free(&m);
            free(mut);
        }
        built_free(&b);
        free(text);
    }
}

/* ---- misuse -------------------------------------------------------------------------------- */

static void test_errors(void)
{
    static const char *const files[] = {
        "err_padded_tma_only.tile", "err_never_aligned.tile",   "err_producer_nested.tile", "err_producer_count.tile",
        "err_no_producer.tile",     "err_cp_async_roles.tile",  "err_hidden_index.tile",    "err_wg_in_loop.tile",
        "err_stages.tile",          "err_shared_out_roles.tile",
    };
    for (size_t i = 0; i < TSL_COUNTOF(files); i++) {
        char *text = test_read_text("tests/tile_pipeline", files[i]);
        if (!text) continue;
        char *mode = test_header(text, "mode"), *want = test_header(text, "expect");
        CHECK_MSG(mode && want, "%s needs '// mode:' and '// expect:' lines", files[i]);
        int m = !mode ? TMA : !strcmp(mode, "cp_async") ? CP_ASYNC : !strcmp(mode, "tma_only") ? TMA_ONLY : TMA;
        built b;
        build(&b, files[i], text, m);
        const char *msg = sb_str(&b.d.msg);
        size_t n = strcspn(msg, "\n");
        CHECK_MSG(b.st != TSL_OK && want && strlen(want) == n && !strncmp(msg, want, n),
                  "%s: status %d\n  got:  %.*s\n  want: %s", files[i], b.st, (int)n, msg, want ? want : "");
        built_free(&b);
        free(mode);
        free(want);
        free(text);
    }
}

/* ---- NVRTC --------------------------------------------------------------------------------- */

/* Each program's TMA form compiles for sm_90a (both arms of its size
 * branch), with no spills and no stack frame. */
static void test_compile_sm90a(void)
{
    tsl_diag d0 = {0};
    if (rt_cuda_nvrtc_available(&d0) != TSL_OK) {
        printf("    skipped: no NVRTC (%s)\n", sb_str(&d0.msg));
        diag_free(&d0);
        return;
    }
    diag_free(&d0);
    for (size_t pi = 0; pi < TSL_COUNTOF(progs); pi++) {
        char *text = test_read_text(progs[pi].dir, progs[pi].file);
        if (!text) continue;
        built b;
        build(&b, progs[pi].file, text, TMA);
        CHECK_MSG(b.st == TSL_OK, "%s: %s", progs[pi].file, sb_str(&b.d.msg));
        const tile_kernel *k = b.st ? NULL : b.m->kernels[0];
        strbuf src = {0};
        if (k && cg_cuda_emit(b.m, k, &src, &b.d) == TSL_OK) {
            rt_cuda_options o = {0};
            o.ptxas_verbose = 1;
            o.name = progs[pi].file;
            void *cubin = NULL;
            size_t n = 0;
            char *log = NULL;
            tsl_status cs = rt_cuda_compile(sb_str(&src), "sm_90a", &o, &cubin, &n, &log, &b.d);
            CHECK_MSG(cs == TSL_OK, "%s: NVRTC: %s", progs[pi].file, sb_str(&b.d.msg));
            if (cs == TSL_OK) {
                rt_ptxas_report r;
                rt_cuda_ptxas_parse(log, &r);
                CHECK_MSG(r.found >= 1 && !r.spill_stores && !r.spill_loads && !r.stack_frame,
                          "%s sm_90a: spills %d/%d bytes, stack frame %d bytes", progs[pi].file, r.spill_stores,
                          r.spill_loads, r.stack_frame);
                CHECK_MSG(strstr(sb_str(&src), "TSL_TMA_LOAD(") != NULL, "%s: no TMA load in the CUDA source",
                          progs[pi].file);
                printf("    %s/%s sm_90a (TMA form): %d registers, spills %d/%d, stack %d\n", progs[pi].dir,
                       progs[pi].file, r.registers, r.spill_stores, r.spill_loads, r.stack_frame);
            }
            free(cubin);
            free(log);
        } else if (k) {
            CHECK_MSG(0, "%s: emit: %s", progs[pi].file, sb_str(&b.d.msg));
        }
        sb_free(&src);
        built_free(&b);
        free(text);
    }
}

/* The TMA form's tensor maps are `guarded` (a tensor TMA cannot describe
 * gets a zero map at launch, not an error) exactly when every TMA copy
 * sits in the aligned arm of the size branch: the block form with sizes
 * the branch tests; never the TMA-only form, never a producer role. */
static void test_tmaps_guarded(void)
{
    for (size_t pi = 0; pi < TSL_COUNTOF(progs); pi++) {
        char *text = test_read_text(progs[pi].dir, progs[pi].file);
        if (!text) continue;
        int producer = progs[pi].modes == 1u << TMA;
        for (int mode = TMA; mode <= TMA_ONLY; mode++) {
            if (!(progs[pi].modes & (1u << mode)) && !producer) continue;
            built b;
            build(&b, progs[pi].file, text, mode);
            CHECK_MSG(b.st == TSL_OK, "%s: %s", progs[pi].file, sb_str(&b.d.msg));
            cg_cuda_tmap maps[CG_MAX_TMAPS];
            int n = b.st ? 0 : cg_cuda_tmaps(b.m->kernels[0], maps, CG_MAX_TMAPS);
            CHECK_MSG(b.st || n >= 1, "%s %s: no tensor map", progs[pi].file, mode_name[mode]);
            int want = mode == TMA && !producer;
            for (int i = 0; i < n && i < CG_MAX_TMAPS; i++)
                CHECK_MSG(maps[i].guarded == want, "%s %s: tensor map %d guarded %d, want %d", progs[pi].file,
                          mode_name[mode], i, maps[i].guarded, want);
            built_free(&b);
        }
        free(text);
    }
}

TEST_SUITE(tile_pipeline) = {
    {"tmaps_guarded", test_tmaps_guarded},
    {"programs", test_programs},
    {"shapes", test_shapes},
    {"mutations", test_mutations},
    {"errors", test_errors},
    {"compile_sm90a", test_compile_sm90a},
    {0, 0},
};
