{#
  Per row of x [rows, cols] (f32): the index of the largest value, as u32, one block per
  row. Exactly `crate::engine::generate::argmax`: the first index among equal maxima
  (lexicographic (value desc, index asc) reduction, so the scan order does not matter),
  NaNs never win (no comparison with them holds), and a row whose element 0 is NaN gives 0
  (the cpu loop compares everything against that NaN, so nothing replaces it).
  Param: block (threads per block, a multiple of 32, at most 1024).
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}
{% include "elementwise/row_vec.cuh" %}

struct ArgBest {
    float v;
    int i;
    __device__ __forceinline__ void operator()(float x, int j) {
        if (x > v || (x == v && j < i)) { v = x; i = j; }
    }
};

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const float* __restrict__ x, u32* __restrict__ ids, int cols)
{
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
    __shared__ float sv[32];
    __shared__ int si[32];
    const float* p = x + (long long)blockIdx.x * cols;
    ArgBest best;
    best.v = __int_as_float(0xff800000);  // -inf: ties with a -inf element by index
    best.i = 0x7fffffff;
    for_each_in_row<{{ block }}, ROW_LOAD_NC>(p, cols, best);

#pragma unroll
    for (int o = 16; o > 0; o >>= 1) best(__shfl_xor_sync(0xffffffffu, best.v, o),
                                          __shfl_xor_sync(0xffffffffu, best.i, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sv[warp] = best.v; si[warp] = best.i; }
    __syncthreads();
    if (warp == 0) {
        best.v = __int_as_float(0xff800000);
        best.i = 0x7fffffff;
        if (lane < {{ block }} / 32) { best.v = sv[lane]; best.i = si[lane]; }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) best(__shfl_xor_sync(0xffffffffu, best.v, o),
                                              __shfl_xor_sync(0xffffffffu, best.i, o));
        if (lane == 0) {
            const float x0 = p[0];
            ids[blockIdx.x] = (x0 != x0) ? 0u : (u32)best.i;
        }
    }
}
