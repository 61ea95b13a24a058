/* attention.c — the attention strategy (attention.h, docs/sched.md "The
 * attention strategy"): a merged attention group as one kernel that never
 * materialises the scores.
 *
 * sched_attn_plan_tile, for the CPU and generic CUDA targets:
 *   - grid (cdiv(Tq, BM), cdiv(E, BE), batch product), one BM x BE tile of
 *     O per block; batch coordinates from block_idx.z by div/mod;
 *   - per block of BN keys: S = Q·Kᵀ accumulated in f32 register tiles by
 *     FMA outer products over DK-deep Q and K blocks in shared memory (K's
 *     block stored transposed: a column of Kᵀ is a contiguous row), the
 *     CPU's micro-kernel atom where the operands are f32;
 *   - the score ops lowered elementwise on the S tile (index vars as iota
 *     tiles, mask tensors gathered), columns past Tk set to -inf;
 *   - the online softmax (softmax.c), P through shared memory, O += P·V the
 *     same way as S; at the end O / l, cast, one masked store.
 * The kernel is written as tile text and parsed (what --emit=tile prints);
 * a group this plan cannot take returns 0 and the generic strategy lowers
 * it. The Hopper plan (sched_attn_plan_sm90) reads the same sched_attn. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/attention.h"
#include "sched/kbuild.h"
#include "sched/softmax.h"

/* ---- recognising ------------------------------------------------------------------------ */

static const graph_expr *uncast(const graph_expr *e)
{
    while (e->kind == LANG_E_CAST && e->nargs == 1) e = e->args[0];
    return e;
}

static int is_score(const graph_op *op, const graph_expr *e, int s)
{
    e = uncast(e);
    return e->kind == LANG_E_ACCESS && op->operands[e->operand].tensor == s;
}

/* A constant scalar factor: literals and their products. */
static int const_value(const graph_expr *e, double *v)
{
    e = uncast(e);
    if (e->kind == LANG_E_FLOAT) return *v = e->src->fval, 1;
    if (e->kind == LANG_E_INT) return *v = (double)e->src->ival, 1;
    if (e->kind == LANG_E_UNARY && e->src->op == LANG_NEG && const_value(e->args[0], v)) return *v = -*v, 1;
    return 0;
}

/* Summarise the score ops (sched_attn.simple and what it implies). */
static void summarise(sched_attn *a)
{
    const graph *g = a->g;
    a->simple = 1;
    a->scale = 1;
    a->scale_scalar = a->scale_rsqrt_size = a->mask_tensor = -1;
    a->mask = SCHED_ATTN_MASK_NONE;
    int s = g->ops[a->at.qk].operands[0].tensor, nb = a->nb;
    for (int i = a->at.score_first; i < a->at.score_first + a->at.nscore; i++) {
        const graph_op *op = &g->ops[i];
        const graph_expr *e = uncast(op->body);
        double c;
        int ok = 0;
        if (e->kind == LANG_E_BINARY && (e->src->op == LANG_MUL || e->src->op == LANG_DIV) &&
            a->mask == SCHED_ATTN_MASK_NONE) {
            int si = is_score(op, e->args[0], s) ? 0 : e->src->op == LANG_MUL && is_score(op, e->args[1], s) ? 1 : -1;
            const graph_expr *f = si >= 0 ? uncast(e->args[1 - si]) : NULL;
            if (f && const_value(f, &c) && c != 0) {
                a->scale = e->src->op == LANG_MUL ? a->scale * c : a->scale / c;
                ok = 1;
            } else if (f && f->kind == LANG_E_SCALAR && e->src->op == LANG_MUL && a->scale_scalar < 0) {
                a->scale_scalar = f->src->tensor->index;
                ok = 1;
            } else if (f && e->src->op == LANG_DIV && f->kind == LANG_E_CALL && f->src->op == LANG_SQRT &&
                       uncast(f->args[0])->kind == LANG_E_SIZE && a->scale_rsqrt_size < 0) {
                a->scale_rsqrt_size = uncast(f->args[0])->src->slot;
                ok = 1;
            }
        } else if (e->kind == LANG_E_SELECT && a->mask == SCHED_ATTN_MASK_NONE && is_score(op, e->args[1], s) &&
                   const_value(e->args[2], &c)) {
            const graph_expr *q = uncast(e->args[0]);
            if (q->kind == LANG_E_BINARY && q->args[0]->kind == LANG_E_INDEX && q->args[1]->kind == LANG_E_INDEX) {
                int x = q->args[0]->src->slot, y = q->args[1]->src->slot;
                if ((q->src->op == LANG_LE && x == nb + 1 && y == nb) || (q->src->op == LANG_GE && x == nb && y == nb + 1)) {
                    a->mask = SCHED_ATTN_MASK_CAUSAL;
                    a->causal_off = 0;
                    a->mask_fill = c;
                    ok = 1;
                }
            }
        } else if (e->kind == LANG_E_BINARY && e->src->op == LANG_ADD && a->mask == SCHED_ATTN_MASK_NONE) {
            int si = is_score(op, e->args[0], s) ? 0 : is_score(op, e->args[1], s) ? 1 : -1;
            const graph_expr *m = si >= 0 ? uncast(e->args[1 - si]) : NULL;
            if (m && m->kind == LANG_E_ACCESS) {
                a->mask = SCHED_ATTN_MASK_TENSOR;
                a->mask_tensor = op->operands[m->operand].tensor;
                ok = 1;
            }
        }
        if (!ok) {
            a->simple = 0;
            a->mask = SCHED_ATTN_MASK_GENERAL;
        }
        s = op->operands[0].tensor;
    }
}

static int io_dtype(tsl_dtype t) { return t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16 || t == TSL_DTYPE_F32; }

int sched_attn_recognise(const graph *g, const graph_group *grp, sched_attn *a)
{
    memset(a, 0, sizeof *a);
    if (grp->strategy != GRAPH_ATTENTION || !graph_attention_match(g, grp->first, &a->at) ||
        a->at.last != grp->first + grp->nops - 1)
        return 0;
    a->g = g;
    a->grp = grp;
    a->nb = a->at.nb;
    const lang_def *def = g->def;
    const lang_tensor *Q = def->tensors[a->at.q], *K = def->tensors[a->at.k], *V = def->tensors[a->at.v],
                      *O = def->tensors[a->at.o];
    for (int z = 0; z < a->nb; z++) a->batch[z] = Q->shape[z];
    a->tq = Q->shape[a->nb];
    a->d = Q->shape[a->nb + 1];
    a->tk = K->shape[a->nb];
    a->e = V->shape[a->nb + 1];
    a->dq = Q->dtype, a->dk = K->dtype, a->dv = V->dtype, a->dout = O->dtype;
    if (!io_dtype(a->dq) || !io_dtype(a->dk) || !io_dtype(a->dv) || !io_dtype(a->dout)) return 0;
    summarise(a);
    return 1;
}

/* ---- the tile plan: text -------------------------------------------------------------------- */

/* A value of the score-op lowering. */
typedef enum { V_F, V_I, V_B, V_SF, V_SI } vkind; /* f32 / i64 / bool tiles; float / int scalars */
typedef struct val {
    vkind k;
    char t[160]; /* the value's name, or the scalar's text */
    int param;   /* V_SF: t names a scalar parameter (not a literal) */
} val;

typedef struct ak {
    sched_plan *p;
    const sched_attn *a;
    const graph *g;
    const lang_def *def;
    int cpu;
    int bm, bn, be, dk, tr, tc, pad;
    char lay[64], lrow[96], lcol[96], lkc[96], lacc[64], lcole[96];
    int ptensor[32], npt;
    int pscalar[16], nsc;
    int psize[32], nsz;
    const char **cur; /* per def tensor: its score tile's name (score ops) */
    const char **gat; /* per def tensor: its gathered tile in this key block */
    const graph_op *op; /* the score op being lowered */
    int n;             /* fresh names */
    int fail;
    strbuf b;
} ak;

static const char *IN = "    "; /* the key loop's indentation */

static void pname(char *buf, size_t n, const char *name)
{
    if (tile_name_reserved(name) || !strncmp(name, "a_", 2)) snprintf(buf, n, "%s_p", name);
    else snprintf(buf, n, "%s", name);
}

static const char *tname(ak *k, int ti)
{
    char nb[160];
    pname(nb, sizeof nb, k->def->tensors[ti]->name);
    return arena_strdup(k->p->m->arena, nb);
}

static void use(int *list, int *n, int cap, int x)
{
    for (int i = 0; i < *n; i++)
        if (list[i] == x) return;
    if (*n < cap) list[(*n)++] = x;
}

static void sexpr_text(ak *k, strbuf *b, const lang_sexpr *e)
{
    char nb[160];
    if (e->kind == LANG_SX_CONST) {
        sb_printf(b, "%lld", (long long)e->value);
        return;
    }
    if (e->kind != LANG_SX_SYM) {
        k->fail = 1;
        sb_puts(b, "0");
        return;
    }
    use(k->psize, &k->nsz, 32, e->sym);
    pname(nb, sizeof nb, k->def->sizes[e->sym]);
    sb_puts(b, nb);
}

static const char *sx(ak *k, const lang_sexpr *e)
{
    strbuf b = {0};
    sexpr_text(k, &b, e);
    const char *s = arena_strdup(k->p->m->arena, sb_str(&b));
    sb_free(&b);
    return s;
}

static const char *dt_name(tsl_dtype t)
{
    return t == TSL_DTYPE_F16 ? "f16" : t == TSL_DTYPE_BF16 ? "bf16" : t == TSL_DTYPE_BOOL ? "bool" : "f32";
}

/* Batch coordinate z (0..nb-1) of the block, as an int expression. */
static const char *zc(ak *k, int z)
{
    if (k->a->nb == 1) return "block_idx.z";
    return z == 0 ? "a_z0" : "a_z1";
}

static void fresh(ak *k, char *buf, size_t n, const char *base) { snprintf(buf, n, "a_%s%d", base, k->n++); }

static void float_text(char *buf, size_t n, double v)
{
    if (isnan(v)) snprintf(buf, n, "nan");
    else if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
    else {
        snprintf(buf, n, "%.17g", v);
        if (!strpbrk(buf, ".eEn")) strncat(buf, ".0", n - strlen(buf) - 1);
    }
}

/* x as a tile of kind `want` (V_F, V_I or V_B). */
static val as_tile(ak *k, val x, vkind want)
{
    val r = {want, "", 0};
    if (x.k == want) return x;
    fresh(k, r.t, sizeof r.t, "v");
    switch (x.k) {
    case V_SF:
    case V_SI: {
        val t = {x.k == V_SF ? V_F : V_I, "", 0};
        fresh(k, t.t, sizeof t.t, "c");
        const char *dt = x.k == V_SF ? "f32" : "i64";
        if (!x.param) {
            sb_printf(&k->b, "%s%s = alloc register %s[%d, %d] layout %s init %s\n", IN, t.t, dt, k->bm, k->bn, k->lay,
                      x.t);
        } else { /* a scalar parameter: 0 + it */
            char z[160];
            fresh(k, z, sizeof z, "z");
            sb_printf(&k->b, "%s%s = alloc register f32[%d, %d] layout %s init 0.0\n", IN, z, k->bm, k->bn, k->lay);
            sb_printf(&k->b, "%s%s = add %s, %s\n", IN, t.t, z, x.t);
        }
        return as_tile(k, t, want);
    }
    case V_F:
    case V_I:
        if (want == V_B) sb_printf(&k->b, "%s%s = ne %s, 0\n", IN, r.t, x.t);
        else sb_printf(&k->b, "%s%s = cast %s -> register %s[%d, %d] layout %s\n", IN, r.t, x.t,
                       want == V_F ? "f32" : "i64", k->bm, k->bn, k->lay);
        return r;
    case V_B:
        sb_printf(&k->b, "%s%s = cast %s -> register %s[%d, %d] layout %s\n", IN, r.t, x.t,
                  want == V_F ? "f32" : "i64", k->bm, k->bn, k->lay);
        return r;
    }
    return r;
}

static int is_scalar(val x) { return x.k == V_SF || x.k == V_SI; }

static val score_expr(ak *k, const graph_expr *e);

/* op x, y on tiles of kind `kind` (or a scalar), result kind `res`. */
static val binop(ak *k, const char *opc, val x, val y, vkind kind, vkind res)
{
    if (is_scalar(x) && is_scalar(y)) x = as_tile(k, x, kind);
    if (!is_scalar(x)) x = as_tile(k, x, kind);
    if (!is_scalar(y)) y = as_tile(k, y, kind);
    val r = {res, "", 0};
    fresh(k, r.t, sizeof r.t, "v");
    sb_printf(&k->b, "%s%s = %s %s, %s\n", IN, r.t, opc, x.t, y.t);
    return r;
}

static val unop(ak *k, const char *opc, val x, vkind kind)
{
    x = as_tile(k, x, kind);
    val r = {kind, "", 0};
    fresh(k, r.t, sizeof r.t, "v");
    sb_printf(&k->b, "%s%s = %s %s\n", IN, r.t, opc, x.t);
    return r;
}

static val fail(ak *k)
{
    k->fail = 1;
    val r = {V_SF, "0.0", 0};
    return r;
}

/* A mask tensor read: gathered over the block's rows and columns. */
static val gather(ak *k, const graph_operand *o)
{
    val r = {V_F, "", 0};
    const lang_tensor *t = k->def->tensors[o->tensor];
    if (k->gat[o->tensor]) {
        snprintf(r.t, sizeof r.t, "%s", k->gat[o->tensor]);
        r.k = t->dtype == TSL_DTYPE_BOOL ? V_B : V_F;
        return r;
    }
    use(k->ptensor, &k->npt, 32, o->tensor);
    char raw[64];
    fresh(k, raw, sizeof raw, "g");
    sb_printf(&k->b, "%s%s = gather %s", IN, raw, tname(k, o->tensor));
    int nb = k->a->nb;
    for (int d = 0; d < o->rank; d++) {
        int v = o->idx[d].var;
        if (v < 0) return fail(k);
        sb_printf(&k->b, ", %s", v < nb ? zc(k, v) : v == nb ? "a_ri" : "a_ci");
    }
    sb_printf(&k->b, " -> register %s[%d, %d] layout %s mask a_live\n", dt_name(t->dtype), k->bm, k->bn, k->lay);
    if (t->dtype == TSL_DTYPE_BOOL) {
        r.k = V_B;
        snprintf(r.t, sizeof r.t, "%s", raw);
    } else if (t->dtype == TSL_DTYPE_F32) {
        snprintf(r.t, sizeof r.t, "%s", raw);
    } else if (dtype_info_of(t->dtype)->is_float) {
        fresh(k, r.t, sizeof r.t, "gc");
        sb_printf(&k->b, "%s%s = cast %s -> register f32[%d, %d] layout %s\n", IN, r.t, raw, k->bm, k->bn, k->lay);
    } else {
        return fail(k);
    }
    k->gat[o->tensor] = arena_strdup(k->p->m->arena, r.t);
    return r;
}

static const char *cmp_name(int op)
{
    switch (op) {
    case LANG_EQ: return "eq";
    case LANG_NE: return "ne";
    case LANG_LT: return "lt";
    case LANG_LE: return "le";
    case LANG_GT: return "gt";
    case LANG_GE: return "ge";
    default: return NULL;
    }
}

static val score_expr(ak *k, const graph_expr *e)
{
    const lang_expr *s = e->src;
    const graph_op *op = k->op;
    val r = {V_SF, "", 0};
    switch (e->kind) {
    case LANG_E_FLOAT:
        float_text(r.t, sizeof r.t, sched_kb_literal(s->type, s->fval));
        return r;
    case LANG_E_INT:
        r.k = V_SI;
        snprintf(r.t, sizeof r.t, "%lld", (long long)s->ival);
        return r;
    case LANG_E_SIZE: {
        r.k = V_SI;
        const lang_sexpr sym = {.kind = LANG_SX_SYM, .sym = s->slot};
        snprintf(r.t, sizeof r.t, "%s", sx(k, &sym));
        return r;
    }
    case LANG_E_SCALAR:
        use(k->pscalar, &k->nsc, 16, s->tensor->index);
        r.param = 1;
        snprintf(r.t, sizeof r.t, "%s", tname(k, s->tensor->index));
        return r;
    case LANG_E_INDEX: {
        int v = s->slot, nb = k->a->nb;
        if (v < nb) {
            r.k = V_SI;
            snprintf(r.t, sizeof r.t, "%s", zc(k, v));
        } else {
            r.k = V_I;
            snprintf(r.t, sizeof r.t, "%s", v == nb ? "a_ri" : "a_ci");
        }
        return r;
    }
    case LANG_E_ACCESS: {
        const graph_operand *o = &op->operands[e->operand];
        if (k->cur[o->tensor]) {
            r.k = V_F;
            snprintf(r.t, sizeof r.t, "%s", k->cur[o->tensor]);
            return r;
        }
        return gather(k, o);
    }
    case LANG_E_CAST: {
        val x = score_expr(k, e->args[0]);
        if (s->type == TSL_DTYPE_BOOL) return is_scalar(x) ? as_tile(k, as_tile(k, x, x.k == V_SF ? V_F : V_I), V_B)
                                                           : as_tile(k, x, V_B);
        if (is_scalar(x)) return x.k == V_SI ? as_tile(k, x, V_F) : x;
        return as_tile(k, x, V_F);
    }
    case LANG_E_UNARY: {
        val x = score_expr(k, e->args[0]);
        if (s->op == LANG_NOT) return unop(k, "not", x, V_B);
        if (x.k == V_SI) {
            char tmp[400];
            snprintf(tmp, sizeof tmp, "0 - (%s)", x.t);
            if (strlen(tmp) >= sizeof r.t) return fail(k);
            memcpy(r.t, tmp, strlen(tmp) + 1);
            r.k = V_SI;
            return r;
        }
        return unop(k, "neg", x, x.k == V_I ? V_I : V_F);
    }
    case LANG_E_SELECT: {
        val c = score_expr(k, e->args[0]);
        val x = score_expr(k, e->args[1]), y = score_expr(k, e->args[2]);
        if (!dtype_info_of(s->type)->is_float) return fail(k);
        c = as_tile(k, c, V_B);
        if (is_scalar(x)) x = as_tile(k, x, V_F);
        else x = as_tile(k, x, V_F);
        if (!is_scalar(y)) y = as_tile(k, y, V_F);
        else if (y.k == V_SI) y = as_tile(k, y, V_F);
        r.k = V_F;
        fresh(k, r.t, sizeof r.t, "v");
        sb_printf(&k->b, "%s%s = select %s, %s, %s\n", IN, r.t, c.t, x.t, y.t);
        return r;
    }
    case LANG_E_CALL: {
        static const char *un[LANG_BUILTIN_COUNT] = {[LANG_EXP] = "exp",     [LANG_LOG] = "log",
                                                     [LANG_SQRT] = "sqrt",   [LANG_RSQRT] = "rsqrt",
                                                     [LANG_TANH] = "tanh",   [LANG_SIGMOID] = "sigmoid",
                                                     [LANG_ERF] = "erf",     [LANG_ABS] = "abs"};
        static const char *bin[LANG_BUILTIN_COUNT] = {[LANG_MAX] = "max", [LANG_MIN] = "min", [LANG_POW] = "pow"};
        if (s->op < 0 || s->op >= LANG_BUILTIN_COUNT) return fail(k);
        if (un[s->op]) return unop(k, un[s->op], score_expr(k, e->args[0]), V_F);
        if (!bin[s->op] || e->nargs != 2) return fail(k);
        return binop(k, bin[s->op], score_expr(k, e->args[0]), score_expr(k, e->args[1]), V_F, V_F);
    }
    case LANG_E_BINARY: {
        val x = score_expr(k, e->args[0]), y = score_expr(k, e->args[1]);
        int fl = dtype_info_of(s->optype)->is_float;
        const char *cmp = cmp_name(s->op);
        if (s->op == LANG_AND || s->op == LANG_OR) {
            x = as_tile(k, is_scalar(x) ? as_tile(k, x, x.k == V_SF ? V_F : V_I) : x, V_B);
            return binop(k, s->op == LANG_AND ? "and" : "or", x, as_tile(k, is_scalar(y) ? as_tile(k, y, y.k == V_SF ? V_F : V_I) : y, V_B), V_B, V_B);
        }
        if (!fl && s->optype == TSL_DTYPE_BOOL) {
            if (!cmp) return fail(k);
            return binop(k, cmp, as_tile(k, x, V_B), as_tile(k, y, V_B), V_B, V_B);
        }
        if (!fl) { /* index arithmetic in i64 */
            if (x.k == V_SI && y.k == V_SI && !cmp && s->op <= LANG_MUL && s->op >= LANG_ADD) {
                r.k = V_SI;
                char tmp[400];
                snprintf(tmp, sizeof tmp, "(%s) %s (%s)", x.t, lang_binop_name(s->op), y.t);
                if (strlen(tmp) >= sizeof r.t) return fail(k);
                memcpy(r.t, tmp, strlen(tmp) + 1);
                return r;
            }
            if (x.k == V_SF || y.k == V_SF || x.k == V_F || y.k == V_F) return fail(k);
            if (cmp) return binop(k, cmp, x, y, V_I, V_B);
            if (s->op == LANG_ADD) return binop(k, "add", x, y, V_I, V_I);
            if (s->op == LANG_SUB) return binop(k, "sub", x, y, V_I, V_I);
            if (s->op == LANG_MUL) return binop(k, "mul", x, y, V_I, V_I);
            return fail(k);
        }
        if (x.k == V_I || x.k == V_B) x = as_tile(k, x, V_F);
        if (y.k == V_I || y.k == V_B) y = as_tile(k, y, V_F);
        if (cmp) return binop(k, cmp, x, y, V_F, V_B);
        switch (s->op) {
        case LANG_ADD: return binop(k, "add", x, y, V_F, V_F);
        case LANG_SUB: return binop(k, "sub", x, y, V_F, V_F);
        case LANG_MUL: return binop(k, "mul", x, y, V_F, V_F);
        case LANG_DIV: return binop(k, "div", x, y, V_F, V_F);
        default: return fail(k);
        }
    }
    default: return fail(k);
    }
}

/* The FMA outer-product loop acc += A·B over `depth` steps: A's column
 * `a_at` from shared as [bm, 1] (cast to f32), B's row as [1, n] (from a
 * transposed [n, depth] block viewed as a row when `btrans`). */
static void fma_loop(ak *k, const char *var, int depth, const char *acols, tsl_dtype adt, const char *bsh,
                     tsl_dtype bdt, int btrans, int n, const char *lacc, const char *lcol, const char *acc, int lead)
{
    strbuf *b = &k->b;
    const char *in2 = "        ";
    char zeros[32] = "";
    for (int z = 0; z < lead; z++) strcat(zeros, "0, ");
    sb_printf(b, "      for %s in 0 : %d {\n", var, depth);
    sb_printf(b, "%sa_fa = load_shared %s, %s] -> register %s[%d, 1] layout %s\n", in2, acols, var, dt_name(adt),
              k->bm, k->lrow);
    const char *fa = "a_fa";
    if (adt != TSL_DTYPE_F32) {
        sb_printf(b, "%sa_fac = cast a_fa -> register f32[%d, 1] layout %s\n", in2, k->bm, k->lrow);
        fa = "a_fac";
    }
    if (btrans) {
        sb_printf(b, "%sa_fb0 = load_shared %s[%s0, %s] -> register %s[%d, 1] layout %s\n", in2, bsh, zeros, var,
                  dt_name(bdt), n, k->lkc);
        sb_printf(b, "%sa_fb = view a_fb0 -> register %s[1, %d] layout %s\n", in2, dt_name(bdt), n, lcol);
    } else {
        sb_printf(b, "%sa_fb = load_shared %s[%s%s, 0] -> register %s[1, %d] layout %s\n", in2, bsh, zeros, var,
                  dt_name(bdt), n, lcol);
    }
    const char *fb = "a_fb";
    if (bdt != TSL_DTYPE_F32) {
        sb_printf(b, "%sa_fbc = cast a_fb -> register f32[1, %d] layout %s\n", in2, n, lcol);
        fb = "a_fbc";
    }
    sb_printf(b, "%sa_fab = broadcast %s -> register f32[%d, %d] layout %s dim 1\n", in2, fa, k->bm, n, lacc);
    sb_printf(b, "%sa_fbb = broadcast %s -> register f32[%d, %d] layout %s dim 0\n", in2, fb, k->bm, n, lacc);
    sb_printf(b, "%sa_fp = mul a_fab, a_fbb\n", in2);
    sb_printf(b, "%sadd %s, a_fp -> %s%s\n", in2, acc, acc,
              k->cpu && k->p->opt->micro_kernels && adt == TSL_DTYPE_F32 && bdt == TSL_DTYPE_F32 ? " atom cpu.ukr.f32"
                                                                                                 : "");
    sb_puts(b, "      }\n");
}

/* A shared block spec of tensor ti: [1.., r, c] at (batch.., ri, ci); a
 * transposed layout stores (x, y) at y * (r + pad) + x. */
static void block_spec(ak *k, strbuf *b, const char *view, int ti, int r, int c, const char *ri, const char *ci,
                       int trans)
{
    int nb = k->a->nb;
    sb_printf(b, "%s = %s[", view, tname(k, ti));
    for (int z = 0; z < nb; z++) sb_puts(b, "1, ");
    sb_printf(b, "%d, %d] at (", r, c);
    for (int z = 0; z < nb; z++) sb_printf(b, "%s, ", zc(k, z));
    int64_t total = trans ? (int64_t)c * (r + k->pad) : (int64_t)r * (c + k->pad);
    sb_printf(b, "%s, %s) shared layout (", ri, ci);
    for (int z = 0; z < nb; z++) sb_puts(b, "1,");
    sb_printf(b, "%d,%d):(", r, c);
    for (int z = 0; z < nb; z++) sb_printf(b, "%lld,", (long long)total);
    if (trans) sb_printf(b, "1,%d)", r + k->pad);
    else sb_printf(b, "%d,1)", c + k->pad);
}

static char *plan_text(ak *k, const char *kname)
{
    const sched_attn *a = k->a;
    const graph *g = k->g;
    int nb = a->nb;
    strbuf *b = &k->b;
    use(k->ptensor, &k->npt, 32, a->at.q);
    use(k->ptensor, &k->npt, 32, a->at.k);
    use(k->ptensor, &k->npt, 32, a->at.v);
    use(k->ptensor, &k->npt, 32, a->at.o);
    const char *tq = sx(k, a->tq), *tk = sx(k, a->tk), *dd = sx(k, a->d), *ee = sx(k, a->e);
    const char *zx[2] = {nb > 0 ? sx(k, a->batch[0]) : "1", nb > 1 ? sx(k, a->batch[1]) : "1"};
    if (nb == 2) {
        sb_printf(b, "  let a_z0 = block_idx.z / %s\n", zx[1]);
        sb_printf(b, "  let a_z1 = block_idx.z %% %s\n", zx[1]);
    }
    sb_printf(b, "  a_ri = iota block_idx.x * %d -> register i64[%d, %d] layout %s dim 0\n", k->bm, k->bm, k->bn, k->lay);
    sb_printf(b, "  a_rin = lt a_ri, %s\n", tq);
    sched_softmax sm = {.pre = "a_", .rows = k->bm, .cols = k->bn, .n = k->be, .lay = k->lay, .lay_row = k->lrow,
                        .lay_acc = k->lacc, .m = "a_m", .l = "a_l", .acc = "a_o"};
    sched_softmax_online_init(b, &sm, "  ");
    sb_printf(b, "  a_ps = alloc shared f32[%d, %d] layout (%d,%d):(%d,1)\n", k->bm, k->bn, k->bm, k->bn, k->bn + k->pad);
    sb_printf(b, "  for a_kb in 0 : cdiv(%s, %d) {\n", tk, k->bn);
    sb_printf(b, "    a_s = alloc register f32[%d, %d] layout %s init 0.0\n", k->bm, k->bn, k->lay);
    sb_printf(b, "    pipeline(grid=(a_d: cdiv(%s, %d)), stages=1, in=[", dd, k->dk);
    block_spec(k, b, "a_tq", a->at.q, k->bm, k->dk, "block_idx.x", "a_d", 0);
    sb_puts(b, ", ");
    block_spec(k, b, "a_tk", a->at.k, k->bn, k->dk, "a_kb", "a_d", 1);
    sb_puts(b, "], out=[]) {\n");
    char acols[64] = "a_tq[";
    for (int z = 0; z < nb; z++) strcat(acols, "0, ");
    strcat(acols, "0");
    fma_loop(k, "a_kk", k->dk, acols, a->dq, "a_tk", a->dk, 1, k->bn, k->lay, k->lcol, "a_s", nb);
    sb_puts(b, "    }\n");
    sb_printf(b, "    a_ci = iota a_kb * %d -> register i64[%d, %d] layout %s dim 1\n", k->bn, k->bm,
              k->bn, k->lay);
    sb_printf(b, "    a_cin = lt a_ci, %s\n", tk);
    sb_puts(b, "    a_live = and a_rin, a_cin\n");
    /* the score ops */
    memset(k->gat, 0, sizeof *k->gat * (size_t)(k->def->ntensors + 1));
    k->cur[g->ops[a->at.qk].operands[0].tensor] = "a_s";
    const char *x = "a_s";
    for (int i = a->at.score_first; i < a->at.score_first + a->at.nscore && !k->fail; i++) {
        k->op = &g->ops[i];
        val v = as_tile(k, score_expr(k, k->op->body), V_F);
        x = arena_strdup(k->p->m->arena, v.t);
        k->cur[k->op->operands[0].tensor] = x;
    }
    sb_printf(b, "    a_x = select a_cin, %s, -inf\n", x);
    char pn[64];
    sched_softmax_online_step(b, &sm, IN, "a_x", 0, pn, sizeof pn);
    sb_puts(b, "    sync\n");
    sb_printf(b, "    store_shared %s -> a_ps\n", pn);
    sb_puts(b, "    sync\n");
    sb_puts(b, "    pipeline(grid=(a_vd: 1), stages=1, in=[");
    block_spec(k, b, "a_tv", a->at.v, k->bn, k->be, "a_kb", "block_idx.y", 0);
    sb_puts(b, "], out=[]) {\n");
    fma_loop(k, "a_k2", k->bn, "a_ps[0", TSL_DTYPE_F32, "a_tv", a->dv, 0, k->be, k->lacc, k->lcole, "a_o", nb);
    sb_puts(b, "    }\n");
    sb_puts(b, "  }\n");
    char res[64];
    sched_softmax_online_finish(b, &sm, "  ", res, sizeof res);
    if (a->dout != TSL_DTYPE_F32) {
        sb_printf(b, "  a_out = cast %s -> register %s[%d, %d] layout %s\n", res, dt_name(a->dout), k->bm, k->be,
                  k->lacc);
        snprintf(res, sizeof res, "a_out");
    }
    sb_printf(b, "  store_global %s -> %s[", res, tname(k, a->at.o));
    for (int z = 0; z < nb; z++) sb_printf(b, "%s, ", zc(k, z));
    sb_printf(b, "block_idx.x * %d, block_idx.y * %d]\n", k->bm, k->be);
    if (k->fail) return NULL;

    /* the header, now that the parameters are known */
    strbuf h = {0};
    sb_printf(&h, "kernel %s(", kname);
    int np = 0;
    for (int i = 0; i < k->npt; i++) {
        const lang_tensor *t = k->def->tensors[k->ptensor[i]];
        sb_printf(&h, "%s%s: global %s[", np++ ? ", " : "", tname(k, t->index), dt_name(t->dtype));
        for (int d = 0; d < t->rank; d++) {
            if (d) sb_puts(&h, ", ");
            sexpr_text(k, &h, t->shape[d]);
        }
        sb_puts(&h, "]");
    }
    for (int i = 0; i < k->nsc; i++) {
        const lang_tensor *t = k->def->tensors[k->pscalar[i]];
        char db[16];
        sb_printf(&h, "%s%s: %s", np++ ? ", " : "", tname(k, t->index),
                  tile_dtype_name(tile_dtype_from_tsl(t->dtype), db));
    }
    for (int i = 0; i < k->nsz; i++) {
        int bound = 0;
        for (int j = 0; j < k->npt && !bound; j++) {
            const lang_tensor *t = k->def->tensors[k->ptensor[j]];
            for (int d = 0; d < t->rank; d++)
                bound |= t->shape[d]->kind == LANG_SX_SYM && t->shape[d]->sym == k->psize[i];
        }
        if (bound) {
            k->psize[i] = -1 - k->psize[i]; /* no parameter */
            continue;
        }
        char nbuf[160];
        pname(nbuf, sizeof nbuf, k->def->sizes[k->psize[i]]);
        sb_printf(&h, "%s%s: int", np++ ? ", " : "", nbuf);
    }
    sb_printf(&h, ") grid(cdiv(%s, %d), cdiv(%s, %d), ", tq, k->bm, ee, k->be);
    if (!nb) sb_puts(&h, "1");
    for (int z = 0; z < nb; z++) sb_printf(&h, "%s%s", z ? " * " : "", zx[z]);
    int bytes = 4;
    int64_t smem = ((int64_t)k->bm * (k->dk + k->pad) + (int64_t)k->dk * (k->bn + k->pad) +
                    (int64_t)k->bn * (k->be + k->pad) + (int64_t)k->bm * (k->bn + k->pad)) *
                   bytes * 5 / 4;
    sb_printf(&h, ") threads(%d) smem_budget(%lld) {\n", k->tr * k->tc, (long long)smem);
    sb_puts(&h, sb_str(b));
    sb_puts(&h, "}\n");
    return sb_take(&h);
}

static tile_kernel *parse_kernel(sched_plan *p, char *text, const char *kname)
{
    tsl_arena *ar = p->m->arena;
    size_t n = strlen(text);
    char *keep = arena_alloc(ar, n + 1);
    memcpy(keep, text, n + 1);
    free(text);
    tsl_source *src = arena_alloc(ar, sizeof *src);
    src->name = "<attention strategy>";
    src->text = keep;
    tsl_diag d;
    memset(&d, 0, sizeof d);
    tile_module *m = NULL;
    tsl_status st = tile_parse(ar, src, &d, &m);
    if (!st) st = tile_verify(m, src, &d);
    if (st || !m || m->nkernels != 1 || tile_module_find(p->m, kname)) {
        const char *why = sb_str(&d.msg);
        sched_note(p, "the attention plan '%s' does not verify; the group falls back: %.*s", kname,
                   (int)strcspn(why, "\n"), *why ? why : "a kernel of that name exists");
        diag_free(&d);
        return NULL;
    }
    diag_free(&d);
    return m->kernels[0];
}

int sched_attn_plan_sm90(sched_plan *p, const sched_attn *a)
{
    (void)p, (void)a;
    return 0; /* the lead's wgmma + TMA flash-attention plan goes here */
}

int sched_attn_plan_tile(sched_plan *p, const sched_attn *a)
{
    ak k;
    memset(&k, 0, sizeof k);
    k.p = p;
    k.a = a;
    k.g = a->g;
    k.def = a->g->def;
    k.cpu = p->target == TSL_TARGET_CPU;
    /* CPU: 128 x 64 score tiles, 128 "threads" of 8 x 8 (the micro-kernel's
     * register tile), 64-deep Q/K blocks: against 64 x 64 (4 x 8 a thread)
     * 38 against 66 ms (min of runs, 1 core) at B=1 Tq=Tk=2048 D=E=64 f32,
     * K and V streamed half as often. CUDA: 64 x 32 and 32-deep, so the f32
     * blocks fit 48 KB of shared memory without opting in. */
    k.tr = 16, k.tc = 8, k.pad = 16;
    k.bm = k.cpu ? 128 : 64;
    k.bn = k.cpu ? 64 : 32;
    k.dk = k.cpu ? 64 : 32;
    k.be = 64;
    int lm = k.bm / k.tr, ln = k.bn / k.tc, le = k.be / k.tc;
    snprintf(k.lay, sizeof k.lay, "spatial(%d,%d).local(%d,%d)", k.tr, k.tc, lm, ln);
    snprintf(k.lrow, sizeof k.lrow, "spatial(%d,1).replicate(%d).local(%d,1)", k.tr, k.tc, lm);
    snprintf(k.lcol, sizeof k.lcol, "replicate(%d).spatial(1,%d).local(1,%d)", k.tr, k.tc, ln);
    snprintf(k.lkc, sizeof k.lkc, "replicate(%d).spatial(%d,1).local(%d,1)", k.tr, k.tc, ln);
    snprintf(k.lacc, sizeof k.lacc, "spatial(%d,%d).local(%d,%d)", k.tr, k.tc, lm, le);
    snprintf(k.lcole, sizeof k.lcole, "replicate(%d).spatial(1,%d).local(1,%d)", k.tr, k.tc, le);
    size_t nt = (size_t)k.def->ntensors + 1;
    k.cur = arena_alloc(p->m->arena, sizeof *k.cur * nt);
    k.gat = arena_alloc(p->m->arena, sizeof *k.gat * nt);
    const char *kname = arena_printf(p->m->arena, "%s_g%d_attention", k.def->name, a->grp->index);
    char *text = plan_text(&k, kname);
    sb_free(&k.b);
    if (!text) return 0;
    tile_kernel *kern = parse_kernel(p, text, kname);
    if (!kern) return 0;
    tsl_arena *ar = p->m->arena;
    ARENA_PUSH(ar, p->m->kernels, p->m->nkernels, p->m->capkernels, kern);
    sched_launch ln_ = {.k = kern, .stmt = a->grp->first, .nstmts = a->grp->nops};
    ARENA_PUSH(ar, p->launches, p->nlaunches, p->caplaunches, ln_);
    sched_launch *l = &p->launches[p->nlaunches - 1];
    for (int i = 0; i < k.npt; i++) {
        sched_arg arg = {.name = kern->params[l->nargs]->name, .kind = SCHED_ARG_TENSOR, .tensor = k.ptensor[i]};
        ARENA_PUSH(ar, l->args, l->nargs, l->capargs, arg);
    }
    for (int i = 0; i < k.nsc; i++) {
        sched_arg arg = {.name = kern->params[l->nargs]->name, .kind = SCHED_ARG_SCALAR, .tensor = k.pscalar[i]};
        ARENA_PUSH(ar, l->args, l->nargs, l->capargs, arg);
    }
    for (int i = 0; i < k.nsz; i++) {
        if (k.psize[i] < 0) continue;
        sched_arg arg = {.name = kern->params[l->nargs]->name, .kind = SCHED_ARG_SIZE, .sym = k.psize[i]};
        ARENA_PUSH(ar, l->args, l->nargs, l->capargs, arg);
    }
    TSL_ASSERT(l->nargs == kern->nparams);
    return 1;
}

int sched_lower_attention(sched_plan *p, const graph *g, const graph_group *grp)
{
    sched_attn a;
    if (!p->opt->attention || !sched_attn_recognise(g, grp, &a)) return 0;
    if (p->target != TSL_TARGET_CPU && p->sm >= 90 && sched_attn_plan_sm90(p, &a)) return 1;
    return sched_attn_plan_tile(p, &a);
}
