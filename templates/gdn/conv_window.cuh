// The causal depthwise conv of one channel for one token, as gdn/prep.cu sums it (the
// window, then the input): silu(w[0..KC-1] . win + w[KC-1] x) (gdn_conv_value), and the
// channel's window moved on by x into cs (KC-1 floats; win holds its old values:
// gdn_conv_move); gdn_conv_apply does both. The includer defines KC and has
// common/types.cuh (silu_f32). Shared by gdn/conv_step.cu and the GDN in-projection's conv
// epilogues (linear/mma_exact.cuh, linear/splitk_sum.cu), so that all give the same bits.
#ifndef NINFER_GDN_CONV_WINDOW
#define NINFER_GDN_CONV_WINDOW
__device__ __forceinline__ float gdn_conv_value(const float* w, const float* win, float x) {
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < KC - 1; ++j) acc = fmaf(w[j], win[j], acc);
    acc = fmaf(w[KC - 1], x, acc);
    return silu_f32(acc);
}

__device__ __forceinline__ void gdn_conv_move(const float* win, float x, float* cs) {
#pragma unroll
    for (int j = 0; j + 1 < KC - 1; ++j) cs[j] = win[j + 1];
    if (KC > 1) cs[KC - 2] = x;
}

__device__ __forceinline__ float gdn_conv_apply(const float* w, const float* win, float x,
                                                float* cs) {
    gdn_conv_move(win, x, cs);
    return gdn_conv_value(w, win, x);
}

// Output x of channel c of lane `lane` through gdn_conv_apply where c < conv_ch (the conv's
// channels; the others pass through), the lane's window read from and moved on in place
// (conv_state [lanes][conv_ch][KC-1]): one thread an output. The split-K sum's and the
// GEMV's conv epilogues (linear/splitk_sum.cu, linear/mma_exact.cuh).
__device__ __forceinline__ float gdn_conv_lane(float x, long long lane, int c,
                                               const float* __restrict__ conv_w,
                                               float* __restrict__ conv_state, int conv_ch) {
    if (c >= conv_ch) return x;
    float* cs = conv_state + (lane * conv_ch + c) * (KC - 1);
    float win[KC > 1 ? KC - 1 : 1];
#pragma unroll
    for (int j = 0; j < KC - 1; ++j) win[j] = cs[j];
    return gdn_conv_apply(conv_w + (long long)c * KC, win, x, cs);
}
#endif
