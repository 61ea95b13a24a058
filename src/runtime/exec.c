/* exec.c — the one executor: runs an rt_plan (plan.h) on any rt_target.
 *
 * Requires a plan whose indices are in range (the driver builds them;
 * rt_plan_read checks a cached one). Guarantees, for every target alike:
 * launches run in plan order; a launch whose statement has no lanes or
 * whose grid has a zero dim runs nothing; each launch's arguments are
 * bound once, here — tensors by the plan's mapping (flat ones as 1-D of
 * all their elements, C-order strides unless the run gives strides),
 * scalars as words (a double's bits for float dtypes), sizes as ints —
 * the kernel's size symbols bound from argument dims and every dim checked
 * against the kernel's declaration; temporaries some launch takes live on
 * the device, grown when sizes grow and zeroed per run (as the reference
 * interpreter has them). On a target with index variants the 32-bit
 * variant runs unless an extent, stride, span or int argument passes 2^30,
 * and each size branch's arm is chosen from the sizes; a variant is
 * compiled and loaded the first time a launch needs it. The plan's scratch
 * buffers are allocated once, their contents undefined at a run's start
 * (a run given memory, rt_run.mem, takes its temporaries and scratch from
 * it instead and returns them once its launches are queued);
 * a units argument is the device's multiprocessor count. A launch with a
 * guard (`when`, over the program's sizes) runs only where it holds.
 *
 * What binding a launch finds (whether it runs, its variant, extents,
 * strides, words, grid) depends on the run's sizes, shapes, scalar words
 * and lanes and on nothing else but addresses: a plan of up to
 * EX_MEMO_LAUNCHES launches keeps each launch's binding, and the next run
 * with the same sizes, shapes, words and lanes (and no strides given)
 * only writes its addresses into it (a cached call of a small def then
 * evaluates no expression: ~900 of its ~4,800 host instructions). */
#include <string.h>

#include "runtime/plan.h"

static const int64_t EX_I32_LIMIT = (int64_t)1 << 30;
/* the largest grid dimension (CUDA's x limit; tile.h's TILE_MAX_GRID) */
static const int64_t EX_MAX_GRID = INT32_MAX;

typedef struct ex_variant {
    unsigned key;
    void *module, *fn;
    rt_binary bin; /* data owned when `owned` */
    int owned;
} ex_variant;

/* One launch as the last full binding left it (ex_memo_same says when a
 * run may reuse it). */
enum { EX_MEMO_LAUNCHES = 16 };
enum { EX_L_OFF, EX_L_SKIP, EX_L_RUN }; /* not run (no lanes, guard false); empty grid; launched */

typedef struct ex_memo_launch {
    int state;
    unsigned key; /* its variant */
    void *fn;
} ex_memo_launch;

typedef struct ex_kernel {
    ex_variant *v;
    int n, cap;
    int units;    /* a cluster kernel's resident blocks (t->cluster_units); 0 not asked yet */
} ex_kernel;

struct rt_exec {
    const rt_plan *p;
    const rt_target *t;
    void *dev;
    ex_kernel *k;      /* [nkernels] */
    rt_ptr err;        /* [nlaunches][RT_ERR_WORDS] u64 (fault_records targets) */
    rt_ptr *temp;      /* [ntensors] */
    rt_ptr *scratch;   /* [nscratch] */
    size_t *temp_cap;  /* [ntensors] */
    rt_ptr *run_temp, *run_scratch; /* [ntensors], [nscratch]: a run's own, from rt_run.mem */
    rt_ptr *cur_temp, *cur_scratch; /* what the run binds: the kept ones or its own */
    int *last_variant; /* [nlaunches] */
    int last_launches;
    int force_wide;
    int threads;
    rt_bound *b; /* scratch */
    /* the kept bindings: memo[nlaunches] (NULL for a larger plan) and what
     * they were made for, memo_key[nmemo_key] (ex_memo_gather), beside
     * the key of the run at hand (memo_now) */
    ex_memo_launch *memo;
    rt_bound *memo_b; /* [nlaunches]: each launch's arguments; the addresses rewritten per run */
    int64_t *memo_key, *memo_now;
    int nmemo_key;
    int memo_valid;
};

static tsl_status ex_nomem(tsl_diag *d)
{
    diag_error(d, TSL_ERR_NOMEM, "out of memory");
    return TSL_ERR_NOMEM;
}

static size_t ex_scratch_bytes(const rt_scratch *s)
{
    return (size_t)s->count * tsl_dtype_size((tsl_dtype)s->dtype) + 8;
}

/* The variant `key` of kernel ki: loaded already, or from a binary the
 * plan carries, or compiled now. */
static tsl_status ex_variant_get(rt_exec *x, int ki, unsigned key, void **fn, tsl_diag *d)
{
    ex_kernel *ek = &x->k[ki];
    const rt_kernel *k = &x->p->kernels[ki];
    for (int i = 0; i < ek->n; i++)
        if (ek->v[i].key == key) {
            *fn = ek->v[i].fn;
            return TSL_OK;
        }
    if (ek->n == ek->cap) {
        int cap = ek->cap ? 2 * ek->cap : 2;
        ex_variant *v = realloc(ek->v, sizeof *v * (size_t)cap);
        if (!v) return ex_nomem(d);
        ek->v = v;
        ek->cap = cap;
    }
    ex_variant v = {.key = key};
    for (int i = 0; i < k->nbins && !v.bin.data; i++)
        if (k->bins[i].variant == key) v.bin = k->bins[i];
    tsl_status st = TSL_OK;
    if (!v.bin.data) {
        st = x->t->compile(x->t->arch(x->dev), k, key, &v.bin.data, &v.bin.size, d);
        v.bin.variant = key;
        v.owned = 1;
    }
    if (!st) st = x->t->load(x->dev, k, key, v.bin.data, v.bin.size, &v.module, &v.fn, d);
    if (st) {
        if (v.owned) free(v.bin.data);
        return st;
    }
    ek->v[ek->n++] = v;
    *fn = v.fn;
    return TSL_OK;
}

tsl_status rt_exec_create(const rt_plan *p, const rt_target *t, void *dev, rt_exec **out, tsl_diag *d)
{
    *out = NULL;
    rt_exec *x = calloc(1, sizeof *x);
    if (x) {
        x->p = p;
        x->t = t;
        x->dev = dev;
        x->k = calloc((size_t)p->nkernels + 1, sizeof *x->k);
        x->temp = calloc((size_t)p->ntensors + 1, sizeof *x->temp);
        x->temp_cap = calloc((size_t)p->ntensors + 1, sizeof *x->temp_cap);
        x->last_variant = calloc((size_t)p->nlaunches + 1, sizeof *x->last_variant);
        x->b = calloc(1, sizeof *x->b);
        x->scratch = calloc((size_t)p->nscratch + 1, sizeof *x->scratch);
        x->run_temp = calloc((size_t)p->ntensors + 1, sizeof *x->run_temp);
        x->run_scratch = calloc((size_t)p->nscratch + 1, sizeof *x->run_scratch);
    }
    int memo = x && p->nlaunches > 0 && p->nlaunches <= EX_MEMO_LAUNCHES;
    if (memo) {
        int nk = 2 + p->nsizes + p->nstmts; /* ex_memo_gather's */
        for (int i = 0; i < p->ntensors; i++) nk += (p->tensors[i].flags & RT_T_SCALAR) ? 1 : p->tensors[i].rank;
        x->memo = calloc((size_t)p->nlaunches, sizeof *x->memo);
        x->memo_b = calloc((size_t)p->nlaunches, sizeof *x->memo_b);
        x->memo_key = calloc((size_t)nk, sizeof *x->memo_key);
        x->memo_now = calloc((size_t)nk, sizeof *x->memo_now);
        x->nmemo_key = nk;
    }
    if (!x || !x->k || !x->temp || !x->temp_cap || !x->last_variant || !x->b || !x->scratch || !x->run_temp ||
        !x->run_scratch || (memo && (!x->memo || !x->memo_b || !x->memo_key || !x->memo_now))) {
        rt_exec_free(x);
        return ex_nomem(d);
    }
    tsl_status st = TSL_OK;
    for (int ki = 0; !st && ki < p->nkernels; ki++) {
        const rt_kernel *k = &p->kernels[ki];
        void *fn;
        for (int i = 0; !st && i < k->nbins; i++) st = ex_variant_get(x, ki, k->bins[i].variant, &fn, d);
        /* the plain variant (no size branches, 32-bit index): the one most runs take */
        if (!st && k->nbranches == 0) st = ex_variant_get(x, ki, 0, &fn, d);
    }
    if (!st && t->fault_records && p->nlaunches)
        st = t->alloc(dev, (size_t)p->nlaunches * RT_ERR_WORDS * 8, &x->err, d);
    for (int i = 0; !st && i < p->nscratch; i++)
        st = t->alloc(dev, ex_scratch_bytes(&p->scratch[i]), &x->scratch[i], d);
    if (st) {
        rt_exec_free(x);
        return st;
    }
    *out = x;
    return TSL_OK;
}

void rt_exec_free(rt_exec *x)
{
    if (!x) return;
    for (int ki = 0; x->k && ki < x->p->nkernels; ki++) {
        for (int i = 0; i < x->k[ki].n; i++) {
            x->t->unload(x->k[ki].v[i].module);
            if (x->k[ki].v[i].owned) free(x->k[ki].v[i].bin.data);
        }
        free(x->k[ki].v);
    }
    for (int i = 0; x->temp && i < x->p->ntensors; i++)
        if (x->temp[i]) x->t->free(x->dev, x->temp[i]);
    if (x->err) x->t->free(x->dev, x->err);
    for (int i = 0; x->scratch && i < x->p->nscratch; i++)
        if (x->scratch[i]) x->t->free(x->dev, x->scratch[i]);
    free(x->scratch);
    free(x->run_temp);
    free(x->run_scratch);
    free(x->k);
    free(x->temp);
    free(x->temp_cap);
    free(x->last_variant);
    free(x->b);
    free(x->memo);
    free(x->memo_b);
    free(x->memo_key);
    free(x->memo_now);
    free(x);
}

int rt_exec_launches_run(const rt_exec *x) { return x ? x->last_launches : 0; }
int rt_exec_variant(const rt_exec *x, int launch) { return x->last_variant[launch]; }
void rt_exec_force_wide(rt_exec *x, int on) { x->force_wide = on; } /* (part of the memo's key) */
void rt_exec_set_threads(rt_exec *x, int threads) { x->threads = threads; }
int rt_exec_nbinaries(const rt_exec *x, int k) { return x->k[k].n; }
const rt_binary *rt_exec_binary(const rt_exec *x, int k, int i) { return &x->k[k].v[i].bin; }
const rt_target *rt_exec_target(const rt_exec *x) { return x->t; }
void *rt_exec_device(const rt_exec *x) { return x->dev; }

static int64_t ex_numel(const rt_tensor *t, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= shape[i];
    return n;
}

/* Whether temporary t is taken by a launch that runs under r's sizes (its
 * guard holds, its box is not empty). A merged chain's plan keeps the
 * layers' activations on chip while the layers' kernels, which take them,
 * run only under the other sizes: zeroing 19 unused 2 MB temporaries per
 * run would cost a 20-layer MLP a third of its time. A guard that does not
 * evaluate counts as taking it (the launch loop reports the error). */
static int ex_temp_needed(const rt_plan *p, const rt_run *r, int t)
{
    for (int i = 0; i < p->nlaunches; i++) {
        const rt_launch *l = &p->launches[i];
        const rt_kernel *k = &p->kernels[l->kernel];
        int takes = 0;
        for (int j = 0; j < k->nparams && !takes; j++)
            takes = k->params[j].is_tensor && l->args[j].kind == RT_ARG_TENSOR && l->args[j].index == t;
        if (!takes || (r->lanes && r->lanes[l->stmt] == 0)) continue;
        int ok = 1;
        if (!l->when.n || rt_expr_eval(&l->when, r->sizes, p->nsizes, &ok) || !ok) return 1;
    }
    return 0;
}

/* A run's own temporaries and scratch from mem (the temporaries zeroed):
 * nothing is shared with a run on another stream. */
static tsl_status ex_mem_take(rt_exec *x, const rt_run *r, tsl_diag *d)
{
    const rt_plan *p = x->p;
    const rt_mem *m = r->mem;
    for (int i = 0; i < p->ntensors; i++) {
        const rt_tensor *t = &p->tensors[i];
        if (!(t->flags & RT_T_TEMP) || !ex_temp_needed(p, r, i)) continue;
        size_t bytes = (size_t)ex_numel(t, r->shape[i]) * tsl_dtype_size((tsl_dtype)t->dtype);
        if (!(x->run_temp[i] = m->alloc(m->user, bytes ? bytes : 1))) {
            diag_error(d, TSL_ERR_NOMEM, "device memory for the temporary '%s' (%zu bytes): the allocator failed",
                       t->name, bytes);
            return TSL_ERR_NOMEM;
        }
        tsl_status st = bytes ? x->t->memset(x->dev, x->run_temp[i], 0, bytes, d) : TSL_OK;
        if (st) return st;
    }
    for (int i = 0; i < p->nscratch; i++) {
        size_t bytes = ex_scratch_bytes(&p->scratch[i]);
        if (!(x->run_scratch[i] = m->alloc(m->user, bytes))) {
            diag_error(d, TSL_ERR_NOMEM, "device memory for scratch buffer %d (%zu bytes): the allocator failed", i,
                       bytes);
            return TSL_ERR_NOMEM;
        }
    }
    return TSL_OK;
}

static void ex_mem_return(rt_exec *x, const rt_mem *m)
{
    for (int i = 0; i < x->p->ntensors; i++) {
        if (x->run_temp[i]) m->free(m->user, x->run_temp[i]);
        x->run_temp[i] = 0;
    }
    for (int i = 0; i < x->p->nscratch; i++) {
        if (x->run_scratch[i]) m->free(m->user, x->run_scratch[i]);
        x->run_scratch[i] = 0;
    }
}

/* Device storage for every temporary a launch that runs takes, zeroed.
 * Those a fused kernel keeps in registers get none: zeroing them cost a
 * quarter of softmax's kernel time on an H200. */
static tsl_status ex_temps(rt_exec *x, const rt_run *r, tsl_diag *d)
{
    const rt_plan *p = x->p;
    for (int i = 0; i < p->ntensors; i++) {
        const rt_tensor *t = &p->tensors[i];
        if (!(t->flags & RT_T_TEMP) || !ex_temp_needed(p, r, i)) continue;
        size_t bytes = (size_t)ex_numel(t, r->shape[i]) * tsl_dtype_size((tsl_dtype)t->dtype);
        if (bytes > x->temp_cap[i]) {
            if (x->temp[i]) x->t->free(x->dev, x->temp[i]);
            x->temp[i] = 0;
            x->temp_cap[i] = 0;
            tsl_status st = x->t->alloc(x->dev, bytes, &x->temp[i], d);
            if (st) {
                diag_error(d, st, "device memory for the temporary '%s' (%zu bytes)", t->name, bytes);
                return st;
            }
            x->temp_cap[i] = bytes;
        }
        if (bytes) {
            tsl_status st = x->t->memset(x->dev, x->temp[i], 0, bytes, d);
            if (st) return st;
        }
    }
    return TSL_OK;
}

/* The units argument of kernel ki: the device's, or for a cluster kernel
 * the blocks that can be resident in clusters (asked once, of its first
 * variant: the variants differ in index width only). */
static tsl_status ex_units(rt_exec *x, int ki, int64_t *out, tsl_diag *d)
{
    const rt_kernel *k = &x->p->kernels[ki];
    ex_kernel *ek = &x->k[ki];
    if (k->cluster < 2 || !x->t->cluster_units) {
        *out = x->t->units(x->dev);
        return TSL_OK;
    }
    if (!ek->units) {
        void *fn = NULL;
        tsl_status st = ex_variant_get(x, ki, 0, &fn, d);
        if (st) return st;
        ek->units = x->t->cluster_units(x->dev, fn, k);
    }
    *out = ek->units;
    return TSL_OK;
}

/* Bind launch li's arguments into b and pick its variant. *skip: the
 * grid is empty. */
static tsl_status ex_bind(rt_exec *x, int li, const rt_run *r, rt_bound *b, unsigned *key, int *skip, tsl_diag *d)
{
    const rt_plan *p = x->p;
    const rt_launch *l = &p->launches[li];
    const rt_kernel *k = &p->kernels[l->kernel];
    int64_t vals[2 * RT_MAX_PARAMS];
    int nv = k->nsyms + k->nparams, need64 = x->force_wide;
    memset(vals, 0, sizeof *vals * (size_t)nv); /* per launch: only what the expressions read */
    b->k = k;
    b->threads = x->threads;
    *skip = 0;
    for (int q = 0; q < k->nparams; q++) {
        const rt_param *pa = &k->params[q];
        const rt_arg *a = &l->args[q];
        if (!pa->is_tensor) {
            int64_t w = a->kind == RT_ARG_SIZE ? r->sizes[a->index] : r->words[a->index];
            if (a->kind == RT_ARG_UNITS) {
                tsl_status st = ex_units(x, l->kernel, &w, d);
                if (st) return st;
            }
            b->word[q] = w;
            vals[k->nsyms + q] = w;
            if (!pa->is_float && (w > EX_I32_LIMIT || w < -EX_I32_LIMIT)) need64 = 1;
            continue;
        }
        if (a->kind == RT_ARG_SCRATCH) {
            b->ptr[q] = x->cur_scratch[a->index];
            b->shape[q][0] = p->scratch[a->index].count;
            b->stride[q][0] = 1;
            continue;
        }
        const rt_tensor *t = &p->tensors[a->index];
        b->ptr[q] = (t->flags & RT_T_TEMP) ? x->cur_temp[a->index] : r->data[a->index];
        const int64_t *sh = r->shape[a->index];
        const int64_t *sd = r->strides ? r->strides[a->index] : NULL;
        if (a->flat) {
            b->shape[q][0] = ex_numel(t, sh);
            b->stride[q][0] = 1;
        } else if (a->bytes || a->rows.n) {
            /* packed storage as bytes (compact C order), dim 0 maybe cut */
            int64_t acc = 1;
            for (int i = t->rank - 1; i >= 0; i--) {
                b->shape[q][i] = sh[i];
                if (a->bytes && i == t->rank - 1) b->shape[q][i] = sh[i] * tsl_dtype_bits((tsl_dtype)t->dtype) / 8;
                b->stride[q][i] = a->bytes || !sd ? acc : sd[i];
                acc *= b->shape[q][i];
            }
            if (a->rows.n && t->rank) {
                int ok = 1;
                int64_t hi = rt_expr_eval(&a->rows, r->sizes, p->nsizes, &ok);
                if (!ok) {
                    diag_error(d, TSL_ERR_INTERNAL, "kernel '%s': the rows of '%s' do not evaluate", k->name, t->name);
                    return TSL_ERR_INTERNAL;
                }
                if (hi < b->shape[q][0]) b->shape[q][0] = hi < 0 ? 0 : hi;
            }
        } else {
            int64_t acc = 1;
            for (int i = t->rank - 1; i >= 0; i--) {
                b->shape[q][i] = sh[i];
                b->stride[q][i] = sd ? sd[i] : acc;
                acc *= sh[i];
            }
        }
        int64_t span = 1, zero = 0;
        for (int i = 0; i < pa->rank; i++) {
            int64_t e = b->shape[q][i], s = b->stride[q][i];
            if (e > EX_I32_LIMIT || s > EX_I32_LIMIT) need64 = 1;
            if (e == 0) zero = 1;
            span += (e > 0 ? e - 1 : 0) * s;
        }
        if (!zero && span > EX_I32_LIMIT) need64 = 1;
    }
    for (int s = 0; s < k->nsyms; s++) {
        vals[s] = b->shape[k->sym_param[s]][k->sym_dim[s]];
        b->syms[s] = vals[s];
        if (vals[s] > EX_I32_LIMIT) need64 = 1;
    }
    for (int q = 0; q < k->nparams; q++) {
        const rt_param *pa = &k->params[q];
        for (int i = 0; pa->is_tensor && i < pa->rank; i++) {
            int ok = 1;
            int64_t want = rt_expr_eval(&pa->dims[i], vals, nv, &ok);
            if (!ok || want != b->shape[q][i]) {
                diag_error(d, TSL_ERR_SHAPE, "kernel '%s': tensor '%s' dim %d is %lld; the kernel says %lld", k->name,
                           pa->name, i, (long long)b->shape[q][i], (long long)want);
                return TSL_ERR_SHAPE;
            }
        }
    }
    for (int i = 0; i < 3; i++) {
        int ok = 1;
        int64_t g = i < k->ngrid ? rt_expr_eval(&k->grid[i], vals, nv, &ok) : 1;
        if (!ok) {
            diag_error(d, TSL_ERR_RUNTIME, "kernel '%s': grid dimension %d cannot be evaluated", k->name, i);
            return TSL_ERR_RUNTIME;
        }
        if (g < 0 || g > EX_MAX_GRID) { /* docs/tile-ir.md: a grid dim is 0..2^31-1 */
            diag_error(d, TSL_ERR_SHAPE, "kernel '%s': grid dimension %d is %lld; it must be 0..%lld", k->name, i,
                       (long long)g, (long long)EX_MAX_GRID);
            return TSL_ERR_SHAPE;
        }
        if (g == 0) *skip = 1;
        b->grid[i] = g;
    }
    *key = 0;
    if (!x->t->index_variants) return TSL_OK;
    *key = (unsigned)need64;
    for (int i = 0; i < k->nbranches; i++) {
        int ok = 1;
        int64_t c = rt_expr_eval(&k->branches[i], vals, nv, &ok);
        if (!ok) {
            diag_error(d, TSL_ERR_INTERNAL, "kernel '%s': a size branch does not evaluate", k->name);
            return TSL_ERR_INTERNAL;
        }
        if (c) *key |= 1u << (i + 1);
    }
    return TSL_OK;
}

/* A fault a CPU launch reported, in the kernel's words. */
static tsl_status ex_fault(const rt_bound *b, const rt_fault *f, tsl_diag *d)
{
    const rt_kernel *k = b->k;
    if (f->code <= 0 || f->code > k->nerrs) {
        diag_error(d, TSL_ERR_NOMEM, "kernel '%s': out of memory for a block's workspace", k->name);
        return TSL_ERR_NOMEM;
    }
    const rt_kerr *e = &k->errs[f->code - 1];
    char msg[1024];
    if (e->info) {
        /* the message is the generator's: a format with two %lld */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(msg, sizeof msg, e->msg, (long long)f->info[0], (long long)f->info[1]);
#pragma GCC diagnostic pop
    } else {
        snprintf(msg, sizeof msg, "%s", e->msg);
    }
    int64_t gx = b->grid[0] > 0 ? b->grid[0] : 1, gy = b->grid[1] > 0 ? b->grid[1] : 1, bl = f->block;
    diag_error(d, (tsl_status)e->st, "kernel '%s': %s%s (block %lld,%lld,%lld)", k->name, msg, e->where,
               (long long)(bl % gx), (long long)(bl / gx % gy), (long long)(bl / (gx * gy)));
    return (tsl_status)e->st;
}

/* After a checked run on a fault-record target: the first launch whose
 * record says an index was out of range. */
static tsl_status ex_check_records(rt_exec *x, const rt_run *r, tsl_diag *d)
{
    const rt_plan *p = x->p;
    int nl = p->nlaunches;
    uint64_t *rec = calloc((size_t)nl * RT_ERR_WORDS + 1, sizeof *rec);
    if (!rec) return ex_nomem(d);
    tsl_status st = x->t->copy(x->dev, (rt_ptr)(uintptr_t)rec, x->err, (size_t)nl * RT_ERR_WORDS * 8, RT_COPY_DTOH, d);
    for (int li = 0; !st && li < nl; li++) {
        const uint64_t *w = &rec[li * RT_ERR_WORDS];
        if (!w[0]) continue;
        const rt_launch *l = &p->launches[li];
        const rt_kernel *k = &p->kernels[l->kernel];
        const rt_arg *a = w[1] < (uint64_t)k->nparams ? &l->args[w[1]] : NULL;
        const rt_tensor *t = a && a->kind == RT_ARG_TENSOR ? &p->tensors[a->index] : NULL;
        int dim = (int)w[2];
        long long extent = -1;
        if (t) extent = a->flat ? (long long)ex_numel(t, r->shape[a->index])
                        : dim >= 0 && dim < t->rank ? (long long)r->shape[a->index][dim] : -1;
        diag_error(d, TSL_ERR_BOUNDS,
                   "kernel '%s': index %lld out of range for dimension %d of '%s' (size %lld) "
                   "(thread %llu, block %llu,%llu,%llu)",
                   k->name, (long long)w[3], dim, t ? t->name : "?", extent, (unsigned long long)w[4],
                   (unsigned long long)w[5], (unsigned long long)w[6], (unsigned long long)w[7]);
        st = TSL_ERR_BOUNDS;
    }
    free(rec);
    return st;
}

/* A kept binding of launch li with this run's addresses (what ex_bind
 * writes into b->ptr, nothing else). */
static void ex_bind_addresses(rt_exec *x, int li, const rt_run *r, rt_bound *b)
{
    const rt_launch *l = &x->p->launches[li];
    const rt_kernel *k = &x->p->kernels[l->kernel];
    for (int q = 0; q < k->nparams; q++) {
        const rt_arg *a = &l->args[q];
        if (!k->params[q].is_tensor) continue;
        if (a->kind == RT_ARG_SCRATCH) b->ptr[q] = x->cur_scratch[a->index];
        else b->ptr[q] = (x->p->tensors[a->index].flags & RT_T_TEMP) ? x->cur_temp[a->index] : r->data[a->index];
    }
    b->threads = x->threads;
}

/* What the kept bindings depend on besides addresses, into k (the key):
 * force_wide, whether lanes were given, the sizes, each scalar's word and
 * each tensor's shape, the lanes. Gives its length. */
static int ex_memo_gather(const rt_exec *x, const rt_run *r, int64_t *k)
{
    const rt_plan *p = x->p;
    int n = 0;
    k[n++] = x->force_wide;
    k[n++] = r->lanes != NULL;
    for (int i = 0; i < p->nsizes; i++) k[n++] = r->sizes[i];
    for (int i = 0; i < p->ntensors; i++) {
        const rt_tensor *t = &p->tensors[i];
        const int64_t *sh = r->shape[i];
        if (t->flags & RT_T_SCALAR) k[n++] = r->words ? r->words[i] : 0;
        else
            for (int j = 0; j < t->rank; j++) k[n++] = sh[j];
    }
    for (int i = 0; r->lanes && i < p->nstmts; i++) k[n++] = r->lanes[i];
    TSL_ASSERT(n <= x->nmemo_key);
    return n;
}

tsl_status rt_exec_run(rt_exec *x, const rt_run *r, int check, tsl_diag *d)
{
    const rt_plan *p = x->p;
    x->last_launches = 0;
    x->cur_temp = r->mem ? x->run_temp : x->temp;
    x->cur_scratch = r->mem ? x->run_scratch : x->scratch;
    tsl_status st = r->mem ? ex_mem_take(x, r, d) : ex_temps(x, r, d);
    int records = x->t->fault_records && p->nlaunches;
    if (!st && check && records)
        st = x->t->memset(x->dev, x->err, 0, (size_t)p->nlaunches * RT_ERR_WORDS * 8, d);
    /* the kept bindings when this run is what they were made for (the
     * sizes need a run of its own: r->sizes NULL is a kernel's run) */
    int keep = x->memo && r->sizes && !r->strides, nkey = 0;
    if (keep) nkey = ex_memo_gather(x, r, x->memo_now);
    int kept = keep && x->memo_valid && !memcmp(x->memo_now, x->memo_key, sizeof *x->memo_key * (size_t)nkey);
    if (keep && !kept) x->memo_valid = 0;
    for (int li = 0; !st && li < p->nlaunches; li++) {
        const rt_launch *l = &p->launches[li];
        ex_memo_launch *m = keep ? &x->memo[li] : NULL;
        rt_bound *b = m ? &x->memo_b[li] : x->b;
        unsigned key = 0;
        void *fn = NULL;
        x->last_variant[li] = -1;
        if (kept) {
            if (m->state != EX_L_RUN) continue;
            key = m->key;
            fn = m->fn;
            ex_bind_addresses(x, li, r, b);
        } else {
            if (m) m->state = EX_L_OFF;
            if (r->lanes && r->lanes[l->stmt] == 0) continue;
            if (l->when.n) { /* the launch's guard on the sizes (one of a group's exclusive plans) */
                int ok = 1;
                int64_t w = rt_expr_eval(&l->when, r->sizes, p->nsizes, &ok);
                if (!ok) {
                    diag_error(d, TSL_ERR_INTERNAL, "launch %d: its guard does not evaluate", li);
                    st = TSL_ERR_INTERNAL;
                    break;
                }
                if (!w) continue;
            }
            int skip = 0;
            st = ex_bind(x, li, r, b, &key, &skip, d);
            if (!st && skip && m) m->state = EX_L_SKIP;
            if (st || skip) continue;
            st = ex_variant_get(x, l->kernel, key, &fn, d);
            if (st) break;
            if (m) *m = (ex_memo_launch){EX_L_RUN, key, fn};
        }
        b->err = records ? x->err + (rt_ptr)li * RT_ERR_WORDS * 8 : 0;
        rt_fault f = {0};
        st = x->t->launch(x->dev, fn, b, &f, d);
        if (st == TSL_ERR_RUNTIME && f.code) st = ex_fault(b, &f, d);
        if (!st) {
            x->last_launches++;
            x->last_variant[li] = (int)key;
        }
    }
    if (keep && !kept && !st) { /* every launch bound: kept for the next run like this one */
        int64_t *k = x->memo_key;
        x->memo_key = x->memo_now;
        x->memo_now = k;
        x->memo_valid = 1;
    }
    if (r->mem) ex_mem_return(x, r->mem);
    if (!st && check) st = x->t->sync(x->dev, d);
    if (!st && check && records) st = ex_check_records(x, r, d);
    return st;
}
