/* cli.h — the `tessel` command's subcommands; each lives in its own file
 * and returns the process exit code (0 ok, 1 user error, 2 usage). */
#ifndef TSL_CLI_H
#define TSL_CLI_H

int cmd_check(int argc, char **argv);   /* cmd_tc.c */
int cmd_run(int argc, char **argv);     /* cmd_tc.c */
int cmd_compile(int argc, char **argv); /* cmd_tc.c */
int cmd_layout(int argc, char **argv);  /* cmd_layout.c */
int cmd_tile(int argc, char **argv);    /* cmd_tile.c */
int cmd_cache(int argc, char **argv);   /* cmd_cache.c */

int cmd_bench(int argc, char **argv);   /* cmd_tune.c */
int cmd_tune(int argc, char **argv);    /* cmd_tune.c */

/* A program bound as `tessel run` binds it (cmd_tc.c): the entry compiled,
 * inputs read (--input) or random at --size, scalars set; `allowed` lists
 * the run options the command takes. 0, else the exit code (-1: --help
 * printed). The interpreter target is refused. */
#include <stdio.h>

#include "tessel.h"
typedef struct cli_program {
    tsl_context *ctx;
    tsl_program *prog;
    tsl_args *args;
    tsl_target target;
    const char *target_name;
    void *state;
} cli_program;
int cli_program_bind(int argc, char **argv, const char *usage, const char *allowed, cli_program *out);
/* "mm: A(64,32) float32, B(32,16) float32 on cpu" */
void cli_program_describe(const cli_program *p, FILE *f);
void cli_program_free(cli_program *p);

#endif
