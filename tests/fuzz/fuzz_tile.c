/* fuzz_tile.c — libFuzzer target over the tile IR front end: parse, verify,
 * print, re-parse the printed text (it must parse, verify and print the
 * same bytes again: docs/tile-ir.md's round trip), and expand pipelines
 * (then verify again). Any crash, leak, sanitizer report or hang is a bug:
 * a tile program, however hostile, only ever produces diagnostics. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tile/pipeline.h"
#include "tile/tile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    char *text = malloc(n + 1);
    if (!text) return 0;
    memcpy(text, data, n);
    text[n] = 0;
    tsl_source src = {.name = "fuzz.tile", .text = text};
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    tile_module *m = NULL;
    tsl_status st = tile_parse(a, &src, &d, &m);
    if (st != TSL_OK && d.nerr == 0) __builtin_trap(); /* a failure must say why */
    if (st == TSL_OK) {
        st = tile_verify(m, &src, &d);
        if (st != TSL_OK && d.nerr == 0) __builtin_trap();
    }
    if (st == TSL_OK) {
        /* print -> parse -> print is byte-identical and stays valid */
        char *p1 = tile_print(m);
        tsl_source s2 = {.name = "printed.tile", .text = p1};
        tsl_arena *a2 = arena_create();
        tsl_diag d2 = {0};
        tile_module *m2 = NULL;
        if (tile_parse(a2, &s2, &d2, &m2) != TSL_OK) __builtin_trap();
        if (tile_verify(m2, &s2, &d2) != TSL_OK) __builtin_trap();
        char *p2 = tile_print(m2);
        if (strcmp(p1, p2) != 0) __builtin_trap();
        free(p2);
        diag_free(&d2);
        arena_free(a2);
        free(p1);
        /* pipeline expansion: an error is fine (a budget), a crash is not;
         * what it produces must verify */
        tsl_diag d3 = {0};
        if (tile_pipeline_expand(m, &src, 0, &d3) == TSL_OK) {
            if (tile_verify(m, &src, &d3) != TSL_OK) __builtin_trap();
        } else if (d3.nerr == 0) {
            __builtin_trap();
        }
        diag_free(&d3);
    }
    diag_free(&d);
    arena_free(a);
    free(text);
    return 0;
}
