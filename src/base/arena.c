/* arena.c — bump allocator in chained chunks; everything freed at once. */
#include <string.h>

#include "base.h"

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} chunk;

struct tsl_arena {
    chunk *head;
};

void tsl_assert_fail(const char *file, int line, const char *cond)
{
    fprintf(stderr, "%s:%d: internal error: assertion '%s' failed (a bug in tessel)\n", file,
            line, cond);
    abort();
}

tsl_arena *arena_create(void)
{
    return calloc(1, sizeof(tsl_arena));
}

void arena_free(tsl_arena *a)
{
    if (!a) return;
    for (chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}

void *arena_alloc(tsl_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        c = malloc(sizeof(chunk) + cap);
        if (!c) {
            fprintf(stderr, "tessel: out of memory (arena chunk of %zu bytes)\n", cap);
            abort();
        }
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

void *arena_realloc(tsl_arena *a, void *p, size_t old, size_t n)
{
    if (n <= old) return p;
    void *q = arena_alloc(a, n);
    if (p && old) memcpy(q, p, old);
    return q;
}

char *arena_strndup(tsl_arena *a, const char *s, size_t n)
{
    char *d = arena_alloc(a, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *arena_strdup(tsl_arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_printf(tsl_arena *a, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *d = arena_alloc(a, (size_t)n + 1);
    vsnprintf(d, (size_t)n + 1, fmt, aq);
    va_end(aq);
    return d;
}
