/* base.h — the layer every other layer uses: arenas, growable strings,
 * diagnostics with source locations, hashing, dtype facts, assertions.
 * Depends on nothing but libc and the public header's types. */
#ifndef TSL_BASE_H
#define TSL_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tessel.h"

#if defined(__GNUC__)
#define TSL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TSL_PRINTF(f, a)
#endif

/* Internal invariants only; never for user input. */
#define TSL_ASSERT(c)                                                          \
    do {                                                                       \
        if (!(c)) tsl_assert_fail(__FILE__, __LINE__, #c);                     \
    } while (0)
_Noreturn void tsl_assert_fail(const char *file, int line, const char *cond);

#define TSL_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- arena: one per compilation, freed at once ----------------------- */
typedef struct tsl_arena tsl_arena;
tsl_arena *arena_create(void);
void arena_free(tsl_arena *a);                          /* NULL allowed */
void *arena_alloc(tsl_arena *a, size_t n);              /* zeroed, 16-aligned */
void *arena_realloc(tsl_arena *a, void *p, size_t old, size_t n);
char *arena_strdup(tsl_arena *a, const char *s);
char *arena_strndup(tsl_arena *a, const char *s, size_t n);
char *arena_printf(tsl_arena *a, const char *fmt, ...) TSL_PRINTF(2, 3);

/* Growable array in an arena: `T *items; int n, cap;` fields by name. */
#define ARENA_PUSH(arena, items, n, cap, value)                                \
    do {                                                                       \
        if ((n) == (cap)) {                                                    \
            int nc_ = (cap) ? 2 * (cap) : 8;                                   \
            (items) = arena_realloc((arena), (items), sizeof(*(items)) * (cap), \
                                    sizeof(*(items)) * nc_);                   \
            (cap) = nc_;                                                       \
        }                                                                      \
        (items)[(n)++] = (value);                                              \
    } while (0)

/* ---- strbuf: a malloc'd growable string ------------------------------ */
typedef struct strbuf {
    char *buf; /* always NUL-terminated once anything was written */
    size_t len, cap;
} strbuf;
void sb_putc(strbuf *b, char c);
void sb_puts(strbuf *b, const char *s);
void sb_putn(strbuf *b, const char *s, size_t n);
void sb_printf(strbuf *b, const char *fmt, ...) TSL_PRINTF(2, 3);
void sb_vprintf(strbuf *b, const char *fmt, va_list ap);
const char *sb_str(strbuf *b);   /* "" if empty */
char *sb_take(strbuf *b);        /* gives the malloc'd string, resets b */
void sb_free(strbuf *b);

/* ---- diagnostics ------------------------------------------------------- */
/* A source file as diagnostics see it. */
typedef struct tsl_source {
    const char *name; /* file name for messages */
    const char *text; /* whole source, NUL-terminated */
} tsl_source;

/* Collected user errors. The first error is the status; later ones are
 * appended to the message (at most diag_max). */
typedef struct tsl_diag {
    strbuf msg;
    int nerr;
    int max;          /* 0 means 20 */
    tsl_status first; /* status of the first error */
} tsl_diag;

/* Report `file:line:col: error: msg`, the source line, and a caret under
 * the column. `offset` is a byte offset into src->text. */
void diag_error_at(tsl_diag *d, const tsl_source *src, size_t offset, tsl_status st,
                   const char *fmt, ...) TSL_PRINTF(5, 6);
/* An error with no source location ("error: msg"). */
void diag_error(tsl_diag *d, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
void diag_note_at(tsl_diag *d, const tsl_source *src, size_t offset, const char *fmt, ...)
    TSL_PRINTF(4, 5);
/* 1-based line and column (in bytes) of an offset. */
void diag_line_col(const tsl_source *src, size_t offset, int *line, int *col);
void diag_reset(tsl_diag *d);
void diag_free(tsl_diag *d);

/* ---- hashing ----------------------------------------------------------- */
/* 64-bit FNV-1a, chainable: start with HASH_SEED. */
#define HASH_SEED 0xcbf29ce484222325ull
uint64_t hash_bytes(uint64_t h, const void *p, size_t n);
uint64_t hash_str(uint64_t h, const char *s);
uint64_t hash_u64(uint64_t h, uint64_t v);

/* ---- dtypes ------------------------------------------------------------ */
typedef struct dtype_info {
    const char *name; /* TC spelling */
    int bits;
    int is_float, is_signed;
} dtype_info;
const dtype_info *dtype_info_of(tsl_dtype t);
/* Parse a TC type name, including the aliases half, float, double. Returns
 * 0 on success. */
int dtype_parse(const char *name, size_t len, tsl_dtype *out);
/* Convert one element to/from double (f16 and bf16 by rounding to nearest
 * even). */
double dtype_load(tsl_dtype t, const void *p);
void dtype_store(tsl_dtype t, void *p, double v);
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t h);

/* ---- files ------------------------------------------------------------- */
/* Read a whole file into a malloc'd NUL-terminated buffer; NULL on failure
 * with errno set. */
char *file_read_all(const char *path, size_t *len);

#endif
