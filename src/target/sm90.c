/* sm90.c — the Hopper atoms (sm_90 / sm_90a): wgmma.mma_async m64nNk16 for
 * N = 8..256 step 8 (f16 and bf16 in, f32 and f16 accumulators; A from
 * shared memory through a descriptor or from registers, B from shared),
 * cp.async.bulk.tensor 1D-5D loads (also multicast to a cluster) and stores,
 * and stmatrix x1/x2/x4 [.trans]. The sm80 rows run here too (target_has).
 *
 * The per-warpgroup layouts (PTX ISA, "Register Fragments" of
 * wgmma.mma_async.m64nNk16; the same facts as CUTLASS's CLayout_64xN), with
 * w = thread / 32 (the warp in the warpgroup), g = lane / 4, q = lane % 4:
 *   D (64xN), slot i < N/2:  row 16w + g + 8((i/2)%2), col 8(i/4) + 2q + i%2
 *   A in registers (64x16), slot i < 8: the same with N = 16
 * i.e. D = spatial(4,1).local(1,N/8).local(2,1).spatial(8,4).local(1,2):
 * warps stacked along M, each holding the mma.m16n8 C fragment repeated
 * N/8 times along N. tests/unit/test_target.c checks every N against the
 * formula written there independently. B (and A from shared memory) has no
 * register layout: the hardware reads the shared tensor through a matrix
 * descriptor whose swizzle mode comes from the tensor's layout. */
#include "target/frags.h"
#include "target/target.h"

#define ANY TARGET_DT_ANY
#define DT_ANY {ANY, ANY, ANY, ANY}
#define G TARGET_SP_GLOBAL
#define S TARGET_SP_SHARED
#define R TARGET_SP_REGISTER
#define F16 TSL_DTYPE_F16
#define BF16 TSL_DTYPE_BF16
#define F32 TSL_DTYPE_F32

/* the m16n8k16 fragments, warps stacked along M (frags.h) */
#define WG_A "spatial(4,1)." TARGET_FRAG_M16N8K16_A
#define WG_D(NB) "spatial(4,1).local(1," #NB ")." TARGET_FRAG_M16N8_C

/* N and N / 8 */
#define WGMMA_NS(X)                                                                                             \
    X(8, 1) X(16, 2) X(24, 3) X(32, 4) X(40, 5) X(48, 6) X(56, 7) X(64, 8) X(72, 9) X(80, 10) X(88, 11)        \
    X(96, 12) X(104, 13) X(112, 14) X(120, 15) X(128, 16) X(136, 17) X(144, 18) X(152, 19) X(160, 20)          \
    X(168, 21) X(176, 22) X(184, 23) X(192, 24) X(200, 25) X(208, 26) X(216, 27) X(224, 28) X(232, 29)         \
    X(240, 30) X(248, 31) X(256, 32)

/* one wgmma row: D dtype, A/B dtype (PTX order .dtype.atype.btype) */
#define WGMMA(N, NB, DT, AT, DTN, ATN)                                                                          \
    {.name = "wgmma.mma_async.sync.aligned.m64n" #N "k16." DTN "." ATN "." ATN, .alias = "m64n" #N "k16",       \
     .kind = TARGET_K_WGMMA, .sem = TARGET_SEM_WGMMA, .ops = TARGET_OP_WGMMA, .threads = 128, .m = 64,         \
     .n = N, .k = 16, .space = {S | R, S, R, R}, .dtype = {AT, AT, DT, DT},                                     \
     .layout = {WG_A, NULL, WG_D(NB), WG_D(NB)}, .sm = 90, .sm_a = 1,                                          \
     .ptx = "wgmma.mma_async.sync.aligned.m64n" #N "k16." DTN "." ATN "." ATN,                                   \
     .what = "one warpgroup's D = A.B + D, asynchronous: A from shared (descriptor) or registers, B from shared"},
#define WGMMA_ROWS(N, NB)                                                                                       \
    WGMMA(N, NB, F32, F16, "f32", "f16")                                                                        \
    WGMMA(N, NB, F32, BF16, "f32", "bf16")                                                                      \
    WGMMA(N, NB, F16, F16, "f16", "f16")

#define TMA_LOAD(D)                                                                                             \
    {.name = "cp.async.bulk.tensor." #D "d.shared.global", .kind = TARGET_K_TMA, .sem = TARGET_SEM_TMA,         \
     .ops = TARGET_OP_TMA_LOAD, .threads = 1, .count = D, .mcast = 1, .space = {G, S}, .dtype = DT_ANY,       \
     .sm = 90, .ptx = "cp.async.bulk.tensor." #D "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",  \
     .what = "a " #D "-D box global -> shared through a tensor map, counted on an mbarrier"},                  \
    {.name = "cp.async.bulk.tensor." #D "d.shared.global.multicast", .kind = TARGET_K_TMA,                      \
     .sem = TARGET_SEM_TMA, .ops = TARGET_OP_TMA_LOAD, .threads = 1, .count = D, .mcast = 2, .space = {G, S},  \
     .dtype = DT_ANY, .sm = 90,                                                                                \
     .ptx = "cp.async.bulk.tensor." #D "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"             \
            ".multicast::cluster",                                                                             \
     .what = "the same box into the shared memory of every block of a cluster mask"},                          \
    {.name = "cp.async.bulk.tensor." #D "d.global.shared", .kind = TARGET_K_TMA, .sem = TARGET_SEM_TMA,         \
     .ops = TARGET_OP_TMA_STORE, .threads = 1, .count = D, .space = {S, G}, .dtype = DT_ANY, .sm = 90,        \
     .ptx = "cp.async.bulk.tensor." #D "d.global.shared::cta.tile.bulk_group",                                  \
     .what = "a " #D "-D box shared -> global through a tensor map (complete at cp.async.bulk.wait_group)"},

#define STSM(NAME, N, T, FRAG, PTX, CU)                                                                         \
    {.name = NAME, .kind = TARGET_K_STMATRIX, .sem = TARGET_SEM_STMATRIX, .ops = TARGET_OP_ST_SHARED,          \
     .threads = 32, .bytes = 16, .count = N, .trans = T, .space = {R, S}, .dtype = DT_ANY,                     \
     .layout = {NULL, NULL, NULL, FRAG}, .sm = 90, .ptx = PTX, .cu = CU,                                       \
     .what = "a warp's fragments of N 8x8 16-bit matrices into shared memory"},

#define STSM_FRAG TARGET_FRAG_8X8
#define STSM_FRAG_T TARGET_FRAG_8X8_T

const target_atom target_sm90_atoms[] = {
    WGMMA_NS(WGMMA_ROWS)
    TMA_LOAD(1) TMA_LOAD(2) TMA_LOAD(3) TMA_LOAD(4) TMA_LOAD(5)
    STSM("stmatrix.x4", 4, 0, STSM_FRAG, "stmatrix.sync.aligned.m8n8.x4.shared.b16", "tsl_stsm_x4")
    STSM("stmatrix.x2", 2, 0, STSM_FRAG, "stmatrix.sync.aligned.m8n8.x2.shared.b16", "tsl_stsm_x2")
    STSM("stmatrix.x1", 1, 0, STSM_FRAG, "stmatrix.sync.aligned.m8n8.x1.shared.b16", "tsl_stsm_x1")
    STSM("stmatrix.x4.trans", 4, 1, STSM_FRAG_T, "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "tsl_stsm_x4_trans")
    STSM("stmatrix.x2.trans", 2, 1, STSM_FRAG_T, "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "tsl_stsm_x2_trans")
    STSM("stmatrix.x1.trans", 1, 1, STSM_FRAG_T, "stmatrix.sync.aligned.m8n8.x1.trans.shared.b16", "tsl_stsm_x1_trans")
};
const int target_sm90_natoms = (int)TSL_COUNTOF(target_sm90_atoms);
_Static_assert(TSL_COUNTOF(target_sm90_atoms) == 32 * 3 + 5 * 3 + 6, "32 N x 3 wgmma, 5 x 3 TMA, 6 stmatrix");
