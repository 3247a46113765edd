//! SmolLM2-135M-Instruct (the default GGUF) on the cpu backend against transformers'
//! float32 forward of the same GGUF (tests/fixtures/smollm2, made by
//! tools/make_fixtures.py): logits on a wikitext passage within 1e-3 relative L2, and the
//! 32-token greedy continuation identical.

use std::path::PathBuf;

use ninfer::engine::generate::{generate, GenerateOptions, Sampling};
use ninfer::engine::CpuBackend;
use ninfer::model::arch::{CausalLm, Llama, LogitsWanted};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_f32(path: PathBuf) -> Vec<f32> {
    let b = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn rel_l2(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den).sqrt()
}

#[test]
fn smollm2_matches_transformers() {
    let dir = root().join("tests/fixtures/smollm2");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    let ids: Vec<u32> = meta["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let rows: Vec<usize> = meta["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let vocab = meta["vocab"].as_u64().unwrap() as usize;
    let want_greedy: Vec<u32> = meta["greedy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let reference = read_f32(dir.join("logits.bin"));
    assert_eq!(reference.len(), rows.len() * vocab);

    let files = ninfer::model::load_model(None).expect("the default model");

    // Our tokenizer reads the same ids from the passage as transformers' did.
    let n_bytes = meta["passage_bytes"].as_u64().unwrap() as usize;
    let wiki = std::fs::read(root().join("../shared/data/wikitext-2-raw/wiki.test.raw"))
        .expect("the wikitext passage");
    let passage = std::str::from_utf8(&wiki[..n_bytes]).unwrap();
    assert_eq!(files.tokenizer.encode(passage, false).unwrap(), ids);

    let model = Llama::load(&CpuBackend, &files).unwrap();
    let mut st = model.new_state();
    let logits = model.forward(&mut st, &ids, LogitsWanted::All);
    assert_eq!(logits.len(), ids.len() * vocab);
    for (j, &r) in rows.iter().enumerate() {
        let ours = &logits[r * vocab..(r + 1) * vocab];
        let theirs = &reference[j * vocab..(j + 1) * vocab];
        let e = rel_l2(ours, theirs);
        println!("position {r}: rel L2 {e:.3e}");
        assert!(e < 1e-3, "position {r}: relative L2 {e:.3e} >= 1e-3");
    }
    // Per-position argmax, wherever transformers' top two are not a near tie.
    let argmax: Vec<u64> = meta["argmax"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let gaps: Vec<f64> = meta["top2_gap"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    for p in 0..ids.len() {
        let row = &logits[p * vocab..(p + 1) * vocab];
        let ours = ninfer::engine::generate::argmax(row) as u64;
        if gaps[p] > 1e-2 {
            assert_eq!(ours, argmax[p], "argmax at position {p}");
        }
    }

    // Greedy continuation: the first token from the prefill above (its KV cache holds the
    // passage), the rest through `generate`'s incremental decode on that cache.
    let first = ninfer::engine::generate::argmax(&logits[(ids.len() - 1) * vocab..]);
    let opts = GenerateOptions {
        max_new_tokens: want_greedy.len() - 1,
        sampling: Sampling::greedy(),
        stop_ids: vec![],
    };
    let g = generate(&model, &mut st, &[first], &opts, |_| true);
    let mut ours = vec![first];
    ours.extend(g.tokens);
    assert_eq!(ours, want_greedy, "greedy continuation");
}

/// Streaming decode: pieces never hold half a character, and they add up to the full text,
/// for text whose multi-byte characters the byte-level BPE splits across tokens.
#[test]
fn streaming_text_handles_split_characters() {
    use ninfer::engine::generate::TextStream;
    let files = ninfer::model::load_model(None).expect("the default model");
    let tok = &files.tokenizer;
    let text = "Grüße aus Köln: 世界 🎉🦀 — naïve café, ünïcödé 東京タワー!";
    let ids = tok.encode(text, false).unwrap();
    // Some token must decode to an incomplete character on its own, or the test is moot.
    let split = ids
        .iter()
        .filter(|&&id| tok.decode(&[id], false).unwrap().contains('\u{FFFD}'))
        .count();
    assert!(split > 0, "no token of the sample splits a character");
    let mut stream = TextStream::new(tok, false);
    let mut out = String::new();
    for &id in &ids {
        let piece = stream.push(id).unwrap();
        assert!(
            !piece.contains('\u{FFFD}'),
            "piece {piece:?} holds a broken character"
        );
        out += &piece;
    }
    out += &stream.finish().unwrap();
    assert_eq!(out, tok.decode(&ids, false).unwrap());
    assert_eq!(out, text);
}
