/* lang.c — the front end's pipeline and lookups: lex, parse, then per def
 * sema and range inference; duplicate defs; names of operators. */
#include <string.h>

#include "lang/lang_int.h"

lang_module *lang_parse_check(tsl_arena *a, const tsl_source *src, tsl_diag *d)
{
    if (strnlen(src->text, TSL_MAX_SOURCE_BYTES + 1) > TSL_MAX_SOURCE_BYTES) {
        diag_error(d, TSL_ERR_SYNTAX, "%s is larger than %zu MiB: not a TC program", src->name,
                   TSL_MAX_SOURCE_BYTES >> 20);
        return NULL;
    }
    int ntok = 0;
    lex_token *toks = lex_tokenize(a, src, d, &ntok);
    if (!toks) return NULL;
    parse_module *pm = parse_module_tokens(a, src, toks, d);
    if (!pm) return NULL;
    lang_module *m = arena_alloc(a, sizeof *m);
    m->src = src;
    m->defs = arena_alloc(a, sizeof(lang_def *) * (size_t)pm->ndefs);
    bool ok = true;
    strmap names; /* def name -> its first parse_def */
    strmap_init(&names, a);
    for (int i = 0; i < pm->ndefs; i++) {
        const parse_def *pd = &pm->defs[i];
        const int64_t *first = strmap_find(&names, pd->name, strlen(pd->name));
        if (!first) strmap_put(&names, pd->name, strlen(pd->name), i);
        if (first) {
            int line, col;
            diag_line_col(src, pm->defs[*first].offset, &line, &col);
            diag_error_at(d, src, pd->offset, TSL_ERR_SEMANTIC,
                          "duplicate def '%s' (first defined at line %d)", pd->name, line);
            ok = false;
            continue;
        }
        /* each def is checked even after an error in another: more reports */
        lang_def *def = sema_def(a, src, pd, d);
        if (!def || ranges_infer(a, def, d) < 0) {
            ok = false;
            continue;
        }
        m->defs[m->ndefs++] = def;
    }
    return ok ? m : NULL;
}

int lang_module_count(const lang_module *m) { return m ? m->ndefs : 0; }

const lang_def *lang_module_def(const lang_module *m, int i)
{
    return m && i >= 0 && i < m->ndefs ? m->defs[i] : NULL;
}

const lang_def *lang_module_find(const lang_module *m, const char *name)
{
    for (int i = 0; m && name && i < m->ndefs; i++)
        if (!strcmp(m->defs[i]->name, name)) return m->defs[i];
    return NULL;
}

int lang_def_size_slot(const lang_def *d, const char *name)
{
    if (d->size_index.a) {
        const int64_t *slot = strmap_find(&d->size_index, name, strlen(name));
        return slot ? (int)*slot : -1;
    }
    for (int i = 0; i < d->nsizes; i++)
        if (!strcmp(d->sizes[i], name)) return i;
    return -1;
}

const lang_tensor *lang_def_tensor(const lang_def *d, const char *name)
{
    if (d->tensor_index.a) {
        const int64_t *i = strmap_find(&d->tensor_index, name, strlen(name));
        return i ? d->tensors[*i] : NULL;
    }
    for (int i = 0; i < d->ntensors; i++)
        if (!strcmp(d->tensors[i]->name, name)) return d->tensors[i];
    return NULL;
}

const char *lang_binop_name(lang_binop op)
{
    static const char *names[] = {
#define X(n, s, p) s,
        LANG_BINOPS(X)
#undef X
    };
    return (unsigned)op < TSL_COUNTOF(names) ? names[op] : "?";
}

const char *lang_builtin_name(lang_builtin b)
{
    static const char *names[] = {
#define X(n, s, ar) s,
        LANG_BUILTINS(X)
#undef X
    };
    return (unsigned)b < TSL_COUNTOF(names) ? names[b] : "?";
}

const char *lang_assign_name(lang_assign_op op)
{
    static const char *names[] = {"=", "+=", "*=", "max=", "min="};
    return (unsigned)op < TSL_COUNTOF(names) ? names[op] : "?";
}
