/* test_runtime_cpu.c — the CPU runtime: compile + dlopen + run a kernel,
 * the cache (hits run no compiler, a damaged object is rebuilt), compiler
 * errors, a missing compiler, and the thread pool's coverage. Every test
 * uses its own fresh cache directory under /tmp. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "runtime/runtime.h"
#include "test.h"

/* Point TESSEL_CACHE_DIR at a new empty folder; gives its malloc'd path. */
static char *prior_cache_dir; /* the setting before the fresh cache */

static char *use_fresh_cache(void)
{
    char tmpl[] = "/tmp/tessel-test-cache-XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (!dir) return NULL;
    free(prior_cache_dir);
    prior_cache_dir = rt_settings_get()->cache_dir ? strdup(rt_settings_get()->cache_dir) : NULL;
    TEST_SETTING(cache_dir, dir);
    return strdup(dir);
}

static void remove_cache(char *dir)
{
    if (!dir) return;
    char *cmd = NULL;
    if (asprintf(&cmd, "rm -rf '%s'", dir) > 0 && system(cmd) != 0) fprintf(stderr, "rm failed\n");
    free(cmd);
    free(dir);
    TEST_SETTING(cache_dir, prior_cache_dir); /* the run's own cache again */
}

/* A saxpy with a salt in its source so that each run compiles afresh. */
static char *saxpy_source(unsigned long salt)
{
    char *s = NULL;
    int rc = asprintf(&s,
                      "/* salt %lu */\n"
                      "#include <stdint.h>\n"
                      "void saxpy(int64_t n, float a, const float *x, float *y) {\n"
                      "    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + y[i];\n"
                      "}\n",
                      salt);
    return rc > 0 ? s : NULL;
}

typedef void (*saxpy_fn)(int64_t, float, const float *, float *);

static void count_row(void *ctx, const rt_cache_row *r)
{
    (void)r;
    (*(int *)ctx)++;
}

typedef struct row_copy {
    char key[64];
    void *data;
    size_t size;
} row_copy;

static void copy_row(void *ctx, const rt_cache_row *r)
{
    row_copy *c = ctx;
    snprintf(c->key, sizeof c->key, "%s", r->key);
    c->data = malloc(r->size);
    memcpy(c->data, r->data, r->size);
    c->size = r->size;
}

static void check_saxpy(saxpy_fn f, int64_t n)
{
    float *x = malloc(sizeof(float) * (size_t)(n + 1));
    float *y = malloc(sizeof(float) * (size_t)(n + 1));
    float *ref = malloc(sizeof(float) * (size_t)(n + 1));
    float a = (float)test_rand_double(-3, 3);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)test_rand_double(-10, 10);
        y[i] = (float)test_rand_double(-10, 10);
        ref[i] = a * x[i] + y[i];
    }
    y[n] = NAN; /* a guard past the end must stay untouched */
    f(n, a, x, y);
    for (int64_t i = 0; i < n; i++) CHECK_CLOSE(y[i], ref[i], 1e-5);
    CHECK(isnan(y[n]));
    free(x);
    free(y);
    free(ref);
}

static void test_compile_run_and_cache_hit(void)
{
    char *dir = use_fresh_cache();
    CHECK(dir != NULL);
    char *src = saxpy_source((unsigned long)test_rand());
    tsl_diag d = {0};
    long before = rt_cpu_compile_count();
    rt_cpu_module *m = NULL;
    tsl_status st = rt_cpu_compile(src, "saxpy.c", &m, &d);
    CHECK_MSG(st == TSL_OK, "compile failed: %s", sb_str(&d.msg));
    CHECK_EQ_INT(rt_cpu_compile_count(), before + 1);
    if (st == TSL_OK) {
        saxpy_fn f = (saxpy_fn)rt_cpu_symbol(m, "saxpy", &d);
        CHECK(f != NULL);
        int64_t sizes[] = {1, 7, 1000, test_rand_int(2, 5000)};
        for (size_t i = 0; f && i < TSL_COUNTOF(sizes); i++) check_saxpy(f, sizes[i]);
        CHECK(rt_cpu_symbol(m, "no_such_symbol", &d) == NULL);
        CHECK(strstr(sb_str(&d.msg), "no_such_symbol") != NULL);
        /* the object is in the cache in that folder */
        const char *db = rt_cache_path(NULL);
        CHECK(db && strncmp(db, dir, strlen(dir)) == 0);
        int rows = 0;
        CHECK(rt_cache_each("cpu", "", count_row, &rows, NULL) == TSL_OK && rows == 1);
        rt_cpu_module_free(m);
    }
    /* second compile of the same source: a hit, no compiler run */
    diag_reset(&d);
    rt_cpu_module *m2 = NULL;
    st = rt_cpu_compile(src, "saxpy.c", &m2, &d);
    CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
    CHECK_EQ_INT(rt_cpu_compile_count(), before + 1);
    if (st == TSL_OK) {
        saxpy_fn f = (saxpy_fn)rt_cpu_symbol(m2, "saxpy", &d);
        if (f) check_saxpy(f, 13);
    }
    rt_cpu_module_free(m2);
    diag_free(&d);
    free(src);
    remove_cache(dir);
}

/* A cached object damaged in the database (its checksum fails), and one
 * stored whole-checksummed but truncated (not a complete ELF object): each
 * a warning and a rebuild, and the rebuilt kernel runs right. */
static void test_damaged_cache_rebuilt(void)
{
    char *dir = use_fresh_cache();
    char *src = saxpy_source((unsigned long)test_rand());
    tsl_diag d = {0};
    rt_cpu_module *m = NULL;
    long before = rt_cpu_compile_count();
    CHECK(rt_cpu_compile(src, NULL, &m, &d) == TSL_OK);
    rt_cpu_module_free(m);
    m = NULL;
    for (int round = 0; round < 2; round++) {
        long warned = rt_warning_count();
        if (round == 0) {
            /* a byte of the stored object flipped behind the cache's back */
            sqlite3 *db = NULL;
            CHECK(sqlite3_open(rt_cache_path(NULL), &db) == SQLITE_OK);
            CHECK(sqlite3_exec(db,
                               "UPDATE entries_v1 SET data = substr(data, 1, 200) || x'5a' || substr(data, 202) "
                               "WHERE kind = 'cpu'",
                               NULL, NULL, NULL) == SQLITE_OK);
            sqlite3_close(db);
        } else {
            /* a truncated object stored with a checksum of its own */
            row_copy rc = {0};
            CHECK(rt_cache_each("cpu", "", copy_row, &rc, NULL) == TSL_OK && rc.key[0]);
            rt_cache_put("cpu", rc.key, "saxpy", src, "cc", rc.data, rc.size / 3);
            free(rc.data);
        }
        tsl_status s = rt_cpu_compile(src, NULL, &m, &d);
        CHECK_MSG(s == TSL_OK, "%s", sb_str(&d.msg));
        CHECK_EQ_INT(d.nerr, 0);
        CHECK(rt_warning_count() > warned);
        CHECK_EQ_INT(rt_cpu_compile_count(), before + 2 + round);
        if (m) {
            saxpy_fn f = (saxpy_fn)rt_cpu_symbol(m, "saxpy", &d);
            CHECK(f != NULL);
            if (f) check_saxpy(f, 101);
        }
        rt_cpu_module_free(m);
        m = NULL;
    }
    free(src);
    diag_free(&d);
    remove_cache(dir);
}

static void test_syntax_error(void)
{
    char *dir = use_fresh_cache();
    char *src = NULL;
    CHECK(asprintf(&src, "/* %lu */\nint f(int x) {\n    return x +* ;\n}\n",
                   (unsigned long)test_rand()) > 0);
    tsl_diag d = {0};
    rt_cpu_module *m = NULL;
    tsl_status st = rt_cpu_compile(src, "broken.c", &m, &d);
    CHECK_EQ_INT(st, TSL_ERR_COMPILE);
    CHECK(m == NULL);
    const char *msg = sb_str(&d.msg);
    CHECK_MSG(strstr(msg, "broken.c:3:") != NULL, "no location in: %s", msg);
    CHECK_MSG(strstr(msg, "error") != NULL, "no compiler error in: %s", msg);
    CHECK_MSG(strstr(msg, "3 |     return x +* ;") != NULL, "no quoted line in: %s", msg);
    /* the temp path of the source is not leaked into the message */
    CHECK_MSG(strstr(msg, dir) == NULL, "cache path in: %s", msg);
    diag_free(&d);
    free(src);
    remove_cache(dir);
}

static void test_no_compiler(void)
{
    char *dir = use_fresh_cache();
    const char *old = rt_settings_get()->cc;
    char *saved = old ? strdup(old) : NULL;
    TEST_SETTING(cc, "/nonexistent/cc");
    tsl_diag d = {0};
    rt_cpu_module *m = NULL;
    tsl_status st = rt_cpu_compile("int f(void) { return 1; }\n", NULL, &m, &d);
    CHECK_EQ_INT(st, TSL_ERR_UNAVAILABLE);
    CHECK(m == NULL);
    CHECK_MSG(strstr(sb_str(&d.msg), "/nonexistent/cc") != NULL, "%s", sb_str(&d.msg));
    CHECK_MSG(strstr(sb_str(&d.msg), "TESSEL_CC") != NULL, "%s", sb_str(&d.msg));
    diag_free(&d);
    /* an empty PATH with no TESSEL_CC: the message lists what was tried */
    TEST_SETTING(cc, NULL);
    char *path = rt_settings_get()->path ? strdup(rt_settings_get()->path) : NULL;
    TEST_SETTING(path, "/nonexistent-bin");
    st = rt_cpu_compile("int f(void) { return 1; }\n", NULL, &m, &d);
    CHECK_EQ_INT(st, TSL_ERR_UNAVAILABLE);
    CHECK_MSG(strstr(sb_str(&d.msg), "cc, gcc and clang") != NULL, "%s", sb_str(&d.msg));
    CHECK_MSG(strstr(sb_str(&d.msg), "TESSEL_CC") != NULL, "%s", sb_str(&d.msg));
    TEST_SETTING(path, path);
    free(path);
    TEST_SETTING(cc, saved);
    free(saved);
    diag_free(&d);
    remove_cache(dir);
}

/* ---- thread pool ---- */

typedef struct cover_ctx {
    _Atomic unsigned char *hits;
    _Atomic int64_t calls;
    int64_t n;
    _Atomic int bad;
} cover_ctx;

static void cover_fn(void *vctx, int64_t begin, int64_t end)
{
    cover_ctx *c = vctx;
    if (begin < 0 || end > c->n || begin >= end) atomic_store(&c->bad, 1);
    for (int64_t i = begin; i < end && i >= 0 && i < c->n; i++) atomic_fetch_add(&c->hits[i], 1);
    atomic_fetch_add(&c->calls, 1);
}

static void check_cover(int64_t n)
{
    cover_ctx c = {0};
    c.n = n;
    c.hits = calloc((size_t)(n > 0 ? n : 1), 1);
    rt_cpu_parallel_for(n, cover_fn, &c);
    CHECK_MSG(!atomic_load(&c.bad), "n=%lld: a piece outside [0,n) or empty", (long long)n);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; i++) wrong += atomic_load(&c.hits[i]) != 1;
    CHECK_MSG(wrong == 0, "n=%lld threads=%d: %lld indices not covered exactly once",
              (long long)n, rt_cpu_num_threads(), (long long)wrong);
    if (n == 0) CHECK_EQ_INT(atomic_load(&c.calls), 0);
    free(c.hits);
}

static void test_parallel_for_cover(void)
{
    int64_t sizes[] = {0, 1, 7, 1000003, test_rand_int(2, 100000)};
    for (int round = 0; round < 4; round++) {
        int t = round == 0 ? 1 : (int)test_rand_int(2, 9);
        rt_cpu_set_num_threads(t);
        CHECK_EQ_INT(rt_cpu_num_threads(), t);
        for (size_t i = 0; i < TSL_COUNTOF(sizes); i++) check_cover(sizes[i]);
    }
    rt_cpu_set_num_threads(0);
    check_cover(4099);
    rt_cpu_shutdown();
    check_cover(17); /* a new pool after shutdown */
    rt_cpu_shutdown();
}

/* A job of few blocks wakes only the workers it can use (one block: none,
 * it runs on the caller), still covers every index once, and a job of
 * many blocks after it still gets every worker. */
static void test_parallel_for_few_blocks(void)
{
    rt_cpu_set_num_threads(16);
    check_cover(1000); /* the pool started, every worker has run */
    int64_t sizes[] = {1, 2, 3, 5, test_rand_int(2, 15)};
    for (size_t i = 0; i < TSL_COUNTOF(sizes); i++) {
        long before = rt_cpu_pool_wakeups();
        check_cover(sizes[i]);
        long woken = rt_cpu_pool_wakeups() - before;
        CHECK_MSG(woken == sizes[i] - 1, "a job of %lld blocks on 16 threads woke %ld workers, not %lld",
                  (long long)sizes[i], woken, (long long)sizes[i] - 1);
    }
    long before = rt_cpu_pool_wakeups();
    check_cover(test_rand_int(16, 5000));
    CHECK_EQ_INT(rt_cpu_pool_wakeups() - before, 15);
    /* what a 2-block job costs now (printed, not checked: a shared machine) */
    cover_ctx c = {0};
    c.n = 2;
    c.hits = calloc(2, 1);
    double t0 = rt_now_ms();
    for (int r = 0; r < 200; r++) rt_cpu_parallel_for(2, cover_fn, &c);
    printf("    a 2-block job on a pool of 16 threads: %.1f us\n", (rt_now_ms() - t0) * 1e3 / 200);
    free(c.hits);
    rt_cpu_set_num_threads(0);
    rt_cpu_shutdown();
}

/* A nested parallel_for runs inline on the worker; the sum is exact. */
typedef struct nest_ctx {
    _Atomic int64_t sum;
} nest_ctx;

static void nest_inner(void *vctx, int64_t b, int64_t e)
{
    nest_ctx *c = vctx;
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->sum, i);
}

static void nest_outer(void *vctx, int64_t b, int64_t e)
{
    for (int64_t i = b; i < e; i++) rt_cpu_parallel_for(i + 1, nest_inner, vctx);
}

static void test_parallel_for_nested(void)
{
    rt_cpu_set_num_threads((int)test_rand_int(2, 6));
    nest_ctx c = {0};
    int64_t n = test_rand_int(50, 300);
    rt_cpu_parallel_for(n, nest_outer, &c);
    int64_t want = 0;
    for (int64_t i = 0; i < n; i++) want += i * (i + 1) / 2;
    CHECK_EQ_INT(atomic_load(&c.sum), want);
    rt_cpu_set_num_threads(0);
    rt_cpu_shutdown();
}

/* A compiled kernel driven by the pool: each piece runs saxpy on its range. */
typedef struct saxpy_job {
    saxpy_fn f;
    float a;
    const float *x;
    float *y;
} saxpy_job;

static void saxpy_piece(void *vctx, int64_t b, int64_t e)
{
    saxpy_job *j = vctx;
    j->f(e - b, j->a, j->x + b, j->y + b);
}

static void test_parallel_compiled_kernel(void)
{
    char *dir = use_fresh_cache();
    char *src = saxpy_source((unsigned long)test_rand());
    tsl_diag d = {0};
    rt_cpu_module *m = NULL;
    CHECK(rt_cpu_compile(src, NULL, &m, &d) == TSL_OK);
    saxpy_fn f = m ? (saxpy_fn)rt_cpu_symbol(m, "saxpy", &d) : NULL;
    if (f) {
        int64_t n = test_rand_int(100000, 300000) | 1;
        float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
        float *ref = malloc(sizeof(float) * (size_t)n);
        float a = (float)test_rand_double(-2, 2);
        for (int64_t i = 0; i < n; i++) {
            x[i] = (float)test_rand_double(-1, 1);
            y[i] = (float)test_rand_double(-1, 1);
            ref[i] = a * x[i] + y[i];
        }
        rt_cpu_set_num_threads(3);
        saxpy_job j = {f, a, x, y};
        rt_cpu_parallel_for(n, saxpy_piece, &j);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !(fabsf(y[i] - ref[i]) <= 1e-5f * (1 + fabsf(ref[i])));
        CHECK_EQ_INT(bad, 0);
        free(x);
        free(y);
        free(ref);
        rt_cpu_set_num_threads(0);
        rt_cpu_shutdown();
    }
    rt_cpu_module_free(m);
    free(src);
    diag_free(&d);
    remove_cache(dir);
}

TEST_SUITE(runtime_cpu) = {
    {"compile_run_and_cache_hit", test_compile_run_and_cache_hit},
    {"damaged_cache_rebuilt", test_damaged_cache_rebuilt},
    {"syntax_error", test_syntax_error},
    {"no_compiler", test_no_compiler},
    {"parallel_for_cover", test_parallel_for_cover},
    {"parallel_for_nested", test_parallel_for_nested},
    {"parallel_for_few_blocks", test_parallel_for_few_blocks},
    {"parallel_compiled_kernel", test_parallel_compiled_kernel},
    {0},
};
