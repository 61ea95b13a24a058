/* lstm.c — the LSTM-cell strategy (docs/sched.md, "The LSTM-cell
 * strategy"): an `lstm` group (graph/lstm.c, examples/lstm.tc) as ONE
 * kernel in which `gates` never reaches memory:
 *
 *   - grid (cdiv(B, BM), cdiv(H, BH)); a block owns rows [b0, b0 + BM) and
 *     columns [h0, h0 + BH) of ALL FOUR gates: four f32 accumulators
 *     acc[c] (BM x BH, one layout), so the four gate values of a (b, h)
 *     are in the same thread's registers, at the same local slot;
 *   - one GEMM with K = I + H: a pipeline over X's and Wx's k blocks, then
 *     one over Hprev's and Wh's, into the same accumulators; each k block
 *     is A's BM x BK block and the four gates' BH x BK weight blocks
 *     (specs [1, BH, BK] of W(G,H,K) at gate c);
 *       f16/bf16 on CUDA: mma.sync m16n8k16 (f32 accumulation), WM x 4
 *         warps, A's fragment loaded once for the four gates' products;
 *       f16/bf16 on sm_90a (I, H multiples of 8; mma.sync otherwise):
 *         blocks_mma.c's TMA ring with two K segments (X Wx, Hprev Wh)
 *         and the four gates' weight blocks one [4, BH, BK] box a stage,
 *         a persistent grid over (b, h) tiles, each consumer warpgroup
 *         holding the four gates' 64 x BH accumulators of its rows;
 *       f32 on CUDA: FMA micro-tiles (4 x 4 sub-tiles, blocks_mma.c's
 *         layouts), A's column broadcast once for the four gates;
 *       CPU: f32 FMA in the C micro-kernel (cpu.ukr.f32), one k loop per
 *         gate (the atom's pattern);
 *   - the epilogue, in registers: per gate c the gate ops (the bias) on
 *     acc[c] (gate var at the constant c), then the tail ops over (b, h)
 *     (graph_lstm: reads of gates(b, c, h) are acc[c]'s tile, reads of
 *     what an earlier tail op wrote its value, rounded to its dtype as
 *     the interpreter stores it); each tail-written tensor other than a
 *     private temporary is cast and stored (masked) at its last writer.
 * G is 4: a constant, or a size symbol and the launch is guarded by
 * G <= 4 && G > 3 (lower.c runs the parts otherwise). Declined (the parts
 * run): sched.lstm=0 or sched.chains=0, products of mixed dtypes, f64,
 * bodies the statement bodies do not lower. */
#include <stdio.h>
#include <string.h>

#include "sched/blocks_mma.h"

#define B_(e) sched_blk_bin(kb, TILE_OP_##e
#define I_(x) sched_blk_int(kb, (x))
#define V_(x) sched_blk_v(kb, (x))

/* The plans' fixed choices. mma: WM = BM / 64 warps along b, 4 along h,
 * k steps of 32 through 3 cp.async stages, rows padded by 8 elements
 * (16 bytes: ldmatrix's 8 rows in 8 bank groups); BM x BH from the
 * options lstm.mma.bm / .bh (128 x 32: 256 threads, each warp 64 rows x
 * 8 h x 4 gates = contract.c's 64 x 32 warp tile, 64 accumulators a
 * thread). f32 GPU: 64 x 32, 4 x 4 a thread per gate (128 threads, 64
 * accumulators), k steps of 16, 3 stages, 41 KB. CPU: BM (lstm.cpu.bm) x
 * 64, 6 x 16 a thread per gate (the micro-kernel's AVX2 tile), k steps
 * of 128, one stage. */
enum { LS_MMA_BK = 32, LS_MMA_STAGES = 3, LS_MMA_PAD = 8 };
/* sm_90a (blocks_mma.c's ring): BM = 128 rows a tile, two consumer
 * warpgroups of 64 rows, BH = 64 columns of h a tile for each of the
 * four gates (4 x 64 x 64 f32 = 128 accumulator registers a consumer
 * thread), 64-deep k blocks; a stage is A's [128, 64] box and one
 * [4, 64, 64] box of the gates' weights (48 KB: 4 stages); the tiles
 * visited LS_WG_GROUP down b before moving right. */
enum { LS_WG_BM = 128, LS_WG_BH = 64, LS_WG_BK = 64, LS_WG_GROUP = 8 };
enum { LS_FMA_BM = 64, LS_FMA_BH = 32, LS_FMA_TM = 4, LS_FMA_TN = 4, LS_FMA_BK = 16, LS_FMA_STAGES = 3, LS_FMA_PAD = 4 };
enum { LS_CPU_BH = 64, LS_CPU_TM = 6, LS_CPU_TN = 16, LS_CPU_BK = 128, LS_CPU_PAD = 16 };

typedef struct ls {
    const graph *g;
    const lang_def *def;
    const graph_lstm *L;
    sched_blk *kb;
    tsl_dtype in;          /* the products' dtype */
    int mma, cpu, ukr;
    int sm90;              /* the sm_90a plan: TMA ring, wgmma, warpgroups */
    int bm, bh, bk, wm, wn, tm, tn, threads, pad, stages;
    int em, ethreads;      /* the epilogue's rows and threads: the block's,
                            * or one consumer warpgroup's (sm90) */
    sched_blk_ring ring;   /* sm90: the ring's values (the tile's origin) */
    char lc[256];          /* the accumulators' layout */
    tile_value *acc[4];
    tile_value *gate[4];   /* the gate values after the gate ops */
    tile_value **held;     /* per def tensor: its value a tail op wrote */
    int cur_gate;          /* the gate the gate ops run on (var g) */
    int tail;              /* lowering tail ops (vars b, h) */
} ls;

static int io_dt(tsl_dtype t) { return t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16 || t == TSL_DTYPE_F32; }

/* ---- the products ---------------------------------------------------------------------------------- */

static tile_type ls_reg(sched_blk *kb, tsl_dtype dt, int64_t d0, int64_t d1, const char *lay)
{
    return sched_blk_type2(kb, TILE_REGISTER, dt, d0, d1, sched_blk_layout(kb, "%s", lay));
}

/* acc[c] += A(b0.., k) W(c, h0.., k) over all k: a pipeline of A's
 * [BM, BK] blocks and the four gates' [1, BH, BK] blocks. */
static void ls_product(sched_blk *kb, ls *c, int phase)
{
    const lang_tensor *A = c->def->tensors[c->L->a[phase]];
    tile_value *a = sched_blk_tensor(kb, c->L->a[phase]), *w = sched_blk_tensor(kb, c->L->w[phase]);
    tile_value *kv;
    tile_stmt *pipe = sched_blk_pipe(kb, phase ? "c_k1" : "c_k0", B_(CDIV), sched_blk_extent(kb, A->shape[1]), I_(c->bk)),
                                     c->stages, &kv);
    tile_expr *k = V_(kv);
    int bm = c->bm, bh = c->bh, bk = c->bk, pad = c->pad;
    /* A: as stored (mma, CPU: the micro-kernel broadcasts its reads), or
     * k-major (f32 GPU: a thread's rows at one k are 16-byte loads); the
     * weights k-major for the FMA plans (a gate's row at one k is
     * contiguous), as stored for mma (ldmatrix of B^T) */
    int64_t ablk[2] = {bm, bk};
    tile_expr *aidx[2] = {sched_blk_bidx(kb, 0), k};
    tile_layout *al = !c->mma && !c->cpu ? sched_blk_layout(kb, "(%d, %d):(1, %d)", bm, bk, bm + pad)
                                         : sched_blk_layout(kb, "(%d, %d):(%d, 1)", bm, bk, bk + pad);
    tile_value *ta = sched_blk_pipe_in(kb, pipe, "c_ta", a, 2, ablk, aidx, al);
    tile_value *tw[4];
    for (int g = 0; g < 4; g++) {
        int64_t wblk[3] = {1, bh, bk};
        tile_expr *widx[3] = {I_(g), sched_blk_bidx(kb, 1), k};
        tile_layout *wl = c->mma ? sched_blk_layout(kb, "(1, %d, %d):(%d, %d, 1)", bh, bk, bh * (bk + pad), bk + pad)
                                 : sched_blk_layout(kb, "(1, %d, %d):(%d, 1, %d)", bh, bk, bk * (bh + pad), bh + pad);
        char nm[16];
        snprintf(nm, sizeof nm, "c_tw%d", g);
        tw[g] = sched_blk_pipe_in(kb, pipe, nm, w, 3, wblk, widx, wl);
    }
    sched_blk_pipe_open(kb, pipe);
    tsl_dtype in = c->in;
    if (c->mma) {
        sched_blk_gemm gm = {.bm = bm, .bn = bh, .bk = bk, .wm = c->wm, .wn = c->wn};
        char la[256], lat[256], lb[256], lbt[256], lcc[256];
        sched_blk_mma_layouts(&gm, la, lat, lb, lbt, lcc, sizeof la);
        tile_expr *z2[2] = {I_(0), I_(0)};
        tile_value *ra = sched_blk_load_shared(kb, "c_ra", sched_blk_at(kb, ta, 2, z2), ls_reg(kb, in, bm, bk, la));
        for (int g = 0; g < 4; g++) {
            tile_expr *z3[3] = {I_(0), I_(0), I_(0)};
            char n0[16], n1[16];
            snprintf(n0, sizeof n0, "c_rbt%d", g);
            snprintf(n1, sizeof n1, "c_rb%d", g);
            tile_value *rb0 = sched_blk_load_shared(kb, n0, sched_blk_at(kb, tw[g], 3, z3), ls_reg(kb, in, bh, bk, lbt));
            tile_value *rb = sched_blk_view(kb, n1, rb0, ls_reg(kb, in, bk, bh, lb));
            tile_operand args[3] = {tile_operand_tensor(ra), tile_operand_tensor(rb), tile_operand_tensor(c->acc[g])};
            tile_operand d = tile_operand_tensor(c->acc[g]);
            sched_blk_op(kb, TILE_I_MMA, NULL, 3, args, NULL, &d);
        }
        sched_blk_end(kb);
        return;
    }
    sched_blk_gemm gm = {.bm = bm, .bn = bh, .bk = bk, .tm = c->tm, .tn = c->tn, .cpu = c->cpu};
    char lc[256], lcol[256], lrow[256], lcolb[256], lrowa[256];
    sched_blk_fma_layouts(&gm, lc, lcol, lrow, lcolb, lrowa, sizeof lc);
    /* GPU: one unrolled k loop, A's column broadcast once for the four
     * gates; CPU: a k loop per gate, each the micro-kernel's pattern */
    for (int g0 = 0; g0 < (c->cpu ? 4 : 1); g0++) {
        tile_stmt *f = sched_blk_for(kb, "c_kk", I_(0), I_(bk), NULL);
        f->unroll = !c->cpu && bk <= TILE_MAX_UNROLL;
        tile_expr *kk = V_(f->v);
        tile_expr *ai[2] = {I_(0), kk};
        tile_value *av = sched_blk_load_shared(kb, "c_a", sched_blk_at(kb, ta, 2, ai), ls_reg(kb, TSL_DTYPE_F32, bm, 1, lcol));
        /* (the micro-kernel's pattern broadcasts after both loads) */
        tile_value *ab = c->cpu ? NULL : sched_blk_broadcast(kb, "c_ab", av, ls_reg(kb, TSL_DTYPE_F32, bm, bh, lc), 1);
        for (int g = g0; g < (c->cpu ? g0 + 1 : 4); g++) {
            tile_expr *bi[3] = {I_(0), I_(0), kk};
            char nm[4][16];
            for (int q = 0; q < 4; q++) snprintf(nm[q], sizeof nm[q], "c_%s%d", q == 0 ? "bt" : q == 1 ? "b" : q == 2 ? "bb" : "p", g);
            tile_value *b0 = sched_blk_load_shared(kb, nm[0], sched_blk_at(kb, tw[g], 3, bi),
                                                   ls_reg(kb, TSL_DTYPE_F32, bh, 1, lcolb));
            tile_value *bv = sched_blk_view(kb, nm[1], b0, ls_reg(kb, TSL_DTYPE_F32, 1, bh, lrow));
            if (c->cpu) ab = sched_blk_broadcast(kb, "c_ab", av, ls_reg(kb, TSL_DTYPE_F32, bm, bh, lc), 1);
            tile_value *bb = sched_blk_broadcast(kb, nm[2], bv, ls_reg(kb, TSL_DTYPE_F32, bm, bh, lc), 0);
            tile_operand ob = tile_operand_tensor(bb);
            tile_value *p = sched_blk_ew(kb, TILE_I_MUL, nm[3], tile_operand_tensor(ab), &ob);
            tile_operand args[2] = {tile_operand_tensor(c->acc[g]), tile_operand_tensor(p)};
            tile_operand d = tile_operand_tensor(c->acc[g]);
            tile_stmt *s = sched_blk_op(kb, TILE_I_ADD, NULL, 2, args, NULL, &d);
            if (c->ukr) s->instr.atom = "cpu.ukr.f32";
        }
        sched_blk_end(kb);
    }
    sched_blk_end(kb);
}

/* ---- the epilogue ------------------------------------------------------------------------------------ */

/* The tile's first coordinate along var v: gate ops have (b, g, h), g at
 * the gate being lowered; tail ops (b, h). */
static tile_expr *ls_origin(void *ctx, int v)
{
    ls *c = ctx;
    sched_blk *kb = c->kb;
    if (!c->tail && v == 1) return I_(c->cur_gate);
    if (c->sm90) { /* the persistent loop's tile, the consumer's rows */
        if (v == 0) return B_(ADD), B_(MUL), V_(c->ring.tm), I_(c->bm)), B_(MUL), V_(c->ring.wg), I_(c->em)));
        return B_(MUL), V_(c->ring.tn), I_(c->bh));
    }
    if (v == 0) return B_(MUL), sched_blk_bidx(kb, 0), I_(c->bm));
    return B_(MUL), sched_blk_bidx(kb, 1), I_(c->bh));
}

static int ls_covers(void *ctx, const graph_op *op, int v, int ti, int d)
{
    ls *c = ctx;
    const lang_range *r = &op->box[v];
    const lang_sexpr *e = c->def->tensors[ti]->shape[d];
    return r->lo->kind == LANG_SX_CONST && r->lo->value == 0 && graph_sexpr_equal(r->hi, e) &&
           (e->kind == LANG_SX_SYM || e->kind == LANG_SX_CONST);
}

/* Tail reads held on chip: gates(b, c, h) and what earlier tail ops wrote. */
static tile_value *ls_held(void *ctx, const graph_op *op, const graph_operand *o)
{
    ls *c = ctx;
    (void)op;
    if (o->tensor == c->L->gates) return c->gate[o->idx[1].c]; /* graph/lstm.c: a constant 0..3 */
    return o->identity ? c->held[o->tensor] : NULL;
}

/* A tensor the tail writes that nobody outside the run reads: kept on
 * chip, never stored. */
static int ls_private(const ls *c, int t)
{
    const graph_tensor *gt = &c->g->tensors[t];
    if (gt->kind != GRAPH_T_TEMP) return 0;
    for (int i = 0; i < gt->nreaders; i++)
        if (gt->readers[i] < c->L->first || gt->readers[i] > c->L->last) return 0;
    for (int i = 0; i < gt->nwriters; i++)
        if (gt->writers[i] < c->L->first || gt->writers[i] > c->L->last) return 0;
    return 1;
}

static int ls_epilogue(sched_blk *kb, ls *c)
{
    const graph *g = c->g;
    const graph_lstm *L = c->L;
    sched_blk_tile T = {.kb = kb, .tc = L->gates, .rows = c->em, .cols = c->bh, .threads = c->ethreads, .lay = c->lc,
                        .nb = 0, .vm = 0, .vn = 2, .origin = ls_origin, .covers = ls_covers, .ctx = c};
    for (int gi = 0; gi < 4; gi++) {
        c->cur_gate = gi;
        T.cur = c->acc[gi];
        for (int i = L->prod[1] + 1; i < L->tail; i++) {
            sched_blk_val v;
            if (!sched_blk_body(&T, &g->ops[i], g->ops[i].body, &v)) return 0;
            T.cur = sched_blk_as_tile(&T, v);
        }
        c->gate[gi] = T.cur;
    }
    c->tail = 1;
    T.tc = -1;
    T.cur = NULL;
    T.vn = 1;
    T.held = ls_held;
    for (int i = L->tail; i <= L->last; i++) {
        const graph_op *op = &g->ops[i];
        sched_blk_val v;
        if (!sched_blk_body(&T, op, op->body, &v)) return 0;
        tile_value *x = sched_blk_as_tile(&T, v);
        int t = op->operands[0].tensor;
        const lang_tensor *Y = c->def->tensors[t];
        tile_value *y = x;
        if (Y->dtype != TSL_DTYPE_F32) {
            /* as the interpreter stores it: later reads see the rounded value */
            y = sched_blk_cast(kb, sched_blk_tile_name(&T), x, sched_blk_tile_type(&T, Y->dtype));
            x = sched_blk_cast(kb, sched_blk_tile_name(&T), y, sched_blk_tile_type(&T, TSL_DTYPE_F32));
        }
        c->held[t] = x;
        int later = 0;
        for (int j = i + 1; j <= L->last; j++) later |= g->ops[j].operands[0].tensor == t;
        if (later || ls_private(c, t)) continue;
        tile_expr *at[2] = {ls_origin(c, 0), ls_origin(c, 1)};
        sched_blk_store_global(kb, y, sched_blk_at(kb, sched_blk_tensor(kb, t), 2, at));
    }
    return 1;
}

/* ---- the kernel -------------------------------------------------------------------------------------- */

/* sm_90a: a persistent grid over (b, h) tiles; the ring's producer
 * streams X's and Wx's k blocks, then Hprev's and Wh's (two K
 * segments), the consumers accumulate the four gates (one wgmma a gate a
 * stage) and run the epilogue on their 64 rows. */
static int ls_build_sm90(sched_blk *kb, ls *c)
{
    const lang_tensor *X = c->def->tensors[c->L->a[0]], *W = c->def->tensors[c->L->w[0]];
    sched_blk_kseg seg[2];
    for (int ph = 0; ph < 2; ph++) {
        const lang_tensor *A = c->def->tensors[c->L->a[ph]];
        seg[ph].a = sched_blk_tensor(kb, c->L->a[ph]);
        seg[ph].b = sched_blk_tensor(kb, c->L->w[ph]);
        seg[ph].kext = sched_blk_extent(kb, A->shape[1]);
    }
    sched_blk_gemm gm = {.a = seg[0].a, .b = seg[0].b, .in = c->in, .b_trans = 1, .bm = c->bm, .bn = c->bh,
                         .bk = c->bk, .threads = c->threads, .mma = 1, .kext = seg[0].kext, .lc = c->lc,
                         .nseg = 2, .seg = seg, .bgroup = 4};
    memset(&c->ring, 0, sizeof c->ring);
    c->ring.em = c->em;
    c->ring.en = c->bh;
    c->ring.cdt = TSL_DTYPE_F32;
    tile_expr *M = sched_blk_extent(kb, X->shape[0]), *N = sched_blk_extent(kb, W->shape[1]);
    tile_expr *grid = B_(MIN), B_(MUL), B_(CDIV), M, I_(c->bm)), B_(CDIV), N, I_(c->bh))), sched_blk_sms(kb));
    sched_blk_grid(kb, 1, &grid, c->threads, sched_blk_ring_smem(&gm, 0));
    sched_blk_ring_open(kb, &gm, &c->ring, M, N, NULL, LS_WG_GROUP);
    sched_blk_ring_mainloop(kb, &gm, &c->ring);
    for (int g = 0; g < 4; g++) c->acc[g] = c->ring.acc[g];
    if (!ls_epilogue(kb, c)) return 0;
    sched_blk_ring_close(kb, &c->ring);
    return 1;
}

static int ls_build(sched_blk *kb, void *ctx)
{
    ls *c = ctx;
    c->kb = kb;
    c->tail = 0;
    memset(c->held, 0, sizeof *c->held * (size_t)(c->def->ntensors + 1));
    if (c->sm90) return ls_build_sm90(kb, c);
    const lang_tensor *X = c->def->tensors[c->L->a[0]], *W = c->def->tensors[c->L->w[0]];
    int esz = c->mma ? 2 : 4;
    /* (both products' pipelines hold their stages: twice one's) */
    int64_t smem = 2 * (int64_t)c->stages * esz *
                   (c->mma ? (int64_t)c->bm * (c->bk + c->pad) + 4LL * c->bh * (c->bk + c->pad)
                           : (int64_t)c->bk * (c->bm + c->pad) + 4LL * c->bk * (c->bh + c->pad));
    if (c->cpu) smem = smem * 5 / 4; /* the tile interpreter counts 4.875 bytes per f32 */
    tile_expr *grid[2] = {B_(CDIV), sched_blk_extent(kb, X->shape[0]), I_(c->bm)),
                          B_(CDIV), sched_blk_extent(kb, W->shape[1]), I_(c->bh))};
    sched_blk_grid(kb, 2, grid, c->threads, smem);
    for (int g = 0; g < 4; g++) {
        char nm[16];
        snprintf(nm, sizeof nm, "c_acc%d", g);
        c->acc[g] = sched_blk_alloc(kb, nm, ls_reg(kb, TSL_DTYPE_F32, c->bm, c->bh, c->lc), sched_blk_float(kb, 0.0, "0.0"));
    }
    ls_product(kb, c, 0);
    ls_product(kb, c, 1);
    return ls_epilogue(kb, c);
}

/* The sizes the sm_90a plan's TMA needs to be multiples of 8 (16-byte
 * rows of f16/bf16): the last dims of X, Wx, Hprev and Wh (I and H). 0
 * when a constant one is not. */
static int ls_align(const ls *c, sched_guard *g)
{
    const lang_sexpr *ext[4] = {c->def->tensors[c->L->a[0]]->shape[1], c->def->tensors[c->L->w[0]]->shape[2],
                                c->def->tensors[c->L->a[1]]->shape[1], c->def->tensors[c->L->w[1]]->shape[2]};
    return sched_guard_multiples(g, ext, 4, 8);
}

/* The sm_90a launches (see sched_lower_lstm) under gd (G == 4, or none);
 * 0 when the group is not theirs (nothing pushed). */
static int ls_sm90_plans(sched_plan *p, const ls *base, const sched_guard *gd, const char *kname, const graph_group *grp)
{
    sched_guard align;
    if (!ls_align(base, &align) || gd->n + align.n > SCHED_MAX_GUARD) return 0;
    ls c9 = *base;
    c9.sm90 = 1;
    c9.bm = LS_WG_BM, c9.bh = LS_WG_BH, c9.bk = LS_WG_BK;
    c9.em = LS_WG_BM / 2;
    c9.threads = 384, c9.ethreads = 128;
    tile_wgmma_acc_layout(c9.bh, c9.lc, sizeof c9.lc);
    sched_blk kb9, kb8;
    tile_kernel *k9 = sched_blk_build(&kb9, p, base->def, arena_printf(p->m->arena, "%s_wgmma", kname), ls_build, &c9);
    if (!k9) return 0;
    /* the mma.sync plan for the sizes TMA cannot take */
    ls c8 = *base;
    tile_kernel *k8 = align.n ? sched_blk_build(&kb8, p, base->def, kname, ls_build, &c8) : NULL;
    if (align.n && !k8) return 0;
    sched_guard g9 = *gd;
    for (int i = 0; i < align.n; i++) {
        g9.sym[g9.n] = align.sym[i];
        g9.op[g9.n] = align.op[i];
        g9.val[g9.n] = align.val[i];
        g9.grp[g9.n++] = 0; /* when */
    }
    sched_blk_add(&kb9, k9, grp->first, grp->nops, g9.n ? &g9 : NULL);
    if (k8) {
        sched_guard g8 = *gd;
        int fits = sched_guard_unless(&g8, &align);
        TSL_ASSERT(fits); /* (the terms fit: checked above) */
        sched_blk_add(&kb8, k8, grp->first, grp->nops, &g8);
    }
    /* the launches cover the sizes where G == 4: the parts run otherwise */
    if (gd->n) {
        p->partial = 1;
        p->covered = *gd;
    }
    return 1;
}

int sched_lower_lstm(sched_plan *p, const graph *g, const graph_group *grp)
{
    graph_lstm L;
    if (!p->opt->chains || !p->opt->lstm || grp->strategy != GRAPH_LSTM || !graph_lstm_match(g, grp->first, &L) ||
        L.last != grp->first + grp->nops - 1)
        return 0;
    const lang_def *def = g->def;
    ls c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.def = def;
    c.L = &L;
    c.in = def->tensors[L.a[0]]->dtype;
    for (int ph = 0; ph < 2; ph++)
        if (def->tensors[L.a[ph]]->dtype != c.in || def->tensors[L.w[ph]]->dtype != c.in) return 0;
    if (!io_dt(c.in)) return 0;
    c.cpu = p->target == TSL_TARGET_CPU;
    c.mma = c.in != TSL_DTYPE_F32; /* (on the CPU too, as contract.c: the C target runs the mma) */
    if (c.mma) {
        c.bm = p->opt->lstm_bm == 64 ? 64 : 128;
        c.bh = p->opt->lstm_bh == 64 ? 64 : 32;
        c.wm = c.bm / 64;
        c.wn = 4;
        c.threads = 32 * c.wm * c.wn;
        c.bk = LS_MMA_BK, c.stages = LS_MMA_STAGES, c.pad = LS_MMA_PAD;
        sched_blk_gemm gm = {.bm = c.bm, .bn = c.bh, .bk = 16, .wm = c.wm, .wn = c.wn};
        char la[256], lat[256], lb[256], lbt[256];
        sched_blk_mma_layouts(&gm, la, lat, lb, lbt, c.lc, sizeof la);
    } else {
        c.bm = c.cpu ? (p->opt->lstm_cpu_bm == 48 ? 48 : 96) : LS_FMA_BM;
        c.bh = c.cpu ? LS_CPU_BH : LS_FMA_BH;
        c.tm = c.cpu ? LS_CPU_TM : LS_FMA_TM;
        c.tn = c.cpu ? LS_CPU_TN : LS_FMA_TN;
        c.bk = c.cpu ? LS_CPU_BK : LS_FMA_BK;
        c.stages = c.cpu ? 1 : LS_FMA_STAGES;
        c.pad = c.cpu ? LS_CPU_PAD : LS_FMA_PAD;
        c.threads = (c.bm / c.tm) * (c.bh / c.tn);
        c.ukr = c.cpu && p->opt->micro_kernels;
        sched_blk_gemm gm = {.bm = c.bm, .bn = c.bh, .bk = c.bk, .tm = c.tm, .tn = c.tn, .cpu = c.cpu};
        char lcol[256], lrow[256], lcolb[256], lrowa[256];
        sched_blk_fma_layouts(&gm, c.lc, lcol, lrow, lcolb, lrowa, sizeof lcol);
    }
    c.em = c.bm;
    c.ethreads = c.threads;
    c.held = arena_alloc(p->m->arena, sizeof *c.held * (size_t)(def->ntensors + 1));
    /* G == 4 when G is a size symbol (graph/lstm.c: else the constant 4) */
    sched_guard gd;
    memset(&gd, 0, sizeof gd);
    const lang_sexpr *G = def->tensors[L.w[0]]->shape[0];
    if (G->kind == LANG_SX_SYM) {
        gd.sym[0] = gd.sym[1] = G->sym;
        gd.op[0] = SCHED_GUARD_LE, gd.val[0] = 4;
        gd.op[1] = SCHED_GUARD_GT, gd.val[1] = 3;
        gd.n = 2;
    }
    const char *kname = arena_printf(p->m->arena, "%s_g%d_lstm", def->name, grp->index);
    /* sm_90a: the TMA/wgmma plan, guarded by the sizes TMA needs; the
     * mma.sync plan for the others */
    if (c.mma && !c.cpu && p->sm >= 90 && ls_sm90_plans(p, &c, &gd, kname, grp)) return 1;
    sched_blk kb;
    tile_kernel *k = sched_blk_build(&kb, p, def, kname, ls_build, &c);
    if (!k) return 0;
    sched_blk_add(&kb, k, grp->first, grp->nops, gd.n ? &gd : NULL);
    return 1;
}
