/* tensor.c — host tensors owned by tessel (tsl_tensor_alloc/free) and the
 * checks applied to every DLPack descriptor a caller hands in. */
#include <stdarg.h>
#include <string.h>

#include "api/api.h"

/* One malloc'd block holds the descriptor and its shape; data is a second
 * block (aligned) so that tsl_tensor_free frees exactly two things. */
typedef struct owned_tensor {
    DLTensor t; /* first member: a DLTensor* is an owned_tensor* */
    int64_t shape[TSL_MAX_RANK];
} owned_tensor;

int64_t api_shape_numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0) return -1;
        if (shape[d] && n > INT64_MAX / shape[d]) return -1;
        n *= shape[d];
    }
    return n;
}

TSL_GIVE DLTensor *tsl_tensor_alloc(tsl_dtype dtype, int rank, const int64_t *shape)
{
    if ((unsigned)dtype >= TSL_DTYPE_COUNT || rank < 0 || rank > TSL_MAX_RANK) return NULL;
    if (rank > 0 && !shape) return NULL;
    int64_t n = api_shape_numel(rank, shape);
    if (n < 0 || (uint64_t)n > SIZE_MAX / 16) return NULL;
    owned_tensor *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    size_t bytes = tsl_dtype_nbytes(dtype, n); /* packed for low-bit dtypes */
    /* round up for aligned_alloc; never 0 so that data is never NULL */
    size_t alloc = (bytes + 63) / 64 * 64;
    if (alloc == 0) alloc = 64;
    o->t.data = aligned_alloc(64, alloc);
    if (!o->t.data) {
        free(o);
        return NULL;
    }
    memset(o->t.data, 0, alloc);
    for (int d = 0; d < rank; d++) o->shape[d] = shape[d];
    o->t.device.device_type = kDLCPU;
    o->t.device.device_id = 0;
    o->t.ndim = rank;
    o->t.dtype = tsl_dtype_to_dlpack(dtype);
    o->t.shape = o->shape;
    o->t.strides = NULL;
    o->t.byte_offset = 0;
    return &o->t;
}

void tsl_tensor_free(TSL_TAKE DLTensor *t)
{
    if (!t) return;
    free(t->data);
    free((owned_tensor *)t);
}

tsl_status api_error(tsl_context *ctx, tsl_status st, const char *fmt, ...)
{
    if (!ctx) return st;
    tsl_diag *d = api_diag(ctx);
    diag_reset(d);
    d->first = st;
    d->nerr = 1;
    sb_puts(&d->msg, "error: ");
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&d->msg, fmt, ap);
    va_end(ap);
    return st;
}

tsl_status api_tensor_check(tsl_context *ctx, const DLTensor *t, const char *what,
                            tsl_dtype *dtype)
{
    if (t && t->device.device_type == kDLCUDA)
        return api_error(ctx, TSL_ERR_ARG, "%s: only host (kDLCPU) tensors are accepted here, got a CUDA tensor",
                         what);
    return api_tensor_check_device(ctx, t, what, dtype);
}

tsl_status api_tensor_check_device(tsl_context *ctx, const DLTensor *t, const char *what, tsl_dtype *dtype)
{
    if (!t) return api_error(ctx, TSL_ERR_ARG, "%s: the tensor descriptor is NULL", what);
    if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost &&
        t->device.device_type != kDLCUDA)
        return api_error(ctx, TSL_ERR_ARG,
                         "%s: device type %d is not supported (host kDLCPU/kDLCUDAHost or kDLCUDA tensors are)",
                         what, (int)t->device.device_type);
    if (t->ndim < 0 || t->ndim > TSL_MAX_RANK)
        return api_error(ctx, TSL_ERR_ARG, "%s: rank %d is outside 0..%d", what, t->ndim,
                         TSL_MAX_RANK);
    if (t->ndim > 0 && !t->shape)
        return api_error(ctx, TSL_ERR_ARG, "%s: rank %d but shape is NULL", what, t->ndim);
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0)
            return api_error(ctx, TSL_ERR_ARG, "%s: dim %d has negative size %lld", what, d,
                             (long long)t->shape[d]);
    int64_t n = api_shape_numel(t->ndim, t->shape);
    if (n < 0) return api_error(ctx, TSL_ERR_ARG, "%s: element count overflows", what);
    if (tsl_dtype_from_dlpack(t->dtype, dtype) != 0)
        return api_error(ctx, TSL_ERR_ARG,
                         "%s: unsupported DLPack dtype (code %d, %d bits, %d lanes)", what,
                         (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes);
    if (n > 0 && !t->data) return api_error(ctx, TSL_ERR_ARG, "%s: data is NULL", what);
    if (dtype_is_packed(*dtype) && t->strides) { /* packed: compact C order only */
        int64_t want = 1;
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (t->shape[d] > 1 && t->strides[d] != want)
                return api_error(ctx, TSL_ERR_ARG,
                                 "%s: a packed %s tensor must be compact (C order); dim %d has "
                                 "stride %lld, not %lld",
                                 what, tsl_dtype_name(*dtype), d, (long long)t->strides[d],
                                 (long long)want);
            want *= t->shape[d];
        }
    }
    if (t->device.device_type == kDLCUDA && t->strides && n > 1) {
        /* the CUDA kernels take some tensors as flat 1-D runs: device
         * tensors must be C-contiguous (no copy is made on the device) */
        int64_t want = 1;
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (t->shape[d] != 1 && t->strides[d] != want) {
                strbuf b = {0};
                for (int k = 0; k < t->ndim; k++)
                    sb_printf(&b, "%s%lld", k ? ", " : "", (long long)t->strides[k]);
                tsl_status st = api_error(ctx, TSL_ERR_ARG,
                                          "%s on cuda:%d is not C-contiguous (strides (%s) in elements): device "
                                          "tensors are used in place and must be contiguous; make a contiguous "
                                          "copy first", what, t->device.device_id, sb_str(&b));
                sb_free(&b);
                return st;
            }
            want *= t->shape[d];
        }
    }
    return TSL_OK;
}

void api_tensor_strides(const DLTensor *t, int64_t strides[TSL_MAX_RANK])
{
    if (t->strides) {
        for (int d = 0; d < t->ndim; d++) strides[d] = t->strides[d];
        return;
    }
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= t->shape[d];
    }
}
