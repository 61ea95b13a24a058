/* cpu.c — the CPU runtime's compile path: find the system C compiler at run
 * time, compile generated C into a shared object kept in the per-user cache
 * (cpu/<key>.so), and dlopen it. The key hashes the source, the compiler's
 * identity (its `--version` first line, asked once per process) and the
 * flags, so a second compile of the same source runs no compiler. A cached
 * object that fails to load (truncated, foreign) is deleted and rebuilt
 * once. The thread pool lives in pool.c. */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/runtime.h"

extern char **environ;

/* The flags every kernel is built with; part of the cache key. */
static const char *const cpu_flags[] = {"-O3", "-march=native", "-fPIC", "-shared", "-std=c11"};
static const char *const cpu_link_flags[] = {"-lm"};

enum { CPU_MAX_ARGS = 64, CPU_MSG_MAX = 4000 };

struct rt_cpu_module {
    void *handle;
    char *path;
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
    const char *e = getenv("TESSEL_CC_TIMEOUT");
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
    const char *path = getenv("PATH");
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
    const char *env = getenv("TESSEL_CC");
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
            const char *path = getenv("PATH");
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
 * of the process and on disk in the cache folder as cpu/cc-<key>.id, the
 * key hashing the command and the compiler file's identity (device, inode,
 * size, mtime), so a cache hit in a new process spawns nothing. Gives a
 * malloc'd string ("unknown" if the compiler cannot tell). */
static char *cpu_cc_identity(const cpu_cc *cc, const char *dir)
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

    char *id = NULL, *id_path = NULL;
    struct stat st;
    if (stat(cc->words[0], &st) == 0) {
        int64_t fid[5] = {(int64_t)st.st_dev, (int64_t)st.st_ino, (int64_t)st.st_size,
                          (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec};
        rt_key_part parts[] = {{cc->text, strlen(cc->text)}, {fid, sizeof fid}};
        char key[33];
        rt_cache_key(parts, 2, key);
        strbuf b = {0};
        sb_printf(&b, "%s/cc-%s.id", dir, key);
        id_path = sb_take(&b);
        size_t n = 0;
        id = file_read_all(id_path, &n);
        if (id && (n == 0 || strchr(id, '\n'))) { /* not one written by us */
            free(id);
            id = NULL;
        }
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
            if (id_path) rt_cache_write(id_path, id, len, NULL); /* best effort */
        } else {
            id = strdup("unknown");
        }
        sb_free(&out);
    }
    free(id_path);

    pthread_mutex_lock(&mu);
    if (nmemo < (int)TSL_COUNTOF(memo)) {
        memo[nmemo].cmd = strdup(cc->text);
        memo[nmemo].id = strdup(id);
        nmemo++;
    }
    pthread_mutex_unlock(&mu);
    return id;
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

/* Whether the file at `path` is a whole 64-bit ELF object: every program
 * segment and the section header table lie inside the file. dlopen maps
 * segments past the end of a truncated file and then faults (SIGBUS) on
 * touching them, so a cached object is checked before it is loaded. */
static int cpu_elf_complete(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    Elf64_Ehdr eh;
    int ok = fstat(fd, &st) == 0 && pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
             memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
             eh.e_phentsize == sizeof(Elf64_Phdr);
    uint64_t size = ok ? (uint64_t)st.st_size : 0;
    if (ok && eh.e_shnum > 0)
        ok = eh.e_shoff <= size && (uint64_t)eh.e_shnum * eh.e_shentsize <= size - eh.e_shoff;
    for (int i = 0; ok && i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        ok = pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) ==
                 (ssize_t)sizeof ph &&
             ph.p_offset <= size && ph.p_filesz <= size - ph.p_offset;
    }
    close(fd);
    return ok;
}

static tsl_status cpu_dlopen(const char *path, rt_cpu_module **out)
{
    if (!cpu_elf_complete(path)) return TSL_ERR_RUNTIME;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return TSL_ERR_RUNTIME;
    rt_cpu_module *m = calloc(1, sizeof *m);
    m->handle = h;
    m->path = strdup(path);
    *out = m;
    return TSL_OK;
}

/* Run the compiler on `c_path` into the cache's `so_path` (through a temp
 * file renamed into place). */
static tsl_status cpu_build(const cpu_cc *cc, const char *c_path, const char *so_path,
                            const char *name, const char *source, tsl_diag *d)
{
    static _Atomic unsigned long seq;
    strbuf b = {0};
    sb_printf(&b, "%s.tmp.%ld.%lu", so_path, (long)getpid(), (unsigned long)++seq);
    char *tmp = sb_take(&b);
    char *argv[CPU_MAX_ARGS];
    int argc = 0;
    for (int i = 0; i < cc->nwords; i++) argv[argc++] = cc->words[i];
    for (size_t i = 0; i < TSL_COUNTOF(cpu_flags); i++) argv[argc++] = (char *)cpu_flags[i];
    argv[argc++] = "-o";
    argv[argc++] = tmp;
    argv[argc++] = (char *)c_path;
    for (size_t i = 0; i < TSL_COUNTOF(cpu_link_flags); i++)
        argv[argc++] = (char *)cpu_link_flags[i];
    argv[argc] = NULL;

    strbuf out = {0};
    atomic_fetch_add(&cpu_compiles, 1);
    int rc = cpu_run(argv, &out);
    tsl_status st = TSL_OK;
    if (rc == CPU_TIMED_OUT) {
        diag_error(d, TSL_ERR_COMPILE,
                   "C compiler '%s' did not finish %s within %g s; it was stopped (TESSEL_CC_TIMEOUT sets the "
                   "deadline in seconds)",
                   cc->text, name, cpu_deadline_s());
        st = TSL_ERR_COMPILE;
    } else if (rc < 0) {
        diag_error(d, TSL_ERR_UNAVAILABLE, "cannot run the C compiler '%s': %s", cc->text,
                   strerror(errno));
        st = TSL_ERR_UNAVAILABLE;
    } else if (rc != 0) {
        char *msg = cpu_replace_all(sb_str(&out), c_path, name);
        cpu_compile_error(d, cc, rc, msg, name, source);
        free(msg);
        st = TSL_ERR_COMPILE;
    } else if (rename(tmp, so_path) != 0) {
        diag_error(d, TSL_ERR_IO, "kernel cache: cannot rename '%s' to '%s': %s", tmp, so_path,
                   strerror(errno));
        st = TSL_ERR_IO;
    }
    if (st != TSL_OK) unlink(tmp);
    sb_free(&out);
    free(tmp);
    return st;
}

tsl_status rt_cpu_compile(const char *source, const char *name_hint, rt_cpu_module **out,
                          tsl_diag *d)
{
    tsl_diag scratch = {0};
    if (!d) d = &scratch;
    *out = NULL;
    if (!source) {
        diag_error(d, TSL_ERR_ARG, "rt_cpu_compile: source is NULL");
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
    char *dir = NULL, *so_path = NULL, *c_path = NULL;
    st = rt_cache_dir("cpu", &dir, d);
    if (st != TSL_OK) goto done;
    char *id = cpu_cc_identity(&cc, dir);
    strbuf flags = {0};
    for (size_t i = 0; i < TSL_COUNTOF(cpu_flags); i++) sb_printf(&flags, "%s ", cpu_flags[i]);
    for (size_t i = 0; i < TSL_COUNTOF(cpu_link_flags); i++)
        sb_printf(&flags, "%s ", cpu_link_flags[i]);
    rt_key_part parts[] = {
        {source, strlen(source)},
        {id, strlen(id)},
        {cc.text, strlen(cc.text)},
        {sb_str(&flags), flags.len},
    };
    char key[33];
    rt_cache_key(parts, (int)TSL_COUNTOF(parts), key);
    sb_free(&flags);
    free(id);

    strbuf b = {0};
    sb_printf(&b, "%s/%s.so", dir, key);
    so_path = sb_take(&b);
    sb_printf(&b, "%s/%s.c", dir, key);
    c_path = sb_take(&b);

    if (access(so_path, F_OK) == 0) {
        if (cpu_dlopen(so_path, out) == TSL_OK) goto done;
        /* A cached object that does not load is garbage: rebuild it once. */
        (void)dlerror();
        unlink(so_path);
    }
    st = rt_cache_write(c_path, source, strlen(source), d);
    if (st != TSL_OK) goto done;
    st = cpu_build(&cc, c_path, so_path, name, source, d);
    if (st != TSL_OK) goto done;
    if (cpu_dlopen(so_path, out) != TSL_OK) {
        const char *err = dlerror();
        diag_error(d, TSL_ERR_RUNTIME, "cannot load the compiled kernel '%s' (from %s): %s",
                   so_path, name, err ? err : "unknown dlopen error");
        st = TSL_ERR_RUNTIME;
    }
done:
    free(dir);
    free(so_path);
    free(c_path);
    cpu_cc_free(&cc);
    diag_free(&scratch);
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
    free(m->path);
    free(m);
}
