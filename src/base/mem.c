/* mem.c — how much memory a run may still take: the kernel's estimate of
 * memory available without swapping (MemAvailable), lowered to what a
 * cgroup v2 limit leaves. Runs check the tensors they would allocate
 * against it before allocating, instead of growing until the OOM killer
 * or swap stops them. */
#include <stdio.h>
#include <string.h>

#include "base.h"

/* The first integer after `key` in a small text file, or -1. */
static int64_t mem_read_field(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    int64_t v = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key)) != 0) continue;
        long long x;
        if (sscanf(line + strlen(key), "%lld", &x) == 1) v = x;
        break;
    }
    fclose(f);
    return v;
}

int64_t mem_available(void)
{
    int64_t kb = mem_read_field("/proc/meminfo", "MemAvailable:");
    int64_t avail = kb >= 0 && kb < INT64_MAX / 1024 ? kb * 1024 : -1;
    int64_t max = mem_read_field("/sys/fs/cgroup/memory.max", ""), cur = mem_read_field("/sys/fs/cgroup/memory.current", "");
    if (max > 0 && cur >= 0) {
        int64_t left = max > cur ? max - cur : 0;
        if (avail < 0 || left < avail) avail = left;
    }
    return avail;
}

int mem_format(char *buf, size_t n, int64_t bytes)
{
    if (bytes < 1024) return snprintf(buf, n, "%lld bytes", (long long)bytes);
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = -1;
    while (v >= 1024 && u < 5) v /= 1024, u++;
    return snprintf(buf, n, "%.1f %s", v, unit[u]);
}
