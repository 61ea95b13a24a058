/* sm80.c — the Ampere atoms (sm_80 and later): vector loads and stores,
 * cp.async, ldmatrix, mma.sync m16n8k16 / m16n8k8, and the explicit
 * per-thread fallbacks. Widest first within a kind: the selection pass
 * takes the first row that fits. The fragment layouts are frags.h's,
 * written once there. */
#include "target/frags.h"
#include "target/target.h"

#define ANY TARGET_DT_ANY
#define DT_ANY {ANY, ANY, ANY, ANY}
#define G TARGET_SP_GLOBAL
#define S TARGET_SP_SHARED
#define R TARGET_SP_REGISTER

#define M16N8K16_A TARGET_FRAG_M16N8K16_A
#define M16N8K16_B TARGET_FRAG_M16N8K16_B
#define M16N8_C TARGET_FRAG_M16N8_C
#define M16N8K8_A TARGET_FRAG_M16N8K8_A
#define M16N8K8_B TARGET_FRAG_M16N8K8_B
#define M16N8K8_TF32_A TARGET_FRAG_M16N8K8_TF32_A
#define M16N8K8_TF32_B TARGET_FRAG_M16N8K8_TF32_B
#define Q_A TARGET_FRAG_Q_A
#define Q_B TARGET_FRAG_Q_B
#define Q_C TARGET_FRAG_Q_C
#define LDSM_FRAG TARGET_FRAG_8X8
#define LDSM_FRAG_T TARGET_FRAG_8X8_T

/* one thread's vector access of BYTES bytes */
#define VEC(NAME, OP, SRC, DST, BYTES, WHAT)                                                                   \
    {.name = NAME, .kind = TARGET_K_VEC, .sem = TARGET_SEM_MOVE, .ops = OP, .threads = 1, .bytes = BYTES,      \
     .space = {SRC, DST}, .dtype = DT_ANY, .sm = 80, .ptx = NAME, .what = WHAT}

/* N 8x8 matrices; T: .trans; FRAG: one matrix's fragment in the warp */
#define LDSM(NAME, N, T, FRAG, PTX, CU)                                                                         \
    {.name = NAME, .kind = TARGET_K_LDMATRIX, .sem = TARGET_SEM_LDMATRIX, .ops = TARGET_OP_LD_SHARED,          \
     .threads = 32, .bytes = 16, .count = N, .trans = T, .space = {S, R}, .dtype = DT_ANY,                     \
     .layout = {NULL, NULL, NULL, FRAG}, .sm = 80, .ptx = PTX, .cu = CU,                                       \
     .c = "ldmatrix, lanes below 8N giving rows",                                                             \
     .what = "N 8x8 16-bit matrices from shared memory into a warp's fragments"}

#define MMA(NAME, ALIAS, MM, NN, KK, LA, LB, AT, CT, PTXNAME, CU)                                               \
    {.name = NAME, .alias = ALIAS, .kind = TARGET_K_MMA, .sem = TARGET_SEM_MMA, .ops = TARGET_OP_MMA,          \
     .threads = 32, .m = MM, .n = NN, .k = KK, .space = {R, R, R, R}, .dtype = {AT, AT, CT, CT},               \
     .layout = {LA, LB, M16N8_C, M16N8_C}, .sm = 80, .ptx = PTXNAME, .cu = CU, .c = "tsl_mma_frag",           \
     .what = "one warp's D = A.B + C on register fragments"}

/* The dequantizing mma: D = X.W + C with W's codes (unsigned, BITS bits,
 * read from the words of the view that made it) as exact f16 values. One
 * instruction of the tile IR is 8 hardware m16n8k16 per warp, the roles
 * swapped (W^T is the hardware's A, X^T its B): per byte of a lane's run
 * of a row, prmt puts it from two rows into bytes 0 and 2 of a word, lop3
 * under the magic 0x6400 makes each field's k pair (1024 + 2^(ib) q), one
 * fma.f16x2 takes it to q (tsl_qmma, codegen/cuda.c) */
#define QMMA(BITS, BT)                                                                                          \
    {.name = "mma.q.m8n128k16.f32.f16.u" #BITS, .alias = "q.m8n128k16", .kind = TARGET_K_MMA,                   \
     .sem = TARGET_SEM_MMA, .ops = TARGET_OP_MMA, .threads = 32, .m = 8, .n = 128, .k = 16,                     \
     .space = {R, R, R, R}, .dtype = {TSL_DTYPE_F16, BT, TSL_DTYPE_F32, TSL_DTYPE_F32},                          \
     .layout = {Q_A, Q_B, Q_C, Q_C}, .sm = 80, .ptx = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",         \
     .cu = "tsl_qmma", .c = "tsl_mma_frag",                                                                     \
     .what = "one warp's D = X.W + C, W " #BITS "-bit unsigned codes dequantized in registers (8 m16n8k16, "    \
             "W^T as the hardware A)"}

/* the fallback: dot products through shared scratch; its operands are
 * still R.F with F the warp fragments below (threads: that group) */
#define MMA_SCALAR(NAME, MM, NN, KK, LA, LB)                                                                    \
    {.name = NAME, .kind = TARGET_K_SCALAR, .sem = TARGET_SEM_MMA, .ops = TARGET_OP_MMA, .threads = 32,       \
     .m = MM, .n = NN, .k = KK, .space = {R, R, R, R}, .dtype = {ANY, ANY, ANY, ANY},                         \
     .layout = {LA, LB, M16N8_C, M16N8_C}, .sm = 80, .ptx = "fmaf",                                           \
     .what = "the mma's semantics per thread: operands through shared scratch, each D element a dot product"}

const target_atom target_sm80_atoms[] = {
    VEC("ld.global.v4.u32", TARGET_OP_LD_GLOBAL, G, R, 16, "16 contiguous, aligned bytes from global memory"),
    VEC("ld.global.v2.u32", TARGET_OP_LD_GLOBAL, G, R, 8, "8 contiguous, aligned bytes from global memory"),
    VEC("ld.global.u32", TARGET_OP_LD_GLOBAL, G, R, 4, "4 contiguous, aligned bytes from global memory"),
    VEC("st.global.v4.u32", TARGET_OP_ST_GLOBAL, R, G, 16, "16 contiguous, aligned bytes to global memory"),
    VEC("st.global.v2.u32", TARGET_OP_ST_GLOBAL, R, G, 8, "8 contiguous, aligned bytes to global memory"),
    VEC("st.global.u32", TARGET_OP_ST_GLOBAL, R, G, 4, "4 contiguous, aligned bytes to global memory"),
    VEC("ld.shared.v4.u32", TARGET_OP_LD_SHARED, S, R, 16, "16 contiguous, aligned bytes from shared memory"),
    VEC("ld.shared.v2.u32", TARGET_OP_LD_SHARED, S, R, 8, "8 contiguous, aligned bytes from shared memory"),
    VEC("ld.shared.u32", TARGET_OP_LD_SHARED, S, R, 4, "4 contiguous, aligned bytes from shared memory"),
    VEC("st.shared.v4.u32", TARGET_OP_ST_SHARED, R, S, 16, "16 contiguous, aligned bytes to shared memory"),
    VEC("st.shared.v2.u32", TARGET_OP_ST_SHARED, R, S, 8, "8 contiguous, aligned bytes to shared memory"),
    VEC("st.shared.u32", TARGET_OP_ST_SHARED, R, S, 4, "4 contiguous, aligned bytes to shared memory"),
    {.name = "cp.async.cg.shared.global", .kind = TARGET_K_CP_ASYNC, .sem = TARGET_SEM_ASYNC,
     .ops = TARGET_OP_CP_ASYNC, .threads = 1, .bytes = 16, .space = {G, S}, .dtype = DT_ANY, .sm = 80,
     .ptx = "cp.async.cg.shared.global [%0], [%1], 16, %2;", .cu = "tsl_cp_async16",
     .what = "16 bytes global -> shared, bypassing L1, zero-filled past the source size"},
    {.name = "cp.async.ca.shared.global", .kind = TARGET_K_CP_ASYNC, .sem = TARGET_SEM_ASYNC,
     .ops = TARGET_OP_CP_ASYNC, .threads = 1, .bytes = 8, .space = {G, S}, .dtype = DT_ANY, .sm = 80,
     .ptx = "cp.async.ca.shared.global [%0], [%1], 8, %2;", .cu = "tsl_cp_async8",
     .what = "8 bytes global -> shared through L1"},
    {.name = "cp.async.ca.shared.global", .kind = TARGET_K_CP_ASYNC, .sem = TARGET_SEM_ASYNC,
     .ops = TARGET_OP_CP_ASYNC, .threads = 1, .bytes = 4, .space = {G, S}, .dtype = DT_ANY, .sm = 80,
     .ptx = "cp.async.ca.shared.global [%0], [%1], 4, %2;", .cu = "tsl_cp_async4",
     .what = "4 bytes global -> shared through L1"},
    LDSM("ldmatrix.x4", 4, 0, LDSM_FRAG, "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "tsl_ldsm_x4"),
    LDSM("ldmatrix.x2", 2, 0, LDSM_FRAG, "ldmatrix.sync.aligned.m8n8.x2.shared.b16", "tsl_ldsm_x2"),
    LDSM("ldmatrix.x1", 1, 0, LDSM_FRAG, "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "tsl_ldsm_x1"),
    LDSM("ldmatrix.x4.trans", 4, 1, LDSM_FRAG_T, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
         "tsl_ldsm_x4_trans"),
    LDSM("ldmatrix.x2.trans", 2, 1, LDSM_FRAG_T, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
         "tsl_ldsm_x2_trans"),
    LDSM("ldmatrix.x1.trans", 1, 1, LDSM_FRAG_T, "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
         "tsl_ldsm_x1_trans"),
    MMA("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "m16n8k16", 16, 8, 16, M16N8K16_A, M16N8K16_B,
        TSL_DTYPE_F16, TSL_DTYPE_F32, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "tsl_mma_f16"),
    MMA("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k16", 16, 8, 16, M16N8K16_A, M16N8K16_B,
        TSL_DTYPE_BF16, TSL_DTYPE_F32, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "tsl_mma_bf16"),
    MMA("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "m16n8k16", 16, 8, 16, M16N8K16_A, M16N8K16_B,
        TSL_DTYPE_F16, TSL_DTYPE_F16, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "tsl_mma_f16_f16"),
    MMA("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", "m16n8k8", 16, 8, 8, M16N8K8_A, M16N8K8_B,
        TSL_DTYPE_F16, TSL_DTYPE_F32, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", "tsl_mma_k8_f16"),
    MMA("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", "m16n8k8", 16, 8, 8, M16N8K8_A, M16N8K8_B,
        TSL_DTYPE_BF16, TSL_DTYPE_F32, "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", "tsl_mma_k8_bf16"),
    MMA("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", "m16n8k8", 16, 8, 8, M16N8K8_A, M16N8K8_B,
        TSL_DTYPE_F16, TSL_DTYPE_F16, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", "tsl_mma_k8_f16_f16"),
    QMMA(1, TSL_DTYPE_U1),
    QMMA(2, TSL_DTYPE_U2),
    QMMA(4, TSL_DTYPE_U4),
    QMMA(8, TSL_DTYPE_U8),
    /* f32 through the tensor cores: only by its exact name (no alias), which
     * a plan writes only when the user allowed tf32 (--allow-tf32) */
    {.name = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", .kind = TARGET_K_MMA, .sem = TARGET_SEM_MMA,
     .ops = TARGET_OP_MMA, .threads = 32, .m = 16, .n = 8, .k = 8, .tf32 = 1, .space = {R, R, R, R},
     .dtype = {TSL_DTYPE_F32, TSL_DTYPE_F32, TSL_DTYPE_F32, TSL_DTYPE_F32},
     .layout = {M16N8K8_TF32_A, M16N8K8_TF32_B, M16N8_C, M16N8_C}, .sm = 80,
     .ptx = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", .cu = "tsl_mma_tf32", .c = "tsl_mma_frag",
     .what = "one warp's D = A.B + C, A and B f32 rounded to tf32 (cvt.rna) first"},
    /* the fallbacks, last: chosen only when nothing above fits, and then
     * written into the IR */
    {.name = "scalar.ld.global", .kind = TARGET_K_SCALAR, .sem = TARGET_SEM_MOVE, .ops = TARGET_OP_LD_GLOBAL,
     .threads = 1, .space = {G, R}, .dtype = DT_ANY, .sm = 80, .ptx = "ld.global",
     .what = "element by element, each masked to the bounds"},
    {.name = "scalar.st.global", .kind = TARGET_K_SCALAR, .sem = TARGET_SEM_MOVE, .ops = TARGET_OP_ST_GLOBAL,
     .threads = 1, .space = {R, G}, .dtype = DT_ANY, .sm = 80, .ptx = "st.global",
     .what = "element by element, each masked to the bounds"},
    {.name = "scalar.ld.shared", .kind = TARGET_K_SCALAR, .sem = TARGET_SEM_MOVE, .ops = TARGET_OP_LD_SHARED,
     .threads = 1, .space = {S, R}, .dtype = DT_ANY, .sm = 80, .ptx = "ld.shared",
     .what = "element by element"},
    {.name = "scalar.st.shared", .kind = TARGET_K_SCALAR, .sem = TARGET_SEM_MOVE, .ops = TARGET_OP_ST_SHARED,
     .threads = 1, .space = {R, S}, .dtype = DT_ANY, .sm = 80, .ptx = "st.shared",
     .what = "element by element"},
    {.name = "scalar.cp.async", .kind = TARGET_K_SCALAR, .sem = TARGET_SEM_ASYNC, .ops = TARGET_OP_CP_ASYNC,
     .threads = 1, .space = {G, S}, .dtype = DT_ANY, .sm = 80, .ptx = "ld.global + st.shared",
     .what = "element by element (chunks that break in shared memory, mixed dtypes)"},
    MMA_SCALAR("scalar.mma.m16n8k16", 16, 8, 16, M16N8K16_A, M16N8K16_B),
    MMA_SCALAR("scalar.mma.m16n8k8", 16, 8, 8, M16N8K8_A, M16N8K8_B),
};
const int target_sm80_natoms = (int)TSL_COUNTOF(target_sm80_atoms);
