#!/usr/bin/env python3
"""flash-linear-attention 0.6.0 as the peer of ninfer's GDN kernels (issue 5).

Times `fused_recurrent_gated_delta_rule` (decode, T=1, 1 and 8 lanes) and
`chunk_gated_delta_rule` (prefill, 512 and 4096 tokens, one sequence) at the Qwen3.6-27B
GDN shape (HK 16, HV 48, dk = dv = 128), both as called (CUDA events around each call) and
as replays of a captured CUDA graph (the figure to beat). Activations bf16 (fla's usual
use), state f32, q/k L2 norm in the kernel, g and beta given. State sets rotate so that
their total exceeds twice the L2, as in ninfer's bench.

Writes PeerTiming JSON lines {what, shape, peer, median_us} with the same `what`/`shape`
strings as ninfer's records: the graph figures to --out, the as-called ones to --out-called.
fla keeps an f32 state, so its figure stands beside both of ninfer's state types.

Run on the GPU machine with the wheels installed (scripts/gpu/gdn.sh does it).
"""
import argparse
import json
import math
import statistics

import torch
from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule

HK, HV, DK, DV = 16, 48, 128, 128
DIMS = f"HK={HK} HV={HV} dk={DK} dv={DV}"
DEV = "cuda"


def l2_bytes():
    return torch.cuda.get_device_properties(0).L2_cache_size


def median_as_called(fn, sets, iters=60, warm=5):
    for i in range(warm):
        fn(i % sets)
    torch.cuda.synchronize()
    ts = []
    for i in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn(i % sets)
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts)


def median_graph(fn, sets, iters=30):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(3):
            fn(i % sets)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(sets):
            fn(i)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / sets)
    return statistics.median(ts)


def inputs(b, t, gen):
    q = torch.randn(b, t, HK, DK, device=DEV, generator=gen).bfloat16()
    k = torch.randn(b, t, HK, DK, device=DEV, generator=gen).bfloat16()
    v = torch.randn(b, t, HV, DV, device=DEV, generator=gen).bfloat16()
    # log decays with a real layer's spread, beta in (0, 1)
    g = -(torch.rand(b, t, HV, device=DEV, generator=gen) * 0.5 + 0.01)
    beta = torch.rand(b, t, HV, device=DEV, generator=gen).sigmoid()
    return q, k, v, g.float(), beta.bfloat16()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--out-called", required=True)
    args = ap.parse_args()
    gen = torch.Generator(device=DEV)
    gen.manual_seed(0)
    graph_lines, called_lines, table = [], [], []
    peer = "fla 0.6.0"

    def emit(what, shapes, t_graph, t_called):
        for shape in shapes:
            graph_lines.append({"what": what, "shape": shape, "peer": f"{peer} (graph)", "median_us": t_graph})
            called_lines.append({"what": what, "shape": shape, "peer": f"{peer} (as called)", "median_us": t_called})
        table.append((what, shapes[0], t_called, t_graph))

    for lanes in (1, 8):
        state_bytes = lanes * HV * DK * DV * 4
        sets = max(2, min(64, math.ceil(2 * l2_bytes() / state_bytes)))
        q, k, v, g, beta = inputs(lanes, 1, gen)
        states = [torch.randn(lanes, HV, DK, DV, device=DEV, generator=gen) * 0.3 for _ in range(sets)]

        def step(i):
            return fused_recurrent_gated_delta_rule(
                q, k, v, g=g, beta=beta, initial_state=states[i], output_final_state=True,
                use_qk_l2norm_in_kernel=True)

        tc = median_as_called(step, sets)
        tg = median_graph(step, sets)
        emit("gdn decode", [f"lanes={lanes} {DIMS} state=f32", f"lanes={lanes} {DIMS} state=f16"], tg, tc)

    for t in (512, 4096):
        in_bytes = t * (2 * HK * DK + HV * DV) * 2
        sets = max(1, min(8, math.ceil(2 * l2_bytes() / in_bytes)))
        data = [inputs(1, t, gen) for _ in range(sets)]
        h0 = torch.randn(1, HV, DK, DV, device=DEV, generator=gen) * 0.3

        def prefill(i):
            q, k, v, g, beta = data[i]
            return chunk_gated_delta_rule(
                q, k, v, g=g, beta=beta, initial_state=h0, output_final_state=True,
                use_qk_l2norm_in_kernel=True)

        tc = median_as_called(prefill, sets, iters=30)
        tg = median_graph(prefill, sets, iters=20)
        emit("gdn prefill", [f"T={t} seqs=1 {DIMS} state=f32", f"T={t} seqs=1 {DIMS} state=f16"], tg, tc)

    with open(args.out, "w") as f:
        for line in graph_lines:
            f.write(json.dumps(line) + "\n")
    with open(args.out_called, "w") as f:
        for line in called_lines:
            f.write(json.dumps(line) + "\n")
    print(f"{'what':12} {'shape':45} {'as called us':>13} {'graph us':>10}")
    for what, shape, tc, tg in table:
        print(f"{what:12} {shape:45} {tc:13.1f} {tg:10.1f}")


if __name__ == "__main__":
    main()
