/* lowbit.c — low-bit tensors at the kernels' boundary (docs/lowbit.md).
 *
 * A low-bit tensor that is only read (a pure input: a quantized weight)
 * reaches the kernels as its packed bytes with its logical dtype
 * (sched_tensor_packed): the generators read packed and low-bit float
 * memory as codes, and a strategy may take its bytes (SCHED_ARG_TENSOR
 * with `bytes`: the quantized matmul, qmatmul.c) and dequantize in
 * registers. Every other low-bit tensor (outputs, in/outs, temporaries)
 * crosses as a *carrier* (base's dtype_carrier: int8 or uint8 for the
 * packed integers, float32 for the low-bit floats) holding its exact
 * logical values, which the API packs after a compiled run (the same
 * conversion as the interpreters, so every target agrees bit for bit).
 *
 * This pass retypes a plan's tile IR to match: every tensor of a low-bit
 * dtype takes the carrier dtype, except the parameters bound to packed
 * tensors and the results of `view`s across dtypes (bits reinterpreted in
 * registers: a strategy's dequantization, which casts them itself). A load or gather of
 * a packed parameter keeps the low-bit dtype and is followed by a cast to
 * the carrier; a `cast` *to* a low-bit dtype becomes a cast to that dtype
 * (the rounding: nearest even and saturation for floats, the width for
 * integers) followed by a cast to the carrier, so values keep their
 * low-bit meaning. */
#include "sched/sched.h"
#include "tile/tile.h"

int sched_tensor_packed(const lang_tensor *t)
{
    return !t->is_scalar && dtype_carrier(t->dtype) != t->dtype &&
           (t->flags & (LANG_TENSOR_INPUT | LANG_TENSOR_OUTPUT | LANG_TENSOR_TEMP)) == LANG_TENSOR_INPUT;
}

tsl_dtype sched_tensor_boundary_dtype(const lang_tensor *t)
{
    return sched_tensor_packed(t) ? t->dtype : dtype_carrier(t->dtype);
}

void sched_arg_view(const sched_plan *p, const sched_launch *l, const sched_arg *sa, const lang_bound *b,
                    const DLTensor *t, DLTensor *out, int64_t *shape)
{
    const lang_tensor *lt = p->def->tensors[sa->tensor];
    int r = t->ndim;
    for (int d = 0; d < r; d++) shape[d] = t->shape[d];
    if (sa->bytes && r >= 1) shape[r - 1] = shape[r - 1] * tsl_dtype_bits(lt->dtype) / 8;
    if (sa->rows && r >= 1) {
        int64_t hi = b->stmts[l->stmt].hi[sa->rows - 1];
        if (hi < shape[0]) shape[0] = hi < 0 ? 0 : hi;
    }
    *out = *t;
    if (sa->bytes) {
        out->dtype = tsl_dtype_to_dlpack(TSL_DTYPE_U8);
        out->strides = NULL;
    }
    out->shape = shape;
}

static int is_low(tile_dtype dt)
{
    tsl_dtype t;
    return dtype_from_desc(dt, &t) == 0 && dtype_carrier(t) != t;
}

static tile_dtype carrier_of(tile_dtype dt)
{
    tsl_dtype t;
    TSL_ASSERT(dtype_from_desc(dt, &t) == 0);
    return tile_dtype_from_tsl(dtype_carrier(t));
}

/* Split every cast to a low-bit dtype in b (and nested blocks). */
static void split_casts(tile_module *m, tile_kernel *k, tile_block *b)
{
    if (!b) return;
    for (int i = 0; i < b->n; i++) {
        tile_stmt *s = b->items[i];
        split_casts(m, k, s->body);
        split_casts(m, k, s->els);
        if (s->kind == TILE_S_PIPELINE) split_casts(m, k, s->pipe.body);
        if (s->kind != TILE_S_INSTR) continue;
        split_casts(m, k, s->instr.decomp);
        tile_instr *in = &s->instr;
        if (in->op != TILE_I_CAST || !in->result || !is_low(in->result->type.dt)) continue;
        /* y = cast x -> LOW   =>   y_lb = cast x -> LOW; y = cast y_lb -> CARRIER */
        tile_value *y = in->result;
        const tile_value *x = in->args[0].v;
        if (y->type.dt.kind != TILE_DT_FLOAT && x && x->type.dt.kind == TILE_DT_FLOAT) {
            /* float -> low-bit integer saturates (the language's rule):
             * clamp first, as max(min(x, hi), lo) in x's dtype */
            tsl_dtype yt;
            TSL_ASSERT(dtype_from_desc(y->type.dt, &yt) == 0);
            tile_value *src = in->args[0].v;
            for (int c = 0; c < 2; c++) {
                tile_value *cl = tile_kernel_new_value(m, k, TILE_V_TENSOR, TILE_O_DEF,
                                                       arena_printf(m->arena, "%s_c%d", y->name, c));
                cl->type = src->type;
                cl->type.dt = x->type.dt;
                tile_stmt *sc = arena_alloc(m->arena, sizeof *sc);
                sc->kind = TILE_S_INSTR;
                sc->pos = s->pos;
                sc->instr.op = c == 0 ? TILE_I_MIN : TILE_I_MAX;
                sc->instr.dim = -1;
                sc->instr.result = cl;
                cl->def = sc;
                tile_instr_arg(m, &sc->instr, tile_operand_tensor(src));
                tile_instr_arg(m, &sc->instr, tile_operand_scalar(tile_expr_float(
                                                  m, (double)(c == 0 ? dtype_int_max(yt) : dtype_int_min(yt)))));
                tile_stmt *none = NULL;
                ARENA_PUSH(m->arena, b->items, b->n, b->cap, none);
                for (int j = b->n - 1; j > i; j--) b->items[j] = b->items[j - 1];
                b->items[i] = sc;
                i++;
                src = cl;
            }
            in->args[0] = tile_operand_tensor(src);
        }
        tile_value *low = tile_kernel_new_value(m, k, TILE_V_TENSOR, TILE_O_DEF,
                                                arena_printf(m->arena, "%s_lb", y->name));
        low->type = y->type;
        low->pos = y->pos;
        low->def = s;
        in->result = low;
        tile_stmt *s2 = arena_alloc(m->arena, sizeof *s2);
        s2->kind = TILE_S_INSTR;
        s2->pos = s->pos;
        s2->instr.op = TILE_I_CAST;
        s2->instr.dim = -1;
        s2->instr.result = y;
        tile_instr_arg(m, &s2->instr, tile_operand_tensor(low));
        y->def = s2;
        y->type.dt = carrier_of(y->type.dt);
        tile_stmt *none = NULL;
        ARENA_PUSH(m->arena, b->items, b->n, b->cap, none);
        for (int j = b->n - 1; j > i + 1; j--) b->items[j] = b->items[j - 1];
        b->items[i + 1] = s2;
        i++;
    }
}

/* After every load or gather of a packed parameter (keep[id] set) in b:
 * the instruction's result becomes a new low-bit value and the old one
 * its cast (retyped to the carrier by the caller). */
static void split_loads(tile_module *m, tile_kernel *k, tile_block *b, const char *keep)
{
    if (!b) return;
    for (int i = 0; i < b->n; i++) {
        tile_stmt *s = b->items[i];
        split_loads(m, k, s->body, keep);
        split_loads(m, k, s->els, keep);
        if (s->kind == TILE_S_PIPELINE) split_loads(m, k, s->pipe.body, keep);
        if (s->kind != TILE_S_INSTR) continue;
        tile_instr *in = &s->instr;
        if ((in->op != TILE_I_LOAD_GLOBAL && in->op != TILE_I_GATHER) || !in->nargs || !in->args[0].v ||
            !keep[in->args[0].v->id])
            continue;
        tile_value *x = in->result;
        /* no result: `load_global W[...] -> x` into an existing tensor (not
         * made by the strategies); a load of bytes (a strategy's view of W's
         * storage as u8) is already in its carrier */
        if (!x || !is_low(x->type.dt)) continue;
        tile_value *pk = tile_kernel_new_value(m, k, TILE_V_TENSOR, TILE_O_DEF, arena_printf(m->arena, "%s_pk", x->name));
        pk->type = x->type;
        pk->pos = x->pos;
        pk->def = s;
        in->result = pk;
        tile_stmt *s2 = arena_alloc(m->arena, sizeof *s2);
        s2->kind = TILE_S_INSTR;
        s2->pos = s->pos;
        s2->instr.op = TILE_I_CAST;
        s2->instr.dim = -1;
        s2->instr.result = x;
        tile_instr_arg(m, &s2->instr, tile_operand_tensor(pk));
        x->def = s2;
        tile_stmt *none = NULL;
        ARENA_PUSH(m->arena, b->items, b->n, b->cap, none);
        for (int j = b->n - 1; j > i + 1; j--) b->items[j] = b->items[j - 1];
        b->items[i + 1] = s2;
        i++;
    }
}

void sched_lowbit_carry(sched_plan *p)
{
    tile_module *m = p->m;
    for (int ki = 0; ki < m->nkernels; ki++) {
        tile_kernel *k = m->kernels[ki];
        /* values that keep their dtype: parameters bound to packed tensors
         * (by the launches that run the kernel) and views */
        char *keep = arena_alloc(m->arena, (size_t)k->nvalues + 1);
        for (int li = 0; li < p->nlaunches; li++) {
            const sched_launch *l = &p->launches[li];
            if (l->k != k) continue;
            for (int j = 0; j < l->nargs && j < k->nparams; j++)
                if (l->args[j].kind == SCHED_ARG_TENSOR && sched_tensor_packed(p->def->tensors[l->args[j].tensor]))
                    keep[k->params[j]->id] = 1;
        }
        for (int v = 0; v < k->nvalues; v++) {
            const tile_value *x = k->values[v];
            const tile_stmt *d = x->def;
            /* a view across dtypes (packed bytes seen as low-bit values);
             * a same-dtype view (a relabelling) follows its source */
            if (d && d->kind == TILE_S_INSTR && d->instr.op == TILE_I_VIEW && d->instr.result == x &&
                d->instr.nargs && d->instr.args[0].v && !tile_dtype_eq(d->instr.args[0].v->type.dt, x->type.dt))
                keep[v] = 1;
        }
        int nvalues = k->nvalues; /* the splits add values: those keep their dtype */
        split_loads(m, k, k->body, keep);
        split_casts(m, k, k->body);
        for (int v = 0; v < nvalues; v++) {
            tile_value *x = k->values[v];
            if (x->kind == TILE_V_TENSOR && !keep[v] && is_low(x->type.dt)) x->type.dt = carrier_of(x->type.dt);
        }
    }
}
