/* cmd_tc.c — `tessel check`, `tessel run` and `tessel compile` for TC
 * programs. Built only on the public API (include/tessel.h) plus base's
 * small helpers; host-tensor chores live in cli_tensor.c.
 *
 * Exit codes (tools/cli.h): 0 ok, 1 user error (the library's message on
 * stderr), 2 usage error (unknown option, malformed NAME=VALUE). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "cli.h"
#include "cli_env.h"
#include "cli_path.h"
#include "cli_tensor.h"

/* ---- usage ------------------------------------------------------------- */

static const char check_usage[] =
    "usage: tessel check FILE.tc\n"
    "  Check every def of FILE.tc; exit 0 when all are valid, else print\n"
    "  the diagnostics and exit 1.\n";

static const char run_usage[] =
    "usage: tessel run FILE.tc [options]\n"
    "  --entry NAME          the def to run (needed when the file has several)\n"
    "  --input NAME=PATH     bind a tensor parameter from a .npy file\n"
    "  --set NAME=VALUE      bind a scalar parameter\n"
    "  --output NAME=PATH    write an output to a .npy file\n"
    "  --size SYM=N          the extent of a size symbol for random inputs\n"
    "  --target T            interp, cpu or cuda (default: cuda when a GPU is\n"
    "                        present, else cpu; TESSEL_TARGET overrides)\n"
    "  --check               also run the interpreter and compare every output\n"
    "  --options K=V,...     the strategies' options (`tessel tune --space` lists\n"
    "                        them; TESSEL_OPTIONS in the environment too)\n"
    "  --allow-tf32          let f32 contractions on CUDA use tf32 tensor cores\n"
    "                        (A and B rounded to 10 fraction bits; default: exact\n"
    "                        float32); --check then allows tf32's error\n"
    "  --seed N              seed for the random inputs (default: fresh)\n"
    "  --print               print small outputs whole\n"
    "  --verbose             say where the time went: planning, generating code,\n"
    "                        compiling, loading, running; and which kernels were\n"
    "                        compiled, read from the kernel cache or already loaded\n"
    "  --packed              low-bit inputs and outputs as their packed bytes\n"
    "                        (uint8; a packed input's shape comes from --size\n"
    "                        or the other inputs)\n"
    "  Tensor parameters not given with --input get fresh random values:\n"
    "  floats in [-1,1), signed ints in [-8,8), unsigned in [0,8) (an integer\n"
    "  tensor read as a gather index: within the dim it indexes), bools 0/1,\n"
    "  low-bit types over their whole range. Without --packed a low-bit input\n"
    "  is read as logical values in any wider dtype (integers must fit) and a\n"
    "  low-bit output is written as int8/uint8 or float32 values.\n";

static const char compile_usage[] =
    "usage: tessel compile FILE.tc [--entry NAME] [--target cpu|cuda] [--arch sm_80|sm_90a]\n"
    "                      [--options K=V,...] [--allow-tf32] --emit=KIND [--kernel NAME]\n"
    "  Print, for every def unless --entry names one, one stage of compiling it:\n"
    "    ast      the checked program        ranges  every inferred range\n"
    "    graph    the op graph               tile    the scheduled tile IR and launch plan\n"
    "    expand   tile IR, pipelines expanded select  tile IR after instruction selection\n"
    "    plan     the launch plan the executor runs\n"
    "    c        the generated C (the CPU plan)   cuda  the generated CUDA C (the CUDA plan)\n"
    "    ptx      that CUDA C compiled by NVRTC (no GPU needed)\n"
    "  tile, expand, select and plan are for --target (default cuda when a GPU\n"
    "  is present, else cpu). --arch picks the CUDA plan's architecture (sm_80:\n"
    "  mma.sync and cp.async; sm_90a: TMA, wgmma and warp specialisation;\n"
    "  default sm_80). c, cuda and ptx print each kernel once; --kernel NAME\n"
    "  prints that one (--emit=tile names them). --options sets the strategies'\n"
    "  choices (`tessel tune --space`); --allow-tf32 lets f32 contractions on\n"
    "  CUDA use tf32 tensor cores. TESSEL_DUMP=tile,source,... (or all)\n"
    "  prints those stages on stderr during `tessel run` and `tessel compile`.\n";

static int usage_error(const char *usage, const char *fmt, const char *arg)
{
    fprintf(stderr, "tessel: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return 2;
}

/* ---- option parsing ------------------------------------------------------ */

/* A NAME=VALUE pair from the command line (both point into argv). */
typedef struct cli_kv {
    char *name;
    const char *value;
    int used;
} cli_kv;

typedef struct run_opts {
    const char *file;
    const char *entry;
    const char *emit;
    const char *arch; /* compile: sm_80 or sm_90a for the CUDA kinds */
    const char *kernel;  /* compile: the kernel of c/cuda/ptx to print */
    const char *options; /* --options K=V,... */
    cli_kv *inputs, *sets, *outputs, *sizes;
    int ninputs, nsets, noutputs, nsizes;
    tsl_target target;
    const char *target_name;
    int check, print, has_seed, packed, verbose, allow_tf32;
    uint64_t seed;
} run_opts;

/* Split "NAME=VALUE" in place; 0 on success. */
static int split_kv(char *arg, cli_kv *kv)
{
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) return -1;
    *eq = 0;
    kv->name = arg;
    kv->value = eq + 1;
    kv->used = 0;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!*s || *s == '-' || *s == '+') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* Parse argv[1..] into o. `allowed` is a string of the options this
 * subcommand takes, e.g. "entry emit". Returns 0, or 2 after printing a
 * usage error, or -1 for --help (usage printed to stdout). */
static int parse_opts(int argc, char **argv, const char *usage, const char *allowed,
                      run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->target = TSL_TARGET_INTERP;
    o->target_name = NULL; /* none named: `run` asks tsl_target_choose() */
    size_t cap = (size_t)argc + 1;
    o->inputs = calloc(cap, sizeof(cli_kv));
    o->sets = calloc(cap, sizeof(cli_kv));
    o->outputs = calloc(cap, sizeof(cli_kv));
    o->sizes = calloc(cap, sizeof(cli_kv));
    if (!o->inputs || !o->sets || !o->outputs || !o->sizes) {
        fprintf(stderr, "tessel: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return -1;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (a[0] == '-' && a[1]) return usage_error(usage, "unknown option '%s'", a);
            if (o->file) return usage_error(usage, "unexpected argument '%s'", a);
            o->file = a;
            continue;
        }
        /* --opt VALUE or --opt=VALUE */
        char name[32];
        const char *inline_val = NULL;
        const char *eq = strchr(a + 2, '=');
        size_t nlen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        if (nlen >= sizeof name) return usage_error(usage, "unknown option '%s'", a);
        memcpy(name, a + 2, nlen);
        name[nlen] = 0;
        if (eq) inline_val = eq + 1;
        /* the option must be a whole word of `allowed` */
        const char *hit = strstr(allowed, name);
        int known = nlen > 0 && hit && (hit == allowed || hit[-1] == ' ') &&
                    (hit[nlen] == ' ' || hit[nlen] == 0);
        if (!known) return usage_error(usage, "unknown option '%s'", a);
        int is_flag = !strcmp(name, "check") || !strcmp(name, "print") || !strcmp(name, "packed") ||
                      !strcmp(name, "verbose") || !strcmp(name, "allow-tf32");
        if (is_flag) {
            if (inline_val) return usage_error(usage, "option '%s' takes no value", a);
            if (name[0] == 'a') o->allow_tf32 = 1;
            else if (name[0] == 'c') o->check = 1;
            else if (name[0] == 'v') o->verbose = 1;
            else if (name[1] == 'r') o->print = 1;
            else o->packed = 1;
            continue;
        }
        char *val;
        if (inline_val) {
            val = (char *)inline_val;
        } else {
            if (i + 1 >= argc) return usage_error(usage, "option '%s' needs a value", a);
            val = argv[++i];
        }
        if (!strcmp(name, "entry")) {
            o->entry = val;
        } else if (!strcmp(name, "kernel")) {
            o->kernel = val;
        } else if (!strcmp(name, "emit")) {
            static const char *const kinds[] = {"ast",    "ranges", "graph", "tile", "expand",
                                                "select", "plan",   "c",     "cuda", "ptx"};
            int ok = 0;
            for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) ok |= !strcmp(val, kinds[k]);
            if (!ok)
                return usage_error(usage,
                                   "--emit takes ast, ranges, graph, tile, expand, select, plan, c, cuda or ptx, not '%s'",
                                   val);
            o->emit = val;
        } else if (!strcmp(name, "options")) {
            o->options = val;
        } else if (!strcmp(name, "arch")) {
            if (strcmp(val, "sm_80") && strcmp(val, "sm_90a"))
                return usage_error(usage, "--arch takes sm_80 or sm_90a, not '%s'", val);
            o->arch = val;
        } else if (!strcmp(name, "target")) {
            if (tsl_target_parse(val, &o->target) != 0)
                return usage_error(usage, "--target takes interp, cpu or cuda, not '%s'", val);
            o->target_name = val;
        } else if (!strcmp(name, "seed")) {
            if (parse_u64(val, &o->seed))
                return usage_error(usage, "--seed takes a non-negative integer, not '%s'", val);
            o->has_seed = 1;
        } else {
            cli_kv kv;
            if (split_kv(val, &kv))
                return usage_error(usage, "expected NAME=VALUE, got '%s'", val);
            if (!strcmp(name, "input")) o->inputs[o->ninputs++] = kv;
            else if (!strcmp(name, "set")) o->sets[o->nsets++] = kv;
            else if (!strcmp(name, "output")) o->outputs[o->noutputs++] = kv;
            else if (!strcmp(name, "size")) o->sizes[o->nsizes++] = kv;
        }
    }
    if (!o->file) return usage_error(usage, "%s", "missing FILE.tc");
    return 0;
}

static void free_opts(run_opts *o)
{
    free(o->inputs);
    free(o->sets);
    free(o->outputs);
    free(o->sizes);
}

/* ---- shared steps -------------------------------------------------------- */

/* Print the context's message (or a fallback naming the status) on stderr. */
static void report(tsl_context *ctx, tsl_status st, const char *what)
{
    const char *msg = ctx ? tsl_context_error(ctx) : "";
    if (!msg || !*msg) {
        if (st == TSL_ERR_UNAVAILABLE)
            fprintf(stderr, "tessel: %s: not available (%s)\n", what, tsl_status_name(st));
        else
            fprintf(stderr, "tessel: %s failed (%s)\n", what, tsl_status_name(st));
        return;
    }
    size_t n = strlen(msg);
    fputs(msg, stderr);
    if (msg[n - 1] != '\n') fputc('\n', stderr);
}

/* The whole file, or NULL after a message naming it. */
static char *read_source(const char *path)
{
    size_t len;
    char *src = file_read_max(path, TSL_MAX_SOURCE_BYTES, &len);
    if (!src && errno == EFBIG)
        fprintf(stderr, "tessel: cannot read '%s': it is larger than %zu MiB, not a TC program\n", path,
                TSL_MAX_SOURCE_BYTES >> 20);
    else if (!src)
        fprintf(stderr, "tessel: cannot read '%s': %s\n", path, strerror(errno));
    return src;
}

static int is_ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The names of the defs in a source, in order: a light scan for `def NAME`
 * outside `#` comments, used to list the defs and to emit each one. The
 * library has already checked the source, so this never judges syntax.
 * Returns the count; *names and each names[i] are malloc'd (free_names). */
static int scan_defs(const char *src, char ***names)
{
    int n = 0, cap = 8;
    char **out = malloc(sizeof(char *) * (size_t)cap);
    const char *p = src;
    while (out && *p) {
        if (*p == '#') {
            while (*p && *p != '\n') p++;
            continue;
        }
        int at_word = p == src || !is_ident_char(p[-1]);
        if (at_word && !strncmp(p, "def", 3) && (p[3] == ' ' || p[3] == '\t' || p[3] == '\n')) {
            const char *q = p + 3;
            while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
            const char *s = q;
            while (is_ident_char(*q)) q++;
            if (q > s) {
                if (n == cap) {
                    cap *= 2;
                    char **grown = realloc(out, sizeof(char *) * (size_t)cap);
                    if (!grown) break;
                    out = grown;
                }
                char *name = strndup(s, (size_t)(q - s));
                if (name) out[n++] = name;
            }
            p = q;
            continue;
        }
        p++;
    }
    *names = out;
    return n;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Read, check and (when entry is NULL and there are several defs) refuse
 * with the list of defs. On success *src holds the source. */
static int load_checked(tsl_context *ctx, const char *path, const char *entry,
                        const char *cmd, char **src_out)
{
    char *src = read_source(path);
    if (!src) return 1;
    tsl_status st = tsl_check(ctx, src, path);
    if (st != TSL_OK) {
        report(ctx, st, "check");
        free(src);
        return 1;
    }
    if (!entry) {
        char **names;
        int n = scan_defs(src, &names);
        if (n > 1) {
            fprintf(stderr, "tessel %s: %s has %d defs (", cmd, path, n);
            for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? ", " : "", names[i]);
            fprintf(stderr, "); choose one with --entry NAME\n");
            free_names(names, n);
            free(src);
            return 1;
        }
        free_names(names, n);
    }
    *src_out = src;
    return 0;
}

/* ---- tessel check -------------------------------------------------------- */

int cmd_check(int argc, char **argv)
{
    run_opts o;
    int rc = parse_opts(argc, argv, check_usage, "", &o);
    if (rc) {
        free_opts(&o);
        return rc < 0 ? 0 : rc;
    }
    tsl_context *ctx = tsl_context_create();
    char *src = NULL;
    if (!ctx) {
        fprintf(stderr, "tessel: out of memory\n");
        rc = 1;
    } else if (!(src = read_source(o.file))) {
        rc = 1;
    } else {
        tsl_status st = tsl_check(ctx, src, o.file);
        if (st != TSL_OK) {
            report(ctx, st, "check");
            rc = 1;
        } else {
            char **names;
            int n = scan_defs(src, &names);
            printf("%s: ok (%d def%s:", o.file, n, n == 1 ? "" : "s");
            for (int i = 0; i < n; i++) printf(" %s", names[i]);
            printf(")\n");
            free_names(names, n);
        }
    }
    free(src);
    tsl_context_free(ctx);
    free_opts(&o);
    return rc;
}

/* ---- options --------------------------------------------------------------- */

/* The environment's options (cli_env.c), then --options (the last value of
 * a key wins), onto p. 0, or 2 after the library's message (a bad key or
 * value is a usage error). */
static int apply_options(tsl_program *p, tsl_context *ctx, const char *cli, int allow_tf32)
{
    if (allow_tf32) tsl_program_set_allow_tf32(p, 1);
    char text[2048] = "";
    if (cli_env_options(text, sizeof text)) return 2;
    if (cli && *cli) {
        size_t len = strlen(text);
        snprintf(text + len, sizeof text - len, "%s%s", len ? "," : "", cli);
    }
    if (!*text) return 0;
    tsl_status st = tsl_program_set_options(p, text);
    if (st) {
        report(ctx, st, "options");
        return 2;
    }
    return 0;
}

/* ---- TESSEL_DUMP -------------------------------------------------------- */

/* TESSEL_DUMP=stage,stage,... (or all): print those compile stages of p
 * for target t on stderr, each under a header. The library reads no
 * environment; this is where the variable is read. Returns 0, or 2 after
 * naming an unknown stage. */
static int dump_stages(tsl_program *p, tsl_context *ctx, tsl_target t)
{
    static const char *const stages[] = {"ast", "ranges", "graph", "tile", "expand", "select", "source", "plan"};
    const char *env = getenv("TESSEL_DUMP");
    if (!env || !*env) return 0;
    int want[sizeof stages / sizeof stages[0]] = {0};
    for (const char *w = env; *w;) {
        size_t n = strcspn(w, ",");
        int all = n == 3 && !strncmp(w, "all", 3), known = all;
        for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++)
            if (all || (strlen(stages[i]) == n && !strncmp(w, stages[i], n))) want[i] = known = 1;
        if (!known && n) {
            fprintf(stderr, "tessel: TESSEL_DUMP: unknown stage '%.*s' (stages: ast, ranges, graph, tile, expand, "
                            "select, source, plan, all)\n", (int)n, w);
            return 2;
        }
        w += n;
        if (*w == ',') w++;
    }
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) { /* in pass order */
        if (!want[i]) continue;
        char what[32];
        snprintf(what, sizeof what, "%s%s%s", stages[i], i >= 3 ? ":" : "",
                 i >= 3 ? (t == TSL_TARGET_CUDA ? "cuda" : "cpu") : "");
        char *text = NULL;
        fprintf(stderr, "== TESSEL_DUMP %s of '%s' ==\n", what, tsl_program_name(p));
        if (tsl_program_emit(p, what, &text) == TSL_OK) fputs(text, stderr);
        else report(ctx, TSL_ERR_ARG, what);
        free(text);
    }
    return 0;
}

/* ---- tessel compile ------------------------------------------------------ */

static int emit_one(tsl_context *ctx, const char *src, const char *path, const char *entry,
                    const char *what, const char *options, int allow_tf32)
{
    tsl_program *p = NULL;
    tsl_status st = tsl_program_compile(ctx, src, path, entry, &p);
    if (st != TSL_OK) {
        report(ctx, st, "compile");
        return 1;
    }
    int rc = apply_options(p, ctx, options, allow_tf32);
    if (rc) {
        tsl_program_free(p);
        return rc;
    }
    const char *colon = strchr(what, ':');
    rc = dump_stages(p, ctx, (colon && !strcmp(colon, ":cuda")) || !strcmp(what, "cuda") ? TSL_TARGET_CUDA
                                                                                         : TSL_TARGET_CPU);
    if (rc) {
        tsl_program_free(p);
        return rc;
    }
    char *text = NULL;
    st = tsl_program_emit(p, what, &text);
    if (st != TSL_OK) {
        report(ctx, st, "emit");
        tsl_program_free(p);
        return 1;
    }
    fputs(text, stdout);
    if (*text && text[strlen(text) - 1] != '\n') fputc('\n', stdout);
    /* several kernels of C: say how to see one */
    static const char mark[] = "from tile kernel '";
    int nk = 0;
    for (const char *q = strstr(text, mark); q; q = strstr(q + 1, mark)) nk++;
    if (nk > 1 && !strchr(what, '@')) {
        fprintf(stderr, "tessel compile: %d kernels in '%s' (", nk, tsl_program_name(p));
        int k = 0;
        for (const char *q = strstr(text, mark); q; q = strstr(q + 1, mark)) {
            const char *nm = q + sizeof mark - 1, *e = strchr(nm, '\'');
            if (e) fprintf(stderr, "%s%.*s", k++ ? ", " : "", (int)(e - nm), nm);
        }
        fprintf(stderr, "); --kernel NAME prints one\n");
    }
    free(text);
    tsl_program_free(p);
    return 0;
}

/* The target when none is named (tsl_target_choose: $TESSEL_TARGET, else
 * CUDA when a device opens, else the CPU) into *t: 0, or 1 after saying
 * why $TESSEL_TARGET names no target. */
static int default_target(const char *cmd, tsl_target *t)
{
    tsl_context *ctx = tsl_context_create();
    tsl_status st = ctx ? tsl_target_choose(ctx, t) : TSL_ERR_NOMEM;
    const char *msg = ctx ? tsl_context_error(ctx) : "out of memory";
    if (st) fprintf(stderr, "tessel %s: %s\n", cmd, strncmp(msg, "error: ", 7) ? msg : msg + 7);
    tsl_context_free(ctx);
    return st != TSL_OK;
}

int cmd_compile(int argc, char **argv)
{
    run_opts o;
    int rc = parse_opts(argc, argv, compile_usage, "entry emit target arch options kernel allow-tf32", &o);
    if (rc) {
        free_opts(&o);
        return rc < 0 ? 0 : rc;
    }
    /* tile, expand, select and plan show the plan of the target `run` would use */
    char emit_kind[32];
    if (o.emit && (!strcmp(o.emit, "tile") || !strcmp(o.emit, "expand") || !strcmp(o.emit, "select") ||
                   !strcmp(o.emit, "plan"))) {
        tsl_target t = o.target;
        if (!o.target_name && default_target("compile", &t)) {
            free_opts(&o);
            return 1;
        }
        snprintf(emit_kind, sizeof emit_kind, "%s:%s", o.emit, t == TSL_TARGET_CUDA ? "cuda" : "cpu");
        o.emit = emit_kind;
    }
    if (!o.emit) {
        free_opts(&o);
        return usage_error(compile_usage, "%s", "missing --emit=ast|ranges|graph|tile|c|cuda|ptx");
    }
    /* the CUDA kinds for an arch: sm_80 unless --arch says */
    char kind[48], kkind[256];
    if (o.arch && (!strcmp(o.emit, "cuda") || !strcmp(o.emit, "ptx") || !strncmp(o.emit + strcspn(o.emit, ":"), ":cuda", 5))) {
        snprintf(kind, sizeof kind, "%s:%s", o.emit, o.arch);
        o.emit = kind;
    }
    if (o.kernel) {
        if (strcmp(o.emit, "c") && strncmp(o.emit, "cuda", 4) && strncmp(o.emit, "ptx", 3)) {
            free_opts(&o);
            return usage_error(compile_usage, "%s", "--kernel goes with --emit=c, cuda or ptx");
        }
        snprintf(kkind, sizeof kkind, "%s@%s", o.emit, o.kernel);
        o.emit = kkind;
    }
    tsl_context *ctx = tsl_context_create();
    char *src = read_source(o.file);
    if (!ctx || !src) {
        rc = 1;
    } else if (tsl_check(ctx, src, o.file) != TSL_OK) {
        report(ctx, TSL_ERR_SYNTAX, "check");
        rc = 1;
    } else if (o.entry) {
        rc = emit_one(ctx, src, o.file, o.entry, o.emit, o.options, o.allow_tf32);
    } else if (o.kernel) {
        /* the def whose kernels are named after it: `<def>_...` (the longest such name) */
        char **names;
        int n = scan_defs(src, &names), best = -1;
        for (int i = 0; i < n; i++) {
            size_t l = strlen(names[i]);
            if (!strncmp(o.kernel, names[i], l) && o.kernel[l] == '_' && (best < 0 || l > strlen(names[best])))
                best = i;
        }
        rc = emit_one(ctx, src, o.file, best >= 0 ? names[best] : n ? names[0] : NULL, o.emit, o.options, o.allow_tf32);
        free_names(names, n);
    } else {
        char **names;
        int n = scan_defs(src, &names);
        for (int i = 0; i < n && !rc; i++) {
            if (i) fputc('\n', stdout);
            rc = emit_one(ctx, src, o.file, names[i], o.emit, o.options, o.allow_tf32);
        }
        free_names(names, n);
    }
    free(src);
    tsl_context_free(ctx);
    free_opts(&o);
    return rc;
}

/* ---- tessel run ---------------------------------------------------------- */

/* A size symbol's extent and where it came from (tensor NULL: --size). */
typedef struct size_bind {
    const char *sym;
    int64_t value;
    const char *tensor;
    int dim;
} size_bind;

/* Everything `run` holds, freed in one place. */
typedef struct run_state {
    run_opts o;
    tsl_context *ctx;
    tsl_program *prog;
    tsl_args *args, *ref_args;
    int nparams;
    tsl_param_info *params;
    const char *(*dims)[TSL_MAX_RANK];
    char (*cdims)[TSL_MAX_RANK][24]; /* a constant dim's extent as text ("3"), dims[i][d] points here */
    DLTensor **tensors;  /* per param: the bound input (owned) */
    DLTensor **pristine; /* per param: a copy of an in/out input for --check */
    DLTensor **packed_in; /* per param: a --packed input's bytes until its shape is known */
    double *scalars;
    int *scalar_set;
    size_bind *sizes;
    int nsizes;
} run_state;

static void run_state_free(run_state *s)
{
    tsl_args_free(s->args);
    tsl_args_free(s->ref_args);
    for (int i = 0; i < s->nparams; i++) {
        if (s->tensors) tsl_tensor_free(s->tensors[i]);
        if (s->pristine) tsl_tensor_free(s->pristine[i]);
        if (s->packed_in) tsl_tensor_free(s->packed_in[i]);
    }
    free(s->tensors);
    free(s->pristine);
    free(s->packed_in);
    free(s->params);
    free(s->dims);
    free(s->cdims);
    free(s->scalars);
    free(s->scalar_set);
    free(s->sizes);
    tsl_program_free(s->prog);
    tsl_context_free(s->ctx);
    free_opts(&s->o);
}

static int find_param(const run_state *s, const char *name)
{
    for (int i = 0; i < s->nparams; i++)
        if (!strcmp(s->params[i].name, name)) return i;
    return -1;
}

static int is_output_name(const run_state *s, const char *name)
{
    int n = tsl_program_output_count(s->prog);
    for (int i = 0; i < n; i++)
        if (!strcmp(tsl_program_output_name(s->prog, i), name)) return 1;
    return 0;
}

static size_bind *find_size(run_state *s, const char *sym)
{
    for (int i = 0; i < s->nsizes; i++)
        if (!strcmp(s->sizes[i].sym, sym)) return &s->sizes[i];
    return NULL;
}

/* "A(M,K)" for messages. */
static void param_sig(char *buf, size_t cap, const run_state *s, int i)
{
    size_t len = (size_t)snprintf(buf, cap, "%s(", s->params[i].name);
    for (int d = 0; d < s->params[i].rank && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", d ? "," : "",
                                s->dims[i][d] ? s->dims[i][d] : "?");
    if (len < cap) snprintf(buf + len, cap - len, ")");
}

static int is_number(const char *s)
{
    if (!s || !*s) return 0;
    for (; *s; s++)
        if ((unsigned)(*s - '0') >= 10u) return 0;
    return 1;
}

/* Introspect the program: parameters, their dim names. */
static int load_params(run_state *s)
{
    s->nparams = tsl_program_param_count(s->prog);
    int n = s->nparams > 0 ? s->nparams : 1;
    s->params = calloc((size_t)n, sizeof *s->params);
    s->dims = calloc((size_t)n, sizeof *s->dims);
    s->cdims = calloc((size_t)n, sizeof *s->cdims);
    s->tensors = calloc((size_t)n, sizeof *s->tensors);
    s->pristine = calloc((size_t)n, sizeof *s->pristine);
    s->packed_in = calloc((size_t)n, sizeof *s->packed_in);
    s->scalars = calloc((size_t)n, sizeof *s->scalars);
    s->scalar_set = calloc((size_t)n, sizeof *s->scalar_set);
    s->sizes = calloc((size_t)(n * TSL_MAX_RANK + s->o.nsizes + 1), sizeof *s->sizes);
    if (!s->params || !s->dims || !s->cdims || !s->tensors || !s->pristine || !s->packed_in || !s->scalars ||
        !s->scalar_set || !s->sizes) {
        fprintf(stderr, "tessel: out of memory\n");
        return 1;
    }
    for (int i = 0; i < s->nparams; i++) {
        tsl_status st = tsl_program_param(s->prog, i, &s->params[i]);
        int64_t ext[TSL_MAX_RANK];
        if (st == TSL_OK && !s->params[i].is_scalar)
            st = tsl_program_param_dims(s->prog, i, s->dims[i]);
        if (st == TSL_OK && !s->params[i].is_scalar) st = tsl_program_param_extents(s->prog, i, ext);
        if (st != TSL_OK) {
            report(s->ctx, st, "introspection");
            return 1;
        }
        /* a constant dim (`float(F,C,3,3)`) as its number: random inputs take it */
        for (int d = 0; !s->params[i].is_scalar && d < s->params[i].rank && d < TSL_MAX_RANK; d++)
            if (!s->dims[i][d] && ext[d] >= 0) {
                snprintf(s->cdims[i][d], sizeof s->cdims[i][d], "%lld", (long long)ext[d]);
                s->dims[i][d] = s->cdims[i][d];
            }
    }
    return 0;
}

/* --size SYM=N: each symbol must be one of the program's sizes (its
 * parameters' dims, or a size only `where` bounds use). */
static int bind_cli_sizes(run_state *s)
{
    for (int k = 0; k < s->o.nsizes; k++) {
        cli_kv *kv = &s->o.sizes[k];
        uint64_t v;
        if (parse_u64(kv->value, &v) || v > (uint64_t)INT64_MAX / 2) {
            fprintf(stderr, "tessel run: --size %s=%s: the size must be a non-negative integer\n",
                    kv->name, kv->value);
            return 1;
        }
        int used = 0, n = tsl_program_size_count(s->prog);
        for (int k2 = 0; k2 < n && !used; k2++) used = !strcmp(tsl_program_size_name(s->prog, k2), kv->name);
        if (!used) {
            fprintf(stderr, "tessel run: --size %s: '%s' has no size named %s (its sizes:", kv->name,
                    tsl_program_name(s->prog), kv->name);
            for (int k2 = 0; k2 < n; k2++) fprintf(stderr, "%s %s", k2 ? "," : "", tsl_program_size_name(s->prog, k2));
            fprintf(stderr, "%s)\n", n ? "" : " none");
            return 1;
        }
        size_bind *b = find_size(s, kv->name);
        if (b && b->value != (int64_t)v) {
            fprintf(stderr, "tessel run: --size %s given twice (%lld and %llu)\n", kv->name,
                    (long long)b->value, (unsigned long long)v);
            return 1;
        }
        if (!b) s->sizes[s->nsizes++] = (size_bind){kv->name, (int64_t)v, NULL, -1};
    }
    return 0;
}

/* Record the sizes an input tensor fixes; a clash names both sources. */
static int bind_input_sizes(run_state *s, int i, const DLTensor *t)
{
    for (int d = 0; d < t->ndim; d++) {
        const char *sym = s->dims[i][d];
        if (!sym || is_number(sym)) continue;
        size_bind *b = find_size(s, sym);
        if (!b) {
            s->sizes[s->nsizes++] = (size_bind){sym, t->shape[d], s->params[i].name, d};
            continue;
        }
        if (b->value == t->shape[d]) continue;
        char sig[160];
        param_sig(sig, sizeof sig, s, i);
        if (b->tensor) {
            int j = find_param(s, b->tensor);
            char sig2[160];
            param_sig(sig2, sizeof sig2, s, j);
            fprintf(stderr,
                    "tessel run: size mismatch for %s: input %s has %s=%lld (dim %d) but input "
                    "%s has %s=%lld (dim %d)\n",
                    sym, sig, sym, (long long)t->shape[d], d, sig2, sym, (long long)b->value,
                    b->dim);
        } else {
            fprintf(stderr,
                    "tessel run: size mismatch for %s: input %s has %s=%lld (dim %d) but --size "
                    "%s=%lld\n",
                    sym, sig, sym, (long long)t->shape[d], d, sym, (long long)b->value);
        }
        return 1;
    }
    return 0;
}

/* A low-bit dtype: packed (1..7 bits) or a float of at most 8 bits. */
static int is_lowbit(tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(t);
    return d->bits < 8 || (d->is_float && d->bits <= 8);
}

/* "(2, 17)": the coordinates of linear index `lin` of t. */
static void describe_index(char *buf, size_t cap, const DLTensor *t, int64_t lin)
{
    int64_t c[TSL_MAX_RANK];
    for (int d = t->ndim - 1; d >= 0; d--) {
        c[d] = t->shape[d] ? lin % t->shape[d] : 0;
        lin = t->shape[d] ? lin / t->shape[d] : 0;
    }
    size_t at = (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < t->ndim && at < cap; d++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%lld", d ? ", " : "", (long long)c[d]);
    if (at < cap) snprintf(buf + at, cap - at, ")");
}

/* Input i (from kv, of dtype dt) converted to its parameter's dtype. Into
 * an integer or bool parameter (an index tensor, say) every value must
 * convert exactly: a NaN, 1.9 or 2^32 + 1 would silently become another
 * index, so the first such element is an error. Into a float parameter,
 * values that round are counted in a warning. */
static int convert_input(run_state *s, int i, const cli_kv *kv, tsl_dtype dt)
{
    DLTensor *t = s->tensors[i];
    tsl_dtype to = s->params[i].dtype;
    char idx[160], bad[64];
    int64_t at = cli_tensor_check_exact(t, to, bad, sizeof bad);
    if (at >= 0) {
        describe_index(idx, sizeof idx, t, at);
        char *end;
        double v = strtod(bad, &end);
        int integral = isfinite(v) && v == trunc(v);
        if (to == TSL_DTYPE_U64)
            fprintf(stderr, "tessel run: input %s from '%s': element %s is %s, %s %s (0..%llu)\n", kv->name,
                    kv->value, idx, bad, integral ? "outside the range of" : "not an integer value of",
                    tsl_dtype_name(to), (unsigned long long)UINT64_MAX);
        else
            fprintf(stderr, "tessel run: input %s from '%s': element %s is %s, %s %s (%lld..%lld)\n", kv->name,
                    kv->value, idx, bad, integral ? "outside the range of" : "not an integer value of",
                    tsl_dtype_name(to), (long long)dtype_int_min(to), (long long)dtype_int_max(to));
        return 1;
    }
    int64_t first = 0;
    double was = 0, now = 0;
    int64_t changed = cli_tensor_count_inexact(t, to, &first, &was, &now);
    DLTensor *c = cli_tensor_convert(t, to);
    if (!c) {
        fprintf(stderr, "tessel run: out of memory converting input %s\n", kv->name);
        return 1;
    }
    if (changed) {
        char a[40], b[40];
        describe_index(idx, sizeof idx, t, first);
        cli_fmt_double(a, sizeof a, was);
        cli_fmt_double(b, sizeof b, now);
        fprintf(stderr,
                "tessel run: warning: input %s converted from %s to %s: %lld of %lld values changed (the first: "
                "element %s, %s became %s)\n",
                kv->name, tsl_dtype_name(dt), tsl_dtype_name(to), (long long)changed,
                (long long)cli_tensor_numel(t), idx, a, b);
    } else {
        fprintf(stderr, "tessel run: note: input %s converted from %s to %s\n", kv->name, tsl_dtype_name(dt),
                tsl_dtype_name(to));
    }
    tsl_tensor_free(t);
    s->tensors[i] = c;
    return 0;
}

/* --input NAME=PATH: read, check rank, convert dtype, record sizes. */
static int read_inputs(run_state *s)
{
    for (int k = 0; k < s->o.ninputs; k++) {
        cli_kv *kv = &s->o.inputs[k];
        int i = find_param(s, kv->name);
        if (i < 0 || s->params[i].is_scalar) {
            if (i >= 0)
                fprintf(stderr, "tessel run: --input %s: %s is a scalar; use --set %s=VALUE\n",
                        kv->name, kv->name, kv->name);
            else if (is_output_name(s, kv->name))
                fprintf(stderr,
                        "tessel run: --input %s: %s is an output of '%s', not a parameter\n",
                        kv->name, kv->name, tsl_program_name(s->prog));
            else
                fprintf(stderr, "tessel run: --input %s: '%s' has no parameter named %s\n",
                        kv->name, tsl_program_name(s->prog), kv->name);
            return 1;
        }
        if (s->tensors[i]) {
            fprintf(stderr, "tessel run: --input %s given twice\n", kv->name);
            return 1;
        }
        DLTensor *t = NULL;
        tsl_status st = tsl_npy_read(s->ctx, kv->value, &t);
        if (st != TSL_OK) {
            fprintf(stderr, "tessel run: cannot read input %s from '%s':\n", kv->name, kv->value);
            report(s->ctx, st, "reading .npy");
            return 1;
        }
        if (s->o.packed && is_lowbit(s->params[i].dtype)) {
            if (dtype_is_packed(s->params[i].dtype)) { /* its shape is known once all are read */
                s->packed_in[i] = t;
                continue;
            }
            /* a byte-sized low-bit float: its codes, in the logical shape */
            tsl_dtype got;
            if (cli_tensor_dtype(t, &got) || got != TSL_DTYPE_U8) {
                fprintf(stderr, "tessel run: --packed input %s from '%s' must be uint8 codes, not %s\n",
                        kv->name, kv->value, cli_tensor_dtype(t, &got) ? "?" : tsl_dtype_name(got));
                tsl_tensor_free(t);
                return 1;
            }
            t->dtype = tsl_dtype_to_dlpack(s->params[i].dtype);
        }
        s->tensors[i] = t;
        char sig[160];
        param_sig(sig, sizeof sig, s, i);
        if (t->ndim != s->params[i].rank) {
            fprintf(stderr, "tessel run: input %s from '%s' has %d dims but the parameter is %s\n",
                    kv->name, kv->value, t->ndim, sig);
            return 1;
        }
        tsl_dtype dt;
        if (cli_tensor_dtype(t, &dt)) {
            fprintf(stderr, "tessel run: input %s from '%s' has a dtype tessel does not know\n",
                    kv->name, kv->value);
            return 1;
        }
        if (dt != s->params[i].dtype && convert_input(s, i, kv, dt)) return 1;
        t = s->tensors[i];
        if (bind_input_sizes(s, i, t)) return 1;
    }
    return 0;
}

/* --packed inputs of packed dtypes: the uint8 bytes, once every size is
 * known (from --size or the other inputs). */
static int read_packed_inputs(run_state *s)
{
    for (int i = 0; i < s->nparams; i++) {
        DLTensor *t = s->packed_in[i];
        if (!t) continue;
        s->packed_in[i] = NULL;
        const char *name = s->params[i].name;
        tsl_dtype got, dt = s->params[i].dtype;
        int64_t shape[TSL_MAX_RANK];
        for (int d = 0; d < s->params[i].rank; d++) {
            const char *sym = s->dims[i][d];
            size_bind *b = sym && !is_number(sym) ? find_size(s, sym) : NULL;
            if (sym && is_number(sym)) {
                shape[d] = strtoll(sym, NULL, 10);
            } else if (b) {
                shape[d] = b->value;
            } else {
                fprintf(stderr, "tessel run: --packed input %s: size %s is not known; give it with --size "
                        "%s=N (packed bytes do not say the shape)\n", name, sym ? sym : "?", sym ? sym : "?");
                tsl_tensor_free(t);
                return 1;
            }
        }
        int64_t n = 1;
        for (int d = 0; d < s->params[i].rank; d++) n *= shape[d];
        int64_t want = (int64_t)tsl_dtype_nbytes(dt, n);
        if (cli_tensor_dtype(t, &got) || got != TSL_DTYPE_U8 || cli_tensor_numel(t) != want) {
            fprintf(stderr, "tessel run: --packed input %s must be %lld uint8 bytes (%lld %s values), "
                    "got %lld of %s\n", name, (long long)want, (long long)n, tsl_dtype_name(dt),
                    (long long)cli_tensor_numel(t), cli_tensor_dtype(t, &got) ? "?" : tsl_dtype_name(got));
            tsl_tensor_free(t);
            return 1;
        }
        DLTensor *c = tsl_tensor_alloc(dt, s->params[i].rank, shape);
        if (!c) {
            tsl_tensor_free(t);
            fprintf(stderr, "tessel run: out of memory for input %s\n", name);
            return 1;
        }
        if (want) memcpy(c->data, (char *)t->data + t->byte_offset, (size_t)want);
        tsl_tensor_free(t);
        s->tensors[i] = c;
    }
    return 0;
}

/* A random integer input read as a gather index (`E(idx(b,l), d)`) gets
 * values that keep every such read in range, when the extents are known. */
static void gather_in_range(run_state *s, int i, DLTensor *t, cli_rng *rng)
{
    const dtype_info *di = dtype_info_of(s->params[i].dtype);
    if (di->is_float || s->params[i].dtype == TSL_DTYPE_BOOL || di->bits < 8) return;
    int64_t lo = 0, hi = INT64_MAX; /* 0 <= T + c < extent for each read */
    int x, dim, n = 0;
    int64_t c;
    for (; tsl_program_param_gathers(s->prog, i, n, &x, &dim, &c); n++) {
        if (x < 0 || x >= s->nparams || dim >= s->params[x].rank) return;
        const char *sym = s->dims[x][dim];
        size_bind *b = sym && !is_number(sym) ? find_size(s, sym) : NULL;
        int64_t extent = sym && is_number(sym) ? strtoll(sym, NULL, 10) : b ? b->value : -1;
        if (extent < 0) return;
        if (-c > lo) lo = -c;
        if (extent - c < hi) hi = extent - c;
    }
    if (n && hi > lo && (di->bits >= 63 || hi <= (INT64_C(1) << (di->bits - !!di->is_signed))) &&
        (di->is_signed || lo >= 0))
        cli_tensor_fill_range(t, rng, lo, hi);
}

/* The shape of random input i (0), or -1 after a message. */
static int random_input_shape(run_state *s, int i, int64_t *shape)
{
    for (int d = 0; d < s->params[i].rank; d++) {
        const char *sym = s->dims[i][d];
        char sig[160];
        param_sig(sig, sizeof sig, s, i);
        if (is_number(sym)) {
            shape[d] = strtoll(sym, NULL, 10);
            continue;
        }
        size_bind *b = sym ? find_size(s, sym) : NULL;
        if (!b) {
            if (sym)
                fprintf(stderr,
                        "tessel run: size %s of tensor %s is not known: give it with --size "
                        "%s=... or pass %s with --input %s=PATH.npy\n",
                        sym, sig, sym, s->params[i].name, s->params[i].name);
            else
                fprintf(stderr,
                        "tessel run: dim %d of tensor %s has no size name; pass %s with "
                        "--input %s=PATH.npy\n",
                        d, sig, s->params[i].name, s->params[i].name);
            return -1;
        }
        shape[d] = b->value;
    }
    return 0;
}

/* Before anything is allocated: the bytes of the random inputs and of the
 * outputs (twice with --check: the interpreter's run has its own) against
 * the memory available, so `--size M=4294967297` is an error, not a
 * machine that swaps. Output shapes come from binding shape-only
 * descriptors of the random inputs (data points at a byte nobody reads:
 * shape inference never touches data) in a throwaway tsl_args; the
 * library checks its temporaries itself when it runs. */
static int check_run_memory(run_state *s)
{
    static unsigned char sentinel;
    int64_t need = 0, most = -1, shapes[TSL_MAX_RANK * 2];
    const char *what = NULL;
    char sig[160] = "";
    tsl_args *a = tsl_args_create(s->prog);
    if (!a) return 0; /* out of memory: the allocations below will say so */
    DLTensor *fake = calloc((size_t)s->nparams + 1, sizeof *fake);
    int64_t (*fshape)[TSL_MAX_RANK] = calloc((size_t)s->nparams + 1, sizeof *fshape);
    int ok = fake && fshape, bad = 0;
    for (int i = 0; ok && !bad && i < s->nparams; i++) {
        tsl_status st = TSL_OK;
        if (s->params[i].is_scalar) {
            st = tsl_args_set_scalar(a, s->params[i].name, s->scalars[i]);
        } else if (s->tensors[i]) {
            st = tsl_args_set_tensor(a, s->params[i].name, s->tensors[i]);
        } else {
            if (random_input_shape(s, i, fshape[i])) {
                bad = 1;
                break;
            }
            int64_t bytes = (int64_t)tsl_dtype_size(s->params[i].dtype);
            int over = 0;
            for (int d = 0; d < s->params[i].rank; d++) over |= __builtin_mul_overflow(bytes, fshape[i][d], &bytes);
            if (over) bytes = INT64_MAX;
            if (__builtin_add_overflow(need, bytes, &need)) need = INT64_MAX;
            if (bytes > most) {
                most = bytes, what = "random input";
                param_sig(sig, sizeof sig, s, i);
            }
            fake[i] = (DLTensor){.data = &sentinel, .device = {kDLCPU, 0}, .ndim = s->params[i].rank,
                                 .dtype = tsl_dtype_to_dlpack(s->params[i].dtype), .shape = fshape[i]};
            st = tsl_args_set_tensor(a, s->params[i].name, &fake[i]);
        }
        if (st) ok = 0;
    }
    /* --size values only `where` bounds use (as bind_args passes them) */
    for (int k = 0; ok && !bad && k < s->o.nsizes; k++) {
        size_bind *b = find_size(s, s->o.sizes[k].name);
        if (b && tsl_args_set_size(a, b->sym, b->value) != TSL_OK) ok = 0;
    }
    /* outputs; shapes that cannot be inferred (sizes that disagree or
     * overflow) are the real binding's error, said before any allocation */
    tsl_status ist = ok && !bad ? tsl_args_infer(a) : TSL_OK;
    if (ist != TSL_OK) {
        report(s->ctx, ist, "shape inference");
        bad = 1;
    } else if (ok && !bad) {
        for (int k = 0; k < tsl_program_output_count(s->prog); k++) {
            const char *name = tsl_program_output_name(s->prog, k);
            int rank;
            tsl_dtype dt;
            if (find_param(s, name) >= 0 || tsl_args_output_shape(a, name, &rank, shapes, &dt)) continue;
            int64_t bytes = (int64_t)tsl_dtype_size(dt);
            int over = 0;
            for (int d = 0; d < rank; d++) over |= __builtin_mul_overflow(bytes, shapes[d], &bytes);
            if (over) bytes = INT64_MAX;
            for (int copies = s->o.check ? 2 : 1; copies > 0; copies--)
                if (__builtin_add_overflow(need, bytes, &need)) need = INT64_MAX;
            if (bytes > most) {
                most = bytes, what = "output";
                snprintf(sig, sizeof sig, "%s", name);
            }
        }
    }
    tsl_args_free(a);
    free(fake);
    free(fshape);
    if (bad) return 1;
    tsl_context_clear_error(s->ctx);
    int64_t avail = mem_available();
    if (!what || avail < 0 || need <= avail) return 0;
    char nb[32], mb[32], ab[32];
    mem_format(nb, sizeof nb, need);
    mem_format(mb, sizeof mb, most);
    mem_format(ab, sizeof ab, avail);
    fprintf(stderr,
            "tessel run: the run needs %s for its random inputs and outputs (the largest: %s %s, %s) but only %s "
            "of memory is available; give smaller --size values\n",
            nb, what, sig, mb, ab);
    return 1;
}

/* Random values for every tensor parameter not given with --input. */
static int make_random_inputs(run_state *s, cli_rng *rng)
{
    int64_t shape[TSL_MAX_RANK];
    for (int i = 0; i < s->nparams; i++) {
        if (s->params[i].is_scalar || s->tensors[i]) continue;
        if (random_input_shape(s, i, shape)) return 1;
        DLTensor *t = tsl_tensor_alloc(s->params[i].dtype, s->params[i].rank, shape);
        if (!t) {
            fprintf(stderr, "tessel run: out of memory for random input %s\n",
                    s->params[i].name);
            return 1;
        }
        cli_tensor_fill_random(t, rng);
        gather_in_range(s, i, t, rng);
        s->tensors[i] = t;
    }
    return 0;
}

/* After an index out of range: name the integer inputs that got random
 * values, which a gather through them cannot expect to stay in range. */
static void note_random_indices(const run_state *s)
{
    int n = 0;
    for (int i = 0; i < s->nparams; i++) {
        const tsl_param_info *pi = &s->params[i];
        int given = 0;
        for (int k = 0; k < s->o.ninputs; k++) given |= !strcmp(s->o.inputs[k].name, pi->name);
        const dtype_info *di = dtype_info_of(pi->dtype);
        if (pi->is_scalar || given || di->is_float || pi->dtype == TSL_DTYPE_BOOL) continue;
        fprintf(stderr, "%s%s", n++ ? ", " : "tessel run: note: random integer input ", pi->name);
    }
    if (n)
        fprintf(stderr, " (values in [-8, 8), unsigned [0, 8)): a tensor used as an index needs values in "
                        "range; give it with --input NAME=PATH.npy\n");
}

/* --set NAME=VALUE for scalar parameters; every scalar needs one. */
static int bind_scalars(run_state *s)
{
    for (int k = 0; k < s->o.nsets; k++) {
        cli_kv *kv = &s->o.sets[k];
        int i = find_param(s, kv->name);
        if (i < 0 || !s->params[i].is_scalar) {
            if (i >= 0)
                fprintf(stderr, "tessel run: --set %s: %s is a tensor; use --input %s=PATH.npy\n",
                        kv->name, kv->name, kv->name);
            else
                fprintf(stderr, "tessel run: --set %s: '%s' has no scalar parameter named %s\n",
                        kv->name, tsl_program_name(s->prog), kv->name);
            return 1;
        }
        char *end;
        errno = 0;
        double v = strtod(kv->value, &end);
        if (errno == ERANGE || *end || end == kv->value) {
            fprintf(stderr, "tessel run: --set %s=%s: not a number\n", kv->name, kv->value);
            return 1;
        }
        const dtype_info *info = dtype_info_of(s->params[i].dtype);
        if (!info->is_float && v != floor(v)) {
            fprintf(stderr, "tessel run: --set %s=%s: %s is %s and needs an integer\n", kv->name,
                    kv->value, kv->name, tsl_dtype_name(s->params[i].dtype));
            return 1;
        }
        /* an integer parameter's value must fit its dtype (2^32 + 1 is not
         * an int32), and is passed as a double: exact up to 2^53 */
        tsl_dtype pt = s->params[i].dtype;
        double lo = pt == TSL_DTYPE_BOOL ? 0 : (double)dtype_int_min(pt);
        double hi = pt == TSL_DTYPE_BOOL ? 1 : pt == TSL_DTYPE_U64 ? 0x1p64 : (double)dtype_int_max(pt);
        if (!info->is_float && (v < lo || v > hi)) {
            fprintf(stderr, "tessel run: --set %s=%s: outside the range of %s (%.17g..%.17g)\n", kv->name,
                    kv->value, tsl_dtype_name(pt), lo, pt == TSL_DTYPE_U64 ? 0x1p64 - 1 : hi);
            return 1;
        }
        if (!info->is_float && fabs(v) > 0x1p53) {
            fprintf(stderr, "tessel run: --set %s=%s: integer parameters are exact up to 2^53 (%s)\n", kv->name,
                    kv->value, tsl_dtype_name(pt));
            return 1;
        }
        s->scalars[i] = v;
        s->scalar_set[i] = 1;
    }
    for (int i = 0; i < s->nparams; i++) {
        if (s->params[i].is_scalar && !s->scalar_set[i]) {
            fprintf(stderr, "tessel run: scalar parameter %s %s has no value: give it with --set "
                            "%s=VALUE\n",
                    tsl_dtype_name(s->params[i].dtype), s->params[i].name, s->params[i].name);
            return 1;
        }
    }
    return 0;
}

/* Bind every parameter into fresh args. `use_pristine` binds the saved
 * copies of in/out tensors (for the reference run of --check). */
static int bind_args(run_state *s, tsl_args **out, int use_pristine)
{
    tsl_args *a = tsl_args_create(s->prog);
    if (!a) {
        fprintf(stderr, "tessel run: out of memory\n");
        return 1;
    }
    *out = a;
    for (int i = 0; i < s->nparams; i++) {
        tsl_status st;
        if (s->params[i].is_scalar) {
            st = tsl_args_set_scalar(a, s->params[i].name, s->scalars[i]);
        } else {
            DLTensor *t = use_pristine && s->pristine[i] ? s->pristine[i] : s->tensors[i];
            st = tsl_args_set_tensor(a, s->params[i].name, t);
        }
        if (st != TSL_OK) {
            report(s->ctx, st, "binding arguments");
            return 1;
        }
    }
    /* --size values: those only `where` bounds use reach the program here
     * (the others also fixed the random inputs' shapes) */
    for (int k = 0; k < s->o.nsizes; k++) {
        size_bind *b = find_size(s, s->o.sizes[k].name);
        tsl_status st = b ? tsl_args_set_size(a, b->sym, b->value) : TSL_OK;
        if (st != TSL_OK) {
            report(s->ctx, st, "binding sizes");
            return 1;
        }
    }
    tsl_status st = tsl_args_infer(a);
    if (st != TSL_OK) {
        report(s->ctx, st, "shape inference");
        return 1;
    }
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* `ENTRY: A(384,257) float32, b=0.5 -> C(384,191) float32 on interp in 1.2 ms` */
static void print_summary_line(run_state *s, double ms)
{
    char buf[256];
    printf("%s:", tsl_program_name(s->prog));
    for (int i = 0; i < s->nparams; i++) {
        if (s->params[i].is_scalar)
            snprintf(buf, sizeof buf, "%s=%.10g", s->params[i].name, s->scalars[i]);
        else
            cli_tensor_describe(buf, sizeof buf, s->params[i].name,
                                s->pristine[i] ? s->pristine[i] : s->tensors[i]);
        printf("%s %s", i ? "," : "", buf);
    }
    printf(" ->");
    int nout = tsl_program_output_count(s->prog);
    for (int k = 0; k < nout; k++) {
        const char *name = tsl_program_output_name(s->prog, k);
        const DLTensor *t = tsl_args_output(s->args, name);
        if (t) cli_tensor_describe(buf, sizeof buf, name, t);
        else snprintf(buf, sizeof buf, "%s(?)", name);
        printf("%s %s", k ? "," : "", buf);
    }
    printf(" on %s in %.3f ms\n", s->o.target_name, ms);
}

/* --output NAME=PATH: validate names before running. */
static int check_output_names(run_state *s)
{
    for (int k = 0; k < s->o.noutputs; k++) {
        if (!is_output_name(s, s->o.outputs[k].name)) {
            int n = tsl_program_output_count(s->prog);
            fprintf(stderr, "tessel run: --output %s: '%s' has no output named %s (outputs:",
                    s->o.outputs[k].name, tsl_program_name(s->prog), s->o.outputs[k].name);
            for (int i = 0; i < n; i++)
                fprintf(stderr, " %s", tsl_program_output_name(s->prog, i));
            fprintf(stderr, ")\n");
            return 1;
        }
        /* outputs are written after the run: one that is an input's file
         * would overwrite it, two in one file would keep only the last */
        const cli_kv *o = &s->o.outputs[k];
        for (int j = 0; j < s->o.ninputs; j++)
            if (cli_same_file(o->value, s->o.inputs[j].value)) {
                fprintf(stderr, "tessel run: --output %s=%s is the file of --input %s=%s; an output never "
                                "overwrites an input\n",
                        o->name, o->value, s->o.inputs[j].name, s->o.inputs[j].value);
                return 1;
            }
        for (int j = 0; j < k; j++)
            if (cli_same_file(o->value, s->o.outputs[j].value)) {
                fprintf(stderr, "tessel run: --output %s=%s and --output %s=%s are one file\n",
                        s->o.outputs[j].name, s->o.outputs[j].value, o->name, o->value);
                return 1;
            }
    }
    return 0;
}

static int write_outputs(run_state *s)
{
    for (int k = 0; k < s->o.noutputs; k++) {
        const DLTensor *t = tsl_args_output(s->args, s->o.outputs[k].name);
        if (!t) {
            fprintf(stderr, "tessel run: output %s was not produced\n", s->o.outputs[k].name);
            return 1;
        }
        DLTensor *conv = NULL;
        tsl_dtype dt;
        if (!cli_tensor_dtype(t, &dt) && is_lowbit(dt)) { /* logical values, or the bytes */
            const dtype_info *d = dtype_info_of(dt);
            conv = s->o.packed ? cli_tensor_packed_bytes(t)
                               : cli_tensor_convert(t, d->is_float ? TSL_DTYPE_F32 : d->is_signed ? TSL_DTYPE_I8 : TSL_DTYPE_U8);
            if (!conv) {
                fprintf(stderr, "tessel run: out of memory writing output %s\n", s->o.outputs[k].name);
                return 1;
            }
            t = conv;
        }
        tsl_status st = tsl_npy_write(s->ctx, s->o.outputs[k].value, t);
        tsl_tensor_free(conv);
        if (st != TSL_OK) {
            fprintf(stderr, "tessel run: cannot write output %s to '%s':\n",
                    s->o.outputs[k].name, s->o.outputs[k].value);
            report(s->ctx, st, "writing .npy");
            return 1;
        }
    }
    return 0;
}

/* --check: run the interpreter on the same inputs and compare. */
static int check_against_interp(run_state *s)
{
    if (bind_args(s, &s->ref_args, 1)) return 1;
    tsl_status st = tsl_program_run(s->prog, s->ref_args, TSL_TARGET_INTERP);
    if (st != TSL_OK) {
        report(s->ctx, st, "reference run");
        return 1;
    }
    int bad = 0;
    int nout = tsl_program_output_count(s->prog);
    for (int k = 0; k < nout; k++) {
        const char *name = tsl_program_output_name(s->prog, k);
        const DLTensor *got = tsl_args_output(s->args, name);
        const DLTensor *ref = tsl_args_output(s->ref_args, name);
        tsl_dtype dt;
        if (!got || !ref || cli_tensor_dtype(ref, &dt)) {
            printf("check %s: output missing\n", name);
            bad = 1;
            continue;
        }
        double err = cli_tensor_max_rel_error(got, ref);
        int64_t len = tsl_args_reduction_length(s->args, name);
        /* tf32: 10 fraction bits instead of 23, so 2^-9 where f32 has 1e-5 */
        int tf32 = s->o.allow_tf32 && dt == TSL_DTYPE_F32 && s->o.target == TSL_TARGET_CUDA;
        double tol = tsl_args_tolerance(s->args, name) * (tf32 ? ldexp(1.0, -9) / 1e-5 : 1.0);
        int ok = err <= tol;
        printf("check %s: max rel error %.3g vs interp (tolerance %.1e: %s%s", name, err, tol, tsl_dtype_name(dt),
               tf32 ? " via tf32" : "");
        if (len > 1) printf(", reductions of %lld", (long long)len);
        printf("): %s\n", ok ? "ok" : "FAILED");
        bad |= !ok;
    }
    return bad;
}

/* Everything before the run: the program compiled, its options applied,
 * inputs read or made, the arguments bound (s->args). */
static int run_setup(run_state *s)
{
    s->ctx = tsl_context_create();
    if (!s->ctx) {
        fprintf(stderr, "tessel: out of memory\n");
        return 1;
    }
    char *src = NULL;
    if (load_checked(s->ctx, s->o.file, s->o.entry, "run", &src)) return 1;
    tsl_status st = tsl_program_compile(s->ctx, src, s->o.file, s->o.entry, &s->prog);
    free(src);
    if (st != TSL_OK) {
        report(s->ctx, st, "compile");
        return 1;
    }
    if (load_params(s) || check_output_names(s) || bind_cli_sizes(s) || read_inputs(s) ||
        read_packed_inputs(s) || bind_scalars(s))
        return 1;
    if (s->o.target != TSL_TARGET_INTERP) {
        int rc = apply_options(s->prog, s->ctx, s->o.options, s->o.allow_tf32);
        if (!rc) rc = dump_stages(s->prog, s->ctx, s->o.target);
        if (rc) return rc;
    }
    cli_rng rng;
    cli_rng_seed(&rng, s->o.has_seed ? s->o.seed : cli_rng_fresh_seed());
    if (check_run_memory(s) || make_random_inputs(s, &rng)) return 1;
    if (s->o.check) {
        for (int i = 0; i < s->nparams; i++) {
            if (s->params[i].is_scalar || !s->params[i].is_output) continue;
            if (!(s->pristine[i] = cli_tensor_copy(s->tensors[i]))) {
                fprintf(stderr, "tessel run: out of memory\n");
                return 1;
            }
        }
    }
    return bind_args(s, &s->args, 0);
}

static int run_main(run_state *s)
{
    int rc = run_setup(s);
    if (rc) return rc; /* 1: a user error, 2: a usage error (bad options) */
    double t0 = now_ms();
    tsl_status st = tsl_program_run(s->prog, s->args, s->o.target);
    double ms = now_ms() - t0;
    if (st != TSL_OK) {
        char what[64];
        snprintf(what, sizeof what, "run on target %s", s->o.target_name);
        report(s->ctx, st, what);
        if (st == TSL_ERR_BOUNDS) note_random_indices(s);
        return 1;
    }
    print_summary_line(s, ms);
    int tuned = 0;
    const char *used = tsl_args_options_used(s->args, &tuned);
    if (tuned) printf("options: %s (tuned: `tessel tune` found them for these shapes)\n", used);
    if (s->o.verbose) {
        tsl_run_stats rs;
        if (tsl_program_run_stats(s->prog, &rs) == TSL_OK) {
            printf("  time: %.3f ms = plan %.3f + generate %.3f + compile %.3f + load %.3f + run %.3f (+ %.3f other)\n",
                   rs.total_ms, rs.plan_ms, rs.codegen_ms, rs.compile_ms, rs.load_ms, rs.run_ms,
                   rs.total_ms - rs.plan_ms - rs.codegen_ms - rs.compile_ms - rs.load_ms - rs.run_ms);
            if (rs.kernels)
                printf("  kernels: %d; %d compiled now, %d from the kernel cache, %d already loaded\n", rs.kernels,
                       rs.compiled, rs.cached, rs.loaded);
        }
    }
    int nout = tsl_program_output_count(s->prog);
    for (int k = 0; k < nout; k++) {
        const char *name = tsl_program_output_name(s->prog, k);
        const DLTensor *t = tsl_args_output(s->args, name);
        if (t) cli_tensor_print_summary(stdout, name, t, s->o.print);
    }
    if (write_outputs(s)) return 1;
    if (s->o.check && check_against_interp(s)) return 1;
    return 0;
}

int cmd_run(int argc, char **argv)
{
    run_state s;
    memset(&s, 0, sizeof s);
    int rc = parse_opts(argc, argv, run_usage,
                        "entry input set output size target check seed print verbose packed options allow-tf32", &s.o);
    if (rc == 0 && !s.o.target_name) {
        rc = default_target("run", &s.o.target);
        s.o.target_name = tsl_target_name(s.o.target);
    }
    if (rc == 0) rc = run_main(&s);
    else if (rc < 0) rc = 0;
    fflush(stdout);
    run_state_free(&s);
    return rc;
}

/* ---- the bound program for `tessel bench` and `tessel tune` (cli.h) ---- */

int cli_program_bind(int argc, char **argv, const char *usage, const char *allowed, cli_program *out)
{
    memset(out, 0, sizeof *out);
    run_state *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "tessel: out of memory\n");
        return 1;
    }
    out->state = s;
    int rc = parse_opts(argc, argv, usage, allowed, &s->o);
    if (rc == 0 && !s->o.target_name) {
        rc = default_target(argv[0], &s->o.target);
        s->o.target_name = tsl_target_name(s->o.target);
    }
    if (rc == 0 && s->o.target == TSL_TARGET_INTERP) {
        fprintf(stderr, "tessel: the interpreter is not a compiled target: use --target cpu or cuda\n");
        rc = 2;
    }
    if (rc == 0) rc = run_setup(s);
    out->ctx = s->ctx;
    out->prog = s->prog;
    out->args = s->args;
    out->target = s->o.target;
    out->target_name = s->o.target_name;
    return rc;
}

void cli_program_describe(const cli_program *p, FILE *f)
{
    const run_state *s = p->state;
    char buf[256];
    fprintf(f, "%s:", tsl_program_name(s->prog));
    for (int i = 0; i < s->nparams; i++) {
        if (s->params[i].is_scalar) snprintf(buf, sizeof buf, "%s=%.10g", s->params[i].name, s->scalars[i]);
        else cli_tensor_describe(buf, sizeof buf, s->params[i].name, s->tensors[i]);
        fprintf(f, "%s %s", i ? "," : "", buf);
    }
    fprintf(f, " on %s", s->o.target_name);
}

void cli_program_free(cli_program *p)
{
    if (!p->state) return;
    run_state_free(p->state);
    free(p->state);
    memset(p, 0, sizeof *p);
}
