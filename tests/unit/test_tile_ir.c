/* test_tile_ir.c — the tile IR core: golden round trips (parse, print,
 * byte compare, again), the builder, random expressions through print and
 * parse, dtypes, one verifier test per error class (location and message
 * fragment), and parser errors on bad, truncated, random and deeply nested
 * input. */
#include <string.h>

#include "test.h"
#include "tile/tile.h"

static const char *const goldens[] = {
    "gemm.tile",        "gemm_pipelined.tile", "ldmatrix.tile", "blocked_sum.tile",
    "softmax_rows.tile", "elementwise.tile",   "control.tile",  "shuffle.tile",
    "dequant.tile",     "quadpairs.tile",      "async_copy.tile", "tiny.tile",
    "blocks_out.tile",  "hopper_gemm.tile",    "shared_view.tile", "fma.tile",
};

/* Parse text as file `name`; returns the status, fills *m (NULL on error)
 * and leaves messages in d. */
static tsl_status parse_as(tsl_arena *a, const char *name, const char *text, tsl_diag *d, tile_module **m)
{
    tsl_source src = {name, text};
    return tile_parse(a, &src, d, m);
}

static void test_golden_roundtrip(void)
{
    for (size_t i = 0; i < TSL_COUNTOF(goldens); i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/tile_golden/%s", test_root(), goldens[i]);
        size_t len;
        char *text = file_read_all(path, &len);
        CHECK_MSG(text != NULL, "cannot read %s", path);
        if (!text) continue;
        tsl_arena *a = arena_create();
        tsl_diag d = {0};
        tile_module *m = NULL;
        tsl_source src = {goldens[i], text};
        tsl_status st = tile_parse(a, &src, &d, &m);
        CHECK_MSG(st == TSL_OK, "%s: %s", goldens[i], sb_str(&d.msg));
        if (st == TSL_OK) {
            st = tile_verify(m, &src, &d);
            CHECK_MSG(st == TSL_OK, "%s does not verify: %s", goldens[i], sb_str(&d.msg));
            char *p1 = tile_print(m);
            CHECK_MSG(strcmp(p1, text) == 0, "%s: print differs from the file:\n%s", goldens[i], p1);
            tile_module *m2 = NULL;
            st = parse_as(a, goldens[i], p1, &d, &m2);
            CHECK_MSG(st == TSL_OK, "%s: reparse: %s", goldens[i], sb_str(&d.msg));
            if (m2) {
                char *p2 = tile_print(m2);
                CHECK_EQ_STR(p2, p1);
                free(p2);
            }
            free(p1);
        }
        diag_free(&d);
        arena_free(a);
        free(text);
    }
}

/* ---- random expressions ------------------------------------------------------ */

static tile_expr *rand_expr(tile_module *m, tile_value **vars, int nvars, int depth)
{
    long r = test_rand_int(0, 9);
    if (depth <= 0 || r < 3) {
        if (nvars && test_rand_int(0, 2) == 0) return tile_expr_value(m, vars[test_rand_int(0, nvars - 1)]);
        if (test_rand_int(0, 5) == 0) return tile_expr_block_idx(m, (int)test_rand_int(0, 2));
        return tile_expr_int(m, test_rand_int(-50, 50));
    }
    if (r == 3) return tile_expr_un(m, test_rand_int(0, 1) ? TILE_E_NEG : TILE_E_NOT, rand_expr(m, vars, nvars, depth - 1));
    tile_binop op = (tile_binop)test_rand_int(0, TILE_OP_COUNT - 1);
    return tile_expr_bin(m, op, rand_expr(m, vars, nvars, depth - 1), rand_expr(m, vars, nvars, depth - 1));
}

typedef struct env {
    tile_value **vars;
    int64_t *vals;
    int n;
} env;

static int64_t env_lookup(void *ctx, const tile_value *v, int *ok)
{
    env *E = ctx;
    for (int i = 0; i < E->n; i++)
        if (E->vars[i] == v || strcmp(E->vars[i]->name, v->name) == 0) return E->vals[i];
    *ok = 0;
    return 0;
}

/* Random expressions print, parse back to the same text, and evaluate to
 * the same value as the tree that was built. */
static void test_expr_roundtrip(void)
{
    for (int iter = 0; iter < 200; iter++) {
        tsl_arena *a = arena_create();
        tile_module *m = tile_module_new(a);
        tile_kernel *k = tile_kernel_new(m, "ex", 32);
        tile_value *vars[3];
        int64_t vals[3];
        const char *names[3] = {"M", "n", "K"};
        for (int i = 0; i < 3; i++) {
            vars[i] = i == 1 ? tile_kernel_param_scalar(m, k, names[i]) : tile_kernel_symbol(m, k, names[i]);
            vals[i] = test_rand_int(-20, 20);
        }
        /* symbols need a tensor parameter that uses them */
        tile_expr *dims[2] = {tile_expr_value(m, vars[0]), tile_expr_value(m, vars[2])};
        tile_kernel_param_tensor(m, k, "X", tile_dtype_from_tsl(TSL_DTYPE_F32), 2, dims);
        tile_builder b;
        tile_build_begin(&b, m, k);
        tile_expr *e = rand_expr(m, vars, 3, 5);
        tile_build_let(&b, "v", e);
        char *p1 = tile_print(m);
        tsl_diag d = {0};
        tile_module *m2 = NULL;
        tsl_status st = parse_as(a, "expr.tile", p1, &d, &m2);
        CHECK_MSG(st == TSL_OK, "%s\n%s", p1, sb_str(&d.msg));
        if (m2) {
            char *p2 = tile_print(m2);
            CHECK_EQ_STR(p2, p1);
            free(p2);
            const tile_stmt *s2 = m2->kernels[0]->body->items[0];
            env E1 = {vars, vals, 3};
            int64_t bidx[3] = {test_rand_int(0, 9), test_rand_int(0, 9), test_rand_int(0, 9)};
            int ok1 = 1, ok2 = 1;
            int64_t v1 = tile_expr_eval(e, env_lookup, &E1, bidx, -1, &ok1);
            int64_t v2 = tile_expr_eval(s2->e, env_lookup, &E1, bidx, -1, &ok2);
            CHECK_EQ_INT(ok1, ok2);
            if (ok1 && ok2) CHECK_MSG(v1 == v2, "%s: %lld vs %lld", p1, (long long)v1, (long long)v2);
        }
        free(p1);
        diag_free(&d);
        arena_free(a);
    }
}

static void test_expr_eval(void)
{
    tsl_arena *a = arena_create();
    tile_module *m = tile_module_new(a);
    int64_t x = test_rand_int(-1000, 1000), y = test_rand_int(1, 37), v;
    tile_expr *ex = tile_expr_int(m, x), *ey = tile_expr_int(m, y);
    int64_t fl = x >= 0 ? x / y : -((-x + y - 1) / y);
    CHECK(tile_expr_const(tile_expr_bin(m, TILE_OP_DIV, ex, ey), &v));
    CHECK_EQ_INT(v, fl);
    CHECK(tile_expr_const(tile_expr_bin(m, TILE_OP_MOD, ex, ey), &v));
    CHECK_EQ_INT(v, x - fl * y);
    CHECK(tile_expr_const(tile_expr_bin(m, TILE_OP_CDIV, ex, ey), &v));
    CHECK_EQ_INT(v, -((-x >= 0) ? (-x) / y : -((x + y - 1) / y)));
    CHECK(!tile_expr_const(tile_expr_bin(m, TILE_OP_DIV, ex, tile_expr_int(m, 0)), &v));
    arena_free(a);
}

static void test_dtypes(void)
{
    for (int t = 0; t < TSL_DTYPE_COUNT; t++) {
        tile_dtype dt = tile_dtype_from_tsl((tsl_dtype)t), back;
        char buf[16];
        const char *n = tile_dtype_name(dt, buf);
        CHECK(tile_dtype_parse(n, strlen(n), &back) == 0);
        CHECK(tile_dtype_eq(dt, back));
        tsl_dtype tt;
        CHECK(tile_dtype_to_tsl(back, &tt) == 0 && (int)tt == t);
        CHECK_EQ_INT(dt.bits, dtype_info_of((tsl_dtype)t)->bits == 8 && t == TSL_DTYPE_BOOL ? 8 : dtype_info_of((tsl_dtype)t)->bits);
    }
    const char *low[] = {"i2", "i4", "i7", "u1", "u3", "u8", "f6e3m2", "f8e4m3", "f4e2m1", "f3e1m1"};
    for (size_t i = 0; i < TSL_COUNTOF(low); i++) {
        tile_dtype dt;
        char buf[16];
        CHECK_MSG(tile_dtype_parse(low[i], strlen(low[i]), &dt) == 0, "%s", low[i]);
        CHECK_EQ_STR(tile_dtype_name(dt, buf), low[i]);
    }
    const char *bad[] = {"i1", "u9", "f6e3m3", "f", "x8", "f6e0m5", "i", "u0"};
    for (size_t i = 0; i < TSL_COUNTOF(bad); i++) {
        tile_dtype dt;
        CHECK_MSG(tile_dtype_parse(bad[i], strlen(bad[i]), &dt) != 0, "%s parsed", bad[i]);
    }
    tile_dtype h;
    CHECK(tile_dtype_parse("half", 4, &h) == 0 && h.bits == 16 && h.man == 10);
}

/* ---- builder ------------------------------------------------------------------ */

/* Builds a copy kernel Y = X + s with random tile sizes, prints it, and
 * checks the text, the verifier, and the round trip. */
static void test_builder(void)
{
    tsl_arena *a = arena_create();
    tile_module *m = tile_module_new(a);
    int warps = (int)test_rand_int(1, 4), per = (int)test_rand_int(1, 5);
    int threads = 32 * warps, tile = threads * per;
    tile_kernel *k = tile_kernel_new(m, "scale", threads);
    tile_value *n = tile_kernel_symbol(m, k, "N");
    tile_expr *dn = tile_expr_value(m, n);
    tile_dtype f32 = tile_dtype_from_tsl(TSL_DTYPE_F32);
    tile_value *X = tile_kernel_param_tensor(m, k, "X", f32, 1, &dn);
    tile_value *Y = tile_kernel_param_tensor(m, k, "Y", f32, 1, &dn);
    k->grid[0] = tile_expr_bin(m, TILE_OP_CDIV, tile_expr_value(m, n), tile_expr_int(m, tile));
    tile_builder b;
    tile_build_begin(&b, m, k);
    char lt[64];
    snprintf(lt, sizeof lt, "spatial(%d).local(%d)", threads, per);
    char *err = NULL;
    tile_layout *L = tile_layout_make(m, lt, &err);
    CHECK_MSG(L != NULL, "%s", err ? err : "");
    if (!L) {
        arena_free(a);
        return;
    }
    int64_t dims[1] = {tile};
    tile_stmt *ld = tile_build_instr(&b, TILE_I_LOAD_GLOBAL, "x");
    tile_operand src = tile_operand_tensor(X);
    tile_expr *off = tile_expr_bin(m, TILE_OP_MUL, tile_expr_block_idx(m, 0), tile_expr_int(m, tile));
    tile_operand_index(m, &src, 1, &off);
    tile_instr_arg(m, &ld->instr, src);
    tile_instr_result_type(ld, tile_type_make(m, TILE_REGISTER, f32, 1, dims, L));
    ld->instr.init = tile_expr_float(m, 0.25);
    tile_stmt *add = tile_build_instr(&b, TILE_I_ADD, "y");
    tile_instr_arg(m, &add->instr, tile_operand_tensor(ld->instr.result));
    tile_instr_arg(m, &add->instr, tile_operand_scalar(tile_expr_float(m, -1.5)));
    tile_instr_infer(add);
    tile_stmt *loop = tile_build_for(&b, "i", tile_expr_int(m, 0), tile_expr_int(m, 2), NULL);
    tile_build_push(&b, loop->body);
    tile_stmt *mul = tile_build_instr(&b, TILE_I_MUL, NULL);
    tile_instr_arg(m, &mul->instr, tile_operand_tensor(add->instr.result));
    tile_instr_arg(m, &mul->instr, tile_operand_scalar(tile_expr_value(m, loop->v)));
    tile_instr_dst(&mul->instr, tile_operand_tensor(add->instr.result));
    tile_build_pop(&b);
    tile_stmt *stg = tile_build_instr(&b, TILE_I_STORE_GLOBAL, NULL);
    tile_instr_arg(m, &stg->instr, tile_operand_tensor(add->instr.result));
    tile_operand dst = tile_operand_tensor(Y);
    tile_operand_index(m, &dst, 1, &off);
    tile_instr_dst(&stg->instr, dst);

    tsl_diag d = {0};
    CHECK_MSG(tile_verify(m, NULL, &d) == TSL_OK, "%s", sb_str(&d.msg));
    char *p = tile_print(m);
    char want[1024];
    snprintf(want, sizeof want,
             "kernel scale(X: global f32[N], Y: global f32[N]) grid(cdiv(N, %d)) threads(%d) {\n"
             "  x = load_global X[block_idx.x * %d] -> register f32[%d] layout %s fill 0.25\n"
             "  y = add x, -1.5\n"
             "  for i in 0 : 2 {\n"
             "    mul y, i -> y\n"
             "  }\n"
             "  store_global y -> Y[block_idx.x * %d]\n"
             "}\n",
             tile, threads, tile, tile, L->text, tile);
    CHECK_EQ_STR(p, want);
    tile_module *m2 = NULL;
    CHECK_MSG(parse_as(a, "built.tile", p, &d, &m2) == TSL_OK, "%s", sb_str(&d.msg));
    if (m2) {
        char *p2 = tile_print(m2);
        CHECK_EQ_STR(p2, p);
        free(p2);
        CHECK(tile_module_find(m2, "scale") != NULL);
        CHECK(tile_module_find(m2, "nope") == NULL);
        /* the result type of a RES_LIKE op is filled in */
        const tile_stmt *s = m2->kernels[0]->body->items[1];
        CHECK_EQ_INT(tile_type_numel(&s->instr.result->type), tile);
    }
    /* a value used outside its scope: the loop variable after the loop */
    tile_stmt *bad = tile_build_let(&b, "z", tile_expr_value(m, loop->v));
    (void)bad;
    diag_reset(&d);
    CHECK(tile_verify(m, NULL, &d) != TSL_OK);
    CHECK_MSG(strstr(sb_str(&d.msg), "use of undefined value 'i'") != NULL, "%s", sb_str(&d.msg));
    free(p);
    diag_free(&d);
    arena_free(a);
}

/* ---- verifier errors ------------------------------------------------------------- */

typedef struct bad_case {
    const char *what;
    const char *src;
    const char *loc;      /* "bad.tile:L:C: error:" */
    const char *fragment; /* must appear in the message */
} bad_case;

#define HDR1 "kernel k(A: global f16[M, K], C: global f32[M, N]) grid(1) threads(32) {\n"
#define CFRAG "local(2,1).spatial(8,4).local(1,2)"

static const bad_case verify_cases[] = {
    {"unroll of a size", "kernel k(n: int) grid(1) threads(32) {\n  for i in 0 : n unroll {\n  }\n}\n",
     "bad.tile:2:3: error:", "for ... unroll: the bounds and step must be constants"},
    {"unroll too long", "kernel k() grid(1) threads(32) {\n  for i in 0 : 130 : 2 unroll {\n  }\n}\n",
     "bad.tile:2:3: error:", "for ... unroll: 65 iterations, more than 64"},
    {"shape mismatch",
     HDR1 "  x = alloc register f32[16, 8] layout " CFRAG "\n"
          "  y = alloc register f32[16, 16] layout local(2,2).spatial(8,4).local(1,2)\n"
          "  z = add x, y\n}\n",
     "bad.tile:4:14: error:", "differ in dtype or shape"},
    {"dtype mismatch",
     HDR1 "  x = alloc register f32[16, 8] layout " CFRAG "\n"
          "  y = alloc register f16[16, 8] layout " CFRAG "\n"
          "  z = mul x, y\n}\n",
     "bad.tile:4:14: error:", "f32[16, 8] and y f16[16, 8]"},
    {"layout does not cover shape",
     HDR1 "  x = alloc register f32[16, 16] layout " CFRAG "\n}\n",
     "bad.tile:2:3: error:", "covers [16, 8], not its shape"},
    {"thread count",
     HDR1 "  x = alloc register f32[16, 16] layout spatial(16,4).local(1,4)\n}\n",
     "bad.tile:2:3: error:", "distributes over 64 threads but the kernel runs threads(32)"},
    {"view bits",
     HDR1 "  x = alloc register f16[16, 8] layout " CFRAG "\n"
          "  y = view x -> register u8[16, 8] layout " CFRAG "\n}\n",
     "bad.tile:3:3: error:", "view changes bits per thread: 'x' holds 4 x f16 = 64 bits per thread, the view 4 x u8 = 32 bits"},
    {"mma fragment",
     HDR1 "  a = alloc register f16[16, 16] layout local(2,2).spatial(8,4).local(1,2)\n"
          "  b = alloc register f16[16, 8] layout local(2,1).column_spatial(4,8).local(2,1)\n"
          "  c = alloc register f32[16, 8] layout " CFRAG "\n"
          "  mma a, b, c -> c atom m16n8k16\n}\n",
     "bad.tile:5:7: error:", "does not end in the m16n8k16 A fragment"},
    {"mma.q dtypes",
     HDR1 "  x = alloc register f16[8, 16] layout spatial(8,4).local(1,4)\n"
          "  w = alloc register f16[16, 128] layout column_spatial(4,8).local(4,16)\n"
          "  c = alloc register f32[8, 128] layout column_spatial(4,8).local(2,16)\n"
          "  mma x, w, c -> c atom q.m8n128k16\n}\n",
     "bad.tile:5:3: error:", "atom q.m8n128k16 takes f16 A, a uint1, uint2, uint4 or uint8 B and f32 C, not f16[8, 16], f16[16, 128], f32[8, 128]"},
    {"mma shapes",
     HDR1 "  a = alloc register f16[16, 16] layout column_local(2,2).spatial(8,4).local(1,2)\n"
          "  b = alloc register f16[16, 16] layout local(2,2).column_spatial(4,8).local(2,1)\n"
          "  c = alloc register f32[16, 8] layout " CFRAG "\n"
          "  d = mma a, b, c\n}\n",
     "bad.tile:5:3: error:", "shapes do not chain"},
    {"smem budget (pipeline)",
     "kernel k(A: global f16[M, K], B: global f16[K, N]) grid(1) threads(128) smem_budget(16384) {\n"
     "  pipeline(grid=(k: cdiv(K, 32)), stages=3, in=[As = A[64, 32] at (0, k) shared, Bs = B[32, 64] at (k, 0) shared], out=[]) {\n"
     "    sync\n  }\n}\n",
     "bad.tile:2:3: error:",
     "shared memory 24576 bytes exceeds the budget of 16384 bytes (stages=3 x 8192 bytes of pipeline blocks + 0 bytes of allocations)"},
    {"smem budget (allocations)",
     "kernel k() grid(1) threads(32) smem_budget(1000) {\n  s = alloc shared f32[16, 16]\n}\n",
     "bad.tile:1:1: error:", "shared memory 1024 bytes exceeds the budget of 1000 bytes"},
    {"wait range",
     HDR1 "  wait 9\n}\n", "bad.tile:2:8: error:", "wait: count 9 is out of range"},
    {"wait range in pipeline",
     "kernel k(A: global f16[M, K]) grid(1) threads(32) {\n"
     "  pipeline(grid=(k: 4), stages=2, in=[As = A[16, 16] at (0, k) shared], out=[]) {\n"
     "    wait 2\n  }\n}\n",
     "bad.tile:3:10: error:", "out of range for a 2-stage pipeline (0..1)"},
    {"decomposition does not cover",
     "kernel k(A: global f16[16, 16]) grid(1) threads(32) {\n"
     "  s = alloc shared f16[16, 16]\n"
     "  r = load_shared s -> register f16[16, 16] layout local(2,2).spatial(8,4).local(1,2) decomp {\n"
     "    warp = threads 32 tile 8 reshape [2, 2]\n"
     "    let gm, gn, lane = indices warp\n"
     "    load_shared s.tile([8, 8])[gm, gn].tile([1, 8])[0, 0] -> r.local.tile([1, 2]) atom ldmatrix.x4 on warp\n"
     "  }\n}\n",
     "bad.tile:3:3: error:", "does not cover 's': element [1, 0] is touched by no thread (32 of 256 covered)"},
    {"decomposition does not cover a tile",
     "kernel k() grid(1) threads(4) {\n"
     "  x = alloc register f32[8, 8] layout local(4,2).spatial(2,2).local(1,2) init 1\n"
     "  s = alloc shared f32[8, 8]\n"
     "  store_shared x -> s[0, 0] decomp {\n"
     "    g = threads 4 tile 1 reshape [2, 2]\n"
     "    let gi, gj, lane = indices g\n"
     "    store_shared x.local -> s.tile([4:2, (2,2):(1,4)])[gi, 0] on g\n"
     "  }\n}\n",
     "bad.tile:4:3: error:", "does not cover 's': element [0, 2] is touched by no thread (32 of 64 covered)"},
    {"ldmatrix atom shape",
     "kernel k() grid(1) threads(32) {\n"
     "  s = alloc shared f16[16, 16]\n"
     "  r = load_shared s -> register f16[16, 16] layout local(2,2).spatial(8,4).local(1,2) decomp {\n"
     "    warp = threads 32 tile 8 reshape [2, 2]\n"
     "    let gm, gn, lane = indices warp\n"
     "    load_shared s.tile([8, 8])[gm, gn].tile([1, 8])[lane, 0] -> r.local atom ldmatrix.x2 on warp\n"
     "  }\n}\n",
     "bad.tile:6:65: error:", "ldmatrix.x2: each thread receives 4 elements, but this view has 8"},
    {"decomposition index out of range",
     "kernel k() grid(1) threads(32) {\n"
     "  s = alloc shared f16[16, 16]\n"
     "  r = load_shared s -> register f16[16, 16] layout local(2,2).spatial(8,4).local(1,2) decomp {\n"
     "    let t = thread_idx\n"
     "    load_shared s.tile([8, 8])[t, 0] -> r.local\n"
     "  }\n}\n",
     "bad.tile:5:32: error:", "index 2 is outside the 2 tiles of dim 0 (thread 2)"},
    {"unknown atom",
     "kernel k(A: global f32[M]) grid(1) threads(32) {\n"
     "  x = load_global A[0] -> register f32[32] layout spatial(32) atom ld.global.v3.u32\n}\n",
     "bad.tile:2:3: error:", "load_global: unknown atom 'ld.global.v3.u32'"},
    {"atom of another instruction",
     "kernel k(A: global f32[M]) grid(1) threads(32) {\n"
     "  x = load_global A[0] -> register f32[32] layout spatial(32) atom cp.async.cg.shared.global\n}\n",
     "bad.tile:2:3: error:", "load_global: atom cp.async.cg.shared.global does not implement load_global"},
    {"copy_async chunk",
     "kernel k(A: global f16[M, 12]) grid(1) threads(32) {\n"
     "  s = alloc shared f16[8, 12]\n  copy_async A[0, 0] -> s bytes 16\n}\n",
     "bad.tile:3:3: error:", "16-byte chunks do not divide a tile row of 24 bytes"},
    {"shared tile out of bounds",
     "kernel k() grid(1) threads(32) {\n"
     "  s = alloc shared f32[32, 32]\n"
     "  x = load_shared s[0, 24] -> register f32[32, 16] layout spatial(32,1).local(1,16)\n}\n",
     "bad.tile:3:19: error:", "tile [32, 16] is outside shared 's' f32[32, 32] in dimension 1 (offset 24)"},
    {"shared layout size",
     "kernel k() grid(1) threads(32) {\n  s = alloc shared f32[32, 32] layout (32,16):(16,1)\n}\n",
     "bad.tile:2:3: error:", "has 1024 elements but its layout (32,16):(16,1) has size 512"},
    {"reduce shapes",
     HDR1 "  x = alloc register f32[16, 8] layout " CFRAG "\n"
          "  s = reduce.sum x -> register f32[8] layout spatial(8).replicate(4) dim 1\n}\n",
     "bad.tile:3:3: error:", "reduce.sum over dim 1: f32[16, 8] and f32[8] do not match"},
    {"load dtype",
     HDR1 "  x = load_global A[0, 0] -> register f32[16, 8] layout " CFRAG "\n}\n",
     "bad.tile:2:3: error:", "source 'A' is f16[M, K] but the result is f32[16, 8]"},
    {"shared view past the tensor",
     HDR1 "  s = alloc shared f32[8, 4]\n  t = view s -> shared f32[4, 16]\n}\n",
     "bad.tile:3:3: error:", "view: the view f32[4, 16] reaches element 63 of 's', which has 32"},
    {"shared view dtype",
     HDR1 "  s = alloc shared f32[8, 4]\n  t = view s -> shared u32[8, 4]\n}\n",
     "bad.tile:3:3: error:", "a shared view keeps the element type"},
    /* Hopper (section 5b) */
    {"roles do not add up",
     HDR1 "  warpgroups {\n    role p(1) {\n    }\n  }\n}\n",
     "bad.tile:2:3: error:", "the roles have 1 warpgroups (128 threads) but the kernel runs threads(32)"},
    {"roles ask for more registers than a block has",
     "kernel k(A: global f32[4]) grid(1) threads(384) {\n  warpgroups {\n    role p(1) regs(40) {\n    }\n"
     "    role c(2) regs(240) {\n    }\n  }\n}\n",
     "bad.tile:2:3: error:", "the roles ask for 66560 registers in all (count x 128 x regs) but a block has 65536"},
    {"barrier dtype",
     HDR1 "  b = alloc shared u32[2]\n  mbar_init b, 1\n}\n",
     "bad.tile:3:13: error:", "the barrier 'b' must be a shared u64 tensor"},
    {"wgmma needs a warpgroup",
     "kernel k() grid(1) threads(64) {\n"
     "  s = alloc shared f16[64, 64] layout swizzle(3,3,3,(64,64):(64,1))\n"
     "  c = alloc register f32[64, 8] layout spatial(2,1).local(2,1).local(2,1).spatial(8,4).local(1,2)\n"
     "  wgmma s, s, c -> c\n}\n",
     "bad.tile:4:3: error:", "needs a role or a kernel of 128 threads, not 64"},
    {"wgmma accumulator fragment",
     "kernel k() grid(1) threads(128) {\n"
     "  a = alloc shared f16[64, 16] layout swizzle(1,3,3,(64,16):(16,1))\n"
     "  b = alloc shared f16[16, 8] layout swizzle(1,3,3,(16,8):(1,16))\n"
     "  c = alloc register f32[64, 8] layout spatial(64,2).local(1,4)\n"
     "  wgmma a, b, c -> c\n}\n",
     "bad.tile:5:3: error:", "not the m64n8k16 fragment spatial(4,1).local(1,1)"},
    {"wgmma shared layout",
     "kernel k() grid(1) threads(128) {\n"
     "  a = alloc shared f16[64, 64] layout (64,64):(64,1)\n"
     "  b = alloc shared f16[64, 64] layout swizzle(3,3,3,(64,64):(64,1))\n"
     "  c = alloc register f32[64, 64] layout spatial(4,1).local(1,8).local(2,1).spatial(8,4).local(1,2)\n"
     "  wgmma a, b, c -> c\n}\n",
     "bad.tile:5:9: error:", "the A operand 'a' (layout (64,64):(64,1)) is not a wgmma shared layout"},
    {"wgmma B out of place",
     "kernel k() grid(1) threads(128) {\n"
     "  a = alloc shared f16[64, 64] layout swizzle(3,3,3,(64,64):(64,1))\n"
     "  b = alloc shared f16[64, 128] layout swizzle(3,3,3,(64,128):(128,1))\n"
     "  c = alloc register f32[64, 128] layout spatial(4,1).local(1,16).local(2,1).spatial(8,4).local(1,2)\n"
     "  wgmma a, b, c -> c\n}\n",
     "bad.tile:5:12: error:", "element (0, 1) of the M/N-major operand is at 128, not 64"},
    {"tma box row",
     "kernel k(A: global f16[M, K]) grid(1) threads(128) {\n"
     "  s = alloc shared f16[8, 4]\n  b = alloc shared u64[1]\n"
     "  tma_load A[0, 0], b[0] -> s\n}\n",
     "bad.tile:4:3: error:", "a box row of 8 bytes is not a multiple of 16"},
    {"tma rank",
     "kernel k(A: global f16[K]) grid(1) threads(128) {\n"
     "  s = alloc shared f16[8, 8]\n  b = alloc shared u64[1]\n"
     "  tma_load A[0], b[0] -> s\n}\n",
     "bad.tile:4:3: error:", "must have rank 1..5 and at most 1"},
    {"fma on integers", HDR1 "  x = alloc register i32[16, 8] layout " CFRAG "\n  z = fma x, x, x\n}\n",
     "bad.tile:3:3: error:", "fma takes f16, bf16, f32 or f64 tensors, not i32[16, 8] (on integers: mul, then add)"},
    {"fma on a low-bit float", HDR1 "  x = alloc register f8e4m3[16, 8] layout " CFRAG "\n  z = fma x, 0.5, x\n}\n",
     "bad.tile:3:3: error:", "fma takes f16, bf16, f32 or f64 tensors, not f8e4m3[16, 8]"},
    {"fma dtype mismatch",
     HDR1 "  x = alloc register f32[16, 8] layout " CFRAG "\n  y = alloc register f16[16, 8] layout " CFRAG "\n"
          "  z = fma x, x, y\n}\n",
     "bad.tile:4:17: error:", "fma: x f32[16, 8] and y f16[16, 8] differ in dtype or shape"},
    {"fma layout mismatch",
     HDR1 "  x = alloc register f32[16, 8] layout " CFRAG "\n"
          "  y = alloc register f32[16, 8] layout spatial(8,4).local(2,1).local(1,2)\n"
          "  z = fma x, 2.0, y\n}\n",
     "bad.tile:4:19: error:", "fma: x has layout " CFRAG " but y has layout spatial(8,4).local(2,1).local(1,2)"},
    {"fma destination",
     HDR1 "  x = alloc register f32[16, 8] layout " CFRAG "\n  y = alloc register f16[16, 8] layout " CFRAG "\n"
          "  fma x, x, x -> y\n}\n",
     "bad.tile:4:18: error:", "fma: the result f32[16, 8] and y f16[16, 8] differ in dtype or shape"},
    {"fma shared operand",
     HDR1 "  x = alloc register f32[16, 8] layout " CFRAG "\n  s = alloc shared f32[16, 8]\n  z = fma x, s, x\n}\n",
     "bad.tile:4:14: error:", "fma: the operand must be a register tensor"},
};

static void test_verify_errors(void)
{
    for (size_t i = 0; i < TSL_COUNTOF(verify_cases); i++) {
        const bad_case *c = &verify_cases[i];
        tsl_arena *a = arena_create();
        tsl_diag d = {0};
        tile_module *m = NULL;
        tsl_source src = {"bad.tile", c->src};
        tsl_status st = tile_parse(a, &src, &d, &m);
        CHECK_MSG(st == TSL_OK, "%s: parse: %s", c->what, sb_str(&d.msg));
        if (m) {
            st = tile_verify(m, &src, &d);
            const char *msg = sb_str(&d.msg);
            CHECK_MSG(st == TSL_ERR_SEMANTIC, "%s: verifier accepted it", c->what);
            CHECK_MSG(strncmp(msg, c->loc, strlen(c->loc)) == 0, "%s: location: want %s, got\n%s", c->what, c->loc, msg);
            CHECK_MSG(strstr(msg, c->fragment) != NULL, "%s: want \"%s\" in\n%s", c->what, c->fragment, msg);
        }
        diag_free(&d);
        arena_free(a);
    }
}

/* ---- parser errors ------------------------------------------------------------------ */

static const bad_case parse_cases[] = {
    {"fma with two operands", HDR1 "  x = alloc register f32[16, 8] layout " CFRAG "\n  z = fma x, x\n}\n",
     "bad.tile:4:1: error:", "expected ',' between operands, found '}'"},
    {"fma of scalars", HDR1 "  z = fma 1.0, 2.0, 3.0\n}\n", "bad.tile:2:7: error:",
     "'fma' needs a tensor operand to take its result type from"},
    {"setmaxnreg range", "kernel k() grid(1) threads(128) {\n  warpgroups {\n    role p(1) regs(20) {\n    }\n  }\n}\n",
     "bad.tile:3:20: error:", "setmaxnreg takes a multiple of 8 in 24..256, not 20"},
    {"nested warpgroups",
     "kernel k() grid(1) threads(128) {\n  warpgroups {\n    role p(1) {\n      warpgroups {\n      }\n    }\n  }\n}\n",
     "bad.tile:4:7: error:", "'warpgroups' inside a role is not supported"},
    {"undefined value", "kernel k() grid(1) threads(32) {\n  let a = b + 1\n}\n", "bad.tile:2:11: error:",
     "use of undefined value 'b'"},
    {"undefined tensor", "kernel k() grid(1) threads(32) {\n  store_global x -> Y[0]\n}\n",
     "bad.tile:2:16: error:", "use of undefined value 'x'"},
    {"unknown instruction", "kernel k() grid(1) threads(32) {\n  frob 1\n}\n", "bad.tile:2:3: error:",
     "unknown instruction 'frob'"},
    {"approx of an exact op", "kernel k() grid(1) threads(32) {\n  x = alloc register f32[32] layout spatial(32) init 1\n"
     "  y = add.approx x, x\n}\n", "bad.tile:3:7: error:", "'add.approx': only exp, sigmoid and tanh have an .approx form"},
    {"missing type", "kernel k(A: global f16[8]) grid(1) threads(32) {\n  x = load_global A[0]\n}\n",
     "bad.tile:2:7: error:", "'load_global' needs '-> type' for its result 'x'"},
    {"register without layout", "kernel k() grid(1) threads(32) {\n  x = alloc register f32[4]\n}\n",
     "bad.tile:3:1: error:", "a register tensor needs 'layout'"},
    {"data layout for register", "kernel k() grid(1) threads(32) {\n  x = alloc register f32[4] layout 4:1\n}\n",
     "bad.tile:2:36: error:", "expected a distributed layout"},
    {"bad layout", "kernel k() grid(1) threads(32) {\n  x = alloc shared f32[4] layout (4,2):(1\n}\n",
     "bad.tile:", "bad layout"},
    {"redefinition", "kernel k() grid(1) threads(32) {\n  let a = 1\n  let a = 2\n}\n", "bad.tile:3:7: error:",
     "'a' is already defined"},
    {"keyword as name", "kernel k() grid(1) threads(32) {\n  let for = 1\n}\n", "bad.tile:2:7: error:",
     "'for' is a keyword"},
    {"set a let", "kernel k() grid(1) threads(32) {\n  let a = 1\n  set a = 2\n}\n", "bad.tile:3:7: error:",
     "'a' is not a var"},
    {"thread_idx outside decomp", "kernel k() grid(1) threads(32) {\n  let a = thread_idx\n}\n",
     "bad.tile:2:11: error:", "thread_idx is only defined inside a decomposition"},
    {"unclosed block", "kernel k() grid(1) threads(32) {\n  sync\n", "bad.tile:3:1: error:", "found end of input"},
    {"bad character", "kernel k() grid(1) threads(32) {\n  let a = 1 $ 2\n}\n", "bad.tile:2:13: error:",
     "unexpected character '$'"},
    {"big integer", "kernel k() grid(1) threads(32) {\n  let a = 99999999999999999999\n}\n",
     "bad.tile:2:11: error:", "integer literal too large"},
    {"threads range", "kernel k() grid(1) threads(2048) {\n}\n", "bad.tile:1:28: error:", "threads(2048) is not in 1..1024"},
    {"min_blocks range", "kernel k() grid(1) threads(32) min_blocks(0) {\n}\n", "bad.tile:1:43: error:",
     "min_blocks(0) is not in 1..32"},
    {"grid dims", "kernel k() grid(1, 2, 3, 4) threads(32) {\n}\n", "bad.tile:1:17: error:",
     "a grid has 1 to 3 dimensions, not 4"},
    {"stages", "kernel k(A: global f16[8]) grid(1) threads(32) {\n  pipeline(grid=(i: 2), stages=0, in=[], out=[]) {\n  }\n}\n",
     "bad.tile:2:32: error:", "stages=0 is not in 1..16"},
    {"blockspec not global", "kernel k() grid(1) threads(32) {\n  s = alloc shared f16[8]\n"
     "  pipeline(grid=(i: 2), stages=2, in=[b = s[8] at (i) shared], out=[]) {\n  }\n}\n",
     "bad.tile:3:43: error:", "'s' is not a global tensor"},
    {"indices count", "kernel k() grid(1) threads(32) {\n  x = alloc register f32[32] layout spatial(32) decomp {\n"
     "    g = threads 32 tile 8 reshape [2, 2]\n    let a, b = indices g\n  }\n}\n",
     "bad.tile:4:9: error:", "gives 3 values"},
    {"group does not divide", "kernel k() grid(1) threads(32) {\n  x = alloc register f32[32] layout spatial(32) decomp {\n"
     "    g = threads 32 tile 12\n  }\n}\n",
     "bad.tile:3:25: error:", "a group of 12 threads does not divide 32 threads"},
    {"store needs destination", "kernel k() grid(1) threads(32) {\n  x = alloc register f32[32] layout spatial(32)\n  store_global x\n}\n",
     "bad.tile:4:1: error:", "'store_global' needs '-> destination'"},
    {"result on no-result op", "kernel k() grid(1) threads(32) {\n  x = sync\n}\n", "bad.tile:2:3: error:",
     "'sync' has no result to name"},
    {"duplicate kernel", "kernel k() grid(1) threads(1) {\n}\nkernel k() grid(1) threads(1) {\n}\n",
     "bad.tile:3:8: error:", "kernel 'k' is defined twice"},
    {"tensor in expression", "kernel k(A: global f16[8]) grid(A) threads(1) {\n}\n", "bad.tile:1:33: error:",
     "'A' is a tensor, expected an int expression"},
};

static void test_parse_errors(void)
{
    for (size_t i = 0; i < TSL_COUNTOF(parse_cases); i++) {
        const bad_case *c = &parse_cases[i];
        tsl_arena *a = arena_create();
        tsl_diag d = {0};
        tile_module *m = NULL;
        tsl_status st = parse_as(a, "bad.tile", c->src, &d, &m);
        const char *msg = sb_str(&d.msg);
        CHECK_MSG(st == TSL_ERR_SYNTAX && m == NULL, "%s: accepted", c->what);
        CHECK_MSG(strncmp(msg, c->loc, strlen(c->loc)) == 0, "%s: location: want %s, got\n%s", c->what, c->loc, msg);
        CHECK_MSG(strstr(msg, c->fragment) != NULL, "%s: want \"%s\" in\n%s", c->what, c->fragment, msg);
        diag_free(&d);
        arena_free(a);
    }
}

/* Every proper prefix of every golden fails cleanly (or, cut at a kernel
 * boundary, parses), and random garbage never crashes. */
static void test_parse_truncated_and_garbage(void)
{
    for (size_t i = 0; i < TSL_COUNTOF(goldens); i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/tile_golden/%s", test_root(), goldens[i]);
        size_t len;
        char *text = file_read_all(path, &len);
        if (!text) continue;
        tsl_arena *a = arena_create();
        /* every 7th prefix plus a random offset keeps this quick */
        for (size_t cut = (size_t)test_rand_int(0, 6); cut < len; cut += 7) {
            char *pre = arena_strndup(a, text, cut);
            tsl_diag d = {0};
            tile_module *m = NULL;
            tsl_status st = parse_as(a, goldens[i], pre, &d, &m);
            if (st != TSL_OK) CHECK_MSG(strstr(sb_str(&d.msg), "error:") != NULL, "%s cut at %zu", goldens[i], cut);
            diag_free(&d);
        }
        arena_free(a);
        free(text);
    }
    const char alphabet[] = "kernel grid threads(){}[]<>,:=+-*/%!.0123456789 \n\tabcxyz_->@$\"'\\;";
    for (int iter = 0; iter < 300; iter++) {
        char buf[256];
        int n = (int)test_rand_int(0, 255);
        for (int i = 0; i < n; i++)
            buf[i] = test_rand_int(0, 9) == 0 ? (char)test_rand_int(1, 255) : alphabet[test_rand_int(0, sizeof alphabet - 2)];
        buf[n] = 0;
        tsl_arena *a = arena_create();
        tsl_diag d = {0};
        tile_module *m = NULL;
        if (parse_as(a, "junk.tile", buf, &d, &m) == TSL_OK && m) {
            char *p = tile_print(m);
            free(p);
            tile_verify(m, NULL, &d);
        }
        diag_free(&d);
        arena_free(a);
    }
    /* mutations of a golden: one byte replaced; parse, and verify what parses */
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/tile_golden/ldmatrix.tile", test_root());
    size_t len;
    char *text = file_read_all(path, &len);
    for (int iter = 0; text && iter < 200; iter++) {
        tsl_arena *a = arena_create();
        char *mut = arena_strdup(a, text);
        mut[test_rand_int(0, (long)len - 1)] = alphabet[test_rand_int(0, sizeof alphabet - 2)];
        tsl_diag d = {0};
        tile_module *m = NULL;
        tsl_source src = {"mut.tile", mut};
        if (tile_parse(a, &src, &d, &m) == TSL_OK) {
            tile_verify(m, &src, &d);
            char *p = tile_print(m);
            free(p);
        }
        diag_free(&d);
        arena_free(a);
    }
    free(text);
}

static void test_parse_deep_nesting(void)
{
    strbuf sb = {0};
    sb_puts(&sb, "kernel k() grid(1) threads(1) {\n");
    for (int i = 0; i < 1000; i++) sb_printf(&sb, "for i%d in 0 : 1 {\n", i);
    sb_puts(&sb, "sync\n");
    for (int i = 0; i < 1000; i++) sb_puts(&sb, "}\n");
    sb_puts(&sb, "}\n");
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    tile_module *m = NULL;
    CHECK(parse_as(a, "deep.tile", sb_str(&sb), &d, &m) == TSL_ERR_SYNTAX);
    CHECK_MSG(strstr(sb_str(&d.msg), "nesting deeper than") != NULL, "%s", sb_str(&d.msg));
    sb_free(&sb);
    diag_free(&d);
    /* parentheses and unary minus */
    sb_puts(&sb, "kernel k() grid(1) threads(1) {\n  let a = ");
    for (int i = 0; i < 100000; i++) sb_puts(&sb, i % 2 ? "(" : "-");
    tsl_diag d2 = {0};
    CHECK(parse_as(a, "deep.tile", sb_str(&sb), &d2, &m) == TSL_ERR_SYNTAX);
    CHECK_MSG(strstr(sb_str(&d2.msg), "nesting deeper than") != NULL, "%s", sb_str(&d2.msg));
    sb_free(&sb);
    diag_free(&d2);
    /* a reasonable depth works */
    sb_puts(&sb, "kernel k() grid(1) threads(1) {\n");
    for (int i = 0; i < 50; i++) sb_printf(&sb, "if %d < 3 {\n", i);
    for (int i = 0; i < 50; i++) sb_puts(&sb, "}\n");
    sb_puts(&sb, "}\n");
    tsl_diag d3 = {0};
    CHECK_MSG(parse_as(a, "ok.tile", sb_str(&sb), &d3, &m) == TSL_OK, "%s", sb_str(&d3.msg));
    sb_free(&sb);
    diag_free(&d3);
    arena_free(a);
}

TEST_SUITE(tile_ir) = {
    {"golden_roundtrip", test_golden_roundtrip},
    {"expr_roundtrip", test_expr_roundtrip},
    {"expr_eval", test_expr_eval},
    {"dtypes", test_dtypes},
    {"builder", test_builder},
    {"verify_errors", test_verify_errors},
    {"parse_errors", test_parse_errors},
    {"parse_truncated_and_garbage", test_parse_truncated_and_garbage},
    {"parse_deep_nesting", test_parse_deep_nesting},
    {0},
};
