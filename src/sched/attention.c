/* attention.c — the attention strategy (attention.h, docs/sched.md "The
 * attention strategy"): a merged attention group as one kernel that never
 * materialises the scores.
 *
 * sched_attn_plan_tile, for the CPU and generic CUDA targets:
 *   - grid (cdiv(Tq, BM), cdiv(E, BE), batch product), one BM x BE tile of
 *     O per block; batch coordinates from block_idx.z by div/mod;
 *   - per block of BN keys: S = Q·Kᵀ accumulated in f32 register tiles by
 *     FMA outer products over DK-deep Q and K blocks in shared memory (K's
 *     block stored transposed: a column of Kᵀ is a contiguous row), the
 *     CPU's micro-kernel atom where the operands are f32;
 *   - the score ops lowered elementwise on the S tile (index vars as iota
 *     tiles, mask tensors gathered), columns past Tk set to -inf;
 *   - the online softmax (softmax.c), P through shared memory, O += P·V the
 *     same way as S; at the end O / l, cast, one masked store.
 * The kernel is written as tile text and parsed (what --emit=tile prints);
 * a group this plan cannot take returns 0 and the generic strategy lowers
 * it. The Hopper plan (sched_attn_plan_sm90) reads the same sched_attn. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/attention.h"
#include "sched/kbuild.h"
#include "sched/softmax.h"
#include "sched/tiletext.h"

/* ---- recognising ------------------------------------------------------------------------ */

static const graph_expr *uncast(const graph_expr *e)
{
    while (e->kind == LANG_E_CAST && e->nargs == 1) e = e->args[0];
    return e;
}

static int is_score(const graph_op *op, const graph_expr *e, int s)
{
    e = uncast(e);
    return e->kind == LANG_E_ACCESS && op->operands[e->operand].tensor == s;
}

/* A constant scalar factor: literals and their products. */
static int const_value(const graph_expr *e, double *v)
{
    e = uncast(e);
    if (e->kind == LANG_E_FLOAT) return *v = e->src->fval, 1;
    if (e->kind == LANG_E_INT) return *v = (double)e->src->ival, 1;
    if (e->kind == LANG_E_UNARY && e->src->op == LANG_NEG && const_value(e->args[0], v)) return *v = -*v, 1;
    return 0;
}

/* Summarise the score ops (sched_attn.simple and what it implies). */
static void summarise(sched_attn *a)
{
    const graph *g = a->g;
    a->simple = 1;
    a->scale = 1;
    a->scale_scalar = a->scale_rsqrt_size = a->mask_tensor = -1;
    a->mask = SCHED_ATTN_MASK_NONE;
    int s = g->ops[a->at.qk].operands[0].tensor, nb = a->nb;
    for (int i = a->at.score_first; i < a->at.score_first + a->at.nscore; i++) {
        const graph_op *op = &g->ops[i];
        const graph_expr *e = uncast(op->body);
        double c;
        int ok = 0;
        if (e->kind == LANG_E_BINARY && (e->src->op == LANG_MUL || e->src->op == LANG_DIV) &&
            a->mask == SCHED_ATTN_MASK_NONE) {
            int si = is_score(op, e->args[0], s) ? 0 : e->src->op == LANG_MUL && is_score(op, e->args[1], s) ? 1 : -1;
            const graph_expr *f = si >= 0 ? uncast(e->args[1 - si]) : NULL;
            if (f && const_value(f, &c) && c != 0) {
                a->scale = e->src->op == LANG_MUL ? a->scale * c : a->scale / c;
                ok = 1;
            } else if (f && f->kind == LANG_E_SCALAR && e->src->op == LANG_MUL && a->scale_scalar < 0) {
                a->scale_scalar = f->src->tensor->index;
                ok = 1;
            } else if (f && e->src->op == LANG_DIV && f->kind == LANG_E_CALL && f->src->op == LANG_SQRT &&
                       uncast(f->args[0])->kind == LANG_E_SIZE && a->scale_rsqrt_size < 0) {
                a->scale_rsqrt_size = uncast(f->args[0])->src->slot;
                ok = 1;
            }
        } else if (e->kind == LANG_E_SELECT && a->mask == SCHED_ATTN_MASK_NONE && is_score(op, e->args[1], s) &&
                   const_value(e->args[2], &c)) {
            const graph_expr *q = uncast(e->args[0]);
            if (q->kind == LANG_E_BINARY && q->args[0]->kind == LANG_E_INDEX && q->args[1]->kind == LANG_E_INDEX) {
                int x = q->args[0]->src->slot, y = q->args[1]->src->slot;
                if ((q->src->op == LANG_LE && x == nb + 1 && y == nb) || (q->src->op == LANG_GE && x == nb && y == nb + 1)) {
                    a->mask = SCHED_ATTN_MASK_CAUSAL;
                    a->causal_off = 0;
                    a->mask_fill = c;
                    ok = 1;
                }
            }
        } else if (e->kind == LANG_E_BINARY && e->src->op == LANG_ADD && a->mask == SCHED_ATTN_MASK_NONE) {
            int si = is_score(op, e->args[0], s) ? 0 : is_score(op, e->args[1], s) ? 1 : -1;
            const graph_expr *m = si >= 0 ? uncast(e->args[1 - si]) : NULL;
            if (m && m->kind == LANG_E_ACCESS) {
                a->mask = SCHED_ATTN_MASK_TENSOR;
                a->mask_tensor = op->operands[m->operand].tensor;
                ok = 1;
            }
        }
        if (!ok) {
            a->simple = 0;
            a->mask = SCHED_ATTN_MASK_GENERAL;
        }
        s = op->operands[0].tensor;
    }
}

static int io_dtype(tsl_dtype t) { return t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16 || t == TSL_DTYPE_F32; }

int sched_attn_recognise(const graph *g, const graph_group *grp, sched_attn *a)
{
    memset(a, 0, sizeof *a);
    if (grp->strategy != GRAPH_ATTENTION || !graph_attention_match(g, grp->first, &a->at) ||
        a->at.last != grp->first + grp->nops - 1)
        return 0;
    a->g = g;
    a->grp = grp;
    a->nb = a->at.nb;
    const lang_def *def = g->def;
    const lang_tensor *Q = def->tensors[a->at.q], *K = def->tensors[a->at.k], *V = def->tensors[a->at.v],
                      *O = def->tensors[a->at.o];
    for (int z = 0; z < a->nb; z++) a->batch[z] = Q->shape[z];
    a->tq = Q->shape[a->nb];
    a->d = Q->shape[a->nb + 1];
    a->tk = K->shape[a->nb];
    a->e = V->shape[a->nb + 1];
    a->dq = Q->dtype, a->dk = K->dtype, a->dv = V->dtype, a->dout = O->dtype;
    if (!io_dtype(a->dq) || !io_dtype(a->dk) || !io_dtype(a->dv) || !io_dtype(a->dout)) return 0;
    summarise(a);
    return 1;
}

/* ---- the tile plan: text -------------------------------------------------------------------- */

/* The kernel's text (a_* names; k->b holds the body as it is written). */
static char *plan_text(tt *k, const sched_attn *a, const char *kname, int be, int dk, const char *lacc,
                       const char *lcole)
{
    const graph *g = k->g;
    int nb = a->nb;
    strbuf *b = &k->b;
    tt_use(k->ptensor, &k->npt, 32, a->at.q);
    tt_use(k->ptensor, &k->npt, 32, a->at.k);
    tt_use(k->ptensor, &k->npt, 32, a->at.v);
    tt_use(k->ptensor, &k->npt, 32, a->at.o);
    const char *tq = tt_sx(k, a->tq), *tk = tt_sx(k, a->tk), *dd = tt_sx(k, a->d), *ee = tt_sx(k, a->e);
    const char *zx[2] = {nb > 0 ? tt_sx(k, a->batch[0]) : "1", nb > 1 ? tt_sx(k, a->batch[1]) : "1"};
    if (nb == 2) {
        sb_printf(b, "  let a_z0 = block_idx.z / %s\n", zx[1]);
        sb_printf(b, "  let a_z1 = block_idx.z %% %s\n", zx[1]);
    }
    sb_printf(b, "  a_ri = iota block_idx.x * %d -> register i64[%d, %d] layout %s dim 0\n", k->bm, k->bm, k->bn, k->lay);
    sb_printf(b, "  a_rin = lt a_ri, %s\n", tq);
    sched_softmax sm = {.pre = "a_", .rows = k->bm, .cols = k->bn, .n = be, .lay = k->lay, .lay_row = k->lrow,
                        .lay_acc = lacc, .m = "a_m", .l = "a_l", .acc = "a_o"};
    sched_softmax_online_init(b, &sm, "  ");
    sb_printf(b, "  a_ps = alloc shared f32[%d, %d] layout (%d,%d):(%d,1)\n", k->bm, k->bn, k->bm, k->bn, k->bn + k->pad);
    sb_printf(b, "  for a_kb in 0 : cdiv(%s, %d) {\n", tk, k->bn);
    sb_printf(b, "    a_s = alloc register f32[%d, %d] layout %s init 0.0\n", k->bm, k->bn, k->lay);
    sb_printf(b, "    pipeline(grid=(a_d: cdiv(%s, %d)), stages=1, in=[", dd, dk);
    tt_block_spec(k, b, "a_tq", a->at.q, k->bm, dk, "block_idx.x", "a_d", 0);
    sb_puts(b, ", ");
    tt_block_spec(k, b, "a_tk", a->at.k, k->bn, dk, "a_kb", "a_d", 1);
    sb_puts(b, "], out=[]) {\n");
    char acols[64] = "a_tq[";
    for (int z = 0; z < nb; z++) strcat(acols, "0, ");
    strcat(acols, "0, ");
    tt_fma_loop(k, "a_kk", dk, acols, a->dq, "a_tk", a->dk, 1, k->bn, k->lay, k->lcol, "a_s", nb);
    sb_puts(b, "    }\n");
    sb_printf(b, "    a_ci = iota a_kb * %d -> register i64[%d, %d] layout %s dim 1\n", k->bn, k->bm, k->bn, k->lay);
    sb_printf(b, "    a_cin = lt a_ci, %s\n", tk);
    sb_puts(b, "    a_live = and a_rin, a_cin\n");
    /* the score ops */
    memset(k->gat, 0, sizeof *k->gat * (size_t)(k->def->ntensors + 1));
    k->cur[g->ops[a->at.qk].operands[0].tensor] = "a_s";
    const char *x = "a_s";
    for (int i = a->at.score_first; i < a->at.score_first + a->at.nscore && !k->fail; i++) {
        const graph_op *op = &g->ops[i];
        tt_val v = tt_as_tile(k, tt_expr(k, op, op->body), TT_F);
        x = arena_strdup(k->p->m->arena, v.t);
        k->cur[op->operands[0].tensor] = x;
    }
    sb_printf(b, "    a_x = select a_cin, %s, -inf\n", x);
    char pn[64];
    sched_softmax_online_step(b, &sm, "    ", "a_x", 0, pn, sizeof pn);
    sb_puts(b, "    sync\n");
    sb_printf(b, "    store_shared %s -> a_ps\n", pn);
    sb_puts(b, "    sync\n");
    sb_puts(b, "    pipeline(grid=(a_vd: 1), stages=1, in=[");
    tt_block_spec(k, b, "a_tv", a->at.v, k->bn, be, "a_kb", "block_idx.y", 0);
    sb_puts(b, "], out=[]) {\n");
    tt_fma_loop(k, "a_k2", k->bn, "a_ps[0, ", TSL_DTYPE_F32, "a_tv", a->dv, 0, be, lacc, lcole, "a_o", nb);
    sb_puts(b, "    }\n");
    sb_puts(b, "  }\n");
    char res[64];
    sched_softmax_online_finish(b, &sm, "  ", res, sizeof res);
    if (a->dout != TSL_DTYPE_F32) {
        sb_printf(b, "  a_out = cast %s -> register %s[%d, %d] layout %s\n", res, tt_dt(a->dout), k->bm, be, lacc);
        snprintf(res, sizeof res, "a_out");
    }
    sb_printf(b, "  store_global %s -> %s[", res, tt_tname(k, a->at.o));
    for (int z = 0; z < nb; z++) sb_printf(b, "%s, ", tt_zc(k, z));
    sb_printf(b, "block_idx.x * %d, block_idx.y * %d]\n", k->bm, be);

    strbuf grid = {0};
    sb_printf(&grid, "cdiv(%s, %d), cdiv(%s, %d), ", tq, k->bm, ee, be);
    if (!nb) sb_puts(&grid, "1");
    for (int z = 0; z < nb; z++) sb_printf(&grid, "%s%s", z ? " * " : "", zx[z]);
    /* (x 5/4: the tile interpreter counts 4.875 bytes per f32) */
    int64_t smem = ((int64_t)k->bm * (dk + k->pad) + (int64_t)dk * (k->bn + k->pad) + (int64_t)k->bn * (be + k->pad) +
                    (int64_t)k->bm * (k->bn + k->pad)) * 4 * 5 / 4;
    char *text = tt_kernel_text(k, kname, sb_str(&grid), smem);
    sb_free(&grid);
    return text;
}

int sched_attn_plan_tile(sched_plan *p, const sched_attn *a, const sched_guard *guard)
{
    /* CPU: 128 x 64 score tiles, 128 "threads" of 8 x 8 (the micro-kernel's
     * register tile), 64-deep Q/K blocks: against 64 x 64 (4 x 8 a thread)
     * 38 against 66 ms (min of runs, 1 core) at B=1 Tq=Tk=2048 D=E=64 f32,
     * K and V streamed half as often. CUDA: 64 x 32 and 32-deep, so the f32
     * blocks fit 48 KB of shared memory without opting in. */
    int cpu = p->target == TSL_TARGET_CPU;
    tt k;
    tt_init(&k, p, a->g, cpu ? 128 : 64, cpu ? 64 : 32, 16, 8, 16);
    k.nb = a->nb;
    int be = 64, dk = cpu ? 64 : 32;
    char lacc[64], lcole[96];
    snprintf(lacc, sizeof lacc, "spatial(%d,%d).local(%d,%d)", k.tr, k.tc, k.bm / k.tr, be / k.tc);
    snprintf(lcole, sizeof lcole, "replicate(%d).spatial(1,%d).local(1,%d)", k.tr, k.tc, be / k.tc);
    const char *kname = arena_printf(p->m->arena, "%s_g%d_attention", k.def->name, a->grp->index);
    char *text = plan_text(&k, a, kname, be, dk, lacc, lcole);
    sb_free(&k.b);
    if (!text) return 0;
    tile_kernel *kern = tt_parse_kernel(p, text, kname, "attention");
    if (!kern) return 0;
    tt_push_launch(&k, kern, a->grp, guard);
    return 1;
}

int sched_lower_attention(sched_plan *p, const graph *g, const graph_group *grp)
{
    sched_attn a;
    if (!p->opt->chains || !sched_attn_recognise(g, grp, &a)) return 0;
    if (p->target != TSL_TARGET_CPU && p->sm >= 90) {
        int before = p->nlaunches, kbefore = p->m->nkernels;
        sched_guard rest;
        if (sched_attn_plan_sm90(p, &a, &rest)) {
            if (!rest.n) return 1; /* every size has its kernel */
            if (grp->nparts) {
                /* other head dims: the group's parts (wgmma GEMMs, softmax
                 * rows; lower.c), which beat the generic fused plan there
                 * (D96 on an H100: 0.81 ms against 2.84) */
                p->covered = rest;
                for (int i = 0; i < rest.n; i++) p->covered.grp[i] = 0;
                p->partial = 1;
                return 1;
            }
            if (sched_attn_plan_tile(p, &a, &rest)) return 1;
            p->nlaunches = before; /* the fallback declined: neither runs */
            p->m->nkernels = kbefore;
            return 0;
        }
    }
    return sched_attn_plan_tile(p, &a, NULL);
}
