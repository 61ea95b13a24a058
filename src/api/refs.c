/* refs.c — calls from language bindings whose tensors live in the
 * framework's own objects: tsl_program_call_refs reads each DLTensor
 * through a reference (a DLPack capsule, say) so that a binding needs no
 * foreign call per tensor, and tsl_dlpack_fill describes a whole call's
 * framework tensors through the framework's DLPack exchange API (DLPack
 * 1.2's DLPackExchangeAPI: one C call instead of one `__dlpack__` per
 * tensor); tsl_program_call_dlpack does both in one foreign call. None
 * knows Python: objects are opaque pointers, the lock a pair of hooks. */
#include <string.h>

#include "api/api.h"

/* DLManagedTensorVersioned (DLPack >= 1.0): version (8 bytes),
 * manager_ctx, deleter, flags, then the DLTensor. */
enum { REFS_VERSIONED_TENSOR = 32 };

tsl_status tsl_program_call_refs(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, TSL_KEEP const void *const *refs,
                                 TSL_KEEP const uint8_t *kinds, size_t ref_at, TSL_KEEP const double *scalars,
                                 tsl_target target)
{
    if (!p) return TSL_ERR_ARG;
    if (!refs || !kinds) return api_error(p->ctx, TSL_ERR_ARG, "tsl_program_call_refs: refs or kinds is NULL");
    int n = tsl_program_param_count(p) + tsl_program_output_count(p);
    const DLTensor *here[32], **ts = n <= 32 ? here : malloc(sizeof *ts * (size_t)n);
    if (!ts) return api_error(p->ctx, TSL_ERR_NOMEM, "out of memory");
    tsl_status st = TSL_OK;
    for (int i = 0; i < n && !st; i++) {
        const char *r = refs[i];
        int indirect = kinds[i] == TSL_REF_MANAGED || kinds[i] == TSL_REF_VERSIONED;
        const char *m = r && indirect ? *(const char *const *)(r + ref_at) : NULL;
        switch ((tsl_ref_kind)kinds[i]) {
        case TSL_REF_NONE: ts[i] = NULL; break;
        case TSL_REF_TENSOR: ts[i] = (const DLTensor *)r; break;
        case TSL_REF_MANAGED: ts[i] = (const DLTensor *)m; break; /* the DLTensor is its first member */
        case TSL_REF_VERSIONED: ts[i] = m ? (const DLTensor *)(m + REFS_VERSIONED_TENSOR) : NULL; break;
        default:
            st = api_error(p->ctx, TSL_ERR_ARG, "tsl_program_call_refs: kinds[%d] is %d, not a tsl_ref_kind", i,
                           (int)kinds[i]);
        }
        if (!st && kinds[i] != TSL_REF_NONE && !ts[i])
            st = api_error(p->ctx, TSL_ERR_ARG, "tsl_program_call_refs: reference %d leads to no tensor", i);
    }
    if (!st) st = tsl_program_call(p, a, ts, scalars, target);
    if (ts != here) free(ts);
    return st;
}

/* The parts of DLPack 1.2's DLPackExchangeAPI used here (dlpack.h: a
 * version header, then five function pointers, the fourth filling a
 * caller's DLTensor from an object without taking ownership). Declared
 * here since the DLPack headers in use may predate it. */
typedef struct refs_exchange_api {
    uint32_t major, minor;
    const void *prev_api;
    void *managed_tensor_allocator;
    void *managed_tensor_from_py_object_no_sync;
    void *managed_tensor_to_py_object_no_sync;
    int (*dltensor_from_py_object_no_sync)(void *obj, DLTensor *out);
    int (*current_work_stream)(DLDeviceType device_type, int32_t device_id, void **out_stream);
} refs_exchange_api;

int tsl_dlpack_fill(TSL_KEEP const void *exchange_api, void *const *objects, int n, DLTensor *out, DLDevice *device)
{
    const refs_exchange_api *api = exchange_api;
    if (!api || api->major != 1 || api->minor < 2 || !api->dltensor_from_py_object_no_sync || n < 0 ||
        (n > 0 && (!objects || !out)))
        return TSL_DLPACK_UNUSABLE;
    int result = 0;
    for (int i = 0; i < n; i++) {
        DLTensor *t = &out[i];
        if (api->dltensor_from_py_object_no_sync(objects[i], t) != 0) return -1 - i;
        if (i == 0 && device) *device = t->device;
        if (device && (t->device.device_type != device->device_type || t->device.device_id != device->device_id))
            result = TSL_DLPACK_OTHER_WAY;
        /* device tensors are taken in place and must be C-contiguous: a
         * binding copies the others itself (or reports them) */
        if (t->device.device_type == kDLCUDA && t->strides) {
            int64_t want = 1;
            for (int d = t->ndim - 1; d >= 0; d--) {
                if (t->shape[d] != 1 && t->strides[d] != want) result = TSL_DLPACK_OTHER_WAY;
                want *= t->shape[d];
            }
        }
    }
    return result;
}

/* Why a call ran nothing: c->fill = why, the message in p's context. */
static tsl_status refs_not_run(tsl_program *p, tsl_dlpack_call *c, int why)
{
    const char *fn = "tsl_program_call_dlpack";
    c->fill = why;
    if (why < 0)
        return api_error(p->ctx, TSL_ERR_ARG, "%s: the framework refused object %d (its own error is set)", fn,
                         -1 - why);
    switch (why) {
    case TSL_DLPACK_OTHER_WAY:
        return api_error(p->ctx, TSL_ERR_ARG,
                         "%s: the tensors are on two devices, or a device tensor is not C-contiguous "
                         "(describe them another way)", fn);
    case TSL_DLPACK_SETUP:
        return api_error(p->ctx, TSL_ERR_ARG, "%s: the tensors are on cuda:%d, which the args are not set up for",
                         fn, c->device.device_id);
    case TSL_DLPACK_NO_STREAM:
        return api_error(p->ctx, TSL_ERR_ARG, "%s: the framework gave no current stream for cuda:%d", fn,
                         c->device.device_id);
    default:
        return api_error(p->ctx, TSL_ERR_ARG,
                         "%s: exchange_api is not a DLPack >= 1.2 exchange API with dltensor_from_py_object_no_sync",
                         fn);
    }
}

tsl_status tsl_program_call_dlpack(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, TSL_KEEP tsl_dlpack_call *c, int sync)
{
    if (!p) return TSL_ERR_ARG;
    if (!a || !c) return api_error(p->ctx, TSL_ERR_ARG, "tsl_program_call_dlpack: args or call is NULL");
    c->device = (DLDevice){kDLCPU, 0};
    int r = tsl_dlpack_fill(c->exchange_api, c->objects, c->n, c->filled, &c->device);
    if (r) return refs_not_run(p, c, r);
    tsl_target target = c->host_target;
    if (c->device.device_type == kDLCUDA) {
        const refs_exchange_api *api = c->exchange_api;
        void *stream = NULL;
        if (c->ready.device_type != kDLCUDA || c->ready.device_id != c->device.device_id)
            return refs_not_run(p, c, TSL_DLPACK_SETUP);
        if (api->current_work_stream && api->current_work_stream(kDLCUDA, c->device.device_id, &stream) != 0)
            return refs_not_run(p, c, TSL_DLPACK_NO_STREAM);
        tsl_args_set_stream(a, stream);
        tsl_args_set_sync(a, sync);
        target = c->device_target;
    }
    c->fill = 0;
    /* the objects are not read past this point: the run needs no lock */
    void *held = c->unlock && c->relock ? c->unlock() : NULL;
    tsl_status st = tsl_program_call(p, a, c->tensors, c->scalars, target);
    if (c->unlock && c->relock) c->relock(held);
    return st;
}
