// The A16 routes' shared pieces (linear/a16_pipe.cu, linear/a16_wgmma.cu): 16-byte
// cp.async with zero fill, and the decode of a 32-weight chunk of a 4- or 8-bit
// symmetric-integer row to bf16.
//
// A chunk is 32 weights of one row under one scale (FMT_GROUP a multiple of 32); each
// weight is q * scale, exact in f32 (an f16 scale and a code of at most 8 bits), rounded
// once to bf16: the same bits as linear/mma_tiled.cu.
#ifndef NINFER_LINEAR_A16_CHUNK
#define NINFER_LINEAR_A16_CHUNK

#define CHUNK 32                                   // weights per decoded chunk
#define CHUNK_BYTES (CHUNK * FMT_BITS / 8)         // 16 (4-bit) or 32 (8-bit)
#define CHUNK_VECS (CHUNK_BYTES / 16)
#if FMT_BITS != 4 && FMT_BITS != 8
#error "the A16 routes take 4- and 8-bit codes"
#endif
#if FMT_GROUP % CHUNK != 0
#error "the A16 routes need groups of a multiple of 32 weights"
#endif

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool fill) {
    const u32 d = (u32)__cvta_generic_to_shared(smem);
    const int n = fill ? 16 : 0;  // 0: the 16 bytes are zero-filled, nothing is read
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(gmem), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
// Every group but the newest complete.
__device__ __forceinline__ void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }

// A pair of neighbouring codes (weights 2m, 2m + 1 of a word) is shifted as one so that the
// two codes sit at bits PLO and PHI, inside the mantissa of 1.0f: 1 + n 2^(p - 23) is exact
// in f32. One FFMA per weight then gives q * d exactly:
//   (1 + n 2^(p-23)) * (d 2^(23-p)) - (2^(23-p) + 2^(B-1)) d = (n - 2^(B-1)) d = q d,
// computed with one rounding of a result that f32 holds exactly (the constants are exact:
// 2^(23-p) + 2^(B-1) has at most 10 significant bits, the f16 scale 11), so the weights
// keep the bits of decoding q in f32 and multiplying. q4: bits 12, 16; q8: bits 7, 15.
#define PLO (FMT_BITS == 4 ? 12 : 7)
#define PHI (PLO + FMT_BITS)

// The per-chunk constants of that FFMA at PLO and PHI.
struct ChunkScale {
    float s_lo, c_lo, s_hi, c_hi;
};
__device__ __forceinline__ ChunkScale chunk_scale(float d) {
    constexpr float TLO = (float)(1u << (23 - PLO)), THI = (float)(1u << (23 - PHI));
    constexpr float HALF = (float)(1u << (FMT_BITS - 1));
    return ChunkScale{d * TLO, -(TLO + HALF) * d, d * THI, -(THI + HALF) * d};
}

#define PIECE_WORDS (8 * FMT_BITS / 32)             // 32-bit words of 8 codes

// The 8 weights of the words wp[0, PIECE_WORDS) (raw little-endian) as 4 bf16x2, in order:
// one 16-byte piece of the decoded row.
__device__ __forceinline__ uint4 decode_words(const u32* wp, const ChunkScale& k) {
    constexpr int PER = 32 / FMT_BITS;                       // codes per word
    constexpr u32 MASK = (1u << FMT_BITS) - 1u;
    constexpr u32 FLIP = FMT_BITS == 4 ? 0x88888888u : 0x80808080u;
    constexpr u32 ONE = 0x3F800000u;
    u32 o[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        const int e = 2 * p;                                 // the pair's first weight
        const u32 word = wp[e / PER] ^ FLIP;                 // offset binary: n = q + 2^(B-1)
        const int src = (e % PER) * FMT_BITS;                // the first code's bit
        const u32 at = src <= PLO ? word << (PLO - src) : word >> (src - PLO);
        const float lo = __uint_as_float((at & (MASK << PLO)) | ONE);
        const float hi = __uint_as_float((at & (MASK << PHI)) | ONE);
        o[p] = pack_bf16x2(__fmaf_rn(lo, k.s_lo, k.c_lo), __fmaf_rn(hi, k.s_hi, k.c_hi));
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
}

// Piece v (weights [8 v, 8 v + 8)) of a chunk; v must be known at compile time (the raw
// words stay in registers).
__device__ __forceinline__ uint4 decode_piece(const uint4 (&raw)[CHUNK_VECS], const ChunkScale& k, int v) {
    return decode_words((const u32*)raw + v * PIECE_WORDS, k);
}

#endif  // NINFER_LINEAR_A16_CHUNK
