/* tiletext.c — the tile-text building block (tiletext.h): TC bodies on a
 * register tile, FMA loops, block specs, header, parse, launch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kbuild.h"
#include "sched/tiletext.h"


static void pname(char *buf, size_t n, const char *name)
{
    if (tile_name_reserved(name) || !strncmp(name, "a_", 2)) snprintf(buf, n, "%s_p", name);
    else snprintf(buf, n, "%s", name);
}

const char *tt_tname(tt *k, int ti)
{
    char nb[160];
    pname(nb, sizeof nb, k->def->tensors[ti]->name);
    return arena_strdup(k->p->m->arena, nb);
}

void tt_use(int *list, int *n, int cap, int x)
{
    for (int i = 0; i < *n; i++)
        if (list[i] == x) return;
    if (*n < cap) list[(*n)++] = x;
}

void tt_sexpr_text(tt *k, strbuf *b, const lang_sexpr *e)
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
    tt_use(k->psize, &k->nsz, 32, e->sym);
    pname(nb, sizeof nb, k->def->sizes[e->sym]);
    sb_puts(b, nb);
}

const char *tt_sx(tt *k, const lang_sexpr *e)
{
    strbuf b = {0};
    tt_sexpr_text(k, &b, e);
    const char *s = arena_strdup(k->p->m->arena, sb_str(&b));
    sb_free(&b);
    return s;
}

const char *tt_dt(tsl_dtype t)
{
    return t == TSL_DTYPE_F16 ? "f16" : t == TSL_DTYPE_BF16 ? "bf16" : t == TSL_DTYPE_BOOL ? "bool" : "f32";
}

/* Batch coordinate z (0..nb-1) of the block, as an int expression. */
const char *tt_zc(tt *k, int z)
{
    if (k->nb == 1) return "block_idx.z";
    return z == 0 ? "a_z0" : "a_z1";
}

static void fresh(tt *k, char *buf, size_t n, const char *base) { snprintf(buf, n, "a_%s%d", base, k->n++); }

static void float_text(char *buf, size_t n, double v)
{
    if (isnan(v)) snprintf(buf, n, "nan");
    else if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
    else {
        snprintf(buf, n, "%.17g", v);
        if (!strpbrk(buf, ".eEn")) strncat(buf, ".0", n - strlen(buf) - 1);
    }
}

/* x as a tile of kind `want` (TT_F, TT_I or TT_B). */
tt_val tt_as_tile(tt *k, tt_val x, tt_kind want)
{
    tt_val r = {want, "", 0};
    if (x.k == want) return x;
    fresh(k, r.t, sizeof r.t, "v");
    switch (x.k) {
    case TT_SF:
    case TT_SI: {
        tt_val t = {x.k == TT_SF ? TT_F : TT_I, "", 0};
        fresh(k, t.t, sizeof t.t, "c");
        const char *dt = x.k == TT_SF ? "f32" : "i64";
        if (!x.param) {
            sb_printf(&k->b, "%s%s = alloc register %s[%d, %d] layout %s init %s\n", k->in, t.t, dt, k->bm, k->bn, k->lay,
                      x.t);
        } else { /* a scalar parameter: 0 + it */
            char z[160];
            fresh(k, z, sizeof z, "z");
            sb_printf(&k->b, "%s%s = alloc register f32[%d, %d] layout %s init 0.0\n", k->in, z, k->bm, k->bn, k->lay);
            sb_printf(&k->b, "%s%s = add %s, %s\n", k->in, t.t, z, x.t);
        }
        return tt_as_tile(k, t, want);
    }
    case TT_F:
    case TT_I:
        if (want == TT_B) sb_printf(&k->b, "%s%s = ne %s, 0\n", k->in, r.t, x.t);
        else sb_printf(&k->b, "%s%s = cast %s -> register %s[%d, %d] layout %s\n", k->in, r.t, x.t,
                       want == TT_F ? "f32" : "i64", k->bm, k->bn, k->lay);
        return r;
    case TT_B:
        sb_printf(&k->b, "%s%s = cast %s -> register %s[%d, %d] layout %s\n", k->in, r.t, x.t,
                  want == TT_F ? "f32" : "i64", k->bm, k->bn, k->lay);
        return r;
    }
    return r;
}

static int is_scalar(tt_val x) { return x.k == TT_SF || x.k == TT_SI; }

static tt_val tt_expr_of(tt *k, const graph_expr *e);

/* op x, y on tiles of kind `kind` (or a scalar), result kind `res`. */
static tt_val binop(tt *k, const char *opc, tt_val x, tt_val y, tt_kind kind, tt_kind res)
{
    if (is_scalar(x) && is_scalar(y)) x = tt_as_tile(k, x, kind);
    if (!is_scalar(x)) x = tt_as_tile(k, x, kind);
    if (!is_scalar(y)) y = tt_as_tile(k, y, kind);
    tt_val r = {res, "", 0};
    fresh(k, r.t, sizeof r.t, "v");
    sb_printf(&k->b, "%s%s = %s %s, %s\n", k->in, r.t, opc, x.t, y.t);
    return r;
}

static tt_val unop(tt *k, const char *opc, tt_val x, tt_kind kind)
{
    x = tt_as_tile(k, x, kind);
    tt_val r = {kind, "", 0};
    fresh(k, r.t, sizeof r.t, "v");
    sb_printf(&k->b, "%s%s = %s %s\n", k->in, r.t, opc, x.t);
    return r;
}

static tt_val fail(tt *k)
{
    k->fail = 1;
    tt_val r = {TT_SF, "0.0", 0};
    return r;
}

/* A mask tensor read: gathered over the block's rows and columns. */
static tt_val gather(tt *k, const graph_operand *o)
{
    tt_val r = {TT_F, "", 0};
    const lang_tensor *t = k->def->tensors[o->tensor];
    if (k->gat[o->tensor]) {
        snprintf(r.t, sizeof r.t, "%s", k->gat[o->tensor]);
        r.k = t->dtype == TSL_DTYPE_BOOL ? TT_B : TT_F;
        return r;
    }
    tt_use(k->ptensor, &k->npt, 32, o->tensor);
    char raw[64];
    fresh(k, raw, sizeof raw, "g");
    sb_printf(&k->b, "%s%s = gather %s", k->in, raw, tt_tname(k, o->tensor));
    int nb = k->nb;
    for (int d = 0; d < o->rank; d++) {
        int v = o->idx[d].var;
        if (v < 0) return fail(k);
        sb_printf(&k->b, ", %s", v < nb ? tt_zc(k, v) : v == nb ? "a_ri" : "a_ci");
    }
    sb_printf(&k->b, " -> register %s[%d, %d] layout %s mask a_live\n", tt_dt(t->dtype), k->bm, k->bn, k->lay);
    if (t->dtype == TSL_DTYPE_BOOL) {
        r.k = TT_B;
        snprintf(r.t, sizeof r.t, "%s", raw);
    } else if (t->dtype == TSL_DTYPE_F32) {
        snprintf(r.t, sizeof r.t, "%s", raw);
    } else if (dtype_info_of(t->dtype)->is_float) {
        fresh(k, r.t, sizeof r.t, "gc");
        sb_printf(&k->b, "%s%s = cast %s -> register f32[%d, %d] layout %s\n", k->in, r.t, raw, k->bm, k->bn, k->lay);
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

static tt_val tt_expr_of(tt *k, const graph_expr *e)
{
    const lang_expr *s = e->src;
    const graph_op *op = k->op;
    tt_val r = {TT_SF, "", 0};
    switch (e->kind) {
    case LANG_E_FLOAT:
        float_text(r.t, sizeof r.t, sched_kb_literal(s->type, s->fval));
        return r;
    case LANG_E_INT:
        r.k = TT_SI;
        snprintf(r.t, sizeof r.t, "%lld", (long long)s->ival);
        return r;
    case LANG_E_SIZE: {
        r.k = TT_SI;
        const lang_sexpr sym = {.kind = LANG_SX_SYM, .sym = s->slot};
        snprintf(r.t, sizeof r.t, "%s", tt_sx(k, &sym));
        return r;
    }
    case LANG_E_SCALAR:
        tt_use(k->pscalar, &k->nsc, 16, s->tensor->index);
        r.param = 1;
        snprintf(r.t, sizeof r.t, "%s", tt_tname(k, s->tensor->index));
        return r;
    case LANG_E_INDEX: {
        int v = s->slot, nb = k->nb;
        if (v < nb) {
            r.k = TT_SI;
            snprintf(r.t, sizeof r.t, "%s", tt_zc(k, v));
        } else {
            r.k = TT_I;
            snprintf(r.t, sizeof r.t, "%s", v == nb ? "a_ri" : "a_ci");
        }
        return r;
    }
    case LANG_E_ACCESS: {
        const graph_operand *o = &op->operands[e->operand];
        if (k->cur[o->tensor]) {
            r.k = TT_F;
            snprintf(r.t, sizeof r.t, "%s", k->cur[o->tensor]);
            return r;
        }
        return gather(k, o);
    }
    case LANG_E_CAST: {
        tt_val x = tt_expr_of(k, e->args[0]);
        if (s->type == TSL_DTYPE_BOOL) return is_scalar(x) ? tt_as_tile(k, tt_as_tile(k, x, x.k == TT_SF ? TT_F : TT_I), TT_B)
                                                           : tt_as_tile(k, x, TT_B);
        if (x.k == TT_SI && !dtype_info_of(s->type)->is_float && dtype_info_of(s->type)->bits < 64) {
            /* an int cast wraps to its width (uint16(-1) is 65535): a
             * constant folds; a size expression is declined */
            char *end;
            long long v = strtoll(x.t, &end, 10);
            if (*end || end == x.t) return fail(k);
            snprintf(x.t, sizeof x.t, "%lld", (long long)dtype_int_wrap(s->type, v));
        }
        if (is_scalar(x)) return x.k == TT_SI ? tt_as_tile(k, x, TT_F) : x;
        return tt_as_tile(k, x, TT_F);
    }
    case LANG_E_UNARY: {
        tt_val x = tt_expr_of(k, e->args[0]);
        if (s->op == LANG_NOT) return unop(k, "not", x, TT_B);
        if (x.k == TT_SI) {
            char tmp[400];
            snprintf(tmp, sizeof tmp, "0 - (%s)", x.t);
            if (strlen(tmp) >= sizeof r.t) return fail(k);
            memcpy(r.t, tmp, strlen(tmp) + 1);
            r.k = TT_SI;
            return r;
        }
        return unop(k, "neg", x, x.k == TT_I ? TT_I : TT_F);
    }
    case LANG_E_SELECT: {
        tt_val c = tt_expr_of(k, e->args[0]);
        tt_val x = tt_expr_of(k, e->args[1]), y = tt_expr_of(k, e->args[2]);
        if (!dtype_info_of(s->type)->is_float) return fail(k);
        c = tt_as_tile(k, c, TT_B);
        if (is_scalar(x)) x = tt_as_tile(k, x, TT_F);
        else x = tt_as_tile(k, x, TT_F);
        if (!is_scalar(y)) y = tt_as_tile(k, y, TT_F);
        else if (y.k == TT_SI) y = tt_as_tile(k, y, TT_F);
        r.k = TT_F;
        fresh(k, r.t, sizeof r.t, "v");
        sb_printf(&k->b, "%s%s = select %s, %s, %s\n", k->in, r.t, c.t, x.t, y.t);
        return r;
    }
    case LANG_E_CALL: {
        static const char *un[LANG_BUILTIN_COUNT] = {[LANG_EXP] = "exp",     [LANG_LOG] = "log",
                                                     [LANG_SQRT] = "sqrt",   [LANG_RSQRT] = "rsqrt",
                                                     [LANG_TANH] = "tanh",   [LANG_SIGMOID] = "sigmoid",
                                                     [LANG_ERF] = "erf",     [LANG_ABS] = "abs"};
        static const char *bin[LANG_BUILTIN_COUNT] = {[LANG_MAX] = "max", [LANG_MIN] = "min", [LANG_POW] = "pow"};
        if (s->op < 0 || s->op >= LANG_BUILTIN_COUNT) return fail(k);
        if (un[s->op]) return unop(k, un[s->op], tt_expr_of(k, e->args[0]), TT_F);
        if (!bin[s->op] || e->nargs != 2) return fail(k);
        return binop(k, bin[s->op], tt_expr_of(k, e->args[0]), tt_expr_of(k, e->args[1]), TT_F, TT_F);
    }
    case LANG_E_BINARY: {
        tt_val x = tt_expr_of(k, e->args[0]), y = tt_expr_of(k, e->args[1]);
        int fl = dtype_info_of(s->optype)->is_float;
        const char *cmp = cmp_name(s->op);
        if (s->op == LANG_AND || s->op == LANG_OR) {
            x = tt_as_tile(k, is_scalar(x) ? tt_as_tile(k, x, x.k == TT_SF ? TT_F : TT_I) : x, TT_B);
            return binop(k, s->op == LANG_AND ? "and" : "or", x, tt_as_tile(k, is_scalar(y) ? tt_as_tile(k, y, y.k == TT_SF ? TT_F : TT_I) : y, TT_B), TT_B, TT_B);
        }
        if (!fl && s->optype == TSL_DTYPE_BOOL) {
            if (!cmp) return fail(k);
            return binop(k, cmp, tt_as_tile(k, x, TT_B), tt_as_tile(k, y, TT_B), TT_B, TT_B);
        }
        if (!fl) { /* index arithmetic in i64 */
            if (x.k == TT_SI && y.k == TT_SI && !cmp && s->op <= LANG_MUL && s->op >= LANG_ADD) {
                r.k = TT_SI;
                char tmp[400];
                snprintf(tmp, sizeof tmp, "(%s) %s (%s)", x.t, lang_binop_name(s->op), y.t);
                if (strlen(tmp) >= sizeof r.t) return fail(k);
                memcpy(r.t, tmp, strlen(tmp) + 1);
                return r;
            }
            if (x.k == TT_SF || y.k == TT_SF || x.k == TT_F || y.k == TT_F) return fail(k);
            if (cmp) return binop(k, cmp, x, y, TT_I, TT_B);
            if (s->op == LANG_ADD) return binop(k, "add", x, y, TT_I, TT_I);
            if (s->op == LANG_SUB) return binop(k, "sub", x, y, TT_I, TT_I);
            if (s->op == LANG_MUL) return binop(k, "mul", x, y, TT_I, TT_I);
            return fail(k);
        }
        if (x.k == TT_I || x.k == TT_B) x = tt_as_tile(k, x, TT_F);
        if (y.k == TT_I || y.k == TT_B) y = tt_as_tile(k, y, TT_F);
        if (cmp) return binop(k, cmp, x, y, TT_F, TT_B);
        switch (s->op) {
        case LANG_ADD: return binop(k, "add", x, y, TT_F, TT_F);
        case LANG_SUB: return binop(k, "sub", x, y, TT_F, TT_F);
        case LANG_MUL: return binop(k, "mul", x, y, TT_F, TT_F);
        case LANG_DIV: return binop(k, "div", x, y, TT_F, TT_F);
        default: return fail(k);
        }
    }
    default: return fail(k);
    }
}


void tt_fma_loop(tt *k, const char *var, int depth, const char *acols, tsl_dtype adt, const char *bsh,
                     tsl_dtype bdt, int btrans, int n, const char *lacc, const char *lcol, const char *acc, int lead)
{
    strbuf *b = &k->b;
    const char *in2 = "        ";
    char zeros[32] = "";
    for (int z = 0; z < lead; z++) strcat(zeros, "0, ");
    sb_printf(b, "      for %s in 0 : %d {\n", var, depth);
    sb_printf(b, "%sa_fa = load_shared %s%s] -> register %s[%d, 1] layout %s\n", in2, acols, var, tt_dt(adt),
              k->bm, k->lrow);
    const char *fa = "a_fa";
    if (adt != TSL_DTYPE_F32) {
        sb_printf(b, "%sa_fac = cast a_fa -> register f32[%d, 1] layout %s\n", in2, k->bm, k->lrow);
        fa = "a_fac";
    }
    if (btrans) {
        sb_printf(b, "%sa_fb0 = load_shared %s[%s0, %s] -> register %s[%d, 1] layout %s\n", in2, bsh, zeros, var,
                  tt_dt(bdt), n, k->lkc);
        sb_printf(b, "%sa_fb = view a_fb0 -> register %s[1, %d] layout %s\n", in2, tt_dt(bdt), n, lcol);
    } else {
        sb_printf(b, "%sa_fb = load_shared %s[%s%s, 0] -> register %s[1, %d] layout %s\n", in2, bsh, zeros, var,
                  tt_dt(bdt), n, lcol);
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


void tt_block_spec(tt *k, strbuf *b, const char *view, int ti, int r, int c, const char *ri, const char *ci,
                       int trans)
{
    int nb = k->nb;
    sb_printf(b, "%s = %s[", view, tt_tname(k, ti));
    for (int z = 0; z < nb; z++) sb_puts(b, "1, ");
    sb_printf(b, "%d, %d] at (", r, c);
    for (int z = 0; z < nb; z++) sb_printf(b, "%s, ", tt_zc(k, z));
    int64_t total = trans ? (int64_t)c * (r + k->pad) : (int64_t)r * (c + k->pad);
    sb_printf(b, "%s, %s) shared layout (", ri, ci);
    for (int z = 0; z < nb; z++) sb_puts(b, "1,");
    sb_printf(b, "%d,%d):(", r, c);
    for (int z = 0; z < nb; z++) sb_printf(b, "%lld,", (long long)total);
    if (trans) sb_printf(b, "1,%d)", r + k->pad);
    else sb_printf(b, "%d,1)", c + k->pad);
}

tile_kernel *tt_parse_kernel(sched_plan *p, char *text, const char *kname, const char *what)
{
    tsl_arena *ar = p->m->arena;
    size_t n = strlen(text);
    char *keep = arena_alloc(ar, n + 1);
    memcpy(keep, text, n + 1);
    free(text);
    tsl_source *src = arena_alloc(ar, sizeof *src);
    src->name = what;
    src->text = keep;
    tsl_diag d;
    memset(&d, 0, sizeof d);
    tile_module *m = NULL;
    tsl_status st = tile_parse(ar, src, &d, &m);
    if (!st) st = tile_verify(m, src, &d);
    if (st || !m || m->nkernels != 1 || tile_module_find(p->m, kname)) {
        const char *why = sb_str(&d.msg);
        sched_note(p, "the %s plan '%s' does not verify; the group falls back: %.*s", what, kname,
                   (int)strcspn(why, "\n"), *why ? why : "a kernel of that name exists");
        diag_free(&d);
        return NULL;
    }
    diag_free(&d);
    return m->kernels[0];
}


tt_val tt_expr(tt *k, const graph_op *op, const graph_expr *e)
{
    k->op = op;
    return tt_expr_of(k, e);
}

void tt_init(tt *k, sched_plan *p, const graph *g, int bm, int bn, int tr, int tc, int pad)
{
    memset(k, 0, sizeof *k);
    k->p = p;
    k->g = g;
    k->def = g->def;
    k->cpu = p->target == TSL_TARGET_CPU;
    k->in = "    ";
    k->bm = bm, k->bn = bn, k->tr = tr, k->tc = tc, k->pad = pad;
    int lm = bm / tr, ln = bn / tc;
    snprintf(k->lay, sizeof k->lay, "spatial(%d,%d).local(%d,%d)", tr, tc, lm, ln);
    snprintf(k->lrow, sizeof k->lrow, "spatial(%d,1).replicate(%d).local(%d,1)", tr, tc, lm);
    snprintf(k->lcol, sizeof k->lcol, "replicate(%d).spatial(1,%d).local(1,%d)", tr, tc, ln);
    snprintf(k->lkc, sizeof k->lkc, "replicate(%d).spatial(%d,1).local(%d,1)", tr, tc, ln);
    size_t nt = (size_t)k->def->ntensors + 1;
    k->cur = arena_alloc(p->m->arena, sizeof *k->cur * nt);
    k->gat = arena_alloc(p->m->arena, sizeof *k->gat * nt);
}

char *tt_kernel_text(tt *k, const char *kname, const char *grid, int64_t smem)
{
    strbuf h = {0};
    sb_printf(&h, "kernel %s(", kname);
    int np = 0;
    for (int i = 0; i < k->npt; i++) {
        const lang_tensor *t = k->def->tensors[k->ptensor[i]];
        sb_printf(&h, "%s%s: global %s[", np++ ? ", " : "", tt_tname(k, t->index), tt_dt(t->dtype));
        for (int d = 0; d < t->rank; d++) {
            if (d) sb_puts(&h, ", ");
            tt_sexpr_text(k, &h, t->shape[d]);
        }
        sb_puts(&h, "]");
    }
    for (int i = 0; i < k->nsc; i++) {
        const lang_tensor *t = k->def->tensors[k->pscalar[i]];
        char db[16];
        sb_printf(&h, "%s%s: %s", np++ ? ", " : "", tt_tname(k, t->index),
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
    sb_printf(&h, ") grid(%s) threads(%d) smem_budget(%lld) {\n", grid, k->tr * k->tc, (long long)smem);
    sb_puts(&h, sb_str(&k->b));
    sb_puts(&h, "}\n");
    if (k->fail) {
        sb_free(&h);
        return NULL;
    }
    return sb_take(&h);
}

void tt_push_launch(tt *k, tile_kernel *kern, const graph_group *grp, const sched_guard *guard)
{
    sched_plan *p = k->p;
    tsl_arena *ar = p->m->arena;
    ARENA_PUSH(ar, p->m->kernels, p->m->nkernels, p->m->capkernels, kern);
    sched_launch ln = {.k = kern, .stmt = grp->first, .nstmts = grp->nops};
    if (guard) ln.guard = *guard;
    ARENA_PUSH(ar, p->launches, p->nlaunches, p->caplaunches, ln);
    sched_launch *l = &p->launches[p->nlaunches - 1];
    for (int i = 0; i < k->npt; i++) {
        sched_arg arg = {.name = kern->params[l->nargs]->name, .kind = SCHED_ARG_TENSOR, .tensor = k->ptensor[i]};
        ARENA_PUSH(ar, l->args, l->nargs, l->capargs, arg);
    }
    for (int i = 0; i < k->nsc; i++) {
        sched_arg arg = {.name = kern->params[l->nargs]->name, .kind = SCHED_ARG_SCALAR, .tensor = k->pscalar[i]};
        ARENA_PUSH(ar, l->args, l->nargs, l->capargs, arg);
    }
    for (int i = 0; i < k->nsz; i++) {
        if (k->psize[i] < 0) continue;
        sched_arg arg = {.name = kern->params[l->nargs]->name, .kind = SCHED_ARG_SIZE, .sym = k->psize[i]};
        ARENA_PUSH(ar, l->args, l->nargs, l->capargs, arg);
    }
    TSL_ASSERT(l->nargs == kern->nparams);
}
