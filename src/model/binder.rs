//! The weight binder: plans every tensor's target format, byte size and arena offset from the
//! model's config and tensor list and the precision options, before anything is allocated.
//! [`crate::model::materialize`] then fills one arena from the plan.
//!
//! # The rule (until the route table exists)
//!
//! There is no route table yet, so the target format comes from this documented rule:
//!
//! - **Small tensors** (1-D tensors, every tensor whose name contains `norm`, and GDN
//!   `conv1d` weights): `f32`.
//! - **Matrices** (linears, the embedding table, the head): the stored format where the engine
//!   has one. GGUF `Q8_0` becomes `q8_g32` and GGUF `Q4_1` becomes `q4_1_g32`, both bit for bit
//!   (the same numbers, rearranged into the row-split layout by
//!   [`crate::formats::gguf_blocks::to_format`]); `BF16`/`F16`/`F32` (GGUF or safetensors)
//!   stay `bf16`/`f16`/`f32`. Every other GGUF block type the decoders know (`Q4_0`, `Q5_0`,
//!   `Q5_1`, `Q4_K`, `Q5_K`, `Q6_K`) is decoded to f32 and re-encoded to `q8_g32` (lossy, but
//!   8.5 bits/weight holds those numbers closely); types the decoders do not know are an error.
//! - **Vocabulary flags** (see [`crate::model::precision`]): `--embedding-q4/q6` and
//!   `--lm-head-q4/q6` make the embedding or head `q4_g64`/`q6_g64` by transcoding its
//!   `q8_g32` form (the stored `Q8_0` moved bit for bit, or the `q8_g32` re-encoding above, or
//!   a dense tensor encoded to `q8_g32`) with [`crate::formats::transcode_q8_g32_into`]. A Q6
//!   flag on a tensor stored as `Q6_K` is a no-op with a notice. A flag is rejected (an error
//!   that says why) where the tensor's rows are not a multiple of the target's group of 64, or
//!   where the tensor is already stored at no more bits per weight than the flag's format (the
//!   flag could only lose precision without saving memory).
//! - **Tied embeddings** (no head tensor in the file, `tie_word_embeddings`): the plan holds a
//!   head entry (named `output.weight` for GGUF, `lm_head.weight` for safetensors) backed by
//!   the embedding's source tensor, in the format the head flag asks for. Where that is the
//!   embedding's own format, the two entries share one copy in the arena.
//!
//! # The arena
//!
//! Every owned tensor sits at a [`ARENA_ALIGN`]-byte-aligned offset of one arena (relative to
//! the arena's start; the device upload will place the arena at an aligned base), in file
//! order, the synthetic tied head last. The plan's sizes are the formats' exact
//! [`Layout`] sizes, so the arena shrinks with every narrower format before it is allocated.

use std::collections::HashMap;
use std::path::PathBuf;

use thiserror::Error;

use crate::formats::{self, Format, FormatError, GgufType, Layout};
use crate::model::precision::{PrecisionError, PrecisionOptions, VocabQuant, VocabTensor};
use crate::model::{ModelConfig, ModelFiles, TensorDtype, Weights};

/// Alignment of every tensor's offset in the arena, in bytes.
pub const ARENA_ALIGN: usize = 256;

/// Why a model's weights cannot be planned or materialized, as one sentence.
#[derive(Debug, Error)]
pub enum BindError {
    #[error(transparent)]
    Precision(#[from] PrecisionError),

    #[error(
        "tensor \"{name}\" in {path} is stored as {ty}, which the weight binder cannot decode"
    )]
    UnsupportedType {
        path: PathBuf,
        name: String,
        ty: String,
    },

    #[error("tensor \"{name}\" in {path} cannot be stored as {format}: {source}")]
    Format {
        path: PathBuf,
        name: String,
        format: String,
        #[source]
        source: Box<FormatError>,
    },

    #[error("{flag} cannot apply to tensor \"{name}\" in {path}: {why}")]
    Rejected {
        flag: String,
        path: PathBuf,
        name: String,
        why: String,
    },

    #[error("tensor \"{name}\" is missing from {path}")]
    Missing { path: PathBuf, name: String },

    #[error("tensor \"{name}\" in {path} no longer matches the weight plan (its shape or type differs); plan and materialize the same weights")]
    SourceChanged { path: PathBuf, name: String },

    #[error("materializing tensor \"{name}\" produced {actual} bytes, but the plan has {planned}")]
    SizeMismatch {
        name: String,
        planned: usize,
        actual: usize,
    },
}

/// What a tensor is for (decides its default format and which flags act on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TensorRole {
    /// The token embedding table.
    Embedding,
    /// The output head (its own tensor, or the embedding's when tied).
    Head,
    /// A matrix used by a linear (or expert) op.
    Linear,
    /// Norm weights, 1-D parameters, conv kernels: `f32`.
    Small,
}

/// How the materializer produces a tensor's target bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Conversion {
    /// [`crate::formats::gguf_blocks::to_format`] from the stored type straight to the target
    /// (bit for bit for `Q8_0 -> q8_g32` and `Q4_1 -> q4_1_g32`; decode and encode otherwise).
    Convert,
    /// The stored tensor in `q8_g32` (as [`Conversion::Convert`] makes it), then
    /// [`crate::formats::transcode_q8_g32_into`] into the target.
    TranscodeFromQ8,
}

/// One tensor of the plan.
#[derive(Debug, Clone)]
pub struct PlannedTensor {
    /// The name the model code looks it up by (the file's name; the tied head's synthetic one).
    pub name: String,
    /// The tensor in the file whose bytes it comes from.
    pub source: String,
    pub role: TensorRole,
    /// Row-major shape, outermost first.
    pub shape: Vec<usize>,
    /// Rows (the product of all but the last dimension; 1 for a 1-D tensor).
    pub n: usize,
    /// Values per row (the last dimension).
    pub k: usize,
    /// The stored type (a safetensors F32/F16/BF16 tensor maps to the GGUF type of the same
    /// bytes).
    pub source_type: GgufType,
    pub format: &'static Format,
    pub layout: Layout,
    pub conversion: Conversion,
    /// Offset in the arena (a multiple of [`ARENA_ALIGN`]).
    pub offset: usize,
    /// Exact bytes of the tensor in `format` (`layout.total_bytes`).
    pub bytes: usize,
    /// The index of the entry whose arena bytes this one reuses (the tied head in the
    /// embedding's format); `None` for an entry that owns its bytes.
    pub shared_with: Option<usize>,
}

impl PlannedTensor {
    /// Values in the tensor.
    pub fn elements(&self) -> usize {
        self.n * self.k
    }

    /// Storage bits per value, padding and scales included.
    pub fn bits_per_weight(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.elements().max(1) as f64
    }

    /// The arena range of its bytes.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.bytes
    }
}

/// Every tensor's target format, size and arena offset.
#[derive(Debug, Clone)]
pub struct WeightPlan {
    pub tensors: Vec<PlannedTensor>,
    /// The arena's size: the end of the last tensor, rounded up to [`ARENA_ALIGN`].
    pub arena_bytes: usize,
    /// The options the plan was made with.
    pub options: PrecisionOptions,
    /// Things the user should be told (a flag that changed nothing, ...), one sentence each.
    pub notices: Vec<String>,
    /// The weights' file (for messages).
    pub path: PathBuf,
    index: HashMap<String, usize>,
}

impl WeightPlan {
    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Option<&PlannedTensor> {
        self.index.get(name).map(|&i| &self.tensors[i])
    }

    /// The first entry with `role` (the embedding, the head).
    pub fn by_role(&self, role: TensorRole) -> Option<&PlannedTensor> {
        self.tensors.iter().find(|t| t.role == role)
    }

    /// Bytes of the tensors that own arena space (shared entries counted once), padding
    /// between tensors excluded.
    pub fn tensor_bytes(&self) -> usize {
        self.tensors
            .iter()
            .filter(|t| t.shared_with.is_none())
            .map(|t| t.bytes)
            .sum()
    }
}

fn align_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// The GGUF type whose bytes a tensor's encoding equals.
fn source_type(dtype: TensorDtype) -> Result<GgufType, String> {
    match dtype {
        TensorDtype::Ggml(id) => {
            let ty = GgufType::from_id(id).map_err(|_| format!("GGML type id {id}"))?;
            if ty.is_decoded() {
                Ok(ty)
            } else {
                Err(ty.name())
            }
        }
        TensorDtype::Safetensors(d) => match d {
            safetensors::Dtype::F32 => Ok(GgufType::F32),
            safetensors::Dtype::F16 => Ok(GgufType::F16),
            safetensors::Dtype::BF16 => Ok(GgufType::BF16),
            other => Err(format!("{other:?}")),
        },
    }
}

fn stored_bits_per_weight(ty: GgufType) -> f64 {
    let (e, b) = ty.block();
    b as f64 * 8.0 / e as f64
}

/// The default engine format of a matrix stored as `ty` (see the module docs).
fn matrix_format_name(ty: GgufType) -> &'static str {
    match ty {
        GgufType::Q4_1 => "q4_1_g32",
        GgufType::BF16 => "bf16",
        GgufType::F16 => "f16",
        GgufType::F32 => "f32",
        _ => "q8_g32",
    }
}

fn role_of(name: &str, shape: &[usize], embedding: &str, head: &str) -> TensorRole {
    if name == embedding {
        TensorRole::Embedding
    } else if name == head {
        TensorRole::Head
    } else if shape.len() < 2 || name.contains("norm") || name.ends_with("conv1d.weight") {
        TensorRole::Small
    } else {
        TensorRole::Linear
    }
}

/// The embedding's and head's names under the container's naming.
fn vocab_names(config: &ModelConfig, weights: &Weights) -> (String, String) {
    match weights {
        Weights::Gguf(_) => ("token_embd.weight".into(), "output.weight".into()),
        Weights::Safetensors(_) | Weights::Synthetic(_) => (
            format!("{}embed_tokens.weight", config.hf_tensor_prefix()),
            "lm_head.weight".into(),
        ),
    }
}

/// Plans the weights of opened model files.
pub fn plan(files: &ModelFiles, options: &PrecisionOptions) -> Result<WeightPlan, BindError> {
    plan_weights(&files.config, &files.weights, options)
}

/// Plans every tensor of `weights` (see the module docs for the rule); nothing is allocated
/// beyond the plan itself.
pub fn plan_weights(
    config: &ModelConfig,
    weights: &Weights,
    options: &PrecisionOptions,
) -> Result<WeightPlan, BindError> {
    let path = weights.path().to_path_buf();
    let (embedding, head) = vocab_names(config, weights);
    let mut notices = Vec::new();
    let mut tensors: Vec<PlannedTensor> = Vec::new();

    let entry = |name: &str,
                 source: &str,
                 role: TensorRole,
                 notices: &mut Vec<String>|
     -> Result<PlannedTensor, BindError> {
        let (shape, dtype) = weights
            .tensor_meta(source)
            .ok_or_else(|| BindError::Missing {
                path: path.clone(),
                name: source.to_string(),
            })?;
        let ty = source_type(dtype).map_err(|ty| BindError::UnsupportedType {
            path: path.clone(),
            name: source.to_string(),
            ty,
        })?;
        let k = shape.last().copied().unwrap_or(1);
        let n = if shape.len() > 1 {
            shape[..shape.len() - 1].iter().product()
        } else {
            1
        };
        let mut conversion = Conversion::Convert;
        let mut fmt_name = match role {
            TensorRole::Small => "f32",
            _ => matrix_format_name(ty),
        };
        let vocab = match role {
            TensorRole::Embedding => Some(VocabTensor::Embedding),
            TensorRole::Head => Some(VocabTensor::LmHead),
            _ => None,
        };
        if let Some(which) = vocab {
            if let Some(q) = options.vocab(which) {
                let flag = which.flag(q);
                let target = formats::format(q.format_name()).expect("seed format");
                let reject = |why: String| BindError::Rejected {
                    flag: flag.clone(),
                    path: path.clone(),
                    name: name.to_string(),
                    why,
                };
                if q == VocabQuant::Q6 && ty == GgufType::Q6_K {
                    notices.push(format!(
                        "{flag} changes nothing for tensor \"{name}\": it is stored as Q6_K already, and stays in its default format {}",
                        matrix_format_name(ty)
                    ));
                } else {
                    if !k.is_multiple_of(target.group) {
                        return Err(reject(format!(
                            "its rows have {k} values, which is not a multiple of the {} group of {}",
                            target.name, target.group
                        )));
                    }
                    let stored = stored_bits_per_weight(ty);
                    if target.bits_per_weight >= stored {
                        return Err(reject(format!(
                            "it is stored as {} at {stored} bits per weight, so {} ({} bits per weight) would lose precision without saving memory",
                            ty.name(),
                            target.name,
                            target.bits_per_weight
                        )));
                    }
                    fmt_name = target.name.as_str();
                    conversion = Conversion::TranscodeFromQ8;
                }
            }
        }
        let format = formats::format(fmt_name).expect("seed format");
        let layout_err = |source: FormatError| BindError::Format {
            path: path.clone(),
            name: name.to_string(),
            format: format.name.clone(),
            source: Box::new(source),
        };
        let layout = Layout::new(format, n, k).map_err(layout_err)?;
        // The source must fill whole blocks per row, and the q8 intermediate must fit.
        ty.bytes_for(k).map_err(|e| BindError::Format {
            path: path.clone(),
            name: name.to_string(),
            format: format.name.clone(),
            source: Box::new(e),
        })?;
        if conversion == Conversion::TranscodeFromQ8 {
            let q8 = formats::format("q8_g32").expect("seed format");
            Layout::new(q8, n, k).map_err(|source| BindError::Format {
                path: path.clone(),
                name: name.to_string(),
                format: q8.name.clone(),
                source: Box::new(source),
            })?;
            formats::transcode::check_target(format).map_err(layout_err)?;
        }
        Ok(PlannedTensor {
            name: name.to_string(),
            source: source.to_string(),
            role,
            shape,
            n,
            k,
            source_type: ty,
            format,
            layout,
            conversion,
            offset: 0,
            bytes: layout.total_bytes,
            shared_with: None,
        })
    };

    for name in weights.tensor_names() {
        let shape = weights
            .tensor_meta(name)
            .map(|(shape, _)| shape)
            .unwrap_or_default();
        let role = role_of(name, &shape, &embedding, &head);
        tensors.push(entry(name, name, role, &mut notices)?);
    }
    let has_head = weights.has_tensor(&head);
    if !has_head && config.tie_word_embeddings {
        let mut h = entry(&head, &embedding, TensorRole::Head, &mut notices)?;
        if let Some(e) = tensors.iter().position(|t| t.role == TensorRole::Embedding) {
            if tensors[e].format.name == h.format.name && tensors[e].conversion == h.conversion {
                h.shared_with = Some(e);
            }
        }
        tensors.push(h);
    }

    let mut offset = 0usize;
    for i in 0..tensors.len() {
        if let Some(s) = tensors[i].shared_with {
            tensors[i].offset = tensors[s].offset;
        } else {
            offset = align_up(offset, ARENA_ALIGN);
            tensors[i].offset = offset;
            offset += tensors[i].bytes;
        }
    }
    let arena_bytes = align_up(offset, ARENA_ALIGN);
    for n in &notices {
        tracing::info!("{n}");
    }
    let index = tensors
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), i))
        .collect();
    Ok(WeightPlan {
        tensors,
        arena_bytes,
        options: *options,
        notices,
        path,
        index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_formats_follow_the_rule() {
        assert_eq!(matrix_format_name(GgufType::Q8_0), "q8_g32");
        assert_eq!(matrix_format_name(GgufType::Q4_1), "q4_1_g32");
        assert_eq!(matrix_format_name(GgufType::BF16), "bf16");
        assert_eq!(matrix_format_name(GgufType::Q6_K), "q8_g32");
        assert_eq!(matrix_format_name(GgufType::Q4_K), "q8_g32");
        assert_eq!(
            role_of("blk.0.attn_norm.weight", &[8, 8], "e", "h"),
            TensorRole::Small
        );
        assert_eq!(role_of("x.A_log", &[8], "e", "h"), TensorRole::Small);
        assert_eq!(
            role_of("blk.0.attn_q.weight", &[8, 8], "e", "h"),
            TensorRole::Linear
        );
        assert_eq!(role_of("e", &[8, 8], "e", "h"), TensorRole::Embedding);
        assert_eq!(stored_bits_per_weight(GgufType::Q8_0), 8.5);
        assert_eq!(stored_bits_per_weight(GgufType::Q6_K), 6.5625);
        assert!(source_type(TensorDtype::Ggml(16)).is_err()); // IQ2_XXS: not decoded
        assert_eq!(
            source_type(TensorDtype::Safetensors(safetensors::Dtype::BF16)),
            Ok(GgufType::BF16)
        );
    }
}
