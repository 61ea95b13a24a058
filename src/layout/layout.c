/* layout.c — the data layout value: building shape/stride trees, queries,
 * evaluation and printing. The algebra (compose, divide, ...) is in
 * algebra.c; swizzles in swizzle.c.
 *
 * A layout stores its tree in preorder: node[0] is the root, a tuple's
 * children follow it, each child's subtree is node[c .. c+nnodes). The
 * leaves in preorder are the modes in colexicographic order (leaf 0 varies
 * fastest), which is all that 1-D evaluation needs. */
#include <stdarg.h>
#include <string.h>

#include "layout/layout.h"
#include "layout/layout_int.h"

void layout_errf(layout_err *e, const char *fmt, ...)
{
    if (!e) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

layout layout_leaf(int64_t shape, int64_t stride)
{
    layout l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.node[0].shape = shape;
    l.node[0].stride = stride;
    l.node[0].nkids = 0;
    l.node[0].nnodes = 1;
    return l;
}

tsl_status layout_tuple(layout *out, const layout *modes, int nmodes, layout_err *e)
{
    if (nmodes < 1 || nmodes > LAYOUT_MAX_RANK) {
        layout_errf(e, "a tuple needs 1 to %d modes (got %d)", LAYOUT_MAX_RANK, nmodes);
        return TSL_ERR_SHAPE;
    }
    int total = 1;
    int64_t size = 1;
    for (int i = 0; i < nmodes; i++) {
        if (modes[i].sw.b) {
            layout_errf(e, "a swizzled layout cannot be a mode of a tuple");
            return TSL_ERR_SHAPE;
        }
        total += modes[i].n;
        if (lay_mul(size, modes[i].node[0].shape, &size)) {
            layout_errf(e, "layout size overflows 64 bits");
            return TSL_ERR_SHAPE;
        }
    }
    if (total > LAYOUT_MAX_NODES) {
        layout_errf(e, "layout too large: %d nodes (at most %d)", total, LAYOUT_MAX_NODES);
        return TSL_ERR_SHAPE;
    }
    layout r;
    memset(&r, 0, sizeof r);
    r.n = total;
    r.node[0].shape = size;
    r.node[0].nkids = nmodes;
    r.node[0].nnodes = total;
    int at = 1;
    for (int i = 0; i < nmodes; i++) {
        memcpy(&r.node[at], modes[i].node, sizeof(layout_node) * (size_t)modes[i].n);
        at += modes[i].n;
    }
    if (!lay_span_ok(&r)) {
        layout_errf(e, "layout offsets overflow 64 bits");
        return TSL_ERR_SHAPE;
    }
    *out = r;
    return TSL_OK;
}

/* Subtree rooted at node `root` as a layout of its own. */
layout lay_subtree(const layout *l, int root)
{
    layout r;
    memset(&r, 0, sizeof r);
    r.n = l->node[root].nnodes; /* the swizzle stays with the whole layout */
    memcpy(r.node, &l->node[root], sizeof(layout_node) * (size_t)r.n);
    return r;
}

/* Compact strides: each leaf's stride is the product of the extents of
 * the leaves before it. */
layout layout_compact(const layout *shape_of)
{
    layout r = *shape_of;
    r.sw = (layout_swizzle){0, 0, 0};
    int64_t acc = 1;
    for (int i = 0; i < r.n; i++) {
        if (r.node[i].nkids) continue;
        r.node[i].stride = acc;
        if (lay_mul(acc, r.node[i].shape, &acc)) acc = 0; /* size overflow seen elsewhere */
    }
    return r;
}

int layout_rank(const layout *l)
{
    return l->node[0].nkids ? l->node[0].nkids : 1;
}

static int depth_at(const layout *l, int p)
{
    if (!l->node[p].nkids) return 0;
    int d = 0, c = p + 1;
    for (int k = 0; k < l->node[p].nkids; k++) {
        int dc = depth_at(l, c);
        if (dc > d) d = dc;
        c += l->node[c].nnodes;
    }
    return d + 1;
}

int layout_depth(const layout *l)
{
    return depth_at(l, 0);
}

int64_t layout_size(const layout *l)
{
    return l->node[0].shape;
}

int layout_is_leaf(const layout *l)
{
    return l->node[0].nkids == 0;
}

int lay_child(const layout *l, int p, int i)
{
    int c = p + 1;
    for (int k = 0; k < i; k++) c += l->node[c].nnodes;
    return c;
}

layout layout_mode(const layout *l, int i)
{
    if (!l->node[0].nkids) {
        layout r = *l;
        r.sw = (layout_swizzle){0, 0, 0};
        return r;
    }
    TSL_ASSERT(i >= 0 && i < l->node[0].nkids);
    layout r = lay_subtree(l, lay_child(l, 0, i));
    return r;
}

int layout_leaves(const layout *l, int64_t *shape, int64_t *stride)
{
    int k = 0;
    for (int i = 0; i < l->n; i++) {
        if (l->node[i].nkids) continue;
        if (shape) shape[k] = l->node[i].shape;
        if (stride) stride[k] = l->node[i].stride;
        k++;
    }
    return k;
}

int layout_equal(const layout *a, const layout *b)
{
    if (a->n != b->n || a->sw.b != b->sw.b) return 0;
    if (a->sw.b && (a->sw.m != b->sw.m || a->sw.s != b->sw.s)) return 0;
    for (int i = 0; i < a->n; i++) {
        const layout_node *x = &a->node[i], *y = &b->node[i];
        if (x->nkids != y->nkids || x->shape != y->shape) return 0;
        if (!x->nkids && x->stride != y->stride) return 0;
    }
    return 1;
}

/* Offset of 1-D index `idx` inside the subtree at `root` (no swizzle). */
static int64_t eval_sub(const layout *l, int root, int64_t idx)
{
    int end = root + l->node[root].nnodes, last = -1;
    for (int i = root; i < end; i++)
        if (!l->node[i].nkids) last = i;
    int64_t off = 0;
    for (int i = root; i < end; i++) {
        const layout_node *nd = &l->node[i];
        if (nd->nkids) continue;
        if (i == last) {
            off += idx * nd->stride;
        } else {
            off += (idx % nd->shape) * nd->stride;
            idx /= nd->shape;
        }
    }
    return off;
}

int64_t layout_eval(const layout *l, int64_t idx)
{
    return layout_swizzle_apply(l->sw, eval_sub(l, 0, idx));
}

int64_t layout_eval_coord(const layout *l, const int64_t *coord, int ncoord)
{
    if (!l->node[0].nkids) return layout_eval(l, ncoord > 0 ? coord[0] : 0);
    int64_t off = 0;
    int c = 1;
    for (int k = 0; k < l->node[0].nkids; k++) {
        if (k < ncoord) off += eval_sub(l, c, coord[k]);
        c += l->node[c].nnodes;
    }
    return layout_swizzle_apply(l->sw, off);
}

int lay_span_ok(const layout *l)
{
    int64_t span = 0, t;
    for (int i = 0; i < l->n; i++) {
        const layout_node *nd = &l->node[i];
        if (nd->nkids) continue;
        if (nd->stride == INT64_MIN) return 0;
        int64_t d = nd->stride < 0 ? -nd->stride : nd->stride;
        if (lay_mul(nd->shape - 1, d, &t) || lay_add(span, t, &span)) return 0;
    }
    return span < INT64_MAX; /* so that cosize = span + 1 fits too */
}

int64_t layout_cosize(const layout *l)
{
    int64_t sh[LAYOUT_MAX_NODES], st[LAYOUT_MAX_NODES];
    int n = layout_leaves(l, sh, st);
    if (!l->sw.b) {
        /* max over the box: each leaf contributes (s-1)*d when d > 0 */
        int64_t hi = 0;
        for (int i = 0; i < n; i++)
            if (st[i] > 0) hi += (sh[i] - 1) * st[i];
        return hi + 1;
    }
    int64_t size = layout_size(l), hi = 0;
    if (size > ((int64_t)1 << 22)) {
        /* too many to visit: the swizzle permutes aligned blocks of
         * 2^(M+B+|S|), so round the unswizzled bound up to a block */
        layout raw = *l;
        raw.sw = (layout_swizzle){0, 0, 0};
        int as = l->sw.s < 0 ? -l->sw.s : l->sw.s;
        int64_t blk = (int64_t)1 << (l->sw.m + l->sw.b + as);
        int64_t c = layout_cosize(&raw);
        int64_t nblk = c / blk + (c % blk != 0), r;
        return lay_mul(nblk, blk, &r) ? INT64_MAX : r;
    }
    for (int64_t i = 0; i < size; i++) {
        int64_t v = layout_eval(l, i);
        if (v > hi) hi = v;
    }
    return hi + 1;
}

/* ---- printing ----------------------------------------------------------- */
static void print_tree(strbuf *sb, const layout *l, int p, int strides)
{
    const layout_node *nd = &l->node[p];
    if (!nd->nkids) {
        sb_printf(sb, "%lld", (long long)(strides ? nd->stride : nd->shape));
        return;
    }
    sb_putc(sb, '(');
    int c = p + 1;
    for (int k = 0; k < nd->nkids; k++) {
        if (k) sb_putc(sb, ',');
        print_tree(sb, l, c, strides);
        c += l->node[c].nnodes;
    }
    sb_putc(sb, ')');
}

void layout_print(strbuf *sb, const layout *l)
{
    if (l->sw.b) sb_printf(sb, "swizzle(%d,%d,%d,", l->sw.b, l->sw.m, l->sw.s);
    print_tree(sb, l, 0, 0);
    sb_putc(sb, ':');
    print_tree(sb, l, 0, 1);
    if (l->sw.b) sb_putc(sb, ')');
}

void layout_print_tiler(strbuf *sb, const layout *tiler)
{
    sb_putc(sb, '[');
    for (int k = 0; k < layout_rank(tiler); k++) {
        if (k) sb_putc(sb, ',');
        layout m = layout_mode(tiler, k);
        layout_print(sb, &m);
    }
    sb_putc(sb, ']');
}

static void json_tree(strbuf *sb, const layout *l, int p, int strides)
{
    const layout_node *nd = &l->node[p];
    if (!nd->nkids) {
        sb_printf(sb, "%lld", (long long)(strides ? nd->stride : nd->shape));
        return;
    }
    sb_putc(sb, '[');
    int c = p + 1;
    for (int k = 0; k < nd->nkids; k++) {
        if (k) sb_putc(sb, ',');
        json_tree(sb, l, c, strides);
        c += l->node[c].nnodes;
    }
    sb_putc(sb, ']');
}

void layout_print_json_shape(strbuf *sb, const layout *l, int strides)
{
    json_tree(sb, l, 0, strides);
}
