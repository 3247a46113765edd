//! What the binaries share: error reporting with exit codes, logging set-up, and the
//! subcommands of `ninfer`.

pub mod bench;
pub mod chat;
pub mod compare;
pub mod devices;
pub mod kernels;
pub mod perplexity;
pub mod precision;
pub mod qualify;
pub mod run;
pub mod serve;
pub mod tune;

use std::process::ExitCode;

/// A failure to report as one sentence, with its exit status.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub code: u8,
}

impl CliError {
    /// The user asked for something that cannot be done as asked (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: 2,
        }
    }

    /// The work itself failed (exit 1).
    pub fn failed(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: 1,
        }
    }
}

impl From<crate::gpu::GpuError> for CliError {
    fn from(e: crate::gpu::GpuError) -> Self {
        CliError::failed(e.to_string())
    }
}

impl From<crate::jit::JitError> for CliError {
    fn from(e: crate::jit::JitError) -> Self {
        CliError::failed(e.to_string())
    }
}

/// Logs go to stderr: warnings by default, more with `NINFER_LOG=info|debug`.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NINFER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .with_target(false)
        .try_init();
}

/// Prints the error as `error: ...` and turns it into the exit status.
pub fn finish(result: Result<(), CliError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.message.trim_end());
            ExitCode::from(e.code)
        }
    }
}
