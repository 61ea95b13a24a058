/* strbuf.c — malloc'd growable strings for messages and generated code. */
#include <errno.h>
#include <string.h>

#include "base.h"

static void sb_grow(strbuf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) cap *= 2;
    char *nb = realloc(b->buf, cap);
    if (!nb) {
        fprintf(stderr, "tessel: out of memory (string of %zu bytes)\n", cap);
        abort();
    }
    b->buf = nb;
    b->cap = cap;
}

void sb_putn(strbuf *b, const char *s, size_t n)
{
    sb_grow(b, n);
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = 0;
}

void sb_putc(strbuf *b, char c) { sb_putn(b, &c, 1); }
void sb_puts(strbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_vprintf(strbuf *b, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0) return;
    sb_grow(b, (size_t)n);
    vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *sb_str(strbuf *b) { return b->buf ? b->buf : ""; }

char *sb_take(strbuf *b)
{
    char *s = b->buf;
    if (!s) {
        s = malloc(1);
        if (s) s[0] = 0;
    }
    b->buf = NULL;
    b->len = b->cap = 0;
    return s;
}

void sb_free(strbuf *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
}

char *file_read_max(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    strbuf b = {0};
    char tmp[65536];
    size_t n;
    int big = 0;
    while (!big && (n = fread(tmp, 1, sizeof tmp, f)) > 0) {
        if (n > max - b.len) big = 1; /* stop reading: /dev/zero never ends */
        else sb_putn(&b, tmp, n);
    }
    int err = ferror(f);
    fclose(f);
    if (err || big) {
        sb_free(&b);
        errno = big ? EFBIG : EIO;
        return NULL;
    }
    if (len) *len = b.len;
    return sb_take(&b);
}

char *file_read_all(const char *path, size_t *len)
{
    return file_read_max(path, SIZE_MAX, len);
}
