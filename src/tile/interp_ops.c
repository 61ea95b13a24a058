/* interp_ops.c — the tile interpreter's register-tensor instructions:
 * block-level mma over warp-level atoms (the target table's fragment layouts),
 * elementwise arithmetic (f16/bf16 computed in f32, rounded to the result
 * dtype; fma rounded once), view (bit reinterpretation per thread), reduce, broadcast,
 * shuffle, print and alloc. */
#include "base/fma16.h"
#include "tile/interp_impl.h"

/* ---- mma ------------------------------------------------------------------------------ */

/* Block-level mma d = a . b + c over warp-level atoms (the target row the
 * atom names, m16n8k16 by default, for the operands' dtypes). Each
 * operand's layout must be R . F with F the row's fragment layout (Tilus
 * composition: thread = warp * 32 + lane, local = tile * slots + slot);
 * warp w computes the C tiles R_C gives it, reading the A and B tiles it
 * holds itself, by register slot as the hardware does. A layout that is
 * not R . F, or a warp that lacks a tile it needs, is an error. */
static tsl_status mma_split(interp *I, size_t pos, const rt_tensor *t, const char *name, const target_atom *at,
                            int which, dist_layout *r)
{
    layout_err le = {{0}, 0};
    const dist_layout *f = target_atom_layout(at, which);
    if (!f) return interp_err(I, pos, TSL_ERR_INTERNAL, "mma atom %s: no fragment layout", at->name);
    if (t->rank != 2 || t->rlay->rank != 2)
        return interp_err(I, pos, TSL_ERR_SHAPE, "mma: '%s' must be a rank-2 register tensor", name);
    if (dist_layout_divide(r, t->rlay, f, &le)) {
        strbuf sb = {0};
        dist_layout_print(&sb, t->rlay);
        tsl_status st = interp_err(I, pos, TSL_ERR_SHAPE,
                             "mma %s: %s operand '%s' has layout %s, which is not R.%s "
                             "(the atom's fragment layout): %s",
                             at->alias ? at->alias : at->name, which == 0 ? "A" : which == 1 ? "B" : "C", name,
                             sb_str(&sb), at->layout[which], le.msg);
        sb_free(&sb);
        return st;
    }
    return TSL_OK;
}

/* The row of an mma instruction: its atom for the operands' dtypes. */
static tsl_status mma_row(interp *I, const tile_stmt *s, const rt_tensor *a, const rt_tensor *b, const rt_tensor *c,
                          const target_atom **out)
{
    tsl_dtype ta, tb, tc;
    int adt = tile_dtype_to_tsl(a->dt, &ta) ? TARGET_DT_ANY : (int)ta;
    int bdt = tile_dtype_to_tsl(b->dt, &tb) ? TARGET_DT_ANY : (int)tb;
    int cdt = tile_dtype_to_tsl(c->dt, &tc) ? TARGET_DT_ANY : (int)tc;
    *out = target_mma_resolve_ab(s->instr.atom, adt, bdt, cdt, NULL);
    if (!*out)
        return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE, "mma atom '%s': no such warp-level atom for these dtypes",
                          s->instr.atom ? s->instr.atom : "m16n8k16");
    return TSL_OK;
}

tsl_status interp_exec_mma(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    tsl_status st;
    if ((st = interp_reg_arg(I, &in->args[0], &a)) || (st = interp_reg_arg(I, &in->args[1], &b)) ||
        (st = interp_reg_arg(I, &in->args[2], &c)) || (st = interp_reg_dst(I, s, &d)))
        return st;
    const target_atom *at;
    if ((st = mma_row(I, s, a, b, c, &at))) return st;
    if (a->rank != 2 || b->rank != 2 || c->rank != 2 || a->dims[1] != b->dims[0] ||
        a->dims[0] != c->dims[0] || b->dims[1] != c->dims[1])
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "mma: shapes [%lld,%lld] x [%lld,%lld] -> [%lld,%lld] do not agree",
                    (long long)a->dims[0], (long long)a->dims[1], (long long)b->dims[0],
                    (long long)b->dims[1], (long long)c->dims[0], (long long)c->dims[1]);
    dist_layout ra, rb, rc;
    if ((st = mma_split(I, in->args[0].pos, a, in->args[0].v->name, at, TARGET_A, &ra)) ||
        (st = mma_split(I, in->args[1].pos, b, in->args[1].v->name, at, TARGET_B, &rb)) ||
        (st = mma_split(I, in->args[2].pos, c, in->args[2].v->name, at, TARGET_C, &rc)))
        return st;
    if (d != c && !dist_layout_equal(d->rlay, c->rlay))
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "mma: the destination's layout differs from C's");
    /* slots per lane of each operand's fragment */
    int na = (int)target_atom_layout(at, TARGET_A)->locals, nb = (int)target_atom_layout(at, TARGET_B)->locals,
        nc = (int)target_atom_layout(at, TARGET_C)->locals, W = at->threads;
    /* the row's fragment plan (target/frag.c), which both generators run
     * too: per warp, C tile and k step, the A and B tile slots */
    target_mma_plan p;
    if (target_mma_plan_make(&p, at, a->rlay, b->rlay, c->rlay, rc.threads * at->threads)) {
        if (p.missing)
            return interp_err(I, s->pos, TSL_ERR_SHAPE,
                              "mma: warp %lld computes C tile (%lld,%lld) but does not hold %s tile (%lld,%lld)",
                              (long long)p.miss_warp, (long long)p.miss_c[0], (long long)p.miss_c[1],
                              p.miss_a ? "A" : "B", (long long)p.miss[0], (long long)p.miss[1]);
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "mma: the operands' layouts are not %s's fragments over the same "
                          "warps", at->name);
    }
    int64_t ktiles = p.ksteps;
    int64_t total = c->nthreads * c->nlocals;
    double *res = malloc((size_t)total * sizeof *res);
    double *fa = malloc(sizeof(double) * (size_t)(W * (na + nb + 2 * nc)));
    if (!res || !fa) {
        free(res);
        free(fa);
        target_mma_plan_free(&p);
        return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory in mma");
    }
    double *fb = fa + W * na, *fc = fb + W * nb, *fd = fc + W * nc;
    memcpy(res, c->regs, (size_t)total * sizeof *res);
    for (int64_t w = 0; w < p.warps; w++)
        for (int64_t ct = 0; ct < p.tiles; ct++) {
            for (int l = 0; l < W; l++)
                for (int i = 0; i < nc; i++) fc[l * nc + i] = res[(w * W + l) * c->nlocals + ct * nc + i];
            for (int64_t kt = 0; kt < ktiles; kt++) {
                int64_t at_ = p.a[(w * p.tiles + ct) * ktiles + kt], bt = p.b[(w * p.tiles + ct) * ktiles + kt];
                for (int l = 0; l < W; l++) {
                    for (int i = 0; i < na; i++) fa[l * na + i] = a->regs[(w * W + l) * a->nlocals + at_ * na + i];
                    for (int i = 0; i < nb; i++) fb[l * nb + i] = b->regs[(w * W + l) * b->nlocals + bt * nb + i];
                }
                target_mma_ref(at, fa, fb, fc, fd);
                memcpy(fc, fd, sizeof(double) * (size_t)(W * nc));
            }
            for (int l = 0; l < W; l++)
                for (int i = 0; i < nc; i++)
                    res[(w * W + l) * c->nlocals + ct * nc + i] = interp_round(d->dt, fc[l * nc + i]);
        }
    memcpy(d->regs, res, (size_t)total * sizeof *res);
    free(res);
    free(fa);
    target_mma_plan_free(&p);
    return TSL_OK;
}

/* ---- per-slot arithmetic ------------------------------------------------------------------ */



/* An operand of an elementwise op: a register tensor laid out like the
 * result, or a scalar broadcast to every slot. */
typedef struct ew_arg {
    const rt_tensor *t;
    double scalar;
} ew_arg;

static tsl_status ew_operand(interp *I, const tile_operand *o, const rt_tensor *d, ew_arg *out)
{
    out->t = NULL;
    if (!o->v) return interp_eval_num(I, o->scalar, &out->scalar);
    if (o->v->kind == TILE_V_SCALAR) {
        out->scalar = tile_value_is_typed_scalar(o->v) ? I->slots[o->v->id].fval : (double)I->slots[o->v->id].ival;
        return TSL_OK;
    }
    rt_tensor *t;
    tsl_status st = interp_reg_arg(I, o, &t);
    if (st) return st;
    if (!dist_layout_equal(t->rlay, d->rlay) || t->rank != d->rank ||
        memcmp(t->dims, d->dims, sizeof(int64_t) * (size_t)t->rank))
        return interp_err(I, o->pos, TSL_ERR_SHAPE,
                          "'%s' is not laid out like the result (same shape and layout needed; use copy "
                          "through shared memory to change layout)", o->v->name);
    out->t = t;
    return TSL_OK;
}

static double ew_get(const ew_arg *a, int64_t i)
{
    return a->t ? a->t->regs[i] : a->scalar;
}

static int is_int(tile_dtype dt)
{
    return dt.kind == TILE_DT_INT || dt.kind == TILE_DT_UINT;
}

TSL_FMA16_SRC(static inline)

/* fma: a*b + c rounded once to the dtype (the verifier admits f16, bf16,
 * f32, f64): C's fma and fmaf are exact; tsl_fma16 (base/fma16.h) is the
 * same for the 16-bit formats, the text both generators emit. */
static double ew_fma(tile_dtype dt, double x, double y, double z)
{
    if (dt.bits == 64) return fma(x, y, z);
    if (dt.bits == 32) return fmaf((float)x, (float)y, (float)z);
    return tsl_fma16(x, y, z, dt.man, 1 - dt.bias);
}

/* One slot of an elementwise op on values already in the operands' dtype
 * `dt`; *bad set on an integer division by zero. */
static double ew_apply(tile_op op, tile_dtype dt, double x, double y, double z, int *bad)
{
    if (dt.kind == TILE_DT_FLOAT && dt.bits == 64) {
        /* f64 tensors: the math functions run in double, as C's exp() on a
         * double (f16/bf16/f32 ones run in float below) */
        switch (op) {
        case TILE_I_POW: return pow(x, y);
        case TILE_I_EXP: return exp(x);
        case TILE_I_EXP2: return exp2(x);
        case TILE_I_LOG: return log(x);
        case TILE_I_SQRT: return sqrt(x);
        case TILE_I_RSQRT: return 1.0 / sqrt(x);
        case TILE_I_TANH: return tanh(x);
        case TILE_I_SIGMOID: return 1.0 / (1.0 + exp(-x));
        case TILE_I_ERF: return erf(x);
        default: break;
        }
    }
    switch (op) {
    case TILE_I_ADD: return x + y;
    case TILE_I_SUB: return x - y;
    case TILE_I_MUL: return x * y;
    case TILE_I_DIV:
        if (is_int(dt)) {
            if (y == 0) *bad = 1;
            return y == 0 ? 0 : trunc(x / y); /* C: toward zero */
        }
        return x / y;
    case TILE_I_MOD:
        if (is_int(dt) && y == 0) {
            *bad = 1;
            return 0;
        }
        return fmod(x, y); /* sign of x, as C's % and fmod */
    case TILE_I_MAX: return dtype_max_num(x, y); /* NaN ignored, -0 < +0 (base.h) */
    case TILE_I_MIN: return dtype_min_num(x, y);
    case TILE_I_POW: return powf((float)x, (float)y);
    case TILE_I_AND: return x != 0 && y != 0;
    case TILE_I_OR: return x != 0 || y != 0;
    case TILE_I_LT: return x < y;
    case TILE_I_LE: return x <= y;
    case TILE_I_GT: return x > y;
    case TILE_I_GE: return x >= y;
    case TILE_I_EQ: return x == y;
    case TILE_I_NE: return x != y;
    case TILE_I_SELECT: return x != 0 ? y : z;
    case TILE_I_FMA: return ew_fma(dt, x, y, z);
    case TILE_I_NEG: return -x;
    case TILE_I_ABS: return fabs(x);
    case TILE_I_EXP: return expf((float)x);
    case TILE_I_EXP2: return exp2f((float)x);
    case TILE_I_LOG: return logf((float)x);
    case TILE_I_SQRT: return sqrtf((float)x);
    case TILE_I_RSQRT: return 1.0f / sqrtf((float)x);
    case TILE_I_TANH: return tanhf((float)x);
    case TILE_I_SIGMOID: return 1.0f / (1.0f + expf(-(float)x));
    case TILE_I_RELU: return x > 0 ? x : 0;
    case TILE_I_ERF: return erff((float)x);
    case TILE_I_NOT: return x == 0;
    default: return x; /* COPY, CAST */
    }
}

/* Elementwise instructions, the scheduler's rows included (erf, not, mod,
 * pow, and, or, comparisons -> bool, select). A scalar operand is
 * converted to the dtype of the tensor operands (comparisons compare in
 * that dtype); arithmetic on f16/bf16 runs in f32 and rounds. */
tsl_status interp_exec_elementwise(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *d = NULL;
    tsl_status st = interp_reg_dst(I, s, &d);
    if (st) return st;
    ew_arg x[3] = {{0}};
    int n_in = in->nargs < 3 ? in->nargs : 3;
    for (int k = 0; k < n_in; k++)
        if ((st = ew_operand(I, &in->args[k], d, &x[k]))) return st;
    /* the operands' dtype: the first tensor operand's (select: a or b) */
    tile_dtype odt = d->dt;
    for (int k = in->op == TILE_I_SELECT ? 1 : 0; k < n_in; k++)
        if (x[k].t) {
            odt = x[k].t->dt;
            break;
        }
    int cast = in->op == TILE_I_CAST;
    for (int k = 0; k < n_in && !cast; k++)
        if (!x[k].t) x[k].scalar = interp_round(k == 0 && in->op == TILE_I_SELECT ? tile_dtype_from_tsl(TSL_DTYPE_BOOL) : odt, x[k].scalar);
    int64_t n = d->nthreads * d->nlocals;
    for (int64_t i = 0; i < n; i++) {
        int bad = 0;
        double v = ew_apply(in->op, odt, ew_get(&x[0], i), ew_get(&x[1], i), ew_get(&x[2], i), &bad);
        if (bad)
            return interp_err(I, s->pos, TSL_ERR_RUNTIME, "%s: integer division by zero (thread %lld, slot %lld)",
                              tile_op_info_of(in->op)->name, (long long)(i / d->nlocals), (long long)(i % d->nlocals));
        if (!cast && d->dt.kind == TILE_DT_FLOAT && d->dt.bits <= 32) v = (float)v;
        d->regs[i] = interp_round(d->dt, v);
    }
    return TSL_OK;
}

/* iota [OFF] -> register iN[...] layout L dim D: each element is its
 * coordinate along D plus OFF. */
tsl_status interp_exec_iota(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *d = NULL;
    tsl_status st = interp_reg_dst(I, s, &d);
    if (st) return st;
    int64_t off = 0;
    if (in->nargs > 0 && (st = interp_eval_int(I, in->args[0].scalar, &off))) return st;
    if (in->dim < 0 || in->dim >= d->rank)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "iota: dim %d of a rank-%d tensor", in->dim, d->rank);
    for (int64_t th = 0; th < d->nthreads; th++)
        for (int64_t l = 0; l < d->nlocals; l++) {
            int64_t c[IMAX_RANK];
            d->regs[th * d->nlocals + l] =
                interp_reg_coord(d, th, l, c) ? interp_round(d->dt, (double)(c[in->dim] + off)) : NAN;
        }
    return TSL_OK;
}

/* gather T, i0, ... -> register (mask M) and scatter x -> T, i0, ... (mask
 * M): per slot, the global element at the indices (register int tensors
 * laid out like the data, or int exprs). Masked-off slots read 0 / write
 * nothing; an unmasked index out of range is an error. */
tsl_status interp_exec_gather(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    int scatter = in->op == TILE_I_SCATTER;
    rt_tensor *d = NULL, *g = NULL, *mask = NULL;
    tsl_status st;
    const tile_operand *gop = scatter ? &in->dst : &in->args[0];
    if (scatter) st = interp_reg_arg(I, &in->args[0], &d);
    else st = interp_reg_dst(I, s, &d);
    if (st) return st;
    if (!gop->v || !(g = I->slots[gop->v->id].t) || g->space != TILE_GLOBAL || gop->nsteps)
        return interp_err(I, gop->pos, TSL_ERR_SEMANTIC, "%s: the tensor must be a whole global tensor",
                          tile_op_info_of(in->op)->name);
    if (in->nargs - 1 != g->rank)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "%s: %d indices for '%s' of rank %d", tile_op_info_of(in->op)->name,
                          in->nargs - 1, gop->v->name, g->rank);
    ew_arg idx[IMAX_RANK];
    for (int k = 0; k < g->rank; k++)
        if ((st = ew_operand(I, &in->args[k + 1], d, &idx[k]))) return st;
    if (in->mask) {
        tile_operand mo = tile_operand_tensor(in->mask);
        mo.pos = s->pos;
        ew_arg m;
        if ((st = ew_operand(I, &mo, d, &m))) return st;
        mask = (rt_tensor *)m.t;
    }
    for (int64_t th = 0; th < d->nthreads; th++)
        for (int64_t l = 0; l < d->nlocals; l++) {
            int64_t i = th * d->nlocals + l, c[IMAX_RANK], rc[IMAX_RANK];
            if (!interp_reg_coord(d, th, l, rc)) continue;
            if (scatter && !interp_first_owner(d, th, l)) continue;
            if (mask && mask->regs[i] == 0) {
                if (!scatter) d->regs[i] = 0;
                continue;
            }
            for (int k = 0; k < g->rank; k++) {
                double v = ew_get(&idx[k], i);
                c[k] = isnan(v) ? -1 : (int64_t)v;
                if (c[k] < 0 || c[k] >= g->dims[k])
                    return interp_err(I, s->pos, TSL_ERR_BOUNDS,
                                      "%s: index %lld is outside dimension %d of '%s' (extent %lld) (thread %lld)",
                                      tile_op_info_of(in->op)->name, (long long)c[k], k, gop->v->name,
                                      (long long)g->dims[k], (long long)th);
            }
            if (scatter) interp_global_set(g, c, d->regs[i]);
            else d->regs[i] = interp_round(d->dt, interp_global_get(g, c));
        }
    return TSL_OK;
}

/* The bits of one element of dt holding v (ints and bools of any width,
 * two's complement; the byte-sized floats through dtype_store). 0 and *ok
 * = 0 for sub-byte floats, which the interpreter does not encode yet. */
static uint64_t elem_bits(tile_dtype dt, double v, int *ok)
{
    tsl_dtype t;
    if (dt.kind == TILE_DT_FLOAT) {
        uint64_t u = 0;
        if (tile_dtype_to_tsl(dt, &t)) {
            *ok = 0;
            return 0;
        }
        dtype_store(t, &u, v); /* little-endian host */
        return u;
    }
    int64_t iv = (int64_t)v;
    return dt.bits >= 64 ? (uint64_t)iv : (uint64_t)iv & ((1ull << dt.bits) - 1);
}

static double bits_elem(tile_dtype dt, uint64_t u, int *ok)
{
    tsl_dtype t;
    if (dt.kind == TILE_DT_FLOAT) {
        if (tile_dtype_to_tsl(dt, &t)) {
            *ok = 0;
            return 0;
        }
        return dtype_load(t, &u);
    }
    if (dt.kind == TILE_DT_BOOL) return u != 0;
    if (dt.kind == TILE_DT_INT && dt.bits < 64 && (u >> (dt.bits - 1)) & 1) u |= ~((1ull << dt.bits) - 1);
    return dt.kind == TILE_DT_INT ? (double)(int64_t)u : (double)u;
}

/* view: the same bits per thread reinterpreted as another dtype/layout
 * (Tilus: 3 x u8 = 4 x i6 = 24 bits). A thread's slots form one bit
 * stream, slot 0 in the lowest bits. */
tsl_status interp_exec_view(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *x = NULL, *d = NULL;
    if (in->result && in->result->type.space == TILE_SHARED) /* an alias of the same bytes */
        return interp_tensor_of(I, in->result, &d);
    tsl_status st = interp_reg_arg(I, &in->args[0], &x);
    if (!st) st = interp_reg_dst(I, s, &d);
    if (st) return st;
    if (x->nlocals * x->dt.bits != d->nlocals * d->dt.bits || x->nthreads != d->nthreads)
        return interp_err(I, s->pos, TSL_ERR_SHAPE,
                          "view: each thread holds %lld bits of '%s' but %lld bits of the result",
                          (long long)(x->nlocals * x->dt.bits), in->args[0].v->name,
                          (long long)(d->nlocals * d->dt.bits));
    int64_t nbits = x->nlocals * x->dt.bits;
    uint8_t *buf = malloc((size_t)(nbits / 8 + 9));
    double *tmp = malloc((size_t)(d->nthreads * d->nlocals + 1) * sizeof *tmp);
    if (!buf || !tmp) {
        free(buf);
        free(tmp);
        return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory in view");
    }
    int ok = 1;
    for (int64_t th = 0; th < x->nthreads && ok; th++) {
        memset(buf, 0, (size_t)(nbits / 8 + 9));
        for (int64_t l = 0; l < x->nlocals; l++) {
            uint64_t u = elem_bits(x->dt, x->regs[th * x->nlocals + l], &ok);
            for (int b = 0; b < x->dt.bits; b++) {
                int64_t at = l * x->dt.bits + b;
                if ((u >> b) & 1) buf[at / 8] |= (uint8_t)(1u << (at % 8));
            }
        }
        for (int64_t l = 0; l < d->nlocals; l++) {
            uint64_t u = 0;
            for (int b = 0; b < d->dt.bits; b++) {
                int64_t at = l * d->dt.bits + b;
                if ((buf[at / 8] >> (at % 8)) & 1) u |= 1ull << b;
            }
            tmp[th * d->nlocals + l] = bits_elem(d->dt, u, &ok);
        }
    }
    if (ok) memcpy(d->regs, tmp, (size_t)(d->nthreads * d->nlocals) * sizeof *tmp);
    free(tmp);
    free(buf);
    if (!ok)
        return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE,
                          "view: the interpreter does not encode sub-byte floating-point types yet");
    return TSL_OK;
}

/* reduce.{sum,max,min} dim D: the result holds, at the source coordinate
 * with dim D dropped (or set to 0 when the ranks agree), the reduction in
 * f32 over every source element; each owner of a result coordinate gets
 * it (shuffles and shared memory move the partials on the GPU). */
tsl_status interp_exec_reduce(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *x = NULL, *d = NULL;
    tsl_status st = interp_reg_arg(I, &in->args[0], &x);
    if (!st) st = interp_reg_dst(I, s, &d);
    if (st) return st;
    int dim = in->dim;
    if (dim < 0 || dim >= x->rank)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "reduce: dim %d of a rank-%d tensor", dim, x->rank);
    int keep = d->rank == x->rank;
    if (!keep && d->rank != x->rank - 1)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "reduce: result rank %d for a rank-%d input", d->rank, x->rank);
    int64_t n = d->nthreads * d->nlocals;
    for (int64_t i = 0; i < n; i++) d->regs[i] = NAN;
    /* accumulate per result slot by walking the source's slots */
    double *acc = malloc((size_t)(n ? n : 1) * sizeof *acc);
    char *seen = calloc((size_t)(n ? n : 1), 1);
    if (!acc || !seen) {
        free(acc);
        free(seen);
        return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory in reduce");
    }
    for (int64_t th = 0; th < x->nthreads; th++)
        for (int64_t l = 0; l < x->nlocals; l++) {
            int64_t c[IMAX_RANK], rcd[DIST_MAX_RANK], ths[64], los[64];
            if (!interp_reg_coord(x, th, l, c) || !interp_first_owner(x, th, l)) continue;
            int r = 0;
            for (int i = 0; i < x->rank; i++)
                if (i != dim) rcd[r++] = c[i];
                else if (keep) rcd[r++] = 0;
            /* result coordinates carry the layout's leading 1-dims */
            int64_t full[DIST_MAX_RANK];
            int lead = d->rlay->rank - d->rank;
            for (int i = 0; i < lead; i++) full[i] = 0;
            for (int i = 0; i < d->rank; i++) full[lead + i] = rcd[i];
            int64_t no = dist_layout_owners(d->rlay, full, ths, los, 64);
            double v = x->regs[th * x->nlocals + l];
            for (int64_t o = 0; o < no && o < 64; o++) {
                int64_t k = ths[o] * d->nlocals + los[o];
                if (!seen[k]) acc[k] = v;
                else if (in->op == TILE_I_REDUCE_SUM)
                    /* f16/bf16/f32 sums in f32; f64 and integers in double
                     * (integers exact below 2^53, as the generators' int64) */
                    acc[k] = x->dt.kind == TILE_DT_FLOAT && x->dt.bits <= 32 ? (float)(acc[k] + v) : acc[k] + v;
                else if (in->op == TILE_I_REDUCE_MAX) acc[k] = dtype_max_num(acc[k], v);
                else acc[k] = dtype_min_num(acc[k], v);
                seen[k] = 1;
            }
        }
    for (int64_t k = 0; k < n; k++)
        if (seen[k]) d->regs[k] = interp_round(d->dt, acc[k]);
    free(acc);
    free(seen);
    return TSL_OK;
}

/* broadcast dim D: result[c] = x[c with dim D at 0] (or dropped). */
tsl_status interp_exec_broadcast(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *x = NULL, *d = NULL;
    tsl_status st = interp_reg_arg(I, &in->args[0], &x);
    if (!st) st = interp_reg_dst(I, s, &d);
    if (st) return st;
    int dim = in->dim;
    if (dim < 0 || dim >= d->rank || (x->rank != d->rank && x->rank != d->rank - 1))
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "broadcast: dim %d from rank %d to rank %d", dim,
                    x->rank, d->rank);
    for (int64_t th = 0; th < d->nthreads; th++)
        for (int64_t l = 0; l < d->nlocals; l++) {
            int64_t c[IMAX_RANK], xc[DIST_MAX_RANK], ot, ol;
            double v = NAN;
            if (interp_reg_coord(d, th, l, c)) {
                int lead = x->rlay->rank - x->rank, r = lead;
                for (int i = 0; i < lead; i++) xc[i] = 0;
                for (int i = 0; i < d->rank; i++)
                    if (i != dim) xc[r++] = c[i];
                    else if (x->rank == d->rank) xc[r++] = 0;
                if (!dist_layout_owner(x->rlay, xc, &ot, &ol)) v = x->regs[ot * x->nlocals + ol];
            }
            d->regs[th * d->nlocals + l] = interp_round(d->dt, v);
        }
    return TSL_OK;
}

/* shuffle.{xor,up,down,idx} x, k: slot i of lane l takes slot i of the
 * source lane within the warp (xor: l^k, up: l-k, down: l+k, idx: k);
 * out of range keeps its own value, as shfl.sync does. */
tsl_status interp_exec_shuffle(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *x = NULL, *d = NULL;
    int64_t k;
    tsl_status st = interp_reg_arg(I, &in->args[0], &x);
    if (!st) st = interp_reg_dst(I, s, &d);
    if (!st) st = in->args[1].scalar ? interp_eval_int(I, in->args[1].scalar, &k)
                                     : interp_err(I, in->args[1].pos, TSL_ERR_SEMANTIC, "shuffle needs a lane operand");
    if (st) return st;
    if (x->nthreads != d->nthreads || x->nlocals != d->nlocals)
        return interp_err(I, s->pos, TSL_ERR_SHAPE, "shuffle: the result must be laid out like the input");
    int64_t n = x->nthreads * x->nlocals;
    double *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
    if (!tmp) return interp_err(I, s->pos, TSL_ERR_NOMEM, "out of memory in shuffle");
    for (int64_t th = 0; th < x->nthreads; th++) {
        int64_t lane = th % 32, base = th - lane, from;
        switch (in->op) {
        case TILE_I_SHUFFLE_XOR: from = lane ^ k; break;
        case TILE_I_SHUFFLE_UP: from = lane - k; break;
        case TILE_I_SHUFFLE_DOWN: from = lane + k; break;
        default: from = k; break;
        }
        if (from < 0 || from > 31 || base + from >= x->nthreads) from = lane;
        for (int64_t l = 0; l < x->nlocals; l++)
            tmp[th * x->nlocals + l] = x->regs[(base + from) * x->nlocals + l];
    }
    memcpy(d->regs, tmp, (size_t)n * sizeof *tmp);
    free(tmp);
    return TSL_OK;
}

tsl_status interp_exec_print(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    FILE *f = I->out;
    if (!in->args[0].v) {
        double v;
        tsl_status st = interp_eval_num(I, in->args[0].scalar, &v);
        if (st) return st;
        fprintf(f, "block (%lld,%lld,%lld): %g\n", (long long)I->bidx[0], (long long)I->bidx[1],
                (long long)I->bidx[2], v);
        return TSL_OK;
    }
    if (in->args[0].v->kind == TILE_V_SCALAR) {
        fprintf(f, "block (%lld,%lld,%lld): %s = %lld\n", (long long)I->bidx[0], (long long)I->bidx[1],
                (long long)I->bidx[2], in->args[0].v->name, (long long)I->slots[in->args[0].v->id].ival);
        return TSL_OK;
    }
    rt_tensor *x;
    tsl_status st = interp_reg_arg(I, &in->args[0], &x);
    if (st) return st;
    fprintf(f, "block (%lld,%lld,%lld): %s (thread, local) -> [coord] value\n", (long long)I->bidx[0],
            (long long)I->bidx[1], (long long)I->bidx[2], in->args[0].v->name);
    for (int64_t th = 0; th < x->nthreads; th++)
        for (int64_t l = 0; l < x->nlocals; l++) {
            int64_t c[IMAX_RANK];
            char cs[128];
            if (!interp_reg_coord(x, th, l, c)) continue;
            interp_coord_str(cs, sizeof cs, c, x->rank);
            fprintf(f, "  (%lld,%lld) -> [%s] %g\n", (long long)th, (long long)l, cs,
                    x->regs[th * x->nlocals + l]);
        }
    return TSL_OK;
}

tsl_status interp_exec_alloc(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (!in->result) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "alloc needs a result name");
    rt_tensor *t = NULL;
    tsl_status st = interp_tensor_of(I, in->result, &t);
    if (st) return st;
    double v = NAN; /* uninitialised registers are NaN: a missing init shows */
    if (in->init && (st = interp_eval_num(I, in->init, &v))) return st;
    if (t->space == TILE_REGISTER) {
        for (int64_t i = 0; i < t->nthreads * t->nlocals; i++) t->regs[i] = interp_round(t->dt, v);
        return TSL_OK;
    }
    if (!in->init) return TSL_OK; /* shared: whatever the bytes were */
    rt_view vw;
    tile_operand o = tile_operand_tensor(in->result);
    if ((st = interp_view_of(I, &o, &vw))) return st;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    for (int64_t e = 0; e < n; e++) {
        int64_t c[IMAX_RANK], r = e;
        for (int i = t->rank - 1; i >= 0; i--) {
            c[i] = r % t->dims[i];
            r /= t->dims[i];
        }
        if ((st = interp_shared_put(I, s->pos, &vw, c, e % I->nthreads, v, 0))) return st;
    }
    return TSL_OK;
}

