/* codegen.h — code generators from tile IR (DESIGN.md §5).
 *
 * cg_c_*: tile IR -> C11 for the CPU (c.c). One generated C function runs
 * one thread block (SIMB: the block's threads are simulated, a register
 * tensor is an array [threads * locals] placed by its distributed layout);
 * the entry point runs a range of the flattened grid and the runtime
 * spreads ranges over cores (runtime/target_cpu.c). The semantics are the
 * tile interpreter's (src/tile/interp.c is the oracle); docs/codegen.md
 * lists the rules and the differences. */
#ifndef TSL_CODEGEN_H
#define TSL_CODEGEN_H

#include "base/base.h"
#include "tile/interp.h"
#include "tile/tile.h"

/* Append the C source of kernel k (of module m) to *out. Kernels with
 * `pipeline` statements are expanded first (tile_pipeline_expand on a
 * copy; m is not changed). Errors (an instruction or form the generator
 * does not support, a layout that does not fit) go to d with the
 * instruction's text; TSL_OK on success. The source defines one extern
 * function, named by cg_c_entry_name. */
tsl_status cg_c_emit(const tile_module *m, const tile_kernel *k, strbuf *out, tsl_diag *d);

/* cg_c_emit, also giving the kernel's run-time error table (in arena a):
 * a nonzero return i + 1 of the entry means errs[i]; `msg` is a format
 * taking two long long when `info` is set. */
typedef struct cg_c_error {
    tsl_status st;
    const char *msg;
    const char *where; /* " (in `statement`)" or "" */
    int info;
} cg_c_error;
tsl_status cg_c_emit_table(const tile_module *m, const tile_kernel *k, tsl_arena *a, strbuf *out,
                           const cg_c_error **errs, int *nerrs, tsl_diag *d);

/* The entry symbol of kernel `name` in the emitted source:
 * "tsl_kernel_<name>" (characters other than [A-Za-z0-9_] become '_').
 * Writes into buf (n bytes). */
const char *cg_c_entry_name(const char *name, char *buf, size_t n);

#endif
