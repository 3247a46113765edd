//! Model files: GGUF and safetensors loaders, config, tokenizer, chat template, the default
//! model. (The weight binder/materializer and the architectures build on these.)
//!
//! ```no_run
//! let files = ninfer::model::load_model(None)?; // the default model, fetched on first use
//! let ids = files.tokenizer.encode("Hello", true)?;
//! let tensor = files.weights.tensor("token_embd.weight").unwrap();
//! assert_eq!(tensor.shape, vec![files.config.vocab_size, files.config.hidden_size]);
//! # Ok::<(), ninfer::model::ModelError>(())
//! ```

pub mod arch;
pub mod binder;
pub mod chat_template;
pub mod config;
pub mod default_model;
pub mod error;
pub mod gguf;
pub mod materialize;
pub mod precision;
pub mod st_files;
pub mod synthetic;
pub mod tokenizer;

use std::borrow::Cow;
use std::path::Path;

pub use binder::{plan, plan_weights, BindError, PlannedTensor, TensorRole, WeightPlan};
pub use chat_template::{ChatMessage, ChatTemplate};
pub use config::{Architecture, GdnConfig, LayerType, ModelConfig, MoeConfig};
pub use default_model::{
    cache_dir, default_model_path, ensure_default_model, resolve_model, ModelLocation,
    DEFAULT_MODEL,
};
pub use error::{GgufError, ModelError, Shape};
pub use gguf::{GgufFile, GgufTensorInfo, GgufValue};
pub use materialize::{materialize, Materialized};
pub use precision::{PrecisionOptions, VocabQuant};
pub use st_files::{Dtype, SafetensorsModel};
pub use synthetic::{SyntheticWeights, SYNTHETIC_MODELS};
pub use tokenizer::Tokenizer;

/// The weights of a model, in whichever container they came.
#[derive(Debug)]
pub enum Weights {
    Gguf(GgufFile),
    Safetensors(SafetensorsModel),
    /// Random weights at a real model's shapes, made tensor by tensor when asked for
    /// ([`synthetic`]); HF tensor names, f32 values.
    Synthetic(Box<SyntheticWeights>),
}

/// How a tensor's bytes are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorDtype {
    /// A raw GGML type id (`crate::formats` decodes the blocks).
    Ggml(u32),
    /// A safetensors dtype.
    Safetensors(Dtype),
}

/// One tensor: name, row-major shape (outermost first), encoding and bytes (borrowed from a
/// file's mapping, or owned where they were made on demand: synthetic weights).
#[derive(Debug, Clone)]
pub struct TensorRef<'a> {
    pub name: &'a str,
    pub shape: Vec<usize>,
    pub dtype: TensorDtype,
    pub data: Cow<'a, [u8]>,
}

impl Weights {
    /// The GGUF file, or the first safetensors shard (for messages).
    pub fn path(&self) -> &Path {
        match self {
            Weights::Gguf(g) => g.path(),
            Weights::Safetensors(s) => s.paths()[0],
            Weights::Synthetic(s) => s.label(),
        }
    }

    /// A tensor with its bytes. Synthetic weights make the bytes now (f32): ask
    /// [`Weights::has_tensor`] or [`Weights::tensor_meta`] where the bytes are not needed.
    pub fn tensor(&self, name: &str) -> Option<TensorRef<'_>> {
        match self {
            Weights::Gguf(g) => g.tensor(name).map(|t| TensorRef {
                name: &t.info.name,
                shape: t.info.shape(),
                dtype: TensorDtype::Ggml(t.info.type_id),
                data: Cow::Borrowed(t.data),
            }),
            Weights::Safetensors(s) => s.tensor(name).map(|t| TensorRef {
                name: &t.info.name,
                shape: t.info.shape.clone(),
                dtype: TensorDtype::Safetensors(t.info.dtype),
                data: Cow::Borrowed(t.data),
            }),
            Weights::Synthetic(s) => s.tensor(name),
        }
    }

    /// A tensor's shape and encoding without touching its bytes.
    pub fn tensor_meta(&self, name: &str) -> Option<(Vec<usize>, TensorDtype)> {
        match self {
            Weights::Gguf(g) => g
                .tensor(name)
                .map(|t| (t.info.shape(), TensorDtype::Ggml(t.info.type_id))),
            Weights::Safetensors(s) => s
                .tensor(name)
                .map(|t| (t.info.shape.clone(), TensorDtype::Safetensors(t.info.dtype))),
            Weights::Synthetic(s) => s
                .shape(name)
                .map(|shape| (shape.to_vec(), TensorDtype::Safetensors(Dtype::F32))),
        }
    }

    /// Whether a tensor of this name exists (cheap for every source).
    pub fn has_tensor(&self, name: &str) -> bool {
        self.tensor_meta(name).is_some()
    }

    /// Every tensor name, in file order.
    pub fn tensor_names(&self) -> Vec<&str> {
        match self {
            Weights::Gguf(g) => g.tensors().iter().map(|t| t.name.as_str()).collect(),
            Weights::Safetensors(s) => s.tensor_infos().map(|t| t.name.as_str()).collect(),
            Weights::Synthetic(s) => s.names().collect(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Weights::Gguf(g) => g.tensors().len(),
            Weights::Safetensors(s) => s.len(),
            Weights::Synthetic(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Everything read from a model's files.
#[derive(Debug)]
pub struct ModelFiles {
    pub location: ModelLocation,
    pub config: ModelConfig,
    pub weights: Weights,
    pub tokenizer: Tokenizer,
    pub chat_template: Option<ChatTemplate>,
}

/// Resolves `--model` (None = the default model) and opens it.
pub fn load_model(path: Option<&Path>) -> Result<ModelFiles, ModelError> {
    open_model(&resolve_model(path)?)
}

/// Opens a model's files: config, weights (shapes checked against the config), tokenizer and
/// chat template. A synthetic location gives random weights at a real model's shapes, a
/// tokenizer without a vocabulary (feed token ids) and no chat template.
pub fn open_model(location: &ModelLocation) -> Result<ModelFiles, ModelError> {
    let (config, weights, tokenizer, chat_template) = match location {
        ModelLocation::Gguf(path) => {
            let gguf = GgufFile::open(path)?;
            let config = ModelConfig::from_gguf(&gguf)?;
            let tokenizer = Tokenizer::from_gguf(&gguf)?;
            let chat =
                ChatTemplate::from_gguf(&gguf, tokenizer.bos_token(), tokenizer.eos_token())?;
            (config, Weights::Gguf(gguf), tokenizer, chat)
        }
        ModelLocation::HfDir(dir) => {
            let config = ModelConfig::from_hf_file(dir.join("config.json"))?;
            let weights = SafetensorsModel::open_dir(dir)?;
            let tokenizer = Tokenizer::from_hf_dir(dir)?;
            let chat =
                ChatTemplate::from_hf_dir(dir, tokenizer.bos_token(), tokenizer.eos_token())?;
            (config, Weights::Safetensors(weights), tokenizer, chat)
        }
        ModelLocation::Synthetic { name, seed, .. } => {
            let weights = Box::new(SyntheticWeights::new(name, *seed)?);
            let config = weights.config().clone();
            let tokenizer = Tokenizer::without_vocabulary(location.path());
            (config, Weights::Synthetic(weights), tokenizer, None)
        }
    };
    check_shapes(&config, &weights)?;
    Ok(ModelFiles {
        location: location.clone(),
        config,
        weights,
        tokenizer,
        chat_template,
    })
}

/// The tensors a config implies, with their shapes (row-major, outermost first), under the
/// naming of the container (`blk.N.*` for GGUF, HF names for safetensors). The second field of
/// each entry says whether the tensor must exist.
pub fn expected_tensors(config: &ModelConfig, gguf_names: bool) -> Vec<(String, Vec<usize>, bool)> {
    let c = config;
    let h = c.hidden_size;
    let hd = c.head_dim;
    let mut out: Vec<(String, Vec<usize>, bool)> = Vec::new();
    let mut add =
        |name: String, shape: Vec<usize>, required: bool| out.push((name, shape, required));
    if gguf_names {
        add("token_embd.weight".into(), vec![c.vocab_size, h], true);
        add("output_norm.weight".into(), vec![h], true);
        add(
            "output.weight".into(),
            vec![c.vocab_size, h],
            !c.tie_word_embeddings,
        );
        for i in 0..c.num_hidden_layers {
            let p = format!("blk.{i}.");
            add(format!("{p}attn_norm.weight"), vec![h], true);
            add(format!("{p}ffn_norm.weight"), vec![h], true);
            add(
                format!("{p}attn_q.weight"),
                vec![c.num_attention_heads * hd, h],
                true,
            );
            add(
                format!("{p}attn_k.weight"),
                vec![c.num_key_value_heads * hd, h],
                true,
            );
            add(
                format!("{p}attn_v.weight"),
                vec![c.num_key_value_heads * hd, h],
                true,
            );
            add(
                format!("{p}attn_output.weight"),
                vec![h, c.num_attention_heads * hd],
                true,
            );
            add(
                format!("{p}ffn_gate.weight"),
                vec![c.intermediate_size, h],
                true,
            );
            add(
                format!("{p}ffn_up.weight"),
                vec![c.intermediate_size, h],
                true,
            );
            add(
                format!("{p}ffn_down.weight"),
                vec![h, c.intermediate_size],
                true,
            );
            if c.qk_norm {
                add(format!("{p}attn_q_norm.weight"), vec![hd], true);
                add(format!("{p}attn_k_norm.weight"), vec![hd], true);
            }
        }
        return out;
    }
    let m = c.hf_tensor_prefix();
    add(
        format!("{m}embed_tokens.weight"),
        vec![c.vocab_size, h],
        true,
    );
    add(format!("{m}norm.weight"), vec![h], true);
    add(
        "lm_head.weight".into(),
        vec![c.vocab_size, h],
        !c.tie_word_embeddings,
    );
    let gated = c.architecture.is_hybrid();
    for i in 0..c.num_hidden_layers {
        let p = format!("{m}layers.{i}.");
        add(format!("{p}input_layernorm.weight"), vec![h], true);
        add(format!("{p}post_attention_layernorm.weight"), vec![h], true);
        if c.is_full_attention(i) {
            let q_rows = c.num_attention_heads * hd * if gated { 2 } else { 1 };
            add(format!("{p}self_attn.q_proj.weight"), vec![q_rows, h], true);
            add(
                format!("{p}self_attn.k_proj.weight"),
                vec![c.num_key_value_heads * hd, h],
                true,
            );
            add(
                format!("{p}self_attn.v_proj.weight"),
                vec![c.num_key_value_heads * hd, h],
                true,
            );
            add(
                format!("{p}self_attn.o_proj.weight"),
                vec![h, c.num_attention_heads * hd],
                true,
            );
            if c.qk_norm {
                add(format!("{p}self_attn.q_norm.weight"), vec![hd], true);
                add(format!("{p}self_attn.k_norm.weight"), vec![hd], true);
            }
        } else if let Some(g) = &c.gdn {
            let la = format!("{p}linear_attn.");
            let hv = g.num_value_heads;
            if c.architecture == Architecture::Qwen3Next {
                add(
                    format!("{la}in_proj_qkvz.weight"),
                    vec![2 * g.key_dim() + 2 * g.value_dim(), h],
                    true,
                );
                add(format!("{la}in_proj_ba.weight"), vec![2 * hv, h], true);
            } else {
                add(
                    format!("{la}in_proj_qkv.weight"),
                    vec![g.conv_dim(), h],
                    true,
                );
                add(
                    format!("{la}in_proj_z.weight"),
                    vec![g.value_dim(), h],
                    true,
                );
                add(format!("{la}in_proj_b.weight"), vec![hv, h], true);
                add(format!("{la}in_proj_a.weight"), vec![hv, h], true);
            }
            add(
                format!("{la}conv1d.weight"),
                vec![g.conv_dim(), 1, g.conv_kernel_dim],
                true,
            );
            add(format!("{la}A_log"), vec![hv], true);
            add(format!("{la}dt_bias"), vec![hv], true);
            add(format!("{la}norm.weight"), vec![g.value_head_dim], true);
            add(format!("{la}out_proj.weight"), vec![h, g.value_dim()], true);
        }
        match &c.moe {
            Some(moe) if !moe.mlp_only_layers.contains(&i) => {
                add(
                    format!("{p}mlp.gate.weight"),
                    vec![moe.num_experts, h],
                    true,
                );
                if c.architecture == Architecture::Qwen35Moe {
                    let (e, inter) = (moe.num_experts, moe.moe_intermediate_size);
                    add(
                        format!("{p}mlp.experts.gate_up_proj"),
                        vec![e, 2 * inter, h],
                        false,
                    );
                    add(
                        format!("{p}mlp.experts.down_proj"),
                        vec![e, h, inter],
                        false,
                    );
                }
                if moe.shared_expert_intermediate_size > 0 {
                    let s = moe.shared_expert_intermediate_size;
                    add(
                        format!("{p}mlp.shared_expert.gate_proj.weight"),
                        vec![s, h],
                        true,
                    );
                    add(
                        format!("{p}mlp.shared_expert.up_proj.weight"),
                        vec![s, h],
                        true,
                    );
                    add(
                        format!("{p}mlp.shared_expert.down_proj.weight"),
                        vec![h, s],
                        true,
                    );
                    add(
                        format!("{p}mlp.shared_expert_gate.weight"),
                        vec![1, h],
                        true,
                    );
                }
            }
            _ => {
                let n = c.intermediate_size;
                add(format!("{p}mlp.gate_proj.weight"), vec![n, h], true);
                add(format!("{p}mlp.up_proj.weight"), vec![n, h], true);
                add(format!("{p}mlp.down_proj.weight"), vec![h, n], true);
            }
        }
    }
    out
}

/// Checks that the tensors the config implies exist with the shapes it implies. Safetensors
/// tensors stored in a packed or quantized dtype (anything but F32/F16/BF16) are not
/// shape-checked, since their stored shape is not the logical one.
pub fn check_shapes(config: &ModelConfig, weights: &Weights) -> Result<(), ModelError> {
    let gguf = matches!(weights, Weights::Gguf(_));
    for (name, expected, required) in expected_tensors(config, gguf) {
        match weights.tensor_meta(&name) {
            None if required => {
                return Err(ModelError::MissingTensor {
                    path: weights.path().to_path_buf(),
                    name,
                })
            }
            None => {}
            Some((shape, dtype)) => {
                let logical = match dtype {
                    TensorDtype::Ggml(_) => true,
                    TensorDtype::Safetensors(d) => {
                        matches!(d, Dtype::F32 | Dtype::F16 | Dtype::BF16)
                    }
                };
                if logical && shape != expected {
                    let path = match weights {
                        Weights::Safetensors(s) => s
                            .tensor(&name)
                            .map(|t| t.path.to_path_buf())
                            .unwrap_or_else(|| weights.path().to_path_buf()),
                        _ => weights.path().to_path_buf(),
                    };
                    return Err(ModelError::ShapeMismatch {
                        path,
                        name,
                        found: Shape(shape),
                        expected: Shape(expected),
                    });
                }
            }
        }
    }
    Ok(())
}
