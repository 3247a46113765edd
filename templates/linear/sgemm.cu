{#
  Tiled f32 GEMM on CUDA cores for prefill in exact mode:
  Y[T,N] = X[T,K] * W[N,K]^T (+ R), X, Y, R f32 row-major, W in any weight format,
  f32 FMA accumulation in ascending k (one sequential sum per output).

  Block tile: BN = 128 weight rows x BT (64 or 128) tokens x BK = 32 along K; 256 threads.
  Each thread owns an 8 (n) x BT/16 (t) register tile: n in {tx*4 .. +3, 64 + tx*4 .. +3},
  t in {ty*4 .. +3 (, 64 + ty*4 .. +3)}, tx = tid % 16, ty = tid / 16, so every shared read
  is a float4 that is either distinct per lane or a broadcast (no bank conflicts).

  Loading is split by warp: threads 0..127 (warps 0-3) each own one weight row of the tile,
  threads 128..255 (warps 4-7) the activations. Both stage the NEXT k-tile's raw bytes in
  registers while the current one is multiplied out of shared memory (register double
  buffering, one shared buffer, two barriers per k-tile). A weight thread stages the raw
  quant words (QW u32) and scale halves (SH u16) of the decode group that holds its 32 k
  values, and after the multiply decodes them with the format's own fmt_decode_group
  (called on the staged copy with g = 0, so decode is bit-identical to every other route)
  and writes the 32 floats k-major into Ws. Group-64 formats decode the whole group and
  keep the half this k-tile needs.

  Edges: rows past N and tokens past T are clamped loads whose results are never stored;
  dense formats take any K % 4 == 0 (words and float4 past K are zeros); the other formats
  need K % FMT_GROUP == 0 (so a k-tile never ends inside a group).

  Params: format, epilogue ("none" | "residual"), bt (64 | 128), qw, sh (staging words,
  computed on the host from the format's layout), minb (the launch-bounds block count per
  SM: 2 caps registers at 128, which costs the quantized formats a 64-byte spill; 1 leaves
  them ~150 and one block per SM).
  Args: q, s planes and row strides, x, residual (may equal y), y, T, N, K, vec (1 when N % 4
  == 0 and y, residual are 16-byte aligned: float4 stores).
#}
{% include "common/types.cuh" %}
{{ format_code }}

#define BN 128
#define BT {{ bt }}
#define BK 32
#define THREADS 256
#define TPT (BT / 16)          // tokens per thread
#define XF4 (BT / 16)          // float4 of X staged per loader thread (BT*BK/4 / 128)
#define QW {{ qw }}            // u32 words of one decode group in the quant plane
#define SH {{ sh }}            // u16 halves of one decode group's scales (0: none)
#define SHN (SH > 0 ? SH : 1)
#define UNIT FMT_GROUP         // elements fmt_decode_group writes
#define STAGE (QW > 4 * XF4 ? QW : 4 * XF4)

#if BK != 32
#error "the weight staging assumes 32-wide k-tiles"
#endif
#if UNIT != 32 && UNIT != 64
#error "sgemm decodes groups of 32 or 64"
#endif

extern "C" __global__ void __launch_bounds__(THREADS, {{ minb }})
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  long long q_row_bytes, long long s_row_bytes,
                  const float* __restrict__ x,
                  const float* residual,
                  float* y,
                  int T, int N, int K, int vec)
{
    __shared__ __align__(16) float Ws[BK][BN];
    __shared__ __align__(16) float Xs[BK][BT];

    const int tid = threadIdx.x;
    const int n0 = blockIdx.x * BN;
    const int t0 = blockIdx.y * BT;
    const int ktiles = (K + BK - 1) / BK;
    const bool wload = tid < 128;          // warp-uniform: warps 0-3 weights, 4-7 activations
    const int li = tid & 127;

    // Weight loader: row li of the tile (clamped: rows past N are computed, never stored).
    const long long wrow = min(n0 + li, N - 1);
    const u8* qrow = q + wrow * q_row_bytes;
#if SH > 0
    const u8* srow = s + wrow * s_row_bytes;
#endif
    // Activation loader: row xr of the tile, float4 chunks xc0 .. xc0 + XF4 - 1 of a k-tile.
    const int xr = li % BT;
    const int xc0 = (li / BT) * XF4;
    const float* xrow = x + (long long)min(t0 + xr, T - 1) * K;

    u32 stage[STAGE];
    __align__(4) unsigned short sstage[SHN];   // 4-aligned: i8_row reads its f32 scale

    // Issues the global loads of k-tile kt into the staging registers.
    auto load = [&](int kt) {
        const int k0 = kt * BK;
        if (wload) {
            const int g = k0 / UNIT;
            const u32* qg = (const u32*)(qrow + fmt_q_row_bytes((long long)g * UNIT));
#ifdef NINFER_FMT_DENSE
            // Elements per word; K % 4 == 0 keeps every word wholly inside or past K.
            const int epw = 4 / (int)sizeof(FMT_ELEM);
#pragma unroll
            for (int i = 0; i < QW; ++i) stage[i] = (k0 + i * epw < K) ? __ldg(qg + i) : 0u;
#else
#pragma unroll
            for (int i = 0; i < QW; ++i) stage[i] = __ldg(qg + i);
#endif
#if SH > 0
            // The group's scales start where those of groups 0..g-1 end (row-scaled formats:
            // fmt_s_row_bytes is constant, so the offset is 0).
            const unsigned short* sg = (const unsigned short*)(srow + (fmt_s_row_bytes((long long)(g + 1) * UNIT)
                                                 - fmt_s_row_bytes((long long)UNIT)));
#pragma unroll
            for (int i = 0; i < SH; ++i) sstage[i] = __ldg(sg + i);
#endif
        } else {
#pragma unroll
            for (int c = 0; c < XF4; ++c) {
                const int k = k0 + 4 * (xc0 + c);
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (k < K) v = __ldg((const float4*)(xrow + k));
                stage[4 * c + 0] = __float_as_uint(v.x);
                stage[4 * c + 1] = __float_as_uint(v.y);
                stage[4 * c + 2] = __float_as_uint(v.z);
                stage[4 * c + 3] = __float_as_uint(v.w);
            }
        }
    };

    // Decodes (weights) or moves (activations) the staged k-tile kt into shared memory.
    auto store = [&](int kt) {
        if (wload) {
            float w[UNIT];
            fmt_decode_group((const u8*)stage, (const u8*)sstage, 0, w);
#if UNIT == 64
            const bool hi = ((kt * BK) / 32) & 1;
#pragma unroll
            for (int j = 0; j < BK; ++j) Ws[j][li] = hi ? w[32 + j] : w[j];
#else
#pragma unroll
            for (int j = 0; j < BK; ++j) Ws[j][li] = w[j];
#endif
        } else {
#pragma unroll
            for (int c = 0; c < XF4; ++c) {
#pragma unroll
                for (int e = 0; e < 4; ++e) Xs[4 * (xc0 + c) + e][xr] = __uint_as_float(stage[4 * c + e]);
            }
        }
    };

    const int tx = tid & 15;
    const int ty = tid >> 4;
    float acc[8][TPT];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < TPT; ++j) acc[i][j] = 0.0f;

    if (ktiles > 0) load(0);
    for (int kt = 0; kt < ktiles; ++kt) {
        store(kt);
        __syncthreads();
        if (kt + 1 < ktiles) load(kt + 1);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const float4 a0 = *(const float4*)&Ws[kk][tx * 4];
            const float4 a1 = *(const float4*)&Ws[kk][64 + tx * 4];
            const float a[8] = { a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w };
            float b[TPT];
            const float4 b0 = *(const float4*)&Xs[kk][ty * 4];
            b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;
#if TPT == 8
            const float4 b1 = *(const float4*)&Xs[kk][64 + ty * 4];
            b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
#endif
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < TPT; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

    // Epilogue: thread (tx, ty) writes tokens t0 + {ty*4+j, 64+ty*4+j} at rows
    // n0 + {tx*4 .. +3, 64 + tx*4 .. +3}. A residual element is read by the thread that
    // writes it, before it writes it (R may be Y).
#pragma unroll
    for (int j = 0; j < TPT; ++j) {
        const int t = t0 + (j < 4 ? ty * 4 + j : 64 + ty * 4 + (j - 4));
        if (t >= T) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int n = n0 + h * 64 + tx * 4;
            const long long o = (long long)t * N + n;
            float v[4] = { acc[4 * h][j], acc[4 * h + 1][j], acc[4 * h + 2][j], acc[4 * h + 3][j] };
            if (vec && n + 3 < N) {
{%- if epilogue == "residual" %}
                const float4 r = *(const float4*)(residual + o);
                v[0] += r.x; v[1] += r.y; v[2] += r.z; v[3] += r.w;
{%- endif %}
                *(float4*)(y + o) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    if (n + e < N) {
{%- if epilogue == "residual" %}
                        v[e] += residual[o + e];
{%- endif %}
                        y[o + e] = v[e];
                    }
                }
            }
        }
    }
}
