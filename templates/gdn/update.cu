{#
  Gated DeltaNet decode step, second half: the state recurrence alone, for one token per
  lane, from the inputs gdn/prep.cu prepared (conv, SiLU, q/k L2 norm with q scaled, the
  gates g and beta). The first half is gdn/prep.cu with the lanes as sequences and T = 1;
  split so that no block of this kernel waits behind block barriers (the fused kernel,
  gdn/recurrent.cu, runs the conv and the norms in every block before its state math, and
  at 8 lanes DRAM idles while a wave of blocks is in that chain: bench/gdn run 10).

  Params:
    state  "float" | "f16_t"  state storage (arithmetic is always f32)
    rows   columns of S each half-warp holds
    warps  warps per block
    gin    (default false) the gates and the q/k norms in this kernel, the first launch
           being gdn/conv_step.cu (the conv + SiLU alone): q, k, v of each lane at
           mixed + lane * in_ld as it left them (unnormed), the raw a and b at
           a_in / b_in + lane * ab_ld; flash-linear-attention's recurrent kernel takes its
           inputs so with its gates and norms in the kernel. The norms and gates are
           gdn/prep.cu's formulas, the norms summed in the half-warp (another order than
           the prep's block sums). The rows must be 16-byte aligned (q and k are read in
           16-byte slices).
    prefetch (default false) the kernel takes `ahead`: before its wait, thread 0 prefetches
           into L2 (one bulk prefetch, sm_90; none on older GPUs) the state slab of the
           block `ahead` blocks on in launch order (0: none), so that DRAM also serves the
           blocks that cannot be resident yet while the first launch runs (bench/gdn run
           49: the f16 state -5..8 % on an H100; the f32 state no gain).
  16 lanes share one column of S, 8 elements each (dk <= 128, dk % 8 == 0); a block holds
  warps * 2 * rows consecutive columns of one value head of one lane.

  Layouts (f32 but the state): q, k [lanes][HK][dk]; v [lanes][HV][dv]; g, beta [lanes][HV]
  (g the log of the decay); state [lanes][HV][dv][dk] (column j of head h at
  (h * dv + j) * dk); out [lanes][HV][dv].
  The state math is gdn/recurrent.cu's for its l16e8 tiles (the same sums in the same
  order); its inputs are gdn/prep.cu's, whose norms sum in another order than the fused
  kernel's, so the two routes agree to rounding, not bit for bit.

  Grid (ceil(dv / (warps * 2 * rows)), HV, lanes). Programmatic dependent launch: the
  state slice is loaded before NINFER_PDL_WAIT() (no kernel of the step writes it before
  this one: gdn/prep.cu, ahead of it, writes only its own outputs and the conv state).
  The state is read and written once a step: streaming loads and stores (.cs), so that it
  does not push the weights the next launches read out of L2.
#}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
#define LPR 16
#define EPT 8
#define VEC 1
#define RPT {{ rows }}
#define WARPS {{ warps }}
typedef {{ state }} state_t;
{% include "gdn/common.cuh" %}

// A state slice (EPT = 8 elements) with streaming accesses; gdn/common.cuh's layout.
__device__ __forceinline__ void ld_cs(const float* p, float* v) {
#pragma unroll
    for (int e = 0; e < EPT; e += 4) {
        asm volatile("ld.global.cs.v4.f32 { %0, %1, %2, %3 }, [%4];"
                     : "=f"(v[e]), "=f"(v[e + 1]), "=f"(v[e + 2]), "=f"(v[e + 3]) : "l"(p + e));
    }
}
__device__ __forceinline__ void st_cs(float* p, const float* v) {
#pragma unroll
    for (int e = 0; e < EPT; e += 4) {
        asm volatile("st.global.cs.v4.f32 [%0], { %1, %2, %3, %4 };"
                     :: "l"(p + e), "f"(v[e]), "f"(v[e + 1]), "f"(v[e + 2]), "f"(v[e + 3]) : "memory");
    }
}
__device__ __forceinline__ void ld_cs(const f16_t* p, float* v) {
    u32 w0, w1, w2, w3;
    asm volatile("ld.global.cs.v4.u32 { %0, %1, %2, %3 }, [%4];"
                 : "=r"(w0), "=r"(w1), "=r"(w2), "=r"(w3) : "l"(p));
    const u32 w[4] = { w0, w1, w2, w3 };
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        v[2 * k] = f16_to_f32((f16_t)(w[k] & 0xffffu));
        v[2 * k + 1] = f16_to_f32((f16_t)(w[k] >> 16));
    }
}
__device__ __forceinline__ void st_cs(f16_t* p, const float* v) {
    u32 w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
        w[k] = (u32)f32_to_f16(v[2 * k]) | ((u32)f32_to_f16(v[2 * k + 1]) << 16);
    asm volatile("st.global.cs.v4.u32 [%0], { %1, %2, %3, %4 };"
                 :: "l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
{%- if gin | default(value=false) %}
{{ kernel_name }}(const float* __restrict__ mixed,
                  const float* __restrict__ a_in,
                  const float* __restrict__ b_in,
                  const float* __restrict__ a_log,
                  const float* __restrict__ dt_bias,
                  state_t* __restrict__ state,
                  float* __restrict__ out,
                  int hk, int hv, int dk, int dv,
                  long long in_ld, long long ab_ld{% if prefetch | default(value=false) %}, int ahead{% endif %})
{%- else %}
{{ kernel_name }}(const float* __restrict__ q,
                  const float* __restrict__ k,
                  const float* __restrict__ v,
                  const float* __restrict__ g,
                  const float* __restrict__ beta,
                  state_t* __restrict__ state,
                  float* __restrict__ out,
                  int hk, int hv, int dk, int dv{% if prefetch | default(value=false) %}, int ahead{% endif %})
{%- endif %}
{
    const int lane_id = blockIdx.z;
    const int h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int sub = threadIdx.x >> 4;            // half-warp of the block
    const int lir = threadIdx.x & 15;            // lane in the column's group
    const int i0 = lir * EPT;                    // first element of the slice
    const bool in = i0 < dk;                     // (dk % 8 == 0: a slice is all in or out)
    const int j0 = blockIdx.x * (WARPS * 2 * RPT) + sub * RPT;
    const long long col0 = ((long long)lane_id * hv + h) * dv + j0;

    float S[RPT][EPT];
#pragma unroll
    for (int rr = 0; rr < RPT; ++rr) {
        if (in && j0 + rr < dv) {
            ld_cs(state + (col0 + rr) * dk + i0, S[rr]);
        } else {
#pragma unroll
            for (int e = 0; e < EPT; ++e) S[rr][e] = 0.0f;
        }
    }
{%- if prefetch | default(value=false) %}
#if __CUDA_ARCH__ >= 900
    if (ahead > 0 && threadIdx.x == 0) {
        const long long nx = gridDim.x, ny = gridDim.y;
        const long long pb = blockIdx.x + nx * (blockIdx.y + ny * blockIdx.z) + ahead;
        if (pb < nx * ny * gridDim.z) {
            const int px = (int)(pb % nx), py = (int)((pb / nx) % ny), pz = (int)(pb / (nx * ny));
            const int pj = px * (WARPS * 2 * RPT);
            const int cols = min(WARPS * 2 * RPT, dv - pj);
            const state_t* p = state + (((long long)pz * hv + py) * dv + pj) * dk;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;"
                         :: "l"(p), "r"((unsigned)(cols * dk * (int)sizeof(state_t))) : "memory");
        }
    }
#endif
{%- endif %}
    NINFER_PDL_WAIT();     // gdn/prep.cu's outputs are visible from here on
    NINFER_PDL_TRIGGER();

    float qs[EPT], ks[EPT];
{%- if gin | default(value=false) %}
    const float* q = mixed + lane_id * in_ld + (long long)kh * dk;
    const float* k = q + (long long)hk * dk;
    const float* vh = mixed + lane_id * in_ld + 2LL * hk * dk + (long long)h * dv;
    if (in) {
        gdn_ld_slice(q + i0, qs, EPT);
        gdn_ld_slice(k + i0, ks, EPT);
    } else {
#pragma unroll
        for (int e = 0; e < EPT; ++e) { qs[e] = 0.0f; ks[e] = 0.0f; }
    }
    const float a_raw = a_in[lane_id * ab_ld + h];
    const float b_raw = b_in[lane_id * ab_ld + h];
    float vj[RPT];
#pragma unroll
    for (int rr = 0; rr < RPT; ++rr) vj[rr] = j0 + rr < dv ? vh[j0 + rr] : 0.0f;
    // gdn/prep.cu's norms (q also scaled by 1 / sqrt(dk)) and gates.
    float sq = 0.0f, sk = 0.0f;
#pragma unroll
    for (int e = 0; e < EPT; ++e) {
        sq = fmaf(qs[e], qs[e], sq);
        sk = fmaf(ks[e], ks[e], sk);
    }
    gdn_group_sum2(sq, sk);
    const float inv_q = rsqrtf((float)dk) / sqrtf(sq + 1e-6f);
    const float inv_k = 1.0f / sqrtf(sk + 1e-6f);
#pragma unroll
    for (int e = 0; e < EPT; ++e) {
        qs[e] *= inv_q;
        ks[e] *= inv_k;
    }
    const float eg = expf(-expf(a_log[h]) * gdn_softplus(a_raw + dt_bias[h]));
    const float bt = 1.0f / (1.0f + expf(-b_raw));
{%- else %}
    if (in) {
        gdn_ld_slice(q + ((long long)lane_id * hk + kh) * dk + i0, qs, EPT);
        gdn_ld_slice(k + ((long long)lane_id * hk + kh) * dk + i0, ks, EPT);
    } else {
#pragma unroll
        for (int e = 0; e < EPT; ++e) { qs[e] = 0.0f; ks[e] = 0.0f; }
    }
    const float eg = expf(g[lane_id * hv + h]);
    const float bt = beta[lane_id * hv + h];
    float vj[RPT];
#pragma unroll
    for (int rr = 0; rr < RPT; ++rr) vj[rr] = j0 + rr < dv ? v[((long long)lane_id * hv + h) * dv + j0 + rr] : 0.0f;
{%- endif %}

    float kq = 0.0f;
#pragma unroll
    for (int e = 0; e < EPT; ++e) kq = fmaf(qs[e], ks[e], kq);
    kq = gdn_group_sum(kq);
#pragma unroll
    for (int rr = 0; rr < RPT; ++rr) {
        float sa = 0.0f, sb = 0.0f;
#pragma unroll
        for (int e = 0; e < EPT; ++e) {
            sa = fmaf(S[rr][e], ks[e], sa);
            sb = fmaf(S[rr][e], qs[e], sb);
        }
        gdn_group_sum2(sa, sb);
        const float delta = bt * fmaf(-eg, sa, vj[rr]);
        const float o = fmaf(kq, delta, eg * sb);
#pragma unroll
        for (int e = 0; e < EPT; ++e) S[rr][e] = fmaf(ks[e], delta, eg * S[rr][e]);
        if (j0 + rr < dv) {
            if (in) st_cs(state + (col0 + rr) * dk + i0, S[rr]);
            if (lir == 0) out[col0 + rr] = o;
        }
    }
}
