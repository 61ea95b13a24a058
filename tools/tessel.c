/* tessel.c — the command line: dispatches to one subcommand per file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/env.h"
#include "cli.h"
#include "tessel.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
} commands[] = {
    {"check", cmd_check}, {"run", cmd_run},   {"compile", cmd_compile},
    {"layout", cmd_layout}, {"tile", cmd_tile}, {"cache", cmd_cache},
    {"bench", cmd_bench}, {"tune", cmd_tune},
};

/* the usage lines: a form and what it does */
static const char *const usage_rows[][2] = {
    {"check FILE.tc", "check every def"},
    {"run FILE.tc [options]", "run a def (see `tessel run --help`)"},
    {"compile FILE.tc --emit=KIND [--kernel K]", "print ast, ranges, graph, tile, expand,"},
    {"", "select, plan, c, cuda or ptx (`tessel compile --help`)"},
    {"layout EXPR [--json]", "print a layout's mapping"},
    {"tile check|print|expand FILE.tile", "verify; print; print with pipelines expanded"},
    {"tile emit|select FILE.tile", "the generated CUDA, C or PTX; atom selection"},
    {"tile run FILE.tile [options]", "run a tile program (see `tessel tile --help`)"},
    {"bench FILE.tc [options]", "time a def, checked (see `tessel bench --help`)"},
    {"tune FILE.tc [options]", "tune a def's options (see `tessel tune --help`)"},
    {"cache list|show|stats|export|import|clear", "the kernel cache"},
    {"--version", "the version, the commit, and the C compiler,"},
    {"", "NVRTC and CUDA driver found here"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel COMMAND ...\n");
    for (size_t i = 0; i < sizeof usage_rows / sizeof usage_rows[0]; i++)
        fprintf(f, "  %s%-40s %s\n", usage_rows[i][0][0] ? "tessel " : "       ", usage_rows[i][0], usage_rows[i][1]);
    fprintf(f, "environment: TESSEL_TARGET (interp|cpu|cuda), TESSEL_NUM_THREADS (CPU threads),\n"
               "  TESSEL_CACHE_DIR (kernel cache), TESSEL_CC (the C compiler), TESSEL_NVRTC\n");
}

int main(int argc, char **argv)
{
    api_settings_load(); /* the library's settings (src/api/env.c), before any command */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        char *info = tsl_build_info();
        fputs(info ? info : "tessel: out of memory\n", stdout);
        free(info);
        return info ? 0 : 1;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "tessel: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
