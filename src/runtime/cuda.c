/* cuda.c — the CUDA runtime: NVRTC (CUDA C -> cubin for one exact arch,
 * cached under cuda/<key>.cubin) and the driver API (device, module,
 * launch, memory, events). Both libraries are opened with dlopen at first
 * use and their entry points resolved by name (cuda_api.h), so tessel
 * builds and runs without a CUDA toolkit, driver or GPU; each missing piece
 * is a TSL_ERR_UNAVAILABLE message, never a crash.
 *
 * Every driver and NVRTC call goes through CU_TRY / NV_TRY, which record
 * tessel's file:line, the call, the error's name and string, and return a
 * tsl_status. The only state an error leaves behind is a device whose
 * context a kernel fault poisoned (illegal address, trap, ...): that device
 * then refuses work with a message saying so until it is closed. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cuda_api.h"
#include "runtime/runtime.h"

enum { CUDA_LOG_MAX = 16000 };

/* ---- loading the libraries --------------------------------------------- */

static pthread_mutex_t cuda_load_mu = PTHREAD_MUTEX_INITIALIZER;

static struct {
    void *handle; /* non-NULL once every symbol resolved and cuInit ran */
    int version;  /* cuDriverGetVersion */
#define X(field, sym, ret, params) ret(*field) params;
    CUDA_DRIVER_FUNCS(X)
#undef X
} cu;

static struct {
    void *handle; /* non-NULL once every symbol resolved */
    int version;  /* major * 1000 + minor * 10 */
#define X(field, sym, ret, params) ret(*field) params;
    NVRTC_FUNCS(X)
#undef X
} nv;

/* dlsym every row of a table into consecutive function-pointer fields;
 * gives the first missing name or NULL. */
typedef struct cuda_sym {
    const char *name;
    size_t offset;
} cuda_sym;

static const cuda_sym cuda_driver_syms[] = {
#define X(field, sym, ret, params) {sym, offsetof(__typeof__(cu), field)},
    CUDA_DRIVER_FUNCS(X)
#undef X
};

static const cuda_sym cuda_nvrtc_syms[] = {
#define X(field, sym, ret, params) {sym, offsetof(__typeof__(nv), field)},
    NVRTC_FUNCS(X)
#undef X
};

static const char *cuda_resolve(void *h, void *table, const cuda_sym *syms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p) return syms[i].name;
        memcpy((char *)table + syms[i].offset, &p, sizeof p);
    }
    return NULL;
}

/* Open libcuda.so.1, resolve it and run cuInit, once per process on
 * success; a failure is reported and retried on the next call. */
static tsl_status cuda_load_driver(tsl_diag *d)
{
    pthread_mutex_lock(&cuda_load_mu);
    tsl_status st = TSL_OK;
    if (cu.handle) goto out;
    const char *lib = rt_settings_get()->libcuda;
    if (!lib || !*lib) lib = "libcuda.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        diag_error(d, TSL_ERR_UNAVAILABLE,
                   "CUDA driver %s not found: %s (the CUDA target needs an NVIDIA driver; the "
                   "CPU target works without one)",
                   lib, err ? err : "dlopen failed");
        st = TSL_ERR_UNAVAILABLE;
        goto out;
    }
    const char *missing = cuda_resolve(h, &cu, cuda_driver_syms, TSL_COUNTOF(cuda_driver_syms));
    if (missing) {
        diag_error(d, TSL_ERR_UNAVAILABLE,
                   "CUDA driver %s lacks the entry point %s (driver too old?)", lib, missing);
        dlclose(h);
        st = TSL_ERR_UNAVAILABLE;
        goto out;
    }
    CUresult r = cu.Init(0);
    if (r != CUDA_SUCCESS) {
        const char *name = NULL, *str = NULL;
        cu.GetErrorName(r, &name);
        cu.GetErrorString(r, &str);
        diag_error(d, TSL_ERR_UNAVAILABLE, "no usable CUDA device: cuInit failed with %s (%s)",
                   name ? name : "unknown error", str ? str : "no description");
        dlclose(h);
        st = TSL_ERR_UNAVAILABLE;
        goto out;
    }
    if (cu.DriverGetVersion(&cu.version) != CUDA_SUCCESS) cu.version = 0;
    cu.handle = h;
out:
    pthread_mutex_unlock(&cuda_load_mu);
    return st;
}

/* The driver's version without needing a device (0 when there is no
 * driver); part of the cubin cache key. */
static int cuda_driver_version_quiet(void)
{
    static int probed = -1; /* guarded by cuda_load_mu */
    pthread_mutex_lock(&cuda_load_mu);
    int v = cu.version ? cu.version : probed;
    pthread_mutex_unlock(&cuda_load_mu);
    if (v >= 0) return v;
    v = 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        (void)dlerror();
        pthread_mutex_lock(&cuda_load_mu);
        probed = 0;
        pthread_mutex_unlock(&cuda_load_mu);
        return 0;
    }
    CUresult (*get)(int *) = NULL;
    void *p = dlsym(h, "cuDriverGetVersion");
    memcpy(&get, &p, sizeof p);
    if (!get || get(&v) != CUDA_SUCCESS) v = 0;
    dlclose(h);
    pthread_mutex_lock(&cuda_load_mu);
    probed = v;
    pthread_mutex_unlock(&cuda_load_mu);
    return v;
}

static tsl_status cuda_load_nvrtc(tsl_diag *d)
{
    pthread_mutex_lock(&cuda_load_mu);
    tsl_status st = TSL_OK;
    if (nv.handle) goto out;
    static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
    static const char *const dirs[] = {"", "/usr/local/cuda/lib64/",
                                       "/usr/local/cuda/targets/x86_64-linux/lib/"};
    strbuf tried = {0};
    void *h = NULL;
    /* An explicit TESSEL_NVRTC is the only library tried: a typo there
     * should be an error, not a silent fallback to another NVRTC. */
    const char *env = rt_settings_get()->nvrtc;
    int explicit = env && *env;
    if (explicit) {
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) sb_printf(&tried, "\n  TESSEL_NVRTC=%s: %s", env, dlerror());
    }
    for (size_t i = 0; !h && !explicit && i < TSL_COUNTOF(dirs); i++) {
        for (size_t j = 0; !h && j < TSL_COUNTOF(names); j++) {
            char path[256];
            snprintf(path, sizeof path, "%s%s", dirs[i], names[j]);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!h) sb_printf(&tried, "\n  %s: %s", path, dlerror());
        }
    }
    if (!h) {
        diag_error(d, TSL_ERR_UNAVAILABLE,
                   "NVRTC not found (set TESSEL_NVRTC to the path of libnvrtc.so.*); tried:%s",
                   sb_str(&tried));
        st = TSL_ERR_UNAVAILABLE;
        sb_free(&tried);
        goto out;
    }
    sb_free(&tried);
    const char *missing = cuda_resolve(h, &nv, cuda_nvrtc_syms, TSL_COUNTOF(cuda_nvrtc_syms));
    int major = 0, minor = 0;
    if (missing || nv.Version(&major, &minor) != NVRTC_SUCCESS) {
        diag_error(d, TSL_ERR_UNAVAILABLE, "NVRTC library lacks %s (NVRTC 11.1 or newer needed)",
                   missing ? missing : "a working nvrtcVersion");
        dlclose(h);
        st = TSL_ERR_UNAVAILABLE;
        goto out;
    }
    nv.version = major * 1000 + minor * 10;
    nv.handle = h;
out:
    pthread_mutex_unlock(&cuda_load_mu);
    return st;
}

tsl_status rt_cuda_nvrtc_available(tsl_diag *d)
{
    tsl_diag scratch = {0};
    tsl_status st = cuda_load_nvrtc(d ? d : &scratch);
    diag_free(&scratch);
    return st;
}

int rt_cuda_nvrtc_version(void)
{
    return rt_cuda_nvrtc_available(NULL) == TSL_OK ? nv.version : 0;
}

/* ---- the check macros -------------------------------------------------- */

/* A function whose max-dynamic-shared attribute tessel raised. */
typedef struct cuda_smem {
    CUfunction f;
    int bytes;
} cuda_smem;

struct rt_cuda_device {
    rt_cuda_info info;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream; /* launches and async calls go here (rt_cuda_set_stream); NULL: legacy default */
    int capturing;   /* the stream was being captured into a CUDA graph when set */
    /* the last stream cuStreamGetCtx found to be of ctx: not asked again
     * until another handle comes, or a driver call on this device fails */
    CUstream checked;
    cuda_smem *smem; /* [nsmem]: functions of loaded modules, each entry dropped with its module */
    int nsmem, capsmem;
    char *poisoned;  /* the fault that poisoned the context, or NULL */
};

struct rt_cuda_module {
    rt_cuda_device *dev;
    CUmodule mod;
    CUfunction *fns; /* [nfns]: those rt_cuda_function_get gave out */
    int nfns;
};

/* Errors after which the context is unusable until reset. */
static int cuda_is_sticky(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED: return 1;
    default: return 0;
    }
}

static tsl_status cuda_check(tsl_diag *d, rt_cuda_device *dev, CUresult r, const char *call,
                             const char *file, int line)
{
    if (r == CUDA_SUCCESS) return TSL_OK;
    /* a stream handle destroyed and reused by another context passes the
     * remembered check, and its launch fails: the next set asks again */
    if (dev) dev->checked = NULL;
    const char *name = NULL, *str = NULL;
    if (cu.GetErrorName) cu.GetErrorName(r, &name);
    if (cu.GetErrorString) cu.GetErrorString(r, &str);
    tsl_status st = r == CUDA_ERROR_OUT_OF_MEMORY                                 ? TSL_ERR_NOMEM
                    : r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE ? TSL_ERR_UNAVAILABLE
                                                                                  : TSL_ERR_RUNTIME;
    strbuf b = {0};
    sb_printf(&b, "CUDA error %s (%d: %s) in %s at %s:%d", name ? name : "?", r,
              str ? str : "no description", call, file, line);
    if (dev && cuda_is_sticky(r)) {
        if (!dev->poisoned) dev->poisoned = strdup(sb_str(&b));
        sb_printf(&b, "; the device's context is now poisoned: close and reopen device %d",
                  dev->info.ordinal);
    } else if (cuda_is_sticky(r)) {
        sb_puts(&b, "; a kernel fault earlier in this process poisoned the device's context and "
                    "the driver could not reset it: restart the process (run risky launches in "
                    "a child process)");
    }
    diag_error(d, st, "%s", sb_str(&b));
    sb_free(&b);
    return st;
}

#define CU_TRY(d, dev, call) cuda_check((d), (dev), cu.call, "cu" #call, __FILE__, __LINE__)

static tsl_status nvrtc_check(tsl_diag *d, nvrtcResult r, const char *call, const char *file,
                              int line)
{
    if (r == NVRTC_SUCCESS) return TSL_OK;
    diag_error(d, TSL_ERR_COMPILE, "NVRTC error %d (%s) in %s at %s:%d", r,
               nv.GetErrorString ? nv.GetErrorString(r) : "?", call, file, line);
    return TSL_ERR_COMPILE;
}

#define NV_TRY(d, call) nvrtc_check((d), nv.call, "nvrtc" #call, __FILE__, __LINE__)

/* The device whose context this thread holds current for a run
 * (rt_cuda_begin .. rt_cuda_end), and whether it is known to be current
 * now: while it is, the calls on that device set no context. Only tessel
 * sets a context inside a run; whatever else runs there (a caller's
 * allocator) is followed by rt_cuda_recheck, and a call on another device
 * clears `cuda_held_current`. Outside a run every call sets the context,
 * since the caller's code may change it between any two. */
static _Thread_local rt_cuda_device *cuda_held;
static _Thread_local int cuda_held_current;

/* Make dev's context current on this thread (unless held so); the driver's
 * result. */
static CUresult cuda_make_current(rt_cuda_device *dev)
{
    if (dev == cuda_held && cuda_held_current) return CUDA_SUCCESS;
    CUresult r = cu.CtxSetCurrent(dev->ctx);
    cuda_held_current = dev == cuda_held && r == CUDA_SUCCESS;
    return r;
}

/* Every device call starts here: refuse a poisoned device, make its
 * context current on this thread. */
static tsl_status cuda_enter(rt_cuda_device *dev, tsl_diag *d)
{
    if (dev->poisoned) {
        diag_error(d, TSL_ERR_RUNTIME,
                   "CUDA device %d (%s) is unusable: its context was poisoned by an earlier "
                   "fault (%s); close it and open it again",
                   dev->info.ordinal, dev->info.name, dev->poisoned);
        return TSL_ERR_RUNTIME;
    }
    return cuda_check(d, dev, cuda_make_current(dev), "cuCtxSetCurrent", __FILE__, __LINE__);
}

tsl_status rt_cuda_begin(rt_cuda_device *dev, tsl_diag *d)
{
    cuda_held = dev;
    cuda_held_current = 0;
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK) cuda_held = NULL;
    return st;
}

void rt_cuda_recheck(rt_cuda_device *dev)
{
    if (dev == cuda_held) cuda_held_current = 0;
}

void rt_cuda_end(rt_cuda_device *dev)
{
    if (dev != cuda_held) return;
    cuda_held = NULL;
    cuda_held_current = 0;
}

/* ---- NVRTC -------------------------------------------------------------- */

static _Atomic long cuda_compiles;

long rt_cuda_compile_count(void)
{
    return atomic_load(&cuda_compiles);
}

/* "sm_80", "sm_90a", "sm_100f": the only arch spellings accepted. */
static int cuda_arch_valid(const char *arch)
{
    if (strncmp(arch, "sm_", 3) != 0) return 0;
    const char *p = arch + 3;
    int digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == 'a' || *p == 'f') p++;
    return digits >= 2 && digits <= 3 && *p == '\0';
}

/* The NVRTC log with each `name(LINE): ` reference followed by that line of
 * the source, trimmed to CUDA_LOG_MAX. */
static void cuda_annotate_log(strbuf *b, const char *log, const char *name, const char *source)
{
    size_t nl = strlen(name);
    const char *p = log;
    while (*p && b->len < CUDA_LOG_MAX) {
        size_t len = strcspn(p, "\n");
        sb_putn(b, p, len);
        sb_putc(b, '\n');
        if (strncmp(p, name, nl) == 0 && p[nl] == '(') {
            char *end;
            long line = strtol(p + nl + 1, &end, 10);
            if (end != p + nl + 1 && *end == ')' && line > 0) {
                const char *s = source;
                for (long l = 1; l < line && s; l++) {
                    s = strchr(s, '\n');
                    if (s) s++;
                }
                if (s && *s) sb_printf(b, "%5ld | %.*s\n", line, (int)strcspn(s, "\n"), s);
            }
        }
        p += len;
        if (*p == '\n') p++;
    }
    if (*p) sb_printf(b, "... (%zu more bytes of log)\n", strlen(p));
    while (b->len > 0 && b->buf[b->len - 1] == '\n') b->buf[--b->len] = '\0';
}

static int cuda_is_elf(const void *p, size_t n)
{
    return n >= 4 && memcmp(p, "\177ELF", 4) == 0;
}

/* Look the key up in the cache: the cubin and (when asked) its log. */
/* The cache's cubin for key (checksummed by the cache, and an ELF image)
 * and, when asked, its NVRTC log; 0 on a miss. */
static int cuda_cache_get(const char *key, void **cubin, size_t *size, char **log)
{
    rt_cache_entry e;
    if (!rt_cache_get("cuda", key, &e)) return 0;
    if (!cuda_is_elf(e.data, e.size)) {
        rt_warn("kernel cache entry cuda/%s is not a cubin; rebuilding it", key);
        rt_cache_entry_free(&e);
        return 0;
    }
    *cubin = e.data;
    *size = e.size;
    if (log) *log = e.note ? e.note : strdup("");
    else free(e.note);
    free(e.source);
    return 1;
}

static tsl_status cuda_arch_of_device(char arch[16], tsl_diag *d)
{
    rt_cuda_device *dev = NULL;
    tsl_status st = rt_cuda_open(&dev, d);
    if (st != TSL_OK) return st;
    memcpy(arch, dev->info.arch, 16);
    rt_cuda_close(dev);
    return TSL_OK;
}

/* The NVRTC options for one compile, in the order they are passed and
 * hashed; `archopt` holds the arch option's text. Gives a malloc'd array. */
static const char **cuda_options(const char *arch, const rt_cuda_options *opt, char archopt[48],
                                 int *nopts)
{
    const char **opts = calloc((size_t)opt->n_extra + 8, sizeof *opts);
    int n = 0;
    snprintf(archopt, 48, "--gpu-architecture=%s", arch);
    opts[n++] = archopt;
    opts[n++] = "-default-device";
    opts[n++] = "-std=c++17";
    if (opt->fast_math) opts[n++] = "--use_fast_math";
    if (opt->ptxas_verbose) {
        opts[n++] = "--ptxas-options=-v";
        /* NVRTC 13 keeps its own cache of ptxas results (in the driver's
         * ComputeCache when libcuda is present); a hit prints no report. */
        if (nv.version >= 13000) opts[n++] = "--no-cache";
    }
    for (int i = 0; i < opt->n_extra; i++) opts[n++] = opt->extra[i];
    *nopts = n;
    return opts;
}

static tsl_status cuda_compile_failed(tsl_diag *d, nvrtcResult cr, const char *log,
                                      const char *name, const char *arch, const char *source)
{
    strbuf b = {0};
    cuda_annotate_log(&b, log, name, source);
    diag_error(d, TSL_ERR_COMPILE, "NVRTC %d.%d failed to compile %s for %s (%s):\n%s",
               nv.version / 1000, nv.version % 1000 / 10, name, arch, nv.GetErrorString(cr),
               sb_str(&b));
    sb_free(&b);
    return TSL_ERR_COMPILE;
}

/* NULL arch -> the device's; then only the accepted spellings. */
static tsl_status cuda_pick_arch(const char **arch, char dev_arch[16], tsl_diag *d)
{
    if (!*arch) {
        tsl_status st = cuda_arch_of_device(dev_arch, d);
        if (st != TSL_OK) return st;
        *arch = dev_arch;
    }
    if (!cuda_arch_valid(*arch)) {
        diag_error(d, TSL_ERR_ARG, "unknown CUDA architecture '%s' (expected e.g. sm_80 or sm_90a)",
                   *arch);
        return TSL_ERR_ARG;
    }
    return TSL_OK;
}

tsl_status rt_cuda_compile(const char *source, const char *arch, const rt_cuda_options *opt,
                           void **cubin, size_t *cubin_size, char **log, tsl_diag *d)
{
    tsl_diag scratch = {0};
    if (!d) d = &scratch;
    static const rt_cuda_options no_options;
    if (!opt) opt = &no_options;
    *cubin = NULL;
    *cubin_size = 0;
    if (log) *log = NULL;
    tsl_status st = TSL_OK;
    char dev_arch[16];
    if (!source) {
        diag_error(d, TSL_ERR_ARG, "rt_cuda_compile: source is NULL");
        st = TSL_ERR_ARG;
        goto done_early;
    }
    if ((st = cuda_load_nvrtc(d)) != TSL_OK) goto done_early;
    if ((st = cuda_pick_arch(&arch, dev_arch, d)) != TSL_OK) goto done_early;
    const char *name = opt->name && *opt->name ? opt->name : "kernel.cu";

    int nopts = 0;
    char archopt[48];
    const char **opts = cuda_options(arch, opt, archopt, &nopts);

    int versions[2] = {nv.version, cuda_driver_version_quiet()};
    rt_key_part parts[40];
    int np = 0;
    parts[np++] = (rt_key_part){source, strlen(source)};
    parts[np++] = (rt_key_part){versions, sizeof versions};
    parts[np++] = (rt_key_part){name, strlen(name)};
    strbuf allopts = {0};
    for (int i = 0; i < nopts; i++) sb_printf(&allopts, "%s\n", opts[i]);
    parts[np++] = (rt_key_part){sb_str(&allopts), allopts.len};
    char key[33];
    rt_cache_key(parts, np, key);
    sb_free(&allopts);

    nvrtcProgram prog = NULL;
    char *logtext = NULL, *bin = NULL;
    if (cuda_cache_get(key, cubin, cubin_size, log)) {
        rt_stats_here()->cached++;
        goto done;
    }

    atomic_fetch_add(&cuda_compiles, 1);
    double t_compile = rt_now_ms();
    if ((st = NV_TRY(d, CreateProgram(&prog, source, name, 0, NULL, NULL))) != TSL_OK) goto done;
    nvrtcResult cr = nv.CompileProgram(prog, nopts, opts);
    size_t logsize = 0;
    if ((st = NV_TRY(d, GetProgramLogSize(prog, &logsize))) != TSL_OK) goto done;
    logtext = calloc(logsize + 1, 1);
    if (logsize > 0 && (st = NV_TRY(d, GetProgramLog(prog, logtext))) != TSL_OK) goto done;
    if (cr != NVRTC_SUCCESS) {
        st = cuda_compile_failed(d, cr, logtext, name, arch, source);
        goto done;
    }
    size_t n = 0;
    if ((st = NV_TRY(d, GetCUBINSize(prog, &n))) != TSL_OK) goto done;
    bin = malloc(n ? n : 1);
    if (n == 0 || (st = NV_TRY(d, GetCUBIN(prog, bin))) != TSL_OK || !cuda_is_elf(bin, n)) {
        if (st == TSL_OK) {
            diag_error(d, TSL_ERR_COMPILE, "NVRTC gave no cubin for %s (arch %s)", name, arch);
            st = TSL_ERR_COMPILE;
        }
        goto done;
    }
    rt_cache_put("cuda", key, name, source, logtext, bin, n);
    rt_stats_here()->compiled++;
    rt_stats_here()->compile_ms += rt_now_ms() - t_compile;
    *cubin = bin;
    *cubin_size = n;
    bin = NULL;
    if (log) {
        *log = logtext;
        logtext = NULL;
    }
done:
    if (prog) nv.DestroyProgram(&prog);
    free(bin);
    free(logtext);
    free(opts);
done_early:
    diag_free(&scratch);
    return st;
}

tsl_status rt_cuda_compile_ptx(const char *source, const char *arch, const rt_cuda_options *opt,
                               char **ptx, tsl_diag *d)
{
    tsl_diag scratch = {0};
    if (!d) d = &scratch;
    static const rt_cuda_options no_options;
    if (!opt) opt = &no_options;
    *ptx = NULL;
    char dev_arch[16], archopt[48];
    tsl_status st = source ? cuda_load_nvrtc(d) : TSL_ERR_ARG;
    if (!source) diag_error(d, st, "rt_cuda_compile_ptx: source is NULL");
    if (st == TSL_OK) st = cuda_pick_arch(&arch, dev_arch, d);
    if (st != TSL_OK) {
        diag_free(&scratch);
        return st;
    }
    const char *name = opt->name && *opt->name ? opt->name : "kernel.cu";
    int nopts = 0;
    const char **opts = cuda_options(arch, opt, archopt, &nopts);
    nvrtcProgram prog = NULL;
    char *logtext = NULL;
    size_t n = 0;
    atomic_fetch_add(&cuda_compiles, 1);
    if ((st = NV_TRY(d, CreateProgram(&prog, source, name, 0, NULL, NULL))) != TSL_OK) goto done;
    nvrtcResult cr = nv.CompileProgram(prog, nopts, opts);
    if (cr != NVRTC_SUCCESS) {
        size_t logsize = 0;
        if (nv.GetProgramLogSize(prog, &logsize) == NVRTC_SUCCESS) {
            logtext = calloc(logsize + 1, 1);
            if (logsize && nv.GetProgramLog(prog, logtext) != NVRTC_SUCCESS) logtext[0] = '\0';
        }
        st = cuda_compile_failed(d, cr, logtext ? logtext : "", name, arch, source);
        goto done;
    }
    if ((st = NV_TRY(d, GetPTXSize(prog, &n))) != TSL_OK) goto done;
    *ptx = calloc(n + 1, 1);
    if ((st = NV_TRY(d, GetPTX(prog, *ptx))) != TSL_OK) {
        free(*ptx);
        *ptx = NULL;
    }
done:
    if (prog) nv.DestroyProgram(&prog);
    free(logtext);
    free(opts);
    diag_free(&scratch);
    return st;
}

/* Numbers after a phrase on the same line: "Used 12 registers" -> 12. */
static int cuda_number_before(const char *line_start, const char *word)
{
    const char *p = word;
    while (p > line_start && p[-1] == ' ') p--;
    while (p > line_start && p[-1] >= '0' && p[-1] <= '9') p--;
    return atoi(p);
}

void rt_cuda_ptxas_parse(const char *log, rt_ptxas_report *out)
{
    memset(out, 0, sizeof *out);
    if (!log) return;
    for (const char *line = log; *line;) {
        size_t len = strcspn(line, "\n");
        char buf[512];
        size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
        memcpy(buf, line, n);
        buf[n] = '\0';
        const char *w;
        if (strstr(buf, "Used ") && (w = strstr(buf, " registers"))) {
            int r = cuda_number_before(buf, w);
            out->found++;
            if (r > out->registers) out->registers = r;
        }
        if ((w = strstr(buf, " bytes stack frame"))) {
            int v = cuda_number_before(buf, w);
            if (v > out->stack_frame) out->stack_frame = v;
        }
        if ((w = strstr(buf, " bytes spill stores"))) out->spill_stores += cuda_number_before(buf, w);
        if ((w = strstr(buf, " bytes spill loads"))) out->spill_loads += cuda_number_before(buf, w);
        line += len;
        if (*line == '\n') line++;
    }
}

/* ---- device ------------------------------------------------------------- */

tsl_status rt_cuda_open(rt_cuda_device **out, tsl_diag *d) { return rt_cuda_open_ordinal(-1, out, d); }

tsl_status rt_cuda_open_ordinal(int ordinal, rt_cuda_device **out, tsl_diag *d)
{
    tsl_diag scratch = {0};
    if (!d) d = &scratch;
    *out = NULL;
    tsl_status st = cuda_load_driver(d);
    if (st != TSL_OK) goto done;
    const char *env = ordinal < 0 ? rt_settings_get()->cuda_device : NULL;
    if (ordinal < 0) ordinal = 0;
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end != '\0' || v < 0 || v > 1024) {
            diag_error(d, TSL_ERR_ARG, "TESSEL_CUDA_DEVICE='%s' is not a device number", env);
            st = TSL_ERR_ARG;
            goto done;
        }
        ordinal = (int)v;
    }
    int count = 0;
    if ((st = CU_TRY(d, NULL, DeviceGetCount(&count))) != TSL_OK) goto done;
    if (count == 0) {
        diag_error(d, TSL_ERR_UNAVAILABLE, "no CUDA device found (the driver reports 0 devices)");
        st = TSL_ERR_UNAVAILABLE;
        goto done;
    }
    if (ordinal >= count) {
        diag_error(d, TSL_ERR_UNAVAILABLE,
                   "CUDA device %d requested (TESSEL_CUDA_DEVICE) but only %d present", ordinal,
                   count);
        st = TSL_ERR_UNAVAILABLE;
        goto done;
    }
    rt_cuda_device *dev = calloc(1, sizeof *dev);
    rt_cuda_info *in = &dev->info;
    in->ordinal = ordinal;
    in->driver_version = cu.version;
    if ((st = CU_TRY(d, NULL, DeviceGet(&dev->dev, ordinal))) != TSL_OK ||
        (st = CU_TRY(d, NULL, DeviceGetName(in->name, (int)sizeof in->name - 1, dev->dev))) != TSL_OK ||
        (st = CU_TRY(d, NULL, DeviceGetAttribute(&in->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->dev))) != TSL_OK ||
        (st = CU_TRY(d, NULL, DeviceGetAttribute(&in->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev->dev))) != TSL_OK ||
        (st = CU_TRY(d, NULL, DeviceGetAttribute(&in->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev->dev))) != TSL_OK ||
        (st = CU_TRY(d, NULL, DeviceGetAttribute(&in->max_shared_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev->dev))) != TSL_OK ||
        (st = CU_TRY(d, NULL, DevicePrimaryCtxRetain(&dev->ctx, dev->dev))) != TSL_OK) {
        free(dev);
        goto done;
    }
    /* Arch-specific features (wgmma, setmaxnreg) need the 'a' target from
     * Hopper on; such a cubin runs only on that exact arch, as intended. */
    snprintf(in->arch, sizeof in->arch, "sm_%d%d%s", in->cc_major, in->cc_minor,
             in->cc_major >= 9 ? "a" : "");
    if ((st = cuda_check(d, dev, cuda_make_current(dev), "cuCtxSetCurrent", __FILE__, __LINE__)) != TSL_OK) {
        cu.DevicePrimaryCtxRelease(dev->dev);
        free(dev);
        goto done;
    }
    *out = dev;
done:
    diag_free(&scratch);
    return st;
}

void rt_cuda_close(rt_cuda_device *dev)
{
    if (!dev) return;
    /* A poisoned primary context stays poisoned until reset; the reset
     * destroys it whatever its retain count (the driver may still refuse
     * the device to this process afterwards: rt_cuda_open then says so). */
    if (dev->poisoned) cu.DevicePrimaryCtxReset(dev->dev);
    cu.DevicePrimaryCtxRelease(dev->dev);
    rt_cuda_end(dev);
    free(dev->smem);
    free(dev->poisoned);
    free(dev);
}

const rt_cuda_info *rt_cuda_device_info(const rt_cuda_device *dev)
{
    return &dev->info;
}

tsl_status rt_cuda_module_load(rt_cuda_device *dev, const void *cubin, size_t size,
                               rt_cuda_module **out, tsl_diag *d)
{
    *out = NULL;
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK) return st;
    if (!cuda_is_elf(cubin, size)) {
        diag_error(d, TSL_ERR_ARG, "rt_cuda_module_load: the image is not a cubin (no ELF header)");
        return TSL_ERR_ARG;
    }
    char errlog[4096] = "";
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {errlog, (void *)(uintptr_t)sizeof errlog};
    CUmodule mod = NULL;
    st = CU_TRY(d, dev, ModuleLoadDataEx(&mod, cubin, 2, opts, vals));
    if (st != TSL_OK) {
        if (errlog[0]) diag_error(d, st, "module loader log: %s", errlog);
        return st;
    }
    rt_cuda_module *m = calloc(1, sizeof *m);
    m->dev = dev;
    m->mod = mod;
    *out = m;
    return TSL_OK;
}

void rt_cuda_module_free(rt_cuda_module *m)
{
    if (!m) return;
    if (!m->dev->poisoned && cuda_make_current(m->dev) == CUDA_SUCCESS) cu.ModuleUnload(m->mod);
    /* the driver may give a later module's function the same handle */
    rt_cuda_device *dev = m->dev;
    for (int i = 0; i < m->nfns; i++)
        for (int j = 0; j < dev->nsmem; j++)
            if (dev->smem[j].f == m->fns[i]) dev->smem[j--] = dev->smem[--dev->nsmem];
    free(m->fns);
    free(m);
}

tsl_status rt_cuda_function_get(rt_cuda_module *m, const char *name, rt_cuda_function *out,
                                tsl_diag *d)
{
    *out = NULL;
    tsl_status st = cuda_enter(m->dev, d);
    if (st != TSL_OK) return st;
    CUfunction f = NULL;
    st = CU_TRY(d, m->dev, ModuleGetFunction(&f, m->mod, name));
    if (st != TSL_OK) {
        diag_error(d, st, "kernel '%s' not found in the module (is it extern \"C\" __global__?)",
                   name);
        return st;
    }
    CUfunction *fns = realloc(m->fns, sizeof *fns * (size_t)(m->nfns + 1));
    if (!fns) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    m->fns = fns;
    m->fns[m->nfns++] = f;
    *out = f;
    return TSL_OK;
}

tsl_status rt_cuda_tmap_encode(rt_cuda_device *dev, void *map, const char *name, tsl_dtype dt, int rank,
                               rt_cuda_ptr ptr, const int64_t *dims, const int64_t *strides, const int64_t *box,
                               int swizzle, tsl_diag *d)
{
    static const struct {
        tsl_dtype dt;
        int code;
    } codes[] = {
        {TSL_DTYPE_F16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16},  {TSL_DTYPE_BF16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},
        {TSL_DTYPE_F32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32},  {TSL_DTYPE_F64, CU_TENSOR_MAP_DATA_TYPE_FLOAT64},
        {TSL_DTYPE_I8, CU_TENSOR_MAP_DATA_TYPE_UINT8},     {TSL_DTYPE_U8, CU_TENSOR_MAP_DATA_TYPE_UINT8},
        {TSL_DTYPE_BOOL, CU_TENSOR_MAP_DATA_TYPE_UINT8},   {TSL_DTYPE_I16, CU_TENSOR_MAP_DATA_TYPE_UINT16},
        {TSL_DTYPE_U16, CU_TENSOR_MAP_DATA_TYPE_UINT16},   {TSL_DTYPE_I32, CU_TENSOR_MAP_DATA_TYPE_INT32},
        {TSL_DTYPE_U32, CU_TENSOR_MAP_DATA_TYPE_UINT32},   {TSL_DTYPE_I64, CU_TENSOR_MAP_DATA_TYPE_INT64},
        {TSL_DTYPE_U64, CU_TENSOR_MAP_DATA_TYPE_UINT64},
    };
    int code = -1;
    for (size_t i = 0; i < TSL_COUNTOF(codes); i++)
        if (codes[i].dt == dt) code = codes[i].code;
    size_t es = tsl_dtype_size(dt);
    if (code < 0 || rank < 1 || rank > 5) {
        diag_error(d, TSL_ERR_ARG, "tensor '%s': no TMA tensor map for a rank-%d tensor of this dtype", name, rank);
        return TSL_ERR_ARG;
    }
    if (ptr % 16) {
        diag_error(d, TSL_ERR_ARG, "tensor '%s': TMA needs a 16-byte aligned address (it is %llu bytes past one)",
                   name, (unsigned long long)(ptr % 16));
        return TSL_ERR_ARG;
    }
    unsigned long long gdim[5], gstride[4];
    unsigned ebox[5], estr[5];
    for (int i = 0; i < rank; i++) {
        int r = rank - 1 - i; /* innermost first */
        gdim[i] = (unsigned long long)(dims[r] > 0 ? dims[r] : 1);
        ebox[i] = (unsigned)box[r];
        estr[i] = 1;
        if (i == 0 && strides[r] != 1 && dims[r] > 1) {
            diag_error(d, TSL_ERR_ARG, "tensor '%s': TMA needs its last dimension contiguous (stride %lld)", name,
                       (long long)strides[r]);
            return TSL_ERR_ARG;
        }
        if (i > 0) {
            unsigned long long b = (unsigned long long)strides[r] * es;
            if (b % 16 || b >= (1ull << 40)) {
                diag_error(d, TSL_ERR_ARG,
                           "tensor '%s': TMA needs each row stride to be a multiple of 16 bytes (dimension %d: %llu "
                           "bytes)",
                           name, r, b);
                return TSL_ERR_ARG;
            }
            gstride[i - 1] = b ? b : 16;
        }
    }
    int sw = swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
             : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
             : swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                             : CU_TENSOR_MAP_SWIZZLE_NONE;
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK) return st;
    memset(map, 0, 128);
    st = CU_TRY(d, dev,
                TensorMapEncodeTiled(map, code, (unsigned)rank, (void *)(uintptr_t)ptr, gdim, gstride, ebox, estr, 0,
                                     sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, 0));
    if (st != TSL_OK) diag_error(d, st, "tensor '%s': cuTensorMapEncodeTiled refused the tensor map", name);
    return st;
}

/* Dynamic shared memory above 48 KiB: checked against the opt-in limit,
 * and the function's max-dynamic-shared attribute raised to it — once per
 * function and size (dev->smem remembers it until the module is freed),
 * not per launch. Every launch path calls this before launching. */
static tsl_status cuda_smem_allow(rt_cuda_device *dev, CUfunction f, unsigned shared_bytes, tsl_diag *d)
{
    if (shared_bytes <= 48 * 1024) return TSL_OK;
    if ((int)shared_bytes > dev->info.max_shared_optin) {
        diag_error(d, TSL_ERR_ARG,
                   "kernel needs %u bytes of dynamic shared memory but device %d (%s) allows "
                   "at most %d per block",
                   shared_bytes, dev->info.ordinal, dev->info.name, dev->info.max_shared_optin);
        return TSL_ERR_ARG;
    }
    int at = -1;
    for (int i = 0; i < dev->nsmem && at < 0; i++)
        if (dev->smem[i].f == f) at = i;
    if (at >= 0 && dev->smem[at].bytes >= (int)shared_bytes) return TSL_OK;
    tsl_status st = CU_TRY(d, dev, FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    (int)shared_bytes));
    if (st != TSL_OK) return st;
    if (at < 0 && dev->nsmem == dev->capsmem) { /* out of memory: set again next launch */
        int cap = dev->capsmem ? 2 * dev->capsmem : 8;
        cuda_smem *m = realloc(dev->smem, sizeof *m * (size_t)cap);
        if (!m) return TSL_OK;
        dev->smem = m;
        dev->capsmem = cap;
    }
    if (at < 0) at = dev->nsmem++;
    dev->smem[at] = (cuda_smem){f, (int)shared_bytes};
    return TSL_OK;
}

tsl_status rt_cuda_launch(rt_cuda_device *dev, rt_cuda_function f, const unsigned grid[3],
                          const unsigned block[3], unsigned shared_bytes, void **params,
                          tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK) return st;
    for (int i = 0; i < 3; i++) {
        if (grid[i] == 0 || block[i] == 0) {
            diag_error(d, TSL_ERR_ARG, "CUDA launch with an empty grid or block (%ux%ux%u, %ux%ux%u)",
                       grid[0], grid[1], grid[2], block[0], block[1], block[2]);
            return TSL_ERR_ARG;
        }
    }
    if ((st = cuda_smem_allow(dev, (CUfunction)f, shared_bytes, d)) != TSL_OK) return st;
    st = CU_TRY(d, dev,
                LaunchKernel((CUfunction)f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                             shared_bytes, dev->stream, params, NULL));
    if (st != TSL_OK)
        diag_error(d, st, "kernel launch failed (grid %ux%ux%u, block %ux%ux%u, %u bytes shared)",
                   grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes);
    return st;
}

int rt_cuda_cluster_blocks(rt_cuda_device *dev, rt_cuda_function f, int cluster, unsigned threads, unsigned shared_bytes)
{
    int sms = dev->info.sm_count;
    if (cluster < 2) return sms;
    int n = 0;
    tsl_diag scratch = {0};
    if (cuda_enter(dev, &scratch) == TSL_OK && cuda_smem_allow(dev, (CUfunction)f, shared_bytes, &scratch) == TSL_OK) {
        CUlaunchConfig c = {.gridDimX = (unsigned)cluster, .gridDimY = 1, .gridDimZ = 1, .blockDimX = threads,
                            .blockDimY = 1, .blockDimZ = 1, .sharedMemBytes = shared_bytes, .hStream = dev->stream};
        if (cu.OccupancyMaxActiveClusters(&n, (CUfunction)f, &c) != CUDA_SUCCESS) n = 0;
    }
    diag_free(&scratch);
    if (n > 0) return n * cluster;
    return sms >= cluster ? sms / cluster * cluster : cluster;
}

tsl_status rt_cuda_synchronize(rt_cuda_device *dev, tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    return st != TSL_OK ? st : CU_TRY(d, dev, CtxSynchronize());
}

/* ---- memory -------------------------------------------------------------- */

tsl_status rt_cuda_alloc(rt_cuda_device *dev, size_t bytes, rt_cuda_ptr *out, tsl_diag *d)
{
    *out = 0;
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK) return st;
    CUdeviceptr p = 0;
    CUresult r = cu.MemAlloc(&p, bytes ? bytes : 1);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        diag_error(d, TSL_ERR_NOMEM,
                   "out of GPU memory: allocating %zu bytes (%.2f GiB) on device %d (%s) failed",
                   bytes, (double)bytes / (1u << 30), dev->info.ordinal, dev->info.name);
        return TSL_ERR_NOMEM;
    }
    if ((st = cuda_check(d, dev, r, "cuMemAlloc_v2", __FILE__, __LINE__)) != TSL_OK) return st;
    *out = p;
    return TSL_OK;
}

void rt_cuda_free(rt_cuda_device *dev, rt_cuda_ptr p)
{
    if (!p || dev->poisoned) return;
    if (cuda_make_current(dev) == CUDA_SUCCESS) cu.MemFree(p);
}

tsl_status rt_cuda_copy_htod(rt_cuda_device *dev, rt_cuda_ptr dst, const void *src, size_t n,
                             tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK || n == 0) return st;
    return CU_TRY(d, dev, MemcpyHtoD(dst, src, n));
}

tsl_status rt_cuda_copy_dtoh(rt_cuda_device *dev, void *dst, rt_cuda_ptr src, size_t n,
                             tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK || n == 0) return st;
    return CU_TRY(d, dev, MemcpyDtoH(dst, src, n));
}

tsl_status rt_cuda_copy_dtod(rt_cuda_device *dev, rt_cuda_ptr dst, rt_cuda_ptr src, size_t n,
                             tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK || n == 0) return st;
    return CU_TRY(d, dev, MemcpyDtoD(dst, src, n));
}

tsl_status rt_cuda_memset8(rt_cuda_device *dev, rt_cuda_ptr dst, unsigned char v, size_t n,
                           tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK || n == 0) return st;
    return CU_TRY(d, dev, MemsetD8(dst, v, n));
}

/* ---- events ---------------------------------------------------------------- */

tsl_status rt_cuda_event_create(rt_cuda_device *dev, rt_cuda_event **out, tsl_diag *d)
{
    *out = NULL;
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK) return st;
    CUevent e = NULL;
    if ((st = CU_TRY(d, dev, EventCreate(&e, CU_EVENT_DEFAULT))) != TSL_OK) return st;
    *out = (rt_cuda_event *)e;
    return TSL_OK;
}

tsl_status rt_cuda_event_record(rt_cuda_device *dev, rt_cuda_event *e, tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    return st != TSL_OK ? st : CU_TRY(d, dev, EventRecord((CUevent)e, NULL));
}

tsl_status rt_cuda_event_elapsed(rt_cuda_device *dev, rt_cuda_event *start, rt_cuda_event *end,
                                 float *ms, tsl_diag *d)
{
    *ms = 0;
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK) return st;
    if ((st = CU_TRY(d, dev, EventSynchronize((CUevent)end))) != TSL_OK) return st;
    return CU_TRY(d, dev, EventElapsedTime(ms, (CUevent)start, (CUevent)end));
}

void rt_cuda_event_destroy(rt_cuda_device *dev, rt_cuda_event *e)
{
    if (!e || dev->poisoned) return;
    if (cuda_make_current(dev) == CUDA_SUCCESS) cu.EventDestroy((CUevent)e);
}

/* ---- streams --------------------------------------------------------------
 * The caller's stream (a CUstream of this device's primary context, or NULL
 * for the legacy default stream) for launches and the async calls below. A
 * stream of another context is refused: launching on it would fail or run
 * on the wrong device. The handles 0x1 (legacy) and 0x2 (per-thread default)
 * belong to whatever context is current, which is this device's. */

tsl_status rt_cuda_set_stream(rt_cuda_device *dev, void *stream, tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK) return st;
    uintptr_t h = (uintptr_t)stream;
    int capturing = 0;
    /* whether it is capturing can change from one run to the next: asked
     * every time (a capture-safe query). A stream being captured into a
     * graph is asked nothing else; its context goes unchecked */
    if (h > 2 && cu.StreamIsCapturing((CUstream)stream, &capturing) != CUDA_SUCCESS) {
        capturing = 0;
        dev->checked = NULL;
    }
    /* its context cannot change, so the handle checked last is not asked
     * again. The handle of a stream destroyed since may have been reused
     * by a stream of another context: then its first launch fails, which
     * forgets the handle (cuda_check), and the next run's set refuses it */
    if (h > 2 && !capturing && (CUstream)stream != dev->checked) {
        CUcontext c = NULL;
        CUresult r = cu.StreamGetCtx((CUstream)stream, &c);
        if (r != CUDA_SUCCESS) return cuda_check(d, dev, r, "cuStreamGetCtx", __FILE__, __LINE__);
        if (c != dev->ctx) {
            diag_error(d, TSL_ERR_ARG,
                       "the CUDA stream %p belongs to another context than device %d's primary context "
                       "(tessel runs on the primary context of device %d, %s)",
                       stream, dev->info.ordinal, dev->info.ordinal, dev->info.name);
            return TSL_ERR_ARG;
        }
        dev->checked = (CUstream)stream;
    }
    dev->stream = (CUstream)stream;
    dev->capturing = capturing;
    return TSL_OK;
}

void *rt_cuda_stream(const rt_cuda_device *dev) { return dev->stream; }
int rt_cuda_stream_capturing(const rt_cuda_device *dev) { return dev->capturing; }

tsl_status rt_cuda_stream_synchronize(rt_cuda_device *dev, tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    return st != TSL_OK ? st : CU_TRY(d, dev, StreamSynchronize(dev->stream));
}

tsl_status rt_cuda_memset8_async(rt_cuda_device *dev, rt_cuda_ptr dst, unsigned char v, size_t n, tsl_diag *d)
{
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK || n == 0) return st;
    return CU_TRY(d, dev, MemsetD8Async(dst, v, n, dev->stream));
}

tsl_status rt_cuda_alloc_async(rt_cuda_device *dev, size_t bytes, rt_cuda_ptr *out, tsl_diag *d)
{
    *out = 0;
    tsl_status st = cuda_enter(dev, d);
    if (st != TSL_OK) return st;
    CUdeviceptr p = 0;
    CUresult r = cu.MemAllocAsync(&p, bytes ? bytes : 1, dev->stream);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        diag_error(d, TSL_ERR_NOMEM,
                   "out of GPU memory: allocating %zu bytes (%.2f GiB) on device %d (%s) failed",
                   bytes, (double)bytes / (1u << 30), dev->info.ordinal, dev->info.name);
        return TSL_ERR_NOMEM;
    }
    if ((st = cuda_check(d, dev, r, "cuMemAllocAsync", __FILE__, __LINE__)) != TSL_OK) return st;
    *out = p;
    return TSL_OK;
}

void rt_cuda_free_async(rt_cuda_device *dev, rt_cuda_ptr p)
{
    if (!p || dev->poisoned) return;
    if (cuda_make_current(dev) == CUDA_SUCCESS) cu.MemFreeAsync(p, dev->stream);
}
