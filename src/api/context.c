/* context.c — the context: the holder of the last error message. */
#include "api/api.h"

TSL_GIVE tsl_context *tsl_context_create(void) { return calloc(1, sizeof(tsl_context)); }

void tsl_context_free(TSL_TAKE tsl_context *ctx)
{
    if (!ctx) return;
    diag_free(&ctx->diag);
    free(ctx);
}

const char *tsl_context_error(TSL_KEEP const tsl_context *ctx)
{
    if (!ctx || !ctx->diag.msg.buf) return "";
    return ctx->diag.msg.buf;
}

void tsl_context_clear_error(TSL_KEEP tsl_context *ctx)
{
    if (ctx) diag_reset(&ctx->diag);
}
