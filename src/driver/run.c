/* run.c — executables and single tile kernels run on a target's executor
 * with host data: the one place that moves the caller's tensors to where
 * the kernels read them and back.
 *
 * A program run (drv_run) takes the interpreter's views of every def
 * tensor: on a host-memory target the caller's storage is bound as is (a
 * strided view through a dense copy), on a device target each parameter
 * and output gets a device buffer copied in once (outputs too, so in/out
 * data and untouched elements survive) and every output is copied back.
 * A kernel run (drv_kernel_run) takes tile_interp_run's arguments by name
 * and binds each kernel parameter, strides kept. */
#include <string.h>

#include "driver/driver_int.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "tile/interp.h"

/* ---- prepared executables ------------------------------------------------------------------- */

struct drv_prepared {
    drv_executable *x;
    rt_exec *e;
};

tsl_status drv_prepare(drv_executable *x, const drv_target *t, void *dev, drv_prepared **out, tsl_diag *d)
{
    *out = NULL;
    drv_prepared *p = calloc(1, sizeof *p);
    if (!p) {
        drv_executable_free(x);
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    p->x = x;
    tsl_status st = rt_exec_create(x->plan, t->rt, dev, &p->e, d);
    if (st) {
        drv_prepared_free(p);
        return st;
    }
    rt_exec_set_threads(p->e, x->threads);
    *out = p;
    return TSL_OK;
}

tsl_status drv_prepare_plan(const lang_def *def, const struct sched_plan *sp, const drv_target *t, void *dev,
                            drv_prepared **out, tsl_diag *d)
{
    *out = NULL;
    drv_executable *x = NULL;
    tsl_status st = drv_compile_plan(def, sp, t, t->rt->arch(dev), NULL, &x, d);
    return st ? st : drv_prepare(x, t, dev, out, d);
}

void drv_prepared_free(drv_prepared *p)
{
    if (!p) return;
    rt_exec_free(p->e);
    drv_executable_free(p->x);
    free(p);
}

rt_exec *drv_prepared_exec(const drv_prepared *p) { return p->e; }
const drv_executable *drv_prepared_executable(const drv_prepared *p) { return p->x; }

/* ---- a program's run ----------------------------------------------------------------------- */

/* Up to this many tensors and statements a run's arrays live in its
 * run_env: a cached run of a small def allocates nothing here. */
enum { RUN_STACK = 16 };

/* The run's arrays from bound sizes: shapes, sizes, statement lanes. */
typedef struct run_env {
    rt_run r;
    const int64_t **shapes;
    int64_t *words, *lanes;
    rt_ptr *data;
    const int64_t *shapes_here[RUN_STACK];
    int64_t words_here[RUN_STACK], lanes_here[RUN_STACK];
    rt_ptr data_here[RUN_STACK];
} run_env;

static void run_env_free(run_env *v)
{
    if (v->shapes != v->shapes_here) free(v->shapes);
    if (v->words != v->words_here) free(v->words);
    if (v->lanes != v->lanes_here) free(v->lanes);
    if (v->data != v->data_here) free(v->data);
}

static tsl_status run_env_make(const lang_bound *b, run_env *v, tsl_diag *d)
{
    const lang_def *def = b->def;
    int n = def->ntensors;
    int heap = n > RUN_STACK, heap_lanes = def->nstmts > RUN_STACK;
    v->shapes = heap ? calloc((size_t)n + 1, sizeof *v->shapes) : v->shapes_here;
    v->words = heap ? calloc((size_t)n + 1, sizeof *v->words) : v->words_here;
    v->data = heap ? calloc((size_t)n + 1, sizeof *v->data) : v->data_here;
    v->lanes = heap_lanes ? calloc((size_t)def->nstmts + 1, sizeof *v->lanes) : v->lanes_here;
    if (!v->shapes || !v->words || !v->data || !v->lanes) {
        run_env_free(v);
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    if (!heap) { /* (calloc'd when on the heap) */
        memset(v->words, 0, sizeof *v->words * (size_t)n);
        memset(v->data, 0, sizeof *v->data * (size_t)n);
    }
    for (int i = 0; i < n; i++) v->shapes[i] = b->shapes[i];
    for (int s = 0; s < def->nstmts; s++) {
        v->lanes[s] = 1;
        for (int k = 0; k < def->stmts[s].niter; k++) {
            int64_t e = b->stmts[s].hi[k] - b->stmts[s].lo[k];
            v->lanes[s] = e <= 0 ? 0 : v->lanes[s] * e;
            if (e <= 0) break;
        }
    }
    v->r = (rt_run){.data = v->data, .shape = v->shapes, .words = v->words, .sizes = b->sizes, .lanes = v->lanes};
    return TSL_OK;
}

/* A scalar parameter's value as the kernels read it. */
static int64_t scalar_word(tsl_dtype dt, double v)
{
    int64_t w;
    if (dtype_info_of(dt)->is_float) memcpy(&w, &v, 8);
    else w = (int64_t)v;
    return w;
}

tsl_status drv_run_device(rt_exec *e, const lang_bound *b, const rt_ptr *data, const double *scalars, int check,
                          tsl_diag *d)
{
    return drv_run_device_mem(e, b, data, scalars, check, NULL, d);
}

tsl_status drv_run_device_mem(rt_exec *e, const lang_bound *b, const rt_ptr *data, const double *scalars, int check,
                              const rt_mem *mem, tsl_diag *d)
{
    run_env v;
    tsl_status st = run_env_make(b, &v, d);
    if (st) return st;
    const lang_def *def = b->def;
    for (int i = 0; i < def->ntensors; i++) {
        if (def->tensors[i]->is_scalar) v.words[i] = scalars ? scalar_word(def->tensors[i]->dtype, scalars[i]) : 0;
        else v.data[i] = data[i];
    }
    v.r.mem = mem;
    st = rt_exec_run(e, &v.r, check, d);
    run_env_free(&v);
    return st;
}

/* Is the view C-contiguous for its shape? */
static int view_dense(const interp_tensor *v)
{
    int64_t want = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->stride[d] != want) return 0;
        want *= v->shape[d];
    }
    return 1;
}

/* Copy between a strided view and a C-order buffer (to_dense: view -> buf). */
static void view_copy(const interp_tensor *v, char *buf, int to_dense)
{
    size_t es = tsl_dtype_size(v->dtype);
    int64_t n = 1, idx[TSL_MAX_RANK] = {0};
    for (int d = 0; d < v->rank; d++) n *= v->shape[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < v->rank; d++) off += idx[d] * v->stride[d];
        char *src = v->base + off * (int64_t)es;
        if (to_dense) memcpy(buf + (size_t)i * es, src, es);
        else memcpy(src, buf + (size_t)i * es, es);
        for (int d = v->rank - 1; d >= 0; d--) {
            if (++idx[d] < v->shape[d]) break;
            idx[d] = 0;
        }
    }
}

/* Per def tensor: what the run owns. */
typedef struct run_buf {
    char *host; /* a dense host copy of a strided view (host-memory targets) */
    rt_ptr dev; /* a device buffer (device targets) */
    size_t bytes;
} run_buf;

/* Move a tensor between host view v and device buffer ptr. */
static tsl_status transfer(const rt_target *rt, void *dev, const interp_tensor *v, rt_ptr ptr, size_t bytes,
                           int to_device, const char *name, tsl_diag *d)
{
    if (!bytes) return TSL_OK;
    rt_copy_kind kind = to_device ? RT_COPY_HTOD : RT_COPY_DTOH;
    char *tmp = NULL;
    if (!view_dense(v) && !(tmp = malloc(bytes))) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory for a dense copy of '%s' (%zu bytes)", name, bytes);
        return TSL_ERR_NOMEM;
    }
    rt_ptr host = (rt_ptr)(uintptr_t)(tmp ? tmp : v->base);
    if (tmp && to_device) view_copy(v, tmp, 1);
    tsl_status st = to_device ? rt->copy(dev, ptr, host, bytes, kind, d) : rt->copy(dev, host, ptr, bytes, kind, d);
    if (!st && tmp && !to_device) view_copy(v, tmp, 0);
    free(tmp);
    return st;
}

tsl_status drv_run(rt_exec *e, const lang_bound *b, const interp_tensor *views, tsl_diag *d)
{
    const rt_target *rt = rt_exec_target(e);
    void *dev = rt_exec_device(e);
    const lang_def *def = b->def;
    int n = def->ntensors;
    run_env v;
    tsl_status st = run_env_make(b, &v, d);
    if (st) return st;
    run_buf bufs_here[RUN_STACK] = {{0}};
    run_buf *bufs = n <= RUN_STACK ? bufs_here : calloc((size_t)n + 1, sizeof *bufs);
    if (!bufs) {
        run_env_free(&v);
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    for (int i = 0; !st && i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar) {
            v.words[i] = scalar_word(t->dtype, views[i].scalar);
            continue;
        }
        if (t->flags & LANG_TENSOR_TEMP) continue;
        run_buf *rb = &bufs[i];
        /* a low-bit tensor: packed (a pure input, compact) or its carrier (api/args.c) */
        int64_t ne = 1;
        for (int k = 0; k < t->rank; k++) ne *= b->shapes[i][k];
        rb->bytes = tsl_dtype_nbytes(views[i].dtype, ne);
        if (rt->host_memory) {
            v.data[i] = (rt_ptr)(uintptr_t)views[i].base;
            if (!view_dense(&views[i])) {
                if (!(rb->host = calloc(rb->bytes ? rb->bytes : 1, 1))) {
                    diag_error(d, TSL_ERR_NOMEM, "out of memory for a dense copy of '%s' (%zu bytes)", t->name,
                               rb->bytes);
                    st = TSL_ERR_NOMEM;
                    break;
                }
                view_copy(&views[i], rb->host, 1);
                v.data[i] = (rt_ptr)(uintptr_t)rb->host;
            }
        } else if (rb->bytes) {
            st = rt->alloc(dev, rb->bytes, &rb->dev, d);
            if (st) diag_error(d, st, "device memory for '%s' (%zu bytes)", t->name, rb->bytes);
            if (!st) st = transfer(rt, dev, &views[i], rb->dev, rb->bytes, 1, t->name, d);
            v.data[i] = rb->dev;
        }
    }
    if (!st) st = rt_exec_run(e, &v.r, 1, d);
    for (int i = 0; !st && i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || !(t->flags & LANG_TENSOR_OUTPUT)) continue;
        if (bufs[i].host) view_copy(&views[i], bufs[i].host, 0);
        else if (bufs[i].dev) st = transfer(rt, dev, &views[i], bufs[i].dev, bufs[i].bytes, 0, t->name, d);
    }
    for (int i = 0; i < n; i++) {
        free(bufs[i].host);
        if (bufs[i].dev) rt->free(dev, bufs[i].dev);
    }
    if (bufs != bufs_here) free(bufs);
    run_env_free(&v);
    return st;
}

tsl_status drv_plan_run(const lang_def *def, const struct sched_plan *sp, const lang_bound *b, const interp_tensor *views,
                        const drv_target *t, void *dev, tsl_diag *d)
{
    drv_prepared *p = NULL;
    tsl_status st = drv_prepare_plan(def, sp, t, dev, &p, d);
    if (!st) st = drv_run(p->e, b, views, d);
    drv_prepared_free(p);
    return st;
}

/* ---- one tile kernel ------------------------------------------------------------------------- */

static const tile_interp_arg *find_arg(const tile_interp_arg *args, int nargs, const char *name)
{
    for (int i = 0; i < nargs; i++)
        if (args[i].name && !strcmp(args[i].name, name)) return &args[i];
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Time `reps` more runs of e (the device's events; the monotonic clock on
 * the CPU): their median in *ms. */
static tsl_status time_runs(rt_exec *e, const rt_run *r, int reps, double *ms, tsl_diag *d)
{
    const rt_target *rt = rt_exec_target(e);
    void *dev = rt_exec_device(e), *e0 = NULL, *e1 = NULL;
    double *t = calloc((size_t)reps + 1, sizeof *t);
    tsl_status st = t ? rt->event_create(dev, &e0, d) : TSL_ERR_NOMEM;
    if (!st) st = rt->event_create(dev, &e1, d);
    for (int i = 0; !st && i < reps; i++) {
        st = rt->event_record(dev, e0, d);
        if (!st) st = rt_exec_run(e, r, 0, d);
        if (!st) st = rt->event_record(dev, e1, d);
        if (!st) st = rt->event_elapsed(dev, e0, e1, &t[i], d);
    }
    if (!st) {
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        *ms = t[reps / 2];
    }
    if (e0) rt->event_destroy(dev, e0);
    if (e1) rt->event_destroy(dev, e1);
    free(t);
    return st;
}

tsl_status drv_kernel_run(const drv_target *t, const tile_module *m, const tile_kernel *k,
                          const tile_interp_arg *args, int nargs, drv_kernel_opts *o, tsl_diag *d)
{
    const rt_target *rt = t->rt;
    if (k->nparams > RT_MAX_PARAMS) {
        diag_error(d, TSL_ERR_UNAVAILABLE, "kernel '%s': more than %d parameters", k->name, RT_MAX_PARAMS);
        return TSL_ERR_UNAVAILABLE;
    }
    int np = k->nparams;
    rt_ptr data[RT_MAX_PARAMS + 1] = {0}, devp[RT_MAX_PARAMS + 1] = {0};
    int64_t words[RT_MAX_PARAMS + 1] = {0}, strides[RT_MAX_PARAMS + 1][RT_MAX_RANK];
    const int64_t *shapes[RT_MAX_PARAMS + 1] = {0}, *sv[RT_MAX_PARAMS + 1] = {0};
    size_t span[RT_MAX_PARAMS + 1] = {0};
    tsl_status st = TSL_OK;
    /* bind by name, checking what the kernel declares */
    for (int q = 0; q < np && !st; q++) {
        const tile_value *v = k->params[q];
        const tile_interp_arg *a = find_arg(args, nargs, v->name);
        if (!a) {
            diag_error(d, TSL_ERR_ARG, "kernel '%s': parameter '%s' is not bound", k->name, v->name);
            st = TSL_ERR_ARG;
            break;
        }
        if (v->kind == TILE_V_SCALAR) {
            words[q] = a->ival; /* a float's ival holds its double's bits */
            continue;
        }
        const DLTensor *dl = a->t;
        tsl_dtype have, want;
        char nb[16];
        if (!dl) {
            diag_error(d, TSL_ERR_ARG, "parameter '%s' needs a tensor", v->name);
            st = TSL_ERR_ARG;
        } else if (tsl_dtype_from_dlpack(dl->dtype, &have) || tile_dtype_to_tsl(v->type.dt, &want) || have != want) {
            diag_error(d, TSL_ERR_SHAPE, "tensor '%s' should be %s", v->name, tile_dtype_name(v->type.dt, nb));
            st = TSL_ERR_SHAPE;
        } else if (dl->device.device_type != kDLCPU) {
            diag_error(d, TSL_ERR_ARG, "tensor '%s' is not in host memory", v->name);
            st = TSL_ERR_ARG;
        } else if (dl->ndim != v->type.rank || dl->ndim > RT_MAX_RANK) {
            diag_error(d, TSL_ERR_SHAPE, "tensor '%s' has rank %d; expected %d", v->name, dl->ndim, v->type.rank);
            st = TSL_ERR_SHAPE;
        }
        if (st) break;
        int64_t acc = 1, reach = 1, zero = 0;
        for (int i = dl->ndim - 1; i >= 0; i--) {
            strides[q][i] = dl->strides ? dl->strides[i] : acc;
            if (strides[q][i] < 0) {
                diag_error(d, TSL_ERR_ARG, "tensor '%s' has a negative stride", v->name);
                st = TSL_ERR_ARG;
            }
            if (dl->shape[i] == 0) zero = 1;
            reach += (dl->shape[i] - 1) * strides[q][i];
            acc *= dl->shape[i];
        }
        span[q] = zero ? 0 : (size_t)reach * tsl_dtype_size(want);
        shapes[q] = dl->shape;
        sv[q] = strides[q];
        data[q] = (rt_ptr)(uintptr_t)((char *)dl->data + dl->byte_offset);
    }
    /* the device, the executable, the executor */
    rt_cuda_device *cdev = NULL;
    void *dev = NULL;
    if (!st && t->id == TSL_TARGET_CUDA) {
        st = rt_cuda_open(&cdev, d);
        dev = cdev;
    }
    drv_executable *x = NULL;
    rt_exec *e = NULL;
    if (!st) st = drv_compile_kernel(m, k, t, rt->arch(dev), NULL, &x, d);
    if (!st) st = rt_exec_create(x->plan, rt, dev, &e, d);
    if (!st && o) rt_exec_force_wide(e, o->force_wide);
    for (int q = 0; !st && !rt->host_memory && q < np; q++) {
        if (!span[q]) continue;
        st = rt->alloc(dev, span[q], &devp[q], d);
        if (!st) st = rt->copy(dev, devp[q], data[q], span[q], RT_COPY_HTOD, d);
    }
    rt_run r = {.data = rt->host_memory ? data : devp, .shape = shapes, .strides = sv, .words = words};
    if (!st) st = rt_exec_run(e, &r, 1, d);
    if (!st && o) o->used_wide = rt_exec_variant(e, 0) > 0 && (rt_exec_variant(e, 0) & 1);
    /* the tensors the kernel writes, back */
    if (!st && !rt->host_memory) {
        const tile_value *outs[RT_MAX_PARAMS];
        int no = tile_interp_outputs(k, outs, RT_MAX_PARAMS);
        for (int q = 0; !st && q < np; q++) {
            int written = 0;
            for (int i = 0; i < no; i++) written |= outs[i] == k->params[q];
            if (written && span[q]) st = rt->copy(dev, data[q], devp[q], span[q], RT_COPY_DTOH, d);
        }
    }
    if (o) o->median_ms = 0;
    if (!st && o && o->reps > 0 && rt_exec_launches_run(e) > 0) st = time_runs(e, &r, o->reps, &o->median_ms, d);
    for (int q = 0; q < np; q++)
        if (devp[q]) rt->free(dev, devp[q]);
    rt_exec_free(e);
    drv_executable_free(x);
    rt_cuda_close(cdev);
    return st;
}
