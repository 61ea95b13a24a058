/* program.c — checking and compiling TC source into a tsl_program (one
 * def), printing it (ast, ranges, op graph), and introspection of its
 * parameters and outputs. */
#include <errno.h>
#include <string.h>

#include "api/api.h"
#include "graph/graph.h"

/* Parse and check src into arena a; diagnostics replace ctx's error. */
static const lang_module *program_parse(tsl_context *ctx, tsl_arena *a, const tsl_source *src,
                                        tsl_status *st)
{
    tsl_diag *d = api_diag(ctx);
    diag_reset(d);
    const lang_module *m = lang_parse_check(a, src, d);
    *st = TSL_OK;
    if (!m) {
        *st = d->nerr ? d->first : TSL_ERR_INTERNAL;
        if (!d->nerr) diag_error(d, *st, "internal: the front end failed silently");
    }
    return m;
}

tsl_status tsl_check(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *source,
                     TSL_KEEP const char *filename)
{
    if (!ctx) return TSL_ERR_ARG;
    if (!source) return api_error(ctx, TSL_ERR_ARG, "tsl_check: source is NULL");
    tsl_arena *a = arena_create();
    if (!a) return api_error(ctx, TSL_ERR_NOMEM, "out of memory");
    tsl_source src = {filename ? filename : "<input>", source};
    tsl_status st;
    program_parse(ctx, a, &src, &st);
    arena_free(a);
    return st;
}

/* "a, b, c": the names of the module's defs, for messages. */
static void program_def_names(strbuf *b, const lang_module *m)
{
    for (int i = 0; i < lang_module_count(m); i++)
        sb_printf(b, "%s%s", i ? ", " : "", lang_module_def(m, i)->name);
}

tsl_status tsl_program_compile(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *source,
                               TSL_KEEP const char *filename, TSL_KEEP const char *entry,
                               TSL_GIVE tsl_program **out)
{
    if (!ctx) return TSL_ERR_ARG;
    if (!out) return api_error(ctx, TSL_ERR_ARG, "tsl_program_compile: out is NULL");
    *out = NULL;
    if (!source) return api_error(ctx, TSL_ERR_ARG, "tsl_program_compile: source is NULL");
    tsl_program *p = calloc(1, sizeof *p);
    tsl_arena *a = p ? arena_create() : NULL;
    if (!a) {
        free(p);
        return api_error(ctx, TSL_ERR_NOMEM, "out of memory");
    }
    p->ctx = ctx;
    p->arena = a;
    p->opt = sched_options_defaults;
    p->opt_text = arena_strdup(a, "");
    p->src.name = arena_strdup(a, filename ? filename : "<input>");
    p->src.text = arena_strdup(a, source);
    tsl_status st;
    p->mod = program_parse(ctx, a, &p->src, &st);
    if (st) goto fail;
    int n = lang_module_count(p->mod);
    if (entry) {
        p->def = lang_module_find(p->mod, entry);
        if (!p->def) {
            strbuf names = {0};
            program_def_names(&names, p->mod);
            st = api_error(ctx, TSL_ERR_ARG, "%s: no def named '%s' (defs: %s)", p->src.name,
                           entry, n ? sb_str(&names) : "none");
            sb_free(&names);
            goto fail;
        }
    } else if (n == 1) {
        p->def = lang_module_def(p->mod, 0);
    } else {
        strbuf names = {0};
        program_def_names(&names, p->mod);
        st = n == 0 ? api_error(ctx, TSL_ERR_ARG, "%s: the source has no def", p->src.name)
                    : api_error(ctx, TSL_ERR_ARG,
                                "%s: the source has %d defs (%s); name the entry to compile",
                                p->src.name, n, sb_str(&names));
        sb_free(&names);
        goto fail;
    }
    for (int i = 0; i < p->def->ntensors; i++) {
        const lang_tensor *t = p->def->tensors[i];
        if (t->rank > TSL_MAX_RANK) {
            tsl_diag *d = api_diag(ctx);
            diag_reset(d);
            diag_error_at(d, &p->src, t->offset, TSL_ERR_SEMANTIC,
                          "'%s' has rank %d; at most %d is supported", t->name, t->rank,
                          TSL_MAX_RANK);
            st = TSL_ERR_SEMANTIC;
            goto fail;
        }
    }
    *out = p;
    return TSL_OK;
fail:
    tsl_program_free(p);
    return st;
}

tsl_status tsl_program_compile_file(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *path,
                                    TSL_KEEP const char *entry, TSL_GIVE tsl_program **out)
{
    if (!ctx) return TSL_ERR_ARG;
    if (!out) return api_error(ctx, TSL_ERR_ARG, "tsl_program_compile_file: out is NULL");
    *out = NULL;
    if (!path) return api_error(ctx, TSL_ERR_ARG, "tsl_program_compile_file: path is NULL");
    size_t len;
    char *text = file_read_max(path, TSL_MAX_SOURCE_BYTES, &len);
    if (!text && errno == EFBIG)
        return api_error(ctx, TSL_ERR_IO, "cannot read '%s': it is larger than %zu MiB, not a TC program", path,
                         TSL_MAX_SOURCE_BYTES >> 20);
    if (!text) return api_error(ctx, TSL_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    if (strlen(text) != len) {
        free(text);
        return api_error(ctx, TSL_ERR_SYNTAX, "%s: the file contains a NUL byte", path);
    }
    tsl_status st = tsl_program_compile(ctx, text, path, entry, out);
    free(text);
    return st;
}

void tsl_program_free(TSL_TAKE tsl_program *p)
{
    if (!p) return;
    api_program_forget_tuned(p);
    arena_free(p->arena);
    free(p);
}

tsl_status tsl_program_emit(TSL_KEEP tsl_program *p, TSL_KEEP const char *what,
                            TSL_GIVE char **out)
{
    if (!p) return TSL_ERR_ARG;
    if (!out) return api_error(p->ctx, TSL_ERR_ARG, "tsl_program_emit: out is NULL");
    *out = NULL;
    strbuf b = {0};
    if (what && !strcmp(what, "ast"))
        lang_print_def(&b, p->def);
    else if (what && !strcmp(what, "ranges"))
        lang_print_ranges(&b, p->def);
    else if (what && !strcmp(what, "graph")) {
        /* the op graph is rebuilt per call, in an arena of its own */
        tsl_arena *ga = arena_create();
        tsl_diag *d = api_diag(p->ctx);
        diag_reset(d);
        graph *g = ga ? graph_build(ga, p->def, d) : NULL;
        if (!g) {
            arena_free(ga);
            sb_free(&b);
            if (!d->nerr)
                diag_error(d, TSL_ERR_INTERNAL, "building the op graph of '%s' failed", p->def->name);
            return d->first;
        }
        graph_print(&b, g);
        arena_free(ga);
    } else if (what && api_compiled_emit_kind(what) >= 0) {
        tsl_status st = api_compiled_emit(p, what, &b);
        if (st) {
            sb_free(&b);
            return st;
        }
    } else
        return api_error(p->ctx, TSL_ERR_ARG,
                         "unknown emit kind '%s' (expected ast, ranges, graph, c[@KERNEL], cuda[:ARCH][@KERNEL], "
                         "ptx[:ARCH][@KERNEL], or tile, expand, select, source or plan, each maybe with :cpu or "
                         ":cuda[:ARCH])",
                         what ? what : "(null)");
    *out = sb_take(&b);
    if (!*out) return api_error(p->ctx, TSL_ERR_NOMEM, "out of memory");
    return TSL_OK;
}

/* ---- options ------------------------------------------------------------ */

tsl_status tsl_program_set_options(TSL_KEEP tsl_program *p, TSL_KEEP const char *options)
{
    if (!p) return TSL_ERR_ARG;
    sched_options o = sched_options_defaults;
    o.allow_tf32 = -1; /* not named: stays as tsl_program_set_allow_tf32 left it */
    tsl_diag *d = api_diag(p->ctx);
    diag_reset(d);
    tsl_status st = sched_options_parse(options, &o, d);
    if (st) return st;
    if (o.allow_tf32 < 0) o.allow_tf32 = p->opt.allow_tf32;
    strbuf b = {0};
    sched_options_text(&b, &o);
    p->opt = o;
    p->opt_text = arena_strdup(p->arena, sb_str(&b));
    p->opt_explicit = options != NULL;
    sb_free(&b);
    return TSL_OK;
}

const char *tsl_program_options(TSL_KEEP const tsl_program *p) { return p ? p->opt_text : NULL; }

tsl_status tsl_program_set_allow_tf32(TSL_KEEP tsl_program *p, int allow)
{
    if (!p) return TSL_ERR_ARG;
    p->opt.allow_tf32 = allow != 0;
    strbuf b = {0};
    sched_options_text(&b, &p->opt);
    p->opt_text = arena_strdup(p->arena, sb_str(&b));
    sb_free(&b);
    return TSL_OK;
}

int tsl_program_allow_tf32(TSL_KEEP const tsl_program *p) { return p && p->opt.allow_tf32 > 0; }

char *tsl_options_space(void)
{
    strbuf b = {0};
    int n = 0;
    const sched_option *t = sched_option_table(&n);
    for (int i = 0; i < n; i++) {
        sb_printf(&b, "%-22s %-4s default %-4d values", t[i].key,
                  t[i].targets == (1u << TSL_TARGET_CPU) ? "cpu" : t[i].targets == (1u << TSL_TARGET_CUDA) ? "cuda" : "all",
                  sched_option_get(&sched_options_defaults, &t[i]));
        for (int v = 0; v < t[i].nvalues; v++) sb_printf(&b, "%s%d", v ? "," : " ", t[i].values[v]);
        sb_printf(&b, "  (%s)\n", t[i].help);
    }
    return sb_take(&b);
}

/* ---- introspection ------------------------------------------------------ */

const char *tsl_program_name(TSL_KEEP const tsl_program *p) { return p ? p->def->name : NULL; }

int tsl_program_param_count(TSL_KEEP const tsl_program *p) { return p ? p->def->nparams : 0; }

tsl_status tsl_program_param(TSL_KEEP const tsl_program *p, int i, tsl_param_info *out)
{
    if (!p) return TSL_ERR_ARG;
    if (!out) return api_error(p->ctx, TSL_ERR_ARG, "tsl_program_param: out is NULL");
    if (i < 0 || i >= p->def->nparams)
        return api_error(p->ctx, TSL_ERR_ARG, "'%s' has %d parameters; index %d is out of range",
                         p->def->name, p->def->nparams, i);
    const lang_tensor *t = p->def->params[i];
    out->name = t->name;
    out->is_scalar = t->is_scalar;
    out->is_output = (t->flags & LANG_TENSOR_OUTPUT) != 0;
    out->dtype = t->dtype;
    out->rank = t->is_scalar ? 0 : t->rank;
    return TSL_OK;
}

int tsl_program_output_count(TSL_KEEP const tsl_program *p) { return p ? p->def->noutputs : 0; }

const char *tsl_program_output_name(TSL_KEEP const tsl_program *p, int i)
{
    if (!p || i < 0 || i >= p->def->noutputs) return NULL;
    return p->def->outputs[i]->name;
}

tsl_status tsl_program_param_extents(TSL_KEEP const tsl_program *p, int i, int64_t ext[TSL_MAX_RANK])
{
    if (!p) return TSL_ERR_ARG;
    if (!ext) return api_error(p->ctx, TSL_ERR_ARG, "tsl_program_param_extents: ext is NULL");
    if (i < 0 || i >= p->def->nparams)
        return api_error(p->ctx, TSL_ERR_ARG, "'%s' has %d parameters; index %d is out of range",
                         p->def->name, p->def->nparams, i);
    const lang_tensor *t = p->def->params[i];
    for (int d = 0; d < TSL_MAX_RANK; d++) ext[d] = -1;
    for (int d = 0; d < t->rank && d < TSL_MAX_RANK && t->dims; d++)
        if (t->dims[d].sym < 0) ext[d] = t->dims[d].value;
    return TSL_OK;
}

int tsl_program_size_count(TSL_KEEP const tsl_program *p) { return p ? p->def->nsizes : 0; }

const char *tsl_program_size_name(TSL_KEEP const tsl_program *p, int i)
{
    return p && i >= 0 && i < p->def->nsizes ? p->def->sizes[i] : NULL;
}

tsl_status tsl_program_param_dims(TSL_KEEP const tsl_program *p, int i,
                                  const char *names[TSL_MAX_RANK])
{
    if (!p) return TSL_ERR_ARG;
    if (!names) return api_error(p->ctx, TSL_ERR_ARG, "tsl_program_param_dims: names is NULL");
    if (i < 0 || i >= p->def->nparams)
        return api_error(p->ctx, TSL_ERR_ARG, "'%s' has %d parameters; index %d is out of range",
                         p->def->name, p->def->nparams, i);
    const lang_tensor *t = p->def->params[i];
    for (int d = 0; d < TSL_MAX_RANK; d++) names[d] = NULL;
    for (int d = 0; d < t->rank && d < TSL_MAX_RANK && t->dims; d++)
        if (t->dims[d].sym >= 0) names[d] = p->def->sizes[t->dims[d].sym];
    return TSL_OK;
}

/* The n-th (counting down *n) read `X(.., T(..) + c, ..)` in e of a tensor
 * parameter X with the access of t as an index: X's parameter slot, dim
 * and c. */
static int program_gather_in(const lang_def *def, const lang_expr *e, const lang_tensor *t, int *n, int *param,
                             int *dim, int64_t *offset)
{
    if (!e) return 0;
    if (e->kind == LANG_E_ACCESS) {
        for (int d = 0; d < e->nargs; d++) {
            const lang_expr *a = e->args[d];
            int64_t c = 0;
            if (a->kind == LANG_E_BINARY && (a->op == LANG_ADD || a->op == LANG_SUB) &&
                a->args[1]->kind == LANG_E_INT) {
                c = a->op == LANG_ADD ? a->args[1]->ival : -a->args[1]->ival;
                a = a->args[0];
            }
            if (a->kind == LANG_E_CAST) a = a->args[0];
            if (a->kind != LANG_E_ACCESS || a->tensor != t) continue;
            for (int q = 0; q < def->nparams; q++)
                if (def->params[q] == e->tensor && (*n)-- == 0) {
                    *param = q, *dim = d, *offset = c;
                    return 1;
                }
        }
    }
    for (int k = 0; k < e->nargs; k++)
        if (program_gather_in(def, e->args[k], t, n, param, dim, offset)) return 1;
    return 0;
}

int tsl_program_param_gathers(TSL_KEEP const tsl_program *p, int i, int n, int *param, int *dim, int64_t *offset)
{
    if (!p || !param || !dim || !offset || i < 0 || i >= p->def->nparams || n < 0) return 0;
    const lang_def *def = p->def;
    for (int s = 0; s < def->nstmts; s++)
        if (program_gather_in(def, def->stmts[s].rhs, def->params[i], &n, param, dim, offset)) return 1;
    return 0;
}
