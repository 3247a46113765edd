{#
  Gated DeltaNet decode step, second half: the state recurrence alone, for one token per
  lane, from the inputs gdn/prep.cu prepared (conv, SiLU, q/k L2 norm with q scaled, the
  gates g and beta). The first half is gdn/prep.cu with the lanes as sequences and T = 1;
  split so that no block of this kernel waits behind block barriers (the fused kernel,
  gdn/recurrent.cu, runs the conv and the norms in every block before its state math, and
  at 8 lanes DRAM idles while a wave of blocks is in that chain: bench/gdn run 10).

  Params:
    form   "tiles" | "resident" (below)
    state  "float" | "f16_t"  state storage (arithmetic is always f32)
    rows   columns of S each half-warp holds (tiles)
    warps  warps per block
    stages cp.async groups a thread's columns are copied in (resident, 1..8)
  16 lanes (a half-warp) share one column of S, 8 elements each (dk <= 128, dk % 8 == 0).

  form "tiles": a block holds warps * 2 * rows consecutive columns of one value head of one
  lane in registers. Grid (ceil(dv / (warps * 2 * rows)), HV, lanes).

  form "resident": a block per SM (grid G, launched as about as many blocks as fit at once)
  owns the contiguous columns [b*C/G, (b+1)*C/G) of all C = lanes * HV * dv columns, split
  into 2 * warps contiguous runs, one a half-warp. Before the PDL wait every thread copies
  its slice of all its columns into dynamic shared memory (cp.async, `stages` commit
  groups), so the whole state is in flight while gdn/prep.cu runs (at 8 lanes of the 27B,
  f32: 191 KB a block); after the wait it computes the groups in order as they land and
  streams the new state out. A thread reads back only what it copied itself (no barrier).
  Dynamic shared memory ceil(C / G) * 16 * 16 * SW bytes (SW = 16-byte words a slice).

  Layouts (f32 but the state): q, k [lanes][HK][dk]; v [lanes][HV][dv]; g, beta [lanes][HV]
  (g the log of the decay); state [lanes][HV][dv][dk] (column j of head h at
  (h * dv + j) * dk); out [lanes][HV][dv].
  The state math is gdn/recurrent.cu's for its l16e8 tiles (the same sums in the same
  order); its inputs are gdn/prep.cu's, whose norms sum in another order than the fused
  kernel's, so the two routes agree to rounding, not bit for bit.

  Programmatic dependent launch: the state is loaded before NINFER_PDL_WAIT() (no kernel of the step writes it before
  this one: gdn/prep.cu, ahead of it, writes only its own outputs and the conv state).
  The state is read and written once a step: streaming loads and stores (.cs), so that it
  does not push the weights the next launches read out of L2.
#}
{%- set form = form | default(value="tiles") %}
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

// Sums over the 16 lanes of this thread's half-warp (`hm` its mask): the xor butterfly of
// gdn_group_sum, so the same bits, but the two half-warps of a warp may diverge.
__device__ __forceinline__ unsigned half_mask() { return 0xffffu << (threadIdx.x & 16); }
__device__ __forceinline__ float half_sum(float v, unsigned hm) {
#pragma unroll
    for (int o = LPR / 2; o > 0; o >>= 1) v += __shfl_xor_sync(hm, v, o);
    return v;
}
__device__ __forceinline__ void half_sum2(float& a, float& b, unsigned hm) {
#pragma unroll
    for (int o = LPR / 2; o > 0; o >>= 1) {
        a += __shfl_xor_sync(hm, a, o);
        b += __shfl_xor_sync(hm, b, o);
    }
}

// One column's step: S (this lane's EPT elements) <- eg S + k delta, delta = beta (v_j -
// eg S.k); returns o_j = eg S.q + (q.k) delta (kq = q.k). gdn/recurrent.cu's l16e8 math.
__device__ __forceinline__ float update_column(float* S, const float* qs, const float* ks,
                                               float eg, float bt, float kq, float vj,
                                               unsigned hm) {
    float sa = 0.0f, sb = 0.0f;
#pragma unroll
    for (int e = 0; e < EPT; ++e) {
        sa = fmaf(S[e], ks[e], sa);
        sb = fmaf(S[e], qs[e], sb);
    }
    half_sum2(sa, sb, hm);
    const float delta = bt * fmaf(-eg, sa, vj);
    const float o = fmaf(kq, delta, eg * sb);
#pragma unroll
    for (int e = 0; e < EPT; ++e) S[e] = fmaf(ks[e], delta, eg * S[e]);
    return o;
}

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

{% if form == "tiles" %}
extern "C" __global__ void __launch_bounds__(WARPS * 32)
{{ kernel_name }}(const float* __restrict__ q,
                  const float* __restrict__ k,
                  const float* __restrict__ v,
                  const float* __restrict__ g,
                  const float* __restrict__ beta,
                  state_t* __restrict__ state,
                  float* __restrict__ out,
                  int hk, int hv, int dk, int dv)
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
    NINFER_PDL_WAIT();     // gdn/prep.cu's outputs are visible from here on
    NINFER_PDL_TRIGGER();

    float qs[EPT], ks[EPT];
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

    const unsigned hm = half_mask();
    float kq = 0.0f;
#pragma unroll
    for (int e = 0; e < EPT; ++e) kq = fmaf(qs[e], ks[e], kq);
    kq = half_sum(kq, hm);
#pragma unroll
    for (int rr = 0; rr < RPT; ++rr) {
        const float o = update_column(S[rr], qs, ks, eg, bt, kq, vj[rr], hm);
        if (j0 + rr < dv) {
            if (in) st_cs(state + (col0 + rr) * dk + i0, S[rr]);
            if (lir == 0) out[col0 + rr] = o;
        }
    }
}
{% else %}
#define STAGES {{ stages }}
#define SW ((EPT * (int)sizeof(state_t)) / 16)   // 16-byte words of a lane's slice
#if STAGES < 1 || STAGES > 8
#error "the resident form takes 1..8 stages"
#endif

__device__ __forceinline__ void res_cp16(void* dst, const void* src) {
    const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(to), "l"(src) : "memory");
}
template <int N>
__device__ __forceinline__ void res_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
// Waits until at most n groups are pending (n is a constant once the caller's loop unrolls).
__device__ __forceinline__ void res_wait_for(int n) {
    switch (n) {
    case 0: res_wait<0>(); break;
    case 1: res_wait<1>(); break;
    case 2: res_wait<2>(); break;
    case 3: res_wait<3>(); break;
    case 4: res_wait<4>(); break;
    case 5: res_wait<5>(); break;
    case 6: res_wait<6>(); break;
    default: res_wait<7>(); break;
    }
}

// A lane's slice as stored, SW 16-byte words, to f32.
__device__ __forceinline__ void res_unpack(const uint4* w, float* v, const float*) {
#pragma unroll
    for (int k = 0; k < SW; ++k) {
        v[4 * k] = __uint_as_float(w[k].x);
        v[4 * k + 1] = __uint_as_float(w[k].y);
        v[4 * k + 2] = __uint_as_float(w[k].z);
        v[4 * k + 3] = __uint_as_float(w[k].w);
    }
}
__device__ __forceinline__ void res_unpack(const uint4* w, float* v, const f16_t*) {
    const u32 u[4] = { w[0].x, w[0].y, w[0].z, w[0].w };
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        v[2 * k] = f16_to_f32((f16_t)(u[k] & 0xffffu));
        v[2 * k + 1] = f16_to_f32((f16_t)(u[k] >> 16));
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32, 1)
{{ kernel_name }}(const float* __restrict__ q,
                  const float* __restrict__ k,
                  const float* __restrict__ v,
                  const float* __restrict__ g,
                  const float* __restrict__ beta,
                  state_t* __restrict__ state,
                  float* __restrict__ out,
                  int hk, int hv, int dk, int dv, int ncols)
{
    extern __shared__ uint4 res_smem[];
    const int sub = threadIdx.x >> 4;            // half-warp of the block: its run
    const int lir = threadIdx.x & 15;            // lane in the column's group
    const unsigned hm = half_mask();
    const int i0 = lir * EPT;
    const bool in = i0 < dk;
    const int c0 = (int)((long long)blockIdx.x * ncols / gridDim.x);
    const int nb = (int)((long long)(blockIdx.x + 1) * ncols / gridDim.x) - c0;
    const int s0 = sub * nb / (2 * WARPS);       // the run, block-local columns [s0, s1)
    const int s1 = (sub + 1) * nb / (2 * WARPS);
    // Block-local column c, word w of lane l at res_smem[(c * SW + w) * 16 + l]: a quarter
    // warp's 16-byte reads fall on consecutive words.
#pragma unroll
    for (int gi = 0; gi < STAGES; ++gi) {
        const int a = s0 + gi * (s1 - s0) / STAGES;
        const int b = s0 + (gi + 1) * (s1 - s0) / STAGES;
        if (in) {
            for (int c = a; c < b; ++c) {
                const uint4* src = reinterpret_cast<const uint4*>(state + (long long)(c0 + c) * dk + i0);
#pragma unroll
                for (int w = 0; w < SW; ++w) res_cp16(&res_smem[(c * SW + w) * 16 + lir], src + w);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    NINFER_PDL_WAIT();     // gdn/prep.cu's outputs are visible from here on
    NINFER_PDL_TRIGGER();

    int cur = -1;          // lane * hv + h of the inputs held
    float qs[EPT], ks[EPT];
    float eg = 0.0f, bt = 0.0f, kq = 0.0f;
#pragma unroll
    for (int gi = 0; gi < STAGES; ++gi) {
        res_wait_for(STAGES - 1 - gi);
        const int a = s0 + gi * (s1 - s0) / STAGES;
        const int b = s0 + (gi + 1) * (s1 - s0) / STAGES;
        for (int c = a; c < b; ++c) {
            const int col = c0 + c;              // (lane * hv + h) * dv + j
            const int lh = col / dv;
            if (lh != cur) {
                cur = lh;
                const int lane_id = lh / hv;
                const int kh = (lh - lane_id * hv) / (hv / hk);
                if (in) {
                    gdn_ld_slice(q + ((long long)lane_id * hk + kh) * dk + i0, qs, EPT);
                    gdn_ld_slice(k + ((long long)lane_id * hk + kh) * dk + i0, ks, EPT);
                } else {
#pragma unroll
                    for (int e = 0; e < EPT; ++e) { qs[e] = 0.0f; ks[e] = 0.0f; }
                }
                eg = expf(g[lh]);
                bt = beta[lh];
                kq = 0.0f;
#pragma unroll
                for (int e = 0; e < EPT; ++e) kq = fmaf(qs[e], ks[e], kq);
                kq = half_sum(kq, hm);
            }
            float S[EPT];
            if (in) {
                uint4 w[SW];
#pragma unroll
                for (int x = 0; x < SW; ++x) w[x] = res_smem[(c * SW + x) * 16 + lir];
                res_unpack(w, S, state);
            } else {
#pragma unroll
                for (int e = 0; e < EPT; ++e) S[e] = 0.0f;
            }
            const float o = update_column(S, qs, ks, eg, bt, kq, v[col], hm);
            if (in) st_cs(state + (long long)col * dk + i0, S);
            if (lir == 0) out[col] = o;
        }
    }
}
{% endif %}
