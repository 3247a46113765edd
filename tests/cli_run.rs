//! `ninfer run` the way a user runs it, on the CPU backend.

use std::process::Command;

fn ninfer(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ninfer"))
        .args(args)
        .output()
        .expect("the ninfer binary runs")
}

/// (stdout, stderr) as text.
fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_generates_on_a_tiny_model_and_reports_speed() {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/llama");
    let args = [
        "run",
        "--device",
        "cpu",
        "--model",
        model,
        "--max-tokens",
        "12",
        "The",
    ];
    let out = ninfer(&args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.trim().is_empty(), "no text: {stderr}");
    assert!(
        stderr.contains("tokens generated") && stderr.contains("tok/s"),
        "{stderr}"
    );
    // Greedy is deterministic: the same command prints the same text.
    let again = ninfer(&args);
    assert_eq!(again.stdout, out.stdout);
}

#[test]
fn run_rejects_bad_options_with_exit_status_two() {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/llama");
    for args in [
        vec!["run", "--device", "cuda", "--model", model, "hi"],
        vec!["run", "--model", model, "--top-p", "0", "hi"],
        vec!["run", "--model", model, "--temperature", "-1", "hi"],
        vec!["run", "--model", "/no/such/model.gguf", "hi"],
        vec!["run", "--model", model, ""],
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
fn run_on_the_default_model_answers_a_simple_prompt() {
    // The default model (SmolLM2-135M-Instruct) is fetched into the user cache on first use.
    let out = ninfer(&[
        "run",
        "--device",
        "cpu",
        "--max-tokens",
        "6",
        "The capital of France is",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Paris"),
        "greedy continuation was {stdout:?}"
    );
}
