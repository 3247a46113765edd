{#
  GDN chunked prefill's scan on Hopper's warpgroup tensor cores, the chunk split over two
  warpgroups: gdn/chunk_wg.cu's algebra, inputs, outputs and roundings, with the state's
  chain and the chunk's output apart.

    warpgroup 0 (the chain):  (W S)^T = S^T W^T, V'^T = U^T - (W S)^T,
                              S^T <- e^(G_last) S^T + (diag(dec) V')^T K
    warpgroup 1 (the output): o^T = e^G (Q S)^T + V'^T P^T

  Why: in gdn/chunk_wg.cu one warpgroup issues all four products a chunk, so the tensor
  cores take Q S between W S and the update, and the next chunk's W S waits for P's
  product, o's staging and a block barrier. The state's recurrence needs only W S, V' and
  the update; o needs the chunk's S and V' but nothing needs o. Here warpgroup 0 keeps S^T
  in registers as before and hands each chunk's S^T and V'^T (f16, as the products take
  them) to warpgroup 1 through shared memory, where its wgmmas read them as A operands.

  Hand-offs (mbarriers): full[s] (a stage's inputs landed: the tensor copies' bytes and
  the 64 G copies), empty[s] (warpgroup 0 is done with stage s), sready / vready[b] (S^T
  of chunk c, V'^T of chunk c written: 128 arrivals, each after a proxy fence), qdone /
  pdone[b] (warpgroup 1's Q S / P V' of chunk c have read them). V'^T has two buffers b,
  so warpgroup 0 waits for P V' of chunk c - 2, and each buffer has its own pair of
  barriers: a parity wait is right only while its barrier is at most one phase on, and
  every wait here is (each side's next arrival needs the other side past the wait). Warpgroup 1 refills stage s with
  chunk c + stages once it is done with chunk c and warpgroup 0 has released the stage.
  Shared memory: gdn/chunk_wg.cu's stages and o tiles, then S^T ([64 rows][128 B] x two
  64-column halves of dk) and two V'^T ([64][128 B]), in the 128-byte swizzle.

  Param u_half: U arrives as f16 (gdn/chunk_wu_f16.cu's u_half form; umap then has f16
  boxes of 64 columns), half the bytes of its tile, read back to f32 where V' is formed.

  grid (ceil(dv / 64), HV, seqs), 256 threads; dynamic shared memory chunk_wgs_smem in
  src/ops/gdn/mod.rs; the same tensor maps as gdn/chunk_wg.cu. Built for another target
  than sm_90a the kernel is a stub that traps.
#}
{% include "gdn/f16_mma.cuh" %}
#define CH 64
#define DKMAX 128
#define DVT 64
#define NSTAGE {{ stages }}
#define U_HALF {{ u_half }}
// Byte offsets in a stage (each operand 1024-aligned: the swizzle repeats every 8 rows).
#define HALF_BYTES (CH * 128)             // a 64-column half of W, Q or K
#define OFF_W 0
#define OFF_Q (2 * HALF_BYTES)
#define OFF_K (4 * HALF_BYTES)
#define OFF_P (6 * HALF_BYTES)
#define OFF_U (OFF_P + CH * 128)
#define OFF_G (OFF_U + CH * DVT * (U_HALF ? 2 : 4))
#define STAGE_BYTES (((OFF_G + CH * 4) + 1023) / 1024 * 1024)
#define TMA_BYTES (OFF_G)                  // what a stage's tensor copies bring
#define OUT_BYTES (CH * DVT * 4)           // one o staging tile (two 32-column boxes)
#define SBUF_BYTES (2 * HALF_BYTES)        // S^T f16, two halves of dk
#define VBUF_BYTES (CH * 128)              // V'^T f16
// V'^T buffers: with two, warpgroup 0 writes chunk c's while warpgroup 1 may still read
// chunk c - 1's (src/ops/gdn/mod.rs reserves two).
#define VBUFS 2
{% include "gdn/wgmma.cuh" %}

// Byte offset of element (row r, column c) of a [rows][128 B] f16 operand in the
// 128-byte swizzle (16-byte piece p of row r at piece p ^ (r % 8)); c < 64.
__device__ __forceinline__ u32 swz16(int r, int c) {
    return (u32)(r * 128 + (((c >> 3) ^ (r & 7)) << 4) + (c & 7) * 2);
}

extern "C" __global__ void __launch_bounds__(256, 1)
{{ kernel_name }}(const float* __restrict__ gc_in,
                  float* state,
                  int T, int hk, int hv, int dk, int dv,
                  const __grid_constant__ TmaMap wmap,   // W [seqs][T][HV][dk] f16, boxes 64 x 64
                  const __grid_constant__ TmaMap qmap,   // q [seqs][T][HK][dk] f16
                  const __grid_constant__ TmaMap kmap,   // k, as q
                  const __grid_constant__ TmaMap pmap,   // P [seqs][T][HV][64] f16
                  const __grid_constant__ TmaMap umap,   // U [seqs][T][HV][dv] f32, boxes 32 x 64 (u_half: f16, 64 x 64)
                  const __grid_constant__ TmaMap omap)   // o, as U
{
#if !NINFER_WGMMA
    __trap();
#else
    extern __shared__ uint4 smem4[];
    const u32 raw_base = (u32)__cvta_generic_to_shared(smem4);
    const u32 base = (raw_base + 1023u) & ~1023u;
    u8* const smem = (u8*)smem4 + (base - raw_base);
    const u32 obase = base + NSTAGE * STAGE_BYTES;   // the two o staging tiles
    const u32 sbuf = obase + 2 * OUT_BYTES;          // S^T f16
    const u32 vbuf = sbuf + SBUF_BYTES;              // V'^T f16
    u8* const sbuf_p = smem + (sbuf - base);
    u8* const vbuf_p = smem + (vbuf - base);

    const int seq = blockIdx.z, h = blockIdx.y;
    const int kh = h / (hv / hk);
    const int j0 = blockIdx.x * DVT;
    const int nj = min(DVT, dv - j0);
    const int tid = threadIdx.x;
    const int wg = tid >> 7, ltid = tid & 127;
    const int warp = ltid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const long long sbase = ((long long)seq * hv + h) * dv;
    // This thread's accumulator rows: columns jw (+8) of S (of o^T in warpgroup 1).
    const int jw = 16 * warp + g;
    const int nchunks = (T + CH - 1) / CH;

    // Barriers: full and empty a stage, sready and qdone, vready and pdone a V'^T buffer
    // (one a buffer, so that no waiter ever finds its barrier two phases on).
    __shared__ __align__(8) u64 bars[2 * NSTAGE + 2 + 2 * VBUFS];
    const u32 bar0 = (u32)__cvta_generic_to_shared(bars);
    const u32 full0 = bar0, empty0 = bar0 + 8 * NSTAGE;
    const u32 sready = bar0 + 16 * NSTAGE, qdone = sready + 8;
    const u32 vready0 = sready + 16, pdone0 = vready0 + 8 * VBUFS;
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < NSTAGE; ++s) {
            mbar_init(full0 + 8 * s, 1 + CH);   // the expect_tx arrival and 64 G copies
            mbar_init(empty0 + 8 * s, 1);
        }
        mbar_init(sready, 128);
        mbar_init(qdone, 1);
#pragma unroll
        for (int b = 0; b < VBUFS; ++b) {
            mbar_init(vready0 + 8 * b, 128);
            mbar_init(pdone0 + 8 * b, 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    // Chunk c's inputs into stage c % NSTAGE, by warpgroup 1: the tensor copies by its
    // thread 0, G by its first 64 threads (cp.async, arriving on the stage's barrier).
    auto fetch = [&](int c) {
        if (c >= nchunks) return;
        const int t0 = c * CH, stage = c % NSTAGE;
        const u32 sb = base + stage * STAGE_BYTES, bar = full0 + 8 * stage;
        if (ltid == 0) {
            mbar_expect(bar, TMA_BYTES);
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                tma_load(sb + OFF_W + half * HALF_BYTES, wmap, 64 * half, h, t0, seq, bar);
                tma_load(sb + OFF_Q + half * HALF_BYTES, qmap, 64 * half, kh, t0, seq, bar);
                tma_load(sb + OFF_K + half * HALF_BYTES, kmap, 64 * half, kh, t0, seq, bar);
                if (!U_HALF || half == 0)
                    tma_load(sb + OFF_U + half * HALF_BYTES, umap, j0 + 32 * half, h, t0, seq, bar);
            }
            tma_load(sb + OFF_P, pmap, 0, h, t0, seq, bar);
        }
        if (ltid < CH) {
            const bool in = t0 + ltid < T;
            const long long tok = (long long)seq * T + t0 + ltid;
            cp4(smem + stage * STAGE_BYTES + OFF_G + 4 * ltid, in ? gc_in + tok * hv + h : gc_in, in);
            cp_async_arrive(bar);
        }
    };

    if (wg == 0) {
        // ---- warpgroup 0: the state's chain.
        float cs[16][4];
#pragma unroll
        for (int n = 0; n < 16; ++n) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int j = jw + 8 * (e >> 1), i = 8 * n + 2 * t4 + (e & 1);
                cs[n][e] = (j < nj && i < dk) ? state[(sbase + j0 + j) * dk + i] : 0.0f;
            }
        }
        u32 sa[8][4];
        // S^T as f16 A fragments over dk (k-step kk: tiles 2kk and 2kk + 1), and the same
        // into sbuf for warpgroup 1 (row j, column i of S^T; half i / 64).
        auto pack_publish = [&](bool publish) {
#pragma unroll
            for (int kk = 0; kk < 8; ++kk) {
                sa[kk][0] = f16x2(cs[2 * kk][0], cs[2 * kk][1]);
                sa[kk][1] = f16x2(cs[2 * kk][2], cs[2 * kk][3]);
                sa[kk][2] = f16x2(cs[2 * kk + 1][0], cs[2 * kk + 1][1]);
                sa[kk][3] = f16x2(cs[2 * kk + 1][2], cs[2 * kk + 1][3]);
            }
            if (!publish) return;
#pragma unroll
            for (int kk = 0; kk < 8; ++kk) {
                u8* hb = sbuf_p + (kk >> 2) * HALF_BYTES;
                const int c = 16 * (kk & 3) + 2 * t4;
                *reinterpret_cast<u32*>(hb + swz16(jw, c)) = sa[kk][0];
                *reinterpret_cast<u32*>(hb + swz16(jw + 8, c)) = sa[kk][1];
                *reinterpret_cast<u32*>(hb + swz16(jw, c + 8)) = sa[kk][2];
                *reinterpret_cast<u32*>(hb + swz16(jw + 8, c + 8)) = sa[kk][3];
            }
            fence_proxy_async();   // the generic writes, before warpgroup 1's wgmmas read them
            mbar_arrive(sready);
        };
        pack_publish(true);

        for (int c = 0; c < nchunks; ++c) {
            const int t0 = c * CH, stage = c % NSTAGE, tc = min(CH, T - t0);
            mbar_wait(full0 + 8 * stage, (c / NSTAGE) & 1);
            u8* sb = smem + stage * STAGE_BYTES;
            const u32 sbs = base + stage * STAGE_BYTES;
            const float* gs = reinterpret_cast<const float*>(sb + OFF_G);
            const float* us = reinterpret_cast<const float*>(sb + OFF_U);

            float cw[32];
#pragma unroll
            for (int e = 0; e < 32; ++e) cw[e] = 0.0f;
            pin(cw);
            pin(sa);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < 8; ++kk)
                wg_m64n64k16(cw, sa[kk], wg_desc(sbs + OFF_W + (kk >> 2) * HALF_BYTES + (kk & 3) * 32));
            wg_commit();

            // dec_t = e^(G_last - G_t) for this thread's tokens t = 8x + 2 t4 + b (zero past tc).
            const float gl = gs[tc - 1];
            float dec[8][2];
#pragma unroll
            for (int x = 0; x < 8; ++x)
#pragma unroll
                for (int b = 0; b < 2; ++b) {
                    const int t = 8 * x + 2 * t4 + b;
                    dec[x][b] = t < tc ? exp_ftz(gl - gs[t]) : 0.0f;
                }

            wg_wait<0>();   // (W S)^T
            pin(cw);
            // V'^T = U^T - (W S)^T: f16 A fragments over tokens, plain (into vbuf, for P's
            // product) and scaled by dec (for the update).
            u32 va[4][4], vd[4][4];
#pragma unroll
            for (int x = 0; x < 8; ++x) {
                const int t = 8 * x + 2 * t4;
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const int j = jw + 8 * r, jj = j & 31;   // box j / 32, column jj
                    float u0, u1;
                    if (U_HALF) {   // one box of 64 f16 columns
                        const u8* uh = sb + OFF_U;
                        u0 = f16_to_f32(*reinterpret_cast<const f16_t*>(uh + swz16(t, j)));
                        u1 = f16_to_f32(*reinterpret_cast<const f16_t*>(uh + swz16(t + 1, j)));
                    } else {
                        const float* ub = us + (j >> 5) * (HALF_BYTES / 4) + (jj & 3);
                        u0 = ub[t * 32 + 4 * ((jj >> 2) ^ (t & 7))];
                        u1 = ub[(t + 1) * 32 + 4 * ((jj >> 2) ^ ((t + 1) & 7))];
                    }
                    const float v0 = u0 - cw[4 * x + 2 * r];
                    const float v1 = u1 - cw[4 * x + 2 * r + 1];
                    va[x >> 1][(x & 1) * 2 + r] = f16x2(v0, v1);
                    vd[x >> 1][(x & 1) * 2 + r] = f16x2(dec[x][0] * v0, dec[x][1] * v1);
                }
            }
            // Warpgroup 1's P V' of chunk c - VBUFS has read this chunk's V'^T buffer.
            const int vb_i = c % VBUFS, vb_k = c / VBUFS;
            if (c >= VBUFS) mbar_wait(pdone0 + 8 * vb_i, (vb_k - 1) & 1);
            u8* vb = vbuf_p + vb_i * VBUF_BYTES;
#pragma unroll
            for (int x = 0; x < 8; ++x)
#pragma unroll
                for (int r = 0; r < 2; ++r)
                    *reinterpret_cast<u32*>(vb + swz16(jw + 8 * r, 8 * x + 2 * t4)) =
                        va[x >> 1][(x & 1) * 2 + r];
            fence_proxy_async();
            mbar_arrive(vready0 + 8 * vb_i);

            // S^T <- e^(G_last) S^T + (diag(dec) V')^T K: four wgmmas over tokens, K N-major.
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
            wg_wait<0>();
            pin(cs);
            asm volatile("bar.sync 2, 128;" ::: "memory");   // every read of U and G done
            if (ltid == 0) mbar_arrive(empty0 + 8 * stage);   // W, U, K and G read
            // Warpgroup 1's Q S of chunk c has read sbuf: the next S^T goes there.
            mbar_wait(qdone, c & 1);
            pack_publish(c + 1 < nchunks);
        }
#pragma unroll
        for (int n = 0; n < 16; ++n) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int j = jw + 8 * (e >> 1), i = 8 * n + 2 * t4 + (e & 1);
                if (j < nj && i < dk) state[(sbase + j0 + j) * dk + i] = cs[n][e];
            }
        }
    } else {
        // ---- warpgroup 1: the chunk's output, and the copies.
#pragma unroll
        for (int c = 0; c < NSTAGE; ++c) fetch(c);
        for (int c = 0; c < nchunks; ++c) {
            const int t0 = c * CH, stage = c % NSTAGE;
            mbar_wait(full0 + 8 * stage, (c / NSTAGE) & 1);
            const u32 sbs = base + stage * STAGE_BYTES;
            const float* gs = reinterpret_cast<const float*>(smem + stage * STAGE_BYTES + OFF_G);

            // (Q S)^T, S^T from sbuf.
            float cq[32];
#pragma unroll
            for (int e = 0; e < 32; ++e) cq[e] = 0.0f;
            mbar_wait(sready, c & 1);
            pin(cq);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < 8; ++kk)
                wg_m64n64k16_ss(cq, wg_desc(sbuf + (kk >> 2) * HALF_BYTES + (kk & 3) * 32),
                                wg_desc(sbs + OFF_Q + (kk >> 2) * HALF_BYTES + (kk & 3) * 32));
            wg_commit();
            float eg[8][2];
#pragma unroll
            for (int x = 0; x < 8; ++x)
#pragma unroll
                for (int b = 0; b < 2; ++b) eg[x][b] = exp_ftz(gs[8 * x + 2 * t4 + b]);
            wg_wait<0>();
            pin(cq);
            if (ltid == 0) mbar_arrive(qdone);
            // o^T = e^G (Q S)^T + V'^T P^T, V'^T from vbuf.
#pragma unroll
            for (int x = 0; x < 8; ++x) {
                cq[4 * x] *= eg[x][0];
                cq[4 * x + 1] *= eg[x][1];
                cq[4 * x + 2] *= eg[x][0];
                cq[4 * x + 3] *= eg[x][1];
            }
            const int vb_i = c % VBUFS, vb_k = c / VBUFS;
            mbar_wait(vready0 + 8 * vb_i, vb_k & 1);
            pin(cq);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                wg_m64n64k16_ss(cq, wg_desc(vbuf + vb_i * VBUF_BYTES + kk * 32),
                                wg_desc(sbs + OFF_P + kk * 32));
            wg_commit();
            wg_wait<0>();
            pin(cq);
            if (ltid == 0) mbar_arrive(pdone0 + 8 * vb_i);

            // o^T into this chunk's staging tile as o [t][j] (the stores' boxes), then out;
            // the store of chunk c - 2 has read the tile first.
            if (ltid == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            asm volatile("bar.sync 1, 128;" ::: "memory");
            const u32 ob = obase + (c & 1) * OUT_BYTES;
            float* os = reinterpret_cast<float*>(smem + NSTAGE * STAGE_BYTES + (c & 1) * OUT_BYTES);
#pragma unroll
            for (int x = 0; x < 8; ++x) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int t = 8 * x + 2 * t4 + (e & 1), j = jw + 8 * (e >> 1), jj = j & 31;
                    os[(j >> 5) * (HALF_BYTES / 4) + t * 32 + 4 * ((jj >> 2) ^ (t & 7)) + (jj & 3)] = cq[4 * x + e];
                }
            }
            fence_proxy_async();   // the tile's generic writes, before the async proxy reads them
            asm volatile("bar.sync 1, 128;" ::: "memory");
            if (ltid == 0) {
                tma_store(omap, j0, h, t0, seq, ob);
                tma_store(omap, j0 + 32, h, t0, seq, ob + HALF_BYTES);
                asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            }
            // The stage is refilled with chunk c + NSTAGE once warpgroup 0 is done with it
            // too (every G read of this warpgroup is behind the barriers above; the reads
            // are in the generic proxy, before TMA's writes).
            if (c + NSTAGE < nchunks) {
                if (ltid < CH) mbar_wait(empty0 + 8 * stage, (c / NSTAGE) & 1);
                if (ltid == 0) fence_proxy_async();
                fetch(c + NSTAGE);
            }
        }
        if (ltid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");   // o's last stores
    }
#endif  // NINFER_WGMMA
}
