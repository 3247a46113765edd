// f16 tensor-core helpers of the chunked prefill (gdn/chunk_f16.cu, gdn/chunk_wu_f16.cu):
// ldmatrix fragment loads, mma.sync m16n8k16 with f16 operands and f32 accumulation,
// f32 -> f16 packing, 16- and 4-byte cp.async and a fast e^x. Fragment layouts: common/mma.cuh.
#ifndef NINFER_GDN_F16_MMA
#define NINFER_GDN_F16_MMA
{% include "common/types.cuh" %}

// Two f32 to f16x2, round to nearest, lo in the low half (the mma operand layout).
__device__ __forceinline__ u32 f16x2(float lo, float hi) {
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

__device__ __forceinline__ void ldsm_x4(u32* r, const f16_t* p) {
    const u32 a = (u32)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 { %0, %1, %2, %3 }, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

__device__ __forceinline__ void ldsm_x4_t(u32* r, const f16_t* p) {
    const u32 a = (u32)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 { %0, %1, %2, %3 }, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// c (16x8 f32) += A (16x16 f16) B (16x8 f16).
__device__ __forceinline__ void mma_f16(float* c, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// 16 bytes global -> shared, zero-filled when !in (src must still be a valid address).
__device__ __forceinline__ void cp16(void* dst, const void* src, bool in) {
    const u32 to = (u32)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(to), "l"(src), "r"(in ? 16 : 0) : "memory");
}

// 4 bytes global -> shared (through L1), zero-filled when !in (src must still be valid).
__device__ __forceinline__ void cp4(void* dst, const void* src, bool in) {
    const u32 to = (u32)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(to), "l"(src), "r"(in ? 4 : 0) : "memory");
}

// e^x as ex2.approx with subnormal results flushed to zero: one multiply and one MUFU
// (__expf also scales subnormal results, three more instructions; expf's accurate path
// about fifteen). For the f16 stages' gates and decays, whose products are rounded to f16.
__device__ __forceinline__ float exp_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
    return y;
}

#endif  // NINFER_GDN_F16_MMA
