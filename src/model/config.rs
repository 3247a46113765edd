//! The model's hyperparameters, from an HF `config.json` (flattening Qwen3.5's `text_config`)
//! or from a llama-architecture GGUF's metadata. Field names follow HF; see MODEL_SPEC.md.

use std::path::Path;

use serde_json::{Map, Value};

use super::error::ModelError;
use super::gguf::GgufFile;

/// Which forward pass the engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// Attention + SwiGLU MLP: `llama` (plain norms) and `qwen3` dense (adds q/k norms).
    Llama,
    /// Qwen3.5/3.6 dense: GDN + gated attention, SwiGLU MLP.
    Qwen35,
    /// Qwen3.5/3.6 MoE: GDN + gated attention, sparse MoE every layer.
    Qwen35Moe,
    /// Qwen3-Next: as Qwen35Moe with fused projections, flat config.
    Qwen3Next,
}

impl Architecture {
    /// The architecture of an HF `model_type` (either the wrapper's or the text model's).
    pub fn from_model_type(model_type: &str) -> Option<Self> {
        Some(match model_type {
            "llama" | "qwen3" => Architecture::Llama,
            "qwen3_5" | "qwen3_5_text" => Architecture::Qwen35,
            "qwen3_5_moe" | "qwen3_5_moe_text" => Architecture::Qwen35Moe,
            "qwen3_next" => Architecture::Qwen3Next,
            _ => return None,
        })
    }

    /// True for the hybrid GDN + attention families.
    pub fn is_hybrid(self) -> bool {
        !matches!(self, Architecture::Llama)
    }

    /// True where ordinary RMSNorms are zero-centred (`x * (1 + w)`), MODEL_SPEC.md section 3.
    pub fn zero_centred_norms(self) -> bool {
        self.is_hybrid()
    }
}

/// The HF model types ninfer runs, for messages.
pub const SUPPORTED_MODEL_TYPES: &str =
    "llama, qwen3, qwen3_5, qwen3_5_moe and qwen3_next checkpoints, and llama/qwen3 GGUF files";

/// The mixer of one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerType {
    /// Gated DeltaNet (`linear_attn.*`).
    LinearAttention,
    /// Softmax attention (`self_attn.*`).
    FullAttention,
}

/// Gated DeltaNet dimensions (`linear_*` fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdnConfig {
    pub num_key_heads: usize,
    pub num_value_heads: usize,
    pub key_head_dim: usize,
    pub value_head_dim: usize,
    pub conv_kernel_dim: usize,
}

impl GdnConfig {
    pub fn key_dim(&self) -> usize {
        self.num_key_heads * self.key_head_dim
    }
    pub fn value_dim(&self) -> usize {
        self.num_value_heads * self.value_head_dim
    }
    /// `2 * key_dim + value_dim`: the channels of the causal conv.
    pub fn conv_dim(&self) -> usize {
        2 * self.key_dim() + self.value_dim()
    }
}

/// Sparse MoE dimensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoeConfig {
    pub num_experts: usize,
    pub num_experts_per_tok: usize,
    pub moe_intermediate_size: usize,
    /// 0 when the model has no shared expert.
    pub shared_expert_intermediate_size: usize,
    pub norm_topk_prob: bool,
    pub decoder_sparse_step: usize,
    pub mlp_only_layers: Vec<usize>,
}

/// Hyperparameters, one flat struct for every family.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub architecture: Architecture,
    /// The text model's `model_type` (`qwen3_5_text` for a Qwen3.5 wrapper), or the GGUF's
    /// `general.architecture`.
    pub model_type: String,
    /// The checkpoint nests its text model under `text_config` (Qwen3.5 multimodal wrappers),
    /// so its tensors are named `model.language_model.*`.
    pub text_config_nested: bool,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    /// Dense MLP width (0 for MoE models that have none).
    pub intermediate_size: usize,
    pub vocab_size: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub partial_rotary_factor: f64,
    pub tie_word_embeddings: bool,
    pub max_position_embeddings: Option<usize>,
    /// Per-layer mixer; always `num_hidden_layers` long.
    pub layer_types: Vec<LayerType>,
    pub full_attention_interval: usize,
    /// Per-head RMSNorm on q and k (qwen3 and the qwen35 families).
    pub qk_norm: bool,
    pub attention_bias: bool,
    pub gdn: Option<GdnConfig>,
    pub moe: Option<MoeConfig>,
    /// Number of MTP layers (`mtp_num_hidden_layers`, or `num_nextn_predict_layers`); 0 = none.
    pub mtp_num_hidden_layers: usize,
    pub bos_token_id: Option<u32>,
    pub eos_token_ids: Vec<u32>,
}

/// Reads typed fields out of a JSON object and turns problems into [`ModelError::Config`].
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    path: &'a Path,
}

impl Fields<'_> {
    fn err(&self, problem: String) -> ModelError {
        ModelError::Config {
            path: self.path.to_path_buf(),
            problem,
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    fn usize_opt(&self, key: &str) -> Result<Option<usize>, ModelError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    self.err(format!(
                        "field {key} should be a non-negative integer, found {v}"
                    ))
                }),
        }
    }

    fn usize_req(&self, key: &str) -> Result<usize, ModelError> {
        match self.usize_opt(key)? {
            Some(0) => Err(self.err(format!("field {key} is 0"))),
            Some(n) => Ok(n),
            None => Err(self.err(format!("the required field {key} is missing"))),
        }
    }

    fn f64_opt(&self, key: &str) -> Result<Option<f64>, ModelError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.err(format!("field {key} should be a number, found {v}"))),
        }
    }

    fn bool_opt(&self, key: &str) -> Result<Option<bool>, ModelError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.err(format!("field {key} should be true or false, found {v}"))),
        }
    }

    /// An id or a list of ids (`eos_token_id`).
    fn ids(&self, key: &str) -> Result<Vec<u32>, ModelError> {
        let bad = || {
            self.err(format!(
                "field {key} should be a token id or a list of them"
            ))
        };
        match self.get(key) {
            None => Ok(vec![]),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(bad)
                })
                .collect(),
            Some(v) => Ok(vec![v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(bad)?]),
        }
    }
}

impl ModelConfig {
    /// Reads `config.json`.
    pub fn from_hf_file(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::io(path, e))?;
        Self::from_hf_json(&text, path)
    }

    /// Parses the text of an HF `config.json`; `path` is for messages. A `text_config` object,
    /// when present, is laid over the top level (its fields win; the wrapper's, such as
    /// `tie_word_embeddings`, fill in what it lacks). Unknown fields are ignored.
    pub fn from_hf_json(text: &str, path: &Path) -> Result<Self, ModelError> {
        let err = |problem: String| ModelError::Config {
            path: path.to_path_buf(),
            problem,
        };
        let top: Value =
            serde_json::from_str(text).map_err(|e| err(format!("it is not valid JSON ({e})")))?;
        let Value::Object(top) = top else {
            return Err(err("it is not a JSON object".into()));
        };
        let mut merged = top.clone();
        let nested = match top.get("text_config") {
            Some(Value::Object(text_cfg)) => {
                merged.remove("text_config");
                merged.remove("vision_config");
                for (k, v) in text_cfg {
                    if !v.is_null() || !merged.contains_key(k) {
                        merged.insert(k.clone(), v.clone());
                    }
                }
                true
            }
            Some(Value::Null) | None => false,
            Some(v) => {
                return Err(err(format!(
                    "field text_config should be an object, found {v}"
                )))
            }
        };
        let f = Fields { obj: &merged, path };
        let model_type = match f.get("model_type") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => {
                return Err(err(format!(
                    "field model_type should be a string, found {v}"
                )))
            }
            None => return Err(err("the required field model_type is missing".into())),
        };
        let wrapper_type = top.get("model_type").and_then(Value::as_str);
        let architecture = Architecture::from_model_type(&model_type)
            .or_else(|| wrapper_type.and_then(Architecture::from_model_type))
            .ok_or_else(|| ModelError::UnknownArchitecture {
                path: path.to_path_buf(),
                arch: model_type.clone(),
                supported: SUPPORTED_MODEL_TYPES,
            })?;

        let hidden_size = f.usize_req("hidden_size")?;
        let num_hidden_layers = f.usize_req("num_hidden_layers")?;
        let num_attention_heads = f.usize_req("num_attention_heads")?;
        let num_key_value_heads = f
            .usize_opt("num_key_value_heads")?
            .unwrap_or(num_attention_heads);
        let head_dim = match f.usize_opt("head_dim")? {
            Some(d) => d,
            None => {
                if hidden_size % num_attention_heads != 0 {
                    return Err(err(format!(
                        "head_dim is missing and hidden_size {hidden_size} is not a multiple of num_attention_heads {num_attention_heads}"
                    )));
                }
                hidden_size / num_attention_heads
            }
        };
        if num_key_value_heads == 0 || num_attention_heads % num_key_value_heads != 0 {
            return Err(err(format!(
                "num_attention_heads {num_attention_heads} is not a multiple of num_key_value_heads {num_key_value_heads}"
            )));
        }
        let vocab_size = f.usize_req("vocab_size")?;

        // Rope: flat fields, or (newer checkpoints) inside rope_parameters / rope_scaling.
        let rope_obj = ["rope_parameters", "rope_scaling"]
            .iter()
            .find_map(|k| f.get(k).and_then(Value::as_object));
        let rope_field = |key: &str| -> Result<Option<f64>, ModelError> {
            if let Some(v) = f.f64_opt(key)? {
                return Ok(Some(v));
            }
            match rope_obj {
                Some(o) => Fields { obj: o, path }.f64_opt(key),
                None => Ok(None),
            }
        };
        let rope_theta = rope_field("rope_theta")?.unwrap_or(10_000.0);
        let default_partial = if architecture.is_hybrid() { 0.25 } else { 1.0 };
        let partial_rotary_factor = rope_field("partial_rotary_factor")?.unwrap_or(default_partial);
        if !(partial_rotary_factor > 0.0 && partial_rotary_factor <= 1.0) {
            return Err(err(format!(
                "partial_rotary_factor {partial_rotary_factor} is not in (0, 1]"
            )));
        }

        let moe = if architecture == Architecture::Qwen35Moe
            || architecture == Architecture::Qwen3Next
            || f.get("num_experts").is_some()
        {
            let mlp_only_layers = match f.get("mlp_only_layers") {
                None => vec![],
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_u64().map(|n| n as usize))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        err("field mlp_only_layers should be a list of layer indices".into())
                    })?,
                Some(v) => {
                    return Err(err(format!(
                        "field mlp_only_layers should be a list, found {v}"
                    )))
                }
            };
            Some(MoeConfig {
                num_experts: f.usize_req("num_experts")?,
                num_experts_per_tok: f.usize_req("num_experts_per_tok")?,
                moe_intermediate_size: f.usize_req("moe_intermediate_size")?,
                shared_expert_intermediate_size: f
                    .usize_opt("shared_expert_intermediate_size")?
                    .unwrap_or(0),
                norm_topk_prob: f.bool_opt("norm_topk_prob")?.unwrap_or(true),
                decoder_sparse_step: f.usize_opt("decoder_sparse_step")?.unwrap_or(1),
                mlp_only_layers,
            })
        } else {
            None
        };
        let intermediate_size = match (&moe, f.usize_opt("intermediate_size")?) {
            (_, Some(n)) => n,
            (Some(_), None) => 0,
            (None, None) => {
                return Err(err("the required field intermediate_size is missing".into()))
            }
        };

        let gdn = if architecture.is_hybrid() {
            Some(GdnConfig {
                num_key_heads: f.usize_req("linear_num_key_heads")?,
                num_value_heads: f.usize_req("linear_num_value_heads")?,
                key_head_dim: f.usize_req("linear_key_head_dim")?,
                value_head_dim: f.usize_req("linear_value_head_dim")?,
                conv_kernel_dim: f.usize_opt("linear_conv_kernel_dim")?.unwrap_or(4),
            })
        } else {
            None
        };
        if let Some(g) = &gdn {
            if g.num_value_heads % g.num_key_heads != 0 {
                return Err(err(format!(
                    "linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
                    g.num_value_heads, g.num_key_heads
                )));
            }
        }

        let full_attention_interval = f.usize_opt("full_attention_interval")?.unwrap_or(4);
        let layer_types = match f.get("layer_types") {
            Some(Value::Array(a)) => {
                let types = a
                    .iter()
                    .map(|v| match v.as_str() {
                        Some("linear_attention") => Ok(LayerType::LinearAttention),
                        Some("full_attention") => Ok(LayerType::FullAttention),
                        _ => Err(err(format!(
                            "layer_types holds {v}, expected \"linear_attention\" or \"full_attention\""
                        ))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if types.len() != num_hidden_layers {
                    return Err(err(format!(
                        "layer_types lists {} layers but num_hidden_layers is {num_hidden_layers}",
                        types.len()
                    )));
                }
                if !architecture.is_hybrid() && types.contains(&LayerType::LinearAttention) {
                    return Err(err(format!(
                        "layer_types holds linear_attention layers, which {model_type} does not have"
                    )));
                }
                types
            }
            Some(v) => {
                return Err(err(format!(
                    "field layer_types should be a list, found {v}"
                )))
            }
            None if architecture.is_hybrid() => {
                if full_attention_interval == 0 {
                    return Err(err("full_attention_interval is 0".into()));
                }
                (0..num_hidden_layers)
                    .map(|i| {
                        if (i + 1) % full_attention_interval == 0 {
                            LayerType::FullAttention
                        } else {
                            LayerType::LinearAttention
                        }
                    })
                    .collect()
            }
            None => vec![LayerType::FullAttention; num_hidden_layers],
        };

        let mtp_num_hidden_layers = match f.usize_opt("mtp_num_hidden_layers")? {
            Some(n) => n,
            None => f.usize_opt("num_nextn_predict_layers")?.unwrap_or(0),
        };
        let bos_token_id = f.ids("bos_token_id")?.first().copied();

        Ok(ModelConfig {
            architecture,
            qk_norm: architecture.is_hybrid() || model_type == "qwen3",
            model_type,
            text_config_nested: nested,
            hidden_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            intermediate_size,
            vocab_size,
            rms_norm_eps: f.f64_opt("rms_norm_eps")?.unwrap_or(1e-6),
            rope_theta,
            partial_rotary_factor,
            tie_word_embeddings: f.bool_opt("tie_word_embeddings")?.unwrap_or(false),
            max_position_embeddings: f.usize_opt("max_position_embeddings")?,
            layer_types,
            full_attention_interval,
            attention_bias: f.bool_opt("attention_bias")?.unwrap_or(false),
            gdn,
            moe,
            mtp_num_hidden_layers,
            bos_token_id,
            eos_token_ids: f.ids("eos_token_id")?,
        })
    }

    /// Derives the config of a llama-architecture (or qwen3) GGUF from its metadata:
    /// `{arch}.embedding_length`, `.block_count`, `.attention.head_count`, `..._kv`,
    /// `.feed_forward_length`, `.rope.freq_base`, `.attention.layer_norm_rms_epsilon`; the vocab
    /// size is the length of `tokenizer.ggml.tokens`; embeddings are tied when the file has no
    /// `output.weight`.
    pub fn from_gguf(gguf: &GgufFile) -> Result<Self, ModelError> {
        let path = gguf.path();
        let err = |problem: String| ModelError::Config {
            path: path.to_path_buf(),
            problem,
        };
        let arch = gguf
            .architecture()
            .ok_or_else(|| err("the GGUF has no general.architecture".into()))?
            .to_string();
        if arch != "llama" && arch != "qwen3" {
            return Err(ModelError::UnknownArchitecture {
                path: path.to_path_buf(),
                arch,
                supported: SUPPORTED_MODEL_TYPES,
            });
        }
        let int = |key: &str| -> Result<Option<usize>, ModelError> {
            let full = format!("{arch}.{key}");
            match gguf.get(&full) {
                None => Ok(None),
                Some(v) => v
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .map(Some)
                    .ok_or_else(|| {
                        err(format!(
                            "metadata {full} should be a non-negative integer, found {v:?}"
                        ))
                    }),
            }
        };
        let req = |key: &str| -> Result<usize, ModelError> {
            match int(key)? {
                Some(0) => Err(err(format!("metadata {arch}.{key} is 0"))),
                Some(n) => Ok(n),
                None => Err(err(format!(
                    "the required metadata {arch}.{key} is missing"
                ))),
            }
        };
        let float = |key: &str| -> Result<Option<f64>, ModelError> {
            let full = format!("{arch}.{key}");
            match gguf.get(&full) {
                None => Ok(None),
                Some(v) => v
                    .as_f64()
                    .map(Some)
                    .ok_or_else(|| err(format!("metadata {full} should be a number, found {v:?}"))),
            }
        };
        let hidden_size = req("embedding_length")?;
        let num_hidden_layers = req("block_count")?;
        let num_attention_heads = req("attention.head_count")?;
        let num_key_value_heads = int("attention.head_count_kv")?.unwrap_or(num_attention_heads);
        if num_key_value_heads == 0 || num_attention_heads % num_key_value_heads != 0 {
            return Err(err(format!(
                "{num_attention_heads} attention heads are not a multiple of {num_key_value_heads} kv heads"
            )));
        }
        let head_dim = match int("attention.key_length")? {
            Some(d) => d,
            None if hidden_size % num_attention_heads == 0 => hidden_size / num_attention_heads,
            None => {
                return Err(err(format!(
                "embedding length {hidden_size} is not a multiple of {num_attention_heads} heads"
            )))
            }
        };
        let rope_dim = int("rope.dimension_count")?.unwrap_or(head_dim);
        if rope_dim == 0 || rope_dim > head_dim {
            return Err(err(format!(
                "rope.dimension_count {rope_dim} does not fit head dim {head_dim}"
            )));
        }
        let vocab_size = match gguf.get("tokenizer.ggml.tokens").and_then(|v| v.as_array()) {
            Some(tokens) => tokens.len(),
            None => match int("vocab_size")? {
                Some(n) => n,
                None => gguf
                    .tensor_info("token_embd.weight")
                    .and_then(|t| t.shape().first().copied())
                    .ok_or_else(|| err("the vocabulary size cannot be found (no tokenizer.ggml.tokens, no vocab_size, no token_embd.weight)".into()))?,
            },
        };
        let rms_norm_eps = float("attention.layer_norm_rms_epsilon")?.ok_or_else(|| {
            err(format!(
                "the required metadata {arch}.attention.layer_norm_rms_epsilon is missing"
            ))
        })?;
        let id = |key: &str| gguf.get_u64(key).and_then(|n| u32::try_from(n).ok());
        Ok(ModelConfig {
            architecture: Architecture::Llama,
            qk_norm: arch == "qwen3",
            model_type: arch.clone(),
            text_config_nested: false,
            hidden_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            intermediate_size: req("feed_forward_length")?,
            vocab_size,
            rms_norm_eps,
            rope_theta: float("rope.freq_base")?.unwrap_or(10_000.0),
            partial_rotary_factor: rope_dim as f64 / head_dim as f64,
            tie_word_embeddings: gguf.tensor_info("output.weight").is_none(),
            max_position_embeddings: int("context_length")?,
            layer_types: vec![LayerType::FullAttention; num_hidden_layers],
            full_attention_interval: 1,
            attention_bias: false,
            gdn: None,
            moe: None,
            mtp_num_hidden_layers: 0,
            bos_token_id: id("tokenizer.ggml.bos_token_id"),
            eos_token_ids: id("tokenizer.ggml.eos_token_id").into_iter().collect(),
        })
    }

    /// Rotary dimensions per head (`head_dim * partial_rotary_factor`).
    pub fn rotary_dim(&self) -> usize {
        (self.head_dim as f64 * self.partial_rotary_factor).round() as usize
    }

    pub fn is_full_attention(&self, layer: usize) -> bool {
        self.layer_types[layer] == LayerType::FullAttention
    }

    /// Prefix of the text model's tensors in an HF checkpoint.
    pub fn hf_tensor_prefix(&self) -> &'static str {
        if self.text_config_nested {
            "model.language_model."
        } else {
            "model."
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<ModelConfig, ModelError> {
        ModelConfig::from_hf_json(s, Path::new("/m/config.json"))
    }

    #[test]
    fn llama_config() {
        let c = parse(
            r#"{"model_type":"llama","hidden_size":576,"num_hidden_layers":30,"num_attention_heads":9,
            "num_key_value_heads":3,"intermediate_size":1536,"vocab_size":49152,"rms_norm_eps":1e-5,
            "rope_theta":100000.0,"tie_word_embeddings":true,"eos_token_id":[2, 0],"unknown_field":{"x":1}}"#,
        )
        .unwrap();
        assert_eq!(c.architecture, Architecture::Llama);
        assert_eq!(c.head_dim, 64);
        assert_eq!(c.rotary_dim(), 64);
        assert!(c.tie_word_embeddings && !c.qk_norm);
        assert_eq!(c.layer_types, vec![LayerType::FullAttention; 30]);
        assert_eq!(c.eos_token_ids, vec![2, 0]);
        assert_eq!(c.rms_norm_eps, 1e-5);
        assert_eq!(c.hf_tensor_prefix(), "model.");
    }

    #[test]
    fn qwen35_text_config_is_flattened() {
        let c = parse(
            r#"{"model_type":"qwen3_5","tie_word_embeddings":false,"vision_config":{"hidden_size":1},
            "text_config":{"model_type":"qwen3_5_text","hidden_size":5120,"num_hidden_layers":8,
            "num_attention_heads":24,"num_key_value_heads":4,"head_dim":256,"intermediate_size":17408,
            "vocab_size":248320,"rms_norm_eps":1e-6,"linear_num_key_heads":16,"linear_num_value_heads":48,
            "linear_key_head_dim":128,"linear_value_head_dim":128,"linear_conv_kernel_dim":4,
            "rope_parameters":{"rope_theta":10000000,"partial_rotary_factor":0.25,"rope_type":"default"},
            "mtp_num_hidden_layers":1}}"#,
        )
        .unwrap();
        assert_eq!(c.architecture, Architecture::Qwen35);
        assert!(c.text_config_nested && c.qk_norm);
        assert_eq!(c.model_type, "qwen3_5_text");
        assert_eq!(c.hidden_size, 5120);
        assert_eq!(c.rope_theta, 1e7);
        assert_eq!(c.rotary_dim(), 64);
        assert_eq!(c.mtp_num_hidden_layers, 1);
        let g = c.gdn.as_ref().unwrap();
        assert_eq!(g.conv_dim(), 2 * 16 * 128 + 48 * 128);
        // No layer_types: every 4th layer is attention.
        let full: Vec<usize> = (0..8).filter(|&i| c.is_full_attention(i)).collect();
        assert_eq!(full, vec![3, 7]);
        assert_eq!(c.hf_tensor_prefix(), "model.language_model.");
    }

    #[test]
    fn moe_and_layer_types() {
        let c = parse(
            r#"{"model_type":"qwen3_next","hidden_size":2048,"num_hidden_layers":4,"num_attention_heads":16,
            "num_key_value_heads":2,"head_dim":256,"vocab_size":1000,"linear_num_key_heads":16,
            "linear_num_value_heads":32,"linear_key_head_dim":128,"linear_value_head_dim":128,
            "num_experts":512,"num_experts_per_tok":10,"moe_intermediate_size":512,
            "shared_expert_intermediate_size":512,"norm_topk_prob":true,"partial_rotary_factor":0.25,
            "layer_types":["linear_attention","full_attention","linear_attention","full_attention"]}"#,
        )
        .unwrap();
        assert_eq!(c.architecture, Architecture::Qwen3Next);
        assert_eq!(c.intermediate_size, 0);
        let m = c.moe.as_ref().unwrap();
        assert_eq!((m.num_experts, m.num_experts_per_tok), (512, 10));
        assert!(c.is_full_attention(1) && !c.is_full_attention(2));
    }

    #[test]
    fn errors_name_file_and_field() {
        let e = parse(r#"{"model_type":"llama","num_hidden_layers":2}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the model config /m/config.json is not usable: the required field hidden_size is missing"
        );
        let e = parse(r#"{"model_type":"gpt_neox"}"#).unwrap_err();
        assert!(matches!(e, ModelError::UnknownArchitecture { .. }), "{e}");
        assert!(e.to_string().contains("gpt_neox"));
        let e = parse(r#"{"model_type":"llama","hidden_size":"big"}"#).unwrap_err();
        assert!(
            e.to_string()
                .contains("hidden_size should be a non-negative integer"),
            "{e}"
        );
        let e = parse("{not json").unwrap_err();
        assert!(e.to_string().contains("not valid JSON"), "{e}");
        let e = parse(
            r#"{"model_type":"qwen3_5_text","hidden_size":8,"num_hidden_layers":2,"num_attention_heads":2,
            "intermediate_size":8,"vocab_size":8}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("linear_num_key_heads"), "{e}");
        let e = parse(
            r#"{"model_type":"llama","hidden_size":8,"num_hidden_layers":2,"num_attention_heads":2,
            "intermediate_size":8,"vocab_size":8,"layer_types":["full_attention"]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("lists 1 layers"), "{e}");
    }
}
