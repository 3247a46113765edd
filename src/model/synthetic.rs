//! Synthetic models: random weights at the shapes of real models, with no file.
//!
//! `ninfer bench model --synthetic NAME` measures the engine on a model nobody has to
//! download. The config is the real model's (written here as the HF `config.json` would hold
//! it, and parsed by [`ModelConfig::from_hf_json`]); the tensors are the ones the
//! architecture loads, under HF names, and each is made only when it is asked for, so the
//! host never holds more than the tensor being loaded (27B parameters in f32 would be
//! 108 GB). Values come from a counter-based generator: value `i` of a tensor is a function
//! of the seed, the tensor's name and `i` alone, so the same seed gives the same bytes
//! whatever the thread count or the order tensors are asked in, on every machine.
//!
//! Values (chosen so activations stay finite through every layer):
//! - linear layers, embedding, router, shared-expert gate: approximately normal, mean 0,
//!   std 0.02 (the sum of four uniforms scaled to unit variance: bounded at 3.46 std);
//! - RMSNorm weights near 1 in effect: `1 + N(0, 0.02)` where the norm multiplies by `w`
//!   (llama norms, the GDN output norm), `N(0, 0.02)` where it multiplies by `1 + w` (the
//!   zero-centred norms of the Qwen3.5 family);
//! - GDN `conv1d.weight`: uniform in [-0.5, 0.5] (PyTorch's default for a fan-in of 4);
//!   `A_log = ln(A)`, A uniform in [1, 16]; `dt_bias` the inverse softplus of a dt drawn
//!   log-uniformly from [0.001, 0.1] (the Mamba/flash-linear-attention initialisation).
//!
//! MoE experts are separate tensors (`mlp.experts.{e}.{gate,up,down}_proj.weight`, the
//! per-expert naming the architecture also reads) rather than Qwen3.5's fused `[E, 2I, H]`
//! tensor, so each is small; the arithmetic is the same. No MTP layer is made.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use rayon::prelude::*;

use super::config::ModelConfig;
use super::error::ModelError;
use super::{Dtype, TensorDtype, TensorRef};

/// The synthetic models, by the name `--synthetic` takes.
pub const SYNTHETIC_MODELS: &[&str] = &[
    "qwen3.6-27b",
    "qwen3.6-35b-a3b",
    "smollm2-135m",
    "qwen3.6-mini",
];

/// The shapes, for `--help` and the docs.
pub const SHAPES_HELP: &str = "\
Random weights at a real model's shapes, no file needed:
  qwen3.6-27b      Qwen3.6-27B (dense hybrid): hidden 5120, 64 layers (48 Gated DeltaNet +
                   16 gated attention, every 4th), attention 24 heads / 4 kv / head_dim 256,
                   GDN 16 key heads / 48 value heads / dk 128 / dv 128 / conv 4, SwiGLU MLP
                   17408, vocab 248320, untied head, rope theta 1e7 partial 0.25:
                   26.9 B parameters
  qwen3.6-35b-a3b  Qwen3.6-35B-A3B (MoE hybrid): hidden 2048, 40 layers (30 GDN + 10
                   attention), attention 16 / 2 / 256, GDN 16 / 32 / 128 / 128 / 4,
                   256 experts of 512, top 8, shared expert 512, vocab 248320, untied head:
                   34.7 B parameters, 3.5 B active per token (embedding table counted whole)
  smollm2-135m     SmolLM2-135M-Instruct (llama): hidden 576, 30 layers, 9 heads / 3 kv /
                   head_dim 64, MLP 1536, vocab 49152, tied embedding, rope theta 1e5:
                   134.5 M parameters
  qwen3.6-mini     the 27B's head shapes at a small width, for `ninfer compare` against the
                   cpu backend in seconds: hidden 1024, 4 layers (3 GDN + 1 attention),
                   attention 4 / 1 / 256, GDN 4 / 8 / 128 / 128 / 4, SwiGLU MLP 2048,
                   vocab 4096, untied head: 50.3 M parameters
Values: linears N(0, 0.02), norms near 1, GDN A_log and dt_bias as initialised in training;
the same --seed gives the same weights.";

/// The real model's `config.json`, as far as the engine reads it.
fn config_json(name: &str) -> Option<&'static str> {
    Some(match name {
        // Qwen3.5/3.6 dense (MODEL_SPEC section 8). The checkpoint's MTP layer is left out.
        "qwen3.6-27b" => {
            r#"{"model_type": "qwen3_5", "tie_word_embeddings": false,
            "text_config": {"model_type": "qwen3_5_text", "hidden_size": 5120,
            "num_hidden_layers": 64, "num_attention_heads": 24, "num_key_value_heads": 4,
            "head_dim": 256, "intermediate_size": 17408, "vocab_size": 248320,
            "rms_norm_eps": 1e-6, "linear_num_key_heads": 16, "linear_num_value_heads": 48,
            "linear_key_head_dim": 128, "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
            "max_position_embeddings": 262144, "mtp_num_hidden_layers": 0,
            "rope_parameters": {"rope_theta": 10000000, "partial_rotary_factor": 0.25,
            "rope_type": "default"}}}"#
        }
        // Qwen3.5/3.6 MoE (MODEL_SPEC section 8).
        "qwen3.6-35b-a3b" => {
            r#"{"model_type": "qwen3_5_moe", "tie_word_embeddings": false,
            "text_config": {"model_type": "qwen3_5_moe_text", "hidden_size": 2048,
            "num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 2,
            "head_dim": 256, "vocab_size": 248320, "rms_norm_eps": 1e-6,
            "linear_num_key_heads": 16, "linear_num_value_heads": 32,
            "linear_key_head_dim": 128, "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
            "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512, "norm_topk_prob": true,
            "max_position_embeddings": 262144, "mtp_num_hidden_layers": 0,
            "rope_parameters": {"rope_theta": 10000000, "partial_rotary_factor": 0.25,
            "rope_type": "default"}}}"#
        }
        // Not a released model: the 27B's per-head shapes (GDN dk = dv = 128, attention
        // head_dim 256, partial RoPE) and widths that are whole multiples of 1024, so that
        // every kernel route of the real model's decode runs, at a size the cpu backend
        // checks in seconds.
        "qwen3.6-mini" => {
            r#"{"model_type": "qwen3_5", "tie_word_embeddings": false,
            "text_config": {"model_type": "qwen3_5_text", "hidden_size": 1024,
            "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 1,
            "head_dim": 256, "intermediate_size": 2048, "vocab_size": 4096,
            "rms_norm_eps": 1e-6, "linear_num_key_heads": 4, "linear_num_value_heads": 8,
            "linear_key_head_dim": 128, "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
            "max_position_embeddings": 262144, "mtp_num_hidden_layers": 0,
            "rope_parameters": {"rope_theta": 10000000, "partial_rotary_factor": 0.25,
            "rope_type": "default"}}}"#
        }
        // HuggingFaceTB/SmolLM2-135M-Instruct.
        "smollm2-135m" => {
            r#"{"model_type": "llama", "hidden_size": 576, "num_hidden_layers": 30,
            "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536,
            "vocab_size": 49152, "rms_norm_eps": 1e-5, "rope_theta": 100000,
            "tie_word_embeddings": true, "max_position_embeddings": 8192,
            "bos_token_id": 1, "eos_token_id": 2}"#
        }
        _ => return None,
    })
}

fn unknown(name: &str) -> ModelError {
    ModelError::UnknownSynthetic {
        name: name.to_string(),
        known: SYNTHETIC_MODELS.join(", "),
    }
}

/// The config of synthetic model `name`.
pub fn synthetic_config(name: &str) -> Result<ModelConfig, ModelError> {
    let json = config_json(name).ok_or_else(|| unknown(name))?;
    ModelConfig::from_hf_json(json, Path::new(&format!("synthetic:{name}")))
}

/// How a tensor's values are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// Approximately normal (the sum of four uniforms, scaled): `mean + std * z`.
    Normal { mean: f32, std: f32 },
    /// Uniform in `[lo, hi]`.
    Uniform { lo: f32, hi: f32 },
    /// `ln(A)`, A uniform in `[lo, hi]` (GDN `A_log`).
    LnUniform { lo: f32, hi: f32 },
    /// The inverse softplus of a dt drawn log-uniformly from `[lo, hi]` (GDN `dt_bias`).
    InvSoftplusLogUniform { lo: f32, hi: f32 },
}

/// The std of linear layers and embeddings.
pub const LINEAR_STD: f32 = 0.02;

/// How the tensor `name` of a model of `config` is drawn.
pub fn init_of(config: &ModelConfig, name: &str) -> Init {
    let normal = |mean| Init::Normal {
        mean,
        std: LINEAR_STD,
    };
    if name.ends_with("linear_attn.norm.weight") {
        normal(1.0)
    } else if name.ends_with("norm.weight") {
        normal(if config.architecture.zero_centred_norms() {
            0.0
        } else {
            1.0
        })
    } else if name.ends_with("conv1d.weight") {
        Init::Uniform { lo: -0.5, hi: 0.5 }
    } else if name.ends_with("A_log") {
        Init::LnUniform { lo: 1.0, hi: 16.0 }
    } else if name.ends_with("dt_bias") {
        Init::InvSoftplusLogUniform { lo: 1e-3, hi: 0.1 }
    } else {
        normal(0.0)
    }
}

/// SplitMix64's finaliser: a well-mixed 64-bit value of `x`.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// 64 random bits for value `i` of the tensor keyed `key`.
#[inline]
fn bits(key: u64, i: u64) -> u64 {
    mix(key.wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
}

/// A uniform in (0, 1) from 24 bits (exact in f32).
#[inline]
fn unit(b: u64) -> f32 {
    ((b >> 40) as f32 + 0.5) * (1.0 / 16_777_216.0)
}

/// Value `i` of a tensor keyed `key` drawn as `init`. Only exact f32 operations for the
/// normal and uniform draws (identical bytes on every machine); the two GDN draws (a few
/// values per layer) use `ln`/`exp`.
#[inline]
pub fn draw(init: Init, key: u64, i: u64) -> f32 {
    let b = bits(key, i);
    match init {
        Init::Normal { mean, std } => {
            // Four 16-bit uniforms: their sum minus 2 has variance 1/3.
            let s = (b & 0xffff) + ((b >> 16) & 0xffff) + ((b >> 32) & 0xffff) + (b >> 48);
            let z = ((s as f32 + 2.0) * (1.0 / 65_536.0) - 2.0) * 1.732_050_8;
            mean + std * z
        }
        Init::Uniform { lo, hi } => lo + (hi - lo) * unit(b),
        Init::LnUniform { lo, hi } => (lo + (hi - lo) * unit(b)).ln(),
        Init::InvSoftplusLogUniform { lo, hi } => {
            let dt = (lo.ln() + (hi.ln() - lo.ln()) * unit(b)).exp();
            // softplus(x) = dt  <=>  x = dt + ln(1 - exp(-dt)).
            dt + (-(-dt).exp_m1()).ln()
        }
    }
}

/// One tensor of a synthetic model.
#[derive(Debug, Clone)]
pub struct SyntheticTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub init: Init,
    /// The generator's key: from the seed and the name.
    key: u64,
}

impl SyntheticTensor {
    pub fn elements(&self) -> usize {
        self.shape.iter().product()
    }
}

/// A synthetic model's weights: the tensor list, made on demand.
pub struct SyntheticWeights {
    name: String,
    seed: u64,
    label: PathBuf,
    config: ModelConfig,
    tensors: Vec<SyntheticTensor>,
    index: HashMap<String, usize>,
    progress: ProgressBar,
}

impl std::fmt::Debug for SyntheticWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyntheticWeights")
            .field("name", &self.name)
            .field("seed", &self.seed)
            .field("tensors", &self.tensors.len())
            .field("parameters", &self.param_count())
            .finish()
    }
}

/// The generator key of tensor `name` under `seed`.
fn key_of(seed: u64, name: &str) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(name.as_bytes());
    let out = h.finalize();
    u64::from_le_bytes(out.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// Whether layer `i` of `config` has a sparse MoE FFN (the architecture's rule).
pub fn is_moe_layer(config: &ModelConfig, i: usize) -> bool {
    config.moe.as_ref().is_some_and(|moe| {
        !moe.mlp_only_layers.contains(&i) && (i + 1).is_multiple_of(moe.decoder_sparse_step.max(1))
    })
}

impl SyntheticWeights {
    /// The synthetic model `name` (one of [`SYNTHETIC_MODELS`]) made from `seed`. Nothing is
    /// generated yet.
    pub fn new(name: &str, seed: u64) -> Result<Self, ModelError> {
        let config = synthetic_config(name)?;
        let mut list: Vec<(String, Vec<usize>)> = super::expected_tensors(&config, false)
            .into_iter()
            .filter(|(_, _, required)| *required)
            .map(|(n, s, _)| (n, s))
            .collect();
        // Experts as separate tensors, after each MoE layer's router.
        if let Some(moe) = &config.moe {
            let (h, inter) = (config.hidden_size, moe.moe_intermediate_size);
            let m = config.hf_tensor_prefix();
            for i in (0..config.num_hidden_layers).filter(|&i| is_moe_layer(&config, i)) {
                for e in 0..moe.num_experts {
                    let p = format!("{m}layers.{i}.mlp.experts.{e}.");
                    list.push((format!("{p}gate_proj.weight"), vec![inter, h]));
                    list.push((format!("{p}up_proj.weight"), vec![inter, h]));
                    list.push((format!("{p}down_proj.weight"), vec![h, inter]));
                }
            }
        }
        let tensors: Vec<SyntheticTensor> = list
            .into_iter()
            .map(|(name, shape)| SyntheticTensor {
                init: init_of(&config, &name),
                key: key_of(seed, &name),
                name,
                shape,
            })
            .collect();
        let index = tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        Ok(SyntheticWeights {
            name: name.to_string(),
            seed,
            label: PathBuf::from(format!("synthetic:{name}")),
            config,
            tensors,
            index,
            progress: ProgressBar::hidden(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// `synthetic:NAME`, standing in for a path in messages.
    pub fn label(&self) -> &Path {
        &self.label
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    pub fn tensors(&self) -> &[SyntheticTensor] {
        &self.tensors
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.iter().map(|t| t.name.as_str())
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    pub fn shape(&self, name: &str) -> Option<&[usize]> {
        self.index
            .get(name)
            .map(|&i| self.tensors[i].shape.as_slice())
    }

    /// Every parameter.
    pub fn param_count(&self) -> u64 {
        self.tensors.iter().map(|t| t.elements() as u64).sum()
    }

    /// The parameters one token uses: every tensor but the experts, and `top_k / experts`
    /// of the experts' (the embedding table counted whole, as model cards count it).
    pub fn active_param_count(&self) -> u64 {
        let share = self
            .config
            .moe
            .as_ref()
            .map(|m| m.num_experts_per_tok as f64 / m.num_experts as f64)
            .unwrap_or(1.0);
        self.tensors
            .iter()
            .map(|t| {
                let n = t.elements() as f64;
                if t.name.contains(".mlp.experts.") {
                    n * share
                } else {
                    n
                }
            })
            .sum::<f64>()
            .round() as u64
    }

    /// A bar to advance by each tensor's element count as it is made (hidden by default).
    pub fn set_progress(&mut self, bar: ProgressBar) {
        self.progress = bar;
    }

    /// The values of tensor `name` (row-major), made now, in parallel.
    pub fn values(&self, name: &str) -> Option<Vec<f32>> {
        let mut out = vec![0f32; self.tensors[*self.index.get(name)?].elements()];
        self.values_into(name, &mut out)?;
        Some(out)
    }

    /// [`Self::values`] written into `out`, which must hold exactly the tensor's elements
    /// (`None`: no such tensor). Lets a caller make several tensors straight into the rows
    /// of one stacked buffer instead of copying them there.
    pub fn values_into(&self, name: &str, out: &mut [f32]) -> Option<()> {
        let t = &self.tensors[*self.index.get(name)?];
        assert_eq!(
            out.len(),
            t.elements(),
            "{name}: the buffer is not the tensor's size"
        );
        const CHUNK: usize = 1 << 16;
        out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, part)| {
            let base = (c * CHUNK) as u64;
            for (j, v) in part.iter_mut().enumerate() {
                *v = draw(t.init, t.key, base + j as u64);
            }
        });
        self.progress.inc(out.len() as u64);
        Some(())
    }

    /// Tensor `name` as f32 little-endian bytes (made now).
    pub fn tensor(&self, name: &str) -> Option<TensorRef<'_>> {
        let t = &self.tensors[*self.index.get(name)?];
        let values = self.values(name)?;
        Some(TensorRef {
            name: &t.name,
            shape: t.shape.clone(),
            dtype: TensorDtype::Safetensors(Dtype::F32),
            data: Cow::Owned(bytemuck::cast_slice(&values).to_vec()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Architecture;

    fn within(x: u64, want: f64, rel: f64) -> bool {
        ((x as f64) - want).abs() <= rel * want
    }

    #[test]
    fn the_configs_are_the_real_models() {
        let c = synthetic_config("qwen3.6-27b").unwrap();
        assert_eq!(c.architecture, Architecture::Qwen35);
        assert_eq!((c.hidden_size, c.num_hidden_layers), (5120, 64));
        let attn = (0..64).filter(|&i| c.is_full_attention(i)).count();
        assert_eq!(attn, 16);
        assert!(c.is_full_attention(3) && !c.is_full_attention(0));
        assert_eq!(c.rotary_dim(), 64);
        let g = c.gdn.as_ref().unwrap();
        assert_eq!(
            (g.num_key_heads, g.num_value_heads, g.key_head_dim),
            (16, 48, 128)
        );

        let c = synthetic_config("qwen3.6-35b-a3b").unwrap();
        assert_eq!(c.architecture, Architecture::Qwen35Moe);
        let m = c.moe.as_ref().unwrap();
        assert_eq!((m.num_experts, m.num_experts_per_tok), (256, 8));
        assert_eq!((0..40).filter(|&i| c.is_full_attention(i)).count(), 10);

        let c = synthetic_config("smollm2-135m").unwrap();
        assert_eq!(c.architecture, Architecture::Llama);
        assert_eq!((c.head_dim, c.num_key_value_heads), (64, 3));
        assert!(c.tie_word_embeddings);

        let c = synthetic_config("qwen3.6-mini").unwrap();
        assert_eq!(c.architecture, Architecture::Qwen35);
        assert_eq!((c.hidden_size, c.num_hidden_layers), (1024, 4));
        assert_eq!((0..4).filter(|&i| c.is_full_attention(i)).count(), 1);
        let g = c.gdn.as_ref().unwrap();
        assert_eq!(
            (
                g.num_key_heads,
                g.num_value_heads,
                g.key_head_dim,
                g.value_head_dim
            ),
            (4, 8, 128, 128)
        );

        let e = synthetic_config("llama-7b").unwrap_err().to_string();
        assert!(e.contains("llama-7b") && e.contains("qwen3.6-27b"), "{e}");
    }

    #[test]
    fn parameter_counts_match_the_real_models() {
        let w = SyntheticWeights::new("qwen3.6-27b", 0).unwrap();
        assert!(within(w.param_count(), 26.9e9, 0.02), "{}", w.param_count());
        assert_eq!(w.param_count(), w.active_param_count());

        let w = SyntheticWeights::new("qwen3.6-35b-a3b", 0).unwrap();
        assert!(within(w.param_count(), 34.7e9, 0.02), "{}", w.param_count());
        let active = w.active_param_count();
        assert!((2.5e9..4.0e9).contains(&(active as f64)), "{active}");
        // 40 layers x 256 experts x 3 tensors.
        assert_eq!(
            w.names().filter(|n| n.contains(".experts.")).count(),
            30_720
        );

        let w = SyntheticWeights::new("smollm2-135m", 0).unwrap();
        assert!(
            within(w.param_count(), 134.5e6, 0.01),
            "{}",
            w.param_count()
        );
        assert!(w.shape("lm_head.weight").is_none(), "tied");
        assert_eq!(
            w.shape("model.embed_tokens.weight"),
            Some(&[49152, 576][..])
        );

        let w = SyntheticWeights::new("qwen3.6-mini", 0).unwrap();
        assert!(within(w.param_count(), 50.3e6, 0.01), "{}", w.param_count());
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        let a = SyntheticWeights::new("smollm2-135m", 7).unwrap();
        let b = SyntheticWeights::new("smollm2-135m", 7).unwrap();
        let c = SyntheticWeights::new("smollm2-135m", 8).unwrap();
        let name = "model.layers.3.self_attn.k_proj.weight";
        let (ta, tb, tc) = (
            a.tensor(name).unwrap(),
            b.tensor(name).unwrap(),
            c.tensor(name).unwrap(),
        );
        assert_eq!(ta.shape, vec![192, 576]);
        assert_eq!(ta.data.len(), 192 * 576 * 4);
        assert_eq!(ta.data, tb.data);
        assert_ne!(ta.data, tc.data);
        // Different tensors of one model differ.
        let other = a.values("model.layers.4.self_attn.k_proj.weight").unwrap();
        assert_ne!(a.values(name).unwrap(), other);
        // Pinned: the generator does not drift between versions or machines.
        let v = a.values(name).unwrap();
        let bits: Vec<u32> = v[..3].iter().map(|x| x.to_bits()).collect();
        assert_eq!(
            bits,
            vec![3156971899, 1007389420, 3148630398],
            "{:?}",
            &v[..3]
        );
    }

    #[test]
    fn values_have_the_stated_distributions() {
        let w = SyntheticWeights::new("qwen3.6-35b-a3b", 1).unwrap();
        let m = "model.language_model.";
        let stats = |v: &[f32]| {
            let n = v.len() as f64;
            let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
            let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            (mean, var.sqrt())
        };
        let lin = w
            .values(&format!("{m}layers.0.linear_attn.in_proj_z.weight"))
            .unwrap();
        let (mean, std) = stats(&lin);
        assert!(
            mean.abs() < 1e-3 && (std - 0.02).abs() < 1e-3,
            "{mean} {std}"
        );
        assert!(lin.iter().all(|x| x.abs() <= 0.0693));
        // Zero-centred norms near 0, the GDN output norm near 1.
        let (mean, _) = stats(
            &w.values(&format!("{m}layers.0.input_layernorm.weight"))
                .unwrap(),
        );
        assert!(mean.abs() < 0.01, "{mean}");
        let (mean, _) = stats(
            &w.values(&format!("{m}layers.0.linear_attn.norm.weight"))
                .unwrap(),
        );
        assert!((mean - 1.0).abs() < 0.01, "{mean}");
        let a_log = w.values(&format!("{m}layers.0.linear_attn.A_log")).unwrap();
        assert_eq!(a_log.len(), 32);
        assert!(a_log.iter().all(|&x| (0.0..=16f32.ln()).contains(&x)));
        let dt_bias = w
            .values(&format!("{m}layers.0.linear_attn.dt_bias"))
            .unwrap();
        for x in dt_bias {
            let softplus = (1.0 + (x as f64).exp()).ln();
            assert!((0.99e-3..=0.101).contains(&softplus), "{x} {softplus}");
        }
        let conv = w
            .values(&format!("{m}layers.0.linear_attn.conv1d.weight"))
            .unwrap();
        assert!(conv.iter().all(|x| x.abs() <= 0.5));
        let s = SyntheticWeights::new("smollm2-135m", 1).unwrap();
        let (mean, _) = stats(&s.values("model.layers.0.input_layernorm.weight").unwrap());
        assert!((mean - 1.0).abs() < 0.01, "llama norms are plain: {mean}");
    }
}
