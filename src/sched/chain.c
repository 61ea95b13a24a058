/* chain.c — the GEMM-chain strategy (docs/sched.md "The GEMM-chain
 * strategy"): a gemm-chain group (graph/chain.c: an MLP, layers of
 * h_k = epilogue(h_{k-1} · W_kᵀ)) as ONE kernel whose hidden activations
 * never leave the chip:
 *
 *   - grid cdiv(rows, BM); per block, layer by layer, the layer's columns
 *     in BN-wide tiles: acc = A · Wᵀ by FMA outer products over DK-deep
 *     blocks (A: the input X through a pipeline for the first layer, the
 *     previous layer's activations in shared memory after), the epilogue
 *     ops lowered on the tile (tiletext.c), then into the other of two
 *     [BM, HMAX] shared buffers (columns past the layer's width as 0), or,
 *     for the last layer, cast and stored;
 *   - it holds when every hidden width is at most HMAX: the launch is
 *     guarded by those sizes, and lower.c runs the layers' own kernels
 *     (the group's parts) under the negated guard.
 * Declined (the parts run): f64 tensors, sm_90a (whose contraction plans
 * carry guards of their own), hidden widths that are neither a size
 * symbol nor a constant, more than SCHED_MAX_GUARD distinct ones. */
#include <stdio.h>
#include <string.h>

#include "sched/strategy.h"
#include "sched/tiletext.h"

#define CH_HMAX 256 /* widest hidden layer kept on chip */

static int io_dtype(tsl_dtype t) { return t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16 || t == TSL_DTYPE_F32; }

/* The guard: every hidden width <= CH_HMAX; *hmax the widest a hidden
 * layer can be (CH_HMAX when one is a size symbol). 0 when it cannot be
 * said. */
static int hidden_guard(const graph *g, const graph_gemm_chain *ch, sched_guard *gd, int *hmax)
{
    memset(gd, 0, sizeof *gd);
    *hmax = 1;
    for (int k = 0; k + 1 < ch->nlayers; k++) {
        const lang_sexpr *w = g->def->tensors[ch->h[k]]->shape[1];
        if (w->kind == LANG_SX_CONST) {
            if (w->value > CH_HMAX) return 0;
            if (w->value > *hmax) *hmax = (int)w->value;
            continue;
        }
        *hmax = CH_HMAX;
        if (w->kind != LANG_SX_SYM) return 0;
        int seen = 0;
        for (int i = 0; i < gd->n; i++) seen |= gd->sym[i] == w->sym;
        if (seen) continue;
        if (gd->n == SCHED_MAX_GUARD) return 0;
        gd->sym[gd->n] = w->sym;
        gd->op[gd->n] = SCHED_GUARD_LE;
        gd->val[gd->n++] = CH_HMAX;
    }
    return 1;
}

static int chain_text(tt *k, const graph_gemm_chain *ch, const graph_group *grp, int dk, char **out)
{
    const graph *g = k->g;
    const lang_def *def = k->def;
    strbuf *b = &k->b;
    const lang_tensor *X = def->tensors[ch->x], *Y = def->tensors[ch->h[ch->nlayers - 1]];
    tt_use(k->ptensor, &k->npt, 32, ch->x);
    for (int l = 0; l < ch->nlayers; l++) tt_use(k->ptensor, &k->npt, 32, ch->w[l]);
    tt_use(k->ptensor, &k->npt, 32, ch->h[ch->nlayers - 1]);
    const char *rows = tt_sx(k, X->shape[0]);
    int hs = CH_HMAX + k->pad;
    sb_printf(b, "  a_ri = iota block_idx.x * %d -> register i64[%d, %d] layout %s dim 0\n", k->bm, k->bm, k->bn, k->lay);
    sb_printf(b, "  a_rin = lt a_ri, %s\n", rows);
    for (int i = 0; i < 2; i++)
        sb_printf(b, "  a_hb%d = alloc shared f32[%d, %d] layout (%d,%d):(%d,1) init 0.0\n", i, k->bm, CH_HMAX, k->bm,
                  CH_HMAX, hs);
    for (int l = 0; l < ch->nlayers; l++) {
        const graph_op *c = &g->ops[ch->layer[l]];
        const lang_tensor *W = def->tensors[ch->w[l]];
        const char *n = tt_sx(k, c->box[1].hi), *kk = tt_sx(k, c->box[2].hi);
        int last = l + 1 == ch->nlayers;
        sb_printf(b, "  for a_n%d in 0 : cdiv(%s, %d) {\n", l, n, k->bn);
        sb_printf(b, "    a_acc = alloc register f32[%d, %d] layout %s init 0.0\n", k->bm, k->bn, k->lay);
        sb_printf(b, "    pipeline(grid=(a_c%d: cdiv(%s, %d)), stages=1, in=[", l, kk, dk);
        char wi[32], ci[32], acols[64];
        snprintf(wi, sizeof wi, "a_n%d", l);
        snprintf(ci, sizeof ci, "a_c%d", l);
        if (l == 0) {
            tt_block_spec(k, b, "a_tx", ch->x, k->bm, dk, "block_idx.x", ci, 0);
            sb_puts(b, ", ");
            snprintf(acols, sizeof acols, "a_tx[0, ");
        } else {
            snprintf(acols, sizeof acols, "a_hb%d[0, a_c%d * %d + ", (l - 1) % 2, l, dk);
        }
        if (ch->wtrans[l]) tt_block_spec(k, b, "a_tw", ch->w[l], k->bn, dk, wi, ci, 1);
        else tt_block_spec(k, b, "a_tw", ch->w[l], dk, k->bn, ci, wi, 0);
        sb_puts(b, "], out=[]) {\n");
        tt_fma_loop(k, "a_kk", dk, acols, l == 0 ? X->dtype : TSL_DTYPE_F32, "a_tw", W->dtype, ch->wtrans[l], k->bn,
                    k->lay, k->lcol, "a_acc", 0);
        sb_puts(b, "    }\n");
        sb_printf(b, "    a_ci = iota a_n%d * %d -> register i64[%d, %d] layout %s dim 1\n", l, k->bn, k->bm, k->bn,
                  k->lay);
        sb_printf(b, "    a_cin = lt a_ci, %s\n", n);
        sb_puts(b, "    a_live = and a_rin, a_cin\n");
        memset(k->gat, 0, sizeof *k->gat * (size_t)(def->ntensors + 1));
        memset(k->cur, 0, sizeof *k->cur * (size_t)(def->ntensors + 1));
        k->cur[ch->h[l]] = "a_acc";
        const char *x = "a_acc";
        for (int i = ch->layer[l] + 1; i < ch->layer[l + 1] && !k->fail; i++) {
            tt_val v = tt_as_tile(k, tt_expr(k, &g->ops[i], g->ops[i].body), TT_F);
            x = arena_strdup(k->p->m->arena, v.t);
            k->cur[ch->h[l]] = x;
        }
        if (!last) {
            sb_printf(b, "    a_hz = select a_cin, %s, 0.0\n", x);
            sb_printf(b, "    store_shared a_hz -> a_hb%d[0, a_n%d * %d]\n", l % 2, l, k->bn);
        } else {
            if (Y->dtype != TSL_DTYPE_F32) {
                sb_printf(b, "    a_yc = cast %s -> register %s[%d, %d] layout %s\n", x, tt_dt(Y->dtype), k->bm, k->bn,
                          k->lay);
                x = "a_yc";
            }
            sb_printf(b, "    store_global %s -> %s[block_idx.x * %d, a_n%d * %d]\n", x, tt_tname(k, ch->h[l]), k->bm,
                      l, k->bn);
        }
        sb_puts(b, "  }\n");
        if (!last) sb_puts(b, "  sync\n");
    }
    char grid[200];
    snprintf(grid, sizeof grid, "cdiv(%s, %d)", rows, k->bm);
    /* (x 5/4: the tile interpreter counts 4.875 bytes per f32) */
    int64_t smem = (2 * (int64_t)k->bm * hs + (int64_t)k->bm * (dk + k->pad) + (int64_t)k->bn * (dk + k->pad) +
                    (int64_t)dk * (k->bn + k->pad)) * 4 * 5 / 4;
    const char *kname = arena_printf(k->p->m->arena, "%s_g%d_gemmchain", def->name, grp->index);
    *out = tt_kernel_text(k, kname, grid, smem);
    return *out != NULL;
}

int sched_lower_gemm_chain(sched_plan *p, const graph *g, const graph_group *grp)
{
    graph_gemm_chain ch;
    if (!p->opt->chains || grp->strategy != GRAPH_GEMM_CHAIN || !graph_gemm_chain_match(g, grp->first, &ch) ||
        ch.last != grp->first + grp->nops - 1)
        return 0;
    if (!io_dtype(g->def->tensors[ch.x]->dtype) || !io_dtype(g->def->tensors[ch.h[ch.nlayers - 1]]->dtype)) return 0;
    for (int l = 0; l < ch.nlayers; l++)
        if (!io_dtype(g->def->tensors[ch.w[l]]->dtype) || !io_dtype(g->def->tensors[ch.h[l]]->dtype)) return 0;
    sched_guard gd;
    int hmax;
    if (!hidden_guard(g, &ch, &gd, &hmax)) return 0;
    /* CUDA f16/bf16: the tensor-core plan (chain_mma.c); the FMA plan
     * below is the CPU's, f32's and sm_80's for what that one declines */
    if (p->target != TSL_TARGET_CPU && sched_chain_mma(p, g, grp, &ch, &gd, hmax)) return 1;
    if (p->target != TSL_TARGET_CPU && p->sm >= 90) return 0;
    /* CPU: 64-row blocks, 8 x 8 per emulated thread (the micro-kernel),
     * 64-deep steps; the two activation buffers are 2 x 68 KB. CUDA:
     * 16 rows x 32 columns, 32-deep: the buffers (2 x 17 KB) and the
     * blocks fit 48 KB of shared memory. */
    int cpu = p->target == TSL_TARGET_CPU;
    tt k;
    tt_init(&k, p, g, cpu ? 64 : 16, cpu ? 64 : 32, cpu ? 8 : 16, 8, 16);
    char *text = NULL;
    int ok = chain_text(&k, &ch, grp, cpu ? 64 : 32, &text);
    sb_free(&k.b);
    if (!ok) return 0;
    const char *kname = arena_printf(p->m->arena, "%s_g%d_gemmchain", g->def->name, grp->index);
    tile_kernel *kern = tt_parse_kernel(p, text, kname, "gemm-chain");
    if (!kern) return 0;
    tt_push_launch(&k, kern, grp, gd.n ? &gd : NULL);
    return 1;
}
