/* driver.h — the one compile driver (DESIGN.md §1): a checked TC def and a
 * target in, an executable out, through one list of passes
 *
 *   schedule -> verify -> expand pipelines -> verify -> select instructions
 *   -> verify -> emit -> build the launch plan -> compile
 *
 * (driver.c), each stage's product shown when its dump flag is set. The
 * executable — tile IR text, options, arch, the launch plan with every
 * kernel's source and binaries — is what the cache stores and the tuner
 * varies; it runs on rt_exec (runtime/plan.h), the one executor. A target
 * is a struct of operations: the generator's emit here, compile, load,
 * launch, allocate and copy in the runtime's rt_target. */
#ifndef TSL_DRIVER_H
#define TSL_DRIVER_H

#include "base/base.h"
#include "lang/lang.h"
#include "runtime/plan.h"
#include "runtime/runtime.h"
#include "sched/options.h"
#include "tile/tile.h"

/* ---- targets ------------------------------------------------------------- */
/* What one kernel's emit gives the plan: its source (appended to out), its
 * entry symbol, shared bytes, size branches and error table, in arena a. */
typedef struct drv_emitted {
    const char *entry;
    int64_t smem;
    int nbranches;
    const tile_expr *const *branches; /* conditions in the kernel itself */
    int nerrs;
    rt_kerr *errs;
    int ntmaps;
    rt_tmap *tmaps;
} drv_emitted;

typedef struct drv_target {
    const char *name;
    tsl_target id;
    const char *source_ext; /* ".c", ".cu" */
    tsl_status (*emit)(const tile_module *m, const tile_kernel *k, const sched_options *o, tsl_arena *a,
                       strbuf *out, drv_emitted *e, tsl_diag *d);
    const rt_target *rt;
} drv_target;

extern const drv_target drv_target_cpu, drv_target_cuda; /* targets.c */
/* The tile interpreter as a target (target_interp.c): dev may point at
 * tile_interp_opts. */
extern const drv_target drv_target_tile_interp;
const drv_target *drv_target_of(tsl_target t);          /* NULL for the interpreter */

/* ---- dumps ---------------------------------------------------------------- */
/* One bit per stage, named as `tessel compile --emit=` and TESSEL_DUMP
 * (read by the CLI, not the library) name them. */
#define DRV_STAGES(X)                                                          \
    X(GRAPH, "graph", "the op graph and its kernel groups")                    \
    X(SCHED, "tile", "the scheduled tile IR and launch plan")                  \
    X(EXPAND, "expand", "the tile IR with pipelines expanded")                 \
    X(SELECT, "select", "the tile IR after instruction selection")            \
    X(SOURCE, "source", "every kernel's generated C or CUDA C")                \
    X(PLAN, "plan", "the launch plan as the executor runs it")

typedef enum drv_stage {
#define X(n, s, h) DRV_STAGE_##n,
    DRV_STAGES(X)
#undef X
        DRV_STAGE_COUNT
} drv_stage;

const char *drv_stage_name(drv_stage s);
/* A comma-separated list of stage names ("tile,source", "all") as a mask;
 * -1 naming the first unknown word in *bad. */
int drv_stage_mask(const char *list, const char **bad, size_t *badlen);

typedef void (*drv_dump_fn)(void *ctx, drv_stage stage, const char *text);

/* ---- compiling ------------------------------------------------------------ */
typedef struct drv_options {
    const sched_options *sched; /* the strategies' choices (NULL: the defaults); checked here */
    unsigned dump;       /* 1 << drv_stage */
    drv_dump_fn dump_fn; /* receives each stage's text; NULL: none */
    void *dump_ctx;
    int no_compile;      /* stop after the plan: emit only (no compiler run) */
    int stop_after;      /* 1 + the stage after which to stop (0: run every pass) */
} drv_options;

typedef struct drv_executable {
    tsl_target target;
    char arch[64];     /* what its binaries are for: "sm_90a", the CPU's ISA level */
    char *options;     /* the options' canonical text (sched_options_text; "" for the defaults) */
    int threads;       /* the options' CPU threads for a run (0: the pool's) */
    char *tile;        /* the scheduled tile IR with its plan (sched_print) */
    rt_plan *plan;     /* owns the launch plan, sources and binaries */
} drv_executable;

/* Compile def for target t and arch: the plan is scheduled for it (a CUDA
 * arch such as "sm_90a"; NULL: sm_80) and the binaries built for it
 * (unless options say no_compile; NULL: none). Errors as the stages give them; a schedule that does
 * not verify is TSL_ERR_INTERNAL naming the def. */
tsl_status drv_compile(const lang_def *def, const drv_target *t, const char *arch, const drv_options *o,
                       drv_executable **out, tsl_diag *d);
void drv_executable_free(drv_executable *x); /* NULL allowed */

/* The passes after `schedule` on a plan the caller scheduled, and on one
 * hand-written kernel of m (a plan of one launch whose tensors are the
 * kernel's parameters, in order). */
struct sched_plan;
tsl_status drv_compile_plan(const lang_def *def, const struct sched_plan *sp, const drv_target *t, const char *arch,
                            const drv_options *o, drv_executable **out, tsl_diag *d);
tsl_status drv_compile_kernel(const tile_module *m, const tile_kernel *k, const drv_target *t, const char *arch,
                              const drv_options *o, drv_executable **out, tsl_diag *d);

/* The executable as bytes and back (executable.c); a damaged blob is
 * TSL_ERR_IO with the reason. */
void drv_executable_write(strbuf *out, const drv_executable *x);
tsl_status drv_executable_read(const void *data, size_t n, drv_executable **out, tsl_diag *d);

/* ---- keys (key.c) ----------------------------------------------------------------
 * The program as canonical text: printed by the language's printer, every
 * name the def declares renamed v0, v1, ... by first appearance (malloc'd). */
char *drv_program_canonical(const lang_def *def);
/* The cache key of `kind` ("exe", "tuned") for a canonical program on
 * target t (dev's arch and toolchain), options and shapes (either may be
 * NULL), and tessel's build. */
void drv_program_key(const char *kind, const char *canonical, const drv_target *t, void *dev,
                     const char *options, const char *shapes, char out[33]);
extern const char tsl_build_id[];

/* ---- running (run.c) ----------------------------------------------------------
 * An executable ready on a device: the executable and its executor. */
typedef struct drv_prepared drv_prepared;
/* Takes x (freed on failure too). dev: the target's device (NULL on the CPU). */
tsl_status drv_prepare(drv_executable *x, const drv_target *t, void *dev, drv_prepared **out, tsl_diag *d);
/* drv_compile_plan for dev's arch, then drv_prepare. */
tsl_status drv_prepare_plan(const lang_def *def, const struct sched_plan *sp, const drv_target *t, void *dev,
                            drv_prepared **out, tsl_diag *d);
void drv_prepared_free(drv_prepared *p); /* NULL allowed */
rt_exec *drv_prepared_exec(const drv_prepared *p);
const drv_executable *drv_prepared_executable(const drv_prepared *p);

/* Run on host data: views of every def tensor of b->def (the interpreter's
 * convention: parameters and outputs point at caller memory, maybe
 * strided; scalars carry their value; temporaries ignored), outputs
 * written in place. Checked: an index out of range is TSL_ERR_BOUNDS. */
struct interp_tensor;
tsl_status drv_run(rt_exec *e, const lang_bound *b, const struct interp_tensor *views, tsl_diag *d);
/* Run with every tensor already on the device: data[i] is def tensor i's
 * dense C-order storage (ignored for scalars and temporaries), scalars[i]
 * a scalar's value (may be NULL when there are none). Without `check` a
 * device target returns once everything is queued (timing loops). */
tsl_status drv_run_device(rt_exec *e, const lang_bound *b, const rt_ptr *data, const double *scalars, int check,
                          tsl_diag *d);
/* The same with a run's temporaries and scratch from mem (rt_run.mem; NULL:
 * the executor's own): runs on a caller's stream. */
tsl_status drv_run_device_mem(rt_exec *e, const lang_bound *b, const rt_ptr *data, const double *scalars, int check,
                              const rt_mem *mem, tsl_diag *d);
/* Compile plan sp for target t (dev's arch), run it once on views, free
 * it (tests; the tuner's checks). */
tsl_status drv_plan_run(const lang_def *def, const struct sched_plan *sp, const lang_bound *b,
                        const struct interp_tensor *views, const drv_target *t, void *dev, tsl_diag *d);

/* ---- one tile kernel (run.c) ------------------------------------------------
 * Run kernel k of a hand-written tile module on a target with arguments
 * bound by name (tile_interp_run's convention: host DLTensors, strided
 * views allowed, outputs written back in place; ints and float scalars as
 * tile_interp_arg holds them). On a device target the tensors' spans are
 * copied there and back. Errors: the emitter's, binding (TSL_ERR_ARG /
 * TSL_ERR_SHAPE naming the tensor), the compiler's, the kernel's. */
struct tile_interp_arg;
typedef struct drv_kernel_opts {
    int reps;         /* > 0: time `reps` more launches after the checked one */
    double median_ms; /* out: their median */
    int force_wide;   /* the 64-bit index variant even when 32 bits suffice */
    int used_wide;    /* out: whether the 64-bit variant ran */
} drv_kernel_opts;

tsl_status drv_kernel_run(const drv_target *t, const tile_module *m, const tile_kernel *k,
                          const struct tile_interp_arg *args, int nargs, drv_kernel_opts *o, tsl_diag *d);

#endif
