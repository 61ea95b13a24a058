/* fuzz_layout.c — libFuzzer target over the layout language of `tessel
 * layout` and the tile IR: parse and evaluate an expression (every algebra
 * operation runs inside the parser), print it and parse the printed text
 * again (the same value and the same bytes: docs/layout.md's round trip),
 * then query the value as the CLI's tables do — size, cosize, evaluation
 * at bounded points, and for distributed layouts map -> owner. Any crash,
 * leak, sanitizer report or hang is a bug; an expression only ever gives
 * a value or an error with an offset inside the text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

/* At most this many points are evaluated per value. */
#define PROBES 64

/* The k-th of `of` points spread over [0, n): below n without overflow. */
static int64_t spread(int64_t k, int64_t of, int64_t n)
{
    int64_t base = k * (n / of);
    return base + k % (n - base);
}

static void probe_data(const layout *l)
{
    int64_t size = layout_size(l);
    if (size < 1) __builtin_trap();
    int64_t cosize = layout_cosize(l);
    (void)cosize;
    for (int64_t k = 0; k < PROBES; k++) (void)layout_eval(l, spread(k, PROBES, size));
    (void)layout_eval(l, size - 1);
    layout c = layout_coalesce(l);
    if (layout_size(&c) != size) __builtin_trap();
    int64_t sh[LAYOUT_MAX_NODES], sd[LAYOUT_MAX_NODES];
    int nl = layout_leaves(l, sh, sd);
    if (nl < 1 || nl > LAYOUT_MAX_NODES) __builtin_trap();
}

static void probe_dist(const dist_layout *l)
{
    if (l->threads < 1 || l->locals < 1) __builtin_trap();
    for (int64_t tk = 0; tk < 8; tk++)
        for (int64_t ik = 0; ik < 8; ik++) {
            int64_t t = spread(tk, 8, l->threads), i = spread(ik, 8, l->locals);
            int64_t c[DIST_MAX_RANK], t2, i2;
            if (dist_layout_map(l, t, i, c)) __builtin_trap();
            for (int d = 0; d < l->rank; d++)
                if (c[d] < 0 || c[d] >= l->shape[d]) __builtin_trap();
            /* the coordinate (thread, local) holds has an owner */
            if (dist_layout_owner(l, c, &t2, &i2)) __builtin_trap();
            int64_t ts[4], ls[4];
            if (dist_layout_owners(l, c, ts, ls, 4) < 1) __builtin_trap();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    layout_value *v = calloc(1, sizeof *v), *w = calloc(1, sizeof *w);
    if (!v || !w) {
        free(v);
        free(w);
        return 0;
    }
    layout_err e;
    tsl_status st = layout_parse((const char *)data, n, v, &e);
    if (st != TSL_OK) {
        if (!e.msg[0] || e.offset > n) __builtin_trap(); /* say why, and where */
    } else {
        strbuf p1 = {0}, p2 = {0};
        layout_value_print(&p1, v);
        if (layout_parse(sb_str(&p1), p1.len, w, &e) != TSL_OK) __builtin_trap();
        layout_value_print(&p2, w);
        if (strcmp(sb_str(&p1), sb_str(&p2)) != 0) __builtin_trap();
        if (v->kind == LAYOUT_VALUE_DIST) {
            if (!dist_layout_equal(&v->dist, &w->dist)) __builtin_trap();
            probe_dist(&v->dist);
        } else {
            if (v->kind == LAYOUT_VALUE_DATA && !layout_equal(&v->data, &w->data)) __builtin_trap();
            probe_data(&v->data);
        }
        sb_free(&p1);
        sb_free(&p2);
    }
    free(v);
    free(w);
    return 0;
}
