//! Perplexity of a causal model over a token sequence: which windows to run, how to score
//! them, and the statistics (PPL and its standard error).
//!
//! Two ways to cut the sequence into windows of at most `ctx` tokens ([`Method`]):
//!
//! - **Stride** (sliding window): windows start at `0, stride, 2*stride, ...`; the first scores
//!   every token after its first, each later one only the tokens past the previous window's
//!   end, so with `stride < ctx` every token after the first is scored exactly once, each with
//!   at least `ctx - stride` tokens of context (except those of the first window).
//! - **Chunks** (llama.cpp's `perplexity` tool): non-overlapping windows of exactly `ctx`
//!   tokens, the tail dropped; each scores the predictions made at positions
//!   `ctx/2 ..= ctx-2`, i.e. the tokens at `ctx/2 + 1 .. ctx`.
//!
//! Each window runs through a fresh model state. When a BOS id is given, the first token of
//! every window is replaced by BOS before the forward (llama.cpp does the same for its chunks);
//! that token is never a scored target in its window, so it only changes the context.

use std::time::Instant;

use crate::engine::backend::Backend;
use crate::model::arch::{nll_chunked, CausalLm};

/// How the token sequence is cut into windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Overlapping windows `stride` apart; each token is scored once.
    Stride,
    /// llama.cpp's chunks: non-overlapping windows of `ctx` tokens scoring their second half.
    Chunks,
}

/// One forward: the tokens `start .. start + len` of the sequence; the tokens at window
/// offsets `score_from .. len` are scored (each from the logits of the position before it,
/// so `score_from >= 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: usize,
    pub len: usize,
    pub score_from: usize,
}

impl Window {
    /// How many tokens this window scores.
    pub fn scored(&self) -> usize {
        self.len - self.score_from
    }
}

/// Why windows cannot be planned or scored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PerplexityError {
    #[error("the context length must be at least 2 tokens (one to predict from, one to score); it is {0}")]
    ContextTooShort(usize),
    #[error("the stride must be between 1 and the context length ({ctx}); it is {stride}")]
    BadStride { stride: usize, ctx: usize },
    #[error("the chunks method needs an even context length of at least 4 (it scores the second half of each chunk); it is {0}")]
    BadChunkContext(usize),
    #[error("the text has {0} tokens; at least 2 are needed (one to predict from, one to score)")]
    TooFewTokens(usize),
    #[error("the text has {n} tokens, fewer than one chunk of {ctx}; pass a longer text or a smaller context")]
    ShorterThanChunk { n: usize, ctx: usize },
    #[error("token id {id} at position {pos} is outside the model's vocabulary of {vocab}")]
    TokenOutOfVocab { id: u32, pos: usize, vocab: usize },
    #[error("the BOS id {id} is outside the model's vocabulary of {vocab}")]
    BosOutOfVocab { id: u32, vocab: usize },
    #[error("the model returned {got} scores for a window of {len} tokens; {want} were expected")]
    LogitsShape { got: usize, len: usize, want: usize },
    #[error("the model gave a non-finite log-probability for the token at position {pos} (window {window})")]
    NonFinite { pos: usize, window: usize },
}

/// The windows that score `n_tokens` tokens with context `ctx`. `stride` is used by
/// [`Method::Stride`] only. Never returns an empty plan.
pub fn plan_windows(
    n_tokens: usize,
    ctx: usize,
    stride: usize,
    method: Method,
) -> Result<Vec<Window>, PerplexityError> {
    if ctx < 2 {
        return Err(PerplexityError::ContextTooShort(ctx));
    }
    if n_tokens < 2 {
        return Err(PerplexityError::TooFewTokens(n_tokens));
    }
    match method {
        Method::Stride => {
            if stride == 0 || stride > ctx {
                return Err(PerplexityError::BadStride { stride, ctx });
            }
            let mut out = Vec::new();
            let mut start = 0usize;
            let mut prev_end = 0usize;
            loop {
                let len = ctx.min(n_tokens - start);
                // A token needs a predecessor inside its own window.
                let score_from = prev_end.saturating_sub(start).max(1);
                if score_from < len {
                    out.push(Window {
                        start,
                        len,
                        score_from,
                    });
                }
                prev_end = start + len;
                if prev_end >= n_tokens {
                    break;
                }
                start += stride;
            }
            Ok(out)
        }
        Method::Chunks => {
            if !ctx.is_multiple_of(2) || ctx < 4 {
                return Err(PerplexityError::BadChunkContext(ctx));
            }
            let n = n_tokens / ctx;
            if n == 0 {
                return Err(PerplexityError::ShorterThanChunk { n: n_tokens, ctx });
            }
            Ok((0..n)
                .map(|k| Window {
                    start: k * ctx,
                    len: ctx,
                    score_from: ctx / 2 + 1,
                })
                .collect())
        }
    }
}

/// `-log p(target)` under `softmax(logits)`, computed in f64 with the max subtracted.
pub fn nll_of(logits: &[f32], target: usize) -> f64 {
    let max = logits
        .iter()
        .fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
    let sum: f64 = logits.iter().map(|&x| (x as f64 - max).exp()).sum();
    max + sum.ln() - logits[target] as f64
}

/// Running negative log-likelihood statistics (f64; Welford's update for the variance so a
/// constant NLL has exactly zero spread).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct NllStats {
    /// Tokens scored.
    pub count: usize,
    /// Sum of their NLLs (nats).
    pub sum: f64,
    mean: f64,
    m2: f64,
}

impl NllStats {
    pub fn push(&mut self, nll: f64) {
        self.count += 1;
        self.sum += nll;
        let delta = nll - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (nll - self.mean);
    }

    /// Mean NLL in nats (NaN when nothing was scored).
    pub fn mean_nll(&self) -> f64 {
        self.sum / self.count as f64
    }

    /// `exp(mean NLL)`.
    pub fn ppl(&self) -> f64 {
        self.mean_nll().exp()
    }

    /// Standard error of the mean NLL: sample standard deviation over `sqrt(count)` (NaN for
    /// fewer than 2 tokens). Equal to llama.cpp's `sqrt((E[x^2] - E[x]^2) / (count - 1))`.
    pub fn se_mean_nll(&self) -> f64 {
        if self.count < 2 {
            return f64::NAN;
        }
        let var = self.m2 / (self.count - 1) as f64;
        (var / self.count as f64).sqrt()
    }

    /// Standard error of the PPL by the delta method: `PPL * se(mean NLL)`.
    pub fn se_ppl(&self) -> f64 {
        self.ppl() * self.se_mean_nll()
    }
}

/// Where a scoring run stands after a window.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Windows done (1-based count).
    pub windows_done: usize,
    pub windows_total: usize,
    /// Tokens scored so far and the total the plan scores.
    pub scored: usize,
    pub scored_total: usize,
    /// Tokens run through the model so far.
    pub evaluated: usize,
    pub stats: NllStats,
    /// Seconds since scoring began.
    pub elapsed_s: f64,
}

impl Progress {
    /// Running perplexity.
    pub fn ppl(&self) -> f64 {
        self.stats.ppl()
    }

    /// Tokens run through the model per second.
    pub fn tokens_per_s(&self) -> f64 {
        self.evaluated as f64 / self.elapsed_s.max(1e-9)
    }
}

/// What a scoring run found.
#[derive(Debug, Clone, Copy)]
pub struct Totals {
    pub stats: NllStats,
    pub windows: usize,
    /// Tokens run through the model (the sum of the window lengths).
    pub evaluated: usize,
    pub elapsed_s: f64,
}

impl Totals {
    pub fn ppl(&self) -> f64 {
        self.stats.ppl()
    }

    pub fn se(&self) -> f64 {
        self.stats.se_ppl()
    }

    pub fn scored(&self) -> usize {
        self.stats.count
    }

    /// Tokens run through the model per second.
    pub fn tokens_per_s(&self) -> f64 {
        self.evaluated as f64 / self.elapsed_s.max(1e-9)
    }
}

/// Runs every window of `windows` over `ids` through `model` (a fresh state each) and
/// accumulates the NLL of the scored tokens; `bos` (when given) replaces the first token of
/// each window. `on_window` is called after each window.
pub fn score<B: Backend, M: CausalLm<B>>(
    model: &M,
    ids: &[u32],
    windows: &[Window],
    bos: Option<u32>,
    on_window: impl FnMut(&Progress),
) -> Result<Totals, PerplexityError> {
    score_chunked(model, ids, windows, bos, None, on_window)
}

/// As [`score`], each window run as chunks of at most `prefill_chunk` tokens
/// (`--prefill-chunk`; `None`: one forward per window).
///
/// The model scores each window itself ([`nll_chunked`], i.e. [`CausalLm::nll_rows`]): the
/// head runs on the scored rows only and, on a GPU, the log-softmax too, so no logits come
/// back to the host; the NLLs are the f64 `-log softmax(logits at t-1)[ids[t]]` of
/// [`nll_of`] (the cpu backend computes exactly that on the same logits).
pub fn score_chunked<B: Backend, M: CausalLm<B>>(
    model: &M,
    ids: &[u32],
    windows: &[Window],
    bos: Option<u32>,
    prefill_chunk: Option<usize>,
    mut on_window: impl FnMut(&Progress),
) -> Result<Totals, PerplexityError> {
    let vocab = model.vocab_size();
    if let Some(id) = bos.filter(|&b| b as usize >= vocab) {
        return Err(PerplexityError::BosOutOfVocab { id, vocab });
    }
    if let Some((pos, &id)) = ids.iter().enumerate().find(|(_, &id)| id as usize >= vocab) {
        return Err(PerplexityError::TokenOutOfVocab { id, pos, vocab });
    }
    let scored_total = windows.iter().map(Window::scored).sum();
    let started = Instant::now();
    let mut stats = NllStats::default();
    let mut evaluated = 0;
    let mut input = Vec::new();
    for (k, w) in windows.iter().enumerate() {
        assert!(
            w.score_from >= 1 && w.score_from <= w.len && w.start + w.len <= ids.len(),
            "window {w:?} does not fit {} tokens",
            ids.len()
        );
        input.clear();
        input.extend_from_slice(&ids[w.start..w.start + w.len]);
        if let Some(b) = bos {
            input[0] = b;
        }
        let mut state = model.new_state();
        let nlls = nll_chunked(model, &mut state, &input, w.score_from, prefill_chunk);
        if nlls.len() != w.scored() {
            return Err(PerplexityError::LogitsShape {
                got: nlls.len(),
                len: w.len,
                want: w.scored(),
            });
        }
        for (t, nll) in (w.score_from..w.len).zip(nlls) {
            if !nll.is_finite() {
                return Err(PerplexityError::NonFinite {
                    pos: w.start + t,
                    window: k,
                });
            }
            stats.push(nll);
        }
        evaluated += w.len;
        on_window(&Progress {
            windows_done: k + 1,
            windows_total: windows.len(),
            scored: stats.count,
            scored_total,
            evaluated,
            stats,
            elapsed_s: started.elapsed().as_secs_f64(),
        });
    }
    Ok(Totals {
        stats,
        windows: windows.len(),
        evaluated,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::CpuBackend;
    use crate::model::arch::LogitsWanted;

    fn w(start: usize, len: usize, score_from: usize) -> Window {
        Window {
            start,
            len,
            score_from,
        }
    }

    /// How many times each position is scored.
    fn coverage(n: usize, windows: &[Window]) -> Vec<usize> {
        let mut c = vec![0; n];
        for w in windows {
            for t in w.score_from..w.len {
                c[w.start + t] += 1;
            }
        }
        c
    }

    #[test]
    fn stride_plans_by_hand() {
        // 10 tokens, ctx 4, stride 2: [0,4) scores 1..4; [2,6) scores 4,5; [4,8) 6,7; [6,10) 8,9.
        assert_eq!(
            plan_windows(10, 4, 2, Method::Stride).unwrap(),
            vec![w(0, 4, 1), w(2, 4, 2), w(4, 4, 2), w(6, 4, 2)]
        );
        // 9 tokens: the last window is shorter and scores only token 8.
        assert_eq!(
            plan_windows(9, 4, 2, Method::Stride).unwrap(),
            vec![w(0, 4, 1), w(2, 4, 2), w(4, 4, 2), w(6, 3, 2)]
        );
        // Shorter than one window: one window, everything after the first token.
        assert_eq!(
            plan_windows(3, 8, 4, Method::Stride).unwrap(),
            vec![w(0, 3, 1)]
        );
        // ctx 5, stride 3 over 8 tokens: [0,5) scores 1..5; [3,8) scores 5..8.
        assert_eq!(
            plan_windows(8, 5, 3, Method::Stride).unwrap(),
            vec![w(0, 5, 1), w(3, 5, 2)]
        );
        // stride == ctx: disjoint windows; each later window's first token has no
        // predecessor in its window and is not scored; a 1-token tail scores nothing.
        assert_eq!(
            plan_windows(9, 4, 4, Method::Stride).unwrap(),
            vec![w(0, 4, 1), w(4, 4, 1)]
        );
    }

    #[test]
    fn stride_scores_every_token_after_the_first_exactly_once() {
        for n in 2..40 {
            for ctx in 2..12 {
                for stride in 1..ctx {
                    let plan = plan_windows(n, ctx, stride, Method::Stride).unwrap();
                    let c = coverage(n, &plan);
                    assert_eq!(c[0], 0, "n {n} ctx {ctx} stride {stride}");
                    assert!(
                        c[1..].iter().all(|&x| x == 1),
                        "n {n} ctx {ctx} stride {stride}: {plan:?}"
                    );
                    for w in &plan {
                        assert!(w.len <= ctx && w.score_from >= 1 && w.score_from < w.len);
                        // Every later window keeps ctx - stride tokens of context.
                        if w.start > 0 {
                            assert!(w.score_from >= ctx - stride);
                        }
                    }
                }
                // stride == ctx: nothing scored twice.
                let plan = plan_windows(n, ctx, ctx, Method::Stride).unwrap();
                assert!(coverage(n, &plan).iter().all(|&x| x <= 1));
            }
        }
    }

    #[test]
    fn chunks_plan_like_llama_cpp() {
        // ctx 8 over 19 tokens: two chunks, the 3-token tail dropped; each scores the
        // predictions of positions 4, 5, 6, i.e. tokens 5, 6, 7 (ctx/2 - 1 = 3 per chunk).
        let plan = plan_windows(19, 8, 0, Method::Chunks).unwrap();
        assert_eq!(plan, vec![w(0, 8, 5), w(8, 8, 5)]);
        assert_eq!(plan.iter().map(Window::scored).sum::<usize>(), 6);
        // llama.cpp at -c 512 scores 255 tokens a chunk.
        assert_eq!(
            plan_windows(1024, 512, 0, Method::Chunks).unwrap()[0].scored(),
            255
        );
        assert_eq!(
            plan_windows(4, 4, 0, Method::Chunks).unwrap(),
            vec![w(0, 4, 3)]
        );
    }

    #[test]
    fn bad_plans_are_refused() {
        use PerplexityError::*;
        assert_eq!(
            plan_windows(10, 1, 1, Method::Stride),
            Err(ContextTooShort(1))
        );
        assert_eq!(
            plan_windows(10, 4, 0, Method::Stride),
            Err(BadStride { stride: 0, ctx: 4 })
        );
        assert_eq!(
            plan_windows(10, 4, 5, Method::Stride),
            Err(BadStride { stride: 5, ctx: 4 })
        );
        assert_eq!(plan_windows(1, 4, 2, Method::Stride), Err(TooFewTokens(1)));
        assert_eq!(plan_windows(0, 4, 2, Method::Chunks), Err(TooFewTokens(0)));
        assert_eq!(
            plan_windows(10, 5, 0, Method::Chunks),
            Err(BadChunkContext(5))
        );
        assert_eq!(
            plan_windows(10, 2, 0, Method::Chunks),
            Err(BadChunkContext(2))
        );
        assert_eq!(
            plan_windows(7, 8, 0, Method::Chunks),
            Err(ShorterThanChunk { n: 7, ctx: 8 })
        );
    }

    #[test]
    fn nll_is_stable_and_matches_the_definition() {
        // log-softmax of [0, ln 3] at 1: p = 3/4.
        let l = [0.0f32, 3f32.ln()];
        assert!((nll_of(&l, 1) - (4.0f64 / 3.0).ln()).abs() < 1e-7);
        // Huge logits do not overflow.
        let big = [1000.0f32, 1000.0, 1000.0, 1000.0];
        assert!((nll_of(&big, 2) - 4f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn statistics() {
        let mut s = NllStats::default();
        for _ in 0..1000 {
            s.push(2.5);
        }
        assert_eq!(s.se_mean_nll(), 0.0);
        assert_eq!(s.se_ppl(), 0.0);
        assert!((s.ppl() - 2.5f64.exp()).abs() < 1e-12);
        // 1, 2, 3: mean 2, sample sd 1, se = 1/sqrt(3).
        let mut s = NllStats::default();
        for x in [1.0, 2.0, 3.0] {
            s.push(x);
        }
        assert!((s.se_mean_nll() - 1.0 / 3f64.sqrt()).abs() < 1e-15);
        assert!((s.se_ppl() - 2f64.exp() / 3f64.sqrt()).abs() < 1e-12);
        // llama.cpp's form gives the same number.
        let (n, e1, e2) = (3.0, 2.0, 14.0 / 3.0);
        assert!((s.se_mean_nll() - ((e2 - e1 * e1) / (n - 1.0f64)).sqrt()).abs() < 1e-12);
        let mut one = NllStats::default();
        one.push(1.0);
        assert!(one.se_ppl().is_nan());
    }

    /// A model over `vocab` tokens whose logits are a function of (position, previous token),
    /// recording every input it sees.
    struct Fake {
        vocab: usize,
        uniform: bool,
        seen: std::cell::RefCell<Vec<Vec<u32>>>,
    }

    impl CausalLm<CpuBackend> for Fake {
        type State = usize;
        fn new_state(&self) -> usize {
            0
        }
        fn position(&self, s: &usize) -> usize {
            *s
        }
        fn vocab_size(&self) -> usize {
            self.vocab
        }
        fn forward(&self, s: &mut usize, ids: &[u32], want: LogitsWanted) -> Vec<f32> {
            assert_eq!(want, LogitsWanted::All);
            assert_eq!(*s, 0, "a fresh state for every window");
            self.seen.borrow_mut().push(ids.to_vec());
            *s += ids.len();
            ids.iter()
                .flat_map(|&t| {
                    (0..self.vocab).map(move |v| {
                        if self.uniform {
                            7.0
                        } else {
                            ((t as usize * 31 + v * 17) % 13) as f32 * 0.5
                        }
                    })
                })
                .collect()
        }
    }

    fn fake(vocab: usize, uniform: bool) -> Fake {
        Fake {
            vocab,
            uniform,
            seen: Default::default(),
        }
    }

    #[test]
    fn a_uniform_model_has_the_vocabulary_size_as_ppl() {
        let ids: Vec<u32> = (0..50).map(|i| (i * 7 % 40) as u32).collect();
        for method in [Method::Stride, Method::Chunks] {
            let m = fake(40, true);
            let plan = plan_windows(ids.len(), 8, 3, method).unwrap();
            let t = score(&m, &ids, &plan, None, |_| {}).unwrap();
            assert!((t.ppl() - 40.0).abs() < 1e-9, "{}", t.ppl());
            assert!(t.se().abs() < 1e-9);
        }
    }

    #[test]
    fn score_uses_the_planned_rows_and_bos() {
        let ids: Vec<u32> = (0..20).map(|i| (i * 5 % 9) as u32).collect();
        let plan = plan_windows(ids.len(), 6, 4, Method::Stride).unwrap();
        let m = fake(9, false);
        let mut calls = Vec::new();
        let t = score(&m, &ids, &plan, Some(8), |p| {
            calls.push((p.windows_done, p.scored, p.evaluated))
        })
        .unwrap();
        // Recompute by hand: logits at position t depend only on the token at t.
        let mut want = NllStats::default();
        for w in &plan {
            let mut input = ids[w.start..w.start + w.len].to_vec();
            input[0] = 8;
            for t in w.score_from..w.len {
                let row: Vec<f32> = (0..9)
                    .map(|v| ((input[t - 1] as usize * 31 + v * 17) % 13) as f32 * 0.5)
                    .collect();
                want.push(nll_of(&row, input[t] as usize));
            }
        }
        assert_eq!(t.scored(), ids.len() - 1);
        assert_eq!(t.stats.sum, want.sum);
        assert_eq!(t.windows, plan.len());
        let seen = m.seen.borrow();
        assert_eq!(seen.len(), plan.len());
        assert!(seen.iter().all(|s| s[0] == 8));
        assert_eq!(
            seen[1][1..],
            ids[plan[1].start + 1..plan[1].start + plan[1].len]
        );
        assert_eq!(
            calls.last().unwrap(),
            &(plan.len(), ids.len() - 1, t.evaluated)
        );
        // An id outside the vocabulary is refused before any forward.
        let bad = fake(9, false);
        assert!(matches!(
            score(
                &bad,
                &[1, 2, 9],
                &plan_windows(3, 4, 2, Method::Stride).unwrap(),
                None,
                |_| {}
            ),
            Err(PerplexityError::TokenOutOfVocab { id: 9, pos: 2, .. })
        ));
        assert!(bad.seen.borrow().is_empty());
    }

    /// A model whose logits are a function of (absolute position, token), with a state that
    /// carries the position across chunks; `short` drops the last row of every forward.
    struct Positional {
        vocab: usize,
        short: bool,
    }

    impl Positional {
        fn row(&self, pos: usize, t: u32) -> Vec<f32> {
            (0..self.vocab)
                .map(|v| ((t as usize * 31 + v * 17 + pos * 7) % 13) as f32 * 0.5 - 2.0)
                .collect()
        }
    }

    impl CausalLm<CpuBackend> for Positional {
        type State = usize;
        fn new_state(&self) -> usize {
            0
        }
        fn position(&self, s: &usize) -> usize {
            *s
        }
        fn vocab_size(&self) -> usize {
            self.vocab
        }
        fn forward(&self, s: &mut usize, ids: &[u32], want: LogitsWanted) -> Vec<f32> {
            assert_eq!(want, LogitsWanted::All);
            let p0 = *s;
            *s += ids.len();
            let rows = ids.len() - usize::from(self.short);
            (0..rows).flat_map(|i| self.row(p0 + i, ids[i])).collect()
        }
    }

    #[test]
    fn the_default_nll_is_the_host_computation() {
        use crate::model::arch::forward_chunked;
        let m = Positional {
            vocab: 11,
            short: false,
        };
        let ids: Vec<u32> = (0..23).map(|i| (i * 7 % 11) as u32).collect();
        let mut s = m.new_state();
        let logits = m.forward(&mut s, &ids, LogitsWanted::All);
        let host: Vec<f64> = (1..ids.len())
            .map(|t| nll_of(&logits[(t - 1) * 11..t * 11], ids[t] as usize))
            .collect();
        for score_from in 1..=ids.len() {
            let mut s = m.new_state();
            let got = m.nll(&mut s, &ids, score_from);
            assert_eq!(got, host[score_from - 1..], "score_from {score_from}");
            assert_eq!(s, ids.len(), "the state advances over every token");
            // In chunks (the rows before the scored range, and a scored row whose target
            // opens the next chunk): the same values, the same position.
            for chunk in [1, 2, 5, 22, 23, 40] {
                let mut s = m.new_state();
                let got = nll_chunked(&m, &mut s, &ids, score_from, Some(chunk));
                assert_eq!(
                    got,
                    host[score_from - 1..],
                    "score_from {score_from} chunk {chunk}"
                );
                assert_eq!(s, ids.len());
                let mut s = m.new_state();
                let l = forward_chunked(&m, &mut s, &ids, LogitsWanted::All, Some(chunk));
                assert_eq!(l, logits);
            }
        }
        // nll_rows: any rows against any targets.
        let mut s = m.new_state();
        let got = m.nll_rows(&mut s, &ids, 4, &[3, 0, 10]);
        let want: Vec<f64> = (0..3)
            .map(|i| nll_of(&logits[(4 + i) * 11..(5 + i) * 11], [3, 0, 10][i]))
            .collect();
        assert_eq!(got, want);
        let mut s = m.new_state();
        assert!(m.nll_rows(&mut s, &ids, 23, &[]).is_empty());
    }

    #[test]
    fn scoring_checks_the_models_answer() {
        let ids: Vec<u32> = (0..20).map(|i| (i * 5 % 9) as u32).collect();
        let plan = plan_windows(ids.len(), 8, 4, Method::Stride).unwrap();
        // Chunked scoring of a position-dependent model equals the unchunked scoring.
        let m = Positional {
            vocab: 9,
            short: false,
        };
        let whole = score(&m, &ids, &plan, Some(8), |_| {}).unwrap();
        for chunk in [1, 3, 7] {
            let t = score_chunked(&m, &ids, &plan, Some(8), Some(chunk), |_| {}).unwrap();
            assert_eq!(t.stats, whole.stats, "chunk {chunk}");
        }
        // Logits of the wrong shape are refused, not scored.
        let short = Positional {
            vocab: 9,
            short: true,
        };
        assert_eq!(
            score(&short, &ids, &plan, None, |_| {}).unwrap_err(),
            PerplexityError::LogitsShape {
                got: 0,
                len: 8,
                want: 7
            }
        );
    }

    /// A model whose logits are NaN after token 3.
    struct Broken;

    impl CausalLm<CpuBackend> for Broken {
        type State = usize;
        fn new_state(&self) -> usize {
            0
        }
        fn position(&self, s: &usize) -> usize {
            *s
        }
        fn vocab_size(&self) -> usize {
            4
        }
        fn forward(&self, s: &mut usize, ids: &[u32], _: LogitsWanted) -> Vec<f32> {
            *s += ids.len();
            ids.iter()
                .flat_map(|&t| [if t == 3 { f32::NAN } else { 1.0 }, 0.0, 0.0, 0.0])
                .collect()
        }
    }

    #[test]
    fn a_non_finite_nll_names_its_position() {
        let ids = [1u32, 2, 0, 1, 2, 0, 3, 1, 2, 0];
        let plan = plan_windows(ids.len(), 4, 2, Method::Stride).unwrap();
        // The third window, [4, 8), scores 6 and 7; 7 is predicted after the 3 at 6.
        assert_eq!(plan[2], w(4, 4, 2));
        for chunk in [None, Some(1), Some(3)] {
            assert_eq!(
                score_chunked(&Broken, &ids, &plan, None, chunk, |_| {}).unwrap_err(),
                PerplexityError::NonFinite { pos: 7, window: 2 }
            );
        }
    }
}
