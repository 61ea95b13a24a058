/* qmatmul.c — the weight-only quantized matmul strategy (docs/sched.md,
 * "The quantized matmul"): a group of one statement
 *
 *     Y(m, n) +=! T(W(k, n)) * S(k / G, n) * X(m, k)
 *     Y(m, n) +=! (T(W(k, n)) - Z(k / G, n)) * S(k / G, n) * X(m, k)
 *
 * (factors in any order; W any low-bit dtype or int8/uint8, read as a
 * packed input; T a float cast every value of W converts to exactly, or
 * none; S and Z per group of G rows or per column, or absent; X, S, Y
 * f16/bf16/f32) becomes kernels that stream W's packed bytes once and
 * dequantize them in registers (`view` of the bytes as the low-bit dtype,
 * then `cast`: the generators' dequantization atoms):
 *
 *   - GPU, small M (the GEMV, memory-bound), W's bytes, no zero points:
 *     the streaming GEMV (vec_text): W's bytes straight into registers,
 *     the next step's rows loaded before the current ones are multiplied,
 *     K split into slices (8 unless the option splitk says) and the
 *     slices summed in order;
 *   - GPU, small M, uint1/2/4/8 W (unless the option qmatmul.mma=0),
 *     f16 X: the same GEMV on tensor cores (qt_text:
 *     one `mma X, W, acc atom q.m8n128k16` a k16 step, the dequantizing
 *     rows of target/sm80.c), K split as the streaming GEMV's;
 *   - GPU, small M otherwise: a block per 64 columns (and
 *     per row of X), 256 threads of 8 columns x every 32nd row; W's bytes
 *     and X's row stream through a ring of shared stages (cp.async), each
 *     thread multiplies on CUDA cores into f32 partial sums per group,
 *     scales them per group and the block reduces its rows at the end;
 *   - GPU, M >= 16 (f16 X, no zero points; a guard on M): tensor cores,
 *     W's tile dequantized to f16 into shared memory, mma.m16n8k16 into
 *     f32 sums per group (gemm_text); K split into slices (enough for
 *     512 blocks, at most 4, unless the option splitk says), then summed
 *     in order as the GEMV's are;
 *   - CPU: a block per 4096 columns of a row of X and per slice of K
 *     (whole groups; enough slices for 32 blocks unless the option splitk
 *     says), its rows in order, per group into partial sums then scaled
 *     (the row loop asks for the micro-kernel cpu.ukr.dequant,
 *     c_emit_dequant.c: vectorized unpacking; not with the option
 *     cpu.micro_kernels=0); a slice's sums into the workspace, which a
 *     second kernel adds in slice order;
 *   - the launch's guard: W's rows are whole bytes (N * bits % 8 == 0);
 *     otherwise the same kernels read W's elements (packed codes) instead.
 *
 * W is passed as its storage (sched_arg.bytes) cut to the reduction's rows
 * (sched_arg.rows: TC's range inference may shorten k below W's rows when
 * S has fewer groups). The kernels are written as tile text and parsed
 * by tiletext.c's tt_parse_kernel, as contract.c's and attention.c's are
 * (a kernel that does not verify leaves the group to the others with a
 * plan note; the driver's --emit=tile / TESSEL_DUMP show the kernels); a
 * group not of this shape returns 0 first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/strategy.h"
#include "sched/tiletext.h"
#include "target/target.h"

/* One read factor of the product: operand o, under a cast to `cast` or not. */
typedef struct qm_read {
    int op;         /* operand index of the anchor, -1 when absent */
    int tensor;
    int grouped;    /* S, Z: indexed (k / G, n) (1) or (n) (0) */
} qm_read;

typedef struct qm {
    const graph *g;
    const lang_def *def;
    const graph_group *grp;
    const graph_op *an;
    int vm, vn, vk;
    qm_read x, w, s, z;
    int ty;
    int64_t gs;       /* the group size G (0: no grouped tensor) */
    int bits;         /* W's bits */
    tile_dtype wdt;
    int cpu;
    int ukr;          /* CPU: ask for cpu.ukr.dequant (the option cpu.micro_kernels) */
    int bytes;        /* W read as bytes (the guarded fast form) */
    /* the kernel's shape */
    int T, BN, TN, TK, EPT, RS, RG, GS, R, S, CH;
    /* the streaming GEMV (vec_shape): E columns of EB bytes a thread per
     * row, U rows a step (RI = U * TK), GR steps a group; ws the plan's
     * split-K workspace (scratch index), -1: not this kernel */
    int E, EB, U, RI, GR, ws;
    int two; /* the streaming GEMV runs two blocks a multiprocessor (min_blocks(2)) */
    int64_t splitk;   /* the option splitk (0: QV_SPLIT_DEFAULT) */
    int f16;          /* dequantize through f16 (the option qmatmul.dequant) */
    int sm;           /* the plan's compute capability x 10 */
    int mq;           /* the plan is the tensor-core GEMV's (qt_text): sum_text takes its KS from qt_split */
    int pre;          /* qt_text loads a group's X and scales a group ahead (qt_shape, the option qmatmul.prefetch) */
    int tc;           /* the plan is the tensor-core kernel's: sum_text takes its KS from gemm_split */
    strbuf b;
} qm;

/* ---- recognition ------------------------------------------------------------------- */

static int is_io_dt(tsl_dtype t) { return t == TSL_DTYPE_F16 || t == TSL_DTYPE_BF16 || t == TSL_DTYPE_F32; }

/* A weight dtype: a low-bit one or int8/uint8. */
static int is_weight_dt(tsl_dtype t)
{
    return dtype_carrier(t) != t || t == TSL_DTYPE_I8 || t == TSL_DTYPE_U8;
}

/* Every value of w converts to t exactly (so a cast of W to t loses nothing
 * and the kernel may dequantize in f32). */
static int exact_in(tsl_dtype w, tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(w);
    if (d->bits > 8) return 0;
    uint8_t buf[2] = {0, 0};
    for (uint64_t c = 0; c < (1u << d->bits); c++) {
        dtype_set_bits(w, buf, 0, c);
        double v = dtype_get(w, buf, 0);
        if (v != v) continue; /* NaN stays NaN */
        if (dtype_round(t, v) != v) return 0;
    }
    return 1;
}

static int extent_plain(const lang_sexpr *e) { return e->kind == LANG_SX_SYM || e->kind == LANG_SX_CONST; }

/* Box var v of op is [0, extent of tensor t's dim d). */
static int covers(const graph_op *op, int v, const lang_tensor *t, int d)
{
    const lang_range *r = &op->box[v];
    return r->lo->kind == LANG_SX_CONST && r->lo->value == 0 && graph_sexpr_equal(r->hi, t->shape[d]) &&
           extent_plain(t->shape[d]);
}

/* e is a read (an access, or a float cast of one): its operand. */
static int read_of(const graph_expr *e, int *op, tsl_dtype *cast)
{
    *cast = TSL_DTYPE_COUNT;
    if (e->kind == LANG_E_CAST) {
        if (!dtype_info_of(e->src->type)->is_float || e->args[0]->kind != LANG_E_ACCESS) return 0;
        *cast = e->src->type;
        e = e->args[0];
    }
    if (e->kind != LANG_E_ACCESS) return 0;
    *op = e->operand;
    return 1;
}

/* Index d of operand o is the bare var v. */
static int ix_var(const graph_operand *o, int d, int v) { return o->idx[d].kind == GRAPH_IX_AFFINE && o->idx[d].var == v; }

/* Index d of operand o is `k / G` (G > 0): G. */
static int64_t ix_group(const qm *q, const graph_operand *o, int d)
{
    const lang_expr *e = o->idx[d].src;
    if (e->kind != LANG_E_BINARY || e->op != LANG_DIV || e->args[0]->kind != LANG_E_INDEX ||
        e->args[0]->slot != q->vk || e->args[1]->kind != LANG_E_INT || e->args[1]->ival <= 0)
        return 0;
    return e->args[1]->ival;
}

/* A scale or zero-point read: (k / G, n) or (n), of an f16/bf16/f32 (or,
 * for Z, any numeric) tensor. */
static int group_read(qm *q, int op, qm_read *r, int any_dt)
{
    const graph_operand *o = &q->an->operands[op];
    const lang_tensor *t = q->def->tensors[o->tensor];
    if (t->is_scalar || (!any_dt && !is_io_dt(t->dtype)) || t->dtype == TSL_DTYPE_BOOL) return 0;
    if (o->rank == 1 && ix_var(o, 0, q->vn) && covers(q->an, q->vn, t, 0)) {
        *r = (qm_read){op, o->tensor, 0};
        return 1;
    }
    if (o->rank != 2 || !ix_var(o, 1, q->vn) || !covers(q->an, q->vn, t, 1) || !extent_plain(t->shape[0])) return 0;
    int64_t G = ix_group(q, o, 0);
    if (!G || (q->gs && q->gs != G)) return 0;
    q->gs = G;
    *r = (qm_read){op, o->tensor, 1};
    return 1;
}

/* The weight factor: T(W(k, n)), W(k, n), or that minus Z. */
static int weight_factor(qm *q, const graph_expr *e)
{
    if (e->kind == LANG_E_BINARY && e->src->op == LANG_SUB && dtype_info_of(e->src->optype)->is_float) {
        int zop;
        tsl_dtype zc;
        if (!read_of(e->args[1], &zop, &zc) || !group_read(q, zop, &q->z, 1)) return 0;
        e = e->args[0];
    }
    int op;
    tsl_dtype cast;
    if (!read_of(e, &op, &cast)) return 0;
    const graph_operand *o = &q->an->operands[op];
    const lang_tensor *W = q->def->tensors[o->tensor];
    int input = (W->flags & (LANG_TENSOR_INPUT | LANG_TENSOR_OUTPUT | LANG_TENSOR_TEMP)) == LANG_TENSOR_INPUT;
    if (!is_weight_dt(W->dtype) || !input || W->is_scalar || o->rank != 2 || !ix_var(o, 0, q->vk) ||
        !ix_var(o, 1, q->vn) || !covers(q->an, q->vn, W, 1) || !extent_plain(W->shape[0]))
        return 0;
    /* the cast (or the product's type, which converts it) keeps every value */
    tsl_dtype t = cast != TSL_DTYPE_COUNT ? cast : e->src->type;
    if (!dtype_info_of(t)->is_float || !exact_in(W->dtype, t)) return 0;
    if (q->w.op >= 0) return 0;
    q->w = (qm_read){op, o->tensor, 0};
    return 1;
}

/* Factors of a product (float multiplications). */
static int factors(qm *q, const graph_expr *e)
{
    if (e->kind == LANG_E_BINARY && e->src->op == LANG_MUL && dtype_info_of(e->src->optype)->is_float)
        return factors(q, e->args[0]) && factors(q, e->args[1]);
    int op;
    tsl_dtype cast;
    if (read_of(e, &op, &cast)) {
        const graph_operand *o = &q->an->operands[op];
        const lang_tensor *t = q->def->tensors[o->tensor];
        if (o->rank == 2 && ix_var(o, 0, q->vm) && ix_var(o, 1, q->vk) && is_io_dt(t->dtype) &&
            covers(q->an, q->vm, t, 0) && extent_plain(t->shape[1])) {
            if (q->x.op >= 0) return 0;
            q->x = (qm_read){op, o->tensor, 0};
            return 1;
        }
        if (is_weight_dt(t->dtype)) return weight_factor(q, e);
        if (q->s.op >= 0) return 0;
        return group_read(q, op, &q->s, 0);
    }
    return weight_factor(q, e);
}

static int recognise(qm *q)
{
    const graph_group *grp = q->grp;
    if (grp->nops != 1) return 0;
    const graph_op *an = &q->g->ops[grp->first];
    q->an = an;
    if (an->assign != LANG_ADD_EQ || !an->bang || an->reads_lhs || an->niter != 2 || an->nvars != 3) return 0;
    q->vm = 0, q->vn = 1, q->vk = 2;
    const graph_operand *oy = &an->operands[0];
    if (!oy->identity) return 0;
    q->ty = oy->tensor;
    const lang_tensor *Y = q->def->tensors[q->ty];
    if (!is_io_dt(Y->dtype) || !covers(an, 0, Y, 0) || !covers(an, 1, Y, 1)) return 0;
    const lang_range *rk = &an->box[q->vk];
    if (rk->lo->kind != LANG_SX_CONST || rk->lo->value != 0) return 0;
    q->x.op = q->w.op = q->s.op = q->z.op = -1;
    if (!factors(q, an->body) || q->x.op < 0 || q->w.op < 0) return 0;
    /* scale and zero point: both per group (one G) or both per column */
    if (q->s.op >= 0 && q->z.op >= 0 && q->s.grouped != q->z.grouped) return 0;
    /* every read is one of these (nothing else in the body) */
    for (int i = 1; i < an->noperands; i++)
        if (i != q->x.op && i != q->w.op && i != q->s.op && i != q->z.op) return 0;
    const lang_tensor *W = q->def->tensors[q->w.tensor];
    q->bits = tsl_dtype_bits(W->dtype);
    q->wdt = tile_dtype_from_tsl(W->dtype);
    return 1;
}

/* ---- names ------------------------------------------------------------------------------ */

/* Kernel-visible name of a def tensor or size symbol: internal names start
 * with "q_", so a def name only changes when it is reserved or starts so. */
static void pname(char *buf, size_t n, const char *name)
{
    if (tile_name_reserved(name) || !strncmp(name, "q_", 2)) snprintf(buf, n, "%s_p", name);
    else snprintf(buf, n, "%s", name);
}

static const char *tname(const qm *q, int t, char *buf, size_t n)
{
    pname(buf, n, q->def->tensors[t]->name);
    return buf;
}

static void sexpr_text(strbuf *b, const qm *q, const lang_sexpr *e)
{
    char nb[160];
    if (e->kind == LANG_SX_CONST) sb_printf(b, "%lld", (long long)e->value);
    else sb_printf(b, "%s", (pname(nb, sizeof nb, q->def->sizes[e->sym]), nb));
}

static const char *dtn(tsl_dtype t, char *buf) { return tile_dtype_name(tile_dtype_from_tsl(t), buf); }

/* `NAME: global DT[d0, d1]` of def tensor t. */
static void param(strbuf *h, const qm *q, int t, int *np)
{
    const lang_tensor *T = q->def->tensors[t];
    char nb[160], db[16];
    sb_printf(h, "%s%s: global %s[", (*np)++ ? ", " : "", tname(q, t, nb, sizeof nb), dtn(T->dtype, db));
    for (int d = 0; d < T->rank; d++) {
        if (d) sb_puts(h, ", ");
        sexpr_text(h, q, T->shape[d]);
    }
    sb_puts(h, "]");
}

/* ---- the kernels ---------------------------------------------------------------------------- */

/* The shape: BN columns a block, groups of GS rows, W's row of a block
 * read in chunks of CH bytes (0: its bytes are not whole words). GPU: T
 * threads of EPT (8) columns by every TK-th row, BN = TN * EPT; stages
 * of RS = RG * GS rows, about 16 KB of W. */
static void shape(qm *q)
{
    q->GS = q->gs ? (int)q->gs : 128;
    /* CPU: 4096 columns (2 KB of a uint4 row; the most cpu.ukr.dequant
     * takes) per block: W's rows are read in runs as long as the run's f32
     * sums (16 KB) allow, as the hardware prefetchers stream long runs and
     * not short strided ones (a uint4 8192 x 8192 GEMV, one core, the
     * micro-kernel alone: 1.7 GB/s with 1024, 2.6 with 2048, 4.0 with
     * 4096, 4.6 with whole rows of 8192; with the table path 13.1 at
     * 4096 and 8192 alike), K split into slices for the cores
     * (cpu_split) */
    q->BN = q->cpu ? 4096 : 64;
    int bnb = q->BN * q->bits / 8;
    q->CH = bnb % 16 == 0 ? 16 : bnb % 8 == 0 ? 8 : bnb % 4 == 0 ? 4 : 0;
    if (q->cpu) return;
    q->T = 256;
    q->EPT = 8;
    q->S = 4;
    q->TN = q->BN / q->EPT;
    q->TK = q->T / q->TN;
    /* rows of one group a thread takes; a group not a multiple of TK
     * rows: TK that divides it */
    while (q->GS % q->TK && q->TK > 1) {
        q->TK /= 2;
        q->T = q->TK * q->TN;
    }
    q->R = q->GS / q->TK;
    q->RG = 16384 / (q->GS * (bnb ? bnb : 1));
    if (q->RG < 1) q->RG = 1;
    if (q->RG > 64) q->RG = 64;
    /* a stage's row of X is whole 16-byte chunks (its cp.async copy) */
    int xb = q->def->tensors[q->x.tensor]->dtype == TSL_DTYPE_F32 ? 4 : 2;
    while ((int64_t)q->RG * q->GS * xb % 16) q->RG++;
    q->RS = q->RG * q->GS;
}

/* X's [1, rows] tile `x` as a column, widened to f32 and broadcast over
 * BN columns (q_xb, layout lay), at indent ind: both GEMVs' multiply
 * takes it. Gives the name of the f32 column. */
static const char *x_broadcast(strbuf *o, const char *ind, const char *x, tsl_dtype xt, const char *xd, int rows,
                               int BN, const char *lxc, const char *lay)
{
    sb_printf(o, "%sq_xv = view %s -> register %s[%d, 1] layout %s\n", ind, x, xd, rows, lxc);
    const char *xf = "q_xv";
    if (xt != TSL_DTYPE_F32) {
        sb_printf(o, "%sq_xf = cast q_xv -> register f32[%d, 1] layout %s\n", ind, rows, lxc);
        xf = "q_xf";
    }
    sb_printf(o, "%sq_xb = broadcast %s -> register f32[%d, %d] layout %s dim 1\n", ind, xf, rows, BN, lay);
    return xf;
}

/* A kernel's text: header h, then the body o; the body and the size
 * texts freed (ks may be NULL). */
static char *kernel_text(strbuf *h, strbuf *o, strbuf *nn, strbuf *mm, strbuf *ks)
{
    sb_puts(h, sb_str(o));
    sb_free(o);
    sb_free(nn);
    sb_free(mm);
    if (ks) sb_free(ks);
    return sb_take(h);
}

/* The GPU GEMV kernel (see the file's head). */
static char *gemv_text(qm *q, const char *kname)
{
    char nx[160], nw[160], ns[160], nz[160], ny[160], db[16], lw[160], ls[160], lx[160], lxc[160], lr[160];
    const lang_tensor *X = q->def->tensors[q->x.tensor], *Y = q->def->tensors[q->ty];
    tname(q, q->x.tensor, nx, sizeof nx);
    tname(q, q->w.tensor, nw, sizeof nw);
    tname(q, q->ty, ny, sizeof ny);
    if (q->s.op >= 0) tname(q, q->s.tensor, ns, sizeof ns);
    if (q->z.op >= 0) tname(q, q->z.tensor, nz, sizeof nz);
    int T = q->T, BN = q->BN, TN = q->TN, TK = q->TK, E = q->EPT, b = q->bits, BNB = BN * b / 8;
    int grouped = (q->s.op >= 0 && q->s.grouped) || (q->z.op >= 0 && q->z.grouped);
    char lay[96];
    snprintf(lay, sizeof lay, "spatial(%d, %d).local(1, %d)", TK, TN, E);
    snprintf(lw, sizeof lw, "spatial(%d, %d).local(1, %d)", TK, TN, b);
    snprintf(ls, sizeof ls, "replicate(%d).spatial(1, %d).local(1, %d)", TK, TN, E); /* [1, BN]: per column */
    snprintf(lx, sizeof lx, "spatial(1, %d).replicate(%d)", TK, TN);                 /* [1, TK]: x per row */
    snprintf(lxc, sizeof lxc, "spatial(%d, 1).replicate(%d)", TK, TN);               /* [TK, 1] */
    snprintf(lr, sizeof lr, "replicate(%d).spatial(%d).local(%d)", TK, TN, E);       /* [BN] */
    strbuf h = {0}, *o = &q->b;
    /* header */
    int np = 0;
    sb_printf(&h, "kernel %s(", kname);
    param(&h, q, q->x.tensor, &np);
    char wdt[16];
    tile_dtype_name(q->wdt, wdt);
    if (q->bytes) sb_printf(&h, ", q_wb: global u8[q_kr, q_nb]");
    else sb_printf(&h, ", q_w: global %s[q_kr, q_wn]", wdt);
    np++;
    if (q->s.op >= 0) param(&h, q, q->s.tensor, &np);
    if (q->z.op >= 0 && q->z.tensor != q->s.tensor) param(&h, q, q->z.tensor, &np);
    param(&h, q, q->ty, &np);
    strbuf nn = {0}, mm = {0};
    sexpr_text(&nn, q, Y->shape[1]);
    sexpr_text(&mm, q, Y->shape[0]);
    const char *xdt = dtn(X->dtype, db);
    char xd[16];
    snprintf(xd, sizeof xd, "%s", xdt);
    int64_t smem = (int64_t)q->S * q->RS * ((q->bytes ? BNB : 0) + 2 * (X->dtype == TSL_DTYPE_F32 ? 2 : 1)) + 1024;
    sb_printf(&h, ") grid(cdiv(%s, %d), %s) threads(%d) smem_budget(%lld) min_blocks(3) {\n", sb_str(&nn), BN, sb_str(&mm), T,
              (long long)smem);
    /* the ring of stages */
    sb_printf(o, "  q_acc = alloc register f32[%d, %d] layout %s init 0.0\n", TK, BN, lay);
    if (q->z.op >= 0 && !grouped) sb_printf(o, "  q_sxt = alloc register f32[%d, 1] layout %s init 0.0\n", TK, lxc);
    if (q->bytes) sb_printf(o, "  q_ws = alloc shared u8[%d, %d, %d]\n", q->S, q->RS, BNB);
    sb_printf(o, "  q_xs = alloc shared %s[%d, 1, %d]\n", xd, q->S, q->RS);
    sb_printf(o, "  let q_nk = cdiv(q_kr, %d)\n", q->RS);
    /* issue stage `it` into its slot */
#define ISSUE(it)                                                                                                   \
    do {                                                                                                            \
        if (q->bytes)                                                                                               \
            sb_printf(o, "      copy_async q_wb[(%s) * %d, block_idx.x * %d] -> q_ws[(%s) %% %d] bytes %d\n", it,     \
                      q->RS, BNB, it, q->S, q->CH);                                                                  \
        sb_printf(o, "      copy_async %s[block_idx.y, (%s) * %d] -> q_xs[(%s) %% %d] bytes 16\n", nx, it, q->RS, it,  \
                  q->S);                                                                                            \
    } while (0)
    sb_printf(o, "  for q_s in 0 : %d {\n    if q_s < q_nk {\n", q->S - 1);
    ISSUE("q_s");
    sb_puts(o, "    }\n    commit\n  }\n");
    sb_puts(o, "  for q_kb in 0 : q_nk {\n");
    sb_printf(o, "    wait %d\n    sync\n", q->S - 2);
    sb_printf(o, "    if q_kb + %d < q_nk {\n", q->S - 1);
    char nxt[64];
    snprintf(nxt, sizeof nxt, "q_kb + %d", q->S - 1);
    ISSUE(nxt);
#undef ISSUE
    sb_puts(o, "    }\n    commit\n");
    sb_printf(o, "    let q_slot = q_kb %% %d\n", q->S);
    /* a tensor of the group's (or the column's) values, broadcast over the tile */
#define COLVALS(nm, t, rowexpr, out)                                                                                \
    do {                                                                                                            \
        const lang_tensor *T_ = q->def->tensors[t];                                                                 \
        char d_[16];                                                                                                \
        if (T_->rank == 2) {                                                                                        \
            sb_printf(o, "      %s_0 = load_global %s[%s, block_idx.x * %d] -> register %s[1, %d] layout %s\n", out, nm, \
                      rowexpr, BN, dtn(T_->dtype, d_), BN, ls);                                                     \
            sb_printf(o, "      %s_1 = cast %s_0 -> register f32[1, %d] layout %s\n", out, out, BN, ls);           \
        } else {                                                                                                    \
            sb_printf(o, "      %s_0 = load_global %s[block_idx.x * %d] -> register %s[%d] layout %s\n", out, nm, BN,  \
                      dtn(T_->dtype, d_), BN, lr);                                                                  \
            sb_printf(o, "      %s_1 = cast %s_0 -> register f32[%d] layout %s\n", out, out, BN, lr);              \
        }                                                                                                           \
        sb_printf(o, "      %s = broadcast %s_1 -> register f32[%d, %d] layout %s dim 0\n", out, out, TK, BN, lay);    \
    } while (0)
    sb_printf(o, "    for q_g in 0 : %d {\n", q->RG);
    const char *acc = "q_acc";
    if (grouped) {
        sb_printf(o, "      q_pacc = alloc register f32[%d, %d] layout %s init 0.0\n", TK, BN, lay);
        acc = "q_pacc";
    }
    if (q->z.op >= 0 && grouped) sb_printf(o, "      q_sx = alloc register f32[%d, 1] layout %s init 0.0\n", TK, lxc);
    if (grouped) {
        /* the group's scales and zero points first: their loads' latency
         * then overlaps the rows (loaded after the rows, every group waited
         * on one: H100, u4 8192 x 8192 GEMV, 61 us at any width) */
        sb_printf(o, "      let q_gi = q_kb * %d + q_g\n", q->RG);
        if (q->z.op >= 0) COLVALS(nz, q->z.tensor, "q_gi", "q_zb");
        if (q->s.op >= 0) COLVALS(ns, q->s.tensor, "q_gi", "q_sb");
    }
    sb_printf(o, "      for q_r in 0 : %d {\n", q->R);
    sb_printf(o, "        let q_row = q_g * %d + q_r * %d\n", q->GS, TK);
    if (q->bytes) {
        sb_printf(o, "        q_w8 = load_shared q_ws[q_slot, q_row, 0] -> register u8[%d, %d] layout %s\n", TK, BNB, lw);
        sb_printf(o, "        q_wq = view q_w8 -> register %s[%d, %d] layout %s\n", wdt, TK, BN, lay);
    } else {
        sb_printf(o, "        q_wq = load_global q_w[q_kb * %d + q_row, block_idx.x * %d] -> register %s[%d, %d] layout %s\n",
                  q->RS, BN, wdt, TK, BN, lay);
    }
    sb_printf(o, "        q_wf = cast q_wq -> register f32[%d, %d] layout %s\n", TK, BN, lay);
    sb_printf(o, "        q_x0 = load_shared q_xs[q_slot, 0, q_row] -> register %s[1, %d] layout %s\n", xd, TK, lx);
    const char *xf = x_broadcast(o, "        ", "q_x0", X->dtype, xd, TK, BN, lxc, lay);
    sb_puts(o, "        q_p = mul q_wf, q_xb\n");
    sb_printf(o, "        add %s, q_p -> %s\n", acc, acc);
    if (q->z.op >= 0) sb_printf(o, "        add %s, %s -> %s\n", grouped ? "q_sx" : "q_sxt", xf, grouped ? "q_sx" : "q_sxt");
    sb_puts(o, "      }\n");
    if (grouped) {
        const char *v = "q_pacc";
        if (q->z.op >= 0) {
            sb_printf(o, "      q_sxb = broadcast q_sx -> register f32[%d, %d] layout %s dim 1\n", TK, BN, lay);
            sb_puts(o, "      q_zx = mul q_zb, q_sxb\n      q_pz = sub q_pacc, q_zx\n");
            v = "q_pz";
        }
        if (q->s.op >= 0) {
            sb_printf(o, "      q_ps = mul %s, q_sb\n", v);
            v = "q_ps";
        }
        sb_printf(o, "      add q_acc, %s -> q_acc\n", v);
    }
    sb_puts(o, "    }\n  }\n");
    /* per-column zero point and scale on the thread's sums */
    const char *v = "q_acc";
    if (!grouped && q->z.op >= 0) {
        COLVALS(nz, q->z.tensor, "0", "q_zb");
        sb_printf(o, "      q_sxb = broadcast q_sxt -> register f32[%d, %d] layout %s dim 1\n", TK, BN, lay);
        sb_puts(o, "      q_zx = mul q_zb, q_sxb\n      q_az = sub q_acc, q_zx\n");
        v = "q_az";
    }
    if (!grouped && q->s.op >= 0) {
        COLVALS(ns, q->s.tensor, "0", "q_sb");
        sb_printf(o, "      q_as = mul %s, q_sb\n", v);
        v = "q_as";
    }
#undef COLVALS
    /* the block's rows: first inside each warp (shuffles), then across
     * the warps (through shared memory): one reduce over all TK rows
     * through shared memory issues TK loads per column at once */
    int B = TN < 32 && 32 % TN == 0 ? 32 / TN : 1;
    if (B > 1 && TK % B == 0 && TK > B) {
        int A = TK / B;
        sb_printf(o, "  q_r3 = view %s -> register f32[%d, %d, %d] layout spatial(%d, %d, %d).local(1, 1, %d)\n", v, A, B,
                  BN, A, B, TN, E);
        sb_printf(o, "  q_r2 = reduce.sum q_r3 -> register f32[%d, %d] layout spatial(%d, 1).replicate(%d).spatial(1, %d)"
                     ".local(1, %d) dim 1\n", A, BN, A, B, TN, E);
        v = "q_r2";
    }
    sb_printf(o, "  q_red = reduce.sum %s -> register f32[%d] layout %s dim 0\n", v, BN, lr);
    const char *res = "q_red";
    if (Y->dtype != TSL_DTYPE_F32) {
        char yd[16];
        sb_printf(o, "  q_out = cast q_red -> register %s[%d] layout %s\n", dtn(Y->dtype, yd), BN, lr);
        res = "q_out";
    }
    sb_printf(o, "  store_global %s -> %s[block_idx.y, block_idx.x * %d]\n}\n", res, ny, BN);
    return kernel_text(&h, o, &nn, &mm, NULL);
}

/* ---- the streaming GEMV (GPU, small M) -------------------------------------------------------
 * W's packed bytes stream once from global memory straight into registers:
 * a thread takes E (32; 16 for 8 bits) columns of a row, EB = E * bits / 8
 * contiguous bytes (16 for 4 and 8 bits: one 16-byte load; 4 * bits bytes
 * for the others, so a thread's values never straddle its chunk), TN
 * threads side by side cover at least a 128-byte line of the row, TK = 256
 * / TN rows of threads; a step is U rows a thread (RI = U * TK rows of the
 * block, U * EB <= 64 bytes a thread) as one register tile, loaded for the
 * next step before the current one is dequantized (view, cast: the
 * dequantization atoms), multiplied and its rows summed in registers (2U
 * runs in flight). Partial sums per group of G rows (a
 * group is GR steps) are scaled into the thread's sums at the group's last
 * step; the block's rows are reduced at the end (shuffles, then shared).
 * Too few column blocks for the multiprocessors (8192 columns of uint4:
 * 32 blocks of 256) split K into KS slices of whole groups (grid z): a
 * slice writes its f32 sums into the plan's workspace and `_qsum` adds the
 * KS slices in order (deterministic); with KS = 1 the slice kernel stores
 * Y itself and `_qsum` does nothing. KS = the option splitk, or
 * QV_SPLIT_DEFAULT, at most QV_SPLIT_MAX, the groups and what the
 * workspace holds. Taken for the byte-reading form without zero points
 * when TK divides G (the other shapes keep gemv_text).
 *
 * KS is a constant of the plan, not a function of the multiprocessor count
 * (the plan is the same on every GPU). With KS = 2 * SMs / blocks (an H200,
 * 2026-11-28) the slice kernel took KS = 1 where the sum kernel took 3 and
 * the sums overwrote Y with zeros: most likely the ptxas 13.0 fault that
 * the CUDA prelude's tsl_cdiv now avoids (docs/codegen.md), which did the
 * same to an f16-summing GEMV's split cdiv(256, cdiv(N, 1024))
 * (bench/results/gpu-2026-11-29-NVIDIA-H200-s28.md). Eight slices give
 * 32 column blocks of uint4 (N = 8192) 256 blocks, about the two blocks a
 * multiprocessor that formula aimed at on an H100 or H200; the
 * partial sums are M * N * KS * 4 bytes, a few percent of W's. The
 * tensor-core GEMV's split (qt_split) does follow the multiprocessor
 * count, a launch argument of both its kernels, whose KS expressions are
 * the same text; checked on an H200 at 3 to 32 slices (2026-11-30:
 * `tessel run --check` at M 1-15 and gpu_bench's rows). */
#define QV_SPLIT_MAX 32
#define QV_SPLIT_DEFAULT 8
#define QV_WS ((int64_t)1 << 22) /* f32 partials: contract.c's split-K workspace size, shared */

static int vec_shape(qm *q)
{
    if (q->cpu || !q->bytes || q->z.op >= 0) return 0;
    int b = q->bits;
    /* 16 columns where their bytes are whole 32-bit words (and 16 bytes at
     * most), else 32: a thread's sums and scales stay near 16 registers each */
    q->E = b % 2 == 0 && b >= 4 ? 16 : 32;
    q->EB = q->E * b / 8;
    q->TN = 1;
    while (q->TN * q->EB < 128 && q->TN < 32) q->TN *= 2;
    q->T = 256;
    q->TK = q->T / q->TN;
    q->BN = q->TN * q->E;
    int grouped = q->s.op >= 0 && q->s.grouped;
    q->GS = grouped ? (int)q->gs : 128;
    if (q->GS % q->TK) return 0;
    int gt = q->GS / q->TK;
    /* Two blocks a multiprocessor on sm_90 (128 registers): 16 columns a
     * thread, and 32 columns whose run is more than 16 bytes (uint5,
     * uint7) with a step of one row, which fits without spills. On an
     * H200 (2026-11-29, M = 1, two runs each; 8192^2 and 57344x8192):
     * uint5 0.65 -> 0.71 and 0.78 -> 0.89 TB/s, uint7 0.87 -> 0.97 and
     * 1.04 -> 1.21; uint3 (12 bytes) was slower that way (0.58 -> 0.41),
     * and one row a step without the second block slower for all three.
     * 8-bit weights gained most of the 16-column widths: uint8 0.97 ->
     * 1.23 TB/s at 8192^2. */
    q->two = q->sm >= 90 && (q->E == 16 || q->EB > 16);
    int cap = q->E == 32 && q->two ? q->EB : 64; /* bytes a thread a step */
    q->U = 1;
    for (int u = 1; u <= gt && u <= 16; u++)
        if (gt % u == 0 && u * q->EB <= cap) q->U = u;
    q->RI = q->U * q->TK;
    q->GR = q->GS / q->RI;
    return 1;
}

/* KS as an int expression over the sizes: `want` slices, at most
 * QV_SPLIT_MAX, the groups of q->GS rows and what the workspace holds
 * (KS * M rows of whole blocks of q->BN columns). */
static void split_expr(strbuf *o, const qm *q, const char *want, const char *nn, const char *mm)
{
    sb_printf(o, "max(1, min(min(%s, %d), min(cdiv(q_kr, %d), %lld / (max(%s, 1) * cdiv(%s, %d) * %d))))", want,
              QV_SPLIT_MAX, q->GS, (long long)QV_WS, mm, nn, q->BN, q->BN);
}

/* The streaming GEMV's KS (both kernels). */
static void vec_split(strbuf *o, const qm *q, const char *nn, const char *mm)
{
    char want[32];
    snprintf(want, sizeof want, "%lld", q->splitk > 0 ? (long long)q->splitk : (long long)QV_SPLIT_DEFAULT);
    split_expr(o, q, want, nn, mm);
}

/* The CPU kernels' KS (cpu_text) as an int expression over the sizes: the
 * option splitk, else slices enough for QC_BLOCKS blocks of a row of X
 * (cdiv(QC_BLOCKS, column blocks)), at most QV_SPLIT_MAX, the groups and
 * what the workspace holds. A column block is one core's work, and with
 * N / 4096 of them (2 at N = 8192) a machine of more cores than that had
 * nothing to give the rest: 32 blocks keep 16 cores busy with two each. */
#define QC_BLOCKS 32
static void cpu_split(strbuf *o, const qm *q, const char *nn, const char *mm)
{
    char want[160];
    if (q->splitk > 0) snprintf(want, sizeof want, "%lld", (long long)q->splitk);
    else snprintf(want, sizeof want, "cdiv(%d, max(cdiv(%s, %d), 1))", QC_BLOCKS, nn, q->BN);
    sb_printf(o, "max(1, min(min(%s, %d), min(cdiv(q_kr, %d), %lld / (max(%s, 1) * max(cdiv(%s, %d), 1) * %d))))", want,
              QV_SPLIT_MAX, q->GS, (long long)QV_WS, mm, nn, q->BN, q->BN);
}

/* The GPU kernels' common header (vec_text, gemm_text, sum_text): X, W's
 * bytes, S, Y, and the workspace where the kernel has one (q->ws >= 0,
 * the argument push_launch passes last). */
static void vec_header(strbuf *h, const qm *q, const char *kname)
{
    int np = 0;
    sb_printf(h, "kernel %s(", kname);
    param(h, q, q->x.tensor, &np);
    sb_puts(h, ", q_wb: global u8[q_kr, q_nb]");
    np++;
    if (q->s.op >= 0) param(h, q, q->s.tensor, &np);
    param(h, q, q->ty, &np);
    if (q->ws >= 0) sb_printf(h, ", q_ws: global f32[%lld]", (long long)QV_WS);
    if (q->mq) sb_puts(h, ", q_nsm: int"); /* qt_split's multiprocessors */
    sb_puts(h, ")");
}

/* Rows [row, row + rows) of W's bytes from column q_col (bnb of them, in
 * layout lbytes) into the register words dst (wb bits, layout lwords), at
 * indent ind: one load, its view as words, a copy (both GEMVs' steps). */
static void load_words(strbuf *o, const char *ind, const char *row, int rows, int bnb, const char *lbytes, int wb,
                       const char *lwords, const char *dst)
{
    sb_printf(o, "%sq_l = load_global q_wb[%s, q_col] -> register u8[%d, %d] layout %s\n", ind, row, rows, bnb, lbytes);
    sb_printf(o, "%sq_m = view q_l -> register u%d[%d, %d] layout %s\n", ind, wb, rows, bnb * 8 / wb, lwords);
    sb_printf(o, "%scopy q_m -> %s\n", ind, dst);
}

static char *vec_text(qm *q, const char *kname)
{
    char nx[160], ns[160] = "", ny[160], db[16], wdt[16], sd[16], yd[16];
    const lang_tensor *X = q->def->tensors[q->x.tensor], *Y = q->def->tensors[q->ty];
    const lang_tensor *S = q->s.op >= 0 ? q->def->tensors[q->s.tensor] : NULL;
    tname(q, q->x.tensor, nx, sizeof nx);
    tname(q, q->ty, ny, sizeof ny);
    if (S) tname(q, q->s.tensor, ns, sizeof ns);
    tile_dtype_name(q->wdt, wdt);
    int T = q->T, BN = q->BN, TN = q->TN, TK = q->TK, E = q->E, EB = q->EB, BNB = TN * EB, U = q->U;
    int grouped = S && q->s.grouped;
    char lay[96], lw[96], ls[96], lx[96], lxc[96], lr[96], xd[16];
    snprintf(lay, sizeof lay, "spatial(%d, %d).local(1, %d)", TK, TN, E);
    snprintf(lw, sizeof lw, "spatial(%d, %d).local(1, %d)", TK, TN, EB);
    snprintf(ls, sizeof ls, "replicate(%d).spatial(1, %d).local(1, %d)", TK, TN, E); /* [1, BN] */
    snprintf(lx, sizeof lx, "spatial(1, %d).replicate(%d)", TK, TN);                 /* [1, TK] */
    snprintf(lxc, sizeof lxc, "spatial(%d, 1).replicate(%d)", TK, TN);               /* [TK, 1] */
    snprintf(lr, sizeof lr, "replicate(%d).spatial(%d).local(%d)", TK, TN, E);       /* [BN] */
    snprintf(xd, sizeof xd, "%s", dtn(X->dtype, db));
    strbuf h = {0}, *o = &q->b, nn = {0}, mm = {0}, ks = {0};
    sexpr_text(&nn, q, Y->shape[1]);
    sexpr_text(&mm, q, Y->shape[0]);
    vec_split(&ks, q, sb_str(&nn), sb_str(&mm));
    vec_header(&h, q, kname);
    /* two blocks a multiprocessor where vec_shape chose it */
    sb_printf(&h, " grid(cdiv(%s, %d), %s, %s) threads(%d)%s {\n", sb_str(&nn), BN, sb_str(&mm), sb_str(&ks), T,
              q->two ? " min_blocks(2)" : "");
    /* the slice's steps [q_k0, q_k1): whole groups */
    sb_printf(o, "  let q_ks = %s\n  let q_ng = cdiv(q_kr, %d)\n  let q_gp = cdiv(q_ng, q_ks)\n", sb_str(&ks), q->GS);
    sb_printf(o, "  let q_k0 = block_idx.z * q_gp * %d\n  let q_k1 = min(q_ng, block_idx.z * q_gp + q_gp) * %d\n", q->GR,
              q->GR);
    sb_printf(o, "  let q_col = block_idx.x * %d\n", BNB);
    sb_printf(o, "  q_acc = alloc register f32[%d, %d] layout %s init 0.0\n", TK, BN, lay);
    if (grouped) {
        sb_printf(o, "  q_pacc = alloc register f32[%d, %d] layout %s init 0.0\n", TK, BN, lay);
    }
    /* the group's scales (q_sc) and the next group's (q_sn), as 32-bit
     * words: loaded with the next step's rows, so a group's last step
     * never waits on them */
    int SW = grouped ? E * tsl_dtype_bits(S->dtype) / 32 : 0;
    char lsw[96];
    snprintf(lsw, sizeof lsw, "replicate(%d).spatial(1, %d).local(1, %d)", TK, TN, SW);
    if (grouped) {
        sb_printf(o, "  q_sc = alloc register u32[1, %d] layout %s init 0\n", TN * SW, lsw);
        sb_printf(o, "  q_sn = alloc register u32[1, %d] layout %s init 0\n", TN * SW, lsw);
    }
#define LOADS(ind, grp, dst)                                                                                          \
    do {                                                                                                             \
        sb_printf(o, "%sq_sl = load_global %s[%s, block_idx.x * %d] -> register %s[1, %d] layout %s\n", ind, ns, grp, \
                  BN, dtn(S->dtype, sd), BN, ls);                                                                    \
        sb_printf(o, "%sq_sm = view q_sl -> register u32[1, %d] layout %s\n%scopy q_sm -> %s\n", ind, TN * SW, lsw,   \
                  ind, dst);                                                                                         \
    } while (0)
    /* A step's U rows a thread (rows u * TK + its row, u < U) are one
     * register tile, the step's (q_c) and the next step's (q_n), held as
     * 32-bit words (as bytes every byte took a register): one load takes
     * them all, so one bounds and alignment test covers the thread's U
     * runs, where a load per row paid about 30 instructions for its own.
     * On an H200 (2026-11-29, M = 1, one run against the load per row):
     * uint8 8192^2 1.22 -> 1.35 TB/s, uint4 57344x8192 1.18 -> 1.31,
     * uint3 0.53 -> 0.58, uint4 and uint6 8192^2 +1-4%; two tiles of U/2
     * rows, or four, were no faster. */
    char pre[32] = "", pre1[32] = "", pre3[32] = "";
    if (U > 1) {
        snprintf(pre, sizeof pre, "local(%d, 1).", U);   /* [RI, *] */
        snprintf(pre1, sizeof pre1, "local(1, %d).", U); /* [1, RI] */
        snprintf(pre3, sizeof pre3, "local(%d, 1, 1).", U);
    }
    int RI = q->RI;
    char lw4[96], lwu[128], layu[128], lxu[128], lxcu[128];
    snprintf(lw4, sizeof lw4, "%sspatial(%d, %d).local(1, %d)", pre, TK, TN, EB / 4);
    snprintf(lwu, sizeof lwu, "%s%s", pre, lw);
    snprintf(layu, sizeof layu, "%s%s", pre, lay);
    snprintf(lxu, sizeof lxu, "%s%s", pre1, lx);
    snprintf(lxcu, sizeof lxcu, "%s%s", pre, lxc);
    sb_printf(o, "  q_c = alloc register u32[%d, %d] layout %s init 0\n", RI, BNB / 4, lw4);
    sb_printf(o, "  q_n = alloc register u32[%d, %d] layout %s init 0\n", RI, BNB / 4, lw4);
#define LOADW(ind, row, dst) load_words(o, ind, row, RI, BNB, lwu, 32, lw4, dst)
    sb_puts(o, "  if q_k0 < q_k1 {\n");
    char r0[64];
    snprintf(r0, sizeof r0, "q_k0 * %d", RI);
    LOADW("    ", r0, "q_c");
    snprintf(r0, sizeof r0, "q_k0 / %d", q->GR);
    if (grouped) LOADS("    ", r0, "q_sc");
    sb_puts(o, "  }\n  for q_s in q_k0 : q_k1 {\n");
    sb_puts(o, "    if q_s + 1 < q_k1 {\n");
    snprintf(r0, sizeof r0, "(q_s + 1) * %d", RI);
    LOADW("      ", r0, "q_n");
    if (grouped) {
        snprintf(r0, sizeof r0, "(q_s + 1) / %d", q->GR);
        sb_printf(o, "      if (q_s + 1) %% %d == 0 {\n", q->GR);
        LOADS("        ", r0, "q_sn");
        sb_puts(o, "      }\n");
    }
#undef LOADW
#undef LOADS
    sb_puts(o, "    }\n");
    sb_printf(o, "    q_x = load_global %s[block_idx.y, q_s * %d] -> register %s[1, %d] layout %s\n", nx, RI, xd, RI,
              lxu);
    const char *acc = grouped ? "q_pacc" : "q_acc";
    /* a fresh copy of the words: the dequantizing cast reads the view's
     * words directly, so only of a value not written in place (cuda_dequant.c) */
    sb_puts(o, "    q_w = copy q_c\n");
    sb_printf(o, "    q_q = view q_w -> register %s[%d, %d] layout %s\n", wdt, RI, BN, layu);
    if (q->f16) { /* the f16 rows (exact where taken), then widened */
        sb_printf(o, "    q_h = cast q_q -> register f16[%d, %d] layout %s\n", RI, BN, layu);
        sb_printf(o, "    q_f = cast q_h -> register f32[%d, %d] layout %s\n", RI, BN, layu);
    } else {
        sb_printf(o, "    q_f = cast q_q -> register f32[%d, %d] layout %s\n", RI, BN, layu);
    }
    x_broadcast(o, "    ", "q_x", X->dtype, xd, RI, BN, lxcu, layu);
    sb_puts(o, "    q_p = mul q_f, q_xb\n");
    if (U > 1) { /* the U rows of each thread summed in its registers */
        sb_printf(o, "    q_pt = view q_p -> register f32[%d, %d, %d] layout %sspatial(1, %d, %d).local(1, 1, %d)\n", U,
                  TK, BN, pre3, TK, TN, E);
        sb_printf(o, "    q_pu = reduce.sum q_pt -> register f32[%d, %d] layout %s dim 0\n", TK, BN, lay);
        sb_printf(o, "    add %s, q_pu -> %s\n", acc, acc);
    } else {
        sb_printf(o, "    add %s, q_p -> %s\n", acc, acc);
    }
    if (grouped) {
        sb_printf(o, "    if q_s %% %d == %d {\n", q->GR, q->GR - 1);
        sb_printf(o, "      q_sv = copy q_sc\n      q_sh = view q_sv -> register %s[1, %d] layout %s\n", dtn(S->dtype, sd),
                  BN, ls);
        sb_printf(o, "      q_sf = cast q_sh -> register f32[1, %d] layout %s\n", BN, ls);
        sb_printf(o, "      q_sb = broadcast q_sf -> register f32[%d, %d] layout %s dim 0\n", TK, BN, lay);
        sb_puts(o, "      q_ps = mul q_pacc, q_sb\n      add q_acc, q_ps -> q_acc\n      mul q_pacc, 0.0 -> q_pacc\n");
        sb_puts(o, "      copy q_sn -> q_sc\n    }\n");
    }
    sb_puts(o, "    copy q_n -> q_c\n");
    sb_puts(o, "  }\n");
    const char *v = "q_acc";
    if (S && !grouped) { /* a scale per column */
        sb_printf(o, "  q_s0 = load_global %s[block_idx.x * %d] -> register %s[%d] layout %s\n", ns, BN,
                  dtn(S->dtype, sd), BN, lr);
        sb_printf(o, "  q_s1 = cast q_s0 -> register f32[%d] layout %s\n", BN, lr);
        sb_printf(o, "  q_sb = broadcast q_s1 -> register f32[%d, %d] layout %s dim 0\n", TK, BN, lay);
        sb_puts(o, "  q_as = mul q_acc, q_sb\n");
        v = "q_as";
    }
    /* the block's rows: inside each warp (shuffles), then across warps */
    int B = TN < 32 ? 32 / TN : 1;
    if (B > 1 && TK % B == 0 && TK > B) {
        int A = TK / B;
        sb_printf(o, "  q_r3 = view %s -> register f32[%d, %d, %d] layout spatial(%d, %d, %d).local(1, 1, %d)\n", v, A, B,
                  BN, A, B, TN, E);
        sb_printf(o,
                  "  q_r2 = reduce.sum q_r3 -> register f32[%d, %d] layout spatial(%d, 1).replicate(%d).spatial(1, %d)"
                  ".local(1, %d) dim 1\n",
                  A, BN, A, B, TN, E);
        v = "q_r2";
    }
    sb_printf(o, "  q_red = reduce.sum %s -> register f32[%d] layout %s dim 0\n", v, BN, lr);
    sb_puts(o, "  if q_ks == 1 {\n");
    const char *res = "q_red";
    if (Y->dtype != TSL_DTYPE_F32) {
        sb_printf(o, "    q_out = cast q_red -> register %s[%d] layout %s\n", dtn(Y->dtype, yd), BN, lr);
        res = "q_out";
    }
    sb_printf(o, "    store_global %s -> %s[block_idx.y, block_idx.x * %d]\n  }\n", res, ny, BN);
    /* the slice's sums: workspace row (z * M + m), padded to whole blocks */
    sb_printf(o, "  if q_ks > 1 {\n    store_global q_red -> q_ws[(block_idx.z * %s + block_idx.y) * cdiv(%s, %d) * %d + "
                 "block_idx.x * %d]\n  }\n}\n",
              sb_str(&mm), sb_str(&nn), BN, BN, BN);
    return kernel_text(&h, o, &nn, &mm, &ks);
}

/* The slice's f32 BM x BN block `sums` into the workspace (at indent 4):
 * row (z * M + m), padded to whole blocks of BN columns (sum_text's),
 * rows past M and columns past N masked off. */
static void ws_scatter(strbuf *o, const char *sums, int BM, int BN, const char *lc, const char *mm, const char *nn)
{
    sb_printf(o, "    q_im = iota block_idx.y * %d -> register i64[%d, %d] layout %s dim 0\n", BM, BM, BN, lc);
    sb_printf(o, "    q_in = iota block_idx.x * %d -> register i64[%d, %d] layout %s dim 1\n", BN, BM, BN, lc);
    sb_printf(o, "    q_mok = lt q_im, %s\n    q_nok = lt q_in, %s\n    q_ok = and q_mok, q_nok\n", mm, nn);
    sb_printf(o, "    q_ir = add q_im, block_idx.z * %s\n    q_irn = mul q_ir, cdiv(%s, %d) * %d\n", mm, nn, BN, BN);
    sb_printf(o, "    q_ix = add q_irn, q_in\n    scatter %s -> q_ws, q_ix mask q_ok\n", sums);
}

/* ---- the GPU GEMV on tensor cores (the dequantizing mma) --------------------------------- */

/* Warps a block (columns side by side), blocks a multiprocessor (min_blocks). */
enum { QT_WARPS = 4, QT_MIN_BLOCKS = 3 };

/* Does the tensor-core GEMV apply? uint1/2/4/8 W read as bytes, f16 X, no
 * zero points, a grouped scale's groups whole k16 steps, sm_80 or later,
 * the option qmatmul.mma. Sets its shape: a lane 16 columns (2 BITS bytes)
 * of 4 rows a step, a warp 128 columns, QT_WARPS warps a block. */
static int qt_shape(qm *q, const sched_options *o)
{
    int opt = o->qmma, prefetch = o->qprefetch;
    tsl_dtype wt = q->def->tensors[q->w.tensor]->dtype;
    /* the option: 2 every width it takes, 1 (the default) the widths
     * where it measured faster than the CUDA-core GEMV at each shape, 0
     * never: uint1, uint2 and uint4, and on sm_90 with its 128-byte loads
     * (below) uint8 too (H200, us, at 8192^2 / 57344x8192 / 8192x28672:
     * uint8 39.1 / 156.6 / 87.0 against 44.4 / 236.5 / 98.2 on CUDA cores;
     * with 64-byte loads it was slower at two shapes of three) */
    int wide = q->sm >= 90 && q->bits >= 4;
    int on = opt == 2 || (opt == 1 && (q->bits <= 4 || wide));
    int gs = q->s.op >= 0 && q->s.grouped ? (int)q->gs : 128;
    if (!on || q->cpu || !q->bytes || q->z.op >= 0 || q->sm < 80 || gs % 16 ||
        q->def->tensors[q->x.tensor]->dtype != TSL_DTYPE_F16 ||
        !(wt == TSL_DTYPE_U1 || wt == TSL_DTYPE_U2 || wt == TSL_DTYPE_U4 || wt == TSL_DTYPE_U8))
        return 0;
    q->GS = gs;
    q->EB = 2 * q->bits;
    /* U k16 steps a load, whole steps of a group: 128 bytes a lane in
     * flight for uint4 and uint8 on sm_90 (U = 16 / bits), else 64 (8 /
     * bits). The kernel waits on its loads (ncu, uint4 8192^2: warps
     * stalled a issued instruction on long scoreboard 1.78, on fixed
     * latency 1.77); on an H200 the 128 bytes made uint4 57344x8192 111.3
     * -> 101.7 us and uint8 187.7 -> 151.0 us (3.16 TB/s), though they
     * spill (NVRTC sm_90a: 108 and 100 bytes stored at the 168 registers
     * of 3 blocks; sm_80, unmeasured, would spill 116 and 216, so it
     * keeps 64); uint2 gained 2-4% on the large shapes and lost 0-2% at
     * 8192^2, and stays */
    int bytes = o->qload ? o->qload : wide ? 128 : 64;
    q->U = bytes / (8 * q->bits) > 1 ? bytes / (8 * q->bits) : 1;
    while (q->U > 1 && (q->GS / 16) % q->U) q->U /= 2;
    q->GR = q->GS / (16 * q->U);
    /* X's block and the scales of a group by cp.async a group ahead (2),
     * or by plain loads at the group's start and end (0); 1 (the default)
     * where it measured faster: groups of one load (uint1), where those
     * two loads sat between every two loads of W, and of four (uint8 at
     * 128 bytes). H200, M = 1, us at 8192^2 / 57344x8192 / 8192x28672,
     * three calls: uint1 32.7 / 131.7 / 72.5 -> 29.7 / 108.4 / 61.4;
     * uint8 38.4-40.1 / 157.3-159.1 / 86.8-88.5 -> 36.9-38.6 /
     * 155.0-156.3 / 85.8-87.5; with two loads a group (uint2, uint4)
     * 1-10% slower */
    q->pre = prefetch == 2 || (prefetch == 1 && q->GR != 2);
    q->BN = 128 * QT_WARPS;
    q->T = 32 * QT_WARPS;
    q->mq = 1;
    return 1;
}

/* The tensor-core GEMV's KS: the option splitk, else the most slices whose
 * blocks fit the GPU at once, QT_MIN_BLOCKS a multiprocessor (q_nsm, the
 * launch's SCHED_ARG_SMS; 1 off the GPU: no split there unless asked), at
 * most QV_SPLIT_MAX, the groups and the workspace. On an H200 (132 SMs)
 * that is 24 slices at N = 8192 (384 blocks): against the 16 of a fixed
 * 256-block target, 1.06-1.16x faster at 8192^2 and 8192x28672 (uint1,
 * uint2, uint4); 20 slices were no faster than 16, and 32 (512 blocks,
 * a second wave) 1.2x slower. */
static void qt_split(strbuf *o, const qm *q, const char *nn, const char *mm)
{
    char want[160];
    if (q->splitk > 0) snprintf(want, sizeof want, "%lld", (long long)q->splitk);
    else snprintf(want, sizeof want, "%d * q_nsm / (cdiv(%s, %d) * cdiv(%s, 8))", QT_MIN_BLOCKS, nn, q->BN, mm);
    split_expr(o, q, want, nn, mm);
}

/* The GEMV for M < 16 on tensor cores: a block per 8 rows of X and
 * 128 x QT_WARPS columns, its warps side by side; a step is 16 rows of W,
 * which a lane holds as 4 rows x 16 columns (2 BITS bytes each) in 32-bit
 * words, loaded for the next step before this one is multiplied. The step
 * is one `mma X, W, acc atom q.m8n128k16` (sm80.c's dequantizing rows:
 * codes to exact f16 in registers by prmt, lop3 and one fma.f16x2, then
 * m16n8k16 with W^T as the hardware's A), X's 8 x 16U read from the
 * group's 8 x G block, which the block loads into shared memory once
 * (zero past M and K). Partial sums per group of G rows are scaled into
 * the block's sums after the group's steps, in f32 as the other kernels
 * do; a lane's sums are its own (no reduction). K split into KS slices of
 * whole groups (grid z, qt_split) as the streaming GEMV's, summed by
 * sum_text. */
static char *qt_text(qm *q, const char *kname)
{
    char nx[160], ns[160] = "", ny[160], wdt[16], sd[16], yd[16];
    const lang_tensor *Y = q->def->tensors[q->ty];
    const lang_tensor *S = q->s.op >= 0 ? q->def->tensors[q->s.tensor] : NULL;
    tname(q, q->x.tensor, nx, sizeof nx);
    tname(q, q->ty, ny, sizeof ny);
    if (S) tname(q, q->s.tensor, ns, sizeof ns);
    tile_dtype_name(q->wdt, wdt);
    int W = QT_WARPS, BN = q->BN, EB = q->EB, BNB = BN * q->bits / 8, grouped = S && q->s.grouped;
    /* a lane's words: 32-bit, or one 16-bit word a row for uint1 */
    int wb = EB % 4 == 0 ? 32 : 16, WPR = EB * 8 / wb;
    int U = q->U, R = 16 * U; /* k16 steps and rows a load */
    char lw8[128], lww[128], lq[128], lx[128], lc[96], ls[96], pu[32] = "", px[32] = "";
    if (U > 1) {
        snprintf(pu, sizeof pu, "local(%d, 1).", U);
        snprintf(px, sizeof px, "local(1, %d).", U);
    }
    snprintf(lw8, sizeof lw8, "%sspatial(1, %d).column_spatial(4, 8).local(4, %d)", pu, W, EB);
    snprintf(lww, sizeof lww, "%sspatial(1, %d).column_spatial(4, 8).local(4, %d)", pu, W, WPR);
    snprintf(lq, sizeof lq, "%sspatial(1, %d).column_spatial(4, 8).local(4, 16)", pu, W);
    snprintf(lx, sizeof lx, "%sreplicate(%d).spatial(8, 4).local(1, 4)", px, W);
    snprintf(lc, sizeof lc, "spatial(1, %d).column_spatial(4, 8).local(2, 16)", W);
    snprintf(ls, sizeof ls, "spatial(1, %d).spatial(1, 8).replicate(4).local(1, 16)", W);
    strbuf h = {0}, *o = &q->b, nn = {0}, mm = {0}, ks = {0};
    sexpr_text(&nn, q, Y->shape[1]);
    sexpr_text(&mm, q, Y->shape[0]);
    qt_split(&ks, q, sb_str(&nn), sb_str(&mm));
    vec_header(&h, q, kname);
    sb_printf(&h, " grid(cdiv(%s, %d), cdiv(%s, 8), %s) threads(%d) min_blocks(%d) {\n", sb_str(&nn), BN, sb_str(&mm),
              sb_str(&ks), q->T, QT_MIN_BLOCKS);
    /* the slice's groups [q_g0, q_g1), its loads [q_k0, q_k1) */
    sb_printf(o, "  let q_ks = %s\n  let q_ng = cdiv(q_kr, %d)\n  let q_gp = cdiv(q_ng, q_ks)\n", sb_str(&ks), q->GS);
    sb_printf(o, "  let q_g0 = block_idx.z * q_gp\n  let q_g1 = min(q_ng, q_g0 + q_gp)\n");
    sb_printf(o, "  let q_k0 = q_g0 * %d\n  let q_k1 = q_g1 * %d\n", q->GR, q->GR);
    sb_printf(o, "  let q_col = block_idx.x * %d\n", BNB);
    sb_printf(o, "  q_acc = alloc register f32[8, %d] layout %s init 0.0\n", BN, lc);
    /* rows GS + 16 apart: a step's X fragment (8 rows x 4 lanes x 8 bytes)
     * in 2 wavefronts, not the 8 of rows a multiple of 128 bytes apart
     * (ncu: 71% of the shared wavefronts were excess) */
    sb_printf(o, "  q_xs = alloc shared f16[2, 8, %d] layout (2,8,%d):(%d,%d,1)\n", q->GS, q->GS, 8 * (q->GS + 16),
              q->GS + 16);
    int pre = q->pre, spre = pre && grouped;
    if (spre) sb_printf(o, "  q_ss = alloc shared %s[2, 1, %d]\n", dtn(S->dtype, sd), BN);
    const char *acc = grouped ? "q_pacc" : "q_acc";
    sb_printf(o, "  q_c = alloc register u%d[%d, %d] layout %s init 0\n", wb, R, BNB * 8 / wb, lww);
    sb_printf(o, "  q_n = alloc register u%d[%d, %d] layout %s init 0\n", wb, R, BNB * 8 / wb, lww);
    /* (pre) group g's 8 x G block of X (zero past M and K) and its row of
     * scales by cp.async into buffer g % 2, a group ahead */
#define ISSUE(ind, g)                                                                                                 \
    do {                                                                                                              \
        sb_printf(o, "%scopy_async %s[block_idx.y * 8, (%s) * %d] -> q_xs[(%s) %% 2] fill 0 bytes 16\n", ind, nx, g,  \
                  q->GS, g);                                                                                          \
        if (spre)                                                                                                     \
            sb_printf(o, "%scopy_async %s[%s, block_idx.x * %d] -> q_ss[(%s) %% 2] fill 0 bytes 16\n", ind, ns, g,   \
                      BN, g);                                                                                         \
    } while (0)
#define LOADW(ind, row, dst) load_words(o, ind, row, R, BNB, lw8, wb, lww, dst)
    sb_puts(o, "  if q_k0 < q_k1 {\n");
    if (pre) ISSUE("    ", "q_g0");
    char r0[48];
    snprintf(r0, sizeof r0, "q_k0 * %d", R);
    LOADW("    ", r0, "q_c");
    /* a group's loads in an inner loop: its partial sums start at 0 and
     * are scaled after it, off the loads' path */
    sb_printf(o, "  }\n%s  for q_g in q_g0 : q_g1 {\n", pre ? "  commit\n  wait 0\n  sync\n" : "");
    if (grouped) sb_printf(o, "    q_pacc = alloc register f32[8, %d] layout %s init 0.0\n", BN, lc);
    if (pre) {
        /* the next group's into the other buffers, last read in the
         * group before this one (a barrier ends each group) */
        sb_puts(o, "    if q_g + 1 < q_g1 {\n");
        ISSUE("      ", "q_g + 1");
        sb_puts(o, "    }\n    commit\n");
    } else {
        /* X's 8 x G block of the group into shared memory once (one
         * masked load for the block; the steps then read it unmasked),
         * two buffers so that one barrier a group orders the writes after
         * the last reads */
        sb_printf(o, "    q_xg = load_global %s[block_idx.y * 8, q_g * %d] -> register f16[8, %d] layout spatial(8, %d).local(1, %d)\n",
                  nx, q->GS, q->GS, q->T / 8, q->GS * 8 / q->T);
        sb_puts(o, "    store_shared q_xg -> q_xs[q_g % 2, 0, 0]\n    sync\n");
    }
#undef ISSUE
    /* unrolled up to 8 loads a group: the next load's words then need no
     * copy into the current one's registers (1,214 instructions a group
     * of uint4 in place of 1,344) */
    sb_printf(o, "    for q_r in 0 : %d%s {\n      let q_s = q_g * %d + q_r\n      if q_s + 1 < q_k1 {\n", q->GR,
              q->GR <= 8 ? " unroll" : "", q->GR);
    snprintf(r0, sizeof r0, "(q_s + 1) * %d", R);
    LOADW("        ", r0, "q_n");
#undef LOADW
    sb_puts(o, "      }\n");
    sb_printf(o, "      q_x = load_shared q_xs[q_g %% 2, 0, q_r * %d] -> register f16[8, %d] layout %s\n", R, R, lx);
    sb_puts(o, "      q_w = copy q_c\n");
    sb_printf(o, "      q_q = view q_w -> register %s[%d, %d] layout %s\n", wdt, R, BN, lq);
    sb_printf(o, "      mma q_x, q_q, %s -> %s atom q.m8n128k16\n", acc, acc);
    sb_puts(o, "      copy q_n -> q_c\n    }\n");
    if (spre)
        sb_printf(o, "    q_sl = load_shared q_ss[q_g %% 2, 0, 0] -> register %s[1, %d] layout %s\n", dtn(S->dtype, sd),
                  BN, ls);
    else if (grouped)
        sb_printf(o, "    q_sl = load_global %s[q_g, block_idx.x * %d] -> register %s[1, %d] layout %s\n", ns, BN,
                  dtn(S->dtype, sd), BN, ls);
    if (grouped) {
        sb_printf(o, "    q_sf = cast q_sl -> register f32[1, %d] layout %s\n", BN, ls);
        sb_printf(o, "    q_sb = broadcast q_sf -> register f32[8, %d] layout %s dim 0\n", BN, lc);
        sb_puts(o, "    q_ps = mul q_pacc, q_sb\n    add q_acc, q_ps -> q_acc\n");
    }
    if (pre) sb_puts(o, "    wait 0\n    sync\n");
    sb_puts(o, "  }\n");
    const char *res = "q_acc";
    if (S && !grouped) { /* a scale per column */
        sb_printf(o, "  q_s0 = load_global %s[block_idx.x * %d] -> register %s[%d] layout spatial(%d).spatial(8)"
                     ".replicate(4).local(16)\n",
                  ns, BN, dtn(S->dtype, sd), BN, W);
        sb_printf(o, "  q_s1 = cast q_s0 -> register f32[%d] layout spatial(%d).spatial(8).replicate(4).local(16)\n", BN, W);
        sb_printf(o, "  q_sb = broadcast q_s1 -> register f32[8, %d] layout %s dim 0\n", BN, lc);
        sb_puts(o, "  q_as = mul q_acc, q_sb\n");
        res = "q_as";
    }
    const char *sums = res;
    sb_puts(o, "  if q_ks == 1 {\n");
    if (Y->dtype != TSL_DTYPE_F32) {
        sb_printf(o, "    q_out = cast %s -> register %s[8, %d] layout %s\n", res, dtn(Y->dtype, yd), BN, lc);
        res = "q_out";
    }
    sb_printf(o, "    store_global %s -> %s[block_idx.y * 8, block_idx.x * %d]\n  }\n  if q_ks > 1 {\n", res, ny, BN);
    ws_scatter(o, sums, 8, BN, lc, sb_str(&mm), sb_str(&nn));
    sb_puts(o, "  }\n}\n");
    return kernel_text(&h, o, &nn, &mm, &ks);
}

/* ---- the GPU kernel for M >= 16: tensor cores --------------------------------------------- */

enum { TC_BM = 16, TC_BN = 64, TC_T = 128, TC_STAGES = 4 };

/* The depth of a k step (the tensor-core kernel's BK): whole groups of the
 * scale (a group is whole steps), 128 down to 16; 0 when
 * the kernel does not apply: the CPU, W read as codes, zero points (the
 * rows past W's the step pads with code 0 would add -Z * S * x), X not
 * f16 (mma.m16n8k16's operands), a scale of another dtype than f16/f32. */
static int tc_depth(const qm *q)
{
    if (q->cpu || !q->bytes || q->z.op >= 0) return 0;
    if (q->def->tensors[q->x.tensor]->dtype != TSL_DTYPE_F16) return 0;
    /* deep steps: a block streams all of K, so its bytes in flight are
     * its stages (H100, u4 8192 x 8192 at M = 16: 371 us with BK = 32) */
    int grouped = q->s.op >= 0 && q->s.grouped;
    if (!grouped) return 128;
    for (int bk = 128; bk >= 16; bk /= 2)
        if (q->gs % bk == 0) return bk;
    return 0;
}

/* The tensor-core kernel's columns a block: 64, or 128 where 64 columns'
 * bytes are not whole 16-byte chunks (the pipeline's cp.async). */
static int tc_cols(const qm *q) { return TC_BN * q->bits / 8 % 16 ? 2 * TC_BN : TC_BN; }

/* The tensor-core kernel's KS (gemm_text and its sum_text), as vec_split's
 * over q->BN = tc_cols columns and groups of q->GS rows (G, or the step
 * without grouped scales): the option splitk, else enough slices for
 * TC_SPLIT_BLOCKS blocks, at most 4 (2 for 8-bit weights). At M = 16,
 * N = K = 8192 (H200, 2026-11-29, us for splits 1 / 2 / 4 / 8): uint3 (64
 * column blocks) 99.8 / 57.1 / 42.8 / 47.9, uint4 (128) 65.2 / 46.9 / 42.2
 * / 45.1, uint8 (128) 66.9 / 49.0 / 54.8 / 56.2; splits 2 / 4 / 8: uint5
 * 62.2 / 51.8 / 54.3, uint6 56.8 / 56.4 / 57.7, uint7 66.0 / 55.6 / 59.1. */
#define TC_SPLIT_BLOCKS 512
static void gemm_split(strbuf *o, const qm *q, const char *nn, const char *mm)
{
    char want[160];
    if (q->splitk > 0) snprintf(want, sizeof want, "%lld", (long long)q->splitk);
    else
        snprintf(want, sizeof want, "min(%d, cdiv(%d, cdiv(%s, %d) * cdiv(%s, %d)))", q->bits < 8 ? 4 : 2,
                 TC_SPLIT_BLOCKS, mm, TC_BM, nn, q->BN);
    split_expr(o, q, want, nn, mm);
}

/* A block per 16 rows of X and 64 columns (128 for 1, 3, 5, 7 bits: whole
 * 16-byte chunks of W), 4 warps side by side (16 x 16 or 16 x 32 of Y
 * each: m16n8k16 atoms); per k step of BK rows a
 * TC_STAGES-deep cp.async pipeline brings X's 16 x BK block and W's BK
 * rows of 64 columns as bytes; every thread dequantizes 64 * BK / 128 of
 * them (view, cast to f16: the f16 dequantization rows, exact) into a
 * shared f16 tile, from which the warps load B fragments (ldmatrix.trans)
 * beside A's and multiply on tensor cores into f32 sums: per group (a
 * group is G / BK steps), scaled by the group's S at its last step into
 * the accumulators, as the GEMV does (no rounding of W * S); a scale per
 * column multiplies the sums at the end.
 *
 * K is split into KS slices of whole groups along grid z (gemm_split; q->ws,
 * the plan's workspace): slice z runs steps [q_k0, q_k1) through the
 * pipeline, scales per group inside the slice and scatters its f32
 * 16 x BN block to workspace row (z * M + m), which the `_qgemm_qsum`
 * launch (sum_text) adds in slice order; KS = 1 stores Y. With the
 * option contract.splitk = 1 (q->ws < 0) the kernel is the single pass
 * over K and there is no sum. */
static char *gemm_text(qm *q, const char *kname, int BK)
{
    int split = q->ws >= 0; /* KS may be more than 1 (gemm_split) */
    char nx[160], ns[160] = "", ny[160], wdt[16], sd[16], yd[16];
    const lang_tensor *Y = q->def->tensors[q->ty];
    tname(q, q->x.tensor, nx, sizeof nx);
    tname(q, q->ty, ny, sizeof ny);
    if (q->s.op >= 0) tname(q, q->s.tensor, ns, sizeof ns);
    tile_dtype_name(q->wdt, wdt);
    int BN = q->BN;
    int BNB = BN * q->bits / 8, TR = TC_T / BK, E = BN / TR; /* TR threads per row, E columns each */
    int tn = BN / (8 * 4), ka = BK / 16;
    const target_atom *row = target_mma_resolve("m16n8k16", TSL_DTYPE_F16, TSL_DTYPE_F32, NULL);
    strbuf f[3] = {{0}};
    if (!row || target_frag_text(&f[0], row, TARGET_A, 0) || target_frag_text(&f[1], row, TARGET_B, 0) ||
        target_frag_text(&f[2], row, TARGET_C, 0)) {
        for (int i = 0; i < 3; i++) sb_free(&f[i]);
        return NULL;
    }
    char lc[256], la[256], lb[256], lw[96], lc1[256], lc0[256];
    snprintf(lc, sizeof lc, "spatial(1, 4).local(1, %d).%s", tn, sb_str(&f[2]));
    /* lc without its rows: [1, BN] (a row of scales per thread's columns), [BN] */
    snprintf(lc1, sizeof lc1, "spatial(1, 4).local(1, %d).local(1, 1).replicate(8).spatial(1, 4).local(1, 2)", tn);
    snprintf(lc0, sizeof lc0, "spatial(4).local(%d).local(1).replicate(8).spatial(4).local(2)", tn);
    snprintf(la, sizeof la, "replicate(4).local(1, %d).%s", ka, sb_str(&f[0]));
    snprintf(lb, sizeof lb, "spatial(1, 4).local(%d, %d).%s", ka, tn, sb_str(&f[1]));
    for (int i = 0; i < 3; i++) sb_free(&f[i]);
    snprintf(lw, sizeof lw, "spatial(%d, %d).local(1, %d)", BK, TR, E);
    strbuf h = {0}, *o = &q->b, nn = {0}, mm = {0}, ks = {0};
    sexpr_text(&nn, q, Y->shape[1]);
    sexpr_text(&mm, q, Y->shape[0]);
    vec_header(&h, q, kname); /* split: the workspace too, the sum's header */
    if (split) gemm_split(&ks, q, sb_str(&nn), sb_str(&mm));
    int64_t smem = (int64_t)TC_STAGES * (TC_BM * (BK + 8) * 2 + BK * BNB) + BK * (BN + 8) * 2 + 1024;
    sb_printf(&h, " grid(cdiv(%s, %d), cdiv(%s, %d)%s%s) threads(%d) smem_budget(%lld) {\n", sb_str(&nn), BN,
              sb_str(&mm), TC_BM, split ? ", " : "", split ? sb_str(&ks) : "", TC_T, (long long)smem);
    /* the step qk: the pipeline's q_k, or slice z's q_k0 + q_j, its steps
     * [q_k0, q_k1) whole groups (K's last step ends the last group) */
    /* W's shared view: q_ws unless that names the workspace */
    const char *qk = "q_k", *wv = split ? "q_wt" : "q_ws";
    if (split) {
        sb_printf(o, "  let q_ks = %s\n  let q_ng = cdiv(q_kr, %d)\n  let q_gp = cdiv(q_ng, q_ks)\n", sb_str(&ks), q->GS);
        sb_printf(o, "  let q_k0 = min(block_idx.z * q_gp * %d, cdiv(q_kr, %d))\n", q->GS / BK, BK);
        sb_printf(o, "  let q_k1 = min(min(q_ng, block_idx.z * q_gp + q_gp) * %d, cdiv(q_kr, %d))\n", q->GS / BK, BK);
        qk = "(q_k0 + q_j)";
    }
    sb_printf(o, "  q_acc = alloc register f32[%d, %d] layout %s init 0.0\n", TC_BM, BN, lc);
    sb_printf(o, "  q_wf = alloc shared f16[%d, %d] layout (%d, %d):(%d, 1)\n", BK, BN, BK, BN, BN + 8);
    if (q->s.op >= 0 && q->s.grouped)
        sb_printf(o, "  q_pacc = alloc register f32[%d, %d] layout %s init 0.0\n", TC_BM, BN, lc);
    if (split)
        sb_puts(o, "  pipeline(grid=(q_j: max(0, q_k1 - q_k0)), ");
    else
        sb_printf(o, "  pipeline(grid=(q_k: cdiv(q_kr, %d)), ", BK);
    sb_printf(o,
              "stages=%d, in=[q_xs = %s[%d, %d] at (block_idx.y, %s) shared "
              "layout (%d, %d):(%d, 1), %s = q_wb[%d, %d] at (%s, block_idx.x) shared], out=[]) {\n",
              TC_STAGES, nx, TC_BM, BK, qk, TC_BM, BK, BK + 8, wv, BK, BNB, qk);
    const lang_tensor *S = q->s.op >= 0 ? q->def->tensors[q->s.tensor] : NULL;
    int grouped = S && q->s.grouped;
    if (grouped) /* the group's scales, loaded first so that the step hides their latency */
        sb_printf(o, "    q_s0 = load_global %s[%s / %d, block_idx.x * %d] -> register %s[1, %d] layout %s\n", ns, qk,
                  (int)(q->gs / BK), BN, dtn(S->dtype, sd), BN, lc1);
    /* dequantize the step's W into the shared f16 tile */
    sb_printf(o, "    q_w8 = load_shared %s[0, 0] -> register u8[%d, %d] layout spatial(%d, %d).local(1, %d)\n", wv, BK,
              BNB, BK, TR, BNB / TR);
    sb_printf(o, "    q_wq = view q_w8 -> register %s[%d, %d] layout %s\n", wdt, BK, BN, lw);
    sb_printf(o, "    q_wh = cast q_wq -> register f16[%d, %d] layout %s\n", BK, BN, lw);
    sb_puts(o, "    store_shared q_wh -> q_wf[0, 0]\n    sync\n");
    sb_printf(o, "    q_ra = load_shared q_xs[0, 0] -> register f16[%d, %d] layout %s\n", TC_BM, BK, la);
    sb_printf(o, "    q_rb = load_shared q_wf[0, 0] -> register f16[%d, %d] layout %s\n", BK, BN, lb);
    sb_printf(o, "    mma q_ra, q_rb, %s -> %s\n", grouped ? "q_pacc" : "q_acc", grouped ? "q_pacc" : "q_acc");
    if (grouped) {
        /* a group's last step (or the last step): its sums times its scales */
        int R = (int)(q->gs / BK);
        sb_printf(o, "    if (%s + 1) %% %d == 0 || %s + 1 == cdiv(q_kr, %d) {\n", qk, R, qk, BK);
        sb_printf(o, "      q_s1 = cast q_s0 -> register f32[1, %d] layout %s\n", BN, lc1);
        sb_printf(o, "      q_sb = broadcast q_s1 -> register f32[%d, %d] layout %s dim 0\n", TC_BM, BN, lc);
        sb_puts(o, "      q_ps = mul q_pacc, q_sb\n      add q_acc, q_ps -> q_acc\n      mul q_pacc, 0.0 -> q_pacc\n    }\n");
    }
    sb_puts(o, "    sync\n  }\n");
    const char *res = "q_acc";
    if (S && !grouped) { /* per column */
        sb_printf(o, "  q_s0 = load_global %s[block_idx.x * %d] -> register %s[%d] layout %s\n", ns, BN, dtn(S->dtype, sd),
                  BN, lc0);
        sb_printf(o, "  q_s1 = cast q_s0 -> register f32[%d] layout %s\n", BN, lc0);
        sb_printf(o, "  q_sb = broadcast q_s1 -> register f32[%d, %d] layout %s dim 0\n", TC_BM, BN, lc);
        sb_puts(o, "  q_as = mul q_acc, q_sb\n");
        res = "q_as";
    }
    const char *in = split ? "    " : "  ", *sums = res;
    if (split) sb_puts(o, "  if q_ks == 1 {\n");
    if (Y->dtype != TSL_DTYPE_F32) {
        sb_printf(o, "%sq_out = cast %s -> register %s[%d, %d] layout %s\n", in, res, dtn(Y->dtype, yd), TC_BM, BN, lc);
        res = "q_out";
    }
    sb_printf(o, "%sstore_global %s -> %s[block_idx.y * %d, block_idx.x * %d]\n", in, res, ny, TC_BM, BN);
    if (split) {
        /* the slice's f32 sums: workspace row (z * M + m), padded to whole
         * blocks (sum_text's), rows past M and columns past N masked off */
        sb_puts(o, "  }\n  if q_ks > 1 {\n");
        ws_scatter(o, sums, TC_BM, BN, lc, sb_str(&mm), sb_str(&nn));
    }
    sb_puts(o, split ? "  }\n}\n" : "}\n");
    return kernel_text(&h, o, &nn, &mm, &ks);
}

/* The CPU kernels' header (the launch's arguments, push_launch): X, W (its
 * bytes, or its elements as codes), S, Z, Y, the workspace. */
static void cpu_header(strbuf *h, const qm *q, const char *kname)
{
    char wdt[16];
    int np = 0;
    sb_printf(h, "kernel %s(", kname);
    param(h, q, q->x.tensor, &np);
    if (q->bytes) sb_puts(h, ", q_wb: global u8[q_kr, q_nb]");
    else sb_printf(h, ", q_w: global %s[q_kr, q_wn]", tile_dtype_name(q->wdt, wdt));
    np++;
    if (q->s.op >= 0) param(h, q, q->s.tensor, &np);
    if (q->z.op >= 0 && q->z.tensor != q->s.tensor) param(h, q, q->z.tensor, &np);
    param(h, q, q->ty, &np);
    sb_printf(h, ", q_ws: global f32[%lld])", (long long)QV_WS);
}

/* The CPU kernel: a block (one thread) per BN columns of a row of X and
 * per slice of K (grid z, KS = cpu_split's: slices of q_gp whole groups,
 * the last ones short or empty); per group, the group's rows in order
 * through the dequantizing micro-kernel (cpu.ukr.dequant: W's row of bytes
 * unpacked, times x, into the group's partial sums), then scaled into the
 * block's sums (zero points and per-column scales, linear, per slice).
 * KS = 1: the block stores Y; else its f32 sums go to workspace row
 * (z * M + m), padded to whole blocks, for sum_text. */
static char *cpu_text(qm *q, const char *kname)
{
    char nx[160], ns[160], nz[160], ny[160], xd[16], wdt[16];
    const lang_tensor *X = q->def->tensors[q->x.tensor], *Y = q->def->tensors[q->ty];
    tname(q, q->x.tensor, nx, sizeof nx);
    tname(q, q->ty, ny, sizeof ny);
    if (q->s.op >= 0) tname(q, q->s.tensor, ns, sizeof ns);
    if (q->z.op >= 0) tname(q, q->z.tensor, nz, sizeof nz);
    dtn(X->dtype, xd);
    tile_dtype_name(q->wdt, wdt);
    int BN = q->BN, b = q->bits, BNB = BN * b / 8, GS = q->GS;
    int grouped = (q->s.op >= 0 && q->s.grouped) || (q->z.op >= 0 && q->z.grouped);
    strbuf h = {0}, *o = &q->b, nn = {0}, mm = {0}, ks = {0};
    cpu_header(&h, q, kname);
    sexpr_text(&nn, q, Y->shape[1]);
    sexpr_text(&mm, q, Y->shape[0]);
    cpu_split(&ks, q, sb_str(&nn), sb_str(&mm));
    sb_printf(&h, " grid(cdiv(%s, %d), %s, %s) threads(1) {\n", sb_str(&nn), BN, sb_str(&mm), sb_str(&ks));
    char L[32], L1[16] = "local(1)";
    snprintf(L, sizeof L, "local(%d)", BN);
    /* the slice's groups [q_g0, q_g1) */
    sb_printf(o, "  let q_ks = %s\n  let q_gp = cdiv(cdiv(q_kr, %d), q_ks)\n", sb_str(&ks), GS);
    sb_printf(o, "  let q_g0 = block_idx.z * q_gp\n  let q_g1 = min(cdiv(q_kr, %d), q_g0 + q_gp)\n", GS);
    sb_printf(o, "  q_acc = alloc register f32[%d] layout %s init 0.0\n", BN, L);
    if (q->z.op >= 0 && !grouped) sb_printf(o, "  q_sxt = alloc register f32[1] layout %s init 0.0\n", L1);
    sb_puts(o, "  for q_g in q_g0 : q_g1 {\n");
    sb_printf(o, "    let q_nr = min(%d, q_kr - q_g * %d)\n", GS, GS);
    const char *acc = "q_acc";
    if (grouped) {
        sb_printf(o, "    q_pacc = alloc register f32[%d] layout %s init 0.0\n", BN, L);
        acc = "q_pacc";
    }
    sb_puts(o, "    for q_r in 0 : q_nr {\n");
    if (q->bytes) {
        sb_printf(o, "      q_w8 = load_global q_wb[q_g * %d + q_r, block_idx.x * %d] -> register u8[%d] layout local(%d)\n",
                  GS, BNB, BNB, BNB);
        sb_printf(o, "      q_wq = view q_w8 -> register %s[%d] layout %s\n", wdt, BN, L);
    } else {
        sb_printf(o, "      q_wq = load_global q_w[q_g * %d + q_r, block_idx.x * %d] -> register %s[%d] layout %s\n", GS,
                  BN, wdt, BN, L);
    }
    sb_printf(o, "      q_wf = cast q_wq -> register f32[%d] layout %s\n", BN, L);
    sb_printf(o, "      q_x = load_global %s[block_idx.y, q_g * %d + q_r] -> register %s[1] layout %s\n", nx, GS, xd, L1);
    const char *xf = "q_x";
    if (X->dtype != TSL_DTYPE_F32) {
        sb_printf(o, "      q_xf = cast q_x -> register f32[1] layout %s\n", L1);
        xf = "q_xf";
    }
    sb_printf(o, "      q_xb = broadcast %s -> register f32[%d] layout %s dim 0\n", xf, BN, L);
    sb_puts(o, "      q_p = mul q_wf, q_xb\n");
    sb_printf(o, "      add %s, q_p -> %s%s\n    }\n", acc, acc, q->bytes && q->ukr ? " atom cpu.ukr.dequant" : "");
    /* the sum of the rows' x (zero points): a loop of its own, so that the
     * row loop stays the micro-kernel's */
    if (q->z.op >= 0) {
        const char *sx = grouped ? "q_sx" : "q_sxt";
        if (grouped) sb_printf(o, "    q_sx = alloc register f32[1] layout %s init 0.0\n", L1);
        sb_puts(o, "    for q_r in 0 : q_nr {\n");
        sb_printf(o, "      q_x = load_global %s[block_idx.y, q_g * %d + q_r] -> register %s[1] layout %s\n", nx, GS, xd,
                  L1);
        if (X->dtype != TSL_DTYPE_F32) sb_printf(o, "      q_xf = cast q_x -> register f32[1] layout %s\n", L1);
        sb_printf(o, "      add %s, %s -> %s\n    }\n", sx, xf, sx);
    }
#define COLS(nm, t, rowexpr, out)                                                                                    \
    do {                                                                                                             \
        const lang_tensor *T_ = q->def->tensors[t];                                                                  \
        char d_[16];                                                                                                 \
        if (T_->rank == 2)                                                                                           \
            sb_printf(o, "    %s_0 = load_global %s[%s, block_idx.x * %d] -> register %s[%d] layout %s\n", out, nm,   \
                      rowexpr, BN, dtn(T_->dtype, d_), BN, L);                                                       \
        else                                                                                                         \
            sb_printf(o, "    %s_0 = load_global %s[block_idx.x * %d] -> register %s[%d] layout %s\n", out, nm, BN,   \
                      dtn(T_->dtype, d_), BN, L);                                                                    \
        sb_printf(o, "    %s = cast %s_0 -> register f32[%d] layout %s\n", out, out, BN, L);                         \
    } while (0)
    if (grouped) {
        const char *v = "q_pacc";
        if (q->z.op >= 0) {
            COLS(nz, q->z.tensor, "q_g", "q_zb");
            sb_printf(o, "    q_sxb = broadcast q_sx -> register f32[%d] layout %s dim 0\n", BN, L);
            sb_puts(o, "    q_zx = mul q_zb, q_sxb\n    q_pz = sub q_pacc, q_zx\n");
            v = "q_pz";
        }
        if (q->s.op >= 0) {
            COLS(ns, q->s.tensor, "q_g", "q_sb");
            sb_printf(o, "    q_ps = mul %s, q_sb\n", v);
            v = "q_ps";
        }
        sb_printf(o, "    add q_acc, %s -> q_acc\n", v);
    }
    sb_puts(o, "  }\n");
    const char *v = "q_acc";
    if (!grouped && q->z.op >= 0) {
        COLS(nz, q->z.tensor, "0", "q_zb");
        sb_printf(o, "    q_sxb = broadcast q_sxt -> register f32[%d] layout %s dim 0\n", BN, L);
        sb_puts(o, "    q_zx = mul q_zb, q_sxb\n    q_az = sub q_acc, q_zx\n");
        v = "q_az";
    }
    if (!grouped && q->s.op >= 0) {
        COLS(ns, q->s.tensor, "0", "q_sb");
        sb_printf(o, "    q_as = mul %s, q_sb\n", v);
        v = "q_as";
    }
#undef COLS
    const char *f = v;
    sb_puts(o, "  if q_ks == 1 {\n");
    if (Y->dtype != TSL_DTYPE_F32) {
        char yd[16];
        sb_printf(o, "    q_out = cast %s -> register %s[%d] layout %s\n", v, dtn(Y->dtype, yd), BN, L);
        v = "q_out";
    }
    sb_printf(o, "    store_global %s -> %s[block_idx.y, block_idx.x * %d]\n  }\n", v, ny, BN);
    /* the slice's f32 sums: workspace row (z * M + m), padded to whole blocks */
    sb_printf(o, "  if q_ks > 1 {\n    store_global %s -> q_ws[(block_idx.z * %s + block_idx.y) * cdiv(%s, %d) * %d + "
                 "block_idx.x * %d]\n  }\n}\n",
              f, sb_str(&mm), sb_str(&nn), BN, BN, BN);
    return kernel_text(&h, o, &nn, &mm, &ks);
}

/* The sum of the KS slices (vec_text, cpu_text, gemm_text), in slice order, cast to
 * Y: a block per SB columns of a row of Y. GPU: 64 threads of 4 columns,
 * SB = 256, the slices read SU at a time (all loads of a round issued
 * before the first add: with one slice a round, each load waited for the
 * last and the sum of 16 slices at N = 8192 took 9.4 us on an H200, a
 * quarter of the whole GEMV). CPU: one thread, SB = 512, a slice a round
 * (16 blocks at N = 8192, so that the sum is spread over the cores too).
 * The header is the slice kernel's. */
static char *sum_text(qm *q, const char *kname)
{
    char ny[160], yd[16], l[48];
    const lang_tensor *Y = q->def->tensors[q->ty];
    tname(q, q->ty, ny, sizeof ny);
    int SB = q->cpu ? 512 : 256, SU = q->cpu ? 1 : 8;
    if (q->cpu) snprintf(l, sizeof l, "local(%d)", SB);
    else snprintf(l, sizeof l, "spatial(%d).local(4)", SB / 4);
    strbuf h = {0}, *o = &q->b, nn = {0}, mm = {0}, ks = {0};
    sexpr_text(&nn, q, Y->shape[1]);
    sexpr_text(&mm, q, Y->shape[0]);
    if (q->cpu) {
        cpu_split(&ks, q, sb_str(&nn), sb_str(&mm));
        cpu_header(&h, q, kname);
    } else {
        if (q->tc) gemm_split(&ks, q, sb_str(&nn), sb_str(&mm));
        else if (q->mq) qt_split(&ks, q, sb_str(&nn), sb_str(&mm));
        else vec_split(&ks, q, sb_str(&nn), sb_str(&mm));
        vec_header(&h, q, kname);
    }
    sb_printf(&h, " grid(cdiv(%s, %d), %s) threads(%d) {\n", sb_str(&nn), SB, sb_str(&mm), q->cpu ? 1 : SB / 4);
    sb_printf(o, "  let q_ks = %s\n  if q_ks > 1 {\n", sb_str(&ks));
    sb_printf(o, "    q_t = alloc register f32[%d] layout %s init 0.0\n", SB, l);
    /* slice z's SB columns: workspace row (z * M + m), padded to whole blocks of BN */
    strbuf atb = {0};
    sb_printf(&atb, "* %s + block_idx.y) * cdiv(%s, %d) * %d + block_idx.x * %d]", sb_str(&mm), sb_str(&nn), q->BN,
              q->BN, SB);
    const char *at = sb_str(&atb);
    if (SU > 1) {
        sb_printf(o, "    for q_z in 0 : q_ks / %d {\n", SU);
        for (int u = 0; u < SU; u++)
            sb_printf(o, "      q_v%d = load_global q_ws[((q_z * %d + %d) %s -> register f32[%d] layout %s\n", u, SU, u,
                      at, SB, l);
        for (int u = 0; u < SU; u++) sb_printf(o, "      add q_t, q_v%d -> q_t\n", u);
        sb_printf(o, "    }\n    for q_z in q_ks / %d * %d : q_ks {\n", SU, SU);
    } else {
        sb_puts(o, "    for q_z in 0 : q_ks {\n");
    }
    sb_printf(o, "      q_v = load_global q_ws[(q_z %s -> register f32[%d] layout %s\n      add q_t, q_v -> q_t\n    }\n",
              at, SB, l);
    sb_free(&atb);
    const char *res = "q_t";
    if (Y->dtype != TSL_DTYPE_F32) {
        sb_printf(o, "    q_out = cast q_t -> register %s[%d] layout %s\n", dtn(Y->dtype, yd), SB, l);
        res = "q_out";
    }
    sb_printf(o, "    store_global %s -> %s[block_idx.y, block_idx.x * %d]\n  }\n}\n", res, ny, SB);
    return kernel_text(&h, o, &nn, &mm, &ks);
}

/* ---- plan ------------------------------------------------------------------------------------- */

/* The plan's f32 scratch of QV_WS elements (the split kernels' partial
 * sums, shared with the contraction's split-K): its index, or the index
 * it takes when ws_keep adds it. */
static int ws_slot(const sched_plan *p)
{
    int ws = 0;
    while (ws < p->nscratch && !(p->scratch[ws].dtype == TSL_DTYPE_F32 && p->scratch[ws].count == QV_WS)) ws++;
    return ws;
}

/* Adds the workspace ws_slot named when the plan does not have it yet. */
static void ws_keep(sched_plan *p, int ws)
{
    if (ws < p->nscratch) return;
    sched_scratch sc = {TSL_DTYPE_F32, QV_WS};
    ARENA_PUSH(p->m->arena, p->scratch, p->nscratch, p->capscratch, sc);
}

/* The launch of kernel k: its tensor parameters in header order, then a
 * size argument for every kernel symbol no tensor binds... (none: every
 * symbol is an extent of some parameter). */
static void push_launch(sched_plan *p, const qm *q, tile_kernel *k, const sched_guard *guard)
{
    tsl_arena *a = p->m->arena;
    ARENA_PUSH(a, p->m->kernels, p->m->nkernels, p->m->capkernels, k);
    sched_launch ln = {.k = k, .stmt = q->grp->first, .nstmts = 1};
    if (guard) ln.guard = *guard;
    ARENA_PUSH(a, p->launches, p->nlaunches, p->caplaunches, ln);
    sched_launch *l = &p->launches[p->nlaunches - 1];
    int ts[5] = {q->x.tensor, q->w.tensor, q->s.op >= 0 ? q->s.tensor : -1,
                 q->z.op >= 0 && q->z.tensor != q->s.tensor ? q->z.tensor : -1, q->ty};
    for (int i = 0; i < 5; i++) {
        if (ts[i] < 0) continue;
        sched_arg arg = {.name = k->params[l->nargs]->name, .kind = SCHED_ARG_TENSOR, .tensor = ts[i]};
        if (i == 1) {
            arg.bytes = q->bytes;
            arg.rows = 1 + q->vk;
        }
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, arg);
    }
    if (q->ws >= 0) { /* a split pair (streaming GEMV, tensor cores, CPU): the workspace */
        sched_arg ws = {.name = k->params[l->nargs]->name, .kind = SCHED_ARG_SCRATCH, .scratch = q->ws};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, ws);
    }
    if (q->mq) { /* the multiprocessors (qt_split) */
        sched_arg sms = {.name = k->params[l->nargs]->name, .kind = SCHED_ARG_SMS};
        ARENA_PUSH(a, l->args, l->nargs, l->capargs, sms);
    }
    TSL_ASSERT(l->nargs == k->nparams);
}

int sched_lower_qmatmul(sched_plan *p, const graph *g, const graph_group *grp)
{
    qm q;
    memset(&q, 0, sizeof q);
    q.g = g;
    q.def = g->def;
    q.grp = grp;
    q.cpu = p->target == TSL_TARGET_CPU;
    q.ukr = p->opt->micro_kernels;
    q.splitk = p->opt->splitk;
    q.sm = p->sm;
    q.ws = -1;
    if (!recognise(&q)) return 0;
    /* through f16: asked for, or by default for float weights (their f32
     * row is the generic field decoder, the f16 row shifts the fields into
     * place and scales by one mul.f16x2) and for uint2 and uint4, where it
     * measured faster (H200, 2026-11-29, M = 1, two alternations: uint4
     * 8192x28672 1.34 -> 1.47 TB/s, 8192^2 +3%, uint2 +4%; uint3 and
     * uint6 were 7% and 12% slower, uint8 and int4 even); only where f16
     * holds W exactly */
    tsl_dtype wt = q.def->tensors[q.w.tensor]->dtype;
    int qd = p->opt->qdequant;
    int f16_first = dtype_info_of(wt)->is_float || wt == TSL_DTYPE_U2 || wt == TSL_DTYPE_U4;
    q.f16 = (qd == 16 || (qd == 0 && f16_first)) && exact_in(wt, TSL_DTYPE_F16);
    /* W's rows whole bytes: N * bits a multiple of 8 */
    const lang_sexpr *nw = q.def->tensors[q.w.tensor]->shape[1];
    int step = 8;
    for (int b = q.bits; b % 2 == 0 && step > 1; b /= 2) step /= 2;
    sched_guard guard = {0};
    int both = 1;
    if (nw->kind == LANG_SX_CONST) both = 0, q.bytes = nw->value % step == 0;
    else if (step > 1) guard = (sched_guard){.n = 1, .sym = {nw->sym}, .op = {SCHED_GUARD_MOD}, .val = {step}};
    else both = 0, q.bytes = 1;
    char kname[192];
    tile_kernel *ks[2] = {NULL, NULL};
    qm qs[2];
    /* CPU: the slices' workspace (cpu_text splits K), the plan's f32 scratch
     * of QV_WS elements (shared with the contraction's split-K) */
    int wsi = ws_slot(p);
    if (q.cpu) q.ws = wsi;
    for (int v = 0; v < 2; v++) {
        qs[v] = q;
        if (both) qs[v].bytes = v == 0;
        else if (v) break;
        shape(&qs[v]);
        if (qs[v].bytes && !qs[v].CH) qs[v].bytes = 0;
        snprintf(kname, sizeof kname, "%s_g%d_qgemv%s", g->def->name, grp->index, qs[v].bytes ? "" : "_codes");
        char *t = q.cpu ? cpu_text(&qs[v], kname) : gemv_text(&qs[v], kname);
        ks[v] = t ? tt_parse_kernel(p, t, kname, "quantized matmul") : NULL;
        if (!ks[v]) return 0;
    }
    tile_kernel *kcs[2] = {NULL, NULL}; /* CPU: the sums of the slices, a kernel per form */
    for (int v = 0; q.cpu && v < 1 + both; v++) {
        snprintf(kname, sizeof kname, "%s_g%d_qsum%s", g->def->name, grp->index, qs[v].bytes ? "" : "_codes");
        char *t = sum_text(&qs[v], kname);
        kcs[v] = t ? tt_parse_kernel(p, t, kname, "quantized matmul") : NULL;
        if (!kcs[v]) return 0;
    }
    if (q.cpu) ws_keep(p, wsi);
    /* GPU, M >= 16: the tensor-core kernel instead of the byte-reading
     * GEMV (a static choice when M is a constant, else a guard on M) */
    tile_kernel *kt = NULL, *kts = NULL;
    int BK = qs[0].bytes ? tc_depth(&qs[0]) : 0;
    const lang_sexpr *me = q.def->tensors[q.ty]->shape[0];
    qm qg = qs[0];
    if (BK && (me->kind == LANG_SX_SYM || me->value >= 16)) {
        qg.tc = 1;
        qg.BN = tc_cols(&qg);
        qg.GS = qg.s.op >= 0 && qg.s.grouped ? (int)qg.gs : BK;
        /* split K (gemm_split; not with the option contract.splitk = 1):
         * the workspace and the sum of the slices */
        int ws = ws_slot(p);
        qg.ws = q.splitk != 1 ? ws : -1;
        snprintf(kname, sizeof kname, "%s_g%d_qgemm", g->def->name, grp->index);
        char *t = gemm_text(&qg, kname, BK);
        kt = t ? tt_parse_kernel(p, t, kname, "quantized matmul") : NULL;
        if (kt && qg.ws >= 0) {
            snprintf(kname, sizeof kname, "%s_g%d_qgemm_qsum", g->def->name, grp->index);
            t = sum_text(&qg, kname);
            kts = t ? tt_parse_kernel(p, t, kname, "quantized matmul") : NULL;
            if (!kts) kt = NULL;
        }
        if (kts) ws_keep(p, ws);
    }
    /* GPU, the byte-reading form: the streaming GEMV (a slice kernel and
     * the sum of the slices) instead of gemv_text's where it applies */
    tile_kernel *kv = NULL, *kvs = NULL;
    qm qv = qs[0];
    int mq = !q.cpu && qs[0].bytes && qt_shape(&qv, p->opt); /* qv untouched when not */
    if (mq || (!q.cpu && qs[0].bytes && vec_shape(&qv))) {
        int ws = ws_slot(p);
        qv.ws = ws;
        snprintf(kname, sizeof kname, "%s_g%d_qgemv_%s", g->def->name, grp->index, mq ? "mma" : "vec");
        char *t = mq ? qt_text(&qv, kname) : vec_text(&qv, kname);
        kv = t ? tt_parse_kernel(p, t, kname, "quantized matmul") : NULL;
        snprintf(kname, sizeof kname, "%s_g%d_qsum", g->def->name, grp->index);
        t = kv ? sum_text(&qv, kname) : NULL;
        kvs = t ? tt_parse_kernel(p, t, kname, "quantized matmul") : NULL;
        if (kvs) ws_keep(p, ws);
    }
    sched_guard gm = guard;
    if (kvs) {
        /* the GEMV's launches: the slices, then their sum */
        sched_guard small = guard;
        if (kt && me->kind == LANG_SX_SYM) {
            small.sym[small.n] = gm.sym[gm.n] = me->sym;
            small.op[small.n] = SCHED_GUARD_LE;
            gm.op[gm.n] = SCHED_GUARD_GT;
            small.val[small.n++] = gm.val[gm.n++] = 15;
        }
        if (!kt || me->kind == LANG_SX_SYM) {
            int gd = both || small.n > 0;
            push_launch(p, &qv, kv, gd ? &small : NULL);
            push_launch(p, &qv, kvs, gd ? &small : NULL);
        }
        if (kt) push_launch(p, &qg, kt, both || gm.n > 0 ? &gm : NULL);
        if (kts) push_launch(p, &qg, kts, both || gm.n > 0 ? &gm : NULL);
    } else if (kt && me->kind == LANG_SX_SYM) {
        sched_guard small = guard;
        small.sym[small.n] = gm.sym[gm.n] = me->sym;
        small.op[small.n] = SCHED_GUARD_LE;
        gm.op[gm.n] = SCHED_GUARD_GT;
        small.val[small.n++] = gm.val[gm.n++] = 15;
        push_launch(p, &qs[0], ks[0], &small);
        push_launch(p, &qg, kt, &gm);
        if (kts) push_launch(p, &qg, kts, &gm);
    } else if (kt) {
        push_launch(p, &qg, kt, both ? &guard : NULL);
        if (kts) push_launch(p, &qg, kts, both ? &guard : NULL);
    } else {
        push_launch(p, &qs[0], ks[0], both ? &guard : NULL);
        if (kcs[0]) push_launch(p, &qs[0], kcs[0], both ? &guard : NULL);
    }
    if (both) {
        sched_guard_negate(&guard);
        push_launch(p, &qs[1], ks[1], &guard);
        if (kcs[1]) push_launch(p, &qs[1], kcs[1], &guard);
    }
    return 1;
}
