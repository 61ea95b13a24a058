/* test_base.c — arena, strbuf, diagnostics, dtype conversions. */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "test.h"

static void test_diag_caret(void)
{
    tsl_source src = {"x.tc", "def f() {\n  a(i) = b(i) +\n}\n"};
    tsl_diag d = {0};
    diag_error_at(&d, &src, 12, TSL_ERR_SYNTAX, "unexpected '%s'", "b");
    CHECK_EQ_INT(d.nerr, 1);
    CHECK_EQ_INT(d.first, TSL_ERR_SYNTAX);
    CHECK_EQ_STR(sb_str(&d.msg), "x.tc:2:3: error: unexpected 'b'\n  a(i) = b(i) +\n  ^");
    diag_free(&d);
}

static void test_f16_roundtrip(void)
{
    for (int i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float f = f16_to_f32(h);
        if (f != f) continue; /* NaN payloads need not round-trip */
        CHECK_MSG(f32_to_f16(f) == h, "f16 %04x -> %g -> %04x", i, f, f32_to_f16(f));
    }
    CHECK_EQ_INT(f32_to_f16(1.0f + 1.0f / 4096), 0x3c00); /* ties to even */
    CHECK_EQ_INT(f32_to_f16(65520.0f), 0x7c00);          /* overflow to inf */
}

static void test_bf16_round(void)
{
    for (int i = 0; i < 1000; i++) {
        float f = (float)test_rand_double(-1e6, 1e6);
        float g = bf16_to_f32(f32_to_bf16(f));
        CHECK(fabsf(g - f) <= fabsf(f) / 256);
    }
}

static void test_dtype_store_load(void)
{
    unsigned char buf[8];
    for (int t = 0; t < TSL_DTYPE_COUNT; t++) {
        const dtype_info *di = dtype_info_of((tsl_dtype)t);
        double v = di->bits < 4 || t == TSL_DTYPE_BOOL ? (di->is_signed ? -1 : 1) : (di->is_signed ? -7 : 7);
        if (di->is_float && di->bits <= 8) v = -1; /* every low-bit float holds it */
        dtype_store((tsl_dtype)t, buf, v);
        CHECK_CLOSE(dtype_load((tsl_dtype)t, buf), v, 0);
        DLDataType dl = tsl_dtype_to_dlpack((tsl_dtype)t);
        tsl_dtype back;
        CHECK(tsl_dtype_from_dlpack(dl, &back) == 0 && back == (tsl_dtype)t);
    }
    tsl_dtype t;
    CHECK(dtype_parse("half", 4, &t) == 0 && t == TSL_DTYPE_F16);
    CHECK(dtype_parse("bfloat16", 8, &t) == 0 && t == TSL_DTYPE_BF16);
    CHECK(dtype_parse("float33", 7, &t) != 0);
    CHECK(dtype_parse("float6e3m2", 10, &t) == 0 && t == TSL_DTYPE_F6E3M2);
    CHECK(dtype_parse("f4e2m1", 6, &t) != 0 && dtype_parse_short("f4e2m1", 6, &t) == 0 && t == TSL_DTYPE_F4E2M1);
    CHECK(dtype_parse("uint1", 5, &t) == 0 && t == TSL_DTYPE_U1);
    CHECK(dtype_parse("int1", 4, &t) != 0);
    CHECK(dtype_parse("float6e3m3", 10, &t) != 0);
    CHECK(dtype_parse("float9e4m4", 10, &t) != 0);
}

/* dtype_max_num / dtype_min_num against the table PTX max.f32 / min.f32
 * gave on an H200 (a NaN operand ignored, -0 < +0), in both operand
 * orders, compared bit for bit (any NaN counts as NaN); then a max and a
 * min over shuffled values of +-0, NaN and +-inf give one answer. */
static int same_bits(double a, double b)
{
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

static void test_max_min_num(void)
{
    static const struct {
        double x, y, max, min;
    } rows[] = {
        {NAN, 1.0, 1.0, 1.0},           {NAN, -INFINITY, -INFINITY, -INFINITY},
        {NAN, NAN, NAN, NAN},           {NAN, -0.0, -0.0, -0.0},
        {-0.0, 0.0, 0.0, -0.0},         {-0.0, -0.0, -0.0, -0.0},
        {0.0, 0.0, 0.0, 0.0},           {-INFINITY, INFINITY, INFINITY, -INFINITY},
        {INFINITY, 1e308, INFINITY, 1e308}, {2.0, 1.0, 2.0, 1.0},
        {-1.0, -0.0, -0.0, -1.0},       {1e-310, 0.0, 1e-310, 0.0},
    };
    for (size_t i = 0; i < TSL_COUNTOF(rows); i++)
        for (int swap = 0; swap < 2; swap++) {
            double x = swap ? rows[i].y : rows[i].x, y = swap ? rows[i].x : rows[i].y;
            CHECK_MSG(same_bits(dtype_max_num(x, y), rows[i].max), "max(%g, %g) = %g, want %g", x, y,
                      dtype_max_num(x, y), rows[i].max);
            CHECK_MSG(same_bits(dtype_min_num(x, y), rows[i].min), "min(%g, %g) = %g, want %g", x, y,
                      dtype_min_num(x, y), rows[i].min);
        }
    double v[8] = {0.0, -0.0, NAN, -0.0, 0.0, NAN, -0.0, 0.0};
    int neginf = test_rand_int(0, 1);
    if (neginf) v[5] = -INFINITY;
    for (int rep = 0; rep < 50; rep++) {
        for (int i = 7; i > 0; i--) {
            int j = (int)test_rand_int(0, i);
            double t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        double mx = v[0], mn = v[0];
        for (int i = 1; i < 8; i++) mx = dtype_max_num(mx, v[i]), mn = dtype_min_num(mn, v[i]);
        CHECK(same_bits(mx, 0.0));
        CHECK(same_bits(mn, neginf ? -INFINITY : -0.0));
    }
}

static void test_arena_push(void)
{
    tsl_arena *a = arena_create();
    int *items = NULL, n = 0, cap = 0;
    for (int i = 0; i < 1000; i++) ARENA_PUSH(a, items, n, cap, i * 3);
    int ok = 1;
    for (int i = 0; i < 1000; i++) ok &= items[i] == i * 3;
    CHECK(ok);
    CHECK_EQ_STR(arena_printf(a, "%s-%d", "x", 42), "x-42");
    arena_free(a);
}

TEST_SUITE(base) = {
    {"diag_caret", test_diag_caret},
    {"f16_roundtrip", test_f16_roundtrip},
    {"bf16_round", test_bf16_round},
    {"dtype_store_load", test_dtype_store_load},
    {"max_min_num", test_max_min_num},
    {"arena_push", test_arena_push},
    {0},
};
