/* sema.c — semantic checks of one def: resolve every name (tensor, scalar,
 * size symbol, index variable, builtin, cast), type every expression,
 * classify index variables (LHS = iteration, RHS only = reduction), and
 * check the rules of docs/language.md (reductions, in-place updates,
 * read-before-write, outputs written, ranks). Requires a parse tree;
 * guarantees a lang_def whose statements' vars have where ranges filled in
 * (ranges.c infers the rest). Stops at the def's first error.
 */
#include <string.h>

#include "lang/lang_int.h"

typedef struct sema {
    tsl_arena *a;
    const tsl_source *src;
    tsl_diag *d;
    lang_def *def;
    int ctensors, csizes, cparams, coutputs;
    bool *defined;  /* per tensor: holds values before the current statement */
    bool *known;    /* per tensor: rank and dtype are known */
    bool failed;
    /* the statement being checked */
    const parse_stmt *ps;
    lang_stmt *st;
    int cvars;
    bool *used;     /* per var (grows with vars) */
    int cused;
    const char *where_var; /* the where clause whose bounds are being read */
} sema;

static void sema_err(sema *S, size_t offset, tsl_status st, const char *fmt, ...)
    TSL_PRINTF(4, 5);

static void sema_err(sema *S, size_t offset, tsl_status st, const char *fmt, ...)
{
    if (S->failed) return;
    S->failed = true;
    va_list ap;
    va_start(ap, fmt);
    strbuf b = {0};
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    diag_error_at(S->d, S->src, offset, st, "%s", sb_str(&b));
    sb_free(&b);
}

/* ---- names ---------------------------------------------------------------- */

static lang_tensor *sema_tensor(sema *S, const char *name)
{
    return (lang_tensor *)lang_def_tensor(S->def, name);
}

static int sema_size(sema *S, const char *name)
{
    return lang_def_size_slot(S->def, name);
}

static int sema_size_add(sema *S, const char *name, size_t offset)
{
    int slot = sema_size(S, name);
    if (slot >= 0) return slot;
    lang_def *def = S->def;
    int n = def->nsizes, c = S->csizes;
    ARENA_PUSH(S->a, def->sizes, def->nsizes, S->csizes, name);
    ARENA_PUSH(S->a, def->size_offsets, n, c, offset);
    strmap_put(&def->size_index, name, strlen(name), def->nsizes - 1);
    return def->nsizes - 1;
}

static lang_tensor *sema_tensor_add(sema *S, const char *name, size_t offset, int flags)
{
    lang_tensor *t = arena_alloc(S->a, sizeof *t);
    t->name = name;
    t->offset = offset;
    t->flags = flags;
    t->param_index = -1;
    t->output_index = -1;
    t->first_stmt = -1;
    t->index = S->def->ntensors;
    ARENA_PUSH(S->a, S->def->tensors, S->def->ntensors, S->ctensors, t);
    strmap_put(&S->def->tensor_index, name, strlen(name), t->index);
    return t;
}

static int sema_var(sema *S, const char *name)
{
    for (int i = 0; i < S->st->nvars; i++)
        if (!strcmp(S->st->vars[i].name, name)) return i;
    return -1;
}

static int sema_var_add(sema *S, const char *name, size_t offset)
{
    int v = sema_var(S, name);
    if (v >= 0) return v;
    lang_var var = {.name = name, .offset = offset};
    int n = S->st->nvars;
    ARENA_PUSH(S->a, S->st->vars, S->st->nvars, S->cvars, var);
    ARENA_PUSH(S->a, S->used, n, S->cused, false);
    return S->st->nvars - 1;
}

/* ---- builtins -------------------------------------------------------------- */

static const struct {
    const char *name;
    lang_builtin b;
} sema_builtins[] = {
    {"exp", LANG_EXP},     {"expf", LANG_EXP},       {"log", LANG_LOG},
    {"logf", LANG_LOG},    {"sqrt", LANG_SQRT},      {"sqrtf", LANG_SQRT},
    {"rsqrt", LANG_RSQRT}, {"rsqrtf", LANG_RSQRT},   {"tanh", LANG_TANH},
    {"tanhf", LANG_TANH},  {"sigmoid", LANG_SIGMOID}, {"erf", LANG_ERF},
    {"erff", LANG_ERF},    {"abs", LANG_ABS},        {"fabs", LANG_ABS},
    {"fabsf", LANG_ABS},   {"max", LANG_MAX},        {"fmax", LANG_MAX},
    {"fmaxf", LANG_MAX},   {"min", LANG_MIN},        {"fmin", LANG_MIN},
    {"fminf", LANG_MIN},   {"pow", LANG_POW},        {"powf", LANG_POW},
};

static const int sema_builtin_arity[] = {
#define X(n, s, ar) ar,
    LANG_BUILTINS(X)
#undef X
};

static int sema_builtin(const char *name)
{
    for (size_t i = 0; i < TSL_COUNTOF(sema_builtins); i++)
        if (!strcmp(sema_builtins[i].name, name)) return (int)sema_builtins[i].b;
    return -1;
}

/* ---- types ----------------------------------------------------------------- */

/* 0 bool, 1 integer, 2 float */
static int sema_cat(tsl_dtype t)
{
    if (t == TSL_DTYPE_BOOL) return 0;
    return dtype_info_of(t)->is_float ? 2 : 1;
}

static tsl_dtype sema_int_type(int bits, bool is_signed)
{
    switch (bits) {
    case 8: return is_signed ? TSL_DTYPE_I8 : TSL_DTYPE_U8;
    case 16: return is_signed ? TSL_DTYPE_I16 : TSL_DTYPE_U16;
    case 32: return is_signed ? TSL_DTYPE_I32 : TSL_DTYPE_U32;
    default: return is_signed ? TSL_DTYPE_I64 : TSL_DTYPE_U64;
    }
}

/* Promotion of two strong types (docs/language.md "Types"). */
static tsl_dtype sema_promote_strong(tsl_dtype x, tsl_dtype y)
{
    if (x == y) return x;
    int cx = sema_cat(x), cy = sema_cat(y);
    if (cx != cy) return cx > cy ? x : y;
    const dtype_info *ix = dtype_info_of(x), *iy = dtype_info_of(y);
    if (cx == 2) {
        /* f16 with bf16 -> f32; else the wider */
        if (ix->bits == iy->bits) return TSL_DTYPE_F32;
        return ix->bits > iy->bits ? x : y;
    }
    if (ix->is_signed == iy->is_signed) return ix->bits >= iy->bits ? x : y;
    const dtype_info *s = ix->is_signed ? ix : iy, *u = ix->is_signed ? iy : ix;
    if (s->bits > u->bits) return ix->is_signed ? x : y;
    return sema_int_type(u->bits * 2 > 64 ? 64 : u->bits * 2, true);
}

/* The standard type a low-bit value computes in (docs/lowbit.md): the
 * low-bit integers int32, the low-bit floats float32; others unchanged.
 * Arithmetic never happens in a low-bit type; a copy keeps it. */
static tsl_dtype sema_std(tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(t);
    if (d->is_float && d->bits <= 8) return TSL_DTYPE_F32;
    if (!d->is_float && t != TSL_DTYPE_BOOL && d->bits < 8) return TSL_DTYPE_I32;
    return t;
}

/* Promotion with weak literals: an integer literal takes the other side's
 * type; a float literal takes a float other side's type, else float32.
 * Two literals give the wider (1 + 4294967296 is int64, as the literal
 * that does not fit int32). */
static tsl_dtype sema_promote(tsl_dtype x, bool wx, tsl_dtype y, bool wy, bool *weak)
{
    x = sema_std(x);
    y = sema_std(y);
    *weak = wx && wy;
    if (wx && wy) return sema_promote_strong(x, y);
    if (wx || wy) {
        tsl_dtype w = wx ? x : y, s = wx ? y : x;
        if (sema_cat(w) == 2) return sema_cat(s) == 2 ? s : TSL_DTYPE_F32;
        return s == TSL_DTYPE_BOOL ? TSL_DTYPE_I32 : s;
    }
    return sema_promote_strong(x, y);
}

/* ---- expressions ------------------------------------------------------------ */

/* Where an expression starts (a binary node's own offset is its operator). */
static size_t sema_start(const parse_node *p)
{
    while (p->kind == P_BINARY || p->kind == P_SELECT) p = p->args[0];
    return p->offset;
}

static lang_expr *sema_new(sema *S, lang_expr_kind k, const parse_node *p, tsl_dtype t)
{
    lang_expr *e = arena_alloc(S->a, sizeof *e);
    e->kind = k;
    e->offset = sema_start(p);
    e->type = t;
    e->optype = t;
    e->affine = true;
    return e;
}

static void sema_args(sema *S, lang_expr *e, int n)
{
    e->nargs = n;
    e->args = arena_alloc(S->a, sizeof(lang_expr *) * (size_t)(n ? n : 1));
}

static lang_expr *sema_expr(sema *S, const parse_node *p, bool *weak);

/* A weak (literal-only) float operand takes the float type it meets, so
 * `x * 0.1` with x float64 multiplies by the double 0.1 and with x float16
 * by 0.1 rounded to float16. Integer-typed parts keep their type (and their
 * integer division); the recursion stays inside literal-only subtrees. */
static void sema_retype_weak(lang_expr *e, tsl_dtype t)
{
    if (sema_cat(t) != 2 || sema_cat(e->type) != 2) return;
    switch (e->kind) {
    case LANG_E_FLOAT: e->type = e->optype = t; return;
    case LANG_E_UNARY:
    case LANG_E_BINARY:
    case LANG_E_SELECT:
    case LANG_E_CALL:
        e->type = e->optype = t;
        for (int k = 0; k < e->nargs; k++) sema_retype_weak(e->args[k], t);
        return;
    default: return;
    }
}

static lang_expr *sema_ident(sema *S, const parse_node *p, bool *weak)
{
    *weak = false;
    lang_tensor *t = sema_tensor(S, p->name);
    if (t && t->is_scalar) {
        lang_expr *e = sema_new(S, LANG_E_SCALAR, p, t->dtype);
        e->tensor = t;
        return e;
    }
    int slot = sema_size(S, p->name);
    if (slot >= 0) {
        lang_expr *e = sema_new(S, LANG_E_SIZE, p, TSL_DTYPE_I64);
        e->slot = slot;
        return e;
    }
    int v = sema_var(S, p->name);
    if (v >= 0) {
        lang_expr *e = sema_new(S, LANG_E_INDEX, p, TSL_DTYPE_I64);
        e->slot = v;
        S->used[v] = true;
        return e;
    }
    if (t) {
        sema_err(S, p->offset, TSL_ERR_SEMANTIC, "tensor '%s' is used without indices; write %s(...)%s",
                 p->name, p->name, t->rank == 0 ? " (for a zero-dim tensor: name())" : "");
        return NULL;
    }
    sema_err(S, p->offset, TSL_ERR_SEMANTIC,
             "unknown name '%s' (not a parameter, size symbol, or index variable of this statement)",
             p->name);
    return NULL;
}

static lang_expr *sema_access(sema *S, const parse_node *p, lang_tensor *t)
{
    if (t->param_index < 0 && !S->defined[t->index]) {
        if (t == S->st->lhs)
            sema_err(S, p->offset, TSL_ERR_SEMANTIC,
                     "'%s' is read before it is written: this is its first definition%s", t->name,
                     t->flags & LANG_TENSOR_OUTPUT ? " (to read caller values make it an in/out parameter)" : "");
        else
            sema_err(S, p->offset, TSL_ERR_SEMANTIC,
                     "'%s' is read before it is written (no earlier statement defines it)", t->name);
        return NULL;
    }
    if (p->nargs != t->rank) {
        sema_err(S, p->offset, TSL_ERR_SEMANTIC, "'%s' has rank %d but is indexed with %d %s", t->name,
                 t->rank, p->nargs, p->nargs == 1 ? "index" : "indices");
        return NULL;
    }
    lang_expr *e = sema_new(S, LANG_E_ACCESS, p, t->dtype);
    e->tensor = t;
    sema_args(S, e, p->nargs);
    for (int k = 0; k < p->nargs; k++) {
        bool w;
        lang_expr *x = sema_expr(S, p->args[k], &w);
        if (!x) return NULL;
        if (sema_cat(x->type) != 1) {
            sema_err(S, x->offset, TSL_ERR_SEMANTIC,
                     "index %d of '%s' has type %s; indices must be integers%s", k, t->name,
                     dtype_info_of(x->type)->name,
                     x->kind == LANG_E_ACCESS ? " (a gather must read an integer tensor)" : "");
            return NULL;
        }
        e->args[k] = x;
    }
    if (t == S->st->lhs) {
        S->st->reads_lhs = true;
        bool same = p->nargs == S->st->niter;
        for (int k = 0; same && k < p->nargs; k++)
            same = e->args[k]->kind == LANG_E_INDEX && e->args[k]->slot == k;
        if (!same) {
            sema_err(S, p->offset, TSL_ERR_SEMANTIC,
                     "in-place update reads elements the statement overwrites: '%s' must be read "
                     "at exactly the left-hand side's indices (use a temporary)",
                     t->name);
            return NULL;
        }
    }
    e->affine = false;
    return e;
}

static lang_expr *sema_call(sema *S, const parse_node *p, bool *weak)
{
    *weak = false;
    lang_tensor *t = sema_tensor(S, p->name);
    if (t && t->is_scalar) {
        sema_err(S, p->offset, TSL_ERR_SEMANTIC, "'%s' is a scalar parameter; write %s without '()'",
                 p->name, p->name);
        return NULL;
    }
    if (t) return sema_access(S, p, t);
    if (sema_size(S, p->name) >= 0) {
        sema_err(S, p->offset, TSL_ERR_SEMANTIC, "'%s' is a size symbol, not a tensor or function",
                 p->name);
        return NULL;
    }
    tsl_dtype ct;
    if (dtype_parse(p->name, strlen(p->name), &ct) == 0) {
        if (p->nargs != 1) {
            sema_err(S, p->offset, TSL_ERR_SEMANTIC, "cast %s(...) takes 1 argument, not %d", p->name,
                     p->nargs);
            return NULL;
        }
        bool w;
        lang_expr *x = sema_expr(S, p->args[0], &w);
        if (!x) return NULL;
        lang_expr *e = sema_new(S, LANG_E_CAST, p, ct);
        sema_args(S, e, 1);
        e->args[0] = x;
        e->affine = false;
        return e;
    }
    int b = sema_builtin(p->name);
    if (b < 0) {
        sema_err(S, p->offset, TSL_ERR_SEMANTIC,
                 "unknown tensor or function '%s' (builtins: exp log sqrt rsqrt tanh sigmoid erf "
                 "abs max min pow)",
                 p->name);
        return NULL;
    }
    if (p->nargs != sema_builtin_arity[b]) {
        sema_err(S, p->offset, TSL_ERR_SEMANTIC, "%s takes %d argument%s, not %d", p->name,
                 sema_builtin_arity[b], sema_builtin_arity[b] == 1 ? "" : "s", p->nargs);
        return NULL;
    }
    lang_expr *e = sema_new(S, LANG_E_CALL, p, TSL_DTYPE_F32);
    e->op = b;
    sema_args(S, e, p->nargs);
    bool w[2] = {false, false};
    for (int k = 0; k < p->nargs; k++)
        if (!(e->args[k] = sema_expr(S, p->args[k], &w[k]))) return NULL;
    tsl_dtype ty = sema_std(e->args[0]->type);
    *weak = w[0];
    if (p->nargs == 2) {
        ty = sema_promote(ty, w[0], e->args[1]->type, w[1], weak);
        for (int k = 0; k < 2 && !*weak; k++)
            if (w[k]) sema_retype_weak(e->args[k], ty);
    }
    if (b != LANG_ABS && b != LANG_MAX && b != LANG_MIN && sema_cat(ty) != 2) ty = TSL_DTYPE_F32;
    if (sema_cat(ty) == 0 && b == LANG_ABS) ty = TSL_DTYPE_I32;
    e->type = e->optype = ty;
    e->affine = false;
    return e;
}

static bool sema_is_cmp(int op)
{
    return op == LANG_EQ || op == LANG_NE || op == LANG_LT || op == LANG_LE || op == LANG_GT ||
           op == LANG_GE;
}

/* Every recursive call here follows the parse tree, whose depth the parser
 * capped at LANG_MAX_DEPTH. */
static lang_expr *sema_expr(sema *S, const parse_node *p, bool *weak)
{
    *weak = false;
    switch (p->kind) {
    case P_INT: {
        bool big = p->ival > INT32_MAX;
        lang_expr *e = sema_new(S, LANG_E_INT, p, big ? TSL_DTYPE_I64 : TSL_DTYPE_I32);
        e->ival = p->ival;
        *weak = true;
        return e;
    }
    case P_FLOAT: {
        lang_expr *e = sema_new(S, LANG_E_FLOAT, p, TSL_DTYPE_F32);
        e->fval = p->fval;
        e->affine = false;
        *weak = true;
        return e;
    }
    case P_IDENT: return sema_ident(S, p, weak);
    case P_CALL: return sema_call(S, p, weak);
    case P_UNARY: {
        bool w;
        lang_expr *x = sema_expr(S, p->args[0], &w);
        if (!x) return NULL;
        lang_expr *e = sema_new(S, LANG_E_UNARY, p, x->type);
        e->op = p->op;
        sema_args(S, e, 1);
        e->args[0] = x;
        if (p->op == LANG_NOT) {
            e->type = e->optype = TSL_DTYPE_BOOL;
        } else {
            *weak = w;
            if (x->type == TSL_DTYPE_BOOL) e->type = e->optype = TSL_DTYPE_I32;
            else e->type = e->optype = sema_std(x->type);
        }
        return e;
    }
    case P_BINARY: {
        bool wx, wy;
        lang_expr *x = sema_expr(S, p->args[0], &wx);
        if (!x) return NULL;
        lang_expr *y = sema_expr(S, p->args[1], &wy);
        if (!y) return NULL;
        lang_expr *e = sema_new(S, LANG_E_BINARY, p, x->type);
        e->op = p->op;
        sema_args(S, e, 2);
        e->args[0] = x;
        e->args[1] = y;
        if (p->op == LANG_AND || p->op == LANG_OR) {
            e->type = e->optype = TSL_DTYPE_BOOL;
            return e;
        }
        bool w;
        tsl_dtype t = sema_promote(x->type, wx, y->type, wy, &w);
        if (!w) {
            if (wx) sema_retype_weak(x, t);
            if (wy) sema_retype_weak(y, t);
        }
        if (sema_is_cmp(p->op)) {
            e->optype = t;
            e->type = TSL_DTYPE_BOOL;
            return e;
        }
        if (t == TSL_DTYPE_BOOL) t = TSL_DTYPE_I32;
        e->type = e->optype = t;
        *weak = w;
        return e;
    }
    case P_SELECT: {
        bool wc, wx, wy;
        lang_expr *c = sema_expr(S, p->args[0], &wc);
        if (!c) return NULL;
        lang_expr *x = sema_expr(S, p->args[1], &wx);
        if (!x) return NULL;
        lang_expr *y = sema_expr(S, p->args[2], &wy);
        if (!y) return NULL;
        lang_expr *e = sema_new(S, LANG_E_SELECT, p, x->type);
        sema_args(S, e, 3);
        e->args[0] = c;
        e->args[1] = x;
        e->args[2] = y;
        e->type = e->optype = sema_promote(x->type, wx, y->type, wy, weak);
        if (!*weak) {
            if (wx) sema_retype_weak(x, e->type);
            if (wy) sema_retype_weak(y, e->type);
        }
        e->affine = false;
        return e;
    }
    }
    TSL_ASSERT(0);
    return NULL;
}

/* ---- index variables -------------------------------------------------------- */

/* Collect the identifiers in index positions (inside a tensor access's
 * arguments) that name nothing else: they are index variables. */
static void sema_collect_vars(sema *S, const parse_node *p, bool in_index)
{
    if (p->kind == P_IDENT) {
        if (in_index && !sema_tensor(S, p->name) && sema_size(S, p->name) < 0)
            sema_var_add(S, p->name, p->offset);
        return;
    }
    bool idx = in_index;
    if (p->kind == P_CALL) {
        lang_tensor *t = sema_tensor(S, p->name);
        if (t && !t->is_scalar) idx = true;
    }
    for (int k = 0; k < p->nargs; k++) sema_collect_vars(S, p->args[k], idx);
}

static bool sema_is_stmt_index(sema *S, const parse_stmt *ps, const char *name);

/* A where bound: affine in size symbols and constants (plus min/max). */
static const lang_sexpr *sema_bound(sema *S, const parse_node *p)
{
    switch (p->kind) {
    case P_INT: return sexpr_const(S->a, p->ival);
    case P_IDENT: {
        int slot = sema_size(S, p->name);
        if (slot >= 0) return sexpr_sym(S->a, slot);
        if (S->ps && sema_is_stmt_index(S, S->ps, p->name)) {
            const char *w = S->where_var ? S->where_var : "j";
            sema_err(S, p->offset, TSL_ERR_SEMANTIC,
                     "'%s' is an index variable: a where bound must be a size expression (size symbols "
                     "and integer constants), the same for every point; for a range that depends on "
                     "'%s', give '%s' its whole range and mask the term instead, e.g. 'where %s in 0:N' "
                     "with '%s <= %s ? ... : 0' (the masked-off reads never happen)",
                     p->name, p->name, w, w, w, p->name);
            return NULL;
        }
        sema_err(S, p->offset, TSL_ERR_SEMANTIC,
                 "'%s' cannot appear in a where bound: bounds use size symbols and integer constants",
                 p->name);
        return NULL;
    }
    case P_UNARY:
        if (p->op == LANG_NEG) {
            const lang_sexpr *x = sema_bound(S, p->args[0]);
            return x ? sexpr_bin(S->a, LANG_SX_SUB, sexpr_const(S->a, 0), x) : NULL;
        }
        break;
    case P_BINARY: {
        lang_sexpr_kind k;
        switch (p->op) {
        case LANG_ADD: k = LANG_SX_ADD; break;
        case LANG_SUB: k = LANG_SX_SUB; break;
        case LANG_MUL: k = LANG_SX_MUL; break;
        case LANG_DIV: k = LANG_SX_FLOORDIV; break;
        default: goto bad;
        }
        const lang_sexpr *x = sema_bound(S, p->args[0]);
        const lang_sexpr *y = x ? sema_bound(S, p->args[1]) : NULL;
        return y ? sexpr_bin(S->a, k, x, y) : NULL;
    }
    case P_CALL: {
        int b = sema_builtin(p->name);
        if ((b == LANG_MIN || b == LANG_MAX) && p->nargs == 2) {
            const lang_sexpr *x = sema_bound(S, p->args[0]);
            const lang_sexpr *y = x ? sema_bound(S, p->args[1]) : NULL;
            return y ? sexpr_bin(S->a, b == LANG_MIN ? LANG_SX_MIN : LANG_SX_MAX, x, y) : NULL;
        }
        break;
    }
    default: break;
    }
bad:
    sema_err(S, p->offset, TSL_ERR_SEMANTIC,
             "a where bound must be built from size symbols and integer constants with + - * / min max");
    return NULL;
}

/* Does `name` clash with a size symbol, tensor or scalar? */
static bool sema_index_name_ok(sema *S, const char *name, size_t offset, const char *role)
{
    if (sema_size(S, name) >= 0) {
        sema_err(S, offset, TSL_ERR_SEMANTIC,
                 "'%s' is a size symbol and cannot be %s; use another name for the index", name,
                 role);
        return false;
    }
    lang_tensor *t = sema_tensor(S, name);
    if (t) {
        sema_err(S, offset, TSL_ERR_SEMANTIC, "'%s' is a %s and cannot be %s", name,
                 t->is_scalar ? "scalar parameter" : "tensor", role);
        return false;
    }
    return true;
}

/* ---- statements ----------------------------------------------------------- */

static bool sema_stmt(sema *S, const parse_stmt *ps, lang_stmt *st)
{
    S->ps = ps;
    S->st = st;
    S->cvars = 0;
    S->used = NULL;
    S->cused = 0;
    st->offset = ps->offset;
    st->op = ps->op;
    st->bang = ps->bang;

    lang_tensor *t = sema_tensor(S, ps->lhs);
    if (!t) {
        if (sema_size(S, ps->lhs) >= 0)
            sema_err(S, ps->offset, TSL_ERR_SEMANTIC, "'%s' is a size symbol and cannot be assigned",
                     ps->lhs);
        TSL_ASSERT(S->failed);
        return false;
    }
    if (t->is_scalar) {
        sema_err(S, ps->offset, TSL_ERR_SEMANTIC, "cannot assign to scalar parameter '%s'", t->name);
        return false;
    }
    if (!(t->flags & (LANG_TENSOR_OUTPUT | LANG_TENSOR_TEMP))) {
        sema_err(S, ps->offset, TSL_ERR_SEMANTIC,
                 "cannot assign to input '%s'; list it after '->' to make it an in/out parameter",
                 t->name);
        return false;
    }
    st->lhs = t;

    /* LHS indices: plain distinct index variables, in order */
    for (int k = 0; k < ps->nidx; k++) {
        const parse_node *p = ps->idx[k];
        if (p->kind != P_IDENT) {
            sema_err(S, sema_start(p), TSL_ERR_SEMANTIC,
                     "left-hand side index %d of '%s' must be a plain index variable (move the "
                     "expression to the right-hand side)",
                     k, t->name);
            return false;
        }
        if (!sema_index_name_ok(S, p->name, p->offset, "a left-hand side index")) return false;
        if (sema_var(S, p->name) >= 0) {
            sema_err(S, p->offset, TSL_ERR_SEMANTIC,
                     "index variable '%s' appears twice on the left-hand side (a diagonal cannot be "
                     "written; use distinct variables)",
                     p->name);
            return false;
        }
        int v = sema_var_add(S, p->name, p->offset);
        S->used[v] = true;
    }
    st->niter = ps->nidx;
    if (ps->nidx > TSL_MAX_RANK) {
        sema_err(S, ps->offset, TSL_ERR_SEMANTIC, "'%s' has %d indices; at most %d dimensions",
                 t->name, ps->nidx, TSL_MAX_RANK);
        return false;
    }
    if (S->known[t->index] && t->rank != ps->nidx) {
        sema_err(S, ps->offset, TSL_ERR_SEMANTIC, "'%s' has rank %d but is indexed with %d %s",
                 t->name, t->rank, ps->nidx, ps->nidx == 1 ? "index" : "indices");
        return false;
    }

    /* where variables */
    for (int w = 0; w < ps->nwheres; w++) {
        const parse_where *pw = &ps->wheres[w];
        if (!sema_index_name_ok(S, pw->var, pw->offset, "a where variable")) return false;
        for (int u = 0; u < w; u++)
            if (!strcmp(ps->wheres[u].var, pw->var)) {
                sema_err(S, pw->offset, TSL_ERR_SEMANTIC, "'%s' has two where clauses", pw->var);
                return false;
            }
        int v = sema_var_add(S, pw->var, pw->offset);
        S->where_var = pw->var;
        const lang_sexpr *lo = sema_bound(S, pw->lo);
        const lang_sexpr *hi = lo ? sema_bound(S, pw->hi) : NULL;
        S->where_var = NULL;
        if (!hi) return false;
        if (lo->kind == LANG_SX_CONST && hi->kind == LANG_SX_CONST && hi->value <= lo->value) {
            sema_err(S, pw->offset, TSL_ERR_RANGE, "empty range for '%s': %lld:%lld is [%lld, %lld) for any sizes",
                     pw->var, (long long)lo->value, (long long)hi->value, (long long)lo->value,
                     (long long)hi->value);
            return false;
        }
        st->vars[v].range.lo = lo;
        st->vars[v].range.hi = hi;
        st->vars[v].from_where = true;
    }
    sema_collect_vars(S, ps->rhs, false);
    if (st->nvars > LANG_MAX_VARS) {
        const lang_var *x = &st->vars[LANG_MAX_VARS];
        sema_err(S, x->offset, TSL_ERR_SEMANTIC,
                 "too many index variables in one statement: '%s' would be number %d; at most %d "
                 "are supported",
                 x->name, LANG_MAX_VARS + 1, LANG_MAX_VARS);
        return false;
    }

    /* the right-hand side */
    bool weak;
    st->rhs = sema_expr(S, ps->rhs, &weak);
    if (!st->rhs) return false;
    for (int v = 0; v < st->nvars; v++) {
        if (!S->used[v]) {
            sema_err(S, st->vars[v].offset, TSL_ERR_SEMANTIC,
                     "where variable '%s' is not used in the statement", st->vars[v].name);
            return false;
        }
        if (!st->vars[v].from_where) {
            st->vars[v].range.lo = sexpr_const(S->a, 0);
            st->vars[v].range.hi = NULL;
        }
    }
    if (st->op == LANG_ASSIGN && st->nvars > st->niter) {
        const lang_var *r = &st->vars[st->niter];
        sema_err(S, r->offset, TSL_ERR_SEMANTIC,
                 "'%s' appears only on the right-hand side, so it is a reduction index, but the "
                 "statement uses '='; write '+=!' (or max=!, min=!, *=!) to reduce over it",
                 r->name);
        return false;
    }
    if (st->op != LANG_ASSIGN && !st->bang && !S->defined[t->index]) {
        sema_err(S, ps->op_offset, TSL_ERR_SEMANTIC,
                 "'%s' accumulates into '%s', which holds no values yet; write '%s!' to start "
                 "from the identity, or make '%s' an in/out parameter",
                 lang_assign_name(st->op), t->name, lang_assign_name(st->op), t->name);
        return false;
    }

    /* the LHS's type and rank come from its first definition */
    if (!S->known[t->index]) {
        S->known[t->index] = true;
        t->rank = st->niter;
        t->dtype = st->rhs->type;
        t->offset = t->flags & LANG_TENSOR_TEMP ? ps->offset : t->offset;
    }
    if (t->first_stmt < 0) t->first_stmt = st->index;
    S->defined[t->index] = true;
    return true;
}

/* ---- the def ------------------------------------------------------------- */

static bool sema_params(sema *S, const parse_def *pd)
{
    lang_def *def = S->def;
    for (int i = 0; i < pd->nparams; i++) {
        const parse_param *pp = &pd->params[i];
        if (sema_tensor(S, pp->name)) {
            sema_err(S, pp->offset, TSL_ERR_SEMANTIC, "duplicate parameter name '%s'", pp->name);
            return false;
        }
        lang_tensor *t = sema_tensor_add(S, pp->name, pp->offset, LANG_TENSOR_INPUT);
        t->is_scalar = pp->is_scalar;
        t->dtype = pp->dtype;
        t->rank = pp->rank;
        if (t->rank > TSL_MAX_RANK) {
            sema_err(S, pp->offset, TSL_ERR_SEMANTIC, "'%s' has rank %d; at most %d dimensions",
                     pp->name, t->rank, TSL_MAX_RANK);
            return false;
        }
        t->param_index = def->nparams;
        t->dims = arena_alloc(S->a, sizeof(lang_dim) * (size_t)(t->rank + 1));
        t->shape = arena_alloc(S->a, sizeof(lang_sexpr *) * (size_t)(t->rank + 1));
        for (int k = 0; k < t->rank; k++) {
            const parse_dim *pdim = &pp->dims[k];
            if (pdim->sym) {
                t->dims[k].sym = sema_size_add(S, pdim->sym, pdim->offset);
                t->shape[k] = sexpr_sym(S->a, t->dims[k].sym);
            } else {
                t->dims[k].sym = -1;
                t->dims[k].value = pdim->value;
                t->shape[k] = sexpr_const(S->a, pdim->value);
            }
        }
        S->known[t->index] = true;
        S->defined[t->index] = true;
        ARENA_PUSH(S->a, def->params, def->nparams, S->cparams, t);
    }
    /* a bare name is either a size symbol or a scalar (a tensor may share a
     * size's name: a tensor is always written with parentheses) */
    for (int i = 0; i < def->nparams; i++)
        if (def->params[i]->is_scalar && sema_size(S, def->params[i]->name) >= 0) {
            int slot = sema_size(S, def->params[i]->name);
            sema_err(S, def->size_offsets[slot], TSL_ERR_SEMANTIC,
                     "'%s' is used both as a size symbol and as a scalar parameter name",
                     def->params[i]->name);
            return false;
        }
    return true;
}

static bool sema_outputs(sema *S, const parse_def *pd)
{
    lang_def *def = S->def;
    for (int i = 0; i < pd->noutputs; i++) {
        const parse_name *o = &pd->outputs[i];
        const lang_tensor *prev = sema_tensor(S, o->name);
        if (prev && (prev->flags & LANG_TENSOR_OUTPUT)) {
            sema_err(S, o->offset, TSL_ERR_SEMANTIC, "output '%s' is listed twice", o->name);
            return false;
        }
        if (sema_size(S, o->name) >= 0) {
            sema_err(S, o->offset, TSL_ERR_SEMANTIC,
                     "'%s' is a size symbol and cannot be an output", o->name);
            return false;
        }
        lang_tensor *t = sema_tensor(S, o->name);
        if (t && t->is_scalar) {
            sema_err(S, o->offset, TSL_ERR_SEMANTIC,
                     "scalar parameter '%s' cannot be an output (outputs are tensors; use "
                     "float() %s for a zero-dim tensor)",
                     o->name, o->name);
            return false;
        }
        if (t) {
            t->flags |= LANG_TENSOR_OUTPUT;
        } else {
            t = sema_tensor_add(S, o->name, o->offset, LANG_TENSOR_OUTPUT);
        }
        t->output_index = def->noutputs;
        ARENA_PUSH(S->a, def->outputs, def->noutputs, S->coutputs, t);
    }
    return true;
}

/* Is `name` used as an index in p: inside the arguments of a tensor
 * access (at any depth), other than as a factor of a product with a
 * non-constant (`h * Dh + d`: h and Dh each scale the other, so neither
 * could get a range from it, and a name a where bound also uses there is
 * a size)? Recursion follows the capped parse tree. */
static bool sema_in_index(sema *S, const parse_node *p, const char *name, bool in_index)
{
    if (p->kind == P_IDENT) return in_index && !strcmp(p->name, name);
    if (p->kind == P_CALL) {
        lang_tensor *t = sema_tensor(S, p->name);
        if (t && !t->is_scalar) in_index = true;
    }
    if (p->kind == P_BINARY && p->op == LANG_MUL && p->nargs == 2 && p->args[0]->kind != P_INT &&
        p->args[1]->kind != P_INT) {
        /* inside the factors only nested accesses count */
        for (int k = 0; k < 2; k++)
            if (p->args[k]->kind != P_IDENT && sema_in_index(S, p->args[k], name, false)) return true;
        return false;
    }
    for (int k = 0; k < p->nargs; k++)
        if (sema_in_index(S, p->args[k], name, in_index)) return true;
    return false;
}

/* An index variable of statement ps: an LHS index, a where variable, or
 * a name used as an index on the right-hand side. */
static bool sema_is_stmt_index(sema *S, const parse_stmt *ps, const char *name)
{
    for (int k = 0; k < ps->nidx; k++)
        if (ps->idx[k]->kind == P_IDENT && !strcmp(ps->idx[k]->name, name)) return true;
    for (int w = 0; w < ps->nwheres; w++)
        if (!strcmp(ps->wheres[w].var, name)) return true;
    return ps->rhs && sema_in_index(S, ps->rhs, name, false);
}

/* Every identifier of a where bound that names no tensor and is no index
 * variable of the statement is a size symbol (sema_bound reports misuse).
 * Recursion follows the capped parse tree. */
static void sema_bound_names(sema *S, const parse_stmt *ps, const parse_node *p)
{
    if (p->kind == P_IDENT && !sema_tensor(S, p->name) && !sema_is_stmt_index(S, ps, p->name))
        sema_size_add(S, p->name, p->offset);
    for (int k = 0; k < p->nargs; k++) sema_bound_names(S, ps, p->args[k]);
}

/* Size symbols that only where bounds name, and temporaries. */
static bool sema_prepass(sema *S, const parse_def *pd)
{
    /* (temporaries second: a where bound naming one is an error sema_bound
     * reports, not a size) */
    for (int s = 0; s < pd->nstmts; s++) {
        const parse_stmt *ps = &pd->stmts[s];
        for (int w = 0; w < ps->nwheres; w++) {
            const parse_node *bounds[2] = {ps->wheres[w].lo, ps->wheres[w].hi};
            for (int b = 0; b < 2; b++) {
                sema_bound_names(S, ps, bounds[b]);
            }
        }
    }
    for (int s = 0; s < pd->nstmts; s++) {
        const parse_stmt *ps = &pd->stmts[s];
        if (sema_tensor(S, ps->lhs)) continue;
        if (sema_size(S, ps->lhs) >= 0) {
            sema_err(S, ps->offset, TSL_ERR_SEMANTIC, "'%s' is a size symbol and cannot be assigned",
                     ps->lhs);
            return false;
        }
        sema_tensor_add(S, ps->lhs, ps->offset, LANG_TENSOR_TEMP);
    }
    return true;
}

lang_def *sema_def(tsl_arena *a, const tsl_source *src, const parse_def *pd, tsl_diag *d)
{
    sema S = {.a = a, .src = src, .d = d};
    lang_def *def = arena_alloc(a, sizeof *def);
    def->name = pd->name;
    def->offset = pd->offset;
    def->src = src;
    strmap_init(&def->tensor_index, a);
    strmap_init(&def->size_index, a);
    S.def = def;
    /* at most: params + outputs + one temporary per statement */
    int maxt = pd->nparams + pd->noutputs + pd->nstmts + 1;
    S.defined = arena_alloc(a, sizeof(bool) * (size_t)maxt);
    S.known = arena_alloc(a, sizeof(bool) * (size_t)maxt);
    if (!sema_params(&S, pd) || !sema_outputs(&S, pd) || !sema_prepass(&S, pd)) return NULL;
    def->stmts = arena_alloc(a, sizeof(lang_stmt) * (size_t)(pd->nstmts + 1));
    for (int s = 0; s < pd->nstmts; s++) {
        def->stmts[s].index = s;
        def->nstmts = s + 1;
        if (!sema_stmt(&S, &pd->stmts[s], &def->stmts[s])) return NULL;
    }
    for (int i = 0; i < def->noutputs; i++) {
        lang_tensor *t = def->outputs[i];
        if (!S.defined[t->index]) {
            sema_err(&S, t->offset, TSL_ERR_SEMANTIC, "output '%s' is never written", t->name);
            return NULL;
        }
    }
    return def;
}
