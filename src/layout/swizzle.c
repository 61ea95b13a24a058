/* swizzle.c — Swizzle<B,M,S>, the xor of one bit field of an offset into
 * another, used for bank-conflict-free shared-memory layouts. With S >= 0
 * the B bits at [M+S, M+S+B) are xored into the bits at [M, M+B); with
 * S < 0 the B bits at [M, M+B) are xored into [M+|S|, M+|S|+B) (CuTe's
 * convention). Either way the map is an involution, so a bijection on
 * every aligned block of 2^(M+B+|S|) offsets. */
#include "layout/layout.h"
#include "layout/layout_int.h"

int64_t layout_swizzle_apply(layout_swizzle sw, int64_t x)
{
    if (sw.b == 0) return x;
    int64_t mask = ((int64_t)1 << sw.b) - 1;
    if (sw.s >= 0) {
        int64_t yyy = mask << (sw.m + sw.s); /* source bits */
        return x ^ ((x & yyy) >> sw.s);
    }
    int64_t zzz = mask << sw.m;
    return x ^ ((x & zzz) << -sw.s);
}

tsl_status layout_swizzle_check(layout_swizzle sw, layout_err *e)
{
    int as = sw.s < 0 ? -sw.s : sw.s;
    if (sw.b < 0 || sw.m < 0 || sw.b > 16 || sw.m > 32 || as > 32) {
        layout_errf(e, "swizzle(%d,%d,%d): B must be in 0..16, M in 0..32, |S| in 0..32", sw.b,
                    sw.m, sw.s);
        return TSL_ERR_SHAPE;
    }
    if (sw.m + sw.b + as > 62) {
        layout_errf(e, "swizzle(%d,%d,%d): M+B+|S| must be at most 62", sw.b, sw.m, sw.s);
        return TSL_ERR_SHAPE;
    }
    if (sw.b > 0 && as < sw.b) {
        layout_errf(e, "swizzle(%d,%d,%d): |S| must be at least B so the bit fields do not overlap",
                    sw.b, sw.m, sw.s);
        return TSL_ERR_SHAPE;
    }
    return TSL_OK;
}

tsl_status layout_swizzled(layout *out, layout_swizzle sw, const layout *a, layout_err *e)
{
    tsl_status st = layout_swizzle_check(sw, e);
    if (st) return st;
    if (a->sw.b) {
        layout_errf(e, "the layout is already swizzled");
        return TSL_ERR_SHAPE;
    }
    *out = *a;
    out->sw = sw;
    return TSL_OK;
}
