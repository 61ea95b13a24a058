/* cmd_tune.c — `tessel bench` and `tessel tune`: a program bound as `tessel
 * run` binds it (cli_program_bind), then tsl_program_bench or
 * tsl_program_tune. Built only on the public API. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char bench_usage[] =
    "usage: tessel bench FILE.tc [--entry NAME] [--size SYM=N ...] [--target cpu|cuda] [options]\n"
    "  Compile once, check the output against the interpreter, then time whole\n"
    "  runs with the tensors resident on the device (CUDA events; the monotonic\n"
    "  clock on the CPU), input sets rotated past the last-level cache. Prints\n"
    "  the median time, throughput (FLOP/s from the op graph, bytes of the\n"
    "  tensors), the cold compile time and a cached call's overhead.\n"
    "  --budget S            timed runs take about S seconds (default 2)\n"
    "  --input NAME=PATH, --set NAME=VALUE, --seed N, --options K=V,...  as `tessel run`\n"
    "  Without --options a program runs with the options `tessel tune` recorded\n"
    "  for these shapes, if any.\n"
    "  --compare A B         time two option sets against each other: both compiled\n"
    "                        and checked first, then alternating rounds (A B, B A,\n"
    "                        ...) on the same inputs; both medians, B's speedup\n"
    "                        A/B, the rounds' ratios and a 95% interval. A and B\n"
    "                        are options text (K=V,...), `default` or `tuned` (the\n"
    "                        record `tessel tune` made for these shapes):\n"
    "                          tessel bench mm.tc --size ... --compare default tuned\n"
    "  --rounds N            --compare's rounds (default 10); --budget is per side\n";

static const char tune_usage[] =
    "usage: tessel tune FILE.tc [--entry NAME] [--size SYM=N ...] [--target cpu|cuda] [options]\n"
    "  Search the strategies' options for the fastest plan at these sizes:\n"
    "  genetic search (TC's: population, three-parent crossover, mutation,\n"
    "  elites), every candidate checked against the interpreter before it is\n"
    "  timed; the best is recorded in the cache and a later `tessel run` or\n"
    "  `tessel bench` of the same program and shapes uses it, and says so.\n"
    "  --budget T            stop starting candidates after T (120s; 90, 2m)\n"
    "  --generations N       at most N generations (default 8)\n"
    "  --population N        candidates per generation (default 16)\n"
    "  --search genetic|random\n"
    "  --workers N           timing workers (default: one per GPU; the CPU 1)\n"
    "  --devices I,J,...     CUDA: each worker's device ordinal (may repeat)\n"
    "  --seed N              the search's seed (and the random inputs')\n"
    "  --space               print every option, its default and values, and exit\n"
    "  --input NAME=PATH, --set NAME=VALUE  as `tessel run`\n"
    "  A progress line per generation goes to stderr.\n";

static int usage_error(const char *usage, const char *fmt, const char *arg)
{
    fprintf(stderr, "tessel: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return 2;
}

/* "120", "120s", "2m", "1.5h" in seconds; < 0 when malformed. */
static double parse_duration(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0)) return -1;
    double unit = !*end || !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : -1;
    return unit < 0 ? -1 : v * unit;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* Take `--name VALUE` / `--name=VALUE` out of argv; its value, or NULL
 * (*bad set when present without a value). */
static const char *take(int *argc, char **argv, const char *name, int *bad)
{
    size_t n = strlen(name);
    for (int i = 1; i < *argc; i++) {
        if (strncmp(argv[i], name, n) || (argv[i][n] && argv[i][n] != '=')) continue;
        const char *v = argv[i][n] ? argv[i] + n + 1 : i + 1 < *argc ? argv[i + 1] : NULL;
        int used = argv[i][n] ? 1 : 2;
        if (!v) {
            *bad = 1;
            return NULL;
        }
        if (used == 2 && i + 1 >= *argc) used = 1;
        memmove(&argv[i], &argv[i + used], sizeof *argv * (size_t)(*argc - i - used));
        *argc -= used;
        return v;
    }
    return NULL;
}

/* Take `--name A B` out of argv, A and B operands (an argument starting
 * with "--" is an option, not an operand): 1 with the two, 0 when absent.
 * Present without two operands: *bad set, *a the one found (or NULL) and
 * *next the option that came instead (NULL at the end). */
static int take2(int *argc, char **argv, const char *name, const char **a, const char **b, const char **next,
                 int *bad)
{
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], name)) continue;
        int k = 0;
        while (k < 2 && i + 1 + k < *argc && strncmp(argv[i + 1 + k], "--", 2)) k++;
        if (k < 2) {
            *bad = 1;
            *a = k ? argv[i + 1] : NULL;
            *next = i + 1 + k < *argc ? argv[i + 1 + k] : NULL;
            return 0;
        }
        *a = argv[i + 1];
        *b = argv[i + 2];
        memmove(&argv[i], &argv[i + 3], sizeof *argv * (size_t)(*argc - i - 3));
        *argc -= 3;
        return 1;
    }
    return 0;
}

static void report(tsl_context *ctx, const char *what)
{
    const char *msg = ctx ? tsl_context_error(ctx) : "";
    fprintf(stderr, "tessel %s: %s\n", what, msg && *msg ? msg : "failed");
}

/* ---- bench ---------------------------------------------------------------------------------- */

static const char *side_name(const tsl_bench_side *s)
{
    return s->options[0] ? s->options : "(the defaults)";
}

/* The usage error of --compare without two option sets: a the one found
 * (or NULL), next the option that came instead (or NULL at the end). */
static int compare_usage_error(const char *a, const char *next)
{
    char msg[512];
    if (a)
        snprintf(msg, sizeof msg, "--compare needs two option sets A and B, found only '%s'", a);
    else
        snprintf(msg, sizeof msg, "--compare needs two option sets A and B, found none");
    if (next) snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " before %s", next);
    return usage_error(bench_usage, "%s", msg);
}

/* `tessel bench --compare A B`: tsl_program_bench_compare, printed. */
static int bench_compare(cli_program *p, const char *a, const char *b, double budget_s, int rounds)
{
    tsl_bench_compare_config cfg = {.budget_s = budget_s, .rounds = rounds};
    tsl_bench_compare_result r;
    if (tsl_program_bench_compare(p->prog, p->args, p->target, a, b, &cfg, &r)) {
        report(p->ctx, "bench");
        return 1;
    }
    cli_program_describe(p, stdout);
    printf(": A against B, %d alternating round%s\n", r.rounds, r.rounds == 1 ? "" : "s");
    printf("  check       ok: max error %.3g (A), %.3g (B) of the tolerance (%s)\n", r.a.check_error, r.b.check_error,
           r.check_reduced ? "at sizes cut to 67: the interpreter would take too long here" : "at these sizes");
    const tsl_bench_side *side[2] = {&r.a, &r.b};
    for (int i = 0; i < 2; i++) {
        const tsl_bench_side *s = side[i];
        printf("  %c           median %.4f ms  (p10 %.4f, p90 %.4f, min %.4f; %d runs)\n", "AB"[i], s->median_ms,
               s->p10_ms, s->p90_ms, s->min_ms, s->reps);
        printf("  %c options   %s%s\n", "AB"[i], side_name(s),
               s->tuned ? "  (tuned: the record `tessel tune` made for these shapes)" : "");
    }
    printf("  A/B         %.3fx  (the medians; above 1: B is faster)\n", r.ratio);
    printf("  rounds      A/B per round: median %.3fx, min %.3fx, max %.3fx (%d round%s over %d input set%s)\n",
           r.round_median, r.round_min, r.round_max, r.rounds, r.rounds == 1 ? "" : "s", r.sets,
           r.sets == 1 ? "" : "s");
    printf("  interval    %.3fx .. %.3fx  (%.1f%% for the rounds' median): %s\n", r.lo, r.hi, 100 * r.coverage,
           r.verdict > 0   ? "B is faster"
           : r.verdict < 0 ? "A is faster"
           : r.coverage < 0.9 ? "too few rounds to tell (5 or more)"
                              : "no difference beyond the noise");
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    int bad = 0;
    const char *ca = NULL, *cb = NULL, *next = NULL;
    int compare = take2(&argc, argv, "--compare", &ca, &cb, &next, &bad);
    if (bad) return compare_usage_error(ca, next);
    const char *budget = take(&argc, argv, "--budget", &bad), *rounds = take(&argc, argv, "--rounds", &bad);
    if (bad) return usage_error(bench_usage, "%s", "--budget and --rounds need a value");
    tsl_bench_config cfg = {0};
    if (budget && (cfg.budget_s = parse_duration(budget)) < 0)
        return usage_error(bench_usage, "--budget takes seconds (2, 0.5s, 1m), not '%s'", budget);
    int nrounds = 0;
    if (rounds && !compare) return usage_error(bench_usage, "%s", "--rounds is for --compare");
    if (rounds && parse_int(rounds, 1, 1000, &nrounds))
        return usage_error(bench_usage, "--rounds takes 1..1000, not '%s'", rounds);
    if (compare) {
        for (int i = 1; i < argc; i++)
            if (!strncmp(argv[i], "--options", 9) && (!argv[i][9] || argv[i][9] == '='))
                return usage_error(bench_usage, "%s", "--options and --compare: give the options in --compare");
        cli_program p;
        int rc = cli_program_bind(argc, argv, bench_usage, "entry input set size target seed", &p);
        if (!rc) rc = bench_compare(&p, ca, cb, cfg.budget_s, nrounds);
        cli_program_free(&p);
        return rc < 0 ? 0 : rc;
    }
    cli_program p;
    int rc = cli_program_bind(argc, argv, bench_usage, "entry input set size target seed options", &p);
    if (rc) {
        cli_program_free(&p);
        return rc < 0 ? 0 : rc;
    }
    tsl_bench_result r;
    tsl_status st = tsl_program_bench(p.prog, p.args, p.target, &cfg, &r);
    if (st) {
        report(p.ctx, "bench");
        cli_program_free(&p);
        return 1;
    }
    cli_program_describe(&p, stdout);
    printf("\n");
    printf("  check       ok: max error %.3g of the tolerance (%s)\n", r.check_error,
           r.check_reduced ? "at sizes cut to 67: the interpreter would take too long here" : "at these sizes");
    printf("  median      %.4f ms  (p10 %.4f, p90 %.4f, min %.4f; %d runs over %d input set%s)\n", r.median_ms,
           r.p10_ms, r.p90_ms, r.min_ms, r.reps, r.sets, r.sets == 1 ? "" : "s");
    double s = r.median_ms * 1e-3;
    printf("  throughput  %.4g GFLOP/s (%.4g GFLOP), %.4g GB/s (%.4g MB of tensors)\n", r.flops / s * 1e-9,
           r.flops * 1e-9, r.bytes / s * 1e-9, r.bytes * 1e-6);
    printf("  compile     cold %.1f ms; from the cache %.2f ms\n", r.cold_compile_ms, r.cached_prepare_ms);
    printf("  call        %.4f ms end to end (tsl_program_run, cached): %.4f ms over the fastest timed run\n",
           r.call_ms, r.call_ms - r.min_ms);
    printf("  options     %s%s\n", r.options[0] ? r.options : "(the defaults)",
           r.tuned ? "  (tuned: `tessel tune` found them for these shapes)" : "");
    cli_program_free(&p);
    return 0;
}

/* ---- tune ----------------------------------------------------------------------------------- */

static void progress_line(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

int cmd_tune(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--space")) {
            char *space = tsl_options_space();
            fputs(space ? space : "", stdout);
            free(space);
            return 0;
        }
    int bad = 0;
    const char *budget = take(&argc, argv, "--budget", &bad), *gens = take(&argc, argv, "--generations", &bad),
               *pop = take(&argc, argv, "--population", &bad), *search = take(&argc, argv, "--search", &bad),
               *workers = take(&argc, argv, "--workers", &bad), *devices = take(&argc, argv, "--devices", &bad);
    if (bad) return usage_error(tune_usage, "%s", "an option needs a value");
    tsl_tune_config cfg = {.progress = progress_line};
    int devs[16], ndev = 0;
    if (budget && (cfg.budget_s = parse_duration(budget)) < 0)
        return usage_error(tune_usage, "--budget takes a duration (120s, 90, 2m), not '%s'", budget);
    if (gens && parse_int(gens, 1, 1000, &cfg.generations))
        return usage_error(tune_usage, "--generations takes 1..1000, not '%s'", gens);
    if (pop && parse_int(pop, 2, 1000, &cfg.population))
        return usage_error(tune_usage, "--population takes 2..1000, not '%s'", pop);
    if (search && strcmp(search, "genetic") && strcmp(search, "random"))
        return usage_error(tune_usage, "--search takes genetic or random, not '%s'", search);
    cfg.random_search = search && !strcmp(search, "random");
    if (workers && parse_int(workers, 1, 16, &cfg.workers))
        return usage_error(tune_usage, "--workers takes 1..16, not '%s'", workers);
    if (devices) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", devices);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            if (ndev == 16 || parse_int(tok, 0, 1023, &devs[ndev]))
                return usage_error(tune_usage, "--devices takes up to 16 ordinals (0,1 or 0,0), not '%s'", devices);
            ndev++;
        }
        if (cfg.workers && cfg.workers != ndev)
            return usage_error(tune_usage, "--workers and --devices disagree (%s devices)", devices);
        cfg.workers = ndev;
        cfg.devices = devs;
    }
    cli_program p;
    int rc = cli_program_bind(argc, argv, tune_usage, "entry input set size target seed", &p);
    if (rc) {
        cli_program_free(&p);
        return rc < 0 ? 0 : rc;
    }
    if (devices && p.target != TSL_TARGET_CUDA) {
        cli_program_free(&p);
        return usage_error(tune_usage, "%s", "--devices is for --target cuda");
    }
    cli_program_describe(&p, stderr);
    fprintf(stderr, ": tuning\n");
    tsl_tune_result r;
    tsl_status st = tsl_program_tune(p.prog, p.args, p.target, &cfg, &r);
    if (st) {
        report(p.ctx, "tune");
        cli_program_free(&p);
        return 1;
    }
    printf("tuned %s on %s: best %.4f ms, %.2fx the default (%.4f ms); %d tried, %d failed, %d rejected, "
           "%d generations, %.1f s\n",
           tsl_program_name(p.prog), p.target_name, r.best_ms, r.default_ms > 0 ? r.default_ms / r.best_ms : 0,
           r.default_ms, r.tried, r.failed, r.rejected, r.generations, r.wall_s);
    printf("options: %s\n", r.best_options[0] ? r.best_options : "(the defaults are the best found)");
    printf("timed by:");
    for (int i = 0; i < r.workers && i < 16; i++) {
        if (r.device_of[i] >= 0) printf(" worker %d (gpu %d) %d;", i, r.device_of[i], r.timed_by[i]);
        else printf(" worker %d (cpu) %d;", i, r.timed_by[i]);
    }
    if (r.best_device >= 0) printf(" the best on gpu %d", r.best_device);
    printf("\n%s\n", r.recorded ? "recorded: `tessel run` and `tessel bench` of these shapes use it "
                                  "(`tessel cache list --kind tuned`)"
                                : "not recorded");
    cli_program_free(&p);
    return 0;
}
