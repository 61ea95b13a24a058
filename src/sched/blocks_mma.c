/* blocks_mma.c — the block product's building blocks (blocks_mma.h): the
 * sm_80 / CPU pipelined main loop and the sm_90a TMA ring with wgmma
 * consumers, written through the tile builder (blocks.c). The plans'
 * figures are in docs/sched.md, "The contraction strategy". */
#include <stdio.h>
#include <string.h>

#include "sched/blocks_mma.h"
#include "target/target.h"

#define B_(e) sched_blk_bin(kb, TILE_OP_##e
#define I_(x) sched_blk_int(kb, (x))
#define V_(x) sched_blk_v(kb, (x))

/* ---- layouts ------------------------------------------------------------------------------------
 * mma fragments for the block: warps WM x WN, each warp TM x TN atoms of C
 * and KA atoms deep (gemm.tile's forms, generalised), over the fragments of
 * the table's m16n8k16 row (target/frags.h; only the block part is written
 * here). Transposed forms list the same factors with rows and columns
 * swapped (spatial <-> column_spatial, local <-> column_local), so a
 * thread holds the same elements in the same local order and `view` turns
 * one into the other. */
const char *sched_blk_mma_row(const sched_blk_gemm *g) { return g->tf32 ? SCHED_BLK_TF32_ROW : "m16n8k16"; }

void sched_blk_mma_layouts(const sched_blk_gemm *g, char *la, char *lat, char *lb, char *lbt, char *lcc, size_t n)
{
    const target_atom *row = g->tf32 ? target_mma_resolve(SCHED_BLK_TF32_ROW, TSL_DTYPE_F32, TSL_DTYPE_F32, NULL)
                                     : target_mma_resolve("m16n8k16", TSL_DTYPE_F16, TSL_DTYPE_F32, NULL);
    TSL_ASSERT(row); /* the sm80 table has both rows */
    int tm = g->bm / (row->m * g->wm), tn = g->bn / (row->n * g->wn), ka = g->bk / row->k;
    strbuf f[5] = {{0}};
    int bad = target_frag_text(&f[0], row, TARGET_A, 0) || target_frag_text(&f[1], row, TARGET_A, 1) ||
              target_frag_text(&f[2], row, TARGET_B, 0) || target_frag_text(&f[3], row, TARGET_B, 1) ||
              target_frag_text(&f[4], row, TARGET_C, 0);
    TSL_ASSERT(!bad); /* the rows have their three layouts */
    snprintf(lcc, n, "spatial(%d, %d).local(%d, %d).%s", g->wm, g->wn, tm, tn, sb_str(&f[4]));
    snprintf(la, n, "spatial(%d, 1).replicate(%d).local(%d, %d).%s", g->wm, g->wn, tm, ka, sb_str(&f[0]));
    snprintf(lat, n, "column_spatial(1, %d).replicate(%d).column_local(%d, %d).%s", g->wm, g->wn, ka, tm,
             sb_str(&f[1]));
    snprintf(lb, n, "replicate(%d).spatial(1, %d).local(%d, %d).%s", g->wm, g->wn, ka, tn, sb_str(&f[2]));
    snprintf(lbt, n, "replicate(%d).column_spatial(%d, 1).column_local(%d, %d).%s", g->wm, g->wn, tn, ka,
             sb_str(&f[3]));
    for (int i = 0; i < 5; i++) sb_free(&f[i]);
}

/* f32 micro-tiles. The CPU plan (and any shape the GPU form does not fit)
 * gives each of the P x Q threads a contiguous tm x tn block: the layout
 * the C generator's micro-kernel reads. On the GPU a thread's tm x tn is
 * (tm/4) x (tn/4) sub-tiles of 4 x 4, 4P rows (4Q columns) apart: row
 * s * 4P + 4p + e for thread row p (64 apart when P = 16), and the
 * threads of a warp are 4 x 8 of the thread grid: the fragments at one k are float4 runs (the
 * 16-byte shared loads), and the 8 distinct float4 of B that a warp reads
 * (4 of A, whose block is stored k-major) are one contiguous 128-byte
 * row: no bank conflicts (8-wide contiguous runs put two threads of a
 * quarter warp in one bank group), and 4 x 8 threads read 32 rows + 64
 * columns of the fragments where 2 x 16 read 16 + 128. */
static int blk_fma_sub(const sched_blk_gemm *g)
{
    int P = g->bm / g->tm, Q = g->bn / g->tn;
    return !g->cpu && g->tm % 4 == 0 && g->tn % 4 == 0 && P % 4 == 0 && Q % 8 == 0;
}

void sched_blk_fma_layouts(const sched_blk_gemm *g, char *lc, char *lcol, char *lrow, char *lcolb, char *lrowa, size_t n)
{
    int P = g->bm / g->tm, Q = g->bn / g->tn;
    if (!blk_fma_sub(g)) {
        snprintf(lc, n, "spatial(%d, %d).local(%d, %d)", P, Q, g->tm, g->tn);
        snprintf(lcol, n, "spatial(%d, 1).replicate(%d).local(%d, 1)", P, Q, g->tm);
        snprintf(lrow, n, "replicate(%d).spatial(1, %d).local(1, %d)", P, Q, g->tn);
        snprintf(lcolb, n, "replicate(%d).spatial(%d, 1).local(%d, 1)", P, Q, g->tn);
        snprintf(lrowa, n, "spatial(1, %d).replicate(%d).local(1, %d)", P, Q, g->tm);
        return;
    }
    int sm = g->tm / 4, sn = g->tn / 4, wp = P / 4, wq = Q / 8;
    snprintf(lc, n, "local(%d, %d).spatial(%d, %d).spatial(4, 8).local(4, 4)", sm, sn, wp, wq);
    snprintf(lcol, n, "local(%d, 1).spatial(%d, 1).replicate(%d).spatial(4, 1).replicate(8).local(4, 1)", sm, wp, wq);
    snprintf(lrow, n, "local(1, %d).replicate(%d).spatial(1, %d).replicate(4).spatial(1, 8).local(1, 4)", sn, wp, wq);
    snprintf(lcolb, n, "local(%d, 1).replicate(%d).spatial(%d, 1).replicate(4).spatial(8, 1).local(4, 1)", sn, wp, wq);
    snprintf(lrowa, n, "local(1, %d).spatial(1, %d).replicate(%d).spatial(1, 4).replicate(8).local(1, 4)", sm, wp, wq);
}

/* ---- the sm_80 / CPU main loop ------------------------------------------------------------------ */

/* A's (is_a) or B's block spec of the pipeline: the block in the tensor's
 * own dim order, at (batch?, row, col) in blocks. */
static tile_value *blk_spec(sched_blk *kb, const sched_blk_gemm *g, tile_stmt *pipe, const char *view, int is_a,
                            tile_expr *k)
{
    int trans = is_a ? g->a_trans : g->b_trans;
    int64_t rows = is_a ? g->bm : g->bk, cols = is_a ? g->bk : g->bn;
    tile_expr *ir = is_a ? sched_blk_bidx(kb, 0) : k, *ic = is_a ? k : sched_blk_bidx(kb, 1);
    if (trans) {
        int64_t t = rows;
        rows = cols, cols = t;
        tile_expr *u = ir;
        ir = ic, ic = u;
    }
    int64_t blk[3];
    tile_expr *idx[3];
    int r = 0;
    if (g->nb) {
        blk[r] = 1;
        idx[r++] = sched_blk_bidx(kb, 2);
    }
    blk[r] = rows, idx[r++] = ir;
    blk[r] = cols, idx[r++] = ic;
    /* rows padded by 16 bytes: the 8 rows one ldmatrix (or one warp's
     * column reads) touches fall in 8 different 16-byte bank groups */
    int pad = g->pad;
    /* tf32 fragments read one f32 a lane (no ldmatrix): lanes lane/4 walk
     * the rows of a k-contiguous block (row stride bk + pad words, pad = 4:
     * 8 rows in 8 different groups of 4 banks), lanes lane%4 the rows of an
     * m- or n-contiguous one, which wants the stride 8 mod 32 (4 rows in 4
     * groups of 8 banks): twice the pad there */
    if (g->tf32 && is_a == trans) pad = 2 * g->pad;
    tile_layout *lay = NULL;
    if (!g->mma && ((!is_a && trans) || (!g->cpu && is_a && !trans))) {
        /* CPU: B^T stored k-major, so the micro-kernel's vector reads of
         * B's row at one kk are contiguous (A stays as stored: its reads
         * are broadcasts, and a transposing copy costs more than it saves).
         * GPU f32: A's block and B^T's stored k-major too, so a thread's
         * rows (columns) at one kk are contiguous 16-byte shared loads
         * (strided ones bound the k loop by shared bandwidth, and B^T's
         * rows 20 floats apart meet in 2 banks); the copy in writes 4-byte
         * elements across the transpose */
        if (g->nb)
            lay = sched_blk_layout(kb, "(1, %lld, %lld):(%lld, 1, %lld)", (long long)rows, (long long)cols,
                                   (long long)(cols * (rows + pad)), (long long)(rows + pad));
        else lay = sched_blk_layout(kb, "(%lld, %lld):(1, %lld)", (long long)rows, (long long)cols, (long long)(rows + pad));
    } else if (pad && g->nb) {
        lay = sched_blk_layout(kb, "(1, %lld, %lld):(%lld, %lld, 1)", (long long)rows, (long long)cols,
                               (long long)(rows * (cols + pad)), (long long)(cols + pad));
    } else if (pad) {
        lay = sched_blk_layout(kb, "(%lld, %lld):(%lld, 1)", (long long)rows, (long long)cols, (long long)(cols + pad));
    }
    return sched_blk_pipe_in(kb, pipe, view, is_a ? g->a : g->b, r, blk, idx, lay);
}

/* The shared block's element (z?, i, j) as an operand. */
static tile_operand blk_sh(sched_blk *kb, const sched_blk_gemm *g, tile_value *v, tile_expr *i, tile_expr *j)
{
    tile_expr *idx[3];
    int r = 0;
    if (g->nb) idx[r++] = I_(0);
    idx[r++] = i;
    idx[r++] = j;
    return sched_blk_at(kb, v, r, idx);
}

static tile_type blk_reg2(sched_blk *kb, tsl_dtype dt, int64_t d0, int64_t d1, const char *lay)
{
    return sched_blk_type2(kb, TILE_REGISTER, dt, d0, d1, sched_blk_layout(kb, "%s", lay));
}

void sched_blk_mainloop(sched_blk *kb, const sched_blk_gemm *g, tile_value *acc)
{
    tile_value *kv;
    tile_expr *steps = g->kblocks ? g->kblocks : B_(CDIV), g->kext, I_(g->bk));
    tile_stmt *pipe = sched_blk_pipe(kb, "k", steps, g->stages, &kv);
    tile_expr *k = g->k0 ? B_(ADD), V_(kv), g->k0) : V_(kv);
    tile_value *ta = blk_spec(kb, g, pipe, "c_ta", 1, k);
    tile_value *tb = blk_spec(kb, g, pipe, "c_tb", 0, k);
    sched_blk_pipe_open(kb, pipe);
    tsl_dtype in = g->in;
    tile_operand dacc = tile_operand_tensor(acc);
    if (g->mma) {
        char la[256], lat[256], lb[256], lbt[256], lcc[256];
        sched_blk_mma_layouts(g, la, lat, lb, lbt, lcc, sizeof la);
        tile_value *ra, *rb;
        if (g->a_trans) {
            tile_value *ra0 = sched_blk_load_shared(kb, "c_ra0", blk_sh(kb, g, ta, I_(0), I_(0)), blk_reg2(kb, in, g->bk, g->bm, lat));
            ra = sched_blk_view(kb, "c_ra", ra0, blk_reg2(kb, in, g->bm, g->bk, la));
        } else {
            ra = sched_blk_load_shared(kb, "c_ra", blk_sh(kb, g, ta, I_(0), I_(0)), blk_reg2(kb, in, g->bm, g->bk, la));
        }
        if (g->b_trans) {
            tile_value *rb0 = sched_blk_load_shared(kb, "c_rb0", blk_sh(kb, g, tb, I_(0), I_(0)), blk_reg2(kb, in, g->bn, g->bk, lbt));
            rb = sched_blk_view(kb, "c_rb", rb0, blk_reg2(kb, in, g->bk, g->bn, lb));
        } else {
            rb = sched_blk_load_shared(kb, "c_rb", blk_sh(kb, g, tb, I_(0), I_(0)), blk_reg2(kb, in, g->bk, g->bn, lb));
        }
        tile_operand args[3] = {tile_operand_tensor(ra), tile_operand_tensor(rb), tile_operand_tensor(acc)};
        tile_stmt *s = sched_blk_op(kb, TILE_I_MMA, NULL, 3, args, NULL, &dacc);
        /* f32 on the tensor cores only through the tf32 row, by name */
        if (g->tf32) s->instr.atom = SCHED_BLK_TF32_ROW;
    } else {
        /* one k at a time: column kk of A's block and row kk of B's block,
         * broadcast over the thread's tm x tn micro-tile */
        char lc[256], lcol[256], lrow[256], lcolb[256], lrowa[256];
        sched_blk_fma_layouts(g, lc, lcol, lrow, lcolb, lrowa, sizeof lc);
        tile_stmt *f = sched_blk_for(kb, "c_kk", I_(0), I_(g->bk), NULL);
        /* GPU: unrolled, so that the compiler loads k+1's fragments while
         * k's FMAs run (a rolled loop waits on its shared loads each k) */
        f->unroll = !g->cpu && g->bk <= TILE_MAX_UNROLL;
        tile_expr *kk = V_(f->v);
        tile_value *a, *b;
        if (g->a_trans) {
            tile_value *a0 = sched_blk_load_shared(kb, "c_a0", blk_sh(kb, g, ta, kk, I_(0)), blk_reg2(kb, TSL_DTYPE_F32, 1, g->bm, lrowa));
            a = sched_blk_view(kb, "c_a", a0, blk_reg2(kb, TSL_DTYPE_F32, g->bm, 1, lcol));
        } else {
            a = sched_blk_load_shared(kb, "c_a", blk_sh(kb, g, ta, I_(0), kk), blk_reg2(kb, TSL_DTYPE_F32, g->bm, 1, lcol));
        }
        if (g->b_trans) {
            tile_value *b0 = sched_blk_load_shared(kb, "c_b0", blk_sh(kb, g, tb, I_(0), kk), blk_reg2(kb, TSL_DTYPE_F32, g->bn, 1, lcolb));
            b = sched_blk_view(kb, "c_b", b0, blk_reg2(kb, TSL_DTYPE_F32, 1, g->bn, lrow));
        } else {
            b = sched_blk_load_shared(kb, "c_b", blk_sh(kb, g, tb, kk, I_(0)), blk_reg2(kb, TSL_DTYPE_F32, 1, g->bn, lrow));
        }
        tile_value *ab = sched_blk_broadcast(kb, "c_ab", a, blk_reg2(kb, TSL_DTYPE_F32, g->bm, g->bn, lc), 1);
        tile_value *bb = sched_blk_broadcast(kb, "c_bb", b, blk_reg2(kb, TSL_DTYPE_F32, g->bm, g->bn, lc), 0);
        tile_operand ob = tile_operand_tensor(bb);
        tile_value *p = sched_blk_ew(kb, TILE_I_MUL, "c_p", tile_operand_tensor(ab), &ob);
        /* on the CPU the k loop asks for the f32 micro-kernel atom
         * (target/cpu.c; the option cpu.micro_kernels=0 leaves the generic loop) */
        tile_operand args[2] = {tile_operand_tensor(acc), tile_operand_tensor(p)};
        tile_stmt *s = sched_blk_op(kb, TILE_I_ADD, NULL, 2, args, NULL, &dacc);
        if (g->cpu && g->ukr) s->instr.atom = "cpu.ukr.f32";
        sched_blk_end(kb);
    }
    sched_blk_end(kb);
}

/* ---- the sm_90a ring --------------------------------------------------------------------------------
 * A persistent grid (one block per multiprocessor, c_nsm) loops over the
 * output tiles of C (BM x BN), grouped `group` tiles down M so that
 * consecutive tiles share B's columns in L2. Warpgroup 0 (the producer, 40
 * registers) streams BK-deep k blocks of A (BM x BK, K-major) and B
 * (BK x BN, N-major, 64-wide TMA boxes) through a ring of shared stages,
 * across tiles: it waits until a stage is empty, announces its bytes on the
 * stage's full barrier and issues the TMA copies, so the next tile's blocks
 * arrive while the consumers run the epilogue. Warpgroups 1 and 2 (the
 * consumers, 232 registers) each own BM/2 rows: they wait until a stage is
 * full, run wgmma over it with one group in flight, and release the stage
 * before. K segments (g->seg) follow each other through the same ring
 * into the same accumulators; a grouped B (g->bgroup) fills a stage with
 * its G blocks (one TMA box) and the consumers run one wgmma per block
 * into G accumulators (the LSTM cell's gates, sched/lstm.c). */
#define BLK_RING_SMEM (220 * 1024) /* the stages, C's staging tiles and the barriers */

/* B's blocks a stage holds: bgroup, or 1 */
static int blk_nbb(const sched_blk_gemm *g) { return g->bgroup ? g->bgroup : 1; }

int sched_blk_ring_stages(const sched_blk_gemm *g, int tma_store)
{
    int stage = (g->bm * g->bk + blk_nbb(g) * g->bk * g->bn) * 2;
    int ctile = tma_store ? g->bm * g->bn * 2 : 0;
    int n = (BLK_RING_SMEM - ctile - 2048) / stage;
    return n > 8 ? 8 : n;
}

int64_t sched_blk_ring_smem(const sched_blk_gemm *g, int tma_store)
{
    /* the stages, C's staging tiles, the barriers, the 1024-byte alignments */
    return (int64_t)sched_blk_ring_stages(g, tma_store) * (g->bm * g->bk + blk_nbb(g) * g->bk * g->bn) * 2 +
           (tma_store ? g->bm * g->bn * 2 : 0) + 4096;
}

static int blk_cluster(const sched_blk_ring *r) { return r->cluster > 1 ? r->cluster : 1; }

/* Clusters in the grid: min(pairs x N-tiles [x batch], max(1, SMs / cl)). */
static tile_expr *blk_clusters(sched_blk *kb, const sched_blk_gemm *g, int cl, tile_expr *M, tile_expr *N, tile_expr *B)
{
    tile_expr *t = B_(MUL), B_(CDIV), M, I_(g->bm * cl)), B_(CDIV), N, I_(g->bn)));
    if (B) t = B_(MUL), t, B);
    tile_expr *sms = sched_blk_sms(kb);
    return B_(MIN), t, cl > 1 ? B_(MAX), I_(1), B_(DIV), sms, I_(cl))) : sms);
}

tile_expr *sched_blk_ring_grid(sched_blk *kb, const sched_blk_gemm *g, const sched_blk_ring *r, tile_expr *M, tile_expr *N,
                               tile_expr *B)
{
    int cl = blk_cluster(r);
    tile_expr *n = blk_clusters(kb, g, cl, M, N, B);
    return cl > 1 ? B_(MUL), I_(cl), n) : n;
}

/* The tile loop of a role: c_t over this block's (cluster's) tiles, c_tm
 * / c_tn (/ c_tb) its coordinates (grouped order over M-tiles, or over
 * pairs of them in a cluster, rank r taking M-tile 2i + r). Opens the loop. */
static void blk_tile_loop(sched_blk *kb, sched_blk_ring *r, const sched_blk_gemm *g, tile_expr *M, tile_expr *N,
                          tile_expr *B, int group)
{
    int cl = blk_cluster(r);
    r->gm = sched_blk_let(kb, "c_gm", B_(CDIV), M, I_(g->bm)));
    tile_value *gm = cl > 1 ? sched_blk_let(kb, "c_gp", B_(CDIV), M, I_(g->bm * cl))) : r->gm;
    tile_value *gn = sched_blk_let(kb, "c_gn", B_(CDIV), N, I_(g->bn)));
    tile_expr *nt = B_(MUL), V_(gm), V_(gn));
    tile_value *ntiles = sched_blk_let(kb, "c_ntiles", B ? B_(MUL), nt, B) : nt);
    tile_expr *first = cl > 1 ? B_(DIV), sched_blk_bidx(kb, 0), I_(cl)) : sched_blk_bidx(kb, 0);
    tile_expr *step = cl > 1 ? blk_clusters(kb, g, cl, M, N, B) : B_(MIN), V_(ntiles), sched_blk_sms(kb));
    tile_stmt *f = sched_blk_for(kb, "c_t", first, V_(ntiles), step);
    tile_value *rr;
    r->tb = NULL;
    if (B) {
        r->tb = sched_blk_let(kb, "c_tb", B_(DIV), V_(f->v), B_(MUL), V_(gm), V_(gn))));
        rr = sched_blk_let(kb, "c_r", B_(MOD), V_(f->v), B_(MUL), V_(gm), V_(gn))));
    } else {
        rr = sched_blk_let(kb, "c_r", V_(f->v));
    }
    tile_value *g0 = sched_blk_let(kb, "c_g0", B_(MUL), B_(DIV), V_(rr), B_(MUL), I_(group), V_(gn))), I_(group)));
    tile_value *gs = sched_blk_let(kb, "c_gs", B_(MIN), B_(SUB), V_(gm), V_(g0)), I_(group)));
    tile_expr *tm = B_(ADD), V_(g0), B_(MOD), B_(MOD), V_(rr), B_(MUL), I_(group), V_(gn))), V_(gs)));
    r->tm = sched_blk_let(kb, "c_tm", cl > 1 ? B_(ADD), B_(MUL), tm, I_(cl)), V_(r->rank)) : tm);
    r->tn = sched_blk_let(kb, "c_tn", B_(DIV), B_(MOD), V_(rr), B_(MUL), I_(group), V_(gn))), V_(gs)));
}

static tile_operand blk_at3(sched_blk *kb, tile_value *v, tile_expr *a, tile_expr *b, tile_expr *c)
{
    tile_expr *idx[3] = {a, b, c};
    return sched_blk_at(kb, v, 3, idx);
}

static tile_operand blk_at2(sched_blk *kb, tile_value *v, tile_expr *a, tile_expr *b)
{
    tile_expr *idx[2] = {a, b};
    return sched_blk_at(kb, v, 2, idx);
}

/* A global operand's box origin (batch?, i, j). */
static tile_operand blk_g(sched_blk *kb, tile_value *v, tile_value *tb, tile_expr *i, tile_expr *j)
{
    tile_expr *idx[3];
    int n = 0;
    if (tb) idx[n++] = V_(tb);
    idx[n++] = i;
    idx[n++] = j;
    return sched_blk_at(kb, v, n, idx);
}

static void blk_mbar(sched_blk *kb, tile_op op, tile_operand bar, tile_expr *x, int64_t bytes)
{
    tile_operand args[2] = {bar, tile_operand_scalar(x)};
    tile_stmt *s = sched_blk_op(kb, op, NULL, x ? 2 : 1, args, NULL, NULL);
    s->instr.bytes = bytes;
}

static void blk_op0(sched_blk *kb, tile_op op) { sched_blk_op(kb, op, NULL, 0, NULL, NULL, NULL); }

static void blk_op_n(sched_blk *kb, tile_op op, int64_t n)
{
    tile_operand a = tile_operand_scalar(I_(n));
    sched_blk_op(kb, op, NULL, 1, &a, NULL, NULL);
}

void sched_blk_ring_open(sched_blk *kb, const sched_blk_gemm *g, sched_blk_ring *r, tile_expr *M, tile_expr *N,
                         tile_expr *B, int group)
{
    int S = r->stages = sched_blk_ring_stages(g, r->tma_store);
    tsl_dtype in = g->in;
    /* the stages in the global tensors' own dim order (TMA boxes), 128-byte
     * swizzled rows of 64; a transposed operand is seen by wgmma through a
     * shared view (the same bytes) with its dims in [M, K] / [K, N] order */
    int SA = g->bm * g->bk, SB = blk_nbb(g) * g->bk * g->bn;
    int64_t da[3] = {S, g->bm, g->bk}, dat[3] = {S, g->bk, g->bm}, db[3] = {S, g->bk, g->bn}, dbt[3] = {S, g->bn, g->bk};
    tile_value *at = NULL, *bt = NULL;
    if (!g->a_trans) {
        r->as = sched_blk_alloc(kb, "c_as", sched_blk_type(kb, TILE_SHARED, in, 3, da,
                                sched_blk_layout(kb, "swizzle(3,3,3,(%d,%d,%d):(%d,%d,1))", S, g->bm, g->bk, SA, g->bk)), NULL);
    } else {
        at = sched_blk_alloc(kb, "c_at", sched_blk_type(kb, TILE_SHARED, in, 3, dat,
                             sched_blk_layout(kb, "swizzle(3,3,3,(%d,%d,(64,%d)):(%d,64,(1,%d)))", S, g->bk, g->bm / 64, SA, 64 * g->bk)), NULL);
        r->as = sched_blk_view(kb, "c_as", at, sched_blk_type(kb, TILE_SHARED, in, 3, da,
                               sched_blk_layout(kb, "swizzle(3,3,3,(%d,(64,%d),%d):(%d,(1,%d),64))", S, g->bm / 64, g->bk, SA, 64 * g->bk)));
    }
    TSL_ASSERT(!g->bgroup || (g->b_trans && !g->nb && g->bgroup <= SCHED_BLK_RING_MAXG && blk_cluster(r) == 1));
    if (g->bgroup) {
        /* [S, G, bn, bk] as loaded, seen as G blocks [bk, bn] */
        int G = g->bgroup, gb = g->bn * g->bk;
        int64_t dgt[4] = {S, G, g->bn, g->bk}, dg[4] = {S, G, g->bk, g->bn};
        bt = sched_blk_alloc(kb, "c_bt", sched_blk_type(kb, TILE_SHARED, in, 4, dgt,
                             sched_blk_layout(kb, "swizzle(3,3,3,(%d,%d,%d,%d):(%d,%d,%d,1))", S, G, g->bn, g->bk, SB, gb, g->bk)), NULL);
        r->bs = sched_blk_view(kb, "c_bs", bt, sched_blk_type(kb, TILE_SHARED, in, 4, dg,
                               sched_blk_layout(kb, "swizzle(3,3,3,(%d,%d,%d,%d):(%d,%d,1,%d))", S, G, g->bk, g->bn, SB, gb, g->bk)));
    } else if (!g->b_trans) {
        r->bs = sched_blk_alloc(kb, "c_bs", sched_blk_type(kb, TILE_SHARED, in, 3, db,
                                sched_blk_layout(kb, "swizzle(3,3,3,(%d,%d,(64,%d)):(%d,64,(1,%d)))", S, g->bk, g->bn / 64, SB, 64 * g->bk)), NULL);
    } else {
        bt = sched_blk_alloc(kb, "c_bt", sched_blk_type(kb, TILE_SHARED, in, 3, dbt,
                             sched_blk_layout(kb, "swizzle(3,3,3,(%d,%d,%d):(%d,%d,1))", S, g->bn, g->bk, SB, g->bk)), NULL);
        r->bs = sched_blk_view(kb, "c_bs", bt, sched_blk_type(kb, TILE_SHARED, in, 3, db,
                               sched_blk_layout(kb, "swizzle(3,3,3,(%d,%d,%d):(%d,1,%d))", S, g->bk, g->bn, SB, g->bk)));
    }
    /* a cluster's blocks each load 1/cl of B's columns into every block:
     * the stages seen as [S, cl, BK, BN/cl] (B^T: [S, cl, BN/cl, BK]) */
    tile_value *bpart = NULL;
    if (blk_cluster(r) > 1) {
        int cl = blk_cluster(r), w = g->bn / cl;
        int64_t dp[4] = {S, cl, g->bk, w}, dpt[4] = {S, cl, w, g->bk};
        if (!g->b_trans)
            bpart = sched_blk_view(kb, "c_bp", r->bs, sched_blk_type(kb, TILE_SHARED, in, 4, dp,
                                   sched_blk_layout(kb, "swizzle(3,3,3,(%d,%d,%d,(64,%d)):(%d,%d,64,(1,%d)))", S, cl, g->bk,
                                                    w / 64, SB, 64 * g->bk * (w / 64), 64 * g->bk)));
        else
            bpart = sched_blk_view(kb, "c_bp", bt, sched_blk_type(kb, TILE_SHARED, in, 4, dpt,
                                   sched_blk_layout(kb, "swizzle(3,3,3,(%d,%d,%d,%d):(%d,%d,%d,1))", S, cl, w, g->bk, SB,
                                                    w * g->bk, g->bk)));
    }
    r->cs = NULL;
    if (r->tma_store) {
        int64_t dc[3] = {2, r->em, g->bn};
        r->cs = sched_blk_alloc(kb, "c_cs", sched_blk_type(kb, TILE_SHARED, r->cdt, 3, dc,
                                sched_blk_layout(kb, "swizzle(3,3,3,(2,%d,(64,%d)):(%d,64,(1,%d)))", r->em, g->bn / 64, r->em * g->bn, 64 * r->em)), NULL);
    }
    int64_t ns = S;
    r->full = sched_blk_alloc(kb, "c_full", sched_blk_type(kb, TILE_SHARED, TSL_DTYPE_U64, 1, &ns, NULL), NULL);
    r->empty = sched_blk_alloc(kb, "c_empty", sched_blk_type(kb, TILE_SHARED, TSL_DTYPE_U64, 1, &ns, NULL), NULL);
    int cl = blk_cluster(r);
    kb->k->cluster = cl > 1 ? cl : 0;
    r->rank = cl > 1 ? sched_blk_let(kb, "c_rank", B_(MOD), sched_blk_bidx(kb, 0), I_(cl))) : NULL;
    /* a stage is empty when both consumers of every block of the cluster released it */
    blk_mbar(kb, TILE_I_MBAR_INIT, tile_operand_tensor(r->full), I_(1), 0);
    blk_mbar(kb, TILE_I_MBAR_INIT, tile_operand_tensor(r->empty), I_(2 * cl), 0);
    sched_blk_sync(kb);
    if (cl > 1) blk_op0(kb, TILE_I_CLUSTER_SYNC); /* the peers' barriers are initialised */
    r->wgs = sched_blk_warpgroups(kb);
    /* the producer */
    sched_blk_role(kb, r->wgs, "producer", 1, NULL, 40);
    tile_value *it = sched_blk_var(kb, "c_it", I_(0));
    blk_tile_loop(kb, r, g, M, N, B, group);
    for (int q = 0; q < (g->nseg ? g->nseg : 1); q++) {
        tile_value *ga = g->nseg ? g->seg[q].a : g->a, *gb = g->nseg ? g->seg[q].b : g->b;
        tile_expr *kext = g->nseg ? g->seg[q].kext : g->kext;
        tile_stmt *fk = sched_blk_for(kb, "c_k", I_(0), B_(CDIV), kext, I_(g->bk)), NULL);
        tile_value *s = sched_blk_let(kb, "c_s", B_(MOD), V_(it), I_(S)));
        blk_mbar(kb, TILE_I_MBAR_WAIT, sched_blk_at1(kb, r->empty, V_(s)), B_(MOD), B_(ADD), B_(DIV), V_(it), I_(S)), I_(1)), I_(2)), 0);
        blk_mbar(kb, TILE_I_MBAR_ARRIVE, sched_blk_at1(kb, r->full, V_(s)), NULL, (int64_t)(SA + SB) * 2);
        tile_expr *ck = V_(fk->v);
        tile_operand fb = sched_blk_at1(kb, r->full, V_(s));
        tile_operand args[2];
        tile_operand dst;
        if (!g->a_trans) {
            args[0] = blk_g(kb, ga, r->tb, B_(MUL), V_(r->tm), I_(g->bm)), B_(MUL), ck, I_(g->bk)));
            dst = sched_blk_at1(kb, r->as, V_(s));
        } else {
            args[0] = blk_g(kb, ga, r->tb, B_(MUL), ck, I_(g->bk)), B_(MUL), V_(r->tm), I_(g->bm)));
            dst = sched_blk_at1(kb, at, V_(s));
        }
        args[1] = fb;
        sched_blk_op(kb, TILE_I_TMA_LOAD, NULL, 2, args, NULL, &dst);
        /* B: in a cluster, this block's 1/cl of its columns, multicast to all */
        tile_expr *n0 = B_(MUL), V_(r->tn), I_(g->bn));
        if (cl > 1) n0 = B_(ADD), n0, B_(MUL), V_(r->rank), I_(g->bn / cl)));
        if (g->bgroup) {
            args[0] = blk_at3(kb, gb, I_(0), n0, B_(MUL), ck, I_(g->bk)));
            dst = sched_blk_at1(kb, bt, V_(s));
        } else if (!g->b_trans) {
            args[0] = blk_g(kb, gb, r->tb, B_(MUL), ck, I_(g->bk)), n0);
            dst = cl > 1 ? blk_at2(kb, bpart, V_(s), V_(r->rank)) : sched_blk_at1(kb, r->bs, V_(s));
        } else {
            args[0] = blk_g(kb, gb, r->tb, n0, B_(MUL), ck, I_(g->bk)));
            dst = cl > 1 ? blk_at2(kb, bpart, V_(s), V_(r->rank)) : sched_blk_at1(kb, bt, V_(s));
        }
        args[1] = fb;
        tile_stmt *lb = sched_blk_op(kb, TILE_I_TMA_LOAD, NULL, 2, args, NULL, &dst);
        if (cl > 1) lb->instr.mcast = I_((1 << cl) - 1);
        sched_blk_set(kb, it, B_(ADD), V_(it), I_(1)));
        sched_blk_end(kb); /* k */
    }
    sched_blk_end(kb); /* tiles */
    sched_blk_end(kb); /* role */
    /* the consumers */
    r->wg = sched_blk_role(kb, r->wgs, "consumer", 2, "c_wg", 232);
    r->it = sched_blk_var(kb, "c_it", I_(0));
    blk_tile_loop(kb, r, g, M, N, B, group);
}

/* The consumer releases stage `stage`: in its block, or in every block of
 * the cluster (each loads into all of them). */
static void blk_release(sched_blk *kb, const sched_blk_ring *r, tile_expr *stage)
{
    int cl = blk_cluster(r);
    if (cl == 1) {
        blk_mbar(kb, TILE_I_MBAR_ARRIVE, sched_blk_at1(kb, r->empty, stage), NULL, 0);
        return;
    }
    tile_value *x = sched_blk_let(kb, "c_rel", stage);
    for (int q = 0; q < cl; q++) {
        tile_stmt *a = sched_blk_op(kb, TILE_I_MBAR_ARRIVE, NULL, 1, (tile_operand[]){sched_blk_at1(kb, r->empty, V_(x))},
                                    NULL, NULL);
        a->instr.cta = I_(q);
    }
}

tile_value *sched_blk_ring_mainloop(sched_blk *kb, const sched_blk_gemm *g, sched_blk_ring *r)
{
    int S = r->stages;
    tile_value *it = r->it;
    /* one wgmma group in flight: step k's products run while the consumer
     * waits for step k-1's and releases its stage; the tile's last stage
     * is released after the final wait */
    int nacc = blk_nbb(g);
    for (int c = 0; c < nacc; c++) {
        const char *nm = g->bgroup ? arena_printf(kb->m->arena, "c_acc%d", c) : "c_acc";
        r->acc[c] = sched_blk_alloc(kb, nm, blk_reg2(kb, TSL_DTYPE_F32, r->em, r->en, g->lc), sched_blk_float(kb, 0.0, "0.0"));
    }
    /* the k steps of every segment: the stages arrive in that order */
    tile_expr *nks = NULL;
    for (int q = 0; q < (g->nseg ? g->nseg : 1); q++) {
        tile_expr *n = B_(CDIV), g->nseg ? g->seg[q].kext : g->kext, I_(g->bk));
        nks = nks ? B_(ADD), nks, n) : n;
    }
    tile_value *nk = sched_blk_let(kb, "c_nk", nks);
    tile_stmt *fk = sched_blk_for(kb, "c_k", I_(0), V_(nk), NULL);
    tile_value *s = sched_blk_let(kb, "c_s", B_(MOD), V_(it), I_(S)));
    blk_mbar(kb, TILE_I_MBAR_WAIT, sched_blk_at1(kb, r->full, V_(s)), B_(MOD), B_(DIV), V_(it), I_(S)), I_(2)), 0);
    blk_op0(kb, TILE_I_WGMMA_FENCE);
    for (int c = 0; c < nacc; c++) {
        tile_expr *bi[4] = {V_(s), I_(c), I_(0), I_(0)};
        tile_operand args[3] = {blk_at3(kb, r->as, V_(s), B_(MUL), V_(r->wg), I_(r->em)), I_(0)),
                                g->bgroup ? sched_blk_at(kb, r->bs, 4, bi) : blk_at3(kb, r->bs, V_(s), I_(0), I_(0)),
                                tile_operand_tensor(r->acc[c])};
        tile_operand dacc = tile_operand_tensor(r->acc[c]);
        sched_blk_op(kb, TILE_I_WGMMA, NULL, 3, args, NULL, &dacc);
    }
    blk_op0(kb, TILE_I_WGMMA_COMMIT);
    blk_op_n(kb, TILE_I_WGMMA_WAIT, 1);
    sched_blk_if(kb, B_(GT), V_(fk->v), I_(0)));
    blk_release(kb, r, B_(MOD), B_(ADD), V_(it), I_(S - 1)), I_(S)));
    sched_blk_end(kb);
    sched_blk_set(kb, it, B_(ADD), V_(it), I_(1)));
    sched_blk_end(kb); /* k */
    blk_op_n(kb, TILE_I_WGMMA_WAIT, 0);
    sched_blk_if(kb, B_(GT), V_(nk), I_(0)));
    blk_release(kb, r, B_(MOD), B_(ADD), V_(it), I_(S - 1)), I_(S)));
    sched_blk_end(kb);
    return r->acc[0];
}

void sched_blk_ring_store(sched_blk *kb, sched_blk_ring *r, tile_value *out, tile_value *c, int n, tile_expr **at)
{
    tile_operand dst = sched_blk_at(kb, c, n, at);
    int cl = blk_cluster(r);
    if (cl > 1) sched_blk_if(kb, B_(LT), V_(r->tm), V_(r->gm))); /* a cluster's tile past M: nothing to store */
    if (!r->tma_store) {
        sched_blk_store_global(kb, out, dst);
    } else {
        /* the previous tile's TMA store has read c_cs[c_wg]: then write it,
         * make the writes visible to the copy engine, store */
        blk_op_n(kb, TILE_I_BULK_WAIT, 0);
        tile_operand x = tile_operand_tensor(out);
        tile_operand cs = blk_at3(kb, r->cs, V_(r->wg), I_(0), I_(0));
        sched_blk_op(kb, TILE_I_STORE_SHARED, NULL, 1, &x, NULL, &cs);
        blk_op0(kb, TILE_I_FENCE_ASYNC);
        sched_blk_sync(kb);
        tile_operand src = sched_blk_at1(kb, r->cs, V_(r->wg));
        sched_blk_op(kb, TILE_I_TMA_STORE, NULL, 1, &src, NULL, &dst);
        blk_op0(kb, TILE_I_BULK_COMMIT);
    }
    if (cl > 1) sched_blk_end(kb); /* if */
    sched_blk_ring_close(kb, r);
}

void sched_blk_ring_close(sched_blk *kb, sched_blk_ring *r)
{
    int cl = blk_cluster(r);
    sched_blk_end(kb); /* tiles */
    if (r->tma_store) blk_op_n(kb, TILE_I_BULK_WAIT, 0);
    sched_blk_end(kb); /* role */
    if (cl > 1) blk_op0(kb, TILE_I_CLUSTER_SYNC); /* no block leaves while its peers may reach its memory */
}
