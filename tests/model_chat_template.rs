//! Chat templates rendered by ninfer against transformers' `apply_chat_template` (references made
//! by tools/make_chat_refs.py, committed in tests/fixtures/chat_template/cases.json).

use std::path::PathBuf;

use ninfer::model::{
    ensure_default_model, ChatMessage, ChatTemplate, GgufFile, ModelError, Tokenizer,
};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chat_template")
}

#[test]
fn templates_render_as_transformers_does() {
    let gguf = GgufFile::open(ensure_default_model().expect("the default model must be fetchable"))
        .unwrap();
    let tok = Tokenizer::from_gguf(&gguf).unwrap();
    let smollm2 = ChatTemplate::from_gguf(&gguf, tok.bos_token(), tok.eos_token())
        .unwrap()
        .expect("SmolLM2's GGUF carries a chat template");
    let features_src = std::fs::read_to_string(fixtures().join("features.jinja")).unwrap();

    let cases: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("cases.json")).unwrap())
            .unwrap();
    assert!(cases.len() >= 10);
    let (mut rendered, mut errors) = (0, 0);
    for case in &cases {
        let label = format!(
            "{} / {} / agp={}",
            case["template"], case["conversation"], case["add_generation_prompt"]
        );
        let features;
        let template = match case["template"].as_str().unwrap() {
            "smollm2" => &smollm2,
            "features" => {
                features = ChatTemplate::new(
                    &features_src,
                    "features.jinja",
                    case["bos_token"].as_str(),
                    case["eos_token"].as_str(),
                )
                .unwrap();
                &features
            }
            other => panic!("unknown template {other}"),
        };
        let tools = case.get("tools").filter(|t| !t.is_null());
        let got = template.render_json(
            &case["messages"],
            case["add_generation_prompt"].as_bool().unwrap(),
            tools,
            None,
        );
        match (case.get("expected").and_then(|e| e.as_str()), got) {
            (Some(want), Ok(got)) => {
                assert_eq!(got, want, "{label}");
                rendered += 1;
            }
            (None, Err(e)) => {
                let want = case["error"].as_str().unwrap();
                assert!(matches!(e, ModelError::ChatRender { .. }), "{label}: {e}");
                assert!(
                    e.to_string().contains(want),
                    "{label}: {e} should contain {want:?}"
                );
                errors += 1;
            }
            (Some(_), Err(e)) => panic!("{label}: transformers renders it, ninfer fails: {e}"),
            (None, Ok(got)) => panic!("{label}: transformers fails, ninfer renders {got:?}"),
        }
    }
    assert!(
        rendered >= 8 && errors >= 2,
        "{rendered} rendered, {errors} errors"
    );
}

#[test]
fn plain_messages_render_through_the_typed_api() {
    let gguf = GgufFile::open(ensure_default_model().expect("the default model must be fetchable"))
        .unwrap();
    let t = ChatTemplate::from_gguf(&gguf, None, None).unwrap().unwrap();
    let out = t.render(&[ChatMessage::new("user", "Hi")], true).unwrap();
    assert_eq!(
        out,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
}
