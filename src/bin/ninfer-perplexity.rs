//! `ninfer-perplexity`: perplexity of a model on a text file (default: WikiText-2 test).

use std::process::ExitCode;

use clap::Parser;
use ninfer::cli::{self, perplexity};

/// Perplexity of a model on a text file, with its standard error and speed.
///
/// By default it scores the WikiText-2 raw test split with overlapping windows of 4096
/// tokens, 2048 apart, each scoring only the tokens the previous one did not. --quick scores
/// the first 8,192 tokens only. --method chunks reproduces llama.cpp's perplexity tool
/// (non-overlapping windows, second halves scored) so figures can be set beside its own.
/// The result is printed on stdout as one line: PPL = X +/- SE over N tokens (...).
#[derive(Debug, Parser)]
#[command(name = "ninfer-perplexity", version)]
struct Cli {
    #[command(flatten)]
    args: perplexity::PerplexityArgs,
}

fn main() -> ExitCode {
    cli::init_logging();
    let cli = Cli::parse();
    cli::finish(perplexity::run(&cli.args))
}
