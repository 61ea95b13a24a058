/* test_layout.c — the layout algebra on known answers: CuTe's documented
 * examples, the Tilus mma fragment, Graphene's thread tensors, the text
 * syntax and its errors. Random properties are in test_layout_props.c. */
#include <string.h>

#include "layout/layout.h"
#include "test.h"

/* Parse `src`, check the status, return the value printed. */
static char *eval_str(const char *src, tsl_status want, layout_value *v_out)
{
    layout_value *v = calloc(1, sizeof *v);
    layout_err e;
    tsl_status st = layout_parse(src, strlen(src), v, &e);
    CHECK_MSG(st == want, "%s: status %d, want %d (%s)", src, st, want, st ? e.msg : "");
    char *r = NULL;
    if (!st) {
        strbuf sb = {0};
        layout_value_print(&sb, v);
        r = sb_take(&sb);
    } else {
        r = malloc(strlen(e.msg) + 1);
        strcpy(r, e.msg);
    }
    if (v_out) *v_out = *v;
    free(v);
    return r;
}

static void check_eval(const char *src, const char *want)
{
    char *got = eval_str(src, TSL_OK, NULL);
    CHECK_MSG(got && !strcmp(got, want), "%s -> %s, want %s", src, got ? got : "(null)", want);
    free(got);
}

static void check_error(const char *src, const char *msg_part, size_t offset)
{
    layout_value *v = calloc(1, sizeof *v);
    layout_err e;
    tsl_status st = layout_parse(src, strlen(src), v, &e);
    CHECK_MSG(st != TSL_OK, "%s should fail", src);
    if (st) {
        CHECK_MSG(strstr(e.msg, msg_part), "%s: message '%s' lacks '%s'", src, e.msg, msg_part);
        CHECK_MSG(e.offset == offset, "%s: offset %zu, want %zu", src, e.offset, offset);
    }
    free(v);
}

static void test_literals_roundtrip(void)
{
    const char *exact[] = {
        "8:1", "(4,(2,4)):(2,(1,8))", "(4):(1)", "((2,2),(3,(1,5))):((1,2),(4,(0,12)))",
        "(3,5):(-1,7)", "swizzle(3,3,3,(8,64):(64,1))", "[2:2,(2,2):(1,4)]",
        "local(2,1).spatial(8,4).local(1,2)", "column_spatial(4,8).column_local(2,2)",
        "spatial(4,2).replicate(2)",
    };
    for (size_t i = 0; i < TSL_COUNTOF(exact); i++) check_eval(exact[i], exact[i]);
    check_eval("(4,2)", "(4,2):(1,4)");
    check_eval(" ( 4 , (2,3) ) ", "(4,(2,3)):(1,(4,8))");
    check_eval("8", "8:1");
    check_eval("repeat(2,2).column_repeat(1,2)", "local(2,2).column_local(1,2)");
}

static void test_layout_queries(void)
{
    layout_value v;
    free(eval_str("(4,(2,4)):(2,(1,8))", TSL_OK, &v));
    CHECK_EQ_INT(layout_rank(&v.data), 2);
    CHECK_EQ_INT(layout_depth(&v.data), 2);
    CHECK_EQ_INT(layout_size(&v.data), 32);
    CHECK_EQ_INT(layout_cosize(&v.data), 32);
    int64_t want[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(layout_eval(&v.data, i), want[i]);
    int64_t c[2] = {3, 5}; /* mode 1 index 5 = (1,2) -> 1*1 + 2*8 */
    CHECK_EQ_INT(layout_eval_coord(&v.data, c, 2), 3 * 2 + 1 + 16);
    free(eval_str("(3,5):(0,7)", TSL_OK, &v));
    CHECK_EQ_INT(layout_cosize(&v.data), 29);
    free(eval_str("8:1", TSL_OK, &v));
    CHECK_EQ_INT(layout_rank(&v.data), 1);
    CHECK_EQ_INT(layout_depth(&v.data), 0);
}

/* The examples of CuTe's layout algebra documentation. */
static void test_cute_examples(void)
{
    check_eval("coalesce((2,(1,6)):(1,(7,2)))", "12:1");
    check_eval("coalesce((2,4):(1,6))", "(2,4):(1,6)");
    check_eval("compose((6,2):(8,2),(4,3):(3,1))", "((2,2),3):((24,2),8)");
    check_eval("compose(20:2,(5,4):(4,1))", "(5,4):(8,2)");
    check_eval("compose((10,2):(16,4),(5,4):(1,5))", "(5,(2,2)):(16,(80,4))");
    check_eval("complement(4:1,24)", "6:4");
    check_eval("complement(6:4,24)", "4:1");
    check_eval("complement((4,6):(1,4),24)", "1:0");
    check_eval("complement(4:2,24)", "(2,3):(1,8)");
    check_eval("complement((2,4):(1,6),24)", "3:2");
    check_eval("complement((2,2):(1,6),24)", "(3,2):(2,12)");
    check_eval("divide((4,2,3):(2,1,8),4:2)", "((2,2),(2,3)):((4,1),(2,8))");
    check_eval("divide((9,(4,8)):(59,(13,1)),[3:3,(2,4):(1,8)])",
               "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))");
    check_eval("zipped_divide((9,(4,8)):(59,(13,1)),[3:3,(2,4):(1,8)])",
               "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))");
    check_eval("tiled_divide((9,(4,8)):(59,(13,1)),[3:3,(2,4):(1,8)])",
               "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))");
    check_eval("product((2,2):(4,1),6:1)", "((2,2),(2,3)):((4,1),(2,8))");
    check_eval("product((2,2):(4,1),(4,2):(2,1))", "((2,2),(4,2)):((4,1),(8,2))");
    check_eval("blocked_product((2,5):(5,1),(3,4):(1,3))", "((2,3),(5,4)):((5,10),(1,30))");
    check_eval("raked_product((2,5):(5,1),(3,4):(1,3))", "((3,2),(4,5)):((10,5),(30,1))");
    check_eval("right_inverse((4,(2,4)):(2,(1,8)))", "(2,4,4):(4,1,8)");
    check_eval("right_inverse((3,7):(7,1))", "(7,3):(3,1)");
    check_eval("right_inverse(4:2)", "1:0");
    /* by-mode composition: a 2-D tile of a column-major 12x8 */
    check_eval("compose((12,8):(1,12),[3:4,(2,2):(1,4)])", "(3,(2,2)):(4,(12,48))");
}

/* Non-contiguous tiles, Graphene figure 4: a tile 2:2 picks every other
 * element; (2,2):(1,4) picks {0,1,4,5}. */
static void test_noncontiguous_tiles(void)
{
    layout_value v;
    free(eval_str("divide(8:1,2:2)", TSL_OK, &v));
    layout t = layout_mode(&v.data, 0), r = layout_mode(&v.data, 1);
    CHECK_EQ_INT(layout_size(&t), 2);
    CHECK_EQ_INT(layout_eval(&t, 1), 2);
    CHECK_EQ_INT(layout_size(&r), 4);
    int64_t rest[4] = {0, 1, 4, 5};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(layout_eval(&r, i), rest[i]);
    free(eval_str("divide(16:1,(2,2):(1,4))", TSL_OK, &v));
    int64_t tile[4] = {0, 1, 4, 5};
    for (int j = 0; j < 4; j++) {
        for (int i = 0; i < 4; i++) {
            int64_t c[2] = {i, j};
            int64_t off = layout_eval_coord(&v.data, c, 2);
            int64_t base = layout_eval_coord(&v.data, (int64_t[2]){0, j}, 2);
            CHECK_EQ_INT(off - base, tile[i]);
        }
    }
}

/* Graphene section 4: threads as a tensor. A warp [32] seen as 2x2 groups
 * of 8 (ldmatrix.x4: group g supplies the row addresses of matrix g), and
 * Volta's quad-pairs: the tile (4,2):(1,16) of the warp. */
static void test_thread_tensors(void)
{
    layout_value v;
    free(eval_str("compose(32:1,(8,(2,2)))", TSL_OK, &v));
    check_eval("compose(32:1,(8,(2,2)))", "(8,(2,2)):(1,(8,16))");
    for (int g0 = 0; g0 < 2; g0++)
        for (int g1 = 0; g1 < 2; g1++)
            for (int i = 0; i < 8; i++) {
                int64_t c[2] = {i, g0 + 2 * g1};
                CHECK_EQ_INT(layout_eval_coord(&v.data, c, 2), 8 * (g0 + 2 * g1) + i);
            }
    char *s = eval_str("zipped_divide(32:1,8:1)", TSL_OK, NULL);
    CHECK_EQ_STR(s, "(8,4):(1,8)");
    free(s);
    free(eval_str("zipped_divide(32:1,(4,2):(1,16))", TSL_OK, &v));
    s = eval_str("zipped_divide(32:1,(4,2):(1,16))", TSL_OK, NULL);
    CHECK_EQ_STR(s, "((4,2),4):((1,16),4)");
    free(s);
    /* quad-pair k holds threads 4k..4k+3 and 16+4k..16+4k+3 */
    for (int k = 0; k < 4; k++) {
        int64_t want[8] = {4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3,
                           16 + 4 * k, 17 + 4 * k, 18 + 4 * k, 19 + 4 * k};
        for (int i = 0; i < 8; i++) {
            int64_t c[2] = {i, k};
            CHECK_EQ_INT(layout_eval_coord(&v.data, c, 2), want[i]);
        }
    }
}

static void test_swizzle(void)
{
    layout_value v;
    free(eval_str("swizzle(2,0,2,(4,4):(4,1))", TSL_OK, &v));
    /* row r, column c -> 4r + (c ^ r) */
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
            int64_t co[2] = {r, c};
            CHECK_EQ_INT(layout_eval_coord(&v.data, co, 2), 4 * r + (c ^ r));
        }
    layout_swizzle sw = {3, 3, 3};
    CHECK_EQ_INT(layout_swizzle_apply(sw, (5 << 6) | (2 << 3) | 1), (5 << 6) | (7 << 3) | 1);
    check_error("swizzle(3,3,2,8:1)", "at least B", 0);
    check_error("swizzle(1,0,1,swizzle(1,0,1,4:1))", "already swizzled", 0);
    /* a swizzled layout composed with a tile keeps its swizzle */
    check_eval("compose(swizzle(2,0,2,16:1),(4,2):(4,1))", "swizzle(2,0,2,(4,2):(4,1))");
}

/* Tilus figure 3: the mma.m16n8k16 accumulator. */
static void test_mma_fragment(void)
{
    layout_value v;
    free(eval_str("local(2,1).spatial(8,4).local(1,2)", TSL_OK, &v));
    CHECK_EQ_INT(v.kind, LAYOUT_VALUE_DIST);
    CHECK_EQ_INT(v.dist.threads, 32);
    CHECK_EQ_INT(v.dist.locals, 4);
    CHECK_EQ_INT(v.dist.shape[0], 16);
    CHECK_EQ_INT(v.dist.shape[1], 8);
    int64_t c[2], t, l;
    CHECK(dist_layout_map(&v.dist, 5, 3, c) == 0);
    CHECK_EQ_INT(c[0], 9);
    CHECK_EQ_INT(c[1], 3);
    CHECK(dist_layout_owner(&v.dist, c, &t, &l) == 0);
    CHECK_EQ_INT(t, 5);
    CHECK_EQ_INT(l, 3);
    /* PTX: row = lane/4 (+8 for c2,c3), col = 2*(lane%4) + (i&1) */
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 4; i++) {
            dist_layout_map(&v.dist, lane, i, c);
            CHECK_EQ_INT(c[0], lane / 4 + 8 * (i >> 1));
            CHECK_EQ_INT(c[1], 2 * (lane % 4) + (i & 1));
        }
    CHECK(dist_layout_map(&v.dist, 32, 0, c) == -1);
    int64_t out[2] = {16, 0};
    CHECK(dist_layout_owner(&v.dist, out, &t, &l) == -1);
}

static void test_dist_algebra(void)
{
    check_eval("local(2,4)/local(1,2)", "local(2,2)");
    check_eval("local(2,1).spatial(8,4).local(1,2)/local(1,2)", "local(2,1).spatial(8,4)");
    check_eval("local(2,1).spatial(8,4).local(1,2)/(spatial(8,4).local(1,2))", "local(2,1)");
    check_eval("(local(2,1).spatial(8,4)).local(1,2)", "local(2,1).spatial(8,4).local(1,2)");
    check_eval("spatial(2,3)/spatial(1,3)", "spatial(2,1)");
    /* column_spatial(2,3) enumerates threads down the columns */
    layout_value v;
    free(eval_str("column_spatial(2,3)", TSL_OK, &v));
    int64_t c[2];
    dist_layout_map(&v.dist, 1, 0, c);
    CHECK(c[0] == 1 && c[1] == 0);
    dist_layout_map(&v.dist, 2, 0, c);
    CHECK(c[0] == 0 && c[1] == 1);
    /* rank broadcast: local(2) is local(1,2) next to a rank-2 layout */
    free(eval_str("spatial(4,4).local(2)", TSL_OK, &v));
    CHECK_EQ_INT(v.dist.shape[0], 4);
    CHECK_EQ_INT(v.dist.shape[1], 8);
    /* replication: every coordinate has two owners, threads 2k and 2k+1 */
    free(eval_str("spatial(4,2).replicate(2)", TSL_OK, &v));
    int64_t ts[4], ls[4], co[2] = {1, 1};
    CHECK_EQ_INT(dist_layout_owners(&v.dist, co, ts, ls, 4), 2);
    CHECK_EQ_INT(ts[0], 6);
    CHECK_EQ_INT(ts[1], 7);
    /* reduce along columns of the mma fragment: each row's value is held
     * by the 4 threads of a quad, in slot 0 (row r) and slot 1 (row r+8) */
    free(eval_str("reduce(local(2,1).spatial(8,4).local(1,2),1)", TSL_OK, &v));
    check_eval("reduce(local(2,1).spatial(8,4).local(1,2),1)",
               "local(2,1).spatial(8,1).replicate(4)");
    CHECK_EQ_INT(v.dist.shape[0], 16);
    CHECK_EQ_INT(v.dist.shape[1], 1);
    CHECK_EQ_INT(v.dist.threads, 32);
    CHECK_EQ_INT(v.dist.locals, 2);
    int64_t rc[2] = {9, 0};
    CHECK_EQ_INT(dist_layout_owners(&v.dist, rc, ts, ls, 4), 4);
    for (int k = 0; k < 4; k++) CHECK(ts[k] == 4 + k && ls[k] == 1);
    check_eval("reduce(local(2,4),0)", "local(1,4)");
    check_error("reduce(local(2,4),2)", "outside", 0);
    check_error("local(2,4)/local(3,1)", "no quotient", 0);
    check_error("spatial(2,4)/local(1,2)", "no quotient", 0);
}

static void test_errors(void)
{
    check_error("compose((4,3):(3,1),(2,3))", "divisibility", 0);
    check_error("divide(8:1,3:1)", "does not divide", 0);
    check_error("divide(8:1,4:4)", "does not divide", 0);
    check_error("complement(4:1,0)", "cotarget", 0);
    check_error("complement((2,2):(2,2),16)", "not injective", 0);
    check_error("product(65536:1,(65536,65536,65536):(1,65536,4294967296))", "overflow", 0);
    check_error("(65536,65536,65536,65536)", "overflow", 0);
    check_error("(4,4):(1,4611686018427387904)", "overflow", 6);
    check_error("[(2,2):(1,4611686018427387904),(2,2):(1,4611686018427387904)]", "overflow", 0);
    check_eval("complement(8:1,9223372036854775807)", "1152921504606846976:8");
    check_error("swizzle(16,32,32,8:1)", "at most 62", 0);
    check_error("(3,2):(1)", "congruent", 6);
    check_error("(3,0)", "positive", 3);
    check_error("(3,2", "expected ')'", 4);
    check_error("frob(3)", "unknown layout function 'frob'", 0);
    check_error("8:1 x", "unexpected 'x'", 4);
    check_error("8:1.local(2)", "joins distributed", 3);
    check_error("local(2).8:1", "expected a distributed layout", 9);
    check_error("compose(local(2),8:1)", "not a distributed", 8);
    check_error("99999999999999999999", "64 bits", 0);
    check_error("", "end of input", 0);
    check_error("[", "end of input", 1);
    check_error("((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))",
                "too deeply", 33);
}

static void test_parse_prefix(void)
{
    const char *s = "(4,2):(2,1) ; rest";
    layout_value *v = calloc(1, sizeof *v);
    size_t used = 0;
    CHECK(layout_parse_prefix(s, strlen(s), &used, v, NULL) == TSL_OK);
    CHECK_EQ_INT(used, 12);
    free(v);
}

TEST_SUITE(layout) = {
    {"literals_roundtrip", test_literals_roundtrip},
    {"queries", test_layout_queries},
    {"cute_examples", test_cute_examples},
    {"noncontiguous_tiles", test_noncontiguous_tiles},
    {"thread_tensors", test_thread_tensors},
    {"swizzle", test_swizzle},
    {"mma_fragment", test_mma_fragment},
    {"dist_algebra", test_dist_algebra},
    {"errors", test_errors},
    {"parse_prefix", test_parse_prefix},
    {0, 0},
};
