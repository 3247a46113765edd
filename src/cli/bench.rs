//! `ninfer bench kernels`: every op family's benchmark against ceilings measured in the
//! same run, with peer timings merged from a file a peer script wrote in the same job.

use clap::Subcommand;

use super::CliError;
use crate::bench::{merge_peers, BenchCtx, BenchRecord, PeerTiming};
use crate::gpu::Gpu;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Time the kernels at real shapes (linear, embedding, attention): median, GB/s,
    /// TFLOP/s, fraction of the ceiling.
    Kernels(KernelBenchArgs),
}

#[derive(Debug, clap::Args)]
pub struct KernelBenchArgs {
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Only benchmarks whose `what` or route contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Write one JSON record per line to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<std::path::PathBuf>,
    /// Peer timings (JSON lines: what, shape, peer, median_us) to set beside ours.
    #[arg(long, value_name = "PATH")]
    pub peer_json: Option<std::path::PathBuf>,
    /// The revision to stamp on each record (default: the build's).
    #[arg(long)]
    pub rev: Option<String>,
}

pub fn run(cmd: &BenchCommand) -> Result<(), CliError> {
    match cmd {
        BenchCommand::Kernels(args) => kernels(args),
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
        rev: args
            .rev
            .clone()
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string()),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let mut records: Vec<BenchRecord> = Vec::new();
    records.extend(crate::ops::linear::bench(&ctx, args.filter.as_deref())?);
    records.extend(crate::ops::linear_sgemm::bench(
        &ctx,
        args.filter.as_deref(),
    )?);
    records.extend(crate::ops::attention::bench(&ctx, args.filter.as_deref())?);
    if let Some(f) = &args.filter {
        records.retain(|r| r.what.contains(f.as_str()) || r.route.contains(f.as_str()));
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
