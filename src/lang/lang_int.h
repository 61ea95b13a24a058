/* lang_int.h — what the front end's files share and nobody else sees: the
 * tokens, the parse tree (names unresolved, untyped), and the entry points
 * of each pass. lexer.c -> parser.c -> sema.c -> ranges.c; print.c prints.
 */
#ifndef TSL_LANG_INT_H
#define TSL_LANG_INT_H

#include "lang/lang.h"

/* Deepest expression nesting the parser accepts; every recursive pass
 * follows the parse tree, so this bounds their stack use too. */
#define LANG_MAX_DEPTH 256

/* Most index variables in one statement (LHS and reduction variables
 * together). The layers below hold a statement's variables in 64-bit
 * masks and nest a loop per variable; the interpreter's iteration box is
 * their product. */
#define LANG_MAX_VARS 32

/* Largest inferred range expression (lang_sexpr.nodes) accepted. */
#define LANG_MAX_RANGE_NODES 4000

/* ---- tokens ---------------------------------------------------------------- */

typedef enum lex_kind {
    TK_EOF,
    TK_IDENT,
    TK_INT,
    TK_FLOAT,
    TK_LPAREN, TK_RPAREN, TK_LBRACE, TK_RBRACE, TK_COMMA, TK_COLON, TK_SEMI,
    TK_ARROW,     /* -> or → */
    TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_PERCENT,
    TK_LT, TK_LE, TK_GT, TK_GE, TK_EQEQ, TK_NE,
    TK_ANDAND, TK_OROR, TK_NOT, TK_QUESTION,
    TK_ASSIGN,    /* =, +=, *=, max=, min= with optional ! (tok.op, tok.bang) */
} lex_kind;

typedef struct lex_token {
    lex_kind kind;
    size_t offset, len;
    int64_t ival;   /* TK_INT */
    double fval;    /* TK_FLOAT */
    int op;         /* TK_ASSIGN: lang_assign_op */
    bool bang;      /* TK_ASSIGN */
} lex_token;

/* Tokenize the whole source (ends with TK_EOF). NULL after reporting a
 * lexical error. */
lex_token *lex_tokenize(tsl_arena *a, const tsl_source *src, tsl_diag *d, int *ntok);

/* ---- parse tree -------------------------------------------------------------- */

typedef enum parse_kind {
    P_INT, P_FLOAT,
    P_IDENT,   /* name */
    P_CALL,    /* name(args): access, builtin or cast (sema decides) */
    P_UNARY,   /* op: lang_unop */
    P_BINARY,  /* op: lang_binop */
    P_SELECT   /* args[0] ? args[1] : args[2] */
} parse_kind;

typedef struct parse_node {
    parse_kind kind;
    const char *name;
    int64_t ival;
    double fval;
    int op;
    struct parse_node **args;
    int nargs, cap;
    size_t offset;
} parse_node;

typedef struct parse_dim {
    const char *sym; /* NULL for a constant */
    int64_t value;
    size_t offset;
} parse_dim;

typedef struct parse_param {
    const char *name;
    size_t offset;      /* the name */
    tsl_dtype dtype;
    bool is_scalar;
    parse_dim *dims;
    int rank, cap;
} parse_param;

typedef struct parse_name {
    const char *name;
    size_t offset;
} parse_name;

typedef struct parse_where {
    const char *var;
    size_t offset;
    parse_node *lo, *hi;
} parse_where;

typedef struct parse_stmt {
    const char *lhs;
    size_t offset;
    parse_node **idx;      /* LHS index expressions */
    int nidx, cidx;
    lang_assign_op op;
    bool bang;
    size_t op_offset;
    parse_node *rhs;
    parse_where *wheres;
    int nwheres, cwheres;
} parse_stmt;

typedef struct parse_def {
    const char *name;
    size_t offset;
    parse_param *params;
    int nparams, cparams;
    parse_name *outputs;
    int noutputs, coutputs;
    parse_stmt *stmts;
    int nstmts, cstmts;
} parse_def;

typedef struct parse_module {
    parse_def *defs;
    int ndefs, cdefs;
} parse_module;

/* Parse the tokens into a tree. NULL after reporting errors. */
parse_module *parse_module_tokens(tsl_arena *a, const tsl_source *src, const lex_token *toks,
                                  tsl_diag *d);

/* ---- passes -------------------------------------------------------------- */

/* Resolve names, type, check one def. NULL after reporting errors. */
lang_def *sema_def(tsl_arena *a, const tsl_source *src, const parse_def *pd, tsl_diag *d);

/* Infer every statement's ranges and every output's and temporary's shape
 * (sema filled where ranges). Returns 0, or -1 after reporting errors. */
int ranges_infer(tsl_arena *a, lang_def *def, tsl_diag *d);

/* Symbolic sizes, folded as they are built. */
const lang_sexpr *sexpr_const(tsl_arena *a, int64_t v);
const lang_sexpr *sexpr_sym(tsl_arena *a, int slot);
const lang_sexpr *sexpr_bin(tsl_arena *a, lang_sexpr_kind k, const lang_sexpr *x,
                            const lang_sexpr *y);
bool sexpr_equal(const lang_sexpr *x, const lang_sexpr *y);

/* Affine form of an index expression: sum(coef[v] * var v) + off. Returns
 * false when the expression is not affine (then nothing is filled).
 * coef has nvars entries. */
bool ranges_affine(tsl_arena *a, const lang_expr *e, int nvars, int64_t *coef,
                   const lang_sexpr **off);

/* Quasi-affine indices (quasi.c): affine parts, division and modulo by
 * positive integer constants. quasi_is: e is one (over the statement's
 * nvars variables). quasi_divisor: e is `x / c` or `x % c` with c a
 * positive constant (in *c). quasi_span: e's interval over the box [lo, hi)
 * with concrete sizes (false on overflow or an unknown size).
 * quasi_check: a located error for `/` or `%` by a constant <= 0 anywhere
 * in an index expression of e (a statement's RHS); -1 after reporting. */
bool quasi_is(const lang_expr *e, int nvars);
bool quasi_divisor(const lang_expr *e, int64_t *c);
bool quasi_span(const lang_expr *e, int nvars, const int64_t *lo, const int64_t *hi, const int64_t *sizes,
                int64_t *mn, int64_t *mx);
int quasi_check(const lang_def *def, const lang_expr *e, tsl_diag *d);

/* Guards (guard.c): what holds where a read is evaluated. A fact is
 * sum coef[v] * var v + off >= 0. */
typedef struct lang_fact {
    int64_t *coef; /* nvars */
    const lang_sexpr *off;
} lang_fact;
typedef struct lang_facts {
    lang_fact *f;
    int n, cap;
} lang_facts;
typedef void (*guard_fn)(void *ctx, lang_expr *access, const lang_facts *facts);
/* Call fn for every access of e (nested ones first) with the facts that
 * hold where it is evaluated (the conditions of the ?: arms and the left
 * operands of && and || around it). */
void guard_walk(tsl_arena *a, lang_expr *e, int nvars, guard_fn fn, void *ctx);
/* Does fact f concern the index whose variable part is coef (one
 * variable of the index bounded by sizes and constants, or the index's
 * own variable part, or its negation)? 0 when not; else which way it
 * bounds the index: GUARD_LOWER (from below), GUARD_UPPER (from above). */
enum { GUARD_LOWER = 1, GUARD_UPPER = 2 };
int guard_concerns(const lang_fact *f, const int64_t *coef, int nvars);

#endif
