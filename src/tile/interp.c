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
 * The collective atoms (mma, ldmatrix) run by the target tables' reference
 * semantics (src/target/atom.c). */
#include "tile/decomp.h"
#include "tile/interp_impl.h"

/* ---- errors ---------------------------------------------------------------- */

tsl_status interp_err(interp *I, size_t pos, tsl_status st, const char *fmt, ...)
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

void interp_coord_str(char *buf, size_t n, const int64_t *c, int rank)
{
    size_t at = 0;
    for (int i = 0; i < rank && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "," : "", (long long)c[i]);
    if (rank == 0 && n) buf[0] = 0;
}

/* ---- numbers ------------------------------------------------------------------ */

/* v rounded to what an element of dt can hold (f16/bf16 to nearest even,
 * f32 through float, ints wrapped to their width). */
double interp_round(tile_dtype dt, double v)
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
        if (dt.bits >= 64) { /* wrapped as the 64-bit integer would be (-1 as u64: 2^64 - 1) */
            if (dt.kind == TILE_DT_UINT && t < 0 && t >= -18446744073709551616.0) return t + 18446744073709551616.0;
            if (dt.kind == TILE_DT_INT && t >= 9223372036854775808.0 && t < 18446744073709551616.0)
                return t - 18446744073709551616.0;
            return t;
        }
        if (t > 9.2e18 || t < -9.2e18) return 0;
        uint64_t mask = (1ull << dt.bits) - 1, u = (uint64_t)(int64_t)t & mask;
        if (dt.kind == TILE_DT_INT && (u >> (dt.bits - 1)) & 1) return (double)(int64_t)(u | ~mask);
        return (double)u;
    }
    }
    return v;
}

size_t interp_dt_bytes(tsl_dtype t)
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

tsl_status interp_eval_int(interp *I, const tile_expr *e, int64_t *out)
{
    int ok = 1;
    *out = tile_expr_eval(e, lookup, I, I->bidx, I->cur_thread, &ok);
    if (!ok)
        return interp_err(I, e ? e->pos : 0, TSL_ERR_RUNTIME,
                    "cannot evaluate this expression here (division by zero, 64-bit overflow, or "
                    "thread_idx outside a decomposition)");
    return TSL_OK;
}

/* A scalar operand or fill value as a double (float literals kept). */
tsl_status interp_eval_num(interp *I, const tile_expr *e, double *out)
{
    if (e && e->kind == TILE_E_FLOAT) {
        *out = e->f;
        return TSL_OK;
    }
    if (e && e->kind == TILE_E_VALUE && tile_value_is_typed_scalar(e->v)) {
        *out = I->slots[e->v->id].fval; /* alpha: f32 as an operand */
        return TSL_OK;
    }
    if (e && e->kind == TILE_E_NEG && e->a && e->a->kind == TILE_E_FLOAT) {
        *out = -e->a->f;
        return TSL_OK;
    }
    int64_t v;
    tsl_status st = interp_eval_int(I, e, &v);
    *out = (double)v;
    return st;
}

/* ---- tensors -------------------------------------------------------------------- */

static tsl_status const_dims(interp *I, const tile_value *v, int64_t *dims)
{
    if (v->type.rank > IMAX_RANK)
        return interp_err(I, v->pos, TSL_ERR_SEMANTIC, "tensor '%s' has rank %d; at most %d", v->name,
                    v->type.rank, IMAX_RANK);
    for (int i = 0; i < v->type.rank; i++) {
        tsl_status st = interp_eval_int(I, v->type.dims[i], &dims[i]);
        if (st) return st;
        if (dims[i] < (v->type.space == TILE_GLOBAL ? 0 : 1)) /* global tensors may be empty */
            return interp_err(I, v->pos, TSL_ERR_SHAPE, "tensor '%s' dim %d is %lld", v->name, i,
                        (long long)dims[i]);
    }
    return TSL_OK;
}

/* Storage of a shared or register tensor defined by value v (reused each
 * time its defining statement runs again). */
tsl_status interp_tensor_of(interp *I, const tile_value *v, rt_tensor **out)
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
            return interp_err(I, v->pos, TSL_ERR_UNAVAILABLE,
                        "shared tensor '%s': the interpreter holds only byte-sized dtypes here",
                        v->name);
        t->soff = I->soff[v->id] + (size_t)I->crank * I->cspan;
        t->slay = ty->layout ? &ty->layout->v.data : NULL;
        if (ty->layout && ty->layout->v.kind != LAYOUT_VALUE_DATA)
            return interp_err(I, v->pos, TSL_ERR_SEMANTIC, "shared tensor '%s' needs a data layout",
                        v->name);
    } else if (ty->space == TILE_REGISTER) {
        if (!ty->layout || ty->layout->v.kind != LAYOUT_VALUE_DIST)
            return interp_err(I, v->pos, TSL_ERR_SEMANTIC,
                        "register tensor '%s' needs a distributed layout", v->name);
        if (t->wg_busy) return interp_wgmma_busy(I, v->pos, v->name, 1);
        t->wseq = ++I->seq;
        t->rlay = &ty->layout->v.dist;
        if (t->rlay->threads > I->nthreads)
            return interp_err(I, v->pos, TSL_ERR_SHAPE,
                        "register tensor '%s': its layout spans %lld threads, the block has %d",
                        v->name, (long long)t->rlay->threads, I->nthreads);
        t->nthreads = t->rlay->threads;
        t->nlocals = t->rlay->locals;
        int64_t n = t->nthreads * t->nlocals;
        if (n > t->cap) {
            double *r = realloc(t->regs, (size_t)n * sizeof *r);
            if (!r) return interp_err(I, v->pos, TSL_ERR_NOMEM, "out of memory for registers of '%s'", v->name);
            t->regs = r;
            t->cap = n;
        }
    } else {
        return interp_err(I, v->pos, TSL_ERR_INTERNAL, "global tensor '%s' has no storage here", v->name);
    }
    I->slots[v->id].t = t;
    *out = t;
    return TSL_OK;
}

/* Is coord inside t's dims? */
int interp_in_dims(const rt_tensor *t, const int64_t *c)
{
    for (int i = 0; i < t->rank; i++)
        if (c[i] < 0 || c[i] >= t->dims[i]) return 0;
    return 1;
}

/* Byte offset of a shared element. */
size_t interp_shared_off(const rt_tensor *t, const int64_t *c)
{
    int64_t e;
    if (t->slay) {
        e = layout_eval_coord(t->slay, c, t->rank);
    } else {
        e = 0;
        for (int i = 0; i < t->rank; i++) e = e * t->dims[i] + c[i];
    }
    return t->soff + (size_t)e * interp_dt_bytes(t->tdt);
}

/* The register tensor's coordinate of (thread, local); 0 if it is outside
 * the tensor's dims (a layout may cover more than the tensor). */
int interp_reg_coord(const rt_tensor *t, int64_t th, int64_t l, int64_t *c)
{
    int64_t full[DIST_MAX_RANK];
    if (dist_layout_map(t->rlay, th, l, full)) return 0;
    int lr = t->rlay->rank;
    /* layout rank may exceed the tensor's by leading 1s */
    for (int i = 0; i < t->rank; i++) c[i] = full[lr - t->rank + i];
    for (int i = 0; i < lr - t->rank; i++)
        if (full[i]) return 0;
    return interp_in_dims(t, c);
}

/* ---- a thread's local part ------------------------------------------------------------
 * `R.local` is the thread's slots seen as a tensor whose shape is the
 * product of the layout's local factors per dim, in slot order (row-major:
 * slot k is the k-th element). So local(2,2).spatial(8,4).local(1,2) has
 * local shape [2, 4]; local coordinate (i, j) is slot 4i + j. The view is
 * positional, not logical: a decomposition written for one layout moves
 * the wrong elements under another (as the hardware would). */
void interp_local_shape(const dist_layout *l, int64_t *ld)
{
    tile_local_shape(l, ld);
}

/* Slot of local coordinate lc; -1 outside the local shape. */
int64_t interp_local_slot(const dist_layout *l, const int64_t *lc)
{
    int64_t ld[DIST_MAX_RANK], slot = 0;
    interp_local_shape(l, ld);
    for (int i = 0; i < l->rank; i++) {
        if (lc[i] < 0 || lc[i] >= ld[i]) return -1;
        slot = slot * ld[i] + lc[i];
    }
    return slot;
}

/* ---- views ------------------------------------------------------------------------ */

tsl_status interp_view_of(interp *I, const tile_operand *o, rt_view *vw)
{
    memset(vw, 0, sizeof *vw);
    if (!o->v || o->v->kind != TILE_V_TENSOR)
        return interp_err(I, o->pos, TSL_ERR_SEMANTIC, "expected a tensor operand");
    rt_tensor *t = I->slots[o->v->id].t;
    if (!t) return interp_err(I, o->pos, TSL_ERR_RUNTIME, "tensor '%s' used before it is defined", o->v->name);
    if (t->wg_busy) return interp_wgmma_busy(I, o->pos, o->v->name, 0);
    vw->t = t;
    vw->name = o->v->name;
    vw->rank = t->rank;
    for (int i = 0; i < t->rank; i++) vw->ext[i] = -1;
    for (int s = 0; s < o->nsteps; s++) {
        const tile_step *st = &o->steps[s];
        if (st->kind == TILE_STEP_LOCAL) {
            if (I->cur_thread < 0 || s != 0 || t->space != TILE_REGISTER)
                return interp_err(I, st->pos, TSL_ERR_SEMANTIC,
                            "'.local' is the thread's part of a register tensor, inside a decomposition");
            vw->local = 1;
            vw->rank = t->rlay->rank;
            interp_local_shape(t->rlay, vw->ldims);
            for (int i = 0; i < vw->rank; i++) vw->ext[i] = vw->ldims[i];
            continue;
        }
        if (st->n > vw->rank)
            return interp_err(I, st->pos, TSL_ERR_SHAPE, "%d indices for '%s' of rank %d", st->n,
                        vw->name, vw->rank);
        if (st->kind == TILE_STEP_TILE) {
            if (vw->tiled)
                return interp_err(I, st->pos, TSL_ERR_SEMANTIC, "tile of a tensor of tiles: index it first");
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
                tsl_status e = interp_eval_int(I, st->idx[i], &x);
                if (e) return e;
            }
            if (vw->nchain[i] == IMAX_CHAIN)
                return interp_err(I, st->pos, TSL_ERR_UNAVAILABLE, "view chain too deep");
            vstep stp = {NULL, x};
            if (vw->tiled) {
                int64_t size = vw->psize[i];
                if (vw->ptiler[i]) {
                    /* tile x of a non-contiguous tiler: offset = complement(tiler)(x) */
                    layout comp;
                    layout_err le = {{0}, 0};
                    int64_t ext = vw->ext[i] >= 0 ? vw->ext[i] : vw->local ? vw->ldims[i] : t->dims[i];
                    if (layout_complement(&comp, vw->ptiler[i], ext, &le))
                        return interp_err(I, st->pos, TSL_ERR_SEMANTIC, "tile of '%s' dim %d: %s",
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
        return interp_err(I, o->pos, TSL_ERR_SEMANTIC, "a tensor of tiles must be indexed to be transferred");
    return TSL_OK;
}

/* Base coordinate of view coordinate vc (rank == view rank). */
void interp_view_map(const rt_view *vw, const int64_t *vc, int64_t *c)
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

int interp_view_coord(const rt_view *vw, const int64_t *rc, int r, int64_t *vc)
{
    return view_coord_from(vw, rc, r, vc);
}

/* Check that a register tile of dims fits the view's extents. */
static tsl_status view_fit(interp *I, size_t pos, const rt_view *vw, const int64_t *dims, int r)
{
    int lead = vw->rank - r;
    for (int i = 0; i < vw->rank; i++) {
        int j = i - lead;
        int64_t want = j >= 0 ? dims[j] : 1;
        if (j >= 0 && j < r && vw->ext[i] >= 0 && vw->ext[i] != want)
            return interp_err(I, pos, TSL_ERR_SHAPE,
                        "tile of '%s' has extent %lld in dim %d, the other operand %lld", vw->name,
                        (long long)vw->ext[i], i, (long long)want);
    }
    for (int j = 0; j < -lead; j++)
        if (dims[j] != 1)
            return interp_err(I, pos, TSL_ERR_SHAPE, "a rank-%d tile does not fit '%s' of rank %d", r,
                        vw->name, vw->rank);
    return TSL_OK;
}

/* ---- element access through views ------------------------------------------------ */

double interp_global_get(const rt_tensor *t, const int64_t *c)
{
    int64_t e = 0;
    for (int i = 0; i < t->rank; i++) e += c[i] * t->gstride[i];
    return dtype_get(t->tdt, t->gdata, e); /* packed low-bit tensors at bit e * bits */
}

void interp_global_set(const rt_tensor *t, const int64_t *c, double v)
{
    int64_t e = 0;
    for (int i = 0; i < t->rank; i++) e += c[i] * t->gstride[i];
    dtype_set(t->tdt, t->gdata, e, v);
}

tsl_status interp_hazard(interp *I, size_t pos, imem_hazard h, const char *name, const int64_t *c, int rank,
                         int64_t thread, int other, int write)
{
    char e[160];
    if (h >= IMEM_XRAW) {
        char who[96];
        return interp_hazard_ext(I, pos, h, interp_thread_name(I, thread, I->task, who, sizeof who), name, c, rank,
                                 write);
    }
    interp_coord_str(e, sizeof e, c, rank);
    long long t = (long long)thread;
    switch (h) {
    case IMEM_PENDING_READ:
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld reads %s[%s] before the cp.async that writes it completed (missing wait?)",
                    t, name, e);
    case IMEM_PENDING_WRITE:
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld writes %s[%s] while a cp.async into it is pending (missing wait?)", t,
                    name, e);
    case IMEM_RAW:
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld reads %s[%s], which thread %d wrote with no synchronize between "
                    "(missing sync?)", t, name, e, other);
    case IMEM_WAR:
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld writes %s[%s], which another thread read with no synchronize between "
                    "(missing sync?)", t, name, e);
    case IMEM_WAW:
        return interp_err(I, pos, TSL_ERR_RUNTIME,
                    "hazard: thread %lld writes %s[%s], which thread %d wrote with no synchronize between "
                    "(missing sync?)", t, name, e, other);
    default:
        return interp_err(I, pos, TSL_ERR_BOUNDS, "thread %lld: %s[%s] is outside the block's shared memory", t,
                    name, e);
    }
}

tsl_status interp_shared_get(interp *I, size_t pos, const rt_view *vw, const int64_t *c,
                             int64_t thread, double *out)
{
    const rt_tensor *t = vw->t;
    if (!interp_in_dims(t, c)) {
        char cs[128];
        interp_coord_str(cs, sizeof cs, c, t->rank);
        return interp_err(I, pos, TSL_ERR_BOUNDS, "read of %s[%s] is outside its shape", vw->name, cs);
    }
    unsigned char buf[16];
    int other;
    thread += I->tbase;
    imem_hazard h = imem_read(&I->sm, interp_shared_off(t, c), interp_dt_bytes(t->tdt), (int)thread, buf, &other);
    if (h) return interp_hazard(I, pos, h, vw->name, c, t->rank, thread, other, 0);
    *out = dtype_load(t->tdt, buf);
    return TSL_OK;
}

tsl_status interp_shared_put(interp *I, size_t pos, const rt_view *vw, const int64_t *c,
                             int64_t thread, double v, int async)
{
    const rt_tensor *t = vw->t;
    if (!interp_in_dims(t, c)) {
        char cs[128];
        interp_coord_str(cs, sizeof cs, c, t->rank);
        return interp_err(I, pos, TSL_ERR_BOUNDS, "write of %s[%s] is outside its shape", vw->name, cs);
    }
    unsigned char buf[16];
    dtype_store(t->tdt, buf, v);
    int other;
    size_t off = interp_shared_off(t, c), n = interp_dt_bytes(t->tdt);
    thread += I->tbase;
    imem_hazard h = async ? imem_copy_async(&I->sm, off, n, (int)thread, buf, &other)
                          : imem_write(&I->sm, off, n, (int)thread, buf, &other);
    if (h) return interp_hazard(I, pos, h, vw->name, c, t->rank, thread, other, 1);
    return TSL_OK;
}

/* ---- destinations ------------------------------------------------------------------ */

/* The register tensor an instruction writes: its new result, or `-> dst`. */
tsl_status interp_reg_dst(interp *I, const tile_stmt *s, rt_tensor **out)
{
    const tile_instr *in = &s->instr;
    if (in->result) {
        if (in->result->type.space != TILE_REGISTER)
            return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "%s: the result must be a register tensor",
                        tile_op_info_of(in->op)->name);
        return interp_tensor_of(I, in->result, out);
    }
    if (in->has_dst && in->dst.v && in->dst.v->kind == TILE_V_TENSOR) {
        rt_tensor *t = I->slots[in->dst.v->id].t;
        if (!t)
            return interp_err(I, in->dst.pos, TSL_ERR_RUNTIME, "tensor '%s' used before it is defined",
                        in->dst.v->name);
        if (t->space != TILE_REGISTER || in->dst.nsteps)
            return interp_err(I, in->dst.pos, TSL_ERR_SEMANTIC,
                        "%s: the destination must be a whole register tensor",
                        tile_op_info_of(in->op)->name);
        if (t->wg_busy) return interp_wgmma_busy(I, s->pos, in->dst.v->name, 1);
        t->wseq = ++I->seq;
        *out = t;
        return TSL_OK;
    }
    return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "%s: no result and no destination",
                tile_op_info_of(in->op)->name);
}

tsl_status interp_reg_arg(interp *I, const tile_operand *o, rt_tensor **out)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR)
        return interp_err(I, o->pos, TSL_ERR_SEMANTIC, "expected a register tensor operand");
    rt_tensor *t = I->slots[o->v->id].t;
    if (!t) return interp_err(I, o->pos, TSL_ERR_RUNTIME, "tensor '%s' used before it is defined", o->v->name);
    if (t->space != TILE_REGISTER || o->nsteps)
        return interp_err(I, o->pos, TSL_ERR_SEMANTIC, "'%s' must be a whole register tensor here", o->v->name);
    if (t->wg_busy) return interp_wgmma_busy(I, o->pos, o->v->name, 0);
    *out = t;
    return TSL_OK;
}

/* Is (th, l) the lowest owner of its coordinate? Replicated layouts hold a
 * value in several threads; only one of them stores it (as codegen does). */
int interp_first_owner(const rt_tensor *t, int64_t th, int64_t l)
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
    tsl_status st = interp_view_of(I, &in->args[0], &src);
    if (!st) st = interp_reg_dst(I, s, &d);
    if (st) return st;
    int want = in->op == TILE_I_LOAD_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
    if ((int)src.t->space != want)
        return interp_err(I, in->args[0].pos, TSL_ERR_SEMANTIC, "%s reads a %s tensor; '%s' is %s",
                    tile_op_info_of(in->op)->name, tile_space_name((tile_space)want), src.name,
                    tile_space_name(src.t->space));
    st = view_fit(I, s->pos, &src, d->dims, d->rank);
    if (st) return st;
    double fill = 0;
    if (in->init && (st = interp_eval_num(I, in->init, &fill))) return st;
    for (int64_t th = 0; th < d->nthreads; th++)
        for (int64_t l = 0; l < d->nlocals; l++) {
            int64_t rc[IMAX_RANK], vc[IMAX_RANK], c[IMAX_RANK];
            double v = NAN;
            if (!interp_reg_coord(d, th, l, rc)) {
                d->regs[th * d->nlocals + l] = NAN;
                continue;
            }
            if (!view_coord_from(&src, rc, d->rank, vc))
                return interp_err(I, s->pos, TSL_ERR_SHAPE, "tile does not fit '%s'", src.name);
            interp_view_map(&src, vc, c);
            if (src.t->space == TILE_GLOBAL) {
                v = interp_in_dims(src.t, c) ? interp_global_get(src.t, c) : fill;
            } else if ((st = interp_shared_get(I, s->pos, &src, c, th, &v))) {
                return st;
            }
            d->regs[th * d->nlocals + l] = interp_round(d->dt, v);
        }
    return TSL_OK;
}

/* store_global / store_shared: each element's first owner writes it. */
static tsl_status exec_store(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    rt_tensor *r = NULL;
    rt_view dst;
    tsl_status st = interp_reg_arg(I, &in->args[0], &r);
    if (st) return st;
    if (!in->has_dst) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "store needs '-> destination'");
    if ((st = interp_view_of(I, &in->dst, &dst))) return st;
    int want = in->op == TILE_I_STORE_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
    if ((int)dst.t->space != want)
        return interp_err(I, in->dst.pos, TSL_ERR_SEMANTIC, "%s writes a %s tensor; '%s' is %s",
                    tile_op_info_of(in->op)->name, tile_space_name((tile_space)want), dst.name,
                    tile_space_name(dst.t->space));
    if ((st = view_fit(I, s->pos, &dst, r->dims, r->rank))) return st;
    for (int64_t th = 0; th < r->nthreads; th++)
        for (int64_t l = 0; l < r->nlocals; l++) {
            int64_t rc[IMAX_RANK], vc[IMAX_RANK], c[IMAX_RANK];
            if (!interp_reg_coord(r, th, l, rc) || !interp_first_owner(r, th, l)) continue;
            if (!view_coord_from(&dst, rc, r->rank, vc))
                return interp_err(I, s->pos, TSL_ERR_SHAPE, "tile does not fit '%s'", dst.name);
            interp_view_map(&dst, vc, c);
            double v = r->regs[th * r->nlocals + l];
            if (dst.t->space == TILE_GLOBAL) {
                if (interp_in_dims(dst.t, c)) interp_global_set(dst.t, c, v);
            } else if ((st = interp_shared_put(I, s->pos, &dst, c, th, v, 0))) {
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
    tsl_status st = interp_view_of(I, &in->args[0], &src);
    if (st) return st;
    if (!in->has_dst) return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "copy_async needs '-> destination'");
    if ((st = interp_view_of(I, &in->dst, &dst))) return st;
    if (src.t->space != TILE_GLOBAL || dst.t->space != TILE_SHARED)
        return interp_err(I, s->pos, TSL_ERR_SEMANTIC, "copy_async copies global -> shared");
    /* leading dims fixed by an untiled index (S[i, ...]) */
    int lead = 0;
    if (in->dst.nsteps == 1 && in->dst.steps[0].kind == TILE_STEP_INDEX) lead = in->dst.steps[0].n;
    if (lead >= dst.rank)
        return interp_err(I, in->dst.pos, TSL_ERR_SHAPE, "copy_async: %d indices leave nothing of '%s'", lead, dst.name);
    int trank = dst.rank - lead;
    int64_t box[IMAX_RANK], n = 1;
    for (int i = 0; i < trank; i++) {
        int d = lead + i;
        box[i] = dst.ext[d] >= 0 ? dst.ext[d] : dst.t->dims[d];
        n *= box[i];
    }
    if ((st = view_fit(I, s->pos, &src, box, trank))) return st;
    int64_t vec = (in->bytes ? in->bytes : 16) / (int64_t)interp_dt_bytes(dst.t->tdt);
    if (vec < 1) vec = 1;
    for (int64_t e = 0; e < n; e++) {
        int64_t tc[IMAX_RANK], vs[IMAX_RANK], vd[IMAX_RANK], cs[IMAX_RANK], cd[IMAX_RANK], r = e;
        for (int i = trank - 1; i >= 0; i--) {
            tc[i] = r % box[i];
            r /= box[i];
        }
        for (int i = 0; i < dst.rank; i++) vd[i] = i < lead ? 0 : tc[i - lead];
        if (!view_coord_from(&src, tc, trank, vs))
            return interp_err(I, s->pos, TSL_ERR_SHAPE, "copy_async: the tile does not fit '%s'", src.name);
        interp_view_map(&src, vs, cs);
        interp_view_map(&dst, vd, cd);
        double v = interp_in_dims(src.t, cs) ? interp_global_get(src.t, cs) : 0;
        int64_t th = (e / vec) % I->nthreads;
        if ((st = interp_shared_put(I, s->pos, &dst, cd, th, v, 1))) return st;
    }
    return TSL_OK;
}

/* ---- statements ------------------------------------------------------------------------------ */

static tsl_status exec_instr(interp *I, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (in->decomp) return interp_exec_decomp(I, s);
    switch (in->op) {
    case TILE_I_ALLOC: return interp_exec_alloc(I, s);
    case TILE_I_LOAD_GLOBAL:
    case TILE_I_LOAD_SHARED: return exec_load(I, s);
    case TILE_I_STORE_GLOBAL:
    case TILE_I_STORE_SHARED: return exec_store(I, s);
    case TILE_I_COPY_ASYNC: return exec_copy_async(I, s);
    case TILE_I_COMMIT: imem_commit(&I->sm); return TSL_OK;
    case TILE_I_WAIT: {
        int64_t n = 0;
        tsl_status st = in->nargs && in->args[0].scalar ? interp_eval_int(I, in->args[0].scalar, &n) : TSL_OK;
        if (st) return st;
        imem_wait(&I->sm, (int)n);
        return TSL_OK;
    }
    case TILE_I_SYNC: imem_sync(&I->sm); return TSL_OK;
    case TILE_I_MMA: return interp_exec_mma(I, s);
    case TILE_I_VIEW: return interp_exec_view(I, s);
    case TILE_I_REDUCE_SUM:
    case TILE_I_REDUCE_MAX:
    case TILE_I_REDUCE_MIN: return interp_exec_reduce(I, s);
    case TILE_I_BROADCAST: return interp_exec_broadcast(I, s);
    case TILE_I_SHUFFLE_XOR:
    case TILE_I_SHUFFLE_UP:
    case TILE_I_SHUFFLE_DOWN:
    case TILE_I_SHUFFLE_IDX: return interp_exec_shuffle(I, s);
    case TILE_I_PRINT: return interp_exec_print(I, s);
    default:
        if (in->op == TILE_I_CAST || in->op == TILE_I_COPY || tile_op_is_unary(in->op) ||
            tile_op_is_binary(in->op) || tile_op_is_elementwise_ext(in->op))
            return interp_exec_elementwise(I, s);
        if (in->op == TILE_I_IOTA) return interp_exec_iota(I, s);
        if (in->op == TILE_I_GATHER || in->op == TILE_I_SCATTER) return interp_exec_gather(I, s);
        if (tile_op_is_hopper(in->op)) return interp_exec_hopper(I, s);
        return interp_err(I, s->pos, TSL_ERR_UNAVAILABLE, "the interpreter cannot run '%s'",
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
        if ((st = interp_eval_int(I, s->e, &v))) return st;
        I->slots[s->v->id].ival = v;
        return TSL_OK;
    case TILE_S_THREADS: return TSL_OK;
    case TILE_S_INDICES: return interp_exec_indices(I, s);
    case TILE_S_FOR:
        if ((st = interp_eval_int(I, s->lo, &lo)) || (st = interp_eval_int(I, s->hi, &hi)) ||
            (s->step && (st = interp_eval_int(I, s->step, &step))))
            return st;
        if (step <= 0) return interp_err(I, s->pos, TSL_ERR_RUNTIME, "for: step %lld is not positive", (long long)step);
        for (int64_t i = lo; i < hi; i += step) {
            I->slots[s->v->id].ival = i;
            if ((st = interp_exec_block(I, s->body))) return st;
        }
        return TSL_OK;
    case TILE_S_IF:
        if ((st = interp_eval_int(I, s->e, &v))) return st;
        if (v) return interp_exec_block(I, s->body);
        return s->els ? interp_exec_block(I, s->els) : TSL_OK;
    case TILE_S_WHILE:
        for (int64_t n = 0;; n++) {
            if ((st = interp_eval_int(I, s->e, &v))) return st;
            if (!v) return TSL_OK;
            if (n > ((int64_t)1 << 32))
                return interp_err(I, s->pos, TSL_ERR_RUNTIME, "while: more than 2^32 iterations");
            if ((st = interp_exec_block(I, s->body))) return st;
        }
    case TILE_S_PIPELINE: return interp_exec_pipeline(I, s);
    case TILE_S_WARPGROUPS: return interp_exec_warpgroups(I, s);
    }
    return interp_err(I, s->pos, TSL_ERR_INTERNAL, "unknown statement");
}

tsl_status interp_exec_stmt(interp *I, const tile_stmt *s)
{
    return exec_stmt(I, s);
}

tsl_status interp_exec_block(interp *I, const tile_block *b)
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
    return n * (((ty ? ty->dt.bits : 8) + 7) / 8); /* whole bytes per element */
}

/* Hopper kernels place swizzled tensors on 1024 bytes, as the CUDA
 * generator does: TMA and wgmma apply the swizzle to the address bits. */
static void plan_add(interp *I, int id, int64_t bytes, const tile_layout *lay)
{
    size_t align = I->hopper && lay && lay->v.kind == LAYOUT_VALUE_DATA && lay->v.data.sw.b ? 1024 : 128;
    size_t off = (I->smem_used + align - 1) & ~(align - 1);
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
                plan_add(I, r->id, shared_bytes(&r->type, dims, r->type.rank), r->type.layout);
            }
            /* a shared view is an alias: the same bytes */
            if (s->instr.op == TILE_I_VIEW && r && r->type.space == TILE_SHARED && s->instr.args[0].v)
                I->soff[r->id] = I->soff[s->instr.args[0].v->id];
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
                plan_add(I, bs->view->id, shared_bytes(&ty, bs->block, bs->rank), bs->layout);
            }
        }
        const tile_block *body = s->kind == TILE_S_PIPELINE && s->pipe.body ? s->pipe.body : s->body;
        if ((st = plan_block(I, body)) || (st = plan_block(I, s->els))) return st;
        for (int r = 0; s->kind == TILE_S_WARPGROUPS && r < s->nroles; r++)
            if ((st = plan_block(I, s->roles[r].body))) return st;
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
                    strbuf fb = {0};
                    if (from[s] && strcmp(from[s], "--size"))
                        sb_printf(&fb, "%s dim %d", from[s], from_dim[s]);
                    else
                        sb_puts(&fb, "--size");
                    diag_error(d, TSL_ERR_SHAPE, "size %s: %s dim %d is %lld but %s gives %lld",
                               e->v->name, v->name, i, (long long)got, sb_str(&fb), (long long)sym_vals[s]);
                    sb_free(&fb);
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
            if ((s->instr.op == TILE_I_STORE_GLOBAL || s->instr.op == TILE_I_SCATTER ||
                 s->instr.op == TILE_I_TMA_STORE) &&
                s->instr.has_dst && s->instr.dst.v)
                w[s->instr.dst.v->id] = 1;
            outputs_in(s->instr.decomp, w);
        }
        if (s->kind == TILE_S_PIPELINE)
            for (int j = 0; j < s->pipe.nouts; j++) w[s->pipe.outs[j].tensor->id] = 1;
        outputs_in(s->kind == TILE_S_PIPELINE && s->pipe.body ? s->pipe.body : s->body, w);
        outputs_in(s->els, w);
        for (int r = 0; r < s->nroles; r++) outputs_in(s->roles[r].body, w);
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

tile_interp_arg tile_interp_arg_float(const char *name, double v)
{
    tile_interp_arg a = {name, NULL, 0};
    memcpy(&a.ival, &v, sizeof v);
    return a;
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
            return interp_err(I, v->pos, TSL_ERR_ARG, "kernel '%s': parameter '%s' is not bound", k->name, v->name);
        if (v->kind == TILE_V_SCALAR) {
            int fl = tile_value_is_typed_scalar(v) && v->type.dt.kind == TILE_DT_FLOAT;
            double f;
            memcpy(&f, &a->ival, sizeof f);
            I->slots[v->id].ival = fl ? (int64_t)f : a->ival;
            I->slots[v->id].fval = fl ? f : (double)a->ival;
            continue;
        }
        if (!a->t) return interp_err(I, v->pos, TSL_ERR_ARG, "parameter '%s' needs a tensor", v->name);
        const DLTensor *t = a->t;
        rt_tensor *r = &I->tensors[v->id];
        tsl_dtype dt;
        char nb[16];
        if (tsl_dtype_from_dlpack(t->dtype, &dt) || tile_dtype_to_tsl(v->type.dt, &r->tdt) || dt != r->tdt)
            return interp_err(I, v->pos, TSL_ERR_SHAPE, "tensor '%s' should be %s", v->name,
                        tile_dtype_name(v->type.dt, nb));
        if (t->device.device_type != kDLCPU)
            return interp_err(I, v->pos, TSL_ERR_ARG, "tensor '%s' is not in host memory", v->name);
        int64_t want[IMAX_RANK];
        if (v->type.rank > IMAX_RANK || t->ndim != v->type.rank)
            return interp_err(I, v->pos, TSL_ERR_SHAPE, "tensor '%s' has rank %d; expected %d", v->name, t->ndim,
                        v->type.rank);
        tsl_status st = const_dims(I, v, want);
        if (st) return st;
        r->space = TILE_GLOBAL;
        r->dt = v->type.dt;
        r->rank = t->ndim;
        int64_t acc = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            if (t->shape[i] != want[i])
                return interp_err(I, v->pos, TSL_ERR_SHAPE, "tensor '%s' dim %d is %lld; the kernel says %lld",
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

uint64_t interp_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

tsl_status interp_order(interp *I, int64_t n, const char *what, int64_t **out)
{
    *out = NULL;
    if (!I->o->shuffle_blocks) return TSL_OK;
    if (n > ((int64_t)1 << 26))
        return interp_err(I, I->k->pos, TSL_ERR_SHAPE, "shuffling %lld %s: at most 2^26", (long long)n, what);
    int64_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return interp_err(I, I->k->pos, TSL_ERR_NOMEM, "out of memory for the order of %lld %s", (long long)n, what);
    for (int64_t b = 0; b < n; b++) order[b] = b;
    uint64_t seed = I->o->seed;
    for (int64_t b = n - 1; b > 0; b--) {
        int64_t j = (int64_t)(interp_mix(&seed) % (uint64_t)(b + 1)), t = order[b];
        order[b] = order[j];
        order[j] = t;
    }
    *out = order;
    return TSL_OK;
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
        st = interp_err(I, k->pos, TSL_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (k->threads < 1 || k->threads > 1024) {
        st = interp_err(I, k->pos, TSL_ERR_SEMANTIC, "kernel '%s': %d threads per block (1..1024)", k->name, k->threads);
        goto done;
    }
    if ((st = tile_interp_bind_symbols(k, args, nargs, NULL, NULL, 0, symv, d))) goto done;
    if ((st = bind_params(I, args, nargs, symv))) goto done;
    I->hopper = interp_uses_hopper(k->body);
    if ((st = plan_block(I, k->body))) goto done;
    int64_t budget = I->o->smem_budget ? I->o->smem_budget : k->smem_budget ? k->smem_budget : DEFAULT_SMEM;
    if ((int64_t)I->smem_used > budget) {
        st = interp_err(I, k->pos, TSL_ERR_SHAPE,
                  "kernel '%s' needs %zu bytes of shared memory; the budget is %lld bytes", k->name,
                  I->smem_used, (long long)budget);
        goto done;
    }
    /* a cluster's blocks share one memory, block rank r's bytes at r * cspan */
    I->csize = k->cluster > 1 ? k->cluster : 1;
    I->cspan = (I->smem_used + 1023) & ~(size_t)1023;
    int ntasks = 1 + I->csize * interp_instances(k->body);
    if (imem_init(&I->sm, I->csize > 1 ? I->cspan * (size_t)I->csize : I->smem_used) ||
        (I->hopper && imem_enable_tasks(&I->sm, ntasks))) {
        st = interp_err(I, k->pos, TSL_ERR_NOMEM, "out of memory for %zu bytes of shared memory", I->smem_used);
        goto done;
    }
    int64_t gdim[3] = {1, 1, 1}, nblocks = 1;
    for (int i = 0; i < k->ngrid && i < 3; i++) {
        if ((st = interp_eval_int(I, k->grid[i], &gdim[i]))) goto done;
        if (gdim[i] < 0 || gdim[i] > TILE_MAX_GRID) {
            strbuf sb = {0};
            tile_print_expr(&sb, k->grid[i]);
            st = interp_err(I, k->grid[i]->pos, TSL_ERR_SHAPE, "grid dimension %d, %s, is %lld; it must be 0..%lld",
                            i, sb_str(&sb), (long long)gdim[i], (long long)TILE_MAX_GRID);
            sb_free(&sb);
            goto done;
        }
        if (__builtin_mul_overflow(nblocks, gdim[i], &nblocks)) {
            st = interp_err(I, k->pos, TSL_ERR_SHAPE, "the grid has more than 2^63 blocks");
            goto done;
        }
    }
    if (nblocks == 0) {
        /* no block runs: fine for empty outputs, a silent non-answer for others */
        const tile_value *outs[64];
        int no = tile_interp_outputs(k, outs, 64);
        for (int i = 0; i < no && !st; i++) {
            const rt_tensor *r = &I->tensors[outs[i]->id];
            int64_t n = 1;
            for (int d2 = 0; d2 < r->rank; d2++) n *= r->dims[d2];
            if (n > 0)
                st = interp_err(I, k->pos, TSL_ERR_SHAPE,
                                "the grid of kernel '%s' has no block (%lld x %lld x %lld), so its output '%s' (%lld "
                                "elements) would never be written",
                                k->name, (long long)gdim[0], (long long)gdim[1], (long long)gdim[2], outs[i]->name,
                                (long long)n);
        }
        goto done;
    }
    if (I->csize > 1) {
        st = interp_cluster_grid(I, gdim, nblocks);
        goto done;
    }
    if ((st = interp_order(I, nblocks, "blocks", &order))) goto done;
    I->in_grid = 1;
    for (int64_t b = 0; b < nblocks && !st; b++) {
        int64_t x = order ? order[b] : b;
        I->bidx[0] = x % gdim[0];
        I->bidx[1] = (x / gdim[0]) % gdim[1];
        I->bidx[2] = x / (gdim[0] * gdim[1]);
        imem_reset(&I->sm);
        if (I->hopper && (st = interp_hop_begin(I))) break;
        st = interp_exec_block(I, k->body);
        if (!st && I->hopper) st = interp_hop_task_end(I, k->pos);
    }
done:
    interp_hop_free(I);
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
