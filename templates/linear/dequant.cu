{#
  Weight rows to bf16 for the cuBLAS prefill route (`--prefill-cublas`, ops/linear_cublas.rs):
  out[r, :] = bf16(decode(W[row0 + r, :])) for r in [0, rows), out a dense [rows, K] bf16
  matrix (row-major). One thread per decode group: the format's own fmt_decode_group gives
  the f32 values every other route sees, rounded to nearest even (cvt.rn.bf16x2), so the
  result equals the host decode rounded by half::bf16::from_f32, bit for bit (finite values).
  K must be a multiple of FMT_GROUP (32 or 64).

  Groups in (row, group) order are consecutive in the output, so a block's {{ block }} groups
  are one contiguous run: each thread parks its group in shared memory, then the block writes
  the run out in coalesced 16-byte words (a thread writing its own 64 or 128 bytes would
  leave each warp store spread over 32 lines; run 1 measured ~1 TB/s that way).
  Shared rows are padded by 16 bytes, so neither the 16-byte parking stores of 8 threads nor
  the copy-out loads share a bank.

  Params: format, block.
#}
{% include "common/types.cuh" %}
{{ format_code }}

#define DQ_WORDS (FMT_GROUP / 2)       // u32 (bf16 pairs) per group
#define DQ_STRIDE (DQ_WORDS + 4)       // u32 per parked group, padded 16 bytes
#define DQ_VECS (FMT_GROUP / 8)        // 16-byte words per group

extern "C" __global__ void __launch_bounds__({{ block }})
{{ kernel_name }}(const u8* __restrict__ q, const u8* __restrict__ s,
                  long long q_row_bytes, long long s_row_bytes,
                  int row0, int rows, int K, bf16_t* __restrict__ out)
{
    __shared__ uint4 park[{{ block }} * DQ_STRIDE / 4];
    const int groups = K / FMT_GROUP;
    const long long total = (long long)rows * groups;
    const long long first = (long long)blockIdx.x * {{ block }};
    const long long i = first + threadIdx.x;
    if (i < total) {
        const int r = (int)(i / groups);
        const int g = (int)(i - (long long)r * groups);
        const long long row = (long long)row0 + r;
        float w[FMT_GROUP];
        fmt_decode_group(q + row * q_row_bytes, s + row * s_row_bytes, g, w);
        uint4* p = park + threadIdx.x * (DQ_STRIDE / 4);
#pragma unroll
        for (int j = 0; j < DQ_VECS; ++j) {
            uint4 v;
            v.x = pack_bf16x2(w[8 * j + 0], w[8 * j + 1]);
            v.y = pack_bf16x2(w[8 * j + 2], w[8 * j + 3]);
            v.z = pack_bf16x2(w[8 * j + 4], w[8 * j + 5]);
            v.w = pack_bf16x2(w[8 * j + 6], w[8 * j + 7]);
            p[j] = v;
        }
    }
    __syncthreads();
    const long long left = total - first;
    const int here = left < {{ block }} ? (int)left : {{ block }};
    uint4* o = (uint4*)(out + first * FMT_GROUP);
    for (int c = threadIdx.x; c < here * DQ_VECS; c += {{ block }}) {
        const int grp = c / DQ_VECS;
        o[c] = park[grp * (DQ_STRIDE / 4) + (c - grp * DQ_VECS)];
    }
}
