{#
  State storage conversion for the chunked prefill's f32 interface (f16 storage stages
  through an f32 workspace). Param: direction ("to_f32" | "to_f16"). n elements.
#}
{% include "common/types.cuh" %}

extern "C" __global__ void __launch_bounds__(256)
{{ kernel_name }}(const {% if direction == "to_f32" %}f16_t{% else %}float{% endif %}* __restrict__ src,
                  {% if direction == "to_f32" %}float{% else %}f16_t{% endif %}* __restrict__ dst,
                  long long n)
{
    for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (long long)gridDim.x * 256) {
{%- if direction == "to_f32" %}
        dst[i] = f16_to_f32(src[i]);
{%- else %}
        dst[i] = f32_to_f16(src[i]);
{%- endif %}
    }
}
