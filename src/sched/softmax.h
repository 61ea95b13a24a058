/* softmax.h — the online softmax as a strategy building block (softmax.c):
 * the running row max m and row sum l of a stream of score blocks, with the
 * rescaling of an accumulator that sums P · (something) over the blocks
 * (flash attention's inner step; docs/sched.md "The attention strategy").
 *
 * The block works on tile text (the form the attention strategy writes
 * and parses); every name it defines starts with the caller's prefix. */
#ifndef TSL_SCHED_SOFTMAX_H
#define TSL_SCHED_SOFTMAX_H

#include "base/base.h"

/* The register tiles of one online softmax: scores are [rows, cols] f32 in
 * layout `lay`; m and l are [rows, 1] f32 in `lay_row` (allocated by
 * sched_softmax_online_init: m = -inf, l = 0); `acc` is [rows, n] f32 in
 * `lay_acc`, rescaled per step. */
typedef struct sched_softmax {
    const char *pre;                  /* name prefix, e.g. "a_" */
    int rows, cols, n;
    const char *lay, *lay_row, *lay_acc;
    const char *m, *l, *acc;          /* the running tiles' names */
} sched_softmax;

/* Allocate m (-inf), l (0) and acc (0). */
void sched_softmax_online_init(strbuf *b, const sched_softmax *s, const char *indent);

/* One step on score tile `x` (columns past the stream already -inf):
 * m' = max(m, rowmax x); alpha = exp(m - m'); P = exp(x - m'); l = l·alpha
 * + rowsum P; acc *= alpha. A row whose max is still -inf (every score so
 * far -inf) subtracts 0 instead, so P and alpha are 0, not NaN. Writes the
 * name of P (f32, `lay`) to p (n bytes); the caller adds P · B to acc. */
void sched_softmax_online_step(strbuf *b, const sched_softmax *s, const char *indent, const char *x, int step,
                               char *p, size_t n);

/* acc / l, broadcast along the rows: writes the result's name to out.
 * A row of l == 0 gives 0 / 0 (NaN), as the reference's softmax of a row
 * of -inf does. */
void sched_softmax_online_finish(strbuf *b, const sched_softmax *s, const char *indent, char *out, size_t n);

#endif
