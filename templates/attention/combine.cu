{#
  Merges the split-K partials of attention/flash.cu (mode "split") into output rows.

  One block per (row i, head h): weights w_s = exp2(m_s - M) with M the largest split
  max, out = sum_s w_s acc_s / sum_s w_s l_s. A split that saw no key (m = -inf, l = 0,
  acc = 0) gets weight 0. Split 0 always holds key 0, so M is finite. The block's
  threads cover hd / 4 float4 columns times block / (hd / 4) lanes of splits, whose sums
  meet in shared memory.

  Params: block (threads, a multiple of 64), max_splits (<= block: the most splits a
  launch may use).
#}
{% include "common/reduce.cuh" %}

#define NEG_INF __uint_as_float(0xff800000u)
#define NB {{ block }}

extern "C" __global__ void __launch_bounds__(NB)
{{ kernel_name }}(const float* __restrict__ acc,  // [rows, max_splits, hd]
                  const float* __restrict__ ml,   // [rows, max_splits, 2]
                  float* __restrict__ out,        // [rows, hd]; row = i * n_heads + h
                  int hd, int max_splits, int n_splits)
{
    __shared__ float w[{{ max_splits }}];
    __shared__ float scratch[32];
    __shared__ float4 part[NB];
    const long long base = (long long)blockIdx.x * max_splits;
    const int s = threadIdx.x;  // n_splits <= max_splits <= NB: one split per thread
    const float m = s < n_splits ? ml[2 * (base + s)] : NEG_INF;
    // Block max through the sum helper's pattern: max of the warp maxima.
    float mx = warp_max(m);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = mx;
    __syncthreads();
    mx = (threadIdx.x & 31) < (NB >> 5) ? scratch[threadIdx.x & 31] : NEG_INF;
    mx = warp_max(mx);
    const float ws = s < n_splits ? exp2f(m - mx) : 0.f;
    if (s < n_splits) w[s] = ws;
    const float l = block_sum(s < n_splits ? ws * ml[2 * (base + s) + 1] : 0.f, scratch);

    const int cols = hd / 4, lanes = NB / cols;
    const int c = threadIdx.x % cols, lane = threadIdx.x / cols;
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int j = lane; j < n_splits; j += lanes) {
        const float4 a = ((const float4*)(acc + (base + j) * hd))[c];
        const float wj = w[j];
        o.x += wj * a.x; o.y += wj * a.y; o.z += wj * a.z; o.w += wj * a.w;
    }
    part[threadIdx.x] = o;
    __syncthreads();
    if (threadIdx.x < cols) {
        float4 r = part[threadIdx.x];
        for (int k = 1; k < lanes; ++k) {
            const float4 p = part[threadIdx.x + k * cols];
            r.x += p.x; r.y += p.y; r.z += p.z; r.w += p.w;
        }
        const float inv = 1.f / l;
        r.x *= inv; r.y *= inv; r.z *= inv; r.w *= inv;
        ((float4*)(out + (long long)blockIdx.x * hd))[c] = r;
    }
}
