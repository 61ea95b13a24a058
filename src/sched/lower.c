/* lower.c — the generic strategy: every statement of a def becomes one tile
 * kernel over its flattened parallel box (docs/sched.md).
 *
 * Per kernel: lane coordinates from the flat lane index (iota, div, mod by
 * the box extents), a lane mask (flat < box size), the RHS tree lowered to
 * elementwise instructions on [SCHED_BLOCK] register tiles, each tensor
 * read a masked gather, reductions `for` loops accumulating into a register
 * tile, and a masked scatter of the result into the LHS. Box bounds and
 * tensor extents are int expressions over the def's size symbols: a symbol
 * that is some tensor parameter's extent is a tile size symbol (bound from
 * the arrays), any other is an int parameter the run path supplies.
 *
 * Masks are threaded through the lowering: the branches of `?:` and the
 * right operands of && and || run under the lanes that C's short circuit
 * would evaluate, so a guarded gather (`i < N ? X(I(i)) : 0`) never reads
 * out of range and an integer division in a dead lane never divides by 0.
 *
 * Requires: a graph built from a checked def. Guarantees: the module
 * verifies; every kernel parameter has a sched_arg saying where its value
 * comes from. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kbuild.h"
#include "sched/sched.h"
#include "sched/strategy.h"

/* A lowered value: a register tile of SCHED_BLOCK lanes, or a scalar that
 * every lane shares (an int expression, a float literal, or a typed scalar
 * parameter). */
typedef struct lval {
    tile_value *t;
    tile_expr *s;
    int isint; /* s is an int expression (usable in index arithmetic) */
    tsl_dtype dt;
} lval;

typedef struct lower {
    const graph *g;
    const lang_def *def;
    sched_plan *p;
    tile_module *m;
    tile_kernel *k;
    tile_builder b;
    sched_launch *launch;
    const graph_op *op;
    tile_layout *lay;       /* the lanes' layout: spatial(THREADS).local(LOCALS) */
    int64_t nlanes;         /* lanes per block: SCHED_BLOCK (a full reduction: its own) */
    tile_expr *flat_base;   /* full reductions: the step's first flat index, else NULL
                               (flat reads start at block_idx.x * SCHED_BLOCK) */
    int full;               /* lowering a full reduction: flat reads are those of
                               tensors read at the reduction vars in order */
    imap tparam;            /* def tensor -> its kernel parameter (a map: a kernel
                             * names few of a program's thousands of tensors) */
    tile_expr **size;       /* per size slot: its value in this kernel, or NULL */
    lval *var;              /* per var of op: coordinate tile / loop variable */
    imap fparam;            /* def tensor -> its 1-D (flat) parameter */
    struct lower_memo {     /* reads already lowered: operand, mask, block, value */
        int operand;
        tile_value *mask;
        tile_block *blk;
        lval v;
    } *memo;
    int nmemo, capmemo;
    tile_value *flat;       /* the lane's flat index in the box */
} lower;

/* ---- names, int expressions, arguments, sizes: kbuild.c ---------------------------- */

static const char *fresh(lower *L, const char *base) { return sched_kb_fresh(L->m, L->k, base); }

static tile_expr *ibin(lower *L, tile_binop op, tile_expr *a, tile_expr *b)
{
    return sched_kb_ibin(L->m, op, a, b);
}

static void add_arg(lower *L, sched_arg arg) { sched_kb_add_arg(L->m, L->launch, arg); }

static tile_expr *size_expr(lower *L, int slot)
{
    return sched_kb_size(L->m, L->k, L->launch, L->def, L->size, slot);
}

static tile_expr *sexpr_to_tile(lower *L, const lang_sexpr *e)
{
    return sched_kb_sexpr(L->m, L->k, L->launch, L->def, L->size, e);
}

/* ---- kernel parameters ----------------------------------------------------------------- */

/* Tensor `ti` of the def as a global parameter. Extents that are a bare
 * size symbol become that tile symbol (so the kernel learns the symbol from
 * the array); others a fresh symbol `<name>_d<k>`. */
static void add_tensor(lower *L, int ti)
{
    if (!imap_get(&L->tparam, ti)) imap_put(&L->tparam, ti, sched_kb_tensor(L->m, L->k, L->launch, L->def, L->size, ti));
}

/* Operand o covers the box exactly as the lanes do: read at the op's own
 * index list, and the box is the whole tensor (every lo 0, every hi the
 * extent). Then lane `flat` is element `flat` of the row-major tensor. */
static int flat_ok(const lower *L, const graph_operand *o)
{
    const lang_tensor *t = L->def->tensors[o->tensor];
    if (L->full) { /* lanes run over the reduction box: a read at the vars in order */
        if (!o->affine || o->write || t->rank != L->op->nvars || t->rank == 0) return 0;
        for (int k = 0; k < t->rank; k++)
            if (o->idx[k].var != k) return 0;
    } else if (!o->identity || t->rank != L->op->niter) {
        return 0;
    }
    for (int k = 0; k < t->rank; k++) {
        const lang_range *r = &L->op->box[k];
        if (r->lo->kind != LANG_SX_CONST || r->lo->value != 0 || !graph_sexpr_equal(r->hi, t->shape[k])) return 0;
    }
    return 1;
}

/* Tensor ti seen 1-D: `<name>_flat: global DT[<name>_n]`. */
static tile_value *flat_param(lower *L, int ti)
{
    if (imap_get(&L->fparam, ti)) return imap_get(&L->fparam, ti);
    const lang_tensor *t = L->def->tensors[ti];
    const char *nn = arena_printf(L->m->arena, "%s_n", t->name), *nf = arena_printf(L->m->arena, "%s_flat", t->name);
    tile_expr *n = tile_expr_value(L->m, tile_kernel_symbol(L->m, L->k, fresh(L, nn)));
    tile_value *v = tile_kernel_param_tensor(L->m, L->k, fresh(L, nf), tile_dtype_from_tsl(t->dtype), 1, &n);
    imap_put(&L->fparam, ti, v);
    add_arg(L, (sched_arg){.name = v->name, .kind = SCHED_ARG_TENSOR, .tensor = ti, .flat = 1});
    return v;
}

/* The flat operand T_flat[block_idx.x * BLOCK]. */
static tile_operand flat_at(lower *L, int ti)
{
    tile_operand o = tile_operand_tensor(flat_param(L, ti));
    tile_expr *off = L->flat_base ? L->flat_base
                                  : ibin(L, TILE_OP_MUL, tile_expr_block_idx(L->m, 0), tile_expr_int(L->m, SCHED_BLOCK));
    tile_operand_index(L->m, &o, 1, &off);
    return o;
}

static tile_value *scalar_param(lower *L, const lang_tensor *t)
{
    if (imap_get(&L->tparam, t->index)) return imap_get(&L->tparam, t->index);
    tile_value *v = tile_kernel_param_typed(L->m, L->k, fresh(L, t->name), tile_dtype_from_tsl(t->dtype));
    imap_put(&L->tparam, t->index, v);
    add_arg(L, (sched_arg){.name = v->name, .kind = SCHED_ARG_SCALAR, .tensor = t->index});
    return v;
}

/* ---- instructions on lane tiles ---------------------------------------------------------- */

static tile_type lane_type(lower *L, tsl_dtype dt)
{
    int64_t n = L->nlanes;
    return tile_type_make(L->m, TILE_REGISTER, tile_dtype_from_tsl(dt), 1, &n, L->lay);
}

static tile_operand opnd(lval v)
{
    return v.t ? tile_operand_tensor(v.t) : tile_operand_scalar(v.s);
}

static lval tile_of(tile_value *t, tsl_dtype dt)
{
    return (lval){.t = t, .dt = dt};
}

/* r = OP args... (result like the first tensor operand, or bool). */
static tile_value *emit(lower *L, tile_op op, const char *name, int n, const tile_operand *args)
{
    tile_stmt *s = tile_build_instr(&L->b, op, fresh(L, name));
    for (int i = 0; i < n; i++) tile_instr_arg(L->m, &s->instr, args[i]);
    tile_instr_infer(s);
    return s->instr.result;
}

static tile_value *emit2(lower *L, tile_op op, const char *name, tile_operand a, tile_operand b)
{
    tile_operand args[2] = {a, b};
    return emit(L, op, name, 2, args);
}

static tile_value *emit_typed(lower *L, tile_op op, const char *name, tile_operand a, tsl_dtype dt)
{
    tile_stmt *s = tile_build_instr(&L->b, op, fresh(L, name));
    tile_instr_arg(L->m, &s->instr, a);
    tile_instr_result_type(s, lane_type(L, dt));
    return s->instr.result;
}

static tsl_dtype dt_of(const tile_value *t)
{
    tsl_dtype d = TSL_DTYPE_F32;
    tile_dtype_to_tsl(t->type.dt, &d);
    return d;
}

static tile_value *cast_to(lower *L, tile_value *t, tsl_dtype dt)
{
    if (dt_of(t) == dt) return t;
    return emit_typed(L, TILE_I_CAST, "cv", tile_operand_tensor(t), dt);
}

/* A tile of dtype dt holding v in every lane. */
static tile_value *as_tile(lower *L, lval v, tsl_dtype dt)
{
    if (v.t) return cast_to(L, v.t, dt);
    int typed = v.s->kind == TILE_E_VALUE && tile_value_is_typed_scalar(v.s->v);
    tile_stmt *s = tile_build_instr(&L->b, TILE_I_ALLOC, fresh(L, "bc"));
    tile_instr_result_type(s, lane_type(L, typed ? v.dt : dt));
    s->instr.init = typed ? tile_expr_int(L->m, 0) : v.s;
    tile_value *t = s->instr.result;
    if (typed) t = emit2(L, TILE_I_ADD, "bc", tile_operand_tensor(t), opnd(v));
    return cast_to(L, t, dt);
}

/* The operand form of v for an op computing in dt: tiles cast to dt,
 * scalars as they are (the instruction converts them). */
static tile_operand in_dt(lower *L, lval v, tsl_dtype dt)
{
    return v.t ? tile_operand_tensor(cast_to(L, v.t, dt)) : tile_operand_scalar(v.s);
}

static tile_value *to_bool(lower *L, lval v)
{
    if (v.t && v.dt == TSL_DTYPE_BOOL) return v.t;
    tile_value *t = v.t ? v.t : as_tile(L, v, v.dt);
    return emit2(L, TILE_I_NE, "nz", tile_operand_tensor(t), tile_operand_scalar(tile_expr_int(L->m, 0)));
}

static tile_value *land(lower *L, tile_value *a, tile_value *b)
{
    return emit2(L, TILE_I_AND, "mk", tile_operand_tensor(a), tile_operand_tensor(b));
}

static tile_value *lnot(lower *L, tile_value *a)
{
    tile_operand o = tile_operand_tensor(a);
    return emit(L, TILE_I_NOT, "nm", 1, &o);
}

static lval int_scalar(tile_expr *e)
{
    return (lval){.s = e, .isint = 1, .dt = TSL_DTYPE_I64};
}

/* ---- the RHS ------------------------------------------------------------------------ */

static lval lower_expr(lower *L, const graph_expr *e, tile_value *mask);

static int is_float_dt(tsl_dtype t) { return dtype_info_of(t)->is_float; }

/* The subtree reads through a non-affine index or divides integers: it must
 * run only in the lanes C's short circuit evaluates. */
static int needs_guard(const lower *L, const graph_expr *e)
{
    if (!e) return 0;
    if (e->kind == LANG_E_ACCESS) {
        const graph_operand *o = &L->op->operands[e->operand];
        if (!o->affine) return 1;
    }
    if (e->kind == LANG_E_BINARY && (e->src->op == LANG_DIV || e->src->op == LANG_MOD) &&
        !is_float_dt(e->src->optype))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (needs_guard(L, e->args[i])) return 1;
    return 0;
}

/* A contiguous load of the lanes' own elements (lanes past the tensor read 0). */
static tile_value *load_flat(lower *L, int ti, const char *name)
{
    tile_operand src = flat_at(L, ti);
    tile_stmt *s = tile_build_instr(&L->b, TILE_I_LOAD_GLOBAL, fresh(L, name));
    tile_instr_arg(L->m, &s->instr, src);
    tile_instr_result_type(s, lane_type(L, L->def->tensors[ti]->dtype));
    return s->instr.result;
}

/* Is a value defined in block blk visible where the builder is? */
static int block_open(const lower *L, const tile_block *blk)
{
    if (blk == L->b.cur) return 1;
    for (int i = 0; i < L->b.depth; i++)
        if (L->b.stack[i] == blk) return 1;
    return 0;
}

static lval lower_access_new(lower *L, const graph_expr *e, tile_value *mask);

/* A read of an operand under a mask is lowered once per open block. */
static lval lower_access(lower *L, const graph_expr *e, tile_value *mask)
{
    for (int i = 0; i < L->nmemo; i++)
        if (L->memo[i].operand == e->operand && L->memo[i].mask == mask && block_open(L, L->memo[i].blk))
            return L->memo[i].v;
    lval v = lower_access_new(L, e, mask);
    struct lower_memo m = {e->operand, mask, L->b.cur, v};
    ARENA_PUSH(L->m->arena, L->memo, L->nmemo, L->capmemo, m);
    return v;
}

/* CPU plan: with a 1-D parallel box [0, n), an affine read whose last
 * index is the box var itself and whose other indices do not use it
 * (`A(i,j)` over `S(j)`, i a reduction var) is a row segment: lane l reads
 * T[..., block_idx.x * BLOCK + l], one contiguous load_global (lanes past
 * the tensor read 0, lanes past the box read elements nobody keeps) instead
 * of a gather with per-lane index arithmetic. */
static int segment_ok(const lower *L, const graph_operand *o)
{
    const graph_op *op = L->op;
    if (L->p->target != TSL_TARGET_CPU || op->niter != 1 || !o->affine || o->rank < 1) return 0;
    if (op->box[0].lo->kind != LANG_SX_CONST || op->box[0].lo->value != 0) return 0;
    if (o->idx[o->rank - 1].var != 0) return 0;
    for (int d = 0; d < o->rank - 1; d++)
        if (o->idx[d].coef[0] != 0) return 0;
    return 1;
}

static lval load_segment(lower *L, const graph_operand *o, tile_value *mask)
{
    const lang_tensor *t = L->def->tensors[o->tensor];
    tile_expr **idx = arena_alloc(L->m->arena, sizeof *idx * (size_t)o->rank);
    for (int d = 0; d < o->rank - 1; d++) {
        lval v = lower_expr(L, o->idx[d].e, mask);
        TSL_ASSERT(!v.t && v.isint);
        idx[d] = v.s;
    }
    idx[o->rank - 1] = ibin(L, TILE_OP_MUL, tile_expr_block_idx(L->m, 0), tile_expr_int(L->m, SCHED_BLOCK));
    tile_operand src = tile_operand_tensor(imap_get(&L->tparam, o->tensor));
    tile_operand_index(L->m, &src, o->rank, idx);
    tile_stmt *s = tile_build_instr(&L->b, TILE_I_LOAD_GLOBAL, fresh(L, "ld"));
    tile_instr_arg(L->m, &s->instr, src);
    tile_instr_result_type(s, lane_type(L, t->dtype));
    return tile_of(s->instr.result, t->dtype);
}

static lval lower_access_new(lower *L, const graph_expr *e, tile_value *mask)
{
    const graph_operand *o = &L->op->operands[e->operand];
    const lang_tensor *t = L->def->tensors[o->tensor];
    if (flat_ok(L, o)) return tile_of(load_flat(L, o->tensor, "ld"), t->dtype);
    if (segment_ok(L, o)) return load_segment(L, o, mask);
    tile_operand *idx = arena_alloc(L->m->arena, sizeof *idx * (size_t)(o->rank ? o->rank : 1));
    for (int d = 0; d < o->rank; d++) {
        TSL_ASSERT(o->idx[d].e);
        lval v = lower_expr(L, o->idx[d].e, mask);
        if (v.t && (is_float_dt(v.dt) || v.dt == TSL_DTYPE_BOOL)) v.t = cast_to(L, v.t, TSL_DTYPE_I64);
        if (!v.t && !v.isint) v.t = as_tile(L, v, TSL_DTYPE_I64);
        idx[d] = opnd(v);
    }
    tile_stmt *s = tile_build_instr(&L->b, TILE_I_GATHER, fresh(L, "ld"));
    tile_instr_arg(L->m, &s->instr, tile_operand_tensor(imap_get(&L->tparam, o->tensor)));
    for (int d = 0; d < o->rank; d++) tile_instr_arg(L->m, &s->instr, idx[d]);
    tile_instr_result_type(s, lane_type(L, t->dtype));
    s->instr.mask = mask;
    return tile_of(s->instr.result, t->dtype);
}

static tile_op unop_of(int b)
{
    switch (b) {
    case LANG_EXP: return TILE_I_EXP;
    case LANG_LOG: return TILE_I_LOG;
    case LANG_SQRT: return TILE_I_SQRT;
    case LANG_RSQRT: return TILE_I_RSQRT;
    case LANG_TANH: return TILE_I_TANH;
    case LANG_SIGMOID: return TILE_I_SIGMOID;
    case LANG_ERF: return TILE_I_ERF;
    default: return TILE_I_ABS;
    }
}

static tile_op binop_of(int op, int call)
{
    if (call) return op == LANG_MAX ? TILE_I_MAX : op == LANG_MIN ? TILE_I_MIN : TILE_I_POW;
    switch (op) {
    case LANG_EQ: return TILE_I_EQ;
    case LANG_NE: return TILE_I_NE;
    case LANG_LT: return TILE_I_LT;
    case LANG_LE: return TILE_I_LE;
    case LANG_GT: return TILE_I_GT;
    case LANG_GE: return TILE_I_GE;
    case LANG_ADD: return TILE_I_ADD;
    case LANG_SUB: return TILE_I_SUB;
    case LANG_MUL: return TILE_I_MUL;
    case LANG_DIV: return TILE_I_DIV;
    default: return TILE_I_MOD;
    }
}

/* The dtype a TC expression of dtype t computes in (docs/language.md,
 * "Arithmetic and conversions"): every float narrower than float32 in
 * float32, rounded to its dtype only where it is stored or cast. */
static tsl_dtype arith_dt(tsl_dtype t)
{
    return is_float_dt(t) && t != TSL_DTYPE_F64 ? TSL_DTYPE_F32 : t;
}

/* a OP b computing in ot; the result has dtype rt (bool for comparisons). */
static lval lower_binary(lower *L, tile_op op, lval x, lval y, tsl_dtype ot, tsl_dtype rt, tile_value *mask)
{
    int intop = !is_float_dt(ot) && ot != TSL_DTYPE_BOOL;
    if (!x.t && !y.t && x.isint && y.isint && intop &&
        (op == TILE_I_ADD || op == TILE_I_SUB || op == TILE_I_MUL)) {
        tile_binop bo = op == TILE_I_ADD ? TILE_OP_ADD : op == TILE_I_SUB ? TILE_OP_SUB : TILE_OP_MUL;
        return (lval){.s = ibin(L, bo, x.s, y.s), .isint = 1, .dt = ot};
    }
    if (intop && (op == TILE_I_DIV || op == TILE_I_MOD)) {
        /* dead lanes divide by 1, not by whatever they hold */
        int64_t c;
        if (y.t || !y.isint || !tile_expr_const(y.s, &c) || c == 0) {
            tile_value *yt = as_tile(L, y, ot);
            tile_operand args[3] = {tile_operand_tensor(mask), tile_operand_tensor(yt),
                                    tile_operand_scalar(tile_expr_int(L->m, 1))};
            y = tile_of(emit(L, TILE_I_SELECT, "dv", 3, args), ot);
        }
    }
    if (!x.t && !y.t) x = tile_of(as_tile(L, x, ot), ot);
    tile_value *r = emit2(L, op, "v", in_dt(L, x, ot), in_dt(L, y, ot));
    lval out = tile_of(r, tile_op_is_compare(op) ? TSL_DTYPE_BOOL : ot);
    if (out.dt != rt) out = tile_of(cast_to(L, r, rt), rt);
    return out;
}

static lval lower_expr(lower *L, const graph_expr *e, tile_value *mask)
{
    const lang_expr *src = e->src;
    tsl_dtype ty = src->type;
    switch (e->kind) {
    /* a literal holds the value of its dtype (2.0 in a float16 expression
     * is half(2.0)), whatever dtype the expression then computes in */
    case LANG_E_INT:
        if (is_float_dt(ty)) return (lval){.s = tile_expr_float(L->m, sched_kb_literal(ty, (double)src->ival)), .dt = ty};
        return (lval){.s = tile_expr_int(L->m, src->ival), .isint = 1, .dt = ty};
    case LANG_E_FLOAT: return (lval){.s = tile_expr_float(L->m, sched_kb_literal(ty, src->fval)), .dt = ty};
    case LANG_E_INDEX: return L->var[src->slot];
    case LANG_E_SIZE: return int_scalar(size_expr(L, src->slot));
    case LANG_E_SCALAR:
        return (lval){.s = tile_expr_value(L->m, scalar_param(L, src->tensor)), .dt = src->tensor->dtype};
    case LANG_E_ACCESS: return lower_access(L, e, mask);
    case LANG_E_UNARY: {
        lval x = lower_expr(L, e->args[0], mask);
        if (src->op == LANG_NOT) {
            tile_value *r = lnot(L, to_bool(L, x));
            return ty == TSL_DTYPE_BOOL ? tile_of(r, ty) : tile_of(cast_to(L, r, ty), ty);
        }
        if (!x.t && x.isint && !is_float_dt(ty)) return (lval){.s = tile_expr_un(L->m, TILE_E_NEG, x.s), .isint = 1, .dt = ty};
        tile_operand o = tile_operand_tensor(as_tile(L, x, arith_dt(ty)));
        return tile_of(emit(L, TILE_I_NEG, "v", 1, &o), arith_dt(ty));
    }
    case LANG_E_BINARY: {
        if (src->op == LANG_AND || src->op == LANG_OR) {
            tile_value *a = to_bool(L, lower_expr(L, e->args[0], mask));
            tile_value *m2 = mask;
            if (needs_guard(L, e->args[1])) m2 = land(L, mask, src->op == LANG_AND ? a : lnot(L, a));
            tile_value *b = to_bool(L, lower_expr(L, e->args[1], m2));
            tile_value *r = emit2(L, src->op == LANG_AND ? TILE_I_AND : TILE_I_OR, "v", tile_operand_tensor(a),
                                  tile_operand_tensor(b));
            return ty == TSL_DTYPE_BOOL ? tile_of(r, ty) : tile_of(cast_to(L, r, ty), ty);
        }
        lval x = lower_expr(L, e->args[0], mask), y = lower_expr(L, e->args[1], mask);
        return lower_binary(L, binop_of(src->op, 0), x, y, arith_dt(src->optype), arith_dt(ty), mask);
    }
    case LANG_E_SELECT: {
        tile_value *c = to_bool(L, lower_expr(L, e->args[0], mask));
        tile_value *ma = mask, *mb = mask;
        if (needs_guard(L, e->args[1])) ma = land(L, mask, c);
        if (needs_guard(L, e->args[2])) mb = land(L, mask, lnot(L, c));
        lval a = lower_expr(L, e->args[1], ma), b = lower_expr(L, e->args[2], mb);
        tsl_dtype at = arith_dt(ty);
        if (!a.t && !b.t) a = tile_of(as_tile(L, a, at), at);
        tile_operand args[3] = {tile_operand_tensor(c), in_dt(L, a, at), in_dt(L, b, at)};
        return tile_of(emit(L, TILE_I_SELECT, "v", 3, args), at);
    }
    case LANG_E_CALL: {
        if (e->nargs == 2) {
            lval x = lower_expr(L, e->args[0], mask), y = lower_expr(L, e->args[1], mask);
            return lower_binary(L, binop_of(src->op, 1), x, y, arith_dt(ty), arith_dt(ty), mask);
        }
        lval x = lower_expr(L, e->args[0], mask);
        tile_operand o = tile_operand_tensor(as_tile(L, x, arith_dt(ty)));
        tile_stmt *st = tile_build_instr(&L->b, unop_of(src->op), fresh(L, "v"));
        tile_instr_arg(L->m, &st->instr, o);
        tile_instr_infer(st);
        st->instr.approx = tile_op_has_approx(st->instr.op) &&
                           sched_kb_approx_ok(L->def->tensors[L->op->operands[0].tensor]->dtype, arith_dt(ty));
        return tile_of(st->instr.result, arith_dt(ty));
    }
    case LANG_E_CAST: {
        lval x = lower_expr(L, e->args[0], mask);
        /* an int scalar cast to an integer dtype wraps to its width
         * (uint16(-1) is 65535): a constant folds, an int64-wide cast keeps
         * the bits; a narrower one of a size expression casts on the tile */
        int64_t cv;
        if (!x.t && x.isint && !is_float_dt(ty) && ty != TSL_DTYPE_BOOL) {
            if (tile_expr_const(x.s, &cv)) return (lval){.s = tile_expr_int(L->m, dtype_int_wrap(ty, cv)), .isint = 1, .dt = ty};
            if (dtype_info_of(ty)->bits >= 64) return (lval){.s = x.s, .isint = 1, .dt = ty};
        }
        tile_value *t = x.t ? x.t : as_tile(L, x, x.dt);
        return tile_of(cast_to(L, t, ty), ty);
    }
    }
    TSL_ASSERT(0 && "unknown expression kind");
    return int_scalar(tile_expr_int(L->m, 0));
}

/* ---- statements ---------------------------------------------------------------------- */

/* Accumulator dtypes (docs/sched.md): f32 for f16/bf16/f32, f64 for f64,
 * u64 for unsigned and i64 for the other integer LHS dtypes. */
static tsl_dtype acc_dtype(tsl_dtype t)
{
    const dtype_info *di = dtype_info_of(t);
    if (t == TSL_DTYPE_F64) return TSL_DTYPE_F64;
    if (di->is_float) return TSL_DTYPE_F32;
    if (t != TSL_DTYPE_BOOL && !di->is_signed) return TSL_DTYPE_U64;
    return TSL_DTYPE_I64;
}

/* The identity of the reduction operator; integer max/min start from the
 * LHS dtype's minimum/maximum (lang.h). */
static tile_expr *identity(lower *L, lang_assign_op op, tsl_dtype lhs)
{
    const dtype_info *di = dtype_info_of(lhs);
    if (op == LANG_ADD_EQ) return tile_expr_int(L->m, 0);
    if (op == LANG_MUL_EQ) return tile_expr_int(L->m, 1);
    int max = op == LANG_MAX_EQ;
    if (di->is_float) return tile_expr_float(L->m, max ? -INFINITY : INFINITY);
    if (lhs == TSL_DTYPE_BOOL) return tile_expr_int(L->m, max ? 0 : 1);
    if (!di->is_signed) {
        if (max) return tile_expr_int(L->m, 0);
        /* an int init wraps to the register's width: -1 is the maximum
         * of every unsigned width (UINT64_MAX has no int64 literal, and a
         * float would round it to 2^64) */
        return tile_expr_int(L->m, di->bits == 64 ? -1 : (int64_t)((UINT64_C(1) << di->bits) - 1));
    }
    int64_t hi = di->bits == 64 ? INT64_MAX : (INT64_C(1) << (di->bits - 1)) - 1;
    return tile_expr_int(L->m, max ? -hi - 1 : hi);
}

static tile_op combine_op(lang_assign_op op)
{
    switch (op) {
    case LANG_MUL_EQ: return TILE_I_MUL;
    case LANG_MAX_EQ: return TILE_I_MAX;
    case LANG_MIN_EQ: return TILE_I_MIN;
    default: return TILE_I_ADD;
    }
}

/* Does the body need lane coordinates: a parallel var used as a value or
 * in an index, outside the index lists of flat operands? */
static int body_needs_coords(const lower *L, const graph_expr *e)
{
    if (!e) return 0;
    if (e->kind == LANG_E_INDEX) return e->src->slot < L->op->niter;
    if (e->kind == LANG_E_ACCESS) {
        const graph_operand *o = &L->op->operands[e->operand];
        if (flat_ok(L, o)) return 0;
        for (int k = 0; k < o->rank; k++)
            if (body_needs_coords(L, o->idx[k].e)) return 1;
        return 0;
    }
    for (int i = 0; i < e->nargs; i++)
        if (body_needs_coords(L, e->args[i])) return 1;
    return 0;
}

/* Lane coordinates of the parallel vars: var v = (flat / prod ext[v+1..])
 * % ext[v] + lo[v]; sets L->var[0..niter) and returns the box size. */
static tile_expr *lower_coords(lower *L, tile_expr **lo, tile_expr **ext)
{
    const graph_op *op = L->op;
    tile_expr *stride = tile_expr_int(L->m, 1);
    for (int v = op->niter - 1; v >= 0; v--) {
        int64_t c;
        tile_value *q = L->flat;
        if (!tile_expr_const(stride, &c) || c != 1)
            q = emit2(L, TILE_I_DIV, "q", tile_operand_tensor(q), tile_operand_scalar(stride));
        if (v > 0) q = emit2(L, TILE_I_MOD, "r", tile_operand_tensor(q), tile_operand_scalar(ext[v]));
        if (!tile_expr_const(lo[v], &c) || c != 0)
            q = emit2(L, TILE_I_ADD, "c", tile_operand_tensor(q), tile_operand_scalar(lo[v]));
        L->var[v] = tile_of(q, TSL_DTYPE_I64);
        stride = ibin(L, TILE_OP_MUL, stride, ext[v]);
    }
    return stride;
}

/* ---- the CPU register-blocked plan for two-operand reductions ------------------------ */

/* CPU plan (docs/sched.md, "Convolutions on the CPU"): `O(..., k, ..., w)
 * +=[!] A(...) * B(...)` in f32, every access affine, where the last
 * parallel var w appears only in B's last index with coefficient 1 (a
 * contiguous run of B per output row) and a parallel var k appears in A
 * but not in B (A is broadcast along w, B along k). A block owns an
 * RB_M x RB_N tile of (k, w) at fixed values of the other parallel vars;
 * the reduction vars run as one flattened loop; per step a column of A
 * (a gather of RB_M elements RB_M apart by A's k stride) and a row of B
 * (one contiguous load of the flat tensor) meet in an outer product,
 * which the C generator turns into a register-blocked micro-kernel
 * (c_emit_rblk.c). */
enum { RB_M = SCHED_RB_M, RB_N = SCHED_RB_N, RB_TM = SCHED_RB_TM, RB_TN = SCHED_RB_TN };

typedef struct rb_shape {
    int a, b; /* operand indices of the broadcast-along-w and the row operand */
    int k, w; /* the parallel vars along the tile's rows and columns */
} rb_shape;

static int rb_operand_ok(const lower *L, const graph_operand *o)
{
    const lang_tensor *t = L->def->tensors[o->tensor];
    return o->affine && !t->is_scalar && o->rank >= 1 && t->dtype == TSL_DTYPE_F32 &&
           o->tensor != L->op->operands[0].tensor;
}

static int rb_match(const lower *L, const graph_op *op, rb_shape *sh)
{
    const lang_stmt *st = op->stmt;
    const graph_expr *e = op->body;
    if (L->p->target != TSL_TARGET_CPU || op->niter < 2 || op->nvars <= op->niter) return 0;
    if (op->assign != LANG_ADD_EQ || st->lhs->dtype != TSL_DTYPE_F32 || !op->operands[0].identity) return 0;
    if (!e || e->kind != LANG_E_BINARY || e->src->op != LANG_MUL || e->src->optype != TSL_DTYPE_F32) return 0;
    if (e->args[0]->kind != LANG_E_ACCESS || e->args[1]->kind != LANG_E_ACCESS) return 0;
    int w = op->niter - 1;
    for (int x = 0; x < 2; x++) {
        int ia = e->args[x]->operand, ib = e->args[1 - x]->operand;
        const graph_operand *a = &op->operands[ia], *b = &op->operands[ib];
        if (!rb_operand_ok(L, a) || !rb_operand_ok(L, b)) continue;
        if ((a->vars >> w) & 1) continue;
        int ok = b->idx[b->rank - 1].coef[w] == 1;
        for (int d = 0; d < b->rank - 1; d++)
            if (b->idx[d].coef[w] != 0) ok = 0;
        if (!ok) continue;
        for (int k = w - 1; k >= 0; k--)
            if (((a->vars >> k) & 1) && !((b->vars >> k) & 1)) {
                *sh = (rb_shape){.a = ia, .b = ib, .k = k, .w = w};
                return 1;
            }
    }
    return 0;
}

/* Offset of operand o in its row-major tensor at the current scalar vars;
 * with `var` >= 0, the offset's coefficient of that var instead. */
static tile_expr *rb_flat_offset(lower *L, const graph_operand *o, int var)
{
    const lang_tensor *t = L->def->tensors[o->tensor];
    tile_expr *off = tile_expr_int(L->m, 0), *stride = tile_expr_int(L->m, 1);
    for (int d = o->rank - 1; d >= 0; d--) {
        tile_expr *x;
        if (var >= 0) {
            x = tile_expr_int(L->m, o->idx[d].coef[var]);
        } else {
            lval v = lower_expr(L, o->idx[d].e, NULL);
            TSL_ASSERT(!v.t && v.isint);
            x = v.s;
        }
        off = ibin(L, TILE_OP_ADD, off, ibin(L, TILE_OP_MUL, x, stride));
        stride = ibin(L, TILE_OP_MUL, stride, sexpr_to_tile(L, t->shape[d]));
    }
    return off;
}

/* A new kernel `<def>_s<stmt>_<lhs>` of `threads` for op, launched in the
 * plan's order, with the per-kernel lookup tables reset. */
static void kernel_begin_named(lower *L, const graph_op *op, int threads, const char *suffix)
{
    const lang_def *def = L->def;
    L->k = tile_kernel_new(L->m, arena_printf(L->m->arena, "%s_s%d_%s%s", def->name, op->index, op->stmt->lhs->name, suffix),
                           threads);
    sched_launch ln = {.k = L->k, .stmt = op->index, .nstmts = 1};
    ARENA_PUSH(L->m->arena, L->p->launches, L->p->nlaunches, L->p->caplaunches, ln);
    L->launch = &L->p->launches[L->p->nlaunches - 1];
    imap_init(&L->tparam, L->m->arena);
    L->size = arena_alloc(L->m->arena, sizeof *L->size * (size_t)(def->nsizes + 1));
    L->var = arena_alloc(L->m->arena, sizeof *L->var * (size_t)(op->nvars + 1));
    imap_init(&L->fparam, L->m->arena);
    L->nmemo = 0;
}

static void kernel_begin(lower *L, const graph_op *op, int threads) { kernel_begin_named(L, op, threads, ""); }

/* Each var's range [lo, hi) and extent in the kernel. */
static void kernel_box(lower *L, const graph_op *op, tile_expr ***lo, tile_expr ***hi, tile_expr ***ext)
{
    *lo = arena_alloc(L->m->arena, sizeof **lo * (size_t)(op->nvars + 1));
    *hi = arena_alloc(L->m->arena, sizeof **hi * (size_t)(op->nvars + 1));
    *ext = arena_alloc(L->m->arena, sizeof **ext * (size_t)(op->nvars + 1));
    for (int v = 0; v < op->nvars; v++) {
        (*lo)[v] = sexpr_to_tile(L, op->box[v].lo);
        (*hi)[v] = sexpr_to_tile(L, op->box[v].hi);
        (*ext)[v] = ibin(L, TILE_OP_SUB, (*hi)[v], (*lo)[v]);
    }
}

static tile_value *rb_reg(lower *L, tile_op op, const char *name, tsl_dtype dt, int64_t d0, int64_t d1,
                          tile_layout *lay)
{
    int64_t dims[2] = {d0, d1};
    tile_stmt *s = tile_build_instr(&L->b, op, fresh(L, name));
    tile_instr_result_type(s, tile_type_make(L->m, TILE_REGISTER, tile_dtype_from_tsl(dt), 2, dims, lay));
    return s->instr.result;
}

/* rb_reg with one operand and a dim (iota's offset, broadcast's source). */
static tile_value *rb_reg1(lower *L, tile_op op, const char *name, tsl_dtype dt, int64_t d0, int64_t d1,
                           tile_layout *lay, tile_operand arg, int dim)
{
    tile_value *v = rb_reg(L, op, name, dt, d0, d1, lay);
    tile_instr *in = &L->b.cur->items[L->b.cur->n - 1]->instr;
    tile_instr_arg(L->m, in, arg);
    in->dim = dim;
    return v;
}

static int lower_rblk(lower *L, const graph_op *op)
{
    rb_shape sh;
    if (!L->p->opt->conv || !rb_match(L, op, &sh)) return 0;
    const lang_stmt *st = op->stmt;
    const graph_operand *oa = &op->operands[sh.a], *ob = &op->operands[sh.b];
    enum { TH_M = RB_M / RB_TM, TH_N = RB_N / RB_TN };
    kernel_begin(L, op, TH_M * TH_N);
    add_tensor(L, st->lhs->index);
    tile_value *fa = flat_param(L, oa->tensor), *fb = flat_param(L, ob->tensor);
    tile_build_begin(&L->b, L->m, L->k);

    tile_expr **lo, **hi, **ext;
    kernel_box(L, op, &lo, &hi, &ext);
    /* grid: x the w tiles, y the k tiles, z the other parallel vars */
    tile_expr *bz = tile_expr_block_idx(L->m, 2), *zs = tile_expr_int(L->m, 1);
    for (int v = op->niter - 1; v >= 0; v--) {
        if (v == sh.k || v == sh.w) continue;
        tile_expr *q = ibin(L, TILE_OP_DIV, bz, zs);
        if (v > 0) q = ibin(L, TILE_OP_MOD, q, ext[v]);
        L->var[v] = int_scalar(ibin(L, TILE_OP_ADD, q, lo[v]));
        zs = ibin(L, TILE_OP_MUL, zs, ext[v]);
    }
    L->k->grid[0] = tile_expr_bin(L->m, TILE_OP_CDIV, ext[sh.w], tile_expr_int(L->m, RB_N));
    L->k->grid[1] = tile_expr_bin(L->m, TILE_OP_CDIV, ext[sh.k], tile_expr_int(L->m, RB_M));
    L->k->grid[2] = zs;
    L->k->ngrid = 3;
    tile_expr *k0 = ibin(L, TILE_OP_ADD, lo[sh.k],
                         ibin(L, TILE_OP_MUL, tile_expr_block_idx(L->m, 1), tile_expr_int(L->m, RB_M)));
    tile_expr *w0 = ibin(L, TILE_OP_ADD, lo[sh.w],
                         ibin(L, TILE_OP_MUL, tile_expr_block_idx(L->m, 0), tile_expr_int(L->m, RB_N)));
    L->var[sh.k] = int_scalar(k0);
    L->var[sh.w] = int_scalar(w0);

    char lt[96], la[96], lb[96];
    snprintf(lt, sizeof lt, "spatial(%d, %d).local(%d, %d)", TH_M, TH_N, RB_TM, RB_TN);
    snprintf(la, sizeof la, "spatial(%d, 1).replicate(%d).local(%d, 1)", TH_M, TH_N, RB_TM);
    snprintf(lb, sizeof lb, "replicate(%d).spatial(%d).local(%d)", TH_M, TH_N, RB_TN);
    tile_layout *lay = tile_layout_make(L->m, lt, NULL), *lya = tile_layout_make(L->m, la, NULL),
                *lyb = tile_layout_make(L->m, lb, NULL);
    TSL_ASSERT(lay && lya && lyb);

    /* rows of A: kb = row * (A's stride along k), live while k0 + row < hi_k */
    tile_value *kr = rb_reg1(L, TILE_I_IOTA, "kr", TSL_DTYPE_I64, RB_M, 1, lya, tile_operand_scalar(tile_expr_int(L->m, 0)), 0);
    tile_value *kb = emit2(L, TILE_I_MUL, "kb", tile_operand_tensor(kr), tile_operand_scalar(rb_flat_offset(L, oa, sh.k)));
    tile_value *kl = emit2(L, TILE_I_LT, "kl", tile_operand_tensor(kr),
                           tile_operand_scalar(ibin(L, TILE_OP_SUB, hi[sh.k], k0)));
    /* the output tile's coordinates and lanes */
    tile_value *ki = rb_reg1(L, TILE_I_IOTA, "ki", TSL_DTYPE_I64, RB_M, RB_N, lay, tile_operand_scalar(k0), 0);
    tile_value *wi = rb_reg1(L, TILE_I_IOTA, "wi", TSL_DTYPE_I64, RB_M, RB_N, lay, tile_operand_scalar(w0), 1);
    tile_value *live = land(L, emit2(L, TILE_I_LT, "mk", tile_operand_tensor(ki), tile_operand_scalar(hi[sh.k])),
                            emit2(L, TILE_I_LT, "mw", tile_operand_tensor(wi), tile_operand_scalar(hi[sh.w])));
    tile_operand *lidx = arena_alloc(L->m->arena, sizeof *lidx * (size_t)op->niter);
    for (int v = 0; v < op->niter; v++)
        lidx[v] = v == sh.k ? tile_operand_tensor(ki) : v == sh.w ? tile_operand_tensor(wi) : opnd(L->var[v]);
    tile_value *lhs = imap_get(&L->tparam, st->lhs->index), *acc;
    if (op->bang) {
        acc = rb_reg(L, TILE_I_ALLOC, "acc", TSL_DTYPE_F32, RB_M, RB_N, lay);
        L->b.cur->items[L->b.cur->n - 1]->instr.init = tile_expr_int(L->m, 0);
    } else {
        acc = rb_reg(L, TILE_I_GATHER, "acc", TSL_DTYPE_F32, RB_M, RB_N, lay);
        tile_instr *g = &L->b.cur->items[L->b.cur->n - 1]->instr;
        tile_instr_arg(L->m, g, tile_operand_tensor(lhs));
        for (int v = 0; v < op->niter; v++) tile_instr_arg(L->m, g, lidx[v]);
        g->mask = live;
    }

    /* for j in 0 : prod of the reduction extents, var v = (j / prod ext[v+1..]) % ext[v] + lo[v] */
    tile_expr *n = tile_expr_int(L->m, 1);
    for (int v = op->niter; v < op->nvars; v++) n = ibin(L, TILE_OP_MUL, n, ext[v]);
    tile_stmt *f = tile_build_for(&L->b, fresh(L, "j"), tile_expr_int(L->m, 0), n, NULL);
    tile_build_push(&L->b, f->body);
    tile_expr *j = tile_expr_value(L->m, f->v), *rs = tile_expr_int(L->m, 1);
    for (int v = op->nvars - 1; v >= op->niter; v--) {
        tile_expr *q = ibin(L, TILE_OP_DIV, j, rs);
        if (v > op->niter) q = ibin(L, TILE_OP_MOD, q, ext[v]);
        L->var[v] = int_scalar(ibin(L, TILE_OP_ADD, q, lo[v]));
        rs = ibin(L, TILE_OP_MUL, rs, ext[v]);
    }
    tile_value *ai = emit2(L, TILE_I_ADD, "ai", tile_operand_tensor(kb), tile_operand_scalar(rb_flat_offset(L, oa, -1)));
    tile_value *a = rb_reg(L, TILE_I_GATHER, "a", TSL_DTYPE_F32, RB_M, 1, lya);
    {
        tile_instr *g = &L->b.cur->items[L->b.cur->n - 1]->instr;
        tile_instr_arg(L->m, g, tile_operand_tensor(fa));
        tile_instr_arg(L->m, g, tile_operand_tensor(ai));
        g->mask = kl;
    }
    tile_expr *boff = rb_flat_offset(L, ob, -1);
    tile_value *bv;
    {
        int64_t nb = RB_N;
        tile_stmt *ls = tile_build_instr(&L->b, TILE_I_LOAD_GLOBAL, fresh(L, "b"));
        tile_instr_result_type(ls, tile_type_make(L->m, TILE_REGISTER, tile_dtype_from_tsl(TSL_DTYPE_F32), 1, &nb, lyb));
        bv = ls->instr.result;
        tile_operand src = tile_operand_tensor(fb);
        tile_operand_index(L->m, &src, 1, &boff);
        tile_instr_arg(L->m, &L->b.cur->items[L->b.cur->n - 1]->instr, src);
    }
    tile_value *ab = rb_reg1(L, TILE_I_BROADCAST, "ab", TSL_DTYPE_F32, RB_M, RB_N, lay, tile_operand_tensor(a), 1);
    tile_value *bb = rb_reg1(L, TILE_I_BROADCAST, "bb", TSL_DTYPE_F32, RB_M, RB_N, lay, tile_operand_tensor(bv), 0);
    tile_value *p = emit2(L, TILE_I_MUL, "p", tile_operand_tensor(ab), tile_operand_tensor(bb));
    tile_stmt *c = tile_build_instr(&L->b, TILE_I_ADD, NULL);
    tile_instr_arg(L->m, &c->instr, tile_operand_tensor(acc));
    tile_instr_arg(L->m, &c->instr, tile_operand_tensor(p));
    tile_instr_dst(&c->instr, tile_operand_tensor(acc));
    /* the loop asks for the gathered f32 micro-kernel atom (target/cpu.c;
     * the option cpu.micro_kernels=0 leaves the generic loop) */
    if (L->p->opt->micro_kernels) c->instr.atom = "cpu.ukr.f32.gather";
    tile_build_pop(&L->b);

    tile_stmt *sc = tile_build_instr(&L->b, TILE_I_SCATTER, NULL);
    tile_instr_arg(L->m, &sc->instr, tile_operand_tensor(acc));
    for (int v = 0; v < op->niter; v++) tile_instr_arg(L->m, &sc->instr, lidx[v]);
    tile_instr_dst(&sc->instr, tile_operand_tensor(lhs));
    sc->instr.mask = live;
    return 1;
}

/* ---- full reductions: the whole box to one value ----------------------------------------- */

/* `S() op=[!] body` with a rank-0 LHS and reduction vars (docs/sched.md,
 * "Full reductions"): two launches instead of one block looping serially.
 *
 *   <S>_part  grid P = min(cdiv(R, MIN), BLOCKS) blocks of W = T x LOC
 *             lanes over the flattened box (R points, NS = cdiv(R, W)
 *             steps of W, the first NF = R / W of them whole); block b
 *             takes steps b S .. b S + S - 1, S = cdiv(NS, P), on the CPU
 *             (contiguous), steps b, b + P, ... on the GPU (coalesced);
 *             whole steps unmasked, the rest masked; every lane
 *             accumulates, then the block reduces its lanes to part[b]
 *             (a plan scratch buffer);
 *   <S>       one block reduces part[0, P), combines it with the identity
 *             (`!`) or S's value and stores S rounded to its dtype.
 *
 * Accumulators: a float sum adds K consecutive steps per lane in f32,
 * then that into an f64 lane accumulator (f64 bodies: f64 throughout);
 * max / min exactly (f32, or f64 for f64 bodies or LHS); integers in 64
 * bits (exact, wrapping as the interpreter's). Products stay generic (the
 * tile IR has no reduce.prod). The result depends on P and the sizes only,
 * never on the order blocks run in. */
enum { FR_K = 64 };

typedef struct fr_cfg {
    int threads, locals, blocks; /* per block; P's bound */
    int64_t min;                 /* points per block at least */
    int gpu;                     /* grid-stride steps */
} fr_cfg;

static fr_cfg fr_config(const lower *L)
{
    if (L->p->target == TSL_TARGET_CPU)
        return (fr_cfg){SCHED_FR_THREADS_CPU, SCHED_FR_LOCALS_CPU, SCHED_FR_BLOCKS_CPU, SCHED_FR_MIN_CPU, 0};
    return (fr_cfg){SCHED_FR_THREADS_GPU, SCHED_FR_LOCALS_GPU, SCHED_FR_BLOCKS_GPU,
                    (int64_t)SCHED_FR_THREADS_GPU * SCHED_FR_LOCALS_GPU, 1};
}

/* Does the body need the lanes' coordinates (an index var as a value or in
 * an index, or a read that is not flat)? */
static int fr_needs_coords(const lower *L, const graph_expr *e)
{
    if (!e) return 0;
    if (e->kind == LANG_E_INDEX) return 1;
    if (e->kind == LANG_E_ACCESS) return !flat_ok(L, &L->op->operands[e->operand]);
    for (int i = 0; i < e->nargs; i++)
        if (fr_needs_coords(L, e->args[i])) return 1;
    return 0;
}

static tile_value *fr_alloc(lower *L, const char *name, tsl_dtype dt, tile_expr *init)
{
    tile_stmt *s = tile_build_instr(&L->b, TILE_I_ALLOC, fresh(L, name));
    tile_instr_result_type(s, lane_type(L, dt));
    s->instr.init = init;
    return s->instr.result;
}

/* dst OP= x, in place. */
static void fr_combine(lower *L, tile_op op, tile_value *dst, tile_value *x)
{
    tile_stmt *c = tile_build_instr(&L->b, op, NULL);
    tile_instr_arg(L->m, &c->instr, tile_operand_tensor(dst));
    tile_instr_arg(L->m, &c->instr, tile_operand_tensor(x));
    tile_instr_dst(&c->instr, tile_operand_tensor(dst));
}

/* The reduction of a [W] lane tile (W = T x LOC, spatial(T).local(LOC)) to
 * a [1] tile every thread holds: within the thread, the warp, the warps. */
static tile_value *fr_block_reduce(lower *L, tile_op rop, tile_value *x, int T, int LOC)
{
    tile_dtype dt = x->type.dt;
    char txt[96];
    int64_t G = T / 32, three[3] = {G, 32, LOC}, two[2] = {G, 32}, g1[2] = {G, 1}, one = 1;
    snprintf(txt, sizeof txt, "spatial(%lld,32,1).local(1,1,%d)", (long long)G, LOC);
    tile_layout *l3 = tile_layout_make(L->m, txt, NULL);
    snprintf(txt, sizeof txt, "spatial(%lld,32)", (long long)G);
    tile_layout *l2 = tile_layout_make(L->m, txt, NULL);
    snprintf(txt, sizeof txt, "spatial(%lld,1).replicate(32)", (long long)G);
    tile_layout *lg = tile_layout_make(L->m, txt, NULL);
    snprintf(txt, sizeof txt, "replicate(%d).local(1)", T);
    tile_layout *l1 = tile_layout_make(L->m, txt, NULL);
    TSL_ASSERT(l3 && l2 && lg && l1);
    struct { tile_op op; const char *name; tile_type ty; int dim; } steps[4] = {
        {TILE_I_VIEW, "rv", tile_type_make(L->m, TILE_REGISTER, dt, 3, three, l3), -1},
        {rop, "rt", tile_type_make(L->m, TILE_REGISTER, dt, 2, two, l2), 2},
        {rop, "rw", tile_type_make(L->m, TILE_REGISTER, dt, 2, g1, lg), 1},
        {rop, "rb", tile_type_make(L->m, TILE_REGISTER, dt, 1, &one, l1), 0},
    };
    for (int i = 0; i < 4; i++) {
        tile_stmt *s = tile_build_instr(&L->b, steps[i].op, fresh(L, steps[i].name));
        tile_instr_arg(L->m, &s->instr, tile_operand_tensor(x));
        tile_instr_result_type(s, steps[i].ty);
        if (steps[i].dim >= 0) s->instr.dim = steps[i].dim;
        x = s->instr.result;
    }
    return x;
}

/* The body at the step whose first flat index is `base`, as a tile of the
 * accumulator dtype `at` (through the LHS dtype, as the interpreter
 * converts each value). With `limit` (the box's size), lanes at flat >=
 * limit are dead and hold the identity; without, every lane is live. */
static tile_value *fr_body(lower *L, tile_expr *base, tile_expr *limit, tile_value *all, tile_expr **lo,
                           tile_expr **ext, tsl_dtype at, tile_expr *ident)
{
    const graph_op *op = L->op;
    tsl_dtype lt = op->stmt->lhs->dtype;
    L->flat_base = base;
    tile_value *mask = all, *live = NULL;
    int coords = fr_needs_coords(L, op->body);
    if (limit || coords) {
        tile_stmt *s = tile_build_instr(&L->b, TILE_I_IOTA, fresh(L, "flat"));
        tile_instr_arg(L->m, &s->instr, tile_operand_scalar(base));
        tile_instr_result_type(s, lane_type(L, TSL_DTYPE_I64));
        s->instr.dim = 0;
        L->flat = s->instr.result;
        if (limit) /* live = flat < R */
            mask = live = emit2(L, TILE_I_LT, "live", tile_operand_tensor(L->flat), tile_operand_scalar(limit));
        /* var v = (flat / prod ext[v+1..]) % ext[v] + lo[v] */
        tile_expr *stride = tile_expr_int(L->m, 1);
        for (int v = op->nvars - 1; coords && v >= 0; v--) {
            int64_t c;
            tile_value *q = L->flat;
            if (!tile_expr_const(stride, &c) || c != 1)
                q = emit2(L, TILE_I_DIV, "q", tile_operand_tensor(q), tile_operand_scalar(stride));
            if (v > 0) q = emit2(L, TILE_I_MOD, "r", tile_operand_tensor(q), tile_operand_scalar(ext[v]));
            if (!tile_expr_const(lo[v], &c) || c != 0)
                q = emit2(L, TILE_I_ADD, "c", tile_operand_tensor(q), tile_operand_scalar(lo[v]));
            L->var[v] = tile_of(q, TSL_DTYPE_I64);
            stride = ibin(L, TILE_OP_MUL, stride, ext[v]);
        }
    }
    lval r = lower_expr(L, op->body, mask);
    tsl_dtype bt = op->body->src->type;
    /* a float value keeps the precision its arithmetic gave it (float32
     * for the narrow floats) and is rounded only to a different LHS
     * dtype, as the interpreter converts it (docs/language.md) */
    int keep = is_float_dt(bt) && r.t && is_float_dt(r.dt);
    tile_value *v = keep ? r.t : as_tile(L, r, bt);
    if (bt != lt) v = cast_to(L, v, lt);
    v = cast_to(L, v, at);
    if (live) {
        tile_operand args[3] = {tile_operand_tensor(live), tile_operand_tensor(v), tile_operand_scalar(ident)};
        v = emit(L, TILE_I_SELECT, "v", 3, args);
    }
    L->flat_base = NULL;
    return v;
}

/* x (a [1] tile) as dtype dt, same shape and layout. */
static tile_value *fr_cast1(lower *L, tile_value *x, tsl_dtype dt)
{
    tile_type ty = x->type;
    ty.dt = tile_dtype_from_tsl(dt);
    tile_stmt *s = tile_build_instr(&L->b, TILE_I_CAST, fresh(L, "cv"));
    tile_instr_arg(L->m, &s->instr, tile_operand_tensor(x));
    tile_instr_result_type(s, ty);
    return s->instr.result;
}

/* let name = e, as a value (constants stay constants). */
static tile_expr *fr_let(lower *L, const char *name, tile_expr *e)
{
    int64_t c;
    if (tile_expr_const(e, &c)) return e;
    tile_stmt *s = tile_build_let(&L->b, fresh(L, name), e);
    return tile_expr_value(L->m, s->v);
}

static tile_expr *fr_min(lower *L, tile_expr *a, tile_expr *b) { return tile_expr_bin(L->m, TILE_OP_MIN, a, b); }
static tile_expr *fr_max(lower *L, tile_expr *a, tile_expr *b) { return tile_expr_bin(L->m, TILE_OP_MAX, a, b); }

static int lower_full(lower *L, const graph_op *op)
{
    const lang_stmt *st = op->stmt;
    if (op->niter != 0 || op->nvars == 0 || st->lhs->rank != 0) return 0;
    if (op->assign != LANG_ADD_EQ && op->assign != LANG_MAX_EQ && op->assign != LANG_MIN_EQ) return 0;
    if (!L->p->opt->full_reductions) return 0;
    fr_cfg cf = fr_config(L);
    int T = cf.threads, LOC = cf.locals, W = T * LOC;
    tsl_dtype lt = st->lhs->dtype, bt = op->body->src->type;
    const dtype_info *li = dtype_info_of(lt);
    int wide = lt == TSL_DTYPE_F64 || bt == TSL_DTYPE_F64;
    tsl_dtype at = acc_dtype(lt), it = at; /* outer and inner (per K steps) accumulators */
    if (li->is_float) {
        at = op->assign == LANG_ADD_EQ || wide ? TSL_DTYPE_F64 : TSL_DTYPE_F32;
        it = op->assign == LANG_ADD_EQ && !wide ? TSL_DTYPE_F32 : at;
    }
    tile_op cop = combine_op(op->assign);
    tile_op rop = op->assign == LANG_MAX_EQ ? TILE_I_REDUCE_MAX
                  : op->assign == LANG_MIN_EQ ? TILE_I_REDUCE_MIN : TILE_I_REDUCE_SUM;
    tile_expr *ident = identity(L, op->assign, lt);

    /* the partials buffer */
    sched_scratch sc = {at, cf.blocks};
    ARENA_PUSH(L->m->arena, L->p->scratch, L->p->nscratch, L->p->capscratch, sc);
    int si = L->p->nscratch - 1;
    int64_t pmax = cf.blocks;

    /* ---- <S>_part ---- */
    tile_layout *saved_lay = L->lay;
    int64_t saved_lanes = L->nlanes;
    char txt[64];
    snprintf(txt, sizeof txt, "spatial(%d).local(%d)", T, LOC);
    L->lay = tile_layout_make(L->m, txt, NULL);
    L->nlanes = W;
    L->full = 1;
    kernel_begin_named(L, op, T, "_part");
    for (int i = 1; i < op->noperands; i++) /* (operand 0 is S's write: the second kernel's) */
        if (!L->def->tensors[op->operands[i].tensor]->is_scalar && !flat_ok(L, &op->operands[i]))
            add_tensor(L, op->operands[i].tensor);
    tile_value *part = tile_kernel_param_tensor(L->m, L->k, fresh(L, "part"), tile_dtype_from_tsl(at), 1,
                                                (tile_expr *[]){tile_expr_int(L->m, pmax)});
    add_arg(L, (sched_arg){.name = part->name, .kind = SCHED_ARG_SCRATCH, .scratch = si});
    tile_build_begin(&L->b, L->m, L->k);
    tile_expr **lo, **hi, **ext;
    kernel_box(L, op, &lo, &hi, &ext);
    tile_expr *R = tile_expr_int(L->m, 1);
    for (int v = 0; v < op->nvars; v++) R = ibin(L, TILE_OP_MUL, R, fr_max(L, ext[v], tile_expr_int(L->m, 0)));
    tile_expr *Wx = tile_expr_int(L->m, W);
    L->k->grid[0] = fr_min(L, tile_expr_bin(L->m, TILE_OP_CDIV, R, tile_expr_int(L->m, cf.min)),
                           tile_expr_int(L->m, pmax));
    L->k->ngrid = 1;
    R = fr_let(L, "R", R);
    tile_expr *P = fr_let(L, "P", L->k->grid[0]);
    tile_expr *NS = fr_let(L, "NS", tile_expr_bin(L->m, TILE_OP_CDIV, R, Wx));
    tile_expr *NF = fr_let(L, "NF", ibin(L, TILE_OP_DIV, R, Wx));
    tile_expr *S = fr_let(L, "S", tile_expr_bin(L->m, TILE_OP_CDIV, NS, P)), *b = tile_expr_block_idx(L->m, 0);
    /* this block's steps c in [0, cw) are whole, [cw, ce) the rest */
    tile_expr *cw, *ce;
    if (cf.gpu) {
        tile_expr *pm1 = ibin(L, TILE_OP_SUB, P, tile_expr_int(L->m, 1));
        cw = ibin(L, TILE_OP_DIV, ibin(L, TILE_OP_ADD, ibin(L, TILE_OP_SUB, NF, b), pm1), P);
        ce = ibin(L, TILE_OP_DIV, ibin(L, TILE_OP_ADD, ibin(L, TILE_OP_SUB, NS, b), pm1), P);
    } else {
        tile_expr *b0 = ibin(L, TILE_OP_MUL, b, S), *z = tile_expr_int(L->m, 0);
        cw = fr_max(L, z, fr_min(L, ibin(L, TILE_OP_SUB, NF, b0), S));
        ce = fr_max(L, z, fr_min(L, ibin(L, TILE_OP_SUB, NS, b0), S));
    }
    cw = fr_let(L, "cw", cw);
    ce = fr_let(L, "ce", ce);
    tile_value *acc = fr_alloc(L, "acc", at, ident);
    tile_value *all = fr_alloc(L, "all", TSL_DTYPE_BOOL, tile_expr_int(L->m, 1));
#define FR_BASE(c) ibin(L, TILE_OP_MUL, cf.gpu ? ibin(L, TILE_OP_ADD, ibin(L, TILE_OP_MUL, (c), P), b) \
                                                : ibin(L, TILE_OP_ADD, ibin(L, TILE_OP_MUL, b, S), (c)), Wx)
    if (it != at) {
        /* for co in 0 : cdiv(cw, K) { a32 = 0; for c in co K : min(cw, co K + K) {...}; acc += a32 } */
        tile_expr *K = tile_expr_int(L->m, FR_K);
        tile_stmt *fo = tile_build_for(&L->b, fresh(L, "co"), tile_expr_int(L->m, 0),
                                       tile_expr_bin(L->m, TILE_OP_CDIV, cw, K), NULL);
        tile_build_push(&L->b, fo->body);
        tile_expr *c0 = ibin(L, TILE_OP_MUL, tile_expr_value(L->m, fo->v), K);
        tile_value *a32 = fr_alloc(L, "a32", it, tile_expr_int(L->m, 0));
        tile_stmt *fi = tile_build_for(&L->b, fresh(L, "c"), c0, fr_min(L, cw, ibin(L, TILE_OP_ADD, c0, K)), NULL);
        tile_build_push(&L->b, fi->body);
        fr_combine(L, cop, a32, fr_body(L, FR_BASE(tile_expr_value(L->m, fi->v)), NULL, all, lo, ext, it, ident));
        tile_build_pop(&L->b);
        fr_combine(L, cop, acc, cast_to(L, a32, at));
        tile_build_pop(&L->b);
    } else {
        tile_stmt *fw = tile_build_for(&L->b, fresh(L, "c"), tile_expr_int(L->m, 0), cw, NULL);
        tile_build_push(&L->b, fw->body);
        fr_combine(L, cop, acc, fr_body(L, FR_BASE(tile_expr_value(L->m, fw->v)), NULL, all, lo, ext, at, ident));
        tile_build_pop(&L->b);
    }
    {
        /* the steps past NF: lanes at flat >= R hold the identity */
        tile_stmt *ft = tile_build_for(&L->b, fresh(L, "ct"), cw, ce, NULL);
        tile_build_push(&L->b, ft->body);
        tile_value *v = fr_body(L, FR_BASE(tile_expr_value(L->m, ft->v)), R, all, lo, ext, at, ident);
        fr_combine(L, cop, acc, v);
        tile_build_pop(&L->b);
    }
#undef FR_BASE
    tile_value *one = fr_block_reduce(L, rop, acc, T, LOC);
    {
        tile_operand dst = tile_operand_tensor(part);
        tile_expr *bi = tile_expr_block_idx(L->m, 0);
        tile_operand_index(L->m, &dst, 1, &bi);
        tile_stmt *sg = tile_build_instr(&L->b, TILE_I_STORE_GLOBAL, NULL);
        tile_instr_arg(L->m, &sg->instr, tile_operand_tensor(one));
        tile_instr_dst(&sg->instr, dst);
    }

    /* ---- <S>: part[0, P) to S ---- */
    int T2 = cf.gpu ? 256 : 128, LOC2 = (int)(pmax / T2);
    snprintf(txt, sizeof txt, "spatial(%d).local(%d)", T2, LOC2);
    L->lay = tile_layout_make(L->m, txt, NULL);
    L->nlanes = pmax;
    L->full = 0;
    kernel_begin(L, op, T2);
    tile_value *part2 = tile_kernel_param_tensor(L->m, L->k, fresh(L, "part"), tile_dtype_from_tsl(at), 1,
                                                 (tile_expr *[]){tile_expr_int(L->m, pmax)});
    add_arg(L, (sched_arg){.name = part2->name, .kind = SCHED_ARG_SCRATCH, .scratch = si});
    tile_value *lhs = flat_param(L, st->lhs->index);
    tile_build_begin(&L->b, L->m, L->k);
    kernel_box(L, op, &lo, &hi, &ext);
    R = tile_expr_int(L->m, 1);
    for (int v = 0; v < op->nvars; v++) R = ibin(L, TILE_OP_MUL, R, fr_max(L, ext[v], tile_expr_int(L->m, 0)));
    P = fr_let(L, "P", fr_min(L, tile_expr_bin(L->m, TILE_OP_CDIV, R, tile_expr_int(L->m, cf.min)),
                              tile_expr_int(L->m, pmax)));
    tile_value *x;
    {
        tile_operand src = tile_operand_tensor(part2);
        tile_expr *z = tile_expr_int(L->m, 0);
        tile_operand_index(L->m, &src, 1, &z);
        tile_stmt *ls = tile_build_instr(&L->b, TILE_I_LOAD_GLOBAL, fresh(L, "x"));
        tile_instr_arg(L->m, &ls->instr, src);
        tile_instr_result_type(ls, lane_type(L, at));
        x = ls->instr.result;
    }
    tile_stmt *io = tile_build_instr(&L->b, TILE_I_IOTA, fresh(L, "k"));
    tile_instr_arg(L->m, &io->instr, tile_operand_scalar(tile_expr_int(L->m, 0)));
    tile_instr_result_type(io, lane_type(L, TSL_DTYPE_I64));
    io->instr.dim = 0;
    tile_value *lv = emit2(L, TILE_I_LT, "lv", tile_operand_tensor(io->instr.result), tile_operand_scalar(P));
    tile_operand sargs[3] = {tile_operand_tensor(lv), tile_operand_tensor(x), tile_operand_scalar(ident)};
    x = emit(L, TILE_I_SELECT, "y", 3, sargs);
    tile_value *res = fr_block_reduce(L, rop, x, T2, LOC2);
    tile_expr *z = tile_expr_int(L->m, 0);
    if (!op->bang) { /* S's value first */
        tile_operand src = tile_operand_tensor(lhs);
        tile_operand_index(L->m, &src, 1, &z);
        tile_stmt *ls = tile_build_instr(&L->b, TILE_I_LOAD_GLOBAL, fresh(L, "old"));
        tile_instr_arg(L->m, &ls->instr, src);
        tile_type ty = res->type;
        ty.dt = tile_dtype_from_tsl(lt);
        tile_instr_result_type(ls, ty);
        tile_value *old = ls->instr.result;
        if (lt != at) old = fr_cast1(L, old, at);
        res = emit2(L, cop, "s", tile_operand_tensor(old), tile_operand_tensor(res));
    }
    if (lt != at) res = fr_cast1(L, res, lt);
    {
        tile_operand dst = tile_operand_tensor(lhs);
        tile_operand_index(L->m, &dst, 1, &z);
        tile_stmt *sg = tile_build_instr(&L->b, TILE_I_STORE_GLOBAL, NULL);
        tile_instr_arg(L->m, &sg->instr, tile_operand_tensor(res));
        tile_instr_dst(&sg->instr, dst);
    }
    L->lay = saved_lay;
    L->nlanes = saved_lanes;
    return 1;
}

static void lower_op(lower *L, const graph_op *op)
{
    const lang_stmt *st = op->stmt;
    const lang_def *def = L->def;
    L->op = op;
    if (lower_rblk(L, op)) return;
    if (lower_full(L, op)) return;
    kernel_begin(L, op, SCHED_THREADS);
    for (int i = 0; i < op->noperands; i++)
        if (!def->tensors[op->operands[i].tensor]->is_scalar && !flat_ok(L, &op->operands[i]))
            add_tensor(L, op->operands[i].tensor);
    tile_build_begin(&L->b, L->m, L->k);

    tile_expr **lo, **hi, **ext;
    kernel_box(L, op, &lo, &hi, &ext);
    /* flat = block_idx.x * BLOCK + lane; mask = flat < box size */
    tile_stmt *s = tile_build_instr(&L->b, TILE_I_IOTA, fresh(L, "flat"));
    tile_instr_arg(L->m, &s->instr,
                   tile_operand_scalar(ibin(L, TILE_OP_MUL, tile_expr_block_idx(L->m, 0),
                                            tile_expr_int(L->m, SCHED_BLOCK))));
    tile_instr_result_type(s, lane_type(L, TSL_DTYPE_I64));
    s->instr.dim = 0;
    L->flat = s->instr.result;
    tile_expr *total = NULL;
    {
        /* the box size is the product of the parallel extents */
        tile_expr *t = tile_expr_int(L->m, 1);
        for (int v = 0; v < op->niter; v++) t = ibin(L, TILE_OP_MUL, t, ext[v]);
        total = t;
    }
    L->k->grid[0] = tile_expr_bin(L->m, TILE_OP_CDIV, total, tile_expr_int(L->m, SCHED_BLOCK));
    tile_value *mask = emit2(L, TILE_I_LT, "live", tile_operand_tensor(L->flat), tile_operand_scalar(total));
    int lhs_flat = flat_ok(L, &op->operands[0]);
    if (!lhs_flat || body_needs_coords(L, op->body)) lower_coords(L, lo, ext);

    tsl_dtype lt = st->lhs->dtype;
    tile_value *lhs = imap_get(&L->tparam, st->lhs->index);
    tile_value *res;
    if (op->nvars == op->niter && (op->assign == LANG_ASSIGN || op->bang)) {
        lval r = lower_expr(L, op->body, mask);
        if (op->assign != LANG_ASSIGN) {
            /* a bang reduction with no reduction vars: identity (op) rhs */
            tile_stmt *a = tile_build_instr(&L->b, TILE_I_ALLOC, fresh(L, "acc"));
            tile_instr_result_type(a, lane_type(L, acc_dtype(lt)));
            a->instr.init = identity(L, op->assign, lt);
            r = tile_of(emit2(L, combine_op(op->assign), "v", tile_operand_tensor(a->instr.result),
                              in_dt(L, r, acc_dtype(lt))),
                        acc_dtype(lt));
        }
        res = as_tile(L, r, lt);
    } else {
        tsl_dtype at = acc_dtype(lt);
        tile_value *acc;
        if (op->bang) {
            tile_stmt *a = tile_build_instr(&L->b, TILE_I_ALLOC, fresh(L, "acc"));
            tile_instr_result_type(a, lane_type(L, at));
            a->instr.init = identity(L, op->assign, lt);
            acc = a->instr.result;
        } else {
            /* start from the LHS's current values */
            if (lhs_flat) {
                acc = load_flat(L, st->lhs->index, "acc");
            } else {
                tile_stmt *g = tile_build_instr(&L->b, TILE_I_GATHER, fresh(L, "acc"));
                tile_instr_arg(L->m, &g->instr, tile_operand_tensor(lhs));
                for (int v = 0; v < op->niter; v++) tile_instr_arg(L->m, &g->instr, opnd(L->var[v]));
                tile_instr_result_type(g, lane_type(L, lt));
                g->instr.mask = mask;
                acc = g->instr.result;
            }
            if (at != lt) acc = emit_typed(L, TILE_I_CAST, "acc", tile_operand_tensor(acc), at);
        }
        int depth = 0;
        for (int v = op->niter; v < op->nvars; v++) {
            tile_stmt *f = tile_build_for(&L->b, fresh(L, st->vars[v].name), lo[v], hi[v], NULL);
            tile_build_push(&L->b, f->body);
            depth++;
            L->var[v] = int_scalar(tile_expr_value(L->m, f->v));
        }
        lval r = lower_expr(L, op->body, mask);
        /* each value converted to the LHS dtype first, as the interpreter
         * does: max= of int64 values into an int8 tensor takes the max of
         * the wrapped values, not the wrapped max. A float value of the
         * LHS's own dtype is not converted: it keeps the float32
         * precision of its arithmetic (a bfloat16 product is not rounded
         * to bfloat16 before it is summed; docs/language.md) */
        int keep = is_float_dt(lt) && op->body->src->type == lt && is_float_dt(r.dt);
        if (r.t && r.dt != lt && !keep) r = tile_of(cast_to(L, r.t, lt), lt);
        tile_operand ro = in_dt(L, r, at);
        tile_stmt *c = tile_build_instr(&L->b, combine_op(op->assign), NULL);
        tile_instr_arg(L->m, &c->instr, tile_operand_tensor(acc));
        tile_instr_arg(L->m, &c->instr, ro);
        tile_instr_dst(&c->instr, tile_operand_tensor(acc));
        while (depth--) tile_build_pop(&L->b);
        res = cast_to(L, acc, lt);
    }
    if (lhs_flat) {
        /* the store is masked to the tensor, which is the box */
        tile_operand dst = flat_at(L, st->lhs->index);
        tile_stmt *sg = tile_build_instr(&L->b, TILE_I_STORE_GLOBAL, NULL);
        tile_instr_arg(L->m, &sg->instr, tile_operand_tensor(res));
        tile_instr_dst(&sg->instr, dst);
        return;
    }
    tile_stmt *sc = tile_build_instr(&L->b, TILE_I_SCATTER, NULL);
    tile_instr_arg(L->m, &sc->instr, tile_operand_tensor(res));
    for (int v = 0; v < op->niter; v++) tile_instr_arg(L->m, &sc->instr, opnd(L->var[v]));
    tile_instr_dst(&sc->instr, tile_operand_tensor(lhs));
    sc->instr.mask = mask;
}

sched_plan *sched_lower(tsl_arena *a, const graph *g, tsl_diag *d)
{
    return sched_lower_for(a, g, TSL_TARGET_CUDA, d);
}

sched_plan *sched_lower_for(tsl_arena *a, const graph *g, tsl_target target, tsl_diag *d)
{
    return sched_lower_sm(a, g, target, 80, d);
}

int sched_sm_of_arch(const char *arch)
{
    int major = 0, minor = 0;
    if (arch && sscanf(arch, "sm_%1d%1d", &major, &minor) == 2 && major >= 7) return major * 10 + minor;
    return 80;
}

sched_plan *sched_lower_sm(tsl_arena *a, const graph *g, tsl_target target, int sm, tsl_diag *d)
{
    return sched_lower_opt(a, g, target, sm, NULL, d);
}

void sched_note(sched_plan *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf b = {0};
    if (p->notes) sb_puts(&b, p->notes);
    sb_vprintf(&b, fmt, ap);
    sb_putc(&b, '\n');
    va_end(ap);
    p->notes = arena_strdup(p->m->arena, sb_str(&b));
    sb_free(&b);
}

/* The groups a merged chain was made of (graph_group.parts), each by its
 * own strategy or generically. */
static void lower_parts(lower *L, sched_plan *p, const graph *g, const graph_group *gr)
{
    for (int k = 0; k < gr->nparts; k++) {
        const graph_group *part = &gr->parts[k];
        if (sched_lower_strategy(p, g, part)) continue;
        for (int j = part->first; j < part->first + part->nops; j++) lower_op(L, &g->ops[j]);
    }
}

sched_plan *sched_lower_opt(tsl_arena *a, const graph *g, tsl_target target, int sm, const sched_options *opt,
                            tsl_diag *d)
{
    (void)d;
    if (!g) return NULL;
    sched_plan *p = arena_alloc(a, sizeof *p);
    p->def = g->def;
    p->target = target;
    p->opt = opt ? opt : &sched_options_defaults;
    p->sm = target == TSL_TARGET_CPU ? 0 : sm;
    p->m = tile_module_new(a);
    lower L;
    memset(&L, 0, sizeof L);
    L.g = g;
    L.def = g->def;
    L.p = p;
    L.m = p->m;
    char lay[64];
    snprintf(lay, sizeof lay, "spatial(%d).local(%d)", SCHED_THREADS, SCHED_LOCALS);
    L.lay = tile_layout_make(p->m, lay, NULL);
    L.nlanes = SCHED_BLOCK;
    TSL_ASSERT(L.lay);
    for (int i = 0; i < g->nops; i++) {
        /* a group a fast strategy lowers (strategy.h) is one kernel */
        const graph_group *gr = &g->groups[g->ops[i].group];
        int nl0 = p->nlaunches, nk0 = p->m->nkernels, took = gr->first == i && sched_lower_strategy(p, g, gr);
        /* a merged chain's plan for some sizes only (one guarded launch),
         * or no plan: its groups as before the merge, for the other sizes */
        int partial = took && ((p->nlaunches == nl0 + 1 && p->launches[nl0].guard.n) || p->partial);
        sched_guard chain = !partial ? (sched_guard){0} : p->partial ? p->covered : p->launches[nl0].guard;
        p->partial = 0;
        if (gr->first == i && gr->nparts && (!took || partial)) {
            /* each part's launch runs unless the merged plan's guard holds
             * (beside its own guard: split-K, sm_90a) */
            int nl1 = p->nlaunches, fits = 1;
            lower_parts(&L, p, g, gr);
            for (int k = nl1; k < p->nlaunches && took; k++) fits &= sched_guard_unless(&p->launches[k].guard, &chain);
            if (!fits) {
                /* a guard that does not combine: the parts run alone */
                p->nlaunches = nl0;
                p->m->nkernels = nk0;
                lower_parts(&L, p, g, gr);
            }
            took = 1;
        }
        if (took) {
            i += gr->nops - 1;
            continue;
        }
        lower_op(&L, &g->ops[i]);
    }
    sched_lowbit_carry(p);
    p->tensor_used = arena_alloc(a, (size_t)g->def->ntensors + 1);
    for (int i = 0; i < p->nlaunches; i++)
        for (int j = 0; j < p->launches[i].nargs; j++)
            if (p->launches[i].args[j].kind == SCHED_ARG_TENSOR) p->tensor_used[p->launches[i].args[j].tensor] = 1;
    return p;
}

/* ---- the plan on the host ------------------------------------------------------------------ */

int64_t sched_arg_int(const sched_plan *p, const sched_arg *arg, const lang_bound *b)
{
    (void)p;
    if (arg->kind == SCHED_ARG_SMS) return 1; /* off the GPU: one persistent block */
    TSL_ASSERT(arg->kind == SCHED_ARG_SIZE);
    return b->sizes[arg->sym];
}

int sched_tensor_used(const sched_plan *p, int t)
{
    if (p->tensor_used) return p->tensor_used[t];
    for (int i = 0; i < p->nlaunches; i++) /* a plan not from sched_lower_for */
        for (int j = 0; j < p->launches[i].nargs; j++)
            if (p->launches[i].args[j].kind == SCHED_ARG_TENSOR && p->launches[i].args[j].tensor == t) return 1;
    return 0;
}

int sched_guard_nunless(const sched_guard *g)
{
    int u = 0;
    for (int i = 0; i < g->n; i++) u = g->grp[i] > u ? g->grp[i] : u;
    return u;
}

int sched_guard_holds(const sched_guard *g, const int64_t *sizes)
{
    /* all[u]: every term of group u holds */
    int all[SCHED_MAX_GUARD + 1];
    for (int u = 0; u <= SCHED_MAX_GUARD; u++) all[u] = 1;
    for (int i = 0; i < g->n; i++) {
        int64_t v = sizes[g->sym[i]];
        all[g->grp[i]] &= g->op[i] == SCHED_GUARD_MOD ? v % g->val[i] == 0
                          : g->op[i] == SCHED_GUARD_LE ? v <= g->val[i]
                          : g->op[i] == SCHED_GUARD_GT ? v > g->val[i]
                                                       : v != g->val[i];
    }
    int ok = all[0];
    for (int u = 1; u <= sched_guard_nunless(g); u++) ok &= !all[u];
    return ok;
}

void sched_guard_negate(sched_guard *g)
{
    TSL_ASSERT(sched_guard_nunless(g) == 0);
    for (int i = 0; i < g->n; i++) g->grp[i] = 1;
}

int sched_guard_multiples(sched_guard *g, const lang_sexpr *const *ext, int n, int64_t m)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < n; i++) {
        if (ext[i]->kind == LANG_SX_CONST) {
            if (ext[i]->value % m) return 0;
            continue;
        }
        int dup = 0;
        for (int j = 0; j < g->n; j++) dup |= g->sym[j] == ext[i]->sym;
        if (dup) continue;
        if (g->n == SCHED_MAX_GUARD) return 0; /* more symbols than a guard holds: decline */
        g->sym[g->n] = ext[i]->sym;
        g->op[g->n] = SCHED_GUARD_MOD;
        g->val[g->n++] = m;
    }
    return 1;
}

int sched_guard_unless(sched_guard *g, const sched_guard *u)
{
    if (sched_guard_nunless(u) || g->n + u->n > SCHED_MAX_GUARD) return 0;
    int grp = sched_guard_nunless(g) + 1;
    for (int i = 0; i < u->n; i++) {
        g->sym[g->n] = u->sym[i];
        g->op[g->n] = u->op[i];
        g->val[g->n] = u->val[i];
        g->grp[g->n++] = grp;
    }
    return 1;
}

int64_t sched_launch_lanes(const sched_plan *p, const sched_launch *l, const lang_bound *b)
{
    const lang_stmt *st = &p->def->stmts[l->stmt];
    if (!sched_guard_holds(&l->guard, b->sizes)) return 0;
    int64_t n = 1;
    for (int v = 0; v < st->niter; v++) {
        int64_t e = b->stmts[l->stmt].hi[v] - b->stmts[l->stmt].lo[v];
        if (e <= 0) return 0;
        n *= e;
    }
    return n;
}

void sched_print(strbuf *b, const sched_plan *p)
{
    sb_printf(b, "// tessel schedule of '%s': %d kernel%s, run in this order\n", p->def->name, p->nlaunches,
              p->nlaunches == 1 ? "" : "s");
    for (const char *n = p->notes; n && *n; n += strcspn(n, "\n") + 1)
        sb_printf(b, "// note: %.*s\n", (int)strcspn(n, "\n"), n);
    for (int i = 0; i < p->nlaunches; i++) {
        const sched_launch *l = &p->launches[i];
        sb_printf(b, "// %s: statement %d (%s)", l->k->name, l->stmt, p->def->stmts[l->stmt].lhs->name);
        for (int g = 0; g < l->guard.n; g++) {
            const char *nm = p->def->sizes[l->guard.sym[g]];
            int u = l->guard.grp[g];
            sb_puts(b, g && l->guard.grp[g - 1] == u ? " && " : u ? " unless " : " when ");
            static const char *const rel[] = {[SCHED_GUARD_LE] = "<=", [SCHED_GUARD_GT] = ">", [SCHED_GUARD_NE] = "!="};
            if (l->guard.op[g] == SCHED_GUARD_MOD) sb_printf(b, "%s %% %lld == 0", nm, (long long)l->guard.val[g]);
            else sb_printf(b, "%s %s %lld", nm, rel[l->guard.op[g]], (long long)l->guard.val[g]);
        }
        for (int j = 0; j < l->nargs; j++) {
            const sched_arg *a = &l->args[j];
            if (a->kind == SCHED_ARG_SCRATCH) {
                const sched_scratch *sc = &p->scratch[a->scratch];
                sb_printf(b, "%s %s=scratch %d (%s[%lld])", j ? "," : ";", a->name, a->scratch,
                          tsl_dtype_name(sc->dtype), (long long)sc->count);
                continue;
            }
            const char *what = a->kind == SCHED_ARG_SMS    ? "the multiprocessor count"
                               : a->kind == SCHED_ARG_SIZE ? p->def->sizes[a->sym]
                                                           : p->def->tensors[a->tensor]->name;
            sb_printf(b, "%s %s=%s%s%s", j ? "," : ";", a->name,
                      a->kind == SCHED_ARG_SIZE ? "size " : a->kind == SCHED_ARG_SCALAR ? "scalar " : "", what,
                      a->kind == SCHED_ARG_TENSOR && a->bytes ? " (packed bytes)" : "");
        }
        sb_putc(b, '\n');
    }
    char *text = tile_print(p->m);
    sb_puts(b, text);
    free(text);
}
