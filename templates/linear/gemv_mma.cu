{#
  Exact (f32 activations, f32-accurate products, f32 accumulation) decode GEMV on tensor
  cores for 4- and 8-bit symmetric integer weights: Y[T,N] = X[T,K] * W[N,K]^T
  (+ residual), up to `tt` columns per launch. The same contract as linear/gemv_ring.cu
  (arguments, prologues, epilogues); built for T > 1, where the CUDA-core kernels spend
  T FMAs per weight.

  Why it is exact. An integer code of at most 8 bits is exact in bf16 (the A operand,
  converted as linear/mmv.cu does, formats/sym_int.cuh's lane-pairs interface). An f32
  activation x is exactly hi + mid + lo with hi = bf16(x), mid = bf16(x - hi),
  lo = x - hi - mid (24 significand bits in three 8-bit pieces; bf16 has f32's exponent
  range). mma.sync m16n8k16 multiplies bf16 exactly and accumulates in f32, so the three
  split columns of a token give the three exact partial products; they are added in f32
  at the end (hi + (mid + lo)). The n dimension holds split columns: column c is token
  c / 3, part c % 3, so 3 tt columns in ceil(3 tt / 8) n-tiles for the column tile tt (all
  multiplied whatever the launch's T; tt = 8: 3 n-tiles, one mma per 16 rows x 16 k per
  n-tile). Each group's k16 steps accumulate from zero, then the
  rows' f32 scales are applied by one FMA per accumulator (as mmv.cu), so each scale
  multiplies a group sum, as the CUDA-core kernels do.

  Work split. The grid is m-ranges x `kr` K-ranges (block b: m-range b / kr, K-range
  b % kr). A block owns the m-tiles (16 rows) of its m-range and the groups of its K-range,
  and stages only that K-range's activations, once if they fit one slab (the host picks kr
  so that they do): every pass then streams from the same staged slab. Its m-tiles are taken
  in passes: WARPS m-tiles x 1 K-slice while at least WARPS remain, WARPS/2 x 2 slices while
  more than WARPS/2 remain, then the rest with WARPS / rest slices, so that no warp walks a
  whole K-range while others walk half and no block runs a second wave. Each pass's slices
  meet in shared memory (a region of its own, after the slab) and are added in slice order
  (deterministic). With kr = 1 the block writes y (+ residual); with kr > 1 it writes its
  K-range's sums to `part` ([kr][T][N] f32) and counts in on its m-range's counter
  (`counters`, mma_exact.cuh's splitk_finish): the m-range's last block to count in adds
  the kr sums in K-range order (x 1 / rms, + residual, or the SwiGLU epilogue) and writes
  y, then zeroes the counter; deterministic too (the order is fixed, not the last block).
  With `counters` null the host adds them in a second launch, linear/splitk_sum.cu (the
  same arithmetic; NINFER_SPLITK_FUSED=0). Warps without an m-tile only help to stage.

  Weights: each warp keeps `unroll` groups in flight in two register buffers (loads of
  one issued before the other is multiplied); a buffer's groups are multiplied without a
  branch (a group past the slice loads nothing and has scale 0), so their mma chains
  interleave.

  Activations. The split fragments of `slab` groups (all columns) are staged per block in
  shared memory in the B-fragment order (per group, n-tile, 16-byte piece: the 32 lanes'
  pieces contiguous, conflict-free 16-byte reads), with the prologue applied (rmsnorm,
  rmsnorm1p, swiglu as gemv_ring.cu; silu with fast intrinsics as there). RMSNorm stages
  x * w and sums the squares of the staged K-range as it goes (no pass over the row
  before the staging); 1 / rms multiplies the outputs: here with one K-range, with several
  where the K-ranges' sums are added (from every K-range's sums of squares, left after the
  partial outputs). A K-range takes
  ceil(groups / slab) slabs, a block barrier around each; one slab is staged once for all
  passes. Each warp's first buffer of weights of a slab is loaded before the slab is
  staged, so the staging overlaps its DRAM latency.

  Clusters (`cluster` > 1, sm_90): every block stages its whole K-range's activations
  (T x K-range floats from L2, converted; at T = 8 and K = 5120 160 KB a block, about two
  fifths of a launch before its first mma: bench/kernels v59), all blocks at once. With a
  cluster of C blocks launched together (the host's cluster attribute), the cluster's blocks
  share one K-range (mma_exact.cuh's block_ranges) and each stages a C-th of its units into
  every block's shared memory (st_staged), so the activations leave L2 once a cluster. The
  host then plans one slab a K-range and m-ranges a multiple of C; the staging runs once,
  before the passes, behind two cluster barriers (every block has started; every share is
  in place). The values staged are the same bits as without clusters, and so are the
  outputs where the grid is (rounding the m-ranges down to whole clusters moves their
  boundaries, and with them the passes' K-slices and the order of their sums).

  Programmatic dependent launch (common/pdl.cuh): before NINFER_PDL_WAIT() a thread only
  computes its m-tile and slice and loads its first weights and scales (uploaded once,
  written by no kernel). Every thread then waits once, straight-line (no return before
  it), before the first read of x, pw, the residual, part or the counters and any store;
  so the previous launch, which used the same part and counters, has finished.

  Rounded to bf16 (parts = 1, the engine's bf16 mode): each activation is staged as
  bf16(x) alone, one column a token (tt = 8: one n-tile, a third of the mma work and
  staging), the products then those of bf16 activations: not exact, measured as a
  precision trade.

  SwiGLU epilogue (epilogue "swiglu"): W is a stacked gate_up [2I, K] (gate rows, then up
  rows) and y is [T, I] = silu(x W_gate^T) * (x W_up^T), so that an MLP's down projection
  reads its input as it is instead of applying SwiGLU in every block's staging. The
  m-ranges and passes count pairs of m-tiles (gate tile p and up tile p, rows 16p and
  I + 16p): a pass's warps stream both tiles of each pair, so that both sums of an output
  meet in the pass's shared-memory region (mma_exact.cuh, write_pass_swiglu), and with
  several K-ranges both land in the m-range's part rows, which its last block adds before
  the silu (the sums must be whole: only the fused reduction takes kr > 1 here).

  Params: format (4 or 8 bits, groups a multiple of 32), tt, warps, unroll, cluster (1, 2
  or 4; default 1), epilogue
  ("none" | "residual" | "swiglu"), act ("f32"), parts (3, the default, or 1), prologue ("none" |
  "rmsnorm" | "rmsnorm1p" | "swiglu"). Arguments after K: slab (groups per slab), pw, eps, kr (K-ranges; gridDim.x
  a multiple of it), part (kr > 1: [kr][T][N] f32 sums, then with RMSNorm [kr][T] sums
  of squares), counters (kr > 1: one u32 a m-range, zero at the launch and left zero; null:
  the second launch adds). Dynamic shared memory: slab * FMT_GROUP * NT * 16 + warps * 16 *
  (8 * NT + 1) * 4 bytes (slab, then sums), plus slab * TT * 16 with RMSNorm.
#}
{%- set prologue = prologue | default(value="none") %}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}
{{ format_code }}

#define TT {{ tt }}
#define WARPS {{ warps }}
#define UNROLL ({{ unroll }} / 2)       // groups per register buffer (two buffers)
#define BLOCK (WARPS * 32)
#define PARTS {{ parts | default(value=3) }}  // columns a token: 3 exact pieces, or 1 (bf16)
#define NCOL (PARTS * TT)              // split columns: token c / PARTS, part c % PARTS
#define NT ((NCOL + 7) / 8)            // n-tiles of 8 columns
#define PAIRS (FMT_LANE_N / 2)         // bf16x2 of one lane, row and group
#define STEPS (FMT_GROUP / 16)         // k16 steps per group
#define XQ (PAIRS / 4)                 // 16-byte pieces of one lane, group and n-tile
#define RED_LD (8 * NT + 1)
#if PARTS != 3 && PARTS != 1
#error "parts is 3 (exact) or 1 (activations rounded to bf16)"
#endif
#if FMT_BITS != 4 && FMT_BITS != 8
#error "gemv_mma takes 4- and 8-bit codes"
#endif
#if FMT_GROUP * FMT_BITS != 256 || FMT_LANE_WORDS != 2
#error "gemv_mma needs 32-byte groups (q4_g64, q8_g32)"
#endif
#if STEPS != 2 * XQ
#error "gemv_mma takes two k16 steps from each 16-byte piece of activations"
#endif
#if UNROLL != 4
#error "gemv_mma's register buffers hold 4 groups (unroll = 8)"
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
#define EPI_SWIGLU 1
{%- else %}
#define EPI_SWIGLU 0
{%- endif %}
#if EPI_SWIGLU && PRO_SWIGLU
#error "the SwiGLU epilogue's input is not itself a gate_up"
#endif

#define CLUSTER {{ cluster | default(value=1) }}  // blocks a cluster staging one K-range together
#define ROWS 16                        // rows of a warp's stream in a pass: one m-tile
// Lane quad t holds the group's bytes [8 perm(t), +8) after the swap, perm = 0, 2, 1, 3.
#define STAGE_LANE(tq) ((((tq) & 1) << 1) | ((tq) >> 1))
{% include "linear/mma_exact.cuh" %}

// With RMSNorm, each staging unit's sum of squares (slab x T x 4 floats), after the sums'
// region `red`.
__device__ __forceinline__ float* ssu_at(float* red) { return red + WARPS * 16 * RED_LD; }

extern "C" __global__ void __launch_bounds__(BLOCK)
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  const u8* __restrict__ q2, const u8* __restrict__ s2,
                  long long q_row_bytes, long long s_row_bytes,
                  const float* __restrict__ x,
                  const float* residual,
                  float* y,
                  int T, int N, int K, int slab,
                  const float* __restrict__ pw, float eps,
                  int kr, float* __restrict__ part, unsigned* __restrict__ counters{% if epilogue == "conv" %} CONV_PARAMS{% endif %})
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

    // This block's m-range and K-range (gridDim.x = m-ranges x kr), in m-tiles, or with the
    // SwiGLU epilogue in pairs of them (gate tile p, up tile p).
#if EPI_SWIGLU
    const int half_n = N / 2;
    const int mtiles = (half_n + 15) / 16;
#else
    const int mtiles = (N + 15) / 16;
#endif
    const int mr = gridDim.x / kr;
    int mrange, kb;
    block_ranges(kr, mrange, kb);
    const int mb0 = (int)((long long)mrange * mtiles / mr);
    const int mb1 = (int)((long long)(mrange + 1) * mtiles / mr);
    const int g0 = (int)((long long)kb * groups / kr);
    const int g1 = (int)((long long)(kb + 1) * groups / kr);

    // This warp's m-tile and K-slice in the pass (set by next_pass): the pass takes pmn
    // m-tiles from pm0, as pmn streams x ks slices (SwiGLU: pmn pairs from pm0, as 2 pmn
    // streams, the gate tiles' then the up tiles').
    int pm0 = mb0, pmn = 0, ks = 1, slice = 0, stream = 0;
    bool active = false;
    const u8 *qa = q, *qb = q, *sa = s, *sb = s;
    auto next_pass = [&]() {
        pm0 += pmn;
        const int r = mb1 - pm0;
#if EPI_SWIGLU
        pmn = r >= WARPS / 2 ? WARPS / 2 : (r > WARPS / 4 ? WARPS / 4 : r);
        const int streams = 2 * pmn;
#else
        pmn = r >= WARPS ? WARPS : (r > WARPS / 2 ? WARPS / 2 : r);
        const int streams = pmn;
#endif
        ks = max(WARPS / max(streams, 1), 1);
        stream = warp / ks;
        slice = warp - stream * ks;
        active = stream < streams;
#if EPI_SWIGLU
        // Gate rows past I read up rows (clamped below): never written.
        const int row0 = stream < pmn ? (pm0 + stream) * 16 : half_n + (pm0 + stream - pmn) * 16;
#else
        const int row0 = (pm0 + stream) * 16;
#endif
        const int ra = max(min(row0 + g, N - 1), 0);
        const int rb = max(min(row0 + g + 8, N - 1), 0);
        qa = q + (long long)ra * q_row_bytes;
        qb = q + (long long)rb * q_row_bytes;
        sa = s + (long long)ra * s_row_bytes;
        sb = s + (long long)rb * s_row_bytes;
    };

    // Weights in two register buffers of UNROLL = 4 groups (loads of one in flight while
    // the other is multiplied). A buffer is two 16-byte loads per lane and row: lane t
    // reads bytes [16t, 16t + 16) of two consecutive groups (a row's 64 bytes per quad,
    // four 16-byte pieces per row and load), and one swap with lane t ^ 2 leaves each lane
    // 8 bytes of each group: lane t holds the group's bytes [8 perm(t), +8), perm = 0, 2,
    // 1, 3 (the activations are staged in the same order). Lane t also loads the scales of
    // group t of the buffer (rows g and g + 8); the quad shares them by shuffle. A group
    // past the slice has scale 0 (and a pair past it loads nothing).
    uint4 rawA[UNROLL / 2][2], rawB[UNROLL / 2][2];
    u32 scA[2], scB[2];  // the scales as stored, converted where they multiply
    auto load = [&](uint4 (&raw)[UNROLL / 2][2], u32 (&sc)[2], int gb, int ge) {
#pragma unroll
        for (int p = 0; p < UNROLL / 2; ++p) {
            if (active && gb + 2 * p < ge) {
                const long long off = (long long)(gb + 2 * p) * 32 + 16 * t;
                raw[p][0] = __ldg((const uint4*)(qa + off));
                raw[p][1] = __ldg((const uint4*)(qb + off));
            } else {
                raw[p][0] = raw[p][1] = make_uint4(0u, 0u, 0u, 0u);
            }
        }
        if (active && gb + t < ge) {
            sc[0] = fmt_group_scale_bits(sa, gb + t);
            sc[1] = fmt_group_scale_bits(sb, gb + t);
        } else {
            sc[0] = sc[1] = 0u;  // +0 in f16
        }
    };
    // This warp's slice of the slab [s0, s0 + sg).
    auto slice_of = [&](int s0, int& gb, int& ge) {
        const int sg = min(slab, g1 - s0);
        gb = s0 + slice * sg / ks;
        ge = s0 + (slice + 1) * sg / ks;
    };

#if CLUSTER > 1
    cluster_arrive_relaxed();  // this block has started (waited for before the staging)
#endif
    int gb, ge;
    next_pass();
    slice_of(g0, gb, ge);
    load(rawA, scA, gb, ge);

    // The kernel before this one wrote x (and the residual); nothing above read or wrote
    // global memory but the weights. Every thread, once, on the only path.
    NINFER_PDL_WAIT();
    NINFER_PDL_TRIGGER();

    const long long x_stride = PRO_SWIGLU ? 2LL * K : (long long)K;

    float acc[NT][4];
    // Multiplies UNROLL groups from b0 (staged slab from s0) into acc, a group at a time,
    // its NT n-tiles' mma chains interleaved.
    auto compute = [&](const uint4 (&raw)[UNROLL / 2][2], const u32 (&scl)[2], int b0, int ge, int s0) {
        // The swap: lanes t < 2 keep their first 8 bytes (first group) and send the rest,
        // lanes t >= 2 keep their last 8 (second group); wq = (first group's 2 words,
        // second group's 2 words).
        const bool low = t < 2;
        uint4 wq[UNROLL / 2][2];
#pragma unroll
        for (int p = 0; p < UNROLL / 2; ++p)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const uint4 v = raw[p][r];
                const u32 r0 = __shfl_xor_sync(0xffffffffu, low ? v.z : v.x, 2);
                const u32 r1 = __shfl_xor_sync(0xffffffffu, low ? v.w : v.y, 2);
                wq[p][r] = low ? make_uint4(v.x, v.y, r0, r1) : make_uint4(r0, r1, v.z, v.w);
            }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            u32 pa[PAIRS], pb[PAIRS];
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const uint4 v = wq[u >> 1][r];
                const u32 w[2] = { (u & 1) ? v.z : v.x, (u & 1) ? v.w : v.y };
                fmt_lane_convert(w, r == 0 ? pa : pb);
            }
            const float sau = fmt_scale_of_bits(__shfl_sync(0xffffffffu, scl[0], (lane & ~3) | u));
            const float sbu = fmt_scale_of_bits(__shfl_sync(0xffffffffu, scl[1], (lane & ~3) | u));
            const int gx = min(b0 + u, ge - 1);  // a staged group: finite fragments
            const uint4* xg = smem4 + (gx - s0) * NT * XQ * 32 + lane;
            // Step-major over all NT n-tiles, so that the NT accumulator chains interleave
            // (an mma waits for the previous one of its chain only). Every n-tile is
            // multiplied, also past the last token's columns: a column's products touch
            // that column only, and the outputs read columns < 3T.
            float c[NT][4];
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
                    const int st = 2 * h + s2;
                    const u32 a[4] = { pa[2 * st], pb[2 * st], pa[2 * st + 1], pb[2 * st + 1] };
#pragma unroll
                    for (int j = 0; j < NT; ++j) {
                        const u32 bb[2] = { xb[j][2 * s2], xb[j][2 * s2 + 1] };
                        if (st == 0) mma_zero_c(c[j], a, bb);
                        else mma_acc_c(c[j], a, bb);
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                acc[j][0] = fmaf(sau, c[j][0], acc[j][0]);
                acc[j][1] = fmaf(sau, c[j][1], acc[j][1]);
                acc[j][2] = fmaf(sbu, c[j][2], acc[j][2]);
                acc[j][3] = fmaf(sbu, c[j][3], acc[j][3]);
            }
        }
    };

    // The sums' region, after the slab's; with RMSNorm then each staging unit's sum of
    // squares (slab x T x 4 floats).
    float* red = (float*)(smem4 + (long long)slab * NT * XQ * 32);
    int staged = -1;  // the slab in shared memory (its first group), none yet
    // Stages the slab of sg groups from s0 (linear/mma_exact.cuh) and, with RMSNorm, adds
    // its squares to the K-range's running sums.
    auto stage_slab = [&](int s0, int sg) {
#if CLUSTER > 1
        // The cluster's blocks each stage a share into every block: all have started, and
        // after the barrier all shares are in place. One slab a K-range (the host's plan),
        // staged once, before the passes, by every block (also one with no m-tile).
        cluster_wait();
        stage_split(smem4, PRO_RMS ? ssu_at(red) : nullptr, x, x_stride, pw, s0, sg, T, K,
                    cluster_rank());
        cluster_sync();
#else
        __syncthreads();  // every warp is done reading the previous slab
        stage_split(smem4, PRO_RMS ? ssu_at(red) : nullptr, x, x_stride, pw, s0, sg, T, K);
        __syncthreads();
#endif
        staged = s0;
#if PRO_RMS
        // Column w's squares of this slab, warp w, in a fixed order; added to the
        // K-range's running sum (reset by the K-range's first slab).
        const float* ssu = ssu_at(red);
        for (int w = warp; w < T; w += WARPS) {
            float a = 0.0f;
            for (int j = lane; j < sg * 4; j += 32) a += ssu[((j >> 2) * T + w) * 4 + (j & 3)];
            a = warp_sum(a);
            if (lane == 0) ss_blk[w] = (s0 == g0 ? 0.0f : ss_blk[w]) + a;
        }
#endif
    };
#if CLUSTER > 1
    stage_slab(g0, g1 - g0);
#endif
    while (pmn > 0) {
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;

        for (int s0 = g0; s0 < g1; s0 += slab) {
            const int sg = min(slab, g1 - s0);
            if (s0 > g0) {
                slice_of(s0, gb, ge);
                load(rawA, scA, gb, ge);  // the registers are free: this warp's last compute is done
            }
            if (s0 != staged) stage_slab(s0, sg);

            // Stream this warp's slice, two buffers of UNROLL groups: load one while the
            // other is multiplied.
            if (active) {
                for (int b0 = gb; b0 < ge; b0 += 2 * UNROLL) {
                    load(rawB, scB, b0 + UNROLL, ge);
                    compute(rawA, scA, b0, ge, s0);
                    load(rawA, scA, b0 + 2 * UNROLL, ge);
                    if (b0 + UNROLL < ge) compute(rawB, scB, b0 + UNROLL, ge, s0);
                }
            }
        }

        // The warps' sums meet in shared memory (their own region): accumulator e of n-tile
        // j is row g (+8 for e >= 2), column 8j + 2t + (e & 1).
        __syncthreads();  // the previous pass's sums are read
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                red[(warp * 16 + g + (e >= 2 ? 8 : 0)) * RED_LD + 8 * j + 2 * t + (e & 1)] = acc[j][e];
        __syncthreads();

#if EPI_SWIGLU && PRO_RMS
        write_pass_swiglu(red, pm0, pmn, ks, T, N, K, kr, kb, part, y, ss_blk, eps);
#elif EPI_SWIGLU
        write_pass_swiglu(red, pm0, pmn, ks, T, N, K, kr, kb, part, y, nullptr, eps);
#elif PRO_RMS
        write_pass(red, pm0, pmn, ks, T, N, K, kr, kb, part, y, residual, ss_blk, eps{% if epilogue == "conv" %} CONV_ARGS{% endif %});
#else
        write_pass(red, pm0, pmn, ks, T, N, K, kr, kb, part, y, residual, nullptr, eps{% if epilogue == "conv" %} CONV_ARGS{% endif %});
#endif

        next_pass();
        if (pmn > 0) {
            slice_of(g0, gb, ge);
            load(rawA, scA, gb, ge);
        }
    }
    // Several K-ranges: the last block of the m-range to finish adds them (or, without
    // counters, linear/splitk_sum.cu does); rows of y (SwiGLU: of I).
#if PRO_RMS
    const float* ss_end = ss_blk;
#else
    const float* ss_end = nullptr;
#endif
#if EPI_SWIGLU
    splitk_finish(kr, (N / 2 + 15) / 16, 16, N / 2, T, N, K, part, ss_end, counters, y,
                  residual, eps);
#else
    splitk_finish(kr, (N + 15) / 16, 16, N, T, N, K, part, ss_end, counters, y, residual, eps{% if epilogue == "conv" %}
                  CONV_ARGS{% endif %});
#endif
}
