//! `ninfer`: the engine's command line.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ninfer::cli::{self, bench, chat, compare, devices, kernels, qualify, run, tune};

/// ninfer: LLM inference on one NVIDIA GPU, with kernels compiled at run time from templates.
#[derive(Debug, Parser)]
#[command(name = "ninfer", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate text from a prompt (streamed), then print the speed on stderr.
    Run(run::RunArgs),
    /// Talk with a model through its chat template (one message per line).
    Chat(chat::ChatArgs),
    /// Check the GPU engine against the cpu backend: greedy tokens and logits on one model.
    Compare(compare::CompareArgs),
    /// Show the GPUs the CUDA driver sees, with the properties the engine uses.
    Devices(devices::DevicesArgs),
    /// List, render and build kernels; manage the kernel cache.
    Kernels {
        #[command(subcommand)]
        command: kernels::KernelsCommand,
    },
    /// Run every GPU route on random inputs against the CPU oracle and report the error.
    Qualify(qualify::QualifyArgs),
    /// Benchmarks against ceilings measured in the same run.
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
    /// Time the route candidates at a model's shapes on this GPU and write its tuning
    /// profile; compare two runs; check which profile a device would use.
    Tune(tune::TuneArgs),
}

fn main() -> ExitCode {
    cli::init_logging();
    let args = Cli::parse();
    cli::finish(match &args.command {
        Command::Run(a) => run::run(a),
        Command::Chat(a) => chat::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Devices(a) => devices::run(a),
        Command::Kernels { command } => kernels::run(command),
        Command::Qualify(a) => qualify::run(a),
        Command::Bench { command } => bench::run(command),
        Command::Tune(a) => tune::run(a),
    })
}
