//! Whole-model benchmarks (`ninfer bench model`): prompt tokens per second at given prompt
//! lengths and decode tokens per second, on any backend, with the decode floor.
//!
//! The decode floor is what one decode step must read, every weight it touches once, over
//! the device's copy bandwidth measured in the same run ([`crate::bench::measure_copy_bandwidth`]):
//! each linear layer in the format the GPU engine holds it in, the norms and GDN parameters
//! in f32, one embedding row, the whole head, and of a MoE layer only the router, the
//! shared expert and the `top_k` experts a token picks. What the step also reads besides
//! weights (the KV cache, the GDN state, activations) is left out, so at long contexts the
//! real bound lies above the floor. The cpu backend has no floor.
//!
//! Prompt speed: a fresh sequence per run; `warmup` untimed runs of the same prompt first
//! (they compile the kernels); the median of `repeat` timed runs. Decode speed: a sequence
//! holding `decode_context` tokens, `warmup_steps` untimed single-token steps, then
//! `decode_tokens` timed steps, each as [`Plan::readbacks`] asks: a greedy step as
//! `ninfer run` takes it (the next token back on the host: [`CausalLm::forward_greedy`],
//! where the GPU takes the argmax and reads back one id), or a step returning its logits to
//! the host, as sampling at a temperature does.
//! Token ids are random (seeded): no tokenizer is needed.
//!
//! Several lanes (independent sequences decoded together) run the batched decode step
//! ([`CausalLm::forward_lanes`]): each lane holds its own context (`decode_context` random
//! tokens of a stream of its own), then every step decodes one token per lane together.
//! Such a row's `tokens` are the tokens of all lanes (`lanes * decode_tokens`), so tokens/s
//! counts every lane's; its step time is that of one batched step. One lane is the plain
//! single-sequence step.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::engine::Backend;
use crate::formats::{Format, Layout};
use crate::model::arch::{self, forward_chunked, CausalLm, LogitsWanted};
use crate::model::precision::{PrecisionOptions, VocabTensor};
use crate::model::synthetic::is_moe_layer;
use crate::model::{expected_tensors, ModelConfig, ModelFiles};

/// What to measure.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Prompt lengths, each timed on a fresh sequence.
    pub prompts: Vec<usize>,
    /// Lane counts for decode (more than one: the batched step).
    pub lanes: Vec<usize>,
    /// Timed decode steps.
    pub decode_tokens: usize,
    /// Tokens in the sequence before the decode warm-up.
    pub decode_context: usize,
    /// Untimed runs of each prompt before the timed ones.
    pub warmup: usize,
    /// Untimed decode steps before the timed ones.
    pub warmup_steps: usize,
    /// Timed runs of each prompt (the median is reported).
    pub repeat: usize,
    /// Seed of the random token ids.
    pub seed: u64,
    /// What decode steps read back; every decode row is timed once per entry, in order,
    /// each on fresh sequences.
    pub readbacks: Vec<Readback>,
}

/// What a timed decode step hands back to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Readback {
    /// Each lane's greedy next token ([`CausalLm::forward_greedy`]).
    Greedy,
    /// Each lane's logits (the vocabulary's values).
    Logits,
}

/// Whether a measurement is of a prompt or of decode steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Prompt,
    Decode,
}

/// One measurement, before it is set against the floor.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub kind: Kind,
    pub lanes: usize,
    /// Prompt length, or tokens decoded in the timed steps (every lane's).
    pub tokens: usize,
    /// Tokens in the sequence (each lane's) when timing began.
    pub context: usize,
    /// Seconds for `tokens` (the median run for prompts); `None`: not supported.
    pub seconds: Option<f64>,
    /// Why a measurement was not made.
    pub note: Option<String>,
    /// The pass of an A/B run this prompt was timed in: the precision flag it adds to the
    /// run's (`""` for the plain pass); `None` outside A/B runs.
    pub variant: Option<String>,
    /// Decode: what each timed step read back.
    pub readback: Option<Readback>,
}

impl Measurement {
    pub fn tokens_per_s(&self) -> Option<f64> {
        self.seconds.map(|s| self.tokens as f64 / s.max(1e-12))
    }
}

/// One line of `--json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelBenchRecord {
    /// Always `model_bench`.
    pub what: String,
    /// The synthetic model's name, or the model's path.
    pub model: String,
    /// `synthetic` or `file`.
    pub source: String,
    /// The seed of a synthetic model's weights (and of every run's token ids).
    pub seed: u64,
    /// The format linear layers are held in (`f32` on the cpu, which holds f32).
    pub weights: String,
    /// The linear layers' activations on the GPU (`exact` or `bf16`; `exact` on the cpu).
    pub activations: String,
    /// The precision flags, as typed.
    pub precision: String,
    pub device: String,
    pub gpu: Option<String>,
    pub rev: String,
    /// UTC, ISO 8601.
    pub date: String,
    pub kind: Kind,
    pub lanes: usize,
    /// Prompt length, or timed decode steps.
    pub tokens: usize,
    /// Tokens in the sequence when timing began.
    pub context: usize,
    /// False where the engine cannot run this measurement (then no timing fields).
    pub supported: bool,
    pub note: Option<String>,
    pub seconds: Option<f64>,
    pub tokens_per_s: Option<f64>,
    /// Decode: mean time of one step.
    pub step_us: Option<f64>,
    /// Decode: what each step read back to the host (`greedy`: the next token, `logits`).
    #[serde(default)]
    pub readback: Option<Readback>,
    /// Decode: bytes of weights one step reads (see the module docs).
    pub step_bytes: Option<f64>,
    /// The copy bandwidth measured in this run (bytes read plus written per second / 1e9).
    pub copy_gb_per_s: Option<f64>,
    /// Decode: `step_bytes` over the copy bandwidth.
    pub floor_us: Option<f64>,
    /// Decode: `floor_us / step_us`, the fraction of the floor reached.
    pub fraction: Option<f64>,
    /// Seconds to build the model on the device (making synthetic weights included).
    pub load_s: f64,
    /// Where the GPU engine's routes came from: `tuning profile PATH (N routes)` or
    /// `built-in heuristics` (`None` on the cpu).
    #[serde(default)]
    pub routes: Option<String>,
    pub command: String,
}

/// `n` random token ids below `vocab` (the same for the same seed and stream).
pub fn random_ids(seed: u64, stream: u64, n: usize, vocab: usize) -> Vec<u32> {
    let mut x = seed ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03);
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z % vocab.max(1) as u64) as u32
        })
        .collect()
}

/// The bytes an `[rows, cols]` linear layer takes in `fmt` on the GPU engine, which keeps
/// f32 where its exact route cannot take `fmt` at this width.
pub fn linear_bytes(fmt: &'static Format, rows: usize, cols: usize) -> usize {
    Layout::new(held_format(fmt, cols), rows, cols)
        .map(|l| l.total_bytes)
        .unwrap_or(rows * cols * 4)
}

/// The format a weight of rows of `cols` values is held in when `fmt` is asked for.
pub fn held_format(fmt: &'static Format, cols: usize) -> &'static Format {
    if crate::ops::linear_exact::supports(fmt, cols) {
        fmt
    } else {
        crate::formats::format("f32").expect("f32 is registered")
    }
}

/// Bytes of a model's weights on the GPU engine, and of what one decode step reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightBytes {
    /// Every weight the engine holds (the embedding table and the head once each, or twice
    /// where a tied head is held in another format).
    pub held: f64,
    /// What one single-token decode step reads.
    pub step: f64,
    /// Linear layers whose width `fmt` cannot take (held in f32).
    pub f32_fallbacks: usize,
    pub linears: usize,
}

/// [`WeightBytes`] of a model of `config` whose linear layers are held in `fmt` (the
/// vocabulary tensors as `opts` asks).
pub fn weight_bytes(
    config: &ModelConfig,
    fmt: &'static Format,
    opts: &PrecisionOptions,
) -> WeightBytes {
    let vocab_fmt = |which| opts.vocab(which).map(arch::vocab_format).unwrap_or(fmt);
    let (h, vocab) = (config.hidden_size, config.vocab_size);
    let mut b = WeightBytes {
        held: 0.0,
        step: 0.0,
        f32_fallbacks: 0,
        linears: 0,
    };
    let linear = |b: &mut WeightBytes, rows: usize, cols: usize, f: &'static Format| {
        b.linears += 1;
        if !std::ptr::eq(held_format(f, cols), f) {
            b.f32_fallbacks += 1;
        }
        linear_bytes(f, rows, cols) as f64
    };
    let embed_name = format!("{}embed_tokens.weight", config.hf_tensor_prefix());
    for (name, shape, required) in expected_tensors(config, false) {
        // Not required: the fused experts (counted below) and a tied head.
        if !required {
            continue;
        }
        if name == embed_name || name == "lm_head.weight" {
            continue;
        }
        let x = if shape.len() == 2 {
            linear(&mut b, shape[0], shape[1], fmt)
        } else {
            (shape.iter().product::<usize>() * 4) as f64
        };
        b.held += x;
        b.step += x;
    }
    if config.attention_bias {
        let bias = (config.num_attention_heads + 2 * config.num_key_value_heads)
            * config.head_dim
            * 4
            * config.num_hidden_layers;
        b.held += bias as f64;
        b.step += bias as f64;
    }
    if let Some(moe) = &config.moe {
        let (inter, k, e) = (
            moe.moe_intermediate_size,
            moe.num_experts_per_tok,
            moe.num_experts,
        );
        let moe_layers = (0..config.num_hidden_layers)
            .filter(|&i| is_moe_layer(config, i))
            .count();
        for _ in 0..moe_layers {
            let one = 2.0 * linear(&mut b, inter, h, fmt) + linear(&mut b, h, inter, fmt);
            b.held += e as f64 * one;
            b.step += k as f64 * one;
        }
    }
    // The embedding (one row per token) and the head (whole).
    let ef = held_format(vocab_fmt(VocabTensor::Embedding), h);
    let hf = vocab_fmt(VocabTensor::LmHead);
    let table = Layout::new(ef, vocab, h).expect("a held format fits");
    b.held += table.total_bytes as f64;
    b.step += (table.q_row_bytes + table.s_row_bytes) as f64;
    let head = linear(&mut b, vocab, h, hf);
    let shared = config.tie_word_embeddings && opts.embedding == opts.lm_head;
    if !shared {
        b.held += head;
    }
    b.step += head;
    b
}

/// One pass of an A/B run: the precision flag it adds, and what switches the backend to it.
pub type Variant<'a> = (&'a str, &'a dyn Fn());

/// Loads `files` on `b` and makes every measurement of `plan` there. Returns the seconds the
/// load took and the measurements. With `variants` (a precision flag and what switches the
/// loaded model's backend to it), every prompt is timed once per variant, in order, over the
/// one load; decode runs after the first variant is switched back on. With
/// `decode_variants`, every decode row is timed once per entry, in order (each on fresh
/// sequences, so that nothing captured under one entry replays under the next).
#[allow(clippy::too_many_arguments)]
pub fn measure<B: Backend>(
    b: &B,
    files: &ModelFiles,
    opts: &PrecisionOptions,
    plan: &Plan,
    variants: &[Variant<'_>],
    decode_variants: &[Variant<'_>],
    on_loaded: impl FnOnce(f64),
    mut on_measured: impl FnMut(&Measurement),
) -> Result<(f64, Vec<Measurement>), arch::ArchError> {
    let started = Instant::now();
    let model = arch::load_with(b, files, opts)?;
    let load_s = started.elapsed().as_secs_f64();
    on_loaded(load_s);
    let vocab = model.vocab_size();
    let chunk = opts.prefill_chunk;
    let mut out = Vec::new();
    let mut push = |m: Measurement, out: &mut Vec<Measurement>| {
        on_measured(&m);
        out.push(m);
    };
    let passes: Vec<Option<&Variant<'_>>> = if variants.is_empty() {
        vec![None]
    } else {
        variants.iter().map(Some).collect()
    };
    for ((pi, &p), pass) in plan
        .prompts
        .iter()
        .enumerate()
        .flat_map(|pp| passes.iter().map(move |v| (pp, v)))
    {
        if let Some((_, switch)) = pass {
            switch();
        }
        let ids = random_ids(plan.seed, 1 + pi as u64, p, vocab);
        let run = || {
            let mut state = model.new_state();
            let t = Instant::now();
            let logits = forward_chunked(&model, &mut state, &ids, LogitsWanted::Last, chunk);
            let s = t.elapsed().as_secs_f64();
            check_finite(&logits, "prompt");
            s
        };
        for _ in 0..plan.warmup {
            run();
        }
        let mut times: Vec<f64> = (0..plan.repeat.max(1)).map(|_| run()).collect();
        push(
            Measurement {
                kind: Kind::Prompt,
                lanes: 1,
                tokens: p,
                context: 0,
                seconds: Some(crate::bench::median(&mut times)),
                note: None,
                variant: pass.map(|(flag, _)| flag.to_string()),
                readback: None,
            },
            &mut out,
        );
    }
    if let Some((_, switch)) = variants.first() {
        switch();
    }
    let decode_passes: Vec<Option<&Variant<'_>>> = if decode_variants.is_empty() {
        vec![None]
    } else {
        decode_variants.iter().map(Some).collect()
    };
    for &lanes in &plan.lanes {
        for pass in &decode_passes {
            if let Some((_, switch)) = pass {
                switch();
            }
            for &readback in &plan.readbacks {
                let mut m = match lanes {
                    1 => decode_one(&model, plan, readback, vocab, chunk),
                    _ => decode_lanes(&model, plan, readback, lanes, vocab, chunk),
                };
                m.variant = pass.map(|(flag, _)| flag.to_string());
                push(m, &mut out);
            }
        }
    }
    Ok((load_s, out))
}

/// Times `plan.decode_tokens` single-token steps of one sequence holding `decode_context`
/// tokens first (after the warm-up steps, the first of which captures where it can).
fn decode_one<B: Backend>(
    model: &arch::Model<B>,
    plan: &Plan,
    readback: Readback,
    vocab: usize,
    chunk: Option<usize>,
) -> Measurement {
    let context = random_ids(plan.seed, 1000, plan.decode_context, vocab);
    let steps = random_ids(
        plan.seed,
        1001,
        plan.warmup_steps + plan.decode_tokens,
        vocab,
    );
    let mut state = model.new_state();
    if !context.is_empty() {
        forward_chunked(model, &mut state, &context, LogitsWanted::Last, chunk);
    }
    for &id in &steps[..plan.warmup_steps] {
        model.forward(&mut state, &[id], LogitsWanted::Last);
    }
    let at = model.position(&state);
    let t = Instant::now();
    let mut last = Vec::new();
    for &id in &steps[plan.warmup_steps..] {
        match readback {
            Readback::Logits => last = model.forward(&mut state, &[id], LogitsWanted::Last),
            Readback::Greedy => {
                model.forward_greedy(&mut state, id);
            }
        }
    }
    let s = t.elapsed().as_secs_f64();
    if readback == Readback::Greedy {
        // One more step, untimed, for logits to check.
        last = model.forward(&mut state, &[steps[0]], LogitsWanted::Last);
    }
    check_finite(&last, "decode");
    Measurement {
        kind: Kind::Decode,
        lanes: 1,
        tokens: plan.decode_tokens,
        context: at,
        seconds: Some(s),
        note: None,
        variant: None,
        readback: Some(readback),
    }
}

/// Times `plan.decode_tokens` batched steps of `lanes` lanes, each lane holding its own
/// `decode_context` tokens first (a stream of ids of its own) and the warm-up steps run
/// batched (the first runs op by op, the second is captured where the backend can).
fn decode_lanes<B: Backend>(
    model: &arch::Model<B>,
    plan: &Plan,
    readback: Readback,
    lanes: usize,
    vocab: usize,
    chunk: Option<usize>,
) -> Measurement {
    let mut states: Vec<_> = (0..lanes).map(|_| model.new_state()).collect();
    for (i, state) in states.iter_mut().enumerate() {
        let context = random_ids(plan.seed, 1000 + 16 * i as u64, plan.decode_context, vocab);
        if !context.is_empty() {
            forward_chunked(model, state, &context, LogitsWanted::Last, chunk);
        }
    }
    let steps: Vec<Vec<u32>> = (0..lanes)
        .map(|i| {
            let n = plan.warmup_steps + plan.decode_tokens;
            random_ids(plan.seed, 1001 + 16 * i as u64, n, vocab)
        })
        .collect();
    let ids_at = |k: usize| -> Vec<u32> { steps.iter().map(|s| s[k]).collect() };
    let mut refs: Vec<&mut arch::ModelState<B>> = states.iter_mut().collect();
    for k in 0..plan.warmup_steps {
        model.forward_lanes(&mut refs, &ids_at(k));
    }
    let at = model.position(refs[0]);
    let t = Instant::now();
    let mut last = Vec::new();
    for k in plan.warmup_steps..plan.warmup_steps + plan.decode_tokens {
        match readback {
            Readback::Logits => last = model.forward_lanes(&mut refs, &ids_at(k)),
            Readback::Greedy => {
                model.forward_lanes_greedy(&mut refs, &ids_at(k));
            }
        }
    }
    let s = t.elapsed().as_secs_f64();
    if readback == Readback::Greedy {
        // One more step, untimed, for logits to check.
        last = model.forward_lanes(&mut refs, &ids_at(0));
    }
    for l in &last {
        check_finite(l, "decode");
    }
    Measurement {
        kind: Kind::Decode,
        lanes,
        tokens: lanes * plan.decode_tokens,
        context: at,
        seconds: Some(s),
        note: None,
        variant: None,
        readback: Some(readback),
    }
}

/// Random weights that overflow would make the timing meaningless; say so loudly.
fn check_finite(logits: &[f32], what: &str) {
    if logits.iter().any(|x| !x.is_finite()) {
        tracing::warn!(
            "the {what} logits are not all finite: the weights drive activations out of range"
        );
    }
}

/// The run's identity, stamped on every record.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub model: String,
    pub source: String,
    pub seed: u64,
    pub weights: String,
    pub activations: String,
    pub precision: String,
    pub device: String,
    pub gpu: Option<String>,
    pub rev: String,
    pub date: String,
    pub command: String,
    /// Copy bandwidth (bytes read plus written per second), measured on the GPU.
    pub copy_bytes_per_s: Option<f64>,
    /// Weight bytes one decode step reads.
    pub step_bytes: f64,
    pub load_s: f64,
    /// Where the GPU engine's routes came from (`None` on the cpu).
    pub routes: Option<String>,
}

/// Sets a measurement against the floor.
pub fn record(info: &RunInfo, m: &Measurement) -> ModelBenchRecord {
    let tps = m.tokens_per_s();
    let decode = m.kind == Kind::Decode;
    // A step decodes one token per lane.
    let steps = (m.tokens / m.lanes.max(1)).max(1);
    let step_us = m.seconds.filter(|_| decode).map(|s| s * 1e6 / steps as f64);
    let floor_us = match (decode && m.seconds.is_some(), info.copy_bytes_per_s) {
        (true, Some(bw)) => Some(info.step_bytes / bw * 1e6),
        _ => None,
    };
    ModelBenchRecord {
        what: "model_bench".into(),
        model: info.model.clone(),
        source: info.source.clone(),
        seed: info.seed,
        weights: info.weights.clone(),
        activations: info.activations.clone(),
        precision: match m.variant.as_deref() {
            Some(v) if !v.is_empty() && !info.precision.is_empty() => {
                format!("{} {v}", info.precision)
            }
            Some(v) if !v.is_empty() => v.to_string(),
            _ => info.precision.clone(),
        },
        device: info.device.clone(),
        gpu: info.gpu.clone(),
        rev: info.rev.clone(),
        date: info.date.clone(),
        kind: m.kind,
        lanes: m.lanes,
        tokens: m.tokens,
        context: m.context,
        supported: m.seconds.is_some(),
        note: m.note.clone(),
        seconds: m.seconds,
        tokens_per_s: tps,
        step_us,
        readback: m.readback,
        step_bytes: decode.then_some(info.step_bytes),
        copy_gb_per_s: info.copy_bytes_per_s.map(|b| b * 1e-9),
        floor_us,
        fraction: floor_us.zip(step_us).map(|(f, s)| f / s),
        load_s: info.load_s,
        // A `--profile-ab` row without the profile ran on the heuristics.
        routes: match m.variant.as_deref() {
            Some("--no-profile") => info
                .routes
                .as_ref()
                .map(|_| crate::tune::RouteTable::heuristics().describe()),
            _ => info.routes.clone(),
        },
        command: info.command.clone(),
    }
}

/// The table printed on stdout.
pub fn format_table(records: &[ModelBenchRecord]) -> String {
    let mut out = format!(
        "{:<13}  {:>5}  {:>6}  {:>7}  {:>10}  {:>10}  {:>10}  {:>8}\n",
        "what", "lanes", "tokens", "context", "tokens/s", "step_us", "floor_us", "of floor"
    );
    let opt = |v: Option<f64>, digits: usize| {
        v.map(|x| format!("{x:.digits$}"))
            .unwrap_or_else(|| "-".into())
    };
    // An A/B run's rows differ in precision: each row then says which it ran with.
    let mixed = records.iter().any(|r| r.precision != records[0].precision);
    for r in records {
        let what = match (r.kind, r.readback) {
            (Kind::Prompt, _) => "prompt",
            (Kind::Decode, Some(Readback::Logits)) => "decode logits",
            (Kind::Decode, _) => "decode",
        };
        if !r.supported {
            out.push_str(&format!(
                "{what:<13}  {:>5}  {:>6}  {:>7}  {}\n",
                r.lanes,
                r.tokens,
                r.context,
                r.note.as_deref().unwrap_or("not supported")
            ));
            continue;
        }
        out.push_str(&format!(
            "{what:<13}  {:>5}  {:>6}  {:>7}  {:>10}  {:>10}  {:>10}  {:>8}\n",
            r.lanes,
            r.tokens,
            r.context,
            opt(r.tokens_per_s, 1),
            opt(r.step_us, 1),
            opt(r.floor_us, 1),
            r.fraction
                .map(|f| format!("{:.0}%", f * 100.0))
                .unwrap_or_else(|| "-".into()),
        ));
        if mixed {
            out.pop();
            out.push_str(&format!("  {}\n", r.precision));
        }
    }
    out
}

/// `$NINFER_REV` when set (GPU jobs stamp the revision the binary was staged from), else
/// `git describe --always --dirty` of the source tree this binary was built from, or
/// "unknown" (as `ninfer-perplexity` stamps its records).
pub fn git_rev() -> String {
    if let Some(rev) = std::env::var("NINFER_REV").ok().filter(|r| !r.is_empty()) {
        return rev;
    }
    std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Now in UTC, ISO 8601 to the second.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    utc_from_unix(secs)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian).
pub fn utc_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::precision::VocabQuant;
    use crate::model::synthetic::synthetic_config;

    fn fmt(name: &str) -> &'static Format {
        crate::formats::format(name).unwrap()
    }

    #[test]
    fn dates_are_utc_iso() {
        assert_eq!(utc_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_from_unix(1_795_990_000), "2026-11-29T22:06:40Z");
    }

    #[test]
    fn random_ids_are_seeded_and_in_range() {
        let a = random_ids(3, 1, 100, 49152);
        assert_eq!(a, random_ids(3, 1, 100, 49152));
        assert_ne!(a, random_ids(3, 2, 100, 49152));
        assert!(a.iter().all(|&i| i < 49152));
        assert!(a.iter().collect::<std::collections::HashSet<_>>().len() > 90);
    }

    #[test]
    fn the_27b_q4_step_reads_its_weights_but_the_embedding_table() {
        // DESIGN.md section 8 puts the whole Q4 27B at about 14.5 GB; a step reads all but
        // 248319 embedding rows: 25.6 B parameters at 4.25 bits, 13.6 GB.
        let c = synthetic_config("qwen3.6-27b").unwrap();
        let w = weight_bytes(&c, fmt("q4_g64"), &PrecisionOptions::default());
        assert!((13.5e9..13.7e9).contains(&w.step), "{}", w.step);
        assert!((14.2e9..14.5e9).contains(&w.held), "{}", w.held);
        assert_eq!(w.f32_fallbacks, 0);
        // Dense: the step reads everything but all embedding rows but one.
        let row = 5120.0 * (0.5 + 2.0 / 64.0);
        let table = 248_320.0 * row;
        assert!((w.held - table + row - w.step).abs() < 1.0);
        // f32: 4 bytes a parameter.
        let f = weight_bytes(&c, fmt("f32"), &PrecisionOptions::default());
        assert!((f.held / 4.0 - 26.9e9).abs() < 0.1e9, "{}", f.held);
    }

    #[test]
    fn a_moe_step_reads_only_the_chosen_experts() {
        let c = synthetic_config("qwen3.6-35b-a3b").unwrap();
        let w = weight_bytes(&c, fmt("f32"), &PrecisionOptions::default());
        // About 3.5 B active parameters less the embedding table (one row read).
        let params = w.step / 4.0;
        assert!((2.8e9..3.1e9).contains(&params), "{params}");
        assert!((w.held / 4.0 - 34.7e9).abs() < 0.2e9, "{}", w.held);
    }

    #[test]
    fn tied_heads_and_vocabulary_flags() {
        let c = synthetic_config("smollm2-135m").unwrap();
        let f32f = fmt("f32");
        let plain = weight_bytes(&c, f32f, &PrecisionOptions::default());
        let table = (49152 * 576 * 4) as f64;
        // The tied table is held once and read whole by the head.
        assert!((plain.held / 4.0 - 134.5e6).abs() < 0.2e6, "{}", plain.held);
        assert!((plain.step - (plain.held - table + 576.0 * 4.0 + table)).abs() < 1.0);
        // A q4 head alone: a second table, read instead of the f32 one.
        let opts = PrecisionOptions {
            lm_head: Some(VocabQuant::Q4),
            ..Default::default()
        };
        let q4 = weight_bytes(&c, f32f, &opts);
        let q4_table = 49152.0 * 576.0 * (0.5 + 2.0 / 64.0);
        assert!((q4.held - plain.held - q4_table).abs() < 16.0);
        assert!((plain.step - q4.step - (table - q4_table)).abs() < 16.0);
    }

    #[test]
    fn a_width_the_format_cannot_take_stays_f32() {
        let mut c = synthetic_config("smollm2-135m").unwrap();
        c.intermediate_size = 1504; // not a multiple of 64
        let w = weight_bytes(&c, fmt("q4_g64"), &PrecisionOptions::default());
        assert_eq!(w.f32_fallbacks, 30, "the down projections");
    }

    #[test]
    fn records_set_decode_against_the_floor() {
        let info = RunInfo {
            model: "m".into(),
            source: "synthetic".into(),
            seed: 0,
            weights: "q4_g64".into(),
            activations: "exact".into(),
            precision: String::new(),
            device: "cuda".into(),
            gpu: Some("GPU".into()),
            rev: "r".into(),
            date: "d".into(),
            command: "c".into(),
            copy_bytes_per_s: Some(4e12),
            step_bytes: 4e9,
            load_s: 1.0,
            routes: Some("built-in heuristics".into()),
        };
        let m = Measurement {
            kind: Kind::Decode,
            lanes: 1,
            tokens: 10,
            context: 20,
            seconds: Some(0.02),
            note: None,
            variant: None,
            readback: Some(Readback::Greedy),
        };
        let r = record(&info, &m);
        assert_eq!(r.floor_us, Some(1000.0));
        assert_eq!(r.readback, Some(Readback::Greedy));
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.contains("\"readback\":\"greedy\""), "{line}");
        assert!((r.step_us.unwrap() - 2000.0).abs() < 1e-9);
        assert!((r.fraction.unwrap() - 0.5).abs() < 1e-12);
        assert!((r.tokens_per_s.unwrap() - 500.0).abs() < 1e-9);
        let p = record(
            &info,
            &Measurement {
                kind: Kind::Prompt,
                tokens: 512,
                seconds: Some(0.5),
                ..m.clone()
            },
        );
        assert_eq!((p.floor_us, p.fraction, p.step_us), (None, None, None));
        let cpu = record(
            &RunInfo {
                copy_bytes_per_s: None,
                ..info.clone()
            },
            &m,
        );
        assert_eq!((cpu.floor_us, cpu.fraction), (None, None));
        let table = format_table(&[r.clone(), p.clone()]);
        assert!(table.contains("50%"), "{table}");
        assert!(!table.contains("--prefill-cublas"), "{table}");
        // An A/B pass adds its flag to the run's, and the table names each row's.
        let ab = record(
            &RunInfo {
                precision: "--embedding-q4".into(),
                ..info.clone()
            },
            &Measurement {
                kind: Kind::Prompt,
                tokens: 512,
                seconds: Some(0.25),
                variant: Some("--prefill-cublas".into()),
                ..m.clone()
            },
        );
        assert_eq!(ab.precision, "--embedding-q4 --prefill-cublas");
        let table = format_table(&[p, ab]);
        assert!(
            table
                .lines()
                .nth(2)
                .unwrap()
                .ends_with("  --embedding-q4 --prefill-cublas"),
            "{table}"
        );
    }
}
