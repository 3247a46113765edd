//! The architectures, written once against [`crate::engine::backend::Backend`].
//!
//! Each one loads its weights from [`ModelFiles`] (decoding GGUF blocks or safetensors
//! dtypes to f32 here, independently of the weight binder) and implements [`CausalLm`]:
//! a state per sequence (KV cache, later GDN state) and a forward over a block of tokens
//! that serves both prefill (many tokens) and incremental decode (one token).
//!
//! [`load_with`] applies the precision options ([`PrecisionOptions`]) that act at load:
//! the vocabulary flags store the embedding table and the head in `q4_g64` / `q6_g64`
//! ([`vocab_tensors`]), `--gdn-state-fp16` stores the GDN state in fp16. An option the model
//! cannot take is an [`ArchError::Precision`] that says why. `--prefill-chunk` acts where
//! prompts are fed ([`forward_chunked`]).

pub mod llama;
pub mod qwen35;

use half::{bf16, f16};

use crate::engine::backend::Backend;
use crate::formats::gguf_blocks::{dequantize, GgufType};
use crate::model::precision::{PrecisionOptions, VocabQuant, VocabTensor};
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
    /// A precision option this model cannot take (a usage error).
    #[error("{flag}: {why}")]
    Precision { flag: String, why: String },
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

    /// One decode step for a batch of lanes (independent sequences, each at its own
    /// position): `ids[i]` is lane `i`'s next token, appended to `states[i]`. Returns each
    /// lane's logits (`vocab` values). The architectures run the batch as one forward over
    /// `[lanes, hidden]` (every linear reads its weights once for all lanes; attention and
    /// GDN act per lane); the default runs [`CausalLm::forward`] lane after lane.
    fn forward_lanes(&self, states: &mut [&mut Self::State], ids: &[u32]) -> Vec<Vec<f32>> {
        check_lanes(states.len(), ids.len());
        states
            .iter_mut()
            .zip(ids)
            .map(|(s, &id)| self.forward(s, &[id], LogitsWanted::Last))
            .collect()
    }

    /// One greedy decode step: token `id` appended to `state`, and the argmax of its logits
    /// (first index on ties, [`crate::engine::generate::argmax`]) returned, the next token
    /// of greedy decoding. The default takes the argmax of [`CausalLm::forward`]'s logits
    /// on the host; the architectures' captured steps take it on the device and read back
    /// one id instead of the vocabulary's logits.
    fn forward_greedy(&self, state: &mut Self::State, id: u32) -> u32 {
        crate::engine::generate::argmax(&self.forward(state, &[id], LogitsWanted::Last))
    }

    /// [`CausalLm::forward_lanes`] with each lane's greedy next token in place of its logits
    /// (see [`CausalLm::forward_greedy`]).
    fn forward_lanes_greedy(&self, states: &mut [&mut Self::State], ids: &[u32]) -> Vec<u32> {
        argmax_lanes(&self.forward_lanes(states, ids))
    }

    /// Runs `ids` through the model as [`CausalLm::forward`] does (appending them to
    /// `state`) and returns, for each `i < targets.len()`, the negative log-likelihood in
    /// nats of `targets[i]` under the logits of row `first_row + i`:
    /// `-log softmax(logits)[targets[i]]`, no logits returned. The architectures apply the
    /// final norm and the head to those rows only (to none when there are no targets) and
    /// score them on the backend ([`Backend::nll_rows`]). The default runs
    /// [`CausalLm::forward`] for every row and computes [`crate::perplexity::nll_of`] on the
    /// host; if the logits are not `ids.len()` rows of the vocabulary it returns nothing
    /// (callers check the count). Panics unless `first_row + targets.len() <= ids.len()`.
    fn nll_rows(
        &self,
        state: &mut Self::State,
        ids: &[u32],
        first_row: usize,
        targets: &[u32],
    ) -> Vec<f64> {
        use rayon::prelude::*;
        check_nll_rows(ids.len(), first_row, targets.len());
        let vocab = self.vocab_size();
        let logits = self.forward(state, ids, LogitsWanted::All);
        if logits.len() != ids.len() * vocab {
            return Vec::new();
        }
        targets
            .par_iter()
            .enumerate()
            .map(|(i, &t)| {
                let r = first_row + i;
                crate::perplexity::nll_of(&logits[r * vocab..(r + 1) * vocab], t as usize)
            })
            .collect()
    }

    /// The negative log-likelihood of each token `ids[t]`, `t in score_from..ids.len()`,
    /// given the tokens before it (the logits of row `t - 1`), running all of `ids` through
    /// the model: [`CausalLm::nll_rows`] of rows `score_from - 1 .. ids.len() - 1`. Panics
    /// unless `1 <= score_from <= ids.len()`.
    fn nll(&self, state: &mut Self::State, ids: &[u32], score_from: usize) -> Vec<f64> {
        assert!(
            score_from >= 1 && score_from <= ids.len(),
            "nll: scoring from {score_from} in {} tokens",
            ids.len()
        );
        self.nll_rows(state, ids, score_from - 1, &ids[score_from..])
    }
}

/// Each lane's greedy token from its logits (the host side of
/// [`CausalLm::forward_lanes_greedy`]).
fn argmax_lanes(logits: &[Vec<f32>]) -> Vec<u32> {
    logits
        .iter()
        .map(|l| crate::engine::generate::argmax(l))
        .collect()
}

/// The check of [`CausalLm::forward_lanes`]: one token per lane, at least one lane.
pub fn check_lanes(lanes: usize, ids: usize) {
    assert!(
        lanes == ids && lanes > 0,
        "forward_lanes: {ids} tokens for {lanes} lanes"
    );
}

/// The sequences the rows of a forward belong to, as its attention layers see them.
pub(crate) enum KvRows<'a, 'b, B: Backend> {
    /// One sequence: the rows are its consecutive tokens.
    One(&'a mut B::KvCache),
    /// A batch of lanes: row `i` is lane `i`'s next token.
    Lanes(&'a mut [&'b mut B::KvCache]),
}

impl<B: Backend> KvRows<'_, '_, B> {
    /// RoPE and attention of an attention layer over these rows.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rope_attention(
        &mut self,
        b: &B,
        layer: usize,
        q: &mut B::Act,
        k: &mut B::Act,
        v: &B::Act,
        head_dim: usize,
        rope: &crate::engine::backend::Rope,
    ) -> B::Act {
        match self {
            KvRows::One(kv) => b.rope_attention(kv, layer, q, k, v, head_dim, rope),
            KvRows::Lanes(kvs) => b.rope_attention_lanes(kvs, layer, q, k, v, head_dim, rope),
        }
    }

    /// [`KvRows::rope_attention`] on the column blocks `[q | k | v]` of a stacked projection
    /// `qkv` (q `q_cols` wide, k and v `kv_cols`), where no norm acts between: lanes read
    /// them in place where the backend can.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rope_attention_qkv(
        &mut self,
        b: &B,
        layer: usize,
        qkv: &B::Act,
        q_cols: usize,
        kv_cols: usize,
        head_dim: usize,
        rope: &crate::engine::backend::Rope,
    ) -> B::Act {
        match self {
            KvRows::One(kv) => {
                let [mut q, mut k, v]: [B::Act; 3] = split_n(b, qkv, [q_cols, kv_cols, kv_cols]);
                b.rope_attention(kv, layer, &mut q, &mut k, &v, head_dim, rope)
            }
            KvRows::Lanes(kvs) => {
                b.rope_attention_lanes_qkv(kvs, layer, qkv, q_cols, kv_cols, head_dim, rope)
            }
        }
    }

    /// Qwen3.5/3.6's gated attention core over these rows, on the stacked projection `qkv`
    /// ([`Backend::gated_attention`]).
    pub(crate) fn gated_attention(
        &mut self,
        b: &B,
        layer: usize,
        qkv: &B::Act,
        norms: crate::engine::backend::QkNorms<'_, B::Vector>,
        shape: crate::engine::backend::AttnShape,
        rope: &crate::engine::backend::Rope,
    ) -> B::Act {
        match self {
            KvRows::One(kv) => b.gated_attention(kv, layer, qkv, norms, shape, rope),
            KvRows::Lanes(kvs) => b.gated_attention_lanes(kvs, layer, qkv, norms, shape, rope),
        }
    }

    /// Marks the `rows` rows as held once every layer has run.
    pub(crate) fn advance(&mut self, b: &B, rows: usize) {
        match self {
            KvRows::One(kv) => b.kv_advance(kv, rows),
            KvRows::Lanes(kvs) => {
                for kv in kvs.iter_mut() {
                    b.kv_advance(kv, 1);
                }
            }
        }
    }
}

/// The checks of [`CausalLm::nll_rows`]: the scored rows lie inside the block.
pub fn check_nll_rows(len: usize, first_row: usize, targets: usize) {
    assert!(
        first_row + targets <= len,
        "nll_rows: rows {first_row}..{} of a block of {len}",
        first_row + targets
    );
}

/// Runs `ids` through `model` as consecutive chunks of at most `chunk` tokens (`None`: one
/// forward), each continuing the state the previous one left. The same logits as one forward
/// up to rounding: all chunks' rows concatenated for [`LogitsWanted::All`], the last chunk's
/// last row for [`LogitsWanted::Last`]. Panics on a chunk of 0.
pub fn forward_chunked<B: Backend, M: CausalLm<B> + ?Sized>(
    model: &M,
    state: &mut M::State,
    ids: &[u32],
    want: LogitsWanted,
    chunk: Option<usize>,
) -> Vec<f32> {
    assert!(chunk != Some(0), "a prefill chunk holds at least one token");
    let n = chunk.unwrap_or(ids.len()).max(1);
    if ids.len() <= n {
        return model.forward(state, ids, want);
    }
    let mut out = Vec::new();
    for piece in ids.chunks(n) {
        let logits = model.forward(state, piece, want);
        match want {
            LogitsWanted::All => out.extend(logits),
            LogitsWanted::Last => out = logits,
        }
    }
    out
}

/// As [`CausalLm::nll`], `ids` run as consecutive chunks of at most `chunk` tokens (`None`:
/// one block), each continuing the state the previous one left: the same values as one
/// block up to rounding. A chunk's rows that predict a scored token (the first token of the
/// next chunk included) are scored with it; chunks before the scored range compute no head.
/// Panics on a chunk of 0 or unless `1 <= score_from <= ids.len()`.
pub fn nll_chunked<B: Backend, M: CausalLm<B> + ?Sized>(
    model: &M,
    state: &mut M::State,
    ids: &[u32],
    score_from: usize,
    chunk: Option<usize>,
) -> Vec<f64> {
    assert!(chunk != Some(0), "a prefill chunk holds at least one token");
    assert!(
        score_from >= 1 && score_from <= ids.len(),
        "nll: scoring from {score_from} in {} tokens",
        ids.len()
    );
    let n = chunk.unwrap_or(ids.len()).max(1);
    if ids.len() <= n {
        return model.nll(state, ids, score_from);
    }
    let mut out = Vec::with_capacity(ids.len() - score_from);
    for (k, piece) in ids.chunks(n).enumerate() {
        let (start, end) = (k * n, k * n + piece.len());
        // Row r predicts ids[r + 1]; the scored rows are score_from - 1 .. ids.len() - 1.
        let lo = (score_from - 1).clamp(start, end);
        let hi = (ids.len() - 1).clamp(lo, end);
        out.extend(model.nll_rows(state, piece, lo - start, &ids[lo + 1..hi + 1]));
    }
    out
}

/// Tensors `names`, each `[.., cols]` (`cols`: as given, else the first tensor's), stacked
/// by rows into one row-major buffer, with its `cols` (the weights one launch serves: q/k/v,
/// gate/up, the GDN in-projection). Synthetic tensors are made straight into their rows;
/// others are decoded and copied in, in parallel (the 27B's gate/up stack: 774 ms made apart
/// and copied by one thread, 401 ms made in place, on 2 cores:
/// `examples/bench_synthetic_encode`).
pub fn stacked_f32(
    weights: &Weights,
    names: &[String],
    cols: Option<usize>,
) -> Result<(Vec<f32>, usize), ArchError> {
    let mut data = Vec::new();
    let cols = stacked_f32_into(weights, names, cols, &mut data)?;
    Ok((data, cols))
}

/// [`stacked_f32`] into `data`, whose memory is reused: a buffer that already held a weight
/// as large has its pages mapped, where a new one takes a page fault a 4 KiB page as it is
/// first written (`examples/bench_synthetic_encode`, the 27B's gate_up stack on 2 cores:
/// 557 ms into a new buffer, 208 ms into a reused one). Returns the stack's `cols`; `data`
/// holds exactly the stack.
pub fn stacked_f32_into(
    weights: &Weights,
    names: &[String],
    cols: Option<usize>,
    data: &mut Vec<f32>,
) -> Result<usize, ArchError> {
    let unlike = |name: &str, k: usize, cols: usize| ArchError::Weight {
        name: name.to_string(),
        problem: format!("{k} columns, unlike the {cols} of the tensors stacked with it"),
    };
    let last = |shape: &[usize]| *shape.last().unwrap_or(&1);
    if let Weights::Synthetic(s) = weights {
        let shapes: Option<Vec<&[usize]>> = names.iter().map(|n| s.shape(n)).collect();
        if let Some(shapes) = shapes {
            let cols = cols.or(shapes.first().map(|sh| last(sh))).unwrap_or(1);
            let mut lens = Vec::with_capacity(names.len());
            for (name, shape) in names.iter().zip(&shapes) {
                if last(shape) != cols {
                    return Err(unlike(name, last(shape), cols));
                }
                lens.push(shape.iter().product::<usize>());
            }
            // Every element is made below: only growth is zeroed.
            data.resize(lens.iter().sum(), 0.0);
            let mut rest = data.as_mut_slice();
            for (name, len) in names.iter().zip(lens) {
                let (part, tail) = rest.split_at_mut(len);
                s.values_into(name, part).expect("the tensor was listed");
                rest = tail;
            }
            return Ok(cols);
        }
    }
    let mut parts = Vec::with_capacity(names.len());
    let mut cols = cols;
    for name in names {
        let (shape, v) = tensor_f32(weights, name)?;
        let c = *cols.get_or_insert(last(&shape));
        if last(&shape) != c {
            return Err(unlike(name, last(&shape), c));
        }
        parts.push(v);
    }
    if parts.len() == 1 && data.capacity() < parts[0].len() {
        // Decoded into a buffer of its own already, larger than `data`'s: taken as it is, not
        // copied. Into a larger `data` it is copied, so that the buffer the load reuses keeps
        // the size its largest stacks need.
        *data = parts.pop().expect("one part");
    } else {
        concat_par_into(&parts.iter().map(Vec::as_slice).collect::<Vec<_>>(), data);
    }
    Ok(cols.unwrap_or(1))
}

/// The f32 buffer one model load reuses for every weight it stacks and hands to the backend
/// ([`hold_stacked`]), so that its pages are mapped once, not once a weight. Made where a
/// load starts and dropped where it ends, with the buffer's memory.
#[derive(Default)]
pub struct LoadScratch(std::cell::RefCell<Vec<f32>>);

/// The tensors `names` stacked by rows ([`stacked_f32`]) in `scratch` and held as one weight
/// ([`hold_linear`]): the layers one launch serves, or one tensor (a name alone).
pub fn hold_stacked<B: Backend>(
    b: &B,
    opts: &PrecisionOptions,
    weights: &Weights,
    names: &[String],
    cols: Option<usize>,
    scratch: &LoadScratch,
) -> Result<B::Linear, ArchError> {
    let mut data = scratch.0.borrow_mut();
    let cols = stacked_f32_into(weights, names, cols, &mut data)?.max(1);
    Ok(hold_ref(b, opts, cols, &data))
}

/// [`hold_linear`] of borrowed rows of `cols` (a [`LoadScratch`]'s, or a tensor's own).
fn hold_ref<B: Backend>(b: &B, opts: &PrecisionOptions, cols: usize, data: &[f32]) -> B::Linear {
    b.linear_from_f32_ref(data.len() / cols, cols, data, held_format(opts, cols))
}

/// `parts` end to end in `data` (its memory reused; it holds exactly the parts after),
/// copied in parallel (a big weight's copy on one thread is a load's bottleneck).
pub fn concat_par_into(parts: &[&[f32]], data: &mut Vec<f32>) {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 18;
    data.resize(parts.iter().map(|p| p.len()).sum(), 0.0);
    let mut rest = data.as_mut_slice();
    for part in parts {
        let (dst, tail) = rest.split_at_mut(part.len());
        dst.par_chunks_mut(CHUNK)
            .zip(part.par_chunks(CHUNK))
            .for_each(|(d, s)| d.copy_from_slice(s));
        rest = tail;
    }
}

/// A vocabulary tensor's values: `[rows, cols]` row-major.
pub struct VocabValues {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

impl VocabValues {
    /// A 2-D tensor of `weights` decoded to f32.
    pub fn read(weights: &Weights, name: &str) -> Result<Self, ArchError> {
        let (shape, data) = tensor_f32(weights, name)?;
        let cols = *shape.last().unwrap_or(&1);
        Ok(VocabValues {
            rows: data.len() / cols.max(1),
            cols,
            data,
        })
    }
}

/// [`Backend::split_cols`] into exactly `N` parts, as an array.
pub fn split_n<B: Backend, const N: usize>(b: &B, x: &B::Act, widths: [usize; N]) -> [B::Act; N] {
    b.split_cols(x, &widths)
        .try_into()
        .unwrap_or_else(|_| unreachable!("split_cols gives one part a width"))
}

/// A `[rows, cols]` weight matrix on `b`: in `opts.held_weights`' format where a row of
/// `cols` fits it (the GPU engine's rule for `--weights`, `ops::linear_exact::supports`),
/// else in the backend's default format.
pub fn hold_linear<B: Backend>(
    b: &B,
    opts: &PrecisionOptions,
    rows: usize,
    cols: usize,
    data: Vec<f32>,
) -> B::Linear {
    match held_format(opts, cols) {
        Some(f) => b.linear_from_f32_in(rows, cols, data, f),
        None => b.linear_from_f32(rows, cols, data),
    }
}

/// The format [`hold_linear`] asks the backend for: `opts.held_weights`' where a row of
/// `cols` fits it, else none (the backend's default).
fn held_format(opts: &PrecisionOptions, cols: usize) -> Option<&'static crate::formats::Format> {
    opts.held_weights
        .map(|name| crate::formats::format(name).expect("held_weights names a registered format"))
        .filter(|f| crate::ops::linear_exact::supports(f, cols))
}

/// Uploads the embedding table and the head (`None`: tied, no head tensor) as `opts` asks:
/// a vocabulary flag stores its tensor in `q4_g64` / `q6_g64` through
/// [`Backend::linear_from_f32_in`], no flag in the backend's default format. Returns the
/// embedding and the head (`None`: the head is the embedding).
///
/// Tied embeddings follow the weight binder: the head is in the format its own flag asks
/// for. Where that is the embedding's format the one table serves both; otherwise the head is
/// a separate copy of the embedding's f32 values in the head's format (`--lm-head-q4` alone
/// gives a q4 head and an embedding in the default format; `--embedding-q4` alone a q4
/// embedding and a head in the default format).
///
/// A flag is refused where the rows (the hidden size) are not a multiple of its format's
/// group.
pub fn vocab_tensors<B: Backend>(
    b: &B,
    embed: VocabValues,
    head: Option<VocabValues>,
    opts: &PrecisionOptions,
) -> Result<(B::Linear, Option<B::Linear>), ArchError> {
    let put = |which: VocabTensor, v: VocabValues| -> Result<B::Linear, ArchError> {
        let Some(q) = opts.vocab(which) else {
            return Ok(hold_linear(b, opts, v.rows, v.cols, v.data));
        };
        group_fits(which, q, v.cols)?;
        Ok(b.linear_from_f32_in(v.rows, v.cols, v.data, vocab_format(q)))
    };
    match head {
        Some(h) => Ok((
            put(VocabTensor::Embedding, embed)?,
            Some(put(VocabTensor::LmHead, h)?),
        )),
        None if opts.embedding == opts.lm_head => Ok((put(VocabTensor::Embedding, embed)?, None)),
        None => {
            let copy = VocabValues {
                rows: embed.rows,
                cols: embed.cols,
                data: embed.data.clone(),
            };
            let head = put(VocabTensor::LmHead, copy)?;
            Ok((put(VocabTensor::Embedding, embed)?, Some(head)))
        }
    }
}

/// Refuses, from the config alone (before any weight is read), the precision options this
/// model cannot take: `--gdn-state-fp16` without GDN layers, a vocabulary flag whose
/// format's group does not divide the hidden size. Every `load_with` checks the same first.
pub fn check_options(
    config: &crate::model::ModelConfig,
    opts: &PrecisionOptions,
) -> Result<(), ArchError> {
    let has_gdn = config.architecture != Architecture::Llama
        && (0..config.num_hidden_layers).any(|i| !config.is_full_attention(i));
    if !has_gdn {
        no_gdn_state(opts, config)?;
    }
    for which in [VocabTensor::Embedding, VocabTensor::LmHead] {
        if let Some(q) = opts.vocab(which) {
            group_fits(which, q, config.hidden_size)?;
        }
    }
    Ok(())
}

/// Refuses a vocabulary flag whose format's group does not divide rows of `cols` values.
fn group_fits(which: VocabTensor, q: VocabQuant, cols: usize) -> Result<(), ArchError> {
    let format = vocab_format(q);
    if cols.is_multiple_of(format.group) {
        return Ok(());
    }
    let what = match which {
        VocabTensor::Embedding => "embedding",
        VocabTensor::LmHead => "output head",
    };
    Err(ArchError::Precision {
        flag: which.flag(q),
        why: format!(
            "the model's hidden size is {cols}, not a multiple of the {} group of {}, so its {what} cannot be stored as {}; drop the flag",
            format.name, format.group, format.name
        ),
    })
}

/// Refuses `--gdn-state-fp16` for a model without Gated DeltaNet layers.
pub(crate) fn no_gdn_state(
    opts: &PrecisionOptions,
    config: &crate::model::ModelConfig,
) -> Result<(), ArchError> {
    if opts.gdn_state_fp16 {
        return Err(ArchError::Precision {
            flag: "--gdn-state-fp16".into(),
            why: format!(
                "the {} model has no Gated DeltaNet layers, so there is no GDN state to store in fp16; drop the flag",
                config.model_type
            ),
        });
    }
    Ok(())
}

/// The vocabulary format a flag asks for (for messages and tests).
pub fn vocab_format(q: VocabQuant) -> &'static crate::formats::Format {
    crate::formats::format(q.format_name()).expect("a registered format")
}

/// A tensor decoded to f32: its row-major shape (outermost first) and values.
pub fn tensor_f32(weights: &Weights, name: &str) -> Result<(Vec<usize>, Vec<f32>), ArchError> {
    if let Weights::Synthetic(s) = weights {
        // Made straight in f32 (no byte round trip).
        if let (Some(shape), Some(values)) = (s.shape(name), s.values(name)) {
            return Ok((shape.to_vec(), values));
        }
    }
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
            dequantize(ty, &t.data, n).map_err(|e| bad(e.to_string()))?
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

/// Loads the model in `files` on backend `b` at the default precision: llama family (llama,
/// qwen3 dense) or the qwen35 families (Qwen3.5/3.6 dense and MoE, Qwen3-Next).
pub fn load<B: Backend>(b: &B, files: &ModelFiles) -> Result<Model<B>, ArchError> {
    load_with(b, files, &PrecisionOptions::default())
}

/// As [`load`], with the precision options that act at load (vocabulary formats, GDN state
/// type); an [`ArchError::Precision`] where the model cannot take one of them.
pub fn load_with<B: Backend>(
    b: &B,
    files: &ModelFiles,
    opts: &PrecisionOptions,
) -> Result<Model<B>, ArchError> {
    Ok(match files.config.architecture {
        Architecture::Llama => Model::Llama(Llama::load_with(b, files, opts)?),
        Architecture::Qwen35 | Architecture::Qwen35Moe | Architecture::Qwen3Next => {
            Model::Qwen35(Qwen35::load_with(b, files, opts)?)
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
        if ids.len() == 1 && want == LogitsWanted::Last && self.step_capturable() {
            if let Some(logits) = self.graph_step(state, ids[0]) {
                return logits;
            }
        }
        self.forward_ops(state, ids, want)
    }

    fn forward_lanes(&self, states: &mut [&mut ModelState<B>], ids: &[u32]) -> Vec<Vec<f32>> {
        check_lanes(states.len(), ids.len());
        let vocab = self.vocab_size();
        if self.step_capturable() {
            let b = self.backend();
            let mut kvs: Vec<&mut B::KvCache> = states.iter_mut().map(|s| s.kv_mut()).collect();
            if let Some(logits) = b.replay_lanes(&mut kvs, ids) {
                return per_lane(logits, vocab);
            }
            if b.begin_lanes_capture(&mut kvs, vocab) {
                drop(kvs);
                // Recorded, not run: the host side (cache lengths) advances as in an eager step.
                self.forward_lanes_ops(states, ids);
                let mut kvs: Vec<&mut B::KvCache> = states.iter_mut().map(|s| s.kv_mut()).collect();
                return per_lane(b.end_lanes_capture(&mut kvs, ids), vocab);
            }
        }
        self.forward_lanes_ops(states, ids)
    }

    fn forward_greedy(&self, state: &mut ModelState<B>, id: u32) -> u32 {
        if self.step_capturable() {
            if let Some(next) = self.backend().replay_step_greedy(state.kv_mut(), id) {
                return next;
            }
        }
        crate::engine::generate::argmax(&self.forward(state, &[id], LogitsWanted::Last))
    }

    fn forward_lanes_greedy(&self, states: &mut [&mut ModelState<B>], ids: &[u32]) -> Vec<u32> {
        check_lanes(states.len(), ids.len());
        if self.step_capturable() {
            let mut kvs: Vec<&mut B::KvCache> = states.iter_mut().map(|s| s.kv_mut()).collect();
            if let Some(next) = self.backend().replay_lanes_greedy(&mut kvs, ids) {
                return next;
            }
        }
        argmax_lanes(&self.forward_lanes(states, ids))
    }

    fn nll_rows(
        &self,
        state: &mut ModelState<B>,
        ids: &[u32],
        first_row: usize,
        targets: &[u32],
    ) -> Vec<f64> {
        match (self, state) {
            (Model::Llama(m), ModelState::Llama(s)) => m.nll_rows(s, ids, first_row, targets),
            (Model::Qwen35(m), ModelState::Qwen35(s)) => m.nll_rows(s, ids, first_row, targets),
            _ => panic!("a state from another model"),
        }
    }
}

impl<B: Backend> Model<B> {
    fn backend(&self) -> &B {
        match self {
            Model::Llama(m) => m.backend(),
            Model::Qwen35(m) => m.backend(),
        }
    }

    /// Whether a single-token step can be captured as one graph: every op stays on the
    /// device. MoE layers read the router's choice back to the host, so they cannot.
    fn step_capturable(&self) -> bool {
        self.config().moe.is_none()
    }

    /// The step op by op, through the backend's calls.
    fn forward_ops(&self, state: &mut ModelState<B>, ids: &[u32], want: LogitsWanted) -> Vec<f32> {
        match (self, state) {
            (Model::Llama(m), ModelState::Llama(s)) => m.forward(s, ids, want),
            (Model::Qwen35(m), ModelState::Qwen35(s)) => m.forward(s, ids, want),
            _ => panic!("a state from another model"),
        }
    }

    /// A lanes step op by op: the architecture's batched forward (a state of another model
    /// panics).
    fn forward_lanes_ops(&self, states: &mut [&mut ModelState<B>], ids: &[u32]) -> Vec<Vec<f32>> {
        match self {
            Model::Llama(m) => {
                let mut s: Vec<&mut llama::LlamaState<B>> = states
                    .iter_mut()
                    .map(|s| match &mut **s {
                        ModelState::Llama(s) => s,
                        _ => panic!("a state from another model"),
                    })
                    .collect();
                m.forward_lanes(&mut s, ids)
            }
            Model::Qwen35(m) => {
                let mut s: Vec<&mut qwen35::Qwen35State<B>> = states
                    .iter_mut()
                    .map(|s| match &mut **s {
                        ModelState::Qwen35(s) => s,
                        _ => panic!("a state from another model"),
                    })
                    .collect();
                m.forward_lanes(&mut s, ids)
            }
        }
    }

    /// A single-token step as the backend's captured graph of it (replayed, or captured now
    /// and replayed), or `None` when the backend runs this step op by op.
    fn graph_step(&self, state: &mut ModelState<B>, id: u32) -> Option<Vec<f32>> {
        let b = self.backend();
        if let Some(logits) = b.replay_step(state.kv_mut(), id) {
            return Some(logits);
        }
        if !b.begin_step_capture(state.kv_mut(), self.vocab_size()) {
            return None;
        }
        // Recorded, not run: the host side (cache length) advances as in an eager step.
        self.forward_ops(state, &[id], LogitsWanted::Last);
        Some(b.end_step_capture(state.kv_mut(), id))
    }
}

/// `lanes * vocab` logits, lane after lane, as one row per lane.
fn per_lane(logits: Vec<f32>, vocab: usize) -> Vec<Vec<f32>> {
    logits.chunks(vocab.max(1)).map(<[f32]>::to_vec).collect()
}

impl<B: Backend> ModelState<B> {
    fn kv_mut(&mut self) -> &mut B::KvCache {
        match self {
            ModelState::Llama(s) => &mut s.kv,
            ModelState::Qwen35(s) => &mut s.kv,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::CpuBackend;

    /// Stacking makes synthetic tensors in place and copies decoded ones, both giving the
    /// parts' values end to end; a part of another width is refused by name.
    #[test]
    fn stacked_tensors_are_the_parts_end_to_end() {
        let synthetic = crate::model::synthetic::SyntheticWeights::new("qwen3.6-mini", 3).unwrap();
        let la = "model.language_model.layers.0.linear_attn.";
        let names = ["in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"]
            .map(|n| format!("{la}{n}.weight"));
        let want: Vec<f32> = names
            .iter()
            .flat_map(|n| synthetic.values(n).unwrap())
            .collect();
        let w = Weights::Synthetic(Box::new(synthetic));
        let (data, cols) = stacked_f32(&w, &names, None).unwrap();
        assert_eq!((cols, data.len()), (1024, want.len()));
        assert!(data == want, "made in place: the parts end to end");
        let (again, _) = stacked_f32(&w, &names, Some(1024)).unwrap();
        assert!(again == want);
        let conv = format!("{la}conv1d.weight");
        let mixed = [names[0].clone(), conv.clone()];
        match stacked_f32(&w, &mixed, None) {
            Err(ArchError::Weight { name, problem }) => {
                assert_eq!(name, conv);
                assert!(problem.contains("unlike the 1024"), "{problem}");
            }
            other => panic!("a conv weight stacked with a projection: {other:?}"),
        }

        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/qwen35_r2");
        let files = crate::model::load_model(Some(std::path::Path::new(dir))).unwrap();
        let fw = &files.weights;
        let names: Vec<String> = ["q", "k", "v"]
            .iter()
            .map(|n| format!("model.layers.1.self_attn.{n}_proj.weight"))
            .filter(|n| fw.has_tensor(n))
            .collect();
        assert_eq!(names.len(), 3, "the fixture's attention layer");
        let want: Vec<f32> = names
            .iter()
            .flat_map(|n| tensor_f32(fw, n).unwrap().1)
            .collect();
        let (data, cols) = stacked_f32(fw, &names, None).unwrap();
        assert_eq!(cols, files.config.hidden_size);
        assert!(data == want, "decoded and copied: the parts end to end");
    }

    /// A reused buffer holds exactly the stack after, whatever it held before: larger
    /// (truncated, its stale values overwritten) or smaller (grown); one decoded tensor is
    /// taken as it is.
    #[test]
    fn a_reused_buffer_holds_exactly_the_stack() {
        let synthetic = crate::model::synthetic::SyntheticWeights::new("qwen3.6-mini", 3).unwrap();
        let la = "model.language_model.layers.0.linear_attn.";
        let names = ["in_proj_qkv", "in_proj_z"].map(|n| format!("{la}{n}.weight"));
        let w = Weights::Synthetic(Box::new(synthetic));
        let (want, _) = stacked_f32(&w, &names, None).unwrap();
        let mut buf = vec![f32::NAN; want.len() + 999];
        assert_eq!(stacked_f32_into(&w, &names, None, &mut buf).unwrap(), 1024);
        assert!(buf == want, "a larger buffer: truncated, every value made");
        let mut buf = vec![f32::NAN; 7];
        stacked_f32_into(&w, &names, None, &mut buf).unwrap();
        assert!(buf == want, "a smaller buffer: grown");

        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny/qwen35_r2");
        let files = crate::model::load_model(Some(std::path::Path::new(dir))).unwrap();
        let name = "model.layers.1.self_attn.q_proj.weight".to_string();
        let (shape, want) = tensor_f32(&files.weights, &name).unwrap();
        let mut buf = vec![f32::NAN; 3];
        let cols = stacked_f32_into(&files.weights, &[name], None, &mut buf).unwrap();
        assert_eq!(cols, *shape.last().unwrap());
        assert!(buf == want, "one decoded tensor, as it is");
    }

    /// `held_weights` re-encodes a matrix whose rows fit the format (the cpu then computes
    /// with the GPU's values) and leaves the others f32, as the GPU engine does.
    #[test]
    fn held_weights_reencode_where_the_width_fits() {
        let b = CpuBackend;
        let q4 = crate::formats::format("q4_g64").unwrap();
        let opts = PrecisionOptions {
            held_weights: Some("q4_g64"),
            ..Default::default()
        };
        let values = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 97.0)
                .collect()
        };
        let (rows, cols) = (3, 128);
        let held = hold_linear(&b, &opts, rows, cols, values(rows * cols));
        let want = b.linear_from_f32_in(rows, cols, values(rows * cols), q4);
        assert_eq!(held.data, want.data);
        assert_ne!(held.data, values(rows * cols), "q4_g64 rounds these values");
        // 100 columns are not whole groups of 64: f32, as on the GPU.
        let odd = hold_linear(&b, &opts, rows, 100, values(rows * 100));
        assert_eq!(odd.data, values(rows * 100));
        // No held format: the backend's default.
        let plain = hold_linear(
            &b,
            &PrecisionOptions::default(),
            rows,
            cols,
            values(rows * cols),
        );
        assert_eq!(plain.data, values(rows * cols));
    }
}
