/* settings.c — the process's settings as data (runtime.h "settings"): what
 * the environment said, filled in once by the API (api/env.c, the library's
 * only reader of the environment) and read by the runtime's parts instead
 * of the environment; tests set them directly. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

const rt_setting_var rt_setting_vars[] = {
#define X(field, var, meaning) {var, offsetof(rt_settings, field), meaning},
    RT_SETTINGS(X)
#undef X
};
const int rt_setting_var_count = (int)TSL_COUNTOF(rt_setting_vars);

static rt_settings current; /* every field NULL: the built-in defaults */

const rt_settings *rt_settings_get(void) { return &current; }

static const char **field(rt_settings *s, int i) { return (const char **)((char *)s + rt_setting_vars[i].offset); }

void rt_settings_set(const rt_settings *s)
{
    rt_settings next = {0};
    for (int i = 0; i < rt_setting_var_count; i++) {
        const char *v = *field((rt_settings *)s, i);
        *field(&next, i) = v && *v ? strdup(v) : NULL; /* empty counts as unset */
    }
    for (int i = 0; i < rt_setting_var_count; i++) free((char *)*field(&current, i));
    current = next;
}
