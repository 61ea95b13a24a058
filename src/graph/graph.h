/* graph.h — the op graph: every statement of a checked TC def becomes one
 * structured op (in the manner of MLIR's linalg.generic), ops are linked by
 * producer/consumer edges through tensors, and ops are fused into groups
 * (kernels), each with a strategy the scheduler lowers to tile IR.
 *
 * A structured op is
 *   - an iteration box: one [lo, hi) range per index variable, symbolic
 *     (lang_sexpr) from range inference, concrete after graph_bind;
 *   - iterator types: vars [0, niter) are parallel (the LHS index list, in
 *     LHS order), vars [niter, nvars) are reductions with the statement's
 *     operator, initialized with its identity first when `bang`;
 *   - operands: operand 0 is the LHS write (always at vars 0..niter-1);
 *     operands 1.. are the distinct tensor reads of the RHS (including reads
 *     nested inside index expressions: the index tensor of a gather), each
 *     with one index map per tensor dimension;
 *   - a scalar body: the RHS tree with every tensor read replaced by a
 *     reference to its operand.
 *
 * Grouping (fuse.c, docs/graph.md has the rules) splits the statements into
 * consecutive runs; each group keeps `rows` leading iteration dims that every
 * op of the group shares (a whole row is computed by one kernel instance),
 * and temporaries read and written only inside one group are `internal`
 * (the code generator may keep them on chip); all others are materialized.
 *
 * Everything lives in the arena given to graph_build, and points into the
 * lang_def (keep both alive).
 */
#ifndef TSL_GRAPH_H
#define TSL_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "lang/lang.h"

/* ---- tensors ------------------------------------------------------------- */

typedef enum graph_tensor_kind {
    GRAPH_T_INPUT,  /* parameter only read */
    GRAPH_T_OUTPUT, /* listed after -> and not a parameter */
    GRAPH_T_INOUT,  /* parameter and output */
    GRAPH_T_TEMP,   /* neither: storage the compiler owns */
    GRAPH_T_SCALAR  /* scalar parameter, passed by value (never an operand) */
} graph_tensor_kind;

typedef struct graph_tensor {
    const lang_tensor *lt; /* name, dtype, rank, symbolic shape */
    graph_tensor_kind kind;
    bool internal;       /* temp whose every reader and writer is in one group */
    int group;           /* internal: that group; otherwise -1 */
    int *writers, nwriters, cap_w; /* op indices, statement order */
    int *readers, nreaders, cap_r; /* op indices (each op once) */
    int64_t *shape;      /* after graph_bind: rank concrete extents, else NULL */
} graph_tensor;

/* ---- index maps ------------------------------------------------------------ */

typedef enum graph_index_kind {
    GRAPH_IX_AFFINE,   /* sum coef[v]*var_v + sum scoef[s]*size_s + c */
    GRAPH_IX_INDIRECT, /* reads a tensor (a gather): checked at run time */
    GRAPH_IX_OTHER     /* no tensor read but not affine (i*j, i%2, D*D) */
} graph_index_kind;

typedef struct graph_expr graph_expr;

typedef struct graph_index {
    graph_index_kind kind;
    const lang_expr *src; /* the index expression as written */
    graph_expr *e;        /* the same with nested reads as operand references */
    int64_t *coef;        /* AFFINE: op->nvars coefficients */
    int64_t *scoef;       /* AFFINE: def->nsizes coefficients of size symbols */
    int64_t c;            /* AFFINE: constant term */
    int var;              /* AFFINE and exactly `var_v` (coefficient 1, no other
                             term): v; otherwise -1 */
} graph_index;

typedef struct graph_operand {
    int tensor;         /* index into graph->tensors (== lang_tensor.index) */
    bool write;         /* operand 0 only */
    graph_index *idx;   /* rank entries */
    int rank;
    bool affine;        /* every index AFFINE */
    bool identity;      /* rank == niter and idx[k].var == k: the op's own LHS
                           index list */
    uint64_t vars;      /* bit v: var v has a nonzero coefficient somewhere
                           (vars of non-affine indices included) */
    bool guarded;       /* in bounds only under a ?: / && / || guard (lang
                           guard.c): then not `affine` (read masked) */
} graph_operand;

/* ---- the scalar body --------------------------------------------------------- */

/* kind, dtypes, op, constants and scalar parameters come from `src`; a
 * LANG_E_ACCESS node refers to operands[operand] and has no args. */
struct graph_expr {
    lang_expr_kind kind;
    const lang_expr *src;
    int operand;
    graph_expr **args;
    int nargs;
};

/* ---- ops --------------------------------------------------------------------- */

typedef enum graph_iter { GRAPH_PARALLEL, GRAPH_REDUCTION } graph_iter;

typedef struct graph_op {
    int index;             /* == stmt->index */
    const lang_stmt *stmt;
    int nvars, niter;      /* box rank; parallel vars are [0, niter) */
    const lang_range *box; /* nvars symbolic ranges (stmt->vars[v].range) */
    graph_iter *iters;     /* nvars */
    int64_t *lo, *hi;      /* after graph_bind: nvars concrete bounds, else NULL */
    lang_assign_op assign; /* the reduction operator (LANG_ASSIGN: none) */
    bool bang;             /* initialize with the operator's identity first */
    graph_operand *operands; /* noperands; [0] is the LHS write */
    int noperands, cap_operands;
    graph_expr *body;      /* the RHS */
    bool reads_lhs;        /* the RHS reads the LHS tensor (at its index list) */
    bool pointwise;        /* no reduction vars */
    bool contraction;      /* `+=` of a product of two affine reads, every
                              reduction var in both, each missing some parallel
                              var (GEMM, batched, transposed, implicit GEMM) */
    int group;
} graph_op;

/* ---- edges --------------------------------------------------------------------- */

typedef enum graph_dep {
    GRAPH_DEP_RAW, /* `to` reads what `from` wrote (producer -> consumer) */
    GRAPH_DEP_WAW, /* both write the tensor (e.g. C = bias; C += A*B) */
    GRAPH_DEP_WAR  /* `to` overwrites what `from` read */
} graph_dep;

typedef struct graph_edge {
    int from, to; /* op indices, from < to */
    int tensor;
    graph_dep dep;
} graph_edge;

/* ---- groups --------------------------------------------------------------------- */

#define GRAPH_STRATEGIES(X)                                                    \
    X(GRAPH_ELEMENTWISE, "elementwise")                                        \
    X(GRAPH_ROW_REDUCTION, "row-reduction")                                    \
    X(GRAPH_CONTRACTION, "contraction")                                        \
    X(GRAPH_ATTENTION, "attention")                                            \
    X(GRAPH_GEMM_CHAIN, "gemm-chain")                                          \
    X(GRAPH_LSTM, "lstm")                                                      \
    X(GRAPH_GENERIC, "generic")

typedef enum graph_strategy {
#define X(n, s) n,
    GRAPH_STRATEGIES(X)
#undef X
    GRAPH_STRATEGY_COUNT
} graph_strategy;

const char *graph_strategy_name(graph_strategy s); /* "row-reduction" */

/* Most ops in one group. A kernel's generated code and the C compiler's
 * time on it grow with its ops (GCC is super-linear in one function's
 * size), so a long chain of fusable statements becomes several kernels of
 * at most this many ops, joined through memory: compile time stays linear
 * in the program's size. Hand-written fused patterns have tens of ops. */
#define GRAPH_MAX_GROUP_OPS 64

typedef struct graph_group {
    int index;
    int first, nops;   /* ops [first, first + nops): groups are consecutive runs */
    int rows;          /* leading iteration dims every op shares: row dims */
    int anchor;        /* the contraction op, else the first reduction op, else first */
    graph_strategy strategy;
    const char *reason; /* short text for the printer */
    int *inputs, ninputs, cap_in;    /* materialized tensors read (not written earlier in the group) */
    int *outputs, noutputs, cap_out; /* materialized tensors written */
    /* A merged chain (attention): the groups it was merged from, classified
     * and with their own inputs and outputs (the chain's intermediates among
     * them), indexed from the graph's ngroups up; what the scheduler lowers
     * when no plan of the chain's strategy takes the group. */
    struct graph_group *parts;
    int nparts;
} graph_group;

typedef struct graph {
    const lang_def *def;
    graph_tensor *tensors; /* ntensors, parallel to def->tensors */
    int ntensors;
    graph_op *ops;         /* nops, parallel to def->stmts */
    int nops;
    graph_edge *edges;     /* in order of `to` */
    int nedges, cap_edges;
    int *edges_in;         /* nops + 1: the edges to op j are [edges_in[j], edges_in[j+1]) */
    graph_group *groups;
    int ngroups, cap_groups;
} graph;

/* ---- entry points ----------------------------------------------------------------- */

/* Build the structured ops and edges of a checked def and fuse them into
 * groups. The def comes from lang_parse_check, so nothing here is a user
 * error; returns NULL only when def is NULL (d is kept for future checks). */
graph *graph_build(tsl_arena *a, const lang_def *def, tsl_diag *d);

/* Fill the concrete boxes and shapes from a lang_bind result for the same def. */
void graph_bind(tsl_arena *a, graph *g, const lang_bound *bound);

/* Readable dump of groups, ops and tensors (tessel compile --emit=graph). */
void graph_print(strbuf *b, const graph *g);

/* One operand as written: "X(I(i,j))", "I(i + x)". */
void graph_print_operand(strbuf *b, const graph *g, const graph_op *op, const graph_operand *o);

/* ---- chains of contractions (attention.c) ---------------------------------------- */

/* Scaled dot-product attention as a run of ops [first, last] (attention.c
 * has the accepted forms): op indices by role and the tensors. Batch dims
 * z are vars [0, nb) of every op; i, j, d, e as in
 * O(z,i,e) = softmax_j(f(sum_d Q(z,i,d) K(z,j,d))) V(z,j,e). */
typedef struct graph_attention {
    int first, last;
    int nb;                  /* batch dims (0..2) */
    int qk;                  /* S +=! Q * K */
    int score_first, nscore; /* the score ops (scale, masks) */
    int rowmax, exp, sum, pv, div; /* div: O / l after PV, or -1 when norm */
    int norm;                /* pn = p / l before PV, or -1 */
    int q, k, v, o;          /* tensors */
    int s;                   /* the score tensor the row max reads */
} graph_attention;

/* Whether ops from `first` on form attention; fills *at (false: *at is
 * meaningless). */
bool graph_attention_match(const graph *g, int first, graph_attention *at);

/* A chain of GEMMs with pointwise epilogues (chain.c), an MLP:
 *   h1(b,o) +=! X(b,i) * W1(o,i)      (or W1(i,o)); epilogue ops on h1
 *   h2(b,o) +=! h1(b,i) * W2(o,i)     ...; the last layer's h is the result
 * layer k's ops are [layer[k], layer[k + 1]) (layer[nlayers] = last + 1). */
#define GRAPH_MAX_CHAIN 32 /* Graphene's MLP has 20 layers */
typedef struct graph_gemm_chain {
    int first, last;
    int nlayers;
    int layer[GRAPH_MAX_CHAIN + 1]; /* the contraction op of each layer */
    int w[GRAPH_MAX_CHAIN];         /* the weight tensor of each layer */
    int wtrans[GRAPH_MAX_CHAIN];    /* W stored (o, i) (1) or (i, o) (0) */
    int h[GRAPH_MAX_CHAIN];         /* each layer's result tensor */
    int x;                          /* the first layer's input */
} graph_gemm_chain;

bool graph_gemm_chain_match(const graph *g, int first, graph_gemm_chain *ch);

/* One LSTM cell step (lstm.c, examples/lstm.tc): ops [first, last] are
 *   gates(b,g,h) +=! a[0](b,k) * w[0](g,h,k)     prod[0]
 *   gates(b,g,h) += a[1](b,j) * w[1](g,h,j)      prod[1]
 *   gate ops on gates(b,g,h)                     (prod[1], tail)
 *   tail ops over (b,h) reading gates(b,c,h)    [tail, last], c in 0..3
 * with G (the weights' dim 0) 4 or a size symbol. */
typedef struct graph_lstm {
    int first, last;
    int prod[2];     /* the two products */
    int a[2], w[2];  /* their (B,K) and (G,H,K) tensors */
    int gates;
    int tail;        /* the first tail op */
} graph_lstm;

bool graph_lstm_match(const graph *g, int first, graph_lstm *l);

/* op is a pointwise op over anchor's parallel box that reads tensor t at
 * its own index list, other tensors not written since op `first` at plain
 * increasing vars, in a body the tile-text lowering takes (attention.c). */
bool graph_tile_epilogue(const graph *g, const graph_op *op, const graph_op *anchor, int t, int first);

/* Whether tensor t is internal to group gr: a temporary whose every reader
 * and writer is one of gr's ops (for a part of a merged chain, its own ops:
 * the chain's other intermediates are its interface). */
bool graph_internal_to(const graph *g, int t, const graph_group *gr);

/* ---- internal: build.c calls fuse.c ----------------------------------------------- */

/* Group the ops of g (edges and operands built), classify each group, and
 * mark internal temporaries. */
void graph_fuse(tsl_arena *a, graph *g);

/* Structural equality of two size expressions after folding constants. */
bool graph_sexpr_equal(const lang_sexpr *x, const lang_sexpr *y);

#endif
