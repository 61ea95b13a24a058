/* c_table.c — what the compile driver takes from the C generator for one
 * kernel: its source and the table of run-time errors a block can return
 * (the entry's nonzero code i + 1 is entry i), so the executor can word a
 * failure without the tile IR. */
#include "codegen/c_int.h"

tsl_status cg_c_emit_table(const tile_module *m, const tile_kernel *k, tsl_arena *a, strbuf *out,
                           const cg_c_error **errs, int *nerrs, tsl_diag *d)
{
    const tile_kernel *kk;
    cgc_result res = {0};
    *errs = NULL;
    *nerrs = 0;
    tsl_status st = cgc_prepare(m, k, a, d, &kk);
    if (!st) st = cgc_emit_kernel(kk, a, d, &res);
    if (!st) {
        sb_puts(out, res.source);
        cg_c_error *e = arena_alloc(a, sizeof *e * (size_t)(res.nerrs + 1));
        for (int i = 0; i < res.nerrs; i++)
            e[i] = (cg_c_error){res.errs[i].st, res.errs[i].msg, res.errs[i].where, res.errs[i].info};
        *errs = e;
        *nerrs = res.nerrs;
    }
    free(res.source);
    return st;
}
