//! The exact linear route: `Y[T,N] = X[T,K] * W[N,K]^T` with f32 activations in and out,
//! W in any weight format, f32 accumulation: the cuda backend's reference mode uses it so
//! that the GPU engine can be compared with the cpu backend to rounding error (bf16
//! activations would hide a real bug inside their own 1e-2 noise). Larger T is tiled over
//! launches of `tt` columns.
//!
//! Two kernels:
//! - `stream` (`templates/linear/gemv_stream.cu`): the bandwidth-first GEMV for the
//!   symmetric integer formats whose groups are whole 32-weight chunks (q4_g64, q5_g64,
//!   q6_g64, q8_g32): 16-byte streamed weight loads issued ahead of use, codes converted by
//!   the magic-number trick (no int-to-float unit), activations read once per lane for
//!   several rows. [`ExactRoute::choose`] takes it wherever the format allows.
//! - `gemv` (`templates/linear/gemv.cu` with `act = "f32"`): every other format (dense,
//!   row-scaled, affine). Dense formats take any K; the others need whole groups.

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use super::linear::Epilogue;
use super::weight::{random_bf16, random_payload, DeviceWeight};
use crate::bench::{median_us, rotation_sets, BenchCtx, BenchRecord};
use crate::formats::{Format, FormatKind, Layout};
use crate::gpu::{CudaSlice, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::jit::KernelSpec;
use crate::qualify::{Outcome, ALLOW_F32};

/// Column tiles of the generic kernel: one token (decode) and eight (prefill, tiled).
pub const TILES: [u32; 2] = [1, 8];
const WARPS: u32 = 4;
/// Column tiles of the stream kernel.
pub const STREAM_TT: [u32; 4] = [1, 2, 4, 8];

/// The stream kernel's work split: `rows` output rows per warp, `warps` per block,
/// `unroll` chunks (32 weights) of every row loaded per lane before any is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamTile {
    pub rows: u32,
    pub warps: u32,
    pub unroll: u32,
}

/// Which kernel an exact route runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExactKernel {
    /// `linear/gemv.cu`, one warp per row, the format's generic group decode.
    Gemv,
    /// `linear/gemv_stream.cu`.
    Stream(StreamTile),
}

/// One instantiation.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactRoute {
    pub format: &'static Format,
    pub tt: u32,
    /// `None` or `Residual` (`Y = X W^T + R`, R may be Y itself).
    pub epilogue: Epilogue,
    pub kernel: ExactKernel,
}

/// The stream kernel's splits per column tile, the default first: the others are
/// instantiated (both epilogues) and qualified too, so that the benchmark and the tuner can
/// time them against it. The defaults are the splits that won most of the four large q4_g64
/// shapes (17408x5120, 5120x17408, 4096x14336, the 248320x5120 head) on the H200
/// (bench/kernels/README.md, v4); the head alone prefers 8 rows per warp at T = 1.
pub fn stream_tiles(tt: u32) -> &'static [StreamTile] {
    const fn st(rows: u32, warps: u32, unroll: u32) -> StreamTile {
        StreamTile {
            rows,
            warps,
            unroll,
        }
    }
    const T1: [StreamTile; 3] = [st(4, 4, 2), st(4, 8, 2), st(8, 4, 1)];
    const T2: [StreamTile; 2] = [st(4, 8, 1), st(4, 4, 1)];
    const T4: [StreamTile; 2] = [st(4, 8, 1), st(2, 8, 1)];
    const T8: [StreamTile; 2] = [st(2, 8, 1), st(4, 8, 1)];
    match tt {
        1 => &T1,
        2 => &T2,
        4 => &T4,
        _ => &T8,
    }
}

/// The stream kernel's default split for a column tile.
pub fn stream_tile(tt: u32) -> StreamTile {
    stream_tiles(tt)[0]
}

/// Shared memory the stream kernel may take for its staged activations (no opt-in needed).
pub const STREAM_SMEM: usize = 48 * 1024;
/// Bytes of one staged chunk: 32 f32 activations and a 16-byte pad.
const STAGED_CHUNK_BYTES: usize = 36 * 4;

/// How the stream kernel cuts K into slabs for `tt` columns: (chunks per slab, shared
/// bytes). Even slabs under [`STREAM_SMEM`], rounded up to whole lane rounds (32 chunks)
/// when K takes several.
pub fn stream_slab(tt: u32, k: usize) -> (usize, usize) {
    let chunks = k / 32;
    let max = (STREAM_SMEM / (tt as usize * STAGED_CHUNK_BYTES)).max(1);
    let slabs = chunks.div_ceil(max).max(1);
    let mut slab = chunks.div_ceil(slabs);
    if slabs > 1 && slab.div_ceil(32) * 32 <= max {
        slab = slab.div_ceil(32) * 32;
    }
    (slab, tt as usize * slab * STAGED_CHUNK_BYTES)
}

/// Whether the stream kernel takes this format: symmetric integers of at most 8 bits in
/// groups of whole 32-weight chunks (so a chunk never straddles two scales).
pub fn stream_supports(format: &Format) -> bool {
    format.kind == FormatKind::SymInt
        && (2..=8).contains(&format.bits)
        && format.group > 0
        && format.group.is_multiple_of(32)
}

impl ExactRoute {
    pub fn spec(&self) -> KernelSpec {
        let e = match self.epilogue {
            Epilogue::None => "plain",
            Epilogue::Residual => "res",
            Epilogue::Swiglu => panic!("the exact route has no SwiGLU epilogue"),
        };
        let f = &self.format.name;
        match self.kernel {
            ExactKernel::Gemv => KernelSpec::new(
                "linear_exact",
                "linear/gemv.cu",
                format!("linear_exact_{f}_{e}_t{}", self.tt),
            )
            .param("rows", 1u32)
            .param("warps", WARPS),
            ExactKernel::Stream(StreamTile {
                rows,
                warps,
                unroll,
            }) => KernelSpec::new(
                "linear_exact",
                "linear/gemv_stream.cu",
                format!(
                    "linear_exact_stream_{f}_{e}_t{}_r{rows}_w{warps}_u{unroll}",
                    self.tt
                ),
            )
            .param("rows", rows)
            .param("warps", warps)
            .param("unroll", unroll),
        }
        .param("format", f)
        .param("tt", self.tt)
        .param("epilogue", self.epilogue)
        .param("act", "f32")
    }

    /// The stream kernel wherever the format allows (the smallest column tile that holds
    /// T, up to 8), else the generic kernel: one column for decode, eight otherwise.
    pub fn choose(format: &'static Format, t: usize, epilogue: Epilogue) -> Self {
        if stream_supports(format) {
            let tt = (t.clamp(1, 8) as u32).next_power_of_two();
            return ExactRoute {
                format,
                tt,
                epilogue,
                kernel: ExactKernel::Stream(stream_tile(tt)),
            };
        }
        ExactRoute {
            format,
            tt: if t <= 1 { 1 } else { 8 },
            epilogue,
            kernel: ExactKernel::Gemv,
        }
    }

    /// Rows one block covers.
    fn rows_per_block(&self) -> usize {
        match self.kernel {
            ExactKernel::Gemv => WARPS as usize,
            ExactKernel::Stream(st) => (st.rows * st.warps) as usize,
        }
    }

    fn threads(&self) -> u32 {
        match self.kernel {
            ExactKernel::Gemv => WARPS * 32,
            ExactKernel::Stream(st) => st.warps * 32,
        }
    }
}

fn all_routes() -> Vec<ExactRoute> {
    let mut v = Vec::new();
    for format in crate::formats::registry().iter() {
        for tt in TILES {
            for epilogue in [Epilogue::None, Epilogue::Residual] {
                v.push(ExactRoute {
                    format,
                    tt,
                    epilogue,
                    kernel: ExactKernel::Gemv,
                });
            }
        }
    }
    v.extend(stream_routes());
    v
}

/// The stream kernel's routes (every column tile, every split, both epilogues) for every
/// format it takes.
fn stream_routes() -> Vec<ExactRoute> {
    let mut v = Vec::new();
    for format in crate::formats::registry()
        .iter()
        .filter(|f| stream_supports(f))
    {
        for tt in STREAM_TT {
            for &tile in stream_tiles(tt) {
                for epilogue in [Epilogue::None, Epilogue::Residual] {
                    v.push(ExactRoute {
                        format,
                        tt,
                        epilogue,
                        kernel: ExactKernel::Stream(tile),
                    });
                }
            }
        }
    }
    v
}

pub fn instantiations() -> Vec<KernelSpec> {
    all_routes().iter().map(ExactRoute::spec).collect()
}

/// Whether `w` can run on this route family: 16-byte aligned activation rows, and for
/// every non-dense format whole decode groups (the scale group, at least the 32-element
/// unit of `fmt_decode_group`, which row-scaled formats use too).
pub fn supports(format: &Format, k: usize) -> bool {
    let dense = format.kind == FormatKind::Dense;
    k.is_multiple_of(4) && (dense || k.is_multiple_of(format.group.max(32)))
}

/// Queues `y = x w^T (+ r)`: `x [t, K]`, `y [t, N]`, `r [t, N]` f32 device addresses.
pub fn launch(
    gpu: &Gpu,
    route: &ExactRoute,
    w: &DeviceWeight,
    x: u64,
    residual: Option<u64>,
    y: u64,
    t: usize,
) -> Result<(), GpuError> {
    let (n, k) = (w.layout.n, w.layout.k);
    assert_eq!(w.format.name, route.format.name, "weight format differs");
    assert!(
        supports(w.format, k),
        "K = {k} does not fit {}",
        w.format.name
    );
    if matches!(route.kernel, ExactKernel::Stream(_)) {
        assert!(
            stream_supports(w.format),
            "{} is not a stream-kernel format",
            w.format.name
        );
    }
    assert_eq!(
        residual.is_some(),
        route.epilogue == Epilogue::Residual,
        "a residual launch needs the residual and only it"
    );
    if t == 0 || n == 0 {
        return Ok(());
    }
    let f = gpu.function(&route.spec())?;
    let (q, s) = w.planes(gpu);
    let (stride_q, stride_s) = (w.layout.q_row_bytes as i64, w.layout.s_row_bytes as i64);
    let (ni, ki) = (n as i32, k as i32);
    let r0 = residual.unwrap_or(y);
    let (slab, smem) = match route.kernel {
        ExactKernel::Gemv => (0, 0),
        ExactKernel::Stream(_) => stream_slab(route.tt, k),
    };
    let slab = slab as i32;
    let cfg = LaunchConfig {
        grid_dim: (n.div_ceil(route.rows_per_block()) as u32, 1, 1),
        block_dim: (route.threads(), 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let step = route.tt as usize;
    let mut col = 0;
    while col < t {
        let cols = step.min(t - col) as i32;
        let (xc, rc, yc) = (
            x + (col * k * 4) as u64,
            r0 + (col * n * 4) as u64,
            y + (col * n * 4) as u64,
        );
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&q)
            .arg(&s)
            .arg(&q)
            .arg(&s)
            .arg(&stride_q)
            .arg(&stride_s)
            .arg(&xc)
            .arg(&rc)
            .arg(&yc)
            .arg(&cols)
            .arg(&ni)
            .arg(&ki);
        if matches!(route.kernel, ExactKernel::Stream(_)) {
            b.arg(&slab);
        }
        // SAFETY: matches the signature of gemv.cu, and of gemv_stream.cu with its slab
        // argument (its shared memory sized by stream_slab); the kernels guard rows past N
        // and columns past `cols`; the caller sizes x, y and r to t rows.
        unsafe { b.launch(cfg) }
            .map_err(|e| GpuError::driver(format!("launching {}", route.spec().entry), e))?;
        col += step;
    }
    Ok(())
}

/// Shapes `(T, N, K)` of the generic kernel: the tiny fixtures' odd widths (48, 144),
/// SmolLM2's and a 27B one, with T past one tile so the host tiling is covered.
const QUALIFY_SHAPES: [(usize, usize, usize); 6] = [
    (1, 64, 48),
    (3, 144, 64),
    (8, 1536, 576),
    (13, 576, 1536),
    (1, 5120, 17408),
    (5, 384, 144),
];

/// Real `(N, K)` shapes the stream kernel is qualified and timed on: the 27B MLP up and
/// down, 14336->4096, SmolLM2's projections and head, the 27B head.
pub const STREAM_SHAPES: [(usize, usize); 7] = [
    (17408, 5120),
    (5120, 17408),
    (4096, 14336),
    (576, 576),
    (1536, 576),
    (49152, 576),
    (248320, 5120),
];

/// A random weight of `[n, k]` on the device, and its payload.
fn random_weight(
    gpu: &Gpu,
    format: &'static Format,
    n: usize,
    k: usize,
    rng: &mut impl Rng,
) -> Result<(DeviceWeight, Vec<u8>), GpuError> {
    let layout = Layout::new(format, n, k).expect("qualify shapes fit");
    let payload = random_payload(format, &layout, rng);
    Ok((
        DeviceWeight::upload(gpu, format, layout, &payload)?,
        payload,
    ))
}

/// Runs `route` on `(t, n, k)` with fresh random inputs and a poisoned output, and compares
/// with the f64 oracle: every row when N is small, else the first, the last and 254 random
/// ones (and then any unwritten output anywhere fails the check).
fn check(
    gpu: &Gpu,
    route: &ExactRoute,
    w: &DeviceWeight,
    payload: &[u8],
    t: usize,
    rng: &mut impl Rng,
) -> Result<Outcome, GpuError> {
    let (n, k) = (w.layout.n, w.layout.k);
    let draw = |rng: &mut dyn rand::RngCore, len: usize| -> Vec<f32> {
        (0..len).map(|_| rng.sample(StandardNormal)).collect()
    };
    let x = draw(rng, t * k);
    let r = draw(rng, t * n);
    let dx = gpu.upload(&x)?;
    let dr = gpu.upload(&r)?;
    let dy = gpu.upload(&vec![f32::NAN; t * n])?;
    let res = (route.epilogue == Epilogue::Residual).then(|| super::gdn::dptr(gpu, &dr));
    launch(
        gpu,
        route,
        w,
        super::gdn::dptr(gpu, &dx),
        res,
        super::gdn::dptr(gpu, &dy),
        t,
    )?;
    gpu.synchronize()?;
    let all = gpu.download(&dy)?;
    let (got, want) = super::linear::sampled_check_f32(
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

/// Every route at every shape its format can take, outputs poisoned, against the oracle.
/// The stream routes: each at an odd small shape (N not a multiple of a block's rows, two
/// chunks per row), at SmolLM2's K = 576 with T past two tiles (host tiling, a partial
/// last tile), and at each T of its bucket on a real shape; the default q4_g64 routes also
/// at the 27B head.
pub fn qualify(
    gpu: &Gpu,
    rng: &mut impl Rng,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<Outcome>, GpuError> {
    let mut out = Vec::new();
    for route in all_routes() {
        if !wanted(&route.spec().entry) {
            continue;
        }
        let mut cases: Vec<(usize, usize, usize)> = Vec::new();
        match route.kernel {
            ExactKernel::Gemv => {
                for &(t, n, k) in &QUALIFY_SHAPES {
                    if supports(route.format, k) && !(route.tt == 1 && t > 3) {
                        cases.push((t, n, k));
                    }
                }
            }
            ExactKernel::Stream(_) => {
                let tt = route.tt as usize;
                cases.push((tt, 144, 64));
                cases.push((2 * tt + 1, 1536, 576));
                let (lo, hi) = match tt {
                    1 => (1, 1),
                    2 => (2, 2),
                    4 => (3, 4),
                    _ => (5, 8),
                };
                // K = 17408 takes several slabs at every tile; the other real shapes cycle
                // over the routes (the head apart).
                cases.push((hi, 5120, 17408));
                let seed = route.format.name.len() + tt + route.epilogue as usize;
                let (n, k) = STREAM_SHAPES[seed % (STREAM_SHAPES.len() - 1)];
                cases.push((lo, n, k));
                let is_default = route.kernel == ExactKernel::Stream(stream_tile(route.tt));
                if route.format.name == "q4_g64"
                    && is_default
                    && route.epilogue == Epilogue::None
                    && (tt == 1 || tt == 8)
                {
                    let (n, k) = STREAM_SHAPES[6];
                    cases.push((tt, n, k));
                }
            }
        }
        for (t, n, k) in cases {
            if !supports(route.format, k) {
                continue;
            }
            let (w, payload) = random_weight(gpu, route.format, n, k, rng)?;
            out.push(check(gpu, &route, &w, &payload, t, rng)?);
        }
    }
    Ok(out)
}

/// Launches queued back to back per timed sample by [`median_batched_us`].
const BATCH: usize = 20;

/// Median over `samples` of the mean time per launch of [`BATCH`] launches queued back to
/// back (`work(i)`, i counting on across samples for the rotation), in microseconds. One
/// launch between two events also times the host's submission latency (about the time of a
/// 576x576 GEMV), which a captured decode step does not pay; back to back, the host queues
/// the next launch while the GPU runs this one.
fn median_batched_us(
    gpu: &Gpu,
    samples: usize,
    mut work: impl FnMut(usize) -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    for i in 0..BATCH {
        work(i)?;
    }
    gpu.synchronize()?;
    let timer = crate::gpu::EventTimer::new(gpu)?;
    let mut times = Vec::with_capacity(samples);
    let mut i = BATCH;
    for _ in 0..samples {
        let ms = timer.time_ms(gpu, || {
            for _ in 0..BATCH {
                work(i)?;
                i += 1;
            }
            Ok(())
        })?;
        times.push(ms as f64 * 1e3 / BATCH as f64);
    }
    Ok(crate::bench::median(&mut times))
}

/// One benchmarked weight: its format, `(N, K)`, and the routes timed at each T.
type BenchCase = (
    &'static Format,
    (usize, usize),
    Vec<(usize, Vec<ExactRoute>)>,
);

/// The stream kernel (and the generic one it replaces) at decode shapes, against the copy
/// bandwidth and cuBLAS bf16 at the same shape, measured in the same run.
pub fn bench(ctx: &BenchCtx, filter: Option<&str>) -> Result<Vec<BenchRecord>, GpuError> {
    let gpu = ctx.gpu;
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let blas = crate::gpu::Blas::new(gpu)?;
    let mut records = Vec::new();
    // (format, shape, [(T, routes)])
    let q4 = crate::formats::format("q4_g64").expect("registered");
    let mut plan: Vec<BenchCase> = Vec::new();
    let default = |f: &'static Format, t: usize| ExactRoute::choose(f, t, Epilogue::None);
    let with = |f: &'static Format, tt: u32, tile: StreamTile| ExactRoute {
        format: f,
        tt,
        epilogue: Epilogue::None,
        kernel: ExactKernel::Stream(tile),
    };
    let tiles = |f: &'static Format, t: usize| -> Vec<ExactRoute> {
        let tt = (t as u32).next_power_of_two();
        stream_tiles(tt)
            .iter()
            .map(|&tile| with(f, tt, tile))
            .collect()
    };
    for (i, &shape) in STREAM_SHAPES.iter().enumerate() {
        let big = [0usize, 1, 2, 6].contains(&i);
        let mut per_t = Vec::new();
        for t in [1usize, 2, 4, 8] {
            let mut routes = if big {
                tiles(q4, t)
            } else {
                vec![default(q4, t)]
            };
            if i == 0 && t == 1 {
                routes.push(ExactRoute {
                    format: q4,
                    tt: 1,
                    epilogue: Epilogue::None,
                    kernel: ExactKernel::Gemv,
                });
            }
            per_t.push((t, routes));
        }
        plan.push((q4, shape, per_t));
    }
    for name in ["q8_g32", "q6_g64"] {
        let f = crate::formats::format(name).expect("registered");
        for shape in [STREAM_SHAPES[0], STREAM_SHAPES[1]] {
            let per_t = [1usize, 8].iter().map(|&t| (t, tiles(f, t))).collect();
            plan.push((f, shape, per_t));
        }
    }

    for (fmt, (n, k), per_t) in plan {
        let what = format!("linear_exact {}", fmt.name);
        if filter.is_some_and(|f| !what.contains(f)) {
            continue;
        }
        let layout = Layout::new(fmt, n, k).expect("bench shapes fit");
        let sets = rotation_sets(gpu, layout.total_bytes);
        let payload = random_payload(fmt, &layout, &mut rng);
        let weights: Vec<DeviceWeight> = (0..sets)
            .map(|_| DeviceWeight::upload(gpu, fmt, layout, &payload))
            .collect::<Result<_, _>>()?;
        drop(payload);
        // cuBLAS bf16 weights, rotated the same way (a random block repeated: timing needs
        // non-zero values, not fresh ones).
        let wsets = rotation_sets(gpu, n * k * 2);
        let (block, _) = random_bf16(1 << 20, 0.05, &mut rng);
        let wb: Vec<u16> = block.iter().copied().cycle().take(n * k).collect();
        let wdev: Vec<CudaSlice<u16>> = (0..wsets)
            .map(|_| gpu.upload(&wb))
            .collect::<Result<_, _>>()?;
        drop(wb);
        for (t, routes) in per_t {
            let xs: Vec<f32> = (0..t * k).map(|_| rng.sample(StandardNormal)).collect();
            let x = gpu.upload(&xs)?;
            let y: CudaSlice<f32> = gpu.alloc_zeros(t * n)?;
            let (xb, _) = random_bf16(t * k, 1.0, &mut rng);
            let xb = gpu.upload(&xb)?;
            let mut yb: CudaSlice<u16> = gpu.alloc_zeros(t * n)?;
            let peer_us = median_us(gpu, 5, 50, |i| {
                blas.gemm_bf16(gpu, &wdev[i % wsets], &xb, &mut yb, (t, n, k))
            })?;
            let peer_batched_us = median_batched_us(gpu, 15, |i| {
                blas.gemm_bf16(gpu, &wdev[i % wsets], &xb, &mut yb, (t, n, k))
            })?;
            let (xp, yp) = (super::gdn::dptr(gpu, &x), super::gdn::dptr(gpu, &y));
            for route in routes {
                let us = median_us(gpu, 5, 50, |i| {
                    launch(gpu, &route, &weights[i % sets], xp, None, yp, t)
                })?;
                let batched_us = median_batched_us(gpu, 15, |i| {
                    launch(gpu, &route, &weights[i % sets], xp, None, yp, t)
                })?;
                let bytes = (layout.total_bytes + t * k * 4 + t * n * 4) as f64;
                let flops = 2.0 * (t * n * k) as f64;
                // One launch per sample (as every other bench), then back to back.
                for (w, us, peer_us) in [
                    (what.clone(), us, peer_us),
                    (format!("{what} x{BATCH}"), batched_us, peer_batched_us),
                ] {
                    let mut rec = ctx.record(
                        w,
                        route.spec().entry,
                        format!("T={t} N={n} K={k}"),
                        us,
                        bytes,
                        flops,
                    );
                    rec.peer = Some("cuBLAS bf16 (cublasGemmEx)".into());
                    rec.peer_median_us = Some(peer_us);
                    rec.speedup_vs_peer = Some(peer_us / us);
                    records.push(rec);
                }
            }
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supports_whole_groups_and_any_dense_width() {
        let f32f = crate::formats::format("f32").unwrap();
        let q4 = crate::formats::format("q4_g64").unwrap();
        assert!(supports(f32f, 48) && supports(f32f, 144));
        assert!(!supports(f32f, 6), "rows must stay 16-byte aligned");
        assert!(supports(q4, 128) && !supports(q4, 48));
        let i8r = crate::formats::format("i8_row").unwrap();
        assert!(
            supports(i8r, 64) && !supports(i8r, 48),
            "row-scaled decodes 32 at a time"
        );
    }

    #[test]
    fn the_f32_act_param_names_a_distinct_kernel() {
        let f = crate::formats::format("bf16").unwrap();
        let a = ExactRoute::choose(f, 1, Epilogue::None).spec();
        let b = ExactRoute::choose(f, 9, Epilogue::Residual).spec();
        assert_ne!(a.entry, b.entry);
        assert!(a.entry.starts_with("linear_exact_bf16_plain_t1"));
    }

    #[test]
    fn the_stream_kernel_takes_the_sym_int_formats_and_every_t() {
        for name in ["q4_g64", "q5_g64", "q6_g64", "q8_g32"] {
            let f = crate::formats::format(name).unwrap();
            assert!(stream_supports(f), "{name}");
            for t in 1..=20 {
                let r = ExactRoute::choose(f, t, Epilogue::Residual);
                assert!(matches!(r.kernel, ExactKernel::Stream(_)), "{name} T={t}");
                assert!(r.tt as usize >= t.min(8) && r.tt <= 8);
            }
        }
        for name in ["q4_1_g32", "i8_row", "bf16", "f16", "f32"] {
            let f = crate::formats::format(name).unwrap();
            assert!(!stream_supports(f), "{name}");
            let r = ExactRoute::choose(f, 1, Epilogue::None);
            assert_eq!(r.kernel, ExactKernel::Gemv);
        }
    }

    #[test]
    fn slabs_cover_k_within_the_shared_budget() {
        for tt in STREAM_TT {
            for k in [32usize, 64, 576, 1536, 5120, 14336, 17408, 32768] {
                let (slab, smem) = stream_slab(tt, k);
                assert!(smem <= STREAM_SMEM, "tt={tt} K={k}: {smem} bytes");
                assert!(slab >= 1 && slab * 32 * tt as usize * 4 <= smem);
                let chunks = k / 32;
                assert!(
                    slab <= chunks.max(1),
                    "tt={tt} K={k}: slab {slab} > {chunks}"
                );
                if chunks * tt as usize * 144 <= STREAM_SMEM {
                    assert_eq!(slab, chunks, "tt={tt} K={k} fits one slab");
                }
            }
        }
        // 17408 at one column: two slabs of whole lane rounds.
        assert_eq!(stream_slab(1, 17408).0, 288);
    }

    #[test]
    fn every_chosen_route_is_instantiated() {
        let specs = instantiations();
        for f in crate::formats::registry().iter() {
            for t in [1, 2, 3, 4, 5, 8, 9, 64] {
                for e in [Epilogue::None, Epilogue::Residual] {
                    let entry = ExactRoute::choose(f, t, e).spec().entry;
                    assert!(
                        specs.iter().any(|s| s.entry == entry),
                        "{entry} is chosen but not registered"
                    );
                }
            }
        }
        let mut names: Vec<_> = specs.iter().map(|s| s.entry.clone()).collect();
        names.sort();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "an entry name is registered twice");
    }
}
