//! `ninfer tune`: time the route candidates at a model's shapes on this GPU and write the
//! device's profile; `ninfer tune compare A B`: two tuning runs side by side; `ninfer tune
//! check`: which profile the engine would use on a device, and why.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};

use super::CliError;
use crate::formats::Format;
use crate::gpu::{Gpu, GpuError};
use crate::model::synthetic::SHAPES_HELP;
use crate::model::ModelLocation;
use crate::ops::attention::KvType;
use crate::ops::gdn::StateType;
use crate::tune::compare::{self, split_part, Verdict};
use crate::tune::measure::{self, ExactJob, KeyResult, TuneOptions, BATCH};
use crate::tune::measure_a16::{self, A16Job};
use crate::tune::measure_attn::{self, AttnJob};
use crate::tune::measure_gdn::{self, GdnJob};
use crate::tune::profile::{describe, same_device_other_templates, short_hash, ProfileError};
use crate::tune::routes::{default_profile_path, resolve, search_dirs, ProfileRequest};
use crate::tune::sources::current_sources;
use crate::tune::{a16, attn, exact, gdn, shapes, Fingerprint, Profile};

const TUNE_HELP: &str = "\
Times every candidate route at the shapes of the models given (the linear layers' weight
shapes N x K, at each token bucket of --tokens; the GDN layers' dims, at each lanes bucket
of --lanes and each state type of --gdn-state; the attention layers' head layout, at each
context of --contexts) on GPU 0, and writes the winners to the device's profile, which every
later run on this device loads (see tuning/README.md).

A candidate is timed only if it first passes a qualification check at that shape against
the f64 host reference; one that fails counts as infinitely slow. Each is timed with CUDA
events as the engine runs it: linear_exact and attn_split as a CUDA graph of launches back
to back (with programmatic edges where the device takes PDL), each on the next of rotating
copies of a random weight (or KV cache) larger than the L2 cache, in --rounds interleaved
rounds of --reps replays; a candidate's time is the median of its rounds' medians, and the
key's noise the spread of the round medians (gdn_step: --reps samples of 20 replays of a
graph of steps). The default (the built-in heuristics' choice) is kept unless a challenger
beats it by more than --margin or the key's noise, whichever is larger; ties go to the
candidate listed first, so the choice is deterministic.

Route families tuned (--family): linear_exact (the decode path's GEMV for T <= 8: the
stream kernel's work split per weight format q4_g64 / q5_g64 / q6_g64 / q8_g32, column tile
and exact N, K) and gdn_step (the Gated DeltaNet decode step's tile per state type, lanes
bucket and HK, HV, dk, dv; models without GDN layers add no gdn_step keys) and attn_split
(the decode attention's split-K width per KV cache type, head layout and context bucket).
linear_a16 (opt-in: not in the default --family) is the bf16-activation tensor-core tile the
engine's --activations bf16 path takes for more than 32 tokens, per weight format, prefill
bucket of --prefill-tokens and exact N, K; it is timed as linear_exact is, at the bucket's T.

Examples:
  ninfer tune --synthetic qwen3.6-27b,qwen3.6-35b-a3b,smollm2-135m
  ninfer tune --model model.gguf --weights q4_g64,q8_g32 --out tuning/nvidia-h200.toml
  ninfer tune --synthetic qwen3.6-27b --family gdn_step --lanes 1,8
  ninfer tune --synthetic qwen3.6-27b --family linear_a16 --prefill-tokens 64,4096
  ninfer tune --synthetic smollm2-135m --dry-run       (what would be timed; no GPU needed)
  ninfer tune compare run1.toml run2.toml              (do two runs agree?)
  ninfer tune check                                    (which profile applies here, and why)
  ninfer tune stamp tuning/nvidia-h200.toml            (record each route's kernel sources)

A profile is made for one device and one template set. Each route it writes also records a
hash of the kernel sources its candidates rendered to (`sources`). A build whose templates
differ keeps the routes whose candidates render to the same sources (an edit to the GDN
templates leaves the GEMV splits' choices standing) and serves the others from the
heuristics, with a notice that counts them.";

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, after_long_help = TUNE_HELP)]
pub struct TuneArgs {
    #[command(subcommand)]
    pub command: Option<TuneCommand>,
    #[command(flatten)]
    pub run: TuneRunArgs,
}

#[derive(Debug, Subcommand)]
pub enum TuneCommand {
    /// Compare two profiles of one device (two tuning runs): do they pick the same winners
    /// where the choice is clear of the noise, and do run A's picks beat the heuristics in
    /// run B's measurements? Exit status 1 if not.
    Compare(CompareArgs),
    /// Say which tuning profile the engine would use on this GPU (or on a device described
    /// by --device-name, --cc, --sms and --nvrtc), or why it would use none. Exit status 1
    /// when no profile applies.
    Check(CheckArgs),
    /// Record in a profile, beside each route, a hash of the kernel sources its candidates
    /// render to in this build, so that a build with other templates keeps the routes whose
    /// candidates did not change. Only a profile made with this build's template set: the
    /// hash vouches for what was timed. Needs no GPU.
    Stamp(StampArgs),
}

#[derive(Debug, clap::Args)]
pub struct StampArgs {
    /// The profile to stamp (rewritten in place, atomically).
    pub profile: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct TuneRunArgs {
    /// A GGUF file or a Hugging Face model directory whose linear shapes to tune (repeat for
    /// several). Without --model, --synthetic or --shape: the default model, SmolLM2-135M.
    #[arg(long, value_name = "PATH")]
    pub model: Vec<PathBuf>,
    /// Synthetic models whose shapes to tune, comma-separated or repeated:
    /// qwen3.6-27b, qwen3.6-35b-a3b, smollm2-135m, qwen3.6-mini (shapes: --help).
    #[arg(long, value_name = "NAME,...", value_delimiter = ',', long_help = SHAPES_HELP)]
    pub synthetic: Vec<String>,
    /// More weight shapes to tune, as N x K (`--shape 17408x5120`), comma-separated or
    /// repeated.
    #[arg(long, value_name = "NxK,...", value_delimiter = ',')]
    pub shape: Vec<String>,
    /// Weight formats the linear layers are held in, comma-separated (as `--weights` of
    /// `ninfer run`; a layer whose width a format cannot take stays f32 and has nothing to
    /// tune).
    #[arg(
        long,
        value_name = "FORMAT,...",
        value_delimiter = ',',
        default_value = "q4_g64"
    )]
    pub weights: Vec<String>,
    /// Token counts to tune for, comma-separated; each stands for its bucket (1, 2, 3-4,
    /// 5-8). The linear_exact family serves up to 8 tokens.
    #[arg(
        long,
        value_name = "T,...",
        value_delimiter = ',',
        default_value = "1,2,4,8"
    )]
    pub tokens: Vec<usize>,
    /// Route families to tune, comma-separated: linear_exact, gdn_step, attn_split, and
    /// linear_a16 (opt-in: the prefill tile of --activations bf16; not in the default).
    #[arg(
        long,
        value_name = "FAMILY,...",
        value_delimiter = ',',
        default_value = "linear_exact,gdn_step,attn_split"
    )]
    pub family: Vec<String>,
    /// Token counts to tune the linear_a16 family for, comma-separated; each stands for its
    /// bucket (33-64, 65-256, 257-1024, more: 4096) and is timed at the bucket's upper bound.
    #[arg(
        long,
        value_name = "T,...",
        value_delimiter = ',',
        default_value = "64,256,1024,4096"
    )]
    pub prefill_tokens: Vec<usize>,
    /// KV cache capacities to tune the decode attention for, comma-separated; each stands
    /// for its bucket (the next power of two, at least 256), timed with three quarters of it
    /// live.
    #[arg(
        long,
        value_name = "KEYS,...",
        value_delimiter = ',',
        default_value = "512,4096,32768"
    )]
    pub contexts: Vec<usize>,
    /// KV cache types to tune the decode attention for, comma-separated: f32 (the default
    /// cache), bf16 (`--kv-bf16`).
    #[arg(
        long,
        value_name = "TYPE,...",
        value_delimiter = ',',
        default_value = "f32"
    )]
    pub kv: Vec<String>,
    /// Lanes (sequences decoding together) to tune the GDN decode step for, comma-separated;
    /// each stands for its bucket (1, 2, 3-4, 5-8, ...) and is timed at the bucket's upper
    /// bound.
    #[arg(
        long,
        value_name = "L,...",
        value_delimiter = ',',
        default_value = "1,2,4,8"
    )]
    pub lanes: Vec<usize>,
    /// GDN state storage types to tune, comma-separated: f32 (the default state), f16
    /// (`--gdn-state-fp16`).
    #[arg(
        long,
        value_name = "TYPE,...",
        value_delimiter = ',',
        default_value = "f32,f16"
    )]
    pub gdn_state: Vec<String>,
    /// The profile to write (merged with the routes already there for this device; a
    /// pinned profile is refused). Default: $NINFER_PROFILE_DIR/<device>.toml, else
    /// <cache>/tuning/<device>.toml, where the engine looks for it.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Timed replays per candidate and round (gdn_step: timed samples of 20 replays); the
    /// median is kept.
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub reps: usize,
    /// Interleaved rounds over each key's candidates (linear_exact, attn_split): the spread
    /// of the rounds' medians is the key's noise.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub rounds: usize,
    /// How much faster, in percent, a challenger must be to replace the default.
    #[arg(long, value_name = "PERCENT", default_value_t = 3.0)]
    pub margin: f64,
    /// Seed of the random weights and inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also write every candidate's timing and check, one JSON object per key and line.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// List the keys and candidates that would be timed, and stop (no GPU needed).
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The first run's profile (its picks are judged on the second run's timings).
    pub a: PathBuf,
    /// The second run's profile.
    pub b: PathBuf,
    /// The margin, in percent, both runs were tuned with.
    #[arg(long, value_name = "PERCENT", default_value_t = 3.0)]
    pub margin: f64,
    /// Also write the comparison as one JSON object to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The profile to check (default: search where the engine searches).
    pub profile: Option<PathBuf>,
    /// Check against a device described by hand instead of GPU 0: its CUDA name.
    #[arg(long, value_name = "NAME", requires_all = ["cc", "sms"])]
    pub device_name: Option<String>,
    /// The described device's compute capability, as MAJOR.MINOR.
    #[arg(long, value_name = "X.Y", requires = "device_name")]
    pub cc: Option<String>,
    /// The described device's SM count.
    #[arg(long, value_name = "N", requires = "device_name")]
    pub sms: Option<u32>,
    /// The NVRTC version, as MAJOR.MINOR (default: the NVRTC this process loads).
    #[arg(long, value_name = "X.Y")]
    pub nvrtc: Option<String>,
    /// The template-set hash (default: this build's templates).
    #[arg(long, value_name = "HEX")]
    pub template_hash: Option<String>,
}

pub fn run(args: &TuneArgs) -> Result<(), CliError> {
    match &args.command {
        Some(TuneCommand::Compare(a)) => compare_cmd(a),
        Some(TuneCommand::Check(a)) => check_cmd(a),
        Some(TuneCommand::Stamp(a)) => stamp_cmd(a),
        None => tune(&args.run),
    }
}

/// What to time: the jobs of each family, and a line per model about its shapes.
struct Plan {
    jobs: Vec<ExactJob>,
    a16_jobs: Vec<A16Job>,
    gdn_jobs: Vec<GdnJob>,
    attn_jobs: Vec<AttnJob>,
    notes: Vec<String>,
}

impl Plan {
    fn cells(&self) -> usize {
        self.jobs.iter().map(ExactJob::cells).sum::<usize>()
            + self.a16_jobs.iter().map(A16Job::cells).sum::<usize>()
            + self.gdn_jobs.iter().map(GdnJob::cells).sum::<usize>()
            + self.attn_jobs.iter().map(AttnJob::cells).sum::<usize>()
    }

    fn keys(&self) -> usize {
        self.jobs.iter().map(|j| j.tiles.len()).sum::<usize>()
            + self.a16_jobs.iter().map(|j| j.buckets.len()).sum::<usize>()
            + self.gdn_jobs.iter().map(|j| j.buckets.len()).sum::<usize>()
            + self
                .attn_jobs
                .iter()
                .map(|j| j.contexts.len())
                .sum::<usize>()
    }
}

/// The families `--family` names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Families {
    linear: bool,
    a16: bool,
    gdn_step: bool,
    attn_split: bool,
}

/// The families `--family` names, checked.
fn families_for(names: &[String]) -> Result<Families, CliError> {
    let mut f = Families::default();
    for name in names {
        match name.trim() {
            n if n == exact::FAMILY => f.linear = true,
            n if n == a16::FAMILY => f.a16 = true,
            n if n == gdn::FAMILY => f.gdn_step = true,
            n if n == attn::FAMILY => f.attn_split = true,
            other => {
                return Err(CliError::usage(format!(
                    "--family {other}: the tuned families are {}, {}, {} and {}",
                    exact::FAMILY,
                    a16::FAMILY,
                    gdn::FAMILY,
                    attn::FAMILY
                )))
            }
        }
    }
    Ok(f)
}

/// The distinct buckets `bucket` maps `values` to, sorted; `refuse` says why a value is
/// out of range (a usage error), or nothing where it is fine.
fn distinct_buckets<B: Ord + Copy>(
    values: &[usize],
    refuse: impl Fn(usize) -> Option<String>,
    bucket: impl Fn(usize) -> B,
) -> Result<Vec<B>, CliError> {
    let mut v: Vec<B> = Vec::new();
    for &x in values {
        if let Some(why) = refuse(x) {
            return Err(CliError::usage(why));
        }
        let b = bucket(x);
        if !v.contains(&b) {
            v.push(b);
        }
    }
    v.sort();
    Ok(v)
}

/// The distinct members of `all` whose `short` name is one of `names`, in the order named;
/// `unknown` is the usage error for a name that is none of them.
fn named<T: Copy + PartialEq>(
    names: &[String],
    all: &[T],
    short: impl Fn(&T) -> &'static str,
    unknown: impl Fn(&str) -> String,
) -> Result<Vec<T>, CliError> {
    let mut v: Vec<T> = Vec::new();
    for name in names {
        let x = *all
            .iter()
            .find(|x| short(x) == name.trim())
            .ok_or_else(|| CliError::usage(unknown(name)))?;
        if !v.contains(&x) {
            v.push(x);
        }
    }
    Ok(v)
}

/// The linear_a16 buckets `--prefill-tokens` names, sorted.
fn prefill_buckets(tokens: &[usize]) -> Result<Vec<u32>, CliError> {
    let refuse = |t: usize| {
        (t < a16::MIN_T).then(|| format!(
            "--prefill-tokens {t}: the linear_a16 family serves {} tokens or more (fewer go through other kernels)",
            a16::MIN_T
        ))
    };
    distinct_buckets(tokens, refuse, a16::bucket)
}

/// The context buckets `--contexts` names, sorted.
fn context_buckets(contexts: &[usize]) -> Result<Vec<usize>, CliError> {
    let refuse = |c: usize| {
        (c == 0 || c > 1 << 20)
            .then(|| format!("--contexts {c}: give cache capacities from 1 to 1048576 keys"))
    };
    distinct_buckets(contexts, refuse, attn::ctx_bucket)
}

fn kv_types(names: &[String]) -> Result<Vec<KvType>, CliError> {
    named(
        names,
        &KvType::ALL,
        |k| k.short(),
        |name| format!("--kv {name}: the KV cache types are f32 and bf16"),
    )
}

/// The lanes buckets `--lanes` names, sorted.
fn lanes_buckets(lanes: &[usize]) -> Result<Vec<u32>, CliError> {
    let refuse = |l: usize| {
        (l == 0 || l > 64).then(|| format!("--lanes {l}: give lane counts from 1 to 64"))
    };
    distinct_buckets(lanes, refuse, crate::tune::t_bucket)
}

fn gdn_states(names: &[String]) -> Result<Vec<StateType>, CliError> {
    named(
        names,
        &StateType::ALL,
        |s| s.short(),
        |name| format!("--gdn-state {name}: the state types are f32 and f16"),
    )
}

fn parse_shape(s: &str) -> Result<(usize, usize), CliError> {
    let bad = || {
        CliError::usage(format!(
            "--shape {s}: give N x K as two numbers, e.g. 17408x5120"
        ))
    };
    let (n, k) = s.trim().split_once(['x', 'X']).ok_or_else(bad)?;
    let (n, k) = (n.trim().parse::<usize>(), k.trim().parse::<usize>());
    match (n, k) {
        (Ok(n), Ok(k)) if n > 0 && k > 0 => Ok((n, k)),
        _ => Err(bad()),
    }
}

fn tiles_for(tokens: &[usize]) -> Result<Vec<u32>, CliError> {
    let refuse = |t: usize| {
        (t == 0 || t > 8).then(|| format!(
            "--tokens {t}: the tuned routes serve 1 to 8 tokens (more go through the tiled sgemm route)"
        ))
    };
    distinct_buckets(tokens, refuse, |t| (t as u32).next_power_of_two())
}

fn tunable_formats() -> String {
    crate::formats::registry()
        .iter()
        .filter(|f| exact::tunable(f))
        .map(|f| f.name.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

fn plan(args: &TuneRunArgs) -> Result<Plan, CliError> {
    if args.reps < 3 {
        return Err(CliError::usage("--reps must be at least 3"));
    }
    if args.rounds == 0 {
        return Err(CliError::usage("--rounds must be at least 1"));
    }
    if !(0.0..50.0).contains(&args.margin) {
        return Err(CliError::usage("--margin is a percentage from 0 to 50"));
    }
    let Families {
        linear,
        a16: a16_on,
        gdn_step,
        attn_split,
    } = families_for(&args.family)?;
    let prefill = prefill_buckets(&args.prefill_tokens)?;
    let contexts = context_buckets(&args.contexts)?;
    let kvs = kv_types(&args.kv)?;
    let tiles = tiles_for(&args.tokens)?;
    let buckets = lanes_buckets(&args.lanes)?;
    let states = gdn_states(&args.gdn_state)?;
    let mut formats: Vec<&'static Format> = Vec::new();
    for name in args.weights.iter().filter(|_| linear || a16_on) {
        let f =
            crate::formats::format(name).map_err(|e| CliError::usage(format!("--weights: {e}")))?;
        if linear && !exact::tunable(f) {
            return Err(CliError::usage(format!(
                "--weights {name}: no tuned route serves {name} (the formats with candidates: {})",
                tunable_formats()
            )));
        }
        if !formats.iter().any(|g| g.name == f.name) {
            formats.push(f);
        }
    }
    let mut locations: Vec<ModelLocation> = Vec::new();
    for p in &args.model {
        locations.push(
            crate::model::resolve_model(Some(p)).map_err(|e| CliError::usage(e.to_string()))?,
        );
    }
    for name in &args.synthetic {
        locations.push(ModelLocation::synthetic(name.trim(), 0));
    }
    let extra: Vec<(usize, usize)> = args
        .shape
        .iter()
        .map(|s| parse_shape(s))
        .collect::<Result<_, _>>()?;
    if locations.is_empty() && extra.is_empty() {
        locations
            .push(crate::model::resolve_model(None).map_err(|e| CliError::usage(e.to_string()))?);
    }
    // (format, N, K) -> job; BTreeMap for a stable order.
    let mut wanted: BTreeMap<(String, usize, usize), &'static Format> = BTreeMap::new();
    let mut wanted_a16: BTreeMap<(String, usize, usize), &'static Format> = BTreeMap::new();
    let mut notes = Vec::new();
    let mut gdn_jobs: Vec<GdnJob> = Vec::new();
    let mut attn_jobs: Vec<AttnJob> = Vec::new();
    let mut add = |label: &str, list: &[(usize, usize)], notes: &mut Vec<String>| {
        for &f in &formats {
            let mut kept = 0;
            let mut f32_layers = 0;
            let mut a16_kept = 0;
            for &(n, k) in list {
                let held = crate::bench::model::held_format(f, k);
                let layout_ok = crate::formats::Layout::new(held, n, k).is_ok();
                if a16_on && layout_ok && a16::tunable(n, k) {
                    wanted_a16.insert((held.name.clone(), n, k), held);
                    a16_kept += 1;
                }
                if !linear {
                    continue;
                }
                if exact::tunable(held) && layout_ok {
                    wanted.insert((held.name.clone(), n, k), held);
                    kept += 1;
                } else {
                    f32_layers += 1;
                }
            }
            if a16_on {
                notes.push(format!(
                    "{label}: {a16_kept} linear shapes for {} in {}",
                    a16::FAMILY,
                    f.name
                ));
            }
            if !linear {
                continue;
            }
            notes.push(format!(
                "{label}: {kept} linear shapes in {}{}",
                f.name,
                if f32_layers > 0 {
                    format!(
                        " ({f32_layers} more stay f32: their width is not a multiple of its group)"
                    )
                } else {
                    String::new()
                }
            ));
        }
    };
    for loc in &locations {
        let files = crate::model::open_model(loc).map_err(|e| CliError::usage(e.to_string()))?;
        let label = loc.path().display().to_string();
        let list = shapes::linear_shapes(&files);
        add(&label, &list, &mut notes);
        for d in shapes::attn_dims(&files).into_iter().filter(|_| attn_split) {
            if !attn::tunable(&d) {
                notes.push(format!(
                    "{label}: its attention layers ({}) have no attn_split candidates",
                    d.describe()
                ));
                continue;
            }
            notes.push(format!("{label}: attention layers {}", d.describe()));
            for &kv in &kvs {
                if !attn_jobs.iter().any(|j| j.dims == d && j.kv == kv) {
                    attn_jobs.push(AttnJob {
                        kv,
                        dims: d,
                        contexts: contexts.clone(),
                    });
                }
            }
        }
        if !gdn_step {
            continue;
        }
        for d in shapes::gdn_dims(&files) {
            if !gdn::tunable(&d) {
                notes.push(format!(
                    "{label}: its GDN layers ({}, conv width {}) have no gdn_step candidates",
                    d.describe(),
                    d.kc
                ));
                continue;
            }
            notes.push(format!("{label}: GDN layers {}", d.describe()));
            for &state in &states {
                if !gdn_jobs.iter().any(|j| j.dims == d && j.state == state) {
                    gdn_jobs.push(GdnJob {
                        state,
                        dims: d,
                        buckets: buckets.clone(),
                    });
                }
            }
        }
    }
    if !extra.is_empty() {
        add("--shape", &extra, &mut notes);
    }
    let jobs: Vec<ExactJob> = wanted
        .into_iter()
        .map(|((_, n, k), format)| ExactJob {
            format,
            n,
            k,
            tiles: tiles.clone(),
        })
        .collect();
    let a16_jobs: Vec<A16Job> = wanted_a16
        .into_iter()
        .map(|((_, n, k), format)| A16Job {
            format,
            n,
            k,
            buckets: prefill.clone(),
        })
        .collect();
    if jobs.is_empty() && a16_jobs.is_empty() && gdn_jobs.is_empty() && attn_jobs.is_empty() {
        return Err(CliError::usage(if linear || a16_on {
            "no linear layer of these models can be held in the formats asked for, and they have no GDN layer to tune, so there is nothing to tune; try another --weights"
        } else {
            "these models have no GDN layer, so --family gdn_step has nothing to tune"
        }));
    }
    Ok(Plan {
        jobs,
        a16_jobs,
        gdn_jobs,
        attn_jobs,
        notes,
    })
}

fn tune(args: &TuneRunArgs) -> Result<(), CliError> {
    let plan = plan(args)?;
    let (cells, keys) = (plan.cells(), plan.keys());
    for n in &plan.notes {
        eprintln!("{n}");
    }
    if args.dry_run {
        println!("{:<44}  {:>10}  default", "key", "candidates");
        for job in &plan.jobs {
            for &tt in &job.tiles {
                let c = exact::candidates(job.format, tt);
                println!(
                    "{:<44}  {:>10}  {}",
                    exact::key(job.format, tt, job.n, job.k).to_string(),
                    c.len(),
                    exact::short(&c[0])
                );
            }
        }
        for job in &plan.a16_jobs {
            let c = a16::candidates(job.format);
            for key in job.keys() {
                println!("{:<44}  {:>10}  {}", key, c.len(), a16::short(&c[0]));
            }
        }
        for job in &plan.gdn_jobs {
            for &b in &job.buckets {
                let c = gdn::candidates(job.state, &job.dims, b as usize);
                println!(
                    "{:<44}  {:>10}  {}",
                    gdn::key(job.state, &job.dims, b as usize).to_string(),
                    c.len(),
                    gdn::short(&c[0])
                );
            }
        }
        for job in &plan.attn_jobs {
            let c = attn::candidates(job.kv, &job.dims);
            for key in job.keys() {
                println!("{:<44}  {:>10}  {}", key, c.len(), attn::short(&c[0]));
            }
        }
        let gdn_note = match plan.gdn_jobs.is_empty() {
            true => String::new(),
            false => format!(
                "; a gdn_step candidate: {} samples of {BATCH} replays of a graph of steps",
                args.reps + 1
            ),
        };
        println!(
            "{keys} keys, {cells} candidates to qualify and time ({} rounds of {} graph replays each{gdn_note})",
            args.rounds,
            args.reps + 1,
        );
        return Ok(());
    }
    if let Some(out) = &args.out {
        refuse_pinned(out)?; // before the GPU is opened and anything is timed
    }
    let gpu = match Gpu::open(0) {
        Ok(g) => g,
        Err(e @ (GpuError::NoDriver | GpuError::NoDevice)) => {
            return Err(CliError::usage(format!(
                "`ninfer tune` times kernels on a GPU, and {e} (--dry-run lists what it would time without one)"
            )))
        }
        Err(e) => return Err(e.into()),
    };
    let fp = Fingerprint::of_device(gpu.props()).map_err(CliError::failed)?;
    let out = match &args.out {
        Some(p) => p.clone(),
        None => default_profile_path(&fp).ok_or_else(|| {
            CliError::usage("there is no cache folder for the profile; give --out PATH")
        })?,
    };
    refuse_pinned(&out)?;
    match Profile::load(&out) {
        Ok(p) if same_device_other_templates(&p.device.fingerprint(), &fp) => eprintln!(
            "note: {} holds a profile of this device made with another template set; \
             the routes this run does not re-time are kept where their kernel sources are unchanged",
            out.display(),
        ),
        Ok(p) if p.device.id != fp.id() => eprintln!(
            "note: {} holds a profile for {}; it will be replaced",
            out.display(),
            describe(&p.device.fingerprint())
        ),
        _ => {}
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError::failed(format!("cannot create the folder {}: {e}", dir.display()))
        })?;
    }
    eprintln!(
        "tuning {keys} keys ({cells} candidates) on {}, fingerprint {}",
        describe(&fp),
        fp.id()
    );
    prebuild(&plan, gpu.props().arch());
    let opts = TuneOptions {
        reps: args.reps,
        rounds: args.rounds,
        margin: args.margin / 100.0,
        seed: args.seed,
    };
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(cells as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "[{bar:30}] {pos}/{len} candidates  {msg}  [{elapsed_precise} < {eta_precise}]",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let started = std::time::Instant::now();
    let mut results: Vec<KeyResult> = Vec::new();
    for job in &plan.jobs {
        let r = measure::tune_exact(&gpu, job, &opts, |key, split| {
            bar.set_message(format!("{key} {split}"));
            bar.inc(1);
        });
        results.extend(r.map_err(|e| stopped(&bar, &job.keys(), e))?);
    }
    for job in &plan.a16_jobs {
        let r = measure_a16::tune_a16(&gpu, job, &opts, |key, tile| {
            bar.set_message(format!("{key} {tile}"));
            bar.inc(1);
        });
        results.extend(r.map_err(|e| stopped(&bar, &job.keys(), e))?);
    }
    for job in &plan.gdn_jobs {
        let r = measure_gdn::tune_gdn(&gpu, job, &opts, |key, tile| {
            bar.set_message(format!("{key} {tile}"));
            bar.inc(1);
        });
        results.extend(r.map_err(|e| stopped(&bar, &job.keys(), e))?);
    }
    for job in &plan.attn_jobs {
        let r = measure_attn::tune_attn(&gpu, job, &opts, |key, split| {
            bar.set_message(format!("{key} {split}"));
            bar.inc(1);
        });
        results.extend(r.map_err(|e| stopped(&bar, &job.keys(), e))?);
    }
    bar.finish_and_clear();
    let mut profile = Profile::new(&fp);
    for r in &results {
        profile.set_route(r.route());
    }
    let carried = profile
        .save_merged_carrying(&out, &current_sources)
        .map_err(|e| CliError::failed(e.to_string()))?;
    if carried > 0 {
        let routes = if carried == 1 { "route" } else { "routes" };
        eprintln!(
            "kept {carried} {routes} of the earlier profile made with another template set (their kernel sources are unchanged)"
        );
    }
    if let Some(path) = &args.json {
        write_json_lines(path, &results)?;
    }
    print!("{}", summary_table(&results));
    let changed = results.iter().filter(|r| r.winner != r.default).count();
    let failed: Vec<String> = results
        .iter()
        .flat_map(|r| {
            r.candidates.iter().filter_map(move |c| {
                c.failure
                    .as_ref()
                    .map(|f| format!("{} {}: {f}", r.key, c.split))
            })
        })
        .collect();
    for f in &failed {
        eprintln!("not timed: {f}");
    }
    let per_family: Vec<String> = [exact::FAMILY, a16::FAMILY, gdn::FAMILY, attn::FAMILY]
        .iter()
        .filter_map(|f| {
            let of: Vec<&KeyResult> = results.iter().filter(|r| r.family == *f).collect();
            let changed = of.iter().filter(|r| r.winner != r.default).count();
            (!of.is_empty()).then(|| format!("{f} {} ({changed} changed)", of.len()))
        })
        .collect();
    println!("{}", noise_line(&results));
    println!(
        "{} keys tuned in {:.0} s ({}): {changed} take a challenger, {} keep the default; {} candidates failed; wrote {}",
        results.len(),
        started.elapsed().as_secs_f64(),
        per_family.join(", "),
        results.len() - changed,
        failed.len(),
        out.display()
    );
    let dirs = search_dirs();
    if let Some(first) = shadowing_profile(&fp, &out, &dirs) {
        eprintln!(
            "note: the engine will take {} first (it also matches this device and is found \
             earlier in {}); run with --profile {} or remove the other",
            first.display(),
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            out.display()
        );
    }
    Ok(())
}

/// The profile the engine's search of `dirs` would take on this device instead of `written`,
/// where one is found first (`None`: it takes `written`, or `written` lies outside them).
fn shadowing_profile(fp: &Fingerprint, written: &Path, dirs: &[PathBuf]) -> Option<PathBuf> {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let dir = written.parent().map(canon)?;
    if !dirs.iter().any(|d| canon(d) == dir) {
        return None;
    }
    let resolved = resolve(fp, &ProfileRequest::Search, dirs);
    let origin = resolved.table.origin()?;
    (canon(origin) != canon(written)).then(|| origin.to_path_buf())
}

/// A usage error where `path` holds a pinned profile (`pinned = true`): it is never re-tuned.
/// The error that ends a tuning run whose job for `keys` failed (nothing is written).
fn stopped(bar: &ProgressBar, keys: &[String], e: impl std::fmt::Display) -> CliError {
    bar.abandon();
    CliError::failed(format!(
        "tuning {} stopped ({e}); nothing was written",
        keys.join(", ")
    ))
}

fn refuse_pinned(path: &Path) -> Result<(), CliError> {
    match Profile::load(path) {
        Ok(p) if p.pinned => Err(CliError::usage(
            ProfileError::Pinned {
                path: path.to_path_buf(),
            }
            .to_string(),
        )),
        _ => Ok(()),
    }
}

/// Compiles every candidate kernel in parallel before any is timed (one at a time as the
/// timing reaches it would leave the other cores idle). A kernel that does not build fails
/// its candidate later, with the compiler's message.
fn prebuild(plan: &Plan, arch: crate::jit::Arch) {
    use rayon::prelude::*;
    let Ok(jit) = crate::jit::Jit::global() else {
        return;
    };
    let mut specs: Vec<crate::jit::KernelSpec> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for job in &plan.jobs {
        for &tt in &job.tiles {
            for r in exact::candidates(job.format, tt) {
                let spec = r.spec();
                if seen.insert(spec.entry.clone()) {
                    specs.push(spec);
                }
            }
        }
    }
    for job in &plan.a16_jobs {
        for r in a16::candidates(job.format) {
            let spec = r.spec();
            if seen.insert(spec.entry.clone()) {
                specs.push(spec);
            }
        }
    }
    for job in &plan.gdn_jobs {
        for &b in &job.buckets {
            for r in gdn::candidates(job.state, &job.dims, b as usize) {
                let spec = r.spec();
                if seen.insert(spec.entry.clone()) {
                    specs.push(spec);
                }
            }
        }
    }
    for job in &plan.attn_jobs {
        for r in attn::candidates(job.kv, &job.dims) {
            let spec = r.spec();
            if seen.insert(spec.entry.clone()) {
                specs.push(spec);
            }
        }
    }
    eprintln!("building {} candidate kernels...", specs.len());
    specs.par_iter().for_each(|s| {
        let _ = jit.cubin(s, arch);
    });
}

fn write_json_lines(path: &Path, results: &[KeyResult]) -> Result<(), CliError> {
    let mut text = String::new();
    for r in results {
        text.push_str(&serde_json::to_string(r).expect("results serialise"));
        text.push('\n');
    }
    std::fs::write(path, text)
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))
}

fn us(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2}"))
        .unwrap_or_else(|| "failed".into())
}

/// The table printed at the end of a tuning run: per key, the default and the winner.
pub fn summary_table(results: &[KeyResult]) -> String {
    let mut s = format!(
        "{:<44}  {:<16}  {:>9}  {:<16}  {:>9}  {:>7}  {:>6}  {:>6}\n",
        "key", "default", "us", "tuned", "us", "gain", "noise", "passed"
    );
    for r in results {
        let (d, w) = (&r.candidates[r.default], &r.candidates[r.winner]);
        let passed = r
            .candidates
            .iter()
            .filter(|c| c.median_us.is_some())
            .count();
        s.push_str(&format!(
            "{:<44}  {:<16}  {:>9}  {:<16}  {:>9}  {:>7}  {:>6}  {:>6}\n",
            r.key,
            d.split,
            us(d.median_us),
            if r.winner == r.default { "=" } else { &w.split },
            us(w.median_us),
            r.gain()
                .map(|g| format!("{:.1}%", g * 100.0))
                .unwrap_or_else(|| "-".into()),
            format!("{:.1}%", r.noise * 100.0),
            format!("{passed}/{}", r.candidates.len()),
        ));
    }
    s
}

/// Per family: its keys' median and largest noise (the spread each key's winner had to
/// clear, where larger than the margin).
pub fn noise_line(results: &[KeyResult]) -> String {
    let mut parts = Vec::new();
    for f in [exact::FAMILY, a16::FAMILY, gdn::FAMILY, attn::FAMILY] {
        let mut v: Vec<f64> = results
            .iter()
            .filter(|r| r.family == f)
            .map(|r| r.noise)
            .collect();
        if v.is_empty() {
            continue;
        }
        let max = v.iter().cloned().fold(0.0, f64::max);
        let med = crate::bench::median(&mut v);
        parts.push(format!(
            "{f} median {:.1}%, max {:.1}%",
            med * 100.0,
            max * 100.0
        ));
    }
    format!("noise per key: {}", parts.join("; "))
}

fn load(path: &Path) -> Result<Profile, CliError> {
    Profile::load(path).map_err(|e| CliError::usage(e.to_string()))
}

fn compare_cmd(args: &CompareArgs) -> Result<(), CliError> {
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    if a.device.id != b.device.id {
        return Err(CliError::usage(format!(
            "{} is for {} and {} is for {}: compare two runs on one device and template set",
            args.a.display(),
            describe(&a.device.fingerprint()),
            args.b.display(),
            describe(&b.device.fingerprint())
        )));
    }
    let c = compare::compare(&a, &b, args.margin / 100.0);
    if c.keys.is_empty() {
        return Err(CliError::usage(format!(
            "{} and {} have no key in common",
            args.a.display(),
            args.b.display()
        )));
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:<44}  {:>9}  {:>9}  {:>7}  {:<16}  {:<16}  verdict",
        "key", "heur us", "tuned us", "gain", "pick A", "pick B"
    );
    for k in &c.keys {
        let pick = |e: &str| {
            if e == k.default_entry {
                "=".to_string()
            } else {
                split_part(e).to_string()
            }
        };
        let _ = writeln!(
            out,
            "{:<44}  {:>9}  {:>9}  {:>7}  {:<16}  {:<16}  {}",
            k.key,
            us(k.default_us_b),
            us(k.pick_a_us_b),
            k.gain_b
                .map(|g| format!("{:.1}%", g * 100.0))
                .unwrap_or_else(|| "-".into()),
            pick(&k.pick_a),
            pick(&k.pick_b),
            match k.verdict {
                Verdict::Same => "same",
                Verdict::WithinNoise => "differ, within noise",
                Verdict::Disagree => "DIFFER beyond noise",
                Verdict::Unknown => "differ (no times)",
            }
        );
    }
    let _ = writeln!(
        out,
        "(heur us: run B's median of the heuristics' route; tuned us: run B's median of the route run A picked; gain: the time that saves)"
    );
    let slower = c.slower_beyond_noise();
    let (same, within, disagree, unknown) = (
        c.count(Verdict::Same),
        c.count(Verdict::WithinNoise),
        c.count(Verdict::Disagree),
        c.count(Verdict::Unknown),
    );
    if c.families.len() > 1 {
        for f in &c.families {
            let of = |v: Verdict| {
                c.keys
                    .iter()
                    .filter(|k| k.family == f.family && k.verdict == v)
                    .count()
            };
            let slower = slower.iter().filter(|k| k.family == f.family).count();
            let _ = writeln!(
                out,
                "{}: {} keys; noise {:.2}% (90th percentile of {} relative timings); same winner {}, different within the noise {}, different beyond it {}; slower than the heuristics beyond the noise: {slower}",
                f.family,
                f.keys,
                f.noise * 100.0,
                f.samples,
                of(Verdict::Same),
                of(Verdict::WithinNoise),
                of(Verdict::Disagree),
            );
        }
    }
    let noise = match c.families.as_slice() {
        [one] => format!(
            "noise {:.2}% (90th percentile of {} relative timings)",
            one.noise * 100.0,
            one.samples
        ),
        _ => "noise per family as above".to_string(),
    };
    let _ = writeln!(
        out,
        "{} keys in both ({} only in A, {} only in B); {noise}; same winner {same}, different within the noise {within}, different beyond it {disagree}{}; A's picks slower than the heuristics in B's timings beyond the noise: {}",
        c.keys.len(),
        c.only_a,
        c.only_b,
        if unknown > 0 {
            format!(", without times {unknown}")
        } else {
            String::new()
        },
        slower.len()
    );
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&c).expect("comparison serialises");
        std::fs::write(path, text + "\n")
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    }
    if disagree > 0 || !slower.is_empty() {
        return Err(CliError::failed(format!(
            "the runs disagree beyond the noise at {disagree} keys and run A's pick is slower than the heuristics at {} keys",
            slower.len()
        )));
    }
    Ok(())
}

fn parse_version(flag: &str, s: &str) -> Result<(u32, u32), CliError> {
    let bad = || CliError::usage(format!("{flag} {s}: give MAJOR.MINOR, e.g. 9.0"));
    let (a, b) = s.trim().split_once('.').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}

/// The fingerprint `check` judges against: described by flags, else GPU 0's.
fn check_fingerprint(args: &CheckArgs) -> Result<Fingerprint, CliError> {
    let templates = match &args.template_hash {
        Some(h) => h.clone(),
        None => crate::tune::fingerprint::template_set_hash().map_err(CliError::failed)?,
    };
    let nvrtc = match &args.nvrtc {
        Some(v) => {
            let (a, b) = parse_version("--nvrtc", v)?;
            Some((a as i32, b as i32))
        }
        None => crate::jit::nvrtc::version().ok(),
    };
    if let Some(name) = &args.device_name {
        let cc = parse_version("--cc", args.cc.as_deref().unwrap_or_default())?;
        let nvrtc = nvrtc.ok_or_else(|| {
            CliError::usage("NVRTC cannot be loaded here, so give its version with --nvrtc X.Y")
        })?;
        return Ok(Fingerprint {
            name: name.clone(),
            compute_capability: cc,
            sm_count: args.sms.unwrap_or_default(),
            nvrtc_version: nvrtc,
            template_set_hash: templates,
        });
    }
    let devices = match crate::gpu::list_devices() {
        Ok(d) if !d.is_empty() => d,
        Ok(_) | Err(GpuError::NoDriver | GpuError::NoDevice) => {
            return Err(CliError::usage(
                "this machine has no GPU to check against; describe one with --device-name, --cc and --sms (and --nvrtc where NVRTC is not installed)",
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let props = &devices[0];
    let nvrtc = nvrtc.or(props.nvrtc_version).ok_or_else(|| {
        CliError::failed(
            "NVRTC is not available, so this GPU runs no kernel (give --nvrtc to check anyway)",
        )
    })?;
    Ok(Fingerprint::of(props, nvrtc, &templates))
}

fn check_cmd(args: &CheckArgs) -> Result<(), CliError> {
    let fp = check_fingerprint(args)?;
    println!("device: {}, fingerprint {}", describe(&fp), fp.id());
    let dirs = search_dirs();
    let request = match &args.profile {
        Some(p) => ProfileRequest::Path(p.clone()),
        None => {
            let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            println!("searched: {}", list.join(", "));
            ProfileRequest::Search
        }
    };
    let resolved = resolve(&fp, &request, &dirs);
    if let Some(n) = &resolved.notice {
        eprintln!("note: {n}");
    }
    match resolved.table.origin() {
        Some(_) => {
            println!("uses {}", resolved.table.describe());
            let by_family: Vec<String> = resolved
                .table
                .family_counts()
                .iter()
                .map(|(f, n)| format!("{f} {n}"))
                .collect();
            if !by_family.is_empty() {
                println!("routes by family: {}", by_family.join(", "));
            }
            Ok(())
        }
        None => {
            println!("uses the built-in heuristics");
            Err(CliError::failed("no tuning profile applies to this device"))
        }
    }
}

fn stamp_cmd(args: &StampArgs) -> Result<(), CliError> {
    let path = &args.profile;
    let mut profile = Profile::load(path).map_err(|e| match e {
        ProfileError::Missing { .. } => CliError::usage(e.to_string()),
        e => CliError::failed(e.to_string()),
    })?;
    let here = crate::tune::fingerprint::template_set_hash().map_err(CliError::failed)?;
    if profile.device.template_set_hash != here {
        return Err(CliError::failed(format!(
            "{} was timed on template set {}..., this build's is {}...: stamping would vouch \
             for kernel sources that were not timed (stamp it with the build that made it, or \
             re-run `ninfer tune`)",
            path.display(),
            short_hash(&profile.device.template_set_hash),
            short_hash(&here)
        )));
    }
    let stamped = profile.stamp(&crate::tune::sources::stamp_for);
    profile
        .save(path)
        .map_err(|e| CliError::failed(e.to_string()))?;
    let total = profile.routes.len();
    println!(
        "stamped {stamped} of {total} routes of {}{}",
        path.display(),
        match total - stamped {
            0 => String::new(),
            n => format!(
                " ({n} not: their key has no candidates in this build, or not the ones they \
                 record)"
            ),
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_tokens_parse() {
        assert_eq!(parse_shape("17408x5120").unwrap(), (17408, 5120));
        assert_eq!(parse_shape(" 3 X 4 ").unwrap(), (3, 4));
        for bad in ["17408", "x5120", "0x4", "ax4"] {
            let e = parse_shape(bad).unwrap_err();
            assert_eq!(e.code, 2, "{bad}");
        }
        assert_eq!(tiles_for(&[1, 3, 4, 5, 8, 1]).unwrap(), vec![1, 4, 8]);
        assert!(tiles_for(&[9]).unwrap_err().message.contains("1 to 8"));
        assert!(tiles_for(&[0]).is_err());
    }

    #[test]
    fn families_lanes_and_states_parse() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let fam = |l, a, g, t| Families {
            linear: l,
            a16: a,
            gdn_step: g,
            attn_split: t,
        };
        assert_eq!(
            families_for(&s(&["linear_exact", "gdn_step"])).unwrap(),
            fam(true, false, true, false)
        );
        assert_eq!(
            families_for(&s(&["gdn_step"])).unwrap(),
            fam(false, false, true, false)
        );
        assert_eq!(
            families_for(&s(&["attn_split"])).unwrap(),
            fam(false, false, false, true)
        );
        assert_eq!(
            families_for(&s(&["linear_a16"])).unwrap(),
            fam(false, true, false, false)
        );
        assert_eq!(
            prefill_buckets(&[4096, 33, 64, 100, 9000]).unwrap(),
            vec![64, 256, 4096]
        );
        assert!(prefill_buckets(&[32])
            .unwrap_err()
            .message
            .contains("33 tokens or more"));
        assert_eq!(
            context_buckets(&[4096, 300, 512, 1]).unwrap(),
            vec![256, 512, 4096]
        );
        assert!(context_buckets(&[0]).is_err());
        assert_eq!(
            kv_types(&s(&["bf16", "f32", "bf16"])).unwrap(),
            vec![KvType::Bf16, KvType::F32]
        );
        assert!(kv_types(&s(&["f16"])).is_err());
        assert!(families_for(&s(&["attention"]))
            .unwrap_err()
            .message
            .contains("--family"));
        assert_eq!(lanes_buckets(&[8, 1, 3, 4, 6]).unwrap(), vec![1, 4, 8]);
        assert!(lanes_buckets(&[0]).is_err() && lanes_buckets(&[65]).is_err());
        assert_eq!(
            gdn_states(&s(&["f16", "f32", "f16"])).unwrap(),
            vec![StateType::F16, StateType::F32]
        );
        assert!(gdn_states(&s(&["bf16"])).is_err());
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("--cc", "9.0").unwrap(), (9, 0));
        assert_eq!(parse_version("--cc", "12.1").unwrap(), (12, 1));
        assert!(parse_version("--cc", "9").is_err());
        assert!(parse_version("--cc", "a.b").is_err());
    }

    /// `ninfer tune stamp`: a route whose candidates are the ones this build offers gets
    /// their sources hash; one that records another candidate count gets none; a profile of
    /// another template set is refused and left as it was.
    #[test]
    fn stamp_records_sources_only_for_what_was_timed() {
        let here = crate::tune::fingerprint::template_set_hash().unwrap();
        let fp = Fingerprint {
            name: "NVIDIA H200".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            nvrtc_version: (13, 0),
            template_set_hash: here,
        };
        let q4 = crate::formats::format("q4_g64").unwrap();
        let cands = exact::candidates(q4, 1);
        let route = |key: String, candidates: usize| crate::tune::Route {
            key,
            entry: cands[1].spec().entry,
            median_us: 1.0,
            default_entry: cands[0].spec().entry,
            default_us: 2.0,
            candidates: candidates as u32,
            times_us: Vec::new(),
            sources: None,
        };
        let good = exact::key(q4, 1, 17408, 5120);
        let stale = exact::key(q4, 1, 5120, 17408);
        let mut p = Profile::new(&fp);
        p.set_route(route(good.to_string(), cands.len()));
        p.set_route(route(stale.to_string(), cands.len() + 1));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        p.save(&path).unwrap();
        stamp_cmd(&StampArgs {
            profile: path.clone(),
        })
        .unwrap();
        let back = Profile::load(&path).unwrap();
        let jit = crate::jit::Jit::global().unwrap();
        let of = |k: &crate::tune::ShapeKey| {
            back.routes
                .iter()
                .find(|r| r.key == k.to_string())
                .unwrap()
                .sources
                .clone()
        };
        assert_eq!(of(&good), crate::tune::sources::sources_hash(jit, &good));
        assert!(of(&good).is_some());
        assert_eq!(of(&stale), None);
        // Another template set: refused, the file untouched.
        let mut other = back.clone();
        other.device.template_set_hash = "0123456789abcdef".into();
        other.routes.iter_mut().for_each(|r| r.sources = None);
        other.save(&path).unwrap();
        let before = std::fs::read_to_string(&path).unwrap();
        let e = stamp_cmd(&StampArgs {
            profile: path.clone(),
        })
        .unwrap_err();
        assert_eq!(e.code, 1);
        assert!(e.message.contains("would vouch"), "{}", e.message);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
        let e = stamp_cmd(&StampArgs {
            profile: dir.path().join("none.toml"),
        })
        .unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
    }
}
