/* chain_mma.c — the GEMM-chain strategy's tensor-core plan (docs/sched.md,
 * "The GEMM-chain strategy"): an MLP of f16/bf16 layers as one kernel on
 * mma.sync m16n8k16 (sm_80, and sm_90a where mma.sync runs too), the
 * activations kept in shared memory as the next layer's A operand:
 *
 *   - grid cdiv(rows, BM); each block BM rows through every layer, layer
 *     by layer, its columns in BN-wide tiles; 8 warps (2 x 4) of 32 x 32;
 *   - every (layer, column tile, k step) is one step of ONE stream of
 *     weight blocks (BN x BK, and X's BM x BK block for the first layer)
 *     through a two-stage cp.async ring: step j's copy is issued at the
 *     start of step j - 1, so the next layer's first block (a whole
 *     128 x 64 half of Graphene's 128 x 128 weights) arrives while the
 *     current layer computes and writes its epilogue;
 *   - the A operand is read from shared memory by ldmatrix (the previous
 *     layer's activations, or X's staged block), B from the ring;
 *   - the epilogue (the user's pointwise ops: bias, ReLU, GELU, a residual
 *     read, ...) runs on the f32 accumulator fragments; columns past the
 *     layer's width are zeroed (the next layer's padding reads them), the
 *     tile is cast to the input dtype and written to the other activation
 *     buffer; the last layer is cast and stored to global.
 * Taken when X and every W share one dtype (f16 or bf16), every hidden
 * tensor has it too (the activations are stored in it, as the layers'
 * kernels store them), and every W is stored the same way round; the
 * launch carries chain.c's guard (hidden widths <= CH_HMAX). */
#include <stdio.h>
#include <string.h>

#include "sched/blocks_mma.h"

#define B_(e) sched_blk_bin(kb, TILE_OP_##e
#define I_(x) sched_blk_int(kb, (x))
#define V_(x) sched_blk_v(kb, (x))

/* The block: BM rows (the option chain.mma.bm), 128 columns a tile,
 * 64-deep k steps, warps of 32 x 32 (2 x 4 m16n8 atoms each: 32
 * accumulator registers a thread), BM / 32 x 4 of them. BM = 64: 8192 rows
 * make 128 blocks, one wave on 132 SMs; shared memory: two activation
 * buffers [64, 256 + 8], two weight stages [128, 64 + 8], two X stages
 * [64, 64 + 8]: 123 KB (fits sm_80's 163 KB), one block an SM. BM = 32:
 * 256 blocks of 4 warps in 80 KB, two an SM (one block's epilogue and
 * waits beside the other's products). */
enum { CM_BN = 128, CM_BK = 64, CM_WN = 4, CM_PAD = 8 };

typedef struct cm {
    const graph *g;
    const lang_def *def;
    const graph_gemm_chain *ch;
    sched_blk *kb;
    tsl_dtype in;               /* X's, the weights' and the activations' dtype */
    int wtrans;                 /* every W stored (o, i) */
    int hs;                     /* columns of an activation buffer */
    int bm, wm;                 /* rows a block, warps along them */
    char la[256], lb[256], lbt[256], lc[256], lat[256];
    tile_value *ws, *xs, *hb[2];
    tile_value *j;              /* the step counter */
    tile_value *n;              /* the current layer's column tile */
} cm;

/* Layer l's column and k-step counts (at least 1: a layer of width 0
 * still takes its one step, of zeros, so the stream stays in order). */
static tile_expr *cm_ntiles(sched_blk *kb, const cm *c, int l)
{
    const graph_op *op = &c->g->ops[c->ch->layer[l]];
    return B_(MAX), I_(1), B_(CDIV), sched_blk_extent(kb, op->box[1].hi), I_(CM_BN)));
}

static tile_expr *cm_ksteps(sched_blk *kb, const cm *c, int l)
{
    const graph_op *op = &c->g->ops[c->ch->layer[l]];
    return B_(MAX), I_(1), B_(CDIV), sched_blk_extent(kb, op->box[2].hi), I_(CM_BK)));
}

/* Issue the copies of layer l's step (column tile n, k step k) into ring
 * stage s: W's block, and X's for the first layer. */
static void cm_issue(sched_blk *kb, cm *c, int l, tile_expr *n, tile_expr *k, tile_expr *s)
{
    tile_value *W = sched_blk_tensor(kb, c->ch->w[l]);
    tile_expr *wi[2] = {B_(MUL), n, I_(CM_BN)), B_(MUL), k, I_(CM_BK))};
    if (!c->wtrans) {
        tile_expr *t = wi[0];
        wi[0] = wi[1], wi[1] = t;
    }
    tile_operand src = sched_blk_at(kb, W, 2, wi), dst = sched_blk_at1(kb, c->ws, s);
    tile_stmt *cp = sched_blk_op(kb, TILE_I_COPY_ASYNC, NULL, 1, &src, NULL, &dst);
    cp->instr.init = sched_blk_float(kb, 0.0, "0.0");
    cp->instr.bytes = 16;
    if (l) return;
    tile_value *X = sched_blk_tensor(kb, c->ch->x);
    tile_expr *xi[2] = {B_(MUL), sched_blk_bidx(kb, 0), I_(c->bm)), B_(MUL), k, I_(CM_BK))};
    src = sched_blk_at(kb, X, 2, xi);
    dst = sched_blk_at1(kb, c->xs, s);
    cp = sched_blk_op(kb, TILE_I_COPY_ASYNC, NULL, 1, &src, NULL, &dst);
    cp->instr.init = sched_blk_float(kb, 0.0, "0.0");
    cp->instr.bytes = 16;
}

static tile_type cm_reg(sched_blk *kb, tsl_dtype dt, int64_t d0, int64_t d1, const char *lay)
{
    return sched_blk_type2(kb, TILE_REGISTER, dt, d0, d1, sched_blk_layout(kb, "%s", lay));
}

/* acc += A's BM x BK block (stage s of X, or the previous activations at
 * column k BK) times the ring's stage s, 16 deep at a time. */
static void cm_step(sched_blk *kb, cm *c, int l, tile_expr *k, tile_expr *s, tile_value *acc)
{
    tile_stmt *f = sched_blk_for(kb, "c_kk", I_(0), I_(CM_BK / 16), NULL);
    tile_expr *kk = B_(MUL), V_(f->v), I_(16));
    tile_expr *ia[3];
    tile_value *a;
    if (l == 0) {
        ia[0] = s, ia[1] = I_(0), ia[2] = kk;
        a = sched_blk_load_shared(kb, "c_ra", sched_blk_at(kb, c->xs, 3, ia), cm_reg(kb, c->in, c->bm, 16, c->la));
    } else {
        ia[0] = I_(0), ia[1] = B_(ADD), B_(MUL), k, I_(CM_BK)), kk);
        a = sched_blk_load_shared(kb, "c_ra", sched_blk_at(kb, c->hb[(l - 1) % 2], 2, ia),
                                  cm_reg(kb, c->in, c->bm, 16, c->la));
    }
    tile_expr *ib[3] = {s, I_(0), kk};
    tile_value *b;
    if (c->wtrans) {
        tile_value *b0 = sched_blk_load_shared(kb, "c_rb0", sched_blk_at(kb, c->ws, 3, ib), cm_reg(kb, c->in, CM_BN, 16, c->lbt));
        b = sched_blk_view(kb, "c_rb", b0, cm_reg(kb, c->in, 16, CM_BN, c->lb));
    } else {
        ib[1] = kk, ib[2] = I_(0);
        b = sched_blk_load_shared(kb, "c_rb", sched_blk_at(kb, c->ws, 3, ib), cm_reg(kb, c->in, 16, CM_BN, c->lb));
    }
    tile_operand args[3] = {tile_operand_tensor(a), tile_operand_tensor(b), tile_operand_tensor(acc)};
    tile_operand dacc = tile_operand_tensor(acc);
    sched_blk_op(kb, TILE_I_MMA, NULL, 3, args, NULL, &dacc);
    sched_blk_end(kb);
}

/* The tile's first coordinate along box var v (sched_blk_tile.origin):
 * rows of the block, columns of the current tile. */
static tile_expr *cm_origin(void *ctx, int v)
{
    cm *c = ctx;
    sched_blk *kb = c->kb;
    if (v == 0) return B_(MUL), sched_blk_bidx(kb, 0), I_(c->bm));
    return B_(MUL), V_(c->n), I_(CM_BN));
}

static int cm_covers(void *ctx, const graph_op *op, int v, int ti, int d)
{
    cm *c = ctx;
    const lang_range *r = &op->box[v];
    const lang_sexpr *e = c->def->tensors[ti]->shape[d];
    return r->lo->kind == LANG_SX_CONST && r->lo->value == 0 && graph_sexpr_equal(r->hi, e) &&
           (e->kind == LANG_SX_SYM || e->kind == LANG_SX_CONST);
}

/* Layer l's epilogue ops on acc, then into the next activation buffer (or
 * Y for the last layer). 0 when a body is not one the blocks lower. */
static int cm_epilogue(sched_blk *kb, cm *c, int l, tile_value *acc)
{
    const graph_gemm_chain *ch = c->ch;
    const graph *g = c->g;
    sched_blk_tile T = {.kb = kb, .tc = ch->h[l], .cur = acc, .rows = c->bm, .cols = CM_BN,
                        .threads = 32 * c->wm * CM_WN, .lay = c->lc, .nb = 0, .vm = 0, .vn = 1,
                        .origin = cm_origin, .covers = cm_covers, .ctx = c};
    for (int i = ch->layer[l] + 1; i < ch->layer[l + 1]; i++) {
        sched_blk_val v;
        if (!g->ops[i].operands[0].identity || !sched_blk_body(&T, &g->ops[i], g->ops[i].body, &v)) return 0;
        T.cur = sched_blk_as_tile(&T, v);
    }
    tile_value *x = T.cur;
    const lang_tensor *H = c->def->tensors[ch->h[l]];
    if (l + 1 == ch->nlayers) {
        tile_value *Y = sched_blk_tensor(kb, ch->h[l]);
        if (H->dtype != TSL_DTYPE_F32) x = sched_blk_cast(kb, "c_out", x, sched_blk_tile_type(&T, H->dtype));
        tile_expr *at[2] = {cm_origin(c, 0), cm_origin(c, 1)};
        sched_blk_store_global(kb, x, sched_blk_at(kb, Y, 2, at));
        return 1;
    }
    /* columns past the width as 0: the next layer's last k step reads them
     * (its weights' padding is 0, but 0 x inf is not) */
    tile_type it = sched_blk_tile_type(&T, TSL_DTYPE_I64);
    tile_operand off = tile_operand_scalar(cm_origin(c, 1));
    tile_stmt *s = sched_blk_op(kb, TILE_I_IOTA, "c_ci", 1, &off, &it, NULL);
    s->instr.dim = 1;
    tile_operand wd = tile_operand_scalar(sched_blk_extent(kb, H->shape[1]));
    tile_value *live = sched_blk_ew(kb, TILE_I_LT, "c_live", tile_operand_tensor(s->instr.result), &wd);
    tile_operand sel[3] = {tile_operand_tensor(live), tile_operand_tensor(x),
                           tile_operand_scalar(sched_blk_float(kb, 0.0, "0.0"))};
    x = sched_blk_op(kb, TILE_I_SELECT, "c_hz", 3, sel, NULL, NULL)->instr.result;
    x = sched_blk_cast(kb, "c_h", x, sched_blk_tile_type(&T, c->in));
    tile_expr *at[2] = {I_(0), cm_origin(c, 1)};
    tile_operand a = tile_operand_tensor(x), dst = sched_blk_at(kb, c->hb[l % 2], 2, at);
    sched_blk_op(kb, TILE_I_STORE_SHARED, NULL, 1, &a, NULL, &dst);
    return 1;
}

/* The kernel (sched_blk_fn). */
static int cm_build(sched_blk *kb, void *ctx)
{
    cm *c = ctx;
    const graph_gemm_chain *ch = c->ch;
    c->kb = kb;
    const lang_tensor *X = c->def->tensors[ch->x];
    int threads = 32 * c->wm * CM_WN, esz = 2;
    int64_t smem = (int64_t)esz * (2 * c->bm * (c->hs + CM_PAD) + 2 * CM_BN * (CM_BK + CM_PAD) + 2 * c->bm * (CM_BK + CM_PAD));
    tile_expr *grid = B_(CDIV), sched_blk_extent(kb, X->shape[0]), I_(c->bm));
    sched_blk_grid(kb, 1, &grid, threads, smem);
    /* the ring: [2, BN, BK] (W stored (o, i)) or [2, BK, BN], rows padded
     * by 16 bytes (ldmatrix's 8 rows in 8 bank groups) */
    int64_t wr = c->wtrans ? CM_BN : CM_BK, wc = c->wtrans ? CM_BK : CM_BN;
    int64_t wd[3] = {2, wr, wc}, xd[3] = {2, c->bm, CM_BK};
    c->ws = sched_blk_alloc(kb, "c_ws",
                            sched_blk_type(kb, TILE_SHARED, c->in, 3, wd,
                                           sched_blk_layout(kb, "(2, %lld, %lld):(%lld, %lld, 1)", (long long)wr,
                                                            (long long)wc, (long long)(wr * (wc + CM_PAD)),
                                                            (long long)(wc + CM_PAD))),
                            NULL);
    c->xs = sched_blk_alloc(kb, "c_xs",
                            sched_blk_type(kb, TILE_SHARED, c->in, 3, xd,
                                           sched_blk_layout(kb, "(2, %d, %d):(%d, %d, 1)", c->bm, CM_BK,
                                                            c->bm * (CM_BK + CM_PAD), CM_BK + CM_PAD)),
                            NULL);
    for (int i = 0; i < 2; i++)
        c->hb[i] = sched_blk_alloc(kb, i ? "c_hb1" : "c_hb0",
                                   sched_blk_type2(kb, TILE_SHARED, c->in, c->bm, c->hs,
                                                   sched_blk_layout(kb, "(%d, %d):(%d, 1)", c->bm, c->hs, c->hs + CM_PAD)),
                                   sched_blk_float(kb, 0.0, "0.0"));
    /* the first step's copies */
    cm_issue(kb, c, 0, I_(0), I_(0), I_(0));
    sched_blk_op(kb, TILE_I_COMMIT, NULL, 0, NULL, NULL, NULL);
    c->j = sched_blk_var(kb, "c_j", I_(0));
    for (int l = 0; l < ch->nlayers; l++) {
        char nn[16], kn[16];
        snprintf(nn, sizeof nn, "c_n%d", l);
        snprintf(kn, sizeof kn, "c_k%d", l);
        char ntn[16], ktn[16];
        snprintf(ntn, sizeof ntn, "c_nt%d", l);
        snprintf(ktn, sizeof ktn, "c_kt%d", l);
        tile_value *nt = sched_blk_let(kb, ntn, cm_ntiles(kb, c, l));
        tile_value *kt = sched_blk_let(kb, ktn, cm_ksteps(kb, c, l));
        tile_stmt *fn = sched_blk_for(kb, nn, I_(0), V_(nt), NULL);
        c->n = fn->v;
        tile_value *acc = sched_blk_alloc(kb, "c_acc", cm_reg(kb, TSL_DTYPE_F32, c->bm, CM_BN, c->lc),
                                          sched_blk_float(kb, 0.0, "0.0"));
        tile_stmt *fk = sched_blk_for(kb, kn, I_(0), V_(kt), NULL);
        tile_expr *k = V_(fk->v);
        /* this step's copies landed; every warp is past the last step's
         * reads of the stage the next copies overwrite */
        tile_operand w0 = tile_operand_scalar(I_(0));
        sched_blk_op(kb, TILE_I_WAIT, NULL, 1, &w0, NULL, NULL);
        sched_blk_sync(kb);
        tile_value *s = sched_blk_let(kb, "c_s", B_(MOD), V_(c->j), I_(2)));
        tile_value *s1 = sched_blk_let(kb, "c_s1", B_(SUB), I_(1), V_(s)));
        /* the next step: this tile's next k or the next tile's first (one
         * copy site: the copies' code is most of a layer's), else the next
         * layer's first */
        tile_value *q = sched_blk_let(kb, "c_q", B_(ADD), B_(MUL), V_(c->n), V_(kt)), B_(ADD), k, I_(1))));
        sched_blk_if(kb, B_(LT), V_(q), B_(MUL), V_(nt), V_(kt))));
        cm_issue(kb, c, l, B_(DIV), V_(q), V_(kt)), B_(MOD), V_(q), V_(kt)), V_(s1));
        sched_blk_end(kb);
        if (l + 1 < ch->nlayers) {
            sched_blk_if(kb, B_(EQ), V_(q), B_(MUL), V_(nt), V_(kt))));
            cm_issue(kb, c, l + 1, I_(0), I_(0), V_(s1));
            sched_blk_end(kb);
        }
        sched_blk_op(kb, TILE_I_COMMIT, NULL, 0, NULL, NULL, NULL);
        cm_step(kb, c, l, k, V_(s), acc);
        sched_blk_set(kb, c->j, B_(ADD), V_(c->j), I_(1)));
        sched_blk_end(kb);
        if (!cm_epilogue(kb, c, l, acc)) return 0;
        sched_blk_end(kb);
    }
    return 1;
}

int sched_chain_mma(sched_plan *p, const graph *g, const graph_group *grp, const graph_gemm_chain *ch,
                    const sched_guard *guard, int hmax)
{
    const lang_def *def = g->def;
    cm c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.def = def;
    c.ch = ch;
    c.in = def->tensors[ch->x]->dtype;
    c.wtrans = ch->wtrans[0];
    if (c.in != TSL_DTYPE_F16 && c.in != TSL_DTYPE_BF16) return 0;
    for (int l = 0; l < ch->nlayers; l++) {
        if (def->tensors[ch->w[l]]->dtype != c.in || ch->wtrans[l] != c.wtrans) return 0;
        if (l + 1 < ch->nlayers && def->tensors[ch->h[l]]->dtype != c.in) return 0;
    }
    c.hs = (hmax + CM_BN - 1) / CM_BN * CM_BN;
    c.bm = p->opt->chain_bm == 32 ? 32 : 64;
    c.wm = c.bm / 32;
    sched_blk_gemm gm = {.bm = c.bm, .bn = CM_BN, .bk = 16, .wm = c.wm, .wn = CM_WN};
    sched_blk_mma_layouts(&gm, c.la, c.lat, c.lb, c.lbt, c.lc, sizeof c.la);
    const char *kname = arena_printf(p->m->arena, "%s_g%d_gemmchain", def->name, grp->index);
    sched_blk kb;
    tile_kernel *k = sched_blk_build(&kb, p, def, kname, cm_build, &c);
    if (!k) return 0;
    sched_blk_add(&kb, k, grp->first, grp->nops, guard && guard->n ? guard : NULL);
    return 1;
}
