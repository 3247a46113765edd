{#
  Rotary position embedding, in place, one block per row: x is [t, n_heads * head_dim]
  (f32), row r sits at position pos0 + r, and only the first rotary_dim dims of each head
  rotate. Param: style ("neox": pair (j, j + rotary_dim/2), "interleaved": (2j, 2j + 1)).

  The numbers follow the cpu backend step by step, so the two agree to the last bit or
  nearly: inv_freq[j] = 1 / f32(theta^(2j / rotary_dim)) (the power in f64), the angle is
  the f32 product f32(pos) * inv_freq[j] (positions reach 262144, where that rounding
  dominates), its cos and sin are evaluated in f64 and rounded to f32 (correctly rounded
  like the host's cosf/sinf), and the rotation is x0*c - x1*s, x1*c + x0*s without fusion.
  The block first fills a table of cos/sin for the row, then rotates every head with it.
#}
{% include "common/types.cuh" %}

#define ROPE_MAX_HALF 512

extern "C" __global__ void __launch_bounds__(256)
{{ kernel_name }}(float* x,
                  int n_heads,
                  int head_dim,
                  int rotary_dim,
                  long long pos0,
                  const int* __restrict__ pos_dev,  // if set, *pos_dev is added to pos0 (graph replays)
                  double theta)
{
    if (pos_dev) pos0 += *pos_dev;
    __shared__ float cs[ROPE_MAX_HALF];
    __shared__ float sn[ROPE_MAX_HALF];
    const int half = rotary_dim >> 1;
    const float pos = (float)(pos0 + blockIdx.x);
    for (int j = threadIdx.x; j < half; j += 256) {
        const float p = (float)pow(theta, (double)(2 * j) / (double)rotary_dim);
        const float inv_freq = __fdiv_rn(1.0f, p);
        const double a = (double)__fmul_rn(pos, inv_freq);
        double s, c;
        sincos(a, &s, &c);
        cs[j] = (float)c;
        sn[j] = (float)s;
    }
    __syncthreads();

    float* row = x + (long long)blockIdx.x * n_heads * head_dim;
    const int pairs = n_heads * half;
    for (int q = threadIdx.x; q < pairs; q += 256) {
        const int h = q / half;
        const int j = q - h * half;
{%- if style == "neox" %}
        float* a = row + h * head_dim + j;
        float* b = a + half;
{%- else %}
        float* a = row + h * head_dim + 2 * j;
        float* b = a + 1;
{%- endif %}
        const float x0 = *a, x1 = *b, c = cs[j], s = sn[j];
        *a = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
        *b = __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s));
    }
}
