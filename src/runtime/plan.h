/* plan.h — a launch plan as data, and the one executor that runs it on
 * any target (DESIGN.md §1, §5).
 *
 * The compile driver (src/driver/) turns a scheduled tile module into an
 * rt_plan: per kernel its source, parameter ABI, how its size symbols bind
 * to argument dims, its grid and size-branch conditions as small postfix
 * integer programs (rt_expr), its run-time error table; per launch, which
 * kernel runs with which of the program's tensors, scalars and sizes. No
 * tile IR or TC is needed to run it, so it serialises (plan_io.c) and a
 * cached executable skips scheduling and code generation.
 *
 * A target is a struct of operations (rt_target, designated initialisers:
 * rt_target_cpu in target_cpu.c, rt_target_cuda in target_cuda.c); the
 * executor (exec.c) binds every launch's arguments once, in one place, and
 * calls the target to compile, load, launch, allocate and copy. */
#ifndef TSL_RUNTIME_PLAN_H
#define TSL_RUNTIME_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* ---- integer expressions: grids, size branches, parameter dims ----------
 * Postfix; RT_X_VAL v reads vals[v] of the launch's environment: the
 * kernel's size symbols [0, nsyms), then every kernel parameter's int
 * value [nsyms, nsyms + nparams) (0 for tensors). Division and modulo are
 * floor operations, as in the tile IR. */
#define RT_XOPS(X)                                                             \
    X(CONST, 0) X(VAL, 0) X(NEG, 1) X(NOT, 1) X(OR, 2) X(AND, 2) X(EQ, 2)      \
    X(NE, 2) X(LT, 2) X(LE, 2) X(GT, 2) X(GE, 2) X(ADD, 2) X(SUB, 2)           \
    X(MUL, 2) X(DIV, 2) X(MOD, 2) X(MIN, 2) X(MAX, 2) X(CDIV, 2)

typedef enum rt_xop {
#define X(n, a) RT_X_##n,
    RT_XOPS(X)
#undef X
        RT_X_COUNT
} rt_xop;

typedef struct rt_xins {
    int32_t op; /* rt_xop */
    int64_t v;  /* CONST: the value; VAL: the environment slot */
} rt_xins;

typedef struct rt_expr {
    int n;
    rt_xins *ins;
} rt_expr;

enum { RT_EXPR_MAX = 256, RT_MAX_RANK = 8 };

/* The value of e over vals[0, nvals); *ok = 0 on a bad slot, a division
 * by zero or a malformed program. */
int64_t rt_expr_eval(const rt_expr *e, const int64_t *vals, int nvals, int *ok);

/* ---- the plan ------------------------------------------------------------ */
enum {
    RT_T_SCALAR = 1, /* a scalar parameter (its value is a word, below) */
    RT_T_INPUT = 2,
    RT_T_OUTPUT = 4,
    RT_T_TEMP = 8 /* the executor allocates it on the device, zeroed per run */
};

typedef struct rt_tensor {
    char *name;
    int dtype; /* tsl_dtype */
    int rank;
    int flags; /* RT_T_* */
} rt_tensor;

typedef struct rt_param {
    char *name;
    int is_tensor;
    int is_float; /* scalar: the kernel reads a double (the word holds its bits) */
    int dtype;    /* tensor: tsl_dtype, -1 for types with no host equivalent */
    int rank;
    rt_expr *dims; /* [rank]: each dim's extent over the environment */
} rt_param;

/* A run-time error a CPU kernel can return (codegen/c: code i + 1). */
typedef struct rt_kerr {
    int st;      /* tsl_status */
    char *msg;   /* with info: a format taking info[0], info[1] (long long) */
    char *where; /* " (in `statement`)" or "" */
    int info;
} rt_kerr;

/* A compiled variant of a kernel: what the driver compiled up front (or a
 * cache gave back); the executor compiles any other variant it needs. */
typedef struct rt_binary {
    unsigned variant;
    void *data;
    size_t size;
} rt_binary;

/* A TMA tensor map a kernel takes after its regular parameters (sm_90a):
 * built at each launch from parameter `param`'s bound address, extents and
 * strides (codegen/cuda.h's cg_cuda_tmap). */
typedef struct rt_tmap {
    int param;
    int rank;        /* 1..5 */
    int64_t box[5];  /* elements per dim, outermost first */
    int swizzle;     /* bytes: 0, 32, 64, 128 */
    int guarded;     /* cg_cuda_tmap's: unencodable -> a zero map, not an error */
} rt_tmap;

enum { RT_MAX_TMAPS = 8 };

typedef struct rt_kernel {
    char *name;   /* the tile kernel's */
    char *entry;  /* its entry symbol (CUDA: the base; _i32/_i64 appended) */
    char *source; /* generated C or CUDA C */
    int threads;
    int cluster;   /* blocks a cluster along grid x (__cluster_dims__); 0 none */
    int64_t smem;  /* dynamic shared bytes */
    int nparams;
    rt_param *params;
    int nsyms;
    char **sym_names;
    int *sym_param, *sym_dim; /* symbol s is dim sym_dim[s] of param sym_param[s] */
    int ngrid;
    rt_expr grid[3];
    int nbranches; /* size branches: variant bit i + 1 is branch i's arm */
    rt_expr *branches;
    int nerrs;
    rt_kerr *errs;
    int ntmaps;
    rt_tmap *tmaps;
    int nbins;
    rt_binary *bins;
} rt_kernel;

typedef enum rt_arg_kind {
    RT_ARG_TENSOR,  /* plan tensor `index` (flat: as 1-D of all its elements) */
    RT_ARG_SCALAR,  /* the word of plan tensor `index` (a scalar) */
    RT_ARG_SIZE,    /* size `index` of the program */
    RT_ARG_SCRATCH, /* the plan's buffer `index` (values one launch leaves for the next) */
    RT_ARG_UNITS    /* the device's multiprocessor count (a persistent grid; 1 on the CPU) */
} rt_arg_kind;

/* A buffer the plan owns: `count` elements of dtype, 1-D, contents
 * undefined at the start of a run (a full reduction's partials). */
typedef struct rt_scratch {
    int dtype;
    int64_t count;
} rt_scratch;

typedef struct rt_arg {
    int kind;
    int index;
    int flat;
    int bytes;   /* TENSOR: a tensor of at most 8 bits passed as its
                    storage: u8 of the same rank, the last extent in bytes
                    (extent * bits / 8, which the launch's guard makes
                    whole); packed low-bit tensors, and 8-bit weights read by
                    the same kernels */
    rt_expr rows; /* TENSOR, over the program's sizes (n == 0: none): dim 0
                    cut to min(extent, max(0, rows)) (a quantized matmul's
                    reduction range, shorter than W when S has fewer groups) */
} rt_arg;

typedef struct rt_launch {
    int kernel;
    int stmt;  /* skipped when the run's lanes[stmt] is 0 */
    rt_expr when; /* over the program's sizes: run only when nonzero (n == 0: always) */
    rt_arg *args; /* one per kernel parameter, in parameter order */
} rt_launch;

typedef struct rt_plan {
    tsl_arena *arena; /* owns everything below */
    int ntensors;
    rt_tensor *tensors;
    int nsizes, nstmts;
    int nkernels;
    rt_kernel *kernels;
    int nlaunches;
    rt_launch *launches;
    int nscratch;
    rt_scratch *scratch;
} rt_plan;

/* An empty plan in a new arena; NULL when out of memory. */
rt_plan *rt_plan_create(void);
void rt_plan_free(rt_plan *p); /* NULL allowed */
/* Whether some launch takes plan tensor t (an unused temporary needs no
 * memory). */
int rt_plan_tensor_used(const rt_plan *p, int t);

/* Serialise (appending to out) and read back (plan_io.c). The reader
 * checks every length, index and expression, so a damaged blob is a clear
 * TSL_ERR_IO, never a crash. */
void rt_plan_write(strbuf *out, const rt_plan *p);
tsl_status rt_plan_read(const void *data, size_t n, rt_plan **out, tsl_diag *d);
/* A readable summary (for `tessel cache show`). */
void rt_plan_describe(strbuf *out, const rt_plan *p);

/* ---- targets --------------------------------------------------------------- */
typedef uint64_t rt_ptr; /* an address on the target's device (a host pointer on the CPU) */

typedef enum rt_copy_kind { RT_COPY_HTOD, RT_COPY_DTOH, RT_COPY_DTOD } rt_copy_kind;

/* One launch's arguments, bound: what a target packs into its ABI. */
typedef struct rt_bound {
    const rt_kernel *k;
    rt_ptr ptr[64];          /* tensor params: the data */
    int64_t word[64];        /* scalar params: the value (a double's bits when is_float) */
    int64_t shape[64][RT_MAX_RANK], stride[64][RT_MAX_RANK]; /* in elements */
    int64_t syms[64];
    int64_t grid[3];
    rt_ptr err; /* the launch's error record (targets that report faults by record) */
    int threads; /* host threads a CPU launch may use (0: all) */
} rt_bound;

enum { RT_MAX_PARAMS = 64, RT_ERR_WORDS = 8 };

/* A fault a launch reported at once (the CPU): code > 0 indexes the
 * kernel's error table from 1; block is the lowest failing block. */
typedef struct rt_fault {
    int code;
    int64_t block;
    int64_t info[2];
} rt_fault;

typedef struct rt_target {
    const char *name;
    int host_memory;   /* device addresses are host pointers: callers pass their own storage */
    int index_variants; /* kernels come as 32/64-bit index variants and per size-branch arm */
    int fault_records; /* kernels report index errors in an RT_ERR_WORDS record per launch */
    /* The arch a device's binaries are built for ("sm_90a"; the CPU: its
     * instruction-set level); compile needs only the arch, no device. */
    const char *(*arch)(void *dev);
    /* Its multiprocessors (a persistent grid's size; 1 on the CPU). */
    int (*units)(void *dev);
    /* The blocks of kernel k (clusters of k->cluster) that can be resident
     * at once, as a multiple of the cluster size: a cluster kernel's
     * persistent grid (fn: a loaded variant). NULL: units(). */
    int (*cluster_units)(void *dev, void *fn, const rt_kernel *k);
    /* What its binaries depend on besides the source and arch (compiler,
     * NVRTC and driver versions): part of every key of a compiled thing. */
    const char *(*toolchain)(void *dev);
    /* Compile kernel k's variant for arch (cached by the runtime). */
    tsl_status (*compile)(const char *arch, const rt_kernel *k, unsigned variant, void **bin, size_t *size,
                          tsl_diag *d);
    /* Load a binary and find the variant's entry. */
    tsl_status (*load)(void *dev, const rt_kernel *k, unsigned variant, const void *bin, size_t size, void **module,
                       void **fn, tsl_diag *d);
    void (*unload)(void *module);
    /* Queue (or, on the CPU, run) one launch; a fault reported at once
     * goes to *fault with TSL_ERR_RUNTIME returned. */
    tsl_status (*launch)(void *dev, void *fn, const rt_bound *b, rt_fault *fault, tsl_diag *d);
    tsl_status (*alloc)(void *dev, size_t size, rt_ptr *out, tsl_diag *d);
    void (*free)(void *dev, rt_ptr p);
    tsl_status (*copy)(void *dev, rt_ptr dst, rt_ptr src, size_t size, rt_copy_kind kind, tsl_diag *d);
    tsl_status (*memset)(void *dev, rt_ptr p, int byte, size_t size, tsl_diag *d);
    tsl_status (*sync)(void *dev, tsl_diag *d);
    /* Timing: events on the device's stream (the CPU: the monotonic clock). */
    tsl_status (*event_create)(void *dev, void **ev, tsl_diag *d);
    tsl_status (*event_record)(void *dev, void *ev, tsl_diag *d);
    tsl_status (*event_elapsed)(void *dev, void *start, void *end, double *ms, tsl_diag *d);
    void (*event_destroy)(void *dev, void *ev);
} rt_target;

extern const rt_target rt_target_cpu;  /* target_cpu.c; dev is NULL */
extern const rt_target rt_target_cuda; /* target_cuda.c; dev is an rt_cuda_device */

/* ---- the executor (exec.c) ------------------------------------------------ */
typedef struct rt_exec rt_exec;

/* Device memory for one run's temporaries and scratch buffers (a
 * caller's allocator, or stream-ordered memory): alloc gives `bytes` usable
 * in order on the device's current stream (0 on failure), free returns it
 * in that order. */
typedef struct rt_mem {
    rt_ptr (*alloc)(void *user, size_t bytes);
    void (*free)(void *user, rt_ptr p);
    void *user;
} rt_mem;

/* One run's inputs. Per plan tensor: data (a device address; ignored for
 * scalars and temporaries; 0 allowed when it has no elements), shape
 * ([rank]), strides (elements; NULL: C order); words: a scalar's value
 * (a double's bits for a float dtype); sizes: the program's size values;
 * lanes (may be NULL): per statement, 0 when its box is empty; mem (may
 * be NULL): where this run's temporaries and scratch come from. */
typedef struct rt_run {
    const rt_ptr *data;
    const int64_t *const *shape;
    const int64_t *const *strides;
    const int64_t *words;
    const int64_t *sizes;
    const int64_t *lanes;
    const rt_mem *mem;
} rt_run;

/* Load every binary the plan carries and compile the kernels' plain
 * variants (no size branch, 32-bit index) that it lacks. plan, target and
 * dev are kept, not owned. */
tsl_status rt_exec_create(const rt_plan *p, const rt_target *t, void *dev, rt_exec **out, tsl_diag *d);
void rt_exec_free(rt_exec *x); /* NULL allowed */

/* Every launch in order (empty boxes and grids skipped), temporaries
 * zeroed first. With `check`, waits for the device and reports an index
 * out of range (TSL_ERR_BOUNDS naming kernel, tensor, dim, index, size);
 * without it a device target returns once everything is queued (timing,
 * asynchronous runs on a caller's stream). Without r->mem the executor
 * keeps temporaries and scratch across runs (grown when sizes grow); with
 * it each run takes them from r->mem and gives them back once its launches
 * are queued, so runs on different streams share nothing and a run
 * allocates nothing outside its stream (CUDA graph capture works). */
tsl_status rt_exec_run(rt_exec *x, const rt_run *r, int check, tsl_diag *d);

/* Launches the last run made, and the variant launch i used (-1: none). */
int rt_exec_launches_run(const rt_exec *x);
int rt_exec_variant(const rt_exec *x, int launch);
/* Use the 64-bit index variant even where 32 bits suffice (tests). */
void rt_exec_force_wide(rt_exec *x, int on);
/* Host threads a CPU launch may use (0: all of the pool's). */
void rt_exec_set_threads(rt_exec *x, int threads);
/* Variant binaries this executor compiled or loaded, for the cache:
 * kernel k's i-th, i < rt_exec_nbinaries(x, k). */
int rt_exec_nbinaries(const rt_exec *x, int k);
const rt_binary *rt_exec_binary(const rt_exec *x, int k, int i);
const rt_target *rt_exec_target(const rt_exec *x);
void *rt_exec_device(const rt_exec *x);

#endif
