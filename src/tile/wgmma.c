/* wgmma.c — what the tile IR knows of Hopper's warpgroup MMA
 * (docs/tile-ir.md section 5b): the register fragment layouts of
 * wgmma.mma_async.m64nNk16 for one warpgroup of 128 threads, and the shared
 * memory matrix descriptor of an operand, derived from the shared tensor's
 * data layout in the layout algebra (never written beside it).
 *
 * The PTX ISA's canonical layouts (element units, T = 16 bytes / element
 * size, R = swizzle bytes / element size, the swizzle Swizzle<b,4,3> on
 * byte addresses with b = 1, 2, 3 for 32, 64, 128 bytes):
 *   K-major:  (mn, k) -> k + (mn % 8) * R + (mn / 8) * SBO          k < R
 *   MN-major: (mn, k) -> mn % R + (mn / R) * LBO + (k % 8) * R + (k / 8) * SBO
 * The operand's element (mn, k) must sit at exactly that offset (before the
 * swizzle) relative to the operand's first element; K-major operands take
 * one 16-deep k step at a time by moving the start address, which is how
 * the descriptor of step s is made (start + layout(0, 16 s)). */
#include <stdio.h>
#include <string.h>

#include "target/target.h"
#include "tile/tile.h"

/* The warpgroup's fragments are the warp-level mma.m16n8k16 fragments of
 * the target table (src/target/sm80.c) with the four warps stacked along M
 * and the repeats along N (K) in front: the sm90 table's wgmma rows, which
 * tests/unit/test_target.c checks against the PTX ISA. */
const char *tile_wgmma_acc_layout(int n, char *buf, size_t len)
{
    const target_atom *mma = target_mma_resolve("m16n8k16", TARGET_DT_ANY, TARGET_DT_ANY, NULL);
    snprintf(buf, len, "spatial(4,1).local(1,%d).%s", n / 8, mma->layout[TARGET_C]);
    return buf;
}

const char *tile_wgmma_a_layout(int k, char *buf, size_t len)
{
    const target_atom *mma = target_mma_resolve("m16n8k16", TARGET_DT_ANY, TARGET_DT_ANY, NULL);
    snprintf(buf, len, "spatial(4,1).local(1,%d).%s", k / 16, mma->layout[TARGET_A]);
    return buf;
}

static int ilog2(int64_t x)
{
    int l = 0;
    while ((1LL << l) < x) l++;
    return (1LL << l) == x ? l : -1;
}

/* Offset (in elements, no swizzle) of operand element (r, c) of the
 * trailing 2-D box of shared tensor t, whose leading coordinates are 0. */
static int64_t off2(const layout *plain, int rank, int64_t r, int64_t c)
{
    int64_t co[LAYOUT_MAX_RANK];
    memset(co, 0, sizeof co);
    co[rank - 2] = r;
    co[rank - 1] = c;
    return layout_eval_coord(plain, co, rank);
}

int tile_wgmma_smem_of(const tile_type *t, int mn_dim, int64_t mn_ext, int64_t k_ext, tile_wgmma_smem *out,
                       char *why, size_t nwhy)
{
    memset(out, 0, sizeof *out);
    int eb = t->dt.bits / 8;
    if (t->space != TILE_SHARED || t->rank < 2 || eb != 2) {
        snprintf(why, nwhy, "it must be a shared tensor of 16-bit elements with at least 2 dims");
        return 0;
    }
    layout plain;
    if (t->layout && t->layout->v.kind == LAYOUT_VALUE_DATA) {
        plain = t->layout->v.data;
    } else {
        /* row-major compact */
        snprintf(why, nwhy, "it has no swizzled layout (wgmma takes 32, 64 or 128-byte swizzled operands)");
        return 0;
    }
    layout_swizzle sw = plain.sw;
    plain.sw = (layout_swizzle){0, 0, 0};
    int le = ilog2(eb);
    if (sw.b < 1 || sw.b > 3 || sw.m + le != 4 || sw.s != 3) {
        snprintf(why, nwhy,
                 "its swizzle is not one wgmma reads (Swizzle<b,%d,3> over %d-byte elements, b = 1, 2 or 3)",
                 4 - le, eb);
        return 0;
    }
    int64_t R = (16LL << sw.b) / eb; /* elements per swizzled row */
    out->swizzle_bytes = 16 << sw.b;
    int rank = t->rank;
    /* (mn, k) -> offset */
#define OFF(mn, k) (mn_dim == rank - 2 ? off2(&plain, rank, (mn), (k)) : off2(&plain, rank, (k), (mn)))
    int64_t o0 = OFF(0, 0);
    int kmajor = OFF(0, 1) - o0 == 1;
    int mnmajor = OFF(1, 0) - o0 == 1;
    if (kmajor == mnmajor) {
        snprintf(why, nwhy, "neither its K nor its M/N dimension is contiguous");
        return 0;
    }
    out->mn_major = mnmajor;
    if (kmajor) {
        out->lbo = 1; /* unused by swizzled K-major layouts */
        out->sbo = mn_ext > 8 ? (OFF(8, 0) - o0) * eb : 1024;
        for (int64_t mn = 0; mn < mn_ext; mn++)
            for (int64_t k = 0; k < 16 && k < k_ext; k++) {
                int64_t want = k + (mn % 8) * R + (mn / 8) * (out->sbo / eb);
                if (OFF(mn, k) - o0 != want) {
                    snprintf(why, nwhy,
                             "element (%lld, %lld) of the K-major operand is at %lld, not %lld as a %d-byte "
                             "swizzled wgmma operand needs",
                             (long long)mn, (long long)k, (long long)(OFF(mn, k) - o0), (long long)want,
                             out->swizzle_bytes);
                    return 0;
                }
            }
    } else {
        out->lbo = mn_ext > R ? (OFF(R, 0) - o0) * eb : 1;
        out->sbo = (OFF(0, 8) - o0) * eb;
        for (int64_t mn = 0; mn < mn_ext; mn++)
            for (int64_t k = 0; k < 16 && k < k_ext; k++) {
                int64_t want = mn % R + (mn / R) * (out->lbo / eb) + (k % 8) * R + (k / 8) * (out->sbo / eb);
                if (OFF(mn, k) - o0 != want) {
                    snprintf(why, nwhy,
                             "element (%lld, %lld) of the M/N-major operand is at %lld, not %lld as a %d-byte "
                             "swizzled wgmma operand needs",
                             (long long)mn, (long long)k, (long long)(OFF(mn, k) - o0), (long long)want,
                             out->swizzle_bytes);
                    return 0;
                }
            }
    }
    /* each k16 step's start: the same form shifted */
    for (int64_t s = 16; s < k_ext; s += 16) {
        int64_t base = OFF(0, s) - o0;
        for (int64_t mn = 0; mn < mn_ext; mn += 7)
            for (int64_t k = 0; k < 16; k += 5)
                if (OFF(mn, s + k) - o0 - base != OFF(mn, k) - o0) {
                    snprintf(why, nwhy, "its k step at %lld is not laid out like the first", (long long)s);
                    return 0;
                }
        if ((base * eb) % 16) {
            snprintf(why, nwhy, "its k step at %lld starts %lld bytes in, not on 16 bytes", (long long)s,
                     (long long)(base * eb));
            return 0;
        }
    }
    if (out->lbo <= 0 || out->sbo <= 0 || (out->lbo % 16 && out->lbo != 1) || out->sbo % 16 ||
        out->lbo >= (1 << 18) || out->sbo >= (1 << 18)) {
        snprintf(why, nwhy, "its strides (%lld, %lld bytes) do not fit a descriptor", (long long)out->lbo,
                 (long long)out->sbo);
        return 0;
    }
#undef OFF
    return 1;
}
