/* tessel.c — the command line: dispatches to one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"check", cmd_check, "check FILE.tc                     check every def"},
    {"run", cmd_run, "run FILE.tc [options]             run a def (see `tessel run --help`)"},
    {"compile", cmd_compile, "compile FILE.tc --emit=ast|ranges print a compiled form"},
    {"layout", cmd_layout, "layout EXPR [--json]              print a layout's mapping"},
    {"tile", cmd_tile, "tile run FILE.tile [options]      run a tile program"},
    {"cache", cmd_cache, "cache list|show|stats|export|import|clear  the kernel cache"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel COMMAND ...\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  tessel %s\n", commands[i].help);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "tessel: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
