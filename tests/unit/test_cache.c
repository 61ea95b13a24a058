/* test_cache.c — the SQLite cache (src/runtime/cache.c): rows round-trip;
 * 1,000 random corruptions of the database file (flipped bytes,
 * truncation, garbage, a directory or a FIFO in its place, a file that is
 * not ours) each give the exact stored bytes or a miss with a warning —
 * never other bytes; a folder others may write to is refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "test.h"

/* In memory when /dev/shm is there (the 1,000 reopens each sync the file:
 * minutes on a disk, a second in memory). */
static char *fresh_dir(void)
{
    char tmpl[] = "/dev/shm/tessel-test-db-XXXXXX", tmpl2[] = "/tmp/tessel-test-db-XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (!dir) dir = mkdtemp(tmpl2);
    if (!dir) return NULL;
    TEST_SETTING(cache_dir, dir);
    rt_cache_reset();
    return strdup(dir);
}

static void drop_dir(char *dir)
{
    rt_cache_reset();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "rm failed\n");
    TEST_SETTING(cache_dir, NULL);
    free(dir);
}

/* Silence the expected warnings, counting them. */
static long warnings;
static void count_warning(void *ctx, const char *msg)
{
    (void)ctx;
    if (getenv("TSL_CACHE_DEBUG")) printf("      warning: %s\n", msg);
    warnings++;
}

enum { NROWS = 12 };

typedef struct row {
    char key[33];
    unsigned char *data;
    size_t size;
    char note[64];
} row;

static void make_rows(row *r)
{
    for (int i = 0; i < NROWS; i++) {
        r[i].size = (size_t)test_rand_int(1, 9000);
        r[i].data = malloc(r[i].size);
        for (size_t j = 0; j < r[i].size; j++) r[i].data[j] = (unsigned char)test_rand();
        snprintf(r[i].note, sizeof r[i].note, "note %d %lu", i, (unsigned long)test_rand());
        rt_key_part p = {r[i].note, strlen(r[i].note)};
        rt_cache_key(&p, 1, r[i].key);
    }
}

static void store(const row *r, int i) { rt_cache_put("cpu", r[i].key, "k", "source", r[i].note, r[i].data, r[i].size); }

static void test_round_trip(void)
{
    char *dir = fresh_dir();
    row r[NROWS];
    make_rows(r);
    for (int i = 0; i < NROWS; i++) store(r, i);
    for (int i = 0; i < NROWS; i++) {
        rt_cache_entry e;
        CHECK(rt_cache_get("cpu", r[i].key, &e));
        CHECK(e.size == r[i].size && !memcmp(e.data, r[i].data, e.size));
        CHECK_EQ_STR(e.note, r[i].note);
        CHECK_EQ_STR(e.source, "source");
        rt_cache_entry_free(&e);
        CHECK(!rt_cache_get("cuda", r[i].key, &e)); /* kinds are apart */
    }
    const char *path = rt_cache_path(NULL);
    struct stat st;
    CHECK(path && stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    for (int i = 0; i < NROWS; i++) free(r[i].data);
    drop_dir(dir);
}

/* One random damage to the database at path. */
static const char *corrupt(const char *path)
{
    struct stat st;
    int kind = (int)test_rand_int(0, 9);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) kind = 0;
    int fd;
    switch (kind) {
    case 0:
    case 1:
    case 2:
    case 3: /* flipped bytes anywhere */
        fd = open(path, O_RDWR);
        for (int f = 0, n = (int)test_rand_int(1, 16); fd >= 0 && f < n && st.st_size > 0; f++) {
            off_t at = (off_t)test_rand_int(0, (long)st.st_size - 1);
            unsigned char b;
            if (pread(fd, &b, 1, at) == 1) {
                b ^= (unsigned char)(1u << test_rand_int(0, 7));
                if (pwrite(fd, &b, 1, at) != 1) break;
            }
        }
        if (fd >= 0) close(fd);
        return "flipped bytes";
    case 4: /* truncated */
        if (truncate(path, (off_t)test_rand_int(0, (long)st.st_size)) != 0) return "truncate failed";
        return "truncated";
    case 5: /* a page of garbage */
        fd = open(path, O_RDWR);
        if (fd >= 0) {
            unsigned char junk[4096];
            for (size_t j = 0; j < sizeof junk; j++) junk[j] = (unsigned char)test_rand();
            off_t at = (off_t)test_rand_int(0, (long)(st.st_size / 4096)) * 4096;
            if (pwrite(fd, junk, sizeof junk, at) < 0) perror("pwrite");
            close(fd);
        }
        return "a page of garbage";
    case 6: /* a directory in its place */
        unlink(path);
        if (mkdir(path, 0700) != 0) return "mkdir failed";
        return "a directory in its place";
    case 7: /* a FIFO in its place (opening it would block) */
        unlink(path);
        if (mkfifo(path, 0600) != 0) return "mkfifo failed";
        return "a FIFO in its place";
    case 8: /* others may write it */
        if (chmod(path, 0666) != 0) return "chmod failed";
        return "writable by others";
    default: /* a WAL file of garbage beside it */ {
        char wal[4300];
        snprintf(wal, sizeof wal, "%s-wal", path);
        fd = open(wal, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            unsigned char junk[9000];
            for (size_t j = 0; j < sizeof junk; j++) junk[j] = (unsigned char)test_rand();
            if (write(fd, junk, (size_t)test_rand_int(1, sizeof junk)) < 0) perror("write");
            close(fd);
        }
        return "a garbage WAL";
    }
    }
}

static void test_random_corruptions(void)
{
    char *dir = fresh_dir();
    row r[NROWS];
    make_rows(r);
    for (int i = 0; i < NROWS; i++) store(r, i);
    rt_set_warning_handler(count_warning, NULL);
    char path[4200];
    snprintf(path, sizeof path, "%s", rt_cache_path(NULL));
    int wrong = 0, silent_losses = 0, misses = 0, hits = 0;
    const char *prev = "none";
    for (int it = 0; it < 1000; it++) {
        rt_cache_reset(); /* as a process that opens the file afresh */
        const char *what = corrupt(path);
        if (getenv("TSL_CACHE_DEBUG")) printf("  iteration %d: %s\n", it, what);
        long before = warnings;
        int lost = 0;
        for (int i = 0; i < NROWS; i++) {
            rt_cache_entry e;
            if (rt_cache_get("cpu", r[i].key, &e)) {
                hits++;
                if (e.size != r[i].size || memcmp(e.data, r[i].data, e.size) || !e.note || strcmp(e.note, r[i].note)) {
                    wrong++;
                    CHECK_MSG(0, "iteration %d (%s): row %d came back different", it, what, i);
                }
            } else {
                lost = 1;
                misses++;
                store(r, i); /* the rebuild */
            }
            rt_cache_entry_free(&e);
        }
        if (lost && warnings == before) {
            silent_losses++;
            CHECK_MSG(0, "iteration %d (%s): rows lost without a warning (previous: %s)", it, what, prev);
        }
        prev = what;
        /* a database moved aside mid-way took the rows rebuilt before that
         * with it: store what the new one lacks before the next damage,
         * until a whole pass finds every row (the move can happen during
         * this pass too, taking the rows it stored before it) */
        for (int pass = 0, again = 1; again && pass < 4; pass++) {
            again = 0;
            for (int i = 0; i < NROWS; i++) {
                rt_cache_entry e;
                if (!rt_cache_get("cpu", r[i].key, &e)) store(r, i), again = 1;
                rt_cache_entry_free(&e);
            }
        }
    }
    rt_set_warning_handler(NULL, NULL);
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(silent_losses, 0);
    CHECK(misses > 0 && hits > 0);
    printf("    1000 corruptions: %d rows served intact, %d misses (each warned and rebuilt), 0 wrong\n", hits, misses);
    for (int i = 0; i < NROWS; i++) free(r[i].data);
    drop_dir(dir);
}

/* A cache folder others may write to is refused: a warning, no database,
 * every lookup a miss (the caller compiles), nothing stored there. */
static void test_unsafe_folder_refused(void)
{
    char tmpl[] = "/tmp/tessel-test-open-XXXXXX";
    char *dir = mkdtemp(tmpl);
    CHECK(dir && chmod(dir, 0777) == 0);
    TEST_SETTING(cache_dir, dir);
    rt_cache_reset();
    rt_set_warning_handler(count_warning, NULL);
    long before = warnings;
    rt_cache_put("cpu", "k", "n", "s", "x", "data", 4);
    rt_cache_entry e;
    CHECK(!rt_cache_get("cpu", "k", &e));
    CHECK(warnings > before);
    tsl_diag d = {0};
    CHECK(rt_cache_path(&d) == NULL && strstr(sb_str(&d.msg), "no kernel cache"));
    char *sub = NULL;
    diag_reset(&d);
    CHECK_EQ_INT(rt_cache_dir("x", &sub, &d), TSL_ERR_IO);
    CHECK_MSG(strstr(sb_str(&d.msg), "others may write to it (mode 777)"), "%s", sb_str(&d.msg));
    char db[300];
    snprintf(db, sizeof db, "%s/tessel-v1.db", dir);
    CHECK(access(db, F_OK) != 0);
    diag_free(&d);
    rt_set_warning_handler(NULL, NULL);
    drop_dir(strdup(dir));
}

TEST_SUITE(cache) = {
    {"round_trip", test_round_trip},
    {"random_corruptions", test_random_corruptions},
    {"unsafe_folder_refused", test_unsafe_folder_refused},
    {0, 0},
};
