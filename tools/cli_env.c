/* cli_env.c — environment variables into option text (cli_env.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_env.h"

/* Append "k1=v1,k2=v2,..." for the comma-separated ints of var's value. */
static int numbered(char *buf, unsigned long n, const char *var, const char *const *keys, int min, int max)
{
    const char *v = getenv(var);
    if (!v || !*v) return 0;
    int vals[8], got = 0;
    const char *p = v;
    while (got < max) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p) break;
        vals[got++] = (int)x;
        p = end;
        if (*p != ',') break;
        p++;
    }
    if (got < min || *p) {
        fprintf(stderr, "tessel: %s='%s': expected %d%s comma-separated integers\n", var, v, min,
                max > min ? " or more" : "");
        return -1;
    }
    for (int i = 0; i < got; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s=%d", len ? "," : "", keys[i], vals[i]);
    }
    return 0;
}

static void flag(char *buf, unsigned long n, const char *var, const char *want, const char *option)
{
    const char *v = getenv(var);
    if (!v || !*v || (want && strcmp(v, want))) return;
    size_t len = strlen(buf);
    snprintf(buf + len, n - len, "%s%s", len ? "," : "", option);
}

int cli_env_options(char *buf, unsigned long n)
{
    static const char *const cpu[] = {"contract.cpu.bm", "contract.cpu.bn", "contract.cpu.bk",
                                      "contract.cpu.tm", "contract.cpu.tn", "contract.cpu.stages"};
    static const char *const mma[] = {"contract.mma.bm", "contract.mma.bn", "contract.mma.bk", "contract.mma.wm",
                                      "contract.mma.wn", "contract.mma.pad", "contract.mma.stages"};
    flag(buf, n, "TESSEL_SCHED", "generic", "sched.generic=1");
    flag(buf, n, "TESSEL_CPU_NO_RBLK", NULL, "conv.cpu=0");
    flag(buf, n, "TESSEL_CPU_NO_UKR", NULL, "cpu.micro_kernels=0");
    flag(buf, n, "TESSEL_NO_FULLRED", NULL, "sched.full_reductions=0");
    if (numbered(buf, n, "TESSEL_CONTRACT_CPU", cpu, 6, 6) || numbered(buf, n, "TESSEL_CONTRACT", mma, 6, 7)) return -1;
    const char *o = getenv("TESSEL_OPTIONS");
    if (o && *o) {
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s", len ? "," : "", o);
    }
    return 0;
}
