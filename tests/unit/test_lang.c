/* test_lang.c — the TC front end: lexing, parsing, typing, range inference
 * (symbolic, then bound to fresh random sizes), printers, and the limits
 * that keep hostile input from hurting (deep nesting, long chains). */
#include <string.h>

#include "lang/lang.h"
#include "test.h"

/* One arena + diag per test; lt_done frees them. */
static tsl_arena *lt_arena;
static tsl_diag lt_diag;
static tsl_source lt_src;

static const lang_module *lt_parse(const char *text)
{
    if (!lt_arena) lt_arena = arena_create();
    diag_reset(&lt_diag);
    lt_src.name = "test.tc";
    lt_src.text = text;
    return lang_parse_check(lt_arena, &lt_src, &lt_diag);
}

static const lang_def *lt_def(const char *text, const char *name)
{
    const lang_module *m = lt_parse(text);
    CHECK_MSG(m != NULL, "expected the program to check, got:\n%s", sb_str(&lt_diag.msg));
    if (!m) return NULL;
    const lang_def *d = name ? lang_module_find(m, name) : lang_module_def(m, 0);
    CHECK(d != NULL);
    return d;
}

/* The diagnostics of a program that must fail. */
static const char *lt_error(const char *text)
{
    const lang_module *m = lt_parse(text);
    CHECK_MSG(m == NULL, "expected an error for:\n%s", text);
    return sb_str(&lt_diag.msg);
}

static void lt_done(void)
{
    arena_free(lt_arena);
    lt_arena = NULL;
    diag_free(&lt_diag);
}

static const char *lt_ranges(const lang_def *d)
{
    strbuf b = {0};
    lang_print_ranges(&b, d);
    char *s = arena_strdup(lt_arena, sb_str(&b));
    sb_free(&b);
    return s;
}

/* "v in LO:HI" line of statement s, as printed */
static bool lt_has(const char *hay, const char *needle)
{
    bool ok = strstr(hay, needle) != NULL;
    if (!ok) fprintf(stderr, "  missing \"%s\" in:\n%s\n", needle, hay);
    return ok;
}

static lang_bound *lt_bind(const lang_def *d, const char *names, const int64_t *values, int n)
{
    int64_t sizes[32];
    for (int i = 0; i < 32; i++) sizes[i] = -1;
    const char *p = names;
    for (int i = 0; i < n; i++) {
        char name[16];
        int len = 0;
        while (*p == ' ') p++;
        while (*p && *p != ' ' && len < 15) name[len++] = *p++;
        name[len] = 0;
        int slot = lang_def_size_slot(d, name);
        CHECK_MSG(slot >= 0, "no size %s", name);
        if (slot >= 0) sizes[slot] = values[i];
    }
    lang_bound *b = NULL;
    diag_reset(&lt_diag);
    int st = lang_bind(lt_arena, d, sizes, &b, &lt_diag);
    CHECK_MSG(st == TSL_OK, "bind failed:\n%s", sb_str(&lt_diag.msg));
    return st == TSL_OK ? b : NULL;
}

static int lt_var(const lang_stmt *s, const char *name)
{
    for (int v = 0; v < s->nvars; v++)
        if (!strcmp(s->vars[v].name, name)) return v;
    CHECK_MSG(0, "no var %s", name);
    return 0;
}

#define CHECK_RANGE(b, stmt, def, var, lo_, hi_)                                 \
    do {                                                                       \
        int v_ = lt_var(&(def)->stmts[stmt], var);                             \
        CHECK_EQ_INT((b)->stmts[stmt].lo[v_], lo_);                            \
        CHECK_EQ_INT((b)->stmts[stmt].hi[v_], hi_);                            \
    } while (0)

/* ---- parsing and printing ---------------------------------------------------- */

static void test_lex_forms(void)
{
    /* → and ->, comments, +=!, max=!, number forms, where on the next line */
    const lang_def *d = lt_def("# header comment\n"
                               "def f(float(N) X, half(N) H) → (Y, Z, W) {  # trailing\n"
                               "  Y(i) +=! X(k) * X(i) * 2.f + 1e-5 + .5 + 3.25F   # c\n"
                               "  Z(i) max=! X(i + k)\n"
                               "     where k in 0:2\n"
                               "  W(i) = H(i) * 2.0; W(i) min= H(i)\n"
                               "}\n",
                               "f");
    if (!d) goto out;
    CHECK_EQ_INT(d->nstmts, 4);
    CHECK_EQ_INT(d->stmts[0].op, LANG_ADD_EQ);
    CHECK(d->stmts[0].bang);
    CHECK_EQ_INT(d->stmts[1].op, LANG_MAX_EQ);
    CHECK(d->stmts[1].bang);
    CHECK_EQ_INT(d->stmts[3].op, LANG_MIN_EQ);
    CHECK(!d->stmts[3].bang);
    CHECK(d->stmts[1].vars[1].from_where);
    /* literal values survive: printed back canonically */
    d = lt_def("def g(float(N) X) -> (Y) { Y(i) = X(i) * 2.f + 1e-5 + .5 + 3.25F + 7 }", "g");
    if (!d) goto out;
    strbuf b = {0};
    lang_print_def(&b, d);
    CHECK(lt_has(sb_str(&b), "Y(i) = X(i) * 2.0 + 1e-05 + 0.5 + 3.25 + 7  # float32"));
    sb_free(&b);
out:
    lt_done();
}

static void test_print_roundtrip(void)
{
    const char *src = "def g(float(M,K) A, float(K,N) B, float alpha, int32(M) I) -> (C, r) {\n"
                      "  C(i, j) +=! alpha * A(i, k) * B(k, j) where k in 0:K\n"
                      "  C(i, j) = i >= j ? -C(i, j) : (C(i, j) + 1) / 2\n"
                      "  C(i, j) = float32(I(i) % 3) + max(C(i, j), 0.5) - exp(-A(i, 0))\n"
                      "  r() +=! C(i, j) * (A(I(i) + 1, 0) > 0 && !(B(0, j) < 1) ? 1 : 0)\n"
                      "}\n";
    const lang_def *d = lt_def(src, "g");
    if (!d) goto out;
    strbuf a = {0}, b = {0};
    lang_print_def(&a, d);
    char *once = arena_strdup(lt_arena, sb_str(&a));
    const lang_def *d2 = lt_def(once, "g");
    if (d2) {
        lang_print_def(&b, d2);
        CHECK_EQ_STR(sb_str(&b), once);
    }
    CHECK(lt_has(once, "C(i, j) = i >= j ? -C(i, j) : (C(i, j) + 1) / 2"));
    CHECK(lt_has(once, "float32(I(i) % 3)"));
    sb_free(&a);
    sb_free(&b);
out:
    lt_done();
}

/* ---- range inference ------------------------------------------------------- */

static void test_sgemm(void)
{
    const lang_def *d = lt_def("def sgemm(float(M,K) A, float(K,N) B) -> (C) {\n"
                               "  C(i,j) +=! A(i,k) * B(k,j)\n}\n",
                               "sgemm");
    if (!d) goto out;
    const char *r = lt_ranges(d);
    CHECK(lt_has(r, "i in 0:M\n"));
    CHECK(lt_has(r, "j in 0:N\n"));
    CHECK(lt_has(r, "k in 0:K  reduction"));
    CHECK(lt_has(r, "tensor C: float32(M, N) output"));
    CHECK_EQ_INT(d->stmts[0].niter, 2);
    CHECK_EQ_INT(d->stmts[0].nvars, 3);
    int64_t v[3] = {test_rand_int(1, 40), test_rand_int(1, 40), test_rand_int(1, 40)};
    lang_bound *b = lt_bind(d, "M K N", v, 3);
    if (b) {
        CHECK_RANGE(b, 0, d, "i", 0, v[0]);
        CHECK_RANGE(b, 0, d, "j", 0, v[2]);
        CHECK_RANGE(b, 0, d, "k", 0, v[1]);
        const lang_tensor *C = lang_def_tensor(d, "C");
        CHECK_EQ_INT(b->shapes[C->index][0], v[0]);
        CHECK_EQ_INT(b->shapes[C->index][1], v[2]);
    }
out:
    lt_done();
}

static void test_conv1d(void)
{
    const lang_def *d = lt_def("def conv1d(float(M) I, float(N) K) -> (O) {\n"
                               "  O(i) +=! K(x) * I(i + x)\n}\n",
                               NULL);
    if (!d) goto out;
    const char *r = lt_ranges(d);
    CHECK(lt_has(r, "i in 0:M - N + 1\n"));
    CHECK(lt_has(r, "x in 0:N  reduction"));
    CHECK(lt_has(r, "tensor O: float32(M - N + 1) output"));
    int64_t n = test_rand_int(1, 13), m = n + test_rand_int(0, 20);
    int64_t v[2] = {m, n};
    lang_bound *b = lt_bind(d, "M N", v, 2);
    if (b) {
        CHECK_RANGE(b, 0, d, "i", 0, m - n + 1);
        CHECK_RANGE(b, 0, d, "x", 0, n);
    }
    /* too small an input: empty range, at the variable, with the sizes */
    int64_t bad[2] = {n, n + test_rand_int(1, 5)};
    int64_t sizes[2] = {bad[0], bad[1]};
    lang_bound *bb = NULL;
    diag_reset(&lt_diag);
    CHECK(lang_bind(lt_arena, d, sizes, &bb, &lt_diag) == TSL_ERR_RANGE);
    CHECK(lt_has(sb_str(&lt_diag.msg), "test.tc:2:5: error: empty range for 'i': 0:M - N + 1"));
out:
    lt_done();
}

static void test_maxpool_where(void)
{
    const lang_def *d = lt_def("def maxpool2x2(float(B,C,H,W) in) -> (out) {\n"
                               "  out(b,c,i,j) max=! in(b,c, 2*i + kw, 2*j + kh)  where kw in 0:2, kh in 0:2\n"
                               "}\n",
                               NULL);
    if (!d) goto out;
    int64_t v[4] = {test_rand_int(1, 3), test_rand_int(1, 3), test_rand_int(2, 31),
                    test_rand_int(2, 31)};
    lang_bound *b = lt_bind(d, "B C H W", v, 4);
    if (b) {
        CHECK_RANGE(b, 0, d, "i", 0, v[2] / 2);
        CHECK_RANGE(b, 0, d, "j", 0, v[3] / 2);
        CHECK_RANGE(b, 0, d, "kw", 0, 2);
        const lang_tensor *o = lang_def_tensor(d, "out");
        CHECK_EQ_INT(b->shapes[o->index][2], v[2] / 2);
    }
    /* a where range that reads out of bounds is caught at bind time */
    d = lt_def("def f(float(N) X) -> (Y) {\n  Y(i) +=! X(i + k) where k in 0:3, i in 0:N\n}\n", NULL);
    if (!d) goto out;
    int64_t n = test_rand_int(1, 50);
    int64_t sizes[1] = {n};
    lang_bound *bb;
    diag_reset(&lt_diag);
    CHECK(lang_bind(lt_arena, d, sizes, &bb, &lt_diag) == TSL_ERR_RANGE);
    CHECK(lt_has(sb_str(&lt_diag.msg), "index 0 of 'X' (i + k) ranges over [0, "));
out:
    lt_done();
}

static void test_conv2d_strided(void)
{
    const lang_def *d = lt_def(
        "def sconv2d(float(N,C,H,W) I, float(F,C,KH,KW) W, float(F) B) -> (O) {\n"
        "  O(n,f,h,w) +=! I(n,c,2*h + kh,3*w + kw) * W(f,c,kh,kw)\n"
        "  O(n,f,h,w) = O(n,f,h,w) + B(f)\n}\n",
        NULL);
    if (!d) goto out;
    int64_t kh = test_rand_int(1, 5), kw = test_rand_int(1, 5);
    int64_t h = kh + test_rand_int(0, 17), w = kw + test_rand_int(0, 17);
    int64_t v[7] = {2, 3, h, w, 5, kh, kw};
    lang_bound *b = lt_bind(d, "N C H W F KH KW", v, 7);
    if (b) {
        CHECK_RANGE(b, 0, d, "h", 0, (h - kh) / 2 + 1);
        CHECK_RANGE(b, 0, d, "w", 0, (w - kw) / 3 + 1);
        CHECK_RANGE(b, 0, d, "kh", 0, kh);
        CHECK_RANGE(b, 1, d, "h", 0, (h - kh) / 2 + 1);
    }
out:
    lt_done();
}

static void test_gather(void)
{
    const lang_def *d = lt_def("def gather(float(N) X, int32(A,B) I) -> (Z) {\n"
                               "  Z(i,j) = X(I(i,j) + 1)\n}\n",
                               NULL);
    if (!d) goto out;
    const lang_expr *x = d->stmts[0].rhs;
    CHECK_EQ_INT(x->kind, LANG_E_ACCESS);
    CHECK(!x->args[0]->affine);                   /* checked at run time */
    const lang_expr *inner = x->args[0]->args[0];
    CHECK_EQ_INT(inner->kind, LANG_E_ACCESS);
    CHECK(inner->args[0]->affine && inner->args[1]->affine);
    const char *r = lt_ranges(d);
    CHECK(lt_has(r, "i in 0:A\n"));
    CHECK(lt_has(r, "j in 0:B\n"));
    /* a gather through a float tensor is a type error */
    CHECK(lt_has(lt_error("def g(float(N) X, float(N) I) -> (Z) { Z(i) = X(I(i)) }"),
                 "index 0 of 'X' has type float32; indices must be integers"));
out:
    lt_done();
}

static void test_zero_dim_and_inout(void)
{
    const lang_def *d = lt_def("def f(float(N) X, float() acc, float(N) Y) -> (acc, Y, s) {\n"
                               "  acc() += X(i)\n"
                               "  Y(i) = Y(i) * acc()\n"
                               "  s() max=! Y(i)\n"
                               "}\n",
                               NULL);
    if (!d) goto out;
    const lang_tensor *acc = lang_def_tensor(d, "acc"), *s = lang_def_tensor(d, "s");
    CHECK_EQ_INT(acc->flags, LANG_TENSOR_INPUT | LANG_TENSOR_OUTPUT);
    CHECK_EQ_INT(acc->rank, 0);
    CHECK_EQ_INT(s->rank, 0);
    CHECK_EQ_INT(s->flags, LANG_TENSOR_OUTPUT);
    CHECK(d->stmts[1].reads_lhs);
    CHECK(!d->stmts[2].reads_lhs);
    CHECK_EQ_INT(d->stmts[0].niter, 0);
    CHECK_EQ_INT(d->stmts[0].nvars, 1);
    int64_t v[1] = {test_rand_int(1, 100)};
    lang_bound *b = lt_bind(d, "N", v, 1);
    if (b) CHECK_RANGE(b, 0, d, "i", 0, v[0]);
out:
    lt_done();
}

static void test_temporaries_and_passes(void)
{
    /* out's shape comes from the second statement; stmt 0 is inferred after */
    const lang_def *d = lt_def("def fcrelu(float(B,I) in, float(O,I) weight, float(O) bias) -> (out) {\n"
                               "  out(b,o) = bias(o)\n"
                               "  out(b,o) += in(b,i) * weight(o,i)\n"
                               "  out(b,o) = fmaxf(out(b,o), 0)\n}\n"
                               "def ln(float(N,D) X) -> (Y) {\n"
                               "  mean(n) +=! X(n,d)\n"
                               "  mean(n) = mean(n) / D\n"
                               "  xc(n,d) = X(n,d) - mean(n)\n"
                               "  Y(n,d) = xc(n,d) * rsqrt(mean(n) + 1e-5)\n}\n",
                               "ln");
    if (!d) goto out;
    const lang_tensor *mean = lang_def_tensor(d, "mean"), *xc = lang_def_tensor(d, "xc");
    CHECK_EQ_INT(mean->flags, LANG_TENSOR_TEMP);
    CHECK_EQ_INT(xc->rank, 2);
    CHECK(lt_has(lt_ranges(d), "tensor xc: float32(N, D) temporary"));
    int64_t v[2] = {test_rand_int(1, 9), test_rand_int(1, 9)};
    lang_bound *b = lt_bind(d, "N D", v, 2);
    if (b) {
        CHECK_EQ_INT(b->shapes[xc->index][1], v[1]);
        CHECK_RANGE(b, 3, d, "d", 0, v[1]);
    }
    const lang_def *f = lang_module_find(lt_parse(lt_src.text), "fcrelu");
    CHECK(f != NULL);
    if (f) CHECK(lt_has(lt_ranges(f), "tensor out: float32(B, O) output"));
out:
    lt_done();
}

static void test_types(void)
{
    const lang_def *d = lt_def(
        "def t(half(N) h, bfloat16(N) bf, float(N) f, double(N) g, int8(N) a, uint8(N) u,\n"
        "      int32(N) k, bool(N) m) -> (o1, o2, o3, o4, o5, o6, o7, o8, o9, o10, o11) {\n"
        "  o1(i) = h(i) * 2.0\n"      /* float literal is weak: float16 */
        "  o2(i) = h(i) + bf(i)\n"    /* f16 with bf16: float32 */
        "  o3(i) = a(i) + u(i)\n"     /* int8 with uint8: int16 */
        "  o4(i) = k(i) / 2\n"        /* int32 division */
        "  o5(i) = k(i) * f(i)\n"     /* int with float: the float */
        "  o6(i) = h(i) < g(i)\n"     /* comparisons give bool */
        "  o7(i) = float64(h(i))\n"   /* cast */
        "  o8(i) = m(i) + 1\n"        /* bool with int literal: int32 */
        "  o9(i) = exp(k(i))\n"       /* math on ints: float32 */
        "  o10(i) = i >= 1 ? h(i) : 0\n"
        "  o11(i) = h(i) / N\n"       /* size symbol as value: int64 -> f16 */
        "}\n",
        NULL);
    if (!d) goto out;
    static const struct { const char *n; tsl_dtype t; } want[] = {
        {"o1", TSL_DTYPE_F16}, {"o2", TSL_DTYPE_F32}, {"o3", TSL_DTYPE_I16},
        {"o4", TSL_DTYPE_I32}, {"o5", TSL_DTYPE_F32}, {"o6", TSL_DTYPE_BOOL},
        {"o7", TSL_DTYPE_F64}, {"o8", TSL_DTYPE_I32}, {"o9", TSL_DTYPE_F32},
        {"o10", TSL_DTYPE_F16}, {"o11", TSL_DTYPE_F16},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const lang_tensor *t = lang_def_tensor(d, want[i].n);
        CHECK_MSG(t && t->dtype == want[i].t, "%s: got %s", want[i].n,
                  t ? dtype_info_of(t->dtype)->name : "(none)");
    }
    /* the comparison computes in the promoted type */
    CHECK_EQ_INT(d->stmts[5].rhs->optype, TSL_DTYPE_F64);
    /* weak float literals take the float type they meet; int parts stay */
    d = lt_def("def w(double(N) g, half(N) h) -> (a, b) {\n"
               "  a(i) = g(i) * -0.1\n"
               "  b(i) = h(i) * (1 / 2 + 0.5)\n}\n",
               NULL);
    if (!d) goto out;
    const lang_expr *lit = d->stmts[0].rhs->args[1];
    CHECK_EQ_INT(lit->type, TSL_DTYPE_F64);
    CHECK_EQ_INT(lit->args[0]->type, TSL_DTYPE_F64);
    const lang_expr *sum = d->stmts[1].rhs->args[1];
    CHECK_EQ_INT(sum->type, TSL_DTYPE_F16);
    CHECK_EQ_INT(sum->args[0]->optype, TSL_DTYPE_I32); /* 1 / 2 is integer division */
    CHECK_EQ_INT(sum->args[1]->type, TSL_DTYPE_F16);
    /* two literals give the wider type: 1 + 4294967296 is int64 (it was
     * int32, and the interpreter wrapped it to 1) */
    d = lt_def("def l(float(N) x) -> (a, b, c) {\n"
               "  a(i) = 1 + 4294967296 where i in 0:N\n"
               "  b(i) = 4294967296 * 2 + 1 where i in 0:N\n"
               "  c(i) = 1 + 2.5 where i in 0:N\n}\n",
               NULL);
    if (!d) goto out;
    CHECK_EQ_INT(lang_def_tensor(d, "a")->dtype, TSL_DTYPE_I64);
    CHECK_EQ_INT(lang_def_tensor(d, "b")->dtype, TSL_DTYPE_I64);
    CHECK_EQ_INT(lang_def_tensor(d, "c")->dtype, TSL_DTYPE_F32);
out:
    lt_done();
}

static void test_symbolic_offsets(void)
{
    /* i + N - 1 style indices, reversed and scaled accesses */
    const lang_def *d = lt_def("def f(float(M) X, float(N) K) -> (Y, Z) {\n"
                               "  Y(i) = X(M - 1 - i) + X(i)\n"
                               "  Z(i) +=! X(2*i + k) * K(k)\n"
                               "}\n",
                               NULL);
    if (!d) goto out;
    int64_t n = test_rand_int(1, 7), m = n + test_rand_int(0, 23);
    int64_t v[2] = {m, n};
    lang_bound *b = lt_bind(d, "M N", v, 2);
    if (b) {
        CHECK_RANGE(b, 0, d, "i", 0, m);
        CHECK_RANGE(b, 1, d, "i", 0, (m - n) / 2 + 1);
    }
out:
    lt_done();
}

static void test_where_size_symbol(void)
{
    /* a size only a where clause names must be supplied */
    const lang_def *d = lt_def("def f(float(N) X) -> (Y) {\n  Y(i) = X(i % N) where i in 0:T\n}\n", NULL);
    if (!d) goto out;
    CHECK_EQ_INT(d->nsizes, 2);
    CHECK(!d->stmts[0].rhs->args[0]->affine);
    int64_t sizes[2] = {5, -1};
    lang_bound *b;
    diag_reset(&lt_diag);
    CHECK(lang_bind(lt_arena, d, sizes, &b, &lt_diag) == TSL_ERR_SHAPE);
    CHECK(lt_has(sb_str(&lt_diag.msg), "size 'T' is not known"));
    int64_t v[2] = {test_rand_int(1, 9), test_rand_int(1, 30)};
    b = lt_bind(d, "N T", v, 2);
    if (b) CHECK_RANGE(b, 0, d, "i", 0, v[1]);
out:
    lt_done();
}

/* Quasi-affine indices: `/` and `%` of affine forms by positive constants
 * (a weight's per-group scale S(k / 128, n)) are inferred, proven in
 * bounds at bind time, and a zero or negative divisor is a located error. */
static void test_quasi_affine(void)
{
    const lang_def *d = lt_def("def q(float(K,N) W, float(G,N) S, float(M,K) X) -> (Y, Z) {\n"
                               "  Y(m,n) +=! W(k,n) * S(k / 128, n) * X(m,k)\n"
                               "  Z(j) = S(j / 4, 0) + S(j % 2, (j + 3) / 2)\n"
                               "}\n",
                               NULL);
    if (!d) goto out;
    const lang_expr *r = d->stmts[0].rhs; /* (W * S) * X */
    const lang_expr *sa = r->args[0]->args[1];
    CHECK_EQ_INT(sa->kind, LANG_E_ACCESS);
    CHECK(!sa->args[0]->affine && sa->args[0]->quasi);
    CHECK(sa->args[1]->affine);
    const char *rr = lt_ranges(d);
    /* k is bounded by W (K) and by S (k / 128 < G: k < 128 * G) */
    CHECK(lt_has(rr, "k in 0:min(min(K, 128*G), K)  reduction"));
    /* j from j / 4 < G and (j + 3) / 2 < N (the modulo bounds nothing) */
    CHECK(lt_has(rr, "j in 0:min(4*G, 2*N - 3)\n"));
    int64_t g = test_rand_int(2, 5), k = 128 * (g - 1) + test_rand_int(1, 128), n = 2 * g + test_rand_int(0, 9);
    int64_t v[4] = {k, n, g, test_rand_int(1, 4)};
    lang_bound *b = lt_bind(d, "K N G M", v, 4);
    if (b) {
        CHECK_RANGE(b, 0, d, "k", 0, k);
        CHECK_RANGE(b, 1, d, "j", 0, 4 * g < 2 * n - 3 ? 4 * g : 2 * n - 3);
    }
    /* a where range past what (j + 3) / 2 may reach */
    d = lt_def("def q(float(K,N) W, float(G,N) S, float(M,K) X) -> (Y, Z) {\n"
               "  Y(m,n) +=! W(k,n) * S(k / 128, n) * X(m,k)\n"
               "  Z(j) = S(j / 4, 0) + S(j % 2, (j + 3) / 2) where j in 0:4*G\n"
               "}\n",
               NULL);
    if (!d) goto out;
    int64_t sizes[4];
    for (int i = 0; i < 4; i++) sizes[i] = -1;
    sizes[lang_def_size_slot(d, "K")] = k;
    sizes[lang_def_size_slot(d, "N")] = 2 * g + 1;
    sizes[lang_def_size_slot(d, "G")] = g;
    sizes[lang_def_size_slot(d, "M")] = 1;
    lang_bound *bb = NULL;
    diag_reset(&lt_diag);
    CHECK(lang_bind(lt_arena, d, sizes, &bb, &lt_diag) == TSL_ERR_RANGE);
    char want[160];
    snprintf(want, sizeof want, "test.tc:3:34: error: access out of bounds: index 1 of 'S' ((j + 3) / 2) ranges over [1, %lld]",
             (long long)(2 * g + 1));
    CHECK(lt_has(sb_str(&lt_diag.msg), want));
    /* a modulo the extent cannot hold */
    d = lt_def("def f(float(G) S) -> (Y) {\n  Y(i) = S(i % 4) where i in 0:10\n}\n", NULL);
    if (!d) goto out;
    int64_t three[1] = {3};
    diag_reset(&lt_diag);
    CHECK(lang_bind(lt_arena, d, three, &bb, &lt_diag) == TSL_ERR_RANGE);
    CHECK(lt_has(sb_str(&lt_diag.msg), "index 0 of 'S' (i % 4) ranges over [0, 3] but dimension 0 of 'S' has extent 3"));
    int64_t four[1] = {4};
    b = lt_bind(d, "G", four, 1);
    /* a short run of a modulo is proven exactly: 5 % 8 .. 7 % 8 */
    d = lt_def("def f(float(G) S) -> (Y) {\n  Y(i) = S((i + 5) % 8) where i in 0:3\n}\n", NULL);
    if (!d) goto out;
    int64_t eight[1] = {8};
    b = lt_bind(d, "G", eight, 1);
    /* zero and negative divisors in an index, at the divisor */
    CHECK(lt_has(lt_error("def f(float(N) X) -> (Y) {\n  Y(i) = X(i / 0) where i in 0:N\n}\n"),
                 "test.tc:2:16: error: division by 0 in an index: an index may divide only by a positive constant"));
    CHECK(lt_has(lt_error("def f(float(N) X) -> (Y) {\n  Y(i) = X(i % (1 - 4)) where i in 0:N\n}\n"),
                 "test.tc:2:17: error: modulo by -3 in an index"));
    CHECK(lt_has(lt_error("def f(float(N) X, int32(N) I) -> (Y) {\n  Y(i) = X(I(i / -2))\n}\n"),
                 "test.tc:2:18: error: division by -2 in an index"));
    /* outside an index, an integer division by zero stays a run-time matter */
    CHECK(lt_def("def f(int32(N) X) -> (Y) {\n  Y(i) = X(i) / 0\n}\n", NULL) != NULL);
    /* a size divisor is not quasi-affine: checked at run time */
    d = lt_def("def f(float(N) X) -> (Y) {\n  Y(i) = X(i / N) where i in 0:N\n}\n", NULL);
    if (d) CHECK(!d->stmts[0].rhs->args[0]->affine && !d->stmts[0].rhs->args[0]->quasi);
out:
    lt_done();
}

static void test_limits(void)
{
    /* deep nesting is an error, not a stack overflow */
    size_t n = 100000;
    char *src = malloc(3 * n + 100);
    size_t p = (size_t)sprintf(src, "def f(float(N) X) -> (Y) { Y(i) = ");
    for (size_t i = 0; i < n; i++) src[p++] = '(';
    p += (size_t)sprintf(src + p, "X(i)");
    for (size_t i = 0; i < n; i++) src[p++] = ')';
    strcpy(src + p, " }");
    CHECK(lt_has(lt_error(src), "nested too deeply"));
    /* a level is a level: 250 parentheses are under the limit of 256 (each
     * counted twice, 130 were reported as 'more than 256 levels') */
    p = (size_t)sprintf(src, "def f(float(N) X) -> (Y) { Y(i) = ");
    for (size_t i = 0; i < 250; i++) src[p++] = '(';
    p += (size_t)sprintf(src + p, "-X(i)");
    for (size_t i = 0; i < 250; i++) src[p++] = ')';
    strcpy(src + p, " }");
    CHECK(lt_def(src, NULL) != NULL);
    /* so is a very long flat chain (its tree is deep too) */
    p = (size_t)sprintf(src, "def f(float(N) X) -> (Y) { Y(i) = X(i)");
    for (size_t i = 0; i < n / 4; i++) p += (size_t)sprintf(src + p, "+1");
    strcpy(src + p, " }");
    CHECK(lt_has(lt_error(src), "nested too deeply"));
    /* and so is a long unary chain */
    p = (size_t)sprintf(src, "def f(float(N) X) -> (Y) { Y(i) = ");
    for (size_t i = 0; i < n; i++) src[p++] = '-';
    strcpy(src + p, "X(i) }");
    CHECK(lt_has(lt_error(src), "nested too deeply"));
    /* moderately deep is fine */
    p = (size_t)sprintf(src, "def f(float(N) X) -> (Y) { Y(i) = ");
    for (size_t i = 0; i < 50; i++) src[p++] = '(';
    p += (size_t)sprintf(src + p, "X(i)");
    for (size_t i = 0; i < 50; i++) src[p++] = ')';
    strcpy(src + p, " }");
    CHECK(lt_def(src, "f") != NULL);
    free(src);
    lt_done();
}

static void test_several_errors(void)
{
    /* an error in one def does not hide another's */
    const char *msg = lt_error("def a(float(N) X) -> (Y) { Y(i) = Z(i) }\n"
                               "def b(float(N) X) -> (Y) { Y(i) = X(j) }\n");
    CHECK(lt_has(msg, "test.tc:1:"));
    CHECK(lt_has(msg, "test.tc:2:"));
    CHECK_EQ_INT(lt_diag.first, TSL_ERR_SEMANTIC);
    lt_done();
}

TEST_SUITE(lang) = {
    {"lex_forms", test_lex_forms},
    {"print_roundtrip", test_print_roundtrip},
    {"sgemm", test_sgemm},
    {"conv1d", test_conv1d},
    {"maxpool_where", test_maxpool_where},
    {"conv2d_strided", test_conv2d_strided},
    {"gather", test_gather},
    {"zero_dim_and_inout", test_zero_dim_and_inout},
    {"temporaries_and_passes", test_temporaries_and_passes},
    {"types", test_types},
    {"symbolic_offsets", test_symbolic_offsets},
    {"where_size_symbol", test_where_size_symbol},
    {"quasi_affine", test_quasi_affine},
    {"limits", test_limits},
    {"several_errors", test_several_errors},
    {0},
};
