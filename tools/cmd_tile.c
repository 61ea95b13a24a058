/* cmd_tile.c — `tessel tile check|print|expand|select|run FILE.tile`:
 * parse and verify a tile program, print its canonical text (with
 * pipelines expanded for `expand`; expanded and with the target's atoms
 * selected for `select`), or run one kernel on the tile interpreter with
 * .npy inputs and outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "codegen/codegen.h"
#include "codegen/cuda.h"
#include "driver/driver.h"
#include "runtime/runtime.h"
#include "target/select.h"
#include "tile/interp.h"
#include "tile/pipeline.h"
#include "tile/tile.h"

#define MAX_BINDINGS 64

static void tile_usage(FILE *f)
{
    fprintf(f,
            "usage: tessel tile check FILE.tile          parse and verify\n"
            "       tessel tile print FILE.tile          print the canonical text\n"
            "       tessel tile expand FILE.tile [--arch sm_80|sm_90a]\n"
            "                                            print with pipelines expanded (cp.async; TMA and\n"
            "                                            mbarriers for sm_90a)\n"
            "       tessel tile emit FILE.tile [--kernel NAME] [--cuda | --c | --ptx] [--arch sm_80|sm_90a]\n"
            "                                            print the generated CUDA C (default), C, or PTX\n"
            "                                            (NVRTC, no GPU needed)\n"
            "       tessel tile select FILE.tile [--target cpu|cuda|sm_80|sm_90a]\n"
            "                                            print with pipelines expanded and an atom of the\n"
            "                                            target selected for every spec (default cpu)\n"
            "       tessel tile run FILE.tile [--kernel NAME] [--input NAME=PATH.npy]...\n"
            "                 [--output NAME=PATH.npy]... [--size SYM=N]... [--int NAME=N]...\n"
            "                 [--scalar NAME=X]...\n"
            "                 [--expand] [--arch ARCH] [--shuffle] [--seed N] [--target interp|cuda] [--reps N]\n"
            "  run: outputs are the kernel's written tensors, allocated from their shapes and\n"
            "  poisoned (NaN / 0xAB) before the run; --expand runs the expanded pipelines (--arch\n"
            "  picks the form; --target cuda expands for the device's arch);\n"
            "  --shuffle runs the blocks in a random order; --target cuda runs the kernel on the GPU\n"
            "  (--reps N then times N more launches and prints the median).\n");
}

/* A loaded, parsed (and verified) module. */
typedef struct loaded {
    char *text;
    tsl_source src;
    tsl_arena *arena;
    tile_module *m;
    tsl_diag d;
} loaded;

static void loaded_free(loaded *L)
{
    arena_free(L->arena);
    diag_free(&L->d);
    free(L->text);
}

/* 0 on success; prints the diagnostics and returns 1 otherwise. With
 * `expand`, pipelines are expanded in the form for `arch` (NULL: cp.async). */
static int load(loaded *L, const char *path, int verify, int expand, const char *arch)
{
    memset(L, 0, sizeof *L);
    size_t n;
    L->text = file_read_all(path, &n);
    if (!L->text) {
        fprintf(stderr, "tessel tile: cannot read %s\n", path);
        return 1;
    }
    L->src.name = path;
    L->src.text = L->text;
    L->arena = arena_create();
    tsl_status st = tile_parse(L->arena, &L->src, &L->d, &L->m);
    if (!st && verify) st = tile_verify(L->m, &L->src, &L->d);
    if (!st && expand) {
        tile_pipeline_opts po = tile_pipeline_opts_for_arch(arch);
        st = tile_pipeline_expand_opts(L->m, &L->src, &po, &L->d);
        /* what the generators get is verified */
        if (!st) st = tile_verify(L->m, &L->src, &L->d);
    }
    if (st) {
        fprintf(stderr, "%s", sb_str(&L->d.msg));
        return 1;
    }
    return 0;
}

/* NAME=VALUE: splits in place; NULL value when there is no '='. */
static char *split_eq(char *arg)
{
    char *eq = strchr(arg, '=');
    if (!eq) return NULL;
    *eq = 0;
    return eq + 1;
}

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end) return -1;
    *out = v;
    return 0;
}

/* Fill with NaN (floats) or 0xAB bytes (others): a result the kernel does
 * not write shows. */
static void poison(DLTensor *t, tsl_dtype dt)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    size_t es = tsl_dtype_size(dt);
    if (dt == TSL_DTYPE_F16 || dt == TSL_DTYPE_BF16 || dt == TSL_DTYPE_F32 || dt == TSL_DTYPE_F64) {
        for (int64_t i = 0; i < n; i++) dtype_store(dt, (char *)t->data + i * (int64_t)es, NAN);
    } else {
        memset(t->data, 0xAB, (size_t)n * es);
    }
}

typedef struct run_opts {
    const char *kernel;
    char *in_name[MAX_BINDINGS], *in_path[MAX_BINDINGS];
    char *out_name[MAX_BINDINGS], *out_path[MAX_BINDINGS];
    const char *size_name[MAX_BINDINGS];
    int64_t size_val[MAX_BINDINGS];
    char *int_name[MAX_BINDINGS];
    int64_t int_val[MAX_BINDINGS];
    double flt_val[MAX_BINDINGS];
    int nin, nout, nsize, nint;
    int expand, shuffle, cuda, reps;
    const char *arch;
    uint64_t seed;
} run_opts;

static int parse_run_args(int argc, char **argv, run_opts *o)
{
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--expand")) {
            o->expand = 1;
        } else if (!strcmp(a, "--shuffle")) {
            o->shuffle = 1;
        } else if (!strcmp(a, "--seed") && has) {
            int64_t v;
            if (parse_i64(argv[++i], &v)) goto bad;
            o->seed = (uint64_t)v;
        } else if (!strcmp(a, "--kernel") && has) {
            o->kernel = argv[++i];
        } else if (!strcmp(a, "--arch") && has) {
            o->arch = argv[++i];
            o->expand = 1;
        } else if (!strcmp(a, "--target") && has) {
            const char *t = argv[++i];
            if (strcmp(t, "cuda") && strcmp(t, "interp")) goto bad;
            o->cuda = !strcmp(t, "cuda");
        } else if (!strcmp(a, "--reps") && has) {
            int64_t v;
            if (parse_i64(argv[++i], &v) || v < 0 || v > 100000) goto bad;
            o->reps = (int)v;
        } else if ((!strcmp(a, "--input") || !strcmp(a, "--output") || !strcmp(a, "--size") ||
                    !strcmp(a, "--int") || !strcmp(a, "--scalar")) && has) {
            char *name = argv[++i], *val = split_eq(name);
            if (!val || !*name) goto bad;
            if (!strcmp(a, "--input")) {
                if (o->nin == MAX_BINDINGS) goto bad;
                o->in_name[o->nin] = name;
                o->in_path[o->nin++] = val;
            } else if (!strcmp(a, "--output")) {
                if (o->nout == MAX_BINDINGS) goto bad;
                o->out_name[o->nout] = name;
                o->out_path[o->nout++] = val;
            } else if (!strcmp(a, "--size")) {
                if (o->nsize == MAX_BINDINGS || parse_i64(val, &o->size_val[o->nsize])) goto bad;
                o->size_name[o->nsize++] = name;
            } else {
                /* --int NAME=N (int scalars) or --scalar NAME=X (typed scalars, e.g. f32) */
                char *end;
                if (o->nint == MAX_BINDINGS) goto bad;
                double x = strtod(val, &end);
                if (!*val || *end) goto bad;
                if (!strcmp(a, "--int") && parse_i64(val, &o->int_val[o->nint])) goto bad;
                if (!strcmp(a, "--scalar")) o->int_val[o->nint] = (int64_t)x;
                o->flt_val[o->nint] = x;
                o->int_name[o->nint++] = name;
            }
        } else {
            goto bad;
        }
        continue;
    bad:
        fprintf(stderr, "tessel tile run: bad argument '%s'\n", a);
        tile_usage(stderr);
        return 2;
    }
    return 0;
}

static int cmd_tile_run(int argc, char **argv)
{
    run_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_run_args(argc, argv, &o);
    if (rc) return rc;
    /* on the GPU, pipelines take the form of the device's arch */
    char devarch[16] = "";
    if (o.cuda && !o.arch) {
        rt_cuda_device *dev = NULL;
        tsl_diag dd = {0};
        if (!rt_cuda_open(&dev, &dd)) snprintf(devarch, sizeof devarch, "%s", rt_cuda_device_info(dev)->arch);
        rt_cuda_close(dev);
        diag_free(&dd);
        o.arch = devarch[0] ? devarch : NULL;
        o.expand = 1;
    }
    loaded L;
    if (load(&L, argv[2], 1, o.expand, o.arch)) {
        loaded_free(&L);
        return 1;
    }
    tile_kernel *k = NULL;
    if (o.kernel) {
        k = tile_module_find(L.m, o.kernel);
        if (!k) fprintf(stderr, "tessel tile run: no kernel '%s' in %s\n", o.kernel, argv[2]);
    } else if (L.m->nkernels == 1) {
        k = L.m->kernels[0];
    } else {
        fprintf(stderr, "tessel tile run: %s has %d kernels; choose one with --kernel\n", argv[2],
                L.m->nkernels);
    }
    tsl_context *ctx = tsl_context_create();
    DLTensor *tens[MAX_BINDINGS * 2] = {0};
    tile_interp_arg args[MAX_BINDINGS * 2];
    int nargs = 0, ntens = 0;
    rc = k ? 0 : 1;
    for (int i = 0; i < o.nin && !rc; i++) {
        DLTensor *t = NULL;
        if (tsl_npy_read(ctx, o.in_path[i], &t)) {
            fprintf(stderr, "%s\n", tsl_context_error(ctx));
            rc = 1;
            break;
        }
        tens[ntens++] = t;
        args[nargs++] = (tile_interp_arg){o.in_name[i], t, 0};
    }
    for (int i = 0; i < o.nint && !rc && k; i++) {
        args[nargs] = (tile_interp_arg){o.int_name[i], NULL, o.int_val[i]};
        for (int p = 0; p < k->nparams; p++)
            if (!strcmp(k->params[p]->name, o.int_name[i]) && tile_value_is_typed_scalar(k->params[p]) &&
                k->params[p]->type.dt.kind == TILE_DT_FLOAT)
                args[nargs] = tile_interp_arg_float(o.int_name[i], o.flt_val[i]);
        nargs++;
    }
    /* outputs: the tensors the kernel writes that were not given as inputs */
    int64_t *symv = NULL;
    if (!rc) {
        symv = calloc((size_t)k->nsyms + 1, sizeof *symv);
        if (tile_interp_bind_symbols(k, args, nargs, o.size_name, o.size_val, o.nsize, symv, &L.d)) rc = 1;
    }
    const tile_value *outs[MAX_BINDINGS];
    int nouts = rc ? 0 : tile_interp_outputs(k, outs, MAX_BINDINGS);
    for (int i = 0; i < nouts && !rc; i++) {
        int given = 0;
        for (int j = 0; j < nargs; j++) given |= !strcmp(args[j].name, outs[i]->name);
        if (given) continue;
        int64_t shape[TSL_MAX_RANK];
        tsl_dtype dt;
        if (outs[i]->type.rank > TSL_MAX_RANK || tile_dtype_to_tsl(outs[i]->type.dt, &dt)) {
            fprintf(stderr, "tessel tile run: output '%s' has no host dtype/shape\n", outs[i]->name);
            rc = 1;
            break;
        }
        if (tile_interp_param_shape(k, outs[i], symv, shape, &L.d)) {
            rc = 1;
            break;
        }
        DLTensor *t = tsl_tensor_alloc(dt, outs[i]->type.rank, shape);
        if (!t) {
            fprintf(stderr, "tessel tile run: out of memory for '%s'\n", outs[i]->name);
            rc = 1;
            break;
        }
        poison(t, dt);
        tens[ntens++] = t;
        args[nargs++] = (tile_interp_arg){outs[i]->name, t, 0};
    }
    for (int i = 0; i < o.nout && !rc; i++) {
        int found = 0;
        for (int j = 0; j < nargs; j++) found |= args[j].t && !strcmp(args[j].name, o.out_name[i]);
        if (!found) {
            fprintf(stderr, "tessel tile run: '%s' is not a tensor of kernel '%s'\n", o.out_name[i], k->name);
            rc = 1;
        }
    }
    if (!rc && o.cuda) {
        drv_kernel_opts ro = {0};
        ro.reps = o.reps;
        if (drv_kernel_run(&drv_target_cuda, L.m, k, args, nargs, &ro, &L.d)) rc = 1;
        else if (o.reps) printf("%s: median of %d launches: %.4f ms\n", k->name, o.reps, ro.median_ms);
    } else if (!rc) {
        tile_interp_opts io = {0};
        io.shuffle_blocks = o.shuffle;
        io.seed = o.seed;
        if (tile_interp_run(k, &L.src, args, nargs, &io, &L.d)) rc = 1;
    }
    if (rc && L.d.nerr) fprintf(stderr, "%s", sb_str(&L.d.msg));
    for (int i = 0; i < o.nout && !rc; i++)
        for (int j = 0; j < nargs; j++)
            if (args[j].t && !strcmp(args[j].name, o.out_name[i]) && tsl_npy_write(ctx, o.out_path[i], args[j].t)) {
                fprintf(stderr, "%s\n", tsl_context_error(ctx));
                rc = 1;
                break;
            }
    for (int i = 0; i < ntens; i++) tsl_tensor_free(tens[i]);
    free(symv);
    tsl_context_free(ctx);
    loaded_free(&L);
    return rc;
}

/* tessel tile emit FILE.tile [--kernel NAME] [--cuda | --c | --ptx] [--arch ARCH] */
static int cmd_tile_emit(int argc, char **argv)
{
    const char *kname = NULL, *arch = NULL;
    int mode = 0; /* 0 cuda, 1 c, 2 ptx */
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--kernel") && i + 1 < argc) kname = argv[++i];
        else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
        else if (!strcmp(argv[i], "--cuda")) mode = 0;
        else if (!strcmp(argv[i], "--c")) mode = 1;
        else if (!strcmp(argv[i], "--ptx")) mode = 2;
        else {
            fprintf(stderr, "tessel tile emit: bad argument '%s'\n", argv[i]);
            tile_usage(stderr);
            return 2;
        }
    }
    /* pipelines in the form of the arch compiled for (PTX: sm_90a by
     * default; C: cp.async) */
    const char *xarch = mode == 1 ? NULL : arch ? arch : mode == 2 ? "sm_90a" : NULL;
    loaded L;
    if (load(&L, argv[2], 1, 1, xarch)) {
        loaded_free(&L);
        return 1;
    }
    int rc = 0;
    strbuf out = {0};
    for (int i = 0; i < L.m->nkernels && !rc; i++) {
        tile_kernel *k = L.m->kernels[i];
        if (kname && strcmp(k->name, kname)) continue;
        strbuf src = {0};
        tsl_status st;
        if (mode == 1) {
            st = cg_c_emit(L.m, k, &src, &L.d);
        } else {
            st = cg_cuda_emit(L.m, k, &src, &L.d);
        }
        if (!st && mode == 2) {
            char *ptx = NULL;
            rt_cuda_options o = {0};
            o.name = k->name;
            st = rt_cuda_compile_ptx(sb_str(&src), arch ? arch : "sm_90a", &o, &ptx, &L.d);
            if (!st) sb_puts(&out, ptx);
            free(ptx);
        } else if (!st) {
            sb_puts(&out, sb_str(&src));
        }
        sb_free(&src);
        if (st) rc = 1;
    }
    if (kname && !tile_module_find(L.m, kname)) {
        fprintf(stderr, "tessel tile emit: no kernel '%s' in %s\n", kname, argv[2]);
        rc = 1;
    }
    if (rc) fprintf(stderr, "%s", sb_str(&L.d.msg));
    else fputs(sb_str(&out), stdout);
    sb_free(&out);
    loaded_free(&L);
    return rc;
}

/* tessel tile select FILE [--target T]: expand, select, print. */
static int cmd_tile_select(int argc, char **argv)
{
    const char *tname = "cpu";
    for (int i = 3; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--target") && i + 1 < argc) v = argv[++i];
        else if (!strncmp(argv[i], "--target=", 9)) v = argv[i] + 9;
        if (!v) {
            fprintf(stderr, "tessel tile select: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
        tname = v;
    }
    const target *t = target_by_name(tname);
    if (!t) {
        fprintf(stderr, "tessel tile select: unknown target '%s' (cpu, cuda, sm_80, sm_86, sm_89, sm_90, sm_90a, ...)\n",
                tname);
        return 2;
    }
    loaded L;
    int rc = load(&L, argv[2], 1, 1, tname); /* pipelines in the form of that arch */
    if (!rc && target_select(L.m, NULL, t, &L.src, &L.d)) {
        fprintf(stderr, "%s", sb_str(&L.d.msg));
        rc = 1;
    }
    if (!rc) {
        char *text = tile_print(L.m);
        fputs(text, stdout);
        free(text);
    }
    loaded_free(&L);
    return rc;
}

int cmd_tile(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        tile_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1];
    if (argc < 3) {
        tile_usage(stderr);
        return 2;
    }
    if (!strcmp(sub, "run")) return cmd_tile_run(argc, argv);
    if (!strcmp(sub, "emit")) return cmd_tile_emit(argc, argv);
    if (!strcmp(sub, "select")) return cmd_tile_select(argc, argv);
    int check = !strcmp(sub, "check"), print = !strcmp(sub, "print"), expand = !strcmp(sub, "expand");
    if (!check && !print && !expand) {
        fprintf(stderr, "tessel tile: unknown subcommand '%s'\n", sub);
        tile_usage(stderr);
        return 2;
    }
    const char *arch = NULL;
    if (expand && argc == 5 && !strcmp(argv[3], "--arch")) {
        arch = argv[4];
    } else if (argc > 3) {
        fprintf(stderr, "tessel tile %s: unexpected argument '%s'\n", sub, argv[3]);
        return 2;
    }
    loaded L;
    int rc = load(&L, argv[2], 1, expand, arch);
    if (!rc && (print || expand)) {
        char *text = tile_print(L.m);
        fputs(text, stdout);
        free(text);
    }
    loaded_free(&L);
    return rc;
}
