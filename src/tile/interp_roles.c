/* interp_roles.c — `warpgroups` in the tile interpreter (docs/tile-interp.md
 * "Warpgroups"): every instance of a role (a warpgroup of 128 threads) is
 * a task with its own register tensors and scalars for the values its body
 * defines, over the block's common shared memory. The tasks run
 * interleaved by a deterministic cooperative scheduler:
 *   - round robin in instance order; a task runs until it blocks on an
 *     mbar_wait, finishes, completes a barrier phase (then the others get
 *     to see it at once) or has run QUANTUM statements;
 *   - with opts.shuffle_blocks, the next task and the quantum (1..2Q) are
 *     drawn from the seed instead, so other interleavings get tried;
 *   - when every unfinished task is blocked, the run stops with a located
 *     "deadlock:" error naming each blocked instance, its barrier, the
 *     parity it waits for and the barrier's state — never a hang.
 * Each task walks its body with an explicit stack of frames (blocks,
 * for / while iterations), so it can stop at any statement and resume;
 * statements other than control flow run through interp_exec_stmt.
 * The memory model of the instances (per-task barriers, ordering through
 * mbarriers) is interp_mem.c's. */
#include "tile/interp_hop.h"

#define QUANTUM 16

/* ---- does the kernel need the task model? ------------------------------------ */

int interp_uses_hopper(const tile_block *b) { return tile_block_uses_hopper(b); }

int interp_instances(const tile_block *b)
{
    int n = 0;
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_WARPGROUPS)
            for (int r = 0; r < s->nroles; r++) n += s->roles[r].count;
        n += interp_instances(s->body) + interp_instances(s->els);
    }
    return n;
}

/* ---- tasks -------------------------------------------------------------------- */

typedef struct rframe {
    const tile_block *b;
    int i;                  /* the next statement */
    const tile_stmt *loop;  /* the for / while this block is the body of; NULL */
    int64_t iv, hi, step;   /* for: the variable's value, bound, step */
    int64_t n;              /* while: iterations */
} rframe;

typedef struct rtask {
    int id;                 /* the imem / hop task: 1.. */
    int rank;               /* its block's rank in the cluster (0 without one) */
    const tile_role *role;
    int inst;
    int64_t tbase;
    rt_slot *slots;         /* its own copy of the block's values */
    rt_tensor *tensors;     /* storage of the values its body defines */
    rframe *fr;
    int nfr, capfr;
    int done;
    const tile_stmt *wait;  /* the mbar_wait it is blocked at; NULL */
    int wait_bar, wait_parity;
} rtask;

typedef struct rsched {
    rtask *t;
    int n;
    /* the block's own state, restored when the warpgroups finish */
    rt_slot *slots;
    rt_tensor *tensors;
    int nthreads;
    int rank;
    uint64_t seed;
} rsched;

static void enter(interp *I, const rtask *t)
{
    if (I->cl) interp_cluster_enter(I, t->rank);
    I->slots = t->slots;
    I->tensors = t->tensors;
    I->nthreads = 128;
    I->tbase = t->tbase;
    I->task = t->id;
    I->cur_thread = -1;
    imem_task_switch(&I->sm, t->id);
}

static void leave(interp *I, const rsched *S)
{
    if (I->cl) interp_cluster_enter(I, S->rank);
    I->slots = S->slots;
    I->tensors = S->tensors;
    I->nthreads = S->nthreads;
    I->tbase = 0;
    I->task = 0;
    I->cur_thread = -1;
    imem_task_switch(&I->sm, 0);
}

static tsl_status push(interp *I, rtask *t, size_t pos, rframe f)
{
    if (t->nfr == t->capfr) {
        int nc = t->capfr ? 2 * t->capfr : 8;
        rframe *r = realloc(t->fr, (size_t)nc * sizeof *r);
        if (!r) return interp_err(I, pos, TSL_ERR_NOMEM, "out of memory");
        t->fr = r;
        t->capfr = nc;
    }
    t->fr[t->nfr++] = f;
    return TSL_OK;
}

/* At the end of a frame's block: the next iteration of its loop, or pop. */
static tsl_status frame_end(interp *I, rtask *t)
{
    rframe *f = &t->fr[t->nfr - 1];
    const tile_stmt *l = f->loop;
    tsl_status st;
    if (l && l->kind == TILE_S_FOR) {
        f->iv += f->step;
        if (f->iv < f->hi) {
            I->slots[l->v->id].ival = f->iv;
            f->i = 0;
            return TSL_OK;
        }
    } else if (l && l->kind == TILE_S_WHILE) {
        int64_t v;
        if ((st = interp_eval_int(I, l->e, &v))) return st;
        if (v) {
            if (++f->n > ((int64_t)1 << 32))
                return interp_err(I, l->pos, TSL_ERR_RUNTIME, "while: more than 2^32 iterations");
            f->i = 0;
            return TSL_OK;
        }
    }
    t->nfr--;
    return TSL_OK;
}

/* Run one statement of t (in its context). *ran: it ran (did not block). */
static tsl_status step(interp *I, rtask *t, int *ran)
{
    *ran = 0;
    rframe *f = &t->fr[t->nfr - 1];
    const tile_stmt *s = f->b->items[f->i];
    int64_t lo, hi, stp = 1, v;
    tsl_status st;
    switch (s->kind) {
    case TILE_S_FOR:
        if ((st = interp_eval_int(I, s->lo, &lo)) || (st = interp_eval_int(I, s->hi, &hi)) ||
            (s->step && (st = interp_eval_int(I, s->step, &stp))))
            return st;
        if (stp <= 0) return interp_err(I, s->pos, TSL_ERR_RUNTIME, "for: step %lld is not positive", (long long)stp);
        f->i++;
        *ran = 1;
        if (lo >= hi) return TSL_OK;
        I->slots[s->v->id].ival = lo;
        return push(I, t, s->pos, (rframe){.b = s->body, .loop = s, .iv = lo, .hi = hi, .step = stp});
    case TILE_S_WHILE:
        if ((st = interp_eval_int(I, s->e, &v))) return st;
        f->i++;
        *ran = 1;
        return v ? push(I, t, s->pos, (rframe){.b = s->body, .loop = s}) : TSL_OK;
    case TILE_S_IF:
        if ((st = interp_eval_int(I, s->e, &v))) return st;
        f->i++;
        *ran = 1;
        if (v || s->els) return push(I, t, s->pos, (rframe){.b = v ? s->body : s->els});
        return TSL_OK;
    default:
        break;
    }
    I->hop->blocked = 0;
    if ((st = interp_exec_stmt(I, s))) return st;
    if (I->hop->blocked) {
        t->wait = s;
        t->wait_bar = I->hop->block_bar;
        t->wait_parity = I->hop->block_parity;
        I->hop->tasks[t->id].wait_bar = t->wait_bar;
        return TSL_OK;
    }
    t->wait = NULL;
    I->hop->tasks[t->id].wait_bar = -1;
    f = &t->fr[t->nfr - 1];
    f->i++;
    *ran = 1;
    return TSL_OK;
}

/* Run t for up to `quantum` statements. */
static tsl_status run_task(interp *I, rtask *t, int quantum)
{
    tsl_status st;
    for (int q = 0; q < quantum;) {
        if (!t->nfr) {
            t->done = 1;
            return interp_hop_task_end(I, t->role->pos);
        }
        if (t->fr[t->nfr - 1].i >= t->fr[t->nfr - 1].b->n) {
            if ((st = frame_end(I, t))) return st;
            continue;
        }
        int ran;
        I->hop->completed = 0;
        if ((st = step(I, t, &ran))) return st;
        if (!ran) return TSL_OK; /* blocked */
        q++;
        if (I->hop->completed) return TSL_OK; /* let the waiters see the phase */
    }
    return TSL_OK;
}

static int runnable(const interp *I, const rtask *t)
{
    return !t->done && (!t->wait || interp_hop_bar_ready(I, t->wait_bar, t->wait_parity));
}

/* Every unfinished task is blocked: one error at the first one's wait,
 * naming each with its barrier, the parity it waits for and the state. */
static tsl_status deadlock(interp *I, const rsched *S)
{
    strbuf sb = {0};
    size_t pos = 0;
    int first = 1, ndone = 0;
    for (int i = 0; i < S->n; i++) {
        const rtask *t = &S->t[i];
        if (t->done) {
            ndone++;
            continue;
        }
        char who[64], bn[96], bs[128];
        int line = 0, col = 0;
        if (I->src) diag_line_col(I->src, t->wait->pos, &line, &col);
        if (first) pos = t->wait->pos;
        sb_printf(&sb, "%s%s (line %d) waits on %s for parity %d, which is in %s", first ? "" : "; ",
                  interp_task_name(I, t->id, who, sizeof who), line, interp_hop_bar_name(I, t->wait_bar, bn, sizeof bn),
                  t->wait_parity, interp_hop_bar_state(I, t->wait_bar, bs, sizeof bs));
        first = 0;
    }
    tsl_status st = interp_err(I, pos, TSL_ERR_RUNTIME, "deadlock: every unfinished warpgroup waits on an mbarrier: %s%s",
                               sb_str(&sb), ndone ? " (the others have finished)" : "");
    sb_free(&sb);
    return st;
}

/* Without a cluster_sync after the warpgroups, a block whose instances
 * have all finished exits: its shared memory is gone for the others. */
static void rank_exit(interp *I, const rsched *S, int rank)
{
    for (int i = 0; i < S->n; i++)
        if (S->t[i].rank == rank && !S->t[i].done) return;
    I->cexited[rank] = 1;
}

static tsl_status schedule(interp *I, rsched *S)
{
    int next = 0;
    for (;;) {
        int nrun = 0, cand[IMEM_MAX_TASKS], live = 0;
        for (int i = 0; i < S->n; i++) {
            int j = (next + i) % S->n;
            live += !S->t[j].done;
            if (runnable(I, &S->t[j])) cand[nrun++] = j;
        }
        if (!live) return TSL_OK;
        if (!nrun) return deadlock(I, S);
        int pick = cand[0], quantum = QUANTUM;
        if (I->o->shuffle_blocks) {
            pick = cand[interp_mix(&S->seed) % (uint64_t)nrun];
            quantum = 1 + (int)(interp_mix(&S->seed) % (2 * QUANTUM));
        }
        rtask *t = &S->t[pick];
        enter(I, t);
        tsl_status st = run_task(I, t, quantum);
        leave(I, S);
        if (st) return st;
        if (t->done && I->cl && !I->cfinal) rank_exit(I, S, t->rank);
        next = (pick + 1) % S->n;
    }
}

static void task_free(const interp *I, rtask *t)
{
    if (t->tensors)
        for (int i = 0; i < I->k->nvalues; i++) free(t->tensors[i].regs);
    free(t->tensors);
    free(t->slots);
    free(t->fr);
}

tsl_status interp_exec_warpgroups(interp *I, const tile_stmt *s)
{
    if (I->task)
        return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "warpgroups inside a role");
    int n = 0;
    for (int r = 0; r < s->nroles; r++) n += s->roles[r].count;
    if (n * 128 != I->nthreads)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "warpgroups: the roles have %d warpgroups (%d threads) but the block has %d",
                          n, n * 128, I->nthreads);
    /* every instance of the block (of every block of a cluster) gets its
     * own task id, so messages name the instance that made an access even
     * after it finished */
    int first = I->hop->next_task, nranks = I->cl ? I->csize : 1;
    if (first + n * nranks > I->sm.maxtasks)
        return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE,
                          "warpgroups: the interpreter runs at most %d warpgroup instances per block or cluster",
                          IMEM_MAX_TASKS - 1);
    I->hop->next_task += n * nranks;
    I->hop->live_first = first;
    rsched S = {0};
    S.slots = I->slots;
    S.tensors = I->tensors;
    S.nthreads = I->nthreads;
    S.rank = I->crank;
    S.seed = I->o->seed ^ (uint64_t)(I->bidx[0] * 0x51ed27ULL + I->bidx[1] * 0x2545fULL + I->bidx[2] + 1);
    S.t = calloc((size_t)(n * nranks), sizeof *S.t);
    tsl_status st = S.t ? TSL_OK : interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    size_t nv = (size_t)I->k->nvalues + 1;
    for (int rk = 0, id = first; rk < nranks && !st; rk++) {
        const rt_slot *bslots = I->cl ? I->cl[rk].slots : I->slots;
        for (int r = 0; r < s->nroles && !st; r++)
            for (int j = 0; j < s->roles[r].count && !st; j++, id++) {
                rtask *t = &S.t[S.n++];
                const tile_role *role = &s->roles[r];
                t->id = id;
                t->rank = rk;
                t->role = role;
                t->inst = j;
                t->tbase = (int64_t)(id - first - rk * n) * 128;
                t->slots = malloc(nv * sizeof *t->slots);
                t->tensors = calloc(nv, sizeof *t->tensors);
                if (!t->slots || !t->tensors) {
                    st = interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory");
                    break;
                }
                memcpy(t->slots, bslots, nv * sizeof *t->slots);
                if (role->index) t->slots[role->index->id].ival = j;
                /* values its body defines get the task's own storage when they run */
                hop_task *h = &I->hop->tasks[id];
                *h = (hop_task){.role = role->name, .inst = j, .rank = I->cl ? rk : -1, .wait_bar = -1};
                imem_task_spawn(&I->sm, id, (int)t->tbase);
                st = push(I, t, role->pos, (rframe){.b = role->body});
            }
    }
    if (!st) st = schedule(I, &S);
    leave(I, &S);
    for (int i = 0; i < S.n; i++) task_free(I, &S.t[i]);
    free(S.t);
    return st;
}
