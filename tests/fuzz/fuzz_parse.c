/* fuzz_parse.c — libFuzzer target over the TC front end: lex, parse,
 * check, infer ranges, print, and bind every def with a few size
 * assignments (small, size 1, a prime, and sizes derived from the input).
 * Any crash, leak, sanitizer report or hang is a bug: user input must only
 * ever produce diagnostics. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

static void fuzz_bind(tsl_arena *a, const lang_def *def, int64_t fill, const uint8_t *data, size_t n)
{
    int64_t *sizes = arena_alloc(a, sizeof(int64_t) * (size_t)(def->nsizes + 1));
    for (int i = 0; i < def->nsizes; i++)
        sizes[i] = fill >= 0 ? fill : (n ? (int64_t)(data[(size_t)i % n] % 17) : 1);
    tsl_diag d = {0};
    lang_bound *b = NULL;
    int any_zero = 0;
    for (int i = 0; i < def->nsizes; i++) any_zero |= sizes[i] == 0;
    if (lang_bind(a, def, sizes, &b, &d) == TSL_OK && b) {
        /* touch what the interpreter would read: a bound range is never
         * negative, and empty only when some size is 0 */
        for (int s = 0; s < def->nstmts; s++)
            for (int v = 0; v < def->stmts[s].nvars; v++) {
                int64_t lo = b->stmts[s].lo[v], hi = b->stmts[s].hi[v];
                if (hi < lo || (hi == lo && !any_zero)) __builtin_trap();
            }
    }
    diag_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    /* the source is NUL-terminated text; an embedded NUL ends it early */
    char *text = malloc(n + 1);
    if (!text) return 0;
    memcpy(text, data, n);
    text[n] = 0;
    tsl_source src = {.name = "fuzz.tc", .text = text};
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    lang_module *m = lang_parse_check(a, &src, &d);
    if (!m && d.nerr == 0) __builtin_trap(); /* a failure must say why */
    for (int i = 0; m && i < lang_module_count(m); i++) {
        const lang_def *def = lang_module_def(m, i);
        if (lang_module_find(m, def->name) != def) __builtin_trap();
        strbuf b = {0};
        lang_print_def(&b, def);
        lang_print_ranges(&b, def);
        sb_free(&b);
        fuzz_bind(a, def, 1, data, n);
        fuzz_bind(a, def, 7, data, n);
        fuzz_bind(a, def, -1, data, n);
    }
    diag_free(&d);
    arena_free(a);
    free(text);
    return 0;
}
