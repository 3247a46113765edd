{#
  Row-structured f32 copies; blockIdx.y walks rows (grid-stride past 65535), blockIdx.x
  and the threads walk columns. Param: op, one of
    copy2d            dst[r*dst_ld + j] = src[r*src_ld + j]
    gather_rows       out[r*cols + j] = x[rows[r]*cols + j]
    scatter_add_rows  out[rows[r]*cols + j] += scale[r] * x[r*cols + j]
                      (the rows of one launch are distinct, so no two threads touch one
                      element; the update is the cpu backend's product-then-sum, unfused)
  Row indices are device i32. Every offset is 64-bit: tables can exceed 2^31 elements.
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}

extern "C" __global__ void __launch_bounds__(256)
{{ kernel_name }}(const float* src,
                  long long src_ld,
                  float* dst,
                  long long dst_ld,
                  const int* __restrict__ rows,
                  const float* __restrict__ scale,
                  int n_rows,
                  int cols)
{
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
    const int j = blockIdx.x * 256 + threadIdx.x;
    if (j >= cols) return;
    for (int r = blockIdx.y; r < n_rows; r += gridDim.y) {
{%- if op == "copy2d" %}
        dst[(long long)r * dst_ld + j] = src[(long long)r * src_ld + j];
{%- elif op == "gather_rows" %}
        dst[(long long)r * dst_ld + j] = src[(long long)rows[r] * src_ld + j];
{%- elif op == "scatter_add_rows" %}
        float* o = dst + (long long)rows[r] * dst_ld + j;
        *o = __fadd_rn(*o, __fmul_rn(scale[r], src[(long long)r * src_ld + j]));
{%- endif %}
    }
}
