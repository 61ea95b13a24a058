/* layout.h — the layout algebra shared by data and threads (DESIGN.md 4).
 *
 * Two kinds of layout live here:
 *
 *  - `layout`: a CuTe-style layout (shape):(stride) over hierarchical integer
 *    tuples. It is a function from a 1-D index (or a coordinate) to an offset.
 *    1-D indices are unraveled colexicographically: the leftmost mode varies
 *    fastest, so (4,2):(1,4) maps i -> (i%4)*1 + (i/4)*4. A layout may carry
 *    a swizzle Swizzle<B,M,S> applied to its output offset. Thread tensors
 *    (Graphene section 4) are plain layouts whose offsets are thread ids.
 *
 *  - `dist_layout`: a Tilus distributed register layout, a function
 *    (thread, local) -> logical coordinate, built from local(...),
 *    spatial(...), column_local(...), column_spatial(...), replicate(n), and
 *    composition f.g; division h/g gives the f with f.g == h; reduce.
 *
 * Everything is a value type (no pointers inside): copy with `=`, no free.
 * Fallible operations return a tsl_status and, when `e` is not NULL, a
 * message in e->msg. Nothing here asserts on user input.
 * Depends only on src/base. */
#ifndef TSL_LAYOUT_H
#define TSL_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* ---- errors ------------------------------------------------------------ */
typedef struct layout_err {
    char msg[256];
    size_t offset; /* parser only: byte offset of the problem in the text */
} layout_err;

/* ---- data layouts ------------------------------------------------------ */
#define LAYOUT_MAX_NODES 64 /* nodes of the shape tree (leaves + tuples) */
#define LAYOUT_MAX_RANK 16  /* children of one tuple */

/* One node of the shape/stride tree, stored in preorder. */
typedef struct layout_node {
    int64_t shape;  /* leaf: extent (>= 1); tuple: product of the leaves below */
    int64_t stride; /* leaf: stride (any sign); tuple: 0 */
    int32_t nkids;  /* 0 for a leaf; else the number of direct children */
    int32_t nnodes; /* nodes in this subtree, itself included */
} layout_node;

/* Swizzle<B,M,S>: y = x ^ ((x >> S) & (((1<<B)-1) << M)) when S >= 0,
 * i.e. the B bits at [M+S, M+S+B) are xored into the bits at [M, M+B).
 * b == 0 is the identity. CuTe's convention, S may be negative
 * (then the bits move up by |S|). */
typedef struct layout_swizzle {
    int b, m, s;
} layout_swizzle;

typedef struct layout {
    int n;             /* nodes used; node[0] is the root */
    layout_swizzle sw; /* applied to the offset after the strides */
    layout_node node[LAYOUT_MAX_NODES];
} layout;

/* Construction. A leaf s:d; a tuple of modes (copies them). */
layout layout_leaf(int64_t shape, int64_t stride);
tsl_status layout_tuple(layout *out, const layout *modes, int nmodes, layout_err *e);
/* Compact column-major strides for a shape tree taken from `shape_of`
 * (its strides are ignored): (4,(2,3)) -> (4,(2,3)):(1,(4,8)). */
layout layout_compact(const layout *shape_of);

/* Queries. rank = top-level modes (a leaf has rank 1); depth: leaf 0,
 * flat tuple 1, ...; size = product of extents; cosize = L(size-1) + 1 for
 * non-negative strides without swizzle, else the max offset over the
 * domain plus 1 (a swizzled layout of more than 2^22 elements: the bound
 * rounded up to a whole swizzle block). */
int layout_rank(const layout *l);
int layout_depth(const layout *l);
int64_t layout_size(const layout *l);
int64_t layout_cosize(const layout *l);
int layout_is_leaf(const layout *l);
/* Top-level mode i (0 <= i < rank); a leaf's mode 0 is itself. The
 * swizzle belongs to the whole layout and is not copied. */
layout layout_mode(const layout *l, int i);
/* The leaves in order (colexicographic: leaf 0 varies fastest). Returns the
 * count; shape/stride may be NULL; capacity LAYOUT_MAX_NODES. */
int layout_leaves(const layout *l, int64_t *shape, int64_t *stride);
/* Structural equality (shape tree, strides and swizzle). */
int layout_equal(const layout *a, const layout *b);

/* Evaluation. L(i) for 0 <= i < size (beyond it, as CuTe, the last leaf
 * takes the whole quotient). Coordinates: one 1-D index per top-level
 * mode, each unraveled colexicographically inside its mode. */
int64_t layout_eval(const layout *l, int64_t idx);
int64_t layout_eval_coord(const layout *l, const int64_t *coord, int ncoord);

/* Swizzle applied to one offset; bijective on any aligned 2^(M+B+|S|) block. */
int64_t layout_swizzle_apply(layout_swizzle sw, int64_t x);
tsl_status layout_swizzle_check(layout_swizzle sw, layout_err *e);
/* swizzle(B,M,S,A): A's offsets passed through the swizzle. Error if A is
 * already swizzled. */
tsl_status layout_swizzled(layout *out, layout_swizzle sw, const layout *a, layout_err *e);

/* ---- the algebra (CuTe definitions) ------------------------------------ */
/* Same function, fewest modes: flattens, drops size-1 modes, merges
 * s0:d0,s1:d1 when d1 == s0*d0. Result is a leaf or a flat tuple. */
layout layout_coalesce(const layout *a);
/* R = A o B: R(i) == A(B(i)) for i < size(B); R has B's shape tree
 * (each leaf of B may expand into a sub-tuple). Errors when B's strides do
 * not divide/are not divided by A's shape (CuTe's divisibility conditions)
 * or on overflow. A may be swizzled; B may not. */
tsl_status layout_compose(layout *out, const layout *a, const layout *b, layout_err *e);
/* By-mode: tiler's top-level modes are one layout per mode of A
 * (`[2:1,4:2]`); A's remaining modes are kept. */
tsl_status layout_compose_by_mode(layout *out, const layout *a, const layout *tiler,
                                  layout_err *e);
/* complement(A, M): the layout whose image, together with A's, tiles
 * [0, M) (up to CuTe's rounding: cosize of (A, A*) >= M). Requires A
 * injective with positive strides that sort into divisibility chain. */
tsl_status layout_complement(layout *out, const layout *a, int64_t cotarget, layout_err *e);

/* Divides. logical: (A o B, A o B*) with B* = complement(B, size(A)).
 * zipped:  ((tile modes), (rest modes)); tiled: ((tile modes), rest...).
 * by_mode: tiler's top-level modes apply to A's modes one by one, and
 * logical gives ((A0oB0, A0oB0*), (A1oB1, A1oB1*), ...); zipped gathers
 * the tiles in mode 0 and the rests in mode 1. With by_mode == 0 the tiler
 * is one 1-D layout over A's whole domain. */
tsl_status layout_divide_logical(layout *out, const layout *a, const layout *tiler,
                                 int by_mode, layout_err *e);
tsl_status layout_divide_zipped(layout *out, const layout *a, const layout *tiler,
                                int by_mode, layout_err *e);
tsl_status layout_divide_tiled(layout *out, const layout *a, const layout *tiler,
                               int by_mode, layout_err *e);

/* Products. logical: (A, complement(A, size(A)*cosize(B)) o B).
 * blocked / raked: rank-wise; with (A, C) = logical_product of the
 * operands padded to one rank, mode i is (A_i, C_i) (blocked) or
 * (C_i, A_i) (raked), CuTe's blocked_product / raked_product.
 * by_mode for logical as for divide. */
tsl_status layout_product_logical(layout *out, const layout *a, const layout *b, int by_mode,
                                  layout_err *e);
tsl_status layout_product_blocked(layout *out, const layout *a, const layout *b,
                                  layout_err *e);
tsl_status layout_product_raked(layout *out, const layout *a, const layout *b, layout_err *e);

/* right_inverse(A): R with A(R(i)) == i for i < size(R), R as large as
 * the contiguous image prefix allows (size 1 if none). */
tsl_status layout_inverse_right(layout *out, const layout *a, layout_err *e);

/* Print in the text syntax: `(4,(2,4)):(2,(1,8))`, `8:1`,
 * `swizzle(3,3,3,(8,8):(8,1))`; tilers as `[2:1,4:2]`. */
void layout_print(strbuf *sb, const layout *l);
void layout_print_tiler(strbuf *sb, const layout *tiler);
/* Shape / stride alone as nested JSON arrays ([4,[2,4]]; a leaf: 8). */
void layout_print_json_shape(strbuf *sb, const layout *l, int strides);

/* ---- distributed layouts (Tilus) --------------------------------------- */
#define DIST_MAX_RANK 8
#define DIST_MAX_ATOMS 16
#define DIST_MAX_AXES 64

typedef enum dist_atom_kind {
    DIST_LOCAL,     /* local(n...): one thread holds every element */
    DIST_SPATIAL,   /* spatial(n...): one element per thread */
    DIST_REPLICATE, /* replicate(n): n threads hold the same (rank 0) */
} dist_atom_kind;

/* One primitive as written. column: column-major enumeration
 * (column_local / column_spatial: dim 0 varies fastest). */
typedef struct dist_atom {
    dist_atom_kind kind;
    int column;
    int rank;
    int64_t dims[DIST_MAX_RANK];
} dist_atom;

/* The chain normal form: single-dimension factors, most significant first
 * for both the coordinate of their dim and the thread/local index of their
 * kind. dim == -1: a replication factor (threads only, no coordinate). */
typedef struct dist_axis {
    int dim;
    int is_thread;
    int64_t extent;
} dist_axis;

typedef struct dist_layout {
    int rank;                       /* coordinate rank */
    int64_t shape[DIST_MAX_RANK];   /* elementwise product of the atoms */
    int64_t threads;                /* product of spatial/replicate extents */
    int64_t locals;                 /* product of local extents (per thread) */
    int natoms;                     /* as written (for printing) */
    dist_atom atom[DIST_MAX_ATOMS]; /* atom[0] . atom[1] . ... */
    int naxes;                      /* derived chain, extent-1 axes dropped */
    dist_axis axis[DIST_MAX_AXES];
} dist_layout;

/* Primitives: kind with `rank` extents (replicate: rank 0, dims[0] = n). */
tsl_status dist_layout_atom(dist_layout *out, dist_atom_kind kind, int column,
                            const int64_t *dims, int rank, layout_err *e);
/* f.g: shape = shape_f * shape_g; coord = coord_f * shape_g + coord_g;
 * thread = t_f * threads_g + t_g; local = l_f * locals_g + l_g. Operands of
 * lower rank get leading extents of 1 (Tilus definition 5). */
tsl_status dist_layout_compose(dist_layout *out, const dist_layout *f, const dist_layout *g,
                               layout_err *e);
/* h/g: the f with f.g == h (Tilus: local(2,4)/local(1,2) == local(2,2));
 * error when none exists. */
tsl_status dist_layout_divide(dist_layout *out, const dist_layout *h, const dist_layout *g,
                              layout_err *e);
/* The layout of the result of reducing dimension `dim` (Tilus' reduce):
 * the shape's extent there becomes 1, the local slots along it fold into
 * one, and the threads along it become replicas holding the same value. */
tsl_status dist_layout_reduce(dist_layout *out, const dist_layout *l, int dim, layout_err *e);
/* Coordinate of (thread, local); coord_out has `rank` entries. Returns 0,
 * or -1 when thread/local is out of range. */
int dist_layout_map(const dist_layout *l, int64_t thread, int64_t local, int64_t *coord_out);
/* Which thread and local slot hold `coord` (the lowest thread when
 * replicated). Returns 0, or -1 when coord is outside the shape. */
int dist_layout_owner(const dist_layout *l, const int64_t *coord, int64_t *thread,
                      int64_t *local);
/* Every owner of `coord` (replicated layouts have several); writes at most
 * `max` and returns the total count (or -1 when coord is out of shape). */
int64_t dist_layout_owners(const dist_layout *l, const int64_t *coord, int64_t *threads,
                           int64_t *locals, int64_t max);
/* Same function on the whole domain (same rank, shape, threads, locals). */
int dist_layout_equal(const dist_layout *a, const dist_layout *b);
/* Prints `local(2,1).spatial(8,4).local(1,2)`. */
void dist_layout_print(strbuf *sb, const dist_layout *l);

/* ---- text syntax ------------------------------------------------------- */
typedef enum layout_value_kind {
    LAYOUT_VALUE_DATA,  /* a layout */
    LAYOUT_VALUE_TILER, /* [A,B,...]: data.node tuple, one layout per mode */
    LAYOUT_VALUE_DIST,  /* a distributed layout */
} layout_value_kind;

typedef struct layout_value {
    layout_value_kind kind;
    layout data; /* DATA and TILER */
    dist_layout dist;
} layout_value;

/* Parse and evaluate a whole expression (see docs/layout.md):
 *   expr := literal | '[' expr {',' expr} ']' | NAME '(' args ')' | dist
 *   literal := tuple [':' tuple]          (no strides: compact col-major)
 *   dist := datom {('.' | '/') datom}
 * On error: TSL_ERR_SYNTAX (or the algebra's status) with e->offset. */
tsl_status layout_parse(const char *s, size_t len, layout_value *out, layout_err *e);
/* The same on a prefix of s (for the tile IR parser): parses one
 * expression, sets *consumed to the bytes used (trailing spaces skipped). */
tsl_status layout_parse_prefix(const char *s, size_t len, size_t *consumed, layout_value *out,
                               layout_err *e);
void layout_value_print(strbuf *sb, const layout_value *v);

/* The value as `tessel layout` prints it (table.c): a header line, then
 * the mapping as a grid, or with `json` one JSON object. Appends to sb;
 * too large a table is TSL_ERR_ARG with the reason in e->msg. */
tsl_status layout_table(strbuf *sb, const layout_value *v, int json, layout_err *e);

#endif
