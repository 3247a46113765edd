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
  shared memory (1024-byte aligned). Step st:
    1. X of step st + 2 in flight by cp.async, this thread's raw W chunks of step st + 2
       in flight into registers;
    2. the wgmmas of step st issued (4 k16 slices x MT) and committed;
    3. W of step st + 1 (raw since step st - 1) decoded into its stage while they run;
    4. wgmma.wait_group 1 (step st - 1's wgmmas done: its stage is free for step st + 3),
       X of st + 1 landed, a proxy fence (the generic-proxy stores made visible to the
       async proxy wgmma reads through), one barrier.
  Rows past T are zero (cp.async's zero fill); rows past N decode row N - 1 and are not
  stored.

  Accumulator d[i] of an m64 tile (thread l of warp w in the warpgroup): row
  16 w + l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2.

  Params: format (sym_int, 4 or 8 bits), bm, bn, wgs, acc (= bn / 2), epilogue ("none" |
  "residual"). Needs K % 64 == 0. Dynamic shared memory: 4 * (BM + BN) * 128 + 1024 bytes.
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
#define XVECS (BM * BK / 8)                        // 16-byte pieces of an X tile
#define STAGES 4
#define ROW_BYTES 128                              // BK bf16
#define STAGE_BYTES ((BM + BN) * ROW_BYTES)
#if (CHUNKS * SUB) % THREADS != 0 || SUB > 2 || XVECS % THREADS != 0 || BM % (64 * WGS) != 0 || NACC * 2 != BN
#error "a16_wgmma: the tile does not divide among the threads"
#endif

// wgmma is sm_90a's alone: built for another target the kernel is a stub that traps (the
// launch routes other GPUs to linear/a16_pipe.cu).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NINFER_WGMMA 1
#else
#define NINFER_WGMMA 0
#endif

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
                  int T, int N, int K)
{
#if !NINFER_WGMMA
    __trap();
#else
    extern __shared__ uint4 smem4[];
    const u32 raw_base = (u32)__cvta_generic_to_shared(smem4);
    const u32 base = (raw_base + 1023u) & ~1023u;          // swizzle atoms need 1024 alignment
    u8* const smem = (u8*)smem4 + (base - raw_base);
    // Stage st: X tile at st * STAGE_BYTES, W tile BM rows after it.
    auto xs = [&](int stage) { return smem + stage * STAGE_BYTES; };
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
    uint4 next[CPT][CHUNK_VECS], ahead[CPT][CHUNK_VECS];
    float next_d[CPT], ahead_d[CPT];
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
    // X: this thread's 16-byte pieces are piece xp of rows xr0 + i * THREADS / 8, at one
    // swizzled offset plus a multiple of 8 rows.
    constexpr int X_ROWS_STEP = THREADS / 8;
    const int xr0 = threadIdx.x >> 3;
    const int xp = threadIdx.x & 7;
    const u32 xdst = xr0 * ROW_BYTES + ((xp ^ (xr0 & 7)) * 16);
    const bf16_t* xsrc = x + (long long)(m0 + xr0) * K + xp * 8;
    const long long xstride = (long long)X_ROWS_STEP * K;
    auto load_x = [&](int step, int stage) {
        u8* xt = xs(stage) + xdst;
#pragma unroll
        for (int i = 0; i < XVECS / THREADS; ++i) {
            const bool in = m0 + xr0 + i * X_ROWS_STEP < T;
            cp_async16(xt + i * X_ROWS_STEP * ROW_BYTES, in ? xsrc + i * xstride + step * BK : x, in);
        }
    };

    float acc[MT][NACC];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int i = 0; i < NACC; ++i) acc[m][i] = 0.0f;

    // Prologue: X of steps 0 and 1 in flight (one cp.async group each), W of step 0
    // decoded, W of step 1 in registers.
    load_x(0, 0);
    cp_async_commit();
    if (steps > 1) load_x(1, 1);
    cp_async_commit();
    load_w(0, next, next_d);
    store_w(next, next_d, 0);
    if (steps > 1) load_w(1, next, next_d);
    cp_async_wait_one();
    fence_proxy_async();
    __syncthreads();

    for (int st = 0; st < steps; ++st) {
        const int cur = st & (STAGES - 1);
        if (st + 2 < steps) {
            load_x(st + 2, (st + 2) & (STAGES - 1));
            load_w(st + 2, ahead, ahead_d);
        }
        cp_async_commit();  // (empty past the last steps: the group count stays one a step)

        const u32 xa = base + cur * STAGE_BYTES + wg * (BM / WGS) * ROW_BYTES;
        const u32 wb = base + cur * STAGE_BYTES + BM * ROW_BYTES;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            const u64 db = smem_desc(wb + kk * 32);
#pragma unroll
            for (int m = 0; m < MT; ++m) wgmma_m64k16(acc[m], smem_desc(xa + m * 64 * ROW_BYTES + kk * 32), db);
        }
        wgmma_commit();

        if (st + 1 < steps) store_w(next, next_d, (st + 1) & (STAGES - 1));
#pragma unroll
        for (int i = 0; i < CPT; ++i) {
            next_d[i] = ahead_d[i];
#pragma unroll
            for (int v = 0; v < CHUNK_VECS; ++v) next[i][v] = ahead[i][v];
        }
        wgmma_wait<1>();      // step st - 1's wgmmas are done: its stage may be refilled
        cp_async_wait_one();  // step st + 1's X has landed (st + 2's may be in flight)
        fence_proxy_async();
        __syncthreads();
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
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                if (col + e < N) {
                    float v = acc[m][i + e];
{%- if epilogue == "residual" %}
                    v += bf16_to_f32(residual[o + e]);
{%- endif %}
                    y[o + e] = f32_to_bf16(v);
                }
            }
        }
    }
#endif  // NINFER_WGMMA
}
