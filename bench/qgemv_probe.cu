// qgemv_probe.cu — a hand-written uint4 GEMV (M = 1, group 128) to find
// the streaming ceiling of the shapes bench/gpu_bench.c times, and which
// kernel shape reaches it. Not part of tessel: a measuring stick for the
// qmatmul strategy. Build and run on the GPU machine:
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a bench/qgemv_probe.cu -o /tmp/qp && /tmp/qp
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));         \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

__device__ __forceinline__ unsigned lop3_and_or(unsigned a, unsigned m, unsigned o)
{
    unsigned r;
    asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(a), "r"(m), "r"(o));
    return r;
}
__device__ __forceinline__ unsigned h2sub(unsigned a, unsigned b)
{
    unsigned r;
    asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ unsigned h2fma(unsigned a, unsigned b, unsigned c)
{
    unsigned r;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

// acc[0..3] += dequant(word) * x2, pairs (0,4) (1,5) (2,6) (3,7)
__device__ __forceinline__ void dq_fma(unsigned w, unsigned x2, unsigned *acc)
{
    const unsigned mg = 0x64006400u, lo = 0x000f000fu, hi = 0x00f000f0u;
    const unsigned b1024 = 0x64006400u;                  // 1024, 1024
    const unsigned s16 = 0x2c002c00u, b64 = 0xd400d400u; // 1/16, -64
    unsigned v0 = h2sub(lop3_and_or(w, lo, mg), b1024);
    unsigned v1 = h2fma(lop3_and_or(w, hi, mg), s16, b64);
    unsigned w8 = w >> 8;
    unsigned v2 = h2sub(lop3_and_or(w8, lo, mg), b1024);
    unsigned v3 = h2fma(lop3_and_or(w8, hi, mg), s16, b64);
    acc[0] = h2fma(v0, x2, acc[0]);
    acc[1] = h2fma(v1, x2, acc[1]);
    acc[2] = h2fma(v2, x2, acc[2]);
    acc[3] = h2fma(v3, x2, acc[3]);
}

// TN threads across a row (16 bytes = 32 columns each), TK = 256 / TN rows;
// U rows a load batch; PF: the next batch loaded before this one is used.
// Grid (N / (32 TN), KS); slice = K / KS rows (whole groups). Y += (atomics).
template <int TN, int U, int PF, int MINB, int MODE>
__global__ void __launch_bounds__(256, MINB)
    qg(const uint4 *__restrict__ W, const __half *__restrict__ X, const __half *__restrict__ S, float *__restrict__ Y,
       int K, int N, int slice)
{
    constexpr int TK = 256 / TN, RG = 128 / TK; // rows a thread a group
    static_assert(RG % U == 0, "U divides a group's rows");
    __shared__ __half xs[4096];
    __shared__ float red[TK][TN * 32 + 1];
    const int tid = threadIdx.x, tn = tid % TN, tk = tid / TN;
    const int k0 = blockIdx.y * slice, k1 = min(K, k0 + slice);
    for (int i = tid; i < k1 - k0; i += 256) xs[i] = X[k0 + i];
    __syncthreads();
    const int c = blockIdx.x * TN + tn; // uint4 column of the row
    const int rowq = N / 32;            // uint4s a row
    float acc[32];
#pragma unroll
    for (int j = 0; j < 32; j++) acc[j] = 0.f;
    uint4 buf[U], nxt[U];
    auto load = [&](uint4 *b, int r0) {
#pragma unroll
        for (int u = 0; u < U; u++) b[u] = __ldg(W + (size_t)(r0 + tk + u * TK) * rowq + c);
    };
    const int nb = (k1 - k0) / (U * TK);
    if (PF) load(buf, k0);
    unsigned h[16];
    for (int bi = 0; bi < nb; bi++) {
        const int r0 = k0 + bi * U * TK;
        if (PF) {
            if (bi + 1 < nb) load(nxt, r0 + U * TK);
        } else {
            load(buf, r0);
        }
        if ((bi * U) % RG == 0) {
#pragma unroll
            for (int j = 0; j < 16; j++) h[j] = 0;
        }
        if (MODE == 1) { // loads only: fold the words so they are used
#pragma unroll
            for (int u = 0; u < U; u++) h[u & 15] ^= buf[u].x ^ buf[u].y ^ buf[u].z ^ buf[u].w;
        } else {
#pragma unroll
            for (int u = 0; u < U; u++) {
                __half xv = xs[r0 - k0 + tk + u * TK];
                unsigned short xb = __half_as_ushort(xv);
                unsigned x2 = (unsigned)xb | ((unsigned)xb << 16);
                dq_fma(buf[u].x, x2, h + 0);
                dq_fma(buf[u].y, x2, h + 4);
                dq_fma(buf[u].z, x2, h + 8);
                dq_fma(buf[u].w, x2, h + 12);
            }
        }
        if (((bi + 1) * U) % RG == 0) { // the group's last batch: scale into acc
            const int g = (r0 + U * TK - 1) / 128;
            const uint4 *sp = (const uint4 *)(S + (size_t)g * N + c * 32);
#pragma unroll
            for (int q = 0; q < 4; q++) {
                uint4 sv = __ldg(sp + q);
                unsigned s4[4] = {sv.x, sv.y, sv.z, sv.w};
#pragma unroll
                for (int p = 0; p < 4; p++) {
                    // columns 8q + 2p, 8q + 2p + 1 of this thread's 32
                    float2 sf = __half22float2(*(__half2 *)&s4[p]);
                    int col0 = 8 * q + 2 * p, col1 = col0 + 1;
                    // h[4q + i] holds columns (8q + i, 8q + i + 4)
                    auto hv = [&](int col) {
                        int i = col % 8, w = col / 8;
                        __half2 hh = *(__half2 *)&h[4 * w + (i & 3)];
                        return i < 4 ? __low2float(hh) : __high2float(hh);
                    };
                    acc[col0] += hv(col0) * sf.x;
                    acc[col1] += hv(col1) * sf.y;
                }
            }
        }
        if (PF) {
#pragma unroll
            for (int u = 0; u < U; u++) buf[u] = nxt[u];
        }
    }
#pragma unroll
    for (int j = 0; j < 32; j++) red[tk][tn * 32 + j] = acc[j];
    __syncthreads();
    for (int i = tid; i < TN * 32; i += 256) {
        float s = 0;
        for (int t = 0; t < TK; t++) s += red[t][i];
        atomicAdd(Y + blockIdx.x * TN * 32 + i, s);
    }
}


// Tensor-core form (f32 sums): mma.m16n8k16 with W^T as A (16 columns x 16
// rows of K a tile) and X as B (16 x 8, column 0 real). Lane (g, t) of a
// warp reads rows 4t..4t+3 of each k16 step (k slots 2t, 2t+1, 2t+8,
// 2t+9) and 8 bytes (16 columns) at 8g of the block's 64-byte run; prmt
// puts byte b of two rows into bytes 0 and 2, lop3 with 0x6400 makes the
// k pair of the low nibble (1024 + q) and of the high one (1024 + 16q):
// a tile is 2 prmt + 4 lop3 + 1 mma for 8 weights a lane. The 1024 x sum(x)
// bias and the 1/16 come off once a group. Warp w takes groups w, w + 8,
// ... of the block's slice; U k16 steps a batch, the next batch loaded
// before this one is used.
__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned s)
{
    unsigned r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(s));
    return r;
}
__device__ __forceinline__ void mma16816(float *c, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                         unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int U, int MINB>
__global__ void __launch_bounds__(256, MINB)
    qt(const uint4 *__restrict__ W4, const __half *__restrict__ X, const __half *__restrict__ S, float *__restrict__ Y,
       int K, int N, int slice)
{
    static_assert(8 % U == 0, "U divides a group's 8 steps");
    const uint2 *W = (const uint2 *)W4;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int k0 = blockIdx.y * slice, k1 = min(K, k0 + slice);
    const int rowq = N / 16; // uint2s a row
    const int c = blockIdx.x * 8 + g;
    const unsigned mg = 0x64006400u, lo = 0x000f000fu, hi = 0x00f000f0u;
    float acc[16];
#pragma unroll
    for (int j = 0; j < 16; j++) acc[j] = 0.f;
    uint2 buf[U][4], nxt[U][4];
    auto load = [&](uint2 (*b)[4], int r0) {
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int i = 0; i < 4; i++) b[u][i] = __ldg(W + (size_t)(r0 + 16 * u + 4 * t + i) * rowq + c);
    };
    for (int gr = k0 + warp * 128; gr < k1; gr += 8 * 128) {
        float cc[8][4];
#pragma unroll
        for (int j = 0; j < 8; j++) cc[j][0] = cc[j][1] = cc[j][2] = cc[j][3] = 0.f;
        float xs = 0.f;
        load(buf, gr);
#pragma unroll
        for (int st = 0; st < 8; st += U) {
            if (st + U < 8) load(nxt, gr + 16 * (st + U));
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int kb = gr + 16 * (st + u);
                uint2 xv = *(const uint2 *)(X + kb + 4 * t);
                float2 f0 = __half22float2(*(__half2 *)&xv.x), f1 = __half22float2(*(__half2 *)&xv.y);
                xs += f0.x + f0.y + f1.x + f1.y;
                if (g) xv.x = xv.y = 0;
#pragma unroll
                for (int w = 0; w < 2; w++)
#pragma unroll
                    for (int b = 0; b < 4; b++) {
                        const unsigned sel = b | (b << 4) | ((4 + b) << 8) | ((4 + b) << 12);
                        unsigned w0 = w ? buf[u][0].y : buf[u][0].x, w1 = w ? buf[u][1].y : buf[u][1].x;
                        unsigned w2 = w ? buf[u][2].y : buf[u][2].x, w3 = w ? buf[u][3].y : buf[u][3].x;
                        unsigned p01 = prmt(w0, w1, sel), p23 = prmt(w2, w3, sel);
                        mma16816(cc[4 * w + b], lop3_and_or(p01, lo, mg), lop3_and_or(p01, hi, mg),
                                 lop3_and_or(p23, lo, mg), lop3_and_or(p23, hi, mg), xv.x, xv.y);
                    }
            }
            if (st + U < 8) {
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int i = 0; i < 4; i++) buf[u][i] = nxt[u][i];
            }
        }
        // sum(x) over the group: the four t lanes of g = 0 hold a quarter each
        xs += __shfl_xor_sync(0xffffffffu, xs, 1);
        xs += __shfl_xor_sync(0xffffffffu, xs, 2);
        const float bias = 1024.f * xs;
        const uint4 *sp = (const uint4 *)(S + (size_t)(gr / 128) * N + 16 * c);
        uint4 s0 = __ldg(sp), s1 = __ldg(sp + 1);
        unsigned sw[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
#pragma unroll
        for (int j = 0; j < 8; j++) {
            float2 sf = __half22float2(*(__half2 *)&sw[j]); // columns 2j (low nibble), 2j + 1
            acc[2 * j] += (cc[j][0] - bias) * sf.x;
            acc[2 * j + 1] += (cc[j][2] - bias) * (sf.y * 0.0625f);
        }
    }
    __shared__ float red[8][8][16];
    if (t == 0)
#pragma unroll
        for (int j = 0; j < 16; j++) red[warp][g][j] = acc[j];
    __syncthreads();
    if (threadIdx.x < 128) {
        int gg = threadIdx.x / 16, j = threadIdx.x % 16;
        float s = 0;
        for (int w = 0; w < 8; w++) s += red[w][gg][j];
        atomicAdd(Y + 16 * (blockIdx.x * 8 + gg) + j, s);
    }
}

// The tensor-core form for any width b in {1, 2, 4, 8} (fields never
// straddle a byte): a lane reads 4 rows x 8 bytes (64 / b columns) of a
// k16 step; for each byte, prmt puts it from rows (0, 1) and from rows
// (2, 3) into bytes 0 and 2 of a word, and field i (bits i b .. i b + b - 1)
// of both halves becomes the k pair (1024 + 2^(i b) q) with one lop3.
// Columns 2j and 2j + 1 of the lane are tile j's rows g and g + 8.
template <int BITS, int U, int MINB>
__global__ void __launch_bounds__(256, MINB)
    qtb(const uint4 *__restrict__ W4, const __half *__restrict__ X, const __half *__restrict__ S, float *__restrict__ Y,
        int K, int N, int slice)
{
    constexpr int C = 64 / BITS, FPB = 8 / BITS, T = C / 2; // columns, fields a byte, tiles
    const uint2 *W = (const uint2 *)W4;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int k0 = blockIdx.y * slice, k1 = min(K, k0 + slice);
    const int rowq = N * BITS / 64; // uint2s a row
    const int c = blockIdx.x * 8 + g;
    const unsigned mg = 0x64006400u;
    float acc[C];
#pragma unroll
    for (int j = 0; j < C; j++) acc[j] = 0.f;
    uint2 buf[U][4], nxt[U][4];
    auto load = [&](uint2 (*b)[4], int r0) {
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int i = 0; i < 4; i++) b[u][i] = __ldg(W + (size_t)(r0 + 16 * u + 4 * t + i) * rowq + c);
    };
    for (int gr = k0 + warp * 128; gr < k1; gr += 8 * 128) {
        float cc[T][4];
#pragma unroll
        for (int j = 0; j < T; j++) cc[j][0] = cc[j][1] = cc[j][2] = cc[j][3] = 0.f;
        float xs = 0.f;
        load(buf, gr);
#pragma unroll
        for (int st = 0; st < 8; st += U) {
            if (st + U < 8) load(nxt, gr + 16 * (st + U));
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int kb = gr + 16 * (st + u);
                uint2 xv = *(const uint2 *)(X + kb + 4 * t);
                float2 f0 = __half22float2(*(__half2 *)&xv.x), f1 = __half22float2(*(__half2 *)&xv.y);
                xs += f0.x + f0.y + f1.x + f1.y;
                if (g) xv.x = xv.y = 0;
                unsigned p01[8], p23[8];
#pragma unroll
                for (int b = 0; b < 8; b++) {
                    const unsigned bb = b & 3, sel = bb | (bb << 4) | ((4 + bb) << 8) | ((4 + bb) << 12);
                    unsigned w0 = b < 4 ? buf[u][0].x : buf[u][0].y, w1 = b < 4 ? buf[u][1].x : buf[u][1].y;
                    unsigned w2 = b < 4 ? buf[u][2].x : buf[u][2].y, w3 = b < 4 ? buf[u][3].x : buf[u][3].y;
                    p01[b] = prmt(w0, w1, sel);
                    p23[b] = prmt(w2, w3, sel);
                }
                auto half2_of = [&](const unsigned *p, int col) {
                    const int b = col / FPB, i = col % FPB;
                    const unsigned m1 = ((1u << BITS) - 1) << (i * BITS);
                    return lop3_and_or(p[b], m1 | (m1 << 16), mg);
                };
#pragma unroll
                for (int j = 0; j < T; j++)
                    mma16816(cc[j], half2_of(p01, 2 * j), half2_of(p01, 2 * j + 1), half2_of(p23, 2 * j),
                             half2_of(p23, 2 * j + 1), xv.x, xv.y);
            }
            if (st + U < 8) {
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int i = 0; i < 4; i++) buf[u][i] = nxt[u][i];
            }
        }
        xs += __shfl_xor_sync(0xffffffffu, xs, 1);
        xs += __shfl_xor_sync(0xffffffffu, xs, 2);
        const float bias = 1024.f * xs;
        const __half *sp = S + (size_t)(gr / 128) * N + C * c;
#pragma unroll
        for (int j = 0; j < T; j++) {
            float2 sf = __half22float2(*(const __half2 *)(sp + 2 * j));
            const float e0 = 1.f / (float)(1u << ((2 * j) % FPB * BITS)), e1 = 1.f / (float)(1u << ((2 * j + 1) % FPB * BITS));
            acc[2 * j] += (cc[j][0] - bias) * (sf.x * e0);
            acc[2 * j + 1] += (cc[j][2] - bias) * (sf.y * e1);
        }
    }
    __shared__ float red[8][8][C];
    if (t == 0)
#pragma unroll
        for (int j = 0; j < C; j++) red[warp][g][j] = acc[j];
    __syncthreads();
    for (int i = threadIdx.x; i < 8 * C; i += 256) {
        int gg = i / C, j = i % C;
        float s = 0;
        for (int w = 0; w < 8; w++) s += red[w][gg][j];
        atomicAdd(Y + C * (blockIdx.x * 8 + gg) + j, s);
    }
}

// Each width's run: the tensor-core form against the loads alone.
typedef void (*kfn)(const uint4 *, const __half *, const __half *, float *, int, int, int);

// One problem: W (K x N, BITS-bit codes packed along rows) in NB device
// copies (enough to rotate past L2), X (1 x K), S (groups of 128 x N), the
// f32 Y, and a float64 reference at every step-th column.
struct problem {
    int N, K, bits, NB, step;
    size_t wb, sb;
    std::vector<uint4 *> dw;
    __half *dx, *ds;
    float *dy;
    std::vector<double> ref;
};

static void problem_open(problem &P, int N, int K, int bits, unsigned seed)
{
    P.N = N, P.K = K, P.bits = bits, P.step = N / 64 + 1;
    P.wb = (size_t)K * N * bits / 8, P.sb = (size_t)(K / 128) * N * 2;
    P.NB = std::max(2, (int)(512ull * (1 << 20) / P.wb));
    std::vector<unsigned char> hw(P.wb);
    std::vector<__half> hx(K), hs((size_t)(K / 128) * N);
    srand(seed);
    for (auto &v : hw) v = rand() & 255;
    for (auto &v : hx) v = __float2half((rand() / (float)RAND_MAX - 0.5f) * 2);
    for (auto &v : hs) v = __float2half((rand() / (float)RAND_MAX) * 0.1f);
    P.dw.resize(P.NB);
    for (auto &p : P.dw) {
        CK(cudaMalloc(&p, P.wb));
        CK(cudaMemcpy(p, hw.data(), P.wb, cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc(&P.dx, K * 2));
    CK(cudaMalloc(&P.ds, hs.size() * 2));
    CK(cudaMalloc(&P.dy, N * 4));
    CK(cudaMemcpy(P.dx, hx.data(), K * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(P.ds, hs.data(), hs.size() * 2, cudaMemcpyHostToDevice));
    P.ref.assign(N, 0);
    for (int n = 0; n < N; n += P.step)
        for (int k = 0; k < K; k++) {
            size_t bit = ((size_t)k * N + n) * bits;
            int code = (hw[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
            P.ref[n] += code * (double)__half2float(hs[(size_t)(k / 128) * N + n]) * __half2float(hx[k]);
        }
}

static void problem_close(problem &P)
{
    for (auto p : P.dw) cudaFree(p);
    cudaFree(P.dx);
    cudaFree(P.ds);
    cudaFree(P.dy);
}

// One launch of f from a zeroed Y: its relative L2 error on the sampled columns.
static double problem_check(problem &P, kfn f, dim3 grid, int slice)
{
    CK(cudaMemset(P.dy, 0, P.N * 4));
    f<<<grid, 256>>>(P.dw[0], P.dx, P.ds, P.dy, P.K, P.N, slice);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> hy(P.N);
    CK(cudaMemcpy(hy.data(), P.dy, P.N * 4, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (int n = 0; n < P.N; n += P.step) num += (hy[n] - P.ref[n]) * (hy[n] - P.ref[n]), den += P.ref[n] * P.ref[n];
    return sqrt(num / den);
}

// The median of 50 launches of f, each timed alone by events, W rotated: us.
static double problem_time(problem &P, kfn f, dim3 grid, int slice)
{
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> t;
    for (int r = 0; r < 60; r++) {
        cudaEventRecord(e0);
        f<<<grid, 256>>>(P.dw[r % P.NB], P.dx, P.ds, P.dy, P.K, P.N, slice);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r >= 10) t.push_back(ms);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2] * 1e3;
}

template <int BITS>
static void run_bits(int N, int K)
{
    constexpr int C = 64 / BITS;
    problem P;
    problem_open(P, N, K, BITS, 2);
    for (int ks : {2, 4, 8, 16}) {
        int slice = K / ks;
        if (slice % 1024) continue;
        dim3 grid(N / (8 * C), ks);
        for (int mb : {1, 2}) {
            kfn f = mb == 1 ? qtb<BITS, 1, 1> : qtb<BITS, 1, 2>;
            double err = problem_check(P, f, grid, slice), us = problem_time(P, f, grid, slice);
            printf("uint%d N=%5d K=%5d mma MB%d KS=%2d grid %4d  err %.1e  %7.2f us  %.3f TB/s\n", BITS, N, K, mb, ks,
                   grid.x * grid.y, err, us, (P.wb + P.sb) / (us * 1e-6) / 1e12);
        }
    }
    problem_close(P);
}

struct variant {
    const char *name;
    kfn f;
    int TN;
};

#define V(TN, U, PF, MB, MODE) {#TN " " #U " " #PF " " #MB " " #MODE, qg<TN, U, PF, MB, MODE>, TN}

int main(int argc, char **argv)
{
    if (argc > 1) { // the widths: qp bits
        const int shapes2[][2] = {{8192, 8192}, {57344, 8192}, {8192, 28672}};
        for (auto &sh : shapes2) {
            run_bits<1>(sh[0], sh[1]);
            run_bits<2>(sh[0], sh[1]);
            run_bits<4>(sh[0], sh[1]);
            run_bits<8>(sh[0], sh[1]);
        }
        return 0;
    }
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, 0));
    printf("device %s, %d SMs, L2 %d MB\n", pr.name, pr.multiProcessorCount, pr.l2CacheSize >> 20);
    const int shapes[][2] = {{8192, 8192}, {57344, 8192}, {8192, 28672}}; // N, K
    const variant vs[] = {
        V(16, 8, 0, 2, 0), V(16, 4, 1, 2, 0), V(16, 8, 1, 1, 0), V(16, 2, 1, 2, 0), V(8, 4, 0, 2, 0),
        V(32, 4, 0, 2, 0), V(16, 8, 0, 2, 1), V(16, 4, 1, 2, 1),
        {"mma U1 MB2", qt<1, 2>, 4}, {"mma U2 MB2", qt<2, 2>, 4}, {"mma U4 MB2", qt<4, 2>, 4},
        {"mma U2 MB3", qt<2, 3>, 4}, {"mma U4 MB1", qt<4, 1>, 4}, {"mma U8 MB1", qt<8, 1>, 4},
    };
    const int nv = sizeof vs / sizeof vs[0];
    // copy bandwidth, 1 GiB, read + write
    {
        size_t n = 1ull << 30;
        void *a, *b;
        CK(cudaMalloc(&a, n));
        CK(cudaMalloc(&b, n));
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        CK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
        std::vector<float> t;
        for (int r = 0; r < 10; r++) {
            cudaEventRecord(e0);
            cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float ms;
            cudaEventElapsedTime(&ms, e0, e1);
            t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        printf("copy: %.3f TB/s (read + write)\n", 2.0 * n / (t[5] * 1e-3) / 1e12);
        cudaFree(a);
        cudaFree(b);
    }
    for (auto &sh : shapes) {
        problem P;
        problem_open(P, sh[0], sh[1], 4, 1);
        for (int v = 0; v < nv; v++) {
            int cb = P.N / (32 * vs[v].TN);
            for (int ks : {4, 8, 16, 32}) {
                int slice = P.K / ks;
                if (slice % 128 || slice > 4096) continue;
                dim3 grid(cb, ks);
                double err = problem_check(P, vs[v].f, grid, slice), us = problem_time(P, vs[v].f, grid, slice);
                printf("N=%5d K=%5d  TN U PF MINB MODE = %-12s KS=%2d grid %4d  err %.1e  %7.2f us  %.3f TB/s\n", P.N,
                       P.K, vs[v].name, ks, cb * ks, err, us, (P.wb + P.sb) / (us * 1e-6) / 1e12);
            }
        }
        problem_close(P);
    }
    return 0;
}
