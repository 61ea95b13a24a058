/* run_device.c — a launch plan on a CUDA device, tensors resident there
 * (run_device.h). Requires a plan from sched_lower whose module verifies;
 * guarantees the launch-for-launch semantics of sched_run (run.c): the same
 * kernels in the same order, the same argument binding (tensors by name,
 * flat ones as 1-D of all their elements, float scalars as doubles, size
 * symbols as ints), temporaries some launch takes zeroed per run, empty
 * boxes skipped.
 *
 * Kernel ABI (codegen/cuda.c param_list): per tensor parameter its device
 * pointer then (extent, stride) per dim in elements; per scalar a long long
 * or, for a float typed scalar, a double; per size symbol of the kernel a
 * long long; last the error record, 8 x u64 (flag, param, dim, index,
 * thread, block x/y/z) written by the first lane that finds an index out of
 * range. Each launch of a run gets its own record, so a failure names its
 * kernel. The 32-bit index variant runs unless an extent, stride, span or
 * int argument passes 2^30 (codegen/cuda_run.c uses the same rule). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda.h"
#include "sched/run_device.h"

enum { DEV_ERR_WORDS = 8 };
static const int64_t DEV_I32_LIMIT = (int64_t)1 << 30;

/* One compiled variant of a kernel: its index width and the arm of each
 * size branch, key = wide | arm bits << 1 (codegen/cuda.h). */
typedef struct dev_variant {
    unsigned key;
    rt_cuda_module *mod;
    rt_cuda_function fn;
} dev_variant;

/* One launch's kernel (launches of one tile kernel share it): its source,
 * emitted once, and the variants compiled so far. A kernel without size
 * branches has its 32-bit variant built when the plan is opened; every
 * other variant is built the first time a launch's sizes need it. */
typedef struct dev_kernel {
    const tile_kernel *k;
    char *src;
    cg_cuda_branches br;
    dev_variant *var;
    int nvar, capvar;
    int64_t smem; /* dynamic shared bytes */
} dev_kernel;

struct sched_dev {
    const sched_plan *p;
    rt_cuda_device *dev;
    dev_kernel *kern;     /* [nlaunches] */
    int *owner;           /* [nlaunches]: launch whose dev_kernel this one uses */
    rt_cuda_ptr err;      /* [nlaunches][DEV_ERR_WORDS] u64 */
    rt_cuda_ptr *temp;    /* [ntensors]: device storage of temporaries */
    size_t *temp_cap;     /* [ntensors]: its bytes */
    rt_cuda_ptr *scratch; /* [plan nscratch]: the plan's buffers between launches */
    int last_launches;
};

static tsl_status dev_nomem(tsl_diag *d)
{
    diag_error(d, TSL_ERR_NOMEM, "out of memory");
    return TSL_ERR_NOMEM;
}

/* Emit kernel dk->k: its source, size branches and shared bytes. */
static tsl_status dev_kernel_emit(sched_dev *x, dev_kernel *dk, tsl_diag *d)
{
    strbuf src = {0};
    tsl_status st = cg_cuda_emit_branches(x->p->m, dk->k, &src, &dk->br, d);
    if (!st) {
        dk->smem = cg_cuda_smem_bytes(x->p->m, dk->k, d);
        if (dk->smem < 0) st = d && d->first ? d->first : TSL_ERR_INTERNAL;
    }
    if (!st && !(dk->src = sb_take(&src))) st = dev_nomem(d);
    sb_free(&src);
    return st;
}

/* The variant `key` of dk, compiled for the device's arch and loaded on
 * first use. */
static tsl_status dev_kernel_variant(sched_dev *x, dev_kernel *dk, unsigned key, rt_cuda_function *fn,
                                     tsl_diag *d)
{
    for (int i = 0; i < dk->nvar; i++)
        if (dk->var[i].key == key) {
            *fn = dk->var[i].fn;
            return TSL_OK;
        }
    if (dk->nvar == dk->capvar) {
        int cap = dk->capvar ? 2 * dk->capvar : 2;
        dev_variant *v = realloc(dk->var, sizeof *v * (size_t)cap);
        if (!v) return dev_nomem(d);
        dk->var = v;
        dk->capvar = cap;
    }
    const tile_kernel *k = dk->k;
    int wide = key & 1;
    char defs[CG_CUDA_MAX_BRANCHES][24];
    const char *extra[CG_CUDA_MAX_BRANCHES + 1];
    int ne = 0;
    if (wide) extra[ne++] = CG_CUDA_INDEX64;
    for (int i = 0; i < dk->br.n; i++) {
        snprintf(defs[i], sizeof defs[i], "-DTSL_IF%d=%u", i, (key >> (i + 1)) & 1u);
        extra[ne++] = defs[i];
    }
    char name[160];
    snprintf(name, sizeof name, "%s.cu", k->name);
    rt_cuda_options o = {0};
    o.name = name;
    o.extra = extra;
    o.n_extra = ne;
    void *cubin = NULL;
    size_t n = 0;
    dev_variant v = {key, NULL, NULL};
    tsl_status st = rt_cuda_compile(dk->src, rt_cuda_device_info(x->dev)->arch, &o, &cubin, &n, NULL, d);
    if (!st) st = rt_cuda_module_load(x->dev, cubin, n, &v.mod, d);
    if (!st) {
        char entry[160], sym[192];
        cg_cuda_entry_name(k->name, entry, sizeof entry);
        snprintf(sym, sizeof sym, "%s_%s", entry, wide ? "i64" : "i32");
        st = rt_cuda_function_get(v.mod, sym, &v.fn, d);
    }
    free(cubin);
    if (st) {
        rt_cuda_module_free(v.mod);
        return st;
    }
    dk->var[dk->nvar++] = v;
    *fn = v.fn;
    return TSL_OK;
}

tsl_status sched_dev_create(const sched_plan *p, rt_cuda_device *dev, sched_dev **out, tsl_diag *d)
{
    *out = NULL;
    sched_dev *x = calloc(1, sizeof *x);
    int nl = p->nlaunches, nt = p->def->ntensors;
    if (x) {
        x->p = p;
        x->dev = dev;
        x->kern = calloc((size_t)nl + 1, sizeof *x->kern);
        x->owner = calloc((size_t)nl + 1, sizeof *x->owner);
        x->temp = calloc((size_t)nt + 1, sizeof *x->temp);
        x->temp_cap = calloc((size_t)nt + 1, sizeof *x->temp_cap);
        x->scratch = calloc((size_t)p->nscratch + 1, sizeof *x->scratch);
    }
    if (!x || !x->kern || !x->owner || !x->temp || !x->temp_cap || !x->scratch) {
        sched_dev_free(x);
        return dev_nomem(d);
    }
    tsl_status st = TSL_OK;
    for (int i = 0; !st && i < nl; i++) {
        x->owner[i] = i;
        for (int j = 0; j < i; j++)
            if (p->launches[j].k == p->launches[i].k) {
                x->owner[i] = j;
                break;
            }
        if (x->owner[i] == i) {
            dev_kernel *dk = &x->kern[i];
            rt_cuda_function fn;
            dk->k = p->launches[i].k;
            st = dev_kernel_emit(x, dk, d);
            if (!st && dk->br.n == 0) st = dev_kernel_variant(x, dk, 0, &fn, d);
        }
    }
    if (!st && nl) st = rt_cuda_alloc(dev, (size_t)nl * DEV_ERR_WORDS * 8, &x->err, d);
    for (int i = 0; !st && i < p->nscratch; i++)
        st = rt_cuda_alloc(dev, (size_t)p->scratch[i].count * tsl_dtype_size(p->scratch[i].dtype) + 8,
                           &x->scratch[i], d);
    if (st) {
        sched_dev_free(x);
        return st;
    }
    *out = x;
    return TSL_OK;
}

void sched_dev_free(sched_dev *x)
{
    if (!x) return;
    for (int i = 0; x->kern && i < x->p->nlaunches; i++) {
        for (int j = 0; j < x->kern[i].nvar; j++) rt_cuda_module_free(x->kern[i].var[j].mod);
        free(x->kern[i].var);
        free(x->kern[i].src);
    }
    for (int i = 0; x->temp && i < x->p->def->ntensors; i++) rt_cuda_free(x->dev, x->temp[i]);
    for (int i = 0; x->scratch && i < x->p->nscratch; i++) rt_cuda_free(x->dev, x->scratch[i]);
    free(x->scratch);
    rt_cuda_free(x->dev, x->err);
    free(x->kern);
    free(x->owner);
    free(x->temp);
    free(x->temp_cap);
    free(x);
}

int sched_dev_launches_run(const sched_dev *x) { return x ? x->last_launches : 0; }

static int64_t dev_numel(const lang_def *def, const lang_bound *b, int t)
{
    int64_t n = 1;
    for (int k = 0; k < def->tensors[t]->rank; k++) n *= b->shapes[t][k];
    return n;
}

/* Device storage of every temporary some launch takes, for sizes b,
 * zeroed (as the reference interpreter has them). Temporaries a fused
 * kernel keeps in registers get none: zeroing them cost 17-40 us a run
 * of softmax/layernorm on an H200, a quarter of the kernel. */
static tsl_status dev_temps(sched_dev *x, const lang_bound *b, tsl_diag *d)
{
    const lang_def *def = x->p->def;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || !(t->flags & LANG_TENSOR_TEMP) || !sched_tensor_used(x->p, i)) continue;
        size_t bytes = (size_t)dev_numel(def, b, i) * tsl_dtype_size(dtype_carrier(t->dtype));
        if (bytes > x->temp_cap[i]) {
            rt_cuda_free(x->dev, x->temp[i]);
            x->temp[i] = 0;
            x->temp_cap[i] = 0;
            tsl_status st = rt_cuda_alloc(x->dev, bytes, &x->temp[i], d);
            if (st) {
                diag_error(d, st, "device memory for the temporary '%s' (%zu bytes)", t->name, bytes);
                return st;
            }
            x->temp_cap[i] = bytes;
        }
        if (bytes) {
            tsl_status st = rt_cuda_memset8(x->dev, x->temp[i], 0, bytes, d);
            if (st) return st;
        }
    }
    return TSL_OK;
}

/* Grid evaluation: kernel symbols and int parameters by value. */
typedef struct dev_lookup_ctx {
    const tile_kernel *k;
    const int64_t *symv;
    const tile_interp_arg *args;
    int nargs;
} dev_lookup_ctx;

static const tile_interp_arg *dev_find_arg(const tile_interp_arg *args, int nargs, const char *name)
{
    for (int i = 0; i < nargs; i++)
        if (args[i].name && !strcmp(args[i].name, name)) return &args[i];
    return NULL;
}

static int64_t dev_lookup(void *ctx, const tile_value *v, int *ok)
{
    const dev_lookup_ctx *c = ctx;
    for (int i = 0; i < c->k->nsyms; i++)
        if (c->k->syms[i] == v) return c->symv[i];
    const tile_interp_arg *a = dev_find_arg(c->args, c->nargs, v->name);
    if (a && !a->t && v->origin == TILE_O_PARAM) return a->ival;
    *ok = 0;
    return 0;
}

/* Per-launch scratch: bound arguments, their shapes, kernel argument slots. */
typedef struct dev_launch_buf {
    tile_interp_arg *args; /* [nargs] as sched_run builds them, data = device address */
    DLTensor *dl;          /* [nargs] */
    int64_t *flatn;        /* [nargs] */
    int64_t *bshape;       /* [nargs * TSL_MAX_RANK]: shapes of bytes views */
    int64_t *symv;         /* [nsyms] */
    uint64_t *slot;        /* kernel argument values */
    void **params;         /* params[i] = &slot[i], then the tensor maps */
    unsigned long long (*tmaps)[16]; /* TMA tensor maps (64-byte aligned), after the slots */
} dev_launch_buf;

static void dev_launch_buf_free(dev_launch_buf *lb)
{
    free(lb->args);
    free(lb->dl);
    free(lb->flatn);
    free(lb->bshape);
    free(lb->symv);
    free(lb->slot);
    free(lb->params);
    free(lb->tmaps);
    memset(lb, 0, sizeof *lb);
}

/* Bind launch li's arguments and queue it (nothing when its grid is empty). */
static tsl_status dev_launch(sched_dev *x, int li, const lang_bound *b, const rt_cuda_ptr *tensors,
                             const double *scalars, tsl_diag *d)
{
    const sched_plan *p = x->p;
    const sched_launch *l = &p->launches[li];
    const tile_kernel *k = l->k;
    const lang_def *def = p->def;
    dev_kernel *dk = &x->kern[x->owner[li]];
    int nslots = k->nsyms + 1;
    for (int i = 0; i < k->nparams; i++) nslots += 1 + 2 * k->params[i]->type.rank;
    cg_cuda_tmap maps[CG_MAX_TMAPS];
    int nmaps = cg_cuda_tmaps(k, maps, CG_MAX_TMAPS);
    if (nmaps > CG_MAX_TMAPS) {
        diag_error(d, TSL_ERR_UNAVAILABLE, "kernel '%s': more than %d TMA tensor maps", k->name, CG_MAX_TMAPS);
        return TSL_ERR_UNAVAILABLE;
    }
    dev_launch_buf lb = {0};
    lb.args = calloc((size_t)l->nargs + 1, sizeof *lb.args);
    lb.dl = calloc((size_t)l->nargs + 1, sizeof *lb.dl);
    lb.flatn = calloc((size_t)l->nargs + 1, sizeof *lb.flatn);
    lb.bshape = calloc((size_t)(l->nargs + 1) * TSL_MAX_RANK, sizeof *lb.bshape);
    lb.symv = calloc((size_t)k->nsyms + 1, sizeof *lb.symv);
    lb.slot = calloc((size_t)nslots, sizeof *lb.slot);
    lb.params = calloc((size_t)nslots + CG_MAX_TMAPS, sizeof *lb.params);
    lb.tmaps = aligned_alloc(64, (size_t)(nmaps + 1) * 128);
    if (!lb.args || !lb.dl || !lb.flatn || !lb.bshape || !lb.symv || !lb.slot || !lb.params || !lb.tmaps) {
        dev_launch_buf_free(&lb);
        return dev_nomem(d);
    }
    for (int j = 0; j < l->nargs; j++) {
        const sched_arg *sa = &l->args[j];
        tile_interp_arg *a = &lb.args[j];
        a->name = sa->name;
        if (sa->kind == SCHED_ARG_TENSOR) {
            const lang_tensor *t = def->tensors[sa->tensor];
            rt_cuda_ptr ptr = (t->flags & LANG_TENSOR_TEMP) ? x->temp[sa->tensor] : tensors[sa->tensor];
            DLTensor *dl = &lb.dl[j];
            dl->data = (void *)(uintptr_t)ptr;
            dl->device.device_type = kDLCUDA;
            dl->dtype = tsl_dtype_to_dlpack(sched_tensor_boundary_dtype(t));
            if (sa->flat) {
                lb.flatn[j] = dev_numel(def, b, sa->tensor);
                dl->ndim = 1;
                dl->shape = &lb.flatn[j];
            } else {
                dl->ndim = t->rank;
                dl->shape = b->shapes[sa->tensor];
            }
            if (sa->bytes || sa->rows) {
                DLTensor whole = *dl;
                sched_arg_view(p, l, sa, b, &whole, dl, lb.bshape + (size_t)j * TSL_MAX_RANK);
            }
            a->t = dl;
        } else if (sa->kind == SCHED_ARG_SCRATCH) {
            DLTensor *dl = &lb.dl[j];
            dl->data = (void *)(uintptr_t)x->scratch[sa->scratch];
            dl->device.device_type = kDLCUDA;
            dl->dtype = tsl_dtype_to_dlpack(p->scratch[sa->scratch].dtype);
            dl->ndim = 1;
            dl->shape = &p->scratch[sa->scratch].count;
            a->t = dl;
        } else if (sa->kind == SCHED_ARG_SCALAR) {
            if (dtype_info_of(def->tensors[sa->tensor]->dtype)->is_float)
                *a = tile_interp_arg_float(sa->name, scalars[sa->tensor]);
            else
                a->ival = (int64_t)scalars[sa->tensor];
        } else {
            a->ival = sa->kind == SCHED_ARG_SMS ? rt_cuda_device_info(x->dev)->sm_count : sched_arg_int(p, sa, b);
        }
    }
    tsl_status st = tile_interp_bind_symbols(k, lb.args, l->nargs, NULL, NULL, 0, lb.symv, d);
    unsigned grid[3] = {1, 1, 1}, block[3] = {(unsigned)k->threads, 1, 1};
    int empty = 0, need64 = 0, ns = 0;
    dev_lookup_ctx lc = {k, lb.symv, lb.args, l->nargs};
    for (int i = 0; !st && i < k->ngrid; i++) {
        int ok = 1;
        int64_t g = tile_expr_eval(k->grid[i], dev_lookup, &lc, NULL, -1, &ok);
        if (!ok || g < 0 || g > 2147483647LL || (i > 0 && g > 65535)) {
            diag_error(d, TSL_ERR_SHAPE, "kernel '%s': grid dimension %d is %lld (not launchable)", k->name, i,
                       (long long)g);
            st = TSL_ERR_SHAPE;
        }
        if (g == 0) empty = 1;
        grid[i] = (unsigned)g;
    }
    for (int q = 0; !st && q < k->nparams; q++) {
        const tile_value *v = k->params[q];
        const tile_interp_arg *a = dev_find_arg(lb.args, l->nargs, v->name);
        if (!a) {
            diag_error(d, TSL_ERR_INTERNAL, "kernel '%s': parameter '%s' is not in the plan", k->name, v->name);
            st = TSL_ERR_INTERNAL;
            break;
        }
        if (v->kind == TILE_V_SCALAR) {
            /* a float typed scalar's ival holds a double's bits: what the
             * kernel's double parameter reads */
            int fl = tile_value_is_typed_scalar(v) && v->type.dt.kind == TILE_DT_FLOAT;
            if (!fl && (a->ival > DEV_I32_LIMIT || a->ival < -DEV_I32_LIMIT)) need64 = 1;
            memcpy(&lb.slot[ns], &a->ival, 8);
            ns++;
            continue;
        }
        const DLTensor *t = a->t;
        if (!t || t->ndim != v->type.rank) {
            diag_error(d, TSL_ERR_INTERNAL, "kernel '%s': tensor '%s' should have rank %d", k->name, v->name,
                       v->type.rank);
            st = TSL_ERR_INTERNAL;
            break;
        }
        lb.slot[ns++] = (uint64_t)(uintptr_t)t->data;
        int64_t stride = 1, span = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            int64_t e = t->shape[i];
            lb.slot[ns + 2 * i] = (uint64_t)e;          /* extent */
            lb.slot[ns + 2 * i + 1] = (uint64_t)stride; /* stride = product of the extents after i */
            if (e > DEV_I32_LIMIT || stride > DEV_I32_LIMIT) need64 = 1;
            span += (e > 0 ? e - 1 : 0) * stride;
            stride *= e;
        }
        if (span > DEV_I32_LIMIT) need64 = 1;
        ns += 2 * t->ndim;
    }
    for (int s = 0; !st && s < k->nsyms; s++) {
        lb.slot[ns++] = (uint64_t)lb.symv[s];
        if (lb.symv[s] > DEV_I32_LIMIT) need64 = 1;
    }
    if (!st) {
        lb.slot[ns++] = x->err + (uint64_t)li * DEV_ERR_WORDS * 8;
        TSL_ASSERT(ns == nslots);
        for (int i = 0; i < ns; i++) lb.params[i] = &lb.slot[i];
    }
    /* TMA tensor maps of the (dense, device-resident) tensors */
    for (int i = 0; !st && i < nmaps; i++) {
        const tile_value *g = k->params[maps[i].param];
        const tile_interp_arg *a = dev_find_arg(lb.args, l->nargs, g->name);
        const DLTensor *t = a ? a->t : NULL;
        int64_t str[TSL_MAX_RANK], acc = 1;
        tsl_dtype dt;
        lb.params[ns + i] = lb.tmaps[i];
        if (!t || t->ndim > TSL_MAX_RANK || tile_dtype_to_tsl(g->type.dt, &dt)) {
            diag_error(d, TSL_ERR_INTERNAL, "kernel '%s': no tensor for the TMA map of '%s'", k->name, g->name);
            st = TSL_ERR_INTERNAL;
            break;
        }
        for (int j = t->ndim - 1; j >= 0; j--) {
            str[j] = acc;
            acc *= t->shape[j];
        }
        if (!acc) { /* empty: nothing is copied */
            memset(lb.tmaps[i], 0, 128);
            continue;
        }
        st = rt_cuda_tmap_encode(x->dev, lb.tmaps[i], g->name, dt, maps[i].rank, (rt_cuda_ptr)(uintptr_t)t->data,
                                 t->shape, str, maps[i].box, maps[i].swizzle, d);
    }
    /* the variant: index width, then the arm each size branch takes */
    unsigned key = (unsigned)need64;
    for (int i = 0; !st && i < dk->br.n; i++) {
        int ok = 1;
        int64_t c = tile_expr_eval(dk->br.cond[i], dev_lookup, &lc, NULL, -1, &ok);
        if (!ok) {
            diag_error(d, TSL_ERR_INTERNAL, "kernel '%s': a size branch does not evaluate", k->name);
            st = TSL_ERR_INTERNAL;
        }
        if (c) key |= 1u << (i + 1);
    }
    rt_cuda_function fn = NULL;
    if (!st && !empty) st = dev_kernel_variant(x, dk, key, &fn, d);
    if (!st && !empty) {
        st = rt_cuda_launch(x->dev, fn, grid, block, (unsigned)dk->smem, lb.params, d);
        if (!st) x->last_launches++;
    }
    dev_launch_buf_free(&lb);
    return st;
}

/* After a checked run: the first launch whose record says an index was out
 * of range, as a TSL_ERR_BOUNDS message; TSL_OK when none. */
static tsl_status dev_check_errors(sched_dev *x, const lang_bound *b, tsl_diag *d)
{
    const sched_plan *p = x->p;
    int nl = p->nlaunches;
    uint64_t *rec = calloc((size_t)nl * DEV_ERR_WORDS + 1, sizeof *rec);
    if (!rec) return dev_nomem(d);
    tsl_status st = rt_cuda_copy_dtoh(x->dev, rec, x->err, (size_t)nl * DEV_ERR_WORDS * 8, d);
    for (int li = 0; !st && li < nl; li++) {
        const uint64_t *r = &rec[li * DEV_ERR_WORDS];
        if (!r[0]) continue;
        const sched_launch *l = &p->launches[li];
        const tile_kernel *k = l->k;
        const tile_value *g = r[1] < (uint64_t)k->nparams ? k->params[r[1]] : NULL;
        const sched_arg *sa = NULL;
        for (int j = 0; g && j < l->nargs; j++)
            if (!strcmp(l->args[j].name, g->name)) sa = &l->args[j];
        const char *tname = sa && sa->kind == SCHED_ARG_TENSOR ? p->def->tensors[sa->tensor]->name : "?";
        int dim = (int)r[2];
        long long extent = -1;
        if (sa && sa->kind == SCHED_ARG_TENSOR)
            extent = sa->flat ? (long long)dev_numel(p->def, b, sa->tensor)
                     : dim < p->def->tensors[sa->tensor]->rank ? (long long)b->shapes[sa->tensor][dim] : -1;
        diag_error(d, TSL_ERR_BOUNDS,
                   "kernel '%s': index %lld out of range for dimension %d of '%s' (size %lld) "
                   "(thread %llu, block %llu,%llu,%llu)",
                   k->name, (long long)r[3], dim, tname, extent, (unsigned long long)r[4],
                   (unsigned long long)r[5], (unsigned long long)r[6], (unsigned long long)r[7]);
        st = TSL_ERR_BOUNDS;
        break;
    }
    free(rec);
    return st;
}

tsl_status sched_dev_run(sched_dev *x, const lang_bound *b, const rt_cuda_ptr *tensors, const double *scalars,
                         int check, tsl_diag *d)
{
    const sched_plan *p = x->p;
    x->last_launches = 0;
    tsl_status st = dev_temps(x, b, d);
    if (!st && check && p->nlaunches)
        st = rt_cuda_memset8(x->dev, x->err, 0, (size_t)p->nlaunches * DEV_ERR_WORDS * 8, d);
    for (int i = 0; !st && i < p->nlaunches; i++) {
        if (sched_launch_lanes(p, &p->launches[i], b) == 0) continue;
        st = dev_launch(x, i, b, tensors, scalars, d);
    }
    if (!st && check) st = rt_cuda_synchronize(x->dev, d);
    if (!st && check && p->nlaunches) st = dev_check_errors(x, b, d);
    return st;
}
