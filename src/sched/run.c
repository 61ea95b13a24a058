/* run.c — executing a launch plan on the host: temporaries allocated
 * (zeroed, as the reference interpreter has them) for the run, then every
 * launch in order with its arguments bound by name, through a kernel runner
 * the caller gives (cg_c_run for the CPU target, the tile interpreter in
 * tests). Launches over an empty box run nothing. */
#include <string.h>

#include "sched/sched.h"

tsl_status sched_run(const sched_plan *p, const lang_bound *b, DLTensor *const *tensors, const double *scalars,
                     sched_kernel_fn fn, void *ctx, tsl_diag *d)
{
    const lang_def *def = p->def;
    int n = def->ntensors;
    DLTensor *temps = calloc((size_t)n + 1, sizeof *temps);
    void **owned = calloc((size_t)n + 1, sizeof *owned);
    tsl_status st = TSL_OK;
    if (!temps || !owned) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        st = TSL_ERR_NOMEM;
    }
    for (int i = 0; !st && i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || tensors[i] || !sched_tensor_used(p, i)) continue;
        int64_t cnt = 1;
        for (int k = 0; k < t->rank; k++) cnt *= b->shapes[i][k];
        tsl_dtype cdt = dtype_carrier(t->dtype); /* a low-bit temporary: its carrier (lowbit.c) */
        size_t bytes = tsl_dtype_nbytes(cdt, cnt);
        owned[i] = calloc(bytes ? bytes : 1, 1);
        if (!owned[i]) {
            diag_error(d, TSL_ERR_NOMEM, "out of memory for the temporary '%s' (%zu bytes)", t->name, bytes);
            st = TSL_ERR_NOMEM;
            break;
        }
        temps[i].data = owned[i];
        temps[i].device.device_type = kDLCPU;
        temps[i].ndim = t->rank;
        temps[i].dtype = tsl_dtype_to_dlpack(cdt);
        temps[i].shape = b->shapes[i];
    }
    /* the plan's own buffers (partials between launches) */
    void **scr = calloc((size_t)p->nscratch + 1, sizeof *scr);
    DLTensor *scrt = calloc((size_t)p->nscratch + 1, sizeof *scrt);
    if (!st && (!scr || !scrt)) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        st = TSL_ERR_NOMEM;
    }
    for (int i = 0; !st && i < p->nscratch; i++) {
        const sched_scratch *sc = &p->scratch[i];
        scr[i] = calloc((size_t)sc->count + 1, tsl_dtype_size(sc->dtype));
        if (!scr[i]) {
            diag_error(d, TSL_ERR_NOMEM, "out of memory for the plan's scratch (%lld elements)", (long long)sc->count);
            st = TSL_ERR_NOMEM;
            break;
        }
        scrt[i].data = scr[i];
        scrt[i].device.device_type = kDLCPU;
        scrt[i].ndim = 1;
        scrt[i].dtype = tsl_dtype_to_dlpack(sc->dtype);
        scrt[i].shape = &p->scratch[i].count;
    }
    tile_interp_arg *args = NULL;
    DLTensor *flat = NULL; /* per argument: a 1-D view for flat arguments, a u8 one for bytes */
    int64_t *flatn = NULL, *bshape = NULL;
    for (int i = 0; !st && i < p->nlaunches; i++) {
        const sched_launch *l = &p->launches[i];
        if (sched_launch_lanes(p, l, b) == 0) continue;
        free(args);
        free(flat);
        free(flatn);
        free(bshape);
        args = calloc((size_t)l->nargs + 1, sizeof *args);
        flat = calloc((size_t)l->nargs + 1, sizeof *flat);
        flatn = calloc((size_t)l->nargs + 1, sizeof *flatn);
        bshape = calloc((size_t)(l->nargs + 1) * TSL_MAX_RANK, sizeof *bshape);
        if (!args || !flat || !flatn || !bshape) {
            diag_error(d, TSL_ERR_NOMEM, "out of memory");
            st = TSL_ERR_NOMEM;
            break;
        }
        for (int j = 0; j < l->nargs; j++) {
            const sched_arg *sa = &l->args[j];
            args[j].name = sa->name;
            if (sa->kind == SCHED_ARG_TENSOR) {
                args[j].t = tensors[sa->tensor] ? tensors[sa->tensor] : &temps[sa->tensor];
                if (sa->flat) {
                    flat[j] = *args[j].t;
                    flatn[j] = 1;
                    for (int k = 0; k < args[j].t->ndim; k++) flatn[j] *= args[j].t->shape[k];
                    flat[j].ndim = 1;
                    flat[j].shape = &flatn[j];
                    flat[j].strides = NULL;
                    args[j].t = &flat[j];
                } else if (sa->bytes || sa->rows) {
                    sched_arg_view(p, l, sa, b, args[j].t, &flat[j], &bshape[j * TSL_MAX_RANK]);
                    args[j].t = &flat[j];
                }
            } else if (sa->kind == SCHED_ARG_SCRATCH) {
                args[j].t = &scrt[sa->scratch];
            } else if (sa->kind == SCHED_ARG_SCALAR) {
                if (dtype_info_of(def->tensors[sa->tensor]->dtype)->is_float)
                    args[j] = tile_interp_arg_float(sa->name, scalars[sa->tensor]);
                else
                    args[j].ival = (int64_t)scalars[sa->tensor];
            } else {
                args[j].ival = sched_arg_int(p, sa, b);
            }
        }
        st = fn(ctx, p->m, l->k, args, l->nargs, d);
    }
    free(args);
    free(flat);
    free(flatn);
    for (int i = 0; scr && i < p->nscratch; i++) free(scr[i]);
    free(scr);
    free(scrt);
    free(bshape);
    for (int i = 0; owned && i < n; i++) free(owned[i]);
    free(owned);
    free(temps);
    return st;
}
