/* cmd_tile.c — placeholder until this subcommand lands. */
#include <stdio.h>
#include "cli.h"

int cmd_tile(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tessel tile: not available yet\n");
    return 1;
}
