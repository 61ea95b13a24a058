/* tune.c — tsl_program_tune (tessel.h): the API's side of a tuning
 * session. a's tensors give the shapes and the inputs every candidate is
 * checked and timed on; the session itself is src/tune/tune.c. After it,
 * the tuned options this process looked up are forgotten, so the next run
 * takes the new record. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "tune/tune.h"

tsl_status tsl_program_tune(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, tsl_target target,
                            const tsl_tune_config *cfg, tsl_tune_result *out)
{
    if (!p) return TSL_ERR_ARG;
    tsl_context *ctx = p->ctx;
    if (!out) return api_error(ctx, TSL_ERR_ARG, "tsl_program_tune: out is NULL");
    memset(out, 0, sizeof *out);
    if (!api_compiled_target(ctx, target, "tsl_program_tune")) return TSL_ERR_ARG;
    tsl_tune_config c = cfg ? *cfg : (tsl_tune_config){0};
    if (c.workers > TUNE_MAX_WORKERS)
        return api_error(ctx, TSL_ERR_ARG, "tsl_program_tune: %d workers (at most %d)", c.workers,
                         TUNE_MAX_WORKERS);
    for (int i = 0; c.devices && i < c.workers; i++)
        if (c.devices[i] < 0)
            return api_error(ctx, TSL_ERR_ARG, "tsl_program_tune: device ordinal %d of worker %d", c.devices[i], i);
    interp_tensor *views, *cv;
    char **owned;
    tsl_status st = api_args_open(p, a, &views, &cv, &owned);
    if (st) return st;
    tune_config tc = {
        .target = target,
        .budget_s = c.budget_s,
        .generations = c.generations,
        .population = c.population,
        .random = c.random_search,
        .workers = c.workers,
        .devices = c.devices,
        .compilers = c.compilers,
        .candidate_ms = c.candidate_ms,
        .timeout_s = c.timeout_s,
        .seed = c.seed,
        .progress = c.progress,
        .progress_ctx = c.progress_ctx,
    };
    tune_report rep;
    diag_reset(api_diag(ctx));
    st = tune_run(&tc, p->def, api_args_bound(a), cv, &rep, api_diag(ctx));
    api_args_uncarry(p, views, cv, owned, 0);
    free(views);
    out->best_device = -1;
    /* the final re-timing decides when it ran (both by one worker, interleaved) */
    if (rep.def >= 0 && !rep.hist[rep.def].status)
        out->default_ms = rep.confirmed && rep.hist[rep.def].confirm_ms > 0 ? rep.hist[rep.def].confirm_ms
                                                                           : rep.hist[rep.def].ms;
    if (rep.best >= 0) {
        out->best_ms = rep.confirmed ? rep.hist[rep.best].confirm_ms : rep.hist[rep.best].ms;
        out->best_device = rep.hist[rep.best].device;
        snprintf(out->best_options, sizeof out->best_options, "%s", rep.hist[rep.best].options);
    }
    for (int i = 0; i < rep.nhist; i++)
        out->tried += rep.hist[i].status != TSL_ERR_UNAVAILABLE || rep.hist[i].worker >= 0;
    out->failed = rep.failed;
    out->rejected = rep.rejected;
    out->generations = rep.generations;
    out->workers = rep.workers;
    for (int i = 0; i < rep.workers && i < 16; i++) {
        out->timed_by[i] = rep.timed_by[i];
        out->device_of[i] = rep.device_of[i];
    }
    out->wall_s = rep.wall_s;
    out->recorded = rep.recorded;
    tune_report_free(&rep);
    api_compiled_forget_tuned();
    return st;
}
