//! `ninfer-serve`'s flags and start-up: load the model, open the backend, listen.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::precision::PrecisionArgs;
use super::run::{Device, GpuArgs};
use super::CliError;
use crate::model::arch;
use crate::ops::attention::MAX_LANES;
use crate::serve::engine::Engine;
use crate::serve::http::{router, AppState};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// A GGUF file or a Hugging Face model directory (default: SmolLM2-135M-Instruct,
    /// fetched on first use).
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// The model's name in answers and in /v1/models (default: the file or directory name).
    #[arg(long, value_name = "NAME")]
    pub model_name: Option<String>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0: any free port; the address is printed on stderr).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// max_tokens of a chat request that gives none.
    #[arg(long, default_value_t = 512)]
    pub max_tokens: usize,
    /// Requests decoded together, as lanes of one batched step (1 to 8); more wait in
    /// arrival order.
    #[arg(long, default_value_t = 8)]
    pub lanes: usize,
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
    #[command(flatten)]
    pub gpu: GpuArgs,
    #[command(flatten)]
    pub precision: PrecisionArgs,
}

/// The name a model is served under: the file's stem or the directory's name.
fn model_name(args: &ServeArgs, files: &crate::model::ModelFiles) -> String {
    if let Some(n) = &args.model_name {
        return n.clone();
    }
    let path = files.location.path();
    let name = if path.is_dir() {
        path.file_name()
    } else {
        path.file_stem()
    };
    name.map_or_else(|| "model".to_string(), |n| n.to_string_lossy().into_owned())
}

pub fn run(args: &ServeArgs) -> Result<(), CliError> {
    if args.max_tokens == 0 {
        return Err(CliError::usage("--max-tokens must be at least 1"));
    }
    if !(1..=MAX_LANES).contains(&args.lanes) {
        return Err(CliError::usage(format!(
            "--lanes {}: the engine decodes 1 to {MAX_LANES} sequences together",
            args.lanes
        )));
    }
    let precision = args.precision.options()?;
    let files = crate::model::load_model(args.model.as_deref())
        .map_err(|e| CliError::usage(e.to_string()))?;
    arch::check_options(&files.config, &precision)?;
    let name = model_name(args, &files);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .build()
        .map_err(|e| CliError::failed(format!("cannot start the async runtime: {e}")))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind((
            args.host.as_str(),
            args.port,
        )))
        .map_err(|e| {
            CliError::usage(format!("cannot listen on {}:{}: {e}", args.host, args.port))
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::failed(format!("cannot read the listening address: {e}")))?;
    let engine = Engine::start(
        files,
        name,
        precision,
        args.device,
        args.gpu.clone(),
        args.lanes,
    )?;
    eprintln!(
        "ninfer-serve: listening on http://{addr} (model {} on {}; up to {} requests decoded together)",
        engine.info.id, engine.info.device, args.lanes
    );
    let _ = std::io::stderr().flush();
    let app = router(Arc::new(AppState::new(engine, args.max_tokens)));
    runtime
        .block_on(async { axum::serve(listener, app).await })
        .map_err(|e| CliError::failed(format!("the server stopped: {e}")))
}
