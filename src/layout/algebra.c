/* algebra.c — CuTe's layout algebra on `layout` values: coalesce,
 * composition, complement, the divides, the products, right inverse.
 *
 * Every operation works on the flattened leaves where only the function
 * matters (coalesce, the left side of a composition, complement) and keeps
 * the tree where the result's shape is defined by an operand (the right
 * side of a composition). Errors — non-divisible shapes or strides, bad
 * cotargets, overflow, too many modes — come back as TSL_ERR_SHAPE with a
 * message; nothing asserts on user input. */
#include <string.h>

#include "layout/layout.h"
#include "layout/layout_int.h"

/* Flat list of modes (shape, stride), leaf 0 fastest. */
typedef struct lay_flat {
    int n;
    int64_t s[LAYOUT_MAX_NODES], d[LAYOUT_MAX_NODES];
} lay_flat;

static void flat_of(const layout *l, lay_flat *f)
{
    f->n = layout_leaves(l, f->s, f->d);
}

static int flat_push(lay_flat *f, int64_t s, int64_t d, layout_err *e)
{
    if (f->n >= LAYOUT_MAX_NODES) {
        layout_errf(e, "layout too large: more than %d modes", LAYOUT_MAX_NODES);
        return 1;
    }
    f->s[f->n] = s;
    f->d[f->n] = d;
    f->n++;
    return 0;
}

/* Drop size-1 modes, merge s0:d0,s1:d1 into (s0*s1):d0 when d1 == s0*d0. */
static void flat_coalesce(lay_flat *f)
{
    int k = 0;
    for (int i = 0; i < f->n; i++) {
        if (f->s[i] == 1) continue;
        int64_t p;
        if (k > 0 && !lay_mul(f->s[k - 1], f->d[k - 1], &p) && p == f->d[i] &&
            !lay_mul(f->s[k - 1], f->s[i], &p)) {
            f->s[k - 1] = p;
            continue;
        }
        f->s[k] = f->s[i];
        f->d[k] = f->d[i];
        k++;
    }
    f->n = k;
}

/* A leaf for one mode (an empty list is 1:0), else a flat tuple. */
static tsl_status flat_to_layout(const lay_flat *f, layout *out, layout_err *e)
{
    if (f->n == 0) {
        *out = layout_leaf(1, 0);
        return TSL_OK;
    }
    if (f->n == 1) {
        *out = layout_leaf(f->s[0], f->d[0]);
        return TSL_OK;
    }
    if (f->n + 1 > LAYOUT_MAX_NODES) {
        layout_errf(e, "layout too large: %d modes", f->n);
        return TSL_ERR_SHAPE;
    }
    layout r;
    memset(&r, 0, sizeof r);
    r.n = f->n + 1;
    r.node[0].nkids = f->n;
    r.node[0].nnodes = r.n;
    int64_t size = 1;
    for (int i = 0; i < f->n; i++) {
        r.node[i + 1] = (layout_node){f->s[i], f->d[i], 0, 1};
        if (lay_mul(size, f->s[i], &size)) {
            layout_errf(e, "layout size overflows 64 bits");
            return TSL_ERR_SHAPE;
        }
    }
    r.node[0].shape = size;
    *out = r;
    return TSL_OK;
}

static tsl_status pair(layout *out, const layout *a, const layout *b, layout_err *e)
{
    layout m[2] = {*a, *b};
    return layout_tuple(out, m, 2, e);
}

static layout unswizzled(const layout *a)
{
    layout r = *a;
    r.sw = (layout_swizzle){0, 0, 0};
    return r;
}

/* ---- coalesce ------------------------------------------------------------ */
layout layout_coalesce(const layout *a)
{
    lay_flat f;
    flat_of(a, &f);
    flat_coalesce(&f);
    layout r;
    /* coalescing never grows the mode count, so this cannot fail */
    tsl_status st = flat_to_layout(&f, &r, NULL);
    TSL_ASSERT(st == TSL_OK);
    r.sw = a->sw;
    return r;
}

/* ---- composition ----------------------------------------------------- */
/* A o (s:d) for A given as coalesced flat modes. Walks A's modes: the
 * stride d first skips whole modes it jumps over (d % s_i == 0), then
 * the shape s is spread over the modes from there (s % n_i == 0), the
 * last mode of A taking whatever remains. */
static tsl_status compose_leaf(const lay_flat *a, int64_t s, int64_t d, lay_flat *out,
                               layout_err *e)
{
    out->n = 0;
    if (s == 1 || d == 0) {
        flat_push(out, s, 0, e);
        return TSL_OK;
    }
    if (d < 0) {
        layout_errf(e, "cannot compose with a negative stride (%lld)", (long long)d);
        return TSL_ERR_SHAPE;
    }
    int64_t rs = s, rd = d, v;
    for (int i = 0; i < a->n && rs > 1; i++) {
        int64_t si = a->s[i];
        if (i == a->n - 1) {
            if (lay_mul(a->d[i], rd, &v)) goto overflow;
            if (flat_push(out, rs, v, e)) return TSL_ERR_SHAPE;
            rs = 1;
            break;
        }
        if (rd >= si) {
            if (rd % si) {
                layout_errf(e,
                            "stride divisibility: stride %lld does not skip whole modes of "
                            "extent %lld",
                            (long long)rd, (long long)si);
                return TSL_ERR_SHAPE;
            }
            rd /= si;
            continue;
        }
        int64_t ni = si / rd + (si % rd != 0); /* elements of B that fit in this mode */
        if (lay_mul(a->d[i], rd, &v)) goto overflow;
        if (rs <= ni) {
            if (flat_push(out, rs, v, e)) return TSL_ERR_SHAPE;
            rs = 1;
            break;
        }
        if (si % rd) {
            layout_errf(e, "stride divisibility: stride %lld does not divide extent %lld",
                        (long long)rd, (long long)si);
            return TSL_ERR_SHAPE;
        }
        if (rs % ni) {
            layout_errf(e, "shape divisibility: extent %lld is not a multiple of %lld",
                        (long long)rs, (long long)ni);
            return TSL_ERR_SHAPE;
        }
        if (flat_push(out, ni, v, e)) return TSL_ERR_SHAPE;
        rs /= ni;
        rd = 1;
    }
    if (a->n == 0 && rs > 1) flat_push(out, rs, 0, e); /* A is 1:0, constant */
    flat_coalesce(out);
    return TSL_OK;
overflow:
    layout_errf(e, "composition overflows 64-bit offsets");
    return TSL_ERR_SHAPE;
}

/* Subtree of B at p with each leaf replaced by A o leaf. */
static tsl_status compose_node(const lay_flat *a, const layout *b, int p, layout *out,
                               layout_err *e)
{
    const layout_node *nd = &b->node[p];
    if (!nd->nkids) {
        lay_flat f;
        tsl_status st = compose_leaf(a, nd->shape, nd->stride, &f, e);
        if (st) return st;
        /* keep the leaf's extent visible as one mode even if it splits */
        return flat_to_layout(&f, out, e);
    }
    if (nd->nkids > LAYOUT_MAX_RANK) {
        layout_errf(e, "tuple with more than %d modes", LAYOUT_MAX_RANK);
        return TSL_ERR_SHAPE;
    }
    layout modes[LAYOUT_MAX_RANK];
    int c = p + 1;
    for (int k = 0; k < nd->nkids; k++) {
        tsl_status st = compose_node(a, b, c, &modes[k], e);
        if (st) return st;
        c += b->node[c].nnodes;
    }
    return layout_tuple(out, modes, nd->nkids, e);
}

/* Composing leaf by leaf is exact for each mode of B alone; for the sum
 * of several modes it is exact only when their offsets do not carry into
 * each other's modes of A (CuTe assumes this). Proved by digit bounds
 * where it can be (compose_no_carry, cheap), else checked by enumeration
 * for B of up to 2^20 elements, so a wrong layout is an error, never a
 * silently different function. A is taken as its coalesced form, which
 * also fixes how A extends beyond its size (through its last mode). */
/* 1 when the modes of B provably never carry in A's coordinates: for every
 * mode of A but the last, the largest digit each leaf of B reaches there,
 * summed over B's leaves, stays below A's extent. Digits then add without
 * carries, so A(sum of B's leaf offsets) is the sum of A of each, which is
 * what the leaf-wise composition computes. Costs the sum of B's leaf
 * extents (not their product); 0 means "not proven" (enumerate). */
static int compose_no_carry(const lay_flat *fa, const layout *b)
{
    int64_t bs[LAYOUT_MAX_NODES], bd[LAYOUT_MAX_NODES], P[LAYOUT_MAX_NODES], sum[LAYOUT_MAX_NODES] = {0}, work = 0;
    int nb = layout_leaves(b, bs, bd), na = fa->n;
    P[0] = 1;
    for (int k = 0; k + 1 < na; k++)
        if (lay_mul(P[k], fa->s[k], &P[k + 1])) na = k + 1; /* digits past 2^63: none */
    for (int j = 0; j < nb; j++) {
        if (bd[j] < 0 || (work += bs[j]) > ((int64_t)1 << 22)) return 0;
        int64_t mx[LAYOUT_MAX_NODES] = {0};
        for (int64_t t = 0; t < bs[j]; t++) {
            int64_t x;
            if (lay_mul(bd[j], t, &x)) return 0;
            for (int k = 0; k + 1 < na; k++) {
                int64_t dig = x / P[k] % fa->s[k];
                if (dig > mx[k]) mx[k] = dig;
            }
        }
        for (int k = 0; k + 1 < na; k++)
            if ((sum[k] += mx[k]) > fa->s[k] - 1) return 0;
    }
    return 1;
}

static tsl_status compose_verify(const lay_flat *fa, const layout *b, const layout *r,
                                 layout_err *e)
{
    int64_t n = layout_size(b);
    if (n > ((int64_t)1 << 20) || layout_leaves(b, NULL, NULL) < 2 || compose_no_carry(fa, b)) return TSL_OK;
    layout ca;
    tsl_status st = flat_to_layout(fa, &ca, e);
    if (st) return st;
    for (int64_t i = 0; i < n; i++) {
        int64_t want = layout_eval(&ca, layout_eval(b, i));
        if (layout_eval(r, i) != want) {
            layout_errf(e,
                        "composition is not a layout: the modes of the right side carry into "
                        "each other in the left side's coordinates (at index %lld)",
                        (long long)i);
            return TSL_ERR_SHAPE;
        }
    }
    return TSL_OK;
}

tsl_status layout_compose(layout *out, const layout *a, const layout *b, layout_err *e)
{
    if (b->sw.b) {
        layout_errf(e, "the right side of a composition cannot be swizzled");
        return TSL_ERR_SHAPE;
    }
    lay_flat fa;
    flat_of(a, &fa);
    flat_coalesce(&fa);
    layout r;
    tsl_status st = compose_node(&fa, b, 0, &r, e);
    if (st) return st;
    if (!lay_span_ok(&r)) {
        layout_errf(e, "composition overflows 64-bit offsets");
        return TSL_ERR_SHAPE;
    }
    if ((st = compose_verify(&fa, b, &r, e))) return st;
    r.sw = a->sw;
    *out = r;
    return TSL_OK;
}

tsl_status layout_compose_by_mode(layout *out, const layout *a, const layout *tiler,
                                  layout_err *e)
{
    int ra = layout_rank(a), rt = layout_rank(tiler);
    if (rt > ra) {
        layout_errf(e, "tiler has %d modes but the layout only %d", rt, ra);
        return TSL_ERR_SHAPE;
    }
    if (ra > LAYOUT_MAX_RANK) {
        layout_errf(e, "layout with more than %d modes", LAYOUT_MAX_RANK);
        return TSL_ERR_SHAPE;
    }
    layout modes[LAYOUT_MAX_RANK];
    for (int i = 0; i < ra; i++) {
        modes[i] = layout_mode(a, i);
        if (i < rt) {
            layout ti = layout_mode(tiler, i);
            tsl_status st = layout_compose(&modes[i], &modes[i], &ti, e);
            if (st) return st;
        }
    }
    layout r;
    tsl_status st;
    if (layout_is_leaf(a))
        r = modes[0], st = TSL_OK;
    else
        st = layout_tuple(&r, modes, ra, e);
    if (st) return st;
    r.sw = a->sw;
    *out = r;
    return TSL_OK;
}

/* ---- complement ------------------------------------------------------ */
tsl_status layout_complement(layout *out, const layout *a, int64_t cotarget, layout_err *e)
{
    if (a->sw.b) {
        layout_errf(e, "complement of a swizzled layout is not defined");
        return TSL_ERR_SHAPE;
    }
    if (cotarget < 1) {
        layout_errf(e, "complement: cotarget must be positive (got %lld)", (long long)cotarget);
        return TSL_ERR_SHAPE;
    }
    lay_flat f;
    flat_of(a, &f);
    /* filter: size-1 and stride-0 modes do not occupy offsets */
    int k = 0;
    for (int i = 0; i < f.n; i++) {
        if (f.s[i] == 1 || f.d[i] == 0) continue;
        if (f.d[i] < 0) {
            layout_errf(e, "complement needs non-negative strides (got %lld)", (long long)f.d[i]);
            return TSL_ERR_SHAPE;
        }
        f.s[k] = f.s[i], f.d[k] = f.d[i], k++;
    }
    f.n = k;
    /* sort by stride, then shape (insertion sort: few modes) */
    for (int i = 1; i < f.n; i++)
        for (int j = i; j > 0 && (f.d[j] < f.d[j - 1] || (f.d[j] == f.d[j - 1] && f.s[j] < f.s[j - 1]));
             j--) {
            int64_t t = f.s[j];
            f.s[j] = f.s[j - 1], f.s[j - 1] = t;
            t = f.d[j];
            f.d[j] = f.d[j - 1], f.d[j - 1] = t;
        }
    lay_flat r = {0};
    int64_t cur = 1; /* offsets below cur are reached by the modes so far */
    for (int i = 0; i < f.n; i++) {
        if (f.d[i] % cur) {
            layout_errf(e,
                        "complement: stride %lld is not a multiple of %lld (the layout is not "
                        "injective or its strides do not nest)",
                        (long long)f.d[i], (long long)cur);
            return TSL_ERR_SHAPE;
        }
        if (flat_push(&r, f.d[i] / cur, cur, e)) return TSL_ERR_SHAPE;
        if (lay_mul(f.s[i], f.d[i], &cur)) {
            layout_errf(e, "complement overflows 64 bits");
            return TSL_ERR_SHAPE;
        }
    }
    if (flat_push(&r, cotarget / cur + (cotarget % cur != 0), cur, e)) return TSL_ERR_SHAPE;
    flat_coalesce(&r);
    return flat_to_layout(&r, out, e);
}

/* ---- divides ----------------------------------------------------------- */
/* (A o B, A o B*) for one 1-D tiler B over A's whole domain. */
static tsl_status divide_one(layout *out, const layout *a, const layout *b, layout_err *e)
{
    int64_t n = layout_size(a);
    layout bc, both;
    tsl_status st = layout_complement(&bc, b, n, e);
    if (st) return st;
    int64_t tot;
    if (lay_mul(layout_size(b), layout_size(&bc), &tot) || tot != n) {
        layout_errf(e,
                    "tile of size %lld (cosize %lld) does not divide a layout of size %lld",
                    (long long)layout_size(b), (long long)layout_cosize(b), (long long)n);
        return TSL_ERR_SHAPE;
    }
    if ((st = pair(&both, b, &bc, e))) return st;
    return layout_compose(out, a, &both, e);
}

/* Per-mode divide: out_tiles[i] / out_rests[i] for i < rank(tiler), and the
 * untouched modes of A after them in rests. Returns the count of rests. */
static tsl_status divide_modes(const layout *a, const layout *tiler, layout *tiles, int *ntiles,
                               layout *rests, int *nrests, layout_err *e)
{
    int ra = layout_rank(a), rt = layout_rank(tiler);
    if (rt > ra) {
        layout_errf(e, "tiler has %d modes but the layout only %d", rt, ra);
        return TSL_ERR_SHAPE;
    }
    for (int i = 0; i < ra; i++) {
        layout ai = layout_mode(a, i);
        if (i >= rt) {
            rests[i] = ai;
            continue;
        }
        layout ti = layout_mode(tiler, i), d;
        tsl_status st = divide_one(&d, &ai, &ti, e);
        if (st) return st;
        tiles[i] = layout_mode(&d, 0);
        rests[i] = layout_mode(&d, 1);
    }
    *ntiles = rt;
    *nrests = ra;
    return TSL_OK;
}

static tsl_status check_rank(const layout *a, layout_err *e)
{
    if (layout_rank(a) > LAYOUT_MAX_RANK) {
        layout_errf(e, "layout with more than %d modes", LAYOUT_MAX_RANK);
        return TSL_ERR_SHAPE;
    }
    return TSL_OK;
}

tsl_status layout_divide_logical(layout *out, const layout *a, const layout *tiler,
                                 int by_mode, layout_err *e)
{
    tsl_status st;
    if (!by_mode) {
        layout r;
        layout au = unswizzled(a);
        if ((st = divide_one(&r, &au, tiler, e))) return st;
        r.sw = a->sw;
        *out = r;
        return TSL_OK;
    }
    if ((st = check_rank(a, e))) return st;
    layout tiles[LAYOUT_MAX_RANK], rests[LAYOUT_MAX_RANK], modes[LAYOUT_MAX_RANK];
    int nt, nr;
    if ((st = divide_modes(a, tiler, tiles, &nt, rests, &nr, e))) return st;
    for (int i = 0; i < nr; i++) {
        if (i < nt) {
            if ((st = pair(&modes[i], &tiles[i], &rests[i], e))) return st;
        } else {
            modes[i] = rests[i];
        }
    }
    layout r;
    if (layout_is_leaf(a))
        r = modes[0];
    else if ((st = layout_tuple(&r, modes, nr, e)))
        return st;
    r.sw = a->sw;
    *out = r;
    return TSL_OK;
}

/* zipped: ((tiles...), (rests...)); tiled: ((tiles...), rests...). */
static tsl_status divide_gathered(layout *out, const layout *a, const layout *tiler, int by_mode,
                                  int tiled, layout_err *e)
{
    tsl_status st;
    layout tiles[LAYOUT_MAX_RANK], rests[LAYOUT_MAX_RANK];
    int nt, nr;
    if (!by_mode) {
        layout d, au = unswizzled(a);
        if ((st = divide_one(&d, &au, tiler, e))) return st;
        tiles[0] = layout_mode(&d, 0);
        nt = 1;
        layout rest = layout_mode(&d, 1);
        if (!tiled || layout_is_leaf(&rest)) {
            rests[0] = rest;
            nr = 1;
        } else {
            nr = layout_rank(&rest);
            if (nr > LAYOUT_MAX_RANK - 1) {
                layout_errf(e, "layout with more than %d modes", LAYOUT_MAX_RANK);
                return TSL_ERR_SHAPE;
            }
            for (int i = 0; i < nr; i++) rests[i] = layout_mode(&rest, i);
        }
    } else {
        if ((st = check_rank(a, e))) return st;
        if ((st = divide_modes(a, tiler, tiles, &nt, rests, &nr, e))) return st;
    }
    layout t0, r;
    if (!by_mode)
        t0 = tiles[0];
    else if ((st = layout_tuple(&t0, tiles, nt, e)))
        return st;
    if (!tiled) {
        layout r0;
        if (!by_mode)
            r0 = rests[0];
        else if ((st = layout_tuple(&r0, rests, nr, e)))
            return st;
        if ((st = pair(&r, &t0, &r0, e))) return st;
    } else {
        if (nr + 1 > LAYOUT_MAX_RANK) {
            layout_errf(e, "layout with more than %d modes", LAYOUT_MAX_RANK);
            return TSL_ERR_SHAPE;
        }
        layout modes[LAYOUT_MAX_RANK];
        modes[0] = t0;
        for (int i = 0; i < nr; i++) modes[i + 1] = rests[i];
        if ((st = layout_tuple(&r, modes, nr + 1, e))) return st;
    }
    r.sw = a->sw;
    *out = r;
    return TSL_OK;
}

tsl_status layout_divide_zipped(layout *out, const layout *a, const layout *tiler, int by_mode,
                                layout_err *e)
{
    return divide_gathered(out, a, tiler, by_mode, 0, e);
}

tsl_status layout_divide_tiled(layout *out, const layout *a, const layout *tiler, int by_mode,
                               layout_err *e)
{
    return divide_gathered(out, a, tiler, by_mode, 1, e);
}

/* ---- products ---------------------------------------------------------- */
/* (A, complement(A, size(A)*cosize(B)) o B) */
static tsl_status product_one(layout *out, const layout *a, const layout *b, layout_err *e)
{
    if (a->sw.b || b->sw.b) {
        layout_errf(e, "products of swizzled layouts are not defined; swizzle the result");
        return TSL_ERR_SHAPE;
    }
    int64_t sh[LAYOUT_MAX_NODES], st_[LAYOUT_MAX_NODES];
    int n = layout_leaves(b, sh, st_);
    for (int i = 0; i < n; i++)
        if (st_[i] < 0) {
            layout_errf(e, "product: the repeating layout needs non-negative strides");
            return TSL_ERR_SHAPE;
        }
    int64_t m;
    if (lay_mul(layout_size(a), layout_cosize(b), &m)) {
        layout_errf(e, "product overflows 64 bits");
        return TSL_ERR_SHAPE;
    }
    layout ac, rep;
    tsl_status st = layout_complement(&ac, a, m, e);
    if (st) return st;
    if ((st = layout_compose(&rep, &ac, b, e))) return st;
    return pair(out, a, &rep, e);
}

tsl_status layout_product_logical(layout *out, const layout *a, const layout *b, int by_mode,
                                  layout_err *e)
{
    if (!by_mode) return product_one(out, a, b, e);
    tsl_status st;
    if ((st = check_rank(a, e))) return st;
    int ra = layout_rank(a), rb = layout_rank(b);
    if (rb > ra) {
        layout_errf(e, "tiler has %d modes but the layout only %d", rb, ra);
        return TSL_ERR_SHAPE;
    }
    layout modes[LAYOUT_MAX_RANK];
    for (int i = 0; i < ra; i++) {
        modes[i] = layout_mode(a, i);
        if (i < rb) {
            layout bi = layout_mode(b, i);
            if ((st = product_one(&modes[i], &modes[i], &bi, e))) return st;
        }
    }
    if (layout_is_leaf(a)) {
        *out = modes[0];
        return TSL_OK;
    }
    return layout_tuple(out, modes, ra, e);
}

/* Pad to rank r with 1:0 modes (a leaf becomes a tuple). */
static tsl_status pad_rank(layout *out, const layout *a, int r, layout_err *e)
{
    layout modes[LAYOUT_MAX_RANK];
    int ra = layout_rank(a);
    for (int i = 0; i < r; i++) modes[i] = i < ra ? layout_mode(a, i) : layout_leaf(1, 0);
    if (r == 1) {
        *out = modes[0];
        return TSL_OK;
    }
    return layout_tuple(out, modes, r, e);
}

/* blocked (raked = 0): mode i = (A_i, C_i); raked: (C_i, A_i), where
 * (A, C) = logical_product(A, B) over rank-padded operands (CuTe's zip,
 * not coalesced, so the block and the repeat stay visible). */
static tsl_status product_zipped(layout *out, const layout *a, const layout *b, int raked,
                                 layout_err *e)
{
    tsl_status st;
    int ra = layout_rank(a), rb = layout_rank(b), r = ra > rb ? ra : rb;
    if (r > LAYOUT_MAX_RANK) {
        layout_errf(e, "layout with more than %d modes", LAYOUT_MAX_RANK);
        return TSL_ERR_SHAPE;
    }
    layout ap, bp, p;
    if ((st = pad_rank(&ap, a, r, e)) || (st = pad_rank(&bp, b, r, e))) return st;
    if ((st = product_one(&p, &ap, &bp, e))) return st;
    layout pa = layout_mode(&p, 0), pc = layout_mode(&p, 1);
    layout modes[LAYOUT_MAX_RANK];
    for (int i = 0; i < r; i++) {
        layout ai = layout_mode(&pa, i), ci = layout_mode(&pc, i);
        if ((st = raked ? pair(&modes[i], &ci, &ai, e) : pair(&modes[i], &ai, &ci, e)))
            return st;
    }
    if (r == 1) {
        *out = modes[0];
        return TSL_OK;
    }
    return layout_tuple(out, modes, r, e);
}

tsl_status layout_product_blocked(layout *out, const layout *a, const layout *b, layout_err *e)
{
    return product_zipped(out, a, b, 0, e);
}

tsl_status layout_product_raked(layout *out, const layout *a, const layout *b, layout_err *e)
{
    return product_zipped(out, a, b, 1, e);
}

/* ---- right inverse ------------------------------------------------------- */
/* Follow the modes in stride order while each stride equals the extent
 * reached so far (1, s0, s0*s1, ...): mode k of R has A's extent s and the
 * stride of that mode's position in A's domain (product of the extents
 * before it). */
tsl_status layout_inverse_right(layout *out, const layout *a, layout_err *e)
{
    if (a->sw.b) {
        layout_errf(e, "right_inverse of a swizzled layout is not supported");
        return TSL_ERR_SHAPE;
    }
    lay_flat f;
    flat_of(a, &f);
    flat_coalesce(&f);
    int64_t pos[LAYOUT_MAX_NODES]; /* domain stride of each mode */
    int64_t acc = 1;
    for (int i = 0; i < f.n; i++) {
        pos[i] = acc;
        if (lay_mul(acc, f.s[i], &acc)) acc = INT64_MAX;
    }
    lay_flat r = {0};
    int used[LAYOUT_MAX_NODES] = {0};
    int64_t cur = 1;
    for (;;) {
        int k = -1;
        for (int i = 0; i < f.n; i++)
            if (!used[i] && f.d[i] == cur) k = i;
        if (k < 0) break;
        used[k] = 1;
        if (flat_push(&r, f.s[k], pos[k], e)) return TSL_ERR_SHAPE;
        if (lay_mul(cur, f.s[k], &cur)) break;
    }
    flat_coalesce(&r);
    return flat_to_layout(&r, out, e);
}
