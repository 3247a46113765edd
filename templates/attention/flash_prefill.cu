{#
  Causal GQA attention prefill, flash style, f32 math, register-tiled (the "tiled" route).

  Same problem as attention/flash.cu in mode "direct": query row i (position pos0 + i)
  attends to keys 0 ..= pos0 + i; a block takes BQ query vectors of one KV head g, the
  vectors numbered v = i * rep + (h - g * rep) so that they all read the same K/V; K/V
  come through shared memory in tiles of BK keys (converted to f32 on load); online
  softmax per vector with a running max, all in f32.

  What differs is who computes what. flash.cu gives each vector G lanes that each score
  KT/G keys: per 4 FMAs a lane reads a float4 of q and a float4 of k from shared memory,
  so shared-memory bandwidth, not the FMA units, sets its pace. Here a thread owns a
  RQ x RK block of scores (RQ vectors x RK = 4 keys) and, in P*V, RQ vectors x CPT float4
  columns of the output, so each value read from shared memory feeds RQ or 4 FMAs:
    - thread (tq, tk), tq = threadIdx.x / TK, tk = threadIdx.x % TK (TK = BK / 4 lanes of
      one warp share a group of vectors and reduce the row max / sum by shuffles);
    - vectors RQ*tq .. RQ*tq + RQ-1 of the block; keys tk + TK*j (j < 4) of the tile
      (strided: the padded K rows then fall in distinct banks);
    - output columns (c*TK + tk)*4 .. +3 for c < CPT = HD / (4*TK).
  The probabilities go to shared memory key-major ([BK][BQ+4]), so P*V reads the RQ
  probabilities of one key as one vector load and the V row as float4s.

  The loads of the next K tile overlap P*V and those of the V tile overlap Q*K^T: an f32
  cache is copied by cp.async straight into shared memory, a bf16 cache is staged raw in
  registers and converted when its buffer is free. Per tile: K lands; sync; V starts;
  scores, softmax, P; V lands; sync; next K starts; P*V.

  Blocks are numbered heaviest first across all KV heads (blockIdx.x = tile * n_kv + g,
  tiles counted from the last rows), so the longest blocks start first.

  Params: hd (64 | 128 | 256), kv_type ("float" | "bf16_t"), bq (vectors per block),
  bk (keys per tile, 4 * TK with TK dividing 32), rq (2 | 4). HD % (4 * TK) == 0.
  Pointers must be 16-byte aligned.
#}
{% include "common/types.cuh" %}

#define HD {{ hd }}
#define BQ {{ bq }}
#define BK {{ bk }}
#define RQ {{ rq }}
#define RK 4
#define TK (BK / RK)            // lanes sharing one group of RQ vectors
#define TQ (BQ / RQ)            // vector groups per block
#define NT (TQ * TK)            // threads
#define CPT (HD / (4 * TK))     // float4 output chunks per thread
#define QS (HD + 4)             // padded row stride of Q and K: conflict-free float4 reads
#define PS (BQ + 4)             // padded row stride of the key-major probabilities
#define LPT (BK * (HD / 4) / NT)  // 4-element chunks of a K (or V) tile per thread
#define NEG_INF __uint_as_float(0xff800000u)
// Blocks per SM the shared memory allows (228 KiB, 1 KiB reserved a block), and at 128
// registers a thread: the register budget asked of the compiler is the smaller.
#define SMEM_BYTES (4 * (BQ * QS + BK * QS + BK * HD + BK * PS))
#define FIT_SMEM ((228 * 1024) / (SMEM_BYTES + 1024))
#define FIT_REGS (65536 / (NT * 128))
#define MIN_BLOCKS (FIT_SMEM < FIT_REGS ? FIT_SMEM : FIT_REGS)

#if (BK * (HD / 4)) % NT != 0 || (32 % TK) != 0 || (HD % (4 * TK)) != 0 || (BQ % RQ) != 0
#error "flash_prefill: unsupported tiling"
#endif

{% if kv_type == "float" %}
// f32 cache: cp.async (16 bytes, zero-filled past the last key) into the tile.
__device__ __forceinline__ void copy_tile(float* dst, int stride, const float* __restrict__ src,
                                          int k0, int k_end, long long kvw, int g) {
#pragma unroll
    for (int n = 0; n < LPT; ++n) {
        const int e = threadIdx.x + n * NT;
        const int r = e / (HD / 4), c = (e % (HD / 4)) * 4;
        const int p = k0 + r;
        const float* from = p < k_end ? src + p * kvw + (long long)g * HD + c : src;
        const unsigned to = (unsigned)__cvta_generic_to_shared(dst + r * stride + c);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                     :: "r"(to), "l"(from), "r"(p < k_end ? 16 : 0));
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void copy_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
#define STAGE_K(k) copy_tile(ks, QS, kc, (k), k_end, kvw, g)
#define LAND_K() copy_wait()
#define STAGE_V(k) copy_tile(vs, HD, vc, (k), k_end, kvw, g)
#define LAND_V() copy_wait()
{% else %}
typedef uint2 stage_t;         // 4 bf16
__device__ __forceinline__ float4 to_f4(uint2 u) {
    return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                       __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}
__device__ __forceinline__ uint2 zero_stage() { return make_uint2(0u, 0u); }
#define REG_STAGE 1
#define STAGE_K(k) load_tile(kr, kc, (k), k_end, kvw, g)
#define LAND_K() store_tile(ks, QS, kr)
#define STAGE_V(k) load_tile(vr, vc, (k), k_end, kvw, g)
#define LAND_V() store_tile(vs, HD, vr)
{% endif %}

// Reductions over the TK lanes of one vector group (TK divides 32, groups are aligned).
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
    for (int o = TK / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int o = TK / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

#ifdef REG_STAGE
// Chunks of the tile at key k0 into registers: chunk n of this thread is element
// e = threadIdx.x + n * NT, key k0 + e / (HD/4), columns (e % (HD/4)) * 4; zeros past k_end.
__device__ __forceinline__ void load_tile(stage_t (&r)[LPT], const {{ kv_type }}* __restrict__ src,
                                          int k0, int k_end, long long kvw, int g) {
#pragma unroll
    for (int n = 0; n < LPT; ++n) {
        const int e = threadIdx.x + n * NT;
        const int p = k0 + e / (HD / 4), c = (e % (HD / 4)) * 4;
        r[n] = zero_stage();
        if (p < k_end) r[n] = *(const stage_t*)(src + p * kvw + (long long)g * HD + c);
    }
}

__device__ __forceinline__ void store_tile(float* dst, int stride, const stage_t (&r)[LPT]) {
#pragma unroll
    for (int n = 0; n < LPT; ++n) {
        const int e = threadIdx.x + n * NT;
        *(float4*)(dst + (e / (HD / 4)) * stride + (e % (HD / 4)) * 4) = to_f4(r[n]);
    }
}
#endif

extern "C" __global__ void __launch_bounds__(NT, MIN_BLOCKS)
{{ kernel_name }}(const float* __restrict__ q,          // [t, n_heads * HD]
                  const {{ kv_type }}* __restrict__ kc,  // [capacity, n_kv * HD]
                  const {{ kv_type }}* __restrict__ vc,  // [capacity, n_kv * HD]
                  float* __restrict__ out,               // [t, n_heads * HD]
                  int t, int pos0,
                  const int* __restrict__ pos_dev,  // if set, *pos_dev is added to pos0
                  int n_heads, int n_kv,
                  float scale_log2)                 // softmax scale * log2(e)
{
    if (pos_dev) pos0 += *pos_dev;
    extern __shared__ float4 smem4[];
    float* qs = (float*)smem4;     // [BQ][QS]
    float* ks = qs + BQ * QS;      // [BK][QS]
    float* vs = ks + BK * QS;      // [BK][HD]
    float* ps = vs + BK * HD;      // [BK][PS]

    const int rep = n_heads / n_kv;
    const int g = blockIdx.x % n_kv;
    const int tiles = gridDim.x / n_kv;
    const int v0 = (tiles - 1 - (int)(blockIdx.x / n_kv)) * BQ;
    const int nv = t * rep;
    const long long qd = (long long)n_heads * HD;
    const long long kvw = (long long)n_kv * HD;

    for (int e = threadIdx.x; e < BQ * (HD / 4); e += NT) {
        const int r = e / (HD / 4), c = (e % (HD / 4)) * 4;
        const int v = v0 + r;
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (v < nv) {
            const int i = v / rep, h = g * rep + v % rep;
            x = *(const float4*)(q + i * qd + (long long)h * HD + c);
            x.x *= scale_log2; x.y *= scale_log2; x.z *= scale_log2; x.w *= scale_log2;
        }
        *(float4*)(qs + r * QS + c) = x;
    }

    const int tk = threadIdx.x % TK, tq = threadIdx.x / TK;
    // The last key each of this thread's vectors may see (vectors past the end copy the
    // last row), and one past the block's last key.
    int lim[RQ];
#pragma unroll
    for (int i = 0; i < RQ; ++i) lim[i] = pos0 + min(v0 + RQ * tq + i, nv - 1) / rep;
    const int k_end = pos0 + (min(v0 + BQ, nv) - 1) / rep + 1;

    float m[RQ], l[RQ];
    float4 o[RQ][CPT];
#pragma unroll
    for (int i = 0; i < RQ; ++i) {
        m[i] = NEG_INF;
        l[i] = 0.f;
#pragma unroll
        for (int c = 0; c < CPT; ++c) o[i][c] = make_float4(0.f, 0.f, 0.f, 0.f);
    }

#ifdef REG_STAGE
    stage_t kr[LPT], vr[LPT];
#endif
    STAGE_K(0);

    for (int k0 = 0; k0 < k_end; k0 += BK) {
        // K may land: every thread is past the previous tile's scores (the sync before
        // its P*V).
        LAND_K();
        __syncthreads();
        STAGE_V(k0);

        // Scores of vectors RQ*tq + i against keys tk + TK*j, in log2 units.
        float s[RQ][RK];
#pragma unroll
        for (int i = 0; i < RQ; ++i)
#pragma unroll
            for (int j = 0; j < RK; ++j) s[i][j] = 0.f;
#pragma unroll 1
        for (int c = 0; c < HD; c += 4) {
            float4 qv[RQ], kv[RK];
#pragma unroll
            for (int i = 0; i < RQ; ++i) qv[i] = *(const float4*)(qs + (RQ * tq + i) * QS + c);
#pragma unroll
            for (int j = 0; j < RK; ++j) kv[j] = *(const float4*)(ks + (tk + TK * j) * QS + c);
#pragma unroll
            for (int i = 0; i < RQ; ++i)
#pragma unroll
                for (int j = 0; j < RK; ++j) {
                    float a = s[i][j];
                    a = fmaf(qv[i].x, kv[j].x, a);
                    a = fmaf(qv[i].y, kv[j].y, a);
                    a = fmaf(qv[i].z, kv[j].z, a);
                    a = fmaf(qv[i].w, kv[j].w, a);
                    s[i][j] = a;
                }
        }

        // Online softmax per vector; l stays a per-lane partial (every lane of a group
        // applies the same rescalings), summed over the group at the end.
#pragma unroll
        for (int i = 0; i < RQ; ++i) {
            float mx = NEG_INF;
#pragma unroll
            for (int j = 0; j < RK; ++j) {
                if (k0 + tk + TK * j > lim[i]) s[i][j] = NEG_INF;
                mx = fmaxf(mx, s[i][j]);
            }
            const float m_new = fmaxf(m[i], group_max(mx));
            // A vector that has seen no key yet keeps m = -inf; exponentiate against 0
            // then (every p is 0), never against -inf (NaN).
            const float m_use = m_new == NEG_INF ? 0.f : m_new;
            const float alpha = exp2f(m[i] - m_use);
            float psum = 0.f;
#pragma unroll
            for (int j = 0; j < RK; ++j) {
                s[i][j] = exp2f(s[i][j] - m_use);
                psum += s[i][j];
            }
            l[i] = l[i] * alpha + psum;
            m[i] = m_new;
#pragma unroll
            for (int c = 0; c < CPT; ++c) {
                o[i][c].x *= alpha; o[i][c].y *= alpha; o[i][c].z *= alpha; o[i][c].w *= alpha;
            }
        }
#pragma unroll
        for (int j = 0; j < RK; ++j) {
            float* pp = ps + (tk + TK * j) * PS + RQ * tq;
#if RQ == 4
            *(float4*)pp = make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
#else
            *(float2*)pp = make_float2(s[0][j], s[1][j]);
#endif
        }

        // V may land: every thread is past the previous tile's P*V (the sync above).
        LAND_V();
        __syncthreads();
        if (k0 + BK < k_end) STAGE_K(k0 + BK);

#pragma unroll {% if hd >= 256 %}2{% else %}4{% endif %}
        for (int j = 0; j < BK; ++j) {
            float p[RQ];
#if RQ == 4
            const float4 p4 = *(const float4*)(ps + j * PS + RQ * tq);
            p[0] = p4.x; p[1] = p4.y; p[2] = p4.z; p[3] = p4.w;
#else
            const float2 p2 = *(const float2*)(ps + j * PS + RQ * tq);
            p[0] = p2.x; p[1] = p2.y;
#endif
#pragma unroll
            for (int c = 0; c < CPT; ++c) {
                const float4 vv = *(const float4*)(vs + j * HD + (c * TK + tk) * 4);
#pragma unroll
                for (int i = 0; i < RQ; ++i) {
                    o[i][c].x = fmaf(p[i], vv.x, o[i][c].x);
                    o[i][c].y = fmaf(p[i], vv.y, o[i][c].y);
                    o[i][c].z = fmaf(p[i], vv.z, o[i][c].z);
                    o[i][c].w = fmaf(p[i], vv.w, o[i][c].w);
                }
            }
        }
    }

#pragma unroll
    for (int i = 0; i < RQ; ++i) {
        const float lt = group_sum(l[i]);  // >= 1: key 0 is in every vector's range
        const int v = v0 + RQ * tq + i;
        if (v < nv) {
            const int row = v / rep, h = g * rep + v % rep;
            const float inv = 1.f / lt;
            float* dst = out + row * qd + (long long)h * HD;
#pragma unroll
            for (int c = 0; c < CPT; ++c) {
                float4 r = o[i][c];
                r.x *= inv; r.y *= inv; r.z *= inv; r.w *= inv;
                *(float4*)(dst + (c * TK + tk) * 4) = r;
            }
        }
    }
}
