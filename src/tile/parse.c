/* parse.c — the tile IR's text format: lexer and recursive-descent parser.
 * Reads what print.c writes (and the same with any spacing, newlines and
 * `//` comments). Names are resolved while parsing: every use must follow
 * its definition in an enclosing scope. The first error stops the parse
 * (longjmp back to tile_parse) with `file:line:col: error:`; no input can
 * crash it, and nesting is bounded.
 *
 * Grammar (the rule for each construct is above its function):
 *   module := kernel*
 *   block  := '{' stmt* '}'
 * Layout text is read by src/layout (layout_parse_prefix). */
#include <math.h>
#include <setjmp.h>
#include <string.h>

#include "tile/tile.h"

#define MAX_DEPTH 200

/* ---- lexer -------------------------------------------------------------- */

typedef enum tok_kind { T_EOF, T_IDENT, T_INT, T_FLOAT, T_PUNCT } tok_kind;

typedef struct token {
    tok_kind kind;
    size_t pos, len;
    int64_t i;
} token;

typedef struct scope_entry {
    const char *name;
    tile_value *v;
} scope_entry;

typedef struct parser {
    tile_module *m;
    const tsl_source *src;
    tsl_diag *d;
    const char *s;
    size_t n, pos; /* pos: first byte after tok */
    token tok;
    jmp_buf jb;
    tile_kernel *k;
    scope_entry *names;
    int nnames, capnames;
    int depth;
    int in_decomp;
    int in_roles; /* inside a warpgroups role body */
    int sym_mode; /* unknown names in param shapes become size symbols */
} parser;

static _Noreturn void fail(parser *P, size_t pos, const char *fmt, ...) TSL_PRINTF(3, 4);

static _Noreturn void fail(parser *P, size_t pos, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error_at(P->d, P->src, pos, TSL_ERR_SYNTAX, "%s", msg);
    longjmp(P->jb, 1);
}

/* Text of the current token for messages (arena copy, at most 32 bytes). */
static const char *tok_text(parser *P)
{
    if (P->tok.kind == T_EOF) return "end of input";
    size_t len = P->tok.len > 32 ? 32 : P->tok.len;
    return arena_printf(P->m->arena, "'%.*s'", (int)len, P->s + P->tok.pos);
}

static int is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static size_t skip_space(parser *P, size_t p)
{
    for (;;) {
        while (p < P->n && (P->s[p] == ' ' || P->s[p] == '\t' || P->s[p] == '\n' || P->s[p] == '\r'))
            p++;
        if (p + 1 < P->n && P->s[p] == '/' && P->s[p + 1] == '/') {
            while (p < P->n && P->s[p] != '\n') p++;
            continue;
        }
        return p;
    }
}

static void lex_next(parser *P)
{
    size_t p = skip_space(P, P->pos);
    token t = {T_EOF, p, 0, 0};
    if (p >= P->n || P->s[p] == '\0') {
        P->tok = t;
        P->pos = p;
        return;
    }
    const char *s = P->s;
    char c = s[p];
    size_t q = p;
    if (is_ident_start(c)) {
        while (q < P->n && is_ident_char(s[q])) q++;
        t.kind = T_IDENT;
    } else if (is_digit(c)) {
        uint64_t v = 0;
        int over = 0;
        while (q < P->n && is_digit(s[q])) {
            unsigned dgt = (unsigned)(s[q] - '0');
            if (v > (UINT64_C(0x7fffffffffffffff) - dgt) / 10) over = 1;
            v = v * 10 + dgt;
            q++;
        }
        t.kind = T_INT;
        if (q + 1 < P->n && s[q] == '.' && is_digit(s[q + 1])) {
            t.kind = T_FLOAT;
            q++;
            while (q < P->n && is_digit(s[q])) q++;
        }
        if (q < P->n && (s[q] == 'e' || s[q] == 'E')) {
            size_t r = q + 1;
            if (r < P->n && (s[r] == '+' || s[r] == '-')) r++;
            if (r < P->n && is_digit(s[r])) {
                t.kind = T_FLOAT;
                q = r;
                while (q < P->n && is_digit(s[q])) q++;
            }
        }
        if (t.kind == T_INT) {
            if (over) fail(P, p, "integer literal too large");
            t.i = (int64_t)v;
        }
    } else {
        static const char *two[] = {"->", "<=", ">=", "==", "!=", "&&", "||"};
        t.kind = T_PUNCT;
        q = p + 1;
        for (size_t i = 0; i < TSL_COUNTOF(two); i++)
            if (p + 1 < P->n && s[p] == two[i][0] && s[p + 1] == two[i][1]) q = p + 2;
        if (q == p + 1 && !strchr("()[]{},:=+-*/%<>!.", c))
            fail(P, p, "unexpected character '%c'", (c >= 32 && c < 127) ? c : '?');
    }
    t.len = q - p;
    P->tok = t;
    P->pos = q;
}

/* Restart the lexer at byte p (after raw scanning). */
static void lex_at(parser *P, size_t p)
{
    P->pos = p;
    lex_next(P);
}

static int is_p(parser *P, const char *punct)
{
    return P->tok.kind == T_PUNCT && P->tok.len == strlen(punct) &&
           memcmp(P->s + P->tok.pos, punct, P->tok.len) == 0;
}

static int is_kw(parser *P, const char *kw)
{
    return P->tok.kind == T_IDENT && P->tok.len == strlen(kw) &&
           memcmp(P->s + P->tok.pos, kw, P->tok.len) == 0;
}

static int accept(parser *P, const char *punct)
{
    if (!is_p(P, punct)) return 0;
    lex_next(P);
    return 1;
}

static void expect(parser *P, const char *punct, const char *where)
{
    if (!accept(P, punct)) fail(P, P->tok.pos, "expected '%s' %s, found %s", punct, where, tok_text(P));
}

static void expect_kw(parser *P, const char *kw, const char *where)
{
    if (!is_kw(P, kw)) fail(P, P->tok.pos, "expected '%s' %s, found %s", kw, where, tok_text(P));
    lex_next(P);
}

static const char *const reserved[] = {
    "kernel", "let",   "var",     "set",    "for",       "in",         "if",     "else",
    "while",  "pipeline", "threads", "indices", "decomp", "init",      "fill",   "dim",
    "bytes",  "atom",  "on",      "at",     "layout",    "strides",    "block_idx",
    "thread_idx", "min", "max",   "cdiv",   "inf",       "nan",        "global", "shared",
    "register", "int", "grid",    "stages", "out",       "tile",       "local",  "smem_budget", "min_blocks",
    "mask", "warpgroups", "role", "regs", "cluster", "cta", "multicast",
};

int tile_name_reserved(const char *s)
{
    for (size_t i = 0; i < TSL_COUNTOF(reserved); i++)
        if (!strcmp(reserved[i], s)) return 1;
    return 0;
}

static const char *expect_name(parser *P, const char *what)
{
    if (P->tok.kind != T_IDENT) fail(P, P->tok.pos, "expected %s, found %s", what, tok_text(P));
    for (size_t i = 0; i < TSL_COUNTOF(reserved); i++)
        if (is_kw(P, reserved[i]))
            fail(P, P->tok.pos, "'%s' is a keyword and cannot name %s", reserved[i], what);
    const char *name = arena_strndup(P->m->arena, P->s + P->tok.pos, P->tok.len);
    lex_next(P);
    return name;
}

static int64_t expect_int(parser *P, const char *what)
{
    if (P->tok.kind != T_INT) fail(P, P->tok.pos, "expected %s (an integer), found %s", what, tok_text(P));
    int64_t v = P->tok.i;
    lex_next(P);
    return v;
}

/* A dotted name read raw from the current identifier: reduce.sum,
 * ldmatrix.x4.trans, mma.sync.m16n8k16.f32.f16.f16.f32. */
static const char *dotted_name(parser *P, size_t *len_out)
{
    if (P->tok.kind != T_IDENT) fail(P, P->tok.pos, "expected a name, found %s", tok_text(P));
    size_t p = P->tok.pos, q = p;
    while (q < P->n && (is_ident_char(P->s[q]) || (P->s[q] == '.' && q + 1 < P->n && is_ident_char(P->s[q + 1]))))
        q++;
    *len_out = q - p;
    const char *name = arena_strndup(P->m->arena, P->s + p, q - p);
    lex_at(P, q);
    return name;
}

/* ---- scopes ------------------------------------------------------------------ */

static tile_value *lookup(parser *P, const char *s, size_t n)
{
    for (int i = P->nnames - 1; i >= 0; i--)
        if (strlen(P->names[i].name) == n && memcmp(P->names[i].name, s, n) == 0) return P->names[i].v;
    return NULL;
}

static void define(parser *P, tile_value *v, size_t pos)
{
    if (lookup(P, v->name, strlen(v->name)))
        fail(P, pos, "'%s' is already defined in this scope", v->name);
    v->pos = pos;
    scope_entry e = {v->name, v};
    ARENA_PUSH(P->m->arena, P->names, P->nnames, P->capnames, e);
}

static tile_value *new_value(parser *P, tile_value_kind kind, tile_value_origin origin,
                             const char *name, size_t pos)
{
    tile_value *v = tile_kernel_new_value(P->m, P->k, kind, origin, name);
    define(P, v, pos);
    return v;
}

static void enter(parser *P, size_t pos)
{
    if (++P->depth > MAX_DEPTH) fail(P, pos, "nesting deeper than %d levels", MAX_DEPTH);
}

/* ---- expressions -------------------------------------------------------------- */

static tile_expr *parse_expr(parser *P);

static const struct {
    const char *text;
    int prec;
} binops[] = {
#define X(n, t, p) {t, p},
    TILE_BINOPS(X)
#undef X
};

static tile_expr *mk(parser *P, tile_expr_kind kind, size_t pos)
{
    tile_expr *e = arena_alloc(P->m->arena, sizeof *e);
    e->kind = kind;
    e->pos = pos;
    return e;
}

/* primary := INT | FLOAT | 'inf' | 'nan' | NAME | 'block_idx' '.' (x|y|z)
 *          | 'thread_idx' | ('min'|'max'|'cdiv') '(' expr ',' expr ')'
 *          | '(' expr ')' | '-' primary | '!' primary */
static tile_expr *parse_primary(parser *P)
{
    size_t pos = P->tok.pos;
    enter(P, pos);
    tile_expr *e = NULL;
    if (P->tok.kind == T_INT) {
        e = mk(P, TILE_E_INT, pos);
        e->i = P->tok.i;
        lex_next(P);
    } else if (P->tok.kind == T_FLOAT || is_kw(P, "inf") || is_kw(P, "nan")) {
        e = mk(P, TILE_E_FLOAT, pos);
        e->ftext = arena_strndup(P->m->arena, P->s + pos, P->tok.len);
        e->f = is_kw(P, "inf") ? INFINITY : is_kw(P, "nan") ? NAN : strtod(e->ftext, NULL);
        lex_next(P);
    } else if (accept(P, "-") || accept(P, "!")) {
        e = mk(P, P->s[pos] == '-' ? TILE_E_NEG : TILE_E_NOT, pos);
        e->a = parse_primary(P);
    } else if (accept(P, "(")) {
        e = parse_expr(P);
        expect(P, ")", "to close '('");
    } else if (is_kw(P, "block_idx")) {
        lex_next(P);
        expect(P, ".", "after block_idx");
        e = mk(P, TILE_E_BLOCK_IDX, pos);
        if (is_kw(P, "x")) e->dim = 0;
        else if (is_kw(P, "y")) e->dim = 1;
        else if (is_kw(P, "z")) e->dim = 2;
        else fail(P, P->tok.pos, "expected x, y or z after 'block_idx.', found %s", tok_text(P));
        lex_next(P);
    } else if (is_kw(P, "thread_idx")) {
        if (!P->in_decomp) fail(P, pos, "thread_idx is only defined inside a decomposition");
        lex_next(P);
        e = mk(P, TILE_E_THREAD_IDX, pos);
    } else if (is_kw(P, "min") || is_kw(P, "max") || is_kw(P, "cdiv")) {
        tile_binop op = is_kw(P, "min") ? TILE_OP_MIN : is_kw(P, "max") ? TILE_OP_MAX : TILE_OP_CDIV;
        lex_next(P);
        expect(P, "(", "after a function name");
        e = mk(P, TILE_E_BIN, pos);
        e->op = op;
        e->a = parse_expr(P);
        expect(P, ",", "between arguments");
        e->b = parse_expr(P);
        expect(P, ")", "after the arguments");
    } else if (P->tok.kind == T_IDENT) {
        tile_value *v = lookup(P, P->s + pos, P->tok.len);
        if (!v && P->sym_mode) {
            const char *name = expect_name(P, "a size symbol");
            v = tile_kernel_symbol(P->m, P->k, name);
            define(P, v, pos);
        } else {
            if (!v)
                fail(P, pos, "use of undefined value '%.*s'", (int)P->tok.len, P->s + pos);
            if (v->kind != TILE_V_SCALAR)
                fail(P, pos, "'%s' is a %s, expected an int expression", v->name,
                     v->kind == TILE_V_TENSOR ? "tensor" : "thread group");
            lex_next(P);
        }
        e = mk(P, TILE_E_VALUE, pos);
        e->v = v;
    } else {
        fail(P, pos, "expected an expression, found %s", tok_text(P));
    }
    P->depth--;
    return e;
}

/* The infix operator at the current token, or -1. */
static int cur_binop(parser *P)
{
    if (P->tok.kind != T_PUNCT) return -1;
    for (int i = 0; i < TILE_OP_COUNT; i++)
        if (binops[i].prec > 0 && is_p(P, binops[i].text)) return i;
    return -1;
}

/* expr := primary { binop primary }   (precedence climbing, left assoc.) */
static tile_expr *parse_binary(parser *P, int min_prec)
{
    tile_expr *lhs = parse_primary(P);
    for (;;) {
        int op = cur_binop(P);
        if (op < 0 || binops[op].prec < min_prec) return lhs;
        size_t pos = P->tok.pos;
        lex_next(P);
        enter(P, pos);
        tile_expr *rhs = parse_binary(P, binops[op].prec + 1);
        P->depth--;
        tile_expr *e = mk(P, TILE_E_BIN, lhs->pos);
        e->op = (tile_binop)op;
        e->a = lhs;
        e->b = rhs;
        lhs = e;
    }
}

static tile_expr *parse_expr(parser *P)
{
    return parse_binary(P, 1);
}

/* exprs := expr {',' expr}   (into a fresh array; *n set) */
static tile_expr **parse_exprs(parser *P, const char *close, int *n)
{
    tile_expr **items = NULL;
    int cnt = 0, cap = 0;
    if (!is_p(P, close)) {
        do {
            tile_expr *e = parse_expr(P);
            ARENA_PUSH(P->m->arena, items, cnt, cap, e);
        } while (accept(P, ","));
    }
    *n = cnt;
    return items;
}

/* ---- layouts and types ---------------------------------------------------------- */

/* A layout expression in src/layout's syntax, read raw from the current
 * token; `want` is the kind it must be. */
static tile_layout *parse_layout(parser *P, layout_value_kind want, const char *what)
{
    size_t start = P->tok.pos;
    if (P->tok.kind == T_EOF) fail(P, start, "expected %s, found end of input", what);
    tile_layout *l = arena_alloc(P->m->arena, sizeof *l);
    layout_err e;
    memset(&e, 0, sizeof e);
    size_t used = 0;
    if (layout_parse_prefix(P->s + start, P->n - start, &used, &l->v, &e) != TSL_OK)
        fail(P, start + (e.offset <= P->n - start ? e.offset : 0), "bad layout: %s",
             e.msg[0] ? e.msg : "does not parse");
    if (used == 0) fail(P, start, "expected %s, found %s", what, tok_text(P));
    if (l->v.kind != want) {
        static const char *names[] = {"a data layout", "a tiler", "a distributed layout"};
        fail(P, start, "expected %s, found %s", what, names[l->v.kind]);
    }
    strbuf sb = {0};
    layout_value_print(&sb, &l->v);
    l->text = arena_strdup(P->m->arena, sb_str(&sb));
    sb_free(&sb);
    lex_at(P, start + used);
    return l;
}

/* A 1-D tiler entry: an int n (n:1) or a 1-D layout such as 2:2 or
 * (2,2):(1,4). Returns the size; *lay is NULL for a plain int. */
static int64_t parse_tiler(parser *P, tile_layout **lay)
{
    size_t pos = P->tok.pos;
    tile_layout *l = parse_layout(P, LAYOUT_VALUE_DATA, "a tile size or 1-D layout");
    int64_t sh[LAYOUT_MAX_NODES], st[LAYOUT_MAX_NODES];
    int nl = layout_leaves(&l->v.data, sh, st);
    int64_t size = layout_size(&l->v.data);
    if (size < 1) fail(P, pos, "a tile must have at least one element");
    if (nl == 1 && st[0] == 1 && l->v.data.sw.b == 0) {
        *lay = NULL;
    } else {
        *lay = l;
    }
    return size;
}

/* dtype := f16 | bf16 | f32 | ... | i4 | u4 | f6e3m2 | ... */
static tile_dtype parse_dtype(parser *P)
{
    size_t pos = P->tok.pos;
    tile_dtype dt;
    if (P->tok.kind != T_IDENT || tile_dtype_parse(P->s + pos, P->tok.len, &dt) != 0)
        fail(P, pos, "expected an element type (f16, bf16, f32, i8, u4, ...), found %s", tok_text(P));
    lex_next(P);
    return dt;
}

static int parse_space(parser *P, tile_space *sp)
{
    if (is_kw(P, "global")) *sp = TILE_GLOBAL;
    else if (is_kw(P, "shared")) *sp = TILE_SHARED;
    else if (is_kw(P, "register")) *sp = TILE_REGISTER;
    else return 0;
    lex_next(P);
    return 1;
}

/* type := space dtype '[' exprs ']' ['strides' '[' exprs ']'] ['layout' L]
 *   (strides: global only; layout: shared (data) or register (distributed,
 *   required)) */
static tile_type parse_type(parser *P)
{
    tile_type t;
    memset(&t, 0, sizeof t);
    size_t pos = P->tok.pos;
    if (!parse_space(P, &t.space))
        fail(P, pos, "expected a memory space (global, shared or register), found %s", tok_text(P));
    t.dt = parse_dtype(P);
    expect(P, "[", "before the shape");
    t.dims = parse_exprs(P, "]", &t.rank);
    expect(P, "]", "after the shape");
    if (is_kw(P, "strides")) {
        if (t.space != TILE_GLOBAL) fail(P, P->tok.pos, "only global tensors have strides");
        lex_next(P);
        expect(P, "[", "before the strides");
        int n;
        size_t spos = P->tok.pos;
        t.strides = parse_exprs(P, "]", &n);
        if (n != t.rank) fail(P, spos, "%d strides given for a rank-%d tensor", n, t.rank);
        expect(P, "]", "after the strides");
    }
    if (is_kw(P, "layout")) {
        if (t.space == TILE_GLOBAL) fail(P, P->tok.pos, "global tensors take strides, not a layout");
        lex_next(P);
        t.layout = parse_layout(P, t.space == TILE_REGISTER ? LAYOUT_VALUE_DIST : LAYOUT_VALUE_DATA,
                                t.space == TILE_REGISTER ? "a distributed layout (local/spatial ...)"
                                                         : "a data layout");
    } else if (t.space == TILE_REGISTER) {
        fail(P, P->tok.pos, "a register tensor needs 'layout' and a distributed layout, found %s",
             tok_text(P));
    }
    return t;
}

/* ---- operands ---------------------------------------------------------------------- */

/* operand := NAME { '[' exprs ']' | '.tile' '(' '[' tiler {',' tiler} ']' ')'
 *                 | '.local' }          (NAME a tensor or thread group)
 *          | expr */
static tile_operand parse_operand(parser *P)
{
    tile_operand o;
    memset(&o, 0, sizeof o);
    o.pos = P->tok.pos;
    tile_value *v = P->tok.kind == T_IDENT ? lookup(P, P->s + P->tok.pos, P->tok.len) : NULL;
    if (!v || v->kind == TILE_V_SCALAR) {
        o.scalar = parse_expr(P);
        return o;
    }
    o.v = v;
    lex_next(P);
    for (;;) {
        tile_step st;
        memset(&st, 0, sizeof st);
        st.pos = P->tok.pos;
        if (accept(P, "[")) {
            st.kind = TILE_STEP_INDEX;
            st.idx = parse_exprs(P, "]", &st.n);
            if (st.n == 0) fail(P, st.pos, "empty index");
            expect(P, "]", "after the indices");
        } else if (is_p(P, ".")) {
            lex_next(P);
            if (is_kw(P, "local")) {
                if (!P->in_decomp) fail(P, P->tok.pos, "'.local' is only allowed inside a decomposition");
                lex_next(P);
                st.kind = TILE_STEP_LOCAL;
            } else if (is_kw(P, "tile")) {
                lex_next(P);
                st.kind = TILE_STEP_TILE;
                expect(P, "(", "after '.tile'");
                expect(P, "[", "before the tile shape");
                tile_layout **tl = NULL;
                int64_t *sz = NULL;
                int cap1 = 0, cap2 = 0, n2 = 0;
                do {
                    tile_layout *l = NULL;
                    int64_t s = parse_tiler(P, &l);
                    ARENA_PUSH(P->m->arena, tl, st.n, cap1, l);
                    ARENA_PUSH(P->m->arena, sz, n2, cap2, s);
                } while (accept(P, ","));
                st.tilers = tl;
                st.sizes = sz;
                expect(P, "]", "after the tile shape");
                expect(P, ")", "to close '.tile('");
            } else {
                fail(P, P->tok.pos, "expected 'tile' or 'local' after '.', found %s", tok_text(P));
            }
        } else {
            break;
        }
        if (o.nsteps >= 16) fail(P, st.pos, "more than 16 view steps");
        ARENA_PUSH(P->m->arena, o.steps, o.nsteps, o.capsteps, st);
    }
    return o;
}

/* ---- statements -------------------------------------------------------------------- */

static tile_block *parse_block(parser *P);
static void parse_warpgroups(parser *P, tile_stmt *s);

/* instr := [NAME '='] OPCODE [operand {',' operand}] ['->' (type | operand)]
 *          {attr} ['decomp' block]
 * attr  := ('init'|'fill') expr | 'dim' INT | 'bytes' INT | 'atom' DOTTED
 *        | 'on' NAME */
static void parse_instr(parser *P, tile_stmt *s, const char *result, size_t rpos)
{
    tile_instr *in = &s->instr;
    size_t oppos = P->tok.pos, oplen;
    const char *opname = dotted_name(P, &oplen);
    tile_op op;
    int approx = 0;
    if (tile_op_lookup(opname, oplen, &op) != 0) {
        /* `exp.approx`: the fast form of a transcendental */
        if (oplen > 7 && !strncmp(opname + oplen - 7, ".approx", 7) && tile_op_lookup(opname, oplen - 7, &op) == 0) {
            if (!tile_op_has_approx(op))
                fail(P, oppos, "'%s': only exp, sigmoid and tanh have an .approx form", opname);
            approx = 1;
        } else {
            fail(P, oppos, "unknown instruction '%s'", opname);
        }
    }
    const tile_op_info *info = tile_op_info_of(op);
    in->op = op;
    in->approx = approx;
    in->dim = -1;
    /* operands past min_args are optional (iota's offset, gather's indices) */
    for (int i = 0; i < info->max_args; i++) {
        if (i >= info->min_args && (i == 0 ? is_p(P, "->") : !is_p(P, ","))) break;
        if (i) expect(P, ",", "between operands");
        tile_operand o = parse_operand(P);
        ARENA_PUSH(P->m->arena, in->args, in->nargs, in->capargs, o);
        if (op == TILE_I_SCATTER) break; /* its indices follow the destination */
    }
    tile_type rtype;
    int have_type = 0;
    if (op == TILE_I_ALLOC) {
        /* alloc takes its type directly: x = alloc shared f16[64, 32] */
        size_t tpos = P->tok.pos;
        if (!result) fail(P, oppos, "'alloc' needs a result name");
        rtype = parse_type(P);
        if (rtype.space == TILE_GLOBAL) fail(P, tpos, "alloc creates shared or register tensors, not global");
        have_type = 1;
    } else if (accept(P, "->")) {
        size_t tpos = P->tok.pos;
        if (is_kw(P, "global") || is_kw(P, "shared") || is_kw(P, "register")) {
            if (!result || info->res != TILE_RES_TYPE)
                fail(P, tpos, "a result type is only written for a named result of %s",
                     "alloc, load_global, load_shared, cast, view, reduce, broadcast");
            rtype = parse_type(P);
            if (rtype.space == TILE_GLOBAL) fail(P, tpos, "an instruction cannot create a global tensor");
            have_type = 1;
        } else {
            if (result) fail(P, tpos, "a named result cannot also write to '-> %s'", tok_text(P));
            in->dst = parse_operand(P);
            if (!in->dst.v) fail(P, tpos, "expected a tensor after '->'");
            in->has_dst = 1;
            /* scatter x -> T, i0, ..., i{r-1} */
            while (op == TILE_I_SCATTER && accept(P, ",")) {
                if (in->nargs >= info->max_args) fail(P, P->tok.pos, "scatter takes at most %d indices", info->max_args - 1);
                tile_operand o = parse_operand(P);
                ARENA_PUSH(P->m->arena, in->args, in->nargs, in->capargs, o);
            }
        }
    }
    if (result && info->res == TILE_RES_TYPE && !have_type)
        fail(P, oppos, "'%s' needs '-> type' for its result '%s'", info->name, result);
    if (result && info->res == TILE_RES_NONE)
        fail(P, rpos, "'%s' has no result to name", info->name);
    if (!result && !in->has_dst && info->res != TILE_RES_NONE)
        fail(P, oppos, "'%s' needs a result name or '-> destination'", info->name);
    if (!in->has_dst && (op == TILE_I_STORE_GLOBAL || op == TILE_I_STORE_SHARED || op == TILE_I_COPY_ASYNC ||
                           op == TILE_I_SCATTER || op == TILE_I_TMA_LOAD || op == TILE_I_TMA_STORE))
        fail(P, P->tok.pos, "'%s' needs '-> destination'", info->name);
    /* attributes, any order, each at most once */
    for (;;) {
        size_t apos = P->tok.pos;
        if (is_kw(P, "init") || is_kw(P, "fill")) {
            if (in->init) fail(P, apos, "duplicate init/fill");
            lex_next(P);
            in->init = parse_expr(P);
        } else if (is_kw(P, "dim")) {
            if (in->dim >= 0) fail(P, apos, "duplicate 'dim'");
            lex_next(P);
            int64_t dd = expect_int(P, "a dimension");
            if (dd > 64) fail(P, apos, "dimension %lld out of range", (long long)dd);
            in->dim = (int)dd;
        } else if (is_kw(P, "bytes")) {
            if (in->bytes) fail(P, apos, "duplicate 'bytes'");
            lex_next(P);
            in->bytes = expect_int(P, "a byte count");
            if (in->bytes == 0) fail(P, apos, "'bytes' must be positive");
        } else if (is_kw(P, "atom")) {
            if (in->atom) fail(P, apos, "duplicate 'atom'");
            lex_next(P);
            size_t al;
            in->atom = dotted_name(P, &al);
        } else if (is_kw(P, "on")) {
            if (in->on) fail(P, apos, "duplicate 'on'");
            lex_next(P);
            size_t gpos = P->tok.pos;
            if (P->tok.kind != T_IDENT) fail(P, gpos, "expected a thread group after 'on', found %s", tok_text(P));
            tile_value *g = lookup(P, P->s + gpos, P->tok.len);
            if (!g) fail(P, gpos, "use of undefined value '%.*s'", (int)P->tok.len, P->s + gpos);
            if (g->kind != TILE_V_THREADS) fail(P, gpos, "'%s' is not a thread group", g->name);
            lex_next(P);
            in->on = g;
        } else if (is_kw(P, "cta")) {
            if (in->cta) fail(P, apos, "duplicate 'cta'");
            lex_next(P);
            in->cta = parse_expr(P);
        } else if (is_kw(P, "multicast")) {
            if (in->mcast) fail(P, apos, "duplicate 'multicast'");
            lex_next(P);
            in->mcast = parse_expr(P);
        } else if (is_kw(P, "mask")) {
            if (in->mask) fail(P, apos, "duplicate 'mask'");
            lex_next(P);
            size_t mpos = P->tok.pos;
            tile_value *mv = P->tok.kind == T_IDENT ? lookup(P, P->s + mpos, P->tok.len) : NULL;
            if (!mv || mv->kind != TILE_V_TENSOR)
                fail(P, mpos, "expected a bool register tensor after 'mask', found %s", tok_text(P));
            lex_next(P);
            in->mask = mv;
        } else {
            break;
        }
    }
    if (result) {
        in->result = new_value(P, TILE_V_TENSOR, TILE_O_DEF, result, rpos);
        in->result->def = s;
        if (have_type) in->result->type = rtype;
        else tile_instr_infer(s);
        if ((info->res == TILE_RES_LIKE || info->res == TILE_RES_BOOL) && !in->result->type.dims)
            fail(P, oppos, "'%s' needs a tensor operand to take its result type from", info->name);
    }
    if (is_kw(P, "decomp")) {
        lex_next(P);
        int mark = P->nnames;
        P->in_decomp++;
        in->decomp = parse_block(P);
        P->in_decomp--;
        P->nnames = mark;
    }
}

/* threads := NAME '=' 'threads' INT ['tile' tiler] ['reshape' '[' INT {',' INT} ']'] */
static void parse_threads(parser *P, tile_stmt *s, const char *name, size_t npos)
{
    lex_next(P); /* threads */
    tile_threads t;
    memset(&t, 0, sizeof t);
    size_t pos = P->tok.pos;
    int64_t total = expect_int(P, "a thread count");
    if (total < 1 || total > 1024) fail(P, pos, "thread count %lld is not in 1..1024", (long long)total);
    t.total = (int)total;
    t.inner = t.total;
    if (is_kw(P, "tile")) {
        lex_next(P);
        size_t tpos = P->tok.pos;
        int64_t inner = parse_tiler(P, &t.tiler);
        if (inner < 1 || t.total % inner != 0)
            fail(P, tpos, "a group of %lld threads does not divide %d threads", (long long)inner, t.total);
        t.inner = (int)inner;
    }
    if (is_kw(P, "reshape")) {
        lex_next(P);
        size_t rpos = P->tok.pos;
        expect(P, "[", "before the group shape");
        int64_t prod = 1;
        do {
            if (t.nouter >= 4) fail(P, P->tok.pos, "at most 4 group dimensions");
            int64_t e = expect_int(P, "a group extent");
            if (e < 1 || e > 1024) fail(P, rpos, "group extent %lld out of range", (long long)e);
            t.outer[t.nouter++] = e;
            prod *= e;
        } while (accept(P, ","));
        expect(P, "]", "after the group shape");
        if (prod != t.total / t.inner)
            fail(P, rpos, "reshape to %lld groups, but there are %d groups of %d threads", (long long)prod,
                 t.total / t.inner, t.inner);
    }
    s->kind = TILE_S_THREADS;
    s->v = new_value(P, TILE_V_THREADS, TILE_O_DEF, name, npos);
    s->v->def = s;
    s->v->threads = t;
}

/* blockspec := NAME '=' NAME '[' INT {',' INT} ']' 'at' '(' exprs ')' space ['layout' L] */
static tile_blockspec parse_blockspec(parser *P, tile_value ***views, int *nviews, int *capviews)
{
    tile_blockspec bs;
    memset(&bs, 0, sizeof bs);
    bs.pos = P->tok.pos;
    size_t vpos = P->tok.pos;
    const char *vname = expect_name(P, "the block's name");
    expect(P, "=", "after the block's name");
    size_t gpos = P->tok.pos;
    if (P->tok.kind != T_IDENT) fail(P, gpos, "expected a global tensor, found %s", tok_text(P));
    tile_value *g = lookup(P, P->s + gpos, P->tok.len);
    if (!g) fail(P, gpos, "use of undefined value '%.*s'", (int)P->tok.len, P->s + gpos);
    if (g->kind != TILE_V_TENSOR || g->type.space != TILE_GLOBAL)
        fail(P, gpos, "'%s' is not a global tensor", g->name);
    lex_next(P);
    bs.tensor = g;
    expect(P, "[", "before the block shape");
    int cap = 0;
    do {
        size_t bpos = P->tok.pos;
        int64_t e = expect_int(P, "a block extent");
        if (e < 1) fail(P, bpos, "block extent must be positive");
        ARENA_PUSH(P->m->arena, bs.block, bs.rank, cap, e);
    } while (accept(P, ","));
    expect(P, "]", "after the block shape");
    expect_kw(P, "at", "before the block index map");
    expect(P, "(", "before the block index map");
    int n;
    size_t ipos = P->tok.pos;
    bs.index = parse_exprs(P, ")", &n);
    if (n != bs.rank) fail(P, ipos, "the index map has %d entries for a rank-%d block", n, bs.rank);
    expect(P, ")", "after the block index map");
    size_t spos = P->tok.pos;
    if (!parse_space(P, &bs.space) || bs.space == TILE_GLOBAL)
        fail(P, spos, "expected 'shared' or 'register' for the block, found %s", tok_text(P));
    if (is_kw(P, "layout")) {
        lex_next(P);
        bs.layout = parse_layout(P, bs.space == TILE_REGISTER ? LAYOUT_VALUE_DIST : LAYOUT_VALUE_DATA,
                                 bs.space == TILE_REGISTER ? "a distributed layout" : "a data layout");
    } else if (bs.space == TILE_REGISTER) {
        fail(P, P->tok.pos, "a register block needs 'layout' and a distributed layout");
    }
    /* the view: the current block as the body sees it */
    tile_value *v = tile_kernel_new_value(P->m, P->k, TILE_V_TENSOR, TILE_O_BLOCK, vname);
    v->pos = vpos;
    v->type.dt = g->type.dt;
    v->type.space = bs.space;
    v->type.rank = bs.rank;
    v->type.dims = arena_alloc(P->m->arena, sizeof(tile_expr *) * (size_t)bs.rank);
    for (int i = 0; i < bs.rank; i++) v->type.dims[i] = tile_expr_int(P->m, bs.block[i]);
    v->type.layout = bs.layout;
    bs.view = v;
    ARENA_PUSH(P->m->arena, *views, *nviews, *capviews, v);
    return bs;
}

/* pipeline := 'pipeline' '(' 'grid' '=' '(' NAME ':' expr {',' NAME ':' expr} ')'
 *             ',' 'stages' '=' INT ',' 'in' '=' '[' [blockspec {',' blockspec}] ']'
 *             ',' 'out' '=' '[' [blockspec {',' blockspec}] ']' ')' block */
static void parse_pipeline(parser *P, tile_stmt *s)
{
    tile_pipeline *p = &s->pipe;
    lex_next(P);
    int mark = P->nnames;
    expect(P, "(", "after 'pipeline'");
    expect_kw(P, "grid", "in pipeline(...)");
    expect(P, "=", "after 'grid'");
    expect(P, "(", "before the pipeline grid");
    int capv = 0, capg = 0, ng = 0;
    tile_value **pending = NULL;
    int npend = 0, cappend = 0;
    do {
        size_t vpos = P->tok.pos;
        const char *vn = expect_name(P, "a grid variable");
        expect(P, ":", "after the grid variable");
        tile_expr *ext = parse_expr(P);
        tile_value *gv = new_value(P, TILE_V_SCALAR, TILE_O_GRIDVAR, vn, vpos);
        gv->def = s;
        ARENA_PUSH(P->m->arena, p->gridvars, p->ngrid, capv, gv);
        ARENA_PUSH(P->m->arena, p->grid, ng, capg, ext);
        if (p->ngrid > 3) fail(P, vpos, "a pipeline grid has at most 3 dimensions");
    } while (accept(P, ","));
    expect(P, ")", "after the pipeline grid");
    expect(P, ",", "after the pipeline grid");
    expect_kw(P, "stages", "in pipeline(...)");
    expect(P, "=", "after 'stages'");
    size_t spos = P->tok.pos;
    int64_t stages = expect_int(P, "the stage count");
    if (stages < 1 || stages > 16) fail(P, spos, "stages=%lld is not in 1..16", (long long)stages);
    p->stages = (int)stages;
    for (int io = 0; io < 2; io++) {
        expect(P, ",", io ? "before 'out='" : "before 'in='");
        expect_kw(P, io ? "out" : "in", "in pipeline(...)");
        expect(P, "=", io ? "after 'out'" : "after 'in'");
        expect(P, "[", "before the block specs");
        if (!is_p(P, "]")) {
            do {
                tile_blockspec bs = parse_blockspec(P, &pending, &npend, &cappend);
                if (io) ARENA_PUSH(P->m->arena, p->outs, p->nouts, p->capouts, bs);
                else ARENA_PUSH(P->m->arena, p->ins, p->nins, p->capins, bs);
            } while (accept(P, ","));
        }
        expect(P, "]", "after the block specs");
    }
    expect(P, ")", "to close pipeline(...)");
    for (int i = 0; i < npend; i++) {
        pending[i]->def = s;
        define(P, pending[i], pending[i]->pos);
    }
    p->body = parse_block(P);
    P->nnames = mark;
}

/* warpgroups := 'warpgroups' '{' role {role} '}'
 * role       := 'role' NAME '(' INT [',' NAME] ')' ['regs' '(' INT ')'] block */
static void parse_warpgroups(parser *P, tile_stmt *s)
{
    size_t wpos = P->tok.pos;
    lex_next(P);
    if (P->in_decomp) fail(P, wpos, "'warpgroups' is not allowed inside a decomposition");
    if (P->in_roles) fail(P, wpos, "'warpgroups' inside a role is not supported");
    expect(P, "{", "after 'warpgroups'");
    int cap = 0;
    while (!is_p(P, "}")) {
        tile_role r;
        memset(&r, 0, sizeof r);
        r.pos = P->tok.pos;
        expect_kw(P, "role", "in warpgroups { ... }");
        r.name = expect_name(P, "a role name");
        for (int i = 0; i < s->nroles; i++)
            if (!strcmp(s->roles[i].name, r.name)) fail(P, r.pos, "duplicate role '%s'", r.name);
        expect(P, "(", "after the role name");
        size_t cpos = P->tok.pos;
        int64_t count = expect_int(P, "the role's warpgroup count");
        if (count < 1 || count > 8) fail(P, cpos, "a role has 1..8 warpgroups, not %lld", (long long)count);
        r.count = (int)count;
        int mark = P->nnames;
        if (accept(P, ",")) {
            size_t ipos = P->tok.pos;
            const char *iname = expect_name(P, "the instance index's name");
            r.index = new_value(P, TILE_V_SCALAR, TILE_O_LET, iname, ipos);
            r.index->def = s;
        }
        expect(P, ")", "after the role's count");
        if (is_kw(P, "regs")) {
            lex_next(P);
            expect(P, "(", "after 'regs'");
            size_t rp = P->tok.pos;
            int64_t regs = expect_int(P, "a register count");
            if (regs < 24 || regs > 256 || regs % 8)
                fail(P, rp, "setmaxnreg takes a multiple of 8 in 24..256, not %lld", (long long)regs);
            r.regs = (int)regs;
            expect(P, ")", "after the register count");
        }
        P->in_roles++;
        r.body = parse_block(P);
        P->in_roles--;
        P->nnames = mark;
        if (s->nroles >= 8) fail(P, r.pos, "at most 8 roles");
        ARENA_PUSH(P->m->arena, s->roles, s->nroles, cap, r);
    }
    if (!s->nroles) fail(P, P->tok.pos, "'warpgroups' needs at least one role");
    expect(P, "}", "to close 'warpgroups'");
}

/* stmt := 'let' NAME '=' expr | 'let' NAME {',' NAME} '=' 'indices' NAME
 *       | 'var' NAME '=' expr | 'set' NAME '=' expr
 *       | 'for' NAME 'in' expr ':' expr [':' expr] block
 *       | 'if' expr block ['else' block] | 'while' expr block
 *       | pipeline | threads | instr */
static tile_stmt *parse_stmt(parser *P)
{
    tile_stmt *s = arena_alloc(P->m->arena, sizeof *s);
    s->pos = P->tok.pos;
    s->instr.dim = -1;
    if (P->tok.kind != T_IDENT) fail(P, P->tok.pos, "expected a statement, found %s", tok_text(P));
    if (is_kw(P, "let")) {
        lex_next(P);
        const char *names[8];
        size_t poss[8];
        int n = 0;
        do {
            if (n == 8) fail(P, P->tok.pos, "at most 8 names in one let");
            poss[n] = P->tok.pos;
            names[n++] = expect_name(P, "a value name");
        } while (accept(P, ","));
        expect(P, "=", "after the name in 'let'");
        if (is_kw(P, "indices")) {
            lex_next(P);
            size_t gpos = P->tok.pos;
            if (P->tok.kind != T_IDENT) fail(P, gpos, "expected a thread group, found %s", tok_text(P));
            tile_value *g = lookup(P, P->s + gpos, P->tok.len);
            if (!g) fail(P, gpos, "use of undefined value '%.*s'", (int)P->tok.len, P->s + gpos);
            if (g->kind != TILE_V_THREADS) fail(P, gpos, "'%s' is not a thread group", g->name);
            lex_next(P);
            int want = (g->threads.nouter ? g->threads.nouter : 1) + 1;
            if (n != want)
                fail(P, poss[0], "'indices %s' gives %d values (group coordinates, then the thread in its group), not %d",
                     g->name, want, n);
            s->kind = TILE_S_INDICES;
            s->group = g;
            s->nvs = n;
            s->vs = arena_alloc(P->m->arena, sizeof(tile_value *) * (size_t)n);
            for (int i = 0; i < n; i++) {
                s->vs[i] = new_value(P, TILE_V_SCALAR, TILE_O_INDEX, names[i], poss[i]);
                s->vs[i]->def = s;
            }
            return s;
        }
        if (n != 1) fail(P, poss[1], "only 'indices' defines several values");
        s->kind = TILE_S_LET;
        s->e = parse_expr(P);
        s->v = new_value(P, TILE_V_SCALAR, TILE_O_LET, names[0], poss[0]);
        s->v->def = s;
        return s;
    }
    if (is_kw(P, "var") || is_kw(P, "set")) {
        int is_set = is_kw(P, "set");
        lex_next(P);
        size_t npos = P->tok.pos;
        if (is_set) {
            if (P->tok.kind != T_IDENT) fail(P, npos, "expected a variable, found %s", tok_text(P));
            tile_value *v = lookup(P, P->s + npos, P->tok.len);
            if (!v) fail(P, npos, "use of undefined value '%.*s'", (int)P->tok.len, P->s + npos);
            if (v->origin != TILE_O_VAR) fail(P, npos, "'%s' is not a var and cannot be set", v->name);
            lex_next(P);
            expect(P, "=", "after the variable");
            s->kind = TILE_S_SET;
            s->v = v;
            s->e = parse_expr(P);
        } else {
            const char *name = expect_name(P, "a variable name");
            expect(P, "=", "after the variable");
            s->kind = TILE_S_VAR;
            s->e = parse_expr(P);
            s->v = new_value(P, TILE_V_SCALAR, TILE_O_VAR, name, npos);
            s->v->def = s;
        }
        return s;
    }
    if (is_kw(P, "for")) {
        lex_next(P);
        size_t vpos = P->tok.pos;
        const char *name = expect_name(P, "a loop variable");
        expect_kw(P, "in", "after the loop variable");
        s->kind = TILE_S_FOR;
        s->lo = parse_expr(P);
        expect(P, ":", "between the loop bounds");
        s->hi = parse_expr(P);
        if (accept(P, ":")) s->step = parse_expr(P);
        if (is_kw(P, "unroll")) {
            lex_next(P);
            s->unroll = 1;
        }
        int mark = P->nnames;
        s->v = new_value(P, TILE_V_SCALAR, TILE_O_LOOP, name, vpos);
        s->v->def = s;
        s->body = parse_block(P);
        P->nnames = mark;
        return s;
    }
    if (is_kw(P, "if") || is_kw(P, "while")) {
        s->kind = is_kw(P, "if") ? TILE_S_IF : TILE_S_WHILE;
        lex_next(P);
        s->e = parse_expr(P);
        s->body = parse_block(P);
        if (s->kind == TILE_S_IF && is_kw(P, "else")) {
            lex_next(P);
            s->els = parse_block(P);
        }
        return s;
    }
    if (is_kw(P, "pipeline")) {
        s->kind = TILE_S_PIPELINE;
        parse_pipeline(P, s);
        return s;
    }
    if (is_kw(P, "warpgroups")) {
        s->kind = TILE_S_WARPGROUPS;
        parse_warpgroups(P, s);
        return s;
    }
    /* NAME '=' ... defines a value; otherwise an instruction without result */
    size_t q = skip_space(P, P->pos);
    s->kind = TILE_S_INSTR;
    if (q < P->n && P->s[q] == '=' && !(q + 1 < P->n && P->s[q + 1] == '=')) {
        size_t npos = P->tok.pos;
        const char *name = expect_name(P, "a value name");
        expect(P, "=", "after the value name");
        if (is_kw(P, "threads")) {
            parse_threads(P, s, name, npos);
            return s;
        }
        parse_instr(P, s, name, npos);
        return s;
    }
    parse_instr(P, s, NULL, 0);
    return s;
}

/* block := '{' stmt* '}'   (a new scope) */
static tile_block *parse_block(parser *P)
{
    size_t pos = P->tok.pos;
    enter(P, pos);
    expect(P, "{", "to open a block");
    tile_block *b = tile_block_new(P->m);
    int mark = P->nnames;
    while (!is_p(P, "}")) {
        if (P->tok.kind == T_EOF) fail(P, P->tok.pos, "expected '}' to close the block opened here at byte %zu, found end of input", pos);
        tile_stmt *s = parse_stmt(P);
        ARENA_PUSH(P->m->arena, b->items, b->n, b->cap, s);
    }
    lex_next(P);
    P->nnames = mark;
    P->depth--;
    return b;
}

/* param := NAME ':' ('int' | dtype | 'global' dtype '[' dims ']' ['strides' '[' exprs ']'])
 * (`alpha: f32` is a typed scalar: an operand of elementwise instructions) */
static void parse_param(parser *P)
{
    size_t pos = P->tok.pos;
    const char *name = expect_name(P, "a parameter name");
    expect(P, ":", "after the parameter name");
    tile_value *v;
    if (is_kw(P, "int")) {
        lex_next(P);
        v = tile_kernel_param_scalar(P->m, P->k, name);
    } else if (P->tok.kind == T_IDENT && !is_kw(P, "global") && !is_kw(P, "shared") && !is_kw(P, "register")) {
        tile_dtype dt = parse_dtype(P);
        v = tile_kernel_param_typed(P->m, P->k, name, dt);
    } else {
        size_t tpos = P->tok.pos;
        P->sym_mode = 1;
        tile_type t = parse_type(P);
        P->sym_mode = 0;
        if (t.space != TILE_GLOBAL) fail(P, tpos, "kernel parameters are global tensors or int scalars");
        v = tile_kernel_param_tensor(P->m, P->k, name, t.dt, t.rank, t.dims);
        v->type.strides = t.strides;
    }
    define(P, v, pos);
}

/* kernel := 'kernel' NAME '(' [param {',' param}] ')' 'grid' '(' exprs ')'
 *           'threads' '(' INT ')' ['smem_budget' '(' INT ')'] ['min_blocks' '(' INT ')']
 *           ['cluster' '(' INT ')'] block */
static void parse_kernel(parser *P)
{
    size_t kpos = P->tok.pos;
    expect_kw(P, "kernel", "at top level");
    size_t npos = P->tok.pos;
    const char *name = expect_name(P, "a kernel name");
    if (tile_module_find(P->m, name)) fail(P, npos, "kernel '%s' is defined twice", name);
    P->k = tile_kernel_new(P->m, name, 1);
    P->k->pos = kpos;
    P->nnames = 0;
    expect(P, "(", "after the kernel name");
    if (!is_p(P, ")")) {
        do parse_param(P);
        while (accept(P, ","));
    }
    expect(P, ")", "after the parameters");
    expect_kw(P, "grid", "after the parameters");
    expect(P, "(", "after 'grid'");
    size_t gpos = P->tok.pos;
    int ng;
    tile_expr **g = parse_exprs(P, ")", &ng);
    if (ng < 1 || ng > 3) fail(P, gpos, "a grid has 1 to 3 dimensions, not %d", ng);
    P->k->ngrid = ng;
    for (int i = 0; i < ng; i++) P->k->grid[i] = g[i];
    expect(P, ")", "after the grid");
    expect_kw(P, "threads", "after the grid");
    expect(P, "(", "after 'threads'");
    size_t tpos = P->tok.pos;
    int64_t th = expect_int(P, "threads per block");
    if (th < 1 || th > 1024) fail(P, tpos, "threads(%lld) is not in 1..1024", (long long)th);
    P->k->threads = (int)th;
    expect(P, ")", "after the thread count");
    if (is_kw(P, "smem_budget")) {
        lex_next(P);
        expect(P, "(", "after 'smem_budget'");
        size_t bpos = P->tok.pos;
        P->k->smem_budget = expect_int(P, "the shared-memory budget in bytes");
        if (P->k->smem_budget < 1) fail(P, bpos, "the shared-memory budget must be positive");
        expect(P, ")", "after the budget");
    }
    if (is_kw(P, "min_blocks")) {
        lex_next(P);
        expect(P, "(", "after 'min_blocks'");
        size_t bpos = P->tok.pos;
        int64_t mb = expect_int(P, "the blocks per multiprocessor");
        if (mb < 1 || mb > 32) fail(P, bpos, "min_blocks(%lld) is not in 1..32", (long long)mb);
        P->k->min_blocks = (int)mb;
        expect(P, ")", "after the block count");
    }
    if (is_kw(P, "cluster")) {
        lex_next(P);
        expect(P, "(", "after 'cluster'");
        size_t cpos = P->tok.pos;
        int64_t cl = expect_int(P, "the blocks of a cluster");
        if (cl < 1 || cl > TILE_MAX_CLUSTER) fail(P, cpos, "cluster(%lld) is not in 1..%d", (long long)cl, TILE_MAX_CLUSTER);
        P->k->cluster = (int)cl;
        expect(P, ")", "after the cluster size");
    }
    P->k->body = parse_block(P);
}

tsl_status tile_parse(tsl_arena *arena, const tsl_source *src, tsl_diag *d, tile_module **out)
{
    *out = NULL;
    if (src->text && strnlen(src->text, TSL_MAX_SOURCE_BYTES + 1) > TSL_MAX_SOURCE_BYTES) {
        diag_error(d, TSL_ERR_SYNTAX, "%s is larger than %zu MiB: not a tile program", src->name,
                   TSL_MAX_SOURCE_BYTES >> 20);
        return TSL_ERR_SYNTAX;
    }
    parser *P = calloc(1, sizeof *P);
    if (!P) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory (%zu bytes) parsing %s", sizeof *P, src->name);
        return TSL_ERR_NOMEM;
    }
    P->m = tile_module_new(arena);
    P->src = src;
    P->d = d;
    P->s = src->text ? src->text : "";
    P->n = strlen(P->s);
    tsl_status st = TSL_OK;
    if (setjmp(P->jb) == 0) {
        lex_next(P);
        while (P->tok.kind != T_EOF) parse_kernel(P);
        *out = P->m;
    } else {
        st = d->first ? d->first : TSL_ERR_SYNTAX;
    }
    free(P);
    return st;
}
