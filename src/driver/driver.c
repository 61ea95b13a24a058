/* driver.c — the compile pipeline as one list of passes (driver.h):
 *
 *   schedule            graph_build + sched_lower_for: the tile module and
 *                       the scheduler's launch plan           (dump: graph, tile)
 *   verify
 *   expand pipelines    every kernel with a `pipeline` replaced by its
 *                       expansion (on a parsed copy)           (dump: expand)
 *   verify
 *   select instructions [slot: target_select, src/target/]     (dump: select)
 *   verify
 *   emit                each launched kernel's source          (dump: source)
 *   launch plan         the scheduler's plan as data (plan.c)  (dump: plan)
 *   compile             every kernel's plain variant for arch
 *
 * Requires a checked def. Guarantees: the generators only ever see
 * verified, pipeline-free tile IR; a stage's failure is reported in its
 * own words; everything of the executable lives in its rt_plan's arena or
 * is malloc'd by it. */
#include <string.h>

#include "codegen/codegen.h"
#include "driver/driver_int.h"
#include "graph/graph.h"
#include "sched/sched.h"
#include "tile/pipeline.h"

static const char *const drv_stage_names[] = {
#define X(n, s, h) s,
    DRV_STAGES(X)
#undef X
};
_Static_assert(TSL_COUNTOF(drv_stage_names) == DRV_STAGE_COUNT, "one name per stage");

const char *drv_stage_name(drv_stage s)
{
    return (unsigned)s < DRV_STAGE_COUNT ? drv_stage_names[s] : "?";
}

int drv_stage_mask(const char *list, const char **bad, size_t *badlen)
{
    int mask = 0;
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ",");
        int found = n == 3 && !strncmp(p, "all", 3);
        if (found) mask |= (1 << DRV_STAGE_COUNT) - 1;
        for (int s = 0; s < DRV_STAGE_COUNT && !found; s++)
            if (strlen(drv_stage_names[s]) == n && !strncmp(p, drv_stage_names[s], n)) {
                mask |= 1 << s;
                found = 1;
            }
        if (!found && n) {
            if (bad) *bad = p;
            if (badlen) *badlen = n;
            return -1;
        }
        p += n;
        if (*p == ',') p++;
    }
    return mask;
}

/* The compilation in flight. */
typedef struct drv {
    const lang_def *def;
    const drv_target *t;
    const drv_options *o;
    tsl_arena *a; /* scratch: graph, schedule, expansion, emitted text */
    tsl_diag *d;
    const sched_plan *sp;
    const tile_kernel **kern; /* [nlaunches]: what launch i runs after expansion */
    const sched_options *opt; /* never NULL */
    drv_executable *x;
} drv;

static int drv_dumping(const drv *c, drv_stage s) { return c->o && c->o->dump_fn && (c->o->dump >> s & 1); }

/* Whether the caller asked to stop once stage s is done. */
static int stop_at(const drv *c, drv_stage s) { return c->o->stop_after && (int)s >= c->o->stop_after - 1; }

static void drv_dump(const drv *c, drv_stage s, const char *text)
{
    if (drv_dumping(c, s)) c->o->dump_fn(c->o->dump_ctx, s, text);
}

static const char *drv_name(const drv *c) { return c->def ? c->def->name : c->sp->launches[0].k->name; }

/* The scheduler's products, kept: the launch table. */
static void drv_adopt(drv *c, const sched_plan *sp);

static tsl_status drv_fail(drv *c, const char *stage)
{
    if (!c->d->nerr) diag_error(c->d, TSL_ERR_INTERNAL, "internal: %s of '%s' failed", stage, c->def ? c->def->name : "a kernel");
    return c->d->first ? c->d->first : TSL_ERR_INTERNAL;
}

/* ---- the passes ---------------------------------------------------------------------------- */

static tsl_status pass_schedule(drv *c)
{
    graph *g = graph_build(c->a, c->def, c->d);
    if (!g) return drv_fail(c, "building the op graph");
    if (drv_dumping(c, DRV_STAGE_GRAPH)) {
        strbuf b = {0};
        graph_print(&b, g);
        drv_dump(c, DRV_STAGE_GRAPH, sb_str(&b));
        sb_free(&b);
    }
    /* the plan for the arch: sm_90a gets TMA, wgmma and warp specialisation */
    sched_plan *sp = sched_lower_opt(c->a, g, c->t->id, sched_sm_of_arch(c->x->arch[0] ? c->x->arch : NULL),
                                     c->opt, c->d);
    if (!sp) return drv_fail(c, "scheduling");
    drv_adopt(c, sp);
    strbuf b = {0};
    sched_print(&b, sp);
    free(c->x->tile);
    c->x->tile = sb_take(&b);
    if (!c->x->tile) c->x->tile = strdup("");
    drv_dump(c, DRV_STAGE_SCHED, c->x->tile);
    return TSL_OK;
}

static tsl_status pass_verify(drv *c, const tile_module *m, const char *after)
{
    tsl_diag vd = {0};
    tsl_status st = tile_verify(m, NULL, &vd);
    if (st) diag_error(c->d, TSL_ERR_INTERNAL, "internal: the tile IR of '%s' does not verify after %s:\n%s",
                       drv_name(c), after, sb_str(&vd.msg));
    diag_free(&vd);
    return st ? TSL_ERR_INTERNAL : TSL_OK;
}

static int has_pipeline(const tile_block *b)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_PIPELINE || has_pipeline(s->body) || has_pipeline(s->els)) return 1;
    }
    return 0;
}

/* Kernels with pipelines are replaced by their expansion in a parsed copy
 * of the module; the others stay as scheduled (the generators' output for
 * them is unchanged). The verifier then sees the copy. */
static tsl_status pass_expand(drv *c, const tile_module **expanded)
{
    const tile_module *m = c->sp->m;
    *expanded = m;
    int any = 0;
    for (int i = 0; i < m->nkernels; i++) any |= has_pipeline(m->kernels[i]->body);
    if (!any) {
        if (drv_dumping(c, DRV_STAGE_EXPAND)) {
            char *t = tile_print(m);
            drv_dump(c, DRV_STAGE_EXPAND, t ? t : "");
            free(t);
        }
        return TSL_OK;
    }
    char *text = tile_print(m);
    if (!text) return drv_fail(c, "printing the schedule");
    tsl_source *src = arena_alloc(c->a, sizeof *src);
    src->name = "<pipeline expansion>";
    src->text = arena_strdup(c->a, text);
    free(text);
    tile_module *copy = NULL;
    tsl_status st = tile_parse(c->a, src, c->d, &copy);
    if (!st) st = tile_pipeline_expand(copy, src, 0, c->d);
    if (st) return st;
    for (int i = 0; i < c->sp->nlaunches; i++)
        if (has_pipeline(c->kern[i]->body)) c->kern[i] = tile_module_find(copy, c->kern[i]->name);
    for (int i = 0; i < c->sp->nlaunches; i++)
        if (!c->kern[i]) return drv_fail(c, "pipeline expansion");
    if (drv_dumping(c, DRV_STAGE_EXPAND)) {
        char *t = tile_print(copy);
        drv_dump(c, DRV_STAGE_EXPAND, t ? t : "");
        free(t);
    }
    *expanded = copy;
    return TSL_OK;
}

/* Instruction selection: the target's atom tables decide which hardware
 * instruction implements each spec. SLOT: src/target/'s target_select
 * (the `atoms` work) is called here once it is on main; until then the
 * generators' own choices stand and this pass only dumps. */
static tsl_status pass_select(drv *c, const tile_module *m)
{
    if (drv_dumping(c, DRV_STAGE_SELECT)) {
        char *t = tile_print(m);
        drv_dump(c, DRV_STAGE_SELECT, t ? t : "");
        free(t);
    }
    return TSL_OK;
}

static tsl_status pass_emit_and_plan(drv *c, const tile_module *m)
{
    strbuf all = {0};
    tsl_status st = drv_plan_build(c->def, c->sp, c->kern, m, c->t, c->opt, c->a, c->x->plan, &all, c->d);
    if (!st) drv_dump(c, DRV_STAGE_SOURCE, sb_str(&all));
    sb_free(&all);
    if (!st && drv_dumping(c, DRV_STAGE_PLAN)) {
        strbuf b = {0};
        rt_plan_describe(&b, c->x->plan);
        drv_dump(c, DRV_STAGE_PLAN, sb_str(&b));
        sb_free(&b);
    }
    return st;
}

/* Every kernel's plain variant (no size branches, 32-bit index), the one
 * most runs take; the executor compiles others on first need. */
static tsl_status pass_compile(drv *c, const char *arch)
{
    rt_plan *p = c->x->plan;
    for (int ki = 0; ki < p->nkernels; ki++) {
        rt_kernel *k = &p->kernels[ki];
        if (k->nbranches) continue;
        void *bin = NULL;
        size_t n = 0;
        tsl_status st = c->t->rt->compile(arch, k, 0, &bin, &n, c->d);
        if (st) return st;
        k->bins = arena_alloc(p->arena, sizeof *k->bins);
        k->bins[0].variant = 0;
        k->bins[0].data = arena_alloc(p->arena, n ? n : 1);
        memcpy(k->bins[0].data, bin, n);
        k->bins[0].size = n;
        k->nbins = 1;
        free(bin);
    }
    return TSL_OK;
}

/* The passes after `schedule`, on c->sp. */
static tsl_status drv_passes(drv *c, const char *arch)
{
    const tile_module *m = NULL;
    tsl_status st = TSL_OK;
    if (!stop_at(c, DRV_STAGE_SCHED)) st = pass_verify(c, c->sp->m, "scheduling");
    if (!st && !stop_at(c, DRV_STAGE_SCHED)) st = pass_expand(c, &m);
    if (!st && !stop_at(c, DRV_STAGE_EXPAND)) st = pass_verify(c, m, "pipeline expansion");
    if (!st && !stop_at(c, DRV_STAGE_EXPAND)) st = pass_select(c, m);
    if (!st && !stop_at(c, DRV_STAGE_SELECT)) st = pass_verify(c, m, "instruction selection");
    if (!st && !stop_at(c, DRV_STAGE_SELECT)) st = pass_emit_and_plan(c, m);
    if (!st && !stop_at(c, DRV_STAGE_PLAN) && arch && !c->o->no_compile) st = pass_compile(c, arch);
    return st;
}

/* Start a compilation: scratch arena and an empty executable. */
static tsl_status drv_begin(drv *c, const drv_target *t, const char *arch, const drv_options *o, tsl_diag *d)
{
    static const drv_options none;
    c->t = t;
    c->o = o ? o : &none;
    c->d = d;
    c->a = arena_create();
    c->x = calloc(1, sizeof *c->x);
    if (c->x) c->x->plan = rt_plan_create();
    if (c->x) c->x->options = strdup("");
    if (!c->a || !c->x || !c->x->plan || !c->x->options) {
        arena_free(c->a);
        drv_executable_free(c->x);
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    c->x->target = t->id;
    snprintf(c->x->arch, sizeof c->x->arch, "%s", arch ? arch : "");
    /* the options: checked here, so a rejected candidate says why instead
     * of quietly becoming another plan */
    c->opt = c->o->sched ? c->o->sched : &sched_options_defaults;
    char why[256];
    if (sched_options_check(c->opt, t->id, why, sizeof why)) {
        diag_error(d, TSL_ERR_ARG, "options rejected: %s", why);
        arena_free(c->a);
        drv_executable_free(c->x);
        return TSL_ERR_ARG;
    }
    strbuf ot = {0};
    sched_options_text(&ot, c->opt);
    free(c->x->options);
    c->x->options = sb_take(&ot);
    if (!c->x->options) c->x->options = strdup("");
    c->x->threads = t->id == TSL_TARGET_CPU ? c->opt->threads : 0;
    return TSL_OK;
}

static tsl_status drv_end(drv *c, tsl_status st, drv_executable **out)
{
    arena_free(c->a);
    if (st) {
        drv_executable_free(c->x);
        return st;
    }
    *out = c->x;
    return TSL_OK;
}

tsl_status drv_compile(const lang_def *def, const drv_target *t, const char *arch, const drv_options *o,
                       drv_executable **out, tsl_diag *d)
{
    *out = NULL;
    drv c = {.def = def};
    tsl_status st = drv_begin(&c, t, arch, o, d);
    if (st) return st;
    st = pass_schedule(&c);
    if (!st) st = drv_passes(&c, arch);
    return drv_end(&c, st, out);
}

static void drv_adopt(drv *c, const sched_plan *sp)
{
    c->sp = sp;
    c->kern = arena_alloc(c->a, sizeof *c->kern * (size_t)(sp->nlaunches + 1));
    for (int i = 0; i < sp->nlaunches; i++) c->kern[i] = sp->launches[i].k;
}

tsl_status drv_compile_plan(const lang_def *def, const sched_plan *sp, const drv_target *t, const char *arch,
                            const drv_options *o, drv_executable **out, tsl_diag *d)
{
    *out = NULL;
    drv c = {.def = def};
    tsl_status st = drv_begin(&c, t, arch, o, d);
    if (st) return st;
    drv_adopt(&c, sp);
    strbuf b = {0};
    sched_print(&b, sp);
    free(c.x->tile);
    c.x->tile = sb_take(&b);
    return drv_end(&c, drv_passes(&c, arch), out);
}

tsl_status drv_compile_kernel(const tile_module *m, const tile_kernel *k, const drv_target *t, const char *arch,
                              const drv_options *o, drv_executable **out, tsl_diag *d)
{
    *out = NULL;
    drv c = {.def = NULL};
    tsl_status st = drv_begin(&c, t, arch, o, d);
    if (st) return st;
    /* a plan of one launch whose tensors are the kernel's parameters */
    sched_plan *sp = arena_alloc(c.a, sizeof *sp);
    sp->m = (tile_module *)m;
    sp->target = t->id;
    sched_launch l = {.k = (tile_kernel *)k};
    for (int q = 0; q < k->nparams; q++) {
        sched_arg arg = {.name = k->params[q]->name,
                         .kind = k->params[q]->kind == TILE_V_TENSOR ? SCHED_ARG_TENSOR : SCHED_ARG_SCALAR,
                         .tensor = q};
        ARENA_PUSH(c.a, l.args, l.nargs, l.capargs, arg);
    }
    ARENA_PUSH(c.a, sp->launches, sp->nlaunches, sp->caplaunches, l);
    drv_adopt(&c, sp);
    char *text = tile_print(m);
    free(c.x->tile);
    c.x->tile = text ? text : strdup("");
    return drv_end(&c, drv_passes(&c, arch), out);
}

void drv_executable_free(drv_executable *x)
{
    if (!x) return;
    rt_plan_free(x->plan);
    free(x->options);
    free(x->tile);
    free(x);
}
