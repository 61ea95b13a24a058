/* interp_spec.c — the tile interpreter's specs and pipelines: explicit
 * decompositions through the one decomposition walk (decomp.c), per
 * thread, with collective atoms (ldmatrix) executed warp by warp by their
 * target row, per-thread moves, thread-group indices, and the unexpanded
 * semantics of `pipeline`. */
#include "tile/decomp.h"
#include "tile/interp_impl.h"

/* ---- decompositions ----------------------------------------------------------------------
 * An instruction with `decomp { ... }` runs its body instead of itself.
 * The body is per-thread (Graphene's specs over thread tensors): it runs
 * once for every thread of the block with thread_idx and `indices g` bound
 * to that thread, through the one decomposition walk (decomp.c); each
 * collective atom in it records that thread's operands, and when every
 * thread has run the body, each collective runs per warp with the
 * data-to-thread mapping of its target row (target_ldmatrix_ref). So a
 * wrong decomposition moves the wrong data. */

#define MAX_ATOMS 16

typedef struct atom_rec {
    const tile_stmt *s;
    int64_t *src;  /* per thread: 8 shared coordinates (rank 2) -> flattened pairs */
    int64_t *dslot; /* per thread: the 2n destination slots */
    const target_atom *row; /* the ldmatrix row of the target table */
    rt_view view;  /* the source view of the last thread (tensor, name) */
    rt_tensor *dst;
} atom_rec;

typedef struct decomp_ctx {
    interp *I;
    tile_decomp_visitor vis; /* this file's callbacks, ctx = the decomp_ctx */
    atom_rec rec[MAX_ATOMS];
    int nrec;
    int64_t thread;
} decomp_ctx;

static const tile_decomp_visitor *decomp_visitor(decomp_ctx *dc);

/* `let a, b, i = indices g` for the current thread. */
tsl_status interp_exec_indices(interp *I, const tile_stmt *s)
{
    if (I->cur_thread < 0) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "indices: only inside a decomposition");
    int64_t out[8];
    char err[256];
    if (s->nvs > 8) return interp_err(I, s->pos, TSL_ERR_SHAPE, "indices of '%s': too many names", s->group->name);
    if (tile_decomp_indices(&s->group->threads, I->cur_thread, s->nvs, out, err, sizeof err))
        return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "indices of '%s': %s", s->group->name, err);
    for (int i = 0; i < s->nvs; i++) I->slots[s->vs[i]->id].ival = out[i];
    return TSL_OK;
}

/* Record one thread's part of an ldmatrix: its source row (one row of 8
 * 16-bit elements of shared memory) and its destination slots. */
static tsl_status dc_collective(void *ctx, const tile_stmt *s, const target_atom *row)
{
    decomp_ctx *dc = ctx;
    interp *I = dc->I;
    const tile_instr *in = &s->instr;
    atom_rec *r = NULL;
    char err[256];
    for (int i = 0; i < dc->nrec; i++)
        if (dc->rec[i].s == s) r = &dc->rec[i];
    if (!r) {
        if (dc->nrec == MAX_ATOMS) return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE, "too many atoms in one decomposition");
        r = &dc->rec[dc->nrec++];
        memset(r, 0, sizeof *r);
        r->s = s;
        r->src = calloc((size_t)I->nthreads * 16, sizeof(int64_t));
        r->dslot = calloc((size_t)I->nthreads * 8, sizeof(int64_t)); /* at most 8 per thread */
        if (!r->src || !r->dslot) return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    }
    const tile_operand *dop = in->has_dst ? &in->dst : NULL;
    if (tile_decomp_collective_dst(dop, row, &r->dslot[dc->thread * 8], err, sizeof err))
        return interp_err(I, dop ? dop->pos : s->pos, TSL_ERR_SHAPE, "%s", err);
    r->dst = I->slots[dop->v->id].t;
    r->row = row;
    if (!r->dst) return interp_err(I, dop->pos, TSL_ERR_RUNTIME, "'%s' used before it is defined", dop->v->name);
    tsl_status st = interp_view_of(I, &in->args[0], &r->view);
    if (st) return st;
    if (tile_decomp_collective_src(row, r->view.t->space, r->view.t->dt.bits, r->view.rank, r->view.ext, err, sizeof err))
        return interp_err(I, in->args[0].pos, TSL_ERR_SHAPE, "%s", err);
    for (int j = 0; j < 8; j++) {
        int64_t vc[2] = {0, j}, c[2];
        interp_view_map(&r->view, vc, c);
        r->src[dc->thread * 16 + 2 * j] = c[0];
        r->src[dc->thread * 16 + 2 * j + 1] = c[1];
    }
    return TSL_OK;
}

/* ---- per-thread moves inside a decomposition -------------------------------------------
 * An inner load/store/copy that is not a collective atom moves this
 * thread's elements one by one (what `st.shared.v2` and friends do): the
 * k-th element of the source box, row-major, goes to the k-th of the
 * destination box. Register operands are the thread's `.local` part. */
static tsl_status elem_get(interp *I, size_t pos, const rt_view *vw, const int64_t *vc, int64_t th, double *out)
{
    int64_t c[IMAX_RANK];
    interp_view_map(vw, vc, c);
    const rt_tensor *t = vw->t;
    if (vw->local) {
        int64_t sl = interp_local_slot(t->rlay, c);
        if (sl < 0 || th >= t->nthreads) return interp_err(I, pos, TSL_ERR_BOUNDS, "outside %s.local", vw->name);
        *out = t->regs[th * t->nlocals + sl];
        return TSL_OK;
    }
    if (t->space == TILE_SHARED) return interp_shared_get(I, pos, vw, c, th, out);
    if (t->space == TILE_GLOBAL) {
        *out = interp_in_dims(t, c) ? interp_global_get(t, c) : 0;
        return TSL_OK;
    }
    return interp_err(I, pos, TSL_ERR_SEMANTIC, "a register tensor inside a decomposition is used as '%s.local'", vw->name);
}

static tsl_status elem_put(interp *I, size_t pos, const rt_view *vw, const int64_t *vc, int64_t th, double v,
                           int async)
{
    int64_t c[IMAX_RANK];
    interp_view_map(vw, vc, c);
    rt_tensor *t = vw->t;
    if (vw->local) {
        int64_t sl = interp_local_slot(t->rlay, c);
        if (sl < 0 || th >= t->nthreads) return interp_err(I, pos, TSL_ERR_BOUNDS, "outside %s.local", vw->name);
        t->regs[th * t->nlocals + sl] = interp_round(t->dt, v);
        return TSL_OK;
    }
    if (t->space == TILE_SHARED) return interp_shared_put(I, pos, vw, c, th, v, async);
    if (t->space == TILE_GLOBAL) {
        if (interp_in_dims(t, c)) interp_global_set(t, c, v);
        return TSL_OK;
    }
    return interp_err(I, pos, TSL_ERR_SEMANTIC, "a register tensor inside a decomposition is used as '%s.local'", vw->name);
}

static tsl_status dc_move(void *ctx, const tile_stmt *s, const target_atom *row)
{
    decomp_ctx *dc = ctx;
    interp *I = dc->I;
    const tile_instr *in = &s->instr;
    (void)row;
    if (!in->has_dst || in->nargs < 1 || !in->args[0].v)
        return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE,
                    "inside a decomposition the interpreter runs moves 'op SRC -> DST' (and ldmatrix)");
    rt_view a, b;
    tsl_status st = interp_view_of(I, &in->args[0], &a);
    if (!st) st = interp_view_of(I, &in->dst, &b);
    if (st) return st;
    int64_t ea[IMAX_RANK], eb[IMAX_RANK], na, nb;
    if (tile_decomp_move_box(a.rank, a.ext, b.rank, b.ext, ea, eb, &na, &nb) < 0)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "this thread moves %lld elements of '%s' into %lld of '%s'",
                    (long long)na, a.name, (long long)nb, b.name);
    for (int64_t k = 0; k < na; k++) {
        int64_t va[IMAX_RANK], vb[IMAX_RANK], x = k, y = k;
        for (int i = a.rank - 1; i >= 0; i--) {
            va[i] = x % ea[i];
            x /= ea[i];
        }
        for (int i = b.rank - 1; i >= 0; i--) {
            vb[i] = y % eb[i];
            y /= eb[i];
        }
        double v;
        if ((st = elem_get(I, s->pos, &a, va, I->cur_thread, &v)) ||
            (st = elem_put(I, s->pos, &b, vb, I->cur_thread, v, in->op == TILE_I_COPY_ASYNC)))
            return st;
    }
    return TSL_OK;
}

/* Run a recorded ldmatrix warp by warp: lanes below 8 x count give rows. */
static tsl_status run_ldmatrix(interp *I, atom_rec *r)
{
    const tile_stmt *s = r->s;
    rt_tensor *d = r->dst;
    int n = r->row->count;
    if (I->nthreads % 32)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "ldmatrix needs whole warps; the block has %d threads", I->nthreads);
    static double rows[32][8], out[32][8];
    for (int w = 0; w < I->nthreads / 32; w++) {
        if (w * 32 >= d->nthreads) break;
        for (int l = 0; l < 8 * n; l++) /* only these lanes' addresses are used */
            for (int j = 0; j < 8; j++) {
                int64_t th = w * 32 + l, *c = &r->src[th * 16 + 2 * j];
                tsl_status st = interp_shared_get(I, s->pos, &r->view, c, th, &rows[l][j]);
                if (st) return st;
            }
        target_ldmatrix_ref(r->row, rows, out);
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 2 * n; i++)
                d->regs[(w * 32 + l) * d->nlocals + r->dslot[(w * 32 + l) * 8 + i]] = interp_round(d->dt, out[l][i]);
    }
    return TSL_OK;
}

static tsl_status dc_scalar(void *ctx, const tile_stmt *s)
{
    decomp_ctx *dc = ctx;
    int64_t v;
    tsl_status st = interp_eval_int(dc->I, s->e, &v);
    if (!st) dc->I->slots[s->v->id].ival = v;
    return st;
}

static tsl_status dc_indices(void *ctx, const tile_stmt *s)
{
    return interp_exec_indices(((decomp_ctx *)ctx)->I, s);
}

static tsl_status dc_branch(void *ctx, const tile_stmt *s)
{
    decomp_ctx *dc = ctx;
    int64_t v;
    tsl_status st = interp_eval_int(dc->I, s->e, &v);
    if (st) return st;
    return tile_decomp_walk(v ? s->body : s->els, decomp_visitor(dc));
}

static tsl_status dc_loop(void *ctx, const tile_stmt *s)
{
    decomp_ctx *dc = ctx;
    interp *I = dc->I;
    int64_t lo, hi, step = 1;
    tsl_status st;
    if ((st = interp_eval_int(I, s->lo, &lo)) || (st = interp_eval_int(I, s->hi, &hi)) ||
        (s->step && (st = interp_eval_int(I, s->step, &step))))
        return st;
    if (step <= 0) return interp_err(I, s->pos, TSL_ERR_RUNTIME, "for: step %lld is not positive", (long long)step);
    for (int64_t i = lo; i < hi && !st; i += step) {
        I->slots[s->v->id].ival = i;
        st = tile_decomp_walk(s->body, decomp_visitor(dc));
    }
    return st;
}

static tsl_status dc_fail(void *ctx, size_t pos, tsl_status st, const char *msg)
{
    return interp_err(((decomp_ctx *)ctx)->I, pos, st, "%s", msg);
}

static const tile_decomp_visitor *decomp_visitor(decomp_ctx *dc)
{
    return &dc->vis;
}

tsl_status interp_exec_decomp(interp *I, const tile_stmt *s)
{
    /* the instruction's own result is the storage its atoms write */
    rt_tensor *d = NULL;
    tsl_status st = TSL_OK;
    if (s->instr.result && s->instr.result->type.space == TILE_REGISTER && (st = interp_tensor_of(I, s->instr.result, &d)))
        return st;
    if (d)
        for (int64_t i = 0; i < d->nthreads * d->nlocals; i++) d->regs[i] = NAN;
    decomp_ctx *dc = calloc(1, sizeof *dc);
    if (!dc) return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    dc->I = I;
    dc->vis = (tile_decomp_visitor){.ctx = dc, .scalar = dc_scalar, .indices = dc_indices, .branch = dc_branch,
                                    .loop = dc_loop, .collective = dc_collective, .move = dc_move, .fail = dc_fail};
    for (int64_t t = 0; t < I->nthreads && !st; t++) {
        I->cur_thread = t;
        dc->thread = t;
        st = tile_decomp_walk(s->instr.decomp, decomp_visitor(dc));
    }
    I->cur_thread = -1;
    for (int i = 0; i < dc->nrec && !st; i++) st = run_ldmatrix(I, &dc->rec[i]);
    for (int i = 0; i < dc->nrec; i++) {
        free(dc->rec[i].src);
        free(dc->rec[i].dslot);
    }
    free(dc);
    return st;
}

/* ---- pipelines (the unexpanded semantics) --------------------------------------------------
 * pipeline(grid, stages, in, out) { body } means: for every grid point in
 * row-major order (last axis fastest), each in-block whose index changed
 * (or the first) is copied in, each out-block whose index changed is
 * written back first; after the last point every out-block is written
 * back. An out-block stays resident while its index does not change, so
 * accumulation over the last grid axis works (Pallas). The stage count
 * does not change the result; pipeline.c expands it into async copies
 * that must give the same answer. */

static tsl_status block_tensor(interp *I, const tile_blockspec *bs, rt_tensor **out)
{
    rt_tensor *t = &I->tensors[bs->view->id];
    t->space = bs->space;
    t->dt = bs->tensor->type.dt;
    t->rank = bs->rank;
    for (int i = 0; i < bs->rank; i++) t->dims[i] = bs->block[i];
    if (bs->space == TILE_SHARED) {
        if (tile_dtype_to_tsl(t->dt, &t->tdt))
            return interp_err(I, bs->pos, TSL_ERR_UNAVAILABLE, "block of '%s': dtype not byte-sized", bs->tensor->name);
        t->soff = I->soff[bs->view->id] + (size_t)I->crank * I->cspan;
        t->slay = bs->layout && bs->layout->v.kind == LAYOUT_VALUE_DATA ? &bs->layout->v.data : NULL;
    } else {
        if (!bs->layout || bs->layout->v.kind != LAYOUT_VALUE_DIST)
            return interp_err(I, bs->pos, TSL_ERR_SEMANTIC, "a register block needs a distributed layout");
        t->rlay = &bs->layout->v.dist;
        t->nthreads = t->rlay->threads;
        t->nlocals = t->rlay->locals;
        int64_t n = t->nthreads * t->nlocals;
        if (n > t->cap) {
            double *r = realloc(t->regs, (size_t)n * sizeof *r);
            if (!r) return interp_err(I, bs->pos, TSL_ERR_NOMEM, "out of memory");
            t->regs = r;
            t->cap = n;
        }
    }
    I->slots[bs->view->id].t = t;
    *out = t;
    return TSL_OK;
}

/* Move one block between global (at block index idx) and its storage. */
static tsl_status block_move(interp *I, const tile_blockspec *bs, const int64_t *idx, int in)
{
    rt_tensor *t = I->slots[bs->view->id].t, *g = I->slots[bs->tensor->id].t;
    rt_view vw;
    tile_operand o = tile_operand_tensor(bs->view);
    tsl_status st = interp_view_of(I, &o, &vw);
    if (st) return st;
    imem_sync(&I->sm);
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    for (int64_t e = 0; e < n; e++) {
        int64_t c[IMAX_RANK], gc[IMAX_RANK], r = e;
        for (int i = t->rank - 1; i >= 0; i--) {
            c[i] = r % t->dims[i];
            r /= t->dims[i];
        }
        for (int i = 0; i < t->rank; i++) gc[i] = idx[i] * bs->block[i] + c[i];
        int inb = interp_in_dims(g, gc);
        if (t->space == TILE_SHARED) {
            double v = 0;
            if (in) {
                v = inb ? interp_global_get(g, gc) : 0;
                if ((st = interp_shared_put(I, bs->pos, &vw, c, e % I->nthreads, v, 0))) return st;
            } else {
                if ((st = interp_shared_get(I, bs->pos, &vw, c, e % I->nthreads, &v))) return st;
                if (inb) interp_global_set(g, gc, v);
            }
        } else {
            int64_t full[DIST_MAX_RANK], th, l;
            int lead = t->rlay->rank - t->rank;
            for (int i = 0; i < lead; i++) full[i] = 0;
            for (int i = 0; i < t->rank; i++) full[lead + i] = c[i];
            if (in) {
                int64_t ths[64], los[64];
                int64_t no = dist_layout_owners(t->rlay, full, ths, los, 64);
                double v = inb ? interp_global_get(g, gc) : 0;
                for (int64_t k = 0; k < no && k < 64; k++) t->regs[ths[k] * t->nlocals + los[k]] = interp_round(t->dt, v);
            } else if (!dist_layout_owner(t->rlay, full, &th, &l) && inb) {
                interp_global_set(g, gc, t->regs[th * t->nlocals + l]);
            }
        }
    }
    imem_sync(&I->sm);
    return TSL_OK;
}

tsl_status interp_exec_pipeline(interp *I, const tile_stmt *s)
{
    const tile_pipeline *p = &s->pipe;
    int64_t ext[8], pt[8], total = 1;
    tsl_status st;
    if (p->ngrid > 8) return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE, "pipeline grid rank > 8");
    for (int i = 0; i < p->ngrid; i++) {
        if ((st = interp_eval_int(I, p->grid[i], &ext[i]))) return st;
        total *= ext[i] > 0 ? ext[i] : 0;
    }
    int nspec = p->nins + p->nouts;
    int64_t (*prev)[IMAX_RANK] = calloc((size_t)(nspec ? nspec : 1), sizeof *prev);
    if (!prev) return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nspec && !st; i++) {
        const tile_blockspec *bs = i < p->nins ? &p->ins[i] : &p->outs[i - p->nins];
        rt_tensor *t = NULL;
        st = block_tensor(I, bs, &t);
        if (!st && t->space == TILE_REGISTER)
            for (int64_t j = 0; j < t->nthreads * t->nlocals; j++) t->regs[j] = NAN;
    }
    for (int64_t it = 0; it < total && !st; it++) {
        int64_t r = it;
        for (int i = p->ngrid - 1; i >= 0; i--) {
            pt[i] = r % ext[i];
            r /= ext[i];
        }
        for (int i = 0; i < p->ngrid; i++) I->slots[p->gridvars[i]->id].ival = pt[i];
        for (int i = 0; i < nspec && !st; i++) {
            const tile_blockspec *bs = i < p->nins ? &p->ins[i] : &p->outs[i - p->nins];
            int64_t idx[IMAX_RANK];
            int changed = it == 0;
            for (int d = 0; d < bs->rank && !st; d++) {
                st = interp_eval_int(I, bs->index[d], &idx[d]);
                changed |= idx[d] != prev[i][d];
            }
            if (st || !changed) continue;
            if (i < p->nins) st = block_move(I, bs, idx, 1);
            else if (it > 0) st = block_move(I, bs, prev[i], 0);
            memcpy(prev[i], idx, sizeof idx);
        }
        if (!st) st = interp_exec_block(I, p->body ? p->body : s->body);
    }
    for (int i = p->nins; i < nspec && !st && total > 0; i++) st = block_move(I, &p->outs[i - p->nins], prev[i], 0);
    free(prev);
    return st;
}

