//! `ninfer-perplexity`: the perplexity of a model on a text file (by default the WikiText-2
//! test split), with its standard error, speed, and an optional JSON record.
//!
//! The text is tokenized whole, the way `ninfer run` tokenizes a raw prompt (the tokenizer's
//! post-processor adds BOS at the start when the model wants one). When it does, the first
//! token of every window is also replaced by BOS, as llama.cpp's perplexity tool does for its
//! chunks, so every window starts the way a fresh sequence does.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};

use super::precision::PrecisionArgs;
use super::run::{choose_backend, Chosen, Device, GpuArgs};
use super::CliError;
use crate::engine::backend::Backend;
use crate::model::arch;
use crate::model::default_model::sha256_file;
use crate::model::precision::PrecisionOptions;
use crate::model::ModelFiles;
use crate::perplexity::{plan_windows, score_chunked, Method, Progress, Totals, Window};

/// Tokens scored by `--quick` (keep in step with its help text).
pub const QUICK_TOKENS: usize = 8192;

/// The default corpus, relative to the project root (see the corpus README in shared/).
pub const DEFAULT_CORPUS: &str = "../shared/data/wikitext-2-raw/wiki.test.raw";

/// SHA-256 of the WikiText-2 raw test split as the project stores it.
pub const WIKITEXT2_TEST_SHA256: &str =
    "4f3e427e4aff23acff917a8a51aeae21bf12832256e26914c8fc250dcef4103c";

#[derive(Debug, clap::Args)]
pub struct PerplexityArgs {
    /// The text file to score (default: the WikiText-2 raw test split,
    /// ../shared/data/wikitext-2-raw/wiki.test.raw from the current folder or the project root).
    pub file: Option<PathBuf>,
    /// A GGUF file or a Hugging Face model directory (default: SmolLM2-135M-Instruct,
    /// fetched on first use).
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// Tokens per window (the context the model sees).
    #[arg(long, default_value_t = 4096)]
    pub ctx: usize,
    /// Tokens between window starts for --method stride; each window scores only the tokens
    /// the previous one did not (default: half of --ctx).
    #[arg(long)]
    pub stride: Option<usize>,
    /// stride: overlapping windows, every token after the first scored once; chunks:
    /// llama.cpp's method, non-overlapping windows of --ctx tokens scoring their second half.
    #[arg(long, value_enum, default_value_t = Method::Stride)]
    pub method: Method,
    /// Score only the first 8,192 tokens of the file (a fixed slice, the same every run).
    #[arg(long)]
    pub quick: bool,
    /// Use only the first N tokens of the file (with --quick, the smaller of the two).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<usize>,
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Also write the result as a JSON record to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub precision: PrecisionArgs,
}

/// Everything a backend needs to score, decided before one is chosen.
struct Job {
    files: ModelFiles,
    ids: Vec<u32>,
    windows: Vec<Window>,
    bos: Option<u32>,
    precision: PrecisionOptions,
}

pub fn run(args: &PerplexityArgs) -> Result<(), CliError> {
    let precision = args.precision.options()?;
    let stride = match (args.method, args.stride) {
        (Method::Chunks, Some(_)) => {
            return Err(CliError::usage(
                "--stride does not apply to --method chunks (chunks never overlap); drop it",
            ))
        }
        (Method::Chunks, None) => args.ctx,
        (Method::Stride, Some(s)) => s,
        (Method::Stride, None) => (args.ctx / 2).max(1),
    };
    // The same checks the planner makes, before anything slow is loaded.
    plan_windows(args.ctx.max(2), args.ctx, stride, args.method)
        .map_err(|e| CliError::usage(e.to_string()))?;
    if let Some(n) = args.max_tokens.filter(|&n| n < 2) {
        return Err(CliError::usage(format!(
            "--max-tokens must be at least 2 (one token to predict from, one to score); it is {n}"
        )));
    }
    if let Some(parent) = args.json.as_deref().and_then(Path::parent) {
        if !parent.as_os_str().is_empty() && !parent.is_dir() {
            return Err(CliError::usage(format!(
                "cannot write the JSON record: the folder {} does not exist",
                parent.display()
            )));
        }
    }

    let path = match &args.file {
        Some(p) => p.clone(),
        None => default_corpus()?,
    };
    let text = read_text(&path)?;
    let sha = sha256_file(&path).map_err(|e| CliError::usage(e.to_string()))?;
    if args.file.is_none() && sha != WIKITEXT2_TEST_SHA256 {
        eprintln!(
            "warning: {} is not the WikiText-2 test split the project stores (SHA-256 {sha}); figures will not compare",
            path.display()
        );
    }

    let files = crate::model::load_model(args.model.as_deref())
        .map_err(|e| CliError::usage(e.to_string()))?;
    arch::check_options(&files.config, &precision)?;
    // The backend is chosen before anything is printed, so a refusal is the only output.
    let chosen = choose_backend(args.device, &args.gpu, &precision)?;
    let mut ids = files
        .tokenizer
        .encode(&text, true)
        .map_err(|e| CliError::failed(e.to_string()))?;
    let bos = if files.tokenizer.adds_bos() {
        files.tokenizer.bos_id()
    } else {
        None
    };
    let in_file = ids.len();
    let limit = [args.quick.then_some(QUICK_TOKENS), args.max_tokens]
        .into_iter()
        .flatten()
        .min();
    if let Some(n) = limit {
        ids.truncate(n);
    }
    let windows = plan_windows(ids.len(), args.ctx, stride, args.method)
        .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    let longest = windows.iter().map(|w| w.len).max().unwrap_or(0);
    if let Some(max) = files
        .config
        .max_position_embeddings
        .filter(|&m| longest > m)
    {
        eprintln!(
            "warning: windows of {longest} tokens are longer than the {max} positions the model was trained for"
        );
    }
    let scored: usize = windows.iter().map(Window::scored).sum();
    eprintln!(
        "{}: {} tokens{}; scoring {scored} in {} windows (method {}, ctx {}, stride {stride}{}) with {}",
        path.display(),
        ids.len(),
        if ids.len() < in_file {
            format!(" (first of {in_file})")
        } else {
            String::new()
        },
        windows.len(),
        method_name(args.method),
        args.ctx,
        if bos.is_some() { ", BOS first" } else { "" },
        files.location.path().display(),
    );
    let job = Job {
        files,
        ids,
        windows,
        bos,
        precision,
    };

    // Each arm hands its backend to `run_on`.
    let (totals, device) = match chosen {
        Chosen::Cpu(b) => run_on(b, &job)?,
        Chosen::Cuda(b) => run_on(b, &job)?,
    };

    let se = totals.se();
    let se_text = if se.is_finite() {
        format!("{se:.5}")
    } else {
        "n/a".into()
    };
    let method_note = match args.method {
        Method::Stride => String::new(),
        Method::Chunks => ", llama.cpp chunks".into(),
    };
    println!(
        "PPL = {:.4} +/- {se_text} over {} tokens ({} windows, ctx {}, stride {stride}{method_note}), {:.1} tokens/s, device {device}",
        totals.ppl(),
        totals.scored(),
        totals.windows,
        args.ctx,
        totals.tokens_per_s(),
    );
    if let Some(out) = &args.json {
        let record = serde_json::json!({
            "model": job.files.location.path().display().to_string(),
            "file": path.display().to_string(),
            "file_sha256": sha,
            "method": args.method,
            "ctx": args.ctx,
            "stride": stride,
            "bos": job.bos.is_some(),
            "tokens_in_file": in_file,
            "tokens_used": job.ids.len(),
            "windows": totals.windows,
            "tokens_scored": totals.scored(),
            "tokens_evaluated": totals.evaluated,
            "mean_nll": totals.stats.mean_nll(),
            "ppl": totals.ppl(),
            "se": if se.is_finite() { Some(se) } else { None },
            "seconds": totals.elapsed_s,
            "tokens_per_s": totals.tokens_per_s(),
            "device": device,
            // The GPU engine's weight format and linear inputs (the cpu backend computes
            // with the file's values, exact).
            "weights": if device == "cuda" { args.gpu.weights.as_str() } else { "f32" },
            "activations": if device == "cuda" {
                format!("{:?}", args.gpu.activations).to_lowercase()
            } else {
                "exact".into()
            },
            "precision": job.precision.flags(),
            "rev": crate::bench::model::git_rev(),
        });
        let body = serde_json::to_string_pretty(&record).expect("a JSON value serializes");
        std::fs::write(out, body + "\n").map_err(|e| {
            CliError::failed(format!(
                "cannot write the JSON record to {}: {e}",
                out.display()
            ))
        })?;
    }
    Ok(())
}

/// Loads the model on `backend` and scores the job's windows, showing progress on stderr.
/// Returns the totals and the backend's name.
fn run_on<B: Backend>(backend: B, job: &Job) -> Result<(Totals, &'static str), CliError> {
    let model = arch::load_with(&backend, &job.files, &job.precision)?;
    let scored_total: usize = job.windows.iter().map(Window::scored).sum();
    let on_terminal = std::io::stderr().is_terminal();
    let bar = if on_terminal {
        let bar = ProgressBar::new(scored_total as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "[{bar:30}] {pos}/{len} tokens, {msg} [{elapsed_precise} < {eta_precise}]",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_message("PPL -");
        bar
    } else {
        ProgressBar::hidden()
    };
    let report = |p: &Progress| {
        let line = format!("PPL {:.4}, {:.1} tokens/s", p.ppl(), p.tokens_per_s());
        if on_terminal {
            bar.set_position(p.scored as u64);
            bar.set_message(line);
        } else {
            eprintln!(
                "[window {}/{}] {}/{} tokens, {line}",
                p.windows_done, p.windows_total, p.scored, p.scored_total
            );
        }
    };
    let chunk = job.precision.prefill_chunk;
    let totals = score_chunked(&model, &job.ids, &job.windows, job.bos, chunk, report)
        .map_err(|e| CliError::failed(e.to_string()))?;
    bar.finish_and_clear();
    Ok((totals, backend.name()))
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Stride => "stride",
        Method::Chunks => "chunks",
    }
}

/// The default corpus: relative to the current folder, else to this crate's source tree.
fn default_corpus() -> Result<PathBuf, CliError> {
    let here = PathBuf::from(DEFAULT_CORPUS);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_CORPUS);
    if here.is_file() {
        return Ok(here);
    }
    if repo.is_file() {
        return Ok(repo);
    }
    Err(CliError::usage(format!(
        "the default corpus was found neither at {} nor at {}; pass the path of a text file",
        here.display(),
        repo.display()
    )))
}

fn read_text(path: &Path) -> Result<String, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    String::from_utf8(bytes)
        .map_err(|_| CliError::usage(format!("{} is not UTF-8 text", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: PerplexityArgs,
    }

    #[test]
    fn help_states_the_quick_slice() {
        let help = Cli::command().render_long_help().to_string();
        let n = QUICK_TOKENS.to_string();
        let with_comma = format!("{},{}", &n[..n.len() - 3], &n[n.len() - 3..]);
        assert!(help.contains(&with_comma), "{help}");
    }

    #[test]
    fn precision_flags_are_taken() {
        let c = Cli::try_parse_from(["x", "--lm-head-q4", "--prefill-chunk", "8"]).unwrap();
        let o = c.args.precision.options().unwrap();
        assert_eq!(o.flags(), "--lm-head-q4 --prefill-chunk 8");
        let c = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(
            c.args.precision.options().unwrap(),
            PrecisionOptions::default()
        );
    }
}
