/* executable.c — a drv_executable as bytes and back: what the cache
 * stores. Layout: the magic "TSLEXE1\n", then length-prefixed (8-byte
 * little-endian) fields — target, arch, options, tile text — and last the
 * launch plan's own bytes (runtime/plan_io.c). Reading checks every
 * length; the plan reader checks the rest. */
#include <string.h>

#include "driver/driver.h"

static const char exe_magic[8] = {'T', 'S', 'L', 'E', 'X', 'E', '1', '\n'};

static void put_field(strbuf *o, const void *p, size_t n)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)n >> (8 * i));
    sb_putn(o, (const char *)b, 8);
    if (n) sb_putn(o, p, n);
}

void drv_executable_write(strbuf *out, const drv_executable *x)
{
    sb_putn(out, exe_magic, sizeof exe_magic);
    char target[8];
    snprintf(target, sizeof target, "%d", (int)x->target);
    put_field(out, target, strlen(target));
    put_field(out, x->arch, strlen(x->arch));
    put_field(out, x->options, strlen(x->options));
    put_field(out, x->tile, strlen(x->tile));
    strbuf plan = {0};
    rt_plan_write(&plan, x->plan);
    put_field(out, plan.buf, plan.len);
    sb_free(&plan);
}

/* The next field as [*p, *p + *n); 0 when it runs past the end. */
static int get_field(const unsigned char *data, size_t size, size_t *at, const unsigned char **p, size_t *n)
{
    if (size - *at < 8) return 0;
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)data[*at + (size_t)i] << (8 * i);
    *at += 8;
    if (len > size - *at) return 0;
    *p = data + *at;
    *n = (size_t)len;
    *at += (size_t)len;
    return 1;
}

tsl_status drv_executable_read(const void *data, size_t size, drv_executable **out, tsl_diag *d)
{
    *out = NULL;
    const unsigned char *b = data, *f[5];
    size_t n[5], at = sizeof exe_magic;
    int ok = size >= sizeof exe_magic && !memcmp(b, exe_magic, sizeof exe_magic);
    for (int i = 0; ok && i < 5; i++) ok = get_field(b, size, &at, &f[i], &n[i]);
    ok = ok && at == size && n[0] == 1 && (f[0][0] == '1' || f[0][0] == '2') && n[1] < 64;
    for (int i = 1; ok && i < 4; i++) ok = !memchr(f[i], 0, n[i]);
    if (!ok) {
        diag_error(d, TSL_ERR_IO, "a cached executable is damaged (%zu bytes, not the layout tessel writes)", size);
        return TSL_ERR_IO;
    }
    drv_executable *x = calloc(1, sizeof *x);
    if (!x || !(x->options = strndup((const char *)f[2], n[2])) || !(x->tile = strndup((const char *)f[3], n[3]))) {
        drv_executable_free(x);
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    x->target = f[0][0] == '2' ? TSL_TARGET_CUDA : TSL_TARGET_CPU;
    memcpy(x->arch, f[1], n[1]);
    /* the run's CPU threads are the options' (not a field of their own):
     * an executable served by the cache runs as one compiled here would */
    sched_options o = sched_options_defaults;
    tsl_status st = sched_options_parse(x->options, &o, d);
    x->threads = x->target == TSL_TARGET_CPU ? o.threads : 0;
    if (!st) st = rt_plan_read(f[4], n[4], &x->plan, d);
    if (st) {
        drv_executable_free(x);
        return st;
    }
    *out = x;
    return TSL_OK;
}
