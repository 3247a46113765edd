// Tensor-core wrappers (sm_80+): mma.sync m16n8k16, bf16 operands, f32 accumulators.
//
// Fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k16"), with
// g = lane / 4 and t = lane % 4:
//   A (16x16, row-major), 4 regs of bf16x2:
//     a0: (g,   2t..2t+1)   a1: (g+8, 2t..2t+1)
//     a2: (g,   2t+8..+9)   a3: (g+8, 2t+8..+9)
//   B (16x8, "col": element (k, n)), 2 regs of bf16x2:
//     b0: (2t..2t+1, g)     b1: (2t+8..2t+9, g)
//   C/D (16x8, f32), 4 regs:
//     c0: (g, 2t)  c1: (g, 2t+1)  c2: (g+8, 2t)  c3: (g+8, 2t+1)
#ifndef NINFER_COMMON_MMA
#define NINFER_COMMON_MMA
{% include "common/types.cuh" %}

struct MmaAccum16x8 {
    float c[4];
};

__device__ __forceinline__ void mma_zero(MmaAccum16x8& acc) {
    acc.c[0] = acc.c[1] = acc.c[2] = acc.c[3] = 0.0f;
}

// acc += A * B for one 16x8x16 step.
__device__ __forceinline__ void mma_bf16_16x8x16(MmaAccum16x8& acc, const u32 a[4], const u32 b[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };"
        : "+f"(acc.c[0]), "+f"(acc.c[1]), "+f"(acc.c[2]), "+f"(acc.c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#endif  // NINFER_COMMON_MMA
