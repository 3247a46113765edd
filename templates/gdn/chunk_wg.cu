{#
  GDN chunked prefill's scan on Hopper's warpgroup tensor cores (wgmma, sm_90a): the
  algebra, inputs, outputs and roundings of gdn/chunk_f16.cu (W, Q, K, P f16 from the f16
  `wu`, U and G f32; S and V' rounded to f16 as operands; f32 accumulation), with the
  products turned around so that every per-chunk intermediate stays in registers:

    (W S)^T = S^T W^T,  (Q S)^T = S^T Q^T        (M = dvt columns of S, N = 64 tokens, K = dk)
    V'^T = U^T - (W S)^T
    o^T = e^G (Q S)^T + V'^T P^T                 (K = tokens)
    S^T <- e^(G_last) S^T + (diag(dec) V')^T K   (N = dk, K = tokens)

  One warpgroup a block holds S^T for 64 columns of S (warp w: columns 16w..16w+15, every
  row i of dk) as f32 accumulators. An accumulator tile of m16 x n16 is, element for
  element, the A fragment of an m16 x k16 product (the mma and wgmma fragment layouts), so
  S^T (rounded to f16) is the A operand of the two wgmmas over dk, and V'^T and
  (diag(dec) V')^T, made in the registers of (W S)^T, are the A operands of P's wgmma and
  of the update. The tensor cores read W, Q and P from shared memory K-major, and K (stored
  token-major: the update contracts over tokens) N-major, each once a warpgroup. A chunk is
  five commit groups in order: W S, Q S (both over S^T's fragments), the update (once V'
  is made), P V' (once Q S is scaled); the next chunk's copies go out at its top. Why
  (bench/gdn runs 27 and 32-36, H100, 4096 tokens): the mma.sync scan (gdn/chunk_f16.cu)
  moved ~4,500 shared-memory wavefronts a chunk (every warp reading its A tiles, S's and
  V''s f16 copies written and read back) for ~0.6 us of tensor work, 215 us in all; this
  form takes 145 us (run 36), with the update as mma.sync 175 (run 34).

  Shared memory: `stages` buffers of one chunk's inputs, each brought by TMA (one thread
  issues nine tensor copies on the buffer's mbarrier; G, too narrow for a box, by cp.async),
  each operand in the 128-byte swizzle (16-byte piece p of 128-byte row r at piece p ^ (r %
  8)) that the wgmma descriptors name: W, Q, K as two 64-column halves of dk, [64 tokens]
  [128 B] each; P [64][128 B]; U's tile as two 32-column boxes [64][128 B] (the transposed
  reads of V' then hit 32 banks); G [64]. Chunk c's copies go out at the top of chunk c -
  stages + 1, after the barrier that frees their buffer. o^T goes to one of two staging
  tiles (two 32-column boxes, same swizzle) and out by two TMA stores a chunk. Rows and
  columns past T, dk and dv are zero-filled by the copies and clipped by the stores.
  Why (bench/gdn run 33's ablations, H100, 4096 tokens): with 36 cp.async a thread a chunk
  the copies cost 72 of the scan's 180 us, and o's 32 scalar stores a thread 68; by TMA,
  the two together cost 5 us less, not 140: the chunk's chain was the rest (run 34).

  Limits: dk <= 128 and a multiple of 8, dv a multiple of 4 (TMA's 16-byte strides). grid
  (ceil(dv / 64), HV, seqs), 128 threads, dynamic shared memory chunk_wg_smem in
  src/ops/gdn/mod.rs; the tensor maps (4-D: columns, heads, tokens, sequences) are made by
  `launch_wg_scan` there. Built for another target than sm_90a the kernel is a stub that
  traps (the route is Hopper's only).
#}
{% include "gdn/f16_mma.cuh" %}
#define CH 64
#define DKMAX 128
#define DVT 64
#define NSTAGE {{ stages }}
// Byte offsets in a stage (each operand 1024-aligned: the swizzle repeats every 8 rows).
#define HALF_BYTES (CH * 128)             // a 64-column half of W, Q or K
#define OFF_W 0
#define OFF_Q (2 * HALF_BYTES)
#define OFF_K (4 * HALF_BYTES)
#define OFF_P (6 * HALF_BYTES)
#define OFF_U (OFF_P + CH * 128)
#define OFF_G (OFF_U + CH * DVT * 4)
#define STAGE_BYTES (((OFF_G + CH * 4) + 1023) / 1024 * 1024)
#define TMA_BYTES (OFF_G)                  // what a stage's tensor copies bring
#define OUT_BYTES (CH * DVT * 4)           // one o staging tile (two 32-column boxes)

{% include "gdn/wgmma.cuh" %}


extern "C" __global__ void __launch_bounds__(128, 1)
{{ kernel_name }}(const float* __restrict__ gc_in,
                  float* state,
                  int T, int hk, int hv, int dk, int dv,
                  const __grid_constant__ TmaMap wmap,   // W [seqs][T][HV][dk] f16, boxes 64 x 64
                  const __grid_constant__ TmaMap qmap,   // q [seqs][T][HK][dk] f16
                  const __grid_constant__ TmaMap kmap,   // k, as q
                  const __grid_constant__ TmaMap pmap,   // P [seqs][T][HV][64] f16
                  const __grid_constant__ TmaMap umap,   // U [seqs][T][HV][dv] f32, boxes 32 x 64
                  const __grid_constant__ TmaMap omap)   // o, as U
{
#if !NINFER_WGMMA
    __trap();
#else
    extern __shared__ uint4 smem4[];
    const u32 raw_base = (u32)__cvta_generic_to_shared(smem4);
    const u32 base = (raw_base + 1023u) & ~1023u;
    u8* const smem = (u8*)smem4 + (base - raw_base);

    const int seq = blockIdx.z, h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int j0 = blockIdx.x * DVT;
    const int nj = min(DVT, dv - j0);
    const int tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const long long sbase = ((long long)seq * hv + h) * dv;
    // This thread's rows of S^T: columns jr[r] = 16 warp + g + 8 r of S.
    const int jw = 16 * warp + g;

    // S^T in registers: cs[n] is the accumulator tile of rows jw (+8), columns i = 8n + 2 t4
    // (+1). Rows past nj and columns past dk are zero and stay zero.
    float cs[16][4];
#pragma unroll
    for (int n = 0; n < 16; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int j = jw + 8 * (e >> 1), i = 8 * n + 2 * t4 + (e & 1);
            cs[n][e] = (j < nj && i < dk) ? state[(sbase + j0 + j) * dk + i] : 0.0f;
        }
    }
    // S^T as f16 A fragments over dk (k-step kk: tiles 2kk and 2kk + 1).
    u32 sa[8][4];
    auto pack_s = [&]() {
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            sa[kk][0] = f16x2(cs[2 * kk][0], cs[2 * kk][1]);
            sa[kk][1] = f16x2(cs[2 * kk][2], cs[2 * kk][3]);
            sa[kk][2] = f16x2(cs[2 * kk + 1][0], cs[2 * kk + 1][1]);
            sa[kk][3] = f16x2(cs[2 * kk + 1][2], cs[2 * kk + 1][3]);
        }
    };
    pack_s();

    __shared__ __align__(8) u64 full[NSTAGE];   // a stage's tensor copies have landed
    const u32 bar0 = (u32)__cvta_generic_to_shared(full);
    const u32 obase = base + NSTAGE * STAGE_BYTES;   // the two o staging tiles
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < NSTAGE; ++s) mbar_init(bar0 + 8 * s, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // A chunk's inputs into `stage`: the tensor copies by thread 0, G by cp.async (threads
    // below 64, one commit group a chunk, empty past T so that the counts stay even).
    auto fetch = [&](int t0, int stage) {
        if (t0 < T) {
            const u32 sb = base + stage * STAGE_BYTES, bar = bar0 + 8 * stage;
            if (tid == 0) {
                mbar_expect(bar, TMA_BYTES);
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    tma_load(sb + OFF_W + half * HALF_BYTES, wmap, 64 * half, h, t0, seq, bar);
                    tma_load(sb + OFF_Q + half * HALF_BYTES, qmap, 64 * half, kh, t0, seq, bar);
                    tma_load(sb + OFF_K + half * HALF_BYTES, kmap, 64 * half, kh, t0, seq, bar);
                    tma_load(sb + OFF_U + half * HALF_BYTES, umap, j0 + 32 * half, h, t0, seq, bar);
                }
                tma_load(sb + OFF_P, pmap, 0, h, t0, seq, bar);
            }
            if (tid < CH) {
                const bool in = t0 + tid < T;
                const long long tok = (long long)seq * T + t0 + tid;
                cp4(smem + stage * STAGE_BYTES + OFF_G + 4 * tid, in ? gc_in + tok * hv + h : gc_in, in);
            }
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
#pragma unroll
    for (int s = 0; s + 1 < NSTAGE; ++s) fetch(s * CH, s);

    int stage = 0, chunk = 0;
    for (int t0 = 0; t0 < T; t0 += CH, ++chunk) {
        const int tc = min(CH, T - t0);
        asm volatile("cp.async.wait_group %0;\n" ::"n"(NSTAGE - 2) : "memory");   // G
        mbar_wait(bar0 + 8 * stage, (chunk / NSTAGE) & 1);                       // the rest
        // o's store of chunk c - 2 has read its staging tile, which chunk c writes.
        if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        // Chunk c's inputs are in place, and every warp is done with chunk c - 1 (its
        // wgmmas waited for): its buffer takes chunk c + NSTAGE - 1.
        __syncthreads();
        if (tid == 0) fence_proxy_async();   // (the buffer's generic reads before TMA's writes)
        fetch(t0 + (NSTAGE - 1) * CH, (stage + NSTAGE - 1) % NSTAGE);

        u8* sb = smem + stage * STAGE_BYTES;
        const u32 sbs = base + stage * STAGE_BYTES;   // its shared-window address
        const float* gs = reinterpret_cast<const float*>(sb + OFF_G);
        const float* us = reinterpret_cast<const float*>(sb + OFF_U);

        // (W S)^T and (Q S)^T: eight k-steps over dk each, S^T from registers.
        float cw[32], cq[32];
#pragma unroll
        for (int e = 0; e < 32; ++e) { cw[e] = 0.0f; cq[e] = 0.0f; }
        pin(cw);
        pin(cq);
        pin(sa);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
            wg_m64n64k16(cw, sa[kk], wg_desc(sbs + OFF_W + (kk >> 2) * HALF_BYTES + (kk & 3) * 32));
        wg_commit();
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
            wg_m64n64k16(cq, sa[kk], wg_desc(sbs + OFF_Q + (kk >> 2) * HALF_BYTES + (kk & 3) * 32));
        wg_commit();

        // Gates of this thread's tokens t = 8x + 2 t4 + b: e^(G_t) and dec_t = e^(G_last - G_t)
        // (zero past tc, as the rows of W and U).
        const float gl = gs[tc - 1];
        float eg[8][2], dec[8][2];
#pragma unroll
        for (int x = 0; x < 8; ++x) {
#pragma unroll
            for (int b = 0; b < 2; ++b) {
                const int t = 8 * x + 2 * t4 + b;
                const float gt = gs[t];
                eg[x][b] = exp_ftz(gt);
                dec[x][b] = t < tc ? exp_ftz(gl - gt) : 0.0f;
            }
        }

        wg_wait<1>();   // (W S)^T
        pin(cw);
        // V'^T = U^T - (W S)^T, as f16 A fragments over tokens (k-step kk: tiles 2kk, 2kk+1),
        // plain (for P's product) and scaled by dec (for the update).
        u32 va[4][4], vd[4][4];
#pragma unroll
        for (int x = 0; x < 8; ++x) {
            const int t = 8 * x + 2 * t4;
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int j = jw + 8 * r, jj = j & 31;   // box j / 32, column jj
                const float* ub = us + (j >> 5) * (HALF_BYTES / 4) + (jj & 3);
                const float v0 = ub[t * 32 + 4 * ((jj >> 2) ^ (t & 7))] - cw[4 * x + 2 * r];
                const float v1 = ub[(t + 1) * 32 + 4 * ((jj >> 2) ^ ((t + 1) & 7))] - cw[4 * x + 2 * r + 1];
                va[x >> 1][(x & 1) * 2 + r] = f16x2(v0, v1);
                vd[x >> 1][(x & 1) * 2 + r] = f16x2(dec[x][0] * v0, dec[x][1] * v1);
            }
        }

        // S^T <- e^(G_last) S^T + (diag(dec) V')^T K: four wgmmas over tokens, K N-major.
        {
            const float el = exp_ftz(gl);
#pragma unroll
            for (int n = 0; n < 16; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) cs[n][e] *= el;
            pin(cs);
            pin(vd);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) wg_m64n128k16_t(cs, vd[kk], wg_desc_mn(sbs + OFF_K + kk * 2048));
            wg_commit();
        }

        wg_wait<1>();   // (Q S)^T: S^T's f16 fragments are free (the update may still run)
        pin(cq);
        // o^T = e^G (Q S)^T + V'^T P^T.
#pragma unroll
        for (int x = 0; x < 8; ++x) {
            cq[4 * x] *= eg[x][0];
            cq[4 * x + 1] *= eg[x][1];
            cq[4 * x + 2] *= eg[x][0];
            cq[4 * x + 3] *= eg[x][1];
        }
        pin(cq);
        pin(va);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) wg_m64n64k16(cq, va[kk], wg_desc(sbs + OFF_P + kk * 32));
        wg_commit();
        wg_wait<0>();   // the update and P's product
        pin(cs);
        pin(cq);
        pack_s();       // the next chunk's S^T fragments

        // o^T into this chunk's staging tile as o [t][j] (the stores' boxes), then out.
        const u32 ob = obase + (chunk & 1) * OUT_BYTES;
        float* os = reinterpret_cast<float*>(smem + NSTAGE * STAGE_BYTES + (chunk & 1) * OUT_BYTES);
#pragma unroll
        for (int x = 0; x < 8; ++x) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int t = 8 * x + 2 * t4 + (e & 1), j = jw + 8 * (e >> 1), jj = j & 31;
                os[(j >> 5) * (HALF_BYTES / 4) + t * 32 + 4 * ((jj >> 2) ^ (t & 7)) + (jj & 3)] = cq[4 * x + e];
            }
        }
        fence_proxy_async();   // the tile's generic writes, before the async proxy reads them
        __syncthreads();
        if (tid == 0) {
            tma_store(omap, j0, h, t0, seq, ob);
            tma_store(omap, j0 + 32, h, t0, seq, ob + HALF_BYTES);
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
        stage = (stage + 1) % NSTAGE;
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");   // o's last stores
#pragma unroll
    for (int n = 0; n < 16; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int j = jw + 8 * (e >> 1), i = 8 * n + 2 * t4 + (e & 1);
            if (j < nj && i < dk) state[(sbase + j0 + j) * dk + i] = cs[n][e];
        }
    }
#endif  // NINFER_WGMMA
}
