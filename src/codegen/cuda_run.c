/* cuda_run.c — running a tile kernel on the GPU: emit (cuda.c), NVRTC for
 * the device's arch (cached by the runtime), bind sizes as
 * tile_interp_run does, copy every tensor argument's span to the device,
 * launch the 32- or 64-bit index variant over the grid, copy the written
 * tensors back, and optionally time more launches with events. */
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda_int.h"
#include "runtime/runtime.h"

#define RUN_MAX_PARAMS 64

static const tile_interp_arg *find_arg(const tile_interp_arg *args, int nargs, const char *name)
{
    for (int i = 0; i < nargs; i++)
        if (args[i].name && !strcmp(args[i].name, name)) return &args[i];
    return NULL;
}

typedef struct sym_ctx {
    const tile_kernel *k;
    const int64_t *symv;
    const tile_interp_arg *args;
    int nargs;
} sym_ctx;

static int64_t lookup(void *ctx, const tile_value *v, int *ok)
{
    const sym_ctx *s = ctx;
    for (int i = 0; i < s->k->nsyms; i++)
        if (s->k->syms[i] == v) return s->symv[i];
    const tile_interp_arg *a = find_arg(s->args, s->nargs, v->name);
    if (a && !a->t && v->origin == TILE_O_PARAM) return a->ival;
    *ok = 0;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Launch arguments are stored here; params[] points into it. */
typedef struct launch_args {
    rt_cuda_ptr ptrs[RUN_MAX_PARAMS];
    rt_cuda_ptr err; /* 8 x u64: flag, param, dim, index, thread, block x/y/z */
    long long vals[RUN_MAX_PARAMS * 17];
    void *params[RUN_MAX_PARAMS * 18 + CG_MAX_TMAPS];
    int nparams, nvals;
    _Alignas(64) unsigned long long tmaps[CG_MAX_TMAPS][16]; /* CUtensorMap values */
} launch_args;

tsl_status cg_cuda_run_opt(const tile_module *m, const tile_kernel *k, const tile_interp_arg *args,
                           int nargs, cg_cuda_run_opts *opts, tsl_diag *d)
{
    if (k->nparams > RUN_MAX_PARAMS) {
        diag_error(d, TSL_ERR_UNAVAILABLE, "kernel '%s': more than %d parameters", k->name, RUN_MAX_PARAMS);
        return TSL_ERR_UNAVAILABLE;
    }
    int64_t *symv = calloc((size_t)k->nsyms + 1, sizeof *symv);
    if (!symv) return TSL_ERR_NOMEM;
    strbuf src = {0};
    rt_cuda_device *dev = NULL;
    rt_cuda_module *mod = NULL;
    void *cubin = NULL;
    size_t cubin_n = 0;
    launch_args *la = calloc(1, sizeof *la);
    size_t spans[RUN_MAX_PARAMS] = {0};
    tsl_status st = la ? TSL_OK : TSL_ERR_NOMEM;
    if (!st) st = tile_interp_bind_symbols(k, args, nargs, NULL, NULL, 0, symv, d);
    int64_t smem = 0;
    if (!st) {
        smem = cg_cuda_smem_bytes(m, k, d);
        if (smem < 0) st = d && d->first ? d->first : TSL_ERR_INTERNAL;
    }
    if (!st) st = cg_cuda_emit(m, k, &src, d);
    if (!st) st = rt_cuda_open(&dev, d);
    /* grid from the sizes */
    sym_ctx sc = {k, symv, args, nargs};
    unsigned grid[3] = {1, 1, 1}, block[3] = {(unsigned)k->threads, 1, 1};
    int empty = 0;
    for (int i = 0; !st && i < k->ngrid; i++) {
        int ok = 1;
        int64_t g = tile_expr_eval(k->grid[i], lookup, &sc, NULL, -1, &ok);
        if (!ok || g < 0 || g > 2147483647LL || (i > 0 && g > 65535)) {
            diag_error(d, TSL_ERR_SHAPE, "kernel '%s': grid dimension %d is %lld (not launchable)", k->name, i,
                       (long long)g);
            st = TSL_ERR_SHAPE;
        }
        if (g == 0) empty = 1;
        grid[i] = (unsigned)g;
    }
    /* arguments: tensors to the device (their whole span, strides kept) */
    int need64 = opts && opts->force_i64;
    for (int p = 0; !st && p < k->nparams; p++) {
        const tile_value *v = k->params[p];
        const tile_interp_arg *a = find_arg(args, nargs, v->name);
        if (!a) {
            diag_error(d, TSL_ERR_ARG, "kernel '%s': parameter '%s' is not bound", k->name, v->name);
            st = TSL_ERR_ARG;
            break;
        }
        if (v->kind == TILE_V_SCALAR) {
            /* a float typed scalar's ival holds the bits of a double, which
             * is what the kernel's `double` parameter reads */
            if (tile_value_is_typed_scalar(v) && v->type.dt.kind == TILE_DT_FLOAT) {
                la->vals[la->nvals] = a->ival;
                la->params[la->nparams++] = &la->vals[la->nvals++];
                continue;
            }
            la->vals[la->nvals] = a->ival;
            la->params[la->nparams++] = &la->vals[la->nvals++];
            if (a->ival > (1LL << 30) || a->ival < -(1LL << 30)) need64 = 1;
            continue;
        }
        const DLTensor *t = a->t;
        int64_t shape[CG_MAX_RANK];
        if (!t || v->type.rank > CG_MAX_RANK || t->ndim != v->type.rank) {
            diag_error(d, TSL_ERR_SHAPE, "tensor '%s' should have rank %d", v->name, v->type.rank);
            st = TSL_ERR_SHAPE;
            break;
        }
        if ((st = tile_interp_param_shape(k, v, symv, shape, d))) break;
        tsl_dtype want, have;
        if (tile_dtype_to_tsl(v->type.dt, &want) || tsl_dtype_from_dlpack(t->dtype, &have) || want != have ||
            t->device.device_type != kDLCPU) {
            diag_error(d, TSL_ERR_SHAPE, "tensor '%s' must be a host tensor of the kernel's dtype", v->name);
            st = TSL_ERR_SHAPE;
            break;
        }
        size_t es = tsl_dtype_size(want);
        int64_t span = 1, acc = 1, zero = 0;
        for (int i = t->ndim - 1; i >= 0; i--) {
            int64_t s = t->strides ? t->strides[i] : acc;
            if (s < 0) {
                diag_error(d, TSL_ERR_ARG, "tensor '%s' has a negative stride", v->name);
                st = TSL_ERR_ARG;
            }
            if (t->shape[i] == 0) zero = 1;
            span += (t->shape[i] - 1) * s;
            la->vals[la->nvals + 2 * i] = t->shape[i];
            la->vals[la->nvals + 2 * i + 1] = s;
            acc *= t->shape[i];
            if (t->shape[i] > (1LL << 30) || s > (1LL << 30)) need64 = 1;
        }
        if (st) break;
        if (zero) span = 0;
        if (span > (1LL << 30)) need64 = 1;
        spans[p] = es ? (size_t)span * es : (size_t)tsl_dtype_nbytes(want, span); /* packed: whole bytes */
        la->ptrs[p] = 0;
        if (spans[p]) {
            if ((st = rt_cuda_alloc(dev, spans[p], &la->ptrs[p], d))) break;
            if ((st = rt_cuda_copy_htod(dev, la->ptrs[p], (const char *)t->data + t->byte_offset, spans[p], d))) break;
        }
        la->params[la->nparams++] = &la->ptrs[p];
        for (int i = 0; i < t->ndim; i++) {
            la->params[la->nparams++] = &la->vals[la->nvals + 2 * i];
            la->params[la->nparams++] = &la->vals[la->nvals + 2 * i + 1];
        }
        la->nvals += 2 * t->ndim;
    }
    for (int s = 0; !st && s < k->nsyms; s++) {
        la->vals[la->nvals] = symv[s];
        la->params[la->nparams++] = &la->vals[la->nvals++];
        if (symv[s] > (1LL << 30)) need64 = 1;
    }
    /* the error record of gather/scatter (tsl_report) */
    unsigned long long errv[8] = {0};
    if (!st) st = rt_cuda_alloc(dev, sizeof errv, &la->err, d);
    if (!st) st = rt_cuda_memset8(dev, la->err, 0, sizeof errv, d);
    if (!st) la->params[la->nparams++] = &la->err;
    /* TMA tensor maps of the bound device tensors, after the regular parameters */
    cg_cuda_tmap maps[CG_MAX_TMAPS];
    int nmaps = st ? 0 : cg_cuda_tmaps(k, maps, CG_MAX_TMAPS);
    if (nmaps > CG_MAX_TMAPS) {
        diag_error(d, TSL_ERR_UNAVAILABLE, "kernel '%s': more than %d TMA tensor maps", k->name, CG_MAX_TMAPS);
        st = TSL_ERR_UNAVAILABLE;
    }
    for (int i = 0; !st && i < nmaps; i++) {
        const tile_value *g = k->params[maps[i].param];
        const DLTensor *t = find_arg(args, nargs, g->name)->t;
        int64_t str[CG_MAX_RANK], acc = 1;
        for (int j = t->ndim - 1; j >= 0; j--) {
            str[j] = t->strides ? t->strides[j] : acc;
            acc *= t->shape[j];
        }
        tsl_dtype dt;
        tile_dtype_to_tsl(g->type.dt, &dt);
        la->params[la->nparams] = la->tmaps[i];
        if (!la->ptrs[maps[i].param]) { /* an empty tensor: nothing is copied */
            la->nparams++;
            continue;
        }
        st = rt_cuda_tmap_encode(dev, la->tmaps[i], g->name, dt, maps[i].rank, la->ptrs[maps[i].param], t->shape, str,
                                 maps[i].box, maps[i].swizzle, d);
        la->nparams++;
    }
    /* compile the index variant the sizes need (one per compile) */
    if (!st) {
        char name[160];
        snprintf(name, sizeof name, "%s.cu", k->name);
        static const char *const wide_opt[] = {CG_CUDA_INDEX64};
        rt_cuda_options o = {0};
        o.name = name;
        if (need64) {
            o.extra = wide_opt;
            o.n_extra = 1;
        }
        st = rt_cuda_compile(sb_str(&src), NULL, &o, &cubin, &cubin_n, NULL, d);
    }
    if (!st) st = rt_cuda_module_load(dev, cubin, cubin_n, &mod, d);
    rt_cuda_function fn = NULL;
    if (!st) {
        char entry[160], sym[192];
        cg_cuda_entry_name(k->name, entry, sizeof entry);
        snprintf(sym, sizeof sym, "%s_%s", entry, need64 ? "i64" : "i32");
        st = rt_cuda_function_get(mod, sym, &fn, d);
    }
    if (opts) {
        opts->used_i64 = need64;
        opts->median_ms = 0;
    }
    if (!st && !empty) {
        st = rt_cuda_launch(dev, fn, grid, block, (unsigned)smem, la->params, d);
        if (!st) st = rt_cuda_synchronize(dev, d);
        if (!st) st = rt_cuda_copy_dtoh(dev, errv, la->err, sizeof errv, d);
        if (!st && errv[0]) {
            const tile_value *g = errv[1] < (unsigned long long)k->nparams ? k->params[errv[1]] : NULL;
            const tile_interp_arg *ga = g ? find_arg(args, nargs, g->name) : NULL;
            int dim = (int)errv[2];
            diag_error(d, TSL_ERR_BOUNDS,
                       "kernel '%s': gather/scatter index %lld is outside dimension %d of '%s' (extent %lld) "
                       "(thread %lld, block %llu,%llu,%llu)",
                       k->name, (long long)errv[3], dim, g ? g->name : "?",
                       ga && ga->t && dim < ga->t->ndim ? (long long)ga->t->shape[dim] : -1LL, (long long)errv[4],
                       errv[5], errv[6], errv[7]);
            st = TSL_ERR_BOUNDS;
        }
    }
    /* copy back every tensor the kernel writes */
    if (!st) {
        const tile_value *outs[RUN_MAX_PARAMS];
        int no = tile_interp_outputs(k, outs, RUN_MAX_PARAMS);
        for (int p = 0; !st && p < k->nparams; p++) {
            int written = 0;
            for (int i = 0; i < no; i++) written |= outs[i] == k->params[p];
            if (!written || !spans[p]) continue;
            const DLTensor *t = find_arg(args, nargs, k->params[p]->name)->t;
            st = rt_cuda_copy_dtoh(dev, (char *)t->data + t->byte_offset, la->ptrs[p], spans[p], d);
        }
    }
    /* timing: more launches (the outputs are overwritten with the same values) */
    if (!st && !empty && opts && opts->reps > 0) {
        rt_cuda_event *e0 = NULL, *e1 = NULL;
        double *ms = calloc((size_t)opts->reps, sizeof *ms);
        st = ms ? rt_cuda_event_create(dev, &e0, d) : TSL_ERR_NOMEM;
        if (!st) st = rt_cuda_event_create(dev, &e1, d);
        for (int r = 0; !st && r < opts->reps; r++) {
            float t = 0;
            st = rt_cuda_event_record(dev, e0, d);
            if (!st) st = rt_cuda_launch(dev, fn, grid, block, (unsigned)smem, la->params, d);
            if (!st) st = rt_cuda_event_record(dev, e1, d);
            if (!st) st = rt_cuda_event_elapsed(dev, e0, e1, &t, d);
            ms[r] = t;
        }
        if (!st) {
            qsort(ms, (size_t)opts->reps, sizeof *ms, cmp_double);
            opts->median_ms = ms[opts->reps / 2];
        }
        free(ms);
        rt_cuda_event_destroy(dev, e0);
        rt_cuda_event_destroy(dev, e1);
    }
    for (int p = 0; p < k->nparams && la; p++)
        if (la->ptrs[p]) rt_cuda_free(dev, la->ptrs[p]);
    if (la && la->err) rt_cuda_free(dev, la->err);
    rt_cuda_module_free(mod);
    rt_cuda_close(dev);
    free(cubin);
    free(la);
    free(symv);
    sb_free(&src);
    return st;
}

tsl_status cg_cuda_run(const tile_module *m, const tile_kernel *k, const tile_interp_arg *args,
                       int nargs, tsl_diag *d)
{
    return cg_cuda_run_opt(m, k, args, nargs, NULL, d);
}
