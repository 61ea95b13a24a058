/* kbuild.h — what every strategy needs while it builds one kernel: fresh
 * value names, folded int expressions, launch arguments, and the def's size
 * symbols as kernel values. One implementation for lower.c, rowred.c and
 * the strategies that come. */
#ifndef TSL_SCHED_KBUILD_H
#define TSL_SCHED_KBUILD_H

#include "sched/sched.h"

/* `base`, or base_1, base_2, ...: unused in k and not a tile keyword. */
const char *sched_kb_fresh(tile_module *m, tile_kernel *k, const char *base);

/* a op b on ints, folded where constant (x+0, x-0, 0+x, x*1, 1*x, x/1,
 * x*0, 0*x, and constant + - *). */
tile_expr *sched_kb_ibin(tile_module *m, tile_binop op, tile_expr *a, tile_expr *b);

void sched_kb_add_arg(tile_module *m, sched_launch *l, sched_arg arg);

/* Size symbol `slot` of def in kernel k: size[slot] when set (a tensor
 * parameter has it as an extent), else a new int parameter recorded as a
 * SIZE argument of the launch, cached in size[slot]. */
tile_expr *sched_kb_size(tile_module *m, tile_kernel *k, sched_launch *l, const lang_def *def,
                         tile_expr **size, int slot);

/* A symbolic size expression as a kernel int expression. */
tile_expr *sched_kb_sexpr(tile_module *m, tile_kernel *k, sched_launch *l, const lang_def *def,
                          tile_expr **size, const lang_sexpr *e);

/* Tensor ti of def as a full-rank kernel parameter of k, recorded as a
 * TENSOR argument of the launch: an extent that is a bare size symbol
 * becomes that symbol's value (size[sym], set here on first use), a
 * constant stays a constant, any other extent a new `<name>_d<k>`. */
tile_value *sched_kb_tensor(tile_module *m, tile_kernel *k, sched_launch *l, const lang_def *def,
                            tile_expr **size, int ti);

/* May a transcendental (exp, sigmoid, tanh) computed in `math` for a
 * statement storing `lhs` use its fast form (`OP.approx`)? Yes when the
 * math is f32 and the result is rounded to a float of 16 bits or fewer:
 * the fast forms' few f32 ulp lie far under that rounding. */
int sched_kb_approx_ok(tsl_dtype lhs, tsl_dtype math);

/* A float literal of TC dtype t as the value its dtype holds (2.1 in a
 * float16 expression is half(2.1), whatever dtype the expression then
 * computes in: docs/language.md); float32 and float64 are left as written
 * (an operand converts them exactly as the interpreter does). */
double sched_kb_literal(tsl_dtype t, double v);

#endif
