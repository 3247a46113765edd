{#
  Tiled linear on tensor cores (the A16 route): Y[T,N] = X[T,K] * W[N,K]^T (+ epilogue),
  W in any weight format, X and Y bf16, f32 accumulation.

  A block computes a BM x BN tile of Y (BM along T, BN along N). Per K step of BK = 64
  it stages the X tile (bf16) and the W tile (decoded by the format's fmt_decode_group,
  rounded to bf16) in shared memory, then each warp runs mma.sync m16n8k16 over its
  WM x WN sub-tile. Rows are padded by 8 bf16 so fragment loads hit distinct banks.

  Params: format, bm, bn, warps_m, warps_n, epilogue ("none" | "residual" | "swiglu").
  Needs K % 64 == 0 and FMT_GROUP dividing 64 (or 64 dividing FMT_GROUP's multiples).
#}
{% include "common/types.cuh" %}
{% include "common/mma.cuh" %}
{{ format_code }}

#define BM {{ bm }}
#define BN {{ bn }}
#define BK 64
#define WARPS_M {{ warps_m }}
#define WARPS_N {{ warps_n }}
#define WM (BM / WARPS_M)
#define WN (BN / WARPS_N)
#define MT (WM / 16)
#define NT (WN / 8)
#define LDS (BK + 8)
{%- if epilogue == "swiglu" %}
#define MATS 2
{%- else %}
#define MATS 1
{%- endif %}
#define THREADS (WARPS_M * WARPS_N * 32)

// Decodes W rows [n0, n0+BN) x [k0, k0+BK) into bf16 shared memory.
__device__ __forceinline__ void stage_w(bf16_t* ws, const u8* __restrict__ q, const u8* __restrict__ s,
                                        long long q_row_bytes, long long s_row_bytes,
                                        int n0, int k0, int N)
{
#if FMT_GROUP >= BK
    // One decode call covers the whole K step (and more): decode, keep our slice.
    for (int r = threadIdx.x; r < BN; r += THREADS) {
        const int row = min(n0 + r, N - 1);
        float w[FMT_GROUP];
        fmt_decode_group(q + row * q_row_bytes, s + row * s_row_bytes, k0 / FMT_GROUP, w);
        const int off = k0 % FMT_GROUP;
#pragma unroll
        for (int i = 0; i < BK; i += 2) {
            *(u32*)(ws + r * LDS + i) = pack_bf16x2(w[off + i], w[off + i + 1]);
        }
    }
#else
    const int per_row = BK / FMT_GROUP;
    for (int job = threadIdx.x; job < BN * per_row; job += THREADS) {
        const int r = job / per_row;
        const int gi = job % per_row;
        const int row = min(n0 + r, N - 1);
        float w[FMT_GROUP];
        fmt_decode_group(q + row * q_row_bytes, s + row * s_row_bytes, k0 / FMT_GROUP + gi, w);
#pragma unroll
        for (int i = 0; i < FMT_GROUP; i += 2) {
            *(u32*)(ws + r * LDS + gi * FMT_GROUP + i) = pack_bf16x2(w[i], w[i + 1]);
        }
    }
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const u8* __restrict__ q2, const u8* __restrict__ s2,
                  long long q_row_bytes, long long s_row_bytes,
                  const bf16_t* __restrict__ x,
                  const bf16_t* residual,
                  bf16_t* y,
                  int T, int N, int K)
{
    __shared__ __align__(16) bf16_t xs[BM * LDS];
    __shared__ __align__(16) bf16_t ws[MATS][BN * LDS];

    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int g = lane >> 2;
    const int t4 = lane & 3;
    const int wm = warp / WARPS_N;
    const int wn = warp % WARPS_N;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    MmaAccum16x8 acc[MATS][MT][NT];
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) mma_zero(acc[m][i][j]);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // X tile: BM rows x 64 bf16 = 8 x 16-byte vectors per row; rows past T are zero.
        for (int v = threadIdx.x; v < BM * (BK / 8); v += THREADS) {
            const int r = v / (BK / 8);
            const int c = (v % (BK / 8)) * 8;
            uint4 val = make_uint4(0u, 0u, 0u, 0u);
            if (m0 + r < T) val = *(const uint4*)(x + (long long)(m0 + r) * K + k0 + c);
            *(uint4*)(xs + r * LDS + c) = val;
        }
        stage_w(ws[0], q, s, q_row_bytes, s_row_bytes, n0, k0, N);
{%- if epilogue == "swiglu" %}
        stage_w(ws[1], q2, s2, q_row_bytes, s_row_bytes, n0, k0, N);
{%- endif %}
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            u32 af[MT][4];
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                const bf16_t* a = xs + (wm * WM + i * 16 + g) * LDS + kk + 2 * t4;
                af[i][0] = *(const u32*)(a);
                af[i][1] = *(const u32*)(a + 8 * LDS);
                af[i][2] = *(const u32*)(a + 8);
                af[i][3] = *(const u32*)(a + 8 * LDS + 8);
            }
#pragma unroll
            for (int m = 0; m < MATS; ++m) {
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    const bf16_t* b = ws[m] + (wn * WN + j * 8 + g) * LDS + kk + 2 * t4;
                    const u32 bf[2] = { *(const u32*)(b), *(const u32*)(b + 8) };
#pragma unroll
                    for (int i = 0; i < MT; ++i) mma_bf16_16x8x16(acc[m][i][j], af[i], bf);
                }
            }
        }
        __syncthreads();
    }

    // Accumulator element e of tile (i, j): row g (+8 for e >= 2), column 2*t4 + (e & 1).
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int row = m0 + wm * WM + i * 16 + g + (e >= 2 ? 8 : 0);
                const int col = n0 + wn * WN + j * 8 + 2 * t4 + (e & 1);
                if (row < T && col < N) {
                    float v = acc[0][i][j].c[e];
{%- if epilogue == "swiglu" %}
                    v = silu_f32(v) * acc[1][i][j].c[e];
{%- endif %}
                    const long long o = (long long)row * N + col;
{%- if epilogue == "residual" %}
                    v += bf16_to_f32(residual[o]);
{%- endif %}
                    y[o] = f32_to_bf16(v);
                }
            }
        }
    }
}
