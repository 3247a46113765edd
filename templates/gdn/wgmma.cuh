// The GDN prefill scans' Hopper pieces (gdn/chunk_wg.cu, gdn/chunk_wgs.cu): warpgroup
// MMA (wgmma) with its shared-memory descriptors, mbarriers, and TMA tensor copies. The
// includer includes gdn/f16_mma.cuh first. NINFER_WGMMA is 1 where the target has them
// (sm_90a); elsewhere only TmaMap is declared, so that a kernel's stub compiles.
#ifndef NINFER_GDN_WGMMA
#define NINFER_GDN_WGMMA
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NINFER_WGMMA 1
#else
#define NINFER_WGMMA 0
#endif

// A TMA tensor map (CUtensorMap), passed by value.
struct __align__(64) TmaMap {
    u64 opaque[16];
};

#if NINFER_WGMMA
// Shared-memory descriptor of a K-major operand in the 128-byte swizzle, 8-row atoms 1024
// bytes apart (stride byte offset; the leading one is unused for this layout).
__device__ __forceinline__ u64 wg_desc(u32 addr) {
    return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(16 >> 4) << 16) | ((u64)(1024 >> 4) << 32) |
           (1ull << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// d (64 x 64 f32, the warpgroup's accumulators) += A (64 x 16 f16, registers) B (16 x 64,
// K-major in shared memory, descriptor db).
__device__ __forceinline__ void wg_m64n64k16(float (&d)[32], const u32 (&a)[4], u64 db) {
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{ {% for i in range(end=32) %}%{{ i }}{% if not loop.last %}, {% endif %}{% endfor %} }, "
        "{ %32, %33, %34, %35 }, %36, 1, 1, 1, 0;\n"
        "}\n"
        : {% for i in range(end=32) %}"+f"(d[{{ i }}]){% if not loop.last %}, {% endif %}{% endfor %}
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n"
        "}\n" ::"r"(bar), "r"(parity) : "memory");
}
// The box at (c0, c1, c2, c3) of `map` into shared `dst`, completing on `bar`.
__device__ __forceinline__ void tma_load(u32 dst, const TmaMap& map, int c0, int c1, int c2, int c3, u32 bar) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, { %2, %3, %4, %5 }], [%6];"
        ::"r"(dst), "l"((u64)&map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
// Shared `src` to the box at (c0, c1, c2, c3) of `map` (clipped to the tensor).
__device__ __forceinline__ void tma_store(const TmaMap& map, int c0, int c1, int c2, int c3, u32 src) {
    asm volatile(
        "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, { %1, %2, %3, %4 }], [%5];"
        ::"l"((u64)&map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src) : "memory");
}
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Orders the accumulators (or A fragments) against the wgmma fence and waits: the compiler
// sees a wgmma's registers as read and written when it is issued, not when it completes.
__device__ __forceinline__ void pin(float (&d)[32]) {
#pragma unroll
    for (int e = 0; e < 32; ++e) asm volatile("" : "+f"(d[e])::"memory");
}
template <int N>
__device__ __forceinline__ void pin(u32 (&a)[N][4]) {
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[k][e])::"memory");
}
// d (64 x 128 f32) += A (64 x 16 f16, registers) B (16 x 128, N-major in shared memory:
// two 64-column atoms LBO bytes apart, 8-row groups of K 1024 bytes apart).
__device__ __forceinline__ void wg_m64n128k16_t(float (&d)[16][4], const u32 (&a)[4], u64 db) {
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{ {% for i in range(end=64) %}%{{ i }}{% if not loop.last %}, {% endif %}{% endfor %} }, "
        "{ %64, %65, %66, %67 }, %68, 1, 1, 1, 1;\n"
        "}\n"
        : {% for n in range(end=16) %}{% for e in range(end=4) %}"+f"(d[{{ n }}][{{ e }}]){% if n != 15 or e != 3 %}, {% endif %}{% endfor %}{% endfor %}
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
// Descriptor of an N-major operand in the 128-byte swizzle: 64-column atoms 8 KB apart
// (leading byte offset), 8-row groups 1024 bytes apart (stride byte offset).
__device__ __forceinline__ u64 wg_desc_mn(u32 addr) {
    return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(8192 >> 4) << 16) | ((u64)(1024 >> 4) << 32) |
           (1ull << 62);
}
__device__ __forceinline__ void pin(float (&d)[16][4]) {
#pragma unroll
    for (int n = 0; n < 16; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[n][e])::"memory");
}
// d (64 x 64 f32) += A (64 x 16 f16, K-major in shared memory, descriptor da) B (as
// wg_m64n64k16's).
__device__ __forceinline__ void wg_m64n64k16_ss(float (&d)[32], u64 da, u64 db) {
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{ {% for i in range(end=32) %}%{{ i }}{% if not loop.last %}, {% endif %}{% endfor %} }, "
        "%32, %33, 1, 1, 1, 0, 0;\n"
        "}\n"
        : {% for i in range(end=32) %}"+f"(d[{{ i }}]){% if not loop.last %}, {% endif %}{% endfor %}
        : "l"(da), "l"(db));
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// This thread's cp.async copies issued so far arrive on `bar` as they complete (the
// arrival counted in the barrier's initial count).
__device__ __forceinline__ void cp_async_arrive(u32 bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
#endif  // NINFER_WGMMA

#endif  // NINFER_GDN_WGMMA
