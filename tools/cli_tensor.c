/* cli_tensor.c — host-tensor helpers for `tessel run`: random inputs,
 * conversion, one-line summaries, comparison. Element values go through
 * base's dtype_load/dtype_store, so every dtype (f16/bf16 included) is
 * handled in one place. */
#include <math.h>
#include <stdlib.h>
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

void cli_fmt_double(char *buf, size_t cap, double v)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        if (strtod(buf, NULL) == v || v != v) return;
    }
}

/* Element i of an integer or bool tensor of dtype `from`, exactly: its
 * value as *s (signed) or *u (unsigned 64-bit), *neg for a negative one. */
static void load_exact(const DLTensor *t, tsl_dtype from, int64_t i, int64_t *s, uint64_t *u, int *neg)
{
    const dtype_info *d = dtype_info_of(from);
    uint64_t bits = dtype_get_bits(from, data_of(t), elem_off(t, i));
    if (d->bits < 64) bits &= ((uint64_t)1 << d->bits) - 1;
    if (from == TSL_DTYPE_BOOL) bits = bits != 0;
    if (d->is_signed && d->bits < 64 && ((bits >> (d->bits - 1)) & 1)) bits |= ~(uint64_t)0 << d->bits;
    *neg = d->is_signed && (int64_t)bits < 0;
    *s = (int64_t)bits;
    *u = bits;
}

int64_t cli_tensor_check_exact(const DLTensor *src, tsl_dtype to, char *bad, size_t cap)
{
    tsl_dtype from;
    const dtype_info *dt = dtype_info_of(to);
    if (cli_tensor_dtype(src, &from) || dt->is_float) return -1;
    const dtype_info *df = dtype_info_of(from);
    int tsigned = dt->is_signed, tbits = to == TSL_DTYPE_BOOL ? 1 : dt->bits;
    /* to's range: [lo, hi] as int64 for signed and narrower unsigned
     * types; uint64's is [0, 2^64 - 1] */
    int64_t lo = to == TSL_DTYPE_BOOL ? 0 : dtype_int_min(to);
    uint64_t hi = to == TSL_DTYPE_BOOL ? 1 : tbits >= 64 && !tsigned ? UINT64_MAX : (uint64_t)dtype_int_max(to);
    int64_t n = cli_tensor_numel(src);
    for (int64_t i = 0; i < n; i++) {
        int ok;
        if (df->is_float) {
            double v = load(src, from, i);
            /* 2^63 and 2^64 are exact doubles: the first values past the
             * 64-bit ranges */
            ok = isfinite(v) && v == trunc(v) &&
                 (tsigned ? v >= (double)lo && (tbits >= 64 ? v < 0x1p63 : v <= (double)hi)
                          : v >= 0 && (tbits >= 64 ? v < 0x1p64 : v <= (double)hi));
            if (!ok) cli_fmt_double(bad, cap, v);
        } else {
            int64_t s;
            uint64_t u;
            int neg;
            load_exact(src, from, i, &s, &u, &neg);
            ok = neg ? tsigned && s >= lo : u <= hi;
            if (!ok) {
                if (neg) snprintf(bad, cap, "%lld", (long long)s);
                else snprintf(bad, cap, "%llu", (unsigned long long)u);
            }
        }
        if (!ok) return i;
    }
    return -1;
}

int64_t cli_tensor_count_inexact(const DLTensor *src, tsl_dtype to, int64_t *first, double *was, double *now)
{
    tsl_dtype from;
    if (cli_tensor_dtype(src, &from) || !dtype_info_of(to)->is_float) return 0;
    int64_t n = cli_tensor_numel(src), count = 0;
    for (int64_t i = 0; i < n; i++) {
        double v, r;
        if (dtype_info_of(from)->is_float) {
            v = load(src, from, i);
        } else {
            int64_t s;
            uint64_t u;
            int neg;
            load_exact(src, from, i, &s, &u, &neg);
            v = neg ? (double)s : (double)u;
            /* an integer beyond 2^53 may already round in the double */
            if (neg ? (int64_t)v != s : v >= 0x1p64 || (uint64_t)v != u) {
                r = v;
                goto changed;
            }
        }
        r = dtype_round(to, v);
        if (r == v || (v != v && r != r)) continue;
    changed:
        if (!count++) {
            *first = i;
            *was = v;
            *now = dtype_round(to, v);
        }
    }
    return count;
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
