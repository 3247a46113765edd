//! `ninfer-perplexity` the way a user runs it, on tiny fixture models and a short text,
//! checked against a perplexity computed here from the model's logits.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ninfer::engine::CpuBackend;
use ninfer::model::arch::{self, CausalLm, LogitsWanted};
use ninfer::model::{open_model, ModelLocation};
use ninfer::perplexity::{plan_windows, score, Method};

const TEXT: &str = "The quick brown fox jumps over the lazy dog. A model that has seen a \
word before is less surprised by it the second time, and perplexity measures exactly that \
surprise, averaged over every token of the text. The quick brown fox jumps again.\n";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tiny")
        .join(name)
}

fn perplexity(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ninfer-perplexity"))
        .args(args)
        .output()
        .expect("the ninfer-perplexity binary runs")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn log_softmax_at(row: &[f32], target: u32) -> f64 {
    let max = row
        .iter()
        .map(|&x| x as f64)
        .fold(f64::NEG_INFINITY, f64::max);
    let lse = max
        + row
            .iter()
            .map(|&x| (x as f64 - max).exp())
            .sum::<f64>()
            .ln();
    row[target as usize] as f64 - lse
}

/// Mean NLL computed without the library's planner: each token `i >= 1` is scored in the
/// first window that holds it (stride), or in the second half of its chunk (chunks).
fn direct_mean_nll<M: CausalLm<CpuBackend>>(
    model: &M,
    ids: &[u32],
    bos: Option<u32>,
    ctx: usize,
    stride: usize,
    method: Method,
) -> (f64, usize) {
    let vocab = model.vocab_size();
    let mut cache: HashMap<usize, (Vec<u32>, Vec<f32>)> = HashMap::new();
    let mut run = |start: usize| {
        cache
            .entry(start)
            .or_insert_with(|| {
                let end = (start + ctx).min(ids.len());
                let mut input = ids[start..end].to_vec();
                if let Some(b) = bos {
                    input[0] = b;
                }
                let mut st = model.new_state();
                let logits = model.forward(&mut st, &input, LogitsWanted::All);
                (input, logits)
            })
            .clone()
    };
    let (mut sum, mut n) = (0.0f64, 0usize);
    match method {
        Method::Stride => {
            for i in 1..ids.len() {
                let k = if i < ctx { 0 } else { (i - ctx) / stride + 1 };
                let start = k * stride;
                let (input, logits) = run(start);
                let j = i - start;
                sum -= log_softmax_at(&logits[(j - 1) * vocab..j * vocab], input[j]);
                n += 1;
            }
        }
        Method::Chunks => {
            for c in 0..ids.len() / ctx {
                let (input, logits) = run(c * ctx);
                for j in ctx / 2 + 1..ctx {
                    sum -= log_softmax_at(&logits[(j - 1) * vocab..j * vocab], input[j]);
                    n += 1;
                }
            }
        }
    }
    (sum / n as f64, n)
}

fn check_fixture(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("text.txt");
    std::fs::write(&file, TEXT).unwrap();
    let model_dir = fixture(name);
    let files = open_model(&ModelLocation::HfDir(model_dir.clone())).unwrap();
    let model = arch::load(&CpuBackend, &files).unwrap();
    let ids = files.tokenizer.encode(TEXT, true).unwrap();
    let bos = files
        .tokenizer
        .adds_bos()
        .then(|| files.tokenizer.bos_id())
        .flatten();
    assert!(
        ids.len() > 48,
        "{name}: the text is only {} tokens",
        ids.len()
    );

    for (method, ctx, stride) in [(Method::Stride, 24usize, 10usize), (Method::Chunks, 16, 16)] {
        let json = dir.path().join(format!("{method:?}.json"));
        let (ctx_s, stride_s) = (ctx.to_string(), stride.to_string());
        let mut args = vec![
            file.to_str().unwrap(),
            "--model",
            model_dir.to_str().unwrap(),
            "--device",
            "cpu",
            "--ctx",
            &ctx_s,
            "--json",
            json.to_str().unwrap(),
        ];
        match method {
            Method::Stride => args.extend(["--method", "stride", "--stride", &stride_s]),
            Method::Chunks => args.extend(["--method", "chunks"]),
        }
        let out = perplexity(&args);
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "{name} {method:?}: {stdout}\n{stderr}"
        );
        let line = stdout.lines().last().unwrap_or_default();
        assert!(line.starts_with("PPL = "), "{line}");
        assert!(
            line.contains("tokens/s") && line.contains("device cpu"),
            "{line}"
        );
        // Not a terminal: one progress line a window instead of a bar.
        assert!(stderr.contains("[window 1/"), "{stderr}");
        let printed: f64 = line["PPL = ".len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(printed.is_finite() && printed > 1.0, "{line}");

        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let ppl = record["ppl"].as_f64().unwrap();
        let se = record["se"].as_f64().unwrap();
        let scored = record["tokens_scored"].as_u64().unwrap() as usize;
        assert!((ppl - printed).abs() < 1e-4 * ppl, "{ppl} vs {line}");
        assert!(se.is_finite() && se > 0.0);
        assert_eq!(record["tokens_used"].as_u64().unwrap() as usize, ids.len());
        assert_eq!(record["file_sha256"].as_str().unwrap().len(), 64);
        assert!(record["rev"].is_string());
        // The cpu computes with the file's values: the record says so.
        assert_eq!(record["device"], "cpu");
        assert_eq!(
            (record["weights"].as_str(), record["activations"].as_str()),
            (Some("f32"), Some("exact"))
        );

        let (mean, n) = direct_mean_nll(&model, &ids, bos, ctx, stride, method);
        assert_eq!(scored, n, "{name} {method:?}");
        let want = mean.exp();
        assert!(
            ((ppl - want) / want).abs() < 1e-9,
            "{name} {method:?}: binary {ppl} vs direct {want}"
        );
        // The library's runner, called directly, agrees too.
        let plan = plan_windows(ids.len(), ctx, stride, method).unwrap();
        let t = score(&model, &ids, &plan, bos, |_| {}).unwrap();
        assert_eq!(t.scored(), n);
        assert!(((t.ppl() - want) / want).abs() < 1e-9);
        if method == Method::Stride {
            assert_eq!(n, ids.len() - 1, "every token after the first is scored");
        }
    }
}

#[test]
fn perplexity_matches_a_direct_computation_on_tiny_llama() {
    check_fixture("llama");
}

#[test]
fn perplexity_matches_a_direct_computation_on_tiny_qwen35() {
    check_fixture("qwen35_r3");
}

#[test]
fn bad_inputs_exit_two_with_a_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("text.txt");
    std::fs::write(&file, TEXT).unwrap();
    let one = dir.path().join("one.txt");
    std::fs::write(&one, "a").unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let missing = dir.path().join("missing.txt");
    let model = fixture("llama");
    let (f, m) = (file.to_str().unwrap(), model.to_str().unwrap());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![f, "--model", m, "--ctx", "1"], "at least 2"),
        (
            vec![f, "--model", m, "--ctx", "8", "--stride", "0"],
            "stride",
        ),
        (
            vec![f, "--model", m, "--ctx", "8", "--stride", "9"],
            "stride",
        ),
        (
            vec![f, "--model", m, "--method", "chunks", "--ctx", "9"],
            "even",
        ),
        (
            vec![f, "--model", m, "--method", "chunks", "--stride", "4"],
            "--stride",
        ),
        (
            vec![f, "--model", m, "--method", "chunks", "--ctx", "4096"],
            "fewer than one chunk",
        ),
        (vec![one.to_str().unwrap(), "--model", m], "at least 2"),
        (vec![empty.to_str().unwrap(), "--model", m], "at least 2"),
        (vec![missing.to_str().unwrap(), "--model", m], "cannot read"),
        (vec![f, "--model", m, "--max-tokens", "1"], "--max-tokens"),
        (vec![f, "--model", m, "--device", "cuda"], "--device cpu"),
        (
            vec![f, "--model", m, "--device", "cpu", "--gdn-state-fp16"],
            "--gdn-state-fp16: the llama model has no Gated DeltaNet layers",
        ),
        (vec![f, "--model", m, "--prefill-chunk", "0"], "at least 1"),
        (vec![f, "--model", m, "--lm-head-q4", "--lm-head-q6"], ""),
        (vec![f, "--model", "/no/such/model.gguf"], ""),
        (
            vec![f, "--model", m, "--json", "/no/such/folder/out.json"],
            "does not exist",
        ),
    ];
    for (args, needle) in cases {
        let out = perplexity(&args);
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && !err.contains("panicked") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn help_states_the_quick_slice() {
    let out = perplexity(&["--help"]);
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert!(
        stdout.contains("--quick") && stdout.contains("first 8,192 tokens"),
        "{stdout}"
    );
}
