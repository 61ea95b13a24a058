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
 *   - f32 inputs: per-thread FMA outer products, each thread a tm x tn
 *     micro-tile of C: on the GPU 4 x 4 sub-tiles spread over the block
 *     (float4 shared loads without bank conflicts), on the CPU one
 *     contiguous block (the C generator's register-blocked micro-kernel);
 *   - init ops compute the accumulator's start (reading C's old values from
 *     memory), the scale s multiplies the product sum, epilogue ops run on
 *     the tile in registers; one masked store of C.
 *
 * The kernel is built from the strategies' building blocks (blocks.h: the
 * kernel shell, a statement body on the tile, blocks_mma.h: the main
 * loops, the sm_90a ring); anything outside this shape returns 0 before
 * the plan is touched and the generic strategy lowers the group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/blocks_mma.h"

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
    int mma;               /* tensor cores: f16/bf16, or f32 as tf32 (tf32) */
    int tf32;              /* f32 through the m16n8k8 .tf32 row: only when
                            * the options allow tf32 (never silently) */
    int pad;               /* elements of padding per shared row */
    int stages;            /* pipeline depth */
    int cpu;               /* f32 plan for the CPU target (CT_CPU) */
    int tm, tn;            /* f32: the thread's micro-tile */
    char lc[256];          /* the accumulator layout */
    int want_sm90;         /* asked for the sm_90a plan: 1 wide, 2 narrow (small M) */
    int sm90;              /* the sm_90a plan: TMA ring, wgmma, warpgroups (ct_sm90) */
    int em, en, ethreads;  /* the epilogue's tile of C and the threads it spans:
                            * the block's, or one consumer warpgroup's (sm90) */
    const sched_options *opt; /* the plan's choices (sched/options.h) */
    sched_blk *kb;         /* the kernel being built */
    sched_blk_ring ring;   /* sm90: the ring's values (the tile's origin) */
    int split;             /* split-K: 1 the slices' kernel, 2 the sum's (ct_build) */
    int split_ws;          /* split-K: the plan's workspace (scratch index) */
} ct;

/* The sm_90a plan (blocks_mma.c, "the sm_90a ring"): BM = 128 rows a tile,
 * two consumer warpgroups of 64 rows, 64-deep k blocks; the tiles visited
 * contract.sm90.group (8) down M before moving right. The rows of A, B and C must be
 * 16-byte aligned for TMA (K and N multiples of 8): the launch is guarded,
 * and the mma.sync plan runs otherwise. */
static const ct_shape CT_SM90 = {128, 256, 64, 0, 0, 384};

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
    /* f32 on CUDA: tf32 tensor cores when the user allowed them (the
     * sm_80 mma.sync plan with the .tf32 row), else FMA micro-tiles */
    c->tf32 = !c->cpu && A->dtype == TSL_DTYPE_F32 && c->opt->allow_tf32 > 0;
    if (c->tf32) c->mma = 1;
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
    c->sm90 = c->want_sm90 && c->mma && !c->tf32; /* wgmma's tf32 takes K-major B only */
    /* the GPU plans: options.h's contract.mma (f16/bf16) and contract.fma
     * (f32), checked by the caller; their defaults are CT_MMA and CT_FMA */
    const sched_contract_options *co = c->mma ? &c->opt->mma : &c->opt->fma;
    if (c->mma) c->sh = (ct_shape){co->bm, co->bn, co->bk, co->wm, co->wn, 32 * co->wm * co->wn};
    else c->sh = (ct_shape){co->bm, co->bn, co->bk, 0, 0, (co->bm / co->tm) * (co->bn / co->tn)};
    if (!c->mma) {
        c->tm = co->tm;
        c->tn = co->tn;
    }
    /* (contract.mma.pad counts 16-bit elements: the same bytes in f32) */
    c->pad = c->tf32 ? co->pad / 2 : co->pad;
    c->stages = co->stages;
    for (int i = grp->first; i < grp->first + grp->nops; i++)
        if (i != grp->anchor && !side_op_ok(c, &g->ops[i])) return 0;
    return 1;
}

/* ---- the kernel ------------------------------------------------------------------------------------ */

/* The block product of the plan (blocks_mma.h). */
static sched_blk_gemm ct_gemm(sched_blk *kb, const ct *c)
{
    const lang_tensor *A = c->def->tensors[c->ta];
    sched_blk_gemm g = {
        .a = sched_blk_tensor(kb, c->ta),
        .b = sched_blk_tensor(kb, c->tb),
        .in = A->dtype,
        .a_trans = c->a_trans,
        .b_trans = c->b_trans,
        .nb = c->nb,
        .bm = c->sh.bm,
        .bn = c->sh.bn,
        .bk = c->sh.bk,
        .wm = c->sh.wm,
        .wn = c->sh.wn,
        .tm = c->tm,
        .tn = c->tn,
        .threads = c->sh.threads,
        .pad = c->pad,
        .stages = c->stages,
        .mma = c->mma,
        .tf32 = c->tf32,
        .cpu = c->cpu,
        .ukr = c->cpu && c->opt->micro_kernels,
        .kext = sched_blk_extent(kb, A->shape[c->nb + (c->a_trans ? 0 : 1)]),
        .lc = c->lc,
    };
    return g;
}

/* The tile's first coordinate along box var v (sched_blk_tile.origin). */
static tile_expr *ct_origin(void *ctx, int v)
{
    ct *c = ctx;
    sched_blk *kb = c->kb;
    if (c->sm90) { /* the persistent loop's tile */
        if (v == c->vm)
            return sched_blk_bin(kb, TILE_OP_ADD, sched_blk_bin(kb, TILE_OP_MUL, sched_blk_v(kb, c->ring.tm), sched_blk_int(kb, c->sh.bm)),
                                 sched_blk_bin(kb, TILE_OP_MUL, sched_blk_v(kb, c->ring.wg), sched_blk_int(kb, c->em)));
        if (v == c->vn) return sched_blk_bin(kb, TILE_OP_MUL, sched_blk_v(kb, c->ring.tn), sched_blk_int(kb, c->sh.bn));
        return sched_blk_v(kb, c->ring.tb);
    }
    if (v == c->vm) return sched_blk_bin(kb, TILE_OP_MUL, sched_blk_bidx(kb, 0), sched_blk_int(kb, c->sh.bm));
    if (v == c->vn) return sched_blk_bin(kb, TILE_OP_MUL, sched_blk_bidx(kb, 1), sched_blk_int(kb, c->sh.bn));
    return sched_blk_bidx(kb, 2);
}

static int ct_covers(void *ctx, const graph_op *op, int v, int ti, int d)
{
    ct *c = ctx;
    return covers(op, v, c->def->tensors[ti], d);
}

/* The anchor's scalar factors (its body without the two reads), in
 * order; 0 when one is not a scalar. */
static int ct_scale(ct *c, sched_blk_tile *T, const graph_expr *e, sched_blk_val *fac, int *nfac)
{
    if (e->kind == LANG_E_ACCESS || e->kind == LANG_E_CAST) return 1; /* the reads (product_ok) */
    if (e->kind == LANG_E_BINARY) return ct_scale(c, T, e->args[0], fac, nfac) && ct_scale(c, T, e->args[1], fac, nfac);
    sched_blk_val v;
    if (*nfac == 16 || !sched_blk_body(T, c->anchor, e, &v) || v.tile) return 0;
    fac[(*nfac)++] = v;
    return 1;
}

static tile_expr *ct_split_s(sched_blk *kb, const ct *c);

/* The header: grid, threads and shared budget. */
static void ct_header(sched_blk *kb, ct *c, const sched_blk_gemm *g)
{
    const ct_shape *s = &c->sh;
    const lang_tensor *C = c->def->tensors[c->tc];
    tile_expr *M = sched_blk_extent(kb, C->shape[c->nb]), *N = sched_blk_extent(kb, C->shape[c->nb + 1]);
    tile_expr *gm = sched_blk_bin(kb, TILE_OP_CDIV, M, sched_blk_int(kb, s->bm));
    tile_expr *gn = sched_blk_bin(kb, TILE_OP_CDIV, N, sched_blk_int(kb, s->bn));
    if (c->sm90) {
        /* a persistent grid: min(tiles, multiprocessors) blocks (clusters) */
        tile_expr *grid = sched_blk_ring_grid(kb, g, &c->ring, sched_blk_extent(kb, C->shape[c->nb]),
                                              sched_blk_extent(kb, C->shape[c->nb + 1]),
                                              c->nb ? sched_blk_extent(kb, C->shape[0]) : NULL);
        sched_blk_grid(kb, 1, &grid, s->threads, sched_blk_ring_smem(g, c->ring.tma_store));
        return;
    }
    tile_expr *grid[3] = {gm, gn, c->nb ? sched_blk_extent(kb, C->shape[0]) : NULL};
    if (c->split == 1) { /* z: the slices */
        grid[2] = ct_split_s(kb, c);
    } else if (c->split == 2) { /* the sum: no shared memory */
        sched_blk_grid(kb, 2, grid, s->threads, 0);
        return;
    }
    int bytes = c->mma && !c->tf32 ? 2 : 4;
    int64_t ra = c->a_trans ? s->bk : s->bm, ca = c->a_trans ? s->bm : s->bk;
    int64_t rb = c->b_trans ? s->bn : s->bk, cb = c->b_trans ? s->bk : s->bn;
    int pad = c->tf32 ? 2 * c->pad : c->pad; /* (blk_spec doubles some tf32 pads: bound by the larger) */
    int64_t smem = c->stages * (ra * (ca + pad) + rb * (cb + pad)) * bytes;
    if (c->cpu && !c->mma) /* k-major operands are padded along the other dim */
        smem = c->stages * (ra * (ca + c->pad) + s->bk * (s->bn + c->pad)) * bytes * 5 / 4;
    /* (x 5/4: the tile interpreter's shared_bytes counts n * (bits + 7) / 8,
     * 4.875 bytes per f32; the budget only bounds, the C target uses what
     * the tensors need) */
    sched_blk_grid(kb, c->nb || c->split ? 3 : 2, grid, s->threads, smem);
}

/* The accumulator's start (init ops, C's old value) and the product's
 * scalar factors; 0 when a body is not one the blocks lower. */
static int ct_start(ct *c, sched_blk_tile *T, sched_blk_val *start, sched_blk_val *fac, int *nfac)
{
    const graph *g = c->g;
    const graph_group *grp = c->grp;
    for (int i = grp->first; i < grp->anchor; i++) {
        sched_blk_val v;
        if (!sched_blk_body(T, &g->ops[i], g->ops[i].body, &v)) return 0;
        T->cur = sched_blk_as_tile(T, v);
    }
    *start = (sched_blk_val){NULL, NULL};
    if (c->anchor->bang) start->scalar = sched_blk_float(T->kb, 0.0, "0.0");
    else start->tile = sched_blk_load_c(T);
    *nfac = 0;
    return ct_scale(c, T, c->anchor->body, fac, nfac);
}

/* start + factors * acc, the epilogue ops, the cast and the store. */
static int ct_finish(ct *c, sched_blk_tile *T, tile_value *acc, sched_blk_val start, const sched_blk_val *fac, int nfac,
                     tile_value *C)
{
    sched_blk *kb = T->kb;
    const graph *g = c->g;
    const graph_group *grp = c->grp;
    const lang_tensor *Ct = c->def->tensors[c->tc];
    sched_blk_val sum = {acc, NULL};
    for (int i = 0; i < nfac; i++) sum = sched_blk_binary(T, TILE_I_MUL, sum, fac[i]);
    sched_blk_val res = sum;
    if (!c->anchor->bang || start.tile) res = sched_blk_binary(T, TILE_I_ADD, start, sum);
    T->cur = res.tile;
    /* epilogue ops on the tile */
    for (int i = grp->anchor + 1; i < grp->first + grp->nops; i++) {
        sched_blk_val v;
        if (!sched_blk_body(T, &g->ops[i], g->ops[i].body, &v)) return 0;
        T->cur = sched_blk_as_tile(T, v);
    }
    tile_value *out = T->cur;
    if (Ct->dtype != TSL_DTYPE_F32) out = sched_blk_cast(kb, "c_out", out, sched_blk_tile_type(T, Ct->dtype));
    int vars[3] = {0, 1, 2};
    tile_expr *at[3];
    for (int d = 0; d < Ct->rank; d++) at[d] = ct_origin(c, vars[d]);
    if (c->sm90) sched_blk_ring_store(kb, &c->ring, out, C, Ct->rank, at);
    else sched_blk_store_global(kb, out, sched_blk_at(kb, C, Ct->rank, at));
    return 1;
}

/* The full M x N tiles an epilogue reads beside the accumulator: C's old
 * value (a `+=` without `!`) and every other tensor read at C's rank
 * (a residual), each counted once. */
static int ct_epilogue_tiles(const ct *c)
{
    const graph *g = c->g;
    const graph_group *grp = c->grp;
    const int rank = c->def->tensors[c->tc]->rank;
    uint64_t seen = 0;
    int n = !c->anchor->bang;
    for (int i = grp->anchor + 1; i < grp->first + grp->nops; i++)
        for (int j = 1; j < g->ops[i].noperands; j++) {
            const graph_operand *o = &g->ops[i].operands[j];
            if (o->tensor == c->tc || o->rank < rank || o->tensor >= 64 || (seen >> o->tensor & 1)) continue;
            seen |= 1ull << o->tensor;
            n++;
        }
    return n;
}

/* ---- split-K (small M on the GPU) ---------------------------------------------------------------
 * With M <= 64 a GEMM has cdiv(N, BN) output tiles, far fewer than the
 * multiprocessors (16 x 8192 x 8192 fp16: 64 tiles on 132 SMs, 0.79x
 * cuBLAS). The split plan is two launches: `_splitk` runs grid
 * (tiles(M), tiles(N), S), slice z accumulating k steps [z KP, (z+1) KP)
 * (KP = cdiv(cdiv(K, BK), S)) and scattering its f32 tile into the
 * workspace c_ws[(z M + m) N + n]; `_splitk_sum` adds the S slices in a
 * fixed order (deterministic) and runs the epilogue. S is computed in both
 * kernels from the sizes: the option contract.splitk when set, else
 * 2 x SMs / tiles, at most CT_SPLIT_MAX and at most what the workspace
 * (CT_SPLIT_WS f32) holds; with S = 1 the first kernel runs the epilogue
 * itself and the second does nothing. */
#define CT_SPLIT_MAX 16
#define CT_SPLIT_WS ((int64_t)1 << 22) /* 16 MiB of f32 partials */
#define CT_SPLIT_M 64                   /* M at most this: the split plan */

/* S as an int expression (the same in both kernels). */
static tile_expr *ct_split_s(sched_blk *kb, const ct *c)
{
    const lang_tensor *Ct = c->def->tensors[c->tc];
    tile_expr *M = sched_blk_extent(kb, Ct->shape[0]), *N = sched_blk_extent(kb, Ct->shape[1]);
    tile_expr *mn = sched_blk_bin(kb, TILE_OP_MAX, sched_blk_bin(kb, TILE_OP_MUL, M, N), sched_blk_int(kb, 1));
    tile_expr *fit = sched_blk_bin(kb, TILE_OP_DIV, sched_blk_int(kb, CT_SPLIT_WS), mn);
    tile_expr *want;
    if (c->opt->splitk > 1) {
        want = sched_blk_int(kb, c->opt->splitk);
    } else {
        tile_expr *tiles = sched_blk_bin(kb, TILE_OP_MUL, sched_blk_bin(kb, TILE_OP_CDIV, M, sched_blk_int(kb, c->sh.bm)),
                                         sched_blk_bin(kb, TILE_OP_CDIV, N, sched_blk_int(kb, c->sh.bn)));
        want = sched_blk_bin(kb, TILE_OP_MIN, sched_blk_int(kb, CT_SPLIT_MAX),
                             sched_blk_bin(kb, TILE_OP_DIV, sched_blk_bin(kb, TILE_OP_MUL, sched_blk_sms(kb), sched_blk_int(kb, 2)),
                                           sched_blk_bin(kb, TILE_OP_MAX, tiles, sched_blk_int(kb, 1))));
    }
    return sched_blk_bin(kb, TILE_OP_MAX, sched_blk_int(kb, 1), sched_blk_bin(kb, TILE_OP_MIN, want, fit));
}

/* The flat workspace offsets of slice z's tile and its in-range mask. */
static void ct_split_index(sched_blk *kb, ct *c, sched_blk_tile *T, tile_expr *z, tile_value **idx, tile_value **mask)
{
    const lang_tensor *Ct = c->def->tensors[c->tc];
    tile_expr *M = sched_blk_extent(kb, Ct->shape[0]), *N = sched_blk_extent(kb, Ct->shape[1]);
    tile_type it = sched_blk_tile_type(T, TSL_DTYPE_I64);
    tile_operand off = tile_operand_scalar(ct_origin(c, c->vm));
    tile_stmt *s = sched_blk_op(kb, TILE_I_IOTA, "c_im", 1, &off, &it, NULL);
    s->instr.dim = 0;
    tile_value *im = s->instr.result;
    off = tile_operand_scalar(ct_origin(c, c->vn));
    s = sched_blk_op(kb, TILE_I_IOTA, "c_in", 1, &off, &it, NULL);
    s->instr.dim = 1;
    tile_value *in = s->instr.result;
    tile_operand sm = tile_operand_scalar(M), sn = tile_operand_scalar(N);
    tile_value *mok = sched_blk_ew(kb, TILE_I_LT, "c_mok", tile_operand_tensor(im), &sm);
    tile_value *nok = sched_blk_ew(kb, TILE_I_LT, "c_nok", tile_operand_tensor(in), &sn);
    tile_operand o = tile_operand_tensor(nok);
    *mask = sched_blk_ew(kb, TILE_I_AND, "c_ok", tile_operand_tensor(mok), &o);
    tile_operand zm = tile_operand_scalar(sched_blk_bin(kb, TILE_OP_MUL, z, M));
    tile_value *r = sched_blk_ew(kb, TILE_I_ADD, "c_ir", tile_operand_tensor(im), &zm);
    r = sched_blk_ew(kb, TILE_I_MUL, "c_irn", tile_operand_tensor(r), &sn);
    o = tile_operand_tensor(in);
    *idx = sched_blk_ew(kb, TILE_I_ADD, "c_ix", tile_operand_tensor(r), &o);
}

/* The kernel (sched_blk_fn): header, main loop, init ops, the scaled
 * product, epilogue ops, the store; or one of the split-K pair. */
static int ct_build(sched_blk *kb, void *ctx)
{
    ct *c = ctx;
    c->kb = kb;
    sched_blk_tile T = {.kb = kb, .tc = c->tc, .rows = c->em, .cols = c->en, .threads = c->ethreads, .lay = c->lc,
                        .vec_reduced = c->sm90, .nb = c->nb, .vm = c->vm, .vn = c->vn, .origin = ct_origin,
                        .covers = ct_covers, .ctx = c};
    /* A, B, then C: the parameters' order (the split-K sum reads neither A nor B) */
    sched_blk_gemm gm = c->split == 2 ? (sched_blk_gemm){0} : ct_gemm(kb, c);
    tile_value *C = sched_blk_tensor(kb, c->tc);
    const lang_tensor *Ct = c->def->tensors[c->tc];
    memset(&c->ring, 0, sizeof c->ring);
    c->ring.em = c->em;
    c->ring.en = c->en;
    c->ring.cdt = Ct->dtype;
    c->ring.tma_store = c->sm90 && (Ct->dtype == TSL_DTYPE_F16 || Ct->dtype == TSL_DTYPE_BF16);
    /* the wide plan in clusters of two along M: B read once from L2 per pair */
    c->ring.cluster = c->sm90 && c->want_sm90 == 1 && c->opt->sm90_cluster == 2 ? 2 : 1;
    ct_header(kb, c, &gm);
    sched_blk_val start, fac[16];
    int nfac;
    if (c->split) {
        tile_value *ws = sched_blk_scratch(kb, c->split_ws, TSL_DTYPE_F32, CT_SPLIT_WS);
        tile_value *S = sched_blk_let(kb, "c_S", ct_split_s(kb, c));
        tile_expr *one = sched_blk_int(kb, 1);
        tile_value *acc;
        if (c->split == 1) {
            tile_value *nk = sched_blk_let(kb, "c_nk", sched_blk_bin(kb, TILE_OP_CDIV, gm.kext, sched_blk_int(kb, gm.bk)));
            tile_value *kp = sched_blk_let(kb, "c_kp", sched_blk_bin(kb, TILE_OP_CDIV, sched_blk_v(kb, nk), sched_blk_v(kb, S)));
            tile_value *k0 = sched_blk_let(kb, "c_k0", sched_blk_bin(kb, TILE_OP_MUL, sched_blk_bidx(kb, 2), sched_blk_v(kb, kp)));
            gm.k0 = sched_blk_v(kb, k0);
            gm.kblocks = sched_blk_bin(kb, TILE_OP_MAX, sched_blk_int(kb, 0),
                                       sched_blk_bin(kb, TILE_OP_MIN, sched_blk_v(kb, kp),
                                                     sched_blk_bin(kb, TILE_OP_SUB, sched_blk_v(kb, nk), sched_blk_v(kb, k0))));
            acc = sched_blk_alloc(kb, "c_acc", sched_blk_tile_type(&T, TSL_DTYPE_F32), sched_blk_float(kb, 0.0, "0.0"));
            sched_blk_mainloop(kb, &gm, acc);
            /* S = 1: this kernel is the whole product */
            sched_blk_if(kb, sched_blk_bin(kb, TILE_OP_EQ, sched_blk_v(kb, S), one));
            if (!ct_start(c, &T, &start, fac, &nfac) || !ct_finish(c, &T, acc, start, fac, nfac, C)) return 0;
            sched_blk_end(kb);
            sched_blk_if(kb, sched_blk_bin(kb, TILE_OP_GT, sched_blk_v(kb, S), one));
            tile_value *idx, *mask;
            ct_split_index(kb, c, &T, sched_blk_bidx(kb, 2), &idx, &mask);
            tile_operand args[2] = {tile_operand_tensor(acc), tile_operand_tensor(idx)};
            tile_operand dst = tile_operand_tensor(ws);
            sched_blk_op(kb, TILE_I_SCATTER, NULL, 2, args, NULL, &dst)->instr.mask = mask;
            sched_blk_end(kb);
            return 1;
        }
        /* the sum of the slices, in slice order, then the epilogue */
        sched_blk_if(kb, sched_blk_bin(kb, TILE_OP_GT, sched_blk_v(kb, S), one));
        acc = sched_blk_alloc(kb, "c_acc", sched_blk_tile_type(&T, TSL_DTYPE_F32), sched_blk_float(kb, 0.0, "0.0"));
        tile_stmt *f = sched_blk_for(kb, "c_z", sched_blk_int(kb, 0), sched_blk_v(kb, S), NULL);
        tile_value *idx, *mask;
        ct_split_index(kb, c, &T, sched_blk_v(kb, f->v), &idx, &mask);
        tile_operand args[2] = {tile_operand_tensor(ws), tile_operand_tensor(idx)};
        tile_type ft = sched_blk_tile_type(&T, TSL_DTYPE_F32);
        tile_stmt *gs = sched_blk_op(kb, TILE_I_GATHER, "c_part", 2, args, &ft, NULL);
        gs->instr.mask = mask;
        tile_operand a2[2] = {tile_operand_tensor(acc), tile_operand_tensor(gs->instr.result)};
        tile_operand dacc = tile_operand_tensor(acc);
        sched_blk_op(kb, TILE_I_ADD, NULL, 2, a2, NULL, &dacc);
        sched_blk_end(kb);
        if (!ct_start(c, &T, &start, fac, &nfac) || !ct_finish(c, &T, acc, start, fac, nfac, C)) return 0;
        sched_blk_end(kb);
        return 1;
    }
    tile_value *acc = NULL;
    if (c->sm90) {
        /* the main loop first: C's start value (init ops, C's old value) is
         * computed after it, so that no tile beside the 128-register
         * accumulator lives across the loop (C is written only at the end) */
        sched_blk_ring_open(kb, &gm, &c->ring, sched_blk_extent(kb, Ct->shape[c->nb]),
                            sched_blk_extent(kb, Ct->shape[c->nb + 1]), c->nb ? sched_blk_extent(kb, Ct->shape[0]) : NULL,
                            c->opt->sm90_group);
        acc = sched_blk_ring_mainloop(kb, &gm, &c->ring);
    }
    if (!ct_start(c, &T, &start, fac, &nfac)) return 0;
    if (!c->sm90) {
        acc = sched_blk_alloc(kb, "c_acc", sched_blk_tile_type(&T, TSL_DTYPE_F32), sched_blk_float(kb, 0.0, "0.0"));
        sched_blk_mainloop(kb, &gm, acc);
    }
    return ct_finish(c, &T, acc, start, fac, nfac, C);
}

/* The plan's shapes and accumulator layout for the group; 0 when the group
 * is not this strategy's shape. */
static int ct_plan(ct *c)
{
    if (!recognise(c)) return 0;
    if (c->split) {
        /* M <= 64: 32-row blocks (16 x 8192: a 128-row block's mma work
         * is 7/8 padding), the warps side by side along n */
        c->sh.bm = 32;
        /* a 64-deep k step (contract.splitk.bk): the pair streams B, and
         * twice the bytes a stage in flight made 16 x 8192 x 8192 fp16
         * 1.05-1.07x faster on an H200 (2026-11-30: 41.2 / 42.2 TFLOP/s
         * against 39.4 / 39.3 with 32, cuBLAS 43.0; 4 stages of 32 gave
         * 41.8 / 40.9) */
        if (c->mma) c->sh.bk = c->opt->splitk_bk;
        if (c->mma) c->sh.wm = 1, c->sh.wn = 8;
        else c->tm = 2;
        if (c->mma && c->sh.bn % 64) return 0; /* bn = 8 warps x 8 columns x tn */
        c->sh.threads = c->mma ? 256 : (c->sh.bm / c->tm) * (c->sh.bn / c->tn);
        if (!c->mma && (c->sh.threads % 32 || c->sh.threads > 1024)) return 0;
    }
    c->em = c->sh.bm;
    c->en = c->sh.bn;
    c->ethreads = c->sh.threads;
    if (c->sm90) {
        c->sh = CT_SM90;
        c->sh.bn = c->opt->sm90_bn;
        /* a 64 x 256 f32 accumulator is 128 registers of the consumers'
         * 232: an epilogue that reads two or more other full tiles (C's
         * old value, a residual) beside it spills (448 bytes with two
         * residuals and GELU, NVRTC 13.0), so such groups take 64 x 128
         * per consumer; bias, scale and pointwise functions (GELU, SiLU,
         * erf) and one residual fit in 256 without spills */
        if (ct_epilogue_tiles(c) >= 2) c->sh.bn = 128;
        /* small M (decode, a few rows): 64 columns a block, so that N / 64
         * blocks keep every SM streaming B */
        if (c->want_sm90 == 2) c->sh.bn = 64;
        c->em = c->sh.bm / 2;
        c->en = c->sh.bn;
        c->ethreads = 128;
        tile_wgmma_acc_layout(c->en, c->lc, sizeof c->lc);
    } else if (c->mma) {
        char la[256], lat[256], lb[256], lbt[256];
        sched_blk_gemm g = {.bm = c->sh.bm, .bn = c->sh.bn, .bk = c->sh.bk, .wm = c->sh.wm, .wn = c->sh.wn, .tf32 = c->tf32};
        sched_blk_mma_layouts(&g, la, lat, lb, lbt, c->lc, sizeof c->lc);
    } else {
        char l[4][256];
        sched_blk_gemm g = {.bm = c->sh.bm, .bn = c->sh.bn, .tm = c->tm, .tn = c->tn, .cpu = c->cpu};
        sched_blk_fma_layouts(&g, c->lc, l[0], l[1], l[2], l[3], sizeof c->lc);
    }
    return 1;
}

/* The group's kernel under plan c, or NULL (not its shape, or it does not
 * verify: noted on the plan). */
static tile_kernel *ct_kernel(sched_plan *p, ct *c, sched_blk *kb, const char *kname)
{
    if (!ct_plan(c)) return NULL;
    return sched_blk_build(kb, p, c->def, kname, ct_build, c);
}

/* The sizes the sm_90a plan's TMA needs to be multiples of 8 (16-byte
 * rows of f16/bf16): the last dims of A, B and C. 0 when a constant one
 * is not. */
static int sm90_guard(const ct *c, sched_guard *g)
{
    const lang_sexpr *ext[3] = {c->def->tensors[c->ta]->shape[c->nb + 1], c->def->tensors[c->tb]->shape[c->nb + 1],
                                c->def->tensors[c->tc]->shape[c->nb + 1]};
    return sched_guard_multiples(g, ext, 3, 8);
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

/* May the group take the split-K pair (CUDA, no batch, option not 1)?
 * *m is C's M extent: a constant takes the pair alone (when <= CT_SPLIT_M),
 * a size symbol under the guard M <= CT_SPLIT_M. */
static int split_ok(const ct *base, const lang_sexpr **m)
{
    ct c = *base;
    if (c.cpu || c.opt->splitk == 1 || !recognise(&c) || c.nb) return 0;
    *m = c.def->tensors[c.tc]->shape[0];
    return (*m)->kind == LANG_SX_SYM || (*m)->value <= CT_SPLIT_M;
}

/* The split-K pair (ct_build), both under guard (NULL: always); 0 when
 * either does not build (nothing added). */
static int split_plan(sched_plan *p, const ct *base, const char *kname, const sched_guard *guard)
{
    ct cs[2];
    sched_blk kbs[2];
    tile_kernel *ks[2];
    /* one workspace for every group's pair: launches run in order and a
     * pair's partials live only from its first launch to its second (as a
     * full reduction's do in a buffer of that size) */
    int ws = 0;
    while (ws < p->nscratch && !(p->scratch[ws].dtype == TSL_DTYPE_F32 && p->scratch[ws].count == CT_SPLIT_WS)) ws++;
    for (int w = 0; w < 2; w++) {
        cs[w] = *base;
        cs[w].want_sm90 = 0;
        cs[w].split = w + 1;
        cs[w].split_ws = ws;
        const char *name = arena_printf(p->m->arena, "%s_splitk%s", kname, w ? "_sum" : "");
        ks[w] = ct_kernel(p, &cs[w], &kbs[w], name);
        if (!ks[w]) return 0;
    }
    if (ws == p->nscratch) {
        sched_scratch sc = {TSL_DTYPE_F32, CT_SPLIT_WS};
        ARENA_PUSH(p->m->arena, p->scratch, p->nscratch, p->capscratch, sc);
    }
    for (int w = 0; w < 2; w++) sched_blk_add(&kbs[w], ks[w], cs[w].grp->first, cs[w].grp->nops, guard);
    return 1;
}

/* The sm_90a launches of the group (see sched_lower_contract); 0 when the
 * group is not theirs (nothing pushed). */
static int sm90_plans(sched_plan *p, const ct *base, const char *kname)
{
    const char *names[2];
    ct cs[2];
    sched_blk kbs[2];
    tile_kernel *ks[2] = {NULL, NULL};
    sched_guard align;
    for (int w = 0; w < 2; w++) {
        cs[w] = *base;
        cs[w].want_sm90 = w + 1;
        names[w] = arena_printf(p->m->arena, "%s_wgmma%s", kname, w ? "_narrow" : "");
        if (!ct_plan(&cs[w]) || !cs[w].sm90 || !sm90_guard(&cs[w], &align)) return 0;
        ks[w] = sched_blk_build(&kbs[w], p, cs[w].def, names[w], ct_build, &cs[w]);
        if (!ks[w]) return 0;
    }
    /* M's size symbol picks wide or narrow; a constant M picks one now */
    const lang_sexpr *m = base->def->tensors[cs[0].tc]->shape[cs[0].nb];
    ct c8 = *base;
    sched_blk kb8;
    tile_kernel *k8 = align.n ? ct_kernel(p, &c8, &kb8, kname) : NULL;
    if (align.n && !k8) return 0;
    /* M <= 64 (aligned): the split-K pair rather than the narrow plan
     * unless contract.splitk=1. On an H200 (2026-11-29, one call) 16 x
     * 8192 x 8192 fp16 ran at 38.9 TFLOP/s with S = 4 (what 2 x SMs /
     * tiles gives there) against 31.4 on the narrow wgmma plan, whose
     * 128 blocks stream B at 2.0 TB/s. Its guard needs two terms beside
     * the alignment's */
    const lang_sexpr *sm = NULL;
    int split = split_ok(base, &sm) && align.n + 2 <= SCHED_MAX_GUARD,
        always = split && sm->kind == LANG_SX_CONST;
    if (split) {
        sched_guard sg = always ? align : guard_and(align, m->sym, SCHED_GUARD_LE, CT_SPLIT_M);
        split = split_plan(p, base, kname, sg.n ? &sg : NULL);
    }
    if (m->kind == LANG_SX_CONST) {
        int w = m->value <= 128;
        if (!(split && always)) sched_blk_add(&kbs[w], ks[w], cs[w].grp->first, cs[w].grp->nops, align.n ? &align : NULL);
    } else {
        sched_guard wide = guard_and(align, m->sym, SCHED_GUARD_GT, 128);
        sched_guard narrow = guard_and(align, m->sym, SCHED_GUARD_LE, 128);
        if (split) narrow = guard_and(narrow, m->sym, SCHED_GUARD_GT, CT_SPLIT_M);
        sched_blk_add(&kbs[0], ks[0], cs[0].grp->first, cs[0].grp->nops, &wide);
        sched_blk_add(&kbs[1], ks[1], cs[1].grp->first, cs[1].grp->nops, &narrow);
    }
    if (k8) {
        sched_guard_negate(&align);
        sched_blk_add(&kb8, k8, c8.grp->first, c8.grp->nops, &align);
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
    /* the GPU with M <= 64: the split-K pair, the one-kernel plan above */
    const lang_sexpr *m = NULL;
    if (split_ok(&c, &m)) {
        int always = m->kind == LANG_SX_CONST;
        sched_guard sg = {0};
        if (!always) sg = guard_and(sg, m->sym, SCHED_GUARD_LE, CT_SPLIT_M);
        sched_blk kb;
        ct c1 = c;
        tile_kernel *k = always ? NULL : ct_kernel(p, &c1, &kb, kname);
        if ((always || k) && split_plan(p, &c, kname, always ? NULL : &sg)) {
            if (k) {
                sched_guard_negate(&sg);
                sched_blk_add(&kb, k, grp->first, grp->nops, &sg);
            }
            return 1;
        }
    }
    sched_blk kb;
    tile_kernel *k = ct_kernel(p, &c, &kb, kname);
    if (!k) return 0;
    sched_blk_add(&kb, k, grp->first, grp->nops, NULL);
    return 1;
}
