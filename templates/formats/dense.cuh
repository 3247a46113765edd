// Device side of the dense formats (bf16, f16, f32). The including template defines
// FMT_ELEM (the stored C type) and FMT_LOAD(p, i) (element i of p as float) first.
// Quant plane: row r's K values, little-endian, element i at byte i*sizeof(FMT_ELEM).
// No scale plane: fmt_s_row_bytes is 0 and `s` is ignored.
// FMT_GROUP is 32 only as the unit of fmt_decode_group (K must be a multiple of 32 there).
#ifndef NINFER_FMT_DENSE
#define NINFER_FMT_DENSE
{% include "common/types.cuh" %}
#define FMT_GROUP 32

__host__ __device__ __forceinline__ long long fmt_q_row_bytes(long long K) { return K * (long long)sizeof(FMT_ELEM); }
__host__ __device__ __forceinline__ long long fmt_s_row_bytes(long long K) { return 0; }
__host__ __device__ __forceinline__ long long fmt_s_plane_offset(long long N, long long K) {
    return N * fmt_q_row_bytes(K);
}

__device__ __forceinline__ void fmt_decode_group(const u8* q, const u8* s, int g, float* out) {
    const FMT_ELEM* p = (const FMT_ELEM*)q + (long long)g * FMT_GROUP;
#pragma unroll
    for (int i = 0; i < FMT_GROUP; ++i) out[i] = FMT_LOAD(p, i);
}

__device__ __forceinline__ float fmt_dot_group(const u8* q, const u8* s, int g, const float* x) {
    const FMT_ELEM* p = (const FMT_ELEM*)q + (long long)g * FMT_GROUP;
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < FMT_GROUP; ++i) acc = fmaf(FMT_LOAD(p, i), x[i], acc);
    return acc;
}

#endif  // NINFER_FMT_DENSE
