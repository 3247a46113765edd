// Gated DeltaNet device helpers. The including template defines LPR (lanes per state
// column), EPT (elements per lane) and VEC (16-byte state accesses) first.
#ifndef NINFER_GDN_COMMON
#define NINFER_GDN_COMMON

__device__ __forceinline__ float gdn_softplus(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

// Sum over the LPR lanes that share a column (xor butterfly: every lane gets the same bits).
__device__ __forceinline__ float gdn_group_sum(float v) {
#pragma unroll
    for (int o = LPR / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ void gdn_group_sum2(float& a, float& b) {
#pragma unroll
    for (int o = LPR / 2; o > 0; o >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, o);
        b += __shfl_xor_sync(0xffffffffu, b, o);
    }
}

// Two sums over the whole block at once (one pair of barriers); `scratch` holds 64 floats.
__device__ __forceinline__ void gdn_block_sum2(float& a, float& b, float* scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    a = warp_sum(a);
    b = warp_sum(b);
    __syncthreads();  // scratch may still be read by an earlier call
    if (lane == 0) { scratch[warp] = a; scratch[32 + warp] = b; }
    __syncthreads();
    a = lane < nwarps ? scratch[lane] : 0.0f;
    b = lane < nwarps ? scratch[32 + lane] : 0.0f;
    a = warp_sum(a);
    b = warp_sum(b);
}

// Load / store EPT consecutive state elements as f32; `valid` of them lie inside dk
// (with VEC, dk % EPT == 0 so a slice is all in or all out).
__device__ __forceinline__ void gdn_ld_slice(const float* p, float* v, int valid) {
#if VEC
#pragma unroll
    for (int e = 0; e < EPT; e += 4) {
        const float4 t = *reinterpret_cast<const float4*>(p + e);
        v[e] = t.x; v[e + 1] = t.y; v[e + 2] = t.z; v[e + 3] = t.w;
    }
#else
#pragma unroll
    for (int e = 0; e < EPT; ++e) v[e] = e < valid ? p[e] : 0.0f;
#endif
}

__device__ __forceinline__ void gdn_st_slice(float* p, const float* v, int valid) {
#if VEC
#pragma unroll
    for (int e = 0; e < EPT; e += 4) {
        float4 t;
        t.x = v[e]; t.y = v[e + 1]; t.z = v[e + 2]; t.w = v[e + 3];
        *reinterpret_cast<float4*>(p + e) = t;
    }
#else
#pragma unroll
    for (int e = 0; e < EPT; ++e) if (e < valid) p[e] = v[e];
#endif
}

__device__ __forceinline__ void gdn_ld_slice(const f16_t* p, float* v, int valid) {
#if VEC
#pragma unroll
    for (int e = 0; e < EPT; e += 8) {
        const uint4 t = *reinterpret_cast<const uint4*>(p + e);
        const u32 w[4] = { t.x, t.y, t.z, t.w };
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            v[e + 2 * k] = f16_to_f32((f16_t)(w[k] & 0xffffu));
            v[e + 2 * k + 1] = f16_to_f32((f16_t)(w[k] >> 16));
        }
    }
#else
#pragma unroll
    for (int e = 0; e < EPT; ++e) v[e] = e < valid ? f16_to_f32(p[e]) : 0.0f;
#endif
}

__device__ __forceinline__ void gdn_st_slice(f16_t* p, const float* v, int valid) {
#if VEC
#pragma unroll
    for (int e = 0; e < EPT; e += 8) {
        u32 w[4];
#pragma unroll
        for (int k = 0; k < 4; ++k)
            w[k] = (u32)f32_to_f16(v[e + 2 * k]) | ((u32)f32_to_f16(v[e + 2 * k + 1]) << 16);
        uint4 t;
        t.x = w[0]; t.y = w[1]; t.z = w[2]; t.w = w[3];
        *reinterpret_cast<uint4*>(p + e) = t;
    }
#else
#pragma unroll
    for (int e = 0; e < EPT; ++e) if (e < valid) p[e] = f32_to_f16(v[e]);
#endif
}

#endif  // NINFER_GDN_COMMON
