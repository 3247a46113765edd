//! The decode-size GEMV on the tensor cores with its weights streamed by TMA
//! (`templates/linear/gemv_tc.cu`, Hopper): q4_g64 weights, f32 activations rounded to
//! bf16 (the bf16 mode's trade), T <= 8 columns, plain or residual epilogue.
//!
//! The CUDA-core ring kernel (`linear_exact`'s T = 1 route) issues ~3.7 instructions a
//! weight and lane, about as fast as DRAM delivers, so every launch's ramp and drain add
//! to its time (bench/kernels v10, v22); the register mma kernel at T = 8 waits on its own
//! loads (v59). Here a producer warp moves whole 8-row tiles with one TMA instruction
//! each into a ring of up to 6 stages, issuing them before the PDL wait so that a launch's
//! first weights stream in while the kernel ahead of it drains, and the consumers spend
//! ~1.8 instructions a weight and lane on the nibble-to-bf16 conversion and the mmas. The
//! weights enter the mma exactly (136 + q as bf16, the 136 taken back by each group's
//! starting sum), so the only rounding besides f32 sums is x's to bf16.
//!
//! Not yet a route of the engine: measured and qualified here against the ring and mma
//! kernels it would replace (bench/kernels v73).

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use super::linear::Epilogue;
use super::linear_exact::{median_batched_us, BATCH};
use super::weight::{random_bf16, random_weight, DeviceWeight};
use crate::bench::{rotation_sets, BenchCtx, BenchRecord};
use crate::formats::Format;
use crate::gpu::{dptr, CudaSlice, Gpu, GpuError, LaunchConfig};
use crate::jit::KernelSpec;
use crate::qualify::{Outcome, ALLOW_BF16};

/// Column tiles instantiated (a launch of T columns runs the smallest tile that holds it).
pub const TC_TT: [u32; 4] = [1, 2, 4, 8];
/// K per stage: 16 groups, one a consumer warp.
pub const STAGE_K: usize = 1024;
/// Bytes of one ring stage: 8 tiles x (a 4 KB quant box + a 256-byte scale box).
const STAGE_BYTES: usize = 8 * (4096 + 256);
/// Warps a block: 16 consumers and the producer.
const THREADS: u32 = 17 * 32;
/// The ring's depth at most (the mbarrier arrays' length in the template) and at least.
const MAX_SLOTS: usize = 12;
const MIN_SLOTS: usize = 3;
/// Dynamic shared memory a block may take (sm_90's opt-in limit).
const SMEM_LIMIT: usize = 227 * 1024;

/// One instantiation: the column tile and the epilogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcRoute {
    pub tt: u32,
    pub epilogue: Epilogue,
}

impl TcRoute {
    /// The route for `t` columns (at most 8).
    pub fn for_columns(t: usize, epilogue: Epilogue) -> TcRoute {
        let tt = (t.max(1) as u32).next_power_of_two();
        assert!(TC_TT.contains(&tt), "the TMA GEMV takes at most 8 columns");
        TcRoute { tt, epilogue }
    }

    pub fn spec(&self) -> KernelSpec {
        let e = match self.epilogue {
            Epilogue::None => "plain",
            Epilogue::Residual => "res",
            Epilogue::Swiglu => panic!("the TMA GEMV has no SwiGLU epilogue"),
        };
        KernelSpec::new(
            "linear_tc",
            "linear/gemv_tc.cu",
            format!("linear_tc_q4_g64_{e}_t{}", self.tt),
        )
        .param("tt", self.tt)
        .param("epilogue", self.epilogue)
        .programmatic()
    }
}

/// Every instantiation: each column tile, plain and with the residual.
pub fn instantiations() -> Vec<KernelSpec> {
    all_routes().iter().map(TcRoute::spec).collect()
}

fn all_routes() -> Vec<TcRoute> {
    let mut v = Vec::new();
    for epilogue in [Epilogue::None, Epilogue::Residual] {
        for tt in TC_TT {
            v.push(TcRoute { tt, epilogue });
        }
    }
    v
}

/// Shared memory beside the ring for `tt` columns of K: the staged bf16 x (a 64-byte pad a
/// token), the groups' sums and the chunk sums; and the alignment slack of the ring.
fn fixed_smem(tt: usize, k: usize) -> usize {
    tt * (2 * k + 64) + tt * (k / 64) * 4 + tt * 2048 + 1024
}

/// Ring stages for `tt` columns of K: as many as the shared memory holds, up to 12; 0
/// where fewer than 3 fit (~100 KB in flight, what one SM's share of the copy rate needs
/// over DRAM's latency with room to spare).
pub fn slots(tt: usize, k: usize) -> usize {
    let free = SMEM_LIMIT.saturating_sub(fixed_smem(tt, k));
    let s = (free / STAGE_BYTES).min(MAX_SLOTS);
    if s < MIN_SLOTS {
        0
    } else {
        s
    }
}

/// Whether the kernel takes a `[n, k]` weight in `format` at `t` columns: q4_g64, K a
/// multiple of 1024, at most 8 columns, and a ring of at least three stages beside the
/// staged activations.
pub fn supports(format: &Format, n: usize, k: usize, t: usize) -> bool {
    format.name == "q4_g64"
        && n > 0
        && k > 0
        && k.is_multiple_of(STAGE_K)
        && (1..=8).contains(&t)
        && slots((t as u32).next_power_of_two() as usize, k) > 0
}

/// Whether `gpu` runs the kernel: TMA and mbarrier transaction counts are sm_90's.
pub fn available(gpu: &Gpu) -> bool {
    gpu.props().compute_capability.0 >= 9
}

/// `y[t, n] = bf16(x)[t, k] * W^T (+ residual)`: f32 `x` (16-byte aligned), `y` and
/// `residual` at device addresses, `t` columns. Panics where [`supports`] does not hold.
pub fn launch(
    gpu: &Gpu,
    w: &DeviceWeight,
    x: u64,
    residual: Option<u64>,
    y: u64,
    t: usize,
) -> Result<(), GpuError> {
    let (n, k) = (w.layout.n, w.layout.k);
    assert!(
        supports(w.format, n, k, t),
        "the TMA GEMV does not take this launch"
    );
    assert!(
        x.is_multiple_of(16),
        "the TMA GEMV loads x 16 bytes at a time"
    );
    let epilogue = if residual.is_some() {
        Epilogue::Residual
    } else {
        Epilogue::None
    };
    let route = TcRoute::for_columns(t, epilogue);
    let tt = route.tt as usize;
    let slots = slots(tt, k);
    let spec = route.spec();
    let f = gpu.kernel(&spec)?;
    let smem = slots * STAGE_BYTES + fixed_smem(tt, k);
    gpu.grant_shared_memory(f.function(), smem, &spec.entry)?;
    let (q, s) = w.planes(gpu);
    let qmap = crate::gpu::tma::u8_row_pieces(q, n, k / 2, w.layout.q_row_bytes, (8, 4))?;
    // The boxes are the template's BOX_Q (4 pieces x 8 rows x 128 bytes) and BOX_S (8 rows x
    // 32 bytes): its mbarriers expect exactly those bytes a tile, or a stage never completes.
    let smap = crate::gpu::tma::u8_2d(s, (n, k / 32), w.layout.s_row_bytes, (8, 32), false)?;
    let tiles = n.div_ceil(8);
    let grid = tiles.min(gpu.props().sm_count as usize) as u32;
    let cfg = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let r = residual.unwrap_or(y);
    let (ti, ni, ki, si) = (t as i32, n as i32, k as i32, slots as i32);
    let mut b = gpu.launch(&f);
    b.arg(&x)
        .arg(&r)
        .arg(&y)
        .arg(&ti)
        .arg(&ni)
        .arg(&ki)
        .arg(&si)
        .arg(&qmap)
        .arg(&smap);
    // SAFETY: the arguments match gemv_tc.cu's signature: x holds t x k f32, y (and the
    // residual, read only with that epilogue) t x n; the maps cover the weight's planes,
    // whose rows the kernel never reads past (TMA fills zeros); shared memory as sized.
    unsafe { b.launch(cfg) }.map_err(|e| GpuError::driver(format!("launching {}", spec.entry), e))
}

/// Qualification cases `(t, n, k)`: the 27B's shapes at the tile and an odd T, partial
/// tiles (N not a multiple of 8), a grid with fewer tiles than SMs, a block run of several
/// chunks (the head's N), and the largest K a tile's staging takes.
fn cases(route: &TcRoute) -> Vec<(usize, usize, usize)> {
    let tt = route.tt as usize;
    let odd = if tt <= 2 { tt } else { tt / 2 + 1 };
    let mut v = vec![
        (tt, 17408, 5120),
        (odd, 5120, 6144),
        (tt, 10240, 5120),
        (odd, 1001, 2048),
        (tt, 36, 1024),
        (tt, 4101, 1024),
    ];
    if route.epilogue == Epilogue::None {
        v.push((odd, 4096, 14336));
        v.push((tt, 5120, 17408));
        v.push((1, 248320, 5120));
    }
    v.retain(|&(t, n, k)| supports(q4(), n, k, t) && t <= tt);
    v
}

fn q4() -> &'static Format {
    crate::formats::format("q4_g64").expect("registered")
}

/// Every route at its cases, outputs poisoned, against the f64 oracle of the unrounded
/// activations (the bf16 allowance). Skipped (no outcomes) on a GPU without TMA.
pub fn qualify(
    gpu: &Gpu,
    rng: &mut impl Rng,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<Outcome>, GpuError> {
    let mut out = Vec::new();
    if !available(gpu) {
        return Ok(out);
    }
    for route in all_routes() {
        let entry = route.spec().entry;
        if !wanted(&entry) {
            continue;
        }
        for (t, n, k) in cases(&route) {
            let (w, payload) = random_weight(gpu, q4(), n, k, rng)?;
            let x: Vec<f32> = (0..t * k).map(|_| rng.sample(StandardNormal)).collect();
            let r: Vec<f32> = (0..t * n).map(|_| rng.sample(StandardNormal)).collect();
            let (dx, dr) = (gpu.upload(&x)?, gpu.upload(&r)?);
            let dy = gpu.upload(&vec![f32::NAN; t * n])?;
            let res = (route.epilogue == Epilogue::Residual).then(|| dptr(gpu, &dr));
            launch(gpu, &w, dptr(gpu, &dx), res, dptr(gpu, &dy), t)?;
            gpu.synchronize()?;
            let all = gpu.download(&dy)?;
            let (got, want) = super::linear::sampled_check_f32(
                rng,
                q4(),
                &w.layout,
                &payload,
                &x,
                &r,
                &all,
                (t, n, k),
                route.epilogue,
                (4096, 254),
            );
            out.push(Outcome::compare(
                entry.clone(),
                format!("T={t} N={n} K={k}"),
                &got,
                &want,
                ALLOW_BF16,
            ));
        }
    }
    Ok(out)
}

/// The kernel against cuBLAS bf16 at T = 1, 2, 4, 8, 20 launches back to back a sample:
/// the 27B's 17408x5120, 5120x17408 (T <= 2: the staged x of more columns does not fit
/// beside the ring), 14336->4096 (T <= 4) and the 248320x5120 head (T = 1). The ring and
/// mma kernels it would replace are `linear_exact_mma`'s records of the same run.
pub fn bench(ctx: &BenchCtx, filter: Option<&str>) -> Result<Vec<BenchRecord>, GpuError> {
    let gpu = ctx.gpu;
    let mut records = Vec::new();
    let what = format!("linear_tc q4_g64 x{BATCH}");
    if !available(gpu) || !crate::bench::filter_may_keep(filter, &[&what]) {
        return Ok(records);
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(29);
    let blas = crate::gpu::Blas::new(gpu)?;
    let plan: [((usize, usize), &[usize]); 4] = [
        ((17408, 5120), &[1, 2, 4, 8]),
        ((5120, 17408), &[1, 2, 4, 8]),
        ((4096, 14336), &[1, 2, 4, 8]),
        ((248320, 5120), &[1]),
    ];
    for ((n, k), ts) in plan {
        let layout = crate::formats::Layout::new(q4(), n, k).expect("bench shapes fit");
        let payload = super::weight::random_payload(q4(), &layout, &mut rng);
        let weights: Vec<DeviceWeight> = (0..rotation_sets(gpu, layout.total_bytes))
            .map(|_| DeviceWeight::upload(gpu, q4(), layout, &payload))
            .collect::<Result<_, _>>()?;
        drop(payload);
        let sets = weights.len();
        let wsets = rotation_sets(gpu, n * k * 2);
        let (block, _) = random_bf16(1 << 20, 0.05, &mut rng);
        let wb: Vec<u16> = block.iter().copied().cycle().take(n * k).collect();
        let wdev: Vec<CudaSlice<u16>> = (0..wsets)
            .map(|_| gpu.upload(&wb))
            .collect::<Result<_, _>>()?;
        drop(wb);
        for &t in ts.iter().filter(|&&t| supports(q4(), n, k, t)) {
            let xs: Vec<f32> = (0..t * k).map(|_| rng.sample(StandardNormal)).collect();
            let x = gpu.upload(&xs)?;
            let y: CudaSlice<f32> = gpu.alloc_zeros(t * n)?;
            let (xb, _) = random_bf16(t * k, 1.0, &mut rng);
            let xb = gpu.upload(&xb)?;
            let mut yb: CudaSlice<u16> = gpu.alloc_zeros(t * n)?;
            let peer_us = median_batched_us(gpu, 15, |i| {
                blas.gemm_bf16(gpu, &wdev[i % wsets], &xb, &mut yb, (t, n, k))
            })?;
            let (xp, yp) = (dptr(gpu, &x), dptr(gpu, &y));
            let us = median_batched_us(gpu, 15, |i| {
                launch(gpu, &weights[i % sets], xp, None, yp, t)
            })?;
            let bytes = (layout.total_bytes + t * k * 4 + t * n * 4) as f64;
            let mut rec = ctx.record(
                what.clone(),
                TcRoute::for_columns(t, Epilogue::None).spec().entry,
                format!("T={t} N={n} K={k}"),
                us,
                bytes,
                2.0 * (t * n * k) as f64,
            );
            rec.peer = Some("cuBLAS bf16 (cublasGemmEx)".into());
            rec.peer_median_us = Some(peer_us);
            rec.speedup_vs_peer = Some(peer_us / us);
            records.push(rec);
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ring's depth: 6 stages at one column of the 27B's K, fewer where the staged
    /// activations take the room, none where fewer than three fit.
    #[test]
    fn slots_follow_the_staged_activations() {
        assert_eq!(slots(1, 5120), 6);
        assert_eq!(slots(8, 5120), 3);
        assert!(slots(2, 17408) >= MIN_SLOTS);
        assert_eq!(slots(8, 17408), 0);
        for tt in TC_TT {
            let s = slots(tt as usize, 5120);
            assert!(s * STAGE_BYTES + fixed_smem(tt as usize, 5120) <= SMEM_LIMIT);
        }
        assert!(supports(q4(), 17408, 5120, 8));
        assert!(
            !supports(q4(), 1536, 576, 1),
            "K must be a multiple of 1024"
        );
        assert!(
            !supports(q4(), 1536, 1536, 1),
            "K must be a multiple of 1024"
        );
        assert!(!supports(q4(), 17408, 5120, 9));
        let q8 = crate::formats::format("q8_g32").unwrap();
        assert!(!supports(q8, 17408, 5120, 1));
    }

    /// Every instantiation compiles for sm_90 with its TMA copies and mmas and nothing in
    /// local memory, and for sm_80 as the stub the launch never reaches.
    #[test]
    fn kernels_compile_for_sm_90_and_stub_elsewhere() {
        let jit = crate::jit::test_jit();
        let specs = instantiations();
        assert_eq!(specs.len(), 2 * TC_TT.len());
        for spec in &specs {
            let src = jit.render(spec).unwrap();
            jit.cubin(spec, crate::jit::Arch::new(9, 0))
                .unwrap_or_else(|e| panic!("{}: {e}", spec.entry));
            jit.cubin(spec, crate::jit::Arch::new(8, 0))
                .unwrap_or_else(|e| panic!("{} (sm_80 stub): {e}", spec.entry));
            let ptx = cudarc::nvrtc::compile_ptx_with_opts(
                src,
                cudarc::nvrtc::CompileOptions {
                    arch: Some("compute_90"),
                    options: crate::jit::nvrtc::base_options(),
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("{}: PTX: {e:?}", spec.entry))
            .to_src();
            assert!(ptx.contains("cp.async.bulk.tensor.3d"), "{}", spec.entry);
            assert!(ptx.contains("mma.sync.aligned.m16n8k16"), "{}", spec.entry);
            assert!(!ptx.contains(".local"), "{} spills", spec.entry);
        }
    }
}
