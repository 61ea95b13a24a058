/* difftest.c — the random-program differential tester: generates valid TC
 * programs (gen.c), runs each on the reference interpreter and on the CPU
 * target, and compares the outputs within the dtype's tolerance. A mismatch,
 * or an error on one target only, is printed with the program, its sizes and
 * its seed, and saved as tests/fuzz/regress/seed-<seed>.tc (the first
 * program of each distinct failure message in a run; commit them).
 *
 * Build (scripts/difftest.sh does this; there is no Makefile rule):
 *   cc -std=c11 -D_GNU_SOURCE -O1 -g -Iinclude -Isrc -Itests tests/fuzz/difftest.c tests/fuzz/gen.c build/libtessel.a -lsqlite3 -ldl -lm -lpthread -o build/difftest
 *
 * Usage:
 *   build/difftest [-n N] [-s SEED] [-e MAX_ELEMS] [-t MAX_STMTS] [--gemm PERCENT] [--target cpu|cuda|interp]
 *                  [--save DIR] [--no-save] [-v] [FILE.tc ...]
 * With files, runs those (regression files) instead of random programs.
 * --gemm sets the share of contraction-shaped programs (default 20).
 * -v prints every program. --target interp runs the interpreter twice: a
 * fast check of the generator and the front end over many programs.
 * The last line is "N passed, N failed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "fuzz/gen.h"

static void usage(void)
{
    fprintf(stderr, "usage: difftest [-n N] [-s SEED] [-e MAX_ELEMS] [-t MAX_STMTS] "
                    "[--gemm PERCENT] [--target cpu|cuda|interp] [--save DIR] [--no-save] [-v] [FILE.tc ...]\n");
}

/* Save a failing program, with what failed as a comment on top. */
static void save_failure(const char *dir, uint64_t seed, uint64_t data_seed, const char *text,
                         const char *msg)
{
    char path[512];
    snprintf(path, sizeof path, "%s/seed-%016llx.tc", dir, (unsigned long long)seed);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "difftest: cannot write %s\n", path);
        return;
    }
    fprintf(f, "# found by tests/fuzz/difftest (data seed 0x%llx):\n", (unsigned long long)data_seed);
    for (const char *p = msg; *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(f, "#   %.*s\n", n, p);
        p += n + (nl ? 1 : 0);
    }
    fputs(text, f);
    fclose(f);
    printf("saved %s\n", path);
}

/* A failure's signature: the message's first two lines without digits and
 * quoted names, so that one bug hit by many programs is saved once per run. */
static void signature(const char *msg, char *sig, size_t len)
{
    size_t n = 0;
    int lines = 0, quoted = 0;
    for (const char *p = msg; *p && n + 1 < len; p++) {
        if (*p == '\n' && ++lines == 2) break;
        if (*p == '\'') quoted = !quoted;
        else if (!quoted && !(*p >= '0' && *p <= '9')) sig[n++] = *p;
    }
    sig[n] = 0;
}

int main(int argc, char **argv)
{
    long n = 100;
    uint64_t seed = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)clock();
    dt_opts opts = {.max_elems = 4000, .max_stmts = 4, .gemm_percent = 20};
    tsl_target target = TSL_TARGET_CPU;
    const char *save_dir = "tests/fuzz/regress";
    int verbose = 0, nfiles = 0, nsigs = 0;
    static char sigs[64][256];
    char **files = calloc((size_t)argc, sizeof *files);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-n") && i + 1 < argc) n = atol(argv[++i]);
        else if (!strcmp(a, "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "-e") && i + 1 < argc) opts.max_elems = atol(argv[++i]);
        else if (!strcmp(a, "-t") && i + 1 < argc) opts.max_stmts = atoi(argv[++i]);
        else if (!strcmp(a, "--gemm") && i + 1 < argc) opts.gemm_percent = atoi(argv[++i]);
        else if (!strcmp(a, "--save") && i + 1 < argc) save_dir = argv[++i];
        else if (!strcmp(a, "--no-save")) save_dir = NULL;
        else if (!strcmp(a, "-v")) verbose = 1;
        else if (!strcmp(a, "--target") && i + 1 < argc) {
            const char *t = argv[++i];
            if (!strcmp(t, "cpu")) target = TSL_TARGET_CPU;
            else if (!strcmp(t, "interp")) target = TSL_TARGET_INTERP;
            else if (!strcmp(t, "cuda")) target = TSL_TARGET_CUDA;
            else { usage(); free(files); return 2; }
        } else if (a[0] == '-') { usage(); free(files); return 2; }
        else files[nfiles++] = argv[i];
    }
    if (opts.max_elems < 1 || opts.max_stmts < 1) { usage(); free(files); return 2; }
    long total = nfiles ? nfiles : n, pass = 0, fail = 0, interp_only = 0;
    printf("difftest: %ld program%s, seed 0x%llx, target %s\n", total, total == 1 ? "" : "s",
           (unsigned long long)seed,
           target == TSL_TARGET_CPU ? "cpu" : target == TSL_TARGET_INTERP ? "interp" : "cuda");
    fflush(stdout);
    for (long k = 0; k < total; k++) {
        uint64_t pseed = seed + (uint64_t)k * 0x9e3779b97f4a7c15ull;
        uint64_t dseed = pseed ^ 0x5bd1e9955bd1e995ull;
        char *text;
        const char *name;
        char label[64];
        if (nfiles) {
            size_t len;
            text = file_read_all(files[k], &len);
            if (!text) {
                printf("FAIL %s: cannot read it\n", files[k]);
                fail++;
                continue;
            }
            name = files[k];
        } else {
            text = dt_gen_program(pseed, &opts);
            snprintf(label, sizeof label, "seed-%016llx.tc", (unsigned long long)pseed);
            name = label;
        }
        if (verbose) printf("--- %s\n%s", name, text);
        char msg[4096];
        dt_verdict v = dt_run(text, name, dseed, target, msg, sizeof msg);
        if (v == DT_FAIL) {
            fail++;
            printf("FAIL %s (data seed 0x%llx): %s\n%s", name, (unsigned long long)dseed, msg, text);
            char sig[256];
            signature(msg, sig, sizeof sig);
            int seen = 0;
            for (int j = 0; j < nsigs; j++) seen |= strcmp(sigs[j], sig) == 0;
            if (!seen && nsigs < 64) snprintf(sigs[nsigs++], sizeof sigs[0], "%s", sig);
            if (!nfiles && save_dir && !seen) save_failure(save_dir, pseed, dseed, text, msg);
        } else {
            pass++;
            interp_only += v == DT_PASS_INTERP;
        }
        free(text);
        fflush(stdout);
    }
    free(files);
    if (interp_only)
        printf("%s target not available: interpreter only (%ld of %ld programs)\n",
               target == TSL_TARGET_CPU ? "cpu" : "cuda", interp_only, total);
    printf("%ld passed, %ld failed\n", pass, fail);
    return fail ? 1 : 0;
}
