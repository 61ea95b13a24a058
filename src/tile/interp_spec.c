/* interp_spec.c — the tile interpreter's specs and pipelines: explicit
 * decompositions run per thread with collective atoms (ldmatrix) executed
 * warp by warp, per-thread moves inside decompositions, thread-group
 * indices, and the unexpanded semantics of `pipeline`. */
#include "tile/interp_impl.h"

/* ---- decompositions ----------------------------------------------------------------------
 * An instruction with `decomp { ... }` runs its body instead of itself.
 * The body is per-thread (Graphene's specs over thread tensors): it runs
 * once for every thread of the block with thread_idx and `indices g` bound
 * to that thread, and each atomic instruction in it records that thread's
 * operands; when every thread has run the body, each atom executes
 * collectively, warp by warp, with the data-to-thread mapping of the real
 * instruction. So a wrong decomposition moves the wrong data. */

#define MAX_ATOMS 16

typedef struct atom_rec {
    const tile_stmt *s;
    int64_t *src;  /* per thread: 8 shared coordinates (rank 2) -> flattened pairs */
    int64_t *dslot; /* per thread: the 2n destination slots */
    int n;          /* matrices: ldmatrix.x1 / .x2 / .x4 */
    const target_atom *row; /* the ldmatrix row of the target table */
    const rt_view *srcv;
    rt_view view;  /* the source view of the last thread (tensor, name) */
    rt_tensor *dst;
    int ok;
} atom_rec;

typedef struct decomp_ctx {
    atom_rec rec[MAX_ATOMS];
    int nrec;
    int64_t thread;
} decomp_ctx;

static tsl_status exec_decomp_block(interp *I, decomp_ctx *dc, const tile_block *b);

/* `let a, b, i = indices g` for the current thread. */
tsl_status interp_exec_indices(interp *I, const tile_stmt *s)
{
    const tile_threads *g = &s->group->threads;
    int64_t t = I->cur_thread;
    if (t < 0) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "indices: only inside a decomposition");
    t %= g->total > 0 ? g->total : 1;
    int64_t grp = 0, idx = 0, inner = g->inner > 0 ? g->inner : 1;
    if (g->tiler && g->tiler->v.kind == LAYOUT_VALUE_DATA) {
        /* t = complement(tiler)(grp) + tiler(idx): find it */
        layout comp;
        layout_err le = {{0}, 0};
        if (layout_complement(&comp, &g->tiler->v.data, g->total, &le))
            return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "thread tile: %s", le.msg);
        int found = 0;
        for (int64_t j = 0; j < g->total / inner && !found; j++)
            for (int64_t i = 0; i < inner && !found; i++)
                if (layout_eval(&comp, j) + layout_eval(&g->tiler->v.data, i) == t) {
                    grp = j;
                    idx = i;
                    found = 1;
                }
        if (!found) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "thread %lld is in no group", (long long)t);
    } else {
        grp = t / inner;
        idx = t % inner;
    }
    int64_t outer[8];
    int no = g->nouter;
    if (no == 0) {
        outer[0] = grp;
        no = 1;
    } else {
        int64_t r = grp;
        for (int i = no - 1; i >= 0; i--) {
            outer[i] = r % g->outer[i];
            r /= g->outer[i];
        }
    }
    if (s->nvs == 1) {
        I->slots[s->vs[0]->id].ival = idx;
        return TSL_OK;
    }
    if (s->nvs != no + 1)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "indices of '%s' give %d values, %d names", s->group->name,
                    no + 1, s->nvs);
    for (int i = 0; i < no; i++) I->slots[s->vs[i]->id].ival = outer[i];
    I->slots[s->vs[no]->id].ival = idx;
    return TSL_OK;
}

/* Slot of element i (register i/2, half i%2) of an ldmatrix destination
 * `R.local` (the thread's local part in row-major local order) or
 * `R.local.tile([a, b])` (register m = tile m of the tiles in row-major
 * order, half e = element e of the tile). -1 when it does not fit. */
static int64_t ldmatrix_slot(const rt_tensor *d, const tile_operand *dop, int i)
{
    int64_t ld[DIST_MAX_RANK], lc[DIST_MAX_RANK], sz[DIST_MAX_RANK], outer[DIST_MAX_RANK];
    int r = d->rlay->rank;
    interp_local_shape(d->rlay, ld);
    int64_t m = i / 2, e = i % 2;
    if (dop->nsteps == 1) {
        int64_t x = i;
        for (int k = r - 1; k >= 0; k--) {
            lc[k] = x % ld[k];
            x /= ld[k];
        }
        return x ? -1 : interp_local_slot(d->rlay, lc);
    }
    const tile_step *st = &dop->steps[1];
    for (int k = 0; k < r; k++) {
        int j = k - (r - st->n);
        sz[k] = j >= 0 ? st->sizes[j] : 1;
        if (sz[k] < 1 || ld[k] % sz[k]) return -1;
        outer[k] = ld[k] / sz[k];
    }
    for (int k = r - 1; k >= 0; k--) {
        lc[k] = (m % outer[k]) * sz[k] + e % sz[k];
        m /= outer[k];
        e /= sz[k];
    }
    return m || e ? -1 : interp_local_slot(d->rlay, lc);
}

/* Record one thread's part of an ldmatrix: its source row (one row of 8
 * 16-bit elements of shared memory) and its 8 destination slots. */
static tsl_status record_ldmatrix(interp *I, decomp_ctx *dc, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    atom_rec *r = NULL;
    const target_atom *row = target_atom_by_name(in->atom);
    int nm = row && row->kind == TARGET_K_LDMATRIX ? row->count : 0;
    if (!nm)
        return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE, "atom %s: the interpreter knows ldmatrix.x1/.x2/.x4[.trans]",
                          in->atom);
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
    if (!dop || !dop->v || dop->nsteps < 1 || dop->nsteps > 2 || dop->steps[0].kind != TILE_STEP_LOCAL ||
        (dop->nsteps == 2 && dop->steps[1].kind != TILE_STEP_TILE))
        return interp_err(I, s->pos, TSL_ERR_SEMANTIC,
                    "ldmatrix atom: write '-> R.local' or '-> R.local.tile([..])' (the thread's registers)");
    rt_tensor *d = I->slots[dop->v->id].t;
    if (!d || d->space != TILE_REGISTER || d->nlocals < 2 * nm || d->dt.bits != 16)
        return interp_err(I, dop->pos, TSL_ERR_SHAPE,
                          "%s: '%s' must be a 16-bit register tensor with %d slots per thread", in->atom,
                          dop->v->name, 2 * nm);
    r->dst = d;
    r->n = nm;
    r->row = row;
    for (int i = 0; i < 2 * nm; i++) {
        int64_t sl = ldmatrix_slot(d, dop, i);
        if (sl < 0 || sl >= d->nlocals)
            return interp_err(I, dop->pos, TSL_ERR_SHAPE, "%s: register %d of the destination is not in '%s.local'",
                              in->atom, i / 2, dop->v->name);
        r->dslot[dc->thread * 8 + i] = sl;
    }
    tsl_status st = interp_view_of(I, &in->args[0], &r->view);
    if (st) return st;
    if (r->view.t->space != TILE_SHARED || r->view.rank != 2 || r->view.t->dt.bits != 16)
        return interp_err(I, in->args[0].pos, TSL_ERR_SHAPE, "ldmatrix reads a 16-bit rank-2 shared tile");
    if (r->view.ext[0] > 1 || (r->view.ext[1] >= 0 && r->view.ext[1] != 8))
        return interp_err(I, in->args[0].pos, TSL_ERR_SHAPE, "ldmatrix: each thread supplies one row of 8 elements");
    for (int j = 0; j < 8; j++) {
        int64_t vc[2] = {0, j}, c[2];
        interp_view_map(&r->view, vc, c);
        r->src[dc->thread * 16 + 2 * j] = c[0];
        r->src[dc->thread * 16 + 2 * j + 1] = c[1];
    }
    r->ok = 1;
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

static tsl_status exec_thread_move(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (!in->has_dst || in->nargs < 1 || !in->args[0].v)
        return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE,
                    "inside a decomposition the interpreter runs moves 'op SRC -> DST' (and ldmatrix)");
    rt_view a, b;
    tsl_status st = interp_view_of(I, &in->args[0], &a);
    if (!st) st = interp_view_of(I, &in->dst, &b);
    if (st) return st;
    int64_t na = 1, nb = 1, ea[IMAX_RANK], eb[IMAX_RANK];
    for (int i = 0; i < a.rank; i++) {
        int j = i - (a.rank - b.rank);
        ea[i] = a.ext[i] >= 0 ? a.ext[i] : j >= 0 && b.ext[j] >= 0 ? b.ext[j] : 1;
        na *= ea[i];
    }
    for (int i = 0; i < b.rank; i++) {
        int j = i - (b.rank - a.rank);
        eb[i] = b.ext[i] >= 0 ? b.ext[i] : j >= 0 ? ea[j] : 1;
        nb *= eb[i];
    }
    if (na != nb)
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

/* Run the recorded ldmatrix warp by warp. */
static tsl_status run_ldmatrix(interp *I, atom_rec *r)
{
    const tile_stmt *s = r->s;
    rt_tensor *d = r->dst;
    if (I->nthreads % 32)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "ldmatrix needs whole warps; the block has %d threads", I->nthreads);
    static double rows[32][8], out[32][8];
    for (int w = 0; w < I->nthreads / 32; w++) {
        if (w * 32 >= d->nthreads) break;
        for (int l = 0; l < 8 * r->n; l++) /* only these lanes' addresses are used */
            for (int j = 0; j < 8; j++) {
                int64_t th = w * 32 + l, *c = &r->src[th * 16 + 2 * j];
                tsl_status st = interp_shared_get(I, s->pos, &r->view, c, th, &rows[l][j]);
                if (st) return st;
            }
        target_ldmatrix_ref(r->row, rows, out);
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 2 * r->n; i++)
                d->regs[(w * 32 + l) * d->nlocals + r->dslot[(w * 32 + l) * 8 + i]] = interp_round(d->dt, out[l][i]);
    }
    return TSL_OK;
}

static tsl_status exec_decomp_stmt(interp *I, decomp_ctx *dc, const tile_stmt *s)
{
    int64_t v;
    tsl_status st;
    switch (s->kind) {
    case TILE_S_LET:
    case TILE_S_VAR:
    case TILE_S_SET:
        if ((st = interp_eval_int(I, s->e, &v))) return st;
        I->slots[s->v->id].ival = v;
        return TSL_OK;
    case TILE_S_THREADS: return TSL_OK;
    case TILE_S_INDICES: return interp_exec_indices(I, s);
    case TILE_S_IF:
        if ((st = interp_eval_int(I, s->e, &v))) return st;
        if (v) return exec_decomp_block(I, dc, s->body);
        return s->els ? exec_decomp_block(I, dc, s->els) : TSL_OK;
    case TILE_S_INSTR: break;
    default:
        return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE,
                    "the interpreter runs only let/indices/if and atoms inside a decomposition");
    }
    const tile_instr *in = &s->instr;
    if (in->decomp) return exec_decomp_block(I, dc, in->decomp);
    if (in->op == TILE_I_LOAD_SHARED && in->atom && !strncmp(in->atom, "ldmatrix", 8))
        return record_ldmatrix(I, dc, s);
    switch (in->op) {
    case TILE_I_LOAD_GLOBAL:
    case TILE_I_STORE_GLOBAL:
    case TILE_I_LOAD_SHARED:
    case TILE_I_STORE_SHARED:
    case TILE_I_COPY_ASYNC:
    case TILE_I_COPY: return exec_thread_move(I, s);
    case TILE_I_COMMIT:
    case TILE_I_WAIT:
    case TILE_I_SYNC:
        return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE, "%s inside a decomposition: put it outside",
                    tile_op_info_of(in->op)->name);
    default: break;
    }
    return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE, "%s%s%s: not an atom the interpreter knows inside a decomposition",
                tile_op_info_of(in->op)->name, in->atom ? " atom " : "", in->atom ? in->atom : "");
}

static tsl_status exec_decomp_block(interp *I, decomp_ctx *dc, const tile_block *b)
{
    for (int i = 0; i < b->n; i++) {
        tsl_status st = exec_decomp_stmt(I, dc, b->items[i]);
        if (st) return st;
    }
    return TSL_OK;
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
    decomp_ctx dc;
    memset(&dc, 0, sizeof dc);
    for (int64_t t = 0; t < I->nthreads && !st; t++) {
        I->cur_thread = t;
        dc.thread = t;
        st = exec_decomp_block(I, &dc, s->instr.decomp);
    }
    I->cur_thread = -1;
    for (int i = 0; i < dc.nrec && !st; i++) st = run_ldmatrix(I, &dc.rec[i]);
    for (int i = 0; i < dc.nrec; i++) {
        free(dc.rec[i].src);
        free(dc.rec[i].dslot);
    }
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
        t->soff = I->soff[bs->view->id];
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

