// Steps that the chunked prefill's two tensor-core `wu` stages (gdn/chunk_wu_tc.cuh, f32
// shared memory; gdn/chunk_wu_f16.cu, f16) share: the same arithmetic on the same layouts.
// The includer defines CH (64: tokens a chunk) and LDT (A's row stride, floats); 256
// threads, warps 0-3 on K K^T and 4-7 on Q K^T, warp w on token rows 16 (w % 4).
#ifndef NINFER_GDN_CHUNK_WU
#define NINFER_GDN_CHUNK_WU

// G = the gates' inclusive prefix sum in place (zero past tc: G stays at its last value),
// by one warp with shuffles (two gates a lane).
__device__ __forceinline__ void chunk_gate_prefix(float* gcs, int lane) {
    const float x0 = gcs[2 * lane], x1 = gcs[2 * lane + 1];
    float incl = x0 + x1;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const float y = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += y;
    }
    float excl = __shfl_up_sync(0xffffffffu, incl, 1);
    if (lane == 0) excl = 0.0f;
    gcs[2 * lane] = excl + x0;
    gcs[2 * lane + 1] = (excl + x0) + x1;
}

template <bool FAST>
__device__ __forceinline__ float chunk_exp(float x) { return FAST ? __expf(x) : expf(x); }

// From the Gram products' m16n8 accumulators of rows r0..r0+15 (n-tiles below ntc):
// A[t][s] = beta_t (k_t.k_s) e^(G_t - G_s) (s < t) into As by warps 0-3, and
// P[t][s] = (q_t.k_s) e^(G_t - G_s) (s <= t) by warps 4-7 through store_p(t, s, p_ts,
// p_ts+1) for t < tc; zero elsewhere and past tc. FAST: e^x as __expf (ex2.approx), else
// the accurate expf.
template <bool FAST, typename StoreP>
__device__ __forceinline__ void chunk_scale_gram(const float (&acc)[8][4], int warp, int r0,
                                                 int ntc, int tc, const float* gcs,
                                                 const float* bts, float* As, StoreP store_p) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int x = 0; x < 8; ++x) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            const int t = r0 + g + 8 * hh;
            const int s = 8 * x + 2 * t4;
            float v[2];
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int ss = s + e;
                const bool lower = warp < 4 ? ss < t : ss <= t;
                const float decay = (lower && t < tc) ? chunk_exp<FAST>(gcs[t] - gcs[ss]) : 0.0f;
                v[e] = x < ntc ? acc[x][2 * hh + e] * decay : 0.0f;
            }
            if (warp < 4) {
                As[t * LDT + s] = bts[t] * v[0];
                As[t * LDT + s + 1] = bts[t] * v[1];
            } else if (t < tc) {
                store_p(t, s, v[0], v[1]);
            }
        }
    }
}

// Column j of T = (I + A)^-1 (A strictly lower triangular in As) by right-looking
// substitution: the four threads p = 0..3 of the column hold its rows p + 4m in x[m]; at
// step s the owner of row s broadcasts the finished T[s][j] and every thread updates its
// rows below s (independent FMAs: the chain is one shuffle and one FMA a step).
__device__ __forceinline__ void chunk_inverse_column(const float* As, int j, int p, int lane,
                                                     float (&x)[16]) {
#pragma unroll
    for (int m = 0; m < 16; ++m) x[m] = p + 4 * m == j ? 1.0f : 0.0f;
#pragma unroll
    for (int s = 0; s < CH - 1; ++s) {
        const float xs = __shfl_sync(0xffffffffu, x[s >> 2], (lane & ~3) | (s & 3));
#pragma unroll
        for (int m = s >> 2; m < 16; ++m) {
            const int t = p + 4 * m;
            if (t > s) x[m] = fmaf(-As[t * LDT + s], xs, x[m]);
        }
    }
}

#endif  // NINFER_GDN_CHUNK_WU
