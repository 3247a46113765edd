//! Kernel benchmarks: CUDA-event medians after warm-up, inputs rotated over sets larger
//! than L2, each result set against a ceiling measured in the same run.
//!
//! Op families provide `bench(&BenchCtx) -> Vec<BenchRecord>`; `ninfer bench kernels`
//! gathers them, measures the ceilings first, and merges peer timings (from a JSON-lines
//! file written by a peer script in the same job) by `(what, shape)`.

pub mod model;

use serde::{Deserialize, Serialize};

use crate::gpu::{CudaSlice, DriverContext, EventTimer, Gpu, GpuError};

/// One measured kernel (the JSON line `--json` writes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchRecord {
    /// What was measured, e.g. `linear q4_g64` or `gdn decode`.
    pub what: String,
    /// The route (kernel entry point) that ran.
    pub route: String,
    /// The shape, e.g. `T=1 N=17408 K=5120`.
    pub shape: String,
    pub median_us: f64,
    /// Bytes that must move (each input read once, each output written once).
    pub bytes: f64,
    pub flops: f64,
    /// Which ceiling bounds this kernel (`copy GB/s` or `bf16 GEMM TFLOP/s`) and its
    /// value measured in this run.
    pub ceiling: String,
    pub ceiling_value: f64,
    /// Achieved rate over the ceiling (bytes or flops, whichever bounds the kernel).
    pub fraction: f64,
    pub peer: Option<String>,
    pub peer_median_us: Option<f64>,
    pub speedup_vs_peer: Option<f64>,
    pub gpu: String,
    pub rev: String,
    pub command: String,
}

/// Whether a `--filter` (alternatives separated by `|`) may keep any record of a benchmark
/// whose `what` or route is one of `names`: an alternative found in a name, or one that
/// names a record of it ("<what> <shape>"). Families skip unwanted work with this before
/// uploading anything; `ninfer bench kernels` then keeps exactly the records that match.
pub fn filter_may_keep(filter: Option<&str>, names: &[&str]) -> bool {
    filter.is_none_or(|f| {
        f.split('|')
            .any(|p| names.iter().any(|n| n.contains(p) || p.starts_with(n)))
    })
}

/// A peer's timing, as a peer script writes it (one JSON object per line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerTiming {
    pub what: String,
    pub shape: String,
    pub peer: String,
    pub median_us: f64,
}

/// Ceilings measured at the start of a run, and the run's identity.
pub struct BenchCtx<'a> {
    pub gpu: &'a Gpu,
    /// Device-to-device copy, bytes read plus written per second.
    pub copy_bytes_per_s: f64,
    /// Dense bf16 matrix rate (cuBLAS) in flop/s, when measured.
    pub gemm_flops_per_s: Option<f64>,
    pub rev: String,
    pub command: String,
}

impl BenchCtx<'_> {
    /// A record judged against whichever ceiling bounds it: bytes over the copy bandwidth
    /// or flops over the matrix rate, the larger time being the floor.
    pub fn record(
        &self,
        what: impl Into<String>,
        route: impl Into<String>,
        shape: impl Into<String>,
        median_us: f64,
        bytes: f64,
        flops: f64,
    ) -> BenchRecord {
        let t = median_us * 1e-6;
        let byte_floor = bytes / self.copy_bytes_per_s;
        let flop_floor = self.gemm_flops_per_s.map(|r| flops / r).unwrap_or(0.0);
        let (ceiling, ceiling_value, fraction) = if flop_floor > byte_floor {
            let r = self.gemm_flops_per_s.unwrap();
            ("bf16 GEMM TFLOP/s".to_string(), r * 1e-12, flops / t / r)
        } else {
            (
                "copy GB/s".to_string(),
                self.copy_bytes_per_s * 1e-9,
                bytes / t / self.copy_bytes_per_s,
            )
        };
        BenchRecord {
            what: what.into(),
            route: route.into(),
            shape: shape.into(),
            median_us,
            bytes,
            flops,
            ceiling,
            ceiling_value,
            fraction,
            peer: None,
            peer_median_us: None,
            speedup_vs_peer: None,
            gpu: self.gpu.props().name.clone(),
            rev: self.rev.clone(),
            command: self.command.clone(),
        }
    }
}

/// Fills the peer fields of each record from timings with the same `what` and `shape`.
pub fn merge_peers(records: &mut [BenchRecord], peers: &[PeerTiming]) {
    for r in records.iter_mut() {
        if let Some(p) = peers
            .iter()
            .find(|p| p.what == r.what && p.shape == r.shape)
        {
            r.peer = Some(p.peer.clone());
            r.peer_median_us = Some(p.median_us);
            r.speedup_vs_peer = Some(p.median_us / r.median_us);
        }
    }
}

/// Median of `iters` event-timed runs of `work(i)` after `warmup` untimed ones, in
/// microseconds. `work` gets the iteration number, to rotate over input sets.
pub fn median_us(
    gpu: &Gpu,
    warmup: usize,
    iters: usize,
    mut work: impl FnMut(usize) -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    for i in 0..warmup {
        work(i)?;
    }
    gpu.synchronize()?;
    let timer = EventTimer::new(gpu)?;
    let mut times = Vec::with_capacity(iters);
    for i in 0..iters {
        times.push(timer.time_ms(gpu, || work(warmup + i))? as f64 * 1e3);
    }
    Ok(median(&mut times))
}

pub fn median(v: &mut [f64]) -> f64 {
    assert!(!v.is_empty(), "median of nothing");
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// How many input sets of `set_bytes` each to rotate over so that together they exceed
/// twice the L2 (so a timed run never finds its inputs in cache).
pub fn rotation_sets(gpu: &Gpu, set_bytes: usize) -> usize {
    let l2 = gpu.props().l2_bytes as usize;
    (2 * l2).div_ceil(set_bytes.max(1)).clamp(1, 64)
}

/// Device-to-device copy bandwidth (bytes read plus written per second) over a 2 GiB
/// buffer: the memory ceiling of every memory-bound kernel in the same run.
pub fn measure_copy_bandwidth(gpu: &Gpu) -> Result<f64, GpuError> {
    let n = 1usize << 29; // u32 elements: 2 GiB
    let src: CudaSlice<u32> = gpu.alloc_zeros(n)?;
    let mut dst: CudaSlice<u32> = gpu.alloc_zeros(n)?;
    let us = median_us(gpu, 3, 15, |_| {
        gpu.stream().memcpy_dtod(&src, &mut dst).ctx("device copy")
    })?;
    Ok(2.0 * (n * 4) as f64 / (us * 1e-6))
}

/// Dense bf16 GEMM rate of cuBLAS (flop/s) at 8192 x 8192 x 8192 on random data: the
/// compute ceiling of every matrix-bound kernel in the same run.
pub fn measure_gemm_rate(gpu: &Gpu) -> Result<f64, GpuError> {
    use rand::{Rng, SeedableRng};
    let n = 8192usize;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let random_bf16 = |rng: &mut rand::rngs::StdRng| -> Vec<u16> {
        (0..n * n)
            .map(|_| half::bf16::from_f32(rng.random::<f32>() * 2.0 - 1.0).to_bits())
            .collect()
    };
    let a = gpu.upload(&random_bf16(&mut rng))?;
    let b = gpu.upload(&random_bf16(&mut rng))?;
    let mut c: CudaSlice<u16> = gpu.alloc_zeros(n * n)?;
    let blas = crate::gpu::Blas::new(gpu)?;
    let us = median_us(gpu, 3, 10, |_| {
        blas.gemm_bf16(gpu, &a, &b, &mut c, (n, n, n))
    })?;
    Ok(2.0 * (n * n * n) as f64 / (us * 1e-6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}

#[cfg(test)]
mod filter_tests {
    use super::filter_may_keep;

    #[test]
    fn every_alternative_of_a_filter_is_tried() {
        let what = ["linear_exact prologue q4_g64 x20"];
        assert!(filter_may_keep(None, &what));
        assert!(filter_may_keep(Some("prologue"), &what));
        // The case that skipped the prologue benchmarks: the alternative naming them is
        // not the first one.
        assert!(filter_may_keep(
            Some("linear q4_g64|linear_exact prologue"),
            &what
        ));
        // An alternative naming one shape of this benchmark.
        assert!(filter_may_keep(
            Some("gdn|linear_exact prologue q4_g64 x20 T=1 N=49152 K=576"),
            &what
        ));
        assert!(!filter_may_keep(Some("gdn|attn"), &what));
        // A route matches as a name does.
        assert!(filter_may_keep(
            Some("x|_s64"),
            &["attn decode", "attn_decode_f32_d256_s64"]
        ));
    }
}
