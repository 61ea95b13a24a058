/* fma_cases.c — the fma inputs and program of tests/fma_cases.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fma_cases.h"
#include "test.h"

char *test_fma_program(tsl_dtype dt)
{
    char *s = NULL;
    int n = asprintf(&s,
                     "kernel fma_%1$s(A: global %1$s[N], B: global %1$s[N], C: global %1$s[N], Z: global %1$s[N], "
                     "W: global %1$s[N]) grid(cdiv(N, 96)) threads(32) {\n"
                     "  a = load_global A[block_idx.x * 96] -> register %1$s[96] layout spatial(32).local(3)\n"
                     "  b = load_global B[block_idx.x * 96] -> register %1$s[96] layout spatial(32).local(3)\n"
                     "  c = load_global C[block_idx.x * 96] -> register %1$s[96] layout spatial(32).local(3)\n"
                     "  z = fma a, b, c\n"
                     "  fma a, -0.3, c -> c\n"
                     "  store_global z -> Z[block_idx.x * 96]\n"
                     "  store_global c -> W[block_idx.x * 96]\n"
                     "}\n",
                     dtype_info_of(dt)->tname);
    return n < 0 ? NULL : s;
}

/* Random bits of dt as a value (any: subnormal, infinite, NaN). */
static double rand_bits(tsl_dtype dt)
{
    uint64_t buf = 0, bits = dtype_info_of(dt)->bits;
    dtype_set_bits(dt, &buf, 0, bits == 64 ? test_rand() : test_rand() & ((1ull << bits) - 1));
    return dtype_load(dt, &buf);
}

/* ±(1 + random mantissa) 2^e, |e| <= 20 and small enough that products
 * of two stay normal in dt (f16: |e| <= 7). */
static double rand_normal(tsl_dtype dt)
{
    const dtype_desc *d = &dtype_info_of(dt)->desc;
    int emax = d->bias / 2 < 20 ? d->bias / 2 : 20;
    double m = (double)(test_rand() & ((1ull << d->man) - 1));
    return ldexp(1 + ldexp(m, -d->man), (int)test_rand_int(-emax, emax)) * (test_rand() & 1 ? -1 : 1);
}

void test_fma_fill(tsl_dtype dt, void *A, void *B, void *C, int64_t n)
{
    const dtype_desc *d = &dtype_info_of(dt)->desc;
    int man = d->man, emin = 1 - d->bias;
    size_t es = tsl_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        double a = rand_normal(dt), b = rand_normal(dt), c = 0, p = a * b;
        if (i % 4 == 0) {
            a = rand_bits(dt), b = rand_bits(dt), c = rand_bits(dt);
        } else if (i % 4 == 1) {
            c = -dtype_round(dt, p);
        } else if (i % 4 == 2) {
            int e;
            double r = dtype_round(dt, p);
            frexp(r, &e);
            c = r + ldexp(test_rand() & 1 ? 1 : -1, (e - 1 > emin ? e - 1 : emin) - man - 1) - p;
        } else {
            /* a*b in [2^e, 2^(e+1)), normal with finite neighbours; c >= the least subnormal */
            int lo = emin + 3 > -40 ? emin + 3 : -40, hi = -emin - 1 < 40 ? -emin - 1 : 40;
            int e = (int)test_rand_int(lo, hi), k = e - man - 3 - (int)test_rand_int(0, 60);
            a = ldexp(test_rand() & 1 ? 1.5 : -1.5, e / 2);
            b = ldexp(test_rand() & 1 ? 1 + ldexp(1, -man) : -1 - ldexp(1, -man), e - e / 2);
            c = ldexp(test_rand() & 1 ? 1 : -1, k > emin - man ? k : emin - man);
        }
        dtype_store(dt, (char *)A + i * (int64_t)es, a);
        dtype_store(dt, (char *)B + i * (int64_t)es, b);
        dtype_store(dt, (char *)C + i * (int64_t)es, c);
    }
}

int64_t test_fma_first_diff(tsl_dtype dt, const void *x, const void *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t bx = dtype_get_bits(dt, x, i), by = dtype_get_bits(dt, y, i);
        if (bx != by && !(isnan(dtype_get(dt, x, i)) && isnan(dtype_get(dt, y, i)))) return i;
    }
    return -1;
}
