/* cli_tensor.c — host-tensor helpers for `tessel run`: random inputs,
 * conversion, one-line summaries, comparison. Element values go through
 * base's dtype_load/dtype_store, so every dtype (f16/bf16 included) is
 * handled in one place. */
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "cli_tensor.h"

#define SUMMARY_FIRST 6      /* values shown in a summary line */
#define PRINT_ALL_LIMIT 4096 /* `--print` prints tensors up to this size whole */

void cli_rng_seed(cli_rng *r, uint64_t seed)
{
    r->state = seed;
}

uint64_t cli_rng_next(cli_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t cli_rng_fresh_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t h = hash_u64(HASH_SEED, (uint64_t)ts.tv_sec);
    h = hash_u64(h, (uint64_t)ts.tv_nsec);
    h = hash_u64(h, (uint64_t)getpid());
    return hash_u64(h, (uint64_t)(uintptr_t)&ts);
}

int64_t cli_tensor_numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

int cli_tensor_dtype(const DLTensor *t, tsl_dtype *out)
{
    return tsl_dtype_from_dlpack(t->dtype, out);
}

/* Element offset (in elements) of the element with row-major linear index
 * `lin`; a packed low-bit tensor is always compact. */
static int64_t elem_off(const DLTensor *t, int64_t lin)
{
    if (!t->strides) return lin;
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t ext = t->shape[d];
        off += (lin % ext) * t->strides[d]; /* strides are in elements */
        lin /= ext;
    }
    return off;
}

static char *data_of(const DLTensor *t)
{
    return (char *)t->data + t->byte_offset;
}

static double load(const DLTensor *t, tsl_dtype dt, int64_t i)
{
    return dtype_get(dt, data_of(t), elem_off(t, i));
}

static void store(DLTensor *t, tsl_dtype dt, int64_t i, double v)
{
    dtype_set(dt, data_of(t), elem_off(t, i), v);
}

/* A low-bit float's random value: a uniformly drawn finite code, so every
 * value of the format appears (docs/lowbit.md). */
static double random_lowfloat(tsl_dtype dt, uint64_t x)
{
    const dtype_info *d = dtype_info_of(dt);
    for (;; x = x * 6364136223846793005ull + 1442695040888963407ull) {
        uint64_t code = (x >> 40) & ((1u << d->bits) - 1);
        double v = dtype_lowfloat_decode(d->desc, (uint32_t)code);
        if (isfinite(v)) return v;
    }
}

void cli_tensor_fill_random(DLTensor *t, cli_rng *r)
{
    tsl_dtype dt;
    if (cli_tensor_dtype(t, &dt)) return;
    const dtype_info *info = dtype_info_of(dt);
    int64_t n = cli_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = cli_rng_next(r);
        double v;
        if (dt == TSL_DTYPE_BOOL)
            v = (double)(x >> 63);
        else if (info->is_float && info->bits <= 8)
            v = random_lowfloat(dt, x);
        else if (!info->is_float && info->bits < 8) /* low-bit: the whole range */
            v = (double)(dtype_int_min(dt) + (int64_t)((x >> 32) % (uint64_t)(dtype_int_max(dt) - dtype_int_min(dt) + 1)));
        else if (info->is_float)
            v = (double)(x >> 11) * 0x1p-53 * 2.0 - 1.0; /* [-1, 1) */
        else if (info->is_signed)
            v = (double)(int)(x >> 60) - 8.0; /* [-8, 8) */
        else
            v = (double)(x >> 61); /* [0, 8) */
        store(t, dt, i, v);
    }
}

void cli_tensor_fill_range(DLTensor *t, cli_rng *r, int64_t lo, int64_t hi)
{
    tsl_dtype dt;
    if (cli_tensor_dtype(t, &dt) || hi <= lo) return;
    int64_t n = cli_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        store(t, dt, i, (double)(lo + (int64_t)(cli_rng_next(r) % (uint64_t)(hi - lo))));
}

DLTensor *cli_tensor_convert(const DLTensor *src, tsl_dtype to)
{
    tsl_dtype from;
    if (cli_tensor_dtype(src, &from)) return NULL;
    DLTensor *dst = tsl_tensor_alloc(to, src->ndim, src->shape);
    if (!dst) return NULL;
    int64_t n = cli_tensor_numel(src);
    for (int64_t i = 0; i < n; i++) store(dst, to, i, load(src, from, i));
    return dst;
}

int64_t cli_tensor_check_range(const DLTensor *src, tsl_dtype to, double *bad)
{
    tsl_dtype from;
    const dtype_info *d = dtype_info_of(to);
    if (cli_tensor_dtype(src, &from) || d->is_float || to == TSL_DTYPE_BOOL || d->bits >= 64) return -1;
    int64_t n = cli_tensor_numel(src);
    double lo = (double)dtype_int_min(to), hi = (double)dtype_int_max(to);
    for (int64_t i = 0; i < n; i++) {
        double v = load(src, from, i);
        if (!(v >= lo && v <= hi && v == floor(v))) {
            *bad = v;
            return i;
        }
    }
    return -1;
}

DLTensor *cli_tensor_packed_bytes(const DLTensor *src)
{
    tsl_dtype dt;
    if (cli_tensor_dtype(src, &dt)) return NULL;
    int64_t n = cli_tensor_numel(src), nb = (int64_t)tsl_dtype_nbytes(dt, n);
    int64_t shape[1] = {nb};
    DLTensor *dst = dtype_is_packed(dt) ? tsl_tensor_alloc(TSL_DTYPE_U8, 1, shape)
                                        : tsl_tensor_alloc(TSL_DTYPE_U8, src->ndim, src->shape);
    if (!dst) return NULL;
    if (dtype_is_packed(dt) || tsl_dtype_size(dt) == 1) {
        if (nb) memcpy(dst->data, data_of(src), (size_t)nb); /* packed tensors are compact */
    } else {
        tsl_tensor_free(dst);
        return NULL;
    }
    return dst;
}

DLTensor *cli_tensor_copy(const DLTensor *src)
{
    tsl_dtype dt;
    if (cli_tensor_dtype(src, &dt)) return NULL;
    return cli_tensor_convert(src, dt);
}

void cli_tensor_describe(char *buf, size_t cap, const char *name, const DLTensor *t)
{
    tsl_dtype dt;
    const char *dname = cli_tensor_dtype(t, &dt) ? "?" : tsl_dtype_name(dt);
    size_t len = (size_t)snprintf(buf, cap, "%s(", name);
    for (int d = 0; d < t->ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? "," : "",
                                (long long)t->shape[d]);
    if (len < cap) snprintf(buf + len, cap - len, ") %s", dname);
}

static void print_value(FILE *f, tsl_dtype dt, double v)
{
    if (dtype_info_of(dt)->is_float)
        fprintf(f, "%.6g", v);
    else
        fprintf(f, "%.0f", v);
}

void cli_tensor_print_summary(FILE *f, const char *name, const DLTensor *t, int all)
{
    tsl_dtype dt;
    char desc[256];
    cli_tensor_describe(desc, sizeof desc, name, t);
    if (cli_tensor_dtype(t, &dt)) {
        fprintf(f, "  %s: unsupported dtype\n", desc);
        return;
    }
    int64_t n = cli_tensor_numel(t);
    if (n == 0) {
        fprintf(f, "  %s: empty\n", desc);
        return;
    }
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    int64_t nans = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = load(t, dt, i);
        if (isnan(v)) {
            nans++;
            continue;
        }
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        sum += v;
    }
    fprintf(f, "  %s: min ", desc);
    print_value(f, dt, mn);
    fprintf(f, " max ");
    print_value(f, dt, mx);
    fprintf(f, " mean %.6g", n > nans ? sum / (double)(n - nans) : NAN);
    if (nans) fprintf(f, " (%lld NaN)", (long long)nans);
    int64_t show = (all && n <= PRINT_ALL_LIMIT) ? n : (n < SUMMARY_FIRST ? n : SUMMARY_FIRST);
    fprintf(f, "%s", show == n ? "; values:" : "; first:");
    for (int64_t i = 0; i < show; i++) {
        fputc(' ', f);
        print_value(f, dt, load(t, dt, i));
    }
    if (show < n) fprintf(f, " ...");
    fputc('\n', f);
}

double cli_tensor_max_rel_error(const DLTensor *got, const DLTensor *ref)
{
    tsl_dtype dg, dr;
    if (cli_tensor_dtype(got, &dg) || cli_tensor_dtype(ref, &dr)) return INFINITY;
    if (got->ndim != ref->ndim) return INFINITY;
    for (int d = 0; d < got->ndim; d++)
        if (got->shape[d] != ref->shape[d]) return INFINITY;
    int exact = !dtype_info_of(dr)->is_float;
    int64_t n = cli_tensor_numel(ref);
    double maxdiff = 0, maxref = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = load(got, dg, i), b = load(ref, dr, i);
        if (isnan(a) || isnan(b)) {
            if (isnan(a) && isnan(b)) continue;
            return INFINITY;
        }
        if (isinf(a) || isinf(b)) {
            if (a == b) continue;
            return INFINITY;
        }
        double diff = fabs(a - b);
        maxdiff = diff > maxdiff ? diff : maxdiff;
        maxref = fabs(b) > maxref ? fabs(b) : maxref;
    }
    if (exact) return maxdiff;
    return maxdiff / (maxref > 1.0 ? maxref : 1.0);
}

/* The base tolerance of a dtype, grown with the length of the longest
 * reduction behind the output: past 256 terms, by sqrt(len / 256) (the
 * typical growth of rounding errors that do not cancel: 1e6 f32 terms
 * get 6e-4). Integers: exact. */
double cli_dtype_tolerance(tsl_dtype t, int64_t len)
{
    double base;
    switch (t) {
    case TSL_DTYPE_F64: base = 1e-12; break;
    case TSL_DTYPE_F32: base = 1e-5; break;
    case TSL_DTYPE_F16:
    case TSL_DTYPE_BF16: base = 1e-2; break;
    default: /* a low-bit float: one step of its mantissa */
        if (!dtype_info_of(t)->is_float) return 0.0;
        base = ldexp(1.0, -dtype_info_of(t)->desc.man);
        break;
    }
    return len > 256 ? base * sqrt((double)len / 256) : base;
}
