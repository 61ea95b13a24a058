/* attn_sm90.c — the sm_90a flash-attention kernel (docs/sched.md,
 * "Attention on Hopper"), written as tile IR text from its shape
 * (attn_sm90.h). The hand-written original is
 * examples/tile/flash_attn_wgmma.tile; this is that program for any batch
 * rank, head dims 64, 128, 192 and 256, f16 and bf16, with or without a
 * causal mask.
 *
 * A block takes BM = 128 query rows of one batch entry and runs three
 * warpgroups. The producer loads the block's Q once and streams K and V
 * blocks of BN rows (attn_shape_of: 128, or 64 past head dim 128) through
 * rings of two or three stages with TMA, one ring for K and one for V
 * (the full barriers count the bytes, the empty barriers the two
 * consumers' releases). Each consumer owns 64 query rows. Per K/V block j it issues
 * S_j = Q K_j^T (K read K-major through a transposed view of its stage)
 * and, behind it, O += P_{j-1} V_{j-1}; once S_j is in, it runs the
 * online softmax of S_j while the second product runs on the tensor
 * cores (FlashAttention-3's intra-warpgroup overlap): the columns past Tk
 * (and, causal, past the row) are set to -inf on the blocks that have
 * any; the running row max m and sum l are rescaled by 2^(m_old - m_new)
 * (m in base 2: softmax below), and so is O once its product is done.
 * P = 2^(S c - m) is rounded to the
 * input dtype and reinterpreted as wgmma's register A operand (the
 * accumulator and A fragments hold a thread's elements in the same
 * order), so P never leaves registers. A causal block stops streaming at
 * its diagonal block, and block_idx.x counts the query blocks from the
 * last (the heaviest) down, so that the grid ends on the lightest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "base/base.h"
#include "sched/attention.h"
#include "sched/attn_sm90.h"
#include "sched/tiletext.h"

/* BM query rows a block; SMEM the dynamic shared memory a block may take
 * (sm_90's 227 KB less a KB for the barriers and alignment). */
enum { BM = 128, SMEM = 232448 - 1024, MAX_STAGES = 3 };

#define ACC(n) "spatial(4,1).local(1," n ").local(2,1).spatial(8,4).local(1,2)"
#define ROWS "spatial(4,1).local(2,1).spatial(8,1).replicate(4)"
#define AREG(n) "spatial(4,1).local(1," n ").column_local(2,2).spatial(8,4).local(1,2)"

/* The kernel's shape for a pair of head dims: BN K/V rows a block and the
 * stages of each ring. A consumer thread holds O (e/2 f32 registers), S
 * (BN/2) and P (BN/4): BN = 128 while e <= 128 (160 of its 240 registers
 * at e = 128); past that a->bn_wide, 64 (176 at e = 256) or 80 (188;
 * FlashAttention-3's choice: fewer shared bytes a flop in S = Q K^T).
 * Then as many stages (2 or 3) as shared memory holds beside Q:
 * d = e = 128 gets 3 of 128 rows (224 KB), d = e = 256 2 of 64 (192 KB)
 * or of 80 (224 KB). */
typedef struct attn_shape {
    int bn, stages;
    int ostage; /* O leaves through a shared tile and a TMA store */
} attn_shape;

static int attn_shape_of(const sched_attn_sm90 *a, attn_shape *sh)
{
    int d = a->d, e = a->e;
    const int wide[2] = {a->bn_wide == 80 ? 80 : 64, 64}, narrow[2] = {128, 64};
    for (int i = 0; i < 2; i++) {
        int bn = e <= 128 ? narrow[i] : wide[i];
        int st = (SMEM - BM * d * 2) / (bn * (d + e) * 2);
        if (st >= 2) {
            sh->bn = bn, sh->stages = st < MAX_STAGES ? st : MAX_STAGES;
            /* O through shared memory (a 64 x e tile a consumer) where that
             * costs no stage: d = e = 64. Each warp's direct stores write
             * 16 of a sector's 32 bytes, half the sectors wasted, and the
             * consumers wait on them; the TMA store leaves in the
             * background (BERT's shape: ncu counted 786432 excess sectors
             * of 1572864) */
            sh->ostage = (SMEM - BM * d * 2 - BM * e * 2) / (bn * (d + e) * 2) >= sh->stages;
            return 1;
        }
    }
    return 0;
}

/* the batch entries: the product of the leading dims */
#define NBATCH(nb) ((nb) == 0 ? "1" : (nb) == 1 ? "B0" : "(B0 * B1)")

static int head_dim_ok(int x) { return x > 0 && x <= 256 && x % 64 == 0; }

int sched_attn_sm90_fits(const sched_attn_sm90 *a, const char **why)
{
    const char *w = NULL;
    attn_shape sh = {0, 0, 0};
    if (a->nbatch < 0 || a->nbatch > 2) w = "more than two batch dims";
    else if (!head_dim_ok(a->d) || !head_dim_ok(a->e)) w = "head dims other than 64, 128, 192 and 256";
    else if (a->bn_wide != 0 && a->bn_wide != 64 && a->bn_wide != 80)
        w = "K/V blocks past head dim 128 other than 64 or 80 rows";
    else if (!attn_shape_of(a, &sh)) w = "head dims whose K/V ring does not fit in shared memory";
    else if (a->dt != TSL_DTYPE_F16 && a->dt != TSL_DTYPE_BF16) w = "inputs that are not f16 or bf16";
    else if (!a->scale || !*a->scale) w = "no scale";
    if (why) *why = w;
    return w == NULL;
}

/* The data layout of a [lead..., rows, cols] shared block whose rows are
 * cut into 64-element (128-byte) chunks, each chunk a swizzled 64-wide
 * block of all rows (TMA writes one box per chunk). */
static void rowmajor(strbuf *b, int stages, int rows, int cols)
{
    int c = cols / 64;
    sb_puts(b, "swizzle(3,3,3,(");
    if (stages) sb_printf(b, "%d,", stages);
    if (c == 1) sb_printf(b, "%d,64):(", rows);
    else sb_printf(b, "%d,(64,%d)):(", rows, c);
    if (stages) sb_printf(b, "%d,", rows * cols);
    if (c == 1) sb_puts(b, "64,1))");
    else sb_printf(b, "64,(1,%d)))", rows * 64);
}

/* The same bytes seen transposed: [stages, cols, rows] (K^T as wgmma's
 * K-major B operand). */
static void transposed(strbuf *b, int stages, int rows, int cols)
{
    int c = cols / 64;
    sb_printf(b, "swizzle(3,3,3,(%d,", stages);
    if (c == 1) sb_printf(b, "64,%d):(%d,1,64))", rows, rows * cols);
    else sb_printf(b, "(64,%d),%d):(%d,(1,%d),64))", c, rows, rows * cols, rows * 64);
}

/* Whether the scale is a positive literal: then the row max is taken
 * over the unscaled scores (max(x) * c = max(x * c)) and the scale is
 * folded into the FFMA that subtracts the max (below). */
static int scale_positive(const sched_attn_sm90 *a)
{
    char *end;
    double s = strtod(a->scale, &end);
    return end != a->scale && *end == 0 && s > 0;
}

/* The online softmax of S block J held in accumulator X (names suffixed
 * with sfx), in base 2: m holds the running max of x * scale * log2(e),
 * and P = 2^(x * c - m) with c = scale * log2(e) (a positive literal
 * scale) or 2^(x' * log2(e) - m) with x' = x * scale (any other, scaled
 * first: its sign may flip the max), one FFMA and one MUFU.EX2 an
 * element, where exp(x * scale - m) took an FMUL by the scale, an FADD
 * (or FFMA) and an FMUL by log2(e) inside ex2. The columns past Tk and
 * (causal) past the row are set to -inf on the blocks that have any;
 * the running sum l is updated, and alpha<sfx> = 2^(m_old - m_new) left
 * for the output's rescale. */
static void softmax(strbuf *b, const sched_attn_sm90 *a, int bn, const char *x, const char *j, const char *sfx,
                    const char *in)
{
    int late = scale_positive(a);
    char c[64];
    if (late) snprintf(c, sizeof c, "%.17g", strtod(a->scale, NULL) * M_LOG2E);
    else snprintf(c, sizeof c, "%.17g", M_LOG2E);
    if (!late) sb_printf(b, "%smul %s, %s -> %s\n", in, x, a->scale, x);
    sb_printf(b,
              "%sif (%s + 1) * %d > Tk {\n"
              "%s  col%s = iota %s * %d -> register i32[64, %d] layout " ACC("%d") " dim 1\n"
              "%s  ok%s = lt col%s, Tk\n"
              "%s  select ok%s, %s, -inf -> %s\n"
              "%s}\n",
              in, j, bn, in, sfx, j, bn, bn, bn / 8, in, sfx, sfx, in, sfx, x, x, in);
    if (a->causal)
        sb_printf(b,
                  "%sif %s * %d + %d > qb * %d + wg * 64 {\n"
                  "%s  cc%s = iota %s * %d -> register i32[64, %d] layout " ACC("%d") " dim 1\n"
                  "%s  rr%s = iota qb * %d + wg * 64 -> register i32[64, %d] layout " ACC("%d") " dim 0\n"
                  "%s  keep%s = le cc%s, rr%s\n"
                  "%s  select keep%s, %s, -inf -> %s\n"
                  "%s}\n",
                  in, j, bn, bn - 1, BM, in, sfx, j, bn, bn, bn / 8, in, sfx, BM, bn, bn / 8, in, sfx, sfx, sfx, in,
                  sfx, x, x, in);
    sb_printf(b,
              "%smx%s = reduce.max %s -> register f32[64, 1] layout " ROWS " dim 1\n"
              "%smul mx%s, %s -> mx%s\n"
              "%smn%s = max m, mx%s\n"
              "%sdm%s = sub m, mn%s\n"
              "%salpha%s = exp2.approx dm%s\n"
              "%snm%s = neg mn%s\n"
              "%smb%s = broadcast nm%s -> register f32[64, %d] layout " ACC("%d") " dim 1\n"
              "%sfma %s, %s, mb%s -> %s\n"
              "%sexp2.approx %s -> %s\n"
              "%srs%s = reduce.sum %s -> register f32[64, 1] layout " ROWS " dim 1\n"
              "%smul l, alpha%s -> l\n"
              "%sadd l, rs%s -> l\n"
              "%scopy mn%s -> m\n",
              in, sfx, x, in, sfx, c, sfx, in, sfx, sfx, in, sfx, sfx, in, sfx, sfx, in, sfx, sfx, in, sfx, sfx, bn,
              bn / 8, in, x, c, sfx, x, in, x, x, in, sfx, x, in, sfx, in, sfx, in, sfx);
}

/* Consumer wg's t-th issue of its products (the text wgmmas: each wgmma
 * and its commit), behind a fence. Ping-pong (a->pingpong;
 * FlashAttention-3's inter-warpgroup schedule): the consumers issue their
 * products in turns, so that one's softmax runs while the other's
 * products keep the tensor cores busy. Consumer wg's
 * t-th issue (t = 0 the first S, t = j the loop's, t = nb the last P V)
 * waits until the other's (t - 1 + wg)-th one has passed it the turn:
 * barrier turn[wg] completes a phase at each of the other's passes, and a
 * fresh barrier's parity-1 wait returns at once, so consumer 0 starts. */
static void issue(strbuf *b, const sched_attn_sm90 *a, const char *t, const char *wgmmas)
{
    if (a->pingpong) sb_printf(b, "        mbar_wait turn[wg], (%s + 1 + wg) %% 2\n", t);
    sb_printf(b, "        wgmma_fence\n%s", wgmmas);
    if (a->pingpong) sb_puts(b, "        mbar_arrive turn[1 - wg]\n");
}

/* The block's tile: qb, its query block, and the batch indices the
 * tensors' leading dims take (bat, "" without batch dims). One tile a
 * block: from the grid. Persistent (a->persistent): from the tile number
 * t, which runs over every (query block, batch entry) pair. Causal: the
 * heaviest query blocks first (as FlashAttention-3), so that the last
 * tiles the grid takes are the lightest rather than the longest. */
static void tile_of(strbuf *b, const sched_attn_sm90 *a, const char *in)
{
    int nb = a->nbatch;
    if (!a->persistent) {
        if (a->causal) sb_printf(b, "%slet qb = cdiv(Tq, %d) - 1 - block_idx.x\n", in, BM);
        else sb_printf(b, "%slet qb = block_idx.x\n", in);
        if (nb >= 1) sb_printf(b, "%slet b0 = block_idx.%s\n", in, nb == 2 ? "z" : "y");
        if (nb == 2) sb_printf(b, "%slet b1 = block_idx.y\n", in);
        return;
    }
    /* non-causal: a batch entry's query blocks side by side, so that the
     * blocks running together share its K and V in L2 */
    if (!a->causal) sb_printf(b, "%slet qb = t %% cdiv(Tq, %d)\n%slet bt = t / cdiv(Tq, %d)\n", in, BM, in, BM);
    else /* causal: the tiles in groups of hg batch entries (about a grid's
          * tiles, their K and V in L2 together), a group's query blocks
          * heaviest first, each of its entries in turn; block c takes the
          * c-th tile of each round of G, the c-th from the end every
          * other whole round (a snake), so that the blocks' sums of
          * lengths even out as a sorted deal's would */
        sb_printf(b,
                  "%slet nq = cdiv(Tq, %d)\n"
                  "%slet rr = t / G\n"
                  "%slet flip = rr %% 2 * min(1, NT / ((rr + 1) * G))\n"
                  "%slet u = t + flip * (G - 1 - 2 * block_idx.x)\n"
                  "%slet hg = max(1, G / nq)\n"
                  "%slet gi = u / (hg * nq)\n"
                  "%slet hc = min(hg, %s - gi * hg)\n"
                  "%slet w = u - gi * hg * nq\n"
                  "%slet qb = nq - 1 - w / hc\n"
                  "%slet bt = gi * hg + w %% hc\n",
                  in, BM, in, in, in, in, in, in, NBATCH(nb), in, in, in);
    if (nb == 1) sb_printf(b, "%slet b0 = bt\n", in);
    if (nb == 2) sb_printf(b, "%slet b0 = bt / B1\n%slet b1 = bt %% B1\n", in, in);
}

char *sched_attn_sm90_text(const sched_attn_sm90 *a, const char *kname)
{
    if (!sched_attn_sm90_fits(a, NULL)) return NULL;
    attn_shape sh = {0, 0, 0};
    attn_shape_of(a, &sh);
    const int BN = sh.bn, ST = sh.stages, P = a->persistent;
    const char *ty = a->dt == TSL_DTYPE_BF16 ? "bf16" : "f16";
    int d = a->d, e = a->e, nb = a->nbatch;
    static const char *const lead[] = {"", "B0, ", "B0, B1, "};
    static const char *const at[] = {"", "b0, ", "b0, b1, "};
    static const char *const grid[] = {"", ", B0", ", B1, B0"};
    int param = !((a->scale[0] >= '0' && a->scale[0] <= '9') || a->scale[0] == '.' || a->scale[0] == '-');
    strbuf b = {0};
    sb_printf(&b,
              "kernel %s(Q: global %s[%sTq, %d], K: global %s[%sTk, %d], V: global %s[%sTk, %d], "
              "O: global %s[%sTq, %d]",
              kname, ty, lead[nb], d, ty, lead[nb], d, ty, lead[nb], e, ty, lead[nb], e);
    if (param) sb_printf(&b, ", %s: f32", a->scale);
    char ntiles[64];
    snprintf(ntiles, sizeof ntiles, "cdiv(Tq, %d) * %s", BM, NBATCH(nb));
    if (P) sb_printf(&b, ", c_nsm: int) grid(min(%s, c_nsm)) threads(384) smem_budget(232448) {\n", ntiles);
    else sb_printf(&b, ") grid(cdiv(Tq, %d)%s) threads(384) smem_budget(232448) {\n", BM, grid[nb]);
    sb_printf(&b, "  qs = alloc shared %s[%d, %d] layout ", ty, BM, d);
    rowmajor(&b, 0, BM, d);
    sb_printf(&b, "\n  ks = alloc shared %s[%d, %d, %d] layout ", ty, ST, BN, d);
    rowmajor(&b, ST, BN, d);
    sb_printf(&b, "\n  kt = view ks -> shared %s[%d, %d, %d] layout ", ty, ST, d, BN);
    transposed(&b, ST, BN, d);
    sb_printf(&b, "\n  vs = alloc shared %s[%d, %d, %d] layout ", ty, ST, BN, e);
    rowmajor(&b, ST, BN, e);
    if (sh.ostage) {
        sb_printf(&b, "\n  os = alloc shared %s[2, 64, %d] layout ", ty, e);
        rowmajor(&b, 2, 64, e);
    }
    /* K and V have rings of their own: K_j's stage is free once S_j is
     * in, V_j's once P_j V_j is, so the producer can load K_{j+2} while
     * the consumers still read V_j (with two stages, one ring for both
     * would hold each load back until a whole block was done).
     * Persistent: qempty counts the consumers' releases of Q, after
     * their last S of a tile, so that the next tile's Q loads while they
     * finish this one (its last P V, its O) */
    sb_printf(&b,
              "\n  qbar = alloc shared u64[1]\n  kfull = alloc shared u64[%d]\n  kempty = alloc shared u64[%d]\n"
              "  vfull = alloc shared u64[%d]\n  vempty = alloc shared u64[%d]\n"
              "  mbar_init qbar, 1\n  mbar_init kfull, 1\n  mbar_init kempty, 2\n"
              "  mbar_init vfull, 1\n  mbar_init vempty, 2\n",
              ST, ST, ST, ST);
    if (P) sb_puts(&b, "  qempty = alloc shared u64[1]\n  mbar_init qempty, 2\n");
    if (a->pingpong) sb_puts(&b, "  turn = alloc shared u64[2]\n  mbar_init turn, 1\n");
    sb_puts(&b, "  sync\n");
    if (!P) tile_of(&b, a, "  ");
    /* the K/V blocks this query block reads: all, or up to its diagonal */
    char nblocks[96];
    if (a->causal) snprintf(nblocks, sizeof nblocks, "min(cdiv(Tk, %d), cdiv((qb + 1) * %d, %d))", BN, BM, BN);
    else snprintf(nblocks, sizeof nblocks, "cdiv(Tk, %d)", BN);
    /* Counters across a block's tiles (constants of one tile without
     * P): it, the K/V blocks streamed before this tile (ring stage and
     * barrier parity of block j are those of it + j); tt, the products
     * issued before it (the ping-pong turns); tc, the tiles before it
     * (Q's barriers). */
    const char *loop = "      let G = min(NT, c_nsm)\n      for t in block_idx.x : NT : G {\n";
    sb_puts(&b, "  warpgroups {\n    role producer(1) regs(24) {\n");
    if (P) {
        sb_printf(&b, "      let NT = %s\n      var it = 0\n      var tc = 0\n%s", ntiles, loop);
        tile_of(&b, a, "      ");
        sb_puts(&b, "      mbar_wait qempty[0], (tc + 1) % 2\n");
    } else {
        sb_puts(&b, "      let it = 0\n");
    }
    sb_printf(&b,
              "      mbar_arrive qbar[0] bytes %d\n"
              "      tma_load Q[%sqb * %d, 0], qbar[0] -> qs\n"
              "      for j in 0 : %s {\n"
              "        let g = it + j\n"
              "        let s = g %% %d\n"
              "        mbar_wait kempty[s], (g / %d + 1) %% 2\n"
              "        mbar_arrive kfull[s] bytes %d\n"
              "        tma_load K[%sj * %d, 0], kfull[s] -> ks[s]\n"
              "        mbar_wait vempty[s], (g / %d + 1) %% 2\n"
              "        mbar_arrive vfull[s] bytes %d\n"
              "        tma_load V[%sj * %d, 0], vfull[s] -> vs[s]\n"
              "      }\n",
              BM * d * 2, at[nb], BM, nblocks, ST, ST, BN * d * 2, at[nb], BN, ST, BN * e * 2, at[nb], BN);
    if (P) sb_printf(&b, "      set it = it + %s\n      set tc = tc + 1\n      }\n", nblocks);
    sb_puts(&b, "    }\n    role consumer(2, wg) regs(240) {\n");
    if (P) {
        sb_printf(&b, "      let NT = %s\n      var it = 0\n      var tt = 0\n      var tc = 0\n%s", ntiles, loop);
        tile_of(&b, a, "      ");
    } else { /* tt only where the ping-pong turns read it (issue) */
        sb_printf(&b, "      let it = 0\n%s      let tc = 0\n", a->pingpong ? "      let tt = 0\n" : "");
    }
    sb_printf(&b,
              "      m = alloc register f32[64, 1] layout " ROWS " init -inf\n"
              "      l = alloc register f32[64, 1] layout " ROWS " init 0.0\n"
              "      o = alloc register f32[64, %d] layout " ACC("%d") " init 0.0\n"
              "      ph = alloc register %s[64, %d] layout " ACC("%d") " init 0.0\n"
              "      let nb = %s\n"
              "      mbar_wait qbar[0], tc %% 2\n",
              e, e / 8, ty, BN, BN / 8, nblocks);
    if (P) sb_puts(&b, "      if nb == 0 {\n        mbar_arrive qempty[0]\n      }\n");
    sb_printf(&b,
              "      if nb > 0 {\n"
              "        let sf = it %% %d\n"
              "        mbar_wait kfull[sf], (it / %d) %% 2\n"
              "        s0 = alloc register f32[64, %d] layout " ACC("%d") " init 0.0\n",
              ST, ST, BN, BN / 8);
    issue(&b, a, "tt",
          "        wgmma qs[wg * 64, 0], kt[sf, 0, 0], s0 -> s0\n"
          "        wgmma_commit\n");
    sb_puts(&b,
            "        wgmma_wait 0\n"
            "        mbar_arrive kempty[sf]\n");
    if (P) sb_puts(&b, "        if nb == 1 {\n          mbar_arrive qempty[0]\n        }\n");
    softmax(&b, a, BN, "s0", "0", "0", "        ");
    sb_printf(&b,
              "        cast s0 -> ph\n"
              "      }\n"
              /* block j's S = Q K_j^T is issued with O += P_{j-1} V_{j-1}
               * behind it: the softmax of S_j runs while the second
               * product does */
              "      for j in 1 : nb {\n"
              "        let g = it + j\n"
              "        let s = g %% %d\n"
              "        let sp = (g + %d) %% %d\n"
              "        mbar_wait kfull[s], (g / %d) %% 2\n"
              "        mbar_wait vfull[sp], ((g - 1) / %d) %% 2\n"
              "        sn = alloc register f32[64, %d] layout " ACC("%d") " init 0.0\n"
              "        pa = view ph -> register %s[64, %d] layout " AREG("%d") "\n",
              ST, ST - 1, ST, ST, ST, BN, BN / 8, ty, BN, BN / 16);
    issue(&b, a, "tt + j",
          "        wgmma qs[wg * 64, 0], kt[s, 0, 0], sn -> sn\n"
          "        wgmma_commit\n"
          "        wgmma pa, vs[sp, 0, 0], o -> o\n"
          "        wgmma_commit\n");
    sb_puts(&b,
            "        wgmma_wait 1\n"
            "        mbar_arrive kempty[s]\n");
    if (P) sb_puts(&b, "        if j + 1 == nb {\n          mbar_arrive qempty[0]\n        }\n");
    softmax(&b, a, BN, "sn", "j", "1", "        ");
    sb_printf(&b,
              "        wgmma_wait 0\n"
              "        mbar_arrive vempty[sp]\n"
              "        ab = broadcast alpha1 -> register f32[64, %d] layout " ACC("%d") " dim 1\n"
              "        mul o, ab -> o\n"
              "        cast sn -> ph\n"
              "      }\n"
              "      if nb > 0 {\n"
              "        let gl = it + nb - 1\n"
              "        let sl = gl %% %d\n"
              "        mbar_wait vfull[sl], (gl / %d) %% 2\n"
              "        pl = view ph -> register %s[64, %d] layout " AREG("%d") "\n",
              e, e / 8, ST, ST, ty, BN, BN / 16);
    issue(&b, a, "tt + nb",
          "        wgmma pl, vs[sl, 0, 0], o -> o\n"
          "        wgmma_commit\n");
    sb_printf(&b,
              "        wgmma_wait 0\n"
              "        mbar_arrive vempty[sl]\n"
              "      }\n"
              /* one reciprocal a row, not an IEEE division an element */
              "      rl = div 1.0, l\n"
              "      lb = broadcast rl -> register f32[64, %d] layout " ACC("%d") " dim 1\n"
              "      mul o, lb -> o\n"
              "      res = cast o -> register %s[64, %d] layout " ACC("%d") "\n",
              e, e / 8, ty, e, e / 8);
    /* the last tile's TMA store has read os[wg]: then write it, make the
     * writes visible to the copy engine, store (rows past Tq are not
     * written) */
    if (sh.ostage)
        sb_printf(&b,
                  "      bulk_wait 0\n"
                  "      store_shared res -> os[wg, 0, 0]\n"
                  "      fence_async\n"
                  "      sync\n"
                  "      tma_store os[wg] -> O[%sqb * %d + wg * 64, 0]\n"
                  "      bulk_commit\n",
                  at[nb], BM);
    else sb_printf(&b, "      store_global res -> O[%sqb * %d + wg * 64, 0]\n", at[nb], BM);
    /* a tile without K/V blocks issues no products */
    if (P) sb_puts(&b, "      set it = it + nb\n      set tt = tt + nb + min(nb, 1)\n      set tc = tc + 1\n      }\n");
    if (sh.ostage) sb_puts(&b, "      bulk_wait 0\n");
    sb_puts(&b, "    }\n  }\n}\n");
    return sb_take(&b);
}

/* ---- the plan: the attention strategy's sm_90a launches ----------------------------------- */

/* The head dims a size symbol gets kernels for. The plan compiles every
 * kernel it lists, so the common dims only (9 pairs, not 16): a constant
 * head dim may also be 192, and a symbol bound to 192 at run time takes
 * the tile plan. */
enum { NHEAD = 3 };
static const int head_vals[NHEAD] = {64, 128, 256};

/* Head dim x (a size of the def): the values a kernel is written for that
 * x can take; *sym its size symbol when it is one, else -1. 0 when it is
 * neither a constant nor a plain size symbol. */
static int head_dims(const lang_sexpr *x, int vals[NHEAD], int *sym)
{
    *sym = -1;
    if (x->kind == LANG_SX_CONST) {
        if (x->value < 0 || x->value > 256 || !head_dim_ok((int)x->value)) return 0;
        vals[0] = (int)x->value;
        return 1;
    }
    if (x->kind != LANG_SX_SYM) return 0;
    *sym = x->sym;
    memcpy(vals, head_vals, sizeof head_vals);
    return NHEAD;
}

static void guard_eq(sched_guard *g, int sym, int v)
{
    if (sym < 0) return;
    g->sym[g->n] = sym, g->op[g->n] = SCHED_GUARD_LE, g->val[g->n++] = v;
    g->sym[g->n] = sym, g->op[g->n] = SCHED_GUARD_GT, g->val[g->n++] = v - 1;
}

/* sym one of head_vals: sym % 64 == 0 && 0 < sym <= 256 && sym != 192 */
static void guard_in(sched_guard *g, int sym)
{
    if (sym < 0) return;
    g->sym[g->n] = sym, g->op[g->n] = SCHED_GUARD_MOD, g->val[g->n++] = 64;
    g->sym[g->n] = sym, g->op[g->n] = SCHED_GUARD_GT, g->val[g->n++] = 0;
    g->sym[g->n] = sym, g->op[g->n] = SCHED_GUARD_LE, g->val[g->n++] = 256;
    g->sym[g->n] = sym, g->op[g->n] = SCHED_GUARD_NE, g->val[g->n++] = 192;
}

/* Where the persistent grid pays: K/V of at most PERSIST_TK rows (BERT's
 * 384: 264.8 against 222.6 TFLOP/s, H200 2026-11-29), a few blocks a tile,
 * so that a cold start each tile was a large part of it. At 4096 rows it
 * lost (D128 542 against 558; causal 404 against 502: the tiles, dealt
 * round-robin, are of unequal length). */
enum { PERSIST_TK = 1024 };

/* The forms of the kernel for shape a under the option
 * attention.sm90.persistent: 0, a block a query block; 2, persistent; 1,
 * both, each under a guard on Tk. Past e = 128 O's registers leave no
 * room for the loop's (76 spilled at d = e = 256). */
static int persistent_for(int opt, const sched_attn_sm90 *a)
{
    if (!opt || a->e > 128) return 0;
    if (opt == 2) return 2;
    return a->causal ? 0 : 1;
}

/* Whether the consumers take turns under attention.sm90.pingpong for
 * head dim e: 2 (the default) takes them past e = 64. At d = e = 64 (BERT,
 * S 384) the turns cost more than they overlap: H200, 2026-11-30, 4
 * alternating rounds of gpu_bench, 275.2 / 288.2 / 273.8 / 274.5 TFLOP/s
 * with them against 295.3 / 289.0 / 279.8 / 294.6 without. */
static int pingpong_for(int opt, int e) { return opt == 2 ? e > 64 : opt; }

/* The launch of the kernel for shape sh under guard g (its arguments: Q, K,
 * V, O, the scale when a parameter, the SM count when persistent). */
static int push_launch(sched_plan *p, const sched_attn *a, const sched_attn_sm90 *sh, const sched_guard *g,
                       const int ts[4])
{
    tsl_arena *ar = p->m->arena;
    const lang_def *def = a->g->def;
    const char *kname = arena_printf(ar, "%s_g%d_attention_sm90_d%d_e%d%s", def->name, a->grp->index, sh->d, sh->e,
                                     sh->persistent ? "_p" : "");
    char *text = sched_attn_sm90_text(sh, kname);
    tile_kernel *k = text ? tt_parse_kernel(p, text, kname, "attention sm_90a") : NULL;
    if (!k) return 0;
    ARENA_PUSH(ar, p->m->kernels, p->m->nkernels, p->m->capkernels, k);
    sched_launch ln = {.k = k, .stmt = a->grp->first, .nstmts = a->grp->nops, .guard = *g};
    ARENA_PUSH(ar, p->launches, p->nlaunches, p->caplaunches, ln);
    sched_launch *l = &p->launches[p->nlaunches - 1];
    for (int t = 0; t < 4; t++) {
        sched_arg arg = {.name = k->params[t]->name, .kind = SCHED_ARG_TENSOR, .tensor = ts[t]};
        ARENA_PUSH(ar, l->args, l->nargs, l->capargs, arg);
    }
    if (a->scale_scalar >= 0) {
        sched_arg arg = {.name = k->params[4]->name, .kind = SCHED_ARG_SCALAR, .tensor = a->scale_scalar};
        ARENA_PUSH(ar, l->args, l->nargs, l->capargs, arg);
    }
    if (sh->persistent) {
        sched_arg arg = {.name = k->params[k->nparams - 1]->name, .kind = SCHED_ARG_SMS};
        ARENA_PUSH(ar, l->args, l->nargs, l->capargs, arg);
    }
    TSL_ASSERT(l->nargs == k->nparams);
    return 1;
}

int sched_attn_plan_sm90(sched_plan *p, const sched_attn *a, sched_guard *rest)
{
    const lang_def *def = a->g->def;
    memset(rest, 0, sizeof *rest);
    if (!a->simple) return 0;
    /* the kernel drops a masked column exactly (-inf); a TC mask value is
     * the same only when it is far below any score (f16/bf16 inputs) */
    if (a->mask == SCHED_ATTN_MASK_CAUSAL && (a->causal_off != 0 || !(a->mask_fill <= -1e30))) {
        sched_note(p, "attention sm_90a: only j <= i masks with a fill <= -1e30");
        return 0;
    }
    if (a->mask != SCHED_ATTN_MASK_NONE && a->mask != SCHED_ATTN_MASK_CAUSAL) {
        sched_note(p, "attention sm_90a: mask tensors are not written yet");
        return 0;
    }
    tsl_dtype dt = a->dq;
    if ((dt != TSL_DTYPE_F16 && dt != TSL_DTYPE_BF16) || a->dk != dt || a->dv != dt || a->dout != dt) return 0;
    const int ts[4] = {a->at.q, a->at.k, a->at.v, a->at.o};
    for (int i = 0; i < 4; i++)
        if (def->tensors[ts[i]]->rank != a->nb + 2) return 0;
    int dv[NHEAD], ev[NHEAD], ds, es;
    int nd = head_dims(a->d, dv, &ds), ne = head_dims(a->e, ev, &es);
    if (!nd || !ne) return 0;
    /* a scale by 1/sqrt(size) is a constant once the head dims are fixed */
    if (a->scale_rsqrt_size >= 0 && a->scale_rsqrt_size != ds && a->scale_rsqrt_size != es) return 0;
    if (a->scale_scalar >= 0 && (a->scale != 1 || a->scale_rsqrt_size >= 0)) return 0;
    int before = p->nlaunches, kbefore = p->m->nkernels;
    for (int i = 0; i < nd; i++)
        for (int j = 0; j < ne; j++) {
            sched_guard g = {0};
            char scale[64];
            if (a->scale_scalar >= 0) snprintf(scale, sizeof scale, "a_scale");
            else {
                double s = a->scale;
                if (a->scale_rsqrt_size >= 0) s /= sqrt((double)(a->scale_rsqrt_size == ds ? dv[i] : ev[j]));
                snprintf(scale, sizeof scale, "%.17g", s);
                if (!strchr("0123456789-.", scale[0])) goto fail; /* inf, nan */
            }
            sched_attn_sm90 sh = {a->nb, dv[i], ev[j], dt, a->mask == SCHED_ATTN_MASK_CAUSAL, scale,
                                  p->opt->attn_bn_wide, pingpong_for(p->opt->attn_pingpong, ev[j]), 0};
            guard_eq(&g, ds, dv[i]);
            guard_eq(&g, es, ev[j]);
            /* the persistent form (persistent_for) under Tk <= PERSIST_TK,
             * the other past it; one of them when Tk is a constant */
            int form = persistent_for(p->opt->attn_persistent, &sh);
            const lang_sexpr *tk = def->tensors[a->at.k]->shape[a->nb];
            if (form == 1 && tk->kind == LANG_SX_CONST) form = tk->value <= PERSIST_TK ? 2 : 0;
            if (form == 1 && tk->kind != LANG_SX_SYM) form = 0;
            for (int pers = form == 0 ? 0 : 1; pers >= (form == 2 ? 1 : 0); pers--) {
                sched_guard gk = g;
                if (form == 1) {
                    gk.sym[gk.n] = tk->sym, gk.op[gk.n] = pers ? SCHED_GUARD_LE : SCHED_GUARD_GT;
                    gk.val[gk.n++] = PERSIST_TK;
                }
                sh.persistent = pers;
                if (!push_launch(p, a, &sh, &gk, ts)) goto fail;
            }
        }
    /* the sizes no kernel here takes: d or e outside head_vals */
    guard_in(rest, ds);
    guard_in(rest, es);
    sched_guard_negate(rest);
    return 1;
fail:
    p->nlaunches = before;
    p->m->nkernels = kbefore;
    return 0;
}
