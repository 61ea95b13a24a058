/* cache.c — the per-user cache: one SQLite database (WAL mode, a busy
 * timeout, the schema version in the table's name) holding compiled
 * kernels, prepared executables and tuning records, shared safely by any
 * number of processes. Content keys (rt_cache_key) name the rows.
 *
 * Guarantees, tried as a hostile user would:
 *   - the cache folder must be the user's own and not writable by others
 *     (a /tmp/tessel-$UID another user made is refused, with a message),
 *     and so must the database file; anything else where the database
 *     should be (a directory, a FIFO, a file we cannot read) is moved aside
 *     and a new one made;
 *   - every row carries a checksum over everything in it, verified before
 *     anything is returned: a flipped byte anywhere is a miss with a
 *     warning and the row is rebuilt, never a wrong result; a database
 *     SQLite itself finds damaged is moved aside (once: only if it is still
 *     the file this process opened) and a new one made;
 *   - caching never fails a run: an error is a warning and a miss;
 *   - deleting the folder while runs are in flight is safe (open handles
 *     keep working on the old files; the next open makes a new one).
 * Every SQLite call goes through SQ (file:line and SQLite's message). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime.h"

#define CACHE_DB "tessel-v1.db"

/* ---- warnings ------------------------------------------------------------------------------ */

static void warn_stderr(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "tessel: warning: %s\n", msg);
}

static rt_warning_fn warn_fn = warn_stderr;
static void *warn_ctx;
static _Atomic long warn_count;

void rt_set_warning_handler(rt_warning_fn fn, void *ctx)
{
    warn_fn = fn ? fn : warn_stderr;
    warn_ctx = ctx;
}

long rt_warning_count(void) { return warn_count; }

void rt_warn(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    warn_count++;
    warn_fn(warn_ctx, msg);
}

/* ---- keys ------------------------------------------------------------------------------------ */

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

/* ---- the folder -------------------------------------------------------------------------------- */

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
    return 0;
}

/* The folder's path and where it came from. */
static char *cache_root(const char **from)
{
    strbuf b = {0};
    const rt_settings *set = rt_settings_get();
    const char *env = set->cache_dir, *xdg = set->xdg_cache_home, *home = set->home;
    if (env && *env) {
        sb_puts(&b, env);
        *from = "TESSEL_CACHE_DIR";
    } else if (xdg && *xdg) {
        sb_printf(&b, "%s/tessel", xdg);
        *from = "XDG_CACHE_HOME";
    } else if (home && *home) {
        sb_printf(&b, "%s/.cache/tessel", home);
        *from = "HOME";
    } else {
        sb_printf(&b, "/tmp/tessel-%u", (unsigned)getuid());
        *from = "the default, $HOME being unset";
    }
    return sb_take(&b);
}

/* A folder the cache may trust: a directory, ours, not writable by others.
 * 0, or -1 with the reason in why. */
static int cache_safe_dir(const char *path, char *why, size_t n)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, n, "it is not a directory");
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, n, "it belongs to uid %u, not to you (uid %u)", (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & 022) {
        snprintf(why, n, "others may write to it (mode %03o)", (unsigned)(st.st_mode & 0777));
        return -1;
    }
    return 0;
}

tsl_status rt_cache_dir(const char *sub, char **out, tsl_diag *d)
{
    const char *from;
    strbuf b = {0};
    char *root = cache_root(&from);
    sb_puts(&b, root);
    if (sub && *sub) sb_printf(&b, "/%s", sub);
    char *path = sb_take(&b);
    char why[256];
    int bad = cache_mkdirs(path) != 0;
    if (bad) snprintf(why, sizeof why, "%s", strerror(errno));
    if (!bad) bad = cache_safe_dir(root, why, sizeof why) || cache_safe_dir(path, why, sizeof why);
    if (bad) {
        if (d)
            diag_error(d, TSL_ERR_IO,
                       "the kernel cache directory '%s' (from %s) cannot be used: %s; set TESSEL_CACHE_DIR to a "
                       "folder of your own",
                       path, from, why);
        free(root);
        free(path);
        return TSL_ERR_IO;
    }
    free(root);
    *out = path;
    return TSL_OK;
}

/* ---- the database -------------------------------------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    sqlite3 *db;
    char *root;        /* the folder the open database is in */
    char *path;
    dev_t dev;
    ino_t ino;         /* the file this process opened */
    char *refused;     /* a folder refused this process (warned once) */
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* SQ(rc, what): 0 when rc is SQLite's OK/ROW/DONE, else the code after
 * recording "<what>: <sqlite message> (cache.c:LINE)" in cache_err. */
static char cache_err[512];
static int sq_check(int rc, const char *what, int line)
{
    if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return 0;
    snprintf(cache_err, sizeof cache_err, "%s: %s (src/runtime/cache.c:%d)", what,
             cache.db ? sqlite3_errmsg(cache.db) : sqlite3_errstr(rc), line);
    return rc;
}
#define SQ(rc, what) sq_check((rc), (what), __LINE__)

static int sq_damaged(int rc)
{
    rc &= 0xff;
    return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB || rc == SQLITE_IOERR || rc == SQLITE_CANTOPEN ||
           rc == SQLITE_FORMAT || rc == SQLITE_PERM || rc == SQLITE_READONLY || rc == SQLITE_AUTH;
}

static void cache_close(void)
{
    if (cache.db) sqlite3_close_v2(cache.db);
    cache.db = NULL;
    free(cache.path);
    free(cache.root);
    cache.path = cache.root = NULL;
}

/* In a child of fork: SQLite forbids using a connection across fork, so
 * the parent's is forgotten (not closed: closing would touch the parent's
 * locks) and the next use opens the database afresh. */
void rt_cache_after_fork(void)
{
    pthread_mutex_init(&cache.mu, NULL);
    cache.db = NULL;
    free(cache.path);
    free(cache.root);
    cache.path = cache.root = NULL;
}

/* Move the database (and its WAL files) aside as <path>.damaged-<pid>-<n>,
 * but only while `path` is still the file this process opened (or, when
 * check is 0, whatever is there): another process may have replaced it. */
static void cache_move_aside(const char *path, int check, const char *why)
{
    struct stat st;
    if (check && (lstat(path, &st) != 0 || st.st_dev != cache.dev || st.st_ino != cache.ino)) return;
    static _Atomic unsigned seq;
    char aside[4200], side[4200];
    snprintf(aside, sizeof aside, "%s.damaged-%ld-%u", path, (long)getpid(), ++seq);
    if (rename(path, aside) != 0 && errno != ENOENT) {
        rt_warn("the kernel cache '%s' is damaged (%s) and cannot be moved aside: %s; running without it", path,
                why, strerror(errno));
        return;
    }
    for (int i = 0; i < 2; i++) {
        snprintf(side, sizeof side, "%s%s", path, i ? "-shm" : "-wal");
        char to[4300];
        snprintf(to, sizeof to, "%s%s", aside, i ? "-shm" : "-wal");
        if (rename(side, to) != 0 && errno != ENOENT) unlink(side);
    }
    rt_warn("the kernel cache '%s' was damaged (%s); moved aside to '%s', starting a new one", path, why, aside);
}

/* One table; its name carries the schema version. kind: "cpu" (a kernel's
 * C source and shared object), "cuda" (CUDA source, cubin, NVRTC log),
 * "exe" (a prepared executable: the canonical program, options, the
 * serialised plan with binaries), "tuned" (the best options found, the
 * timings and the search's history), "ccid" (a C compiler's identity). */
#define CACHE_TABLE                                                                                   \
    "entries_v1 (kind TEXT NOT NULL, key TEXT NOT NULL, name TEXT, source TEXT, note TEXT, data BLOB," \
    " sum TEXT NOT NULL, size INTEGER, created INTEGER, PRIMARY KEY (kind, key))"
/* meta_v1 counts the rows, kept by triggers in the same transactions: a
 * miss checks that count (and looks for the key without the index), so
 * damage SQLite cannot see — a leaf page that lost cells, a garbled index
 * key — is found and reported instead of passing for an ordinary miss. */
static const char *const cache_schema =
    "CREATE TABLE IF NOT EXISTS " CACHE_TABLE ";"
    "CREATE TABLE IF NOT EXISTS meta_v1 (one INTEGER PRIMARY KEY CHECK (one = 1), rows INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO meta_v1 VALUES (1, (SELECT count(*) FROM entries_v1));"
    "CREATE TRIGGER IF NOT EXISTS entries_v1_ins AFTER INSERT ON entries_v1 "
    "BEGIN UPDATE meta_v1 SET rows = rows + 1; END;"
    "CREATE TRIGGER IF NOT EXISTS entries_v1_del AFTER DELETE ON entries_v1 "
    "BEGIN UPDATE meta_v1 SET rows = rows - 1; END;";

/* Open path (made 0600 first if new); 0, or SQLite's code. */
static int cache_open_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) close(fd);
    struct stat st;
    if (lstat(path, &st) != 0) return SQLITE_CANTOPEN;
    if (!S_ISREG(st.st_mode)) {
        snprintf(cache_err, sizeof cache_err, "it is not a regular file");
        return SQLITE_CANTOPEN;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022)) {
        snprintf(cache_err, sizeof cache_err, "%s", st.st_uid != geteuid() ? "it belongs to another user"
                                                                             : "others may write to it");
        return SQLITE_PERM;
    }
    int rc = SQ(sqlite3_open_v2(path, &cache.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                NULL),
                "open");
    if (!rc) rc = SQ(sqlite3_busy_timeout(cache.db, 60000), "busy_timeout");
    if (!rc) rc = SQ(sqlite3_exec(cache.db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), "journal_mode=WAL");
    if (!rc) rc = SQ(sqlite3_exec(cache.db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL), "synchronous");
    if (!rc) rc = SQ(sqlite3_exec(cache.db, "BEGIN IMMEDIATE", NULL, NULL, NULL), "begin");
    if (!rc) rc = SQ(sqlite3_exec(cache.db, cache_schema, NULL, NULL, NULL), "create the tables");
    if (!rc) rc = SQ(sqlite3_exec(cache.db, "COMMIT", NULL, NULL, NULL), "commit");
    if (!rc) rc = SQ(sqlite3_exec(cache.db, "SELECT count(*) FROM entries_v1 WHERE 0", NULL, NULL, NULL), "read");
    if (!rc && lstat(path, &st) == 0) {
        cache.dev = st.st_dev;
        cache.ino = st.st_ino;
    }
    if (rc && cache.db) {
        sqlite3_close_v2(cache.db);
        cache.db = NULL;
    }
    return rc;
}

/* cache_open_file, retried while the answer may be another process's
 * open in progress: 16 processes opening one new database at once once
 * saw "journal_mode=WAL: disk I/O error" while another was setting WAL
 * up, and the file, which was sound, was moved aside. Busy, locked and
 * I/O errors are tried again 8 times over about 0.4 s before the file
 * counts as damaged. */
static int cache_open_retry(const char *path)
{
    int rc = cache_open_file(path);
    for (int i = 0; rc && i < 8; i++) {
        int p = rc & 0xff;
        if (p != SQLITE_BUSY && p != SQLITE_LOCKED && p != SQLITE_IOERR) break;
        struct timespec ts = {0, (long)(10 + 10 * i) * 1000000L};
        nanosleep(&ts, NULL);
        rc = cache_open_file(path);
    }
    return rc;
}

/* The open database for the folder the environment names now, opened (or
 * reopened: the folder changed, or our file was deleted or replaced) on
 * demand; NULL when there is none to use (warned once per folder). Called
 * with cache.mu held. */
static sqlite3 *cache_db(void)
{
    const char *from;
    char *root = cache_root(&from);
    if (cache.db && !strcmp(root, cache.root)) {
        struct stat st;
        if (lstat(cache.path, &st) == 0 && st.st_dev == cache.dev && st.st_ino == cache.ino) {
            free(root);
            return cache.db;
        }
    }
    cache_close();
    if (cache.refused && !strcmp(cache.refused, root)) {
        free(root);
        return NULL;
    }
    char why[256];
    if (cache_mkdirs(root) != 0) snprintf(why, sizeof why, "%s", strerror(errno));
    if (cache_mkdirs(root) != 0 || cache_safe_dir(root, why, sizeof why)) {
        rt_warn("the kernel cache folder '%s' (from %s) cannot be used: %s; running without a cache (set "
                "TESSEL_CACHE_DIR to a folder of your own)",
                root, from, why);
        free(cache.refused);
        cache.refused = root;
        return NULL;
    }
    strbuf b = {0};
    sb_printf(&b, "%s/%s", root, CACHE_DB);
    char *path = sb_take(&b);
    int rc = cache_open_retry(path);
    for (int attempt = 0; rc && attempt < 2; attempt++) {
        /* our folder, so whatever is in the database's place may go */
        char reason[600];
        snprintf(reason, sizeof reason, "%s", cache_err);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            char aside[4200];
            snprintf(aside, sizeof aside, "%s.damaged-%ld-%ld", path, (long)getpid(), (long)time(NULL));
            if (rename(path, aside) == 0)
                rt_warn("a directory stood where the kernel cache '%s' should be; moved aside to '%s'", path, aside);
        } else {
            cache_move_aside(path, 0, reason);
        }
        rc = cache_open_retry(path);
    }
    if (rc) {
        rt_warn("the kernel cache '%s' cannot be opened (%s); running without it", path, cache_err);
        free(path);
        free(cache.refused);
        cache.refused = root;
        return NULL;
    }
    cache.root = root;
    cache.path = path;
    return cache.db;
}

/* After an error on the open database: SQLite says it is damaged, so move
 * it aside (if it is still ours) and close; other errors are warned. */
static void cache_failed(int rc, const char *what)
{
    if (sq_damaged(rc) && cache.path) {
        char *path = strdup(cache.path);
        cache_move_aside(path, 1, cache_err);
        cache_close();
        free(path);
    } else {
        rt_warn("kernel cache: %s failed (%s); continuing without it for this entry", what, cache_err);
    }
}

/* The checksum of a row: everything in it. */
static void cache_sum(const char *kind, const char *key, const char *source, const char *note, const void *data,
                      size_t size, char out[33])
{
    rt_key_part parts[] = {{kind, strlen(kind)},
                           {key, strlen(key)},
                           {source ? source : "", source ? strlen(source) : 0},
                           {note ? note : "", note ? strlen(note) : 0},
                           {data ? data : "", data ? size : 0}};
    rt_cache_key(parts, 5, out);
}

void rt_cache_entry_free(rt_cache_entry *e)
{
    if (!e) return;
    free(e->source);
    free(e->note);
    free(e->data);
    memset(e, 0, sizeof *e);
}

/* On a miss: is the database damaged in a way SQLite did not notice? The
 * key found by a scan that skips the index but not through it, or a row
 * count that differs from the one the triggers kept, says so (reason in
 * cache_err). Every count comes from one statement, so from one snapshot:
 * another process may store the key between the lookup and this check,
 * and then both the scan and the index find it, which is no damage. */
static int cache_miss_damaged(sqlite3 *db, const char *kind, const char *key, int *rc)
{
    sqlite3_stmt *s = NULL;
    int bad = 0;
    *rc = SQ(sqlite3_prepare_v2(db,
                                "SELECT (SELECT count(*) FROM entries_v1 NOT INDEXED WHERE kind = ?1 AND key = ?2), "
                                "(SELECT count(*) FROM entries_v1), (SELECT rows FROM meta_v1), "
                                "(SELECT count(*) FROM entries_v1 WHERE kind = ?1 AND key = ?2)",
                                -1, &s, NULL),
             "check a miss");
    if (!*rc) {
        sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
        int step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            if (sqlite3_column_int64(s, 0) != sqlite3_column_int64(s, 3)) {
                snprintf(cache_err, sizeof cache_err, "an entry its index no longer finds");
                bad = 1;
            } else if (sqlite3_column_type(s, 2) == SQLITE_NULL ||
                       sqlite3_column_int64(s, 1) != sqlite3_column_int64(s, 2)) {
                snprintf(cache_err, sizeof cache_err, "%lld entries where %lld were stored",
                         (long long)sqlite3_column_int64(s, 1), (long long)sqlite3_column_int64(s, 2));
                bad = 1;
            }
        } else {
            *rc = SQ(step, "check a miss");
        }
    }
    sqlite3_finalize(s);
    return bad;
}

static char *col_text(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? strdup((const char *)t) : NULL;
}

/* Per thread: lookups miss (a cold compile measured; what it makes is
 * still stored). */
static _Thread_local int cache_bypass;

void rt_cache_set_bypass(int on) { cache_bypass = on; }

int rt_cache_get(const char *kind, const char *key, rt_cache_entry *out)
{
    memset(out, 0, sizeof *out);
    if (cache_bypass) return 0;
    pthread_mutex_lock(&cache.mu);
    sqlite3 *db = cache_db();
    sqlite3_stmt *s = NULL;
    int hit = 0, rc = 0, damaged = 0;
    if (db) rc = SQ(sqlite3_prepare_v2(db, "SELECT source, note, data, sum FROM entries_v1 WHERE kind = ?1 AND key = ?2",
                                       -1, &s, NULL),
                    "prepare a lookup");
    if (db && !rc) {
        sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
        int step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            out->source = col_text(s, 0);
            out->note = col_text(s, 1);
            int n = sqlite3_column_bytes(s, 2);
            const void *blob = sqlite3_column_blob(s, 2);
            out->size = (size_t)n;
            out->data = malloc((size_t)n + 1);
            if (out->data && n) memcpy(out->data, blob, (size_t)n);
            const unsigned char *sum = sqlite3_column_text(s, 3);
            char want[33];
            cache_sum(kind, key, out->source, out->note, blob ? out->data : NULL, out->size, want);
            hit = out->data && sum && !strcmp((const char *)sum, want);
            damaged = !hit;
            if (!hit) {
                rt_warn("kernel cache entry %s/%s is damaged (its checksum does not match); rebuilding it", kind, key);
                rt_cache_entry_free(out);
            }
        } else if (step != SQLITE_DONE) {
            rc = SQ(step, "a lookup");
        }
    }
    sqlite3_finalize(s);
    if (db && !rc && !hit && !damaged && cache_miss_damaged(db, kind, key, &rc)) {
        rt_warn("the kernel cache '%s' is damaged (%s); moving it aside", cache.path, cache_err);
        rc = SQLITE_CORRUPT;
    }
    if (rc) cache_failed(rc, "a lookup");
    else if (db && damaged) {
        /* a damaged row goes, so the rebuilt one can take its key */
        sqlite3_stmt *del = NULL;
        if (!sqlite3_prepare_v2(db, "DELETE FROM entries_v1 WHERE kind = ?1 AND key = ?2", -1, &del, NULL)) {
            sqlite3_bind_text(del, 1, kind, -1, SQLITE_STATIC);
            sqlite3_bind_text(del, 2, key, -1, SQLITE_STATIC);
            sqlite3_step(del);
        }
        sqlite3_finalize(del);
    }
    pthread_mutex_unlock(&cache.mu);
    return hit;
}

void rt_cache_put(const char *kind, const char *key, const char *name, const char *source, const char *note,
                  const void *data, size_t size)
{
    pthread_mutex_lock(&cache.mu);
    sqlite3 *db = cache_db();
    sqlite3_stmt *s = NULL;
    int rc = db ? SQ(sqlite3_prepare_v2(db,
                                        "INSERT INTO entries_v1 (kind, key, name, source, note, data, sum, size, created) "
                                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (kind, key) DO "
                                        "UPDATE SET name = ?3, source = ?4, note = ?5, data = ?6, sum = ?7, "
                                        "size = ?8, created = ?9",
                                        -1, &s, NULL),
                     "prepare a store")
                : 0;
    if (db && !rc) {
        char sum[33];
        cache_sum(kind, key, source, note, data, size, sum);
        sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, name ? name : "", -1, SQLITE_STATIC);
        if (source) sqlite3_bind_text(s, 4, source, -1, SQLITE_STATIC);
        if (note) sqlite3_bind_text(s, 5, note, -1, SQLITE_STATIC);
        if (data) sqlite3_bind_blob(s, 6, data, (int)size, SQLITE_STATIC);
        sqlite3_bind_text(s, 7, sum, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 8, (sqlite3_int64)size);
        sqlite3_bind_int64(s, 9, (sqlite3_int64)time(NULL));
        rc = SQ(sqlite3_step(s), "a store");
    }
    sqlite3_finalize(s);
    if (rc) cache_failed(rc, "a store");
    pthread_mutex_unlock(&cache.mu);
}

/* ---- maintenance (the `tessel cache` command) ------------------------------------------------------ */

const char *rt_cache_path(tsl_diag *d)
{
    static char path[4200];
    pthread_mutex_lock(&cache.mu);
    sqlite3 *db = cache_db();
    if (db) snprintf(path, sizeof path, "%s", cache.path);
    pthread_mutex_unlock(&cache.mu);
    if (!db) diag_error(d, TSL_ERR_IO, "no kernel cache is usable (see the warning above)");
    return db ? path : NULL;
}

tsl_status rt_cache_each(const char *kind, const char *key_prefix, rt_cache_row_fn fn, void *ctx, tsl_diag *d)
{
    pthread_mutex_lock(&cache.mu);
    sqlite3 *db = cache_db();
    sqlite3_stmt *s = NULL;
    tsl_status st = db ? TSL_OK : TSL_ERR_IO;
    if (!db) diag_error(d, TSL_ERR_IO, "no kernel cache is usable (see the warning above)");
    if (db && SQ(sqlite3_prepare_v2(db,
                                    "SELECT kind, key, name, source, note, data, sum, created FROM entries_v1 "
                                    "WHERE (?1 IS NULL OR kind = ?1) AND key LIKE ?2 || '%' ORDER BY kind, created, key",
                                    -1, &s, NULL),
                 "prepare a listing")) {
        diag_error(d, TSL_ERR_IO, "kernel cache: %s", cache_err);
        st = TSL_ERR_IO;
    }
    if (!st) {
        if (kind) sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, key_prefix ? key_prefix : "", -1, SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            rt_cache_row r = {0};
            r.kind = (const char *)sqlite3_column_text(s, 0);
            r.key = (const char *)sqlite3_column_text(s, 1);
            r.name = (const char *)sqlite3_column_text(s, 2);
            r.source = (const char *)sqlite3_column_text(s, 3);
            r.note = (const char *)sqlite3_column_text(s, 4);
            r.data = sqlite3_column_blob(s, 5);
            r.size = (size_t)sqlite3_column_bytes(s, 5);
            const unsigned char *sum = sqlite3_column_text(s, 6);
            r.created = sqlite3_column_int64(s, 7);
            char want[33];
            cache_sum(r.kind ? r.kind : "", r.key ? r.key : "", r.source, r.note, r.data, r.size, want);
            r.intact = sum && !strcmp((const char *)sum, want);
            fn(ctx, &r);
        }
        if (rc != SQLITE_DONE) {
            SQ(rc, "a listing");
            diag_error(d, TSL_ERR_IO, "kernel cache: %s", cache_err);
            st = TSL_ERR_IO;
        }
    }
    sqlite3_finalize(s);
    pthread_mutex_unlock(&cache.mu);
    return st;
}

tsl_status rt_cache_clear(const char *kind, int *removed, tsl_diag *d)
{
    pthread_mutex_lock(&cache.mu);
    sqlite3 *db = cache_db();
    sqlite3_stmt *s = NULL;
    tsl_status st = TSL_OK;
    *removed = 0;
    if (!db) {
        diag_error(d, TSL_ERR_IO, "no kernel cache is usable (see the warning above)");
        st = TSL_ERR_IO;
    } else if (SQ(sqlite3_prepare_v2(db, "DELETE FROM entries_v1 WHERE ?1 IS NULL OR kind = ?1", -1, &s, NULL), "clear") ||
               (kind && sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC)) || SQ(sqlite3_step(s), "clear")) {
        diag_error(d, TSL_ERR_IO, "kernel cache: %s", cache_err);
        st = TSL_ERR_IO;
    } else {
        *removed = sqlite3_changes(db);
    }
    sqlite3_finalize(s);
    pthread_mutex_unlock(&cache.mu);
    return st;
}

/* Rows of the attached database `other` into `to_db` (main or other),
 * intact ones only. */
static tsl_status cache_copy_rows(sqlite3 *db, const char *sql_select, const char *sql_insert, const char *kind,
                                  int *copied, int *skipped, tsl_diag *d)
{
    sqlite3_stmt *sel = NULL, *ins = NULL;
    tsl_status st = TSL_OK;
    if (SQ(sqlite3_prepare_v2(db, sql_select, -1, &sel, NULL), "prepare a copy") ||
        SQ(sqlite3_prepare_v2(db, sql_insert, -1, &ins, NULL), "prepare a copy")) {
        diag_error(d, TSL_ERR_IO, "kernel cache: %s", cache_err);
        st = TSL_ERR_IO;
    }
    if (!st && kind) sqlite3_bind_text(sel, 1, kind, -1, SQLITE_STATIC);
    int rc = SQLITE_DONE;
    while (!st && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(sel, 0), *key = (const char *)sqlite3_column_text(sel, 1);
        const char *src = (const char *)sqlite3_column_text(sel, 3), *note = (const char *)sqlite3_column_text(sel, 4);
        const void *data = sqlite3_column_blob(sel, 5);
        size_t size = (size_t)sqlite3_column_bytes(sel, 5);
        const char *sum = (const char *)sqlite3_column_text(sel, 6);
        char want[33];
        cache_sum(k ? k : "", key ? key : "", src, note, data, size, want);
        if (!k || !key || !sum || strcmp(sum, want)) {
            (*skipped)++;
            continue;
        }
        sqlite3_reset(ins);
        for (int i = 0; i < 9; i++) sqlite3_bind_value(ins, i + 1, sqlite3_column_value(sel, i));
        if (SQ(sqlite3_step(ins), "a copied row")) {
            diag_error(d, TSL_ERR_IO, "kernel cache: %s", cache_err);
            st = TSL_ERR_IO;
        }
        *copied += sqlite3_changes(db) > 0;
    }
    if (!st && rc != SQLITE_DONE && SQ(rc, "reading rows to copy")) {
        diag_error(d, TSL_ERR_IO, "kernel cache: %s", cache_err);
        st = TSL_ERR_IO;
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    return st;
}

static tsl_status cache_transfer(const char *file, const char *kind, int export, int *copied, int *skipped,
                                 tsl_diag *d)
{
    *copied = *skipped = 0;
    pthread_mutex_lock(&cache.mu);
    sqlite3 *db = cache_db();
    tsl_status st = TSL_OK;
    if (!db) {
        diag_error(d, TSL_ERR_IO, "no kernel cache is usable (see the warning above)");
        pthread_mutex_unlock(&cache.mu);
        return TSL_ERR_IO;
    }
    struct stat fst;
    if (!export && (stat(file, &fst) != 0 || !S_ISREG(fst.st_mode))) {
        diag_error(d, TSL_ERR_IO, "cannot import '%s': %s", file, errno ? strerror(errno) : "not a regular file");
        pthread_mutex_unlock(&cache.mu);
        return TSL_ERR_IO;
    }
    sqlite3_stmt *att = NULL;
    if (SQ(sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS other", -1, &att, NULL), "attach") ||
        sqlite3_bind_text(att, 1, file, -1, SQLITE_STATIC) || SQ(sqlite3_step(att), "attach")) {
        diag_error(d, TSL_ERR_IO, "cannot open '%s': %s", file, cache_err);
        st = TSL_ERR_IO;
    }
    sqlite3_finalize(att);
    if (st) {
        pthread_mutex_unlock(&cache.mu);
        return st;
    }
    static const char *const cols = "kind, key, name, source, note, data, sum, size, created";
    char sel[512], ins[512];
    if (export) {
        /* the same table in the other file */
        if (SQ(sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS other." CACHE_TABLE, NULL, NULL, NULL),
               "create the exported table")) {
            diag_error(d, TSL_ERR_IO, "cannot write '%s': %s", file, cache_err);
            st = TSL_ERR_IO;
        }
    }
    snprintf(sel, sizeof sel, "SELECT %s FROM %s.entries_v1 WHERE ?1 IS NULL OR kind = ?1", cols,
             export ? "main" : "other");
    snprintf(ins, sizeof ins, "INSERT OR IGNORE INTO %s.entries_v1 (%s) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
             export ? "other" : "main", cols);
    if (!st && SQ(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), "begin")) st = TSL_ERR_IO;
    if (!st) st = cache_copy_rows(db, sel, ins, kind, copied, skipped, d);
    sqlite3_exec(db, st ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
    sqlite3_exec(db, "DETACH DATABASE other", NULL, NULL, NULL);
    pthread_mutex_unlock(&cache.mu);
    return st;
}

tsl_status rt_cache_export(const char *file, const char *kind, int *copied, int *skipped, tsl_diag *d)
{
    return cache_transfer(file, kind, 1, copied, skipped, d);
}

tsl_status rt_cache_import(const char *file, const char *kind, int *copied, int *skipped, tsl_diag *d)
{
    return cache_transfer(file, kind, 0, copied, skipped, d);
}

void rt_cache_reset(void)
{
    pthread_mutex_lock(&cache.mu);
    cache_close();
    free(cache.refused);
    cache.refused = NULL;
    pthread_mutex_unlock(&cache.mu);
}
