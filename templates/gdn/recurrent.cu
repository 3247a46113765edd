{#
  Gated DeltaNet recurrent step, fused with the causal conv (+ SiLU), the gating
  (beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias)) and the q/k L2 norm.
  Produces o = S^T q per token (before the gated RMSNorm; gdn/out_norm.cu does that).

  Params:
    mode   "step"   : T tokens per lane (T = 1: the direct decode step; T > 1: batch
                      update); writes o, the state and the conv state in place.
           "record" : verify T columns: writes o, the state after each column to rec_state
                      and the conv window after each column to rec_conv; leaves the state
                      and the conv state untouched.
           "replay" : fold counts[lane] columns (<= T) of the recorded raw inputs into the
                      state and the conv state in place; no o.
    state  "float" | "f16_t"  state storage (arithmetic is always f32)
    lpr    lanes that share one state column (32, 16 or 8)
    ept    elements of the column each lane holds (lpr * ept = the largest dk)
    rows   columns (values of j) each lane holds
    warps  warps per block
    vec    16-byte state loads (needs dk % ept == 0)
    minb   blocks per SM the compiler must fit (register cap), 0 = no cap
    kc     conv width

  Layouts (f32 activations):
    mixed  [lanes][T][conv_dim], conv_dim = 2*HK*dk + HV*dv (q heads | k heads | v heads)
    a, b   [lanes][T][HV]
    conv_w [conv_dim][kc]; a_log, dt_bias [HV]
    conv_state [lanes][conv_dim][kc-1], oldest first
    state  [lanes][HV][dv][dk]: S[i][j] of head h at (h*dv + j)*dk + i
    out    [lanes][T][HV][dv]
    rec_state [lanes][T][HV][dv][dk]; rec_conv [lanes][T][conv_dim][kc-1]
    counters  [lanes][HK] u32, zero between launches (the kernel leaves them zero)

  Grid (ceil(dv / rows_per_block), HV, lanes), block warps*32 threads. Each block owns a
  tile of columns j of one value head of one lane, holds that part of the state in
  registers across the T tokens, and redoes the (cheap) conv and norm of its key head.
  The conv state of the q/k channels is shared by the HV/HK value heads and all column
  tiles of a key head: every such block reads it into shared memory, then counts itself
  in (an atomic counter); the last to arrive writes the new windows when it ends, so no
  block reads a half-written window. The counter goes back to zero.

  Programmatic dependent launch (common/pdl.cuh): before NINFER_PDL_WAIT() a block only
  loads what no kernel of the step writes right before it: its state tile, the conv
  weights and its channels' conv windows (this kernel alone writes the state and the conv
  state, so the launch right ahead of it must not be another step on the same state:
  launch_recurrent says so). Those loads go into registers, so that without the
  attribute (wait a no-op) the token inputs loaded after it still share their round trip.
#}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
#define LPR {{ lpr }}
#define EPT {{ ept }}
#define RPT {{ rows }}
#define WARPS {{ warps }}
#define KC {{ kc }}
#define DKMAX (LPR * EPT)
#define SUBROWS (32 / LPR)
#define TILE_ROWS (WARPS * RPT * SUBROWS)
#define NCHMAX (2 * DKMAX + TILE_ROWS)
#define CITER ((NCHMAX + WARPS * 32 - 1) / (WARPS * 32))   // channel loop trips per thread
#define MODE_{{ mode | upper }} 1
#define VEC {% if vec %}1{% else %}0{% endif %}
typedef {{ state }} state_t;
{% include "gdn/common.cuh" %}

extern "C" __global__ void __launch_bounds__(WARPS * 32{% if minb > 0 %}, {{ minb }}{% endif %})
{{ kernel_name }}{% include "gdn/step_params.cuh" %}
{
    __shared__ float win[NCHMAX][KC > 1 ? KC - 1 : 1];
    __shared__ float cw[NCHMAX][KC];
    __shared__ float ybuf[NCHMAX];
    __shared__ float xin0[NCHMAX];   // token 0's inputs, fetched with the prologue
    __shared__ float scratch[64];
    __shared__ int last_flag;

    const int lane_id = blockIdx.z;
    const int h = blockIdx.y;
    const int tile = blockIdx.x;
    const int r = hv / hk;
    const int kh = h / r;
    const int kd = hk * dk;
    const int conv_dim = 2 * kd + hv * dv;
    const int row0 = tile * TILE_ROWS;
    const int tile_rows = min(TILE_ROWS, dv - row0);
    const int nch = 2 * dk + tile_rows;
    const int tid = threadIdx.x;
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int lir = lane % LPR;           // lane in row group
    const int sub = lane / LPR;           // row group in warp
    const int i0 = lir * EPT;             // first element of the column slice
    const int valid = dk - i0;            // elements of the slice inside dk
    const long long head_base = ((long long)lane_id * hv + h) * dv;  // column index base

    // The state tile first, so its loads are in flight during the conv prologue.
    float S[RPT][EPT];
#pragma unroll
    for (int rr = 0; rr < RPT; ++rr) {
        const int j = row0 + (warp * RPT + rr) * SUBROWS + sub;
        if (j < dv && valid > 0) {
            gdn_ld_slice(state + (head_base + j) * dk + i0, S[rr], valid);
        } else {
#pragma unroll
            for (int e = 0; e < EPT; ++e) S[rr][e] = 0.0f;
        }
    }

    // Channels of this block: q (dk) and k (dk) of key head kh, then v of the tile's
    // columns. Every trip's loads are issued before any is stored to shared memory (one
    // round trip, not one per trip); weights and windows before the wait, inputs after.
    auto chan = [&](int c) {
        return c < dk ? kh * dk + c
             : c < 2 * dk ? kd + kh * dk + (c - dk)
             : 2 * kd + h * dv + row0 + (c - 2 * dk);
    };
    float pcw[CITER][KC], pwin[CITER][KC > 1 ? KC - 1 : 1], px0[CITER];
#pragma unroll
    for (int it = 0; it < CITER; ++it) {
        const int c = tid + it * WARPS * 32;
        if (c < nch) {
            const int ch = chan(c);
#pragma unroll
            for (int j = 0; j < KC; ++j) pcw[it][j] = conv_w[(long long)ch * KC + j];
#pragma unroll
            for (int j = 0; j < KC - 1; ++j)
                pwin[it][j] = conv_state[((long long)lane_id * conv_dim + ch) * (KC - 1) + j];
        }
    }
    const float scale = rsqrtf((float)dk);
    const float neg_a = -expf(a_log[h]);
    const float dtb = dt_bias[h];
    NINFER_PDL_WAIT();     // the predecessor's output (the token inputs) is visible from here on
    NINFER_PDL_TRIGGER();
#if defined(MODE_REPLAY)
    const int ntok = counts[lane_id];
#else
    const int ntok = T;
#endif
#pragma unroll
    for (int it = 0; it < CITER; ++it) {
        const int c = tid + it * WARPS * 32;
        if (c < nch) px0[it] = mixed[(long long)lane_id * T * conv_dim + chan(c)];
    }
    const float a0 = a_in[(long long)lane_id * T * hv + h];
    const float b0 = b_in[(long long)lane_id * T * hv + h];
#pragma unroll
    for (int it = 0; it < CITER; ++it) {
        const int c = tid + it * WARPS * 32;
        if (c < nch) {
#pragma unroll
            for (int j = 0; j < KC; ++j) cw[c][j] = pcw[it][j];
#pragma unroll
            for (int j = 0; j < KC - 1; ++j) win[c][j] = pwin[it][j];
            xin0[c] = px0[it];
        }
    }
    __syncthreads();
#if !defined(MODE_RECORD)
    // Every read of the conv state is done (it sits in win): count this block in. The
    // last block of the key head's group to arrive writes the q/k windows at the end;
    // the atomic's result is looked at only then, so its round trip overlaps the work.
    unsigned int prev = 0u;
    if (tid == 0) prev = atomicAdd(&counters[lane_id * hk + kh], 1u);
#endif

    for (int t = 0; t < ntok; ++t) {
        const long long tok = (long long)lane_id * T + t;
        __syncthreads();  // cw/win ready; ybuf of the previous token consumed
        for (int c = tid; c < nch; c += WARPS * 32) {
            const int ch = c < dk ? kh * dk + c
                         : c < 2 * dk ? kd + kh * dk + (c - dk)
                         : 2 * kd + h * dv + row0 + (c - 2 * dk);
            const float x = t == 0 ? xin0[c] : mixed[tok * conv_dim + ch];
            float acc = 0.0f;
#pragma unroll
            for (int j = 0; j < KC - 1; ++j) acc = fmaf(cw[c][j], win[c][j], acc);
            acc = fmaf(cw[c][KC - 1], x, acc);
#pragma unroll
            for (int j = 0; j + 1 < KC - 1; ++j) win[c][j] = win[c][j + 1];
            if (KC > 1) win[c][KC - 2] = x;
            ybuf[c] = silu_f32(acc);
#if defined(MODE_RECORD)
            if (c >= 2 * dk || (h % r == 0 && tile == 0)) {
#pragma unroll
                for (int j = 0; j < KC - 1; ++j)
                    rec_conv[(tok * conv_dim + ch) * (KC - 1) + j] = win[c][j];
            }
#endif
        }
        __syncthreads();
        float sq = 0.0f, sk = 0.0f;
        for (int c = tid; c < dk; c += WARPS * 32) {
            sq = fmaf(ybuf[c], ybuf[c], sq);
            sk = fmaf(ybuf[dk + c], ybuf[dk + c], sk);
        }
        gdn_block_sum2(sq, sk, scratch);
        const float inv_q = scale / sqrtf(sq + 1e-6f);
        const float inv_k = 1.0f / sqrtf(sk + 1e-6f);
        const float bt = t == 0 ? b0 : b_in[tok * hv + h];
        const float at = t == 0 ? a0 : a_in[tok * hv + h];
        const float beta = 1.0f / (1.0f + expf(-bt));
        const float eg = expf(neg_a * gdn_softplus(at + dtb));

        float qs[EPT], ks[EPT];
        float kq = 0.0f;
#pragma unroll
        for (int e = 0; e < EPT; ++e) {
            const bool in = e < valid;
            qs[e] = in ? ybuf[i0 + e] * inv_q : 0.0f;
            ks[e] = in ? ybuf[dk + i0 + e] * inv_k : 0.0f;
            kq = fmaf(qs[e], ks[e], kq);
        }
        kq = gdn_group_sum(kq);
#pragma unroll
        for (int rr = 0; rr < RPT; ++rr) {
            const int jl = (warp * RPT + rr) * SUBROWS + sub;
            const int j = row0 + jl;
            float sa = 0.0f, sb = 0.0f;
#pragma unroll
            for (int e = 0; e < EPT; ++e) {
                sa = fmaf(S[rr][e], ks[e], sa);
                sb = fmaf(S[rr][e], qs[e], sb);
            }
            gdn_group_sum2(sa, sb);
            const float vj = j < dv ? ybuf[2 * dk + jl] : 0.0f;
            const float delta = beta * fmaf(-eg, sa, vj);
            const float o = fmaf(kq, delta, eg * sb);
#pragma unroll
            for (int e = 0; e < EPT; ++e) S[rr][e] = fmaf(ks[e], delta, eg * S[rr][e]);
#if !defined(MODE_REPLAY)
            if (lir == 0 && j < dv) out[(tok * hv + h) * dv + j] = o;
#endif
#if defined(MODE_RECORD)
            if (j < dv && valid > 0)
                gdn_st_slice(rec_state + ((tok * hv + h) * dv + j) * dk + i0, S[rr], valid);
#endif
        }
    }

#if !defined(MODE_RECORD)
#pragma unroll
    for (int rr = 0; rr < RPT; ++rr) {
        const int j = row0 + (warp * RPT + rr) * SUBROWS + sub;
        if (j < dv && valid > 0) gdn_st_slice(state + (head_base + j) * dk + i0, S[rr], valid);
    }
    // Conv state: v channels belong to this block alone; the q/k channels are written by
    // the last block of the key head's group to finish reading them.
    if (tid == 0) last_flag = (prev == (unsigned int)(r * gridDim.x) - 1u);
    __syncthreads();
    for (int c = 2 * dk + tid; c < nch; c += WARPS * 32) {
        const int ch = 2 * kd + h * dv + row0 + (c - 2 * dk);
#pragma unroll
        for (int j = 0; j < KC - 1; ++j)
            conv_state[((long long)lane_id * conv_dim + ch) * (KC - 1) + j] = win[c][j];
    }
    if (last_flag) {
        for (int c = tid; c < 2 * dk; c += WARPS * 32) {
            const int ch = c < dk ? kh * dk + c : kd + kh * dk + (c - dk);
#pragma unroll
            for (int j = 0; j < KC - 1; ++j)
                conv_state[((long long)lane_id * conv_dim + ch) * (KC - 1) + j] = win[c][j];
        }
        if (tid == 0) counters[lane_id * hk + kh] = 0u;
    }
#endif
}
