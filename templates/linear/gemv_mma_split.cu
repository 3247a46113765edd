{#
  The pre-pass of linear/gemv_mma.cu: once per launch (not once per block), applies the
  prologue (none, rmsnorm, rmsnorm1p, swiglu: as gemv_ring.cu) to T rows of f32
  activations and writes each value's three exact bf16 parts (hi + mid + lo, see
  gemv_mma.cu) to a global buffer in the order gemv_mma.cu's B-fragment loads read them:
  uint4 index ((group * NT + n-tile) * XQ + piece) * 32 + lane, lane = (column % 8) * 4 +
  lane quarter, column c = 3 * token + part. So every warp of the GEMV loads its slice's
  fragments straight from L2 (16 bytes a lane, contiguous per warp), with no shared slab
  and no block barrier. Columns past 3T of the last n-tile are not written (their
  outputs are never read: an mma output column depends on its own B column only).

  Grid: (ceil(groups * 4 / BLOCK), T); thread u of a token is unit (group u / 4, lane
  quarter u % 4). RMSNorm: every block sums its token's squares itself (K floats from L2).

  Programmatic dependent launch: the kernel waits before its first read of x (written by
  the kernel before) and before its first write (the buffer comes from the stream-ordered
  pool), then lets the GEMV launch: the GEMV's weight loads overlap this kernel.

  Params: format, tt, prologue. Arguments: x, pw, eps, frag, T, K.
#}
{%- set prologue = prologue | default(value="none") %}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
{{ format_code }}

#define TT {{ tt }}
#define BLOCK 256
#define NCOL (3 * TT)
#define NT ((NCOL + 7) / 8)
#define PAIRS (FMT_LANE_N / 2)
#define XQ (PAIRS / 4)
{%- if prologue == "rmsnorm" or prologue == "rmsnorm1p" %}
#define PRO_RMS 1
{%- else %}
#define PRO_RMS 0
{%- endif %}
{%- if prologue == "swiglu" %}
#define PRO_SWIGLU 1
{%- else %}
#define PRO_SWIGLU 0
{%- endif %}

// Splits the pair (a, b) into three bf16x2 whose sums are exactly a and b.
__device__ __forceinline__ void split3(float a, float b, u32* hi, u32* mid, u32* lo) {
    const u32 h = pack_bf16x2(a, b);
    const float ra = a - __uint_as_float(h << 16);
    const float rb = b - __uint_as_float(h & 0xffff0000u);
    const u32 m = pack_bf16x2(ra, rb);
    const float la = ra - __uint_as_float(m << 16);
    const float lb = rb - __uint_as_float(m & 0xffff0000u);
    *hi = h;
    *mid = m;
    *lo = pack_bf16x2(la, lb);  // exact: at most 8 significant bits remain
}

extern "C" __global__ void __launch_bounds__(BLOCK)
{{ kernel_name }}(const float* __restrict__ x, const float* __restrict__ pw, float eps,
                  uint4* __restrict__ frag, int T, int K)
{
    NINFER_PDL_WAIT();
    NINFER_PDL_TRIGGER();
    const int tk = blockIdx.y;
    const int groups = K / FMT_GROUP;
    const long long x_stride = PRO_SWIGLU ? 2LL * K : (long long)K;
    const float* xr = x + (long long)tk * x_stride;
#if PRO_RMS
    __shared__ float red[32];
    float ss = 0.0f;
    for (int i = threadIdx.x; i < K / 4; i += BLOCK) {
        const float4 v = __ldg((const float4*)xr + i);
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    const float ir = rsqrtf(block_sum(ss, red) / (float)K + eps);
#endif
    const int u = blockIdx.x * BLOCK + threadIdx.x;
    if (u >= groups * 4 || tk >= T) return;
    const int tq = u & 3;
    const int gl = u >> 2;
    const long long k0 = (long long)gl * FMT_GROUP + (((tq & 1) << 1) | (tq >> 1)) * FMT_LANE_N;
    float v[FMT_LANE_N];
#pragma unroll
    for (int i = 0; i < FMT_LANE_N / 4; ++i) {
        const float4 a = __ldg((const float4*)(xr + k0) + i);
        v[4 * i] = a.x; v[4 * i + 1] = a.y; v[4 * i + 2] = a.z; v[4 * i + 3] = a.w;
    }
#if PRO_RMS
#pragma unroll
    for (int i = 0; i < FMT_LANE_N / 4; ++i) {
        const float4 w4 = __ldg((const float4*)(pw + k0) + i);
        const float wv[4] = { w4.x, w4.y, w4.z, w4.w };
#pragma unroll
        for (int m = 0; m < 4; ++m) {
{%- if prologue == "rmsnorm1p" %}
            const float scale = 1.0f + wv[m];
{%- else %}
            const float scale = wv[m];
{%- endif %}
            v[4 * i + m] = v[4 * i + m] * ir * scale;
        }
    }
#elif PRO_SWIGLU
#pragma unroll
    for (int i = 0; i < FMT_LANE_N / 4; ++i) {
        const float4 a = __ldg((const float4*)(xr + K + k0) + i);
        const float up[4] = { a.x, a.y, a.z, a.w };
#pragma unroll
        for (int m = 0; m < 4; ++m) {
            const float gv = v[4 * i + m];
            const float silu = __fdiv_rn(gv, __fadd_rn(1.0f, expf(-gv)));
            v[4 * i + m] = __fmul_rn(silu, up[m]);
        }
    }
#endif
    u32 fr[3][PAIRS];
#pragma unroll
    for (int i = 0; i < PAIRS; ++i)
        split3(v[fmt_pair_lo(i)], v[fmt_pair_hi(i)], &fr[0][i], &fr[1][i], &fr[2][i]);
#pragma unroll
    for (int p = 0; p < 3; ++p) {
        const int c = 3 * tk + p;
        uint4* d = frag + ((long long)(gl * NT + (c >> 3)) * XQ) * 32 + (c & 7) * 4 + tq;
#pragma unroll
        for (int h = 0; h < XQ; ++h)
            d[h * 32] = make_uint4(fr[p][4 * h], fr[p][4 * h + 1], fr[p][4 * h + 2], fr[p][4 * h + 3]);
    }
}
