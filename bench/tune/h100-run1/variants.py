"""bench/tune h100-run1, part 3 (here): from run 1's profile, the variants that locate the
SmolLM2 8-lane loss: full, no-t8 (without six of SmolLM2's linear_exact t8 keys: o_proj's
576x576 and the gate/up stack's 3072x576, which the 8-lane step runs, and four it does not
run at T = 8; the q/k/v stack's 960x576 stays), no-attn (without its attn_split keys),
neither; and, for part 5, one variant per key the step runs: no-o, no-gu, no-qkv, and
no-step (all three). Writes .gpu/h100p/<variant>.toml; then variants.sh on the device
(carry the build's .gpu folder and .gpu/h100p)."""
import os
import re

src = open("bench/tune/h100-run1/run1/run1.toml").read()
head, *blocks = src.split("[[route]]")


def keep(pred):
    key = lambda b: re.search(r'key = "([^"]+)"', b).group(1)
    return head + "".join("[[route]]" + b for b in blocks if pred(key(b)))


def smol_lin(k):
    return k.startswith("linear_exact/") and re.search(
        r"/t8/n(576|192|1536|3072|49152)/k(576|1536)$", k)


def smol_att(k):
    return k.startswith("attn_split/f32/h9/")


os.makedirs(".gpu/h100p", exist_ok=True)
variants = {
    "full": src,
    "no-t8": keep(lambda k: not smol_lin(k)),
    "no-attn": keep(lambda k: not smol_att(k)),
    "neither": keep(lambda k: not smol_lin(k) and not smol_att(k)),
}
# The t8 keys SmolLM2's 8-lane step runs, each taken out alone and all together (part 5).
step_keys = {
    "no-o": "linear_exact/q4_g64/t8/n576/k576",
    "no-gu": "linear_exact/q4_g64/t8/n3072/k576",
    "no-qkv": "linear_exact/q4_g64/t8/n960/k576",
}
for name, key in step_keys.items():
    variants[name] = keep(lambda k, key=key: k != key)
variants["no-step"] = keep(lambda k: k not in step_keys.values())
for name, text in variants.items():
    open(f".gpu/h100p/{name}.toml", "w").write(text)
    print(name, text.count("[[route]]"), "routes")
