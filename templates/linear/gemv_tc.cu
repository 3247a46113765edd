{#
  Decode-size GEMV on the tensor cores with the weights streamed by TMA (Hopper, sm_90):
  y[T,N] = bf16(x)[T,K] * W[N,K]^T (+ residual), x, y and the residual f32, W q4_g64, f32
  sums; T <= TT <= 8. The activations are rounded to bf16 (the bf16 mode's precision
  trade, as the mma tiles with parts = 1); each weight enters the mma exactly.

  Why: the CUDA-core ring kernel (gemv_ring.cu) spends ~3.7 instructions a weight and lane
  and issues as fast as DRAM delivers (bench/kernels v10, v22), so any ramp or drain adds
  to the launch in full; its loads are instructions too. Here one thread of a producer
  warp moves whole tiles with cp.async.bulk.tensor, ~1.8 instructions a weight and lane
  are left for the consumers, and the producer fills the ring before the PDL wait: a
  launch's first stages stream in while the kernel ahead of it drains.

  Work: the N / 8 tiles of 8 rows are split evenly over the grid (one block an SM, each a
  run of consecutive tiles), a block's run in chunks of at most 8 tiles, a chunk in stages
  of 1024 k (16 groups). A stage holds per tile one box of quants, 4 pieces of 128 bytes
  (256 k) x 8 rows, taken through a 3-D view of the quant plane ([pieces][rows][128 bytes]
  in shared memory, in the 128-byte swizzle: 16-byte chunk c of a row at c ^ row), and one
  8-row x 32-byte box of scales: 4.25 KB a tile, two TMA instructions (v73 run 2: with
  three for 2.1 KB the producer's issue, serial over its lanes, held the stream to 1.6
  TB/s). The ring holds `slots` stages (host-sized to the shared memory left), each with a
  full and an empty mbarrier.

  mma.m16n8k16 with the weights as B (n = 8 rows of a tile) and bf16(x) as A (m = tokens;
  rows 8..15 zero): lane (g, t) holds row g's words t and t + 4 of a group (8 nibbles
  each, k = 8w..8w+7). A word's nibble pairs (k0, k4), (k1, k5), (k2, k6), (k3, k7) become
  bf16 pairs with one LOP3 each, ((w >> 4i) & 0x000F000F) ^ 0x43084308 = 136 + q (the
  nibble's sign flipped into offset binary inside bf16 128.0's mantissa); two words give
  the group's four mmas, whose k-slots map to those k's (x is staged in that order, 16
  bytes a word: (x0, x4), (x1, x5), (x2, x6), (x3, x7)). The 136 is taken back by starting
  each group's sums at -136 * sum(bf16(x)) of the group; the scale multiplies the group's
  sum into the accumulator. Warp w of the 16 consumers takes group w of every stage for
  every tile of the chunk (its x fragments loaded once for all); at a chunk's end the 16
  warps' sums of a tile are added in a fixed order in shared memory and stored.

  Params: tt (1, 2, 4 or 8), epilogue ("none" | "residual"). Needs K % 1024 == 0 (whole
  stages). Dynamic shared memory: slots * STAGE_BYTES + 1024 (alignment) +
  TT * (2K + 64) (staged x) + TT * K / 64 * 4 (group sums) + TT * 2048 (the chunk sums).
  The last two parameters are the quant and scale planes' TMA maps (u8; the quants as
  [K / 256 pieces][N rows][128 bytes], boxes 128 x 8 x 4 in the 128-byte swizzle; the
  scales [N][K / 32], boxes 32 x 8).
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}

#define TT {{ tt }}
#define CONSUMERS 16                           // consumer warps
#define THREADS ((CONSUMERS + 1) * 32)         // and one producer warp
#define STAGE_K 1024                           // 16 groups: one a consumer warp
#define MAX_TILES 8                            // tiles a chunk
#define BOX_Q 4096                             // 4 pieces x 8 rows x 128 bytes of quants
#define BOX_S 256                              // 8 rows x 32 bytes of scales
#define SCALES_AT (MAX_TILES * BOX_Q)
#define STAGE_BYTES (MAX_TILES * (BOX_Q + BOX_S))
#define XS_PAD 64                              // bytes between tokens' staged x (banks)
#define BIAS 136.0f
#define RESIDUAL {{ epilogue == "residual" }}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define NINFER_TMA 1
#else
#define NINFER_TMA 0
#endif

struct __align__(64) TmaMap {
    u64 opaque[16];
};

#if NINFER_TMA
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n"
        "}\n" ::"r"(bar), "r"(parity) : "memory");
}
// The box at (x bytes, y rows) of a 2-D `map` into `dst`, completing on `bar`.
__device__ __forceinline__ void tma_box(u32 dst, const TmaMap& map, int x, int y, u32 bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, { %2, %3 }], [%4];"
        ::"r"(dst), "l"((u64)&map), "r"(x), "r"(y), "r"(bar) : "memory");
}
// The box at (0, y rows, z pieces) of the 3-D quant map (pieces of 128 bytes) into `dst`.
__device__ __forceinline__ void tma_box3(u32 dst, const TmaMap& map, int y, int z, u32 bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, { %2, %3, %4 }], [%5];"
        ::"r"(dst), "l"((u64)&map), "r"(0), "r"(y), "r"(z), "r"(bar) : "memory");
}
// The consumers' own barrier (the producer warp never joins it).
__device__ __forceinline__ void consumers_sync() {
    asm volatile("bar.sync 1, %0;" ::"n"(CONSUMERS * 32) : "memory");
}
// d += a * b; `a` a whole A fragment (rows 8..15 zero), built once a stage so that the
// tiles' mmas take it as it is (v73 run 4: built per mma, the moves were a quarter of the
// kernel's instructions).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Nibble pair i of a word as two bf16 136 + q: (k_i, k_{i+4}); the mask and the flip in one
// LOP3 ((v & m) ^ c, both constants in registers: with immediates it takes two).
__device__ __forceinline__ u32 pair(u32 w, int i, u32 m, u32 c) {
    u32 r;
    asm("lop3.b32 %0, %1, %2, %3, 0x6a;" : "=r"(r) : "r"(w >> (4 * i)), "r"(m), "r"(c));
    return r;
}
#endif  // NINFER_TMA

extern "C" __global__ void __launch_bounds__(THREADS, 1)
{{ kernel_name }}(const float* __restrict__ x,
                  const float* residual,
                  float* y,
                  int T, int N, int K, int slots,
                  const __grid_constant__ TmaMap qmap,   // quants: u8 [N, K / 2]
                  const __grid_constant__ TmaMap smap)   // scales: u8 [N, K / 32]
{
#if !NINFER_TMA
    __trap();
#else
    extern __shared__ uint4 smem4[];
    __shared__ __align__(8) u64 full[16], empty[16];
    const u32 raw_base = (u32)__cvta_generic_to_shared(smem4);
    const u32 ring = (raw_base + 1023u) & ~1023u;  // the swizzle's atoms are 1024 bytes
    u8* const after_ring = (u8*)smem4 + (ring - raw_base) + slots * STAGE_BYTES;
    const int xs_stride = 2 * K + XS_PAD;           // bytes a token of staged x
    u8* const xs = after_ring;                      // [TT][K / 8] x 16 bytes
    float* const gsum = (float*)(xs + TT * xs_stride);  // [TT][K / 64]: -136 sum(bf16(x))
    float* const red = gsum + TT * (K / 64);        // [8 slots][8 tiles][TT][8 rows]
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    auto full_bar = [&](int s) { return (u32)__cvta_generic_to_shared(&full[s]); };
    auto empty_bar = [&](int s) { return (u32)__cvta_generic_to_shared(&empty[s]); };

    // This block's run of tiles, its chunks and stages.
    const int tiles = (N + 7) / 8;
    const int t0 = (int)((long long)blockIdx.x * tiles / gridDim.x);
    const int t1 = (int)((long long)(blockIdx.x + 1) * tiles / gridDim.x);
    const int run = t1 - t0;
    const int chunks = (run + MAX_TILES - 1) / MAX_TILES;
    const int kstages = K / STAGE_K;
    // Chunk c: tiles [first(c), first(c + 1)) of the block's, balanced (run * chunks is
    // far below 2^31: 32-bit division, once a chunk).
    auto first = [&](int c) { return t0 + c * run / (chunks > 0 ? chunks : 1); };

    if (threadIdx.x == 0) {
        for (int s = 0; s < slots; ++s) {
            mbar_init(full_bar(s), 1);
            mbar_init(empty_bar(s), CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (warp == CONSUMERS) {
        // Producer: every stage of the run, slots as they free; the weights are never
        // written by a kernel, so the copies go out before the PDL wait.
        // The slot and its use count (the empty barrier's phase) advance by counting.
        int slot = 0, use = 0;
        for (int c = 0; c < chunks; ++c) {
            const int tile0 = first(c), ct = first(c + 1) - tile0;
            const int row = (tile0 + lane) * 8;
            for (int kc = 0; kc < kstages; ++kc) {
                if (use > 0) mbar_wait(empty_bar(slot), (use - 1) & 1);
                if (lane == 0) mbar_expect(full_bar(slot), ct * (BOX_Q + BOX_S));
                __syncwarp();
                if (lane < ct) {
                    const u32 dst = ring + slot * STAGE_BYTES;
                    tma_box3(dst + lane * BOX_Q, qmap, row, kc * 4, full_bar(slot));
                    tma_box(dst + SCALES_AT + lane * BOX_S, smap, kc * 32, row, full_bar(slot));
                }
                if (++slot == slots) {
                    slot = 0;
                    ++use;
                }
            }
        }
        NINFER_PDL_WAIT();
        return;
    }

    NINFER_PDL_WAIT();
    NINFER_PDL_TRIGGER();

    // Stage bf16(x) in fragment order and each group's -136 * sum. Item i = (token, word):
    // 8 consecutive lanes hold one group's words, whose sums meet by shuffles (items come
    // in multiples of 64, so a warp's lanes are all in or all out). Four items' loads go
    // out before any is used: the staging is latency, not work.
    const int kw = K / 8, items = TT * kw;
    constexpr int BATCH = 4, STRIDE = CONSUMERS * 32;
    for (int i0 = threadIdx.x; i0 < items; i0 += BATCH * STRIDE) {
        float4 lo[BATCH], hi[BATCH];
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const int i = i0 + b * STRIDE;
            const int tok = i / kw, w = i - tok * kw;
            lo[b] = hi[b] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (i < items && tok < T) {
                const float4* p = (const float4*)(x + (long long)tok * K + 8 * w);
                lo[b] = __ldg(p);
                hi[b] = __ldg(p + 1);
            }
        }
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const int i = i0 + b * STRIDE;
            if (i >= items) break;
            const int tok = i / kw, w = i - tok * kw;
            const float v[8] = {lo[b].x, lo[b].y, lo[b].z, lo[b].w, hi[b].x, hi[b].y, hi[b].z, hi[b].w};
            bf16_t h[8];
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                h[j] = f32_to_bf16(v[j]);
                sum += bf16_to_f32(h[j]);
            }
            uint4 o;
            o.x = (u32)h[0] | ((u32)h[4] << 16);
            o.y = (u32)h[1] | ((u32)h[5] << 16);
            o.z = (u32)h[2] | ((u32)h[6] << 16);
            o.w = (u32)h[3] | ((u32)h[7] << 16);
            *(uint4*)(xs + tok * xs_stride + w * 16) = o;
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            sum += __shfl_xor_sync(0xffffffffu, sum, 4);
            if ((w & 7) == 0) gsum[tok * (K / 64) + w / 8] = -BIAS * sum;
        }
    }
    consumers_sync();

    const int g = lane >> 2, t = lane & 3;
    const int grp = warp;                   // this warp's group of every stage
    const int gj = grp & 3;                 // its place in its 128-byte piece (grp / 4)
    const bool has_x = g < TT;              // lanes whose A rows are tokens that exist
    // Byte offsets in a tile's quant box ([piece][row][128 bytes], 16-byte chunk c of a row
    // at c ^ row) of this lane's two words of row g: words t and t + 4 of the group.
    const u32 wq0 = ((grp >> 2) * 8 + g) * 128 + ((((2 * gj) ^ g) << 4) | (t << 2));
    const u32 wq1 = ((grp >> 2) * 8 + g) * 128 + ((((2 * gj + 1) ^ g) << 4) | (t << 2));
    const u32 sq0 = (2 * t) * 32 + grp * 2;  // scales of rows 2t and 2t + 1 in a scale box

    float acc[MAX_TILES][2];
    u32 mask = 0x000F000Fu, flip = 0x43084308u;
    // Registers, not immediates (see pair).
    asm volatile("" : "+r"(mask), "+r"(flip));
    int slot = 0, use = 0;  // the stage's slot and its use count (the full barrier's phase)
    for (int c = 0; c < chunks; ++c) {
        const int tile0 = first(c), ct = first(c + 1) - tile0;
#pragma unroll
        for (int m = 0; m < MAX_TILES; ++m) acc[m][0] = acc[m][1] = 0.0f;
        for (int kc = 0; kc < kstages; ++kc) {
            // This warp's x fragments and bias for the stage's group.
            const int gw = (kc * STAGE_K) / 8 + grp * 8;  // the group's first word
            uint4 xa = make_uint4(0, 0, 0, 0), xb = make_uint4(0, 0, 0, 0);
            float bias = 0.0f;
            if (has_x) {
                xa = *(const uint4*)(xs + g * xs_stride + (gw + t) * 16);
                xb = *(const uint4*)(xs + g * xs_stride + (gw + t + 4) * 16);
                bias = gsum[g * (K / 64) + gw / 8];
            }
            // The group's four A fragments (k-slots in the order pair() makes the weights').
            const u32 a0[4] = {xa.x, 0u, xa.y, 0u}, a1[4] = {xa.z, 0u, xa.w, 0u};
            const u32 a2[4] = {xb.x, 0u, xb.y, 0u}, a3[4] = {xb.z, 0u, xb.w, 0u};
            mbar_wait(full_bar(slot), use & 1);
            const u8* const stage = (const u8*)smem4 + (ring - raw_base) + slot * STAGE_BYTES;
#pragma unroll
            for (int m = 0; m < MAX_TILES; ++m) {
                if (m < ct) {
                    const u8* box = stage + m * BOX_Q;
                    const u32 w0 = *(const u32*)(box + wq0);
                    const u32 w1 = *(const u32*)(box + wq1);
                    const u8* sb = stage + SCALES_AT + m * BOX_S;
                    const float s0 = f16_to_f32(*(const f16_t*)(sb + sq0));
                    const float s1 = f16_to_f32(*(const f16_t*)(sb + sq0 + 32));
                    float d[4] = {bias, bias, 0.0f, 0.0f};
                    mma_bf16(d, a0, pair(w0, 0, mask, flip), pair(w0, 1, mask, flip));
                    mma_bf16(d, a1, pair(w0, 2, mask, flip), pair(w0, 3, mask, flip));
                    mma_bf16(d, a2, pair(w1, 0, mask, flip), pair(w1, 1, mask, flip));
                    mma_bf16(d, a3, pair(w1, 2, mask, flip), pair(w1, 3, mask, flip));
                    acc[m][0] = fmaf(s0, d[0], acc[m][0]);
                    acc[m][1] = fmaf(s1, d[1], acc[m][1]);
                }
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_bar(slot));
            if (++slot == slots) {
                slot = 0;
                ++use;
            }
        }
        // The chunk's sums, added in a fixed order: warps 8..15 store theirs, warps 0..7
        // add theirs to them (group q and q + 8 into slot q), then the 8 slots in order.
        if (warp >= 8 && has_x) {
#pragma unroll
            for (int m = 0; m < MAX_TILES; ++m) {
                if (m < ct) {
                    float* r = red + (((warp - 8) * MAX_TILES + m) * TT + g) * 8 + 2 * t;
                    r[0] = acc[m][0];
                    r[1] = acc[m][1];
                }
            }
        }
        consumers_sync();
        if (warp < 8 && has_x) {
#pragma unroll
            for (int m = 0; m < MAX_TILES; ++m) {
                if (m < ct) {
                    float* r = red + ((warp * MAX_TILES + m) * TT + g) * 8 + 2 * t;
                    r[0] = acc[m][0] + r[0];
                    r[1] = acc[m][1] + r[1];
                }
            }
        }
        consumers_sync();
        for (int o = threadIdx.x; o < ct * 8 * TT; o += CONSUMERS * 32) {
            const int tok = o / (ct * 8), rr = o - tok * (ct * 8);
            const int row = tile0 * 8 + rr;
            if (tok < T && row < N) {
                const int tile = rr >> 3, ri = rr & 7;
                float sum = 0.0f;
#pragma unroll
                for (int q = 0; q < 8; ++q) sum += red[((q * MAX_TILES + tile) * TT + tok) * 8 + ri];
                const long long at = (long long)tok * N + row;
#if RESIDUAL
                sum += residual[at];
#endif
                y[at] = sum;
            }
        }
        consumers_sync();
    }
#endif
}
