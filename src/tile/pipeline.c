/* pipeline.c — expands `pipeline(...) { body }` into plain tile IR
 * (pipeline.h has the contract). For a grid of T points, S stages, the
 * pipeline becomes (names carry a per-kernel prefix `pipeN_`):
 *
 *   let T = E0 * E1 * ...
 *   <in>_buf = alloc shared dt[S, b0, b1, ...]    (per shared input)
 *   var <in>_n = 0  var <in>_u = 0                 (copies issued / consumed)
 *   <out> = alloc shared|register ...              (resident out blocks)
 *   for s in 0 : S-1 { if s < T { ISSUE(s) }  commit }          prologue
 *   for j in 0 : T {                                             steady state
 *     let g0 = j / (E1*...) % E0, ...                            grid point
 *     wait S-2   sync   if j+S-1 < T { ISSUE(j+S-1) }   commit
 *     if CHANGED(j) { set <in>_u = <in>_u + 1 }
 *     let <in>_slot = (<in>_u - 1) % S
 *     BODY, each use of <in> read as <in>_buf[<in>_slot, ...]
 *     if j == T-1 || OUT_CHANGED(j+1) { write <out> back }       epilogue
 *   }
 * ISSUE(i): if CHANGED(i) { copy_async G[idx(i)*b] -> <in>_buf[<in>_n % S]
 *           set <in>_n = <in>_n + 1 }
 * With S == 1 the order is: sync, issue j, commit, wait 0, sync, body.
 * CHANGED(i) is i == 0 or a block index differing from point i-1's, so a
 * block that stays the same is not copied again (Pallas' rule). Register
 * inputs are loaded with load_global when they change. */
#include <string.h>

#include "tile/pipeline.h"

typedef struct pexp {
    tile_module *m;
    tile_kernel *k;
    const tsl_source *src;
    tsl_diag *d;
    int serial;          /* pipelines expanded so far in this kernel */
    char pre[32];        /* name prefix of the current pipeline */
    const tile_pipeline *p;
    tile_expr *total;    /* T */
    tile_expr **stride;  /* per grid dim: product of the later extents */
} pexp;

static const char *pname(pexp *X, const char *a, const char *b)
{
    return arena_printf(X->m->arena, "%s%s%s", X->pre, a, b ? b : "");
}

static tsl_status perr(pexp *X, size_t pos, const char *fmt, ...) TSL_PRINTF(3, 4);
static tsl_status perr(pexp *X, size_t pos, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (X->src) diag_error_at(X->d, X->src, pos, TSL_ERR_SEMANTIC, "%s", msg);
    else diag_error(X->d, TSL_ERR_SEMANTIC, "%s", msg);
    return TSL_ERR_SEMANTIC;
}

/* ---- expressions ----------------------------------------------------------- */

static tile_expr *eint(pexp *X, int64_t v) { return tile_expr_int(X->m, v); }
static tile_expr *eval_(pexp *X, tile_value *v) { return tile_expr_value(X->m, v); }
/* a op b, folding the 1s and 0s the expansion itself introduces. */
static tile_expr *ebin(pexp *X, tile_binop op, tile_expr *a, tile_expr *b)
{
    int64_t ca, cb;
    int ka = tile_expr_const(a, &ca), kb = tile_expr_const(b, &cb);
    if ((op == TILE_OP_MUL || op == TILE_OP_DIV) && kb && cb == 1) return a;
    if (op == TILE_OP_MUL && ka && ca == 1) return b;
    if ((op == TILE_OP_ADD || op == TILE_OP_SUB) && kb && cb == 0) return a;
    return tile_expr_bin(X->m, op, a, b);
}

/* Does e read one of the pipeline's grid variables? */
static int uses_grid(pexp *X, const tile_expr *e)
{
    if (!e) return 0;
    if (e->kind == TILE_E_VALUE)
        for (int g = 0; g < X->p->ngrid; g++)
            if (e->v == X->p->gridvars[g]) return 1;
    return uses_grid(X, e->a) || uses_grid(X, e->b);
}

/* Grid variable g at linear iteration `it`: (it / stride_g) % grid_g. The
 * outermost needs no modulo: every `it` the expansion reads a block at is
 * in [0, T), and one past either end is only compared (`changed`), so a
 * one-dimensional grid's variable is `it` itself (no division in the
 * steady state's loop). */
static tile_expr *grid_at(pexp *X, int g, tile_expr *it)
{
    tile_expr *q = ebin(X, TILE_OP_DIV, it, X->stride[g]);
    return g == 0 ? q : ebin(X, TILE_OP_MOD, q, X->p->grid[g]);
}

/* Copy of e with the pipeline's grid variables replaced by the grid point
 * of linear iteration `it` (an expression). */
static tile_expr *subst(pexp *X, const tile_expr *e, tile_expr *it)
{
    if (!e) return NULL;
    if (e->kind == TILE_E_VALUE)
        for (int g = 0; g < X->p->ngrid; g++)
            if (e->v == X->p->gridvars[g]) return grid_at(X, g, it);
    tile_expr *c = arena_alloc(X->m->arena, sizeof *c);
    *c = *e;
    c->a = subst(X, e->a, it);
    c->b = subst(X, e->b, it);
    return c;
}

/* it == 0 || the spec's block index at it differs from the one at it-1.
 * Constant 1 when an index is the one grid variable itself: it moves at
 * every step (GEMM's k). */
static tile_expr *changed(pexp *X, const tile_blockspec *bs, tile_expr *it)
{
    tile_expr *prev = ebin(X, TILE_OP_SUB, it, eint(X, 1));
    tile_expr *c = ebin(X, TILE_OP_EQ, it, eint(X, 0));
    for (int i = 0; i < bs->rank; i++) {
        if (X->p->ngrid == 1 && bs->index[i]->kind == TILE_E_VALUE && bs->index[i]->v == X->p->gridvars[0])
            return eint(X, 1);
        if (uses_grid(X, bs->index[i]))
            c = ebin(X, TILE_OP_OR, c, ebin(X, TILE_OP_NE, subst(X, bs->index[i], it), subst(X, bs->index[i], prev)));
    }
    return c;
}

/* ---- statements ------------------------------------------------------------- */

static tile_stmt *stmt_new(pexp *X, tile_block *b, tile_stmt_kind kind, size_t pos)
{
    tile_stmt *s = arena_alloc(X->m->arena, sizeof *s);
    s->kind = kind;
    s->pos = pos;
    s->instr.dim = -1;
    ARENA_PUSH(X->m->arena, b->items, b->n, b->cap, s);
    return s;
}

static tile_value *let_new(pexp *X, tile_block *b, tile_stmt_kind kind, const char *name, tile_expr *e,
                           size_t pos)
{
    tile_stmt *s = stmt_new(X, b, kind, pos);
    s->v = tile_kernel_new_value(X->m, X->k, TILE_V_SCALAR, kind == TILE_S_VAR ? TILE_O_VAR : TILE_O_LET, name);
    s->v->def = s;
    s->v->pos = pos;
    s->e = e;
    return s->v;
}

static void set_new(pexp *X, tile_block *b, tile_value *v, tile_expr *e, size_t pos)
{
    tile_stmt *s = stmt_new(X, b, TILE_S_SET, pos);
    s->v = v;
    s->e = e;
}

static tile_block *if_new(pexp *X, tile_block *b, tile_expr *cond, size_t pos)
{
    int64_t k;
    if (tile_expr_const(cond, &k) && k) return b; /* always: no `if` */
    tile_stmt *s = stmt_new(X, b, TILE_S_IF, pos);
    s->e = cond;
    s->body = tile_block_new(X->m);
    return s->body;
}

static tile_stmt *instr_new(pexp *X, tile_block *b, tile_op op, size_t pos)
{
    tile_stmt *s = stmt_new(X, b, TILE_S_INSTR, pos);
    s->instr.op = op;
    return s;
}

/* T[e0*b0, e1*b1, ...]: the block at block index exprs e. */
static tile_operand block_operand(pexp *X, const tile_blockspec *bs, tile_expr *it)
{
    tile_operand o = tile_operand_tensor(bs->tensor);
    o.pos = bs->pos;
    tile_expr **idx = arena_alloc(X->m->arena, sizeof(tile_expr *) * (size_t)bs->rank);
    for (int i = 0; i < bs->rank; i++)
        idx[i] = ebin(X, TILE_OP_MUL, it ? subst(X, bs->index[i], it) : bs->index[i], eint(X, bs->block[i]));
    tile_operand_index(X->m, &o, bs->rank, idx);
    return o;
}

/* One stage of a buffer buf[S, b0, b1, ...]: the operand's first index
 * gets the slot in front ([slot, i0, i1, ...]; no index: [slot]); an
 * operand without an index step gets [slot] (the slice of stage slot). */
static void add_slot_steps(pexp *X, tile_operand *o, tile_expr *slot)
{
    tile_step ix;
    memset(&ix, 0, sizeof ix);
    ix.kind = TILE_STEP_INDEX;
    ix.pos = o->pos;
    int merge = o->nsteps && o->steps[0].kind == TILE_STEP_INDEX;
    int n0 = merge ? o->steps[0].n : 0;
    ix.n = n0 + 1;
    ix.idx = arena_alloc(X->m->arena, sizeof(tile_expr *) * (size_t)ix.n);
    ix.idx[0] = slot;
    for (int i = 0; i < n0; i++) ix.idx[i + 1] = o->steps[0].idx[i];
    int n = o->nsteps + (merge ? 0 : 1);
    tile_step *steps = arena_alloc(X->m->arena, sizeof(tile_step) * (size_t)n);
    steps[0] = ix;
    for (int i = merge ? 1 : 0, j = 1; i < o->nsteps; i++, j++) steps[j] = o->steps[i];
    o->steps = steps;
    o->nsteps = o->capsteps = n;
}

/* Per shared input: its buffer and counters. */
typedef struct pin {
    const tile_blockspec *bs;
    tile_value *buf, *n, *u, *slot;
} pin;

static void rewrite_operand(pexp *X, pin *ins, int nin, tile_operand *o)
{
    if (!o->v) return;
    for (int i = 0; i < nin; i++)
        if (ins[i].bs && o->v == ins[i].bs->view) {
            o->v = ins[i].buf;
            add_slot_steps(X, o, eval_(X, ins[i].slot));
            return;
        }
}

static tsl_status rewrite_block(pexp *X, pin *ins, int nin, tile_block *b)
{
    if (!b) return TSL_OK;
    for (int i = 0; i < b->n; i++) {
        tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_PIPELINE) return perr(X, s->pos, "a pipeline inside a pipeline is not supported");
        if (s->kind == TILE_S_INSTR) {
            for (int a = 0; a < s->instr.nargs; a++) rewrite_operand(X, ins, nin, &s->instr.args[a]);
            if (s->instr.has_dst) rewrite_operand(X, ins, nin, &s->instr.dst);
            tsl_status st = rewrite_block(X, ins, nin, s->instr.decomp);
            if (st) return st;
        }
        tsl_status st = rewrite_block(X, ins, nin, s->body);
        if (!st) st = rewrite_block(X, ins, nin, s->els);
        if (st) return st;
    }
    return TSL_OK;
}

/* ISSUE(it) for every shared input into block b. */
static void issue(pexp *X, pin *ins, int nin, tile_block *b, tile_expr *it, int64_t S)
{
    for (int i = 0; i < nin; i++) {
        if (!ins[i].bs) continue;
        const tile_blockspec *bs = ins[i].bs;
        tile_block *then = if_new(X, b, changed(X, bs, it), bs->pos);
        tile_stmt *c = instr_new(X, then, TILE_I_COPY_ASYNC, bs->pos);
        tile_instr_arg(X->m, &c->instr, block_operand(X, bs, it));
        tile_operand dst = tile_operand_tensor(ins[i].buf);
        dst.pos = bs->pos;
        add_slot_steps(X, &dst, ebin(X, TILE_OP_MOD, eval_(X, ins[i].n), eint(X, S)));
        tile_instr_dst(&c->instr, dst);
        c->instr.bytes = 16;
        set_new(X, then, ins[i].n, ebin(X, TILE_OP_ADD, eval_(X, ins[i].n), eint(X, 1)), bs->pos);
    }
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* A register layout spreading a block over up to `threads` threads:
 * local(b/t...).spatial(t...), t taken from the last dim first. */
static tile_layout *spread_layout(pexp *X, const int64_t *blk, int rank, int threads)
{
    int64_t t[16], rem = threads;
    for (int i = rank - 1; i >= 0; i--) {
        t[i] = gcd64(blk[i], rem);
        rem /= t[i];
    }
    strbuf sb = {0};
    sb_puts(&sb, "local(");
    for (int i = 0; i < rank; i++) sb_printf(&sb, "%s%lld", i ? "," : "", (long long)(blk[i] / t[i]));
    sb_puts(&sb, ").spatial(");
    for (int i = 0; i < rank; i++) sb_printf(&sb, "%s%lld", i ? "," : "", (long long)t[i]);
    sb_puts(&sb, ")");
    char *err = NULL;
    tile_layout *l = tile_layout_make(X->m, sb_str(&sb), &err);
    sb_free(&sb);
    return l;
}

/* Write out block bs (index at the current grid point) back to global. */
static tsl_status write_back(pexp *X, const tile_blockspec *bs, tile_block *b)
{
    tile_operand dst = block_operand(X, bs, NULL);
    if (bs->space == TILE_REGISTER) {
        tile_stmt *s = instr_new(X, b, TILE_I_STORE_GLOBAL, bs->pos);
        tile_operand src = tile_operand_tensor(bs->view);
        tile_instr_arg(X->m, &s->instr, src);
        tile_instr_dst(&s->instr, dst);
        return TSL_OK;
    }
    tile_layout *l = spread_layout(X, bs->block, bs->rank, X->k->threads);
    if (!l) return perr(X, bs->pos, "no register layout for writing back block '%s'", bs->view->name);
    instr_new(X, b, TILE_I_SYNC, bs->pos);
    tile_stmt *ld = instr_new(X, b, TILE_I_LOAD_SHARED, bs->pos);
    tile_instr_arg(X->m, &ld->instr, tile_operand_tensor(bs->view));
    ld->instr.result = tile_kernel_new_value(X->m, X->k, TILE_V_TENSOR, TILE_O_DEF, pname(X, bs->view->name, "_wb"));
    ld->instr.result->def = ld;
    ld->instr.result->type = tile_type_make(X->m, TILE_REGISTER, bs->tensor->type.dt, bs->rank, bs->block, l);
    tile_stmt *s = instr_new(X, b, TILE_I_STORE_GLOBAL, bs->pos);
    tile_instr_arg(X->m, &s->instr, tile_operand_tensor(ld->instr.result));
    tile_instr_dst(&s->instr, dst);
    return TSL_OK;
}

/* The [S, block...] buffer layout of a block laid out by `l` (a plain
 * strided layout "(d0,...):(s0,...)", e.g. rows padded against bank
 * conflicts): stage s starts at s * cosize(l). NULL for other forms
 * (swizzled, hierarchical). */
static tile_layout *stage_layout(pexp *X, const tile_layout *l, int64_t S)
{
    const char *t = l->text, *mid = strstr(t, "):(");
    size_t n = strlen(t);
    if (l->v.kind != LAYOUT_VALUE_DATA || t[0] != '(' || !mid || n < 7 || t[n - 1] != ')') return NULL;
    for (const char *q = t + 1; q < mid; q++)
        if (*q == '(' || *q == ')') return NULL;
    for (const char *q = mid + 3; q < t + n - 1; q++)
        if (*q == '(' || *q == ')') return NULL;
    strbuf sb = {0};
    sb_printf(&sb, "(%lld,%.*s):(%lld,%.*s)", (long long)S, (int)(mid - t - 1), t + 1,
              (long long)layout_cosize(&l->v.data), (int)(t + n - 1 - (mid + 3)), mid + 3);
    char *err = NULL;
    tile_layout *r = tile_layout_make(X->m, sb_str(&sb), &err);
    sb_free(&sb);
    return r;
}

/* The statements replacing pipeline statement ps, appended to out. */
static tsl_status expand_one(pexp *X, tile_stmt *ps, tile_block *out)
{
    tile_pipeline *p = &ps->pipe;
    size_t pos = ps->pos;
    int64_t S = p->stages;
    X->p = p;
    snprintf(X->pre, sizeof X->pre, "pipe%d_", X->serial++);
    /* T and the strides of the linear iteration */
    X->stride = arena_alloc(X->m->arena, sizeof(tile_expr *) * (size_t)(p->ngrid + 1));
    tile_expr *acc = eint(X, 1);
    for (int g = p->ngrid - 1; g >= 0; g--) {
        X->stride[g] = acc;
        acc = ebin(X, TILE_OP_MUL, p->grid[g], acc);
    }
    tile_value *T = let_new(X, out, TILE_S_LET, pname(X, "T", NULL), acc, pos);
    X->total = eval_(X, T);
    pin *ins = arena_alloc(X->m->arena, sizeof(pin) * (size_t)(p->nins + 1));
    for (int i = 0; i < p->nins; i++) {
        const tile_blockspec *bs = &p->ins[i];
        if (bs->space == TILE_REGISTER) {
            /* loaded synchronously when it changes: its storage first */
            tile_stmt *a = instr_new(X, out, TILE_I_ALLOC, bs->pos);
            a->instr.result = bs->view;
            bs->view->origin = TILE_O_DEF;
            bs->view->def = a;
            continue;
        }
        tile_layout *blay = NULL;
        if (bs->layout) {
            blay = stage_layout(X, bs->layout, S);
            if (!blay)
                return perr(X, bs->pos,
                            "pipeline expansion: a shared input block's layout must be a plain strided layout "
                            "(shape):(strides), not '%s'",
                            bs->layout->text);
        }
        ins[i].bs = bs;
        int64_t dims[17];
        dims[0] = S;
        for (int d = 0; d < bs->rank && d < 16; d++) dims[d + 1] = bs->block[d];
        tile_stmt *a = instr_new(X, out, TILE_I_ALLOC, bs->pos);
        a->instr.result = tile_kernel_new_value(X->m, X->k, TILE_V_TENSOR, TILE_O_DEF, pname(X, bs->view->name, "_buf"));
        a->instr.result->def = a;
        a->instr.result->pos = bs->pos;
        a->instr.result->type = tile_type_make(X->m, TILE_SHARED, bs->tensor->type.dt, bs->rank + 1, dims, blay);
        ins[i].buf = a->instr.result;
        ins[i].n = let_new(X, out, TILE_S_VAR, pname(X, bs->view->name, "_n"), eint(X, 0), bs->pos);
        ins[i].u = let_new(X, out, TILE_S_VAR, pname(X, bs->view->name, "_u"), eint(X, 0), bs->pos);
    }
    for (int i = 0; i < p->nouts; i++) {
        tile_blockspec *bs = &p->outs[i];
        tile_stmt *a = instr_new(X, out, TILE_I_ALLOC, bs->pos);
        a->instr.result = bs->view;
        bs->view->origin = TILE_O_DEF;
        bs->view->def = a;
    }
    /* prologue */
    if (S > 1) {
        tile_stmt *f = stmt_new(X, out, TILE_S_FOR, pos);
        f->v = tile_kernel_new_value(X->m, X->k, TILE_V_SCALAR, TILE_O_LOOP, pname(X, "s", NULL));
        f->v->def = f;
        f->lo = eint(X, 0);
        f->hi = eint(X, S - 1);
        f->body = tile_block_new(X->m);
        tile_block *then = if_new(X, f->body, ebin(X, TILE_OP_LT, eval_(X, f->v), X->total), pos);
        issue(X, ins, p->nins, then, eval_(X, f->v), S);
        instr_new(X, f->body, TILE_I_COMMIT, pos);
    }
    /* steady state */
    tile_stmt *f = stmt_new(X, out, TILE_S_FOR, pos);
    f->v = tile_kernel_new_value(X->m, X->k, TILE_V_SCALAR, TILE_O_LOOP, pname(X, "j", NULL));
    f->v->def = f;
    f->lo = eint(X, 0);
    f->hi = X->total;
    f->body = tile_block_new(X->m);
    tile_block *b = f->body;
    tile_expr *j = eval_(X, f->v);
    for (int g = 0; g < p->ngrid; g++) {
        tile_stmt *s = stmt_new(X, b, TILE_S_LET, pos);
        s->v = p->gridvars[g];
        s->v->origin = TILE_O_LET;
        s->v->def = s;
        s->e = grid_at(X, g, j);
    }
    tile_stmt *w;
    if (S > 1) {
        w = instr_new(X, b, TILE_I_WAIT, pos);
        tile_instr_arg(X->m, &w->instr, tile_operand_scalar(eint(X, S - 2)));
        instr_new(X, b, TILE_I_SYNC, pos);
        tile_expr *ahead = ebin(X, TILE_OP_ADD, j, eint(X, S - 1));
        tile_block *then = if_new(X, b, ebin(X, TILE_OP_LT, ahead, X->total), pos);
        issue(X, ins, p->nins, then, ahead, S);
        instr_new(X, b, TILE_I_COMMIT, pos);
    } else {
        instr_new(X, b, TILE_I_SYNC, pos);
        issue(X, ins, p->nins, b, j, S);
        instr_new(X, b, TILE_I_COMMIT, pos);
        w = instr_new(X, b, TILE_I_WAIT, pos);
        tile_instr_arg(X->m, &w->instr, tile_operand_scalar(eint(X, 0)));
        instr_new(X, b, TILE_I_SYNC, pos);
    }
    for (int i = 0; i < p->nins; i++) {
        const tile_blockspec *bs = &p->ins[i];
        tile_block *then = if_new(X, b, changed(X, bs, j), bs->pos);
        if (!ins[i].bs) {
            tile_stmt *ld = instr_new(X, then, TILE_I_LOAD_GLOBAL, bs->pos);
            tile_instr_arg(X->m, &ld->instr, block_operand(X, bs, NULL));
            tile_instr_dst(&ld->instr, tile_operand_tensor(bs->view));
            continue;
        }
        set_new(X, then, ins[i].u, ebin(X, TILE_OP_ADD, eval_(X, ins[i].u), eint(X, 1)), bs->pos);
        ins[i].slot = let_new(X, b, TILE_S_LET, pname(X, bs->view->name, "_slot"),
                              ebin(X, TILE_OP_MOD, ebin(X, TILE_OP_SUB, eval_(X, ins[i].u), eint(X, 1)), eint(X, S)),
                              bs->pos);
    }
    tsl_status st = rewrite_block(X, ins, p->nins, p->body);
    if (st) return st;
    for (int i = 0; i < p->body->n; i++) ARENA_PUSH(X->m->arena, b->items, b->n, b->cap, p->body->items[i]);
    for (int i = 0; i < p->nouts; i++) {
        const tile_blockspec *bs = &p->outs[i];
        tile_expr *next = ebin(X, TILE_OP_ADD, j, eint(X, 1));
        tile_expr *last = ebin(X, TILE_OP_EQ, next, X->total);
        tile_expr *cond = ebin(X, TILE_OP_OR, last, changed(X, bs, next));
        tile_block *then = if_new(X, b, cond, bs->pos);
        if ((st = write_back(X, bs, then))) return st;
    }
    return TSL_OK;
}

static tsl_status expand_block(pexp *X, tile_block *b)
{
    if (!b) return TSL_OK;
    tile_block nb = {0};
    int any = 0;
    for (int i = 0; i < b->n; i++) {
        tile_stmt *s = b->items[i];
        tsl_status st;
        if (s->kind == TILE_S_PIPELINE) {
            if ((st = expand_one(X, s, &nb))) return st;
            any = 1;
            continue;
        }
        if ((st = expand_block(X, s->body)) || (st = expand_block(X, s->els))) return st;
        ARENA_PUSH(X->m->arena, nb.items, nb.n, nb.cap, s);
    }
    if (any) *b = nb;
    return TSL_OK;
}

/* ---- the shared-memory budget ------------------------------------------------------- */

static int64_t type_bytes(const tile_type *t)
{
    int64_t n = tile_type_numel(t);
    if (n < 0) return 0;
    if (t->layout && t->layout->v.kind == LAYOUT_VALUE_DATA) {
        int64_t co = layout_cosize(&t->layout->v.data);
        if (co > n) n = co;
    }
    return (n * t->dt.bits + 7) / 8;
}

static int64_t spec_bytes(const tile_blockspec *bs)
{
    int64_t n = 1;
    for (int i = 0; i < bs->rank; i++) n *= bs->block[i];
    if (bs->layout && bs->layout->v.kind == LAYOUT_VALUE_DATA && layout_cosize(&bs->layout->v.data) > n)
        n = layout_cosize(&bs->layout->v.data); /* padding counts */
    return (n * bs->tensor->type.dt.bits + 7) / 8;
}

/* Bytes of shared memory block b needs (each allocation its own range). */
static int64_t smem_need(const tile_block *b, strbuf *why)
{
    int64_t n = 0;
    if (!b) return 0;
    for (int i = 0; i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR && s->instr.op == TILE_I_ALLOC && s->instr.result &&
            s->instr.result->type.space == TILE_SHARED) {
            int64_t x = type_bytes(&s->instr.result->type);
            sb_printf(why, "%s%s %lld", why->len ? ", " : "", s->instr.result->name, (long long)x);
            n += x;
        }
        if (s->kind == TILE_S_PIPELINE) {
            const tile_pipeline *p = &s->pipe;
            for (int j = 0; j < p->nins + p->nouts; j++) {
                const tile_blockspec *bs = j < p->nins ? &p->ins[j] : &p->outs[j - p->nins];
                if (bs->space != TILE_SHARED) continue;
                int64_t st = j < p->nins ? p->stages : 1, x = st * spec_bytes(bs);
                sb_printf(why, "%s%s %lld x %lld", why->len ? ", " : "", bs->view->name, (long long)st,
                          (long long)spec_bytes(bs));
                n += x;
            }
            n += smem_need(p->body, why);
        }
        if (s->kind == TILE_S_INSTR) n += smem_need(s->instr.decomp, why);
        if (s->kind != TILE_S_PIPELINE) n += smem_need(s->body, why) + smem_need(s->els, why);
    }
    return n;
}

tsl_status tile_pipeline_expand(tile_module *m, const tsl_source *src, int64_t default_budget, tsl_diag *d)
{
    for (int i = 0; i < m->nkernels; i++) {
        pexp X;
        memset(&X, 0, sizeof X);
        X.m = m;
        X.k = m->kernels[i];
        X.src = src;
        X.d = d;
        int64_t budget = X.k->smem_budget ? X.k->smem_budget : default_budget;
        strbuf why = {0};
        int64_t need = smem_need(X.k->body, &why);
        if (budget > 0 && need > budget) {
            perr(&X, X.k->pos,
                 "kernel '%s' needs %lld bytes of shared memory (%s) but the budget is %lld bytes",
                 X.k->name, (long long)need, sb_str(&why), (long long)budget);
            sb_free(&why);
            return TSL_ERR_SEMANTIC;
        }
        sb_free(&why);
        tsl_status st = expand_block(&X, X.k->body);
        if (st) return st;
    }
    return TSL_OK;
}
