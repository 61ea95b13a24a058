/* elementwise.c — the elementwise strategy and the dispatch of the fast
 * strategies (strategy.h).
 *
 * A group with no reduction, every op over the same box, becomes one
 * kernel through the row engine (rowred.c) in one of two forms:
 *   flat  every read and write is the op's own index list over the whole
 *         tensor: the box is one long row, each block one contiguous chunk
 *         of SCHED_EW_WIDTH elements (spatial(T).local(E): wide loads and
 *         stores), internal temporaries recomputed in registers;
 *   row   otherwise, when every read is the identity, a row scalar
 *         (s(n) over out(n,d)) or a column vector (bias(d) over out(n,d)):
 *         rows = niter - 1, one block per row streaming its chunks, so a
 *         broadcast operand costs no index arithmetic at all.
 * On the CPU a transpose `B(i,j) = A(j,i)` (one op, rank 2, the read
 * covering A) is a blocked copy instead, a block per T x T tile:
 *   ld = load_global A[block_idx.x * T, block_idx.y * T]
 *          -> register DT[T, T] layout spatial(T,1).local(1,T)   thread t: row t
 *   tv = view ld -> register DT[T, T] layout spatial(1,T).local(T,1)  thread t: column t
 *   store_global tv -> B[block_idx.y * T, block_idx.x * T]
 * The view relabels the registers (slot (t, l) holds A[x0 + t, y0 + l] and
 * now stands for coordinate (l, t)), so the store writes B[y0 + l, x0 + t]:
 * both global sides move whole rows of T elements, the transposition
 * happens inside the tile (the C generator's 2-D transfers).
 * Anything else (shifted or gathered reads, transposes on the GPU) stays
 * generic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kbuild.h"
#include "sched/strategy.h"
#include "sched/strategy_int.h"

/* The group is one op `B(i,j) = A(j,i)`: the box [0, I) x [0, J) is all of
 * B, A is (J, I) of B's dtype, another tensor. */
static int tr_recognise(const graph *g, const graph_group *grp)
{
    if (grp->nops != 1) return 0;
    const graph_op *op = &g->ops[grp->first];
    const lang_def *def = g->def;
    if (op->niter != 2 || op->nvars != 2 || op->assign != LANG_ASSIGN || op->noperands != 2) return 0;
    const graph_expr *e = op->body;
    if (!e || e->kind != LANG_E_ACCESS || e->operand != 1) return 0;
    const graph_operand *w = &op->operands[0], *r = &op->operands[1];
    const lang_tensor *B = def->tensors[w->tensor], *A = def->tensors[r->tensor];
    if (!w->identity || B->rank != 2 || A->rank != 2 || A == B || A->is_scalar || A->dtype != B->dtype) return 0;
    if (r->idx[0].var != 1 || r->idx[1].var != 0) return 0;
    for (int v = 0; v < 2; v++) {
        const lang_range *b = &op->box[v];
        if (b->lo->kind != LANG_SX_CONST || b->lo->value != 0 || !graph_sexpr_equal(b->hi, B->shape[v]) ||
            !graph_sexpr_equal(b->hi, A->shape[1 - v]))
            return 0;
    }
    return 1;
}

static int sched_lower_transpose(sched_plan *p, const graph *g, const graph_group *grp)
{
    if (p->target != TSL_TARGET_CPU || !tr_recognise(g, grp)) return 0;
    const graph_op *op = &g->ops[grp->first];
    const lang_def *def = g->def;
    tile_module *m = p->m;
    const int T = SCHED_TR_TILE_CPU;
    char lay[64];
    tile_kernel *k = tile_kernel_new(m, arena_printf(m->arena, "%s_g%d_transpose", def->name, grp->index), T);
    sched_launch ln = {.k = k, .stmt = op->index, .nstmts = 1};
    ARENA_PUSH(m->arena, p->launches, p->nlaunches, p->caplaunches, ln);
    sched_launch *l = &p->launches[p->nlaunches - 1];
    tile_expr **size = arena_alloc(m->arena, sizeof *size * (size_t)(def->nsizes + 1));
    tile_value *A = sched_kb_tensor(m, k, l, def, size, op->operands[1].tensor);
    tile_value *B = sched_kb_tensor(m, k, l, def, size, op->operands[0].tensor);
    tile_expr *t = tile_expr_int(m, T);
    /* block (x, y) is the tile at A[x * T, y * T], B[y * T, x * T]: x
     * fastest, so consecutive blocks go down A's rows and along B's */
    tile_expr *ext[2];
    for (int v = 0; v < 2; v++) ext[v] = sched_kb_sexpr(m, k, l, def, size, op->box[v].hi);
    k->grid[0] = tile_expr_bin(m, TILE_OP_CDIV, ext[1], t);
    k->grid[1] = tile_expr_bin(m, TILE_OP_CDIV, ext[0], t);
    k->ngrid = 2;
    tile_expr *x0 = sched_kb_ibin(m, TILE_OP_MUL, tile_expr_block_idx(m, 0), t);
    tile_expr *y0 = sched_kb_ibin(m, TILE_OP_MUL, tile_expr_block_idx(m, 1), t);
    tile_dtype dt = tile_dtype_from_tsl(def->tensors[op->operands[1].tensor]->dtype);
    int64_t dims[2] = {T, T};
    tile_builder b;
    tile_build_begin(&b, m, k);

    tile_operand src = tile_operand_tensor(A);
    tile_expr *ai[2] = {x0, y0};
    tile_operand_index(m, &src, 2, ai);
    tile_stmt *s = tile_build_instr(&b, TILE_I_LOAD_GLOBAL, sched_kb_fresh(m, k, "ld"));
    tile_instr_arg(m, &s->instr, src);
    snprintf(lay, sizeof lay, "spatial(%d,1).local(1,%d)", T, T);
    tile_instr_result_type(s, tile_type_make(m, TILE_REGISTER, dt, 2, dims, tile_layout_make(m, lay, NULL)));

    tile_stmt *v = tile_build_instr(&b, TILE_I_VIEW, sched_kb_fresh(m, k, "tv"));
    tile_instr_arg(m, &v->instr, tile_operand_tensor(s->instr.result));
    snprintf(lay, sizeof lay, "spatial(1,%d).local(%d,1)", T, T);
    tile_instr_result_type(v, tile_type_make(m, TILE_REGISTER, dt, 2, dims, tile_layout_make(m, lay, NULL)));

    tile_operand dst = tile_operand_tensor(B);
    tile_expr *bi[2] = {y0, x0};
    tile_operand_index(m, &dst, 2, bi);
    tile_stmt *st = tile_build_instr(&b, TILE_I_STORE_GLOBAL, NULL);
    tile_instr_arg(m, &st->instr, tile_operand_tensor(v->instr.result));
    tile_instr_dst(&st->instr, dst);
    return 1;
}

int sched_lower_elementwise(sched_plan *p, const graph *g, const graph_group *grp)
{
    if (sched_lower_transpose(p, g, grp)) return 1;
    if (sched_rr_lower(p, g, grp, 0, 1, "elementwise")) return 1;
    int niter = g->ops[grp->first].niter;
    if (niter >= 2 && sched_rr_lower(p, g, grp, niter - 1, 0, "elementwise")) return 1;
    return 0;
}
