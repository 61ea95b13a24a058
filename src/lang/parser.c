/* parser.c — tokens to the parse tree (lang_int.h). Recursive descent; the
 * grammar rule sits above each function. Names are left unresolved: a
 * call `f(x)` may be a tensor access, a builtin or a cast, which sema
 * decides. The first syntax error stops the parse. Expression nesting is
 * capped at LANG_MAX_DEPTH so no input can overflow the stack.
 */
#include <string.h>

#include "lang/lang_int.h"

typedef struct parser {
    tsl_arena *a;
    const tsl_source *src;
    tsl_diag *d;
    const lex_token *t; /* current token */
    int depth;
    bool failed;
} parser;

static const char *parse_token_desc(parser *P, const lex_token *t)
{
    switch (t->kind) {
    case TK_EOF: return "end of file";
    case TK_IDENT:
    case TK_INT:
    case TK_FLOAT:
    case TK_ASSIGN:
        return arena_printf(P->a, "'%.*s'", (int)(t->len > 40 ? 40 : t->len),
                            P->src->text + t->offset);
    case TK_ARROW: return "'->'";
    default:
        return arena_printf(P->a, "'%.*s'", (int)t->len, P->src->text + t->offset);
    }
}

static void parse_fail(parser *P, size_t offset, const char *fmt, const char *what)
{
    if (P->failed) return;
    P->failed = true;
    diag_error_at(P->d, P->src, offset, TSL_ERR_SYNTAX, fmt, what);
}

static void parse_expected(parser *P, const char *what)
{
    if (P->failed) return;
    P->failed = true;
    diag_error_at(P->d, P->src, P->t->offset, TSL_ERR_SYNTAX, "expected %s, found %s", what,
                  parse_token_desc(P, P->t));
}

static bool parse_is(parser *P, lex_kind k) { return P->t->kind == k; }

static bool parse_is_word(parser *P, const char *w)
{
    return P->t->kind == TK_IDENT && P->t->len == strlen(w) &&
           !memcmp(P->src->text + P->t->offset, w, P->t->len);
}

static bool parse_accept(parser *P, lex_kind k)
{
    if (P->t->kind != k) return false;
    P->t++;
    return true;
}

static bool parse_expect(parser *P, lex_kind k, const char *what)
{
    if (parse_accept(P, k)) return true;
    parse_expected(P, what);
    return false;
}

static const char *parse_ident(parser *P, const char *what, size_t *offset)
{
    if (P->t->kind != TK_IDENT) {
        parse_expected(P, what);
        return NULL;
    }
    if (offset) *offset = P->t->offset;
    const char *s = arena_strndup(P->a, P->src->text + P->t->offset, P->t->len);
    P->t++;
    return s;
}

static parse_node *parse_new(parser *P, parse_kind k, size_t offset)
{
    parse_node *n = arena_alloc(P->a, sizeof *n);
    n->kind = k;
    n->offset = offset;
    return n;
}

static void parse_add_arg(parser *P, parse_node *n, parse_node *arg)
{
    ARENA_PUSH(P->a, n->args, n->nargs, n->cap, arg);
}

static parse_node *parse_expr(parser *P);

static bool parse_enter(parser *P)
{
    if (++P->depth > LANG_MAX_DEPTH) {
        if (!P->failed) {
            P->failed = true;
            diag_error_at(P->d, P->src, P->t->offset, TSL_ERR_SYNTAX,
                          "expression is nested too deeply (more than %d levels of parentheses, "
                          "operators and calls)",
                          LANG_MAX_DEPTH);
        }
        return false;
    }
    return true;
}

/* args -> '(' [ expr { ',' expr } ] ')'     (the '(' is current) */
static bool parse_args(parser *P, parse_node *n)
{
    P->t++;
    if (parse_accept(P, TK_RPAREN)) return true;
    for (;;) {
        parse_node *e = parse_expr(P);
        if (!e) return false;
        parse_add_arg(P, n, e);
        if (parse_accept(P, TK_RPAREN)) return true;
        if (!parse_expect(P, TK_COMMA, "',' or ')' in the argument list")) return false;
    }
}

/* primary -> INT | FLOAT | IDENT [ args ] | '(' expr ')' */
static parse_node *parse_primary(parser *P)
{
    const lex_token *t = P->t;
    switch (t->kind) {
    case TK_INT: {
        parse_node *n = parse_new(P, P_INT, t->offset);
        n->ival = t->ival;
        P->t++;
        return n;
    }
    case TK_FLOAT: {
        parse_node *n = parse_new(P, P_FLOAT, t->offset);
        n->fval = t->fval;
        P->t++;
        return n;
    }
    case TK_IDENT: {
        if (parse_is_word(P, "where") || parse_is_word(P, "def")) {
            parse_fail(P, t->offset, "expected an expression, found keyword %s",
                       parse_token_desc(P, t));
            return NULL;
        }
        size_t off;
        const char *name = parse_ident(P, "a name", &off);
        if (parse_is(P, TK_LPAREN)) {
            parse_node *n = parse_new(P, P_CALL, off);
            n->name = name;
            if (!parse_args(P, n)) return NULL;
            return n;
        }
        parse_node *n = parse_new(P, P_IDENT, off);
        n->name = name;
        return n;
    }
    case TK_LPAREN: {
        P->t++;
        parse_node *n = parse_expr(P);
        if (!n) return NULL;
        if (!parse_expect(P, TK_RPAREN, "')' to close the parenthesis")) return NULL;
        return n;
    }
    default:
        parse_expected(P, "an expression");
        return NULL;
    }
}

/* unary -> ( '-' | '+' | '!' ) unary | primary
 * A level is counted per operator, not for the plain primary, so 130
 * parentheses are 130 levels (each counted once, by parse_expr). */
static parse_node *parse_unary(parser *P)
{
    const lex_token *t = P->t;
    if (t->kind != TK_MINUS && t->kind != TK_NOT && t->kind != TK_PLUS) return parse_primary(P);
    if (!parse_enter(P)) return NULL;
    parse_node *r;
    if (t->kind == TK_MINUS || t->kind == TK_NOT) {
        P->t++;
        parse_node *x = parse_unary(P);
        if (!x) return NULL;
        r = parse_new(P, P_UNARY, t->offset);
        r->op = t->kind == TK_MINUS ? LANG_NEG : LANG_NOT;
        parse_add_arg(P, r, x);
    } else { /* '+' */
        P->t++;
        r = parse_unary(P);
    }
    P->depth--;
    return r;
}

static int parse_binop_of(lex_kind k, int *prec)
{
    static const struct { lex_kind k; lang_binop op; } map[] = {
        {TK_OROR, LANG_OR}, {TK_ANDAND, LANG_AND}, {TK_EQEQ, LANG_EQ}, {TK_NE, LANG_NE},
        {TK_LT, LANG_LT},   {TK_LE, LANG_LE},      {TK_GT, LANG_GT},   {TK_GE, LANG_GE},
        {TK_PLUS, LANG_ADD}, {TK_MINUS, LANG_SUB}, {TK_STAR, LANG_MUL}, {TK_SLASH, LANG_DIV},
        {TK_PERCENT, LANG_MOD},
    };
    static const int precs[] = {
#define X(n, s, p) p,
        LANG_BINOPS(X)
#undef X
    };
    for (size_t i = 0; i < TSL_COUNTOF(map); i++)
        if (map[i].k == k) {
            *prec = precs[map[i].op];
            return (int)map[i].op;
        }
    return -1;
}

/* binary(p) -> unary { binop(q >= p) binary(q + 1) }   (left associative) */
static parse_node *parse_binary(parser *P, int min_prec)
{
    parse_node *lhs = parse_unary(P);
    if (!lhs) return NULL;
    int levels = 0; /* a chain a+b+c+... deepens the (left-leaning) tree */
    for (;;) {
        int prec, op = parse_binop_of(P->t->kind, &prec);
        if (op < 0 || prec < min_prec) {
            P->depth -= levels;
            return lhs;
        }
        size_t off = P->t->offset;
        P->t++;
        levels++;
        if (!parse_enter(P)) return NULL;
        parse_node *rhs = parse_binary(P, prec + 1);
        if (!rhs) return NULL;
        parse_node *n = parse_new(P, P_BINARY, off);
        n->op = op;
        parse_add_arg(P, n, lhs);
        parse_add_arg(P, n, rhs);
        lhs = n;
    }
}

/* expr -> binary(1) [ '?' expr ':' expr ] */
static parse_node *parse_expr(parser *P)
{
    if (!parse_enter(P)) return NULL;
    parse_node *r = parse_binary(P, 1);
    if (r && parse_is(P, TK_QUESTION)) {
        parse_node *n = parse_new(P, P_SELECT, P->t->offset);
        P->t++;
        parse_node *x = parse_expr(P);
        if (!x || !parse_expect(P, TK_COLON, "':' of the conditional expression")) {
            r = NULL;
        } else {
            parse_node *y = parse_expr(P);
            if (!y) {
                r = NULL;
            } else {
                parse_add_arg(P, n, r);
                parse_add_arg(P, n, x);
                parse_add_arg(P, n, y);
                r = n;
            }
        }
    }
    P->depth--;
    return r;
}

/* where -> 'where' IDENT 'in' expr ':' expr { ',' IDENT 'in' expr ':' expr } */
static bool parse_where_clause(parser *P, parse_stmt *s)
{
    P->t++;
    for (;;) {
        parse_where w = {0};
        w.var = parse_ident(P, "an index variable after 'where'", &w.offset);
        if (!w.var) return false;
        if (!parse_is_word(P, "in")) {
            parse_expected(P, "'in' (where VAR in LO:HI)");
            return false;
        }
        P->t++;
        if (!(w.lo = parse_expr(P))) return false;
        if (!parse_expect(P, TK_COLON, "':' between the bounds (where VAR in LO:HI)")) return false;
        if (!(w.hi = parse_expr(P))) return false;
        ARENA_PUSH(P->a, s->wheres, s->nwheres, s->cwheres, w);
        if (!parse_is(P, TK_COMMA)) return true;
        P->t++;
    }
}

/* stmt -> IDENT '(' [ expr { ',' expr } ] ')' ASSIGN expr { where } [ ';' ] */
static bool parse_stmt_into(parser *P, parse_def *def)
{
    parse_stmt s = {0};
    s.lhs = parse_ident(P, "a statement (a tensor name) or '}'", &s.offset);
    if (!s.lhs) return false;
    if (!parse_is(P, TK_LPAREN)) {
        parse_expected(P, arena_printf(P->a, "'(' after '%s' (write %s() for a zero-dim tensor)",
                                       s.lhs, s.lhs));
        return false;
    }
    parse_node tmp = {0};
    if (!parse_args(P, &tmp)) return false;
    s.idx = tmp.args;
    s.nidx = tmp.nargs;
    s.cidx = tmp.cap;
    if (!parse_is(P, TK_ASSIGN)) {
        parse_expected(P, "an assignment operator (=, +=, *=, max=, min=, or with '!')");
        return false;
    }
    s.op = (lang_assign_op)P->t->op;
    s.bang = P->t->bang;
    s.op_offset = P->t->offset;
    if (s.op == LANG_ASSIGN && s.bang) {
        parse_fail(P, s.op_offset, "%s: '=' has no '!' form (did you mean '+=!'?)", "'=!'");
        return false;
    }
    P->t++;
    if (!(s.rhs = parse_expr(P))) return false;
    while (parse_is_word(P, "where"))
        if (!parse_where_clause(P, &s)) return false;
    parse_accept(P, TK_SEMI);
    ARENA_PUSH(P->a, def->stmts, def->nstmts, def->cstmts, s);
    return true;
}

/* param -> TYPE [ '(' [ dim { ',' dim } ] ')' ] IDENT      dim -> IDENT | INT */
static bool parse_param_into(parser *P, parse_def *def)
{
    parse_param p = {0};
    size_t toff = P->t->offset;
    if (!parse_is(P, TK_IDENT)) {
        parse_expected(P, "a parameter (TYPE(dims) NAME or TYPE NAME)");
        return false;
    }
    if (dtype_parse(P->src->text + toff, P->t->len, &p.dtype) != 0) {
        if (P->t[1].kind == TK_COMMA || P->t[1].kind == TK_RPAREN)
            parse_fail(P, toff, "parameter %s has no type (write e.g. float(N) NAME)",
                       parse_token_desc(P, P->t));
        else
            parse_fail(P, toff,
                       "unknown type %s (expected float16, half, bfloat16, float32, float, "
                       "float64, double, int8..int64, uint8..uint64 or bool)",
                       parse_token_desc(P, P->t));
        return false;
    }
    P->t++;
    if (parse_accept(P, TK_LPAREN)) {
        if (!parse_accept(P, TK_RPAREN)) {
            for (;;) {
                parse_dim dm = {0};
                dm.offset = P->t->offset;
                if (parse_is(P, TK_INT)) {
                    dm.value = P->t->ival;
                    P->t++;
                } else if (parse_is(P, TK_IDENT)) {
                    dm.sym = parse_ident(P, "a size", NULL);
                } else {
                    parse_expected(P, "a size symbol or an integer in the dimension list");
                    return false;
                }
                ARENA_PUSH(P->a, p.dims, p.rank, p.cap, dm);
                if (parse_accept(P, TK_RPAREN)) break;
                if (!parse_expect(P, TK_COMMA, "',' or ')' in the dimension list")) return false;
            }
        }
    } else {
        p.is_scalar = true;
    }
    p.name = parse_ident(P, "the parameter's name", &p.offset);
    if (!p.name) return false;
    ARENA_PUSH(P->a, def->params, def->nparams, def->cparams, p);
    return true;
}

/* def -> 'def' IDENT '(' [ param { ',' param } ] ')' ARROW
 *        ( '(' [ IDENT { ',' IDENT } ] ')' | IDENT ) '{' { stmt } '}' */
static bool parse_def_into(parser *P, parse_module *m)
{
    parse_def def = {0};
    def.offset = P->t->offset;
    P->t++;
    def.name = parse_ident(P, "the def's name", NULL);
    if (!def.name) return false;
    if (!parse_expect(P, TK_LPAREN, "'(' to open the parameter list")) return false;
    if (!parse_accept(P, TK_RPAREN)) {
        for (;;) {
            if (!parse_param_into(P, &def)) return false;
            if (parse_accept(P, TK_RPAREN)) break;
            if (!parse_expect(P, TK_COMMA, "',' or ')' in the parameter list")) return false;
        }
    }
    if (!parse_expect(P, TK_ARROW, "'->' and the outputs")) return false;
    bool paren = parse_accept(P, TK_LPAREN);
    if (!(paren && parse_accept(P, TK_RPAREN))) {
        for (;;) {
            parse_name o = {0};
            o.name = parse_ident(P, "an output name", &o.offset);
            if (!o.name) return false;
            ARENA_PUSH(P->a, def.outputs, def.noutputs, def.coutputs, o);
            if (!paren) break;
            if (parse_accept(P, TK_RPAREN)) break;
            if (!parse_expect(P, TK_COMMA, "',' or ')' in the output list")) return false;
        }
    }
    size_t brace = P->t->offset;
    if (!parse_expect(P, TK_LBRACE, "'{' to open the def's body")) return false;
    for (;;) {
        if (parse_accept(P, TK_RBRACE)) break;
        if (parse_is(P, TK_EOF)) {
            parse_fail(P, brace, "unterminated def %s: missing '}' before the end of the file",
                       arena_printf(P->a, "'%s'", def.name));
            return false;
        }
        if (parse_is_word(P, "def")) {
            parse_fail(P, P->t->offset, "missing '}' before this 'def' (the previous def %s is not closed)",
                       arena_printf(P->a, "'%s'", def.name));
            return false;
        }
        if (!parse_stmt_into(P, &def)) return false;
    }
    ARENA_PUSH(P->a, m->defs, m->ndefs, m->cdefs, def);
    return true;
}

/* module -> { def } EOF */
parse_module *parse_module_tokens(tsl_arena *a, const tsl_source *src, const lex_token *toks,
                                  tsl_diag *d)
{
    parser P = {.a = a, .src = src, .d = d, .t = toks};
    parse_module *m = arena_alloc(a, sizeof *m);
    while (!parse_is(&P, TK_EOF)) {
        if (!parse_is_word(&P, "def")) {
            parse_expected(&P, "'def'");
            return NULL;
        }
        if (!parse_def_into(&P, m)) return NULL;
    }
    if (m->ndefs == 0) {
        diag_error_at(d, src, 0, TSL_ERR_SYNTAX, "the source has no def");
        return NULL;
    }
    return m;
}
