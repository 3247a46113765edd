//! `ninfer bench kernels`: every op family's benchmark against ceilings measured in the
//! same run, with peer timings merged from a file a peer script wrote in the same job.
//! `ninfer bench model`: a whole model's prompt and decode speed against the decode floor
//! ([`crate::bench::model`]).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};

use super::precision::PrecisionArgs;
use super::run::{choose_backend, Chosen, Device, GpuArgs};
use super::CliError;
use crate::bench::model::{self as model_bench, Measurement, ModelBenchRecord, Plan, RunInfo};
use crate::bench::{merge_peers, BenchCtx, BenchRecord, PeerTiming};
use crate::engine::Backend;
use crate::gpu::Gpu;
use crate::model::precision::PrecisionOptions;
use crate::model::synthetic::SHAPES_HELP;
use crate::model::{ModelFiles, ModelLocation, Weights};
use crate::tune::RouteTable;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Time the kernels at real shapes (linear, embedding, attention): median, GB/s,
    /// TFLOP/s, fraction of the ceiling.
    Kernels(KernelBenchArgs),
    /// Time a whole model: prompt tokens/s, decode tokens/s, and the decode step against its
    /// floor (the weight bytes one step reads over the copy bandwidth measured in the run).
    Model(ModelBenchArgs),
}

/// The most lanes a decode may ask for.
pub const MAX_LANES: usize = 8;

const PROFILE_AB_ON_CPU: &str =
    "--profile-ab compares the GPU engine's tuned routes with its heuristics, so it needs the GPU engine; drop it to run on the cpu, or use --device cuda on a machine with an NVIDIA GPU";
const CONV_EPILOGUE_AB_ON_CPU: &str =
    "--conv-epilogue-ab compares two forms of the GPU engine's GDN step, so it needs the GPU engine; drop it to run on the cpu, or use --device cuda on a machine with an NVIDIA GPU";
const PROFILE_AB_NO_PROFILE: &str =
    "--profile-ab needs a tuning profile for this GPU and build, and none applies (the notice above says why; `ninfer tune check` tells more, `ninfer tune` makes one, --profile PATH names one)";

#[derive(Debug, clap::Args)]
pub struct ModelBenchArgs {
    /// A GGUF file or a Hugging Face model directory (default, without --synthetic:
    /// SmolLM2-135M-Instruct, fetched on first use).
    #[arg(long, value_name = "PATH", conflicts_with = "synthetic")]
    pub model: Option<PathBuf>,
    /// qwen3.6-27b | qwen3.6-35b-a3b | smollm2-135m | qwen3.6-mini: random weights at a
    /// real model's shapes, no file needed (shapes: --help).
    #[arg(long, value_name = "NAME", long_help = SHAPES_HELP)]
    pub synthetic: Option<String>,
    /// Seed of the synthetic weights and of the random token ids.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Prompt lengths to time, comma-separated.
    #[arg(
        long,
        value_name = "N,...",
        value_delimiter = ',',
        default_value = "512,4096"
    )]
    pub prompt: Vec<usize>,
    /// Decode lanes to time, comma-separated (at most 8; more than 1 runs the batched decode
    /// step, one token per lane per step, tokens/s counting every lane's).
    #[arg(
        long,
        value_name = "N,...",
        value_delimiter = ',',
        default_value = "1,8"
    )]
    pub lanes: Vec<usize>,
    /// Timed decode steps.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub decode_tokens: usize,
    /// Tokens in the sequence before the decode warm-up steps.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub decode_context: usize,
    /// Untimed runs of each prompt before the timed ones (the first compiles kernels).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: usize,
    /// Untimed decode steps before the timed ones.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub warmup_steps: usize,
    /// What each timed decode step reads back, comma-separated (each decode row is timed
    /// once per entry, on fresh sequences): `greedy`, the next token of every lane (as
    /// greedy `ninfer run` decodes; on the GPU the argmax is taken on the device and one id
    /// a lane comes back), or `logits`, every lane's logits (as sampling at a temperature
    /// needs).
    #[arg(
        long,
        value_enum,
        value_name = "WHAT,...",
        value_delimiter = ',',
        default_value = "greedy"
    )]
    pub readback: Vec<model_bench::Readback>,
    /// Timed runs of each prompt; the median is reported.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: usize,
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
    #[command(flatten)]
    pub gpu: GpuArgs,
    #[command(flatten)]
    pub precision: PrecisionArgs,
    /// GPU only: time every prompt twice over one load, on the default route and then with
    /// --prefill-cublas (each row says which), instead of loading a large model twice.
    #[arg(long, conflicts_with = "prefill_cublas")]
    pub prefill_cublas_ab: bool,
    /// GPU only: time every decode row four times over one load, alternating the tuning
    /// profile's routes and the built-in heuristics (profile, --no-profile, profile,
    /// --no-profile; each row says which), so that drift shows beside the difference.
    #[arg(long, conflicts_with = "no_profile")]
    pub profile_ab: bool,
    /// GPU only: time every decode row four times over one load, alternating the lanes' GDN
    /// step with the causal conv in its own launch and in the in-projection's epilogue
    /// (NINFER_GDN_CONV_EPILOGUE=0, =1, =0, =1; each row says which). The epilogue applies
    /// at 5-8 lanes where the step takes the gates-in tile (a profile naming it, or
    /// NINFER_GDN_GATES_IN=1); elsewhere both passes run the same step.
    #[arg(long, conflicts_with = "profile_ab")]
    pub conv_epilogue_ab: bool,
    /// Write one JSON record per measurement (one per line) to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// The revision to stamp on each record (default: $NINFER_REV, else git describe).
    #[arg(long)]
    pub rev: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct KernelBenchArgs {
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Only benchmarks whose `what`, route or "what shape" contains this text (`|` between
    /// alternatives; linear_exact also runs only the shapes and T named so).
    #[arg(long)]
    pub filter: Option<String>,
    /// Write one JSON record per line to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<std::path::PathBuf>,
    /// Peer timings (JSON lines: what, shape, peer, median_us) to set beside ours.
    #[arg(long, value_name = "PATH")]
    pub peer_json: Option<std::path::PathBuf>,
    /// The revision to stamp on each record (default: $NINFER_REV, else git describe).
    #[arg(long)]
    pub rev: Option<String>,
}

pub fn run(cmd: &BenchCommand) -> Result<(), CliError> {
    match cmd {
        BenchCommand::Kernels(args) => kernels(args),
        BenchCommand::Model(args) => model(args),
    }
}

fn read_peers(path: &std::path::Path) -> Result<Vec<PeerTiming>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                CliError::usage(format!(
                    "{} line {}: not a peer timing ({e})",
                    path.display(),
                    i + 1
                ))
            })
        })
        .collect()
}

fn kernels(args: &KernelBenchArgs) -> Result<(), CliError> {
    let peers = match &args.peer_json {
        Some(p) => read_peers(p)?,
        None => Vec::new(),
    };
    let gpu = Gpu::open(args.device)?;
    eprintln!("measuring the ceilings (device copy, cuBLAS bf16 GEMM 8192^3)...");
    let copy = crate::bench::measure_copy_bandwidth(&gpu)?;
    let gemm = crate::bench::measure_gemm_rate(&gpu)?;
    println!(
        "{}: copy {:.0} GB/s, bf16 GEMM {:.0} TFLOP/s",
        gpu.props().name,
        copy * 1e-9,
        gemm * 1e-12
    );
    let ctx = BenchCtx {
        gpu: &gpu,
        copy_bytes_per_s: copy,
        gemm_flops_per_s: Some(gemm),
        rev: args.rev.clone().unwrap_or_else(model_bench::git_rev),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let mut records: Vec<BenchRecord> = Vec::new();
    records.extend(crate::ops::linear::bench(&ctx, args.filter.as_deref())?);
    records.extend(crate::ops::linear_sgemm::bench(
        &ctx,
        args.filter.as_deref(),
    )?);
    records.extend(crate::ops::linear_cublas::bench(
        &ctx,
        args.filter.as_deref(),
    )?);
    records.extend(crate::ops::attention::bench(&ctx, args.filter.as_deref())?);
    if let Some(f) = &args.filter {
        // `|` separates alternatives; one may also name the shape ("q4_g64 x20 T=1 N=17408").
        records.retain(|r| {
            f.split('|').any(|p| {
                r.what.contains(p)
                    || r.route.contains(p)
                    || format!("{} {}", r.what, r.shape).contains(p)
            })
        });
    }
    merge_peers(&mut records, &peers);
    if let Some(path) = &args.json {
        let lines: String = records
            .iter()
            .map(|r| serde_json::to_string(r).expect("record serialises") + "\n")
            .collect();
        std::fs::write(path, lines)
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    }
    print!("{}", format_table(&records));
    Ok(())
}

/// The short table printed last.
pub fn format_table(records: &[BenchRecord]) -> String {
    let w = records
        .iter()
        .map(|r| r.what.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let s = records
        .iter()
        .map(|r| r.shape.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = format!(
        "{:w$}  {:s$}  {:>10}  {:>8}  {:>8}  {:>6}  {:>10}  {:>8}\n",
        "what", "shape", "median_us", "GB/s", "TFLOP/s", "frac", "peer_us", "speedup"
    );
    for r in records {
        let t = r.median_us * 1e-6;
        out.push_str(&format!(
            "{:w$}  {:s$}  {:>10.2}  {:>8.0}  {:>8.1}  {:>5.0}%  {:>10}  {:>8}\n",
            r.what,
            r.shape,
            r.median_us,
            r.bytes / t * 1e-9,
            r.flops / t * 1e-12,
            r.fraction * 100.0,
            r.peer_median_us
                .map(|p| format!("{p:.2}"))
                .unwrap_or_else(|| "-".into()),
            r.speedup_vs_peer
                .map(|p| format!("{p:.2}x"))
                .unwrap_or_else(|| "-".into()),
        ));
    }
    out
}

impl ModelBenchArgs {
    /// The measurements asked for; a usage error for values outside their range.
    pub fn plan(&self) -> Result<Plan, CliError> {
        if self.prompt.contains(&0) {
            return Err(CliError::usage(
                "--prompt: a prompt holds at least one token",
            ));
        }
        if self.lanes.is_empty() || self.lanes.contains(&0) {
            return Err(CliError::usage("--lanes: a decode runs at least one lane"));
        }
        if let Some(n) = self.lanes.iter().find(|&&n| n > MAX_LANES) {
            return Err(CliError::usage(format!(
                "--lanes {n}: the engine decodes at most {MAX_LANES} lanes together"
            )));
        }
        if self.decode_tokens == 0 {
            return Err(CliError::usage(
                "--decode-tokens must be at least 1 (the steps that are timed)",
            ));
        }
        if self.repeat == 0 {
            return Err(CliError::usage("--repeat must be at least 1"));
        }
        Ok(Plan {
            prompts: self.prompt.clone(),
            lanes: self.lanes.clone(),
            decode_tokens: self.decode_tokens,
            decode_context: self.decode_context,
            warmup: self.warmup,
            warmup_steps: self.warmup_steps,
            repeat: self.repeat,
            seed: self.seed,
            readbacks: self.readback.clone(),
        })
    }
}

/// Available host memory in bytes (Linux `MemAvailable`), where it can be read.
fn host_memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn gb(bytes: f64) -> String {
    format!("{:.1} GB", bytes * 1e-9)
}

fn model(args: &ModelBenchArgs) -> Result<(), CliError> {
    let plan = args.plan()?;
    let precision = args.precision.options()?;
    let gpu_opts = args.gpu.options()?;
    let location = match &args.synthetic {
        Some(name) => ModelLocation::synthetic(name, args.seed),
        None => crate::model::resolve_model(args.model.as_deref())
            .map_err(|e| CliError::usage(e.to_string()))?,
    };
    let mut files =
        crate::model::open_model(&location).map_err(|e| CliError::usage(e.to_string()))?;
    crate::model::arch::check_options(&files.config, &precision)?;
    let limit = files.config.max_position_embeddings;
    let longest = plan
        .prompts
        .iter()
        .copied()
        .chain([plan.decode_context + plan.warmup_steps + plan.decode_tokens])
        .max()
        .unwrap_or(0);
    if let Some(max) = limit.filter(|&m| longest > m) {
        return Err(CliError::usage(format!(
            "{longest} tokens is more than the model's context of {max} tokens; ask for shorter prompts or fewer decode steps"
        )));
    }
    // An A/B run opens the backend with the cuBLAS route and switches it per pass.
    let opened_with =
        precision.with_prefill_cublas(precision.prefill_cublas || args.prefill_cublas_ab);
    let chosen = choose_backend(args.device, &args.gpu, &opened_with)?;
    // What the device holds and what a step reads, in the format it holds linear layers in.
    let held_format = match &chosen {
        Chosen::Cpu(_) => crate::formats::format("f32").expect("registered"),
        Chosen::Cuda(_) => gpu_opts.weights,
    };
    let bytes = model_bench::weight_bytes(&files.config, held_format, &precision);
    if bytes.linears > 0 && bytes.f32_fallbacks == bytes.linears {
        return Err(CliError::usage(format!(
            "--weights {}: no linear layer of this model has a width the GPU engine can hold in {}; choose another format",
            held_format.name, held_format.name
        )));
    }
    if bytes.f32_fallbacks > 0 {
        eprintln!(
            "note: {} of the model's linear layer shapes cannot be held as {} (their width is not a multiple of its group); they stay f32",
            bytes.f32_fallbacks, held_format.name
        );
    }
    match &chosen {
        Chosen::Cpu(_) => {
            if args.gpu.weights != "f32" {
                eprintln!(
                    "note: --weights {} is ignored on the cpu, which holds every weight in f32",
                    args.gpu.weights
                );
            }
            if let Some(avail) = host_memory_available() {
                if bytes.held > 0.9 * avail as f64 {
                    return Err(CliError::usage(format!(
                        "the cpu backend holds the weights in f32: {} needs {} of memory and this machine has {} available; use --device cuda",
                        location.path().display(),
                        gb(bytes.held),
                        gb(avail as f64)
                    )));
                }
            }
        }
        Chosen::Cuda(b) => {
            let total = b.gpu().props().total_memory as f64;
            if bytes.held > 0.92 * total {
                return Err(CliError::usage(format!(
                    "{} in {} takes {} and {} has {}; choose a narrower --weights (q4_g64 takes about an eighth of f32)",
                    location.path().display(),
                    held_format.name,
                    gb(bytes.held),
                    b.gpu().props().name,
                    gb(total)
                )));
            }
        }
    }
    let synthetic = matches!(files.weights, Weights::Synthetic(_));
    let (gpu_name, copy) = match &chosen {
        Chosen::Cpu(_) => (None, None),
        Chosen::Cuda(b) => {
            eprintln!("routes: {}", b.routes().describe());
            eprintln!("measuring the device copy bandwidth...");
            let copy = crate::bench::measure_copy_bandwidth(b.gpu())?;
            (Some(b.gpu().props().name.clone()), Some(copy))
        }
    };
    let info = RunInfo {
        model: match &args.synthetic {
            Some(name) => name.clone(),
            None => location.path().display().to_string(),
        },
        source: if synthetic { "synthetic" } else { "file" }.into(),
        seed: args.seed,
        weights: held_format.name.clone(),
        activations: match &chosen {
            Chosen::Cpu(_) => "exact".into(),
            Chosen::Cuda(_) => format!("{:?}", args.gpu.activations).to_lowercase(),
        },
        precision: precision.flags(),
        device: chosen.name().into(),
        gpu: gpu_name,
        rev: args.rev.clone().unwrap_or_else(model_bench::git_rev),
        date: model_bench::utc_now(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        copy_bytes_per_s: copy,
        step_bytes: bytes.step,
        load_s: 0.0,
        routes: match &chosen {
            Chosen::Cpu(_) => None,
            Chosen::Cuda(b) => Some(b.routes().describe()),
        },
    };
    println!(
        "{}{}: {} weights on {}{}; a decode step reads {} of weights{}",
        info.model,
        if synthetic {
            format!(" (synthetic, seed {})", args.seed)
        } else {
            String::new()
        },
        info.weights,
        info.device,
        info.gpu
            .as_ref()
            .map(|g| format!(" ({g})"))
            .unwrap_or_default(),
        gb(bytes.step),
        match copy {
            Some(c) => format!(
                ", copy {:.0} GB/s, floor {:.1} us",
                c * 1e-9,
                bytes.step / c * 1e6
            ),
            None => " (no floor on the cpu: the floor is the GPU's memory bound)".into(),
        }
    );
    let (load_s, measured) = match &chosen {
        Chosen::Cpu(_) if args.profile_ab => {
            return Err(CliError::usage(PROFILE_AB_ON_CPU));
        }
        Chosen::Cpu(_) if args.conv_epilogue_ab => {
            return Err(CliError::usage(CONV_EPILOGUE_AB_ON_CPU));
        }
        Chosen::Cpu(b) => bench_on(b, &mut files, &precision, &plan, &[], &[])?,
        Chosen::Cuda(b) => {
            let off = || {
                b.set_prefill_cublas(false);
            };
            let on = || {
                b.set_prefill_cublas(true);
            };
            let variants: Vec<model_bench::Variant<'_>> = match args.prefill_cublas_ab {
                true => vec![("", &off), ("--prefill-cublas", &on)],
                false => Vec::new(),
            };
            let (tuned, heuristics) = (b.routes(), Arc::new(RouteTable::heuristics()));
            if args.profile_ab && tuned.is_empty() {
                return Err(CliError::usage(PROFILE_AB_NO_PROFILE));
            }
            let with_profile = || b.set_routes(tuned.clone());
            let without = || b.set_routes(heuristics.clone());
            let conv_default = b.conv_epilogue();
            let conv_launch = || b.set_conv_epilogue(false);
            let conv_epilogue = || b.set_conv_epilogue(true);
            let decode_variants: Vec<model_bench::Variant<'_>> =
                match (args.profile_ab, args.conv_epilogue_ab) {
                    (true, _) => vec![
                        ("", &with_profile),
                        ("--no-profile", &without),
                        ("", &with_profile),
                        ("--no-profile", &without),
                    ],
                    (false, true) => vec![
                        ("NINFER_GDN_CONV_EPILOGUE=0", &conv_launch),
                        ("NINFER_GDN_CONV_EPILOGUE=1", &conv_epilogue),
                        ("NINFER_GDN_CONV_EPILOGUE=0", &conv_launch),
                        ("NINFER_GDN_CONV_EPILOGUE=1", &conv_epilogue),
                    ],
                    (false, false) => Vec::new(),
                };
            let result = bench_on(
                b,
                &mut files,
                &precision,
                &plan,
                &variants,
                &decode_variants,
            );
            b.set_routes(tuned.clone());
            b.set_conv_epilogue(conv_default);
            result?
        }
    };
    let info = RunInfo { load_s, ..info };
    let records: Vec<ModelBenchRecord> = measured
        .iter()
        .map(|m| model_bench::record(&info, m))
        .collect();
    if let Some(path) = &args.json {
        let lines: String = records
            .iter()
            .map(|r| serde_json::to_string(r).expect("record serialises") + "\n")
            .collect();
        std::fs::write(path, lines)
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    }
    print!("{}", model_bench::format_table(&records));
    Ok(())
}

/// Loads the model on `backend` (a progress bar while synthetic weights are made) and
/// makes the measurements, each announced on stderr as it finishes.
fn bench_on<B: Backend>(
    backend: &B,
    files: &mut ModelFiles,
    precision: &PrecisionOptions,
    plan: &Plan,
    variants: &[model_bench::Variant<'_>],
    decode_variants: &[model_bench::Variant<'_>],
) -> Result<(f64, Vec<Measurement>), CliError> {
    let on_terminal = std::io::stderr().is_terminal();
    let bar = match &mut files.weights {
        Weights::Synthetic(s) => {
            let total = s.param_count();
            eprintln!(
                "making {} ({:.2} B parameters, seed {}) on {}...",
                s.label().display(),
                total as f64 * 1e-9,
                s.seed(),
                backend.name()
            );
            let bar = if on_terminal {
                let bar = ProgressBar::new(total);
                bar.set_style(
                    ProgressStyle::with_template(
                        "[{bar:30}] {percent}% of the parameters [{elapsed_precise} < {eta_precise}]",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                );
                bar
            } else {
                ProgressBar::hidden()
            };
            s.set_progress(bar.clone());
            bar
        }
        _ => {
            eprintln!(
                "loading {} on {}...",
                files.location.path().display(),
                backend.name()
            );
            ProgressBar::hidden()
        }
    };
    let files: &ModelFiles = files;
    let result = model_bench::measure(
        backend,
        files,
        precision,
        plan,
        variants,
        decode_variants,
        |s| {
            bar.finish_and_clear();
            eprintln!("loaded in {s:.1} s");
        },
        |m| {
            let what = match m.kind {
                model_bench::Kind::Prompt => "prompt",
                model_bench::Kind::Decode => "decode",
            };
            match m.tokens_per_s() {
                Some(t) => eprintln!(
                    "{what} {} tokens, {} lane(s){}{}: {t:.1} tokens/s",
                    m.tokens,
                    m.lanes,
                    match m.readback {
                        Some(model_bench::Readback::Logits) => ", logits read back",
                        _ => "",
                    },
                    match m.variant.as_deref() {
                        Some("") => " [default route]".to_string(),
                        Some(v) => format!(" [{v}]"),
                        None => String::new(),
                    }
                ),
                None => eprintln!(
                    "{what}, {} lanes: {}",
                    m.lanes,
                    m.note.as_deref().unwrap_or("not supported")
                ),
            }
        },
    );
    bar.finish_and_clear();
    Ok(result?)
}
