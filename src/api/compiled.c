/* compiled.c — the compiled targets' run path and their emitters.
 *
 * Run (TSL_TARGET_CPU): op graph -> sched_lower (one tile module and a
 * launch plan) -> for each launch, in order, cg_c_run with host buffers for
 * every tensor it names (the caller's, or contiguous copies of strided ones;
 * temporaries allocated zeroed per run), the def's scalars as typed scalar
 * arguments and the size symbols as int arguments. cg_c_run compiles through
 * rt_cpu, whose cache keys on the generated source, so a second run does not
 * recompile. A launch whose box is empty runs nothing. Run-time errors of a
 * kernel (an indirect index out of range: TSL_ERR_BOUNDS) come back with the
 * reference interpreter's located message (it reruns on the same inputs),
 * which names the tensor, dimension, index and bound.
 *
 * Emit: "tile" prints the plan and the module (sched_print), "c" the C of
 * every kernel (cg_c_emit), "cuda" their CUDA C (cg_cuda_emit). */
#include <string.h>

#include "api/api.h"
#include "codegen/codegen.h"
#include "codegen/cuda.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "sched/sched.h"

/* graph + schedule of p's def for target in arena a; NULL after
 * reporting into d. */
static sched_plan *compiled_plan(tsl_program *p, tsl_target target, int sm, tsl_arena *a, tsl_diag *d)
{
    graph *g = graph_build(a, p->def, d);
    sched_plan *plan = g ? sched_lower_sm(a, g, target, sm, d) : NULL;
    if (!plan) {
        if (!d->nerr) diag_error(d, TSL_ERR_INTERNAL, "scheduling '%s' failed", p->def->name);
        return NULL;
    }
    if (tile_verify(plan->m, NULL, d) != TSL_OK) {
        diag_error(d, TSL_ERR_INTERNAL, "internal: the schedule of '%s' does not verify", p->def->name);
        return NULL;
    }
    return plan;
}

tsl_status api_compiled_emit(tsl_program *p, const char *what, strbuf *out)
{
    tsl_diag *d = api_diag(p->ctx);
    diag_reset(d);
    tsl_arena *a = arena_create();
    if (!a) return api_error(p->ctx, TSL_ERR_NOMEM, "out of memory");
    /* c and tile:cpu print the CPU target's plan, cuda, ptx and tile:cuda
     * the CUDA target's, for the arch after a ':' (default sm_80); plain
     * tile is tile:cpu */
    char kind[16];
    const char *arch = strstr(what, ":sm_");
    size_t kl = arch ? (size_t)(arch - what) : strlen(what);
    snprintf(kind, sizeof kind, "%.*s", (int)(kl < sizeof kind ? kl : sizeof kind - 1), what);
    arch = arch ? arch + 1 : "sm_80";
    int ptx = !strcmp(kind, "ptx");
    int cuda = !strcmp(kind, "cuda") || !strcmp(kind, "tile:cuda") || ptx;
    sched_plan *plan = compiled_plan(p, cuda ? TSL_TARGET_CUDA : TSL_TARGET_CPU, sched_sm_of_arch(arch), a, d);
    tsl_status st = plan ? TSL_OK : d->first;
    if (plan && !strncmp(kind, "tile", 4)) {
        sched_print(out, plan);
    } else if (plan) {
        for (int i = 0; i < plan->nlaunches && !st; i++) {
            if (i) sb_putc(out, '\n');
            if (!cuda) {
                st = cg_c_emit(plan->m, plan->launches[i].k, out, d);
                continue;
            }
            strbuf src = {0};
            st = cg_cuda_emit(plan->m, plan->launches[i].k, &src, d);
            if (!st && ptx) {
                /* NVRTC needs no GPU: PTX for any arch, anywhere */
                char *text = NULL;
                rt_cuda_options o = {0};
                o.name = plan->launches[i].k->name;
                st = rt_cuda_compile_ptx(sb_str(&src), arch, &o, &text, d);
                if (!st) sb_puts(out, text);
                free(text);
            } else if (!st) {
                sb_puts(out, sb_str(&src));
            }
            sb_free(&src);
        }
    }
    arena_free(a);
    return st;
}

/* Is the view C-contiguous for its shape? */
int api_view_dense(const interp_tensor *v)
{
    int64_t want = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->stride[d] != want) return 0;
        want *= v->shape[d];
    }
    return 1;
}

/* Copy between a strided view and a C-order buffer (to_dense: view -> buf). */
void api_view_copy(const interp_tensor *v, char *buf, int to_dense)
{
    size_t es = tsl_dtype_size(v->dtype); /* byte-sized: packed views are dense */
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

/* Per def tensor: the DLTensor the kernels see, and owned memory if any. */
typedef struct compiled_buf {
    DLTensor dl;
    int64_t shape[TSL_MAX_RANK];
    char *owned;   /* a dense copy of a strided view */
    int copy_back; /* ... of an output */
} compiled_buf;

/* Dense C-order storage for every parameter and output: the caller's
 * memory when it is already dense, else a copy. Temporaries stay NULL
 * (sched_run allocates them). */
static tsl_status compiled_bind(const lang_def *def, const lang_bound *b, const interp_tensor *views,
                                compiled_buf *bufs, DLTensor **tensors, double *scalars, tsl_diag *d)
{
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        compiled_buf *cb = &bufs[i];
        if (t->is_scalar) {
            scalars[i] = views[i].scalar;
            continue;
        }
        if (t->flags & LANG_TENSOR_TEMP) continue;
        int64_t n = 1;
        for (int k = 0; k < t->rank; k++) {
            cb->shape[k] = b->shapes[i][k];
            n *= cb->shape[k];
        }
        size_t bytes = tsl_dtype_nbytes(views[i].dtype, n); /* a low-bit tensor's carrier (args.c) */
        char *data = views[i].base;
        if (!api_view_dense(&views[i])) {
            cb->owned = calloc(bytes ? bytes : 1, 1);
            if (!cb->owned) {
                diag_error(d, TSL_ERR_NOMEM, "out of memory for a dense copy of '%s' (%zu bytes)", t->name, bytes);
                return TSL_ERR_NOMEM;
            }
            data = cb->owned;
            api_view_copy(&views[i], data, 1);
            cb->copy_back = (t->flags & LANG_TENSOR_OUTPUT) != 0;
        }
        cb->dl.data = data;
        cb->dl.device.device_type = kDLCPU;
        cb->dl.ndim = t->rank;
        cb->dl.dtype = tsl_dtype_to_dlpack(views[i].dtype);
        cb->dl.shape = cb->shape;
        cb->dl.strides = NULL;
        tensors[i] = &cb->dl;
    }
    return TSL_OK;
}

static tsl_status compiled_cpu_kernel(void *ctx, const tile_module *m, const tile_kernel *k,
                                      const tile_interp_arg *args, int nargs, tsl_diag *d)
{
    (void)ctx;
    return cg_c_run(m, k, args, nargs, d);
}

tsl_status api_compiled_run(tsl_program *p, const lang_bound *b, const struct interp_tensor *views,
                            tsl_diag *d)
{
    tsl_arena *a = arena_create();
    const lang_def *def = p->def;
    int n = def->ntensors;
    compiled_buf *bufs = calloc((size_t)n + 1, sizeof *bufs);
    DLTensor **tensors = calloc((size_t)n + 1, sizeof *tensors);
    double *scalars = calloc((size_t)n + 1, sizeof *scalars);
    tsl_status st = TSL_OK;
    if (!a || !bufs || !tensors || !scalars) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        st = TSL_ERR_NOMEM;
    }
    sched_plan *plan = st ? NULL : compiled_plan(p, TSL_TARGET_CPU, 0, a, d);
    if (!st && !plan) st = d->first ? d->first : TSL_ERR_INTERNAL;
    if (!st) st = compiled_bind(def, b, views, bufs, tensors, scalars, d);
    if (!st) st = sched_run(plan, b, tensors, scalars, compiled_cpu_kernel, NULL, d);
    if (st == TSL_ERR_BOUNDS) {
        /* An index out of range: the reference interpreter on the same
         * inputs says where in the TC source, in its words. */
        char *kernel_msg = strdup(sb_str(&d->msg));
        diag_reset(d);
        if (interp_run(b, views, d) == TSL_OK || !d->nerr) {
            const char *m = kernel_msg ? kernel_msg : "index out of range";
            if (!strncmp(m, "error: ", 7)) m += 7;
            size_t len = strlen(m);
            while (len && m[len - 1] == '\n') len--;
            diag_reset(d);
            diag_error(d, TSL_ERR_BOUNDS, "%.*s", (int)len, m);
        }
        free(kernel_msg);
    }
    for (int i = 0; bufs && i < n; i++) {
        if (!st && bufs[i].copy_back) api_view_copy(&views[i], bufs[i].owned, 0);
        free(bufs[i].owned);
    }
    free(bufs);
    free(tensors);
    free(scalars);
    arena_free(a);
    return st;
}
