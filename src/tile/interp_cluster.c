/* interp_cluster.c — clusters in the tile interpreter (docs/tile-interp.md
 * "Clusters"): the blocks of one cluster (`cluster(N)`, N consecutive
 * blocks along grid x) run together, because they wait on each other's
 * barriers (`mbar_arrive ... cta R`) and write each other's shared memory
 * (`tma_load ... multicast M`):
 *   - one shared memory holds the cluster's blocks, block rank r's bytes
 *     at r * cspan, so a remote access is an ordinary access at another
 *     offset and the hazard model (interp_mem.c) and the barriers
 *     (interp_hopper.c, known by offset) need nothing new;
 *   - the kernel's top-level statements run in lockstep: each statement
 *     for block rank 0, 1, ... in turn (the verifier keeps `warpgroups`
 *     and `cluster_sync` at the top level, so nothing inside a statement
 *     waits on another block), except `warpgroups`, whose instances of
 *     every block run under one scheduler (interp_roles.c);
 *   - a remote access must come after a cluster_sync that followed the
 *     peer's mbar_init (else the peer's barrier may not be initialised on
 *     the hardware), and not after the peer block has exited: without a
 *     cluster_sync after the warpgroups, a block whose instances have all
 *     finished is gone.
 * The blocks of a cluster are in grid order; the clusters run in grid
 * order or, with opts.shuffle_blocks, in a seeded random order. */
#include "tile/interp_hop.h"

void interp_cluster_enter(interp *I, int r)
{
    I->crank = r;
    I->slots = I->cl[r].slots;
    I->tensors = I->cl[r].tensors;
    memcpy(I->bidx, I->cl[r].bidx, sizeof I->bidx);
}

tsl_status interp_cluster_peer(interp *I, size_t pos, const char *what, const tile_expr *rank, int *r)
{
    int64_t v;
    tsl_status st = interp_eval_int(I, rank, &v);
    if (st) return st;
    if (v < 0 || v >= I->csize)
        return interp_err(I, pos, TSL_ERR_RUNTIME, "%s: cta %lld is not a block of the cluster (0..%d)", what,
                          (long long)v, I->csize - 1);
    *r = (int)v;
    if (v != I->crank && I->cexited[v])
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "%s: block rank %lld of the cluster has exited (its warpgroups have finished and no "
                          "cluster_sync follows them), so its shared memory is gone; block rank %d still uses it",
                          what, (long long)v, I->crank);
    return TSL_OK;
}

/* Is there a cluster_sync at the top level after the last warpgroups? */
static int final_sync(const tile_block *b)
{
    int last = -1, sync = -1;
    for (int i = 0; i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_WARPGROUPS) last = i;
        if (s->kind == TILE_S_INSTR && s->instr.op == TILE_I_CLUSTER_SYNC) sync = i;
    }
    return sync > last;
}

/* One cluster: the top-level statements in lockstep. */
static tsl_status run_cluster(interp *I)
{
    const tile_block *body = I->k->body;
    tsl_status st = TSL_OK;
    imem_reset(&I->sm);
    if (I->hopper && (st = interp_hop_begin(I))) return st;
    I->csync = 0;
    memset(I->cexited, 0, sizeof I->cexited);
    for (int i = 0; i < body->n && !st; i++) {
        const tile_stmt *s = body->items[i];
        if (s->kind == TILE_S_WARPGROUPS) {
            interp_cluster_enter(I, 0);
            st = interp_exec_warpgroups(I, s);
            continue;
        }
        for (int r = 0; r < I->csize && !st; r++) {
            interp_cluster_enter(I, r);
            st = interp_exec_stmt(I, s);
        }
        if (s->kind == TILE_S_INSTR && s->instr.op == TILE_I_CLUSTER_SYNC) I->csync++;
    }
    interp_cluster_enter(I, 0);
    if (!st && I->hopper) st = interp_hop_task_end(I, I->k->pos);
    return st;
}

tsl_status interp_cluster_grid(interp *I, const int64_t *gdim, int64_t nblocks)
{
    const tile_kernel *k = I->k;
    int n = I->csize;
    if (gdim[0] % n)
        return interp_err(I, k->grid[0]->pos, TSL_ERR_SHAPE,
                          "grid dimension 0 is %lld, not a multiple of the kernel's cluster(%d)", (long long)gdim[0], n);
    int64_t ncl = nblocks / n, cx = gdim[0] / n;
    size_t nv = (size_t)k->nvalues + 1;
    icl_block cl[TILE_MAX_CLUSTER];
    memset(cl, 0, sizeof cl);
    int64_t *order = NULL;
    tsl_status st = TSL_OK;
    rt_slot *slots0 = I->slots;
    rt_tensor *tensors0 = I->tensors;
    /* block rank 0 keeps the run's arrays; the others copy the bound
     * parameters (their global tensors stay rank 0's, which is read-only) */
    for (int r = 0; r < n; r++) {
        cl[r].slots = r ? malloc(nv * sizeof *cl[r].slots) : slots0;
        cl[r].tensors = r ? malloc(nv * sizeof *cl[r].tensors) : tensors0;
        if (!cl[r].slots || !cl[r].tensors) {
            st = interp_err(I, k->pos, TSL_ERR_NOMEM, "out of memory");
            goto done;
        }
        if (r) {
            memcpy(cl[r].slots, slots0, nv * sizeof *cl[r].slots);
            memcpy(cl[r].tensors, tensors0, nv * sizeof *cl[r].tensors);
            for (size_t v = 0; v < nv; v++) cl[r].tensors[v].regs = NULL, cl[r].tensors[v].cap = 0;
        }
    }
    if ((st = interp_order(I, ncl, "clusters", &order))) goto done;
    I->cl = cl;
    I->cfinal = final_sync(k->body);
    I->in_grid = 1;
    for (int64_t c = 0; c < ncl && !st; c++) {
        int64_t q = order ? order[c] : c;
        for (int r = 0; r < n; r++) {
            cl[r].bidx[0] = (q % cx) * n + r;
            cl[r].bidx[1] = (q / cx) % gdim[1];
            cl[r].bidx[2] = q / (cx * gdim[1]);
        }
        st = run_cluster(I);
    }
done:
    I->cl = NULL;
    I->crank = 0;
    I->slots = slots0;
    I->tensors = tensors0;
    for (int r = 1; r < n; r++) {
        if (cl[r].tensors)
            for (size_t v = 0; v < nv; v++) free(cl[r].tensors[v].regs);
        free(cl[r].tensors);
        free(cl[r].slots);
    }
    free(order);
    return st;
}
