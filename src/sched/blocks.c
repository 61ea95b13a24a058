/* blocks.c — the strategies' building blocks (blocks.h): the kernel shell
 * (parameters, header, verification, the launch), one call per tile
 * instruction or statement, a pointwise statement body on a register tile,
 * and a row reduction. The main loops and the epilogue store are in
 * blocks_mma.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sched/blocks.h"
#include "sched/kbuild.h"

/* ---- the kernel shell ------------------------------------------------------------------------ */

static void blk_fail(sched_blk *kb, const char *fmt, ...) TSL_PRINTF(2, 3);
static void blk_fail(sched_blk *kb, const char *fmt, ...)
{
    if (kb->why[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(kb->why, sizeof kb->why, fmt, ap);
    va_end(ap);
}

const char *sched_blk_pname(sched_blk *kb, const char *name)
{
    if (tile_name_reserved(name) || !strncmp(name, "c_", 2)) return arena_printf(kb->m->arena, "%s_p", name);
    return name;
}

/* Size slot sym is some tensor parameter's bare extent. */
static int blk_size_bound(const sched_blk *kb, int sym)
{
    for (int i = 0; i < kb->ntens; i++) {
        const lang_tensor *t = kb->def->tensors[kb->tens[i]];
        for (int d = 0; d < t->rank; d++)
            if (t->shape[d]->kind == LANG_SX_SYM && t->shape[d]->sym == sym) return 1;
    }
    return 0;
}

static int blk_find(const int *list, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (list[i] == x) return i;
    return -1;
}

/* A new tensor parameter of k for def tensor ti (its extents' symbols
 * made first, as the parser does). */
static tile_value *blk_new_tensor(sched_blk *kb, int ti)
{
    const lang_tensor *t = kb->def->tensors[ti];
    tile_expr *dims[8];
    TSL_ASSERT(t->rank <= 8);
    for (int d = 0; d < t->rank; d++) {
        const lang_sexpr *e = t->shape[d];
        if (e->kind == LANG_SX_CONST) dims[d] = tile_expr_int(kb->m, e->value);
        else dims[d] = tile_expr_value(kb->m, tile_kernel_symbol(kb->m, kb->k, sched_blk_pname(kb, kb->def->sizes[e->sym])));
    }
    return tile_kernel_param_tensor(kb->m, kb->k, sched_blk_pname(kb, t->name), tile_dtype_from_tsl(t->dtype), t->rank,
                                    dims);
}

/* The header of pass 1: every parameter in order. */
static void blk_header(sched_blk *kb)
{
    for (int i = 0; i < kb->ntens; i++) kb->tv[i] = blk_new_tensor(kb, kb->tens[i]);
    for (int i = 0; i < kb->nscal; i++) {
        const lang_tensor *t = kb->def->tensors[kb->scal[i]];
        kb->sv[i] = tile_kernel_param_typed(kb->m, kb->k, sched_blk_pname(kb, t->name), tile_dtype_from_tsl(t->dtype));
    }
    for (int i = 0; i < kb->nsize; i++) {
        const char *n = sched_blk_pname(kb, kb->def->sizes[kb->size[i]]);
        kb->zv[i] = blk_size_bound(kb, kb->size[i]) ? tile_kernel_symbol(kb->m, kb->k, n)
                                                     : tile_kernel_param_scalar(kb->m, kb->k, n);
    }
    if (kb->scratch) {
        tile_expr *n = tile_expr_int(kb->m, kb->scratch_count);
        kb->scv = tile_kernel_param_tensor(kb->m, kb->k, "c_ws", tile_dtype_from_tsl(kb->scratch_dt), 1, &n);
    }
    if (kb->sms) kb->smsv = tile_kernel_param_scalar(kb->m, kb->k, "c_nsm");
}

tile_value *sched_blk_scratch(sched_blk *kb, int si, tsl_dtype dt, int64_t count)
{
    if (!kb->scratch) {
        TSL_ASSERT(kb->pass == 0);
        kb->scratch = 1 + si;
        kb->scratch_dt = dt;
        kb->scratch_count = count;
        tile_expr *n = tile_expr_int(kb->m, count);
        kb->scv = tile_kernel_param_tensor(kb->m, kb->k, "c_ws", tile_dtype_from_tsl(dt), 1, &n);
    }
    return kb->scv;
}

tile_value *sched_blk_tensor(sched_blk *kb, int ti)
{
    int i = blk_find(kb->tens, kb->ntens, ti);
    if (i >= 0) return kb->tv[i];
    TSL_ASSERT(kb->pass == 0); /* pass 1 made every parameter pass 0 used */
    if (kb->ntens == SCHED_BLK_MAX_PARAMS) {
        blk_fail(kb, "more than %d tensors", SCHED_BLK_MAX_PARAMS);
        i = 0;
    } else {
        i = kb->ntens++;
        kb->tens[i] = ti;
    }
    kb->tv[i] = blk_new_tensor(kb, ti);
    return kb->tv[i];
}

tile_expr *sched_blk_scalar(sched_blk *kb, int ti)
{
    int i = blk_find(kb->scal, kb->nscal, ti);
    if (i < 0) {
        TSL_ASSERT(kb->pass == 0);
        if (kb->nscal == SCHED_BLK_MAX_PARAMS) {
            blk_fail(kb, "more than %d scalars", SCHED_BLK_MAX_PARAMS);
            i = 0;
        } else {
            i = kb->nscal++;
            kb->scal[i] = ti;
        }
        const lang_tensor *t = kb->def->tensors[ti];
        kb->sv[i] = tile_kernel_new_value(kb->m, kb->k, TILE_V_SCALAR, TILE_O_PARAM, sched_blk_pname(kb, t->name));
        kb->sv[i]->type.dt = tile_dtype_from_tsl(t->dtype);
    }
    return tile_expr_value(kb->m, kb->sv[i]);
}

tile_expr *sched_blk_size(sched_blk *kb, int slot)
{
    int i = blk_find(kb->size, kb->nsize, slot);
    if (i < 0) {
        TSL_ASSERT(kb->pass == 0);
        if (kb->nsize == SCHED_BLK_MAX_PARAMS) {
            blk_fail(kb, "more than %d sizes", SCHED_BLK_MAX_PARAMS);
            i = 0;
        } else {
            i = kb->nsize++;
            kb->size[i] = slot;
        }
        /* a stand-in: pass 1 knows whether it is a symbol */
        kb->zv[i] = tile_kernel_symbol(kb->m, kb->k, sched_blk_pname(kb, kb->def->sizes[slot]));
    }
    return tile_expr_value(kb->m, kb->zv[i]);
}

tile_expr *sched_blk_extent(sched_blk *kb, const lang_sexpr *e)
{
    if (e->kind == LANG_SX_CONST) return tile_expr_int(kb->m, e->value);
    TSL_ASSERT(e->kind == LANG_SX_SYM);
    return sched_blk_size(kb, e->sym);
}

tile_expr *sched_blk_sms(sched_blk *kb)
{
    if (!kb->sms) {
        TSL_ASSERT(kb->pass == 0);
        kb->sms = 1;
        kb->smsv = tile_kernel_new_value(kb->m, kb->k, TILE_V_SCALAR, TILE_O_PARAM, "c_nsm");
    }
    return tile_expr_value(kb->m, kb->smsv);
}

void sched_blk_grid(sched_blk *kb, int ngrid, tile_expr **grid, int threads, int64_t smem)
{
    TSL_ASSERT(ngrid >= 1 && ngrid <= 3);
    kb->k->ngrid = ngrid;
    for (int i = 0; i < ngrid; i++) kb->k->grid[i] = grid[i];
    kb->k->threads = threads;
    kb->k->smem_budget = smem;
}

/* One pass: a fresh module and kernel, then the strategy's build. */
static int blk_pass(sched_blk *kb, const char *kname, sched_blk_fn build, void *ctx)
{
    kb->m = tile_module_new(kb->p->m->arena);
    kb->k = tile_kernel_new(kb->m, kname, 1);
    tile_build_begin(&kb->b, kb->m, kb->k);
    if (kb->pass) blk_header(kb);
    return build(kb, ctx);
}

tile_kernel *sched_blk_build(sched_blk *kb, sched_plan *p, const lang_def *def, const char *kname, sched_blk_fn build,
                             void *ctx)
{
    memset(kb, 0, sizeof *kb);
    kb->p = p;
    kb->def = def;
    if (!blk_pass(kb, kname, build, ctx)) return NULL;
    kb->pass = 1;
    if (!blk_pass(kb, kname, build, ctx)) return NULL;
    tsl_diag d;
    memset(&d, 0, sizeof d);
    if (!kb->why[0] && tile_verify(kb->m, NULL, &d) == TSL_OK && !tile_module_find(p->m, kname)) {
        diag_free(&d);
        return kb->k;
    }
    const char *why = kb->why[0] ? kb->why : sb_str(&d.msg);
    sched_note(p, "the plan '%s' does not verify; the group falls back: %.*s", kname, (int)strcspn(why, "\n"),
               *why ? why : "a kernel of that name exists");
    diag_free(&d);
    return NULL;
}

void sched_blk_add(sched_blk *kb, tile_kernel *k, int stmt, int nstmts, const sched_guard *guard)
{
    sched_plan *p = kb->p;
    tsl_arena *a = p->m->arena;
    ARENA_PUSH(a, p->m->kernels, p->m->nkernels, p->m->capkernels, k);
    sched_launch ln = {.k = k, .stmt = stmt, .nstmts = nstmts};
    if (guard) ln.guard = *guard;
    ARENA_PUSH(a, p->launches, p->nlaunches, p->caplaunches, ln);
    sched_launch *l = &p->launches[p->nlaunches - 1];
    for (int i = 0; i < kb->ntens; i++) {
        sched_arg arg = {.name = kb->tv[i]->name, .kind = SCHED_ARG_TENSOR, .tensor = kb->tens[i]};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    for (int i = 0; i < kb->nscal; i++) {
        sched_arg arg = {.name = kb->sv[i]->name, .kind = SCHED_ARG_SCALAR, .tensor = kb->scal[i]};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    for (int i = 0; i < kb->nsize; i++) {
        if (kb->zv[i]->origin != TILE_O_PARAM) continue;
        sched_arg arg = {.name = kb->zv[i]->name, .kind = SCHED_ARG_SIZE, .sym = kb->size[i]};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    if (kb->scratch) {
        sched_arg arg = {.name = kb->scv->name, .kind = SCHED_ARG_SCRATCH, .scratch = kb->scratch - 1};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    if (kb->sms) {
        sched_arg arg = {.name = kb->smsv->name, .kind = SCHED_ARG_SMS};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    TSL_ASSERT(l->nargs == k->nparams);
}

/* ---- expressions ------------------------------------------------------------------------------ */

tile_expr *sched_blk_int(sched_blk *kb, int64_t i) { return tile_expr_int(kb->m, i); }
tile_expr *sched_blk_bin(sched_blk *kb, tile_binop op, tile_expr *a, tile_expr *b)
{
    return tile_expr_bin(kb->m, op, a, b);
}
tile_expr *sched_blk_v(sched_blk *kb, tile_value *v) { return tile_expr_value(kb->m, v); }
tile_expr *sched_blk_bidx(sched_blk *kb, int dim) { return tile_expr_block_idx(kb->m, dim); }

tile_expr *sched_blk_float(sched_blk *kb, double f, const char *text)
{
    tile_expr *e = tile_expr_float(kb->m, f);
    if (text) e->ftext = arena_strdup(kb->m->arena, text);
    return e;
}

/* ---- types and operands ------------------------------------------------------------------------ */

tile_layout *sched_blk_layout(sched_blk *kb, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *err = NULL;
    tile_layout *l = n < (int)sizeof buf ? tile_layout_make(kb->m, buf, &err) : NULL;
    if (!l) blk_fail(kb, "layout '%.80s': %s", buf, err ? err : "too long");
    return l;
}

tile_type sched_blk_type(sched_blk *kb, tile_space sp, tsl_dtype dt, int rank, const int64_t *dims, tile_layout *lay)
{
    return tile_type_make(kb->m, sp, tile_dtype_from_tsl(dt), rank, dims, lay);
}

tile_type sched_blk_type2(sched_blk *kb, tile_space sp, tsl_dtype dt, int64_t d0, int64_t d1, tile_layout *lay)
{
    int64_t d[2] = {d0, d1};
    return sched_blk_type(kb, sp, dt, 2, d, lay);
}

tile_operand sched_blk_at(sched_blk *kb, tile_value *v, int n, tile_expr **idx)
{
    tile_operand o = tile_operand_tensor(v);
    if (n) tile_operand_index(kb->m, &o, n, idx);
    return o;
}

tile_operand sched_blk_at1(sched_blk *kb, tile_value *v, tile_expr *i0) { return sched_blk_at(kb, v, 1, &i0); }

/* ---- instructions ------------------------------------------------------------------------------ */

tile_stmt *sched_blk_op(sched_blk *kb, tile_op op, const char *name, int nargs, const tile_operand *args,
                        const tile_type *type, const tile_operand *dst)
{
    tile_stmt *s = tile_build_instr(&kb->b, op, name);
    for (int i = 0; i < nargs; i++) tile_instr_arg(kb->m, &s->instr, args[i]);
    if (dst) tile_instr_dst(&s->instr, *dst);
    if (name && type) tile_instr_result_type(s, *type);
    else if (name) tile_instr_infer(s);
    return s;
}

tile_value *sched_blk_alloc(sched_blk *kb, const char *name, tile_type t, tile_expr *init)
{
    tile_stmt *s = sched_blk_op(kb, TILE_I_ALLOC, name, 0, NULL, &t, NULL);
    s->instr.init = init;
    return s->instr.result;
}

tile_value *sched_blk_load_global(sched_blk *kb, const char *name, tile_operand src, tile_type t)
{
    return sched_blk_op(kb, TILE_I_LOAD_GLOBAL, name, 1, &src, &t, NULL)->instr.result;
}

tile_value *sched_blk_load_shared(sched_blk *kb, const char *name, tile_operand src, tile_type t)
{
    return sched_blk_op(kb, TILE_I_LOAD_SHARED, name, 1, &src, &t, NULL)->instr.result;
}

void sched_blk_store_global(sched_blk *kb, tile_value *x, tile_operand dst)
{
    tile_operand a = tile_operand_tensor(x);
    sched_blk_op(kb, TILE_I_STORE_GLOBAL, NULL, 1, &a, NULL, &dst);
}

tile_value *sched_blk_cast(sched_blk *kb, const char *name, tile_value *x, tile_type t)
{
    tile_operand a = tile_operand_tensor(x);
    return sched_blk_op(kb, TILE_I_CAST, name, 1, &a, &t, NULL)->instr.result;
}

tile_value *sched_blk_view(sched_blk *kb, const char *name, tile_value *x, tile_type t)
{
    tile_operand a = tile_operand_tensor(x);
    return sched_blk_op(kb, TILE_I_VIEW, name, 1, &a, &t, NULL)->instr.result;
}

tile_value *sched_blk_broadcast(sched_blk *kb, const char *name, tile_value *x, tile_type t, int dim)
{
    tile_operand a = tile_operand_tensor(x);
    tile_stmt *s = sched_blk_op(kb, TILE_I_BROADCAST, name, 1, &a, &t, NULL);
    s->instr.dim = dim;
    return s->instr.result;
}

tile_value *sched_blk_ew(sched_blk *kb, tile_op op, const char *name, tile_operand a, const tile_operand *b)
{
    tile_operand args[2] = {a, b ? *b : a};
    return sched_blk_op(kb, op, name, b ? 2 : 1, args, NULL, NULL)->instr.result;
}

tile_value *sched_blk_reduce(sched_blk *kb, tile_op op, const char *name, tile_value *x, int dim, tile_layout *lay)
{
    TSL_ASSERT(tile_op_is_reduce(op) && x->type.rank >= 1 && x->type.rank <= 4);
    int64_t dims[4];
    int r = 0;
    for (int d = 0; d < x->type.rank; d++) {
        int64_t e = 0;
        TSL_ASSERT(tile_expr_const(x->type.dims[d], &e));
        if (d != dim) dims[r++] = e;
    }
    tile_type t = tile_type_make(kb->m, TILE_REGISTER, x->type.dt, r, dims, lay);
    tile_operand a = tile_operand_tensor(x);
    tile_stmt *s = sched_blk_op(kb, op, name, 1, &a, &t, NULL);
    s->instr.dim = dim;
    return s->instr.result;
}

/* ---- statements ----------------------------------------------------------------------------------- */

tile_stmt *sched_blk_for(sched_blk *kb, const char *var, tile_expr *lo, tile_expr *hi, tile_expr *step)
{
    tile_stmt *s = tile_build_for(&kb->b, var, lo, hi, step);
    tile_build_push(&kb->b, s->body);
    return s;
}

void sched_blk_end(sched_blk *kb) { tile_build_pop(&kb->b); }

tile_value *sched_blk_let(sched_blk *kb, const char *name, tile_expr *e) { return tile_build_let(&kb->b, name, e)->v; }

tile_value *sched_blk_var(sched_blk *kb, const char *name, tile_expr *e)
{
    tile_stmt *s = tile_build_stmt(&kb->b, TILE_S_VAR);
    s->v = tile_kernel_new_value(kb->m, kb->k, TILE_V_SCALAR, TILE_O_VAR, name);
    s->v->def = s;
    s->e = e;
    return s->v;
}

void sched_blk_set(sched_blk *kb, tile_value *var, tile_expr *e)
{
    tile_stmt *s = tile_build_stmt(&kb->b, TILE_S_SET);
    s->v = var;
    s->e = e;
}

void sched_blk_if(sched_blk *kb, tile_expr *cond)
{
    tile_stmt *s = tile_build_stmt(&kb->b, TILE_S_IF);
    s->e = cond;
    s->body = tile_block_new(kb->m);
    tile_build_push(&kb->b, s->body);
}

void sched_blk_sync(sched_blk *kb) { sched_blk_op(kb, TILE_I_SYNC, NULL, 0, NULL, NULL, NULL); }

tile_stmt *sched_blk_pipe(sched_blk *kb, const char *gvar, tile_expr *extent, int stages, tile_value **gv)
{
    tile_stmt *s = tile_build_stmt(&kb->b, TILE_S_PIPELINE);
    tile_pipeline *p = &s->pipe;
    p->ngrid = 1;
    p->gridvars = arena_alloc(kb->m->arena, sizeof *p->gridvars);
    p->grid = arena_alloc(kb->m->arena, sizeof *p->grid);
    p->gridvars[0] = tile_kernel_new_value(kb->m, kb->k, TILE_V_SCALAR, TILE_O_GRIDVAR, gvar);
    p->gridvars[0]->def = s;
    p->grid[0] = extent;
    p->stages = stages;
    *gv = p->gridvars[0];
    return s;
}

tile_value *sched_blk_pipe_in(sched_blk *kb, tile_stmt *pipe, const char *view, tile_value *tensor, int rank,
                              const int64_t *block, tile_expr **index, tile_layout *lay)
{
    tile_blockspec bs;
    memset(&bs, 0, sizeof bs);
    bs.tensor = tensor;
    bs.rank = rank;
    bs.block = arena_alloc(kb->m->arena, sizeof *bs.block * (size_t)rank);
    bs.index = arena_alloc(kb->m->arena, sizeof *bs.index * (size_t)rank);
    memcpy(bs.block, block, sizeof *bs.block * (size_t)rank);
    memcpy(bs.index, index, sizeof *bs.index * (size_t)rank);
    bs.space = TILE_SHARED;
    bs.layout = lay;
    tile_value *v = tile_kernel_new_value(kb->m, kb->k, TILE_V_TENSOR, TILE_O_BLOCK, view);
    v->type = tile_type_make(kb->m, TILE_SHARED, tensor->type.dt, rank, block, lay);
    v->def = pipe;
    bs.view = v;
    tile_pipeline *p = &pipe->pipe;
    ARENA_PUSH(kb->m->arena, p->ins, p->nins, p->capins, bs);
    return v;
}

void sched_blk_pipe_open(sched_blk *kb, tile_stmt *pipe)
{
    pipe->pipe.body = tile_block_new(kb->m);
    tile_build_push(&kb->b, pipe->pipe.body);
}

tile_stmt *sched_blk_warpgroups(sched_blk *kb) { return tile_build_stmt(&kb->b, TILE_S_WARPGROUPS); }

tile_value *sched_blk_role(sched_blk *kb, tile_stmt *wg, const char *name, int count, const char *index, int regs)
{
    tile_role r;
    memset(&r, 0, sizeof r);
    r.name = arena_strdup(kb->m->arena, name);
    r.count = count;
    r.regs = regs;
    if (index) {
        r.index = tile_kernel_new_value(kb->m, kb->k, TILE_V_SCALAR, TILE_O_LET, index);
        r.index->def = wg;
    }
    r.body = tile_block_new(kb->m);
    int cap = wg->nroles; /* roles are few: grown one at a time */
    tile_role *roles = arena_alloc(kb->m->arena, sizeof *roles * (size_t)(cap + 1));
    if (wg->nroles) memcpy(roles, wg->roles, sizeof *roles * (size_t)wg->nroles);
    roles[wg->nroles++] = r;
    wg->roles = roles;
    tile_build_push(&kb->b, r.body);
    return r.index;
}

/* ---- a statement body on a register tile -------------------------------------------------------- */

const char *sched_blk_tile_name(sched_blk_tile *T) { return arena_printf(T->kb->m->arena, "c_v%d", T->tmp++); }

tile_type sched_blk_tile_type(sched_blk_tile *T, tsl_dtype dt)
{
    return sched_blk_type2(T->kb, TILE_REGISTER, dt, T->rows, T->cols, sched_blk_layout(T->kb, "%s", T->lay));
}

tile_value *sched_blk_as_tile(sched_blk_tile *T, sched_blk_val x)
{
    if (x.tile) return x.tile;
    return sched_blk_alloc(T->kb, sched_blk_tile_name(T), sched_blk_tile_type(T, TSL_DTYPE_F32), x.scalar);
}

static int blk_io_dt(tsl_dtype t) { return t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16 || t == TSL_DTYPE_F32; }

/* The offsets of the tile in a tensor whose dims are vars `vars`. */
static tile_operand blk_tile_at(sched_blk_tile *T, tile_value *t, const int *vars, int r)
{
    tile_expr *idx[3];
    for (int d = 0; d < r; d++) idx[d] = T->origin(T->ctx, vars[d]);
    return sched_blk_at(T->kb, t, r, idx);
}

tile_value *sched_blk_load_c(sched_blk_tile *T)
{
    if (T->cur) return T->cur;
    sched_blk *kb = T->kb;
    tile_value *c = sched_blk_tensor(kb, T->tc);
    const lang_tensor *C = kb->def->tensors[T->tc];
    int vars[3] = {0, 1, 2};
    tile_value *r = sched_blk_load_global(kb, sched_blk_tile_name(T), blk_tile_at(T, c, vars, C->rank),
                                          sched_blk_tile_type(T, C->dtype));
    if (C->dtype != TSL_DTYPE_F32) r = sched_blk_cast(kb, sched_blk_tile_name(T), r, sched_blk_tile_type(T, TSL_DTYPE_F32));
    return r;
}

/* The 1-D layout of a vector along the tile's dim 1 - d (d = 0: a row
 * vector, bias(n); d = 1: a column vector): the tile's layout reduced over
 * dim d, its unit dim dropped (`local(1,32)` -> `local(32)`), so that each
 * thread holds the elements of the tile's part it owns and the broadcast
 * back over the tile stays in registers. NULL when the layout text has
 * an atom of another form (the caller takes a plain one). */
static tile_layout *blk_vector_layout(sched_blk_tile *T, int d)
{
    char *err = NULL, buf[512];
    snprintf(buf, sizeof buf, "reduce(%s,%d)", T->lay, d);
    tile_layout *red = tile_layout_make(T->kb->m, buf, &err);
    if (!red) return NULL;
    strbuf sb = {0};
    for (const char *p = red->text; *p;) {
        const char *lp = strchr(p, '('), *rp = lp ? strchr(lp, ')') : NULL;
        if (!lp || !rp) goto fail;
        int nlen = (int)(lp - p);
        long a = 0, b = 0;
        char tail;
        if (sscanf(lp, "(%ld,%ld%c", &a, &b, &tail) == 3 && tail == ')') {
            long keep = d == 0 ? b : a, drop = d == 0 ? a : b;
            if (drop != 1) goto fail;
            /* column_local / column_spatial: the same as local / spatial in one dim */
            if (nlen > 7 && !strncmp(p, "column_", 7)) p += 7, nlen -= 7;
            sb_printf(&sb, "%.*s(%ld)", nlen, p, keep);
        } else if (sscanf(lp, "(%ld%c", &a, &tail) == 2 && tail == ')' && nlen == 9 && !strncmp(p, "replicate", 9)) {
            sb_printf(&sb, "replicate(%ld)", a);
        } else {
            goto fail;
        }
        p = rp + 1;
        if (*p == '.') sb_putc(&sb, *p++);
        else if (*p) goto fail;
    }
    tile_layout *l = tile_layout_make(T->kb->m, sb_str(&sb), &err);
    sb_free(&sb);
    return l;
fail:
    sb_free(&sb);
    return NULL;
}

/* A read of tensor o (not tc) in op: every index a pure parallel var in
 * the order (batch?, m?, n?) with m or n present; loaded and broadcast. */
static int blk_load_other(sched_blk_tile *T, const graph_op *op, const graph_operand *o, sched_blk_val *out)
{
    sched_blk *kb = T->kb;
    const lang_tensor *X = kb->def->tensors[o->tensor];
    if (!o->affine || !blk_io_dt(X->dtype) || o->rank < 1 || o->rank > 3) return 0;
    int vars[3], has_m = 0, has_n = 0, prev = -1;
    for (int d = 0; d < o->rank; d++) {
        int v = o->idx[d].var;
        if (v < 0 || v >= op->niter || v <= prev || !T->covers(T->ctx, op, v, o->tensor, d)) return 0;
        prev = v;
        vars[d] = v;
        has_m |= v == T->vm;
        has_n |= v == T->vn;
    }
    if (!has_m && !has_n) return 0;
    if (T->nb && vars[0] != 0) return 0; /* a batch-indexed tensor must have the batch first */
    tile_value *x = sched_blk_tensor(kb, o->tensor);
    tile_operand at = blk_tile_at(T, x, vars, o->rank);
    const char *rname = sched_blk_tile_name(T);
    tile_value *r;
    if (has_m && has_n) {
        r = sched_blk_load_global(kb, rname, at, sched_blk_tile_type(T, X->dtype));
    } else {
        /* a vector along n (bias(o)) or along m (denom(b, i)): where the
         * strategy asks (vec_reduced: the sm_90a GEMM, whose bias epilogue
         * ran 1.5% slower than cuBLASLt's), in the tile's layout reduced
         * over the other dim, so the broadcast over the tile stays in
         * registers (blk_vector_layout); else 16 threads hold len/16
         * contiguous elements each, the others replicate them, and the
         * broadcast goes through shared memory and two barriers */
        int len = has_n ? T->cols : T->rows;
        tile_layout *lay = T->vec_reduced ? blk_vector_layout(T, has_n ? 0 : 1) : NULL;
        if (!lay) lay = sched_blk_layout(kb, "replicate(%d).spatial(16).local(%d)", T->threads / 16, len / 16);
        int64_t n1 = len;
        tile_value *v1 = sched_blk_load_global(kb, sched_blk_tile_name(T), at,
                                               sched_blk_type(kb, TILE_REGISTER, X->dtype, 1, &n1, lay));
        if (X->dtype != TSL_DTYPE_F32)
            v1 = sched_blk_cast(kb, sched_blk_tile_name(T), v1, sched_blk_type(kb, TILE_REGISTER, TSL_DTYPE_F32, 1, &n1, lay));
        out->tile = sched_blk_broadcast(kb, rname, v1, sched_blk_tile_type(T, TSL_DTYPE_F32), has_n ? 0 : 1);
        out->scalar = NULL;
        return 1;
    }
    if (X->dtype != TSL_DTYPE_F32) r = sched_blk_cast(kb, sched_blk_tile_name(T), r, sched_blk_tile_type(T, TSL_DTYPE_F32));
    out->tile = r;
    out->scalar = NULL;
    return 1;
}

static tile_op blk_unary_op(int b)
{
    switch (b) {
    case LANG_EXP: return TILE_I_EXP;
    case LANG_LOG: return TILE_I_LOG;
    case LANG_SQRT: return TILE_I_SQRT;
    case LANG_RSQRT: return TILE_I_RSQRT;
    case LANG_TANH: return TILE_I_TANH;
    case LANG_SIGMOID: return TILE_I_SIGMOID;
    case LANG_ABS: return TILE_I_ABS;
    case LANG_ERF: return TILE_I_ERF;
    default: return TILE_I_COUNT;
    }
}

static tile_operand blk_operand(sched_blk_val v)
{
    return v.tile ? tile_operand_tensor(v.tile) : tile_operand_scalar(v.scalar);
}

sched_blk_val sched_blk_binary(sched_blk_tile *T, tile_op op, sched_blk_val x, sched_blk_val y)
{
    if (!x.tile && !y.tile) x.tile = sched_blk_as_tile(T, x);
    if (!x.tile) {
        /* a scalar first operand: commutative ops swap, others fill a tile */
        if (op == TILE_I_ADD || op == TILE_I_MUL || op == TILE_I_MAX || op == TILE_I_MIN) {
            sched_blk_val t = x;
            x = y;
            y = t;
        } else {
            x.tile = sched_blk_as_tile(T, x);
        }
    }
    tile_operand b = blk_operand(y);
    sched_blk_val r = {sched_blk_ew(T->kb, op, sched_blk_tile_name(T), blk_operand(x), &b), NULL};
    return r;
}

int sched_blk_body(sched_blk_tile *T, const graph_op *op, const graph_expr *e, sched_blk_val *out)
{
    sched_blk *kb = T->kb;
    const lang_expr *src = e->src;
    char text[64];
    switch (e->kind) {
    case LANG_E_INT:
        snprintf(text, sizeof text, "%lld.0", (long long)src->ival);
        *out = (sched_blk_val){NULL, sched_blk_float(kb, (double)src->ival, text)};
        return 1;
    case LANG_E_FLOAT:
        snprintf(text, sizeof text, "%.17g", src->fval);
        if (!strpbrk(text, ".eEn")) strcat(text, ".0");
        *out = (sched_blk_val){NULL, sched_blk_float(kb, src->fval, text)};
        return 1;
    case LANG_E_SCALAR:
        if (!dtype_info_of(src->tensor->dtype)->is_float) return 0;
        *out = (sched_blk_val){NULL, sched_blk_scalar(kb, src->tensor->index)};
        return 1;
    case LANG_E_SIZE: /* an int size in float arithmetic: a tile filled with it */
        out->tile = sched_blk_as_tile(T, (sched_blk_val){NULL, sched_blk_size(kb, src->slot)});
        out->scalar = NULL;
        return 1;
    case LANG_E_ACCESS: {
        const graph_operand *o = &op->operands[e->operand];
        tile_value *h = T->held ? T->held(T->ctx, op, o) : NULL;
        if (h) {
            *out = (sched_blk_val){h, NULL};
            return 1;
        }
        if (o->tensor == T->tc) {
            if (!o->identity) return 0;
            *out = (sched_blk_val){sched_blk_load_c(T), NULL};
            return 1;
        }
        return blk_load_other(T, op, o, out);
    }
    case LANG_E_UNARY: {
        if (src->op != LANG_NEG) return 0;
        sched_blk_val x;
        if (!sched_blk_body(T, op, e->args[0], &x)) return 0;
        tile_value *xt = sched_blk_as_tile(T, x);
        *out = (sched_blk_val){sched_blk_ew(kb, TILE_I_NEG, sched_blk_tile_name(T), tile_operand_tensor(xt), NULL), NULL};
        return 1;
    }
    case LANG_E_BINARY: {
        tile_op bop = src->op == LANG_ADD   ? TILE_I_ADD
                      : src->op == LANG_SUB ? TILE_I_SUB
                      : src->op == LANG_MUL ? TILE_I_MUL
                      : src->op == LANG_DIV ? TILE_I_DIV
                                            : TILE_I_COUNT;
        if (bop == TILE_I_COUNT || !dtype_info_of(src->optype)->is_float) return 0;
        sched_blk_val x, y;
        if (!sched_blk_body(T, op, e->args[0], &x) || !sched_blk_body(T, op, e->args[1], &y)) return 0;
        *out = sched_blk_binary(T, bop, x, y);
        return 1;
    }
    case LANG_E_CALL: {
        if (!dtype_info_of(src->type)->is_float) return 0;
        if (e->nargs == 2) {
            if (src->op != LANG_MAX && src->op != LANG_MIN) return 0;
            sched_blk_val x, y;
            if (!sched_blk_body(T, op, e->args[0], &x) || !sched_blk_body(T, op, e->args[1], &y)) return 0;
            *out = sched_blk_binary(T, src->op == LANG_MAX ? TILE_I_MAX : TILE_I_MIN, x, y);
            return 1;
        }
        tile_op uop = blk_unary_op(src->op);
        sched_blk_val x;
        if (uop == TILE_I_COUNT || !sched_blk_body(T, op, e->args[0], &x)) return 0;
        tile_value *xt = sched_blk_as_tile(T, x);
        tile_operand a = tile_operand_tensor(xt);
        tile_stmt *s = sched_blk_op(kb, uop, sched_blk_tile_name(T), 1, &a, NULL, NULL);
        /* the fast form where a 16-bit rounding follows, as lower.c asks */
        tsl_dtype math;
        s->instr.approx = tile_op_has_approx(uop) && dtype_from_desc(xt->type.dt, &math) == 0 &&
                          sched_kb_approx_ok(kb->def->tensors[op->operands[0].tensor]->dtype, math);
        *out = (sched_blk_val){s->instr.result, NULL};
        return 1;
    }
    case LANG_E_CAST:
        if (!dtype_info_of(src->type)->is_float) return 0;
        return sched_blk_body(T, op, e->args[0], out);
    default: return 0;
    }
}
