{#
  Exact decode GEMV on tensor cores with the weights streamed through a per-warp cp.async
  ring: Y[T,N] = X[T,K] * W[N,K]^T (+ residual) for 4- and 8-bit symmetric integer weights
  in 32-byte groups (q4_g64, q8_g32), f32 activations, up to `tt` columns. The contract of
  linear/gemv_mma.cu (arguments, prologues, epilogues, K-ranges summed by the m-range's
  last block or by linear/splitk_sum.cu, the same exactness: bf16 integer codes times the three exact bf16
  pieces of each activation, f32 accumulation, one scale FMA a group); what differs is how
  the weights reach the tensor cores (bench/kernels v46: ~23 us against gemv_mma's 36 for
  17408x5120 at T = 8 in the standalone prototype).

  Work split. The grid is m-ranges x `kr` K-ranges (block b: m-range b / kr, K-range
  b % kr). A chunk is `mt` m-tiles (16 mt rows) that one warp multiplies at once, so each
  B fragment read from shared memory serves mt m-tiles. A block stages its whole K-range
  once (the host plans the K-ranges so that one slab holds it: `slab` >= the range) and
  takes its chunks in passes, as gemv_mma takes its m-tiles: WARPS chunks x 1 K-slice
  while at least WARPS remain, WARPS/2 x 2 slices while more than WARPS/2 remain, then the
  rest with WARPS / rest slices; each pass's slices meet in shared memory and are added in
  slice order (deterministic).

  Weights. A stage is one unit of a warp's work, U = 4 groups of its chunk's 16 mt rows
  (128 bytes a row), copied by cp.async (16 bytes a copy; lane l copies 16-byte piece l & 7
  of rows 4i + l / 8). Row r's group u sits at 32-byte slot u ^ (r & 3) of the row, so the
  8-byte reads of lane (g, t) (its quarter of the group: bytes [8t, 8t + 8), the sym_int
  lane interface) fall on distinct banks. Two stages a warp: one in flight while the other
  is multiplied. The issue side walks the same sequence of (pass, chunk, slice, unit) as
  the compute side, one unit ahead, also across passes, so a pass starts with its first
  stage in flight. The scales are register loads issued with the stage (lane t: group t of
  the unit, rows g and g + 8 of each m-tile), shared in the quad by shuffle.

  Activations: as gemv_mma.cu, the three split fragments of every group of the K-range, all
  columns, staged in the B-fragment order with the prologue applied (rmsnorm and rmsnorm1p
  stage x * w and sum the squares; swiglu stages silu(gate) * up), but in the lanes' natural
  order (lane t's quarter of the group is its weights' quarter: no swap).

  Programmatic dependent launch (common/pdl.cuh): before NINFER_PDL_WAIT() a thread only
  computes its assignment and issues its first stage of weights and scales (uploaded once,
  written by no kernel; shared memory only). Every thread then waits once, straight-line,
  before the first read of x, pw, the residual, part or the counters and before any store.

  With parts = 1 the activations are rounded to bf16, one column a token (see
  linear/gemv_mma.cu).

  Params: format (4 or 8 bits, 32-byte groups), tt, warps (even), mt, epilogue ("none" |
  "residual"), act ("f32"), parts (3, the default, or 1), prologue ("none" | "rmsnorm" | "rmsnorm1p" | "swiglu").
  Arguments: as gemv_mma.cu. Dynamic shared memory: warps * 2 * STAGE_B (ring) +
  slab * FMT_GROUP * NT * 16 (activations) + warps * 16 mt * (8 NT + 1) * 4 (sums), plus
  slab * TT * 16 with RMSNorm.
#}
{%- set prologue = prologue | default(value="none") %}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
{{ format_code }}

#define TT {{ tt }}
#define WARPS {{ warps }}
#define MT {{ mt }}
#define BLOCK (WARPS * 32)
#define PARTS {{ parts | default(value=3) }}  // columns a token: 3 exact pieces, or 1 (bf16)
#define NCOL (PARTS * TT)              // split columns: token c / PARTS, part c % PARTS
#define NT ((NCOL + 7) / 8)            // n-tiles of 8 columns
#define PAIRS (FMT_LANE_N / 2)         // bf16x2 of one lane, row and group
#define STEPS (FMT_GROUP / 16)         // k16 steps per group
#define XQ (PAIRS / 4)                 // 16-byte pieces of one lane, group and n-tile
#define ROWS (16 * MT)                 // rows of a chunk
#define RED_LD (8 * NT + 1)
#define U 4                            // groups a stage
#define ROW_B (U * 32)                 // a row's bytes in a stage
#define STAGE_B (ROWS * ROW_B)
#if PARTS != 3 && PARTS != 1
#error "parts is 3 (exact) or 1 (activations rounded to bf16)"
#endif
#if FMT_BITS != 4 && FMT_BITS != 8
#error "gemv_mma_ring takes 4- and 8-bit codes"
#endif
#if FMT_GROUP * FMT_BITS != 256 || FMT_LANE_WORDS != 2
#error "gemv_mma_ring needs 32-byte groups (q4_g64, q8_g32)"
#endif
#if STEPS != 2 * XQ
#error "gemv_mma_ring takes two k16 steps from each 16-byte piece of activations"
#endif
#if WARPS % 2 != 0 || ROWS % 4 != 0
#error "gemv_mma_ring needs an even warp count"
#endif
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
{%- if epilogue == "swiglu" %}
#error "the SwiGLU epilogue is gemv_mma.cu's (the register kernel)"
{%- endif %}
#define EPI_SWIGLU 0

// Lane quad t holds the group's bytes [8t, 8t + 8): its natural quarter.
#define STAGE_LANE(tq) (tq)
{% include "linear/mma_exact.cuh" %}

// 16 bytes from global to shared memory; src_size 0 fills zeros and reads nothing.
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, u32 src_size) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_size) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// A warp's place in the block's passes over its chunks (see the header): the pass takes
// pmn chunks from pm0 as pmn streams x ks slices; this warp is stream `stream`, slice
// `slice`, with groups [gb, ge) of the K-range [g0, g1) of chunk pm0 + stream.
struct Pass {
    int pm0, pmn, ks, stream, slice, gb, ge;
    bool active;
};

__device__ __forceinline__ void next_pass(Pass& p, int mb1, int warp, int g0, int g1) {
    p.pm0 += p.pmn;
    const int r = mb1 - p.pm0;
    p.pmn = r >= WARPS ? WARPS : (r > WARPS / 2 ? WARPS / 2 : r);
    p.ks = max(WARPS / max(p.pmn, 1), 1);
    p.stream = warp / p.ks;
    p.slice = warp - p.stream * p.ks;
    p.active = p.stream < p.pmn;
    const int sg = g1 - g0;
    p.gb = g0 + p.slice * sg / p.ks;
    p.ge = g0 + (p.slice + 1) * sg / p.ks;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const u8* __restrict__ q2, const u8* __restrict__ s2,
                  long long q_row_bytes, long long s_row_bytes,
                  const float* __restrict__ x,
                  const float* residual,
                  float* y,
                  int T, int N, int K, int slab,
                  const float* __restrict__ pw, float eps,
                  int kr, float* __restrict__ part, unsigned* __restrict__ counters)
{
    extern __shared__ uint4 smem4[];
#if PRO_RMS
    __shared__ float ss_blk[TT];  // each column's sum of squares over this block's K-range
#endif
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int g = lane >> 2;
    const int t = lane & 3;
    const int groups = K / FMT_GROUP;

    // This block's m-range (chunks [mb0, mb1)) and K-range ([g0, g1)).
    const int chunks = (N + ROWS - 1) / ROWS;
    const int mr = gridDim.x / kr;
    int mrange, kb;
    block_ranges(kr, mrange, kb);
    const int mb0 = (int)((long long)mrange * chunks / mr);
    const int mb1 = (int)((long long)(mrange + 1) * chunks / mr);
    const int g0 = (int)((long long)kb * groups / kr);
    const int g1 = (int)((long long)(kb + 1) * groups / kr);

    // Shared memory: the ring, the staged K-range, the passes' sums (then, with RMSNorm,
    // each staging unit's sum of squares).
    u8* ring = (u8*)smem4 + warp * 2 * STAGE_B;
    const u32 ring_s = (u32)__cvta_generic_to_shared(ring);
    uint4* xs = (uint4*)((u8*)smem4 + WARPS * 2 * STAGE_B);
    float* red = (float*)(xs + (long long)slab * NT * XQ * 32);

    // The issue side: its own copy of the passes, one unit ahead of the compute side.
    Pass ip = { mb0, 0, 1, 0, 0, g0, g0, false };
    next_pass(ip, mb1, warp, g0, g1);
    int iu = ip.gb;   // the next unit's first group
    int islot = 0;
    u32 sc_next[MT][2];  // the issued unit's scales (lane t: group t; rows g, g + 8)
    // Moves the issue side to the next unit of this warp (the next pass's first where the
    // current pass is done or has nothing for this warp).
    auto advance = [&]() {
        iu += U;
        while (ip.pmn > 0 && (!ip.active || iu >= ip.ge)) {
            next_pass(ip, mb1, warp, g0, g1);
            iu = ip.gb;
        }
    };
    if (!ip.active || iu >= ip.ge) {
        iu -= U;
        advance();
    }
    const int cpiece = lane & 7, cu = cpiece >> 1, ch = cpiece & 1, cr = lane >> 3;
    // Issues the current unit (or an empty group past the warp's last) and advances.
    auto issue = [&]() {
        const u32 st = ring_s + islot * STAGE_B;
        const bool live = ip.pmn > 0;
        const int chunk = ip.pm0 + ip.stream;
#pragma unroll
        for (int i = 0; i < ROWS / 4; ++i) {
            const int r = 4 * i + cr;
            const int row = max(min(chunk * ROWS + r, N - 1), 0);
            const int gi = iu + cu;
            const bool ok = live && gi < ip.ge;
            const u8* src = q + (long long)row * q_row_bytes + (long long)(ok ? gi : 0) * 32 + ch * 16;
            cp_async16(st + r * ROW_B + ((cu ^ (r & 3)) << 5) + (ch << 4), src, ok ? 16u : 0u);
        }
        cp_async_commit();
#pragma unroll
        for (int m = 0; m < MT; ++m) {
            const int ra = max(min(chunk * ROWS + m * 16 + g, N - 1), 0);
            const int rb = max(min(chunk * ROWS + m * 16 + g + 8, N - 1), 0);
            if (live && iu + t < ip.ge) {
                sc_next[m][0] = fmt_group_scale_bits(s + (long long)ra * s_row_bytes, iu + t);
                sc_next[m][1] = fmt_group_scale_bits(s + (long long)rb * s_row_bytes, iu + t);
            } else {
                sc_next[m][0] = sc_next[m][1] = 0u;  // +0 in f16
            }
        }
        islot ^= 1;
        if (live) advance();
    };

    issue();  // the first unit: weights and scales only, before the wait

    // The kernel before this one wrote x (and the residual); nothing above read or wrote
    // global memory but the weights and scales. Every thread, once, on the only path.
    NINFER_PDL_WAIT();
    NINFER_PDL_TRIGGER();

    const long long x_stride = PRO_SWIGLU ? 2LL * K : (long long)K;
    const int sg = g1 - g0;
#if PRO_RMS
    float* ssu = red + WARPS * ROWS * RED_LD;
#endif
    // Stage the K-range (linear/mma_exact.cuh).
    {
#if PRO_RMS
        stage_split(xs, ssu, x, x_stride, pw, g0, sg, T, K);
#else
        stage_split(xs, nullptr, x, x_stride, pw, g0, sg, T, K);
#endif
        __syncthreads();
#if PRO_RMS
        // Column w's squares of the K-range, warp w, in a fixed order.
        for (int w = warp; w < T; w += WARPS) {
            float a = 0.0f;
            for (int j = lane; j < sg * 4; j += 32) a += ssu[((j >> 2) * T + w) * 4 + (j & 3)];
            a = warp_sum(a);
            if (lane == 0) ss_blk[w] = a;
        }
#endif
    }

    // The compute side.
    Pass cp = { mb0, 0, 1, 0, 0, g0, g0, false };
    int cslot = 0;
    u32 sc_cur[MT][2];
    float acc[MT][NT][4];
    while (true) {
        next_pass(cp, mb1, warp, g0, g1);
        if (cp.pmn <= 0) break;
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[m][j][e] = 0.0f;
        if (cp.active) {
            for (int gu = cp.gb; gu < cp.ge; gu += U) {
#pragma unroll
                for (int m = 0; m < MT; ++m) {
                    sc_cur[m][0] = sc_next[m][0];
                    sc_cur[m][1] = sc_next[m][1];
                }
                __syncwarp();  // every lane is done reading the slot the issue refills
                issue();
                cp_async_wait_one();
                __syncwarp();  // every lane's copies of this unit have landed
                const u8* st = ring + cslot * STAGE_B;
                cslot ^= 1;
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    if (gu + u < cp.ge) {  // warp-uniform
                        u32 pa[MT][PAIRS], pb[MT][PAIRS];
                        float sa[MT], sb[MT];
#pragma unroll
                        for (int m = 0; m < MT; ++m) {
                            const int ra = m * 16 + g;
                            const uint2 wa = *(const uint2*)(st + ra * ROW_B + ((u ^ (g & 3)) << 5) + 8 * t);
                            const uint2 wb = *(const uint2*)(st + (ra + 8) * ROW_B + ((u ^ (g & 3)) << 5) + 8 * t);
                            const u32 rwa[2] = { wa.x, wa.y }, rwb[2] = { wb.x, wb.y };
                            fmt_lane_convert(rwa, pa[m]);
                            fmt_lane_convert(rwb, pb[m]);
                            sa[m] = fmt_scale_of_bits(__shfl_sync(0xffffffffu, sc_cur[m][0], (lane & ~3) | u));
                            sb[m] = fmt_scale_of_bits(__shfl_sync(0xffffffffu, sc_cur[m][1], (lane & ~3) | u));
                        }
                        const uint4* xg = xs + (gu + u - g0) * NT * XQ * 32 + lane;
                        float c[MT][NT][4];
#pragma unroll
                        for (int h = 0; h < XQ; ++h) {
                            u32 xb[NT][4];
#pragma unroll
                            for (int j = 0; j < NT; ++j) {
                                const uint4 w4 = xg[(j * XQ + h) * 32];
                                xb[j][0] = w4.x; xb[j][1] = w4.y; xb[j][2] = w4.z; xb[j][3] = w4.w;
                            }
#pragma unroll
                            for (int s2 = 0; s2 < 2; ++s2) {
                                const int stp = 2 * h + s2;
#pragma unroll
                                for (int m = 0; m < MT; ++m) {
                                    const u32 a[4] = { pa[m][2 * stp], pb[m][2 * stp], pa[m][2 * stp + 1], pb[m][2 * stp + 1] };
#pragma unroll
                                    for (int j = 0; j < NT; ++j) {
                                        const u32 bb[2] = { xb[j][2 * s2], xb[j][2 * s2 + 1] };
                                        if (stp == 0) mma_zero_c(c[m][j], a, bb);
                                        else mma_acc_c(c[m][j], a, bb);
                                    }
                                }
                            }
                        }
#pragma unroll
                        for (int m = 0; m < MT; ++m)
#pragma unroll
                            for (int j = 0; j < NT; ++j) {
                                acc[m][j][0] = fmaf(sa[m], c[m][j][0], acc[m][j][0]);
                                acc[m][j][1] = fmaf(sa[m], c[m][j][1], acc[m][j][1]);
                                acc[m][j][2] = fmaf(sb[m], c[m][j][2], acc[m][j][2]);
                                acc[m][j][3] = fmaf(sb[m], c[m][j][3], acc[m][j][3]);
                            }
                    }
                }
            }
        }

        // The warps' sums meet in shared memory: accumulator e of n-tile j of m-tile m is
        // row 16m + g (+8 for e >= 2), column 8j + 2t + (e & 1).
        __syncthreads();  // the previous pass's sums are read
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    red[(warp * ROWS + m * 16 + g + (e >= 2 ? 8 : 0)) * RED_LD + 8 * j + 2 * t + (e & 1)] = acc[m][j][e];
        __syncthreads();

#if PRO_RMS
        write_pass(red, cp.pm0, cp.pmn, cp.ks, T, N, K, kr, kb, part, y, residual, ss_blk, eps);
#else
        write_pass(red, cp.pm0, cp.pmn, cp.ks, T, N, K, kr, kb, part, y, residual, nullptr, eps);
#endif
    }
    cp_async_wait_all();  // no copy in flight into shared memory at exit (the tail's are empty)
    // Several K-ranges: the last block of the m-range to finish adds them (or, without
    // counters, linear/splitk_sum.cu does).
#if PRO_RMS
    const float* ss_end = ss_blk;
#else
    const float* ss_end = nullptr;
#endif
    splitk_finish(kr, (N + ROWS - 1) / ROWS, ROWS, N, T, N, K, part, ss_end, counters, y,
                  residual, eps);
}
