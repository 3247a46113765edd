{#
  Bandwidth-first small-T linear: Y[T,N] = X[T,K] * W[N,K]^T (+ residual), W in a
  symmetric integer format (sym_int: q4_g64, q5_g64, q6_g64, q8_g32, ...), X and Y f32
  (act = "f32", the exact route) or bf16 (act = "bf16"), f32 accumulation. Up to `tt`
  columns per launch (the host tiles larger T); the weights are read once for all columns.

  Work split. A warp owns `rows` consecutive output rows; a block holds `warps` warps. A row
  is cut into chunks of 32 weights (32 * FMT_BITS / 8 bytes: 16 B for 4-bit, 24 B for 6-bit,
  32 B for 8-bit); lane l takes chunks l, l + 32, ... of all the warp's rows at once, so
  each activation it reads serves `rows` rows. Each step first issues the loads of
  `unroll` chunks of every row (16-byte vector loads that bypass L1) and their scales,
  then converts and multiplies: `unroll * rows` chunk loads in flight per lane.

  Activations. K is cut into slabs of `slab` chunks (a kernel argument, sized by the host
  to the shared memory it grants: tt * slab * 144 bytes). At the first iteration of a slab,
  with that iteration's weight loads already in flight, the block stages the slab's
  activations of every column in shared memory as f32, with a 16-byte pad after each chunk
  so that the 32 lanes' 16-byte reads (one chunk each, 144 bytes apart) hit distinct banks.
  (Read straight from global memory, each lane's 128 contiguous bytes per chunk made every
  warp load touch 32 cache lines: the first version of this kernel was bound by that.)

  Conversion without the int-to-float unit: a code moved into the low mantissa bits of the
  float 2^23 (PRMT of a byte for 4- and 8-bit codes, funnel shift + LOP3 otherwise), its
  sign bit flipped (offset binary), is the float 2^23 + 2^(B-1) + q exactly; one FADD gives
  q. Per weight at T = 1: PRMT + FADD + FFMA (+ 3/8 LOP for 4-bit nibble splits). A chunk's
  T partial sums are scaled once by its group's f32 scale into the accumulators; a warp
  shuffle reduces them at the end.

  Row groups. A block covers ROWS * WARPS rows (a row group) at a time and walks groups
  blockIdx.x, blockIdx.x + gridDim.x, ...: launched with one block per group it is the
  classic grid; launched with fewer (the persistent grid: about as many blocks as fit on
  the device at once) each block loops over several groups, and when K fits one slab it
  stages the activations once for all of them.

  Prologue, applied while the activations are staged (so the op before the GEMV needs no
  launch of its own); `x` below is what the kernel reads, X what it multiplies:
    none       X = x
    rmsnorm    X[t,k] = x[t,k] * rsqrt(mean_k(x[t,:]^2) + eps) * w[k]        (plain weight)
    rmsnorm1p  X[t,k] = x[t,k] * rsqrt(mean_k(x[t,:]^2) + eps) * (1 + w[k])  (zero-centred)
    swiglu     X[t,k] = silu(x[t,k]) * x[t,K+k]: x is a gate_up matrix of row stride 2K
  The norm's sum of squares is every block's own (f32, strided per thread, then a warp and
  a block reduction, as templates/norm/rmsnorm.cu), over the whole row from global memory,
  once per block, before the first slab; the products are written as rmsnorm.cu writes
  them, (x * inv_rms) * scale. SwiGLU is templates/elementwise/pointwise.cu's expression:
  silu = g / (1 + expf(-g)) and the product, with _rn intrinsics (f32).
  `pw` (f32, K) is the norm weight, `eps` the norm's epsilon; both unused otherwise.

  Direct mode (`direct = true`; one column, K of at most 32 * unroll chunks, the host
  checks): no block staging; every warp reads and normalises the whole row itself and
  walks row groups of `rows` rows (see the comment at the kernel below). Its RMS prologues
  multiply by w only and apply 1 / rms to the row sums: (x * w) . W * inv_rms.

  Params: format, tt (max columns), rows (rows per warp), warps (per block), unroll
  (chunks per row per iteration), epilogue ("none" | "residual": Y = X W^T + R, R may be
  Y itself), act ("f32" | "bf16"), prologue ("none" | "rmsnorm" | "rmsnorm1p" | "swiglu";
  absent means "none"), direct (bool; absent means false).
  Weight planes: row r's quants at q + r*q_row_bytes, its scales at s + r*s_row_bytes.

  Programmatic dependent launch (common/pdl.cuh): a block's first step of weight loads (its
  first row group's first `unroll` chunks of every row, and their scales, into registers)
  is issued before NINFER_PDL_WAIT(); the wait opens the block's first staging, before the
  RMS prologue's sum of squares and the first read of x. Weights and scales are uploaded
  once and never written by a kernel; nothing global is written before the wait. A block
  with no row group or a row of no chunk never stages, so it waits at entry: every thread
  waits exactly once on every path (staging is block-uniform).
#}
{%- set prologue = prologue | default(value="none") %}
{%- set direct = direct | default(value=false) %}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
{{ format_code }}

#define TT {{ tt }}
#define ROWS {{ rows }}
#define WARPS {{ warps }}
#define UNROLL {{ unroll }}
#define CN 32                 // weights per chunk
#define CW FMT_BITS           // 32-bit words per chunk (32 * FMT_BITS / 32)
#if FMT_GROUP % CN != 0
#error "gemv_stream needs groups of a multiple of 32 weights"
#endif
#define CHUNKS_PER_GROUP (FMT_GROUP / CN)
#define XS_CHUNK (CN + 4)     // floats per staged chunk: 32 activations and a 16-byte pad
#define BLOCK (WARPS * 32)
#define STEP (32 * UNROLL)  // chunks of a row per step
{%- if prologue == "rmsnorm" or prologue == "rmsnorm1p" %}
#define PRO_RMS 1
{%- else %}
#define PRO_RMS 0
{%- endif %}
{%- if epilogue == "residual" %}
#define RESIDUAL 1
{%- else %}
#define RESIDUAL 0
{%- endif %}
{%- if prologue == "swiglu" %}
#define PRO_SWIGLU 1
{%- else %}
#define PRO_SWIGLU 0
{%- endif %}
// 8-activation units each thread loads before storing any (fewer with a prologue's second
// operand, so that staging does not raise the kernel's register count).
#if PRO_RMS || PRO_SWIGLU
#define STAGE_BATCH 2
#else
#define STAGE_BATCH 4
#endif

{%- if act == "bf16" %}
typedef bf16_t act_t;
// Eight activations from 16 aligned bytes.
__device__ __forceinline__ void load_x8(const act_t* p, float* o) {
    const uint4 u = __ldg((const uint4*)p);
    const u32 w[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        o[2 * i] = __uint_as_float(w[i] << 16);
        o[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}
__device__ __forceinline__ float act_load(const act_t* p, long long i) { return bf16_to_f32(p[i]); }
__device__ __forceinline__ act_t act_store(float v) { return f32_to_bf16(v); }
{%- else %}
typedef float act_t;
__device__ __forceinline__ void load_x8(const act_t* p, float* o) {
    const float4 a = __ldg((const float4*)p);
    const float4 b = __ldg((const float4*)p + 1);
    o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
    o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
}
__device__ __forceinline__ float act_load(const act_t* p, long long i) { return p[i]; }
__device__ __forceinline__ act_t act_store(float v) { return v; }
{%- endif %}

// Streamed loads: read once, so they skip L1 (which keeps the activations).
__device__ __forceinline__ uint4 ld_stream_v4(const u8* p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 { %0, %1, %2, %3 }, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ uint2 ld_stream_v2(const u8* p) {
    uint2 v;
    asm("ld.global.nc.L1::no_allocate.v2.u32 { %0, %1 }, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}
__device__ __forceinline__ u32 ld_stream_u32(const u8* p) {
    u32 v;
    asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ float ld_stream_scale(const u8* p) {
    unsigned short h;
    asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(h) : "l"(p));
    return f16_to_f32(h);
}

// The CW words of one chunk (byte offset a multiple of CW * 4), widest aligned vectors.
__device__ __forceinline__ void load_chunk(const u8* p, u32* w) {
#if CW % 4 == 0
#pragma unroll
    for (int i = 0; i < CW / 4; ++i) {
        const uint4 v = ld_stream_v4(p + 16 * i);
        w[4 * i] = v.x; w[4 * i + 1] = v.y; w[4 * i + 2] = v.z; w[4 * i + 3] = v.w;
    }
#elif CW % 2 == 0
#pragma unroll
    for (int i = 0; i < CW / 2; ++i) {
        const uint2 v = ld_stream_v2(p + 8 * i);
        w[2 * i] = v.x; w[2 * i + 1] = v.y;
    }
#else
#pragma unroll
    for (int i = 0; i < CW; ++i) w[i] = ld_stream_u32(p + 4 * i);
#endif
}

// 2^23 + 2^(B-1): the float a flipped-sign code sits on.
#define MAGIC_BASE (8388608.0f + (float)(1 << (FMT_BITS - 1)))

// The 8 weights [8*sb, 8*sb + 8) of a chunk as exact floats (unscaled integers).
__device__ __forceinline__ void chunk_weights8(const u32* w, int sb, float* o) {
#if FMT_BITS == 4
    // Word sb: byte j holds weight 2j (low nibble) and 2j+1 (high nibble).
    const u32 v = w[sb] ^ 0x88888888u;
    const u32 lo = v & 0x0f0f0f0fu;
    const u32 hi = (v >> 4) & 0x0f0f0f0fu;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        o[2 * j] = __uint_as_float(__byte_perm(lo, 0x4b000000u, 0x7640u | j)) - MAGIC_BASE;
        o[2 * j + 1] = __uint_as_float(__byte_perm(hi, 0x4b000000u, 0x7640u | j)) - MAGIC_BASE;
    }
#elif FMT_BITS == 8
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const u32 v = w[2 * sb + h] ^ 0x80808080u;
#pragma unroll
        for (int j = 0; j < 4; ++j)
            o[4 * h + j] = __uint_as_float(__byte_perm(v, 0x4b000000u, 0x7640u | j)) - MAGIC_BASE;
    }
#else
    // Any width: weight i at stream bits [i*B, i*B + B), funnel-shifted out of its words.
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const int bit = (8 * sb + j) * FMT_BITS;
        const int wi = bit >> 5;
        const int sh = bit & 31;
        u32 v;
        if (sh + FMT_BITS <= 32) v = w[wi] >> sh;
        else v = __funnelshift_r(w[wi], w[wi + 1], sh);
        const u32 bits = (v & ((1u << FMT_BITS) - 1u)) ^ (0x4b000000u | (1u << (FMT_BITS - 1)));
        o[j] = __uint_as_float(bits) - MAGIC_BASE;
    }
#endif
}

{%- if direct %}
// Direct mode (one column; the host launches it only where K is at most 32 * UNROLL chunks):
// a warp owns ROWS rows at a time and lane l the chunks l, l + 32, ... of the whole row, so
// each warp reads the whole activation row once (from L2), applies the prologue, and keeps
// its chunks in registers: no block barrier (the row passes through the warp's own slab of
// shared memory to change hands between lanes), and the RMS sum of squares is one warp
// reduction over the lanes' own registers. Warps walk row groups warp, warp + all warps,
// ... (the host caps the grid at what fits at once), the next group's weights issued
// before the current one's products. After the wait a warp's critical path is: x (and
// the residual) from L2, the prologue, ROWS x UNROLL chunk products, ROWS warp sums, one
// store per row (lane r stores row r). The RMS prologues' sum of squares is reduced beside
// the rows' sums, not in front of the products.
#if TT != 1
#error "gemv_stream's direct mode computes one column"
#endif
#define XU (4 * UNROLL)  // 8-activation units per lane: 32 lanes x XU cover 32 x UNROLL chunks
extern "C" __global__ void __launch_bounds__(BLOCK)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const u8* __restrict__ q2, const u8* __restrict__ s2,
                  long long q_row_bytes, long long s_row_bytes,
                  const act_t* __restrict__ x,
                  const act_t* residual,
                  act_t* y,
                  int T, int N, int K, int slab,
                  const float* __restrict__ pw, float eps)
{
    const int lane = threadIdx.x & 31;
    const int chunks = K / CN;
    const int groups = (N + ROWS - 1) / ROWS;
    const int stride = gridDim.x * WARPS;
    int g = blockIdx.x * WARPS + (threadIdx.x >> 5);  // warp-uniform
    // Each warp's activation row in the staged layout (32 * UNROLL chunks).
    __shared__ __align__(16) float xw_all[WARPS * 32 * UNROLL * XS_CHUNK];

    // Every weight load of a group: UNROLL chunks of each of its ROWS rows (rows past N
    // and chunks past K re-read the last one and are not used).
    auto load_group = [&](int gg, u32 (&w)[UNROLL][ROWS][CW], float (&sv)[UNROLL][ROWS]) {
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const long long row = min(gg * ROWS + r, N - 1);
            const u8* qr = q + row * q_row_bytes;
            const u8* sr = s + row * s_row_bytes;
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int c = min(32 * u + lane, chunks - 1);
                load_chunk(qr + (long long)c * (CW * 4), w[u][r]);
                sv[u][r] = ld_stream_scale(sr + 2 * (c / CHUNKS_PER_GROUP));
            }
        }
    };
    u32 raw[UNROLL][ROWS][CW];
    float sc[UNROLL][ROWS];
    if (g < groups) load_group(g, raw, sc);
    // The row is read in 8-activation units, unit i (of 4 per chunk) by lane i % 32, so
    // that a warp's loads are contiguous (a lane reading its own chunk's 128 bytes would
    // make every load instruction touch 18-32 cache lines); the units then go through the
    // warp's slab of shared memory (the staged layout: 16-byte pad after each chunk) to the
    // lanes that multiply them.
    const int units = chunks * 4;
#if PRO_RMS
    // The norm weight of the lane's units (a weight: read before the wait too).
    float nw[XU][8];
#pragma unroll
    for (int m = 0; m < XU; ++m) {
        const int i = lane + 32 * m;
        if (i < units) {
            const float4 a = __ldg((const float4*)(pw + 8LL * i));
            const float4 b = __ldg((const float4*)(pw + 8LL * i) + 1);
            nw[m][0] = a.x; nw[m][1] = a.y; nw[m][2] = a.z; nw[m][3] = a.w;
            nw[m][4] = b.x; nw[m][5] = b.y; nw[m][6] = b.z; nw[m][7] = b.w;
        } else {
#pragma unroll
            for (int j = 0; j < 8; ++j) nw[m][j] = 0.0f;
        }
    }
#endif
    // x (and later the residual) is the previous kernel's output; nothing global was
    // written before this point. Every thread waits here once; idle warps then leave.
    NINFER_PDL_WAIT();
    NINFER_PDL_TRIGGER();
    if (g >= groups) return;
{%- if epilogue == "residual" %}
    // Lane r adds row r's residual: read first, in the same round trip as x.
    float rv = 0.0f;
    if (lane < ROWS && g * ROWS + lane < N) rv = act_load(residual, g * ROWS + lane);
{%- endif %}

    // The lane's units, prologue applied (zeros past K).
    float v[XU][8];
#pragma unroll
    for (int m = 0; m < XU; ++m) {
        const int i = lane + 32 * m;
        if (i < units) {
#if PRO_SWIGLU
            float uv[8];
            load_x8(x + 8LL * i, v[m]);
            load_x8(x + K + 8LL * i, uv);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const float silu = __fdiv_rn(v[m][j], __fadd_rn(1.0f, expf(-v[m][j])));
                v[m][j] = __fmul_rn(silu, uv[j]);
            }
#else
            load_x8(x + 8LL * i, v[m]);
#endif
        } else {
#pragma unroll
            for (int j = 0; j < 8; ++j) v[m][j] = 0.0f;
        }
    }
#if PRO_RMS
    // The lane's share of the row's sum of squares; the products use x * w, and 1 / rms
    // (one scalar) multiplies the row sums, so the warp reduction runs beside the products
    // instead of in front of them.
    float ss = 0.0f;
#pragma unroll
    for (int m = 0; m < XU; ++m)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
{%- if prologue == "rmsnorm1p" %}
            const float scale = 1.0f + nw[m][j];
{%- else %}
            const float scale = nw[m][j];
{%- endif %}
            ss += v[m][j] * v[m][j];
            v[m][j] = v[m][j] * scale;
        }
#endif
    float* xw = xw_all + (threadIdx.x >> 5) * (32 * UNROLL * XS_CHUNK);
#pragma unroll
    for (int m = 0; m < XU; ++m) {
        const int i = lane + 32 * m;
        if (i < units) {
            float4* d = (float4*)(xw + (i >> 2) * XS_CHUNK + 8 * (i & 3));
            d[0] = make_float4(v[m][0], v[m][1], v[m][2], v[m][3]);
            d[1] = make_float4(v[m][4], v[m][5], v[m][6], v[m][7]);
        }
    }
    __syncwarp();
    // The lane's chunks (lane, lane + 32, ...): zeros past K.
    float xv[UNROLL][CN];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        const int c = 32 * u + lane;
#pragma unroll
        for (int q4 = 0; q4 < CN / 4; ++q4) {
            float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (c < chunks) a = *(const float4*)(xw + c * XS_CHUNK + 4 * q4);
            xv[u][4 * q4] = a.x; xv[u][4 * q4 + 1] = a.y; xv[u][4 * q4 + 2] = a.z; xv[u][4 * q4 + 3] = a.w;
        }
    }

    for (;;) {
        const int row0 = g * ROWS;
        // The next group's weights go out before this group's products.
        const int gn = g + stride;
        u32 nraw[UNROLL][ROWS][CW];
        float nsc[UNROLL][ROWS];
        if (gn < groups) load_group(gn, nraw, nsc);

        float acc[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) acc[r] = 0.0f;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (32 * u + lane < chunks) {
                float part[ROWS];
#pragma unroll
                for (int r = 0; r < ROWS; ++r) part[r] = 0.0f;
#pragma unroll
                for (int sb = 0; sb < CN / 8; ++sb) {
#pragma unroll
                    for (int r = 0; r < ROWS; ++r) {
                        float wv[8];
                        chunk_weights8(raw[u][r], sb, wv);
#pragma unroll
                        for (int i = 0; i < 8; ++i) part[r] = fmaf(wv[i], xv[u][8 * sb + i], part[r]);
                    }
                }
#pragma unroll
                for (int r = 0; r < ROWS; ++r) acc[r] = fmaf(part[r], sc[u][r], acc[r]);
            }
        }
        float mine = 0.0f;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const float v = warp_sum(acc[r]);
            if (lane == r) mine = v;
        }
#if PRO_RMS
        // Beside the rows' reductions (the same value every group).
        mine *= rsqrtf(warp_sum(ss) / (float)K + eps);
#endif
        if (lane < ROWS && row0 + lane < N) {
{%- if epilogue == "residual" %}
            mine += rv;
{%- endif %}
            y[row0 + lane] = act_store(mine);
        }
        if (gn >= groups) break;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                sc[u][r] = nsc[u][r];
#pragma unroll
                for (int i = 0; i < CW; ++i) raw[u][r][i] = nraw[u][r][i];
            }
        g = gn;
{%- if epilogue == "residual" %}
        if (lane < ROWS && g * ROWS + lane < N) rv = act_load(residual, g * ROWS + lane);
{%- endif %}
    }
}
{%- else %}
extern "C" __global__ void __launch_bounds__(BLOCK)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const u8* __restrict__ q2, const u8* __restrict__ s2,
                  long long q_row_bytes, long long s_row_bytes,
                  const act_t* __restrict__ x,
                  const act_t* residual,
                  act_t* y,
                  int T, int N, int K, int slab,
                  const float* __restrict__ pw, float eps)
{
    // Activations of one slab of `slab` chunks, every column, as f32: chunk c of column t at
    // xs[t * slab * XS_CHUNK + c * XS_CHUNK]; the 4-float pad after each chunk spreads the
    // lanes' 16-byte reads (one chunk per lane) over all banks.
    extern __shared__ float4 xs_raw[];
    float* xs = (float*)xs_raw;
#if PRO_RMS
    __shared__ float red[WARPS * TT];
    __shared__ float inv_rms[TT];
#endif
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int chunks = K / CN;
    const int groups = (N + ROWS * WARPS - 1) / (ROWS * WARPS);
    // Several slabs: every group stages each again; one slab: staged once per block.
    const bool restage = slab < chunks;
    const long long x_stride = PRO_SWIGLU ? 2LL * K : (long long)K;
    const int col_stride = slab * XS_CHUNK;
    bool staged = false;  // block-uniform; the PDL wait comes with the first staging

    // A block that stages nothing (no row group; K under one chunk) waits here instead,
    // ahead of its stores of y.
    if (blockIdx.x >= groups || chunks == 0) {
        NINFER_PDL_WAIT();
        NINFER_PDL_TRIGGER();
    }

    for (int g = blockIdx.x; g < groups; g += gridDim.x) {
        const int row0 = (g * WARPS + warp) * ROWS;  // rows past N: clamped, not stored

        const u8* qr[ROWS];
        const u8* sr[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const long long row = min(row0 + r, N - 1);
            qr[r] = q + row * q_row_bytes;
            sr[r] = s + row * s_row_bytes;
        }

        float acc[ROWS][TT];
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int t = 0; t < TT; ++t) acc[r][t] = 0.0f;
#if TT == 1 && RESIDUAL
        // One column: lane r adds row r's residual, read as soon as it may be (after the
        // wait: here once the block has staged, else right after the first staging's wait).
        float rv = 0.0f;
        auto load_residual = [&]() {
            if (lane < ROWS && row0 + lane < N) rv = act_load(residual, row0 + lane);
        };
        if (staged) load_residual();
#endif

        // Step loads: every weight load of `UNROLL` chunks of every row (chunks past the slab
        // re-read its last one and are not used).
        auto load_step = [&](u32 (&raw)[UNROLL][ROWS][CW], float (&sc)[UNROLL][ROWS], int base,
                             int ce) {
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int c = min(base + 32 * u + lane, ce - 1);
#pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    load_chunk(qr[r] + (long long)c * (CW * 4), raw[u][r]);
                    sc[u][r] = ld_stream_scale(sr[r] + 2 * (c / CHUNKS_PER_GROUP));
                }
            }
        };
        // Step compute: convert and multiply, 8 weights at a time.
        auto compute_step = [&](const u32 (&raw)[UNROLL][ROWS][CW], const float (&sc)[UNROLL][ROWS],
                                int base, int cs, int ce) {
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int c = base + 32 * u + lane;
                if (c < ce) {
                    const float* xc = xs + (c - cs) * XS_CHUNK;
                    float part[ROWS][TT];
#pragma unroll
                    for (int r = 0; r < ROWS; ++r)
#pragma unroll
                        for (int t = 0; t < TT; ++t) part[r][t] = 0.0f;
#pragma unroll
                    for (int sb = 0; sb < CN / 8; ++sb) {
                        float xv[TT][8];
#pragma unroll
                        for (int t = 0; t < TT; ++t) {
                            if (t < T) {
                                const float4 a = *(const float4*)(xc + t * col_stride + 8 * sb);
                                const float4 b = *(const float4*)(xc + t * col_stride + 8 * sb + 4);
                                xv[t][0] = a.x; xv[t][1] = a.y; xv[t][2] = a.z; xv[t][3] = a.w;
                                xv[t][4] = b.x; xv[t][5] = b.y; xv[t][6] = b.z; xv[t][7] = b.w;
                            } else {
#pragma unroll
                                for (int i = 0; i < 8; ++i) xv[t][i] = 0.0f;
                            }
                        }
#pragma unroll
                        for (int r = 0; r < ROWS; ++r) {
                            float wv[8];
                            chunk_weights8(raw[u][r], sb, wv);
#pragma unroll
                            for (int t = 0; t < TT; ++t)
#pragma unroll
                                for (int i = 0; i < 8; ++i) part[r][t] = fmaf(wv[i], xv[t][i], part[r][t]);
                        }
                    }
#pragma unroll
                    for (int r = 0; r < ROWS; ++r)
#pragma unroll
                        for (int t = 0; t < TT; ++t) acc[r][t] = fmaf(part[r][t], sc[u][r], acc[r][t]);
                }
            }
        };

        for (int cs = 0; cs < chunks; cs += slab) {
            const int ce = min(cs + slab, chunks);
            // Block-uniform: every warp walks the same bases, so the staging's barriers are
            // safe. (Software-pipelining the steps in two register buffers was measured and
            // gained nothing at T = 1 while costing occupancy at T = 8: v5 in
            // bench/kernels/README.md.)
            for (int base = cs; base < ce; base += STEP) {
                u32 raw[UNROLL][ROWS][CW];
                float sc[UNROLL][ROWS];
                load_step(raw, sc, base, ce);
                if (base == cs && (restage || !staged)) {
                    // Stage the slab's activations while the first weights are in flight.
                    if (!staged) {
                        // The first staging: the block's first weight loads are in flight;
                        // x (and later the residual) is the previous kernel's output.
                        NINFER_PDL_WAIT();
                        NINFER_PDL_TRIGGER();
#if TT == 1 && RESIDUAL
                        load_residual();
#endif
                    }
                    // The previous slab's readers are done (none before the first staging).
                    if (staged) __syncthreads();
#if PRO_RMS
                    if (!staged) {
                        // Each column's inverse RMS over the whole row, once per block.
                        const int k8 = K / 8;
                        for (int t = 0; t < TT; ++t) {
                            float ss = 0.0f;
                            if (t < T) {
#pragma unroll 2
                                for (int i = threadIdx.x; i < k8; i += BLOCK) {
                                    float v[8];
                                    load_x8(x + (long long)t * x_stride + 8 * i, v);
#pragma unroll
                                    for (int j = 0; j < 8; ++j) ss += v[j] * v[j];
                                }
                            }
                            ss = warp_sum(ss);
                            if (lane == 0) red[warp * TT + t] = ss;
                        }
                        __syncthreads();
                        if (threadIdx.x < TT) {
                            float tot = 0.0f;
                            for (int w = 0; w < WARPS; ++w) tot += red[w * TT + threadIdx.x];
                            inv_rms[threadIdx.x] = rsqrtf(tot / (float)K + eps);
                        }
                        __syncthreads();
                    }
#endif
                    const int n8 = (ce - cs) * (CN / 8);
                    const int total = T * n8;
                    for (int i0 = threadIdx.x; i0 < total; i0 += STAGE_BATCH * BLOCK) {
                        // Every load of the batch first, then the prologue and the stores.
                        float v[STAGE_BATCH][8];
#if PRO_RMS || PRO_SWIGLU
                        float v2[STAGE_BATCH][8];
#endif
#pragma unroll
                        for (int j = 0; j < STAGE_BATCH; ++j) {
                            const int i = i0 + j * BLOCK;
                            if (i < total) {
                                const int t = i / n8;
                                const int e = i - t * n8;  // 8-float unit within the slab
                                const long long k = (long long)cs * CN + 8 * e;
                                load_x8(x + (long long)t * x_stride + k, v[j]);
#if PRO_SWIGLU
                                load_x8(x + (long long)t * x_stride + K + k, v2[j]);
#elif PRO_RMS
                                const float4 a = __ldg((const float4*)(pw + k));
                                const float4 b = __ldg((const float4*)(pw + k) + 1);
                                v2[j][0] = a.x; v2[j][1] = a.y; v2[j][2] = a.z; v2[j][3] = a.w;
                                v2[j][4] = b.x; v2[j][5] = b.y; v2[j][6] = b.z; v2[j][7] = b.w;
#endif
                            }
                        }
#pragma unroll
                        for (int j = 0; j < STAGE_BATCH; ++j) {
                            const int i = i0 + j * BLOCK;
                            if (i < total) {
                                const int t = i / n8;
                                const int e = i - t * n8;
#if PRO_RMS
                                const float ir = inv_rms[t];
#pragma unroll
                                for (int m = 0; m < 8; ++m) {
{%- if prologue == "rmsnorm1p" %}
                                    const float scale = 1.0f + v2[j][m];
{%- else %}
                                    const float scale = v2[j][m];
{%- endif %}
                                    v[j][m] = v[j][m] * ir * scale;
                                }
#elif PRO_SWIGLU
#pragma unroll
                                for (int m = 0; m < 8; ++m) {
                                    const float gv = v[j][m];
                                    const float silu = __fdiv_rn(gv, __fadd_rn(1.0f, expf(-gv)));
                                    v[j][m] = __fmul_rn(silu, v2[j][m]);
                                }
#endif
                                float4* d = (float4*)(xs + t * col_stride + (e >> 2) * XS_CHUNK + 8 * (e & 3));
                                float4 a, b;
                                a.x = v[j][0]; a.y = v[j][1]; a.z = v[j][2]; a.w = v[j][3];
                                b.x = v[j][4]; b.y = v[j][5]; b.z = v[j][6]; b.w = v[j][7];
                                d[0] = a;
                                d[1] = b;
                            }
                        }
                    }
                    __syncthreads();
                    staged = true;
                }
                compute_step(raw, sc, base, cs, ce);
            }
        }

#if TT == 1
        // Lane r stores row r (one store instruction for the warp's rows).
        float mine = 0.0f;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const float v = warp_sum(acc[r][0]);
            if (lane == r) mine = v;
        }
        if (lane < ROWS && row0 + lane < N) {
#if RESIDUAL
            mine += rv;
#endif
            y[row0 + lane] = act_store(mine);
        }
#else
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const int row = row0 + r;
#pragma unroll
            for (int t = 0; t < TT; ++t) {
                float v = warp_sum(acc[r][t]);
                if (lane == 0 && row < N && t < T) {
                    const long long o = (long long)t * N + row;
{%- if epilogue == "residual" %}
                    v += act_load(residual, o);
{%- endif %}
                    y[o] = act_store(v);
                }
            }
        }
#endif
    }
}
{%- endif %}
