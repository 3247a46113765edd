{#
  Decode-time linear for 4- and 8-bit symmetric integer weights, f32 activations and
  accumulation: Y[T,N] = X[T,K] * W[N,K]^T (+ residual), up to `tt` columns per launch.
  The same contract as linear/gemv_stream.cu (arguments, prologues, epilogues), built to
  keep DRAM busy without pause and to spend few instructions per weight.

  Weights through a shared-memory ring. Each warp owns `stages` slots; a slot holds one
  stage: `rows` rows x 32 chunks (32 weights each) of weights and their scales, copied by
  cp.async (16 bytes per copy, sm_80+) `stages - 1` stages ahead of the one being
  computed. Loads never occupy registers, so deep prefetch costs no occupancy. Lane l
  copies chunk l of every row and reads back only its own bytes; the scales (a few lanes
  copy them) are read by all lanes, hence a __syncwarp around each slot's reuse.

  Work split, balanced in bytes. Block b owns rows [b*N/G, (b+1)*N/G) (G = grid, launched
  as about as many blocks as fit at once). Its warps form `ks` K-slices x (warps / ks)
  row streams (ks is a kernel argument, chosen by the host for the shape); a stream takes
  a contiguous share of the block's rows, a slice a contiguous run of whole 32-chunk
  rounds of K. A warp walks its stream's rows in passes of `rows`; each stage is one round
  of one pass. With ks > 1 the slices' sums meet in shared memory and are added in slice
  order (deterministic) at the end.

  Conversion without any float arithmetic. A code q (B bits, two's complement) flipped to
  offset binary n = q + 2^(B-1) and masked in place is the subnormal float n * 2^(p - 149)
  (p: its bit offset in the word, at most 16, so the mask never reaches the exponent); FMA
  handles subnormals in hardware at full rate and exactly. The activations are staged
  pre-multiplied by 2^(E - p) for their weight's offset p (exact powers of two), so every
  product is n * x * 2^(E - 149) exactly, rounded once by the FMA as before. The offset
  2^(B-1) * sum(x) of a chunk is staged beside it and starts the chunk's sum, and 2^(149-E)
  is applied once per output. Per 8 weights at 4 bits: 1 shift, 8 LOP3 (mask with the
  flip folded in), 8 FFMA; per chunk of each row a shared load of its 4 words and its
  scale; activations are read once per chunk for all `rows` rows.

  Activations: the whole row of every column is staged once per block (K must be a
  multiple of 1024: whole rounds), with the prologue applied (as gemv_stream.cu: rmsnorm,
  rmsnorm1p, swiglu), a 16-byte pad per chunk (bank-conflict-free 16-byte reads) whose
  first float holds the chunk's offset term. The first `stages - 1` stages of weights are
  issued before the activations are touched (weights do not depend on the previous kernel).
  The RMS prologues stage x * w (or x * (1 + w)) and gather each column's sum of squares in
  the same pass; 1 / rms, one scalar per column, multiplies the outputs with 2^(149-E), so
  the staging is a single pass over x with no barrier of its own.

  Programmatic dependent launch (common/pdl.cuh): those first stages, the address math and
  the K-slice split are all a thread does before NINFER_PDL_WAIT(); they read only the
  weights and scales (uploaded once, never written by a kernel) and write only shared
  memory (cp.async). Every thread then waits once, straight-line, with no return anywhere
  in the kernel (a warp with no rows issues empty groups and waits too), before the first
  read of x, of the residual or of `pw`, and
  before any store to y.

  SwiGLU epilogue (epilogue "swiglu", even `rows`): W is a stacked gate_up [2I, K] (gate
  rows, then up rows) and y is [T, I] = silu(x W_gate^T) * (x W_up^T), so that an MLP's down
  projection stages its input as it is instead of every block computing SwiGLU over the
  whole row (bench/engine/step run 6: down with that prologue 20.3 us against ~16.3 plain).
  Blocks and streams split the I outputs (pairs of rows) instead of the N rows; a pass's
  ROWS slots hold ROWS / 2 pairs, slot 2p gate row i and slot 2p + 1 up row I + i, so both
  sums of an output end in one warp (ks = 1: a shuffle brings the up sum to the gate
  sum's lane; ks > 1: both meet in the slice sums). The silu is the fast-intrinsic one of
  the SwiGLU prologue, so the down projection's input has the same bits either way.

  Gated RMSNorm prologue ("gatednorm"): the GDN mixer's output norm (gdn/out_norm.cu),
  X = x * rsqrt(mean(x^2) + eps) * w * silu(z) over each group of GN_GROUP (one value
  head; w [GN_GROUP] shared by the heads), z read at x2 + t * x2_ld. A group is 16 staging
  units of 8, i.e. 16 consecutive threads of a staging pass (K and the group are multiples
  of 128 floats), so its sum of squares is a half-warp's xor shuffles and the norm is
  applied as x is staged: the norm's own launch is gone (bench/engine/step run 6: 48 of the
  27B's 1-lane launches, ~3 us each).

  Params: format (4 or 8 bits, groups of 32, 64 or 128), tt, rows, warps, stages,
  epilogue ("none" | "residual" | "swiglu"), act ("f32"), prologue ("none" | "rmsnorm" |
  "rmsnorm1p" | "swiglu" | "gatednorm"). Argument `ks` (where gemv_stream.cu has `slab`): K-slices per
  row stream. Dynamic shared memory: tt*K/32*144 (activations) + warps*stages*STAGE_BYTES
  (ring) + ceil(N/G)*ks*tt*4 (slice sums, ks > 1; SwiGLU: 2*ceil(I/G)*ks*tt*4).
#}
{%- set prologue = prologue | default(value="none") %}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
{{ format_code }}

#define TT {{ tt }}
#define ROWS {{ rows }}
#define WARPS {{ warps }}
#define STAGES {{ stages }}
#define BLOCK (WARPS * 32)
#define CN 32                              // weights per chunk
#define CW FMT_BITS                        // 32-bit words per chunk
#define CB (CW * 4)                        // bytes per chunk
#define WPW (32 / FMT_BITS)                // weights per word
#define CPG (FMT_GROUP / CN)               // chunks per scale group
#define SB (32 / CPG * 2)                  // scale bytes of one row's round (32 chunks)
#define SP (SB / 16)                       // 16-byte scale copies per row and round
#define STAGE_BYTES (ROWS * (32 * CB + SB))
#define XS_CHUNK (CN + 4)                  // staged floats per chunk: 32 and the pad
#define VALS (ROWS * TT)                   // sums a lane reduces per pass
#if FMT_BITS != 4 && FMT_BITS != 8
#error "gemv_ring takes 4- and 8-bit codes"
#endif
#if FMT_GROUP % CN != 0 || SB % 16 != 0 || ROWS * SP > 32
#error "gemv_ring needs groups of 32, 64 or 128 weights"
#endif
#if VALS != 1 && VALS != 2 && VALS != 4 && VALS != 8 && VALS != 16 && VALS != 32
#error "rows * tt must be a power of two"
#endif
#if VALS == 1
#define LOG_VALS 0
#elif VALS == 2
#define LOG_VALS 1
#elif VALS == 4
#define LOG_VALS 2
#elif VALS == 8
#define LOG_VALS 3
#elif VALS == 16
#define LOG_VALS 4
#else
#define LOG_VALS 5
#endif
// Products are n * x * 2^(E - 149): E = 80 keeps them normal for |x| >= 2^-57 and the
// staged activations finite for |x| < 2^47.
#define EXP_E 80
{%- if prologue == "rmsnorm" or prologue == "rmsnorm1p" %}
#define PRO_RMS 1
{%- else %}
#define PRO_RMS 0
{%- endif %}
{%- if prologue == "swiglu" %}
#define PRO_SWIGLU 1
{%- else %}
#define PRO_SWIGLU 0
{%- endif %}
{%- if prologue == "gatednorm" %}
#define PRO_GATED 1
{%- else %}
#define PRO_GATED 0
{%- endif %}
// The gated norm's group: one value head of every model here (dk = dv = 128).
#define GN_GROUP 128
{%- if epilogue == "swiglu" %}
#define EPI_SWIGLU 1
{%- else %}
#define EPI_SWIGLU 0
{%- endif %}
#if EPI_SWIGLU && (ROWS % 2 != 0 || PRO_SWIGLU || PRO_GATED)
#error "the SwiGLU epilogue pairs rows (even rows) and its input is not itself a gate_up"
#endif
// Outputs a pass of a stream: ROWS rows, or ROWS / 2 (gate, up) pairs.
#define UNITS (EPI_SWIGLU ? ROWS / 2 : ROWS)
#if PRO_RMS || PRO_SWIGLU || PRO_GATED
#define STAGE_BATCH 2
#else
#define STAGE_BATCH 4
#endif

// 2^e as a float (normal range).
__device__ __forceinline__ float pow2f(int e) { return __int_as_float((127 + e) << 23); }

// silu(g) * u with the SwiGLU prologue's fast intrinsics (the same bits as staging it).
__device__ __forceinline__ float swiglu_of(float g, float u) {
    return __fmul_rn(__fdividef(g, 1.0f + __expf(-g)), u);
}

// Bit offset of weight m of a word once masked in place (4-bit: nibbles 5..7 come from
// the word shifted right by 12; 8-bit: bytes 2, 3 from the word shifted by 16).
__device__ __forceinline__ int weight_bit(int m) {
#if FMT_BITS == 4
    return m < 5 ? 4 * m : 4 * m - 12;
#else
    return (m & 1) * 8;
#endif
}

// The WPW weights of word v as subnormal floats n * 2^(weight_bit(m) - 149), n = q + 2^(B-1).
__device__ __forceinline__ void word_weights(u32 v, float* o) {
#if FMT_BITS == 4
    const u32 a = v ^ 0x88888888u;
    const u32 b = a >> 12;
    o[0] = __uint_as_float(a & 0xfu);
    o[1] = __uint_as_float(a & 0xf0u);
    o[2] = __uint_as_float(a & 0xf00u);
    o[3] = __uint_as_float(a & 0xf000u);
    o[4] = __uint_as_float(a & 0xf0000u);
    o[5] = __uint_as_float(b & 0xf00u);
    o[6] = __uint_as_float(b & 0xf000u);
    o[7] = __uint_as_float(b & 0xf0000u);
#else
    const u32 a = v ^ 0x80808080u;
    const u32 b = a >> 16;
    o[0] = __uint_as_float(a & 0xffu);
    o[1] = __uint_as_float(a & 0xff00u);
    o[2] = __uint_as_float(b & 0xffu);
    o[3] = __uint_as_float(b & 0xff00u);
#endif
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    const u32 d = (u32)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async16_s(u32 d, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

__device__ __forceinline__ void load_x8(const float* p, float* o) {
    const float4 a = __ldg((const float4*)p);
    const float4 b = __ldg((const float4*)p + 1);
    o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
    o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const float* __restrict__ x2, long long x2_ld,
                  long long q_row_bytes, long long s_row_bytes,
                  const float* __restrict__ x,
                  const float* residual,
                  float* y,
                  int T, int N, int K, int ks,
                  const float* __restrict__ pw, float eps)
{
    extern __shared__ float4 smem_raw[];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int chunks = K / CN;
    const int rounds = chunks / 32;
    const int col_stride = chunks * XS_CHUNK;  // floats per staged column
    float* xs = (float*)smem_raw;
    u8* ring = (u8*)(xs + TT * col_stride);
    float* sums = (float*)(ring + WARPS * STAGES * STAGE_BYTES);
#if PRO_RMS
    __shared__ float red[WARPS * TT];
#endif

    // This block's outputs (rows, or with the SwiGLU epilogue pairs), this warp's stream
    // (outputs) and slice (rounds).
    // In 32 bits (a 64-bit division is a ~75-instruction subroutine): the host launches one
    // wave (at most a few hundred blocks) and N < 2^22, so (b + 1) * N < 2^32.
    const int NO = EPI_SWIGLU ? N / 2 : N;  // outputs a column
    const unsigned G = gridDim.x, un = (unsigned)NO;
    const int rb0 = (int)(blockIdx.x * un / G);
    const int rb1 = (int)((blockIdx.x + 1u) * un / G);
    const int streams = WARPS / ks;
    const int stream = warp / ks;
    const int slice = warp - stream * ks;
    const bool active = stream < streams;
    const unsigned block_rows = (unsigned)(rb1 - rb0);
    const int rs0 = rb0 + (int)((unsigned)stream * block_rows / (unsigned)streams);
    const int rs1 = rb0 + (int)((unsigned)(stream + 1) * block_rows / (unsigned)streams);
    const int j0 = slice * rounds / ks;
    const int nr = (slice + 1) * rounds / ks - j0;  // rounds of this slice (>= 1)
    const int passes = (rs1 - rs0 + UNITS - 1) / UNITS;
    const int nstages = active ? passes * nr : 0;
    u8* my_ring = ring + warp * STAGES * STAGE_BYTES;

    // Issue stage i (pass i / nr, round i % nr) into slot i % STAGES; always one group.
    int ip = 0, ij = 0, islot = 0;  // the next stage to issue
    // The pass's first row (weights, scales) as running pointers, the rows left in the
    // stream as a count, the lane's shared address once: a stage is then per row one
    // 64-bit add and its copies (no 64-bit row product, no address conversion).
    const long long qrb = q_row_bytes;
    const u8* qp = q + (long long)rs0 * q_row_bytes + lane * CB;
    const u8* sp = s + (long long)rs0 * s_row_bytes;
    int left = rs1 - rs0;  // outputs of the stream from the pass being issued on
#if EPI_SWIGLU
    // An output's up row lies I rows after its gate row.
    const long long up_q = (long long)NO * q_row_bytes, up_s = (long long)NO * s_row_bytes;
#endif
    const int sr = lane / SP, spc = lane - (lane / SP) * SP;  // the lane's scale copy
    const u32 ring_s = (u32)__cvta_generic_to_shared(my_ring);
    auto issue = [&]() {
        if (ip < passes && active) {
            const u32 d = ring_s + islot * STAGE_BYTES + lane * CB;
            const u8* src = qp + (j0 + ij) * 32 * CB;
#if EPI_SWIGLU
            // Slots 2p and 2p + 1: the gate and up rows of the pass's output p.
#pragma unroll
            for (int p = 0; p < UNITS; ++p, src += qrb)
                if (p < left)
#pragma unroll
                    for (int h = 0; h < CB / 16; ++h) {
                        cp_async16_s(d + 2 * p * 32 * CB + 16 * h, src + 16 * h);
                        cp_async16_s(d + (2 * p + 1) * 32 * CB + 16 * h, src + up_q + 16 * h);
                    }
            if (lane < ROWS * SP && (sr >> 1) < left)
                cp_async16_s(ring_s + islot * STAGE_BYTES + ROWS * 32 * CB + sr * SB + 16 * spc,
                             sp + ((sr >> 1) * s_row_bytes + (sr & 1) * up_s + (j0 + ij) * SB + 16 * spc));
#else
            if (left >= ROWS) {  // a whole pass (all but a stream's last)
#pragma unroll
                for (int r = 0; r < ROWS; ++r, src += qrb)
#pragma unroll
                    for (int h = 0; h < CB / 16; ++h) cp_async16_s(d + r * 32 * CB + 16 * h, src + 16 * h);
            } else {
#pragma unroll
                for (int r = 0; r < ROWS; ++r, src += qrb)
                    if (r < left)
#pragma unroll
                        for (int h = 0; h < CB / 16; ++h) cp_async16_s(d + r * 32 * CB + 16 * h, src + 16 * h);
            }
            if (lane < ROWS * SP && sr < left)
                cp_async16_s(ring_s + islot * STAGE_BYTES + ROWS * 32 * CB + sr * SB + 16 * spc,
                             sp + (sr * s_row_bytes + (j0 + ij) * SB + 16 * spc));
#endif
        }
        cp_async_commit();
        if (++ij == nr) {
            ij = 0;
            ++ip;
            qp += UNITS * qrb;
            sp += UNITS * s_row_bytes;
            left -= UNITS;
        }
        if (++islot == STAGES) islot = 0;
    };

    // Weights first: they do not depend on the kernel before this one.
#pragma unroll
    for (int i = 0; i < STAGES - 1; ++i) issue();

    // The kernel before this one wrote x (and the residual); nothing above read or wrote
    // global memory but the weights. Every thread, once, on the only path.
    NINFER_PDL_WAIT();
    NINFER_PDL_TRIGGER();

    // Stage the activations (prologue applied), scaled per weight bit offset, with each
    // chunk's offset term -2^(B-1) * 2^(E-149) * sum(x) in its pad.
    {
        const long long x_stride = PRO_SWIGLU ? 2LL * K : (long long)K;
#if PRO_RMS
        // Each column's sum of squares, gathered in the same pass that stages it; the norm's
        // 1 / rms multiplies the outputs (it is one scalar per column), so no pass over x
        // and no barrier stand before the stream.
        float ss[TT];
#pragma unroll
        for (int t = 0; t < TT; ++t) ss[t] = 0.0f;
#endif
        const int n8 = chunks * (CN / 8);
        const int total = TT * n8;  // columns past T are staged as zeros
        const float off = -pow2f(FMT_BITS - 1 + EXP_E - 149);
        for (int i0 = threadIdx.x; i0 - (int)threadIdx.x < total; i0 += STAGE_BATCH * BLOCK) {
            float v[STAGE_BATCH][8];
#if PRO_RMS || PRO_SWIGLU || PRO_GATED
            float v2[STAGE_BATCH][8];
#endif
#if PRO_GATED
            float v3[STAGE_BATCH][8];
#endif
#pragma unroll
            for (int j = 0; j < STAGE_BATCH; ++j) {
                const int i = i0 + j * BLOCK;
                const int t = TT == 1 ? 0 : i / n8;
                if (i < total && t < T) {
                    const long long k = 8LL * (i - t * n8);
                    load_x8(x + (long long)t * x_stride + k, v[j]);
#if PRO_SWIGLU
                    load_x8(x + (long long)t * x_stride + K + k, v2[j]);
#elif PRO_RMS
                    load_x8(pw + k, v2[j]);
#elif PRO_GATED
                    load_x8(x2 + (long long)t * x2_ld + k, v2[j]);
                    load_x8(pw + k % GN_GROUP, v3[j]);
#endif
                } else {
#pragma unroll
                    for (int m = 0; m < 8; ++m) v[j][m] = 0.0f;
#if PRO_RMS || PRO_SWIGLU || PRO_GATED
#pragma unroll
                    for (int m = 0; m < 8; ++m) v2[j][m] = 0.0f;
#endif
#if PRO_GATED
#pragma unroll
                    for (int m = 0; m < 8; ++m) v3[j][m] = 0.0f;
#endif
                }
            }
#pragma unroll
            for (int j = 0; j < STAGE_BATCH; ++j) {
                const int i = i0 + j * BLOCK;
                const int t = TT == 1 ? 0 : i / n8;
                const int e = i - t * n8;  // 8-float unit: chunk e / 4, part e % 4
#if PRO_RMS
                float sq = 0.0f;
#pragma unroll
                for (int m = 0; m < 8; ++m) {
{%- if prologue == "rmsnorm1p" %}
                    const float scale = 1.0f + v2[j][m];
{%- else %}
                    const float scale = v2[j][m];
{%- endif %}
                    sq += v[j][m] * v[j][m];
                    v[j][m] = v[j][m] * scale;
                }
#pragma unroll
                for (int tt = 0; tt < TT; ++tt)
                    if (tt == t) ss[tt] += sq;
#elif PRO_SWIGLU
#pragma unroll
                for (int m = 0; m < 8; ++m) {
                    const float gv = v[j][m];
                    // Fast intrinsics (a few ulp): every block computes silu over the whole
                    // row, and the IEEE division and full-range expf cost ~30 instructions
                    // an element against ~6 (bench/kernels v12: -3.9 us at 5120x17408).
                    const float silu = __fdividef(gv, 1.0f + __expf(-gv));
                    v[j][m] = __fmul_rn(silu, v2[j][m]);
                }
#elif PRO_GATED
                // The group's 16 units are 16 consecutive i, i.e. 16 aligned lanes (units
                // past the columns are zeros and stay zeros: 0 * rsqrt(eps)).
                float sq = 0.0f;
#pragma unroll
                for (int m = 0; m < 8; ++m) sq = fmaf(v[j][m], v[j][m], sq);
#pragma unroll
                for (int o = 1; o < 16; o <<= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
                const float inv = rsqrtf(sq / (float)GN_GROUP + eps);
#pragma unroll
                for (int m = 0; m < 8; ++m) v[j][m] = v[j][m] * inv * v3[j][m] * silu_f32(v2[j][m]);
#endif
                // The chunk's sum over its 4 units: 4 consecutive i, 4 aligned lanes.
                float part = 0.0f;
#pragma unroll
                for (int m = 0; m < 8; ++m) part += v[j][m];
                part += __shfl_xor_sync(0xffffffffu, part, 1);
                part += __shfl_xor_sync(0xffffffffu, part, 2);
                if (i < total) {
                    float w[8];
#pragma unroll
                    for (int m = 0; m < 8; ++m) w[m] = v[j][m] * pow2f(EXP_E - weight_bit(m % WPW));
                    float* d = xs + t * col_stride + (e >> 2) * XS_CHUNK;
                    float4 a, b;
                    a.x = w[0]; a.y = w[1]; a.z = w[2]; a.w = w[3];
                    b.x = w[4]; b.y = w[5]; b.z = w[6]; b.w = w[7];
                    ((float4*)(d + 8 * (e & 3)))[0] = a;
                    ((float4*)(d + 8 * (e & 3)))[1] = b;
                    if ((e & 3) == 0) d[CN] = part * off;
                }
            }
        }
#if PRO_RMS
#pragma unroll
        for (int t = 0; t < TT; ++t) {
            const float w = warp_sum(ss[t]);
            if (lane == 0) red[warp * TT + t] = w;
        }
#endif
    }
    __syncthreads();

    // Stream: wait for stage i, compute it while stages i+1 .. i+STAGES-1 land.
    float acc[ROWS][TT];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int t = 0; t < TT; ++t) acc[r][t] = 0.0f;
    int cp = 0, cj = 0, cslot = 0;  // the stage to compute
    const float out_scale = pow2f(149 - EXP_E);
    // Per column: the stream's scale, times the norm's 1 / rms (the warps' sums in order).
    float col_scale[TT];
#pragma unroll
    for (int t = 0; t < TT; ++t) {
#if PRO_RMS
        float tot = 0.0f;
        for (int w = 0; w < WARPS; ++w) tot += red[w * TT + t];
        col_scale[t] = out_scale * rsqrtf(tot / (float)K + eps);
#else
        col_scale[t] = out_scale;
#endif
    }
    // col_scale[t] for a t known only at run time, without local memory.
    auto scale_of = [&](int t) {
        float c = col_scale[0];
#pragma unroll
        for (int tt = 1; tt < TT; ++tt)
            if (tt == t) c = col_scale[tt];
        return c;
    };
    for (int i = 0; i < nstages; ++i) {
        __syncwarp();  // every lane is done reading the slot that issue() refills
        issue();
        cp_async_wait<STAGES - 1>();
        __syncwarp();  // the scales other lanes copied are visible
        const u8* slot = my_ring + cslot * STAGE_BYTES;
        const int c = (j0 + cj) * 32 + lane;
        const float* xc = xs + c * XS_CHUNK;
        float part[ROWS][TT];
#pragma unroll
        for (int t = 0; t < TT; ++t) {
            const float o = xc[t * col_stride + CN];
#pragma unroll
            for (int r = 0; r < ROWS; ++r) part[r][t] = o;
        }
        u32 wq[ROWS][CW];
        float sc[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
#pragma unroll
            for (int h = 0; h < CW / 4; ++h) {
                const uint4 u = *(const uint4*)(slot + (r * 32 + lane) * CB + 16 * h);
                wq[r][4 * h] = u.x; wq[r][4 * h + 1] = u.y; wq[r][4 * h + 2] = u.z; wq[r][4 * h + 3] = u.w;
            }
            sc[r] = f16_to_f32(*(const unsigned short*)(slot + ROWS * 32 * CB + r * SB + 2 * (lane / CPG)));
        }
#pragma unroll
        for (int wd = 0; wd < CW; ++wd) {
            float xv[TT][WPW];
#pragma unroll
            for (int t = 0; t < TT; ++t) {
#if WPW == 8
                const float4 a = *(const float4*)(xc + t * col_stride + 8 * wd);
                const float4 b = *(const float4*)(xc + t * col_stride + 8 * wd + 4);
                xv[t][0] = a.x; xv[t][1] = a.y; xv[t][2] = a.z; xv[t][3] = a.w;
                xv[t][4] = b.x; xv[t][5] = b.y; xv[t][6] = b.z; xv[t][7] = b.w;
#else
                const float4 a = *(const float4*)(xc + t * col_stride + 4 * wd);
                xv[t][0] = a.x; xv[t][1] = a.y; xv[t][2] = a.z; xv[t][3] = a.w;
#endif
            }
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                float wf[WPW];
                word_weights(wq[r][wd], wf);
#pragma unroll
                for (int t = 0; t < TT; ++t)
#pragma unroll
                    for (int m = 0; m < WPW; ++m) part[r][t] = fmaf(wf[m], xv[t][m], part[r][t]);
            }
        }
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int t = 0; t < TT; ++t) acc[r][t] = fmaf(part[r][t], sc[r], acc[r][t]);

        if (++cj == nr) {
            // Pass done: reduce the VALS sums over the lanes (a transposing butterfly: after
            // it lane l holds value l >> (5 - LOG_VALS) summed over all 32 lanes).
            float v[VALS];
#pragma unroll
            for (int r = 0; r < ROWS; ++r)
#pragma unroll
                for (int t = 0; t < TT; ++t) { v[r * TT + t] = acc[r][t]; acc[r][t] = 0.0f; }
#pragma unroll
            for (int st = 0; st < LOG_VALS; ++st) {
                const int h = VALS >> (st + 1);
                const int o = 16 >> st;
                const bool up = (lane & o) != 0;
#pragma unroll
                for (int k = 0; k < h; ++k) {
                    const float send = up ? v[k] : v[k + h];
                    const float keep = up ? v[k + h] : v[k];
                    v[k] = keep + __shfl_xor_sync(0xffffffffu, send, o);
                }
            }
#pragma unroll
            for (int o = 16 >> LOG_VALS; o > 0; o >>= 1) v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
            const int idx = lane >> (5 - LOG_VALS);
            const int r = idx / TT;
            const int t = idx - r * TT;
#if EPI_SWIGLU
            // Slot r + 1's sum (the up row) to slot r's lanes (every lane shuffles).
            const float up = __shfl_down_sync(0xffffffffu, v[0], TT << (5 - LOG_VALS));
            const int unit = rs0 + cp * UNITS + (r >> 1);
            if ((lane & ((32 >> LOG_VALS) - 1)) == 0 && (r & 1) == 0 && unit < rs1 && t < T) {
                if (ks == 1) {
                    const float c = scale_of(t);
                    y[(long long)t * NO + unit] = swiglu_of(v[0] * c, up * c);
                } else {
                    sums[(((unit - rb0) * 2) * ks + slice) * TT + t] = v[0];
                    sums[(((unit - rb0) * 2 + 1) * ks + slice) * TT + t] = up;
                }
            }
#else
            const int row = rs0 + cp * ROWS + r;
            if ((lane & ((32 >> LOG_VALS) - 1)) == 0 && row < rs1 && t < T) {
                if (ks == 1) {
                    float o = v[0] * scale_of(t);
                    const long long at = (long long)t * N + row;
{%- if epilogue == "residual" %}
                    o += residual[at];
{%- endif %}
                    y[at] = o;
                } else {
                    sums[((row - rb0) * ks + slice) * TT + t] = v[0];
                }
            }
#endif
            cj = 0;
            ++cp;
        }
        if (++cslot == STAGES) cslot = 0;
    }
    cp_async_wait<0>();

    if (ks > 1) {
        // The slices' sums of every row, added in slice order.
        __syncthreads();
        const int nb = rb1 - rb0;
        for (int i = threadIdx.x; i < nb * TT; i += BLOCK) {
            const int rl = i / TT;
            const int t = i - rl * TT;
#if EPI_SWIGLU
            if (t < T) {
                float g = 0.0f, u = 0.0f;
                for (int sl = 0; sl < ks; ++sl) {
                    g += sums[((2 * rl) * ks + sl) * TT + t];
                    u += sums[((2 * rl + 1) * ks + sl) * TT + t];
                }
                const float c = scale_of(t);
                y[(long long)t * NO + rb0 + rl] = swiglu_of(g * c, u * c);
            }
#else
            if (t < T) {
                float o = 0.0f;
                for (int sl = 0; sl < ks; ++sl) o += sums[(rl * ks + sl) * TT + t];
                o *= scale_of(t);
                const long long at = (long long)t * N + rb0 + rl;
{%- if epilogue == "residual" %}
                o += residual[at];
{%- endif %}
                y[at] = o;
            }
#endif
        }
    }
}
