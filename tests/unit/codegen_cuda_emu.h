/* codegen_cuda_emu.h — a host emulation of the CUDA the generator emits,
 * so tests check the generated kernels' logic (layout coordinates, masks,
 * shared addressing, shuffles, reductions, mma fragment exchange) against
 * the tile interpreter on a machine without a GPU.
 *
 * test_codegen_cuda.c compiles `-include this file` + the generated source
 * with the system C++ compiler into a shared object. Every GPU thread is a
 * host thread; a block's threads share its shared-memory buffer and a
 * barrier (__syncthreads); a warp's threads exchange values through a
 * per-warp slot array between two warp barriers (shuffles, mma).
 * cp.async copies at once (the interpreter checks the wait/sync
 * discipline; here only the values matter). mma.m16n8k16 follows the PTX
 * ISA's fragment tables, written independently of the layouts. */
#ifndef TSL_CODEGEN_CUDA_EMU_H
#define TSL_CODEGEN_CUDA_EMU_H

#define TSL_EMULATE 1
#include <pthread.h>
#include <stdint.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <math.h>

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct tsl_dim3 {
    unsigned x, y, z;
};

struct tsl_warp {
    pthread_barrier_t bar;
    unsigned long long slot[32][10];
};

struct tsl_block {
    pthread_barrier_t bar;
    tsl_warp warps[32];
    unsigned char *smem;
};

static thread_local tsl_dim3 threadIdx, blockIdx;
static thread_local tsl_block *tsl_cur_block;
#define TSL_SMEM_DECL unsigned char *tsl_smem = tsl_cur_block->smem

static inline void __syncthreads() { pthread_barrier_wait(&tsl_cur_block->bar); }
static inline tsl_warp *tsl_my_warp() { return &tsl_cur_block->warps[threadIdx.x / 32]; }

static inline unsigned long long tsl_exchange(unsigned long long v, int src)
{
    tsl_warp *w = tsl_my_warp();
    w->slot[threadIdx.x % 32][0] = v;
    pthread_barrier_wait(&w->bar);
    unsigned long long r = w->slot[src & 31][0];
    pthread_barrier_wait(&w->bar);
    return r;
}

template <typename T> static inline T tsl_emu_from(unsigned long long u)
{
    T t;
    memcpy(&t, &u, sizeof t);
    return t;
}
template <typename T> static inline unsigned long long tsl_emu_bits(T t)
{
    unsigned long long u = 0;
    memcpy(&u, &t, sizeof t);
    return u;
}
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src)
{
    (void)mask;
    return tsl_emu_from<T>(tsl_exchange(tsl_emu_bits(v), src));
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int m)
{
    (void)mask;
    return tsl_emu_from<T>(tsl_exchange(tsl_emu_bits(v), (int)(threadIdx.x % 32) ^ m));
}

static inline float __uint_as_float(unsigned u) { return tsl_emu_from<float>(u); }
static inline double __longlong_as_double(long long u) { return tsl_emu_from<double>((unsigned long long)u); }
/* the fast-math intrinsics (`.approx` ops): exact here, which they may be */
#define __expf(x) expf(x) /* glibc declares a __expf of its own */
static inline float tsl_ex2_exp(float x) { return expf(x); }
static inline float tsl_ex2(float x) { return exp2f(x); }
static inline float tsl_tanh_approx(float x) { return tanhf(x); }
static inline float tsl_sigmoid_approx(float x) { return 1.0f / (1.0f + expf(-x)); }

static pthread_mutex_t tsl_atomic_mu = PTHREAD_MUTEX_INITIALIZER;
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long cmp, unsigned long long v)
{
    pthread_mutex_lock(&tsl_atomic_mu);
    unsigned long long old = *p;
    if (old == cmp) *p = v;
    pthread_mutex_unlock(&tsl_atomic_mu);
    return old;
}

/* IEEE half and bfloat16, round to nearest even (cvt.rn) */
static inline float tsl_cvt_f16_f32(unsigned short h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
    if (e == 0) {
        float r = ldexpf((float)m, -24);
        return sign ? -r : r;
    }
    x = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112) << 23) | (m << 13));
    return tsl_emu_from<float>(x);
}
static inline unsigned short tsl_cvt_f32_f16(float f)
{
    uint32_t x = (uint32_t)tsl_emu_bits(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (unsigned short)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00);
    if (ax < 0x38800000u) return (unsigned short)(sign | (uint32_t)nearbyintf(tsl_emu_from<float>(ax) * 16777216.0f));
    uint32_t h = (((ax >> 23) - 112) << 10) | ((ax & 0x7fffff) >> 13), rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (unsigned short)(sign | h);
}
static inline unsigned short tsl_cvt_f32_bf16(float f)
{
    uint32_t x = (uint32_t)tsl_emu_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (unsigned short)(x >> 16);
}

static inline void tsl_cp_async(void *s, const void *g, int bytes, int src_bytes)
{
    memset(s, 0, (size_t)bytes);
    if (src_bytes > 0) memcpy(s, g, (size_t)src_bytes);
}
static inline void tsl_cp_async16(void *s, const void *g, int n) { tsl_cp_async(s, g, 16, n); }
static inline void tsl_cp_async8(void *s, const void *g, int n) { tsl_cp_async(s, g, 8, n); }
static inline void tsl_cp_async4(void *s, const void *g, int n) { tsl_cp_async(s, g, 4, n); }
static inline void tsl_cp_commit() {}
template <int N> static inline void tsl_cp_wait() {}

/* PTX ISA, mma.m16n8k16 with .f16/.bf16 A/B and f32 C/D: groupID = lane/4,
 * t = lane%4; A (16x16 row): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g,
 * 2t+8..), a3 (g+8, 2t+8..); B (16x8 col): b0 (k 2t..2t+1, n g), b1 (k
 * 2t+8.., n g); C/D (16x8): c0,c1 (g, 2t..2t+1), c2,c3 (g+8, 2t..). */
static inline void tsl_mma(int bf, float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1, unsigned a2,
                           unsigned a3, unsigned b0, unsigned b1)
{
    tsl_warp *w = tsl_my_warp();
    unsigned lane = threadIdx.x % 32;
    unsigned long long *me = w->slot[lane];
    me[1] = a0, me[2] = a1, me[3] = a2, me[4] = a3, me[5] = b0, me[6] = b1;
    pthread_barrier_wait(&w->bar);
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; l++) {
        int g = l / 4, t = l % 4;
        unsigned long long *s = w->slot[l];
        for (int h = 0; h < 2; h++) {
            float (*cv)(unsigned short) = bf ? [](unsigned short x) { return __uint_as_float((unsigned)x << 16); }
                                             : [](unsigned short x) { return tsl_cvt_f16_f32(x); };
            unsigned short lo[6], hi[6];
            for (int r = 0; r < 6; r++) {
                lo[r] = (unsigned short)(s[1 + r] & 0xffff);
                hi[r] = (unsigned short)(s[1 + r] >> 16);
            }
            float v0 = h ? cv(hi[0]) : cv(lo[0]);
            A[g][2 * t + h] = v0;
            A[g + 8][2 * t + h] = h ? cv(hi[1]) : cv(lo[1]);
            A[g][2 * t + 8 + h] = h ? cv(hi[2]) : cv(lo[2]);
            A[g + 8][2 * t + 8 + h] = h ? cv(hi[3]) : cv(lo[3]);
            B[2 * t + h][g] = h ? cv(hi[4]) : cv(lo[4]);
            B[2 * t + 8 + h][g] = h ? cv(hi[5]) : cv(lo[5]);
        }
    }
    pthread_barrier_wait(&w->bar);
    int g = lane / 4, t = lane % 4;
    float *d[4] = {&d0, &d1, &d2, &d3};
    for (int i = 0; i < 4; i++) {
        int r = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
        float acc = *d[i];
        for (int kk = 0; kk < 16; kk++) acc += A[r][kk] * B[kk][col];
        *d[i] = acc;
    }
}
static inline void tsl_mma_f16(float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1, unsigned a2,
                               unsigned a3, unsigned b0, unsigned b1)
{
    tsl_mma(0, d0, d1, d2, d3, a0, a1, a2, a3, b0, b1);
}
static inline void tsl_mma_bf16(float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1, unsigned a2,
                                unsigned a3, unsigned b0, unsigned b1)
{
    tsl_mma(1, d0, d1, d2, d3, a0, a1, a2, a3, b0, b1);
}

/* cvt.rna.tf32.f32 as arithmetic: 11 significant bits (the leading one and
 * 10 fraction bits), the unit of the last kept bit 2^(e - 11) with f32's
 * smallest normal exponent as the floor, halves rounded away from zero. */
static inline float tsl_emu_tf32(float x)
{
    if (!std::isfinite(x) || x == 0.0f) return x;
    int e;
    (void)frexpf(fabsf(x), &e);
    if (e < -125) e = -125;
    double q = ldexp(1.0, e - 11), m = floor(fabs((double)x) / q + 0.5) * q;
    return (float)(x < 0 ? -m : m);
}

/* The other mma.sync rows (PTX ISA "Matrix Fragments for mma.m16n8k8 /
 * m16n8k16"), g = lane/4, t = lane%4, h the half of a packed register:
 *   k16 f16/bf16: a_r (g + 8(r&1), 2t + 8(r>>1) + h); b_r (2t + 8r + h, g)
 *   k8 f16/bf16:  a_r (g + 8r, 2t + h);                b_0 (2t + h, g)
 *   k8 tf32:      a_r (g + 8(r&1), t + 4(r>>1));       b_r (t + 4r, g)
 *   C/D: c_i (g + 8(i/2), 2t + i%2); f16 D rounded once per instruction.
 * ty: 0 f16, 1 bf16, 2 tf32 (the registers hold f32 bits). */
static inline void tsl_emu_mma(int kk, int ty, int f16d, float *d[4], const unsigned *a, int na, const unsigned *b,
                               int nb)
{
    tsl_warp *w = tsl_my_warp();
    unsigned lane = threadIdx.x % 32;
    for (int r = 0; r < na; r++) w->slot[lane][1 + r] = a[r];
    for (int r = 0; r < nb; r++) w->slot[lane][1 + na + r] = b[r];
    pthread_barrier_wait(&w->bar);
    float A[16][16], B[16][8];
    auto half = [ty](unsigned u, int h) {
        unsigned short x = (unsigned short)(h ? u >> 16 : u & 0xffff);
        return ty == 1 ? __uint_as_float((unsigned)x << 16) : tsl_cvt_f16_f32(x);
    };
    for (int l = 0; l < 32; l++) {
        int g = l / 4, t = l % 4;
        const unsigned long long *sl = w->slot[l];
        for (int r = 0; r < na; r++) {
            unsigned u = (unsigned)sl[1 + r];
            if (ty == 2) A[g + 8 * (r & 1)][t + 4 * (r >> 1)] = tsl_emu_from<float>(u);
            else
                for (int h = 0; h < 2; h++) {
                    if (kk == 16) A[g + 8 * (r & 1)][2 * t + 8 * (r >> 1) + h] = half(u, h);
                    else A[g + 8 * r][2 * t + h] = half(u, h);
                }
        }
        for (int r = 0; r < nb; r++) {
            unsigned u = (unsigned)sl[1 + na + r];
            if (ty == 2) B[t + 4 * r][g] = tsl_emu_from<float>(u);
            else
                for (int h = 0; h < 2; h++) B[2 * t + 8 * r + h][g] = half(u, h);
        }
    }
    pthread_barrier_wait(&w->bar);
    int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; i++) {
        int row = g + 8 * (i / 2), col = 2 * t + i % 2;
        float acc = *d[i];
        for (int k = 0; k < kk; k++) acc += A[row][k] * B[k][col];
        *d[i] = f16d ? tsl_cvt_f16_f32(tsl_cvt_f32_f16(acc)) : acc;
    }
}
static inline void tsl_mma_f16_f16(unsigned short &d0, unsigned short &d1, unsigned short &d2, unsigned short &d3,
                                   unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)
{
    unsigned short *h[4] = {&d0, &d1, &d2, &d3};
    float f[4], *d[4];
    for (int i = 0; i < 4; i++) f[i] = tsl_cvt_f16_f32(*h[i]), d[i] = &f[i];
    unsigned a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
    tsl_emu_mma(16, 0, 1, d, a, 4, b, 2);
    for (int i = 0; i < 4; i++) *h[i] = tsl_cvt_f32_f16(f[i]);
}
static inline void tsl_mma_k8_f16(float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1, unsigned b0)
{
    float *d[4] = {&d0, &d1, &d2, &d3};
    unsigned a[2] = {a0, a1};
    tsl_emu_mma(8, 0, 0, d, a, 2, &b0, 1);
}
static inline void tsl_mma_k8_bf16(float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1, unsigned b0)
{
    float *d[4] = {&d0, &d1, &d2, &d3};
    unsigned a[2] = {a0, a1};
    tsl_emu_mma(8, 1, 0, d, a, 2, &b0, 1);
}
static inline void tsl_mma_k8_f16_f16(unsigned short &d0, unsigned short &d1, unsigned short &d2, unsigned short &d3,
                                      unsigned a0, unsigned a1, unsigned b0)
{
    unsigned short *h[4] = {&d0, &d1, &d2, &d3};
    float f[4], *d[4];
    for (int i = 0; i < 4; i++) f[i] = tsl_cvt_f16_f32(*h[i]), d[i] = &f[i];
    unsigned a[2] = {a0, a1};
    tsl_emu_mma(8, 0, 1, d, a, 2, &b0, 1);
    for (int i = 0; i < 4; i++) *h[i] = tsl_cvt_f32_f16(f[i]);
}
static inline void tsl_mma_tf32(float &d0, float &d1, float &d2, float &d3, float a0, float a1, float a2, float a3,
                                float b0, float b1)
{
    float *d[4] = {&d0, &d1, &d2, &d3};
    unsigned a[4], b[2];
    float av[4] = {a0, a1, a2, a3}, bv[2] = {b0, b1};
    for (int i = 0; i < 4; i++) a[i] = (unsigned)tsl_emu_bits(tsl_emu_tf32(av[i]));
    for (int i = 0; i < 2; i++) b[i] = (unsigned)tsl_emu_bits(tsl_emu_tf32(bv[i]));
    tsl_emu_mma(8, 2, 0, d, a, 4, b, 2);
}

/* ldmatrix (PTX ISA): lanes 8i..8i+7 give the row addresses of 8x8 b16
 * matrix i; lane L receives of matrix i (row L/4, cols 2(L%4), +1), or
 * with .trans (rows 2(L%4), +1; col L/4), low half first. */
static inline void tsl_ldsm(int n, int trans, unsigned *r, const void *p)
{
    tsl_warp *w = tsl_my_warp();
    unsigned lane = threadIdx.x % 32;
    w->slot[lane][7] = (unsigned long long)(uintptr_t)p;
    pthread_barrier_wait(&w->bar);
    int g = lane / 4, t = lane % 4;
    for (int i = 0; i < n; i++) {
        unsigned short lo, hi;
        if (!trans) {
            const unsigned short *row = (const unsigned short *)(uintptr_t)w->slot[8 * i + g][7];
            lo = row[2 * t], hi = row[2 * t + 1];
        } else {
            const unsigned short *r0 = (const unsigned short *)(uintptr_t)w->slot[8 * i + 2 * t][7];
            const unsigned short *r1 = (const unsigned short *)(uintptr_t)w->slot[8 * i + 2 * t + 1][7];
            lo = r0[g], hi = r1[g];
        }
        r[i] = (unsigned)lo | ((unsigned)hi << 16);
    }
    pthread_barrier_wait(&w->bar);
}
static inline void tsl_ldsm_x4(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3, const void *p)
{
    unsigned r[4];
    tsl_ldsm(4, 0, r, p);
    r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
static inline void tsl_ldsm_x2_trans(unsigned &r0, unsigned &r1, const void *p)
{
    unsigned r[2];
    tsl_ldsm(2, 1, r, p);
    r0 = r[0], r1 = r[1];
}

static inline void tsl_ldsm_x1(unsigned &r0, const void *p) { tsl_ldsm(1, 0, &r0, p); }
static inline void tsl_ldsm_x2(unsigned &r0, unsigned &r1, const void *p)
{
    unsigned r[2];
    tsl_ldsm(2, 0, r, p);
    r0 = r[0], r1 = r[1];
}
static inline void tsl_ldsm_x1_trans(unsigned &r0, const void *p) { tsl_ldsm(1, 1, &r0, p); }
static inline void tsl_ldsm_x4_trans(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3, const void *p)
{
    unsigned r[4];
    tsl_ldsm(4, 1, r, p);
    r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}

/* stmatrix (PTX ISA): lanes 8i..8i+7 give the row addresses of matrix i;
 * lane L's register i holds (row L/4, cols 2(L%4), +1) of matrix i, with
 * .trans (rows 2(L%4), +1; col L/4), low half first. */
static inline void tsl_stsm(int n, int trans, const unsigned *r, void *p)
{
    tsl_warp *w = tsl_my_warp();
    unsigned lane = threadIdx.x % 32;
    w->slot[lane][7] = (unsigned long long)(uintptr_t)p;
    for (int i = 0; i < n; i++) w->slot[lane][1 + i] = r[i];
    pthread_barrier_wait(&w->bar);
    if (lane == 0)
        for (int l = 0; l < 32; l++) {
            int g = l / 4, t = l % 4;
            for (int i = 0; i < n; i++) {
                unsigned v = (unsigned)w->slot[l][1 + i];
                unsigned short lo = (unsigned short)(v & 0xffff), hi = (unsigned short)(v >> 16);
                if (!trans) {
                    unsigned short *row = (unsigned short *)(uintptr_t)w->slot[8 * i + g][7];
                    row[2 * t] = lo, row[2 * t + 1] = hi;
                } else {
                    ((unsigned short *)(uintptr_t)w->slot[8 * i + 2 * t][7])[g] = lo;
                    ((unsigned short *)(uintptr_t)w->slot[8 * i + 2 * t + 1][7])[g] = hi;
                }
            }
        }
    pthread_barrier_wait(&w->bar);
}
static inline void tsl_stsm_x1(void *p, unsigned r0) { tsl_stsm(1, 0, &r0, p); }
static inline void tsl_stsm_x2(void *p, unsigned r0, unsigned r1)
{
    unsigned r[2] = {r0, r1};
    tsl_stsm(2, 0, r, p);
}
static inline void tsl_stsm_x4(void *p, unsigned r0, unsigned r1, unsigned r2, unsigned r3)
{
    unsigned r[4] = {r0, r1, r2, r3};
    tsl_stsm(4, 0, r, p);
}
static inline void tsl_stsm_x1_trans(void *p, unsigned r0) { tsl_stsm(1, 1, &r0, p); }
static inline void tsl_stsm_x2_trans(void *p, unsigned r0, unsigned r1)
{
    unsigned r[2] = {r0, r1};
    tsl_stsm(2, 1, r, p);
}
static inline void tsl_stsm_x4_trans(void *p, unsigned r0, unsigned r1, unsigned r2, unsigned r3)
{
    unsigned r[4] = {r0, r1, r2, r3};
    tsl_stsm(4, 1, r, p);
}

/* ---- the launcher ---------------------------------------------------------------- */

struct tsl_emu_thread {
    void (*fn)(void **);
    void **params;
    tsl_block *blk;
    const unsigned *grid;
    unsigned tid, smem;
};

/* One GPU thread: runs its share of every block in turn; between blocks
 * thread 0 poisons shared memory (reads of unwritten bytes show). */
static void *tsl_emu_main(void *arg)
{
    tsl_emu_thread *t = (tsl_emu_thread *)arg;
    threadIdx.x = t->tid, threadIdx.y = threadIdx.z = 0;
    tsl_cur_block = t->blk;
    for (unsigned bz = 0; bz < t->grid[2]; bz++)
        for (unsigned by = 0; by < t->grid[1]; by++)
            for (unsigned bx = 0; bx < t->grid[0]; bx++) {
                pthread_barrier_wait(&t->blk->bar);
                if (t->tid == 0) memset(t->blk->smem, 0xff, (t->smem + 128) / 128 * 128);
                pthread_barrier_wait(&t->blk->bar);
                blockIdx.x = bx, blockIdx.y = by, blockIdx.z = bz;
                t->fn(t->params);
            }
    return NULL;
}

/* Run fn over grid[3] blocks of `threads` threads, blocks one after the
 * other. 0 on success. */
extern "C" int tsl_emu_launch(void (*fn)(void **), void **params, const unsigned *grid, unsigned threads,
                              unsigned smem_bytes)
{
    tsl_block *blk = new tsl_block;
    tsl_emu_thread *ts = new tsl_emu_thread[threads];
    pthread_t *th = new pthread_t[threads];
    blk->smem = (unsigned char *)aligned_alloc(128, (smem_bytes + 128) / 128 * 128);
    pthread_barrier_init(&blk->bar, NULL, threads);
    for (unsigned w = 0; w * 32 < threads; w++)
        pthread_barrier_init(&blk->warps[w].bar, NULL, threads - w * 32 >= 32 ? 32 : threads - w * 32);
    unsigned started = 0;
    for (unsigned i = 0; i < threads; i++) {
        ts[i] = {fn, params, blk, grid, i, smem_bytes};
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, 1 << 20);
        int bad = pthread_create(&th[i], &at, tsl_emu_main, &ts[i]);
        pthread_attr_destroy(&at);
        if (bad) abort(); /* the others wait at a barrier for it: no way back */
        started++;
    }
    for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&blk->bar);
    for (unsigned w = 0; w * 32 < threads; w++) pthread_barrier_destroy(&blk->warps[w].bar);
    free(blk->smem);
    delete[] th;
    delete[] ts;
    delete blk;
    return 0;
}

#endif
