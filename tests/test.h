/* test.h — the unit-test runner's vocabulary.
 *
 * A test file in tests/unit/ ends with one table:
 *     TEST_SUITE(layout) = { {"compose", test_compose}, ..., {0} };
 * The Makefile collects every TEST_SUITE into the runner. A test passes
 * when no CHECK in it fails. Random inputs come from test_rand*(), seeded
 * fresh each run (TESSEL_SEED=n repeats a run; the seed is printed). */
#ifndef TSL_TEST_H
#define TSL_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

#define TEST_SUITE(name) const test_case test_suite_##name[]

void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) test_fail(__FILE__, __LINE__, "CHECK(%s)", #c);              \
    } while (0)
#define CHECK_MSG(c, ...)                                                      \
    do {                                                                       \
        if (!(c)) test_fail(__FILE__, __LINE__, __VA_ARGS__);                  \
    } while (0)
#define CHECK_EQ_INT(a, b)                                                     \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (a_ != b_)                                                          \
            test_fail(__FILE__, __LINE__, "%s == %s (%lld vs %lld)", #a, #b, a_, b_); \
    } while (0)
#define CHECK_EQ_STR(a, b)                                                     \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                 \
            test_fail(__FILE__, __LINE__, "%s == %s (\"%s\" vs \"%s\")", #a, #b, \
                      a_ ? a_ : "(null)", b_ ? b_ : "(null)");                 \
    } while (0)
#define CHECK_CLOSE(a, b, tol)                                                 \
    do {                                                                       \
        double a_ = (a), b_ = (b);                                             \
        if (!(fabs(a_ - b_) <= (tol) * (1 + fabs(b_))))                        \
            test_fail(__FILE__, __LINE__, "%s ~= %s (%.9g vs %.9g)", #a, #b, a_, b_); \
    } while (0)

/* Set one of the runtime's settings (runtime.h RT_SETTINGS: the field of
 * a variable, e.g. cache_dir for TESSEL_CACHE_DIR) as that variable in the
 * environment would; NULL unsets it. Needs runtime/runtime.h. */
#define TEST_SETTING(field, value)                                             \
    do {                                                                       \
        rt_settings s_ = *rt_settings_get();                                   \
        s_.field = (value);                                                    \
        rt_settings_set(&s_);                                                  \
    } while (0)

/* Fresh randomness: uniform 64-bit, integer in [lo, hi], double in [lo, hi). */
uint64_t test_rand(void);
long test_rand_int(long lo, long hi);
double test_rand_double(double lo, double hi);
/* Path of the repository root (tests read examples/ and tests/errors/). */
const char *test_root(void);
/* The text of test_root()/dir/name (malloc'd; NULL after a failed check). */
char *test_read_text(const char *dir, const char *name);
/* In a test program's text, what follows `// KEY: ` up to the line's end
 * (malloc'd), or NULL. */
char *test_header(const char *text, const char *key);

#endif
