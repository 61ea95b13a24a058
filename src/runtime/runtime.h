/* runtime.h — the two runtimes under the code generators (DESIGN.md §5):
 *   rt_cpu_*   C source -> system C compiler -> cached .so -> dlopen, and a
 *              persistent thread pool for parallel loops;
 *   rt_cuda_*  CUDA C -> NVRTC -> cached cubin -> driver API (module, launch,
 *              memory, events). libcuda and NVRTC are dlopen'd at first use,
 *              so tessel builds and runs on machines with neither;
 *   rt_cache_* the per-user cache (SQLite) both runtimes keep binaries in.
 * Every fallible call returns a tsl_status and, on failure, appends a
 * message to the caller's tsl_diag (which may be NULL to discard it). */
#ifndef TSL_RUNTIME_H
#define TSL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* ---- settings (settings.c) ------------------------------------------------
 * The runtime reads no environment: what the environment says is one
 * struct, filled in once per process at the API boundary (api/env.c's
 * api_settings_load, the library's one reader of the environment;
 * docs/driver.md "Settings") and read here. A field is the variable's text,
 * NULL when unset or empty (then the built-in default holds); each part
 * checks its own fields where it uses them, with a message naming the
 * variable. The table lists them in one place: */
#define RT_SETTINGS(X)                                                                               \
    X(target, "TESSEL_TARGET", "the target a run uses when none is named: interp, cpu or cuda")       \
    X(num_threads, "TESSEL_NUM_THREADS", "the CPU target's threads (default: one per online CPU)")    \
    X(cc, "TESSEL_CC", "the CPU target's C compiler and its leading arguments (default: cc, gcc, clang)") \
    X(cc_timeout, "TESSEL_CC_TIMEOUT", "seconds one C compiler run may take (default 600)")          \
    X(path, "PATH", "where the C compiler is looked for")                                            \
    X(tmpdir, "TMPDIR", "where the CPU target builds (default /tmp)")                                \
    X(cache_dir, "TESSEL_CACHE_DIR", "the cache folder")                                             \
    X(xdg_cache_home, "XDG_CACHE_HOME", "the cache folder's parent when TESSEL_CACHE_DIR is unset")  \
    X(home, "HOME", "the cache folder's grandparent (~/.cache/tessel) when both are unset")          \
    X(libcuda, "TESSEL_LIBCUDA", "the CUDA driver library (default libcuda.so.1)")                   \
    X(nvrtc, "TESSEL_NVRTC", "the NVRTC library (default: libnvrtc.so[.13|.12] on the usual paths)") \
    X(cuda_device, "TESSEL_CUDA_DEVICE", "the CUDA device runs use (default 0)")

typedef struct rt_settings {
#define X(field, var, meaning) const char *field;
    RT_SETTINGS(X)
#undef X
} rt_settings;

typedef struct rt_setting_var {
    const char *var;     /* "TESSEL_CC" */
    size_t offset;       /* of its field in rt_settings */
    const char *meaning;
} rt_setting_var;
extern const rt_setting_var rt_setting_vars[];
extern const int rt_setting_var_count;

/* The process's settings (never NULL; all NULL until set). */
const rt_settings *rt_settings_get(void);
/* Replace them with a copy of *s (the strings are copied; s may point into
 * the current settings). At start-up and in tests: not while other
 * threads run kernels. */
void rt_settings_set(const rt_settings *s);

/* ---- warnings (cache.c) -------------------------------------------------- */
/* What the runtime reports without failing (a damaged cache entry, a cache
 * it cannot use): "tessel: warning: ..." on stderr unless a handler is set. */
typedef void (*rt_warning_fn)(void *ctx, const char *msg);
void rt_set_warning_handler(rt_warning_fn fn, void *ctx); /* NULL: stderr */
void rt_warn(const char *fmt, ...) TSL_PRINTF(1, 2);
long rt_warning_count(void); /* warnings so far in this process (tests) */

/* ---- the cache (cache.c) --------------------------------------------------- */
/* One SQLite database per user, in $TESSEL_CACHE_DIR, else
 * $XDG_CACHE_HOME/tessel, else $HOME/.cache/tessel, else /tmp/tessel-$UID
 * (created 0700; refused when not the user's own or writable by others).
 * Rows are (kind, key) -> source text, a note, a blob, each with a
 * checksum verified on every read. Errors never fail a caller: a damaged
 * row or database is a miss and a warning, and is rebuilt. */

/* 128-bit content key as 32 hex digits + NUL, from a list of strings and
 * byte ranges hashed in order (each prefixed by its length). */
typedef struct rt_key_part {
    const void *p;
    size_t n;
} rt_key_part;
void rt_cache_key(const rt_key_part *parts, int nparts, char out[33]);

typedef struct rt_cache_entry {
    char *source, *note; /* NULL when the row has none */
    void *data;
    size_t size;
} rt_cache_entry;
/* 1 and *out (malloc'd; rt_cache_entry_free) on a verified hit, else 0. */
int rt_cache_get(const char *kind, const char *key, rt_cache_entry *out);
void rt_cache_entry_free(rt_cache_entry *e);
/* Store (replacing the row of that kind and key); best effort. */
void rt_cache_put(const char *kind, const char *key, const char *name, const char *source, const char *note,
                  const void *data, size_t size);

/* The folder `sub` inside the cache folder (created 0700, checked as the
 * cache folder is); gives a malloc'd path. */
tsl_status rt_cache_dir(const char *sub, char **out, tsl_diag *d);
/* The database's path (static), or NULL with a message. */
const char *rt_cache_path(tsl_diag *d);

/* Every row of `kind` (NULL: all) whose key starts with key_prefix ("" or
 * NULL: all), oldest first; intact says whether its checksum matches. */
typedef struct rt_cache_row {
    const char *kind, *key, *name, *source, *note;
    const void *data;
    size_t size;
    int64_t created; /* seconds since the epoch */
    int intact;
} rt_cache_row;
typedef void (*rt_cache_row_fn)(void *ctx, const rt_cache_row *r);
tsl_status rt_cache_each(const char *kind, const char *key_prefix, rt_cache_row_fn fn, void *ctx, tsl_diag *d);
/* Remove every row (of kind; NULL: all); *removed gets the count. */
tsl_status rt_cache_clear(const char *kind, int *removed, tsl_diag *d);
/* Copy intact rows (of kind; NULL: all) into the SQLite file `file`
 * (created if missing), or from it into the cache (rows the cache has
 * are kept); damaged ones are counted in *skipped. */
tsl_status rt_cache_export(const char *file, const char *kind, int *copied, int *skipped, tsl_diag *d);
tsl_status rt_cache_import(const char *file, const char *kind, int *copied, int *skipped, tsl_diag *d);
/* This thread's lookups miss while on (to measure a cold compile; what it
 * builds is still stored). */
void rt_cache_set_bypass(int on);
/* Close the database (the next use opens it again). */
void rt_cache_reset(void);
/* In a child process after fork: forget the parent's connection (the next
 * use opens its own). */
void rt_cache_after_fork(void);

/* ---- CPU runtime (cpu.c) ---------------------------------------------- */
typedef struct rt_cpu_module rt_cpu_module;

/* Compile C source into a shared object with
 * `-O3 -march=native -fPIC -shared -std=c11`, cached under cpu/<key>.so where
 * the key hashes the source, the compiler's identity and the flags; a cache
 * hit runs no compiler. `name_hint` names the source in messages
 * ("matmul.c"); NULL means "kernel.c". Errors: TSL_ERR_UNAVAILABLE (no
 * compiler; the message lists what was tried and names TESSEL_CC),
 * TSL_ERR_COMPILE (compiler output and the offending source line),
 * TSL_ERR_IO (cache), TSL_ERR_RUNTIME (dlopen). */
tsl_status rt_cpu_compile(const char *source, const char *name_hint, rt_cpu_module **out,
                          tsl_diag *d);
/* rt_cpu_compile in two steps: the shared object's bytes (compiled, or
 * from the cache), then loaded from a file only this process holds (a
 * memfd), after checking that it is a whole ELF object. `name` names it
 * in messages. */
tsl_status rt_cpu_build(const char *source, const char *name_hint, void **so, size_t *size, tsl_diag *d);
tsl_status rt_cpu_load(const void *so, size_t size, const char *name, rt_cpu_module **out, tsl_diag *d);
/* The instruction-set level this machine's kernels are built for
 * (-march=native): "x86_64 avx512 <hash of the CPU's feature flags>". Part
 * of every CPU cache key. Static. */
const char *rt_cpu_isa(void);
/* What CPU binaries depend on, for keys of things built from them: the
 * compiler's command and identity, the flags, the ISA level. Static. */
const char *rt_cpu_toolchain(void);
/* A symbol of a loaded module, or NULL with a dlerror() message in d. */
void *rt_cpu_symbol(rt_cpu_module *m, const char *name, tsl_diag *d);
void rt_cpu_module_free(rt_cpu_module *m); /* NULL allowed */
/* The shared object's path in the cache (kept by the module). */
const char *rt_cpu_module_path(const rt_cpu_module *m);
/* The C compiler the CPU target uses, as "PATH [ARGS] (its --version's
 * first line)" (malloc'd), or TSL_ERR_UNAVAILABLE saying why none. */
tsl_status rt_cpu_compiler(char **out, tsl_diag *d);
/* How many times this process ran the C compiler on a kernel (tests). */
long rt_cpu_compile_count(void);

/* Run fn(ctx, begin, end) over disjoint pieces covering [0, n) exactly once,
 * on the calling thread and the pool's workers; returns when all are done.
 * The pool has $TESSEL_NUM_THREADS threads, else one per online CPU; it is
 * created at first use and reused. Calls from inside fn run serially on the
 * calling thread; calls from several threads at once are serialized. */
typedef void (*rt_cpu_range_fn)(void *ctx, int64_t begin, int64_t end);
void rt_cpu_parallel_for(int64_t n, rt_cpu_range_fn fn, void *ctx);
/* The same on at most max_threads threads, the caller included (<= 0: all
 * of the pool's; 1: the caller alone). */
void rt_cpu_parallel_for_max(int64_t n, rt_cpu_range_fn fn, void *ctx, int max_threads);
int rt_cpu_num_threads(void);
/* Workers woken for jobs since the process started (a job of c chunks
 * wakes min(c, threads) - 1 of them): for tests. */
long rt_cpu_pool_wakeups(void);
/* TSL_OK when $TESSEL_NUM_THREADS is unset or a positive integer, else
 * TSL_ERR_ARG saying so (the pool itself falls back to one per core). */
tsl_status rt_cpu_check_env(tsl_diag *d);
/* Resize the pool (n <= 0: back to the default). Must not be called from
 * inside a parallel_for. */
void rt_cpu_set_num_threads(int n);
/* Join and free the pool (also done at process exit); the next
 * parallel_for starts a new one. */
void rt_cpu_shutdown(void);
/* In a child process after fork: forget the parent's pool threads. */
void rt_cpu_after_fork(void);

/* ---- where a run's time goes (stats.c) --------------------------------- */
/* The calling thread's record (tessel.h tsl_run_stats has the meanings):
 * the API clears it before a run; the parts of a run add to it. */
typedef struct rt_stats {
    double plan_ms, codegen_ms, compile_ms, load_ms, run_ms;
    int kernels, compiled, cached, loaded;
} rt_stats;
rt_stats *rt_stats_here(void);
double rt_now_ms(void); /* a monotonic clock */

/* ---- CUDA: NVRTC (cuda.c; needs only libnvrtc) ------------------------ */
/* The NVRTC option that selects a kernel's 64-bit index variant and the
 * name of a size branch's arm macro (codegen/cuda.h's CG_CUDA_INDEX64 and
 * TSL_IF<n>: the unit tests hold the two spellings equal). */
#define RT_CUDA_INDEX64 "-DTSL_INDEX64"
#define RT_CUDA_BRANCH_FMT "-DTSL_IF%d=%u"
typedef struct rt_cuda_options {
    const char *name;              /* source name in messages; NULL: "kernel.cu" */
    const char *const *extra;      /* more NVRTC options, e.g. "-DTILE=64" */
    int n_extra;
    int fast_math;                 /* --use_fast_math (off by default) */
    int ptxas_verbose;             /* --ptxas-options=-v: resource report in the log */
} rt_cuda_options;

/* NVRTC is loadable ($TESSEL_NVRTC, libnvrtc.so[.13|.12], /usr/local/cuda). On
 * failure d gets a message naming every path tried. */
tsl_status rt_cuda_nvrtc_available(tsl_diag *d);
/* NVRTC's version as major*1000 + minor*10 (12040 for 12.4), 0 if absent. */
int rt_cuda_nvrtc_version(void);

/* Compile CUDA C to a cubin for exactly `arch` ("sm_80", "sm_90a"; NULL:
 * the arch of device 0 / $TESSEL_CUDA_DEVICE, which needs a GPU), with
 * -default-device -std=c++17. Cached under cuda/<key>.cubin (key: source,
 * arch, options, NVRTC and driver versions). Gives a malloc'd cubin and,
 * if log != NULL, the malloc'd NVRTC log (with the ptxas report when
 * asked; "" when empty). Errors: TSL_ERR_UNAVAILABLE (no NVRTC),
 * TSL_ERR_COMPILE (the log, each `(LINE):` reference followed by that line
 * of the source). */
tsl_status rt_cuda_compile(const char *source, const char *arch, const rt_cuda_options *opt,
                           void **cubin, size_t *cubin_size, char **log, tsl_diag *d);
/* The PTX NVRTC generates for the same source, arch and options (for
 * `--emit=ptx`; not cached). Gives a malloc'd NUL-terminated string. */
tsl_status rt_cuda_compile_ptx(const char *source, const char *arch, const rt_cuda_options *opt,
                               char **ptx, tsl_diag *d);
/* How many times this process ran NVRTC (tests: cache hits run none). */
long rt_cuda_compile_count(void);

/* The ptxas -v report folded over all functions in a log. */
typedef struct rt_ptxas_report {
    int found;        /* number of "Used N registers" lines seen */
    int registers;    /* max over functions */
    int spill_stores; /* bytes, summed over functions */
    int spill_loads;
    int stack_frame;  /* bytes, max over functions */
} rt_ptxas_report;
void rt_cuda_ptxas_parse(const char *log, rt_ptxas_report *out);

/* ---- CUDA: device side (cuda.c; needs libcuda.so.1 and a GPU) -------- */
typedef struct rt_cuda_device rt_cuda_device;
typedef struct rt_cuda_module rt_cuda_module;
typedef struct rt_cuda_event rt_cuda_event;
typedef void *rt_cuda_function;  /* a CUfunction */
typedef uint64_t rt_cuda_ptr;     /* a CUdeviceptr */

typedef struct rt_cuda_info {
    int ordinal;
    char name[256];
    int cc_major, cc_minor;
    int sm_count;
    int max_shared_optin;  /* bytes of dynamic shared memory per block, opt-in */
    int driver_version;    /* 12040 for 12.4 */
    char arch[16];         /* "sm_90a" on Hopper, "sm_80" on A100 */
} rt_cuda_info;

/* Open device $TESSEL_CUDA_DEVICE (default 0) through its primary context.
 * TSL_ERR_UNAVAILABLE when there is no driver or no such device. */
tsl_status rt_cuda_open(rt_cuda_device **out, tsl_diag *d);
/* The same for device `ordinal` (-1: TESSEL_CUDA_DEVICE, else 0). */
tsl_status rt_cuda_open_ordinal(int ordinal, rt_cuda_device **out, tsl_diag *d);
void rt_cuda_close(rt_cuda_device *dev); /* NULL allowed */
const rt_cuda_info *rt_cuda_device_info(const rt_cuda_device *dev);

tsl_status rt_cuda_module_load(rt_cuda_device *dev, const void *cubin, size_t size,
                               rt_cuda_module **out, tsl_diag *d);
void rt_cuda_module_free(rt_cuda_module *m); /* NULL allowed */
tsl_status rt_cuda_function_get(rt_cuda_module *m, const char *name, rt_cuda_function *out,
                                tsl_diag *d);
/* Blocks of f that can be resident at once in clusters of `cluster`
 * (cuOccupancyMaxActiveClusters x cluster): a cluster kernel's persistent
 * grid. Where the driver cannot say, the SMs rounded down to a multiple of
 * the cluster (at least one cluster). */
int rt_cuda_cluster_blocks(rt_cuda_device *dev, rt_cuda_function f, int cluster, unsigned threads, unsigned shared_bytes);
/* Launch on the device's stream (rt_cuda_set_stream; the legacy default
 * stream unless set), asynchronously. params[i] points at the i-th
 * kernel argument's value. shared_bytes above 48 KiB sets the function's
 * max-dynamic-shared attribute first, once per function and size (and is
 * checked against the opt-in limit with a message naming both). */
tsl_status rt_cuda_launch(rt_cuda_device *dev, rt_cuda_function f, const unsigned grid[3],
                          const unsigned block[3], unsigned shared_bytes, void **params,
                          tsl_diag *d);
tsl_status rt_cuda_synchronize(rt_cuda_device *dev, tsl_diag *d);
/* A run's span on this thread. Every call on a device makes its context
 * current on the calling thread first (cuCtxSetCurrent), since the
 * caller may have changed it since; between rt_cuda_begin and rt_cuda_end
 * only the first does: the context stays current until the span ends. Code
 * not tessel's that runs inside a span (a caller's allocator) may change
 * it: rt_cuda_recheck(dev) after it makes the next call set it again.
 * Spans do not nest; rt_cuda_close ends the calling thread's. */
tsl_status rt_cuda_begin(rt_cuda_device *dev, tsl_diag *d);
void rt_cuda_recheck(rt_cuda_device *dev);
void rt_cuda_end(rt_cuda_device *dev); /* a device not held: nothing */
/* A TMA tensor map (CUtensorMap: 128 bytes at `map`, 64-byte aligned) for
 * a tensor of `rank` (1..5) dims at device address ptr: dims and strides
 * in elements and box extents, outermost first; swizzle in bytes (0, 32,
 * 64, 128). The innermost stride must be 1, the others multiples of 16
 * bytes and ptr 16-byte aligned (errors name the tensor). */
tsl_status rt_cuda_tmap_encode(rt_cuda_device *dev, void *map, const char *name, tsl_dtype dt, int rank,
                               rt_cuda_ptr ptr, const int64_t *dims, const int64_t *strides, const int64_t *box,
                               int swizzle, tsl_diag *d);

tsl_status rt_cuda_alloc(rt_cuda_device *dev, size_t bytes, rt_cuda_ptr *out, tsl_diag *d);
void rt_cuda_free(rt_cuda_device *dev, rt_cuda_ptr p); /* 0 allowed */
tsl_status rt_cuda_copy_htod(rt_cuda_device *dev, rt_cuda_ptr dst, const void *src, size_t n,
                             tsl_diag *d);
tsl_status rt_cuda_copy_dtoh(rt_cuda_device *dev, void *dst, rt_cuda_ptr src, size_t n,
                             tsl_diag *d);
tsl_status rt_cuda_copy_dtod(rt_cuda_device *dev, rt_cuda_ptr dst, rt_cuda_ptr src, size_t n,
                             tsl_diag *d);
tsl_status rt_cuda_memset8(rt_cuda_device *dev, rt_cuda_ptr dst, unsigned char v, size_t n,
                           tsl_diag *d);

tsl_status rt_cuda_event_create(rt_cuda_device *dev, rt_cuda_event **out, tsl_diag *d);
tsl_status rt_cuda_event_record(rt_cuda_device *dev, rt_cuda_event *e, tsl_diag *d);
/* Waits for `end`, then gives the milliseconds between the two records. */
tsl_status rt_cuda_event_elapsed(rt_cuda_device *dev, rt_cuda_event *start, rt_cuda_event *end,
                                 float *ms, tsl_diag *d);
void rt_cuda_event_destroy(rt_cuda_device *dev, rt_cuda_event *e); /* NULL allowed */

/* Streams (cuda.c). Launches and the async calls below go to the stream
 * set last (NULL: the legacy default stream). A stream of another context
 * than the device's primary one is TSL_ERR_ARG; the handle last found to
 * be of the device's context is not asked again (cuStreamGetCtx) until a
 * driver call on the device fails. Whether it is capturing is asked at
 * every set. */
tsl_status rt_cuda_set_stream(rt_cuda_device *dev, void *stream, tsl_diag *d);
void *rt_cuda_stream(const rt_cuda_device *dev);
/* Whether that stream was being captured into a CUDA graph when set. */
int rt_cuda_stream_capturing(const rt_cuda_device *dev);
tsl_status rt_cuda_stream_synchronize(rt_cuda_device *dev, tsl_diag *d);
tsl_status rt_cuda_memset8_async(rt_cuda_device *dev, rt_cuda_ptr dst, unsigned char v, size_t n, tsl_diag *d);
/* Stream-ordered memory (cuMemAllocAsync; usable inside graph capture). */
tsl_status rt_cuda_alloc_async(rt_cuda_device *dev, size_t bytes, rt_cuda_ptr *out, tsl_diag *d);
void rt_cuda_free_async(rt_cuda_device *dev, rt_cuda_ptr p);

#endif
