{#
  Embedding gather: out[t, :] = decode(W[ids[t], :]), W [vocab, H] in any weight format.
  One block per token; threads stride over the row's groups. Token ids are read on the
  device, so a captured graph replays with whatever ids were written before the replay.
  An id outside [0, vocab) writes a row of NaN (never a read out of bounds).

  Params: format, out_type ("float" | "bf16_t"), block.
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}
{{ format_code }}

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  long long q_row_bytes, long long s_row_bytes,
                  const int* __restrict__ ids, int vocab, int H,
                  {{ out_type }}* __restrict__ out)
{
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
    const int t = blockIdx.x;
    const int id = ids[t];
    {{ out_type }}* o = out + (long long)t * H;
    if (id < 0 || id >= vocab) {
        for (int i = threadIdx.x; i < H; i += {{ block }}) store_from_f32(o, i, __int_as_float(0x7fc00000));
        return;
    }
    const u8* qr = q + (long long)id * q_row_bytes;
    const u8* sr = s + (long long)id * s_row_bytes;
    for (int g = threadIdx.x; g < H / FMT_GROUP; g += {{ block }}) {
        float w[FMT_GROUP];
        fmt_decode_group(qr, sr, g, w);
#pragma unroll
        for (int i = 0; i < FMT_GROUP; ++i) store_from_f32(o, (long long)g * FMT_GROUP + i, w[i]);
    }
}
