{#
  Gated DeltaNet recurrent step, grouped by key head: the same operation, modes and
  layouts as gdn/recurrent.cu (read its header), organised for memory-level parallelism.

  One block takes `group` consecutive column tiles of the value heads that share one key
  head (the HV/HK heads of key head kh, ceil(dv / tile_rows) tiles each: r * ntiles tiles
  in all, split into parts = ceil(r * ntiles / group) blocks). Per block:
    1. the first tile's state loads are issued, then the q/k conv (+ SiLU) of the key head
       runs once for every token (one channel per thread), the gates of the r heads for
       every token, and the q/k L2 norms (one warp per token), all into shared memory;
    2. the tiles run one after another with the next tile's state (raw 16-byte words in
       registers), v conv weights, v window and token-0 input loaded while the current
       tile computes (a double buffer in registers);
    3. the last block of the key head's group to count in writes the q/k conv windows
       (the same counter protocol as gdn/recurrent.cu, over `parts` blocks). The atomic's
       result is read only at the end, so its round trip is off the critical path.
  The v conv of a column is done in registers by the lanes that hold the column.

  Programmatic dependent launch (common/pdl.cuh): before NINFER_PDL_WAIT() a block loads
  only its first tile's state, v conv weights and windows and the first q/k channel's
  conv weights and window, into registers (the rules of gdn/recurrent.cu's header); the
  token inputs (mixed, a, b) and the replay counts come after it.

  Params: mode, state, lpr, ept, rows, warps, group (tiles per block), minb (blocks per SM
  the compiler must fit, 0 = no cap), kc. Needs 16-byte
  state slices (dk % ept == 0). Grid (hk * parts, 1, lanes), block warps*32 threads,
  dynamic shared memory 4 * (T * 2 * lpr * ept + T + 2 * T * (HV/HK)) bytes.
#}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
#define LPR {{ lpr }}
#define EPT {{ ept }}
#define RPT {{ rows }}
#define WARPS {{ warps }}
#define GROUP {{ group }}
#define KC {{ kc }}
#define NT (WARPS * 32)
#define DKMAX (LPR * EPT)
#define SUBROWS (32 / LPR)
#define TILE_ROWS (WARPS * RPT * SUBROWS)
#define MODE_{{ mode | upper }} 1
#define VEC 1
typedef {{ state }} state_t;
#define RAWW ((EPT * (int)sizeof(state_t)) / 16)   // 16-byte words of one column slice
{% include "gdn/common.cuh" %}

__device__ __forceinline__ void grp_unpack(const uint4* w, float* v, const float*) {
#pragma unroll
    for (int k = 0; k < RAWW; ++k) {
        v[4 * k] = __uint_as_float(w[k].x);
        v[4 * k + 1] = __uint_as_float(w[k].y);
        v[4 * k + 2] = __uint_as_float(w[k].z);
        v[4 * k + 3] = __uint_as_float(w[k].w);
    }
}

__device__ __forceinline__ void grp_unpack(const uint4* w, float* v, const f16_t*) {
#pragma unroll
    for (int k = 0; k < RAWW; ++k) {
        const u32 u[4] = { w[k].x, w[k].y, w[k].z, w[k].w };
#pragma unroll
        for (int m = 0; m < 4; ++m) {
            v[8 * k + 2 * m] = f16_to_f32((f16_t)(u[m] & 0xffffu));
            v[8 * k + 2 * m + 1] = f16_to_f32((f16_t)(u[m] >> 16));
        }
    }
}

// What one tile needs from memory besides the shared q/k: the state slices of this
// thread's columns (raw), and per column the v conv weights, window and token-0 input
// (2*KC items). The LPR lanes of a column group hold the group's RPT*2*KC items spread
// over them (item id at lane id % LPR, slot id / LPR) and shuffle them out at use.
#define NITEM (2 * KC)
#define PKN ((RPT * NITEM + LPR - 1) / LPR)
struct GrpTile {
    uint4 raw[RPT][RAWW];
    float pk[PKN];
};

extern "C" __global__ void __launch_bounds__(NT{% if minb > 0 %}, {{ minb }}{% endif %})
{{ kernel_name }}{% include "gdn/step_params.cuh" %}
{
    extern __shared__ float smem[];
    float* ybuf = smem;                        // [T][2*DKMAX]: q | k, normalized in place
    float* kqs = ybuf + T * 2 * DKMAX;         // [T]: q . k (normalized)
    float* geg = kqs + T;                      // [T][r]: e^g
    float* gbeta = geg + T * (hv / hk);        // [T][r]: beta
    __shared__ float wfin[2 * DKMAX][KC > 1 ? KC - 1 : 1];   // q/k windows after the tokens
    __shared__ int last_flag;

    const int lane_id = blockIdx.z;
    const int r = hv / hk;
    const int ntiles = (dv + TILE_ROWS - 1) / TILE_ROWS;
    const int units = r * ntiles;
    const int parts = (units + GROUP - 1) / GROUP;
    const int kh = blockIdx.x / parts;
    const int part = blockIdx.x % parts;
    const int u0 = part * GROUP;
    const int u1 = min(u0 + GROUP, units);
    const int kd = hk * dk;
    const int conv_dim = 2 * kd + hv * dv;
    const int tid = threadIdx.x;
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int lir = lane % LPR;
    const int sub = lane / LPR;
    const int i0 = lir * EPT;
    const bool in_slice = i0 < dk;   // dk % EPT == 0: a slice is all in or all out
    const long long tok_base = (long long)lane_id * T;
    const long long cs_base = (long long)lane_id * conv_dim;

    // Issues the loads of tile u (columns of value head kh*r + u/ntiles) into `f`; the
    // token-0 inputs only `with_x` (fetch_x adds them, after the PDL wait).
    auto fetch = [&](int u, GrpTile& f, bool with_x) {
        const int h = kh * r + u / ntiles;
        const int row0 = (u % ntiles) * TILE_ROWS;
        const long long head_base = ((long long)lane_id * hv + h) * dv;
#pragma unroll
        for (int rr = 0; rr < RPT; ++rr) {
            const int j = row0 + (warp * RPT + rr) * SUBROWS + sub;
            const bool ok = j < dv;
            if (ok && in_slice) {
                const uint4* p = reinterpret_cast<const uint4*>(state + (head_base + j) * dk + i0);
#pragma unroll
                for (int k = 0; k < RAWW; ++k) f.raw[rr][k] = p[k];
            } else {
#pragma unroll
                for (int k = 0; k < RAWW; ++k) f.raw[rr][k].x = f.raw[rr][k].y = f.raw[rr][k].z = f.raw[rr][k].w = 0u;
            }
        }
#pragma unroll
        for (int m = 0; m < PKN; ++m) {
            const int id = lir + LPR * m;
            const int rr = id / NITEM, q = id % NITEM;
            const int j = row0 + (warp * RPT + rr) * SUBROWS + sub;
            const int ch = 2 * kd + h * dv + j;
            float v = 0.0f;
            if (rr < RPT && j < dv) {
                if (q < KC) v = conv_w[(long long)ch * KC + q];
                else if (q < NITEM - 1) v = conv_state[(cs_base + ch) * (KC - 1) + (q - KC)];
                else if (with_x) v = mixed[tok_base * conv_dim + ch];
            }
            f.pk[m] = v;
        }
    };
    auto fetch_x = [&](int u, GrpTile& f) {
        const int h = kh * r + u / ntiles;
        const int row0 = (u % ntiles) * TILE_ROWS;
#pragma unroll
        for (int m = 0; m < PKN; ++m) {
            const int id = lir + LPR * m;
            const int rr = id / NITEM, q = id % NITEM;
            const int j = row0 + (warp * RPT + rr) * SUBROWS + sub;
            if (rr < RPT && j < dv && q == NITEM - 1) f.pk[m] = mixed[tok_base * conv_dim + 2 * kd + h * dv + j];
        }
    };

    GrpTile cur;
    if (u0 < u1) fetch(u0, cur, false);
    // The first q/k channel's conv weights and window (most threads have only that one).
    float cw0[KC], win0[KC > 1 ? KC - 1 : 1];
    if (tid < 2 * dk) {
        const int ch = tid < dk ? kh * dk + tid : kd + kh * dk + (tid - dk);
#pragma unroll
        for (int m = 0; m < KC; ++m) cw0[m] = conv_w[(long long)ch * KC + m];
#pragma unroll
        for (int m = 0; m < KC - 1; ++m) win0[m] = conv_state[(cs_base + ch) * (KC - 1) + m];
    }
    NINFER_PDL_WAIT();     // the predecessor's output (the token inputs) is visible from here on
    NINFER_PDL_TRIGGER();
#if defined(MODE_REPLAY)
    const int ntok = counts[lane_id];
#else
    const int ntok = T;
#endif
    if (u0 < u1) fetch_x(u0, cur);

    {% include "gdn/grouped_qk.cuh" %}

    // 2. The tiles, the next one's loads in flight while this one computes.
#pragma unroll 1
    for (int u = u0; u < u1; ++u) {
        GrpTile nxt;
        if (u + 1 < u1) fetch(u + 1, nxt, true);
        const int hr = u / ntiles;
        const int h = kh * r + hr;
        const int row0 = (u % ntiles) * TILE_ROWS;
        const long long head_base = ((long long)lane_id * hv + h) * dv;
        float S[RPT][EPT];
#pragma unroll
        for (int rr = 0; rr < RPT; ++rr) grp_unpack(cur.raw[rr], S[rr], (const state_t*)0);
        // The v windows live in registers across the tokens; weights and the token-0
        // input are shuffled out of the packed items when used.
        const int gbase = lane & ~(LPR - 1);
        auto item = [&](int rr, int q) -> float {
            const int id = rr * NITEM + q;
            return __shfl_sync(0xffffffffu, cur.pk[id / LPR], gbase + id % LPR);
        };
        float win[RPT][KC > 1 ? KC - 1 : 1];
#pragma unroll
        for (int rr = 0; rr < RPT; ++rr) {
#pragma unroll
            for (int m = 0; m < KC - 1; ++m) win[rr][m] = item(rr, KC + m);
        }

#pragma unroll 1
        for (int t = 0; t < ntok; ++t) {
            const long long tok = tok_base + t;
            float qs[EPT], ks[EPT];
#pragma unroll
            for (int e = 0; e < EPT; e += 4) {
                const float4 q4 = *reinterpret_cast<const float4*>(ybuf + t * 2 * DKMAX + i0 + e);
                const float4 k4 = *reinterpret_cast<const float4*>(ybuf + t * 2 * DKMAX + DKMAX + i0 + e);
                qs[e] = in_slice ? q4.x : 0.0f; qs[e + 1] = in_slice ? q4.y : 0.0f;
                qs[e + 2] = in_slice ? q4.z : 0.0f; qs[e + 3] = in_slice ? q4.w : 0.0f;
                ks[e] = in_slice ? k4.x : 0.0f; ks[e + 1] = in_slice ? k4.y : 0.0f;
                ks[e + 2] = in_slice ? k4.z : 0.0f; ks[e + 3] = in_slice ? k4.w : 0.0f;
            }
            const float kq = kqs[t];
            const float eg = geg[t * r + hr];
            const float beta = gbeta[t * r + hr];
#pragma unroll
            for (int rr = 0; rr < RPT; ++rr) {
                const int j = row0 + (warp * RPT + rr) * SUBROWS + sub;
                const bool ok = j < dv;
                const int ch = 2 * kd + h * dv + (ok ? j : 0);
                const float xs = item(rr, NITEM - 1);   // every lane shuffles
                const float x = t == 0 ? xs : (ok ? mixed[tok * conv_dim + ch] : 0.0f);
                float acc = 0.0f;
#pragma unroll
                for (int m = 0; m < KC - 1; ++m) acc = fmaf(item(rr, m), win[rr][m], acc);
                acc = fmaf(item(rr, KC - 1), x, acc);
#pragma unroll
                for (int m = 0; m + 1 < KC - 1; ++m) win[rr][m] = win[rr][m + 1];
                if (KC > 1) win[rr][KC - 2] = x;
                const float vj = ok ? silu_f32(acc) : 0.0f;
#if defined(MODE_RECORD)
                if (ok && lir == 0) {
#pragma unroll
                    for (int m = 0; m < KC - 1; ++m)
                        rec_conv[(tok * conv_dim + ch) * (KC - 1) + m] = win[rr][m];
                }
#endif
                float sa = 0.0f, sb = 0.0f;
#pragma unroll
                for (int e = 0; e < EPT; ++e) {
                    sa = fmaf(S[rr][e], ks[e], sa);
                    sb = fmaf(S[rr][e], qs[e], sb);
                }
                gdn_group_sum2(sa, sb);
                const float delta = beta * fmaf(-eg, sa, vj);
                const float o = fmaf(kq, delta, eg * sb);
#pragma unroll
                for (int e = 0; e < EPT; ++e) S[rr][e] = fmaf(ks[e], delta, eg * S[rr][e]);
#if !defined(MODE_REPLAY)
                if (lir == 0 && ok) out[(tok * hv + h) * dv + j] = o;
#endif
#if defined(MODE_RECORD)
                if (ok && in_slice)
                    gdn_st_slice(rec_state + ((tok * hv + h) * dv + j) * dk + i0, S[rr], dk - i0);
#endif
            }
        }
#if !defined(MODE_RECORD)
#pragma unroll
        for (int rr = 0; rr < RPT; ++rr) {
            const int j = row0 + (warp * RPT + rr) * SUBROWS + sub;
            if (j < dv && in_slice) gdn_st_slice(state + (head_base + j) * dk + i0, S[rr], dk - i0);
            if (j < dv && lir == 0) {
                const int ch = 2 * kd + h * dv + j;
#pragma unroll
                for (int m = 0; m < KC - 1; ++m)
                    conv_state[(cs_base + ch) * (KC - 1) + m] = win[rr][m];
            }
        }
#endif
        if (u + 1 < u1) cur = nxt;
    }

{% include "gdn/grouped_qk_end.cuh" %}
}
