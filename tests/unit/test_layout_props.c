/* test_layout_props.c — the algebra's laws over thousands of random
 * layouts, drawn fresh each run: composition is function composition,
 * complement is disjoint and fills, coalesce keeps the function, right
 * inverse inverts, divide/product round-trip, swizzles are bijections, and
 * distributed layouts compose associatively, divide exactly and cover
 * their shape once. */
#include <string.h>

#include "layout/layout.h"
#include "layout/layout_int.h"
#include "test.h"

#define ROUNDS 2000

static int64_t pick(const int64_t *xs, int n)
{
    return xs[test_rand_int(0, n - 1)];
}

/* A random tree over the given leaves (in order): each leaf alone or
 * grouped with its neighbours, up to depth 2. */
static layout random_tree(const int64_t *sh, const int64_t *st, int n)
{
    layout modes[LAYOUT_MAX_RANK];
    int nm = 0;
    for (int i = 0; i < n;) {
        int take = (int)test_rand_int(1, n - i);
        if (take > 3 || test_rand_int(0, 1)) take = 1;
        if (take == 1) {
            modes[nm++] = layout_leaf(sh[i], st[i]);
        } else {
            layout sub[3];
            for (int k = 0; k < take; k++) sub[k] = layout_leaf(sh[i + k], st[i + k]);
            tsl_status s = layout_tuple(&modes[nm++], sub, take, NULL);
            TSL_ASSERT(s == TSL_OK);
        }
        i += take;
    }
    layout r;
    if (nm == 1 && test_rand_int(0, 1)) return modes[0];
    tsl_status s = layout_tuple(&r, modes, nm, NULL);
    TSL_ASSERT(s == TSL_OK);
    return r;
}

/* Any layout: extents 1..7, strides 0..40. */
static layout random_layout(int maxleaves)
{
    int64_t sh[8], st[8];
    int n = (int)test_rand_int(1, maxleaves);
    for (int i = 0; i < n; i++) {
        sh[i] = test_rand_int(1, 7);
        st[i] = test_rand_int(0, 40);
    }
    return random_tree(sh, st, n);
}

/* An injective layout whose sorted strides nest (complement's domain):
 * modes laid out with gaps, then shuffled. Returns the span in *span. */
static layout random_injective(int maxleaves, int gaps, int64_t *span)
{
    int64_t sh[8], st[8];
    int n = (int)test_rand_int(1, maxleaves);
    int64_t cur = 1;
    for (int i = 0; i < n; i++) {
        int64_t g = gaps ? test_rand_int(1, 3) : 1;
        sh[i] = test_rand_int(1, 6);
        st[i] = cur * g;
        cur = st[i] * sh[i];
    }
    for (int i = n - 1; i > 0; i--) {
        int j = (int)test_rand_int(0, i);
        int64_t t = sh[i];
        sh[i] = sh[j], sh[j] = t;
        t = st[i];
        st[i] = st[j], st[j] = t;
    }
    *span = cur;
    return random_tree(sh, st, n);
}

static void test_prop_compose(void)
{
    static const int64_t p2[] = {1, 2, 4, 8};
    int ok = 0, checked = 0;
    for (int r = 0; r < ROUNDS; r++) {
        layout a, b;
        if (r % 2) { /* powers of two: composition always defined */
            int64_t sh[6], st[6];
            int n = (int)test_rand_int(1, 4);
            for (int i = 0; i < n; i++) sh[i] = pick(p2 + 1, 3), st[i] = pick(p2, 4) * test_rand_int(0, 3);
            a = random_tree(sh, st, n);
            int64_t size = layout_size(&a), bs[6], bd[6], reach = 1;
            int m = (int)test_rand_int(1, 3);
            for (int i = 0; i < m; i++) {
                bd[i] = reach * pick(p2, 3);
                bs[i] = 1;
                while (bd[i] * bs[i] * 2 <= size && test_rand_int(0, 2)) bs[i] *= 2;
                reach = bd[i] * bs[i];
            }
            b = random_tree(bs, bd, m);
        } else {
            a = random_layout(4);
            b = random_layout(3);
        }
        layout c;
        tsl_status st = layout_compose(&c, &a, &b, NULL);
        if (st) continue;
        ok++;
        CHECK_EQ_INT(layout_size(&c), layout_size(&b));
        /* beyond A's domain a layout extends through its last mode, and
         * coalescing may change which mode is last: compare with the
         * coalesced A there */
        layout ca = layout_coalesce(&a);
        if (layout_cosize(&b) <= layout_size(&a)) checked++;
        for (int64_t i = 0; i < layout_size(&b); i++) {
            int64_t bi = layout_eval(&b, i);
            int64_t want = layout_eval(bi < layout_size(&a) ? &a : &ca, bi);
            int64_t got = layout_eval(&c, i);
            if (got != want) {
                strbuf sb = {0};
                layout_print(&sb, &a), sb_puts(&sb, " o "), layout_print(&sb, &b);
                sb_puts(&sb, " = "), layout_print(&sb, &c);
                CHECK_MSG(0, "%s: at %lld got %lld want %lld", sb_str(&sb), (long long)i,
                          (long long)got, (long long)want);
                sb_free(&sb);
                break;
            }
        }
        /* the shape tree of the result is B's (each leaf may expand) */
        if (!layout_is_leaf(&b)) CHECK_EQ_INT(layout_rank(&c), layout_rank(&b));
    }
    CHECK_MSG(ok > ROUNDS / 3 && checked > ROUNDS / 4, "only %d of %d compositions defined (%d checked)",
              ok, ROUNDS, checked);
}

static void test_prop_complement(void)
{
    static unsigned char seen[1 << 14];
    for (int r = 0; r < ROUNDS; r++) {
        int64_t span;
        layout a = random_injective(4, 1, &span);
        int64_t m = span * test_rand_int(1, 3);
        if (m > (int64_t)sizeof seen) continue;
        layout c, ac;
        CHECK(layout_complement(&c, &a, m, NULL) == TSL_OK);
        layout pair[2] = {a, c};
        CHECK(layout_tuple(&ac, pair, 2, NULL) == TSL_OK);
        CHECK_EQ_INT(layout_size(&ac), m);
        memset(seen, 0, (size_t)m);
        int bad = 0;
        for (int64_t i = 0; i < layout_size(&ac) && !bad; i++) {
            int64_t o = layout_eval(&ac, i);
            if (o < 0 || o >= m || seen[o]) bad = 1;
            else seen[o] = 1;
        }
        CHECK_MSG(!bad, "complement not disjoint or outside [0,%lld)", (long long)m);
        /* the complement's strides are positive and its image avoids A's */
        for (int64_t i = 1; i < layout_size(&c); i++) CHECK(layout_eval(&c, i) != 0);
    }
}

static void test_prop_coalesce(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        layout a = random_layout(6);
        layout c = layout_coalesce(&a);
        CHECK_EQ_INT(layout_size(&c), layout_size(&a));
        CHECK(layout_depth(&c) <= 1);
        CHECK(layout_leaves(&c, NULL, NULL) <= layout_leaves(&a, NULL, NULL));
        for (int64_t i = 0; i < layout_size(&a); i++)
            if (layout_eval(&c, i) != layout_eval(&a, i)) {
                CHECK_MSG(0, "coalesce changed the function at %lld", (long long)i);
                break;
            }
    }
}

static void test_prop_right_inverse(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        int64_t span;
        int gaps = r % 2;
        layout a = random_injective(5, gaps, &span), ri;
        CHECK(layout_inverse_right(&ri, &a, NULL) == TSL_OK);
        if (!gaps) CHECK_EQ_INT(layout_size(&ri), layout_size(&a));
        for (int64_t i = 0; i < layout_size(&ri); i++)
            if (layout_eval(&a, layout_eval(&ri, i)) != i) {
                CHECK_MSG(0, "A(R(%lld)) != %lld", (long long)i, (long long)i);
                break;
            }
    }
}

static int same_function(const layout *x, const layout *y)
{
    if (layout_size(x) != layout_size(y)) return 0;
    for (int64_t i = 0; i < layout_size(x); i++)
        if (layout_eval(x, i) != layout_eval(y, i)) return 0;
    return 1;
}

/* divide(A, B) == A o (B, B*) with (B, B*) a bijection of A's domain;
 * divide(N:1, B) == product(B, (N/|B|):1); zipped and tiled are the same
 * function as logical (rearranged modes). */
static void test_prop_divide_product(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        int64_t span;
        layout b = random_injective(3, 1, &span);
        int64_t n = span * test_rand_int(1, 3);
        /* A: a random layout of exactly n elements (n factored at random) */
        int64_t sh[8], sd[8], rem = n;
        int k = 0;
        while (rem > 1 && k < 7) {
            int64_t f = rem;
            for (int tries = 0; tries < 8; tries++) {
                int64_t x = test_rand_int(2, rem);
                if (rem % x == 0) {
                    f = x;
                    break;
                }
            }
            sh[k] = f, sd[k] = test_rand_int(0, 20), k++;
            rem /= f;
        }
        if (rem > 1 || k == 0) sh[k] = rem, sd[k] = test_rand_int(1, 5), k++;
        layout an = random_tree(sh, sd, k);
        layout d, z, t, bc, bb, comp, p;
        CHECK(layout_complement(&bc, &b, n, NULL) == TSL_OK);
        layout pair[2] = {b, bc};
        CHECK(layout_tuple(&bb, pair, 2, NULL) == TSL_OK);
        tsl_status cst = layout_compose(&comp, &an, &bb, NULL);
        /* divide is defined exactly when the composition is */
        CHECK_EQ_INT(layout_divide_logical(&d, &an, &b, 0, NULL), cst);
        CHECK_EQ_INT(layout_divide_zipped(&z, &an, &b, 0, NULL), cst);
        CHECK_EQ_INT(layout_divide_tiled(&t, &an, &b, 0, NULL), cst);
        if (cst) continue;
        CHECK(same_function(&d, &comp));
        CHECK(same_function(&z, &d));
        CHECK(same_function(&t, &d));
        CHECK_EQ_INT(layout_size(&d), n);
        layout dn, rep = layout_leaf(n / layout_size(&b), 1), nn = layout_leaf(n, 1);
        CHECK(layout_divide_logical(&dn, &nn, &b, 0, NULL) == TSL_OK);
        CHECK(layout_product_logical(&p, &b, &rep, 0, NULL) == TSL_OK);
        CHECK(same_function(&dn, &p));
        /* a tile that does not divide is an error, not a wrong answer */
        if (n % 5) {
            layout five = layout_leaf(5, 1), x;
            CHECK(layout_divide_logical(&x, &nn, &five, 0, NULL) != TSL_OK);
        }
    }
}

/* By-mode: zipped ((t0,t1),(r0,r1)) reads the same offsets as logical
 * ((t0,r0),(t1,r1)) with the coordinates regrouped. */
static void test_prop_divide_by_mode(void)
{
    static const int64_t tiles[] = {1, 2, 3, 4};
    for (int r = 0; r < ROUNDS / 4; r++) {
        int64_t t0 = pick(tiles, 4), t1 = pick(tiles, 4);
        int64_t m0 = t0 * test_rand_int(1, 4), m1 = t1 * test_rand_int(1, 4);
        layout modes[2] = {layout_leaf(m0, test_rand_int(1, 5)),
                           layout_leaf(m1, test_rand_int(1, 5) * 7)};
        layout a, tl, lg, zp;
        CHECK(layout_tuple(&a, modes, 2, NULL) == TSL_OK);
        layout tm[2] = {layout_leaf(t0, 1), layout_leaf(t1, 1)};
        CHECK(layout_tuple(&tl, tm, 2, NULL) == TSL_OK);
        CHECK(layout_divide_logical(&lg, &a, &tl, 1, NULL) == TSL_OK);
        CHECK(layout_divide_zipped(&zp, &a, &tl, 1, NULL) == TSL_OK);
        int64_t r0 = m0 / t0;
        for (int64_t i0 = 0; i0 < t0; i0++)
            for (int64_t i1 = 0; i1 < t1; i1++)
                for (int64_t j0 = 0; j0 < r0; j0++)
                    for (int64_t j1 = 0; j1 < m1 / t1; j1++) {
                        int64_t cl[2] = {i0 + j0 * t0, i1 + j1 * t1};
                        int64_t cz[2] = {i0 + i1 * t0, j0 + j1 * r0};
                        int64_t want = (i0 + j0 * t0) * layout_eval(&modes[0], 1) +
                                       (i1 + j1 * t1) * layout_eval(&modes[1], 1);
                        CHECK_EQ_INT(layout_eval_coord(&lg, cl, 2), want);
                        CHECK_EQ_INT(layout_eval_coord(&zp, cz, 2), want);
                    }
    }
}

static void test_prop_swizzle(void)
{
    static unsigned char seen[1 << 14];
    for (int r = 0; r < ROUNDS / 4; r++) {
        layout_swizzle sw;
        sw.b = (int)test_rand_int(1, 3);
        sw.m = (int)test_rand_int(0, 4);
        sw.s = (int)test_rand_int(sw.b, 5) * (test_rand_int(0, 1) ? 1 : -1);
        CHECK(layout_swizzle_check(sw, NULL) == TSL_OK);
        int bits = sw.m + sw.b + (sw.s < 0 ? -sw.s : sw.s);
        int64_t n = (int64_t)1 << bits;
        int64_t base = n * test_rand_int(0, 5); /* any aligned block */
        memset(seen, 0, (size_t)n);
        int bad = 0;
        for (int64_t x = 0; x < n; x++) {
            int64_t y = layout_swizzle_apply(sw, base + x) - base;
            if (y < 0 || y >= n || seen[y]) bad = 1;
            else seen[y] = 1;
            if (layout_swizzle_apply(sw, layout_swizzle_apply(sw, base + x)) != base + x) bad = 1;
        }
        CHECK_MSG(!bad, "swizzle(%d,%d,%d) is not a bijection", sw.b, sw.m, sw.s);
    }
}

static void test_prop_print_parse(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        layout a = random_layout(6);
        if (r % 3 == 0) {
            layout_swizzle sw = {(int)test_rand_int(1, 2), (int)test_rand_int(0, 3), 3};
            CHECK(layout_swizzled(&a, sw, &a, NULL) == TSL_OK);
        }
        strbuf s1 = {0}, s2 = {0};
        layout_print(&s1, &a);
        layout_value *v = calloc(1, sizeof *v);
        CHECK(layout_parse(s1.buf, s1.len, v, NULL) == TSL_OK);
        CHECK(v->kind == LAYOUT_VALUE_DATA && layout_equal(&v->data, &a));
        layout_value_print(&s2, v);
        CHECK_EQ_STR(sb_str(&s2), sb_str(&s1));
        free(v);
        sb_free(&s1);
        sb_free(&s2);
    }
}

/* ---- distributed ------------------------------------------------------ */
static dist_layout random_dist(int rank, int maxatoms, int allow_rep)
{
    dist_layout l;
    int n = (int)test_rand_int(1, maxatoms);
    for (int a = 0; a < n; a++) {
        int64_t dims[DIST_MAX_RANK];
        int kind = (int)test_rand_int(0, allow_rep ? 2 : 1);
        int r = kind == 2 ? 0 : (int)test_rand_int(1, rank);
        if (kind == 2) dims[0] = test_rand_int(2, 3);
        for (int d = 0; d < r; d++) dims[d] = test_rand_int(1, 4);
        dist_layout x;
        tsl_status st = dist_layout_atom(&x, (dist_atom_kind)kind, (int)test_rand_int(0, 1),
                                         dims, r, NULL);
        TSL_ASSERT(st == TSL_OK);
        if (a == 0)
            l = x;
        else {
            st = dist_layout_compose(&l, &l, &x, NULL);
            TSL_ASSERT(st == TSL_OK);
        }
    }
    return l;
}

static void test_prop_dist_compose_divide(void)
{
    for (int r = 0; r < ROUNDS / 2; r++) {
        int rep = r % 4 == 0;
        dist_layout f = random_dist(2, 2, rep), g = random_dist(2, 2, rep),
                    h = random_dist(2, 2, rep);
        dist_layout fg, gh, fg_h, f_gh, q;
        CHECK(dist_layout_compose(&fg, &f, &g, NULL) == TSL_OK);
        CHECK(dist_layout_compose(&gh, &g, &h, NULL) == TSL_OK);
        CHECK(dist_layout_compose(&fg_h, &fg, &h, NULL) == TSL_OK);
        CHECK(dist_layout_compose(&f_gh, &f, &gh, NULL) == TSL_OK);
        CHECK(dist_layout_equal(&fg_h, &f_gh));
        layout_err e;
        tsl_status st = dist_layout_divide(&q, &fg, &g, &e);
        CHECK_MSG(st == TSL_OK, "%s", e.msg);
        if (st) continue;
        /* f padded to the quotient's rank is the same function */
        dist_layout one, fpad = f;
        int64_t ones[2] = {1, 1};
        if (fg.rank > 0) {
            CHECK(dist_layout_atom(&one, DIST_LOCAL, 0, ones, fg.rank, NULL) == TSL_OK);
            CHECK(dist_layout_compose(&fpad, &one, &f, NULL) == TSL_OK);
        }
        if (!dist_layout_equal(&q, &fpad)) {
            strbuf sb = {0};
            dist_layout_print(&sb, &f), sb_puts(&sb, " . "), dist_layout_print(&sb, &g);
            sb_puts(&sb, " / g = "), dist_layout_print(&sb, &q);
            CHECK_MSG(0, "(f.g)/g != f: %s", sb_str(&sb));
            sb_free(&sb);
        }
        /* print -> parse -> print of the quotient */
        strbuf s1 = {0}, s2 = {0};
        dist_layout_print(&s1, &q);
        layout_value *v = calloc(1, sizeof *v);
        CHECK(layout_parse(s1.buf, s1.len, v, NULL) == TSL_OK);
        layout_value_print(&s2, v);
        CHECK_EQ_STR(sb_str(&s2), sb_str(&s1));
        CHECK(v->kind == LAYOUT_VALUE_DIST && dist_layout_equal(&v->dist, &q));
        free(v);
        sb_free(&s1);
        sb_free(&s2);
    }
}

/* A layout without replication is a bijection (thread, local) <-> coord,
 * and owner() inverts map(). */
static void test_prop_dist_bijective(void)
{
    static unsigned char seen[1 << 16];
    for (int r = 0; r < ROUNDS / 2; r++) {
        int rank = (int)test_rand_int(1, 3);
        dist_layout l = random_dist(rank, 3, 0);
        int64_t total = l.threads * l.locals;
        if (total > (int64_t)sizeof seen) continue;
        memset(seen, 0, (size_t)total);
        int bad = 0;
        for (int64_t t = 0; t < l.threads; t++)
            for (int64_t i = 0; i < l.locals; i++) {
                int64_t c[DIST_MAX_RANK], lin = 0, tt, ii;
                CHECK(dist_layout_map(&l, t, i, c) == 0);
                for (int d = 0; d < l.rank; d++) {
                    if (c[d] < 0 || c[d] >= l.shape[d]) bad = 1;
                    lin = lin * l.shape[d] + c[d];
                }
                if (bad || seen[lin]) {
                    bad = 1;
                    continue;
                }
                seen[lin] = 1;
                CHECK(dist_layout_owner(&l, c, &tt, &ii) == 0);
                if (tt != t || ii != i) bad = 1;
            }
        CHECK_MSG(!bad, "distributed layout is not a bijection onto its shape");
        int64_t cells = 1;
        for (int d = 0; d < l.rank; d++) cells *= l.shape[d];
        CHECK_EQ_INT(cells, total);
    }
}

/* Point by point equality of two small distributed layouts. */
static int dist_equal_by_points(const dist_layout *a, const dist_layout *b)
{
    if (a->rank != b->rank || a->threads != b->threads || a->locals != b->locals) return 0;
    int64_t ca[DIST_MAX_RANK], cb[DIST_MAX_RANK];
    for (int64_t t = 0; t < a->threads; t++)
        for (int64_t i = 0; i < a->locals; i++) {
            dist_layout_map(a, t, i, ca);
            dist_layout_map(b, t, i, cb);
            if (memcmp(ca, cb, sizeof(int64_t) * (size_t)a->rank)) return 0;
        }
    return 1;
}

/* The normal form that dist_layout_equal decides by (so that it never
 * enumerates a large domain) agrees with point-by-point equality on
 * random pairs, many of them the same function spelt differently. */
static void test_prop_dist_normal_form(void)
{
    enum { N = 400 };
    static dist_layout ls[N];
    int same = 0;
    for (int r = 0; r < 4; r++) {
        for (int i = 0; i < N; i++) ls[i] = random_dist(2, 3, r % 2);
        for (int i = 0; i < N; i++)
            for (int j = i + 1; j < N; j++) {
                if (ls[i].threads != ls[j].threads || ls[i].locals != ls[j].locals) continue;
                int pts = dist_equal_by_points(&ls[i], &ls[j]);
                int nf = dist_same_normal_form(&ls[i], &ls[j]);
                same += pts;
                if (pts != nf) {
                    strbuf sb = {0};
                    dist_layout_print(&sb, &ls[i]), sb_puts(&sb, " vs "), dist_layout_print(&sb, &ls[j]);
                    CHECK_MSG(0, "normal form says %s, points say %s: %s", nf ? "equal" : "different",
                              pts ? "equal" : "different", sb_str(&sb));
                    sb_free(&sb);
                    return;
                }
            }
    }
    CHECK_MSG(same > 100, "only %d equal pairs drawn", same);
    /* a domain of 2^62 points is compared without enumerating it */
    dist_layout a, b, c;
    int64_t big[2] = {1 << 30, 1 << 30}, hi_one[2] = {1 << 30, 1}, one_hi[2] = {1, 1 << 30};
    CHECK(dist_layout_atom(&a, DIST_LOCAL, 0, big, 2, NULL) == TSL_OK);
    CHECK(dist_layout_atom(&b, DIST_LOCAL, 0, hi_one, 2, NULL) == TSL_OK);
    CHECK(dist_layout_atom(&c, DIST_LOCAL, 0, one_hi, 2, NULL) == TSL_OK);
    CHECK(dist_layout_compose(&b, &b, &c, NULL) == TSL_OK); /* local(2^30,1).local(1,2^30) */
    CHECK(dist_layout_equal(&a, &b));
}

/* The parser on random token soup: any status, never a crash or a leak
 * (run under ASan), and an error offset inside the text. */
static void test_prop_parse_garbage(void)
{
    static const char *const toks[] = {
        "(", ")", "[", "]", ",", ":", ".", "/", "-", "0", "1", "3", "8", "64",
        "99999999999", "4611686018427387904", "complement(8:1,9223372036854775807)",
        "swizzle(16,32,32,", " ", "local(", "spatial(", "column_local(", "replicate(",
        "compose(", "divide(", "zipped_divide(", "tiled_divide(", "product(",
        "blocked_product(", "raked_product(", "complement(", "coalesce(",
        "right_inverse(", "swizzle(", "(4,2):(1,4)", "2:2", "x",
    };
    char buf[256];
    for (int r = 0; r < ROUNDS * 2; r++) {
        size_t n = 0;
        int k = (int)test_rand_int(1, 14);
        for (int i = 0; i < k; i++) {
            const char *t = toks[test_rand_int(0, (long)TSL_COUNTOF(toks) - 1)];
            size_t tl = strlen(t);
            if (n + tl >= sizeof buf) break;
            memcpy(buf + n, t, tl);
            n += tl;
        }
        layout_value *v = calloc(1, sizeof *v);
        layout_err e;
        tsl_status st = layout_parse(buf, n, v, &e);
        if (st) CHECK_MSG(e.offset <= n && e.msg[0], "bad error for '%.*s'", (int)n, buf);
        free(v);
    }
}

/* reduce(l, d): every thread that held an element of a row along d holds
 * that row's reduced value. */
static void test_prop_dist_reduce(void)
{
    for (int r = 0; r < ROUNDS / 4; r++) {
        dist_layout l = random_dist(2, 3, r % 3 == 0), red;
        if (l.rank == 0) continue; /* only replication: nothing to reduce */
        int dim = (int)test_rand_int(0, l.rank - 1);
        CHECK(dist_layout_reduce(&red, &l, dim, NULL) == TSL_OK);
        CHECK_EQ_INT(red.shape[dim], 1);
        CHECK_EQ_INT(red.threads, l.threads);
        int64_t ts[256], ls[256];
        for (int64_t t = 0; t < l.threads; t++)
            for (int64_t i = 0; i < l.locals; i++) {
                int64_t c[DIST_MAX_RANK];
                dist_layout_map(&l, t, i, c);
                c[dim] = 0;
                int64_t n = dist_layout_owners(&red, c, ts, ls, 256), found = 0;
                for (int64_t k = 0; k < n && k < 256; k++) found |= ts[k] == t;
                CHECK_MSG(found || n > 256, "thread %lld lost its reduced value", (long long)t);
            }
    }
}

TEST_SUITE(layout_props) = {
    {"dist_reduce", test_prop_dist_reduce},
    {"dist_normal_form", test_prop_dist_normal_form},
    {"parse_garbage", test_prop_parse_garbage},
    {"compose", test_prop_compose},
    {"complement", test_prop_complement},
    {"coalesce", test_prop_coalesce},
    {"right_inverse", test_prop_right_inverse},
    {"divide_product", test_prop_divide_product},
    {"divide_by_mode", test_prop_divide_by_mode},
    {"swizzle", test_prop_swizzle},
    {"print_parse", test_prop_print_parse},
    {"dist_compose_divide", test_prop_dist_compose_divide},
    {"dist_bijective", test_prop_dist_bijective},
    {0, 0},
};
