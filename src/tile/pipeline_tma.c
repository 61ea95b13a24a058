/* pipeline_tma.c — the TMA form of a pipeline (sm_90a; pipeline.h has the
 * contract, docs/tile-interp.md the shape of the output).
 *
 * Every shared input block gets a ring buffer buf[S, block...] laid out as
 * its spec says (swizzled or plain; pipe_stage_layout), allocated at the
 * kernel's start and loaded by tma_load. Inputs whose block index changes
 * at the same steps form a group with a full and an empty mbarrier per
 * stage (also at the kernel's start, initialised before one `sync`). Copy
 * c of a group goes to stage c % S in round c / S:
 *
 *   ISSUE(i):  if CHANGED(i) {                  (constant 1 for GEMM's k)
 *                let ps = c % S
 *                mbar_wait empty[ps], (c / S + 1) % 2     the copy S before released it
 *                mbar_arrive full[ps] bytes B             expect_tx: the group's boxes
 *                tma_load G[idx(i) * b], full[ps] -> buf[ps]   (each member)
 *              }
 *   CONSUME(j): let slot = u % S  (u: the copy step j reads)
 *              if CHANGED(j) { mbar_wait full[slot], (u / S) % 2 }
 *   BODY       every use of a view read as buf[slot, ...]
 *   RELEASE(j): [sync]  mbar_arrive empty[..] for the copy whose last reader
 *              was step j - N
 *
 * N is the body's trailing `wgmma_wait N` (its last N steps' wgmma groups
 * may still read their stages): releases lag N steps, and after the loop
 * `wgmma_wait 0` and the last N releases follow. The `sync` is there when
 * the body reads a stage other than through wgmma (the arrive of thread 0
 * then hands over every thread's reads). The counters c, u and the
 * released r are the step numbers when a group copies at every step and
 * the pipeline runs once; otherwise vars (at the context's start when the
 * pipeline is inside a loop, so the parities follow the barriers' phases
 * across runs).
 *
 * Form B (the block, or the one warpgroup of a role, is producer and
 * consumer; thread 0 issues, every thread waits):
 *   for s in 0 : L { if s < T { ISSUE(s) } }                 L = S-1-N
 *   for j in 0 : T { grid point; if j+L < T { ISSUE(j+L) }
 *                    CONSUME(j) BODY RELEASE(j) out write-backs }
 * Form P (an empty role of the warpgroups statement is the producer; the
 * role holding the pipeline, COUNT warpgroups, consumes; empty barriers
 * expect COUNT arrivals):
 *   producer: for i in 0 : T { ISSUE(i) }
 *   consumer: for j in 0 : T { grid point; CONSUME(j) BODY RELEASE(j) ... }
 *
 * TMA writes a box densely (in swizzle-wide column chunks when its rows
 * are wider than the swizzle), so a block whose layout places it otherwise
 * (padding, a permutation) keeps the cp.async form, as does one whose rows
 * are not a multiple of 16 bytes. TMA needs the global rows 16-byte
 * aligned: when that depends on the sizes, form B is put under a size
 * branch `if ALIGNED { TMA } else { cp.async }` sharing the buffers (the
 * CUDA generator compiles one arm per size class). */
#include <string.h>

#include "tile/pipeline_int.h"

typedef struct tgroup {
    int first;         /* its first input (index in p->ins) */
    const char *tag;   /* name suffix: "" when the pipeline has one group */
    int simple;        /* counters are step numbers: a copy at every step, one run */
    int64_t bytes;     /* one stage: the members' boxes */
    tile_value *full, *empty; /* u64[S] */
    tile_value *n, *u, *r;    /* vars: copies issued / consumed / released (not simple) */
    tile_value *slot;         /* the stage the current step reads */
} tgroup;

typedef struct tma {
    pexp *X;
    const tile_pipeline *p;
    size_t pos;
    int64_t S, N, L;
    pin *ins;
    int *grp;          /* per input: its group; -1 for a register block */
    tgroup *g;
    int ng;
    int sync_release;  /* the body reads a stage other than through wgmma */
} tma;

/* ---- what TMA can do ---------------------------------------------------------------- */

static int log2i(int64_t x)
{
    for (int l = 0; l < 62; l++)
        if ((int64_t)1 << l == x) return l;
    return -1;
}

/* Can TMA write block bs where its layout places it? 0 and why otherwise. */
static int tma_block_ok(const tile_blockspec *bs, char *why, size_t nwhy)
{
    int bits = bs->tensor->type.dt.bits, r = bs->rank;
    int64_t esz = bits / 8;
    if (bits % 8 || log2i(esz) < 0 || esz > 8) {
        snprintf(why, nwhy, "its elements are not 1, 2, 4 or 8 bytes");
        return 0;
    }
    if (r < 1 || r > 5) {
        snprintf(why, nwhy, "a TMA box has rank 1..5, the block %d", r);
        return 0;
    }
    int64_t numel = 1;
    for (int d = 0; d < r; d++) {
        if (bs->block[d] > 256) {
            snprintf(why, nwhy, "its extent %lld in dimension %d is over 256, a TMA box's limit",
                     (long long)bs->block[d], d);
            return 0;
        }
        numel *= bs->block[d];
    }
    int64_t row = bs->block[r - 1] * esz, chunk = bs->block[r - 1];
    if (row % 16) {
        snprintf(why, nwhy, "a row of %lld bytes is not a multiple of 16", (long long)row);
        return 0;
    }
    if (!bs->layout) return 1;
    if (bs->layout->v.kind != LAYOUT_VALUE_DATA) {
        snprintf(why, nwhy, "'%s' is not a data layout", bs->layout->text);
        return 0;
    }
    layout plain = bs->layout->v.data;
    layout_swizzle sw = plain.sw;
    plain.sw = (layout_swizzle){0, 0, 0};
    if (layout_rank(&plain) != r) {
        snprintf(why, nwhy, "the layout '%s' has %d modes for a block of rank %d", bs->layout->text,
                 layout_rank(&plain), r);
        return 0;
    }
    int64_t period = 1;
    if (sw.b) {
        int le = log2i(esz);
        if (sw.s != 3 || sw.m + le != 4 || sw.b < 1 || sw.b > 3) {
            snprintf(why, nwhy, "the swizzle of '%s' is not one TMA writes (swizzle(b,%d,3,...), b = 1..3)",
                     bs->layout->text, 4 - le);
            return 0;
        }
        int64_t swb = (int64_t)16 << sw.b;
        if (row > swb && row % swb) {
            snprintf(why, nwhy, "a row of %lld bytes is neither within nor a multiple of its %lld-byte swizzle",
                     (long long)row, (long long)swb);
            return 0;
        }
        if (row > swb) chunk = swb / esz;
        period = (int64_t)1 << (sw.b + sw.m + sw.s);
    }
    if (numel > (1 << 22)) {
        snprintf(why, nwhy, "a block of %lld elements", (long long)numel);
        return 0;
    }
    /* element (i0, ..., c * chunk + x) must be at base(c) + the row-major
     * offset of (i0, ..., x) in [b0, ..., chunk]: each chunk one dense box */
    for (int64_t e = 0; e < numel; e++) {
        int64_t co[5], rem = e, rm = 0, zero[5] = {0};
        for (int d = r - 1; d >= 0; d--) {
            co[d] = rem % bs->block[d];
            rem /= bs->block[d];
        }
        int64_t c = co[r - 1] / chunk;
        for (int d = 0; d < r; d++) rm = rm * (d == r - 1 ? chunk : bs->block[d]) + (d == r - 1 ? co[d] % chunk : co[d]);
        zero[r - 1] = c * chunk;
        int64_t base = layout_eval_coord(&plain, zero, r), at = layout_eval_coord(&plain, co, r);
        if (base % period) {
            snprintf(why, nwhy, "'%s' puts column %lld's swizzle-wide box at offset %lld, not on the swizzle's repeat",
                     bs->layout->text, (long long)(c * chunk), (long long)base);
            return 0;
        }
        if (at != base + rm) {
            char cs[96];
            int n = 0;
            for (int d = 0; d < r; d++) n += snprintf(cs + n, sizeof cs - (size_t)n, "%s%lld", d ? "," : "", (long long)co[d]);
            snprintf(why, nwhy,
                     "'%s' does not place it as TMA writes a box (dense rows%s): element [%s] is at offset %lld, "
                     "not %lld",
                     bs->layout->text, chunk < bs->block[r - 1] ? " in swizzle-wide chunks" : "", cs, (long long)at,
                     (long long)(base + rm));
            return 0;
        }
    }
    return 1;
}

/* The sizes for which TMA can describe global tensor g (the last dimension
 * contiguous, every other stride a multiple of 16 bytes): an int
 * expression, a constant when the sizes are. */
static tile_expr *aligned_rows(pexp *X, const tile_value *g)
{
    const tile_type *t = &g->type;
    int r = t->rank;
    tile_expr *q = pipe_int(X, 16 / (t->dt.bits / 8)), *zero = pipe_int(X, 0), *c = pipe_int(X, 1);
    if (t->strides) {
        c = pipe_bin(X, TILE_OP_EQ, t->strides[r - 1], pipe_int(X, 1));
        for (int d = 0; d < r - 1; d++)
            c = pipe_bin(X, TILE_OP_AND, c, pipe_bin(X, TILE_OP_EQ, pipe_bin(X, TILE_OP_MOD, t->strides[d], q), zero));
    } else if (r >= 2) {
        c = pipe_bin(X, TILE_OP_EQ, pipe_bin(X, TILE_OP_MOD, t->dims[r - 1], q), zero);
    }
    return c;
}

/* ---- statements ---------------------------------------------------------------------- */

static tile_operand bar_at(pexp *X, tile_value *bar, tile_expr *i, size_t pos)
{
    tile_operand o = tile_operand_tensor(bar);
    o.pos = pos;
    if (i) tile_operand_index(X->m, &o, 1, &i);
    return o;
}

static void mbar(pexp *X, tile_block *b, tile_op op, tile_value *bar, tile_expr *i, tile_expr *arg, int64_t bytes,
                 size_t pos)
{
    tile_stmt *s = pipe_instr(X, b, op, pos);
    tile_instr_arg(X->m, &s->instr, bar_at(X, bar, i, pos));
    if (arg) tile_instr_arg(X->m, &s->instr, tile_operand_scalar(arg));
    s->instr.bytes = bytes;
}

static tile_expr *bin(pexp *X, tile_binop op, tile_expr *a, int64_t b) { return pipe_bin(X, op, a, pipe_int(X, b)); }

/* (c / S + k) % 2 */
static tile_expr *parity(tma *t, tile_expr *c, int64_t k)
{
    return bin(t->X, TILE_OP_MOD, bin(t->X, TILE_OP_ADD, bin(t->X, TILE_OP_DIV, c, t->S), k), 2);
}

static const tile_blockspec *first_of(tma *t, const tgroup *g) { return &t->p->ins[g->first]; }

static void issue(tma *t, tile_block *b, tile_expr *it)
{
    pexp *X = t->X;
    for (int gi = 0; gi < t->ng; gi++) {
        tgroup *g = &t->g[gi];
        const tile_blockspec *f = first_of(t, g);
        tile_block *then = pipe_if(X, b, pipe_changed(X, f, it), f->pos);
        tile_expr *c = g->simple ? it : pipe_val(X, g->n);
        tile_expr *ps = pipe_val(X, pipe_let(X, then, TILE_S_LET, pipe_name(X, "ps", g->tag), bin(X, TILE_OP_MOD, c, t->S), t->pos));
        mbar(X, then, TILE_I_MBAR_WAIT, g->empty, ps, parity(t, c, 1), 0, t->pos);
        mbar(X, then, TILE_I_MBAR_ARRIVE, g->full, ps, NULL, g->bytes, t->pos);
        for (int i = 0; i < t->p->nins; i++) {
            if (t->grp[i] != gi) continue;
            const tile_blockspec *bs = &t->p->ins[i];
            tile_stmt *l = pipe_instr(X, then, TILE_I_TMA_LOAD, bs->pos);
            tile_instr_arg(X->m, &l->instr, pipe_block_operand(X, bs, it));
            tile_instr_arg(X->m, &l->instr, bar_at(X, g->full, ps, bs->pos));
            tile_operand dst = tile_operand_tensor(t->ins[i].buf);
            dst.pos = bs->pos;
            pipe_add_slot(X, &dst, ps);
            tile_instr_dst(&l->instr, dst);
        }
        if (!g->simple) pipe_set(X, then, g->n, bin(X, TILE_OP_ADD, pipe_val(X, g->n), 1), t->pos);
    }
}

static void consume(tma *t, tile_block *b, tile_expr *j)
{
    pexp *X = t->X;
    for (int gi = 0; gi < t->ng; gi++) {
        tgroup *g = &t->g[gi];
        const tile_blockspec *f = first_of(t, g);
        tile_expr *c = j;
        if (!g->simple) {
            tile_block *then = pipe_if(X, b, pipe_changed(X, f, j), f->pos);
            pipe_set(X, then, g->u, bin(X, TILE_OP_ADD, pipe_val(X, g->u), 1), t->pos);
            c = bin(X, TILE_OP_SUB, pipe_val(X, g->u), 1);
        }
        g->slot = pipe_let(X, b, TILE_S_LET, pipe_name(X, "slot", g->tag), bin(X, TILE_OP_MOD, c, t->S), t->pos);
        tile_block *then = pipe_if(X, b, pipe_changed(X, f, j), f->pos);
        mbar(X, then, TILE_I_MBAR_WAIT, g->full, pipe_val(X, g->slot), parity(t, c, 0), 0, t->pos);
    }
    for (int i = 0; i < t->p->nins; i++)
        if (t->grp[i] >= 0) t->ins[i].slot = t->g[t->grp[i]].slot;
}

/* The release of the copy last read at step q (an expression), given
 * `lastq`: q is that copy's last reader. */
static void release_at(tma *t, tgroup *g, tile_block *b, tile_expr *cond, tile_expr *stage)
{
    pexp *X = t->X;
    tile_block *then = pipe_if(X, b, cond, t->pos);
    if (!stage) stage = bin(X, TILE_OP_MOD, pipe_val(X, g->r), t->S);
    mbar(X, then, TILE_I_MBAR_ARRIVE, g->empty, stage, NULL, 0, t->pos);
    if (!g->simple && t->N) pipe_set(X, then, g->r, bin(X, TILE_OP_ADD, pipe_val(X, g->r), 1), t->pos);
}

/* q + 1 == T || CHANGED(q + 1): no later step reads step q's copy */
static tile_expr *last_reader(tma *t, tgroup *g, tile_expr *q)
{
    tile_expr *next = bin(t->X, TILE_OP_ADD, q, 1);
    return pipe_bin(t->X, TILE_OP_OR, pipe_bin(t->X, TILE_OP_EQ, next, t->X->total), pipe_changed(t->X, first_of(t, g), next));
}

/* After the body of step j: the copies whose last reader was step j - N. */
static void release(tma *t, tile_block *b, tile_expr *j)
{
    pexp *X = t->X;
    if (t->sync_release) pipe_instr(X, b, TILE_I_SYNC, t->pos);
    for (int gi = 0; gi < t->ng; gi++) {
        tgroup *g = &t->g[gi];
        if (!t->N) {
            release_at(t, g, b, last_reader(t, g, j), pipe_val(X, g->slot));
            continue;
        }
        tile_expr *q = bin(X, TILE_OP_SUB, j, t->N), *started = bin(X, TILE_OP_GE, j, t->N);
        if (g->simple) release_at(t, g, b, started, bin(X, TILE_OP_MOD, q, t->S));
        else release_at(t, g, b, pipe_bin(X, TILE_OP_AND, started, last_reader(t, g, q)), NULL);
    }
}

/* After the loop: the body's wgmma groups complete, the last N steps'
 * copies are released. */
static void tail(tma *t, tile_block *out)
{
    pexp *X = t->X;
    if (!t->N) return;
    tile_stmt *w = pipe_instr(X, out, TILE_I_WGMMA_WAIT, t->pos);
    tile_instr_arg(X->m, &w->instr, tile_operand_scalar(pipe_int(X, 0)));
    tile_stmt *f = pipe_for(X, out, "t", pipe_bin(X, TILE_OP_MAX, bin(X, TILE_OP_SUB, X->total, t->N), pipe_int(X, 0)),
                            X->total, t->pos);
    tile_expr *q = pipe_val(X, f->v);
    for (int gi = 0; gi < t->ng; gi++) {
        tgroup *g = &t->g[gi];
        if (g->simple) release_at(t, g, f->body, pipe_int(X, 1), bin(X, TILE_OP_MOD, q, t->S));
        else release_at(t, g, f->body, last_reader(t, g, q), NULL);
    }
}

/* The steady state's loop: grid point, [issue], consume, body, release. */
static tsl_status steady(tma *t, tile_block *out, int issues)
{
    pexp *X = t->X;
    tile_stmt *f = pipe_for(X, out, "j", pipe_int(X, 0), X->total, t->pos);
    tile_block *b = f->body;
    tile_expr *j = pipe_val(X, f->v);
    pipe_grid_lets(X, b, j, t->pos);
    if (issues && t->L > 0) {
        tile_expr *ahead = bin(X, TILE_OP_ADD, j, t->L);
        issue(t, pipe_if(X, b, pipe_bin(X, TILE_OP_LT, ahead, X->total), t->pos), ahead);
    } else if (issues) {
        issue(t, b, j);
    }
    pipe_load_registers(X, b, j);
    consume(t, b, j);
    tsl_status st = pipe_rewrite(X, t->ins, t->p->nins, t->p->body);
    if (st) return st;
    for (int i = 0; i < t->p->body->n; i++) ARENA_PUSH(X->m->arena, b->items, b->n, b->cap, t->p->body->items[i]);
    release(t, b, j);
    if ((st = pipe_write_backs(X, b, j))) return st;
    tail(t, out);
    return TSL_OK;
}

static void counters(tma *t, tile_block *b, int issued, int consumed)
{
    for (int gi = 0; gi < t->ng; gi++) {
        tgroup *g = &t->g[gi];
        if (g->simple) continue;
        if (issued) g->n = pipe_let(t->X, b, TILE_S_VAR, pipe_name(t->X, "n", g->tag), pipe_int(t->X, 0), t->pos);
        if (consumed) g->u = pipe_let(t->X, b, TILE_S_VAR, pipe_name(t->X, "u", g->tag), pipe_int(t->X, 0), t->pos);
        if (consumed && t->N)
            g->r = pipe_let(t->X, b, TILE_S_VAR, pipe_name(t->X, "r", g->tag), pipe_int(t->X, 0), t->pos);
    }
}

/* Form B: the block issues L steps ahead and consumes. */
static tsl_status form_block(tma *t, tile_block *out)
{
    pexp *X = t->X;
    counters(t, X->loops ? X->ctx_top : out, 1, 1);
    pipe_alloc_views(X, out);
    if (t->L > 0) {
        tile_stmt *f = pipe_for(X, out, "s", pipe_int(X, 0), pipe_int(X, t->L), t->pos);
        tile_expr *s = pipe_val(X, f->v);
        issue(t, pipe_if(X, f->body, pipe_bin(X, TILE_OP_LT, s, X->total), t->pos), s);
    }
    return steady(t, out, 1);
}

/* Form P: the producer role's loop, then the consumers' in place. */
static tsl_status form_producer(tma *t, tile_block *out)
{
    pexp *X = t->X;
    tile_block *pb = X->prod;
    tile_expr *T = pipe_val(X, pipe_let(X, pb, TILE_S_LET, pipe_name(X, "T", NULL), X->texpr, t->pos));
    counters(t, pb, 1, 0);
    tile_stmt *f = pipe_for(X, pb, "i", pipe_int(X, 0), T, t->pos);
    issue(t, f->body, pipe_val(X, f->v));
    counters(t, out, 0, 1);
    pipe_alloc_views(X, out);
    return steady(t, out, 0);
}

/* ---- checks ------------------------------------------------------------------------------ */

/* Mark the values block b defines (at any depth). */
static void mark_defs(const tile_block *b, uint8_t *def, int n)
{
#define MARK(v) \
    if ((v) && (v)->id >= 0 && (v)->id < n) def[(v)->id] = 1
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        MARK(s->v);
        MARK(s->instr.result);
        for (int k = 0; k < s->nvs; k++) MARK(s->vs[k]);
        mark_defs(s->body, def, n);
        mark_defs(s->els, def, n);
        mark_defs(s->instr.decomp, def, n);
    }
#undef MARK
}

static const tile_value *hidden(const tile_expr *e, const uint8_t *def, int n)
{
    if (!e) return NULL;
    if (e->kind == TILE_E_VALUE && e->v && e->v->id >= 0 && e->v->id < n && def[e->v->id]) return e->v;
    const tile_value *v = hidden(e->a, def, n);
    return v ? v : hidden(e->b, def, n);
}

/* Form P: the producer evaluates the grid and the index maps, so they may
 * read only what the warpgroups statement sees. */
static tsl_status producer_sees(pexp *X, const tile_pipeline *p)
{
    int n = X->k->nvalues;
    uint8_t *def = arena_alloc(X->m->arena, (size_t)n + 1);
    memset(def, 0, (size_t)n + 1);
    mark_defs(X->role->body, def, n);
    if (X->role->index && X->role->index->id < n) def[X->role->index->id] = 1;
    for (int g = 0; g < p->ngrid; g++) {
        const tile_value *v = hidden(p->grid[g], def, n);
        if (v)
            return pipe_err(X, p->grid[g]->pos,
                            "pipeline (TMA): the producer role '%s' issues the copies but cannot see '%s', which role "
                            "'%s' defines",
                            X->producer->name, v->name, X->role->name);
    }
    for (int i = 0; i < p->nins; i++)
        for (int d = 0; d < p->ins[i].rank; d++) {
            const tile_value *v = hidden(p->ins[i].index[d], def, n);
            if (v)
                return pipe_err(X, p->ins[i].pos,
                                "pipeline (TMA): the producer role '%s' issues the copies of block '%s' but cannot see "
                                "'%s', which role '%s' defines",
                                X->producer->name, p->ins[i].view->name, v->name, X->role->name);
        }
    return TSL_OK;
}

/* Does b read a shared input's view other than as a wgmma operand? */
static int reads_generic(const tile_block *b, const tile_pipeline *p)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR) {
            for (int a = 0; a <= s->instr.nargs; a++) {
                const tile_operand *o = a < s->instr.nargs ? &s->instr.args[a] : s->instr.has_dst ? &s->instr.dst : NULL;
                if (!o || !o->v || (s->instr.op == TILE_I_WGMMA && a < 2)) continue;
                for (int k = 0; k < p->nins; k++)
                    if (p->ins[k].space == TILE_SHARED && o->v == p->ins[k].view) return 1;
            }
            if (reads_generic(s->instr.decomp, p)) return 1;
        }
        if (reads_generic(s->body, p) || reads_generic(s->els, p)) return 1;
    }
    return 0;
}

/* ---- the expansion ------------------------------------------------------------------------ */

/* Buffers, barriers and their initialisation at the kernel's start. */
static tsl_status allocate(tma *t, int consumers)
{
    pexp *X = t->X;
    const tile_pipeline *p = t->p;
    for (int i = 0; i < p->nins; i++) {
        const tile_blockspec *bs = &p->ins[i];
        if (t->grp[i] < 0) continue;
        char why[256] = "";
        tile_layout *lay = pipe_stage_layout(X, bs, t->S, why, sizeof why);
        if (!lay && why[0])
            return pipe_err(X, bs->pos, "pipeline expansion: the layout of block '%s' cannot be staged: %s",
                            bs->view->name, why);
        int64_t dims[17];
        dims[0] = t->S;
        for (int d = 0; d < bs->rank && d < 16; d++) dims[d + 1] = bs->block[d];
        tile_stmt *a = pipe_instr(X, X->top, TILE_I_ALLOC, bs->pos);
        tile_value *v = tile_kernel_new_value(X->m, X->k, TILE_V_TENSOR, TILE_O_DEF, pipe_name(X, bs->view->name, "_buf"));
        v->def = a;
        v->pos = bs->pos;
        v->type = tile_type_make(X->m, TILE_SHARED, bs->tensor->type.dt, bs->rank + 1, dims, lay);
        a->instr.result = v;
        t->ins[i].bs = bs;
        t->ins[i].buf = v;
    }
    tile_dtype u64 = tile_dtype_from_tsl(TSL_DTYPE_U64);
    for (int gi = 0; gi < t->ng; gi++) {
        tgroup *g = &t->g[gi];
        tile_value **bar[2] = {&g->full, &g->empty};
        for (int k = 0; k < 2; k++) {
            tile_stmt *a = pipe_instr(X, X->top, TILE_I_ALLOC, t->pos);
            tile_value *v = tile_kernel_new_value(X->m, X->k, TILE_V_TENSOR, TILE_O_DEF,
                                                  pipe_name(X, k ? "empty" : "full", g->tag));
            v->def = a;
            v->pos = t->pos;
            v->type = tile_type_make(X->m, TILE_SHARED, u64, 1, &t->S, NULL);
            a->instr.result = v;
            *bar[k] = v;
        }
        mbar(X, X->top, TILE_I_MBAR_INIT, g->full, NULL, pipe_int(X, 1), 0, t->pos);
        mbar(X, X->top, TILE_I_MBAR_INIT, g->empty, NULL, pipe_int(X, consumers), 0, t->pos);
    }
    return TSL_OK;
}

/* Inputs changing at the same steps share a group (same CHANGED text). */
static tsl_status group(tma *t)
{
    pexp *X = t->X;
    const tile_pipeline *p = t->p;
    const char **key = arena_alloc(X->m->arena, sizeof(char *) * (size_t)(p->nins + 1));
    t->grp = arena_alloc(X->m->arena, sizeof(int) * (size_t)(p->nins + 1));
    t->g = arena_alloc(X->m->arena, sizeof(tgroup) * (size_t)(p->nins + 1));
    memset(t->g, 0, sizeof(tgroup) * (size_t)(p->nins + 1));
    for (int i = 0; i < p->nins; i++) {
        const tile_blockspec *bs = &p->ins[i];
        t->grp[i] = -1;
        if (bs->space != TILE_SHARED) continue;
        strbuf sb = {0};
        tile_print_expr(&sb, pipe_changed(X, bs, X->total));
        key[i] = arena_strdup(X->m->arena, sb_str(&sb));
        sb_free(&sb);
        int64_t bytes = bs->tensor->type.dt.bits / 8;
        for (int d = 0; d < bs->rank; d++) bytes *= bs->block[d];
        for (int k = 0; k < i && t->grp[i] < 0; k++)
            if (t->grp[k] >= 0 && !strcmp(key[k], key[i])) t->grp[i] = t->grp[k];
        if (t->grp[i] < 0) {
            t->grp[i] = t->ng++;
            t->g[t->grp[i]].first = i;
            t->g[t->grp[i]].simple = !strcmp(key[i], "1") && !X->loops;
        }
        tgroup *g = &t->g[t->grp[i]];
        g->bytes += bytes;
        if (g->bytes >= (1 << 20))
            return pipe_err(X, bs->pos, "pipeline (TMA): a stage of %lld bytes is over an mbarrier's transaction count "
                            "(2^20 - 1)", (long long)g->bytes);
    }
    for (int gi = 0; gi < t->ng; gi++)
        t->g[gi].tag = t->ng == 1 ? "" : arena_printf(X->m->arena, "_%s", p->ins[t->g[gi].first].view->name);
    return TSL_OK;
}

tsl_status pipe_expand_tma(pexp *X, tile_stmt *ps, tile_block *out, int *fallback)
{
    const tile_pipeline *p = &ps->pipe;
    size_t pos = ps->pos;
    int producer = X->producer && X->role;
    *fallback = 0;
    int nshared = 0;
    for (int i = 0; i < p->nins; i++) nshared += p->ins[i].space == TILE_SHARED;
    if (!nshared) { /* nothing to copy asynchronously: the cp.async form has no copies either */
        *fallback = 1;
        return TSL_OK;
    }
    /* where it is */
    if (X->role && X->in_loop_wg)
        return pipe_err(X, pos, "pipeline (TMA): the warpgroups statement around it is inside a loop; its barriers are "
                                "set up once, so write the loop inside the roles");
    if (producer && X->nest)
        return pipe_err(X, pos, "pipeline (TMA): with the producer role '%s', write the pipeline directly in the body "
                                "of role '%s', not inside a for, while or if (the producer issues the same copies)",
                        X->producer->name, X->role->name);
    if (producer && X->producer->count != 1)
        return pipe_err(X, X->producer->pos, "pipeline (TMA): the producer role '%s' must have 1 warpgroup, not %d",
                        X->producer->name, X->producer->count);
    if (!producer && X->role && X->role->count > 1)
        return pipe_err(X, pos, "pipeline (TMA) in role '%s' of %d warpgroups: each would need its own buffers; add "
                                "an empty role (`role producer(1) {}`) to issue the copies for all of them",
                        X->role->name, X->role->count);
    for (int i = 0; i < p->nouts; i++)
        if (p->outs[i].space == TILE_SHARED && X->role && X->role->count > 1)
            return pipe_err(X, p->outs[i].pos, "pipeline (TMA): the shared out block '%s' would be one for the %d "
                                               "warpgroups of role '%s'; use a register block",
                            p->outs[i].view->name, X->role->count, X->role->name);
    /* what TMA can take */
    char why[320];
    for (int i = 0; i < p->nins; i++) {
        const tile_blockspec *bs = &p->ins[i];
        if (bs->space != TILE_SHARED || tma_block_ok(bs, why, sizeof why)) continue;
        if (!X->o.tma_only && !producer) {
            *fallback = 1;
            return TSL_OK;
        }
        return pipe_err(X, bs->pos, "pipeline (TMA): block '%s' cannot be loaded by TMA: %s", bs->view->name, why);
    }
    tile_expr *cond = pipe_int(X, 1);
    strbuf conds = {0}; /* the conditions so far, as text: each once */
    for (int i = 0; i < p->nins; i++) {
        if (p->ins[i].space != TILE_SHARED) continue;
        tile_expr *c = aligned_rows(X, p->ins[i].tensor);
        strbuf ct = {0};
        sb_puts(&ct, ";");
        tile_print_expr(&ct, c);
        sb_puts(&ct, ";");
        int seen = strstr(sb_str(&conds), sb_str(&ct)) != NULL;
        sb_puts(&conds, sb_str(&ct) + (conds.len ? 1 : 0));
        sb_free(&ct);
        if (seen) continue;
        int64_t v;
        if (tile_expr_const(c, &v) && !v) {
            sb_free(&conds);
            if (!X->o.tma_only && !producer) {
                *fallback = 1;
                return TSL_OK;
            }
            return pipe_err(X, p->ins[i].pos, "pipeline (TMA): the rows of '%s' are never 16-byte aligned, which TMA "
                                              "needs (every stride but the last a multiple of 16 bytes, the last 1)",
                            p->ins[i].tensor->name);
        }
        cond = pipe_bin(X, TILE_OP_AND, cond, c);
    }
    sb_free(&conds);
    int64_t cv;
    int guard = !tile_expr_const(cond, &cv) && !X->o.tma_only && !producer;
    tma t;
    memset(&t, 0, sizeof t);
    t.X = X;
    t.p = p;
    t.pos = pos;
    t.S = p->stages;
    t.N = pipe_trailing_wait(p->body);
    tsl_status st = pipe_lookahead(X, p, pos, &t.L);
    if (st) return st;
    if (producer && (st = producer_sees(X, p))) return st;
    t.sync_release = reads_generic(p->body, p);
    /* the size branch: a copy of the pipeline for the cp.async arm, taken
     * before this expansion rewrites the body */
    tile_pipeline *p2 = NULL;
    tile_stmt *ifs = NULL;
    if (guard) {
        if ((st = pipe_clone(X, p, &p2))) return st;
        ifs = pipe_stmt(X, out, TILE_S_IF, pos);
        ifs->e = cond;
        ifs->body = tile_block_new(X->m);
        ifs->els = tile_block_new(X->m);
        out = ifs->body;
    }
    int serial = X->serial;
    pipe_begin(X, p, out, pos);
    t.ins = arena_alloc(X->m->arena, sizeof(pin) * (size_t)(p->nins + 1));
    memset(t.ins, 0, sizeof(pin) * (size_t)(p->nins + 1));
    if ((st = group(&t)) || (st = allocate(&t, producer ? X->role->count : 1))) return st;
    st = producer ? form_producer(&t, out) : form_block(&t, out);
    if (st || !guard) return st;
    tile_value **bufs = arena_alloc(X->m->arena, sizeof(tile_value *) * (size_t)(p->nins + 1));
    for (int i = 0; i < p->nins; i++) bufs[i] = t.ins[i].buf;
    int after = X->serial;
    X->serial = serial;
    st = pipe_expand_cp_async(X, p2, pos, bufs, ifs->els);
    X->serial = after;
    return st;
}
