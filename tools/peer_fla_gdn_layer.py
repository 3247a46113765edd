#!/usr/bin/env python3
"""flash-linear-attention 0.6.0 doing the work of ninfer's whole GDN routes (issue 5).

`tools/peer_fla_gdn.py` times `chunk_gated_delta_rule` and `fused_recurrent_gated_delta_rule`
on q, k, v already convolved and with g and beta already made: less work than ninfer's
prefill route and decode step, which also run the causal conv + SiLU over the mixed q/k/v
projection (with its conv state) and make the gates and beta from the raw projections.
This script times fla doing all of that, the way fla's own GatedDeltaNet layer does it
(fla/layers/gated_deltanet.py). Prefill, the fused q/k/v conv path:

  causal_conv1d(qkv, weight, activation='silu', output_final_state=True)   # Triton backend
  chunk_gated_delta_rule(q, k, v, g=a, beta=b, initial_state=h0, output_final_state=True,
                         use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                         use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias)

and, in the same process, `chunk_gated_delta_rule` alone as peer_fla_gdn.py calls it (the
figure the bench tables carry), so the two stand side by side from one run. One sequence of
512 and 4096 tokens.

Decode (one token a lane, 1 and 8 lanes), the layer's cached path (ShortConvolution.step for
each of q, k and v, then the recurrence with the gates in the kernel):

  causal_conv1d_update(x_q, cache_q, weight=w_q, activation='silu')   # and k, v
  fused_recurrent_gated_delta_rule(q, k, v, g=a, beta=b, initial_state=h, output_final_state=True,
                                   use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                                   use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias)

beside the recurrence alone on convolved inputs with g and beta given (peer_fla_gdn.py's
figure). Qwen3.6-27B GDN shape (HK 16, HV 48, dk = dv = 128, conv width 4), activations and
conv caches bf16 (fla's layer keeps them so), state f32; timed as called and as replays of
a captured CUDA graph (the figure to beat), over input or state sets that together exceed
twice the L2.

Writes JSON lines {what, shape, peer, median_us} to --out ("gdn prefill layer" / "gdn decode
layer" for the layer's work, "gdn prefill" / "gdn decode" for the chunk or the recurrence
alone) and prints a table.
Run on the GPU machine with the wheels on PYTHONPATH (scripts/gpu/gdn.sh installs them).
"""
import argparse
import json
import math

import torch
from fla.modules.causal_conv1d import causal_conv1d, causal_conv1d_update
from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule

from peer_fla_gdn import DIMS, DK, DV, HK, HV, l2_bytes, median_as_called, median_graph

DEV = "cuda"
CONV = 4   # Qwen3.5/3.6's linear_conv_kernel_dim


def layer_inputs(t, gen):
    """The GDN mixer's inputs as the in-projections leave them (bf16), one sequence."""
    qkv = torch.randn(1, t, 2 * HK * DK + HV * DV, device=DEV, generator=gen).bfloat16()
    a = torch.randn(1, t, HV, device=DEV, generator=gen).bfloat16()
    b = torch.randn(1, t, HV, device=DEV, generator=gen).bfloat16()
    return qkv, a, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    gen = torch.Generator(device=DEV)
    gen.manual_seed(0)
    dim = 2 * HK * DK + HV * DV
    conv_w = (torch.randn(dim, CONV, device=DEV, generator=gen) * 0.5).bfloat16()
    a_log = torch.log(torch.rand(HV, device=DEV, generator=gen) * 15 + 1)
    dt_bias = torch.randn(HV, device=DEV, generator=gen) * 0.5
    peer = "fla 0.6.0"
    lines, table = [], []
    for t in (512, 4096):
        in_bytes = t * dim * 2
        sets = max(1, min(8, math.ceil(2 * l2_bytes() / in_bytes)))
        data = [layer_inputs(t, gen) for _ in range(sets)]
        h0 = torch.randn(1, HV, DK, DV, device=DEV, generator=gen) * 0.3
        # The chunk alone, on inputs convolved once outside the timing (contiguous q, k, v,
        # g in log space and beta in (0, 1), as peer_fla_gdn.py passes them).
        alone = []
        for qkv, a, b in data:
            y, _ = causal_conv1d(x=qkv, weight=conv_w, activation="silu")
            q, k, v = torch.split(y, [HK * DK, HK * DK, HV * DV], dim=-1)
            g = -a_log.exp() * torch.nn.functional.softplus(a.float() + dt_bias)
            alone.append((q.reshape(1, t, HK, DK).contiguous(), k.reshape(1, t, HK, DK).contiguous(),
                          v.reshape(1, t, HV, DV).contiguous(), g, b.sigmoid()))

        def layer(i):
            qkv, a, b = data[i]
            y, conv_state = causal_conv1d(x=qkv, weight=conv_w, activation="silu", output_final_state=True)
            q, k, v = torch.split(y, [HK * DK, HK * DK, HV * DV], dim=-1)
            return chunk_gated_delta_rule(
                q.reshape(1, t, HK, DK), k.reshape(1, t, HK, DK), v.reshape(1, t, HV, DV),
                g=a, beta=b, initial_state=h0, output_final_state=True,
                use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                use_gate_in_kernel=True, A_log=a_log, dt_bias=dt_bias), conv_state

        def chunk(i):
            q, k, v, g, beta = alone[i]
            return chunk_gated_delta_rule(
                q, k, v, g=g, beta=beta, initial_state=h0, output_final_state=True,
                use_qk_l2norm_in_kernel=True)

        shape = f"T={t} seqs=1 {DIMS} state=f32"
        for what, fn in (("gdn prefill layer", layer), ("gdn prefill", chunk)):
            tc = median_as_called(fn, sets, iters=30)
            tg = median_graph(fn, sets, iters=20)
            lines.append({"what": what, "shape": shape, "peer": f"{peer} (graph)", "median_us": tg})
            lines.append({"what": what, "shape": shape, "peer": f"{peer} (as called)", "median_us": tc})
            table.append((what, shape, tc, tg))
    # Decode: the layer's cached path, one token a lane. The conv caches are [lanes, D, W]
    # (ShortConvolution's layout), updated in place; the states rotate over sets, as in
    # peer_fla_gdn.py, and so does each set's own conv caches.
    w_q, w_k, w_v = (w.contiguous() for w in torch.split(conv_w, [HK * DK, HK * DK, HV * DV]))
    for lanes in (1, 8):
        state_bytes = lanes * HV * DK * DV * 4
        sets = max(2, min(64, math.ceil(2 * l2_bytes() / state_bytes)))

        def rnd(*shape):
            return torch.randn(*shape, device=DEV, generator=gen).bfloat16()

        x_q, x_k, x_v = rnd(lanes, 1, HK * DK), rnd(lanes, 1, HK * DK), rnd(lanes, 1, HV * DV)
        a, b = rnd(lanes, 1, HV), rnd(lanes, 1, HV)
        states = [torch.randn(lanes, HV, DK, DV, device=DEV, generator=gen) * 0.3 for _ in range(sets)]
        caches = [(rnd(lanes, HK * DK, CONV), rnd(lanes, HK * DK, CONV), rnd(lanes, HV * DV, CONV))
                  for _ in range(sets)]
        # The recurrence alone (peer_fla_gdn.py's call), on this set's convolved inputs.
        q0 = torch.nn.functional.silu(x_q.float()).bfloat16().view(lanes, 1, HK, DK)
        k0 = torch.nn.functional.silu(x_k.float()).bfloat16().view(lanes, 1, HK, DK)
        v0 = torch.nn.functional.silu(x_v.float()).bfloat16().view(lanes, 1, HV, DV)
        g0 = (-a_log.exp() * torch.nn.functional.softplus(a.float() + dt_bias)).float()
        beta0 = b.sigmoid()

        def step_layer(i):
            cq, ck, cv = caches[i]
            q, _ = causal_conv1d_update(x_q, cq, weight=w_q, activation="silu")
            k, _ = causal_conv1d_update(x_k, ck, weight=w_k, activation="silu")
            v, _ = causal_conv1d_update(x_v, cv, weight=w_v, activation="silu")
            return fused_recurrent_gated_delta_rule(
                q.view(lanes, 1, HK, DK), k.view(lanes, 1, HK, DK), v.view(lanes, 1, HV, DV),
                g=a, beta=b, initial_state=states[i], output_final_state=True,
                use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                use_gate_in_kernel=True, A_log=a_log, dt_bias=dt_bias)

        def step_alone(i):
            return fused_recurrent_gated_delta_rule(
                q0, k0, v0, g=g0, beta=beta0, initial_state=states[i], output_final_state=True,
                use_qk_l2norm_in_kernel=True)

        shape = f"lanes={lanes} {DIMS} state=f32"
        for what, fn in (("gdn decode layer", step_layer), ("gdn decode", step_alone)):
            tc = median_as_called(fn, sets)
            tg = median_graph(fn, sets)
            lines.append({"what": what, "shape": shape, "peer": f"{peer} (graph)", "median_us": tg})
            lines.append({"what": what, "shape": shape, "peer": f"{peer} (as called)", "median_us": tc})
            table.append((what, shape, tc, tg))
    with open(args.out, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    print(f"{'what':18} {'shape':45} {'as called us':>13} {'graph us':>10}")
    for what, shape, tc, tg in table:
        print(f"{what:18} {shape:45} {tc:13.1f} {tg:10.1f}")


if __name__ == "__main__":
    main()
