/* target.c — which target a run uses when the caller names none: CUDA when
 * a device opens, else the CPU; the TESSEL_TARGET setting overrides both,
 * and one that names no target is an error, never ignored. */
#include <string.h>

#include "api/api.h"
#include "api/env.h"
#include "driver/driver.h"
#include "runtime/runtime.h"

static const char *const target_names[] = {"interp", "cpu", "cuda"};

const char *tsl_target_name(tsl_target t)
{
    return (unsigned)t < TSL_COUNTOF(target_names) ? target_names[t] : "?";
}

int tsl_target_parse(const char *name, tsl_target *out)
{
    for (size_t i = 0; name && i < TSL_COUNTOF(target_names); i++) {
        if (!strcmp(name, target_names[i])) {
            *out = (tsl_target)i;
            return 0;
        }
    }
    return -1;
}

tsl_target tsl_target_default(void)
{
    static int probed = -1; /* the device probe costs a driver init: once */
    api_settings_load();
    const char *env = rt_settings_get()->target;
    tsl_target t;
    if (env) return tsl_target_parse(env, &t) == 0 ? t : TSL_TARGET_INVALID;
    if (probed < 0) {
        rt_cuda_device *dev = NULL;
        probed = rt_cuda_open(&dev, NULL) == TSL_OK ? TSL_TARGET_CUDA : TSL_TARGET_CPU;
        rt_cuda_close(dev);
    }
    return (tsl_target)probed;
}

tsl_status api_target_check(tsl_context *ctx, tsl_target t, const char *fn)
{
    if ((unsigned)t < TSL_COUNTOF(target_names)) return TSL_OK;
    const char *env = rt_settings_get()->target;
    if (t == TSL_TARGET_INVALID && env)
        return api_error(ctx, TSL_ERR_ARG,
                         "%s%sTESSEL_TARGET=%.40s is not a target (interp, cpu or cuda; unset, CUDA when a "
                         "device opens, else the CPU)",
                         fn ? fn : "", fn ? ": " : "", env);
    return api_error(ctx, TSL_ERR_ARG, "%s%sunknown target %d (interp, cpu or cuda)", fn ? fn : "",
                     fn ? ": " : "", (int)t);
}

tsl_status tsl_target_choose(TSL_KEEP tsl_context *ctx, tsl_target *out)
{
    if (!ctx || !out) return TSL_ERR_ARG;
    tsl_target t = tsl_target_default();
    tsl_status st = api_target_check(ctx, t, NULL);
    *out = t;
    return st;
}

const drv_target *api_compiled_target(tsl_context *ctx, tsl_target t, const char *fn)
{
    if (api_target_check(ctx, t, fn)) return NULL;
    const drv_target *d = drv_target_of(t);
    if (!d) api_error(ctx, TSL_ERR_ARG, "%s: target %s is not a compiled target", fn, tsl_target_name(t));
    return d;
}
