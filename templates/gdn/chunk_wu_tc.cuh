// The "wu" stage of gdn/chunk_tc.cu (included there; tc_split / tc_mma come from it).
#define LDQ (DKMAX + 4)   // K, Q rows: A operand row-major, and B operand (n = token)
#define LDT (CH + 4)      // A and T = (I + A)^-1 rows: A operand, row-major
#define NB 256            // columns of [W | U] per pass
#define LDB (NB + 8)      // the right-hand sides diag(beta) [K e^G | V]: B operand
#define KQ_FLOATS (2 * CH * LDQ > CH * LDB ? 2 * CH * LDQ : CH * LDB)
{% include "gdn/chunk_wu.cuh" %}
// Dynamic shared memory: 4 * (KQ_FLOATS + 2 * CH * LDT + 2 * CH) bytes.
extern "C" __global__ void __launch_bounds__(NT, 2)
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
    extern __shared__ float4 smem4[];
    float* Ks = reinterpret_cast<float*>(smem4);   // [CH][LDQ]
    float* Qs = Ks + CH * LDQ;                     // [CH][LDQ]
    float* Bs = Ks;                                // [CH][LDB], over K and Q once they are used
    float* As = Ks + KQ_FLOATS;                    // [CH][LDT]
    float* Ts = As + CH * LDT;                     // [CH][LDT]
    float* gcs = Ts + CH * LDT;                    // [CH]
    float* bts = gcs + CH;                         // [CH]
    const int seq = blockIdx.z, h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int t0 = blockIdx.x * CH;
    const int tc = min(CH, T - t0);
    const int tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const long long tok0 = (long long)seq * T + t0;

    if (tid < CH) {
        gcs[tid] = tid < tc ? g_in[(tok0 + tid) * hv + h] : 0.0f;
        bts[tid] = tid < tc ? beta_in[(tok0 + tid) * hv + h] : 0.0f;
    }
    if ((dk & 3) == 0) {
        constexpr int PER = (CH * DKMAX / 4) / NT;
        float4 rk[PER], rq[PER];
        float4 z4;
        z4.x = z4.y = z4.z = z4.w = 0.0f;
#pragma unroll
        for (int it = 0; it < PER; ++it) {
            const int e = tid + it * NT;
            const int t = e / (DKMAX / 4), i = (e % (DKMAX / 4)) * 4;
            const bool in = t < tc && i < dk;
            rk[it] = in ? *reinterpret_cast<const float4*>(k_in + ((tok0 + t) * hk + kh) * dk + i) : z4;
            rq[it] = in ? *reinterpret_cast<const float4*>(q_in + ((tok0 + t) * hk + kh) * dk + i) : z4;
        }
#pragma unroll
        for (int it = 0; it < PER; ++it) {
            const int e = tid + it * NT;
            const int t = e / (DKMAX / 4), i = (e % (DKMAX / 4)) * 4;
            *reinterpret_cast<float4*>(Ks + t * LDQ + i) = rk[it];
            *reinterpret_cast<float4*>(Qs + t * LDQ + i) = rq[it];
        }
    } else {
        for (int e = tid; e < CH * DKMAX; e += NT) {
            const int t = e / DKMAX, i = e % DKMAX;
            const bool in = t < tc && i < dk;
            Ks[t * LDQ + i] = in ? k_in[((tok0 + t) * hk + kh) * dk + i] : 0.0f;
            Qs[t * LDQ + i] = in ? q_in[((tok0 + t) * hk + kh) * dk + i] : 0.0f;
        }
    }
    __syncthreads();
    // G by warp 0; the other warps start the Gram products.
    if (warp == 0) chunk_gate_prefix(gcs, lane);
    // K K^T (warps 0-3) and Q K^T (warps 4-7): warp -> token rows r0..r0+15, key columns
    // s up to the diagonal block (causal n-tiles only).
    const int r0 = (warp & 3) * 16;
    const float* Xs = warp < 4 ? Ks : Qs;
    const int ntc = 2 * ((warp & 3) + 1);   // n-tiles of 8 that reach the diagonal
    float acc[8][4];
#pragma unroll
    for (int x = 0; x < 8; ++x)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[x][e] = 0.0f;
#pragma unroll 2
    for (int k0 = 0; k0 < DKMAX; k0 += 8) {   // columns past dk are zero
        float a[4];
        a[0] = Xs[(r0 + g) * LDQ + k0 + t4];
        a[1] = Xs[(r0 + g + 8) * LDQ + k0 + t4];
        a[2] = Xs[(r0 + g) * LDQ + k0 + t4 + 4];
        a[3] = Xs[(r0 + g + 8) * LDQ + k0 + t4 + 4];
        u32 ah[4], al[4];
        tc_split<4>(a, ah, al);
#pragma unroll
        for (int x = 0; x < 8; ++x) {
            if (x < ntc) {
                float b[2];
                b[0] = Ks[(8 * x + g) * LDQ + k0 + t4];
                b[1] = Ks[(8 * x + g) * LDQ + k0 + t4 + 4];
                u32 bh[2], bl[2];
                tc_split<2>(b, bh, bl);
                tc_mma(acc[x], ah, al, bh, bl);
            }
        }
    }
    __syncthreads();   // G is ready; K and Q are no longer read
    if (tid < tc) gc_out[(tok0 + tid) * hv + h] = gcs[tid];
    // A into As, P as f32 (whole rows: the f32 scan reads them all).
    float* p_row = p_out + ((tok0 + r0 + g) * hv + h) * CH;   // row r0 + g of P
    chunk_scale_gram<false>(acc, warp, r0, ntc, tc, gcs, bts, As,
                            [&](int hh, int s, float p0, float p1) {
        float2 p2;
        p2.x = p0;
        p2.y = p1;
        *reinterpret_cast<float2*>(p_row + 8 * hh * (hv * CH) + s) = p2;
    });
    __syncthreads();
    // The right-hand sides (one pass of NB columns, 16-byte cp.async copies straight into
    // Bs, over the dead K and Q, zero-filled past tc and dk + dv) are issued here, so that
    // their latency hides behind the inverse; scaled in place after it.
    const bool vec_rhs = (dk & 3) == 0 && (dv & 3) == 0 && dk + dv <= NB;
    constexpr int PERB = (CH * NB / 4) / NT;
    if (vec_rhs) {
#pragma unroll
        for (int it = 0; it < PERB; ++it) {
            const int e = tid + it * NT;
            const int t = e / (NB / 4), c = (e % (NB / 4)) * 4;
            const bool in = t < tc && c < dk + dv;
            const float* src = !in ? k_in
                             : c < dk ? k_in + ((tok0 + t) * hk + kh) * dk + c
                                      : v_in + ((tok0 + t) * hv + h) * dv + (c - dk);
            const unsigned to = (unsigned)__cvta_generic_to_shared(Bs + t * LDB + c);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                         :: "r"(to), "l"(src), "r"(in ? 16 : 0) : "memory");
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    // T = (I + A)^-1, column j by the four threads 4j..4j+3.
    {
        const int j = tid >> 2, p = tid & 3;
        float x[16];
        chunk_inverse_column(As, j, p, lane, x);
#pragma unroll
        for (int m = 0; m < 16; ++m) Ts[(p + 4 * m) * LDT + j] = x[m];
    }
    // [W | U] = T diag(beta) [K e^G | V], NB columns per pass: warp -> rows r0..r0+15,
    // columns n0..n0+127 (16 n-tiles); T is zero above the diagonal (causal k-steps).
    const int n0 = (warp >> 2) * (NB / 2);
    for (int c0 = 0; c0 < dk + dv; c0 += NB) {
        __syncthreads();   // T is written; the last pass is done with Bs
        if (vec_rhs) {
            // Each thread scales the copies it issued (its own, so no barrier before).
            asm volatile("cp.async.wait_all;\n" ::: "memory");
#pragma unroll
            for (int it = 0; it < PERB; ++it) {
                const int e = tid + it * NT;
                const int t = e / (NB / 4), c = (e % (NB / 4)) * 4;
                const float f = c < dk ? bts[t] * expf(gcs[t]) : bts[t];
                float4* d = reinterpret_cast<float4*>(Bs + t * LDB + c);
                float4 b = *d;
                b.x *= f; b.y *= f; b.z *= f; b.w *= f;
                *d = b;
            }
        } else {
#pragma unroll 8
            for (int e = tid; e < CH * NB; e += NT) {
                const int t = e / NB, c = c0 + e % NB;
                float b = 0.0f;
                if (t < tc && c < dk + dv) {
                    b = c < dk ? k_in[((tok0 + t) * hk + kh) * dk + c] * expf(gcs[t])
                               : v_in[((tok0 + t) * hv + h) * dv + (c - dk)];
                    b *= bts[t];
                }
                Bs[t * LDB + e % NB] = b;
            }
        }
        __syncthreads();
        float cw[16][4];
#pragma unroll
        for (int x = 0; x < 16; ++x)
#pragma unroll
            for (int e = 0; e < 4; ++e) cw[x][e] = 0.0f;
        for (int k0 = 0; k0 < r0 + 16; k0 += 8) {
            float a[4];
            a[0] = Ts[(r0 + g) * LDT + k0 + t4];
            a[1] = Ts[(r0 + g + 8) * LDT + k0 + t4];
            a[2] = Ts[(r0 + g) * LDT + k0 + t4 + 4];
            a[3] = Ts[(r0 + g + 8) * LDT + k0 + t4 + 4];
            u32 ah[4], al[4];
            tc_split<4>(a, ah, al);
#pragma unroll
            for (int x = 0; x < 16; ++x) {
                float b[2];
                b[0] = Bs[(k0 + t4) * LDB + n0 + 8 * x + g];
                b[1] = Bs[(k0 + t4 + 4) * LDB + n0 + 8 * x + g];
                u32 bh[2], bl[2];
                tc_split<2>(b, bh, bl);
                tc_mma(cw[x], ah, al, bh, bl);
            }
        }
#pragma unroll
        for (int x = 0; x < 16; ++x) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int t = r0 + g + (e >> 1) * 8;
                const int c = c0 + n0 + 8 * x + 2 * t4 + (e & 1);
                if (t < tc && c < dk + dv) {
                    if (c < dk) w_out[((tok0 + t) * hv + h) * dk + c] = cw[x][e];
                    else u_out[((tok0 + t) * hv + h) * dv + (c - dk)] = cw[x][e];
                }
            }
        }
    }
}
