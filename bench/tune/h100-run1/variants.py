"""bench/tune h100-run1, part 3 (here): from run 1's profile, the variants that locate the
SmolLM2 8-lane loss: full, no-t8 (without SmolLM2's linear_exact t8 keys), no-attn (without
its attn_split keys), neither. Writes .gpu/h100p/<variant>.toml; then variants.sh on the
device (carry .gpu/r54 and .gpu/h100p)."""
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
for name, text in variants.items():
    open(f".gpu/h100p/{name}.toml", "w").write(text)
    print(name, text.count("[[route]]"), "routes")
