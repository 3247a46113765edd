{#
  A row-major f32 matrix's leading columns split into up to four dense matrices in one
  launch (a stacked projection's outputs apart: Qwen3.5's GDN in_proj into q/k/v, z, b
  and a; its attention qkv into query+gate, k and v): for r < n_rows, segment s of width
  w_s starting at column c_s = w_0 + ... + w_(s-1):
      d_s[r * w_s + j] = src[r * src_ld + c_s + j]      (j < w_s)
  Unused segments have width 0. grid.x walks the segments' columns (w_0 + ... + w_3 in
  all), grid.y the rows (grid-stride past 65535). One launch instead of one a segment: at
  the 27B's 8-lane decode these copies are a few hundred KB, so each costs its launch.
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}

extern "C" __global__ void __launch_bounds__(256)
{{ kernel_name }}(const float* src,
                  long long src_ld,
                  float* d0, float* d1, float* d2, float* d3,
                  int w0, int w1, int w2, int w3,
                  int n_rows)
{
    NINFER_PDL_WAIT();     // the predecessor's output is visible from here on
    NINFER_PDL_TRIGGER();
    const int j = blockIdx.x * 256 + threadIdx.x;
    if (j >= w0 + w1 + w2 + w3) return;
    // This column's segment and its column within it.
    float* d = d0;
    int w = w0, c = j;
    if (c >= w0) {
        c -= w0; d = d1; w = w1;
        if (c >= w1) {
            c -= w1; d = d2; w = w2;
            if (c >= w2) { c -= w2; d = d3; w = w3; }
        }
    }
    for (int r = blockIdx.y; r < n_rows; r += gridDim.y)
        d[(long long)r * w + c] = src[(long long)r * src_ld + j];
}
