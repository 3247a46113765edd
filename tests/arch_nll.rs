//! `CausalLm::nll_rows` of the llama and qwen35 architectures (head on the scored rows
//! only, scored by the backend) against the forward's logits scored on the host, on the
//! tiny fixture models (tests/fixtures/tiny/*) and the cpu backend: whole blocks, every
//! kind of scored range, and `--prefill-chunk` chunks.

use std::path::PathBuf;

use ninfer::engine::CpuBackend;
use ninfer::model::arch::{self, forward_chunked, nll_chunked, CausalLm, LogitsWanted, Model};
use ninfer::model::{open_model, ModelLocation};
use ninfer::perplexity::nll_of;

fn load(name: &str) -> (Model<CpuBackend>, Vec<u32>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tiny")
        .join(name);
    let files = open_model(&ModelLocation::HfDir(dir.clone())).unwrap();
    let model = arch::load(&CpuBackend, &files).unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap())
            .unwrap();
    let ids = r["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect();
    (model, ids)
}

/// The NLLs of tokens `score_from..` from logits `[rows, vocab]` (row t-1 predicts t).
fn host_nll(logits: &[f32], vocab: usize, ids: &[u32], score_from: usize) -> Vec<f64> {
    (score_from..ids.len())
        .map(|t| nll_of(&logits[(t - 1) * vocab..t * vocab], ids[t] as usize))
        .collect()
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

fn check(name: &str, want_llama: bool) {
    let (model, ids) = load(name);
    assert_eq!(matches!(model, Model::Llama(_)), want_llama, "{name}");
    let vocab = model.vocab_size();
    let n = ids.len();
    let mut st = model.new_state();
    let logits = model.forward(&mut st, &ids, LogitsWanted::All);

    let mut worst = 0f64;
    for score_from in [1, 2, n / 2, n - 1, n] {
        let want = host_nll(&logits, vocab, &ids, score_from);
        let mut st = model.new_state();
        let got = model.nll(&mut st, &ids, score_from);
        assert_eq!(
            model.position(&st),
            n,
            "{name}: the state covers every token"
        );
        let d = max_diff(&got, &want);
        worst = worst.max(d);
        assert!(d < 1e-5, "{name} score_from {score_from}: {d:.3e}");
    }
    // Rows anywhere against targets that are not the next tokens.
    let targets: Vec<u32> = (0..5).map(|i| (i * 97 % vocab) as u32).collect();
    let mut st = model.new_state();
    let got = model.nll_rows(&mut st, &ids, 7, &targets);
    let want: Vec<f64> = (0..5)
        .map(|i| {
            nll_of(
                &logits[(7 + i) * vocab..(8 + i) * vocab],
                targets[i] as usize,
            )
        })
        .collect();
    worst = worst.max(max_diff(&got, &want));
    assert!(max_diff(&got, &want) < 1e-5, "{name}: nll_rows");

    // In chunks: the same as the chunked forward scored on the host (and within rounding
    // of the whole block), the chunks before the scored range computing no head.
    for chunk in [1, 5, 16, n - 1] {
        let mut st = model.new_state();
        let chunked = forward_chunked(&model, &mut st, &ids, LogitsWanted::All, Some(chunk));
        for score_from in [1, 11, n - 1] {
            let mut st = model.new_state();
            let got = nll_chunked(&model, &mut st, &ids, score_from, Some(chunk));
            assert_eq!(model.position(&st), n);
            let d = max_diff(&got, &host_nll(&chunked, vocab, &ids, score_from));
            worst = worst.max(d);
            assert!(
                d < 1e-5,
                "{name} chunk {chunk} score_from {score_from}: {d:.3e}"
            );
            let d = max_diff(&got, &host_nll(&logits, vocab, &ids, score_from));
            assert!(d < 1e-4, "{name} chunk {chunk} vs one block: {d:.3e}");
        }
    }
    println!("{name}: nll vs forward + host, largest difference {worst:.3e} nats");
}

#[test]
fn nll_of_tiny_llama_is_the_forward_scored_on_the_host() {
    check("llama", true);
}

#[test]
fn nll_of_tiny_qwen3_dense_is_the_forward_scored_on_the_host() {
    check("qwen3", true);
}

#[test]
fn nll_of_tiny_qwen35_is_the_forward_scored_on_the_host() {
    check("qwen35_r3", false);
}

#[test]
fn nll_of_tiny_qwen35_moe_is_the_forward_scored_on_the_host() {
    check("qwen35_moe", false);
}

#[test]
fn nll_of_tiny_qwen3_next_is_the_forward_scored_on_the_host() {
    check("qwen3_next", false);
}
