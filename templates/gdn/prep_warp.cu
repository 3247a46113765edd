{#
  GDN prefill prologue, one warp per (channel group, sequence, `tpw` consecutive tokens):
  causal conv (+ SiLU) with conv state, q/k L2 norm and q scaling, gating. Writes what
  gdn/prep.cu writes (the recurrence's prepared inputs for every token, f32):
    q, k [seqs][T][HK][dk]   v [seqs][T][HV][dv]   g, beta [seqs][T][HV]
  and the new conv state (the last kc-1 inputs of each sequence).
  (q, k and v as f16 with f16_out.)
  Channel groups (grid x, 2 HK + HV): x < HK the q channels of key head x, HK + i the k
  channels of key head i, 2 HK + h the v channels and the gates of value head h: each
  group is one contiguous run of `mixed` and of its output, normalised (q, k) on its own.
  Warp w of block z takes tokens [(z warps + w) tpw, + tpw); lane l owns chmax of the
  group's channels, its conv window riding in registers from token to token: 4l .. 4l+3
  where the group is 128 wide (chmax 4) and its rows, the inputs and the weights 16-byte
  aligned (its weights, each window position and each token are then one 16-byte load,
  its outputs one store: bench/gdn run 31b, 2% faster than l + 32 m), else l + 32 m.
  Why this shape (bench/gdn run 11): gdn/prep.cu's block per head over 16 tokens, and a
  first warp-per-head form of this kernel, both executed ~60-90 instructions an element at
  25-44% occupancy (64-bit addressing per element, an IEEE division in SiLU, 256 channels
  of state a lane): ~0.9 TB/s. Here a token's loads and stores are one pointer and
  immediate offsets, SiLU is a fast divide, the norm a warp sum, no barrier.
  Conv state: the warp of a sequence's first tokens (tpw >= kc-1) is the only one that
  reads it (positions before 0), and it writes the new state after its own reads, each
  lane its own channels.
  Inputs as gdn/prep.cu takes them: token row r of mixed at mixed + r * in_ld, its gates
  at a_in / b_in + r * ab_ld.
  Params: warps (a block), tpw (tokens a warp, >= kc-1), kc, chmax (channels a lane: dk
  and dv at most 32 chmax), f16_out (1: q, k and v are written as f16, rounded once here,
  for the f16 chunk stages, which take them as their mma operands; 0: f32).

  Programmatic dependent launch (common/pdl.cuh): before NINFER_PDL_WAIT() a lane loads
  only the conv weights and the conv-state window of its channels, which the kernel ahead
  does not write; every thread waits once, also a warp past the last token.
#}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
#define KC {{ kc }}
#define WARPS {{ warps }}
#define TPW {{ tpw }}
#define CHMAX {{ chmax }}
#define KW (KC > 1 ? KC - 1 : 1)
#define F16_OUT {{ f16_out }}
#if F16_OUT
typedef f16_t out_t;
__device__ __forceinline__ void store_out(out_t* p, long long i, float v) { p[i] = f32_to_f16(v); }
// Four consecutive outputs (p 8-byte aligned) in one store.
__device__ __forceinline__ void store_out4(out_t* p, float a, float b, float c, float d) {
    uint2 u;
    u.x = (unsigned)f32_to_f16(a) | ((unsigned)f32_to_f16(b) << 16);
    u.y = (unsigned)f32_to_f16(c) | ((unsigned)f32_to_f16(d) << 16);
    *reinterpret_cast<uint2*>(p) = u;
}
#else
typedef float out_t;
__device__ __forceinline__ void store_out(out_t* p, long long i, float v) { p[i] = v; }
// Four consecutive outputs (p 16-byte aligned) in one store.
__device__ __forceinline__ void store_out4(out_t* p, float a, float b, float c, float d) {
    *reinterpret_cast<float4*>(p) = make_float4(a, b, c, d);
}
#endif
#if TPW < KC - 1
#error "gdn prep_warp: a warp's tokens must cover the conv window (tpw >= kc - 1)"
#endif

__device__ __forceinline__ float prep_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

// x * sigmoid(x) with the fast divide (about 2 ulp; __fdividef gives 0 once 1 + e^-x
// passes 2^126, where silu is -0 to f32 anyway).
__device__ __forceinline__ float prep_silu(float x) { return __fdividef(x, 1.0f + __expf(-x)); }

extern "C" __global__ void __launch_bounds__(WARPS * 32)
{{ kernel_name }}(const float* __restrict__ mixed,
                  const float* __restrict__ a_in,
                  const float* __restrict__ b_in,
                  const float* __restrict__ conv_w,
                  const float* __restrict__ a_log,
                  const float* __restrict__ dt_bias,
                  float* conv_state,
                  out_t* __restrict__ q_out,
                  out_t* __restrict__ k_out,
                  out_t* __restrict__ v_out,
                  float* __restrict__ g_out,
                  float* __restrict__ beta_out,
                  int T, int hk, int hv, int dk, int dv,
                  long long in_ld, long long ab_ld)
{
    const int lane = threadIdx.x & 31;
    const int seq = blockIdx.y;
    const int x = blockIdx.x;
    const int kd = hk * dk;
    const int conv_dim = 2 * kd + hv * dv;
    // This group: its first channel in `mixed`, its width, its output [tok][heads][n].
    const int kind = x < hk ? 0 : (x < 2 * hk ? 1 : 2);  // q, k, v
    const int head = x - kind * hk;
    const int n = kind == 2 ? dv : dk;
    const int ch0 = kind == 0 ? head * dk : (kind == 1 ? kd + head * dk : 2 * kd + head * dv);
    out_t* const out = kind == 0 ? q_out : (kind == 1 ? k_out : v_out);
    const int heads = kind == 2 ? hv : hk;
    const int t0 = (blockIdx.z * WARPS + (threadIdx.x >> 5)) * TPW;
    const long long row0 = (long long)seq * T;  // this sequence's first token row
    // Lane l's channels: four consecutive ones, 4l .. 4l+3, where the group is 32 CHMAX wide
    // and its rows and base 16-byte aligned (a token's four inputs are then one 16-byte
    // load and its four outputs one store: bench/gdn run 31); else l + 32 m.
    const bool v4 = CHMAX == 4 && n == 32 * CHMAX && (in_ld & 3) == 0 && (ch0 & 3) == 0 &&
                    (KC % 4) == 0 && ((unsigned long long)mixed & 15) == 0 &&
                    ((unsigned long long)conv_w & 15) == 0;
    const int cb = v4 ? 4 * lane : lane, cstep = v4 ? 1 : 32;   // channel m: cb + cstep m

    float win[CHMAX][KW];
    float w[CHMAX][KC];
#pragma unroll
    for (int m = 0; m < CHMAX; ++m) {
        const int c = cb + cstep * m;
        const long long ch = ch0 + c;
#pragma unroll
        for (int j = 0; j < KC; ++j) w[m][j] = !v4 && c < n ? conv_w[ch * KC + j] : 0.0f;
        // The window before t0 (positions t0-KC+1 .. t0-1): the conv state's part now
        // (only t0 = 0 has one: t0 is a multiple of TPW >= KC-1), the inputs' after the wait.
#pragma unroll
        for (int j = 0; j < KC - 1; ++j) {
            const int pos = t0 - (KC - 1) + j;
            win[m][j] = c < n && pos < 0
                ? conv_state[((long long)seq * conv_dim + ch) * (KC - 1) + (pos + KC - 1)] : 0.0f;
        }
    }
    if (v4) {   // the lane's CHMAX x KC weights are contiguous: 16-byte loads
        const float4* w4 = reinterpret_cast<const float4*>(conv_w + (long long)(ch0 + cb) * KC);
#pragma unroll
        for (int q = 0; q < CHMAX * KC / 4; ++q) {
            const float4 f = w4[q];
            w[(4 * q) / KC][(4 * q) % KC] = f.x;
            w[(4 * q + 1) / KC][(4 * q + 1) % KC] = f.y;
            w[(4 * q + 2) / KC][(4 * q + 2) % KC] = f.z;
            w[(4 * q + 3) / KC][(4 * q + 3) % KC] = f.w;
        }
    }
    NINFER_PDL_WAIT();     // the inputs (the kernel ahead's output) are visible from here on
    NINFER_PDL_TRIGGER();
    if (t0 >= T) return;
    // Lane l's channel 0 of token t: xs0[t * in_ld]; its channel m: + cstep m.
    const float* xs0 = mixed + row0 * in_ld + ch0 + cb;
    if (v4) {   // a window position's four channels: one 16-byte load
#pragma unroll
        for (int j = 0; j < KC - 1; ++j) {
            const int pos = t0 - (KC - 1) + j;
            if (pos >= 0) {
                const float4 f = *reinterpret_cast<const float4*>(xs0 + (long long)pos * in_ld);
                win[0][j] = f.x;
                win[1 % CHMAX][j] = f.y;
                win[2 % CHMAX][j] = f.z;
                win[3 % CHMAX][j] = f.w;
            }
        }
    } else {
#pragma unroll
        for (int m = 0; m < CHMAX; ++m) {
            const int c = cb + cstep * m;
#pragma unroll
            for (int j = 0; j < KC - 1; ++j) {
                const int pos = t0 - (KC - 1) + j;
                if (c < n && pos >= 0) win[m][j] = xs0[(long long)pos * in_ld + cstep * m];
            }
        }
    }
    // The gates: lane k < TPW those of token t0 + k (one round trip for the warp's tokens).
    if (kind == 2 && lane < TPW && t0 + lane < T) {
        const long long at = (row0 + t0 + lane) * hv + head;
        const long long in = (row0 + t0 + lane) * ab_ld + head;
        beta_out[at] = 1.0f / (1.0f + expf(-b_in[in]));
        g_out[at] = -expf(a_log[head]) * prep_softplus(a_in[in] + dt_bias[head]);
    }

    // Every token's inputs first (independent loads, one round trip), then the tokens.
    float xin[TPW][CHMAX];
#pragma unroll
    for (int k = 0; k < TPW; ++k) {
        const float* xs = xs0 + (long long)(t0 + k) * in_ld;
        if (v4) {
            const float4 f = t0 + k < T ? *reinterpret_cast<const float4*>(xs)
                                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            xin[k][0] = f.x;
            xin[k][1 % CHMAX] = f.y;
            xin[k][2 % CHMAX] = f.z;
            xin[k][3 % CHMAX] = f.w;
        } else {
#pragma unroll
            for (int m = 0; m < CHMAX; ++m)
                xin[k][m] = (t0 + k < T && cb + cstep * m < n) ? xs[cstep * m] : 0.0f;
        }
    }
    // q is also scaled by dk^-1/2; v is not normalised.
    const float scale = kind == 0 ? rsqrtf((float)dk) : 1.0f;
#pragma unroll
    for (int k = 0; k < TPW; ++k) {
        float y[CHMAX];
        float ss = 0.0f;
#pragma unroll
        for (int m = 0; m < CHMAX; ++m) {
            float acc = 0.0f;
#pragma unroll
            for (int j = 0; j < KC - 1; ++j) acc = fmaf(w[m][j], win[m][j], acc);
            acc = fmaf(w[m][KC - 1], xin[k][m], acc);
#pragma unroll
            for (int j = 0; j + 1 < KC - 1; ++j) win[m][j] = win[m][j + 1];
            if (KC > 1) win[m][KC - 2] = xin[k][m];
            y[m] = prep_silu(acc);  // 0 on channels past n (zero weights and inputs)
            ss = fmaf(y[m], y[m], ss);
        }
        float inv = 1.0f;
        if (kind != 2) inv = scale / sqrtf(warp_sum(ss) + 1e-6f);  // warp-uniform
        if (t0 + k < T) {
            const long long o = ((row0 + t0 + k) * heads + head) * n + cb;
            if (v4) {
                store_out4(out + o, y[0] * inv, y[1 % CHMAX] * inv, y[2 % CHMAX] * inv,
                           y[3 % CHMAX] * inv);
            } else {
#pragma unroll
                for (int m = 0; m < CHMAX; ++m) {
                    if (cb + cstep * m >= n) continue;
                    store_out(out, o + cstep * m, y[m] * inv);   // inv = 1 for v
                }
            }
        }
    }
    if (t0 == 0) {
        // New conv state: positions T-KC+1 .. T-1 of (state ++ tokens). This lane read the
        // old values of its channels above (before any write).
#pragma unroll
        for (int m = 0; m < CHMAX; ++m) {
            const int c = cb + cstep * m;
            if (c >= n) continue;
            float* cs = conv_state + ((long long)seq * conv_dim + ch0 + c) * (KC - 1);
            float old[KW];
#pragma unroll
            for (int j = 0; j < KC - 1; ++j) old[j] = cs[j];
#pragma unroll
            for (int j = 0; j < KC - 1; ++j) {
                const int pos = T - (KC - 1) + j;
                cs[j] = pos >= 0 ? xs0[(long long)pos * in_ld + cstep * m] : old[pos + KC - 1];
            }
        }
    }
}
