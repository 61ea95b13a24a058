/* test_dequant.c — the CUDA target's dequantization rows (src/target/
 * dequant.c) against the reference conversion: for every low-bit dtype of
 * 1 to 8 bits and int8/uint8, to f16 and to f32, every code at every slot
 * of a 64-slot bit stream (every phase of a field against the 32-bit words
 * and of each pairing), the row's semantics gives exactly the bits of the
 * reference value (dtype_get) rounded to the output; a float format that
 * gets no f16 row must have a value f16 cannot hold. Then the CUDA the
 * generator prints for each dtype (view of a thread's bytes, cast to f16
 * and to f32, one kernel) runs in the host emulation on a bit stream holding every
 * code at many slots, bit for bit against the reference, and compiles
 * with NVRTC for sm_80 and sm_90a. */
#include <math.h>
#include <string.h>

#include <dlfcn.h>
#include <stdlib.h>

#include "test.h"
#include "sched_runners.h"
#include "codegen/cuda.h"
#include "target/dequant.h"
#include "tile/tile.h"

static int is_source(tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(t);
    if (d->bits > 8 || d->desc.kind == DT_BOOL) return 0;
    return d->desc.kind != DT_FLOAT || dtype_desc_is_lowfloat(d->desc);
}

static uint32_t want_bits(tsl_dtype t, uint32_t code, int out)
{
    uint8_t buf[2] = {0, 0};
    dtype_set_bits(t, buf, 0, code);
    float v = (float)dtype_get(t, buf, 0);
    if (out == 16) return f32_to_f16(v);
    union { float f; uint32_t u; } x = {v};
    return x.u;
}

static int is_nan_bits(uint32_t b, int out)
{
    return out == 16 ? (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) : (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu);
}

static void test_every_code(void)
{
    tsl_dtype outs[2] = {TSL_DTYPE_F16, TSL_DTYPE_F32};
    int types = 0, rows_used[16] = {0};
    int64_t checked = 0;
    for (int t = 0; t < TSL_DTYPE_COUNT; t++) {
        if (!is_source((tsl_dtype)t)) continue;
        dtype_desc q = dtype_info_of((tsl_dtype)t)->desc;
        int N = q.bits;
        types++;
        for (int o = 0; o < 2; o++) {
            int out = o ? 32 : 16;
            const target_dequant *r = target_dequant_find(q, dtype_info_of(outs[o])->desc);
            if (!r) {
                /* only a float format some value of which f16 cannot hold goes without */
                int lossy = 0;
                for (uint32_t c = 0; c < (1u << N); c++) {
                    uint32_t b = want_bits((tsl_dtype)t, c, 16);
                    uint8_t buf[2] = {0, 0};
                    dtype_set_bits((tsl_dtype)t, buf, 0, c);
                    double v = dtype_get((tsl_dtype)t, buf, 0);
                    lossy |= !isnan(v) && (double)f16_to_f32((uint16_t)b) != v;
                }
                CHECK_MSG(out == 16 && q.kind == DT_FLOAT && lossy, "%s -> f%d: no dequantization row",
                          tsl_dtype_name((tsl_dtype)t), out);
                continue;
            }
            rows_used[r - target_dequant_rows]++;
            int bad = 0;
            for (uint32_t c = 0; c < (1u << N) && !bad; c++)
                for (int p = 0; p < 64 && !bad; p++) {
                    /* 66 slots of random codes, slot p = c, one zero word after */
                    uint32_t w[20];
                    memset(w, 0, sizeof w);
                    for (int l = 0; l < 66; l++) {
                        uint32_t v = l == p ? c : (uint32_t)test_rand_int(0, (1 << N) - 1);
                        dtype_set_bits((tsl_dtype)t, w, l, v);
                    }
                    uint32_t got = target_dequant_eval(r, q, w, p), want = want_bits((tsl_dtype)t, c, out);
                    int ok = is_nan_bits(want, out) ? is_nan_bits(got, out) : got == want;
                    CHECK_MSG(ok, "%s -> f%d by %s: code 0x%x at slot %d gives 0x%x, want 0x%x",
                              tsl_dtype_name((tsl_dtype)t), out, r->name, c, p, got, want);
                    bad |= !ok;
                    checked++;
                }
        }
    }
    printf("    %d dtypes, %lld codes x slots checked; rows used:", types, (long long)checked);
    for (int i = 0; i < target_dequant_nrows; i++) printf(" %s %d", target_dequant_rows[i].name, rows_used[i]);
    printf("\n");
    CHECK(types >= 40);
    for (int i = 0; i < target_dequant_nrows; i++)
        CHECK_MSG(rows_used[i] > 0, "row %s chosen for no dtype", target_dequant_rows[i].name);
}

/* The pairing covers every slot once per register: partner of partner. */
static void test_pairs(void)
{
    for (int t = 0; t < TSL_DTYPE_COUNT; t++) {
        if (!is_source((tsl_dtype)t)) continue;
        dtype_desc q = dtype_info_of((tsl_dtype)t)->desc;
        const target_dequant *r = target_dequant_find(q, dtype_info_of(TSL_DTYPE_F16)->desc);
        for (int64_t l = 0; r && l < 64; l++) {
            int64_t p, pp;
            int hi, hi2;
            target_dequant_pair(r, q, l, 64, &p, &hi);
            CHECK(p >= 0);
            target_dequant_pair(r, q, p, 64, &pp, &hi2);
            CHECK_MSG(pp == l && hi2 == !hi, "%s slot %lld", tsl_dtype_name((tsl_dtype)t), (long long)l);
        }
    }
}

typedef int (*emu_launch_fn)(void (*)(void **), void **, const unsigned *, unsigned, unsigned);

/* kernel dq(Wq: u8[32 * 8N], H: f16[2048], F: f32[2048]): thread t's 8N
 * bytes viewed as 64 slots of dtype t, cast to f16 and to f32, stored:
 * H[i], F[i] are slot i of the stream. */
static char *kernel_text(tsl_dtype t)
{
    int N = tsl_dtype_bits(t);
    const char *q = dtype_info_of(t)->tname;
    char *s = NULL;
    TSL_ASSERT(asprintf(&s,
                        "kernel dq(Wq: global u8[%d], H: global f16[2048], F: global f32[2048]) grid(1) threads(32) {\n"
                        "  w = load_global Wq[0] -> register u8[%d] layout spatial(32).local(%d)\n"
                        "  q = view w -> register %s[2048] layout spatial(32).local(64)\n"
                        "  h = cast q -> register f16[2048] layout spatial(32).local(64)\n"
                        "  store_global h -> H[0]\n"
                        "  p = view w -> register %s[2048] layout spatial(32).local(64)\n"
                        "  f = cast p -> register f32[2048] layout spatial(32).local(64)\n"
                        "  store_global f -> F[0]\n"
                        "}\n",
                        32 * 8 * N, 32 * 8 * N, 8 * N, q, q) > 0);
    return s;
}

static int run_emulated(void *h, const tile_kernel *k, uint8_t *w, int nw, uint16_t *yh, uint32_t *yf)
{
    char entry[160], sym[200];
    cg_cuda_entry_name(k->name, entry, sizeof entry);
    snprintf(sym, sizeof sym, "%s_emu", entry);
    void (*fn)(void **) = (void (*)(void **))dlsym(h, sym);
    emu_launch_fn launch = (emu_launch_fn)dlsym(h, "tsl_emu_launch");
    if (!fn || !launch) return 0;
    unsigned long long err[8] = {0};
    long long v[10] = {(long long)(uintptr_t)w,  nw,   1, (long long)(uintptr_t)yh, 2048, 1,
                       (long long)(uintptr_t)yf, 2048, 1, (long long)(uintptr_t)err};
    void *params[10];
    for (int i = 0; i < 10; i++) params[i] = &v[i];
    unsigned grid[3] = {1, 1, 1};
    return launch(fn, params, grid, 32, 0) == 0 && !err[0];
}

static void test_generated_every_code(void)
{
    int cxx = test_have_cxx(), nvrtc = 0;
    tsl_diag d = {0};
    nvrtc = rt_cuda_nvrtc_available(&d) == TSL_OK;
    diag_reset(&d);
    int ran = 0, compiled = 0;
    int seen[2][16] = {{0}}; /* NVRTC: a dtype per row not compiled yet */
    for (int t = 0; t < TSL_DTYPE_COUNT; t++) {
        if (!is_source((tsl_dtype)t)) continue;
        int N = tsl_dtype_bits((tsl_dtype)t);
        const char *name = tsl_dtype_name((tsl_dtype)t);
        char *text = kernel_text((tsl_dtype)t);
        tsl_arena *a = arena_create();
        tsl_source src = {"dq.tile", text};
        tile_module *m = NULL;
        diag_reset(&d);
        tsl_status st = tile_parse(a, &src, &d, &m);
        if (!st) st = tile_verify(m, &src, &d);
        CHECK_MSG(st == TSL_OK, "%s: %s", name, sb_str(&d.msg));
        strbuf cu = {0};
        if (st == TSL_OK) st = cg_cuda_emit(m, m->kernels[0], &cu, &d);
        CHECK_MSG(st == TSL_OK, "%s: emit: %s", name, sb_str(&d.msg));
        if (st == TSL_OK && cxx) {
            /* slot i holds code (i * 37 + i / 256) mod 2^N: every code, at many phases */
            int nw = 32 * 8 * N;
            uint8_t *w = calloc((size_t)nw + 8, 1);
            for (int i = 0; i < 2048; i++) dtype_set_bits((tsl_dtype)t, w, i, (uint64_t)(i * 37 + i / 256) % (1u << N));
            uint16_t *yh = calloc(2048, 2);
            uint32_t *yf = calloc(2048, 4);
            char tag[64];
            snprintf(tag, sizeof tag, "dq_%s", name);
            void *h = test_emu_build(sb_str(&cu), tag);
            CHECK_MSG(h != NULL, "%s: the emulation does not build", tag);
            int ok = h && run_emulated(h, m->kernels[0], w, nw, yh, yf);
            CHECK_MSG(ok, "%s: the emulated launch failed", tag);
            for (int o = 0; ok && o < 2; o++)
                for (int i = 0; ok && i < 2048; i++) {
                    uint32_t c = (uint32_t)dtype_get_bits((tsl_dtype)t, w, i);
                    uint32_t want = want_bits((tsl_dtype)t, c, o ? 32 : 16), got = o ? yf[i] : yh[i];
                    int same = is_nan_bits(want, o ? 32 : 16) ? is_nan_bits(got, o ? 32 : 16) : got == want;
                    CHECK_MSG(same, "%s -> f%d: slot %d code 0x%x gives 0x%x, want 0x%x", tag, o ? 32 : 16, i, c, got,
                              want);
                    ok = same;
                }
            ran += ok;
            if (h) dlclose(h);
            free(w);
            free(yh);
            free(yf);
        }
        /* NVRTC: the printed PTX assembles (a dtype per row not yet compiled, both archs) */
        int fresh = 0;
        for (int o = 0; o < 2; o++) {
            const target_dequant *r = target_dequant_find(dtype_info_of((tsl_dtype)t)->desc,
                                                          dtype_info_of(o ? TSL_DTYPE_F32 : TSL_DTYPE_F16)->desc);
            fresh |= r && !seen[o][r - target_dequant_rows]++;
        }
        if (st == TSL_OK && nvrtc && fresh) {
            static const char *const archs[] = {"sm_80", "sm_90a"};
            for (int ar = 0; ar < 2; ar++) {
                rt_cuda_options ro = {0};
                ro.name = m->kernels[0]->name;
                void *cubin = NULL;
                size_t n = 0;
                char *log = NULL;
                diag_reset(&d);
                tsl_status cs = rt_cuda_compile(sb_str(&cu), archs[ar], &ro, &cubin, &n, &log, &d);
                CHECK_MSG(cs == TSL_OK, "%s %s: NVRTC: %s", name, archs[ar], sb_str(&d.msg));
                compiled += cs == TSL_OK;
                free(cubin);
                free(log);
            }
        }
        sb_free(&cu);
        arena_free(a);
        free(text);
    }
    printf("    %d emulated kernels (f16 and f32 out) bit-exact, %d NVRTC compiles\n", ran, compiled);
    CHECK(!cxx || ran >= 40);
    diag_free(&d);
}

TEST_SUITE(dequant) = {
    {"every_code", test_every_code},
    {"pairs", test_pairs},
    {"generated_every_code", test_generated_every_code},
    {0},
};
