/* tensor.c — host tensors owned by tessel (tsl_tensor_alloc/free), the
 * checks applied to every DLPack descriptor a caller hands in, and the
 * check of a descriptor against the buffer its caller vouches for
 * (tsl_tensor_check_buffer). */
#include <stdarg.h>
#include <stdlib.h>
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
    if (t->strides && n > 0) {
        /* every element must lie within the address space of data +
         * byte_offset (2^47 bytes either way: x86-64 and AArch64 user
         * space): a stride past that is a mistake that would fault, not a
         * buffer. Negative strides are fine (NumPy's reversed views). */
        const int64_t lim = (int64_t)1 << 47;
        int64_t lo = 0, hi = 0, esz = (int64_t)tsl_dtype_size(*dtype);
        for (int d = 0; d < t->ndim; d++) {
            int64_t r;
            if (t->shape[d] == 1) continue;
            if (__builtin_mul_overflow(t->shape[d] - 1, t->strides[d], &r) || __builtin_mul_overflow(r, esz, &r) ||
                r > lim || r < -lim)
                return api_error(ctx, TSL_ERR_ARG, "%s: dim %d (size %lld, stride %lld) reaches beyond the address space",
                                 what, d, (long long)t->shape[d], (long long)t->strides[d]);
            if (r < 0) lo += r;
            else hi += r;
        }
        if (hi > lim || lo < -lim || (int64_t)t->byte_offset > lim)
            return api_error(ctx, TSL_ERR_ARG, "%s: its strides reach %lld bytes past data, beyond the address space",
                             what, (long long)hi);
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

tsl_status api_tensor_check_distinct(tsl_context *ctx, const DLTensor *t, const char *what)
{
    if (!t->strides) return TSL_OK;
    /* dims by |stride|: each must step past everything the smaller ones
     * span, or two indices share an element (a stride of 0 on a dim of 2
     * or more, say). Sufficient, and what every compact or sliced layout
     * satisfies. */
    int ord[TSL_MAX_RANK], m = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) return TSL_OK;
        if (t->shape[d] > 1) ord[m++] = d;
    }
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && llabs(t->strides[ord[j]]) < llabs(t->strides[ord[j - 1]]); j--) {
            int x = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = x;
        }
    int64_t span = 0; /* the largest offset the smaller dims reach */
    for (int i = 0; i < m; i++) {
        int d = ord[i];
        int64_t s = llabs(t->strides[d]);
        if (s <= span)
            return api_error(ctx, TSL_ERR_ARG,
                             "%s: dim %d's stride %lld makes two of its elements one memory location (an "
                             "output's elements must be distinct)",
                             what, d, (long long)t->strides[d]);
        span += (t->shape[d] - 1) * s; /* bounded by api_tensor_check */
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

/* "(5, 3)": shape or strides, for messages. */
static void tensor_describe_dims(strbuf *b, int rank, const int64_t *v)
{
    sb_putc(b, '(');
    for (int d = 0; d < rank; d++) sb_printf(b, "%s%lld", d ? ", " : "", (long long)v[d]);
    sb_puts(b, rank == 1 ? ",)" : ")");
}

/* The element indices (out) that reach furthest back (low) or forward, and
 * the dims that move them there ("dim 0 (size 4, stride -3)"). */
static void tensor_describe_corner(strbuf *b, const DLTensor *t, const int64_t *strides, int low)
{
    int64_t idx[TSL_MAX_RANK];
    for (int d = 0; d < t->ndim; d++) idx[d] = (strides[d] < 0) == low ? t->shape[d] - 1 : 0;
    sb_puts(b, "element ");
    tensor_describe_dims(b, t->ndim, idx);
    int any = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 2 || !strides[d] || (strides[d] < 0) != low) continue;
        sb_printf(b, "%s dim %d (size %lld, stride %lld)", any ? "," : ", reached through", d,
                  (long long)t->shape[d], (long long)strides[d]);
        any = 1;
    }
}

tsl_status tsl_tensor_check_buffer(TSL_KEEP tsl_context *ctx, TSL_KEEP const DLTensor *t,
                                   TSL_KEEP const void *buffer, size_t bytes)
{
    const char *fn = "tsl_tensor_check_buffer";
    tsl_status st;
    tsl_dtype dt;
    if (!t) return api_error(ctx, TSL_ERR_ARG, "%s: the tensor descriptor is NULL", fn);
    if (t->ndim < 0 || t->ndim > TSL_MAX_RANK)
        return api_error(ctx, TSL_ERR_ARG, "%s: rank %d is outside 0..%d", fn, t->ndim, TSL_MAX_RANK);
    if (t->ndim > 0 && !t->shape) return api_error(ctx, TSL_ERR_ARG, "%s: rank %d but shape is NULL", fn, t->ndim);
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0)
            return api_error(ctx, TSL_ERR_ARG, "%s: dim %d has negative size %lld", fn, d, (long long)t->shape[d]);
        if (t->shape[d] == 0) return TSL_OK; /* no element: nothing is addressed */
    }
    if (api_shape_numel(t->ndim, t->shape) < 0)
        return api_error(ctx, TSL_ERR_ARG, "%s: the element count overflows", fn);
    if (tsl_dtype_from_dlpack(t->dtype, &dt) != 0)
        return api_error(ctx, TSL_ERR_ARG, "%s: unsupported DLPack dtype (code %d, %d bits, %d lanes)", fn,
                         (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes);
    int64_t strides[TSL_MAX_RANK];
    api_tensor_strides(t, strides);
    /* In bits from data + byte_offset (packed low-bit dtypes address
     * parts of bytes): the first element's first bit lo, the last's last
     * bit + 1 hi. Each dim's reach is (size - 1) * stride elements. */
    const int64_t bits = tsl_dtype_bits(dt), lim = INT64_MAX / 16;
    int64_t lo = 0, hi = bits;
    for (int d = 0; d < t->ndim; d++) {
        int64_t r;
        if (__builtin_mul_overflow(t->shape[d] - 1, strides[d], &r) || __builtin_mul_overflow(r, bits, &r) ||
            r > lim || r < -lim || (r < 0 ? lo < -lim - r : hi > lim - r))
            return api_error(ctx, TSL_ERR_ARG,
                             "%s: dim %d (size %lld, stride %lld) reaches beyond any buffer (the offset "
                             "overflows)", fn, d, (long long)t->shape[d], (long long)strides[d]);
        if (r < 0) lo += r;
        else hi += r;
    }
    /* where data + byte_offset lies from buffer's start, in bytes; a
     * distance past `cap` (2^56 bytes, beyond any address space) is an
     * error whatever the strides say */
    const int64_t cap = lim / 8;
    uintptr_t start = (uintptr_t)t->data, base = (uintptr_t)buffer;
    uint64_t off = t->byte_offset;
    if (bytes > (uint64_t)cap || base + bytes < base)
        return api_error(ctx, TSL_ERR_ARG, "%s: a buffer of %zu bytes at %p does not fit the address space", fn, bytes,
                         buffer);
    uintptr_t dist = start >= base ? start - base : base - start;
    int far = dist > (uintptr_t)cap || off > (uint64_t)cap;
    int64_t rel = far ? (start >= base || off > (uint64_t)cap ? cap : -cap) : (start >= base ? (int64_t)dist : -(int64_t)dist) + (int64_t)off;
    /* bytes [first, end): the lowest byte an element touches, one past the highest */
    int64_t first = rel + (lo >= 0 ? lo / 8 : -((-lo + 7) / 8)), end = rel + (hi + 7) / 8;
    if (!far && first >= 0 && (uint64_t)end <= bytes) return TSL_OK;
    strbuf b = {0};
    if (!buffer) {
        sb_puts(&b, "the buffer is NULL but the tensor addresses elements");
    } else if (first < 0) {
        sb_printf(&b, "its elements start %lld bytes before the buffer's start: ", (long long)-first);
        tensor_describe_corner(&b, t, strides, 1);
    } else {
        sb_printf(&b, "its elements end %lld bytes past the buffer's end (%zu bytes): ", (long long)(end - (int64_t)bytes),
                  bytes);
        tensor_describe_corner(&b, t, strides, 0);
    }
    strbuf sh = {0}, sd = {0};
    tensor_describe_dims(&sh, t->ndim, t->shape);
    tensor_describe_dims(&sd, t->ndim, strides);
    st = api_error(ctx, TSL_ERR_ARG, "%s: the %s tensor of shape %s, strides %s%s and byte_offset %llu does not fit its "
                   "buffer: %s", fn, tsl_dtype_name(dt), sb_str(&sh), sb_str(&sd), t->strides ? "" : " (C order)",
                   (unsigned long long)off, sb_str(&b));
    sb_free(&b);
    sb_free(&sh);
    sb_free(&sd);
    return st;
}
