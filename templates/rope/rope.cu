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

  With `append` set (kv_type "float" | "bf16_t") the kernel also does an attention layer's
  KV append: each row of k is rotated the same way and stored, with the row of v, at cache
  row pos0 + r (converted as the cache stores them), so that a decode step rotates q and k
  and appends k and v in one launch. The arithmetic is the plain kernel's, so q and the
  cache get the same bits as the three separate launches.
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}

#define ROPE_MAX_HALF 512

extern "C" __global__ void __launch_bounds__(256)
{{ kernel_name }}(float* x,
                  int n_heads,
                  int head_dim,
                  int rotary_dim,
                  long long pos0,
                  const int* __restrict__ pos_dev,  // if set, *pos_dev is added to pos0 (graph replays)
                  double theta
{%- if append %},
                  const float* __restrict__ k,      // [t, n_kv * head_dim]
                  const float* __restrict__ v,      // [t, n_kv * head_dim]
                  {{ kv_type }}* __restrict__ kc,   // [capacity, n_kv * head_dim]
                  {{ kv_type }}* __restrict__ vc,
                  int n_kv
{%- endif %})
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
    // The table needs only the position: it is built while the predecessor finishes.
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
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

{%- if append %}
    // k: rotated like q, straight into the cache; v: copied.
    const int kvw = n_kv * head_dim;
    const float* kr = k + (long long)blockIdx.x * kvw;
    const float* vr = v + (long long)blockIdx.x * kvw;
    const long long dst = (pos0 + blockIdx.x) * (long long)kvw;
    for (int e = threadIdx.x; e < kvw; e += 256) {
        const int h = e / head_dim;
        const int d = e - h * head_dim;
        const float* kh = kr + h * head_dim;
        float out = kh[d];
        if (d < rotary_dim) {
{%- if style == "neox" %}
            const bool first = d < half;
            const int j = first ? d : d - half;
            const float x0 = kh[j], x1 = kh[j + half];
{%- else %}
            const bool first = (d & 1) == 0;
            const int j = d >> 1;
            const float x0 = kh[2 * j], x1 = kh[2 * j + 1];
{%- endif %}
            const float c = cs[j], s = sn[j];
            out = first ? __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s))
                        : __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s));
        }
        store_from_f32(kc, dst + e, out);
        store_from_f32(vc, dst + e, vr[e]);
    }
{%- endif %}
}
