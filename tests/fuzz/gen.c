/* gen.c — random valid TC programs for the differential tester, and the
 * runner that compares the interpreter with another target (see gen.h).
 *
 * The generator builds each statement access by access and keeps, for every
 * index variable, the model of range inference it relies on
 * (docs/language.md section 6): every index expression it writes has at most
 * one variable without a `where` clause, so all bounds apply in the first
 * round and a variable's range is the minimum of its bounds:
 *
 *     v          in a dim of extent D   ->  D
 *     v + c                              ->  D - c
 *     v + w      (where w in 0:K)        ->  D - K + 1
 *     2*v + w    (where w in 0:2)        ->  (D - 2) / 2 + 1
 *     S - 1 - v  (S the dim's symbol)    ->  D
 *     X(I(...) + c)                      ->  no bound on X's dim; I's values kept in [0, D - c)
 *
 * A new tensor's shape is its LHS variables' ranges. A statement that
 * updates a tensor with a known shape must cover it, so there every bound on
 * an LHS variable must be at least the extent. Values stay finite: every
 * expression carries a bound on its magnitude and a body that could grow
 * past the dtype's comfortable range is scaled by a power of two (exact);
 * builtins get safe domains (exp(tanh x), log(|x| + 1), ...). Comparisons
 * and float-to-int casts read only input values, which both targets see
 * bit for bit, so rounding differences can never flip a branch. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "fuzz/gen.h"

/* ---- randomness: splitmix64, reproducible from the seed ---------------- */

static uint64_t gen_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t gen_int(uint64_t *s, int64_t lo, int64_t hi) /* [lo, hi] */
{
    return lo + (int64_t)(gen_next(s) % (uint64_t)(hi - lo + 1));
}

static int gen_chance(uint64_t *s, int percent) { return gen_int(s, 0, 99) < percent; }

/* ---- generator state --------------------------------------------------- */

enum { GEN_MAX_T = 16, GEN_MAX_V = 12, GEN_MAX_SYM = 6, GEN_MAX_STR = 4096 };

typedef enum gen_kind { GK_IN, GK_INOUT, GK_INDEX, GK_NEW } gen_kind;

typedef struct gen_tensor {
    char name[8];
    tsl_dtype dt;
    int rank;
    int64_t ext[4];   /* concrete extents */
    int sym[4];       /* size symbol naming dim d (parameters); -1 for new tensors */
    gen_kind kind;
    int defined;      /* holds values (parameters; new tensors after their first statement) */
    int read_later;   /* read by a statement after its definition */
    int64_t idx_hi;   /* GK_INDEX: every value must be < idx_hi */
    double mag;       /* bound on |element| */
} gen_tensor;

typedef struct gen_var {
    char name[4];
    int lhs;          /* an LHS (iteration) variable */
    int64_t fixed;    /* > 0: range fixed (a where clause, or the extent of a shaped LHS) */
    int where;        /* emit `where name in 0:fixed` */
    int64_t bound;    /* min of the bounds so far (INT64_MAX: none) */
} gen_var;

/* An expression: its text, type (TSL_DTYPE_BOOL for conditions, -1 for a
 * weak float literal) and a bound on its magnitude. */
typedef struct gen_ex {
    const char *s;
    int ty;
    double mag;
} gen_ex;

enum { TY_WEAK = -1, TY_WEAKI = -2 }; /* a float literal, an integer literal */

/* How dt_run draws the inputs (the `# values:` line): small values
 * (floats in +-[0.1, 1], integers in +-[1, 3]); every value negative
 * (floats in -[0.1, 1], integers in [-3, -1]); integers at their dtype's
 * extremes and next to them, 2^53 + 1, -1 and small ones (floats small);
 * or extremes and all negative (signed integers in [min, -1], unsigned
 * ones in their top half, floats in -[0.1, 1]). Index tensors always hold
 * valid indices. */
typedef enum gen_values { GV_SMALL, GV_NEGATIVE, GV_EXTREME, GV_EXTREME_NEG } gen_values;
static const char *const gen_values_name[] = {"small", "negative", "extreme", "extreme-negative"};

typedef struct gen {
    uint64_t rng;
    const dt_opts *o;
    int nsym;
    char symname[GEN_MAX_SYM][2];
    int64_t symval[GEN_MAX_SYM];
    gen_tensor t[GEN_MAX_T];
    int nt;
    int nnew;         /* new tensors so far (T0, T1, ...) */
    int has_scalar;   /* the def has `float alpha` */
    tsl_dtype fty;    /* the program's main type (a float, or an integer for int_prog) */
    int int_prog;     /* most values are integers of fty and other widths */
    gen_values vals;  /* how the inputs are drawn (the `# values:` line) */
    /* the statement being built */
    gen_var v[GEN_MAX_V];
    int nv;
    int nred;         /* reduction variables created so far */
    int allow_red;    /* new reduction / where variables may be created */
    int want_red;     /* the next plain index must be a new reduction variable */
    int lhs;          /* index of the LHS tensor */
    int self_ok;      /* the RHS may read the LHS at exactly the LHS indices */
    int failed;       /* the statement cannot be completed: retry */
    /* every string made, freed at the end */
    char **strs;
    int nstrs, capstrs;
} gen;

static const char *gen_str(gen *g, const char *fmt, ...) TSL_PRINTF(2, 3);
static const char *gen_str(gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf b = {0};
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    char *s = sb_take(&b);
    if (g->nstrs == g->capstrs) {
        g->capstrs = g->capstrs ? 2 * g->capstrs : 256;
        char **n = realloc(g->strs, (size_t)g->capstrs * sizeof *n);
        TSL_ASSERT(n);
        g->strs = n;
    }
    g->strs[g->nstrs++] = s;
    return s;
}

static int gen_rand(gen *g, int lo, int hi) { return (int)gen_int(&g->rng, lo, hi); }
static int gen_p(gen *g, int percent) { return gen_chance(&g->rng, percent); }

static int gen_is_float(int ty)
{
    return ty == TY_WEAK || ty == TSL_DTYPE_F16 || ty == TSL_DTYPE_BF16 || ty == TSL_DTYPE_F32 ||
           ty == TSL_DTYPE_F64;
}

static int gen_is_int(int ty) { return ty == TY_WEAKI || (ty >= 0 && !gen_is_float(ty) && ty != TSL_DTYPE_BOOL); }

static int gen_is_unsigned(int ty)
{
    return ty == TSL_DTYPE_U8 || ty == TSL_DTYPE_U16 || ty == TSL_DTYPE_U32 || ty == TSL_DTYPE_U64;
}

static int gen_bits(int ty) { return ty < 0 ? 32 : (int)dtype_info_of((tsl_dtype)ty)->bits; }

/* The largest magnitude an integer dtype holds (wrapped values stay under it). */
static double gen_int_range(int ty)
{
    if (ty == TSL_DTYPE_BOOL) return 1;
    if (ty == TY_WEAKI) return 2147483647.0;
    return gen_is_unsigned(ty) ? ldexp(1.0, gen_bits(ty)) - 1 : ldexp(1.0, gen_bits(ty) - 1);
}

static int gen_int_type(int bits, int is_signed)
{
    switch (bits) {
    case 8: return is_signed ? TSL_DTYPE_I8 : TSL_DTYPE_U8;
    case 16: return is_signed ? TSL_DTYPE_I16 : TSL_DTYPE_U16;
    case 32: return is_signed ? TSL_DTYPE_I32 : TSL_DTYPE_U32;
    default: return is_signed ? TSL_DTYPE_I64 : TSL_DTYPE_U64;
    }
}

/* 0 bool, 1 integer, 2 float (weak literals by their kind) */
static int gen_cat(int ty) { return ty == TSL_DTYPE_BOOL ? 0 : gen_is_float(ty) ? 2 : 1; }

/* The promoted type of a binary operation or of the arms of ?:
 * (docs/language.md section 5; src/lang/sema.c sema_promote). */
static int gen_promote(int a, int b)
{
    int wa = a < 0, wb = b < 0;
    if (wa && wb) return gen_cat(a) >= gen_cat(b) ? a : b;
    if (wa || wb) {
        int w = wa ? a : b, st = wa ? b : a;
        if (w == TY_WEAK) return gen_cat(st) == 2 ? st : TSL_DTYPE_F32;
        return st == TSL_DTYPE_BOOL ? TSL_DTYPE_I32 : st;
    }
    if (a == b) return a;
    int ca = gen_cat(a), cb = gen_cat(b);
    if (ca != cb) return ca > cb ? a : b;
    if (ca == 2) {
        if (gen_bits(a) == gen_bits(b)) return TSL_DTYPE_F32; /* f16 with bf16 */
        return gen_bits(a) > gen_bits(b) ? a : b;
    }
    int sa = !gen_is_unsigned(a), sb = !gen_is_unsigned(b);
    if (sa == sb) return gen_bits(a) >= gen_bits(b) ? a : b;
    int sg = sa ? a : b, un = sa ? b : a;
    if (gen_bits(sg) > gen_bits(un)) return sg;
    return gen_int_type(gen_bits(un) * 2 > 64 ? 64 : gen_bits(un) * 2, 1);
}

/* The type of arithmetic (+ - * / %) on a and b: bools compute in int32. */
static int gen_arith(int a, int b)
{
    int t = gen_promote(a, b);
    return t == TSL_DTYPE_BOOL ? TSL_DTYPE_I32 : t;
}

/* Largest magnitude a value of type ty may carry before the generator
 * scales it down (float16 overflows at 65504, bfloat16 keeps 8 bits).
 * Integers are never scaled: their arithmetic wraps, identically on
 * every target, so any value is exact. */
static double gen_limit(int ty)
{
    if (ty == TSL_DTYPE_F16 || ty == TSL_DTYPE_BF16) return 64;
    if (gen_is_float(ty)) return 1e4;
    return INFINITY;
}

/* ---- sizes and parameters ---------------------------------------------- */

/* 1, primes and small composites; no powers of two beyond 1. */
static const int64_t gen_sizes[] = {1, 3, 5, 6, 7, 9, 10, 11, 12, 13, 15, 17, 19, 23};

static int64_t gen_numel(const gen_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->ext[d];
    return n;
}

/* Add a parameter of the given kind, rank and dtype with dims drawn from the
 * size symbols so that it stays under the element cap. */
static void gen_add_param(gen *g, gen_kind kind, const char *name, tsl_dtype dt, int rank)
{
    gen_tensor *t = &g->t[g->nt++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dt = dt;
    t->kind = kind;
    t->defined = 1;
    t->idx_hi = INT64_MAX;
    /* integers drawn at their extremes carry their whole range */
    t->mag = kind == GK_INDEX ? 25
             : gen_is_int(dt) ? (g->vals >= GV_EXTREME ? gen_int_range(dt) : 3)
                              : 1;
    for (int tries = 0;; tries++) {
        t->rank = rank;
        for (int d = 0; d < rank; d++) {
            int s = gen_rand(g, 0, g->nsym - 1);
            /* past a few tries, take the smallest symbol so the cap holds */
            if (tries > 6) {
                s = 0;
                for (int k = 1; k < g->nsym; k++)
                    if (g->symval[k] < g->symval[s]) s = k;
            }
            t->sym[d] = s;
            t->ext[d] = g->symval[s];
        }
        if (gen_numel(t) <= g->o->max_elems) break;
        if (tries > 8) rank--;
    }
}

/* ---- index expressions ------------------------------------------------- */

static int gen_new_var(gen *g, int lhs, int64_t fixed, int where)
{
    if (g->nv == GEN_MAX_V || (!lhs && g->nred >= 8)) return -1;
    gen_var *v = &g->v[g->nv];
    memset(v, 0, sizeof *v);
    static const char *lhs_names[] = {"i", "j", "k", "l"};
    static const char *red_names[] = {"r", "s", "t", "u", "w", "x", "y", "z"};
    if (lhs)
        snprintf(v->name, sizeof v->name, "%s", lhs_names[g->nv]);
    else
        snprintf(v->name, sizeof v->name, "%s", red_names[g->nred++ % 8]);
    v->lhs = lhs;
    v->fixed = fixed;
    v->where = where;
    v->bound = INT64_MAX;
    return g->nv++;
}

/* Can variable v take bound b (its range stays at least 1 and, when fixed,
 * covers the fixed range)? */
static int gen_var_fits(const gen_var *v, int64_t b) { return b >= 1 && (!v->fixed || b >= v->fixed); }

static void gen_var_bound(gen_var *v, int64_t b)
{
    if (b < v->bound) v->bound = b;
}

/* A variable that can take bound b, preferring LHS variables not yet
 * placed, or -1. */
static int gen_pick_var(gen *g, int64_t b)
{
    int cand[GEN_MAX_V], n = 0, fresh[GEN_MAX_V], nf = 0;
    for (int k = 0; k < g->nv; k++) {
        if (!gen_var_fits(&g->v[k], b)) continue;
        cand[n++] = k;
        if (g->v[k].lhs && g->v[k].bound == INT64_MAX && !g->v[k].fixed) fresh[nf++] = k;
    }
    if (nf && gen_p(g, 85)) return fresh[gen_rand(g, 0, nf - 1)];
    return n ? cand[gen_rand(g, 0, n - 1)] : -1;
}

static const char *gen_access(gen *g, int ti, int nested);

/* An index expression for a dim of extent D named by symbol sym (-1: none). */
static const char *gen_index(gen *g, int64_t D, int sym, int nested)
{
    for (int tries = 0; tries < 12; tries++) {
        int form = g->want_red ? 0 : gen_rand(g, 0, 99);
        if (form < 45) { /* plain variable, existing or new reduction variable */
            int v = g->want_red ? -1 : gen_pick_var(g, D);
            if ((v < 0 || gen_p(g, 20)) && g->allow_red) v = gen_new_var(g, 0, 0, 0);
            if (v < 0) continue;
            if (!g->v[v].lhs) g->want_red = 0;
            gen_var_bound(&g->v[v], D);
            return g->v[v].name;
        } else if (form < 55) { /* v + c */
            int64_t c = gen_rand(g, 1, 2);
            int v = gen_pick_var(g, D - c);
            if (v < 0) continue;
            gen_var_bound(&g->v[v], D - c);
            return gen_str(g, "%s + %lld", g->v[v].name, (long long)c);
        } else if (form < 67) { /* v + w, w in 0:K: a window */
            if (!g->allow_red) continue;
            int64_t K = gen_rand(g, 1, 3);
            int v = gen_pick_var(g, D - K + 1);
            if (v < 0 || g->v[v].where) continue;
            int w = gen_new_var(g, 0, K, 1);
            if (w < 0) continue;
            gen_var_bound(&g->v[v], D - K + 1);
            gen_var_bound(&g->v[w], K);
            return gen_p(g, 50) ? gen_str(g, "%s + %s", g->v[v].name, g->v[w].name)
                                : gen_str(g, "%s + %s", g->v[w].name, g->v[v].name);
        } else if (form < 73) { /* 2*v + w, w in 0:2: a strided window */
            if (!g->allow_red || D < 2) continue;
            int64_t b = (D - 2) / 2 + 1;
            int v = gen_pick_var(g, b);
            if (v < 0 || g->v[v].where) continue;
            int w = gen_new_var(g, 0, 2, 1);
            if (w < 0) continue;
            gen_var_bound(&g->v[v], b);
            gen_var_bound(&g->v[w], 2);
            return gen_str(g, "2*%s + %s", g->v[v].name, g->v[w].name);
        } else if (form < 80) { /* S - 1 - v: reversed */
            if (sym < 0) continue;
            int v = gen_pick_var(g, D);
            if (v < 0 || g->v[v].where) continue;
            gen_var_bound(&g->v[v], D);
            return gen_str(g, "%s - 1 - %s", g->symname[sym], g->v[v].name);
        } else if (form < 86) { /* a constant */
            return gen_str(g, "%lld", (long long)gen_rand(g, 0, (int)D - 1));
        } else { /* a gather through an index tensor */
            if (nested) continue;
            int idx[GEN_MAX_T], n = 0;
            for (int k = 0; k < g->nt; k++)
                if (g->t[k].kind == GK_INDEX) idx[n++] = k;
            if (!n) continue;
            int ti = idx[gen_rand(g, 0, n - 1)];
            int64_t c = D > 1 && gen_p(g, 30) ? 1 : 0;
            if (D - c < g->t[ti].idx_hi) g->t[ti].idx_hi = D - c;
            const char *a = gen_access(g, ti, 1);
            return c ? gen_str(g, "%s + 1", a) : a;
        }
    }
    return "0"; /* always in bounds */
}

/* T(e0, ..., e_{r-1}) */
static const char *gen_access(gen *g, int ti, int nested)
{
    gen_tensor *t = &g->t[ti];
    strbuf b = {0};
    sb_printf(&b, "%s(", t->name);
    /* visit the dims in a random order so that variables land transposed */
    int order[4] = {0, 1, 2, 3};
    for (int d = t->rank - 1; d > 0; d--) {
        int k = gen_rand(g, 0, d), x = order[d];
        order[d] = order[k];
        order[k] = x;
    }
    const char *e[4] = {0};
    for (int d = 0; d < t->rank; d++)
        e[order[d]] = gen_index(g, t->ext[order[d]], t->sym[order[d]], nested);
    for (int d = 0; d < t->rank; d++) sb_printf(&b, "%s%s", d ? ", " : "", e[d]);
    sb_putc(&b, ')');
    const char *s = gen_str(g, "%s", sb_str(&b));
    sb_free(&b);
    return s;
}

/* The LHS tensor read at exactly its LHS indices (allowed in place). */
static const char *gen_self(gen *g)
{
    gen_tensor *t = &g->t[g->lhs];
    strbuf b = {0};
    sb_printf(&b, "%s(", t->name);
    for (int d = 0; d < t->rank; d++) sb_printf(&b, "%s%s", d ? ", " : "", g->v[d].name);
    sb_putc(&b, ')');
    const char *s = gen_str(g, "%s", sb_str(&b));
    sb_free(&b);
    return s;
}

/* ---- value expressions ------------------------------------------------- */

static gen_ex gen_ex_of(const char *s, int ty, double mag)
{
    gen_ex e = {s, ty, mag};
    return e;
}

/* A tensor with values that the statement may read (not the LHS). */
static int gen_pick_readable(gen *g, int inputs_only)
{
    int cand[GEN_MAX_T], n = 0;
    for (int k = 0; k < g->nt; k++) {
        const gen_tensor *t = &g->t[k];
        if (!t->defined || k == g->lhs) continue;
        if (inputs_only && t->kind != GK_IN && t->kind != GK_INDEX) continue;
        cand[n++] = k;
    }
    return n ? cand[gen_rand(g, 0, n - 1)] : -1;
}

static gen_ex gen_read(gen *g, int ti)
{
    gen_tensor *t = &g->t[ti];
    if (ti != g->lhs) t->read_later = 1;
    return gen_ex_of(gen_access(g, ti, 0), t->dt, t->mag);
}

static gen_ex gen_int_lit(gen *g, int ty);

/* A condition that reads only input values and index variables, so both
 * targets decide it identically. */
static gen_ex gen_cond(gen *g, int depth)
{
    int form = gen_rand(g, 0, 9);
    static const char *rel[] = {"<", "<=", ">", ">=", "!=", "=="};
    if (depth < 1 && form == 0) {
        gen_ex a = gen_cond(g, depth + 1), b = gen_cond(g, depth + 1);
        return gen_ex_of(gen_str(g, "(%s %s %s)", a.s, gen_p(g, 50) ? "&&" : "||", b.s),
                         TSL_DTYPE_BOOL, 1);
    }
    if (depth < 1 && form == 1) {
        gen_ex a = gen_cond(g, depth + 1);
        return gen_ex_of(gen_str(g, "!(%s)", a.s), TSL_DTYPE_BOOL, 1);
    }
    if (form <= 4) { /* input against input or against a binary-exact constant */
        int ta = gen_pick_readable(g, 1);
        if (ta >= 0) {
            gen_ex a = gen_read(g, ta);
            if (a.ty == TSL_DTYPE_BOOL && gen_p(g, 50)) return a; /* a bool input is a condition */
            const char *rhs;
            int tb = gen_p(g, 50) ? gen_pick_readable(g, 1) : -1;
            if (tb >= 0)
                rhs = gen_read(g, tb).s;
            else if (gen_is_float(a.ty))
                rhs = gen_p(g, 50) ? "0.25" : "-0.5";
            else
                rhs = gen_int_lit(g, a.ty).s;
            return gen_ex_of(gen_str(g, "%s %s %s", a.s, rel[gen_rand(g, 0, 3)], rhs),
                             TSL_DTYPE_BOOL, 1);
        }
    }
    /* index variables that already have a range */
    int placed[GEN_MAX_V], n = 0;
    for (int k = 0; k < g->nv; k++)
        if (g->v[k].bound != INT64_MAX || g->v[k].fixed) placed[n++] = k;
    if (!n) return gen_ex_of("1 < 2", TSL_DTYPE_BOOL, 1);
    const char *a = g->v[placed[gen_rand(g, 0, n - 1)]].name;
    const char *b = gen_p(g, 50) ? g->v[placed[gen_rand(g, 0, n - 1)]].name
                                 : gen_str(g, "%d", gen_rand(g, 0, 4));
    return gen_ex_of(gen_str(g, "%s %s %s", a, rel[gen_rand(g, 0, 5)], b), TSL_DTYPE_BOOL, 1);
}

/* Scale a float expression down by a power of two (exact) until its
 * magnitude bound is under `limit`; an integer one (only ever asked where
 * it meets floats) is converted to float32 first. */
static gen_ex gen_tame(gen *g, gen_ex e, double limit)
{
    if (e.mag <= limit) return e;
    int k = 0;
    double m = e.mag;
    while (m > limit) m /= 2, k++;
    if (!gen_is_float(e.ty))
        return gen_ex_of(gen_str(g, "(float32(%s) * %.17g)", e.s, ldexp(1.0, -k)), TSL_DTYPE_F32, m);
    return gen_ex_of(gen_str(g, "(%s) * %.17g", e.s, ldexp(1.0, -k)), e.ty, m);
}

/* An integer value's magnitude bound: wrapped, it stays in its range. */
static double gen_cap(int ty, double mag)
{
    return gen_is_float(ty) ? mag : fmin(mag, gen_int_range(ty == TY_WEAKI ? TSL_DTYPE_I64 : ty));
}

/* An integer literal for a value of type ty: small, or (extreme inputs)
 * one that no double holds or that sits at the dtype's edge. */
static gen_ex gen_int_lit(gen *g, int ty)
{
    int uns = gen_is_unsigned(ty), bits = gen_is_int(ty) && ty != TY_WEAKI ? gen_bits(ty) : 32;
    if (g->vals < GV_EXTREME || gen_p(g, 50)) {
        int v = gen_rand(g, uns ? 0 : -2, 3);
        return gen_ex_of(gen_str(g, "%d", v), TY_WEAKI, 3);
    }
    switch (gen_rand(g, 0, 3)) {
    case 0: return gen_ex_of("9007199254740993", TY_WEAKI, 9007199254740993.0); /* 2^53 + 1 */
    case 1: {
        /* the dtype's maximum (u64: 2^63 - 1, the largest literal) */
        long long hi = bits >= 63 ? INT64_MAX : uns ? (1LL << bits) - 1 : (1LL << (bits - 1)) - 1;
        return gen_ex_of(gen_str(g, "%lld", hi), TY_WEAKI, (double)hi);
    }
    case 2: {
        long long lo = uns ? 1 : bits >= 64 ? -INT64_MAX : -(1LL << (bits - 1));
        return gen_ex_of(gen_str(g, "%lld", lo), TY_WEAKI, fabs((double)lo));
    }
    default: return gen_ex_of("4294967296", TY_WEAKI, 4294967296.0); /* 2^32 */
    }
}

/* A divisor that is never zero for b's type: integers |b % 7| + 1 (an
 * unsigned b: b % 7 + 1; abs(b) + 1 could wrap to 0), floats |b| + 1. */
static gen_ex gen_divisor(gen *g, gen_ex b)
{
    if (gen_is_float(b.ty)) return gen_ex_of(gen_str(g, "(abs(%s) + 1)", b.s), b.ty, b.mag + 1);
    if (b.ty == TSL_DTYPE_BOOL) return gen_ex_of(gen_str(g, "(%s + 1)", b.s), TSL_DTYPE_I32, 2);
    if (gen_is_unsigned(b.ty)) return gen_ex_of(gen_str(g, "(%s %% 7 + 1)", b.s), b.ty, 7);
    return gen_ex_of(gen_str(g, "(abs(%s %% 7) + 1)", b.s), b.ty == TY_WEAKI ? TSL_DTYPE_I32 : b.ty, 7);
}

/* Operands a and b about to meet in type ty (their promotion): an integer
 * that a float of ty cannot hold within its limit (an unsigned value that
 * wrapped, an extreme) is scaled into float32 first, and two huge floats
 * are scaled before they are multiplied. Returns the new promoted type. */
static int gen_fit(gen *g, gen_ex *a, gen_ex *b, int ty, int (*promote)(int, int))
{
    if (!gen_is_float(ty)) return ty;
    gen_ex *x[2] = {a, b};
    for (int k = 0; k < 2; k++)
        if (!gen_is_float(x[k]->ty) && x[k]->mag > gen_limit(ty)) *x[k] = gen_tame(g, *x[k], gen_limit(ty));
    if (a->mag * b->mag > 1e30) {
        *a = gen_tame(g, *a, gen_limit(TSL_DTYPE_F32));
        *b = gen_tame(g, *b, gen_limit(TSL_DTYPE_F32));
    }
    return promote(a->ty, b->ty);
}

static const tsl_dtype gen_int_types[] = {TSL_DTYPE_I8,  TSL_DTYPE_I16, TSL_DTYPE_I32, TSL_DTYPE_I64,
                                          TSL_DTYPE_U8,  TSL_DTYPE_U16, TSL_DTYPE_U32, TSL_DTYPE_U64};

static gen_ex gen_expr(gen *g, int depth);

static gen_ex gen_leaf(gen *g)
{
    int r = gen_rand(g, 0, 99);
    if (r < 6 && g->has_scalar) return gen_ex_of("alpha", TSL_DTYPE_F32, 1);
    if (r < 12) {
        static const char *lit[] = {"0.5", "1.5", "2.0", "0.75", "3.", "-1.25", ".25"};
        static const double litv[] = {0.5, 1.5, 2.0, 0.75, 3.0, 1.25, 0.25};
        if (g->int_prog && gen_p(g, 70)) return gen_int_lit(g, g->fty);
        int k = gen_rand(g, 0, 6);
        return gen_ex_of(lit[k], TY_WEAK, litv[k]);
    }
    if (r < 18 && g->self_ok) {
        const gen_tensor *t = &g->t[g->lhs];
        return gen_ex_of(gen_self(g), t->dt, t->mag);
    }
    int ti = gen_pick_readable(g, 0);
    if (ti < 0) return gen_ex_of("1.5", TY_WEAK, 1.5);
    return gen_read(g, ti);
}

/* A value expression: arithmetic, safe builtins, max/min, ?:, casts. */
static gen_ex gen_expr(gen *g, int depth)
{
    if (depth >= 3 || gen_p(g, 25 + 15 * depth)) return gen_leaf(g);
    int form = gen_rand(g, 0, 99);
    if (form < 40) { /* + - * */
        gen_ex a = gen_expr(g, depth + 1), b = gen_expr(g, depth + 1);
        int op = gen_rand(g, 0, 2);
        int ty = gen_fit(g, &a, &b, gen_arith(a.ty, b.ty), gen_arith);
        /* an unsigned difference wraps to the top of the range */
        double m = gen_is_unsigned(ty) && op == 1 ? gen_int_range(ty) : op == 2 ? a.mag * b.mag : a.mag + b.mag;
        m = gen_cap(ty, m);
        return gen_tame(g, gen_ex_of(gen_str(g, "(%s %s %s)", a.s, op == 0 ? "+" : op == 1 ? "-" : "*", b.s),
                                     ty, m), gen_limit(ty));
    }
    if (form < 46) { /* a / divisor: never divides by zero */
        gen_ex a = gen_expr(g, depth + 1), b = gen_divisor(g, gen_expr(g, depth + 1));
        int ty = gen_fit(g, &a, &b, gen_arith(a.ty, b.ty), gen_arith);
        return gen_ex_of(gen_str(g, "(%s / %s)", a.s, b.s), ty, gen_cap(ty, a.mag));
    }
    if (form < 52 && g->int_prog) { /* integer remainder by a positive divisor */
        gen_ex a = gen_expr(g, depth + 1), b = gen_expr(g, depth + 1);
        if (!gen_is_float(a.ty) && !gen_is_float(b.ty)) {
            b = gen_divisor(g, b);
            int ty = gen_arith(a.ty, b.ty);
            return gen_ex_of(gen_str(g, "(%s %% %s)", a.s, b.s), ty, gen_cap(ty, a.mag));
        }
        /* b's accesses have bounded variables: it must stay in the text */
        int ty = gen_fit(g, &a, &b, gen_arith(a.ty, b.ty), gen_arith);
        return gen_tame(g, gen_ex_of(gen_str(g, "(%s + %s)", a.s, b.s), ty, a.mag + b.mag), gen_limit(ty));
    }
    if (form < 70) { /* a builtin on its safe domain */
        gen_ex a = gen_expr(g, depth + 1);
        /* a builtin of literals alone computes in float32 (not the program's
         * type), which the tolerance could not tell from the text: skip it */
        if (a.ty == TY_WEAK || a.ty == TY_WEAKI) return a;
        int k = gen_rand(g, 0, 10);
        if (k == 7) /* abs keeps integers (wrapping at the minimum); of a bool, int32 */
            return gen_ex_of(gen_str(g, "abs(%s)", a.s), a.ty == TSL_DTYPE_BOOL ? TSL_DTYPE_I32 : a.ty, a.mag);
        if (k == 10) /* negation likewise (of an unsigned value: to the top of its range) */
            return gen_ex_of(gen_str(g, "(-%s)", a.s), a.ty == TSL_DTYPE_BOOL ? TSL_DTYPE_I32 : a.ty,
                             gen_is_unsigned(a.ty) ? gen_int_range(a.ty) : a.mag);
        /* the others compute an integer in float32: convert it first, so that
         * |x| + 1 cannot wrap (abs of the minimum) */
        if (!gen_is_float(a.ty)) a = gen_ex_of(gen_str(g, "float32(%s)", a.s), TSL_DTYPE_F32, a.mag);
        int fty = a.ty;
        switch (k) {
        case 0: return gen_ex_of(gen_str(g, "tanh(%s)", a.s), fty, 1);
        case 1: return gen_ex_of(gen_str(g, "sigmoid(%s)", a.s), fty, 1);
        case 2: return gen_ex_of(gen_str(g, "exp(tanh(%s))", a.s), fty, 2.72);
        case 3: return gen_ex_of(gen_str(g, "log(abs(%s) + 1)", a.s), fty, log(a.mag + 1) + 1e-3);
        case 4: return gen_ex_of(gen_str(g, "sqrt(abs(%s) + 1)", a.s), fty, sqrt(a.mag + 1));
        case 5: return gen_ex_of(gen_str(g, "rsqrt(abs(%s) + 1)", a.s), fty, 1);
        case 6: return gen_ex_of(gen_str(g, "erf(%s)", a.s), fty, 1);
        case 8: return gen_ex_of(gen_str(g, "pow(abs(%s) + 1, 0.5)", a.s), fty, sqrt(a.mag + 1));
        default: return gen_ex_of(gen_str(g, "exp(%s)", gen_str(g, "sigmoid(%s)", a.s)), fty, 2.72);
        }
    }
    if (form < 80) { /* max / min (C spellings sometimes) */
        gen_ex a = gen_expr(g, depth + 1), b = gen_expr(g, depth + 1);
        int ty = gen_fit(g, &a, &b, gen_promote(a.ty, b.ty), gen_promote);
        int mx = gen_p(g, 50);
        const char *fn = gen_is_float(ty) && gen_p(g, 30) ? (mx ? "fmaxf" : "fminf") : (mx ? "max" : "min");
        return gen_ex_of(gen_str(g, "%s(%s, %s)", fn, a.s, b.s), ty, gen_cap(ty, fmax(a.mag, b.mag)));
    }
    if (form < 90) { /* c ? a : b */
        gen_ex c = gen_cond(g, 0);
        gen_ex a = gen_expr(g, depth + 1), b = gen_expr(g, depth + 1);
        int ty = gen_fit(g, &a, &b, gen_promote(a.ty, b.ty), gen_promote);
        return gen_ex_of(gen_str(g, "(%s ? %s : %s)", c.s, a.s, b.s), ty, gen_cap(ty, fmax(a.mag, b.mag)));
    }
    /* casts: int -> float, float -> narrower float, input float -> int
     * exactly (in range: |4 x| <= 4), int -> int (wrapping); and the
     * conversions docs/language.md defines at the edges: input floats
     * scaled far out of range (saturating) and log of an input (NaN for
     * x < 0, -inf for 0: 0 and the minimum) */
    int r = gen_rand(g, 0, 2);
    if (r == 0) {
        int ti = gen_pick_readable(g, 1);
        if (ti >= 0 && gen_is_float(g->t[ti].dt)) {
            gen_ex a = gen_read(g, ti);
            int to = gen_p(g, 50) ? TSL_DTYPE_I32 : gen_int_types[gen_rand(g, 0, 7)];
            int edge = gen_rand(g, 0, 5);
            if (edge == 0)
                return gen_ex_of(gen_str(g, "%s(%s * 1e30)", tsl_dtype_name((tsl_dtype)to), a.s), to,
                                 gen_int_range(to));
            if (edge == 1)
                return gen_ex_of(gen_str(g, "%s(%s * 1000)", tsl_dtype_name((tsl_dtype)to), a.s), to,
                                 fmin(1000 * a.mag, gen_int_range(to)));
            if (edge == 2)
                return gen_ex_of(gen_str(g, "%s(log(%s))", tsl_dtype_name((tsl_dtype)to), a.s), to,
                                 gen_int_range(to));
            return gen_ex_of(gen_str(g, gen_is_unsigned(to) ? "%s(abs(%s) * 4)" : "%s(%s * 4)",
                                     tsl_dtype_name((tsl_dtype)to), a.s),
                             to, 4 * a.mag);
        }
    }
    gen_ex a = gen_expr(g, depth + 1);
    if (r == 1 && !g->int_prog) {
        static const tsl_dtype to[] = {TSL_DTYPE_F16, TSL_DTYPE_BF16, TSL_DTYPE_F32, TSL_DTYPE_F64};
        tsl_dtype t = to[gen_rand(g, 0, 3)];
        if (t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16) a = gen_tame(g, a, gen_limit(t));
        return gen_ex_of(gen_str(g, "%s(%s)", tsl_dtype_name(t), a.s), t, a.mag);
    }
    if (r == 1 && !gen_is_float(a.ty)) { /* integer programs: to another width */
        int to = gen_int_types[gen_rand(g, 0, 7)];
        return gen_ex_of(gen_str(g, "%s(%s)", tsl_dtype_name((tsl_dtype)to), a.s), to, gen_cap(to, a.mag));
    }
    return gen_ex_of(gen_str(g, "float32(%s)", a.s), TSL_DTYPE_F32, a.mag);
}

/* ---- statements -------------------------------------------------------- */

static int64_t gen_var_range(const gen_var *v) { return v->fixed ? v->fixed : v->bound; }

/* Try to add one statement; returns 0 (and leaves g->failed set) when the
 * attempt must be thrown away. Appends the statement text to b. */
static int gen_stmt_try(gen *g, strbuf *b, int first);
static int gen_stmt(gen *g, strbuf *b, int first)
{
    int ok = gen_stmt_try(g, b, first);
    if (getenv("DT_GEN_DEBUG") && !ok) fprintf(stderr, "gen: statement rejected at line %d\n", g->failed);
    return ok;
}

#define GEN_REJECT() return (g->failed = __LINE__, 0)

static int gen_stmt_try(gen *g, strbuf *b, int first)
{
    g->nv = 0;
    g->nred = 0;
    g->failed = 0;
    g->self_ok = 0;
    /* the LHS: a new tensor, or an update of an in/out or earlier tensor */
    int upd[GEN_MAX_T], nu = 0;
    for (int k = 0; k < g->nt; k++)
        if ((g->t[k].kind == GK_INOUT || g->t[k].kind == GK_NEW) && g->t[k].defined) upd[nu++] = k;
    int update = !first && nu && gen_p(g, 35);
    if (first && nu && gen_p(g, 25)) update = 1; /* an in/out updated first */
    int new_t = -1;
    if (update) {
        g->lhs = upd[gen_rand(g, 0, nu - 1)];
        for (int d = 0; d < g->t[g->lhs].rank; d++) gen_new_var(g, 1, g->t[g->lhs].ext[d], 0);
    } else {
        if (g->nt == GEN_MAX_T || g->nnew == 10) GEN_REJECT();
        static const int rank_w[] = {0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 4};
        int rank = rank_w[gen_rand(g, 0, 10)];
        new_t = g->nt;
        g->lhs = new_t;
        gen_tensor *t = &g->t[g->nt++];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, "T%d", g->nnew++);
        t->kind = GK_NEW;
        t->rank = rank;
        for (int d = 0; d < rank; d++) t->sym[d] = -1, gen_new_var(g, 1, 0, 0);
    }
    gen_tensor *L = &g->t[g->lhs];
    int reduce = gen_p(g, 55);
    g->allow_red = reduce;
    g->self_ok = update && !reduce && gen_p(g, 50);

    /* the body; a reduction's first term introduces a reduction variable */
    gen_ex body;
    if (reduce) {
        int cand[GEN_MAX_T], n = 0;
        for (int k = 0; k < g->nt; k++)
            if (g->t[k].defined && k != g->lhs && g->t[k].rank > 0) cand[n++] = k;
        if (!n) GEN_REJECT();
        int nv0 = g->nv;
        g->want_red = 1;
        gen_ex first_term = gen_read(g, cand[gen_rand(g, 0, n - 1)]);
        int has_red = 0;
        for (int k = nv0; k < g->nv; k++) has_red |= !g->v[k].lhs;
        g->want_red = 0;
        if (!has_red) GEN_REJECT();
        body = first_term;
        if (gen_p(g, 75)) {
            gen_ex e = gen_expr(g, 1);
            int op = gen_rand(g, 0, 3);
            int ty = gen_fit(g, &body, &e, gen_arith(body.ty, e.ty), gen_arith);
            body = gen_ex_of(gen_str(g, "%s %s %s", body.s, op == 0 ? "+" : "*",
                                     op == 0 ? e.s : gen_str(g, "(%s)", e.s)),
                             ty, op == 0 ? body.mag + e.mag : body.mag * e.mag);
        }
    } else {
        body = gen_expr(g, 0);
    }
    if (body.ty == TY_WEAK) body.ty = TSL_DTYPE_F32;
    if (body.ty == TY_WEAKI) body.ty = TSL_DTYPE_I32;
    /* a computed float truncated into an integer tensor could round either way */
    if (update && !gen_is_float(L->dt) && gen_is_float(body.ty)) GEN_REJECT();

    /* LHS variables nothing bounded: broadcast with an explicit range */
    for (int k = 0; k < g->nv; k++) {
        gen_var *v = &g->v[k];
        if (v->lhs && !v->fixed && v->bound == INT64_MAX) {
            v->fixed = gen_sizes[gen_rand(g, 0, 6)];
            v->where = 1;
        }
    }
    /* every variable needs a range; the box must stay under the cap */
    int64_t box = 1, count = 1;
    for (int k = 0; k < g->nv; k++) {
        int64_t r = gen_var_range(&g->v[k]);
        if (r == INT64_MAX || r < 1) GEN_REJECT();
        box *= r;
        if (!g->v[k].lhs) count *= r;
        if (box > g->o->max_elems * 16) GEN_REJECT();
    }

    /* the operator, now that the reduction size is known */
    const char *op = "=";
    int ty = update ? (int)L->dt : body.ty;
    double limit = gen_limit(ty);
    double mag = body.mag;
    int nred = 0;
    for (int k = 0; k < g->nv; k++) nred += !g->v[k].lhs;
    if (nred == 0 && update && gen_p(g, 30)) {
        op = gen_p(g, 60) ? "+=" : gen_p(g, 50) ? "max=" : "min=";
        body = gen_tame(g, body, limit / 2);
        mag = gen_cap(L->dt, L->mag + body.mag);
    } else if (nred > 0) {
        int r = gen_rand(g, 0, 99);
        int prod_ok = count <= 12 && !(update && L->mag > 8);
        if (r < 15 && prod_ok) {
            /* products of values in [0.75, 1.25] (integers: 1 or 2) */
            op = update ? "*=" : "*=!";
            if (gen_is_float(body.ty))
                body = gen_ex_of(gen_str(g, "(1 + 0.25 * tanh(%s))", body.s), body.ty, 1.25);
            else if (body.ty != TSL_DTYPE_BOOL && (g->vals < GV_EXTREME || gen_p(g, 50)))
                body = gen_ex_of(gen_str(g, "(abs(%s) %% 2 + 1)", body.s), body.ty, 2);
            /* (integers at their extremes: the raw product, wrapping; bools: all) */
            mag = gen_cap(body.ty, (update ? L->mag : 1) * pow(body.mag, (double)count));
        } else if (r < 40) {
            op = update ? (gen_p(g, 50) ? "max=" : "max=!") : "max=!";
            mag = update ? fmax(L->mag, body.mag) : body.mag;
        } else if (r < 55) {
            op = update ? "min=" : "min=!";
            mag = update ? fmax(L->mag, body.mag) : body.mag;
        } else {
            op = update ? "+=" : "+=!";
            double lim = limit / (double)count / (update ? 2 : 1);
            body = gen_tame(g, body, lim);
            mag = gen_cap(body.ty, body.mag * (double)count + (update ? L->mag : 0));
        }
    } else {
        body = gen_tame(g, body, limit);
        mag = body.mag;
    }
    if (!update) {
        L->dt = (tsl_dtype)body.ty;
        for (int d = 0; d < L->rank; d++) L->ext[d] = gen_var_range(&g->v[d]);
        if (gen_numel(L) > g->o->max_elems) GEN_REJECT();
        L->mag = mag;
    } else {
        if (mag > gen_limit(L->dt)) GEN_REJECT();
        L->mag = fmax(L->mag, mag);
    }
    L->defined = 1;

    /* the text: LHS, operator, body, where clauses */
    sb_printf(b, "  %s(", L->name);
    for (int d = 0; d < L->rank; d++) sb_printf(b, "%s%s", d ? ", " : "", g->v[d].name);
    sb_printf(b, ") %s %s", op, body.s);
    int nw = 0;
    for (int k = 0; k < g->nv; k++)
        if (g->v[k].where)
            sb_printf(b, "%s%s in 0:%lld", nw++ ? ", " : " where ", g->v[k].name,
                      (long long)g->v[k].fixed);
    sb_putc(b, '\n');
    return 1;
}

/* ---- contraction-shaped programs -------------------------------------- */

/* A GEMM-shaped program, the pattern the contraction strategy recognises:
 * C = A x B (either operand transposed, sometimes batched, sometimes scaled
 * by alpha), initialised from a bias or not, with pointwise epilogues and
 * sometimes a second GEMM (MLP). Sizes go past the strategy's tiles
 * (17, 33, 67, 131: never multiples of them) within the element cap. */
static char *gen_gemm_program(gen *g, uint64_t seed)
{
    static const int64_t sz[] = {1, 3, 17, 33, 67, 131};
    int64_t cap = g->o->max_elems * 5, M, N, K, L;
    for (;;) {
        M = sz[gen_rand(g, 0, 5)], N = sz[gen_rand(g, 0, 5)], K = sz[gen_rand(g, 0, 5)];
        L = sz[gen_rand(g, 0, 3)];
        if (M * K <= cap && K * N <= cap && M * N <= cap && N * L <= cap && M * L <= cap) break;
    }
    int r = gen_rand(g, 0, 9);
    tsl_dtype dt = r < 5 ? TSL_DTYPE_F32 : r < 7 ? TSL_DTYPE_F16 : r < 9 ? TSL_DTYPE_BF16 : TSL_DTYPE_F64;
    const char *ty = tsl_dtype_name(dt);
    int ta = gen_p(g, 30), tb = gen_p(g, 30), batched = gen_p(g, 20), alpha = gen_p(g, 20);
    int bias_init = gen_p(g, 30), mlp = gen_p(g, 25);
    int64_t Bt = batched ? sz[gen_rand(g, 0, 1)] + 2 : 0; /* 3 or 5 */
    /* f16 sums of K products of values under 1 stay far below 65504; the
     * second GEMM reads C scaled down to keep it so */
    strbuf b = {0};
    sb_printf(&b, "# difftest seed=0x%llx (contraction)\n# sizes: M=%lld N=%lld K=%lld", (unsigned long long)seed,
              (long long)M, (long long)N, (long long)K);
    if (mlp) sb_printf(&b, " L=%lld", (long long)L);
    if (batched) sb_printf(&b, " Bt=%lld", (long long)Bt);
    sb_puts(&b, "\ndef f(");
    const char *bd = batched ? "Bt," : "", *bi = batched ? "b, " : "";
    sb_printf(&b, "%s(%s%s) A, %s(%s%s) B", ty, bd, ta ? "K,M" : "M,K", ty, bd, tb ? "N,K" : "K,N");
    sb_printf(&b, ", %s(N) bias", ty);
    if (mlp) sb_printf(&b, ", %s(N,L) W2", ty);
    if (alpha) sb_puts(&b, ", float alpha");
    sb_printf(&b, ") -> (%s) {\n", mlp ? (gen_p(g, 50) ? "C, D" : "D") : "C");
    const char *a_ix = ta ? "r, i" : "i, r", *b_ix = tb ? "j, r" : "r, j";
    if (bias_init) {
        sb_printf(&b, "  C(%si, j) = bias(j)%s\n", bi, batched ? " where b in 0:Bt" : "");
        sb_printf(&b, "  C(%si, j) += %sA(%s%s) * B(%s%s)\n", bi, alpha ? "alpha * " : "", bi, a_ix, bi, b_ix);
    } else {
        sb_printf(&b, "  C(%si, j) +=! %sA(%s%s) * B(%s%s)\n", bi, alpha ? "alpha * " : "", bi, a_ix, bi, b_ix);
    }
    int nep = gen_rand(g, 0, 2);
    for (int e = 0; e < nep; e++) {
        const char *c = gen_str(g, "C(%si, j)", bi);
        const char *body;
        switch (gen_rand(g, 0, 5)) {
        case 0: body = gen_str(g, "fmaxf(%s, 0)", c); break;
        case 1: body = gen_str(g, "%s + bias(j)", c); break;
        case 2: body = gen_str(g, "tanh(%s)", c); break;
        case 3: body = gen_str(g, "%s * 0.5", c); break;
        case 4: body = gen_str(g, "sigmoid(%s) * %s", c, c); break;
        default: body = gen_str(g, "%s > 0 ? %s : 0.5 * %s", c, c, c); break; /* continuous: a rounding cannot flip it */
        }
        sb_printf(&b, "  C(%si, j) = %s\n", bi, body);
    }
    if (mlp) {
        double scale = dt == TSL_DTYPE_F16 ? 1.0 / 64 : 1; /* |C| <= K; |D| <= K N / 64 */
        /* (unscaled, an unbatched one is a GEMM chain: graph/chain.c) */
        if (scale == 1) sb_printf(&b, "  D(%si, l) +=! C(%si, r) * W2(r, l)\n", bi, bi);
        else sb_printf(&b, "  D(%si, l) +=! C(%si, r) * %.17g * W2(r, l)\n", bi, bi, scale);
        if (gen_p(g, 50)) sb_printf(&b, "  D(%si, l) = fmaxf(D(%si, l), 0)\n", bi, bi);
    }
    sb_puts(&b, "}\n");
    return sb_take(&b);
}

/* An attention chain (graph/attention.c, the attention strategy): 0-2
 * batch dims, a scale (constant, size or scalar), a mask (none, causal,
 * strict causal with its fully masked first row, an additive or a boolean
 * mask tensor), the row sum before or after PV or P normalised before
 * PV, Tq != Tk. Masked scores
 * are -1e30 (-60000 in float16, whose range ends at 65504) so a fully
 * masked row is defined: the mean of V. Sizes past every tile of the
 * strategy (64/128 rows, 32/64 keys) within the element cap. */
static char *gen_attention_program(gen *g, uint64_t seed)
{
    static const int64_t sz[] = {1, 3, 17, 33, 67, 131};
    int nb = gen_rand(g, 0, 2);
    int64_t cap = g->o->max_elems * 5, B, H, T, S, D, E;
    for (;;) {
        B = sz[gen_rand(g, 0, 1)] + 1, H = sz[gen_rand(g, 0, 1)];
        T = sz[gen_rand(g, 0, 5)], S = sz[gen_rand(g, 0, 5)], D = sz[gen_rand(g, 0, 3)], E = sz[gen_rand(g, 0, 3)];
        int64_t bh = (nb > 0 ? B : 1) * (nb > 1 ? H : 1);
        if (bh * T * S <= cap && bh * T * D <= cap && bh * S * E <= cap) break;
    }
    int r = gen_rand(g, 0, 9);
    tsl_dtype dt = r < 6 ? TSL_DTYPE_F32 : r < 8 ? TSL_DTYPE_F16 : TSL_DTYPE_BF16;
    if (dt == TSL_DTYPE_F16) D = D > 33 ? 33 : D; /* the interpreter rounds the scores to f16 */
    const char *ty = tsl_dtype_name(dt), *fill = dt == TSL_DTYPE_F16 ? "-60000.0" : "-1e30";
    int scale = gen_rand(g, 0, 3), mask = gen_rand(g, 0, 4), sum_first = gen_p(g, 50);
    const char *bd = nb == 0 ? "" : nb == 1 ? "B," : "B,H,", *bi = nb == 0 ? "" : nb == 1 ? "b," : "b,h,";
    strbuf b = {0};
    sb_printf(&b, "# difftest seed=0x%llx (attention)\n# sizes: T=%lld S=%lld D=%lld E=%lld", (unsigned long long)seed,
              (long long)T, (long long)S, (long long)D, (long long)E);
    if (nb > 0) sb_printf(&b, " B=%lld", (long long)B);
    if (nb > 1) sb_printf(&b, " H=%lld", (long long)H);
    sb_printf(&b, "\ndef f(%s(%sT,D) Q, %s(%sS,D) K, %s(%sS,E) V", ty, bd, ty, bd, ty, bd);
    if (mask == 3) sb_printf(&b, ", %s(T,S) M", ty);
    if (mask == 4) sb_printf(&b, ", bool(%sT,S) A", bd);
    if (scale == 2) sb_puts(&b, ", float sc");
    sb_puts(&b, ") -> (O) {\n");
    sb_printf(&b, "  s(%si,j) +=! Q(%si,d) * K(%sj,d)\n", bi, bi, bi);
    const char *sc = scale == 0 ? "s(%si,j)" : scale == 1 ? "s(%si,j) / sqrt(D)" : scale == 2 ? "s(%si,j) * sc"
                                                                                             : "s(%si,j) * 0.25";
    const char *sv = gen_str(g, sc, bi);
    switch (mask) {
    case 0: sb_printf(&b, "  t(%si,j) = %s\n", bi, sv); break;
    case 1: sb_printf(&b, "  t(%si,j) = j <= i ? %s : %s\n", bi, sv, fill); break;
    case 2: sb_printf(&b, "  t(%si,j) = j < i ? %s : %s\n", bi, sv, fill); break;
    case 3: sb_printf(&b, "  t(%si,j) = %s + M(i,j)\n", bi, sv); break;
    default: sb_printf(&b, "  t(%si,j) = A(%si,j) ? %s : %s\n", bi, bi, sv, fill); break;
    }
    sb_printf(&b, "  m(%si) max=! t(%si,j)\n  p(%si,j) = exp(t(%si,j) - m(%si))\n", bi, bi, bi, bi, bi);
    const char *sum = gen_str(g, "  l(%si) +=! p(%si,j)\n", bi, bi);
    const char *pv = gen_str(g, "  O(%si,e) +=! p(%si,j) * V(%sj,e)\n", bi, bi, bi);
    if (sum_first && gen_p(g, 40)) { /* P normalised before PV */
        sb_printf(&b, "%s  q(%si,j) = p(%si,j) / l(%si)\n  O(%si,e) +=! q(%si,j) * V(%sj,e)\n}\n", sum, bi, bi, bi, bi,
                  bi, bi);
        return sb_take(&b);
    }
    sb_printf(&b, "%s%s", sum_first ? sum : pv, sum_first ? pv : sum);
    sb_printf(&b, "  O(%si,e) = O(%si,e) / l(%si)\n}\n", bi, bi, bi);
    return sb_take(&b);
}

/* ---- the whole program ------------------------------------------------- */

char *dt_gen_program(uint64_t seed, const dt_opts *o)
{
    gen *g = calloc(1, sizeof *g);
    TSL_ASSERT(g);
    /* the stream starts at a hash of the seed: the testers step seeds by
     * the generator's own increment, which would make program k + 1's
     * stream program k's shifted by one draw */
    uint64_t s0 = seed ^ 0x2545f4914f6cdd1dull;
    g->rng = gen_next(&s0);
    g->o = o;
    if (gen_p(g, o->gemm_percent)) {
        /* a quarter of the contraction programs: attention chains */
        char *text = gen_p(g, 25) ? gen_attention_program(g, seed) : gen_gemm_program(g, seed);
        for (int k = 0; k < g->nstrs; k++) free(g->strs[k]);
        free(g->strs);
        free(g);
        return text;
    }
    /* the families: float32, float64, float16, bfloat16 programs (inputs
     * small, or all negative), and integer programs of every width
     * (inputs at their extremes, all negative, or small) */
    int fam = gen_rand(g, 0, 99);
    g->fty = fam < 40 ? TSL_DTYPE_F32 : fam < 52 ? TSL_DTYPE_F64 : fam < 62 ? TSL_DTYPE_F16
           : fam < 70 ? TSL_DTYPE_BF16 : gen_int_types[gen_rand(g, 0, 7)];
    g->int_prog = !gen_is_float(g->fty);
    int v = gen_rand(g, 0, 99);
    if (g->int_prog) g->vals = v < 20 ? GV_SMALL : v < 65 ? GV_EXTREME : GV_EXTREME_NEG;
    else g->vals = v < 75 ? GV_SMALL : GV_NEGATIVE;
    g->nsym = gen_rand(g, 2, GEN_MAX_SYM);
    static const char *names = "MNKPQR";
    for (int s = 0; s < g->nsym; s++) {
        g->symname[s][0] = names[s];
        g->symval[s] = gen_sizes[gen_rand(g, 0, (int)(sizeof gen_sizes / sizeof *gen_sizes) - 1)];
    }
    static const int rank_w[] = {0, 1, 1, 2, 2, 2, 3, 3, 4};
    int nin = gen_rand(g, 1, 4);
    for (int k = 0; k < nin; k++) {
        tsl_dtype dt = g->fty;
        int r = gen_rand(g, 0, 99);
        if (g->int_prog) { /* other widths and signedness, bools, some float32 */
            if (r < 25) dt = gen_int_types[gen_rand(g, 0, 7)];
            else if (r < 33) dt = TSL_DTYPE_BOOL;
            else if (r < 40) dt = TSL_DTYPE_F32;
        } else {
            if (r < 8) dt = TSL_DTYPE_I32;
            else if (r < 15) dt = gen_int_types[gen_rand(g, 0, 7)];
            else if (r < 19) dt = TSL_DTYPE_BOOL;
            else if (r < 27) dt = TSL_DTYPE_F32;
        }
        char nm[2] = {(char)('A' + k), 0};
        gen_add_param(g, GK_IN, nm, dt, rank_w[gen_rand(g, 0, 8)]);
    }
    if (gen_p(g, 35)) {
        static const tsl_dtype idx_types[] = {TSL_DTYPE_I32, TSL_DTYPE_I32, TSL_DTYPE_I64, TSL_DTYPE_I16,
                                              TSL_DTYPE_U8,  TSL_DTYPE_U32, TSL_DTYPE_U64};
        gen_add_param(g, GK_INDEX, "I", idx_types[gen_rand(g, 0, 6)], gen_rand(g, 1, 2));
    }
    if (gen_p(g, 25)) gen_add_param(g, GK_INOUT, "Y", g->fty, gen_rand(g, 0, 3));
    g->has_scalar = !g->int_prog && gen_p(g, 20);

    strbuf body = {0};
    int nstmts = gen_rand(g, 1, o->max_stmts);
    for (int s = 0, tries = 0; s < nstmts && tries < 40; tries++) {
        gen saved = *g; /* a failed attempt leaves no trace but its strings */
        size_t len = body.len;
        if (gen_stmt(g, &body, s == 0)) {
            s++;
            continue;
        }
        int nstrs = g->nstrs, capstrs = g->capstrs;
        char **strs = g->strs;
        *g = saved;
        g->strs = strs, g->nstrs = nstrs, g->capstrs = capstrs;
        body.len = len;
        if (body.buf) body.buf[len] = 0;
    }
    int has_new = 0;
    for (int k = 0; k < g->nt; k++) has_new |= g->t[k].kind == GK_NEW && g->t[k].defined;
    if (!has_new) { /* always at least one statement: a plain copy */
        gen_tensor *a = &g->t[0];
        gen_tensor *t = &g->t[g->nt++];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, "T%d", g->nnew++);
        t->kind = GK_NEW;
        t->defined = 1;
        t->rank = a->rank;
        g->lhs = -1;
        g->nv = 0;
        for (int d = 0; d < a->rank; d++) gen_new_var(g, 1, 0, 0);
        sb_printf(&body, "  %s(", t->name);
        for (int d = 0; d < a->rank; d++) sb_printf(&body, "%s%s", d ? ", " : "", g->v[d].name);
        sb_printf(&body, ") = %s(", a->name);
        for (int d = 0; d < a->rank; d++) sb_printf(&body, "%s%s", d ? ", " : "", g->v[d].name);
        sb_puts(&body, ")\n");
    }

    strbuf out = {0};
    sb_printf(&out, "# difftest seed=0x%llx\n# values: %s\n# sizes:", (unsigned long long)seed,
              gen_values_name[g->vals]);
    for (int s = 0; s < g->nsym; s++) sb_printf(&out, " %s=%lld", g->symname[s], (long long)g->symval[s]);
    sb_putc(&out, '\n');
    for (int k = 0; k < g->nt; k++)
        if (g->t[k].kind == GK_INDEX)
            sb_printf(&out, "# index: %s<%lld\n", g->t[k].name,
                      (long long)(g->t[k].idx_hi == INT64_MAX ? 7 : g->t[k].idx_hi));
    sb_puts(&out, "def f(");
    int np = 0;
    for (int k = 0; k < g->nt; k++) {
        const gen_tensor *t = &g->t[k];
        if (t->kind == GK_NEW) continue;
        sb_printf(&out, "%s%s(", np++ ? ", " : "", tsl_dtype_name(t->dt));
        for (int d = 0; d < t->rank; d++) sb_printf(&out, "%s%s", d ? "," : "", g->symname[t->sym[d]]);
        sb_printf(&out, ") %s", t->name);
    }
    if (g->has_scalar) sb_printf(&out, "%sfloat alpha", np++ ? ", " : "");
    sb_puts(&out, ") -> (");
    int no = 0;
    for (int k = 0; k < g->nt; k++) {
        const gen_tensor *t = &g->t[k];
        int is_out = t->kind == GK_INOUT ||
                     (t->kind == GK_NEW && t->defined && (!t->read_later || gen_p(g, 40)));
        if (is_out) sb_printf(&out, "%s%s", no++ ? ", " : "", t->name);
    }
    sb_printf(&out, ") {\n%s}\n", sb_str(&body));
    sb_free(&body);
    for (int k = 0; k < g->nstrs; k++) free(g->strs[k]);
    free(g->strs);
    free(g);
    return sb_take(&out);
}

/* ---- the runner -------------------------------------------------------- */

enum { RUN_MAX_NAMES = 16 };

typedef struct run_header {
    gen_values vals;
    int nsize;
    char size_name[RUN_MAX_NAMES][16];
    int64_t size_val[RUN_MAX_NAMES];
    int nindex;
    char index_name[RUN_MAX_NAMES][16];
    int64_t index_hi[RUN_MAX_NAMES];
} run_header;

/* Read `# sizes: M=3 N=7` and `# index: I<5` lines (anywhere in the text). */
static void run_parse_header(const char *text, run_header *h)
{
    memset(h, 0, sizeof *h);
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (!strncmp(line, "# values:", 9)) {
            const char *p = line + 9;
            while (*p == ' ') p++;
            for (int k = GV_EXTREME_NEG; k >= 0; k--) /* longest name first */
                if (!strncmp(p, gen_values_name[k], strlen(gen_values_name[k]))) {
                    h->vals = (gen_values)k;
                    break;
                }
            continue;
        }
        int is_size = strncmp(line, "# sizes:", 8) == 0, is_index = strncmp(line, "# index:", 8) == 0;
        if (!is_size && !is_index) continue;
        const char *p = line + 8;
        for (;;) {
            while (*p == ' ' || *p == '\t' || *p == ',') p++;
            char name[16];
            int n = 0;
            while (n < 15 && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                              (*p >= '0' && *p <= '9') || *p == '_'))
                name[n++] = *p++;
            name[n] = 0;
            char sep = *p;
            if (!n || (sep != '=' && sep != '<')) break;
            p++;
            char *end;
            long long v = strtoll(p, &end, 10);
            if (end == p) break;
            p = end;
            if (is_size && h->nsize < RUN_MAX_NAMES) {
                snprintf(h->size_name[h->nsize], 16, "%s", name);
                h->size_val[h->nsize++] = v;
            } else if (is_index && h->nindex < RUN_MAX_NAMES) {
                snprintf(h->index_name[h->nindex], 16, "%s", name);
                h->index_hi[h->nindex++] = v;
            }
        }
    }
}

static int run_is_float(tsl_dtype t)
{
    return t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16 || t == TSL_DTYPE_F32 || t == TSL_DTYPE_F64;
}

static int64_t run_numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

/* Integers as their exact 64-bit patterns (a double holds 53 bits). */
static void run_store_int(tsl_dtype t, void *p, int64_t v)
{
    if (t == TSL_DTYPE_BOOL) v = v != 0;
    uint64_t u = (uint64_t)v;
    unsigned char b[8];
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(u >> (8 * k));
    memcpy(p, b, tsl_dtype_size(t));
}

static int64_t run_load_int(tsl_dtype t, const void *p)
{
    size_t n = tsl_dtype_size(t);
    unsigned char b[8] = {0};
    memcpy(b, p, n);
    uint64_t u = 0;
    for (size_t k = 0; k < n; k++) u |= (uint64_t)b[k] << (8 * k);
    if (n < 8 && dtype_info_of(t)->is_signed && ((u >> (8 * n - 1)) & 1)) u |= ~UINT64_C(0) << (8 * n);
    return (int64_t)u;
}

/* Poison for an integer output: a value no generated program produces,
 * different per target so that two unwritten elements never agree. */
static double run_poison(tsl_dtype t, int side)
{
    if (run_is_float(t)) return NAN;
    if (t == TSL_DTYPE_BOOL) return side;
    return side ? -1234567 : 7654321;
}

/* An integer input element drawn as `vals` says (gen_values). */
static int64_t run_int_value(uint64_t *rng, tsl_dtype t, gen_values vals)
{
    if (t == TSL_DTYPE_BOOL) return gen_chance(rng, 50);
    int bits = (int)dtype_info_of(t)->bits, sgn = dtype_info_of(t)->is_signed;
    int64_t lo = !sgn ? 0 : bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
    int64_t hi = !sgn ? (bits == 64 ? -1 : (int64_t)((UINT64_C(1) << bits) - 1))
                      : bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
    int64_t small = gen_int(rng, 1, 3);
    switch (vals) {
    case GV_SMALL: return sgn && gen_chance(rng, 50) ? -small : small;
    case GV_NEGATIVE: return sgn ? -small : small;
    case GV_EXTREME_NEG:
        if (!sgn) { /* the top half: what a negative value wraps to */
            uint64_t top = (uint64_t)hi - (uint64_t)gen_int(rng, 0, 3);
            return (int64_t)(gen_chance(rng, 30) ? (uint64_t)hi / 2 + 1 + (uint64_t)gen_int(rng, 0, 9) : top);
        }
        switch (gen_int(rng, 0, 4)) {
        case 0: return lo;
        case 1: return lo + gen_int(rng, 1, 3);
        case 2: return -small;
        case 3: return lo / 2 - gen_int(rng, 0, 9);
        default: return bits == 64 ? -((INT64_C(1) << 53) + 1) : lo / 3;
        }
    default:
        switch (gen_int(rng, 0, 8)) {
        case 0: return lo;
        case 1: return (int64_t)((uint64_t)lo + (uint64_t)gen_int(rng, 1, 2));
        case 2: return hi;
        case 3: return (int64_t)((uint64_t)hi - (uint64_t)gen_int(rng, 1, 2));
        case 4: return sgn ? -1 : 1;
        case 5: return bits == 64 ? (INT64_C(1) << 53) + 1 : hi / 3;
        default: return sgn && gen_chance(rng, 50) ? -small : small;
        }
    }
}

typedef struct run_side {
    tsl_args *args;
    DLTensor *copy[32];      /* this side's copies of the tensor inputs */
    DLTensor *out[32];       /* outputs bound by us (NULL for in/out) */
    tsl_status st;
    char err[1024];
} run_side;

static void run_msg(char *msg, size_t len, const char *fmt, ...) TSL_PRINTF(3, 4);
static void run_msg(char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
}

static const char *run_target_name(tsl_target t)
{
    return t == TSL_TARGET_INTERP ? "interp" : t == TSL_TARGET_CPU ? "cpu" : "cuda";
}

/* Bind copies of the inputs and poisoned outputs, then run. */
static void run_one(tsl_program *p, tsl_context *ctx, DLTensor **inputs, const double *scalars,
                    int side, tsl_target target, run_side *r)
{
    r->args = tsl_args_create(p);
    if (!r->args) {
        r->st = TSL_ERR_NOMEM;
        snprintf(r->err, sizeof r->err, "tsl_args_create failed");
        return;
    }
    int np = tsl_program_param_count(p);
    for (int i = 0; i < np && i < 32; i++) {
        tsl_param_info info;
        tsl_program_param(p, i, &info);
        if (info.is_scalar) {
            r->st = tsl_args_set_scalar(r->args, info.name, scalars[i]);
        } else {
            const DLTensor *in = inputs[i];
            r->copy[i] = tsl_tensor_alloc(info.dtype, in->ndim, in->shape);
            TSL_ASSERT(r->copy[i]);
            memcpy(r->copy[i]->data, in->data, (size_t)run_numel(in) * tsl_dtype_size(info.dtype));
            r->st = tsl_args_set_tensor(r->args, info.name, r->copy[i]);
        }
        if (r->st) goto fail;
    }
    if ((r->st = tsl_args_infer(r->args))) goto fail;
    int no = tsl_program_output_count(p);
    for (int o = 0; o < no && o < 32; o++) {
        const char *name = tsl_program_output_name(p, o);
        int inout = 0;
        for (int i = 0; i < np; i++) {
            tsl_param_info info;
            tsl_program_param(p, i, &info);
            inout |= strcmp(info.name, name) == 0;
        }
        if (inout) continue;
        int rank;
        int64_t shape[TSL_MAX_RANK];
        tsl_dtype dt;
        if ((r->st = tsl_args_output_shape(r->args, name, &rank, shape, &dt))) goto fail;
        r->out[o] = tsl_tensor_alloc(dt, rank, shape);
        TSL_ASSERT(r->out[o]);
        int64_t n = run_numel(r->out[o]);
        size_t es = tsl_dtype_size(dt);
        for (int64_t k = 0; k < n; k++) {
            char *at = (char *)r->out[o]->data + (size_t)k * es;
            if (run_is_float(dt)) dtype_store(dt, at, run_poison(dt, side));
            else run_store_int(dt, at, (int64_t)run_poison(dt, side));
        }
        if ((r->st = tsl_args_set_output(r->args, name, r->out[o]))) goto fail;
    }
    if ((r->st = tsl_program_run(p, r->args, target))) goto fail;
    return;
fail:
    snprintf(r->err, sizeof r->err, "%s", tsl_context_error(ctx));
}

static void run_side_free(run_side *r)
{
    tsl_args_free(r->args);
    for (int i = 0; i < 32; i++) tsl_tensor_free(r->copy[i]), tsl_tensor_free(r->out[i]);
}

/* Compare output `name` of the two sides; 0 when they agree. With b NULL,
 * only check that a is fully written and finite. A float output passes
 * within tol x max(max|ref|, 1e-3), or with `floor_one` (outputs behind a
 * reduction, 16-bit outputs) tol x max(max|ref|, 1), as the CLI's --check:
 * there the targets accumulate or form products (tensor cores form f16
 * products exactly, the interpreter rounds them) in another order, an
 * error of the sum's size rather than of each small element. */
static int run_compare(const char *name, const DLTensor *a, const DLTensor *b, tsl_target other,
                       double tol_rel, int floor_one, char *msg, size_t msglen)
{
    tsl_dtype dt;
    if (tsl_dtype_from_dlpack(a->dtype, &dt)) {
        run_msg(msg, msglen, "output %s: unknown dtype", name);
        return 1;
    }
    int64_t n = run_numel(a);
    size_t es = tsl_dtype_size(dt);
    double maxabs = 0;
    if (!run_is_float(dt)) { /* integers: exact, bit for bit */
        for (int64_t k = 0; k < n; k++) {
            int64_t r = run_load_int(dt, (const char *)a->data + (size_t)k * es);
            if (dt != TSL_DTYPE_BOOL && r == (int64_t)run_poison(dt, 0) && !b) {
                run_msg(msg, msglen, "output %s[%lld]: interpreter leaves it unwritten", name, (long long)k);
                return 1;
            }
        }
        if (!b) return 0;
        if (b->ndim != a->ndim || run_numel(b) != n) {
            run_msg(msg, msglen, "output %s: %s has rank %d and %lld elements, interpreter %d and %lld", name,
                    run_target_name(other), b->ndim, (long long)run_numel(b), a->ndim, (long long)n);
            return 1;
        }
        for (int64_t k = 0; k < n; k++) {
            int64_t r = run_load_int(dt, (const char *)a->data + (size_t)k * es);
            int64_t x = run_load_int(dt, (const char *)b->data + (size_t)k * es);
            if (x != r) {
                run_msg(msg, msglen, "output %s (%s, %lld elements) element %lld: %s gives %lld (0x%llx), "
                        "interpreter %lld (0x%llx)",
                        name, tsl_dtype_name(dt), (long long)n, (long long)k, run_target_name(other), (long long)x,
                        (unsigned long long)x, (long long)r, (unsigned long long)r);
                return 1;
            }
        }
        return 0;
    }
    for (int64_t k = 0; k < n; k++) {
        double r = dtype_load(dt, (const char *)a->data + (size_t)k * es);
        if (!isfinite(r) || (!run_is_float(dt) && dt != TSL_DTYPE_BOOL && r == run_poison(dt, 0))) {
            run_msg(msg, msglen, "output %s[%lld]: interpreter gives %g (unwritten or not finite)",
                    name, (long long)k, r);
            return 1;
        }
        maxabs = fmax(maxabs, fabs(r));
    }
    if (!b) return 0;
    if (b->ndim != a->ndim || run_numel(b) != n) {
        run_msg(msg, msglen, "output %s: %s has rank %d and %lld elements, interpreter %d and %lld",
                name, run_target_name(other), b->ndim, (long long)run_numel(b), a->ndim, (long long)n);
        return 1;
    }
    double rel = tol_rel;
    double tol = rel * fmax(maxabs, floor_one ? 1.0 : 1e-3);
    for (int64_t k = 0; k < n; k++) {
        double r = dtype_load(dt, (const char *)a->data + (size_t)k * es);
        double x = dtype_load(dt, (const char *)b->data + (size_t)k * es);
        if (!(fabs(x - r) <= tol)) {
            run_msg(msg, msglen,
                    "output %s (%s, %lld elements) element %lld: %s gives %.12g, interpreter %.12g "
                    "(tolerance %.3g = %g x max|ref| %.6g)",
                    name, tsl_dtype_name(dt), (long long)n, (long long)k, run_target_name(other), x, r,
                    tol, rel, maxabs);
            return 1;
        }
    }
    return 0;
}

dt_verdict dt_run(const char *text, const char *filename, uint64_t data_seed, tsl_target other,
                  char *msg, size_t msglen)
{
    run_header h;
    run_parse_header(text, &h);
    msg[0] = 0;
    dt_verdict v = DT_FAIL;
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    DLTensor *inputs[32] = {0};
    double scalars[32] = {0};
    run_side side[2];
    memset(side, 0, sizeof side);
    if (!ctx) {
        run_msg(msg, msglen, "tsl_context_create failed");
        return DT_FAIL;
    }
    if (tsl_program_compile(ctx, text, filename, NULL, &p)) {
        run_msg(msg, msglen, "the front end rejects the program:\n%s", tsl_context_error(ctx));
        goto out;
    }
    int np = tsl_program_param_count(p);
    if (np > 32 || tsl_program_output_count(p) > 32) {
        run_msg(msg, msglen, "too many parameters or outputs for the runner");
        goto out;
    }
    uint64_t rng = data_seed;
    for (int i = 0; i < np; i++) {
        tsl_param_info info;
        tsl_program_param(p, i, &info);
        double sign = gen_chance(&rng, 50) ? 1 : -1;
        if (info.is_scalar) {
            scalars[i] = sign * (0.1 + 0.9 * (double)(gen_next(&rng) >> 11) / 9007199254740992.0);
            continue;
        }
        const char *dims[TSL_MAX_RANK];
        int64_t shape[TSL_MAX_RANK];
        tsl_program_param_dims(p, i, dims);
        for (int d = 0; d < info.rank; d++) {
            int k = 0;
            while (k < h.nsize && (!dims[d] || strcmp(h.size_name[k], dims[d]) != 0)) k++;
            if (k == h.nsize) {
                run_msg(msg, msglen, "no '# sizes:' value for dim %d (%s) of '%s'", d,
                        dims[d] ? dims[d] : "unnamed", info.name);
                goto out;
            }
            shape[d] = h.size_val[k];
        }
        int64_t hi = 0;
        for (int k = 0; k < h.nindex; k++)
            if (strcmp(h.index_name[k], info.name) == 0) hi = h.index_hi[k];
        DLTensor *t = inputs[i] = tsl_tensor_alloc(info.dtype, info.rank, shape);
        TSL_ASSERT(t);
        size_t es = tsl_dtype_size(info.dtype);
        int neg = h.vals == GV_NEGATIVE || h.vals == GV_EXTREME_NEG;
        for (int64_t k = 0; k < run_numel(t); k++) {
            char *at = (char *)t->data + (size_t)k * es;
            if (hi > 0) {
                run_store_int(info.dtype, at, gen_int(&rng, 0, hi - 1));
            } else if (!run_is_float(info.dtype)) {
                run_store_int(info.dtype, at, run_int_value(&rng, info.dtype, h.vals));
            } else {
                double x = (neg || gen_chance(&rng, 50) ? -1 : 1) *
                           (0.1 + 0.9 * (double)(gen_next(&rng) >> 11) / 9007199254740992.0);
                dtype_store(info.dtype, at, x);
            }
        }
    }
    run_one(p, ctx, inputs, scalars, 0, TSL_TARGET_INTERP, &side[0]);
    run_one(p, ctx, inputs, scalars, 1, other, &side[1]);
    int absent = side[1].st == TSL_ERR_UNAVAILABLE && strstr(side[1].err, "not available yet");
    if (side[0].st && !absent && side[1].st == side[0].st) {
        /* rejected alike: sizes that make a guarded read invalid, a gather
         * out of range, a division by zero are errors on every target */
        v = DT_PASS;
        goto out;
    }
    if (side[0].st) {
        run_msg(msg, msglen, "the interpreter fails (%s) where %s %s:\n%s", tsl_status_name(side[0].st),
                run_target_name(other), absent ? "is not available" : side[1].st ? tsl_status_name(side[1].st) : "runs",
                side[0].err);
        goto out;
    }
    if (side[1].st && !absent) {
        run_msg(msg, msglen, "%s fails (%s) where the interpreter runs:\n%s", run_target_name(other),
                tsl_status_name(side[1].st), side[1].err);
        goto out;
    }
    int no = tsl_program_output_count(p);
    for (int o = 0; o < no; o++) {
        const char *name = tsl_program_output_name(p, o);
        const DLTensor *a = tsl_args_output(side[0].args, name);
        const DLTensor *b = absent ? NULL : tsl_args_output(side[1].args, name);
        if (!a || (!absent && !b)) {
            run_msg(msg, msglen, "output %s: no tensor after the run", name);
            goto out;
        }
        /* the one rule of --check and the tuner: the narrowest float the
         * output is computed through, grown with its reductions */
        tsl_dtype odt;
        tsl_dtype_from_dlpack(a->dtype, &odt);
        int floor_one = tsl_args_reduction_length(side[0].args, name) > 1 ||
                        (run_is_float(odt) && tsl_dtype_size(odt) == 2);
        double tol = tsl_args_tolerance(side[0].args, name);
        if (run_compare(name, a, b, other, tol, floor_one, msg, msglen)) goto out;
    }
    v = absent ? DT_PASS_INTERP : DT_PASS;
out:
    run_side_free(&side[0]);
    run_side_free(&side[1]);
    for (int i = 0; i < 32; i++) tsl_tensor_free(inputs[i]);
    tsl_program_free(p);
    tsl_context_free(ctx);
    return v;
}
