/* decomp.c — the one walk over a decomposition and the pieces of its
 * semantics every visitor needs (decomp.h): the classification of inner
 * instructions through the target tables, thread-group indices, the
 * collective atom's destination slots and source row, a move's boxes. */
#include <stdio.h>
#include <string.h>

#include "tile/decomp.h"

unsigned tile_op_target(tile_op op)
{
    switch (op) {
    case TILE_I_LOAD_GLOBAL: return TARGET_OP_LD_GLOBAL;
    case TILE_I_STORE_GLOBAL: return TARGET_OP_ST_GLOBAL;
    case TILE_I_LOAD_SHARED: return TARGET_OP_LD_SHARED;
    case TILE_I_STORE_SHARED: return TARGET_OP_ST_SHARED;
    case TILE_I_COPY_ASYNC: return TARGET_OP_CP_ASYNC;
    case TILE_I_MMA: return TARGET_OP_MMA;
    case TILE_I_WGMMA: return TARGET_OP_WGMMA;
    case TILE_I_TMA_LOAD: return TARGET_OP_TMA_LOAD;
    case TILE_I_TMA_STORE: return TARGET_OP_TMA_STORE;
    case TILE_I_ADD: return TARGET_OP_ACC_STEP;
    default: return 0;
    }
}

static tsl_status walk_fail(const tile_decomp_visitor *v, size_t pos, tsl_status st, const char *fmt, ...)
    TSL_PRINTF(4, 5);

static tsl_status walk_fail(const tile_decomp_visitor *v, size_t pos, tsl_status st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return v->fail(v->ctx, pos, st, msg);
}

/* The row an inner instruction's `atom NAME` names (NULL: none written;
 * *unknown set when the name is in no table). */
static const target_atom *inner_atom(const tile_instr *in, int *unknown)
{
    *unknown = 0;
    if (!in->atom) return NULL;
    int named = 0;
    const target_atom *a = target_atom_resolve(in->atom, NULL, &named);
    if (!a) *unknown = 1;
    return a;
}

static int is_move(tile_op op)
{
    return op == TILE_I_LOAD_GLOBAL || op == TILE_I_STORE_GLOBAL || op == TILE_I_LOAD_SHARED ||
           op == TILE_I_STORE_SHARED || op == TILE_I_COPY_ASYNC || op == TILE_I_COPY;
}

static tsl_status walk_kind(const tile_stmt *s, const tile_decomp_visitor *v)
{
    switch (s->kind) {
    case TILE_S_LET:
    case TILE_S_VAR:
    case TILE_S_SET: return v->scalar(v->ctx, s);
    case TILE_S_THREADS: return TSL_OK;
    case TILE_S_INDICES: return v->indices(v->ctx, s);
    case TILE_S_IF: return v->branch(v->ctx, s);
    case TILE_S_FOR: return v->loop(v->ctx, s);
    case TILE_S_INSTR: break;
    default:
        return walk_fail(v, s->pos, TSL_ERR_UNAVAILABLE,
                         "only let, indices, if, for and atoms run inside a decomposition");
    }
    const tile_instr *in = &s->instr;
    const char *op = tile_op_info_of(in->op)->name;
    if (in->decomp) return tile_decomp_walk(in->decomp, v);
    int unknown;
    const target_atom *a = inner_atom(in, &unknown);
    if (unknown) return walk_fail(v, s->pos, TSL_ERR_SEMANTIC, "%s: unknown atom '%s'", op, in->atom);
    if (a && a->sem == TARGET_SEM_LDMATRIX) {
        if (in->op != TILE_I_LOAD_SHARED)
            return walk_fail(v, s->pos, TSL_ERR_SEMANTIC, "%s: atom %s is a load_shared", op, in->atom);
        return v->collective(v->ctx, s, a);
    }
    if (a && a->sem != TARGET_SEM_MOVE && a->sem != TARGET_SEM_ASYNC)
        return walk_fail(v, s->pos, TSL_ERR_UNAVAILABLE, "%s atom %s: a %s atom does not run inside a decomposition yet",
                         op, in->atom, target_kind_name(a->kind));
    if (is_move(in->op)) return v->move(v->ctx, s, a);
    if (in->op == TILE_I_COMMIT || in->op == TILE_I_WAIT || in->op == TILE_I_SYNC)
        return walk_fail(v, s->pos, TSL_ERR_UNAVAILABLE, "%s inside a decomposition: put it outside", op);
    return walk_fail(v, s->pos, TSL_ERR_UNAVAILABLE, "%s%s%s: not an atom that runs inside a decomposition", op,
                     in->atom ? " atom " : "", in->atom ? in->atom : "");
}

static tsl_status walk_stmt(const tile_stmt *s, const tile_decomp_visitor *v)
{
    if (v->enter) v->enter(v->ctx, s);
    tsl_status st = walk_kind(s, v);
    if (!st && v->leave) v->leave(v->ctx, s);
    return st;
}

tsl_status tile_decomp_walk(const tile_block *b, const tile_decomp_visitor *v)
{
    for (int i = 0; b && i < b->n; i++) {
        tsl_status st = walk_stmt(b->items[i], v);
        if (st) return st;
    }
    return TSL_OK;
}

int tile_decomp_indices(const tile_threads *g, int64_t t, int nvs, int64_t *out, char *err, size_t nerr)
{
    t %= g->total > 0 ? g->total : 1;
    int64_t grp = 0, idx = 0, inner = g->inner > 0 ? g->inner : 1;
    if (g->tiler && g->tiler->v.kind == LAYOUT_VALUE_DATA) {
        /* t = complement(tiler)(grp) + tiler(idx): find it */
        layout comp;
        layout_err le = {{0}, 0};
        if (layout_complement(&comp, &g->tiler->v.data, g->total, &le)) {
            snprintf(err, nerr, "thread tile: %s", le.msg);
            return -1;
        }
        int found = 0;
        for (int64_t j = 0; j < g->total / inner && !found; j++)
            for (int64_t i = 0; i < inner && !found; i++)
                if (layout_eval(&comp, j) + layout_eval(&g->tiler->v.data, i) == t) {
                    grp = j;
                    idx = i;
                    found = 1;
                }
        if (!found) {
            snprintf(err, nerr, "thread %lld is in no group", (long long)t);
            return -1;
        }
    } else {
        grp = t / inner;
        idx = t % inner;
    }
    int no = g->nouter ? g->nouter : 1;
    if (nvs == 1) {
        out[0] = idx;
        return 0;
    }
    if (nvs != no + 1) {
        snprintf(err, nerr, "indices give %d values, %d names", no + 1, nvs);
        return -1;
    }
    if (!g->nouter) {
        out[0] = grp;
    } else {
        for (int i = no - 1; i >= 0; i--) {
            out[i] = grp % g->outer[i];
            grp /= g->outer[i];
        }
    }
    out[no] = idx;
    return 0;
}

/* Slot of local coordinate lc, row-major over the local shape; -1 outside. */
static int64_t local_slot(const dist_layout *l, const int64_t *lc)
{
    int64_t ld[DIST_MAX_RANK], slot = 0;
    tile_local_shape(l, ld);
    for (int i = 0; i < l->rank; i++) {
        if (lc[i] < 0 || lc[i] >= ld[i]) return -1;
        slot = slot * ld[i] + lc[i];
    }
    return slot;
}

void tile_local_shape(const dist_layout *l, int64_t *ld)
{
    for (int i = 0; i < l->rank; i++) ld[i] = 1;
    for (int k = 0; k < l->naxes; k++)
        if (!l->axis[k].is_thread && l->axis[k].dim >= 0) ld[l->axis[k].dim] *= l->axis[k].extent;
}

/* Slot of element i (register i/2, half i%2) of `R.local` or
 * `R.local.tile([a, b])`; -1 when it does not fit. */
static int64_t collective_slot(const dist_layout *l, const tile_operand *dop, int i)
{
    int64_t ld[DIST_MAX_RANK], lc[DIST_MAX_RANK], sz[DIST_MAX_RANK], outer[DIST_MAX_RANK];
    int r = l->rank;
    tile_local_shape(l, ld);
    int64_t m = i / 2, e = i % 2;
    if (dop->nsteps == 1) {
        int64_t x = i;
        for (int k = r - 1; k >= 0; k--) {
            lc[k] = x % ld[k];
            x /= ld[k];
        }
        return x ? -1 : local_slot(l, lc);
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
    return m || e ? -1 : local_slot(l, lc);
}

int tile_decomp_collective_dst(const tile_operand *dop, const target_atom *a, int64_t *slots, char *err, size_t nerr)
{
    int n = 2 * a->count;
    if (!dop || !dop->v || dop->nsteps < 1 || dop->nsteps > 2 || dop->steps[0].kind != TILE_STEP_LOCAL ||
        (dop->nsteps == 2 && dop->steps[1].kind != TILE_STEP_TILE)) {
        snprintf(err, nerr, "%s: write '-> R.local' or '-> R.local.tile([..])' (the thread's registers)", a->name);
        return -1;
    }
    const tile_value *d = dop->v;
    const tile_layout *tl = d->type.layout;
    if (d->type.space != TILE_REGISTER || !tl || tl->v.kind != LAYOUT_VALUE_DIST || d->type.dt.bits != 16 ||
        tl->v.dist.locals < n) {
        snprintf(err, nerr, "%s: '%s' must be a 16-bit register tensor with %d slots per thread", a->name, d->name, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        slots[i] = collective_slot(&tl->v.dist, dop, i);
        if (slots[i] < 0 || slots[i] >= tl->v.dist.locals) {
            snprintf(err, nerr, "%s: register %d of the destination is not in '%s.local'", a->name, i / 2, d->name);
            return -1;
        }
    }
    return 0;
}

int tile_decomp_collective_src(const target_atom *a, tile_space space, int bits, int rank, const int64_t *ext, char *err,
                               size_t nerr)
{
    if (space != TILE_SHARED || rank != 2 || bits != 16) {
        snprintf(err, nerr, "%s reads a 16-bit rank-2 shared tile", a->name);
        return -1;
    }
    if (ext[0] > 1 || (ext[1] >= 0 && ext[1] != 8)) {
        snprintf(err, nerr, "%s: each thread supplies one row of 8 elements", a->name);
        return -1;
    }
    return 0;
}

int64_t tile_decomp_move_box(int ra, const int64_t *xa, int rb, const int64_t *xb, int64_t *ea, int64_t *eb, int64_t *na,
                             int64_t *nb)
{
    *na = *nb = 1;
    for (int i = 0; i < ra; i++) {
        int j = i - (ra - rb);
        ea[i] = xa[i] >= 0 ? xa[i] : j >= 0 && xb[j] >= 0 ? xb[j] : 1;
        *na *= ea[i];
    }
    for (int i = 0; i < rb; i++) {
        int j = i - (rb - ra);
        eb[i] = xb[i] >= 0 ? xb[i] : j >= 0 ? ea[j] : 1;
        *nb *= eb[i];
    }
    return *na == *nb ? *na : -1;
}
