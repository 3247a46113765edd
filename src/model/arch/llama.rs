//! The llama family (SmolLM2, Llama 3, Qwen3 dense with q/k norm): pre-norm blocks of
//! GQA attention with RoPE and a SwiGLU MLP, plain-weight RMSNorms, optional tied head.
//!
//! RoPE layout: HF checkpoints (and GGUF `qwen3`) run rotate-half ("NeoX") RoPE on the
//! stored q/k rows. GGUF `llama` files store q/k rows permuted per head (llama.cpp's
//! converter moves HF row `i` to `2i` and row `i + hd/2` to `2i + 1`) so that llama.cpp's
//! interleaved-pair RoPE gives the same result; we run those files with
//! [`RopeStyle::Interleaved`] on the stored rows, which is exactly equivalent (the q.k
//! products are invariant under the same permutation of q and k; v/o are not permuted).

use super::{
    check_options, tensor_f32, vocab_tensors, ArchError, CausalLm, LogitsWanted, VocabValues,
};
use crate::engine::backend::{AttnShape, Backend, Rope, RopeStyle};
use crate::model::precision::PrecisionOptions;
use crate::model::{ModelConfig, ModelFiles, Weights};
use crate::ops::rmsnorm::NormWeight;

struct Layer<B: Backend> {
    attn_norm: B::Vector,
    wq: B::Linear,
    wk: B::Linear,
    wv: B::Linear,
    wo: B::Linear,
    bq: Option<B::Vector>,
    bk: Option<B::Vector>,
    bv: Option<B::Vector>,
    bo: Option<B::Vector>,
    q_norm: Option<B::Vector>,
    k_norm: Option<B::Vector>,
    ffn_norm: B::Vector,
    gate: B::Linear,
    up: B::Linear,
    down: B::Linear,
}

/// A llama-family model on backend `B`.
pub struct Llama<B: Backend> {
    backend: B,
    config: ModelConfig,
    embed: B::Linear,
    head: Option<B::Linear>,
    final_norm: B::Vector,
    layers: Vec<Layer<B>>,
    rope: Rope,
    shape: AttnShape,
}

/// A sequence's state: its KV cache.
pub struct LlamaState<B: Backend> {
    pub kv: B::KvCache,
}

impl<B: Backend> Llama<B> {
    /// Decodes the weights of `files` to f32 and uploads them to `b` (default precision).
    pub fn load(b: &B, files: &ModelFiles) -> Result<Self, ArchError> {
        Self::load_with(b, files, &PrecisionOptions::default())
    }

    /// As [`Llama::load`] with precision options: the vocabulary flags (see
    /// [`super::vocab_tensors`]); `--gdn-state-fp16` is refused (no GDN layers).
    pub fn load_with(
        b: &B,
        files: &ModelFiles,
        opts: &PrecisionOptions,
    ) -> Result<Self, ArchError> {
        let c = &files.config;
        let w = &files.weights;
        check_options(c, opts)?;
        let gguf = matches!(w, Weights::Gguf(_));
        let lin = |name: &str| -> Result<B::Linear, ArchError> {
            let (shape, v) = tensor_f32(w, name)?;
            let cols = *shape.last().unwrap_or(&1);
            Ok(b.linear_from_f32(v.len() / cols.max(1), cols, v))
        };
        let vec = |name: &str| -> Result<B::Vector, ArchError> {
            Ok(b.vector_from_f32(tensor_f32(w, name)?.1))
        };
        let opt_vec = |name: &str| -> Result<Option<B::Vector>, ArchError> {
            if w.has_tensor(name) {
                vec(name).map(Some)
            } else {
                Ok(None)
            }
        };
        let (embed_name, norm_name, head_name) = if gguf {
            ("token_embd.weight", "output_norm.weight", "output.weight")
        } else {
            (
                "model.embed_tokens.weight",
                "model.norm.weight",
                "lm_head.weight",
            )
        };
        let head = if w.has_tensor(head_name) {
            Some(VocabValues::read(w, head_name)?)
        } else {
            None
        };
        let (embed, head) = vocab_tensors(b, VocabValues::read(w, embed_name)?, head, opts)?;
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for i in 0..c.num_hidden_layers {
            let n = |gg: &str, hf: &str| {
                if gguf {
                    format!("blk.{i}.{gg}")
                } else {
                    format!("model.layers.{i}.{hf}")
                }
            };
            layers.push(Layer {
                attn_norm: vec(&n("attn_norm.weight", "input_layernorm.weight"))?,
                wq: lin(&n("attn_q.weight", "self_attn.q_proj.weight"))?,
                wk: lin(&n("attn_k.weight", "self_attn.k_proj.weight"))?,
                wv: lin(&n("attn_v.weight", "self_attn.v_proj.weight"))?,
                wo: lin(&n("attn_output.weight", "self_attn.o_proj.weight"))?,
                bq: opt_vec(&n("attn_q.bias", "self_attn.q_proj.bias"))?,
                bk: opt_vec(&n("attn_k.bias", "self_attn.k_proj.bias"))?,
                bv: opt_vec(&n("attn_v.bias", "self_attn.v_proj.bias"))?,
                bo: opt_vec(&n("attn_output.bias", "self_attn.o_proj.bias"))?,
                q_norm: opt_vec(&n("attn_q_norm.weight", "self_attn.q_norm.weight"))?,
                k_norm: opt_vec(&n("attn_k_norm.weight", "self_attn.k_norm.weight"))?,
                ffn_norm: vec(&n("ffn_norm.weight", "post_attention_layernorm.weight"))?,
                gate: lin(&n("ffn_gate.weight", "mlp.gate_proj.weight"))?,
                up: lin(&n("ffn_up.weight", "mlp.up_proj.weight"))?,
                down: lin(&n("ffn_down.weight", "mlp.down_proj.weight"))?,
            });
        }
        let style = if gguf && c.model_type == "llama" {
            RopeStyle::Interleaved
        } else {
            RopeStyle::Neox
        };
        Ok(Llama {
            backend: b.clone(),
            config: c.clone(),
            embed,
            head,
            final_norm: vec(norm_name)?,
            layers,
            rope: Rope {
                style,
                theta: c.rope_theta,
                rotary_dim: c.rotary_dim(),
            },
            shape: AttnShape {
                n_heads: c.num_attention_heads,
                n_kv_heads: c.num_key_value_heads,
                head_dim: c.head_dim,
            },
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The backend the model runs on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The RoPE this model runs with.
    pub fn rope(&self) -> Rope {
        self.rope
    }
}

impl<B: Backend> CausalLm<B> for Llama<B> {
    type State = LlamaState<B>;

    fn new_state(&self) -> LlamaState<B> {
        LlamaState {
            kv: self.backend.new_kv_cache(self.layers.len(), self.shape),
        }
    }

    fn position(&self, state: &LlamaState<B>) -> usize {
        self.backend.kv_len(&state.kv)
    }

    fn vocab_size(&self) -> usize {
        self.config.vocab_size
    }

    fn forward(&self, state: &mut LlamaState<B>, ids: &[u32], want: LogitsWanted) -> Vec<f32> {
        let b = &self.backend;
        let eps = self.config.rms_norm_eps;
        let AttnShape {
            n_heads,
            n_kv_heads,
            head_dim,
        } = self.shape;
        let pos0 = b.kv_len(&state.kv);
        let mut x = b.embedding(&self.embed, ids);
        for (li, l) in self.layers.iter().enumerate() {
            let h = b.rmsnorm(&x, &l.attn_norm, eps, NormWeight::Plain);
            let mut q = b.linear(&h, &l.wq, l.bq.as_ref());
            let mut k = b.linear(&h, &l.wk, l.bk.as_ref());
            let v = b.linear(&h, &l.wv, l.bv.as_ref());
            if let Some(qn) = &l.q_norm {
                q = b.rmsnorm(&q, qn, eps, NormWeight::Plain);
            }
            if let Some(kn) = &l.k_norm {
                k = b.rmsnorm(&k, kn, eps, NormWeight::Plain);
            }
            b.rope(&mut q, n_heads, head_dim, pos0, &self.rope);
            b.rope(&mut k, n_kv_heads, head_dim, pos0, &self.rope);
            let a = b.attention(&mut state.kv, li, &q, &k, &v);
            b.linear_add(&mut x, &a, &l.wo, l.bo.as_ref());
            let h = b.rmsnorm(&x, &l.ffn_norm, eps, NormWeight::Plain);
            let g = b.linear(&h, &l.gate, None);
            let u = b.linear(&h, &l.up, None);
            b.linear_add(&mut x, &b.swiglu(&g, &u), &l.down, None);
        }
        b.kv_advance(&mut state.kv, ids.len());
        let x = match want {
            LogitsWanted::Last => b.slice_rows(&x, b.rows(&x) - 1, 1),
            LogitsWanted::All => x,
        };
        let x = b.rmsnorm(&x, &self.final_norm, eps, NormWeight::Plain);
        let head = self.head.as_ref().unwrap_or(&self.embed);
        b.to_host(&b.linear(&x, head, None))
    }
}
