// bench/gdn split: can a GDN decode step split in two reach issue 5's 75% of copy at 8 lanes?
//
// The fused step (gdn/recurrent.cu) runs the conv, the gates and the q/k norms in every
// block before its state math, behind block barriers; at 8 lanes on the 27B shape its best
// tile moves the state at 59% of copy (bench/gdn run 9), the blocks' chains idling DRAM
// between waves. Here the step is two kernels, as a standalone measurement (no engine):
//   A  "prep": conv + SiLU with the conv window, q/k L2 norms (q scaled), the gates;
//      grid (HK + HV, lanes), the work of gdn/prep.cu at T = 1. Writes q, k, v, g, beta.
//   B  "update": the state recurrence alone. A block owns RPT columns per half-warp of
//      one (lane, value head); its state slice is loaded before the PDL wait (nothing of
//      the step writes it), then q, k, v and the gates (L2), the math, the stores. No block
//      barrier, few registers: many blocks resident per SM to keep DRAM busy.
// Timed (CUDA events around a captured graph of 40 steps, PDL edges, 4 state sets that
// together exceed L2): B alone and A + B, f32 and f16 state, RPT 1 / 2 / 4; the copy rate
// (cudaMemcpy device to device, read + written bytes) in the same run. A spot check
// compares B's f32 result with the host's on a few columns.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o split split.cu && ./split
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int LANES = 8, HK = 16, HV = 48, DK = 128, DV = 128, KC = 4;
constexpr int KD = HK * DK, CONV = 2 * KD + HV * DV;
constexpr int SETS = 4, STEPS = 40;
constexpr long long SCOLS = (long long)LANES * HV * DV;   // state columns
constexpr long long SELEMS = SCOLS * DK;

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// ---- A: prep at T = 1 -------------------------------------------------------------------
constexpr int A_THREADS = 256;
__global__ void __launch_bounds__(A_THREADS) prep(const float* __restrict__ mixed, const float* __restrict__ a_in,
                                                  const float* __restrict__ b_in, const float* __restrict__ conv_w,
                                                  const float* __restrict__ a_log, const float* __restrict__ dt_bias,
                                                  float* conv_state, float* __restrict__ q, float* __restrict__ k,
                                                  float* __restrict__ v, float* __restrict__ g, float* __restrict__ beta) {
    __shared__ float red[2][A_THREADS / 32];
    const int lane = blockIdx.y, x = blockIdx.x, tid = threadIdx.x;
    const bool key = x < HK;
    // One channel per thread: q (dk) then k (dk) of a key head, or dv of a value head.
    const int nch = key ? 2 * DK : DV;
    int ch = 0;
    if (tid < nch) ch = key ? (tid < DK ? x * DK + tid : KD + x * DK + tid - DK) : 2 * KD + (x - HK) * DV + tid;
    float w[KC], win[KC - 1];
    if (tid < nch) {
        for (int j = 0; j < KC; ++j) w[j] = conv_w[ch * KC + j];
        for (int j = 0; j < KC - 1; ++j) win[j] = conv_state[((long long)lane * CONV + ch) * (KC - 1) + j];
    }
    pdl_wait();
    pdl_trigger();
    float y = 0.f;
    if (tid < nch) {
        const float xi = mixed[(long long)lane * CONV + ch];
        float acc = 0.f;
        for (int j = 0; j < KC - 1; ++j) acc = fmaf(w[j], win[j], acc);
        acc = fmaf(w[KC - 1], xi, acc);
        y = acc / (1.f + expf(-acc));
        for (int j = 0; j + 1 < KC - 1; ++j) conv_state[((long long)lane * CONV + ch) * (KC - 1) + j] = win[j + 1];
        conv_state[((long long)lane * CONV + ch) * (KC - 1) + KC - 2] = xi;
    }
    if (key) {
        float sq = tid < DK ? y * y : 0.f, sk = (tid >= DK && tid < 2 * DK) ? y * y : 0.f;
        for (int o = 16; o > 0; o >>= 1) {
            sq += __shfl_xor_sync(0xffffffffu, sq, o);
            sk += __shfl_xor_sync(0xffffffffu, sk, o);
        }
        if ((tid & 31) == 0) { red[0][tid >> 5] = sq; red[1][tid >> 5] = sk; }
        __syncthreads();
        float tq = 0.f, tk = 0.f;
        for (int i = 0; i < A_THREADS / 32; ++i) { tq += red[0][i]; tk += red[1][i]; }
        if (tid < DK) q[((long long)lane * HK + x) * DK + tid] = y * (rsqrtf((float)DK) / sqrtf(tq + 1e-6f));
        else if (tid < 2 * DK) k[((long long)lane * HK + x) * DK + tid - DK] = y / sqrtf(tk + 1e-6f);
    } else {
        const int h = x - HK;
        if (tid < DV) v[((long long)lane * HV + h) * DV + tid] = y;
        if (tid == 0) {
            const float at = a_in[lane * HV + h] + dt_bias[h];
            const float sp = at > 20.f ? at : log1pf(expf(at));
            g[lane * HV + h] = -expf(a_log[h]) * sp;
            beta[lane * HV + h] = 1.f / (1.f + expf(-b_in[lane * HV + h]));
        }
    }
}

// ---- B: the state update ----------------------------------------------------------------
// 16 lanes per column, 8 elements each (dk = 128); a half-warp owns RPT columns.
template <typename S> struct Slice;
template <> struct Slice<float> {
    static __device__ __forceinline__ void ld(const float* p, float (&s)[8]) {
        const float4 a = __ldcs((const float4*)p), b = __ldcs((const float4*)p + 1);
        s[0] = a.x; s[1] = a.y; s[2] = a.z; s[3] = a.w; s[4] = b.x; s[5] = b.y; s[6] = b.z; s[7] = b.w;
    }
    static __device__ __forceinline__ void st(float* p, const float (&s)[8]) {
        __stcs((float4*)p, make_float4(s[0], s[1], s[2], s[3]));
        __stcs((float4*)p + 1, make_float4(s[4], s[5], s[6], s[7]));
    }
};
template <> struct Slice<__half> {
    static __device__ __forceinline__ void ld(const __half* p, float (&s)[8]) {
        const uint4 u = __ldcs((const uint4*)p);
        const __half2* h = (const __half2*)&u;
        for (int i = 0; i < 4; ++i) { const float2 f = __half22float2(h[i]); s[2 * i] = f.x; s[2 * i + 1] = f.y; }
    }
    static __device__ __forceinline__ void st(__half* p, const float (&s)[8]) {
        uint4 u;
        __half2* h = (__half2*)&u;
        for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(s[2 * i], s[2 * i + 1]);
        __stcs((uint4*)p, u);
    }
};
__device__ __forceinline__ float half_sum(float x) {
    for (int o = 8; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}
template <typename S, int RPT, int B_WARPS>
__global__ void __launch_bounds__(B_WARPS * 32) update(const float* __restrict__ q, const float* __restrict__ k,
                                                        const float* __restrict__ v, const float* __restrict__ g,
                                                        const float* __restrict__ beta, S* __restrict__ state,
                                                        float* __restrict__ out) {
    constexpr int COLS = B_WARPS * 2 * RPT;
    const int lane = blockIdx.z, h = blockIdx.y, kh = h / (HV / HK);
    const int t = threadIdx.x, half = t >> 4, l = t & 15;
    const int j0 = blockIdx.x * COLS + half * RPT;            // this half-warp's columns
    const long long col0 = ((long long)lane * HV + h) * DV + j0;
    float s[RPT][8];
#pragma unroll
    for (int r = 0; r < RPT; ++r) Slice<S>::ld(state + (col0 + r) * DK + 8 * l, s[r]);
    pdl_wait();
    pdl_trigger();
    float qs[8], ks[8];
    {
        const float4* qp = (const float4*)(q + ((long long)lane * HK + kh) * DK + 8 * l);
        const float4* kp = (const float4*)(k + ((long long)lane * HK + kh) * DK + 8 * l);
        const float4 q0 = qp[0], q1 = qp[1], k0 = kp[0], k1 = kp[1];
        qs[0] = q0.x; qs[1] = q0.y; qs[2] = q0.z; qs[3] = q0.w; qs[4] = q1.x; qs[5] = q1.y; qs[6] = q1.z; qs[7] = q1.w;
        ks[0] = k0.x; ks[1] = k0.y; ks[2] = k0.z; ks[3] = k0.w; ks[4] = k1.x; ks[5] = k1.y; ks[6] = k1.z; ks[7] = k1.w;
    }
    const float eg = expf(g[lane * HV + h]), bt = beta[lane * HV + h];
    float vj[RPT];
#pragma unroll
    for (int r = 0; r < RPT; ++r) vj[r] = v[((long long)lane * HV + h) * DV + j0 + r];
    float kq = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) kq = fmaf(qs[e], ks[e], kq);
    kq = half_sum(kq);
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
        float sa = 0.f, sb = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e) { sa = fmaf(s[r][e], ks[e], sa); sb = fmaf(s[r][e], qs[e], sb); }
        sa = half_sum(sa);
        sb = half_sum(sb);
        const float delta = bt * fmaf(-eg, sa, vj[r]);
        const float o = fmaf(kq, delta, eg * sb);
#pragma unroll
        for (int e = 0; e < 8; ++e) s[r][e] = fmaf(ks[e], delta, eg * s[r][e]);
        Slice<S>::st(state + (col0 + r) * DK + 8 * l, s[r]);
        if (l == 0) out[col0 + r] = o;
    }
}

// ---- harness -----------------------------------------------------------------------------
struct Bufs {
    float *mixed, *a, *b, *conv_w, *a_log, *dt_bias, *conv_state, *q, *k, *v, *g, *beta, *out;
};
template <typename K, typename... Args>
static void launch(K kernel, dim3 grid, dim3 block, cudaStream_t st, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.stream = st;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, kernel, args...));
}
template <typename S, int RPT, int W>
static void step(const Bufs& b, S* st, cudaStream_t s, int what) {
    if (what >= 1)
        launch(prep, dim3(HK + HV, LANES), dim3(A_THREADS), s, (const float*)b.mixed, (const float*)b.a,
               (const float*)b.b, (const float*)b.conv_w, (const float*)b.a_log, (const float*)b.dt_bias,
               b.conv_state, b.q, b.k, b.v, b.g, b.beta);
    if (what <= 1)
        launch(update<S, RPT, W>, dim3(DV / (W * 2 * RPT), HV, LANES), dim3(W * 32), s, (const float*)b.q,
               (const float*)b.k, (const float*)b.v, (const float*)b.g, (const float*)b.beta, st, b.out);
}
// what: 0 = B alone, 1 = A then B, 2 = A alone.
template <typename S, int RPT, int W>
static float time_steps(const Bufs& b, S* sets, cudaStream_t s, int what) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < STEPS; ++i) step<S, RPT, W>(b, sets + (i % SETS) * SELEMS, s, what);
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> us;
    for (int rep = 0; rep < 7; ++rep) {
        CK(cudaEventRecord(e0, s));
        CK(cudaGraphLaunch(exec, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep > 0) us.push_back(1000.f * ms / STEPS);
    }
    std::sort(us.begin(), us.end());
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    return us[us.size() / 2];
}
static float* dev_rand(size_t n, float lo, float hi, unsigned seed, std::vector<float>* keep = nullptr) {
    std::vector<float> h(n);
    srand(seed);
    for (auto& x : h) x = lo + (hi - lo) * (rand() / (float)RAND_MAX);
    float* d;
    CK(cudaMalloc(&d, n * 4));
    CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
    if (keep) *keep = h;
    return d;
}
template <typename S, int RPT, int W>
static void run(const char* name, const Bufs& b, S* sets, cudaStream_t s, double copy_gbs) {
    const double bytes = 2.0 * SELEMS * sizeof(S);  // state read and written
    for (int p = 0; p < 2; ++p) {
        const float us = time_steps<S, RPT, W>(b, sets, s, p);
        printf("%-5s RPT %d warps %d %-8s %8.2f us  %7.0f GB/s  %5.1f%% of copy\n", name, RPT, W,
               p ? "A + B" : "B alone", us, bytes / us / 1e3, 100.0 * bytes / us / 1e3 / copy_gbs);
    }
}
int main() {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    // Copy rate: 256 MB device to device, read + written bytes.
    {
        const size_t n = 256u << 20;
        void *x, *y;
        CK(cudaMalloc(&x, n));
        CK(cudaMalloc(&y, n));
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        std::vector<float> ms(9);
        for (auto& m : ms) {
            CK(cudaEventRecord(e0, s));
            CK(cudaMemcpyAsync(y, x, n, cudaMemcpyDeviceToDevice, s));
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&m, e0, e1));
        }
        std::sort(ms.begin(), ms.end());
        const double gbs = 2.0 * n / (ms[4] * 1e-3) / 1e9;
        printf("copy %.0f GB/s (256 MB device to device, read + written)\n", gbs);
        CK(cudaFree(x));
        CK(cudaFree(y));
        Bufs b;
        std::vector<float> hq, hk, hv, hg, hb, hs;
        b.mixed = dev_rand((size_t)LANES * CONV, -1, 1, 1);
        b.a = dev_rand(LANES * HV, -1, 1, 2);
        b.b = dev_rand(LANES * HV, -1, 1, 3);
        b.conv_w = dev_rand((size_t)CONV * KC, -0.5, 0.5, 4);
        b.a_log = dev_rand(HV, -1, 1, 5);
        b.dt_bias = dev_rand(HV, -1, 1, 6);
        b.conv_state = dev_rand((size_t)LANES * CONV * (KC - 1), -1, 1, 7);
        b.q = dev_rand((size_t)LANES * HK * DK, -0.1, 0.1, 8, &hq);
        b.k = dev_rand((size_t)LANES * HK * DK, -0.1, 0.1, 9, &hk);
        b.v = dev_rand((size_t)LANES * HV * DV, -1, 1, 10, &hv);
        b.g = dev_rand(LANES * HV, -0.5, 0, 11, &hg);
        b.beta = dev_rand(LANES * HV, 0, 1, 12, &hb);
        CK(cudaMalloc(&b.out, SCOLS * 4));
        float* s32 = dev_rand((size_t)SETS * SELEMS, -0.05, 0.05, 13);
        __half* s16;
        CK(cudaMalloc(&s16, (size_t)SETS * SELEMS * 2));
        CK(cudaMemset(s16, 0, (size_t)SETS * SELEMS * 2));
        // Spot check: one update of set 0 (f32) against the host on a few columns.
        {
            hs.resize(SELEMS);
            CK(cudaMemcpy(hs.data(), s32, SELEMS * 4, cudaMemcpyDeviceToHost));
            step<float, 2, 4>(b, s32, s, 0);
            CK(cudaStreamSynchronize(s));
            std::vector<float> after(SELEMS), out(SCOLS);
            CK(cudaMemcpy(after.data(), s32, SELEMS * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(out.data(), b.out, SCOLS * 4, cudaMemcpyDeviceToHost));
            double worst = 0;
            for (long long c : {0LL, 1LL, 777LL, 12345LL, SCOLS - 1}) {
                const int lane = (int)(c / (HV * DV)), h = (int)(c / DV % HV), kh = h / (HV / HK);
                const float* qq = &hq[((size_t)lane * HK + kh) * DK];
                const float* kk = &hk[((size_t)lane * HK + kh) * DK];
                const double eg = std::exp((double)hg[lane * HV + h]), bt = hb[lane * HV + h];
                double sa = 0, sb = 0, kq = 0;
                for (int i = 0; i < DK; ++i) { sa += hs[c * DK + i] * kk[i]; sb += hs[c * DK + i] * qq[i]; kq += kk[i] * qq[i]; }
                const double delta = bt * (hv[c] - eg * sa);
                const double o = kq * delta + eg * sb;
                worst = std::max(worst, std::fabs(o - out[c]) / (std::fabs(o) + 1e-6));
                for (int i = 0; i < DK; ++i) {
                    const double want = eg * hs[c * DK + i] + kk[i] * delta;
                    worst = std::max(worst, std::fabs(want - after[c * DK + i]) / (std::fabs(want) + 1e-3));
                }
            }
            printf("spot check (5 columns, f32): worst relative error %.2e %s\n", worst, worst < 1e-4 ? "ok" : "FAIL");
        }
        printf("A alone %.2f us\n", time_steps<float, 2, 4>(b, s32, s, 2));
        run<float, 1, 4>("f32", b, s32, s, gbs);
        run<float, 2, 4>("f32", b, s32, s, gbs);
        run<float, 4, 4>("f32", b, s32, s, gbs);
        run<float, 2, 2>("f32", b, s32, s, gbs);
        run<float, 2, 8>("f32", b, s32, s, gbs);
        run<float, 4, 2>("f32", b, s32, s, gbs);
        run<__half, 2, 4>("f16", b, s16, s, gbs);
        run<__half, 4, 4>("f16", b, s16, s, gbs);
        run<__half, 8, 4>("f16", b, s16, s, gbs);
        run<__half, 4, 2>("f16", b, s16, s, gbs);
        run<__half, 8, 2>("f16", b, s16, s, gbs);
        run<__half, 4, 8>("f16", b, s16, s, gbs);
    }
    return 0;
}
