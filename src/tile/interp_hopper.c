/* interp_hopper.c — the Hopper instructions in the tile interpreter
 * (docs/tile-ir.md section 5b; the machine is docs/tile-interp.md
 * "Warpgroups, mbarriers, TMA and wgmma"):
 *   mbarriers   phase, pending arrivals (one per executing instance),
 *               expected transaction bytes; a phase completes when both
 *               reach zero, and its arrivals' observations pass to the
 *               waiters (vector clocks, interp_mem.c);
 *   TMA         tma_load reads its box at issue (zeros outside the global
 *               tensor), counts its bytes at once and lands in shared
 *               memory when its barrier phase completes — the latest the
 *               hardware may; tma_store reads shared memory at issue
 *               and holds it until the bulk_wait that covers it;
 *   wgmma       issue records the operation (operands held, accumulator
 *               busy); commit closes the group; wait completes groups, and
 *               only then is the product computed — shared operands read
 *               through the matrix descriptor derived by tile_wgmma_smem_of
 *               with the PTX ISA's canonical layouts and the hardware's
 *               Swizzle<b,4,3> on byte addresses, never through the
 *               tensor's own layout, so a wrong descriptor gives a wrong
 *               answer; register fragments read by the PTX formulas.
 * Every hazard stops the run with a located message (the list is in the
 * docs). */
#include "tile/interp_hop.h"

/* ---- state ---------------------------------------------------------------------- */

static void reset(interp *I)
{
    struct ihop *h = I->hop;
    for (int i = 0; i < h->nbars; i++) free(h->bars[i].loads);
    for (int i = 0; i < h->nloads; i++) {
        free(h->loads[i].offs);
        free(h->loads[i].data);
    }
    for (int i = 0; i < h->nareads; i++) free(h->areads[i].offs);
    h->nbars = h->nloads = h->nareads = 0;
    for (size_t i = 0; i < h->nbar_at; i++) h->bar_at[i] = -1;
    memset(h->tasks, 0, sizeof h->tasks);
    for (int t = 0; t < IMEM_MAX_TASKS; t++) h->tasks[t].wait_bar = -1;
    h->blocked = h->completed = 0;
    h->next_task = 1;
}

tsl_status interp_hop_begin(interp *I)
{
    if (!I->hop) {
        I->hop = calloc(1, sizeof *I->hop);
        if (I->hop) {
            I->hop->nbar_at = I->sm.size / 8 + 1;
            I->hop->bar_at = malloc(I->hop->nbar_at * sizeof *I->hop->bar_at);
        }
        if (!I->hop || !I->hop->bar_at) return interp_err(I, I->k->pos, TSL_ERR_NOMEM, "out of memory");
    }
    reset(I);
    return TSL_OK;
}

void interp_hop_free(interp *I)
{
    if (!I->hop) return;
    reset(I);
    free(I->hop->bars);
    free(I->hop->loads);
    free(I->hop->areads);
    free(I->hop->bar_at);
    free(I->hop);
    I->hop = NULL;
}

/* Room for one more element in a growable array. */
static int grow(void **p, int n, int *cap, size_t size)
{
    if (n < *cap) return 0;
    int nc = *cap ? 2 * *cap : 16;
    void *r = realloc(*p, (size_t)nc * size);
    if (!r) return -1;
    *p = r;
    *cap = nc;
    return 0;
}

/* ---- names for messages ---------------------------------------------------------------- */

const char *interp_task_name(const interp *I, int task, char *buf, size_t n)
{
    const hop_task *t = I->hop && task > 0 && task < IMEM_MAX_TASKS ? &I->hop->tasks[task] : NULL;
    if (t && t->role && t->rank >= 0) snprintf(buf, n, "%s %d of block rank %d", t->role, t->inst, t->rank);
    else if (t && t->role) snprintf(buf, n, "%s %d", t->role, t->inst);
    else if (I->cl) snprintf(buf, n, "block rank %d", I->crank);
    else snprintf(buf, n, "the block");
    return buf;
}

const char *interp_thread_name(interp *I, int64_t thread, int task, char *buf, size_t n)
{
    char tn[64];
    if (task <= 0 || task >= IMEM_MAX_TASKS) snprintf(buf, n, "thread %lld", (long long)thread);
    else snprintf(buf, n, "thread %lld (%s)", (long long)thread, interp_task_name(I, task, tn, sizeof tn));
    return buf;
}

const char *interp_hop_bar_name(const interp *I, int b, char *buf, size_t n)
{
    const hop_bar *r = &I->hop->bars[b];
    snprintf(buf, n, "%s[%s]", r->name, r->coord);
    return buf;
}

const char *interp_hop_bar_state(const interp *I, int b, char *buf, size_t n)
{
    const hop_bar *r = &I->hop->bars[b];
    snprintf(buf, n, "phase %u with %lld arrival%s and %lld transaction bytes pending", r->phase, (long long)r->pending,
             r->pending == 1 ? "" : "s", (long long)r->tx);
    return buf;
}

int interp_hop_bar_ready(const interp *I, int b, int parity)
{
    return (int)(I->hop->bars[b].phase & 1) != parity;
}

/* The coordinate of the element of shared tensor t that holds byte off;
 * 0 if none does. */
static int off_coord(const rt_tensor *t, size_t off, int64_t *c)
{
    int64_t numel = 1;
    for (int i = 0; i < t->rank; i++) numel *= t->dims[i];
    size_t eb = interp_dt_bytes(t->tdt);
    for (int64_t e = 0; e < numel; e++) {
        int64_t r = e;
        for (int i = t->rank - 1; i >= 0; i--) {
            c[i] = r % t->dims[i];
            r /= t->dims[i];
        }
        size_t o = interp_shared_off(t, c);
        if (off >= o && off < o + eb) return 1;
    }
    return 0;
}

/* ---- hazards -------------------------------------------------------------------------- */

/* Is task `agent` an instance of a warpgroups statement that has ended? */
static int finished(const interp *I, int agent)
{
    return agent > 0 && agent < IMEM_MAX_TASKS && (I->task == 0 || agent < I->hop->live_first);
}

tsl_status interp_hazard_ext(interp *I, size_t pos, imem_hazard h, const char *subj, const char *name,
                             const int64_t *c, int rank, int write)
{
    const imem_why *w = &I->sm.why;
    char e[160], oth[96], bn[96], tn[64];
    if (c) interp_coord_str(e, sizeof e, c, rank);
    else snprintf(e, sizeof e, "byte %zu", w->off);
    const char *verb = write ? "writes" : "reads";
    int agent = w->agent;
    switch (h) {
    case IMEM_RAW:
    case IMEM_WAW:
        interp_thread_name(I, w->other, agent, oth, sizeof oth);
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "hazard: %s %s %s[%s], which %s wrote with no synchronize between (missing sync?)", subj,
                          verb, name, e, oth);
    case IMEM_WAR:
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "hazard: %s writes %s[%s], which another thread read with no synchronize between "
                          "(missing sync?)", subj, name, e);
    case IMEM_PENDING_READ:
    case IMEM_PENDING_WRITE:
        return interp_err(I, pos, TSL_ERR_RUNTIME, "hazard: %s %s %s[%s] while a cp.async into it is pending (missing wait?)",
                          subj, verb, name, e);
    case IMEM_XRAW:
    case IMEM_XWAW:
        interp_thread_name(I, w->other, agent, oth, sizeof oth);
        if (finished(I, agent))
            return interp_err(I, pos, TSL_ERR_RUNTIME,
                              "hazard: %s %s %s[%s], which %s wrote in an earlier warpgroups statement with no block "
                              "sync after it (missing sync?)", subj, verb, name, e, oth);
        if (w->nosync)
            return interp_err(I, pos, TSL_ERR_RUNTIME,
                              "hazard: %s %s %s[%s], which %s wrote with no sync of its warpgroup before the "
                              "mbar_arrive that orders the two (missing sync before mbar_arrive?)", subj, verb, name,
                              e, oth);
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "hazard: %s %s %s[%s], which %s wrote, with no mbarrier wait ordering the two (missing "
                          "mbar_wait, or mbar_arrive too early?)", subj, verb, name, e, oth);
    case IMEM_XWAR:
        interp_task_name(I, agent, tn, sizeof tn);
        if (finished(I, agent))
            return interp_err(I, pos, TSL_ERR_RUNTIME,
                              "hazard: %s writes %s[%s], which %s read in an earlier warpgroups statement with no "
                              "block sync after it (missing sync?)", subj, name, e, tn);
        if (w->nosync)
            return interp_err(I, pos, TSL_ERR_RUNTIME,
                              "hazard: %s writes %s[%s], which a thread of %s read with no sync of its warpgroup "
                              "before the mbar_arrive that orders the two (missing sync before mbar_arrive?)", subj,
                              name, e, tn);
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "hazard: %s writes %s[%s], which %s read, with no mbarrier wait ordering the two (missing "
                          "mbar_wait, or mbar_arrive too early?)", subj, name, e, tn);
    case IMEM_TMA_PENDING: {
        const hop_load *l = &I->hop->loads[w->op];
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "hazard: %s %s %s[%s] while the TMA load of %s into it is in flight (missing mbar_wait "
                          "on %s?)", subj, verb, name, e, interp_task_name(I, l->task, tn, sizeof tn),
                          interp_hop_bar_name(I, l->bar, bn, sizeof bn));
    }
    case IMEM_TMA_UNSEEN:
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "hazard: %s %s %s[%s], which the TMA load completing phase %u of %s wrote, before waiting "
                          "on that phase (missing mbar_wait?)", subj, verb, name, e, w->clock,
                          interp_hop_bar_name(I, agent - IMEM_VC_BAR(0), bn, sizeof bn));
    case IMEM_ASYNC_READING: {
        const hop_aread *r = &I->hop->areads[w->op];
        int wg = r->kind == HOP_WGMMA;
        return interp_err(I, pos, TSL_ERR_RUNTIME, "hazard: %s writes %s[%s] while a %s of %s still reads it (missing %s?)",
                          subj, name, e, wg ? "wgmma" : "tma_store", interp_task_name(I, r->task, tn, sizeof tn),
                          wg ? "wgmma_wait" : "bulk_wait");
    }
    case IMEM_UNFENCED:
        interp_thread_name(I, w->other, agent, oth, sizeof oth);
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "hazard: %s reads %s[%s], which %s wrote with an ordinary store and no fence_async after "
                          "it (missing fence_async?)", subj, name, e, oth);
    case IMEM_UNWRITTEN:
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "hazard: %s reads %s[%s], which nothing has written yet (missing mbar_wait?)", subj, name, e);
    default:
        return interp_err(I, pos, TSL_ERR_BOUNDS, "%s: %s[%s] is outside the block's shared memory", subj, name, e);
    }
}

/* A hazard found at byte `off` of shared tensor t (message names the element). */
static tsl_status byte_hazard(interp *I, size_t pos, imem_hazard h, const char *subj, const char *name,
                              const rt_tensor *t, size_t off, int write)
{
    int64_t c[IMAX_RANK];
    if (off_coord(t, off, c)) return interp_hazard_ext(I, pos, h, subj, name, c, t->rank, write);
    return interp_hazard_ext(I, pos, h, subj, name, NULL, 0, write);
}

tsl_status interp_wgmma_busy(interp *I, size_t pos, const char *name, int write)
{
    char tn[64];
    return interp_err(I, pos, TSL_ERR_RUNTIME, "hazard: %s %s '%s' while a wgmma that uses it is in flight (missing wgmma_wait?)",
                      interp_task_name(I, I->task, tn, sizeof tn), write ? "writes" : "reads", name);
}

/* "the wgmma of consumer 0" */
static const char *op_subject(interp *I, const char *op, char *buf, size_t n)
{
    char tn[64];
    snprintf(buf, n, "the %s of %s", op, interp_task_name(I, I->task, tn, sizeof tn));
    return buf;
}

/* ---- mbarriers ------------------------------------------------------------------------ */

/* The barriers an operand names: B[i, ...] one element, B alone every one. */
static tsl_status bar_elems(interp *I, const tile_operand *o, const char *opn, size_t *offs, char (*coords)[48],
                            int *n, int max)
{
    rt_view vw;
    tsl_status st = interp_view_of(I, o, &vw);
    if (st) return st;
    const rt_tensor *t = vw.t;
    if (t->space != TILE_SHARED || t->dt.kind != TILE_DT_UINT || t->dt.bits != 64)
        return interp_err(I, o->pos, TSL_ERR_SEMANTIC, "%s: the barrier '%s' must be a shared u64 tensor", opn, vw.name);
    int64_t c[IMAX_RANK], vc[IMAX_RANK] = {0}, numel = 1;
    *n = 0;
    if (o->nsteps) {
        interp_view_map(&vw, vc, c);
        if (!interp_in_dims(t, c)) {
            char cs[128];
            interp_coord_str(cs, sizeof cs, c, t->rank);
            return interp_err(I, o->pos, TSL_ERR_BOUNDS, "%s: barrier %s[%s] is outside its shape", opn, vw.name, cs);
        }
        offs[0] = interp_shared_off(t, c);
        interp_coord_str(coords[0], sizeof coords[0], c, t->rank);
        *n = 1;
        return TSL_OK;
    }
    for (int i = 0; i < t->rank; i++) numel *= t->dims[i];
    if (numel > 1 && max == 1)
        return interp_err(I, o->pos, TSL_ERR_SEMANTIC, "%s: '%s' holds %lld barriers; name one (%s[i])", opn, vw.name,
                          (long long)numel, vw.name);
    if (numel > max)
        return interp_err(I, o->pos, TSL_ERR_UNAVAILABLE, "%s: '%s' holds %lld barriers; the interpreter tracks at most %d",
                          opn, vw.name, (long long)numel, max);
    for (int64_t e = 0; e < numel; e++) {
        int64_t r = e;
        for (int i = t->rank - 1; i >= 0; i--) {
            c[i] = r % t->dims[i];
            r /= t->dims[i];
        }
        offs[e] = interp_shared_off(t, c);
        interp_coord_str(coords[e], sizeof coords[e], c, t->rank);
    }
    *n = (int)numel;
    return TSL_OK;
}

/* The barrier initialised at offset off of the shared image (which holds
 * every block of the cluster: a peer's through interp_peer_off); -1 when
 * none is. */
static int bar_at_off(const struct ihop *h, size_t off)
{
    int b = off / 8 < h->nbar_at ? h->bar_at[off / 8] : -1;
    return b >= 0 && h->bars[b].init ? b : -1;
}

/* The one barrier of an arrive / wait / tma_load operand, usable by the
 * running task: initialised, and the initialisation visible to it. With
 * peer >= 0, the barrier at the same place in block rank `peer` of the
 * cluster, which a cluster_sync since its mbar_init makes usable. */
static tsl_status bar_use(interp *I, const tile_operand *o, const char *opn, int peer, int *out)
{
    size_t off[1];
    char coord[1][48];
    int n;
    tsl_status st = bar_elems(I, o, opn, off, coord, &n, 1);
    if (st) return st;
    struct ihop *h = I->hop;
    int b = bar_at_off(h, off[0]);
    if (b < 0)
        return interp_err(I, o->pos, TSL_ERR_RUNTIME, "%s: barrier %s[%s] is used before mbar_init", opn, o->v->name,
                          coord[0]);
    const hop_bar *r = &h->bars[b];
    if (peer >= 0 && peer != I->crank) { /* the same barrier in block rank `peer` */
        size_t poff = interp_peer_off(I, off[0], peer);
        b = bar_at_off(h, poff);
        if (b < 0)
            return interp_err(I, o->pos, TSL_ERR_RUNTIME, "%s: barrier %s[%s] of block rank %d is used before its mbar_init",
                              opn, o->v->name, coord[0], peer);
        r = &h->bars[b];
        if (r->init_csync >= I->csync)
            return interp_err(I, o->pos, TSL_ERR_RUNTIME,
                              "%s: barrier %s[%s] of block rank %d is used by block rank %d with no cluster_sync between "
                              "its mbar_init and this use (the peer's barrier may not be initialised yet)",
                              opn, o->v->name, coord[0], peer, I->crank);
        *out = b;
        return TSL_OK;
    }
    if (r->init_task != I->task && I->sm.tasks[I->task].vc.c[r->init_task] <= r->init_clock) {
        char tn[64], tn2[64];
        return interp_err(I, o->pos, TSL_ERR_RUNTIME,
                          "%s: barrier %s[%s] is used by %s before the mbar_init of %s is visible to it (missing sync "
                          "after mbar_init?)", opn, o->v->name, coord[0], interp_task_name(I, I->task, tn, sizeof tn),
                          interp_task_name(I, r->init_task, tn2, sizeof tn2));
    }
    *out = b;
    return TSL_OK;
}

static int bar_in_use(const interp *I, int b)
{
    const hop_bar *r = &I->hop->bars[b];
    if (r->pending != r->count || r->tx || r->nloads) return 1;
    for (int t = 0; t < IMEM_MAX_TASKS; t++)
        if (I->hop->tasks[t].wait_bar == b) return 1;
    return 0;
}

static tsl_status exec_mbar_init(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    struct ihop *h = I->hop;
    size_t offs[IMEM_MAX_BARRIERS];
    char coords[IMEM_MAX_BARRIERS][48];
    int n;
    int64_t count;
    tsl_status st = bar_elems(I, &in->args[0], "mbar_init", offs, coords, &n, IMEM_MAX_BARRIERS);
    if (st || (st = interp_eval_int(I, in->args[1].scalar, &count))) return st;
    if (count < 1 || count >= (1 << 20))
        return interp_err(I, in->args[1].pos, TSL_ERR_RUNTIME, "mbar_init: arrival count %lld is not in 1..2^20-1",
                          (long long)count);
    for (int i = 0; i < n; i++) {
        size_t slot = offs[i] / 8;
        if (offs[i] % 8 || slot >= h->nbar_at)
            return interp_err(I, s->pos, TSL_ERR_RUNTIME, "mbar_init: barrier %s[%s] is not 8-byte aligned",
                              in->args[0].v->name, coords[i]);
        int b = h->bar_at[slot];
        if (b < 0) {
            if (h->nbars == IMEM_MAX_BARRIERS)
                return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE, "mbar_init: the interpreter tracks at most %d barriers per block",
                                  IMEM_MAX_BARRIERS);
            if (grow((void **)&h->bars, h->nbars, &h->capbars, sizeof *h->bars))
                return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
            b = h->bar_at[slot] = h->nbars++;
            memset(&h->bars[b], 0, sizeof h->bars[b]);
        } else if (h->bars[b].init && bar_in_use(I, b)) {
            char bs[128];
            return interp_err(I, s->pos, TSL_ERR_RUNTIME, "mbar_init: barrier %s[%s] is initialised again while in use (%s)",
                              in->args[0].v->name, coords[i], interp_hop_bar_state(I, b, bs, sizeof bs));
        }
        hop_bar *r = &h->bars[b];
        int *loads = r->loads, cap = r->caploads;
        memset(r, 0, sizeof *r);
        r->loads = loads;
        r->caploads = cap;
        r->off = offs[i];
        r->name = in->args[0].v->name;
        memcpy(r->coord, coords[i], sizeof r->coord);
        r->coord[sizeof r->coord - 1] = 0;
        r->init = 1;
        r->init_task = I->task;
        r->init_clock = I->sm.tasks[I->task].vc.c[I->task];
        r->init_csync = I->csync;
        r->count = r->pending = count;
    }
    return TSL_OK;
}

/* Land one TMA load (its barrier's phase completes). */
static tsl_status land(interp *I, hop_load *l, uint32_t phase)
{
    for (int64_t e = 0; e < l->n; e++) {
        imem_hazard hz = imem_tma_land(&I->sm, l->offs[e], (size_t)l->eb, l->bar, phase, l->data + e * l->eb);
        if (hz) {
            char subj[96], tn[64];
            snprintf(subj, sizeof subj, "the TMA load of %s", interp_task_name(I, l->task, tn, sizeof tn));
            return byte_hazard(I, l->pos, hz, subj, l->name, l->t, I->sm.why.off, 1);
        }
    }
    free(l->offs);
    free(l->data);
    l->offs = NULL;
    l->data = NULL;
    return TSL_OK;
}

/* Complete barrier b's phase if nothing is pending. */
static tsl_status bar_check(interp *I, int b)
{
    hop_bar *r = &I->hop->bars[b];
    if (r->pending || r->tx) return TSL_OK;
    for (int i = 0; i < r->nloads; i++) {
        tsl_status st = land(I, &I->hop->loads[r->loads[i]], r->phase);
        if (st) return st;
    }
    r->nloads = 0;
    uint32_t *bc = &r->acc.c[IMEM_VC_BAR(b)];
    if (*bc < r->phase + 1) *bc = r->phase + 1;
    r->done[r->phase & 1] = r->acc;
    memset(&r->acc, 0, sizeof r->acc);
    r->phase++;
    r->pending = r->count;
    r->tx = 0;
    I->hop->completed = 1;
    return TSL_OK;
}

static tsl_status exec_mbar_arrive(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    int b, peer = -1;
    tsl_status st = in->cta ? interp_cluster_peer(I, s->pos, "mbar_arrive", in->cta, &peer) : TSL_OK;
    if (st || (st = bar_use(I, &in->args[0], "mbar_arrive", peer, &b))) return st;
    hop_bar *r = &I->hop->bars[b];
    if (r->pending <= 0) {
        char bn[96], bs[128];
        return interp_err(I, s->pos, TSL_ERR_RUNTIME, "mbar_arrive: %s has no arrival left to take (%s; it expects %lld per phase)",
                          interp_hop_bar_name(I, b, bn, sizeof bn), interp_hop_bar_state(I, b, bs, sizeof bs),
                          (long long)r->count);
    }
    r->tx += in->bytes;
    imem_release(&I->sm, &r->acc);
    r->pending--;
    return bar_check(I, b);
}

static tsl_status exec_mbar_wait(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    int b;
    int64_t parity;
    tsl_status st = bar_use(I, &in->args[0], "mbar_wait", -1, &b);
    if (st || (st = interp_eval_int(I, in->args[1].scalar, &parity))) return st;
    if (parity != 0 && parity != 1)
        return interp_err(I, in->args[1].pos, TSL_ERR_RUNTIME, "mbar_wait: parity %lld is not 0 or 1", (long long)parity);
    hop_bar *r = &I->hop->bars[b];
    if (interp_hop_bar_ready(I, b, (int)parity)) {
        if (r->phase) imem_acquire(&I->sm, &r->done[parity]);
        return TSL_OK;
    }
    if (I->task) { /* the scheduler runs the others, then this again */
        I->hop->blocked = 1;
        I->hop->block_bar = b;
        I->hop->block_parity = (int)parity;
        return TSL_OK;
    }
    char bn[96], bs[128];
    return interp_err(I, s->pos, TSL_ERR_RUNTIME,
                      "deadlock: the block waits on %s for parity %lld, which is in %s, and nothing else runs",
                      interp_hop_bar_name(I, b, bn, sizeof bn), (long long)parity, interp_hop_bar_state(I, b, bs, sizeof bs));
}

/* ---- TMA ------------------------------------------------------------------------------ */

/* Can cuTensorMapEncodeTiled describe global tensor g? The checks and
 * words of the runtime's (rt_cuda_tmap_encode): rank 1..5, a 16-byte
 * aligned address, the last dimension contiguous, every other stride a
 * multiple of 16 bytes below 2^40. */
static tsl_status tma_global_ok(interp *I, size_t pos, const char *opn, const char *name, const rt_tensor *g)
{
    int64_t eb = (int64_t)interp_dt_bytes(g->tdt);
    uintptr_t ptr = (uintptr_t)g->gdata;
    if (g->rank < 1 || g->rank > 5)
        return interp_err(I, pos, TSL_ERR_RUNTIME, "%s: tensor '%s': no TMA tensor map for a rank-%d tensor of this dtype",
                          opn, name, g->rank);
    if (ptr % 16)
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "%s: tensor '%s': TMA needs a 16-byte aligned address (it is %llu bytes past one)", opn, name,
                          (unsigned long long)(ptr % 16));
    if (g->gstride[g->rank - 1] != 1 && g->dims[g->rank - 1] > 1)
        return interp_err(I, pos, TSL_ERR_RUNTIME, "%s: tensor '%s': TMA needs its last dimension contiguous (stride %lld)",
                          opn, name, (long long)g->gstride[g->rank - 1]);
    for (int d = g->rank - 2; d >= 0; d--) {
        int64_t bytes = g->gstride[d] * eb;
        if (bytes % 16 || bytes < 0 || bytes >= ((int64_t)1 << 40))
            return interp_err(I, pos, TSL_ERR_RUNTIME,
                              "%s: tensor '%s': TMA needs each row stride to be a multiple of 16 bytes (dimension %d: "
                              "%lld bytes)", opn, name, d, (long long)bytes);
    }
    return TSL_OK;
}

/* The box of a TMA copy: the shared side's trailing dims after the leading
 * ones its index fixes (S or S[i, ...]). */
static tsl_status tma_box(interp *I, const tile_operand *so, const rt_view *sv, const char *opn, int *lead, int *trank,
                          int64_t *box, int64_t *n)
{
    *lead = so->nsteps == 1 && so->steps[0].kind == TILE_STEP_INDEX ? so->steps[0].n : 0;
    if (*lead >= sv->rank)
        return interp_err(I, so->pos, TSL_ERR_SHAPE, "%s: %d indices leave nothing of '%s'", opn, *lead, sv->name);
    *trank = sv->rank - *lead;
    *n = 1;
    for (int i = 0; i < *trank; i++) {
        int d = *lead + i;
        box[i] = sv->ext[d] >= 0 ? sv->ext[d] : sv->t->dims[d];
        *n *= box[i];
    }
    return TSL_OK;
}

static char *global_ptr(const rt_tensor *g, const int64_t *c)
{
    int64_t e = 0;
    for (int i = 0; i < g->rank; i++) e += c[i] * g->gstride[i];
    return g->gdata + e * (int64_t)interp_dt_bytes(g->tdt);
}

/* Element e of a box (row-major) as the shared coordinate sc and the
 * global coordinate gc. 0 if the box does not fit the global view. */
static int box_elem(const rt_view *sv, const rt_view *gv, int lead, int trank, const int64_t *box, int64_t e,
                    int64_t *sc, int64_t *gc)
{
    int64_t tc[IMAX_RANK], vs[IMAX_RANK], vg[IMAX_RANK], r = e;
    for (int i = trank - 1; i >= 0; i--) {
        tc[i] = r % box[i];
        r /= box[i];
    }
    for (int i = 0; i < sv->rank; i++) vs[i] = i < lead ? 0 : tc[i - lead];
    interp_view_map(sv, vs, sc);
    if (!interp_view_coord(gv, tc, trank, vg)) return 0;
    interp_view_map(gv, vg, gc);
    return 1;
}

/* One destination of a TMA load: the box (element offsets in the issuing
 * block, data read at issue) into block rank `rank` (-1: the issuing
 * block), counted on its barrier b. */
static tsl_status tma_land_at(interp *I, const tile_stmt *s, const rt_view *sv, const rt_view *gv, int lead, int trank,
                              const int64_t *box,
                              const uint32_t *offs, const uint8_t *data, int64_t n, int eb, int rank, int b)
{
    struct ihop *h = I->hop;
    if (grow((void **)&h->loads, h->nloads, &h->caploads, sizeof *h->loads) ||
        grow((void **)&h->bars[b].loads, h->bars[b].nloads, &h->bars[b].caploads, sizeof(int)))
        return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    int id = h->nloads++;
    hop_load *l = &h->loads[id];
    *l = (hop_load){.pos = s->pos, .task = I->task, .bar = b, .name = sv->name, .t = sv->t, .n = n, .eb = eb};
    l->offs = malloc((size_t)(n ? n : 1) * sizeof *l->offs);
    l->data = malloc((size_t)(n ? n : 1) * (size_t)eb);
    if (!l->offs || !l->data) return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    memcpy(l->data, data, (size_t)n * (size_t)eb);
    char subj[96];
    op_subject(I, "TMA load", subj, sizeof subj);
    if (rank >= 0 && rank != I->crank) {
        size_t k = strlen(subj);
        snprintf(subj + k, sizeof subj - k, " into block rank %d", rank);
    }
    for (int64_t e = 0; e < n; e++) {
        l->offs[e] = (uint32_t)(rank >= 0 ? interp_peer_off(I, offs[e], rank) : offs[e]);
        imem_hazard hz = imem_tma_issue(&I->sm, l->offs[e], (size_t)eb, id);
        if (hz) {
            int64_t sc[IMAX_RANK], gc[IMAX_RANK];
            box_elem(sv, gv, lead, trank, box, e, sc, gc);
            return interp_hazard_ext(I, s->pos, hz, subj, sv->name, sc, sv->t->rank, 1);
        }
    }
    hop_bar *r = &h->bars[b];
    r->loads[r->nloads++] = id;
    r->tx -= n * eb;
    return bar_check(I, b);
}

static tsl_status exec_tma_load(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_view gv, sv;
    int b, lead, trank;
    int64_t box[IMAX_RANK], n, mask = 0;
    tsl_status st;
    if ((st = interp_view_of(I, &in->args[0], &gv)) || (st = bar_use(I, &in->args[1], "tma_load", -1, &b))) return st;
    if (!in->has_dst) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "tma_load needs '-> destination'");
    if ((st = interp_view_of(I, &in->dst, &sv))) return st;
    if (gv.t->space != TILE_GLOBAL || sv.t->space != TILE_SHARED)
        return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "tma_load copies global -> shared");
    if ((st = tma_global_ok(I, s->pos, "tma_load", gv.name, gv.t)) ||
        (st = tma_box(I, &in->dst, &sv, "tma_load", &lead, &trank, box, &n)))
        return st;
    if (in->mcast) {
        if (!I->cl) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "tma_load ... multicast outside a cluster kernel");
        if ((st = interp_eval_int(I, in->mcast, &mask))) return st;
        if (mask < 1 || mask >= ((int64_t)1 << I->csize))
            return interp_err(I, in->mcast->pos, TSL_ERR_RUNTIME,
                              "tma_load: multicast mask %lld names no block or one past the cluster's %d", (long long)mask,
                              I->csize);
    }
    int eb = (int)interp_dt_bytes(sv.t->tdt);
    uint32_t *offs = malloc((size_t)(n ? n : 1) * sizeof *offs);
    uint8_t *data = malloc((size_t)(n ? n : 1) * (size_t)eb);
    if (!offs || !data) {
        free(offs);
        free(data);
        return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    }
    for (int64_t e = 0; e < n && !st; e++) {
        int64_t sc[IMAX_RANK], gc[IMAX_RANK];
        if (!box_elem(&sv, &gv, lead, trank, box, e, sc, gc)) {
            st = interp_err(I, s->pos, TSL_ERR_SHAPE, "tma_load: the box does not fit '%s'", gv.name);
        } else if (!interp_in_dims(sv.t, sc)) {
            char cs[128];
            interp_coord_str(cs, sizeof cs, sc, sv.t->rank);
            st = interp_err(I, s->pos, TSL_ERR_BOUNDS, "tma_load: %s[%s] is outside its shape", sv.name, cs);
        } else {
            if (interp_in_dims(gv.t, gc)) memcpy(data + e * eb, global_ptr(gv.t, gc), (size_t)eb);
            else memset(data + e * eb, 0, (size_t)eb);
            offs[e] = (uint32_t)interp_shared_off(sv.t, sc);
        }
    }
    /* multicast: the box and its bytes reach every block of the mask,
     * each counted on that block's barrier at the same place */
    for (int r = 0; r < (mask ? I->csize : 1) && !st; r++) {
        if (mask && !(mask >> r & 1)) continue;
        int br = b;
        if (mask && r != I->crank) {
            tile_expr re = {.kind = TILE_E_INT, .i = r, .pos = s->pos};
            int peer;
            if (!(st = interp_cluster_peer(I, s->pos, "tma_load", &re, &peer)))
                st = bar_use(I, &in->args[1], "tma_load", peer, &br);
        }
        if (!st) st = tma_land_at(I, s, &sv, &gv, lead, trank, box, offs, data, n, eb, mask ? r : -1, br);
    }
    free(offs);
    free(data);
    return st;
}

static tsl_status exec_tma_store(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    struct ihop *h = I->hop;
    rt_view gv, sv;
    int lead, trank;
    int64_t box[IMAX_RANK], n;
    tsl_status st;
    if (!in->has_dst) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "tma_store needs '-> destination'");
    if ((st = interp_view_of(I, &in->args[0], &sv)) || (st = interp_view_of(I, &in->dst, &gv))) return st;
    if (gv.t->space != TILE_GLOBAL || sv.t->space != TILE_SHARED)
        return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "tma_store copies shared -> global");
    if ((st = tma_global_ok(I, s->pos, "tma_store", gv.name, gv.t)) ||
        (st = tma_box(I, &in->args[0], &sv, "tma_store", &lead, &trank, box, &n)))
        return st;
    int eb = (int)interp_dt_bytes(sv.t->tdt);
    if (grow((void **)&h->areads, h->nareads, &h->capareads, sizeof *h->areads))
        return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    int id = h->nareads++;
    hop_aread *r = &h->areads[id];
    *r = (hop_aread){.kind = HOP_TMA_STORE, .task = I->task, .live = 1, .group = -1, .pos = s->pos, .eb = eb};
    r->offs = malloc((size_t)(n ? n : 1) * sizeof *r->offs);
    if (!r->offs) return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    char subj[96];
    op_subject(I, "tma_store", subj, sizeof subj);
    for (int64_t e = 0; e < n; e++) {
        int64_t sc[IMAX_RANK], gc[IMAX_RANK];
        unsigned char buf[16];
        if (!box_elem(&sv, &gv, lead, trank, box, e, sc, gc))
            return interp_err(I, s->pos, TSL_ERR_SHAPE, "tma_store: the box does not fit '%s'", gv.name);
        if (!interp_in_dims(sv.t, sc)) {
            char cs[128];
            interp_coord_str(cs, sizeof cs, sc, sv.t->rank);
            return interp_err(I, s->pos, TSL_ERR_BOUNDS, "tma_store: %s[%s] is outside its shape", sv.name, cs);
        }
        r->offs[e] = (uint32_t)interp_shared_off(sv.t, sc);
        imem_hazard hz = imem_async_read(&I->sm, r->offs[e], (size_t)eb, id, buf);
        if (hz) {
            r->n = e; /* release what it holds */
            return interp_hazard_ext(I, s->pos, hz, subj, sv.name, sc, sv.t->rank, 0);
        }
        r->n = e + 1;
        if (interp_in_dims(gv.t, gc)) memcpy(global_ptr(gv.t, gc), buf, (size_t)eb);
    }
    return TSL_OK;
}

/* Close the running task's open group of `kind`; complete all but `keep`
 * of its committed groups (keep < 0: only close). */
static tsl_status wgmma_complete(interp *I, hop_aread *r);

static tsl_status async_groups(interp *I, hop_aread_kind kind, int keep)
{
    struct ihop *h = I->hop;
    hop_task *T = &h->tasks[I->task];
    int *next = kind == HOP_WGMMA ? &T->wg_group : &T->bulk_group;
    if (keep < 0) {
        for (int i = 0; i < h->nareads; i++) {
            hop_aread *r = &h->areads[i];
            if (r->live && r->kind == kind && r->task == I->task && r->group < 0) r->group = *next;
        }
        (*next)++;
        return TSL_OK;
    }
    int upto = *next - keep;
    for (int i = 0; i < h->nareads; i++) {
        hop_aread *r = &h->areads[i];
        if (!r->live || r->kind != kind || r->task != I->task || r->group < 0 || r->group >= upto) continue;
        if (kind == HOP_WGMMA) {
            tsl_status st = wgmma_complete(I, r);
            if (st) return st;
        }
        for (int64_t e = 0; e < r->n; e++) imem_async_done(&I->sm, r->offs[e], (size_t)r->eb);
        free(r->offs);
        r->offs = NULL;
        r->live = 0;
    }
    return TSL_OK;
}

/* ---- wgmma ------------------------------------------------------------------------------ */

/* Byte offset, before the swizzle and from the k step's start, of operand
 * element (mn, k), k < 16, in the PTX ISA's canonical layouts (element
 * units: R = swizzle bytes / element size):
 *   K-major:  k + (mn % 8) R + (mn / 8) SBO
 *   MN-major: mn % R + (mn / R) LBO + (k % 8) R + (k / 8) SBO */
static int64_t canonical(const tile_wgmma_smem *d, int64_t eb, int64_t mn, int64_t k)
{
    int64_t R = d->swizzle_bytes / eb;
    if (!d->mn_major) return (k + (mn % 8) * R) * eb + (mn / 8) * d->sbo;
    return (mn % R + (k % 8) * R) * eb + (mn / R) * d->lbo + (k / 8) * d->sbo;
}

/* Swizzle<b,4,3> on a shared byte address (the block's shared memory is
 * 1024-aligned): bits [7, 7+b) are xored into bits [4, 4+b). */
static int64_t hw_swizzle(int64_t addr, int swizzle_bytes)
{
    int b = swizzle_bytes == 32 ? 1 : swizzle_bytes == 64 ? 2 : 3;
    return addr ^ (((addr >> 7) & ((1 << b) - 1)) << 4);
}

/* A shared operand's descriptors: the byte address of the start of each
 * k16 step (the unswizzled address of the operand's element (0, 16 s), as
 * the generator computes it) and the descriptor fields. kdim: the tensor
 * dim K runs along. */
typedef struct wg_desc {
    tile_wgmma_smem sm;
    int64_t start[16];
} wg_desc;

static tsl_status wg_operand(interp *I, const tile_operand *o, const rt_view *vw, int mn_dim, int kdim,
                             int64_t mn_ext, int64_t K, wg_desc *d)
{
    char why[256];
    const tile_value *v = o->v;
    if (!tile_wgmma_smem_of(&v->type, mn_dim, mn_ext, K, &d->sm, why, sizeof why))
        return interp_err(I, o->pos, TSL_ERR_SEMANTIC, "wgmma: the operand '%s' is not a wgmma shared layout: %s", v->name,
                          why);
    if (K / 16 > 16) return interp_err(I, o->pos, TSL_ERR_UNAVAILABLE, "wgmma: K = %lld is over 256", (long long)K);
    const rt_tensor *t = vw->t;
    layout plain = *t->slay;
    plain.sw = (layout_swizzle){0, 0, 0};
    int64_t c0[IMAX_RANK], vc[IMAX_RANK] = {0}, eb = (int64_t)interp_dt_bytes(t->tdt);
    interp_view_map(vw, vc, c0);
    for (int64_t s = 0; s < K / 16; s++) {
        int64_t c[IMAX_RANK];
        memcpy(c, c0, sizeof c);
        c[kdim] += 16 * s;
        d->start[s] = (int64_t)t->soff + layout_eval_coord(&plain, c, t->rank) * eb;
    }
    return TSL_OK;
}

static uint32_t wg_addr(const wg_desc *d, int64_t eb, int64_t mn, int64_t k)
{
    return (uint32_t)hw_swizzle(d->start[k / 16] + canonical(&d->sm, eb, mn, k % 16), d->sm.swizzle_bytes);
}

/* The register fragments of wgmma .m64nNk16 come from the target table
 * (src/target/sm90.c; PTX ISA, checked in the target suite): D register i
 * of thread t is the m64n256k16 row's D fragment (the same for every N at
 * i < N/2: the N/8 column blocks are the outermost factor); A register i
 * (K/2 per thread) is k step s = i / 8's register i % 8 of the row's A
 * fragment, 16 s columns along. */
static const target_atom *wg_row(void)
{
    target_query q = target_query_any();
    q.n = 256;
    const target_atom *a = NULL;
    target_atom_find(&target_sm90a, TARGET_K_WGMMA, &q, &a, 1);
    return a;
}

static void frag_d(int64_t t, int64_t i, int64_t *row, int64_t *col)
{
    target_frag_coord(wg_row(), TARGET_D, (int)t, (int)i, row, col);
}

static void frag_a(int64_t t, int64_t i, int64_t *row, int64_t *col)
{
    target_frag_coord(wg_row(), TARGET_A, (int)t, (int)(i % 8), row, col);
    *col += 16 * (i / 8);
}

static tsl_status wg_reg(interp *I, const tile_operand *o, rt_tensor **out)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || !I->slots[o->v->id].t ||
        I->slots[o->v->id].t->space != TILE_REGISTER || o->nsteps)
        return interp_err(I, o->pos, TSL_ERR_SEMANTIC, "wgmma: this operand must be a whole register tensor");
    *out = I->slots[o->v->id].t;
    return TSL_OK;
}

static tsl_status fence_check(interp *I, size_t pos, const rt_tensor *t, const char *name)
{
    if (t->wseq <= I->hop->tasks[I->task].fence_seq) return TSL_OK;
    char subj[96];
    return interp_err(I, pos, TSL_ERR_RUNTIME,
                      "hazard: %s uses '%s', which another instruction wrote after the last wgmma_fence (missing "
                      "wgmma_fence?)", op_subject(I, "wgmma", subj, sizeof subj), name);
}

static tsl_status exec_wgmma(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    struct ihop *h = I->hop;
    rt_tensor *A = NULL, *C = NULL, *D = NULL;
    rt_view av, bv;
    tsl_status st;
    if (I->nthreads != 128)
        return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "wgmma runs on a warpgroup of 128 threads, not %d", I->nthreads);
    if ((st = wg_reg(I, &in->args[2], &C))) return st;
    const char *cname = in->args[2].v->name;
    if (C->rank != 2 || C->dims[0] != 64 || C->dims[1] % 8 || C->dims[1] > 256 || C->nthreads != 128 ||
        C->nlocals * 2 != C->dims[1])
        return interp_err(I, in->args[2].pos, TSL_ERR_SHAPE,
                          "wgmma: the accumulator '%s' must be [64, N] held as N/2 registers by each of 128 threads", cname);
    int64_t N = C->dims[1], K;
    if (in->result) {
        if ((st = interp_tensor_of(I, in->result, &D))) return st;
    } else if (in->has_dst) {
        if ((st = wg_reg(I, &in->dst, &D))) return st;
    } else {
        return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "wgmma needs a result or '-> accumulator'");
    }
    if (D->rank != 2 || D->dims[0] != 64 || D->dims[1] != N || D->nthreads != 128 || D->nlocals != C->nlocals)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "wgmma: the result must be shaped and laid out like '%s'", cname);
    if ((st = fence_check(I, s->pos, C, cname))) return st;
    if ((st = interp_view_of(I, &in->args[1], &bv))) return st;
    if (bv.t->space != TILE_SHARED || bv.rank < 2)
        return interp_err(I, in->args[1].pos, TSL_ERR_SEMANTIC, "wgmma: B must be a shared tensor of rank >= 2");
    int rb = bv.rank;
    K = bv.t->dims[rb - 2];
    if (K < 16 || K % 16)
        return interp_err(I, in->args[1].pos, TSL_ERR_SHAPE, "wgmma: K = %lld is not a positive multiple of 16",
                          (long long)K);
    wg_desc db, da;
    if ((st = wg_operand(I, &in->args[1], &bv, rb - 1, rb - 2, N, K, &db))) return st;
    const tile_value *av_v = in->args[0].v;
    int a_shared = av_v && av_v->kind == TILE_V_TENSOR && av_v->type.space == TILE_SHARED;
    if (a_shared) {
        if ((st = interp_view_of(I, &in->args[0], &av))) return st;
        if (av.rank < 2) return interp_err(I, in->args[0].pos, TSL_ERR_SEMANTIC, "wgmma: A must have rank >= 2");
        if ((st = wg_operand(I, &in->args[0], &av, av.rank - 2, av.rank - 1, 64, K, &da))) return st;
    } else {
        if ((st = wg_reg(I, &in->args[0], &A))) return st;
        if (A->rank != 2 || A->dims[0] != 64 || A->dims[1] != K || A->nthreads != 128 || A->nlocals * 2 != K)
            return interp_err(I, in->args[0].pos, TSL_ERR_SHAPE,
                              "wgmma: the register A '%s' must be [64, %lld] held as %lld registers by each of 128 threads",
                              av_v->name, (long long)K, (long long)K / 2);
        if (A->wg_busy) return interp_wgmma_busy(I, in->args[0].pos, av_v->name, 0);
        if ((st = fence_check(I, s->pos, A, av_v->name))) return st;
    }
    tile_dtype in_dt = bv.t->dt;
    int64_t eb = (int64_t)interp_dt_bytes(bv.t->tdt), na = a_shared ? 64 * K : 0;
    if (grow((void **)&h->areads, h->nareads, &h->capareads, sizeof *h->areads))
        return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    int id = h->nareads++;
    hop_aread *r = &h->areads[id];
    *r = (hop_aread){.kind = HOP_WGMMA, .task = I->task, .live = 1, .group = -1, .pos = s->pos, .eb = (int)eb,
                     .a = A, .c = C, .d = D, .na = na, .K = K, .N = N, .in_dt = in_dt};
    r->offs = malloc((size_t)(na + K * N) * sizeof *r->offs);
    if (!r->offs) return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    for (int64_t m = 0; m < 64 && a_shared; m++)
        for (int64_t k = 0; k < K; k++) r->offs[m * K + k] = wg_addr(&da, eb, m, k);
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) r->offs[na + k * N + n] = wg_addr(&db, eb, n, k);
    char subj[96];
    op_subject(I, "wgmma", subj, sizeof subj);
    for (int64_t e = 0; e < na + K * N; e++) {
        imem_hazard hz = imem_async_read(&I->sm, r->offs[e], (size_t)eb, id, NULL);
        if (hz) {
            r->n = e;
            const rt_view *v = e < na ? &av : &bv;
            return byte_hazard(I, s->pos, hz, subj, v->name, v->t, r->offs[e], 0);
        }
        r->n = e + 1;
    }
    C->wg_busy++;
    if (D != C) D->wg_busy++;
    if (A) A->wg_busy++;
    return TSL_OK;
}

/* D = A B + C now, reading the held shared bytes through the descriptor
 * addresses; f16/bf16 products accumulated in f32 within each k16 step,
 * the sum rounded to D's dtype after each step. */
static tsl_status wgmma_complete(interp *I, hop_aread *r)
{
    int64_t K = r->K, N = r->N;
    tsl_dtype tdt;
    if (tile_dtype_to_tsl(r->in_dt, &tdt))
        return interp_err(I, r->pos, TSL_ERR_UNAVAILABLE, "wgmma: unsupported operand dtype");
    float *a = malloc((size_t)(64 * K) * sizeof *a), *bt = malloc((size_t)(K * N) * sizeof *bt);
    if (!a || !bt) {
        free(a);
        free(bt);
        return interp_err(I, r->pos, TSL_ERR_NOMEM, "out of memory in wgmma");
    }
    const uint8_t *sm = I->sm.data;
    if (r->na) {
        for (int64_t e = 0; e < 64 * K; e++) a[e] = (float)dtype_load(tdt, sm + r->offs[e]);
    } else {
        for (int64_t t = 0; t < 128; t++)
            for (int64_t i = 0; i < K / 2; i++) {
                int64_t row, col;
                frag_a(t, i, &row, &col);
                a[row * K + col] = (float)r->a->regs[t * r->a->nlocals + i];
            }
    }
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) bt[n * K + k] = (float)dtype_load(tdt, sm + r->offs[r->na + k * N + n]);
    rt_tensor *C = r->c, *D = r->d;
    for (int64_t t = 0; t < 128; t++)
        for (int64_t i = 0; i < N / 2; i++) {
            int64_t row, col;
            frag_d(t, i, &row, &col);
            float acc = (float)C->regs[t * C->nlocals + i];
            const float *ar = a + row * K, *bc = bt + col * K;
            /* one hardware step per k16: an f16 accumulator holds its
             * sum in f16 between steps */
            for (int64_t k0 = 0; k0 < K; k0 += 16) {
                for (int64_t k = k0; k < k0 + 16 && k < K; k++) acc += ar[k] * bc[k];
                acc = (float)interp_round(D->dt, acc);
            }
            D->regs[t * D->nlocals + i] = interp_round(D->dt, acc);
        }
    free(a);
    free(bt);
    C->wg_busy--;
    if (D != C) D->wg_busy--;
    if (r->a) r->a->wg_busy--;
    return TSL_OK;
}

/* ---- dispatch -------------------------------------------------------------------------- */

static tsl_status wait_count(interp *I, const tile_instr *in, int *out)
{
    int64_t n = 0;
    tsl_status st = in->nargs && in->args[0].scalar ? interp_eval_int(I, in->args[0].scalar, &n) : TSL_OK;
    if (!st && (n < 0 || n > 7))
        st = interp_err(I, in->args[0].pos, TSL_ERR_RUNTIME, "%s: count %lld is out of range (0..7)",
                        tile_op_info_of(in->op)->name, (long long)n);
    *out = (int)n;
    return st;
}

tsl_status interp_exec_hopper(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (!I->hop) return interp_err(I, s->pos, TSL_ERR_INTERNAL, "Hopper state missing");
    int n;
    tsl_status st;
    switch (in->op) {
    case TILE_I_MBAR_INIT: return exec_mbar_init(I, s);
    case TILE_I_MBAR_ARRIVE: return exec_mbar_arrive(I, s);
    case TILE_I_MBAR_WAIT: return exec_mbar_wait(I, s);
    case TILE_I_TMA_LOAD: return exec_tma_load(I, s);
    case TILE_I_TMA_STORE: return exec_tma_store(I, s);
    case TILE_I_BULK_COMMIT: return async_groups(I, HOP_TMA_STORE, -1);
    case TILE_I_BULK_WAIT:
        if ((st = wait_count(I, in, &n))) return st;
        return async_groups(I, HOP_TMA_STORE, n);
    case TILE_I_FENCE_ASYNC: imem_fence_async(&I->sm); return TSL_OK;
    case TILE_I_CLUSTER_SYNC: /* a block barrier too; interp_cluster.c counts it */
        if (!I->cl) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "cluster_sync outside a cluster kernel");
        imem_sync(&I->sm);
        return TSL_OK;
    case TILE_I_WGMMA: return exec_wgmma(I, s);
    case TILE_I_WGMMA_FENCE: I->hop->tasks[I->task].fence_seq = ++I->seq; return TSL_OK;
    case TILE_I_WGMMA_COMMIT: return async_groups(I, HOP_WGMMA, -1);
    case TILE_I_WGMMA_WAIT:
        if ((st = wait_count(I, in, &n))) return st;
        return async_groups(I, HOP_WGMMA, n);
    default: return interp_err(I, s->pos, TSL_ERR_INTERNAL, "not a Hopper instruction");
    }
}

/* The running task finishes: nothing of it may still be in flight. */
tsl_status interp_hop_task_end(interp *I, size_t pos)
{
    if (!I->hop) return TSL_OK;
    int nwg = 0, nst = 0;
    for (int i = 0; i < I->hop->nareads; i++) {
        const hop_aread *r = &I->hop->areads[i];
        if (r->live && r->task == I->task) *(r->kind == HOP_WGMMA ? &nwg : &nst) += 1;
    }
    char tn[64];
    interp_task_name(I, I->task, tn, sizeof tn);
    if (nwg)
        return interp_err(I, pos, TSL_ERR_RUNTIME, "%s finishes with %d wgmma%s in flight (missing wgmma_commit/wgmma_wait?)",
                          tn, nwg, nwg == 1 ? "" : "s");
    if (nst)
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                          "%s finishes with %d tma_store%s still reading shared memory (missing bulk_commit/bulk_wait?)",
                          tn, nst, nst == 1 ? "" : "s");
    return TSL_OK;
}
