/* cached.c — an executable through the cache (driver.h): the one place a
 * program's prepared executable is looked up by its key (kind "exe": the
 * canonical program, target, arch, toolchain, options, tessel's build)
 * and, on a miss or an unusable row, compiled and stored. The API's runs,
 * the bench and the tuner's workers all come here; a row another process
 * wrote serves without scheduling, code generation or a compiler. */
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"

void drv_shapes_text(const lang_def *def, const lang_bound *b, strbuf *out)
{
    for (int i = 0; i < def->nparams; i++) {
        const lang_tensor *t = def->params[i];
        if (t->is_scalar) continue;
        int ti = t->index;
        sb_printf(out, "%s%s[", out->len ? ";" : "", tsl_dtype_name(t->dtype));
        for (int k = 0; k < t->rank; k++) sb_printf(out, "%s%lld", k ? "," : "", (long long)b->shapes[ti][k]);
        sb_putc(out, ']');
    }
}

tsl_status drv_prepare_cached(const lang_def *def, const drv_target *t, void *dev, const sched_options *opt,
                              const char *opt_text, drv_prepared **out, tsl_diag *d)
{
    char *canon = drv_program_canonical(def);
    char key[33];
    drv_program_key("exe", canon, t, dev, opt_text, NULL, key);
    drv_executable *x = NULL;
    rt_cache_entry e;
    tsl_status st = TSL_OK;
    rt_stats *rs = rt_stats_here();
    double t0 = rt_now_ms();
    if (rt_cache_get("exe", key, &e)) {
        tsl_diag rd = {0};
        if (drv_executable_read(e.data, e.size, &x, &rd) || x->target != t->id ||
            strcmp(x->arch, t->rt->arch(dev))) {
            rt_warn("kernel cache entry exe/%s cannot be used (%s); rebuilding it", key,
                    rd.nerr ? sb_str(&rd.msg) : "it is for another target");
            drv_executable_free(x);
            x = NULL;
        }
        diag_free(&rd);
    }
    rt_cache_entry_free(&e);
    for (int i = 0; x && i < x->plan->nkernels; i++) rs->cached += x->plan->kernels[i].nbins > 0;
    if (x) rs->load_ms += rt_now_ms() - t0;
    if (!x) {
        drv_options o = {.sched = opt};
        st = drv_compile(def, t, t->rt->arch(dev), &o, &x, d);
        if (!st) {
            strbuf blob = {0};
            drv_executable_write(&blob, x);
            rt_cache_put("exe", key, def->name, canon, opt_text, blob.buf, blob.len);
            sb_free(&blob);
        }
    }
    free(canon);
    if (st) return st;
    t0 = rt_now_ms();
    st = drv_prepare(x, t, dev, out, d);
    rs->load_ms += rt_now_ms() - t0;
    return st;
}
