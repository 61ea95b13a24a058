/* c_run.c — cg_c_run: bind the arguments as the interpreter does,
 * generate and compile the kernel (rt_cpu_compile, cached), run the grid
 * over the CPU thread pool and turn a block's error code into a message
 * naming the instruction and the block. */
#include <pthread.h>
#include <string.h>

#include "codegen/c_int.h"
#include "runtime/runtime.h"

/* ---- running ------------------------------------------------------------------------------------- */

typedef int (*cgc_entry_fn)(void *const *P, const int64_t *I, int64_t begin, int64_t end, int64_t *fail,
                            int64_t *info);

typedef struct cgc_launch {
    cgc_entry_fn fn;
    void **P;
    int64_t *I;
    pthread_mutex_t mu;
    int rc;
    int64_t fail;
    int64_t info[2];
} cgc_launch;

static void run_range(void *ctx, int64_t begin, int64_t end)
{
    cgc_launch *l = ctx;
    int64_t fail = -1, info[2] = {0, 0};
    int rc = l->fn(l->P, l->I, begin, end, &fail, info);
    if (!rc) return;
    pthread_mutex_lock(&l->mu);
    if (!l->rc || (fail >= 0 && fail < l->fail)) {
        l->rc = rc;
        l->fail = fail;
        l->info[0] = info[0];
        l->info[1] = info[1];
    }
    pthread_mutex_unlock(&l->mu);
}

static const tile_interp_arg *find_arg(const tile_interp_arg *args, int nargs, const char *name)
{
    for (int i = 0; i < nargs; i++)
        if (args[i].name && !strcmp(args[i].name, name)) return &args[i];
    return NULL;
}

typedef struct cgc_scope {
    const tile_kernel *k;
    const int64_t *symv;
    const tile_interp_arg *args;
    int nargs;
} cgc_scope;

static int64_t scope_lookup(void *ctx, const tile_value *v, int *ok)
{
    const cgc_scope *s = ctx;
    for (int i = 0; i < s->k->nsyms; i++)
        if (s->k->syms[i] == v) return s->symv[i];
    if (v->origin == TILE_O_PARAM && v->kind == TILE_V_SCALAR) {
        const tile_interp_arg *a = find_arg(s->args, s->nargs, v->name);
        if (a) return a->ival;
    }
    *ok = 0;
    return 0;
}

/* Bind parameters into the launch words (interp bind_params' checks). */
static tsl_status bind(const tile_kernel *k, const tile_interp_arg *args, int nargs, const int64_t *symv,
                       void **P, int64_t *I, int64_t *nblocks, tsl_diag *d)
{
    cgc_scope sc = {k, symv, args, nargs};
    int w = 0;
    for (int p = 0; p < k->nparams; p++) {
        const tile_value *v = k->params[p];
        const tile_interp_arg *a = find_arg(args, nargs, v->name);
        if (!a) {
            diag_error(d, TSL_ERR_ARG, "kernel '%s': parameter '%s' is not bound", k->name, v->name);
            return TSL_ERR_ARG;
        }
        if (v->kind == TILE_V_SCALAR) {
            P[p] = NULL;
            /* a float typed scalar's ival holds its double's bits (interp.h) */
            I[w++] = a->ival;
            continue;
        }
        const DLTensor *t = a->t;
        tsl_dtype dt, want;
        char nb[16];
        if (!t) {
            diag_error(d, TSL_ERR_ARG, "parameter '%s' needs a tensor", v->name);
            return TSL_ERR_ARG;
        }
        if (tsl_dtype_from_dlpack(t->dtype, &dt) || tile_dtype_to_tsl(v->type.dt, &want) || dt != want) {
            diag_error(d, TSL_ERR_SHAPE, "tensor '%s' should be %s", v->name, tile_dtype_name(v->type.dt, nb));
            return TSL_ERR_SHAPE;
        }
        if (t->device.device_type != kDLCPU) {
            diag_error(d, TSL_ERR_ARG, "tensor '%s' is not in host memory", v->name);
            return TSL_ERR_ARG;
        }
        if (t->ndim != v->type.rank) {
            diag_error(d, TSL_ERR_SHAPE, "tensor '%s' has rank %d; expected %d", v->name, t->ndim, v->type.rank);
            return TSL_ERR_SHAPE;
        }
        int64_t acc = 1, st[CGC_MAX_RANK];
        for (int i = t->ndim - 1; i >= 0; i--) {
            int ok = 1;
            int64_t want_d = tile_expr_eval(v->type.dims[i], scope_lookup, &sc, NULL, -1, &ok);
            if (!ok || t->shape[i] != want_d) {
                diag_error(d, TSL_ERR_SHAPE, "tensor '%s' dim %d is %lld; the kernel says %lld", v->name, i,
                           (long long)t->shape[i], (long long)want_d);
                return TSL_ERR_SHAPE;
            }
            st[i] = t->strides ? t->strides[i] : acc;
            acc *= t->shape[i];
        }
        P[p] = (char *)t->data + t->byte_offset;
        for (int i = 0; i < t->ndim; i++) I[w++] = t->shape[i];
        for (int i = 0; i < t->ndim; i++) I[w++] = st[i];
    }
    for (int s = 0; s < k->nsyms; s++) I[w++] = symv[s];
    *nblocks = 1;
    for (int i = 0; i < 3; i++) {
        int64_t g = 1;
        if (i < k->ngrid) {
            int ok = 1;
            g = tile_expr_eval(k->grid[i], scope_lookup, &sc, NULL, -1, &ok);
            if (!ok) {
                diag_error(d, TSL_ERR_RUNTIME, "kernel '%s': grid dim %d cannot be evaluated", k->name, i);
                return TSL_ERR_RUNTIME;
            }
            if (g < 0 || g > TILE_MAX_GRID) { /* docs/tile-ir.md: a grid dim is 0..2^31-1 */
                diag_error(d, TSL_ERR_SHAPE, "kernel '%s': grid dim %d is %lld; it must be 0..%lld", k->name, i,
                           (long long)g, (long long)TILE_MAX_GRID);
                return TSL_ERR_SHAPE;
            }
        }
        I[w++] = g ? g : 1;
        if (__builtin_mul_overflow(*nblocks, g, nblocks)) {
            diag_error(d, TSL_ERR_SHAPE, "kernel '%s': the grid has more than 2^63 blocks", k->name);
            return TSL_ERR_SHAPE;
        }
    }
    return TSL_OK;
}

/* ---- kernels loaded in this process ----------------------------------------
 * Keyed by the kernel's printed text: running a kernel again emits,
 * hashes and opens nothing. Entries live as long as the process (a bounded
 * number; past it, modules are opened per call). */
typedef struct cgc_loaded {
    char key[33];
    rt_cpu_module *mod;
    cgc_entry_fn fn;
    cgc_err *errs; /* malloc'd copies of the run-time error table */
    int nerrs;
} cgc_loaded;

#define CGC_MAX_LOADED 512

static cgc_loaded cgc_loaded_v[CGC_MAX_LOADED];
static int cgc_nloaded;
static pthread_mutex_t cgc_loaded_mu = PTHREAD_MUTEX_INITIALIZER;

static const cgc_loaded *loaded_find(const char *key)
{
    const cgc_loaded *r = NULL;
    pthread_mutex_lock(&cgc_loaded_mu);
    for (int i = 0; i < cgc_nloaded && !r; i++)
        if (!strcmp(cgc_loaded_v[i].key, key)) r = &cgc_loaded_v[i];
    pthread_mutex_unlock(&cgc_loaded_mu);
    return r;
}

/* Keep mod (and a copy of the errors) under key; returns the entry, or
 * NULL when the table is full (the caller keeps ownership of mod). */
static const cgc_loaded *loaded_add(const char *key, rt_cpu_module *mod, cgc_entry_fn fn, const cgc_result *res)
{
    const cgc_loaded *r = NULL;
    pthread_mutex_lock(&cgc_loaded_mu);
    for (int i = 0; i < cgc_nloaded && !r; i++)
        if (!strcmp(cgc_loaded_v[i].key, key)) r = &cgc_loaded_v[i];
    if (!r && cgc_nloaded < CGC_MAX_LOADED) {
        cgc_loaded *e = &cgc_loaded_v[cgc_nloaded];
        e->errs = calloc((size_t)res->nerrs + 1, sizeof *e->errs);
        int ok = e->errs != NULL;
        for (int i = 0; ok && i < res->nerrs; i++) {
            e->errs[i] = res->errs[i];
            e->errs[i].msg = strdup(res->errs[i].msg);
            e->errs[i].where = strdup(res->errs[i].where);
            ok = e->errs[i].msg && e->errs[i].where;
        }
        if (ok) {
            memcpy(e->key, key, sizeof e->key);
            e->mod = mod;
            e->fn = fn;
            e->nerrs = res->nerrs;
            cgc_nloaded++;
            r = e;
        } else if (e->errs) {
            for (int i = 0; i < res->nerrs; i++) {
                free(e->errs[i].msg);
                free(e->errs[i].where);
            }
            free(e->errs);
            e->errs = NULL;
        }
    } else if (r) {
        r = NULL; /* another thread loaded it meanwhile: the caller frees its own */
    }
    pthread_mutex_unlock(&cgc_loaded_mu);
    return r;
}

tsl_status cg_c_run(const tile_module *m, const tile_kernel *k, const tile_interp_arg *args, int nargs,
                    tsl_diag *d)
{
    tsl_arena *ar = arena_create();
    const tile_kernel *kk = NULL;
    cgc_result res = {0};
    rt_cpu_module *mod = NULL;
    int64_t *symv = calloc((size_t)k->nsyms + 1, sizeof *symv);
    int nwords = 3 + k->nsyms;
    for (int p = 0; p < k->nparams; p++)
        nwords += k->params[p]->kind == TILE_V_TENSOR ? 2 * k->params[p]->type.rank : 1;
    int64_t *I = calloc((size_t)nwords + 1, sizeof *I);
    void **P = calloc((size_t)k->nparams + 1, sizeof *P);
    int64_t nblocks = 0;
    tsl_status st = TSL_OK;
    if (!symv || !I || !P) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        st = TSL_ERR_NOMEM;
        goto done;
    }
    if ((st = tile_interp_bind_symbols(k, args, nargs, NULL, NULL, 0, symv, d))) goto done;
    if ((st = bind(k, args, nargs, symv, P, I, &nblocks, d))) goto done;
    strbuf kt = {0};
    tile_print_kernel(&kt, k);
    rt_key_part part = {sb_str(&kt), kt.len};
    char key[33];
    rt_cache_key(&part, 1, key);
    sb_free(&kt);
    cgc_launch l = {0};
    const cgc_loaded *ld = loaded_find(key);
    if (ld) {
        l.fn = ld->fn;
        res.errs = ld->errs;
        res.nerrs = ld->nerrs;
    } else {
        if ((st = cgc_prepare(m, k, ar, d, &kk))) goto done;
        if ((st = cgc_emit_kernel(kk, ar, d, &res))) goto done;
        char hint[300];
        snprintf(hint, sizeof hint, "%s.c", k->name);
        if ((st = rt_cpu_compile(res.source, hint, &mod, d))) goto done;
        char entry[256];
        l.fn = (cgc_entry_fn)rt_cpu_symbol(mod, cg_c_entry_name(k->name, entry, sizeof entry), d);
        if (!l.fn) {
            st = TSL_ERR_RUNTIME;
            goto done;
        }
        if (loaded_add(key, mod, l.fn, &res)) mod = NULL; /* the table owns it now */
    }
    if (nblocks <= 0) goto done;
    l.P = P;
    l.I = I;
    l.fail = INT64_MAX;
    pthread_mutex_init(&l.mu, NULL);
    rt_cpu_parallel_for(nblocks, run_range, &l);
    pthread_mutex_destroy(&l.mu);
    if (l.rc) {
        int64_t gx = I[nwords - 3], gy = I[nwords - 2], b = l.fail;
        if (l.rc < 0 || l.rc > res.nerrs) {
            diag_error(d, TSL_ERR_NOMEM, "kernel '%s': out of memory for a block's workspace", k->name);
            st = TSL_ERR_NOMEM;
        } else {
            const cgc_err *e = &res.errs[l.rc - 1];
            char msg[1024];
            if (e->info) {
                /* the message is ours: a format with two %lld for info[0..1] */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                snprintf(msg, sizeof msg, e->msg, (long long)l.info[0], (long long)l.info[1]);
#pragma GCC diagnostic pop
            } else {
                snprintf(msg, sizeof msg, "%s", e->msg);
            }
            diag_error(d, e->st, "kernel '%s': %s%s (block %lld,%lld,%lld)", k->name, msg, e->where, (long long)(b % gx),
                       (long long)(b / gx % gy), (long long)(b / (gx * gy)));
            st = e->st;
        }
    }
done:
    rt_cpu_module_free(mod);
    free(res.source);
    free(symv);
    free(I);
    free(P);
    arena_free(ar);
    return st;
}
