/* gen.h — the differential tester's two halves: a generator of valid random
 * TC programs (dt_gen_program) and a runner that executes one program on the
 * reference interpreter and on another target and compares the outputs
 * (dt_run).
 *
 * A program travels as text in the regression-file format, so a fresh
 * program and a saved failure (tests/fuzz/regress/NAME.tc) run the same way:
 *
 *     # difftest seed=0x1f2e3d: <why it was saved>
 *     # sizes: M=7 N=3          every size symbol of the def's parameters
 *     # index: I<5              int tensors used as gather indices: values in [0,5)
 *     def f(float(M,N) A, int32(N) I) -> (T0) { ... }
 *
 * The inputs are drawn from a data seed: floats uniform in +-[0.1, 1],
 * integers in +-[1, 3] (never zero), index tensors in [0, bound). Outputs are
 * poisoned (NaN; for integers a sentinel that differs per target) before each
 * run, so an element a target forgets to write is a mismatch.
 *
 * gen.c is compiled twice: into tests/fuzz/difftest (the command-line
 * tester, see its first lines) and, included by tests/unit/test_difftest.c,
 * into the unit tests. It uses only the public API and src/base. */
#ifndef TSL_FUZZ_GEN_H
#define TSL_FUZZ_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "tessel.h"

typedef struct dt_opts {
    int64_t max_elems; /* cap on every tensor's and every statement box's element count */
    int max_stmts;     /* statements per def: 1..max_stmts */
    int gemm_percent;  /* share of contraction-shaped (GEMM) programs, 0..100 */
} dt_opts;

/* One random valid program in the regression-file format above (malloc'd;
 * the caller frees). The same seed and options give the same text. */
char *dt_gen_program(uint64_t seed, const dt_opts *o);

typedef enum dt_verdict {
    DT_PASS,        /* both targets ran and agree within the output's tolerance
                     * (tsl_args_tolerance), or both rejected the sizes or the
                     * run with the same status (a guarded read the sizes make
                     * invalid, a gather out of range) */
    DT_PASS_INTERP, /* the interpreter ran clean; the other target is not available yet */
    DT_FAIL         /* mismatch, crash-free error on one side, or an invalid program */
} dt_verdict;

/* Run `text` (a program in the format above; `filename` is for messages) on
 * the interpreter and on `other`, with inputs drawn from `data_seed`. On
 * DT_FAIL `msg` says what differed (target, output, element, values) or which
 * call failed with its diagnostic. */
dt_verdict dt_run(const char *text, const char *filename, uint64_t data_seed, tsl_target other,
                  char *msg, size_t msglen);


#endif
