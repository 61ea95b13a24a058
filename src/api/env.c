/* env.c — the library's one reading of the environment (docs/driver.md
 * "Settings"): every variable tessel heeds, listed in runtime.h's
 * RT_SETTINGS table, read once per process into the runtime's settings.
 * Nothing else in src/ calls getenv: the parts below take their settings
 * as data, so tests set them without touching the environment. The CLI
 * reads its own variables (TESSEL_OPTIONS, TESSEL_DUMP, the strategies'
 * TESSEL_CONTRACT...) in tools/cli_env.c and passes them as options. */
#include <pthread.h>
#include <stdlib.h>

#include "api/env.h"
#include "runtime/runtime.h"

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void env_read(void)
{
    rt_settings s = {0};
    for (int i = 0; i < rt_setting_var_count; i++)
        *(const char **)((char *)&s + rt_setting_vars[i].offset) = getenv(rt_setting_vars[i].var);
    rt_settings_set(&s);
}

void api_settings_load(void) { pthread_once(&env_once, env_read); }
