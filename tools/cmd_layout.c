/* cmd_layout.c — placeholder until this subcommand lands. */
#include <stdio.h>
#include "cli.h"

int cmd_layout(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tessel layout: not available yet\n");
    return 1;
}
