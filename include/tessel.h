/* tessel.h — the public C API of tessel, a tensor compiler.
 *
 * A program is Tensor Comprehensions source (see docs/language.md). One
 * `def` of it is compiled into a tsl_program; its arguments are bound by
 * name into a tsl_args (tensors as DLPack DLTensor descriptors, scalars as
 * doubles); output shapes are inferred from the bound inputs; the program
 * runs on a target (the reference interpreter, the CPU, or CUDA).
 *
 * Ownership, stated on every function:
 *   TSL_GIVE  the caller receives ownership and must free it;
 *   TSL_TAKE  the callee takes ownership of the argument;
 *   TSL_KEEP  the callee only borrows the argument for the call (or, where
 *             stated, for the lifetime of the receiving object).
 *
 * Errors: every fallible function returns a tsl_status. The full message
 * (for user errors `file:line:col: error: ...`, the source line and a caret)
 * is kept on the context and read with tsl_context_error(). The library
 * never exits or aborts on user input.
 *
 * Threads: a context, the programs compiled with it and their compiled
 * kernels may be used from several threads at once, each run with its own
 * tsl_args (one tsl_args is one thread's at a time). Errors are kept per
 * calling thread: tsl_context_error() returns the calling thread's last
 * error.
 */
#ifndef TESSEL_H
#define TESSEL_H

#include <stddef.h>
#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSL_GIVE
#define TSL_TAKE
#define TSL_KEEP

typedef enum tsl_status {
    TSL_OK = 0,
    TSL_ERR_SYNTAX,      /* the source does not parse */
    TSL_ERR_SEMANTIC,    /* the source parses but is not a valid program */
    TSL_ERR_RANGE,       /* range inference failed or a range is empty */
    TSL_ERR_SHAPE,       /* bound tensors disagree with the program or each other */
    TSL_ERR_BOUNDS,      /* an indirect index was out of range at run time */
    TSL_ERR_ARG,         /* bad API use: unknown name, missing argument, NULL */
    TSL_ERR_IO,          /* a file could not be read or written */
    TSL_ERR_UNAVAILABLE, /* target, device, compiler or library not available */
    TSL_ERR_COMPILE,     /* generated code failed to compile */
    TSL_ERR_RUNTIME,     /* a launch or a device call failed */
    TSL_ERR_NOMEM,       /* an allocation failed (the message names the bytes) */
    TSL_ERR_INTERNAL     /* a bug in tessel: please report it */
} tsl_status;

/* Element types. The enumerators are stable; tsl_dtype_name() gives the TC
 * spelling (`float32`, `bfloat16`, `uint4`, `float6e3m2`, ...). A low-bit
 * tensor (1..7 bits, and every float<N>e<X>m<Y>) is stored packed with no
 * gaps: element e (its C-order element offset) holds bits [e*bits,
 * (e+1)*bits) of the byte array, bit 0 being the lowest bit of byte 0, so
 * one value may straddle two bytes. */
typedef enum tsl_dtype {
    TSL_DTYPE_F16,
    TSL_DTYPE_BF16,
    TSL_DTYPE_F32,
    TSL_DTYPE_F64,
    TSL_DTYPE_I8,
    TSL_DTYPE_I16,
    TSL_DTYPE_I32,
    TSL_DTYPE_I64,
    TSL_DTYPE_U8,
    TSL_DTYPE_U16,
    TSL_DTYPE_U32,
    TSL_DTYPE_U64,
    TSL_DTYPE_BOOL,
    /* low-bit integers (two's complement), packed with no gaps */
    TSL_DTYPE_U1, TSL_DTYPE_U2, TSL_DTYPE_U3, TSL_DTYPE_U4, TSL_DTYPE_U5, TSL_DTYPE_U6, TSL_DTYPE_U7,
    TSL_DTYPE_I2, TSL_DTYPE_I3, TSL_DTYPE_I4, TSL_DTYPE_I5, TSL_DTYPE_I6, TSL_DTYPE_I7,
    /* low-bit floats float<N>e<X>m<Y> (N = 1 + X + Y, 3 <= N <= 8), packed:
     * docs/lowbit.md has every value of every one */
    TSL_DTYPE_F3E1M1, TSL_DTYPE_F3E2M0,
    TSL_DTYPE_F4E1M2, TSL_DTYPE_F4E2M1, TSL_DTYPE_F4E3M0,
    TSL_DTYPE_F5E1M3, TSL_DTYPE_F5E2M2, TSL_DTYPE_F5E3M1, TSL_DTYPE_F5E4M0,
    TSL_DTYPE_F6E1M4, TSL_DTYPE_F6E2M3, TSL_DTYPE_F6E3M2, TSL_DTYPE_F6E4M1, TSL_DTYPE_F6E5M0,
    TSL_DTYPE_F7E1M5, TSL_DTYPE_F7E2M4, TSL_DTYPE_F7E3M3, TSL_DTYPE_F7E4M2, TSL_DTYPE_F7E5M1, TSL_DTYPE_F7E6M0,
    TSL_DTYPE_F8E1M6, TSL_DTYPE_F8E2M5, TSL_DTYPE_F8E3M4, TSL_DTYPE_F8E4M3, TSL_DTYPE_F8E5M2, TSL_DTYPE_F8E6M1, TSL_DTYPE_F8E7M0,
    TSL_DTYPE_COUNT
} tsl_dtype;

typedef enum tsl_target {
    TSL_TARGET_INVALID = -1, /* tsl_target_default's answer to a bad $TESSEL_TARGET */
    TSL_TARGET_INTERP, /* the reference interpreter (float64 accumulation) */
    TSL_TARGET_CPU,    /* generated C, compiled by the system C compiler */
    TSL_TARGET_CUDA    /* generated CUDA C, compiled by NVRTC */
} tsl_target;

#define TSL_MAX_RANK 8

typedef struct tsl_context tsl_context;
typedef struct tsl_program tsl_program;
typedef struct tsl_args tsl_args;

/* ---- dtypes ------------------------------------------------------------ */

const char *tsl_dtype_name(tsl_dtype t);          /* "float32"; static */
int tsl_dtype_bits(tsl_dtype t);                   /* bits per element: 1..64 */
/* Bytes per element; 0 for the packed types whose width is not a whole
 * number of bytes (use tsl_dtype_nbytes). */
size_t tsl_dtype_size(tsl_dtype t);
/* Bytes that n elements take: ceil(n * bits / 8) (packed for low-bit types). */
size_t tsl_dtype_nbytes(tsl_dtype t, int64_t n);
/* Pack n logical values into low-bit storage `out` (tsl_dtype_nbytes(t, n)
 * bytes; bits of the last byte past the end are zeroed), or unpack them.
 * Floats convert as a cast does (rounded to float32, then to nearest even,
 * saturating at the largest finite value; docs/lowbit.md). Integers must
 * be integral and in range: otherwise TSL_ERR_ARG and *first_bad (if not
 * NULL) is the index of the first bad value. Any dtype is accepted (a
 * byte-sized one is stored as dtype_store does). */
tsl_status tsl_pack(tsl_dtype t, TSL_KEEP const double *values, int64_t n, TSL_KEEP void *out,
                    int64_t *first_bad);
tsl_status tsl_unpack(tsl_dtype t, TSL_KEEP const void *packed, int64_t n, TSL_KEEP double *out);
/* DLPack <-> tessel; return 0 on success, -1 if there is no equivalent. */
int tsl_dtype_from_dlpack(DLDataType d, tsl_dtype *out);
DLDataType tsl_dtype_to_dlpack(tsl_dtype t);
const char *tsl_status_name(tsl_status s);         /* "TSL_ERR_SHAPE"; static */

/* ---- this build ---------------------------------------------------------- */

#define TSL_VERSION_STRING "0.10.0"
const char *tsl_version(void); /* TSL_VERSION_STRING of the library linked; static */
/* What this build is and what it finds here, one item a line: the version
 * and commit, the CPU target's C compiler, NVRTC's version, the CUDA
 * driver and its first device (or why each was not found). Malloc'd; the
 * caller frees. */
char *tsl_build_info(void);

/* ---- context ----------------------------------------------------------- */

TSL_GIVE tsl_context *tsl_context_create(void);    /* NULL only if out of memory */
void tsl_context_free(TSL_TAKE tsl_context *ctx);  /* NULL is allowed */
/* The calling thread's last error's full message ("" when none). Valid
 * until that thread's next call that takes this context. */
const char *tsl_context_error(TSL_KEEP const tsl_context *ctx);
void tsl_context_clear_error(TSL_KEEP tsl_context *ctx);

/* ---- checking and compiling -------------------------------------------- */

/* Check every def of a source; diagnostics go to the context's error.
 * `filename` is used in messages only (NULL means "<input>"). */
tsl_status tsl_check(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *source,
                     TSL_KEEP const char *filename);

/* Compile one def. entry NULL means the only def (an error if several).
 * The program keeps no pointer to source, filename or entry. */
tsl_status tsl_program_compile(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *source,
                               TSL_KEEP const char *filename, TSL_KEEP const char *entry,
                               TSL_GIVE tsl_program **out);
/* Same, reading the source from a file. */
tsl_status tsl_program_compile_file(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *path,
                                    TSL_KEEP const char *entry, TSL_GIVE tsl_program **out);
void tsl_program_free(TSL_TAKE tsl_program *p);    /* NULL is allowed */

/* Print a view of the program into a malloc'd string the caller frees.
 * `what`: "ast" (the checked program), "ranges" (every inferred range),
 * "graph" (the op graph and its kernel groups), a stage of the compile
 * driver — "tile" (the scheduled tile IR and launch plan), "expand"
 * (pipelines expanded), "select" (after instruction selection), "source"
 * (generated code), "plan" (the launch plan the executor runs) —, "c"
 * (the generated C of the CPU plan), "cuda" (the generated CUDA C of the
 * CUDA plan) or "ptx" (that CUDA C compiled by NVRTC, which needs no GPU).
 * A stage takes a target after a colon, ":cpu" (the default) or ":cuda",
 * and the CUDA kinds an arch after a colon, "tile:cuda:sm_90a",
 * "cuda:sm_90a", "ptx:sm_80" (default sm_80): sm_90a plans use TMA, wgmma
 * and warp specialisation. "c", "cuda" and "ptx" print each kernel once
 * and take "@KERNEL" last to print that kernel only ("c@softmax_g0_rowred";
 * an unknown name is an error listing the plan's kernels). */
tsl_status tsl_program_emit(TSL_KEEP tsl_program *p, TSL_KEEP const char *what,
                            TSL_GIVE char **out);

/* Options: the strategies' choices, the space the tuner searches. Text of
 * "key=value" pairs joined by ',' (e.g. "contract.cpu.bm=64,cpu.threads=1");
 * tsl_options_space() lists every key, its default and its values. A
 * program compiles, emits and runs with its options; "" restores the
 * built-in plans (and, as any set value, turns off the tuned options a
 * run would otherwise look up); NULL goes back to looking them up. A bad key or value is TSL_ERR_ARG naming it; a
 * combination a target cannot build (say a block that is not a whole
 * number of thread tiles) is TSL_ERR_ARG from the run, saying why. */
tsl_status tsl_program_set_options(TSL_KEEP tsl_program *p, TSL_KEEP const char *options);
/* tf32 tensor cores for f32 contractions (default 0: f32 programs stay
 * exact float32). 1 lets the CUDA target compute an f32 contraction with
 * tf32 tensor-core mma (mma.sync m16n8k8 .tf32): A and B are rounded to
 * 10 fraction bits (cvt.rna.tf32.f32, to nearest, ties away from zero)
 * before each product, accumulation stays f32; expect a relative error
 * near 2^-11 per product. The CPU target is unaffected. Not touched by
 * tsl_program_set_options unless its text names allow_tf32=0|1; part of
 * the options text (a trailing "allow_tf32=1") and so of the cache key.
 * The CLI's --allow-tf32, Python's compile(..., allow_tf32=True). */
tsl_status tsl_program_set_allow_tf32(TSL_KEEP tsl_program *p, int allow);
int tsl_program_allow_tf32(TSL_KEEP const tsl_program *p);
/* The options in effect as canonical text: only what differs from the
 * defaults, in the space's order ("" for the defaults). Owned by p. */
const char *tsl_program_options(TSL_KEEP const tsl_program *p);
/* The options the last compiled run of a used ("" the defaults); *tuned
 * (may be NULL) says whether they came from a tuning record: a program
 * whose options were never set runs with the options `tessel tune` /
 * tsl_program_tune found for its shapes on that target, when there are. */
const char *tsl_args_options_used(TSL_KEEP const tsl_args *a, int *tuned);
/* One line per option: key, target, default, values, meaning (malloc'd). */
TSL_GIVE char *tsl_options_space(void);

/* Introspection. Parameters are in declaration order; outputs in `-> (...)`
 * order. A tensor that is both a parameter and an output is in/out. */
typedef struct tsl_param_info {
    const char *name;  /* owned by the program */
    int is_scalar;     /* 1 for `float alpha` */
    int is_output;     /* 1 when also listed as an output (in/out) */
    tsl_dtype dtype;
    int rank;          /* 0 for scalars and r() */
} tsl_param_info;

const char *tsl_program_name(TSL_KEEP const tsl_program *p);
int tsl_program_param_count(TSL_KEEP const tsl_program *p);
tsl_status tsl_program_param(TSL_KEEP const tsl_program *p, int i, tsl_param_info *out);
int tsl_program_output_count(TSL_KEEP const tsl_program *p);
const char *tsl_program_output_name(TSL_KEEP const tsl_program *p, int i);
/* The symbolic size names of a tensor parameter's dims (e.g. "M", "K"), for
 * generating random inputs from --size; NULL entries for constant dims,
 * whose extents tsl_program_param_extents gives. */
tsl_status tsl_program_param_dims(TSL_KEEP const tsl_program *p, int i,
                                  const char *names[TSL_MAX_RANK]);
/* A tensor parameter's constant extents (`float(F,C,3,3)`: -1, -1, 3, 3):
 * -1 for the dims a size symbol names. */
tsl_status tsl_program_param_extents(TSL_KEEP const tsl_program *p, int i, int64_t ext[TSL_MAX_RANK]);
/* The def's size symbols: those of its parameters' dims and those only its
 * `where` bounds use (`where c in 0:C`), which no input fixes: bind them
 * with tsl_args_set_size. */
int tsl_program_size_count(TSL_KEEP const tsl_program *p);
const char *tsl_program_size_name(TSL_KEEP const tsl_program *p, int i); /* NULL past the end */
/* Tensor parameter i's reads as a gather index of a tensor parameter X,
 * `X(.., T(..) + c, ..)`: for the n-th such read (from 0) 1 with X's
 * parameter index, the dim and c; 0 past the last. `tessel run` draws
 * random values for such a T that keep every one of them in range. */
int tsl_program_param_gathers(TSL_KEEP const tsl_program *p, int i, int n, int *param, int *dim,
                              int64_t *offset);

/* ---- arguments and running --------------------------------------------- */

TSL_GIVE tsl_args *tsl_args_create(TSL_KEEP tsl_program *p); /* keeps p for its life */
void tsl_args_free(TSL_TAKE tsl_args *a);

/* Bind a tensor input (or in/out tensor) by parameter name. The descriptor
 * and its data are borrowed until the args are freed; strides NULL means
 * C order; byte_offset is honoured. Host tensors for every target, CUDA
 * tensors for TSL_TARGET_CUDA (see "devices" below). */
tsl_status tsl_args_set_tensor(TSL_KEEP tsl_args *a, TSL_KEEP const char *name,
                               TSL_KEEP const DLTensor *t);
tsl_status tsl_args_set_scalar(TSL_KEEP tsl_args *a, TSL_KEEP const char *name, double v);
/* A DLTensor carries no buffer size, so tessel cannot know that its shape,
 * strides and byte_offset stay inside the memory behind `data` (a stride
 * past it reads or writes someone else's memory). A caller that knows the
 * allocation vouches for it here: TSL_OK when every element the tensor
 * addresses (all of its bytes) lies in [buffer, buffer + bytes); else
 * TSL_ERR_ARG saying whether elements fall before the buffer or past its
 * end, by how many bytes, which element and which dims take it there.
 * Negative and zero strides are fine; a tensor with a dim of size 0
 * addresses nothing and always passes; arithmetic that would overflow is
 * an error. ctx may be NULL (no message is kept). */
tsl_status tsl_tensor_check_buffer(TSL_KEEP tsl_context *ctx, TSL_KEEP const DLTensor *t,
                                   TSL_KEEP const void *buffer, size_t bytes);
/* Bind every parameter and output at once, by position (what language
 * bindings call): for parameter i in declaration order (0 <= i <
 * tsl_program_param_count), tensors[i] for a tensor parameter (as
 * tsl_args_set_tensor) or scalars[i] for a scalar one (tensors[i] is then
 * ignored; scalars may be NULL when there is none); then for output j in
 * `-> (...)` order, tensors[nparams + j]: caller storage (as
 * tsl_args_set_output, its shape checked when the program runs) or NULL to
 * have the args allocate it; the entry of an in/out output must be NULL or
 * its parameter's tensor. Replaces earlier bindings of every parameter and
 * output (size symbols set by name stay). */
tsl_status tsl_args_bind(TSL_KEEP tsl_args *a, TSL_KEEP const DLTensor *const *tensors,
                         TSL_KEEP const double *scalars);
/* Bind a size symbol's value: one that only `where` bounds use must be
 * bound so; one an input's shape also fixes must agree with it (checked
 * by tsl_args_infer, naming both). tsl_args_set_scalar with a size's name
 * does the same. */
tsl_status tsl_args_set_size(TSL_KEEP tsl_args *a, TSL_KEEP const char *name, int64_t value);

/* Infer every output's shape and dtype from the bound inputs; checks that
 * size symbols agree (an error names both tensors and dims). */
tsl_status tsl_args_infer(TSL_KEEP tsl_args *a);
/* After tsl_args_infer: the output's inferred shape. */
tsl_status tsl_args_output_shape(TSL_KEEP tsl_args *a, TSL_KEEP const char *name,
                                 int *rank, int64_t shape[TSL_MAX_RANK], tsl_dtype *dtype);
/* After tsl_args_infer: the most values one statement combines into one
 * element (the product of its reduction ranges) over the statements that
 * compute output `name`, directly or through what they read: 1 when none
 * reduces; -1 on error. Rounding errors grow with it (the CLI's --check
 * scales its tolerance by it). */
int64_t tsl_args_reduction_length(TSL_KEEP tsl_args *a, TSL_KEEP const char *name);
/* After tsl_args_infer: the tolerance output `name` of a compiled target is
 * checked against the interpreter's with (`--check`, the tuner, the
 * differential tester): max|got - ref| / max(1, max|ref|) must not pass
 * it. It is that of the narrowest float the output is computed through
 * (its dtype, the temporaries, float arithmetic and casts behind it:
 * float64 1e-12, float32 1e-5, float16 and bfloat16 1e-2), grown by
 * sqrt(len / 256) past 256 terms of tsl_args_reduction_length; 0 for an
 * output computed in integers only (exact); -1 on error. */
double tsl_args_tolerance(TSL_KEEP tsl_args *a, TSL_KEEP const char *name);
/* Bind caller storage for an output (checked against the inferred shape).
 * Outputs not bound are allocated by the args and read with
 * tsl_args_output(). */
tsl_status tsl_args_set_output(TSL_KEEP tsl_args *a, TSL_KEEP const char *name,
                               TSL_KEEP const DLTensor *t);
/* The output's tensor (bound by the caller or owned by the args, on the
 * run's device); valid until the args are freed. NULL if no such output or
 * not yet run. */
const DLTensor *tsl_args_output(TSL_KEEP tsl_args *a, TSL_KEEP const char *name);

/* ---- devices, streams and allocation ------------------------------------
 *
 * The tensors of a run are all on one device: the host (kDLCPU,
 * kDLCUDAHost) or one CUDA GPU (kDLCUDA). Tensors on a GPU run on
 * TSL_TARGET_CUDA where they are: never copied, never moved. They must be
 * C-contiguous (a dim of extent 1 may have any stride; byte_offset is
 * honoured): a strided device tensor is TSL_ERR_ARG, not copied. The run is
 * queued on the args' stream and returns without waiting for it. Outputs
 * the caller does not bind are allocated on the tensors' device. Errors
 * (TSL_ERR_ARG, naming the tensors): host and GPU tensors in one run, two
 * GPUs, a GPU other than tessel's ($TESSEL_CUDA_DEVICE, default 0), GPU
 * tensors with the interp or cpu target, a stream of another CUDA context.
 * Host tensors with TSL_TARGET_CUDA are copied to the GPU and back, as
 * before. */

/* Memory for outputs the args allocate (host or GPU, on `device`) and for
 * the temporaries of a GPU run: alloc returns `bytes` usable in order on
 * `stream` (the args' CUstream; NULL on the host), or NULL on failure; free
 * gives it back in stream order. PyTorch's caching allocator fits
 * (c10::cuda::CUDACachingAllocator::raw_alloc_with_stream / raw_delete). */
typedef struct tsl_allocator {
    void *(*alloc)(void *user, DLDevice device, size_t bytes, void *stream);
    void (*free)(void *user, DLDevice device, void *data, void *stream);
    void *user;
} tsl_allocator;

/* The CUDA stream (a CUstream of the device's primary context, as PyTorch's
 * streams are) that GPU runs are queued on; NULL (the default) is the
 * legacy default stream. */
tsl_status tsl_args_set_stream(TSL_KEEP tsl_args *a, void *stream);
/* The allocator for outputs and GPU temporaries (copied; the functions and
 * `user` must outlive the args). NULL: tessel's own (host: aligned_alloc,
 * zeroed; GPU outputs: cuMemAlloc; GPU temporaries: cuMemAllocAsync on the
 * stream, so a run can be captured in a CUDA graph). */
tsl_status tsl_args_set_allocator(TSL_KEEP tsl_args *a, TSL_KEEP const tsl_allocator *al);
/* GPU runs: 1 waits for the stream after the run and reports an indirect
 * index out of range (TSL_ERR_BOUNDS naming kernel, tensor, dim, index);
 * 0 (the default) returns once the run is queued, and an index out of
 * range then reads 0 unreported. Host runs always check. */
tsl_status tsl_args_set_sync(TSL_KEEP tsl_args *a, int sync);

/* The target used when none is named: $TESSEL_TARGET (interp|cpu|cuda) if
 * set, else CUDA when a device can be opened, else the CPU. A
 * $TESSEL_TARGET that names no target gives TSL_TARGET_INVALID, which
 * tsl_program_run, _bench and _tune refuse (TSL_ERR_ARG naming the
 * variable and its values); tsl_target_choose says so at once. */
tsl_target tsl_target_default(void);
tsl_status tsl_target_choose(TSL_KEEP tsl_context *ctx, tsl_target *out);
const char *tsl_target_name(tsl_target t);                 /* "cpu"; static */
int tsl_target_parse(TSL_KEEP const char *name, tsl_target *out); /* 0 if known */

/* Run on a target (infers shapes first if needed). Outputs are computed
 * out of place: an output whose memory overlaps a parameter's or another
 * output's is TSL_ERR_ARG (a tensor both read and written is declared as a
 * parameter and an output, and bound once with tsl_args_set_tensor). */
tsl_status tsl_program_run(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, tsl_target target);
/* tsl_args_bind(a, tensors, scalars) then tsl_program_run(p, a, target):
 * the one call a language binding makes per function call. When every
 * descriptor reads as in the args' last call that ran (device, dtype,
 * shape, strides, byte offset; the data's address aside), on the same
 * target with nothing set on the args since, the checks that call passed
 * are not made again (the overlap check neither when the addresses are the
 * same too): the answer would be the same. */
tsl_status tsl_program_call(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, TSL_KEEP const DLTensor *const *tensors,
                            TSL_KEEP const double *scalars, tsl_target target);

/* ---- language bindings ------------------------------------------------
 *
 * tsl_program_call for a binding whose tensors are described by the
 * framework's own objects, without a foreign call per tensor. Entry i of
 * refs (parameters in declaration order, then outputs, as
 * tsl_args_bind's tensors) is found as kinds[i] says; ref_at is where,
 * inside a referenced object, the pointer to the DLPack structure lies (a
 * Python DLPack capsule: its pointer field, offsetof(PyCapsule, pointer),
 * which the binding checks once against PyCapsule_GetPointer). */
typedef enum tsl_ref_kind {
    TSL_REF_NONE = 0,  /* no tensor: a scalar's entry, an output to allocate, an in/out output */
    TSL_REF_TENSOR,    /* refs[i] is the DLTensor */
    TSL_REF_MANAGED,   /* refs[i] + ref_at holds a DLManagedTensor* ("dltensor" capsules) */
    TSL_REF_VERSIONED, /* refs[i] + ref_at holds a DLManagedTensorVersioned* (DLPack 1.0) */
} tsl_ref_kind;
tsl_status tsl_program_call_refs(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, TSL_KEEP const void *const *refs,
                                 TSL_KEEP const uint8_t *kinds, size_t ref_at, TSL_KEEP const double *scalars,
                                 tsl_target target);

/* Describe n framework tensors at once through the framework's DLPack
 * exchange API (DLPack 1.2's DLPackExchangeAPI, e.g. what PyTorch's
 * `torch.Tensor.__dlpack_c_exchange_api__` capsule holds): out[i] from
 * objects[i] by its dltensor_from_py_object_no_sync, which borrows the
 * object's own shape and strides (valid while the object lives and is
 * not resized). The caller holds what the framework needs held (Python's
 * GIL). *device gets the first tensor's device. Returns 0 when all are
 * filled, on one device, and device tensors are C-contiguous (what
 * tsl_program_call takes in place); TSL_DLPACK_OTHER_WAY when all are
 * filled but not so (mixed devices, a strided device tensor: the binding
 * describes them its other way, to copy or report them); -1 - i when the
 * framework refused object i (its error is set: a Python exception);
 * TSL_DLPACK_UNUSABLE when the API is not a DLPack 1.x exchange API with
 * that function. */
enum { TSL_DLPACK_OTHER_WAY = 1, TSL_DLPACK_UNUSABLE = 2, TSL_DLPACK_SETUP = 3, TSL_DLPACK_NO_STREAM = 4 };
int tsl_dlpack_fill(TSL_KEEP const void *exchange_api, void *const *objects, int n, DLTensor *out,
                    DLDevice *device);

/* A binding's call through an exchange API, described once (per program,
 * args and thread) and passed to tsl_program_call_dlpack at every call;
 * every pointer is borrowed, read at each call. */
typedef struct tsl_dlpack_call {
    const void *exchange_api;       /* the framework's DLPackExchangeAPI (DLPack >= 1.2) */
    void *const *objects;           /* the call's n framework tensors: parameters', then outputs' */
    int n;
    DLTensor *filled;               /* n descriptors: objects[k] is filled into filled[k] */
    const DLTensor *const *tensors; /* tsl_program_call's tensors: entries into filled, or NULL */
    const double *scalars;          /* tsl_program_call's scalars (NULL when there is none) */
    tsl_target host_target;         /* the target of a run on host tensors */
    tsl_target device_target;       /* ... and of one on CUDA tensors (TSL_TARGET_CUDA, or a refusal) */
    DLDevice ready;                 /* the GPU the binding set the args up for (allocator); {0, 0}: none */
    void *(*unlock)(void);          /* optional: let go of what the framework needs held, for the run, */
    void (*relock)(void *);         /* and take it back (Python: PyEval_SaveThread, PyEval_RestoreThread) */
    DLDevice device;                /* out: the tensors' device */
    int fill;                       /* out: 0, or why nothing ran (tsl_dlpack_fill's answers, TSL_DLPACK_*) */
} tsl_dlpack_call;

/* tsl_dlpack_fill(c->exchange_api, c->objects, c->n, c->filled, &c->device)
 * then tsl_program_call(p, a, c->tensors, c->scalars, target): a binding's
 * whole call in one foreign call, entered holding what the framework needs
 * held (Python's GIL), which c->unlock lets go of for the run only. Nothing
 * about a tensor is kept from one call to the next. Host tensors run on
 * c->host_target. CUDA tensors run on c->device_target, on the stream the
 * API's current_work_stream gives for their device (the default stream
 * when the API has no current_work_stream) and with `sync`, both
 * set on the args (as tsl_args_set_stream, tsl_args_set_sync); the args'
 * allocator is what the binding set when it made c->ready that GPU. Returns
 * the run's status; when nothing ran, TSL_ERR_ARG with c->fill saying why:
 * tsl_dlpack_fill's answer (-1 - i: the framework refused object i, its
 * error set; TSL_DLPACK_OTHER_WAY, TSL_DLPACK_UNUSABLE), TSL_DLPACK_SETUP
 * (CUDA tensors on a GPU other than c->ready: set the args up for
 * c->device, make c->ready that, call again) or TSL_DLPACK_NO_STREAM (the
 * framework gave no current stream, its error set). */
tsl_status tsl_program_call_dlpack(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, TSL_KEEP tsl_dlpack_call *c,
                                   int sync);

/* ---- layouts ----------------------------------------------------------- */

/* Evaluate a layout expression (docs/layout.md: `(4,2):(1,8)`,
 * `local(2,1).spatial(8,4)`, `compose(A,B)`, ...) and print it as `tessel
 * layout` does: a header line and the mapping as a grid (json 0), or one
 * JSON object (json 1), into a malloc'd string the caller frees. A bad
 * expression is TSL_ERR_SYNTAX (or the algebra's status) with
 * `<layout>:1:COL: error: ...`, the expression and a caret. */
tsl_status tsl_layout_table(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *expr, int json,
                            TSL_GIVE char **out);

/* ---- benchmarking and tuning ---------------------------------------------- */

/* tsl_program_bench: compile once, keep the tensors resident on the
 * target's device, check the output against the interpreter first (at
 * these sizes when the interpreter can answer in seconds, else at sizes
 * cut to 67), warm up, then time whole runs with the device's events (the
 * monotonic clock on the CPU) over many repetitions, input sets rotated
 * past the last-level cache. Zero in a field means its default. */
typedef struct tsl_bench_config {
    double budget_s; /* timed runs take about this long (default 2) */
    int min_reps;    /* at least (default 5) */
    int max_reps;    /* at most (default 10000) */
} tsl_bench_config;

typedef struct tsl_bench_result {
    double median_ms, p10_ms, p90_ms, min_ms; /* one run: every launch of the plan */
    int reps, sets;                           /* timed runs; input sets rotated */
    double flops, bytes;                      /* one run's work from the op graph; bytes of its tensors */
    double cold_compile_ms;                   /* schedule, generate, compile and load with no cache */
    double cached_prepare_ms;                 /* the same with the cache: what a new process pays */
    double call_ms;                           /* a tsl_program_run of these arguments, end to end (median) */
    double check_error;                       /* worst output error / its tolerance (<= 1: right) */
    int check_reduced;                        /* 1: checked at reduced sizes */
    char options[512];                        /* the options the plan used */
    int tuned;                                /* ... from a tuning record */
} tsl_bench_result;

/* a's tensors give the sizes and the inputs; outputs are left unchanged
 * except by the call_ms runs. A wrong output is TSL_ERR_RUNTIME saying
 * which tensor and by how much, before anything is timed. */
tsl_status tsl_program_bench(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, tsl_target target,
                             const tsl_bench_config *cfg, tsl_bench_result *out);

/* tsl_program_bench_compare: two option sets of p timed against each
 * other at a's sizes on target. Both are compiled once (from the cache
 * when it has them) and checked against the interpreter (as
 * tsl_program_bench checks) before anything is timed; then `rounds`
 * rounds alternate them on the same resident inputs, rotated past the
 * last-level cache (A then B, then B then A, ...). Two benches of the
 * same kernels one after the other differ by a few percent (2.5% on an
 * H200, 10% on a shared CPU); paired rounds cancel a drift of the
 * machine's speed. An option set is options text (tsl_program_set_options'
 * keys), "default" (or "" or NULL) the built-in plans, or "tuned" the
 * options `tessel tune` recorded for these shapes (TSL_ERR_ARG when there
 * is no record); the program's tf32 setting holds on both unless a text
 * names allow_tf32. Zero in a config field means its default. */
typedef struct tsl_bench_compare_config {
    double budget_s; /* each side's timed runs take about this long in all (default 2) */
    int rounds;      /* alternating rounds (default 10; 1..1000) */
} tsl_bench_compare_config;

typedef struct tsl_bench_side {
    char options[512];                        /* the options it ran with ("" the defaults) */
    int tuned;                                /* ... from a tuning record */
    double median_ms, p10_ms, p90_ms, min_ms; /* over every timed run of this side */
    int reps;
    double check_error;                       /* worst output error / its tolerance (<= 1: right) */
} tsl_bench_side;

typedef struct tsl_bench_compare_result {
    tsl_bench_side a, b;
    int rounds, sets;          /* sets: input sets rotated, shared by both */
    int check_reduced;         /* 1: checked at reduced sizes */
    double ratio;              /* a.median_ms / b.median_ms: above 1 when B is faster */
    double round_median, round_min, round_max; /* of the rounds' ratios (a round's A median / its B median) */
    double lo, hi, coverage;   /* the rounds' median ratio lies in [lo, hi] with probability >= coverage
                                * (order statistics: 97.9% for 10 rounds; < 95% under 6 rounds) */
    int verdict;               /* 1: B is faster (lo > 1); -1: A is (hi < 1); 0: neither beyond the noise */
} tsl_bench_compare_result;

tsl_status tsl_program_bench_compare(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, tsl_target target,
                                     TSL_KEEP const char *options_a, TSL_KEEP const char *options_b,
                                     const tsl_bench_compare_config *cfg, tsl_bench_compare_result *out);

/* tsl_program_tune: search the strategies' options (tsl_options_space)
 * for the fastest plan of p at a's shapes on target, after Tensor
 * Comprehensions' autotuner: genetic search (population, three-parent
 * uniform crossover, mutation, elites kept) or random search. Candidates
 * are compiled in parallel by several processes, each checked against
 * the interpreter before it is timed (as tsl_program_bench times), by
 * worker processes: one per GPU (or the CPU). A candidate that fails to
 * compile, is wrong, faults or times out is recorded as failed and the
 * search goes on. The best options are stored in the cache for (program,
 * shapes, arch); a later run of a program whose options were never set
 * uses them (tsl_args_options_used says so). Zero in a field means its
 * default. TSL_ERR_UNAVAILABLE when a worker's device cannot be opened;
 * on CUDA, call it from a process that has not used CUDA yet (workers
 * fork; a CUDA context does not survive a fork). */
typedef struct tsl_tune_config {
    double budget_s;       /* stop starting candidates after this long (default 120) */
    int generations;       /* at most (default 8) */
    int population;        /* candidates per generation (default 16) */
    int random_search;     /* 1: random search instead of the genetic one */
    int workers;           /* timing workers (default: the CPU 1; CUDA one per GPU) */
    const int *devices;    /* CUDA: each worker's device ordinal (NULL: 0, 1, ...) */
    int compilers;         /* compiling processes (default: cores, at most 8) */
    double candidate_ms;   /* timed runs per candidate take about this long (default 200) */
    double timeout_s;      /* a candidate taking longer fails (default 60) */
    unsigned long long seed; /* 0: fresh */
    void (*progress)(void *ctx, const char *line); /* one line per generation */
    void *progress_ctx;
} tsl_tune_config;

typedef struct tsl_tune_result {
    double default_ms, best_ms;  /* median times (0: did not run) */
    char best_options[400];      /* canonical text ("" the defaults) */
    int best_device;             /* the device that timed the best (-1: the CPU) */
    int tried, failed, rejected; /* rejected: refused by the options' validity check */
    int generations, workers;
    int timed_by[16];            /* candidates each worker timed */
    int device_of[16];           /* each worker's device (-1: the CPU) */
    double wall_s;
    int recorded;                /* the tuning record was stored */
} tsl_tune_result;

tsl_status tsl_program_tune(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, tsl_target target,
                            const tsl_tune_config *cfg, tsl_tune_result *out);

/* Where the program's last tsl_program_run on this thread spent its time
 * (milliseconds), and how its kernels were found. A run that prepares
 * nothing (the CUDA target keeps its plans and modules) has only run_ms. */
typedef struct tsl_run_stats {
    double total_ms;   /* the whole call */
    double plan_ms;    /* op graph, schedule and verification of the plan */
    double codegen_ms; /* generating kernel source */
    double compile_ms; /* the C compiler or NVRTC, for kernels no cache had */
    double load_ms;    /* opening compiled kernels */
    double run_ms;     /* running the kernels (CUDA: and the copies) */
    int kernels;       /* kernels of the plan (a kernel two launches share counts once) */
    int compiled;      /* kernels compiled by this run */
    int cached;        /* kernels read from the on-disk kernel cache */
    int loaded;        /* kernels already loaded in this process */
} tsl_run_stats;
tsl_status tsl_program_run_stats(TSL_KEEP const tsl_program *p, tsl_run_stats *out);

/* ---- numpy files (used by the CLI; handy for tests) -------------------- */

/* Read a .npy (v1.0/2.0, C order, little-endian) into a malloc'd DLTensor
 * whose data and shape are owned by it; free with tsl_tensor_free. */
tsl_status tsl_npy_read(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *path,
                        TSL_GIVE DLTensor **out);
/* Written atomically: to a new file beside `path`, renamed over it, so a
 * failed write leaves an existing file unchanged. */
tsl_status tsl_npy_write(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *path,
                         TSL_KEEP const DLTensor *t);
/* A C-order host tensor of the given shape, data zeroed. */
TSL_GIVE DLTensor *tsl_tensor_alloc(tsl_dtype dtype, int rank, const int64_t *shape);
void tsl_tensor_free(TSL_TAKE DLTensor *t);

#ifdef __cplusplus
}
#endif
#endif /* TESSEL_H */
