/* api.h — what the files of src/api/ share: the context's layout, error
 * reporting into it, and checks on caller-supplied DLPack tensors.
 * Nothing outside src/api/ includes this. */
#ifndef TSL_API_H
#define TSL_API_H

#include <pthread.h>

#include "base/base.h"
#include "lang/lang.h"
#include "sched/options.h"

/* A context holds each thread's last error (context.c). Programs compiled
 * with it keep a borrowed pointer to it (args and run errors land there),
 * so a context must outlive its programs. */
struct api_thread_diag;
struct tsl_context {
    pthread_mutex_t mu;               /* guards threads */
    uint64_t serial;                  /* unique per context made */
    struct api_thread_diag *threads;  /* one diag per thread that used it */
    tsl_diag oom_diag;                /* when a thread's entry cannot be made */
};

/* The calling thread's error of ctx: every message of a call lands here. */
tsl_diag *api_diag(tsl_context *ctx);

/* A compiled def. Everything it points at lives in its arena, including
 * a copy of the source text and file name (diagnostics quote them). */
struct tsl_program {
    tsl_context *ctx;  /* borrowed: errors of args and runs land here */
    tsl_arena *arena;
    tsl_source src;    /* copies of the caller's source and file name */
    const lang_module *mod;
    const lang_def *def;
    sched_options opt; /* the strategies' choices (tsl_program_set_options) */
    char *opt_text;    /* their canonical text, in the arena ("" for the defaults) */
    int opt_explicit;  /* set by the caller: no tuned options are looked up */
    tsl_run_stats last; /* of the last tsl_program_run (tsl_program_run_stats) */
    struct tsl_prepared_at { /* per compiled target: the prepared plan its last run found (compiled.c) */
        int slot;
        uint64_t serial; /* the slot's filling then; 0: none yet */
    } prepared_at[2];    /* (each under its target's lock) */
    struct {            /* the last tuned-options lookup (compiled.c; under its lock) */
        int target;
        void *dev;
        uint64_t gen;
        int64_t *shapes; /* the tensor parameters' dims, in order */
        int nshapes;
        char *options;   /* what it found, "" for none; NULL: no lookup yet */
    } tuned;
};

/* Replace the context's error with "error: <msg>" and return st. */
tsl_status api_error(tsl_context *ctx, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);

/* TSL_OK for a target tsl_program_run knows, else TSL_ERR_ARG in ctx from
 * fn (NULL: no prefix): TSL_TARGET_INVALID (tsl_target_default's answer to a bad
 * TESSEL_TARGET) names the variable and its accepted values. */
tsl_status api_target_check(tsl_context *ctx, tsl_target t, const char *fn);
/* The compiled target t (cpu, cuda) after api_target_check; NULL, the
 * error in ctx from fn, for an unknown target or the interpreter. */
struct drv_target;
const struct drv_target *api_compiled_target(tsl_context *ctx, tsl_target t, const char *fn);

/* Number of elements of a shape (1 for rank 0); -1 when a dim is negative
 * or the product overflows int64. */
int64_t api_shape_numel(int rank, const int64_t *shape);

/* Check a caller's tensor descriptor: non-NULL, host memory (kDLCPU,
 * kDLCUDAHost), rank within TSL_MAX_RANK, dims >= 0, a dtype tessel knows,
 * data present when it has elements, strides that keep every element
 * inside the address space. `what` names
 * it in messages ("tensor 'A'"). On success the dtype goes to *dtype. */
tsl_status api_tensor_check(tsl_context *ctx, const DLTensor *t, const char *what,
                            tsl_dtype *dtype);
/* The same, also accepting CUDA tensors (kDLCUDA), which must then be
 * C-contiguous (a dim of extent 1 may have any stride). With ctx NULL only
 * the status (no message; `what` is not read). */
tsl_status api_tensor_check_device(tsl_context *ctx, const DLTensor *t, const char *what, tsl_dtype *dtype);
/* An output's strides give every element its own memory (no stride 0 on a
 * dim of 2 or more, no dims interleaving onto one location). Requires a
 * tensor api_tensor_check accepted. */
tsl_status api_tensor_check_distinct(tsl_context *ctx, const DLTensor *t, const char *what);

/* Element strides of t (C order when t->strides is NULL). */
void api_tensor_strides(const DLTensor *t, int64_t strides[TSL_MAX_RANK]);

/* The compiled targets (compiled.c). emit: a compile stage ("tile",
 * "expand", "select", "source", "plan", each maybe with ":cpu" or ":cuda")
 * or "c" / "cuda" (generated source), appended to out, errors in p's
 * context. run: TSL_TARGET_CPU or
 * TSL_TARGET_CUDA on bound sizes b and the interpreter's views of every
 * def tensor (scalars carry their value), outputs written in place;
 * errors go to d. */
struct interp_tensor;
tsl_status api_compiled_emit(tsl_program *p, const char *what, strbuf *out);
/* The interpreter's views of a's tensors (shapes inferred, outputs
 * allocated, overlaps refused); malloc'd. Then the views the compiled
 * targets take (low-bit tensors as C-order carriers in *owned), and back
 * (packing outputs when `pack`; frees cv and owned). */
tsl_status api_args_views(tsl_program *p, tsl_args *a, struct interp_tensor **out);
tsl_status api_args_carry(tsl_program *p, const struct interp_tensor *views, struct interp_tensor **cv, char ***owned);
void api_args_uncarry(tsl_program *p, const struct interp_tensor *views, struct interp_tensor *cv, char **owned,
                      int pack);
/* api_args_views then api_args_carry; on an error nothing is left to free. */
tsl_status api_args_open(tsl_program *p, tsl_args *a, struct interp_tensor **views, struct interp_tensor **cv,
                         char ***owned);
const lang_bound *api_args_bound(const tsl_args *a);
void api_args_set_used(tsl_args *a, const char *options, int tuned);
/* The options a run of p at b's shapes on t uses: p's own when set, else
 * its tuning record's (returns 1), else the defaults; their text to text. */
struct drv_target;
struct sched_options;
int api_run_options(tsl_program *p, const struct drv_target *t, void *dev, const lang_bound *b,
                    sched_options *opt, strbuf *text);
/* p's executable for t under options opt: the cache's (kind "exe"), or
 * compiled and stored; prepared on dev. */
struct drv_prepared;
tsl_status api_prepare_cached(tsl_program *p, const struct drv_target *t, void *dev, const sched_options *opt,
                              const char *opt_text, struct drv_prepared **out, tsl_diag *d);
/* Forget the tuned options looked up so far (after a tuning session). */
void api_compiled_forget_tuned(void);
/* Free p's remembered tuned-options lookup (tsl_program_free). */
void api_program_forget_tuned(tsl_program *p);
/* Drop every prepared plan of this process (tests: the next run takes the
 * executable from the cache, as a new process would). */
void api_compiled_forget(void);
/* >= 0 when `what` is a kind api_compiled_emit knows. */
int api_compiled_emit_kind(const char *what);
tsl_status api_compiled_run(tsl_program *p, tsl_target target, tsl_args *a, const struct interp_tensor *views,
                            tsl_diag *d);
/* TSL_TARGET_CUDA on tensors already on GPU device_id: views hold device
 * addresses of dense C-order tensors; everything is queued on `stream`
 * (a CUstream of the device's primary context; NULL the legacy default
 * stream); temporaries and scratch come per run from `al` (NULL:
 * cuMemAllocAsync on the stream); with `sync` the run waits for the stream
 * and reports an index out of range (TSL_ERR_BOUNDS), else it returns once
 * queued. */
tsl_status api_compiled_run_device(tsl_program *p, const lang_bound *b, const struct interp_tensor *views,
                                   int device_id, void *stream, const tsl_allocator *al, int sync, tsl_diag *d);
/* Device memory on GPU device_id for an output the args own (cuMemAlloc),
 * and its release. */
tsl_status api_cuda_alloc(int device_id, size_t bytes, void **out, tsl_diag *d);
void api_cuda_free(void *p);

#endif
