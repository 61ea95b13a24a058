/* info.c — what this build of tessel is and what it found on the machine
 * (tessel.h tsl_build_info; `tessel --version`): the version, the commit
 * it was built from, the C compiler of the CPU target, NVRTC, and the CUDA
 * driver with its first device. */
#include <stdlib.h>

#include "api/api.h"
#include "api/env.h"
#include "runtime/runtime.h"

#if !defined(TSL_COMMIT) && defined(__has_include)
#if __has_include("commit.h")
#include "commit.h" /* build/commit.h, written by the Makefile */
#endif
#endif
#ifndef TSL_COMMIT
#define TSL_COMMIT "unknown" /* built without the Makefile */
#endif

const char *tsl_version(void) { return TSL_VERSION_STRING; }

char *tsl_build_info(void)
{
    api_settings_load();
    strbuf b = {0};
    sb_printf(&b, "tessel %s (commit %s)\n", TSL_VERSION_STRING, TSL_COMMIT);
    tsl_diag d = {0};
    char *cc = NULL;
    if (rt_cpu_compiler(&cc, &d) == TSL_OK) sb_printf(&b, "C compiler (cpu target): %s\n", cc);
    else sb_printf(&b, "C compiler (cpu target): not found: %s\n", sb_str(&d.msg));
    free(cc);
    diag_reset(&d);
    if (rt_cuda_nvrtc_available(&d) == TSL_OK) {
        int v = rt_cuda_nvrtc_version();
        sb_printf(&b, "NVRTC: %d.%d\n", v / 1000, v % 1000 / 10);
    } else {
        sb_printf(&b, "NVRTC: not found: %s\n", sb_str(&d.msg));
    }
    diag_reset(&d);
    rt_cuda_device *dev = NULL;
    if (rt_cuda_open(&dev, &d) == TSL_OK) {
        const rt_cuda_info *in = rt_cuda_device_info(dev);
        sb_printf(&b, "CUDA driver: %d.%d; device %d: %s (%s)\n", in->driver_version / 1000,
                  in->driver_version % 1000 / 10, in->ordinal, in->name, in->arch);
        rt_cuda_close(dev);
    } else {
        sb_printf(&b, "CUDA driver or device: not found: %s\n", sb_str(&d.msg));
    }
    diag_free(&d);
    return sb_take(&b);
}
