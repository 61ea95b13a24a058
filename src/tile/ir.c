/* ir.c — the tile IR's tables and constructors: element types, the opcode
 * table, expressions (construction, evaluation, constant folding), values,
 * types, layouts, and the builder that appends statements to blocks.
 * Everything is allocated in the module's arena. */
#include <math.h>
#include <string.h>

#include "tile/tile.h"

/* ---- element types ------------------------------------------------------
 * Thin wrappers over the base dtype table (one row per dtype there). */

tile_dtype tile_dtype_from_tsl(tsl_dtype t)
{
    return dtype_info_of(t)->desc;
}

int tile_dtype_eq(tile_dtype a, tile_dtype b)
{
    return dtype_desc_eq(a, b);
}

int tile_dtype_to_tsl(tile_dtype dt, tsl_dtype *out)
{
    return dtype_from_desc(dt, out);
}

const char *tile_dtype_name(tile_dtype dt, char *buf)
{
    tsl_dtype t;
    if (dtype_from_desc(dt, &t) == 0) snprintf(buf, 16, "%s", dtype_info_of(t)->tname);
    else if (dt.kind == TILE_DT_INT) snprintf(buf, 16, "i%d", dt.bits);
    else if (dt.kind == TILE_DT_UINT) snprintf(buf, 16, "u%d", dt.bits);
    else if (dt.kind == TILE_DT_FLOAT) snprintf(buf, 16, "f%de%dm%d", dt.bits, dt.exp, dt.man);
    else snprintf(buf, 16, "bool");
    return buf;
}

int tile_dtype_parse(const char *s, size_t n, tile_dtype *out)
{
    tsl_dtype t;
    if (dtype_parse_short(s, n, &t)) return -1;
    *out = dtype_info_of(t)->desc;
    return 0;
}

const char *tile_space_name(tile_space s)
{
    switch (s) {
    case TILE_GLOBAL: return "global";
    case TILE_SHARED: return "shared";
    case TILE_REGISTER: return "register";
    }
    return "?";
}

/* ---- opcodes ------------------------------------------------------------- */

static const tile_op_info op_table[] = {
#define X(n, t, r, lo, hi) {t, TILE_RES_##r, lo, hi},
    TILE_OPS(X)
#undef X
};
_Static_assert(sizeof(op_table) / sizeof(op_table[0]) == TILE_I_COUNT, "one row per opcode");

const tile_op_info *tile_op_info_of(tile_op op)
{
    TSL_ASSERT((int)op >= 0 && op < TILE_I_COUNT);
    return &op_table[op];
}

int tile_op_has_approx(tile_op op)
{
    return op == TILE_I_EXP || op == TILE_I_EXP2 || op == TILE_I_SIGMOID || op == TILE_I_TANH;
}

int tile_op_lookup(const char *s, size_t n, tile_op *out)
{
    for (int i = 0; i < TILE_I_COUNT; i++)
        if (strlen(op_table[i].name) == n && memcmp(op_table[i].name, s, n) == 0) {
            *out = (tile_op)i;
            return 0;
        }
    return -1;
}

int tile_op_is_unary(tile_op op) { return op >= TILE_I_NEG && op <= TILE_I_RELU; }
int tile_op_is_binary(tile_op op) { return op >= TILE_I_ADD && op <= TILE_I_MIN; }
int tile_op_is_reduce(tile_op op) { return op >= TILE_I_REDUCE_SUM && op <= TILE_I_REDUCE_MIN; }
int tile_op_is_shuffle(tile_op op) { return op >= TILE_I_SHUFFLE_XOR && op <= TILE_I_SHUFFLE_IDX; }
int tile_op_is_elementwise_ext(tile_op op) { return op >= TILE_I_ERF && op <= TILE_I_FMA; }
int tile_op_is_compare(tile_op op) { return op >= TILE_I_LT && op <= TILE_I_NE; }
int tile_op_is_hopper(tile_op op) { return op >= TILE_I_MBAR_INIT && op <= TILE_I_CLUSTER_SYNC; }

int tile_block_uses_hopper(const tile_block *b)
{
    if (!b) return 0;
    for (int i = 0; i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_WARPGROUPS) return 1;
        if (s->kind == TILE_S_INSTR && (tile_op_is_hopper(s->instr.op) || tile_block_uses_hopper(s->instr.decomp)))
            return 1;
        if (tile_block_uses_hopper(s->body) || tile_block_uses_hopper(s->els) ||
            (s->kind == TILE_S_PIPELINE && tile_block_uses_hopper(s->pipe.body)))
            return 1;
    }
    return 0;
}

/* ---- expressions ---------------------------------------------------------- */

static tile_expr *expr_new(tile_module *m, tile_expr_kind kind)
{
    tile_expr *e = arena_alloc(m->arena, sizeof *e);
    e->kind = kind;
    return e;
}

tile_expr *tile_expr_int(tile_module *m, int64_t i)
{
    tile_expr *e = expr_new(m, TILE_E_INT);
    e->i = i;
    return e;
}

tile_expr *tile_expr_float(tile_module *m, double f)
{
    tile_expr *e = expr_new(m, TILE_E_FLOAT);
    e->f = f;
    /* %.17g reads back to the same double; keep a '.' so it lexes as float */
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", f);
    if (!strpbrk(buf, ".eEni")) strcat(buf, ".0");
    e->ftext = arena_strdup(m->arena, buf);
    return e;
}

tile_expr *tile_expr_value(tile_module *m, tile_value *v)
{
    tile_expr *e = expr_new(m, TILE_E_VALUE);
    e->v = v;
    return e;
}

tile_expr *tile_expr_block_idx(tile_module *m, int dim)
{
    TSL_ASSERT(dim >= 0 && dim < 3);
    tile_expr *e = expr_new(m, TILE_E_BLOCK_IDX);
    e->dim = dim;
    return e;
}

tile_expr *tile_expr_bin(tile_module *m, tile_binop op, tile_expr *a, tile_expr *b)
{
    tile_expr *e = expr_new(m, TILE_E_BIN);
    e->op = op;
    e->a = a;
    e->b = b;
    e->pos = a ? a->pos : 0;
    return e;
}

tile_expr *tile_expr_un(tile_module *m, tile_expr_kind kind, tile_expr *a)
{
    TSL_ASSERT(kind == TILE_E_NEG || kind == TILE_E_NOT);
    tile_expr *e = expr_new(m, kind);
    e->a = a;
    return e;
}

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

int64_t tile_expr_eval(const tile_expr *e, tile_lookup_fn lookup, void *ctx,
                       const int64_t block_idx[3], int64_t thread_idx, int *ok)
{
    if (!e) {
        *ok = 0;
        return 0;
    }
    switch (e->kind) {
    case TILE_E_INT: return e->i;
    case TILE_E_FLOAT:
        if (!(e->f >= -9223372036854775808.0 && e->f < 9223372036854775808.0)) { /* NaN too */
            *ok = 0;
            return 0;
        }
        return (int64_t)e->f;
    case TILE_E_VALUE:
        if (!lookup) {
            *ok = 0;
            return 0;
        }
        return lookup(ctx, e->v, ok);
    case TILE_E_BLOCK_IDX:
        if (!block_idx) {
            *ok = 0;
            return 0;
        }
        return block_idx[e->dim];
    case TILE_E_THREAD_IDX:
        if (thread_idx < 0) *ok = 0;
        return thread_idx;
    case TILE_E_NEG: {
        int64_t a = tile_expr_eval(e->a, lookup, ctx, block_idx, thread_idx, ok), r;
        if (__builtin_sub_overflow((int64_t)0, a, &r)) *ok = 0;
        return r;
    }
    case TILE_E_NOT: return !tile_expr_eval(e->a, lookup, ctx, block_idx, thread_idx, ok);
    case TILE_E_BIN: break;
    }
    int64_t a = tile_expr_eval(e->a, lookup, ctx, block_idx, thread_idx, ok);
    int64_t b = tile_expr_eval(e->b, lookup, ctx, block_idx, thread_idx, ok);
    switch (e->op) {
    case TILE_OP_OR: return a || b;
    case TILE_OP_AND: return a && b;
    case TILE_OP_EQ: return a == b;
    case TILE_OP_NE: return a != b;
    case TILE_OP_LT: return a < b;
    case TILE_OP_LE: return a <= b;
    case TILE_OP_GT: return a > b;
    case TILE_OP_GE: return a >= b;
    /* user values: 64-bit overflow is "cannot evaluate", never a wrap */
    case TILE_OP_ADD:
    case TILE_OP_SUB:
    case TILE_OP_MUL: {
        int64_t r;
        int over = e->op == TILE_OP_ADD   ? __builtin_add_overflow(a, b, &r)
                   : e->op == TILE_OP_SUB ? __builtin_sub_overflow(a, b, &r)
                                          : __builtin_mul_overflow(a, b, &r);
        if (over) *ok = 0;
        return over ? 0 : r;
    }
    case TILE_OP_MIN: return a < b ? a : b;
    case TILE_OP_MAX: return a > b ? a : b;
    case TILE_OP_DIV:
    case TILE_OP_MOD:
    case TILE_OP_CDIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) {
            *ok = 0;
            return 0;
        }
        if (e->op == TILE_OP_DIV) return floordiv(a, b);
        if (e->op == TILE_OP_MOD) { /* floor modulo: the sign of b */
            int64_t r = a % b;
            return r != 0 && (r < 0) != (b < 0) ? r + b : r;
        }
        if (a == INT64_MIN) { /* cdiv: -floor(-a / b) */
            *ok = 0;
            return 0;
        }
        return -floordiv(-a, b);
    case TILE_OP_COUNT: break;
    }
    *ok = 0;
    return 0;
}

int tile_expr_const(const tile_expr *e, int64_t *out)
{
    int ok = 1;
    int64_t v = tile_expr_eval(e, NULL, NULL, NULL, -1, &ok);
    if (!ok || (e && e->kind == TILE_E_FLOAT)) return 0;
    *out = v;
    return 1;
}

/* ---- layouts and types ------------------------------------------------------ */

tile_layout *tile_layout_make(tile_module *m, const char *text, char **err)
{
    tile_layout *l = arena_alloc(m->arena, sizeof *l);
    layout_err e = {{0}, 0};
    if (layout_parse(text, strlen(text), &l->v, &e) != TSL_OK) {
        if (err) *err = arena_printf(m->arena, "%s", e.msg[0] ? e.msg : "not a layout");
        return NULL;
    }
    strbuf sb = {0};
    layout_value_print(&sb, &l->v);
    l->text = arena_strdup(m->arena, sb_str(&sb));
    sb_free(&sb);
    return l;
}

tile_type tile_type_make(tile_module *m, tile_space sp, tile_dtype dt, int rank,
                         const int64_t *dims, tile_layout *lay)
{
    tile_type t = {0};
    t.dt = dt;
    t.space = sp;
    t.rank = rank;
    t.dims = arena_alloc(m->arena, sizeof(tile_expr *) * (size_t)(rank ? rank : 1));
    for (int i = 0; i < rank; i++) t.dims[i] = tile_expr_int(m, dims[i]);
    t.layout = lay;
    return t;
}

int64_t tile_type_numel(const tile_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        int64_t d;
        if (!tile_expr_const(t->dims[i], &d)) return -1;
        n *= d;
    }
    return n;
}

/* ---- modules, kernels, values -------------------------------------------------- */

tile_module *tile_module_new(tsl_arena *arena)
{
    tile_module *m = arena_alloc(arena, sizeof *m);
    m->arena = arena;
    return m;
}

tile_block *tile_block_new(tile_module *m)
{
    return arena_alloc(m->arena, sizeof(tile_block));
}

tile_kernel *tile_kernel_new(tile_module *m, const char *name, int threads)
{
    tile_kernel *k = arena_alloc(m->arena, sizeof *k);
    k->name = arena_strdup(m->arena, name);
    k->threads = threads;
    strmap_init(&k->names, m->arena);
    strmap_init(&k->sym_index, m->arena);
    strmap_init(&k->fresh_next, m->arena);
    k->ngrid = 1;
    k->grid[0] = tile_expr_int(m, 1);
    k->body = tile_block_new(m);
    ARENA_PUSH(m->arena, m->kernels, m->nkernels, m->capkernels, k);
    return k;
}

tile_kernel *tile_module_find(const tile_module *m, const char *name)
{
    for (int i = 0; i < m->nkernels; i++)
        if (strcmp(m->kernels[i]->name, name) == 0) return m->kernels[i];
    return NULL;
}

tile_value *tile_kernel_new_value(tile_module *m, tile_kernel *k, tile_value_kind kind,
                                  tile_value_origin origin, const char *name)
{
    tile_value *v = arena_alloc(m->arena, sizeof *v);
    v->kind = kind;
    v->origin = origin;
    v->name = arena_strdup(m->arena, name ? name : "");
    v->id = k->nvalues;
    ARENA_PUSH(m->arena, k->values, k->nvalues, k->capvalues, v);
    size_t n = strlen(v->name);
    if (n && !strmap_find(&k->names, v->name, n)) strmap_put(&k->names, v->name, n, v->id);
    return v;
}

tile_value *tile_kernel_symbol(tile_module *m, tile_kernel *k, const char *name)
{
    const int64_t *i = strmap_find(&k->sym_index, name, strlen(name));
    if (i) return k->syms[*i];
    tile_value *v = tile_kernel_new_value(m, k, TILE_V_SCALAR, TILE_O_SYMBOL, name);
    ARENA_PUSH(m->arena, k->syms, k->nsyms, k->capsyms, v);
    strmap_put(&k->sym_index, v->name, strlen(v->name), k->nsyms - 1);
    return v;
}

int tile_kernel_name_used(const tile_kernel *k, const char *s)
{
    return strmap_find(&k->names, s, strlen(s)) != NULL;
}

const char *tile_kernel_fresh_name(tile_module *m, tile_kernel *k, const char *base)
{
    if (!tile_name_reserved(base) && !tile_kernel_name_used(k, base)) return arena_strdup(m->arena, base);
    size_t bl = strlen(base);
    int64_t *next = strmap_find(&k->fresh_next, base, bl);
    int64_t n = next ? *next : 1;
    char *s;
    for (;; n++) {
        s = arena_printf(m->arena, "%s_%lld", base, (long long)n);
        if (!tile_name_reserved(s) && !tile_kernel_name_used(k, s)) break;
    }
    if (!next) strmap_put(&k->fresh_next, arena_strndup(m->arena, base, bl), bl, n + 1);
    else *next = n + 1;
    return s;
}

tile_value *tile_kernel_param_tensor(tile_module *m, tile_kernel *k, const char *name,
                                     tile_dtype dt, int rank, tile_expr **dims)
{
    tile_value *v = tile_kernel_new_value(m, k, TILE_V_TENSOR, TILE_O_PARAM, name);
    v->type.dt = dt;
    v->type.space = TILE_GLOBAL;
    v->type.rank = rank;
    v->type.dims = arena_alloc(m->arena, sizeof(tile_expr *) * (size_t)(rank ? rank : 1));
    for (int i = 0; i < rank; i++) v->type.dims[i] = dims[i];
    ARENA_PUSH(m->arena, k->params, k->nparams, k->capparams, v);
    return v;
}

tile_value *tile_kernel_param_scalar(tile_module *m, tile_kernel *k, const char *name)
{
    tile_value *v = tile_kernel_new_value(m, k, TILE_V_SCALAR, TILE_O_PARAM, name);
    ARENA_PUSH(m->arena, k->params, k->nparams, k->capparams, v);
    return v;
}

tile_value *tile_kernel_param_typed(tile_module *m, tile_kernel *k, const char *name, tile_dtype dt)
{
    tile_value *v = tile_kernel_param_scalar(m, k, name);
    v->type.dt = dt;
    return v;
}

int tile_value_is_typed_scalar(const tile_value *v)
{
    return v && v->kind == TILE_V_SCALAR && v->origin == TILE_O_PARAM && v->type.dt.bits != 0;
}

/* ---- builder ---------------------------------------------------------------------- */

void tile_build_begin(tile_builder *b, tile_module *m, tile_kernel *k)
{
    memset(b, 0, sizeof *b);
    b->m = m;
    b->k = k;
    b->cur = k->body;
}

void tile_build_push(tile_builder *b, tile_block *blk)
{
    ARENA_PUSH(b->m->arena, b->stack, b->depth, b->cap, b->cur);
    b->cur = blk;
}

void tile_build_pop(tile_builder *b)
{
    TSL_ASSERT(b->depth > 0);
    b->cur = b->stack[--b->depth];
}

tile_stmt *tile_build_stmt(tile_builder *b, tile_stmt_kind kind)
{
    tile_stmt *s = arena_alloc(b->m->arena, sizeof *s);
    s->kind = kind;
    s->instr.dim = -1;
    ARENA_PUSH(b->m->arena, b->cur->items, b->cur->n, b->cur->cap, s);
    return s;
}

tile_stmt *tile_build_instr(tile_builder *b, tile_op op, const char *result)
{
    tile_stmt *s = tile_build_stmt(b, TILE_S_INSTR);
    s->instr.op = op;
    if (result) {
        s->instr.result = tile_kernel_new_value(b->m, b->k, TILE_V_TENSOR, TILE_O_DEF, result);
        s->instr.result->def = s;
    }
    return s;
}

tile_operand tile_operand_tensor(tile_value *v)
{
    tile_operand o = {0};
    o.v = v;
    return o;
}

tile_operand tile_operand_scalar(tile_expr *e)
{
    tile_operand o = {0};
    o.scalar = e;
    return o;
}

void tile_operand_index(tile_module *m, tile_operand *o, int n, tile_expr **idx)
{
    tile_step st = {0};
    st.kind = TILE_STEP_INDEX;
    st.n = n;
    st.idx = arena_alloc(m->arena, sizeof(tile_expr *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) st.idx[i] = idx[i];
    ARENA_PUSH(m->arena, o->steps, o->nsteps, o->capsteps, st);
}

void tile_instr_arg(tile_module *m, tile_instr *in, tile_operand o)
{
    ARENA_PUSH(m->arena, in->args, in->nargs, in->capargs, o);
}

void tile_instr_result_type(tile_stmt *s, tile_type t)
{
    TSL_ASSERT(s->kind == TILE_S_INSTR && s->instr.result);
    s->instr.result->type = t;
}

void tile_instr_dst(tile_instr *in, tile_operand dst)
{
    in->has_dst = 1;
    in->dst = dst;
}

tile_stmt *tile_build_for(tile_builder *b, const char *var, tile_expr *lo, tile_expr *hi,
                          tile_expr *step)
{
    tile_stmt *s = tile_build_stmt(b, TILE_S_FOR);
    s->v = tile_kernel_new_value(b->m, b->k, TILE_V_SCALAR, TILE_O_LOOP, var);
    s->v->def = s;
    s->lo = lo;
    s->hi = hi;
    s->step = step;
    s->body = tile_block_new(b->m);
    return s;
}

tile_stmt *tile_build_let(tile_builder *b, const char *name, tile_expr *e)
{
    tile_stmt *s = tile_build_stmt(b, TILE_S_LET);
    s->v = tile_kernel_new_value(b->m, b->k, TILE_V_SCALAR, TILE_O_LET, name);
    s->v->def = s;
    s->e = e;
    return s;
}

void tile_instr_infer(tile_stmt *s)
{
    tile_instr *in = &s->instr;
    tile_res_rule r = in->result ? tile_op_info_of(in->op)->res : TILE_RES_NONE;
    if (r != TILE_RES_LIKE && r != TILE_RES_BOOL) return;
    int from = in->op == TILE_I_MMA ? 2 : in->op == TILE_I_SELECT ? 1 : 0;
    for (int i = from; i < in->nargs; i++)
        if (in->args[i].v && in->args[i].v->kind == TILE_V_TENSOR) {
            in->result->type = in->args[i].v->type;
            if (r == TILE_RES_BOOL) in->result->type.dt = tile_dtype_from_tsl(TSL_DTYPE_BOOL);
            return;
        }
}
