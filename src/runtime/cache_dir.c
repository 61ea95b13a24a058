/* cache_dir.c — the per-user directory where compiled kernels are kept
 * (cpu/<key>.so, cuda/<key>.cubin), atomic writes into it, and the content
 * keys that name its files. Several processes may share the directory: a
 * file appears only by rename(2) of a complete temp file, so a reader sees
 * either nothing or a whole file (corruption from outside is handled by
 * the callers, which rebuild what fails to load). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime.h"

/* mkdir -p with mode 0700; an existing directory is fine. */
static int cache_mkdirs(char *path)
{
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            int rc = mkdir(path, 0700);
            int err = errno;
            *p = c;
            if (rc != 0 && err != EEXIST) {
                errno = err;
                return -1;
            }
            if (c == '\0') break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

tsl_status rt_cache_dir(const char *sub, char **out, tsl_diag *d)
{
    strbuf b = {0};
    const char *env = getenv("TESSEL_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    const char *from;
    if (env && *env) {
        sb_puts(&b, env);
        from = "TESSEL_CACHE_DIR";
    } else if (xdg && *xdg) {
        sb_printf(&b, "%s/tessel", xdg);
        from = "XDG_CACHE_HOME";
    } else if (home && *home) {
        sb_printf(&b, "%s/.cache/tessel", home);
        from = "HOME";
    } else {
        sb_printf(&b, "/tmp/tessel-%u", (unsigned)getuid());
        from = "the default";
    }
    if (sub && *sub) sb_printf(&b, "/%s", sub);
    char *path = sb_take(&b);
    if (cache_mkdirs(path) != 0) {
        if (d)
            diag_error(d, TSL_ERR_IO,
                       "cannot create the kernel cache directory '%s' (from %s): %s; set "
                       "TESSEL_CACHE_DIR to a writable folder",
                       path, from, strerror(errno));
        free(path);
        return TSL_ERR_IO;
    }
    *out = path;
    return TSL_OK;
}

tsl_status rt_cache_write(const char *path, const void *data, size_t n, tsl_diag *d)
{
    /* The temp name is unique per process, thread and call. */
    static _Atomic unsigned long seq;
    strbuf b = {0};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    sb_printf(&b, "%s.tmp.%ld.%lu.%ld", path, (long)getpid(), (unsigned long)++seq,
              (long)ts.tv_nsec);
    char *tmp = sb_take(&b);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const char *what = "create";
    if (fd < 0) goto fail;
    const char *p = data;
    size_t left = n;
    what = "write";
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            close(fd);
            goto fail_unlink;
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) != 0) goto fail_unlink;
    what = "rename";
    if (rename(tmp, path) != 0) goto fail_unlink;
    free(tmp);
    return TSL_OK;
fail_unlink:;
    int err = errno;
    unlink(tmp);
    errno = err;
fail:
    if (d) diag_error(d, TSL_ERR_IO, "kernel cache: cannot %s '%s': %s", what, tmp, strerror(errno));
    free(tmp);
    return TSL_ERR_IO;
}

void rt_cache_key(const rt_key_part *parts, int nparts, char out[33])
{
    /* Two FNV-1a chains with different seeds make a 128-bit key. */
    uint64_t h1 = HASH_SEED, h2 = 0x84222325cbf29ce4ull;
    for (int i = 0; i < nparts; i++) {
        h1 = hash_u64(h1, parts[i].n);
        h1 = hash_bytes(h1, parts[i].p, parts[i].n);
        h2 = hash_bytes(h2, parts[i].p, parts[i].n);
        h2 = hash_u64(h2, ~(uint64_t)parts[i].n);
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[i] = hex[(h1 >> (60 - 4 * i)) & 15];
        out[16 + i] = hex[(h2 >> (60 - 4 * i)) & 15];
    }
    out[32] = '\0';
}
