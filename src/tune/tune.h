/* tune.h — measuring, checking and searching (DESIGN.md §6): what
 * `tessel bench` and `tessel tune` are made of. A case is one program at
 * bound sizes with host data; the reference is the interpreter's answer
 * (at the case's sizes when that is affordable, else at reduced sizes);
 * measurements keep tensors resident on the device, rotate input sets past
 * the last-level cache and time with the device's events (the monotonic
 * clock on the CPU).
 *
 *   check.c    reference outputs, comparisons, the op graph's work
 *   measure.c  resident input sets, a checked run, the timing loop
 *   compare.c  two plans timed in alternating rounds: the ratio and its interval
 *   search.c   the options space searched: genetic and random
 *   tune.c     the tuning session: worker processes (one per device) that
 *              compile, check and time candidates; a fault ends only its
 *              candidate; the best recorded in the cache */
#ifndef TSL_TUNE_H
#define TSL_TUNE_H

#include "driver/driver.h"
#include "interp/interp.h"
#include "lang/lang.h"
#include "runtime/plan.h"

/* ---- a case and its reference (check.c) ---------------------------------------------- */
typedef struct tune_case {
    const lang_def *def;
    const lang_bound *b;
    const interp_tensor *views; /* every def tensor: inputs hold the data */
} tune_case;

/* The work of one run from the op graph: arithmetic operations (a
 * multiply-add counts 2) and the bytes every parameter and output takes
 * (what must cross memory at least once). */
void tune_work(const lang_def *def, const lang_bound *b, double *flops, double *bytes);

/* The interpreter's outputs for the case's inputs: per def tensor that is
 * an output, a C-order host copy (NULL elsewhere), and the tolerance a
 * compiled output is held to (grown with the reduction behind it). */
typedef struct tune_ref {
    int n;
    char **out;
    double *tol;
} tune_ref;
tsl_status tune_ref_make(const tune_case *c, tune_ref *r, tsl_diag *d);
void tune_ref_free(tune_ref *r);
/* max |got - ref| / max(1, max |ref|) over every element (integers: the
 * largest difference; NaN where the other is not: infinity). */
double tune_compare(tsl_dtype dt, const void *got, const void *ref, int64_t n);
/* Whether the interpreter can answer at the case's sizes in a few
 * seconds (its work at most `limit` operations). */
int tune_ref_affordable(const tune_case *c, double limit);

/* Run executor e on the case's inputs (checked) and compare every output
 * with r; *err gets the worst of (error / tolerance), TSL_OK with *err <=
 * 1 when right. `what` names the run in the message of a wrong result. */
tsl_status tune_check(rt_exec *e, const tune_case *c, const tune_ref *r, double *err, tsl_diag *d);
/* The interpreter answers at a case's sizes when its work is at most
 * TUNE_INTERP_OPS operations (it does about 4e7 a second: a few seconds);
 * else checks run on a reduced case. */
#define TUNE_INTERP_OPS 2e8
#define TUNE_CUT 67
/* A reduced case of def for checking, in arena a: every size symbol at
 * most `cap`, then the largest halved (while the program still binds)
 * until the work is at most max_ops; fresh random inputs (integers below
 * every size, so gathers stay in range). */
tsl_status tune_case_reduce(tsl_arena *a, const lang_def *def, const lang_bound *b, int64_t cap, double max_ops,
                            tune_case *out, tsl_diag *d);
/* tune_check on such a reduced case against the interpreter's answer. */
tsl_status tune_check_reduced(rt_exec *e, const lang_def *def, const lang_bound *b, int64_t cap, double max_ops,
                              double *err, tsl_diag *d);

/* ---- measuring (measure.c) ---------------------------------------------------------------- */
typedef struct tune_bufs tune_bufs;

/* Every parameter and output resident on e's device: the inputs in
 * `sets` copies (at least enough that together they pass twice the
 * device's last-level cache, at most what `max_bytes` allows), outputs
 * once. They belong to e's device, not to e: other executables of the
 * same program on that device may time with them after e is freed. */
tsl_status tune_bufs_create(rt_exec *e, const tune_case *c, size_t max_bytes, tune_bufs **out, tsl_diag *d);
void tune_bufs_free(tune_bufs *t);
int tune_bufs_sets(const tune_bufs *t);

typedef struct tune_timing {
    double median_ms, p10_ms, p90_ms, min_ms;
    int reps;
} tune_timing;
/* Warm up, then time runs (each a whole plan run: every launch,
 * temporaries zeroed) rotating over the sets, until budget_ms of timed
 * runs or max_reps (at least min_reps); the median and spread. */
tsl_status tune_time(rt_exec *e, tune_bufs *t, const tune_case *c, double budget_ms, int min_reps, int max_reps,
                     tune_timing *out, tsl_diag *d);
/* The same runs, each one's time into ms[0..*n) (ms holds max_reps). The
 * rotation goes on from where t's last runs left it, whichever executor
 * ran them: two executors of one program may share t (same inputs). */
tsl_status tune_time_runs(rt_exec *e, tune_bufs *t, const tune_case *c, double budget_ms, int min_reps, int max_reps,
                          double *ms, int *n, tsl_diag *d);
/* Median, p10, p90 and minimum of n times (sorts ms). */
void tune_timing_of(double *ms, int n, tune_timing *out);

/* The device's last-level cache in bytes (the CPU's L3 from sysfs; 64 MiB
 * for a GPU). */
size_t tune_llc_bytes(const rt_target *t);

/* ---- two plans against each other (compare.c) ------------------------------------------------ */
/* Rounds alternate the sides: A then B in even rounds, B then A in odd
 * ones; each side's runs in a round give its median there. */
int tune_ab_first(int round); /* the side (0: A, 1: B) a round times first */

/* Times one side (0: A, 1: B) for one round: each run's time into
 * ms[0..*n) (ms holds cap, at least one run). */
typedef tsl_status (*tune_ab_timer)(void *ctx, int side, double *ms, int cap, int *n, tsl_diag *d);

typedef struct tune_ab {
    int rounds;
    tune_timing side[2];      /* over every timed run of A, of B */
    double ratio;             /* side[0].median_ms / side[1].median_ms: > 1 when B is faster */
    double round_median, round_min, round_max; /* of the rounds' ratios (a round's A median / its B median) */
    double lo, hi, coverage;  /* the rounds' median ratio lies in [lo, hi] with probability >= coverage */
} tune_ab;

/* The sorted values [*lo, *hi] (0-based indices of n) that hold the
 * median of n draws with at least 95%, by the sign test (n = 10: the 2nd
 * and 9th, 97.9%); fewer than 6 draws: the min and max, and *coverage
 * says how much less it is. */
void tune_median_interval(int n, int *lo, int *hi, double *coverage);
/* `rounds` alternating rounds of `timer` (at most cap runs a side and
 * round); the summary into out. */
tsl_status tune_ab_run(int rounds, int cap, tune_ab_timer timer, void *ctx, tune_ab *out, tsl_diag *d);
/* 1: B is faster (the interval above 1); -1: A is; 0: neither beyond the
 * noise, or too few rounds to tell (coverage below TUNE_AB_VERDICT: under
 * 5 rounds). */
#define TUNE_AB_VERDICT 0.9
int tune_ab_verdict(const tune_ab *ab);
/* Executors a and b of one program (the same device) on t's input sets:
 * tune_ab_run with each side's runs in a round taking about
 * budget_ms / rounds (at least TUNE_AB_MIN_REPS runs, at most
 * TUNE_AB_CAP), after tune_time_runs' warm-up. */
enum { TUNE_AB_MIN_REPS = 3, TUNE_AB_CAP = 2000 };
tsl_status tune_ab_time(rt_exec *a, rt_exec *b, tune_bufs *t, const tune_case *c, double budget_ms, int rounds,
                        tune_ab *out, tsl_diag *d);

/* ---- the space and the search (search.c) ------------------------------------------------- */
enum { TUNE_MAX_PARAMS = 64, TUNE_MAX_WORKERS = 16, TUNE_OPT_LEN = 400 };

typedef struct tune_space {
    tsl_target target;
    int n;
    const sched_option *param[TUNE_MAX_PARAMS]; /* the parameters of this target */
} tune_space;
void tune_space_init(tune_space *s, tsl_target t);
/* Keep the parameters that matter to def: those with a value that changes
 * its scheduled plan (sched_print's text, at sm_80 and sm_90 for CUDA)
 * from the defaults', and those read when the plan runs (strategy "run").
 * Nothing is cut when the default plan does not schedule. Returns how
 * many were cut. */
int tune_space_cut(tune_space *s, const lang_def *def);

uint64_t tune_rand(uint64_t *rng);
void tune_random(const tune_space *s, uint64_t *rng, sched_options *out);
/* Three-parent uniform crossover: each parameter from a, b or c. */
void tune_crossover(const tune_space *s, const sched_options *a, const sched_options *b, const sched_options *c,
                    uint64_t *rng, sched_options *out);
/* Each parameter redrawn with probability `rate`. */
void tune_mutate(const tune_space *s, double rate, uint64_t *rng, sched_options *o);

/* A timed candidate. */
typedef struct tune_scored {
    sched_options opt;
    double ms;
} tune_scored;

typedef struct tune_search {
    uint64_t rng;
    int random;      /* 1: random search; 0: genetic */
    double mutation; /* per parameter */
    char **tried;    /* canonical texts proposed so far */
    int ntried, cap;
    int rejected;    /* candidates the validity check refused */
} tune_search;
/* Up to `want` new valid candidates into out (children of the timed
 * `best`, fastest first, or random draws); the last rejection's reason
 * into *why when not NULL. Returns how many. */
int tune_propose(tune_search *g, const tune_space *s, const tune_scored *best, int nbest, int want,
                 sched_options *out, char (*why)[160]);
int tune_tried(const tune_search *g, const char *text);
void tune_remember(tune_search *g, const char *text);
void tune_search_free(tune_search *g);

/* ---- a tuning session (tune.c) ------------------------------------------------------------ */
typedef struct tune_config {
    tsl_target target;
    double budget_s;    /* stop proposing after this long (default 120) */
    int generations;    /* at most (default 8) */
    int population;     /* candidates per generation (default 16) */
    double mutation;    /* per parameter (default 0.15) */
    int random;         /* 1: random search */
    int workers;        /* timing processes (default: the CPU 1; CUDA one per GPU) */
    const int *devices; /* CUDA: each worker's device ordinal (NULL: 0, 1, ...) */
    int compilers;      /* processes compiling a generation in parallel (default: cores, at most 8;
                         * on CUDA each opens the first worker's device for its arch) */
    double candidate_ms; /* timed runs of a candidate take about this long (default 200) */
    double timeout_s;   /* a candidate's check and timing taking longer fail it (default 60;
                         * compiling gets at least 300 s) */
    uint64_t seed;      /* 0: fresh */
    void (*progress)(void *ctx, const char *line);
    void *progress_ctx;
    /* tests: called in the worker process before candidate `options` runs */
    void (*before_run)(void *ctx, int worker, const char *options);
    void *hook_ctx;
} tune_config;

/* One candidate of the session. */
typedef struct tune_entry {
    char options[TUNE_OPT_LEN]; /* canonical text ("" the defaults) */
    int generation;
    int worker, device;         /* who timed it (-1: none, -1: the CPU) */
    int timed;                  /* times it was timed (the tests check 1) */
    tsl_status status;          /* TSL_OK: checked and timed */
    double ms, err;             /* median time; error / tolerance */
    double confirm_ms;          /* the final re-timing by worker 0 (0: not re-timed) */
    char msg[240];              /* why it failed */
} tune_entry;

typedef struct tune_report {
    tune_entry *hist;
    int nhist;
    int best, def;   /* indices into hist (-1: none) */
    int generations, failed, rejected, workers;
    int timed_by[TUNE_MAX_WORKERS];
    int device_of[TUNE_MAX_WORKERS];
    double wall_s;
    char key[33];    /* the tuning record's key */
    int recorded;    /* the record was written */
    int confirmed;   /* best and the default were re-timed (confirm_ms decides) */
} tune_report;

/* Tune def at b's sizes on cfg->target with the case's inputs (views:
 * every def tensor, the compiled targets' carriers). Every candidate is
 * checked against the interpreter before it is timed; the best is stored
 * as the cache's "tuned" row for (program, shapes, arch). An error only
 * when nothing could run (no device, a wrong default plan). */
tsl_status tune_run(const tune_config *cfg, const lang_def *def, const lang_bound *b, const interp_tensor *views,
                    tune_report *rep, tsl_diag *d);
void tune_report_free(tune_report *rep);

#endif
