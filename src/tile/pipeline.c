/* pipeline.c — expands `pipeline(...) { body }` into plain tile IR
 * (pipeline.h has the contract): the walk over every kernel's statements,
 * the helpers both forms use (pipeline_int.h), the shared-memory budget and
 * the cp.async form. For a grid of T points, S stages and a lookahead
 * L = S-1-N (N: the body's trailing `wgmma_wait N`, whose last N steps'
 * wgmma groups may still read their stages; usually 0), the cp.async form
 * is (names carry a per-kernel prefix `pipeN_`):
 *
 *   let T = E0 * E1 * ...
 *   <in>_buf = alloc shared dt[S, b0, b1, ...]    (per shared input)
 *   var <in>_n = 0  var <in>_u = 0                 (copies issued / consumed)
 *   <out> = alloc shared|register ...              (resident out blocks)
 *   for s in 0 : L { if s < T { ISSUE(s) }  commit }             prologue
 *   for j in 0 : T {                                             steady state
 *     let g0 = j / (E1*...) % E0, ...                            grid point
 *     wait L-1   sync   if j+L < T { ISSUE(j+L) }   commit
 *     if CHANGED(j) { set <in>_u = <in>_u + 1 }
 *     let <in>_slot = (<in>_u - 1) % S
 *     BODY, each use of <in> read as <in>_buf[<in>_slot, ...]
 *     if j == T-1 || OUT_CHANGED(j+1) { write <out> back }       epilogue
 *   }
 *   [wgmma_wait 0]                                               when N > 0
 * ISSUE(i): if CHANGED(i) { copy_async G[idx(i)*b] -> <in>_buf[<in>_n % S]
 *           set <in>_n = <in>_n + 1 }
 * With L == 0 the order is: sync, issue j, commit, wait 0, sync, body.
 * CHANGED(i) is i == 0 or a block index differing from point i-1's, so a
 * block that stays the same is not copied again (Pallas' rule). Register
 * inputs are loaded with load_global when they change. The TMA form is
 * pipeline_tma.c's. */
#include <string.h>

#include "tile/pipeline_int.h"

const char *pipe_name(pexp *X, const char *a, const char *b)
{
    return arena_printf(X->m->arena, "%s%s%s", X->pre, a, b ? b : "");
}

tsl_status pipe_err(pexp *X, size_t pos, const char *fmt, ...)
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

tile_expr *pipe_int(pexp *X, int64_t v) { return tile_expr_int(X->m, v); }
tile_expr *pipe_val(pexp *X, tile_value *v) { return tile_expr_value(X->m, v); }

tile_expr *pipe_bin(pexp *X, tile_binop op, tile_expr *a, tile_expr *b)
{
    int64_t ca, cb, cv;
    int ka = tile_expr_const(a, &ca), kb = tile_expr_const(b, &cb);
    if (ka && kb && tile_expr_const(tile_expr_bin(X->m, op, a, b), &cv)) return pipe_int(X, cv);
    if ((op == TILE_OP_MUL || op == TILE_OP_DIV) && kb && cb == 1) return a;
    if (op == TILE_OP_MUL && ka && ca == 1) return b;
    if ((op == TILE_OP_ADD || op == TILE_OP_SUB) && kb && cb == 0) return a;
    if (op == TILE_OP_OR && ((ka && ca) || (kb && cb))) return pipe_int(X, 1);
    if (op == TILE_OP_AND && ka && ca) return b;
    if (op == TILE_OP_AND && kb && cb) return a;
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
    tile_expr *q = pipe_bin(X, TILE_OP_DIV, it, X->stride[g]);
    return g == 0 ? q : pipe_bin(X, TILE_OP_MOD, q, X->p->grid[g]);
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

/* Constant 1 when an index is the one grid variable itself: it moves at
 * every step (GEMM's k). */
tile_expr *pipe_changed(pexp *X, const tile_blockspec *bs, tile_expr *it)
{
    tile_expr *prev = pipe_bin(X, TILE_OP_SUB, it, pipe_int(X, 1));
    tile_expr *c = pipe_bin(X, TILE_OP_EQ, it, pipe_int(X, 0));
    for (int i = 0; i < bs->rank; i++) {
        if (X->p->ngrid == 1 && bs->index[i]->kind == TILE_E_VALUE && bs->index[i]->v == X->p->gridvars[0])
            return pipe_int(X, 1);
        if (uses_grid(X, bs->index[i]))
            c = pipe_bin(X, TILE_OP_OR, c,
                         pipe_bin(X, TILE_OP_NE, subst(X, bs->index[i], it), subst(X, bs->index[i], prev)));
    }
    return c;
}

/* ---- statements ------------------------------------------------------------- */

tile_stmt *pipe_stmt(pexp *X, tile_block *b, tile_stmt_kind kind, size_t pos)
{
    tile_stmt *s = arena_alloc(X->m->arena, sizeof *s);
    s->kind = kind;
    s->pos = pos;
    s->instr.dim = -1;
    ARENA_PUSH(X->m->arena, b->items, b->n, b->cap, s);
    return s;
}

tile_value *pipe_let(pexp *X, tile_block *b, tile_stmt_kind kind, const char *name, tile_expr *e, size_t pos)
{
    tile_stmt *s = pipe_stmt(X, b, kind, pos);
    s->v = tile_kernel_new_value(X->m, X->k, TILE_V_SCALAR, kind == TILE_S_VAR ? TILE_O_VAR : TILE_O_LET, name);
    s->v->def = s;
    s->v->pos = pos;
    s->e = e;
    return s->v;
}

void pipe_set(pexp *X, tile_block *b, tile_value *v, tile_expr *e, size_t pos)
{
    tile_stmt *s = pipe_stmt(X, b, TILE_S_SET, pos);
    s->v = v;
    s->e = e;
}

tile_block *pipe_if(pexp *X, tile_block *b, tile_expr *cond, size_t pos)
{
    int64_t k;
    if (tile_expr_const(cond, &k) && k) return b; /* always: no `if` */
    tile_stmt *s = pipe_stmt(X, b, TILE_S_IF, pos);
    s->e = cond;
    s->body = tile_block_new(X->m);
    return s->body;
}

tile_stmt *pipe_instr(pexp *X, tile_block *b, tile_op op, size_t pos)
{
    tile_stmt *s = pipe_stmt(X, b, TILE_S_INSTR, pos);
    s->instr.op = op;
    return s;
}

tile_stmt *pipe_for(pexp *X, tile_block *b, const char *name, tile_expr *lo, tile_expr *hi, size_t pos)
{
    tile_stmt *f = pipe_stmt(X, b, TILE_S_FOR, pos);
    f->v = tile_kernel_new_value(X->m, X->k, TILE_V_SCALAR, TILE_O_LOOP, pipe_name(X, name, NULL));
    f->v->def = f;
    f->lo = lo;
    f->hi = hi;
    f->body = tile_block_new(X->m);
    return f;
}

tile_operand pipe_block_operand(pexp *X, const tile_blockspec *bs, tile_expr *it)
{
    tile_operand o = tile_operand_tensor(bs->tensor);
    o.pos = bs->pos;
    tile_expr **idx = arena_alloc(X->m->arena, sizeof(tile_expr *) * (size_t)bs->rank);
    for (int i = 0; i < bs->rank; i++)
        idx[i] = pipe_bin(X, TILE_OP_MUL, it ? subst(X, bs->index[i], it) : bs->index[i], pipe_int(X, bs->block[i]));
    tile_operand_index(X->m, &o, bs->rank, idx);
    return o;
}

/* One stage of a buffer buf[S, b0, b1, ...]: the operand's first index
 * gets the slot in front ([slot, i0, i1, ...]; no index: [slot]); an
 * operand without an index step gets [slot] (the slice of stage slot). */
void pipe_add_slot(pexp *X, tile_operand *o, tile_expr *slot)
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

static void rewrite_operand(pexp *X, pin *ins, int nin, tile_operand *o)
{
    if (!o->v) return;
    for (int i = 0; i < nin; i++)
        if (ins[i].bs && o->v == ins[i].bs->view) {
            o->v = ins[i].buf;
            pipe_add_slot(X, o, pipe_val(X, ins[i].slot));
            return;
        }
}

tsl_status pipe_rewrite(pexp *X, pin *ins, int nin, tile_block *b)
{
    if (!b) return TSL_OK;
    for (int i = 0; i < b->n; i++) {
        tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_PIPELINE) return pipe_err(X, s->pos, "a pipeline inside a pipeline is not supported");
        if (s->kind == TILE_S_INSTR) {
            for (int a = 0; a < s->instr.nargs; a++) rewrite_operand(X, ins, nin, &s->instr.args[a]);
            if (s->instr.has_dst) rewrite_operand(X, ins, nin, &s->instr.dst);
            tsl_status st = pipe_rewrite(X, ins, nin, s->instr.decomp);
            if (st) return st;
        }
        tsl_status st = pipe_rewrite(X, ins, nin, s->body);
        if (!st) st = pipe_rewrite(X, ins, nin, s->els);
        if (st) return st;
    }
    return TSL_OK;
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
tsl_status pipe_write_back(pexp *X, const tile_blockspec *bs, tile_block *b)
{
    tile_operand dst = pipe_block_operand(X, bs, NULL);
    if (bs->space == TILE_REGISTER) {
        tile_stmt *s = pipe_instr(X, b, TILE_I_STORE_GLOBAL, bs->pos);
        tile_operand src = tile_operand_tensor(bs->view);
        tile_instr_arg(X->m, &s->instr, src);
        tile_instr_dst(&s->instr, dst);
        return TSL_OK;
    }
    tile_layout *l = spread_layout(X, bs->block, bs->rank, X->threads);
    if (!l) return pipe_err(X, bs->pos, "no register layout for writing back block '%s'", bs->view->name);
    pipe_instr(X, b, TILE_I_SYNC, bs->pos);
    tile_stmt *ld = pipe_instr(X, b, TILE_I_LOAD_SHARED, bs->pos);
    tile_instr_arg(X->m, &ld->instr, tile_operand_tensor(bs->view));
    ld->instr.result = tile_kernel_new_value(X->m, X->k, TILE_V_TENSOR, TILE_O_DEF, pipe_name(X, bs->view->name, "_wb"));
    ld->instr.result->def = ld;
    ld->instr.result->type = tile_type_make(X->m, TILE_REGISTER, bs->tensor->type.dt, bs->rank, bs->block, l);
    tile_stmt *s = pipe_instr(X, b, TILE_I_STORE_GLOBAL, bs->pos);
    tile_instr_arg(X->m, &s->instr, tile_operand_tensor(ld->instr.result));
    tile_instr_dst(&s->instr, dst);
    return TSL_OK;
}

/* The [S, block...] buffer layout of spec bs: a leading mode S:stride in
 * front of the block layout's modes, under its swizzle. The stride is the
 * block's cosize, rounded up to the swizzle's period 2^(B+M+|S|) so that
 * every stage is swizzled alike (and starts on the swizzle's repeat, as
 * TMA and wgmma need), and for TMA to 128 bytes (a TMA destination's
 * alignment). NULL when the block keeps no layout and none is needed
 * (row-major [S, b0, ...]), or with a reason in why. */
tile_layout *pipe_stage_layout(pexp *X, const tile_blockspec *bs, int64_t S, char *why, size_t nwhy)
{
    int64_t esz = (bs->tensor->type.dt.bits + 7) / 8, numel = 1;
    for (int i = 0; i < bs->rank; i++) numel *= bs->block[i];
    int64_t align = X->o.copy == TILE_PIPE_TMA && esz > 0 && 128 % esz == 0 ? 128 / esz : 1;
    layout plain;
    if (bs->layout) {
        if (bs->layout->v.kind != LAYOUT_VALUE_DATA) {
            snprintf(why, nwhy, "'%s' is not a data layout", bs->layout->text);
            return NULL;
        }
        plain = bs->layout->v.data;
        plain.sw = (layout_swizzle){0, 0, 0};
        if (layout_rank(&plain) != bs->rank) {
            snprintf(why, nwhy, "the layout '%s' has %d modes for a block of rank %d", bs->layout->text,
                     layout_rank(&plain), bs->rank);
            return NULL;
        }
    } else if (numel % align == 0) {
        return NULL;
    } else {
        /* row-major, each stage padded to the alignment */
        layout modes[16];
        int64_t st = 1;
        for (int i = bs->rank - 1; i >= 0 && i < 16; i--) {
            modes[i] = layout_leaf(bs->block[i], st);
            st *= bs->block[i];
        }
        layout_err e;
        if (bs->rank > 16 || layout_tuple(&plain, modes, bs->rank, &e)) {
            snprintf(why, nwhy, "a block of rank %d", bs->rank);
            return NULL;
        }
    }
    layout_swizzle sw = bs->layout ? bs->layout->v.data.sw : (layout_swizzle){0, 0, 0};
    int64_t period = sw.b ? (int64_t)1 << (sw.b + sw.m + (sw.s < 0 ? -sw.s : sw.s)) : 1;
    if (align > period) period = align;
    int64_t stride = (layout_cosize(&plain) + period - 1) / period * period;
    layout modes[LAYOUT_MAX_RANK], staged, out;
    layout_err e;
    memset(&e, 0, sizeof e);
    if (bs->rank + 1 > LAYOUT_MAX_RANK) {
        snprintf(why, nwhy, "a block of rank %d", bs->rank);
        return NULL;
    }
    modes[0] = layout_leaf(S, stride);
    for (int i = 0; i < bs->rank; i++) modes[i + 1] = layout_mode(&plain, i);
    if (layout_tuple(&staged, modes, bs->rank + 1, &e) ||
        (sw.b ? layout_swizzled(&out, sw, &staged, &e) : (out = staged, TSL_OK))) {
        snprintf(why, nwhy, "%s", e.msg);
        return NULL;
    }
    strbuf sb = {0};
    layout_print(&sb, &out);
    char *err = NULL;
    tile_layout *r = tile_layout_make(X->m, sb_str(&sb), &err);
    if (!r) snprintf(why, nwhy, "%s", err ? err : "not a layout");
    sb_free(&sb);
    return r;
}

void pipe_begin(pexp *X, const tile_pipeline *p, tile_block *out, size_t pos)
{
    X->p = p;
    snprintf(X->pre, sizeof X->pre, "pipe%d_", X->serial++);
    X->stride = arena_alloc(X->m->arena, sizeof(tile_expr *) * (size_t)(p->ngrid + 1));
    tile_expr *acc = pipe_int(X, 1);
    for (int g = p->ngrid - 1; g >= 0; g--) {
        X->stride[g] = acc;
        acc = pipe_bin(X, TILE_OP_MUL, p->grid[g], acc);
    }
    X->texpr = acc;
    X->total = pipe_val(X, pipe_let(X, out, TILE_S_LET, pipe_name(X, "T", NULL), acc, pos));
}

void pipe_grid_lets(pexp *X, tile_block *b, tile_expr *j, size_t pos)
{
    for (int g = 0; g < X->p->ngrid; g++) {
        tile_stmt *s = pipe_stmt(X, b, TILE_S_LET, pos);
        s->v = X->p->gridvars[g];
        s->v->origin = TILE_O_LET;
        s->v->def = s;
        s->e = grid_at(X, g, j);
    }
}

static void alloc_view(pexp *X, tile_block *out, const tile_blockspec *bs)
{
    tile_stmt *a = pipe_instr(X, out, TILE_I_ALLOC, bs->pos);
    a->instr.result = bs->view;
    bs->view->origin = TILE_O_DEF;
    bs->view->def = a;
}

void pipe_alloc_views(pexp *X, tile_block *out)
{
    for (int i = 0; i < X->p->nins; i++)
        if (X->p->ins[i].space == TILE_REGISTER) alloc_view(X, out, &X->p->ins[i]);
    for (int i = 0; i < X->p->nouts; i++) alloc_view(X, out, &X->p->outs[i]);
}

void pipe_load_registers(pexp *X, tile_block *b, tile_expr *j)
{
    for (int i = 0; i < X->p->nins; i++) {
        const tile_blockspec *bs = &X->p->ins[i];
        if (bs->space != TILE_REGISTER) continue;
        tile_block *then = pipe_if(X, b, pipe_changed(X, bs, j), bs->pos);
        tile_stmt *ld = pipe_instr(X, then, TILE_I_LOAD_GLOBAL, bs->pos);
        tile_instr_arg(X->m, &ld->instr, pipe_block_operand(X, bs, NULL));
        tile_instr_dst(&ld->instr, tile_operand_tensor(bs->view));
    }
}

tsl_status pipe_write_backs(pexp *X, tile_block *b, tile_expr *j)
{
    for (int i = 0; i < X->p->nouts; i++) {
        const tile_blockspec *bs = &X->p->outs[i];
        tile_expr *next = pipe_bin(X, TILE_OP_ADD, j, pipe_int(X, 1));
        tile_expr *last = pipe_bin(X, TILE_OP_EQ, next, X->total);
        tile_block *then = pipe_if(X, b, pipe_bin(X, TILE_OP_OR, last, pipe_changed(X, bs, next)), bs->pos);
        tsl_status st = pipe_write_back(X, bs, then);
        if (st) return st;
    }
    return TSL_OK;
}

int pipe_trailing_wait(const tile_block *body)
{
    int64_t n;
    const tile_stmt *s = body && body->n ? body->items[body->n - 1] : NULL;
    if (s && s->kind == TILE_S_INSTR && s->instr.op == TILE_I_WGMMA_WAIT && s->instr.nargs == 1 &&
        tile_expr_const(s->instr.args[0].scalar, &n) && n > 0 && n < 64)
        return (int)n;
    return 0;
}

tsl_status pipe_lookahead(pexp *X, const tile_pipeline *p, size_t pos, int64_t *L)
{
    int64_t S = p->stages, N = pipe_trailing_wait(p->body);
    *L = S - 1 - N;
    if (*L >= 0) return TSL_OK;
    return pipe_err(X, pos,
                    "pipeline: stages=%lld leave no stage to copy into: the body ends with wgmma_wait %lld, so the "
                    "wgmma groups of its last %lld step(s) may still read their stages; use at least %lld stages",
                    (long long)S, (long long)N, (long long)N, (long long)N + 1);
}

/* ---- the cp.async form ------------------------------------------------------------- */

/* ISSUE(it) for every shared input into block b. */
static void issue_cp_async(pexp *X, pin *ins, int nin, tile_block *b, tile_expr *it, int64_t S)
{
    for (int i = 0; i < nin; i++) {
        if (!ins[i].bs) continue;
        const tile_blockspec *bs = ins[i].bs;
        tile_block *then = pipe_if(X, b, pipe_changed(X, bs, it), bs->pos);
        tile_stmt *c = pipe_instr(X, then, TILE_I_COPY_ASYNC, bs->pos);
        tile_instr_arg(X->m, &c->instr, pipe_block_operand(X, bs, it));
        tile_operand dst = tile_operand_tensor(ins[i].buf);
        dst.pos = bs->pos;
        pipe_add_slot(X, &dst, pipe_bin(X, TILE_OP_MOD, pipe_val(X, ins[i].n), pipe_int(X, S)));
        tile_instr_dst(&c->instr, dst);
        /* 16-byte chunks when they divide the block's rows; else no
         * chunk size: selection narrows to 8 or 4 bytes, or to element
         * copies (a row of 65 f16 is 130 bytes) */
        int64_t row = (int64_t)bs->tensor->type.dt.bits / 8 * (bs->rank ? bs->block[bs->rank - 1] : 1);
        c->instr.bytes = row > 0 && row % 16 == 0 ? 16 : 0;
        pipe_set(X, then, ins[i].n, pipe_bin(X, TILE_OP_ADD, pipe_val(X, ins[i].n), pipe_int(X, 1)), bs->pos);
    }
}

tsl_status pipe_expand_cp_async(pexp *X, const tile_pipeline *p, size_t pos, tile_value **bufs, tile_block *out)
{
    int64_t S = p->stages, N = pipe_trailing_wait(p->body), L;
    tsl_status st = pipe_lookahead(X, p, pos, &L);
    if (st) return st;
    pipe_begin(X, p, out, pos);
    pin *ins = arena_alloc(X->m->arena, sizeof(pin) * (size_t)(p->nins + 1));
    for (int i = 0; i < p->nins; i++) {
        const tile_blockspec *bs = &p->ins[i];
        if (bs->space == TILE_REGISTER) continue;
        ins[i].bs = bs;
        if (bufs) {
            ins[i].buf = bufs[i];
        } else {
            char why[256] = "";
            tile_layout *blay = pipe_stage_layout(X, bs, S, why, sizeof why);
            if (!blay && why[0])
                return pipe_err(X, bs->pos, "pipeline expansion: the layout of block '%s' cannot be staged: %s",
                                bs->view->name, why);
            int64_t dims[17];
            dims[0] = S;
            for (int d = 0; d < bs->rank && d < 16; d++) dims[d + 1] = bs->block[d];
            tile_stmt *a = pipe_instr(X, out, TILE_I_ALLOC, bs->pos);
            a->instr.result =
                tile_kernel_new_value(X->m, X->k, TILE_V_TENSOR, TILE_O_DEF, pipe_name(X, bs->view->name, "_buf"));
            a->instr.result->def = a;
            a->instr.result->pos = bs->pos;
            a->instr.result->type = tile_type_make(X->m, TILE_SHARED, bs->tensor->type.dt, bs->rank + 1, dims, blay);
            ins[i].buf = a->instr.result;
        }
        ins[i].n = pipe_let(X, out, TILE_S_VAR, pipe_name(X, bs->view->name, "_n"), pipe_int(X, 0), bs->pos);
        ins[i].u = pipe_let(X, out, TILE_S_VAR, pipe_name(X, bs->view->name, "_u"), pipe_int(X, 0), bs->pos);
    }
    pipe_alloc_views(X, out);
    /* prologue: steps 0 .. L-1 */
    if (L > 0) {
        tile_stmt *f = pipe_for(X, out, "s", pipe_int(X, 0), pipe_int(X, L), pos);
        tile_block *then = pipe_if(X, f->body, pipe_bin(X, TILE_OP_LT, pipe_val(X, f->v), X->total), pos);
        issue_cp_async(X, ins, p->nins, then, pipe_val(X, f->v), S);
        pipe_instr(X, f->body, TILE_I_COMMIT, pos);
    }
    /* steady state */
    tile_stmt *f = pipe_for(X, out, "j", pipe_int(X, 0), X->total, pos);
    tile_block *b = f->body;
    tile_expr *j = pipe_val(X, f->v);
    pipe_grid_lets(X, b, j, pos);
    tile_stmt *w;
    if (L > 0) {
        w = pipe_instr(X, b, TILE_I_WAIT, pos);
        tile_instr_arg(X->m, &w->instr, tile_operand_scalar(pipe_int(X, L - 1)));
        pipe_instr(X, b, TILE_I_SYNC, pos);
        tile_expr *ahead = pipe_bin(X, TILE_OP_ADD, j, pipe_int(X, L));
        tile_block *then = pipe_if(X, b, pipe_bin(X, TILE_OP_LT, ahead, X->total), pos);
        issue_cp_async(X, ins, p->nins, then, ahead, S);
        pipe_instr(X, b, TILE_I_COMMIT, pos);
    } else {
        pipe_instr(X, b, TILE_I_SYNC, pos);
        issue_cp_async(X, ins, p->nins, b, j, S);
        pipe_instr(X, b, TILE_I_COMMIT, pos);
        w = pipe_instr(X, b, TILE_I_WAIT, pos);
        tile_instr_arg(X->m, &w->instr, tile_operand_scalar(pipe_int(X, 0)));
        pipe_instr(X, b, TILE_I_SYNC, pos);
    }
    pipe_load_registers(X, b, j);
    for (int i = 0; i < p->nins; i++) {
        const tile_blockspec *bs = &p->ins[i];
        if (!ins[i].bs) continue;
        tile_block *then = pipe_if(X, b, pipe_changed(X, bs, j), bs->pos);
        pipe_set(X, then, ins[i].u, pipe_bin(X, TILE_OP_ADD, pipe_val(X, ins[i].u), pipe_int(X, 1)), bs->pos);
        ins[i].slot = pipe_let(X, b, TILE_S_LET, pipe_name(X, bs->view->name, "_slot"),
                               pipe_bin(X, TILE_OP_MOD, pipe_bin(X, TILE_OP_SUB, pipe_val(X, ins[i].u), pipe_int(X, 1)),
                                        pipe_int(X, S)),
                               bs->pos);
    }
    if ((st = pipe_rewrite(X, ins, p->nins, p->body))) return st;
    for (int i = 0; i < p->body->n; i++) ARENA_PUSH(X->m->arena, b->items, b->n, b->cap, p->body->items[i]);
    if ((st = pipe_write_backs(X, b, j))) return st;
    if (N) { /* the last steps' wgmma groups complete with the pipeline */
        w = pipe_instr(X, out, TILE_I_WGMMA_WAIT, pos);
        tile_instr_arg(X->m, &w->instr, tile_operand_scalar(pipe_int(X, 0)));
    }
    return TSL_OK;
}

/* ---- the walk ------------------------------------------------------------------------ */

static tsl_status expand_block(pexp *X, tile_block *b);

static tsl_status expand_pipeline(pexp *X, tile_stmt *s, tile_block *out)
{
    if (X->o.copy == TILE_PIPE_TMA) {
        int fallback = 0;
        tsl_status st = pipe_expand_tma(X, s, out, &fallback);
        if (st || !fallback) return st;
    }
    int shared = 0;
    for (int i = 0; i < s->pipe.nins + s->pipe.nouts; i++)
        shared |= (i < s->pipe.nins ? &s->pipe.ins[i] : &s->pipe.outs[i - s->pipe.nins])->space == TILE_SHARED;
    if (shared && X->role && X->role->count > 1)
        return pipe_err(X, s->pos,
                        "pipeline in role '%s' of %d warpgroups: the cp.async form would give them one set of "
                        "shared blocks; this needs the TMA form (sm_90a: `--arch sm_90a`) with an empty producer role",
                        X->role->name, X->role->count);
    return pipe_expand_cp_async(X, &s->pipe, s->pos, NULL, out);
}

/* Does b hold a pipeline (at any depth)? */
static int has_pipeline(const tile_block *b)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_PIPELINE || has_pipeline(s->body) || has_pipeline(s->els)) return 1;
    }
    return 0;
}

/* The roles of a warpgroups statement are contexts of 128 threads. With
 * TMA, an empty role beside a role holding a pipeline is its producer:
 * the expansion fills it. Each role's counters go to its start. */
static tsl_status expand_warpgroups(pexp *X, tile_stmt *s)
{
    pexp saved = *X;
    X->wg = s;
    X->in_loop_wg = X->loops > 0;
    X->producer = NULL;
    if (X->o.copy == TILE_PIPE_TMA) {
        int any = 0;
        for (int r = 0; r < s->nroles; r++) any |= has_pipeline(s->roles[r].body);
        for (int r = 0; r < s->nroles && any; r++)
            if (s->roles[r].body && s->roles[r].body->n == 0) {
                X->producer = &s->roles[r];
                X->prod = s->roles[r].body;
                break;
            }
    }
    tsl_status st = TSL_OK;
    for (int r = 0; r < s->nroles && !st; r++) {
        tile_role *role = &s->roles[r];
        if (role == X->producer) continue;
        X->role = role;
        X->threads = 128;
        X->loops = 0;
        X->nest = 0;
        X->ctx_top = tile_block_new(X->m);
        st = expand_block(X, role->body);
        if (!st && X->ctx_top->n) {
            for (int i = 0; i < role->body->n; i++)
                ARENA_PUSH(X->m->arena, X->ctx_top->items, X->ctx_top->n, X->ctx_top->cap, role->body->items[i]);
            *role->body = *X->ctx_top;
        }
    }
    int serial = X->serial;
    tile_block *top = X->top;
    *X = saved;
    X->serial = serial;
    X->top = top;
    return st;
}

static tsl_status expand_block(pexp *X, tile_block *b)
{
    if (!b) return TSL_OK;
    tile_block nb = {0};
    int any = 0;
    for (int i = 0; i < b->n; i++) {
        tile_stmt *s = b->items[i];
        tsl_status st = TSL_OK;
        if (s->kind == TILE_S_PIPELINE) {
            if ((st = expand_pipeline(X, s, &nb))) return st;
            any = 1;
            continue;
        }
        if (s->kind == TILE_S_WARPGROUPS) {
            st = expand_warpgroups(X, s);
        } else {
            int loop = s->kind == TILE_S_FOR || s->kind == TILE_S_WHILE;
            X->loops += loop;
            X->nest++;
            if (!(st = expand_block(X, s->body))) st = expand_block(X, s->els);
            X->loops -= loop;
            X->nest--;
        }
        if (st) return st;
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
        for (int r = 0; r < s->nroles; r++) n += smem_need(s->roles[r].body, why);
    }
    return n;
}

tile_pipeline_opts tile_pipeline_opts_for_arch(const char *arch)
{
    tile_pipeline_opts o;
    memset(&o, 0, sizeof o);
    if (arch && (!strcmp(arch, "sm_90a") || !strcmp(arch, "sm_90"))) o.copy = TILE_PIPE_TMA;
    return o;
}

tsl_status tile_pipeline_expand_opts(tile_module *m, const tsl_source *src, const tile_pipeline_opts *o,
                                     tsl_diag *d)
{
    for (int i = 0; i < m->nkernels; i++) {
        pexp X;
        memset(&X, 0, sizeof X);
        X.m = m;
        X.k = m->kernels[i];
        X.src = src;
        X.d = d;
        if (o) X.o = *o;
        X.threads = X.k->threads;
        X.top = tile_block_new(m);
        X.ctx_top = X.top;
        int64_t budget = X.k->smem_budget ? X.k->smem_budget : X.o.default_budget;
        strbuf why = {0};
        int64_t need = smem_need(X.k->body, &why);
        if (budget > 0 && need > budget) {
            pipe_err(&X, X.k->pos, "kernel '%s' needs %lld bytes of shared memory (%s) but the budget is %lld bytes",
                     X.k->name, (long long)need, sb_str(&why), (long long)budget);
            sb_free(&why);
            return TSL_ERR_SEMANTIC;
        }
        sb_free(&why);
        tsl_status st = expand_block(&X, X.k->body);
        if (st) return st;
        /* the TMA form's buffers, barriers and counters go first; the
         * barriers' initialisation is made visible to every thread */
        if (X.top->n) {
            int inits = 0;
            for (int j = 0; j < X.top->n; j++)
                inits |= X.top->items[j]->kind == TILE_S_INSTR && X.top->items[j]->instr.op == TILE_I_MBAR_INIT;
            if (inits) pipe_instr(&X, X.top, TILE_I_SYNC, X.k->pos);
            for (int j = 0; j < X.k->body->n; j++)
                ARENA_PUSH(m->arena, X.top->items, X.top->n, X.top->cap, X.k->body->items[j]);
            *X.k->body = *X.top;
        }
    }
    return TSL_OK;
}

tsl_status tile_pipeline_expand(tile_module *m, const tsl_source *src, int64_t default_budget, tsl_diag *d)
{
    tile_pipeline_opts o;
    memset(&o, 0, sizeof o);
    o.default_budget = default_budget;
    return tile_pipeline_expand_opts(m, src, &o, d);
}
