/* tune.h — measuring, checking and searching (DESIGN.md §6): what
 * `tessel bench` and `tessel tune` are made of. A case is one program at
 * bound sizes with host data; the reference is the interpreter's answer
 * (at the case's sizes when that is affordable, else at reduced sizes);
 * measurements keep tensors resident on the device, rotate input sets past
 * the last-level cache and time with the device's events (the monotonic
 * clock on the CPU).
 *
 *   check.c    reference outputs, comparisons, the op graph's work
 *   measure.c  resident input sets, a checked run, the timing loop */
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
/* The same at reduced sizes (every size symbol at most `cap`, fresh
 * random inputs, the interpreter's answer): for cases too large for the
 * interpreter. */
tsl_status tune_check_reduced(rt_exec *e, const lang_def *def, const lang_bound *b, int64_t cap, double *err,
                              tsl_diag *d);

/* ---- measuring (measure.c) ---------------------------------------------------------------- */
typedef struct tune_bufs tune_bufs;

/* Every parameter and output resident on e's device: the inputs in
 * `sets` copies (at least enough that together they pass twice the
 * device's last-level cache, at most what `max_bytes` allows), outputs
 * once. */
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

/* The device's last-level cache in bytes (the CPU's L3 from sysfs; 64 MiB
 * for a GPU). */
size_t tune_llc_bytes(const rt_target *t);

#endif
