// The exact route's tensor-core pieces shared by linear/gemv_mma.cu and
// linear/gemv_mma_ring.cu: the mma steps, the three-way bf16 split of an activation, the
// staging of a K-range's split fragments (with the fused prologue) and the outputs of a
// pass, and the end of a split-K launch (splitk_finish). The including kernel defines TT, NT, XQ, PAIRS, BLOCK, RED_LD, PRO_RMS,
// PRO_SWIGLU, EPI_SWIGLU, ROWS (rows of a warp's stream in a pass) and STAGE_LANE(tq) (which quarter
// of a group lane quad t = tq holds: the order its weights reach the lanes in) and PARTS
// (3: the exact split; 1: activations rounded to bf16, one column a token) first;
// the Tera context's `prologue` and `epilogue` are this file's too.
#ifndef NINFER_LINEAR_MMA_EXACT
#define NINFER_LINEAR_MMA_EXACT

// Blocks a thread block cluster (linear/gemv_mma.cu's `cluster`): the cluster's blocks
// share one K-range and stage its activations together, each a share of the units into
// every block's shared memory (sm_90's distributed shared memory), so that the K-range's
// activations leave L2 once a cluster instead of once a block. 1: no cluster.
#ifndef CLUSTER
#define CLUSTER 1
#endif

// Block b's m-range and K-range. The grid is m-ranges x kr; without clusters block b is
// m-range b / kr, K-range b % kr; with clusters of CLUSTER blocks the cluster c = b /
// CLUSTER takes K-range c % kr and its blocks consecutive m-ranges ((c / kr) CLUSTER +
// rank), so that a cluster's blocks share their K-range (m-ranges a multiple of CLUSTER).
__device__ __forceinline__ void block_ranges(int kr, int& mrange, int& kb) {
    const int c = blockIdx.x / CLUSTER;
    kb = c % kr;
    mrange = (c / kr) * CLUSTER + (blockIdx.x - c * CLUSTER);
}

#if CLUSTER > 1
// This block's rank in its cluster.
__device__ __forceinline__ int cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return (int)r;
}
// The cluster barrier in two halves: arrive (relaxed: it orders nothing, it only says this
// block has started) early, wait before the first store into another block's shared memory.
__device__ __forceinline__ void cluster_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}
// Every block's stores into every other's shared memory are done and visible.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The address of `local`'s counterpart in block `d` of the cluster.
__device__ __forceinline__ u32 cluster_addr(const void* local, int d) {
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                 : "=r"(r) : "r"((u32)__cvta_generic_to_shared(local)), "r"(d));
    return r;
}
#endif

// *p = v in every block of the cluster (this block's own without clusters).
__device__ __forceinline__ void st_staged(uint4* p, uint4 v) {
#if CLUSTER > 1
#pragma unroll
    for (int d = 0; d < CLUSTER; ++d)
        asm volatile("st.shared::cluster.v4.u32 [%0], { %1, %2, %3, %4 };"
                     :: "r"(cluster_addr(p, d)), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
#else
    *p = v;
#endif
}
__device__ __forceinline__ void st_staged(float* p, float v) {
#if CLUSTER > 1
#pragma unroll
    for (int d = 0; d < CLUSTER; ++d)
        asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(cluster_addr(p, d)), "f"(v) : "memory");
#else
    *p = v;
#endif
}

// c = A * B with a zero accumulator (the first k16 step of a group).
__device__ __forceinline__ void mma_zero_c(float* c, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %10, %10, %10, %10 };"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

// c += A * B.
__device__ __forceinline__ void mma_acc_c(float* c, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Splits the pair (a, b) into three bf16x2 whose sums are exactly a and b.
__device__ __forceinline__ void split3(float a, float b, u32* hi, u32* mid, u32* lo) {
    const u32 h = pack_bf16x2(a, b);
    const float ra = a - __uint_as_float(h << 16);
    const float rb = b - __uint_as_float(h & 0xffff0000u);
    const u32 m = pack_bf16x2(ra, rb);
    const float la = ra - __uint_as_float(m << 16);
    const float lb = rb - __uint_as_float(m & 0xffff0000u);
    *hi = h;
    *mid = m;
    *lo = pack_bf16x2(la, lb);  // exact: at most 8 significant bits remain
}

// Stages groups [s0, s0 + sg) of all T columns at xs, in the B-fragment order (per group,
// n-tile, 16-byte piece: the 32 lanes' pieces contiguous, conflict-free 16-byte reads):
// unit (group, token, lane quarter tq) writes the PARTS split fragments of that token's
// FMT_LANE_N activations for the lanes (column % 8) * 4 + tq. The prologue is applied
// (rmsnorm / rmsnorm1p stage x * w and leave each unit's sum of squares in ssu[unit],
// 1 / rms being applied to the outputs; swiglu stages silu(gate) * up, x rows holding
// gate then up). The caller synchronises the block around it. With clusters, block `rank`
// stages the rank-th share of the units into every block of its cluster (st_staged), and
// the caller synchronises the cluster instead.
__device__ __forceinline__ void stage_split(uint4* xs, float* ssu, const float* __restrict__ x,
                                            long long x_stride, const float* __restrict__ pw,
                                            int s0, int sg, int T, int K, int rank = 0) {
    const int units = sg * T * 4;
    const int u0 = rank * units / CLUSTER;
    const int u1 = (rank + 1) * units / CLUSTER;
    for (int u = u0 + threadIdx.x; u < u1; u += BLOCK) {
        const int tq = u & 3;
        const int tk = (u >> 2) % T;
        const int gl = (u >> 2) / T;
        const long long k0 = (long long)(s0 + gl) * FMT_GROUP + STAGE_LANE(tq) * FMT_LANE_N;
        const float* xp = x + (long long)tk * x_stride + k0;
        float v[FMT_LANE_N];
#pragma unroll
        for (int i = 0; i < FMT_LANE_N / 4; ++i) {
            const float4 a = __ldg((const float4*)xp + i);
            v[4 * i] = a.x; v[4 * i + 1] = a.y; v[4 * i + 2] = a.z; v[4 * i + 3] = a.w;
        }
#if PRO_RMS
        {
            // The norm weights' loads issued with x's, so that a unit waits on L2 once.
            float4 w4[FMT_LANE_N / 4];
#pragma unroll
            for (int i = 0; i < FMT_LANE_N / 4; ++i) w4[i] = __ldg((const float4*)(pw + k0) + i);
            float sq = 0.0f;
#pragma unroll
            for (int i = 0; i < FMT_LANE_N; ++i) sq = fmaf(v[i], v[i], sq);
            st_staged(ssu + u, sq);
#pragma unroll
            for (int i = 0; i < FMT_LANE_N / 4; ++i) {
                const float wv[4] = { w4[i].x, w4[i].y, w4[i].z, w4[i].w };
#pragma unroll
                for (int m = 0; m < 4; ++m) {
{%- if prologue == "rmsnorm1p" %}
                    const float scale = 1.0f + wv[m];
{%- else %}
                    const float scale = wv[m];
{%- endif %}
                    v[4 * i + m] = v[4 * i + m] * scale;
                }
            }
        }
#elif PRO_SWIGLU
#pragma unroll
        for (int i = 0; i < FMT_LANE_N / 4; ++i) {
            const float4 a = __ldg((const float4*)(xp + K) + i);
            const float up[4] = { a.x, a.y, a.z, a.w };
#pragma unroll
            for (int m = 0; m < 4; ++m) {
                const float gv = v[4 * i + m];
                // Fast intrinsics (a few ulp), as gemv_ring.cu: every block computes silu
                // over its K-range of the row.
                const float silu = __fdividef(gv, 1.0f + __expf(-gv));
                v[4 * i + m] = __fmul_rn(silu, up[m]);
            }
        }
#endif
        u32 fr[PARTS][PAIRS];
#pragma unroll
        for (int i = 0; i < PAIRS; ++i) {
#if PARTS == 3
            split3(v[fmt_pair_lo(i)], v[fmt_pair_hi(i)], &fr[0][i], &fr[1][i], &fr[2][i]);
#else
            fr[0][i] = pack_bf16x2(v[fmt_pair_lo(i)], v[fmt_pair_hi(i)]);
#endif
        }
#pragma unroll
        for (int p = 0; p < PARTS; ++p) {
            const int c = PARTS * tk + p;
            uint4* d = xs + ((gl * NT + (c >> 3)) * XQ) * 32 + (c & 7) * 4 + tq;
#pragma unroll
            for (int h = 0; h < XQ; ++h)
                st_staged(d + h * 32, make_uint4(fr[p][4 * h], fr[p][4 * h + 1], fr[p][4 * h + 2], fr[p][4 * h + 3]));
        }
    }
}

{%- if epilogue == "conv" %}
// The causal conv epilogue (epilogue "conv", a GDN in-projection at its lanes, one token
// each: column tk is lane tk): output rows c < conv_ch of column tk become
// silu(conv(window, y)), gdn/conv_step.cu's arithmetic in its order, and the lane's conv
// window [lanes][conv_ch][KC-1] moves on by y. Only the thread that writes an output
// reads and writes its window (one writer an output: write_pass with one K-range, else
// splitk_finish's last block, or linear/splitk_sum.cu where the host passes no counters).
#define KC {{ kc }}
#define CONV_PARAMS , const float* __restrict__ conv_w, float* __restrict__ conv_state, int conv_ch
#define CONV_ARGS , conv_w, conv_state, conv_ch
{% include "gdn/conv_window.cuh" %}
{%- endif %}

{% if epilogue == "conv" %}
// Output (row r of stream st, column tk) of a pass, summed over its ks slices in slice order
// from red (row r of stream st, slice sl at (st * ks + sl) * ROWS + r, its columns
// PARTS tk + part): hi + (mid + lo) (hi alone with one part).
__device__ __forceinline__ float pass_sum(const float* red, int st, int ks, int r, int tk) {
    float hi = 0.0f, mid = 0.0f, lo = 0.0f;
    for (int sl = 0; sl < ks; ++sl) {
        const float* p = red + ((st * ks + sl) * ROWS + r) * RED_LD + PARTS * tk;
        hi += p[0];
#if PARTS == 3
        mid += p[1];
        lo += p[2];
#endif
    }
    return hi + (mid + lo);
}

// write_pass with the conv epilogue: the same outputs, in two phases. Every conv output's
// window is loaded and its value computed first; a block barrier whose predicate reads
// every value (so each thread's window loads have returned) comes before any window is
// stored back. A window stored while its own load is still in flight made this launch
// ~19 us longer on the 27B's bf16 in-projection (bench/gdn runs 58-60: ncu's stalls sit on
// the first use of the window, whose last element's store the compiler issues straight
// after the loads). Called by every thread of the block (the barrier). A thread has at most
// PER outputs: pmn <= WARPS streams of ROWS rows and T <= TT columns.
__device__ __forceinline__ void write_pass(const float* red, int pm0, int pmn, int ks, int T,
                                           int N, int K, int kr, int kb, float* part, float* y,
                                           const float* residual, const float* ss_blk, float eps CONV_PARAMS) {
    constexpr int PER = ROWS * TT / 32;
    const int outs = pmn * ROWS * T;
    float win[PER][KC > 1 ? KC - 1 : 1], xin[PER], val[PER];
    bool any_nan = false;
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const int o = threadIdx.x + i * BLOCK;
        const int r = (unsigned)o % ROWS;
        const int tk = (int)((unsigned)o / ROWS) % T;
        const int st = (int)((unsigned)o / ROWS) / T;
        const int row = (pm0 + st) * ROWS + r;
        if (o < outs && row < N) {
            float out = pass_sum(red, st, ks, r, tk);
            const long long at = (long long)tk * N + row;
#if PRO_RMS
            if (kr == 1) out *= rsqrtf(ss_blk[tk] / (float)K + eps);
#endif
            if (kr > 1) {
                part[(long long)kb * T * N + at] = out;
            } else if (row < conv_ch) {
                const float* cs = conv_state + ((long long)tk * conv_ch + row) * (KC - 1);
#pragma unroll
                for (int j = 0; j < KC - 1; ++j) win[i][j] = cs[j];
                xin[i] = out;
                val[i] = gdn_conv_value(conv_w + (long long)row * KC, win[i], out);
                any_nan |= val[i] != val[i];
            } else {
                y[at] = out;
            }
        }
    }
    __syncthreads_or(any_nan);
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const int o = threadIdx.x + i * BLOCK;
        const int r = (unsigned)o % ROWS;
        const int tk = (int)((unsigned)o / ROWS) % T;
        const int st = (int)((unsigned)o / ROWS) / T;
        const int row = (pm0 + st) * ROWS + r;
        if (o < outs && row < N && kr == 1 && row < conv_ch) {
            gdn_conv_move(win[i], xin[i], conv_state + ((long long)tk * conv_ch + row) * (KC - 1));
            y[(long long)tk * N + row] = val[i];
        }
    }
}
{%- else -%}
// The outputs of a pass: pmn streams from row pm0 * ROWS, each summed over its ks slices
// in slice order from red (row r of stream st, slice sl at (st * ks + sl) * ROWS + r, its
// columns PARTS tk + part), hi + (mid + lo) (hi alone with one part). One K-range: times 1 / rms (RMSNorm, from ss_blk)
// and plus the residual into y; several: into part[kb] (splitk_finish or
// linear/splitk_sum.cu adds them).
// Row fastest, so that the stores of a token's outputs are contiguous.
__device__ __forceinline__ void write_pass(const float* red, int pm0, int pmn, int ks, int T,
                                           int N, int K, int kr, int kb, float* part, float* y,
                                           const float* residual, const float* ss_blk, float eps) {
    const int outs = pmn * ROWS * T;
    for (int o = threadIdx.x; o < outs; o += BLOCK) {
        const int r = (unsigned)o % ROWS;  // ROWS a power of two: a mask and a shift
        const int tk = (int)((unsigned)o / ROWS) % T;
        const int st = (int)((unsigned)o / ROWS) / T;
        const int row = (pm0 + st) * ROWS + r;
        if (row < N) {
            float hi = 0.0f, mid = 0.0f, lo = 0.0f;
            for (int sl = 0; sl < ks; ++sl) {
                const float* p = red + ((st * ks + sl) * ROWS + r) * RED_LD + PARTS * tk;
                hi += p[0];
#if PARTS == 3
                mid += p[1];
                lo += p[2];
#endif
            }
            float out = hi + (mid + lo);
            const long long at = (long long)tk * N + row;
#if PRO_RMS
            if (kr == 1) out *= rsqrtf(ss_blk[tk] / (float)K + eps);
#endif
            if (kr > 1) {
                part[(long long)kb * T * N + at] = out;
            } else {
{%- if epilogue == "residual" %}
                out += residual[at];
{%- endif %}
                y[at] = out;
            }
        }
    }
}
{%- endif %}

#if EPI_SWIGLU
// The outputs of a pass of the SwiGLU epilogue: the pass's pmn pairs of m-tiles are its
// streams st < pmn (gate rows) and pmn + st (the up rows of the same outputs), each summed
// over its ks slices as write_pass does; output row = (pm0 + st) * ROWS + r of I = N / 2 a
// token. One K-range: silu(gate) * up into y, both scaled by 1 / rms first with RMSNorm.
// Several: the K-range's gate and up sums into part[kb] at rows row and I + row (of N), as
// write_pass leaves them; splitk_finish makes y of the whole sums.
__device__ __forceinline__ void write_pass_swiglu(const float* red, int pm0, int pmn, int ks,
                                                  int T, int N, int K, int kr, int kb,
                                                  float* part, float* y,
                                                  const float* ss_blk, float eps) {
    const int I = N / 2;
    const int outs = pmn * ROWS * T;
    for (int o = threadIdx.x; o < outs; o += BLOCK) {
        const int r = (unsigned)o % ROWS;
        const int tk = (int)((unsigned)o / ROWS) % T;
        const int st = (int)((unsigned)o / ROWS) / T;
        const int row = (pm0 + st) * ROWS + r;
        if (row < I) {
            float v[2];
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                float hi = 0.0f, mid = 0.0f, lo = 0.0f;
                for (int sl = 0; sl < ks; ++sl) {
                    const float* p =
                        red + (((st + half * pmn) * ks + sl) * ROWS + r) * RED_LD + PARTS * tk;
                    hi += p[0];
#if PARTS == 3
                    mid += p[1];
                    lo += p[2];
#endif
                }
                v[half] = hi + (mid + lo);
#if PRO_RMS
                if (kr == 1) v[half] *= rsqrtf(ss_blk[tk] / (float)K + eps);
#endif
            }
            if (kr > 1) {
                float* pk = part + (long long)kb * T * N + (long long)tk * N + row;
                pk[0] = v[0];
                pk[I] = v[1];
            } else {
                // silu with the fast intrinsics, as the SwiGLU prologue computes it.
                const float silu = __fdividef(v[0], 1.0f + __expf(-v[0]));
                y[(long long)tk * I + row] = __fmul_rn(silu, v[1]);
            }
        }
    }
}
#endif

// The end of a split-K launch (kr > 1), after the block's last pass wrote its K-range's sums
// of its m-range's rows to part[kb] ([kr][T][N] f32). With RMSNorm every block first leaves
// its K-range's sums of squares at part[kr][kb] ([kr][T] after the sums; every m-range's
// blocks of K-range kb compute the same bits, so which write lands does not matter).
//
// With `counters` (zeros at the launch, one a m-range; the host's NINFER_SPLITK_FUSED
// default) the reduction is folded in: the block fences its stores, then counts in on its
// m-range's counter, and the last of the m-range's kr blocks to count in (all kr K-ranges
// of its rows are then written and visible) adds each output's kr sums in K-range order,
// times 1 / rms from the K-ranges' sums of squares added in K-range order, plus the
// residual (SwiGLU epilogue: silu(gate) * up of the whole sums of gate row r and up row
// I + r, each times 1 / rms first). That is linear/splitk_sum.cu's arithmetic, so y has the
// same bits whichever block is last and as the second launch gives. It then resets the
// counter, so the next launch or graph replay finds zeros. Without `counters` (null)
// linear/splitk_sum.cu adds the sums in a second launch (no SwiGLU epilogue there).
//
// The grid is m-ranges x kr as the kernels split it: `units` units of `unit_rows` rows of
// the `out_rows` outputs (m-tiles, SwiGLU pairs of them, ring chunks). The block's m-range,
// K-range and rows are recomputed here from the launch rather than kept live through the
// kernel's main loop (registers are its limit). Called by every thread, after the PDL
// wait, at the kernel's end (the early exits below are past the wait).
__device__ __forceinline__ void splitk_finish(int kr, int units, int unit_rows, int out_rows,
                                              int T, int N, int K, float* part,
                                              const float* ss_blk, unsigned* counters,
                                              float* y, const float* residual, float eps{% if epilogue == "conv" %} CONV_PARAMS{% endif %}) {
    if (kr <= 1) return;
    const int mr = gridDim.x / kr;
    int mrange, kb;
    block_ranges(kr, mrange, kb);
    const int row0 = min((int)((long long)mrange * units / mr) * unit_rows, out_rows);
    const int row1 = min((int)((long long)(mrange + 1) * units / mr) * unit_rows, out_rows);
    const long long n = (long long)T * N;
#if PRO_RMS
    float* ss = part + (long long)kr * n;
    __syncthreads();  // ss_blk is whole (also in a block that had no pass)
    if (threadIdx.x < T) ss[kb * T + threadIdx.x] = ss_blk[threadIdx.x];
#endif
    if (counters == nullptr) return;
    __shared__ int is_last;
    __threadfence();  // this block's sums are visible device-wide before it counts in
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned* ctr = counters + mrange;
        const unsigned done = atomicAdd(ctr, 1u);
        is_last = done == (unsigned)(kr - 1);
        if (is_last) *ctr = 0u;  // every block of the m-range has counted in
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();
#if PRO_RMS
    __shared__ float inv_rms[TT];
    if (threadIdx.x < T) {
        // Other blocks wrote these: read through L2 (__ldcg), never a stale L1 line.
        float sq = __ldcg(ss + threadIdx.x);
        for (int r = 1; r < kr; ++r) sq += __ldcg(ss + r * T + threadIdx.x);
        inv_rms[threadIdx.x] = rsqrtf(sq / (float)K + eps);
    }
    __syncthreads();
#endif
    const int nr = row1 - row0;
    const int outs = nr * T;{% if epilogue == "conv" %}
    // The conv in two phases, a chunk of BLOCK x PER outputs at a time, as write_pass: every
    // window of the chunk loaded and used, a barrier reading every value, then the stores.
    // Every thread of the last block runs the same chunks (the barrier).
    constexpr int PER = ROWS * TT / 32;
    for (int base = 0; base < outs; base += BLOCK * PER) {
        float win[PER][KC > 1 ? KC - 1 : 1], xin[PER], val[PER];
        bool any_nan = false;
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            const int o = base + threadIdx.x + i * BLOCK;
            const int tk = o / nr;
            const int row = row0 + (o - tk * nr);
            if (o < outs) {
                const long long at = (long long)tk * N + row;
                float out = __ldcg(part + at);
                for (int r = 1; r < kr; ++r) out += __ldcg(part + r * n + at);
#if PRO_RMS
                out *= inv_rms[tk];
#endif
                if (row < conv_ch) {
                    const float* cs = conv_state + ((long long)tk * conv_ch + row) * (KC - 1);
#pragma unroll
                    for (int j = 0; j < KC - 1; ++j) win[i][j] = cs[j];
                    xin[i] = out;
                    val[i] = gdn_conv_value(conv_w + (long long)row * KC, win[i], out);
                    any_nan |= val[i] != val[i];
                } else {
                    y[at] = out;
                }
            }
        }
        __syncthreads_or(any_nan);
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            const int o = base + threadIdx.x + i * BLOCK;
            const int tk = o / nr;
            const int row = row0 + (o - tk * nr);
            if (o < outs && row < conv_ch) {
                gdn_conv_move(win[i], xin[i], conv_state + ((long long)tk * conv_ch + row) * (KC - 1));
                y[(long long)tk * N + row] = val[i];
            }
        }
    }{% else %}
    for (int o = threadIdx.x; o < outs; o += BLOCK) {
        const int tk = o / nr;
        const int row = row0 + (o - tk * nr);  // row fastest: contiguous loads and stores
        const long long at = (long long)tk * N + row;
#if EPI_SWIGLU
        const int I = N / 2;
        float g = __ldcg(part + at);
        float u = __ldcg(part + at + I);
        for (int r = 1; r < kr; ++r) {
            g += __ldcg(part + r * n + at);
            u += __ldcg(part + r * n + at + I);
        }
#if PRO_RMS
        g *= inv_rms[tk];
        u *= inv_rms[tk];
#endif
        // silu with the fast intrinsics, as write_pass_swiglu computes it.
        const float silu = __fdividef(g, 1.0f + __expf(-g));
        y[(long long)tk * I + row] = __fmul_rn(silu, u);
#else
        float out = __ldcg(part + at);
        for (int r = 1; r < kr; ++r) out += __ldcg(part + r * n + at);
#if PRO_RMS
        out *= inv_rms[tk];
#endif
{%- if epilogue == "residual" %}
        out += residual[at];
{%- endif %}
        y[at] = out;
#endif
    }{% endif %}
}

#endif  // NINFER_LINEAR_MMA_EXACT
