//! `ninfer run`: text from a prompt, streamed as it is generated.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::precision::PrecisionArgs;
use super::CliError;
use crate::engine::cuda::{CudaBackend, CudaOptions, LinearActivations};
use crate::engine::generate::{
    generate_chunked, GenerateOptions, Generation, Sampling, TextStream,
};
use crate::engine::{Backend, CpuBackend};
use crate::model::arch::{self, CausalLm};
use crate::model::precision::PrecisionOptions;
use crate::model::{ChatMessage, ModelFiles, Tokenizer};
use crate::tune::{Fingerprint, ProfileRequest};

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Device {
    /// The reference CPU backend (slow, needs no GPU).
    Cpu,
    /// The GPU engine (device 0).
    Cuda,
    /// The GPU when there is one, else the CPU.
    Auto,
}

/// The sampling flags of the generating commands.
#[derive(Debug, Clone, clap::Args)]
pub struct SamplingArgs {
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Keep only the k most likely tokens (0 = all).
    #[arg(long, default_value_t = 0)]
    pub top_k: usize,
    /// Keep the smallest set of tokens whose probability reaches p (1 = all).
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Seed for sampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl SamplingArgs {
    /// The sampling these flags ask for; a usage error for values outside their range.
    pub fn sampling(&self) -> Result<Sampling, CliError> {
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(CliError::usage("--top-p must be in (0, 1]"));
        }
        if !self.temperature.is_finite() || self.temperature < 0.0 {
            return Err(CliError::usage("--temperature must be 0 or more"));
        }
        Ok(Sampling {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            seed: self.seed,
        })
    }
}

/// How the GPU engine holds weights and feeds linear layers (ignored on the cpu).
#[derive(Debug, Clone, clap::Args)]
pub struct GpuArgs {
    /// Weight format on the GPU: f32 keeps the file's values exactly (the default); bf16,
    /// q8_g32, q6_g64, q4_g64, q4_1_g32, ... re-encode them (see formats.toml).
    #[arg(long, default_value = "f32", value_name = "FORMAT")]
    pub weights: String,
    /// Linear layers' inputs on the GPU: exact (f32, CUDA cores) or bf16 (tensor cores).
    #[arg(long, value_enum, default_value_t = LinearActivations::Exact)]
    pub activations: LinearActivations,
    /// Run every decode step op by op instead of replaying it as a captured CUDA graph
    /// (slower; for comparing the two).
    #[arg(long)]
    pub no_graphs: bool,
    /// Run RMSNorm and SwiGLU as launches of their own instead of inside the linear that
    /// consumes them (slower; for comparing the two).
    #[arg(long)]
    pub unfused: bool,
    /// Launch every kernel in full stream order instead of with programmatic dependent
    /// launch (PDL, sm_90 and later: a kernel's launch overlaps the end of the one before;
    /// also off with NINFER_NO_PDL=1). For comparing the two.
    #[arg(long)]
    pub no_pdl: bool,
    /// Take the routes from this tuning profile (it must be for this GPU and this build's
    /// kernel templates, else it is ignored with a notice). Default: the first matching
    /// profile in $NINFER_PROFILE_DIR, ./tuning, the source tree's tuning/ and
    /// <cache>/tuning (`ninfer tune check` says which one and why).
    #[arg(long, value_name = "PATH", conflicts_with = "no_profile")]
    pub profile: Option<PathBuf>,
    /// Use no tuning profile: the built-in heuristics choose every route (to compare with
    /// a profile).
    #[arg(long)]
    pub no_profile: bool,
}

impl GpuArgs {
    /// Where the GPU engine takes its routes from.
    pub fn profile_request(&self) -> ProfileRequest {
        match (&self.profile, self.no_profile) {
            (_, true) => ProfileRequest::Off,
            (Some(p), false) => ProfileRequest::Path(p.clone()),
            (None, false) => ProfileRequest::Search,
        }
    }

    pub fn options(&self) -> Result<CudaOptions, CliError> {
        let weights = crate::formats::format(&self.weights)
            .map_err(|e| CliError::usage(format!("--weights: {e}")))?;
        Ok(CudaOptions {
            weights,
            act: self.activations,
            graphs: !self.no_graphs,
            fused: !self.unfused,
            pdl: !self.no_pdl,
            ..CudaOptions::default()
        })
    }
}

/// The backend a `--device` choice resolves to.
pub enum Chosen {
    Cpu(CpuBackend),
    Cuda(CudaBackend),
}

impl Chosen {
    pub fn name(&self) -> &'static str {
        match self {
            Chosen::Cpu(_) => "cpu",
            Chosen::Cuda(_) => "cuda",
        }
    }
}

/// The refusal of a GPU-only precision option on the cpu backend.
const PREFILL_CUBLAS_ON_CPU: &str =
    "--prefill-cublas runs linear layers on cuBLAS, so it needs the GPU engine; drop it to run on the cpu, or use --device cuda on a machine with an NVIDIA GPU";

/// Opens the backend for `device` with the weights and routes `gpu` asks for (and the engine
/// options of `precision`): `cuda` insists on a GPU, `auto` takes one when the driver and a
/// device are there and falls back to the CPU otherwise, except where a GPU-only option
/// (`--prefill-cublas`) is asked for, which the cpu refuses (exit 2). The GPU engine takes its
/// routes from the tuning profile that matches the device (see [`GpuArgs::profile`]), with
/// one notice on stderr where none does.
pub fn choose_backend(
    device: Device,
    gpu: &GpuArgs,
    precision: &PrecisionOptions,
) -> Result<Chosen, CliError> {
    let opts = CudaOptions {
        prefill_cublas: precision.prefill_cublas,
        ..gpu.options()?
    };
    let cpu = || {
        if precision.prefill_cublas {
            return Err(CliError::usage(PREFILL_CUBLAS_ON_CPU));
        }
        Ok(Chosen::Cpu(CpuBackend))
    };
    let has_gpu = || {
        crate::gpu::driver_available() && crate::gpu::list_devices().is_ok_and(|d| !d.is_empty())
    };
    let open = || -> Result<CudaBackend, CliError> {
        let b = CudaBackend::open(0, opts)?;
        take_routes(&b, &gpu.profile_request());
        Ok(b)
    };
    match device {
        Device::Cpu => cpu(),
        Device::Cuda => {
            if !has_gpu() {
                return Err(CliError::usage(
                    "--device cuda needs an NVIDIA GPU and its driver, and this machine has none; use --device cpu",
                ));
            }
            Ok(Chosen::Cuda(open()?))
        }
        Device::Auto => {
            if has_gpu() {
                match open() {
                    Ok(b) => return Ok(Chosen::Cuda(b)),
                    Err(e) if precision.prefill_cublas => return Err(e),
                    Err(e) => tracing::warn!(
                        "the GPU could not be opened ({}); running on the cpu",
                        e.message
                    ),
                }
            }
            cpu()
        }
    }
}

/// Gives `b` the routes of the profile `request` resolves to on its device, and prints the
/// notice (no matching profile, a profile ignored and why) once.
fn take_routes(b: &CudaBackend, request: &ProfileRequest) {
    match Fingerprint::of_device(b.gpu().props()) {
        Ok(fp) => {
            let resolved = crate::tune::resolve(&fp, request, &crate::tune::search_dirs());
            if let Some(n) = &resolved.notice {
                crate::tune::routes::print_notice_once(n);
            }
            tracing::info!("routes: {}", resolved.table.describe());
            b.set_routes(Arc::new(resolved.table));
        }
        Err(why) if *request != ProfileRequest::Off => crate::tune::routes::print_notice_once(
            &format!("this device has no fingerprint ({why}); using the built-in heuristics"),
        ),
        Err(_) => {}
    }
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The prompt; read from standard input when absent.
    pub prompt: Option<String>,
    /// A GGUF file or a Hugging Face model directory (default: SmolLM2-135M-Instruct,
    /// fetched on first use).
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// Render the prompt as one user message through the model's chat template.
    #[arg(long)]
    pub chat: bool,
    /// Most tokens to generate.
    #[arg(long, default_value_t = 128)]
    pub max_tokens: usize,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
    #[command(flatten)]
    pub gpu: GpuArgs,
    #[command(flatten)]
    pub precision: PrecisionArgs,
}

fn read_prompt(args: &RunArgs) -> Result<String, CliError> {
    if let Some(p) = &args.prompt {
        return Ok(p.clone());
    }
    if std::io::stdin().is_terminal() {
        return Err(CliError::usage(
            "give a prompt as an argument or on standard input",
        ));
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| CliError::usage(format!("cannot read the prompt from standard input: {e}")))?;
    Ok(text)
}

pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let sampling = args.sampling.sampling()?;
    let precision = args.precision.options()?;
    let prompt = read_prompt(args)?;
    if prompt.is_empty() {
        return Err(CliError::usage("the prompt is empty"));
    }
    let files = crate::model::load_model(args.model.as_deref())
        .map_err(|e| CliError::usage(e.to_string()))?;
    arch::check_options(&files.config, &precision)?;
    let text = if args.chat {
        let template = files
            .chat_template
            .as_ref()
            .ok_or_else(|| CliError::usage("this model has no chat template; drop --chat"))?;
        template
            .render(&[ChatMessage::new("user", prompt)], true)
            .map_err(|e| CliError::failed(e.to_string()))?
    } else {
        prompt
    };
    let ids = files
        .tokenizer
        .encode(&text, !args.chat)
        .map_err(|e| CliError::failed(e.to_string()))?;
    if ids.is_empty() {
        return Err(CliError::usage("the prompt encodes to no tokens"));
    }
    match choose_backend(args.device, &args.gpu, &precision)? {
        Chosen::Cpu(b) => generate_on(&b, &files, &ids, &precision, sampling, args),
        Chosen::Cuda(b) => generate_on(&b, &files, &ids, &precision, sampling, args),
    }
}

/// What [`generate_streamed`] returns: the generation, its whole text, and when its first
/// token came (`None` when none did).
pub(super) struct Streamed {
    pub generation: Generation,
    pub text: String,
    pub first_token_at: Option<Instant>,
}

/// Generates from `ids` (prefill in chunks of `prefill_chunk` tokens where given), writing
/// each token's text to `out` as it comes (flushed, so that it streams); a token the
/// tokenizer cannot decode stops the generation and is the error. Shared by `run` and
/// `chat`.
pub(super) fn generate_streamed<B: Backend, M: CausalLm<B>>(
    model: &M,
    state: &mut M::State,
    ids: &[u32],
    opts: &GenerateOptions,
    prefill_chunk: Option<usize>,
    tokenizer: &Tokenizer,
    out: &mut impl Write,
) -> Result<Streamed, CliError> {
    let mut stream = TextStream::new(tokenizer, true);
    let mut text = String::new();
    let mut failure = None;
    let mut first_token_at = None;
    let generation = generate_chunked(model, state, ids, opts, prefill_chunk, |id| {
        first_token_at.get_or_insert_with(Instant::now);
        match stream.push(id) {
            Ok(piece) => {
                text.push_str(&piece);
                let _ = out.write_all(piece.as_bytes());
                let _ = out.flush();
                true
            }
            Err(e) => {
                failure = Some(e.to_string());
                false
            }
        }
    });
    if let Some(e) = failure {
        return Err(CliError::failed(e));
    }
    let tail = stream
        .finish()
        .map_err(|e| CliError::failed(e.to_string()))?;
    text.push_str(&tail);
    let _ = writeln!(out, "{tail}");
    Ok(Streamed {
        generation,
        text,
        first_token_at,
    })
}

/// Generation on one backend, streamed to stdout, with the speed line on stderr.
fn generate_on<B: Backend>(
    backend: &B,
    files: &ModelFiles,
    ids: &[u32],
    precision: &PrecisionOptions,
    sampling: Sampling,
    args: &RunArgs,
) -> Result<(), CliError> {
    let model = arch::load_with(backend, files, precision)?;
    let mut state = model.new_state();
    let opts = GenerateOptions {
        max_new_tokens: args.max_tokens,
        sampling,
        stop_ids: files.tokenizer.stop_ids().to_vec(),
    };
    let mut out = std::io::stdout().lock();
    let started = Instant::now();
    let streamed = generate_streamed(
        &model,
        &mut state,
        ids,
        &opts,
        precision.prefill_chunk,
        &files.tokenizer,
        &mut out,
    )?;
    let (generation, first_token_at) = (streamed.generation, streamed.first_token_at);
    let first = first_token_at.unwrap_or_else(Instant::now);
    let prefill_s = (first - started).as_secs_f64();
    let decode_s = first.elapsed().as_secs_f64();
    let n = generation.tokens.len();
    eprintln!(
        "[{} prompt tokens in {:.2} s ({:.1} tok/s); {} tokens generated in {:.2} s ({:.1} tok/s); device {}]",
        ids.len(),
        prefill_s,
        ids.len() as f64 / prefill_s.max(1e-9),
        n,
        decode_s,
        n.saturating_sub(1) as f64 / decode_s.max(1e-9),
        backend.name(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn gpu_args() -> GpuArgs {
        GpuArgs {
            weights: "f32".into(),
            activations: LinearActivations::Exact,
            no_graphs: false,
            unfused: false,
            no_pdl: false,
            profile: None,
            no_profile: false,
        }
    }

    #[test]
    fn prefill_cublas_is_refused_on_the_cpu() {
        let cublas = PrecisionOptions::default().with_prefill_cublas(true);
        let e = choose_backend(Device::Cpu, &gpu_args(), &cublas)
            .err()
            .expect("the cpu refuses --prefill-cublas");
        assert_eq!(e.code, 2);
        assert_eq!(e.message, PREFILL_CUBLAS_ON_CPU);
        let plain = choose_backend(Device::Cpu, &gpu_args(), &PrecisionOptions::default());
        assert!(matches!(plain, Ok(Chosen::Cpu(_))));
        // Without a GPU, `auto` would fall back to the cpu: it refuses instead.
        if !crate::gpu::driver_available() {
            let e = choose_backend(Device::Auto, &gpu_args(), &cublas)
                .err()
                .expect("auto without a GPU refuses --prefill-cublas");
            assert_eq!(e.code, 2);
        }
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        gpu: GpuArgs,
    }

    #[test]
    fn pdl_is_on_unless_no_pdl() {
        let on = Cli::try_parse_from(["x"]).unwrap().gpu.options().unwrap();
        assert!(on.pdl && on.fused && on.graphs);
        let off = Cli::try_parse_from(["x", "--no-pdl", "--unfused"])
            .unwrap()
            .gpu
            .options()
            .unwrap();
        assert!(!off.pdl && !off.fused && off.graphs);
    }
}
