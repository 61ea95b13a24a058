/* lang.h — the TC language front end: lexer, parser, semantic checks and
 * range inference, producing a checked program that the interpreter, the
 * op graph and the C API consume. Everything is allocated in the caller's
 * arena and lives as long as it.
 *
 * Semantics the interpreter must implement (docs/language.md has the rest):
 *
 *  - A def runs its statements in order. Each statement iterates the box
 *    vars[0..niter) x vars[niter..nvars) with the concrete [lo,hi) of each
 *    variable from lang_bind. vars[0..niter) are the LHS index variables in
 *    LHS order (so lhs element = (v0, v1, ...)); the rest are reduction
 *    variables.
 *  - RHS before write: every RHS value of the statement is computed from
 *    the tensors as they were before the statement started, then combined
 *    into the LHS. (A statement that reads its own LHS always reads it at
 *    exactly the LHS index list, so evaluating element by element in any
 *    order is fine for `=`; with reductions stmt->reads_lhs says to read
 *    a snapshot of the LHS taken before the statement.)
 *  - op `=`: lhs(e) = rhs (never has reduction variables).
 *    op `+=`, `*=`, `max=`, `min=`: lhs(e) = lhs(e) (+) rhs over every point
 *    of the reduction box. With `!` (bang) the LHS elements of the box are
 *    first set to the operator's identity: + -> 0, * -> 1, max -> -inf
 *    (integer dtypes: the dtype's minimum), min -> +inf (integers: the
 *    dtype's maximum). Without `!` the tensor already holds values: it is an
 *    in/out parameter or was defined by an earlier statement (sema checks).
 *    An empty reduction box leaves the identity (bang) or the old value.
 *  - A tensor that is both a parameter and an output is in/out: its input
 *    values are visible to the statements and its final values are the
 *    output. Temporaries (flag LANG_TENSOR_TEMP) are neither parameters nor
 *    outputs; their shapes come from range inference like outputs'.
 *  - Arithmetic: each node has a dtype (`type`); a binary node computes in
 *    `optype` (the unified operand type; equal to `type` except for
 *    comparisons, whose `type` is bool). Integer `/` truncates toward zero
 *    and `%` is C's remainder (both as in C; division by zero is a run-time
 *    error for integers); on floats `%` is fmod. A float literal's node
 *    has the float type its expression computes in (`x * 0.1` with x
 *    float64: the double 0.1); integer literals are int32 (int64 if large). && || ! treat nonzero as
 *    true. Math builtins on integer operands compute in float32 (sema
 *    inserted the promotion into the call's type). Casts convert like C
 *    (float to int truncates; out-of-range saturates in the interpreter).
 *  - Indices: affine and quasi-affine index expressions (expr->affine,
 *    expr->quasi: k / 128, k % 128) were proven in bounds by lang_bind; any
 *    other index expression (a gather, i*j, i/N) must be checked at run
 *    time: error naming tensor, dimension, index, bound.
 */
#ifndef TSL_LANG_H
#define TSL_LANG_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"

/* ---- symbolic sizes ------------------------------------------------------ */

/* A size expression over size symbols (by def-level slot) and integer
 * constants. Trees are immutable and may be shared. */
typedef enum lang_sexpr_kind {
    LANG_SX_CONST,    /* value */
    LANG_SX_SYM,      /* sym: size-symbol slot */
    LANG_SX_ADD,      /* a + b */
    LANG_SX_SUB,      /* a - b */
    LANG_SX_MUL,      /* a * b */
    LANG_SX_FLOORDIV, /* floor(a / b) */
    LANG_SX_MIN,      /* min(a, b) */
    LANG_SX_MAX       /* max(a, b) */
} lang_sexpr_kind;

typedef struct lang_sexpr {
    lang_sexpr_kind kind;
    int64_t value; /* LANG_SX_CONST */
    int sym;       /* LANG_SX_SYM */
    int nodes;     /* size of the tree written out (shared subtrees counted
                      each time), saturating; range inference caps it */
    const struct lang_sexpr *a, *b;
} lang_sexpr;

/* A half-open range [lo, hi). */
typedef struct lang_range {
    const lang_sexpr *lo, *hi;
} lang_range;

/* Evaluate with concrete sizes (indexed by slot, -1 = unknown). Returns 0,
 * or -1 when a needed size is unknown, a division is by zero, or the value
 * overflows int64. */
int lang_sexpr_eval(const lang_sexpr *e, const int64_t *sizes, int64_t *out);

/* ---- types of the checked program --------------------------------------- */

typedef struct lang_tensor lang_tensor;
typedef struct lang_expr lang_expr;

typedef enum lang_expr_kind {
    LANG_E_INT,    /* ival */
    LANG_E_FLOAT,  /* fval */
    LANG_E_INDEX,  /* slot: index variable of the statement (stmt->vars[slot]) */
    LANG_E_SIZE,   /* slot: size symbol of the def (def->sizes[slot]) */
    LANG_E_SCALAR, /* tensor: a scalar parameter (tensor->is_scalar) */
    LANG_E_ACCESS, /* tensor(args[0], ..., args[nargs-1]); nargs == tensor->rank */
    LANG_E_UNARY,  /* op: lang_unop; args[0] */
    LANG_E_BINARY, /* op: lang_binop; args[0], args[1] */
    LANG_E_SELECT, /* args[0] ? args[1] : args[2] */
    LANG_E_CALL,   /* op: lang_builtin; args[0..nargs) */
    LANG_E_CAST    /* type(args[0]) */
} lang_expr_kind;

typedef enum lang_unop { LANG_NEG, LANG_NOT } lang_unop;

/* X(name, spelling, precedence): binary operators, higher binds tighter. */
#define LANG_BINOPS(X)                                                         \
    X(LANG_OR, "||", 1)                                                        \
    X(LANG_AND, "&&", 2)                                                       \
    X(LANG_EQ, "==", 3)                                                        \
    X(LANG_NE, "!=", 3)                                                        \
    X(LANG_LT, "<", 4)                                                         \
    X(LANG_LE, "<=", 4)                                                        \
    X(LANG_GT, ">", 4)                                                         \
    X(LANG_GE, ">=", 4)                                                        \
    X(LANG_ADD, "+", 5)                                                        \
    X(LANG_SUB, "-", 5)                                                        \
    X(LANG_MUL, "*", 6)                                                        \
    X(LANG_DIV, "/", 6)                                                        \
    X(LANG_MOD, "%", 6)

typedef enum lang_binop {
#define X(n, s, p) n,
    LANG_BINOPS(X)
#undef X
    LANG_BINOP_COUNT
} lang_binop;

/* X(name, canonical spelling, arity) — C spellings (fmaxf, expf, ...) are
 * accepted by the parser and mapped to these. */
#define LANG_BUILTINS(X)                                                       \
    X(LANG_EXP, "exp", 1)                                                      \
    X(LANG_LOG, "log", 1)                                                      \
    X(LANG_SQRT, "sqrt", 1)                                                    \
    X(LANG_RSQRT, "rsqrt", 1)                                                  \
    X(LANG_TANH, "tanh", 1)                                                    \
    X(LANG_SIGMOID, "sigmoid", 1)                                              \
    X(LANG_ERF, "erf", 1)                                                      \
    X(LANG_ABS, "abs", 1)                                                      \
    X(LANG_MAX, "max", 2)                                                      \
    X(LANG_MIN, "min", 2)                                                      \
    X(LANG_POW, "pow", 2)

typedef enum lang_builtin {
#define X(n, s, a) n,
    LANG_BUILTINS(X)
#undef X
    LANG_BUILTIN_COUNT
} lang_builtin;

const char *lang_binop_name(lang_binop op);     /* "+" */
const char *lang_builtin_name(lang_builtin b);  /* "exp" */

struct lang_expr {
    lang_expr_kind kind;
    tsl_dtype type;   /* the value's dtype */
    tsl_dtype optype; /* LANG_E_BINARY: the dtype the operation computes in */
    bool affine;      /* index args of an access: affine in index variables
                         (constant coefficients) and sizes, so lang_bind proved it
                         in bounds; false (gathers, i*j, i%2): check at run time */
    bool quasi;       /* index args that are not affine: quasi-affine (affine parts,
                         `/` and `%` by positive constants: k / 128, k % 128), so
                         lang_bind proved it in bounds too (src/lang/quasi.c) */
    int op;           /* lang_unop, lang_binop or lang_builtin */
    int slot;         /* LANG_E_INDEX / LANG_E_SIZE */
    int64_t ival;     /* LANG_E_INT */
    double fval;      /* LANG_E_FLOAT */
    lang_tensor *tensor; /* LANG_E_ACCESS / LANG_E_SCALAR */
    bool guarded;     /* LANG_E_ACCESS: in bounds only by the ?: / && / || guard
                         around it (guard.c): read under that guard only */
    lang_expr **args;
    int nargs;
    size_t offset; /* byte offset of the node in the source */
};

/* One dimension of a declared parameter: a size symbol or a constant. */
typedef struct lang_dim {
    int sym;       /* size-symbol slot, or -1 for a constant */
    int64_t value; /* the constant when sym < 0 */
} lang_dim;

enum {
    LANG_TENSOR_INPUT = 1,  /* a parameter */
    LANG_TENSOR_OUTPUT = 2, /* listed after -> (INPUT|OUTPUT = in/out) */
    LANG_TENSOR_TEMP = 4    /* assigned, neither parameter nor output */
};

struct lang_tensor {
    const char *name;
    int index;        /* position in def->tensors */
    int flags;        /* LANG_TENSOR_* */
    bool is_scalar;   /* `float alpha` (rank 0, passed by value) */
    tsl_dtype dtype;
    int rank;
    lang_dim *dims;   /* parameters only: the declared dims (rank entries) */
    const lang_sexpr **shape; /* rank entries: declared (params) or inferred */
    int param_index;  /* position in def->params, or -1 */
    int output_index; /* position in def->outputs, or -1 */
    size_t offset;    /* declaration, or first definition for temporaries */
    int first_stmt;   /* the statement that first defines it, or -1 */
};

typedef enum lang_assign_op {
    LANG_ASSIGN,  /* =    */
    LANG_ADD_EQ,  /* +=   */
    LANG_MUL_EQ,  /* *=   */
    LANG_MAX_EQ,  /* max= */
    LANG_MIN_EQ   /* min= */
} lang_assign_op;

const char *lang_assign_name(lang_assign_op op); /* "+=" (without "!") */

typedef struct lang_var {
    const char *name;
    lang_range range;  /* symbolic [lo, hi) */
    bool from_where;   /* range given by a where clause */
    size_t offset;     /* first use in the statement */
} lang_var;

typedef struct lang_stmt {
    int index;           /* position in def->stmts */
    lang_tensor *lhs;
    lang_assign_op op;
    bool bang;           /* `+=!` etc.: initialize with the identity first */
    lang_expr *rhs;
    lang_var *vars;      /* nvars: [0, niter) LHS vars in LHS order, then reduction */
    int nvars, niter;    /* niter == lhs->rank */
    bool reads_lhs;      /* the RHS reads lhs (always at the LHS index list): the
                            interpreter must read pre-statement values (snapshot) */
    size_t offset;       /* the LHS tensor name */
} lang_stmt;

typedef struct lang_def {
    const char *name;
    size_t offset;
    const tsl_source *src;
    lang_tensor **params;  /* nparams, declaration order (tensors and scalars) */
    int nparams;
    lang_tensor **outputs; /* noutputs, `-> (...)` order */
    int noutputs;
    lang_tensor **tensors; /* ntensors: params, then outputs not params, then temporaries */
    int ntensors;
    lang_stmt *stmts;
    int nstmts;
    const char **sizes;    /* nsizes size-symbol names, by slot: the params' dim
                              symbols first (declaration order), then symbols
                              that only where clauses use (supply their values) */
    size_t *size_offsets;  /* nsizes: first occurrence of each */
    int nsizes;
    strmap tensor_index;   /* name -> position in tensors (sema fills both) */
    strmap size_index;     /* name -> size slot */
} lang_def;

typedef struct lang_module {
    const tsl_source *src;
    lang_def **defs;
    int ndefs;
} lang_module;

/* ---- entry points ---------------------------------------------------------- */

/* Lex, parse, check and infer ranges of every def. NULL on error, with the
 * diagnostics in d. The module lives in a and points at src (keep both). */
lang_module *lang_parse_check(tsl_arena *a, const tsl_source *src, tsl_diag *d);

const lang_def *lang_module_find(const lang_module *m, const char *name); /* NULL if none */
int lang_module_count(const lang_module *m);
const lang_def *lang_module_def(const lang_module *m, int i);

int lang_def_size_slot(const lang_def *d, const char *name); /* -1 if none */
const lang_tensor *lang_def_tensor(const lang_def *d, const char *name); /* NULL if none */

/* ---- binding sizes --------------------------------------------------------- */

typedef struct lang_bound_stmt {
    int64_t *lo, *hi; /* stmt->nvars entries: concrete [lo, hi) of each var */
} lang_bound_stmt;

typedef struct lang_bound {
    const lang_def *def;
    int64_t *sizes;         /* def->nsizes concrete sizes, by slot */
    int64_t **shapes;       /* per def->tensors[i]: rank concrete extents */
    lang_bound_stmt *stmts; /* per def->stmts[i] */
} lang_bound;

/* Evaluate every range and shape with concrete sizes (size_values indexed by
 * size-symbol slot, -1 = unknown; NULL = all unknown), check that no range is
 * empty, that statements defining one tensor agree on its shape, and prove
 * every affine access in bounds. Returns TSL_OK (0) and *out, or an error
 * status with diagnostics in d. The caller fills size_values from the
 * parameters' dims (lang_dim.sym) after checking inputs agree. */
int lang_bind(tsl_arena *a, const lang_def *def, const int64_t *size_values,
              lang_bound **out, tsl_diag *d);

/* ---- printers (tessel compile --emit=ast|ranges) ------------------------- */

void lang_print_def(strbuf *b, const lang_def *d);    /* canonical TC with types */
void lang_print_ranges(strbuf *b, const lang_def *d); /* vars' ranges, shapes */
void lang_print_sexpr(strbuf *b, const lang_def *d, const lang_sexpr *e);
void lang_print_expr(strbuf *b, const lang_def *d, const lang_stmt *s, const lang_expr *e);

#endif
