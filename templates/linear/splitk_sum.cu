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

  Programmatic dependent launch: waits before the first read of `part` and the residual
  (the GEMV before it wrote them), then lets the next kernel launch. The conv form loads its
  first output's conv weights and window before the wait (see there).

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
{%- if epilogue == "conv" %}
    // The first output's conv weights and window, loaded before the wait as gdn/conv_step.cu
    // loads them: the GEMV ahead writes neither (this kernel alone moves the windows, once a
    // step, so their last writer is two launches back or more). Loaded after the sums, with
    // the window stored back straight after, they made this kernel 16.7 us instead of 6.4
    // (bench/gdn run 56, H100, 131,840 outputs); later outputs of a thread take the plain path.
    const long long i0 = (long long)blockIdx.x * 256 + threadIdx.x;
    const int lane0 = i0 < n ? (int)(i0 / N) : 0;
    const int c0 = i0 < n ? (int)(i0 - (long long)lane0 * N) : conv_ch;
    float w0[KC], win0[KC > 1 ? KC - 1 : 1];
    float* cs0 = conv_state + ((long long)lane0 * conv_ch + c0) * (KC - 1);
    if (c0 < conv_ch) {
#pragma unroll
        for (int j = 0; j < KC; ++j) w0[j] = conv_w[(long long)c0 * KC + j];
#pragma unroll
        for (int j = 0; j < KC - 1; ++j) win0[j] = cs0[j];
    }
{%- endif %}
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
        if (i == i0) {
            if (c0 < conv_ch) out = gdn_conv_apply(w0, win0, out, cs0);
        } else {
            out = gdn_conv_lane(out, i / N, (int)(i % N), conv_w, conv_state, conv_ch);
        }
{%- endif %}
        y[i] = out;
    }
}
