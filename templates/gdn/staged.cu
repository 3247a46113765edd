{#
  Gated DeltaNet recurrent step, grouped by key head with a cp.async pipeline: the same
  operation, modes, layouts, grid and counter protocol as gdn/grouped.cu (read it and
  gdn/recurrent.cu), but the tiles' state and v-conv inputs are copied into shared memory
  `stages` deep instead of one tile ahead in registers. Before the q/k phase the block
  issues the copies of its first stages-1 tiles; at tile i it waits for tile i's copies,
  issues tile i+stages-1's into the stage tile i-1 used, and computes tile i from shared
  memory. So about (stages-1) x 16 KB (32-column f32 tile) stay in flight per block
  without registers, and the register count stays near the per-tile kernel's.

  Programmatic dependent launch (common/pdl.cuh): the first stages-1 tiles' copies of
  the state, v conv weights and windows, and the first q/k channel's conv weights and
  window, go out before NINFER_PDL_WAIT() (the rules of gdn/recurrent.cu's header); those
  tiles' token-0 inputs are loaded after it (plain loads into their stage slots), as are
  all other token inputs and the replay counts.

  Params: mode, state, lpr, ept, rows, warps, group (tiles per block), stages (>= 2),
  minb, kc. Needs 16-byte state slices (dk % ept == 0). Grid (hk * parts, 1, lanes),
  block warps*32 threads, dynamic shared memory
    stages * (tile_rows * lpr*ept * sizeof(state) + tile_rows * 2*kc * 4)
    + 4 * T * (2 * lpr*ept + 1 + 2 * HV/HK) bytes.
#}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
#define LPR {{ lpr }}
#define EPT {{ ept }}
#define RPT {{ rows }}
#define WARPS {{ warps }}
#define GROUP {{ group }}
#define STAGES {{ stages }}
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

#define NITEM (2 * KC)   // per column: KC conv weights, KC-1 window values, token-0 input
#define KC1 (KC > 1 ? KC - 1 : 1)
#define ST_STATE_BYTES (TILE_ROWS * DKMAX * (int)sizeof(state_t))
#define ST_BYTES (ST_STATE_BYTES + TILE_ROWS * NITEM * 4)

__device__ __forceinline__ void stg_cp16(void* dst, const void* src, bool full) {
    const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(to), "l"(src), "r"(full ? 16 : 0) : "memory");
}

__device__ __forceinline__ void stg_cp4(void* dst, const void* src, bool full) {
    const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(to), "l"(src), "r"(full ? 4 : 0) : "memory");
}

__device__ __forceinline__ void stg_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void stg_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

__device__ __forceinline__ void stg_ld_slice(const float* p, float* v) {
#pragma unroll
    for (int e = 0; e < EPT; e += 4) {
        const float4 t = *reinterpret_cast<const float4*>(p + e);
        v[e] = t.x; v[e + 1] = t.y; v[e + 2] = t.z; v[e + 3] = t.w;
    }
}

__device__ __forceinline__ void stg_ld_slice(const f16_t* p, float* v) {
#pragma unroll
    for (int e = 0; e < EPT; e += 8) {
        const uint4 t = *reinterpret_cast<const uint4*>(p + e);
        const u32 w[4] = { t.x, t.y, t.z, t.w };
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            v[e + 2 * k] = f16_to_f32((f16_t)(w[k] & 0xffffu));
            v[e + 2 * k + 1] = f16_to_f32((f16_t)(w[k] >> 16));
        }
    }
}

extern "C" __global__ void __launch_bounds__(NT{% if minb > 0 %}, {{ minb }}{% endif %})
{{ kernel_name }}{% include "gdn/step_params.cuh" %}
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    // STAGES x (state tile [TILE_ROWS][dk] | items: cw [TILE_ROWS][KC], win
    // [TILE_ROWS][KC-1], x0 [TILE_ROWS]), then the per-token q/k, q.k and gates.
    float* ybuf = reinterpret_cast<float*>(smem_raw + STAGES * ST_BYTES);   // [T][2*DKMAX]
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

    // Issues the copies of tile u (columns of value head kh*r + u/ntiles) into stage st;
    // the token-0 inputs only `with_x` (load_x adds them, after the PDL wait).
    auto issue = [&](int u, int st, bool with_x) {
        const int h = kh * r + u / ntiles;
        const int row0 = (u % ntiles) * TILE_ROWS;
        const int nrows = min(TILE_ROWS, dv - row0);
        unsigned char* base = smem_raw + st * ST_BYTES;
        const unsigned char* src = reinterpret_cast<const unsigned char*>(
            state + (((long long)lane_id * hv + h) * dv + row0) * dk);
        const int n16 = TILE_ROWS * dk * (int)sizeof(state_t) / 16;
        const int v16 = nrows * dk * (int)sizeof(state_t) / 16;
        for (int q = tid; q < n16; q += NT) stg_cp16(base + q * 16, src + (q < v16 ? q : 0) * 16, q < v16);
        float* it = reinterpret_cast<float*>(base + ST_STATE_BYTES);
        const int ch0 = 2 * kd + h * dv + row0;
        for (int e = tid; e < TILE_ROWS * NITEM; e += NT) {
            const float* p;
            int row;
            if (e < TILE_ROWS * KC) {
                row = e / KC;
                p = conv_w + (long long)ch0 * KC + e;
            } else if (e < TILE_ROWS * (2 * KC - 1)) {
                const int e2 = e - TILE_ROWS * KC;
                row = e2 / KC1;
                p = conv_state + (cs_base + ch0) * (KC - 1) + e2;
            } else {
                row = e - TILE_ROWS * (2 * KC - 1);
                p = mixed + tok_base * conv_dim + ch0 + row;
            }
            const bool ok = row < nrows;
            if (with_x || e < TILE_ROWS * (2 * KC - 1)) stg_cp4(it + e, ok ? p : conv_w, ok);
        }
    };
    auto load_x = [&](int u, int st) {
        const int h = kh * r + u / ntiles;
        const int row0 = (u % ntiles) * TILE_ROWS;
        const int nrows = min(TILE_ROWS, dv - row0);
        float* x0 = reinterpret_cast<float*>(smem_raw + st * ST_BYTES + ST_STATE_BYTES)
                  + TILE_ROWS * (2 * KC - 1);
        for (int row = tid; row < TILE_ROWS; row += NT)
            x0[row] = row < nrows ? mixed[tok_base * conv_dim + 2 * kd + h * dv + row0 + row] : 0.0f;
    };

    // The first STAGES-1 tiles' copies go out before the q/k phase (and the PDL wait).
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        if (u0 + st < u1) issue(u0 + st, st, false);
        stg_commit();
    }
    // The first q/k channel's conv weights and window (most threads have only that one).
    float cw0[KC], win0[KC1];
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
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        if (u0 + st < u1) load_x(u0 + st, st);
    }

    {% include "gdn/grouped_qk.cuh" %}

    // 2. The tiles: wait for tile i's copies, refill the stage tile i-1 used, compute.
#pragma unroll 1
    for (int u = u0; u < u1; ++u) {
        const int i = u - u0;
        stg_wait<STAGES - 2>();
        __syncthreads();   // every thread's copies of tile i landed; tile i-1's stage is free
        if (u + STAGES - 1 < u1) issue(u + STAGES - 1, (i + STAGES - 1) % STAGES, true);
        stg_commit();
        const unsigned char* base = smem_raw + (i % STAGES) * ST_BYTES;
        const state_t* sst = reinterpret_cast<const state_t*>(base);
        const float* it = reinterpret_cast<const float*>(base + ST_STATE_BYTES);
        const int hr = u / ntiles;
        const int h = kh * r + hr;
        const int row0 = (u % ntiles) * TILE_ROWS;
        const long long head_base = ((long long)lane_id * hv + h) * dv;
        float S[RPT][EPT];
        float win[RPT][KC1];
#pragma unroll
        for (int rr = 0; rr < RPT; ++rr) {
            const int jl = (warp * RPT + rr) * SUBROWS + sub;
            if (in_slice) {
                stg_ld_slice(sst + jl * dk + i0, S[rr]);
            } else {
#pragma unroll
                for (int e = 0; e < EPT; ++e) S[rr][e] = 0.0f;
            }
#pragma unroll
            for (int m = 0; m < KC - 1; ++m) win[rr][m] = it[TILE_ROWS * KC + jl * KC1 + m];
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
                const int jl = (warp * RPT + rr) * SUBROWS + sub;
                const float x = t == 0 ? it[TILE_ROWS * (2 * KC - 1) + jl]
                                       : (ok ? mixed[tok * conv_dim + ch] : 0.0f);
                float acc = 0.0f;
#pragma unroll
                for (int m = 0; m < KC - 1; ++m) acc = fmaf(it[jl * KC + m], win[rr][m], acc);
                acc = fmaf(it[jl * KC + KC - 1], x, acc);
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
    }
    stg_wait<0>();   // no copy may still target shared memory when the block exits

{% include "gdn/grouped_qk_end.cuh" %}
}
