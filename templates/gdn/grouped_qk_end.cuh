{#
  A fragment, the end of gdn/grouped_qk.cuh's q/k phase, included at the end of the
  grouped decode steps' bodies (gdn/grouped.cu, gdn/staged.cu): the q/k conv windows,
  written by the last block of the key head's group to count in (`prev`, `parts`,
  `last_flag`, `wfin`), which then resets the counter. Not in record mode.
#}
#if !defined(MODE_RECORD)
    // 3. The q/k windows: written by the last block of the key head's group to count in.
    if (tid == 0) last_flag = (prev == (unsigned int)(parts - 1));
    __syncthreads();
    if (last_flag) {
        for (int c = tid; c < 2 * dk; c += NT) {
            const int ch = c < dk ? kh * dk + c : kd + kh * dk + (c - dk);
#pragma unroll
            for (int m = 0; m < KC - 1; ++m) conv_state[(cs_base + ch) * (KC - 1) + m] = wfin[c][m];
        }
        if (tid == 0) counters[lane_id * hk + kh] = 0u;
    }
#endif
