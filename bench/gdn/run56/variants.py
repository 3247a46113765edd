#!/usr/bin/env python3
"""bench/gdn run 56 staging: three copies of templates/ under .gpu/r56/<variant>/templates,
each with linear/splitk_sum.cu's conv epilogue changed (the job runs them with
NINFER_TEMPLATES; the binary is run 55's, .gpu/r55):
  hoist    the thread's first output's conv weights and window loaded before the PDL wait
           (as gdn/conv_step.cu loads them), its (lane, channel) in 32 bits; the same
           arithmetic in the same order, so the same bits (qualify must pass);
  nostore  diagnostic: the window read but not moved on (qualify fails: the windows stay);
  nowin    diagnostic: neither read nor written (the conv of the input alone; qualify fails).
Run from the repository root: python3 bench/gdn/run56/variants.py
"""
import os
import shutil

SRC = "templates/linear/splitk_sum.cu"
CALL = "        out = gdn_conv_lane(out, i / N, (int)(i % N), conv_w, conv_state, conv_ch);\n"
WAIT = "    NINFER_PDL_WAIT();\n"

HOIST_PRE = """{%- if epilogue == "conv" %}
    // The first output's conv weights and window before the wait: the GEMV ahead writes
    // neither (this kernel alone moves the windows, once a step), as gdn/conv_step.cu.
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
"""
HOIST_CALL = """        if (i == i0) {
            if (c0 < conv_ch) out = gdn_conv_apply(w0, win0, out, cs0);
        } else {
            out = gdn_conv_lane(out, i / N, (int)(i % N), conv_w, conv_state, conv_ch);
        }
"""
NOSTORE_CALL = """        {
            const int c = (int)(i % N);
            if (c < conv_ch) {
                const float* cs = conv_state + ((i / N) * conv_ch + c) * (KC - 1);
                float win[KC - 1], scratch[KC - 1];
#pragma unroll
                for (int j = 0; j < KC - 1; ++j) win[j] = cs[j];
                out = gdn_conv_apply(conv_w + (long long)c * KC, win, out, scratch);
                if (out == 12345.0f) conv_state[0] = scratch[0];  // keeps the loads live
            }
        }
"""
NOWIN_CALL = """        {
            const int c = (int)(i % N);
            if (c < conv_ch) out = silu_f32(conv_w[(long long)c * KC + KC - 1] * out);
        }
"""


def make(name, pre, call):
    root = f".gpu/r56/{name}/templates"
    shutil.rmtree(f".gpu/r56/{name}", ignore_errors=True)
    shutil.copytree("templates", root)
    p = os.path.join(root, "linear/splitk_sum.cu")
    s = open(p).read()
    assert s.count(CALL) == 1 and s.count(WAIT) == 1
    s = s.replace(CALL, call)
    if pre:
        s = s.replace(WAIT, pre + WAIT)
    open(p, "w").write(s)
    print(name, p)


make("hoist", HOIST_PRE, HOIST_CALL)
make("nostore", None, NOSTORE_CALL)
make("nowin", None, NOWIN_CALL)
