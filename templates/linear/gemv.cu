{#
  Small-T linear: Y[T,N] = X[T,K] * W[N,K]^T (+ epilogue), W in any weight format, X and Y
  bf16 (or f32 with act = "f32": the exact route of the cuda backend's reference mode),
  f32 accumulation. For T up to `tt` columns per launch (the host tiles larger T).

  One warp per `rows` consecutive output rows; lanes stride over the row's groups, decode
  each group once (the format's fmt_decode_group) and use it for every column, so the
  weights are read once for all T columns. X is read through the read-only cache.

  Params: format, tt (max columns), rows (rows per warp), warps (per block),
  epilogue: "none" | "residual" (Y = XW^T + R) | "swiglu" (W holds gate, W2 up:
  Y = silu(X Wg^T) * (X Wu^T)).
  Weight planes: row r's quants at q + r*q_row_bytes, its scales at s + r*s_row_bytes.
#}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{{ format_code }}

#define TT {{ tt }}
{%- if act is defined and act == "f32" %}
typedef float act_t;
__device__ __forceinline__ float act_load(const act_t* p, long long i) { return p[i]; }
__device__ __forceinline__ act_t act_store(float v) { return v; }
{%- else %}
typedef bf16_t act_t;
__device__ __forceinline__ float act_load(const act_t* p, long long i) { return bf16_to_f32(p[i]); }
__device__ __forceinline__ act_t act_store(float v) { return f32_to_bf16(v); }
{%- endif %}
#define ROWS {{ rows }}
{%- if epilogue == "swiglu" %}
#define MATS 2
{%- else %}
#define MATS 1
{%- endif %}

// x[t*K + k0 .. k0+FMT_GROUP) as floats, dotted with a decoded group.
__device__ __forceinline__ float dot_group_bf16(const float* w, const bf16_t* __restrict__ x) {
    float acc = 0.0f;
#if FMT_GROUP % 8 == 0
    const uint4* xv = (const uint4*)x;
#pragma unroll
    for (int i = 0; i < FMT_GROUP / 8; ++i) {
        const uint4 u = __ldg(xv + i);
        const u32 p[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            acc = fmaf(w[8 * i + 2 * j], __uint_as_float(p[j] << 16), acc);
            acc = fmaf(w[8 * i + 2 * j + 1], __uint_as_float(p[j] & 0xffff0000u), acc);
        }
    }
#else
#pragma unroll
    for (int i = 0; i < FMT_GROUP; ++i) acc = fmaf(w[i], bf16_to_f32(x[i]), acc);
#endif
    return acc;
}

// The same with f32 activations (16-byte loads).
__device__ __forceinline__ float dot_group_f32(const float* w, const float* __restrict__ x) {
    float acc = 0.0f;
#if FMT_GROUP % 4 == 0
    const float4* xv = (const float4*)x;
#pragma unroll
    for (int i = 0; i < FMT_GROUP / 4; ++i) {
        const float4 u = __ldg(xv + i);
        acc = fmaf(w[4 * i], u.x, acc);
        acc = fmaf(w[4 * i + 1], u.y, acc);
        acc = fmaf(w[4 * i + 2], u.z, acc);
        acc = fmaf(w[4 * i + 3], u.w, acc);
    }
#else
#pragma unroll
    for (int i = 0; i < FMT_GROUP; ++i) acc = fmaf(w[i], x[i], acc);
#endif
    return acc;
}

__device__ __forceinline__ float dot_group(const float* w, const bf16_t* __restrict__ x) { return dot_group_bf16(w, x); }
__device__ __forceinline__ float dot_group(const float* w, const float* __restrict__ x) { return dot_group_f32(w, x); }

extern "C" __global__ void __launch_bounds__({{ warps }} * 32)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const u8* __restrict__ q2, const u8* __restrict__ s2,
                  long long q_row_bytes, long long s_row_bytes,
                  const act_t* __restrict__ x,
                  const act_t* residual,
                  act_t* y,
                  int T, int N, int K)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int row0 = (blockIdx.x * {{ warps }} + warp) * ROWS;
    if (row0 >= N) return;
    const int groups = K / FMT_GROUP;

    float acc[MATS][ROWS][TT];
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int t = 0; t < TT; ++t) acc[m][r][t] = 0.0f;

    for (int g = lane; g < groups; g += 32) {
#pragma unroll
        for (int m = 0; m < MATS; ++m) {
            const u8* qm = m == 0 ? q : q2;
            const u8* sm = m == 0 ? s : s2;
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const int row = min(row0 + r, N - 1);
                float w[FMT_GROUP];
                fmt_decode_group(qm + row * q_row_bytes, sm + row * s_row_bytes, g, w);
#pragma unroll
                for (int t = 0; t < TT; ++t) {
                    if (t < T) acc[m][r][t] += dot_group(w, x + (long long)t * K + (long long)g * FMT_GROUP);
                }
            }
        }
    }
#ifdef NINFER_FMT_DENSE
    // Dense formats take any K: the elements past the last whole group, one per lane.
    for (int kk = groups * FMT_GROUP + lane; kk < K; kk += 32) {
#pragma unroll
        for (int m = 0; m < MATS; ++m) {
            const u8* qm = m == 0 ? q : q2;
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const int row = min(row0 + r, N - 1);
                const float wv = FMT_LOAD((const FMT_ELEM*)(qm + row * q_row_bytes), kk);
#pragma unroll
                for (int t = 0; t < TT; ++t) {
                    if (t < T) acc[m][r][t] = fmaf(wv, act_load(x, (long long)t * K + kk), acc[m][r][t]);
                }
            }
        }
    }
#endif

#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const int row = row0 + r;
#pragma unroll
        for (int t = 0; t < TT; ++t) {
            float v = warp_sum(acc[0][r][t]);
{%- if epilogue == "swiglu" %}
            const float up = warp_sum(acc[1][r][t]);
            v = silu_f32(v) * up;
{%- endif %}
            if (lane == 0 && row < N && t < T) {
                const long long o = (long long)t * N + row;
{%- if epilogue == "residual" %}
                v += act_load(residual, o);
{%- endif %}
                y[o] = act_store(v);
            }
        }
    }
}
