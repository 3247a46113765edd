{#
  Tiled linear on Hopper's warpgroup tensor cores (the A16 route for 4- and 8-bit symmetric
  integer weights on sm_90a): Y[T,N] = X[T,K] * W[N,K]^T (+ residual), X and Y bf16, f32
  accumulation. The same arguments and results as linear/a16_pipe.cu (every weight rounded
  once to bf16 from its exact f32 value scale * q: linear/a16_chunk.cuh).

  Why: mma.sync reads both operands through the registers (ldmatrix), which caps
  a16_pipe.cu at ~35% of cuBLAS (bench/kernels v35-v38). wgmma.mma_async reads A and B
  from shared memory itself and runs asynchronously, so the warps that issue it are free
  to decode the next W tile while the tensor cores multiply the current one.

  A block computes a BM x BN tile of Y (BM along T, BN along N) with WGS warpgroups; each
  owns BM / WGS rows of T as MT m64 tiles and issues m64 x BN x k16 wgmmas (BN = 128 or
  256). K in steps of BK = 64: one step's X tile (BM x 64 bf16) and decoded W tile (BN x 64
  bf16) are 128-byte rows in the 128-byte swizzle (16-byte piece j of row r at piece
  j ^ (r % 8)), the K-major layout wgmma's descriptors name, in four stages of dynamic
  shared memory (1024-byte aligned). The X tiles come by TMA (one thread issues a step's
  copy, which completes on the stage's mbarrier; rows past T arrive as zeros); the W
  tiles are decoded by every thread from raw chunks it loaded a step ahead. Step st:
    1. X of step st + 2 requested; this thread's raw W chunks of step st + 2 in flight
       into the register set step st's own chunks used (two sets, alternating: the loop
       body is written twice, so no copy waits on a load);
    2. X of step st awaited (its mbarrier), the wgmmas of step st issued (4 k16 slices x
       MT) and committed;
    3. W of step st + 1 (raw since step st - 1) decoded into its stage while they run;
    4. wgmma.wait_group 1 (step st - 1's wgmmas done: its stage is free for step st + 3),
       a proxy fence (the decoded W's generic stores made visible to the async proxy that
       wgmma reads through), one barrier.
  Rows past N decode row N - 1 and are not stored.

  Accumulator d[i] of an m64 tile (thread l of warp w in the warpgroup): row
  16 w + l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2.

  Params: format (sym_int, 4 or 8 bits), bm, bn, wgs, acc (= bn / 2), epilogue ("none" |
  "residual"). Needs K % 64 == 0. Dynamic shared memory: 4 * (BM + BN) * 128 + 1024 bytes.
  The last parameter is X's TMA map (bf16 [T, K], boxes of 64 x BM, 128-byte swizzle).
#}
{% include "common/types.cuh" %}
{{ format_code }}
{% include "linear/a16_chunk.cuh" %}

#define BM {{ bm }}
#define BN {{ bn }}
#define BK 64
#define WGS {{ wgs }}
#define THREADS (WGS * 128)
#define MT (BM / WGS / 64)                         // m64 tiles a warpgroup
#define NACC {{ acc }}                             // accumulators a thread per m64 tile
#define CHUNKS (BN * BK / CHUNK)                   // chunks of a W tile
// Threads a chunk (1, or 2 with more threads than chunks: each decodes half its pieces)
// and chunks a thread per step.
#define SUB (THREADS > CHUNKS ? THREADS / CHUNKS : 1)
#define CPT (CHUNKS * SUB / THREADS)
#define PIECES (4 / SUB)                           // 16-byte pieces a thread decodes a chunk
#define STAGES 4
#define ROW_BYTES 128                              // BK bf16
#define STAGE_BYTES ((BM + BN) * ROW_BYTES)
#if (CHUNKS * SUB) % THREADS != 0 || SUB > 2 || BM % (64 * WGS) != 0 || NACC * 2 != BN
#error "a16_wgmma: the tile does not divide among the threads"
#endif

// wgmma is sm_90a's alone: built for another target the kernel is a stub that traps (the
// launch routes other GPUs to linear/a16_pipe.cu).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NINFER_WGMMA 1
#else
#define NINFER_WGMMA 0
#endif

// A TMA tensor map (CUtensorMap), passed by value.
struct __align__(64) TmaMap {
    u64 opaque[16];
};

#if NINFER_WGMMA
// Shared-memory matrix descriptor of a K-major tile in the 128-byte swizzle whose 8-row
// atoms are 1024 bytes apart (stride byte offset); the leading byte offset is unused for
// this layout (set to 16 bytes, as is customary).
__device__ __forceinline__ u64 smem_desc(u32 addr) {
    return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(16 >> 4) << 16) | ((u64)(1024 >> 4) << 32) |
           (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
// The X tile of (k0, m0) into `dst` by TMA; `bar` expects its bytes.
__device__ __forceinline__ void tma_x(u32 dst, const TmaMap& map, int k0, int m0, u32 bar) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(BM * ROW_BYTES) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, { %2, %3 }], [%4];"
        ::"r"(dst), "l"((u64)&map), "r"(k0), "r"(m0), "r"(bar) : "memory");
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

// d += A (64 x 16, descriptor da) * B (16 x BN, K-major, descriptor db).
__device__ __forceinline__ void wgmma_m64k16(float (&d)[NACC], u64 da, u64 db) {
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n{{ bn }}k16.f32.bf16.bf16 "
        "{ {% for i in range(end=acc) %}%{{ i }}{% if not loop.last %}, {% endif %}{% endfor %} }, "
        "%{{ acc }}, %{{ acc + 1 }}, 1, 1, 1, 0, 0;\n"
        "}\n"
        : {% for i in range(end=acc) %}"+f"(d[{{ i }}]){% if not loop.last %}, {% endif %}{% endfor %}
        : "l"(da), "l"(db));
}
#endif  // NINFER_WGMMA

extern "C" __global__ void __launch_bounds__(THREADS, 1)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const u8* __restrict__ q2, const u8* __restrict__ s2,
                  long long q_row_bytes, long long s_row_bytes,
                  const bf16_t* __restrict__ x,
                  const bf16_t* residual,
                  bf16_t* y,
                  int T, int N, int K,
                  const __grid_constant__ TmaMap xmap)  // X [T, K], boxes of 64 x BM
{
#if !NINFER_WGMMA
    __trap();
#else
    extern __shared__ uint4 smem4[];
    __shared__ __align__(8) u64 xfull[STAGES];  // a stage's X tile has landed
    const u32 raw_base = (u32)__cvta_generic_to_shared(smem4);
    const u32 base = (raw_base + 1023u) & ~1023u;          // swizzle atoms need 1024 alignment
    u8* const smem = (u8*)smem4 + (base - raw_base);
    // Stage st: X tile at st * STAGE_BYTES, W tile BM rows after it.
    auto ws = [&](int stage) { return smem + stage * STAGE_BYTES + BM * ROW_BYTES; };

    const int wg = threadIdx.x >> 7;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int steps = K / BK;

    // This thread's chunks of each W tile: chunk c = threadIdx.x / SUB + i * (THREADS / SUB)
    // is row c / 2, half c % 2 (BK = 2 chunks a row); the thread decodes pieces
    // [sub * PIECES, (sub + 1) * PIECES) of it. Its rows differ by multiples of 8, so the
    // swizzled places of its pieces are one offset plus a multiple of 8 rows.
    const int sub = SUB == 1 ? 0 : threadIdx.x % SUB;
    const int c0 = threadIdx.x / SUB;
    const u8* qrow[CPT];
    const u8* srow[CPT];
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
        const int c = c0 + i * (THREADS / SUB);
        const int row = min(n0 + (c >> 1), N - 1);
        qrow[i] = q + (long long)row * q_row_bytes + (c & 1) * CHUNK_BYTES;
        srow[i] = s + (long long)row * s_row_bytes;
    }
    const int wr0 = c0 >> 1;
    u32 wdst[PIECES];  // byte offsets in a W tile of this thread's pieces of its first chunk
#pragma unroll
    for (int v = 0; v < PIECES; ++v)
        wdst[v] = wr0 * ROW_BYTES + ((((c0 & 1) * 4 + sub * PIECES + v) ^ (wr0 & 7)) * 16);
    constexpr int W_ROWS_STEP = THREADS / SUB / 2;  // rows between a thread's chunks
    static_assert(W_ROWS_STEP % 8 == 0 || CPT == 1, "a thread's chunk rows keep their swizzle");
    // Raw W chunks: even steps' in one register set, odd steps' in the other.
    uint4 even[CPT][CHUNK_VECS], odd[CPT][CHUNK_VECS];
    float even_d[CPT], odd_d[CPT];
    auto load_w = [&](int step, uint4 (&raw)[CPT][CHUNK_VECS], float (&d)[CPT]) {
#pragma unroll
        for (int i = 0; i < CPT; ++i) {
            const u8* p = qrow[i] + (long long)step * (BK * FMT_BITS / 8);
#pragma unroll
            for (int v = 0; v < CHUNK_VECS; ++v) raw[i][v] = __ldg((const uint4*)p + v);
            d[i] = fmt_group_scale(srow[i], (step * BK + (c0 & 1) * CHUNK) / FMT_GROUP);
        }
    };
    auto store_w = [&](const uint4 (&raw)[CPT][CHUNK_VECS], const float (&d)[CPT], int stage) {
        u8* w = ws(stage);
#pragma unroll
        for (int i = 0; i < CPT; ++i) {
            const ChunkScale k = chunk_scale(d[i]);
            // This thread's words of the chunk, chosen by selects (an index that depends on
            // the thread would put the raw chunk in local memory).
            const u32* all = (const u32*)raw[i];
            u32 mine[PIECES * PIECE_WORDS];
#pragma unroll
            for (int j = 0; j < PIECES * PIECE_WORDS; ++j)
                mine[j] = SUB == 1 || sub == 0 ? all[j] : all[j + PIECES * PIECE_WORDS];
#pragma unroll
            for (int v = 0; v < PIECES; ++v)
                *(uint4*)(w + wdst[v] + i * W_ROWS_STEP * ROW_BYTES) = decode_words(mine + v * PIECE_WORDS, k);
        }
    };
    auto bar = [&](int stage) { return (u32)__cvta_generic_to_shared(&xfull[stage]); };
    auto load_x = [&](int step) {
        if (threadIdx.x == 0) tma_x(base + (step & (STAGES - 1)) * STAGE_BYTES, xmap, step * BK, m0, bar(step & (STAGES - 1)));
    };
    // Step `step` is the (step / STAGES)-th use of its stage: its mbarrier's phase parity.
    auto wait_x = [&](int step) { mbar_wait(bar(step & (STAGES - 1)), (step / STAGES) & 1); };

    float acc[MT][NACC];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int i = 0; i < NACC; ++i) acc[m][i] = 0.0f;

    // Prologue: X of steps 0 and 1 requested, W of step 0 decoded, W of step 1 in the odd
    // register set.
    if (threadIdx.x == 0) {
#pragma unroll
        for (int i = 0; i < STAGES; ++i) mbar_init(bar(i), 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    load_x(0);
    if (steps > 1) load_x(1);
    load_w(0, even, even_d);
    store_w(even, even_d, 0);
    if (steps > 1) load_w(1, odd, odd_d);
    fence_proxy_async();
    __syncthreads();

    // One step; `mine` holds the raw W of step st (free now), `theirs` that of step st + 1.
    auto run_step = [&](int st, uint4 (&mine)[CPT][CHUNK_VECS], float (&mine_d)[CPT],
                    const uint4 (&theirs)[CPT][CHUNK_VECS], const float (&theirs_d)[CPT]) {
        const int cur = st & (STAGES - 1);
        if (st + 2 < steps) {
            load_x(st + 2);
            load_w(st + 2, mine, mine_d);
        }
        const u32 xa = base + cur * STAGE_BYTES + wg * (BM / WGS) * ROW_BYTES;
        const u32 wb = base + cur * STAGE_BYTES + BM * ROW_BYTES;
        wait_x(st);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            const u64 db = smem_desc(wb + kk * 32);
#pragma unroll
            for (int m = 0; m < MT; ++m) wgmma_m64k16(acc[m], smem_desc(xa + m * 64 * ROW_BYTES + kk * 32), db);
        }
        wgmma_commit();
        if (st + 1 < steps) store_w(theirs, theirs_d, (st + 1) & (STAGES - 1));
        wgmma_wait<1>();      // step st - 1's wgmmas are done: its stage may be refilled
        fence_proxy_async();
        __syncthreads();
    };
    for (int st = 0; st < steps; st += 2) {
        run_step(st, even, even_d, odd, odd_d);
        if (st + 1 < steps) run_step(st + 1, odd, odd_d, even, even_d);
    }
    wgmma_wait<0>();

    const int warp = (threadIdx.x >> 5) & 3;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int m = 0; m < MT; ++m) {
        const int row0 = m0 + wg * (BM / WGS) + m * 64 + warp * 16 + (lane >> 2);
#pragma unroll
        for (int i = 0; i < NACC; i += 2) {
            const int row = row0 + ((i >> 1) & 1) * 8;
            const int col = n0 + (i >> 2) * 8 + 2 * (lane & 3);
            if (row >= T) continue;
            const long long o = (long long)row * N + col;
            float v0 = acc[m][i], v1 = acc[m][i + 1];
            if ((N & 1) == 0 && col + 1 < N) {  // both columns, one aligned 4-byte store
{%- if epilogue == "residual" %}
                const u32 r2 = *(const u32*)(residual + o);
                v0 += bf16_to_f32((bf16_t)(r2 & 0xFFFFu));
                v1 += bf16_to_f32((bf16_t)(r2 >> 16));
{%- endif %}
                *(u32*)(y + o) = pack_bf16x2(v0, v1);
            } else if (col < N) {
{%- if epilogue == "residual" %}
                v0 += bf16_to_f32(residual[o]);
                if (col + 1 < N) v1 += bf16_to_f32(residual[o + 1]);
{%- endif %}
                y[o] = f32_to_bf16(v0);
                if (col + 1 < N) y[o + 1] = f32_to_bf16(v1);
            }
        }
    }
#endif  // NINFER_WGMMA
}
