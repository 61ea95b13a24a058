/* pipeline_clone.c — a second copy of a pipeline for a second expansion
 * (the size branch between the TMA and the cp.async form, pipeline_tma.c):
 * fresh grid variables and block views, fresh values for everything the
 * body defines (same names: the two copies live in sibling scopes), and
 * every expression, operand and statement rewritten to them. Layouts,
 * types and names are shared with the original, which is not changed. */
#include <string.h>

#include "tile/pipeline_int.h"

typedef struct cl {
    pexp *X;
    tile_value **map; /* by value id: the copy's value, NULL = the same */
    int nmap;
} cl;

static tile_value *fresh(cl *C, tile_value *v)
{
    if (!v) return NULL;
    tile_value *n = tile_kernel_new_value(C->X->m, C->X->k, v->kind, v->origin, v->name);
    int id = n->id;
    *n = *v;
    n->id = id;
    if (v->id >= 0 && v->id < C->nmap) C->map[v->id] = n;
    return n;
}

static tile_value *mapped(cl *C, tile_value *v)
{
    if (v && v->id >= 0 && v->id < C->nmap && C->map[v->id]) return C->map[v->id];
    return v;
}

static tile_expr *expr(cl *C, const tile_expr *e)
{
    if (!e) return NULL;
    tile_expr *c = arena_alloc(C->X->m->arena, sizeof *c);
    *c = *e;
    if (e->kind == TILE_E_VALUE) c->v = mapped(C, e->v);
    c->a = expr(C, e->a);
    c->b = expr(C, e->b);
    return c;
}

static tile_operand operand(cl *C, const tile_operand *o)
{
    tile_operand c = *o;
    c.v = mapped(C, o->v);
    c.scalar = expr(C, o->scalar);
    c.steps = o->nsteps ? arena_alloc(C->X->m->arena, sizeof(tile_step) * (size_t)o->nsteps) : NULL;
    c.capsteps = o->nsteps;
    for (int i = 0; i < o->nsteps; i++) {
        c.steps[i] = o->steps[i];
        if (o->steps[i].kind == TILE_STEP_INDEX) {
            c.steps[i].idx = arena_alloc(C->X->m->arena, sizeof(tile_expr *) * (size_t)(o->steps[i].n + 1));
            for (int j = 0; j < o->steps[i].n; j++) c.steps[i].idx[j] = expr(C, o->steps[i].idx[j]);
        }
    }
    return c;
}

static tsl_status block(cl *C, const tile_block *b, tile_block **out);

static tsl_status stmt(cl *C, const tile_stmt *s, tile_stmt **out)
{
    tile_stmt *c = arena_alloc(C->X->m->arena, sizeof *c);
    *c = *s;
    *out = c;
    tsl_status st = TSL_OK;
    switch (s->kind) {
    case TILE_S_INSTR: {
        const tile_instr *in = &s->instr;
        /* the result first: a decomposition writes it (`-> r.local`) */
        if (in->result) {
            c->instr.result = fresh(C, in->result);
            c->instr.result->def = c;
        }
        c->instr.args = in->nargs ? arena_alloc(C->X->m->arena, sizeof(tile_operand) * (size_t)in->nargs) : NULL;
        c->instr.capargs = in->nargs;
        for (int i = 0; i < in->nargs; i++) c->instr.args[i] = operand(C, &in->args[i]);
        if (in->has_dst) c->instr.dst = operand(C, &in->dst);
        c->instr.init = expr(C, in->init);
        c->instr.cta = expr(C, in->cta);
        c->instr.mcast = expr(C, in->mcast);
        c->instr.on = mapped(C, in->on);
        c->instr.mask = mapped(C, in->mask);
        if (in->decomp && (st = block(C, in->decomp, &c->instr.decomp))) return st;
        return TSL_OK;
    }
    case TILE_S_LET:
    case TILE_S_VAR:
        c->e = expr(C, s->e);
        c->v = fresh(C, s->v);
        c->v->def = c;
        return TSL_OK;
    case TILE_S_SET:
        c->e = expr(C, s->e);
        c->v = mapped(C, s->v);
        return TSL_OK;
    case TILE_S_THREADS:
        c->v = fresh(C, s->v);
        c->v->def = c;
        return TSL_OK;
    case TILE_S_INDICES:
        c->group = mapped(C, s->group);
        c->vs = arena_alloc(C->X->m->arena, sizeof(tile_value *) * (size_t)(s->nvs + 1));
        for (int i = 0; i < s->nvs; i++) {
            c->vs[i] = fresh(C, s->vs[i]);
            c->vs[i]->def = c;
        }
        return TSL_OK;
    case TILE_S_FOR:
        c->lo = expr(C, s->lo);
        c->hi = expr(C, s->hi);
        c->step = expr(C, s->step);
        c->unroll = s->unroll;
        c->v = fresh(C, s->v);
        c->v->def = c;
        return block(C, s->body, &c->body);
    case TILE_S_IF:
    case TILE_S_WHILE:
        c->e = expr(C, s->e);
        if ((st = block(C, s->body, &c->body))) return st;
        return s->els ? block(C, s->els, &c->els) : TSL_OK;
    case TILE_S_PIPELINE:
    case TILE_S_WARPGROUPS:
        break;
    }
    return pipe_err(C->X, s->pos, "a %s inside a pipeline is not supported",
                    s->kind == TILE_S_PIPELINE ? "pipeline" : "warpgroups statement");
}

static tsl_status block(cl *C, const tile_block *b, tile_block **out)
{
    *out = NULL;
    if (!b) return TSL_OK;
    tile_block *c = tile_block_new(C->X->m);
    for (int i = 0; i < b->n; i++) {
        tile_stmt *s;
        tsl_status st = stmt(C, b->items[i], &s);
        if (st) return st;
        ARENA_PUSH(C->X->m->arena, c->items, c->n, c->cap, s);
    }
    *out = c;
    return TSL_OK;
}

static tile_blockspec *specs(cl *C, const tile_blockspec *from, int n)
{
    tile_blockspec *c = arena_alloc(C->X->m->arena, sizeof *c * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        c[i] = from[i];
        c[i].index = arena_alloc(C->X->m->arena, sizeof(tile_expr *) * (size_t)(from[i].rank + 1));
        for (int d = 0; d < from[i].rank; d++) c[i].index[d] = expr(C, from[i].index[d]);
        c[i].view = fresh(C, from[i].view);
    }
    return c;
}

tsl_status pipe_clone(pexp *X, const tile_pipeline *p, tile_pipeline **out)
{
    cl C = {X, NULL, X->k->nvalues};
    C.map = arena_alloc(X->m->arena, sizeof(tile_value *) * (size_t)(C.nmap + 1));
    memset(C.map, 0, sizeof(tile_value *) * (size_t)(C.nmap + 1));
    tile_pipeline *c = arena_alloc(X->m->arena, sizeof *c);
    *c = *p;
    c->gridvars = arena_alloc(X->m->arena, sizeof(tile_value *) * (size_t)(p->ngrid + 1));
    for (int g = 0; g < p->ngrid; g++) c->gridvars[g] = fresh(&C, p->gridvars[g]);
    /* the grid's extents are read outside the pipeline: not remapped */
    c->ins = specs(&C, p->ins, p->nins);
    c->outs = specs(&C, p->outs, p->nouts);
    c->capins = p->nins;
    c->capouts = p->nouts;
    *out = c;
    return block(&C, p->body, &c->body);
}
