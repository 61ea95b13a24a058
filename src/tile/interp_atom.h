/* interp_atom.h — the collective GPU instructions the tile interpreter
 * simulates lane by lane, with the data-to-thread ownership the PTX ISA
 * defines for them (section "Warp-level matrix fragments"). Internal to
 * src/tile/interp*.c. */
#ifndef TSL_TILE_INTERP_ATOM_H
#define TSL_TILE_INTERP_ATOM_H

#include <stdint.h>

/* mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32:
 * with g = lane / 4 and q = lane % 4,
 *   A (16x16) a_i: row g + 8*((i/2)%2), col 2q + i%2 + 8*(i/4)   (i < 8)
 *   B (16x8)  b_i: row 2q + i%2 + 8*(i/2),  col g                (i < 4)
 *   C (16x8)  c_i: row g + 8*(i/2),        col 2q + i%2          (i < 4)
 * i.e. A = column_local(2,2).spatial(8,4).local(1,2),
 *      B = local(2,1).column_spatial(4,8).local(2,1),
 *      C = local(2,1).spatial(8,4).local(1,2). */
enum { IATOM_MMA_A, IATOM_MMA_B, IATOM_MMA_C };
void iatom_mma_frag_coord(int which, int lane, int slot, int *row, int *col);
int iatom_mma_frag_slots(int which); /* 8, 4, 4 */
/* The layout text of a fragment, for dividing a tensor's layout by it. */
const char *iatom_mma_frag_text(int which);
/* d[lane][i] = sum_k A*B + C over the fragments (f32 accumulation; the
 * products of f16/bf16 values are exact in f32, summed in k order). */
void iatom_mma_m16n8k16(const double a[32][8], const double b[32][4], const double c[32][4],
                        double d[32][4]);

/* ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 with n matrices:
 * lane l < 8n supplies the address of row l % 8 of matrix l / 8
 * (rows[l][0..7]); lane l receives in register m < n the pair (row l / 4,
 * cols 2(l%4), 2(l%4)+1) of matrix m (transposed: the pair (rows 2(l%4),
 * 2(l%4)+1; col l / 4)). out[l][2m + e] is element e of register m. */
void iatom_ldmatrix(const double rows[32][8], int n, int trans, double out[32][8]);

#endif
