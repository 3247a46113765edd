// Steps that the chunked prefill's two tensor-core `wu` stages (gdn/chunk_wu_tc.cuh, f32
// shared memory; gdn/chunk_wu_f16.cu, f16) share: the same arithmetic on the same layouts.
// The includer defines CH (64: tokens a chunk) and LDT (A's row stride, floats); 256
// threads, warps 0-3 on K K^T and 4-7 on Q K^T, warp w on token rows 16 (w % 4).
#ifndef NINFER_GDN_CHUNK_WU
#define NINFER_GDN_CHUNK_WU
{% include "gdn/f16_mma.cuh" %}

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

// e^x. FAST: exp_ftz (gdn/f16_mma.cuh), else the accurate expf.
template <bool FAST>
__device__ __forceinline__ float chunk_exp(float x) { return FAST ? exp_ftz(x) : expf(x); }

// From the Gram products' m16n8 accumulators of rows r0..r0+15 (n-tiles below ntc):
// A[t][s] = beta_t (k_t.k_s) e^(G_t - G_s) (s < t) into As by warps 0-3, and
// P[t][s] = (q_t.k_s) e^(G_t - G_s) (s <= t) by warps 4-7 through store_p(hh, s, p_ts,
// p_ts+1) for row t = r0 + g + 8 hh < tc; zero elsewhere and past tc. G_t and beta_t are
// read once a row into registers (As's stores would otherwise make the compiler read them
// again for every element), G_s two columns at a time. FAST: see chunk_exp.
template <bool FAST, typename StoreP>
__device__ __forceinline__ void chunk_scale_gram(const float (&acc)[8][4], int warp, int r0,
                                                 int ntc, int tc, const float* gcs,
                                                 const float* bts, float* As, StoreP store_p) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    float gt[2], bt[2];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
        gt[hh] = gcs[r0 + g + 8 * hh];
        bt[hh] = bts[r0 + g + 8 * hh];
    }
#pragma unroll
    for (int x = 0; x < 8; ++x) {
        const int s = 8 * x + 2 * t4;
        const float2 gs = *reinterpret_cast<const float2*>(gcs + s);
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            const int t = r0 + g + 8 * hh;
            const int tend = warp < 4 ? t : t + 1;   // A: s < t; P: s <= t
            float v[2];
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const bool lower = s + e < tend;
                const float gss = e == 0 ? gs.x : gs.y;
                const float decay = (lower && t < tc) ? chunk_exp<FAST>(gt[hh] - gss) : 0.0f;
                v[e] = x < ntc ? acc[x][2 * hh + e] * decay : 0.0f;
            }
            if (warp < 4) {
                float2 a2;
                a2.x = bt[hh] * v[0];
                a2.y = bt[hh] * v[1];
                *reinterpret_cast<float2*>(As + t * LDT + s) = a2;
            } else if (t < tc) {
                store_p(hh, s, v[0], v[1]);
            }
        }
    }
}

// Column j of T = (I + A)^-1 (A strictly lower triangular in As) by right-looking
// substitution: the four threads p = 0..3 of the column hold its rows p + 4m in x[m]; at
// step s the owner of row s broadcasts the finished T[s][j] and every thread updates its
// rows below s (independent FMAs: the chain is one shuffle and one FMA a step). A is read
// two steps at a time, A[t][s] and A[t][s + 1] in one 8-byte load (LDT even): the loads
// were a third of the stage's instructions (bench/gdn run 25). T[s][j] = 0 for s < j, so
// the steps before a warp's first column change nothing in it: a warp (columns j0..j0+7,
// j = tid / 4) starts at step j0, and the warps share out ~56% of the steps that all of
// them took (run 26). The FMAs that remain are the same, in the same order.
__device__ __forceinline__ void chunk_inverse_column(const float* As, int j, int p, int lane,
                                                     float (&x)[16]) {
    static_assert(LDT % 2 == 0 && CH % 8 == 0, "A's pairs are 8-byte aligned");
    const int j0 = j & ~7;   // the warp's first column (8 columns a warp)
#pragma unroll
    for (int m = 0; m < 16; ++m) x[m] = p + 4 * m == j ? 1.0f : 0.0f;
#pragma unroll
    for (int s8 = 0; s8 < CH; s8 += 8) {
        if (__all_sync(0xffffffffu, s8 < j0)) continue;   // a vote: the compiler sees one path
#pragma unroll
        for (int s = s8; s < s8 + 8; s += 2) {
            float2 a[16];
#pragma unroll
            for (int m = s >> 2; m < 16; ++m)
                a[m] = *reinterpret_cast<const float2*>(As + (p + 4 * m) * LDT + s);
            const float xs = __shfl_sync(0xffffffffu, x[s >> 2], (lane & ~3) | (s & 3));
#pragma unroll
            for (int m = s >> 2; m < 16; ++m) {
                if (p + 4 * m > s) x[m] = fmaf(-a[m].x, xs, x[m]);
            }
            if (s + 1 < CH - 1) {
                const float xs1 =
                    __shfl_sync(0xffffffffu, x[s >> 2], (lane & ~3) | ((s + 1) & 3));
#pragma unroll
                for (int m = s >> 2; m < 16; ++m) {
                    if (p + 4 * m > s + 1) x[m] = fmaf(-a[m].y, xs1, x[m]);
                }
            }
        }
    }
}

#endif  // NINFER_GDN_CHUNK_WU
