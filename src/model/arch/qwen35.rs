//! Qwen3.5/3.6 dense and MoE, and Qwen3-Next (fused GDN projections de-grouped at load)
//! (MODEL_SPEC sections 2-6): Gated DeltaNet layers and gated full
//! attention layers per `layer_types`, SwiGLU MLP, zero-centred RMSNorms (plain weight for
//! the GDN output norm), partial NeoX RoPE.

use super::{
    check_lanes, check_nll_rows, tensor_f32, vocab_tensors, ArchError, CausalLm, KvRows,
    LogitsWanted, VocabValues,
};
use crate::engine::backend::{AttnShape, Backend, QkNorms, Rope, RopeStyle};
use crate::model::precision::PrecisionOptions;
use crate::model::{Architecture, ModelConfig, ModelFiles};
use crate::ops::gdn::{GdnDims, StateType};
use crate::ops::rmsnorm::NormWeight;

enum Mixer<B: Backend> {
    Attention {
        /// q (with its gate, per head `[q | gate]`), k and v projections stacked by rows:
        /// one launch for the three (a one-row step's column slices are free views).
        wqkv: B::Linear,
        o_proj: B::Linear,
        q_norm: B::Vector,
        k_norm: B::Vector,
    },
    Gdn {
        /// `in_proj_qkv`, `in_proj_z`, `in_proj_b` and `in_proj_a` stacked by rows (widths
        /// `GdnDims::conv_dim`, `value_dim`, `hv`, `hv`): one launch for the four.
        in_proj: B::Linear,
        params: B::GdnWeights,
        out_proj: B::Linear,
    },
}

/// A SwiGLU MLP: `down(silu(gate x) * up x)`, gate and up stacked by rows (`[gate; up]`).
struct Mlp<B: Backend> {
    gate_up: B::Linear,
    down: B::Linear,
}

/// `[gate | up]` of an MLP's stacked projection.
fn gate_up<B: Backend>(b: &B, m: &Mlp<B>, x: &B::Act) -> (B::Act, B::Act) {
    let gu = b.linear(x, &m.gate_up, None);
    let inter = b.cols(&gu) / 2;
    (b.slice_cols(&gu, 0, inter), b.slice_cols(&gu, inter, inter))
}

enum Ffn<B: Backend> {
    Dense(Mlp<B>),
    /// Sparse MoE (MODEL_SPEC section 6): softmax router over all experts, top-k,
    /// renormalised; plus a sigmoid-gated shared expert.
    Moe {
        router: B::Linear,
        experts: Vec<Mlp<B>>,
        top_k: usize,
        renormalize: bool,
        shared: Option<(Mlp<B>, B::Linear)>,
    },
}

struct Layer<B: Backend> {
    input_norm: B::Vector,
    mixer: Mixer<B>,
    post_norm: B::Vector,
    ffn: Ffn<B>,
}

/// The GDN states a forward's rows advance: one sequence's (none for an attention layer),
/// or one per lane (row `i` is lane `i`'s next token).
enum GdnRows<'a, 'b, B: Backend> {
    One(Option<&'a mut B::GdnState>),
    Lanes(&'a mut [&'b mut B::GdnState]),
}

fn mlp<B: Backend>(b: &B, m: &Mlp<B>, x: &B::Act) -> B::Act {
    let (g, u) = gate_up(b, m, x);
    b.linear(&b.swiglu(&g, &u), &m.down, None)
}

/// `out += mlp(rmsnorm(x))`, the norm and SwiGLU left to the backend to fuse.
fn norm_mlp_add<B: Backend>(
    b: &B,
    m: &Mlp<B>,
    x: &mut B::Act,
    norm: &B::Vector,
    eps: f64,
    conv: NormWeight,
) {
    b.norm_mlp_add(x, norm, eps, conv, &m.gate_up, &m.down);
}

/// Matrices of `cols` columns stacked by rows into one linear layer (`parts` in order), in
/// the load's buffer.
fn stack_rows<B: Backend>(
    b: &B,
    opts: &PrecisionOptions,
    cols: usize,
    parts: Vec<(String, Vec<f32>)>,
    scratch: &super::LoadScratch,
) -> Result<B::Linear, ArchError> {
    for (name, v) in &parts {
        if cols == 0 || !v.len().is_multiple_of(cols) {
            return Err(ArchError::Weight {
                name: name.clone(),
                problem: format!(
                    "{} values are not whole rows of {cols} columns, the width of the \
                     tensors stacked with it",
                    v.len()
                ),
            });
        }
    }
    let mut data = scratch.0.borrow_mut();
    super::concat_par_into(
        &parts.iter().map(|(_, v)| v.as_slice()).collect::<Vec<_>>(),
        &mut data,
    );
    Ok(super::hold_ref(b, opts, cols, &data))
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Undoes Qwen3-Next's per-key-head grouping of `in_proj_qkvz [2*key_dim + 2*value_dim, H]`
/// (group g: `q(dk), k(dk), v(r*dv), z(r*dv)` rows) and `in_proj_ba [2*HV, H]` (group g:
/// `b(r), a(r)`), giving Qwen3.5's `in_proj_qkv` (all q, all k, all v), `in_proj_z`,
/// `in_proj_b` and `in_proj_a`, row-major `[rows, H]`.
pub fn degroup_qwen3_next(
    d: &GdnDims,
    h: usize,
    qkvz: &[f32],
    ba: &[f32],
) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let r = d.hv / d.hk;
    let (dk, vr) = (d.dk, r * d.dv);
    let group = 2 * dk + 2 * vr;
    assert_eq!(qkvz.len(), d.hk * group * h, "in_proj_qkvz size");
    assert_eq!(ba.len(), 2 * d.hv * h, "in_proj_ba size");
    let rows = |m: &[f32], start: usize, n: usize| m[start * h..(start + n) * h].to_vec();
    let (mut q, mut k, mut v, mut z) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut bw, mut aw) = (Vec::new(), Vec::new());
    for g in 0..d.hk {
        let o = g * group;
        q.extend(rows(qkvz, o, dk));
        k.extend(rows(qkvz, o + dk, dk));
        v.extend(rows(qkvz, o + 2 * dk, vr));
        z.extend(rows(qkvz, o + 2 * dk + vr, vr));
        bw.extend(rows(ba, g * 2 * r, r));
        aw.extend(rows(ba, g * 2 * r + r, r));
    }
    q.extend(k);
    q.extend(v);
    (q, z, bw, aw)
}

/// Top-k experts of each row of router logits `[T, E]`: softmax, k largest (ties to the
/// lower index), optionally renormalised to sum 1. Returns per expert `(rows, weights)`.
pub fn route(
    logits: &[f32],
    n_experts: usize,
    top_k: usize,
    renormalize: bool,
) -> Vec<(Vec<usize>, Vec<f32>)> {
    let mut per = vec![(Vec::new(), Vec::new()); n_experts];
    for (t, row) in logits.chunks(n_experts).enumerate() {
        let mut p = row.to_vec();
        crate::engine::cpu::softmax_in_place(&mut p);
        let mut idx: Vec<usize> = (0..n_experts).collect();
        idx.sort_by(|&a, &c| p[c].total_cmp(&p[a]).then(a.cmp(&c)));
        idx.truncate(top_k);
        let sum: f32 = idx.iter().map(|&e| p[e]).sum();
        for &e in &idx {
            let w = if renormalize { p[e] / sum } else { p[e] };
            per[e].0.push(t);
            per[e].1.push(w);
        }
    }
    per
}

/// A Qwen3.5 text model (dense or MoE) on backend `B`.
pub struct Qwen35<B: Backend> {
    backend: B,
    config: ModelConfig,
    embed: B::Linear,
    head: Option<B::Linear>,
    final_norm: B::Vector,
    layers: Vec<Layer<B>>,
    rope: Rope,
    shape: AttnShape,
    gdn_dims: Option<GdnDims>,
    mtp: Option<Mtp<B>>,
    /// Storage of the recurrent state (`--gdn-state-fp16` gives F16).
    pub state_type: StateType,
}

/// The multi-token-prediction layer (MODEL_SPEC section 7).
struct Mtp<B: Backend> {
    norm_embedding: B::Vector,
    norm_hidden: B::Vector,
    /// `[H, 2H]`, applied to `[norm_e(embed) | norm_h(hidden)]`.
    fc: B::Linear,
    layer: Layer<B>,
    norm: B::Vector,
}

/// The MTP layer's own KV cache.
pub struct MtpState<B: Backend> {
    pub kv: B::KvCache,
}

/// A sequence's state: the KV cache of the attention layers and one GDN state per GDN layer
/// (`None` for attention layers).
pub struct Qwen35State<B: Backend> {
    pub kv: B::KvCache,
    pub gdn: Vec<Option<B::GdnState>>,
}

impl<B: Backend> Qwen35<B> {
    /// Decodes the weights of `files` (HF safetensors naming) and uploads them to `b`
    /// (default precision).
    pub fn load(b: &B, files: &ModelFiles) -> Result<Self, ArchError> {
        Self::load_with(b, files, &PrecisionOptions::default())
    }

    /// As [`Qwen35::load`] with precision options: the vocabulary flags (see
    /// [`super::vocab_tensors`]; the MTP layer shares the main embedding and head) and
    /// `--gdn-state-fp16` (refused where no layer is a GDN layer).
    pub fn load_with(
        b: &B,
        files: &ModelFiles,
        opts: &PrecisionOptions,
    ) -> Result<Self, ArchError> {
        let c = &files.config;
        let w = &files.weights;
        super::check_options(c, opts)?;
        // Every linear is made in this one buffer, its pages mapped once for the load.
        let scratch = super::LoadScratch::default();
        let stacked = |names: &[String], cols: Option<usize>| {
            super::hold_stacked(b, opts, w, names, cols, &scratch)
        };
        let lin = |name: &str| stacked(&[name.to_string()], None);
        let raw = |name: &str| -> Result<Vec<f32>, ArchError> { Ok(tensor_f32(w, name)?.1) };
        let vec =
            |name: &str| -> Result<B::Vector, ArchError> { Ok(b.vector_from_f32(raw(name)?)) };
        let m = c.hf_tensor_prefix();
        let gdn_dims = c.gdn.as_ref().map(|g| GdnDims {
            hk: g.num_key_heads,
            hv: g.num_value_heads,
            dk: g.key_head_dim,
            dv: g.value_head_dim,
            kc: g.conv_kernel_dim,
        });
        // One block under prefix `p`: attention or GDN mixer, MoE or dense FFN.
        let load_layer =
            |p: &str, attention: bool, moe_layer: bool| -> Result<Layer<B>, ArchError> {
                let mixer = if attention {
                    let a = format!("{p}self_attn.");
                    let qkv = ["q", "k", "v"].map(|n| format!("{a}{n}_proj.weight"));
                    Mixer::Attention {
                        wqkv: stacked(&qkv, Some(c.hidden_size))?,
                        o_proj: lin(&format!("{a}o_proj.weight"))?,
                        q_norm: vec(&format!("{a}q_norm.weight"))?,
                        k_norm: vec(&format!("{a}k_norm.weight"))?,
                    }
                } else {
                    let d = gdn_dims.ok_or(ArchError::Unsupported {
                        arch: c.architecture,
                    })?;
                    let la = format!("{p}linear_attn.");
                    let in_names = ["in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"]
                        .map(|n| format!("{la}{n}.weight"));
                    let in_proj = if c.architecture == Architecture::Qwen3Next {
                        let (qkv, z, bw, aw) = degroup_qwen3_next(
                            &d,
                            c.hidden_size,
                            &raw(&format!("{la}in_proj_qkvz.weight"))?,
                            &raw(&format!("{la}in_proj_ba.weight"))?,
                        );
                        let parts = in_names.into_iter().zip([qkv, z, bw, aw]).collect();
                        stack_rows(b, opts, c.hidden_size, parts, &scratch)?
                    } else {
                        stacked(&in_names, Some(c.hidden_size))?
                    };
                    Mixer::Gdn {
                        in_proj,
                        params: b.gdn_weights(
                            d,
                            raw(&format!("{la}conv1d.weight"))?,
                            raw(&format!("{la}A_log"))?,
                            raw(&format!("{la}dt_bias"))?,
                            raw(&format!("{la}norm.weight"))?,
                            c.rms_norm_eps,
                        ),
                        out_proj: lin(&format!("{la}out_proj.weight"))?,
                    }
                };
                let dense = |q: &str| -> Result<Mlp<B>, ArchError> {
                    let gate_up = ["gate", "up"].map(|n| format!("{q}{n}_proj.weight"));
                    Ok(Mlp {
                        gate_up: stacked(&gate_up, Some(c.hidden_size))?,
                        down: lin(&format!("{q}down_proj.weight"))?,
                    })
                };
                let ffn = match &c.moe {
                    Some(moe) if moe_layer => {
                        let (e_n, inter, h) =
                            (moe.num_experts, moe.moe_intermediate_size, c.hidden_size);
                        let fused = format!("{p}mlp.experts.gate_up_proj");
                        let experts = if w.has_tensor(&fused) {
                            // [E, 2I, H] (gate rows first) and [E, H, I].
                            let gu = raw(&fused)?;
                            let dn = raw(&format!("{p}mlp.experts.down_proj"))?;
                            if gu.len() != e_n * 2 * inter * h || dn.len() != e_n * h * inter {
                                return Err(ArchError::Weight {
                                    name: fused,
                                    problem: "fused expert tensors do not match the config".into(),
                                });
                            }
                            (0..e_n)
                                .map(|e| {
                                    let g0 = e * 2 * inter * h;
                                    // Each expert's rows held from the fused tensors
                                    // as they are (borrowed, not copied).
                                    Mlp {
                                        gate_up: super::hold_ref(
                                            b,
                                            opts,
                                            h,
                                            &gu[g0..g0 + 2 * inter * h],
                                        ),
                                        down: super::hold_ref(
                                            b,
                                            opts,
                                            inter,
                                            &dn[e * h * inter..(e + 1) * h * inter],
                                        ),
                                    }
                                })
                                .collect()
                        } else {
                            (0..e_n)
                                .map(|e| dense(&format!("{p}mlp.experts.{e}.")))
                                .collect::<Result<Vec<_>, _>>()?
                        };
                        let shared = if moe.shared_expert_intermediate_size > 0 {
                            Some((
                                dense(&format!("{p}mlp.shared_expert."))?,
                                lin(&format!("{p}mlp.shared_expert_gate.weight"))?,
                            ))
                        } else {
                            None
                        };
                        Ffn::Moe {
                            router: lin(&format!("{p}mlp.gate.weight"))?,
                            experts,
                            top_k: moe.num_experts_per_tok,
                            renormalize: c.architecture == Architecture::Qwen35Moe
                                || moe.norm_topk_prob,
                            shared,
                        }
                    }
                    _ => Ffn::Dense(dense(&format!("{p}mlp."))?),
                };
                Ok(Layer {
                    input_norm: vec(&format!("{p}input_layernorm.weight"))?,
                    mixer,
                    post_norm: vec(&format!("{p}post_attention_layernorm.weight"))?,
                    ffn,
                })
            };
        let is_moe = |i: usize| {
            c.moe.as_ref().is_some_and(|moe| {
                !moe.mlp_only_layers.contains(&i)
                    && (i + 1).is_multiple_of(moe.decoder_sparse_step.max(1))
            })
        };
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for i in 0..c.num_hidden_layers {
            layers.push(load_layer(
                &format!("{m}layers.{i}."),
                c.is_full_attention(i),
                is_moe(i),
            )?);
        }
        // MTP (section 7): one full-attention block (MoE FFN on MoE models).
        let mtp = if c.mtp_num_hidden_layers > 0 && w.has_tensor("mtp.fc.weight") {
            Some(Mtp {
                norm_embedding: vec("mtp.pre_fc_norm_embedding.weight")?,
                norm_hidden: vec("mtp.pre_fc_norm_hidden.weight")?,
                fc: lin("mtp.fc.weight")?,
                layer: load_layer("mtp.layers.0.", true, c.moe.is_some())?,
                norm: vec("mtp.norm.weight")?,
            })
        } else {
            None
        };
        let head = if w.has_tensor("lm_head.weight") {
            Some(VocabValues::read(w, "lm_head.weight")?)
        } else {
            None
        };
        let embed = VocabValues::read(w, &format!("{m}embed_tokens.weight"))?;
        let (embed, head) = vocab_tensors(b, embed, head, opts)?;
        Ok(Qwen35 {
            backend: b.clone(),
            config: c.clone(),
            embed,
            head,
            final_norm: vec(&format!("{m}norm.weight"))?,
            layers,
            rope: Rope {
                style: RopeStyle::Neox,
                theta: c.rope_theta,
                rotary_dim: c.rotary_dim(),
            },
            shape: AttnShape {
                n_heads: c.num_attention_heads,
                n_kv_heads: c.num_key_value_heads,
                head_dim: c.head_dim,
            },
            gdn_dims,
            mtp,
            state_type: if opts.gdn_state_fp16 {
                StateType::F16
            } else {
                StateType::F32
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
}

impl<B: Backend> CausalLm<B> for Qwen35<B> {
    type State = Qwen35State<B>;

    fn new_state(&self) -> Qwen35State<B> {
        let b = &self.backend;
        Qwen35State {
            kv: b.new_kv_cache(self.layers.len(), self.shape),
            gdn: self
                .layers
                .iter()
                .map(|l| match (&l.mixer, self.gdn_dims) {
                    (Mixer::Gdn { .. }, Some(d)) => Some(b.new_gdn_state(d, self.state_type)),
                    _ => None,
                })
                .collect(),
        }
    }

    fn position(&self, state: &Qwen35State<B>) -> usize {
        self.backend.kv_len(&state.kv)
    }

    fn vocab_size(&self) -> usize {
        self.config.vocab_size
    }

    fn forward(&self, state: &mut Qwen35State<B>, ids: &[u32], want: LogitsWanted) -> Vec<f32> {
        self.forward_with_hidden(state, ids, want).0
    }

    fn forward_lanes(&self, states: &mut [&mut Qwen35State<B>], ids: &[u32]) -> Vec<Vec<f32>> {
        check_lanes(states.len(), ids.len());
        let b = &self.backend;
        let x = self.blocks_lanes(states, ids);
        let hidden = b.rmsnorm(
            &x,
            &self.final_norm,
            self.config.rms_norm_eps,
            NormWeight::ZeroCentred,
        );
        let logits = self.head_logits(&hidden);
        let vocab = logits.len() / ids.len();
        logits.chunks(vocab.max(1)).map(<[f32]>::to_vec).collect()
    }

    fn nll_rows(
        &self,
        state: &mut Qwen35State<B>,
        ids: &[u32],
        first_row: usize,
        targets: &[u32],
    ) -> Vec<f64> {
        check_nll_rows(ids.len(), first_row, targets.len());
        let x = self.blocks(state, ids);
        if targets.is_empty() {
            return Vec::new();
        }
        let b = &self.backend;
        let hidden = b.rmsnorm(
            &b.slice_rows(&x, first_row, targets.len()),
            &self.final_norm,
            self.config.rms_norm_eps,
            NormWeight::ZeroCentred,
        );
        let head = self.head.as_ref().unwrap_or(&self.embed);
        b.nll_rows(&b.linear(&hidden, head, None), targets)
    }
}

impl<B: Backend> Qwen35<B> {
    /// One block on `x` (at the positions that follow the cache's), attention layers using
    /// layer `li` of `kv`.
    fn block(
        &self,
        l: &Layer<B>,
        x: &mut B::Act,
        kv: &mut KvRows<'_, '_, B>,
        li: usize,
        gdn: GdnRows<'_, '_, B>,
    ) {
        let b = &self.backend;
        let eps = self.config.rms_norm_eps;
        let zc = NormWeight::ZeroCentred;
        // The input norm feeds one stacked projection per mixer: the backend may fuse it.
        let normed_linear = |w: &B::Linear| b.norm_linear(x, &l.input_norm, eps, zc, w);
        // The mixer, through its out projection into the residual stream.
        match &l.mixer {
            Mixer::Attention {
                wqkv,
                o_proj,
                q_norm,
                k_norm,
            } => {
                let qkv = normed_linear(wqkv);
                // q/k norms, RoPE, attention and the output gate: one op, which a backend
                // may run as one launch reading qkv in place.
                let norms = QkNorms {
                    q: q_norm,
                    k: k_norm,
                    eps,
                    conv: zc,
                };
                let a = kv.gated_attention(b, li, &qkv, norms, self.shape, &self.rope);
                b.linear_add(x, &a, o_proj, None);
            }
            Mixer::Gdn {
                in_proj,
                params,
                out_proj,
            } => {
                let d = self.gdn_dims.expect("a GDN layer has GDN dimensions");
                let (qkv_w, z_w) = (d.conv_dim(), d.value_dim());
                let widths = [qkv_w, z_w, d.hv, d.hv];
                // The output norm and the out projection: one op, which a backend may run
                // as one launch.
                match gdn {
                    GdnRows::One(st) => {
                        let st = st.expect("a GDN layer has a GDN state");
                        let all = normed_linear(in_proj);
                        let [mixed, z, bb, aa]: [B::Act; 4] = super::split_n(b, &all, widths);
                        b.gdn_out_add(x, params, st, &mixed, &z, &aa, &bb, out_proj);
                    }
                    // The norm and the in-projection with the step: a backend may run the
                    // causal conv in the projection's epilogue.
                    GdnRows::Lanes(sts) => b.gdn_lanes_layer_add(
                        x,
                        (&l.input_norm, eps, zc),
                        in_proj,
                        params,
                        sts,
                        widths,
                        out_proj,
                    ),
                }
            }
        }
        match &l.ffn {
            Ffn::Dense(m) => norm_mlp_add(b, m, x, &l.post_norm, eps, zc),
            Ffn::Moe {
                router,
                experts,
                top_k,
                renormalize,
                shared,
            } => {
                let h = b.rmsnorm(x, &l.post_norm, eps, zc);
                let t = b.rows(&h);
                let logits = b.to_host(&b.linear(&h, router, None));
                for (e, (rows, wts)) in route(&logits, experts.len(), *top_k, *renormalize)
                    .iter()
                    .enumerate()
                {
                    if rows.is_empty() {
                        continue;
                    }
                    let y = mlp(b, &experts[e], &b.gather_rows(&h, rows));
                    b.scatter_add_rows(x, &y, rows, wts);
                }
                if let Some((m, gate)) = shared {
                    let y = mlp(b, m, &h);
                    let g: Vec<f32> = b
                        .to_host(&b.linear(&h, gate, None))
                        .into_iter()
                        .map(sigmoid)
                        .collect();
                    let rows: Vec<usize> = (0..t).collect();
                    b.scatter_add_rows(x, &y, &rows, &g);
                }
            }
        }
    }

    fn head_logits(&self, x: &B::Act) -> Vec<f32> {
        let b = &self.backend;
        let head = self.head.as_ref().unwrap_or(&self.embed);
        b.to_host(&b.linear(x, head, None))
    }

    /// Every block on `ids` (at the positions after the cache's, which it advances): the
    /// residual stream before the final norm, `[ids.len(), hidden]`.
    fn blocks(&self, state: &mut Qwen35State<B>, ids: &[u32]) -> B::Act {
        let b = &self.backend;
        let mut x = b.embedding(&self.embed, ids);
        for (li, l) in self.layers.iter().enumerate() {
            let gdn = GdnRows::One(state.gdn[li].as_mut());
            self.block(l, &mut x, &mut KvRows::One(&mut state.kv), li, gdn);
        }
        b.kv_advance(&mut state.kv, ids.len());
        x
    }

    /// Every block on one token per lane (`ids[i]` at lane `i`'s position), advancing every
    /// lane's state: the residual stream before the final norm, `[lanes, hidden]`.
    fn blocks_lanes(&self, states: &mut [&mut Qwen35State<B>], ids: &[u32]) -> B::Act {
        let b = &self.backend;
        let mut x = b.embedding(&self.embed, ids);
        for (li, l) in self.layers.iter().enumerate() {
            let (mut kvs, gdns): (Vec<&mut B::KvCache>, Vec<Option<&mut B::GdnState>>) = states
                .iter_mut()
                .map(|s| {
                    let s = &mut **s;
                    (&mut s.kv, s.gdn[li].as_mut())
                })
                .unzip();
            let mut sts: Vec<&mut B::GdnState> = gdns.into_iter().flatten().collect();
            let gdn = GdnRows::Lanes(&mut sts);
            self.block(l, &mut x, &mut KvRows::Lanes(&mut kvs), li, gdn);
        }
        let mut kvs: Vec<&mut B::KvCache> = states.iter_mut().map(|s| &mut s.kv).collect();
        KvRows::<B>::Lanes(&mut kvs).advance(b, ids.len());
        x
    }

    /// As [`CausalLm::forward`], also returning the post-final-norm hidden states of every
    /// row (what the MTP layer consumes).
    pub fn forward_with_hidden(
        &self,
        state: &mut Qwen35State<B>,
        ids: &[u32],
        want: LogitsWanted,
    ) -> (Vec<f32>, B::Act) {
        let b = &self.backend;
        let x = self.blocks(state, ids);
        let hidden = b.rmsnorm(
            &x,
            &self.final_norm,
            self.config.rms_norm_eps,
            NormWeight::ZeroCentred,
        );
        let logits = match want {
            LogitsWanted::Last => self.head_logits(&b.slice_rows(&hidden, b.rows(&hidden) - 1, 1)),
            LogitsWanted::All => self.head_logits(&hidden),
        };
        (logits, hidden)
    }

    /// Whether the checkpoint carries an MTP layer (and the config asks for it).
    pub fn has_mtp(&self) -> bool {
        self.mtp.is_some()
    }

    /// A fresh KV cache for the MTP layer.
    pub fn new_mtp_state(&self) -> MtpState<B> {
        MtpState {
            kv: self.backend.new_kv_cache(1, self.shape),
        }
    }

    /// The MTP layer's forward (MODEL_SPEC section 7): row `i` combines `hidden` row `i`
    /// (the main model's post-final-norm state at position `p = kv_len + i`) with the
    /// embedding of `next_ids[i]` (the token at `p + 1`), runs one attention block at RoPE
    /// position `p` with the MTP cache, and returns logits `[rows, vocab]` for position
    /// `p + 2`. Panics when the model has no MTP layer.
    pub fn mtp_forward(&self, st: &mut MtpState<B>, hidden: &B::Act, next_ids: &[u32]) -> Vec<f32> {
        let b = &self.backend;
        let m = self.mtp.as_ref().expect("the model has no MTP layer");
        let eps = self.config.rms_norm_eps;
        let zc = NormWeight::ZeroCentred;
        assert_eq!(
            b.rows(hidden),
            next_ids.len(),
            "mtp: one next id per hidden row"
        );
        let e = b.rmsnorm(
            &b.embedding(&self.embed, next_ids),
            &m.norm_embedding,
            eps,
            zc,
        );
        let h = b.rmsnorm(hidden, &m.norm_hidden, eps, zc);
        let mut x = b.linear(&b.concat_cols(&e, &h), &m.fc, None);
        let gdn = GdnRows::One(None);
        self.block(&m.layer, &mut x, &mut KvRows::One(&mut st.kv), 0, gdn);
        b.kv_advance(&mut st.kv, next_ids.len());
        self.head_logits(&b.rmsnorm(&x, &m.norm, eps, zc))
    }
}
