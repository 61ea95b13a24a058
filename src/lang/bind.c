/* bind.c — lang_bind: a checked def with concrete sizes. Evaluates every
 * symbolic range and shape, and proves what range inference left to the
 * sizes: no range is empty (unless a size is 0: then a box may be empty,
 * nothing of it runs and outputs are empty or keep their identity), a statement that updates an existing tensor
 * covers it exactly where its range was inferred, and every affine access
 * (RHS, nested, and LHS) and every quasi-affine one (k / 128: quasi.c)
 * stays inside its tensor over the statement's box.
 * Gathers and other non-affine indices are the interpreter's to check.
 */
#include <string.h>

#include "lang/lang_int.h"

typedef struct bind_ctx {
    tsl_arena *a;
    const lang_def *def;
    lang_bound *b;
    tsl_diag *d;
    const lang_stmt *st;
    int64_t *lo, *hi;
    bool any_zero; /* some size is 0: empty boxes are allowed */
} bind_ctx;

/* "M=3, N=5" for the size symbols of e */
static void bind_sizes_of(strbuf *sb, const bind_ctx *B, const lang_sexpr *e, bool *seen)
{
    if (!e) return;
    if (e->kind == LANG_SX_SYM) {
        if (!seen[e->sym] && B->b->sizes[e->sym] >= 0) {
            seen[e->sym] = true;
            sb_printf(sb, "%s%s=%lld", sb->len ? ", " : "", B->def->sizes[e->sym],
                      (long long)B->b->sizes[e->sym]);
        }
        return;
    }
    bind_sizes_of(sb, B, e->a, seen);
    bind_sizes_of(sb, B, e->b, seen);
}

/* The first size symbol of e with no value, or -1. */
static int bind_missing(const bind_ctx *B, const lang_sexpr *e)
{
    if (!e) return -1;
    if (e->kind == LANG_SX_SYM) return B->b->sizes[e->sym] < 0 ? e->sym : -1;
    int m = bind_missing(B, e->a);
    return m >= 0 ? m : bind_missing(B, e->b);
}

static int bind_eval(bind_ctx *B, const lang_sexpr *e, size_t offset, const char *what,
                     int64_t *out)
{
    if (lang_sexpr_eval(e, B->b->sizes, out) == 0) return 0;
    int m = bind_missing(B, e);
    if (m >= 0) {
        diag_error_at(B->d, B->def->src, B->def->size_offsets[m], TSL_ERR_SHAPE,
                      "size '%s' is not known: no input tensor has it; supply its value "
                      "(tessel run --size %s=N; tsl_args_set_size in C)",
                      B->def->sizes[m], B->def->sizes[m]);
    } else {
        strbuf sb = {0};
        lang_print_sexpr(&sb, B->def, e);
        diag_error_at(B->d, B->def->src, offset, TSL_ERR_SHAPE,
                      "%s %s cannot be evaluated (division by zero or 64-bit overflow)", what,
                      sb_str(&sb));
        sb_free(&sb);
    }
    return -1;
}

/* floor(x / y), ceil(x / y) for y > 0 */
static int64_t bind_floordiv(int64_t x, int64_t y) { return x / y - (x % y != 0 && x < 0); }
static int64_t bind_ceildiv(int64_t x, int64_t y) { return -bind_floordiv(-x, y); }

/* min and max of an affine index over the statement's box, narrowed by the
 * facts of its guard that concern it (guard.c): one-variable facts bound
 * that variable, a fact with the index's own variable part bounds the
 * index. *never: the facts exclude every point (the read never happens). */
static bool bind_index_span(bind_ctx *B, const lang_expr *x, const lang_facts *facts, int64_t *mn,
                            int64_t *mx, bool *never)
{
    int nv = B->st->nvars;
    int64_t *coef = arena_alloc(B->a, sizeof(int64_t) * (size_t)(nv + 1));
    int64_t *lo = arena_alloc(B->a, sizeof(int64_t) * (size_t)(nv + 1));
    int64_t *hi = arena_alloc(B->a, sizeof(int64_t) * (size_t)(nv + 1)); /* inclusive */
    const lang_sexpr *off;
    *never = false;
    if (!ranges_affine(B->a, x, nv, coef, &off)) return false;
    int64_t o;
    if (lang_sexpr_eval(off, B->b->sizes, &o) < 0) return false;
    for (int v = 0; v < nv; v++) lo[v] = B->lo[v], hi[v] = B->hi[v] - 1;
    int64_t flo = INT64_MIN, fhi = INT64_MAX; /* bounds of the index itself */
    for (int f = 0; facts && f < facts->n; f++) {
        const lang_fact *fa = &facts->f[f];
        if (!guard_concerns(fa, coef, nv)) continue;
        int64_t k;
        if (lang_sexpr_eval(fa->off, B->b->sizes, &k) < 0) continue;
        int nz = 0, u = -1;
        bool same = true;
        for (int v = 0; v < nv; v++) {
            if (fa->coef[v]) nz++, u = v;
            same = same && fa->coef[v] == coef[v];
        }
        if (nz == 1) { /* c u + k >= 0 */
            int64_t c = fa->coef[u];
            if (c > 0 && bind_ceildiv(-k, c) > lo[u]) lo[u] = bind_ceildiv(-k, c);
            if (c < 0 && bind_floordiv(k, -c) < hi[u]) hi[u] = bind_floordiv(k, -c);
        }
        /* index = part + o: part + k >= 0 gives index >= o - k; -part + k >= 0, index <= k + o */
        int64_t t;
        if (same && !__builtin_sub_overflow(o, k, &t) && t > flo) flo = t;
        if (!same && !__builtin_add_overflow(o, k, &t) && t < fhi) {
            bool opp = true;
            for (int v = 0; v < nv; v++) opp = opp && fa->coef[v] == -coef[v];
            if (opp) fhi = t;
        }
    }
    int64_t l = o, h = o;
    for (int v = 0; v < nv; v++) {
        int64_t c = coef[v], a, z;
        if (lo[v] > hi[v]) {
            *never = true;
            return true;
        }
        if (!c) continue;
        if (__builtin_mul_overflow(c, lo[v], &a) || __builtin_mul_overflow(c, hi[v], &z)) return false;
        if (__builtin_add_overflow(l, a < z ? a : z, &l) || __builtin_add_overflow(h, a < z ? z : a, &h))
            return false;
    }
    *mn = l > flo ? l : flo;
    *mx = h < fhi ? h : fhi;
    if (*mn > *mx) *never = true;
    return true;
}

typedef struct bind_walk {
    bind_ctx *B;
    int failed;
} bind_walk;

/* Prove one access in bounds (guard_walk's callback): its affine and quasi-affine indices
 * over the box, a guarded one's narrowed by its guard's facts. */
static void bind_access(void *ctx, lang_expr *e, const lang_facts *facts)
{
    bind_walk *W = ctx;
    bind_ctx *B = W->B;
    if (W->failed) return;
    const int64_t *shape = B->b->shapes[e->tensor->index];
    for (int k = 0; k < e->nargs; k++) {
        const lang_expr *x = e->args[k];
        if (!x->affine && !x->quasi) continue;
        int64_t mn, mx;
        bool never;
        strbuf sb = {0};
        lang_print_expr(&sb, B->def, B->st, x);
        bool ok = x->affine ? bind_index_span(B, x, e->guarded ? facts : NULL, &mn, &mx, &never)
                            : (never = false, quasi_span(x, B->st->nvars, B->lo, B->hi, B->b->sizes, &mn, &mx));
        if (!ok) {
            diag_error_at(B->d, B->def->src, x->offset, TSL_ERR_RANGE,
                          "index %d of '%s' (%s) overflows 64 bits", k, e->tensor->name, sb_str(&sb));
            sb_free(&sb);
            W->failed = 1;
            return;
        }
        if (!never && (mn < 0 || mx >= shape[k])) {
            diag_error_at(B->d, B->def->src, x->offset, TSL_ERR_RANGE,
                          "access out of bounds: index %d of '%s' (%s) ranges over [%lld, %lld]%s "
                          "but dimension %d of '%s' has extent %lld%s",
                          k, e->tensor->name, sb_str(&sb), (long long)mn, (long long)mx,
                          e->guarded ? " where its guard holds" : "", k, e->tensor->name,
                          (long long)shape[k],
                          e->guarded ? "" : " (a read behind a guard such as `i >= 1 && i <= N ? X(i - 1) : 0` "
                                            "is proven under it)");
            sb_free(&sb);
            W->failed = 1;
            return;
        }
        sb_free(&sb);
    }
}

/* Prove every affine and quasi-affine access in e in bounds. */
static int bind_check_access(bind_ctx *B, lang_expr *e)
{
    bind_walk W = {B, 0};
    guard_walk(B->a, e, B->st->nvars, bind_access, &W);
    return W.failed ? -1 : 0;
}

/* "4294967296 x 4294967296" */
static void bind_extents(strbuf *sb, const int64_t *ext, int n)
{
    for (int k = 0; k < n; k++) sb_printf(sb, "%s%lld", k ? " x " : "", (long long)ext[k]);
}

/* Every element of every tensor is addressed in bytes by 64-bit
 * arithmetic downstream (interpreter, generated code, allocation), so a
 * tensor whose byte size overflows is an error here, naming its extents. */
static int bind_tensor_size(bind_ctx *B, const lang_tensor *t, const int64_t *shape)
{
    int64_t n = (int64_t)tsl_dtype_size(t->dtype);
    bool over = false;
    for (int k = 0; k < t->rank; k++) over |= __builtin_mul_overflow(n, shape[k], &n);
    if (!over) return 0;
    strbuf sb = {0};
    bind_extents(&sb, shape, t->rank);
    diag_error_at(B->d, B->def->src, t->offset, TSL_ERR_SHAPE,
                  "'%s' would be %s %s: %zu-byte elements, more than 2^63 bytes in all", t->name,
                  sb_str(&sb), tsl_dtype_name(t->dtype), tsl_dtype_size(t->dtype));
    sb_free(&sb);
    return -1;
}

/* The statement's box (every point the interpreter visits, every lane a
 * kernel runs) must be countable in 64 bits. */
static int bind_box_size(bind_ctx *B, const lang_stmt *st, const lang_bound_stmt *bs)
{
    int64_t n = 1, *ext = arena_alloc(B->a, sizeof(int64_t) * (size_t)(st->nvars + 1));
    bool over = false;
    for (int v = 0; v < st->nvars; v++) {
        ext[v] = bs->hi[v] - bs->lo[v];
        over |= __builtin_mul_overflow(n, ext[v], &n);
    }
    if (!over) return 0;
    strbuf sb = {0}, vars = {0};
    bind_extents(&sb, ext, st->nvars);
    for (int v = 0; v < st->nvars; v++) sb_printf(&vars, "%s%s", v ? ", " : "", st->vars[v].name);
    diag_error_at(B->d, B->def->src, st->offset, TSL_ERR_RANGE,
                  "the statement iterates over %s points (%s): more than 2^63", sb_str(&sb), sb_str(&vars));
    sb_free(&sb);
    sb_free(&vars);
    return -1;
}

static int bind_stmt(bind_ctx *B, int s)
{
    const lang_def *def = B->def;
    const lang_stmt *st = &def->stmts[s];
    lang_bound_stmt *bs = &B->b->stmts[s];
    bs->lo = arena_alloc(B->a, sizeof(int64_t) * (size_t)(st->nvars + 1));
    bs->hi = arena_alloc(B->a, sizeof(int64_t) * (size_t)(st->nvars + 1));
    B->st = st;
    B->lo = bs->lo;
    B->hi = bs->hi;
    bool empty = false;
    for (int v = 0; v < st->nvars; v++) {
        const lang_var *var = &st->vars[v];
        if (bind_eval(B, var->range.lo, var->offset, "the lower bound", &bs->lo[v]) < 0 ||
            bind_eval(B, var->range.hi, var->offset, "the upper bound", &bs->hi[v]) < 0)
            return -1;
        if (bs->hi[v] == bs->lo[v] && B->any_zero) {
            empty = true; /* a zero-size input: nothing of this box runs */
            continue;
        }
        if (bs->hi[v] <= bs->lo[v]) {
            strbuf sb = {0}, sz = {0};
            lang_print_sexpr(&sb, def, var->range.lo);
            sb_putc(&sb, ':');
            lang_print_sexpr(&sb, def, var->range.hi);
            bool *seen = arena_alloc(B->a, sizeof(bool) * (size_t)(def->nsizes + 1));
            bind_sizes_of(&sz, B, var->range.lo, seen);
            bind_sizes_of(&sz, B, var->range.hi, seen);
            diag_error_at(B->d, def->src, var->offset, TSL_ERR_RANGE,
                          "empty range for '%s': %s is [%lld, %lld)%s%s%s", var->name, sb_str(&sb),
                          (long long)bs->lo[v], (long long)bs->hi[v], sz.len ? " with " : "",
                          sb_str(&sz), var->from_where ? "" : " (the inputs are too small)");
            sb_free(&sb);
            sb_free(&sz);
            return -1;
        }
    }
    if (!empty && bind_box_size(B, st, bs) < 0) return -1;
    /* a statement covers its LHS tensor wherever its range was inferred */
    const lang_tensor *t = st->lhs;
    const int64_t *shape = B->b->shapes[t->index];
    {
        for (int k = 0; k < st->niter; k++) {
            if (st->vars[k].from_where || (bs->lo[k] == 0 && bs->hi[k] == shape[k])) continue;
            diag_error_at(B->d, def->src, st->vars[k].offset, TSL_ERR_SHAPE,
                          "'%s' ranges over [%lld, %lld) but dimension %d of '%s' has extent "
                          "%lld: a statement that updates '%s' must cover it (or say 'where "
                          "%s in LO:HI' for a partial update)",
                          st->vars[k].name, (long long)bs->lo[k], (long long)bs->hi[k], k, t->name,
                          (long long)shape[k], t->name, st->vars[k].name);
            return -1;
        }
    }
    /* the LHS, as an access with the LHS index list */
    for (int k = 0; k < st->niter; k++) {
        if (bs->lo[k] < 0 || bs->hi[k] > shape[k]) {
            diag_error_at(B->d, def->src, st->vars[k].offset, TSL_ERR_RANGE,
                          "access out of bounds: '%s' ranges over [%lld, %lld] but dimension %d "
                          "of '%s' has extent %lld",
                          st->vars[k].name, (long long)bs->lo[k], (long long)bs->hi[k] - 1, k,
                          t->name, (long long)shape[k]);
            return -1;
        }
    }
    return empty ? 0 : bind_check_access(B, st->rhs);
}

int lang_bind(tsl_arena *a, const lang_def *def, const int64_t *size_values, lang_bound **out,
              tsl_diag *d)
{
    lang_bound *b = arena_alloc(a, sizeof *b);
    b->def = def;
    b->sizes = arena_alloc(a, sizeof(int64_t) * (size_t)(def->nsizes + 1));
    for (int i = 0; i < def->nsizes; i++) b->sizes[i] = size_values ? size_values[i] : -1;
    b->shapes = arena_alloc(a, sizeof(int64_t *) * (size_t)(def->ntensors + 1));
    b->stmts = arena_alloc(a, sizeof(lang_bound_stmt) * (size_t)(def->nstmts + 1));
    bind_ctx B = {.a = a, .def = def, .b = b, .d = d};
    for (int i = 0; i < def->nsizes; i++) {
        if (b->sizes[i] == 0) B.any_zero = true;
        if (b->sizes[i] < -1) {
            diag_error_at(d, def->src, def->size_offsets[i], TSL_ERR_SHAPE,
                          "size '%s' is negative (%lld)", def->sizes[i], (long long)b->sizes[i]);
            return d->first ? (int)d->first : TSL_ERR_SHAPE;
        }
    }
    /* shapes in order: a tensor's shape may only use sizes, so any order works */
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        b->shapes[i] = arena_alloc(a, sizeof(int64_t) * (size_t)(t->rank + 1));
        for (int k = 0; k < t->rank; k++) {
            if (bind_eval(&B, t->shape[k], t->offset, "the extent", &b->shapes[i][k]) < 0)
                return d->first ? (int)d->first : TSL_ERR_SHAPE;
        }
        if (!t->is_scalar && bind_tensor_size(&B, t, b->shapes[i]) < 0) return d->first ? (int)d->first : TSL_ERR_SHAPE;
    }
    for (int s = 0; s < def->nstmts; s++)
        if (bind_stmt(&B, s) < 0) return d->first ? (int)d->first : TSL_ERR_RANGE;
    *out = b;
    return TSL_OK;
}
