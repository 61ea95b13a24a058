/* layout_int.h — helpers shared by the files of src/layout (not for other
 * layers). */
#ifndef TSL_LAYOUT_INT_H
#define TSL_LAYOUT_INT_H

#include "layout/layout.h"

/* printf into e->msg (e may be NULL). */
void layout_errf(layout_err *e, const char *fmt, ...) TSL_PRINTF(2, 3);
/* Subtree at node `root` as its own layout (no swizzle). */
layout lay_subtree(const layout *l, int root);
/* Node index of child i of node p. */
int lay_child(const layout *l, int p, int i);

/* 1 when every offset of l (sum of (s-1)*|d| over leaves) fits 64 bits. */
int lay_span_ok(const layout *l);

/* 1 when a and b have the same normal form (the chain with commuting
 * axes sorted and mergeable axes merged): then they are the same
 * function. dist_layout_equal uses it first. */
int dist_same_normal_form(const dist_layout *a, const dist_layout *b);

/* *r = a * b; returns 1 on overflow. */
static inline int lay_mul(int64_t a, int64_t b, int64_t *r)
{
    return __builtin_mul_overflow(a, b, r);
}
static inline int lay_add(int64_t a, int64_t b, int64_t *r)
{
    return __builtin_add_overflow(a, b, r);
}

#endif
