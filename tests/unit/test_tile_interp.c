/* test_tile_interp.c — the tile interpreter: its shared-memory model
 * (hazards, cp.async groups) and the seed programs of examples/tile/ run
 * on random data against a plain C reference; fma's single rounding
 * against an exact integer model. (The atoms' lane semantics
 * against the PTX ISA are the target suite's, tests/unit/test_target.c.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fma16.h"
#include "fma_cases.h"
#include "layout/layout.h"
#include "test.h"
#include "tile/interp.h"
#include "tile/interp_mem.h"
#include "tile/pipeline.h"
#include "tile/tile.h"

TSL_FMA16_SRC(static)

/* ---- the memory model ------------------------------------------------------ */

static void test_mem_raw_needs_sync(void)
{
    imem_shared s;
    CHECK(imem_init(&s, 64) == 0);
    int other;
    uint32_t v = (uint32_t)test_rand(), got = 0;
    int a = (int)test_rand_int(0, 63), b = (a + (int)test_rand_int(1, 63)) % 64;
    CHECK_EQ_INT(imem_write(&s, 8, 4, a, &v, &other), IMEM_OK);
    /* the writer may read its own write */
    CHECK_EQ_INT(imem_read(&s, 8, 4, a, &got, &other), IMEM_OK);
    CHECK_EQ_INT(got, v);
    /* another thread may not, until a barrier */
    CHECK_EQ_INT(imem_read(&s, 10, 2, b, &got, &other), IMEM_RAW);
    CHECK_EQ_INT(other, a);
    imem_sync(&s);
    got = 0;
    CHECK_EQ_INT(imem_read(&s, 8, 4, b, &got, &other), IMEM_OK);
    CHECK_EQ_INT(got, v);
    /* a write over what b read in this epoch is a WAR hazard */
    CHECK_EQ_INT(imem_write(&s, 8, 1, a, &v, &other), IMEM_WAR);
    imem_sync(&s);
    CHECK_EQ_INT(imem_write(&s, 8, 1, a, &v, &other), IMEM_OK);
    CHECK_EQ_INT(imem_write(&s, 8, 1, b, &v, &other), IMEM_WAW);
    CHECK_EQ_INT(imem_read(&s, 60, 8, a, &got, &other), IMEM_OOB);
    imem_free(&s);
}

static void test_mem_async_groups(void)
{
    imem_shared s;
    CHECK(imem_init(&s, 256) == 0);
    int other, th = (int)test_rand_int(0, 127);
    uint8_t src[3][16], got[16];
    for (int g = 0; g < 3; g++)
        for (int i = 0; i < 16; i++) src[g][i] = (uint8_t)test_rand();
    /* three groups of one 16-byte copy each */
    for (int g = 0; g < 3; g++) {
        CHECK_EQ_INT(imem_copy_async(&s, (size_t)g * 16, 16, th, src[g], &other), IMEM_OK);
        imem_commit(&s);
    }
    CHECK_EQ_INT(imem_pending_count(&s), 3);
    /* nothing landed: reading is a missing-wait hazard, even for the issuer */
    CHECK_EQ_INT(imem_read(&s, 0, 16, th, got, &other), IMEM_PENDING_READ);
    imem_wait(&s, 2); /* the oldest group completes */
    CHECK_EQ_INT(imem_pending_count(&s), 2);
    CHECK_EQ_INT(imem_read(&s, 0, 16, th, got, &other), IMEM_OK);
    CHECK(memcmp(got, src[0], 16) == 0);
    CHECK_EQ_INT(imem_read(&s, 16, 1, th, got, &other), IMEM_PENDING_READ);
    /* another thread needs a barrier after the wait */
    CHECK_EQ_INT(imem_read(&s, 0, 4, (th + 1) % 128, got, &other), IMEM_RAW);
    imem_wait(&s, 0);
    imem_sync(&s);
    CHECK_EQ_INT(imem_read(&s, 32, 16, (th + 5) % 128, got, &other), IMEM_OK);
    CHECK(memcmp(got, src[2], 16) == 0);
    /* an uncommitted copy is not completed by wait 0 */
    CHECK_EQ_INT(imem_copy_async(&s, 100, 4, th, src[0], &other), IMEM_OK);
    imem_wait(&s, 0);
    CHECK_EQ_INT(imem_read(&s, 100, 4, th, got, &other), IMEM_PENDING_READ);
    imem_commit(&s);
    imem_wait(&s, 0);
    CHECK_EQ_INT(imem_read(&s, 100, 4, th, got, &other), IMEM_OK);
    imem_free(&s);
}

/* Many groups in flight: copies are compacted and still land right. */
static void test_mem_async_many(void)
{
    imem_shared s;
    CHECK(imem_init(&s, 3 * 512) == 0);
    int other;
    uint8_t want[3 * 512], got[512];
    for (int it = 0; it < 40; it++) {
        int buf = it % 3;
        for (int i = 0; i < 512; i += 4) {
            uint8_t v[4];
            for (int j = 0; j < 4; j++) v[j] = want[buf * 512 + i + j] = (uint8_t)test_rand();
            CHECK_EQ_INT(imem_copy_async(&s, (size_t)(buf * 512 + i), 4, i / 4, v, &other), IMEM_OK);
        }
        imem_commit(&s);
        imem_wait(&s, 2);
        imem_sync(&s);
        if (it >= 2) {
            int rb = (it - 2) % 3;
            CHECK_EQ_INT(imem_read(&s, (size_t)rb * 512, 512, 0, got, &other), IMEM_OK);
            CHECK(memcmp(got, want + rb * 512, 512) == 0);
            imem_sync(&s);
        }
    }
    CHECK(s.ncopies < 2000);
    imem_free(&s);
}

/* ---- programs ------------------------------------------------------------------- */

static char *read_example(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/tile/%s", test_root(), name);
    size_t n;
    char *t = file_read_all(path, &n);
    CHECK_MSG(t != NULL, "cannot read %s", path);
    return t;
}

/* Replace the first occurrence of `from` in a malloc'd text by `to`. */
static char *mutate(char *text, const char *from, const char *to)
{
    char *at = strstr(text, from);
    CHECK_MSG(at != NULL, "mutation: '%s' not in the program", from);
    if (!at) return text;
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *r = malloc(n);
    memcpy(r, text, (size_t)(at - text));
    strcpy(r + (at - text), to);
    strcat(r, at + strlen(from));
    free(text);
    return r;
}

/* Parse `text`, run its only kernel; the message (if any) into *msg. */
static int expand_next; /* run_text expands pipelines first */

static tsl_status run_text(const char *text, tile_interp_arg *args, int nargs, int shuffle, char **msg)
{
    tsl_arena *ar = arena_create();
    tsl_source src = {"test.tile", text};
    tsl_diag d = {0};
    tile_module *m = NULL;
    tsl_status st = tile_parse(ar, &src, &d, &m);
    if (!st && expand_next) {
        /* expand, print, and run the re-parsed text: the printed form is the program */
        st = tile_pipeline_expand(m, &src, 0, &d);
        if (!st) {
            char *printed = tile_print(m);
            expand_next = 0;
            tsl_status st2 = run_text(printed, args, nargs, shuffle, msg);
            expand_next = 1;
            free(printed);
            diag_free(&d);
            arena_free(ar);
            return st2;
        }
    }
    if (!st) {
        tile_interp_opts o = {0};
        o.shuffle_blocks = shuffle;
        o.seed = test_rand();
        st = tile_interp_run(m->kernels[0], &src, args, nargs, &o, &d);
    }
    *msg = strdup(sb_str(&d.msg));
    diag_free(&d);
    arena_free(ar);
    return st;
}

static DLTensor *rand_tensor(tsl_dtype dt, int rank, const int64_t *shape)
{
    DLTensor *t = tsl_tensor_alloc(dt, rank, shape);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    size_t es = tsl_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) dtype_store(dt, (char *)t->data + i * (int64_t)es, test_rand_double(-1, 1));
    return t;
}

static DLTensor *nan_tensor(tsl_dtype dt, int rank, const int64_t *shape)
{
    DLTensor *t = tsl_tensor_alloc(dt, rank, shape);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    size_t es = tsl_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) dtype_store(dt, (char *)t->data + i * (int64_t)es, NAN);
    return t;
}

static double at(const DLTensor *t, int64_t i)
{
    tsl_dtype dt;
    tsl_dtype_from_dlpack(t->dtype, &dt);
    return dtype_load(dt, (char *)t->data + i * (int64_t)tsl_dtype_size(dt));
}

/* ldmatrix_move: y == x exactly; a mutated layout or decomposition moves the
 * wrong elements. mode 0: as written; 1: groups swapped in the
 * decomposition; 2: the result layout column-major over the 8x8 tiles. */
static int ldmatrix_case(int mode)
{
    char *text = read_example("ldmatrix_move.tile");
    if (mode == 1) text = mutate(text, "[gm, gn]", "[gn, gm]");
    if (mode == 2) text = mutate(text, "layout local(2, 2).spatial(8, 4)", "layout column_local(2, 2).spatial(8, 4)");
    int64_t sh[2] = {16, 16};
    DLTensor *x = rand_tensor(TSL_DTYPE_F16, 2, sh), *y = nan_tensor(TSL_DTYPE_F16, 2, sh);
    tile_interp_arg args[2] = {{"x", x, 0}, {"y", y, 0}};
    char *msg;
    tsl_status st = run_text(text, args, 2, 0, &msg);
    CHECK_MSG(st == TSL_OK, "ldmatrix_move: %s", msg);
    int same = 1;
    for (int64_t i = 0; i < 256; i++) same &= at(y, i) == at(x, i);
    free(msg);
    free(text);
    tsl_tensor_free(x);
    tsl_tensor_free(y);
    return same;
}

static void test_ldmatrix_move(void)
{
    CHECK_MSG(ldmatrix_case(0), "ldmatrix_move: y != x");
    CHECK_MSG(!ldmatrix_case(1), "a wrong decomposition still gave y == x");
    CHECK_MSG(!ldmatrix_case(2), "a wrong register layout still gave y == x");
}

/* Run a GEMM program on M x N x K and compare with a float64 reference. */
static void gemm_case(const char *text, int64_t M, int64_t N, int64_t K)
{
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    DLTensor *a = rand_tensor(TSL_DTYPE_F16, 2, sa), *b = rand_tensor(TSL_DTYPE_F16, 2, sb),
             *c = nan_tensor(TSL_DTYPE_F32, 2, sc);
    tile_interp_arg args[3] = {{"a", a, 0}, {"b", b, 0}, {"c", c, 0}};
    char *msg;
    tsl_status st = run_text(text, args, 3, 1, &msg);
    CHECK_MSG(st == TSL_OK, "gemm %lldx%lldx%lld: %s", (long long)M, (long long)N, (long long)K, msg);
    int bad = 0;
    for (int64_t i = 0; i < M && !bad; i++)
        for (int64_t j = 0; j < N && !bad; j++) {
            double want = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double p = at(a, i * K + k) * at(b, k * N + j);
                want += p;
                mag += fabs(p);
            }
            double got = at(c, i * N + j);
            if (!(fabs(got - want) <= 1e-5 * mag + 1e-6)) {
                CHECK_MSG(0, "gemm %lldx%lldx%lld: c[%lld,%lld] = %g, want %g", (long long)M, (long long)N,
                          (long long)K, (long long)i, (long long)j, got, want);
                bad = 1;
            }
        }
    free(msg);
    tsl_tensor_free(a);
    tsl_tensor_free(b);
    tsl_tensor_free(c);
}

static void test_gemm(void)
{
    char *text = read_example("gemm.tile");
    gemm_case(text, 67, 45, 40);
    gemm_case(text, 1, 1, 1);
    gemm_case(text, test_rand_int(1, 130), test_rand_int(1, 130), test_rand_int(1, 70));
    free(text);
}

/* Removing the wait or the barrier from the GEMM is a reported hazard. */
static void test_gemm_hazards(void)
{
    const char *cut[] = {"    wait 0\n", "    sync\n    ra =", "    sync\n  }"};
    const char *put[] = {"", "    ra =", "  }"};
    const char *want[] = {"missing wait", "synchronize", "synchronize"};
    for (int i = 0; i < 3; i++) {
        char *text = mutate(read_example("gemm.tile"), cut[i], put[i]);
        int64_t M = test_rand_int(1, 70), N = test_rand_int(1, 70), K = test_rand_int(33, 70);
        int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
        DLTensor *a = rand_tensor(TSL_DTYPE_F16, 2, sa), *b = rand_tensor(TSL_DTYPE_F16, 2, sb),
                 *c = nan_tensor(TSL_DTYPE_F32, 2, sc);
        tile_interp_arg args[3] = {{"a", a, 0}, {"b", b, 0}, {"c", c, 0}};
        char *msg;
        tsl_status st = run_text(text, args, 3, 0, &msg);
        CHECK_MSG(st == TSL_ERR_RUNTIME && strstr(msg, "hazard") && strstr(msg, want[i]),
                  "cut %d: status %d, message: %s", i, st, msg);
        free(msg);
        free(text);
        tsl_tensor_free(a);
        tsl_tensor_free(b);
        tsl_tensor_free(c);
    }
}

static void test_gemm_pipelined(void)
{
    char *text = read_example("gemm_pipelined.tile");
    for (int ex = 0; ex < 2; ex++) {
        expand_next = ex;
        gemm_case(text, 67, 45, 40);
        gemm_case(text, 1, 1, 1);
        gemm_case(text, test_rand_int(1, 100), test_rand_int(1, 100), test_rand_int(1, 200));
    }
    expand_next = 0;
    free(text);
}

/* The expanded pipeline with its wait or its barrier removed reports a hazard. */
static void test_pipeline_hazards(void)
{
    const char *cut[] = {"    wait 1\n", "    wait 1\n    sync\n"};
    const char *put[] = {"", "    wait 1\n"};
    const char *want[] = {"missing wait", "synchronize"};
    for (int i = 0; i < 2; i++) {
        tsl_arena *ar = arena_create();
        char *text = read_example("gemm_pipelined.tile");
        tsl_source src = {"gemm_pipelined.tile", text};
        tsl_diag d = {0};
        tile_module *m = NULL;
        CHECK(tile_parse(ar, &src, &d, &m) == TSL_OK && tile_pipeline_expand(m, &src, 0, &d) == TSL_OK);
        char *printed = m ? tile_print(m) : strdup("");
        printed = mutate(printed, cut[i], put[i]);
        int64_t M = test_rand_int(1, 70), N = test_rand_int(1, 70), K = test_rand_int(97, 200);
        int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
        DLTensor *a = rand_tensor(TSL_DTYPE_F16, 2, sa), *b = rand_tensor(TSL_DTYPE_F16, 2, sb),
                 *c = nan_tensor(TSL_DTYPE_F32, 2, sc);
        tile_interp_arg args[3] = {{"a", a, 0}, {"b", b, 0}, {"c", c, 0}};
        char *msg;
        tsl_status st = run_text(printed, args, 3, 0, &msg);
        CHECK_MSG(st == TSL_ERR_RUNTIME && strstr(msg, "hazard") && strstr(msg, want[i]),
                  "cut %d: status %d, message: %s", i, st, msg);
        free(msg);
        free(printed);
        free(text);
        diag_free(&d);
        arena_free(ar);
        tsl_tensor_free(a);
        tsl_tensor_free(b);
        tsl_tensor_free(c);
    }
}

/* Over the shared-memory budget: the message names the budget and the request. */
static void test_pipeline_budget(void)
{
    char *text = mutate(read_example("gemm_pipelined.tile"), "smem_budget(49152)", "smem_budget(20000)");
    tsl_arena *ar = arena_create();
    tsl_source src = {"gemm_pipelined.tile", text};
    tsl_diag d = {0};
    tile_module *m = NULL;
    CHECK(tile_parse(ar, &src, &d, &m) == TSL_OK);
    tsl_status st = m ? tile_pipeline_expand(m, &src, 0, &d) : TSL_ERR_INTERNAL;
    CHECK(st != TSL_OK);
    CHECK_MSG(strstr(sb_str(&d.msg), "20000") && strstr(sb_str(&d.msg), "24576"), "message: %s", sb_str(&d.msg));
    diag_free(&d);
    arena_free(ar);
    free(text);
}

static void test_blocked_sum(void)
{
    char *text = read_example("blocked_sum.tile");
    for (int rep = 0; rep < 4; rep++) {
        expand_next = rep >= 2;
        int64_t R = rep % 2 ? 1 : test_rand_int(2, 5), M = test_rand_int(1, 40), N = test_rand_int(1, 70);
        int64_t sx[3] = {R, M, N}, so[2] = {M, N};
        DLTensor *x = rand_tensor(TSL_DTYPE_F32, 3, sx), *o = nan_tensor(TSL_DTYPE_F32, 2, so);
        tile_interp_arg args[2] = {{"x", x, 0}, {"o", o, 0}};
        char *msg;
        tsl_status st = run_text(text, args, 2, 0, &msg);
        CHECK_MSG(st == TSL_OK, "blocked_sum: %s", msg);
        for (int64_t i = 0; i < M * N; i++) {
            double want = 0;
            for (int64_t r = 0; r < R; r++) want += at(x, r * M * N + i);
            CHECK_CLOSE(at(o, i), want, 1e-5);
        }
        free(msg);
        tsl_tensor_free(x);
        tsl_tensor_free(o);
    }
    expand_next = 0;
    free(text);
}

/* An A operand whose layout is not R . (the m16n8k16 A fragment) is an
 * error naming the operand; a B layout with warps swapped computes with
 * the wrong tiles (an error: the warp lacks the tile) or a wrong answer. */
static void test_gemm_wrong_fragment_layout(void)
{
    char *text = mutate(read_example("gemm.tile"), "local(2, 2).column_local(2, 2)", "local(2, 2).local(2, 2)");
    int64_t sa[2] = {20, 40}, sb[2] = {40, 30}, sc[2] = {20, 30};
    DLTensor *a = rand_tensor(TSL_DTYPE_F16, 2, sa), *b = rand_tensor(TSL_DTYPE_F16, 2, sb),
             *c = nan_tensor(TSL_DTYPE_F32, 2, sc);
    tile_interp_arg args[3] = {{"a", a, 0}, {"b", b, 0}, {"c", c, 0}};
    char *msg;
    tsl_status st = run_text(text, args, 3, 0, &msg);
    CHECK_MSG(st == TSL_ERR_SHAPE && strstr(msg, "A operand 'ra'") && strstr(msg, "m16n8k16"), "status %d: %s", st, msg);
    free(msg);
    free(text);
    tsl_tensor_free(a);
    tsl_tensor_free(b);
    tsl_tensor_free(c);
}

/* A pipeline whose input block does not change along the last grid axis:
 * it is copied once per i (no re-copy), the resident output accumulates
 * 3 * x, for 1, 2 and 3 stages, unexpanded and expanded. */
static void test_pipeline_unchanged_block(void)
{
    const char *prog =
        "kernel triple(x: global f32[M, N], o: global f32[M, N]) grid(1) threads(64) {\n"
        "  pipeline(grid=(i: cdiv(M, 16), r: 3), stages=STAGES, in=[xb = x[16, 32] at (i, 0) shared], "
        "out=[ob = o[16, 32] at (i, 0) register layout spatial(8, 8).local(2, 4)]) {\n"
        "    t = load_shared xb -> register f32[16, 32] layout spatial(8, 8).local(2, 4)\n"
        "    if r == 0 {\n      copy t -> ob\n    } else {\n      add ob, t -> ob\n    }\n  }\n}\n";
    for (int stages = 1; stages <= 3; stages++)
        for (int ex = 0; ex < 2; ex++) {
            char num[8];
            snprintf(num, sizeof num, "%d", stages);
            char *text = mutate(strdup(prog), "STAGES", num);
            int64_t M = test_rand_int(1, 50), N = test_rand_int(1, 32), sh[2] = {M, N};
            DLTensor *x = rand_tensor(TSL_DTYPE_F32, 2, sh), *o = nan_tensor(TSL_DTYPE_F32, 2, sh);
            tile_interp_arg args[2] = {{"x", x, 0}, {"o", o, 0}};
            char *msg;
            expand_next = ex;
            tsl_status st = run_text(text, args, 2, 0, &msg);
            expand_next = 0;
            CHECK_MSG(st == TSL_OK, "stages %d expand %d: %s", stages, ex, msg);
            for (int64_t i = 0; i < M * N && st == TSL_OK; i++) CHECK_CLOSE(at(o, i), 3 * at(x, i), 1e-6);
            free(msg);
            free(text);
            tsl_tensor_free(x);
            tsl_tensor_free(o);
        }
}

/* ldmatrix.x2: two stacked 8x8 matrices into the mma C-shaped fragment
 * local(2,1).spatial(8,4).local(1,2); only lanes 0..15 give addresses. */
static void test_ldmatrix_x2(void)
{
    const char *prog =
        "kernel ld2(x: global f16[16, 8], y: global f16[16, 8]) grid(1) threads(32) {\n"
        "  s = alloc shared f16[16, 8]\n"
        "  r0 = load_global x[0, 0] -> register f16[16, 8] layout spatial(16, 2).local(1, 4)\n"
        "  store_shared r0 -> s\n"
        "  sync\n"
        "  r = load_shared s -> register f16[16, 8] layout local(2, 1).spatial(8, 4).local(1, 2) decomp {\n"
        "    w = threads 32 tile 8\n"
        "    let g, i = indices w\n"
        "    load_shared s.tile([8, 8])[g % 2, 0].tile([1, 8])[i, 0] -> r.local atom ldmatrix.x2 on w\n"
        "  }\n"
        "  store_global r -> y[0, 0]\n"
        "}\n";
    int64_t sh[2] = {16, 8};
    DLTensor *x = rand_tensor(TSL_DTYPE_F16, 2, sh), *y = nan_tensor(TSL_DTYPE_F16, 2, sh);
    tile_interp_arg args[2] = {{"x", x, 0}, {"y", y, 0}};
    char *msg;
    tsl_status st = run_text(prog, args, 2, 0, &msg);
    CHECK_MSG(st == TSL_OK, "ldmatrix.x2: %s", msg);
    for (int64_t i = 0; i < 128 && st == TSL_OK; i++) CHECK(at(y, i) == at(x, i));
    free(msg);
    tsl_tensor_free(x);
    tsl_tensor_free(y);
}

/* ---- fma: one rounding ------------------------------------------------------------ */

/* v == m 2^x with m odd (0 when v is); v finite. */
static void fma_split(double v, int64_t *m, int *x)
{
    int e;
    *m = (int64_t)ldexp(frexp(v, &e), 53);
    *x = e - 53;
    while (*m && *m % 2 == 0) *m /= 2, ++*x;
}

/* a*b + c rounded to the format of `man` mantissa bits and least normal
 * exponent emin, to nearest even, in integers alone (no double sum, no
 * midpoint test): the exact sum as n 2^x in an int64; or, when the terms'
 * last bits lie more than 40 apart (then the lower term is below 2^-18 of
 * the higher's last bit), the higher with ±2^-40 of its last bit for the
 * lower: the format's midpoints near it are multiples of 2^-12 of that
 * bit, so none lies between the two sums. For a, b, c of at most 11
 * significant bits (a*b exact, 22 bits). *tie: the exact sum is a
 * midpoint of the format. */
static double fma_model(double a, double b, double c, int man, int emin, int *tie)
{
    double p = a * b;
    *tie = 0;
    if (!isfinite(p) || !isfinite(c)) return p + c;
    int64_t mp, mc, n;
    int xp, xc, x;
    fma_split(p, &mp, &xp);
    fma_split(c, &mc, &xc);
    if (!mp || !mc) {
        if (!mp && !mc) return p + c; /* IEEE's signed zero */
        n = mp ? mp : mc, x = mp ? xp : xc;
    } else {
        int64_t mh = xp >= xc ? mp : mc, ml = xp >= xc ? mc : mp;
        int xh = xp >= xc ? xp : xc, xl = xp >= xc ? xc : xp;
        if (xh - xl <= 40) n = mh * ((int64_t)1 << (xh - xl)) + ml, x = xl;
        else n = mh * ((int64_t)1 << 40) + (ml > 0 ? 1 : -1), x = xh - 40;
    }
    if (!n) return 0.0; /* an exact cancellation is +0 */
    uint64_t u = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
    int top = x; /* floor(log2 |n 2^x|) */
    for (uint64_t t = u; t > 1; t >>= 1) top++;
    int q = (top > emin ? top : emin) - man; /* the format's unit there: 2^q */
    if (q > x) {
        int sh = q - x;
        uint64_t kept = sh < 64 ? u >> sh : 0, rem = sh < 64 ? u & ((1ull << sh) - 1) : u;
        uint64_t half = sh <= 64 ? 1ull << (sh - 1) : UINT64_MAX;
        *tie = rem == half;
        u = kept + (rem > half || (rem == half && (kept & 1)));
        x = q;
    }
    double r = ldexp((double)u, x);
    if (r >= ldexp(1, 2 - emin)) r = INFINITY;
    return n < 0 ? -r : r;
}

/* fma on f16 and bf16 in the interpreter against the model, bit for bit,
 * on test_fma_fill's inputs (ties and the double-rounding corner counted:
 * each must occur); the corner also by its definition, rounded toward c.
 * f32 (the interpreter's fmaf) against tsl_fma16 with f32's parameters:
 * two independent single roundings, where double rounding from double to
 * f32 is common. */
static void test_fma_one_rounding(void)
{
    static const tsl_dtype dts[] = {TSL_DTYPE_F16, TSL_DTYPE_BF16, TSL_DTYPE_F32};
    for (size_t di = 0; di < TSL_COUNTOF(dts); di++) {
        tsl_dtype dt = dts[di];
        const dtype_desc *dd = &dtype_info_of(dt)->desc;
        int man = dd->man, emin = 1 - dd->bias, ties = 0, corners = 0, bad = 0;
        int64_t n = 4000 + test_rand_int(0, 95);
        DLTensor *A = tsl_tensor_alloc(dt, 1, &n), *B = tsl_tensor_alloc(dt, 1, &n), *C = tsl_tensor_alloc(dt, 1, &n);
        DLTensor *Z = nan_tensor(dt, 1, &n), *W = nan_tensor(dt, 1, &n);
        test_fma_fill(dt, A->data, B->data, C->data, n);
        tile_interp_arg args[5] = {{"A", A, 0}, {"B", B, 0}, {"C", C, 0}, {"Z", Z, 0}, {"W", W, 0}};
        char *text = test_fma_program(dt), *msg = NULL;
        tsl_status st = run_text(text, args, 5, 1, &msg);
        CHECK_MSG(st == TSL_OK, "fma %s: %s", dtype_info_of(dt)->tname, msg);
        double s = dtype_round(dt, -0.3);
        for (int64_t i = 0; i < n && !st && bad < 5; i++) {
            double a = at(A, i), b = at(B, i), c = at(C, i), want[2];
            int tie = 0, tie2 = 0;
            if (dt == TSL_DTYPE_F32) {
                want[0] = tsl_fma16(a, b, c, man, emin), want[1] = tsl_fma16(a, s, c, man, emin);
            } else {
                want[0] = fma_model(a, b, c, man, emin, &tie), want[1] = fma_model(a, s, c, man, emin, &tie2);
                ties += tie + tie2;
            }
            for (int w = 0; w < 2; w++) {
                double got = at(w ? W : Z, i);
                if (!(isnan(got) && isnan(want[w])) && (got != want[w] || signbit(got) != signbit(want[w]))) {
                    CHECK_MSG(0, "fma %s [%lld]: %a * %a + %a = %a, want %a", dtype_info_of(dt)->tname, (long long)i,
                              a, w ? s : b, c, got, want[w]);
                    bad++;
                }
            }
            if (i % 4 == 3) { /* a*b a midpoint, c far below its half unit: a*b's neighbour on c's side */
                int e;
                frexp(a * b, &e);
                double toward = a * b + copysign(ldexp(1, e - 1 - man - 1), c);
                CHECK_MSG(at(Z, i) == toward, "fma %s corner [%lld]: %a * %a + %a = %a, want %a",
                          dtype_info_of(dt)->tname, (long long)i, a, b, c, at(Z, i), toward);
                corners++;
            }
        }
        if (dt != TSL_DTYPE_F32) CHECK_MSG(ties > 20, "fma %s: only %d ties tested", dtype_info_of(dt)->tname, ties);
        CHECK(corners > 500);
        free(text);
        free(msg);
        tsl_tensor_free(A);
        tsl_tensor_free(B);
        tsl_tensor_free(C);
        tsl_tensor_free(Z);
        tsl_tensor_free(W);
    }
}

TEST_SUITE(tile_interp) = {
    {"mem_raw_needs_sync", test_mem_raw_needs_sync},
    {"mem_async_groups", test_mem_async_groups},
    {"mem_async_many", test_mem_async_many},
    {"ldmatrix_move", test_ldmatrix_move},
    {"ldmatrix_x2", test_ldmatrix_x2},
    {"gemm", test_gemm},
    {"gemm_hazards", test_gemm_hazards},
    {"gemm_pipelined", test_gemm_pipelined},
    {"pipeline_hazards", test_pipeline_hazards},
    {"pipeline_budget", test_pipeline_budget},
    {"blocked_sum", test_blocked_sum},
    {"gemm_wrong_fragment_layout", test_gemm_wrong_fragment_layout},
    {"pipeline_unchanged_block", test_pipeline_unchanged_block},
    {"fma_one_rounding", test_fma_one_rounding},
    {0},
};
