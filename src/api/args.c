/* args.c — binding a program's arguments by name, inferring size symbols
 * and output shapes from the bound inputs, and running on a target.
 *
 * Lifecycle: set_tensor / set_scalar (any order) -> infer (explicit, or
 * implied by output_shape and set_output) -> run -> output. Binding again
 * drops the inferred shapes. Every run infers afresh, since the caller's
 * descriptors are borrowed and may have changed since they were bound.
 * Outputs the caller did not bind are allocated by the args at the first
 * run and kept (tsl_args_output) until the args are freed or a later run
 * needs another shape.
 *
 * tsl_program_call remembers the descriptors of its last call that ran
 * (args_seen: everything but the data's address) and the addresses its
 * overlap check passed: a call whose descriptors all read the same again,
 * on the same target, with nothing set on the args in between, would pass
 * every check the same way and bind the same sizes, so it checks none of
 * them (bind, inference, device, outputs; overlaps too when the addresses
 * are the same as well). Only what the descriptors hold is compared, never
 * the DLTensor's own address: a caller may refill one descriptor. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "api/api.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "sched/sched.h"

/* What the args hold for one tensor of the def (def->tensors order). */
typedef struct args_slot {
    const DLTensor *in;       /* tensor parameters (incl. in/out): borrowed */
    int has_scalar;           /* scalar parameters */
    double scalar;
    const DLTensor *user_out; /* outputs bound with tsl_args_set_output: borrowed */
    struct args_out *owned_out; /* outputs allocated by the args at run: owned */
} args_slot;

/* An output the args allocated, on the run's device: through the caller's
 * allocator when one is set, else aligned_alloc (host, zeroed) or
 * cuMemAlloc (CUDA, via compiled.c). */
typedef struct args_out {
    DLTensor t; /* first member: what tsl_args_output returns */
    int64_t shape[TSL_MAX_RANK];
    tsl_allocator al; /* al.alloc NULL: tessel's own */
    void *stream;
} args_out;

struct tsl_args {
    tsl_program *p;
    args_slot *slot;  /* def->ntensors */
    int64_t *size_set; /* def->nsizes: value given with set_scalar, or -1 */
    tsl_arena *bind;  /* holds `made` and `made_sizes`; recreated by an infer with other sizes */
    lang_bound *bound; /* NULL until tsl_args_infer succeeds (and after a binding changes) */
    lang_bound *made;  /* the last binding made, kept for an infer with the same sizes */
    int64_t *made_sizes; /* def->nsizes: the sizes `made` is for */
    int ran;          /* a run succeeded since the last binding change */
    char used[512];   /* the options the last compiled run used */
    int used_tuned;   /* ... found in the cache's tuning records */
    void *stream;     /* device runs: the caller's CUstream (NULL: legacy default) */
    tsl_allocator al; /* al.alloc NULL: tessel's own allocation */
    int sync;         /* device runs: wait for the stream and report index errors */
    int fresh;        /* tsl_program_call: ARGS_CHECKED or ARGS_SEEN (below), else 0 */
    DLDevice run_dv;  /* the device of the last run's tensors */
    /* the last tsl_program_call that ran: its descriptors (def->nparams +
     * def->noutputs, by position), target and device, and the view
     * addresses its overlap check passed (def->ntensors); valid while
     * seen_valid (cleared by every change to the binding) */
    struct args_seen *seen;
    void **seen_base;
    int seen_valid, seen_bases_valid;
    int has_scalars; /* the def has a scalar parameter */
    tsl_target seen_target;
    DLDevice seen_dv;
};

/* a->fresh: the descriptors were checked by tsl_program_call's bind just
 * now; or they read as those of its last call that ran (args_seen) */
enum { ARGS_CHECKED = 1, ARGS_SEEN = 2 };

/* A descriptor as a call that passed every check saw it, its data's
 * address aside: `head` is its device, ndim and dtype as the DLTensor
 * lays them out (16 bytes from `device`: compared at once); ndim -1: no
 * tensor was given. */
enum { ARGS_HEAD = offsetof(DLTensor, shape) - offsetof(DLTensor, device) };
_Static_assert(ARGS_HEAD == 16, "DLTensor's device, ndim and dtype are 16 bytes together");

typedef struct args_seen {
    unsigned char head[ARGS_HEAD];
    int ndim;
    int has_data, has_strides;
    uint64_t byte_offset;
    int64_t shape[TSL_MAX_RANK], strides[TSL_MAX_RANK];
} args_seen;

/* Up to this many sizes, tensors, ... a call keeps its scratch on the
 * stack: a cached call of a small def allocates nothing. */
enum { ARGS_STACK = 16 };

const lang_bound *api_args_bound(const tsl_args *a) { return a->bound; }

void api_args_set_used(tsl_args *a, const char *options, int tuned)
{
    /* per run: a copy, not snprintf (printf costs ~0.2 us a call here) */
    size_t n = options ? strnlen(options, sizeof a->used - 1) : 0;
    memcpy(a->used, options ? options : "", n);
    a->used[n] = 0;
    a->used_tuned = tuned;
}

const char *tsl_args_options_used(TSL_KEEP const tsl_args *a, int *tuned)
{
    if (!a) return NULL;
    if (tuned) *tuned = a->used_tuned;
    return a->used;
}

static void args_out_free(args_out *o)
{
    if (!o) return;
    if (o->t.data) {
        if (o->al.alloc)
            o->al.free(o->al.user, o->t.device, o->t.data, o->stream);
        else if (o->t.device.device_type == kDLCUDA)
            api_cuda_free(o->t.data);
        else
            free(o->t.data);
    }
    free(o);
}

TSL_GIVE tsl_args *tsl_args_create(TSL_KEEP tsl_program *p)
{
    if (!p) return NULL;
    tsl_args *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->p = p;
    a->slot = calloc((size_t)p->def->ntensors + 1, sizeof *a->slot);
    a->size_set = malloc(((size_t)p->def->nsizes + 1) * sizeof *a->size_set);
    a->seen = calloc((size_t)(p->def->nparams + p->def->noutputs) + 1, sizeof *a->seen);
    a->seen_base = calloc((size_t)p->def->ntensors + 1, sizeof *a->seen_base);
    if (!a->slot || !a->size_set || !a->seen || !a->seen_base) {
        tsl_args_free(a);
        return NULL;
    }
    for (int i = 0; i < p->def->nsizes; i++) a->size_set[i] = -1;
    for (int i = 0; i < p->def->nparams; i++) a->has_scalars |= p->def->params[i]->is_scalar;
    return a;
}

void tsl_args_free(TSL_TAKE tsl_args *a)
{
    if (!a) return;
    if (a->slot)
        for (int i = 0; i < a->p->def->ntensors; i++) args_out_free(a->slot[i].owned_out);
    free(a->slot);
    free(a->size_set);
    free(a->seen);
    free(a->seen_base);
    arena_free(a->bind);
    free(a);
}

/* Drop inferred shapes after a binding changed. */
/* A binding changed: the sizes must be inferred again (tsl_args_infer
 * keeps the last binding made when they come out the same). */
static void args_invalidate(tsl_args *a)
{
    a->bound = NULL;
    a->ran = 0;
    a->seen_valid = 0;
}

static void args_unmake(tsl_args *a)
{
    arena_free(a->bind);
    a->bind = NULL;
    a->made = NULL;
    a->made_sizes = NULL;
    args_invalidate(a);
}

/* "float32(M,K)": a parameter's declaration, for messages. */
static void args_describe_decl(strbuf *b, const lang_def *def, const lang_tensor *t)
{
    sb_printf(b, "%s(", tsl_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++) {
        if (d) sb_putc(b, ',');
        if (t->dims && t->dims[d].sym >= 0)
            sb_puts(b, def->sizes[t->dims[d].sym]);
        else if (t->dims)
            sb_printf(b, "%lld", (long long)t->dims[d].value);
    }
    sb_putc(b, ')');
}

static void args_describe_shape(strbuf *b, int rank, const int64_t *shape)
{
    sb_putc(b, '(');
    for (int d = 0; d < rank; d++) sb_printf(b, "%s%lld", d ? ", " : "", (long long)shape[d]);
    sb_putc(b, ')');
}

/* The def's tensor called `name`, or an error naming what exists. */
static const lang_tensor *args_find(tsl_args *a, const char *name, const char *fn,
                                    tsl_status *st)
{
    const lang_def *def = a->p->def;
    *st = TSL_OK;
    if (!name) {
        *st = api_error(a->p->ctx, TSL_ERR_ARG, "%s: name is NULL", fn);
        return NULL;
    }
    const lang_tensor *t = lang_def_tensor(def, name);
    if (!t) {
        strbuf b = {0};
        for (int i = 0; i < def->nparams; i++)
            sb_printf(&b, "%s%s", i ? ", " : "", def->params[i]->name);
        sb_puts(&b, def->nparams ? "; outputs: " : "outputs: ");
        for (int i = 0; i < def->noutputs; i++)
            sb_printf(&b, "%s%s", i ? ", " : "", def->outputs[i]->name);
        *st = api_error(a->p->ctx, TSL_ERR_ARG, "%s: '%s' has no parameter or output named '%s' "
                        "(parameters: %s)", fn, def->name, name, sb_str(&b));
        sb_free(&b);
    }
    return t;
}

/* api_tensor_check_device, the message ("tensor 'A'") formatted only when
 * there is an error: binding runs on every call of a language binding,
 * and formatting the name cost two thirds of it. */
static tsl_status args_check_tensor(tsl_context *ctx, const DLTensor *t, const char *kind, const char *name,
                                    tsl_dtype *dt)
{
    if (api_tensor_check_device(NULL, t, NULL, dt) == TSL_OK) return TSL_OK;
    char what[160];
    snprintf(what, sizeof what, "%s '%s'", kind, name);
    return api_tensor_check_device(ctx, t, what, dt);
}

/* Check a caller's tensor against parameter lt's declaration (host memory,
 * dtype, rank). Run at binding and again at every infer, since the
 * descriptor is borrowed and may have been changed in between. */
static tsl_status args_check_input(tsl_args *a, const lang_tensor *lt, const DLTensor *t)
{
    tsl_context *ctx = a->p->ctx;
    const char *name = lt->name;
    tsl_status st;
    tsl_dtype dt;
    if ((st = args_check_tensor(ctx, t, "tensor", name, &dt))) return st;
    if (dt != lt->dtype)
        return api_error(ctx, TSL_ERR_ARG, "parameter '%s' is %s but the tensor given is %s",
                         name, tsl_dtype_name(lt->dtype), tsl_dtype_name(dt));
    if (t->ndim != lt->rank) {
        strbuf b = {0};
        args_describe_decl(&b, a->p->def, lt);
        st = api_error(ctx, TSL_ERR_SHAPE,
                       "parameter '%s' has rank %d (declared %s %s) but the tensor given has "
                       "rank %d",
                       name, lt->rank, sb_str(&b), name, t->ndim);
        sb_free(&b);
        return st;
    }
    return TSL_OK;
}

tsl_status tsl_args_set_tensor(TSL_KEEP tsl_args *a, TSL_KEEP const char *name,
                               TSL_KEEP const DLTensor *t)
{
    if (!a) return TSL_ERR_ARG;
    tsl_context *ctx = a->p->ctx;
    tsl_status st;
    const lang_tensor *lt = args_find(a, name, "tsl_args_set_tensor", &st);
    if (!lt) return st;
    if (lt->is_scalar)
        return api_error(ctx, TSL_ERR_ARG, "'%s' is a scalar parameter; bind it with "
                         "tsl_args_set_scalar", name);
    if (!(lt->flags & LANG_TENSOR_INPUT))
        return api_error(ctx, TSL_ERR_ARG, "'%s' is an output of '%s', not a parameter; bind "
                         "its storage with tsl_args_set_output", name, a->p->def->name);
    if ((st = args_check_input(a, lt, t))) return st;
    a->slot[lt->index].in = t;
    args_invalidate(a);
    return TSL_OK;
}

/* A float scalar parameter's value is that of its dtype (`float alpha`
 * given 0.1 is 0.100000001490116): the interpreter rounds it, so every
 * target gets it rounded here (the CPU target's float64 arithmetic once
 * used the double as given, 1e-9 off). */
static double args_scalar_value(const lang_tensor *lt, double v)
{
    return dtype_info_of(lt->dtype)->is_float ? dtype_round(lt->dtype, v) : v;
}

tsl_status tsl_args_set_scalar(TSL_KEEP tsl_args *a, TSL_KEEP const char *name, double v)
{
    if (!a) return TSL_ERR_ARG;
    tsl_context *ctx = a->p->ctx;
    const lang_def *def = a->p->def;
    int sym = name ? lang_def_size_slot(def, name) : -1;
    const lang_tensor *lt = name ? lang_def_tensor(def, name) : NULL;
    if (!lt && sym >= 0) { /* a size symbol, e.g. one only a where clause uses */
        if (!(v >= 0 && v <= 4e18 && v == floor(v)))
            return api_error(ctx, TSL_ERR_ARG, "size %s must be a non-negative integer, got %g",
                             name, v);
        a->size_set[sym] = (int64_t)v;
        args_invalidate(a);
        return TSL_OK;
    }
    tsl_status st;
    lt = args_find(a, name, "tsl_args_set_scalar", &st);
    if (!lt) return st;
    if (!lt->is_scalar)
        return api_error(ctx, TSL_ERR_ARG, "'%s' is a tensor; bind it with %s", name,
                         lt->flags & LANG_TENSOR_INPUT ? "tsl_args_set_tensor"
                                                       : "tsl_args_set_output");
    a->slot[lt->index].scalar = args_scalar_value(lt, v);
    a->slot[lt->index].has_scalar = 1;
    a->ran = 0;
    a->seen_valid = 0;
    return TSL_OK;
}

tsl_status tsl_args_bind(TSL_KEEP tsl_args *a, TSL_KEEP const DLTensor *const *tensors,
                         TSL_KEEP const double *scalars)
{
    if (!a) return TSL_ERR_ARG;
    a->seen_valid = 0; /* (a failed binding leaves some slots changed) */
    tsl_context *ctx = a->p->ctx;
    const lang_def *def = a->p->def;
    if (!tensors) return api_error(ctx, TSL_ERR_ARG, "tsl_args_bind: tensors is NULL");
    tsl_status st;
    for (int i = 0; i < def->nparams; i++) {
        const lang_tensor *lt = def->params[i];
        if (lt->is_scalar) {
            if (!scalars)
                return api_error(ctx, TSL_ERR_ARG, "tsl_args_bind: scalars is NULL but '%s' has "
                                 "scalar parameter '%s'", def->name, lt->name);
            a->slot[lt->index].scalar = args_scalar_value(lt, scalars[i]);
            a->slot[lt->index].has_scalar = 1;
        } else {
            if ((st = args_check_input(a, lt, tensors[i]))) return st;
            a->slot[lt->index].in = tensors[i];
        }
    }
    for (int j = 0; j < def->noutputs; j++) {
        const lang_tensor *lt = def->outputs[j];
        const DLTensor *t = tensors[def->nparams + j];
        if (lt->flags & LANG_TENSOR_INPUT) {
            if (t && t != a->slot[lt->index].in)
                return api_error(ctx, TSL_ERR_ARG, "tsl_args_bind: '%s' is in/out; its output "
                                 "entry must be NULL (the parameter is its storage)", lt->name);
            continue;
        }
        if (t) {
            tsl_dtype dt;
            if ((st = args_check_tensor(ctx, t, "output", lt->name, &dt))) return st;
            if (dt != lt->dtype)
                return api_error(ctx, TSL_ERR_ARG, "output '%s' is %s but the tensor given is %s",
                                 lt->name, tsl_dtype_name(lt->dtype), tsl_dtype_name(dt));
        }
        a->slot[lt->index].user_out = t;
    }
    args_invalidate(a);
    return TSL_OK;
}

tsl_status tsl_args_set_size(TSL_KEEP tsl_args *a, TSL_KEEP const char *name, int64_t value)
{
    if (!a) return TSL_ERR_ARG;
    const lang_def *def = a->p->def;
    int sym = name ? lang_def_size_slot(def, name) : -1;
    if (sym < 0) {
        strbuf b = {0};
        for (int s = 0; s < def->nsizes; s++) sb_printf(&b, "%s%s", s ? ", " : "", def->sizes[s]);
        tsl_status st = api_error(a->p->ctx, TSL_ERR_ARG, "'%s' has no size named %s (%s%s)", def->name,
                                  name ? name : "(null)", def->nsizes ? "its sizes: " : "it has no size symbols",
                                  sb_str(&b));
        sb_free(&b);
        return st;
    }
    if (value < 0 || value > (int64_t)4e18)
        return api_error(a->p->ctx, TSL_ERR_ARG, "size %s must be a non-negative integer, got %lld", name,
                         (long long)value);
    a->size_set[sym] = value;
    args_invalidate(a);
    return TSL_OK;
}

/* Where a size symbol's value came from, for the mismatch message. */
typedef struct args_origin {
    const char *tensor; /* NULL: given with tsl_args_set_scalar */
    int dim;
} args_origin;

static void args_describe_origin(strbuf *b, args_origin o)
{
    if (o.tensor)
        sb_printf(b, "from %s dim %d", o.tensor, o.dim);
    else
        sb_puts(b, "as set");
}

tsl_status tsl_args_infer(TSL_KEEP tsl_args *a)
{
    if (!a) return TSL_ERR_ARG;
    tsl_context *ctx = a->p->ctx;
    const lang_def *def = a->p->def;
    args_invalidate(a);
    int64_t sizes_here[ARGS_STACK];
    args_origin origin_here[ARGS_STACK];
    int heap = def->nsizes > ARGS_STACK;
    int64_t *sizes = heap ? calloc((size_t)def->nsizes + 1, sizeof *sizes) : sizes_here;
    args_origin *origin = heap ? calloc((size_t)def->nsizes + 1, sizeof *origin) : origin_here;
    if (!heap) memset(origin_here, 0, sizeof origin_here);
    tsl_status st = TSL_OK;
    if (!sizes || !origin) {
        st = api_error(ctx, TSL_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int s = 0; s < def->nsizes; s++) sizes[s] = a->size_set[s];
    for (int i = 0; i < def->nparams && !st; i++) {
        const lang_tensor *lt = def->params[i];
        const args_slot *sl = &a->slot[lt->index];
        if (lt->is_scalar) {
            if (!sl->has_scalar)
                st = api_error(ctx, TSL_ERR_ARG, "missing scalar parameter '%s' of '%s' (%s)",
                               lt->name, def->name, tsl_dtype_name(lt->dtype));
            continue;
        }
        if (!sl->in) {
            strbuf b = {0};
            args_describe_decl(&b, def, lt);
            st = api_error(ctx, TSL_ERR_ARG, "missing input tensor '%s' of '%s' (declared %s %s)",
                           lt->name, def->name, sb_str(&b), lt->name);
            sb_free(&b);
            continue;
        }
        if (!a->fresh && (st = args_check_input(a, lt, sl->in))) continue; /* (ARGS_SEEN runs no infer) */
        for (int d = 0; d < lt->rank && !st; d++) {
            int64_t v = sl->in->shape[d];
            int sym = lt->dims ? lt->dims[d].sym : -1;
            if (sym < 0) {
                if (lt->dims && v != lt->dims[d].value)
                    st = api_error(ctx, TSL_ERR_SHAPE,
                                   "dimension %d of '%s' is %lld but '%s' declares it %lld", d,
                                   lt->name, (long long)v, def->name,
                                   (long long)lt->dims[d].value);
            } else if (sizes[sym] < 0) {
                sizes[sym] = v;
                origin[sym] = (args_origin){lt->name, d};
            } else if (sizes[sym] != v) {
                strbuf b = {0};
                args_describe_origin(&b, origin[sym]);
                st = api_error(ctx, TSL_ERR_SHAPE, "size %s is %lld %s but %lld from %s dim %d",
                               def->sizes[sym], (long long)sizes[sym], sb_str(&b),
                               (long long)v, lt->name, d);
                sb_free(&b);
            }
        }
    }
    if (st) goto out;
    /* the binding of the same sizes is kept (a language binding infers
     * before every run): lang_bind depends on the def and the sizes alone */
    if (a->made && !memcmp(a->made_sizes, sizes, sizeof *sizes * (size_t)def->nsizes)) {
        a->bound = a->made;
        goto out;
    }
    args_unmake(a);
    if (!(a->bind = arena_create()) ||
        !(a->made_sizes = arena_alloc(a->bind, sizeof *sizes * ((size_t)def->nsizes + 1)))) {
        st = api_error(ctx, TSL_ERR_NOMEM, "out of memory");
        goto out;
    }
    memcpy(a->made_sizes, sizes, sizeof *sizes * (size_t)def->nsizes);
    tsl_diag *d = api_diag(ctx);
    diag_reset(d);
    st = (tsl_status)lang_bind(a->bind, def, sizes, &a->bound, d);
    if (st) {
        if (!d->nerr) diag_error(d, st, "binding sizes of '%s' failed", def->name);
        args_unmake(a);
    } else {
        a->made = a->bound;
    }
out:
    if (heap) {
        free(sizes);
        free(origin);
    }
    return st;
}

/* The def's output called `name` (in/out included), or an error. */
static const lang_tensor *args_find_output(tsl_args *a, const char *name, const char *fn,
                                           tsl_status *st)
{
    const lang_tensor *lt = args_find(a, name, fn, st);
    if (lt && !(lt->flags & LANG_TENSOR_OUTPUT)) {
        *st = api_error(a->p->ctx, TSL_ERR_ARG, "%s: '%s' is not an output of '%s'", fn, name,
                        a->p->def->name);
        return NULL;
    }
    return lt;
}

tsl_status tsl_args_output_shape(TSL_KEEP tsl_args *a, TSL_KEEP const char *name, int *rank,
                                 int64_t shape[TSL_MAX_RANK], tsl_dtype *dtype)
{
    if (!a) return TSL_ERR_ARG;
    tsl_status st;
    const lang_tensor *lt = args_find_output(a, name, "tsl_args_output_shape", &st);
    if (!lt) return st;
    if (!a->bound && (st = tsl_args_infer(a))) return st;
    if (rank) *rank = lt->rank;
    if (shape)
        for (int d = 0; d < lt->rank; d++) shape[d] = a->bound->shapes[lt->index][d];
    if (dtype) *dtype = lt->dtype;
    return TSL_OK;
}

int64_t tsl_args_reduction_length(TSL_KEEP tsl_args *a, TSL_KEEP const char *name)
{
    if (!a) return -1;
    tsl_status st;
    const lang_tensor *lt = args_find_output(a, name, "tsl_args_reduction_length", &st);
    if (!lt || (!a->bound && tsl_args_infer(a))) return -1;
    int64_t len = 1;
    interp_tolerance(a->bound, lt->index, &len);
    return len;
}

double tsl_args_tolerance(TSL_KEEP tsl_args *a, TSL_KEEP const char *name)
{
    if (!a) return -1;
    tsl_status st;
    const lang_tensor *lt = args_find_output(a, name, "tsl_args_tolerance", &st);
    if (!lt || (!a->bound && tsl_args_infer(a))) return -1;
    return interp_tolerance(a->bound, lt->index, NULL);
}

/* Check a caller's output tensor against the inferred shape and dtype. */
static tsl_status args_check_output(tsl_args *a, const lang_tensor *lt, const DLTensor *t)
{
    tsl_context *ctx = a->p->ctx;
    tsl_dtype dt = lt->dtype; /* fresh: tsl_args_bind checked it is (ARGS_SEEN checks no output) */
    tsl_status st = a->fresh ? TSL_OK : args_check_tensor(ctx, t, "output", lt->name, &dt);
    if (!st && api_tensor_check_distinct(NULL, t, NULL)) { /* the message formatted only when needed */
        char what[160];
        snprintf(what, sizeof what, "output '%s'", lt->name);
        st = api_tensor_check_distinct(ctx, t, what);
    }
    if (st) return st;
    if (dt != lt->dtype)
        return api_error(ctx, TSL_ERR_ARG, "output '%s' is %s but the tensor given is %s",
                         lt->name, tsl_dtype_name(lt->dtype), tsl_dtype_name(dt));
    const int64_t *want = a->bound->shapes[lt->index];
    int same = t->ndim == lt->rank;
    for (int d = 0; same && d < lt->rank; d++) same = t->shape[d] == want[d];
    if (!same) {
        strbuf b = {0}, c = {0};
        args_describe_shape(&b, lt->rank, want);
        args_describe_shape(&c, t->ndim, t->shape);
        st = api_error(ctx, TSL_ERR_SHAPE, "output '%s' has shape %s but the tensor given has "
                       "shape %s", lt->name, sb_str(&b), sb_str(&c));
        sb_free(&b);
        sb_free(&c);
    }
    return st;
}

tsl_status tsl_args_set_output(TSL_KEEP tsl_args *a, TSL_KEEP const char *name,
                               TSL_KEEP const DLTensor *t)
{
    if (!a) return TSL_ERR_ARG;
    tsl_status st;
    const lang_tensor *lt = args_find_output(a, name, "tsl_args_set_output", &st);
    if (!lt) return st;
    if (lt->flags & LANG_TENSOR_INPUT)
        return api_error(a->p->ctx, TSL_ERR_ARG, "'%s' is in/out (a parameter and an output); "
                         "bind it with tsl_args_set_tensor", name);
    if (!a->bound && (st = tsl_args_infer(a))) return st;
    if ((st = args_check_output(a, lt, t))) return st;
    a->slot[lt->index].user_out = t;
    a->ran = 0;
    a->seen_valid = 0;
    return TSL_OK;
}

const DLTensor *tsl_args_output(TSL_KEEP tsl_args *a, TSL_KEEP const char *name)
{
    if (!a || !name || !a->ran) return NULL;
    const lang_tensor *lt = lang_def_tensor(a->p->def, name);
    if (!lt || !(lt->flags & LANG_TENSOR_OUTPUT)) return NULL;
    const args_slot *sl = &a->slot[lt->index];
    if (lt->flags & LANG_TENSOR_INPUT) return sl->in;
    return sl->user_out ? sl->user_out : sl->owned_out ? &sl->owned_out->t : NULL;
}

tsl_status tsl_args_set_stream(TSL_KEEP tsl_args *a, void *stream)
{
    if (!a) return TSL_ERR_ARG;
    a->stream = stream;
    return TSL_OK;
}

tsl_status tsl_args_set_allocator(TSL_KEEP tsl_args *a, TSL_KEEP const tsl_allocator *al)
{
    if (!a) return TSL_ERR_ARG;
    if (al && (!al->alloc || !al->free))
        return api_error(a->p->ctx, TSL_ERR_ARG, "tsl_args_set_allocator: alloc and free must both be set");
    memset(&a->al, 0, sizeof a->al);
    if (al) a->al = *al;
    a->seen_valid = 0; /* outputs the args own come from another allocator */
    return TSL_OK;
}

tsl_status tsl_args_set_sync(TSL_KEEP tsl_args *a, int sync)
{
    if (!a) return TSL_ERR_ARG;
    a->sync = sync != 0;
    return TSL_OK;
}

/* "cuda:1" / "cpu": a device, for messages. */
static const char *args_device_name(DLDevice dv, char buf[32])
{
    if (dv.device_type == kDLCUDA)
        snprintf(buf, 32, "cuda:%d", dv.device_id);
    else
        snprintf(buf, 32, "cpu");
    return buf;
}

/* The one device every bound tensor is on (host when there is none):
 * tensors on the host and on a GPU, or on two GPUs, in one run are an
 * error naming two of them. */
static tsl_status args_device(tsl_args *a, DLDevice *out)
{
    const lang_def *def = a->p->def;
    const char *first = NULL;
    DLDevice dv = {kDLCPU, 0};
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *lt = def->tensors[i];
        const args_slot *sl = &a->slot[i];
        const DLTensor *t = (lt->flags & LANG_TENSOR_INPUT) ? sl->in : sl->user_out;
        if (lt->is_scalar || !t) continue;
        DLDevice td = t->device;
        if (td.device_type == kDLCUDAHost) td = (DLDevice){kDLCPU, 0};
        if (td.device_type == kDLCPU) td.device_id = 0;
        if (!first) {
            first = lt->name;
            dv = td;
        } else if (td.device_type != dv.device_type || td.device_id != dv.device_id) {
            char b1[32], b2[32];
            return api_error(a->p->ctx, TSL_ERR_ARG, "'%s' is on %s but '%s' is on %s: the tensors of a run "
                             "must be on one device", first, args_device_name(dv, b1), lt->name,
                             args_device_name(td, b2));
        }
    }
    *out = dv;
    return TSL_OK;
}

/* Make sure every output has storage of the inferred shape: the caller's
 * (re-checked, since inputs may have changed since it was bound) or one
 * the args own. */
static tsl_status args_out_alloc(tsl_args *a, const lang_tensor *lt, const int64_t *shape, DLDevice dv,
                                 args_out **out)
{
    args_out *o = calloc(1, sizeof *o);
    int64_t n = api_shape_numel(lt->rank, shape);
    tsl_status st = TSL_OK;
    if (!o || n < 0 || (uint64_t)n > SIZE_MAX / 16) {
        free(o);
        st = TSL_ERR_NOMEM;
    } else {
        size_t bytes = tsl_dtype_nbytes(lt->dtype, n), alloc = (bytes + 63) / 64 * 64; /* packed: low-bit */
        if (!alloc) alloc = 64; /* data is never NULL */
        o->al = a->al;
        o->stream = a->stream;
        o->t.device = dv;
        o->t.ndim = lt->rank;
        o->t.dtype = tsl_dtype_to_dlpack(lt->dtype);
        o->t.shape = o->shape;
        for (int d = 0; d < lt->rank; d++) o->shape[d] = shape[d];
        if (a->al.alloc) {
            o->t.data = a->al.alloc(a->al.user, dv, alloc, a->stream);
        } else if (dv.device_type == kDLCUDA) {
            st = api_cuda_alloc(dv.device_id, alloc, &o->t.data, api_diag(a->p->ctx));
        } else if ((o->t.data = aligned_alloc(64, alloc))) {
            memset(o->t.data, 0, alloc);
        }
        if (!st && !o->t.data) st = TSL_ERR_NOMEM;
        if (st) {
            free(o);
            o = NULL;
        }
    }
    if (st == TSL_ERR_NOMEM) {
        strbuf b = {0};
        char dn[32];
        args_describe_shape(&b, lt->rank, shape);
        st = api_error(a->p->ctx, TSL_ERR_NOMEM, "out of memory allocating output '%s' %s %s on %s%s", lt->name,
                       tsl_dtype_name(lt->dtype), sb_str(&b), args_device_name(dv, dn),
                       a->al.alloc ? " (the caller's allocator failed)" : "");
        sb_free(&b);
    }
    *out = o;
    return st;
}

static tsl_status args_prepare_outputs(tsl_args *a, DLDevice dv)
{
    const lang_def *def = a->p->def;
    for (int i = 0; i < def->noutputs; i++) {
        const lang_tensor *lt = def->outputs[i];
        args_slot *sl = &a->slot[lt->index];
        if (lt->flags & LANG_TENSOR_INPUT) continue;
        tsl_status st;
        if (sl->user_out) {
            if (a->fresh != ARGS_SEEN && (st = args_check_output(a, lt, sl->user_out))) return st;
            continue;
        }
        const int64_t *shape = a->bound->shapes[lt->index];
        if (sl->owned_out) {
            args_out *o = sl->owned_out;
            int same = o->t.device.device_type == dv.device_type && o->t.device.device_id == dv.device_id &&
                       o->al.alloc == a->al.alloc && o->al.user == a->al.user;
            for (int d = 0; d < lt->rank; d++) same &= o->shape[d] == shape[d];
            if (same) continue;
            args_out_free(o);
            sl->owned_out = NULL;
        }
        if ((st = args_out_alloc(a, lt, shape, dv, &sl->owned_out))) return st;
    }
    return TSL_OK;
}

/* The outputs tessel allocates and the temporaries a run holds, against
 * the memory the machine has left: a run that cannot fit is an error
 * before anything is allocated, not a machine that swaps until the OOM
 * killer comes. (lang_bind proved every tensor's bytes fit in 64 bits.) */
static tsl_status args_check_memory(tsl_args *a)
{
    const lang_def *def = a->p->def;
    int64_t need = 0, most = -1;
    int big = -1;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *lt = def->tensors[i];
        const args_slot *sl = &a->slot[i];
        if (lt->is_scalar || (lt->flags & LANG_TENSOR_INPUT)) continue;
        if (!(lt->flags & LANG_TENSOR_TEMP) && (sl->user_out || sl->owned_out)) continue;
        int64_t bytes = (int64_t)tsl_dtype_size(lt->dtype);
        for (int d = 0; d < lt->rank; d++) bytes *= a->bound->shapes[i][d];
        if (__builtin_add_overflow(need, bytes, &need)) need = INT64_MAX;
        if (bytes > most) most = bytes, big = i;
    }
    /* reading /proc/meminfo and the cgroup's files costs ~20 us, more than
     * a whole cached run of a small kernel: under 1 MiB of new memory a
     * run cannot be what pushes a machine into swap, and its allocations
     * still report TSL_ERR_NOMEM themselves */
    if (need < ((int64_t)1 << 20)) return TSL_OK;
    int64_t avail = mem_available();
    if (avail < 0 || need <= avail) return TSL_OK;
    const lang_tensor *lt = def->tensors[big];
    char nb[32], mb[32], ab[32];
    mem_format(nb, sizeof nb, need);
    mem_format(mb, sizeof mb, most);
    mem_format(ab, sizeof ab, avail);
    strbuf b = {0};
    args_describe_shape(&b, lt->rank, a->bound->shapes[big]);
    tsl_status st = api_error(a->p->ctx, TSL_ERR_NOMEM,
                              "the run needs %s for its outputs and temporaries (the largest: %s '%s' %s %s, %s) "
                              "but only %s of memory is available",
                              nb, (lt->flags & LANG_TENSOR_TEMP) ? "temporary" : "output", lt->name,
                              tsl_dtype_name(lt->dtype), sb_str(&b), mb, ab);
    sb_free(&b);
    return st;
}

/* The interpreter's view of a caller's (or owned) tensor. */
static void args_view(interp_tensor *v, const DLTensor *t, tsl_dtype dtype)
{
    v->base = t->data ? (char *)t->data + t->byte_offset : NULL;
    v->dtype = dtype;
    v->rank = t->ndim;
    for (int d = 0; d < t->ndim; d++) v->shape[d] = t->shape[d];
    api_tensor_strides(t, v->stride);
}

/* The bytes [*lo, *hi) a tensor view can touch; 0 when it has none. */
static int args_span(const interp_tensor *v, uintptr_t *lo, uintptr_t *hi)
{
    if (!v->base) return 0;
    int64_t bits = tsl_dtype_bits(v->dtype), a = 0, b = 0;
    for (int d = 0; d < v->rank; d++) {
        if (v->shape[d] == 0) return 0;
        int64_t far = (v->shape[d] - 1) * v->stride[d];
        if (far < 0) a += far;
        else b += far;
    }
    /* whole bytes: packed tensors side by side in one byte count as sharing it */
    *lo = (uintptr_t)v->base + (uintptr_t)(a * bits / 8);
    *hi = (uintptr_t)v->base + (uintptr_t)(((b + 1) * bits + 7) / 8);
    return 1;
}

/* An output that shares memory with another tensor of the call would be
 * read after it was written (every target computes out of place, and in
 * any order): a clear error instead of a wrong answer. In/out tensors (a
 * parameter that is also an output) are one buffer by declaration.
 * The spans are swept in address order (n log n: a def may have
 * thousands of outputs): a span that starts below the furthest end of an
 * earlier output's span overlaps that output, and an output that starts
 * below the furthest end of any earlier span overlaps that one. */
typedef struct args_span_of {
    uintptr_t lo, hi;
    int t;
} args_span_of;

static int args_span_cmp(const void *x, const void *y)
{
    const args_span_of *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo ? 1 : a->t - b->t;
}

static tsl_status args_check_overlap(tsl_program *p, const interp_tensor *views)
{
    const lang_def *def = p->def;
    args_span_of here[ARGS_STACK];
    args_span_of *sp = def->ntensors <= ARGS_STACK ? here : calloc((size_t)def->ntensors + 1, sizeof *sp);
    if (!sp) return api_error(p->ctx, TSL_ERR_NOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || !(t->flags & (LANG_TENSOR_INPUT | LANG_TENSOR_OUTPUT))) continue;
        if (args_span(&views[i], &sp[n].lo, &sp[n].hi)) sp[n++].t = i;
    }
    if (n > ARGS_STACK) {
        qsort(sp, (size_t)n, sizeof *sp, args_span_cmp);
    } else { /* per call: a few spans, by insertion (qsort's setup cost more than the sort) */
        for (int i = 1; i < n; i++) {
            args_span_of x = sp[i];
            int j = i;
            for (; j > 0 && args_span_cmp(&sp[j - 1], &x) > 0; j--) sp[j] = sp[j - 1];
            sp[j] = x;
        }
    }
    uintptr_t far_all = 0, far_out = 0;
    int who_all = -1, who_out = -1, o = -1, t = -1;
    for (int k = 0; k < n && o < 0; k++) {
        const lang_tensor *x = def->tensors[sp[k].t];
        int is_out = (x->flags & LANG_TENSOR_OUTPUT) != 0;
        if (who_out >= 0 && sp[k].lo < far_out) o = who_out, t = sp[k].t;
        else if (is_out && who_all >= 0 && sp[k].lo < far_all) o = sp[k].t, t = who_all;
        if (sp[k].hi > far_all || who_all < 0) far_all = sp[k].hi, who_all = sp[k].t;
        if (is_out && (sp[k].hi > far_out || who_out < 0)) far_out = sp[k].hi, who_out = sp[k].t;
    }
    if (sp != here) free(sp);
    if (o < 0) return TSL_OK;
    const lang_tensor *ot = def->tensors[o], *tt = def->tensors[t];
    return api_error(p->ctx, TSL_ERR_ARG, "output '%s' shares memory with %s '%s': tessel does not "
                     "compute in place; give '%s' a buffer of its own (or declare the tensor as both a "
                     "parameter and an output)", ot->name,
                     (tt->flags & LANG_TENSOR_INPUT) ? "parameter" : "output", tt->name, ot->name);
}

/* The compiled targets' kernels take low-bit outputs as carriers holding
 * their logical values (sched/lowbit.c; low-bit inputs they read packed):
 * views[i] of such a tensor is replaced by a C-order carrier buffer
 * (owned[i]), unpacked from the caller's packed memory. */
static tsl_status args_carry(tsl_program *p, interp_tensor *views, char **owned)
{
    const lang_def *def = p->def;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *lt = def->tensors[i];
        tsl_dtype cdt = sched_tensor_boundary_dtype(lt);
        if (lt->is_scalar || cdt == lt->dtype || (lt->flags & LANG_TENSOR_TEMP)) continue;
        interp_tensor *v = &views[i];
        int64_t n = 1;
        for (int d = 0; d < v->rank; d++) n *= v->shape[d];
        owned[i] = calloc(n ? tsl_dtype_nbytes(cdt, n) : 1, 1);
        if (!owned[i]) return api_error(p->ctx, TSL_ERR_NOMEM, "out of memory for the carrier of '%s'", lt->name);
        for (int64_t e = 0; e < n && (lt->flags & LANG_TENSOR_INPUT); e++)
            dtype_set(cdt, owned[i], e, dtype_get(lt->dtype, v->base, e)); /* packed views are compact */
        v->base = owned[i];
        v->dtype = cdt;
        int64_t st = 1;
        for (int d = v->rank - 1; d >= 0; d--) {
            v->stride[d] = st;
            st *= v->shape[d];
        }
    }
    return TSL_OK;
}

/* Whether a compiled run needs carriers (a low-bit parameter or output). */
static int args_needs_carry(const tsl_program *p)
{
    const lang_def *def = p->def;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *lt = def->tensors[i];
        if (!lt->is_scalar && !(lt->flags & LANG_TENSOR_TEMP) && sched_tensor_boundary_dtype(lt) != lt->dtype)
            return 1;
    }
    return 0;
}

/* After a compiled run: every low-bit output packed from its carrier (the
 * rounding of docs/lowbit.md), the carriers freed. */
static void args_uncarry(tsl_program *p, const interp_tensor *orig, char **owned, int pack)
{
    const lang_def *def = p->def;
    for (int i = 0; i < def->ntensors; i++) {
        if (!owned[i]) continue;
        const lang_tensor *lt = def->tensors[i];
        if (pack && (lt->flags & LANG_TENSOR_OUTPUT)) {
            int64_t n = 1;
            for (int d = 0; d < orig[i].rank; d++) n *= orig[i].shape[d];
            tsl_dtype cdt = dtype_carrier(lt->dtype);
            for (int64_t e = 0; e < n; e++) dtype_set(lt->dtype, orig[i].base, e, dtype_get(cdt, owned[i], e));
        }
        free(owned[i]);
    }
}

/* The views of a run on `target` (in buf when it has room for every
 * tensor, else allocated); *dvo gets the tensors' device. */
static tsl_status args_views_on(tsl_program *p, tsl_args *a, tsl_target target, interp_tensor *buf, int nbuf,
                                interp_tensor **out, DLDevice *dvo)
{
    *out = NULL;
    tsl_context *ctx = p->ctx;
    if (!a) return api_error(ctx, TSL_ERR_ARG, "tsl_program_run: args is NULL");
    if (a->p != p)
        return api_error(ctx, TSL_ERR_ARG, "tsl_program_run: the args were created for '%s', "
                         "not '%s'", a->p->def->name, p->def->name);
    /* infer again even if done: the borrowed descriptors may have changed
     * (unless they read as those of the last call that ran: its binding) */
    tsl_status st;
    DLDevice dv = {kDLCPU, 0};
    int seen = a->fresh == ARGS_SEEN;
    if (seen) {
        a->bound = a->made;
        dv = a->seen_dv;
    } else {
        if ((st = tsl_args_infer(a))) return st;
        if ((st = args_device(a, &dv))) return st;
    }
    if (!seen && dv.device_type == kDLCUDA && target != TSL_TARGET_CUDA)
        return api_error(ctx, TSL_ERR_ARG, "the tensors are on cuda:%d; the %s target takes host tensors (run "
                         "them on the cuda target)", dv.device_id, tsl_target_name(target));
    for (int i = 0; !seen && dv.device_type == kDLCUDA && i < p->def->ntensors; i++) {
        const lang_tensor *lt = p->def->tensors[i];
        /* the kernels take low-bit tensors as carriers unpacked on the host */
        if (!lt->is_scalar && !(lt->flags & LANG_TENSOR_TEMP) && dtype_carrier(lt->dtype) != lt->dtype)
            return api_error(ctx, TSL_ERR_ARG, "'%s' is %s: low-bit tensors on the GPU are not taken in place yet "
                             "(pass host tensors)", lt->name, tsl_dtype_name(lt->dtype));
    }
    a->run_dv = dv;
    /* host memory for what tessel allocates (device runs: the GPU's) */
    if (dv.device_type != kDLCUDA && (st = args_check_memory(a))) return st;
    if ((st = args_prepare_outputs(a, dv))) return st;
    const lang_def *def = p->def;
    interp_tensor *views = def->ntensors <= nbuf ? buf : calloc((size_t)def->ntensors + 1, sizeof *views);
    if (!views) return api_error(ctx, TSL_ERR_NOMEM, "out of memory");
    if (views == buf) memset(buf, 0, sizeof *buf * (size_t)def->ntensors);
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *lt = def->tensors[i];
        const args_slot *sl = &a->slot[i];
        views[i].dtype = lt->dtype;
        if (lt->is_scalar)
            views[i].scalar = sl->scalar;
        else if (lt->flags & LANG_TENSOR_INPUT)
            args_view(&views[i], sl->in, lt->dtype);
        else if (lt->flags & LANG_TENSOR_OUTPUT)
            args_view(&views[i], sl->user_out ? sl->user_out : &sl->owned_out->t, lt->dtype);
    }
    /* the overlap check's answer depends on the views alone: the same
     * descriptors at the same addresses passed it last time */
    int same = seen && a->seen_bases_valid;
    for (int i = 0; same && i < def->ntensors; i++) same = a->seen_base[i] == (void *)views[i].base;
    if (!same && (st = args_check_overlap(p, views))) {
        if (views != buf) free(views);
        return st;
    }
    a->seen_bases_valid = 0; /* until tsl_program_call records this call's */
    for (int i = 0; i < def->ntensors; i++) a->seen_base[i] = views[i].base;
    *out = views;
    *dvo = dv;
    return TSL_OK;
}

/* Host tensors only (bench and tune copy them to the device themselves). */
tsl_status api_args_views(tsl_program *p, tsl_args *a, interp_tensor **out)
{
    DLDevice dv;
    return args_views_on(p, a, TSL_TARGET_CPU, NULL, 0, out, &dv);
}

tsl_status api_args_carry(tsl_program *p, const interp_tensor *views, interp_tensor **cv, char ***owned)
{
    const lang_def *def = p->def;
    *cv = calloc((size_t)def->ntensors + 1, sizeof **cv);
    *owned = calloc((size_t)def->ntensors + 1, sizeof **owned);
    if (!*cv || !*owned) return api_error(p->ctx, TSL_ERR_NOMEM, "out of memory");
    memcpy(*cv, views, (size_t)def->ntensors * sizeof **cv);
    return args_carry(p, *cv, *owned);
}

void api_args_uncarry(tsl_program *p, const interp_tensor *views, interp_tensor *cv, char **owned, int pack)
{
    if (owned) args_uncarry(p, views, owned, pack);
    free(owned);
    free(cv);
}

tsl_status api_args_open(tsl_program *p, tsl_args *a, interp_tensor **views, interp_tensor **cv, char ***owned)
{
    *views = NULL, *cv = NULL, *owned = NULL;
    tsl_status st = api_args_views(p, a, views);
    if (!st) st = api_args_carry(p, *views, cv, owned);
    if (st) {
        api_args_uncarry(p, *views, *cv, *owned, 0);
        free(*views);
        *views = NULL, *cv = NULL, *owned = NULL;
    }
    return st;
}

tsl_status tsl_program_run(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, tsl_target target)
{
    if (!p) return TSL_ERR_ARG;
    tsl_context *ctx = p->ctx;
    tsl_status tst = api_target_check(ctx, target, "tsl_program_run");
    if (tst) return tst;
    interp_tensor *views = NULL, here[ARGS_STACK];
    DLDevice dv = {kDLCPU, 0};
    tsl_status st = args_views_on(p, a, target, here, ARGS_STACK, &views, &dv);
    if (st) return st;
    tsl_diag *d = api_diag(ctx);
    diag_reset(d);
    rt_stats *rs = rt_stats_here();
    memset(rs, 0, sizeof *rs);
    double t0 = rt_now_ms();
    if (dv.device_type == kDLCUDA) {
        st = api_compiled_run_device(p, a->bound, views, dv.device_id, a->stream, a->al.alloc ? &a->al : NULL, a->sync,
                                     d);
    } else if (target == TSL_TARGET_INTERP) {
        st = interp_run(a->bound, views, d);
        rs->run_ms = rt_now_ms() - t0;
    } else if (!args_needs_carry(p)) {
        st = api_compiled_run(p, target, a, views, d);
    } else {
        interp_tensor *cv = NULL;
        char **owned = NULL;
        st = api_args_carry(p, views, &cv, &owned);
        if (!st) {
            diag_reset(d);
            st = api_compiled_run(p, target, a, cv, d);
        }
        api_args_uncarry(p, views, cv, owned, st == TSL_OK);
    }
    if (views != here) free(views);
    if (!st) a->ran = 1;
    p->last = (tsl_run_stats){.total_ms = rt_now_ms() - t0, .plan_ms = rs->plan_ms, .codegen_ms = rs->codegen_ms,
                              .compile_ms = rs->compile_ms, .load_ms = rs->load_ms, .run_ms = rs->run_ms,
                              .kernels = rs->kernels, .compiled = rs->compiled, .cached = rs->cached,
                              .loaded = rs->loaded};
    return st;
}

tsl_status tsl_program_run_stats(TSL_KEEP const tsl_program *p, tsl_run_stats *out)
{
    if (!p) return TSL_ERR_ARG;
    if (!out) return api_error(p->ctx, TSL_ERR_ARG, "tsl_program_run_stats: out is NULL");
    *out = p->last;
    return TSL_OK;
}

/* ---- the last call's descriptors ------------------------------------------------------------ */

static void args_seen_of(args_seen *s, const DLTensor *t)
{
    memset(s, 0, sizeof *s);
    s->ndim = -1;
    if (!t) return;
    memcpy(s->head, &t->device, ARGS_HEAD);
    s->ndim = t->ndim;
    s->has_data = t->data != NULL;
    s->has_strides = t->strides != NULL;
    s->byte_offset = t->byte_offset;
    for (int d = 0; d < t->ndim && d < TSL_MAX_RANK; d++) {
        s->shape[d] = t->shape[d];
        s->strides[d] = t->strides ? t->strides[d] : 0;
    }
}

static int args_seen_is(const args_seen *s, const DLTensor *t)
{
    if (!t) return s->ndim < 0;
    if (memcmp(&t->device, s->head, ARGS_HEAD) || s->ndim < 0 || (s->ndim > 0 && !t->shape) ||
        (t->data != NULL) != s->has_data || (t->strides != NULL) != s->has_strides || t->byte_offset != s->byte_offset)
        return 0;
    for (int d = 0; d < s->ndim; d++)
        if (t->shape[d] != s->shape[d] || (t->strides && t->strides[d] != s->strides[d])) return 0;
    return 1;
}

/* Do these descriptors read as those of the last call that ran, on its
 * target, with nothing set on the args since (and scalars where the def
 * has scalar parameters)? */
static int args_seen_same(const tsl_args *a, const DLTensor *const *tensors, const double *scalars, tsl_target target)
{
    const lang_def *def = a->p->def;
    if (!a->seen_valid || target != a->seen_target || (!scalars && a->has_scalars)) return 0;
    for (int i = 0; i < def->nparams + def->noutputs; i++)
        if ((i >= def->nparams || !def->params[i]->is_scalar) && !args_seen_is(&a->seen[i], tensors[i])) return 0;
    return 1;
}

/* tsl_args_bind's slots, unchecked: args_seen_same said they pass. */
static void args_bind_seen(tsl_args *a, const DLTensor *const *tensors, const double *scalars)
{
    const lang_def *def = a->p->def;
    for (int i = 0; i < def->nparams; i++) {
        const lang_tensor *lt = def->params[i];
        args_slot *sl = &a->slot[lt->index];
        if (lt->is_scalar) {
            sl->scalar = args_scalar_value(lt, scalars[i]);
            sl->has_scalar = 1;
        } else {
            sl->in = tensors[i];
        }
    }
    for (int j = 0; j < def->noutputs; j++)
        if (!(def->outputs[j]->flags & LANG_TENSOR_INPUT)) a->slot[def->outputs[j]->index].user_out = tensors[def->nparams + j];
    a->bound = NULL;
    a->ran = 0;
}

/* After a checked call ran: its descriptors (a scalar's entry is not
 * one: never read), target, device and the addresses its overlap check
 * passed are what the next call compares. An in/out output's entry given
 * (it must be its parameter's) keeps nothing: that is checked per call. */
static void args_seen_record(tsl_args *a, const DLTensor *const *tensors, tsl_target target)
{
    const lang_def *def = a->p->def;
    int ok = a->made != NULL && a->bound == a->made;
    for (int i = 0; i < def->nparams + def->noutputs; i++) {
        int scalar = i < def->nparams && def->params[i]->is_scalar;
        args_seen_of(&a->seen[i], scalar ? NULL : tensors[i]);
        if (i >= def->nparams && (def->outputs[i - def->nparams]->flags & LANG_TENSOR_INPUT) && tensors[i]) ok = 0;
    }
    a->seen_target = target;
    a->seen_dv = a->run_dv;
    a->seen_valid = ok;
    a->seen_bases_valid = ok;
}

tsl_status tsl_program_call(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, TSL_KEEP const DLTensor *const *tensors,
                            TSL_KEEP const double *scalars, tsl_target target)
{
    if (!p) return TSL_ERR_ARG;
    if (!a) return api_error(p->ctx, TSL_ERR_ARG, "tsl_program_call: args is NULL");
    int seen = a->p == p && tensors && args_seen_same(a, tensors, scalars, target);
    tsl_status st = TSL_OK;
    if (seen) args_bind_seen(a, tensors, scalars);
    else if ((st = tsl_args_bind(a, tensors, scalars))) return st;
    /* nothing can change the descriptors between this bind and the run:
     * each is checked once (the run's infer and output checks skip it),
     * or not at all when they read as last time */
    a->fresh = seen ? ARGS_SEEN : ARGS_CHECKED;
    st = tsl_program_run(p, a, target);
    a->fresh = 0;
    if (!st && !seen) args_seen_record(a, tensors, target);
    else if (!st) a->seen_bases_valid = 1;
    return st;
}
