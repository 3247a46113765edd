//! `ninfer bench model` the way a user runs it: a synthetic model on the cpu backend (the
//! GPU figures are made on the GPU machine), its JSON records, and bad inputs refused with a
//! sentence and exit status 2.

use std::process::{Command, Output};

fn ninfer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ninfer"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn a_synthetic_model_on_the_cpu_writes_one_record_per_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.jsonl");
    let out = ninfer(&[
        "bench",
        "model",
        "--synthetic",
        "smollm2-135m",
        "--device",
        "cpu",
        "--prompt",
        "16",
        "--lanes",
        "1,8",
        "--decode-tokens",
        "4",
        "--decode-context",
        "4",
        "--warmup-steps",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("no floor on the cpu"), "{stdout}");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3, "prompt 16, decode 1 lane, decode 8 lanes");
    for r in &records {
        assert_eq!(r["what"], "model_bench");
        assert_eq!(r["model"], "smollm2-135m");
        assert_eq!(r["source"], "synthetic");
        assert_eq!(r["weights"], "f32");
        assert_eq!(r["device"], "cpu");
        assert!(r["gpu"].is_null());
        assert!(r["rev"].as_str().is_some_and(|s| !s.is_empty()));
        let date = r["date"].as_str().unwrap();
        assert!(date.len() == 20 && date.ends_with('Z'), "{date}");
        assert!(r["load_s"].as_f64().unwrap() > 0.0);
        // No floor on the cpu.
        assert!(r["floor_us"].is_null() && r["fraction"].is_null());
    }
    let prompt = &records[0];
    assert_eq!(prompt["kind"], "prompt");
    assert_eq!(
        (prompt["lanes"].as_u64(), prompt["tokens"].as_u64()),
        (Some(1), Some(16))
    );
    assert_eq!(prompt["supported"], true);
    assert!(prompt["tokens_per_s"].as_f64().unwrap() > 0.0);
    let decode = &records[1];
    assert_eq!(decode["kind"], "decode");
    assert_eq!(
        (decode["lanes"].as_u64(), decode["tokens"].as_u64()),
        (Some(1), Some(4))
    );
    assert_eq!(
        decode["context"].as_u64(),
        Some(5),
        "4 context tokens and 1 warm-up step"
    );
    let tps = decode["tokens_per_s"].as_f64().unwrap();
    let step = decode["step_us"].as_f64().unwrap();
    assert!((tps * step - 1e6).abs() < 1.0, "{tps} {step}");
    // SmolLM2 in f32: 134.5 M parameters, less all embedding rows but one, plus the tied
    // head read whole.
    let bytes = decode["step_bytes"].as_f64().unwrap();
    assert!((bytes / 4.0 - 134.5e6).abs() < 0.3e6, "{bytes}");
    // Eight lanes: the batched step, tokens of every lane, the step time one batched step's.
    let eight = &records[2];
    assert_eq!(eight["lanes"].as_u64(), Some(8));
    assert_eq!(eight["supported"], true);
    assert_eq!(eight["tokens"].as_u64(), Some(32), "8 lanes of 4 steps");
    assert_eq!(eight["context"].as_u64(), Some(5));
    let tps = eight["tokens_per_s"].as_f64().unwrap();
    let step = eight["step_us"].as_f64().unwrap();
    assert!((tps * step - 8e6).abs() < 8.0, "{tps} {step}");
}

#[test]
fn help_states_the_synthetic_shapes() {
    let out = ninfer(&["bench", "model", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for text in [
        "qwen3.6-27b",
        "5120",
        "17408",
        "256 experts",
        "smollm2-135m",
        "49152",
    ] {
        assert!(help.contains(text), "{text}: {help}");
    }
}

#[test]
fn bad_inputs_are_refused_with_a_sentence() {
    let base = [
        "bench", "model", "--device", "cpu", "--prompt", "4", "--lanes", "1",
    ];
    let cases: &[(&[&str], &str)] = &[
        (
            &["--synthetic", "llama-7b"],
            "no synthetic model \"llama-7b\"",
        ),
        (
            &["--synthetic", "smollm2-135m", "--weights", "q3_weird"],
            "--weights",
        ),
        (
            &["--synthetic", "smollm2-135m", "--gdn-state-fp16"],
            "Gated DeltaNet",
        ),
        (
            &["--synthetic", "smollm2-135m", "--prompt", "0"],
            "--prompt",
        ),
        (
            &["--synthetic", "smollm2-135m", "--lanes", "9"],
            "at most 8 lanes",
        ),
        (&["--synthetic", "smollm2-135m", "--lanes", "0"], "--lanes"),
        (
            &["--synthetic", "smollm2-135m", "--decode-tokens", "0"],
            "--decode-tokens",
        ),
        (
            &["--synthetic", "smollm2-135m", "--prompt", "9000"],
            "context of 8192",
        ),
        (&["--model", "/nonexistent/model.gguf"], "does not exist"),
        (
            &["--synthetic", "smollm2-135m", "--prefill-cublas"],
            "--prefill-cublas runs linear layers on cuBLAS",
        ),
        (
            &["--synthetic", "smollm2-135m", "--prefill-cublas-ab"],
            "needs the GPU engine",
        ),
        (
            &["--synthetic", "smollm2-135m", "--profile-ab"],
            "--profile-ab compares the GPU engine's tuned routes",
        ),
        (
            &[
                "--synthetic",
                "smollm2-135m",
                "--profile-ab",
                "--no-profile",
            ],
            "cannot be used with",
        ),
        (
            &["--synthetic", "smollm2-135m", "--conv-epilogue-ab"],
            "--conv-epilogue-ab compares two forms of the GPU engine's GDN step",
        ),
        (
            &[
                "--synthetic",
                "smollm2-135m",
                "--conv-epilogue-ab",
                "--profile-ab",
            ],
            "cannot be used with",
        ),
        (
            &[
                "--synthetic",
                "smollm2-135m",
                "--prefill-cublas",
                "--prefill-cublas-ab",
            ],
            "cannot be used with",
        ),
    ];
    for (extra, says) in cases {
        let args: Vec<&str> = base.iter().chain(extra.iter()).copied().collect();
        let out = ninfer(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // --model and --synthetic together: clap's own usage error.
    let out = ninfer(&[
        "bench",
        "model",
        "--model",
        "x.gguf",
        "--synthetic",
        "smollm2-135m",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn readbacks_time_each_decode_row_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.jsonl");
    let llama = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/llama");
    let out = ninfer(&[
        "bench",
        "model",
        "--model",
        llama,
        "--device",
        "cpu",
        "--prompt",
        "4",
        "--lanes",
        "1,2",
        "--decode-tokens",
        "2",
        "--readback",
        "greedy,logits",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rows: Vec<(String, u64, String)> = records
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["lanes"].as_u64().unwrap(),
                r["readback"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    let want = [
        ("prompt", 1, "-"),
        ("decode", 1, "greedy"),
        ("decode", 1, "logits"),
        ("decode", 2, "greedy"),
        ("decode", 2, "logits"),
    ];
    let want: Vec<(String, u64, String)> = want
        .iter()
        .map(|&(k, l, r)| (k.to_string(), l, r.to_string()))
        .collect();
    assert_eq!(rows, want);
    assert!(stdout.contains("decode logits"), "{stdout}");
    // An unknown readback is refused by clap, naming the choices.
    let out = ninfer(&["bench", "model", "--device", "cpu", "--readback", "ids"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("greedy") && err.contains("logits"), "{err}");
}
