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

// The same scale as stored (f16 bits) and its value, apart: a kernel that loads scales
// ahead of their use converts them only when it multiplies, so that no instruction waits
// on the load where it is issued.
__device__ __forceinline__ u32 fmt_group_scale_bits(const u8* s, int g) {
    return ((const f16_t*)s)[g];
}
__device__ __forceinline__ float fmt_scale_of_bits(u32 bits) {
    return f16_to_f32((f16_t)bits);
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

// ---- Tensor-core GEMV interface (templates/linear/mmv.cu) ----------------------------
// A group is split among the 4 lanes of an mma thread-quad: lane t owns the FMT_LANE_N
// consecutive weights [g*FMT_GROUP + t*FMT_LANE_N, +FMT_LANE_N) of a row. fmt_lane_pairs
// writes them as exact (unscaled) integers packed in bf16x2 pairs; pair i holds the weights
// at offsets (fmt_pair_lo(i), fmt_pair_hi(i)) from the lane's first weight. The kernel pairs
// the activations the same way, so the order is the format's to choose.
#define FMT_LANE_N (FMT_GROUP / 4)
#define FMT_HAS_LANE_PAIRS 1

#if FMT_BITS == 4
// Each 32-bit word holds 8 nibbles; (w >> 4s) & 0x000F000F picks nibbles s and s+4, which
// land in the mantissas of two bf16 128+u when OR-ed with 0x4300 (u = nibble ^ 8, the
// offset-binary form of the two's complement value). One bf16x2 FMA removes 136: exact.
__device__ __forceinline__ int fmt_pair_lo(int i) { return 8 * (i >> 2) + (i & 3); }
__device__ __forceinline__ int fmt_pair_hi(int i) { return 8 * (i >> 2) + (i & 3) + 4; }

__device__ __forceinline__ u32 fmt_bf16x2_minus136(u32 v) {
    u32 r;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(v), "r"(0x3f803f80u), "r"(0xc308c308u));
    return r;
}

// (a & mask) | bits in one LOP3: written as two operations, the compiler keeps each
// constant an immediate and spends two instructions (one LOP3 takes one immediate).
__device__ __forceinline__ u32 fmt_and_or(u32 a, u32 mask, u32 bits) {
    u32 r;
    asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(a), "r"(mask), "r"(bits));
    return r;
}

// Split into a load and a conversion, so a kernel can issue the loads of several groups
// before it waits for any (memory-level parallelism).
#define FMT_LANE_WORDS (FMT_LANE_N / 8)

__device__ __forceinline__ void fmt_lane_load(const u8* q, int g, int t, u32* raw) {
    const u32* w = (const u32*)(q + (long long)g * (FMT_GROUP / 2) + t * (FMT_LANE_N / 2));
#if FMT_LANE_WORDS == 2
    const uint2 v = __ldg((const uint2*)w);
    raw[0] = v.x;
    raw[1] = v.y;
#else
#pragma unroll
    for (int j = 0; j < FMT_LANE_WORDS; ++j) raw[j] = __ldg(w + j);
#endif
}

__device__ __forceinline__ void fmt_lane_convert(const u32* raw, u32* out) {
#pragma unroll
    for (int j = 0; j < FMT_LANE_WORDS; ++j) {
        const u32 word = raw[j] ^ 0x88888888u;
#pragma unroll
        for (int s = 0; s < 4; ++s) {
            out[4 * j + s] = fmt_bf16x2_minus136(fmt_and_or(word >> (4 * s), 0x000f000fu, 0x43004300u));
        }
    }
}

__device__ __forceinline__ void fmt_lane_pairs(const u8* q, int g, int t, u32* out) {
    u32 raw[FMT_LANE_WORDS];
    fmt_lane_load(q, g, t, raw);
    fmt_lane_convert(raw, out);
}
#else
// Natural order; integers of up to 8 bits are exact in bf16.
__device__ __forceinline__ int fmt_pair_lo(int i) { return 2 * i; }
__device__ __forceinline__ int fmt_pair_hi(int i) { return 2 * i + 1; }

#if FMT_BITS == 8
// Bytes to exact floats without the slow int-to-float unit: 0x4B000000 | (b ^ 0x80) is the
// float 2^23 + 128 + v for the signed byte v.
#define FMT_LANE_WORDS (FMT_LANE_N / 4)

__device__ __forceinline__ void fmt_lane_load(const u8* q, int g, int t, u32* raw) {
    const u32* w = (const u32*)(q + (long long)g * FMT_GROUP + t * FMT_LANE_N);
#if FMT_LANE_WORDS == 2
    const uint2 v = __ldg((const uint2*)w);
    raw[0] = v.x;
    raw[1] = v.y;
#else
#pragma unroll
    for (int j = 0; j < FMT_LANE_WORDS; ++j) raw[j] = __ldg(w + j);
#endif
}

__device__ __forceinline__ void fmt_lane_convert(const u32* raw, u32* out) {
#pragma unroll
    for (int j = 0; j < FMT_LANE_WORDS; ++j) {
        const u32 word = raw[j] ^ 0x80808080u;
        float f[4];
#pragma unroll
        for (int b = 0; b < 4; ++b)
            f[b] = __int_as_float(__byte_perm(word, 0x4b000000u, 0x7640u | b)) - 8388736.0f;
        out[2 * j] = pack_bf16x2(f[0], f[1]);
        out[2 * j + 1] = pack_bf16x2(f[2], f[3]);
    }
}
#endif

__device__ __forceinline__ void fmt_lane_pairs(const u8* q, int g, int t, u32* out) {
#if FMT_BITS == 8
    u32 raw[FMT_LANE_WORDS];
    fmt_lane_load(q, g, t, raw);
    fmt_lane_convert(raw, out);
#else
    int v[FMT_GROUP];
    fmt_group_ints(q, g, v);
    // Select the lane's quarter with compile-time indices (a runtime index would put v in
    // local memory).
#pragma unroll
    for (int tq = 0; tq < 4; ++tq) {
        if (tq == t) {
#pragma unroll
            for (int i = 0; i < FMT_LANE_N / 2; ++i)
                out[i] = pack_bf16x2((float)v[tq * FMT_LANE_N + 2 * i], (float)v[tq * FMT_LANE_N + 2 * i + 1]);
        }
    }
#endif
}
#endif

#endif  // NINFER_FMT_SYM_INT
