//! The OpenAI-compatible wire format: the request bodies the server accepts, the responses
//! and stream chunks it writes, and the checks that turn a request into a [`Job`]'s fields.
//!
//! Fields a client may send that do not change what this server does (`frequency_penalty`,
//! `user`, `logprobs: false`, ...) are accepted and ignored; ones it cannot honour (`n` above
//! 1) are refused with a sentence, never silently dropped.

use serde::{Deserialize, Serialize};

use super::engine::{Finish, Prompt};
use crate::engine::generate::Sampling;
use crate::model::ChatMessage;

/// `POST /v1/chat/completions`.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<WireMessage>,
    #[serde(flatten)]
    pub common: CommonParams,
    #[serde(default)]
    pub max_completion_tokens: Option<usize>,
}

/// `POST /v1/completions`.
#[derive(Debug, Deserialize)]
pub struct CompletionRequest {
    #[serde(default)]
    pub model: Option<String>,
    pub prompt: PromptField,
    #[serde(flatten)]
    pub common: CommonParams,
}

/// The parameters both endpoints share.
#[derive(Debug, Default, Deserialize)]
pub struct CommonParams {
    #[serde(default)]
    pub max_tokens: Option<usize>,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub top_p: Option<f32>,
    /// Not in OpenAI's API; llama.cpp's and vLLM's servers take it too.
    #[serde(default)]
    pub top_k: Option<usize>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stop: Option<StopField>,
    #[serde(default)]
    pub n: Option<usize>,
}

/// `stop`: one string or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum StopField {
    One(String),
    Many(Vec<String>),
}

/// `prompt`: one string or a list holding one.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum PromptField {
    One(String),
    Many(Vec<String>),
}

/// A chat message; `content` is a string or a list of parts, of which the text parts count.
#[derive(Debug, Deserialize)]
pub struct WireMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<Content>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

/// A request checked and turned into what the engine runs.
#[derive(Debug)]
pub struct Checked {
    pub prompt: Prompt,
    pub max_tokens: usize,
    pub sampling: Sampling,
    pub stop: Vec<String>,
    pub stream: bool,
}

/// The most stop strings a request may give (as OpenAI's API).
const MAX_STOPS: usize = 4;

impl CommonParams {
    /// The job for `prompt` with these parameters, checked; `max_tokens` falls back to
    /// `default`, an absent seed to `seed`.
    fn check(
        &self,
        prompt: Prompt,
        max_tokens: Option<usize>,
        default: usize,
        seed: u64,
    ) -> Result<Checked, String> {
        if let Some(n) = self.n {
            if n != 1 {
                return Err(format!(
                    "n = {n}: this server generates one choice per request"
                ));
            }
        }
        let temperature = self.temperature.unwrap_or(1.0);
        if !temperature.is_finite() || !(0.0..=2.0).contains(&temperature) {
            return Err(format!(
                "temperature = {temperature}: it must be between 0 and 2"
            ));
        }
        let top_p = self.top_p.unwrap_or(1.0);
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(format!("top_p = {top_p}: it must be in (0, 1]"));
        }
        let max_tokens = max_tokens.unwrap_or(default);
        if max_tokens == 0 {
            return Err("max_tokens must be at least 1".into());
        }
        let stop = match &self.stop {
            None => Vec::new(),
            Some(StopField::One(s)) => vec![s.clone()],
            Some(StopField::Many(v)) => v.clone(),
        };
        if stop.len() > MAX_STOPS {
            return Err(format!(
                "stop: {} strings given, at most {MAX_STOPS} are taken",
                stop.len()
            ));
        }
        let sampling = Sampling {
            temperature,
            top_k: self.top_k.unwrap_or(0),
            top_p,
            seed: self.seed.unwrap_or(seed),
        };
        Ok(Checked {
            prompt,
            max_tokens,
            sampling,
            stop,
            stream: self.stream.unwrap_or(false),
        })
    }
}

impl ChatRequest {
    /// `default_max` stands in for an absent `max_tokens`; `seed` for an absent seed.
    pub fn check(&self, default_max: usize, seed: u64) -> Result<Checked, String> {
        if self.messages.is_empty() {
            return Err("messages is empty: give at least one message".into());
        }
        let mut messages = Vec::with_capacity(self.messages.len());
        for (i, m) in self.messages.iter().enumerate() {
            let content = match &m.content {
                None => String::new(),
                Some(Content::Text(t)) => t.clone(),
                Some(Content::Parts(parts)) => {
                    if let Some(p) = parts.iter().find(|p| p.kind != "text") {
                        return Err(format!(
                            "messages[{i}] has a content part of type {:?}: this server takes text only",
                            p.kind
                        ));
                    }
                    parts
                        .iter()
                        .filter_map(|p| p.text.as_deref())
                        .collect::<Vec<_>>()
                        .join("")
                }
            };
            messages.push(ChatMessage::new(m.role.clone(), content));
        }
        let max = self.max_completion_tokens.or(self.common.max_tokens);
        self.common
            .check(Prompt::Chat(messages), max, default_max, seed)
    }
}

/// OpenAI's default `max_tokens` for `/v1/completions`.
pub const COMPLETION_DEFAULT_MAX_TOKENS: usize = 16;

impl CompletionRequest {
    pub fn check(&self, seed: u64) -> Result<Checked, String> {
        let prompt = match &self.prompt {
            PromptField::One(p) => p.clone(),
            PromptField::Many(v) if v.len() == 1 => v[0].clone(),
            PromptField::Many(v) => {
                return Err(format!(
                    "prompt holds {} strings: this server takes one per request",
                    v.len()
                ))
            }
        };
        if prompt.is_empty() {
            return Err("prompt is empty".into());
        }
        let max = self.common.max_tokens;
        self.common.check(
            Prompt::Text(prompt),
            max,
            COMPLETION_DEFAULT_MAX_TOKENS,
            seed,
        )
    }
}

/// `finish_reason` as the API spells it.
pub fn finish_reason(f: Finish) -> &'static str {
    match f {
        Finish::Stop => "stop",
        Finish::Length => "length",
    }
}

#[derive(Debug, Serialize)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
}

impl Usage {
    pub fn new(prompt_tokens: usize, completion_tokens: usize) -> Self {
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct AssistantMessage {
    pub role: &'static str,
    pub content: String,
}

#[derive(Debug, Serialize)]
pub struct ChatChoice {
    pub index: usize,
    pub message: AssistantMessage,
    pub finish_reason: &'static str,
}

/// The whole answer of a chat request without `stream`.
#[derive(Debug, Serialize)]
pub struct ChatCompletion {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<ChatChoice>,
    pub usage: Usage,
}

#[derive(Debug, Default, Serialize)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ChunkChoice {
    pub index: usize,
    pub delta: Delta,
    pub finish_reason: Option<&'static str>,
}

/// One event of a streamed chat answer.
#[derive(Debug, Serialize)]
pub struct ChatChunk {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<ChunkChoice>,
}

#[derive(Debug, Serialize)]
pub struct TextChoice {
    pub index: usize,
    pub text: String,
    pub logprobs: Option<()>,
    pub finish_reason: Option<&'static str>,
}

/// The answer of a completion request, whole (with `usage`) or one stream event (without).
#[derive(Debug, Serialize)]
pub struct TextCompletion {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<TextChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

#[derive(Debug, Serialize)]
pub struct ModelCard {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub owned_by: &'static str,
}

/// `GET /v1/models`.
#[derive(Debug, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<ModelCard>,
}

#[derive(Debug, Serialize)]
pub struct ErrorDetail {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub param: Option<String>,
    pub code: Option<String>,
}

/// The body of every error answer.
#[derive(Debug, Serialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

impl ErrorBody {
    pub fn new(message: impl Into<String>, kind: &'static str) -> Self {
        ErrorBody {
            error: ErrorDetail {
                message: message.into(),
                kind,
                param: None,
                code: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(body: &str) -> Result<Checked, String> {
        let r: ChatRequest = serde_json::from_str(body).map_err(|e| e.to_string())?;
        r.check(512, 7)
    }

    #[test]
    fn a_chat_request_takes_openai_defaults() {
        let c = chat(r#"{"model":"x","messages":[{"role":"user","content":"hi"}]}"#).unwrap();
        assert_eq!(c.max_tokens, 512);
        assert_eq!(c.sampling.temperature, 1.0);
        assert_eq!(c.sampling.top_p, 1.0);
        assert_eq!(c.sampling.seed, 7);
        assert!(!c.stream);
        match c.prompt {
            Prompt::Chat(m) => {
                assert_eq!((m[0].role.as_str(), m[0].content.as_str()), ("user", "hi"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn content_parts_join_and_unknown_fields_pass() {
        let c = chat(
            r#"{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
                "frequency_penalty":0,"max_completion_tokens":5,"stop":"\n","stream":true}"#,
        )
        .unwrap();
        assert_eq!(c.max_tokens, 5);
        assert_eq!(c.stop, vec!["\n".to_string()]);
        assert!(c.stream);
        match c.prompt {
            Prompt::Chat(m) => assert_eq!(m[0].content, "ab"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_with_a_reason() {
        for (body, says) in [
            (r#"{"messages":[]}"#, "messages is empty"),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"n":2}"#,
                "one choice",
            ),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"temperature":3}"#,
                "between 0 and 2",
            ),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"top_p":0}"#,
                "(0, 1]",
            ),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"max_tokens":0}"#,
                "at least 1",
            ),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"stop":["1","2","3","4","5"]}"#,
                "at most 4",
            ),
            (
                r#"{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}"#,
                "text only",
            ),
            (r#"{"messages":"hi"}"#, "invalid type"),
        ] {
            let e = chat(body).unwrap_err();
            assert!(e.contains(says), "{body}: {e}");
        }
    }

    #[test]
    fn a_completion_request_defaults_to_sixteen_tokens() {
        let r: CompletionRequest = serde_json::from_str(r#"{"prompt":["Once"]}"#).unwrap();
        let c = r.check(1).unwrap();
        assert_eq!(c.max_tokens, COMPLETION_DEFAULT_MAX_TOKENS);
        assert!(matches!(c.prompt, Prompt::Text(ref t) if t == "Once"));
        let r: CompletionRequest = serde_json::from_str(r#"{"prompt":["a","b"]}"#).unwrap();
        assert!(r.check(1).unwrap_err().contains("one per request"));
    }

    #[test]
    fn chunks_leave_out_absent_fields() {
        let chunk = ChatChunk {
            id: "c".into(),
            object: "chat.completion.chunk",
            created: 0,
            model: "m".into(),
            choices: vec![ChunkChoice {
                index: 0,
                delta: Delta {
                    role: None,
                    content: Some("x".into()),
                },
                finish_reason: None,
            }],
        };
        let s = serde_json::to_string(&chunk).unwrap();
        assert!(s.contains(r#""delta":{"content":"x"}"#), "{s}");
        assert!(s.contains(r#""finish_reason":null"#), "{s}");
    }
}
