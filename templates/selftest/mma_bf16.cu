{#
  The tensor-core wrappers of common/mma.cuh on real data: Y[M,N] (f32) = A[M,K] * B[N,K]^T,
  A and B bf16 row-major. One warp per 16x8 tile of Y, fragments loaded straight from
  global memory. Not a fast GEMM: it qualifies the fragment layout that later kernels use.
  Requires M % 16 == 0, N % 8 == 0, K % 16 == 0.
#}
{% include "common/types.cuh" %}
{% include "common/mma.cuh" %}

extern "C" __global__ void __launch_bounds__(32)
{{ kernel_name }}(const bf16_t* __restrict__ a,
                  const bf16_t* __restrict__ b,
                  float* __restrict__ y,
                  int M, int N, int K)
{
    const int lane = threadIdx.x;
    const int g = lane >> 2;
    const int t = lane & 3;
    const int row0 = blockIdx.y * 16;
    const int col0 = blockIdx.x * 8;

    // Two consecutive bf16 along K form one 32-bit fragment register.
    const u32* a_lo = (const u32*)(a + (long long)(row0 + g) * K);
    const u32* a_hi = (const u32*)(a + (long long)(row0 + g + 8) * K);
    const u32* b_n  = (const u32*)(b + (long long)(col0 + g) * K);

    MmaAccum16x8 acc;
    mma_zero(acc);
    for (int k0 = 0; k0 < K; k0 += 16) {
        const int w0 = (k0 >> 1) + t;      // 32-bit word of elements k0+2t, k0+2t+1
        const u32 af[4] = { a_lo[w0], a_hi[w0], a_lo[w0 + 4], a_hi[w0 + 4] };
        const u32 bf[2] = { b_n[w0], b_n[w0 + 4] };
        mma_bf16_16x8x16(acc, af, bf);
    }
    float* y0 = y + (long long)(row0 + g) * N + col0 + 2 * t;
    float* y1 = y + (long long)(row0 + g + 8) * N + col0 + 2 * t;
    y0[0] = acc.c[0];
    y0[1] = acc.c[1];
    y1[0] = acc.c[2];
    y1[1] = acc.c[3];
}
