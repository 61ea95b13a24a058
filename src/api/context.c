/* context.c — the context: the holder of each thread's last error.
 *
 * A context, its programs and their args may be used from several threads
 * at once (each run with its own tsl_args), so the error a call leaves is
 * kept per calling thread: a small list of (thread, diag) guarded by a
 * mutex, with the calling thread's entry remembered in thread-local storage
 * so that the common case takes no lock. The list grows by one entry per
 * thread that ever used the context and is freed with it. */
#include <pthread.h>
#include <stdatomic.h>

#include "api/api.h"
#include "api/env.h"

typedef struct api_thread_diag {
    struct api_thread_diag *next;
    pthread_t thread;
    tsl_diag diag;
} api_thread_diag;

/* A context's serial number tells a live context from a freed one whose
 * memory a new context reuses (the thread-local cache keys on both). */
static atomic_uint_fast64_t api_context_serial;

static _Thread_local struct {
    const tsl_context *ctx;
    uint64_t serial;
    tsl_diag *diag;
} api_tls;

TSL_GIVE tsl_context *tsl_context_create(void)
{
    api_settings_load(); /* the environment, read once (env.c) */
    tsl_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    if (pthread_mutex_init(&ctx->mu, NULL)) {
        free(ctx);
        return NULL;
    }
    ctx->serial = atomic_fetch_add(&api_context_serial, 1) + 1;
    return ctx;
}

void tsl_context_free(TSL_TAKE tsl_context *ctx)
{
    if (!ctx) return;
    for (api_thread_diag *t = ctx->threads, *next; t; t = next) {
        next = t->next;
        diag_free(&t->diag);
        free(t);
    }
    pthread_mutex_destroy(&ctx->mu);
    if (api_tls.ctx == ctx) api_tls.ctx = NULL;
    free(ctx);
}

/* The calling thread's entry, made on first use; NULL only when out of
 * memory (then a shared fallback entry keeps the message). */
tsl_diag *api_diag(tsl_context *ctx)
{
    if (api_tls.ctx == ctx && api_tls.serial == ctx->serial) return api_tls.diag;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&ctx->mu);
    api_thread_diag *t = ctx->threads;
    while (t && !pthread_equal(t->thread, self)) t = t->next;
    if (!t && (t = calloc(1, sizeof *t))) {
        t->thread = self;
        t->next = ctx->threads;
        ctx->threads = t;
    }
    pthread_mutex_unlock(&ctx->mu);
    if (!t) return &ctx->oom_diag;
    api_tls.ctx = ctx;
    api_tls.serial = ctx->serial;
    api_tls.diag = &t->diag;
    return &t->diag;
}

const char *tsl_context_error(TSL_KEEP const tsl_context *ctx)
{
    if (!ctx) return "";
    const tsl_diag *d = api_diag((tsl_context *)ctx);
    return d->msg.buf ? d->msg.buf : "";
}

void tsl_context_clear_error(TSL_KEEP tsl_context *ctx)
{
    if (ctx) diag_reset(api_diag(ctx));
}
