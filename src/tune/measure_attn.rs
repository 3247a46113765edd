//! Timing the `attn_split` family's candidates (the decode attention's split widths,
//! [`super::attn`]) on the device, as a captured decode step runs them: one query row, the
//! position read from device memory and the split grid planned for the context bucket's
//! keys. Each candidate is first qualified (`attention::check_decode_routes`: outputs and
//! workspace poisoned, fresh random inputs, against the f64 reference) with the cache filled
//! to three quarters of the bucket and with a short cache under the same grid (most splits
//! empty); one that fails counts as infinitely slow. The others are timed as a CUDA graph of
//! launches back to back, each on the next of rotating KV caches that together exceed twice
//! the L2, with three quarters of the bucket live (a cache between half and full of its
//! capacity, as after the engine's doubling), in interleaved rounds
//! ([`super::measure::time_graphs`]).

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use crate::gpu::{dptr, CudaSlice, Gpu, GpuError, Graph};
use crate::ops::attention::{
    check_decode_routes, launch_attention, AttnDims, AttnRoute, AttnWorkspace, KvType,
};
use crate::ops::Pos;

use super::attn;
use super::measure::{
    fill_times, rotation_sets, time_graphs, CandidateTiming, KeyResult, TimedGraph, TuneOptions,
    MIN_GRAPH_LAUNCHES,
};

/// One attention layout in one cache type, at the context buckets asked for (one row).
#[derive(Debug, Clone)]
pub struct AttnJob {
    pub kv: KvType,
    pub dims: AttnDims,
    /// Context buckets (powers of two, at least [`attn::MIN_CTX`]).
    pub contexts: Vec<usize>,
}

impl AttnJob {
    pub fn cells(&self) -> usize {
        self.contexts.len() * attn::candidates(self.kv, &self.dims).len()
    }

    pub fn keys(&self) -> Vec<String> {
        self.contexts
            .iter()
            .map(|&c| attn::key(self.kv, &self.dims, 1, c).to_string())
            .collect()
    }
}

/// The keys live in a timed launch at context bucket `ctx`: three quarters of it.
pub fn live_keys(ctx: usize) -> usize {
    (ctx * 3 / 4).max(1)
}

/// Qualifies and times every candidate of `job` at each of its context buckets.
pub fn tune_attn(
    gpu: &Gpu,
    job: &AttnJob,
    opts: &TuneOptions,
    mut progress: impl FnMut(&str, &str),
) -> Result<Vec<KeyResult>, GpuError> {
    let (kv, d) = (job.kv, job.dims);
    let routes = attn::candidates(kv, &d);
    let mut out = Vec::new();
    for &ctx in &job.contexts {
        let key = attn::key(kv, &d, 1, ctx).to_string();
        let mut rng = rand::rngs::StdRng::seed_from_u64(
            opts.seed ^ blake3::hash(key.as_bytes()).as_bytes()[0] as u64 ^ (ctx as u64) << 20,
        );
        let live = live_keys(ctx);
        let mut timings: Vec<CandidateTiming> = routes
            .iter()
            .map(|r| CandidateTiming {
                entry: r.spec().entry,
                split: attn::short(r),
                median_us: None,
                spread: None,
                rel_l2: None,
                failure: None,
            })
            .collect();
        // Checks: the timed fill, and a short cache under the same grid.
        for pos0 in [live - 1, 37.min(live - 1)] {
            match check_decode_routes(gpu, &routes, d, pos0, ctx, &mut rng) {
                Ok(outcomes) => {
                    for (c, o) in timings.iter_mut().zip(&outcomes) {
                        c.rel_l2 = Some(c.rel_l2.unwrap_or(0.0).max(o.rel_l2));
                        if !o.pass && c.failure.is_none() {
                            c.failure = Some(format!(
                                "failed qualification at {}: rel L2 {:.2e} > {:.0e}",
                                o.shape, o.rel_l2, o.allowance
                            ));
                        }
                    }
                }
                Err(e) => {
                    for c in timings.iter_mut().filter(|c| c.failure.is_none()) {
                        c.failure = Some(format!("could not run: {e}"));
                    }
                }
            }
        }
        let row = d.kv_width() * kv.bytes();
        let sets = rotation_sets(gpu.props().l2_bytes, 2 * live * row);
        let caches: Vec<(CudaSlice<u8>, CudaSlice<u8>)> = (0..sets)
            .map(|_| Ok((gpu.alloc_zeros(ctx * row)?, gpu.alloc_zeros(ctx * row)?)))
            .collect::<Result<_, GpuError>>()?;
        let q: Vec<f32> = (0..d.q_width())
            .map(|_| rng.sample(StandardNormal))
            .collect();
        let q = gpu.upload(&q)?;
        let o: CudaSlice<f32> = gpu.alloc_zeros(d.q_width())?;
        let pos = gpu.upload(&[(live - 1) as i32])?;
        let mut ws = AttnWorkspace::new(gpu, d, 1, ctx)?;
        let bufs = Bufs {
            q: dptr(gpu, &q),
            o: dptr(gpu, &o),
            pos: Pos::Device {
                ptr: dptr(gpu, &pos),
                max_keys: ctx,
            },
            caches: caches
                .iter()
                .map(|(k, v)| (dptr(gpu, k), dptr(gpu, v)))
                .collect(),
        };
        let mut graphs = Vec::with_capacity(routes.len());
        for (route, c) in routes.iter().zip(timings.iter_mut()) {
            let graph = if c.failure.is_none() {
                match capture(gpu, route, d, &mut ws, &bufs) {
                    Ok(g) => Some(g),
                    Err(e) => {
                        c.failure = Some(format!("could not be captured: {e}"));
                        None
                    }
                }
            } else {
                None
            };
            progress(&key, &c.split);
            graphs.push(graph);
        }
        fill_times(&mut timings, &time_graphs(gpu, &graphs, opts)?);
        let mut r = KeyResult {
            family: attn::FAMILY,
            key,
            format: kv.short().to_string(),
            tt: 1,
            n: ctx,
            k: d.head_dim,
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

/// The device buffers of a timed launch: q, out, the device position, and the rotating
/// `(k, v)` caches.
struct Bufs {
    q: u64,
    o: u64,
    pos: Pos,
    caches: Vec<(u64, u64)>,
}

fn capture(
    gpu: &Gpu,
    route: &AttnRoute,
    d: AttnDims,
    ws: &mut AttnWorkspace,
    b: &Bufs,
) -> Result<TimedGraph, GpuError> {
    let scale = 1.0 / (d.head_dim as f32).sqrt();
    let sets = b.caches.len();
    let launches = sets.max(MIN_GRAPH_LAUNCHES);
    let mut one = |i: usize| {
        let (k, v) = b.caches[i % sets];
        launch_attention(gpu, route, ws, b.q, k, v, b.o, 1, b.pos, d, scale)
    };
    // Loaded (and its shared memory raised) before the capture.
    one(0)?;
    gpu.synchronize()?;
    let graph = Graph::capture(gpu, || (0..launches).try_for_each(&mut one))?;
    Ok(TimedGraph { graph, launches })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::attention::SMOLLM2;

    #[test]
    fn jobs_count_their_candidates_and_name_their_keys() {
        let job = AttnJob {
            kv: KvType::F32,
            dims: SMOLLM2,
            contexts: vec![512, 4096],
        };
        assert_eq!(
            job.cells(),
            2 * attn::candidates(KvType::F32, &SMOLLM2).len()
        );
        assert_eq!(
            job.keys(),
            [
                "attn_split/f32/h9/kv3/t1/n512/k64",
                "attn_split/f32/h9/kv3/t1/n4096/k64"
            ]
        );
        assert_eq!(live_keys(512), 384);
    }
}
