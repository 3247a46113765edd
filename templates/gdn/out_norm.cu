{#
  The GDN output norm (MODEL_SPEC.md section 3), one block per (token, value head):
    y = o * rsqrt(mean(o^2) + eps) * w * silu(z)     (plain w, shared by heads; f32 math)
  Params: out_type ("float" | "bf16_t"), block (threads, a multiple of 32).
  o: [rows][dv] f32, rows = tokens x heads; z: head h of token t at z + t * z_ld + h * dv
  (z_ld = heads * dv when dense; the stacked in-projection's row width when z is its column
  block, read in place); w: [dv] f32; y: [rows][dv] out_type.
  Launched programmatically (common/pdl.cuh): it waits before its first load.
#}
{% include "common/types.cuh" %}
{% include "common/reduce.cuh" %}
{% include "common/pdl.cuh" %}

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const float* __restrict__ o,
                  const float* __restrict__ z,
                  const float* __restrict__ w,
                  {{ out_type }}* __restrict__ y,
                  int dv,
                  float eps,
                  int heads,
                  long long z_ld)
{
    __shared__ float scratch[32];
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
    const long long base = (long long)blockIdx.x * dv;
    const float* zr = z + (long long)(blockIdx.x / heads) * z_ld + (long long)(blockIdx.x % heads) * dv;
    float ss = 0.0f;
    for (int j = threadIdx.x; j < dv; j += {{ block }}) ss = fmaf(o[base + j], o[base + j], ss);
    ss = block_sum(ss, scratch);
    const float inv = rsqrtf(ss / (float)dv + eps);
    for (int j = threadIdx.x; j < dv; j += {{ block }})
        store_from_f32(y, base + j, o[base + j] * inv * w[j] * silu_f32(zr[j]));
}
