{#
  Pointwise ops over n elements, one element per thread of a grid-stride loop.
  Param: op, one of
    f32_to_bf16   y[i] = bf16(x[i])  round to nearest even; a NaN keeps its sign and top
                  payload bits with the quiet bit set (bit for bit half::bf16::from_f32)
    bf16_to_f32   y[i] = f32(x[i])   exact; NaNs quieted the same way (half's to_f32)
    add_assign    x[i] += y[i]
    swiglu        out[i] = silu(gate[i]) * up[i],  silu(v) = v / (1 + exp(-v))
    sigmoid_gate  out[i] = x[i] * sigmoid(gate[i]),  sigmoid(v) = 1 / (1 + exp(-v))
  Arithmetic mirrors the cpu backend's f32 expressions: expf (not __expf), and the
  products/sums written with explicit _rn intrinsics so that --fmad cannot fuse them.
  Operands may alias (add_assign reads and writes x), so nothing is __restrict__.
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}

extern "C" __global__ void __launch_bounds__(256)
{{ kernel_name }}(
{%- if op == "f32_to_bf16" %}
    const float* a, const float* unused, bf16_t* out,
{%- elif op == "bf16_to_f32" %}
    const bf16_t* a, const float* unused, float* out,
{%- else %}
    const float* a, const float* b, float* out,
{%- endif %}
    long long n)
{
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
    for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (long long)gridDim.x * 256) {
{%- if op == "f32_to_bf16" %}
        const float v = a[i];
        const u32 bits = __float_as_uint(v);
        out[i] = (bits & 0x7fffffffu) > 0x7f800000u ? (bf16_t)((bits >> 16) | 0x40u) : f32_to_bf16(v);
{%- elif op == "bf16_to_f32" %}
        u32 h = a[i];
        if ((h & 0x7fffu) > 0x7f80u) h |= 0x40u;
        out[i] = __uint_as_float(h << 16);
{%- elif op == "add_assign" %}
        out[i] = __fadd_rn(a[i], b[i]);
{%- elif op == "swiglu" %}
        const float g = a[i];
        const float silu = __fdiv_rn(g, __fadd_rn(1.0f, expf(-g)));
        out[i] = __fmul_rn(silu, b[i]);
{%- elif op == "sigmoid_gate" %}
        const float sig = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-b[i])));
        out[i] = __fmul_rn(a[i], sig);
{%- endif %}
    }
}
