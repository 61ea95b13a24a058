/* cli_path.h — the files behind command-line paths: do two paths name one
 * file (an output that would overwrite an input, two outputs in one
 * file)? */
#ifndef TSL_CLI_PATH_H
#define TSL_CLI_PATH_H

/* 1 when a and b name the same regular file, or the same file to be
 * created (their folders resolved: "out.npy" and "./x/../out.npy" are
 * one); 0 otherwise, and for devices and FIFOs (two outputs to /dev/null
 * are fine). */
int cli_same_file(const char *a, const char *b);

#endif
