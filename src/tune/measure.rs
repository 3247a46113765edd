//! Timing the candidates of the `linear_exact` route family on the device (DESIGN.md section 5): each
//! candidate is first qualified at the key's shape against the f64 host reference (outputs
//! poisoned, fresh random inputs); one that fails, or cannot be built or launched, counts as
//! infinitely slow. The others are timed as the engine runs them: a CUDA graph of launches
//! back to back (captured as the engine captures its decode step, so with programmatic edges
//! where the device and the kernel take PDL), each launch on the next of rotating copies of a
//! random weight that together exceed twice the L2. The graphs of a key's candidates are
//! replayed in interleaved rounds ([`time_graphs`]); a candidate's time is the median of its
//! rounds' medians, and the key's noise the spread of those round medians, so that a winner
//! must beat the default by the margin or the noise, whichever is larger ([`choose_winner`]).

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use serde::Serialize;

use crate::formats::{Format, Layout};
use crate::gpu::dptr;
use crate::gpu::{EventTimer, Gpu, GpuError, Graph};
use crate::ops::linear::{sampled_check_f32, Epilogue};
use crate::ops::linear_exact::{self, ExactRoute};
use crate::ops::weight::{random_payload, DeviceWeight};
use crate::qualify::{Outcome, ALLOW_F32};

use super::exact;
use super::profile::{choose_winner, Route};

/// Launches queued back to back per timed sample. One launch between two events would also
/// time the host's submission latency, which a captured decode step does not pay.
pub const BATCH: usize = 20;

/// The most copies of one weight rotated over (a tiny weight would otherwise need thousands
/// to exceed the L2; below about 240 KB the copies stay partly in the L2).
const MAX_SETS: usize = 512;

/// The fewest launches in one timing graph (a big weight has few copies; the graph repeats
/// them so that one replay is long against the events' resolution).
pub const MIN_GRAPH_LAUNCHES: usize = 32;

/// How to time.
#[derive(Debug, Clone, Copy)]
pub struct TuneOptions {
    /// Timed replays per candidate and round (graph families), or timed samples of
    /// [`BATCH`] launches (gdn_step); the median is kept.
    pub reps: usize,
    /// Rounds over a key's candidates, interleaved (graph families): the spread of the
    /// rounds' medians is the noise.
    pub rounds: usize,
    /// A challenger must beat the default by more than this fraction (0.03: 3%), or by the
    /// key's measured noise where that is larger.
    pub margin: f64,
    pub seed: u64,
}

/// One candidate at one key.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateTiming {
    pub entry: String,
    /// The split, for tables (`r4 w4 u2`).
    pub split: String,
    /// Median microseconds per launch; `None`: not timed (failed qualification or launch).
    pub median_us: Option<f64>,
    /// Graph families: the range of the rounds' medians over their median; gdn_step: the
    /// samples' interquartile range over their median.
    pub spread: Option<f64>,
    /// The worst relative L2 error of its qualification checks.
    pub rel_l2: Option<f64>,
    /// Why it was not timed.
    pub failure: Option<String>,
}

/// The outcome at one key.
#[derive(Debug, Clone, Serialize)]
pub struct KeyResult {
    /// The route family (`linear_exact`, `gdn_step`).
    pub family: &'static str,
    pub key: String,
    /// `linear_exact`: the weight format; `gdn_step`: the state type (`f32`, `f16`).
    pub format: String,
    /// `linear_exact`: the column tile; `gdn_step`: the lanes bucket.
    pub tt: u32,
    /// `linear_exact`: the weight's N and K; `gdn_step`: dv and dk (HK and HV are in the key).
    pub n: usize,
    pub k: usize,
    /// Candidate index of the heuristics' choice.
    pub default: usize,
    /// Candidate index chosen.
    pub winner: usize,
    /// The margin the winner had to beat: the larger of `--margin` and `noise`.
    pub margin: f64,
    /// The key's measured noise: the larger spread of the default's and the fastest
    /// challenger's times ([`CandidateTiming::spread`]).
    pub noise: f64,
    pub candidates: Vec<CandidateTiming>,
}

impl KeyResult {
    fn time(&self, i: usize) -> f64 {
        self.candidates[i].median_us.unwrap_or(f64::INFINITY)
    }

    /// The profile's record of this key.
    pub fn route(&self) -> Route {
        Route {
            key: self.key.clone(),
            entry: self.candidates[self.winner].entry.clone(),
            median_us: round3(self.time(self.winner)),
            default_entry: self.candidates[self.default].entry.clone(),
            default_us: round3(self.time(self.default)),
            candidates: self.candidates.len() as u32,
            times_us: (0..self.candidates.len())
                .map(|i| round3(self.time(i)))
                .collect(),
            sources: super::sources::current_sources(&self.key),
        }
    }

    /// Picks the winner by [`choose_winner`] at the larger of `margin` and the key's noise,
    /// recording both.
    pub fn decide(&mut self, margin: f64) {
        self.noise = key_noise(&self.candidates, self.default);
        self.margin = margin.max(self.noise);
        let medians: Vec<Option<f64>> = self.candidates.iter().map(|c| c.median_us).collect();
        self.winner = choose_winner(self.default, &medians, self.margin);
    }

    /// `1 - winner / default`: the fraction of the default's time saved (0 where the default
    /// is kept; `None` where the default failed).
    pub fn gain(&self) -> Option<f64> {
        let d = self.time(self.default);
        d.is_finite().then(|| 1.0 - self.time(self.winner) / d)
    }
}

/// The larger spread of the default's time and of the fastest challenger's (0 where either
/// was not timed).
pub fn key_noise(candidates: &[CandidateTiming], default: usize) -> f64 {
    let best = candidates
        .iter()
        .enumerate()
        .filter(|&(i, c)| i != default && c.median_us.is_some())
        .min_by(|a, b| a.1.median_us.partial_cmp(&b.1.median_us).expect("finite"))
        .map(|(i, _)| i);
    let spread = |i: usize| candidates[i].spread.unwrap_or(0.0);
    match best {
        Some(b) => spread(default).max(spread(b)),
        None => spread(default),
    }
}

fn round3(v: f64) -> f64 {
    if v.is_finite() {
        (v * 1000.0).round() / 1000.0
    } else {
        v
    }
}

/// One weight shape of one format, at the column tiles asked for.
#[derive(Debug, Clone)]
pub struct ExactJob {
    pub format: &'static Format,
    pub n: usize,
    pub k: usize,
    pub tiles: Vec<u32>,
}

impl ExactJob {
    /// Candidate timings this job makes (for the progress bar).
    pub fn cells(&self) -> usize {
        self.tiles
            .iter()
            .map(|&tt| exact::candidates(self.format, tt).len())
            .sum()
    }

    pub fn keys(&self) -> Vec<String> {
        self.tiles
            .iter()
            .map(|&tt| exact::key(self.format, tt, self.n, self.k).to_string())
            .collect()
    }
}

/// Copies of an `bytes`-byte weight to rotate over so that together they exceed twice the L2.
pub fn rotation_sets(l2_bytes: u64, bytes: usize) -> usize {
    ((2 * l2_bytes as usize).div_ceil(bytes.max(1))).clamp(1, MAX_SETS)
}

/// The copies of a weight linear_exact rotates over: [`rotation_sets`], or
/// `$NINFER_TUNE_WEIGHT_COPIES` where set (a diagnostic: 1 times every launch on the same,
/// L2-warm weight, as an engine whose whole model stays in the L2 would run it;
/// bench/tune h100-run1).
fn weight_copies(l2_bytes: u64, bytes: usize) -> usize {
    static COPIES: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let forced = COPIES.get_or_init(|| {
        crate::gpu::env_usize("NINFER_TUNE_WEIGHT_COPIES")
            .filter(|&c| c > 0)
            .map(|c| c.min(MAX_SETS))
    });
    forced.unwrap_or_else(|| rotation_sets(l2_bytes, bytes))
}

/// Qualifies and times every candidate of `job` at each of its tiles. `progress(key, split)`
/// is called after each candidate.
pub fn tune_exact(
    gpu: &Gpu,
    job: &ExactJob,
    opts: &TuneOptions,
    mut progress: impl FnMut(&str, &str),
) -> Result<Vec<KeyResult>, GpuError> {
    let (format, n, k) = (job.format, job.n, job.k);
    // Seeded per shape, so a job's inputs do not depend on the jobs before it.
    let mut rng = rand::rngs::StdRng::seed_from_u64(
        opts.seed ^ (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k as u64) << 32,
    );
    let layout = Layout::new(format, n, k).map_err(|e| GpuError::Driver {
        what: format!("laying out a [{n}, {k}] {} weight", format.name),
        err: e.to_string(),
    })?;
    let payload = random_payload(format, &layout, &mut rng);
    let sets = weight_copies(gpu.props().l2_bytes, layout.total_bytes);
    let weights: Vec<DeviceWeight> = (0..sets)
        .map(|_| DeviceWeight::upload(gpu, format, layout, &payload))
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for &tt in &job.tiles {
        let key = exact::key(format, tt, n, k).to_string();
        let t = tt as usize;
        let xs: Vec<f32> = (0..t * k).map(|_| rng.sample(StandardNormal)).collect();
        let x = gpu.upload(&xs)?;
        let y = gpu.alloc_zeros::<f32>(t * n)?;
        let (xp, yp) = (dptr(gpu, &x), dptr(gpu, &y));
        let routes = exact::candidates(format, tt);
        let mut timings = Vec::with_capacity(routes.len());
        let mut graphs = Vec::with_capacity(routes.len());
        for route in &routes {
            let (timing, graph) =
                qualify_and_capture(gpu, route, &weights, &payload, (xp, yp, t), &mut rng);
            progress(&key, &exact::short(route));
            timings.push(timing);
            graphs.push(graph);
        }
        fill_times(&mut timings, &time_graphs(gpu, &graphs, opts)?);
        let mut r = KeyResult {
            family: exact::FAMILY,
            key,
            format: format.name.clone(),
            tt,
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

/// One candidate: its checks at T = tt (and at the smallest T of its bucket, which runs a
/// partial tile), then, where they pass, its timing graph at T = tt: a launch on each weight
/// copy in turn, at least [`MIN_GRAPH_LAUNCHES`].
fn qualify_and_capture(
    gpu: &Gpu,
    route: &ExactRoute,
    weights: &[DeviceWeight],
    payload: &[u8],
    (xp, yp, t): (u64, u64, usize),
    rng: &mut impl Rng,
) -> (CandidateTiming, Option<TimedGraph>) {
    let mut c = CandidateTiming {
        entry: route.spec().entry,
        split: exact::short(route),
        median_us: None,
        spread: None,
        rel_l2: None,
        failure: None,
    };
    let mut checks = vec![t];
    if t > 2 {
        checks.push(t / 2 + 1);
    }
    let mut worst = 0.0f64;
    for ct in checks {
        match check(gpu, route, &weights[0], payload, ct, rng) {
            Ok(o) => {
                worst = worst.max(o.rel_l2);
                if !o.pass {
                    c.rel_l2 = Some(worst);
                    c.failure = Some(format!(
                        "failed qualification at {}: rel L2 {:.2e} > {:.0e}",
                        o.shape, o.rel_l2, o.allowance
                    ));
                    return (c, None);
                }
            }
            Err(e) => {
                c.failure = Some(format!("could not run: {e}"));
                return (c, None);
            }
        }
    }
    c.rel_l2 = Some(worst);
    let sets = weights.len();
    let launches = sets.max(MIN_GRAPH_LAUNCHES);
    let graph = Graph::capture(gpu, || {
        for i in 0..launches {
            linear_exact::launch(gpu, route, &weights[i % sets], xp, None, yp, t)?;
        }
        Ok(())
    });
    match graph {
        Ok(graph) => (c, Some(TimedGraph { graph, launches })),
        Err(e) => {
            c.failure = Some(format!("could not be captured: {e}"));
            (c, None)
        }
    }
}

/// A candidate's timing graph: `launches` launches of it captured back to back.
pub struct TimedGraph {
    pub graph: Graph,
    pub launches: usize,
}

/// Times `graphs` (`None`: a candidate not timed) in `opts.rounds` interleaved rounds: each
/// round replays every graph once untimed, then `opts.reps` times, each replay between two
/// CUDA events. Per graph: the median over rounds of the round's median microseconds per
/// launch, and the range of the round medians over that median (the noise, 0 for one round).
/// Interleaving puts a drift of the clocks into every candidate's spread rather than into
/// the difference between candidates.
pub fn time_graphs(
    gpu: &Gpu,
    graphs: &[Option<TimedGraph>],
    opts: &TuneOptions,
) -> Result<Vec<Option<(f64, f64)>>, GpuError> {
    let timer = EventTimer::new(gpu)?;
    let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); graphs.len()];
    for _ in 0..opts.rounds.max(1) {
        for (g, medians) in graphs.iter().zip(rounds.iter_mut()) {
            let Some(g) = g else { continue };
            g.graph.replay()?;
            let mut times = Vec::with_capacity(opts.reps);
            for _ in 0..opts.reps.max(1) {
                let ms = timer.time_ms(gpu, || g.graph.replay())?;
                times.push(ms as f64 * 1e3 / g.launches as f64);
            }
            medians.push(crate::bench::median(&mut times));
        }
    }
    Ok(graphs
        .iter()
        .zip(rounds.iter_mut())
        .map(|(g, m)| {
            g.as_ref()?;
            Some(summarise_rounds(m))
        })
        .collect())
}

/// The median of round medians and their range over it.
pub fn summarise_rounds(medians: &mut [f64]) -> (f64, f64) {
    let median = crate::bench::median(medians);
    let (lo, hi) = medians
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    (median, (hi - lo) / median.max(1e-12))
}

/// Writes [`time_graphs`]' results into the candidates' timings.
pub fn fill_times(timings: &mut [CandidateTiming], times: &[Option<(f64, f64)>]) {
    for (c, t) in timings.iter_mut().zip(times) {
        if let Some((median, spread)) = *t {
            c.median_us = Some(median);
            c.spread = Some(spread);
        }
    }
}

/// Runs `route` on `w` for `t` columns with fresh random inputs and a poisoned output, and
/// compares sampled rows with the f64 reference (as `ninfer qualify` does).
fn check(
    gpu: &Gpu,
    route: &ExactRoute,
    w: &DeviceWeight,
    payload: &[u8],
    t: usize,
    rng: &mut impl Rng,
) -> Result<Outcome, GpuError> {
    let (n, k) = (w.layout.n, w.layout.k);
    let x: Vec<f32> = (0..t * k).map(|_| rng.sample(StandardNormal)).collect();
    let r = vec![0f32; t * n];
    let dx = gpu.upload(&x)?;
    let dy = gpu.upload(&vec![f32::NAN; t * n])?;
    debug_assert_eq!(route.epilogue, Epilogue::None);
    linear_exact::launch(gpu, route, w, dptr(gpu, &dx), None, dptr(gpu, &dy), t)?;
    gpu.synchronize()?;
    let all = gpu.download(&dy)?;
    let (got, want) = sampled_check_f32(
        rng,
        route.format,
        &w.layout,
        payload,
        &x,
        &r,
        &all,
        (t, n, k),
        route.epilogue,
        (4096, 254),
    );
    Ok(Outcome::compare(
        route.spec().entry,
        format!("T={t} N={n} K={k}"),
        &got,
        &want,
        ALLOW_F32,
    ))
}

/// The median over `samples` of the mean time per launch of [`BATCH`] launches queued back to
/// back (after [`BATCH`] untimed ones), in microseconds, and the samples' interquartile range
/// over that median. `work(i)` queues launch `i` (i counts on across samples: the rotation).
pub fn batched_median_us(
    gpu: &Gpu,
    samples: usize,
    mut work: impl FnMut(usize) -> Result<(), GpuError>,
) -> Result<(f64, f64), GpuError> {
    for i in 0..BATCH {
        work(i)?;
    }
    gpu.synchronize()?;
    let timer = EventTimer::new(gpu)?;
    let mut times = Vec::with_capacity(samples);
    let mut i = BATCH;
    for _ in 0..samples.max(1) {
        let ms = timer.time_ms(gpu, || {
            for _ in 0..BATCH {
                work(i)?;
                i += 1;
            }
            Ok(())
        })?;
        times.push(ms as f64 * 1e3 / BATCH as f64);
    }
    let median = crate::bench::median(&mut times);
    let q = |f: f64| times[((times.len() - 1) as f64 * f).round() as usize];
    Ok((median, (q(0.75) - q(0.25)) / median.max(1e-12)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(times: &[Option<f64>], winner: usize) -> KeyResult {
        KeyResult {
            family: exact::FAMILY,
            key: "linear_exact/q4_g64/t1/n576/k576".into(),
            format: "q4_g64".into(),
            tt: 1,
            n: 576,
            k: 576,
            default: 0,
            winner,
            margin: 0.03,
            noise: 0.01,
            candidates: times
                .iter()
                .enumerate()
                .map(|(i, &t)| CandidateTiming {
                    entry: format!("e{i}"),
                    split: format!("s{i}"),
                    median_us: t,
                    spread: t.map(|_| 0.01),
                    rel_l2: Some(1e-7),
                    failure: t.is_none().then(|| "failed".into()),
                })
                .collect(),
        }
    }

    #[test]
    fn a_result_becomes_a_route_with_every_time() {
        let r = result(&[Some(10.0), None, Some(8.00049)], 2);
        let route = r.route();
        assert_eq!(route.entry, "e2");
        assert_eq!(route.default_entry, "e0");
        assert_eq!((route.median_us, route.default_us), (8.0, 10.0));
        assert_eq!(route.candidates, 3);
        assert_eq!(route.times_us[0], 10.0);
        assert!(route.times_us[1].is_infinite());
        assert!((r.gain().unwrap() - 0.2).abs() < 1e-3);
        // A failed default: no gain to state.
        assert_eq!(result(&[None, Some(3.0)], 1).gain(), None);
    }

    #[test]
    fn the_noise_raises_the_margin() {
        // The challenger is 5% faster: it wins at a 3% margin with 1% noise...
        let mut r = result(&[Some(10.0), Some(9.5), Some(9.9)], 0);
        r.decide(0.03);
        assert_eq!((r.winner, r.noise, r.margin), (1, 0.01, 0.03));
        // ...but not where the default's rounds spread by 8%.
        r.candidates[0].spread = Some(0.08);
        r.decide(0.03);
        assert_eq!((r.winner, r.noise, r.margin), (0, 0.08, 0.08));
        // The spread of a slower challenger does not count.
        r.candidates[0].spread = Some(0.01);
        r.candidates[2].spread = Some(0.5);
        r.decide(0.03);
        assert_eq!((r.winner, r.noise), (1, 0.01));
    }

    #[test]
    fn rounds_summarise_to_their_median_and_range() {
        let (m, s) = summarise_rounds(&mut [10.0, 11.0, 9.0]);
        assert_eq!(m, 10.0);
        assert!((s - 0.2).abs() < 1e-12);
        assert_eq!(summarise_rounds(&mut [4.0]), (4.0, 0.0));
    }

    #[test]
    fn rotation_exceeds_twice_the_l2_within_bounds() {
        let l2 = 60 << 20;
        assert_eq!(rotation_sets(l2, 1 << 30), 1);
        let s = rotation_sets(l2, 10 << 20);
        assert!(s * (10 << 20) >= 2 * l2 as usize && s == 12);
        assert_eq!(rotation_sets(l2, 100), MAX_SETS);
    }

    #[test]
    fn jobs_count_their_candidates() {
        let q4 = crate::formats::format("q4_g64").unwrap();
        let job = ExactJob {
            format: q4,
            n: 576,
            k: 576,
            tiles: vec![1, 8],
        };
        let want = exact::candidates(q4, 1).len() + exact::candidates(q4, 8).len();
        assert_eq!(job.cells(), want);
        assert_eq!(
            job.keys(),
            [
                "linear_exact/q4_g64/t1/n576/k576",
                "linear_exact/q4_g64/t8/n576/k576"
            ]
        );
    }
}
