// q4_1_g32: GGUF Q4_1's numbers. 4-bit unsigned q in [0, 15], group 32, per group an IEEE f16
// scale d and an f16 min m: x = d * q + m (multiply, then add: two roundings, as ggml).
// Quant plane: two values per byte, element 2j in the low nibble (bits 0-3) of byte j of the
// row, element 2j+1 in the high nibble; a group is 16 bytes (4 little-endian 32-bit words).
// (GGUF's own block puts elements j and j+16 in one byte; conversion re-packs the nibbles.)
// Scale plane: per row, K/32 pairs of little-endian f16 (d, then m): 4 bytes per group.
// Planes: the scale plane starts at fmt_s_plane_offset(N, K) (quant plane rounded up to 16).
#ifndef NINFER_FMT_Q4_1_G32
#define NINFER_FMT_Q4_1_G32
{% include "common/types.cuh" %}
#define FMT_GROUP 32

__host__ __device__ __forceinline__ long long fmt_q_row_bytes(long long K) { return K / 2; }
__host__ __device__ __forceinline__ long long fmt_s_row_bytes(long long K) { return (K / 32) * 4; }
__host__ __device__ __forceinline__ long long fmt_s_plane_offset(long long N, long long K) {
    return (N * fmt_q_row_bytes(K) + 15) / 16 * 16;
}

__device__ __forceinline__ void fmt_q4_1_nibbles(const u8* q, int g, float* v) {
    const u32* w = (const u32*)(q + (long long)g * 16);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const u32 x = w[i];
#pragma unroll
        for (int j = 0; j < 8; ++j) v[8 * i + j] = (float)((x >> (4 * j)) & 15u);
    }
}

__device__ __forceinline__ void fmt_decode_group(const u8* q, const u8* s, int g, float* out) {
    const f16_t* dm = (const f16_t*)s + 2 * g;
    const float d = f16_to_f32(dm[0]);
    const float m = f16_to_f32(dm[1]);
    float v[32];
    fmt_q4_1_nibbles(q, g, v);
#pragma unroll
    for (int i = 0; i < 32; ++i) out[i] = __fadd_rn(__fmul_rn(d, v[i]), m);
}

__device__ __forceinline__ float fmt_dot_group(const u8* q, const u8* s, int g, const float* x) {
    const f16_t* dm = (const f16_t*)s + 2 * g;
    float v[32];
    fmt_q4_1_nibbles(q, g, v);
    float qx = 0.0f, sx = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        qx = fmaf(v[i], x[i], qx);
        sx += x[i];
    }
    return f16_to_f32(dm[0]) * qx + f16_to_f32(dm[1]) * sx;
}

#endif  // NINFER_FMT_Q4_1_G32
