//! Generation: greedy and sampled decoding over any [`CausalLm`], stop tokens, and a
//! streaming text decoder that never emits half of a multi-byte character.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::backend::Backend;
use crate::model::arch::{forward_chunked, CausalLm, LogitsWanted};
use crate::model::{ModelError, Tokenizer};

/// How the next token is picked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// 0 (or below) means greedy (argmax; ties go to the lowest id).
    pub temperature: f32,
    /// Keep the `top_k` most likely tokens (0 = all).
    pub top_k: usize,
    /// Keep the smallest set of most likely tokens whose probability reaches `top_p`
    /// (1 = all).
    pub top_p: f32,
    pub seed: u64,
}

impl Sampling {
    pub fn greedy() -> Self {
        Sampling {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            seed: 0,
        }
    }

    /// Whether [`sample`] takes the argmax (and draws nothing): what a backend may compute
    /// on the device ([`CausalLm::forward_greedy`]).
    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0 || self.top_k == 1
    }
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling::greedy()
    }
}

/// What [`generate`] does.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    pub max_new_tokens: usize,
    pub sampling: Sampling,
    /// Ids that end generation (not included in the output), e.g. `Tokenizer::stop_ids`.
    pub stop_ids: Vec<u32>,
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A stop id was produced (it is in [`Generation::stop_token`]).
    StopToken,
    /// `max_new_tokens` were produced.
    Length,
    /// The callback asked to stop.
    Callback,
}

/// The result of [`generate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    /// The new tokens (without the stop token).
    pub tokens: Vec<u32>,
    pub stop_token: Option<u32>,
    pub reason: StopReason,
}

/// Index of the largest value (the first one on ties).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// Picks a token from `logits` under `s`, drawing from `rng` when sampling.
pub fn sample(logits: &[f32], s: &Sampling, rng: &mut impl Rng) -> u32 {
    if s.is_greedy() {
        return argmax(logits);
    }
    let mut idx: Vec<u32> = (0..logits.len() as u32).collect();
    // Descending by logit, ties by id, so the result depends on nothing but the inputs.
    idx.sort_by(|&a, &b| {
        logits[b as usize]
            .total_cmp(&logits[a as usize])
            .then(a.cmp(&b))
    });
    if s.top_k > 0 && s.top_k < idx.len() {
        idx.truncate(s.top_k);
    }
    let t = s.temperature as f64;
    let m = logits[idx[0] as usize] as f64;
    let mut p: Vec<f64> = idx
        .iter()
        .map(|&i| ((logits[i as usize] as f64 - m) / t).exp())
        .collect();
    let z: f64 = p.iter().sum();
    p.iter_mut().for_each(|v| *v /= z);
    if s.top_p < 1.0 {
        let mut cum = 0.0;
        let mut keep = p.len();
        for (j, v) in p.iter().enumerate() {
            cum += v;
            if cum >= s.top_p as f64 {
                keep = j + 1;
                break;
            }
        }
        p.truncate(keep);
        idx.truncate(keep);
    }
    let total: f64 = p.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (j, v) in p.iter().enumerate() {
        if u < *v {
            return idx[j];
        }
        u -= v;
    }
    *idx.last().expect("at least one candidate")
}

/// Feeds `prompt` (prefill), then decodes up to `opts.max_new_tokens` tokens one at a time,
/// calling `on_token` with each new token (not the stop token); `on_token` returns `false`
/// to stop. `state` may already hold earlier turns (the prompt continues after them).
pub fn generate<B, M>(
    model: &M,
    state: &mut M::State,
    prompt: &[u32],
    opts: &GenerateOptions,
    on_token: impl FnMut(u32) -> bool,
) -> Generation
where
    B: Backend,
    M: CausalLm<B>,
{
    generate_chunked(model, state, prompt, opts, None, on_token)
}

/// As [`generate`], the prompt run as consecutive chunks of at most `prefill_chunk` tokens
/// (`--prefill-chunk`; `None`: one forward), which bounds the prefill's activation memory.
pub fn generate_chunked<B, M>(
    model: &M,
    state: &mut M::State,
    prompt: &[u32],
    opts: &GenerateOptions,
    prefill_chunk: Option<usize>,
    mut on_token: impl FnMut(u32) -> bool,
) -> Generation
where
    B: Backend,
    M: CausalLm<B>,
{
    assert!(
        !prompt.is_empty(),
        "generate needs at least one prompt token"
    );
    let mut rng = StdRng::seed_from_u64(opts.sampling.seed);
    let mut tokens = Vec::new();
    if opts.max_new_tokens == 0 {
        return Generation {
            tokens,
            stop_token: None,
            reason: StopReason::Length,
        };
    }
    let logits = forward_chunked(model, state, prompt, LogitsWanted::Last, prefill_chunk);
    let mut next = sample(&logits, &opts.sampling, &mut rng);
    loop {
        if opts.stop_ids.contains(&next) {
            return Generation {
                tokens,
                stop_token: Some(next),
                reason: StopReason::StopToken,
            };
        }
        tokens.push(next);
        if !on_token(next) {
            return Generation {
                tokens,
                stop_token: None,
                reason: StopReason::Callback,
            };
        }
        if tokens.len() >= opts.max_new_tokens {
            return Generation {
                tokens,
                stop_token: None,
                reason: StopReason::Length,
            };
        }
        // Greedy steps take the argmax where the logits are (one id read back).
        next = match opts.sampling.is_greedy() {
            true => model.forward_greedy(state, next),
            false => sample(
                &model.forward(state, &[next], LogitsWanted::Last),
                &opts.sampling,
                &mut rng,
            ),
        };
    }
}

/// Turns a stream of token ids into text pieces. A piece is emitted only once the tokens
/// so far decode to whole characters, so a character split across tokens comes out whole,
/// and context-dependent decoding (leading-space handling) sees a few previous tokens.
pub struct TextStream<'a> {
    tokenizer: &'a Tokenizer,
    ids: Vec<u32>,
    /// Start of the window that is re-decoded (some context before `read`).
    prefix: usize,
    /// Tokens whose text has been emitted.
    read: usize,
    skip_special_tokens: bool,
}

impl<'a> TextStream<'a> {
    pub fn new(tokenizer: &'a Tokenizer, skip_special_tokens: bool) -> Self {
        TextStream {
            tokenizer,
            ids: Vec::new(),
            prefix: 0,
            read: 0,
            skip_special_tokens,
        }
    }

    /// Adds a token; returns the text it completes (maybe empty).
    pub fn push(&mut self, id: u32) -> Result<String, ModelError> {
        self.ids.push(id);
        let before = self
            .tokenizer
            .decode(&self.ids[self.prefix..self.read], self.skip_special_tokens)?;
        let now = self
            .tokenizer
            .decode(&self.ids[self.prefix..], self.skip_special_tokens)?;
        if now.len() <= before.len() || now.ends_with('\u{FFFD}') {
            // Nothing new yet, or an incomplete character: wait for more tokens.
            return Ok(String::new());
        }
        let Some(piece) = now.get(before.len()..) else {
            return Ok(String::new());
        };
        let piece = piece.to_string();
        self.prefix = self.read;
        self.read = self.ids.len();
        Ok(piece)
    }

    /// Whatever is still held back (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> Result<String, ModelError> {
        let before = self
            .tokenizer
            .decode(&self.ids[self.prefix..self.read], self.skip_special_tokens)?;
        let now = self
            .tokenizer
            .decode(&self.ids[self.prefix..], self.skip_special_tokens)?;
        self.prefix = self.ids.len();
        self.read = self.ids.len();
        Ok(now.get(before.len()..).unwrap_or("").to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_is_argmax_with_first_tie() {
        let mut rng = StdRng::seed_from_u64(0);
        assert_eq!(
            sample(&[0.1, 3.0, 3.0, -1.0], &Sampling::greedy(), &mut rng),
            1
        );
    }

    #[test]
    fn top_k_one_and_top_p_small_are_greedy() {
        let logits = [0.5, 2.0, 1.9, -3.0];
        for seed in 0..20 {
            let mut rng = StdRng::seed_from_u64(seed);
            let s = Sampling {
                temperature: 1.0,
                top_k: 1,
                top_p: 1.0,
                seed,
            };
            assert_eq!(sample(&logits, &s, &mut rng), 1);
            let s = Sampling {
                temperature: 1.0,
                top_k: 0,
                top_p: 0.01,
                seed,
            };
            assert_eq!(sample(&logits, &s, &mut rng), 1);
        }
    }

    #[test]
    fn sampling_follows_the_distribution_and_respects_top_k() {
        let logits = [0.0f32, (3.0f32).ln(), -100.0, 1.0];
        let s = Sampling {
            temperature: 1.0,
            top_k: 2,
            top_p: 1.0,
            seed: 9,
        };
        let mut rng = StdRng::seed_from_u64(9);
        let mut counts = [0usize; 4];
        for _ in 0..4000 {
            counts[sample(&logits, &s, &mut rng) as usize] += 1;
        }
        // top-2 keeps ids 1 (logit ln 3 = 1.0986) and 3 (logit 1): p1 = e^1.0986/(e^1.0986+e).
        assert_eq!(counts[0] + counts[2], 0);
        let p1 = 3.0 / (3.0 + std::f64::consts::E);
        let f1 = counts[1] as f64 / 4000.0;
        assert!((f1 - p1).abs() < 0.03, "{f1} vs {p1}");
    }
}
