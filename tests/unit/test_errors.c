/* test_errors.c — the error corpus: every .tc file in tests/errors/ is a bad
 * program whose first line says what the first diagnostic must be:
 *     # expect: LINE:COL: fragment of the message
 * and, for errors found when sizes are bound, a line
 *     # sizes: M=3 N=4
 * The diagnostic must be `FILE:LINE:COL: error: ...fragment...`, followed
 * by the source line and a caret under the column. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "test.h"

static int errors_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Bind every def with the sizes of a `# sizes:` line; the first error. */
static int errors_bind(tsl_arena *a, const lang_module *m, const char *sizes_line, tsl_diag *d)
{
    for (int i = 0; i < lang_module_count(m); i++) {
        const lang_def *def = lang_module_def(m, i);
        int64_t *sizes = arena_alloc(a, sizeof(int64_t) * (size_t)(def->nsizes + 1));
        for (int k = 0; k < def->nsizes; k++) sizes[k] = -1;
        const char *p = sizes_line;
        while (*p && *p != '\n') {
            while (*p == ' ') p++;
            const char *eq = strchr(p, '=');
            if (!eq) break;
            char *name = arena_strndup(a, p, (size_t)(eq - p));
            int slot = lang_def_size_slot(def, name);
            char *end;
            long long v = strtoll(eq + 1, &end, 10);
            if (slot >= 0) sizes[slot] = v;
            p = end;
        }
        lang_bound *b;
        int st = lang_bind(a, def, sizes, &b, d);
        if (st != TSL_OK) return st;
    }
    return TSL_OK;
}

/* The n-th (1-based) line of text, without its newline. */
static char *errors_line(tsl_arena *a, const char *text, int n)
{
    const char *p = text;
    for (int i = 1; i < n && p; i++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p) return arena_strdup(a, "");
    const char *e = strchr(p, '\n');
    return arena_strndup(a, p, e ? (size_t)(e - p) : strlen(p));
}

static void errors_one(const char *dir, const char *file)
{
    tsl_arena *a = arena_create();
    char *path = arena_printf(a, "%s/%s", dir, file);
    size_t len;
    char *text = file_read_all(path, &len);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) goto out;
    int line = 0, col = 0, used = 0;
    if (sscanf(text, "# expect: %d:%d: %n", &line, &col, &used) != 2 || used == 0) {
        CHECK_MSG(0, "%s: first line must be '# expect: LINE:COL: fragment'", file);
        goto out;
    }
    const char *fe = strchr(text + used, '\n');
    char *fragment = arena_strndup(a, text + used, fe ? (size_t)(fe - text - used) : strlen(text + used));
    const char *sizes = strstr(text, "\n# sizes:");

    char *name = arena_printf(a, "tests/errors/%s", file);
    tsl_source src = {.name = name, .text = text};
    tsl_diag d = {0};
    lang_module *m = lang_parse_check(a, &src, &d);
    int st = m ? TSL_OK : (int)d.first;
    if (m && sizes) st = errors_bind(a, m, sizes + 9, &d);
    const char *msg = sb_str(&d.msg);
    CHECK_MSG(st != TSL_OK, "%s: expected an error, the program %s", file,
              sizes ? "checked and bound" : "checked (a bind-time error needs '# sizes:')");
    if (st == TSL_OK) goto done;
    char *head = arena_printf(a, "%s:%d:%d: error: ", name, line, col);
    const char *nl = strchr(msg, '\n');
    char *first = arena_strndup(a, msg, nl ? (size_t)(nl - msg) : strlen(msg));
    CHECK_MSG(strncmp(first, head, strlen(head)) == 0 && strstr(first, fragment),
              "%s: expected '%s...%s', got:\n%s", file, head, fragment, msg);
    /* the source line, then the caret */
    char *want_src = errors_line(a, text, line);
    char *got_src = errors_line(a, msg, 2);
    char *caret = errors_line(a, msg, 3);
    CHECK_MSG(!strcmp(got_src, want_src), "%s: source line: '%s' vs '%s'", file, got_src, want_src);
    CHECK_MSG((int)strlen(caret) == col && caret[col - 1] == '^', "%s: caret line '%s' for column %d",
              file, caret, col);
done:
    diag_free(&d);
out:
    free(text);
    arena_free(a);
}

static void test_corpus(void)
{
    char *dir = NULL;
    size_t n = strlen(test_root()) + 32;
    dir = malloc(n);
    snprintf(dir, n, "%s/tests/errors", test_root());
    DIR *dp = opendir(dir);
    CHECK_MSG(dp != NULL, "cannot open %s", dir);
    if (!dp) {
        free(dir);
        return;
    }
    char **files = NULL;
    int nfiles = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".tc")) continue;
        if (nfiles == cap) {
            cap = cap ? 2 * cap : 64;
            files = realloc(files, sizeof(char *) * (size_t)cap);
        }
        files[nfiles++] = strdup(e->d_name);
    }
    closedir(dp);
    qsort(files, (size_t)nfiles, sizeof(char *), errors_cmp);
    CHECK_MSG(nfiles >= 45, "only %d programs in %s (want at least 45)", nfiles, dir);
    for (int i = 0; i < nfiles; i++) {
        errors_one(dir, files[i]);
        free(files[i]);
    }
    free(files);
    free(dir);
}

TEST_SUITE(errors) = {
    {"corpus", test_corpus},
    {0},
};
