//! `ninfer qualify`: every GPU route against the CPU oracle.

use super::CliError;
use crate::gpu::Gpu;
use crate::qualify::{format_table, run_all};

#[derive(Debug, clap::Args)]
pub struct QualifyArgs {
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Seed for the random inputs (default: a fresh one, printed so a run can be repeated).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only routes whose name contains this text (several: separate them with commas).
    #[arg(long)]
    pub filter: Option<String>,
    /// Also write the outcomes as JSON lines to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<std::path::PathBuf>,
}

pub fn run(args: &QualifyArgs) -> Result<(), CliError> {
    let gpu = Gpu::open(args.device)?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    let props = gpu.props();
    println!(
        "qualify on GPU {} ({}, {}), seed {seed}",
        props.ordinal,
        props.name,
        props.arch()
    );
    let outcomes = run_all(&gpu, seed, args.filter.as_deref())?;
    if outcomes.is_empty() {
        return Err(CliError::usage("no route matches the filter"));
    }
    print!("{}", format_table(&outcomes));
    if let Some(path) = &args.json {
        let lines: String = outcomes
            .iter()
            .map(|o| serde_json::to_string(o).expect("outcome serialises") + "\n")
            .collect();
        std::fs::write(path, lines)
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    }
    let failed = outcomes.iter().filter(|o| !o.pass).count();
    println!(
        "{} checks: {} passed, {failed} failed",
        outcomes.len(),
        outcomes.len() - failed
    );
    if failed > 0 {
        return Err(CliError::failed(format!(
            "{failed} checks failed qualification"
        )));
    }
    Ok(())
}
