/* target.c — which target a run uses when the caller names none: CUDA when
 * a device opens, else the CPU; the TESSEL_TARGET setting overrides both. */
#include <string.h>

#include "api/env.h"
#include "runtime/runtime.h"

static const char *const target_names[] = {"interp", "cpu", "cuda"};

const char *tsl_target_name(tsl_target t)
{
    return (unsigned)t < TSL_COUNTOF(target_names) ? target_names[t] : "?";
}

int tsl_target_parse(const char *name, tsl_target *out)
{
    for (size_t i = 0; i < TSL_COUNTOF(target_names); i++) {
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
    tsl_target t;
    api_settings_load();
    const char *env = rt_settings_get()->target;
    if (env && *env && tsl_target_parse(env, &t) == 0) return t;
    if (probed < 0) {
        rt_cuda_device *dev = NULL;
        probed = rt_cuda_open(&dev, NULL) == TSL_OK ? TSL_TARGET_CUDA : TSL_TARGET_CPU;
        rt_cuda_close(dev);
    }
    return (tsl_target)probed;
}
