//! `ninfer kernels`: list, render and build the registered kernel instantiations, and
//! look after the on-disk kernel cache.

use std::time::Instant;

use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use super::CliError;
use crate::jit::disk_cache::disk_usage;
use crate::jit::{nvrtc, registry, Arch, Jit, JitError, KernelSpec, Provenance};

#[derive(Debug, Subcommand)]
pub enum KernelsCommand {
    /// List every registered kernel instantiation (entry point, family, template, params).
    List {
        /// Only instantiations whose entry point or family contains this text.
        filter: Option<String>,
        /// Also print each kernel's cache key for the target given by --arch.
        #[arg(long, requires = "arch")]
        keys: bool,
        /// The target for --keys (sm_80, sm_90, ...).
        #[arg(long)]
        arch: Option<String>,
    },
    /// Print the exact CUDA source of one instantiation.
    Render {
        /// The kernel's entry point, as `ninfer kernels list` shows it.
        entry: String,
    },
    /// Compile instantiations in parallel into the kernel cache.
    Build(BuildArgs),
    /// The kernel cache: where it is, what it holds, emptying it.
    Cache {
        #[command(subcommand)]
        command: CacheCommand,
    },
    /// What the kernel cache holds (same as `kernels cache stats`).
    Stats,
    /// Delete every cached kernel (same as `kernels cache clear`).
    Clear,
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Print the cache directory.
    Path,
    /// Entries and bytes per target.
    Stats,
    /// Delete every cached kernel.
    Clear,
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// Target architecture (sm_80, sm_86, sm_89, sm_90, ...); repeat for several. Default:
    /// the architecture of each GPU on this machine.
    #[arg(long = "arch", value_name = "ARCH")]
    pub archs: Vec<String>,
    /// Build every registered instantiation.
    #[arg(long, conflicts_with = "families")]
    pub all: bool,
    /// Build only these families (see `ninfer kernels list`).
    pub families: Vec<String>,
    /// Of those, only the entries containing one of these comma-separated substrings.
    #[arg(long)]
    pub filter: Option<String>,
}

pub fn run(cmd: &KernelsCommand) -> Result<(), CliError> {
    match cmd {
        KernelsCommand::List { filter, keys, arch } => {
            list(filter.as_deref(), keys.then_some(arch.as_deref()).flatten())
        }
        KernelsCommand::Render { entry } => render(entry),
        KernelsCommand::Build(args) => build(args),
        KernelsCommand::Cache { command } => match command {
            CacheCommand::Path => cache_path(),
            CacheCommand::Stats => cache_stats(),
            CacheCommand::Clear => cache_clear(),
        },
        KernelsCommand::Stats => cache_stats(),
        KernelsCommand::Clear => cache_clear(),
    }
}

fn list(filter: Option<&str>, key_arch: Option<&str>) -> Result<(), CliError> {
    let specs: Vec<KernelSpec> = registry::all()
        .into_iter()
        .filter(|s| filter.is_none_or(|f| s.entry.contains(f) || s.family.contains(f)))
        .collect();
    let key_arch = match key_arch {
        Some(a) => Some(parse_archs(&[a.to_string()])?[0]),
        None => None,
    };
    let w = specs.iter().map(|s| s.entry.len()).max().unwrap_or(5);
    for s in &specs {
        match key_arch {
            Some(arch) => {
                let (key, _) = Jit::global()?.key_for(s, arch)?;
                println!("{:w$}  {arch}  {key}", s.entry);
            }
            None => println!(
                "{:w$}  {:10}  {:24}  {}",
                s.entry,
                s.family,
                s.template,
                s.params_line()
            ),
        }
    }
    println!("{} instantiations", specs.len());
    Ok(())
}

fn render(entry: &str) -> Result<(), CliError> {
    let spec = registry::find(entry).ok_or_else(|| {
        CliError::usage(format!(
            "there is no kernel named {entry}; `ninfer kernels list` shows the names"
        ))
    })?;
    print!("{}", Jit::global()?.render(&spec)?);
    Ok(())
}

fn parse_archs(args: &[String]) -> Result<Vec<Arch>, CliError> {
    if args.is_empty() {
        let devices = crate::gpu::list_devices().map_err(|e| {
            CliError::usage(format!(
                "{e}; name the targets to build for with --arch (for example --arch sm_90)"
            ))
        })?;
        let mut archs: Vec<Arch> = devices.iter().map(|d| d.arch()).collect();
        archs.sort();
        archs.dedup();
        return Ok(archs);
    }
    let mut archs = Vec::new();
    for a in args {
        let arch = Arch::parse(a).ok_or_else(|| {
            CliError::usage(format!(
                "{a:?} is not a GPU architecture; write it as sm_80, sm_86, sm_89, sm_90, ..."
            ))
        })?;
        if arch.major < 8 {
            return Err(CliError::usage(format!(
                "{arch} is older than sm_80, which the kernels need (bf16 tensor cores)"
            )));
        }
        if !archs.contains(&arch) {
            archs.push(arch);
        }
    }
    Ok(archs)
}

fn build(args: &BuildArgs) -> Result<(), CliError> {
    if !args.all && args.families.is_empty() {
        return Err(CliError::usage(
            "say which kernels to build: --all, or family names (see `ninfer kernels list`)",
        ));
    }
    let registered = registry::all();
    let unknown: Vec<&str> = (args.families.iter())
        .filter(|f| !registered.iter().any(|s| s.family == f.as_str()))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(CliError::usage(format!(
            "no registered family is named {}; `ninfer kernels list` shows them",
            unknown.join(", ")
        )));
    }
    let specs: Vec<KernelSpec> = registered
        .into_iter()
        .filter(|s| args.all || args.families.iter().any(|f| f == s.family))
        .filter(|s| {
            (args.filter.as_deref()).is_none_or(|f| f.split(',').any(|p| s.entry.contains(p)))
        })
        .collect();
    if specs.is_empty() {
        // Only the filter can leave nothing: every family named exists and has entries.
        return Err(CliError::usage(format!(
            "no entry {} contains any of \"{}\"; `ninfer kernels list` shows the entries",
            if args.all {
                "of the registry".to_string()
            } else {
                format!("of {}", args.families.join(", "))
            },
            args.filter.as_deref().unwrap_or_default()
        )));
    }
    if !nvrtc::is_available() {
        return Err(JitError::NvrtcMissing.into());
    }
    let archs = parse_archs(&args.archs)?;
    let jit = Jit::global()?;
    // A kernel that needs a later architecture (thread block clusters) is not built for an
    // earlier one.
    let jobs: Vec<(&KernelSpec, Arch)> = specs
        .iter()
        .flat_map(|s| archs.iter().map(move |&a| (s, a)))
        .filter(|(s, a)| s.builds_for(*a))
        .collect();

    let bar = ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} building kernels {pos}/{len} [{bar:30}] {elapsed}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let started = Instant::now();
    let results: Vec<Result<Provenance, JitError>> = jobs
        .par_iter()
        .map(|(spec, arch)| {
            let r = jit.cubin(spec, *arch).map(|(_, p)| p);
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();

    let count = |p: Provenance| {
        results
            .iter()
            .filter(|r| matches!(r, Ok(q) if *q == p))
            .count()
    };
    let failures: Vec<&JitError> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    for e in &failures {
        eprintln!("{e}");
    }
    let targets: Vec<String> = archs.iter().map(|a| a.to_string()).collect();
    let skipped = specs.len() * archs.len() - jobs.len();
    let skipped = if skipped > 0 {
        format!(", {skipped} not for an earlier arch than they need")
    } else {
        String::new()
    };
    let (nv_a, nv_b) = jit.nvrtc_version()?;
    println!(
        "{} kernels ({} instantiations x {}{skipped}) with NVRTC {nv_a}.{nv_b}: {} compiled, {} from the disk cache, {} already in memory, {} failed; {:.2} s",
        jobs.len(),
        specs.len(),
        targets.join(", "),
        count(Provenance::Compiled),
        count(Provenance::DiskCache),
        count(Provenance::Memory),
        failures.len(),
        elapsed,
    );
    match jit.disk().dir() {
        Some(d) => println!("cache: {}", d.display()),
        None => println!("cache: memory only (nothing was kept)"),
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(CliError::failed(format!(
            "{} kernels failed to compile",
            failures.len()
        )))
    }
}

fn cache_dir() -> Result<std::path::PathBuf, CliError> {
    Jit::global()?
        .disk()
        .dir()
        .map(|d| d.to_path_buf())
        .ok_or_else(|| {
            CliError::failed("there is no usable kernel cache directory (set NINFER_CACHE_DIR)")
        })
}

fn cache_path() -> Result<(), CliError> {
    println!("{}", cache_dir()?.display());
    Ok(())
}

fn cache_stats() -> Result<(), CliError> {
    let dir = cache_dir()?;
    let usage = disk_usage(&dir);
    println!("{}", dir.display());
    for ((arch, nvrtc), n) in &usage.by_target {
        println!("  {arch:8} {nvrtc:12} {n} kernels");
    }
    println!(
        "{} kernels, {:.1} MiB",
        usage.entries,
        usage.bytes as f64 / (1u64 << 20) as f64
    );
    Ok(())
}

fn cache_clear() -> Result<(), CliError> {
    let dir = cache_dir()?;
    let usage = disk_usage(&dir);
    std::fs::remove_dir_all(&dir)
        .map_err(|e| CliError::failed(format!("cannot delete {}: {e}", dir.display())))?;
    println!(
        "removed {} kernels ({:.1} MiB) from {}",
        usage.entries,
        usage.bytes as f64 / (1u64 << 20) as f64,
        dir.display()
    );
    Ok(())
}
