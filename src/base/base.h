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

/* String -> int64 map in an arena (symbol tables: lookups in O(1), so a
 * program of n names is checked in O(n), not O(n^2)). Keys are not copied:
 * the bytes must live as long as the map (arena strings do). */
typedef struct strmap_slot {
    const char *key; /* NULL: empty */
    size_t len;
    uint64_t h;
    int64_t val;
} strmap_slot;
typedef struct strmap {
    tsl_arena *a;
    strmap_slot *slot;
    size_t cap, n;
} strmap;
void strmap_init(strmap *m, tsl_arena *a);
int64_t *strmap_find(const strmap *m, const char *key, size_t len); /* NULL: absent */
void strmap_put(strmap *m, const char *key, size_t len, int64_t val); /* insert or replace */

/* int64 -> pointer map in an arena: a table indexed by something of which
 * few entries are used (a kernel's tensors among a program's thousands). */
typedef struct imap_slot {
    int64_t key;
    void *val;
    int used;
} imap_slot;
typedef struct imap {
    tsl_arena *a;
    imap_slot *slot;
    size_t cap, n;
} imap;
void imap_init(imap *m, tsl_arena *a);
void *imap_get(const imap *m, int64_t key); /* NULL: absent */
void imap_put(imap *m, int64_t key, void *val);

/* ---- dtypes ------------------------------------------------------------
 * One descriptor per element type: every layer (the language, both
 * interpreters, the tile IR, both generators, the API) reads a dtype's
 * facts from here. Sizes are in bits; a tensor of a type whose width is
 * not a multiple of 8 is packed (tessel.h). Floats carry exponent and
 * mantissa bits and a bias: f16 = e5m10, bf16 = e8m7, f32 = e8m23, and
 * every low-bit float<N>e<X>m<Y> has bias 2^(X-1)-1. */
typedef enum dtype_kind { DT_FLOAT, DT_INT /* two's complement */, DT_UINT, DT_BOOL } dtype_kind;

/* What the all-ones exponent means (lowbit_conv.h has the conversion). */
typedef enum dtype_special {
    DT_SPECIAL_FINITE = 0, /* none: every code is a finite value (f6e3m2, f4e2m1, ...) */
    DT_SPECIAL_FN = 1,     /* no infinity; all-ones exponent and mantissa is NaN (f8e4m3) */
    DT_SPECIAL_IEEE = 2    /* infinity and NaN as IEEE 754 (f16 bf16 f32 f64 f8e5m2) */
} dtype_special;

typedef struct dtype_desc {
    uint8_t kind;     /* dtype_kind */
    uint8_t bits;     /* storage bits of one element, 1..64 */
    uint8_t exp, man; /* floats only */
    int16_t bias;     /* floats only: 2^(exp-1) - 1 */
    uint8_t special;  /* floats only: dtype_special */
} dtype_desc;

/* A descriptor from its defining fields (bias and policy follow from them:
 * f8e4m3 is e4m3fn, f8e5m2 and the >= 16-bit floats are IEEE, every other
 * float is finite only). Equality is on kind, bits, exp, man. */
dtype_desc dtype_desc_make(dtype_kind kind, int bits, int exp, int man);
int dtype_desc_eq(dtype_desc a, dtype_desc b);
/* 1 for the low-bit floats that the lowbit_conv.h conversion handles
 * (float<N>e<X>m<Y>, N <= 8). */
int dtype_desc_is_lowfloat(dtype_desc d);
/* 0 and *out set when d is one of tessel's dtypes (every descriptor the
 * parser accepts is one). */
int dtype_from_desc(dtype_desc d, tsl_dtype *out);

typedef struct dtype_info {
    const char *name;  /* TC spelling: float16, uint4, float6e3m2 */
    const char *tname; /* tile IR spelling: f16, u4, f6e3m2 */
    int bits;
    int is_float, is_signed;
    dtype_desc desc;
} dtype_info;
const dtype_info *dtype_info_of(tsl_dtype t);
static inline int dtype_is_float(tsl_dtype t) { return dtype_info_of(t)->is_float; }
/* A packed type: its width is not a whole number of bytes. */
static inline int dtype_is_packed(tsl_dtype t) { return dtype_info_of(t)->bits % 8 != 0; }
/* Parse a TC type name (float16, uint4, float6e3m2, the aliases half,
 * float, double). Returns 0 on success. dtype_parse_short also takes the
 * tile IR's spellings (f16, u4, f6e3m2). */
int dtype_parse(const char *name, size_t len, tsl_dtype *out);
int dtype_parse_short(const char *name, size_t len, tsl_dtype *out);
/* Convert one element to/from double. `base` is the tensor's first byte
 * and `e` the element's offset in elements: element e lives at bit
 * e * bits (dtype_load/store: a pointer to a byte-sized element). Floats
 * are rounded as dtype_round says; a value stored into an integer
 * dtype is truncated toward zero and saturated to its range, NaN 0
 * (docs/language.md, "Arithmetic and conversions"). */
double dtype_get(tsl_dtype t, const void *base, int64_t e);
void dtype_set(tsl_dtype t, void *base, int64_t e, double v);
double dtype_load(tsl_dtype t, const void *p);
void dtype_store(tsl_dtype t, void *p, double v);
/* The raw bits of packed element e (low-bit types; any width <= 64 for
 * byte-sized ones) and their store. */
uint64_t dtype_get_bits(tsl_dtype t, const void *base, int64_t e);
void dtype_set_bits(tsl_dtype t, void *base, int64_t e, uint64_t bits);
/* v rounded to what float dtype t holds: f16/bf16 and the low-bit floats
 * through float32 (then to nearest even, saturating), f32 to float, f64
 * unchanged. */
double dtype_round(tsl_dtype t, double v);
/* max and min of two floats as every layer defines them (the language's
 * max/min/fmax/fmin and max=/min=, the tile IR's max/min/reduce.max/min):
 * IEEE 754-2019 maximumNumber / minimumNumber, C23's fmaximum_num. A NaN
 * operand is ignored (NaN only when both are) and -0 orders below +0, so
 * the result does not depend on the operands' order and a reduction may
 * combine in any order. PTX max.f32 / min.f32 (one FMNMX) compute exactly
 * this; C's fmax leaves the zero's sign open. */
double dtype_max_num(double x, double y);
double dtype_min_num(double x, double y);
/* The low-bit float conversion (lowbit_conv.h) for descriptor d. */
float dtype_lowfloat_decode(dtype_desc d, uint32_t code);
uint32_t dtype_lowfloat_encode(dtype_desc d, float x);
/* The dtype a low-bit tensor crosses into generated kernels as (its exact
 * logical values, sched/lowbit.c): int8/uint8 for the packed integers,
 * float32 for the low-bit floats; every other dtype is its own. */
tsl_dtype dtype_carrier(tsl_dtype t);
/* Smallest and largest value of an integer dtype of any width <= 63 bits. */
int64_t dtype_int_min(tsl_dtype t);
int64_t dtype_int_max(tsl_dtype t);
/* v converted to integer (or bool) dtype t: the low bits kept, sign
 * extended for signed types (int8: 300 -> 44, uint16: -1 -> 65535); a
 * uint64 keeps its bit pattern, bool is v != 0. */
int64_t dtype_int_wrap(tsl_dtype t, int64_t v);
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t h);

/* ---- memory ------------------------------------------------------------ */
/* Bytes the machine can still give this process without swapping (the
 * kernel's MemAvailable, or less under a cgroup limit); -1 if unknown. */
int64_t mem_available(void);
/* "1.5 GiB" into buf (snprintf's return). */
int mem_format(char *buf, size_t n, int64_t bytes);

/* ---- files ------------------------------------------------------------- */
/* Read a whole file into a malloc'd NUL-terminated buffer; NULL on failure
 * with errno set. */
char *file_read_all(const char *path, size_t *len);
/* The same, refusing (errno EFBIG, after reading at most max + 64 KiB) a
 * file longer than max bytes: a device or pipe that never ends. */
char *file_read_max(const char *path, size_t max, size_t *len);
/* Largest program source (TC or tile text) accepted: generated programs of
 * 100,000 statements are a few MB; anything beyond this is not a program. */
#define TSL_MAX_SOURCE_BYTES ((size_t)64 << 20)

#endif
