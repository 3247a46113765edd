// Device side of the symmetric integer formats (kind "sym_int" in formats.toml), shared by
// q8_g32, q6_g64, q4_g64, ... The including template defines FMT_BITS and FMT_GROUP first.
//
// Layout (the host codec, src/formats/codec.rs, follows it exactly):
// - Quant plane: a row's K values form one little-endian bit stream; value i occupies bits
//   [i*FMT_BITS, (i+1)*FMT_BITS), bit j of the stream being bit (j % 8) of byte (j / 8).
//   Values are two's complement FMT_BITS-bit integers q in [-2^(B-1), 2^(B-1)-1].
//   Group g of a row starts at byte g*FMT_GROUP*FMT_BITS/8, a multiple of 4 (the registry
//   requires FMT_GROUP*FMT_BITS % 32 == 0), so a group is FMT_GROUP*FMT_BITS/32 whole
//   32-bit words, read little-endian: word w holds stream bits [32w, 32w+32).
// - Scale plane: per row, K/FMT_GROUP little-endian IEEE f16 scales, group order.
// - Planes: the scale plane starts at fmt_s_plane_offset(N, K) (quant plane rounded up to 16
//   bytes); row r's quants at r*fmt_q_row_bytes(K), its scales at s_plane + r*fmt_s_row_bytes(K).
// - Value: x = f32(scale) * f32(q) (one multiply, exact for f16 scales).
#ifndef NINFER_FMT_SYM_INT
#define NINFER_FMT_SYM_INT
{% include "common/types.cuh" %}

#define FMT_WORDS (FMT_GROUP * FMT_BITS / 32)

__host__ __device__ __forceinline__ long long fmt_q_row_bytes(long long K) { return K * FMT_BITS / 8; }
__host__ __device__ __forceinline__ long long fmt_s_row_bytes(long long K) { return (K / FMT_GROUP) * 2; }
__host__ __device__ __forceinline__ long long fmt_s_plane_offset(long long N, long long K) {
    return (N * fmt_q_row_bytes(K) + 15) / 16 * 16;
}

__device__ __forceinline__ float fmt_group_scale(const u8* s, int g) {
    return f16_to_f32(((const f16_t*)s)[g]);
}

// The FMT_GROUP signed integers of group g.
__device__ __forceinline__ void fmt_group_ints(const u8* q, int g, int* out) {
    const u32* w = (const u32*)(q + (long long)g * (FMT_GROUP * FMT_BITS / 8));
    u32 words[FMT_WORDS];
#pragma unroll
    for (int i = 0; i < FMT_WORDS; ++i) words[i] = w[i];
#pragma unroll
    for (int i = 0; i < FMT_GROUP; ++i) {
        const int bit = i * FMT_BITS;
        const int wi = bit >> 5;
        const int sh = bit & 31;
        u32 v = words[wi] >> sh;
        if (sh + FMT_BITS > 32) v |= words[(wi + 1) % FMT_WORDS] << (32 - sh);
        out[i] = ((int)(v << (32 - FMT_BITS))) >> (32 - FMT_BITS);
    }
}

__device__ __forceinline__ void fmt_decode_group(const u8* q, const u8* s, int g, float* out) {
    int v[FMT_GROUP];
    fmt_group_ints(q, g, v);
    const float d = fmt_group_scale(s, g);
#pragma unroll
    for (int i = 0; i < FMT_GROUP; ++i) out[i] = __fmul_rn(d, (float)v[i]);
}

__device__ __forceinline__ float fmt_dot_group(const u8* q, const u8* s, int g, const float* x) {
    int v[FMT_GROUP];
    fmt_group_ints(q, g, v);
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < FMT_GROUP; ++i) acc = fmaf((float)v[i], x[i], acc);
    return fmt_group_scale(s, g) * acc;
}

#endif  // NINFER_FMT_SYM_INT
