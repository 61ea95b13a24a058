/* frag.c — fragment plans (target.h): how a warp-level mma or ldmatrix row
 * runs over block-level register tensors laid out R.F, F the row's
 * fragment from its table, R's threads the warps. The selection pass asks
 * whether a plan exists (the row fits); the CUDA generator prints the plan
 * of the row selection chose. Both read the fragments from the table only,
 * so a layout written in sm80.c is the one place it exists. */
#include <stdlib.h>
#include <string.h>

#include "target/target.h"

/* The tile slot of R through which thread (warp) w holds tile (i, j); -1. */
static int64_t warp_slot(const dist_layout *r, int64_t w, int64_t i, int64_t j)
{
    int64_t co[2] = {i, j}, th[64], lo[64];
    int64_t n = dist_layout_owners(r, co, th, lo, 64);
    for (int64_t x = 0; x < n && x < 64; x++)
        if (th[x] == w) return lo[x];
    return -1;
}

void target_mma_plan_free(target_mma_plan *p)
{
    free(p->a);
    free(p->b);
    p->a = p->b = NULL;
}

int target_mma_plan_make(target_mma_plan *p, const target_atom *row, const dist_layout *La, const dist_layout *Lb,
                         const dist_layout *Lc, int64_t threads)
{
    memset(p, 0, sizeof *p);
    if (!row || row->kind != TARGET_K_MMA || !La || !Lb || !Lc || La->rank != 2 || Lb->rank != 2 || Lc->rank != 2)
        return -1;
    const dist_layout *L[3] = {La, Lb, Lc};
    dist_layout f[3];
    for (int i = 0; i < 3; i++) {
        const dist_layout *F = target_atom_layout(row, TARGET_A + i);
        layout_err le;
        if (!F || dist_layout_divide(&f[i], L[i], F, &le)) return -1;
        p->per[i] = (int)F->locals;
    }
    int64_t W = f[2].threads, KT = f[0].shape[1], nl = f[2].locals;
    if (f[0].threads != W || f[1].threads != W || W * row->threads != threads || nl < 1 || KT < 1) return -1;
    p->warps = W, p->tiles = nl, p->ksteps = KT, p->uniform = 1;
    p->a = malloc(sizeof *p->a * (size_t)(W * nl * KT));
    p->b = malloc(sizeof *p->b * (size_t)(W * nl * KT));
    int ok = p->a && p->b;
    /* every warp must hold the A and B tiles of each of its C tiles */
    for (int64_t w = 0; ok && w < W; w++)
        for (int64_t t = 0; ok && t < nl; t++) {
            int64_t tc[2];
            dist_layout_map(&f[2], w, t, tc);
            for (int64_t kt = 0; ok && kt < KT; kt++) {
                int64_t sa = warp_slot(&f[0], w, tc[0], kt), sb = warp_slot(&f[1], w, kt, tc[1]);
                int64_t i = (w * nl + t) * KT + kt;
                if (sa < 0 || sb < 0) {
                    ok = 0;
                    p->missing = 1, p->miss_warp = w, p->miss_a = sa < 0, p->miss[0] = sa < 0 ? tc[0] : kt;
                    p->miss_c[0] = tc[0], p->miss_c[1] = tc[1];
                    p->miss[1] = sa < 0 ? kt : tc[1];
                    break;
                }
                p->a[i] = sa, p->b[i] = sb;
                if (w && (p->a[t * KT + kt] != sa || p->b[t * KT + kt] != sb)) p->uniform = 0;
            }
        }
    if (!ok) {
        free(p->a);
        free(p->b);
        p->a = p->b = NULL;
    }
    return ok ? 0 : -1;
}

/* Is fragment F ld's `count` matrices in register order (matrix m in
 * locals 2m, 2m + 1, each ld's one-matrix fragment moved to an origin
 * linear in m's bits, matrix 0 at the tile's origin)? Fills the origins. */
static int frag_is_matrices(const target_atom *ld, const dist_layout *F, target_ldmatrix_plan *p)
{
    const dist_layout *M = target_atom_layout(ld, 3);
    int n = ld->count;
    if (!M || F->rank != 2 || M->rank != 2 || F->threads != ld->threads || F->locals != 2 * n || M->locals != 2 ||
        n < 1 || n > 4)
        return 0;
    int64_t f0[DIST_MAX_RANK], m0[DIST_MAX_RANK];
    for (int m = 0; m < n; m++) {
        dist_layout_map(F, 0, 2 * m, f0);
        dist_layout_map(M, 0, 0, m0);
        p->org[m][0] = f0[0] - m0[0], p->org[m][1] = f0[1] - m0[1];
    }
    for (int l = 0; l < ld->threads; l++)
        for (int m = 0; m < n; m++)
            for (int e = 0; e < 2; e++) {
                dist_layout_map(F, l, 2 * m + e, f0);
                dist_layout_map(M, l, e, m0);
                if (f0[0] != p->org[m][0] + m0[0] || f0[1] != p->org[m][1] + m0[1]) return 0;
            }
    memset(p->step, 0, sizeof p->step);
    for (int b = 0; b < 2; b++)
        if ((1 << b) < n) p->step[b][0] = p->org[1 << b][0], p->step[b][1] = p->org[1 << b][1];
    for (int m = 0; m < n; m++)
        for (int d = 0; d < 2; d++)
            if (p->org[m][d] != (m & 1) * p->step[0][d] + ((m >> 1) & 1) * p->step[1][d]) return 0;
    return 1;
}

int target_ldmatrix_plan_make(target_ldmatrix_plan *p, const target_atom *ld, const dist_layout *L, int64_t threads)
{
    memset(p, 0, sizeof *p);
    if (!ld || (ld->kind != TARGET_K_LDMATRIX && ld->kind != TARGET_K_STMATRIX) || !L || L->rank != 2 ||
        threads % ld->threads)
        return -1;
    /* the fragments it can deliver: an operand of an mma row the CUDA
     * generator prints, in table order */
    for (int i = 0; i < target_atom_count(); i++) {
        const target_atom *mma = target_atom_at(i);
        if (mma->kind != TARGET_K_MMA || !mma->cu || mma->tf32) continue; /* ldmatrix moves 16-bit elements */
        for (int op = TARGET_A; op <= TARGET_B; op++) {
            const dist_layout *F = target_atom_layout(mma, op);
            dist_layout R;
            layout_err le;
            if (!F || !frag_is_matrices(ld, F, p) || dist_layout_divide(&R, L, F, &le) ||
                R.threads * ld->threads != threads)
                continue;
            p->mma = mma, p->operand = op, p->slots = R.locals, p->per = (int)F->locals;
            return 0;
        }
    }
    memset(p, 0, sizeof *p);
    return -1;
}

int target_frag_text(strbuf *sb, const target_atom *a, int operand, int transposed)
{
    const dist_layout *F = target_atom_layout(a, operand);
    if (!F) return -1;
    if (!transposed) {
        dist_layout_print(sb, F);
        return 0;
    }
    dist_layout T = {0};
    for (int i = 0; i < F->natoms; i++) {
        const dist_atom *at = &F->atom[i];
        int64_t dims[DIST_MAX_RANK];
        int rank = at->kind == DIST_REPLICATE ? 0 : at->rank;
        for (int d = 0; d < rank; d++) dims[d] = at->dims[rank - 1 - d];
        if (at->kind == DIST_REPLICATE) dims[0] = at->dims[0];
        dist_layout x, y;
        layout_err e;
        if (dist_layout_atom(&x, at->kind, at->kind == DIST_REPLICATE ? at->column : !at->column, dims, rank, &e))
            return -1;
        if (i && dist_layout_compose(&y, &T, &x, &e)) return -1;
        T = i ? y : x;
    }
    dist_layout_print(sb, &T);
    return 0;
}
