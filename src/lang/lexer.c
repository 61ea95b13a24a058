/* lexer.c — TC source text to tokens. Comments (# to end of line) and
 * whitespace are dropped; `->` and the UTF-8 arrow `→` are one token;
 * assignment operators (`=`, `+=`, `*=`, `max=`, `min=`, each with an
 * optional `!` written right after it) are one token. The text ends at its
 * first NUL byte. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "lang/lang_int.h"

typedef struct lex_state {
    tsl_arena *a;
    const tsl_source *src;
    tsl_diag *d;
    const char *s;
    size_t i;
    lex_token *toks;
    int n, cap;
} lex_state;

static bool lex_ident_start(int c) { return isalpha(c) || c == '_'; }
static bool lex_ident_char(int c) { return isalnum(c) || c == '_'; }

/* number -> digits [ '.' digits ] [ (e|E) [+-] digits ] [ f|F ]  |  '.' digits ... */
static int lex_number(lex_state *L, lex_token *t)
{
    const char *s = L->s;
    size_t i = L->i, start = i;
    bool is_float = false;
    while (isdigit((unsigned char)s[i])) i++;
    if (s[i] == '.') {
        is_float = true;
        i++;
        while (isdigit((unsigned char)s[i])) i++;
    }
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-') j++;
        if (!isdigit((unsigned char)s[j])) {
            diag_error_at(L->d, L->src, i, TSL_ERR_SYNTAX,
                          "malformed number: exponent has no digits");
            return -1;
        }
        while (isdigit((unsigned char)s[j])) j++;
        i = j;
        is_float = true;
    }
    size_t end = i;
    if (s[i] == 'f' || s[i] == 'F') {
        is_float = true;
        i++;
    }
    if (lex_ident_char((unsigned char)s[i])) {
        diag_error_at(L->d, L->src, i, TSL_ERR_SYNTAX,
                      "malformed number: unexpected '%c' after the digits", s[i]);
        return -1;
    }
    char buf[64];
    if (end - start >= sizeof buf) {
        diag_error_at(L->d, L->src, start, TSL_ERR_SYNTAX,
                      "number literal is too long (%zu characters)", end - start);
        return -1;
    }
    memcpy(buf, s + start, end - start);
    buf[end - start] = 0;
    t->offset = start;
    t->len = i - start;
    errno = 0;
    if (is_float) {
        t->kind = TK_FLOAT;
        t->fval = strtod(buf, NULL);
        if (errno == ERANGE && isinf(t->fval)) {
            diag_error_at(L->d, L->src, start, TSL_ERR_SYNTAX,
                          "floating-point literal %s is out of range", buf);
            return -1;
        }
    } else {
        t->kind = TK_INT;
        unsigned long long v = strtoull(buf, NULL, 10);
        if (errno == ERANGE || v > (unsigned long long)INT64_MAX) {
            diag_error_at(L->d, L->src, start, TSL_ERR_SYNTAX,
                          "integer literal %s does not fit in 64 bits", buf);
            return -1;
        }
        t->ival = (int64_t)v;
    }
    L->i = i;
    return 0;
}

/* After an assignment operator: a directly following '!' is its bang. */
static void lex_bang(lex_state *L, lex_token *t)
{
    if (L->s[L->i] == '!' && L->s[L->i + 1] != '=') {
        t->bang = true;
        L->i++;
    }
    t->len = L->i - t->offset;
}

static int lex_one(lex_state *L, lex_token *t)
{
    const char *s = L->s;
    size_t i = L->i;
    unsigned char c = (unsigned char)s[i];
    memset(t, 0, sizeof *t);
    t->offset = i;
    t->len = 1;
    if (isdigit(c) || (c == '.' && isdigit((unsigned char)s[i + 1]))) return lex_number(L, t);
    if (lex_ident_start(c)) {
        size_t j = i;
        while (lex_ident_char((unsigned char)s[j])) j++;
        t->kind = TK_IDENT;
        t->len = j - i;
        L->i = j;
        /* max= and min= (not max==) are assignment operators */
        if (t->len == 3 && (!memcmp(s + i, "max", 3) || !memcmp(s + i, "min", 3)) &&
            s[j] == '=' && s[j + 1] != '=') {
            t->kind = TK_ASSIGN;
            t->op = s[i + 1] == 'a' ? LANG_MAX_EQ : LANG_MIN_EQ;
            L->i = j + 1;
            lex_bang(L, t);
        }
        return 0;
    }
    /* the UTF-8 arrow U+2192 */
    if (c == 0xE2 && (unsigned char)s[i + 1] == 0x86 && (unsigned char)s[i + 2] == 0x92) {
        t->kind = TK_ARROW;
        t->len = 3;
        L->i = i + 3;
        return 0;
    }
    char c1 = s[i + 1];
    L->i = i + 1;
    switch (c) {
    case '(': t->kind = TK_LPAREN; return 0;
    case ')': t->kind = TK_RPAREN; return 0;
    case '{': t->kind = TK_LBRACE; return 0;
    case '}': t->kind = TK_RBRACE; return 0;
    case ',': t->kind = TK_COMMA; return 0;
    case ':': t->kind = TK_COLON; return 0;
    case ';': t->kind = TK_SEMI; return 0;
    case '?': t->kind = TK_QUESTION; return 0;
    case '%': t->kind = TK_PERCENT; return 0;
    case '/': t->kind = TK_SLASH; return 0;
    case '-':
        if (c1 == '>') {
            t->kind = TK_ARROW;
            t->len = 2;
            L->i = i + 2;
        } else {
            t->kind = TK_MINUS;
        }
        return 0;
    case '+':
    case '*':
        if (c1 == '=') {
            t->kind = TK_ASSIGN;
            t->op = c == '+' ? LANG_ADD_EQ : LANG_MUL_EQ;
            L->i = i + 2;
            lex_bang(L, t);
        } else {
            t->kind = c == '+' ? TK_PLUS : TK_STAR;
        }
        return 0;
    case '<':
    case '>':
        if (c1 == '=') {
            t->kind = c == '<' ? TK_LE : TK_GE;
            t->len = 2;
            L->i = i + 2;
        } else {
            t->kind = c == '<' ? TK_LT : TK_GT;
        }
        return 0;
    case '=':
        if (c1 == '=') {
            t->kind = TK_EQEQ;
            t->len = 2;
            L->i = i + 2;
        } else {
            t->kind = TK_ASSIGN;
            t->op = LANG_ASSIGN;
        }
        return 0;
    case '!':
        if (c1 == '=') {
            t->kind = TK_NE;
            t->len = 2;
            L->i = i + 2;
        } else {
            t->kind = TK_NOT;
        }
        return 0;
    case '&':
    case '|':
        if (c1 == (char)c) {
            t->kind = c == '&' ? TK_ANDAND : TK_OROR;
            t->len = 2;
            L->i = i + 2;
            return 0;
        }
        diag_error_at(L->d, L->src, i, TSL_ERR_SYNTAX, "unexpected character '%c'; did you mean '%c%c'?",
                      c, c, c);
        return -1;
    default:
        break;
    }
    if (c >= 0x21 && c < 0x7f)
        diag_error_at(L->d, L->src, i, TSL_ERR_SYNTAX, "unexpected character '%c'", c);
    else
        diag_error_at(L->d, L->src, i, TSL_ERR_SYNTAX, "unexpected byte 0x%02x", c);
    return -1;
}

lex_token *lex_tokenize(tsl_arena *a, const tsl_source *src, tsl_diag *d, int *ntok)
{
    lex_state L = {.a = a, .src = src, .d = d, .s = src->text};
    for (;;) {
        unsigned char c = (unsigned char)L.s[L.i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            L.i++;
            continue;
        }
        if (c == '#') {
            while (L.s[L.i] && L.s[L.i] != '\n') L.i++;
            continue;
        }
        lex_token t;
        if (c == 0) {
            memset(&t, 0, sizeof t);
            t.kind = TK_EOF;
            t.offset = L.i;
            ARENA_PUSH(a, L.toks, L.n, L.cap, t);
            break;
        }
        if (lex_one(&L, &t) < 0) return NULL;
        ARENA_PUSH(a, L.toks, L.n, L.cap, t);
    }
    *ntok = L.n;
    return L.toks;
}
