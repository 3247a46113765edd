{#
  Causal GQA attention of query rows against a KV cache, flash style, f32 math.

  One block takes NQ query vectors of one KV head g: the vectors are the pairs
  (row i, head h) with h in g's group, numbered v = i * rep + (h - g * rep), so a block
  covers whole GQA groups of consecutive rows and every vector in it reads the same K/V.
  K/V come through shared memory in tiles of KT keys (converted to f32 on load) that all
  NQ vectors of the block reuse. G lanes serve one vector: each scores KT/G keys of the
  tile and owns HD/G elements of the output, with an online (running max) softmax.

  mode "direct": the block scans keys 0 ..= its last row's position and writes the
  normalised output rows (the prefill route).
  mode "split":  blockIdx.z picks a range of split * split_mult keys; the block writes its
  partial (max, sum, unnormalised acc) to the workspace; the last of the live blocks of a
  (tile, KV head) to finish (an atomic counter per pair, reset by that block so the next
  launch or graph replay finds zeros) merges every live split's partial into `final_out`
  (the decode route, split-K over the cache, combine folded in: one launch). Live: the
  splits that hold keys at this launch's position (a captured grid is planned for the
  largest); the others return after the wait, and a lone live split writes `final_out`
  itself.

  rope ("" | "neox" | "interleaved"), split mode, one row (t = 1, the decode step): RoPE and
  the KV append folded in. q and the step's key k_new arrive unrotated; every block rotates
  its q vectors as it loads them, the blocks whose keys include position pos0 rotate k_new
  (and take v_new) in place of reading that cache row, and of those the first tile's block
  stores both to the cache. The arithmetic is rope/rope.cu's and the cache's rounding, so
  the result has the bits of the rope + append launch followed by the plain decode route.

  lanes (rope, split mode only): one launch serves up to LANES_MAX separate sequences, each
  one decode row against its own cache. blockIdx.y = lane * n_kv + KV head; the lane's cache
  pointers and host position come from the by-value table `tab`, its device position (if
  pos_dev is set) from pos_dev[lane]; the lane's q, k_new and v_new rows start at
  lane * q_stride and lane * kv_stride (so they may be column blocks of one [lanes, qkv]
  activation), final_out is [lanes, ...] with the lane's row at row `lane`, and the workspace holds the lane's partials as row `lane` (the
  per-lane kernel's bits, as long as the split grid is planned alike).

  gated (rope, split mode only; one row or lanes): Qwen3.5/3.6's gated attention core in the
  same launch. q arrives as the q_proj half of the stacked [q+gate | k | v] projection, each
  head 2 * HD wide (query then gate: q head h at q + h * 2 * HD, its gate HD further), and k_new
  / v_new are the k and v column blocks of the same row (the host points k_new, v_new there).
  q and k_new get the per-head zero-centred RMSNorm y = x * rsqrt(mean(x^2) + eps) * (1 + w)
  (weights q_norm / k_norm, [HD]) before RoPE, as norm/rmsnorm.cu computes it up to the order
  of the sum of squares; the normalised output is multiplied by sigmoid(gate) wherever
  final_out is written (the merge and the lone live split), with elementwise/pointwise.cu's
  sigmoid_gate arithmetic. This replaces split_heads, two rmsnorm launches and sigmoid_gate.

  Params: hd (64 | 128 | 256), kv_type ("float" | "bf16_t"), nq, g, kt, mode, split, rope,
  lanes (optional), gated (optional).
  Pointers must be 16-byte aligned (float4 / 4 x bf16 loads).

  Tensor cores would go in the two inner products below (Q K^T over the tile and P V):
  an mma.sync m16n8k16 bf16 pair with the tile staged as bf16 would replace the float4
  loops; the tiling and the online softmax stay as they are.
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}

#define HD {{ hd }}
#define NQ {{ nq }}
#define G {{ g }}
#define KT {{ kt }}
#define NT (NQ * G)
#define KPT (KT / G)          // keys each lane scores per tile
#define CPT (HD / (4 * G))    // float4 chunks of the output row each lane owns
#define QS (HD + 4)           // padded row stride of the Q and K tiles: conflict-free float4 reads
#define PS (KT + 1)           // padded row stride of the probabilities
#define NEG_INF __uint_as_float(0xff800000u)
{%- if gated is defined and gated %}
#define QHS (2 * HD)          // floats from one q head to the next (query + gate)
{%- else %}
#define QHS HD
{%- endif %}
{%- if lanes is defined and lanes %}
#define LANES_MAX 8
// Per lane: its layer's cache buffers and its host position (the host's ops::attention::LaneTable).
struct LaneTable {
    {{ kv_type }}* k[LANES_MAX];
    {{ kv_type }}* v[LANES_MAX];
    int pos[LANES_MAX];
};
{%- endif %}

__device__ __forceinline__ float4 ld4(const float* p) { return *(const float4*)p; }
__device__ __forceinline__ float4 ld4(const bf16_t* p) {
    const uint2 u = *(const uint2*)p;
    return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                       __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}
{%- if gated is defined and gated %}
// One head read through its zero-centred RMSNorm (norm/rmsnorm.cu's per-element
// arithmetic: x * inv_rms * (1 + w)), so RoPE below sees the normalised values.
struct NormedHead {
    const float* x;
    const float* w;
    float inv;
    __device__ __forceinline__ float operator[](int d) const {
        return __fmul_rn(__fmul_rn(x[d], inv), __fadd_rn(1.0f, w[d]));
    }
};
// out * sigmoid(gate) per element, with elementwise/pointwise.cu's sigmoid_gate arithmetic.
__device__ __forceinline__ float4 gate4(float4 r, const float* gp) {
    r.x = __fmul_rn(r.x, __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-gp[0]))));
    r.y = __fmul_rn(r.y, __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-gp[1]))));
    r.z = __fmul_rn(r.z, __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-gp[2]))));
    r.w = __fmul_rn(r.w, __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-gp[3]))));
    return r;
}
{%- endif %}
{%- if rope %}
// Element d of one head after RoPE, with rope/rope.cu's arithmetic. H: a plain pointer, or
// a NormedHead (gated).
template <typename H>
__device__ __forceinline__ float rope_elem(const H& h, int d, int rd, const float* cs,
                                           const float* sn) {
    if (d >= rd) return h[d];
    const int half = rd >> 1;
{%- if rope == "neox" %}
    const bool first = d < half;
    const int j = first ? d : d - half;
    const float x0 = h[j], x1 = h[j + half];
{%- else %}
    const bool first = (d & 1) == 0;
    const int j = d >> 1;
    const float x0 = h[2 * j], x1 = h[2 * j + 1];
{%- endif %}
    const float c = cs[j], s = sn[j];
    return first ? __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s))
                 : __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s));
}
// A value as the cache returns it once stored.
__device__ __forceinline__ float through_cache(float x) {
{%- if kv_type == "bf16_t" %}
    return bf16_to_f32(f32_to_bf16(x));
{%- else %}
    return x;
{%- endif %}
}
{%- endif %}
__device__ __forceinline__ float dot4(float4 a, float4 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

// Reductions over the G lanes of one query vector (G divides 32, groups are aligned).
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(NT)
{{ kernel_name }}(const float* __restrict__ q,          // [t, n_heads * HD]
                  {% if not rope %}const {% endif %}{{ kv_type }}* __restrict__ kc,  // [capacity, n_kv * HD]
                  {% if not rope %}const {% endif %}{{ kv_type }}* __restrict__ vc,  // [capacity, n_kv * HD]
                  float* __restrict__ out,   // direct: [t, n_heads * HD]; split: acc [t * n_heads, max_splits, HD]
                  float* __restrict__ ml,    // split: [t * n_heads, max_splits, 2] (max in log2 units, sum)
                  int t, int pos0,
                  const int* __restrict__ pos_dev,  // if set, *pos_dev is added to pos0 (graph replays)
                  int n_heads, int n_kv,
                  int max_splits, int split_mult,
                  float scale_log2,          // softmax scale * log2(e)
                  float* __restrict__ final_out,  // split: [t, n_heads * HD]
                  // split: counters [gridDim.y * gridDim.x], zeros
                  int* __restrict__ counters
{%- if rope %},
                  const float* __restrict__ k_new,  // [1, n_kv * HD]: the step's key, unrotated
                  const float* __restrict__ v_new,  // [1, n_kv * HD]
                  int rotary_dim, double theta
{%- endif %}
{%- if lanes is defined and lanes %},
                  LaneTable tab,
                  // floats from one lane's row of q to the next's, and of k_new / v_new (the
                  // stacked qkv projection's row width when q, k, v are its column blocks)
                  long long q_stride, long long kv_stride
{%- endif %}
{%- if gated is defined and gated %},
                  const float* __restrict__ q_norm,  // [HD], zero-centred
                  const float* __restrict__ k_norm,  // [HD], zero-centred
                  float eps
{%- endif %})
{
{%- if lanes is defined and lanes %}
    // This block's lane: its cache, position, rows and workspace slots.
    const int lane = blockIdx.y / n_kv;
    kc = tab.k[lane];
    vc = tab.v[lane];
    pos0 = tab.pos[lane] + (pos_dev ? pos_dev[lane] : 0);
    {
        const long long qd_l = (long long)n_heads * HD;
        const long long slots = (long long)n_heads * max_splits;
        q += lane * q_stride;
        final_out += lane * qd_l;
        k_new += lane * kv_stride;
        v_new += lane * kv_stride;
        out += lane * slots * HD;
        ml += lane * slots * 2;
    }
    const int g = blockIdx.y % n_kv;
{%- else %}
    if (pos_dev) pos0 += *pos_dev;
    const int g = blockIdx.y;
{%- endif %}
    extern __shared__ float4 smem4[];
    float* qs = (float*)smem4;     // [NQ][QS]
    float* ks = qs + NQ * QS;      // [KT][QS]
    float* vs = ks + KT * QS;      // [KT][HD]
    float* ps = vs + KT * HD;      // [NQ][PS]

    const int rep = n_heads / n_kv;
    const int nv = t * rep;
    // The last tiles hold the latest rows, which see the most keys: start them first.
    const int v0 = (gridDim.x - 1 - blockIdx.x) * NQ;
    const long long qd = (long long)n_heads * HD;
    const long long qd_in = (long long)n_heads * QHS;  // q's row (gated: with the gates)
    const long long kvw = (long long)n_kv * HD;

    {
        // While the predecessor (the step's KV append) finishes: this block's keys and
        // values older than pos0 into L2 (a hint: rows this launch's predecessor writes
        // are not among them, and a prefetch never changes what a load returns).
        const int last = pos0 + (min(v0 + NQ, nv) - 1) / rep + 1;
{%- if mode == "split" %}
        const int pb = blockIdx.z * {{ split }} * split_mult;
        const int pe = min(min(last, pb + {{ split }} * split_mult), pos0);
{%- else %}
        const int pb = 0;
        const int pe = min(last, pos0);
{%- endif %}
        constexpr int LINES = (HD * (int)sizeof({{ kv_type }}) + 127) / 128;  // per row and head
        for (int e = threadIdx.x; e < (pe - pb) * LINES; e += NT) {
            const long long off = (long long)(pb + e / LINES) * kvw + (long long)g * HD;
            const int byte = (e % LINES) * 128;
            ninfer_prefetch_l2((const char*)(kc + off) + byte);
            ninfer_prefetch_l2((const char*)(vc + off) + byte);
        }
    }
{%- if rope %}
    // The cos/sin table of position pos0 (rope/rope.cu's), which needs nothing the
    // predecessor writes.
    __shared__ float rcs[HD / 2], rsn[HD / 2];
    for (int j = threadIdx.x; j < (rotary_dim >> 1); j += NT) {
        const float p = (float)pow(theta, (double)(2 * j) / (double)rotary_dim);
        const float inv_freq = __fdiv_rn(1.0f, p);
        const double a = (double)__fmul_rn((float)pos0, inv_freq);
        double sv, cv;
        sincos(a, &sv, &cv);
        rcs[j] = (float)cv;
        rsn[j] = (float)sv;
    }
    __syncthreads();
{%- endif %}
    // This block's keys: [k_begin, k_end).
    const int blk_end = pos0 + (min(v0 + NQ, nv) - 1) / rep + 1;
{%- if mode == "split" %}
    const int span = {{ split }} * split_mult;
    const int k_begin = blockIdx.z * span;
    const int k_end = min(blk_end, k_begin + span);
{%- else %}
    const int k_begin = 0;
    const int k_end = blk_end;
{%- endif %}
{%- if rope %}
    // The first tile's cache rows older than pos0 into shared memory before the wait: the
    // predecessor writes none of them (a decode step appends only row pos0, in this
    // launch), so their round trip overlaps it instead of following the q loads. Row pos0
    // (from k_new / v_new) and every later tile are loaded after the wait, below. The
    // loads of up to PB trips are issued before any store (kc may alias anything, so the
    // compiler would not move a load above a store itself).
    {
        constexpr int PT = (KT * (HD / 4) + NT - 1) / NT;  // trips a thread makes
        constexpr int PB = PT < 8 ? PT : 8;                 // trips a batch
#pragma unroll
        for (int b0 = 0; b0 < PT; b0 += PB) {
            float4 kx[PB], vx[PB];
#pragma unroll
            for (int u = 0; u < PB; ++u) {
                const int e = threadIdx.x + (b0 + u) * NT;
                const int r = e / (HD / 4), c = (e % (HD / 4)) * 4;
                const int p = k_begin + r;
                kx[u] = make_float4(0.f, 0.f, 0.f, 0.f);
                vx[u] = kx[u];
                // (Row pos0's zeros are overwritten after the wait.)
                if (e < KT * (HD / 4) && p < k_end && p != pos0) {
                    const long long off = p * kvw + (long long)g * HD + c;
                    kx[u] = ld4(kc + off);
                    vx[u] = ld4(vc + off);
                }
            }
#pragma unroll
            for (int u = 0; u < PB; ++u) {
                const int e = threadIdx.x + (b0 + u) * NT;
                const int r = e / (HD / 4), c = (e % (HD / 4)) * 4;
                if (e < KT * (HD / 4)) {
                    *(float4*)(ks + r * QS + c) = kx[u];
                    *(float4*)(vs + r * HD + c) = vx[u];
                }
            }
        }
    }
{%- endif %}
    NINFER_PDL_WAIT();     // q and the appended rows are visible from here on
    NINFER_PDL_TRIGGER();
{%- if mode == "split" %}
    // Splits that hold keys for this tile (at least one: key 0). The grid is planned for
    // the most keys a graph replay may see; the splits past the keys of this launch have
    // nothing to add, so they stop here (no partial, no count), and with one live split
    // its block writes the output itself (no partial, no count, no combine): the same
    // bits, as the combine gives a lone split weight 1 and the empty ones weight 0.
    const int live = min((pos0 + (min(v0 + NQ, nv) - 1) / rep + {{ split }} * split_mult) / ({{ split }} * split_mult), (int)gridDim.z);
    if ((int)blockIdx.z >= live) return;
{%- endif %}
{%- if gated is defined and gated %}
    // The inverse RMS of each q vector of this block (its G lanes) and, in the blocks whose
    // keys include pos0, of k_new's head g (warp 0): read after the wait, as both come
    // from the predecessor.
    __shared__ float q_inv[NQ];
    __shared__ float k_inv;
    {
        const int r = threadIdx.x / G, sl = threadIdx.x % G;
        const int v = v0 + r;
        float ss = 0.f;
        if (v < nv) {
            const int i = v / rep, h = g * rep + v % rep;
            const float* qh = q + i * qd_in + (long long)h * QHS;
            for (int d = sl; d < HD; d += G) ss += qh[d] * qh[d];
        }
        ss = group_sum(ss);
        if (sl == 0) q_inv[r] = rsqrtf(ss / (float)HD + eps);
        if (k_begin <= pos0 && pos0 < k_end && threadIdx.x < 32) {
            const float* kh = k_new + (long long)g * HD;
            float sk = 0.f;
            for (int d = threadIdx.x; d < HD; d += 32) sk += kh[d] * kh[d];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) sk += __shfl_xor_sync(0xffffffffu, sk, o);
            if (threadIdx.x == 0) k_inv = rsqrtf(sk / (float)HD + eps);
        }
        __syncthreads();
    }
{%- endif %}

    for (int e = threadIdx.x; e < NQ * (HD / 4); e += NT) {
        const int r = e / (HD / 4), c = (e % (HD / 4)) * 4;
        const int v = v0 + r;
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (v < nv) {
            const int i = v / rep, h = g * rep + v % rep;
{%- if rope %}
{%- if gated is defined and gated %}
            const NormedHead qh = {q + i * qd_in + (long long)h * QHS, q_norm, q_inv[r]};
{%- else %}
            const float* qh = q + i * qd_in + (long long)h * QHS;
{%- endif %}
            x = make_float4(rope_elem(qh, c, rotary_dim, rcs, rsn),
                            rope_elem(qh, c + 1, rotary_dim, rcs, rsn),
                            rope_elem(qh, c + 2, rotary_dim, rcs, rsn),
                            rope_elem(qh, c + 3, rotary_dim, rcs, rsn));
{%- else %}
            x = *(const float4*)(q + i * qd + (long long)h * HD + c);
{%- endif %}
            x.x *= scale_log2; x.y *= scale_log2; x.z *= scale_log2; x.w *= scale_log2;
        }
        *(float4*)(qs + r * QS + c) = x;
    }

    const int my_r = threadIdx.x / G, slot = threadIdx.x % G;
    const int my_v = v0 + my_r;
    // The last key position this vector may see (vectors past the end copy the last row).
    const int my_lim = pos0 + min(my_v, nv - 1) / rep;

    const bool warp_live = v0 + (int)(threadIdx.x & ~31u) / G < nv;  // uniform per warp
    float m = NEG_INF, l = 0.f;
    float4 acc[CPT];
#pragma unroll
    for (int c = 0; c < CPT; ++c) acc[c] = make_float4(0.f, 0.f, 0.f, 0.f);

    for (int k0 = k_begin; k0 < k_end; k0 += KT) {
        __syncthreads();  // the previous tile is consumed (and Q is stored)
        // Fully unrolled so that every load of the tile is in flight at once.
#pragma unroll
        for (int e = threadIdx.x; e < KT * (HD / 4); e += NT) {
            const int r = e / (HD / 4), c = (e % (HD / 4)) * 4;
            const int p = k0 + r;
{%- if rope %}
            if (k0 == k_begin && p != pos0) continue;  // loaded before the wait
{%- endif %}
            float4 kx = make_float4(0.f, 0.f, 0.f, 0.f), vx = kx;
            if (p < k_end) {
                const long long off = p * kvw + (long long)g * HD + c;
{%- if rope %}
                if (p == pos0) {
                    // The step's own key and value: rotated here (the first tile's block
                    // stores them), used as the cache would return them.
{%- if gated is defined and gated %}
                    const NormedHead kh = {k_new + (long long)g * HD, k_norm, k_inv};
{%- else %}
                    const float* kh = k_new + (long long)g * HD;
{%- endif %}
                    const float* vh = v_new + (long long)g * HD + c;
                    float kk[4], vv[4];
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        kk[u] = rope_elem(kh, c + u, rotary_dim, rcs, rsn);
                        vv[u] = vh[u];
                        if (blockIdx.x == 0) {
                            store_from_f32(kc, off + u, kk[u]);
                            store_from_f32(vc, off + u, vv[u]);
                        }
                    }
                    kx = make_float4(through_cache(kk[0]), through_cache(kk[1]),
                                     through_cache(kk[2]), through_cache(kk[3]));
                    vx = make_float4(through_cache(vv[0]), through_cache(vv[1]),
                                     through_cache(vv[2]), through_cache(vv[3]));
                } else {
                    kx = ld4(kc + off);
                    vx = ld4(vc + off);
                }
{%- else %}
                kx = ld4(kc + off);
                vx = ld4(vc + off);
{%- endif %}
            }
            *(float4*)(ks + r * QS + c) = kx;
            *(float4*)(vs + r * HD + c) = vx;
        }
        __syncthreads();
        // A warp whose vectors are all past the end (rep < NQ at t = 1, the last tile of
        // a prefill) only helps load.
        if (!warp_live) continue;

        // Scores of this lane's keys slot, slot + G, ... (already in log2 units).
        float s[KPT];
#pragma unroll
        for (int j = 0; j < KPT; ++j) s[j] = 0.f;
#pragma unroll 8
        for (int c = 0; c < HD; c += 4) {
            const float4 qv = *(const float4*)(qs + my_r * QS + c);
#pragma unroll
            for (int j = 0; j < KPT; ++j) s[j] += dot4(qv, *(const float4*)(ks + (slot + j * G) * QS + c));
        }
        float tmax = NEG_INF;
#pragma unroll
        for (int j = 0; j < KPT; ++j) {
            const int p = k0 + slot + j * G;
            if (p >= k_end || p > my_lim) s[j] = NEG_INF;
            tmax = fmaxf(tmax, s[j]);
        }
        const float m_new = fmaxf(m, group_max(tmax));
        // A vector that has seen no key yet keeps m = -inf; exponentiate against 0 then
        // (every p is 0), never against -inf (which would give NaN).
        const float m_use = m_new == NEG_INF ? 0.f : m_new;
        const float alpha = exp2f(m - m_use);
        float psum = 0.f;
#pragma unroll
        for (int j = 0; j < KPT; ++j) {
            const float p = exp2f(s[j] - m_use);
            psum += p;
            ps[my_r * PS + slot + j * G] = p;
        }
        l = l * alpha + group_sum(psum);
        m = m_new;
        __syncwarp();  // the group's probabilities are visible to the group

#pragma unroll
        for (int c = 0; c < CPT; ++c) {
            acc[c].x *= alpha; acc[c].y *= alpha; acc[c].z *= alpha; acc[c].w *= alpha;
        }
#pragma unroll 4
        for (int j = 0; j < KT; ++j) {
            const float p = ps[my_r * PS + j];
#pragma unroll
            for (int c = 0; c < CPT; ++c) {
                const float4 vv = *(const float4*)(vs + j * HD + (c * G + slot) * 4);
                acc[c].x += p * vv.x; acc[c].y += p * vv.y; acc[c].z += p * vv.z; acc[c].w += p * vv.w;
            }
        }
    }

{%- if mode == "split" %}
    if (live == 1) {
        if (my_v < nv) {
            const int i = my_v / rep, h = g * rep + my_v % rep;
            const float inv = 1.f / l;  // l >= 1: key 0 is in this split
            float* dst = final_out + i * qd + (long long)h * HD;
#pragma unroll
            for (int c = 0; c < CPT; ++c) {
                float4 r = acc[c];
                r.x *= inv; r.y *= inv; r.z *= inv; r.w *= inv;
{%- if gated is defined and gated %}
                r = gate4(r, q + i * qd_in + (long long)h * QHS + HD + (c * G + slot) * 4);
{%- endif %}
                *(float4*)(dst + (c * G + slot) * 4) = r;
            }
        }
        return;
    }
{%- endif %}
    if (my_v < nv) {
        const int i = my_v / rep, h = g * rep + my_v % rep;
{%- if mode == "split" %}
        const long long pi = ((long long)i * n_heads + h) * max_splits + blockIdx.z;
        float* a = out + pi * HD;
#pragma unroll
        for (int c = 0; c < CPT; ++c) *(float4*)(a + (c * G + slot) * 4) = acc[c];
        if (slot == 0) {
            ml[2 * pi] = m;
            ml[2 * pi + 1] = l;
        }
{%- else %}
        const float inv = 1.f / l;  // l >= 1: key 0 is in every row's range
        float* o = out + i * qd + (long long)h * HD;
#pragma unroll
        for (int c = 0; c < CPT; ++c) {
            float4 r = acc[c];
            r.x *= inv; r.y *= inv; r.z *= inv; r.w *= inv;
            *(float4*)(o + (c * G + slot) * 4) = r;
        }
{%- endif %}
    }

{%- if mode == "split" %}
    // The combine, by the last split block of this (tile, KV head) to finish.
    __shared__ int is_last;
    __threadfence();  // this block's partials are visible device-wide before it counts
    __syncthreads();
    if (threadIdx.x == 0) {
        int* ctr = counters + blockIdx.y * gridDim.x + blockIdx.x;
        const int done = atomicAdd(ctr, 1);
        is_last = done == live - 1;
        if (is_last) *ctr = 0;
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    if (my_v < nv) {
        const int i = my_v / rep, h = g * rep + my_v % rep;
        const long long p0 = ((long long)i * n_heads + h) * max_splits;
        const int ns = live;
        // Other blocks wrote these: read through L2 (__ldcg), never a stale L1 line.
        float mx = NEG_INF;
        for (int s = 0; s < ns; ++s) mx = fmaxf(mx, __ldcg(ml + 2 * (p0 + s)));
        float lsum = 0.f;
        float4 o[CPT];
#pragma unroll
        for (int c = 0; c < CPT; ++c) o[c] = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int s = 0; s < ns; ++s) {
            const float ms = __ldcg(ml + 2 * (p0 + s));
            const float w = ms == NEG_INF ? 0.f : exp2f(ms - mx);
            lsum += w * __ldcg(ml + 2 * (p0 + s) + 1);
            const float* a = out + (p0 + s) * HD;
#pragma unroll
            for (int c = 0; c < CPT; ++c) {
                const float4 av = __ldcg((const float4*)(a + (c * G + slot) * 4));
                o[c].x += w * av.x; o[c].y += w * av.y; o[c].z += w * av.z; o[c].w += w * av.w;
            }
        }
        const float inv = 1.f / lsum;  // split 0 holds key 0: lsum >= its weight
        float* dst = final_out + i * qd + (long long)h * HD;
#pragma unroll
        for (int c = 0; c < CPT; ++c) {
            float4 r = o[c];
            r.x *= inv; r.y *= inv; r.z *= inv; r.w *= inv;
{%- if gated is defined and gated %}
            r = gate4(r, q + i * qd_in + (long long)h * QHS + HD + (c * G + slot) * 4);
{%- endif %}
            *(float4*)(dst + (c * G + slot) * 4) = r;
        }
    }
{%- endif %}
}
