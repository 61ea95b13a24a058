/* kbuild.c — names, folded int expressions, launch arguments and size
 * symbols for the kernels the strategies build (kbuild.h). */
#include <string.h>

#include "sched/kbuild.h"

const char *sched_kb_fresh(tile_module *m, tile_kernel *k, const char *base)
{
    return tile_kernel_fresh_name(m, k, base);
}

tile_expr *sched_kb_ibin(tile_module *m, tile_binop op, tile_expr *a, tile_expr *b)
{
    int64_t x, y;
    int ca = tile_expr_const(a, &x), cb = tile_expr_const(b, &y);
    int64_t r;
    if (ca && cb) { /* folded only when it fits: else evaluated (and refused) at run time */
        if (op == TILE_OP_ADD && !__builtin_add_overflow(x, y, &r)) return tile_expr_int(m, r);
        if (op == TILE_OP_SUB && !__builtin_sub_overflow(x, y, &r)) return tile_expr_int(m, r);
        if (op == TILE_OP_MUL && !__builtin_mul_overflow(x, y, &r)) return tile_expr_int(m, r);
    }
    if (op == TILE_OP_ADD && ca && x == 0) return b;
    if ((op == TILE_OP_ADD || op == TILE_OP_SUB) && cb && y == 0) return a;
    if (op == TILE_OP_MUL && ca && x == 1) return b;
    if ((op == TILE_OP_MUL || op == TILE_OP_DIV) && cb && y == 1) return a;
    if (op == TILE_OP_MUL && ((ca && x == 0) || (cb && y == 0))) return tile_expr_int(m, 0);
    return tile_expr_bin(m, op, a, b);
}

void sched_kb_add_arg(tile_module *m, sched_launch *l, sched_arg arg)
{
    ARENA_PUSH(m->arena, l->args, l->nargs, l->capargs, arg);
}

tile_expr *sched_kb_size(tile_module *m, tile_kernel *k, sched_launch *l, const lang_def *def,
                         tile_expr **size, int slot)
{
    if (!size[slot]) {
        tile_value *v = tile_kernel_param_scalar(m, k, sched_kb_fresh(m, k, def->sizes[slot]));
        sched_kb_add_arg(m, l, (sched_arg){.name = v->name, .kind = SCHED_ARG_SIZE, .sym = slot});
        size[slot] = tile_expr_value(m, v);
    }
    return size[slot];
}

tile_expr *sched_kb_sexpr(tile_module *m, tile_kernel *k, sched_launch *l, const lang_def *def,
                          tile_expr **size, const lang_sexpr *e)
{
    static const tile_binop ops[] = {
        [LANG_SX_ADD] = TILE_OP_ADD, [LANG_SX_SUB] = TILE_OP_SUB, [LANG_SX_MUL] = TILE_OP_MUL,
        [LANG_SX_FLOORDIV] = TILE_OP_DIV, [LANG_SX_MIN] = TILE_OP_MIN, [LANG_SX_MAX] = TILE_OP_MAX,
    };
    switch (e->kind) {
    case LANG_SX_CONST: return tile_expr_int(m, e->value);
    case LANG_SX_SYM: return sched_kb_size(m, k, l, def, size, e->sym);
    case LANG_SX_ADD:
    case LANG_SX_SUB:
    case LANG_SX_MUL:
    case LANG_SX_FLOORDIV:
    case LANG_SX_MIN:
    case LANG_SX_MAX:
        return sched_kb_ibin(m, ops[e->kind], sched_kb_sexpr(m, k, l, def, size, e->a),
                             sched_kb_sexpr(m, k, l, def, size, e->b));
    }
    TSL_ASSERT(0 && "unknown size expression");
    return NULL;
}

double sched_kb_literal(tsl_dtype t, double v)
{
    return dtype_info_of(t)->bits < 32 ? dtype_round(t, v) : v;
}

int sched_kb_approx_ok(tsl_dtype lhs, tsl_dtype math)
{
    const dtype_info *di = dtype_info_of(lhs);
    return math == TSL_DTYPE_F32 && di->is_float && di->bits <= 16;
}

tile_value *sched_kb_tensor(tile_module *m, tile_kernel *k, sched_launch *l, const lang_def *def,
                            tile_expr **size, int ti)
{
    const lang_tensor *t = def->tensors[ti];
    tile_expr **dims = arena_alloc(m->arena, sizeof *dims * (size_t)(t->rank ? t->rank : 1));
    for (int d = 0; d < t->rank; d++) {
        const lang_sexpr *e = t->shape[d];
        if (e->kind == LANG_SX_CONST) {
            dims[d] = tile_expr_int(m, e->value);
        } else if (e->kind == LANG_SX_SYM && size[e->sym]) {
            dims[d] = size[e->sym];
        } else {
            int sym = e->kind == LANG_SX_SYM ? e->sym : -1;
            const char *nb = sym >= 0 ? def->sizes[sym] : arena_printf(m->arena, "%s_d%d", t->name, d);
            tile_value *v = tile_kernel_symbol(m, k, sched_kb_fresh(m, k, nb));
            dims[d] = tile_expr_value(m, v);
            if (sym >= 0) size[sym] = dims[d];
        }
    }
    tile_value *v = tile_kernel_param_tensor(m, k, sched_kb_fresh(m, k, t->name), tile_dtype_from_tsl(t->dtype),
                                             t->rank, dims);
    sched_kb_add_arg(m, l, (sched_arg){.name = v->name, .kind = SCHED_ARG_TENSOR, .tensor = ti});
    return v;
}
