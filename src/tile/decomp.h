/* decomp.h — the one walk over a decomposition (Graphene's specs, docs/
 * tile-ir.md §4) that the verifier (coverage), the tile interpreter
 * (interp_spec.c), the C generator (c_emit_decomp.c) and the CUDA
 * generator (cuda_decomp.c) share: which statements may appear, what each inner instruction is (a collective
 * atom of the target table, run per group after every thread recorded its
 * part; or a per-thread move), the thread-group indices, the collective's
 * destination slots and the move's extents — and the one set of messages
 * for what does not run there. The visitors differ only in what they do
 * with a statement: evaluate it, emit C for it, or mark coverage. */
#ifndef TSL_TILE_DECOMP_H
#define TSL_TILE_DECOMP_H

#include "target/target.h"
#include "tile/tile.h"

typedef struct tile_decomp_visitor {
    void *ctx;
    /* optional: around every statement the walk visits, in preorder
     * (threads statements and instructions with a nested decomposition
     * included), e.g. for the statement's text as a comment */
    void (*enter)(void *ctx, const tile_stmt *s);
    void (*leave)(void *ctx, const tile_stmt *s);
    /* let / var / set */
    tsl_status (*scalar)(void *ctx, const tile_stmt *s);
    /* let a, b, i = indices g (tile_decomp_indices gives the values) */
    tsl_status (*indices)(void *ctx, const tile_stmt *s);
    /* if / for: evaluate or emit, and walk the bodies with tile_decomp_walk */
    tsl_status (*branch)(void *ctx, const tile_stmt *s);
    tsl_status (*loop)(void *ctx, const tile_stmt *s);
    /* an inner instruction whose atom is collective (ldmatrix): this
     * thread's part is recorded, the atom runs per group afterwards */
    tsl_status (*collective)(void *ctx, const tile_stmt *s, const target_atom *a);
    /* a per-thread move (load/store global or shared, copy_async, copy):
     * the thread's elements one by one, the k-th of the source box
     * (row-major) to the k-th of the destination box; a: its atom's row
     * when it names one (st.shared.v2.f32), else NULL */
    tsl_status (*move)(void *ctx, const tile_stmt *s, const target_atom *a);
    /* what does not run inside a decomposition, with the message */
    tsl_status (*fail)(void *ctx, size_t pos, tsl_status st, const char *msg);
} tile_decomp_visitor;

/* The TARGET_OP_* of a tile instruction: which table rows can implement
 * it (0 when none can). The verifier, the decomposition walk and the
 * selection pass classify atoms by it. */
unsigned tile_op_target(tile_op op);

/* Walk block b (a decomposition's body, or an arm of one of its ifs/fors)
 * statement by statement; stops at the first status a callback returns. */
tsl_status tile_decomp_walk(const tile_block *b, const tile_decomp_visitor *v);

/* `let ... = indices g` for thread t of the block: the group's outer
 * coordinates (row-major over `reshape`, or the group number) then the
 * thread's index inside its group. Writes nvs values into out: nvs == 1
 * is the index alone; otherwise nvs must be outer + 1. 0, or -1 with a
 * message in err (a tiler that leaves t in no group, a count mismatch). */
int tile_decomp_indices(const tile_threads *g, int64_t t, int nvs, int64_t *out, char *err, size_t nerr);

/* A register layout's local shape: per dim, the product of its local
 * factors (the shape of `R.local`, slots in row-major order). */
void tile_local_shape(const dist_layout *l, int64_t *ld);

/* The destination of a collective ldmatrix-like atom a: `R.local` or
 * `R.local.tile([..])` of a 16-bit register tensor with at least
 * 2 * a->count slots per thread; slots[i] (i < 2 * count) is the slot of
 * received element i (register i / 2, half i % 2): R.local's slots in
 * row-major local order, or tile i / 2 of the tiles (row-major), element
 * i % 2. The same for every thread. 0, or -1 with a message in err. */
int tile_decomp_collective_dst(const tile_operand *dop, const target_atom *a, int64_t *slots, char *err, size_t nerr);

/* The source of an ldmatrix: one row of 8 16-bit elements of a rank-2
 * shared view (ext: the view's extents, -1 where untiled). 0, or -1 with
 * a message in err. */
int tile_decomp_collective_src(const target_atom *a, tile_space space, int bits, int rank, const int64_t *ext, char *err,
                               size_t nerr);

/* A per-thread move's boxes: the source view (rank ra, extents xa, -1
 * where untiled) and the destination's (rb, xb); an untiled extent takes
 * the other side's (right-aligned) or 1. Fills ea and eb and returns the
 * element count, or -1 when the two counts differ (*na, *nb give them). */
int64_t tile_decomp_move_box(int ra, const int64_t *xa, int rb, const int64_t *xb, int64_t *ea, int64_t *eb, int64_t *na,
                             int64_t *nb);

#endif
