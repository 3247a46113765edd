//! `ninfer chat`: an interactive conversation through the model's chat template.
//!
//! Each turn renders the whole conversation, and when the tokens the model has already
//! consumed are a prefix of it (the usual case) only the new tokens are fed, so a turn costs
//! its own length, not the conversation's. When they are not (a reply re-tokenizes
//! differently) the state is rebuilt from the full conversation.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use super::precision::PrecisionArgs;
use super::run::{choose_backend, generate_streamed, Chosen, Device, GpuArgs, SamplingArgs};
use super::CliError;
use crate::engine::generate::{GenerateOptions, Sampling, StopReason};
use crate::engine::Backend;
use crate::model::arch::{self, CausalLm};
use crate::model::precision::PrecisionOptions;
use crate::model::{ChatMessage, ModelFiles};

#[derive(Debug, clap::Args)]
pub struct ChatArgs {
    /// A GGUF file or a Hugging Face model directory (default: SmolLM2-135M-Instruct).
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// A system message put first in the conversation.
    #[arg(long)]
    pub system: Option<String>,
    /// Most tokens per reply.
    #[arg(long, default_value_t = 512)]
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

pub fn run(args: &ChatArgs) -> Result<(), CliError> {
    let sampling = args.sampling.sampling()?;
    let precision = args.precision.options()?;
    let files = crate::model::load_model(args.model.as_deref())
        .map_err(|e| CliError::usage(e.to_string()))?;
    arch::check_options(&files.config, &precision)?;
    if files.chat_template.is_none() {
        return Err(CliError::usage(
            "this model has no chat template; use `ninfer run` for plain text",
        ));
    }
    match choose_backend(args.device, &args.gpu, &precision)? {
        Chosen::Cpu(b) => chat_on(&b, &files, &precision, sampling, args),
        Chosen::Cuda(b) => chat_on(&b, &files, &precision, sampling, args),
    }
}

fn chat_on<B: Backend>(
    backend: &B,
    files: &ModelFiles,
    precision: &PrecisionOptions,
    sampling: Sampling,
    args: &ChatArgs,
) -> Result<(), CliError> {
    let model = arch::load_with(backend, files, precision)?;
    let template = files.chat_template.as_ref().expect("checked by the caller");
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!(
            "[chat with {} on {}; an empty line or end of input quits]",
            files.location.path().display(),
            backend.name()
        );
    }
    let mut history: Vec<ChatMessage> = Vec::new();
    if let Some(s) = &args.system {
        history.push(ChatMessage::new("system", s.clone()));
    }
    let mut state = model.new_state();
    let mut consumed: Vec<u32> = Vec::new();
    let mut out = std::io::stdout().lock();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            eprint!("> ");
            let _ = std::io::stderr().flush();
        }
        let Some(line) = lines.next() else { break };
        let line = line.map_err(|e| CliError::failed(format!("cannot read the input: {e}")))?;
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.trim().is_empty() {
            break;
        }
        history.push(ChatMessage::new("user", line));
        let text = template
            .render(&history, true)
            .map_err(|e| CliError::failed(e.to_string()))?;
        let ids = files
            .tokenizer
            .encode(&text, false)
            .map_err(|e| CliError::failed(e.to_string()))?;
        // Feed only what the state has not seen, when what it saw is a prefix.
        let reuse = consumed.len() < ids.len() && ids.starts_with(&consumed);
        if !reuse {
            state = model.new_state();
            consumed.clear();
        }
        let new = &ids[consumed.len()..];
        let opts = GenerateOptions {
            max_new_tokens: args.max_tokens,
            // A new seed per turn, so equal questions need not get equal samples.
            sampling: Sampling {
                seed: sampling.seed.wrapping_add(history.len() as u64),
                ..sampling
            },
            stop_ids: files.tokenizer.stop_ids().to_vec(),
        };
        let streamed = generate_streamed(
            &model,
            &mut state,
            new,
            &opts,
            precision.prefill_chunk,
            &files.tokenizer,
            &mut out,
        )?;
        let (generation, reply) = (streamed.generation, streamed.text);
        // The state consumed the new prompt tokens and every reply token but the last one
        // sampled when generation stopped on length (a stop token ends after the whole reply).
        consumed.extend_from_slice(new);
        let fed = match generation.reason {
            StopReason::StopToken => generation.tokens.len(),
            _ => generation.tokens.len().saturating_sub(1),
        };
        consumed.extend_from_slice(&generation.tokens[..fed]);
        history.push(ChatMessage::new("assistant", reply.trim().to_string()));
    }
    Ok(())
}
