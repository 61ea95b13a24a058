/* attn_sm90.c — the sm_90a flash-attention kernel (docs/sched.md,
 * "Attention on Hopper"), written as tile IR text from its shape
 * (attn_sm90.h). The hand-written original is
 * examples/tile/flash_attn_wgmma.tile; this is that program for any batch
 * rank, head dims 64 and 128, f16 and bf16, with or without a causal mask.
 *
 * A block takes BM = 128 query rows of one batch entry and runs three
 * warpgroups. The producer loads the block's Q once and streams K and V
 * blocks of BN = 128 rows through a ring of two stages with TMA (the full
 * barrier counts the bytes, the empty barrier the two consumers'
 * releases). Each consumer owns 64 query rows: per K/V block it computes
 * S = Q K^T with wgmma (K read K-major through a transposed view of its
 * stage), drops the columns past Tk (and, causal, past the row) on the
 * blocks that have any, and runs the online softmax: the running row max
 * m and sum l, and the output accumulator, are rescaled by exp(m_old -
 * m_new). P = exp(S - m) is rounded to the input dtype and reinterpreted as
 * wgmma's register A operand (the accumulator and A fragments hold a
 * thread's elements in the same order), so O += P V never leaves
 * registers. A causal block stops streaming at its diagonal block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "sched/attn_sm90.h"

enum { BM = 128, BN = 128, STAGES = 2 };

#define ACC(n) "spatial(4,1).local(1," n ").local(2,1).spatial(8,4).local(1,2)"
#define ROWS "spatial(4,1).local(2,1).spatial(8,1).replicate(4)"

int sched_attn_sm90_fits(const sched_attn_sm90 *a, const char **why)
{
    const char *w = NULL;
    if (a->nbatch < 0 || a->nbatch > 2) w = "more than two batch dims";
    else if ((a->d != 64 && a->d != 128) || (a->e != 64 && a->e != 128)) w = "head dims other than 64 and 128";
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

char *sched_attn_sm90_text(const sched_attn_sm90 *a, const char *kname)
{
    if (!sched_attn_sm90_fits(a, NULL)) return NULL;
    const char *ty = a->dt == TSL_DTYPE_BF16 ? "bf16" : "f16";
    int d = a->d, e = a->e, nb = a->nbatch;
    static const char *const lead[] = {"", "B0, ", "B0, B1, "};
    static const char *const at[] = {"", "block_idx.y, ", "block_idx.z, block_idx.y, "};
    static const char *const grid[] = {"", ", B0", ", B1, B0"};
    int param = !((a->scale[0] >= '0' && a->scale[0] <= '9') || a->scale[0] == '.' || a->scale[0] == '-');
    strbuf b = {0};
    sb_printf(&b,
              "kernel %s(Q: global %s[%sTq, %d], K: global %s[%sTk, %d], V: global %s[%sTk, %d], "
              "O: global %s[%sTq, %d]",
              kname, ty, lead[nb], d, ty, lead[nb], d, ty, lead[nb], e, ty, lead[nb], e);
    if (param) sb_printf(&b, ", %s: f32", a->scale);
    sb_printf(&b, ") grid(cdiv(Tq, %d)%s) threads(384) smem_budget(227000) {\n", BM, grid[nb]);
    sb_printf(&b, "  qs = alloc shared %s[%d, %d] layout ", ty, BM, d);
    rowmajor(&b, 0, BM, d);
    sb_printf(&b, "\n  ks = alloc shared %s[%d, %d, %d] layout ", ty, STAGES, BN, d);
    rowmajor(&b, STAGES, BN, d);
    sb_printf(&b, "\n  kt = view ks -> shared %s[%d, %d, %d] layout ", ty, STAGES, d, BN);
    transposed(&b, STAGES, BN, d);
    sb_printf(&b, "\n  vs = alloc shared %s[%d, %d, %d] layout ", ty, STAGES, BN, e);
    rowmajor(&b, STAGES, BN, e);
    sb_printf(&b,
              "\n  qbar = alloc shared u64[1]\n  full = alloc shared u64[%d]\n  empty = alloc shared u64[%d]\n"
              "  mbar_init qbar, 1\n  mbar_init full, 1\n  mbar_init empty, 2\n  sync\n",
              STAGES, STAGES);
    /* the K/V blocks this query block reads: all, or up to its diagonal */
    char nblocks[96];
    if (a->causal) snprintf(nblocks, sizeof nblocks, "min(cdiv(Tk, %d), block_idx.x + 1)", BN);
    else snprintf(nblocks, sizeof nblocks, "cdiv(Tk, %d)", BN);
    sb_printf(&b,
              "  warpgroups {\n"
              "    role producer(1) regs(24) {\n"
              "      mbar_arrive qbar[0] bytes %d\n"
              "      tma_load Q[%sblock_idx.x * %d, 0], qbar[0] -> qs\n"
              "      for j in 0 : %s {\n"
              "        let s = j %% %d\n"
              "        mbar_wait empty[s], (j / %d + 1) %% 2\n"
              "        mbar_arrive full[s] bytes %d\n"
              "        tma_load K[%sj * %d, 0], full[s] -> ks[s]\n"
              "        tma_load V[%sj * %d, 0], full[s] -> vs[s]\n"
              "      }\n"
              "    }\n",
              BM * d * 2, at[nb], BM, nblocks, STAGES, STAGES, BN * (d + e) * 2, at[nb], BN, at[nb], BN);
    sb_printf(&b,
              "    role consumer(2, wg) regs(240) {\n"
              "      m = alloc register f32[64, 1] layout " ROWS " init -inf\n"
              "      l = alloc register f32[64, 1] layout " ROWS " init 0.0\n"
              "      o = alloc register f32[64, %d] layout " ACC("%d") " init 0.0\n"
              "      mbar_wait qbar[0], 0\n"
              "      for j in 0 : %s {\n"
              "        let s = j %% %d\n"
              "        mbar_wait full[s], (j / %d) %% 2\n"
              "        sc = alloc register f32[64, %d] layout " ACC("%d") " init 0.0\n"
              "        wgmma_fence\n"
              "        wgmma qs[wg * 64, 0], kt[s, 0, 0], sc -> sc\n"
              "        wgmma_commit\n"
              "        wgmma_wait 0\n"
              "        mul sc, %s -> sc\n"
              "        if (j + 1) * %d > Tk {\n"
              "          col = iota j * %d -> register i32[64, %d] layout " ACC("%d") " dim 1\n"
              "          ok = lt col, Tk\n"
              "          select ok, sc, -inf -> sc\n"
              "        }\n",
              e, e / 8, nblocks, STAGES, STAGES, BN, BN / 8, a->scale, BN, BN, BN, BN / 8);
    if (a->causal)
        sb_printf(&b,
                  "        if j * %d + %d > block_idx.x * %d + wg * 64 {\n"
                  "          cc = iota j * %d -> register i32[64, %d] layout " ACC("%d") " dim 1\n"
                  "          rr = iota block_idx.x * %d + wg * 64 -> register i32[64, %d] layout " ACC("%d") " dim 0\n"
                  "          keep = le cc, rr\n"
                  "          select keep, sc, -inf -> sc\n"
                  "        }\n",
                  BN, BN - 1, BM, BN, BN, BN / 8, BM, BN, BN / 8);
    sb_printf(&b,
              "        mx = reduce.max sc -> register f32[64, 1] layout " ROWS " dim 1\n"
              "        mn = max m, mx\n"
              "        dm = sub m, mn\n"
              "        alpha = exp.approx dm\n"
              "        mb = broadcast mn -> register f32[64, %d] layout " ACC("%d") " dim 1\n"
              "        sub sc, mb -> sc\n"
              "        exp.approx sc -> sc\n"
              "        rs = reduce.sum sc -> register f32[64, 1] layout " ROWS " dim 1\n"
              "        mul l, alpha -> l\n"
              "        add l, rs -> l\n"
              "        copy mn -> m\n"
              "        ab = broadcast alpha -> register f32[64, %d] layout " ACC("%d") " dim 1\n"
              "        mul o, ab -> o\n"
              "        ph = cast sc -> register %s[64, %d] layout " ACC("%d") "\n"
              "        pa = view ph -> register %s[64, %d] layout "
              "spatial(4,1).local(1,%d).column_local(2,2).spatial(8,4).local(1,2)\n"
              "        wgmma_fence\n"
              "        wgmma pa, vs[s, 0, 0], o -> o\n"
              "        wgmma_commit\n"
              "        wgmma_wait 0\n"
              "        mbar_arrive empty[s]\n"
              "      }\n"
              "      lb = broadcast l -> register f32[64, %d] layout " ACC("%d") " dim 1\n"
              "      div o, lb -> o\n"
              "      res = cast o -> register %s[64, %d] layout " ACC("%d") "\n"
              "      store_global res -> O[%sblock_idx.x * %d + wg * 64, 0]\n"
              "    }\n"
              "  }\n"
              "}\n",
              BN, BN / 8, e, e / 8, ty, BN, BN / 8, ty, BN, BN / 16, e, e / 8, ty, e, e / 8, at[nb], BM);
    return sb_take(&b);
}
