{#
  Merges the split-K partials of attention/flash.cu (mode "split") into output rows.

  One block per (row i, head h): weights w_s = exp2(m_s - M) with M the largest split
  max, out = sum_s w_s acc_s / sum_s w_s l_s. A split that saw no key (m = -inf, l = 0,
  acc = 0) gets weight 0. Split 0 always holds key 0, so M is finite.

  Params: block (threads), max_splits (the most splits a launch may use).
#}
#define NEG_INF __uint_as_float(0xff800000u)

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const float* __restrict__ acc,  // [rows, max_splits, hd]
                  const float* __restrict__ ml,   // [rows, max_splits, 2]
                  float* __restrict__ out,        // [rows, hd]; row = i * n_heads + h
                  int hd, int max_splits, int n_splits)
{
    __shared__ float w[{{ max_splits }}];
    __shared__ float inv_l;
    const long long base = (long long)blockIdx.x * max_splits;
    float mx = NEG_INF;
    for (int s = 0; s < n_splits; ++s) mx = fmaxf(mx, ml[2 * (base + s)]);
    for (int s = threadIdx.x; s < n_splits; s += {{ block }}) w[s] = exp2f(ml[2 * (base + s)] - mx);
    __syncthreads();
    if (threadIdx.x == 0) {
        float l = 0.f;
        for (int s = 0; s < n_splits; ++s) l += w[s] * ml[2 * (base + s) + 1];
        inv_l = 1.f / l;
    }
    __syncthreads();
    for (int d = threadIdx.x; d < hd; d += {{ block }}) {
        float o = 0.f;
        for (int s = 0; s < n_splits; ++s) o += w[s] * acc[(base + s) * hd + d];
        out[(long long)blockIdx.x * hd + d] = o * inv_l;
    }
}
