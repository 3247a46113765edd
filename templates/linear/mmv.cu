{#
  Tensor-core GEMV for decode: Y[T,N] = X[T,K] * W[N,K]^T (+ epilogue) for T <= 8*nt,
  W in a format with the lane-pairs interface (sym_int formats), X and Y bf16, f32
  accumulation.

  A block owns 16 output rows; its `kw` warps split the K groups among them. Per group a
  warp runs FMT_GROUP/16 mma.sync m16n8k16 steps per 8-column tile: the A operand is the
  16 rows' integer weights (exact in bf16, from fmt_lane_pairs: lane quad t owns a quarter
  of the group), the B operand the activations paired in the same order, and each group's
  product is scaled into the f32 accumulators by the rows' f32 scales. So the weights are
  read once for all T columns and the per-weight work is a few integer ops. The warps'
  partial sums meet in shared memory for the epilogue.

  Params: format, nt (8-column tiles), kw (warps per block), unroll (groups per iteration),
  epilogue ("none" | "residual" | "swiglu").
#}
{% include "common/types.cuh" %}
{% include "common/mma.cuh" %}
{{ format_code }}

#define NT {{ nt }}
#define KW {{ kw }}
#define UNROLL {{ unroll }}
#define PAIRS (FMT_LANE_N / 2)
#define STEPS (FMT_GROUP / 16)
{%- if epilogue == "swiglu" %}
#define MATS 2
{%- else %}
#define MATS 1
{%- endif %}

// (x[a], x[b]) from natural pairs xw[i] = (x[2i], x[2i+1]).
__device__ __forceinline__ u32 pick_pair(const u32* xw, int a, int b) {
    const u32 sel = ((a & 1) ? 0x32u : 0x10u) | ((b & 1) ? 0x7600u : 0x5400u);
    return __byte_perm(xw[a >> 1], xw[b >> 1], sel);
}

extern "C" __global__ void __launch_bounds__(KW * 32)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const u8* __restrict__ q2, const u8* __restrict__ s2,
                  long long q_row_bytes, long long s_row_bytes,
                  const bf16_t* __restrict__ x,
                  const bf16_t* residual,
                  bf16_t* y,
                  int T, int N, int K)
{
    __shared__ float red[MATS][KW][16][8 * NT + 1];

    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int g = lane >> 2;
    const int t = lane & 3;
    const int row0 = blockIdx.x * 16;
    const int ra = min(row0 + g, N - 1);
    const int rb = min(row0 + g + 8, N - 1);
    const int groups = K / FMT_GROUP;

    float acc[MATS][NT][4];
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[m][j][e] = 0.0f;

#ifdef FMT_LANE_WORDS
    // Two phases per iteration: issue every load of UNROLL groups, then convert and multiply,
    // so each warp keeps UNROLL groups of weights in flight.
    for (int base = warp * UNROLL; base < groups; base += KW * UNROLL) {
        u32 raw[UNROLL][MATS][2][FMT_LANE_WORDS];
        float sc[UNROLL][MATS][2];
        u32 xw[UNROLL][NT][PAIRS];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int gi = min(base + u, groups - 1);  // past the end: loaded, never used
#pragma unroll
            for (int m = 0; m < MATS; ++m) {
                const u8* qm = m == 0 ? q : q2;
                const u8* sm = m == 0 ? s : s2;
                fmt_lane_load(qm + ra * q_row_bytes, gi, t, raw[u][m][0]);
                fmt_lane_load(qm + rb * q_row_bytes, gi, t, raw[u][m][1]);
                sc[u][m][0] = fmt_group_scale(sm + ra * s_row_bytes, gi);
                sc[u][m][1] = fmt_group_scale(sm + rb * s_row_bytes, gi);
            }
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const int col = 8 * j + g;
                if (col < T) {
                    const uint4* src = (const uint4*)(x + (long long)col * K + (long long)gi * FMT_GROUP + t * FMT_LANE_N);
#pragma unroll
                    for (int v = 0; v < PAIRS / 4; ++v) {
                        const uint4 w4 = __ldg(src + v);
                        xw[u][j][4 * v] = w4.x; xw[u][j][4 * v + 1] = w4.y; xw[u][j][4 * v + 2] = w4.z; xw[u][j][4 * v + 3] = w4.w;
                    }
                } else {
#pragma unroll
                    for (int v = 0; v < PAIRS; ++v) xw[u][j][v] = 0u;
                }
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (base + u < groups) {
#pragma unroll
                for (int m = 0; m < MATS; ++m) {
                    u32 pa[PAIRS], pb[PAIRS];
                    fmt_lane_convert(raw[u][m][0], pa);
                    fmt_lane_convert(raw[u][m][1], pb);
#pragma unroll
                    for (int j = 0; j < NT; ++j) {
                        u32 xb[PAIRS];
#pragma unroll
                        for (int i = 0; i < PAIRS; ++i) xb[i] = pick_pair(xw[u][j], fmt_pair_lo(i), fmt_pair_hi(i));
                        MmaAccum16x8 c;
                        mma_zero(c);
#pragma unroll
                        for (int st = 0; st < STEPS; ++st) {
                            const u32 a[4] = { pa[2 * st], pb[2 * st], pa[2 * st + 1], pb[2 * st + 1] };
                            const u32 b[2] = { xb[2 * st], xb[2 * st + 1] };
                            mma_bf16_16x8x16(c, a, b);
                        }
                        acc[m][j][0] = fmaf(sc[u][m][0], c.c[0], acc[m][j][0]);
                        acc[m][j][1] = fmaf(sc[u][m][0], c.c[1], acc[m][j][1]);
                        acc[m][j][2] = fmaf(sc[u][m][1], c.c[2], acc[m][j][2]);
                        acc[m][j][3] = fmaf(sc[u][m][1], c.c[3], acc[m][j][3]);
                    }
                }
            }
        }
    }
#else
    for (int base = warp * UNROLL; base < groups; base += KW * UNROLL) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int gi = base + u;
            if (gi < groups) {
                // Activations of this lane's quarter of the group, for each column tile.
                u32 xb[NT][PAIRS];
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    const int col = 8 * j + g;
                    u32 xw[PAIRS];
                    if (col < T) {
                        const uint4* src = (const uint4*)(x + (long long)col * K + (long long)gi * FMT_GROUP + t * FMT_LANE_N);
#pragma unroll
                        for (int v = 0; v < PAIRS / 4; ++v) {
                            const uint4 w4 = __ldg(src + v);
                            xw[4 * v] = w4.x; xw[4 * v + 1] = w4.y; xw[4 * v + 2] = w4.z; xw[4 * v + 3] = w4.w;
                        }
                    } else {
#pragma unroll
                        for (int v = 0; v < PAIRS; ++v) xw[v] = 0u;
                    }
#pragma unroll
                    for (int i = 0; i < PAIRS; ++i) xb[j][i] = pick_pair(xw, fmt_pair_lo(i), fmt_pair_hi(i));
                }
#pragma unroll
                for (int m = 0; m < MATS; ++m) {
                    const u8* qm = m == 0 ? q : q2;
                    const u8* sm = m == 0 ? s : s2;
                    u32 pa[PAIRS], pb[PAIRS];
                    fmt_lane_pairs(qm + ra * q_row_bytes, gi, t, pa);
                    fmt_lane_pairs(qm + rb * q_row_bytes, gi, t, pb);
                    const float sa = fmt_group_scale(sm + ra * s_row_bytes, gi);
                    const float sb = fmt_group_scale(sm + rb * s_row_bytes, gi);
#pragma unroll
                    for (int j = 0; j < NT; ++j) {
                        MmaAccum16x8 c;
                        mma_zero(c);
#pragma unroll
                        for (int st = 0; st < STEPS; ++st) {
                            const u32 a[4] = { pa[2 * st], pb[2 * st], pa[2 * st + 1], pb[2 * st + 1] };
                            const u32 b[2] = { xb[j][2 * st], xb[j][2 * st + 1] };
                            mma_bf16_16x8x16(c, a, b);
                        }
                        acc[m][j][0] = fmaf(sa, c.c[0], acc[m][j][0]);
                        acc[m][j][1] = fmaf(sa, c.c[1], acc[m][j][1]);
                        acc[m][j][2] = fmaf(sb, c.c[2], acc[m][j][2]);
                        acc[m][j][3] = fmaf(sb, c.c[3], acc[m][j][3]);
                    }
                }
            }
        }
    }
#endif

    // Accumulator e of tile j: row g (+8 for e >= 2), column 8j + 2t + (e & 1).
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                red[m][warp][g + (e >= 2 ? 8 : 0)][8 * j + 2 * t + (e & 1)] = acc[m][j][e];
    __syncthreads();

    for (int o = threadIdx.x; o < 16 * 8 * NT; o += KW * 32) {
        const int r = o / (8 * NT);
        const int col = o % (8 * NT);
        const int row = row0 + r;
        if (row >= N || col >= T) continue;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < KW; ++w) v += red[0][w][r][col];
{%- if epilogue == "swiglu" %}
        float up = 0.0f;
#pragma unroll
        for (int w = 0; w < KW; ++w) up += red[1][w][r][col];
        v = silu_f32(v) * up;
{%- endif %}
        const long long idx = (long long)col * N + row;
{%- if epilogue == "residual" %}
        v += bf16_to_f32(residual[idx]);
{%- endif %}
        y[idx] = f32_to_bf16(v);
    }
}
