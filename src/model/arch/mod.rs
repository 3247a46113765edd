//! The architectures, written once against [`crate::engine::backend::Backend`].
//!
//! Each one loads its weights from [`ModelFiles`] (decoding GGUF blocks or safetensors
//! dtypes to f32 here, independently of the weight binder) and implements [`CausalLm`]:
//! a state per sequence (KV cache, later GDN state) and a forward over a block of tokens
//! that serves both prefill (many tokens) and incremental decode (one token).

pub mod llama;
pub mod qwen35;

use half::{bf16, f16};

use crate::engine::backend::Backend;
use crate::formats::gguf_blocks::{dequantize, GgufType};
use crate::model::{Architecture, Dtype, ModelError, ModelFiles, TensorDtype, Weights};

pub use llama::Llama;
pub use qwen35::Qwen35;

/// Why a model cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ArchError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("tensor {name:?} cannot be decoded: {problem}")]
    Weight { name: String, problem: String },
    #[error("the {arch:?} architecture is not implemented on this backend yet")]
    Unsupported { arch: Architecture },
}

/// Which logits a forward returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogitsWanted {
    /// Only the last token's row (generation).
    Last,
    /// Every token's row (scoring, tests).
    All,
}

/// A causal language model on backend `B`.
pub trait CausalLm<B: Backend> {
    /// Per-sequence state (KV cache, recurrent state).
    type State;
    fn new_state(&self) -> Self::State;
    /// Tokens already consumed by `state`.
    fn position(&self, state: &Self::State) -> usize;
    fn vocab_size(&self) -> usize;
    /// Runs `ids` (at positions `position(state)..`) through the model, appending them to
    /// `state`, and returns logits `[rows, vocab]` row-major (`rows` is 1 or `ids.len()`).
    fn forward(&self, state: &mut Self::State, ids: &[u32], want: LogitsWanted) -> Vec<f32>;
}

/// A tensor decoded to f32: its row-major shape (outermost first) and values.
pub fn tensor_f32(weights: &Weights, name: &str) -> Result<(Vec<usize>, Vec<f32>), ArchError> {
    let t = weights.tensor(name).ok_or_else(|| {
        ArchError::Model(ModelError::MissingTensor {
            path: weights.path().to_path_buf(),
            name: name.to_string(),
        })
    })?;
    let n: usize = t.shape.iter().product();
    let bad = |problem: String| ArchError::Weight {
        name: name.to_string(),
        problem,
    };
    let values = match t.dtype {
        TensorDtype::Ggml(id) => {
            let ty = GgufType::from_id(id).map_err(|e| bad(e.to_string()))?;
            dequantize(ty, t.data, n).map_err(|e| bad(e.to_string()))?
        }
        TensorDtype::Safetensors(d) => {
            let width = match d {
                Dtype::F32 => 4,
                Dtype::F16 | Dtype::BF16 => 2,
                other => return Err(bad(format!("dtype {other:?} is not decoded on the cpu"))),
            };
            if t.data.len() != n * width {
                return Err(bad(format!(
                    "{} bytes for {n} values of {d:?}",
                    t.data.len()
                )));
            }
            match d {
                Dtype::F32 => t
                    .data
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                Dtype::F16 => t
                    .data
                    .chunks_exact(2)
                    .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
                _ => t
                    .data
                    .chunks_exact(2)
                    .map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
            }
        }
    };
    Ok((t.shape.clone(), values))
}

/// Any supported architecture, behind one [`CausalLm`] (what the CLI runs).
pub enum Model<B: Backend> {
    Llama(Llama<B>),
    Qwen35(Qwen35<B>),
}

/// The state of a [`Model`]'s sequence.
pub enum ModelState<B: Backend> {
    Llama(llama::LlamaState<B>),
    Qwen35(qwen35::Qwen35State<B>),
}

/// Loads the model in `files` on backend `b`: llama family (llama, qwen3 dense) or the
/// qwen35 families (Qwen3.5/3.6 dense and MoE, Qwen3-Next). MTP weights are not loaded.
pub fn load<B: Backend>(b: &B, files: &ModelFiles) -> Result<Model<B>, ArchError> {
    Ok(match files.config.architecture {
        Architecture::Llama => Model::Llama(Llama::load(b, files)?),
        Architecture::Qwen35 | Architecture::Qwen35Moe | Architecture::Qwen3Next => {
            Model::Qwen35(Qwen35::load(b, files)?)
        }
    })
}

impl<B: Backend> Model<B> {
    pub fn config(&self) -> &crate::model::ModelConfig {
        match self {
            Model::Llama(m) => m.config(),
            Model::Qwen35(m) => m.config(),
        }
    }
}

impl<B: Backend> CausalLm<B> for Model<B> {
    type State = ModelState<B>;

    fn new_state(&self) -> ModelState<B> {
        match self {
            Model::Llama(m) => ModelState::Llama(m.new_state()),
            Model::Qwen35(m) => ModelState::Qwen35(m.new_state()),
        }
    }

    fn position(&self, state: &ModelState<B>) -> usize {
        match (self, state) {
            (Model::Llama(m), ModelState::Llama(s)) => m.position(s),
            (Model::Qwen35(m), ModelState::Qwen35(s)) => m.position(s),
            _ => panic!("a state from another model"),
        }
    }

    fn vocab_size(&self) -> usize {
        self.config().vocab_size
    }

    fn forward(&self, state: &mut ModelState<B>, ids: &[u32], want: LogitsWanted) -> Vec<f32> {
        match (self, state) {
            (Model::Llama(m), ModelState::Llama(s)) => m.forward(s, ids, want),
            (Model::Qwen35(m), ModelState::Qwen35(s)) => m.forward(s, ids, want),
            _ => panic!("a state from another model"),
        }
    }
}
