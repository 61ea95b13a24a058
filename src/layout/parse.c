/* parse.c — the layout expression language: parse and evaluate in one
 * pass, and print values back in the same syntax (print -> parse -> print
 * is byte-identical). The grammar is in docs/layout.md; each rule is also
 * above its function. Errors carry the byte offset of the problem. */
#include <ctype.h>
#include <string.h>

#include "layout/layout.h"
#include "layout/layout_int.h"

typedef struct lparser {
    const char *s;
    size_t len, pos;
    layout_err *e;
} lparser;

static tsl_status perr(lparser *P, size_t at, tsl_status st, const char *fmt, const char *arg)
{
    if (P->e) {
        layout_errf(P->e, fmt, arg);
        P->e->offset = at;
    }
    return st;
}

/* Wrap an algebra error with the offset of the call that failed. */
static tsl_status aerr(lparser *P, size_t at, tsl_status st)
{
    if (P->e) P->e->offset = at;
    return st;
}

static void skip_ws(lparser *P)
{
    while (P->pos < P->len && isspace((unsigned char)P->s[P->pos])) P->pos++;
}

static int peek(lparser *P)
{
    skip_ws(P);
    return P->pos < P->len ? (unsigned char)P->s[P->pos] : -1;
}

static tsl_status expect(lparser *P, char c)
{
    if (peek(P) != c) {
        char want[2] = {c, 0};
        return perr(P, P->pos, TSL_ERR_SYNTAX,
                    P->pos < P->len ? "expected '%s'" : "expected '%s' at end of input", want);
    }
    P->pos++;
    return TSL_OK;
}

/* int := ['-'] digit {digit} */
static tsl_status parse_int(lparser *P, int64_t *out)
{
    skip_ws(P);
    size_t at = P->pos;
    int neg = 0;
    if (P->pos < P->len && P->s[P->pos] == '-') neg = 1, P->pos++;
    if (P->pos >= P->len || !isdigit((unsigned char)P->s[P->pos]))
        return perr(P, at, TSL_ERR_SYNTAX, "expected an integer%s", "");
    int64_t v = 0;
    while (P->pos < P->len && isdigit((unsigned char)P->s[P->pos])) {
        if (lay_mul(v, 10, &v) || lay_add(v, P->s[P->pos] - '0', &v))
            return perr(P, at, TSL_ERR_SYNTAX, "integer does not fit in 64 bits%s", "");
        P->pos++;
    }
    *out = neg ? -v : v;
    return TSL_OK;
}

/* itup := int | '(' itup {',' itup} ')'
 * Appends the tree in preorder to l (shape or stride per `strides`). */
static tsl_status parse_itup(lparser *P, layout *l, int strides, int depth)
{
    if (depth > 32) return perr(P, P->pos, TSL_ERR_SYNTAX, "tuple nested too deeply%s", "");
    if (l->n >= LAYOUT_MAX_NODES)
        return perr(P, P->pos, TSL_ERR_SYNTAX, "layout too large (at most 64 nodes)%s", "");
    int me = l->n++;
    layout_node *nd = &l->node[me];
    memset(nd, 0, sizeof *nd);
    if (peek(P) != '(') {
        size_t at = P->pos;
        int64_t v;
        tsl_status st = parse_int(P, &v);
        if (st) return st;
        if (!strides && v < 1) return perr(P, at, TSL_ERR_SYNTAX, "extents must be positive%s", "");
        l->node[me] = (layout_node){strides ? 0 : v, strides ? v : 0, 0, 1};
        return TSL_OK;
    }
    P->pos++;
    int kids = 0;
    for (;;) {
        tsl_status st = parse_itup(P, l, strides, depth + 1);
        if (st) return st;
        kids++;
        if (peek(P) == ',') {
            P->pos++;
            continue;
        }
        if ((st = expect(P, ')'))) return st;
        break;
    }
    l->node[me].nkids = kids;
    l->node[me].nnodes = l->n - me;
    return TSL_OK;
}

/* Tuple nodes' shapes: products of the leaves below (bottom-up). */
static int fill_sizes(layout *l, int p, int64_t *size)
{
    layout_node *nd = &l->node[p];
    if (!nd->nkids) {
        *size = nd->shape;
        return 0;
    }
    int64_t acc = 1, s;
    int c = p + 1;
    for (int k = 0; k < nd->nkids; k++) {
        if (fill_sizes(l, c, &s) || lay_mul(acc, s, &acc)) return 1;
        c += l->node[c].nnodes;
    }
    nd->shape = acc;
    *size = acc;
    return 0;
}

/* literal := itup [':' itup]     (no strides: compact column-major) */
static tsl_status parse_literal(lparser *P, layout_value *v)
{
    size_t at = P->pos;
    layout sh;
    memset(&sh, 0, sizeof sh);
    tsl_status st = parse_itup(P, &sh, 0, 0);
    if (st) return st;
    int64_t size;
    if (fill_sizes(&sh, 0, &size))
        return perr(P, at, TSL_ERR_SYNTAX, "layout size overflows 64 bits%s", "");
    v->kind = LAYOUT_VALUE_DATA;
    if (peek(P) != ':') {
        v->data = layout_compact(&sh);
        return TSL_OK;
    }
    P->pos++;
    skip_ws(P);
    size_t sat = P->pos;
    layout sd;
    memset(&sd, 0, sizeof sd);
    if ((st = parse_itup(P, &sd, 1, 0))) return st;
    if (sd.n != sh.n)
        return perr(P, sat, TSL_ERR_SYNTAX, "stride is not congruent with the shape%s", "");
    for (int i = 0; i < sh.n; i++) {
        if (sd.node[i].nkids != sh.node[i].nkids)
            return perr(P, sat, TSL_ERR_SYNTAX, "stride is not congruent with the shape%s", "");
        sh.node[i].stride = sd.node[i].stride;
    }
    if (!lay_span_ok(&sh)) /* every offset (and the cosize) fits in 64 bits */
        return perr(P, sat, TSL_ERR_SYNTAX, "layout offsets overflow 64 bits%s", "");
    v->data = sh;
    return TSL_OK;
}

static tsl_status parse_expr(lparser *P, layout_value *v, int depth);

enum fn_kind {
    FN_COMPOSE, FN_COMPLEMENT, FN_DIVIDE, FN_ZIPPED, FN_TILED, FN_PRODUCT, FN_BLOCKED,
    FN_RAKED, FN_COALESCE, FN_RINV, FN_SWIZZLE, FN_LOCAL, FN_SPATIAL, FN_CLOCAL, FN_CSPATIAL,
    FN_REPLICATE, FN_REDUCE,
};

static const struct {
    const char *name;
    enum fn_kind kind;
} fn_table[] = {
    {"compose", FN_COMPOSE},
    {"composition", FN_COMPOSE},
    {"complement", FN_COMPLEMENT},
    {"divide", FN_DIVIDE},
    {"logical_divide", FN_DIVIDE},
    {"zipped_divide", FN_ZIPPED},
    {"tiled_divide", FN_TILED},
    {"product", FN_PRODUCT},
    {"logical_product", FN_PRODUCT},
    {"blocked_product", FN_BLOCKED},
    {"raked_product", FN_RAKED},
    {"coalesce", FN_COALESCE},
    {"right_inverse", FN_RINV},
    {"swizzle", FN_SWIZZLE},
    {"local", FN_LOCAL},
    {"spatial", FN_SPATIAL},
    {"column_local", FN_CLOCAL},
    {"column_spatial", FN_CSPATIAL},
    {"repeat", FN_LOCAL}, /* Tilus' older names for local */
    {"column_repeat", FN_CLOCAL},
    {"replicate", FN_REPLICATE},
    {"reduce", FN_REDUCE},
};

/* A data argument: a layout, or a tiler where `tiler_ok`. */
static tsl_status parse_data_arg(lparser *P, layout_value *v, int tiler_ok, int depth)
{
    skip_ws(P);
    size_t at = P->pos;
    tsl_status st = parse_expr(P, v, depth + 1);
    if (st) return st;
    if (v->kind == LAYOUT_VALUE_DIST)
        return perr(P, at, TSL_ERR_SYNTAX, "expected a data layout, not a distributed one%s", "");
    if (v->kind == LAYOUT_VALUE_TILER && !tiler_ok)
        return perr(P, at, TSL_ERR_SYNTAX, "expected a layout, not a tiler [..]%s", "");
    return TSL_OK;
}

/* dist atom args := int {',' int} ')' */
static tsl_status parse_dist_atom(lparser *P, enum fn_kind k, layout_value *v, size_t at)
{
    int64_t dims[DIST_MAX_RANK];
    int n = 0;
    tsl_status st;
    for (;;) {
        if (n >= DIST_MAX_RANK)
            return perr(P, P->pos, TSL_ERR_SYNTAX, "at most 8 extents%s", "");
        size_t iat = P->pos;
        if ((st = parse_int(P, &dims[n]))) return st;
        if (dims[n] < 1) return perr(P, iat, TSL_ERR_SYNTAX, "extents must be positive%s", "");
        n++;
        if (peek(P) != ',') break;
        P->pos++;
    }
    if ((st = expect(P, ')'))) return st;
    if (k == FN_REPLICATE && n != 1)
        return perr(P, at, TSL_ERR_SYNTAX, "replicate takes one extent%s", "");
    dist_atom_kind kind = k == FN_REPLICATE                  ? DIST_REPLICATE
                          : (k == FN_LOCAL || k == FN_CLOCAL) ? DIST_LOCAL
                                                              : DIST_SPATIAL;
    v->kind = LAYOUT_VALUE_DIST;
    st = dist_layout_atom(&v->dist, kind, k == FN_CLOCAL || k == FN_CSPATIAL, dims,
                          kind == DIST_REPLICATE ? 0 : n, P->e);
    return st ? aerr(P, at, st) : TSL_OK;
}

/* reduce args := expr ',' int ')'      (a distributed layout, a dim) */
static tsl_status parse_reduce(lparser *P, layout_value *v, size_t at, int depth)
{
    skip_ws(P);
    size_t lat = P->pos;
    tsl_status st = parse_expr(P, v, depth + 1);
    if (st) return st;
    if (v->kind != LAYOUT_VALUE_DIST)
        return perr(P, lat, TSL_ERR_SYNTAX, "reduce takes a distributed layout%s", "");
    int64_t dim;
    if ((st = expect(P, ',')) || (st = parse_int(P, &dim)) || (st = expect(P, ')'))) return st;
    if (dim < 0 || dim >= DIST_MAX_RANK) dim = -1;
    st = dist_layout_reduce(&v->dist, &v->dist, (int)dim, P->e);
    return st ? aerr(P, at, st) : TSL_OK;
}

/* call := NAME '(' args ')' */
static tsl_status parse_call(lparser *P, layout_value *v, int depth)
{
    size_t at = P->pos;
    while (P->pos < P->len && (isalnum((unsigned char)P->s[P->pos]) || P->s[P->pos] == '_'))
        P->pos++;
    size_t nlen = P->pos - at;
    int found = -1;
    for (size_t i = 0; i < TSL_COUNTOF(fn_table); i++)
        if (strlen(fn_table[i].name) == nlen && !memcmp(fn_table[i].name, P->s + at, nlen))
            found = (int)i;
    if (found < 0) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(nlen < 40 ? nlen : 40), P->s + at);
        return perr(P, at, TSL_ERR_SYNTAX, "unknown layout function '%s'", name);
    }
    enum fn_kind k = fn_table[found].kind;
    tsl_status st;
    if ((st = expect(P, '('))) return st;
    if (k == FN_REDUCE) return parse_reduce(P, v, at, depth);
    if (k >= FN_LOCAL) return parse_dist_atom(P, k, v, at);

    layout_value a, b;
    v->kind = LAYOUT_VALUE_DATA;
    if (k == FN_SWIZZLE) {
        int64_t bms[3];
        for (int i = 0; i < 3; i++) {
            if ((st = parse_int(P, &bms[i])) || (st = expect(P, ','))) return st;
            if (bms[i] < -64 || bms[i] > 64)
                return perr(P, at, TSL_ERR_SYNTAX, "swizzle parameter out of range%s", "");
        }
        if ((st = parse_data_arg(P, &a, 0, depth)) || (st = expect(P, ')'))) return st;
        layout_swizzle sw = {(int)bms[0], (int)bms[1], (int)bms[2]};
        st = layout_swizzled(&v->data, sw, &a.data, P->e);
        return st ? aerr(P, at, st) : TSL_OK;
    }
    int binary = k != FN_COALESCE && k != FN_RINV && k != FN_COMPLEMENT;
    if ((st = parse_data_arg(P, &a, k == FN_BLOCKED || k == FN_RAKED, depth))) return st;
    if (k == FN_COMPLEMENT) {
        int64_t m = layout_cosize(&a.data);
        if (peek(P) == ',') {
            P->pos++;
            if ((st = parse_int(P, &m))) return st;
        }
        if ((st = expect(P, ')'))) return st;
        st = layout_complement(&v->data, &a.data, m, P->e);
        return st ? aerr(P, at, st) : TSL_OK;
    }
    if (binary) {
        if ((st = expect(P, ',')) || (st = parse_data_arg(P, &b, 1, depth))) return st;
    }
    if ((st = expect(P, ')'))) return st;
    int by_mode = binary && b.kind == LAYOUT_VALUE_TILER;
    switch (k) {
    case FN_COMPOSE:
        st = by_mode ? layout_compose_by_mode(&v->data, &a.data, &b.data, P->e)
                     : layout_compose(&v->data, &a.data, &b.data, P->e);
        break;
    case FN_DIVIDE: st = layout_divide_logical(&v->data, &a.data, &b.data, by_mode, P->e); break;
    case FN_ZIPPED: st = layout_divide_zipped(&v->data, &a.data, &b.data, by_mode, P->e); break;
    case FN_TILED: st = layout_divide_tiled(&v->data, &a.data, &b.data, by_mode, P->e); break;
    case FN_PRODUCT: st = layout_product_logical(&v->data, &a.data, &b.data, by_mode, P->e); break;
    case FN_BLOCKED: st = layout_product_blocked(&v->data, &a.data, &b.data, P->e); break;
    case FN_RAKED: st = layout_product_raked(&v->data, &a.data, &b.data, P->e); break;
    case FN_COALESCE: v->data = layout_coalesce(&a.data); break;
    case FN_RINV: st = layout_inverse_right(&v->data, &a.data, P->e); break;
    default: TSL_ASSERT(0);
    }
    return st ? aerr(P, at, st) : TSL_OK;
}

/* tiler := '[' expr {',' expr} ']'   (each a data layout: one per mode) */
static tsl_status parse_tiler(lparser *P, layout_value *v, int depth)
{
    size_t at = P->pos;
    P->pos++;
    layout modes[LAYOUT_MAX_RANK];
    int n = 0;
    tsl_status st;
    for (;;) {
        if (n >= LAYOUT_MAX_RANK)
            return perr(P, P->pos, TSL_ERR_SYNTAX, "a tiler has at most 16 modes%s", "");
        layout_value m;
        if ((st = parse_data_arg(P, &m, 0, depth))) return st;
        modes[n++] = m.data;
        if (peek(P) != ',') break;
        P->pos++;
    }
    if ((st = expect(P, ']'))) return st;
    v->kind = LAYOUT_VALUE_TILER;
    st = layout_tuple(&v->data, modes, n, P->e);
    return st ? aerr(P, at, st) : TSL_OK;
}

/* primary := literal | tiler | call | '(' expr ')'
 * A '(' followed by a name groups an expression (`h/(f.g)`); followed by a
 * digit or '(' it starts a tuple literal. */
static tsl_status parse_primary(lparser *P, layout_value *v, int depth)
{
    int c = peek(P);
    if (c == '[') return parse_tiler(P, v, depth);
    if (c == '(') {
        size_t q = P->pos + 1;
        while (q < P->len && isspace((unsigned char)P->s[q])) q++;
        if (q < P->len && (isalpha((unsigned char)P->s[q]) || P->s[q] == '_')) {
            P->pos++;
            tsl_status st = parse_expr(P, v, depth + 1);
            return st ? st : expect(P, ')');
        }
    }
    if (c == '(' || c == '-' || isdigit(c)) return parse_literal(P, v);
    if (isalpha(c) || c == '_') return parse_call(P, v, depth);
    if (c < 0) return perr(P, P->pos, TSL_ERR_SYNTAX, "expected a layout at end of input%s", "");
    char tok[2] = {(char)c, 0};
    return perr(P, P->pos, TSL_ERR_SYNTAX, "unexpected '%s', expected a layout", tok);
}

/* expr := primary {('.' | '/') primary}   ('.' and '/' join distributed
 * layouts, left to right: a.b/c is (a.b)/c) */
static tsl_status parse_expr(lparser *P, layout_value *v, int depth)
{
    if (depth > 24) return perr(P, P->pos, TSL_ERR_SYNTAX, "expression nested too deeply%s", "");
    skip_ws(P);
    size_t at = P->pos;
    tsl_status st = parse_primary(P, v, depth);
    if (st) return st;
    for (;;) {
        int c = peek(P);
        if (c != '.' && c != '/') return TSL_OK;
        size_t opat = P->pos;
        if (v->kind != LAYOUT_VALUE_DIST)
            return perr(P, opat, TSL_ERR_SYNTAX,
                        "'%s' joins distributed layouts (local, spatial, ...), not data layouts",
                        c == '.' ? "." : "/");
        P->pos++;
        skip_ws(P);
        size_t rat = P->pos;
        layout_value r;
        if ((st = parse_primary(P, &r, depth + 1))) return st;
        if (r.kind != LAYOUT_VALUE_DIST)
            return perr(P, rat, TSL_ERR_SYNTAX, "expected a distributed layout%s", "");
        st = c == '.' ? dist_layout_compose(&v->dist, &v->dist, &r.dist, P->e)
                      : dist_layout_divide(&v->dist, &v->dist, &r.dist, P->e);
        if (st) return aerr(P, at, st);
    }
}

tsl_status layout_parse_prefix(const char *s, size_t len, size_t *consumed, layout_value *out,
                               layout_err *e)
{
    lparser P = {s, len, 0, e};
    if (e) e->msg[0] = 0, e->offset = 0;
    layout_value *v = calloc(1, sizeof *v);
    if (!v) {
        layout_errf(e, "out of memory");
        return TSL_ERR_NOMEM;
    }
    tsl_status st = parse_expr(&P, v, 0);
    if (!st) {
        skip_ws(&P);
        *out = *v;
        if (consumed) *consumed = P.pos;
    }
    free(v);
    return st;
}

tsl_status layout_parse(const char *s, size_t len, layout_value *out, layout_err *e)
{
    size_t used = 0;
    tsl_status st = layout_parse_prefix(s, len, &used, out, e);
    if (st) return st;
    if (used < len) {
        if (e) {
            layout_errf(e, "unexpected '%c' after the layout", s[used]);
            e->offset = used;
        }
        return TSL_ERR_SYNTAX;
    }
    return TSL_OK;
}

void layout_value_print(strbuf *sb, const layout_value *v)
{
    switch (v->kind) {
    case LAYOUT_VALUE_DATA: layout_print(sb, &v->data); break;
    case LAYOUT_VALUE_TILER: layout_print_tiler(sb, &v->data); break;
    case LAYOUT_VALUE_DIST: dist_layout_print(sb, &v->dist); break;
    }
}
