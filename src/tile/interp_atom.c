/* interp_atom.c — lane-by-lane semantics of mma.m16n8k16 and ldmatrix.x4
 * (fragment ownership from the PTX ISA; see interp_atom.h). */
#include "tile/interp_atom.h"

void iatom_mma_frag_coord(int which, int lane, int slot, int *row, int *col)
{
    int g = lane / 4, q = lane % 4;
    switch (which) {
    case IATOM_MMA_A:
        *row = g + 8 * ((slot / 2) % 2);
        *col = 2 * q + slot % 2 + 8 * (slot / 4);
        break;
    case IATOM_MMA_B:
        *row = 2 * q + slot % 2 + 8 * (slot / 2);
        *col = g;
        break;
    default:
        *row = g + 8 * (slot / 2);
        *col = 2 * q + slot % 2;
        break;
    }
}

int iatom_mma_frag_slots(int which)
{
    return which == IATOM_MMA_A ? 8 : 4;
}

const char *iatom_mma_frag_text(int which)
{
    switch (which) {
    case IATOM_MMA_A: return "column_local(2,2).spatial(8,4).local(1,2)";
    case IATOM_MMA_B: return "local(2,1).column_spatial(4,8).local(2,1)";
    default: return "local(2,1).spatial(8,4).local(1,2)";
    }
}

void iatom_mma_m16n8k16(const double a[32][8], const double b[32][4], const double c[32][4],
                        double d[32][4])
{
    double A[16][16], B[16][8], C[16][8];
    int r, k;
    for (int l = 0; l < 32; l++) {
        for (int i = 0; i < 8; i++) {
            iatom_mma_frag_coord(IATOM_MMA_A, l, i, &r, &k);
            A[r][k] = a[l][i];
        }
        for (int i = 0; i < 4; i++) {
            iatom_mma_frag_coord(IATOM_MMA_B, l, i, &k, &r);
            B[k][r] = b[l][i];
            iatom_mma_frag_coord(IATOM_MMA_C, l, i, &r, &k);
            C[r][k] = c[l][i];
        }
    }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++) {
            int m, n;
            iatom_mma_frag_coord(IATOM_MMA_C, l, i, &m, &n);
            float acc = (float)C[m][n];
            for (int kk = 0; kk < 16; kk++) acc += (float)A[m][kk] * (float)B[kk][n];
            d[l][i] = acc;
        }
}

void iatom_ldmatrix(const double rows[32][8], int n, int trans, double out[32][8])
{
    for (int l = 0; l < 32; l++)
        for (int m = 0; m < n; m++)
            for (int e = 0; e < 2; e++) {
                int src_row, src_col;
                if (!trans) {
                    src_row = l / 4;
                    src_col = 2 * (l % 4) + e;
                } else {
                    src_row = 2 * (l % 4) + e;
                    src_col = l / 4;
                }
                out[l][2 * m + e] = rows[8 * m + src_row][src_col];
            }
}
