{#
  GDN chunked prefill's scan with f16 tensor-core operands (mma.sync m16n8k16, f32
  accumulation). Same algebra, outputs and layouts as the scan of gdn/chunk_tc.cu
  (gdn/chunk.cu documents the algebra), but W, Q, K and P arrive as f16, as the f16 `wu`
  stage (gdn/chunk_wu_f16.cu) writes them; U and G as f32. f16 keeps 10 mantissa bits, as
  TF32 does, so the error is of the plain TF32 route's order. Params: dvt (64 or 32),
  warps (8 or 16; dvt / (warps / 4) a multiple of 16), bufs (2: every input of chunk c + 1
  prefetched at the top of chunk c into the other buffer; 1: one buffer, K and P of chunk
  c issued after its first barrier and W, Q, U and G of chunk c + 1 after its second, so
  that two 32-column blocks fit an SM), min_blocks (the launch bound's blocks an SM).

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
  - V' = U - W S is formed in registers; V' and diag(dec) V' go to shared memory as f16
    (the B operands of P V' and Kd^T V'), so K is not rescaled.
  - Everything a chunk reads from global memory (W, Q, K, P, U's tile and G) arrives by
    cp.async into two buffers by the chunk's parity, issued a chunk ahead, straight into
    the ldmatrix layout (16-byte copies: dk a multiple of 8, dv of 4; other dims load
    element by element at the top of each chunk). So a chunk starts with its copies' wait
    and one barrier, with no conversion, and no load into registers is left in flight
    across the products: loads into registers made the compiler wait for them right
    after they were issued, a memory latency a chunk (bench/gdn run 17).
  grid (ceil(dv/dvt), HV, seqs), 32 x warps threads, one block per SM (dynamic shared
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
#define LDU (DVT + 8)     // U f32 rows: a half-warp's float2 reads of 8 rows x 4 pairs hit 32 banks
#define NTW (WN / 8)      // n-tiles (8 columns) a warp takes in the token-row products
#define NT8 (SN / 8)      // n-tiles a warp takes in the state update
#define BUF (3 * CH * LDH + CH * LDPH)   // f16 elements of one chunk's W, Q, K and P
#define NBUF {{ bufs }}
static_assert(WN % 16 == 0 && SN % 16 == 0, "n-tiles go in pairs (one ldmatrix.x4 feeds two)");

extern "C" __global__ void __launch_bounds__(NT, {{ min_blocks }})
{{ kernel_name }}(const f16_t* __restrict__ q_in,
                  const f16_t* __restrict__ k_in,
                  const f16_t* __restrict__ w_in,
                  const float* __restrict__ u_in,
                  const f16_t* __restrict__ p_in,
                  const float* __restrict__ gc_in,
                  float* state,
                  float* __restrict__ out,
                  int T, int hk, int hv, int dk, int dv)
{
    extern __shared__ float4 smem4[];
    // ops + BUF * buffer: W [CH][LDH], Q [CH][LDH], K [CH][LDH], P [CH][LDPH].
    f16_t* ops = reinterpret_cast<f16_t*>(smem4);
    f16_t* Sh = ops + NBUF * BUF;                          // [DKMAX][LDV]: f16 copy of S
    f16_t* Vh = Sh + DKMAX * LDV;                          // [CH][LDV]: V'
    f16_t* Vdh = Vh + CH * LDV;                            // [CH][LDV]: diag(dec) V'
    float* u2 = reinterpret_cast<float*>(Vdh + CH * LDV);  // [NBUF][CH][LDU]: U's tile
    float* gs2 = u2 + NBUF * CH * LDU;                     // [NBUF][CH]: G
    const int seq = blockIdx.z, h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int j0 = blockIdx.x * DVT;
    const int nj = min(DVT, dv - j0);
    const int tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const long long sbase = ((long long)seq * hv + h) * dv;
    const bool vec = (dk & 7) == 0 && (dv & 3) == 0;
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

    // Row strides (elements) of the token-major inputs.
    const long long wrow = (long long)hv * dk, qrow = (long long)hk * dk;
    const long long urow = (long long)hv * dv, prow = (long long)hv * CH;

    // A chunk's W, Q, K, P, U and G (vector path) by cp.async into buffer `buf`.
    constexpr int UR = DKMAX / 8;              // 16-byte units a row of W, Q, K
    constexpr int UP = CH / 8;                 // 16-byte units a row of P
    constexpr int UU = DVT / 4;                // 16-byte units a row of U's tile
    constexpr int PER = (CH * UR) / NT;
    constexpr int PERP = (CH * UP) / NT;
    constexpr int PERU = (CH * UU) / NT;
    static_assert(PER * NT == CH * UR && PERP * NT == CH * UP && PERU * NT == CH * UU,
                  "whole copy rounds");
    // Thread tid copies 16 bytes at row tid / UR + (NT / UR) it, column 8 (tid % UR) of
    // W, Q and K, and at row tid / UP + (NT / UP) it, column 8 (tid % UP) of P.
    // U: row tid / UU + (NT / UU) it, column 4 (tid % UU) of the tile.
    const int tw = tid / UR, iw = (tid % UR) * 8, tp = tid / UP, sp = (tid % UP) * 8;
    const int tu = tid / UU, cu = (tid % UU) * 4;
    // Each copy's source is a chunk base, the same for the whole block, plus the thread's
    // offset within the chunk, made here once in 32 bits (at most CH rows of one head's
    // inputs): with the whole 64-bit address made per copy, the copies' address arithmetic
    // was a third of a chunk's instructions (bench/gdn run 25).
    const int offw = tw * (int)wrow + h * dk + iw, offq = tw * (int)qrow + kh * dk + iw;
    const int offp = tp * (int)prow + h * CH + sp, offu = tu * (int)urow + h * dv + j0 + cu;
    const int offg = tid * hv + h;
    // fetch_wqug: W, Q, U's tile and G, and with two buffers K and P too, in one commit
    // group; fetch_kp: K and P in their own group, for the one-buffer layout. The
    // two-buffer path keeps the order it had before the one-buffer layout (W, Q and K row
    // by row, then P, U, G; the same for the element-by-element path below): reordered, it
    // ran 8% slower (bench/gdn runs 19 and 22).
    // `whole`: a whole chunk of full rows (tc = CH, dk = DKMAX, the tile's dvt columns), so
    // that every copy is in range; the callers branch on it once, and the copies of a whole
    // chunk then carry no bounds test and no fallback address.
    auto fetch_wqug_as = [&](int t0, int buf, bool whole) {
        const int tc = min(CH, T - t0);
        const long long tok0 = (long long)seq * T + t0;
        f16_t* Wb = ops + buf * BUF;
        f16_t* Qb = Wb + CH * LDH;
        f16_t* Kb = Qb + CH * LDH;
        f16_t* Pb = Kb + CH * LDH;
        const f16_t* wc = w_in + tok0 * wrow;
        const f16_t* qc = q_in + tok0 * qrow;
        const f16_t* kc = k_in + tok0 * qrow;
        float* Ub = u2 + buf * CH * LDU;
#pragma unroll
        for (int it = 0; it < PER; ++it) {
            const int t = tw + it * (NT / UR);
            const bool in = whole || (t < tc && iw < dk);
            cp16(Wb + t * LDH + iw, in ? wc + (offw + it * (NT / UR) * (int)wrow) : w_in, in);
            cp16(Qb + t * LDH + iw, in ? qc + (offq + it * (NT / UR) * (int)qrow) : q_in, in);
            if (NBUF == 2)
                cp16(Kb + t * LDH + iw, in ? kc + (offq + it * (NT / UR) * (int)qrow) : k_in, in);
        }
        if (NBUF == 2) {
            const f16_t* pc = p_in + tok0 * prow;
#pragma unroll
            for (int it = 0; it < PERP; ++it) {
                const int t = tp + it * (NT / UP);
                const bool in = whole || t < tc;
                cp16(Pb + t * LDPH + sp, in ? pc + (offp + it * (NT / UP) * (int)prow) : p_in, in);
            }
        }
        const float* ucb = u_in + tok0 * urow;
#pragma unroll
        for (int it = 0; it < PERU; ++it) {
            const int t = tu + it * (NT / UU);
            const bool in = whole || (t < tc && cu < nj);
            cp16(Ub + t * LDU + cu, in ? ucb + (offu + it * (NT / UU) * (int)urow) : u_in, in);
        }
        if (tid < CH) {
            const bool in = whole || tid < tc;
            cp4(gs2 + buf * CH + tid, in ? gc_in + tok0 * hv + offg : gc_in, in);
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    auto fetch_kp_as = [&](int t0, int buf, bool whole) {
        const int tc = min(CH, T - t0);
        const long long tok0 = (long long)seq * T + t0;
        f16_t* Kb = ops + buf * BUF + 2 * CH * LDH;
        f16_t* Pb = Kb + CH * LDH;
        const f16_t* kc = k_in + tok0 * qrow;
        const f16_t* pc = p_in + tok0 * prow;
#pragma unroll
        for (int it = 0; it < PER; ++it) {
            const int t = tw + it * (NT / UR);
            const bool in = whole || (t < tc && iw < dk);
            cp16(Kb + t * LDH + iw, in ? kc + (offq + it * (NT / UR) * (int)qrow) : k_in, in);
        }
#pragma unroll
        for (int it = 0; it < PERP; ++it) {
            const int t = tp + it * (NT / UP);
            const bool in = whole || t < tc;
            cp16(Pb + t * LDPH + sp, in ? pc + (offp + it * (NT / UP) * (int)prow) : p_in, in);
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    auto whole_chunk = [&](int t0) { return T - t0 >= CH && dk == DKMAX && nj == DVT; };
    auto fetch_wqug = [&](int t0, int buf) {
        if (whole_chunk(t0)) fetch_wqug_as(t0, buf, true);
        else fetch_wqug_as(t0, buf, false);
    };
    auto fetch_kp = [&](int t0, int buf) {
        if (whole_chunk(t0)) fetch_kp_as(t0, buf, true);
        else fetch_kp_as(t0, buf, false);
    };
    // K and P element by element (the one-buffer layout's path for other dims).
    auto load_kp = [&](int t0, int buf) {
        const int tc = min(CH, T - t0);
        const long long tok0 = (long long)seq * T + t0;
        f16_t* Kb = ops + buf * BUF + 2 * CH * LDH;
        f16_t* Pb = Kb + CH * LDH;
        for (int e = tid; e < CH * DKMAX; e += NT) {
            const int t = e / DKMAX, i = e % DKMAX;
            const bool in = t < tc && i < dk;
            Kb[t * LDH + i] = in ? k_in[((tok0 + t) * hk + kh) * dk + i] : (f16_t)0;
        }
        for (int e = tid; e < CH * CH; e += NT) {
            const int t = e / CH, s = e % CH;
            Pb[t * LDPH + s] = t < tc ? p_in[((tok0 + t) * hv + h) * CH + s] : (f16_t)0;
        }
    };
    // This thread's first output element in a chunk: row r0 + g, column n0 + 2 t4.
    const int offo = (r0 + g) * (int)urow + h * dv + j0 + n0 + 2 * t4;
    if (vec) fetch_wqug(0, 0);

    for (int t0 = 0; t0 < T; t0 += CH) {
        const int tc = min(CH, T - t0);
        const long long tok0 = (long long)seq * T + t0;
        const int buf = NBUF == 2 ? (t0 / CH) & 1 : 0;
        const f16_t* Wh = ops + buf * BUF;
        const f16_t* Qh = Wh + CH * LDH;
        const f16_t* Kh = Qh + CH * LDH;
        const f16_t* Ph = Kh + CH * LDH;
        const float* Ub = u2 + buf * CH * LDU;
        float* gs = gs2 + buf * CH;
        if (vec) {
            asm volatile("cp.async.wait_all;\n" ::: "memory");   // this thread's copies
        } else {
            // Element by element into this chunk's buffers (free: their last readers were
            // chunk c - 2's, and every warp passed chunk c - 1's first barrier since).
            float* Uw = u2 + buf * CH * LDU;
            for (int e = tid; e < CH * DVT; e += NT) {
                const int t = e / DVT, c = e % DVT;
                const bool in = t < tc && c < nj;
                Uw[t * LDU + c] = in ? u_in[(tok0 + t) * urow + (long long)h * dv + j0 + c] : 0.0f;
            }
            if (tid < CH) gs[tid] = tid < tc ? gc_in[(tok0 + tid) * hv + h] : 0.0f;
            f16_t* Wb = ops + buf * BUF;
            f16_t* Qb = Wb + CH * LDH;
            f16_t* Kb = Qb + CH * LDH;
            f16_t* Pb = Kb + CH * LDH;
            // (With one buffer K and P come after the barrier below, by load_kp.)
            for (int e = tid; e < CH * DKMAX; e += NT) {
                const int t = e / DKMAX, i = e % DKMAX;
                const bool in = t < tc && i < dk;
                const long long tok = tok0 + t;
                Wb[t * LDH + i] = in ? w_in[(tok * hv + h) * dk + i] : (f16_t)0;
                Qb[t * LDH + i] = in ? q_in[(tok * hk + kh) * dk + i] : (f16_t)0;
                if (NBUF == 2) Kb[t * LDH + i] = in ? k_in[(tok * hk + kh) * dk + i] : (f16_t)0;
            }
            if (NBUF == 2) {
                for (int e = tid; e < CH * CH; e += NT) {
                    const int t = e / CH, s = e % CH;
                    Pb[t * LDPH + s] = t < tc ? p_in[((tok0 + t) * hv + h) * CH + s] : (f16_t)0;
                }
            }
        }
        // This chunk's operands and gates are in place, and every warp is done with the
        // last chunk: with two buffers the other one is free for the next chunk; with one,
        // K and P (read by the last chunk's update) are free for this chunk's.
        __syncthreads();
        if (vec && NBUF == 2 && t0 + CH < T) fetch_wqug(t0 + CH, buf ^ 1);
        if (NBUF == 1) {
            if (vec) fetch_kp(t0, 0);
            else load_kp(t0, 0);
        }

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
            // dec_s = e^(G_last - G_s), zero past tc (as the rows of W and U).
            const float g0 = gs[r0 + g], g1 = gs[r0 + g + 8], gl = gs[tc - 1];
            const float eg0 = exp_ftz(g0), eg1 = exp_ftz(g1);
            const float d0 = r0 + g < tc ? exp_ftz(gl - g0) : 0.0f;
            const float d1 = r0 + g + 8 < tc ? exp_ftz(gl - g1) : 0.0f;
#pragma unroll
            for (int x = 0; x < NTW; ++x) {
                const int c = n0 + 8 * x + 2 * t4;
                const float2 u0 = *reinterpret_cast<const float2*>(Ub + (r0 + g) * LDU + c);
                const float2 u1 = *reinterpret_cast<const float2*>(Ub + (r0 + g + 8) * LDU + c);
                const float v0 = u0.x - cw[x][0], v1 = u0.y - cw[x][1];
                const float v2 = u1.x - cw[x][2], v3 = u1.y - cw[x][3];
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
        // e^(G_last): with one buffer G's next chunk lands after the barrier below, so it is
        // read before it; with two, in the update.
        float el = NBUF == 1 ? exp_ftz(gs[tc - 1]) : 0.0f;
        if (NBUF == 1 && vec) asm volatile("cp.async.wait_all;\n" ::: "memory");   // K, P
        // V' is whole; every warp is done reading S's copy (and, with one buffer, W, Q, U
        // and G, whose next chunk's copies go out now; K and P have landed).
        __syncthreads();
        if (NBUF == 1 && vec && t0 + CH < T) fetch_wqug(t0 + CH, 0);

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
        float* oc = out + tok0 * urow;
        const bool wh = whole_chunk(t0);   // every store of the chunk in range
#pragma unroll
        for (int x = 0; x < NTW; ++x) {
            const int c = n0 + 8 * x + 2 * t4;
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                const int t = r0 + g + 8 * hf;
                float* dst = oc + (offo + (8 * hf) * (int)urow + 8 * x);
                if (vec && (wh || (t < tc && c < nj))) {
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
            if (NBUF == 2) el = exp_ftz(gs[tc - 1]);
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
