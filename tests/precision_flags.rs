//! The precision options through the architectures and the binaries, on the tiny fixtures:
//! vocabulary formats change logits a little, `--prefill-chunk` changes nothing but rounding,
//! `--gdn-state-fp16` runs on a GDN model and is refused with a sentence elsewhere.

use std::path::PathBuf;
use std::process::{Command, Output};

use ninfer::engine::generate::{generate, generate_chunked, GenerateOptions, Sampling};
use ninfer::engine::{Backend, CpuBackend};
use ninfer::model::arch::{
    self, forward_chunked, vocab_tensors, ArchError, CausalLm, LogitsWanted, VocabValues,
};
use ninfer::model::precision::{PrecisionOptions, VocabQuant};
use ninfer::model::{open_model, ModelFiles, ModelLocation};
use ninfer::perplexity::{plan_windows, score, score_chunked, Method};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tiny")
        .join(name)
}

fn files(name: &str) -> ModelFiles {
    open_model(&ModelLocation::HfDir(fixture(name))).unwrap()
}

fn rel_l2(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den).sqrt()
}

/// A prompt of `n` ids inside the tiny vocabulary (384).
fn prompt(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| (i * 37 + 11) % 384).collect()
}

/// Every row of logits of `ids` on a fresh state, loaded with `opts`.
fn logits(name: &str, opts: &PrecisionOptions, ids: &[u32]) -> Vec<f32> {
    let f = files(name);
    let m = arch::load_with(&CpuBackend, &f, opts).unwrap();
    let mut st = m.new_state();
    forward_chunked(&m, &mut st, ids, LogitsWanted::All, opts.prefill_chunk)
}

fn opts(embedding: Option<VocabQuant>, lm_head: Option<VocabQuant>) -> PrecisionOptions {
    PrecisionOptions {
        embedding,
        lm_head,
        ..Default::default()
    }
}

#[test]
fn default_options_load_the_same_model() {
    let ids = prompt(9);
    for name in ["llama", "qwen3", "qwen35_r2"] {
        let f = files(name);
        let m = arch::load(&CpuBackend, &f).unwrap();
        let want = m.forward(&mut m.new_state(), &ids, LogitsWanted::All);
        assert_eq!(
            logits(name, &PrecisionOptions::default(), &ids),
            want,
            "{name}"
        );
    }
}

#[test]
fn vocabulary_flags_change_logits_a_little() {
    let ids = prompt(12);
    // llama has its own head; qwen3 ties it to the embedding; qwen35_r2 is a GDN model. The
    // fixtures' weights are random, so 4-bit rounding moves their logits by ~10-25%.
    for name in ["llama", "qwen3", "qwen35_r2"] {
        let base = logits(name, &PrecisionOptions::default(), &ids);
        let mut errs = Vec::new();
        for (o, what, most) in [
            (opts(Some(VocabQuant::Q4), None), "--embedding-q4", 0.4),
            (opts(Some(VocabQuant::Q6), None), "--embedding-q6", 0.1),
            (opts(None, Some(VocabQuant::Q4)), "--lm-head-q4", 0.4),
            (opts(None, Some(VocabQuant::Q6)), "--lm-head-q6", 0.1),
            (
                opts(Some(VocabQuant::Q6), Some(VocabQuant::Q6)),
                "both q6",
                0.1,
            ),
            (
                opts(Some(VocabQuant::Q4), Some(VocabQuant::Q4)),
                "both q4",
                0.5,
            ),
        ] {
            let e = rel_l2(&logits(name, &o, &ids), &base);
            println!("{name} {what}: rel L2 {e:.3e}");
            assert!(e > 1e-5 && e < most, "{name} {what}: rel L2 {e:.3e}");
            errs.push(e);
        }
        // q6 keeps more than q4.
        assert!(errs[1] < errs[0] && errs[3] < errs[2], "{name}: {errs:?}");
    }
    // The bound, on the llama fixture.
    let base = logits("llama", &PrecisionOptions::default(), &ids);
    let e = rel_l2(
        &logits("llama", &opts(Some(VocabQuant::Q4), None), &ids),
        &base,
    );
    assert!(e > 1e-5 && e < 0.2, "llama --embedding-q4: rel L2 {e:.3e}");
}

#[test]
fn tied_head_flags_act_on_their_own_tensor() {
    // On tied qwen3, the embedding's flag alone leaves the head exact, and vice versa:
    // each equals the result of quantizing that one table by hand.
    let f = files("qwen3");
    assert!(f.config.tie_word_embeddings);
    let b = CpuBackend;
    let table = VocabValues::read(&f.weights, "model.embed_tokens.weight").unwrap();
    let q4 = arch::vocab_format(VocabQuant::Q4);
    let copy = |v: &VocabValues| VocabValues {
        rows: v.rows,
        cols: v.cols,
        data: v.data.clone(),
    };
    let coded = b.linear_from_f32_in(table.rows, table.cols, table.data.clone(), q4);
    let (e, h) = vocab_tensors(&b, copy(&table), None, &opts(Some(VocabQuant::Q4), None)).unwrap();
    assert_eq!(e, coded);
    assert_eq!(
        h.unwrap().data,
        table.data,
        "the head stays in the default format"
    );
    let (e, h) = vocab_tensors(&b, copy(&table), None, &opts(None, Some(VocabQuant::Q4))).unwrap();
    assert_eq!(
        e.data, table.data,
        "the embedding stays in the default format"
    );
    assert_eq!(h.unwrap(), coded);
    // The same flag on both: one table serves both.
    let (e, h) = vocab_tensors(
        &b,
        copy(&table),
        None,
        &opts(Some(VocabQuant::Q4), Some(VocabQuant::Q4)),
    )
    .unwrap();
    assert_eq!(e, coded);
    assert!(h.is_none());
}

#[test]
fn a_hidden_size_off_the_group_is_refused_with_a_sentence() {
    let v = || VocabValues {
        rows: 4,
        cols: 96,
        data: vec![0.5; 4 * 96],
    };
    for o in [
        opts(Some(VocabQuant::Q4), None),
        opts(None, Some(VocabQuant::Q6)),
    ] {
        let e = vocab_tensors(&CpuBackend, v(), Some(v()), &o).unwrap_err();
        assert!(matches!(e, ArchError::Precision { .. }));
        let msg = e.to_string();
        assert!(
            msg.contains("hidden size is 96") && msg.contains("group of 64"),
            "{msg}"
        );
    }
    assert!(vocab_tensors(&CpuBackend, v(), Some(v()), &PrecisionOptions::default()).is_ok());
    // The same from the config, before any weight is read.
    let mut c = files("llama").config;
    assert!(arch::check_options(&c, &opts(Some(VocabQuant::Q4), None)).is_ok());
    c.hidden_size = 96;
    let e = arch::check_options(&c, &opts(None, Some(VocabQuant::Q4))).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--lm-head-q4: the model's hidden size is 96"),
        "{e}"
    );
    assert!(arch::check_options(&c, &PrecisionOptions::default()).is_ok());
}

#[test]
fn prefill_chunks_give_the_same_logits() {
    let ids = prompt(11);
    for name in ["llama", "qwen3", "qwen35_r2", "qwen35_moe", "qwen3_next"] {
        let whole = logits(name, &PrecisionOptions::default(), &ids);
        for n in [1, 3, 4, 11, 64] {
            let o = PrecisionOptions {
                prefill_chunk: Some(n),
                ..Default::default()
            };
            let e = rel_l2(&logits(name, &o, &ids), &whole);
            assert!(e < 1e-5, "{name} chunk {n}: rel L2 {e:.3e}");
        }
        // Last row only: the chunks' last row is the whole prompt's.
        let f = files(name);
        let m = arch::load(&CpuBackend, &f).unwrap();
        let last = forward_chunked(&m, &mut m.new_state(), &ids, LogitsWanted::Last, Some(3));
        let vocab = m.vocab_size();
        let e = rel_l2(&last, &whole[(ids.len() - 1) * vocab..]);
        assert!(e < 1e-5, "{name} last row: rel L2 {e:.3e}");
    }
}

#[test]
fn chunked_generation_and_scoring_match_the_whole_prompt() {
    let ids = prompt(14);
    for name in ["llama", "qwen35_r2"] {
        let f = files(name);
        let m = arch::load(&CpuBackend, &f).unwrap();
        let o = GenerateOptions {
            max_new_tokens: 8,
            sampling: Sampling::greedy(),
            stop_ids: vec![],
        };
        let whole = generate(&m, &mut m.new_state(), &ids, &o, |_| true);
        let chunked = generate_chunked(&m, &mut m.new_state(), &ids, &o, Some(3), |_| true);
        assert_eq!(whole, chunked, "{name}");

        let plan = plan_windows(ids.len(), 8, 4, Method::Stride).unwrap();
        let a = score(&m, &ids, &plan, None, |_| {}).unwrap();
        let b = score_chunked(&m, &ids, &plan, None, Some(3), |_| {}).unwrap();
        assert_eq!(a.scored(), b.scored());
        assert!(
            ((a.ppl() - b.ppl()) / a.ppl()).abs() < 1e-5,
            "{name}: {} vs {}",
            a.ppl(),
            b.ppl()
        );
    }
}

#[test]
fn gdn_state_fp16_runs_on_qwen35_and_is_refused_on_llama() {
    let o = PrecisionOptions {
        gdn_state_fp16: true,
        ..Default::default()
    };
    let e = arch::load_with(&CpuBackend, &files("llama"), &o)
        .err()
        .expect("llama has no GDN state");
    assert!(matches!(e, ArchError::Precision { .. }));
    assert_eq!(
        e.to_string(),
        "--gdn-state-fp16: the llama model has no Gated DeltaNet layers, so there is no GDN state to store in fp16; drop the flag"
    );
    let ids = prompt(10);
    let base = logits("qwen35_r2", &PrecisionOptions::default(), &ids);
    let f = files("qwen35_r2");
    let m = arch::load_with(&CpuBackend, &f, &o).unwrap();
    // Token by token, so the state is stored (and rounded) between every step.
    let mut st = m.new_state();
    let stepped: Vec<f32> = ids
        .iter()
        .flat_map(|&t| m.forward(&mut st, &[t], LogitsWanted::Last))
        .collect();
    let e = rel_l2(&stepped, &base);
    println!("qwen35_r2 --gdn-state-fp16: rel L2 {e:.3e}");
    assert!(e > 0.0 && e < 1e-2, "rel L2 {e:.3e}");
}

// The binaries, on the cpu.

fn run_bin(bin: &str, args: &[&str]) -> (Output, String, String) {
    let out = Command::new(bin)
        .args(args)
        .output()
        .expect("the binary runs");
    let so = String::from_utf8_lossy(&out.stdout).into_owned();
    let se = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, so, se)
}

const NINFER: &str = env!("CARGO_BIN_EXE_ninfer");
const PERPLEXITY: &str = env!("CARGO_BIN_EXE_ninfer-perplexity");

#[test]
fn ninfer_run_takes_the_flags() {
    let llama = fixture("llama");
    let qwen = fixture("qwen35_r2");
    let (l, q) = (llama.to_str().unwrap(), qwen.to_str().unwrap());
    let base = ["run", "--device", "cpu", "--max-tokens", "6"];
    let with = |model: &str, extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend(["--model", model]);
        a.extend(extra);
        a.push("The quick brown fox jumps over the lazy dog");
        run_bin(NINFER, &a)
    };
    let (plain, _, _) = with(l, &[]);
    assert!(plain.status.success());
    // Chunked prefill: the same greedy text.
    let (out, so, se) = with(l, &["--prefill-chunk", "2"]);
    assert!(out.status.success(), "{so}\n{se}");
    assert_eq!(out.stdout, plain.stdout);
    for extra in [
        vec!["--embedding-q4", "--lm-head-q6"],
        vec!["--embedding-q6", "--lm-head-q4", "--prefill-chunk", "3"],
    ] {
        let (out, so, se) = with(l, &extra);
        assert!(out.status.success(), "{extra:?}: {so}\n{se}");
        assert!(!so.trim().is_empty(), "{extra:?}: {se}");
    }
    let (out, so, se) = with(q, &["--gdn-state-fp16", "--prefill-chunk", "4"]);
    assert!(out.status.success(), "{so}\n{se}");
    // Refused with a sentence, exit 2.
    for (model, extra, needle) in [
        (
            l,
            vec!["--gdn-state-fp16"],
            "--gdn-state-fp16: the llama model has no Gated DeltaNet layers",
        ),
        (
            l,
            vec!["--prefill-chunk", "0"],
            "--prefill-chunk must be at least 1",
        ),
        (
            l,
            vec!["--embedding-q4", "--embedding-q6"],
            "cannot be used with",
        ),
        (
            l,
            vec!["--prefill-cublas"],
            "--prefill-cublas runs linear layers on cuBLAS, so it needs the GPU engine",
        ),
    ] {
        let (out, _, se) = with(model, &extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {se}");
        assert!(
            se.contains(needle) && !se.contains("panicked"),
            "{extra:?}: {se}"
        );
    }
}

#[test]
fn ninfer_perplexity_takes_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("t.txt");
    std::fs::write(
        &text,
        "The quick brown fox jumps over the lazy dog, and the lazy dog sleeps on in the sun. ",
    )
    .unwrap();
    let t = text.to_str().unwrap();
    let ppl = |model: &str, extra: &[&str]| -> (Output, Option<f64>, String) {
        let m = fixture(model);
        let mut a = vec![
            t,
            "--device",
            "cpu",
            "--ctx",
            "16",
            "--model",
            m.to_str().unwrap(),
        ];
        a.extend(extra);
        let (out, so, se) = run_bin(PERPLEXITY, &a);
        let v = so
            .lines()
            .last()
            .and_then(|l| l.strip_prefix("PPL = "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|v| v.parse().ok());
        (out, v, se)
    };
    let (out, base, se) = ppl("llama", &[]);
    assert!(out.status.success(), "{se}");
    let base = base.unwrap();
    let (out, chunked, se) = ppl("llama", &["--prefill-chunk", "3"]);
    assert!(out.status.success(), "{se}");
    let chunked = chunked.unwrap();
    assert!(
        ((chunked - base) / base).abs() < 1e-4,
        "{chunked} vs {base}"
    );
    let (out, q, se) = ppl("llama", &["--embedding-q4", "--lm-head-q4"]);
    assert!(out.status.success(), "{se}");
    let q = q.unwrap();
    assert!(q.is_finite() && q != base, "{q} vs {base}");
    let (out, v, se) = ppl("qwen35_r2", &["--gdn-state-fp16", "--lm-head-q6"]);
    assert!(out.status.success() && v.is_some(), "{se}");
    let (out, _, se) = ppl("llama", &["--gdn-state-fp16"]);
    assert_eq!(out.status.code(), Some(2), "{se}");
    assert!(se.contains("no Gated DeltaNet layers"), "{se}");
    let (out, _, se) = ppl("llama", &["--prefill-cublas"]);
    assert_eq!(out.status.code(), Some(2), "{se}");
    assert!(
        se.contains("--prefill-cublas") && se.contains("GPU engine") && !se.contains("panicked"),
        "{se}"
    );
}
