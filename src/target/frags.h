/* frags.h — the warp-level fragment layouts of the PTX ISA, written once as
 * layout-algebra text for the table files (sm80.c's mma.sync and ldmatrix
 * rows, sm90.c's wgmma and stmatrix rows, which stack and repeat them).
 * Internal to src/target/; everyone else reads them through the rows
 * (target_atom_layout, target_frag_text).
 *
 * PTX ISA, "Matrix Fragments for mma.m16n8k16" and "mma.m16n8k8"
 * (f16/bf16), with g = lane / 4 and q = lane % 4:
 *   m16n8k16 A (16x16) a_i: row g + 8((i/2)%2), col 2q + i%2 + 8(i/4)
 *            B (16x8)  b_i: row 2q + i%2 + 8(i/2), col g
 *            C (16x8)  c_i: row g + 8(i/2), col 2q + i%2
 *   m16n8k8  A (16x8)  a_i: row g + 8(i/2), col 2q + i%2
 *            B (8x8)   b_i: row 2q + i, col g
 *   m16n8k8 .tf32 (one 32-bit element a register):
 *            A (16x8)  a_i: row g + 8(i%2), col q + 4(i/2)
 *            B (8x8)   b_i: row q + 4i, col g
 * The dequantizing mma (sm80.c's mma.q rows: W^T as the hardware's A, X^T
 * as its B, one m16n8k16 per 16 columns of a lane pair), over tile-IR
 * operands X [8, 16] (A), W [16, 128] low-bit (B), Y [8, 128] (C), with
 * g = lane / 4 and t = lane % 4:
 *   A x_i: row g, col 4t + i;  B w_i: row 4t + i/16, col 16g + i%16;
 *   C c_i: row 2t + i/16, col 16g + i%16.
 * ldmatrix / stmatrix: lane l holds in register m the pair (row l/4, cols
 * 2(l%4), +1) of matrix m; with .trans (rows 2(l%4), +1; col l/4).
 * tests/unit/test_target.c checks each against these formulas, written
 * there independently. */
#ifndef TSL_TARGET_FRAGS_H
#define TSL_TARGET_FRAGS_H

#define TARGET_FRAG_M16N8K16_A "column_local(2,2).spatial(8,4).local(1,2)"
#define TARGET_FRAG_M16N8K16_B "local(2,1).column_spatial(4,8).local(2,1)"
#define TARGET_FRAG_M16N8_C "local(2,1).spatial(8,4).local(1,2)"
#define TARGET_FRAG_M16N8K8_A "local(2,1).spatial(8,4).local(1,2)"
#define TARGET_FRAG_M16N8K8_B "column_spatial(4,8).local(2,1)"
#define TARGET_FRAG_M16N8K8_TF32_A "column_local(2,2).spatial(8,4)"
#define TARGET_FRAG_M16N8K8_TF32_B "local(2,1).column_spatial(4,8)"
#define TARGET_FRAG_Q_A "spatial(8,4).local(1,4)"
#define TARGET_FRAG_Q_B "column_spatial(4,8).local(4,16)"
#define TARGET_FRAG_Q_C "column_spatial(4,8).local(2,16)"
#define TARGET_FRAG_8X8 "spatial(8,4).local(1,2)"
#define TARGET_FRAG_8X8_T "column_spatial(4,8).local(2,1)"

#endif
