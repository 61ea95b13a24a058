/* cpu.c — the CPU target's atoms, printed by the C generator: transfers as
 * C loops (the compiler vectorises them), the f32 vector registers of the
 * widths the generated C may be compiled for (chosen by the preprocessor
 * when the C is compiled), and the register-blocked f32 micro-kernel
 * (codegen/c_emit_ukr.c) in its two addressings, and the dequantizing
 * row loop of the quantized matmul (c_emit_dequant.c), which a CPU plan
 * asks for by writing the atom on the accumulating `add` that closes its
 * loop body. The C generator also runs the sm80 collective atoms (mma.sync,
 * ldmatrix) by their semantics: those rows carry a C form (target_has). */
#include "target/target.h"

#define ANY TARGET_DT_ANY
#define DT_ANY {ANY, ANY, ANY, ANY}
#define G TARGET_SP_GLOBAL
#define S TARGET_SP_SHARED
#define R TARGET_SP_REGISTER
#define F32 TSL_DTYPE_F32

#define VREG(NAME, LANES, COND)                                                                                 \
    {.name = NAME, .kind = TARGET_K_VEC, .sem = TARGET_SEM_MOVE, .threads = 1, .n = LANES, .bytes = LANES * 4, \
     .space = {S | G, R}, .dtype = {F32, F32, ANY, ANY}, .c = "vector_size(" #LANES " * 4)", .cond = COND,     \
     .what = "an f32 vector register of " #LANES " lanes (GNU C vector extension)"}

const target_atom target_cpu_atoms[] = {
    {.name = "cpu.copy", .kind = TARGET_K_COPY, .sem = TARGET_SEM_MOVE, .ops = TARGET_OP_MOVES, .threads = 1,
     .space = {G | S | R, G | S | R}, .dtype = DT_ANY, .c = "per-slot loops (c_emit_ops.c)",
     .what = "a transfer as C loops over the simulated threads' slots; contiguous runs and 2-D tiles as plain "
             "loops the C compiler vectorises"},
    /* the micro-kernel's vector widths, widest first (its variants) */
    VREG("cpu.vec.f32x16", 16, "defined(__GNUC__) && defined(__AVX512F__)"),
    VREG("cpu.vec.f32x8", 8, "defined(__GNUC__) && defined(__AVX__)"),
    VREG("cpu.vec.f32x4", 4, "defined(__GNUC__)"),
    VREG("cpu.vec.f32x1", 1, NULL),
    {.name = "cpu.ukr.f32", .kind = TARGET_K_UKR, .sem = TARGET_SEM_OUTER_ACC, .ops = TARGET_OP_ACC_STEP,
     .threads = 1, .m = 16, .n = 64, .regs = 256, .space = {S, S, R, R}, .dtype = {F32, F32, F32, F32},
     .c = "tsl_ukr (c_emit_ukr.c)",
     .what = "a `for k` whose body broadcasts a column of shared A and a row of shared B into an outer product "
             "added to acc, as one function per thread holding its TM x TN micro-tile in vector registers; the "
             "operands' offsets must be linear in k (checked before the loop; the generic loop runs otherwise)"},
    {.name = "cpu.ukr.f32.gather", .kind = TARGET_K_UKR, .sem = TARGET_SEM_OUTER_ACC,
     .ops = TARGET_OP_ACC_STEP, .threads = 1, .m = 16, .n = 64, .regs = 256, .space = {G, G, R, R},
     .dtype = {F32, F32, F32, F32}, .c = "tsl_rbk (c_emit_ukr.c)",
     .what = "the same micro-kernel over a `for j` whose body gathers a column of a flat global A and loads a "
             "run of a flat global B, with the per-step offsets tabulated in chunks"},
    {.name = "cpu.ukr.dequant", .kind = TARGET_K_UKR, .sem = TARGET_SEM_DEQUANT_ACC, .ops = TARGET_OP_ACC_STEP,
     .threads = 1, .m = 1, .n = 4096, .regs = 4096, .space = {G, G, R, R}, .dtype = {ANY, ANY, F32, F32},
     .c = "tsl_dq (c_emit_dequant.c)",
     .what = "a `for r` whose body loads a row of packed bytes, views them as a low-bit dtype, casts to f32 and "
             "adds their product with one element of X (broadcast) to acc: the fields unpacked by shifts and masks "
             "on 64-bit words (vector lanes), converted and multiply-added per row, the rows contiguous in memory"},
};
const int target_cpu_natoms = (int)TSL_COUNTOF(target_cpu_atoms);
