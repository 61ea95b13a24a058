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

#endif
