/* sched_runners.h — the targets the scheduler tests run plans on, through
 * the compile driver and the one executor: the tile interpreter with blocks
 * in a shuffled order (seeded from the test's randomness, so inter-block
 * dependences show), the CPU, a GPU; an NVRTC check of every size arm.
 * Defined in tests/unit/sched_runners.c. */
#ifndef TSL_TEST_SCHED_RUNNERS_H
#define TSL_TEST_SCHED_RUNNERS_H

#include "driver/driver.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "sched/sched.h"

/* A target a plan runs on in the tests. */
typedef struct test_runner {
    const drv_target *t;
    int shuffle;  /* the tile interpreter: blocks in a fresh random order */
    int emulated; /* the CUDA target with the host emulation below as its runtime */
} test_runner;

/* test_run_cuda_emu: the CUDA generator's source compiled by the host C++
 * compiler with tests/unit/codegen_cuda_emu.h (every GPU thread a
 * pthread) and run on host tensors through the executor: the CUDA path's
 * logic without a GPU. The size arms the launch's sizes take are compiled,
 * as the CUDA runtime does; shared objects are cached under the tessel
 * cache dir. */
extern const test_runner *const test_run_tile_interp, *const test_run_cpu, *const test_run_gpu,
    *const test_run_cuda_emu;

/* Compile plan p for r's target and run it once (sched_run's convention:
 * tensors[i] is def->tensors[i]'s host storage in C order with the bound
 * shape, NULL for scalars and temporaries; scalars[i] a scalar's value). */
tsl_status test_plan_run(const sched_plan *p, const lang_bound *b, DLTensor *const *tensors, const double *scalars,
                         const test_runner *r, tsl_diag *d);

/* A C++ compiler for the emulation? (prints "skipped" once when not) */
int test_have_cxx(void);
/* Compile an emulated CUDA source into a cached shared object and dlopen
 * it; NULL (with the compiler's output shown) when it does not build. */
void *test_emu_build(const char *source, const char *tag);

/* One plan against the interpreter, the data both run on: per def
 * tensor the interpreter's storage (ref; its views) and the plan's (got;
 * its DLTensors), both C order, filled alike: inputs by fill->input
 * (NULL: floats uniform in [-1, 1), integers in [1, 9]), outputs poisoned
 * (floats NaN, integers 0xA5 bytes), scalars by fill->scalar (NULL: in
 * [0.5, 1.5)). Temporaries and scalars have no storage. Every
 * compare-plan loop of the scheduler's tests is made of these. */
typedef struct test_plan_fill {
    void (*input)(const lang_tensor *t, void *data, int64_t n, void *ctx); /* n elements of data */
    void *(*alloc)(size_t bytes, void *ctx); /* the plan's storage (NULL: the arena) */
    void *ctx;
    double (*scalar)(const lang_tensor *t, void *ctx); /* a scalar's value (NULL: [0.5, 1.5)) */
} test_plan_fill;
typedef struct test_plan_data {
    const lang_def *def;
    lang_bound *b;
    void **ref, **got;
    int64_t *cnt;         /* elements of each tensor */
    DLTensor **dls;       /* the plan's tensors (NULL: scalars, temporaries) */
    double *scal;
    interp_tensor *views; /* the interpreter's */
} test_plan_data;
void test_plan_data_make(tsl_arena *a, const lang_def *def, lang_bound *b, const test_plan_fill *f,
                         test_plan_data *out);
/* The plan on got through r (CHECKs a failure naming label); TSL_OK when it ran. */
tsl_status test_plan_data_run(test_plan_data *c, const sched_plan *p, const test_runner *r, const char *label);
/* Output i of got against ref: floats within tol x (1 + |ref|) (equal,
 * or both NaN, passes), integers bit for bit; CHECKs each bad element
 * (at most maxbad) as "LABEL: NAME[e] (DTYPE) is GOT, the interpreter's
 * REF". Returns the elements found bad. */
int test_plan_data_compare(const test_plan_data *c, int i, double tol, int maxbad, const char *label);
/* As test_plan_data_compare, an element passing when |got - ref| <=
 * tol * (1 + floor + |ref|). */
int test_plan_data_compare_floor(const test_plan_data *c, int i, double tol, double floor, int maxbad,
                                 const char *label);

/* p's tile module verifies, and printing it, parsing that text and
 * printing again gives the same text; each failure is CHECKed, naming
 * `name`. TSL_OK when it verifies and parses. */
tsl_status test_plan_round_trip(tsl_arena *a, const sched_plan *p, const char *name);

/* Runs def at sizes sz (one per size slot) with the reference interpreter
 * and plan p on r's target on fresh random inputs (outputs poisoned with NaN),
 * and checks every output element (tolerance per dtype: f16 2e-2, bf16
 * 5e-2, else 2e-4); `what` names the runner in failures. */
void test_compare_plan(tsl_arena *a, const lang_def *def, const sched_plan *p, const int64_t *sz,
                       const test_runner *r, const char *what);

/* NVRTC over every size specialisation of kernel k (the arms the CUDA
 * runtime may compile: codegen/cuda.h) for arch: the worst of their ptxas
 * reports in *worst (registers, spills, stack: the most of any arm; found:
 * how many arms reported) and the number of arms in *narms. TSL_OK when
 * every arm compiled; else the first failure in d. */
tsl_status test_nvrtc_arms(const tile_module *m, const tile_kernel *k, const char *arch, rt_ptxas_report *worst,
                           int *narms, tsl_diag *d);

/* How test_compare_plan_draw draws inputs and compares outputs: int_value
 * (NULL: +-[1, 9], unsigned [1, 9]) and float_value (NULL: +-[0.1, 1])
 * per element, scalar_value (NULL: [0.5, 1.5)) per scalar; float outputs
 * within tol x (1 + |ref|) (0: f16 2e-3, bf16 1e-2, else 1e-6), integer
 * outputs bit for bit. */
typedef struct test_draw {
    int64_t (*int_value)(tsl_dtype t, void *ctx);
    double (*float_value)(tsl_dtype t, void *ctx);
    void *ctx;
    double tol;
    /* storage of the inputs the plan reads (NULL: the arena); e.g. memory
     * between inaccessible pages, so that a read past a tensor faults */
    void *(*alloc)(size_t bytes, void *ctx);
    double (*scalar_value)(tsl_dtype t, void *ctx);
} test_draw;
/* test_compare_plan with chosen inputs (dr may be NULL) and exact
 * integers; outputs poisoned first. Returns the outputs that differ. */
int test_compare_plan_draw(tsl_arena *a, const lang_def *def, const sched_plan *p, const int64_t *sz,
                           const test_runner *fn, const char *what, const test_draw *dr);

#endif
