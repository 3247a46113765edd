//! Timing the candidates of the `linear_a16` route family on the device, as `linear_exact`'s
//! are ([`super::measure`]): each tile is first qualified at the key's shape and the bucket's
//! T (and a partial tile below it) against the f64 host reference with poisoned outputs and
//! fresh random inputs (as `ops::linear`'s qualification, the bf16 allowance); one that fails counts as
//! infinitely slow. The others are captured as a CUDA graph of launches back to back, each on
//! the next of rotating copies of a random weight that together exceed twice the L2, and
//! replayed in interleaved rounds ([`time_graphs`]).

use rand::{Rng, SeedableRng};

use crate::formats::{Format, Layout};
use crate::gpu::{Gpu, GpuError, Graph};
use crate::ops::linear::{self, reference_rows, Epilogue, LinearArgs, LinearRoute};
use crate::ops::weight::{random_bf16, random_payload, DeviceWeight};
use crate::qualify::{Outcome, ALLOW_BF16};

use super::a16;
use super::measure::{
    fill_times, rotation_sets, time_graphs, CandidateTiming, KeyResult, TimedGraph, TuneOptions,
};

/// The fewest launches in one timing graph: a prefill launch is long (tens of microseconds
/// to tens of milliseconds), so fewer than the GEMV's 32 keep a replay well above the
/// events' resolution ...
const MIN_GRAPH_LAUNCHES: usize = 2;

/// ... as long as the graph does at least this much work (flops; about 40 us at the
/// kernel's 100 TFLOP/s of bench/kernels). The tuning time of the family is about its
/// keys' flops times the launches per graph, so this keeps a run over the synthetic models'
/// 132 keys near a minute of timing.
const MIN_GRAPH_FLOP: f64 = 4e9;

/// Launches in the timing graph of a `t`-column launch on an `[n, k]` weight rotated over
/// `sets` copies.
pub fn graph_launches(sets: usize, (t, n, k): (usize, usize, usize)) -> usize {
    let flop = 2.0 * (t * n * k) as f64;
    let by_work = (MIN_GRAPH_FLOP / flop.max(1.0)).ceil() as usize;
    sets.max(MIN_GRAPH_LAUNCHES).max(by_work)
}

/// One weight shape of one format, at the prefill buckets asked for.
#[derive(Debug, Clone)]
pub struct A16Job {
    pub format: &'static Format,
    pub n: usize,
    pub k: usize,
    pub buckets: Vec<u32>,
}

impl A16Job {
    /// Candidate timings this job makes (for the progress bar).
    pub fn cells(&self) -> usize {
        self.buckets.len() * a16::candidates(self.format).len()
    }

    pub fn keys(&self) -> Vec<String> {
        self.buckets
            .iter()
            .map(|&b| a16::key(self.format, b, self.n, self.k).to_string())
            .collect()
    }
}

/// Qualifies and times every candidate of `job` at each of its buckets, at T = the bucket.
/// `progress(key, tile)` is called after each candidate.
pub fn tune_a16(
    gpu: &Gpu,
    job: &A16Job,
    opts: &TuneOptions,
    mut progress: impl FnMut(&str, &str),
) -> Result<Vec<KeyResult>, GpuError> {
    let (format, n, k) = (job.format, job.n, job.k);
    let mut rng = rand::rngs::StdRng::seed_from_u64(
        opts.seed ^ 0xa16 ^ (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k as u64) << 32,
    );
    let layout = Layout::new(format, n, k).map_err(|e| GpuError::Driver {
        what: format!("laying out a [{n}, {k}] {} weight", format.name),
        err: e.to_string(),
    })?;
    let payload = random_payload(format, &layout, &mut rng);
    let sets = rotation_sets(gpu.props().l2_bytes, layout.total_bytes);
    let weights: Vec<DeviceWeight> = (0..sets)
        .map(|_| DeviceWeight::upload(gpu, format, layout, &payload))
        .collect::<Result<_, _>>()?;
    let routes = a16::candidates(format);
    let mut out = Vec::new();
    for &b in &job.buckets {
        let key = a16::key(format, b, n, k).to_string();
        let t = b as usize;
        let (xb, _) = random_bf16(t * k, 1.0, &mut rng);
        let x = gpu.upload(&xb)?;
        let mut y = gpu.alloc_zeros::<u16>(t * n)?;
        let mut timings = Vec::with_capacity(routes.len());
        let mut graphs = Vec::with_capacity(routes.len());
        for route in &routes {
            let mut c = CandidateTiming {
                entry: route.spec().entry,
                split: a16::short(route),
                median_us: None,
                spread: None,
                rel_l2: None,
                failure: None,
            };
            let graph = match qualify(gpu, route, (&weights[0], &payload), t, &mut rng, &mut c) {
                true => capture(gpu, route, &weights, &x, &mut y, t, &mut c),
                false => None,
            };
            progress(&key, &c.split);
            timings.push(c);
            graphs.push(graph);
        }
        fill_times(&mut timings, &time_graphs(gpu, &graphs, opts)?);
        let mut r = KeyResult {
            family: a16::FAMILY,
            key,
            format: format.name.clone(),
            tt: b,
            n,
            k,
            default: 0,
            winner: 0,
            margin: opts.margin,
            noise: 0.0,
            candidates: timings,
        };
        r.decide(opts.margin);
        out.push(r);
    }
    Ok(out)
}

/// The checks of one candidate: at T = `t`, and at a T that leaves the last tile partial
/// (`t / 2 + 1`, for the smaller buckets, where the host reference is quick). Records the
/// worst error, or why it failed; returns whether it passed.
fn qualify(
    gpu: &Gpu,
    route: &LinearRoute,
    (w, payload): (&DeviceWeight, &[u8]),
    t: usize,
    rng: &mut impl Rng,
    c: &mut CandidateTiming,
) -> bool {
    let mut checks = vec![t];
    if t <= 256 {
        checks.push(t / 2 + 1);
    }
    let mut worst = 0.0f64;
    for ct in checks {
        match check(gpu, route, w, payload, ct, rng) {
            Ok(o) => {
                worst = worst.max(o.rel_l2);
                if !o.pass {
                    c.rel_l2 = Some(worst);
                    c.failure = Some(format!(
                        "failed qualification at {}: rel L2 {:.2e} > {:.0e}",
                        o.shape, o.rel_l2, o.allowance
                    ));
                    return false;
                }
            }
            Err(e) => {
                c.failure = Some(format!("could not run: {e}"));
                return false;
            }
        }
    }
    c.rel_l2 = Some(worst);
    true
}

/// A candidate's timing graph at T = `t`: a launch on each weight copy in turn, as many as
/// [`graph_launches`] says.
fn capture(
    gpu: &Gpu,
    route: &LinearRoute,
    weights: &[DeviceWeight],
    x: &cudarc::driver::CudaSlice<u16>,
    y: &mut cudarc::driver::CudaSlice<u16>,
    t: usize,
    c: &mut CandidateTiming,
) -> Option<TimedGraph> {
    let sets = weights.len();
    let launches = graph_launches(sets, (t, weights[0].layout.n, weights[0].layout.k));
    let graph = Graph::capture(gpu, || {
        for i in 0..launches {
            let args = LinearArgs {
                w: &weights[i % sets],
                w_up: None,
                x,
                residual: None,
                t,
            };
            linear::launch(gpu, route, &args, y)?;
        }
        Ok(())
    });
    match graph {
        Ok(graph) => Some(TimedGraph { graph, launches }),
        Err(e) => {
            c.failure = Some(format!("could not be captured: {e}"));
            None
        }
    }
}

/// Runs `route` (plain epilogue) on `w` for `t` columns with fresh random bf16 inputs and a
/// poisoned (bf16 NaN) output, and compares sampled rows, all columns, with the f64
/// reference within the bf16 allowance, as `ops::linear`'s qualification does (an unwritten
/// output anywhere fails). The weight is the timed one, so that a large weight is not made
/// again per check; fewer rows are sampled at large T, where the host reference is slow.
fn check(
    gpu: &Gpu,
    route: &LinearRoute,
    w: &DeviceWeight,
    payload: &[u8],
    t: usize,
    rng: &mut impl Rng,
) -> Result<Outcome, GpuError> {
    debug_assert_eq!(route.epilogue, Epilogue::None);
    let (n, k) = (w.layout.n, w.layout.k);
    let (xb, xv) = random_bf16(t * k, 1.0, rng);
    let x = gpu.upload(&xb)?;
    let mut y = gpu.upload(&vec![0x7fc0u16; t * n])?; // bf16 NaN
    let args = LinearArgs {
        w,
        w_up: None,
        x: &x,
        residual: None,
        t,
    };
    linear::launch(gpu, route, &args, &mut y)?;
    gpu.synchronize()?;
    let all = gpu.download(&y)?;
    let sampled = if t <= 256 { 62 } else { 14 };
    let mut rows: Vec<usize> = if n <= 64 {
        (0..n).collect()
    } else {
        (0..sampled).map(|_| rng.random_range(0..n)).collect()
    };
    if n > 64 {
        rows.extend([0, n - 1]);
    }
    let w_rows: Vec<Vec<f32>> = rows
        .iter()
        .map(|&r| {
            let mut out = vec![0f32; k];
            crate::formats::decode_row(w.format, &w.layout, payload, r, &mut out);
            out
        })
        .collect();
    let want = reference_rows(
        &xv,
        (t, k),
        &w_rows,
        None,
        Epilogue::None,
        |_, _| 0.0,
        &rows,
    );
    let mut got: Vec<f32> = Vec::with_capacity(want.len());
    for ti in 0..t {
        for &r in &rows {
            got.push(half::bf16::from_bits(all[ti * n + r]).to_f32());
        }
    }
    if all.iter().any(|&b| !half::bf16::from_bits(b).is_finite()) {
        got[0] = f32::NAN; // an unwritten (poisoned) output anywhere fails the check
    }
    Ok(Outcome::compare(
        route.spec().entry,
        format!("T={t} N={n} K={k}"),
        &got,
        &want,
        ALLOW_BF16,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphs_cover_the_rotation_and_enough_work() {
        // A big weight at large T: the floor of launches.
        assert_eq!(graph_launches(1, (4096, 17408, 5120)), MIN_GRAPH_LAUNCHES);
        // Every copy of the rotation once.
        assert_eq!(graph_launches(3, (4096, 17408, 5120)), 3);
        // A small launch: enough of them for the work floor.
        let n = graph_launches(1, (64, 576, 576));
        assert!(n as f64 * 2.0 * (64.0 * 576.0 * 576.0) >= MIN_GRAPH_FLOP);
        assert!((n - 1) as f64 * 2.0 * (64.0 * 576.0 * 576.0) < MIN_GRAPH_FLOP);
    }

    #[test]
    fn jobs_count_their_candidates_and_keys() {
        let q4 = crate::formats::format("q4_g64").unwrap();
        let job = A16Job {
            format: q4,
            n: 576,
            k: 1536,
            buckets: vec![64, 4096],
        };
        assert_eq!(job.cells(), 2 * a16::candidates(q4).len());
        assert_eq!(
            job.keys(),
            [
                "linear_a16/q4_g64/t64/n576/k1536",
                "linear_a16/q4_g64/t4096/n576/k1536"
            ]
        );
    }
}
