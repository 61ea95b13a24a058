/* table.c — a layout value printed as the `tessel layout` command and
 * tsl_layout_table() show it: the expression, its sizes, then its mapping as
 * a grid (CuTe's print_layout for data layouts: mode 0 down, the rest
 * across, each cell the offset; thread:local cells for distributed ones,
 * dim 0 down) or as one JSON object. Moved here from the CLI so that the
 * C API and the Python package print the same table. */
#include <string.h>

#include "layout/layout.h"

#define TABLE_MAX_CELLS (1 << 16)
#define TABLE_MAX_JSON (1 << 22)

/* A rows x cols grid of cell strings, printed with one column width. */
typedef struct grid {
    int64_t rows, cols;
    char **cell;
} grid;

static void grid_rule(strbuf *sb, const grid *g, size_t w, size_t wl)
{
    sb_printf(sb, "%*s +", (int)wl + 1, "");
    for (int64_t j = 0; j < g->cols; j++) {
        for (size_t k = 0; k < w + 2; k++) sb_putc(sb, '-');
        sb_putc(sb, '+');
    }
}

static void grid_print(strbuf *sb, const grid *g)
{
    size_t w = 1;
    for (int64_t i = 0; i < g->rows * g->cols; i++)
        if (strlen(g->cell[i]) > w) w = strlen(g->cell[i]);
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)(g->rows > g->cols ? g->rows : g->cols));
    size_t wl = strlen(buf); /* row label width */
    sb_printf(sb, "%*s ", (int)wl + 1, "");
    for (int64_t j = 0; j < g->cols; j++) sb_printf(sb, "  %*lld ", (int)w, (long long)j);
    sb_putc(sb, '\n');
    for (int64_t i = 0; i < g->rows; i++) {
        grid_rule(sb, g, w, wl);
        sb_printf(sb, "\n %*lld |", (int)wl, (long long)i);
        for (int64_t j = 0; j < g->cols; j++) sb_printf(sb, " %*s |", (int)w, g->cell[i * g->cols + j]);
        sb_putc(sb, '\n');
    }
    grid_rule(sb, g, w, wl);
    sb_putc(sb, '\n');
}

static tsl_status grid_init(grid *g, int64_t rows, int64_t cols, layout_err *e)
{
    g->rows = rows;
    g->cols = cols;
    g->cell = NULL;
    if (rows * cols > TABLE_MAX_CELLS) {
        snprintf(e->msg, sizeof e->msg, "%lld x %lld is too large for a table (at most %d cells); use JSON",
                 (long long)rows, (long long)cols, TABLE_MAX_CELLS);
        return TSL_ERR_ARG;
    }
    g->cell = calloc((size_t)(rows * cols) + 1, sizeof(char *));
    if (!g->cell) {
        snprintf(e->msg, sizeof e->msg, "out of memory for a %lld x %lld table", (long long)rows, (long long)cols);
        return TSL_ERR_NOMEM;
    }
    return TSL_OK;
}

static void grid_free(grid *g)
{
    for (int64_t i = 0; g->cell && i < g->rows * g->cols; i++) free(g->cell[i]);
    free(g->cell);
}

/* Rank 1: one row; otherwise mode 0 down and the rest across. */
static tsl_status table_data(strbuf *sb, const layout *l, layout_err *e)
{
    int64_t size = layout_size(l), rows = 1;
    if (layout_rank(l) > 1) {
        layout m0 = layout_mode(l, 0);
        rows = layout_size(&m0);
    }
    grid g;
    tsl_status st = grid_init(&g, rows, rows ? size / rows : 0, e);
    if (st) return st;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < g.cols; j++) {
            strbuf c = {0};
            sb_printf(&c, "%lld", (long long)layout_eval(l, i + j * rows));
            g.cell[i * g.cols + j] = sb_take(&c);
        }
    grid_print(sb, &g);
    grid_free(&g);
    return TSL_OK;
}

/* Coordinates: dim 0 down (rank >= 2), the other dims across, row-major. */
static tsl_status table_dist(strbuf *sb, const dist_layout *l, layout_err *e)
{
    int64_t rows = l->rank >= 2 ? l->shape[0] : 1, cols = 1;
    for (int d = l->rank >= 2 ? 1 : 0; d < l->rank; d++) cols *= l->shape[d];
    grid g;
    tsl_status st = grid_init(&g, rows, cols, e);
    if (st) return st;
    int64_t ts[64], ls[64];
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            int64_t coord[DIST_MAX_RANK], rest = j;
            for (int d = l->rank - 1; d >= (l->rank >= 2 ? 1 : 0); d--) {
                coord[d] = rest % l->shape[d];
                rest /= l->shape[d];
            }
            if (l->rank >= 2) coord[0] = i;
            int64_t n = dist_layout_owners(l, coord, ts, ls, 64);
            strbuf c = {0};
            for (int64_t k = 0; k < n && k < 64; k++)
                sb_printf(&c, "%sT%lld:%lld", k ? "," : "", (long long)ts[k], (long long)ls[k]);
            if (n > 64) sb_printf(&c, ",...(%lld)", (long long)n);
            g.cell[i * g.cols + j] = sb_take(&c);
        }
    grid_print(sb, &g);
    grid_free(&g);
    return TSL_OK;
}

static tsl_status json_data(strbuf *sb, const layout *l, layout_err *e)
{
    int64_t size = layout_size(l);
    if (size > TABLE_MAX_JSON) {
        snprintf(e->msg, sizeof e->msg, "size %lld is too large to list (at most %d)", (long long)size,
                 TABLE_MAX_JSON);
        return TSL_ERR_ARG;
    }
    sb_puts(sb, "{\"kind\":\"data\",\"shape\":");
    layout_print_json_shape(sb, l, 0);
    sb_puts(sb, ",\"stride\":");
    layout_print_json_shape(sb, l, 1);
    if (l->sw.b) sb_printf(sb, ",\"swizzle\":[%d,%d,%d]", l->sw.b, l->sw.m, l->sw.s);
    sb_printf(sb, ",\"size\":%lld,\"cosize\":%lld,\"map\":[", (long long)size, (long long)layout_cosize(l));
    for (int64_t i = 0; i < size; i++) sb_printf(sb, i ? ",%lld" : "%lld", (long long)layout_eval(l, i));
    sb_puts(sb, "]}\n");
    return TSL_OK;
}

static tsl_status json_dist(strbuf *sb, const dist_layout *l, layout_err *e)
{
    if (l->threads > TABLE_MAX_JSON / l->locals) {
        snprintf(e->msg, sizeof e->msg, "%lld entries are too many to list", (long long)(l->threads * l->locals));
        return TSL_ERR_ARG;
    }
    sb_puts(sb, "{\"kind\":\"distributed\",\"shape\":[");
    for (int d = 0; d < l->rank; d++) sb_printf(sb, d ? ",%lld" : "%lld", (long long)l->shape[d]);
    sb_printf(sb, "],\"threads\":%lld,\"locals\":%lld,\"map\":[", (long long)l->threads, (long long)l->locals);
    int64_t c[DIST_MAX_RANK];
    for (int64_t t = 0; t < l->threads; t++)
        for (int64_t i = 0; i < l->locals; i++) {
            dist_layout_map(l, t, i, c);
            sb_printf(sb, "%s[%lld,%lld,[", t || i ? "," : "", (long long)t, (long long)i);
            for (int d = 0; d < l->rank; d++) sb_printf(sb, d ? ",%lld" : "%lld", (long long)c[d]);
            sb_puts(sb, "]]");
        }
    sb_puts(sb, "]}\n");
    return TSL_OK;
}

tsl_status layout_table(strbuf *sb, const layout_value *v, int json, layout_err *e)
{
    e->offset = 0;
    if (v->kind == LAYOUT_VALUE_DIST) {
        if (json) return json_dist(sb, &v->dist, e);
        dist_layout_print(sb, &v->dist);
        sb_printf(sb, "  threads=%lld locals=%lld shape=(", (long long)v->dist.threads, (long long)v->dist.locals);
        for (int d = 0; d < v->dist.rank; d++) sb_printf(sb, d ? ",%lld" : "%lld", (long long)v->dist.shape[d]);
        sb_puts(sb, ")\n");
        return table_dist(sb, &v->dist, e);
    }
    if (json) return json_data(sb, &v->data, e);
    layout_value_print(sb, v);
    sb_printf(sb, "  size=%lld cosize=%lld\n", (long long)layout_size(&v->data), (long long)layout_cosize(&v->data));
    return table_data(sb, &v->data, e);
}
