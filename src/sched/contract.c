/* contract.c — the contraction strategy (docs/sched.md, "The contraction
 * strategy"): a group whose anchor is
 *
 *     C(batch?, m, n) +=[!] s * A(batch?, m|k, k|m) * B(batch?, k|n, n|k)
 *
 * (s: scalar parameters and constants, A and B row-major, either possibly
 * transposed) with pointwise init ops before it and epilogue ops after it
 * that all write C at its own index list becomes ONE tiled tile kernel:
 *
 *   - grid (cdiv(M, BM), cdiv(N, BN), batch), a BM x BN tile of C per block,
 *     accumulated in f32 registers over a 3-stage pipeline of BK-deep A and
 *     B blocks in shared memory (cp.async, masked edges: any M, N, K);
 *   - f16/bf16 inputs: mma.m16n8k16, WM x WN warps, each warp (BM/WM) x
 *     (BN/WN) of C; a transposed operand is loaded in the transposed
 *     fragment layout and `view`ed as the fragment (same registers, no
 *     data movement);
 *   - f32 inputs: per-thread FMA outer products, each thread a contiguous
 *     4 x 8 micro-tile of C (the layout the C generator should turn into a
 *     register-blocked micro-kernel);
 *   - init ops compute the accumulator's start (reading C's old values from
 *     memory), the scale s multiplies the product sum, epilogue ops run on
 *     the tile in registers; one masked store of C.
 *
 * The kernel is written as tile text and parsed (the text is what
 * --emit=tile prints, so the strategy's output reads like the examples);
 * anything outside this shape returns 0 before the plan is touched and the
 * generic strategy lowers the group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/strategy.h"
#include "sched/tiletext.h"
#include "target/target.h"

/* One plan of block/warp shape. */
typedef struct ct_shape {
    int bm, bn, bk; /* block tile of C and depth of a k step */
    int wm, wn;     /* warps along m and n (mma) */
    int threads;
} ct_shape;

/* f16/bf16: 128x128x32, 8 warps of 64x32 (4x4 atoms per warp). On the
 * H200 at 4096^3 (TESSEL_CONTRACT sweep, bench/results/
 * gpu-2026-11-23-NVIDIA-H200-log.md): 175 TFLOP/s; 128x256x32 on 8 warps of
 * 64x64 gave 204 but doubles the unrolled source (NVRTC 1.9 s cold, over
 * the 1 s budget) and wastes half tiles on attention's 384 columns (15.3
 * -> 11.9 TFLOP/s): larger tiles wait for loops the emitter keeps rolled. */
static const ct_shape CT_MMA = {128, 128, 32, 2, 4, 256};
/* f32 on CUDA cores: 128x128x16, 256 threads of 8x8 micro-tiles (64
 * accumulators, 16 values loaded from shared memory per 64 FMAs). */
static const ct_shape CT_FMA = {128, 128, 16, 0, 0, 256};
#define CT_FMA_TM 8
#define CT_FMA_TN 8

/* f32 on the CPU target: 96x128x256, 128 "threads" of 6x16 micro-tiles
 * (12 AVX2 vector accumulators: the C generator's micro-kernel,
 * c_emit_gemm.c), one stage, rows padded by 16 floats (no power-of-two
 * strides: L1 set conflicts). A k step's A block (104 KB) and B block
 * (144 KB) stay in L2 (512 KB here); a thread column's B panel (16 KB) in
 * L1 while the 16 A panels of the column stream past it. Measured on the
 * 2-core EPYC VM (docs/sched.md): 96x128x256 beat 96x128x128, 96x256x128,
 * 96x256x256, 192x128x256, 192x256x256, 96x64x256, 64x192x256 (4x24). */
/* (sched/options.c holds it, and CT_MMA's and CT_FMA's values, as the
 * defaults of the contract.cpu, .mma and .fma options.) */

typedef struct ct {
    const graph *g;
    const lang_def *def;
    const graph_group *grp;
    const graph_op *anchor;
    int nb;                /* batch dims (0 or 1) */
    int vm, vn, vk;        /* the anchor's m, n, k vars */
    int ta, tb, tc;        /* tensors */
    int a_trans, b_trans;  /* A stored (k, m), B stored (n, k) */
    ct_shape sh;
    int mma;
    int pad;               /* elements of padding per shared row */
    int stages;            /* pipeline depth */
    int cpu;               /* f32 plan for the CPU target (CT_CPU) */
    int tm, tn;            /* f32: the thread's micro-tile */
    strbuf body;           /* the kernel's statements */
    int nparam_t;          /* tensor params so far */
    int ptensor[64];       /* def tensor of each tensor param */
    int nscalar;
    int pscalar[64];       /* def tensor of each typed scalar param */
    int psize[64];         /* size slots passed as int params */
    int nsize;
    int tmp;               /* fresh value counter */
    char cur[96];          /* the tile holding C's value, or "" (in memory) */
    char lc[256];          /* the accumulator layout */
    int want_sm90;         /* asked for the sm_90a plan: 1 wide, 2 narrow (small M) */
    int sm90;              /* the sm_90a plan: TMA ring, wgmma, warpgroups (ct_sm90) */
    int em, en, ethreads;  /* the epilogue's tile of C and the threads it spans:
                            * the block's, or one consumer warpgroup's (sm90) */
    const sched_options *opt; /* the plan's choices (sched/options.h) */
} ct;

/* ---- recognition -------------------------------------------------------------------- */

static int extent_plain(const lang_sexpr *e) { return e->kind == LANG_SX_SYM || e->kind == LANG_SX_CONST; }

/* Box var v of op is [0, extent of tensor t's dim d). */
static int covers(const graph_op *op, int v, const lang_tensor *t, int d)
{
    const lang_range *r = &op->box[v];
    return r->lo->kind == LANG_SX_CONST && r->lo->value == 0 && graph_sexpr_equal(r->hi, t->shape[d]) &&
           extent_plain(t->shape[d]);
}

/* Operand o is (batch..., x, y) with x, y pure vars; sets *x, *y. */
static int matrix_access(const ct *c, const graph_operand *o, int *x, int *y)
{
    if (!o->affine || o->rank != c->nb + 2) return 0;
    for (int d = 0; d < o->rank; d++)
        if (o->idx[d].var < 0) return 0;
    for (int d = 0; d < c->nb; d++)
        if (o->idx[d].var != d) return 0;
    *x = o->idx[c->nb].var;
    *y = o->idx[c->nb + 1].var;
    return 1;
}

/* The anchor's body is a product of exactly its two tensor reads and
 * scalar factors (scalar parameters, constants). Counts reads in *nreads. */
static int product_ok(const graph_expr *e, int *nreads)
{
    switch (e->kind) {
    case LANG_E_ACCESS: (*nreads)++; return 1;
    case LANG_E_CAST:
        /* float(A(m, k)) of an f16/bf16/f32 read: exact in f32, which is
         * what the kernel computes in */
        if (e->src->type != TSL_DTYPE_F32 || e->args[0]->kind != LANG_E_ACCESS) return 0;
        (*nreads)++;
        return 1;
    case LANG_E_SCALAR:
    case LANG_E_INT:
    case LANG_E_FLOAT: return 1;
    case LANG_E_BINARY:
        return e->src->op == LANG_MUL && dtype_info_of(e->src->optype)->is_float && product_ok(e->args[0], nreads) &&
               product_ok(e->args[1], nreads);
    default: return 0;
    }
}

static int is_mma_dt(tsl_dtype t) { return t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16; }
static int is_io_dt(tsl_dtype t) { return is_mma_dt(t) || t == TSL_DTYPE_F32; }

/* A pointwise op of the group: writes C at the anchor's index list over the
 * anchor's parallel box with `=`. */
static int side_op_ok(const ct *c, const graph_op *op)
{
    if (!op->pointwise || op->assign != LANG_ASSIGN || op->niter != c->anchor->niter) return 0;
    if (op->operands[0].tensor != c->tc || !op->operands[0].identity) return 0;
    for (int v = 0; v < op->niter; v++)
        if (!covers(op, v, c->def->tensors[c->tc], v)) return 0;
    return 1;
}

static int recognise(ct *c)
{
    const graph *g = c->g;
    const graph_group *grp = c->grp;
    if (grp->strategy != GRAPH_CONTRACTION || grp->anchor < grp->first || grp->anchor >= grp->first + grp->nops)
        return 0;
    const graph_op *an = &g->ops[grp->anchor];
    c->anchor = an;
    if (!an->contraction || an->assign != LANG_ADD_EQ || an->reads_lhs || an->noperands != 3) return 0;
    if (an->niter < 2 || an->niter > 3 || an->nvars != an->niter + 1) return 0;
    c->nb = an->niter - 2;
    c->vm = an->niter - 2;
    c->vn = an->niter - 1;
    c->vk = an->niter;
    const graph_operand *oc = &an->operands[0];
    if (!oc->identity) return 0;
    c->tc = oc->tensor;
    const lang_tensor *C = c->def->tensors[c->tc];
    for (int v = 0; v < an->niter; v++)
        if (!covers(an, v, C, v)) return 0;
    int nreads = 0;
    if (!product_ok(an->body, &nreads) || nreads != 2) return 0;
    /* which operand is A (has m) and which B (has n) */
    int x1, y1, x2, y2;
    if (!matrix_access(c, &an->operands[1], &x1, &y1) || !matrix_access(c, &an->operands[2], &x2, &y2)) return 0;
    const graph_operand *oa = &an->operands[1], *ob = &an->operands[2];
    if (x1 == c->vn || y1 == c->vn) {
        const graph_operand *t = oa;
        oa = ob;
        ob = t;
        int tx = x1, ty = y1;
        x1 = x2, y1 = y2, x2 = tx, y2 = ty;
    }
    if (x1 == c->vm && y1 == c->vk) c->a_trans = 0;
    else if (x1 == c->vk && y1 == c->vm) c->a_trans = 1;
    else return 0;
    if (x2 == c->vk && y2 == c->vn) c->b_trans = 0;
    else if (x2 == c->vn && y2 == c->vk) c->b_trans = 1;
    else return 0;
    c->ta = oa->tensor;
    c->tb = ob->tensor;
    if (c->ta == c->tc || c->tb == c->tc) return 0;
    const lang_tensor *A = c->def->tensors[c->ta], *B = c->def->tensors[c->tb];
    for (int d = 0; d < A->rank; d++)
        if (!covers(an, oa->idx[d].var, A, d)) return 0;
    for (int d = 0; d < B->rank; d++)
        if (!covers(an, ob->idx[d].var, B, d)) return 0;
    if (A->dtype != B->dtype || !is_io_dt(A->dtype) || !is_io_dt(C->dtype)) return 0;
    c->mma = is_mma_dt(A->dtype);
    c->sh = c->mma ? CT_MMA : CT_FMA;
    c->pad = c->mma ? 8 : 4;
    c->tm = CT_FMA_TM;
    c->tn = CT_FMA_TN;
    if (c->cpu && !c->mma) {
        /* the CPU plan: options.h's contract.cpu (checked by the caller;
         * its defaults are CT_CPU) */
        const sched_contract_options *co = &c->opt->cpu;
        ct_shape o = {co->bm, co->bn, co->bk, 0, 0, (co->bm / co->tm) * (co->bn / co->tn)};
        c->sh = o;
        c->tm = co->tm;
        c->tn = co->tn;
        c->pad = co->pad;
        c->stages = co->stages;
        for (int i = grp->first; i < grp->first + grp->nops; i++)
            if (i != grp->anchor && !side_op_ok(c, &g->ops[i])) return 0;
        return 1;
    }
    c->sm90 = c->want_sm90 && c->mma;
    /* the GPU plans: options.h's contract.mma (f16/bf16) and contract.fma
     * (f32), checked by the caller; their defaults are CT_MMA and CT_FMA */
    const sched_contract_options *co = c->mma ? &c->opt->mma : &c->opt->fma;
    if (c->mma) c->sh = (ct_shape){co->bm, co->bn, co->bk, co->wm, co->wn, 32 * co->wm * co->wn};
    else c->sh = (ct_shape){co->bm, co->bn, co->bk, 0, 0, (co->bm / co->tm) * (co->bn / co->tn)};
    if (!c->mma) {
        c->tm = co->tm;
        c->tn = co->tn;
    }
    c->pad = co->pad;
    c->stages = co->stages;
    for (int i = grp->first; i < grp->first + grp->nops; i++)
        if (i != grp->anchor && !side_op_ok(c, &g->ops[i])) return 0;
    return 1;
}

/* ---- names and parameters ------------------------------------------------------------ */

/* Kernel-visible name of a def tensor or size symbol: internal values all
 * start with "c_", so a def name only changes when it is reserved or
 * starts so. */
static void pname(char *buf, size_t n, const char *name)
{
    if (tile_name_reserved(name) || !strncmp(name, "c_", 2)) snprintf(buf, n, "%s_p", name);
    else snprintf(buf, n, "%s", name);
}

static void use_tensor(ct *c, int ti)
{
    for (int i = 0; i < c->nparam_t; i++)
        if (c->ptensor[i] == ti) return;
    if (c->nparam_t < 64) c->ptensor[c->nparam_t++] = ti;
}

static void use_scalar(ct *c, int ti)
{
    for (int i = 0; i < c->nscalar; i++)
        if (c->pscalar[i] == ti) return;
    if (c->nscalar < 64) c->pscalar[c->nscalar++] = ti;
}

/* Size slot `sym` is some tensor parameter's bare extent (then the kernel
 * binds it from the array). */
static int size_bound(const ct *c, int sym)
{
    for (int i = 0; i < c->nparam_t; i++) {
        const lang_tensor *t = c->def->tensors[c->ptensor[i]];
        for (int d = 0; d < t->rank; d++)
            if (t->shape[d]->kind == LANG_SX_SYM && t->shape[d]->sym == sym) return 1;
    }
    return 0;
}

static void sexpr_text(strbuf *b, const ct *c, const lang_sexpr *e)
{
    char nb[160];
    if (e->kind == LANG_SX_CONST) {
        sb_printf(b, "%lld", (long long)e->value);
    } else {
        pname(nb, sizeof nb, c->def->sizes[e->sym]);
        sb_puts(b, nb);
    }
}

static const char *dt_name(tsl_dtype t)
{
    char buf[16];
    static const char *names[] = {"f16", "bf16", "f32"};
    const char *s = tile_dtype_name(tile_dtype_from_tsl(t), buf);
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) return names[i];
    return "f32";
}

/* Offsets of C's tile in a tensor whose dims are vars `vars` (rank r). */
static void tile_at(strbuf *b, const ct *c, const int *vars, int r)
{
    for (int d = 0; d < r; d++) {
        sb_puts(b, d ? ", " : "[");
        if (c->sm90) { /* the persistent loop's tile */
            if (vars[d] == c->vm) sb_printf(b, "c_tm * %d + c_wg * %d", c->sh.bm, c->em);
            else if (vars[d] == c->vn) sb_printf(b, "c_tn * %d", c->sh.bn);
            else sb_puts(b, "c_tb");
        } else if (vars[d] == c->vm) sb_printf(b, "block_idx.x * %d", c->sh.bm);
        else if (vars[d] == c->vn) sb_printf(b, "block_idx.y * %d", c->sh.bn);
        else sb_puts(b, "block_idx.z");
    }
    sb_puts(b, "]");
}

/* ---- layouts ---------------------------------------------------------------------------- */

/* mma fragments for the block: warps WM x WN, each warp TM x TN atoms of C
 * and KA atoms deep (gemm.tile's forms, generalised), over the fragments of
 * the table's m16n8k16 row (target/frags.h; only the block part R is
 * written here). Transposed forms list the same factors with rows and
 * columns swapped (spatial <-> column_spatial, local <-> column_local), so
 * a thread holds the same elements in the same local order and `view`
 * turns one into the other. */
static void mma_layouts(const ct *c, char *la, char *lat, char *lb, char *lbt, char *lcc, size_t n)
{
    const ct_shape *s = &c->sh;
    int tm = s->bm / (16 * s->wm), tn = s->bn / (8 * s->wn), ka = s->bk / 16;
    const target_atom *row = target_mma_resolve("m16n8k16", TSL_DTYPE_F16, TSL_DTYPE_F32, NULL);
    strbuf f[5] = {{0}};
    int bad = !row || target_frag_text(&f[0], row, TARGET_A, 0) || target_frag_text(&f[1], row, TARGET_A, 1) ||
              target_frag_text(&f[2], row, TARGET_B, 0) || target_frag_text(&f[3], row, TARGET_B, 1) ||
              target_frag_text(&f[4], row, TARGET_C, 0);
    TSL_ASSERT(!bad); /* the sm80 table's m16n8k16 row has its three layouts */
    snprintf(lcc, n, "spatial(%d, %d).local(%d, %d).%s", s->wm, s->wn, tm, tn, sb_str(&f[4]));
    snprintf(la, n, "spatial(%d, 1).replicate(%d).local(%d, %d).%s", s->wm, s->wn, tm, ka, sb_str(&f[0]));
    snprintf(lat, n, "column_spatial(1, %d).replicate(%d).column_local(%d, %d).%s", s->wm, s->wn, ka, tm,
             sb_str(&f[1]));
    snprintf(lb, n, "replicate(%d).spatial(1, %d).local(%d, %d).%s", s->wm, s->wn, ka, tn, sb_str(&f[2]));
    snprintf(lbt, n, "replicate(%d).column_spatial(%d, 1).column_local(%d, %d).%s", s->wm, s->wn, tn, ka,
             sb_str(&f[3]));
    for (int i = 0; i < 5; i++) sb_free(&f[i]);
}

/* ---- the main loop ------------------------------------------------------------------------ */

static void spec(strbuf *b, const ct *c, const char *view, int ti, int trans, int is_a)
{
    char nb[160];
    pname(nb, sizeof nb, c->def->tensors[ti]->name);
    /* block shape and index map in the tensor's own dim order */
    int rows = is_a ? c->sh.bm : c->sh.bk, cols = is_a ? c->sh.bk : c->sh.bn;
    const char *ir = is_a ? "block_idx.x" : "k", *ic = is_a ? "k" : "block_idx.y";
    if (trans) {
        int t = rows;
        rows = cols, cols = t;
        const char *u = ir;
        ir = ic, ic = u;
    }
    sb_printf(b, "%s = %s[%s%d, %d] at (%s%s, %s) shared", view, nb, c->nb ? "1, " : "", rows, cols,
              c->nb ? "block_idx.z, " : "", ir, ic);
    /* rows padded by 16 bytes: the 8 rows one ldmatrix (or one warp's
     * column reads) touches fall in 8 different 16-byte bank groups */
    int pad = c->pad;
    if (c->cpu && !c->mma && !is_a && trans) {
        /* CPU: B^T stored k-major, so the micro-kernel's vector reads of
         * B's row at one kk are contiguous (A stays as stored: its reads
         * are broadcasts, and a transposing copy costs more than it saves) */
        if (c->nb) sb_printf(b, " layout (1, %d, %d):(%d, 1, %d)", rows, cols, cols * (rows + pad), rows + pad);
        else sb_printf(b, " layout (%d, %d):(1, %d)", rows, cols, rows + pad);
        return;
    }
    if (!c->cpu && !c->mma && is_a && !trans) {
        /* GPU f32: A's block stored k-major too, so a thread's tm rows at
         * one kk are contiguous (two 16-byte shared loads instead of tm
         * strided ones, which bound the k loop by shared bandwidth); the
         * copy in writes 4-byte elements across the transpose */
        if (c->nb) sb_printf(b, " layout (1, %d, %d):(%d, 1, %d)", rows, cols, cols * (rows + pad), rows + pad);
        else sb_printf(b, " layout (%d, %d):(1, %d)", rows, cols, rows + pad);
        return;
    }
    if (pad && c->nb) sb_printf(b, " layout (1, %d, %d):(%d, %d, 1)", rows, cols, rows * (cols + pad), cols + pad);
    else if (pad) sb_printf(b, " layout (%d, %d):(%d, 1)", rows, cols, cols + pad);
}

static void emit_mainloop(ct *c, strbuf *b)
{
    const ct_shape *s = &c->sh;
    const lang_tensor *A = c->def->tensors[c->ta];
    char kext[160];
    strbuf kb = {0};
    sexpr_text(&kb, c, A->shape[c->nb + (c->a_trans ? 0 : 1)]);
    snprintf(kext, sizeof kext, "%s", sb_str(&kb));
    sb_free(&kb);
    sb_printf(b, "  pipeline(grid=(k: cdiv(%s, %d)), stages=%d, in=[", kext, s->bk, c->stages);
    spec(b, c, "c_ta", c->ta, c->a_trans, 1);
    sb_puts(b, ", ");
    spec(b, c, "c_tb", c->tb, c->b_trans, 0);
    sb_puts(b, "], out=[]) {\n");
    const char *z = c->nb ? "0, " : "";
    const char *in = dt_name(A->dtype);
    if (c->mma) {
        char la[256], lat[256], lb[256], lbt[256], lcc[256];
        mma_layouts(c, la, lat, lb, lbt, lcc, sizeof la);
        if (c->a_trans) {
            sb_printf(b, "    c_ra0 = load_shared c_ta[%s0, 0] -> register %s[%d, %d] layout %s\n", z, in, s->bk, s->bm,
                      lat);
            sb_printf(b, "    c_ra = view c_ra0 -> register %s[%d, %d] layout %s\n", in, s->bm, s->bk, la);
        } else {
            sb_printf(b, "    c_ra = load_shared c_ta[%s0, 0] -> register %s[%d, %d] layout %s\n", z, in, s->bm, s->bk,
                      la);
        }
        if (c->b_trans) {
            sb_printf(b, "    c_rb0 = load_shared c_tb[%s0, 0] -> register %s[%d, %d] layout %s\n", z, in, s->bn, s->bk,
                      lbt);
            sb_printf(b, "    c_rb = view c_rb0 -> register %s[%d, %d] layout %s\n", in, s->bk, s->bn, lb);
        } else {
            sb_printf(b, "    c_rb = load_shared c_tb[%s0, 0] -> register %s[%d, %d] layout %s\n", z, in, s->bk, s->bn,
                      lb);
        }
        sb_puts(b, "    mma c_ra, c_rb, c_acc -> c_acc\n");
    } else {
        /* one k at a time: column kk of A's block and row kk of B's block,
         * broadcast over the thread's tm x tn micro-tile (P x Q threads) */
        char cl[4][96];
        int P = s->bm / c->tm, Q = s->bn / c->tn;
        snprintf(cl[0], sizeof cl[0], "spatial(%d, 1).replicate(%d).local(%d, 1)", P, Q, c->tm); /* A column */
        snprintf(cl[1], sizeof cl[1], "replicate(%d).spatial(1, %d).local(1, %d)", P, Q, c->tn); /* B row */
        snprintf(cl[2], sizeof cl[2], "replicate(%d).spatial(%d, 1).local(%d, 1)", P, Q, c->tn); /* B^T column */
        snprintf(cl[3], sizeof cl[3], "spatial(1, %d).replicate(%d).local(1, %d)", P, Q, c->tm); /* A^T row */
        const char *lcol = cl[0], *lrow = cl[1], *lcolb = cl[2], *lrowa = cl[3];
        sb_printf(b, "    for c_kk in 0 : %d {\n", s->bk);
        if (c->a_trans) {
            sb_printf(b, "      c_a0 = load_shared c_ta[%sc_kk, 0] -> register f32[1, %d] layout %s\n", z, s->bm, lrowa);
            sb_printf(b, "      c_a = view c_a0 -> register f32[%d, 1] layout %s\n", s->bm, lcol);
        } else {
            sb_printf(b, "      c_a = load_shared c_ta[%s0, c_kk] -> register f32[%d, 1] layout %s\n", z, s->bm, lcol);
        }
        if (c->b_trans) {
            sb_printf(b, "      c_b0 = load_shared c_tb[%s0, c_kk] -> register f32[%d, 1] layout %s\n", z, s->bn, lcolb);
            sb_printf(b, "      c_b = view c_b0 -> register f32[1, %d] layout %s\n", s->bn, lrow);
        } else {
            sb_printf(b, "      c_b = load_shared c_tb[%sc_kk, 0] -> register f32[1, %d] layout %s\n", z, s->bn, lrow);
        }
        sb_printf(b, "      c_ab = broadcast c_a -> register f32[%d, %d] layout %s dim 1\n", s->bm, s->bn, c->lc);
        sb_printf(b, "      c_bb = broadcast c_b -> register f32[%d, %d] layout %s dim 0\n", s->bm, s->bn, c->lc);
        sb_puts(b, "      c_p = mul c_ab, c_bb\n");
        /* on the CPU the k loop asks for the f32 micro-kernel atom
         * (target/cpu.c; the option cpu.micro_kernels=0 leaves the generic loop) */
        sb_printf(b, "      add c_acc, c_p -> c_acc%s\n", c->cpu && c->opt->micro_kernels ? " atom cpu.ukr.f32" : "");
        sb_puts(b, "    }\n");
    }
    sb_puts(b, "  }\n");
}

/* ---- the sm_90a plan --------------------------------------------------------------------------
 * A persistent grid (one block per multiprocessor, c_nsm) loops over the
 * output tiles of C (BM x BN, BM = 128), grouped 8 tiles down M so that
 * consecutive tiles share B's columns in L2. Warpgroup 0 (the producer, 40
 * registers) streams 64-deep k blocks of A (128 x 64, K-major) and B
 * (64 x BN, N-major, 64-wide TMA boxes) through a ring of shared stages,
 * across tiles: it waits until a stage is empty, announces its bytes on the
 * stage's full barrier and issues the TMA copies, so the next tile's blocks
 * arrive while the consumers run the epilogue. Warpgroups 1 and 2 (the
 * consumers, 232 registers) each own 64 rows: they wait until a stage is
 * full, run wgmma over it with one group in flight, and release the stage
 * before. After a tile's loop the epilogue runs on each consumer's 64 x BN
 * f32 tile in the wgmma accumulator layout (init ops, C's old value, the
 * scale, epilogue ops); a 16-bit C goes out through shared memory and a TMA
 * store (elements past C's edge are not written), others by masked stores.
 * The rows of A, B and C must be 16-byte aligned for TMA (K and N multiples
 * of 8): the launch is guarded, and the mma.sync plan runs otherwise. */
#define CT_SM90_SMEM (220 * 1024) /* the stages, C's staging tiles and the barriers */
#define CT_SM90_GROUP 8          /* tiles down M visited before moving right */
static const ct_shape CT_SM90 = {128, 256, 64, 0, 0, 384};

/* C leaves through shared memory and TMA (a 16-bit C). */
static int sm90_tma_store(const ct *c)
{
    tsl_dtype t = c->def->tensors[c->tc]->dtype;
    return t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16;
}

/* The ring's depth for the block shape (what is left beside C's tiles). */
static int sm90_stages(const ct *c)
{
    int stage = (c->sh.bm * c->sh.bk + c->sh.bk * c->sh.bn) * 2;
    int ctile = sm90_tma_store(c) ? c->sh.bm * c->sh.bn * 2 : 0;
    int n = (CT_SM90_SMEM - ctile - 2048) / stage;
    return n > 8 ? 8 : n;
}

/* The size text of tensor t's dim d. */
static void dim_text(char *buf, size_t n, const ct *c, int t, int d)
{
    strbuf kb = {0};
    sexpr_text(&kb, c, c->def->tensors[t]->shape[d]);
    snprintf(buf, n, "%s", sb_str(&kb));
    sb_free(&kb);
}

/* The tile loop of a role: c_t over this block's tiles, c_tm / c_tn (/ c_tb)
 * its coordinates (grouped order). Opens one brace. */
static void sm90_tile_loop(const ct *c, strbuf *b)
{
    char M[160], N[160], B[160];
    dim_text(M, sizeof M, c, c->tc, c->nb);
    dim_text(N, sizeof N, c, c->tc, c->nb + 1);
    if (c->nb) dim_text(B, sizeof B, c, c->tc, 0);
    sb_printf(b, "      let c_gm = cdiv(%s, %d)\n      let c_gn = cdiv(%s, %d)\n", M, c->sh.bm, N, c->sh.bn);
    sb_printf(b, "      let c_ntiles = c_gm * c_gn%s%s\n", c->nb ? " * " : "", c->nb ? B : "");
    sb_puts(b, "      for c_t in block_idx.x : c_ntiles : min(c_ntiles, c_nsm) {\n");
    if (c->nb) sb_puts(b, "        let c_tb = c_t / (c_gm * c_gn)\n        let c_r = c_t % (c_gm * c_gn)\n");
    else sb_puts(b, "        let c_r = c_t\n");
    sb_printf(b, "        let c_g0 = c_r / (%d * c_gn) * %d\n", CT_SM90_GROUP, CT_SM90_GROUP);
    sb_printf(b, "        let c_gs = min(c_gm - c_g0, %d)\n", CT_SM90_GROUP);
    sb_printf(b, "        let c_tm = c_g0 + c_r %% (%d * c_gn) %% c_gs\n", CT_SM90_GROUP);
    sb_printf(b, "        let c_tn = c_r %% (%d * c_gn) / c_gs\n", CT_SM90_GROUP);
}

static void emit_sm90_open(ct *c, strbuf *b)
{
    const ct_shape *s = &c->sh;
    const char *in = dt_name(c->def->tensors[c->ta]->dtype);
    int S = sm90_stages(c);
    /* the stages in the global tensors' own dim order (TMA boxes), 128-byte
     * swizzled rows of 64; a transposed operand is seen by wgmma through a
     * shared view (the same bytes) with its dims in [M, K] / [K, N] order */
    int SA = s->bm * s->bk, SB = s->bk * s->bn;
    if (!c->a_trans)
        sb_printf(b, "  c_as = alloc shared %s[%d, %d, %d] layout swizzle(3,3,3,(%d,%d,%d):(%d,%d,1))\n", in, S, s->bm,
                  s->bk, S, s->bm, s->bk, SA, s->bk);
    else {
        sb_printf(b, "  c_at = alloc shared %s[%d, %d, %d] layout swizzle(3,3,3,(%d,%d,(64,%d)):(%d,64,(1,%d)))\n", in,
                  S, s->bk, s->bm, S, s->bk, s->bm / 64, SA, 64 * s->bk);
        sb_printf(b, "  c_as = view c_at -> shared %s[%d, %d, %d] layout swizzle(3,3,3,(%d,(64,%d),%d):(%d,(1,%d),64))\n",
                  in, S, s->bm, s->bk, S, s->bm / 64, s->bk, SA, 64 * s->bk);
    }
    if (!c->b_trans)
        sb_printf(b, "  c_bs = alloc shared %s[%d, %d, %d] layout swizzle(3,3,3,(%d,%d,(64,%d)):(%d,64,(1,%d)))\n", in,
                  S, s->bk, s->bn, S, s->bk, s->bn / 64, SB, 64 * s->bk);
    else {
        sb_printf(b, "  c_bt = alloc shared %s[%d, %d, %d] layout swizzle(3,3,3,(%d,%d,%d):(%d,%d,1))\n", in, S, s->bn,
                  s->bk, S, s->bn, s->bk, SB, s->bk);
        sb_printf(b, "  c_bs = view c_bt -> shared %s[%d, %d, %d] layout swizzle(3,3,3,(%d,%d,%d):(%d,1,%d))\n", in, S,
                  s->bk, s->bn, S, s->bk, s->bn, SB, s->bk);
    }
    if (sm90_tma_store(c))
        sb_printf(b, "  c_cs = alloc shared %s[2, %d, %d] layout swizzle(3,3,3,(2,%d,(64,%d)):(%d,64,(1,%d)))\n",
                  dt_name(c->def->tensors[c->tc]->dtype), c->em, s->bn, c->em, s->bn / 64, c->em * s->bn, 64 * c->em);
    sb_printf(b, "  c_full = alloc shared u64[%d]\n  c_empty = alloc shared u64[%d]\n", S, S);
    sb_puts(b, "  mbar_init c_full, 1\n  mbar_init c_empty, 2\n  sync\n  warpgroups {\n");
    char kext[160], na[160], nb[160];
    dim_text(kext, sizeof kext, c, c->ta, c->nb + (c->a_trans ? 0 : 1));
    pname(na, sizeof na, c->def->tensors[c->ta]->name);
    pname(nb, sizeof nb, c->def->tensors[c->tb]->name);
    const char *z = c->nb ? "c_tb, " : "";
    sb_puts(b, "    role producer(1) regs(40) {\n      var c_it = 0\n");
    sm90_tile_loop(c, b);
    sb_printf(b, "        for c_k in 0 : cdiv(%s, %d) {\n", kext, s->bk);
    sb_printf(b, "          let c_s = c_it %% %d\n", S);
    sb_printf(b, "          mbar_wait c_empty[c_s], (c_it / %d + 1) %% 2\n", S);
    sb_printf(b, "          mbar_arrive c_full[c_s] bytes %d\n", (s->bm * s->bk + s->bk * s->bn) * 2);
    if (!c->a_trans)
        sb_printf(b, "          tma_load %s[%sc_tm * %d, c_k * %d], c_full[c_s] -> c_as[c_s]\n", na, z, s->bm, s->bk);
    else
        sb_printf(b, "          tma_load %s[%sc_k * %d, c_tm * %d], c_full[c_s] -> c_at[c_s]\n", na, z, s->bk, s->bm);
    if (!c->b_trans)
        sb_printf(b, "          tma_load %s[%sc_k * %d, c_tn * %d], c_full[c_s] -> c_bs[c_s]\n", nb, z, s->bk, s->bn);
    else
        sb_printf(b, "          tma_load %s[%sc_tn * %d, c_k * %d], c_full[c_s] -> c_bt[c_s]\n", nb, z, s->bn, s->bk);
    sb_puts(b, "          set c_it = c_it + 1\n        }\n      }\n    }\n");
    sb_puts(b, "    role consumer(2, c_wg) regs(232) {\n      var c_it = 0\n");
    sm90_tile_loop(c, b);
}

static void emit_sm90_mainloop(ct *c, strbuf *b)
{
    const ct_shape *s = &c->sh;
    char kext[160];
    dim_text(kext, sizeof kext, c, c->ta, c->nb + (c->a_trans ? 0 : 1));
    int S = sm90_stages(c);
    /* one wgmma group in flight: step k's products run while the
     * consumer waits for step k-1's and releases its stage; the tile's
     * last stage is released after the final wait */
    sb_printf(b, "  c_acc = alloc register f32[%d, %d] layout %s init 0.0\n", c->em, c->en, c->lc);
    sb_printf(b, "  let c_nk = cdiv(%s, %d)\n", kext, s->bk);
    sb_puts(b, "  for c_k in 0 : c_nk {\n");
    sb_printf(b, "    let c_s = c_it %% %d\n", S);
    sb_printf(b, "    mbar_wait c_full[c_s], (c_it / %d) %% 2\n", S);
    sb_puts(b, "    wgmma_fence\n");
    sb_printf(b, "    wgmma c_as[c_s, c_wg * %d, 0], c_bs[c_s, 0, 0], c_acc -> c_acc\n", c->em);
    sb_puts(b, "    wgmma_commit\n    wgmma_wait 1\n");
    sb_printf(b, "    if c_k > 0 {\n      mbar_arrive c_empty[(c_it + %d) %% %d]\n    }\n", S - 1, S);
    sb_puts(b, "    set c_it = c_it + 1\n  }\n  wgmma_wait 0\n");
    sb_printf(b, "  if c_nk > 0 {\n    mbar_arrive c_empty[(c_it + %d) %% %d]\n  }\n", S - 1, S);
}

/* The tile's store: through shared memory and TMA, or masked stores. */
static void emit_sm90_store(ct *c, strbuf *b, const char *out, const char *cname)
{
    int vars[3] = {0, 1, 2};
    const lang_tensor *C = c->def->tensors[c->tc];
    if (!sm90_tma_store(c)) {
        sb_printf(b, "  store_global %s -> %s", out, cname);
        tile_at(b, c, vars, C->rank);
        sb_puts(b, "\n");
        return;
    }
    /* the previous tile's TMA store has read c_cs[c_wg]: then write it,
     * make the writes visible to the copy engine, store */
    sb_puts(b, "  bulk_wait 0\n");
    sb_printf(b, "  store_shared %s -> c_cs[c_wg, 0, 0]\n  fence_async\n  sync\n", out);
    sb_printf(b, "  tma_store c_cs[c_wg] -> %s", cname);
    tile_at(b, c, vars, C->rank);
    sb_puts(b, "\n  bulk_commit\n");
}

/* ---- pointwise ops on the tile ------------------------------------------------------------ */

/* A value of an expression: a register tile (f32[BM, BN], layout lc) or a
 * scalar operand text (a literal or a typed scalar parameter). */
typedef struct cv {
    int tile;
    char text[96];
} cv;

static cv cv_tile(ct *c)
{
    cv v = {.tile = 1};
    snprintf(v.text, sizeof v.text, "c_v%d", c->tmp++);
    return v;
}

/* x as a tile (a scalar filled in). */
static cv as_tile(ct *c, cv x)
{
    if (x.tile) return x;
    cv r = cv_tile(c);
    sb_printf(&c->body, "  %s = alloc register f32[%d, %d] layout %s init %s\n", r.text, c->em, c->en, c->lc,
              x.text);
    return r;
}

/* The current value of C at the tile: the register value, or loaded. */
static cv load_c(ct *c)
{
    cv r = {.tile = 1};
    if (c->cur[0]) {
        snprintf(r.text, sizeof r.text, "%s", c->cur);
        return r;
    }
    use_tensor(c, c->tc);
    const lang_tensor *C = c->def->tensors[c->tc];
    char nb[160];
    pname(nb, sizeof nb, C->name);
    r = cv_tile(c);
    int vars[3] = {0, 1, 2};
    strbuf at = {0};
    tile_at(&at, c, vars, C->rank);
    sb_printf(&c->body, "  %s = load_global %s%s -> register %s[%d, %d] layout %s\n", r.text, nb, sb_str(&at),
              dt_name(C->dtype), c->em, c->en, c->lc);
    sb_free(&at);
    if (C->dtype != TSL_DTYPE_F32) {
        cv f = cv_tile(c);
        sb_printf(&c->body, "  %s = cast %s -> register f32[%d, %d] layout %s\n", f.text, r.text, c->em, c->en,
                  c->lc);
        r = f;
    }
    return r;
}

/* A read of tensor T (not C) in a side op: every index a pure parallel
 * var, in the order (batch?, m?, n?) with m or n present. Loaded and
 * broadcast over the tile. */
static int load_other(ct *c, const graph_op *op, const graph_operand *o, cv *out)
{
    const lang_tensor *T = c->def->tensors[o->tensor];
    if (!o->affine || !is_io_dt(T->dtype) || o->rank < 1 || o->rank > 3) return 0;
    int vars[3], has_m = 0, has_n = 0, prev = -1;
    for (int d = 0; d < o->rank; d++) {
        int v = o->idx[d].var;
        if (v < 0 || v >= op->niter || v <= prev || !covers(op, v, T, d)) return 0;
        prev = v;
        vars[d] = v;
        has_m |= v == c->vm;
        has_n |= v == c->vn;
    }
    if (!has_m && !has_n) return 0;
    if (c->nb && vars[0] != 0) return 0; /* a batch-indexed tensor must have the batch first */
    use_tensor(c, o->tensor);
    char nb[160];
    pname(nb, sizeof nb, T->name);
    strbuf at = {0};
    tile_at(&at, c, vars, o->rank);
        cv r = cv_tile(c);
    const char *dt = dt_name(T->dtype);
    if (has_m && has_n) {
        sb_printf(&c->body, "  %s = load_global %s%s -> register %s[%d, %d] layout %s\n", r.text, nb, sb_str(&at), dt,
                  c->em, c->en, c->lc);
    } else {
        /* a vector along n (bias(o)) or along m (denom(b, i)): 16
         * threads hold len/16 contiguous elements each, the other
         * threads replicate them; then broadcast over the tile */
        int len = has_n ? c->en : c->em;
        char lay[96];
        snprintf(lay, sizeof lay, "replicate(%d).spatial(16).local(%d)", c->ethreads / 16, len / 16);
        cv v1 = cv_tile(c);
        sb_printf(&c->body, "  %s = load_global %s%s -> register %s[%d] layout %s\n", v1.text, nb, sb_str(&at), dt, len,
                  lay);
        if (T->dtype != TSL_DTYPE_F32) {
            cv f = cv_tile(c);
            sb_printf(&c->body, "  %s = cast %s -> register f32[%d] layout %s\n", f.text, v1.text, len, lay);
            v1 = f;
        }
        sb_printf(&c->body, "  %s = broadcast %s -> register f32[%d, %d] layout %s dim %d\n", r.text, v1.text, c->em,
                  c->en, c->lc, has_n ? 0 : 1);
        sb_free(&at);
        *out = r;
        return 1;
    }
    sb_free(&at);
    if (T->dtype != TSL_DTYPE_F32) {
        cv f = cv_tile(c);
        sb_printf(&c->body, "  %s = cast %s -> register f32[%d, %d] layout %s\n", f.text, r.text, c->em, c->en, c->lc);
        r = f;
    }
    *out = r;
    return 1;
}

static int side_expr(ct *c, const graph_op *op, const graph_expr *e, cv *out);

static const char *unary_name(int b)
{
    switch (b) {
    case LANG_EXP: return "exp";
    case LANG_LOG: return "log";
    case LANG_SQRT: return "sqrt";
    case LANG_RSQRT: return "rsqrt";
    case LANG_TANH: return "tanh";
    case LANG_SIGMOID: return "sigmoid";
    case LANG_ABS: return "abs";
    case LANG_ERF: return "erf";
    default: return NULL;
    }
}

static int side_binary(ct *c, const char *opname, cv x, cv y, cv *out)
{
    if (!x.tile && !y.tile) x = as_tile(c, x);
    if (!x.tile) {
        /* a scalar first operand: commutative ops swap, others fill a tile */
        if (!strcmp(opname, "add") || !strcmp(opname, "mul") || !strcmp(opname, "max") || !strcmp(opname, "min")) {
            cv t = x;
            x = y;
            y = t;
        } else {
            x = as_tile(c, x);
        }
    }
    cv r = cv_tile(c);
    sb_printf(&c->body, "  %s = %s %s, %s\n", r.text, opname, x.text, y.text);
    *out = r;
    return 1;
}

/* The scalar body of a side op as tile instructions, all in f32. */
static int side_expr(ct *c, const graph_op *op, const graph_expr *e, cv *out)
{
    const lang_expr *src = e->src;
    switch (e->kind) {
    case LANG_E_INT:
        *out = (cv){0};
        snprintf(out->text, sizeof out->text, "%lld.0", (long long)src->ival);
        return 1;
    case LANG_E_FLOAT:
        *out = (cv){0};
        snprintf(out->text, sizeof out->text, "%.17g", src->fval);
        if (!strpbrk(out->text, ".eEn")) strcat(out->text, ".0");
        return 1;
    case LANG_E_SCALAR: {
        if (!dtype_info_of(src->tensor->dtype)->is_float) return 0;
        use_scalar(c, src->tensor->index);
        *out = (cv){0};
        pname(out->text, sizeof out->text, src->tensor->name);
        return 1;
    }
    case LANG_E_SIZE: {
        /* an int size in float arithmetic: a tile filled with it */
        int slot = src->slot, known = 0;
        for (int i = 0; i < c->nsize; i++) known |= c->psize[i] == slot;
        if (!known && c->nsize < 64) c->psize[c->nsize++] = slot;
        cv s = {0};
        pname(s.text, sizeof s.text, c->def->sizes[slot]);
        *out = as_tile(c, s);
        return 1;
    }
    case LANG_E_ACCESS: {
        const graph_operand *o = &op->operands[e->operand];
        if (o->tensor == c->tc) {
            if (!o->identity) return 0;
            *out = load_c(c);
            return 1;
        }
        return load_other(c, op, o, out);
    }
    case LANG_E_UNARY: {
        if (src->op != LANG_NEG) return 0;
        cv x;
        if (!side_expr(c, op, e->args[0], &x)) return 0;
        x = as_tile(c, x);
        cv r = cv_tile(c);
        sb_printf(&c->body, "  %s = neg %s\n", r.text, x.text);
        *out = r;
        return 1;
    }
    case LANG_E_BINARY: {
        const char *name = src->op == LANG_ADD   ? "add"
                           : src->op == LANG_SUB ? "sub"
                           : src->op == LANG_MUL ? "mul"
                           : src->op == LANG_DIV ? "div"
                                                 : NULL;
        if (!name || !dtype_info_of(src->optype)->is_float) return 0;
        cv x, y;
        if (!side_expr(c, op, e->args[0], &x) || !side_expr(c, op, e->args[1], &y)) return 0;
        return side_binary(c, name, x, y, out);
    }
    case LANG_E_CALL: {
        if (!dtype_info_of(src->type)->is_float) return 0;
        if (e->nargs == 2) {
            if (src->op != LANG_MAX && src->op != LANG_MIN) return 0;
            cv x, y;
            if (!side_expr(c, op, e->args[0], &x) || !side_expr(c, op, e->args[1], &y)) return 0;
            return side_binary(c, src->op == LANG_MAX ? "max" : "min", x, y, out);
        }
        const char *name = unary_name(src->op);
        cv x;
        if (!name || !side_expr(c, op, e->args[0], &x)) return 0;
        x = as_tile(c, x);
        cv r = cv_tile(c);
        sb_printf(&c->body, "  %s = %s %s\n", r.text, name, x.text);
        *out = r;
        return 1;
    }
    case LANG_E_CAST:
        if (!dtype_info_of(src->type)->is_float) return 0;
        return side_expr(c, op, e->args[0], out);
    default: return 0;
    }
}

/* The anchor's scalar factors (its body without the two reads), as a
 * scalar operand text; "" when none. */
static int scale_text(ct *c, const graph_expr *e, strbuf *out, int *nfac)
{
    if (e->kind == LANG_E_ACCESS || e->kind == LANG_E_CAST) return 1; /* the reads (product_ok) */
    if (e->kind == LANG_E_BINARY) return scale_text(c, e->args[0], out, nfac) && scale_text(c, e->args[1], out, nfac);
    cv v;
    if (!side_expr(c, c->anchor, e, &v) || v.tile) return 0;
    if (*nfac) sb_puts(out, "|");
    sb_puts(out, v.text);
    (*nfac)++;
    return 1;
}

/* ---- the kernel text ----------------------------------------------------------------------- */

static int build_body(ct *c)
{
    const graph *g = c->g;
    const graph_group *grp = c->grp;
    const ct_shape *s = &c->sh;
    strbuf *b = &c->body;
    use_tensor(c, c->ta);
    use_tensor(c, c->tb);
    use_tensor(c, c->tc);
    if (c->sm90) {
        /* the main loop first: C's start value (init ops, C's old value) is
         * computed after it, so that no tile beside the 128-register
         * accumulator lives across the loop (C is written only at the end) */
        emit_sm90_open(c, b);
        emit_sm90_mainloop(c, b);
    }
    /* init ops: the accumulator's start value */
    for (int i = grp->first; i < grp->anchor; i++) {
        cv v;
        if (!side_expr(c, &g->ops[i], g->ops[i].body, &v)) return 0;
        v = as_tile(c, v);
        snprintf(c->cur, sizeof c->cur, "%s", v.text);
    }
    cv start = {.tile = 1};
    if (c->anchor->bang) {
        snprintf(start.text, sizeof start.text, "0.0");
        start.tile = 0;
    } else {
        start = load_c(c);
    }
    /* the product sum, scaled */
    strbuf sc = {0};
    int nfac = 0;
    if (!scale_text(c, c->anchor->body, &sc, &nfac)) {
        sb_free(&sc);
        return 0;
    }
    if (!c->sm90) {
        sb_printf(b, "  c_acc = alloc register f32[%d, %d] layout %s init 0.0\n", c->em, c->en, c->lc);
        emit_mainloop(c, b);
    }
    cv sum = {.tile = 1};
    snprintf(sum.text, sizeof sum.text, "c_acc");
    /* factors joined by '|' */
    char *f = sb_take(&sc);
    for (char *tok = f; nfac && tok && *tok;) {
        char *bar = strchr(tok, '|');
        if (bar) *bar = 0;
        cv fv = {0};
        snprintf(fv.text, sizeof fv.text, "%s", tok);
        side_binary(c, "mul", sum, fv, &sum);
        tok = bar ? bar + 1 : NULL;
    }
    free(f);
    cv res = sum;
    if (!c->anchor->bang || start.tile) side_binary(c, "add", start, sum, &res);
    snprintf(c->cur, sizeof c->cur, "%s", res.text);
    /* epilogue ops on the tile */
    for (int i = grp->anchor + 1; i < grp->first + grp->nops; i++) {
        cv v;
        if (!side_expr(c, &g->ops[i], g->ops[i].body, &v)) return 0;
        v = as_tile(c, v);
        snprintf(c->cur, sizeof c->cur, "%s", v.text);
    }
    const lang_tensor *C = c->def->tensors[c->tc];
    const char *out = c->cur;
    if (C->dtype != TSL_DTYPE_F32) {
        sb_printf(b, "  c_out = cast %s -> register %s[%d, %d] layout %s\n", out, dt_name(C->dtype), c->em, c->en,
                  c->lc);
        out = "c_out";
    }
    char nb[160];
    pname(nb, sizeof nb, C->name);
    if (c->sm90) {
        emit_sm90_store(c, b, out, nb);
        if (sm90_tma_store(c)) sb_puts(b, "      }\n      bulk_wait 0\n    }\n  }\n");
        else sb_puts(b, "      }\n    }\n  }\n");
        return 1;
    }
    int vars[3] = {0, 1, 2};
    sb_printf(b, "  store_global %s -> %s", out, nb);
    tile_at(b, c, vars, C->rank);
    sb_puts(b, "\n");
    (void)s;
    return 1;
}

static void header(ct *c, strbuf *h, const char *kname)
{
    const ct_shape *s = &c->sh;
    const lang_tensor *C = c->def->tensors[c->tc];
    char nb[160];
    sb_printf(h, "kernel %s(", kname);
    int np = 0;
    for (int i = 0; i < c->nparam_t; i++) {
        const lang_tensor *t = c->def->tensors[c->ptensor[i]];
        pname(nb, sizeof nb, t->name);
        sb_printf(h, "%s%s: global %s[", np++ ? ", " : "", nb, dt_name(t->dtype));
        for (int d = 0; d < t->rank; d++) {
            if (d) sb_puts(h, ", ");
            sexpr_text(h, c, t->shape[d]);
        }
        sb_puts(h, "]");
    }
    for (int i = 0; i < c->nscalar; i++) {
        const lang_tensor *t = c->def->tensors[c->pscalar[i]];
        char db[16];
        pname(nb, sizeof nb, t->name);
        sb_printf(h, "%s%s: %s", np++ ? ", " : "", nb, tile_dtype_name(tile_dtype_from_tsl(t->dtype), db));
    }
    for (int i = 0; i < c->nsize; i++) {
        if (size_bound(c, c->psize[i])) continue;
        pname(nb, sizeof nb, c->def->sizes[c->psize[i]]);
        sb_printf(h, "%s%s: int", np++ ? ", " : "", nb);
    }
    if (c->sm90) {
        /* a persistent grid: min(tiles, multiprocessors) blocks */
        sb_printf(h, "%sc_nsm: int) grid(min(cdiv(", np++ ? ", " : "");
        sexpr_text(h, c, C->shape[c->nb]);
        sb_printf(h, ", %d) * cdiv(", s->bm);
        sexpr_text(h, c, C->shape[c->nb + 1]);
        sb_printf(h, ", %d)", s->bn);
        if (c->nb) {
            sb_puts(h, " * ");
            sexpr_text(h, c, C->shape[0]);
        }
        /* the stages, C's staging tiles, the barriers, the 1024-byte alignments */
        int64_t smem = (int64_t)sm90_stages(c) * (s->bm * s->bk + s->bk * s->bn) * 2 +
                       (sm90_tma_store(c) ? s->bm * s->bn * 2 : 0) + 4096;
        sb_printf(h, ", c_nsm)) threads(%d) smem_budget(%lld) {\n", s->threads, (long long)smem);
        return;
    }
    sb_puts(h, ") grid(cdiv(");
    sexpr_text(h, c, C->shape[c->nb]);
    sb_printf(h, ", %d), cdiv(", s->bm);
    sexpr_text(h, c, C->shape[c->nb + 1]);
    sb_printf(h, ", %d)", s->bn);
    if (c->nb) {
        sb_puts(h, ", ");
        sexpr_text(h, c, C->shape[0]);
    }
    int bytes = c->mma ? 2 : 4;
    int64_t ra = c->a_trans ? s->bk : s->bm, ca = c->a_trans ? s->bm : s->bk;
    int64_t rb = c->b_trans ? s->bn : s->bk, cb = c->b_trans ? s->bk : s->bn;
    int64_t smem = c->stages * (ra * (ca + c->pad) + rb * (cb + c->pad)) * bytes;
    if (c->cpu && !c->mma) /* k-major operands are padded along the other dim */
        smem = c->stages * (ra * (ca + c->pad) + s->bk * (s->bn + c->pad)) * bytes * 5 / 4;
    /* (x 5/4: the tile interpreter's shared_bytes counts n * (bits + 7) / 8,
     * 4.875 bytes per f32; the budget only bounds, the C target uses what
     * the tensors need) */
    sb_printf(h, ") threads(%d) smem_budget(%lld) {\n", s->threads, (long long)smem);
}

/* The kernel's text for the group, or NULL when the group is not this
 * strategy's shape. malloc'd. */
static char *contract_text(ct *c, const char *kname)
{
    if (!recognise(c)) return NULL;
    c->em = c->sh.bm;
    c->en = c->sh.bn;
    c->ethreads = c->sh.threads;
    if (c->sm90) {
        c->sh = CT_SM90;
        /* a 64 x 256 f32 accumulator is 128 registers of the consumers'
         * 232: an epilogue that holds more tiles of that size (C's old
         * value, a broadcast bias, GELU's temporaries) spills, so groups
         * with more than the product take 64 x 128 per consumer */
        if (c->grp->nops > 1 || !c->anchor->bang) c->sh.bn = 128;
        /* small M (decode, a few rows): 64 columns a block, so that N / 64
         * blocks keep every SM streaming B */
        if (c->want_sm90 == 2) c->sh.bn = 64;
        c->em = c->sh.bm / 2;
        c->en = c->sh.bn;
        c->ethreads = 128;
        tile_wgmma_acc_layout(c->en, c->lc, sizeof c->lc);
    } else if (c->mma) {
        char la[256], lat[256], lb[256], lbt[256];
        mma_layouts(c, la, lat, lb, lbt, c->lc, sizeof c->lc);
    } else {
        snprintf(c->lc, sizeof c->lc, "spatial(%d, %d).local(%d, %d)", c->sh.bm / c->tm, c->sh.bn / c->tn, c->tm,
                 c->tn);
    }
    if (!build_body(c)) {
        sb_free(&c->body);
        return NULL;
    }
    strbuf h = {0};
    header(c, &h, kname);
    sb_puts(&h, sb_str(&c->body));
    sb_puts(&h, "}\n");
    sb_free(&c->body);
    return sb_take(&h);
}

/* The shared text-IR parse step (tiletext.c) until this file moves onto the
 * tile builder. */
static tile_kernel *parse_kernel(sched_plan *p, char *text, const char *kname)
{
    return tt_parse_kernel(p, text, kname, "contraction");
}

/* Append kernel k as a launch of the plan, its arguments in the kernel's
 * parameter order (header's order). */
static void push_launch(sched_plan *p, const ct *c, tile_kernel *k, const sched_guard *guard)
{
    tsl_arena *a = p->m->arena;
    const graph_group *grp = c->grp;
    ARENA_PUSH(a, p->m->kernels, p->m->nkernels, p->m->capkernels, k);
    sched_launch ln = {.k = k, .stmt = grp->first, .nstmts = grp->nops};
    if (guard) ln.guard = *guard;
    ARENA_PUSH(a, p->launches, p->nlaunches, p->caplaunches, ln);
    sched_launch *l = &p->launches[p->nlaunches - 1];
    for (int i = 0; i < c->nparam_t; i++) {
        sched_arg arg = {.name = k->params[i]->name, .kind = SCHED_ARG_TENSOR, .tensor = c->ptensor[i]};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    for (int i = 0; i < c->nscalar; i++) {
        sched_arg arg = {.name = k->params[l->nargs]->name, .kind = SCHED_ARG_SCALAR, .tensor = c->pscalar[i]};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    for (int i = 0; i < c->nsize; i++) {
        if (size_bound(c, c->psize[i])) continue;
        sched_arg arg = {.name = k->params[l->nargs]->name, .kind = SCHED_ARG_SIZE, .sym = c->psize[i]};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    if (c->sm90) {
        sched_arg arg = {.name = k->params[l->nargs]->name, .kind = SCHED_ARG_SMS};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    TSL_ASSERT(l->nargs == k->nparams);
}

/* The sizes the sm_90a plan's TMA needs to be multiples of 8 (16-byte
 * rows of f16/bf16): the last dims of A, B and C. 0 when a constant one
 * is not. */
static int sm90_guard(const ct *c, sched_guard *g)
{
    memset(g, 0, sizeof *g);
    const lang_sexpr *ext[3] = {c->def->tensors[c->ta]->shape[c->nb + 1], c->def->tensors[c->tb]->shape[c->nb + 1],
                                c->def->tensors[c->tc]->shape[c->nb + 1]};
    for (int i = 0; i < 3; i++) {
        if (ext[i]->kind == LANG_SX_CONST) {
            if (ext[i]->value % 8) return 0;
            continue;
        }
        int dup = 0;
        for (int j = 0; j < g->n; j++) dup |= g->sym[j] == ext[i]->sym;
        if (dup) continue;
        g->sym[g->n] = ext[i]->sym;
        g->op[g->n] = SCHED_GUARD_MOD;
        g->val[g->n++] = 8;
    }
    return 1;
}

/* g with one more term (a copy). */
static sched_guard guard_and(sched_guard g, int sym, sched_guard_op op, int64_t val)
{
    if (g.n < SCHED_MAX_GUARD) {
        g.sym[g.n] = sym;
        g.op[g.n] = op;
        g.val[g.n++] = val;
    }
    return g;
}

/* The sm_90a launches of the group (see sched_lower_contract); 0 when the
 * group is not theirs (nothing pushed). */
static int sm90_plans(sched_plan *p, const ct *base, const char *kname)
{
    const char *names[2];
    ct cs[2];
    tile_kernel *ks[2] = {NULL, NULL};
    sched_guard align;
    for (int w = 0; w < 2; w++) {
        cs[w] = *base;
        cs[w].want_sm90 = w + 1;
        names[w] = arena_printf(p->m->arena, "%s_wgmma%s", kname, w ? "_narrow" : "");
        char *t = contract_text(&cs[w], names[w]);
        if (!t || !cs[w].sm90 || !sm90_guard(&cs[w], &align)) {
            free(t);
            return 0;
        }
        ks[w] = parse_kernel(p, t, names[w]);
        if (!ks[w]) return 0;
    }
    /* M's size symbol picks wide or narrow; a constant M picks one now */
    const lang_sexpr *m = base->def->tensors[cs[0].tc]->shape[cs[0].nb];
    ct c8 = *base;
    char *t8 = align.n ? contract_text(&c8, kname) : NULL;
    tile_kernel *k8 = t8 ? parse_kernel(p, t8, kname) : NULL;
    if (align.n && !k8) return 0;
    if (m->kind == LANG_SX_CONST) {
        int w = m->value <= 128;
        push_launch(p, &cs[w], ks[w], align.n ? &align : NULL);
    } else {
        sched_guard wide = guard_and(align, m->sym, SCHED_GUARD_GT, 128);
        sched_guard narrow = guard_and(align, m->sym, SCHED_GUARD_LE, 128);
        push_launch(p, &cs[0], ks[0], &wide);
        push_launch(p, &cs[1], ks[1], &narrow);
    }
    if (k8) {
        align.negate = 1;
        push_launch(p, &c8, k8, &align);
    }
    return 1;
}

int sched_lower_contract(sched_plan *p, const graph *g, const graph_group *grp)
{
    ct c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.def = g->def;
    c.grp = grp;
    c.cpu = p->target == TSL_TARGET_CPU;
    c.opt = p->opt;
    const char *kname = arena_printf(p->m->arena, "%s_g%d_contract", g->def->name, grp->index);
    /* sm_90a: the TMA/wgmma plans, guarded by the sizes TMA needs: a wide
     * one and, for M <= 128, a narrow one (64 columns a block); the
     * mma.sync plan for the sizes TMA cannot take */
    if (!c.cpu && p->sm >= 90 && sm90_plans(p, &c, kname)) return 1;
    char *text = contract_text(&c, kname);
    if (!text) return 0;
    tile_kernel *k = parse_kernel(p, text, kname);
    if (!k) return 0;
    push_launch(p, &c, k, NULL);
    return 1;
}
