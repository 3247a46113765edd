// Walks one f32 row with 16-byte loads where the row's address allows: a scalar head up to
// the first 16-byte boundary, float4s, then a scalar tail. Rows of any width and address
// (callers point into larger buffers) are handled; `visit(value, index)` sees every element
// exactly once, in an order that differs per thread (ops using it must not depend on order).
//
// LOAD picks the cache path: ROW_LOAD_NC (the read-only path, for rows nothing writes while
// the kernel runs) or ROW_LOAD_CG (L2 only, coherent with this kernel's own earlier
// stores once the block has synchronised).
#ifndef NINFER_ELEMENTWISE_ROW_VEC
#define NINFER_ELEMENTWISE_ROW_VEC

#define ROW_LOAD_NC 0
#define ROW_LOAD_CG 1
// float4 loads each thread has in flight before using any (one SM reads a whole row, so
// bytes in flight set its bandwidth).
#define ROW_UNROLL 8

template <int LOAD>
__device__ __forceinline__ float4 row_load4(const float4* p) {
    return LOAD == ROW_LOAD_NC ? __ldg(p) : __ldcg(p);
}

template <int LOAD>
__device__ __forceinline__ float row_load1(const float* p) {
    return LOAD == ROW_LOAD_NC ? __ldg(p) : __ldcg(p);
}

template <int BLOCK, int LOAD, typename Visit>
__device__ __forceinline__ void for_each_in_row(const float* p, int n, Visit& visit) {
    const unsigned long long addr = (unsigned long long)p;
    int head = (int)(((16ull - (addr & 15ull)) & 15ull) >> 2);
    if (head > n) head = n;
    const int n4 = (n - head) >> 2;
    const float4* p4 = reinterpret_cast<const float4*>(p + head);
    for (int i = threadIdx.x; i < head; i += BLOCK) visit(row_load1<LOAD>(p + i), i);
    int k = threadIdx.x;
    for (; k + (ROW_UNROLL - 1) * BLOCK < n4; k += ROW_UNROLL * BLOCK) {
        float4 v[ROW_UNROLL];
#pragma unroll
        for (int u = 0; u < ROW_UNROLL; ++u) v[u] = row_load4<LOAD>(p4 + k + u * BLOCK);
#pragma unroll
        for (int u = 0; u < ROW_UNROLL; ++u) {
            const int base = head + 4 * (k + u * BLOCK);
            visit(v[u].x, base);
            visit(v[u].y, base + 1);
            visit(v[u].z, base + 2);
            visit(v[u].w, base + 3);
        }
    }
    for (; k < n4; k += BLOCK) {
        const float4 v = row_load4<LOAD>(p4 + k);
        const int base = head + 4 * k;
        visit(v.x, base);
        visit(v.y, base + 1);
        visit(v.z, base + 2);
        visit(v.w, base + 3);
    }
    for (int i = head + 4 * n4 + threadIdx.x; i < n; i += BLOCK) visit(row_load1<LOAD>(p + i), i);
}

// out[i] = f(in[i]) over one row, through L2 (ld.cg) so that `in` may be `out` or a row
// this kernel wrote before a barrier. When both rows share their 16-byte phase (always in
// place) the body moves float4s both ways; otherwise it falls back to unrolled scalars.
// Each element is read and written by one thread.
template <int BLOCK, typename Map>
__device__ __forceinline__ void map_row(const float* in, float* out, int n, Map& f) {
    const unsigned long long a = (unsigned long long)in, b = (unsigned long long)out;
    if (((a ^ b) & 15ull) != 0) {
        int i = threadIdx.x;
        for (; i + 3 * BLOCK < n; i += 4 * BLOCK) {
            float v[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) v[u] = __ldcg(in + i + u * BLOCK);
#pragma unroll
            for (int u = 0; u < 4; ++u) out[i + u * BLOCK] = f(v[u]);
        }
        for (; i < n; i += BLOCK) out[i] = f(__ldcg(in + i));
        return;
    }
    int head = (int)(((16ull - (a & 15ull)) & 15ull) >> 2);
    if (head > n) head = n;
    const int n4 = (n - head) >> 2;
    const float4* in4 = reinterpret_cast<const float4*>(in + head);
    float4* out4 = reinterpret_cast<float4*>(out + head);
    for (int i = threadIdx.x; i < head; i += BLOCK) out[i] = f(__ldcg(in + i));
    int k = threadIdx.x;
    for (; k + (ROW_UNROLL - 1) * BLOCK < n4; k += ROW_UNROLL * BLOCK) {
        float4 v[ROW_UNROLL];
#pragma unroll
        for (int u = 0; u < ROW_UNROLL; ++u) v[u] = __ldcg(in4 + k + u * BLOCK);
#pragma unroll
        for (int u = 0; u < ROW_UNROLL; ++u) {
            float4 r;
            r.x = f(v[u].x);
            r.y = f(v[u].y);
            r.z = f(v[u].z);
            r.w = f(v[u].w);
            out4[k + u * BLOCK] = r;
        }
    }
    for (; k < n4; k += BLOCK) {
        const float4 v = __ldcg(in4 + k);
        float4 r;
        r.x = f(v.x);
        r.y = f(v.y);
        r.z = f(v.z);
        r.w = f(v.w);
        out4[k] = r;
    }
    for (int i = head + 4 * n4 + threadIdx.x; i < n; i += BLOCK) out[i] = f(__ldcg(in + i));
}

#endif  // NINFER_ELEMENTWISE_ROW_VEC
