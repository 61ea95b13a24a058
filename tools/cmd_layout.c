/* cmd_layout.c — `tessel layout EXPR [--json]`: evaluate a layout
 * expression and print its mapping, as a grid (CuTe's print_layout for data
 * layouts; thread:local cells for distributed ones) or as one JSON object. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "layout/layout.h"

#define MAX_TABLE_CELLS (1 << 16)
#define MAX_JSON_ENTRIES (1 << 22)

/* A rows x cols grid of cell strings, printed with one column width. */
typedef struct grid {
    int64_t rows, cols;
    char **cell;
} grid;

static void grid_print(const grid *g, FILE *f)
{
    size_t w = 1;
    for (int64_t i = 0; i < g->rows * g->cols; i++)
        if (strlen(g->cell[i]) > w) w = strlen(g->cell[i]);
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)(g->rows > g->cols ? g->rows : g->cols));
    size_t wl = strlen(buf); /* row label width */
    fprintf(f, "%*s ", (int)wl + 1, "");
    for (int64_t j = 0; j < g->cols; j++) fprintf(f, "  %*lld ", (int)w, (long long)j);
    fputc('\n', f);
    for (int64_t i = 0; i < g->rows; i++) {
        fprintf(f, "%*s +", (int)wl + 1, "");
        for (int64_t j = 0; j < g->cols; j++) {
            for (size_t k = 0; k < w + 2; k++) fputc('-', f);
            fputc('+', f);
        }
        fprintf(f, "\n %*lld |", (int)wl, (long long)i);
        for (int64_t j = 0; j < g->cols; j++) fprintf(f, " %*s |", (int)w, g->cell[i * g->cols + j]);
        fputc('\n', f);
    }
    fprintf(f, "%*s +", (int)wl + 1, "");
    for (int64_t j = 0; j < g->cols; j++) {
        for (size_t k = 0; k < w + 2; k++) fputc('-', f);
        fputc('+', f);
    }
    fputc('\n', f);
}

/* cols < 0: the product of the columns' extents overflowed (cols_text
 * says what they were). */
static int grid_init(grid *g, int64_t rows, int64_t cols, const char *cols_text)
{
    g->rows = rows;
    g->cols = cols;
    int64_t cells;
    if (cols < 0 || __builtin_mul_overflow(rows, cols, &cells) || cells > MAX_TABLE_CELLS) {
        fprintf(stderr,
                "tessel layout: error: %lld x %s is too large for a table (at most %d cells); "
                "use --json\n",
                (long long)rows, cols_text, MAX_TABLE_CELLS);
        g->cell = NULL;
        return 1;
    }
    g->cell = calloc((size_t)(rows * cols), sizeof(char *));
    return 0;
}

static void grid_free(grid *g)
{
    for (int64_t i = 0; i < g->rows * g->cols; i++) free(g->cell[i]);
    free(g->cell);
}

/* Rank 1: one row; otherwise mode 0 down and the rest across. */
static int print_data_table(const layout *l)
{
    int64_t size = layout_size(l), rows = 1;
    if (layout_rank(l) > 1) {
        layout m0 = layout_mode(l, 0);
        rows = layout_size(&m0);
    }
    grid g;
    char ct[32];
    snprintf(ct, sizeof ct, "%lld", (long long)(size / rows));
    if (grid_init(&g, rows, size / rows, ct)) return 1;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < g.cols; j++) {
            strbuf sb = {0};
            sb_printf(&sb, "%lld", (long long)layout_eval(l, i + j * rows));
            g.cell[i * g.cols + j] = sb_take(&sb);
        }
    grid_print(&g, stdout);
    grid_free(&g);
    return 0;
}

/* Coordinates: dim 0 down (rank >= 2), the other dims across, row-major. */
static int print_dist_table(const dist_layout *l)
{
    int64_t rows = l->rank >= 2 ? l->shape[0] : 1, cols = 1;
    strbuf ct = {0};
    for (int d = l->rank >= 2 ? 1 : 0; d < l->rank; d++) {
        sb_printf(&ct, "%s%lld", ct.len ? " x " : "", (long long)l->shape[d]);
        if (cols >= 0 && __builtin_mul_overflow(cols, l->shape[d], &cols)) cols = -1;
    }
    grid g;
    int bad = grid_init(&g, rows, cols, sb_str(&ct));
    sb_free(&ct);
    if (bad) return 1;
    int64_t *ts = malloc(sizeof(int64_t) * 64), *ls = malloc(sizeof(int64_t) * 64);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            int64_t coord[DIST_MAX_RANK], rest = j;
            for (int d = l->rank - 1; d >= (l->rank >= 2 ? 1 : 0); d--) {
                coord[d] = rest % l->shape[d];
                rest /= l->shape[d];
            }
            if (l->rank >= 2) coord[0] = i;
            int64_t n = dist_layout_owners(l, coord, ts, ls, 64);
            strbuf sb = {0};
            for (int64_t k = 0; k < n && k < 64; k++)
                sb_printf(&sb, "%sT%lld:%lld", k ? "," : "", (long long)ts[k], (long long)ls[k]);
            if (n > 64) sb_printf(&sb, ",...(%lld)", (long long)n);
            g.cell[i * g.cols + j] = sb_take(&sb);
        }
    free(ts);
    free(ls);
    grid_print(&g, stdout);
    grid_free(&g);
    return 0;
}

static int print_data_json(const layout *l)
{
    int64_t size = layout_size(l);
    if (size > MAX_JSON_ENTRIES) {
        fprintf(stderr, "tessel layout: error: size %lld is too large to list (at most %d)\n",
                (long long)size, MAX_JSON_ENTRIES);
        return 1;
    }
    strbuf sb = {0};
    sb_puts(&sb, "{\"kind\":\"data\",\"shape\":");
    layout_print_json_shape(&sb, l, 0);
    sb_puts(&sb, ",\"stride\":");
    layout_print_json_shape(&sb, l, 1);
    if (l->sw.b) sb_printf(&sb, ",\"swizzle\":[%d,%d,%d]", l->sw.b, l->sw.m, l->sw.s);
    sb_printf(&sb, ",\"size\":%lld,\"cosize\":%lld,\"map\":[", (long long)size,
              (long long)layout_cosize(l));
    for (int64_t i = 0; i < size; i++)
        sb_printf(&sb, i ? ",%lld" : "%lld", (long long)layout_eval(l, i));
    sb_puts(&sb, "]}\n");
    fputs(sb_str(&sb), stdout);
    sb_free(&sb);
    return 0;
}

static int print_dist_json(const dist_layout *l)
{
    if (l->threads > MAX_JSON_ENTRIES / l->locals) {
        fprintf(stderr, "tessel layout: error: %lld threads x %lld locals are too many to list (at most %d)\n",
                (long long)l->threads, (long long)l->locals, MAX_JSON_ENTRIES);
        return 1;
    }
    strbuf sb = {0};
    sb_puts(&sb, "{\"kind\":\"distributed\",\"shape\":[");
    for (int d = 0; d < l->rank; d++) sb_printf(&sb, d ? ",%lld" : "%lld", (long long)l->shape[d]);
    sb_printf(&sb, "],\"threads\":%lld,\"locals\":%lld,\"map\":[", (long long)l->threads,
              (long long)l->locals);
    int64_t c[DIST_MAX_RANK];
    for (int64_t t = 0; t < l->threads; t++)
        for (int64_t i = 0; i < l->locals; i++) {
            dist_layout_map(l, t, i, c);
            sb_printf(&sb, "%s[%lld,%lld,[", t || i ? "," : "", (long long)t, (long long)i);
            for (int d = 0; d < l->rank; d++) sb_printf(&sb, d ? ",%lld" : "%lld", (long long)c[d]);
            sb_puts(&sb, "]]");
        }
    sb_puts(&sb, "]}\n");
    fputs(sb_str(&sb), stdout);
    sb_free(&sb);
    return 0;
}

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
    layout_value *v = calloc(1, sizeof *v);
    layout_err e;
    tsl_status st = layout_parse(expr, strlen(expr), v, &e);
    if (st) {
        fprintf(stderr, "<layout>:1:%zu: error: %s\n  %s\n  %*s^\n", e.offset + 1, e.msg, expr,
                (int)e.offset, "");
        free(v);
        return 1;
    }
    int rc;
    if (v->kind == LAYOUT_VALUE_DIST) {
        if (json) {
            rc = print_dist_json(&v->dist);
        } else {
            strbuf sb = {0};
            dist_layout_print(&sb, &v->dist);
            printf("%s  threads=%lld locals=%lld shape=(", sb_str(&sb), (long long)v->dist.threads,
                   (long long)v->dist.locals);
            for (int d = 0; d < v->dist.rank; d++)
                printf(d ? ",%lld" : "%lld", (long long)v->dist.shape[d]);
            printf(")\n");
            sb_free(&sb);
            rc = print_dist_table(&v->dist);
        }
    } else {
        if (json) {
            rc = print_data_json(&v->data);
        } else {
            strbuf sb = {0};
            layout_value_print(&sb, v);
            printf("%s  size=%lld cosize=%lld\n", sb_str(&sb), (long long)layout_size(&v->data),
                   (long long)layout_cosize(&v->data));
            sb_free(&sb);
            rc = print_data_table(&v->data);
        }
    }
    free(v);
    return rc;
}
