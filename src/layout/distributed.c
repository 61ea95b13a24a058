/* distributed.c — Tilus register layouts: (thread, local) -> coordinate.
 *
 * A layout keeps the atoms as written (for printing) and a derived chain
 * of single-dimension factors ("axes"). In the chain, earlier axes are more
 * significant both in the coordinate of their dimension and in the index
 * (thread or local) of their kind:
 *
 *   local(2,3)        = [d0 L 2][d1 L 3]        i = 3*c0 + c1
 *   column_local(2,3) = [d1 L 3][d0 L 2]        i = c0 + 2*c1
 *   f.g               = chain(f) ++ chain(g)    (Tilus definition 4)
 *
 * so composition is concatenation (associative by construction) and the
 * map is a mixed-radix decode of thread and local against the chain read
 * from its end. Division h/g peels g's chain off the end of h's: each of
 * g's axes must be the least significant remaining factor of h both in its
 * dimension and in its kind (axes of another dimension and kind commute
 * with it, so they may sit after it). */
#include <string.h>

#include "layout/layout.h"
#include "layout/layout_int.h"

/* Rebuild rank, shape, threads, locals and the chain from the atoms.
 * Atoms of lower rank get leading extents of 1 (Tilus definition 5). */
static tsl_status dist_derive(dist_layout *l, layout_err *e)
{
    int r = 0;
    for (int a = 0; a < l->natoms; a++)
        if (l->atom[a].rank > r) r = l->atom[a].rank;
    l->rank = r;
    for (int d = 0; d < DIST_MAX_RANK; d++) l->shape[d] = 1;
    l->threads = l->locals = 1;
    l->naxes = 0;
    for (int a = 0; a < l->natoms; a++) {
        const dist_atom *at = &l->atom[a];
        int shift = r - at->rank;
        int is_thread = at->kind != DIST_LOCAL;
        int64_t *count = is_thread ? &l->threads : &l->locals;
        int n = at->kind == DIST_REPLICATE ? 1 : at->rank;
        for (int k = 0; k < n; k++) {
            int j = at->column ? n - 1 - k : k;
            int dim = at->kind == DIST_REPLICATE ? -1 : j + shift;
            int64_t ext = at->dims[j];
            if (dim >= 0 && lay_mul(l->shape[dim], ext, &l->shape[dim])) goto overflow;
            if (lay_mul(*count, ext, count)) goto overflow;
            if (ext == 1) continue;
            if (l->naxes >= DIST_MAX_AXES) {
                layout_errf(e, "distributed layout has more than %d factors", DIST_MAX_AXES);
                return TSL_ERR_SHAPE;
            }
            l->axis[l->naxes++] = (dist_axis){dim, is_thread, ext};
        }
    }
    return TSL_OK;
overflow:
    layout_errf(e, "distributed layout overflows 64 bits");
    return TSL_ERR_SHAPE;
}

tsl_status dist_layout_atom(dist_layout *out, dist_atom_kind kind, int column,
                            const int64_t *dims, int rank, layout_err *e)
{
    int need = kind == DIST_REPLICATE ? 1 : rank;
    if (kind == DIST_REPLICATE && rank != 0) {
        layout_errf(e, "replicate takes one extent");
        return TSL_ERR_SHAPE;
    }
    if (kind != DIST_REPLICATE && (rank < 1 || rank > DIST_MAX_RANK)) {
        layout_errf(e, "a distributed layout needs 1 to %d extents (got %d)", DIST_MAX_RANK,
                    rank);
        return TSL_ERR_SHAPE;
    }
    for (int i = 0; i < need; i++)
        if (dims[i] < 1) {
            layout_errf(e, "extent %lld must be positive", (long long)dims[i]);
            return TSL_ERR_SHAPE;
        }
    dist_layout l;
    memset(&l, 0, sizeof l);
    l.natoms = 1;
    l.atom[0].kind = kind;
    l.atom[0].column = column;
    l.atom[0].rank = rank;
    for (int i = 0; i < need; i++) l.atom[0].dims[i] = dims[i];
    tsl_status st = dist_derive(&l, e);
    if (st) return st;
    *out = l;
    return TSL_OK;
}

tsl_status dist_layout_compose(dist_layout *out, const dist_layout *f, const dist_layout *g,
                               layout_err *e)
{
    if (f->natoms + g->natoms > DIST_MAX_ATOMS) {
        layout_errf(e, "composition of more than %d primitive layouts", DIST_MAX_ATOMS);
        return TSL_ERR_SHAPE;
    }
    dist_layout l;
    memset(&l, 0, sizeof l);
    memcpy(l.atom, f->atom, sizeof(dist_atom) * (size_t)f->natoms);
    memcpy(l.atom + f->natoms, g->atom, sizeof(dist_atom) * (size_t)g->natoms);
    l.natoms = f->natoms + g->natoms;
    tsl_status st = dist_derive(&l, e);
    if (st) return st;
    *out = l;
    return TSL_OK;
}

/* Atoms for a chain: runs of one kind with increasing dims become one
 * row-major atom of the full rank; replication factors stand alone. */
static tsl_status dist_from_chain(dist_layout *out, int rank, const dist_axis *ax, int n,
                                  layout_err *e)
{
    dist_layout l;
    memset(&l, 0, sizeof l);
    for (int i = 0; i < n;) {
        if (l.natoms >= DIST_MAX_ATOMS) {
            layout_errf(e, "quotient needs more than %d primitive layouts", DIST_MAX_ATOMS);
            return TSL_ERR_SHAPE;
        }
        dist_atom *at = &l.atom[l.natoms++];
        if (ax[i].dim < 0) {
            at->kind = DIST_REPLICATE;
            at->dims[0] = ax[i].extent;
            i++;
            continue;
        }
        at->kind = ax[i].is_thread ? DIST_SPATIAL : DIST_LOCAL;
        at->rank = rank;
        for (int d = 0; d < rank; d++) at->dims[d] = 1;
        int last = -1;
        while (i < n && ax[i].dim > last && ax[i].is_thread == (at->kind == DIST_SPATIAL)) {
            at->dims[ax[i].dim] = ax[i].extent;
            last = ax[i].dim;
            i++;
        }
    }
    int maxr = 0;
    for (int a = 0; a < l.natoms; a++)
        if (l.atom[a].rank > maxr) maxr = l.atom[a].rank;
    if (l.natoms == 0 || maxr < rank) {
        /* keep the rank (and give the identity a name): lead with
         * local(1,...,1), or replicate(1) at rank 0 */
        if (l.natoms >= DIST_MAX_ATOMS) {
            layout_errf(e, "quotient needs more than %d primitive layouts", DIST_MAX_ATOMS);
            return TSL_ERR_SHAPE;
        }
        memmove(&l.atom[1], &l.atom[0], sizeof(dist_atom) * (size_t)l.natoms);
        l.natoms++;
        memset(&l.atom[0], 0, sizeof(dist_atom));
        l.atom[0].kind = rank ? DIST_LOCAL : DIST_REPLICATE;
        l.atom[0].rank = rank;
        for (int d = 0; d < (rank ? rank : 1); d++) l.atom[0].dims[d] = 1;
    }
    tsl_status st = dist_derive(&l, e);
    if (st) return st;
    *out = l;
    return TSL_OK;
}

tsl_status dist_layout_divide(dist_layout *out, const dist_layout *h, const dist_layout *g,
                              layout_err *e)
{
    if (g->rank > h->rank) {
        layout_errf(e, "cannot divide a rank-%d layout by a rank-%d one", h->rank, g->rank);
        return TSL_ERR_SHAPE;
    }
    dist_axis ax[DIST_MAX_AXES];
    int n = h->naxes;
    memcpy(ax, h->axis, sizeof(dist_axis) * (size_t)n);
    int shift = h->rank - g->rank;
    for (int gi = g->naxes - 1; gi >= 0; gi--) {
        dist_axis want = g->axis[gi];
        if (want.dim >= 0) want.dim += shift;
        while (want.extent > 1) {
            /* the last axis of h with this dim, and the last of this kind */
            int bd = -1, bk = -1;
            for (int i = 0; i < n; i++) {
                if (ax[i].dim == want.dim) bd = i;
                if (ax[i].is_thread == want.is_thread) bk = i;
            }
            if (bd < 0 || bd != bk) goto fail;
            int64_t x = ax[bd].extent;
            if (x % want.extent == 0) {
                ax[bd].extent = x / want.extent;
                want.extent = 1;
            } else if (want.extent % x == 0) {
                ax[bd].extent = 1;
                want.extent /= x;
            } else {
                goto fail;
            }
            if (ax[bd].extent == 1) {
                memmove(&ax[bd], &ax[bd + 1], sizeof(dist_axis) * (size_t)(n - bd - 1));
                n--;
            }
        }
    }
    return dist_from_chain(out, h->rank, ax, n, e);
fail:;
    strbuf a = {0}, b = {0};
    dist_layout_print(&a, h);
    dist_layout_print(&b, g);
    layout_errf(e, "%s is not of the form f.%s: no quotient exists", sb_str(&a), sb_str(&b));
    sb_free(&a);
    sb_free(&b);
    return TSL_ERR_SHAPE;
}

tsl_status dist_layout_reduce(dist_layout *out, const dist_layout *l, int dim, layout_err *e)
{
    if (dim < 0 || dim >= l->rank) {
        layout_errf(e, "reduce: dimension %d is outside a rank-%d layout", dim, l->rank);
        return TSL_ERR_SHAPE;
    }
    dist_axis ax[DIST_MAX_AXES];
    int n = 0;
    for (int i = 0; i < l->naxes; i++) {
        dist_axis a = l->axis[i];
        if (a.dim == dim) {
            if (!a.is_thread) continue; /* the slots along dim fold into one */
            a.dim = -1;                 /* its threads now hold copies */
        }
        ax[n++] = a;
    }
    return dist_from_chain(out, l->rank, ax, n, e);
}

int dist_layout_map(const dist_layout *l, int64_t thread, int64_t local, int64_t *coord_out)
{
    if (thread < 0 || thread >= l->threads || local < 0 || local >= l->locals) return -1;
    int64_t mult[DIST_MAX_RANK];
    for (int d = 0; d < l->rank; d++) mult[d] = 1, coord_out[d] = 0;
    for (int i = l->naxes - 1; i >= 0; i--) {
        const dist_axis *a = &l->axis[i];
        int64_t *x = a->is_thread ? &thread : &local;
        int64_t digit = *x % a->extent;
        *x /= a->extent;
        if (a->dim < 0) continue;
        coord_out[a->dim] += digit * mult[a->dim];
        mult[a->dim] *= a->extent;
    }
    return 0;
}

int64_t dist_layout_owners(const dist_layout *l, const int64_t *coord, int64_t *threads,
                           int64_t *locals, int64_t max)
{
    int64_t rem[DIST_MAX_RANK];
    for (int d = 0; d < l->rank; d++) {
        if (coord[d] < 0 || coord[d] >= l->shape[d]) return -1;
        rem[d] = coord[d];
    }
    /* thread/local weight of each axis; the replication factors vary freely */
    int64_t t = 0, loc = 0, tw = 1, lw = 1, reps = 1;
    int64_t rep_ext[DIST_MAX_AXES], rep_w[DIST_MAX_AXES];
    int nrep = 0;
    for (int i = l->naxes - 1; i >= 0; i--) {
        const dist_axis *a = &l->axis[i];
        int64_t digit = 0;
        if (a->dim >= 0) {
            digit = rem[a->dim] % a->extent;
            rem[a->dim] /= a->extent;
        } else {
            rep_ext[nrep] = a->extent;
            rep_w[nrep++] = tw;
            reps *= a->extent;
        }
        if (a->is_thread)
            t += digit * tw, tw *= a->extent;
        else
            loc += digit * lw, lw *= a->extent;
    }
    for (int64_t k = 0; k < reps && k < max; k++) {
        int64_t tk = t, q = k;
        /* enumerate in increasing thread order: the first factor is the
         * least significant replication axis */
        for (int j = 0; j < nrep; j++) {
            tk += (q % rep_ext[j]) * rep_w[j];
            q /= rep_ext[j];
        }
        threads[k] = tk;
        locals[k] = loc;
    }
    return reps;
}

int dist_layout_owner(const dist_layout *l, const int64_t *coord, int64_t *thread,
                      int64_t *local)
{
    return dist_layout_owners(l, coord, thread, local, 1) < 0 ? -1 : 0;
}

/* Two axes commute when they share neither a dimension nor a kind: each
 * then owns its own digit of the index and of the coordinate. */
static int dist_axes_commute(dist_axis a, dist_axis b)
{
    return a.dim != b.dim && a.is_thread != b.is_thread;
}

static int dist_axis_key(dist_axis a) { return 2 * (a.dim + 1) + a.is_thread; }

/* ax[0, n) reordered to the lexicographically least chain that computes
 * the same function: commuting axes may trade places, so the order is a
 * trace (a partial commutation), and its least representative is found
 * greedily: the axis of the least (dim, kind) key among those that
 * commute with every axis still before them goes next. Two axes of one
 * key never commute, so the choice is unique. */
static void dist_least_order(dist_axis *ax, int n)
{
    dist_axis out[DIST_MAX_AXES];
    int used[DIST_MAX_AXES] = {0};
    for (int k = 0; k < n; k++) {
        int best = -1;
        for (int j = 0; j < n; j++) {
            if (used[j]) continue;
            int free = 1;
            for (int i = 0; i < j && free; i++)
                if (!used[i] && !dist_axes_commute(ax[i], ax[j])) free = 0;
            if (free && (best < 0 || dist_axis_key(ax[j]) < dist_axis_key(ax[best]))) best = j;
        }
        out[k] = ax[best];
        used[best] = 1;
    }
    memcpy(ax, out, sizeof(dist_axis) * (size_t)n);
}

/* The chain in a normal form of the function it computes: axes of extent
 * 1 dropped (their digit is always 0 and they scale nothing, so
 * local(3,1) and column_local(3,1) are one function), the least order of
 * the rest (dist_least_order), and two axes of one dim and kind with only
 * commuting axes between them merged into one (their digits are one
 * mixed-radix digit), until nothing changes. Returns the axis count. */
static int dist_normal_chain(const dist_layout *l, dist_axis *ax)
{
    int n = 0;
    for (int i = 0; i < l->naxes; i++)
        if (l->axis[i].extent != 1) ax[n++] = l->axis[i];
    for (int changed = 1; changed;) {
        changed = 0;
        dist_least_order(ax, n);
        for (int i = 0; i < n && !changed; i++)
            for (int j = i + 1; j < n; j++) {
                if (ax[j].dim == ax[i].dim && ax[j].is_thread == ax[i].is_thread) {
                    ax[i].extent *= ax[j].extent; /* cannot overflow: a factor of threads or locals */
                    memmove(&ax[j], &ax[j + 1], sizeof(dist_axis) * (size_t)(n - j - 1));
                    n--;
                    changed = 1;
                    break;
                }
                if (!dist_axes_commute(ax[i], ax[j])) break;
            }
    }
    return n;
}

int dist_same_normal_form(const dist_layout *a, const dist_layout *b)
{
    if (a->rank != b->rank || a->threads != b->threads || a->locals != b->locals) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    dist_axis na[DIST_MAX_AXES], nb[DIST_MAX_AXES];
    int n = dist_normal_chain(a, na);
    return n == dist_normal_chain(b, nb) && !memcmp(na, nb, sizeof(dist_axis) * (size_t)n);
}

/* Equal normal forms mean equal functions. Different ones are compared
 * point by point while the domain is small (the normal form is not
 * proven complete); beyond 2^20 points they count as different, so no
 * caller ever enumerates a user-sized domain. */
int dist_layout_equal(const dist_layout *a, const dist_layout *b)
{
    if (a->rank != b->rank || a->threads != b->threads || a->locals != b->locals) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    if (dist_same_normal_form(a, b)) return 1;
    if (a->threads > (1 << 20) / a->locals) return 0;
    int64_t ca[DIST_MAX_RANK], cb[DIST_MAX_RANK];
    for (int64_t t = 0; t < a->threads; t++)
        for (int64_t i = 0; i < a->locals; i++) {
            dist_layout_map(a, t, i, ca);
            dist_layout_map(b, t, i, cb);
            if (memcmp(ca, cb, sizeof(int64_t) * (size_t)a->rank)) return 0;
        }
    return 1;
}

static const char *const atom_names[2][3] = {
    {"local", "spatial", "replicate"},
    {"column_local", "column_spatial", "replicate"},
};

void dist_layout_print(strbuf *sb, const dist_layout *l)
{
    for (int a = 0; a < l->natoms; a++) {
        const dist_atom *at = &l->atom[a];
        if (a) sb_putc(sb, '.');
        sb_printf(sb, "%s(", atom_names[at->column ? 1 : 0][at->kind]);
        int n = at->kind == DIST_REPLICATE ? 1 : at->rank;
        for (int i = 0; i < n; i++) sb_printf(sb, i ? ",%lld" : "%lld", (long long)at->dims[i]);
        sb_putc(sb, ')');
    }
}
