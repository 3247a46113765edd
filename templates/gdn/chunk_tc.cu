{#
  GDN chunked prefill, both chunk stages on tensor cores (mma.sync m16n8k8, TF32 inputs, f32
  accumulation). Same inputs, outputs and layouts as gdn/chunk.cu (which documents the
  algebra). Params: stage ("wu" or "scan"), dkmax (128), split: 1 = plain TF32 (inputs
  rounded to 10 mantissa bits), 3 = 3xTF32 (x = hi + lo, hi*hi + hi*lo + lo*hi: about f32
  accuracy); scan only: dvt (16, 32, 64).

  stage "wu", grid (ceil(T/64), HV, seqs), 256 threads, two blocks per SM: the Gram
  products K K^T and Q K^T (causal tiles only) on tensor cores; A and P scaled as in
  chunk.cu; T = (I + A)^-1 by forward substitution (four threads per column, shuffles);
  then [W | U] = T diag(beta) [K e^G | V] on tensor cores (T lower triangular: causal
  k-steps), 256 columns per pass.

  stage "scan": per chunk, with S the state tile (dk x dvt):
    V' = U - W S, QS = Q S          (M = 64 tokens, N = dvt, K = dk)
    o = e^G * QS + P V'             (K = tokens; P is lower triangular, so causal k-steps)
    S <- e^(G_last) S + Kd^T V'     (M = dk, N = dvt, K = tokens; Kd_s = e^(G_last - G_s) k_s)
  grid (ceil(dv/dvt), HV, seqs), 256 threads (8 warps), one block per SM (dynamic shared
  memory, see chunk_tc_smem in src/ops/gdn/mod.rs). The next chunk's inputs are loaded
  while the current one's o and state update compute (16-byte loads and cp.async copies
  when dk and dv are multiples of 4).
#}
{% include "common/types.cuh" %}
#define CH 64
#define NT 256
#define DKMAX {{ dkmax }}
#define SPLIT {{ split }}

__device__ __forceinline__ u32 tc_tf32(float x) {
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// hi (and with SPLIT 3, lo = the rounding remainder) of N fragment values.
template <int N>
__device__ __forceinline__ void tc_split(const float* x, u32* hi, u32* lo) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
        hi[i] = tc_tf32(x[i]);
#if SPLIT == 3
        lo[i] = tc_tf32(x[i] - __uint_as_float(hi[i]));
#endif
    }
}

__device__ __forceinline__ void tc_mma1(float* c, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// c (16x8) += A (16x8) B (8x8), split as SPLIT says (small terms first).
__device__ __forceinline__ void tc_mma(float* c, const u32* ah, const u32* al,
                                       const u32* bh, const u32* bl) {
#if SPLIT == 3
    tc_mma1(c, al, bh);
    tc_mma1(c, ah, bl);
#endif
    tc_mma1(c, ah, bh);
}

{% if stage == "wu" %}
{% include "gdn/chunk_wu_tc.cuh" %}
{% else %}
#define DVT {{ dvt }}
// Row strides (floats) chosen so every mma fragment load hits 32 distinct banks.
#define LDA (DKMAX + 4)   // W, Q: A operand, row-major
#define LDK (DKMAX + 8)   // K: A operand read transposed
#define LDP (CH + 4)      // P: A operand, row-major
#define LDS (DVT + 8)     // S, V': B operand
#define NTW (DVT / 16)    // n-tiles (of 8 columns) per warp in the token-row products
#define NT8 (DVT / 8)     // n-tiles per warp in the state update
extern "C" __global__ void __launch_bounds__(NT, 1)
{{ kernel_name }}(const float* __restrict__ q_in,
                  const float* __restrict__ k_in,
                  const float* __restrict__ w_in,
                  const float* __restrict__ u_in,
                  const float* __restrict__ p_in,
                  const float* __restrict__ gc_in,
                  float* state,
                  float* __restrict__ out,
                  int T, int hk, int hv, int dk, int dv)
{
    extern __shared__ float4 smem4[];
    float* Ws = reinterpret_cast<float*>(smem4);   // [CH][LDA]
    float* Qs = Ws + CH * LDA;                     // [CH][LDA]
    float* Ks = Qs + CH * LDA;                     // [CH][LDK], rows scaled by dec
    float* Ps = Ks + CH * LDK;                     // [CH][LDP]
    float* Ss = Ps + CH * LDP;                     // [DKMAX][LDS]
    float* Vs = Ss + DKMAX * LDS;                  // [CH][LDS]: U, then V'
    float* gs = Vs + CH * LDS;                     // [CH]
    float* dec = gs + CH;                          // [CH]: e^(G_last - G_s)
    const int seq = blockIdx.z, h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int j0 = blockIdx.x * DVT;
    const int nj = min(DVT, dv - j0);
    const int tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const long long sbase = ((long long)seq * hv + h) * dv;
    const bool vec = (dk & 3) == 0 && (dv & 3) == 0;

    for (int e = tid; e < DKMAX * DVT; e += NT) {
        const int j = e / DKMAX, i = e % DKMAX;
        Ss[i * LDS + j] = (j < nj && i < dk) ? state[(sbase + j0 + j) * dk + i] : 0.0f;
    }

    // The next chunk's inputs (vector path): W and Q by cp.async straight into their
    // buffers (no longer read once the W S / Q S products are done), K, P, U and G into
    // registers (stored at the top of the next chunk).
    constexpr int PER = (CH * DKMAX / 4) / NT;
    constexpr int PERP = (CH * CH / 4) / NT;
    constexpr int PERU = (CH * DVT / 4 + NT - 1) / NT;
    float4 rk[PER], rp[PERP], ru[PERU];
    float rg = 0.0f, rgl = 0.0f;
    auto fetch = [&](int t0) {
        const int tc = min(CH, T - t0);
        const long long tok0 = (long long)seq * T + t0;
        float4 z4;
        z4.x = z4.y = z4.z = z4.w = 0.0f;
#pragma unroll
        for (int it = 0; it < PER; ++it) {
            const int e = tid + it * NT;
            const int t = e / (DKMAX / 4), i = (e % (DKMAX / 4)) * 4;
            const bool in = t < tc && i < dk;
            const float* wsrc = in ? w_in + ((tok0 + t) * hv + h) * dk + i : w_in;
            const float* qsrc = in ? q_in + ((tok0 + t) * hk + kh) * dk + i : q_in;
            const unsigned wto = (unsigned)__cvta_generic_to_shared(Ws + t * LDA + i);
            const unsigned qto = (unsigned)__cvta_generic_to_shared(Qs + t * LDA + i);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                         :: "r"(wto), "l"(wsrc), "r"(in ? 16 : 0) : "memory");
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                         :: "r"(qto), "l"(qsrc), "r"(in ? 16 : 0) : "memory");
            rk[it] = in ? *reinterpret_cast<const float4*>(k_in + ((tok0 + t) * hk + kh) * dk + i) : z4;
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
#pragma unroll
        for (int it = 0; it < PERP; ++it) {
            const int e = tid + it * NT;
            const int t = e / (CH / 4), s4 = (e % (CH / 4)) * 4;
            rp[it] = t < tc ? *reinterpret_cast<const float4*>(p_in + ((tok0 + t) * hv + h) * CH + s4) : z4;
        }
#pragma unroll
        for (int it = 0; it < PERU; ++it) {
            const int e = tid + it * NT;
            const int t = e / (DVT / 4), j = (e % (DVT / 4)) * 4;
            const bool in = e < CH * DVT / 4 && t < tc && j < nj;
            ru[it] = in ? *reinterpret_cast<const float4*>(u_in + ((tok0 + t) * hv + h) * dv + j0 + j) : z4;
        }
        if (tid < CH) {
            rgl = gc_in[(tok0 + tc - 1) * hv + h];
            rg = tid < tc ? gc_in[(tok0 + tid) * hv + h] : 0.0f;
        }
    };
    if (vec) fetch(0);

    for (int t0 = 0; t0 < T; t0 += CH) {
        const int tc = min(CH, T - t0);
        const long long tok0 = (long long)seq * T + t0;
        __syncthreads();   // the last chunk's products are done with the buffers
        if (vec) {
#pragma unroll
            for (int it = 0; it < PER; ++it) {
                const int e = tid + it * NT;
                const int t = e / (DKMAX / 4), i = (e % (DKMAX / 4)) * 4;
                *reinterpret_cast<float4*>(Ks + t * LDK + i) = rk[it];
            }
#pragma unroll
            for (int it = 0; it < PERP; ++it) {
                const int e = tid + it * NT;
                const int t = e / (CH / 4), s4 = (e % (CH / 4)) * 4;
                *reinterpret_cast<float4*>(Ps + t * LDP + s4) = rp[it];
            }
#pragma unroll
            for (int it = 0; it < PERU; ++it) {
                const int e = tid + it * NT;
                if (e < CH * DVT / 4) {
                    const int t = e / (DVT / 4), j = (e % (DVT / 4)) * 4;
                    *reinterpret_cast<float4*>(Vs + t * LDS + j) = ru[it];
                }
            }
            if (tid < CH) {
                gs[tid] = rg;
                dec[tid] = tid < tc ? expf(rgl - rg) : 0.0f;
            }
            asm volatile("cp.async.wait_all;\n" ::: "memory");   // this thread's W, Q copies
        } else {
            for (int e = tid; e < CH * DKMAX; e += NT) {
                const int t = e / DKMAX, i = e % DKMAX;
                const bool in = t < tc && i < dk;
                Ws[t * LDA + i] = in ? w_in[((tok0 + t) * hv + h) * dk + i] : 0.0f;
                Qs[t * LDA + i] = in ? q_in[((tok0 + t) * hk + kh) * dk + i] : 0.0f;
                Ks[t * LDK + i] = in ? k_in[((tok0 + t) * hk + kh) * dk + i] : 0.0f;
            }
            for (int e = tid; e < CH * CH; e += NT) {
                const int t = e / CH, s = e % CH;
                Ps[t * LDP + s] = t < tc ? p_in[((tok0 + t) * hv + h) * CH + s] : 0.0f;
            }
            for (int e = tid; e < CH * DVT; e += NT) {
                const int t = e / DVT, j = e % DVT;
                Vs[t * LDS + j] = (t < tc && j < nj) ? u_in[((tok0 + t) * hv + h) * dv + j0 + j] : 0.0f;
            }
            if (tid < CH) {
                const float gl = gc_in[(tok0 + tc - 1) * hv + h];
                const float gv = tid < tc ? gc_in[(tok0 + tid) * hv + h] : 0.0f;
                gs[tid] = gv;
                dec[tid] = tid < tc ? expf(gl - gv) : 0.0f;
            }
        }
        __syncthreads();

        // W S and Q S: warp -> token rows r0..r0+15, columns n0 + 8x (x < NTW).
        const int r0 = (warp & 3) * 16;
        const int n0 = (warp >> 2) * (DVT / 2);
        float cw[NTW][4], cq[NTW][4];
#pragma unroll
        for (int x = 0; x < NTW; ++x)
#pragma unroll
            for (int e = 0; e < 4; ++e) { cw[x][e] = 0.0f; cq[x][e] = 0.0f; }
#pragma unroll 4
        for (int k0 = 0; k0 < DKMAX; k0 += 8) {   // columns past dk are zero
            float aw[4], aq[4];
            aw[0] = Ws[(r0 + g) * LDA + k0 + t4];
            aw[1] = Ws[(r0 + g + 8) * LDA + k0 + t4];
            aw[2] = Ws[(r0 + g) * LDA + k0 + t4 + 4];
            aw[3] = Ws[(r0 + g + 8) * LDA + k0 + t4 + 4];
            aq[0] = Qs[(r0 + g) * LDA + k0 + t4];
            aq[1] = Qs[(r0 + g + 8) * LDA + k0 + t4];
            aq[2] = Qs[(r0 + g) * LDA + k0 + t4 + 4];
            aq[3] = Qs[(r0 + g + 8) * LDA + k0 + t4 + 4];
            u32 awh[4], awl[4], aqh[4], aql[4];
            tc_split<4>(aw, awh, awl);
            tc_split<4>(aq, aqh, aql);
#pragma unroll
            for (int x = 0; x < NTW; ++x) {
                float b[2];
                b[0] = Ss[(k0 + t4) * LDS + n0 + 8 * x + g];
                b[1] = Ss[(k0 + t4 + 4) * LDS + n0 + 8 * x + g];
                u32 bh[2], bl[2];
                tc_split<2>(b, bh, bl);
                tc_mma(cw[x], awh, awl, bh, bl);
                tc_mma(cq[x], aqh, aql, bh, bl);
            }
        }
        // V' = U - W S (each element owned by one thread); QS scaled by e^(G_t).
        const float eg0 = expf(gs[r0 + g]), eg1 = expf(gs[r0 + g + 8]);
#pragma unroll
        for (int x = 0; x < NTW; ++x) {
            const int c = n0 + 8 * x + 2 * t4;
            Vs[(r0 + g) * LDS + c] -= cw[x][0];
            Vs[(r0 + g) * LDS + c + 1] -= cw[x][1];
            Vs[(r0 + g + 8) * LDS + c] -= cw[x][2];
            Vs[(r0 + g + 8) * LDS + c + 1] -= cw[x][3];
            cq[x][0] *= eg0; cq[x][1] *= eg0;
            cq[x][2] *= eg1; cq[x][3] *= eg1;
        }
        // K rows scaled by their decay to the chunk's end (K is not read above).
        for (int e = tid; e < CH * DKMAX; e += NT) {
            const int t = e / DKMAX, i = e % DKMAX;
            Ks[t * LDK + i] *= dec[t];
        }
        __syncthreads();
        if (vec && t0 + CH < T) fetch(t0 + CH);   // W and Q are no longer read this chunk

        // o = e^G QS + P V' (P is zero above the diagonal: k-steps up to the tile's end).
        for (int k0 = 0; k0 < r0 + 16; k0 += 8) {
            float a[4];
            a[0] = Ps[(r0 + g) * LDP + k0 + t4];
            a[1] = Ps[(r0 + g + 8) * LDP + k0 + t4];
            a[2] = Ps[(r0 + g) * LDP + k0 + t4 + 4];
            a[3] = Ps[(r0 + g + 8) * LDP + k0 + t4 + 4];
            u32 ah[4], al[4];
            tc_split<4>(a, ah, al);
#pragma unroll
            for (int x = 0; x < NTW; ++x) {
                float b[2];
                b[0] = Vs[(k0 + t4) * LDS + n0 + 8 * x + g];
                b[1] = Vs[(k0 + t4 + 4) * LDS + n0 + 8 * x + g];
                u32 bh[2], bl[2];
                tc_split<2>(b, bh, bl);
                tc_mma(cq[x], ah, al, bh, bl);
            }
        }
#pragma unroll
        for (int x = 0; x < NTW; ++x) {
            const int c = n0 + 8 * x + 2 * t4;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int t = r0 + g + (e >> 1) * 8, j = c + (e & 1);
                if (t < tc && j < nj) out[((tok0 + t) * hv + h) * dv + j0 + j] = cq[x][e];
            }
        }

        // S <- e^(G_last) S + Kd^T V': warp -> state rows i0..i0+15, every column.
        {
            const int i0 = warp * 16;
            const float el = expf(gs[tc - 1]);
            float cs[NT8][4];
#pragma unroll
            for (int x = 0; x < NT8; ++x) {
                const int c = 8 * x + 2 * t4;
                cs[x][0] = el * Ss[(i0 + g) * LDS + c];
                cs[x][1] = el * Ss[(i0 + g) * LDS + c + 1];
                cs[x][2] = el * Ss[(i0 + g + 8) * LDS + c];
                cs[x][3] = el * Ss[(i0 + g + 8) * LDS + c + 1];
            }
            if (i0 < dk) {
#pragma unroll 2
                for (int k0 = 0; k0 < CH; k0 += 8) {   // V' rows past tc are zero
                    float a[4];
                    a[0] = Ks[(k0 + t4) * LDK + i0 + g];
                    a[1] = Ks[(k0 + t4) * LDK + i0 + g + 8];
                    a[2] = Ks[(k0 + t4 + 4) * LDK + i0 + g];
                    a[3] = Ks[(k0 + t4 + 4) * LDK + i0 + g + 8];
                    u32 ah[4], al[4];
                    tc_split<4>(a, ah, al);
#pragma unroll
                    for (int x = 0; x < NT8; ++x) {
                        float b[2];
                        b[0] = Vs[(k0 + t4) * LDS + 8 * x + g];
                        b[1] = Vs[(k0 + t4 + 4) * LDS + 8 * x + g];
                        u32 bh[2], bl[2];
                        tc_split<2>(b, bh, bl);
                        tc_mma(cs[x], ah, al, bh, bl);
                    }
                }
            }
#pragma unroll
            for (int x = 0; x < NT8; ++x) {
                const int c = 8 * x + 2 * t4;
                Ss[(i0 + g) * LDS + c] = cs[x][0];
                Ss[(i0 + g) * LDS + c + 1] = cs[x][1];
                Ss[(i0 + g + 8) * LDS + c] = cs[x][2];
                Ss[(i0 + g + 8) * LDS + c + 1] = cs[x][3];
            }
        }
    }
    __syncthreads();
    for (int e = tid; e < DKMAX * DVT; e += NT) {
        const int j = e / DKMAX, i = e % DKMAX;
        if (j < nj && i < dk) state[(sbase + j0 + j) * dk + i] = Ss[i * LDS + j];
    }
}
{% endif %}
