/* layout.c — tsl_layout_table: a layout expression evaluated and printed
 * as `tessel layout` prints it (src/layout/table.c), errors located in
 * the expression with a caret. */
#include <string.h>

#include "api/api.h"
#include "layout/layout.h"

tsl_status tsl_layout_table(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *expr, int json,
                            TSL_GIVE char **out)
{
    if (!ctx) return TSL_ERR_ARG;
    if (!out) return api_error(ctx, TSL_ERR_ARG, "tsl_layout_table: out is NULL");
    *out = NULL;
    if (!expr) return api_error(ctx, TSL_ERR_ARG, "tsl_layout_table: expr is NULL");
    layout_value *v = calloc(1, sizeof *v);
    if (!v) return api_error(ctx, TSL_ERR_NOMEM, "out of memory");
    layout_err e = {{0}, 0};
    strbuf b = {0};
    tsl_status st = layout_parse(expr, strlen(expr), v, &e);
    if (st) {
        /* "<layout>:1:COL: error: MSG", the expression and a caret */
        tsl_diag *d = api_diag(ctx);
        diag_reset(d);
        d->first = st;
        d->nerr = 1;
        sb_printf(&d->msg, "<layout>:1:%zu: error: %s\n  %s\n  %*s^\n", e.offset + 1, e.msg, expr,
                  (int)e.offset, "");
    } else if ((st = layout_table(&b, v, json, &e))) {
        api_error(ctx, st, "%s", e.msg);
    } else if (!(*out = sb_take(&b))) {
        st = api_error(ctx, TSL_ERR_NOMEM, "out of memory");
    }
    sb_free(&b);
    free(v);
    return st;
}
