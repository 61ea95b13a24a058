/* interp_mem.c — one block's shared memory for the tile interpreter:
 * bytes with per-byte hazard state, barrier epochs and cp.async groups,
 * and (with tasks) the vector clocks of warpgroup instances, TMA landings
 * and async-proxy reads (the rules are in interp_mem.h). Knows nothing of
 * tensors, layouts or barriers' phases; the interpreter turns a hazard
 * into a message naming the tensor. */
#include <stdlib.h>
#include <string.h>

#include "tile/interp_mem.h"

int imem_init(imem_shared *s, size_t size)
{
    memset(s, 0, sizeof *s);
    s->size = size;
    size_t n = size ? size : 1;
    s->data = malloc(n);
    s->writer = malloc(n * sizeof *s->writer);
    s->wepoch = malloc(n * sizeof *s->wepoch);
    s->reader = malloc(n * sizeof *s->reader);
    s->repoch = malloc(n * sizeof *s->repoch);
    s->pending = malloc(n * sizeof *s->pending);
    if (!s->data || !s->writer || !s->wepoch || !s->reader || !s->repoch || !s->pending) {
        imem_free(s);
        return -1;
    }
    imem_reset(s);
    return 0;
}

static void ext_free(imem_ext *x)
{
    if (!x) return;
    free(x->wagent);
    free(x->wall);
    free(x->wclock);
    free(x->wfence);
    free(x->rtask);
    free(x->rclock);
    free(x->tpend);
    free(x->acount);
    free(x->alast);
    free(x);
}

void imem_free(imem_shared *s)
{
    free(s->data);
    free(s->writer);
    free(s->wepoch);
    free(s->reader);
    free(s->repoch);
    free(s->pending);
    free(s->copies);
    free(s->stage);
    ext_free(s->x);
    memset(s, 0, sizeof *s);
}

int imem_enable_tasks(imem_shared *s, int ntasks)
{
    if (s->x) return 0;
    s->maxtasks = ntasks < 1 ? 1 : ntasks > IMEM_MAX_TASKS ? IMEM_MAX_TASKS : ntasks;
    size_t n = s->size ? s->size : 1;
    imem_ext *x = calloc(1, sizeof *x);
    if (!x) return -1;
    x->wagent = malloc(n);
    x->wall = malloc(n);
    x->wclock = malloc(n * sizeof *x->wclock);
    x->wfence = malloc(n * sizeof *x->wfence);
    x->rtask = malloc(n);
    x->rclock = malloc(n * (size_t)s->maxtasks * sizeof *x->rclock);
    x->tpend = malloc(n * sizeof *x->tpend);
    x->acount = malloc(n * sizeof *x->acount);
    x->alast = malloc(n * sizeof *x->alast);
    if (!x->wagent || !x->wall || !x->wclock || !x->wfence || !x->rtask || !x->rclock || !x->tpend || !x->acount ||
        !x->alast) {
        ext_free(x);
        return -1;
    }
    s->x = x;
    imem_reset(s);
    return 0;
}

void imem_reset(imem_shared *s)
{
    memset(s->data, 0xAB, s->size);
    for (size_t i = 0; i < s->size; i++) {
        s->writer[i] = -1;
        s->reader[i] = -1;
        s->pending[i] = -1;
        s->wepoch[i] = s->repoch[i] = 0;
    }
    memset(s->tasks, 0, sizeof s->tasks);
    for (int t = 0; t < IMEM_MAX_TASKS; t++) s->tasks[t].epoch = 1;
    s->cur = 0;
    s->ntasks = 1;
    s->ncopies = 0;
    s->nstage = 0;
    imem_ext *x = s->x;
    if (!x) return;
    memset(x->wagent, IMEM_AGENT_NONE, s->size);
    memset(x->wall, 0, s->size);
    memset(x->wclock, 0, s->size * sizeof *x->wclock);
    memset(x->wfence, 0, s->size * sizeof *x->wfence);
    memset(x->rtask, 0, s->size);
    memset(x->rclock, 0, s->size * (size_t)s->maxtasks * sizeof *x->rclock);
    memset(x->tpend, 0xFF, s->size * sizeof *x->tpend); /* -1 */
    memset(x->acount, 0, s->size * sizeof *x->acount);
    memset(x->alast, 0xFF, s->size * sizeof *x->alast);
}

static int in_bounds(const imem_shared *s, size_t off, size_t n)
{
    return off <= s->size && n <= s->size - off;
}

/* ---- what a task has observed ---------------------------------------------------- */

void imem_vc_join(imem_vc *into, const imem_vc *from)
{
    for (int i = 0; i < IMEM_VC_LEN; i++)
        if (from->c[i] > into->c[i]) into->c[i] = from->c[i];
}

/* Is the last write of byte i visible to `thread` of the running task?
 * thread -1: the task's async proxy (every ordinary write of the task by
 * any thread needs a synchronize). Fills s->why on a hazard. */
static imem_hazard visible(imem_shared *s, size_t i, int thread)
{
    const imem_task *T = &s->tasks[s->cur];
    const imem_ext *x = s->x;
    s->why = (imem_why){.off = i, .other = -1, .agent = 0, .clock = 0, .op = -1};
    if (x && x->tpend[i] >= 0) {
        s->why.op = x->tpend[i];
        return IMEM_TMA_PENDING;
    }
    int agent = x ? x->wagent[i] : 0;
    if (s->writer[i] < 0 && (!x || agent == IMEM_AGENT_NONE)) return IMEM_OK;
    s->why.agent = agent;
    if (agent >= IMEM_VC_BAR(0)) { /* a TMA landing */
        s->why.clock = x->wclock[i];
        return T->vc.c[agent] > x->wclock[i] ? IMEM_OK : IMEM_TMA_UNSEEN;
    }
    if (s->writer[i] == thread) return IMEM_OK; /* program order of one thread */
    s->why.other = s->writer[i];
    if (agent == s->cur) return s->wepoch[i] == T->epoch ? IMEM_RAW : IMEM_OK;
    int comp = x->wall[i] ? IMEM_VC_SYNC(agent) : agent;
    if (T->vc.c[comp] > x->wclock[i]) return IMEM_OK;
    s->why.nosync = T->vc.c[agent] > x->wclock[i];
    return IMEM_XRAW;
}

/* Is thread (-1: the async proxy) of the running task its thread 0? */
static int instance_level(const imem_shared *s, int thread)
{
    return thread < 0 || thread == s->tasks[s->cur].thread0;
}

/* Record a read of byte i by thread of the running task. */
static void note_read(imem_shared *s, size_t i, int thread)
{
    const imem_task *T = &s->tasks[s->cur];
    imem_ext *x = s->x;
    int same = !x || x->rtask[i] == s->cur;
    if (s->repoch[i] != T->epoch || s->reader[i] == -1 || !same) s->reader[i] = thread;
    else if (s->reader[i] != thread) s->reader[i] = -2;
    s->repoch[i] = T->epoch;
    if (x) {
        x->rtask[i] = (uint8_t)s->cur;
        x->rclock[(size_t)s->cur * s->size + i] = 2 * (T->vc.c[s->cur] + 1) + !instance_level(s, thread);
    }
}

/* Record a write of byte i by thread of the running task (ordinary proxy). */
static void note_write(imem_shared *s, size_t i, int thread, int task)
{
    const imem_task *T = &s->tasks[task];
    s->writer[i] = thread;
    s->wepoch[i] = T->epoch;
    imem_ext *x = s->x;
    if (!x) return;
    x->wagent[i] = (uint8_t)task;
    x->wall[i] = thread >= 0 && thread != T->thread0;
    x->wclock[i] = T->vc.c[task];
    x->wfence[i] = T->vc.c[IMEM_VC_FENCE(task)];
    for (int t = 0; t < s->ntasks; t++) x->rclock[(size_t)t * s->size + i] = 0;
}

/* Has every other task's last read of byte i been ordered before the
 * running task's write? */
static imem_hazard war_across(imem_shared *s, size_t i)
{
    const imem_ext *x = s->x;
    if (!x) return IMEM_OK;
    const imem_task *T = &s->tasks[s->cur];
    for (int t = 0; t < s->ntasks; t++) {
        uint32_t rc = x->rclock[(size_t)t * s->size + i];
        if (t != s->cur && rc && T->vc.c[rc & 1 ? IMEM_VC_SYNC(t) : t] < rc / 2) {
            s->why.agent = t;
            s->why.other = -1;
            s->why.nosync = T->vc.c[t] >= rc / 2;
            return IMEM_XWAR;
        }
    }
    return IMEM_OK;
}

/* ---- ordinary accesses --------------------------------------------------------------- */

imem_hazard imem_read(imem_shared *s, size_t off, size_t n, int thread, void *out, int *other)
{
    *other = -1;
    if (!in_bounds(s, off, n)) return IMEM_OOB;
    for (size_t i = off; i < off + n; i++) {
        if (s->pending[i] >= 0) {
            *other = s->copies[s->pending[i]].thread;
            return IMEM_PENDING_READ;
        }
        imem_hazard h = visible(s, i, thread);
        if (h) {
            *other = s->why.other;
            return h;
        }
    }
    for (size_t i = off; i < off + n; i++) note_read(s, i, thread);
    memcpy(out, s->data + off, n);
    return IMEM_OK;
}

/* The hazards of thread writing byte i now. */
static imem_hazard write_check(imem_shared *s, size_t i, int thread, int *other)
{
    if (s->pending[i] >= 0) {
        *other = s->copies[s->pending[i]].thread;
        return IMEM_PENDING_WRITE;
    }
    const imem_ext *x = s->x;
    if (x && x->acount[i]) {
        s->why = (imem_why){.off = i, .other = -1, .op = x->alast[i]};
        return IMEM_ASYNC_READING;
    }
    imem_hazard h = visible(s, i, thread);
    *other = s->why.other;
    if (h == IMEM_RAW) return IMEM_WAW;
    if (h == IMEM_XRAW) return IMEM_XWAW;
    if (h) return h; /* TMA_PENDING, TMA_UNSEEN */
    const imem_task *T = &s->tasks[s->cur];
    if (s->repoch[i] == T->epoch && s->reader[i] != -1 && s->reader[i] != thread &&
        (!x || x->rtask[i] == s->cur)) {
        *other = s->reader[i] >= 0 ? s->reader[i] : -1;
        return IMEM_WAR;
    }
    return war_across(s, i);
}

imem_hazard imem_write(imem_shared *s, size_t off, size_t n, int thread, const void *src,
                       int *other)
{
    *other = -1;
    if (!in_bounds(s, off, n)) return IMEM_OOB;
    for (size_t i = off; i < off + n; i++) {
        imem_hazard h = write_check(s, i, thread, other);
        if (h) return h;
    }
    memcpy(s->data + off, src, n);
    for (size_t i = off; i < off + n; i++) note_write(s, i, thread, s->cur);
    return IMEM_OK;
}

imem_hazard imem_copy_async(imem_shared *s, size_t off, size_t n, int thread, const void *src,
                            int *other)
{
    *other = -1;
    if (!in_bounds(s, off, n)) return IMEM_OOB;
    for (size_t i = off; i < off + n; i++) {
        imem_hazard h = write_check(s, i, thread, other);
        if (h) return h;
    }
    if (s->ncopies == s->capcopies) {
        int nc = s->capcopies ? 2 * s->capcopies : 64;
        imem_copy *c = realloc(s->copies, (size_t)nc * sizeof *c);
        if (!c) return IMEM_OOB;
        s->copies = c;
        s->capcopies = nc;
    }
    if (s->nstage + n > s->capstage) {
        size_t nc = s->capstage ? 2 * s->capstage : 4096;
        while (nc < s->nstage + n) nc *= 2;
        uint8_t *st = realloc(s->stage, nc);
        if (!st) return IMEM_OOB;
        s->stage = st;
        s->capstage = nc;
    }
    memcpy(s->stage + s->nstage, src, n);
    s->copies[s->ncopies] = (imem_copy){.off = off, .n = n, .src = s->nstage, .thread = thread,
                                        .task = s->cur, .group = -1};
    for (size_t i = off; i < off + n; i++) s->pending[i] = s->ncopies;
    s->ncopies++;
    s->nstage += n;
    return IMEM_OK;
}

void imem_commit(imem_shared *s)
{
    int g = s->tasks[s->cur].next_group++;
    for (int i = 0; i < s->ncopies; i++)
        if (s->copies[i].n && s->copies[i].group == -1 && s->copies[i].task == s->cur) s->copies[i].group = g;
}

/* Land one copy: its bytes become a write by the issuing thread now. */
static void complete(imem_shared *s, imem_copy *c)
{
    memcpy(s->data + c->off, s->stage + c->src, c->n);
    for (size_t i = c->off; i < c->off + c->n; i++) {
        s->pending[i] = -1;
        note_write(s, i, c->thread, c->task);
    }
    c->n = 0;
}

void imem_wait(imem_shared *s, int keep)
{
    int upto = s->tasks[s->cur].next_group - (keep < 0 ? 0 : keep); /* groups below complete */
    int live = 0;
    for (int i = 0; i < s->ncopies; i++) {
        imem_copy *c = &s->copies[i];
        if (c->n && c->task == s->cur && c->group >= 0 && c->group < upto) complete(s, c);
        if (c->n) live++;
    }
    /* Compact: keep only copies in flight (their staged bytes move down and
     * the pending marks follow their new index). */
    if (live * 2 + 64 < s->ncopies) {
        int j = 0;
        size_t at = 0;
        for (int i = 0; i < s->ncopies; i++) {
            imem_copy c = s->copies[i];
            if (!c.n) continue;
            memmove(s->stage + at, s->stage + c.src, c.n);
            c.src = at;
            at += c.n;
            for (size_t b = c.off; b < c.off + c.n; b++) s->pending[b] = j;
            s->copies[j++] = c;
        }
        s->ncopies = j;
        s->nstage = at;
    }
}

/* Task t's threads synchronize: all they did is now covered by its clock. */
static void sync_task(imem_task *T, int t)
{
    T->epoch++;
    T->vc.c[t]++;
    T->vc.c[IMEM_VC_SYNC(t)] = T->vc.c[t];
}

void imem_sync(imem_shared *s)
{
    imem_task *T = &s->tasks[s->cur];
    sync_task(T, s->cur);
    if (s->cur == 0) /* the block's barrier: every finished task's work is before it */
        for (int t = 1; t < s->ntasks; t++) {
            sync_task(&s->tasks[t], t);
            imem_vc_join(&T->vc, &s->tasks[t].vc);
        }
}

int imem_pending_count(const imem_shared *s)
{
    int n = 0;
    for (int i = 0; i < s->ncopies; i++) n += s->copies[i].n != 0;
    return n;
}

const char *imem_hazard_text(imem_hazard h)
{
    switch (h) {
    case IMEM_OK: return "no hazard";
    case IMEM_RAW: return "read after another thread's write with no synchronize between";
    case IMEM_WAR: return "write over an element another thread read with no synchronize between";
    case IMEM_WAW: return "write over an element another thread wrote with no synchronize between";
    case IMEM_PENDING_READ:
        return "read before the cp.async that writes it completed (missing wait?)";
    case IMEM_PENDING_WRITE: return "write over an element a pending cp.async writes (missing wait?)";
    case IMEM_OOB: return "access outside the block's shared memory";
    case IMEM_XRAW: return "read of another warpgroup's write not ordered by an mbarrier";
    case IMEM_XWAW: return "write over another warpgroup's write not ordered by an mbarrier";
    case IMEM_XWAR: return "write over another warpgroup's read not ordered by an mbarrier";
    case IMEM_TMA_PENDING: return "access to an element a TMA load in flight writes";
    case IMEM_TMA_UNSEEN: return "access to a TMA load's data before waiting on its barrier phase";
    case IMEM_ASYNC_READING: return "write over an element an async read in flight holds";
    case IMEM_UNFENCED: return "async read of an ordinary write with no fence_async between";
    case IMEM_UNWRITTEN: return "async read of an element nothing has written";
    }
    return "hazard";
}

/* ---- tasks and the async proxy ------------------------------------------------------------ */

void imem_task_spawn(imem_shared *s, int child, int thread0)
{
    imem_task *C = &s->tasks[child];
    const imem_task *P = &s->tasks[s->cur];
    uint32_t own = C->vc.c[child], fence = C->vc.c[IMEM_VC_FENCE(child)];
    uint32_t epoch = C->epoch;
    int group = C->next_group;
    C->vc = P->vc;
    if (own > C->vc.c[child]) C->vc.c[child] = own;
    if (fence > C->vc.c[IMEM_VC_FENCE(child)]) C->vc.c[IMEM_VC_FENCE(child)] = fence;
    C->vc.c[child]++;
    C->vc.c[IMEM_VC_SYNC(child)] = C->vc.c[child];
    C->epoch = epoch + 1;
    C->next_group = group;
    C->thread0 = thread0;
    if (child >= s->ntasks) s->ntasks = child + 1;
}

void imem_task_switch(imem_shared *s, int task)
{
    s->cur = task;
}

void imem_release(imem_shared *s, imem_vc *into)
{
    imem_task *T = &s->tasks[s->cur];
    T->vc.c[s->cur]++;
    imem_vc_join(into, &T->vc);
}

void imem_acquire(imem_shared *s, const imem_vc *from)
{
    imem_vc_join(&s->tasks[s->cur].vc, from);
}

void imem_fence_async(imem_shared *s)
{
    s->tasks[s->cur].vc.c[IMEM_VC_FENCE(s->cur)]++;
}

imem_hazard imem_async_read(imem_shared *s, size_t off, size_t n, int32_t op, void *out)
{
    imem_ext *x = s->x;
    if (!in_bounds(s, off, n) || !x) return IMEM_OOB;
    const imem_task *T = &s->tasks[s->cur];
    for (size_t i = off; i < off + n; i++) {
        if (s->pending[i] >= 0) {
            s->why = (imem_why){.off = i, .other = s->copies[s->pending[i]].thread, .op = -1};
            return IMEM_PENDING_READ;
        }
        imem_hazard h = visible(s, i, -1);
        if (h) return h;
        int a = x->wagent[i];
        if (a == IMEM_AGENT_NONE) return IMEM_UNWRITTEN;
        if (a < IMEM_MAX_TASKS && s->writer[i] >= 0 && x->wfence[i] != UINT32_MAX &&
            T->vc.c[IMEM_VC_FENCE(a)] <= x->wfence[i]) {
            s->why.other = s->writer[i];
            s->why.agent = a;
            return IMEM_UNFENCED;
        }
    }
    for (size_t i = off; i < off + n; i++) {
        x->acount[i]++;
        x->alast[i] = op;
        x->rclock[(size_t)s->cur * s->size + i] = 2 * (T->vc.c[s->cur] + 1);
    }
    if (out) memcpy(out, s->data + off, n);
    return IMEM_OK;
}

void imem_async_done(imem_shared *s, size_t off, size_t n)
{
    imem_ext *x = s->x;
    if (!x || !in_bounds(s, off, n)) return;
    /* the read ends now: a write by another task must be ordered after this
     * point, not merely after the issue */
    uint32_t rc = 2 * (s->tasks[s->cur].vc.c[s->cur] + 1);
    for (size_t i = off; i < off + n; i++) {
        if (x->acount[i]) x->acount[i]--;
        x->rclock[(size_t)s->cur * s->size + i] = rc;
    }
}

imem_hazard imem_tma_issue(imem_shared *s, size_t off, size_t n, int32_t id)
{
    imem_ext *x = s->x;
    if (!in_bounds(s, off, n) || !x) return IMEM_OOB;
    for (size_t i = off; i < off + n; i++) {
        if (s->pending[i] >= 0) {
            s->why = (imem_why){.off = i, .other = s->copies[s->pending[i]].thread, .op = -1};
            return IMEM_PENDING_WRITE;
        }
        if (x->acount[i]) {
            s->why = (imem_why){.off = i, .other = -1, .op = x->alast[i]};
            return IMEM_ASYNC_READING;
        }
        imem_hazard h = visible(s, i, -1);
        /* an ordinary write of the issuing task itself is before it in program order */
        if (h == IMEM_RAW) h = IMEM_OK;
        if (h == IMEM_XRAW) h = IMEM_XWAW;
        if (h || (h = war_across(s, i))) return h;
        const imem_task *T = &s->tasks[s->cur];
        if (s->repoch[i] == T->epoch && x->rtask[i] == s->cur && s->reader[i] != -1 &&
            s->reader[i] != T->thread0) { /* the issuing thread 0 overwrites another thread's read */
            s->why.other = s->reader[i] >= 0 ? s->reader[i] : -1;
            return IMEM_WAR;
        }
    }
    for (size_t i = off; i < off + n; i++) x->tpend[i] = id;
    return IMEM_OK;
}

imem_hazard imem_tma_land(imem_shared *s, size_t off, size_t n, int bar, uint32_t phase, const void *src)
{
    imem_ext *x = s->x;
    if (!in_bounds(s, off, n) || !x) return IMEM_OOB;
    for (size_t i = off; i < off + n; i++) {
        if (x->acount[i]) {
            s->why = (imem_why){.off = i, .other = -1, .op = x->alast[i]};
            return IMEM_ASYNC_READING;
        }
        if (s->pending[i] >= 0) {
            s->why = (imem_why){.off = i, .other = s->copies[s->pending[i]].thread, .op = -1};
            return IMEM_PENDING_WRITE;
        }
    }
    memcpy(s->data + off, src, n);
    for (size_t i = off; i < off + n; i++) {
        s->writer[i] = -1;
        s->reader[i] = -1;
        x->tpend[i] = -1;
        x->wagent[i] = (uint8_t)IMEM_VC_BAR(bar);
        x->wall[i] = 0;
        x->wclock[i] = phase;
        x->wfence[i] = UINT32_MAX;
        for (int t = 0; t < s->ntasks; t++) x->rclock[(size_t)t * s->size + i] = 0;
    }
    return IMEM_OK;
}
