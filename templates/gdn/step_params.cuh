{#
  A fragment: the parameter list of the decode step kernels (gdn/recurrent.cu,
  gdn/grouped.cu, gdn/staged.cu), which src/ops/gdn launches through one argument list.
  Included right after the kernel's name; no newline at the end of this file.
#}(const float* __restrict__ mixed,
                  const float* __restrict__ a_in,
                  const float* __restrict__ b_in,
                  const float* __restrict__ conv_w,
                  const float* __restrict__ a_log,
                  const float* __restrict__ dt_bias,
                  float* conv_state,
                  state_t* state,
                  float* __restrict__ out,
                  state_t* __restrict__ rec_state,
                  float* __restrict__ rec_conv,
                  const int* __restrict__ counts,
                  unsigned int* counters,
                  int T, int hk, int hv, int dk, int dv)