{#
  RMSNorm over the last dimension, one block per row.

    plain:        y = x * rsqrt(mean(x^2) + eps) * w
    zero_centred: y = x * rsqrt(mean(x^2) + eps) * (1 + w)   (qwen3.5/3.6 norms)

  Params: weight ("plain" | "zero_centred"), in_type / out_type ("float" | "bf16_t"),
  block (threads per block, a multiple of 32). Any width >= 1; arithmetic in f32.
  The weight is f32.
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}
{% include "common/reduce.cuh" %}

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const {{ in_type }}* __restrict__ x,
                  const float* __restrict__ w,
                  {{ out_type }}* __restrict__ y,
                  int width,
                  float eps)
{
    __shared__ float scratch[32];
    const long long base = (long long)blockIdx.x * width;
    // Weights: no kernel writes them, so they load while the predecessor finishes.
    for (int i = threadIdx.x * 32; i < width; i += {{ block }} * 32) ninfer_prefetch_l2(w + i);
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();

    float sumsq = 0.0f;
    for (int i = threadIdx.x; i < width; i += {{ block }}) {
        const float v = load_as_f32(x, base + i);
        sumsq += v * v;
    }
    sumsq = block_sum(sumsq, scratch);
    const float inv_rms = rsqrtf(sumsq / (float)width + eps);

    for (int i = threadIdx.x; i < width; i += {{ block }}) {
{%- if weight == "zero_centred" %}
        const float scale = 1.0f + w[i];
{%- else %}
        const float scale = w[i];
{%- endif %}
        store_from_f32(y, base + i, load_as_f32(x, base + i) * inv_rms * scale);
    }
}
