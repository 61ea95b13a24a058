/* tune.c — a tuning session (tune.h): search.c proposes candidates, worker
 * processes compile, check and time them, the best is recorded.
 *
 * Workers are child processes (fork), one per timing device (a GPU
 * ordinal; on the CPU one, since timing runs side by side would measure
 * each other), each talking to the session over a socket: a request names
 * a candidate's options, the answer carries its status, error and median
 * time. A worker that dies (a fault, a signal) or overruns the timeout
 * ends only its candidate, which is recorded as failed with the reason;
 * the worker is started again and the search goes on. A generation's
 * candidates are first compiled in parallel by `compilers` processes into
 * the cache (NVRTC and the C compiler take most of a candidate's time),
 * from which the timing workers load them. GPU workers (and the CUDA
 * compilers, for the device's arch) open their device after the fork (a
 * CUDA context does not survive one), so the session never touches CUDA.
 *
 * Every candidate is checked against the interpreter's answer, made once
 * (at the case's sizes when affordable, else on a reduced case:
 * tune_case_reduce) before it is
 * timed, and is timed once, by one worker: times are comparable within a
 * device, and the report says which device timed each. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tune/tune.h"


typedef struct req {
    int idx;
    int compile_only;
    char options[TUNE_OPT_LEN];
} req;

typedef struct res {
    int idx; /* -1: the worker's hello */
    int status;
    double ms, err;
    char msg[240];
} res;

typedef struct worker {
    pid_t pid;
    int fd;      /* the session's end of the socket (-1: not running) */
    int device;  /* CUDA ordinal, -1 on the CPU */
    int busy;    /* hist index in flight, -1 */
    double since;
    int compile_only;
} worker;

typedef struct session {
    const tune_config *cfg;
    const drv_target *t;
    tune_case c;
    tune_case check;   /* what candidates are checked on: c, or a reduced case of it */
    tsl_arena *check_arena; /* the reduced case's */
    tune_ref ref;      /* the interpreter's answer for `check` */
    int have_ref;
    tune_report *rep;
    worker w[2 * TUNE_MAX_WORKERS];
    int nw;
    int confirming; /* the final re-timing: results go to confirm_ms */
} session;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int send_all(int fd, const void *buf, size_t n)
{
    for (const char *p = buf; n;) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int recv_all(int fd, void *buf, size_t n)
{
    for (char *p = buf; n;) {
        ssize_t k = recv(fd, p, n, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* ---- the worker process ---------------------------------------------------------------------- */

/* One candidate: compile (or take from the cache), check, time. The
 * timing inputs are made once a worker (*bufs) and kept for its later
 * candidates: every candidate reads the same inputs, and making them again
 * (a 470 MB W) took longer than timing. */
static void worker_candidate(session *s, void *dev, const req *q, tune_bufs **bufs, res *r)
{
    tsl_diag d = {0};
    sched_options o = sched_options_defaults;
    drv_prepared *pp = NULL;
    tsl_status st = sched_options_parse(q->options, &o, &d);
    if (!st) st = drv_prepare_cached(s->c.def, s->t, dev, &o, q->options, &pp, &d);
    if (st) {
        snprintf(r->msg, sizeof r->msg, "compile: %s", sb_str(&d.msg));
    } else if (!q->compile_only) {
        rt_exec *e = drv_prepared_exec(pp);
        st = tune_check(e, &s->check, &s->ref, &r->err, &d);
        if (st) snprintf(r->msg, sizeof r->msg, "check: %s", sb_str(&d.msg));
        tune_timing tm = {0};
        if (!st && !*bufs) st = tune_bufs_create(e, &s->c, (size_t)2 << 30, bufs, &d);
        if (!st) st = tune_time(e, *bufs, &s->c, s->cfg->candidate_ms, 3, 1000, &tm, &d);
        if (st && !r->msg[0]) snprintf(r->msg, sizeof r->msg, "run: %s", sb_str(&d.msg));
        r->ms = tm.median_ms;
    }
    drv_prepared_free(pp);
    r->status = st;
    diag_free(&d);
}

static void worker_main(session *s, int self, int fd)
{
    rt_cache_after_fork();
    rt_cpu_after_fork();
    worker *me = &s->w[self];
    tsl_diag d = {0};
    rt_cuda_device *cdev = NULL;
    res r = {.idx = -1};
    if (s->t->id == TSL_TARGET_CUDA) { /* compilers too: the arch is the device's */
        r.status = rt_cuda_open_ordinal(me->device, &cdev, &d);
        if (r.status) snprintf(r.msg, sizeof r.msg, "CUDA device %d: %s", me->device, sb_str(&d.msg));
    }
    if (!r.status) { /* the tuning record's key on this device */
        char *canon = drv_program_canonical(s->c.def);
        strbuf shapes = {0};
        drv_shapes_text(s->c.def, s->c.b, &shapes);
        drv_program_key("tuned", canon, s->t, cdev, NULL, sb_str(&shapes), r.msg);
        sb_free(&shapes);
        free(canon);
    }
    diag_free(&d);
    if (send_all(fd, &r, sizeof r) || r.status) _exit(1);
    req q;
    tune_bufs *bufs = NULL;
    while (!recv_all(fd, &q, sizeof q)) {
        q.options[sizeof q.options - 1] = 0;
        if (s->cfg->before_run && !q.compile_only) s->cfg->before_run(s->cfg->hook_ctx, self, q.options);
        memset(&r, 0, sizeof r);
        r.idx = q.idx;
        worker_candidate(s, cdev, &q, &bufs, &r);
        if (send_all(fd, &r, sizeof r)) break;
        /* a launch that failed may have poisoned the context: the session
         * starts a fresh worker for the next candidate */
        if (cdev && r.status == TSL_ERR_RUNTIME) _exit(3);
    }
    tune_bufs_free(bufs);
    _exit(0);
}

/* ---- the session's side ----------------------------------------------------------------------- */

static tsl_status worker_start(session *s, int i, tsl_diag *d)
{
    worker *w = &s->w[i];
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
        diag_error(d, TSL_ERR_RUNTIME, "tune: a socket for worker %d: %s", i, strerror(errno));
        return TSL_ERR_RUNTIME;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        diag_error(d, TSL_ERR_RUNTIME, "tune: starting worker %d: %s", i, strerror(errno));
        return TSL_ERR_RUNTIME;
    }
    if (pid == 0) {
        /* the other workers' sockets are not this one's: holding them
         * would keep those workers from seeing the session end */
        for (int k = 0; k < s->nw; k++)
            if (s->w[k].fd >= 0) close(s->w[k].fd);
        close(sv[0]);
        worker_main(s, i, sv[1]);
    }
    close(sv[1]);
    w->pid = pid;
    w->fd = sv[0];
    w->busy = -1;
    res hello;
    struct pollfd pf = {w->fd, POLLIN, 0};
    int ready = poll(&pf, 1, 300 * 1000);
    if (ready <= 0 || recv_all(w->fd, &hello, sizeof hello) || hello.status) {
        diag_error(d, TSL_ERR_UNAVAILABLE, "tune: worker %d (%s) did not start: %s", i,
                   w->device >= 0 ? "a GPU" : "the CPU",
                   ready > 0 && hello.msg[0] ? hello.msg : "no answer");
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(w->fd);
        w->fd = -1;
        return TSL_ERR_UNAVAILABLE;
    }
    hello.msg[32] = 0;
    if (!s->rep->key[0] && !w->compile_only) memcpy(s->rep->key, hello.msg, sizeof s->rep->key);
    return TSL_OK;
}

static void worker_stop(worker *w)
{
    if (w->fd < 0) return;
    close(w->fd);
    w->fd = -1;
    waitpid(w->pid, NULL, 0);
}

/* Why a worker ended, from its wait status. */
static void died(worker *w, int i, const char *extra, char *out, size_t n)
{
    int ws = 0;
    waitpid(w->pid, &ws, 0);
    close(w->fd);
    w->fd = -1;
    char dev[32] = "";
    if (w->device >= 0) snprintf(dev, sizeof dev, " (device %d)", w->device);
    if (extra) snprintf(out, n, "worker %d%s %s", i, dev, extra);
    else if (WIFSIGNALED(ws))
        snprintf(out, n, "worker %d%s died: signal %d (%s)", i, dev, WTERMSIG(ws), strsignal(WTERMSIG(ws)));
    else snprintf(out, n, "worker %d%s ended: exit %d", i, dev, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
}

/* Run the candidates hist[idx[0..n)] on workers [lo, hi): each to the
 * next free worker; a worker lost is restarted. Stops handing out work
 * past `deadline` (the rest are left untried). */
static tsl_status dispatch(session *s, int lo, int hi, const int *idx, int n, double deadline, tsl_diag *d)
{
    tune_report *rep = s->rep;
    int next = 0, inflight = 0;
    /* compiling is not what the timeout judges: a busy machine's compiler
     * may take a while; a hung one is still stopped */
    double timeout = s->w[lo].compile_only && s->cfg->timeout_s < 300 ? 300 : s->cfg->timeout_s;
    while (next < n || inflight) {
        for (int i = lo; i < hi && next < n; i++) {
            worker *w = &s->w[i];
            if (w->fd < 0 || w->busy >= 0) continue;
            if (now_s() > deadline) {
                next = n;
                break;
            }
            req q = {.idx = idx[next], .compile_only = w->compile_only};
            snprintf(q.options, sizeof q.options, "%s", rep->hist[idx[next]].options);
            if (send_all(w->fd, &q, sizeof q)) { /* it ended after its last candidate: a fresh one */
                char why[240];
                tsl_diag wd = {0};
                died(w, i, NULL, why, sizeof why);
                if (worker_start(s, i, &wd)) rt_warn("tune: %s; %s; going on without it", why, sb_str(&wd.msg));
                diag_free(&wd);
                i--; /* hand the same candidate to the new worker */
                continue;
            }
            w->busy = idx[next++];
            w->since = now_s();
            inflight++;
        }
        struct pollfd pf[2 * TUNE_MAX_WORKERS];
        int who[2 * TUNE_MAX_WORKERS], np = 0;
        for (int i = lo; i < hi; i++)
            if (s->w[i].fd >= 0 && s->w[i].busy >= 0) {
                pf[np] = (struct pollfd){s->w[i].fd, POLLIN, 0};
                who[np++] = i;
            }
        if (np) poll(pf, (nfds_t)np, 100);
        for (int k = 0; k < np; k++) {
            worker *w = &s->w[who[k]];
            tune_entry *e = &rep->hist[w->busy];
            char why[240] = "";
            res r;
            if (pf[k].revents & (POLLIN | POLLHUP | POLLERR)) {
                if (recv_all(w->fd, &r, sizeof r) || r.idx != w->busy) {
                    died(w, who[k], NULL, why, sizeof why);
                } else {
                    r.msg[sizeof r.msg - 1] = 0;
                    if (w->compile_only) {
                        if (r.status) {
                            e->status = r.status;
                            snprintf(e->msg, sizeof e->msg, "%s", r.msg);
                        }
                    } else if (s->confirming) { /* a re-timing: the best of the rounds */
                        if (!r.status && r.ms > 0 && (!(e->confirm_ms > 0) || r.ms < e->confirm_ms))
                            e->confirm_ms = r.ms;
                    } else {
                        e->status = r.status;
                        e->ms = r.ms;
                        e->err = r.err;
                        e->worker = who[k];
                        e->device = w->device;
                        snprintf(e->msg, sizeof e->msg, "%s", r.msg);
                        if (!r.status) {
                            e->timed++;
                            rep->timed_by[who[k]]++;
                        }
                    }
                }
            } else if (now_s() - w->since > timeout) {
                kill(w->pid, SIGKILL);
                char t[64];
                snprintf(t, sizeof t, "timed out after %.0f s", timeout);
                died(w, who[k], t, why, sizeof why);
            } else {
                continue;
            }
            if (why[0]) { /* the candidate fails; the worker starts again */
                e->status = TSL_ERR_RUNTIME;
                e->worker = who[k];
                e->device = w->device;
                snprintf(e->msg, sizeof e->msg, "%s", why);
                tsl_diag wd = {0};
                if (worker_start(s, who[k], &wd))
                    rt_warn("tune: %s; going on without it", sb_str(&wd.msg));
                diag_free(&wd);
            }
            w->busy = -1;
            inflight--;
        }
        int alive = 0;
        for (int i = lo; i < hi; i++) alive += s->w[i].fd >= 0;
        if (!alive) {
            diag_error(d, TSL_ERR_RUNTIME, "tune: every worker is lost (the last candidate: %s)",
                       n ? rep->hist[idx[n - 1]].msg : "none");
            return TSL_ERR_RUNTIME;
        }
    }
    return TSL_OK;
}

/* The final pick, confirmed: the default and the TUNE_CONFIRM fastest are
 * timed again by worker 0, interleaved over TUNE_ROUNDS rounds (a busy
 * machine or a clock change during the search cannot crown a candidate
 * that was timed once at a lucky moment); the fastest of each's rounds
 * decides, and the default stays unless a candidate beats it by
 * TUNE_MARGIN (on a shared 2-core machine a copy "tuned" 1.06x in the
 * search ran 0.37x the default in a bench after: a win inside the noise
 * is no win; on an H200 two `tessel bench` medians of the same kernels
 * differed by 2.5%, and a softmax confirmed at 1.04x timed 0.98x in the
 * bench). The search's own times stay in `ms`: each candidate was timed
 * there once, by one worker. */
enum { TUNE_CONFIRM = 3, TUNE_ROUNDS = 3 };
#define TUNE_MARGIN 0.05
static void confirm(session *s)
{
    tune_report *rep = s->rep;
    int pick[TUNE_CONFIRM + 1], n = 0;
    if (rep->def >= 0 && !rep->hist[rep->def].status) pick[n++] = rep->def;
    for (int k = 0; k < TUNE_CONFIRM; k++) { /* the k-th fastest not yet picked */
        int b = -1;
        for (int i = 0; i < rep->nhist; i++) {
            const tune_entry *e = &rep->hist[i];
            int taken = 0;
            for (int j = 0; j < n; j++) taken |= pick[j] == i;
            if (!taken && !e->status && e->ms > 0 && (b < 0 || e->ms < rep->hist[b].ms)) b = i;
        }
        if (b >= 0) pick[n++] = b;
    }
    int order[(TUNE_CONFIRM + 1) * TUNE_ROUNDS], m = 0;
    for (int r = 0; r < TUNE_ROUNDS; r++)
        for (int j = 0; j < n; j++) order[m++] = pick[(j + r) % n];
    s->confirming = 1;
    tsl_diag d = {0};
    dispatch(s, 0, 1, order, m, INFINITY, &d);
    diag_free(&d);
    s->confirming = 0;
    int best = -1;
    for (int j = 0; j < n; j++)
        if (rep->hist[pick[j]].confirm_ms > 0 && (best < 0 || rep->hist[pick[j]].confirm_ms < rep->hist[best].confirm_ms))
            best = pick[j];
    const double def_ms = rep->def >= 0 ? rep->hist[rep->def].confirm_ms : 0;
    if (best >= 0 && best != rep->def && def_ms > 0 && rep->hist[best].confirm_ms > def_ms * (1 - TUNE_MARGIN))
        best = rep->def;
    if (best >= 0) rep->best = best;
    rep->confirmed = best >= 0;
    if (!s->cfg->progress || best < 0) return;
    char line[400];
    const tune_entry *b = &rep->hist[best], *df = rep->def >= 0 ? &rep->hist[rep->def] : NULL;
    int n0 = snprintf(line, sizeof line, "tune %s %s: confirmed (%d candidates re-timed %d times by worker 0): best %.4g ms",
                      s->c.def->name, s->t->name, n, TUNE_ROUNDS, b->confirm_ms);
    if (df && df->confirm_ms > 0 && n0 > 0 && (size_t)n0 < sizeof line)
        snprintf(line + n0, sizeof line - (size_t)n0, " (%.2fx the default, %.4g ms)", df->confirm_ms / b->confirm_ms,
                 df->confirm_ms);
    s->cfg->progress(s->cfg->progress_ctx, line);
}

static int add_entry(tune_report *rep, int *cap, const sched_options *o, int gen)
{
    if (rep->nhist == *cap) {
        int nc = *cap ? 2 * *cap : 64;
        tune_entry *h = realloc(rep->hist, sizeof *h * (size_t)nc);
        if (!h) return -1;
        rep->hist = h;
        *cap = nc;
    }
    tune_entry *e = &rep->hist[rep->nhist];
    memset(e, 0, sizeof *e);
    strbuf t = {0};
    sched_options_text(&t, o);
    snprintf(e->options, sizeof e->options, "%s", sb_str(&t));
    sb_free(&t);
    e->generation = gen;
    e->worker = e->device = -1;
    e->status = TSL_ERR_UNAVAILABLE;
    snprintf(e->msg, sizeof e->msg, "not run (the budget ran out)");
    return rep->nhist++;
}

static int cmp_scored(const void *a, const void *b)
{
    double x = ((const tune_scored *)a)->ms, y = ((const tune_scored *)b)->ms;
    return x < y ? -1 : x > y;
}

/* A candidate that was handed to a worker (or failed to compile). */
static int entry_ran(const tune_entry *e) { return e->status != TSL_ERR_UNAVAILABLE || e->worker >= 0; }

static void progress(session *s, int gen, double t0)
{
    const tune_config *cfg = s->cfg;
    tune_report *rep = s->rep;
    if (!cfg->progress) return;
    strbuf b = {0};
    int tried = 0, failed = 0;
    for (int i = 0; i < rep->nhist; i++) {
        tried += entry_ran(&rep->hist[i]);
        failed += entry_ran(&rep->hist[i]) && rep->hist[i].status != TSL_OK;
    }
    sb_printf(&b, "tune %s %s: generation %d/%d, %d tried, %d failed, %d rejected", s->c.def->name, s->t->name,
              gen + 1, cfg->generations, tried, failed, rep->rejected);
    if (rep->best >= 0) {
        double def = rep->def >= 0 && rep->hist[rep->def].status == TSL_OK ? rep->hist[rep->def].ms : 0;
        sb_printf(&b, ", best %.4g ms", rep->hist[rep->best].ms);
        if (def > 0) sb_printf(&b, " (%.2fx the default)", def / rep->hist[rep->best].ms);
    }
    sb_printf(&b, ", %.0f s;", now_s() - t0);
    for (int i = 0; i < rep->workers; i++) {
        if (s->w[i].device >= 0) sb_printf(&b, " gpu%d: %d timed", s->w[i].device, rep->timed_by[i]);
        else sb_printf(&b, " worker %d: %d timed", i, rep->timed_by[i]);
    }
    cfg->progress(cfg->progress_ctx, sb_str(&b));
    sb_free(&b);
}

/* The GPUs the host has, without touching CUDA (the session forks). */
static int gpu_count(void)
{
    char path[64];
    int n = 0;
    for (int i = 0; i < 64; i++) {
        snprintf(path, sizeof path, "/dev/nvidia%d", i);
        if (access(path, F_OK) == 0) n++;
    }
    return n ? n : 1;
}

static void record(session *s)
{
    tune_report *rep = s->rep;
    if (rep->best < 0 || !rep->key[0]) return;
    strbuf h = {0};
    sb_printf(&h, "# ms\tconfirm_ms\terror/tol\tworker\tdevice\tgeneration\tstatus\toptions\tmessage\n");
    for (int i = 0; i < rep->nhist; i++) {
        const tune_entry *e = &rep->hist[i];
        sb_printf(&h, "%.6g\t%.6g\t%.3g\t%d\t%d\t%d\t%s\t%s\t%s\n", e->ms, e->confirm_ms, e->err, e->worker, e->device, e->generation,
                  e->status ? "failed" : "ok", e->options[0] ? e->options : "(defaults)", e->msg);
    }
    char *canon = drv_program_canonical(s->c.def);
    rt_cache_put("tuned", rep->key, s->c.def->name, canon, rep->hist[rep->best].options, h.buf, h.len);
    rep->recorded = 1;
    free(canon);
    sb_free(&h);
}

/* tune_space_cut in a child process: a strategy that faults or hangs on
 * one option value costs the cut (the whole space is searched, with a
 * warning), not the session, as a candidate's fault costs only it. */
static void cut_space(tune_space *sp, const lang_def *def, double timeout_s)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds)) return;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        tune_space kept = *sp;
        tune_space_cut(&kept, def);
        char mask[TUNE_MAX_PARAMS] = {0};
        for (int i = 0, j = 0; i < sp->n && j < kept.n; i++)
            if (sp->param[i] == kept.param[j]) mask[i] = 1, j++;
        _exit(send_all(fds[1], mask, (size_t)sp->n) ? 1 : 0);
    }
    close(fds[1]);
    char mask[TUNE_MAX_PARAMS];
    int got = 0;
    if (pid > 0) {
        struct pollfd pf = {fds[0], POLLIN, 0};
        if (poll(&pf, 1, (int)(timeout_s * 1000)) > 0) got = !recv_all(fds[0], mask, (size_t)sp->n);
        if (!got) kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    close(fds[0]);
    if (!got) {
        rt_warn("tune: finding the parameters that change %s's plan failed; searching all %d", def->name, sp->n);
        return;
    }
    int n = 0;
    for (int i = 0; i < sp->n; i++)
        if (mask[i]) sp->param[n++] = sp->param[i];
    sp->n = n;
}

tsl_status tune_run(const tune_config *cfg_in, const lang_def *def, const lang_bound *b, const interp_tensor *views,
                    tune_report *rep, tsl_diag *d)
{
    memset(rep, 0, sizeof *rep);
    rep->best = rep->def = -1;
    tune_config cfg = *cfg_in;
    const drv_target *t = drv_target_of(cfg.target);
    if (!t) {
        diag_error(d, TSL_ERR_ARG, "tune: target %s is not a compiled target", tsl_target_name(cfg.target));
        return TSL_ERR_ARG;
    }
    int gpu = cfg.target == TSL_TARGET_CUDA;
    if (cfg.budget_s <= 0) cfg.budget_s = 120;
    if (cfg.generations <= 0) cfg.generations = 8;
    if (cfg.population <= 1) cfg.population = 16;
    if (cfg.mutation <= 0) cfg.mutation = 0.15;
    if (cfg.workers <= 0) cfg.workers = gpu ? gpu_count() : 1;
    if (cfg.workers > TUNE_MAX_WORKERS) cfg.workers = TUNE_MAX_WORKERS;
    if (cfg.compilers <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cfg.compilers = n < 1 ? 1 : n > 8 ? 8 : (int)n;
    }
    if (cfg.compilers > TUNE_MAX_WORKERS) cfg.compilers = TUNE_MAX_WORKERS;
    if (cfg.candidate_ms <= 0) cfg.candidate_ms = 200;
    if (cfg.timeout_s <= 0) cfg.timeout_s = 60;
    if (!cfg.seed) cfg.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    double t0 = now_s(), deadline = t0 + cfg.budget_s; /* set again after the space's cut */

    session s = {.cfg = &cfg, .t = t, .c = {def, b, views}, .rep = rep};
    for (int i = 0; i < 2 * TUNE_MAX_WORKERS; i++) s.w[i].fd = -1;
    tsl_status st = TSL_OK;
    /* the interpreter's answer, made once (at the case's sizes or at
     * reduced ones): it must not eat the budget, nor run per candidate */
    s.check = s.c;
    if (!tune_ref_affordable(&s.c, TUNE_INTERP_OPS)) {
        s.check_arena = arena_create();
        st = s.check_arena ? tune_case_reduce(s.check_arena, def, b, TUNE_CUT, TUNE_INTERP_OPS, &s.check, d)
                           : TSL_ERR_NOMEM;
    }
    if (!st) st = tune_ref_make(&s.check, &s.ref, d);
    s.have_ref = !st;
    /* workers [0, workers) time; [workers, workers + compilers) compile.
     * A GPU counted by default (/dev/nvidiaN) that does not open — hidden
     * from this process, say — is left out with a warning; a device the
     * caller named must open. */
    int want = cfg.workers, first_dev = -1;
    for (int k = 0, i = 0; !st && k < want + cfg.compilers; k++) {
        worker *w = &s.w[i];
        w->compile_only = k >= want;
        w->device = !gpu ? -1 : w->compile_only ? first_dev : cfg.devices ? cfg.devices[k] : k;
        s.nw = i;
        tsl_diag wd = {0};
        tsl_status ws = worker_start(&s, i, &wd);
        if (ws && gpu && !w->compile_only && !cfg.devices && k > 0) {
            rt_warn("tune: %s; tuning without it", sb_str(&wd.msg));
            cfg.workers--;
        } else if (ws) {
            diag_error(d, ws, "%s", sb_str(&wd.msg));
            st = ws;
        } else {
            if (!w->compile_only) rep->device_of[i] = w->device;
            if (first_dev < 0) first_dev = w->device;
            s.nw = ++i;
        }
        diag_free(&wd);
    }
    rep->workers = cfg.workers;

    tune_space space;
    tune_space_init(&space, cfg.target);
    int all = space.n;
    if (!st) cut_space(&space, def, 60);
    if (!st && cfg.progress) { /* what the search draws from */
        strbuf line = {0};
        sb_printf(&line, "tune %s %s: %d of %d parameters change the plan or the run:", def->name, t->name, space.n,
                  all);
        for (int i = 0; i < space.n; i++) sb_printf(&line, "%s %s", i ? "," : "", space.param[i]->key);
        if (!space.n) sb_puts(&line, " none (the default is the only candidate)");
        cfg.progress(cfg.progress_ctx, sb_str(&line));
        sb_free(&line);
    }
    deadline = now_s() + cfg.budget_s; /* the budget is the search's */
    tune_search g = {.rng = cfg.seed, .random = cfg.random, .mutation = cfg.mutation};
    int cap = 0;
    tune_scored *scored = NULL;
    int nscored = 0;
    sched_options *cand = calloc((size_t)cfg.population + 1, sizeof *cand);
    int *idx = calloc((size_t)cfg.population + 1, sizeof *idx);
    if (!st && (!cand || !idx)) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        st = TSL_ERR_NOMEM;
    }
    for (int gen = 0; !st && gen < cfg.generations && now_s() < deadline; gen++) {
        int n = 0;
        if (gen == 0) { /* the defaults first: the baseline every speedup is over */
            cand[n++] = sched_options_defaults;
            strbuf dt = {0};
            sched_options_text(&dt, &sched_options_defaults);
            tune_remember(&g, sb_str(&dt));
            sb_free(&dt);
        }
        n += tune_propose(&g, &space, scored, nscored < cfg.population ? nscored : cfg.population,
                          cfg.population - n, cand + n, NULL);
        if (!n) break; /* the space is exhausted */
        for (int i = 0; i < n; i++) idx[i] = add_entry(rep, &cap, &cand[i], gen);
        if (gen == 0) rep->def = idx[0];
        if (cfg.compilers) {
            st = dispatch(&s, cfg.workers, cfg.workers + cfg.compilers, idx, n, deadline, d);
            int m = 0; /* only what compiled goes on to be timed */
            for (int i = 0; i < n; i++)
                if (rep->hist[idx[i]].status == TSL_ERR_UNAVAILABLE) idx[m++] = idx[i];
            n = m;
        }
        if (!st) st = dispatch(&s, 0, cfg.workers, idx, n, deadline, d);
        rep->generations = gen + 1;
        /* the population: every timed candidate, fastest first */
        nscored = 0;
        tune_scored *ns = realloc(scored, sizeof *ns * (size_t)(rep->nhist + 1));
        if (ns) scored = ns;
        for (int i = 0; ns && i < rep->nhist; i++) {
            const tune_entry *e = &rep->hist[i];
            if (e->status || !(e->ms > 0)) continue;
            sched_options o = sched_options_defaults;
            tsl_diag pd = {0};
            sched_options_parse(e->options, &o, &pd);
            diag_free(&pd);
            scored[nscored++] = (tune_scored){o, e->ms};
            if (rep->best < 0 || e->ms < rep->hist[rep->best].ms) rep->best = i;
        }
        if (nscored) qsort(scored, (size_t)nscored, sizeof *scored, cmp_scored);
        rep->rejected = g.rejected;
        progress(&s, gen, t0);
    }
    if (!st && rep->best >= 0) confirm(&s);
    for (int i = 0; i < s.nw; i++) worker_stop(&s.w[i]);
    for (int i = 0; i < rep->nhist; i++) rep->failed += entry_ran(&rep->hist[i]) && rep->hist[i].status != TSL_OK;
    if (!st && rep->def >= 0 && rep->hist[rep->def].status && rep->hist[rep->def].worker >= 0 && rep->best < 0) {
        diag_error(d, TSL_ERR_RUNTIME, "tune: the default plan fails: %s", rep->hist[rep->def].msg);
        st = TSL_ERR_RUNTIME;
    }
    if (!st) record(&s);
    rep->wall_s = now_s() - t0;
    free(cand);
    free(idx);
    free(scored);
    tune_search_free(&g);
    if (s.have_ref) tune_ref_free(&s.ref);
    if (s.check_arena) arena_free(s.check_arena);
    return st;
}

void tune_report_free(tune_report *rep)
{
    free(rep->hist);
    memset(rep, 0, sizeof *rep);
}
