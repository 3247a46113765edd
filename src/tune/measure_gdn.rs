//! Timing the `gdn_step` family's candidates (the GDN decode step's tiles, [`super::gdn`])
//! on the device, as [`super::measure`] does for the linear family: each candidate is first
//! qualified against the f64 reference (`ops::gdn::check_step_route`, the checks of `ninfer
//! qualify`: outputs poisoned, fresh random inputs, at the bucket's largest and smallest
//! lane counts); one that fails, or cannot be built or launched, counts as infinitely slow.
//! The others are timed with CUDA events over a CUDA graph of one step per state set, the
//! sets (random states of the key's lanes) together exceeding twice the L2 so that every
//! step reads its state from memory, as a captured decode step does; the winner is picked
//! by [`KeyResult::decide`].

use rand::SeedableRng;

use crate::gpu::{dptr, CudaSlice, Gpu, GpuError, Graph};
use crate::ops::gdn::bench::{random_f32, random_state};
use crate::ops::gdn::drift::realistic_params;
use crate::ops::gdn::{
    check_step_route, launch_recurrent, GdnDims, GdnState, GdnWeights, RawInputs, RecurrentRoute,
    StateType,
};

use super::gdn;
use super::measure::{batched_median_us, rotation_sets, CandidateTiming, KeyResult, TuneOptions};

/// One GDN layer shape in one state type, at the lanes buckets asked for.
#[derive(Debug, Clone)]
pub struct GdnJob {
    pub state: StateType,
    pub dims: GdnDims,
    /// Lanes buckets (1, 2, 4, 8, ...), each timed at its upper bound.
    pub buckets: Vec<u32>,
}

impl GdnJob {
    /// Candidate timings this job makes (for the progress bar).
    pub fn cells(&self) -> usize {
        self.buckets
            .iter()
            .map(|&b| gdn::candidates(self.state, &self.dims, b as usize).len())
            .sum()
    }

    pub fn keys(&self) -> Vec<String> {
        self.buckets
            .iter()
            .map(|&b| gdn::key(self.state, &self.dims, b as usize).to_string())
            .collect()
    }
}

/// Qualifies and times every candidate of `job` at each of its lanes buckets.
/// `progress(key, tile)` is called after each candidate.
pub fn tune_gdn(
    gpu: &Gpu,
    job: &GdnJob,
    opts: &TuneOptions,
    mut progress: impl FnMut(&str, &str),
) -> Result<Vec<KeyResult>, GpuError> {
    let (state, d) = (job.state, job.dims);
    let mut out = Vec::new();
    for &bucket in &job.buckets {
        let lanes = bucket as usize;
        let key = gdn::key(state, &d, lanes);
        // Seeded per key, so a key's inputs do not depend on the keys before it.
        let seed = opts.seed ^ blake3_u64(&key.to_string());
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let w = GdnWeights::upload(gpu, d, &realistic_params(&d, &mut rng))?;
        let set_bytes = lanes * (d.state_len() * state.bytes() + d.conv_state_len() * 4);
        let sets = rotation_sets(gpu.props().l2_bytes, set_bytes).max(2);
        let mut states = (0..sets)
            .map(|i| random_state(gpu, &d, state, lanes, seed.wrapping_add(i as u64)))
            .collect::<Result<Vec<_>, _>>()?;
        let mixed = random_f32(gpu, lanes * d.conv_dim(), seed ^ 1)?;
        let a = random_f32(gpu, lanes * d.hv, seed ^ 2)?;
        let b = random_f32(gpu, lanes * d.hv, seed ^ 3)?;
        let o: CudaSlice<f32> = gpu.alloc_zeros(lanes * d.value_dim())?;
        let x = RawInputs {
            mixed: dptr(gpu, &mixed),
            a: dptr(gpu, &a),
            b: dptr(gpu, &b),
            ..Default::default()
        };
        let op = dptr(gpu, &o);
        let key = key.to_string();
        let routes = gdn::candidates(state, &d, lanes);
        let mut timings = Vec::with_capacity(routes.len());
        for route in &routes {
            let timing = qualify_and_time(
                gpu,
                route,
                &d,
                bucket,
                (&w, &mut states, x, op),
                opts,
                &mut rng,
            );
            progress(&key, &gdn::short(route));
            timings.push(timing);
        }
        let mut r = KeyResult {
            family: gdn::FAMILY,
            key,
            format: state.short().to_string(),
            tt: bucket,
            n: d.dv,
            k: d.dk,
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

fn blake3_u64(s: &str) -> u64 {
    let h = blake3::hash(s.as_bytes());
    u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// One candidate: its checks at the bucket's lane counts, then its timing at the bucket's
/// upper bound where they pass.
fn qualify_and_time(
    gpu: &Gpu,
    route: &RecurrentRoute,
    d: &GdnDims,
    bucket: u32,
    (w, states, x, op): (&GdnWeights, &mut [GdnState], RawInputs, u64),
    opts: &TuneOptions,
    rng: &mut rand::rngs::StdRng,
) -> CandidateTiming {
    let entry = route.spec().entry;
    let mut c = CandidateTiming {
        entry: entry.clone(),
        split: gdn::short(route),
        median_us: None,
        spread: None,
        rel_l2: None,
        failure: None,
    };
    let mut worst = 0.0f64;
    for lanes in gdn::check_lanes(bucket) {
        match check_step_route(gpu, route, d, lanes, 1, rng) {
            Ok(outcomes) => {
                // The route's own outputs (the output norm's are checked too, not reported).
                for o in outcomes.iter().filter(|o| o.route.starts_with(&entry)) {
                    worst = worst.max(o.rel_l2);
                }
                if let Some(f) = outcomes.iter().find(|o| !o.pass) {
                    c.rel_l2 = Some(worst);
                    c.failure = Some(format!(
                        "failed qualification ({}) at {}: rel L2 {:.2e} > {:.0e}",
                        f.route, f.shape, f.rel_l2, f.allowance
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
    match time_step(gpu, route, w, states, x, op, opts.reps) {
        Ok((median, spread)) => {
            c.median_us = Some(median);
            c.spread = Some(spread);
        }
        Err(e) => c.failure = Some(format!("could not be timed: {e}")),
    }
    c
}

/// The median microseconds of one decode step of `route` and the samples' spread: a CUDA
/// graph of one step per state set, replayed back to back ([`batched_median_us`]).
fn time_step(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    states: &mut [GdnState],
    x: RawInputs,
    op: u64,
    reps: usize,
) -> Result<(f64, f64), GpuError> {
    // Load the kernel (and raise its shared-memory limit) before the capture.
    launch_recurrent(gpu, route, w, &mut states[0], x, 1, Some(op), None, None)?;
    gpu.synchronize()?;
    let sets = states.len();
    let graph = Graph::capture(gpu, || {
        for st in states.iter_mut() {
            launch_recurrent(gpu, route, w, st, x, 1, Some(op), None, None)?;
        }
        Ok(())
    })?;
    let (median, spread) = batched_median_us(gpu, reps, |_| graph.replay())?;
    Ok((median / sets as f64, spread))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gdn::QWEN36_27B;

    #[test]
    fn jobs_count_their_candidates_and_name_their_keys() {
        let job = GdnJob {
            state: StateType::F16,
            dims: QWEN36_27B,
            buckets: vec![1, 8],
        };
        let want = gdn::candidates(StateType::F16, &QWEN36_27B, 1).len()
            + gdn::candidates(StateType::F16, &QWEN36_27B, 8).len();
        assert_eq!(job.cells(), want);
        assert_eq!(
            job.keys(),
            [
                "gdn_step/f16/hk16/hv48/t1/n128/k128",
                "gdn_step/f16/hk16/hv48/t8/n128/k128"
            ]
        );
    }

    #[test]
    fn seeds_differ_per_key() {
        assert_ne!(blake3_u64("a"), blake3_u64("b"));
        assert_eq!(blake3_u64("a"), blake3_u64("a"));
    }
}
