{#
  GDN decode step, the first half of the split step with the gates in the update
  (`Tile::gin`): the causal depthwise conv + SiLU of one token a sequence, nothing else.
  gdn/update.cu with `gin` then takes the q/k norms and the gates itself, as
  flash-linear-attention's decode layer does after its causal_conv1d_update. One thread a
  channel, no block barrier: the short launch that gdn/prep.cu's block sums made longer.
  The conv sums in gdn/prep.cu's order (window, then the input), so the two agree bit for
  bit on y.

  Inputs: row `seq` of mixed at mixed + seq * in_ld (conv_dim channels); conv weights
  [conv_dim][KC]; conv state [seqs][conv_dim][KC-1], advanced to the last KC-1 inputs.
  Output: y [seqs][y_ld] (conv_dim used), f32.
  Grid (ceil(conv_dim / block), seqs).

  Programmatic dependent launch (common/pdl.cuh): before NINFER_PDL_WAIT() a thread loads
  only its channel's weights and conv-state window, which the kernel ahead of it does not
  write (this kernel alone writes the conv state, and never twice in a row: the update runs
  between); the input after it.
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}
#define KC {{ kc }}
#define NTH {{ block }}
#define HIST (KC > 1 ? KC - 1 : 1)
{% include "gdn/conv_window.cuh" %}

extern "C" __global__ void __launch_bounds__(NTH)
{{ kernel_name }}(const float* __restrict__ mixed,
                  const float* __restrict__ conv_w,
                  float* __restrict__ conv_state,
                  float* __restrict__ y,
                  int conv_dim, long long in_ld, long long y_ld)
{
    const int seq = blockIdx.y;
    const int c = blockIdx.x * NTH + threadIdx.x;
    const bool on = c < conv_dim;
    float* cs = conv_state + ((long long)seq * conv_dim + c) * (KC - 1);
    float w[KC], win[HIST];
#pragma unroll
    for (int j = 0; j < KC; ++j) w[j] = on ? conv_w[(long long)c * KC + j] : 0.0f;
#pragma unroll
    for (int j = 0; j < KC - 1; ++j) win[j] = on ? cs[j] : 0.0f;
    NINFER_PDL_WAIT();     // the input (the kernel ahead's output) is visible from here on
    NINFER_PDL_TRIGGER();
    if (!on) return;
    const float x = mixed[(long long)seq * in_ld + c];
    y[(long long)seq * y_ld + c] = gdn_conv_apply(w, win, x, cs);
}
