#!/usr/bin/env python3
"""Reference renderings of chat templates, made with transformers' `apply_chat_template`.

Writes tests/fixtures/chat_template/cases.json, which tests/model_chat_template.rs compares
ninfer's minijinja renderer against. Each case names a template:

- "smollm2": the `tokenizer.chat_template` of the default model's GGUF (the test reads it from
  the GGUF through ninfer's loader; this script reads it with the `gguf` package);
- "features": tests/fixtures/chat_template/features.jinja, a template written for this test
  that uses what HF templates lean on: trim_blocks/lstrip_blocks whitespace, namespace(),
  loop controls, Python string methods, `tojson` with options, `raise_exception`, tools.

The tokenizer object is transformers' `PreTrainedTokenizerFast` over the backend that its GGUF
tokenizer builder makes (see make_tokenizer_refs.py for why AutoTokenizer is not called), with
the bos/eos/unk/pad tokens the GGUF names, so `apply_chat_template` sees the same special tokens
it would for `AutoTokenizer.from_pretrained(dir, gguf_file=...)`.

Requirements: pip install tokenizers transformers gguf numpy jinja2
Usage: python3 tools/make_chat_refs.py [--gguf PATH]
"""

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_tokenizer_refs as tok_refs  # noqa: E402

ROOT = tok_refs.ROOT
OUT = ROOT / "tests" / "fixtures" / "chat_template"

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city — in °C.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
            },
            "required": ["city"],
        },
    },
}

CONVERSATIONS = {
    "single_user": [{"role": "user", "content": "Hello!"}],
    "system_user": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name three colours."},
    ],
    "multi_turn": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And times 3?"},
        {"role": "assistant", "content": "12"},
        {"role": "user", "content": "  Thanks!  \n"},
    ],
    "unicode_newlines": [
        {"role": "system", "content": "Réponds en français.\n\nSois bref."},
        {"role": "user", "content": "日本語 😀 <tag> & \"quotes\" 'single' \\ backslash"},
    ],
    "empty_content": [{"role": "user", "content": ""}],
    "ends_with_assistant": [
        {"role": "user", "content": "Say hi"},
        {"role": "assistant", "content": "Hi"},
    ],
    "bad_role": [{"role": "robot", "content": "beep"}],
    "system_not_first": [
        {"role": "user", "content": "a"},
        {"role": "system", "content": "b"},
    ],
}

CASES = [
    ("smollm2", "single_user", True, None),
    ("smollm2", "single_user", False, None),
    ("smollm2", "system_user", True, None),
    ("smollm2", "multi_turn", True, None),
    ("smollm2", "multi_turn", False, None),
    ("smollm2", "unicode_newlines", True, None),
    ("smollm2", "empty_content", True, None),
    ("smollm2", "ends_with_assistant", False, None),
    ("features", "single_user", True, None),
    ("features", "system_user", True, [WEATHER_TOOL]),
    ("features", "multi_turn", True, None),
    ("features", "multi_turn", False, [WEATHER_TOOL]),
    ("features", "unicode_newlines", False, None),
    ("features", "empty_content", True, None),
    ("features", "bad_role", True, None),
    ("features", "system_not_first", True, None),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf")
    args = ap.parse_args()
    gguf = tok_refs.find_gguf(args.gguf)
    assert tok_refs.sha256(gguf) == tok_refs.GGUF_SHA256, f"{gguf} is not the expected SmolLM2 GGUF"

    import jinja2
    from transformers import PreTrainedTokenizerFast

    backend, config = tok_refs.load_reference(gguf)
    specials = {k: v for k, v in config.items() if k.endswith("_token") and v is not None}
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **specials)
    templates = {
        "smollm2": config["chat_template"],
        "features": (OUT / "features.jinja").read_text(encoding="utf-8"),
    }

    cases = []
    for template, conversation, add_generation_prompt, tools in CASES:
        case = {
            "template": template,
            "conversation": conversation,
            "messages": CONVERSATIONS[conversation],
            "add_generation_prompt": add_generation_prompt,
            "tools": tools,
            "bos_token": specials.get("bos_token"),
            "eos_token": specials.get("eos_token"),
        }
        try:
            case["expected"] = tokenizer.apply_chat_template(
                CONVERSATIONS[conversation],
                tools=tools,
                chat_template=templates[template],
                add_generation_prompt=add_generation_prompt,
                tokenize=False,
            )
        except jinja2.exceptions.TemplateError as err:
            case["error"] = str(err)
        cases.append(case)

    with open(OUT / "cases.json", "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} cases ({sum('error' in c for c in cases)} expected errors) to {OUT / 'cases.json'}")


if __name__ == "__main__":
    main()
