{#
  The second half of a split-K launch of linear/gemv_mma.cu (and gemv_mma_ring.cu) where
  the host passes no counters (NINFER_SPLITK_FUSED=0, an A/B switch; by default the
  GEMV's own last block of each m-range adds, mma_exact.cuh's splitk_finish, with this
  kernel's arithmetic): y[i] = the K-ranges' sums
  part[0][i] + part[1][i] + ... in K-range order (+ residual[i]), i < n = T * N. The
  order is fixed, so the result does not depend on which block finished first. With
  `rms` (the GEMV's RMSNorm prologue staged x * w), the sum is first multiplied by its
  column's 1 / rms = rsqrt(sum of squares / K + eps), the sums of squares being the
  K-ranges' ([kr][T] after the partial outputs), added in the same order.

  Programmatic dependent launch: waits before the first read (the GEMV before it wrote
  `part`), then lets the next kernel launch.

  The conv epilogue (epilogue "conv", kc: a GDN in-projection at its lanes, column tk being
  lane tk's one token): outputs c < conv_ch of column tk become silu(conv(window, sum)) and
  lane tk's conv window [lanes][conv_ch][kc - 1] moves on by the sum (gdn/conv_window.cuh,
  the GEMV's own conv epilogue's arithmetic), so that the in-projection keeps its K-ranges
  (the GEMV applies the conv itself only with one K-range or its last blocks adding).

  Params: epilogue ("none" | "residual" | "conv"), rms (bool), kc (conv only). Arguments:
  part ([kr][n] f32, then [kr][T] with rms), residual, y, n, kr, N (outputs per column), K,
  eps; conv: conv_w ([conv_ch][kc]), conv_state, conv_ch.
#}
{% include "common/types.cuh" %}
{% include "common/pdl.cuh" %}
{%- if epilogue == "conv" %}
#define KC {{ kc }}
{% include "gdn/conv_window.cuh" %}
{%- endif %}

extern "C" __global__ void __launch_bounds__(256)
{{ kernel_name }}(const float* __restrict__ part, const float* residual, float* y,
                  long long n, int kr, int N, int K, float eps{% if epilogue == "conv" %},
                  const float* __restrict__ conv_w, float* __restrict__ conv_state, int conv_ch{% endif %})
{
    NINFER_PDL_WAIT();
    NINFER_PDL_TRIGGER();
    for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (long long)gridDim.x * 256) {
        float out = __ldcg(part + i);  // written by other blocks of the GEMV: through L2
        for (int r = 1; r < kr; ++r) out += __ldcg(part + (long long)r * n + i);
{%- if rms %}
        const long long T = n / N;
        const long long tk = i / N;
        const float* ss = part + (long long)kr * n;
        float sq = __ldcg(ss + tk);
        for (int r = 1; r < kr; ++r) sq += __ldcg(ss + r * T + tk);
        out *= rsqrtf(sq / (float)K + eps);
{%- endif %}
{%- if epilogue == "residual" %}
        out += residual[i];
{%- elif epilogue == "conv" %}
        out = gdn_conv_lane(out, i / N, (int)(i % N), conv_w, conv_state, conv_ch);
{%- endif %}
        y[i] = out;
    }
}
