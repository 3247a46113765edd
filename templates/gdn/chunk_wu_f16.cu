{#
  GDN chunked prefill's `wu` stage with f16 tensor-core operands (mma.sync m16n8k16 fed by
  ldmatrix, f32 accumulation). Same inputs and layouts as the `wu` stage of gdn/chunk_tc.cu
  (gdn/chunk.cu documents the algebra), but q, k and v arrive as f16, as the prologue
  (gdn/prep_warp.cu with f16_out) writes them for the f16 stages; f16 keeps 10 mantissa
  bits, as TF32 does, so the error is of the plain TF32 route's order. No params.
  Outputs for the f16 scan (gdn/chunk_f16.cu), which takes its mma operands as f16: W and
  P as f16; U and G as f32 (U seeds f32 accumulators). Each value is rounded once, where it
  is made.

  Per block (chunk of 64 tokens, head h), 8 warps:
  1. K and Q rows by cp.async straight into their padded f16 rows.
  2. K K^T (warps 0-3) and Q K^T (warps 4-7), causal n-tiles only; then V's rows by
     cp.async over Q's (waited for before step 4); A (f32, shared) and P (straight to
     global) scaled as in chunk.cu.
  3. T = (I + A)^-1 in f32 by right-looking substitution (as chunk_wu_tc.cuh). The right-hand
     sides' row scalings move onto T's columns: T1 = T diag(beta e^G), T2 = T diag(beta),
     both stored as f16. So W = T1 K reads K's f16 copy from step 1, and V needs no scaling.
  4. W = T1 K (warps 0-3) and U = T2 V (warps 4-7): rows r0..r0+15, 128 columns in two
     passes of 64, causal k-steps (T is lower triangular).
  What differs from chunk_wu_tc.cuh, and why: every product's fragment is one ldmatrix
  (the TF32 stage issues a scalar shared load and a conversion per element), K is read
  from global memory once (the TF32 stage reloads it as a right-hand side), and the
  exponentials are ex2.approx (exp_ftz) rather than the accurate expf.
  grid (ceil(T/64), HV, seqs), 256 threads, three blocks per SM (<= 80 registers; dynamic
  shared memory 71 KB: chunk_wu_f16_smem in src/ops/gdn/mod.rs). Needs dk, dv <= 128.

  Param u_half: U is stored as f16 too ([tokens][HV][dv] halves at the start of u_out's
  buffer; for gdn/chunk_wgs.cu's u_half form), one more rounding; and a whole chunk's W and
  U leave in whole 32-byte sectors: the four lanes of a row trade pairs by shuffles so that
  each writes 8 bytes of 16 consecutive columns (two n-tiles), where the fragments' own
  layout writes 4 bytes of 8 (half a sector an instruction; bench/gdn run 24).
#}
{% include "gdn/f16_mma.cuh" %}
#define CH 64
#define NT 256
#define DMAX 128
#define LDH (DMAX + 8)   // K, Q, V f16 rows: 272 bytes (17 16-byte units: ldmatrix conflict free)
#define LDT (CH + 4)     // A f32 rows
{% include "gdn/chunk_wu.cuh" %}
#define LDTH (CH + 8)    // T1, T2 f16 rows: 144 bytes (9 units)
#define U_HALF {{ u_half }}

// Rows g and g + 8 (hf) of two n-tiles' f16 pairs a (tile x) and b (tile x + 1), as the
// four lanes t4 of a row hold them (columns 2 t4, 2 t4 + 1 of each tile), stored as 16
// consecutive halves from `row` (8-byte aligned): lane t4 takes columns 4 t4 .. 4 t4 + 3,
// from lanes 2 (t4 % 2) and 2 (t4 % 2) + 1 of its quad, of tile x (t4 < 2) or x + 1.
__device__ __forceinline__ void store_pairs16(f16_t* row, u32 a, u32 b, int lane) {
    const int t4 = lane & 3, src = (lane & ~3) | ((t4 & 1) << 1);
    const u32 a0 = __shfl_sync(0xffffffffu, a, src), a1 = __shfl_sync(0xffffffffu, a, src + 1);
    const u32 b0 = __shfl_sync(0xffffffffu, b, src), b1 = __shfl_sync(0xffffffffu, b, src + 1);
    uint2 v;
    v.x = t4 < 2 ? a0 : b0;
    v.y = t4 < 2 ? a1 : b1;
    *reinterpret_cast<uint2*>(row + 4 * t4) = v;
}

extern "C" __global__ void __launch_bounds__(NT, 3)
{{ kernel_name }}(const f16_t* __restrict__ q_in,
                  const f16_t* __restrict__ k_in,
                  const f16_t* __restrict__ v_in,
                  const float* __restrict__ g_in,
                  const float* __restrict__ beta_in,
                  f16_t* __restrict__ w_out,
                  float* __restrict__ u_out,
                  f16_t* __restrict__ p_out,
                  float* __restrict__ gc_out,
                  int T, int hk, int hv, int dk, int dv)
{
    extern __shared__ float4 smem4[];
    float* As = reinterpret_cast<float*>(smem4);            // [CH][LDT]
    f16_t* T1h = reinterpret_cast<f16_t*>(As + CH * LDT);   // [CH][LDTH]
    f16_t* T2h = T1h + CH * LDTH;                           // [CH][LDTH]
    float* gcs = reinterpret_cast<float*>(T2h + CH * LDTH); // [CH]: G
    float* bts = gcs + CH;                                  // [CH]: beta
    f16_t* Kh = reinterpret_cast<f16_t*>(bts + CH);         // [CH][LDH]
    f16_t* Qh = Kh + CH * LDH;                              // [CH][LDH]
    f16_t* Vh = Qh;                                         // [CH][LDH], over Q after step 2
    const int seq = blockIdx.z, h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int t0 = blockIdx.x * CH;
    const int tc = min(CH, T - t0);
    const int tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const long long tok0 = (long long)seq * T + t0;
    // ldmatrix row addresses (lane l names one row of one of the four 8x8 matrices).
    // A stored [m][k]: row l % 16, column 8 (l / 16).
    const int am = lane & 15, ak = (lane >> 4) * 8;
    // B stored [n][k] (two n-tiles): n row (l % 8) + 8 (l / 16), k column 8 ((l / 8) % 2).
    const int nn = (lane & 7) + (lane >> 4) * 8, nk = ((lane >> 3) & 1) * 8;
    // B stored [k][n] (.trans, two n-tiles): k row (l % 8) + 8 ((l / 8) % 2), column 8 (l / 16).
    const int bk = (lane & 7) + ((lane >> 3) & 1) * 8, bn = (lane >> 4) * 8;

    // 1. K and Q by cp.async into their f16 rows (16 bytes each, zero-filled past tc and
    // past dk), waited for before the Gram products.
    const bool vec_k = (dk & 7) == 0, vec_v = (dv & 7) == 0;
    constexpr int PERK = (CH * DMAX / 8) / NT;
    // Thread tid copies 16 bytes at row tid / (DMAX / 8) + (NT / (DMAX / 8)) it, column
    // 8 (tid % (DMAX / 8)) of K, Q and V. Each copy's source is a chunk base (the block's)
    // plus the thread's offset in 32 bits (at most CH rows of one head's inputs), and a whole
    // chunk of full rows takes a path with no bounds tests (the f16 scan's prefetch does the
    // same, bench/gdn run 25; here run 27).
    const int tw = tid / (DMAX / 8), iw = (tid % (DMAX / 8)) * 8;
    const f16_t* kc = k_in + (tok0 * hk + kh) * dk;   // row 0 of the chunk, this key head
    const f16_t* qc = q_in + (tok0 * hk + kh) * dk;
    const int krow = hk * dk;
    auto copy_kq = [&](bool full) {
#pragma unroll
        for (int it = 0; it < PERK; ++it) {
            const int t = tw + it * (NT / (DMAX / 8));
            const bool in = full || (t < tc && iw < dk);
            cp16(Kh + t * LDH + iw, in ? kc + (t * krow + iw) : k_in, in);
            cp16(Qh + t * LDH + iw, in ? qc + (t * krow + iw) : q_in, in);
        }
    };
    if (vec_k) {
        if (tc == CH && dk == DMAX) copy_kq(true);
        else copy_kq(false);
    } else {
        for (int e = tid; e < CH * DMAX; e += NT) {
            const int t = e / DMAX, i = e % DMAX;
            const bool in = t < tc && i < dk;
            const long long o = ((tok0 + t) * hk + kh) * dk + i;
            Kh[t * LDH + i] = in ? k_in[o] : (f16_t)0;
            Qh[t * LDH + i] = in ? q_in[o] : (f16_t)0;
        }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    if (tid < CH) {
        gcs[tid] = tid < tc ? g_in[(tok0 + tid) * hv + h] : 0.0f;
        bts[tid] = tid < tc ? beta_in[(tok0 + tid) * hv + h] : 0.0f;
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");   // this thread's K and Q
    __syncthreads();
    // G by warp 0; the other warps start the Gram products.
    if (warp == 0) chunk_gate_prefix(gcs, lane);

    // 2. K K^T (warps 0-3) and Q K^T (warps 4-7): warp -> token rows r0..r0+15, key
    // columns up to the diagonal block (columns past dk are zero in K and Q).
    const int r0 = (warp & 3) * 16;
    const int ntc = 2 * ((warp & 3) + 1);   // n-tiles of 8 that reach the diagonal
    {
        const f16_t* Xh = warp < 4 ? Kh : Qh;
        float acc[8][4];
#pragma unroll
        for (int x = 0; x < 8; ++x)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[x][e] = 0.0f;
#pragma unroll
        for (int k0 = 0; k0 < DMAX; k0 += 16) {
            u32 a[4];
            ldsm_x4(a, Xh + (r0 + am) * LDH + k0 + ak);
#pragma unroll
            for (int x = 0; x < 8; x += 2) {
                if (x < ntc) {
                    u32 b[4];
                    ldsm_x4(b, Kh + (8 * x + nn) * LDH + k0 + nk);
                    mma_f16(acc[x], a, b);
                    mma_f16(acc[x + 1], a, b + 2);
                }
            }
        }
        __syncthreads();   // G is ready; Q is no longer read
        // V's rows over Q's (zero-filled past tc and past dv), read in step 4: its copies
        // fly through the A and P scaling and the inverse.
        if (vec_v) {
            const f16_t* vc = v_in + (tok0 * hv + h) * dv;   // row 0 of the chunk, this head
            const int vrow = hv * dv;
            auto copy_v = [&](bool full) {
#pragma unroll
                for (int it = 0; it < PERK; ++it) {
                    const int t = tw + it * (NT / (DMAX / 8));
                    const bool in = full || (t < tc && iw < dv);
                    cp16(Vh + t * LDH + iw, in ? vc + (t * vrow + iw) : v_in, in);
                }
            };
            if (tc == CH && dv == DMAX) copy_v(true);
            else copy_v(false);
            asm volatile("cp.async.commit_group;\n" ::: "memory");
        } else {
            for (int e = tid; e < CH * DMAX; e += NT) {
                const int t = e / DMAX, c = e % DMAX;
                const bool in = t < tc && c < dv;
                Vh[t * LDH + c] = in ? v_in[((tok0 + t) * hv + h) * dv + c] : (f16_t)0;
            }
        }
        if (tid < tc) gc_out[(tok0 + tid) * hv + h] = gcs[tid];
        // A into As, P as f16 (whole rows: the scan reads them all).
        f16_t* p_row = p_out + ((tok0 + r0 + g) * hv + h) * CH;   // row r0 + g of P
        chunk_scale_gram<true>(acc, warp, r0, ntc, tc, gcs, bts, As,
                               [&](int hh, int s, float p0, float p1) {
            *reinterpret_cast<u32*>(p_row + 8 * hh * (hv * CH) + s) = f16x2(p0, p1);
        });
    }
    __syncthreads();   // A is whole

    // 3. T = (I + A)^-1, column j by the four threads 4j..4j+3, stored as
    // T1 = T diag(beta e^G) and T2 = T diag(beta) (zero past tc).
    {
        const int j = tid >> 2, p = tid & 3;
        float x[16];
        chunk_inverse_column(As, j, p, lane, x);
        const float f2 = bts[j], f1 = f2 * exp_ftz(gcs[j]);
#pragma unroll
        for (int m = 0; m < 16; ++m) {
            T1h[(p + 4 * m) * LDTH + j] = f32_to_f16(x[m] * f1);
            T2h[(p + 4 * m) * LDTH + j] = f32_to_f16(x[m] * f2);
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");   // this thread's V rows
    __syncthreads();

    // 4. W = T1 K (warps 0-3, stored as f16), U = T2 V (warps 4-7, f32).
    {
        const bool is_w = warp < 4;
        const f16_t* Th = is_w ? T1h : T2h;
        const f16_t* Bh = is_w ? Kh : Vh;
        const int ncol = is_w ? dk : dv;
        const long long base = ((tok0 + r0 + g) * hv + h) * ncol;
        const long long row = (long long)hv * ncol;
        const bool pair = (ncol & 1) == 0;
        // A whole chunk of full rows (the warp's branch below is uniform).
        const bool whole = tc == CH && ncol == DMAX;
        // Two passes of 64 columns (8 n-tiles): half the accumulators live at once.
#pragma unroll 1
        for (int n0 = 0; n0 < DMAX; n0 += 64) {
            if (n0 >= ncol) break;
            float cw[8][4];
#pragma unroll
            for (int x = 0; x < 8; ++x)
#pragma unroll
                for (int e = 0; e < 4; ++e) cw[x][e] = 0.0f;
            for (int k0 = 0; k0 < r0 + 16; k0 += 16) {
                u32 a[4];
                ldsm_x4(a, Th + (r0 + am) * LDTH + k0 + ak);
#pragma unroll
                for (int x = 0; x < 8; x += 2) {
                    if (n0 + 8 * x < ncol) {
                        u32 b[4];
                        ldsm_x4_t(b, Bh + (k0 + bk) * LDH + n0 + 8 * x + bn);
                        mma_f16(cw[x], a, b);
                        mma_f16(cw[x + 1], a, b + 2);
                    }
                }
            }
            if (U_HALF && whole) {
                // f16 rows in whole sectors: two n-tiles a store (store_pairs16).
                f16_t* out16 = is_w ? w_out : reinterpret_cast<f16_t*>(u_out);
#pragma unroll
                for (int x = 0; x < 8; x += 2) {
#pragma unroll
                    for (int hf = 0; hf < 2; ++hf) {
                        const u32 a = f16x2(cw[x][2 * hf], cw[x][2 * hf + 1]);
                        const u32 b = f16x2(cw[x + 1][2 * hf], cw[x + 1][2 * hf + 1]);
                        store_pairs16(out16 + base + 8 * hf * row + n0 + 8 * x, a, b, lane);
                    }
                }
                continue;
            }
            if (whole) {
                // Every row and column in range, column pairs aligned: the stores alone.
#pragma unroll
                for (int x = 0; x < 8; ++x) {
                    const int c = n0 + 8 * x + 2 * t4;
#pragma unroll
                    for (int hf = 0; hf < 2; ++hf) {
                        const long long i = base + 8 * hf * row + c;
                        const float v0 = cw[x][2 * hf], v1 = cw[x][2 * hf + 1];
                        if (is_w) {
                            *reinterpret_cast<u32*>(w_out + i) = f16x2(v0, v1);
                        } else {
                            float2 v;
                            v.x = v0;
                            v.y = v1;
                            *reinterpret_cast<float2*>(u_out + i) = v;
                        }
                    }
                }
                continue;
            }
#pragma unroll
            for (int x = 0; x < 8; ++x) {
                const int c = n0 + 8 * x + 2 * t4;
#pragma unroll
                for (int hf = 0; hf < 2; ++hf) {
                    const int t = r0 + g + 8 * hf;
                    if (t >= tc || c >= ncol) continue;
                    const long long i = base + 8 * hf * row + c;
                    const float v0 = cw[x][2 * hf], v1 = cw[x][2 * hf + 1];
                    const bool two = c + 1 < ncol;
                    f16_t* out16 = is_w ? w_out : reinterpret_cast<f16_t*>(u_out);
                    if ((is_w || U_HALF) && pair) {
                        *reinterpret_cast<u32*>(out16 + i) = f16x2(v0, v1);
                    } else if (is_w || U_HALF) {
                        out16[i] = f32_to_f16(v0);
                        if (two) out16[i + 1] = f32_to_f16(v1);
                    } else if (pair) {
                        float2 v;
                        v.x = v0;
                        v.y = v1;
                        *reinterpret_cast<float2*>(u_out + i) = v;
                    } else {
                        u_out[i] = v0;
                        if (two) u_out[i + 1] = v1;
                    }
                }
            }
        }
    }
}
