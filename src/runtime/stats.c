/* stats.c — where a run's time goes (tessel.h tsl_run_stats): one record
 * per thread, which the API clears before tsl_program_run and reads after
 * it, and which the scheduler, the generators and the runtimes add to
 * (planning, generating source, compiling, loading, running, and how
 * each kernel was found: compiled, read from the on-disk cache, or already
 * loaded in the process). */
#include <time.h>

#include "runtime/runtime.h"

static _Thread_local rt_stats rt_stats_v;

rt_stats *rt_stats_here(void) { return &rt_stats_v; }

double rt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
