/* sched_runners.h — kernel runners (sched_kernel_fn) the scheduler tests
 * share: the tile interpreter with blocks in a shuffled order (seeded from
 * the test's randomness, so inter-block dependences show), and the CPU
 * target's cg_c_run; an NVRTC check of every size arm. Defined in tests/unit/sched_runners.c. */
#ifndef TSL_TEST_SCHED_RUNNERS_H
#define TSL_TEST_SCHED_RUNNERS_H

#include "sched/sched.h"
#include "runtime/runtime.h"

tsl_status test_run_tile_interp(void *ctx, const tile_module *m, const tile_kernel *k,
                                const tile_interp_arg *args, int nargs, tsl_diag *d);
tsl_status test_run_cpu(void *ctx, const tile_module *m, const tile_kernel *k,
                        const tile_interp_arg *args, int nargs, tsl_diag *d);

/* The CUDA generator's source for kernel k compiled by the host C++
 * compiler with tests/unit/codegen_cuda_emu.h (every GPU thread a
 * pthread) and run on the host tensors: the CUDA path's logic without a
 * GPU. The size arms the launch's sizes take are compiled, as the CUDA
 * runtime does; shared objects are cached under the tessel cache dir. */
tsl_status test_run_cuda_emu(void *ctx, const tile_module *m, const tile_kernel *k,
                             const tile_interp_arg *args, int nargs, tsl_diag *d);
/* A C++ compiler for the emulation? (prints "skipped" once when not) */
int test_have_cxx(void);
/* Compile an emulated CUDA source into a cached shared object and dlopen
 * it; NULL (with the compiler's output shown) when it does not build. */
void *test_emu_build(const char *source, const char *tag);

/* Runs def at sizes sz (one per size slot) with the reference interpreter
 * and plan p through fn on fresh random inputs (outputs poisoned with NaN),
 * and checks every output element (tolerance per dtype: f16 2e-2, bf16
 * 5e-2, else 2e-4); `what` names the runner in failures. */
void test_compare_plan(tsl_arena *a, const lang_def *def, const sched_plan *p, const int64_t *sz, sched_kernel_fn fn,
                       const char *what);

/* NVRTC over every size specialisation of kernel k (the arms the CUDA
 * runtime may compile: codegen/cuda.h) for arch: the worst of their ptxas
 * reports in *worst (registers, spills, stack: the most of any arm; found:
 * how many arms reported) and the number of arms in *narms. TSL_OK when
 * every arm compiled; else the first failure in d. */
tsl_status test_nvrtc_arms(const tile_module *m, const tile_kernel *k, const char *arch, rt_ptxas_report *worst,
                           int *narms, tsl_diag *d);

/* How test_compare_plan_draw draws inputs and compares outputs: int_value
 * (NULL: +-[1, 9], unsigned [1, 9]) and float_value (NULL: +-[0.1, 1])
 * per element; float outputs within tol x (1 + |ref|) (0: f16 2e-3, bf16
 * 1e-2, else 1e-6), integer outputs bit for bit. */
typedef struct test_draw {
    int64_t (*int_value)(tsl_dtype t, void *ctx);
    double (*float_value)(tsl_dtype t, void *ctx);
    void *ctx;
    double tol;
    /* storage of the inputs the plan reads (NULL: the arena); e.g. memory
     * between inaccessible pages, so that a read past a tensor faults */
    void *(*alloc)(size_t bytes, void *ctx);
} test_draw;
/* test_compare_plan with chosen inputs (dr may be NULL) and exact
 * integers; outputs poisoned first. Returns the outputs that differ. */
int test_compare_plan_draw(tsl_arena *a, const lang_def *def, const sched_plan *p, const int64_t *sz,
                           sched_kernel_fn fn, const char *what, const test_draw *dr);

#endif
