{#
  Appends a block of key/value rows to one layer's KV cache:
  k_cache[pos0 + i] = k[i], v_cache[pos0 + i] = v[i] for i < t, converted from f32 to the
  cache's storage type (round to nearest even for bf16). With `pos_dev` set, `*pos_dev` is
  added to pos0, so that a captured graph appends at whatever position it is replayed.

  Params: kv_type ("float" | "bf16_t"), block (threads).
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const float* __restrict__ k, const float* __restrict__ v,
                  {{ kv_type }}* __restrict__ kc, {{ kv_type }}* __restrict__ vc,
                  int pos0, const int* __restrict__ pos_dev, int t, int width)
{
    if (pos_dev) pos0 += *pos_dev;  // the position from device memory (graph replays)
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
    const long long n = (long long)t * width;
    const long long dst0 = (long long)pos0 * width;
    for (long long e = (long long)blockIdx.x * {{ block }} + threadIdx.x; e < n;
         e += (long long)gridDim.x * {{ block }}) {
        store_from_f32(kc, dst0 + e, k[e]);
        store_from_f32(vc, dst0 + e, v[e]);
    }
}
