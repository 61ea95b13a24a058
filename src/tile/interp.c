/* interp.c — the tile interpreter: runs one kernel over its whole grid,
 * one simulated block at a time, with every thread's registers held as the
 * layouts place them (interp.h has the contract; docs/tile-interp.md the
 * rules).
 *
 * Shape of the code: binding (symbols, global tensors) -> per block:
 * shared memory reset, statements walked in order (SIMB: control flow is
 * uniform across the block) -> each instruction acts on runtime tensors:
 *   global   a bound DLTensor (element strides), accesses masked to bounds;
 *   shared   a byte range of the block's imem_shared, element offset by
 *            the tensor's data layout (row-major when none);
 *   register regs[thread * locals + local], coordinate = layout(thread, local).
 * Operands are views: a tensor plus, per dimension, a chain of (tiler,
 * offset) steps that maps a view coordinate to the tensor's coordinate.
 * The collective atoms (mma.m16n8k16, ldmatrix) live in interp_atom.c. */
#include <math.h>
#include <string.h>

#include "tile/interp.h"
#include "tile/interp_atom.h"
#include "tile/interp_mem.h"

/* ---- runtime values ------------------------------------------------------ */

#define IMAX_RANK 8
#define IMAX_CHAIN 8
#define DEFAULT_SMEM (228 * 1024)

typedef struct rt_tensor {
    tile_space space;
    tile_dtype dt;
    tsl_dtype tdt;   /* byte-addressable dtype of shared/global data */
    int rank;
    int64_t dims[IMAX_RANK];
    /* global */
    char *gdata;                 /* first element */
    int64_t gstride[IMAX_RANK];  /* in elements */
    /* shared */
    size_t soff;                 /* byte offset in the block's shared memory */
    const layout *slay;          /* coordinate -> element offset; NULL row-major */
    /* register */
    const dist_layout *rlay;
    int64_t nthreads, nlocals;
    double *regs;                /* [nthreads * nlocals], rounded to dt */
    int64_t cap;
} rt_tensor;

typedef struct rt_slot {
    int64_t ival; /* scalars */
    rt_tensor *t; /* tensors */
} rt_slot;

/* One dimension of a view: coord = chain[0].off + T0(chain[1].off + T1(...x)). */
typedef struct vstep {
    const layout *tiler; /* NULL: identity */
    int64_t off;
} vstep;

typedef struct rt_view {
    rt_tensor *t;
    const char *name;
    int rank;                      /* == t->rank, or the layout's rank for .local */
    int local;                     /* R.local: coordinates are this thread's local coords */
    int64_t ldims[IMAX_RANK];      /* .local: the thread's local shape */
    int nchain[IMAX_RANK];
    vstep chain[IMAX_RANK][IMAX_CHAIN];
    int64_t ext[IMAX_RANK];        /* extent; -1: the other operand's */
    /* pending tile step (tile without an index yet) */
    int tiled;
    const layout *ptiler[IMAX_RANK];
    int64_t psize[IMAX_RANK];
} rt_view;

struct interp {
    const tile_kernel *k;
    const tsl_source *src;
    tsl_diag *d;
    const tile_interp_opts *o;
    rt_slot *slots;       /* [k->nvalues] */
    rt_tensor *tensors;   /* storage per value id */
    int64_t bidx[3];
    int nthreads;
    imem_shared sm;
    size_t *soff;         /* shared byte offset per value id */
    size_t smem_used;
    int64_t cur_thread;   /* per-thread decomposition mode: the thread, else -1 */
    int in_grid;          /* messages name the block */
    FILE *out;
};

typedef struct interp interp;

/* ---- errors ---------------------------------------------------------------- */

static tsl_status ierr(interp *I, size_t pos, tsl_status st, const char *fmt, ...)
    TSL_PRINTF(4, 5);
static tsl_status ierr(interp *I, size_t pos, tsl_status st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *blk = "";
    char bbuf[96] = "";
    if (I->in_grid) {
        snprintf(bbuf, sizeof bbuf, " (block %lld,%lld,%lld)", (long long)I->bidx[0],
                 (long long)I->bidx[1], (long long)I->bidx[2]);
        blk = bbuf;
    }
    if (I->src) diag_error_at(I->d, I->src, pos, st, "%s%s", msg, blk);
    else diag_error(I->d, st, "%s%s", msg, blk);
    return st;
}

static void coord_str(char *buf, size_t n, const int64_t *c, int rank)
{
    size_t at = 0;
    for (int i = 0; i < rank && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "," : "", (long long)c[i]);
    if (rank == 0 && n) buf[0] = 0;
}

/* ---- numbers ------------------------------------------------------------------ */

/* v rounded to what an element of dt can hold (f16/bf16 to nearest even,
 * f32 through float, ints wrapped to their width). */
static double round_to(tile_dtype dt, double v)
{
    switch (dt.kind) {
    case TILE_DT_FLOAT:
        if (dt.bits == 16 && dt.exp == 5) return f16_to_f32(f32_to_f16((float)v));
        if (dt.bits == 16 && dt.exp == 8) return bf16_to_f32(f32_to_bf16((float)v));
        if (dt.bits == 32) return (float)v;
        return v;
    case TILE_DT_BOOL: return v != 0;
    case TILE_DT_INT:
    case TILE_DT_UINT: {
        if (isnan(v)) return 0;
        double t = trunc(v);
        if (dt.bits >= 64) return t;
        if (t > 9.2e18 || t < -9.2e18) return 0;
        uint64_t mask = (1ull << dt.bits) - 1, u = (uint64_t)(int64_t)t & mask;
        if (dt.kind == TILE_DT_INT && (u >> (dt.bits - 1)) & 1) return (double)(int64_t)(u | ~mask);
        return (double)u;
    }
    }
    return v;
}

static size_t dt_bytes(tsl_dtype t)
{
    return (size_t)dtype_info_of(t)->bits / 8;
}

/* ---- scalars ------------------------------------------------------------------- */

static int64_t lookup(void *ctx, const tile_value *v, int *ok)
{
    interp *I = ctx;
    if (!v || v->kind != TILE_V_SCALAR) {
        *ok = 0;
        return 0;
    }
    return I->slots[v->id].ival;
}

static tsl_status eval_int(interp *I, const tile_expr *e, int64_t *out)
{
    int ok = 1;
    *out = tile_expr_eval(e, lookup, I, I->bidx, I->cur_thread, &ok);
    if (!ok)
        return ierr(I, e ? e->pos : 0, TSL_ERR_RUNTIME,
                    "cannot evaluate this expression here (division by zero, or thread_idx "
                    "outside a decomposition)");
    return TSL_OK;
}

/* A scalar operand or fill value as a double (float literals kept). */
static tsl_status eval_num(interp *I, const tile_expr *e, double *out)
{
    if (e && e->kind == TILE_E_FLOAT) {
        *out = e->f;
        return TSL_OK;
    }
    if (e && e->kind == TILE_E_NEG && e->a && e->a->kind == TILE_E_FLOAT) {
        *out = -e->a->f;
        return TSL_OK;
    }
    int64_t v;
    tsl_status st = eval_int(I, e, &v);
    *out = (double)v;
    return st;
}

/* ---- tensors -------------------------------------------------------------------- */

static tsl_status const_dims(interp *I, const tile_value *v, int64_t *dims)
{
    if (v->type.rank > IMAX_RANK)
        return ierr(I, v->pos, TSL_ERR_SEMANTIC, "tensor '%s' has rank %d; at most %d", v->name,
                    v->type.rank, IMAX_RANK);
    for (int i = 0; i < v->type.rank; i++) {
        tsl_status st = eval_int(I, v->type.dims[i], &dims[i]);
        if (st) return st;
        if (dims[i] < 1)
            return ierr(I, v->pos, TSL_ERR_SHAPE, "tensor '%s' dim %d is %lld", v->name, i,
                        (long long)dims[i]);
    }
    return TSL_OK;
}

/* Storage of a shared or register tensor defined by value v (reused each
 * time its defining statement runs again). */
static tsl_status tensor_of(interp *I, const tile_value *v, rt_tensor **out)
{
    rt_tensor *t = &I->tensors[v->id];
    const tile_type *ty = &v->type;
    t->space = ty->space;
    t->dt = ty->dt;
    t->rank = ty->rank;
    tsl_status st = const_dims(I, v, t->dims);
    if (st) return st;
    if (ty->space == TILE_SHARED) {
        if (tile_dtype_to_tsl(ty->dt, &t->tdt) || dtype_info_of(t->tdt)->bits % 8)
            return ierr(I, v->pos, TSL_ERR_UNAVAILABLE,
                        "shared tensor '%s': the interpreter holds only byte-sized dtypes here",
                        v->name);
        t->soff = I->soff[v->id];
        t->slay = ty->layout ? &ty->layout->v.data : NULL;
        if (ty->layout && ty->layout->v.kind != LAYOUT_VALUE_DATA)
            return ierr(I, v->pos, TSL_ERR_SEMANTIC, "shared tensor '%s' needs a data layout",
                        v->name);
    } else if (ty->space == TILE_REGISTER) {
        if (!ty->layout || ty->layout->v.kind != LAYOUT_VALUE_DIST)
            return ierr(I, v->pos, TSL_ERR_SEMANTIC,
                        "register tensor '%s' needs a distributed layout", v->name);
        t->rlay = &ty->layout->v.dist;
        if (t->rlay->threads > I->nthreads)
            return ierr(I, v->pos, TSL_ERR_SHAPE,
                        "register tensor '%s': its layout spans %lld threads, the block has %d",
                        v->name, (long long)t->rlay->threads, I->nthreads);
        t->nthreads = t->rlay->threads;
        t->nlocals = t->rlay->locals;
        int64_t n = t->nthreads * t->nlocals;
        if (n > t->cap) {
            double *r = realloc(t->regs, (size_t)n * sizeof *r);
            if (!r) return ierr(I, v->pos, TSL_ERR_NOMEM, "out of memory for registers of '%s'", v->name);
            t->regs = r;
            t->cap = n;
        }
    } else {
        return ierr(I, v->pos, TSL_ERR_INTERNAL, "global tensor '%s' has no storage here", v->name);
    }
    I->slots[v->id].t = t;
    *out = t;
    return TSL_OK;
}

/* Is coord inside t's dims? */
static int in_dims(const rt_tensor *t, const int64_t *c)
{
    for (int i = 0; i < t->rank; i++)
        if (c[i] < 0 || c[i] >= t->dims[i]) return 0;
    return 1;
}

/* Byte offset of a shared element. */
static size_t shared_off(const rt_tensor *t, const int64_t *c)
{
    int64_t e;
    if (t->slay) {
        e = layout_eval_coord(t->slay, c, t->rank);
    } else {
        e = 0;
        for (int i = 0; i < t->rank; i++) e = e * t->dims[i] + c[i];
    }
    return t->soff + (size_t)e * dt_bytes(t->tdt);
}

/* The register tensor's coordinate of (thread, local); 0 if it is outside
 * the tensor's dims (a layout may cover more than the tensor). */
static int reg_coord(const rt_tensor *t, int64_t th, int64_t l, int64_t *c)
{
    int64_t full[DIST_MAX_RANK];
    if (dist_layout_map(t->rlay, th, l, full)) return 0;
    int lr = t->rlay->rank;
    /* layout rank may exceed the tensor's by leading 1s */
    for (int i = 0; i < t->rank; i++) c[i] = full[lr - t->rank + i];
    for (int i = 0; i < lr - t->rank; i++)
        if (full[i]) return 0;
    return in_dims(t, c);
}

/* ---- a thread's local part ------------------------------------------------------------
 * `R.local` is the thread's slots seen as a tensor whose shape is the
 * product of the layout's local factors per dim, in slot order (row-major:
 * slot k is the k-th element). So local(2,2).spatial(8,4).local(1,2) has
 * local shape [2, 4]; local coordinate (i, j) is slot 4i + j. The view is
 * positional, not logical: a decomposition written for one layout moves
 * the wrong elements under another (as the hardware would). */
static void local_shape(const dist_layout *l, int64_t *ld)
{
    for (int i = 0; i < l->rank; i++) ld[i] = 1;
    for (int k = 0; k < l->naxes; k++)
        if (!l->axis[k].is_thread && l->axis[k].dim >= 0) ld[l->axis[k].dim] *= l->axis[k].extent;
}

/* Slot of local coordinate lc; -1 outside the local shape. */
static int64_t local_slot(const dist_layout *l, const int64_t *lc)
{
    int64_t ld[DIST_MAX_RANK], slot = 0;
    local_shape(l, ld);
    for (int i = 0; i < l->rank; i++) {
        if (lc[i] < 0 || lc[i] >= ld[i]) return -1;
        slot = slot * ld[i] + lc[i];
    }
    return slot;
}

/* ---- views ------------------------------------------------------------------------ */

static tsl_status view_of(interp *I, const tile_operand *o, rt_view *vw)
{
    memset(vw, 0, sizeof *vw);
    if (!o->v || o->v->kind != TILE_V_TENSOR)
        return ierr(I, o->pos, TSL_ERR_SEMANTIC, "expected a tensor operand");
    rt_tensor *t = I->slots[o->v->id].t;
    if (!t) return ierr(I, o->pos, TSL_ERR_RUNTIME, "tensor '%s' used before it is defined", o->v->name);
    vw->t = t;
    vw->name = o->v->name;
    vw->rank = t->rank;
    for (int i = 0; i < t->rank; i++) vw->ext[i] = -1;
    for (int s = 0; s < o->nsteps; s++) {
        const tile_step *st = &o->steps[s];
        if (st->kind == TILE_STEP_LOCAL) {
            if (I->cur_thread < 0 || s != 0 || t->space != TILE_REGISTER)
                return ierr(I, st->pos, TSL_ERR_SEMANTIC,
                            "'.local' is the thread's part of a register tensor, inside a decomposition");
            vw->local = 1;
            vw->rank = t->rlay->rank;
            local_shape(t->rlay, vw->ldims);
            for (int i = 0; i < vw->rank; i++) vw->ext[i] = vw->ldims[i];
            continue;
        }
        if (st->n > vw->rank)
            return ierr(I, st->pos, TSL_ERR_SHAPE, "%d indices for '%s' of rank %d", st->n,
                        vw->name, vw->rank);
        if (st->kind == TILE_STEP_TILE) {
            if (vw->tiled)
                return ierr(I, st->pos, TSL_ERR_SEMANTIC, "tile of a tensor of tiles: index it first");
            vw->tiled = 1;
            for (int i = 0; i < vw->rank; i++) {
                int j = i - (vw->rank - st->n); /* tilers right-aligned */
                vw->ptiler[i] = j >= 0 && st->tilers[j] ? &st->tilers[j]->v.data : NULL;
                vw->psize[i] = j >= 0 ? st->sizes[j] : 1;
            }
            continue;
        }
        /* index */
        for (int i = 0; i < vw->rank; i++) {
            int64_t x = 0;
            if (i < st->n) {
                tsl_status e = eval_int(I, st->idx[i], &x);
                if (e) return e;
            }
            if (vw->nchain[i] == IMAX_CHAIN)
                return ierr(I, st->pos, TSL_ERR_UNAVAILABLE, "view chain too deep");
            vstep stp = {NULL, x};
            if (vw->tiled) {
                int64_t size = vw->psize[i];
                if (vw->ptiler[i]) {
                    /* tile x of a non-contiguous tiler: offset = complement(tiler)(x) */
                    layout comp;
                    layout_err le = {{0}, 0};
                    int64_t ext = vw->ext[i] >= 0 ? vw->ext[i] : vw->local ? vw->ldims[i] : t->dims[i];
                    if (layout_complement(&comp, vw->ptiler[i], ext, &le))
                        return ierr(I, st->pos, TSL_ERR_SEMANTIC, "tile of '%s' dim %d: %s",
                                    vw->name, i, le.msg);
                    stp.off = layout_eval(&comp, x);
                    stp.tiler = vw->ptiler[i];
                } else {
                    stp.off = x * size;
                }
                vw->ext[i] = size;
            }
            vw->chain[i][vw->nchain[i]++] = stp;
        }
        vw->tiled = 0;
    }
    if (vw->tiled)
        return ierr(I, o->pos, TSL_ERR_SEMANTIC, "a tensor of tiles must be indexed to be transferred");
    return TSL_OK;
}

/* Base coordinate of view coordinate vc (rank == view rank). */
static void view_map(const rt_view *vw, const int64_t *vc, int64_t *c)
{
    for (int i = 0; i < vw->rank; i++) {
        int64_t x = vc[i];
        for (int s = vw->nchain[i] - 1; s >= 0; s--) {
            const vstep *st = &vw->chain[i][s];
            x = st->off + (st->tiler ? layout_eval(st->tiler, x) : x);
        }
        c[i] = x;
    }
}

/* View coordinate for a register coordinate rc of rank r (right-aligned:
 * leading view dims get 0). 0 when the tile does not fit the view. */
static int view_coord_from(const rt_view *vw, const int64_t *rc, int r, int64_t *vc)
{
    int lead = vw->rank - r;
    for (int i = 0; i < vw->rank; i++) {
        int j = i - lead;
        vc[i] = j >= 0 ? rc[j] : 0;
        if (j < 0 && r > vw->rank) return 0;
    }
    if (lead < 0) {
        for (int j = 0; j < -lead; j++)
            if (rc[j]) return 0;
        for (int i = 0; i < vw->rank; i++) vc[i] = rc[i - lead];
    }
    return 1;
}

/* Check that a register tile of dims fits the view's extents. */
static tsl_status view_fit(interp *I, size_t pos, const rt_view *vw, const int64_t *dims, int r)
{
    int lead = vw->rank - r;
    for (int i = 0; i < vw->rank; i++) {
        int j = i - lead;
        int64_t want = j >= 0 ? dims[j] : 1;
        if (j >= 0 && j < r && vw->ext[i] >= 0 && vw->ext[i] != want)
            return ierr(I, pos, TSL_ERR_SHAPE,
                        "tile of '%s' has extent %lld in dim %d, the other operand %lld", vw->name,
                        (long long)vw->ext[i], i, (long long)want);
    }
    for (int j = 0; j < -lead; j++)
        if (dims[j] != 1)
            return ierr(I, pos, TSL_ERR_SHAPE, "a rank-%d tile does not fit '%s' of rank %d", r,
                        vw->name, vw->rank);
    return TSL_OK;
}

/* ---- element access through views ------------------------------------------------ */

static double global_get(const rt_tensor *t, const int64_t *c)
{
    int64_t e = 0;
    for (int i = 0; i < t->rank; i++) e += c[i] * t->gstride[i];
    return dtype_load(t->tdt, t->gdata + e * (int64_t)dt_bytes(t->tdt));
}

static void global_set(const rt_tensor *t, const int64_t *c, double v)
{
    int64_t e = 0;
    for (int i = 0; i < t->rank; i++) e += c[i] * t->gstride[i];
    dtype_store(t->tdt, t->gdata + e * (int64_t)dt_bytes(t->tdt), v);
}

static tsl_status hazard(interp *I, size_t pos, imem_hazard h, const char *name, const int64_t *c,
                         int rank, int64_t thread, int other)
{
    char e[160];
    coord_str(e, sizeof e, c, rank);
    long long t = (long long)thread;
    switch (h) {
    case IMEM_PENDING_READ:
        return ierr(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld reads %s[%s] before the cp.async that writes it completed (missing wait?)",
                    t, name, e);
    case IMEM_PENDING_WRITE:
        return ierr(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld writes %s[%s] while a cp.async into it is pending (missing wait?)", t,
                    name, e);
    case IMEM_RAW:
        return ierr(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld reads %s[%s], which thread %d wrote with no synchronize between "
                    "(missing sync?)", t, name, e, other);
    case IMEM_WAR:
        return ierr(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld writes %s[%s], which another thread read with no synchronize between "
                    "(missing sync?)", t, name, e);
    case IMEM_WAW:
        return ierr(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld writes %s[%s], which thread %d wrote with no synchronize between "
                    "(missing sync?)", t, name, e, other);
    default:
        return ierr(I, pos, TSL_ERR_BOUNDS, "thread %lld: %s[%s] is outside the block's shared memory", t,
                    name, e);
    }
}

static tsl_status shared_get(interp *I, size_t pos, const rt_view *vw, const int64_t *c,
                             int64_t thread, double *out)
{
    const rt_tensor *t = vw->t;
    if (!in_dims(t, c)) {
        char cs[128];
        coord_str(cs, sizeof cs, c, t->rank);
        return ierr(I, pos, TSL_ERR_BOUNDS, "read of %s[%s] is outside its shape", vw->name, cs);
    }
    unsigned char buf[16];
    int other;
    imem_hazard h = imem_read(&I->sm, shared_off(t, c), dt_bytes(t->tdt), (int)thread, buf, &other);
    if (h) return hazard(I, pos, h, vw->name, c, t->rank, thread, other);
    *out = dtype_load(t->tdt, buf);
    return TSL_OK;
}

static tsl_status shared_put(interp *I, size_t pos, const rt_view *vw, const int64_t *c,
                             int64_t thread, double v, int async)
{
    const rt_tensor *t = vw->t;
    if (!in_dims(t, c)) {
        char cs[128];
        coord_str(cs, sizeof cs, c, t->rank);
        return ierr(I, pos, TSL_ERR_BOUNDS, "write of %s[%s] is outside its shape", vw->name, cs);
    }
    unsigned char buf[16];
    dtype_store(t->tdt, buf, v);
    int other;
    size_t off = shared_off(t, c), n = dt_bytes(t->tdt);
    imem_hazard h = async ? imem_copy_async(&I->sm, off, n, (int)thread, buf, &other)
                          : imem_write(&I->sm, off, n, (int)thread, buf, &other);
    if (h) return hazard(I, pos, h, vw->name, c, t->rank, thread, other);
    return TSL_OK;
}

/* ---- destinations ------------------------------------------------------------------ */

/* The register tensor an instruction writes: its new result, or `-> dst`. */
static tsl_status reg_dst(interp *I, const tile_stmt *s, rt_tensor **out)
{
    const tile_instr *in = &s->instr;
    if (in->result) {
        if (in->result->type.space != TILE_REGISTER)
            return ierr(I, s->pos, TSL_ERR_SEMANTIC, "%s: the result must be a register tensor",
                        tile_op_info_of(in->op)->name);
        return tensor_of(I, in->result, out);
    }
    if (in->has_dst && in->dst.v && in->dst.v->kind == TILE_V_TENSOR) {
        rt_tensor *t = I->slots[in->dst.v->id].t;
        if (!t)
            return ierr(I, in->dst.pos, TSL_ERR_RUNTIME, "tensor '%s' used before it is defined",
                        in->dst.v->name);
        if (t->space != TILE_REGISTER || in->dst.nsteps)
            return ierr(I, in->dst.pos, TSL_ERR_SEMANTIC,
                        "%s: the destination must be a whole register tensor",
                        tile_op_info_of(in->op)->name);
        *out = t;
        return TSL_OK;
    }
    return ierr(I, s->pos, TSL_ERR_SEMANTIC, "%s: no result and no destination",
                tile_op_info_of(in->op)->name);
}

static tsl_status reg_arg(interp *I, const tile_operand *o, rt_tensor **out)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR)
        return ierr(I, o->pos, TSL_ERR_SEMANTIC, "expected a register tensor operand");
    rt_tensor *t = I->slots[o->v->id].t;
    if (!t) return ierr(I, o->pos, TSL_ERR_RUNTIME, "tensor '%s' used before it is defined", o->v->name);
    if (t->space != TILE_REGISTER || o->nsteps)
        return ierr(I, o->pos, TSL_ERR_SEMANTIC, "'%s' must be a whole register tensor here", o->v->name);
    *out = t;
    return TSL_OK;
}

/* Is (th, l) the lowest owner of its coordinate? Replicated layouts hold a
 * value in several threads; only one of them stores it (as codegen does). */
static int first_owner(const rt_tensor *t, int64_t th, int64_t l)
{
    int64_t full[DIST_MAX_RANK], ot, ol;
    if (dist_layout_map(t->rlay, th, l, full)) return 0;
    if (dist_layout_owner(t->rlay, full, &ot, &ol)) return 0;
    return ot == th && ol == l;
}

/* ---- transfers ------------------------------------------------------------------------ */

/* load_global / load_shared: each thread reads the elements it owns. */
static tsl_status exec_load(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_view src;
    rt_tensor *d = NULL;
    tsl_status st = view_of(I, &in->args[0], &src);
    if (!st) st = reg_dst(I, s, &d);
    if (st) return st;
    int want = in->op == TILE_I_LOAD_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
    if ((int)src.t->space != want)
        return ierr(I, in->args[0].pos, TSL_ERR_SEMANTIC, "%s reads a %s tensor; '%s' is %s",
                    tile_op_info_of(in->op)->name, tile_space_name((tile_space)want), src.name,
                    tile_space_name(src.t->space));
    st = view_fit(I, s->pos, &src, d->dims, d->rank);
    if (st) return st;
    double fill = 0;
    if (in->init && (st = eval_num(I, in->init, &fill))) return st;
    for (int64_t th = 0; th < d->nthreads; th++)
        for (int64_t l = 0; l < d->nlocals; l++) {
            int64_t rc[IMAX_RANK], vc[IMAX_RANK], c[IMAX_RANK];
            double v = NAN;
            if (!reg_coord(d, th, l, rc)) {
                d->regs[th * d->nlocals + l] = NAN;
                continue;
            }
            if (!view_coord_from(&src, rc, d->rank, vc))
                return ierr(I, s->pos, TSL_ERR_SHAPE, "tile does not fit '%s'", src.name);
            view_map(&src, vc, c);
            if (src.t->space == TILE_GLOBAL) {
                v = in_dims(src.t, c) ? global_get(src.t, c) : fill;
            } else if ((st = shared_get(I, s->pos, &src, c, th, &v))) {
                return st;
            }
            d->regs[th * d->nlocals + l] = round_to(d->dt, v);
        }
    return TSL_OK;
}

/* store_global / store_shared: each element's first owner writes it. */
static tsl_status exec_store(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *r = NULL;
    rt_view dst;
    tsl_status st = reg_arg(I, &in->args[0], &r);
    if (st) return st;
    if (!in->has_dst) return ierr(I, s->pos, TSL_ERR_SEMANTIC, "store needs '-> destination'");
    if ((st = view_of(I, &in->dst, &dst))) return st;
    int want = in->op == TILE_I_STORE_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
    if ((int)dst.t->space != want)
        return ierr(I, in->dst.pos, TSL_ERR_SEMANTIC, "%s writes a %s tensor; '%s' is %s",
                    tile_op_info_of(in->op)->name, tile_space_name((tile_space)want), dst.name,
                    tile_space_name(dst.t->space));
    if ((st = view_fit(I, s->pos, &dst, r->dims, r->rank))) return st;
    for (int64_t th = 0; th < r->nthreads; th++)
        for (int64_t l = 0; l < r->nlocals; l++) {
            int64_t rc[IMAX_RANK], vc[IMAX_RANK], c[IMAX_RANK];
            if (!reg_coord(r, th, l, rc) || !first_owner(r, th, l)) continue;
            if (!view_coord_from(&dst, rc, r->rank, vc))
                return ierr(I, s->pos, TSL_ERR_SHAPE, "tile does not fit '%s'", dst.name);
            view_map(&dst, vc, c);
            double v = r->regs[th * r->nlocals + l];
            if (dst.t->space == TILE_GLOBAL) {
                if (in_dims(dst.t, c)) global_set(dst.t, c, v);
            } else if ((st = shared_put(I, s->pos, &dst, c, th, v, 0))) {
                return st;
            }
        }
    return TSL_OK;
}

/* copy_async global -> shared: the tile is the shared tensor, or its slice
 * S[i, ...] of the trailing dims (the leading dims indexed), or a tile of
 * a tiled view; it is taken from the global tensor right-aligned at the
 * source's offsets. The tile in row-major order is cut into vectors of
 * `bytes` (16 by default), vector i issued by thread i % threads
 * (cp.async with zero fill past the tensor's bounds). */
static tsl_status exec_copy_async(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_view src, dst;
    tsl_status st = view_of(I, &in->args[0], &src);
    if (st) return st;
    if (!in->has_dst) return ierr(I, s->pos, TSL_ERR_SEMANTIC, "copy_async needs '-> destination'");
    if ((st = view_of(I, &in->dst, &dst))) return st;
    if (src.t->space != TILE_GLOBAL || dst.t->space != TILE_SHARED)
        return ierr(I, s->pos, TSL_ERR_SEMANTIC, "copy_async copies global -> shared");
    /* leading dims fixed by an untiled index (S[i, ...]) */
    int lead = 0;
    if (in->dst.nsteps == 1 && in->dst.steps[0].kind == TILE_STEP_INDEX) lead = in->dst.steps[0].n;
    if (lead >= dst.rank)
        return ierr(I, in->dst.pos, TSL_ERR_SHAPE, "copy_async: %d indices leave nothing of '%s'", lead, dst.name);
    int trank = dst.rank - lead;
    int64_t box[IMAX_RANK], n = 1;
    for (int i = 0; i < trank; i++) {
        int d = lead + i;
        box[i] = dst.ext[d] >= 0 ? dst.ext[d] : dst.t->dims[d];
        n *= box[i];
    }
    if ((st = view_fit(I, s->pos, &src, box, trank))) return st;
    int64_t vec = (in->bytes ? in->bytes : 16) / (int64_t)dt_bytes(dst.t->tdt);
    if (vec < 1) vec = 1;
    for (int64_t e = 0; e < n; e++) {
        int64_t tc[IMAX_RANK], vs[IMAX_RANK], vd[IMAX_RANK], cs[IMAX_RANK], cd[IMAX_RANK], r = e;
        for (int i = trank - 1; i >= 0; i--) {
            tc[i] = r % box[i];
            r /= box[i];
        }
        for (int i = 0; i < dst.rank; i++) vd[i] = i < lead ? 0 : tc[i - lead];
        if (!view_coord_from(&src, tc, trank, vs))
            return ierr(I, s->pos, TSL_ERR_SHAPE, "copy_async: the tile does not fit '%s'", src.name);
        view_map(&src, vs, cs);
        view_map(&dst, vd, cd);
        double v = in_dims(src.t, cs) ? global_get(src.t, cs) : 0;
        int64_t th = (e / vec) % I->nthreads;
        if ((st = shared_put(I, s->pos, &dst, cd, th, v, 1))) return st;
    }
    return TSL_OK;
}

/* ---- mma ------------------------------------------------------------------------------ */

/* Block-level mma d = a . b + c over m16n8k16 atoms. Each operand's layout
 * must be R . F with F the atom's fragment layout (Tilus composition:
 * thread = warp * 32 + lane, local = tile * slots + slot); warp w computes
 * the C tiles R_C gives it, reading the A and B tiles it holds itself, by
 * register slot as the hardware does. A layout that is not R . F, or a
 * warp that lacks a tile it needs, is an error. */
static tsl_status mma_split(interp *I, size_t pos, const rt_tensor *t, const char *name, int which,
                            dist_layout *r)
{
    layout_value fv;
    layout_err le = {{0}, 0};
    const char *ft = iatom_mma_frag_text(which);
    if (layout_parse(ft, strlen(ft), &fv, &le) || fv.kind != LAYOUT_VALUE_DIST)
        return ierr(I, pos, TSL_ERR_INTERNAL, "mma fragment layout '%s': %s", ft, le.msg);
    if (t->rank != 2 || t->rlay->rank != 2)
        return ierr(I, pos, TSL_ERR_SHAPE, "mma: '%s' must be a rank-2 register tensor", name);
    if (dist_layout_divide(r, t->rlay, &fv.dist, &le)) {
        strbuf sb = {0};
        dist_layout_print(&sb, t->rlay);
        tsl_status st = ierr(I, pos, TSL_ERR_SHAPE,
                             "mma m16n8k16: %s operand '%s' has layout %s, which is not R.%s "
                             "(the atom's fragment layout): %s",
                             which == 0 ? "A" : which == 1 ? "B" : "C", name, sb_str(&sb), ft, le.msg);
        sb_free(&sb);
        return st;
    }
    return TSL_OK;
}

/* The tile slot of R that warp w holds at tile coordinate (i, j); -1 if none. */
static int64_t warp_tile(const dist_layout *r, int64_t w, int64_t i, int64_t j)
{
    int64_t c[2] = {i, j}, th[64], lo[64];
    int64_t n = dist_layout_owners(r, c, th, lo, 64);
    for (int64_t x = 0; x < n && x < 64; x++)
        if (th[x] == w) return lo[x];
    return -1;
}

static tsl_status exec_mma(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (in->atom && !strstr(in->atom, "m16n8k16"))
        return ierr(I, s->pos, TSL_ERR_UNAVAILABLE, "mma atom '%s': the interpreter knows m16n8k16",
                    in->atom);
    rt_tensor *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    tsl_status st;
    if ((st = reg_arg(I, &in->args[0], &a)) || (st = reg_arg(I, &in->args[1], &b)) ||
        (st = reg_arg(I, &in->args[2], &c)) || (st = reg_dst(I, s, &d)))
        return st;
    if (a->rank != 2 || b->rank != 2 || c->rank != 2 || a->dims[1] != b->dims[0] ||
        a->dims[0] != c->dims[0] || b->dims[1] != c->dims[1])
        return ierr(I, s->pos, TSL_ERR_SHAPE, "mma: shapes [%lld,%lld] x [%lld,%lld] -> [%lld,%lld] do not agree",
                    (long long)a->dims[0], (long long)a->dims[1], (long long)b->dims[0],
                    (long long)b->dims[1], (long long)c->dims[0], (long long)c->dims[1]);
    dist_layout ra, rb, rc;
    if ((st = mma_split(I, in->args[0].pos, a, in->args[0].v->name, IATOM_MMA_A, &ra)) ||
        (st = mma_split(I, in->args[1].pos, b, in->args[1].v->name, IATOM_MMA_B, &rb)) ||
        (st = mma_split(I, in->args[2].pos, c, in->args[2].v->name, IATOM_MMA_C, &rc)))
        return st;
    if (d != c && !dist_layout_equal(d->rlay, c->rlay))
        return ierr(I, s->pos, TSL_ERR_SHAPE, "mma: the destination's layout differs from C's");
    int64_t ktiles = ra.shape[1];
    int64_t total = c->nthreads * c->nlocals;
    double *res = malloc((size_t)total * sizeof *res);
    if (!res) return ierr(I, s->pos, TSL_ERR_NOMEM, "out of memory in mma");
    memcpy(res, c->regs, (size_t)total * sizeof *res);
    static double fa[32][8], fb[32][4], fc[32][4], fd[32][4];
    for (int64_t w = 0; w < rc.threads; w++)
        for (int64_t ct = 0; ct < rc.locals; ct++) {
            int64_t tc[2];
            if (dist_layout_map(&rc, w, ct, tc)) continue;
            for (int l = 0; l < 32; l++)
                for (int i = 0; i < 4; i++) fc[l][i] = res[(w * 32 + l) * c->nlocals + ct * 4 + i];
            for (int64_t kt = 0; kt < ktiles; kt++) {
                int64_t at = warp_tile(&ra, w, tc[0], kt), bt = warp_tile(&rb, w, kt, tc[1]);
                if (at < 0 || bt < 0) {
                    free(res);
                    return ierr(I, s->pos, TSL_ERR_SHAPE,
                                "mma: warp %lld computes C tile (%lld,%lld) but does not hold %s tile (%lld,%lld)",
                                (long long)w, (long long)tc[0], (long long)tc[1], at < 0 ? "A" : "B",
                                (long long)(at < 0 ? tc[0] : kt), (long long)(at < 0 ? kt : tc[1]));
                }
                for (int l = 0; l < 32; l++) {
                    for (int i = 0; i < 8; i++) fa[l][i] = a->regs[(w * 32 + l) * a->nlocals + at * 8 + i];
                    for (int i = 0; i < 4; i++) fb[l][i] = b->regs[(w * 32 + l) * b->nlocals + bt * 4 + i];
                }
                iatom_mma_m16n8k16(fa, fb, fc, fd);
                memcpy(fc, fd, sizeof fc);
            }
            for (int l = 0; l < 32; l++)
                for (int i = 0; i < 4; i++)
                    res[(w * 32 + l) * c->nlocals + ct * 4 + i] = round_to(d->dt, fc[l][i]);
        }
    memcpy(d->regs, res, (size_t)total * sizeof *res);
    free(res);
    return TSL_OK;
}

/* ---- per-slot arithmetic ------------------------------------------------------------------ */

static double unop(tile_op op, double x)
{
    switch (op) {
    case TILE_I_NEG: return -x;
    case TILE_I_ABS: return fabs(x);
    case TILE_I_EXP: return expf((float)x);
    case TILE_I_LOG: return logf((float)x);
    case TILE_I_SQRT: return sqrtf((float)x);
    case TILE_I_RSQRT: return 1.0f / sqrtf((float)x);
    case TILE_I_TANH: return tanhf((float)x);
    case TILE_I_SIGMOID: return 1.0f / (1.0f + expf(-(float)x));
    case TILE_I_RELU: return x > 0 ? x : 0;
    default: return x; /* COPY, CAST */
    }
}

static double binop(tile_op op, double x, double y)
{
    switch (op) {
    case TILE_I_ADD: return x + y;
    case TILE_I_SUB: return x - y;
    case TILE_I_MUL: return x * y;
    case TILE_I_DIV: return x / y;
    case TILE_I_MAX: return x > y ? x : y;
    case TILE_I_MIN: return x < y ? x : y;
    default: return x;
    }
}

/* An operand of an elementwise op: a register tensor laid out like the
 * result, or a scalar broadcast to every slot. */
typedef struct ew_arg {
    const rt_tensor *t;
    double scalar;
} ew_arg;

static tsl_status ew_operand(interp *I, const tile_operand *o, const rt_tensor *d, ew_arg *out)
{
    out->t = NULL;
    if (!o->v) return eval_num(I, o->scalar, &out->scalar);
    if (o->v->kind == TILE_V_SCALAR) {
        out->scalar = (double)I->slots[o->v->id].ival;
        return TSL_OK;
    }
    rt_tensor *t = NULL;
    tsl_status st = reg_arg(I, o, &t);
    if (st) return st;
    if (!dist_layout_equal(t->rlay, d->rlay) || t->rank != d->rank ||
        memcmp(t->dims, d->dims, sizeof(int64_t) * (size_t)t->rank))
        return ierr(I, o->pos, TSL_ERR_SHAPE,
                    "'%s' is not laid out like the result (same shape and layout needed; use copy "
                    "through shared memory to change layout)", o->v->name);
    out->t = t;
    return TSL_OK;
}

static double ew_get(const ew_arg *a, int64_t i)
{
    return a->t ? a->t->regs[i] : a->scalar;
}

static tsl_status exec_elementwise(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *d = NULL;
    tsl_status st = reg_dst(I, s, &d);
    if (st) return st;
    ew_arg x, y = {0};
    if ((st = ew_operand(I, &in->args[0], d, &x))) return st;
    if (in->nargs > 1 && (st = ew_operand(I, &in->args[1], d, &y))) return st;
    int64_t n = d->nthreads * d->nlocals;
    int cast = in->op == TILE_I_CAST;
    for (int64_t i = 0; i < n; i++) {
        double v = tile_op_is_binary(in->op) ? binop(in->op, ew_get(&x, i), ew_get(&y, i))
                                             : unop(in->op, ew_get(&x, i));
        /* arithmetic on f16/bf16 happens in f32, then rounds to the dtype */
        if (!cast && d->dt.kind == TILE_DT_FLOAT && d->dt.bits <= 32) v = (float)v;
        d->regs[i] = round_to(d->dt, v);
    }
    return TSL_OK;
}

/* view: the same bits per thread reinterpreted as another dtype/layout. */
static tsl_status exec_view(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *x = NULL, *d = NULL;
    tsl_status st = reg_arg(I, &in->args[0], &x);
    if (!st) st = reg_dst(I, s, &d);
    if (st) return st;
    tsl_dtype sx, sd;
    if (tile_dtype_to_tsl(x->dt, &sx) || tile_dtype_to_tsl(d->dt, &sd) || x->dt.bits % 8 || d->dt.bits % 8)
        return ierr(I, s->pos, TSL_ERR_UNAVAILABLE, "view: the interpreter reinterprets byte-sized dtypes only");
    if (x->nlocals * x->dt.bits != d->nlocals * d->dt.bits || x->nthreads != d->nthreads)
        return ierr(I, s->pos, TSL_ERR_SHAPE,
                    "view: each thread holds %lld bits of '%s' but %lld bits of the result",
                    (long long)(x->nlocals * x->dt.bits), in->args[0].v->name,
                    (long long)(d->nlocals * d->dt.bits));
    size_t nb = (size_t)(x->nlocals * x->dt.bits / 8);
    unsigned char *buf = malloc(nb ? nb : 1);
    if (!buf) return ierr(I, s->pos, TSL_ERR_NOMEM, "out of memory in view");
    double *tmp = malloc((size_t)(d->nthreads * d->nlocals + 1) * sizeof *tmp);
    if (!tmp) {
        free(buf);
        return ierr(I, s->pos, TSL_ERR_NOMEM, "out of memory in view");
    }
    for (int64_t th = 0; th < x->nthreads; th++) {
        for (int64_t l = 0; l < x->nlocals; l++)
            dtype_store(sx, buf + l * (int64_t)dt_bytes(sx), x->regs[th * x->nlocals + l]);
        for (int64_t l = 0; l < d->nlocals; l++)
            tmp[th * d->nlocals + l] = dtype_load(sd, buf + l * (int64_t)dt_bytes(sd));
    }
    memcpy(d->regs, tmp, (size_t)(d->nthreads * d->nlocals) * sizeof *tmp);
    free(tmp);
    free(buf);
    return TSL_OK;
}

/* reduce.{sum,max,min} dim D: the result holds, at the source coordinate
 * with dim D dropped (or set to 0 when the ranks agree), the reduction in
 * f32 over every source element; each owner of a result coordinate gets
 * it (shuffles and shared memory move the partials on the GPU). */
static tsl_status exec_reduce(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *x = NULL, *d = NULL;
    tsl_status st = reg_arg(I, &in->args[0], &x);
    if (!st) st = reg_dst(I, s, &d);
    if (st) return st;
    int dim = in->dim;
    if (dim < 0 || dim >= x->rank)
        return ierr(I, s->pos, TSL_ERR_SHAPE, "reduce: dim %d of a rank-%d tensor", dim, x->rank);
    int keep = d->rank == x->rank;
    if (!keep && d->rank != x->rank - 1)
        return ierr(I, s->pos, TSL_ERR_SHAPE, "reduce: result rank %d for a rank-%d input", d->rank, x->rank);
    int64_t n = d->nthreads * d->nlocals;
    for (int64_t i = 0; i < n; i++) d->regs[i] = NAN;
    /* accumulate per result slot by walking the source's slots */
    double *acc = malloc((size_t)(n ? n : 1) * sizeof *acc);
    char *seen = calloc((size_t)(n ? n : 1), 1);
    if (!acc || !seen) {
        free(acc);
        free(seen);
        return ierr(I, s->pos, TSL_ERR_NOMEM, "out of memory in reduce");
    }
    for (int64_t th = 0; th < x->nthreads; th++)
        for (int64_t l = 0; l < x->nlocals; l++) {
            int64_t c[IMAX_RANK], rcd[DIST_MAX_RANK], ths[64], los[64];
            if (!reg_coord(x, th, l, c) || !first_owner(x, th, l)) continue;
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
                else if (in->op == TILE_I_REDUCE_SUM) acc[k] = (float)(acc[k] + v);
                else if (in->op == TILE_I_REDUCE_MAX) acc[k] = v > acc[k] ? v : acc[k];
                else acc[k] = v < acc[k] ? v : acc[k];
                seen[k] = 1;
            }
        }
    for (int64_t k = 0; k < n; k++)
        if (seen[k]) d->regs[k] = round_to(d->dt, acc[k]);
    free(acc);
    free(seen);
    return TSL_OK;
}

/* broadcast dim D: result[c] = x[c with dim D at 0] (or dropped). */
static tsl_status exec_broadcast(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *x = NULL, *d = NULL;
    tsl_status st = reg_arg(I, &in->args[0], &x);
    if (!st) st = reg_dst(I, s, &d);
    if (st) return st;
    int dim = in->dim;
    if (dim < 0 || dim >= d->rank || (x->rank != d->rank && x->rank != d->rank - 1))
        return ierr(I, s->pos, TSL_ERR_SHAPE, "broadcast: dim %d from rank %d to rank %d", dim,
                    x->rank, d->rank);
    for (int64_t th = 0; th < d->nthreads; th++)
        for (int64_t l = 0; l < d->nlocals; l++) {
            int64_t c[IMAX_RANK], xc[DIST_MAX_RANK], ot, ol;
            double v = NAN;
            if (reg_coord(d, th, l, c)) {
                int lead = x->rlay->rank - x->rank, r = lead;
                for (int i = 0; i < lead; i++) xc[i] = 0;
                for (int i = 0; i < d->rank; i++)
                    if (i != dim) xc[r++] = c[i];
                    else if (x->rank == d->rank) xc[r++] = 0;
                if (!dist_layout_owner(x->rlay, xc, &ot, &ol)) v = x->regs[ot * x->nlocals + ol];
            }
            d->regs[th * d->nlocals + l] = round_to(d->dt, v);
        }
    return TSL_OK;
}

/* shuffle.{xor,up,down,idx} x, k: slot i of lane l takes slot i of the
 * source lane within the warp (xor: l^k, up: l-k, down: l+k, idx: k);
 * out of range keeps its own value, as shfl.sync does. */
static tsl_status exec_shuffle(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *x = NULL, *d = NULL;
    int64_t k;
    tsl_status st = reg_arg(I, &in->args[0], &x);
    if (!st) st = reg_dst(I, s, &d);
    if (!st) st = in->args[1].scalar ? eval_int(I, in->args[1].scalar, &k)
                                     : ierr(I, in->args[1].pos, TSL_ERR_SEMANTIC, "shuffle needs a lane operand");
    if (st) return st;
    if (x->nthreads != d->nthreads || x->nlocals != d->nlocals)
        return ierr(I, s->pos, TSL_ERR_SHAPE, "shuffle: the result must be laid out like the input");
    int64_t n = x->nthreads * x->nlocals;
    double *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
    if (!tmp) return ierr(I, s->pos, TSL_ERR_NOMEM, "out of memory in shuffle");
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

static tsl_status exec_print(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    FILE *f = I->out;
    if (!in->args[0].v) {
        double v;
        tsl_status st = eval_num(I, in->args[0].scalar, &v);
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
    tsl_status st = reg_arg(I, &in->args[0], &x);
    if (st) return st;
    fprintf(f, "block (%lld,%lld,%lld): %s (thread, local) -> [coord] value\n", (long long)I->bidx[0],
            (long long)I->bidx[1], (long long)I->bidx[2], in->args[0].v->name);
    for (int64_t th = 0; th < x->nthreads; th++)
        for (int64_t l = 0; l < x->nlocals; l++) {
            int64_t c[IMAX_RANK];
            char cs[128];
            if (!reg_coord(x, th, l, c)) continue;
            coord_str(cs, sizeof cs, c, x->rank);
            fprintf(f, "  (%lld,%lld) -> [%s] %g\n", (long long)th, (long long)l, cs,
                    x->regs[th * x->nlocals + l]);
        }
    return TSL_OK;
}

static tsl_status exec_alloc(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (!in->result) return ierr(I, s->pos, TSL_ERR_SEMANTIC, "alloc needs a result name");
    rt_tensor *t = NULL;
    tsl_status st = tensor_of(I, in->result, &t);
    if (st) return st;
    double v = NAN; /* uninitialised registers are NaN: a missing init shows */
    if (in->init && (st = eval_num(I, in->init, &v))) return st;
    if (t->space == TILE_REGISTER) {
        for (int64_t i = 0; i < t->nthreads * t->nlocals; i++) t->regs[i] = round_to(t->dt, v);
        return TSL_OK;
    }
    if (!in->init) return TSL_OK; /* shared: whatever the bytes were */
    rt_view vw;
    tile_operand o = tile_operand_tensor(in->result);
    if ((st = view_of(I, &o, &vw))) return st;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    for (int64_t e = 0; e < n; e++) {
        int64_t c[IMAX_RANK], r = e;
        for (int i = t->rank - 1; i >= 0; i--) {
            c[i] = r % t->dims[i];
            r /= t->dims[i];
        }
        if ((st = shared_put(I, s->pos, &vw, c, e % I->nthreads, v, 0))) return st;
    }
    return TSL_OK;
}

/* ---- decompositions ----------------------------------------------------------------------
 * An instruction with `decomp { ... }` runs its body instead of itself.
 * The body is per-thread (Graphene's specs over thread tensors): it runs
 * once for every thread of the block with thread_idx and `indices g` bound
 * to that thread, and each atomic instruction in it records that thread's
 * operands; when every thread has run the body, each atom executes
 * collectively, warp by warp, with the data-to-thread mapping of the real
 * instruction. So a wrong decomposition moves the wrong data. */

#define MAX_ATOMS 16

typedef struct atom_rec {
    const tile_stmt *s;
    int64_t *src;  /* per thread: 8 shared coordinates (rank 2) -> flattened pairs */
    int64_t *dslot; /* per thread: the 8 destination slots */
    const rt_view *srcv;
    rt_view view;  /* the source view of the last thread (tensor, name) */
    rt_tensor *dst;
    int ok;
} atom_rec;

typedef struct decomp_ctx {
    atom_rec rec[MAX_ATOMS];
    int nrec;
    int64_t thread;
} decomp_ctx;

static tsl_status exec_block(interp *I, const tile_block *b);
static tsl_status exec_decomp_block(interp *I, decomp_ctx *dc, const tile_block *b);

/* `let a, b, i = indices g` for the current thread. */
static tsl_status exec_indices(interp *I, const tile_stmt *s)
{
    const tile_threads *g = &s->group->threads;
    int64_t t = I->cur_thread;
    if (t < 0) return ierr(I, s->pos, TSL_ERR_SEMANTIC, "indices: only inside a decomposition");
    t %= g->total > 0 ? g->total : 1;
    int64_t grp = 0, idx = 0, inner = g->inner > 0 ? g->inner : 1;
    if (g->tiler && g->tiler->v.kind == LAYOUT_VALUE_DATA) {
        /* t = complement(tiler)(grp) + tiler(idx): find it */
        layout comp;
        layout_err le = {{0}, 0};
        if (layout_complement(&comp, &g->tiler->v.data, g->total, &le))
            return ierr(I, s->pos, TSL_ERR_SEMANTIC, "thread tile: %s", le.msg);
        int found = 0;
        for (int64_t j = 0; j < g->total / inner && !found; j++)
            for (int64_t i = 0; i < inner && !found; i++)
                if (layout_eval(&comp, j) + layout_eval(&g->tiler->v.data, i) == t) {
                    grp = j;
                    idx = i;
                    found = 1;
                }
        if (!found) return ierr(I, s->pos, TSL_ERR_SEMANTIC, "thread %lld is in no group", (long long)t);
    } else {
        grp = t / inner;
        idx = t % inner;
    }
    int64_t outer[8];
    int no = g->nouter;
    if (no == 0) {
        outer[0] = grp;
        no = 1;
    } else {
        int64_t r = grp;
        for (int i = no - 1; i >= 0; i--) {
            outer[i] = r % g->outer[i];
            r /= g->outer[i];
        }
    }
    if (s->nvs == 1) {
        I->slots[s->vs[0]->id].ival = idx;
        return TSL_OK;
    }
    if (s->nvs != no + 1)
        return ierr(I, s->pos, TSL_ERR_SHAPE, "indices of '%s' give %d values, %d names", s->group->name,
                    no + 1, s->nvs);
    for (int i = 0; i < no; i++) I->slots[s->vs[i]->id].ival = outer[i];
    I->slots[s->vs[no]->id].ival = idx;
    return TSL_OK;
}

/* Slot of element i (register i/2, half i%2) of an ldmatrix destination
 * `R.local` (the thread's local part in row-major local order) or
 * `R.local.tile([a, b])` (register m = tile m of the tiles in row-major
 * order, half e = element e of the tile). -1 when it does not fit. */
static int64_t ldmatrix_slot(const rt_tensor *d, const tile_operand *dop, int i)
{
    int64_t ld[DIST_MAX_RANK], lc[DIST_MAX_RANK], sz[DIST_MAX_RANK], outer[DIST_MAX_RANK];
    int r = d->rlay->rank;
    local_shape(d->rlay, ld);
    int64_t m = i / 2, e = i % 2;
    if (dop->nsteps == 1) {
        int64_t x = i;
        for (int k = r - 1; k >= 0; k--) {
            lc[k] = x % ld[k];
            x /= ld[k];
        }
        return x ? -1 : local_slot(d->rlay, lc);
    }
    const tile_step *st = &dop->steps[1];
    for (int k = 0; k < r; k++) {
        int j = k - (r - st->n);
        sz[k] = j >= 0 ? st->sizes[j] : 1;
        if (sz[k] < 1 || ld[k] % sz[k]) return -1;
        outer[k] = ld[k] / sz[k];
    }
    for (int k = r - 1; k >= 0; k--) {
        lc[k] = (m % outer[k]) * sz[k] + e % sz[k];
        m /= outer[k];
        e /= sz[k];
    }
    return m || e ? -1 : local_slot(d->rlay, lc);
}

/* Record one thread's part of an ldmatrix: its source row (one row of 8
 * 16-bit elements of shared memory) and its 8 destination slots. */
static tsl_status record_ldmatrix(interp *I, decomp_ctx *dc, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    atom_rec *r = NULL;
    if (strncmp(in->atom, "ldmatrix.x4", 11) != 0)
        return ierr(I, s->pos, TSL_ERR_UNAVAILABLE, "atom %s: the interpreter knows ldmatrix.x4[.trans]", in->atom);
    for (int i = 0; i < dc->nrec; i++)
        if (dc->rec[i].s == s) r = &dc->rec[i];
    if (!r) {
        if (dc->nrec == MAX_ATOMS) return ierr(I, s->pos, TSL_ERR_UNAVAILABLE, "too many atoms in one decomposition");
        r = &dc->rec[dc->nrec++];
        memset(r, 0, sizeof *r);
        r->s = s;
        r->src = calloc((size_t)I->nthreads * 16, sizeof(int64_t));
        r->dslot = calloc((size_t)I->nthreads * 8, sizeof(int64_t));
        if (!r->src || !r->dslot) return ierr(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    }
    const tile_operand *dop = in->has_dst ? &in->dst : NULL;
    if (!dop || !dop->v || dop->nsteps < 1 || dop->nsteps > 2 || dop->steps[0].kind != TILE_STEP_LOCAL ||
        (dop->nsteps == 2 && dop->steps[1].kind != TILE_STEP_TILE))
        return ierr(I, s->pos, TSL_ERR_SEMANTIC,
                    "ldmatrix atom: write '-> R.local' or '-> R.local.tile([..])' (the thread's registers)");
    rt_tensor *d = I->slots[dop->v->id].t;
    if (!d || d->space != TILE_REGISTER || d->nlocals != 8 || d->dt.bits != 16)
        return ierr(I, dop->pos, TSL_ERR_SHAPE,
                    "ldmatrix.x4: '%s' must be a 16-bit register tensor with 8 slots per thread", dop->v->name);
    r->dst = d;
    for (int i = 0; i < 8; i++) {
        int64_t sl = ldmatrix_slot(d, dop, i);
        if (sl < 0 || sl >= 8)
            return ierr(I, dop->pos, TSL_ERR_SHAPE, "ldmatrix.x4: register %d of the destination is not in '%s.local'",
                        i / 2, dop->v->name);
        r->dslot[dc->thread * 8 + i] = sl;
    }
    tsl_status st = view_of(I, &in->args[0], &r->view);
    if (st) return st;
    if (r->view.t->space != TILE_SHARED || r->view.rank != 2 || r->view.t->dt.bits != 16)
        return ierr(I, in->args[0].pos, TSL_ERR_SHAPE, "ldmatrix.x4 reads a 16-bit rank-2 shared tile");
    if (r->view.ext[0] > 1 || (r->view.ext[1] >= 0 && r->view.ext[1] != 8))
        return ierr(I, in->args[0].pos, TSL_ERR_SHAPE, "ldmatrix.x4: each thread supplies one row of 8 elements");
    for (int j = 0; j < 8; j++) {
        int64_t vc[2] = {0, j}, c[2];
        view_map(&r->view, vc, c);
        r->src[dc->thread * 16 + 2 * j] = c[0];
        r->src[dc->thread * 16 + 2 * j + 1] = c[1];
    }
    r->ok = 1;
    return TSL_OK;
}

/* ---- per-thread moves inside a decomposition -------------------------------------------
 * An inner load/store/copy that is not a collective atom moves this
 * thread's elements one by one (what `st.shared.v2` and friends do): the
 * k-th element of the source box, row-major, goes to the k-th of the
 * destination box. Register operands are the thread's `.local` part. */
static tsl_status elem_get(interp *I, size_t pos, const rt_view *vw, const int64_t *vc, int64_t th, double *out)
{
    int64_t c[IMAX_RANK];
    view_map(vw, vc, c);
    const rt_tensor *t = vw->t;
    if (vw->local) {
        int64_t sl = local_slot(t->rlay, c);
        if (sl < 0 || th >= t->nthreads) return ierr(I, pos, TSL_ERR_BOUNDS, "outside %s.local", vw->name);
        *out = t->regs[th * t->nlocals + sl];
        return TSL_OK;
    }
    if (t->space == TILE_SHARED) return shared_get(I, pos, vw, c, th, out);
    if (t->space == TILE_GLOBAL) {
        *out = in_dims(t, c) ? global_get(t, c) : 0;
        return TSL_OK;
    }
    return ierr(I, pos, TSL_ERR_SEMANTIC, "a register tensor inside a decomposition is used as '%s.local'", vw->name);
}

static tsl_status elem_put(interp *I, size_t pos, const rt_view *vw, const int64_t *vc, int64_t th, double v,
                           int async)
{
    int64_t c[IMAX_RANK];
    view_map(vw, vc, c);
    rt_tensor *t = vw->t;
    if (vw->local) {
        int64_t sl = local_slot(t->rlay, c);
        if (sl < 0 || th >= t->nthreads) return ierr(I, pos, TSL_ERR_BOUNDS, "outside %s.local", vw->name);
        t->regs[th * t->nlocals + sl] = round_to(t->dt, v);
        return TSL_OK;
    }
    if (t->space == TILE_SHARED) return shared_put(I, pos, vw, c, th, v, async);
    if (t->space == TILE_GLOBAL) {
        if (in_dims(t, c)) global_set(t, c, v);
        return TSL_OK;
    }
    return ierr(I, pos, TSL_ERR_SEMANTIC, "a register tensor inside a decomposition is used as '%s.local'", vw->name);
}

static tsl_status exec_thread_move(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (!in->has_dst || in->nargs < 1 || !in->args[0].v)
        return ierr(I, s->pos, TSL_ERR_UNAVAILABLE,
                    "inside a decomposition the interpreter runs moves 'op SRC -> DST' (and ldmatrix)");
    rt_view a, b;
    tsl_status st = view_of(I, &in->args[0], &a);
    if (!st) st = view_of(I, &in->dst, &b);
    if (st) return st;
    int64_t na = 1, nb = 1, ea[IMAX_RANK], eb[IMAX_RANK];
    for (int i = 0; i < a.rank; i++) {
        int j = i - (a.rank - b.rank);
        ea[i] = a.ext[i] >= 0 ? a.ext[i] : j >= 0 && b.ext[j] >= 0 ? b.ext[j] : 1;
        na *= ea[i];
    }
    for (int i = 0; i < b.rank; i++) {
        int j = i - (b.rank - a.rank);
        eb[i] = b.ext[i] >= 0 ? b.ext[i] : j >= 0 ? ea[j] : 1;
        nb *= eb[i];
    }
    if (na != nb)
        return ierr(I, s->pos, TSL_ERR_SHAPE, "this thread moves %lld elements of '%s' into %lld of '%s'",
                    (long long)na, a.name, (long long)nb, b.name);
    for (int64_t k = 0; k < na; k++) {
        int64_t va[IMAX_RANK], vb[IMAX_RANK], x = k, y = k;
        for (int i = a.rank - 1; i >= 0; i--) {
            va[i] = x % ea[i];
            x /= ea[i];
        }
        for (int i = b.rank - 1; i >= 0; i--) {
            vb[i] = y % eb[i];
            y /= eb[i];
        }
        double v;
        if ((st = elem_get(I, s->pos, &a, va, I->cur_thread, &v)) ||
            (st = elem_put(I, s->pos, &b, vb, I->cur_thread, v, in->op == TILE_I_COPY_ASYNC)))
            return st;
    }
    return TSL_OK;
}

/* Run the recorded ldmatrix warp by warp. */
static tsl_status run_ldmatrix(interp *I, atom_rec *r)
{
    const tile_stmt *s = r->s;
    int trans = strstr(s->instr.atom, "trans") != NULL;
    rt_tensor *d = r->dst;
    if (I->nthreads % 32)
        return ierr(I, s->pos, TSL_ERR_SHAPE, "ldmatrix needs whole warps; the block has %d threads", I->nthreads);
    static double rows[32][8], out[32][8];
    for (int w = 0; w < I->nthreads / 32; w++) {
        if (w * 32 >= d->nthreads) break;
        for (int l = 0; l < 32; l++)
            for (int j = 0; j < 8; j++) {
                int64_t th = w * 32 + l, *c = &r->src[th * 16 + 2 * j];
                tsl_status st = shared_get(I, s->pos, &r->view, c, th, &rows[l][j]);
                if (st) return st;
            }
        iatom_ldmatrix_x4(rows, trans, out);
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 8; i++)
                d->regs[(w * 32 + l) * 8 + r->dslot[(w * 32 + l) * 8 + i]] = round_to(d->dt, out[l][i]);
    }
    return TSL_OK;
}

static tsl_status exec_decomp_stmt(interp *I, decomp_ctx *dc, const tile_stmt *s)
{
    int64_t v;
    tsl_status st;
    switch (s->kind) {
    case TILE_S_LET:
    case TILE_S_VAR:
    case TILE_S_SET:
        if ((st = eval_int(I, s->e, &v))) return st;
        I->slots[s->v->id].ival = v;
        return TSL_OK;
    case TILE_S_THREADS: return TSL_OK;
    case TILE_S_INDICES: return exec_indices(I, s);
    case TILE_S_IF:
        if ((st = eval_int(I, s->e, &v))) return st;
        if (v) return exec_decomp_block(I, dc, s->body);
        return s->els ? exec_decomp_block(I, dc, s->els) : TSL_OK;
    case TILE_S_INSTR: break;
    default:
        return ierr(I, s->pos, TSL_ERR_UNAVAILABLE,
                    "the interpreter runs only let/indices/if and atoms inside a decomposition");
    }
    const tile_instr *in = &s->instr;
    if (in->decomp) return exec_decomp_block(I, dc, in->decomp);
    if (in->op == TILE_I_LOAD_SHARED && in->atom && !strncmp(in->atom, "ldmatrix", 8))
        return record_ldmatrix(I, dc, s);
    switch (in->op) {
    case TILE_I_LOAD_GLOBAL:
    case TILE_I_STORE_GLOBAL:
    case TILE_I_LOAD_SHARED:
    case TILE_I_STORE_SHARED:
    case TILE_I_COPY_ASYNC:
    case TILE_I_COPY: return exec_thread_move(I, s);
    case TILE_I_COMMIT:
    case TILE_I_WAIT:
    case TILE_I_SYNC:
        return ierr(I, s->pos, TSL_ERR_UNAVAILABLE, "%s inside a decomposition: put it outside",
                    tile_op_info_of(in->op)->name);
    default: break;
    }
    return ierr(I, s->pos, TSL_ERR_UNAVAILABLE, "%s%s%s: not an atom the interpreter knows inside a decomposition",
                tile_op_info_of(in->op)->name, in->atom ? " atom " : "", in->atom ? in->atom : "");
}

static tsl_status exec_decomp_block(interp *I, decomp_ctx *dc, const tile_block *b)
{
    for (int i = 0; i < b->n; i++) {
        tsl_status st = exec_decomp_stmt(I, dc, b->items[i]);
        if (st) return st;
    }
    return TSL_OK;
}

static tsl_status exec_decomp(interp *I, const tile_stmt *s)
{
    /* the instruction's own result is the storage its atoms write */
    rt_tensor *d = NULL;
    tsl_status st = TSL_OK;
    if (s->instr.result && s->instr.result->type.space == TILE_REGISTER && (st = tensor_of(I, s->instr.result, &d)))
        return st;
    if (d)
        for (int64_t i = 0; i < d->nthreads * d->nlocals; i++) d->regs[i] = NAN;
    decomp_ctx dc;
    memset(&dc, 0, sizeof dc);
    for (int64_t t = 0; t < I->nthreads && !st; t++) {
        I->cur_thread = t;
        dc.thread = t;
        st = exec_decomp_block(I, &dc, s->instr.decomp);
    }
    I->cur_thread = -1;
    for (int i = 0; i < dc.nrec && !st; i++) st = run_ldmatrix(I, &dc.rec[i]);
    for (int i = 0; i < dc.nrec; i++) {
        free(dc.rec[i].src);
        free(dc.rec[i].dslot);
    }
    return st;
}

/* ---- pipelines (the unexpanded semantics) --------------------------------------------------
 * pipeline(grid, stages, in, out) { body } means: for every grid point in
 * row-major order (last axis fastest), each in-block whose index changed
 * (or the first) is copied in, each out-block whose index changed is
 * written back first; after the last point every out-block is written
 * back. An out-block stays resident while its index does not change, so
 * accumulation over the last grid axis works (Pallas). The stage count
 * does not change the result; pipeline.c expands it into async copies
 * that must give the same answer. */

static tsl_status block_tensor(interp *I, const tile_blockspec *bs, rt_tensor **out)
{
    rt_tensor *t = &I->tensors[bs->view->id];
    t->space = bs->space;
    t->dt = bs->tensor->type.dt;
    t->rank = bs->rank;
    for (int i = 0; i < bs->rank; i++) t->dims[i] = bs->block[i];
    if (bs->space == TILE_SHARED) {
        if (tile_dtype_to_tsl(t->dt, &t->tdt))
            return ierr(I, bs->pos, TSL_ERR_UNAVAILABLE, "block of '%s': dtype not byte-sized", bs->tensor->name);
        t->soff = I->soff[bs->view->id];
        t->slay = bs->layout && bs->layout->v.kind == LAYOUT_VALUE_DATA ? &bs->layout->v.data : NULL;
    } else {
        if (!bs->layout || bs->layout->v.kind != LAYOUT_VALUE_DIST)
            return ierr(I, bs->pos, TSL_ERR_SEMANTIC, "a register block needs a distributed layout");
        t->rlay = &bs->layout->v.dist;
        t->nthreads = t->rlay->threads;
        t->nlocals = t->rlay->locals;
        int64_t n = t->nthreads * t->nlocals;
        if (n > t->cap) {
            double *r = realloc(t->regs, (size_t)n * sizeof *r);
            if (!r) return ierr(I, bs->pos, TSL_ERR_NOMEM, "out of memory");
            t->regs = r;
            t->cap = n;
        }
    }
    I->slots[bs->view->id].t = t;
    *out = t;
    return TSL_OK;
}

/* Move one block between global (at block index idx) and its storage. */
static tsl_status block_move(interp *I, const tile_blockspec *bs, const int64_t *idx, int in)
{
    rt_tensor *t = I->slots[bs->view->id].t, *g = I->slots[bs->tensor->id].t;
    rt_view vw;
    tile_operand o = tile_operand_tensor(bs->view);
    tsl_status st = view_of(I, &o, &vw);
    if (st) return st;
    imem_sync(&I->sm);
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    for (int64_t e = 0; e < n; e++) {
        int64_t c[IMAX_RANK], gc[IMAX_RANK], r = e;
        for (int i = t->rank - 1; i >= 0; i--) {
            c[i] = r % t->dims[i];
            r /= t->dims[i];
        }
        for (int i = 0; i < t->rank; i++) gc[i] = idx[i] * bs->block[i] + c[i];
        int inb = in_dims(g, gc);
        if (t->space == TILE_SHARED) {
            double v = 0;
            if (in) {
                v = inb ? global_get(g, gc) : 0;
                if ((st = shared_put(I, bs->pos, &vw, c, e % I->nthreads, v, 0))) return st;
            } else {
                if ((st = shared_get(I, bs->pos, &vw, c, e % I->nthreads, &v))) return st;
                if (inb) global_set(g, gc, v);
            }
        } else {
            int64_t full[DIST_MAX_RANK], th, l;
            int lead = t->rlay->rank - t->rank;
            for (int i = 0; i < lead; i++) full[i] = 0;
            for (int i = 0; i < t->rank; i++) full[lead + i] = c[i];
            if (in) {
                int64_t ths[64], los[64];
                int64_t no = dist_layout_owners(t->rlay, full, ths, los, 64);
                double v = inb ? global_get(g, gc) : 0;
                for (int64_t k = 0; k < no && k < 64; k++) t->regs[ths[k] * t->nlocals + los[k]] = round_to(t->dt, v);
            } else if (!dist_layout_owner(t->rlay, full, &th, &l) && inb) {
                global_set(g, gc, t->regs[th * t->nlocals + l]);
            }
        }
    }
    imem_sync(&I->sm);
    return TSL_OK;
}

static tsl_status exec_pipeline(interp *I, const tile_stmt *s)
{
    const tile_pipeline *p = &s->pipe;
    int64_t ext[8], pt[8], total = 1;
    tsl_status st;
    if (p->ngrid > 8) return ierr(I, s->pos, TSL_ERR_UNAVAILABLE, "pipeline grid rank > 8");
    for (int i = 0; i < p->ngrid; i++) {
        if ((st = eval_int(I, p->grid[i], &ext[i]))) return st;
        total *= ext[i] > 0 ? ext[i] : 0;
    }
    int nspec = p->nins + p->nouts;
    int64_t (*prev)[IMAX_RANK] = calloc((size_t)(nspec ? nspec : 1), sizeof *prev);
    if (!prev) return ierr(I, s->pos, TSL_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nspec && !st; i++) {
        const tile_blockspec *bs = i < p->nins ? &p->ins[i] : &p->outs[i - p->nins];
        rt_tensor *t = NULL;
        st = block_tensor(I, bs, &t);
        if (!st && t->space == TILE_REGISTER)
            for (int64_t j = 0; j < t->nthreads * t->nlocals; j++) t->regs[j] = NAN;
    }
    for (int64_t it = 0; it < total && !st; it++) {
        int64_t r = it;
        for (int i = p->ngrid - 1; i >= 0; i--) {
            pt[i] = r % ext[i];
            r /= ext[i];
        }
        for (int i = 0; i < p->ngrid; i++) I->slots[p->gridvars[i]->id].ival = pt[i];
        for (int i = 0; i < nspec && !st; i++) {
            const tile_blockspec *bs = i < p->nins ? &p->ins[i] : &p->outs[i - p->nins];
            int64_t idx[IMAX_RANK];
            int changed = it == 0;
            for (int d = 0; d < bs->rank && !st; d++) {
                st = eval_int(I, bs->index[d], &idx[d]);
                changed |= idx[d] != prev[i][d];
            }
            if (st || !changed) continue;
            if (i < p->nins) st = block_move(I, bs, idx, 1);
            else if (it > 0) st = block_move(I, bs, prev[i], 0);
            memcpy(prev[i], idx, sizeof idx);
        }
        if (!st) st = exec_block(I, p->body ? p->body : s->body);
    }
    for (int i = p->nins; i < nspec && !st && total > 0; i++) st = block_move(I, &p->outs[i - p->nins], prev[i], 0);
    free(prev);
    return st;
}

/* ---- statements ------------------------------------------------------------------------------ */

static tsl_status exec_instr(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (in->decomp) return exec_decomp(I, s);
    switch (in->op) {
    case TILE_I_ALLOC: return exec_alloc(I, s);
    case TILE_I_LOAD_GLOBAL:
    case TILE_I_LOAD_SHARED: return exec_load(I, s);
    case TILE_I_STORE_GLOBAL:
    case TILE_I_STORE_SHARED: return exec_store(I, s);
    case TILE_I_COPY_ASYNC: return exec_copy_async(I, s);
    case TILE_I_COMMIT: imem_commit(&I->sm); return TSL_OK;
    case TILE_I_WAIT: {
        int64_t n = 0;
        tsl_status st = in->nargs && in->args[0].scalar ? eval_int(I, in->args[0].scalar, &n) : TSL_OK;
        if (st) return st;
        imem_wait(&I->sm, (int)n);
        return TSL_OK;
    }
    case TILE_I_SYNC: imem_sync(&I->sm); return TSL_OK;
    case TILE_I_MMA: return exec_mma(I, s);
    case TILE_I_VIEW: return exec_view(I, s);
    case TILE_I_REDUCE_SUM:
    case TILE_I_REDUCE_MAX:
    case TILE_I_REDUCE_MIN: return exec_reduce(I, s);
    case TILE_I_BROADCAST: return exec_broadcast(I, s);
    case TILE_I_SHUFFLE_XOR:
    case TILE_I_SHUFFLE_UP:
    case TILE_I_SHUFFLE_DOWN:
    case TILE_I_SHUFFLE_IDX: return exec_shuffle(I, s);
    case TILE_I_PRINT: return exec_print(I, s);
    default:
        if (in->op == TILE_I_CAST || in->op == TILE_I_COPY || tile_op_is_unary(in->op) ||
            tile_op_is_binary(in->op))
            return exec_elementwise(I, s);
        return ierr(I, s->pos, TSL_ERR_UNAVAILABLE, "the interpreter cannot run '%s'",
                    tile_op_info_of(in->op)->name);
    }
}

static tsl_status exec_stmt(interp *I, const tile_stmt *s)
{
    int64_t v, lo, hi, step = 1;
    tsl_status st;
    switch (s->kind) {
    case TILE_S_INSTR: return exec_instr(I, s);
    case TILE_S_LET:
    case TILE_S_VAR:
    case TILE_S_SET:
        if ((st = eval_int(I, s->e, &v))) return st;
        I->slots[s->v->id].ival = v;
        return TSL_OK;
    case TILE_S_THREADS: return TSL_OK;
    case TILE_S_INDICES: return exec_indices(I, s);
    case TILE_S_FOR:
        if ((st = eval_int(I, s->lo, &lo)) || (st = eval_int(I, s->hi, &hi)) ||
            (s->step && (st = eval_int(I, s->step, &step))))
            return st;
        if (step <= 0) return ierr(I, s->pos, TSL_ERR_RUNTIME, "for: step %lld is not positive", (long long)step);
        for (int64_t i = lo; i < hi; i += step) {
            I->slots[s->v->id].ival = i;
            if ((st = exec_block(I, s->body))) return st;
        }
        return TSL_OK;
    case TILE_S_IF:
        if ((st = eval_int(I, s->e, &v))) return st;
        if (v) return exec_block(I, s->body);
        return s->els ? exec_block(I, s->els) : TSL_OK;
    case TILE_S_WHILE:
        for (int64_t n = 0;; n++) {
            if ((st = eval_int(I, s->e, &v))) return st;
            if (!v) return TSL_OK;
            if (n > ((int64_t)1 << 32))
                return ierr(I, s->pos, TSL_ERR_RUNTIME, "while: more than 2^32 iterations");
            if ((st = exec_block(I, s->body))) return st;
        }
    case TILE_S_PIPELINE: return exec_pipeline(I, s);
    }
    return ierr(I, s->pos, TSL_ERR_INTERNAL, "unknown statement");
}

static tsl_status exec_block(interp *I, const tile_block *b)
{
    for (int i = 0; i < b->n; i++) {
        tsl_status st = exec_stmt(I, b->items[i]);
        if (st) return st;
    }
    return TSL_OK;
}

/* ---- shared memory plan ------------------------------------------------------------------------ */

static int64_t shared_bytes(const tile_type *ty, const int64_t *dims, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    if (ty && ty->layout && ty->layout->v.kind == LAYOUT_VALUE_DATA) {
        int64_t co = layout_cosize(&ty->layout->v.data);
        if (co > n) n = co;
    }
    return n * ((ty ? ty->dt.bits : 8) + 7) / 8;
}

static void plan_add(interp *I, int id, int64_t bytes)
{
    size_t off = (I->smem_used + 127) & ~(size_t)127;
    I->soff[id] = off;
    I->smem_used = off + (size_t)bytes;
}

/* Every shared tensor gets its own fixed range (allocations in loops reuse it). */
static tsl_status plan_block(interp *I, const tile_block *b)
{
    if (!b) return TSL_OK;
    for (int i = 0; i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        tsl_status st;
        if (s->kind == TILE_S_INSTR) {
            const tile_value *r = s->instr.result;
            if (s->instr.op == TILE_I_ALLOC && r && r->type.space == TILE_SHARED) {
                int64_t dims[IMAX_RANK];
                if ((st = const_dims(I, r, dims))) return st;
                plan_add(I, r->id, shared_bytes(&r->type, dims, r->type.rank));
            }
            if ((st = plan_block(I, s->instr.decomp))) return st;
        }
        if (s->kind == TILE_S_PIPELINE) {
            const tile_pipeline *p = &s->pipe;
            for (int j = 0; j < p->nins + p->nouts; j++) {
                const tile_blockspec *bs = j < p->nins ? &p->ins[j] : &p->outs[j - p->nins];
                if (bs->space != TILE_SHARED) continue;
                tile_type ty = {0};
                ty.dt = bs->tensor->type.dt;
                ty.layout = bs->layout;
                plan_add(I, bs->view->id, shared_bytes(&ty, bs->block, bs->rank));
            }
        }
        const tile_block *body = s->kind == TILE_S_PIPELINE && s->pipe.body ? s->pipe.body : s->body;
        if ((st = plan_block(I, body)) || (st = plan_block(I, s->els))) return st;
    }
    return TSL_OK;
}

/* ---- binding ---------------------------------------------------------------------------------- */

static const tile_interp_arg *find_arg(const tile_interp_arg *args, int nargs, const char *name)
{
    for (int i = 0; i < nargs; i++)
        if (args[i].name && !strcmp(args[i].name, name)) return &args[i];
    return NULL;
}

static int64_t sym_lookup(void *ctx, const tile_value *v, int *ok)
{
    const int64_t *vals = ((const int64_t *const *)ctx)[0];
    const tile_kernel *k = ((const tile_kernel *const *)ctx)[1];
    for (int i = 0; i < k->nsyms; i++)
        if (k->syms[i] == v) {
            if (vals[i] < 0) break;
            return vals[i];
        }
    *ok = 0;
    return 0;
}

tsl_status tile_interp_bind_symbols(const tile_kernel *k, const tile_interp_arg *args, int nargs,
                                    const char *const *size_names, const int64_t *size_vals,
                                    int nsizes, int64_t *sym_vals, tsl_diag *d)
{
    const char **from = calloc((size_t)(k->nsyms ? k->nsyms : 1), sizeof *from);
    int *from_dim = calloc((size_t)(k->nsyms ? k->nsyms : 1), sizeof *from_dim);
    tsl_status st = TSL_OK;
    if (!from || !from_dim) {
        free(from);
        free(from_dim);
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    for (int i = 0; i < k->nsyms; i++) sym_vals[i] = -1;
    for (int j = 0; j < nsizes; j++) {
        int found = 0;
        for (int i = 0; i < k->nsyms; i++)
            if (!strcmp(k->syms[i]->name, size_names[j])) {
                sym_vals[i] = size_vals[j];
                from[i] = "--size";
                found = 1;
            }
        if (!found) {
            diag_error(d, TSL_ERR_ARG, "kernel '%s' has no size symbol '%s'", k->name, size_names[j]);
            st = TSL_ERR_ARG;
        }
    }
    for (int p = 0; p < k->nparams && !st; p++) {
        const tile_value *v = k->params[p];
        const tile_interp_arg *a = find_arg(args, nargs, v->name);
        if (v->kind != TILE_V_TENSOR || !a || !a->t) continue;
        if (a->t->ndim != v->type.rank) {
            diag_error(d, TSL_ERR_SHAPE, "tensor '%s' has rank %d; kernel '%s' expects %d", v->name,
                       a->t->ndim, k->name, v->type.rank);
            st = TSL_ERR_SHAPE;
            break;
        }
        for (int i = 0; i < v->type.rank; i++) {
            const tile_expr *e = v->type.dims[i];
            if (!e || e->kind != TILE_E_VALUE || !e->v || e->v->origin != TILE_O_SYMBOL) continue;
            for (int s = 0; s < k->nsyms; s++) {
                if (k->syms[s] != e->v) continue;
                int64_t got = a->t->shape[i];
                if (sym_vals[s] >= 0 && sym_vals[s] != got) {
                    char fb[96];
                    if (from[s] && strcmp(from[s], "--size"))
                        snprintf(fb, sizeof fb, "%s dim %d", from[s], from_dim[s]);
                    else
                        snprintf(fb, sizeof fb, "--size");
                    diag_error(d, TSL_ERR_SHAPE, "size %s: %s dim %d is %lld but %s gives %lld",
                               e->v->name, v->name, i, (long long)got, fb, (long long)sym_vals[s]);
                    st = TSL_ERR_SHAPE;
                } else if (sym_vals[s] < 0) {
                    sym_vals[s] = got;
                    from[s] = v->name;
                    from_dim[s] = i;
                }
            }
        }
    }
    for (int i = 0; i < k->nsyms && !st; i++)
        if (sym_vals[i] < 0) {
            diag_error(d, TSL_ERR_SHAPE,
                       "size %s of kernel '%s' is not bound: no argument has it as a dim (give --size %s=N)",
                       k->syms[i]->name, k->name, k->syms[i]->name);
            st = TSL_ERR_SHAPE;
        }
    free(from);
    free(from_dim);
    return st;
}

tsl_status tile_interp_param_shape(const tile_kernel *k, const tile_value *p, const int64_t *sym_vals,
                                   int64_t *shape, tsl_diag *d)
{
    const void *ctx[2] = {sym_vals, k};
    for (int i = 0; i < p->type.rank; i++) {
        int ok = 1;
        shape[i] = tile_expr_eval(p->type.dims[i], sym_lookup, (void *)ctx, NULL, -1, &ok);
        if (!ok || shape[i] < 0) {
            diag_error(d, TSL_ERR_SHAPE, "dim %d of '%s' cannot be evaluated from the sizes", i, p->name);
            return TSL_ERR_SHAPE;
        }
    }
    return TSL_OK;
}

static void outputs_in(const tile_block *b, char *w)
{
    if (!b) return;
    for (int i = 0; i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR) {
            if (s->instr.op == TILE_I_STORE_GLOBAL && s->instr.has_dst && s->instr.dst.v)
                w[s->instr.dst.v->id] = 1;
            outputs_in(s->instr.decomp, w);
        }
        if (s->kind == TILE_S_PIPELINE)
            for (int j = 0; j < s->pipe.nouts; j++) w[s->pipe.outs[j].tensor->id] = 1;
        outputs_in(s->kind == TILE_S_PIPELINE && s->pipe.body ? s->pipe.body : s->body, w);
        outputs_in(s->els, w);
    }
}

int tile_interp_outputs(const tile_kernel *k, const tile_value **out, int max)
{
    char *w = calloc((size_t)k->nvalues + 1, 1);
    int n = 0;
    if (!w) return 0;
    outputs_in(k->body, w);
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i]->kind == TILE_V_TENSOR && w[k->params[i]->id] && n < max) out[n++] = k->params[i];
    free(w);
    return n;
}

/* Bind every parameter; global tensors become runtime tensors. */
static tsl_status bind_params(interp *I, const tile_interp_arg *args, int nargs, const int64_t *symv)
{
    const tile_kernel *k = I->k;
    for (int i = 0; i < k->nsyms; i++) I->slots[k->syms[i]->id].ival = symv[i];
    for (int p = 0; p < k->nparams; p++) {
        const tile_value *v = k->params[p];
        const tile_interp_arg *a = find_arg(args, nargs, v->name);
        if (!a)
            return ierr(I, v->pos, TSL_ERR_ARG, "kernel '%s': parameter '%s' is not bound", k->name, v->name);
        if (v->kind == TILE_V_SCALAR) {
            I->slots[v->id].ival = a->ival;
            continue;
        }
        if (!a->t) return ierr(I, v->pos, TSL_ERR_ARG, "parameter '%s' needs a tensor", v->name);
        const DLTensor *t = a->t;
        rt_tensor *r = &I->tensors[v->id];
        tsl_dtype dt;
        char nb[16];
        if (tsl_dtype_from_dlpack(t->dtype, &dt) || tile_dtype_to_tsl(v->type.dt, &r->tdt) || dt != r->tdt)
            return ierr(I, v->pos, TSL_ERR_SHAPE, "tensor '%s' should be %s", v->name,
                        tile_dtype_name(v->type.dt, nb));
        if (t->device.device_type != kDLCPU)
            return ierr(I, v->pos, TSL_ERR_ARG, "tensor '%s' is not in host memory", v->name);
        int64_t want[IMAX_RANK];
        if (v->type.rank > IMAX_RANK || t->ndim != v->type.rank)
            return ierr(I, v->pos, TSL_ERR_SHAPE, "tensor '%s' has rank %d; expected %d", v->name, t->ndim,
                        v->type.rank);
        tsl_status st = const_dims(I, v, want);
        if (st) return st;
        r->space = TILE_GLOBAL;
        r->dt = v->type.dt;
        r->rank = t->ndim;
        int64_t acc = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            if (t->shape[i] != want[i])
                return ierr(I, v->pos, TSL_ERR_SHAPE, "tensor '%s' dim %d is %lld; the kernel says %lld",
                            v->name, i, (long long)t->shape[i], (long long)want[i]);
            r->dims[i] = t->shape[i];
            r->gstride[i] = t->strides ? t->strides[i] : acc;
            acc *= t->shape[i];
        }
        r->gdata = (char *)t->data + t->byte_offset;
        I->slots[v->id].t = r;
    }
    return TSL_OK;
}

/* ---- the grid ------------------------------------------------------------------------------------ */

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

tsl_status tile_interp_run(const tile_kernel *k, const tsl_source *src, const tile_interp_arg *args,
                           int nargs, const tile_interp_opts *opts, tsl_diag *d)
{
    tile_interp_opts defo = {0};
    interp I0, *I = &I0;
    memset(I, 0, sizeof *I);
    I->k = k;
    I->src = src;
    I->d = d;
    I->o = opts ? opts : &defo;
    I->out = I->o->print_to ? I->o->print_to : stdout;
    I->nthreads = k->threads;
    I->cur_thread = -1;
    tsl_status st = TSL_OK;
    int64_t *symv = calloc((size_t)k->nsyms + 1, sizeof *symv);
    I->slots = calloc((size_t)k->nvalues + 1, sizeof *I->slots);
    I->tensors = calloc((size_t)k->nvalues + 1, sizeof *I->tensors);
    I->soff = calloc((size_t)k->nvalues + 1, sizeof *I->soff);
    int64_t *order = NULL;
    if (!symv || !I->slots || !I->tensors || !I->soff) {
        st = ierr(I, k->pos, TSL_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (k->threads < 1 || k->threads > 1024) {
        st = ierr(I, k->pos, TSL_ERR_SEMANTIC, "kernel '%s': %d threads per block (1..1024)", k->name, k->threads);
        goto done;
    }
    if ((st = tile_interp_bind_symbols(k, args, nargs, NULL, NULL, 0, symv, d))) goto done;
    if ((st = bind_params(I, args, nargs, symv))) goto done;
    if ((st = plan_block(I, k->body))) goto done;
    int64_t budget = I->o->smem_budget ? I->o->smem_budget : k->smem_budget ? k->smem_budget : DEFAULT_SMEM;
    if ((int64_t)I->smem_used > budget) {
        st = ierr(I, k->pos, TSL_ERR_SHAPE,
                  "kernel '%s' needs %zu bytes of shared memory; the budget is %lld bytes", k->name,
                  I->smem_used, (long long)budget);
        goto done;
    }
    if (imem_init(&I->sm, I->smem_used)) {
        st = ierr(I, k->pos, TSL_ERR_NOMEM, "out of memory for %zu bytes of shared memory", I->smem_used);
        goto done;
    }
    int64_t gdim[3] = {1, 1, 1}, nblocks = 1;
    for (int i = 0; i < k->ngrid && i < 3; i++) {
        if ((st = eval_int(I, k->grid[i], &gdim[i]))) goto done;
        if (gdim[i] < 0) gdim[i] = 0;
        nblocks *= gdim[i];
    }
    order = malloc((size_t)(nblocks ? nblocks : 1) * sizeof *order);
    if (!order) {
        st = ierr(I, k->pos, TSL_ERR_NOMEM, "out of memory for %lld blocks", (long long)nblocks);
        goto done;
    }
    for (int64_t b = 0; b < nblocks; b++) order[b] = b;
    if (I->o->shuffle_blocks) {
        uint64_t seed = I->o->seed;
        for (int64_t b = nblocks - 1; b > 0; b--) {
            int64_t j = (int64_t)(mix(&seed) % (uint64_t)(b + 1)), t = order[b];
            order[b] = order[j];
            order[j] = t;
        }
    }
    I->in_grid = 1;
    for (int64_t b = 0; b < nblocks && !st; b++) {
        int64_t x = order[b];
        I->bidx[0] = x % gdim[0];
        I->bidx[1] = (x / gdim[0]) % gdim[1];
        I->bidx[2] = x / (gdim[0] * gdim[1]);
        imem_reset(&I->sm);
        st = exec_block(I, k->body);
    }
done:
    if (I->tensors)
        for (int i = 0; i < k->nvalues; i++) free(I->tensors[i].regs);
    imem_free(&I->sm);
    free(order);
    free(symv);
    free(I->slots);
    free(I->tensors);
    free(I->soff);
    return st;
}
