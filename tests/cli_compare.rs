//! `ninfer compare` the way a user runs it. The GPU comparison itself runs on the GPU
//! machine (`scripts/gpu/engine.sh`); here the harness is checked against the cpu backend
//! and the cuda request is checked to fail cleanly where there is no GPU.

use std::process::{Command, Output};

fn ninfer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ninfer"))
        .args(args)
        .output()
        .expect("the binary runs")
}

const LLAMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/llama");

/// `ninfer compare ARGS --json FILE`, which must pass: its stdout and its one record.
fn compare_passing(args: &[&str]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("compare.jsonl");
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", json.to_str().unwrap()]);
    let out = ninfer(&all);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = serde_json::from_str(std::fs::read_to_string(&json).unwrap().trim()).unwrap();
    (stdout, rec)
}

#[test]
fn the_cpu_against_itself_is_identical_and_writes_a_record() {
    let (stdout, rec) = compare_passing(&["--device", "cpu", "--model", LLAMA, "--tokens", "8"]);
    assert!(
        stdout.contains("identical") && stdout.contains("PASS"),
        "{stdout}"
    );
    assert_eq!(rec["identical_tokens"], 8);
    assert_eq!(rec["prefill_rel_l2"], 0.0);
    // The greedy step (a second decode of the prompt) picked the same tokens.
    assert_eq!(rec["greedy_step_agrees"], true);
    assert!(stdout.contains("greedy step: the same tokens"), "{stdout}");
    assert_eq!(rec["pass"], true);
}

#[test]
fn near_ties_change_nothing_where_the_tokens_are_identical() {
    // The cpu against itself: no difference, so no teacher-forced rerun and no flips.
    let (_, rec) = compare_passing(&[
        "--device",
        "cpu",
        "--model",
        LLAMA,
        "--tokens",
        "4",
        "--near-ties",
        "4",
    ]);
    assert_eq!(rec["near_ties"], 4.0);
    assert_eq!(rec["teacher_forced"], false);
    assert_eq!(rec["flips"], 0);
    assert_eq!(rec["pass"], true);
}

#[test]
fn cuda_runs_where_there_is_a_gpu_and_is_refused_where_there_is_none() {
    let has_gpu = ninfer(&["devices", "--json"]).status.success()
        && String::from_utf8_lossy(&ninfer(&["devices", "--json"]).stdout).contains("\"arch\"");
    let out = ninfer(&["compare", "--model", LLAMA, "--tokens", "4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    if has_gpu {
        assert!(out.status.success(), "{err}");
    } else {
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with("error: ") && err.contains("GPU"), "{err}");
    }
}

#[test]
fn bad_options_exit_two_with_a_sentence() {
    for args in [
        vec![
            "compare", "--device", "cpu", "--model", LLAMA, "--tokens", "0",
        ],
        vec![
            "compare",
            "--device",
            "cpu",
            "--model",
            LLAMA,
            "--weights",
            "q3_g7",
        ],
        vec!["compare", "--device", "cpu", "--model", "/no/such/model"],
        vec![
            "compare",
            "--device",
            "cpu",
            "--model",
            LLAMA,
            "--near-ties",
            "-1",
        ],
        vec![
            "compare",
            "--device",
            "cpu",
            "--model",
            LLAMA,
            "--near-ties",
            "nan",
        ],
    ] {
        let out = ninfer(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn lanes_on_the_cpu_match_single_sequences_and_write_a_record() {
    let qwen35 = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/qwen35_r2");
    let (stdout, rec) = compare_passing(&[
        "--device", "cpu", "--model", qwen35, "--lanes", "3", "--tokens", "6",
    ]);
    assert!(
        stdout.contains("3 lanes") && stdout.contains("identical") && stdout.contains("PASS"),
        "{stdout}"
    );
    assert_eq!(rec["what"], "backend_compare_lanes");
    assert_eq!(rec["identical_tokens"], serde_json::json!([6, 6, 6]));
    // Lanes at different positions: prompts one token apart.
    let lens: Vec<u64> = rec["prompt_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!((lens[1] - lens[0], lens[2] - lens[0]), (1, 2));
    assert!(rec["decode_rel_l2_worst"].as_f64().unwrap() < 1e-5);
    assert_eq!(rec["greedy_step_agrees"], true);
    assert_eq!(rec["pass"], true);
}

#[test]
fn too_many_lanes_are_refused() {
    let out = ninfer(&[
        "compare", "--device", "cpu", "--model", LLAMA, "--lanes", "9",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--lanes 9"), "{err}");
}
