//! `ninfer-serve`: an OpenAI-compatible HTTP server.

use std::process::ExitCode;

use clap::Parser;
use ninfer::cli::{self, serve};

/// An OpenAI-compatible HTTP server over one model.
///
/// Endpoints: POST /v1/chat/completions (through the model's chat template) and POST
/// /v1/completions (plain text), both with "stream": true for server-sent events; GET
/// /v1/models; GET /health. Requests take max_tokens (max_completion_tokens), temperature
/// (default 1), top_p, top_k, seed and stop (up to 4 strings). Up to --lanes requests are
/// decoded together as lanes of one batched step; more wait in arrival order. The address
/// is printed on stderr once the model is loaded.
#[derive(Debug, Parser)]
#[command(name = "ninfer-serve", version)]
struct Cli {
    #[command(flatten)]
    args: serve::ServeArgs,
}

fn main() -> ExitCode {
    cli::init_logging();
    let cli = Cli::parse();
    cli::finish(serve::run(&cli.args))
}
