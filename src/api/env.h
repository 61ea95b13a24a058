/* env.h — the library's one reader of the environment (env.c). The API's
 * entry points call api_settings_load themselves; a main that uses the
 * layers below the API directly (the CLI, the unit tests) calls it first. */
#ifndef TSL_API_ENV_H
#define TSL_API_ENV_H

/* Read every variable of runtime.h's RT_SETTINGS table into the runtime's
 * settings, once per process (later calls do nothing; a later change to
 * the environment is not seen). */
void api_settings_load(void);

#endif
