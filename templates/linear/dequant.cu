{#
  Weight rows to bf16 for the cuBLAS prefill route (`--prefill-cublas`, ops/linear_cublas.rs):
  out[r, :] = bf16(decode(W[row0 + r, :])) for r in [0, rows), out a dense [rows, K] bf16
  matrix (row-major). One thread per decode group: the format's own fmt_decode_group gives
  the f32 values every other route sees, rounded to nearest even (cvt.rn.bf16x2), so the
  result equals the host decode rounded by half::bf16::from_f32, bit for bit.
  K must be a multiple of FMT_GROUP (32 or 64), so each group's 64 or 128 output bytes are
  whole 16-byte words.

  Params: format, block.
#}
{% include "common/types.cuh" %}
{{ format_code }}

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  long long q_row_bytes, long long s_row_bytes,
                  int row0, int rows, int K, bf16_t* __restrict__ out)
{
    const int groups = K / FMT_GROUP;
    const long long i = (long long)blockIdx.x * {{ block }} + threadIdx.x;
    if (i >= (long long)rows * groups) return;
    const int r = (int)(i / groups);
    const int g = (int)(i - (long long)r * groups);
    const long long row = (long long)row0 + r;
    float w[FMT_GROUP];
    fmt_decode_group(q + row * q_row_bytes, s + row * s_row_bytes, g, w);
    uint4* o = (uint4*)(out + (long long)r * K + (long long)g * FMT_GROUP);
#pragma unroll
    for (int j = 0; j < FMT_GROUP / 8; ++j) {
        uint4 v;
        v.x = pack_bf16x2(w[8 * j + 0], w[8 * j + 1]);
        v.y = pack_bf16x2(w[8 * j + 2], w[8 * j + 3]);
        v.z = pack_bf16x2(w[8 * j + 4], w[8 * j + 5]);
        v.w = pack_bf16x2(w[8 * j + 6], w[8 * j + 7]);
        o[j] = v;
    }
}
