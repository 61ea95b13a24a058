/* compare.c — two plans of one program timed against each other (tune.h;
 * `tessel bench --compare`, tsl_program_bench_compare). Two `tessel
 * bench` medians of the same kernels, run one after the other, differed
 * by 2.5% on an H200 and by 10% on the shared 2-core CPU machine: more
 * than many a tuned plan gains. So the two are timed in alternating
 * rounds — A then B, then B then A (neither always runs just after the
 * other), and so on — on the same resident inputs, and the ratio is
 * judged per round: a round's A median over its B median, paired in
 * time, so a drift of the machine's speed over the rounds cancels. The
 * rounds' median ratio gets a distribution-free interval (the sign
 * test's order statistics), which says whether B is faster, slower, or
 * neither within the noise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tune.h"

int tune_ab_first(int round) { return round % 2; }

/* P(X <= k) for X ~ Binomial(n, 1/2). */
static double binom_half_cdf(int n, int k)
{
    double p = 0;
    for (int j = 0; j <= k; j++) p += exp(lgamma(n + 1.0) - lgamma(j + 1.0) - lgamma(n - j + 1.0) - n * log(2.0));
    return p;
}

void tune_median_interval(int n, int *lo, int *hi, double *coverage)
{
    /* The median lies in [x(k), x(n-1-k)] (sorted, 0-based) unless at least
     * n-k of the values fall on one side of it: 1 - 2 P(X <= k). The
     * largest k with P(X <= k) <= 2.5%; with fewer than 6 values even k = 0
     * (the min and max) holds less than 95%, and it is the best there is. */
    int k = 0;
    while (k + 1 < n / 2 && binom_half_cdf(n, k + 1) <= 0.025) k++;
    *lo = n > 0 ? k : 0;
    *hi = n > 0 ? n - 1 - k : 0;
    *coverage = n > 0 ? 1 - 2 * binom_half_cdf(n, k) : 0;
    if (*coverage < 0) *coverage = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

tsl_status tune_ab_run(int rounds, int cap, tune_ab_timer timer, void *ctx, tune_ab *out, tsl_diag *d)
{
    memset(out, 0, sizeof *out);
    if (rounds < 1) rounds = 1;
    if (cap < 1) cap = 1;
    double *all[2], *q = calloc((size_t)rounds, sizeof *q), *round_ms = calloc((size_t)cap, sizeof *round_ms);
    all[0] = calloc((size_t)rounds * (size_t)cap, sizeof **all);
    all[1] = calloc((size_t)rounds * (size_t)cap, sizeof **all);
    int nall[2] = {0, 0};
    tsl_status st = q && round_ms && all[0] && all[1] ? TSL_OK : TSL_ERR_NOMEM;
    if (st) diag_error(d, st, "out of memory (%d rounds of %d runs)", rounds, cap);
    for (int r = 0; !st && r < rounds; r++) {
        double med[2] = {0, 0};
        for (int k = 0; !st && k < 2; k++) {
            int side = k ^ tune_ab_first(r), n = 0;
            st = timer(ctx, side, all[side] + nall[side], cap, &n, d);
            if (!st && n < 1) {
                diag_error(d, TSL_ERR_RUNTIME, "round %d of %c timed no run", r + 1, "AB"[side]);
                st = TSL_ERR_RUNTIME;
            }
            if (st) break;
            memcpy(round_ms, all[side] + nall[side], sizeof *round_ms * (size_t)n);
            nall[side] += n;
            tune_timing tm;
            tune_timing_of(round_ms, n, &tm);
            med[side] = tm.median_ms;
        }
        if (!st) q[r] = med[1] > 0 ? med[0] / med[1] : med[0] > 0 ? INFINITY : 1;
    }
    if (!st) {
        out->rounds = rounds;
        for (int s = 0; s < 2; s++) tune_timing_of(all[s], nall[s], &out->side[s]);
        out->ratio = out->side[1].median_ms > 0 ? out->side[0].median_ms / out->side[1].median_ms : INFINITY;
        qsort(q, (size_t)rounds, sizeof *q, cmp_double);
        out->round_min = q[0];
        out->round_max = q[rounds - 1];
        out->round_median = rounds % 2 ? q[rounds / 2] : (q[rounds / 2 - 1] + q[rounds / 2]) / 2;
        int lo, hi;
        tune_median_interval(rounds, &lo, &hi, &out->coverage);
        out->lo = q[lo];
        out->hi = q[hi];
    }
    free(all[0]);
    free(all[1]);
    free(q);
    free(round_ms);
    return st;
}

int tune_ab_verdict(const tune_ab *ab)
{
    if (ab->coverage < TUNE_AB_VERDICT) return 0;
    return ab->lo > 1 ? 1 : ab->hi < 1 ? -1 : 0;
}

/* ---- the real timer: two executors on shared input sets ----------------------------------- */

typedef struct ab_exec {
    rt_exec *e[2];
    tune_bufs *bufs;
    const tune_case *c;
    double round_ms; /* a side's timed runs in one round take about this long */
    int min_reps;
} ab_exec;

static tsl_status ab_exec_time(void *ctx, int side, double *ms, int cap, int *n, tsl_diag *d)
{
    ab_exec *x = ctx;
    return tune_time_runs(x->e[side], x->bufs, x->c, x->round_ms, x->min_reps, cap, ms, n, d);
}

tsl_status tune_ab_time(rt_exec *a, rt_exec *b, tune_bufs *t, const tune_case *c, double budget_ms, int rounds,
                        tune_ab *out, tsl_diag *d)
{
    if (rounds < 1) rounds = 1;
    ab_exec x = {{a, b}, t, c, budget_ms / rounds, TUNE_AB_MIN_REPS};
    return tune_ab_run(rounds, TUNE_AB_CAP, ab_exec_time, &x, out, d);
}
