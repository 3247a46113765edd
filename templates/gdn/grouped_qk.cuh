{#
  A fragment, not a header: the q/k phase of the grouped decode steps (gdn/grouped.cu,
  gdn/staged.cu), included inside their bodies after the PDL wait, where every name it
  uses is in scope: tid, warp, lane, NT, WARPS, dk, kd, kh, r, hv, ntok, tok_base,
  conv_dim, cs_base, part, lane_id, hk, the first channel's cw0 and win0, the inputs and
  weights, and the shared ybuf, wfin, geg, gbeta and kqs. It ends with a barrier; in
  record mode it also writes the q/k conv windows, otherwise it counts the block in on
  the key head's counter (`prev`, read at the block's end by gdn/grouped_qk_end.cuh).
#}
    // 1. q/k conv of key head kh for every token: raw inputs into ybuf first (independent
    // loads), then the conv in place; the final windows go to wfin.
    for (int c = tid; c < 2 * dk; c += NT) {
        const int ch = c < dk ? kh * dk + c : kd + kh * dk + (c - dk);
        const int col = c < dk ? c : DKMAX + (c - dk);
        float cw[KC], win[KC > 1 ? KC - 1 : 1];
#pragma unroll
        for (int m = 0; m < KC; ++m) cw[m] = c == tid ? cw0[m] : conv_w[(long long)ch * KC + m];
#pragma unroll
        for (int m = 0; m < KC - 1; ++m)
            win[m] = c == tid ? win0[m] : conv_state[(cs_base + ch) * (KC - 1) + m];
#pragma unroll 4
        for (int t = 0; t < ntok; ++t) ybuf[t * 2 * DKMAX + col] = mixed[(tok_base + t) * conv_dim + ch];
        for (int t = 0; t < ntok; ++t) {
            const float x = ybuf[t * 2 * DKMAX + col];
            float acc = 0.0f;
#pragma unroll
            for (int m = 0; m < KC - 1; ++m) acc = fmaf(cw[m], win[m], acc);
            acc = fmaf(cw[KC - 1], x, acc);
#pragma unroll
            for (int m = 0; m + 1 < KC - 1; ++m) win[m] = win[m + 1];
            if (KC > 1) win[KC - 2] = x;
            ybuf[t * 2 * DKMAX + col] = silu_f32(acc);
#if defined(MODE_RECORD)
            if (part == 0) {
#pragma unroll
                for (int m = 0; m < KC - 1; ++m)
                    rec_conv[((tok_base + t) * conv_dim + ch) * (KC - 1) + m] = win[m];
            }
#endif
        }
#pragma unroll
        for (int m = 0; m < KC - 1; ++m) wfin[c][m] = win[m];
    }
    // Gates of the r value heads of this key head, every token.
    for (int e = tid; e < ntok * r; e += NT) {
        const int t = e / r, hr = e % r, h = kh * r + hr;
        const long long g = (tok_base + t) * hv + h;
        geg[e] = expf(-expf(a_log[h]) * gdn_softplus(a_in[g] + dt_bias[h]));
        gbeta[e] = 1.0f / (1.0f + expf(-b_in[g]));
    }
    __syncthreads();
#if !defined(MODE_RECORD)
    // Every read of the q/k conv state is done: count in now, look at the result at the end.
    unsigned int prev = 0u;
    if (tid == 0) prev = atomicAdd(&counters[lane_id * hk + kh], 1u);
#endif
    // q/k L2 norms, one warp per token.
    {
        const float scale = rsqrtf((float)dk);
        for (int t = warp; t < ntok; t += WARPS) {
            float* yq = ybuf + t * 2 * DKMAX;
            float* yk = yq + DKMAX;
            float sq = 0.0f, sk = 0.0f;
            for (int c = lane; c < dk; c += 32) {
                sq = fmaf(yq[c], yq[c], sq);
                sk = fmaf(yk[c], yk[c], sk);
            }
            sq = warp_sum(sq);
            sk = warp_sum(sk);
            const float inv_q = scale / sqrtf(sq + 1e-6f);
            const float inv_k = 1.0f / sqrtf(sk + 1e-6f);
            float kq = 0.0f;
            for (int c = lane; c < dk; c += 32) {
                const float qn = yq[c] * inv_q, kn = yk[c] * inv_k;
                yq[c] = qn;
                yk[c] = kn;
                kq = fmaf(qn, kn, kq);
            }
            kq = warp_sum(kq);
            if (lane == 0) kqs[t] = kq;
        }
    }
    __syncthreads();
