/* cmd_tc.c — placeholder until this subcommand lands. */
#include <stdio.h>
#include "cli.h"

int cmd_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tessel check: not available yet\n");
    return 1;
}

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tessel run: not available yet\n");
    return 1;
}

int cmd_compile(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tessel compile: not available yet\n");
    return 1;
}
