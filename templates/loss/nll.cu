{#
  Per row of logits x [rows, cols] (f32): the negative log-likelihood of the row's target,
    out[row] = logsumexp(x[row]) - x[row][targets[row]]   (f64, nats)
  what perplexity scores, so that the logits never leave the device. One block per row, two
  passes over the row (both through the read-only path: nothing writes x meanwhile):
    1. m = max(x), f32 (exact). fmaxf skips NaNs, but pass 2 does not, so a NaN anywhere
       gives NaN, as the host's f64 log-softmax (`perplexity::nll_of`) does.
    2. s = sum of expf(x[i] - m): each term in f32 with the full-precision expf (a few ulps,
       independent from term to term), accumulated in f64 in every thread and through the
       block's tree reduction.
  then out = (m + log(s)) - x[target], in f64, the host reference's order of operations.
  Why f64 for the sum: a vocabulary row (up to 248320 terms) is ~243 terms per thread of
  1024 then a 10-level tree; in f32 the sum's rounding would be of the order of the whole
  log-probability's allowance, while in f64 the error is the terms' own (~1e-7 relative,
  i.e. ~1e-7 nats), small enough to see one term missing from a flat row of 248320. The
  f64 adds cost nothing visible: the kernel is bound by reading the row.
  An all -inf row or an infinite logit gives NaN (inf - inf), a target logit of -inf gives
  +inf, a target outside the row gives NaN: the host's answers, all non-finite.
  Param: block (threads per block, a multiple of 32, at most 1024).
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}
{% include "elementwise/row_vec.cuh" %}

struct NllRowMax {
    float m;
    __device__ __forceinline__ void operator()(float v, int) { m = fmaxf(m, v); }
};

struct NllRowSumExp {
    float m;
    double s;
    __device__ __forceinline__ void operator()(float v, int) { s += (double)expf(v - m); }
};

// Max over the block (every thread gets it); `scratch` holds 32 floats.
__device__ __forceinline__ float nll_block_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < (int)(blockDim.x >> 5)) ? scratch[lane] : __int_as_float(0xff800000);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the block in f64 (thread 0's result is the block's); `scratch` holds 32 doubles.
__device__ __forceinline__ double nll_block_sum(double v, double* scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < (int)(blockDim.x >> 5)) ? scratch[lane] : 0.0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const float* __restrict__ x, const u32* __restrict__ targets,
                  double* __restrict__ out, int cols)
{
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
    __shared__ float smax[32];
    __shared__ double ssum[32];
    const float* p = x + (long long)blockIdx.x * cols;

    NllRowMax mx;
    mx.m = __int_as_float(0xff800000);  // -inf
    for_each_in_row<{{ block }}, ROW_LOAD_NC>(p, cols, mx);
    const float m = nll_block_max(mx.m, smax);

    NllRowSumExp se;
    se.m = m;
    se.s = 0.0;
    for_each_in_row<{{ block }}, ROW_LOAD_NC>(p, cols, se);
    const double s = nll_block_sum(se.s, ssum);

    if (threadIdx.x == 0) {
        const u32 t = targets[blockIdx.x];
        out[blockIdx.x] = (t < (u32)cols)
            ? ((double)m + log(s)) - (double)__ldg(p + t)
            : __longlong_as_double(0x7ff8000000000000LL);
    }
}
