{#
  GDN prologue over token chunks, a block per head: causal conv (+ SiLU) with conv state,
  q/k L2 norm and q scaling, gating. The split decode step's first half (below); the
  prefill's prologue is gdn/prep_warp.cu (a warp per channel group and 4 tokens).
  Writes the recurrence's prepared inputs for every token (f32):
    q, k [seqs][T][HK][dk]   v [seqs][T][HV][dv]   g, beta [seqs][T][HV]
  and the new conv state (the last kc-1 inputs of each sequence).
  Grid (HK + HV, seqs, ceil(T / tokc)): block x < HK does the q and k channels of key head
  x, block HK + h the v channels and the gates of value head h, each over tokc tokens.
  Only the first token chunk reads the conv state (tokc >= kc-1), and it is also the one
  that writes it, after its own reads, channel by channel (each thread owns its channels).
  Params: block (threads), tokc (tokens per block), kc, dkmax (largest 2*dk or dv / block
  multiple handled: channels per thread = ceil(max(2*dk, dv) / block) <= chmax), chmax.
  Also the first half of the split decode step (gdn/update.cu), with the lanes as the
  sequences and T = 1.
  Inputs: token row r (= seq * T + t) of mixed at mixed + r * in_ld, its gates at
  a_in / b_in + r * ab_ld (conv_dim and HV when they are dense; the stacked in-projection's
  row width when they are its column blocks, read in place).

  Programmatic dependent launch (common/pdl.cuh): before NINFER_PDL_WAIT() a block loads
  only the conv weights and its channels' conv-state windows, which the kernel ahead of it
  does not write (this kernel alone writes the conv state, and not twice in a row: the
  recurrence's launch or the chunk stages come between); the inputs after it.
#}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
#define KC {{ kc }}
#define NTH {{ block }}
#define TOKC {{ tokc }}
#define CHMAX {{ chmax }}

__device__ __forceinline__ float prep_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

extern "C" __global__ void __launch_bounds__(NTH)
{{ kernel_name }}(const float* __restrict__ mixed,
                  const float* __restrict__ a_in,
                  const float* __restrict__ b_in,
                  const float* __restrict__ conv_w,
                  const float* __restrict__ a_log,
                  const float* __restrict__ dt_bias,
                  float* conv_state,
                  float* __restrict__ q_out,
                  float* __restrict__ k_out,
                  float* __restrict__ v_out,
                  float* __restrict__ g_out,
                  float* __restrict__ beta_out,
                  int T, int hk, int hv, int dk, int dv,
                  long long in_ld, long long ab_ld)
{
    __shared__ float scratch[32];
    __shared__ float ybuf[NTH * CHMAX];
    const int seq = blockIdx.y;
    const int x = blockIdx.x;
    const bool is_key = x < hk;
    const int kd = hk * dk;
    const int conv_dim = 2 * kd + hv * dv;
    const int nch = is_key ? 2 * dk : dv;
    const int t0 = blockIdx.z * TOKC;
    const int t1 = min(T, t0 + TOKC);
    const int tid = threadIdx.x;

    float win[CHMAX][KC > 1 ? KC - 1 : 1];
    float w[CHMAX][KC];
    int chs[CHMAX];
#pragma unroll
    for (int m = 0; m < CHMAX; ++m) {
        const int c = tid + m * NTH;
        int ch = 0;
        if (c < nch) {
            ch = is_key ? (c < dk ? x * dk + c : kd + x * dk + (c - dk))
                        : 2 * kd + (x - hk) * dv + c;
        }
        chs[m] = ch;
#pragma unroll
        for (int j = 0; j < KC; ++j) w[m][j] = c < nch ? conv_w[(long long)ch * KC + j] : 0.0f;
        // The window before token t0: positions t0-KC+1 .. t0-1 (state when before 0);
        // the conv state's part now, the inputs' part after the wait.
#pragma unroll
        for (int j = 0; j < KC - 1; ++j) {
            const int pos = t0 - (KC - 1) + j;
            win[m][j] = c < nch && pos < 0
                ? conv_state[((long long)seq * conv_dim + ch) * (KC - 1) + (pos + KC - 1)] : 0.0f;
        }
    }
    NINFER_PDL_WAIT();     // the inputs (the kernel ahead's output) are visible from here on
    NINFER_PDL_TRIGGER();
#pragma unroll
    for (int m = 0; m < CHMAX; ++m) {
        const int c = tid + m * NTH;
#pragma unroll
        for (int j = 0; j < KC - 1; ++j) {
            const int pos = t0 - (KC - 1) + j;
            if (c < nch && pos >= 0) win[m][j] = mixed[((long long)seq * T + pos) * in_ld + chs[m]];
        }
    }
    const float scale = rsqrtf((float)dk);
    // Every token's inputs first (independent loads: one memory latency per block, not
    // one per token; the token loop has barriers).
    float xs[TOKC][CHMAX];
#pragma unroll
    for (int k = 0; k < TOKC; ++k) {
#pragma unroll
        for (int m = 0; m < CHMAX; ++m) {
            const int c = tid + m * NTH;
            xs[k][m] = (t0 + k < t1 && c < nch)
                ? mixed[((long long)seq * T + t0 + k) * in_ld + chs[m]] : 0.0f;
        }
    }

#pragma unroll
    for (int k = 0; k < TOKC; ++k) {
        const int t = t0 + k;
        if (t >= t1) break;
        const long long tok = (long long)seq * T + t;
        float sq = 0.0f, sk = 0.0f;
#pragma unroll
        for (int m = 0; m < CHMAX; ++m) {
            const int c = tid + m * NTH;
            if (c < nch) {
                const float xin = xs[k][m];
                float acc = 0.0f;
#pragma unroll
                for (int j = 0; j < KC - 1; ++j) acc = fmaf(w[m][j], win[m][j], acc);
                acc = fmaf(w[m][KC - 1], xin, acc);
#pragma unroll
                for (int j = 0; j + 1 < KC - 1; ++j) win[m][j] = win[m][j + 1];
                if (KC > 1) win[m][KC - 2] = xin;
                const float y = silu_f32(acc);
                ybuf[c] = y;
                if (is_key) {
                    if (c < dk) sq = fmaf(y, y, sq); else sk = fmaf(y, y, sk);
                }
            }
        }
        if (is_key) {
            sq = block_sum(sq, scratch);
            sk = block_sum(sk, scratch);
            const float inv_q = scale / sqrtf(sq + 1e-6f);
            const float inv_k = 1.0f / sqrtf(sk + 1e-6f);
#pragma unroll
            for (int m = 0; m < CHMAX; ++m) {
                const int c = tid + m * NTH;
                if (c < dk) q_out[(tok * hk + x) * dk + c] = ybuf[c] * inv_q;
                else if (c < nch) k_out[(tok * hk + x) * dk + (c - dk)] = ybuf[c] * inv_k;
            }
        } else {
            const int h = x - hk;
#pragma unroll
            for (int m = 0; m < CHMAX; ++m) {
                const int c = tid + m * NTH;
                if (c < nch) v_out[(tok * hv + h) * dv + c] = ybuf[c];
            }
            if (tid == 0) {
                beta_out[tok * hv + h] = 1.0f / (1.0f + expf(-b_in[tok * ab_ld + h]));
                g_out[tok * hv + h] = -expf(a_log[h]) * prep_softplus(a_in[tok * ab_ld + h] + dt_bias[h]);
            }
        }
    }
    if (blockIdx.z == 0) {
        // New conv state: positions T-KC+1 .. T-1 of (state ++ tokens). This thread read
        // the old values of its channels above (in win, before any write).
#pragma unroll
        for (int m = 0; m < CHMAX; ++m) {
            const int c = tid + m * NTH;
            if (c >= nch) continue;
            float old[KC > 1 ? KC - 1 : 1];
#pragma unroll
            for (int j = 0; j < KC - 1; ++j)
                old[j] = conv_state[((long long)seq * conv_dim + chs[m]) * (KC - 1) + j];
#pragma unroll
            for (int j = 0; j < KC - 1; ++j) {
                const int pos = T - (KC - 1) + j;
                const float v = pos >= 0 ? mixed[((long long)seq * T + pos) * in_ld + chs[m]]
                                         : old[pos + KC - 1];
                conv_state[((long long)seq * conv_dim + chs[m]) * (KC - 1) + j] = v;
            }
        }
    }
}
