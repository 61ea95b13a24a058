/* select.h — instruction selection: gives every spec of a tile kernel an
 * atom of the kernel's target, from the target tables, and records it in
 * the IR as `atom NAME` (docs/target.md, "Selection").
 *
 * This is the one place that decides which hardware instruction implements
 * a spec: the generators print what was selected. It sits above the tile
 * IR (it walks tile instructions) while target.h sits below it. The compile
 * driver runs it between "expand pipelines" and "emit"; until that driver
 * lands, the generators run it where they start (cg_c_emit, cg_cuda_emit),
 * on the module they are given (after expanding its pipelines on a copy). */
#ifndef TSL_TARGET_SELECT_H
#define TSL_TARGET_SELECT_H

#include "target/target.h"
#include "tile/tile.h"

/* Select for kernel k (every kernel of m when k is NULL) on target t.
 * Per spec instruction (load/store global and shared, copy_async, mma, an
 * `add` that asks for a micro-kernel, and the atoms inside decompositions):
 *   - no atom: the first row of t's table that fits (widest first), or the
 *     table's explicit fallback (a `scalar.*` row), written into the IR;
 *   - an atom of t's table: checked; one that does not fit is an error;
 *   - an alias (m16n8k16) names a shape: any row of that shape may be
 *     chosen, its scalar fallback included;
 *   - a transfer atom of another target (cpu.copy on CUDA, any GPU
 *     transfer on the CPU) is chosen again for t.
 * An instruction nothing fits, or an unknown atom, is an error at the
 * instruction (src may be NULL: messages then name the kernel). Running it
 * again for the same target changes nothing. */
tsl_status target_select(tile_module *m, tile_kernel *k, const target *t, const tsl_source *src, tsl_diag *d);

/* The row the instruction's atom names, resolved with the instruction's
 * own operands (dtypes, chunk bytes): what a generator prints. NULL when
 * it has no atom or the name does not resolve. */
const target_atom *target_atom_of(const tile_instr *in);

/* ---- the micro-kernels (cpu.ukr.f32, cpu.ukr.f32.gather, cpu.ukr.dequant) ---------------
 * A CPU plan asks for the micro-kernel by writing its atom on the `add acc,
 * p -> acc` that ends a `for` body; target_ukr_match checks the loop is the
 * atom's pattern (select.c's comment gives both) and gives the generator
 * what it prints from. */
typedef struct target_ukr {
    const target_atom *row;
    const tile_value *acc;          /* f32 register [BM, BN] */
    int64_t bm, bn, tm, tn;          /* block tile and each thread's TM x TN micro-tile */
    int64_t nthr, nloc;              /* threads and locals of acc's layout */
    /* cpu.ukr.f32: the two load_shared statements and the view dim of SA
     * (SB) along m (n), SA's and SB's strides (affine layouts) */
    const tile_stmt *la, *lb;
    int va, vb, ra, rb;
    int64_t sa[8], sb[8];
    /* cpu.ukr.f32.gather: `ai = add KB, OFF`, the gather, the load of B */
    const tile_stmt *sai, *sga, *slb;
    const tile_value *kb, *kl, *af, *bf;
    /* cpu.ukr.dequant: the byte row's load (of WB, global u8 rank 2), the
     * view's low-bit dtype, X's load (global, rank 2, f16/bf16/f32) */
    const tile_stmt *sw, *sx;
    const tile_value *wb, *xg;
    tile_dtype qdt;
} target_ukr;

/* Is `for` loop f (its body's last statement carrying the atom) the
 * micro-kernel's pattern? 1 with *u filled; 0 with the reason in why. */
int target_ukr_match(const tile_kernel *k, const tile_stmt *f, target_ukr *u, char *why, size_t nwhy);

#endif
