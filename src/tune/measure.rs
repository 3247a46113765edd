//! Timing the candidates of the `linear_exact` route family on the device (DESIGN.md section 5): each
//! candidate is first qualified at the key's shape against the f64 host reference (outputs
//! poisoned, fresh random inputs); one that fails, or cannot be built or launched, counts as
//! infinitely slow. The others are timed with CUDA events, launched exactly as the engine
//! launches them, on rotating copies of a random weight that together exceed twice the L2,
//! and the winner is picked by [`choose_winner`].

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use serde::Serialize;

use crate::formats::{Format, Layout};
use crate::gpu::dptr;
use crate::gpu::{EventTimer, Gpu, GpuError};
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
/// to exceed the L2).
const MAX_SETS: usize = 2048;

/// How to time.
#[derive(Debug, Clone, Copy)]
pub struct TuneOptions {
    /// Timed samples per candidate, each the mean of [`BATCH`] launches; the median is kept.
    pub reps: usize,
    /// A challenger must beat the default by more than this fraction (0.03: 3%).
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
    /// The samples' interquartile range over their median.
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
    pub margin: f64,
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
        }
    }

    /// `1 - winner / default`: the fraction of the default's time saved (0 where the default
    /// is kept; `None` where the default failed).
    pub fn gain(&self) -> Option<f64> {
        let d = self.time(self.default);
        d.is_finite().then(|| 1.0 - self.time(self.winner) / d)
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
    let sets = rotation_sets(gpu.props().l2_bytes, layout.total_bytes);
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
        for route in &routes {
            let timing =
                qualify_and_time(gpu, route, &weights, &payload, (xp, yp, t), opts, &mut rng);
            progress(&key, &exact::short(route));
            timings.push(timing);
        }
        let medians: Vec<Option<f64>> = timings.iter().map(|c| c.median_us).collect();
        let winner = choose_winner(0, &medians, opts.margin);
        out.push(KeyResult {
            family: exact::FAMILY,
            key,
            format: format.name.clone(),
            tt,
            n,
            k,
            default: 0,
            winner,
            margin: opts.margin,
            candidates: timings,
        });
    }
    Ok(out)
}

/// One candidate: its checks at T = tt (and at the smallest T of its bucket, which runs a
/// partial tile), then its timing at T = tt where they pass.
fn qualify_and_time(
    gpu: &Gpu,
    route: &ExactRoute,
    weights: &[DeviceWeight],
    payload: &[u8],
    (xp, yp, t): (u64, u64, usize),
    opts: &TuneOptions,
    rng: &mut impl Rng,
) -> CandidateTiming {
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
                    return c;
                }
            }
            Err(e) => {
                c.failure = Some(format!("could not run: {e}"));
                return c;
            }
        }
    }
    c.rel_l2 = Some(worst);
    let sets = weights.len();
    let launch = |i: usize| linear_exact::launch(gpu, route, &weights[i % sets], xp, None, yp, t);
    match batched_median_us(gpu, opts.reps, launch) {
        Ok((median, spread)) => {
            c.median_us = Some(median);
            c.spread = Some(spread);
        }
        Err(e) => c.failure = Some(format!("could not be timed: {e}")),
    }
    c
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
