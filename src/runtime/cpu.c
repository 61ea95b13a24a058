/* cpu.c — the CPU runtime's compile path: find the system C compiler at run
 * time, compile generated C in a private folder into a shared object kept
 * in the per-user cache (cache.c, kind "cpu"), and load it from a memory
 * file only this process holds. The key hashes the source, the compiler's
 * identity (its `--version` first line, asked once per process), the flags
 * and the CPU's instruction-set level, so a second compile of the same
 * source runs no compiler and a cache shared between machines never runs
 * instructions a CPU lacks. A cached object that is damaged or incomplete
 * is a miss (with the cache's warning) and is rebuilt. The thread pool
 * lives in pool.c. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <time.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/runtime.h"

extern char **environ;

/* The flags every kernel is built with; part of the cache key.
 * -fno-math-errno: kernels never read errno, and with it sqrtf is an
 * instruction the compiler vectorizes (sqrt and rsqrt loops; c_vmath.c
 * has exp, log, tanh, sigmoid and erf). -fno-trapping-math: kernels never
 * read the floating-point exception flags; without it GCC (12) will not
 * if-convert a float compare that may raise one, so c_vmath's selects
 * (`x > 88.7f ? inf : y`) stay branches and no loop calling them is
 * vectorized (softmax 4096^2 f32, 1 core: 362 -> 84 ms). It permits no
 * reassociation or contraction: results are the same bits. */
static const char *const cpu_flags[] = {"-O3",   "-march=native", "-fno-math-errno", "-fno-trapping-math",
                                        "-fPIC", "-shared",       "-std=c11"};
static const char *const cpu_link_flags[] = {"-lm"};

enum { CPU_MAX_ARGS = 64, CPU_MSG_MAX = 4000 };

struct rt_cpu_module {
    void *handle;
    char *path;
    int fd; /* the memory file it was loaded from: held while loaded (below) */
};

static _Atomic long cpu_compiles;

long rt_cpu_compile_count(void)
{
    return atomic_load(&cpu_compiles);
}

/* ---- running a process ------------------------------------------------ */

/* How long one compiler run may take: $TESSEL_CC_TIMEOUT seconds, else
 * 600 (a kernel compiles in well under a minute even on a loaded machine;
 * a compiler that never returns must not hang the caller forever). */
static double cpu_deadline_s(void)
{
    const char *e = rt_settings_get()->cc_timeout;
    char *end;
    double s = e ? strtod(e, &end) : 0;
    return e && *e && !*end && s > 0 ? s : 600;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Run argv (argv[0] a path) with stdout and stderr captured into `out`, in
 * a process group of its own. Returns the exit status, 128+signal when
 * killed, -1 with errno when the process could not be started, or
 * CPU_TIMED_OUT when it ran past the deadline: then the whole group (the
 * driver and its cc1/as/ld) is killed. */
enum { CPU_TIMED_OUT = -2 };

static int cpu_run(char *const argv[], strbuf *out)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        errno = rc;
        return -1;
    }
    double end = cpu_now() + cpu_deadline_s();
    int timed_out = 0;
    char buf[4096];
    for (;;) {
        double left = end - cpu_now();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int n = poll(&p, 1, left > 1000 ? 1000000 : (int)(left * 1000) + 1);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) continue;
        ssize_t r = read(fds[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        sb_putn(out, buf, (size_t)r);
    }
    close(fds[0]);
    if (timed_out) kill(-pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    if (timed_out) return CPU_TIMED_OUT;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

/* ---- finding the compiler --------------------------------------------- */

static int cpu_is_executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* A malloc'd full path of `name` (searched on PATH unless it has a '/'),
 * or NULL. */
static char *cpu_which(const char *name)
{
    if (strchr(name, '/')) return cpu_is_executable(name) ? strdup(name) : NULL;
    const char *path = rt_settings_get()->path;
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        strbuf b = {0};
        if (len == 0) sb_puts(&b, ".");
        else sb_putn(&b, path, len);
        sb_printf(&b, "/%s", name);
        char *full = sb_take(&b);
        if (cpu_is_executable(full)) return full;
        free(full);
        path += len;
        if (*path == ':') path++;
    }
    return NULL;
}

/* The compiler command: words[0] is a full path, then any extra words from
 * $TESSEL_CC ("ccache gcc" is not split into a wrapper: only the first word
 * is the program, the rest are its leading arguments). */
typedef struct cpu_cc {
    char *words[8];
    int nwords;
    char *text; /* the command as one string, for the key and messages */
} cpu_cc;

static void cpu_cc_free(cpu_cc *cc)
{
    for (int i = 0; i < cc->nwords; i++) free(cc->words[i]);
    free(cc->text);
}

static tsl_status cpu_find_cc(cpu_cc *cc, tsl_diag *d)
{
    memset(cc, 0, sizeof *cc);
    const char *env = rt_settings_get()->cc;
    if (env && *env) {
        const char *p = env;
        while (*p && cc->nwords < (int)TSL_COUNTOF(cc->words)) {
            while (*p == ' ' || *p == '\t') p++;
            if (!*p) break;
            const char *s = p;
            while (*p && *p != ' ' && *p != '\t') p++;
            cc->words[cc->nwords++] = strndup(s, (size_t)(p - s));
        }
    }
    if (cc->nwords > 0) {
        char *full = cpu_which(cc->words[0]);
        if (!full) {
            diag_error(d, TSL_ERR_UNAVAILABLE,
                       "TESSEL_CC='%s': '%s' is not an executable file%s; set TESSEL_CC to "
                       "a C compiler (e.g. TESSEL_CC=gcc) or unset it to search for cc, gcc "
                       "and clang on PATH",
                       env, cc->words[0], strchr(cc->words[0], '/') ? "" : " on PATH");
            cpu_cc_free(cc);
            return TSL_ERR_UNAVAILABLE;
        }
        free(cc->words[0]);
        cc->words[0] = full;
    } else {
        static const char *const tries[] = {"cc", "gcc", "clang"};
        for (size_t i = 0; i < TSL_COUNTOF(tries) && cc->nwords == 0; i++) {
            char *full = cpu_which(tries[i]);
            if (full) cc->words[cc->nwords++] = full;
        }
        if (cc->nwords == 0) {
            const char *path = rt_settings_get()->path;
            diag_error(d, TSL_ERR_UNAVAILABLE,
                       "no C compiler found: tried cc, gcc and clang on PATH (%s); install one "
                       "or set TESSEL_CC to a C compiler's path",
                       path ? path : "unset");
            return TSL_ERR_UNAVAILABLE;
        }
    }
    strbuf b = {0};
    for (int i = 0; i < cc->nwords; i++) sb_printf(&b, "%s%s", i ? " " : "", cc->words[i]);
    cc->text = sb_take(&b);
    return TSL_OK;
}

/* The first line of `<cc> --version`, remembered per command for the life
 * of the process and in the cache (kind "ccid"), the key hashing the
 * command and the compiler file's identity (device, inode, size, mtime), so
 * a cache hit in a new process spawns nothing. Gives a
 * malloc'd string ("unknown" if the compiler cannot tell). */
static char *cpu_cc_identity(const cpu_cc *cc)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static struct {
        char *cmd, *id;
    } memo[8];
    static int nmemo;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nmemo; i++) {
        if (strcmp(memo[i].cmd, cc->text) == 0) {
            char *id = strdup(memo[i].id);
            pthread_mutex_unlock(&mu);
            return id;
        }
    }
    pthread_mutex_unlock(&mu);

    char *id = NULL, key[33] = "";
    struct stat st;
    if (stat(cc->words[0], &st) == 0) {
        int64_t fid[5] = {(int64_t)st.st_dev, (int64_t)st.st_ino, (int64_t)st.st_size,
                          (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec};
        rt_key_part parts[] = {{cc->text, strlen(cc->text)}, {fid, sizeof fid}};
        rt_cache_key(parts, 2, key);
        rt_cache_entry e;
        if (rt_cache_get("ccid", key, &e) && e.note && *e.note && !strchr(e.note, '\n')) id = strdup(e.note);
        rt_cache_entry_free(&e);
    }
    if (!id) {
        char *argv[CPU_MAX_ARGS];
        int argc = 0;
        for (int i = 0; i < cc->nwords; i++) argv[argc++] = cc->words[i];
        argv[argc++] = "--version";
        argv[argc] = NULL;
        strbuf out = {0};
        int rc = cpu_run(argv, &out);
        const char *s = sb_str(&out);
        size_t len = strcspn(s, "\n");
        if (rc == 0 && len > 0) {
            id = strndup(s, len);
            if (*key) rt_cache_put("ccid", key, cc->text, NULL, id, NULL, 0);
        } else {
            id = strdup("unknown");
        }
        sb_free(&out);
    }

    pthread_mutex_lock(&mu);
    if (nmemo < (int)TSL_COUNTOF(memo)) {
        memo[nmemo].cmd = strdup(cc->text);
        memo[nmemo].id = strdup(id);
        nmemo++;
    }
    pthread_mutex_unlock(&mu);
    return id;
}

/* ---- the instruction-set level ---------------------------------------- */

/* Kernels are built with -march=native, so a binary is only good on a CPU
 * with the same instruction set: the level is part of every CPU cache key
 * (a cache shared between machines never runs instructions a CPU lacks).
 * It is the machine and the hash of the kernel's feature flags (the first
 * `flags`/`Features` line of /proc/cpuinfo), with the vector level spelled
 * out for people: "x86_64 avx512 5b1c..." */
static char cpu_isa_text[96];

static void cpu_isa_probe(void)
{
    const char *machine = "?";
#if defined(__x86_64__)
    machine = "x86_64";
#elif defined(__aarch64__)
    machine = "aarch64";
#endif
    const char *level = "";
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    level = __builtin_cpu_supports("avx512f") ? "avx512" : __builtin_cpu_supports("avx2") ? "avx2"
            : __builtin_cpu_supports("avx") ? "avx" : "sse";
#endif
    uint64_t h = HASH_SEED;
    size_t n = 0;
    char *info = file_read_all("/proc/cpuinfo", &n);
    const char *line = NULL;
    for (const char *p = info; p && *p && !line; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, "flags", 5) || !strncmp(p, "Features", 8)) line = p;
    if (line) h = hash_bytes(h, line, strcspn(line, "\n"));
    free(info);
    snprintf(cpu_isa_text, sizeof cpu_isa_text, "%s %s %016llx", machine, level, (unsigned long long)h);
}

const char *rt_cpu_isa(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, cpu_isa_probe);
    return cpu_isa_text;
}

/* ---- which compiler (tessel --version) --------------------------------- */

tsl_status rt_cpu_compiler(char **out, tsl_diag *d)
{
    *out = NULL;
    cpu_cc cc;
    tsl_status st = cpu_find_cc(&cc, d);
    if (st) return st;
    char *id = cpu_cc_identity(&cc);
    strbuf b = {0};
    sb_printf(&b, "%s (%s)", cc.text, id ? id : "unknown");
    *out = sb_take(&b);
    free(id);
    cpu_cc_free(&cc);
    return *out ? TSL_OK : TSL_ERR_NOMEM;
}

/* ---- compile errors ---------------------------------------------------- */

/* Replace every occurrence of `from` in `s` by `to`; gives a malloc'd string. */
static char *cpu_replace_all(const char *s, const char *from, const char *to)
{
    strbuf b = {0};
    size_t fl = strlen(from);
    const char *p;
    while (fl && (p = strstr(s, from))) {
        sb_putn(&b, s, (size_t)(p - s));
        sb_puts(&b, to);
        s = p + fl;
    }
    sb_puts(&b, s);
    return sb_take(&b);
}

/* The 1-based `line` of `source` as a pointer and length; 0 if none. */
static size_t cpu_source_line(const char *source, long line, const char **start)
{
    const char *p = source;
    for (long l = 1; l < line && p; l++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p || !*p) return 0;
    *start = p;
    return strcspn(p, "\n");
}

/* TSL_ERR_COMPILE with the compiler's output (trimmed) and the source line
 * of the first `name:LINE:COL: error` it names. */
static void cpu_compile_error(tsl_diag *d, const cpu_cc *cc, int rc, const char *output,
                              const char *name, const char *source)
{
    strbuf b = {0};
    size_t len = strlen(output);
    while (len > 0 && (output[len - 1] == '\n' || output[len - 1] == ' ')) len--;
    if (len > CPU_MSG_MAX) {
        sb_putn(&b, output, CPU_MSG_MAX);
        sb_printf(&b, "\n... (%zu more bytes of compiler output)", len - CPU_MSG_MAX);
    } else {
        sb_putn(&b, output, len);
    }
    /* find "name:LINE:" on a line that says "error" */
    size_t nl = strlen(name);
    long line = 0;
    for (const char *p = output; (p = strstr(p, name)) != NULL; p += nl) {
        if (p != output && p[-1] != '\n') continue;
        const char *q = p + nl;
        if (*q != ':') continue;
        char *end;
        long l = strtol(q + 1, &end, 10);
        if (end == q + 1 || *end != ':') continue;
        size_t eol = strcspn(p, "\n");
        const char *err = strstr(p, "error");
        if (err && err < p + eol) {
            line = l;
            break;
        }
    }
    const char *ls;
    size_t ll = line > 0 ? cpu_source_line(source, line, &ls) : 0;
    if (ll > 0) sb_printf(&b, "\nin the generated source, %s:%ld:\n%5ld | %.*s", name, line, line, (int)ll, ls);
    diag_error(d, TSL_ERR_COMPILE, "C compiler '%s' failed on %s (exit status %d):\n%s",
               cc->text, name, rc, sb_str(&b));
    sb_free(&b);
}

/* ---- compile ------------------------------------------------------------ */

/* Whether `data` is a whole 64-bit ELF object: every program segment and
 * the section header table lie inside it. dlopen maps segments past the
 * end of a truncated file and then faults (SIGBUS) on touching them, so
 * every object is checked before it is loaded. */
static int cpu_elf_complete(const void *data, size_t size)
{
    Elf64_Ehdr eh;
    if (size < sizeof eh) return 0;
    memcpy(&eh, data, sizeof eh);
    int ok = memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
             eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phoff <= size &&
             (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) <= size - eh.e_phoff;
    if (ok && eh.e_shnum > 0)
        ok = eh.e_shoff <= size && (uint64_t)eh.e_shnum * eh.e_shentsize <= size - eh.e_shoff;
    for (int i = 0; ok && i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, (const char *)data + eh.e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
        ok = ph.p_offset <= size && ph.p_filesz <= size - ph.p_offset;
    }
    return ok;
}

/* A whole regular file (what the compiler wrote); NULL otherwise. */
static void *cpu_read_file(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        buf = malloc((size_t)st.st_size);
        size_t got = 0;
        while (buf && got < (size_t)st.st_size) {
            ssize_t r = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (buf && got == (size_t)st.st_size) {
            *n = got;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    close(fd);
    return buf;
}

tsl_status rt_cpu_load(const void *so, size_t size, const char *name, rt_cpu_module **out, tsl_diag *d)
{
    *out = NULL;
    if (!cpu_elf_complete(so, size)) {
        diag_error(d, TSL_ERR_RUNTIME, "cannot load the compiled kernel %s: it is not a complete ELF object",
                   name ? name : "");
        return TSL_ERR_RUNTIME;
    }
    /* The object is loaded from a file only this process holds: an
     * anonymous memory file, so nothing on disk can be swapped in between
     * the check and the load. */
    int fd = memfd_create("tessel-kernel", MFD_CLOEXEC);
    if (fd < 0) {
        diag_error(d, TSL_ERR_RUNTIME, "cannot load the compiled kernel %s: memfd_create: %s", name ? name : "",
                   strerror(errno));
        return TSL_ERR_RUNTIME;
    }
    const char *p = so;
    size_t left = size;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            diag_error(d, TSL_ERR_RUNTIME, "cannot load the compiled kernel %s: write: %s", name ? name : "",
                       strerror(errno));
            close(fd);
            return TSL_ERR_RUNTIME;
        }
        p += w;
        left -= (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    /* The fd stays open while the object is loaded: the loader knows an
     * object by its path, and a closed fd's number (so its path) is handed
     * to the next memfd, which dlopen would take for the one loaded. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        close(fd);
        const char *err = dlerror();
        diag_error(d, TSL_ERR_RUNTIME, "cannot load the compiled kernel %s: %s", name ? name : "",
                   err ? err : "unknown dlopen error");
        return TSL_ERR_RUNTIME;
    }
    rt_cpu_module *m = calloc(1, sizeof *m);
    if (!m) {
        dlclose(h);
        close(fd);
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    m->handle = h;
    m->fd = fd;
    m->path = strdup(name ? name : "kernel");
    *out = m;
    return TSL_OK;
}

/* Compile `source` in a folder of this process's own (so nothing another
 * process or user does to the cache can interfere, and deleting the cache
 * mid-run breaks nothing) into a shared object's bytes. */
static tsl_status cpu_build(const cpu_cc *cc, const char *name, const char *source, void **so, size_t *size,
                            tsl_diag *d)
{
    const char *tmpdir = rt_settings_get()->tmpdir;
    strbuf b = {0};
    sb_printf(&b, "%s/tessel-build-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    char *dir = sb_take(&b);
    if (!mkdtemp(dir)) {
        diag_error(d, TSL_ERR_IO, "cannot make a build folder '%s': %s", dir, strerror(errno));
        free(dir);
        return TSL_ERR_IO;
    }
    sb_printf(&b, "%s/kernel.c", dir);
    char *c_path = sb_take(&b);
    sb_printf(&b, "%s/kernel.so", dir);
    char *so_path = sb_take(&b);
    tsl_status st = TSL_OK;
    int fd = open(c_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    size_t len = strlen(source), off = 0;
    while (fd >= 0 && off < len) {
        ssize_t w = write(fd, source + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    if (fd < 0 || off < len || close(fd) != 0) {
        diag_error(d, TSL_ERR_IO, "cannot write the kernel source '%s': %s", c_path, strerror(errno));
        st = TSL_ERR_IO;
    }
    if (!st) {
        char *argv[CPU_MAX_ARGS];
        int argc = 0;
        for (int i = 0; i < cc->nwords; i++) argv[argc++] = cc->words[i];
        for (size_t i = 0; i < TSL_COUNTOF(cpu_flags); i++) argv[argc++] = (char *)cpu_flags[i];
        argv[argc++] = "-o";
        argv[argc++] = so_path;
        argv[argc++] = c_path;
        for (size_t i = 0; i < TSL_COUNTOF(cpu_link_flags); i++) argv[argc++] = (char *)cpu_link_flags[i];
        argv[argc] = NULL;
        strbuf out = {0};
        atomic_fetch_add(&cpu_compiles, 1);
        int rc = cpu_run(argv, &out);
        if (rc == CPU_TIMED_OUT) {
            diag_error(d, TSL_ERR_COMPILE,
                       "C compiler '%s' did not finish %s within %g s; it was stopped (TESSEL_CC_TIMEOUT sets the "
                       "deadline in seconds)",
                       cc->text, name, cpu_deadline_s());
            st = TSL_ERR_COMPILE;
        } else if (rc < 0) {
            diag_error(d, TSL_ERR_UNAVAILABLE, "cannot run the C compiler '%s': %s", cc->text, strerror(errno));
            st = TSL_ERR_UNAVAILABLE;
        } else if (rc != 0) {
            char *msg = cpu_replace_all(sb_str(&out), c_path, name);
            cpu_compile_error(d, cc, rc, msg, name, source);
            free(msg);
            st = TSL_ERR_COMPILE;
        } else if (!(*so = cpu_read_file(so_path, size)) || !cpu_elf_complete(*so, *size)) {
            free(*so);
            *so = NULL;
            diag_error(d, TSL_ERR_RUNTIME, "the C compiler's output for %s is not a complete shared object", name);
            st = TSL_ERR_RUNTIME;
        }
        sb_free(&out);
    }
    unlink(so_path);
    unlink(c_path);
    rmdir(dir);
    free(so_path);
    free(c_path);
    free(dir);
    return st;
}

tsl_status rt_cpu_build(const char *source, const char *name_hint, void **so, size_t *size, tsl_diag *d)
{
    tsl_diag scratch = {0};
    if (!d) d = &scratch;
    *so = NULL;
    *size = 0;
    if (!source) {
        diag_error(d, TSL_ERR_ARG, "rt_cpu_build: source is NULL");
        diag_free(&scratch);
        return TSL_ERR_ARG;
    }
    const char *name = name_hint && *name_hint ? name_hint : "kernel.c";
    cpu_cc cc;
    tsl_status st = cpu_find_cc(&cc, d);
    if (st != TSL_OK) {
        diag_free(&scratch);
        return st;
    }
    char *id = cpu_cc_identity(&cc);
    strbuf flags = {0};
    for (size_t i = 0; i < TSL_COUNTOF(cpu_flags); i++) sb_printf(&flags, "%s ", cpu_flags[i]);
    for (size_t i = 0; i < TSL_COUNTOF(cpu_link_flags); i++) sb_printf(&flags, "%s ", cpu_link_flags[i]);
    const char *isa = rt_cpu_isa();
    rt_key_part parts[] = {
        {source, strlen(source)}, {id, strlen(id)}, {cc.text, strlen(cc.text)}, {sb_str(&flags), flags.len},
        {isa, strlen(isa)},
    };
    char key[33];
    rt_cache_key(parts, (int)TSL_COUNTOF(parts), key);
    sb_free(&flags);
    /* the cache's copy, checksummed and checked whole; else compile */
    rt_cache_entry e;
    int hit = rt_cache_get("cpu", key, &e);
    if (hit && !cpu_elf_complete(e.data, e.size)) {
        rt_warn("kernel cache entry cpu/%s is not a complete shared object; rebuilding it", key);
        hit = 0;
    }
    rt_stats *rs = rt_stats_here();
    if (hit) {
        *so = e.data;
        *size = e.size;
        e.data = NULL;
        rs->cached++;
    } else {
        double t0 = rt_now_ms();
        st = cpu_build(&cc, name, source, so, size, d);
        if (!st) rt_cache_put("cpu", key, name, source, id, *so, *size);
        if (!st) rs->compiled++;
        rs->compile_ms += rt_now_ms() - t0;
    }
    rt_cache_entry_free(&e);
    free(id);
    cpu_cc_free(&cc);
    diag_free(&scratch);
    return st;
}

const char *rt_cpu_toolchain(void)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char *memo;
    pthread_mutex_lock(&mu);
    if (!memo) {
        cpu_cc cc;
        strbuf b = {0};
        if (cpu_find_cc(&cc, NULL) == TSL_OK) {
            char *id = cpu_cc_identity(&cc);
            sb_printf(&b, "%s\n%s\n", cc.text, id);
            free(id);
            cpu_cc_free(&cc);
        } else {
            sb_puts(&b, "no compiler\n");
        }
        for (size_t i = 0; i < TSL_COUNTOF(cpu_flags); i++) sb_printf(&b, "%s ", cpu_flags[i]);
        sb_printf(&b, "\n%s", rt_cpu_isa());
        memo = sb_take(&b);
    }
    pthread_mutex_unlock(&mu);
    return memo ? memo : "";
}

tsl_status rt_cpu_compile(const char *source, const char *name_hint, rt_cpu_module **out, tsl_diag *d)
{
    *out = NULL;
    void *so = NULL;
    size_t n = 0;
    tsl_status st = rt_cpu_build(source, name_hint, &so, &n, d);
    if (!st) st = rt_cpu_load(so, n, name_hint && *name_hint ? name_hint : "kernel.c", out, d);
    free(so);
    return st;
}

void *rt_cpu_symbol(rt_cpu_module *m, const char *name, tsl_diag *d)
{
    (void)dlerror();
    void *p = dlsym(m->handle, name);
    if (!p) {
        const char *err = dlerror();
        if (d)
            diag_error(d, TSL_ERR_RUNTIME, "symbol '%s' not found in compiled kernel '%s': %s",
                       name, m->path, err ? err : "the symbol's value is NULL");
    }
    return p;
}

const char *rt_cpu_module_path(const rt_cpu_module *m)
{
    return m->path;
}

void rt_cpu_module_free(rt_cpu_module *m)
{
    if (!m) return;
    dlclose(m->handle);
    close(m->fd);
    free(m->path);
    free(m);
}
