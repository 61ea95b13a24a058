/* diag.c — user-facing diagnostics: `file:line:col: error: msg`, the
 * source line, and a caret under the column. */
#include <string.h>

#include "base.h"

void diag_line_col(const tsl_source *src, size_t offset, int *line, int *col)
{
    int l = 1, c = 1;
    size_t len = strlen(src->text);
    if (offset > len) offset = len;
    for (size_t i = 0; i < offset; i++) {
        if (src->text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static void diag_emit(tsl_diag *d, const tsl_source *src, size_t offset, const char *kind,
                      const char *fmt, va_list ap)
{
    int line, col;
    diag_line_col(src, offset, &line, &col);
    if (d->msg.len) sb_putc(&d->msg, '\n');
    sb_printf(&d->msg, "%s:%d:%d: %s: ", src->name ? src->name : "<input>", line, col, kind);
    sb_vprintf(&d->msg, fmt, ap);
    /* the source line and a caret; tabs are kept so the caret lines up */
    const char *text = src->text;
    size_t len = strlen(text);
    if (offset > len) offset = len;
    size_t start = offset, end = offset;
    while (start > 0 && text[start - 1] != '\n') start--;
    while (end < len && text[end] != '\n') end++;
    sb_putc(&d->msg, '\n');
    sb_putn(&d->msg, text + start, end - start);
    sb_putc(&d->msg, '\n');
    for (size_t i = start; i < offset; i++) sb_putc(&d->msg, text[i] == '\t' ? '\t' : ' ');
    sb_putc(&d->msg, '^');
}

void diag_error_at(tsl_diag *d, const tsl_source *src, size_t offset, tsl_status st,
                   const char *fmt, ...)
{
    int max = d->max ? d->max : 20;
    if (d->nerr == 0) d->first = st;
    if (d->nerr++ >= max) return;
    va_list ap;
    va_start(ap, fmt);
    diag_emit(d, src, offset, "error", fmt, ap);
    va_end(ap);
}

void diag_note_at(tsl_diag *d, const tsl_source *src, size_t offset, const char *fmt, ...)
{
    int max = d->max ? d->max : 20;
    if (d->nerr > max) return;
    va_list ap;
    va_start(ap, fmt);
    diag_emit(d, src, offset, "note", fmt, ap);
    va_end(ap);
}

void diag_error(tsl_diag *d, tsl_status st, const char *fmt, ...)
{
    int max = d->max ? d->max : 20;
    if (d->nerr == 0) d->first = st;
    if (d->nerr++ >= max) return;
    if (d->msg.len) sb_putc(&d->msg, '\n');
    sb_puts(&d->msg, "error: ");
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&d->msg, fmt, ap);
    va_end(ap);
}

void diag_reset(tsl_diag *d)
{
    sb_free(&d->msg);
    d->nerr = 0;
    d->first = TSL_OK;
}

void diag_free(tsl_diag *d) { diag_reset(d); }
