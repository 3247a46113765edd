// The causal depthwise conv of one channel for one token, as gdn/prep.cu sums it (the
// window, then the input): silu(w[0..KC-1] . win + w[KC-1] x), and the channel's window
// moved on by x into cs (KC-1 floats; win holds its old values). The includer defines KC
// and has common/types.cuh (silu_f32). Shared by gdn/conv_step.cu and the GDN
// in-projection's conv epilogue (linear/mma_exact.cuh), so that both give the same bits.
#ifndef NINFER_GDN_CONV_WINDOW
#define NINFER_GDN_CONV_WINDOW
__device__ __forceinline__ float gdn_conv_apply(const float* w, const float* win, float x,
                                                float* cs) {
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < KC - 1; ++j) acc = fmaf(w[j], win[j], acc);
    acc = fmaf(w[KC - 1], x, acc);
#pragma unroll
    for (int j = 0; j + 1 < KC - 1; ++j) cs[j] = win[j + 1];
    if (KC > 1) cs[KC - 2] = x;
    return silu_f32(acc);
}
#endif
