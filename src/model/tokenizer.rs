//! The tokenizer: a `tokenizers::Tokenizer`, loaded from an HF `tokenizer.json` or built from a
//! GGUF's `tokenizer.ggml.*` metadata, plus the special ids the engine needs (BOS, EOS and the
//! other ids that end a generation).
//!
//! From a GGUF (`tokenizer.ggml.model = "gpt2"`, GPT-2 style byte-level BPE) it builds what HF's
//! `tokenizer.json` for the same model holds: a BPE model over `tokenizer.ggml.tokens` (already
//! spelled in the byte-level alphabet, `Ġ` for a space) and `tokenizer.ggml.merges`; the
//! pre-tokenizer that `tokenizer.ggml.pre` names ([`pre_tokenizer_for`]); a ByteLevel decoder;
//! control tokens (`token_type` 3) as special added tokens and user-defined ones (4) as plain
//! added tokens, so they are matched whole in text; BOS prepended only when
//! `tokenizer.ggml.add_bos_token` is true.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior};

use super::error::ModelError;
use super::gguf::GgufFile;

/// GGUF `token_type` values (llama.cpp's `llama_token_type`).
pub mod token_type {
    pub const NORMAL: i64 = 1;
    pub const UNKNOWN: i64 = 2;
    pub const CONTROL: i64 = 3;
    pub const USER_DEFINED: i64 = 4;
    pub const UNUSED: i64 = 5;
    pub const BYTE: i64 = 6;
}

/// GPT-2's split regex, which ByteLevel applies itself when `use_regex` is on.
const GPT2_SPLIT: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// Llama 3's split regex (tiktoken cl100k style).
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's split regex (single digits).
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The pre-tokenizer for a GGUF `tokenizer.ggml.pre` name, or `None` for a name ninfer does
/// not know. The groups follow llama.cpp's; each reproduces the published `tokenizer.json`:
///
/// - `smollm`, `starcoder`, `refact`, `codeshell`, `command-r`: digits split one by one, then
///   the GPT-2 regex: `Sequence[Digits(individual), ByteLevel(use_regex)]`, exactly what
///   SmolLM2-135M-Instruct's tokenizer.json holds.
/// - `gpt-2`, `gpt2`, `default`, `phi-2`, `roberta-bpe`: `ByteLevel(use_regex)`.
/// - `llama3`, `llama-v3`, `llama-bpe`, `falcon3`, `smaug-bpe`, `dbrx`: Llama 3's regex, then
///   `ByteLevel(use_regex = false)`.
/// - `qwen2`, `deepseek-r1-qwen`, `megrez`: Qwen2's regex, then `ByteLevel(use_regex = false)`.
pub fn pre_tokenizer_for(pre: &str) -> Option<PreTokenizerWrapper> {
    let byte_level = |use_regex| ByteLevel::new(false, true, use_regex);
    let split_then_bytes = |regex: &str| -> PreTokenizerWrapper {
        let split = Split::new(
            SplitPattern::Regex(regex.to_string()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .expect("the built-in split regexes compile");
        Sequence::new(vec![split.into(), byte_level(false).into()]).into()
    };
    Some(match pre {
        "smollm" | "starcoder" | "refact" | "codeshell" | "command-r" => {
            Sequence::new(vec![Digits::new(true).into(), byte_level(true).into()]).into()
        }
        "gpt-2" | "gpt2" | "default" | "phi-2" | "roberta-bpe" => byte_level(true).into(),
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "smaug-bpe" | "dbrx" => {
            split_then_bytes(LLAMA3_SPLIT)
        }
        "qwen2" | "deepseek-r1-qwen" | "megrez" => split_then_bytes(QWEN2_SPLIT),
        _ => return None,
    })
}

/// The GPT-2 regex as text, for documentation and tests.
pub fn gpt2_split_regex() -> &'static str {
    GPT2_SPLIT
}

/// A tokenizer and the special ids around it.
#[derive(Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    source: PathBuf,
    bos_token: Option<String>,
    eos_token: Option<String>,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
    pad_id: Option<u32>,
    unk_id: Option<u32>,
    stop_ids: Vec<u32>,
    add_bos: bool,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("source", &self.source)
            .field("vocab_size", &self.vocab_size())
            .field("bos", &self.bos_token)
            .field("eos", &self.eos_token)
            .field("stop_ids", &self.stop_ids)
            .finish()
    }
}

/// A special token in `tokenizer_config.json`: a string or `{"content": ...}`.
fn token_string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content")?.as_str().map(str::to_string),
        _ => None,
    }
}

fn ids_of(v: Option<&Value>) -> Vec<u32> {
    match v {
        Some(Value::Number(n)) => n.as_u64().map(|n| n as u32).into_iter().collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_u64())
            .map(|n| n as u32)
            .collect(),
        _ => vec![],
    }
}

fn read_json(path: &Path) -> Result<Option<Value>, ModelError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| ModelError::Tokenizer {
                path: path.to_path_buf(),
                problem: format!("it is not valid JSON ({e})"),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ModelError::io(path, e)),
    }
}

impl Tokenizer {
    /// Builds the tokenizer that a GGUF's `tokenizer.ggml.*` metadata describes.
    pub fn from_gguf(gguf: &GgufFile) -> Result<Self, ModelError> {
        let path = gguf.path().to_path_buf();
        let bad = |problem: String| ModelError::Tokenizer {
            path: path.clone(),
            problem,
        };
        let model =
            gguf.get_str("tokenizer.ggml.model")
                .ok_or_else(|| ModelError::MissingTokenizer {
                    path: path.clone(),
                    problem: "the GGUF has no tokenizer.ggml.model metadata".into(),
                })?;
        if model != "gpt2" {
            return Err(bad(format!(
                "tokenizer.ggml.model is {model:?}; ninfer builds GPT-2 style byte-level BPE (\"gpt2\") tokenizers from GGUF files"
            )));
        }
        let tokens = gguf
            .get_str_array("tokenizer.ggml.tokens")?
            .ok_or_else(|| ModelError::MissingTokenizer {
                path: path.clone(),
                problem: "the GGUF has no tokenizer.ggml.tokens".into(),
            })?;
        if tokens.is_empty() || tokens.len() > u32::MAX as usize {
            return Err(bad(format!(
                "tokenizer.ggml.tokens holds {} tokens",
                tokens.len()
            )));
        }
        let merges = gguf
            .get_str_array("tokenizer.ggml.merges")?
            .ok_or_else(|| {
                bad("a gpt2 tokenizer needs tokenizer.ggml.merges, which is missing".into())
            })?;
        let types = gguf.get_int_array("tokenizer.ggml.token_type")?;
        if let Some(t) = &types {
            if t.len() != tokens.len() {
                return Err(bad(format!(
                    "tokenizer.ggml.token_type has {} entries for {} tokens",
                    t.len(),
                    tokens.len()
                )));
            }
        }

        let vocab: Vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        let merges = merges
            .iter()
            .enumerate()
            .map(|(i, m)| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| {
                        bad(format!(
                            "merge {i} ({m:?}) is not two tokens separated by a space"
                        ))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| {
                bad(format!(
                    "its BPE vocabulary and merges do not fit together ({e})"
                ))
            })?;

        let pre = match gguf.get_str("tokenizer.ggml.pre") {
            Some(p) => p.to_string(),
            None => {
                tracing::warn!(
                    "{} has no tokenizer.ggml.pre; using the GPT-2 pre-tokenizer",
                    path.display()
                );
                "default".into()
            }
        };
        let pre_tokenizer = pre_tokenizer_for(&pre).ok_or_else(|| {
            bad(format!(
                "its pre-tokenizer tokenizer.ggml.pre = {pre:?} is not one ninfer knows (smollm, starcoder, gpt-2, default, llama-bpe, llama3, qwen2, ...)"
            ))
        })?;

        let mut inner = tokenizers::Tokenizer::new(bpe);
        inner.with_pre_tokenizer(Some(pre_tokenizer));
        inner.with_decoder(Some(ByteLevel::new(false, true, true)));

        let id = |key: &str| -> Result<Option<u32>, ModelError> {
            match gguf.get(key) {
                None => Ok(None),
                Some(v) => match v.as_u64() {
                    Some(n) if (n as usize) < tokens.len() => Ok(Some(n as u32)),
                    _ => Err(bad(format!(
                        "{key} = {v:?} is not a token id of this vocabulary"
                    ))),
                },
            }
        };
        let bos_id = id("tokenizer.ggml.bos_token_id")?;
        let eos_id = id("tokenizer.ggml.eos_token_id")?;
        let add_bos = gguf
            .get_bool("tokenizer.ggml.add_bos_token")
            .unwrap_or(false);

        if let Some(types) = &types {
            let specials: Vec<AddedToken> = tokens
                .iter()
                .zip(types)
                .filter(|(_, &t)| t == token_type::CONTROL)
                .map(|(tok, _)| AddedToken::from(tok.to_string(), true).normalized(false))
                .collect();
            inner
                .add_special_tokens(specials)
                .map_err(|e| bad(format!("cannot add its control tokens ({e})")))?;
            let user: Vec<AddedToken> = tokens
                .iter()
                .zip(types)
                .filter(|(_, &t)| t == token_type::USER_DEFINED)
                .map(|(tok, _)| AddedToken::from(tok.to_string(), false).normalized(false))
                .collect();
            inner
                .add_tokens(user)
                .map_err(|e| bad(format!("cannot add its user-defined tokens ({e})")))?;
        }
        match (add_bos, bos_id) {
            (true, Some(b)) => {
                let bos = tokens[b as usize];
                let tp = TemplateProcessing::builder()
                    .try_single(format!("{bos} $A"))
                    .and_then(|t| t.try_pair(format!("{bos} $A:0 {bos}:1 $B:1")))
                    .map_err(|e| bad(format!("cannot make the BOS template ({e})")))?
                    .special_tokens(vec![(bos.to_string(), b)])
                    .build()
                    .map_err(|e| bad(format!("cannot make the BOS template ({e})")))?;
                inner.with_post_processor(Some(tp));
            }
            (true, None) => return Err(bad(
                "tokenizer.ggml.add_bos_token is true but there is no tokenizer.ggml.bos_token_id"
                    .into(),
            )),
            (false, _) => {
                inner.with_post_processor(Some(ByteLevel::new(false, false, true)));
            }
        }

        let mut stop_ids: Vec<u32> = Vec::new();
        for key in [
            "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.eot_token_id",
            "tokenizer.ggml.eom_token_id",
        ] {
            if let Some(i) = id(key)? {
                if !stop_ids.contains(&i) {
                    stop_ids.push(i);
                }
            }
        }
        Ok(Tokenizer {
            source: path.clone(),
            bos_token: bos_id.map(|i| tokens[i as usize].to_string()),
            eos_token: eos_id.map(|i| tokens[i as usize].to_string()),
            bos_id,
            eos_id,
            pad_id: id("tokenizer.ggml.padding_token_id")?,
            unk_id: id("tokenizer.ggml.unknown_token_id")?,
            stop_ids,
            add_bos,
            inner,
        })
    }

    /// Loads `dir/tokenizer.json`, with the special tokens named by `tokenizer_config.json` and
    /// the EOS ids of `config.json` and `generation_config.json` (those files are optional).
    pub fn from_hf_dir(dir: impl AsRef<Path>) -> Result<Self, ModelError> {
        let dir = dir.as_ref();
        let path = dir.join("tokenizer.json");
        if !path.is_file() {
            return Err(ModelError::MissingTokenizer {
                path: dir.to_path_buf(),
                problem: "the directory has no tokenizer.json".into(),
            });
        }
        let inner = tokenizers::Tokenizer::from_file(&path).map_err(|e| ModelError::Tokenizer {
            path: path.clone(),
            problem: e.to_string(),
        })?;
        let tok_cfg = read_json(&dir.join("tokenizer_config.json"))?.unwrap_or(Value::Null);
        let bos_token = token_string(tok_cfg.get("bos_token"));
        let eos_token = token_string(tok_cfg.get("eos_token"));
        let lookup = |t: &Option<String>| t.as_deref().and_then(|t| inner.token_to_id(t));
        let bos_id = lookup(&bos_token);
        let eos_id = lookup(&eos_token);
        let pad_id = lookup(&token_string(tok_cfg.get("pad_token")));
        let unk_id = lookup(&token_string(tok_cfg.get("unk_token")));
        let mut stop_ids: Vec<u32> = eos_id.into_iter().collect();
        for file in ["config.json", "generation_config.json"] {
            if let Some(cfg) = read_json(&dir.join(file))? {
                let mut ids = ids_of(cfg.get("eos_token_id"));
                if let Some(t) = cfg.get("text_config") {
                    ids.extend(ids_of(t.get("eos_token_id")));
                }
                for i in ids {
                    if !stop_ids.contains(&i) {
                        stop_ids.push(i);
                    }
                }
            }
        }
        let add_bos = tok_cfg
            .get("add_bos_token")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(Tokenizer {
            inner,
            source: path,
            bos_token,
            eos_token,
            bos_id,
            eos_id,
            pad_id,
            unk_id,
            stop_ids,
            add_bos,
        })
    }

    /// Token ids of `text`. With `add_special_tokens`, the tokenizer's post-processor runs (it
    /// prepends BOS where the model wants it).
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>, ModelError> {
        self.inner
            .encode_fast(text, add_special_tokens)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| ModelError::Encode(e.to_string()))
    }

    /// Text of `ids` (invalid UTF-8 from partial byte sequences becomes U+FFFD).
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String, ModelError> {
        self.inner
            .decode(ids, skip_special_tokens)
            .map_err(|e| ModelError::Encode(e.to_string()))
    }

    /// The underlying `tokenizers::Tokenizer` (for streaming decode, offsets, ...).
    /// A tokenizer that knows no tokens, for a model without one (a synthetic model is fed
    /// token ids, never text): encoding anything fails, decoding gives nothing.
    pub fn without_vocabulary(source: &Path) -> Self {
        let model = tokenizers::models::wordlevel::WordLevel::default();
        Tokenizer {
            inner: tokenizers::Tokenizer::new(model),
            source: source.to_path_buf(),
            bos_token: None,
            eos_token: None,
            bos_id: None,
            eos_id: None,
            pad_id: None,
            unk_id: None,
            stop_ids: Vec::new(),
            add_bos: false,
        }
    }

    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    /// The file it came from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// Vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    pub fn bos_token(&self) -> Option<&str> {
        self.bos_token.as_deref()
    }

    pub fn eos_token(&self) -> Option<&str> {
        self.eos_token.as_deref()
    }

    pub fn bos_id(&self) -> Option<u32> {
        self.bos_id
    }

    pub fn eos_id(&self) -> Option<u32> {
        self.eos_id
    }

    pub fn pad_id(&self) -> Option<u32> {
        self.pad_id
    }

    pub fn unk_id(&self) -> Option<u32> {
        self.unk_id
    }

    /// Whether encoding with special tokens prepends BOS.
    pub fn adds_bos(&self) -> bool {
        self.add_bos
    }

    /// Every id that ends a generation (EOS first, then EOT/EOM or the config's extra EOS ids).
    pub fn stop_ids(&self) -> &[u32] {
        &self.stop_ids
    }

    pub fn is_stop(&self, id: u32) -> bool {
        self.stop_ids.contains(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::gguf::{GgufBuilder, GgufValue, GgufValueType};

    fn strings(v: &[&str]) -> GgufValue {
        GgufValue::Array(
            GgufValueType::String,
            v.iter().map(|s| GgufValue::String(s.to_string())).collect(),
        )
    }

    /// A tiny byte-level vocabulary: single chars, "Ġ", two merges and a control token.
    fn tiny(pre: &str, add_bos: bool) -> (tempfile::TempDir, GgufFile) {
        let tokens = ["<|end|>", "h", "i", "Ġ", "1", "2", "hi", "Ġhi", "!"];
        let types: Vec<GgufValue> = tokens
            .iter()
            .map(|t| GgufValue::I32(if t.starts_with("<|") { 3 } else { 1 }))
            .collect();
        let mut b = GgufBuilder::new();
        b.meta("general.architecture", GgufValue::String("llama".into()))
            .meta("tokenizer.ggml.model", GgufValue::String("gpt2".into()))
            .meta("tokenizer.ggml.pre", GgufValue::String(pre.into()))
            .meta("tokenizer.ggml.tokens", strings(&tokens))
            .meta(
                "tokenizer.ggml.token_type",
                GgufValue::Array(GgufValueType::I32, types),
            )
            .meta("tokenizer.ggml.merges", strings(&["h i", "Ġ hi"]))
            .meta("tokenizer.ggml.bos_token_id", GgufValue::U32(0))
            .meta("tokenizer.ggml.eos_token_id", GgufValue::U32(0))
            .meta("tokenizer.ggml.add_bos_token", GgufValue::Bool(add_bos));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.gguf");
        std::fs::write(&p, b.build()).unwrap();
        let g = GgufFile::open(&p).unwrap();
        (dir, g)
    }

    #[test]
    fn builds_byte_level_bpe_from_gguf() {
        let (_d, g) = tiny("smollm", false);
        let t = Tokenizer::from_gguf(&g).unwrap();
        assert_eq!(t.encode("hi hi!", true).unwrap(), vec![6, 7, 8]);
        // Digits are split one by one, and the control token is matched whole.
        assert_eq!(t.encode("12<|end|>hi", true).unwrap(), vec![4, 5, 0, 6]);
        assert_eq!(t.decode(&[6, 7, 8], false).unwrap(), "hi hi!");
        assert_eq!(t.decode(&[6, 0], true).unwrap(), "hi");
        assert_eq!(t.stop_ids(), &[0]);
        assert_eq!(t.eos_token(), Some("<|end|>"));
        assert!(!t.adds_bos());
    }

    #[test]
    fn bos_is_prepended_when_the_gguf_asks() {
        let (_d, g) = tiny("gpt-2", true);
        let t = Tokenizer::from_gguf(&g).unwrap();
        assert_eq!(t.encode("hi", true).unwrap(), vec![0, 6]);
        assert_eq!(t.encode("hi", false).unwrap(), vec![6]);
    }

    #[test]
    fn unknown_pre_tokenizer_is_an_error() {
        let (_d, g) = tiny("klingon", false);
        let e = Tokenizer::from_gguf(&g).unwrap_err();
        assert!(e.to_string().contains("\"klingon\""), "{e}");
        assert!(e.to_string().contains("t.gguf"), "{e}");
    }

    #[test]
    fn missing_tokenizer_is_an_error() {
        let mut b = GgufBuilder::new();
        b.meta("general.architecture", GgufValue::String("llama".into()));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("n.gguf");
        std::fs::write(&p, b.build()).unwrap();
        let e = Tokenizer::from_gguf(&GgufFile::open(&p).unwrap()).unwrap_err();
        assert!(matches!(e, ModelError::MissingTokenizer { .. }), "{e}");
        let e = Tokenizer::from_hf_dir(dir.path()).unwrap_err();
        assert!(e.to_string().contains("no tokenizer.json"), "{e}");
    }

    #[test]
    fn every_pre_tokenizer_name_builds() {
        for p in ["smollm", "gpt-2", "llama-bpe", "llama3", "qwen2", "default"] {
            assert!(pre_tokenizer_for(p).is_some(), "{p}");
        }
        assert!(pre_tokenizer_for("nope").is_none());
        assert!(!gpt2_split_regex().is_empty());
    }
}
