{#
  Tiled linear on tensor cores with a three-stage pipeline (the A16 route for 4- and 8-bit
  symmetric integer weights): Y[T,N] = X[T,K] * W[N,K]^T (+ residual), X and Y bf16, f32
  accumulation. The same arguments and results as linear/mma_tiled.cu (every weight is
  rounded once to bf16 from its exact f32 value scale * q, as there); built to keep the
  tensor cores fed where that kernel waits on each K step's loads and decodes a group per
  thread.

  A block computes a BM x BN tile of Y (BM along T, BN along N), K in steps of BK = 64.
  Shared memory holds three stages, each an X tile (BM x 64 bf16) and the W tile decoded to
  bf16 (BN x 64), rows padded by 8 bf16 (144-byte rows: the eight rows of an ldmatrix
  fall in distinct banks). While the warps multiply step s: the X tile of step s + 2 is in
  flight by cp.async; each thread's raw 32-weight W chunks of step s + 2 are in flight into
  registers; and the chunks of step s + 1 (loaded during step s - 1) are decoded and stored
  a quarter per k16 slice, between the slice's mmas, so that the decode's ALU work issues
  beside the tensor cores' instead of after them. One barrier per step.

  Decoding a chunk of 32 weights (one row, one scale): linear/a16_chunk.cuh.

  Warps: WARPS_M x WARPS_N, each a WM x WN sub-tile (MT x NT mma tiles of 16 x 8); A and B
  fragments by ldmatrix.x4. Rows past T are zero (cp.async's zero fill); rows past N
  decode row N - 1 and are not stored.

  Params: format (sym_int, 4 or 8 bits), bm, bn, warps_m, warps_n, epilogue ("none" |
  "residual"). Needs K % 64 == 0. Dynamic shared memory: 3 * (BM + BN) * 72 * 2 bytes.
#}
{% include "common/types.cuh" %}
{% include "common/mma.cuh" %}
{{ format_code }}
{% include "linear/a16_chunk.cuh" %}

#define BM {{ bm }}
#define BN {{ bn }}
#define BK 64
#define WARPS_M {{ warps_m }}
#define WARPS_N {{ warps_n }}
#define WM (BM / WARPS_M)
#define WN (BN / WARPS_N)
#define MT (WM / 16)
#define NT (WN / 8)
#define LDS (BK + 8)
#define THREADS (WARPS_M * WARPS_N * 32)
#define CHUNKS (BN * BK / CHUNK)                   // chunks of a W tile
#define CPT ((CHUNKS + THREADS - 1) / THREADS)     // chunks per thread and step
#define XVECS (BM * BK / 8)                        // 16-byte pieces of an X tile
#define STAGES 3
// Up to 256 threads, two blocks an SM (at most 128 registers a thread), so that one
// block's barrier overlaps the other's multiplies; 512-thread blocks are one an SM.
#define MIN_BLOCKS (THREADS <= 256 && BM * BN <= 128 * 128 ? 2 : 1)
#if (CHUNKS % THREADS != 0 && THREADS % CHUNKS != 0) || XVECS % THREADS != 0 || NT % 2 != 0
#error "a16_pipe: the tile does not divide among the threads"
#endif

__device__ __forceinline__ void ldmatrix_x4(u32* r, const bf16_t* p) {
    const u32 a = (u32)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 { %0, %1, %2, %3 }, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const u8* __restrict__ q2, const u8* __restrict__ s2,
                  long long q_row_bytes, long long s_row_bytes,
                  const bf16_t* __restrict__ x,
                  const bf16_t* residual,
                  bf16_t* y,
                  int T, int N, int K)
{
    extern __shared__ uint4 smem4[];
    bf16_t* xs = (bf16_t*)smem4;            // [STAGES][BM][LDS]
    bf16_t* ws = xs + STAGES * BM * LDS;    // [STAGES][BN][LDS]

    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int g = lane >> 2;
    const int t4 = lane & 3;
    const int wm = warp / WARPS_N;
    const int wn = warp % WARPS_N;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int steps = K / BK;

    // This thread's chunks of each W tile: chunk c = threadIdx.x + i * THREADS (c < CHUNKS)
    // is row c / 2, half c % 2 (BK = 2 chunks a row).
    const u8* qrow[CPT];
    const u8* srow[CPT];
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
        const int c = min(threadIdx.x + i * THREADS, CHUNKS - 1);
        const int row = min(n0 + (c >> 1), N - 1);
        qrow[i] = q + (long long)row * q_row_bytes + (c & 1) * CHUNK_BYTES;
        srow[i] = s + (long long)row * s_row_bytes;
    }
    // Two register sets of raw chunks: `next` (step s + 1, decoded during step s) and
    // `ahead` (step s + 2, in flight during step s).
    uint4 next[CPT][CHUNK_VECS], ahead[CPT][CHUNK_VECS];
    float next_d[CPT], ahead_d[CPT];
    auto load_w = [&](int step, uint4 (&raw)[CPT][CHUNK_VECS], float (&d)[CPT]) {
#pragma unroll
        for (int i = 0; i < CPT; ++i) {
            const u8* p = qrow[i] + (long long)step * (BK * FMT_BITS / 8);
#pragma unroll
            for (int v = 0; v < CHUNK_VECS; ++v) raw[i][v] = __ldg((const uint4*)p + v);
            const int c = threadIdx.x + i * THREADS;
            d[i] = fmt_group_scale(srow[i], (step * BK + (c & 1) * CHUNK) / FMT_GROUP);
        }
    };
    // Piece v (weights [8 v, 8 v + 8)) of each of this thread's chunks into stage `stage`.
    auto store_piece = [&](const uint4 (&raw)[CPT][CHUNK_VECS], const float (&d)[CPT], int stage, int v) {
#pragma unroll
        for (int i = 0; i < CPT; ++i) {
            const int c = threadIdx.x + i * THREADS;
            if (CHUNKS % THREADS == 0 || c < CHUNKS)
                *(uint4*)(ws + (stage * BN + (c >> 1)) * LDS + (c & 1) * CHUNK + 8 * v) =
                    decode_piece(raw[i], chunk_scale(d[i]), v);
        }
    };
    auto load_x = [&](int step, int stage) {
#pragma unroll
        for (int i = 0; i < XVECS / THREADS; ++i) {
            const int v = threadIdx.x + i * THREADS;
            const int r = v / (BK / 8);
            const int c = (v % (BK / 8)) * 8;
            const bool in = m0 + r < T;
            const bf16_t* src = x + (in ? (long long)(m0 + r) * K + step * BK + c : 0);
            cp_async16(xs + (stage * BM + r) * LDS + c, src, in);
        }
    };

    MmaAccum16x8 acc[MT][NT];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_zero(acc[i][j]);

    // ldmatrix addresses: lane l gives row l % 16 of the A tile at column 8 (l / 16); and
    // row (l % 8) + 8 (l / 16) of the B tile at column 8 ((l / 8) % 2).
    const int a_row = wm * WM + (lane & 15);
    const int a_col = (lane >> 4) * 8;
    const int b_row = wn * WN + (lane & 7) + (lane >> 4) * 8;
    const int b_col = ((lane >> 3) & 1) * 8;

    // Prologue: X of steps 0 and 1 in flight (one cp.async group each), W of step 0
    // decoded, W of step 1 in registers.
    load_x(0, 0);
    cp_async_commit();
    if (steps > 1) load_x(1, 1);
    cp_async_commit();
    load_w(0, next, next_d);
#pragma unroll
    for (int v = 0; v < 4; ++v) store_piece(next, next_d, 0, v);
    if (steps > 1) load_w(1, next, next_d);
    cp_async_wait_one();
    __syncthreads();

    int cur = 0;
    for (int st = 0; st < steps; ++st) {
        const int s1 = cur == STAGES - 1 ? 0 : cur + 1;   // stage of step st + 1
        const int s2 = s1 == STAGES - 1 ? 0 : s1 + 1;     // stage of step st + 2
        // Stage s2 was last read in step st - 1: free since the barrier that ended it.
        if (st + 2 < steps) {
            load_x(st + 2, s2);
            load_w(st + 2, ahead, ahead_d);
        }
        cp_async_commit();  // (empty past the last steps: the group count stays one a step)
        const bf16_t* xa = xs + (cur * BM + a_row) * LDS + a_col;
        const bf16_t* wb = ws + (cur * BN + b_row) * LDS + b_col;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            u32 af[MT][4];
#pragma unroll
            for (int i = 0; i < MT; ++i) ldmatrix_x4(af[i], xa + i * 16 * LDS + 16 * kk);
#pragma unroll
            for (int j = 0; j < NT; j += 2) {
                u32 bf[4];  // n-tiles j and j + 1: (b0, b1) each
                ldmatrix_x4(bf, wb + j * 8 * LDS + 16 * kk);
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    mma_bf16_16x8x16(acc[i][j], af[i], bf);
                    mma_bf16_16x8x16(acc[i][j + 1], af[i], bf + 2);
                }
            }
            // A quarter of step st + 1's W (stage s1: last read in step st - 2).
            if (st + 1 < steps) store_piece(next, next_d, s1, kk);
        }
#pragma unroll
        for (int i = 0; i < CPT; ++i) {
            next_d[i] = ahead_d[i];
#pragma unroll
            for (int v = 0; v < CHUNK_VECS; ++v) next[i][v] = ahead[i][v];
        }
        cp_async_wait_one();  // step st + 1's X has landed (st + 2's may be in flight)
        __syncthreads();
        cur = s1;
    }

    // Accumulator element e of tile (i, j): row g (+8 for e >= 2), column 2*t4 + (e & 1).
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int row = m0 + wm * WM + i * 16 + g + (e >= 2 ? 8 : 0);
                const int col = n0 + wn * WN + j * 8 + 2 * t4 + (e & 1);
                if (row < T && col < N) {
                    float v = acc[i][j].c[e];
                    const long long o = (long long)row * N + col;
{%- if epilogue == "residual" %}
                    v += bf16_to_f32(residual[o]);
{%- endif %}
                    y[o] = f32_to_bf16(v);
                }
            }
        }
    }
}
