{#
  GDN chunked prefill's scan with f16 tensor-core operands (mma.sync m16n8k16, operands
  rounded to f16, f32 accumulation). Same algebra, inputs, outputs and layouts as the scan
  of gdn/chunk_tc.cu (gdn/chunk.cu documents the algebra). f16 keeps 10 mantissa bits, as
  TF32 does, so the error is of the plain TF32 route's order. Params: dvt (64 or 32),
  warps (8 or 16; dvt / (warps / 4) a multiple of 16).

  Per block (head h, columns j0..j0+dvt of S) and chunk of 64 tokens:
    V' = U - W S, QS = Q S          (M = 64 tokens, N = dvt, K = dk)
    o = e^G * QS + P V'             (K = tokens; P is lower triangular: causal k-steps)
    S <- e^(G_last) S + Kd^T V'     (M = dk, N = dvt, K = tokens; Kd_s = e^(G_last - G_s) k_s)
  What differs from chunk_tc.cu, and why:
  - The operands sit in shared memory as f16, rows padded to an odd number of 16-byte
    units so that each ldmatrix's eight rows fall in distinct banks; every fragment is one
    ldmatrix.x4 (.trans where the operand is stored k-major). A k16 step of W S and Q S is
    4 ldmatrix and 2 NTW mma, where the TF32 scan issues 16 scalar loads and 16 conversions
    for 2 NTW mma of half the depth.
  - The f32 state stays in registers for the whole sequence (warp w holds rows
    16w..16w+15, every column, as the update's accumulators); shared memory holds its f16
    copy, the B operand of W S and Q S, rewritten after each update.
  - U never enters shared memory: each thread loads the elements of U that its W S
    accumulators cover, a chunk ahead, and forms V' in registers. V' and diag(dec) V' go
    to shared memory as f16 (the B operands of P V' and Kd^T V'), so K is not rescaled.
  - The next chunk's W, Q, K and P arrive by cp.async in f32 staging buffers while this
    chunk computes (16-byte copies: dk and dv multiples of 4), and become f16 at the top
    of the next chunk; other dims load and convert element by element there instead.
  grid (ceil(dv/dvt), HV, seqs), 32 warps threads, one block per SM (dynamic shared
  memory: chunk_f16_smem in src/ops/gdn/mod.rs). Needs dk <= 128.
#}
{% include "gdn/f16_mma.cuh" %}
#define CH 64
#define WARPS {{ warps }}
#define NT (32 * WARPS)
#define DKMAX 128
#define DVT {{ dvt }}
#define WN (DVT / (WARPS / 4))   // columns a warp takes in the token-row products
#define SN (DVT / (WARPS / 8))   // columns a warp takes in the state update
#define LDH (DKMAX + 8)   // W, Q, K f16 rows: 272 bytes
#define LDPH (CH + 8)     // P f16 rows: 144 bytes
#define LDV (DVT + 8)     // S, V', diag(dec) V' f16 rows: 144 or 80 bytes
#define NTW (WN / 8)      // n-tiles (8 columns) a warp takes in the token-row products
#define NT8 (SN / 8)      // n-tiles a warp takes in the state update
static_assert(WN % 16 == 0 && SN % 16 == 0, "n-tiles go in pairs (one ldmatrix.x4 feeds two)");

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
    float* Wf = reinterpret_cast<float*>(smem4);           // [CH][DKMAX] f32 staging
    float* Qf = Wf + CH * DKMAX;                           // [CH][DKMAX]
    float* Kf = Qf + CH * DKMAX;                           // [CH][DKMAX]
    float* Pf = Kf + CH * DKMAX;                           // [CH][CH]
    f16_t* Wh = reinterpret_cast<f16_t*>(Pf + CH * CH);    // [CH][LDH]
    f16_t* Qh = Wh + CH * LDH;                             // [CH][LDH]
    f16_t* Kh = Qh + CH * LDH;                             // [CH][LDH]
    f16_t* Ph = Kh + CH * LDH;                             // [CH][LDPH]
    f16_t* Sh = Ph + CH * LDPH;                            // [DKMAX][LDV]: f16 copy of S
    f16_t* Vh = Sh + DKMAX * LDV;                          // [CH][LDV]: V'
    f16_t* Vdh = Vh + CH * LDV;                            // [CH][LDV]: diag(dec) V'
    float* gs = reinterpret_cast<float*>(Vdh + CH * LDV);  // [CH]: G
    float* dec = gs + CH;                                  // [CH]: e^(G_last - G_s)
    const int seq = blockIdx.z, h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int j0 = blockIdx.x * DVT;
    const int nj = min(DVT, dv - j0);
    const int tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const long long sbase = ((long long)seq * hv + h) * dv;
    const bool vec = (dk & 3) == 0 && (dv & 3) == 0;
    // Token-row products (W S, Q S, P V'): warp -> rows r0..r0+15, columns n0..n0+WN.
    const int r0 = (warp & 3) * 16, n0 = (warp >> 2) * WN;
    // State update: warp -> state rows i0..i0+15, columns s0..s0+SN.
    const int i0 = (warp & 7) * 16, s0 = (warp >> 3) * SN;
    // ldmatrix row addresses (lane l names one row of one of the four 8x8 matrices).
    // A stored [m][k]: row l % 16, column 8 (l / 16).
    const int am = lane & 15, ak = (lane >> 4) * 8;
    // B stored [k][n] (.trans), two n-tiles: k row (l % 8) + 8 ((l / 8) % 2), column 8 (l / 16).
    const int bk = (lane & 7) + ((lane >> 3) & 1) * 8, bn = (lane >> 4) * 8;
    // A stored [k][m] (.trans; Kd^T from K [token][i]): k row (l % 8) + 8 (l / 16),
    // m column 8 ((l / 8) % 2).
    const int tk = (lane & 7) + (lane >> 4) * 8, tm = ((lane >> 3) & 1) * 8;

    // The state tile in registers: cs[x] is the accumulator of rows i0 + g (+ 8), columns
    // s0 + 8x + 2 t4 (+ 1). Rows past dk and columns past nj are zero and stay zero.
    float cs[NT8][4];
#pragma unroll
    for (int x = 0; x < NT8; ++x) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int i = i0 + g + (e >> 1) * 8, j = s0 + 8 * x + 2 * t4 + (e & 1);
            cs[x][e] = (i < dk && j < nj) ? state[(sbase + j0 + j) * dk + i] : 0.0f;
        }
    }
    auto store_sh = [&]() {
#pragma unroll
        for (int x = 0; x < NT8; ++x) {
            const int c = s0 + 8 * x + 2 * t4;
            *reinterpret_cast<u32*>(Sh + (i0 + g) * LDV + c) = f16x2(cs[x][0], cs[x][1]);
            *reinterpret_cast<u32*>(Sh + (i0 + g + 8) * LDV + c) = f16x2(cs[x][2], cs[x][3]);
        }
    };
    store_sh();

    // U at the elements this thread's W S accumulators cover: rows r0 + g (+ 8),
    // columns n0 + 8x + 2 t4 (+ 1); zero past the chunk and past nj.
    // Row strides (elements) of the token-major inputs.
    const long long wrow = (long long)hv * dk, qrow = (long long)hk * dk;
    const long long urow = (long long)hv * dv, prow = (long long)hv * CH;
    auto load_u = [&](float2 (*u)[2], long long tok0, int tc) {
        const float* ub = u_in + (tok0 + r0 + g) * urow + (long long)h * dv + j0 + n0 + 2 * t4;
#pragma unroll
        for (int x = 0; x < NTW; ++x) {
            const int c = n0 + 8 * x + 2 * t4;
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                const int t = r0 + g + 8 * hf;
                const float* src = ub + 8 * hf * urow + 8 * x;
                float2 v;
                v.x = v.y = 0.0f;
                if (t < tc && vec && c < nj) {
                    v = *reinterpret_cast<const float2*>(src);
                } else if (t < tc) {
                    if (c < nj) v.x = src[0];
                    if (c + 1 < nj) v.y = src[1];
                }
                u[x][hf] = v;
            }
        }
    };

    // The next chunk (vector path): W, Q, K and P by cp.async into the f32 staging
    // buffers, U and G into registers.
    constexpr int PER = (CH * DKMAX / 4) / NT;
    constexpr int PERP = (CH * CH / 4) / NT;
    float2 un[NTW][2];
    float rg = 0.0f, rgl = 0.0f;
    auto fetch = [&](int t0) {
        const int tc = min(CH, T - t0);
        const long long tok0 = (long long)seq * T + t0;
        // Thread tid copies 16 bytes at row tid / 32 + 8 it, column 4 (tid % 32) of W, Q, K
        // (rows of 128 floats) and at row tid / 16 + 16 it, column 4 (tid % 16) of P.
        const int tw = tid >> 5, iw = (tid & 31) * 4, tp = tid >> 4, sp = (tid & 15) * 4;
        const float* wb = w_in + (tok0 + tw) * wrow + (long long)h * dk + iw;
        const float* qb = q_in + (tok0 + tw) * qrow + (long long)kh * dk + iw;
        const float* kb = k_in + (tok0 + tw) * qrow + (long long)kh * dk + iw;
        const float* pb = p_in + (tok0 + tp) * prow + (long long)h * CH + sp;
#pragma unroll
        for (int it = 0; it < PER; ++it) {
            const int t = tw + it * (NT / (DKMAX / 4));
            const bool in = t < tc && iw < dk;
            const long long o = (long long)it * (NT / (DKMAX / 4));
            cp16(Wf + t * DKMAX + iw, in ? wb + o * wrow : w_in, in);
            cp16(Qf + t * DKMAX + iw, in ? qb + o * qrow : q_in, in);
            cp16(Kf + t * DKMAX + iw, in ? kb + o * qrow : k_in, in);
        }
#pragma unroll
        for (int it = 0; it < PERP; ++it) {
            const int t = tp + it * (NT / (CH / 4));
            const bool in = t < tc;
            const long long o = (long long)it * (NT / (CH / 4));
            cp16(Pf + t * CH + sp, in ? pb + o * prow : p_in, in);
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        load_u(un, tok0, tc);
        if (tid < CH) {
            rgl = gc_in[(tok0 + tc - 1) * hv + h];
            rg = tid < tc ? gc_in[(tok0 + tid) * hv + h] : 0.0f;
        }
    };
    if (vec) fetch(0);

    for (int t0 = 0; t0 < T; t0 += CH) {
        const int tc = min(CH, T - t0);
        const long long tok0 = (long long)seq * T + t0;
        float2 uc[NTW][2];
        float gv = 0.0f, gl = 0.0f;
        if (vec) {
#pragma unroll
            for (int x = 0; x < NTW; ++x) {
                uc[x][0] = un[x][0];
                uc[x][1] = un[x][1];
            }
            gv = rg;
            gl = rgl;
            asm volatile("cp.async.wait_all;\n" ::: "memory");   // this thread's copies
        } else {
            load_u(uc, tok0, tc);
            if (tid < CH) {
                gl = gc_in[(tok0 + tc - 1) * hv + h];
                gv = tid < tc ? gc_in[(tok0 + tid) * hv + h] : 0.0f;
            }
        }
        __syncthreads();   // every copy landed; the last chunk's products are done
        if (vec) {
#pragma unroll
            for (int it = 0; it < PER; ++it) {
                const int e = tid + it * NT;
                const int t = e / (DKMAX / 4), i = (e % (DKMAX / 4)) * 4;
                f32x4_to_f16(Wh + t * LDH + i, Wf + t * DKMAX + i);
                f32x4_to_f16(Qh + t * LDH + i, Qf + t * DKMAX + i);
                f32x4_to_f16(Kh + t * LDH + i, Kf + t * DKMAX + i);
            }
#pragma unroll
            for (int it = 0; it < PERP; ++it) {
                const int e = tid + it * NT;
                const int t = e / (CH / 4), s = (e % (CH / 4)) * 4;
                f32x4_to_f16(Ph + t * LDPH + s, Pf + t * CH + s);
            }
        } else {
            for (int e = tid; e < CH * DKMAX; e += NT) {
                const int t = e / DKMAX, i = e % DKMAX;
                const bool in = t < tc && i < dk;
                Wh[t * LDH + i] = f32_to_f16(in ? w_in[((tok0 + t) * hv + h) * dk + i] : 0.0f);
                Qh[t * LDH + i] = f32_to_f16(in ? q_in[((tok0 + t) * hk + kh) * dk + i] : 0.0f);
                Kh[t * LDH + i] = f32_to_f16(in ? k_in[((tok0 + t) * hk + kh) * dk + i] : 0.0f);
            }
            for (int e = tid; e < CH * CH; e += NT) {
                const int t = e / CH, s = e % CH;
                Ph[t * LDPH + s] = f32_to_f16(t < tc ? p_in[((tok0 + t) * hv + h) * CH + s] : 0.0f);
            }
        }
        if (tid < CH) {
            gs[tid] = gv;
            dec[tid] = tid < tc ? expf(gl - gv) : 0.0f;
        }
        __syncthreads();   // the f16 operands are in place; the staging buffers are free
        if (vec && t0 + CH < T) fetch(t0 + CH);

        // W S and Q S (columns past dk are zero in W and Q).
        float cw[NTW][4], cq[NTW][4];
#pragma unroll
        for (int x = 0; x < NTW; ++x)
#pragma unroll
            for (int e = 0; e < 4; ++e) { cw[x][e] = 0.0f; cq[x][e] = 0.0f; }
#pragma unroll
        for (int k0 = 0; k0 < DKMAX; k0 += 16) {
            u32 aw[4], aq[4];
            ldsm_x4(aw, Wh + (r0 + am) * LDH + k0 + ak);
            ldsm_x4(aq, Qh + (r0 + am) * LDH + k0 + ak);
#pragma unroll
            for (int x = 0; x < NTW; x += 2) {
                u32 b[4];
                ldsm_x4_t(b, Sh + (k0 + bk) * LDV + n0 + 8 * x + bn);
                mma_f16(cw[x], aw, b);
                mma_f16(cw[x + 1], aw, b + 2);
                mma_f16(cq[x], aq, b);
                mma_f16(cq[x + 1], aq, b + 2);
            }
        }
        // V' = U - W S in registers; V' and diag(dec) V' to shared memory as f16; QS
        // scaled by e^(G_t).
        {
            const float eg0 = expf(gs[r0 + g]), eg1 = expf(gs[r0 + g + 8]);
            const float d0 = dec[r0 + g], d1 = dec[r0 + g + 8];
#pragma unroll
            for (int x = 0; x < NTW; ++x) {
                const int c = n0 + 8 * x + 2 * t4;
                const float v0 = uc[x][0].x - cw[x][0], v1 = uc[x][0].y - cw[x][1];
                const float v2 = uc[x][1].x - cw[x][2], v3 = uc[x][1].y - cw[x][3];
                *reinterpret_cast<u32*>(Vh + (r0 + g) * LDV + c) = f16x2(v0, v1);
                *reinterpret_cast<u32*>(Vh + (r0 + g + 8) * LDV + c) = f16x2(v2, v3);
                *reinterpret_cast<u32*>(Vdh + (r0 + g) * LDV + c) = f16x2(d0 * v0, d0 * v1);
                *reinterpret_cast<u32*>(Vdh + (r0 + g + 8) * LDV + c) = f16x2(d1 * v2, d1 * v3);
                cq[x][0] *= eg0;
                cq[x][1] *= eg0;
                cq[x][2] *= eg1;
                cq[x][3] *= eg1;
            }
        }
        __syncthreads();   // V' is whole; every warp is done reading S's copy

        // o = e^G QS + P V' (P is zero above the diagonal: k-steps up to the tile's end).
#pragma unroll
        for (int k0 = 0; k0 < CH; k0 += 16) {
            if (k0 < r0 + 16) {
                u32 a[4];
                ldsm_x4(a, Ph + (r0 + am) * LDPH + k0 + ak);
#pragma unroll
                for (int x = 0; x < NTW; x += 2) {
                    u32 b[4];
                    ldsm_x4_t(b, Vh + (k0 + bk) * LDV + n0 + 8 * x + bn);
                    mma_f16(cq[x], a, b);
                    mma_f16(cq[x + 1], a, b + 2);
                }
            }
        }
#pragma unroll
        for (int x = 0; x < NTW; ++x) {
            const int c = n0 + 8 * x + 2 * t4;
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                const int t = r0 + g + 8 * hf;
                float* dst = out + ((tok0 + t) * hv + h) * dv + j0 + c;
                if (t < tc && vec && c < nj) {
                    float2 v;
                    v.x = cq[x][2 * hf];
                    v.y = cq[x][2 * hf + 1];
                    *reinterpret_cast<float2*>(dst) = v;
                } else if (t < tc) {
                    if (c < nj) dst[0] = cq[x][2 * hf];
                    if (c + 1 < nj) dst[1] = cq[x][2 * hf + 1];
                }
            }
        }

        // S <- e^(G_last) S + Kd^T V' = e^(G_last) S + K^T diag(dec) V' (rows of V' past
        // tc are zero), then S's f16 copy for the next chunk.
        {
            const float el = expf(gs[tc - 1]);
#pragma unroll
            for (int x = 0; x < NT8; ++x)
#pragma unroll
                for (int e = 0; e < 4; ++e) cs[x][e] *= el;
#pragma unroll
            for (int k0 = 0; k0 < CH; k0 += 16) {
                u32 a[4];
                ldsm_x4_t(a, Kh + (k0 + tk) * LDH + i0 + tm);
#pragma unroll
                for (int x = 0; x < NT8; x += 2) {
                    u32 b[4];
                    ldsm_x4_t(b, Vdh + (k0 + bk) * LDV + s0 + 8 * x + bn);
                    mma_f16(cs[x], a, b);
                    mma_f16(cs[x + 1], a, b + 2);
                }
            }
            store_sh();
        }
    }
#pragma unroll
    for (int x = 0; x < NT8; ++x) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int i = i0 + g + (e >> 1) * 8, j = s0 + 8 * x + 2 * t4 + (e & 1);
            if (i < dk && j < nj) state[(sbase + j0 + j) * dk + i] = cs[x][e];
        }
    }
}
