/* cmd_layout.c — `tessel layout EXPR [--json]`: evaluate a layout
 * expression and print its mapping (tsl_layout_table: a grid, CuTe's
 * print_layout for data layouts and thread:local cells for distributed
 * ones, or one JSON object). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tessel.h"

int cmd_layout(int argc, char **argv)
{
    const char *expr = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: tessel layout EXPR [--json]\n"
                   "  EXPR: (4,(2,4)):(2,(1,8)), compose(A,B), complement(A,M), divide(A,B),\n"
                   "        zipped_divide, tiled_divide, product(A,B), blocked_product,\n"
                   "        raked_product, coalesce(A), right_inverse(A), swizzle(B,M,S,A),\n"
                   "        [A,B] (by-mode tiler), local(..).spatial(..)/column_local(..) ...,\n"
                   "        replicate(n), reduce(L,d)\n"
                   "  see docs/layout.md\n");
            return 0;
        } else if (!expr)
            expr = argv[i];
        else {
            fprintf(stderr, "tessel layout: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!expr) {
        fprintf(stderr, "usage: tessel layout EXPR [--json]\n");
        return 2;
    }
    tsl_context *ctx = tsl_context_create();
    char *text = NULL;
    tsl_status st = ctx ? tsl_layout_table(ctx, expr, json, &text) : TSL_ERR_NOMEM;
    if (st) {
        const char *msg = ctx ? tsl_context_error(ctx) : "error: out of memory";
        fprintf(stderr, "%s%s", msg, *msg && msg[strlen(msg) - 1] == '\n' ? "" : "\n");
    } else {
        fputs(text, stdout);
    }
    free(text);
    tsl_context_free(ctx);
    return st ? 1 : 0;
}
