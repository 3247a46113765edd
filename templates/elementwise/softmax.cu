{#
  Row-wise softmax of x [rows, cols] into y (f32; y equals x or does not overlap it), one
  block per row, three passes over the row with vectorised loads (and stores, where x and y
  share their 16-byte phase):
    1. m = max(x)
    2. y[i] = expf(x[i] - m), summed in f32 partials and a block reduce into z
    3. y[i] *= 1 / z
  In place is safe: pass 2 writes each element after reading it, in the same thread, and
  pass 3 reads y through L2 (ld.cg) after the block reduce's barriers, never through the
  non-coherent path. Param: block (threads per block, a multiple of 32).
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}
{% include "common/reduce.cuh" %}
{% include "elementwise/row_vec.cuh" %}

struct RowMax {
    float m;
    __device__ __forceinline__ void operator()(float v, int) { m = fmaxf(m, v); }
};

struct RowExp {
    float m, s;
    __device__ __forceinline__ float operator()(float v) {
        const float e = expf(v - m);
        s += e;
        return e;
    }
};

struct RowScale {
    float inv;
    __device__ __forceinline__ float operator()(float v) { return v * inv; }
};

__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < (int)(blockDim.x >> 5)) ? scratch[lane] : __int_as_float(0xff800000);
    return warp_max(v);
}

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const float* x, float* y, int cols)
{
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
    __shared__ float scratch[32];
    const long long base = (long long)blockIdx.x * cols;
    const float* p = x + base;
    float* q = y + base;

    RowMax mx;
    mx.m = __int_as_float(0xff800000);
    for_each_in_row<{{ block }}, ROW_LOAD_CG>(p, cols, mx);
    const float m = block_max(mx.m, scratch);

    RowExp ex;
    ex.m = m;
    ex.s = 0.0f;
    map_row<{{ block }}>(p, q, cols, ex);
    const float z = block_sum(ex.s, scratch);

    RowScale sc;
    sc.inv = 1.0f / z;
    map_row<{{ block }}>(q, q, cols, sc);
}
