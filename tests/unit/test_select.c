/* test_select.c — instruction selection (src/target/select.c): what it
 * writes into the IR on each target, the explicit fallbacks, the checks of
 * atoms a program names and their located errors, re-selection for another
 * target, and that selecting twice changes nothing. Programs are data: the
 * atom each instruction must get is read from the selected text. */
#include <string.h>

#include "target/select.h"
#include "test.h"
#include "tile/tile.h"

/* Parse, verify and select `text` for target t; the printed module after
 * selection (malloc'd) or NULL with the diagnostics in *msg. */
static char *selected_text(const char *text, const target *t, char **msg)
{
    tsl_arena *a = arena_create();
    tsl_source src = {"sel.tile", text};
    tsl_diag d = {0};
    tile_module *m = NULL;
    tsl_status st = tile_parse(a, &src, &d, &m);
    if (!st) st = tile_verify(m, &src, &d);
    if (!st) st = target_select(m, NULL, t, &src, &d);
    char *out = st ? NULL : tile_print(m);
    *msg = strdup(sb_str(&d.msg));
    diag_free(&d);
    arena_free(a);
    return out;
}

/* The line of `text` containing `what`, must also contain `atom`. */
static void check_atom(const char *text, const char *what, const char *atom)
{
    const char *p = text ? strstr(text, what) : NULL;
    CHECK_MSG(p != NULL, "no line with '%s' in\n%s", what, text ? text : "(null)");
    if (!p) return;
    const char *b = p, *e = strchr(p, '\n');
    while (b > text && b[-1] != '\n') b--;
    size_t n = e ? (size_t)(e - b) : strlen(b);
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)n, b);
    char want[128];
    snprintf(want, sizeof want, " atom %s", atom);
    CHECK_MSG(strstr(line, want) != NULL, "'%s' should select %s", line, atom);
}

static void check_error(const char *text, const target *t, const char *where, const char *part)
{
    char *msg;
    char *out = selected_text(text, t, &msg);
    CHECK_MSG(out == NULL, "should fail on %s:\n%s", t->name, out ? out : "");
    CHECK_MSG(strstr(msg, where) && strstr(msg, part), "message '%s' lacks '%s' / '%s'", msg, where, part);
    free(out);
    free(msg);
}

#define MOVES                                                                                                     \
    "kernel moves(X: global f32[N], Y: global f32[N], H: global f16[M, 64]) grid(1) threads(128) {\n"               \
    "  x = load_global X[0] -> register f32[512] layout spatial(128).local(4)\n"                                   \
    "  y = load_global X[0] -> register f32[512] layout local(4).spatial(128)\n"                                   \
    "  s = alloc shared f16[32, 64]\n"                                                                             \
    "  copy_async H[0, 0] -> s bytes 16\n"                                                                         \
    "  commit\n  wait 0\n  sync\n"                                                                                 \
    "  h = load_shared s -> register f16[32, 64] layout spatial(32, 4).local(1, 16)\n"                             \
    "  store_global x -> Y[0]\n"                                                                                   \
    "}\n"

static void test_cuda_moves(void)
{
    char *msg;
    char *t = selected_text(MOVES, &target_sm80, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "x = load_global", "ld.global.v4.u32");        /* 4 consecutive f32 per thread */
    check_atom(t, "y = load_global", "scalar.ld.global");        /* strided locals: the fallback, recorded */
    check_atom(t, "copy_async H", "cp.async.cg.shared.global");  /* 16-byte chunks, contiguous */
    check_atom(t, "h = load_shared", "ld.shared.v4.u32");        /* 16 f16 per thread: 2 x 16 bytes */
    check_atom(t, "store_global x", "st.global.v4.u32");
    free(t);
    free(msg);
    /* the CPU runs every transfer as C loops */
    t = selected_text(MOVES, &target_cpu, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "x = load_global", "cpu.copy");
    check_atom(t, "copy_async H", "cpu.copy");
    check_atom(t, "store_global x", "cpu.copy");
    free(t);
    free(msg);
}

#define GEMM_FRAGS(ACC, ATOM)                                                                                     \
    "kernel g(A: global f16[16, 16], B: global f16[16, 8], C: global " ACC "[16, 8]) grid(1) threads(32) {\n"       \
    "  sa = alloc shared f16[16, 16]\n"                                                                             \
    "  sb = alloc shared f16[16, 8]\n"                                                                              \
    "  copy_async A[0, 0] -> sa\n  copy_async B[0, 0] -> sb\n  commit\n  wait 0\n  sync\n"                          \
    "  a = load_shared sa -> register f16[16, 16] layout column_local(2,2).spatial(8,4).local(1,2)\n"               \
    "  b = load_shared sb -> register f16[16, 8] layout local(2,1).column_spatial(4,8).local(2,1)\n"                \
    "  c = alloc register " ACC "[16, 8] layout local(2,1).spatial(8,4).local(1,2) init 0\n"                        \
    "  d = mma a, b, c" ATOM "\n"                                                                                   \
    "  store_global d -> C[0, 0]\n"                                                                                 \
    "}\n"

static void test_cuda_mma(void)
{
    char *msg;
    char *t = selected_text(GEMM_FRAGS("f32", ""), &target_sm80, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "a = load_shared", "ldmatrix.x4");
    check_atom(t, "b = load_shared", "ldmatrix.x2.trans");
    check_atom(t, "d = mma", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
    free(t);
    free(msg);
    /* an alias names the shape and stays as written when the row fits */
    t = selected_text(GEMM_FRAGS("f32", " atom m16n8k16"), &target_sm80, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "d = mma", "m16n8k16");
    free(t);
    free(msg);
    /* f16 accumulators: their row (printed through tsl_mma_f16_f16) */
    t = selected_text(GEMM_FRAGS("f16", ""), &target_sm80, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "d = mma", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16");
    free(t);
    free(msg);
    /* f32 operands: the tf32 row only by its exact name, never silently */
    const char *f32mma = "kernel g(C: global f32[16, 8]) grid(1) threads(32) {\n"
                         "  a = alloc register f32[16, 8] layout column_local(2,2).spatial(8,4) init 1\n"
                         "  b = alloc register f32[8, 8] layout local(2,1).column_spatial(4,8) init 1\n"
                         "  c = alloc register f32[16, 8] layout local(2,1).spatial(8,4).local(1,2) init 0\n"
                         "  d = mma a, b, c%s\n"
                         "  store_global d -> C[0, 0]\n}\n";
    char f32t[1024];
    snprintf(f32t, sizeof f32t, f32mma, "");
    check_error(f32t, &target_sm80, "sel.tile:5:", "mma");
    snprintf(f32t, sizeof f32t, f32mma, " atom m16n8k8");
    check_error(f32t, &target_sm80, "sel.tile:5:", "mma");
    snprintf(f32t, sizeof f32t, f32mma, " atom mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    t = selected_text(f32t, &target_sm80, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "d = mma", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    free(t);
    free(msg);
    /* on the CPU the mma is its warp-level row (emulated) */
    t = selected_text(GEMM_FRAGS("f16", ""), &target_cpu, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "d = mma", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16");
    free(t);
    free(msg);
    /* an exact name is binding: no fallback behind it (the f16 row, whose
     * operands are bf16 here, does not exist for them) */
    check_error(GEMM_FRAGS("f32", " atom mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"), &target_sm80,
                "sel.tile:12:3: error:", "mma");
    /* warp 1 computes C tile row 0 but holds A's row 1 */
    const char *wrong = "kernel g(C: global f32[32, 8]) grid(1) threads(64) {\n"
                        "  a = alloc register f16[32, 16] layout spatial(2,1).column_local(2,2).spatial(8,4).local(1,2) init 1\n"
                        "  b = alloc register f16[16, 8] layout replicate(2).local(2,1).column_spatial(4,8).local(2,1) init 1\n"
                        "  c = alloc register f32[32, 8] layout replicate(2).local(2,1).local(2,1).spatial(8,4).local(1,2) init 0\n"
                        "  d = mma a, b, c atom mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32\n"
                        "  store_global d -> C[0, 0]\n}\n";
    check_error(wrong, &target_sm80, "sel.tile:5:3: error:",
                "mma: atom mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 does not fit: the operands are not its "
                "fragments tiled over the warps");
    /* the same without the exact name: the explicit fallback */
    char *w2 = strdup(wrong);
    char *at = strstr(w2, " atom mma.sync");
    memmove(at, strchr(at, '\n'), strlen(strchr(at, '\n')) + 1);
    t = selected_text(w2, &target_sm80, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "d = mma", "scalar.mma.m16n8k16");
    free(t);
    free(msg);
    free(w2);
}

/* atoms a program names that do not fit are errors at the instruction */
static void test_named_errors(void)
{
    const char *hdr = "kernel k(X: global f32[N], Y: global f32[N]) grid(1) threads(128) {\n";
    char text[2048];
    snprintf(text, sizeof text,
             "%s  y = load_global X[0] -> register f32[512] layout local(4).spatial(128) atom ld.global.v4.u32\n}\n", hdr);
    check_error(text, &target_sm80, "sel.tile:2:3: error:",
                "load_global: atom ld.global.v4.u32 does not fit: groups of its locals are not consecutive");
    snprintf(text, sizeof text,
             "%s  y = load_global X[0] -> register f32[512] layout spatial(128).local(4) atom ld.global.v8.u32\n}\n", hdr);
    check_error(text, &target_sm80, "sel.tile:2:3: error:", "load_global: unknown atom 'ld.global.v8.u32'");
    snprintf(text, sizeof text,
             "%s  y = load_global X[0] -> register f32[512] layout spatial(128).local(4) atom st.global.v4.u32\n}\n", hdr);
    /* (the verifier's rule: the name exists but implements another op) */
    check_error(text, &target_sm80, "sel.tile:2:3: error:", "load_global: atom st.global.v4.u32 does not implement load_global");
    /* a narrower vector than the widest that fits is fine when named */
    snprintf(text, sizeof text,
             "%s  y = load_global X[0] -> register f32[512] layout spatial(128).local(4) atom ld.global.v2.u32\n}\n", hdr);
    char *msg, *t = selected_text(text, &target_sm80, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "y = load_global", "ld.global.v2.u32");
    free(t);
    free(msg);
    /* an sm_90 atom on sm_80 */
    snprintf(text, sizeof text,
             "%s  s = alloc shared f16[16, 16]\n"
             "  r = alloc register f16[16, 16] layout local(2,2).spatial(8,4).local(1,2) init 0\n"
             "  store_shared r -> s atom stmatrix.x4\n}\n",
             "kernel k() grid(1) threads(32) {\n");
    check_error(text, &target_sm80, "sel.tile:4:3: error:", "store_shared: atom stmatrix.x4 needs sm_90; the target is sm_80");
    /* a chunk size the named cp.async has no form of */
    snprintf(text, sizeof text,
             "kernel k(A: global f32[M, 32]) grid(1) threads(32) {\n  s = alloc shared f32[8, 32]\n"
             "  copy_async A[0, 0] -> s bytes 8 atom cp.async.cg.shared.global\n}\n");
    check_error(text, &target_sm80, "sel.tile:3:3: error:",
                "copy_async: atom cp.async.cg.shared.global has no form for this instruction and chunk size");
    /* an atom on an instruction no atom implements */
    snprintf(text, sizeof text, "%s  x = load_global X[0] -> register f32[512] layout spatial(128).local(4)\n"
                                "  y = exp x atom ld.global.v4.u32\n}\n", hdr);
    check_error(text, &target_cpu, "sel.tile:3:3: error:", "exp: atom ld.global.v4.u32 does not implement exp");
}

/* A micro-kernel asked for where the loop is not its pattern. */
static void test_ukr_errors(void)
{
    const char *text =
        "kernel k(A: global f32[M, K]) grid(1) threads(4) {\n"
        "  acc = alloc register f32[8, 8] layout spatial(2, 2).local(4, 4) init 0\n"
        "  x = alloc register f32[8, 8] layout spatial(2, 2).local(4, 4) init 1\n"
        "  for k in 0 : 4 {\n"
        "    add acc, x -> acc atom cpu.ukr.f32\n"
        "  }\n"
        "  add acc, x -> acc atom cpu.ukr.f32\n"
        "}\n";
    check_error(text, &target_cpu, "sel.tile:5:5: error:",
                "add: atom cpu.ukr.f32 does not fit: the loop body is not the six to eight statements of the k step");
    check_error(text, &target_cpu, "sel.tile:7:3: error:", "add: atom cpu.ukr.f32 does not fit: it must end the body of a `for` loop");
    check_error(text, &target_sm80, "sel.tile:5:5: error:", "add: atom cpu.ukr.f32 is a CPU micro-kernel; the target is sm_80");
}

/* Selecting twice changes nothing; selecting for the CPU after CUDA (and
 * back) gives each target's own choice. */
static void test_reselect(void)
{
    tsl_arena *a = arena_create();
    tsl_source src = {"sel.tile", MOVES};
    tsl_diag d = {0};
    tile_module *m = NULL;
    CHECK(!tile_parse(a, &src, &d, &m) && !tile_verify(m, &src, &d));
    CHECK(!target_select(m, NULL, &target_sm80, &src, &d));
    char *t1 = tile_print(m);
    CHECK(!target_select(m, NULL, &target_sm80, &src, &d));
    char *t2 = tile_print(m);
    CHECK_EQ_STR(t1, t2);
    CHECK(!target_select(m, NULL, &target_cpu, &src, &d));
    char *t3 = tile_print(m);
    check_atom(t3, "x = load_global", "cpu.copy");
    CHECK(!target_select(m, NULL, &target_sm80, &src, &d));
    char *t4 = tile_print(m);
    CHECK_EQ_STR(t1, t4);
    CHECK_MSG(d.nerr == 0, "%s", sb_str(&d.msg));
    free(t1);
    free(t2);
    free(t3);
    free(t4);
    diag_free(&d);
    arena_free(a);
}

/* Atoms inside a decomposition must run on the target. */
static void test_decomp_atoms(void)
{
    const char *text =
        "kernel k() grid(1) threads(32) {\n"
        "  s = alloc shared f16[16, 16]\n"
        "  r = load_shared s -> register f16[16, 16] layout local(2,2).spatial(8,4).local(1,2) decomp {\n"
        "    warp = threads 32 tile 8 reshape [2, 2]\n"
        "    let gm, gn, lane = indices warp\n"
        "    load_shared s.tile([8, 8])[gm, gn].tile([1, 8])[lane, 0] -> r.local.tile([1, 2]) atom ldmatrix.x4 on warp\n"
        "  }\n}\n";
    char *msg, *t = selected_text(text, &target_cpu, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    free(t);
    free(msg);
    t = selected_text(text, &target_sm80, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    free(t);
    free(msg);
}

/* The Hopper instructions get their sm90 rows on sm_90a and are errors at
 * the instruction on targets without them. */
static void test_hopper_rows(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/tile/gemm_wgmma.tile", test_root());
    size_t n;
    char *text = file_read_all(path, &n);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) return;
    char *msg, *t = selected_text(text, &target_sm90a, &msg);
    CHECK_MSG(t != NULL, "%s", msg);
    check_atom(t, "tma_load A[", "cp.async.bulk.tensor.2d.shared.global");
    check_atom(t, "wgmma as[", "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16");
    free(t);
    free(msg);
    check_error(text, &target_sm80, "error: tma_load: the target sm_80 has no cp.async.bulk.tensor.2d.shared.global",
                "(it needs sm_90)");
    check_error(text, target_by_name("sm_90"), "error: wgmma: the target sm_90 has no",
                "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 (it needs sm_90a)");
    free(text);
}

TEST_SUITE(select) = {
    {"hopper_rows", test_hopper_rows},
    {"cuda_moves", test_cuda_moves},
    {"cuda_mma", test_cuda_mma},
    {"named_errors", test_named_errors},
    {"ukr_errors", test_ukr_errors},
    {"reselect", test_reselect},
    {"decomp_atoms", test_decomp_atoms},
    {0, 0},
};
