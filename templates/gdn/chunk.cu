{#
  GDN chunked prefill (chunk 64, WY/UT form), f32 throughout. Two stages:

  stage "wu" (parallel over chunks), grid (ceil(T/64), HV, seqs), 256 threads, dynamic
  shared memory (4*(2*64*33 + 64*68 + 64*256 + 128) bytes). Per chunk
  with cumulative log-decay G (within the chunk):
    A[t][s] = beta_t (k_t . k_s) e^(G_t - G_s)  (s < t)
    (I + A) [W | U] = diag(beta) [K e^G | V]     (forward substitution, one column/thread)
    P[t][s] = (q_t . k_s) e^(G_t - G_s)          (s <= t, else 0)
  writes W [seqs][T][HV][dk], U [seqs][T][HV][dv], P [seqs][T][HV][64], G [seqs][T][HV].

  stage "scan" (sequential over chunks), grid (ceil(dv/dvt), HV, seqs), 256 threads,
  dynamic shared memory (4*(3*64*dkmax + dkmax*(dvt+1) + 64*64 + 64*(dvt+1) + 128) bytes): per chunk, with S the state tile
  (dk x dvt, f32, layout [HV][dv][dk] in memory):
    V' = U - W S;  o_t = e^(G_t) S^T q_t + sum_(s<=t) P[t][s] v'_s
    S <- e^(G_last) S + sum_s e^(G_last - G_s) k_s v'_s^T
  Inputs are the prepared q, k [seqs][T][HK][dk] and v [seqs][T][HV][dv] (gdn/prep.cu).
  Params: stage, dkmax (largest dk), dvt (columns per scan block; 256 % dvt == 0).
#}
{% include "common/types.cuh" %}
#define CH 64
#define NT 256
#define DKMAX {{ dkmax }}

{% if stage == "wu" %}
#define AST (CH + 4)   // row stride of A (16-byte rows)
// Dynamic shared memory: 4 * (2*CH*33 + CH*AST + CH*NT + 2*CH) bytes.
extern "C" __global__ void __launch_bounds__(NT)
{{ kernel_name }}(const float* __restrict__ q_in,
                  const float* __restrict__ k_in,
                  const float* __restrict__ v_in,
                  const float* __restrict__ g_in,
                  const float* __restrict__ beta_in,
                  float* __restrict__ w_out,
                  float* __restrict__ u_out,
                  float* __restrict__ p_out,
                  float* __restrict__ gc_out,
                  int T, int hk, int hv, int dk, int dv)
{
    extern __shared__ float smem[];
    float* Qs = smem;                 // [CH][33] slice of q
    float* Ks = Qs + CH * 33;         // [CH][33] slice of k
    float* As = Ks + CH * 33;         // [CH][AST]
    float* Xs = As + CH * AST;        // [CH][NT]: column tid belongs to thread tid
    float* gcs = Xs + CH * NT;        // [CH]
    float* bts = gcs + CH;            // [CH]
    const int seq = blockIdx.z, h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int t0 = blockIdx.x * CH;
    const int tc = min(CH, T - t0);
    const int tid = threadIdx.x;
    const long long tok0 = (long long)seq * T + t0;

    // The chunk's gates: loaded by CH threads at once (one memory latency, not CH in a
    // chain), then summed in order by one thread from shared memory.
    if (tid < CH) {
        gcs[tid] = tid < tc ? g_in[(tok0 + tid) * hv + h] : 0.0f;
        bts[tid] = tid < tc ? beta_in[(tok0 + tid) * hv + h] : 0.0f;
    }
    __syncthreads();
    if (tid == 0) {
        float acc = 0.0f;
        for (int t = 0; t < CH; ++t) {
            acc += gcs[t];   // zero past tc: G stays at its last value
            gcs[t] = acc;
        }
    }
    __syncthreads();
    if (tid < tc) gc_out[(tok0 + tid) * hv + h] = gcs[tid];
    // Gram matrices over dk in slices of 32: thread (t = tid/4) takes s = tid%4 + 4m.
    const int ta = tid >> 2;
    float accA[16], accP[16];
#pragma unroll
    for (int m = 0; m < 16; ++m) { accA[m] = 0.0f; accP[m] = 0.0f; }
    for (int i0 = 0; i0 < dk; i0 += 32) {
        __syncthreads();
        for (int e = tid; e < CH * 32; e += NT) {
            const int t = e >> 5, i = e & 31;
            const bool in = t < tc && i0 + i < dk;
            Qs[t * 33 + i] = in ? q_in[((tok0 + t) * hk + kh) * dk + i0 + i] : 0.0f;
            Ks[t * 33 + i] = in ? k_in[((tok0 + t) * hk + kh) * dk + i0 + i] : 0.0f;
        }
        __syncthreads();
        for (int i = 0; i < 32; ++i) {
            const float kt = Ks[ta * 33 + i], qt = Qs[ta * 33 + i];
#pragma unroll
            for (int m = 0; m < 16; ++m) {
                const float ks = Ks[((tid & 3) + 4 * m) * 33 + i];
                accA[m] = fmaf(kt, ks, accA[m]);
                accP[m] = fmaf(qt, ks, accP[m]);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < 16; ++m) {
        const int s = (tid & 3) + 4 * m;
        const float decay = (s <= ta && ta < tc) ? expf(gcs[ta] - gcs[s]) : 0.0f;
        As[ta * AST + s] = s < ta ? bts[ta] * accA[m] * decay : 0.0f;
        if (ta < tc) p_out[((tok0 + ta) * hv + h) * CH + s] = accP[m] * decay;
    }
    __syncthreads();
    // Forward substitution, one column of [W | U] per thread, in shared memory (each
    // thread touches only its own column, so no barrier inside).
    for (int c0 = 0; c0 < dk + dv; c0 += NT) {
        const int c = c0 + tid;
        const bool act = c < dk + dv;
#pragma unroll 16
        for (int t = 0; t < CH; ++t) {
            float b = 0.0f;
            if (act && t < tc) {
                b = c < dk ? k_in[((tok0 + t) * hk + kh) * dk + c] * expf(gcs[t])
                           : v_in[((tok0 + t) * hv + h) * dv + (c - dk)];
                b *= bts[t];
            }
            Xs[t * NT + tid] = b;
        }
        for (int t = 0; t < CH; ++t) {
            float b = Xs[t * NT + tid], b2 = 0.0f, b3 = 0.0f, b4 = 0.0f;
            int s = 0;
            for (; s + 4 <= t; s += 4) {
                const float4 a4 = *reinterpret_cast<const float4*>(As + t * AST + s);
                b = fmaf(-a4.x, Xs[s * NT + tid], b);
                b2 = fmaf(-a4.y, Xs[(s + 1) * NT + tid], b2);
                b3 = fmaf(-a4.z, Xs[(s + 2) * NT + tid], b3);
                b4 = fmaf(-a4.w, Xs[(s + 3) * NT + tid], b4);
            }
            for (; s < t; ++s) b = fmaf(-As[t * AST + s], Xs[s * NT + tid], b);
            b = (b + b2) + (b3 + b4);
            Xs[t * NT + tid] = b;
            if (act && t < tc) {
                if (c < dk) w_out[((tok0 + t) * hv + h) * dk + c] = b;
                else u_out[((tok0 + t) * hv + h) * dv + (c - dk)] = b;
            }
        }
    }
}
{% else %}
#define DVT {{ dvt }}
#define TG (NT / DVT)
#define IPT (DKMAX / TG)   // state rows per thread in the update (a multiple of 4)
extern "C" __global__ void __launch_bounds__(NT)
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
    extern __shared__ float smem[];
    float* Ws = smem;                        // [CH][DKMAX]
    float* Qs = Ws + CH * DKMAX;             // [CH][DKMAX]
    float* Ks = Qs + CH * DKMAX;             // [CH][DKMAX]
    float* Ss = Ks + CH * DKMAX;             // [DKMAX][DVT + 1]
    float* Ps = Ss + DKMAX * (DVT + 1);      // [CH][CH]
    float* Vp = Ps + CH * CH;          // [CH][DVT + 1]
    float* gs = Vp + CH * (DVT + 1);         // [CH]
    float* dec = gs + CH;                    // [CH]: e^(G_last - G_s)
    const int seq = blockIdx.z, h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int j0 = blockIdx.x * DVT;
    const int nj = min(DVT, dv - j0);
    const int tid = threadIdx.x;
    const int jj = tid % DVT, tg = tid / DVT;
    const long long sbase = ((long long)seq * hv + h) * dv;

    for (int e = tid; e < DKMAX * DVT; e += NT) {
        const int j = e / DKMAX, i = e % DKMAX;
        Ss[i * (DVT + 1) + j] = (j < nj && i < dk) ? state[(sbase + j0 + j) * dk + i] : 0.0f;
    }
    for (int t0 = 0; t0 < T; t0 += CH) {
        const int tc = min(CH, T - t0);
        const long long tok0 = (long long)seq * T + t0;
        __syncthreads();
        if ((dk & 3) == 0 && (dv & 3) == 0) {
            // All of the chunk's loads are issued before any is stored (16-byte loads),
            // so one memory latency per chunk instead of one per loop trip.
            constexpr int PER = (CH * DKMAX / 4) / NT;
            constexpr int PERP = (CH * CH / 4) / NT;
            constexpr int PERU = (CH * DVT / 4 + NT - 1) / NT;
            float4 rw[PER], rq[PER], rk[PER], rp[PERP], ru[PERU];
            float4 z4;
            z4.x = z4.y = z4.z = z4.w = 0.0f;
#pragma unroll
            for (int it = 0; it < PER; ++it) {
                const int e = tid + it * NT;
                const int t = e / (DKMAX / 4), i = (e % (DKMAX / 4)) * 4;
                const bool in = t < tc && i < dk;
                rw[it] = in ? *reinterpret_cast<const float4*>(w_in + ((tok0 + t) * hv + h) * dk + i) : z4;
                rq[it] = in ? *reinterpret_cast<const float4*>(q_in + ((tok0 + t) * hk + kh) * dk + i) : z4;
                rk[it] = in ? *reinterpret_cast<const float4*>(k_in + ((tok0 + t) * hk + kh) * dk + i) : z4;
            }
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
#pragma unroll
            for (int it = 0; it < PER; ++it) {
                const int e = tid + it * NT;
                *reinterpret_cast<float4*>(Ws + e * 4) = rw[it];
                *reinterpret_cast<float4*>(Qs + e * 4) = rq[it];
                *reinterpret_cast<float4*>(Ks + e * 4) = rk[it];
            }
#pragma unroll
            for (int it = 0; it < PERP; ++it)
                *reinterpret_cast<float4*>(Ps + (tid + it * NT) * 4) = rp[it];
#pragma unroll
            for (int it = 0; it < PERU; ++it) {
                const int e = tid + it * NT;
                if (e < CH * DVT / 4) {
                    const int t = e / (DVT / 4), j = (e % (DVT / 4)) * 4;
                    float* d = Vp + t * (DVT + 1) + j;
                    d[0] = ru[it].x; d[1] = ru[it].y; d[2] = ru[it].z; d[3] = ru[it].w;
                }
            }
        } else {
            for (int e = tid; e < CH * DKMAX; e += NT) {
                const int t = e / DKMAX, i = e % DKMAX;
                const bool in = t < tc && i < dk;
                Ws[e] = in ? w_in[((tok0 + t) * hv + h) * dk + i] : 0.0f;
                Qs[e] = in ? q_in[((tok0 + t) * hk + kh) * dk + i] : 0.0f;
                Ks[e] = in ? k_in[((tok0 + t) * hk + kh) * dk + i] : 0.0f;
            }
            for (int e = tid; e < CH * CH; e += NT) {
                const int t = e / CH, s = e % CH;
                Ps[t * CH + s] = t < tc ? p_in[((tok0 + t) * hv + h) * CH + s] : 0.0f;
            }
            for (int e = tid; e < CH * DVT; e += NT) {
                const int t = e / DVT, j = e % DVT;
                Vp[t * (DVT + 1) + j] = (t < tc && j < nj) ? u_in[((tok0 + t) * hv + h) * dv + j0 + j] : 0.0f;
            }
        }
        if (tid < CH) {
            const float gl = gc_in[(tok0 + tc - 1) * hv + h];
            const float g = tid < tc ? gc_in[(tok0 + tid) * hv + h] : 0.0f;
            gs[tid] = g;
            dec[tid] = tid < tc ? expf(gl - g) : 0.0f;
        }
        __syncthreads();
        // V' = U - W S and the inter-chunk part of o: thread (jj, tg) takes rows
        // t = tg + TG*m; W and Q rows are read as float4 (broadcast in the warp).
        float aw[CH / TG], aq[CH / TG];
#pragma unroll
        for (int m = 0; m < CH / TG; ++m) { aw[m] = 0.0f; aq[m] = 0.0f; }
        const int dk4 = (dk + 3) & ~3;   // rows are zero past dk
        for (int i = 0; i < dk4; i += 4) {
            float sv[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) sv[k] = Ss[(i + k) * (DVT + 1) + jj];
#pragma unroll
            for (int m = 0; m < CH / TG; ++m) {
                const int t = tg + TG * m;
                const float4 w4 = *reinterpret_cast<const float4*>(Ws + t * DKMAX + i);
                const float4 q4 = *reinterpret_cast<const float4*>(Qs + t * DKMAX + i);
                aw[m] = fmaf(w4.x, sv[0], aw[m]); aw[m] = fmaf(w4.y, sv[1], aw[m]);
                aw[m] = fmaf(w4.z, sv[2], aw[m]); aw[m] = fmaf(w4.w, sv[3], aw[m]);
                aq[m] = fmaf(q4.x, sv[0], aq[m]); aq[m] = fmaf(q4.y, sv[1], aq[m]);
                aq[m] = fmaf(q4.z, sv[2], aq[m]); aq[m] = fmaf(q4.w, sv[3], aq[m]);
            }
        }
#pragma unroll
        for (int m = 0; m < CH / TG; ++m) {
            const int t = tg + TG * m;
            Vp[t * (DVT + 1) + jj] -= aw[m];
            aq[m] *= expf(gs[t]);
        }
        __syncthreads();
        // The intra-chunk part of o (P is zero above the diagonal and past tc).
        for (int s0 = 0; s0 < CH; s0 += 4) {
            float vv[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) vv[k] = Vp[(s0 + k) * (DVT + 1) + jj];
#pragma unroll
            for (int m = 0; m < CH / TG; ++m) {
                const int t = tg + TG * m;
                const float4 p4 = *reinterpret_cast<const float4*>(Ps + t * CH + s0);
                aq[m] = fmaf(p4.x, vv[0], aq[m]); aq[m] = fmaf(p4.y, vv[1], aq[m]);
                aq[m] = fmaf(p4.z, vv[2], aq[m]); aq[m] = fmaf(p4.w, vv[3], aq[m]);
            }
        }
#pragma unroll
        for (int m = 0; m < CH / TG; ++m) {
            const int t = tg + TG * m;
            if (t < tc && jj < nj) out[((tok0 + t) * hv + h) * dv + j0 + jj] = aq[m];
        }
        // S <- e^(G_last) S + sum_s e^(G_last - G_s) k_s v'_s^T; thread (jj, tg) takes
        // rows i = tg*IPT .. +IPT (K rows read as float4).
        {
            const float el = expf(gs[tc - 1]);
            float acc[IPT];
#pragma unroll
            for (int m = 0; m < IPT; ++m) acc[m] = el * Ss[(tg * IPT + m) * (DVT + 1) + jj];
            for (int s = 0; s < tc; ++s) {
                const float v = dec[s] * Vp[s * (DVT + 1) + jj];
#pragma unroll
                for (int m = 0; m < IPT; m += 4) {
                    const float4 k4 = *reinterpret_cast<const float4*>(Ks + s * DKMAX + tg * IPT + m);
                    acc[m] = fmaf(k4.x, v, acc[m]); acc[m + 1] = fmaf(k4.y, v, acc[m + 1]);
                    acc[m + 2] = fmaf(k4.z, v, acc[m + 2]); acc[m + 3] = fmaf(k4.w, v, acc[m + 3]);
                }
            }
#pragma unroll
            for (int m = 0; m < IPT; ++m) Ss[(tg * IPT + m) * (DVT + 1) + jj] = acc[m];
        }
    }
    __syncthreads();
    for (int e = tid; e < DKMAX * DVT; e += NT) {
        const int j = e / DKMAX, i = e % DKMAX;
        if (j < nj && i < dk) state[(sbase + j0 + j) * dk + i] = Ss[i * (DVT + 1) + j];
    }
}
{% endif %}
