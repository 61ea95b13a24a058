/* key.c — the keys of what the cache keeps for a program: its canonical
 * text, alpha-renamed (so two programs that differ only in the names of
 * the def, its tensors, sizes and index variables, or in whitespace and
 * comments, share their entries), joined with what else decides the
 * result: the target and arch, the options, the toolchain, tessel's build,
 * and for tuning records the shapes.
 *
 * The canonical text is the checked program as the language's printer
 * writes it (types, inferred temporaries, one statement a line), with
 * every name the def declares replaced by `v<n>` in order of first
 * appearance. Names it does not declare (builtins such as exp) stay. */
#include <string.h>

#include "driver/driver.h"

/* tessel's build: the hash of its sources (the Makefile's build_id.c); a
 * library built without one says so. */
__attribute__((weak)) const char tsl_build_id[] = "unknown build";

static int ident_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

/* Whether the def declares `name` (len bytes). */
static int declared(const lang_def *def, const char *name, size_t len)
{
#define SAME(s) ((s) && strlen(s) == len && !strncmp((s), name, len))
    if (SAME(def->name)) return 1;
    for (int i = 0; i < def->ntensors; i++)
        if (SAME(def->tensors[i]->name)) return 1;
    for (int i = 0; i < def->nsizes; i++)
        if (SAME(def->sizes[i])) return 1;
    for (int s = 0; s < def->nstmts; s++)
        for (int v = 0; v < def->stmts[s].nvars; v++)
            if (SAME(def->stmts[s].vars[v].name)) return 1;
    return 0;
#undef SAME
}

char *drv_program_canonical(const lang_def *def)
{
    strbuf printed = {0}, out = {0};
    lang_print_def(&printed, def);
    const char *p = sb_str(&printed);
    /* names seen so far, in order: their index is the new name */
    const char *seen[512];
    size_t seen_len[512];
    int nseen = 0;
    while (*p) {
        if (!ident_start(*p) || (p > printed.buf && ident_char(p[-1]))) {
            sb_putc(&out, *p++);
            continue;
        }
        size_t n = 1;
        while (ident_char(p[n])) n++;
        if (!declared(def, p, n)) {
            sb_putn(&out, p, n);
        } else {
            int k = 0;
            while (k < nseen && !(seen_len[k] == n && !strncmp(seen[k], p, n))) k++;
            if (k == nseen && nseen < 512) {
                seen[nseen] = p;
                seen_len[nseen++] = n;
            }
            sb_printf(&out, "v%d", k);
        }
        p += n;
    }
    char *text = sb_take(&out);
    sb_free(&printed);
    return text ? text : strdup("");
}

void drv_program_key(const char *kind, const char *canonical, const drv_target *t, void *dev,
                     const char *options, const char *shapes, char out[33])
{
    const char *arch = t->rt->arch(dev), *tool = t->rt->toolchain(dev);
    rt_key_part parts[] = {
        {kind, strlen(kind)},
        {canonical, strlen(canonical)},
        {t->name, strlen(t->name)},
        {arch, strlen(arch)},
        {tool, strlen(tool)},
        {options ? options : "", options ? strlen(options) : 0},
        {shapes ? shapes : "", shapes ? strlen(shapes) : 0},
        {tsl_build_id, strlen(tsl_build_id)},
    };
    rt_cache_key(parts, (int)TSL_COUNTOF(parts), out);
}
