/* verify.c — the tile IR verifier. Requires a module from tile_parse or the
 * builder; guarantees, when it returns TSL_OK, what the interpreter and
 * code generators assume (docs/tile-ir.md, "Verifier"):
 *   - every value is used inside the scope that defines it;
 *   - shared and register tensors have constant positive shapes of at most
 *     TILE_MAX_ELEMS elements (register: TILE_MAX_LOCALS per thread; a
 *     shared layout's cosize at most TILE_MAX_SPAN), checked by arithmetic
 *     before anything enumerates them; a register tensor's distributed
 *     layout has exactly its shape and the kernel's thread count; a shared
 *     tensor's data layout has its size;
 *   - operands have the memory spaces, dtypes and shapes their instruction
 *     needs (tiles fit in shared tensors when offsets are constant);
 *   - view keeps bits per thread; mma shapes are multiples of the atom and
 *     fragment layouts end in the atom's fragment (h / atom exists);
 *   - wait counts are constants in 0..7; copy_async chunks are 4, 8 or 16
 *     bytes and divide the tile's rows;
 *   - shared memory (allocations + stages x pipeline blocks) fits the stated
 *     budget;
 *   - a decomposition's inner instructions, over all threads, touch every
 *     element of the operands they refer to (decomp_cover).
 * Errors are collected (not just the first) as `file:line:col: error:`. */
#include <string.h>

#include "target/target.h"
#include "tile/decomp.h"
#include "tile/tile.h"

typedef struct verifier {
    const tile_module *m;
    const tsl_source *src;
    tsl_diag *d;
    const tile_kernel *k;
    uint8_t *visible; /* by value id */
    int64_t smem_alloc; /* bytes of shared allocations */
    int64_t smem_pipe;  /* the largest stages x block bytes of a pipeline */
    int pipe_stages;          /* stages of the enclosing pipeline (wait's range) */
    int msg_stages;           /* stages of the pipeline with the most bytes */
    int64_t pipe_block_bytes;
    size_t pipe_pos;
    int in_decomp;
    int threads;      /* threads of the SIMB context: the kernel's, or 128 in a role */
    int in_roles;     /* inside a warpgroups role */
    int in_pipeline;  /* inside a pipeline body */
    int depth;        /* blocks open: 1 at the kernel's top level */
} verifier;

static void verr(verifier *V, size_t pos, const char *fmt, ...) TSL_PRINTF(3, 4);

static void verr(verifier *V, size_t pos, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (V->src)
        diag_error_at(V->d, V->src, pos, TSL_ERR_SEMANTIC, "%s", msg);
    else
        diag_error(V->d, TSL_ERR_SEMANTIC, "in kernel %s: %s", V->k->name, msg);
}

/* "f32[64, 64]" into buf. */
static const char *type_str(const tile_type *t, char *buf, size_t n)
{
    char dn[16];
    strbuf sb = {0};
    sb_printf(&sb, "%s[", tile_dtype_name(t->dt, dn));
    for (int i = 0; i < t->rank; i++) {
        if (i) sb_puts(&sb, ", ");
        tile_print_expr(&sb, t->dims[i]);
    }
    sb_putc(&sb, ']');
    snprintf(buf, n, "%s", sb_str(&sb));
    sb_free(&sb);
    return buf;
}

static const char *shape_str(const int64_t *dims, int rank, char *buf, size_t n)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "[");
    for (int i = 0; i < rank && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
    return buf;
}

/* ---- scopes and expressions ----------------------------------------------- */

static void check_expr(verifier *V, const tile_expr *e)
{
    if (!e) return;
    switch (e->kind) {
    case TILE_E_VALUE:
        if (!e->v || !V->visible[e->v->id])
            verr(V, e->pos, "use of undefined value '%s'", e->v ? e->v->name : "?");
        else if (e->v->kind != TILE_V_SCALAR)
            verr(V, e->pos, "'%s' is not an int scalar", e->v->name);
        else if (tile_value_is_typed_scalar(e->v))
            verr(V, e->pos, "'%s' is a typed scalar parameter: it can only be a whole operand of an elementwise "
                 "instruction, not part of an int expression", e->v->name);
        break;
    case TILE_E_THREAD_IDX:
        if (!V->in_decomp) verr(V, e->pos, "thread_idx is only defined inside a decomposition");
        break;
    case TILE_E_NEG:
    case TILE_E_NOT: check_expr(V, e->a); break;
    case TILE_E_BIN:
        check_expr(V, e->a);
        check_expr(V, e->b);
        break;
    default: break;
    }
}

static void make_visible(verifier *V, const tile_value *v)
{
    if (v) V->visible[v->id] = 1;
}

/* ---- types ------------------------------------------------------------------ */

/* Constant dims of a shared/register type into out (rank <= 16). */
static int const_dims(const tile_type *t, int64_t *out)
{
    if (t->rank > 16) return 0;
    for (int i = 0; i < t->rank; i++)
        if (!tile_expr_const(t->dims[i], &out[i]) || out[i] < 1) return 0;
    return 1;
}

/* The element count, or INT64_MAX when it overflows. */
static int64_t numel_of(const int64_t *dims, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        if (__builtin_mul_overflow(n, dims[i], &n)) return INT64_MAX;
    return n;
}

/* a + b, saturating (byte sums of user-sized tensors). */
static int64_t add_sat(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Bytes a shared tensor occupies: its layout's cosize (or element count)
 * times the element bits, rounded up to bytes (saturating). */
static int64_t shared_bytes(const tile_type *t)
{
    int64_t dims[16], bits;
    if (!const_dims(t, dims)) return 0;
    int64_t n = numel_of(dims, t->rank);
    if (t->layout && t->layout->v.kind == LAYOUT_VALUE_DATA) {
        int64_t c = layout_cosize(&t->layout->v.data);
        if (c > n) n = c;
    }
    if (__builtin_mul_overflow(n, (int64_t)t->dt.bits, &bits)) return INT64_MAX;
    return bits / 8 + (bits % 8 != 0);
}

/* Shared/register tensor types: shapes and layouts. */
static void check_type(verifier *V, const tile_type *t, const char *name, size_t pos)
{
    char tb[128], sb1[96];
    if (t->space == TILE_GLOBAL) return;
    int64_t dims[16];
    if (t->rank < 1 || !const_dims(t, dims)) {
        verr(V, pos, "%s tensor '%s' %s needs a constant positive shape of rank 1..16",
             tile_space_name(t->space), name, type_str(t, tb, sizeof tb));
        return;
    }
    /* sizes first, by arithmetic: nothing below may enumerate a tensor no
     * block could hold */
    int64_t numel = numel_of(dims, t->rank);
    if (numel > TILE_MAX_ELEMS) {
        verr(V, pos, "%s tensor '%s' %s has %s%lld elements; at most %lld (2^22) in a shared or register tensor",
             tile_space_name(t->space), name, type_str(t, tb, sizeof tb), numel == INT64_MAX ? "more than " : "",
             (long long)numel, (long long)TILE_MAX_ELEMS);
        return;
    }
    if (!t->layout) {
        if (t->space == TILE_REGISTER) verr(V, pos, "register tensor '%s' has no layout", name);
        return;
    }
    const layout_value *lv = &t->layout->v;
    if (t->space == TILE_REGISTER) {
        if (lv->kind != LAYOUT_VALUE_DIST) {
            verr(V, pos, "register tensor '%s' needs a distributed layout, not %s", name, t->layout->text);
            return;
        }
        const dist_layout *dl = &lv->dist;
        if (dl->locals > TILE_MAX_LOCALS) {
            verr(V, pos, "register tensor '%s': layout %s gives each thread %lld elements; at most %lld (2^16)", name,
                 t->layout->text, (long long)dl->locals, (long long)TILE_MAX_LOCALS);
            return;
        }
        int same = dl->rank == t->rank;
        for (int i = 0; same && i < t->rank; i++) same = dl->shape[i] == dims[i];
        if (!same)
            verr(V, pos, "register tensor '%s' %s: layout %s covers %s, not its shape", name,
                 type_str(t, tb, sizeof tb), t->layout->text, shape_str(dl->shape, dl->rank, sb1, sizeof sb1));
        if (!V->in_decomp && dl->threads != V->threads)
            verr(V, pos,
                 "register tensor '%s': layout %s distributes over %lld threads but the kernel runs threads(%d)",
                 name, t->layout->text, (long long)dl->threads, V->threads);
    } else {
        if (lv->kind != LAYOUT_VALUE_DATA) {
            verr(V, pos, "shared tensor '%s' needs a data layout, not %s", name, t->layout->text);
            return;
        }
        int64_t n = numel, s = layout_size(&lv->data);
        if (s != n)
            verr(V, pos, "shared tensor '%s' %s has %lld elements but its layout %s has size %lld", name,
                 type_str(t, tb, sizeof tb), (long long)n, t->layout->text, (long long)s);
        else if (layout_cosize(&lv->data) > TILE_MAX_SPAN)
            verr(V, pos, "shared tensor '%s': layout %s spans %lld elements; at most %lld (2^26)", name,
                 t->layout->text, (long long)layout_cosize(&lv->data), (long long)TILE_MAX_SPAN);
    }
}

/* ---- operands ------------------------------------------------------------------ */

/* A scalar operand that is exactly a typed scalar parameter (`alpha`). */
static int typed_operand(const tile_operand *o)
{
    return !o->v && o->scalar && o->scalar->kind == TILE_E_VALUE && tile_value_is_typed_scalar(o->scalar->v);
}

static void check_operand_scope(verifier *V, const tile_operand *o)
{
    if (typed_operand(o)) {
        if (!V->visible[o->scalar->v->id]) verr(V, o->pos, "use of undefined value '%s'", o->scalar->v->name);
        return;
    }
    if (!o->v) {
        check_expr(V, o->scalar);
        return;
    }
    if (!V->visible[o->v->id]) verr(V, o->pos, "use of undefined value '%s'", o->v->name);
    for (int i = 0; i < o->nsteps; i++)
        if (o->steps[i].kind == TILE_STEP_INDEX)
            for (int j = 0; j < o->steps[i].n; j++) check_expr(V, o->steps[i].idx[j]);
}

/* The operand's tensor in `space` with at most one index step (<= rank
 * indices); NULL after reporting otherwise. */
static const tile_value *mem_operand(verifier *V, const tile_operand *o, tile_space space,
                                     const char *opname, const char *role, int need_index)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR) {
        verr(V, o->pos, "%s: the %s must be a %s tensor", opname, role, tile_space_name(space));
        return NULL;
    }
    const tile_value *v = o->v;
    if (v->type.space != space) {
        verr(V, o->pos, "%s: the %s '%s' is a %s tensor, expected %s", opname, role, v->name,
             tile_space_name(v->type.space), tile_space_name(space));
        return NULL;
    }
    if (V->in_decomp) return v; /* views inside decompositions: decomp_cover */
    if (o->nsteps > 1 || (o->nsteps == 1 && o->steps[0].kind != TILE_STEP_INDEX)) {
        verr(V, o->pos, "%s: the %s '%s' takes one index [offsets] outside a decomposition", opname, role,
             v->name);
        return NULL;
    }
    if (need_index && o->nsteps == 0) {
        verr(V, o->pos, "%s: the %s '%s' needs offsets, e.g. %s[0, 0]", opname, role, v->name, v->name);
        return NULL;
    }
    if (o->nsteps == 1 && o->steps[0].n > v->type.rank) {
        verr(V, o->pos, "%s: %d offsets for the rank-%d tensor '%s'", opname, o->steps[0].n,
             v->type.rank, v->name);
        return NULL;
    }
    return v;
}

/* A register operand (whole tensor, no views outside decompositions). */
static const tile_value *reg_operand(verifier *V, const tile_operand *o, const char *opname,
                                     const char *role)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.space != TILE_REGISTER) {
        verr(V, o->pos, "%s: the %s must be a register tensor", opname, role);
        return NULL;
    }
    if (o->nsteps && !V->in_decomp) {
        verr(V, o->pos, "%s: the register %s '%s' cannot be indexed", opname, role, o->v->name);
        return NULL;
    }
    return o->v;
}

/* The tile's box in memory tensor `mem` at the operand's offsets must fit
 * (checked when the offsets and shapes are constant; global tiles are
 * masked, so only shared ones are checked). */
static void check_box(verifier *V, const tile_operand *o, const tile_value *mem, const int64_t *tile,
                      int trank, const char *opname)
{
    int64_t md[16];
    char tb[128], sb1[96];
    if (mem->type.space != TILE_SHARED || !const_dims(&mem->type, md)) return;
    int R = mem->type.rank;
    if (trank > R) {
        verr(V, o->pos, "%s: a rank-%d tile does not fit the rank-%d tensor '%s'", opname, trank, R, mem->name);
        return;
    }
    for (int d = 0; d < R; d++) {
        int64_t off = 0, ext = d >= R - trank ? tile[d - (R - trank)] : 1;
        if (o->nsteps == 1 && d < o->steps[0].n && !tile_expr_const(o->steps[0].idx[d], &off)) continue;
        if (off < 0 || off + ext > md[d]) {
            verr(V, o->pos, "%s: tile %s is outside shared '%s' %s in dimension %d (offset %lld)", opname,
                 shape_str(tile, trank, sb1, sizeof sb1), mem->name, type_str(&mem->type, tb, sizeof tb), d,
                 (long long)off);
            return;
        }
    }
}

static int same_shape(const tile_type *a, const tile_type *b)
{
    int64_t da[16], db[16];
    if (a->rank != b->rank || !const_dims(a, da) || !const_dims(b, db)) return 0;
    for (int i = 0; i < a->rank; i++)
        if (da[i] != db[i]) return 0;
    return 1;
}

static int same_layout(const tile_type *a, const tile_type *b)
{
    if (!a->layout || !b->layout) return a->layout == b->layout;
    if (a->layout->v.kind == LAYOUT_VALUE_DIST && b->layout->v.kind == LAYOUT_VALUE_DIST)
        return dist_layout_equal(&a->layout->v.dist, &b->layout->v.dist);
    return strcmp(a->layout->text, b->layout->text) == 0;
}

/* The type the instruction writes: its result's, or its `-> dst` tensor's. */
static const tile_type *out_type(const tile_instr *in)
{
    if (in->result) return &in->result->type;
    if (in->has_dst && in->dst.v) return &in->dst.v->type;
    return NULL;
}

/* ---- mma -------------------------------------------------------------------------
 * The atom's shape and fragment layouts come from the target tables
 * (src/target/sm80.c): `atom NAME` (m16n8k16 when absent) resolved for the
 * operands' dtypes. */

/* How messages name a row: its short alias (m16n8k16) when it has one. */
static const char *atom_short(const target_atom *at)
{
    return at->alias ? at->alias : at->name;
}

static void check_fragment(verifier *V, const tile_operand *o, const tile_value *v, const target_atom *at,
                           int which, const char *role)
{
    const dist_layout *f = target_atom_layout(at, which);
    if (!f || !v->type.layout || v->type.layout->v.kind != LAYOUT_VALUE_DIST) return;
    layout_err e;
    memset(&e, 0, sizeof e);
    dist_layout q;
    if (dist_layout_divide(&q, &v->type.layout->v.dist, f, &e) != TSL_OK)
        verr(V, o->pos, "mma: the %s fragment '%s' has layout %s, which does not end in the %s %s fragment %s",
             role, v->name, v->type.layout->text, atom_short(at), role, at->layout[which]);
}

static void check_mma(verifier *V, const tile_instr *in, size_t pos)
{
    const target_atom *at = target_mma_resolve(in->atom, TARGET_DT_ANY, TARGET_DT_ANY, NULL);
    if (!at) {
        verr(V, pos, "mma: unknown atom '%s' (known: m16n8k16, m16n8k8, mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32)",
             in->atom);
        return;
    }
    const tile_value *a = reg_operand(V, &in->args[0], "mma", "A operand");
    const tile_value *b = reg_operand(V, &in->args[1], "mma", "B operand");
    const tile_value *c = reg_operand(V, &in->args[2], "mma", "C operand");
    if (!a || !b || !c) return;
    /* the row of the operands' dtypes: its fragments are the ones to check;
     * a low-bit B takes a dequantizing row (mma.q), whose B is not A's dtype */
    tsl_dtype xa, xb, xc;
    int qb = b->type.dt.kind == TILE_DT_UINT && b->type.dt.bits <= 8 && !tile_dtype_to_tsl(b->type.dt, &xb);
    {
        const target_atom *r = tile_dtype_to_tsl(a->type.dt, &xa) || tile_dtype_to_tsl(c->type.dt, &xc)
                                   ? NULL
                                   : target_mma_resolve_ab(in->atom, (int)xa, qb ? (int)xb : TARGET_DT_ANY, (int)xc, NULL);
        if (r) at = r;
    }
    int qrow = at->dtype[TARGET_B] != TARGET_DT_ANY && at->dtype[TARGET_A] != at->dtype[TARGET_B];
    int64_t da[16], db[16], dc[16];
    char t1[128], t2[128], t3[128];
    if (a->type.rank != 2 || b->type.rank != 2 || c->type.rank != 2 || !const_dims(&a->type, da) ||
        !const_dims(&b->type, db) || !const_dims(&c->type, dc)) {
        verr(V, pos, "mma: A, B and C must be 2-D register tensors");
        return;
    }
    if (da[1] != db[0] || da[0] != dc[0] || db[1] != dc[1]) {
        verr(V, pos, "mma: shapes do not chain: A %s, B %s, C %s (need A[M, K], B[K, N], C[M, N])",
             type_str(&a->type, t1, sizeof t1), type_str(&b->type, t2, sizeof t2),
             type_str(&c->type, t3, sizeof t3));
        return;
    }
    if (da[0] % at->m || db[1] % at->n || da[1] % at->k)
        verr(V, pos, "mma: M=%lld, N=%lld, K=%lld are not multiples of the atom %s", (long long)da[0],
             (long long)db[1], (long long)da[1], atom_short(at));
    int dt_ok = 1;
    if (qrow) {
        /* the dequantizing rows: f16 X, B the row's low-bit codes */
        if (!qb || (int)xb != at->dtype[TARGET_B] || a->type.dt.kind != TILE_DT_FLOAT || a->type.dt.bits != 16 ||
            a->type.dt.exp != 5 || c->type.dt.kind != TILE_DT_FLOAT || c->type.dt.bits != 32)
            verr(V, pos, "mma: atom %s takes f16 A, a uint1, uint2, uint4 or uint8 B and f32 C, not %s, %s, %s",
                 at->alias ? at->alias : at->name, type_str(&a->type, t1, sizeof t1), type_str(&b->type, t2, sizeof t2),
                 type_str(&c->type, t3, sizeof t3));
        dt_ok = 0;
    } else if (!tile_dtype_eq(a->type.dt, b->type.dt)) {
        verr(V, pos, "mma: A is %s but B is %s", type_str(&a->type, t1, sizeof t1), type_str(&b->type, t2, sizeof t2));
        dt_ok = 0;
    }
    if (at->tf32 && (a->type.dt.kind != TILE_DT_FLOAT || a->type.dt.bits != 32 || c->type.dt.bits != 32)) {
        verr(V, pos, "mma: atom %s takes f32 A, B and C (rounded to tf32), not %s", atom_short(at),
             type_str(&a->type, t1, sizeof t1));
        dt_ok = 0;
    } else if (!at->tf32 && (a->type.dt.kind != TILE_DT_FLOAT || a->type.dt.bits != 16)) {
        verr(V, pos, "mma: atom %s takes f16 or bf16 A and B, not %s (f32 on the tensor cores: the tf32 atom "
             "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, by name)",
             atom_short(at), type_str(&a->type, t1, sizeof t1));
        dt_ok = 0;
    }
    if (c->type.dt.kind != TILE_DT_FLOAT || (c->type.dt.bits != 32 && c->type.dt.bits != 16)) {
        verr(V, pos, "mma: the accumulator must be f32 or f16, not %s", type_str(&c->type, t1, sizeof t1));
        dt_ok = 0;
    }
    tsl_dtype ta, tc;
    if (dt_ok && !tile_dtype_to_tsl(a->type.dt, &ta) && !tile_dtype_to_tsl(c->type.dt, &tc) &&
        !target_mma_resolve(in->atom, (int)ta, (int)tc, NULL))
        verr(V, pos, "mma: atom %s has no %s inputs with %s accumulators (bf16 accumulates in f32)", atom_short(at),
             type_str(&a->type, t1, sizeof t1), type_str(&c->type, t2, sizeof t2));
    check_fragment(V, &in->args[0], a, at, TARGET_A, "A");
    check_fragment(V, &in->args[1], b, at, TARGET_B, "B");
    check_fragment(V, &in->args[2], c, at, TARGET_C, "C");
    const tile_type *o = out_type(in);
    if (o && (!same_shape(o, &c->type) || !tile_dtype_eq(o->dt, c->type.dt) || !same_layout(o, &c->type)))
        verr(V, pos, "mma: the destination %s differs from C %s", type_str(o, t1, sizeof t1),
             type_str(&c->type, t2, sizeof t2));
}

/* ---- decompositions ----------------------------------------------------------------
 * decomp_check runs the decomposition's statements once per thread with
 * the scalars it can evaluate (lets, indices of thread groups, constant
 * loops), computes the elements each inner operand's view touches in the
 * tensor it is rooted at, and requires every element of each outer operand
 * that the decomposition refers to (a whole shared or register tensor) to
 * be touched by some thread. Anything it cannot evaluate (a bound that
 * depends on a run-time value) makes it give up silently: the check is
 * exact where it speaks, never a false alarm.
 *
 * Views inside a decomposition (docs/tile-ir.md):
 *   T.tile([a, b])  per-dim tilers; a tile is a 1-D layout (`2:2`) or size
 *   X[i, j]        a tiled X: tile (i, j) (missing trailing indices: 0);
 *                  an untiled X: anchored at (i, j) with the other
 *                  operand's extent; not followed (the check gives up)
 *   R.local        thread t's part of register tensor R, shaped as the
 *                  product of R's local(...) factors per dim. */

#define DC_MAXRANK 8

static void check_block(verifier *V, const tile_block *b);

typedef struct dc_view {
    int rank, tiled;
    int64_t ext[DC_MAXRANK];   /* untiled: extent; tiled: tile extent */
    int64_t outer[DC_MAXRANK]; /* tiled: tiles per dim */
    int64_t *map[DC_MAXRANK];  /* base coordinate of each position;
                                  tiled: map[d][j * ext + i] */
    int local;                 /* base is R.local (per-thread coordinates) */
} dc_view;

typedef struct dc_root {
    const tile_value *v;
    int64_t dims[DC_MAXRANK];
    int64_t n;
    uint8_t *hit;
    int used;
    int64_t lo[DC_MAXRANK], hi[DC_MAXRANK]; /* the operand's region: a box */
    int has_lloc;
    dist_layout lloc;         /* the local factors alone */
    int64_t lshape[DC_MAXRANK];
} dc_root;

typedef struct dc_state {
    verifier *V;
    tsl_arena *a;
    dc_root roots[8];
    int nroots;
    int64_t *vals;
    uint8_t *known;
    int64_t thread;
    int giveup, failed;
    long budget;
    tile_decomp_visitor vis;
} dc_state;

static int64_t dc_lookup(void *ctx, const tile_value *v, int *ok)
{
    dc_state *S = ctx;
    if (!S->known[v->id]) {
        *ok = 0;
        return 0;
    }
    return S->vals[v->id];
}

static int64_t dc_eval(dc_state *S, const tile_expr *e, int *ok)
{
    *ok = 1;
    return tile_expr_eval(e, dc_lookup, S, NULL, S->thread, ok);
}

static void dc_fail(dc_state *S, size_t pos, const char *fmt, ...) TSL_PRINTF(3, 4);

static void dc_fail(dc_state *S, size_t pos, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!S->failed) verr(S->V, pos, "%s", msg);
    S->failed = S->giveup = 1;
}

static dc_root *dc_root_of(dc_state *S, const tile_value *v)
{
    for (int i = 0; i < S->nroots; i++)
        if (S->roots[i].v == v) return &S->roots[i];
    return NULL;
}


/* Build the view of operand o for the current thread; 0 when the operand
 * is not rooted at an outer operand or on give-up. */
static int dc_view_of(dc_state *S, const tile_operand *o, dc_view *w, dc_root **rootp)
{
    dc_root *r = o->v ? dc_root_of(S, o->v) : NULL;
    if (!r) return 0;
    memset(w, 0, sizeof *w);
    int first = 0;
    w->rank = o->v->type.rank;
    const int64_t *base = r->dims;
    if (o->nsteps > 0 && o->steps[0].kind == TILE_STEP_LOCAL) {
        if (!r->has_lloc) {
            dc_fail(S, o->steps[0].pos, "'.local' needs a register tensor with local(...) factors");
            return 0;
        }
        w->local = 1;
        base = r->lshape;
        first = 1;
    }
    for (int d = 0; d < w->rank; d++) {
        w->ext[d] = base[d];
        if ((S->budget -= base[d]) < 0) {
            S->giveup = 1;
            return 0;
        }
        w->map[d] = arena_alloc(S->a, sizeof(int64_t) * (size_t)base[d]);
        for (int64_t i = 0; i < base[d]; i++) w->map[d][i] = i;
    }
    for (int k = first; k < o->nsteps; k++) {
        const tile_step *st = &o->steps[k];
        if (st->kind == TILE_STEP_LOCAL) {
            dc_fail(S, st->pos, "'.local' must be the first view step");
            return 0;
        }
        if (st->kind == TILE_STEP_TILE) {
            if (w->tiled || st->n > w->rank) {
                dc_fail(S, st->pos, "'.tile' takes at most %d tile extents, on an untiled view", w->rank);
                return 0;
            }
            for (int d = 0; d < w->rank; d++) {
                /* tilers are right-aligned; leading dims are tiled by 1 */
                int td = d - (w->rank - st->n);
                int64_t s = td >= 0 ? st->sizes[td] : 1, ext = w->ext[d];
                int64_t *nm = arena_alloc(S->a, sizeof(int64_t) * (size_t)ext);
                if (s < 1 || ext % s) {
                    dc_fail(S, st->pos, "tile extent %lld does not divide the view's extent %lld in dim %d",
                            (long long)s, (long long)ext, d);
                    return 0;
                }
                layout D;
                int have_d = 0;
                if (td >= 0 && st->tilers && st->tilers[td]) {
                    layout whole = layout_leaf(ext, 1);
                    layout_err e;
                    memset(&e, 0, sizeof e);
                    if (layout_divide_logical(&D, &whole, &st->tilers[td]->v.data, 0, &e) != TSL_OK ||
                        layout_size(&D) != ext) {
                        dc_fail(S, st->pos, "tile %s does not divide extent %lld: %s", st->tilers[td]->text,
                                (long long)ext, e.msg);
                        return 0;
                    }
                    have_d = 1;
                }
                for (int64_t j = 0; j < ext / s; j++)
                    for (int64_t i = 0; i < s; i++) {
                        int64_t c[2] = {i, j};
                        int64_t p = have_d ? layout_eval_coord(&D, c, 2) : j * s + i;
                        if (p < 0 || p >= ext) {
                            dc_fail(S, st->pos, "tile does not stay inside extent %lld", (long long)ext);
                            return 0;
                        }
                        nm[j * s + i] = w->map[d][p];
                    }
                w->map[d] = nm;
                w->outer[d] = ext / s;
                w->ext[d] = s;
            }
            w->tiled = 1;
            continue;
        }
        /* index: an untiled view is anchored at the offsets with the extent
         * of the other operand (an atom's business): not followed here */
        if (!w->tiled) {
            S->giveup = 1;
            return 0;
        }
        if (st->n > w->rank) {
            dc_fail(S, st->pos, "%d indices for a rank-%d view", st->n, w->rank);
            return 0;
        }
        for (int d = 0; d < w->rank; d++) {
            int ok = 1;
            /* missing trailing indices select tile 0 */
            int64_t j = d < st->n ? dc_eval(S, st->idx[d], &ok) : 0;
            if (!ok) {
                S->giveup = 1;
                return 0;
            }
            int64_t lim = w->outer[d];
            if (j < 0 || j >= lim) {
                dc_fail(S, d < st->n ? st->idx[d]->pos : st->pos, "index %lld is outside the %lld %s of dim %d (thread %lld)",
                        (long long)j, (long long)lim, "tiles", d, (long long)S->thread);
                return 0;
            }
            w->map[d] = w->map[d] + j * w->ext[d];
        }
        w->tiled = 0;
    }
    *rootp = r;
    return 1;
}

/* Mark every element of w in its root. */
static void dc_mark(dc_state *S, const dc_view *w, dc_root *r)
{
    int64_t cnt[DC_MAXRANK], total = 1;
    for (int d = 0; d < w->rank; d++) {
        cnt[d] = w->tiled ? w->ext[d] * w->outer[d] : w->ext[d];
        total *= cnt[d];
    }
    if ((S->budget -= total) < 0) { /* too much to check: say nothing */
        S->giveup = 1;
        return;
    }
    const dist_layout *L = r->v->type.layout ? &r->v->type.layout->v.dist : NULL;
    for (int64_t f = 0; f < total; f++) {
        int64_t rem = f, x[DC_MAXRANK], rc[DC_MAXRANK];
        for (int d = w->rank - 1; d >= 0; d--) {
            x[d] = w->map[d][rem % cnt[d]];
            rem /= cnt[d];
        }
        const int64_t *c = x;
        if (w->local) {
            int64_t t0, l;
            if (dist_layout_owner(&r->lloc, x, &t0, &l) != 0 || dist_layout_map(L, S->thread, l, rc) != 0) return;
            c = rc;
        }
        int64_t lin = 0;
        for (int d = 0; d < w->rank; d++) {
            if (c[d] < 0 || c[d] >= r->dims[d]) return;
            lin = lin * r->dims[d] + c[d];
        }
        r->hit[lin] = 1;
    }
    r->used = 1;
}


static int64_t dc_view_count(const dc_view *w)
{
    int64_t n = 1;
    for (int d = 0; d < w->rank; d++) n *= w->tiled ? w->ext[d] * w->outer[d] : w->ext[d];
    return n;
}

/* ldmatrix.xN[.trans] (a target row of kind ldmatrix): each thread gives
 * one row of 8 16-bit elements and receives 2*N of them. Checked on thread
 * 0 when both views are known. */
static void dc_check_ldmatrix(dc_state *S, const tile_instr *in, const int64_t *count, size_t pos)
{
    if (!in->atom || strncmp(in->atom, "ldmatrix", 8) != 0 || S->thread != 0) return;
    const target_atom *at = target_atom_by_name(in->atom);
    if (!at || at->kind != TARGET_K_LDMATRIX) {
        dc_fail(S, pos, "unknown atom '%s' (ldmatrix.x1, .x2, .x4, optionally .trans)", in->atom);
        return;
    }
    int n = at->count;
    if (count[0] >= 0 && count[0] != 8)
        dc_fail(S, in->args[0].pos, "%s: each thread supplies one row of 8 elements, but this view has %lld",
                in->atom, (long long)count[0]);
    else if (count[1] >= 0 && count[1] != 2 * n)
        dc_fail(S, in->dst.pos, "%s: each thread receives %d elements, but this view has %lld", in->atom, 2 * n,
                (long long)count[1]);
    const tile_operand *o = in->nargs ? &in->args[0] : NULL;
    if (!S->failed && o && o->v && o->v->kind == TILE_V_TENSOR && o->v->type.dt.bits != 16)
        dc_fail(S, o->pos, "%s moves 16-bit elements, not %d-bit ones", in->atom, o->v->type.dt.bits);
}

static void dc_instr(dc_state *S, const tile_instr *in, size_t pos)
{
    int64_t count[2] = {-1, -1}; /* elements per thread: source, destination */
    for (int i = 0; i <= in->nargs && !S->giveup; i++) {
        const tile_operand *o = i < in->nargs ? &in->args[i] : in->has_dst ? &in->dst : NULL;
        dc_view w;
        dc_root *r = NULL;
        if (o && dc_view_of(S, o, &w, &r)) {
            dc_mark(S, &w, r);
            if (i == 0 || i == in->nargs) count[i == 0 ? 0 : 1] = dc_view_count(&w);
        }
    }
    if (!S->giveup) dc_check_ldmatrix(S, in, count, pos);
}

/* The verifier's visitor of the one decomposition walk (decomp.c): it
 * evaluates what it can for the current thread and marks coverage; what
 * it cannot evaluate makes it give up (no false alarm). */
static tsl_status dcv_go(dc_state *S)
{
    if (--S->budget < 0) S->giveup = 1;
    return S->giveup ? TSL_ERR_UNAVAILABLE : TSL_OK;
}

static tsl_status dcv_scalar(void *ctx, const tile_stmt *s)
{
    dc_state *S = ctx;
    int ok;
    if (dcv_go(S)) return TSL_ERR_UNAVAILABLE;
    int64_t v = dc_eval(S, s->e, &ok);
    S->known[s->v->id] = (uint8_t)ok;
    S->vals[s->v->id] = v;
    return TSL_OK;
}

static tsl_status dcv_indices(void *ctx, const tile_stmt *s)
{
    dc_state *S = ctx;
    int64_t out[8];
    char err[256];
    if (dcv_go(S)) return TSL_ERR_UNAVAILABLE;
    if (s->nvs > 8 || tile_decomp_indices(&s->group->threads, S->thread, s->nvs, out, err, sizeof err)) {
        S->giveup = 1;
        return TSL_ERR_UNAVAILABLE;
    }
    for (int i = 0; i < s->nvs; i++) {
        S->known[s->vs[i]->id] = 1;
        S->vals[s->vs[i]->id] = out[i];
    }
    return TSL_OK;
}

static tsl_status dcv_loop(void *ctx, const tile_stmt *s)
{
    dc_state *S = ctx;
    int o1, o2, o3 = 1;
    if (dcv_go(S)) return TSL_ERR_UNAVAILABLE;
    int64_t lo = dc_eval(S, s->lo, &o1), hi = dc_eval(S, s->hi, &o2), st = 1;
    if (s->step) st = dc_eval(S, s->step, &o3);
    if (!o1 || !o2 || !o3 || st <= 0) {
        S->giveup = 1;
        return TSL_ERR_UNAVAILABLE;
    }
    for (int64_t i = lo; i < hi && !S->giveup; i += st) {
        S->known[s->v->id] = 1;
        S->vals[s->v->id] = i;
        if (tile_decomp_walk(s->body, &S->vis)) break;
    }
    return S->giveup ? TSL_ERR_UNAVAILABLE : TSL_OK;
}

static tsl_status dcv_branch(void *ctx, const tile_stmt *s)
{
    dc_state *S = ctx;
    int ok;
    if (dcv_go(S)) return TSL_ERR_UNAVAILABLE;
    int64_t c = dc_eval(S, s->e, &ok);
    if (!ok) {
        S->giveup = 1;
        return TSL_ERR_UNAVAILABLE;
    }
    return tile_decomp_walk(c ? s->body : s->els, &S->vis);
}

static tsl_status dcv_atom(void *ctx, const tile_stmt *s, const target_atom *a)
{
    dc_state *S = ctx;
    (void)a;
    if (dcv_go(S)) return TSL_ERR_UNAVAILABLE;
    dc_instr(S, &s->instr, s->pos);
    return S->giveup ? TSL_ERR_UNAVAILABLE : TSL_OK;
}

static tsl_status dcv_fail(void *ctx, size_t pos, tsl_status st, const char *msg)
{
    dc_fail(ctx, pos, "%s", msg);
    return st;
}

static void dc_block(dc_state *S, const tile_block *b)
{
    S->vis = (tile_decomp_visitor){.ctx = S, .scalar = dcv_scalar, .indices = dcv_indices, .branch = dcv_branch,
                                   .loop = dcv_loop, .collective = dcv_atom, .move = dcv_atom, .fail = dcv_fail};
    tile_decomp_walk(b, &S->vis);
}

/* The local factors of a distributed layout, composed in order. */
static int dc_local_part(const dist_layout *L, dist_layout *out)
{
    int have = 0;
    layout_err e;
    memset(&e, 0, sizeof e);
    for (int i = 0; i < L->natoms; i++) {
        const dist_atom *at = &L->atom[i];
        if (at->kind != DIST_LOCAL) continue;
        dist_layout a1;
        int64_t dims[DIST_MAX_RANK];
        int shift = L->rank - at->rank;
        for (int d = 0; d < L->rank; d++) dims[d] = d < shift ? 1 : at->dims[d - shift];
        if (dist_layout_atom(&a1, DIST_LOCAL, at->column, dims, L->rank, &e) != TSL_OK) return 0;
        if (!have) {
            *out = a1;
            have = 1;
        } else {
            dist_layout c;
            if (dist_layout_compose(&c, out, &a1, &e) != TSL_OK) return 0;
            *out = c;
        }
    }
    return have;
}

/* An outer operand: a whole shared/register tensor, or a tile of one at
 * constant offsets whose extent is `tile`'s shape (right-aligned). */
static void dc_add_root(dc_state *S, const tile_operand *o, const tile_type *tile)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || S->nroots >= 8 || dc_root_of(S, o->v)) return;
    const tile_type *t = &o->v->type;
    if (t->space == TILE_GLOBAL || t->rank > DC_MAXRANK) return;
    dc_root *r = &S->roots[S->nroots];
    memset(r, 0, sizeof *r);
    if (!const_dims(t, r->dims)) return;
    for (int d = 0; d < t->rank; d++) r->hi[d] = r->dims[d];
    if (o->nsteps) {
        int64_t td[16];
        if (o->nsteps != 1 || o->steps[0].kind != TILE_STEP_INDEX || !tile || tile->rank > t->rank ||
            !const_dims(tile, td))
            return;
        for (int d = 0; d < t->rank; d++) {
            int64_t off = 0;
            if (d < o->steps[0].n && !tile_expr_const(o->steps[0].idx[d], &off)) return;
            int k = d - (t->rank - tile->rank);
            r->lo[d] = off;
            r->hi[d] = off + (k >= 0 ? td[k] : 1);
            if (r->lo[d] < 0 || r->hi[d] > r->dims[d]) return;
        }
    }
    r->n = numel_of(r->dims, t->rank);
    if (r->n > (1 << 20)) return;
    r->v = o->v;
    r->hit = arena_alloc(S->a, (size_t)r->n);
    if (t->space == TILE_REGISTER && t->layout && t->layout->v.kind == LAYOUT_VALUE_DIST &&
        dc_local_part(&t->layout->v.dist, &r->lloc) && r->lloc.rank == t->rank) {
        r->has_lloc = 1;
        for (int d = 0; d < t->rank; d++) r->lshape[d] = r->lloc.shape[d];
    }
    S->nroots++;
}

static void decomp_check(verifier *V, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    int before = V->d->nerr;
    V->in_decomp++;
    check_block(V, in->decomp);
    V->in_decomp--;
    if (V->d->nerr > before) return; /* already reported; views may be malformed */
    dc_state S;
    memset(&S, 0, sizeof S);
    S.V = V;
    S.a = arena_create();
    if (!S.a) return;
    /* the register side of a transfer gives an indexed memory operand its
     * tile shape */
    const tile_type *tile = NULL;
    if (in->result && in->result->type.space == TILE_REGISTER) tile = &in->result->type;
    else if (in->nargs && in->args[0].v && in->args[0].v->type.space == TILE_REGISTER) tile = &in->args[0].v->type;
    for (int i = 0; i < in->nargs; i++) dc_add_root(&S, &in->args[i], tile);
    if (in->has_dst) dc_add_root(&S, &in->dst, tile);
    if (in->result) {
        tile_operand ro;
        memset(&ro, 0, sizeof ro);
        ro.v = in->result;
        dc_add_root(&S, &ro, NULL);
    }
    S.vals = arena_alloc(S.a, sizeof(int64_t) * (size_t)(V->k->nvalues + 1));
    S.known = arena_alloc(S.a, (size_t)V->k->nvalues + 1);
    /* statements run plus elements marked, over all threads: a few tenths
     * of a second at most, then the check gives up (it never raises a
     * false alarm, so giving up only loses a warning) */
    S.budget = 1 << 22;
    for (S.thread = 0; S.thread < V->threads && !S.giveup; S.thread++) {
        memset(S.known, 0, (size_t)V->k->nvalues + 1);
        dc_block(&S, in->decomp);
    }
    for (int i = 0; i < S.nroots && !S.giveup; i++) {
        dc_root *r = &S.roots[i];
        if (!r->used) continue;
        int64_t covered = 0, first = -1, want = 0;
        int rk = r->v->type.rank;
        for (int64_t j = 0; j < r->n; j++) {
            int64_t rem = j, inside = 1;
            for (int d = rk - 1; d >= 0; d--) {
                int64_t c = rem % r->dims[d];
                rem /= r->dims[d];
                inside &= c >= r->lo[d] && c < r->hi[d];
            }
            if (!inside) continue;
            want++;
            if (r->hit[j]) covered++;
            else if (first < 0) first = j;
        }
        if (covered == want) continue;
        int64_t c[DC_MAXRANK];
        int rank = r->v->type.rank;
        for (int d = rank - 1; d >= 0; d--) {
            c[d] = first % r->dims[d];
            first /= r->dims[d];
        }
        char sb1[96];
        verr(V, s->pos,
             "the decomposition of %s does not cover '%s': element %s is touched by no thread (%lld of %lld covered)",
             tile_op_info_of(in->op)->name, r->v->name, shape_str(c, rank, sb1, sizeof sb1), (long long)covered,
             (long long)want);
    }
    arena_free(S.a);
}

/* ---- instructions ------------------------------------------------------------------- */

static void check_same_elem(verifier *V, size_t pos, const char *opname, const tile_type *a,
                            const char *an, const tile_type *b, const char *bn)
{
    char t1[128], t2[128];
    if (!tile_dtype_eq(a->dt, b->dt) || !same_shape(a, b))
        verr(V, pos, "%s: %s %s and %s %s differ in dtype or shape", opname, an, type_str(a, t1, sizeof t1), bn,
             type_str(b, t2, sizeof t2));
    else if (a->space == TILE_REGISTER && b->space == TILE_REGISTER && !same_layout(a, b))
        verr(V, pos, "%s: %s has layout %s but %s has layout %s", opname, an, a->layout ? a->layout->text : "-",
             bn, b->layout ? b->layout->text : "-");
}

static int is_int_dt(tile_dtype dt) { return dt.kind == TILE_DT_INT || dt.kind == TILE_DT_UINT; }
static int is_bool_dt(tile_dtype dt) { return dt.kind == TILE_DT_BOOL; }

/* gather T, i... -> R [mask M] / scatter x -> T, i... [mask M]: T global of
 * rank = number of indices; indices are int register tensors shaped and laid
 * out like the lanes (R or x) or int exprs; the mask is bool like the lanes. */
static void check_gather(verifier *V, const tile_instr *in, size_t pos)
{
    const char *opn = tile_op_info_of(in->op)->name;
    char t1[128], t2[128];
    int gather = in->op == TILE_I_GATHER;
    const tile_operand *to = gather ? &in->args[0] : &in->dst;
    if (!to->v || to->v->kind != TILE_V_TENSOR || to->v->type.space != TILE_GLOBAL || to->nsteps) {
        verr(V, to->pos, "%s: the %s must be a whole global tensor", opn, gather ? "source" : "destination");
        return;
    }
    const tile_value *T = to->v;
    const tile_type *lanes = NULL;
    if (gather) {
        lanes = out_type(in);
    } else {
        const tile_value *x = reg_operand(V, &in->args[0], opn, "value");
        if (x) lanes = &x->type;
    }
    if (!lanes || V->in_decomp) return;
    if (lanes->space != TILE_REGISTER) {
        verr(V, pos, "%s: the elements are a register tensor, not %s", opn, tile_space_name(lanes->space));
        return;
    }
    if (!tile_dtype_eq(lanes->dt, T->type.dt))
        verr(V, pos, "%s: '%s' is %s but the elements are %s", opn, T->name, type_str(&T->type, t1, sizeof t1),
             type_str(lanes, t2, sizeof t2));
    if (in->nargs - 1 != T->type.rank) {
        verr(V, pos, "%s: %d indices for the rank-%d tensor '%s'", opn, in->nargs - 1, T->type.rank, T->name);
        return;
    }
    for (int i = 1; i < in->nargs; i++) {
        const tile_operand *ix = &in->args[i];
        if (!ix->v) continue;
        const tile_value *x = reg_operand(V, ix, opn, "index");
        if (!x) continue;
        if (!is_int_dt(x->type.dt) || !same_shape(&x->type, lanes) || !same_layout(&x->type, lanes))
            verr(V, ix->pos, "%s: index '%s' %s must be an int tensor shaped and laid out like %s", opn, x->name,
                 type_str(&x->type, t1, sizeof t1), type_str(lanes, t2, sizeof t2));
    }
    if (in->mask) {
        const tile_type *mt = &in->mask->type;
        if (mt->space != TILE_REGISTER || !is_bool_dt(mt->dt) || !same_shape(mt, lanes) || !same_layout(mt, lanes))
            verr(V, pos, "%s: mask '%s' %s must be a bool register tensor shaped and laid out like %s", opn,
                 in->mask->name, type_str(mt, t1, sizeof t1), type_str(lanes, t2, sizeof t2));
    }
}

/* erf not mod pow and or, comparisons, select, fma: register operands
 * share shape, layout and dtype (select: a and b do; c is bool); not/and/or
 * take bool; erf/pow floats; fma f16, bf16, f32 or f64 (its single rounding
 * is defined for those); comparisons give bool. */
static void check_elementwise_ext(verifier *V, const tile_instr *in, size_t pos)
{
    const char *opn = tile_op_info_of(in->op)->name;
    char t1[128];
    const tile_value *first = NULL;
    int from = in->op == TILE_I_SELECT ? 1 : 0;
    if (V->in_decomp) return;
    for (int i = 0; i < in->nargs; i++) {
        const tile_operand *op = &in->args[i];
        if (!op->v) continue;
        const tile_value *x = reg_operand(V, op, opn, "operand");
        if (!x) continue;
        if (i < from) {
            if (!is_bool_dt(x->type.dt)) verr(V, op->pos, "select: the condition '%s' must be bool", x->name);
            continue;
        }
        if (!first) first = x;
        else check_same_elem(V, op->pos, opn, &first->type, first->name, &x->type, x->name);
    }
    if (from && in->args[0].v && first) {
        const tile_type *c = &in->args[0].v->type;
        if (!same_shape(c, &first->type) || !same_layout(c, &first->type))
            verr(V, pos, "select: the condition '%s' and '%s' differ in shape or layout", in->args[0].v->name, first->name);
    }
    if (!first) {
        verr(V, pos, "%s needs at least one register tensor operand%s", opn, from ? " besides the condition" : "");
        return;
    }
    tile_dtype dt = first->type.dt;
    int want_bool = in->op == TILE_I_NOT || in->op == TILE_I_AND || in->op == TILE_I_OR;
    int want_float = in->op == TILE_I_ERF || in->op == TILE_I_POW;
    if (want_bool && !is_bool_dt(dt)) verr(V, pos, "%s takes bool tensors, not %s", opn, type_str(&first->type, t1, sizeof t1));
    if (want_float && dt.kind != TILE_DT_FLOAT)
        verr(V, pos, "%s takes float tensors, not %s", opn, type_str(&first->type, t1, sizeof t1));
    tsl_dtype tdt;
    if (in->op == TILE_I_FMA && (tile_dtype_to_tsl(dt, &tdt) || (tdt != TSL_DTYPE_F16 && tdt != TSL_DTYPE_BF16 &&
                                                                  tdt != TSL_DTYPE_F32 && tdt != TSL_DTYPE_F64)))
        verr(V, pos, "fma takes f16, bf16, f32 or f64 tensors, not %s (on integers: mul, then add)",
             type_str(&first->type, t1, sizeof t1));
    const tile_type *o = out_type(in);
    if (o && in->has_dst) {
        tile_type want = first->type;
        if (tile_op_is_compare(in->op)) want.dt = tile_dtype_from_tsl(TSL_DTYPE_BOOL);
        check_same_elem(V, in->dst.pos, opn, &want, "the result", o, in->dst.v->name);
    }
}

/* ---- Hopper (docs/tile-ir.md section 5b) ---------------------------------------- */

/* A barrier operand: a shared u64 tensor, whole or indexed. */
static const tile_value *barrier_operand(verifier *V, const tile_operand *o, const char *opn)
{
    const tile_value *b = mem_operand(V, o, TILE_SHARED, opn, "barrier", 0);
    if (b && (b->type.dt.kind != TILE_DT_UINT || b->type.dt.bits != 64)) {
        char t1[128];
        verr(V, o->pos, "%s: the barrier '%s' must be a shared u64 tensor, not %s", opn, b->name,
             type_str(&b->type, t1, sizeof t1));
        return NULL;
    }
    return b;
}

static void check_wait_count(verifier *V, const tile_operand *o, const char *opn)
{
    int64_t n;
    if (o->v || !tile_expr_const(o->scalar, &n))
        verr(V, o->pos, "%s: the count must be an integer constant", opn);
    else if (n < 0 || n > 7)
        verr(V, o->pos, "%s: count %lld is out of range (0..7)", opn, (long long)n);
}

/* tma_load / tma_store: the shared side is a tensor or a slice of its
 * leading dims; the box (its trailing dims) has rank 1..5, each extent at
 * most 256, rows a multiple of 16 bytes, and the global tensor's rank. */
static void check_tma(verifier *V, const tile_instr *in, size_t pos, const tile_operand *gop,
                      const tile_operand *sop, const char *opn)
{
    char t1[128], t2[128];
    const tile_value *g = mem_operand(V, gop, TILE_GLOBAL, opn, "global tensor", 1);
    const tile_value *sh = mem_operand(V, sop, TILE_SHARED, opn, "shared tensor", 0);
    if (!g || !sh) return;
    if (!tile_dtype_eq(g->type.dt, sh->type.dt) || g->type.dt.bits % 8) {
        verr(V, pos, "%s: '%s' is %s but '%s' is %s (equal byte-sized element types)", opn, g->name,
             type_str(&g->type, t1, sizeof t1), sh->name, type_str(&sh->type, t2, sizeof t2));
        return;
    }
    int64_t sd[16];
    if (!const_dims(&sh->type, sd)) return;
    int k = sop->nsteps ? sop->steps[0].n : 0;
    int box = sh->type.rank - k;
    if (box < 1 || box > 5 || box > g->type.rank) {
        verr(V, pos, "%s: the box (the trailing %d dims of '%s') must have rank 1..5 and at most %d, the rank of '%s'",
             opn, box, sh->name, g->type.rank, g->name);
        return;
    }
    for (int d = k; d < sh->type.rank; d++)
        if (sd[d] > 256)
            verr(V, pos, "%s: box extent %lld in dimension %d of '%s' is over 256", opn, (long long)sd[d], d,
                 sh->name);
    int64_t row = sd[sh->type.rank - 1] * g->type.dt.bits / 8;
    if (row % 16)
        verr(V, pos, "%s: a box row of %lld bytes is not a multiple of 16", opn, (long long)row);
    const tile_layout *L = sh->type.layout;
    if (L && L->v.kind == LAYOUT_VALUE_DATA && L->v.data.sw.b) {
        int eb = g->type.dt.bits / 8, le = eb == 1 ? 0 : eb == 2 ? 1 : eb == 4 ? 2 : 3;
        int64_t swb = 16LL << L->v.data.sw.b;
        if (L->v.data.sw.m + le != 4 || L->v.data.sw.s != 3 || L->v.data.sw.b > 3)
            verr(V, pos, "%s: the swizzle of '%s' is not one TMA writes (Swizzle<b,%d,3>, b = 1..3)", opn, sh->name,
                 4 - le);
        else if (row > swb && row % swb)
            verr(V, pos, "%s: a box row of %lld bytes is neither within nor a multiple of its %lld-byte swizzle", opn,
                 (long long)row, (long long)swb);
    }
    (void)in;
}

static void check_wgmma(verifier *V, const tile_instr *in, size_t pos)
{
    char t1[128], t2[128], lay[128], why[256];
    if (V->threads != 128) {
        verr(V, pos, "wgmma runs on a warpgroup: it needs a role or a kernel of 128 threads, not %d", V->threads);
        return;
    }
    const tile_value *c = reg_operand(V, &in->args[2], "wgmma", "accumulator");
    if (!c) return;
    int64_t dc[16], da[16], db[16];
    if (c->type.rank != 2 || !const_dims(&c->type, dc) || dc[0] != 64 || dc[1] % 8 || dc[1] < 8 || dc[1] > 256) {
        verr(V, pos, "wgmma: the accumulator '%s' %s must be [64, N] with N a multiple of 8 in 8..256", c->name,
             type_str(&c->type, t1, sizeof t1));
        return;
    }
    if (c->type.dt.kind != TILE_DT_FLOAT || (c->type.dt.bits != 32 && c->type.dt.bits != 16))
        verr(V, pos, "wgmma: the accumulator must be f32 or f16, not %s", type_str(&c->type, t1, sizeof t1));
    tile_wgmma_acc_layout((int)dc[1], lay, sizeof lay);
    layout_value want;
    layout_err e;
    memset(&e, 0, sizeof e);
    if (layout_parse(lay, strlen(lay), &want, &e) == TSL_OK && c->type.layout &&
        !dist_layout_equal(&c->type.layout->v.dist, &want.dist))
        verr(V, pos, "wgmma: the accumulator '%s' has layout %s, not the m64n%lldk16 fragment %s", c->name,
             c->type.layout->text, (long long)dc[1], lay);
    const tile_operand *ao = &in->args[0], *bo = &in->args[1];
    const tile_value *a = ao->v, *b = bo->v;
    if (!a || a->kind != TILE_V_TENSOR || !b || b->kind != TILE_V_TENSOR) {
        verr(V, pos, "wgmma: A and B must be tensors");
        return;
    }
    /* shapes: A [64, K] (a shared box or a register tensor), B [K, N] (a
     * shared box); a shared box is anchored at the operand's offsets */
    const tile_value *bs = mem_operand(V, bo, TILE_SHARED, "wgmma", "B operand", 0);
    if (!bs || !const_dims(&bs->type, db)) return;
    int rb = bs->type.rank;
    int64_t N = dc[1], K = 0;
    if (a->type.space == TILE_REGISTER) {
        if (ao->nsteps) verr(V, ao->pos, "wgmma: the register A operand '%s' cannot be indexed", a->name);
        if (a->type.rank != 2 || !const_dims(&a->type, da) || da[0] != 64 || da[1] % 16) {
            verr(V, pos, "wgmma: the register A '%s' %s must be [64, K], K a multiple of 16", a->name,
                 type_str(&a->type, t1, sizeof t1));
            return;
        }
        K = da[1];
        tile_wgmma_a_layout((int)K, lay, sizeof lay);
        if (layout_parse(lay, strlen(lay), &want, &e) == TSL_OK && a->type.layout &&
            !dist_layout_equal(&a->type.layout->v.dist, &want.dist))
            verr(V, pos, "wgmma: the register A '%s' has layout %s, not the m64nNk16 A fragment %s", a->name,
                 a->type.layout->text, lay);
    } else {
        const tile_value *as = mem_operand(V, ao, TILE_SHARED, "wgmma", "A operand", 0);
        if (!as || !const_dims(&as->type, da)) return;
        int ra = as->type.rank;
        K = rb >= 2 ? db[rb - 2] : 0; /* the depth of B's box */
        int64_t box[2] = {64, K};
        if (ra < 2 || K % 16 || K < 16) {
            verr(V, pos, "wgmma: A's box [64, K] in '%s' %s needs K a multiple of 16", as->name,
                 type_str(&as->type, t1, sizeof t1));
            return;
        }
        check_box(V, ao, as, box, 2, "wgmma");
        tile_wgmma_smem sm;
        if (!tile_wgmma_smem_of(&as->type, ra - 2, 64, K, &sm, why, sizeof why))
            verr(V, ao->pos, "wgmma: the A operand '%s' (layout %s) is not a wgmma shared layout: %s", as->name,
                 as->type.layout ? as->type.layout->text : "row-major", why);
    }
    if (rb < 2 || K % 16 || K < 16) {
        verr(V, pos, "wgmma: B's box [%lld, %lld] in '%s' needs K a multiple of 16", (long long)K, (long long)N,
             bs->name);
        return;
    }
    int64_t bbox[2] = {K, N};
    check_box(V, bo, bs, bbox, 2, "wgmma");
    tile_wgmma_smem sm;
    if (!tile_wgmma_smem_of(&bs->type, rb - 1, N, K, &sm, why, sizeof why))
        verr(V, bo->pos, "wgmma: the B operand '%s' (layout %s) is not a wgmma shared layout: %s", bs->name,
             bs->type.layout ? bs->type.layout->text : "row-major", why);
    if (!tile_dtype_eq(a->type.dt, b->type.dt) || a->type.dt.kind != TILE_DT_FLOAT || a->type.dt.bits != 16)
        verr(V, pos, "wgmma: A and B must both be f16 or both bf16, not %s and %s", type_str(&a->type, t1, sizeof t1),
             type_str(&b->type, t2, sizeof t2));
    const tile_type *o = out_type(in);
    if (o && (!same_shape(o, &c->type) || !tile_dtype_eq(o->dt, c->type.dt) || !same_layout(o, &c->type)))
        verr(V, pos, "wgmma: the destination %s differs from the accumulator %s", type_str(o, t1, sizeof t1),
             type_str(&c->type, t2, sizeof t2));
}

static void check_hopper(verifier *V, const tile_instr *in, size_t pos)
{
    const char *opn = tile_op_info_of(in->op)->name;
    if (V->in_pipeline && in->op != TILE_I_WGMMA && in->op != TILE_I_WGMMA_FENCE && in->op != TILE_I_WGMMA_COMMIT &&
        in->op != TILE_I_WGMMA_WAIT && in->op != TILE_I_FENCE_ASYNC)
        verr(V, pos, "%s inside a pipeline body: the pipeline issues its own copies", opn);
    switch (in->op) {
    case TILE_I_MBAR_INIT: {
        barrier_operand(V, &in->args[0], opn);
        int64_t n;
        if (in->args[1].v) verr(V, in->args[1].pos, "mbar_init: the arrival count must be an int expression");
        else if (tile_expr_const(in->args[1].scalar, &n) && (n < 1 || n >= (1 << 20)))
            verr(V, in->args[1].pos, "mbar_init: arrival count %lld is not in 1..2^20-1", (long long)n);
        break;
    }
    case TILE_I_MBAR_ARRIVE:
        barrier_operand(V, &in->args[0], opn);
        if (in->bytes < 0 || in->bytes >= (1 << 20))
            verr(V, pos, "mbar_arrive: %lld transaction bytes is not in 0..2^20-1", (long long)in->bytes);
        if (in->cta && in->bytes)
            verr(V, pos, "mbar_arrive: a remote arrive (cta) cannot expect transaction bytes; arrive on the block's "
                 "own barrier for those");
        break;
    case TILE_I_MBAR_WAIT:
        barrier_operand(V, &in->args[0], opn);
        if (in->args[1].v) verr(V, in->args[1].pos, "mbar_wait: the phase parity must be an int expression");
        break;
    case TILE_I_TMA_LOAD:
        check_tma(V, in, pos, &in->args[0], &in->dst, opn);
        barrier_operand(V, &in->args[1], opn);
        break;
    case TILE_I_TMA_STORE: check_tma(V, in, pos, &in->dst, &in->args[0], opn); break;
    case TILE_I_CLUSTER_SYNC:
        if (V->k->cluster < 2) verr(V, pos, "cluster_sync in a kernel without cluster(N), N >= 2");
        else if (V->depth != 1 || V->in_roles || V->in_pipeline)
            verr(V, pos, "cluster_sync must be a statement of the kernel's top level (every thread of every block "
                 "of the cluster runs it)");
        break;
    case TILE_I_BULK_WAIT:
    case TILE_I_WGMMA_WAIT: check_wait_count(V, &in->args[0], opn); break;
    case TILE_I_WGMMA: check_wgmma(V, in, pos); break;
    default: break;
    }
}

/* `cta R` (mbar_arrive) and `multicast M` (tma_load): int expressions,
 * in a kernel with cluster(N >= 2); constants within the cluster. */
static void check_cluster_attrs(verifier *V, const tile_instr *in, size_t pos, const char *opn)
{
    const tile_expr *e[2] = {in->cta, in->mcast};
    const char *kw[2] = {"cta", "multicast"};
    tile_op ok[2] = {TILE_I_MBAR_ARRIVE, TILE_I_TMA_LOAD};
    int n = V->k->cluster;
    for (int i = 0; i < 2; i++) {
        if (!e[i]) continue;
        int64_t c;
        check_expr(V, e[i]);
        if (in->op != ok[i]) verr(V, pos, "%s takes no '%s'", opn, kw[i]);
        else if (n < 2) verr(V, pos, "%s ... %s: the kernel has no cluster(N), N >= 2", opn, kw[i]);
        else if (tile_expr_const(e[i], &c) && (i == 0 ? c < 0 || c >= n : c < 1 || c >= ((int64_t)1 << n)))
            verr(V, e[i]->pos, i == 0 ? "%s: cta %lld is not a block of the cluster (0..%d)"
                                      : "%s: multicast mask %lld names no block or one past the cluster's %d",
                 opn, (long long)c, i == 0 ? n - 1 : n);
    }
}

/* warpgroups: 128 threads per warpgroup, the roles' counts adding up to the
 * kernel's threads; each role body is a SIMB block of 128 threads. */
static void check_warpgroups(verifier *V, const tile_stmt *s)
{
    if (V->in_decomp || V->in_roles || V->in_pipeline) {
        verr(V, s->pos, "warpgroups must not be inside a decomposition, a role or a pipeline");
        return;
    }
    if (V->k->cluster >= 2 && V->depth != 1)
        verr(V, s->pos, "warpgroups of a cluster kernel must be a statement of the kernel's top level");
    int total = 0;
    for (int i = 0; i < s->nroles; i++) total += s->roles[i].count;
    if (total * 128 != V->k->threads)
        verr(V, s->pos, "warpgroups: the roles have %d warpgroups (%d threads) but the kernel runs threads(%d)",
             total, total * 128, V->k->threads);
    /* setmaxnreg moves registers between the warpgroups of one block: the
     * block's 65,536 must cover every role's request (a role without regs
     * keeps its launch share), or the increasing warpgroups wait forever */
    int asked = 0, any = 0, share = V->k->threads > 0 ? (65536 / V->k->threads) & ~7 : 0;
    for (int i = 0; i < s->nroles; i++) {
        any |= s->roles[i].regs != 0;
        asked += s->roles[i].count * 128 * (s->roles[i].regs ? s->roles[i].regs : share);
    }
    if (any && asked > 65536)
        verr(V, s->pos,
             "warpgroups: the roles ask for %d registers in all (count x 128 x regs) but a block has 65536: "
             "setmaxnreg would wait forever",
             asked);
    int saved = V->threads;
    V->threads = 128;
    V->in_roles++;
    for (int i = 0; i < s->nroles; i++) {
        const tile_role *r = &s->roles[i];
        if (r->index) make_visible(V, r->index);
        check_block(V, r->body);
        if (r->index) V->visible[r->index->id] = 0;
    }
    V->in_roles--;
    V->threads = saved;
}

/* view of a shared tensor: another logical shape and data layout over the
 * same storage (no data moves): same element type, and the view's offsets
 * stay inside the tensor's (cosize). */
static void check_shared_view(verifier *V, const tile_instr *in, size_t pos)
{
    const tile_value *x = in->args[0].v;
    const tile_type *o = in->result ? &in->result->type : NULL;
    char t1[128], t2[128];
    if (in->args[0].nsteps) verr(V, in->args[0].pos, "view: the shared tensor '%s' cannot be indexed", x->name);
    if (!o || o->space != TILE_SHARED) {
        verr(V, pos, "view: a view of the shared tensor '%s' is a shared tensor", x->name);
        return;
    }
    if (!tile_dtype_eq(x->type.dt, o->dt)) {
        verr(V, pos, "view: '%s' is %s but the view %s (a shared view keeps the element type)", x->name,
             type_str(&x->type, t1, sizeof t1), type_str(o, t2, sizeof t2));
        return;
    }
    int64_t dx[16], dv[16];
    if (!const_dims(&x->type, dx) || !const_dims(o, dv)) return;
    int64_t cx = x->type.layout && x->type.layout->v.kind == LAYOUT_VALUE_DATA ? layout_cosize(&x->type.layout->v.data)
                                                                             : numel_of(dx, x->type.rank);
    int64_t cv = o->layout && o->layout->v.kind == LAYOUT_VALUE_DATA ? layout_cosize(&o->layout->v.data)
                                                                     : numel_of(dv, o->rank);
    if (cv > cx)
        verr(V, pos, "view: the view %s reaches element %lld of '%s', which has %lld", type_str(o, t2, sizeof t2),
             (long long)(cv - 1), x->name, (long long)cx);
}

/* `atom NAME` outside a decomposition names a row of some target table
 * that implements the instruction (whether it fits is the selection
 * pass's business, per target; inside decompositions the walk checks). */
static void check_atom_name(verifier *V, const tile_instr *in, size_t pos)
{
    const char *opn = tile_op_info_of(in->op)->name;
    target_query q = target_query_any();
    q.op = tile_op_target(in->op);
    int named = 0;
    const target_atom *a = target_atom_resolve(in->atom, &q, &named);
    if (!named) verr(V, pos, "%s: unknown atom '%s'", opn, in->atom);
    else if (!q.op || !a) verr(V, pos, "%s: atom %s does not implement %s", opn, in->atom, opn);
}

static void check_instr(verifier *V, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_op_info *info = tile_op_info_of(in->op);
    const char *opn = info->name;
    size_t pos = s->pos;
    char t1[128], t2[128];
    if (in->nargs < info->min_args || in->nargs > info->max_args) {
        verr(V, pos, "%s takes %d operands, not %d", opn, info->min_args, in->nargs);
        return;
    }
    for (int i = 0; i < in->nargs; i++) check_operand_scope(V, &in->args[i]);
    if (in->has_dst) check_operand_scope(V, &in->dst);
    check_expr(V, in->init);
    if (in->on && !V->in_decomp) verr(V, pos, "%s: 'on %s' is only allowed inside a decomposition", opn, in->on->name);
    if (in->on && in->on->kind == TILE_V_THREADS && V->threads % in->on->threads.total)
        verr(V, pos, "%s: the group '%s' of %d threads does not divide threads(%d)", opn, in->on->name,
             in->on->threads.total, V->threads);
    if (in->result) check_type(V, &in->result->type, in->result->name, pos);
    if (in->init && in->op != TILE_I_ALLOC && in->op != TILE_I_LOAD_GLOBAL && in->op != TILE_I_COPY_ASYNC)
        verr(V, pos, "%s takes no init/fill value", opn);
    if (in->approx && !tile_op_has_approx(in->op)) verr(V, pos, "%s has no .approx form", opn);
    if (in->dim >= 0 && !tile_op_is_reduce(in->op) && in->op != TILE_I_BROADCAST && in->op != TILE_I_IOTA)
        verr(V, pos, "%s takes no 'dim'", opn);
    if (in->mask && in->op != TILE_I_GATHER && in->op != TILE_I_SCATTER) verr(V, pos, "%s takes no 'mask'", opn);
    if (in->mask && !V->visible[in->mask->id]) verr(V, pos, "use of undefined value '%s'", in->mask->name);
    if (in->atom && !V->in_decomp && in->op != TILE_I_MMA) check_atom_name(V, in, pos);
    for (int i = 0; i < in->nargs; i++)
        if (typed_operand(&in->args[i]) && !tile_op_is_unary(in->op) && !tile_op_is_binary(in->op) &&
            !tile_op_is_elementwise_ext(in->op))
            verr(V, in->args[i].pos, "%s: the typed scalar '%s' can only be an operand of an elementwise instruction",
                 opn, in->args[i].scalar->v->name);
    if (in->bytes && in->op != TILE_I_COPY_ASYNC && in->op != TILE_I_MBAR_ARRIVE) verr(V, pos, "%s takes no 'bytes'", opn);
    check_cluster_attrs(V, in, pos, opn);
    if (tile_op_is_hopper(in->op)) {
        if (V->in_decomp) verr(V, pos, "%s is not allowed inside a decomposition", opn);
        else check_hopper(V, in, pos);
        return;
    }
    const tile_type *o = out_type(in);
    int64_t tile[16];

    switch (in->op) {
    case TILE_I_ALLOC:
        if (in->result && in->result->type.space == TILE_SHARED && !V->in_decomp)
            V->smem_alloc = add_sat(V->smem_alloc, shared_bytes(&in->result->type));
        break;
    case TILE_I_LOAD_GLOBAL:
    case TILE_I_LOAD_SHARED: {
        tile_space sp = in->op == TILE_I_LOAD_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
        const tile_value *g = mem_operand(V, &in->args[0], sp, opn, "source", sp == TILE_GLOBAL);
        if (!g || !o || V->in_decomp) break;
        if (o->space != TILE_REGISTER) {
            verr(V, pos, "%s loads into a register tensor, not %s", opn, tile_space_name(o->space));
            break;
        }
        if (!tile_dtype_eq(g->type.dt, o->dt))
            verr(V, pos, "%s: source '%s' is %s but the result is %s", opn, g->name, type_str(&g->type, t1, sizeof t1),
                 type_str(o, t2, sizeof t2));
        if (o->rank > g->type.rank)
            verr(V, pos, "%s: a rank-%d tile from the rank-%d tensor '%s'", opn, o->rank, g->type.rank, g->name);
        else if (const_dims(o, tile))
            check_box(V, &in->args[0], g, tile, o->rank, opn);
        break;
    }
    case TILE_I_STORE_GLOBAL:
    case TILE_I_STORE_SHARED: {
        tile_space sp = in->op == TILE_I_STORE_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
        const tile_value *r = reg_operand(V, &in->args[0], opn, "value");
        const tile_value *g = mem_operand(V, &in->dst, sp, opn, "destination", sp == TILE_GLOBAL);
        if (!r || !g || V->in_decomp) break;
        if (!tile_dtype_eq(g->type.dt, r->type.dt))
            verr(V, pos, "%s: '%s' is %s but the destination '%s' is %s", opn, r->name,
                 type_str(&r->type, t1, sizeof t1), g->name, type_str(&g->type, t2, sizeof t2));
        if (r->type.rank > g->type.rank)
            verr(V, pos, "%s: a rank-%d tile into the rank-%d tensor '%s'", opn, r->type.rank, g->type.rank, g->name);
        else if (const_dims(&r->type, tile))
            check_box(V, &in->dst, g, tile, r->type.rank, opn);
        break;
    }
    case TILE_I_COPY_ASYNC: {
        const tile_value *g = mem_operand(V, &in->args[0], TILE_GLOBAL, opn, "source", 1);
        const tile_value *sh = mem_operand(V, &in->dst, TILE_SHARED, opn, "destination", 0);
        if (!g || !sh || V->in_decomp) break;
        if (!tile_dtype_eq(g->type.dt, sh->type.dt))
            verr(V, pos, "copy_async: source '%s' is %s but the destination '%s' is %s", g->name,
                 type_str(&g->type, t1, sizeof t1), sh->name, type_str(&sh->type, t2, sizeof t2));
        int k = in->dst.nsteps ? in->dst.steps[0].n : 0;
        int64_t sd[16];
        if (!const_dims(&sh->type, sd)) break;
        if (k >= sh->type.rank) {
            verr(V, in->dst.pos, "copy_async: the destination is a shared tensor or a slice of its leading dims; "
                 "%d indices leave nothing of the rank-%d '%s'", k, sh->type.rank, sh->name);
            break;
        }
        int trank = sh->type.rank - k;
        if (trank > g->type.rank)
            verr(V, pos, "copy_async: a rank-%d tile from the rank-%d tensor '%s'", trank, g->type.rank, g->name);
        for (int i = 0; i < k; i++) {
            int64_t off;
            if (tile_expr_const(in->dst.steps[0].idx[i], &off) && (off < 0 || off >= sd[i]))
                verr(V, in->dst.pos, "copy_async: index %lld is outside dimension %d of '%s' (extent %lld)",
                     (long long)off, i, sh->name, (long long)sd[i]);
        }
        if (in->bytes) {
            int64_t row = (sd[sh->type.rank - 1] * sh->type.dt.bits + 7) / 8;
            if (in->bytes != 4 && in->bytes != 8 && in->bytes != 16)
                verr(V, pos, "copy_async: bytes %lld is not a cp.async size (4, 8 or 16)", (long long)in->bytes);
            else if (row % in->bytes)
                verr(V, pos, "copy_async: %lld-byte chunks do not divide a tile row of %lld bytes",
                     (long long)in->bytes, (long long)row);
        }
        break;
    }
    case TILE_I_WAIT: {
        int64_t n;
        if (in->args[0].v || !tile_expr_const(in->args[0].scalar, &n))
            verr(V, in->args[0].pos, "wait: the count must be an integer constant");
        else if (n < 0 || n > 7)
            verr(V, in->args[0].pos, "wait: count %lld is out of range (cp.async.wait_group takes 0..7)", (long long)n);
        else if (V->pipe_stages && n > V->pipe_stages - 1)
            verr(V, in->args[0].pos, "wait: count %lld is out of range for a %d-stage pipeline (0..%d)",
                 (long long)n, V->pipe_stages, V->pipe_stages - 1);
        break;
    }
    case TILE_I_MMA: check_mma(V, in, pos); break;
    case TILE_I_CAST:
    case TILE_I_COPY: {
        const tile_value *x = reg_operand(V, &in->args[0], opn, "operand");
        if (!x || !o || V->in_decomp) break;
        if (!same_shape(&x->type, o) || !same_layout(&x->type, o))
            verr(V, pos, "%s: '%s' %s and the result %s must have the same shape and layout", opn, x->name,
                 type_str(&x->type, t1, sizeof t1), type_str(o, t2, sizeof t2));
        break;
    }
    case TILE_I_VIEW: {
        if (in->args[0].v && in->args[0].v->kind == TILE_V_TENSOR && in->args[0].v->type.space == TILE_SHARED) {
            check_shared_view(V, in, pos);
            break;
        }
        const tile_value *x = reg_operand(V, &in->args[0], opn, "operand");
        if (!x || !o || V->in_decomp || !x->type.layout || !o->layout || o->layout->v.kind != LAYOUT_VALUE_DIST ||
            x->type.layout->v.kind != LAYOUT_VALUE_DIST)
            break;
        const dist_layout *lx = &x->type.layout->v.dist, *lo = &o->layout->v.dist;
        int64_t bx = lx->locals * x->type.dt.bits, bo = lo->locals * o->dt.bits;
        char n1[16], n2[16];
        if (lx->threads != lo->threads)
            verr(V, pos, "view: '%s' is spread over %lld threads but the view over %lld", x->name,
                 (long long)lx->threads, (long long)lo->threads);
        else if (bx != bo)
            verr(V, pos,
                 "view changes bits per thread: '%s' holds %lld x %s = %lld bits per thread, the view %lld x %s = %lld bits",
                 x->name, (long long)lx->locals, tile_dtype_name(x->type.dt, n1), (long long)bx,
                 (long long)lo->locals, tile_dtype_name(o->dt, n2), (long long)bo);
        break;
    }
    case TILE_I_REDUCE_SUM:
    case TILE_I_REDUCE_MAX:
    case TILE_I_REDUCE_MIN:
    case TILE_I_BROADCAST: {
        const tile_value *x = reg_operand(V, &in->args[0], opn, "operand");
        if (!x || !o || V->in_decomp) break;
        int red = in->op != TILE_I_BROADCAST;
        const tile_type *big = red ? &x->type : o, *small = red ? o : &x->type;
        int64_t db[16], ds[16];
        if (in->dim < 0 || in->dim >= big->rank) {
            verr(V, pos, "%s: needs 'dim D' with 0 <= D < %d", opn, big->rank);
            break;
        }
        if (!tile_dtype_eq(x->type.dt, o->dt))
            verr(V, pos, "%s: '%s' is %s but the result is %s", opn, x->name, type_str(&x->type, t1, sizeof t1),
                 type_str(o, t2, sizeof t2));
        if (!const_dims(big, db) || !const_dims(small, ds)) break;
        int ok = 1;
        if (small->rank == big->rank) { /* kept as extent 1 */
            for (int i = 0; i < big->rank; i++) ok &= ds[i] == (i == in->dim ? 1 : db[i]);
        } else if (small->rank == big->rank - 1) {
            for (int i = 0, j = 0; i < big->rank; i++)
                if (i != in->dim) ok &= ds[j++] == db[i];
        } else {
            ok = 0;
        }
        if (!ok)
            verr(V, pos, "%s over dim %d: %s and %s do not match (the dim is removed or kept as 1)", opn, in->dim,
                 type_str(big, t1, sizeof t1), type_str(small, t2, sizeof t2));
        break;
    }
    case TILE_I_SHUFFLE_XOR:
    case TILE_I_SHUFFLE_UP:
    case TILE_I_SHUFFLE_DOWN:
    case TILE_I_SHUFFLE_IDX:
        reg_operand(V, &in->args[0], opn, "operand");
        if (in->args[1].v) verr(V, in->args[1].pos, "%s: the lane operand must be an int expression", opn);
        break;
    case TILE_I_PRINT:
    case TILE_I_COMMIT:
    case TILE_I_SYNC: break;
    case TILE_I_IOTA:
        if (!o || V->in_decomp) break;
        if (o->space != TILE_REGISTER || (o->dt.kind != TILE_DT_INT && o->dt.kind != TILE_DT_UINT))
            verr(V, pos, "iota creates a register tensor of an integer type, not %s", type_str(o, t1, sizeof t1));
        else if (in->dim < 0 || in->dim >= o->rank)
            verr(V, pos, "iota: needs 'dim D' with 0 <= D < %d", o->rank);
        if (in->nargs && in->args[0].v) verr(V, in->args[0].pos, "iota: the offset must be an int expression");
        break;
    case TILE_I_GATHER:
    case TILE_I_SCATTER: check_gather(V, in, pos); break;
    default:
        if (tile_op_is_elementwise_ext(in->op)) {
            check_elementwise_ext(V, in, pos);
            break;
        }
        if (tile_op_is_unary(in->op) || tile_op_is_binary(in->op)) {
            const tile_value *first = NULL;
            for (int i = 0; i < in->nargs; i++) {
                const tile_operand *op = &in->args[i];
                if (!op->v) continue;
                const tile_value *x = reg_operand(V, op, opn, "operand");
                if (!x || V->in_decomp) continue;
                if (!first) first = x;
                else check_same_elem(V, op->pos, opn, &first->type, first->name, &x->type, x->name);
            }
            if (!first && !V->in_decomp) verr(V, pos, "%s needs at least one register tensor operand", opn);
            if (first && o && !V->in_decomp && in->has_dst)
                check_same_elem(V, in->dst.pos, opn, &first->type, first->name, o, in->dst.v->name);
        }
        break;
    }
    if (in->decomp) {
        make_visible(V, in->result); /* the decomposition writes the result */
        decomp_check(V, s);
    }
}

/* ---- statements and blocks ------------------------------------------------------------- */

static void check_block(verifier *V, const tile_block *b);

static void check_pipeline(verifier *V, const tile_stmt *s)
{
    const tile_pipeline *p = &s->pipe;
    char sb1[96];
    for (int i = 0; i < p->ngrid; i++) {
        check_expr(V, p->grid[i]);
        make_visible(V, p->gridvars[i]);
    }
    if (p->stages < 1) verr(V, s->pos, "pipeline: stages=%d must be at least 1", p->stages);
    int64_t block_bytes = 0;
    for (int io = 0; io < 2; io++) {
        const tile_blockspec *specs = io ? p->outs : p->ins;
        int n = io ? p->nouts : p->nins;
        for (int i = 0; i < n; i++) {
            const tile_blockspec *bs = &specs[i];
            if (!bs->tensor || bs->tensor->type.space != TILE_GLOBAL || !V->visible[bs->tensor->id]) {
                verr(V, bs->pos, "pipeline: block spec '%s' needs a global tensor", bs->view ? bs->view->name : "?");
                continue;
            }
            if (bs->rank != bs->tensor->type.rank)
                verr(V, bs->pos, "pipeline: block %s has rank %d but '%s' has rank %d",
                     shape_str(bs->block, bs->rank, sb1, sizeof sb1), bs->rank, bs->tensor->name,
                     bs->tensor->type.rank);
            for (int j = 0; j < bs->rank; j++) check_expr(V, bs->index[j]);
            if (bs->view) check_type(V, &bs->view->type, bs->view->name, bs->pos);
            if (bs->space == TILE_SHARED && bs->view) block_bytes = add_sat(block_bytes, shared_bytes(&bs->view->type));
        }
    }
    for (int io = 0; io < 2; io++) {
        const tile_blockspec *specs = io ? p->outs : p->ins;
        int n = io ? p->nouts : p->nins;
        for (int i = 0; i < n; i++) make_visible(V, specs[i].view);
    }
    int64_t total;
    if (__builtin_mul_overflow(block_bytes, (int64_t)(p->stages > 0 ? p->stages : 0), &total)) total = INT64_MAX;
    if (total > V->smem_pipe) {
        V->smem_pipe = total;
        V->msg_stages = p->stages;
        V->pipe_block_bytes = block_bytes;
        V->pipe_pos = s->pos;
    }
    int saved = V->pipe_stages;
    V->pipe_stages = p->stages;
    check_block(V, p->body);
    V->pipe_stages = saved;
    /* grid variables and block views are visible in the body only */
    for (int i = 0; i < p->ngrid; i++) V->visible[p->gridvars[i]->id] = 0;
    for (int i = 0; i < p->nins; i++) V->visible[p->ins[i].view->id] = 0;
    for (int i = 0; i < p->nouts; i++) V->visible[p->outs[i].view->id] = 0;
}

static void check_stmt(verifier *V, const tile_stmt *s)
{
    switch (s->kind) {
    case TILE_S_INSTR:
        check_instr(V, s);
        if (s->instr.result) make_visible(V, s->instr.result);
        break;
    case TILE_S_LET:
    case TILE_S_VAR:
        check_expr(V, s->e);
        make_visible(V, s->v);
        break;
    case TILE_S_SET:
        check_expr(V, s->e);
        if (!V->visible[s->v->id]) verr(V, s->pos, "use of undefined value '%s'", s->v->name);
        else if (s->v->origin != TILE_O_VAR) verr(V, s->pos, "'%s' is not a var and cannot be set", s->v->name);
        break;
    case TILE_S_THREADS: {
        const tile_threads *t = &s->v->threads;
        if (!V->in_decomp) verr(V, s->pos, "thread groups are only defined inside a decomposition");
        if (t->total < 1 || t->inner < 1 || t->total % t->inner)
            verr(V, s->pos, "thread group '%s': groups of %d do not divide %d threads", s->v->name, t->inner, t->total);
        else if (V->threads % t->total)
            verr(V, s->pos, "thread group '%s' of %d threads does not divide threads(%d)", s->v->name, t->total,
                 V->threads);
        make_visible(V, s->v);
        break;
    }
    case TILE_S_INDICES:
        if (!s->group || !V->visible[s->group->id])
            verr(V, s->pos, "use of undefined value '%s'", s->group ? s->group->name : "?");
        for (int i = 0; i < s->nvs; i++) make_visible(V, s->vs[i]);
        break;
    case TILE_S_FOR: {
        check_expr(V, s->lo);
        check_expr(V, s->hi);
        check_expr(V, s->step);
        int64_t st;
        if (s->step && tile_expr_const(s->step, &st) && st <= 0)
            verr(V, s->step->pos, "for: step %lld must be positive", (long long)st);
        int64_t lo, hi, step = 1;
        if (s->unroll) {
            if (!tile_expr_const(s->lo, &lo) || !tile_expr_const(s->hi, &hi) ||
                (s->step && !tile_expr_const(s->step, &step)))
                verr(V, s->pos, "for ... unroll: the bounds and step must be constants");
            else if (step > 0 && hi > lo && (hi - lo + step - 1) / step > TILE_MAX_UNROLL)
                verr(V, s->pos, "for ... unroll: %lld iterations, more than %d", (long long)((hi - lo + step - 1) / step),
                     TILE_MAX_UNROLL);
        }
        uint8_t was = V->visible[s->v->id]; /* the variable is visible in the body only */
        make_visible(V, s->v);
        check_block(V, s->body);
        V->visible[s->v->id] = was;
        break;
    }
    case TILE_S_IF:
    case TILE_S_WHILE:
        check_expr(V, s->e);
        check_block(V, s->body);
        if (s->els) check_block(V, s->els);
        break;
    case TILE_S_PIPELINE:
        V->in_pipeline++;
        check_pipeline(V, s);
        V->in_pipeline--;
        break;
    case TILE_S_WARPGROUPS: check_warpgroups(V, s); break;
    }
}

/* Values defined in a block are visible until its end. */
static void check_block(verifier *V, const tile_block *b)
{
    int n = V->k->nvalues;
    uint8_t *saved = malloc((size_t)n + 1);
    if (!saved) return;
    memcpy(saved, V->visible, (size_t)n);
    V->depth++;
    for (int i = 0; i < b->n; i++) check_stmt(V, b->items[i]);
    V->depth--;
    memcpy(V->visible, saved, (size_t)n);
    free(saved);
}

static void check_kernel(verifier *V, const tile_kernel *k)
{
    V->k = k;
    V->smem_alloc = V->smem_pipe = 0;
    V->pipe_stages = V->msg_stages = 0;
    V->threads = k->threads;
    V->visible = calloc((size_t)k->nvalues + 1, 1);
    if (!V->visible) return;
    if (k->threads < 1 || k->threads > 1024) verr(V, k->pos, "threads(%d) is not in 1..1024", k->threads);
    for (int i = 0; i < k->nsyms; i++) make_visible(V, k->syms[i]);
    for (int i = 0; i < k->nparams; i++) make_visible(V, k->params[i]);
    for (int i = 0; i < k->ngrid; i++) {
        int64_t g;
        check_expr(V, k->grid[i]);
        if (tile_expr_const(k->grid[i], &g) && (g < 1 || g > TILE_MAX_GRID)) {
            strbuf sb = {0};
            if (k->grid[i]->kind != TILE_E_INT) {
                tile_print_expr(&sb, k->grid[i]);
                sb_puts(&sb, " = ");
            }
            verr(V, k->grid[i]->pos, "grid dimension %d is %s%lld; it must be 1..%lld (a kernel runs at least one block)",
                 i, sb_str(&sb), (long long)g, (long long)TILE_MAX_GRID);
            sb_free(&sb);
        }
    }
    int64_t gx;
    if (k->cluster >= 2 && tile_expr_const(k->grid[0], &gx) && gx % k->cluster)
        verr(V, k->grid[0]->pos, "grid dimension 0 is %lld, not a multiple of cluster(%d)", (long long)gx, k->cluster);
    V->depth = 0;
    check_block(V, k->body);
    int stages_for_msg = V->msg_stages;
    int64_t total = add_sat(V->smem_alloc, V->smem_pipe);
    if (k->smem_budget > 0 && total > k->smem_budget) {
        if (V->smem_pipe)
            verr(V, V->pipe_pos,
                 "shared memory %lld bytes exceeds the budget of %lld bytes (stages=%d x %lld bytes of pipeline blocks + %lld bytes of allocations)",
                 (long long)total, (long long)k->smem_budget, stages_for_msg, (long long)V->pipe_block_bytes,
                 (long long)V->smem_alloc);
        else
            verr(V, k->pos, "shared memory %lld bytes exceeds the budget of %lld bytes (%lld bytes of allocations)",
                 (long long)total, (long long)k->smem_budget, (long long)V->smem_alloc);
    }
    free(V->visible);
    V->visible = NULL;
}

tsl_status tile_verify(const tile_module *m, const tsl_source *src, tsl_diag *d)
{
    verifier V;
    memset(&V, 0, sizeof V);
    V.m = m;
    V.src = src;
    V.d = d;
    int before = d->nerr;
    for (int i = 0; i < m->nkernels; i++) check_kernel(&V, m->kernels[i]);
    return d->nerr > before ? (d->first ? d->first : TSL_ERR_SEMANTIC) : TSL_OK;
}
