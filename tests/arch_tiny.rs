//! Tiny random-weight llama-family models (tests/fixtures/tiny/*, made by
//! tools/make_fixtures.py from transformers in float32): prefill logits within 1e-4
//! relative L2 of transformers', and the 32-token greedy continuation identical.

use std::path::{Path, PathBuf};

use ninfer::engine::generate::{argmax, generate, GenerateOptions, Sampling};
use ninfer::engine::CpuBackend;
use ninfer::model::arch::{CausalLm, LogitsWanted};
use ninfer::model::{open_model, ModelFiles, ModelLocation};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tiny")
        .join(name)
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

fn rel_l2(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den).sqrt()
}

fn check(dir: &Path) {
    let files = open_model(&ModelLocation::HfDir(dir.to_path_buf())).unwrap();
    let model = ninfer::model::arch::load(&CpuBackend, &files).unwrap();
    check_model(dir, &files, &model);
}

fn check_model<M: CausalLm<CpuBackend>>(dir: &Path, files: &ModelFiles, model: &M) {
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap())
            .unwrap();
    let prompt = ids(&r["ids"]);
    let want = ids(&r["greedy"]);
    let vocab = r["vocab"].as_u64().unwrap() as usize;
    let reference: Vec<f32> = std::fs::read(dir.join("logits.bin"))
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(reference.len(), prompt.len() * vocab);

    assert_eq!(files.config.vocab_size, vocab);

    // Prefill, all rows.
    let mut st = model.new_state();
    let logits = model.forward(&mut st, &prompt, LogitsWanted::All);
    let e = rel_l2(&logits, &reference);
    println!("{}: prefill rel L2 {e:.3e}", dir.display());
    assert!(e < 1e-4, "{}: relative L2 {e:.3e} >= 1e-4", dir.display());

    // Token-by-token decode gives the same logits as the prefill (KV cache, positions).
    let mut st2 = model.new_state();
    let mut stepped = Vec::new();
    for &t in &prompt {
        stepped.extend(model.forward(&mut st2, &[t], LogitsWanted::Last));
    }
    let e2 = rel_l2(&stepped, &reference);
    assert!(e2 < 1e-4, "{}: step-by-step rel L2 {e2:.3e}", dir.display());

    // Greedy: first token from the prefill, the rest through generate on the same cache.
    let first = argmax(&logits[(prompt.len() - 1) * vocab..]);
    let opts = GenerateOptions {
        max_new_tokens: want.len() - 1,
        sampling: Sampling::greedy(),
        stop_ids: vec![],
    };
    let g = generate(model, &mut st, &[first], &opts, |_| true);
    let mut ours = vec![first];
    ours.extend(g.tokens);
    assert_eq!(ours, want, "{}: greedy continuation", dir.display());

    // And from scratch through generate's own prefill.
    let mut st3 = model.new_state();
    let opts = GenerateOptions {
        max_new_tokens: want.len(),
        ..opts
    };
    assert_eq!(
        generate(model, &mut st3, &prompt, &opts, |_| true).tokens,
        want
    );
}

#[test]
fn tiny_llama() {
    check(&fixture("llama"));
}

#[test]
fn tiny_qwen3_dense() {
    check(&fixture("qwen3"));
}

#[test]
fn tiny_qwen35_dense_hv_hk_2() {
    check(&fixture("qwen35_r2"));
}

#[test]
fn tiny_qwen35_dense_hv_hk_3() {
    check(&fixture("qwen35_r3"));
}

#[test]
fn tiny_qwen35_moe() {
    check(&fixture("qwen35_moe"));
}

#[test]
fn tiny_qwen3_next() {
    check(&fixture("qwen3_next"));
}

/// Sampled generation through a model: reproducible for a seed, different across seeds,
/// stops at a stop id, and top-k 1 equals greedy.
#[test]
fn sampled_generation_on_a_tiny_model() {
    use ninfer::engine::generate::StopReason;
    let dir = fixture("qwen35_r2");
    let files = open_model(&ModelLocation::HfDir(dir.clone())).unwrap();
    let model = ninfer::model::arch::load(&CpuBackend, &files).unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap())
            .unwrap();
    let prompt = ids(&r["ids"]);
    let run = |sampling: Sampling, stop_ids: Vec<u32>| {
        let mut st = model.new_state();
        let opts = GenerateOptions {
            max_new_tokens: 24,
            sampling,
            stop_ids,
        };
        generate(&model, &mut st, &prompt, &opts, |_| true)
    };
    let s = |seed| Sampling {
        temperature: 1.5,
        top_k: 50,
        top_p: 0.95,
        seed,
    };
    let a = run(s(1), vec![]);
    assert_eq!(a.tokens.len(), 24);
    assert_eq!(a, run(s(1), vec![]));
    assert_ne!(a.tokens, run(s(2), vec![]).tokens);
    // Stopping on the 5th sampled token: the output is the 4 before it.
    let stop = a.tokens[4];
    let first = a.tokens.iter().position(|&t| t == stop).unwrap();
    let b = run(s(1), vec![stop]);
    assert_eq!(b.reason, StopReason::StopToken);
    assert_eq!(b.stop_token, Some(stop));
    assert_eq!(b.tokens, a.tokens[..first]);
    // top-k 1 is greedy.
    let greedy = ids(&r["greedy"]);
    let k1 = Sampling {
        temperature: 0.8,
        top_k: 1,
        top_p: 1.0,
        seed: 3,
    };
    assert_eq!(run(k1, vec![]).tokens, greedy[..24]);
}

/// The MTP layer (random `mtp.*` weights added to the qwen35_r2 fixture) against a reference
/// composed from transformers' own Qwen3.5 modules (tools/make_fixtures.py, `add_mtp`),
/// in one block and in two chunks through its KV cache.
#[test]
fn tiny_qwen35_mtp() {
    use ninfer::model::arch::Qwen35;
    let dir = fixture("qwen35_r2");
    let files = open_model(&ModelLocation::HfDir(dir.clone())).unwrap();
    let model = Qwen35::load(&CpuBackend, &files).unwrap();
    assert!(model.has_mtp());
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap())
            .unwrap();
    let prompt = ids(&r["ids"]);
    let greedy = ids(&r["greedy"]);
    let vocab = r["vocab"].as_u64().unwrap() as usize;
    let reference: Vec<f32> = std::fs::read(dir.join("mtp_logits.bin"))
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(reference.len(), prompt.len() * vocab);
    let mut next = prompt[1..].to_vec();
    next.push(greedy[0]);

    let mut st = model.new_state();
    let (_, hidden) = model.forward_with_hidden(&mut st, &prompt, LogitsWanted::All);
    let mut mst = model.new_mtp_state();
    let got = model.mtp_forward(&mut mst, &hidden, &next);
    let e = rel_l2(&got, &reference);
    println!("mtp rel L2 {e:.3e}");
    assert!(e < 1e-4, "mtp relative L2 {e:.3e}");

    use ninfer::engine::Backend;
    let b = CpuBackend;
    let mut mst = model.new_mtp_state();
    let mut chunked = model.mtp_forward(&mut mst, &b.slice_rows(&hidden, 0, 20), &next[..20]);
    chunked.extend(model.mtp_forward(
        &mut mst,
        &b.slice_rows(&hidden, 20, prompt.len() - 20),
        &next[20..],
    ));
    let e2 = rel_l2(&chunked, &reference);
    assert!(e2 < 1e-4, "chunked mtp relative L2 {e2:.3e}");
}
