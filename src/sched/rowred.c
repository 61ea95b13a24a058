/* rowred.c — the row-reduction strategy, and the engine the elementwise
 * strategy shares (strategy.h, docs/sched.md "Row-reduction and
 * elementwise strategies").
 *
 * A group whose ops all live on the same rows (softmax, layernorm, RMSNorm,
 * row sums, mv) becomes ONE kernel: one block of SCHED_RR_THREADS threads
 * per row (grid = the product of the row extents), the row streamed in
 * chunks of SCHED_RR_WIDTH elements laid out spatial(T).local(E) (each
 * thread E contiguous elements: wide loads), one `for` over the chunks per
 * pass. Per op of the group:
 *   row-full op   e(n,d) = ...        internal: nothing is emitted, readers
 *                                     recompute it from its body inside
 *                                     their own chunk loop (it never touches
 *                                     memory); materialized: a pass that
 *                                     computes and stores it
 *   reduction     s(n) +=! f(n,d)     a pass accumulating per lane (tail
 *                                     lanes give the identity), then one
 *                                     reduction across the block: within
 *                                     the thread, across the warp (shuffle),
 *                                     across warps (shared)
 *   row scalar    m(n) = m(n) / D     computed once on the [1] tile
 * Row scalars are [1] tiles replicated over the block and broadcast back to
 * the chunk's shape where a row-full body reads them. So X is read from
 * global once per pass that needs it (softmax: 3 passes, the second and
 * third from L2 when rows are long); the only stores are the group's
 * materialized outputs.
 *
 * Arithmetic runs in f32 (groups with f64 tensors are declined); a
 * value is rounded to its tensor's dtype where an op defines it, as the
 * reference interpreter stores it.
 *
 * The elementwise strategy uses the same engine in two more forms: `row`
 * form with rows = niter - 1 and no reduction (needed for broadcast reads
 * such as bias(o) over out(b,o)), and `flat` form (every read the identity
 * over the whole tensor: the box is one long row cut into one chunk per
 * block, no loop).
 *
 * Requires: a group classified by fuse.c. Guarantees: the kernel verifies;
 * a group outside the recognised shapes is declined (returns 0, nothing
 * added). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sched/strategy.h"
#include "sched/kbuild.h"
#include "sched/strategy_int.h"

/* ---- recognising a group ------------------------------------------------------- */

typedef enum rr_kind { RR_FULL, RR_REDUCE, RR_SCALAR } rr_kind;
typedef enum rr_pat { RR_PAT_FULL, RR_PAT_ROW, RR_PAT_COL, RR_PAT_BAD } rr_pat;

/* How operand o of op reads its tensor (rows row dims, var `rows` the
 * column var). */
static rr_pat rr_pattern(const rr *R, const graph_op *op, const graph_operand *o)
{
    const lang_tensor *t = R->def->tensors[o->tensor];
    if (!o->affine) return RR_PAT_BAD;
    for (int k = 0; k < o->rank; k++)
        if (o->idx[k].var < 0) return RR_PAT_BAD;
    if (R->flat) {
        /* every read the op's own index list over the whole tensor */
        if (!o->identity || t->rank != op->niter) return RR_PAT_BAD;
        for (int k = 0; k < t->rank; k++)
            if (!graph_sexpr_equal(op->box[k].hi, t->shape[k]) || op->box[k].lo->kind != LANG_SX_CONST ||
                op->box[k].lo->value != 0)
                return RR_PAT_BAD;
        return RR_PAT_FULL;
    }
    int rows = R->rows;
    if (t->rank == rows + 1 && op->nvars == rows + 1) {
        for (int k = 0; k <= rows; k++)
            if (o->idx[k].var != k) return RR_PAT_BAD;
        return graph_sexpr_equal(t->shape[rows], R->colhi) ? RR_PAT_FULL : RR_PAT_BAD;
    }
    if (t->rank == rows) {
        int ok = 1;
        for (int k = 0; k < rows; k++) ok &= o->idx[k].var == k;
        if (ok) return RR_PAT_ROW;
    }
    if (t->rank == 1 && rows >= 1 && op->nvars == rows + 1 && o->idx[0].var == rows)
        return graph_sexpr_equal(t->shape[0], R->colhi) ? RR_PAT_COL : RR_PAT_BAD;
    return RR_PAT_BAD;
}

static int rr_float(tsl_dtype t) { return dtype_info_of(t)->is_float; }

/* Can the engine lower this body: float arithmetic, comparisons, bool
 * logic; int only as literals and sizes under + - *. */
static int rr_expr_ok(const rr *R, const graph_op *op, const graph_expr *e)
{
    const lang_expr *s = e->src;
    switch (e->kind) {
    case LANG_E_INT:
    case LANG_E_FLOAT:
    case LANG_E_SIZE: return 1;
    case LANG_E_INDEX: return 0;
    case LANG_E_SCALAR: return rr_float(s->tensor->dtype);
    case LANG_E_ACCESS: return rr_float(R->def->tensors[op->operands[e->operand].tensor]->dtype);
    case LANG_E_BINARY:
        if (!rr_float(s->optype) && s->optype != TSL_DTYPE_BOOL) {
            /* int scalar arithmetic folds into an int expression */
            if (s->op != LANG_ADD && s->op != LANG_SUB && s->op != LANG_MUL) return 0;
            for (int i = 0; i < 2; i++)
                if (e->args[i]->kind != LANG_E_INT && e->args[i]->kind != LANG_E_SIZE &&
                    e->args[i]->kind != LANG_E_BINARY)
                    return 0;
        }
        break;
    case LANG_E_CAST:
        if (!rr_float(s->type) && s->type != TSL_DTYPE_BOOL) return 0;
        break;
    case LANG_E_UNARY:
        if (s->op == LANG_NEG && !rr_float(s->type)) return 0;
        break;
    default: break;
    }
    for (int i = 0; i < e->nargs; i++)
        if (!rr_expr_ok(R, op, e->args[i])) return 0;
    return 1;
}

/* Fill R->kind and check every op; 0 declines the group. */
static int rr_recognise(rr *R)
{
    const graph_group *grp = R->grp;
    const graph_op *op0 = &R->g->ops[grp->first];
    R->colhi = NULL;
    if (!R->flat) {
        /* the column range: every op's var `rows` (when it has one) is [0, colhi) */
        for (int i = 0; i < grp->nops; i++) {
            const graph_op *op = &R->g->ops[grp->first + i];
            if (op->nvars != R->rows + 1) continue;
            const lang_range *r = &op->box[R->rows];
            if (r->lo->kind != LANG_SX_CONST || r->lo->value != 0) return 0;
            if (!R->colhi) R->colhi = r->hi;
            else if (!graph_sexpr_equal(R->colhi, r->hi)) return 0;
        }
        if (!R->colhi) return 0;
    }
    for (int i = 0; i < grp->nops; i++) {
        const graph_op *op = &R->g->ops[grp->first + i];
        rr_kind kd;
        if (op->niter < R->rows || (!R->flat && op->nvars > R->rows + 1)) return 0;
        for (int v = 0; v < R->rows; v++)
            if (!graph_sexpr_equal(op->box[v].lo, op0->box[v].lo) || !graph_sexpr_equal(op->box[v].hi, op0->box[v].hi))
                return 0;
        if (R->flat) {
            if (op->niter != op0->niter || op->nvars != op->niter || op->assign != LANG_ASSIGN) return 0;
            for (int v = 0; v < op->niter; v++)
                if (!graph_sexpr_equal(op->box[v].hi, op0->box[v].hi)) return 0;
            kd = RR_FULL;
        } else if (op->niter == R->rows + 1 && op->nvars == op->niter && op->assign == LANG_ASSIGN) {
            kd = RR_FULL;
        } else if (op->niter == R->rows && op->nvars == R->rows + 1 && op->assign != LANG_ASSIGN &&
                   op->assign != LANG_MUL_EQ) {
            /* (no reduce.prod in the tile IR: *= reductions stay generic) */
            kd = RR_REDUCE;
        } else if (op->niter == R->rows && op->nvars == R->rows && op->assign == LANG_ASSIGN) {
            kd = RR_SCALAR;
        } else {
            return 0;
        }
        R->kind[i] = kd;
        for (int j = 0; j < op->noperands; j++) {
            const graph_operand *o = &op->operands[j];
            const lang_tensor *t = R->def->tensors[o->tensor];
            if (t->is_scalar || !rr_float(t->dtype)) return 0;
            /* f64 stays generic: the C target's reduce.sum rounds its
             * accumulator to float (codegen/c_emit_ops.c) */
            if (t->dtype == TSL_DTYPE_F64) return 0;
            rr_pat pt = rr_pattern(R, op, o);
            if (pt == RR_PAT_BAD) return 0;
            if (j == 0 && pt != (kd == RR_FULL ? RR_PAT_FULL : RR_PAT_ROW)) return 0;
        }
        if (!rr_expr_ok(R, op, op->body)) return 0;
    }
    /* a tensor read from memory by the group must not be written by it:
     * passes re-read memory, so a later pass would see the new values */
    for (int i = 0; i < grp->nops; i++) {
        const graph_op *op = &R->g->ops[grp->first + i];
        for (int j = 1; j < op->noperands; j++)
            if (rr_writer_before(R, op->operands[j].tensor, i) < 0 && rr_written_in_group(R, op->operands[j].tensor))
                return 0;
        if (op->bang == 0 && R->kind[i] == RR_REDUCE && rr_writer_before(R, op->operands[0].tensor, i) < 0)
            return 0;
    }
    return 1;
}

/* ---- the engine ------------------------------------------------------------------ */

int rr_writer_before(const rr *R, int tensor, int i)
{
    for (int j = i - 1; j >= 0; j--)
        if (R->g->ops[R->grp->first + j].operands[0].tensor == tensor) return j;
    return -1;
}

int rr_written_in_group(const rr *R, int tensor)
{
    for (int j = 0; j < R->grp->nops; j++)
        if (R->g->ops[R->grp->first + j].operands[0].tensor == tensor) return 1;
    return 0;
}

/* names, int expressions, arguments, sizes: kbuild.c */
static const char *rr_fresh(rr *R, const char *base) { return sched_kb_fresh(R->m, R->k, base); }

static tile_expr *rr_ibin(rr *R, tile_binop op, tile_expr *a, tile_expr *b)
{
    return sched_kb_ibin(R->m, op, a, b);
}

static void rr_add_arg(rr *R, sched_arg arg) { sched_kb_add_arg(R->m, R->launch, arg); }

static tile_expr *rr_size(rr *R, int slot)
{
    return sched_kb_size(R->m, R->k, R->launch, R->def, R->size, slot);
}

static tile_expr *rr_sexpr(rr *R, const lang_sexpr *e)
{
    return sched_kb_sexpr(R->m, R->k, R->launch, R->def, R->size, e);
}

/* Tensor ti as a kernel parameter: full rank (row forms) or 1-D (flat). */
static tile_value *rr_tensor(rr *R, int ti)
{
    tile_value *have = imap_get(&R->tparam, ti);
    if (have) return have;
    if (!R->flat) {
        have = sched_kb_tensor(R->m, R->k, R->launch, R->def, R->size, ti);
        imap_put(&R->tparam, ti, have);
        return have;
    }
    const lang_tensor *t = R->def->tensors[ti];
    const char *nn = arena_printf(R->m->arena, "%s_n", t->name), *nf = arena_printf(R->m->arena, "%s_flat", t->name);
    tile_expr *n = tile_expr_value(R->m, tile_kernel_symbol(R->m, R->k, rr_fresh(R, nn)));
    tile_value *v = tile_kernel_param_tensor(R->m, R->k, rr_fresh(R, nf), tile_dtype_from_tsl(t->dtype), 1, &n);
    imap_put(&R->tparam, ti, v);
    rr_add_arg(R, (sched_arg){.name = v->name, .kind = SCHED_ARG_TENSOR, .tensor = ti, .flat = 1});
    return v;
}

/* ---- tiles --------------------------------------------------------------------------
 * Shapes: `vec`  [W]            spatial(T).local(E)          loads, stores, iota
 *         `row`  [G, 32, E]     spatial(G,32,1).local(1,1,E) the same registers
 *         `one`  [1]            replicate(T).local(1)        a row scalar
 * with G = T / 32 warps; `row` is `vec` viewed so that reductions run
 * within the thread (dim 2), across the warp (dim 1), across warps (dim 0). */

static tile_type rr_type(rr *R, rr_shape sh, tsl_dtype dt)
{
    tile_dtype d = tile_dtype_from_tsl(dt);
    int64_t G = R->threads / 32, vec = R->width, one = 1;
    if (R->warp) {
        /* R rows of K warps: [R, W] [R, K, 32, E] [R, K, 32] [R, K, 1] [R, 1, 1] [R] */
        int64_t Rw = R->warp, K = G / R->warp, wvec[2] = {Rw, R->width}, row[4] = {Rw, K, 32, R->locals},
                two[3] = {Rw, K, 32}, g1[3] = {Rw, K, 1}, k1[3] = {Rw, 1, 1};
        switch (sh) {
        case RR_VEC: return tile_type_make(R->m, TILE_REGISTER, d, 2, wvec, R->lay_vec);
        case RR_CVEC: return tile_type_make(R->m, TILE_REGISTER, d, 1, &vec, R->lay_cvec);
        case RR_ROW: return tile_type_make(R->m, TILE_REGISTER, d, 4, row, R->lay_row);
        case RR_TWO: return tile_type_make(R->m, TILE_REGISTER, d, 3, two, R->lay_two);
        case RR_G1: return tile_type_make(R->m, TILE_REGISTER, d, 3, g1, R->lay_g1);
        case RR_K1: return tile_type_make(R->m, TILE_REGISTER, d, 3, k1, R->lay_k1);
        case RR_ONE: break;
        }
        return tile_type_make(R->m, TILE_REGISTER, d, 1, &Rw, R->lay_one);
    }
    int64_t row[3] = {G, 32, R->locals}, two[2] = {G, 32}, g1[2] = {G, 1};
    switch (sh) {
    case RR_VEC:
    case RR_CVEC: return tile_type_make(R->m, TILE_REGISTER, d, 1, &vec, R->lay_vec);
    case RR_ROW: return tile_type_make(R->m, TILE_REGISTER, d, 3, row, R->lay_row);
    case RR_TWO: return tile_type_make(R->m, TILE_REGISTER, d, 2, two, R->lay_two);
    case RR_G1: return tile_type_make(R->m, TILE_REGISTER, d, 2, g1, R->lay_g1);
    case RR_K1:
    case RR_ONE: break;
    }
    return tile_type_make(R->m, TILE_REGISTER, d, 1, &one, R->lay_one);
}

static tsl_dtype rr_dt(const tile_value *t)
{
    tsl_dtype d = TSL_DTYPE_F32;
    tile_dtype_to_tsl(t->type.dt, &d);
    return d;
}

/* r = OP args (result like the first tensor operand). */
static tile_value *rr_emit(rr *R, tile_op op, const char *name, int n, const tile_operand *args)
{
    tile_stmt *s = tile_build_instr(&R->b, op, rr_fresh(R, name));
    for (int i = 0; i < n; i++) tile_instr_arg(R->m, &s->instr, args[i]);
    tile_instr_infer(s);
    return s->instr.result;
}

/* r = OP x -> type (cast, view, reduce, broadcast). */
static tile_value *rr_emit_to(rr *R, tile_op op, const char *name, tile_value *x, tile_type ty, int dim)
{
    tile_stmt *s = tile_build_instr(&R->b, op, rr_fresh(R, name));
    tile_instr_arg(R->m, &s->instr, tile_operand_tensor(x));
    tile_instr_result_type(s, ty);
    if (dim >= 0) s->instr.dim = dim;
    return s->instr.result;
}

/* The shape of a tile the engine made (casts keep shapes). */
static rr_shape rr_shape_of(const rr *R, const tile_value *t)
{
    const tile_layout *l = t->type.layout;
    return l == R->lay_row ? RR_ROW : l == R->lay_one ? RR_ONE : l == R->lay_two ? RR_TWO : l == R->lay_g1 ? RR_G1
           : l == R->lay_k1 ? RR_K1 : l == R->lay_cvec && R->warp ? RR_CVEC : RR_VEC;
}

static tile_value *rr_cast(rr *R, tile_value *t, tsl_dtype dt)
{
    if (rr_dt(t) == dt) return t;
    return rr_emit_to(R, TILE_I_CAST, "cv", t, rr_type(R, rr_shape_of(R, t), dt), -1);
}

/* A tile of shape sh and dtype dt filled with the scalar expression e. */
static tile_value *rr_fill(rr *R, rr_shape sh, tsl_dtype dt, tile_expr *e)
{
    tile_stmt *s = tile_build_instr(&R->b, TILE_I_ALLOC, rr_fresh(R, "k"));
    tile_instr_result_type(s, rr_type(R, sh, dt));
    s->instr.init = e;
    return s->instr.result;
}

/* Is block blk open where the builder is (values defined there visible)? */
static int rr_block_open(const rr *R, const tile_block *blk)
{
    if (blk == R->b.cur) return 1;
    for (int i = 0; i < R->b.depth; i++)
        if (R->b.stack[i] == blk) return 1;
    return 0;
}

/* A memo key that holds within the current pass only: an f32 value made
 * from a 16-bit one is remade per pass, so across passes the registers
 * hold the 16-bit value (the compiler need not keep both). */
#define RR_KEY_PASS(R, key) ((key) + 1000 * (1 + (R)->pass))

static tile_value *rr_memo_get(rr *R, int key, int id, rr_shape sh)
{
    for (int i = R->nmemo - 1; i >= 0; i--)
        if (R->memo[i].key == key && R->memo[i].id == id && R->memo[i].sh == sh && R->memo[i].sub == R->sub &&
            rr_block_open(R, R->memo[i].blk))
            return R->memo[i].v;
    return NULL;
}

static tile_value *rr_memo_put(rr *R, int key, int id, rr_shape sh, tile_value *v)
{
    rr_memo m = {key, id, R->sub, sh, R->b.cur, v, NULL};
    ARENA_PUSH(R->m->arena, R->memo, R->nmemo, R->capmemo, m);
    return v;
}

/* The memo of a chunk value made from row scalars for expression ex
 * (key 50: the expression spread; 51: 1 / its divisor spread). */
static tile_value *rr_memo_get_ex(rr *R, int key, const void *ex)
{
    for (int i = R->nmemo - 1; i >= 0; i--)
        if (R->memo[i].key == key && R->memo[i].ex == ex && R->memo[i].sub == R->sub &&
            rr_block_open(R, R->memo[i].blk))
            return R->memo[i].v;
    return NULL;
}

static tile_value *rr_memo_put_ex(rr *R, int key, const void *ex, tile_value *v)
{
    rr_memo m = {key, 0, R->sub, RR_ROW, R->b.cur, v, ex};
    ARENA_PUSH(R->m->arena, R->memo, R->nmemo, R->capmemo, m);
    return v;
}

/* The reduction of a `row` tile (dtype ct) to `one`. */
static tile_value *rr_reduce(rr *R, tile_op op, tile_value *x)
{
    tsl_dtype ct = rr_dt(x);
    if (R->warp) {
        /* rows form: within the thread, the warp (shuffles), then the row's
         * warps when it has several (shared) */
        tile_value *a = rr_emit_to(R, op, "rt", x, rr_type(R, RR_TWO, ct), 3);
        tile_value *b = rr_emit_to(R, op, "rw", a, rr_type(R, RR_G1, ct), 2);
        if (R->threads / 32 / R->warp > 1) b = rr_emit_to(R, op, "rk", b, rr_type(R, RR_K1, ct), 1);
        return rr_emit_to(R, TILE_I_VIEW, "rv", b, rr_type(R, RR_ONE, ct), -1);
    }
    tile_value *a = rr_emit_to(R, op, "rt", x, rr_type(R, RR_TWO, ct), 2);
    tile_value *b = rr_emit_to(R, op, "rw", a, rr_type(R, RR_G1, ct), 1);
    return rr_emit_to(R, op, "rb", b, rr_type(R, RR_ONE, ct), 0);
}

/* A row scalar (`one`) broadcast to the chunk's `row` shape. */
static tile_value *rr_spread(rr *R, tile_value *one)
{
    tsl_dtype dt = rr_dt(one);
    if (R->warp) {
        int several = R->threads / 32 / R->warp > 1;
        tile_value *a = rr_emit_to(R, TILE_I_VIEW, "bw", one, rr_type(R, several ? RR_K1 : RR_G1, dt), -1);
        if (several) a = rr_emit_to(R, TILE_I_BROADCAST, "bk", a, rr_type(R, RR_G1, dt), 1);
        tile_value *b = rr_emit_to(R, TILE_I_BROADCAST, "bl", a, rr_type(R, RR_TWO, dt), 2);
        return rr_emit_to(R, TILE_I_BROADCAST, "bt", b, rr_type(R, RR_ROW, dt), 3);
    }
    tile_value *a = rr_emit_to(R, TILE_I_BROADCAST, "bw", one, rr_type(R, RR_G1, dt), 0);
    tile_value *b = rr_emit_to(R, TILE_I_BROADCAST, "bl", a, rr_type(R, RR_TWO, dt), 1);
    return rr_emit_to(R, TILE_I_BROADCAST, "bt", b, rr_type(R, RR_ROW, dt), 2);
}

/* The operand T[row coords..., off] (row forms), T_flat[off] (flat), or
 * T[row coords] for a row scalar (col: T[off]). */
static tile_operand rr_at(rr *R, int ti, rr_pat pt)
{
    tile_operand o = tile_operand_tensor(rr_tensor(R, ti));
    tile_expr *idx[TSL_MAX_RANK + 1];
    int n = 0;
    if (pt != RR_PAT_COL && !R->flat)
        for (int k = 0; k < R->rows; k++) idx[n++] = R->rowc[k];
    if (pt != RR_PAT_ROW) idx[n++] = R->off;
    if (n) tile_operand_index(R->m, &o, n, idx);
    return o;
}

/* A chunk of tensor ti (full or col pattern) as a `row` tile in ct. */
static tile_value *rr_load_chunk(rr *R, int ti, rr_pat pt)
{
    tile_value *v = rr_memo_get(R, RR_KEY_PASS(R, 1 + pt), ti, RR_ROW);
    if (v) return v;
    v = rr_memo_get(R, 1 + pt, ti, RR_ROW);
    if (!v) {
        tsl_dtype dt = R->def->tensors[ti]->dtype;
        tile_stmt *s = tile_build_instr(&R->b, TILE_I_LOAD_GLOBAL, rr_fresh(R, "ld"));
        tile_instr_arg(R->m, &s->instr, rr_at(R, ti, pt));
        tile_instr_result_type(s, rr_type(R, R->warp && pt == RR_PAT_COL ? RR_CVEC : RR_VEC, dt));
        v = rr_memo_put(R, 1 + pt, ti, RR_ROW,
                        rr_emit_to(R, TILE_I_VIEW, "lv", s->instr.result, rr_type(R, RR_ROW, dt), -1));
    }
    return rr_memo_put(R, RR_KEY_PASS(R, 1 + pt), ti, RR_ROW, rr_cast(R, v, R->ct));
}

/* A row scalar of tensor ti from memory, as `one` in ct. */
static tile_value *rr_load_one(rr *R, int ti)
{
    tile_value *v = rr_memo_get(R, 1 + RR_PAT_ROW, ti, RR_ONE);
    if (v) return v;
    tsl_dtype dt = R->def->tensors[ti]->dtype;
    tile_stmt *s = tile_build_instr(&R->b, TILE_I_LOAD_GLOBAL, rr_fresh(R, "ld"));
    tile_instr_arg(R->m, &s->instr, rr_at(R, ti, RR_PAT_ROW));
    tile_instr_result_type(s, rr_type(R, RR_ONE, dt));
    return rr_memo_put(R, 1 + RR_PAT_ROW, ti, RR_ONE, rr_cast(R, s->instr.result, R->ct));
}

/* The lanes of the current chunk inside the row: `row` bool. */
static tile_value *rr_valid(rr *R)
{
    tile_value *v = rr_memo_get(R, 9, 0, RR_ROW);
    if (v) return v;
    tile_stmt *s = tile_build_instr(&R->b, TILE_I_IOTA, rr_fresh(R, "col"));
    tile_instr_arg(R->m, &s->instr, tile_operand_scalar(R->off));
    /* the single-chunk paths' rows are short: 32-bit columns (fewer registers) */
    tsl_dtype it = R->single ? TSL_DTYPE_I32 : TSL_DTYPE_I64;
    tile_instr_result_type(s, rr_type(R, RR_VEC, it));
    s->instr.dim = R->warp ? 1 : 0;
    tile_value *c = rr_emit_to(R, TILE_I_VIEW, "cw", s->instr.result, rr_type(R, RR_ROW, it), -1);
    tile_operand a[2] = {tile_operand_tensor(c), tile_operand_scalar(R->colext)};
    return rr_memo_put(R, 9, 0, RR_ROW, rr_emit(R, TILE_I_LT, "in", 2, a));
}

/* ---- bodies ------------------------------------------------------------------------- */

/* A lowered value: a tile (ct, or bool) or a scalar expression. */
typedef struct rv {
    tile_value *t;
    tile_expr *s;
    int isint;
} rv;

static tile_value *rr_value(rr *R, int i, rr_shape sh);

static tile_value *rr_as_tile(rr *R, rv v, rr_shape sh)
{
    if (v.t) return v.t;
    int typed = v.s->kind == TILE_E_VALUE && tile_value_is_typed_scalar(v.s->v);
    if (!typed) return rr_fill(R, sh, R->ct, v.s);
    tile_value *z = rr_fill(R, sh, R->ct, tile_expr_int(R->m, 0));
    tile_operand a[2] = {tile_operand_tensor(z), tile_operand_scalar(v.s)};
    return rr_emit(R, TILE_I_ADD, "sc", 2, a);
}

static tile_operand rr_opnd(rv v) { return v.t ? tile_operand_tensor(v.t) : tile_operand_scalar(v.s); }

static tile_value *rr_bool(rr *R, rv v, rr_shape sh)
{
    tile_value *t = rr_as_tile(R, v, sh);
    if (t->type.dt.kind == TILE_DT_BOOL) return t;
    tile_operand a[2] = {tile_operand_tensor(t), tile_operand_scalar(tile_expr_int(R->m, 0))};
    return rr_emit(R, TILE_I_NE, "nz", 2, a);
}

/* Bool tiles become ct 0/1 where arithmetic needs them. */
static rv rr_num(rr *R, rv v)
{
    if (v.t && v.t->type.dt.kind == TILE_DT_BOOL) v.t = rr_cast(R, v.t, R->ct);
    return v;
}

static tile_op rr_unop(int b)
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

static tile_op rr_binop(int op)
{
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
    case LANG_AND: return TILE_I_AND;
    case LANG_OR: return TILE_I_OR;
    default: return TILE_I_MOD;
    }
}

/* x OP y on tiles of shape sh (at least one operand becomes a tile). */
static rv rr_bin(rr *R, tile_op op, rv x, rv y, rr_shape sh)
{
    if (op == TILE_I_AND || op == TILE_I_OR) {
        tile_operand a[2] = {tile_operand_tensor(rr_bool(R, x, sh)), tile_operand_tensor(rr_bool(R, y, sh))};
        return (rv){.t = rr_emit(R, op, "v", 2, a)};
    }
    x = rr_num(R, x);
    y = rr_num(R, y);
    if (!x.t && !y.t) x.t = rr_as_tile(R, x, sh);
    tile_operand a[2] = {rr_opnd(x), rr_opnd(y)};
    if (!x.t) {
        /* the first tensor operand gives the result's type: keep order with
         * a tile first only for commutative ops */
        if (op == TILE_I_ADD || op == TILE_I_MUL || op == TILE_I_MAX || op == TILE_I_MIN || op == TILE_I_EQ ||
            op == TILE_I_NE) {
            a[0] = rr_opnd(y);
            a[1] = rr_opnd(x);
        } else {
            a[0] = tile_operand_tensor(rr_as_tile(R, x, sh));
        }
    }
    return (rv){.t = rr_emit(R, op, "v", 2, a)};
}

/* Does e (in group op i) read only row scalars: constants, sizes, scalar
 * parameters, row-scalar tensors and ops? Then a chunk can compute it
 * once per row on the `one` tile and broadcast it. */
static int rr_rowscalar(const rr *R, int i, const graph_expr *e)
{
    const graph_op *op = &R->g->ops[R->grp->first + i];
    if (e->kind == LANG_E_ACCESS) {
        const graph_operand *o = &op->operands[e->operand];
        int w = rr_writer_before(R, o->tensor, i);
        if (w >= 0) return R->kind[w] != RR_FULL;
        return rr_pattern(R, op, o) == RR_PAT_ROW;
    }
    for (int k = 0; k < e->nargs; k++)
        if (!rr_rowscalar(R, i, e->args[k])) return 0;
    return 1;
}

static rv rr_expr_at(rr *R, int i, const graph_expr *e, rr_shape sh);

/* Body e of group op i in shape sh (RR_ROW inside a chunk, RR_ONE for row
 * scalars). Inside a chunk, a float subexpression of row scalars
 * (rsqrt(var(n) + 1e-5)) is computed once on `one` and broadcast, and
 * x / s by a row scalar s is x * (1 / s): per element one multiply, not a
 * division (the two differ by at most an f32 rounding). */
static rv rr_expr(rr *R, int i, const graph_expr *e, rr_shape sh)
{
    const lang_expr *s = e->src;
    int compound = e->kind == LANG_E_UNARY || e->kind == LANG_E_BINARY || e->kind == LANG_E_SELECT ||
                   e->kind == LANG_E_CALL || e->kind == LANG_E_CAST;
    if (sh == RR_ROW && compound && rr_float(s->type) && rr_rowscalar(R, i, e)) {
        tile_value *v = rr_memo_get_ex(R, 50, e);
        return (rv){.t = v ? v : rr_spread(R, rr_as_tile(R, rr_num(R, rr_expr_at(R, i, e, RR_ONE)), RR_ONE))};
    }
    if (sh == RR_ROW && e->kind == LANG_E_BINARY && s->op == LANG_DIV && rr_float(s->optype) &&
        rr_rowscalar(R, i, e->args[1])) {
        tile_value *inv = rr_memo_get_ex(R, 51, e);
        if (!inv) {
            tile_value *y = rr_as_tile(R, rr_num(R, rr_expr_at(R, i, e->args[1], RR_ONE)), RR_ONE);
            inv = rr_spread(R, rr_bin(R, TILE_I_DIV, (rv){.s = tile_expr_float(R->m, 1.0)}, (rv){.t = y}, RR_ONE).t);
        }
        return rr_bin(R, TILE_I_MUL, rr_expr(R, i, e->args[0], sh), (rv){.t = inv}, sh);
    }
    return rr_expr_at(R, i, e, sh);
}

static rv rr_expr_at(rr *R, int i, const graph_expr *e, rr_shape sh)
{
    const graph_op *op = &R->g->ops[R->grp->first + i];
    const lang_expr *s = e->src;
    switch (e->kind) {
    /* a literal holds the value of its dtype (language.md) */
    case LANG_E_INT:
        if (rr_float(s->type)) return (rv){.s = tile_expr_float(R->m, sched_kb_literal(s->type, (double)s->ival))};
        return (rv){.s = tile_expr_int(R->m, s->ival), .isint = 1};
    case LANG_E_FLOAT: return (rv){.s = tile_expr_float(R->m, sched_kb_literal(s->type, s->fval))};
    case LANG_E_SIZE: return (rv){.s = rr_size(R, s->slot), .isint = 1};
    case LANG_E_SCALAR: {
        int ti = s->tensor->index;
        if (!imap_get(&R->tparam, ti)) {
            tile_value *v = tile_kernel_param_typed(R->m, R->k, rr_fresh(R, s->tensor->name),
                                                    tile_dtype_from_tsl(s->tensor->dtype));
            imap_put(&R->tparam, ti, v);
            rr_add_arg(R, (sched_arg){.name = v->name, .kind = SCHED_ARG_SCALAR, .tensor = ti});
        }
        return (rv){.s = tile_expr_value(R->m, imap_get(&R->tparam, ti))};
    }
    case LANG_E_ACCESS: {
        const graph_operand *o = &op->operands[e->operand];
        rr_pat pt = rr_pattern(R, op, o);
        int w = rr_writer_before(R, o->tensor, i);
        if (w >= 0) return (rv){.t = rr_value(R, w, sh)};
        if (pt == RR_PAT_ROW) {
            tile_value *one = rr_load_one(R, o->tensor);
            if (sh == RR_ONE) return (rv){.t = one};
            tile_value *v = rr_memo_get(R, 20, o->tensor, RR_ROW);
            return (rv){.t = v ? v : rr_memo_put(R, 20, o->tensor, RR_ROW, rr_spread(R, one))};
        }
        return (rv){.t = rr_load_chunk(R, o->tensor, pt)};
    }
    case LANG_E_UNARY: {
        rv x = rr_expr(R, i, e->args[0], sh);
        if (s->op == LANG_NOT) {
            tile_operand a = tile_operand_tensor(rr_bool(R, x, sh));
            return (rv){.t = rr_emit(R, TILE_I_NOT, "nt", 1, &a)};
        }
        tile_operand a = tile_operand_tensor(rr_as_tile(R, rr_num(R, x), sh));
        return (rv){.t = rr_emit(R, TILE_I_NEG, "ng", 1, &a)};
    }
    case LANG_E_BINARY: {
        rv x = rr_expr(R, i, e->args[0], sh), y = rr_expr(R, i, e->args[1], sh);
        if (x.isint && y.isint && !x.t && !y.t) {
            tile_binop bo = s->op == LANG_ADD ? TILE_OP_ADD : s->op == LANG_SUB ? TILE_OP_SUB : TILE_OP_MUL;
            return (rv){.s = rr_ibin(R, bo, x.s, y.s), .isint = 1};
        }
        return rr_bin(R, rr_binop(s->op), x, y, sh);
    }
    case LANG_E_SELECT: {
        tile_value *c = rr_bool(R, rr_expr(R, i, e->args[0], sh), sh);
        rv a = rr_num(R, rr_expr(R, i, e->args[1], sh)), b = rr_num(R, rr_expr(R, i, e->args[2], sh));
        if (!a.t && !b.t) a.t = rr_as_tile(R, a, sh);
        if (!a.t) a.t = rr_as_tile(R, a, sh);
        tile_operand args[3] = {tile_operand_tensor(c), rr_opnd(a), rr_opnd(b)};
        return (rv){.t = rr_emit(R, TILE_I_SELECT, "sl", 3, args)};
    }
    case LANG_E_CALL: {
        rv x = rr_expr(R, i, e->args[0], sh);
        if (e->nargs == 2) {
            rv y = rr_expr(R, i, e->args[1], sh);
            tile_op bo = s->op == LANG_MAX ? TILE_I_MAX : s->op == LANG_MIN ? TILE_I_MIN : TILE_I_POW;
            return rr_bin(R, bo, x, y, sh);
        }
        tile_operand a = tile_operand_tensor(rr_as_tile(R, rr_num(R, x), sh));
        tile_stmt *st = tile_build_instr(&R->b, rr_unop(s->op), rr_fresh(R, "f"));
        tile_instr_arg(R->m, &st->instr, a);
        tile_instr_infer(st);
        st->instr.approx = tile_op_has_approx(st->instr.op) &&
                           sched_kb_approx_ok(R->def->tensors[op->operands[0].tensor]->dtype, R->ct);
        return (rv){.t = st->instr.result};
    }
    case LANG_E_CAST: {
        rv x = rr_expr(R, i, e->args[0], sh);
        if (s->type == TSL_DTYPE_BOOL) return (rv){.t = rr_bool(R, x, sh)};
        tile_value *t = rr_as_tile(R, rr_num(R, x), sh);
        /* round through the named dtype */
        return (rv){.t = rr_cast(R, rr_cast(R, t, s->type), R->ct)};
    }
    default: break;
    }
    TSL_ASSERT(0 && "unknown expression kind");
    return (rv){.s = tile_expr_int(R->m, 0)};
}

/* Is op i's value read back from the staging row in the pass being
 * lowered (rr_plan_stage) instead of recomputed? */
static int rr_staged(const rr *R, int i)
{
    return R->stream && i == R->stage_val && R->pass_op == R->stage_out;
}

/* Mark in `dep` the row-full ops that op e's reads reach in group op i
 * (a staged op is loaded: neither it nor its inputs are recomputed). */
static void rr_mark_expr(const rr *R, int i, const graph_expr *e, unsigned char *dep)
{
    if (e->kind == LANG_E_ACCESS) {
        const graph_op *op = &R->g->ops[R->grp->first + i];
        int w = rr_writer_before(R, op->operands[e->operand].tensor, i);
        if (w >= 0 && R->kind[w] == RR_FULL && !rr_staged(R, w)) dep[w] = 1;
        return;
    }
    for (int k = 0; k < e->nargs; k++) rr_mark_expr(R, i, e->args[k], dep);
}

/* The row-full ops op i recomputes, directly or through each other:
 * writers come before readers, so one sweep down from i finds them all,
 * with no recursion along the chain (a group's chain of ops can be as
 * long as GRAPH_MAX_GROUP_OPS, each op's expression 256 deep). */
static unsigned char *rr_deps(rr *R, int i)
{
    unsigned char *dep = arena_alloc(R->m->arena, (size_t)R->grp->nops + 1);
    dep[i] = 1;
    for (int j = i; j >= 0; j--)
        if (dep[j]) rr_mark_expr(R, j, R->g->ops[R->grp->first + j].body, dep);
    dep[i] = 0;
    return dep;
}

static tile_value *rr_value_now(rr *R, int i);

/* The value op i defines, in shape sh: row-full ops recomputed in the
 * current chunk (memoized per open block), row scalars from their slot.
 * A row-full op's row-full inputs are made first, in order, so making
 * one finds its inputs memoized: rr_value never nests. */
static tile_value *rr_value(rr *R, int i, rr_shape sh)
{
    if (R->kind[i] != RR_FULL) {
        TSL_ASSERT(R->one[i]);
        if (sh == RR_ONE) return R->one[i];
        tile_value *v = rr_memo_get(R, 30, i, RR_ROW);
        return v ? v : rr_memo_put(R, 30, i, RR_ROW, rr_spread(R, R->one[i]));
    }
    TSL_ASSERT(sh == RR_ROW);
    tile_value *v = rr_memo_get(R, RR_KEY_PASS(R, 40), i, RR_ROW);
    if (v) return v;
    if (rr_staged(R, i)) {
        /* stored in its own dtype (the staging row's), so exactly the value */
        int y = R->g->ops[R->grp->first + R->stage_out].operands[0].tensor;
        return rr_memo_put(R, RR_KEY_PASS(R, 40), i, RR_ROW, rr_load_chunk(R, y, RR_PAT_FULL));
    }
    const unsigned char *dep = rr_deps(R, i);
    for (int j = 0; j < i; j++)
        if (dep[j] && !rr_memo_get(R, RR_KEY_PASS(R, 40), j, RR_ROW)) rr_value_now(R, j);
    return rr_value_now(R, i);
}

/* Op i's value, its row-full inputs memoized. */
static tile_value *rr_value_now(rr *R, int i)
{
    tile_value *y = rr_memo_get(R, 41, i, RR_ROW);
    if (!y) {
        const graph_op *op = &R->g->ops[R->grp->first + i];
        tile_value *t = rr_as_tile(R, rr_num(R, rr_expr(R, i, op->body, RR_ROW)), RR_ROW);
        tsl_dtype lt = R->def->tensors[op->operands[0].tensor]->dtype;
        y = rr_memo_put(R, 41, i, RR_ROW, rr_cast(R, t, lt));
    }
    return rr_memo_put(R, RR_KEY_PASS(R, 40), i, RR_ROW, rr_cast(R, y, R->ct));
}

/* ---- passes ------------------------------------------------------------------------------ */

static tile_expr *rr_identity(rr *R, lang_assign_op op)
{
    if (op == LANG_ADD_EQ) return tile_expr_int(R->m, 0);
    if (op == LANG_MUL_EQ) return tile_expr_int(R->m, 1);
    return tile_expr_float(R->m, op == LANG_MAX_EQ ? -INFINITY : INFINITY);
}

static tile_op rr_combine(lang_assign_op op)
{
    return op == LANG_MUL_EQ ? TILE_I_MUL : op == LANG_MAX_EQ ? TILE_I_MAX : op == LANG_MIN_EQ ? TILE_I_MIN : TILE_I_ADD;
}

static int rr_last_writer(const rr *R, int i)
{
    int t = R->g->ops[R->grp->first + i].operands[0].tensor;
    return rr_writer_before(R, t, R->grp->nops) == i;
}

static int rr_materialized(const rr *R, int i)
{
    /* (a part of a merged chain stores what the chain kept internal) */
    return !graph_internal_to(R->g, R->g->ops[R->grp->first + i].operands[0].tensor, R->grp) && rr_last_writer(R, i);
}

static void rr_store(rr *R, tile_value *x, int ti, rr_pat pt)
{
    tsl_dtype dt = R->def->tensors[ti]->dtype;
    tile_value *y = rr_cast(R, x, dt);
    if (pt == RR_PAT_FULL) y = rr_emit_to(R, TILE_I_VIEW, "sv", y, rr_type(R, RR_VEC, dt), -1);
    tile_stmt *s = tile_build_instr(&R->b, TILE_I_STORE_GLOBAL, NULL);
    tile_instr_arg(R->m, &s->instr, tile_operand_tensor(y));
    tile_instr_dst(&s->instr, rr_at(R, ti, pt));
}

/* The loads of expression e of group op i (not through other ops). */
static void rr_prefetch_expr(rr *R, int i, const graph_expr *e)
{
    if (e->kind == LANG_E_ACCESS) {
        const graph_op *op = &R->g->ops[R->grp->first + i];
        const graph_operand *o = &op->operands[e->operand];
        if (rr_writer_before(R, o->tensor, i) >= 0) return; /* a value of the group */
        rr_pat pt = rr_pattern(R, op, o);
        /* on the GPU a column vector (layernorm's gamma, beta) is loaded
         * where it is used: prefetched, a thread holds all of them beside
         * its row (128 registers); they are L2 hits, each row reads them */
        if (pt == RR_PAT_FULL || (pt == RR_PAT_COL && !R->gpu)) rr_load_chunk(R, o->tensor, pt);
        return;
    }
    for (int j = 0; j < e->nargs; j++) rr_prefetch_expr(R, i, e->args[j]);
}

/* Load, ahead of any arithmetic, every chunk of memory that op i's body
 * reads, through the internal ops it recomputes (each once, in order): the
 * loads of the unrolled sub-chunks are then all in flight at once. */
static void rr_prefetch(rr *R, int i)
{
    const unsigned char *dep = rr_deps(R, i);
    for (int j = 0; j < i; j++)
        if (dep[j]) rr_prefetch_expr(R, j, R->g->ops[R->grp->first + j].body);
    rr_prefetch_expr(R, i, R->g->ops[R->grp->first + i].body);
}

/* One pass of op i over the row: a store of its chunks (acc NULL) or the
 * accumulation of its body into acc (tail lanes give the identity). The
 * streaming path loops over groups of SCHED_RR_UNROLL chunks, their loads
 * first; the single-chunk path has one chunk at column 0; the flat form
 * the block's chunk (R->off set by the caller). */
/* The chunks at columns base + u * width, u < U, of op i's pass (see
 * rr_pass); gives the last reduced chunk. */
static tile_value *rr_pass_chunks(rr *R, int i, int reduce, tile_value *acc, tile_expr *base, int U)
{
    tile_value *last = NULL;
    const graph_op *op = &R->g->ops[R->grp->first + i];
    for (int step = 0; step < 2; step++)
        for (int u = 0; u < U; u++) {
            R->sub = u;
            R->off = rr_ibin(R, TILE_OP_ADD, base, tile_expr_int(R->m, (int64_t)u * R->width));
            if (step == 1 && R->stream && i == R->stage_in) {
                int y = R->g->ops[R->grp->first + R->stage_out].operands[0].tensor;
                rr_value(R, R->stage_val, RR_ROW);
                rr_store(R, rr_memo_get(R, 41, R->stage_val, RR_ROW), y, RR_PAT_FULL);
            }
            if (step == 0) {
                rr_prefetch(R, i);
            } else if (!reduce) {
                /* the value as rounded to its dtype: no cast back and forth */
                rr_value(R, i, RR_ROW);
                rr_store(R, rr_memo_get(R, 41, i, RR_ROW), op->operands[0].tensor, RR_PAT_FULL);
            } else {
                tile_value *x = rr_as_tile(R, rr_num(R, rr_expr(R, i, op->body, RR_ROW)), RR_ROW);
                if (!R->full) {
                    tile_operand sa[3] = {tile_operand_tensor(rr_valid(R)), tile_operand_tensor(x),
                                          tile_operand_scalar(rr_identity(R, op->assign))};
                    x = rr_emit(R, TILE_I_SELECT, "m", 3, sa);
                }
                last = x;
                if (!acc) continue; /* one chunk: reduced as it is, no accumulator */
                tile_stmt *c = tile_build_instr(&R->b, rr_combine(op->assign), NULL);
                tile_instr_arg(R->m, &c->instr, tile_operand_tensor(acc));
                tile_instr_arg(R->m, &c->instr, tile_operand_tensor(x));
                tile_instr_dst(&c->instr, tile_operand_tensor(acc));
            }
        }
    R->sub = 0;
    return last;
}

/* `for c in lo : hi` over groups of U chunks, their columns c * width * U + ... */
static tile_value *rr_pass_loop(rr *R, int i, int reduce, tile_value *acc, tile_expr *lo, tile_expr *hi, int U)
{
    tile_stmt *f = tile_build_for(&R->b, rr_fresh(R, "c"), lo, hi, NULL);
    tile_build_push(&R->b, f->body);
    tile_expr *base = rr_ibin(R, TILE_OP_MUL, tile_expr_value(R->m, f->v), tile_expr_int(R->m, (int64_t)R->width * U));
    tile_value *last = rr_pass_chunks(R, i, reduce, acc, base, U);
    tile_build_pop(&R->b);
    return last;
}

/* The CPU plan's streaming passes: the row-scalar parts of what op i
 * computes per chunk (a row scalar spread over the chunk, the 1 / s of
 * x / s, a float subexpression of row scalars), and those of the internal
 * ops it recomputes, are the same in every chunk: made once before the
 * chunk loop (memoized for it), so that the loop is the per-element work
 * alone. Softmax 4096^2 had six broadcasts and a division per chunk of
 * 128 elements. */
static void rr_hoist(rr *R, int i, const graph_expr *e)
{
    const graph_op *op = &R->g->ops[R->grp->first + i];
    const lang_expr *s = e->src;
    int compound = e->kind == LANG_E_UNARY || e->kind == LANG_E_BINARY || e->kind == LANG_E_SELECT ||
                   e->kind == LANG_E_CALL || e->kind == LANG_E_CAST;
    if (compound && rr_float(s->type) && rr_rowscalar(R, i, e)) {
        if (!rr_memo_get_ex(R, 50, e))
            rr_memo_put_ex(R, 50, e, rr_spread(R, rr_as_tile(R, rr_num(R, rr_expr_at(R, i, e, RR_ONE)), RR_ONE)));
        return;
    }
    if (e->kind == LANG_E_BINARY && s->op == LANG_DIV && rr_float(s->optype) && rr_rowscalar(R, i, e->args[1])) {
        if (!rr_memo_get_ex(R, 51, e)) {
            tile_value *y = rr_as_tile(R, rr_num(R, rr_expr_at(R, i, e->args[1], RR_ONE)), RR_ONE);
            rv r = rr_bin(R, TILE_I_DIV, (rv){.s = tile_expr_float(R->m, 1.0)}, (rv){.t = y}, RR_ONE);
            rr_memo_put_ex(R, 51, e, rr_spread(R, r.t));
        }
        rr_hoist(R, i, e->args[0]);
        return;
    }
    if (e->kind == LANG_E_ACCESS) {
        const graph_operand *o = &op->operands[e->operand];
        int w = rr_writer_before(R, o->tensor, i);
        if (w >= 0 && R->kind[w] != RR_FULL) {
            rr_value(R, w, RR_ROW);
        } else if (w >= 0 && rr_staged(R, w)) {
            return;
        } else if (w >= 0) {
            rr_hoist(R, w, R->g->ops[R->grp->first + w].body);
        } else if (rr_pattern(R, op, o) == RR_PAT_ROW && !rr_memo_get(R, 20, o->tensor, RR_ROW)) {
            rr_memo_put(R, 20, o->tensor, RR_ROW, rr_spread(R, rr_load_one(R, o->tensor)));
        }
        return;
    }
    for (int k = 0; k < e->nargs; k++) rr_hoist(R, i, e->args[k]);
}

/* One pass of op i over the row: a store of its chunks (acc NULL) or the
 * accumulation of its body into acc (tail lanes give the identity). The
 * streaming path loops over groups of SCHED_RR_UNROLL chunks, their loads
 * first; the single-chunk path has one chunk at column 0; the flat form
 * the block's chunk (R->off set by the caller). On the CPU a streaming
 * reduction loops over the whole chunks first, without the tail mask (no
 * iota, compare and select per element: the loop is a load and an add
 * the C compiler vectorizes), then over the one partial chunk, if any,
 * with it. */
static tile_value *rr_pass(rr *R, int i, int reduce, tile_value *acc)
{
    tile_value *last = NULL;
    R->pass++;
    int loop = !R->flat && !R->chunked && !R->single, U = loop ? SCHED_RR_UNROLL : 1;
    tile_expr *base = R->off;
    R->pass_op = i;
    R->stream = loop && !R->gpu;
    if (loop && !R->gpu) rr_hoist(R, i, R->g->ops[R->grp->first + i].body);
    if (loop) {
        tile_expr *w = tile_expr_int(R->m, (int64_t)R->width * U);
        tile_expr *n = tile_expr_bin(R->m, TILE_OP_CDIV, R->colext, w);
        if (reduce && !R->gpu) {
            tile_expr *whole = tile_expr_bin(R->m, TILE_OP_DIV, R->colext, w);
            int full = R->full;
            R->full = 1;
            rr_pass_loop(R, i, reduce, acc, tile_expr_int(R->m, 0), whole, U);
            R->full = full;
            last = rr_pass_loop(R, i, reduce, acc, whole, n, U);
        } else {
            last = rr_pass_loop(R, i, reduce, acc, tile_expr_int(R->m, 0), n, U);
        }
    } else {
        if (!R->flat && !R->chunked) base = tile_expr_int(R->m, 0);
        last = rr_pass_chunks(R, i, reduce, acc, base, U);
    }
    R->off = base;
    R->pass_op = -1;
    R->stream = 0;
    return acc ? acc : last;
}

static void rr_lower_op(rr *R, int i)
{
    const graph_op *op = &R->g->ops[R->grp->first + i];
    int lhs = op->operands[0].tensor;
    tsl_dtype lt = R->def->tensors[lhs]->dtype;
    if (R->kind[i] == RR_FULL) {
        if (rr_materialized(R, i)) rr_pass(R, i, 0, NULL); /* else recomputed where it is read */
        return;
    }
    tile_value *one;
    if (R->kind[i] == RR_SCALAR) {
        one = rr_as_tile(R, rr_num(R, rr_expr(R, i, op->body, RR_ONE)), RR_ONE);
    } else {
        /* a pass over one chunk reduces its masked values directly; a loop
         * over chunks accumulates them first (an accumulator per element
         * costs as many registers as the chunk) */
        int one_chunk = R->flat || R->chunked || R->single;
        tile_value *acc = one_chunk ? NULL : rr_fill(R, RR_ROW, R->ct, rr_identity(R, op->assign));
        acc = rr_pass(R, i, 1, acc);
        tile_op ro = op->assign == LANG_MAX_EQ ? TILE_I_REDUCE_MAX
                     : op->assign == LANG_MIN_EQ ? TILE_I_REDUCE_MIN
                                                 : TILE_I_REDUCE_SUM;
        one = rr_reduce(R, ro, acc);
        if (!op->bang) {
            tile_operand a[2] = {tile_operand_tensor(rr_value(R, rr_writer_before(R, lhs, i), RR_ONE)),
                                 tile_operand_tensor(one)};
            one = rr_emit(R, rr_combine(op->assign), "ac", 2, a);
        }
    }
    R->one[i] = rr_cast(R, rr_cast(R, one, lt), R->ct);
    if (rr_materialized(R, i)) rr_store(R, R->one[i], lhs, RR_PAT_ROW);
}

/* ---- entry -------------------------------------------------------------------------------- */

/* E = locals elements per thread; warp: each warp one row (its chunk
 * 32 * E columns) instead of the block one row (T * E). The layouts of the
 * chunk (`vec`) on the GPU interleave 8-element runs across the threads,
 * local(E/8).spatial(T).local(8): every wide access of a warp covers one
 * contiguous span (coalesced), and a thread's E/8 accesses are independent
 * loads in flight together. The `row` view keeps each thread's registers
 * in order, so reductions and broadcasts do not care which columns a
 * thread holds. */
static void rr_set_form(rr *R, int warp, int locals)
{
    int T = R->threads, G = T / 32, K = warp ? G / warp : G, runs = R->gpu && locals % 8 == 0 ? locals / 8 : 1,
        run = locals / runs;
    R->warp = warp;
    R->locals = locals;
    R->width = (warp ? 32 * K : T) * locals;
    char txt[160];
    if (warp)
        snprintf(txt, sizeof txt, "spatial(%d,1).local(1,%d).spatial(1,%d).local(1,%d)", warp, runs, 32 * K, run);
    else if (runs > 1)
        snprintf(txt, sizeof txt, "local(%d).spatial(%d).local(%d)", runs, T, run);
    else
        snprintf(txt, sizeof txt, "spatial(%d).local(%d)", T, locals);
    R->lay_vec = tile_layout_make(R->m, txt, NULL);
    R->lay_cvec = R->lay_k1 = NULL;
    if (warp) {
        snprintf(txt, sizeof txt, "replicate(%d).local(%d).spatial(%d).local(%d)", warp, runs, 32 * K, run);
        R->lay_cvec = tile_layout_make(R->m, txt, NULL);
        snprintf(txt, sizeof txt, "spatial(%d,%d,32,1).local(1,1,1,%d)", warp, K, locals);
        R->lay_row = tile_layout_make(R->m, txt, NULL);
        snprintf(txt, sizeof txt, "spatial(%d,%d,32)", warp, K);
        R->lay_two = tile_layout_make(R->m, txt, NULL);
        snprintf(txt, sizeof txt, "spatial(%d,%d,1).replicate(32)", warp, K);
        R->lay_g1 = tile_layout_make(R->m, txt, NULL);
        snprintf(txt, sizeof txt, "spatial(%d,1,1).replicate(%d)", warp, 32 * K);
        R->lay_k1 = K > 1 ? tile_layout_make(R->m, txt, NULL) : R->lay_g1;
        snprintf(txt, sizeof txt, "spatial(%d).replicate(%d)", warp, 32 * K);
        R->lay_one = tile_layout_make(R->m, txt, NULL);
        TSL_ASSERT(R->lay_cvec && R->lay_k1);
    } else {
        snprintf(txt, sizeof txt, "spatial(%d,32,1).local(1,1,%d)", G, locals);
        R->lay_row = tile_layout_make(R->m, txt, NULL);
        snprintf(txt, sizeof txt, "spatial(%d,32)", G);
        R->lay_two = tile_layout_make(R->m, txt, NULL);
        snprintf(txt, sizeof txt, "spatial(%d,1).replicate(32)", G);
        R->lay_g1 = tile_layout_make(R->m, txt, NULL);
        snprintf(txt, sizeof txt, "replicate(%d).local(1)", T);
        R->lay_one = tile_layout_make(R->m, txt, NULL);
    }
    TSL_ASSERT(R->lay_vec && R->lay_row && R->lay_two && R->lay_g1 && R->lay_one);
}

/* The tensors the group reads from memory along the row (full rows and
 * column vectors, each counted once): each holds a thread's elements in
 * registers while its pass runs. */
static int rr_streams(const rr *R)
{
    int n = 0;
    for (int i = 0; i < R->grp->nops; i++) {
        const graph_op *op = &R->g->ops[R->grp->first + i];
        for (int j = 1; j < op->noperands; j++) {
            const graph_operand *o = &op->operands[j];
            rr_pat pt = rr_pattern(R, op, o);
            if (pt == RR_PAT_ROW || rr_written_in_group(R, o->tensor)) continue;
            int seen = 0;
            for (int i2 = 0; i2 <= i && !seen; i2++) {
                const graph_op *op2 = &R->g->ops[R->grp->first + i2];
                for (int j2 = 1; j2 < (i2 == i ? j : op2->noperands); j2++)
                    if (op2->operands[j2].tensor == o->tensor) seen = 1;
            }
            n += !seen;
        }
    }
    return n;
}

/* Does e call a builtin other than max / min (exp, log, tanh, pow, ...)? */
static int rr_calls(const graph_expr *e)
{
    if (e->kind == LANG_E_CALL && !(e->nargs == 2 && (e->src->op == LANG_MAX || e->src->op == LANG_MIN))) return 1;
    for (int k = 0; k < e->nargs; k++)
        if (rr_calls(e->args[k])) return 1;
    return 0;
}

/* The CPU plan's streaming path recomputes an internal row-full value in
 * every pass that reads it: softmax's e = exp(X - mx) in the sum's pass
 * and again in Y's, two exps per element. When the group ends with a
 * materialized row-full op k (Y, the last pass, whose row the kernel
 * overwrites anyway), the pass j just before it stores such a value i into
 * Y's row as it computes it, and k's pass loads it back from there (L1 or
 * L2: the row was just written) instead of recomputing it. Chosen when i's
 * recomputation calls a transcendental (a store and a load cost less; for
 * plain arithmetic such as layernorm's X - mean they do not) and i's dtype
 * is Y's, so the round trip is exact. Outputs never overlap inputs
 * (api/args.c), and a group that reads Y itself (an in/out Y) is not
 * staged, so the early store cannot change what later passes read. */
static void rr_plan_stage(rr *R)
{
    R->stage_val = R->stage_in = R->stage_out = -1;
    int k = R->grp->nops - 1, j = k - 1;
    if (k < 1 || R->kind[k] != RR_FULL || !rr_materialized(R, k)) return;
    int y = R->g->ops[R->grp->first + k].operands[0].tensor;
    if (rr_writer_before(R, y, k) >= 0) return;
    for (int o = 0; o <= k; o++) {
        const graph_op *op = &R->g->ops[R->grp->first + o];
        for (int r = 1; r < op->noperands; r++)
            if (op->operands[r].tensor == y) return;
    }
    while (j >= 0 && R->kind[j] == RR_SCALAR) j--;
    if (j < 0 || (R->kind[j] == RR_FULL && !rr_materialized(R, j))) return;
    const unsigned char *dk = rr_deps(R, k), *dj = rr_deps(R, j);
    for (int i = j - 1; i >= 0; i--) {
        int ti = R->g->ops[R->grp->first + i].operands[0].tensor;
        if (R->kind[i] != RR_FULL || rr_materialized(R, i) || !dk[i] || !dj[i]) continue;
        if (R->def->tensors[ti]->dtype != R->def->tensors[y]->dtype) continue;
        const unsigned char *di = rr_deps(R, i);
        int calls = rr_calls(R->g->ops[R->grp->first + i].body);
        for (int d = 0; d < i && !calls; d++)
            if (di[d]) calls = rr_calls(R->g->ops[R->grp->first + d].body);
        if (!calls) continue;
        R->stage_val = i;
        R->stage_in = j;
        R->stage_out = k;
        return;
    }
}

/* The size classes of the row forms, tried in order by row length:
 *   if D <= width(class 0) { whole row in registers } else if ... else {
 *   chunk loops of the streaming width }
 * A row that fits is read from global once and every pass reuses its
 * registers, with all of a thread's wide loads issued together. */
typedef struct rr_class {
    int warp, locals;
} rr_class;

/* `if e { } else { }` at the builder's position: fill with push/pop. */
static tile_stmt *rr_if(rr *R, tile_expr *e)
{
    tile_stmt *s = tile_build_stmt(&R->b, TILE_S_IF);
    s->e = e;
    s->body = tile_block_new(R->m);
    s->els = tile_block_new(R->m);
    return s;
}

static void rr_lower_paths(rr *R, const rr_class *cls, int n, int stream_locals)
{
    if (n == 0) {
        R->single = 0;
        rr_set_form(R, 0, stream_locals);
        for (int i = 0; i < R->grp->nops; i++) rr_lower_op(R, i);
        return;
    }
    rr_set_form(R, cls[0].warp, cls[0].locals);
    tile_stmt *s = rr_if(R, tile_expr_bin(R->m, TILE_OP_LE, R->colext, tile_expr_int(R->m, R->width)));
    tile_build_push(&R->b, s->body);
    R->single = 1;
    tile_expr *row0 = R->rowc[0];
    if (R->warp) R->rowc[0] = rr_ibin(R, TILE_OP_MUL, tile_expr_block_idx(R->m, 0), tile_expr_int(R->m, R->warp));
    if (R->gpu) {
        /* a row of exactly the class's width (the common 1024, 8192) gets
         * its own arm without the tail masks of the reductions: an iota, a
         * compare and a select less per element and reduction (the CUDA
         * runtime compiles only the arm the sizes take) */
        tile_stmt *f = rr_if(R, tile_expr_bin(R->m, TILE_OP_EQ, R->colext, tile_expr_int(R->m, R->width)));
        tile_build_push(&R->b, f->body);
        R->full = 1;
        for (int i = 0; i < R->grp->nops; i++) rr_lower_op(R, i);
        R->full = 0;
        tile_build_pop(&R->b);
        tile_build_push(&R->b, f->els);
        for (int i = 0; i < R->grp->nops; i++) rr_lower_op(R, i);
        tile_build_pop(&R->b);
    } else {
        for (int i = 0; i < R->grp->nops; i++) rr_lower_op(R, i);
    }
    R->rowc[0] = row0;
    tile_build_pop(&R->b);
    tile_build_push(&R->b, s->els);
    rr_lower_paths(R, cls + 1, n - 1, stream_locals);
    tile_build_pop(&R->b);
}

int sched_rr_lower(sched_plan *p, const graph *g, const graph_group *grp, int rows, int flat, const char *tag)
{
    tsl_arena *a = p->m->arena;
    rr *R = arena_alloc(a, sizeof *R);
    R->p = p;
    R->g = g;
    R->def = g->def;
    R->grp = grp;
    R->m = p->m;
    R->rows = rows;
    R->flat = flat;
    R->ct = TSL_DTYPE_F32;
    R->kind = arena_alloc(a, sizeof *R->kind * (size_t)(grp->nops + 1));
    R->one = arena_alloc(a, sizeof *R->one * (size_t)(grp->nops + 1));
    if (!rr_recognise(R)) return 0;
    R->stage_val = R->stage_in = R->stage_out = R->pass_op = -1;
    R->gpu = p->target == TSL_TARGET_CUDA;
    R->threads = flat ? (R->gpu ? SCHED_EW_THREADS_GPU : SCHED_EW_THREADS)
                      : (R->gpu ? SCHED_RR_THREADS_GPU : SCHED_RR_THREADS);
    rr_set_form(R, 0, flat ? (R->gpu ? SCHED_EW_LOCALS_GPU : SCHED_EW_LOCALS) : SCHED_RR_LOCALS);

    const graph_op *op0 = &g->ops[grp->first];
    R->k = tile_kernel_new(R->m, arena_printf(a, "%s_g%d_%s", R->def->name, grp->index, tag), R->threads);
    sched_launch ln = {.k = R->k, .stmt = op0->index, .nstmts = grp->nops};
    ARENA_PUSH(a, p->launches, p->nlaunches, p->caplaunches, ln);
    R->launch = &p->launches[p->nlaunches - 1];
    imap_init(&R->tparam, a);
    R->size = arena_alloc(a, sizeof *R->size * (size_t)(R->def->nsizes + 1));
    /* parameters in a stable order: every tensor the group touches */
    for (int i = 0; i < grp->nops; i++) {
        const graph_op *op = &g->ops[grp->first + i];
        for (int j = op->noperands - 1; j >= 0; j--) {
            int ti = op->operands[j].tensor;
            if (j == 0 ? rr_materialized(R, i) : rr_writer_before(R, ti, i) < 0) rr_tensor(R, ti);
        }
    }
    tile_build_begin(&R->b, R->m, R->k);
    R->rowc = arena_alloc(a, sizeof *R->rowc * (size_t)(rows + 1));
    if (flat) {
        tile_expr *total = tile_expr_int(R->m, 1);
        for (int v = 0; v < op0->niter; v++)
            total = rr_ibin(R, TILE_OP_MUL, total,
                            rr_ibin(R, TILE_OP_SUB, rr_sexpr(R, op0->box[v].hi), rr_sexpr(R, op0->box[v].lo)));
        R->colext = total;
        R->off = rr_ibin(R, TILE_OP_MUL, tile_expr_block_idx(R->m, 0), tile_expr_int(R->m, R->width));
        R->k->grid[0] = tile_expr_bin(R->m, TILE_OP_CDIV, total, tile_expr_int(R->m, R->width));
    } else {
        R->colext = rr_sexpr(R, R->colhi);
        /* GPU, no reduction (the elementwise row form): nothing is re-read,
         * so no row needs to stay on chip: block b is chunk b % C of row
         * b / C, C = cdiv(D, T * E), small chunks for many blocks */
        int all_full = 1;
        for (int i = 0; i < grp->nops; i++) all_full &= R->kind[i] == RR_FULL;
        R->chunked = R->gpu && all_full;
        tile_expr *blk = tile_expr_block_idx(R->m, 0), *nch = NULL;
        if (R->chunked) {
            rr_set_form(R, 0, SCHED_EW_LOCALS_GPU);
            nch = tile_expr_bin(R->m, TILE_OP_CDIV, R->colext, tile_expr_int(R->m, R->width));
            R->off = rr_ibin(R, TILE_OP_MUL, tile_expr_bin(R->m, TILE_OP_MOD, blk, nch), tile_expr_int(R->m, R->width));
            blk = rr_ibin(R, TILE_OP_DIV, blk, nch);
        }
        /* row r of the grid: coordinate of row var v = (r / prod ext[v+1..]) % ext[v] + lo[v] */
        tile_expr *stride = tile_expr_int(R->m, 1);
        for (int v = rows - 1; v >= 0; v--) {
            tile_expr *lo = rr_sexpr(R, op0->box[v].lo), *ext = rr_ibin(R, TILE_OP_SUB, rr_sexpr(R, op0->box[v].hi), lo);
            tile_expr *q = rr_ibin(R, TILE_OP_DIV, blk, stride);
            if (v > 0) q = tile_expr_bin(R->m, TILE_OP_MOD, q, ext);
            R->rowc[v] = rr_ibin(R, TILE_OP_ADD, q, lo);
            stride = rr_ibin(R, TILE_OP_MUL, stride, ext);
        }
        R->k->grid[0] = R->chunked ? rr_ibin(R, TILE_OP_MUL, stride, nch) : stride;
    }
    if (flat || R->chunked) {
        for (int i = 0; i < grp->nops; i++) rr_lower_op(R, i);
    } else if (!R->gpu) {
        static const rr_class cpu[] = {{0, 8}};
        rr_plan_stage(R);
        rr_lower_paths(R, cpu, (int)TSL_COUNTOF(cpu), SCHED_RR_STREAM_LOCALS_CPU);
    } else {
        /* GPU: short rows a warp each (one row dim only: the tile of G rows
         * must not cross an outer dim), then whole rows per block, then the
         * stream. The grid is N / G blocks when the warp class runs, N
         * otherwise: cdiv(N, 1 + (G - 1) * (D <= warp width)). */
        static const rr_class gpu[] = {{SCHED_RR_SHORT_ROWS, SCHED_RR_SHORT_LOCALS}, {0, SCHED_RR_BLOCK_LOCALS}};
        /* several row dims: no warp class, so short rows (attention's 384)
         * get a block class of 4 a thread before the 32 a thread one, not
         * a 8192-wide block that is 95% masked lanes (each class is
         * compiled only when its sizes run: codegen/cuda.h size branches) */
        static const rr_class gpu_rows[] = {{0, 4}, {0, SCHED_RR_BLOCK_LOCALS}};
        int warp = rows == 1, G = R->threads / 32, K = G / SCHED_RR_SHORT_ROWS;
        if (warp) {
            tile_expr *le = tile_expr_bin(R->m, TILE_OP_LE, R->colext,
                                          tile_expr_int(R->m, (int64_t)32 * K * SCHED_RR_SHORT_LOCALS));
            tile_expr *per = tile_expr_bin(R->m, TILE_OP_ADD, tile_expr_int(R->m, 1),
                                           tile_expr_bin(R->m, TILE_OP_MUL, tile_expr_int(R->m, SCHED_RR_SHORT_ROWS - 1), le));
            R->k->grid[0] = tile_expr_bin(R->m, TILE_OP_CDIV, R->k->grid[0], per);
        }
        R->k->min_blocks = rr_streams(R) <= SCHED_RR_MIN_BLOCKS_STREAMS ? SCHED_RR_MIN_BLOCKS : 0;
        if (warp)
            rr_lower_paths(R, gpu, (int)TSL_COUNTOF(gpu), SCHED_RR_STREAM_LOCALS);
        else
            rr_lower_paths(R, gpu_rows, (int)TSL_COUNTOF(gpu_rows), SCHED_RR_STREAM_LOCALS);
    }
    return 1;
}

int sched_lower_rowred(sched_plan *p, const graph *g, const graph_group *grp)
{
    if (grp->rows < 1) return 0;
    return sched_rr_lower(p, g, grp, grp->rows, 0, "rowred");
}
