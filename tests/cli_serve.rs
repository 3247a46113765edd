//! `ninfer-serve` run the way a user runs it: a process listening on a free port, asked
//! over HTTP, on the CPU backend.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// A running server, killed when dropped.
struct Server {
    child: Child,
    port: u16,
    /// Its stderr lines after the "listening on" one.
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server on a free port and waits for its "listening on" line.
fn serve(args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ninfer-serve"))
        .env("NINFER_LOG", "ninfer::serve=debug")
        .args(["--device", "cpu", "--port", "0"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ninfer-serve binary starts");
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let mut seen = String::new();
    let port = loop {
        let line = match lines.next() {
            Some(Ok(l)) => l,
            _ => panic!("the server ended before listening:\n{seen}"),
        };
        seen.push_str(&line);
        seen.push('\n');
        if let Some(rest) = line.split("listening on http://127.0.0.1:").nth(1) {
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            break digits.parse().expect("a port number");
        }
    };
    // Keep reading stderr so that the server never blocks on a full pipe.
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().unwrap().push(line);
        }
    });
    Server { child, port, log }
}

/// One HTTP/1.0 exchange (the server closes the connection after the answer, so the body
/// is whatever comes before the end): (status, body).
fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("the server accepts");
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).expect("request written");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("answer read");
    let (head, body) = answer.split_once("\r\n\r\n").expect("headers end");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    (status, body.to_string())
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// The JSON objects of a server-sent-event body, and whether it ended with [DONE].
fn events(body: &str) -> (Vec<Value>, bool) {
    let data: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    let done = data.last() == Some(&"[DONE]");
    let objects = data
        .iter()
        .filter(|d| **d != "[DONE]")
        .map(|d| json(d))
        .collect();
    (objects, done)
}

const QUESTION: &str = r#"{"messages":[{"role":"user","content":"What is the capital of France?"}],"temperature":0,"max_tokens":16"#;

/// Each request's answer when all are sent at once (one thread each), in request order.
fn at_once<T: Sync>(requests: &[T], ask: impl Fn(&T) -> String + Sync) -> Vec<String> {
    std::thread::scope(|s| {
        let ask = &ask;
        let handles: Vec<_> = requests.iter().map(|r| s.spawn(move || ask(r))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a request thread"))
            .collect()
    })
}

/// The server logged a batched step of `lanes` lanes (`NINFER_LOG=ninfer::serve=debug`).
fn assert_batched(server: &Server, lanes: usize) {
    let log = server.log.lock().unwrap().join("\n");
    assert!(
        log.contains(&format!("a step of {lanes} lanes")),
        "no batched step was logged:\n{log}"
    );
}

#[test]
fn the_default_model_answers_chat_and_completion_requests_whole_and_streamed() {
    let server = serve(&[]);
    let p = server.port;

    let (status, body) = http(p, "GET", "/v1/models", "");
    assert_eq!(status, 200, "{body}");
    let id = json(&body)["data"][0]["id"]
        .as_str()
        .expect("a model id")
        .to_string();

    let (status, body) = http(p, "POST", "/v1/chat/completions", &format!("{QUESTION}}}"));
    assert_eq!(status, 200, "{body}");
    let answer = json(&body);
    assert_eq!(answer["object"], "chat.completion");
    assert_eq!(answer["model"], id.as_str());
    let content = answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(content.contains("Paris"), "{content}");
    assert_eq!(answer["choices"][0]["message"]["role"], "assistant");
    let usage = &answer["usage"];
    let (prompt, completion) = (
        usage["prompt_tokens"].as_u64().unwrap(),
        usage["completion_tokens"].as_u64().unwrap(),
    );
    assert!(prompt > 5 && (1..=16).contains(&completion), "{usage}");
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), prompt + completion);

    // Streamed, greedy: the same text, in pieces, role first, finish last, then [DONE].
    let (status, body) = http(
        p,
        "POST",
        "/v1/chat/completions",
        &format!("{QUESTION},\"stream\":true}}"),
    );
    assert_eq!(status, 200, "{body}");
    let (chunks, done) = events(&body);
    assert!(done, "{body}");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(streamed, content);
    let last = chunks.last().unwrap();
    assert_eq!(last["object"], "chat.completion.chunk");
    assert_eq!(
        last["choices"][0]["finish_reason"],
        answer["choices"][0]["finish_reason"]
    );

    // Plain text with a stop string: the text ends before it.
    let (status, body) = http(
        p,
        "POST",
        "/v1/completions",
        r#"{"prompt":"The capital of France is","temperature":0,"max_tokens":12,"stop":"."}"#,
    );
    assert_eq!(status, 200, "{body}");
    let answer = json(&body);
    let text = answer["choices"][0]["text"].as_str().unwrap();
    assert!(text.contains("Paris") && !text.contains('.'), "{text}");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");

    // max_tokens reached: finish_reason length, exactly that many tokens.
    let (status, body) = http(
        p,
        "POST",
        "/v1/completions",
        r#"{"prompt":"Once upon a time","temperature":0,"max_tokens":3,"stream":true}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (chunks, done) = events(&body);
    assert!(done);
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "length"
    );
}

#[test]
fn requests_decoded_together_get_the_answers_they_get_alone() {
    let server = serve(&["--lanes", "4"]);
    let p = server.port;
    let questions = [
        "What is the capital of France?",
        "What is the capital of Germany?",
        "Name a large animal.",
        "What is two plus two?",
        "What colour is the sky?",
    ];
    let ask = move |q: &str| {
        let body = format!(
            r#"{{"messages":[{{"role":"user","content":"{q}"}}],"temperature":0,"max_tokens":24}}"#
        );
        let (status, answer) = http(p, "POST", "/v1/chat/completions", &body);
        assert_eq!(status, 200, "{answer}");
        json(&answer)["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let alone: Vec<String> = questions.iter().map(|q| ask(q)).collect();
    // Five at once: four share each step, the fifth joins when a lane frees.
    let together = at_once(&questions, |q| ask(q));
    assert_eq!(together, alone);
    assert_batched(&server, 4);
    assert!(alone[0].contains("Paris"), "{alone:?}");
    assert!(alone.iter().all(|a| !a.is_empty()), "{alone:?}");
}

#[test]
fn a_gdn_model_decodes_requests_together_as_it_does_alone() {
    // Qwen3.5's GDN layers keep a recurrent state per lane: lanes that join and leave must
    // each keep their own.
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/qwen35_r2");
    let server = serve(&["--model", model, "--lanes", "3"]);
    let p = server.port;
    let ask = move |prompt: &str, n: usize| {
        let body = format!(r#"{{"prompt":"{prompt}","temperature":0,"max_tokens":{n}}}"#);
        let (status, answer) = http(p, "POST", "/v1/completions", &body);
        assert_eq!(status, 200, "{answer}");
        json(&answer)["choices"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // Different lengths, so that lanes leave while others run on.
    let requests = [
        ("The river", 6),
        ("Once upon a time", 12),
        ("In the north", 9),
        ("A king", 15),
    ];
    let alone: Vec<String> = requests.iter().map(|&(q, n)| ask(q, n)).collect();
    let together = at_once(&requests, |&(q, n)| ask(q, n));
    assert_eq!(together, alone);
    assert_batched(&server, 3);
}

#[test]
fn bad_requests_get_an_error_object_and_a_4xx() {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/llama");
    let server = serve(&["--model", model]);
    let p = server.port;
    let cases = [
        (
            "POST",
            "/v1/chat/completions",
            r#"{"messages":[]}"#,
            400,
            "messages is empty",
        ),
        (
            "POST",
            "/v1/chat/completions",
            "{not json",
            400,
            "not a valid request",
        ),
        (
            "POST",
            "/v1/completions",
            r#"{"prompt":"a","n":3}"#,
            400,
            "one choice",
        ),
        // The tiny model has no chat template: chat is refused, plain text is served.
        (
            "POST",
            "/v1/chat/completions",
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
            400,
            "no chat template",
        ),
        ("GET", "/v1/nothing", "", 404, "no such endpoint"),
    ];
    for (method, path, body, want, says) in cases {
        let (status, answer) = http(p, method, path, body);
        assert_eq!(status, want, "{path} {body}: {answer}");
        let message = json(&answer)["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(says), "{path} {body}: {message}");
    }
    let (status, body) = http(
        p,
        "POST",
        "/v1/completions",
        r#"{"prompt":"hello","max_tokens":4,"seed":3}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["usage"]["completion_tokens"], 4);
}

#[test]
fn bad_flags_are_refused_with_a_sentence() {
    for (args, says) in [
        (&["--max-tokens", "0"][..], "--max-tokens"),
        (&["--lanes", "9"][..], "1 to 8"),
        (&["--port", "70000"][..], "70000"),
        (&["--host", "203.0.113.1"][..], "cannot listen on"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ninfer-serve"))
            .args(["--device", "cpu"])
            .args(args)
            .output()
            .expect("the binary runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
