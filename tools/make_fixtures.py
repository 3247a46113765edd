#!/usr/bin/env python3
"""Reference fixtures for the architecture tests (tests/arch_*.rs).

Runs HF transformers in float32 on the CPU (no GPU needed):

  smollm2  transformers loads the default model's GGUF (through the `gguf` package, which
           dequantizes the same Q8_0/Q4_1 numbers ninfer decodes) and scores a wikitext
           passage; writes tests/fixtures/smollm2/{meta.json,logits.bin}.
  tiny     random-weight llama-family models (llama; qwen3 dense with q/k norm, biases,
           tied head), as safetensors + config.json + a small byte-level BPE tokenizer
           trained here, with prefill logits (logits.bin, [T, vocab] f32 LE) and 32-token
           greedy continuations (reference.json); writes tests/fixtures/tiny/<name>/.
  qwen35   Qwen3.5 dense, HV/HK 2 and 3 (qwen35_r2, qwen35_r3), then random MTP weights on
           qwen35_r2 with an MTP reference (mtp_logits.bin).
  qwen35moe  Qwen3.5 MoE (8 experts, top 2, shared expert), expert weights rewritten in
           the fused layout of the published checkpoints.
  qwen3next  Qwen3-Next (grouped in_proj_qkvz / in_proj_ba), HV/HK 3.

Usage: python tools/make_fixtures.py [smollm2|tiny|qwen35|qwen35moe|qwen3next|all]
       [--gguf PATH] [--passage-bytes N]
Needs: pip install torch transformers gguf safetensors tokenizers
"""

import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIKI = os.path.join(ROOT, "..", "shared", "data", "wikitext-2-raw", "wiki.test.raw")
GREEDY_TOKENS = 32


def write_f32(path, arr):
    arr = np.ascontiguousarray(np.asarray(arr, dtype="<f4"))
    with open(path, "wb") as f:
        f.write(arr.tobytes())


@torch.no_grad()
def greedy(model, ids, n):
    """n greedy tokens after ids, with a KV cache, never stopping early (no EOS check)."""
    out = model(torch.tensor([ids]), use_cache=True)
    past = out.past_key_values
    nxt = int(out.logits[0, -1].argmax())
    toks = [nxt]
    for _ in range(n - 1):
        out = model(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = int(out.logits[0, -1].argmax())
        toks.append(nxt)
    return toks


def passage_bytes(n_bytes):
    with open(WIKI, "rb") as f:
        return f.read(n_bytes)


@torch.no_grad()
def smollm2(gguf_path, n_bytes):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    d, name = os.path.split(os.path.abspath(gguf_path))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32)
    model.eval()
    text = passage_bytes(n_bytes).decode("utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    logits = model(torch.tensor([ids])).logits[0].float().numpy()
    t = len(ids)
    rows = sorted({0, 1, t // 4, t // 2, t - 2, t - 1})
    cont = greedy(model, ids, GREEDY_TOKENS)
    out = os.path.join(ROOT, "tests", "fixtures", "smollm2")
    os.makedirs(out, exist_ok=True)
    write_f32(os.path.join(out, "logits.bin"), logits[rows])
    top2 = np.sort(logits, axis=1)[:, -2:]
    meta = {
        "source": "transformers %s, float32, GGUF %s" % (__import__("transformers").__version__, name),
        "passage": "the first %d bytes of ../shared/data/wikitext-2-raw/wiki.test.raw" % n_bytes,
        "passage_bytes": n_bytes,
        "ids": ids,
        "vocab": int(logits.shape[1]),
        "rows": rows,
        "argmax": [int(a) for a in logits.argmax(axis=1)],
        "top2_gap": [float(g) for g in (top2[:, 1] - top2[:, 0])],
        "greedy": cont,
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print("smollm2: %d tokens, greedy %s" % (t, tok.decode(cont)))


def train_tokenizer(path, vocab_size=384):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    with open(WIKI, encoding="utf-8") as f:
        text = f.read(400_000)
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    t.train_from_iterator(text.splitlines(), trainer)
    t.save(path)
    return t


@torch.no_grad()
def tiny_llama(name, cfg_over, seed, family="llama", embed_scale=8.0):
    import transformers

    out = os.path.join(ROOT, "tests", "fixtures", "tiny", name)
    os.makedirs(out, exist_ok=True)
    tk = train_tokenizer(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
                   "bos_token": None, "model_max_length": 2048}, f, indent=1)
    cfg = dict(
        vocab_size=tk.get_vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=512,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=0,
    )
    cfg.update(cfg_over)
    torch.manual_seed(seed)
    if family == "qwen3":
        conf, cls = transformers.Qwen3Config, transformers.Qwen3ForCausalLM
    else:
        conf, cls = transformers.LlamaConfig, transformers.LlamaForCausalLM
    model = cls(conf(**cfg)).float().eval()
    # Random weights with enough spread that logits are far from uniform; norms not 1.
    for n, p in model.named_parameters():
        if p.dim() == 1:
            p.copy_(1.0 + 0.2 * torch.randn_like(p))
        else:
            p.copy_(torch.randn_like(p) * (0.6 / p.shape[-1] ** 0.5) * (embed_scale if "embed" in n else 1))
    model.save_pretrained(out, safe_serialization=True)
    text = passage_bytes(400).decode("utf-8")
    ids = tk.encode(text).ids[:48]
    logits = model(torch.tensor([ids])).logits[0].float().numpy()
    cont = greedy(model, ids, GREEDY_TOKENS)
    write_f32(os.path.join(out, "logits.bin"), logits)
    top2 = np.sort(logits, axis=1)[:, -2:]
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump({"source": "transformers %s float32, seed %d" % (__import__("transformers").__version__, seed),
                   "ids": ids, "vocab": int(logits.shape[1]), "greedy": cont,
                   "top2_gap": [float(g) for g in (top2[:, 1] - top2[:, 0])]}, f, indent=1)
    print("%s: %d prompt tokens, greedy %s" % (name, len(ids), cont))


@torch.no_grad()
def tiny_qwen35(name, cfg_over, seed, moe=False, next_=False):
    """A Qwen3.5 text model (GDN + gated attention; dense or MoE), flat *_text config."""
    import transformers

    out = os.path.join(ROOT, "tests", "fixtures", "tiny", name)
    os.makedirs(out, exist_ok=True)
    tk = train_tokenizer(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
                   "bos_token": None, "model_max_length": 2048}, f, indent=1)
    cfg = dict(
        vocab_size=tk.get_vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        linear_conv_kernel_dim=4,
        linear_key_head_dim=32,
        linear_value_head_dim=32,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        max_position_embeddings=512,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6,
                         "partial_rotary_factor": 0.5, "mrope_section": [4, 2, 2]},
        tie_word_embeddings=False,
        eos_token_id=0,
    )
    if moe or next_:
        if not next_:
            del cfg["intermediate_size"]
        cfg.update(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=48,
                   shared_expert_intermediate_size=64)
    cfg.update(cfg_over)
    torch.manual_seed(seed)
    if next_:
        conf, cls = transformers.Qwen3NextConfig, transformers.Qwen3NextForCausalLM
    elif moe:
        conf, cls = transformers.Qwen3_5MoeTextConfig, transformers.Qwen3_5MoeForCausalLM
    else:
        conf, cls = transformers.Qwen3_5TextConfig, transformers.Qwen3_5ForCausalLM
    model = cls(conf(**cfg)).float().eval()
    for n, p in model.named_parameters():
        if n.endswith("A_log") or n.endswith("dt_bias"):
            p.copy_(0.5 * torch.randn_like(p))
        elif n.endswith("linear_attn.norm.weight"):
            p.copy_(1.0 + 0.2 * torch.randn_like(p))
        elif p.dim() == 1:  # zero-centred norms: stored near 0
            p.copy_(0.2 * torch.randn_like(p))
        else:
            p.copy_(torch.randn_like(p) * (0.6 / p.shape[-1] ** 0.5) * (4 if "embed" in n else 1))
    model.save_pretrained(out, safe_serialization=True)
    if moe:
        fuse_experts(os.path.join(out, "model.safetensors"), cfg["num_experts"])
    text = passage_bytes(400).decode("utf-8")
    ids = tk.encode(text).ids[:48]
    logits = model(torch.tensor([ids])).logits[0].float().numpy()
    cont = greedy(model, ids, GREEDY_TOKENS)
    write_f32(os.path.join(out, "logits.bin"), logits)
    top2 = np.sort(logits, axis=1)[:, -2:]
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump({"source": "transformers %s float32, seed %d" % (transformers.__version__, seed),
                   "ids": ids, "vocab": int(logits.shape[1]), "greedy": cont,
                   "top2_gap": [float(g) for g in (top2[:, 1] - top2[:, 0])]}, f, indent=1)
    print("%s: %d prompt tokens, greedy %s" % (name, len(ids), cont))


def fuse_experts(path, n_experts):
    """Rewrites per-expert tensors (as save_pretrained writes them) in the fused layout of
    the published Qwen3.5-MoE checkpoints: experts.gate_up_proj [E, 2I, H] (gate rows
    first) and experts.down_proj [E, H, I]."""
    from safetensors.torch import load_file, save_file

    t = load_file(path)
    layers = sorted({k.split(".mlp.experts.")[0] for k in t if ".mlp.experts." in k})
    for p in layers:
        e = "%s.mlp.experts." % p
        gu = torch.stack([torch.cat([t.pop("%s%d.gate_proj.weight" % (e, i)),
                                     t.pop("%s%d.up_proj.weight" % (e, i))]) for i in range(n_experts)])
        dn = torch.stack([t.pop("%s%d.down_proj.weight" % (e, i)) for i in range(n_experts)])
        t[e + "gate_up_proj"] = gu.contiguous()
        t[e + "down_proj"] = dn.contiguous()
    save_file(t, path, metadata={"format": "pt"})


@torch.no_grad()
def add_mtp(name, seed):
    """Adds random MTP weights (mtp.*, one full-attention block) to a dense qwen35 fixture
    and a reference MTP forward composed from transformers' own modules per MODEL_SPEC
    section 7: x_t = fc(cat(norm_e(embed(tok_{t+1})), norm_h(h_t))), h_t the main model's
    post-final-norm hidden state; one decoder block (causal, RoPE position t); mtp.norm;
    the shared head. Writes mtp_logits.bin [T, vocab] for the prompt (tok_{T} = the first
    greedy token)."""
    import transformers
    from safetensors.torch import load_file, save_file

    out = os.path.join(ROOT, "tests", "fixtures", "tiny", name)
    with open(os.path.join(out, "config.json")) as f:
        cj = json.load(f)
    cfg = transformers.Qwen3_5TextConfig.from_pretrained(out)
    model = transformers.Qwen3_5ForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    attn_idx = cfg.layer_types.index("full_attention")
    torch.manual_seed(seed)
    h = cfg.hidden_size
    block = transformers.models.qwen3_5.modeling_qwen3_5.Qwen3_5DecoderLayer(cfg, attn_idx).float().eval()
    Norm = transformers.models.qwen3_5.modeling_qwen3_5.Qwen3_5RMSNorm
    norm_e, norm_h, norm_f = (Norm(h, eps=cfg.rms_norm_eps) for _ in range(3))
    fc = torch.nn.Linear(2 * h, h, bias=False)
    mods = {"mtp.layers.0.": block, "mtp.pre_fc_norm_embedding.": norm_e,
            "mtp.pre_fc_norm_hidden.": norm_h, "mtp.norm.": norm_f, "mtp.fc.": fc}
    tensors = load_file(os.path.join(out, "model.safetensors"))
    for prefix, m in mods.items():
        for n, p in m.named_parameters():
            if p.dim() == 1:
                p.copy_(0.2 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * (0.6 / p.shape[-1] ** 0.5))
            tensors[prefix + n] = p.detach().clone().contiguous()
    save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    cj["mtp_num_hidden_layers"] = 1
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cj, f, indent=2)
    with open(os.path.join(out, "reference.json")) as f:
        ref = json.load(f)
    ids = ref["ids"]
    hidden = {}
    hook = model.model.norm.register_forward_hook(lambda m, i, o: hidden.__setitem__("h", o))
    model(torch.tensor([ids]))
    hook.remove()
    hs = hidden["h"]  # [1, T, H], post-final-norm
    nxt = torch.tensor([ids[1:] + [ref["greedy"][0]]])
    e = model.model.embed_tokens(nxt)
    x = fc(torch.cat([norm_e(e), norm_h(hs)], dim=-1))
    t = len(ids)
    pos = torch.arange(t)[None]
    pe = model.model.rotary_emb(x, pos)
    mask = torch.full((t, t), float("-inf")).triu(1)[None, None]
    x = block(x, position_embeddings=pe, attention_mask=mask, position_ids=pos)
    logits = model.lm_head(norm_f(x))[0].float().numpy()
    write_f32(os.path.join(out, "mtp_logits.bin"), logits)
    print("%s: MTP reference for %d positions" % (name, t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="?", default="all", choices=["smollm2", "tiny", "qwen35", "qwen35moe", "qwen3next", "all"])
    ap.add_argument("--gguf", default=os.path.expanduser("~/.cache/ninfer/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--passage-bytes", type=int, default=256)
    a = ap.parse_args()
    torch.set_num_threads(max(1, (os.cpu_count() or 2)))
    if a.what in ("smollm2", "all"):
        smollm2(a.gguf, a.passage_bytes)
    if a.what in ("qwen35", "all"):
        # HV/HK = 2, layers GDN, attention, GDN, attention.
        tiny_qwen35("qwen35_r2", {"layer_types": ["linear_attention", "full_attention",
                                                  "linear_attention", "full_attention"]}, seed=3)
        # HV/HK = 3, default schedule (GDN x3, attention), dv != dk.
        tiny_qwen35("qwen35_r3", {"linear_num_key_heads": 2, "linear_num_value_heads": 6,
                                  "linear_value_head_dim": 24}, seed=4)
    if a.what in ("qwen35moe", "all"):
        # 8 experts, top 2, shared expert; HV/HK = 2.
        tiny_qwen35("qwen35_moe", {"layer_types": ["linear_attention", "full_attention",
                                                   "linear_attention", "full_attention"]},
                    seed=5, moe=True)
    if a.what in ("qwen3next", "all"):
        # Fused, per-key-head-grouped GDN projections; HV/HK = 3; layer 0 dense
        # (mlp_only_layers), the rest MoE without top-k renormalisation.
        tiny_qwen35("qwen3_next", {"linear_num_key_heads": 2, "linear_num_value_heads": 6,
                                   "linear_value_head_dim": 24, "mlp_only_layers": [0],
                                   "norm_topk_prob": False},
                    seed=6, next_=True)
    if a.what in ("qwen35", "all"):
        add_mtp("qwen35_r2", seed=7)
    if a.what in ("tiny", "all"):
        tiny_llama("llama", {}, seed=1)
        # Qwen3 dense: q/k norms, biases, tied head, a non-default theta.
        tiny_llama("qwen3", {"attention_bias": True, "tie_word_embeddings": True,
                             "rope_theta": 1e6, "head_dim": 48},
                   seed=2, family="qwen3", embed_scale=1.0)


if __name__ == "__main__":
    sys.exit(main())
