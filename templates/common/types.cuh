// Templates include each other with Tera's include (so the rendered source is
// self-contained and the kernel key covers it); guards make repeats harmless.
// Never write a brace followed by a percent sign or a hash: Tera reads those as tags.
//
// Header-free scalar types and conversions for every ninfer kernel.
//
// NVRTC from the PyPI wheel ships no CUDA headers, so nothing here includes
// <cuda_fp16.h> or <cuda_bf16.h>: 16-bit floats travel as raw `unsigned short`
// bit patterns and are converted with inline PTX `cvt`.
#ifndef NINFER_COMMON_TYPES
#define NINFER_COMMON_TYPES

typedef unsigned short bf16_t;   // bfloat16 bits
typedef unsigned short f16_t;    // IEEE binary16 bits
typedef unsigned char u8;
typedef signed char i8;
typedef unsigned int u32;
typedef unsigned long long u64;

// bf16 -> f32 is exact: the bf16 bits are the high half of the f32 bits.
__device__ __forceinline__ float bf16_to_f32(bf16_t h) {
    return __uint_as_float(((u32)h) << 16);
}

// f32 -> bf16, round to nearest even (NaN stays NaN).
__device__ __forceinline__ bf16_t f32_to_bf16(float f) {
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}

__device__ __forceinline__ float f16_to_f32(f16_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ f16_t f32_to_f16(float f) {
    unsigned short r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}

// Two bf16 packed in one 32-bit register, low half first (the mma operand layout).
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// Element loads/stores by storage type, so one template body serves f32 and bf16.
__device__ __forceinline__ float load_as_f32(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float load_as_f32(const bf16_t* p, long long i) { return bf16_to_f32(p[i]); }
__device__ __forceinline__ void store_from_f32(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void store_from_f32(bf16_t* p, long long i, float v) { p[i] = f32_to_bf16(v); }

__device__ __forceinline__ float silu_f32(float x) { return x / (1.0f + __expf(-x)); }

#endif  // NINFER_COMMON_TYPES
