/* cmd_cache.c — `tessel cache list|show|stats|export|import|clear|path`:
 * the per-user cache (src/runtime/cache.c) for people. Exit codes as in
 * cli.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "driver/driver.h"
#include "runtime/runtime.h"

static const char cache_usage[] =
    "usage: tessel cache list [--kind K]     every entry: kind, key, name, size, age\n"
    "       tessel cache show KEY            one entry (a key or a unique prefix of one)\n"
    "       tessel cache stats               entries and bytes per kind, the database\n"
    "       tessel cache export FILE [--kind K]   intact entries into FILE (SQLite)\n"
    "       tessel cache import FILE [--kind K]   entries of FILE the cache lacks\n"
    "       tessel cache clear [--kind K]    remove entries (safe while others run)\n"
    "       tessel cache path                the database's path\n"
    "  Kinds: cpu, cuda (compiled kernels), exe (prepared programs), tuned (tuning\n"
    "  records), ccid (compiler identities). The cache is $TESSEL_CACHE_DIR, else\n"
    "  $XDG_CACHE_HOME/tessel, else ~/.cache/tessel.\n";

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "tessel cache: ");
    fprintf(stderr, msg, arg);
    fprintf(stderr, "\n%s", cache_usage);
    return 2;
}

static void age(char *buf, size_t n, int64_t created)
{
    long s = (long)(time(NULL) - created);
    if (s < 120) snprintf(buf, n, "%lds", s);
    else if (s < 7200) snprintf(buf, n, "%ldm", s / 60);
    else if (s < 172800) snprintf(buf, n, "%ldh", s / 3600);
    else snprintf(buf, n, "%ldd", s / 86400);
}

static void list_row(void *ctx, const rt_cache_row *r)
{
    int *n = ctx;
    char a[32];
    age(a, sizeof a, r->created);
    const char *note = r->note && !strcmp(r->kind, "tuned") ? r->note : "";
    printf("%-5s %.16s  %-28s %9zu B %5s%s%s%s\n", r->kind, r->key, r->name ? r->name : "", r->size, a,
           r->intact ? "" : "  DAMAGED", *note ? "  " : "", note);
    (*n)++;
}

typedef struct show_ctx {
    int found;
} show_ctx;

static void show_row(void *ctx, const rt_cache_row *r)
{
    show_ctx *c = ctx;
    c->found++;
    char a[32];
    age(a, sizeof a, r->created);
    printf("kind     %s\nkey      %s\nname     %s\nsize     %zu bytes\nage      %s\nintact   %s\n", r->kind, r->key,
           r->name ? r->name : "", r->size, a, r->intact ? "yes (checksum matches)" : "NO: damaged, will be rebuilt");
    if (r->note && *r->note) printf("note     %s\n", r->note);
    if (!strcmp(r->kind, "exe") && r->intact) {
        drv_executable *x = NULL;
        tsl_diag d = {0};
        if (drv_executable_read(r->data, r->size, &x, &d) == TSL_OK) {
            strbuf b = {0};
            rt_plan_describe(&b, x->plan);
            printf("target   %s %s\noptions  %s\nplan     %s", x->target == TSL_TARGET_CUDA ? "cuda" : "cpu", x->arch,
                   *x->options ? x->options : "(defaults)", sb_str(&b));
            printf("-- the schedule --\n%s", x->tile);
            sb_free(&b);
        } else {
            printf("plan     unreadable: %s\n", sb_str(&d.msg));
        }
        drv_executable_free(x);
        diag_free(&d);
    }
    if (r->source && *r->source) printf("-- %s --\n%s%s", !strcmp(r->kind, "exe") || !strcmp(r->kind, "tuned")
                                                             ? "the program (canonical)" : "the source",
                                        r->source, r->source[strlen(r->source) - 1] == '\n' ? "" : "\n");
    if (!strcmp(r->kind, "tuned") && r->data && r->size)
        printf("-- the search --\n%.*s\n", (int)r->size, (const char *)r->data);
}

typedef struct stats_ctx {
    const char *kinds[8];
    long count[8], bytes[8], damaged[8];
    int n;
} stats_ctx;

static void stats_row(void *ctx, const rt_cache_row *r)
{
    stats_ctx *c = ctx;
    int i = 0;
    while (i < c->n && strcmp(c->kinds[i], r->kind)) i++;
    if (i == c->n) {
        if (c->n == 8) return;
        c->kinds[c->n++] = strdup(r->kind);
    }
    c->count[i]++;
    c->bytes[i] += (long)(r->size + (r->source ? strlen(r->source) : 0) + (r->note ? strlen(r->note) : 0));
    c->damaged[i] += !r->intact;
}

int cmd_cache(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(cache_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1], *kind = NULL, *arg = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--kind") && i + 1 < argc) kind = argv[++i];
        else if (argv[i][0] == '-') return usage("unknown option '%s'", argv[i]);
        else if (!arg) arg = argv[i];
        else return usage("unexpected argument '%s'", argv[i]);
    }
    static const char *const kinds[] = {"cpu", "cuda", "exe", "tuned", "ccid"};
    int kind_ok = !kind;
    for (size_t i = 0; kind && i < sizeof kinds / sizeof kinds[0]; i++) kind_ok |= !strcmp(kind, kinds[i]);
    if (!kind_ok) return usage("--kind takes cpu, cuda, exe, tuned or ccid, not '%s'", kind);
    tsl_diag d = {0};
    int rc = 0;
    if (!strcmp(sub, "list")) {
        int n = 0;
        if (rt_cache_each(kind, arg, list_row, &n, &d)) rc = 1;
        else if (!n) printf("(no entries%s%s)\n", kind ? " of kind " : "", kind ? kind : "");
    } else if (!strcmp(sub, "show")) {
        if (!arg) return usage("%s", "show needs a KEY");
        show_ctx c = {0};
        if (rt_cache_each(kind, arg, show_row, &c, &d)) rc = 1;
        else if (c.found != 1) {
            fprintf(stderr, "tessel cache show: %s entry has a key starting '%s'\n", c.found ? "more than one" : "no",
                    arg);
            rc = 1;
        }
    } else if (!strcmp(sub, "stats")) {
        stats_ctx c = {0};
        const char *path = rt_cache_path(&d);
        if (!path || rt_cache_each(NULL, NULL, stats_row, &c, &d)) {
            rc = 1;
        } else {
            struct stat st;
            long total = 0;
            printf("cache %s (%lld bytes on disk)\n", path, stat(path, &st) == 0 ? (long long)st.st_size : 0LL);
            for (int i = 0; i < c.n; i++) {
                printf("  %-6s %6ld entries %12ld bytes%s", c.kinds[i], c.count[i], c.bytes[i],
                       c.damaged[i] ? "" : "\n");
                if (c.damaged[i]) printf("  (%ld damaged)\n", c.damaged[i]);
                total += c.count[i];
                free((char *)c.kinds[i]);
            }
            printf("  %ld entries\n", total);
        }
    } else if (!strcmp(sub, "export") || !strcmp(sub, "import")) {
        if (!arg) return usage("%s needs a FILE", sub);
        int copied = 0, skipped = 0;
        tsl_status st = sub[0] == 'e' ? rt_cache_export(arg, kind, &copied, &skipped, &d)
                                      : rt_cache_import(arg, kind, &copied, &skipped, &d);
        if (st) rc = 1;
        else printf("%s %d entr%s%s; %d damaged skipped\n", sub[0] == 'e' ? "exported" : "imported", copied,
                    copied == 1 ? "y" : "ies", sub[0] == 'e' ? "" : " (entries the cache has are kept)", skipped);
    } else if (!strcmp(sub, "clear")) {
        int removed = 0;
        if (rt_cache_clear(kind, &removed, &d)) rc = 1;
        else printf("removed %d entr%s\n", removed, removed == 1 ? "y" : "ies");
    } else if (!strcmp(sub, "path")) {
        const char *path = rt_cache_path(&d);
        if (path) printf("%s\n", path);
        else rc = 1;
    } else {
        return usage("unknown subcommand '%s'", sub);
    }
    if (rc && d.nerr) fprintf(stderr, "%s", sb_str(&d.msg));
    diag_free(&d);
    return rc;
}
