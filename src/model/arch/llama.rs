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
    check_lanes, check_nll_rows, check_options, tensor_f32, vocab_tensors, ArchError, CausalLm,
    KvRows, LogitsWanted, VocabValues,
};
use crate::engine::backend::{AttnShape, Backend, Rope, RopeStyle};
use crate::model::precision::PrecisionOptions;
use crate::model::{ModelConfig, ModelFiles, Weights};
use crate::ops::rmsnorm::NormWeight;

struct Layer<B: Backend> {
    attn_norm: B::Vector,
    /// q, k and v projections stacked (rows `[q; k; v]`): one launch for the three.
    wqkv: B::Linear,
    /// Their biases stacked likewise (zeros for a missing one), if any has one.
    bqkv: Option<B::Vector>,
    wo: B::Linear,
    bo: Option<B::Vector>,
    q_norm: Option<B::Vector>,
    k_norm: Option<B::Vector>,
    ffn_norm: B::Vector,
    /// Gate and up projections stacked (rows `[gate; up]`).
    gate_up: B::Linear,
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
        // Every linear is made in this one buffer, its pages mapped once for the load.
        let scratch = super::LoadScratch::default();
        // Weights stacked by rows into one layer (same K): one launch instead of several.
        let stacked = |names: &[String]| super::hold_stacked(b, opts, w, names, None, &scratch);
        let lin = |name: &str| stacked(&[name.to_string()]);
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
            let (qw, kw) = (
                c.num_attention_heads * c.head_dim,
                c.num_key_value_heads * c.head_dim,
            );
            let biases = [
                (n("attn_q.bias", "self_attn.q_proj.bias"), qw),
                (n("attn_k.bias", "self_attn.k_proj.bias"), kw),
                (n("attn_v.bias", "self_attn.v_proj.bias"), kw),
            ];
            let bqkv = if biases.iter().any(|(name, _)| w.has_tensor(name)) {
                let mut all = Vec::with_capacity(qw + 2 * kw);
                for (name, len) in &biases {
                    if w.has_tensor(name) {
                        all.extend(tensor_f32(w, name)?.1);
                    } else {
                        all.extend(std::iter::repeat_n(0.0, *len));
                    }
                }
                Some(b.vector_from_f32(all))
            } else {
                None
            };
            layers.push(Layer {
                attn_norm: vec(&n("attn_norm.weight", "input_layernorm.weight"))?,
                wqkv: stacked(&[
                    n("attn_q.weight", "self_attn.q_proj.weight"),
                    n("attn_k.weight", "self_attn.k_proj.weight"),
                    n("attn_v.weight", "self_attn.v_proj.weight"),
                ])?,
                bqkv,
                wo: lin(&n("attn_output.weight", "self_attn.o_proj.weight"))?,
                bo: opt_vec(&n("attn_output.bias", "self_attn.o_proj.bias"))?,
                q_norm: opt_vec(&n("attn_q_norm.weight", "self_attn.q_norm.weight"))?,
                k_norm: opt_vec(&n("attn_k_norm.weight", "self_attn.k_norm.weight"))?,
                ffn_norm: vec(&n("ffn_norm.weight", "post_attention_layernorm.weight"))?,
                gate_up: stacked(&[
                    n("ffn_gate.weight", "mlp.gate_proj.weight"),
                    n("ffn_up.weight", "mlp.up_proj.weight"),
                ])?,
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
        let x = self.blocks(KvRows::One(&mut state.kv), ids);
        let x = match want {
            LogitsWanted::Last => b.slice_rows(&x, b.rows(&x) - 1, 1),
            LogitsWanted::All => x,
        };
        b.to_host(&self.head_logits(&x))
    }

    fn forward_lanes(&self, states: &mut [&mut LlamaState<B>], ids: &[u32]) -> Vec<Vec<f32>> {
        check_lanes(states.len(), ids.len());
        let b = &self.backend;
        let mut kvs: Vec<&mut B::KvCache> = states.iter_mut().map(|s| &mut s.kv).collect();
        let x = self.blocks(KvRows::Lanes(&mut kvs), ids);
        let logits = b.to_host(&self.head_logits(&x));
        let vocab = logits.len() / ids.len();
        logits.chunks(vocab.max(1)).map(<[f32]>::to_vec).collect()
    }

    fn nll_rows(
        &self,
        state: &mut LlamaState<B>,
        ids: &[u32],
        first_row: usize,
        targets: &[u32],
    ) -> Vec<f64> {
        check_nll_rows(ids.len(), first_row, targets.len());
        let x = self.blocks(KvRows::One(&mut state.kv), ids);
        if targets.is_empty() {
            return Vec::new();
        }
        let b = &self.backend;
        let logits = self.head_logits(&b.slice_rows(&x, first_row, targets.len()));
        b.nll_rows(&logits, targets)
    }
}

impl<B: Backend> Llama<B> {
    /// The final norm and the head on hidden rows `x`: their logits.
    fn head_logits(&self, x: &B::Act) -> B::Act {
        let b = &self.backend;
        let eps = self.config.rms_norm_eps;
        let head = self.head.as_ref().unwrap_or(&self.embed);
        b.norm_linear(x, &self.final_norm, eps, NormWeight::Plain, head)
    }

    /// Every block on `ids` (one sequence's consecutive tokens at the positions after its
    /// cache's, or one token per lane), advancing the caches: the residual stream before the
    /// final norm, `[ids.len(), hidden]`.
    fn blocks(&self, mut kv: KvRows<'_, '_, B>, ids: &[u32]) -> B::Act {
        let b = &self.backend;
        let eps = self.config.rms_norm_eps;
        let head_dim = self.shape.head_dim;
        let mut x = b.embedding(&self.embed, ids);
        for (li, l) in self.layers.iter().enumerate() {
            let qkv = match &l.bqkv {
                Some(bias) => {
                    let h = b.rmsnorm(&x, &l.attn_norm, eps, NormWeight::Plain);
                    b.linear(&h, &l.wqkv, Some(bias))
                }
                None => b.norm_linear(&x, &l.attn_norm, eps, NormWeight::Plain, &l.wqkv),
            };
            let (qw, kw) = (
                self.shape.n_heads * head_dim,
                self.shape.n_kv_heads * head_dim,
            );
            let a = if l.q_norm.is_none() && l.k_norm.is_none() {
                kv.rope_attention_qkv(b, li, &qkv, qw, kw, head_dim, &self.rope)
            } else {
                let [mut q, mut k, v]: [B::Act; 3] = super::split_n(b, &qkv, [qw, kw, kw]);
                if let Some(qn) = &l.q_norm {
                    q = b.rmsnorm(&q, qn, eps, NormWeight::Plain);
                }
                if let Some(kn) = &l.k_norm {
                    k = b.rmsnorm(&k, kn, eps, NormWeight::Plain);
                }
                kv.rope_attention(b, li, &mut q, &mut k, &v, head_dim, &self.rope)
            };
            b.linear_add(&mut x, &a, &l.wo, l.bo.as_ref());
            b.norm_mlp_add(
                &mut x,
                &l.ffn_norm,
                eps,
                NormWeight::Plain,
                &l.gate_up,
                &l.down,
            );
        }
        kv.advance(b, ids.len());
        x
    }
}
