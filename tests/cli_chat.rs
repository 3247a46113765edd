//! `ninfer chat` run the way a user runs it: messages on standard input, one per line.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn chat(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ninfer"))
        .arg("chat")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // A refused model exits before reading its input, so a broken pipe here is an
    // outcome for the test's assertions to judge, not a failure of the harness.
    let written = child
        .stdin
        .take()
        .expect("piped")
        .write_all(input.as_bytes());
    if let Err(e) = written {
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe,
            "input written: {e}"
        );
    }
    child.wait_with_output().expect("the binary finishes")
}

#[test]
fn two_turns_on_the_default_model_keep_the_conversation() {
    // The second question only makes sense with the first turn in the context.
    let out = chat(
        &["--device", "cpu", "--max-tokens", "16"],
        "What is the capital of France?\nAnd of Italy?\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let replies: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(replies.len() >= 2, "two replies expected: {stdout}");
    assert!(stdout.contains("Paris"), "{stdout}");
    assert!(stdout.contains("Rome"), "{stdout}");
}

#[test]
fn a_model_without_a_chat_template_is_refused() {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/llama");
    let out = chat(&["--model", model, "--device", "cpu"], "hi\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("chat template"),
        "{err}"
    );
}
