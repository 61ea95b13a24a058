/* tile.h — the tile IR: block-level (SIMB) programs with explicit memory
 * spaces, layouts, specs with decompositions, and pipelines.
 *
 * Everything lives in one arena (the module's). A module holds kernels; a
 * kernel holds parameters, a grid, a thread count and a body (a block of
 * statements). Values are named once (SSA-ish): tensors, int scalars and
 * thread groups. Tensors in shared memory and registers are *storage*: an
 * instruction may write into an existing tensor (`-> acc`), which is how a
 * loop accumulates. The text format (print.c / parse.c) round-trips
 * exactly; docs/tile-ir.md is the reference.
 *
 * Files: ir.c (constructors, builder, tables), print.c, lex.c + parse.c,
 * verify.c. The interpreter (interp*.c) and pipeline expansion
 * (pipeline.c) consume these structures read-only. */
#ifndef TSL_TILE_H
#define TSL_TILE_H

#include <stdint.h>

#include "base/base.h"
#include "layout/layout.h"

/* ---- element types ----------------------------------------------------
 * The base layer's descriptor (base.h: kind, bits, exponent and mantissa
 * bits, bias, special values), so low-bit types (i2..i8, u1..u8,
 * f<N>e<X>m<Y>) are dtypes like any other. Build one with
 * dtype_desc_make or tile_dtype_from_tsl, never field by field. */
typedef enum tile_dt_kind {
    TILE_DT_FLOAT = DT_FLOAT,
    TILE_DT_INT = DT_INT, /* signed two's complement */
    TILE_DT_UINT = DT_UINT,
    TILE_DT_BOOL = DT_BOOL
} tile_dt_kind;

typedef dtype_desc tile_dtype;

tile_dtype tile_dtype_from_tsl(tsl_dtype t);
/* 0 and *out set when dt is one of the 13 tessel dtypes; -1 otherwise. */
int tile_dtype_to_tsl(tile_dtype dt, tsl_dtype *out);
int tile_dtype_eq(tile_dtype a, tile_dtype b);
/* Text name: f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool, and for
 * other widths i<N>, u<N>, f<N>e<X>m<Y>. Writes into buf (>= 16 bytes). */
const char *tile_dtype_name(tile_dtype dt, char *buf);
/* Parse a name as above (also the TC spellings float16, half, float, ...).
 * 0 on success. */
int tile_dtype_parse(const char *s, size_t n, tile_dtype *out);

/* ---- memory spaces ------------------------------------------------------ */
typedef enum tile_space { TILE_GLOBAL, TILE_SHARED, TILE_REGISTER } tile_space;
const char *tile_space_name(tile_space s); /* "global" "shared" "register" */

/* ---- layouts -------------------------------------------------------------
 * A layout as the tile IR holds it: the src/layout value (parsed with
 * layout_parse_prefix) and its canonical text (layout_value_print), which
 * the printer writes. Shared tensors use data layouts (coordinate ->
 * element offset, possibly swizzled); register tensors use distributed
 * layouts ((thread, local) -> coordinate); tile steps use 1-D layouts. */
typedef struct tile_layout {
    const char *text; /* canonical text, never NULL */
    layout_value v;   /* v.kind: LAYOUT_VALUE_DATA / _TILER / _DIST */
} tile_layout;

/* ---- int scalar expressions ---------------------------------------------
 * One X-macro row per operator: enum name, text, binding power (higher
 * binds tighter; 0 for function-call forms such as cdiv(a, b)). */
#define TILE_BINOPS(X)                                                         \
    X(OR, "||", 1)                                                             \
    X(AND, "&&", 2)                                                            \
    X(EQ, "==", 3)                                                             \
    X(NE, "!=", 3)                                                             \
    X(LT, "<", 4)                                                              \
    X(LE, "<=", 4)                                                             \
    X(GT, ">", 4)                                                              \
    X(GE, ">=", 4)                                                             \
    X(ADD, "+", 5)                                                             \
    X(SUB, "-", 5)                                                             \
    X(MUL, "*", 6)                                                             \
    X(DIV, "/", 6) /* floor division on ints */                               \
    X(MOD, "%", 6) /* floor modulo: sign of the divisor */                    \
    X(MIN, "min", 0)                                                           \
    X(MAX, "max", 0)                                                           \
    X(CDIV, "cdiv", 0) /* ceil(a / b) */

typedef enum tile_binop {
#define X(n, t, p) TILE_OP_##n,
    TILE_BINOPS(X)
#undef X
        TILE_OP_COUNT
} tile_binop;

typedef enum tile_expr_kind {
    TILE_E_INT,       /* i */
    TILE_E_FLOAT,     /* f: only as an init/fill value or a scalar operand */
    TILE_E_VALUE,     /* v: a scalar value (symbol, param, let, loop var) */
    TILE_E_BLOCK_IDX, /* dim: block_idx.x / .y / .z */
    TILE_E_THREAD_IDX,/* thread_idx: only inside a decomposition */
    TILE_E_NEG,       /* -a */
    TILE_E_NOT,       /* !a */
    TILE_E_BIN        /* a op b */
} tile_expr_kind;

typedef struct tile_value tile_value;

typedef struct tile_expr {
    tile_expr_kind kind;
    size_t pos; /* byte offset in the source, for diagnostics */
    int64_t i;
    double f;
    const char *ftext; /* TILE_E_FLOAT: the literal as written (round trip) */
    tile_value *v;
    int dim;
    tile_binop op;
    struct tile_expr *a, *b;
} tile_expr;

/* Evaluate with `lookup` giving a scalar value's current int value (return
 * 0 and set *ok = 0 if unknown). Division by zero sets *ok = 0. */
typedef int64_t (*tile_lookup_fn)(void *ctx, const tile_value *v, int *ok);
int64_t tile_expr_eval(const tile_expr *e, tile_lookup_fn lookup, void *ctx,
                       const int64_t block_idx[3], int64_t thread_idx, int *ok);
/* 1 and *out set when e is a compile-time integer constant. */
int tile_expr_const(const tile_expr *e, int64_t *out);

/* ---- values ---------------------------------------------------------------- */
typedef enum tile_value_kind {
    TILE_V_TENSOR,
    TILE_V_SCALAR,  /* int scalar: size symbol, scalar param, let/var, loop var */
    TILE_V_THREADS  /* a thread group (Graphene's thread tensor), decomp only */
} tile_value_kind;

/* A tensor's type. Global: dims are exprs over symbols, strides given or
 * row-major (stride[i] = prod dims[i+1..]); shared: constant dims and an
 * optional data layout (NULL = row-major compact); register: constant dims
 * and a distributed layout that must cover them. */
typedef struct tile_type {
    tile_dtype dt;
    tile_space space;
    int rank;
    tile_expr **dims;    /* [rank] */
    tile_expr **strides; /* global: [rank] in elements, or NULL = row-major */
    tile_layout *layout; /* shared/register; NULL for global */
} tile_type;

/* A thread group: the block's threads [total] tiled into groups of `inner`
 * threads (by `tiler`, a 1-D layout, or contiguous when NULL), the groups
 * arranged as `outer` (row-major reshape). `indices` of a group gives the
 * outer coordinates then the thread's index inside its group. */
typedef struct tile_threads {
    int total;
    int inner;
    tile_layout *tiler; /* e.g. (4,2):(1,16) for Volta quad-pairs; NULL */
    int nouter;
    int64_t outer[4];
} tile_threads;

typedef enum tile_value_origin {
    TILE_O_PARAM,   /* kernel parameter (tensor or scalar) */
    TILE_O_SYMBOL,  /* size symbol bound from the actual arrays */
    TILE_O_DEF,     /* result of an instruction */
    TILE_O_LET,     /* let x = expr (immutable) */
    TILE_O_VAR,     /* var x = expr (mutable with set) */
    TILE_O_LOOP,    /* for loop variable */
    TILE_O_INDEX,   /* let a, b, c = indices g */
    TILE_O_BLOCK,   /* pipeline block view (the current block of a spec) */
    TILE_O_GRIDVAR  /* pipeline grid index */
} tile_value_origin;

/* Scalar parameters: `n: int` is an int scalar usable in int expressions
 * (type.dt.bits == 0); `alpha: f32` (any element type) is a *typed* scalar
 * whose value (tile_interp_arg_float for floats, .ival otherwise) is usable
 * only as a whole scalar operand of an elementwise instruction (type.dt is
 * its dtype, rank 0). */
int tile_value_is_typed_scalar(const tile_value *v);

struct tile_value {
    tile_value_kind kind;
    tile_value_origin origin;
    const char *name;
    int id;         /* dense per kernel: 0 .. kernel->nvalues-1 */
    size_t pos;     /* where it is defined */
    tile_type type; /* TILE_V_TENSOR */
    tile_threads threads; /* TILE_V_THREADS */
    struct tile_stmt *def; /* defining statement, NULL for params/symbols */
};

/* ---- operands and views ----------------------------------------------------
 * An operand is a tensor with a chain of view steps, or a scalar expr:
 *   T[e, ...]       index: for an untiled tensor, the box anchored at that
 *                   coordinate (missing trailing indices are 0) whose extent
 *                   is the transferred tile's shape, right-aligned (leading
 *                   dims extent 1); for a tiled view, selects one tile
 *   T.tile([8, 8])  tile: a tensor of tiles (outer = shape / tile);
 *                   each tiler entry is an int or a 1-D layout like 2:2;
 *                   entries are right-aligned (leading dims tiled by 1)
 *   T.local         a register tensor's per-thread part (decomp only)
 */
typedef enum tile_step_kind { TILE_STEP_INDEX, TILE_STEP_TILE, TILE_STEP_LOCAL } tile_step_kind;

typedef struct tile_step {
    tile_step_kind kind;
    size_t pos;
    int n;
    tile_expr **idx;       /* INDEX: [n] */
    tile_layout **tilers;  /* TILE: [n], a 1-D layout per dim, or NULL entry */
    int64_t *sizes;        /* TILE: [n] tile extent per dim (size of tiler) */
} tile_step;

typedef struct tile_operand {
    tile_value *v;    /* tensor or threads; NULL for a scalar operand */
    tile_expr *scalar;
    tile_step *steps;
    int nsteps, capsteps;
    size_t pos;
} tile_operand;

/* ---- instructions ------------------------------------------------------------
 * One X-macro row per opcode: name, text, result rule, min/max operands.
 *   RES_NONE: no result; RES_TYPE: the result (or `-> dst`) type is written
 *   out; RES_LIKE: the result has the type of the first tensor operand
 *   (mma: of C; select: of a or b); RES_BOOL: the shape and layout of the
 *   first tensor operand with dtype bool (comparisons).
 *
 * The rows after PRINT are the general-purpose elementwise, index and
 * gather/scatter instructions the scheduler lowers TC bodies to
 * (docs/tile-ir.md section 3b). Register operands of one instruction share
 * shape and layout; a scalar operand (int/float expr or a typed scalar
 * parameter) is broadcast and converted to the tensor's dtype.
 *   iota [OFF] -> register iN/uN[...] layout L dim D
 *                     element = its coordinate along dim D + OFF (int expr)
 *   erf x             float erf
 *   not x             logical not of a bool tensor
 *   mod a, b          ints: C remainder (sign of a, like C's %; b == 0 is a
 *                     run-time error); floats: fmod
 *   pow a, b          float pow
 *   and a, b / or a, b   logical, bool operands
 *   lt le gt ge eq ne a, b   comparisons in the operands' dtype -> bool
 *   select c, a, b    c ? a : b elementwise; c a bool tensor
 *   fma a, b, c       a*b + c rounded once to the dtype; f16, bf16, f32
 *                     and f64 only (integers: mul then add)
 *   gather T, i0, ..., i{r-1} -> register DT[...] layout L [mask M]
 *                     element e = T[i0(e), ..., i{r-1}(e)]: T a global
 *                     tensor of rank r and dtype DT, each index a register
 *                     int tensor of the result's shape and layout or an int
 *                     expr; lanes whose mask M (bool, same shape/layout) is
 *                     false read nothing and give 0; an unmasked index out
 *                     of [0, extent) is a run-time error naming the tensor,
 *                     the dimension, the index and the bound
 *   scatter x -> T, i0, ..., i{r-1} [mask M]
 *                     the store counterpart: T[i0(e), ...] = x(e) for every
 *                     unmasked lane (same index rules and errors); lanes that
 *                     hit one element write in an unspecified order
 * Integer `div` truncates toward zero (C semantics; division by zero is a
 * run-time error). Operands of gather/scatter: args[0] is T (gather) or x
 * (scatter), args[1..] the indices; scatter's T is the `-> dst`. */
typedef enum tile_res_rule { TILE_RES_NONE, TILE_RES_TYPE, TILE_RES_LIKE, TILE_RES_BOOL } tile_res_rule;

#define TILE_OPS(X)                                                            \
    X(ALLOC, "alloc", TYPE, 0, 0)                                              \
    X(LOAD_GLOBAL, "load_global", TYPE, 1, 1)                                  \
    X(STORE_GLOBAL, "store_global", NONE, 1, 1)                                \
    X(LOAD_SHARED, "load_shared", TYPE, 1, 1)                                  \
    X(STORE_SHARED, "store_shared", NONE, 1, 1)                                \
    X(COPY_ASYNC, "copy_async", NONE, 1, 1)                                    \
    X(COMMIT, "commit", NONE, 0, 0)                                            \
    X(WAIT, "wait", NONE, 1, 1)                                                \
    X(SYNC, "sync", NONE, 0, 0)                                                \
    X(MMA, "mma", LIKE, 3, 3)                                                  \
    X(CAST, "cast", TYPE, 1, 1)                                                \
    X(VIEW, "view", TYPE, 1, 1)                                                \
    X(COPY, "copy", LIKE, 1, 1) /* register -> register, same layout */        \
    X(NEG, "neg", LIKE, 1, 1)                                                  \
    X(ABS, "abs", LIKE, 1, 1)                                                  \
    X(EXP, "exp", LIKE, 1, 1)                                                  \
    X(EXP2, "exp2", LIKE, 1, 1) /* 2^x */                                      \
    X(LOG, "log", LIKE, 1, 1)                                                  \
    X(SQRT, "sqrt", LIKE, 1, 1)                                                \
    X(RSQRT, "rsqrt", LIKE, 1, 1)                                              \
    X(TANH, "tanh", LIKE, 1, 1)                                                \
    X(SIGMOID, "sigmoid", LIKE, 1, 1)                                          \
    X(RELU, "relu", LIKE, 1, 1)                                                \
    X(ADD, "add", LIKE, 2, 2)                                                  \
    X(SUB, "sub", LIKE, 2, 2)                                                  \
    X(MUL, "mul", LIKE, 2, 2)                                                  \
    X(DIV, "div", LIKE, 2, 2)                                                  \
    X(MAX, "max", LIKE, 2, 2)                                                  \
    X(MIN, "min", LIKE, 2, 2)                                                  \
    X(REDUCE_SUM, "reduce.sum", TYPE, 1, 1)                                    \
    X(REDUCE_MAX, "reduce.max", TYPE, 1, 1)                                    \
    X(REDUCE_MIN, "reduce.min", TYPE, 1, 1)                                    \
    X(SHUFFLE_XOR, "shuffle.xor", LIKE, 2, 2)                                  \
    X(SHUFFLE_UP, "shuffle.up", LIKE, 2, 2)                                    \
    X(SHUFFLE_DOWN, "shuffle.down", LIKE, 2, 2)                                \
    X(SHUFFLE_IDX, "shuffle.idx", LIKE, 2, 2)                                  \
    X(BROADCAST, "broadcast", TYPE, 1, 1)                                      \
    X(PRINT, "print", NONE, 1, 1)                                              \
    X(IOTA, "iota", TYPE, 0, 1)                                                \
    X(ERF, "erf", LIKE, 1, 1)                                                  \
    X(NOT, "not", LIKE, 1, 1)                                                  \
    X(MOD, "mod", LIKE, 2, 2)                                                  \
    X(POW, "pow", LIKE, 2, 2)                                                  \
    X(AND, "and", LIKE, 2, 2)                                                  \
    X(OR, "or", LIKE, 2, 2)                                                    \
    X(LT, "lt", BOOL, 2, 2)                                                    \
    X(LE, "le", BOOL, 2, 2)                                                    \
    X(GT, "gt", BOOL, 2, 2)                                                    \
    X(GE, "ge", BOOL, 2, 2)                                                    \
    X(EQ, "eq", BOOL, 2, 2)                                                    \
    X(NE, "ne", BOOL, 2, 2)                                                    \
    X(SELECT, "select", LIKE, 3, 3)                                            \
    X(FMA, "fma", LIKE, 3, 3)                                                  \
    X(GATHER, "gather", TYPE, 1, 9)                                            \
    X(SCATTER, "scatter", NONE, 1, 9)                                          \
    /* Hopper (sm_90a): docs/tile-ir.md section 5b */                          \
    X(MBAR_INIT, "mbar_init", NONE, 2, 2)     /* mbar_init B, COUNT */         \
    X(MBAR_ARRIVE, "mbar_arrive", NONE, 1, 1) /* mbar_arrive B [bytes N] */    \
    X(MBAR_WAIT, "mbar_wait", NONE, 2, 2)     /* mbar_wait B, PARITY */        \
    X(TMA_LOAD, "tma_load", NONE, 2, 2)       /* tma_load G[o..], B -> S */    \
    X(TMA_STORE, "tma_store", NONE, 1, 1)     /* tma_store S -> G[o..] */      \
    X(BULK_COMMIT, "bulk_commit", NONE, 0, 0)                                  \
    X(BULK_WAIT, "bulk_wait", NONE, 1, 1)     /* bulk_wait N */                \
    X(FENCE_ASYNC, "fence_async", NONE, 0, 0)                                  \
    X(WGMMA, "wgmma", LIKE, 3, 3)             /* wgmma a, b, acc -> acc */     \
    X(WGMMA_FENCE, "wgmma_fence", NONE, 0, 0)                                  \
    X(WGMMA_COMMIT, "wgmma_commit", NONE, 0, 0)                                \
    X(WGMMA_WAIT, "wgmma_wait", NONE, 1, 1)   /* wgmma_wait N */                \
    X(CLUSTER_SYNC, "cluster_sync", NONE, 0, 0) /* every thread of the cluster */

typedef enum tile_op {
#define X(n, t, r, lo, hi) TILE_I_##n,
    TILE_OPS(X)
#undef X
        TILE_I_COUNT
} tile_op;

typedef struct tile_op_info {
    const char *name;
    tile_res_rule res;
    int min_args, max_args;
} tile_op_info;
const tile_op_info *tile_op_info_of(tile_op op);
/* 0 and *out set when the text names an opcode. */
int tile_op_lookup(const char *s, size_t n, tile_op *out);
int tile_op_is_unary(tile_op op);  /* NEG .. RELU */
int tile_op_is_binary(tile_op op); /* ADD .. MIN */
int tile_op_is_reduce(tile_op op);
int tile_op_is_shuffle(tile_op op);
/* The scheduler's elementwise rows: ERF NOT (unary), MOD POW AND OR (binary
 * like ADD), LT .. NE (comparisons), SELECT, FMA. */
int tile_op_is_elementwise_ext(tile_op op);
int tile_op_is_compare(tile_op op); /* LT .. NE */
/* The Hopper rows MBAR_INIT .. WGMMA_WAIT (sm_90a only). */
int tile_op_is_hopper(tile_op op);

typedef struct tile_block tile_block;

/* Instruction text:
 *   [name =] op arg, arg ... [-> dst | -> type] [attrs] [decomp { ... }]
 * attrs, in this printed order: fill/init E, dim D, bytes B, atom NAME,
 * on G, mask M. (Which apply to which op: docs/tile-ir.md and verify.c.)
 * scatter prints as `scatter x -> T, i0, ...` (indices after the dst). */
typedef struct tile_instr {
    tile_op op;
    tile_value *result;     /* new value defined, or NULL */
    tile_operand *args;
    int nargs, capargs;
    int has_dst;            /* `-> operand` given */
    tile_operand dst;       /* where it writes: memory tile or existing tensor */
    tile_expr *init;        /* alloc `init E`, load_global `fill E`; NULL none */
    int dim;                /* reduce / broadcast `dim D`; -1 none */
    int64_t bytes;          /* copy_async `bytes B` (4, 8, 16); 0 none */
    const char *atom;       /* `atom ldmatrix.x4`, `atom m16n8k16`: NULL none */
    tile_value *on;         /* decomp: the thread group executing it */
    tile_block *decomp;     /* explicit decomposition, or NULL */
    tile_value *mask;       /* gather/scatter `mask M`: register bool; NULL none */
    int approx;             /* exp, sigmoid, tanh written `OP.approx`: the target's
                             * fast form may be used (a few f32 ulp off the
                             * correctly rounded value); exact is also right */
    tile_expr *cta;         /* mbar_arrive `cta R`: the barrier at the same place in
                             * block R of the cluster; NULL this block's */
    tile_expr *mcast;       /* tma_load `multicast M`: the box lands in every block
                             * of the cluster whose bit is set in M (and counts on
                             * each one's barrier); NULL this block only */
} tile_instr;

/* Does `OP.approx` exist for op? */
int tile_op_has_approx(tile_op op);

/* A block-level pipeline (Pallas). Each block spec names a global tensor,
 * a block shape, an index map (block coordinates as exprs over the grid
 * variables; element offset = index * block extent) and the space the body
 * sees the current block in, as the value `view`. */
typedef struct tile_blockspec {
    size_t pos;
    tile_value *view;      /* the body's name for the current block */
    tile_value *tensor;    /* a global tensor parameter */
    int rank;
    int64_t *block;        /* [rank] block shape */
    tile_expr **index;     /* [rank] block index map */
    tile_space space;      /* TILE_SHARED or TILE_REGISTER */
    tile_layout *layout;   /* NULL: row-major (shared) */
} tile_blockspec;

typedef struct tile_pipeline {
    int ngrid;
    tile_value **gridvars; /* [ngrid] */
    tile_expr **grid;      /* [ngrid] extents */
    int stages;
    tile_blockspec *ins, *outs;
    int nins, nouts, capins, capouts;
    tile_block *body;
} tile_pipeline;

/* ---- statements -------------------------------------------------------------- */
typedef enum tile_stmt_kind {
    TILE_S_INSTR,    /* instr */
    TILE_S_LET,      /* let v = e */
    TILE_S_VAR,      /* var v = e */
    TILE_S_SET,      /* set v = e (v a var) */
    TILE_S_THREADS,  /* g = threads N [tile T] [reshape [..]] */
    TILE_S_INDICES,  /* let a, b, c = indices g */
    TILE_S_FOR,      /* for v in lo : hi [: step] [unroll] { body } */
    TILE_S_IF,       /* if cond { body } [else { els }] */
    TILE_S_WHILE,    /* while cond { body } */
    TILE_S_PIPELINE, /* pipeline(...) { body } */
    TILE_S_WARPGROUPS /* warpgroups { role NAME(COUNT [, IDX]) [regs(R)] { body } ... } */
} tile_stmt_kind;

/* One role of a warpgroups statement: `count` warpgroups of 128 threads,
 * each an *instance* that runs `body` as a block of 128 threads (SIMB over
 * the instance: register layouts distribute over 128 threads, `sync` is a
 * barrier of the instance's threads). `index` (may be NULL) is an int
 * scalar, the instance's number 0 .. count-1. `regs` (0 = not stated) is
 * the register budget per thread the role asks for (setmaxnreg). */
typedef struct tile_role {
    size_t pos;
    const char *name;
    int count;
    tile_value *index;
    int regs;
    tile_block *body;
} tile_role;

#define TILE_MAX_UNROLL 64

typedef struct tile_stmt {
    tile_stmt_kind kind;
    size_t pos;
    tile_instr instr;       /* INSTR */
    tile_value *v;          /* LET VAR SET THREADS FOR: the value */
    tile_expr *e;           /* LET VAR SET: value; IF WHILE: condition */
    tile_value **vs;        /* INDICES: [nvs] defined scalars */
    int nvs;
    tile_value *group;      /* INDICES: the thread group */
    tile_expr *lo, *hi, *step; /* FOR; step NULL = 1 */
    int unroll;             /* FOR: unrolled in the GPU code (constant trip count,
                             * at most TILE_MAX_UNROLL): the compiler then keeps
                             * the next iterations' loads in flight */
    tile_block *body;       /* FOR IF WHILE PIPELINE */
    tile_block *els;        /* IF: NULL when no else */
    tile_pipeline pipe;     /* PIPELINE */
    tile_role *roles;       /* WARPGROUPS: [nroles], in thread order */
    int nroles;
} tile_stmt;

struct tile_block {
    tile_stmt **items;
    int n, cap;
};

/* ---- kernels and modules ---------------------------------------------------- */
typedef struct tile_kernel {
    const char *name;
    size_t pos;
    tile_value **params; /* tensors (global) and int scalars, in order */
    int nparams, capparams;
    tile_value **syms;   /* size symbols in order of first appearance */
    int nsyms, capsyms;
    int ngrid;           /* 1..3 */
    tile_expr *grid[3];
    int threads;         /* threads per block */
    int64_t smem_budget; /* bytes; 0 = none stated */
    int min_blocks;      /* blocks per SM the GPU code is to fit (registers); 0 = none stated */
    int cluster;         /* 1..TILE_MAX_CLUSTER blocks of a cluster along grid x (docs/tile-ir.md 5c); 0 = none stated */
    tile_block *body;
    tile_value **values; /* every value by id */
    int nvalues, capvalues;
    strmap names;        /* value name -> id of the first value so named */
    strmap sym_index;    /* size symbol name -> position in syms */
    strmap fresh_next;   /* base -> the next suffix tile_kernel_fresh_name tries */
} tile_kernel;

typedef struct tile_module {
    tsl_arena *arena;
    tile_kernel **kernels;
    int nkernels, capkernels;
} tile_module;

/* ---- parse, print, verify ---------------------------------------------------- */
/* Parse src into a new module in `arena`. On error returns the status and
 * *out = NULL, with located messages in d. Never crashes on any input. */
tsl_status tile_parse(tsl_arena *arena, const tsl_source *src, tsl_diag *d, tile_module **out);
/* 1 when s is a keyword of the text format (kernel, in, out, var, mask,
 * ...) and so cannot name a value. */
int tile_name_reserved(const char *s);
/* The canonical text (malloc'd; caller frees). Parse(print(m)) prints the
 * same bytes. */
char *tile_print(const tile_module *m);
void tile_print_kernel(strbuf *sb, const tile_kernel *k);
void tile_print_expr(strbuf *sb, const tile_expr *e);
void tile_print_type(strbuf *sb, const tile_type *t);
/* Sizes the verifier accepts (docs/tile-ir.md "Verifier"), so that the
 * interpreter and the generators can hold and enumerate any verified
 * tensor: elements of a shared or register tensor, register elements per
 * thread, and the span (cosize) of a shared layout. */
#define TILE_MAX_ELEMS ((int64_t)1 << 22)
#define TILE_MAX_LOCALS ((int64_t)1 << 16)
#define TILE_MAX_SPAN ((int64_t)1 << 26)
/* Largest grid dimension (CUDA's for x). A grid dimension that is an
 * expression of sizes is checked when it is evaluated: negative or above
 * this is an error, 0 runs no block and is allowed only when every tensor
 * the kernel writes is empty. */
#define TILE_MAX_GRID ((int64_t)INT32_MAX)
/* Most blocks of a cluster (CUDA's portable cluster size). */
#define TILE_MAX_CLUSTER 8

/* Check every rule of docs/tile-ir.md "Verifier". src may be NULL (errors
 * then have no location). TSL_OK when valid. */
tsl_status tile_verify(const tile_module *m, const tsl_source *src, tsl_diag *d);
tile_kernel *tile_module_find(const tile_module *m, const char *name);

/* ---- Hopper wgmma (wgmma.c) ----------------------------------------------------
 * Register fragments of wgmma.mma_async.m64nNk16 for one warpgroup (128
 * threads): the f32/f16 accumulator [64, N] and the register A operand
 * [64, K] (K/16 k steps), as layout text (written into buf). */
const char *tile_wgmma_acc_layout(int n, char *buf, size_t len);
const char *tile_wgmma_a_layout(int k, char *buf, size_t len);

/* A shared wgmma operand's descriptor fields, derived from its data layout:
 * the operand is the trailing 2-D box of shared type t (leading coordinates
 * chosen by the caller), its M or N dimension is dim `mn_dim` of t (rank-2
 * or rank-1) with extent mn_ext, its K extent k_ext (a multiple of 16). */
typedef struct tile_wgmma_smem {
    int mn_major;      /* 1: M/N contiguous (imm-trans 1); 0: K contiguous */
    int swizzle_bytes; /* 32, 64 or 128 */
    int64_t lbo, sbo;  /* leading / stride dimension byte offsets */
} tile_wgmma_smem;
/* 1 and *out when the layout is one wgmma reads; 0 and a reason in why. */
int tile_wgmma_smem_of(const tile_type *t, int mn_dim, int64_t mn_ext, int64_t k_ext, tile_wgmma_smem *out,
                       char *why, size_t nwhy);

/* ---- builder ------------------------------------------------------------------
 * Constructs IR in the module's arena. The builder appends statements to
 * the current block; tile_build_push/pop enter a nested block. */
tile_module *tile_module_new(tsl_arena *arena);
tile_kernel *tile_kernel_new(tile_module *m, const char *name, int threads);
tile_value *tile_kernel_symbol(tile_module *m, tile_kernel *k, const char *name); /* find or add */
/* 1 when some value of k is named s. */
int tile_kernel_name_used(const tile_kernel *k, const char *s);
/* `base`, or `base_N` with the smallest N not tried before for base, that
 * names no value of k and is no keyword (amortized O(1): builders make
 * thousands of names). */
const char *tile_kernel_fresh_name(tile_module *m, tile_kernel *k, const char *base);
tile_value *tile_kernel_param_tensor(tile_module *m, tile_kernel *k, const char *name,
                                     tile_dtype dt, int rank, tile_expr **dims);
tile_value *tile_kernel_param_scalar(tile_module *m, tile_kernel *k, const char *name);
tile_value *tile_kernel_param_typed(tile_module *m, tile_kernel *k, const char *name, tile_dtype dt);
tile_value *tile_kernel_new_value(tile_module *m, tile_kernel *k, tile_value_kind kind,
                                  tile_value_origin origin, const char *name);

tile_expr *tile_expr_int(tile_module *m, int64_t i);
tile_expr *tile_expr_float(tile_module *m, double f);
tile_expr *tile_expr_value(tile_module *m, tile_value *v);
tile_expr *tile_expr_block_idx(tile_module *m, int dim);
tile_expr *tile_expr_bin(tile_module *m, tile_binop op, tile_expr *a, tile_expr *b);
tile_expr *tile_expr_un(tile_module *m, tile_expr_kind kind, tile_expr *a); /* NEG NOT */

/* A layout from text; src/layout parses it when available. NULL and a
 * message in *err (arena string) when the text is not a layout. */
tile_layout *tile_layout_make(tile_module *m, const char *text, char **err);
tile_type tile_type_make(tile_module *m, tile_space sp, tile_dtype dt, int rank,
                         const int64_t *dims, tile_layout *lay);
int64_t tile_type_numel(const tile_type *t); /* -1 when a dim is not constant */

typedef struct tile_builder {
    tile_module *m;
    tile_kernel *k;
    tile_block *cur;
    tile_block **stack; /* the enclosing blocks (grows in the arena: a
                         * statement's loops nest as deep as its vars) */
    int depth, cap;
} tile_builder;

void tile_build_begin(tile_builder *b, tile_module *m, tile_kernel *k); /* at k->body */
void tile_build_push(tile_builder *b, tile_block *blk);
void tile_build_pop(tile_builder *b);
tile_block *tile_block_new(tile_module *m);
/* Whether b holds warpgroups or a Hopper instruction anywhere (such a
 * kernel exists for sm_90a only). */
int tile_block_uses_hopper(const tile_block *b);
tile_stmt *tile_build_stmt(tile_builder *b, tile_stmt_kind kind);
/* An instruction; `result` names a new value (NULL for none). Operands and
 * attributes are then set with the helpers below or on ->instr directly. */
tile_stmt *tile_build_instr(tile_builder *b, tile_op op, const char *result);
tile_operand tile_operand_tensor(tile_value *v);
tile_operand tile_operand_scalar(tile_expr *e);
void tile_operand_index(tile_module *m, tile_operand *o, int n, tile_expr **idx);
void tile_instr_arg(tile_module *m, tile_instr *in, tile_operand o);
/* Sets the result's type (RES_TYPE ops) or writes into `dst`. */
void tile_instr_result_type(tile_stmt *s, tile_type t);
void tile_instr_dst(tile_instr *in, tile_operand dst);
/* RES_LIKE ops: give the result the type of the first tensor operand (mma:
 * of C). The parser calls it; builder users call it after the operands.
 * Invariant after parse/build: every result value has its full type. */
void tile_instr_infer(tile_stmt *s);
/* for v in lo:hi:step { ... }: returns the stmt; push its body to fill it. */
tile_stmt *tile_build_for(tile_builder *b, const char *var, tile_expr *lo, tile_expr *hi,
                          tile_expr *step);
tile_stmt *tile_build_let(tile_builder *b, const char *name, tile_expr *e);

#endif
