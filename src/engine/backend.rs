//! The backend trait: the ops the architectures are written against (DESIGN.md section 4).
//!
//! An architecture (`crate::model::arch`) uploads its weights through the backend once, then
//! runs every forward through these calls only, so the same model code drives the cpu
//! backend (the oracle) and, later, the cuda one. Activations are row-major matrices of
//! `rows` tokens by `cols` features; weights of a linear layer are `[out, in]` (HF order).

use crate::ops::gdn::{GdnDims, StateType};
use crate::ops::rmsnorm::NormWeight;

/// How RoPE pairs the dimensions of a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Dimension `i` pairs with `i + rotary_dim/2` (HF `rotate_half`, llama.cpp "NeoX").
    /// HF llama/qwen checkpoints and GGUF qwen3 use it.
    Neox,
    /// Dimension `2i` pairs with `2i + 1` (llama.cpp "normal"). GGUF llama files store q/k
    /// rows permuted for this layout, so they must run with it.
    Interleaved,
}

/// Rotary embedding parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rope {
    pub style: RopeStyle,
    pub theta: f64,
    /// Leading dimensions of each head that rotate (the rest pass through).
    pub rotary_dim: usize,
}

/// The shape of one attention layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnShape {
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub head_dim: usize,
}

/// The ops of a backend. Every method is pure apart from the caches it is handed.
pub trait Backend: Clone + Send + Sync {
    /// An activation matrix `[rows, cols]`.
    type Act;
    /// A linear layer's weight `[out, in]` (also an embedding table `[vocab, hidden]`).
    type Linear;
    /// A 1-D parameter (norm weights, biases).
    type Vector;
    /// One sequence's key/value cache for every attention layer of a model.
    type KvCache;
    /// One GDN layer's small parameters (conv, `A_log`, `dt_bias`, output norm).
    type GdnWeights;
    /// One sequence's state of one GDN layer (conv window and recurrent state).
    type GdnState;

    fn name(&self) -> &'static str;

    // Uploads.
    fn linear_from_f32(&self, rows: usize, cols: usize, data: Vec<f32>) -> Self::Linear;
    /// A linear layer (or embedding table) stored in `format` whatever the backend's default
    /// (the vocabulary precision flags). Computes with the values `format` holds, i.e.
    /// `decode(encode(data))`.
    fn linear_from_f32_in(
        &self,
        rows: usize,
        cols: usize,
        data: Vec<f32>,
        format: &'static crate::formats::Format,
    ) -> Self::Linear;
    /// [`Self::linear_from_f32_in`] in `format`, else [`Self::linear_from_f32`], from
    /// borrowed values: a backend that encodes and uploads them (keeping none) takes them
    /// without a copy, so that a model load can make every weight in one reused buffer
    /// (`model::arch::LoadScratch`). The default copies them.
    fn linear_from_f32_ref(
        &self,
        rows: usize,
        cols: usize,
        data: &[f32],
        format: Option<&'static crate::formats::Format>,
    ) -> Self::Linear {
        match format {
            Some(f) => self.linear_from_f32_in(rows, cols, data.to_vec(), f),
            None => self.linear_from_f32(rows, cols, data.to_vec()),
        }
    }
    fn vector_from_f32(&self, data: Vec<f32>) -> Self::Vector;
    fn act_from_f32(&self, rows: usize, cols: usize, data: Vec<f32>) -> Self::Act;
    /// A cache for `layers` attention layers of shape `shape` (grows as tokens arrive).
    fn new_kv_cache(&self, layers: usize, shape: AttnShape) -> Self::KvCache;
    /// Tokens held by the cache (the position the next token takes).
    fn kv_len(&self, cache: &Self::KvCache) -> usize;

    /// GDN parameters: `conv_w [conv_dim, Kc]`, `a_log`, `dt_bias [HV]`, `norm_w [dv]`.
    #[allow(clippy::too_many_arguments)]
    fn gdn_weights(
        &self,
        dims: GdnDims,
        conv_w: Vec<f32>,
        a_log: Vec<f32>,
        dt_bias: Vec<f32>,
        norm_w: Vec<f32>,
        eps: f64,
    ) -> Self::GdnWeights;
    /// A zero GDN state (conv window and recurrent state).
    fn new_gdn_state(&self, dims: GdnDims, ty: StateType) -> Self::GdnState;

    // Downloads and shapes.
    fn to_host(&self, x: &Self::Act) -> Vec<f32>;
    fn rows(&self, x: &Self::Act) -> usize;
    fn cols(&self, x: &Self::Act) -> usize;
    /// Rows `start..start+n` of `x`.
    fn slice_rows(&self, x: &Self::Act, start: usize, n: usize) -> Self::Act;
    /// Columns `start..start+n` of `x`.
    fn slice_cols(&self, x: &Self::Act, start: usize, n: usize) -> Self::Act;
    /// The leading columns of `x` split in order: part `i` is the next `widths[i]` columns
    /// (a stacked projection's outputs apart). The default is one `slice_cols` a part (a
    /// backend may split them in one pass).
    fn split_cols(&self, x: &Self::Act, widths: &[usize]) -> Vec<Self::Act> {
        let mut start = 0;
        widths
            .iter()
            .map(|&w| {
                let part = self.slice_cols(x, start, w);
                start += w;
                part
            })
            .collect()
    }

    // Ops.
    /// Rows of `table` picked by `ids`.
    fn embedding(&self, table: &Self::Linear, ids: &[u32]) -> Self::Act;
    /// RMSNorm of each row (or of each `w.len()`-wide group of a row when the row is a
    /// multiple of it, e.g. per-head q/k norms).
    fn rmsnorm(&self, x: &Self::Act, w: &Self::Vector, eps: f64, conv: NormWeight) -> Self::Act;
    /// `y = x W^T` (+ bias).
    fn linear(&self, x: &Self::Act, w: &Self::Linear, bias: Option<&Self::Vector>) -> Self::Act;
    /// `x += y`.
    fn add_assign(&self, x: &mut Self::Act, y: &Self::Act);
    /// `x += a W^T (+ bias)`: a layer's output into the residual stream. The default is
    /// `linear` then `add_assign` (the same values; a backend may fuse them).
    fn linear_add(
        &self,
        x: &mut Self::Act,
        a: &Self::Act,
        w: &Self::Linear,
        bias: Option<&Self::Vector>,
    ) {
        let y = self.linear(a, w, bias);
        self.add_assign(x, &y);
    }
    /// `rmsnorm(x) W^T`, for a norm whose output only this linear reads. The default is
    /// `rmsnorm` then `linear` (a backend may normalise `x` while the linear loads it).
    fn norm_linear(
        &self,
        x: &Self::Act,
        norm: &Self::Vector,
        eps: f64,
        conv: NormWeight,
        w: &Self::Linear,
    ) -> Self::Act {
        self.linear(&self.rmsnorm(x, norm, eps, conv), w, None)
    }
    /// `x += swiglu(gu[:, ..I], gu[:, I..]) W^T`: an MLP's down projection of its stacked
    /// gate/up output `gu` (`2I` columns) into the residual stream. The default is
    /// `swiglu` then `linear_add` (a backend may apply SwiGLU while the linear loads `gu`).
    fn swiglu_linear_add(&self, x: &mut Self::Act, gate_up: &Self::Act, w: &Self::Linear) {
        let inter = self.cols(gate_up) / 2;
        let (g, u) = (
            self.slice_cols(gate_up, 0, inter),
            self.slice_cols(gate_up, inter, inter),
        );
        self.linear_add(x, &self.swiglu(&g, &u), w, None);
    }
    /// `x += swiglu(rmsnorm(x) GU^T) W^T`: a SwiGLU MLP on the residual stream, its gate and
    /// up projections stacked by rows in `gate_up` (`[2I, H]`, gate first), `down` `[H, I]`.
    /// The default is `norm_linear` then `swiglu_linear_add` (a backend may apply SwiGLU
    /// as the gate_up projection writes its outputs instead).
    fn norm_mlp_add(
        &self,
        x: &mut Self::Act,
        norm: &Self::Vector,
        eps: f64,
        conv: NormWeight,
        gate_up: &Self::Linear,
        down: &Self::Linear,
    ) {
        let gu = self.norm_linear(x, norm, eps, conv, gate_up);
        self.swiglu_linear_add(x, &gu, down);
    }
    /// `silu(gate) * up`.
    fn swiglu(&self, gate: &Self::Act, up: &Self::Act) -> Self::Act;
    /// `x * sigmoid(gate)`, elementwise.
    fn sigmoid_gate(&self, x: &Self::Act, gate: &Self::Act) -> Self::Act;
    /// Rotates each head of each row (row `i` at position `pos0 + i`) in place.
    fn rope(&self, x: &mut Self::Act, n_heads: usize, head_dim: usize, pos0: usize, rope: &Rope);
    /// Causal GQA attention of `q [T, nH*hd]` against the cache of `layer` after appending
    /// `k, v [T, nKV*hd]` to it (row `i` of the block sits at position `kv_len + i`), scale
    /// `hd^-0.5`. Returns `[T, nH*hd]`. The caller advances the cache with `kv_advance`
    /// once every layer has run.
    fn attention(
        &self,
        cache: &mut Self::KvCache,
        layer: usize,
        q: &Self::Act,
        k: &Self::Act,
        v: &Self::Act,
    ) -> Self::Act;
    /// RoPE on `q` and `k` (heads of `head_dim`) at the cache's position, then
    /// [`Backend::attention`]: what every attention layer does. The default is those three
    /// calls; a backend may fuse the rotation with the KV append.
    #[allow(clippy::too_many_arguments)]
    fn rope_attention(
        &self,
        cache: &mut Self::KvCache,
        layer: usize,
        q: &mut Self::Act,
        k: &mut Self::Act,
        v: &Self::Act,
        head_dim: usize,
        rope: &Rope,
    ) -> Self::Act {
        let pos0 = self.kv_len(cache);
        let (nh, nkv) = (self.cols(q) / head_dim, self.cols(k) / head_dim);
        self.rope(q, nh, head_dim, pos0, rope);
        self.rope(k, nkv, head_dim, pos0, rope);
        self.attention(cache, layer, q, k, v)
    }
    /// [`Backend::rope_attention`] for a batch of lanes: row `i` of `q [N, nH*hd]`, `k`, `v`
    /// is lane `i`'s next token, at the position of `caches[i]` and attending over it. The
    /// caller advances every cache with `kv_advance` once every layer has run. The default
    /// runs each lane's row through [`Backend::rope_attention`] and stacks the results; a
    /// backend may attend to every lane in one launch.
    #[allow(clippy::too_many_arguments)]
    fn rope_attention_lanes(
        &self,
        caches: &mut [&mut Self::KvCache],
        layer: usize,
        q: &Self::Act,
        k: &Self::Act,
        v: &Self::Act,
        head_dim: usize,
        rope: &Rope,
    ) -> Self::Act {
        check_lanes(caches.len(), self.rows(q), "rope_attention_lanes");
        let rows: Vec<Self::Act> = caches
            .iter_mut()
            .enumerate()
            .map(|(i, cache)| {
                let mut qi = self.slice_rows(q, i, 1);
                let mut ki = self.slice_rows(k, i, 1);
                let vi = self.slice_rows(v, i, 1);
                self.rope_attention(cache, layer, &mut qi, &mut ki, &vi, head_dim, rope)
            })
            .collect();
        self.concat_rows(&rows)
    }
    /// [`Backend::rope_attention_lanes`] on the column blocks of a stacked projection:
    /// `qkv [N, q_cols + 2 kv_cols]` holds each lane's q, k and v side by side. The default
    /// slices them out; a backend may read them in place.
    #[allow(clippy::too_many_arguments)]
    fn rope_attention_lanes_qkv(
        &self,
        caches: &mut [&mut Self::KvCache],
        layer: usize,
        qkv: &Self::Act,
        q_cols: usize,
        kv_cols: usize,
        head_dim: usize,
        rope: &Rope,
    ) -> Self::Act {
        let q = self.slice_cols(qkv, 0, q_cols);
        let k = self.slice_cols(qkv, q_cols, kv_cols);
        let v = self.slice_cols(qkv, q_cols + kv_cols, kv_cols);
        self.rope_attention_lanes(caches, layer, &q, &k, &v, head_dim, rope)
    }
    /// Qwen3.5/3.6's gated attention core (MODEL_SPEC section 5) on the stacked projection
    /// `qkv [T, 2 nH*hd + 2 nKV*hd]` (per q head its query then its gate, then k, then v):
    /// the per-head q and k norms, [`Backend::rope_attention`], then the output times
    /// `sigmoid(gate)`. Returns `[T, nH*hd]`, before `o_proj`. The default is those ops
    /// ([`gated_attention_apart`]); a backend may fold them into its attention launch.
    #[allow(clippy::too_many_arguments)]
    fn gated_attention(
        &self,
        cache: &mut Self::KvCache,
        layer: usize,
        qkv: &Self::Act,
        norms: QkNorms<'_, Self::Vector>,
        shape: AttnShape,
        rope: &Rope,
    ) -> Self::Act {
        gated_attention_apart(
            self,
            GatedCaches::One(cache),
            layer,
            qkv,
            norms,
            shape,
            rope,
        )
    }
    /// [`Backend::gated_attention`] for a batch of lanes: row `i` of `qkv` is lane `i`'s next
    /// token, at the position of `caches[i]` (as [`Backend::rope_attention_lanes`]).
    #[allow(clippy::too_many_arguments)]
    fn gated_attention_lanes(
        &self,
        caches: &mut [&mut Self::KvCache],
        layer: usize,
        qkv: &Self::Act,
        norms: QkNorms<'_, Self::Vector>,
        shape: AttnShape,
        rope: &Rope,
    ) -> Self::Act {
        let c = GatedCaches::Lanes(caches);
        gated_attention_apart(self, c, layer, qkv, norms, shape, rope)
    }
    /// Marks `n` more tokens as held by the cache.
    fn kv_advance(&self, cache: &mut Self::KvCache, n: usize);
    /// Splits each row, viewed as `[n_heads, first + second]`, into `[n_heads*first]` and
    /// `[n_heads*second]` (Qwen3.5's q_proj: query and gate per head).
    fn split_heads(
        &self,
        x: &Self::Act,
        n_heads: usize,
        first: usize,
        second: usize,
    ) -> (Self::Act, Self::Act);
    /// The Gated DeltaNet mixer (MODEL_SPEC section 4, steps 2-8 before `out_proj`) over a
    /// block of tokens: `mixed [T, conv_dim]`, `z [T, HV*dv]`, `a`, `b [T, HV]`; returns the
    /// gated-normed `[T, HV*dv]` and advances `state`.
    fn gdn(
        &self,
        w: &Self::GdnWeights,
        state: &mut Self::GdnState,
        mixed: &Self::Act,
        z: &Self::Act,
        a: &Self::Act,
        b: &Self::Act,
    ) -> Self::Act;
    /// [`Backend::gdn`] for a batch of lanes: row `i` of `mixed`, `z`, `a`, `b` is lane `i`'s
    /// next token, advancing `states[i]`. The default runs each lane's row through
    /// [`Backend::gdn`] and stacks the results.
    fn gdn_lanes(
        &self,
        w: &Self::GdnWeights,
        states: &mut [&mut Self::GdnState],
        mixed: &Self::Act,
        z: &Self::Act,
        a: &Self::Act,
        b: &Self::Act,
    ) -> Self::Act {
        check_lanes(states.len(), self.rows(mixed), "gdn_lanes");
        let rows: Vec<Self::Act> = states
            .iter_mut()
            .enumerate()
            .map(|(i, st)| {
                let row = |x: &Self::Act| self.slice_rows(x, i, 1);
                self.gdn(w, st, &row(mixed), &row(z), &row(a), &row(b))
            })
            .collect();
        self.concat_rows(&rows)
    }
    /// [`Backend::gdn_lanes`] on the stacked in-projection `all` (row `i` lane `i`'s), whose
    /// leading columns are `mixed`, `z`, `b` and `a`, `widths` wide in that order. The
    /// default splits them apart (a backend may read them in place).
    fn gdn_lanes_stacked(
        &self,
        w: &Self::GdnWeights,
        states: &mut [&mut Self::GdnState],
        all: &Self::Act,
        widths: [usize; 4],
    ) -> Self::Act {
        let parts = self.split_cols(all, &widths);
        let [mixed, z, b, a] = [&parts[0], &parts[1], &parts[2], &parts[3]];
        self.gdn_lanes(w, states, mixed, z, a, b)
    }
    /// `x += gdn(w, state, mixed, z, a, b) W^T`: the GDN mixer, its output norm included,
    /// through its out projection `out` into the residual stream. The default is
    /// [`Backend::gdn`] then `linear_add` (a backend may apply the output norm as the
    /// projection loads its input).
    #[allow(clippy::too_many_arguments)]
    fn gdn_out_add(
        &self,
        x: &mut Self::Act,
        w: &Self::GdnWeights,
        state: &mut Self::GdnState,
        mixed: &Self::Act,
        z: &Self::Act,
        a: &Self::Act,
        b: &Self::Act,
        out: &Self::Linear,
    ) {
        let o = self.gdn(w, state, mixed, z, a, b);
        self.linear_add(x, &o, out, None);
    }
    /// [`Backend::gdn_out_add`] for the lanes of [`Backend::gdn_lanes_stacked`]. The
    /// default is that then `linear_add`.
    fn gdn_lanes_stacked_out_add(
        &self,
        x: &mut Self::Act,
        w: &Self::GdnWeights,
        states: &mut [&mut Self::GdnState],
        all: &Self::Act,
        widths: [usize; 4],
        out: &Self::Linear,
    ) {
        let o = self.gdn_lanes_stacked(w, states, all, widths);
        self.linear_add(x, &o, out, None);
    }
    /// The GDN layer of the lanes from the residual stream `x`: the input norm (`norm`,
    /// `eps`, its convention) and the stacked in-projection `in_proj`, then
    /// [`Backend::gdn_lanes_stacked_out_add`]. The default is `norm_linear` then that (a
    /// backend may run the causal conv in the in-projection's epilogue).
    #[allow(clippy::too_many_arguments)]
    fn gdn_lanes_layer_add(
        &self,
        x: &mut Self::Act,
        (norm, eps, conv): (&Self::Vector, f64, NormWeight),
        in_proj: &Self::Linear,
        w: &Self::GdnWeights,
        states: &mut [&mut Self::GdnState],
        widths: [usize; 4],
        out: &Self::Linear,
    ) {
        let all = self.norm_linear(x, norm, eps, conv, in_proj);
        self.gdn_lanes_stacked_out_add(x, w, states, &all, widths, out);
    }
    /// The rows of `parts` (equal widths) one after another.
    fn concat_rows(&self, parts: &[Self::Act]) -> Self::Act;
    /// `[a | b]` side by side (same rows).
    fn concat_cols(&self, a: &Self::Act, b: &Self::Act) -> Self::Act;
    /// A `[rows, cols]` matrix of zeros.
    fn zeros(&self, rows: usize, cols: usize) -> Self::Act;
    /// The rows of `x` listed in `rows`, in that order (MoE dispatch).
    fn gather_rows(&self, x: &Self::Act, rows: &[usize]) -> Self::Act;
    /// `out[rows[i]] += scale[i] * x[i]` for every row `i` of `x` (MoE combine).
    fn scatter_add_rows(&self, out: &mut Self::Act, x: &Self::Act, rows: &[usize], scale: &[f32]);
    /// Row-wise softmax (f64 accumulation).
    fn softmax(&self, x: &Self::Act) -> Self::Act;
    /// Per row `r` of `logits [rows, vocab]`: `-log softmax(logits[r])[targets[r]]` in nats,
    /// i.e. `logsumexp(row) - row[target]` (what perplexity scores), without the logits
    /// leaving the backend. Non-finite where the row holds a NaN or an infinity. The
    /// default downloads the rows and computes [`crate::perplexity::nll_of`] (f64) on the
    /// host, spread over the cores. Panics unless there is one target per row, each inside
    /// its row.
    fn nll_rows(&self, logits: &Self::Act, targets: &[u32]) -> Vec<f64> {
        use rayon::prelude::*;
        let (rows, vocab) = (self.rows(logits), self.cols(logits));
        check_nll_targets(rows, vocab, targets);
        let host = self.to_host(logits);
        host.par_chunks(vocab.max(1))
            .zip(targets.par_iter())
            .map(|(row, &t)| crate::perplexity::nll_of(row, t as usize))
            .collect()
    }

    // Captured decode steps (a backend without them keeps the defaults: every step runs
    // op by op). The protocol, driven by `arch::Model::forward` for single-token steps:
    // `replay_step`; if that gives nothing, `begin_step_capture`; if that agrees, the step's
    // ops (recorded, not run) and then `end_step_capture`.

    /// The logits of token `id` at the cache's position through this sequence's captured
    /// step, with the cache advanced by one; `None` when there is no valid capture.
    fn replay_step(&self, _cache: &mut Self::KvCache, _id: u32) -> Option<Vec<f32>> {
        None
    }
    /// As [`Backend::replay_step`], reading back only the greedy next token: the logits'
    /// argmax (first index on ties, as [`crate::engine::generate::argmax`]), computed where
    /// the logits are, so that a greedy step moves one id to the host, not the vocabulary.
    fn replay_step_greedy(&self, _cache: &mut Self::KvCache, _id: u32) -> Option<u32> {
        None
    }
    /// Whether the single-token step about to run on `cache` (returning `logits` values) is
    /// to be captured: if so, the ops until [`Backend::end_step_capture`] are recorded
    /// instead of run.
    fn begin_step_capture(&self, _cache: &mut Self::KvCache, _logits: usize) -> bool {
        false
    }
    /// Ends the capture, keeps it with `cache`, runs it for token `id` (at the position the
    /// cache had before the step) and returns its logits.
    fn end_step_capture(&self, _cache: &mut Self::KvCache, _id: u32) -> Vec<f32> {
        unreachable!("end_step_capture without a capture")
    }

    // Captured lanes steps: the same protocol over a batch, driven by
    // `arch::Model::forward_lanes` (row `i` of every op is lane `i`, `caches[i]` its cache).
    // The logits are every lane's, lane after lane (`lanes * vocab`).

    /// The logits of one token per lane through the captured step of this batch, with every
    /// cache advanced by one; `None` when there is no valid capture for these caches.
    fn replay_lanes(&self, _caches: &mut [&mut Self::KvCache], _ids: &[u32]) -> Option<Vec<f32>> {
        None
    }
    /// As [`Backend::replay_lanes`], reading back only each lane's greedy next token (see
    /// [`Backend::replay_step_greedy`]).
    fn replay_lanes_greedy(
        &self,
        _caches: &mut [&mut Self::KvCache],
        _ids: &[u32],
    ) -> Option<Vec<u32>> {
        None
    }
    /// Whether the lanes step about to run on `caches` (returning `logits` values per lane)
    /// is to be captured (the ops until [`Backend::end_lanes_capture`] are recorded).
    fn begin_lanes_capture(&self, _caches: &mut [&mut Self::KvCache], _logits: usize) -> bool {
        false
    }
    /// Ends the lanes capture, keeps it, runs it for `ids` and returns the logits.
    fn end_lanes_capture(&self, _caches: &mut [&mut Self::KvCache], _ids: &[u32]) -> Vec<f32> {
        unreachable!("end_lanes_capture without a capture")
    }
}

/// The check of the lanes ops: one row per lane.
/// The per-head q and k norms of a gated attention layer (`[head_dim]` each).
pub struct QkNorms<'a, V> {
    pub q: &'a V,
    pub k: &'a V,
    pub eps: f64,
    pub conv: NormWeight,
}

impl<V> Clone for QkNorms<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for QkNorms<'_, V> {}

/// The caches [`gated_attention_apart`] attends against: one sequence's, or one a lane.
pub enum GatedCaches<'a, 'b, B: Backend> {
    One(&'a mut B::KvCache),
    Lanes(&'a mut [&'b mut B::KvCache]),
}

/// [`Backend::gated_attention`] (and its lanes form) as separate ops: split the stacked
/// projection, split query from gate, norm q and k, RoPE and attention, gate the output.
/// The defaults, and a backend's fallback where its fused launch does not apply.
#[allow(clippy::too_many_arguments)]
pub fn gated_attention_apart<B: Backend>(
    b: &B,
    caches: GatedCaches<'_, '_, B>,
    layer: usize,
    qkv: &B::Act,
    norms: QkNorms<'_, B::Vector>,
    shape: AttnShape,
    rope: &Rope,
) -> B::Act {
    let (nh, hd) = (shape.n_heads, shape.head_dim);
    let kv_w = shape.n_kv_heads * hd;
    let Ok([qg, k, v]) = <[B::Act; 3]>::try_from(b.split_cols(qkv, &[2 * nh * hd, kv_w, kv_w]))
    else {
        unreachable!("split_cols gives one part a width")
    };
    let (q, gate) = b.split_heads(&qg, nh, hd, hd);
    let mut q = b.rmsnorm(&q, norms.q, norms.eps, norms.conv);
    let mut k = b.rmsnorm(&k, norms.k, norms.eps, norms.conv);
    let a = match caches {
        GatedCaches::One(c) => b.rope_attention(c, layer, &mut q, &mut k, &v, hd, rope),
        GatedCaches::Lanes(cs) => b.rope_attention_lanes(cs, layer, &q, &k, &v, hd, rope),
    };
    b.sigmoid_gate(&a, &gate)
}

pub fn check_lanes(lanes: usize, rows: usize, op: &str) {
    assert_eq!(lanes, rows, "{op}: {rows} rows for {lanes} lanes");
}

/// The checks of [`Backend::nll_rows`]: one target per row, each inside its row.
pub fn check_nll_targets(rows: usize, vocab: usize, targets: &[u32]) {
    assert_eq!(
        targets.len(),
        rows,
        "nll_rows: {} targets for {rows} rows",
        targets.len()
    );
    if let Some(&t) = targets.iter().find(|&&t| t as usize >= vocab) {
        panic!("nll_rows: target {t} outside rows of {vocab} logits");
    }
}
