// i8_row: int8 values, one IEEE f32 scale per output row (the cuBLAS integer prefill route).
// Quant plane: row r's K int8 values, byte i = element i (two's complement).
// Scale plane: one little-endian f32 per row (so the plane is a plain float[N]).
// Value: x = scale[row] * q. The scale is absmax(row)/127.
// FMT_GROUP is 32 here only as the unit of fmt_decode_group: every group of a row shares the
// row's one scale. K must be a multiple of 32 for the group-wise device interface.
#ifndef NINFER_FMT_I8_ROW
#define NINFER_FMT_I8_ROW
{% include "common/types.cuh" %}
#define FMT_GROUP 32

__host__ __device__ __forceinline__ long long fmt_q_row_bytes(long long K) { return K; }
__host__ __device__ __forceinline__ long long fmt_s_row_bytes(long long K) { return 4; }
__host__ __device__ __forceinline__ long long fmt_s_plane_offset(long long N, long long K) {
    return (N * K + 15) / 16 * 16;
}

__device__ __forceinline__ void fmt_decode_group(const u8* q, const u8* s, int g, float* out) {
    const float d = *(const float*)s;
    const i8* v = (const i8*)q + (long long)g * FMT_GROUP;
#pragma unroll
    for (int i = 0; i < FMT_GROUP; ++i) out[i] = __fmul_rn(d, (float)v[i]);
}

__device__ __forceinline__ float fmt_dot_group(const u8* q, const u8* s, int g, const float* x) {
    const i8* v = (const i8*)q + (long long)g * FMT_GROUP;
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < FMT_GROUP; ++i) acc = fmaf((float)v[i], x[i], acc);
    return *(const float*)s * acc;
}

#endif  // NINFER_FMT_I8_ROW
