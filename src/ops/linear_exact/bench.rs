//! `ninfer bench kernels`' exact linear records: every route at the real shapes against
//! cuBLAS bf16, and the one-column decode launches with their prologues and epilogues.

use super::*;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use super::super::weight::{random_bf16, rotated_bf16_weights, rotated_weights};
use crate::bench::{median_us, BenchCtx, BenchRecord};
use crate::formats::Layout;
use crate::gpu::{dptr, CudaSlice};

/// Launches queued back to back per timed sample by [`median_batched_us`].
pub(in crate::ops) const BATCH: usize = 20;

/// Median over `samples` of the mean time per launch of [`BATCH`] launches queued back to
/// back (`work(i)`, i counting on across samples for the rotation), in microseconds. One
/// launch between two events also times the host's submission latency (about the time of a
/// 576x576 GEMV), which a captured decode step does not pay; back to back, the host queues
/// the next launch while the GPU runs this one.
pub(in crate::ops) fn median_batched_us(
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
        prologue: PrologueKind::None,
    };
    let tiles = |f: &'static Format, t: usize| -> Vec<ExactRoute> {
        let tt = (t as u32).next_power_of_two();
        let mut v: Vec<ExactRoute> = stream_tiles(tt)
            .iter()
            .map(|&tile| with(f, tt, tile))
            .collect();
        if ring_supports(f) && RING_TT.contains(&tt) {
            v.extend(ring_tiles(f.bits, tt).iter().map(|&tile| ExactRoute {
                kernel: ExactKernel::Ring(tile),
                ..with(f, tt, stream_tile(tt))
            }));
        }
        v
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
                    prologue: PrologueKind::None,
                });
            }
            per_t.push((t, routes));
        }
        plan.push((q4, shape, per_t));
    }
    // The 27B's other layer shapes (attention and GDN projections), T = 1, every split.
    for shape in [(10240, 5120), (5120, 6144)] {
        plan.push((q4, shape, vec![(1, tiles(q4, 1))]));
    }
    for name in ["q8_g32", "q6_g64"] {
        let f = crate::formats::format(name).expect("registered");
        for shape in [STREAM_SHAPES[0], STREAM_SHAPES[1]] {
            let per_t = [1usize, 8].iter().map(|&t| (t, tiles(f, t))).collect();
            plan.push((f, shape, per_t));
        }
    }

    // The filter is matched against each record's "<what> <shape>" (so "q4_g64 x20 T=1
    // N=17408 K=5120" times one shape at one T); `|` separates alternatives, as in
    // `ninfer bench`'s own filter.
    let wanted = |key: &str| filter.is_none_or(|f| f.split('|').any(|p| key.contains(p)));
    for (fmt, (n, k), per_t) in plan {
        let what = format!("linear_exact {}", fmt.name);
        let key = |t: usize, w: &str| format!("{w} T={t} N={n} K={k}");
        let per_t: Vec<_> = per_t
            .into_iter()
            .filter(|(t, _)| {
                wanted(&key(*t, &what)) || wanted(&key(*t, &format!("{what} x{BATCH}")))
            })
            .collect();
        if per_t.is_empty() {
            continue;
        }
        let (layout, weights) = rotated_weights(gpu, fmt, (n, k), &mut rng)?;
        let sets = weights.len();
        let wdev = rotated_bf16_weights(gpu, (n, k), &mut rng)?;
        let wsets = wdev.len();
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
            let (xp, yp) = (dptr(gpu, &x), dptr(gpu, &y));
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
    records.extend(bench_prologues(ctx, filter, &mut rng)?);
    records.extend(bench_ring_mlp(ctx, filter, &mut rng)?);
    records.extend(super::super::linear_mma_exact::bench(ctx, filter)?);
    Ok(records)
}

/// The kernel a stream, ring or mma route launches on `(n, k)` (16-byte aligned planes and
/// the scratch assumed): the register mma tile for an mma ring tile past its shapes
/// ([`super::super::linear_mma_exact::mma_substitute`]); the ring kernel's stream fallback where K
/// is not a multiple of 1024, then the stream kernel's substitutes (`stream_substitute`:
/// at most two, a direct split past its K runs the default split, which may take the
/// small-K split). For labels and for [`launched_direct`].
pub fn launched_route(route: &ExactRoute, n: usize, k: usize) -> ExactRoute {
    let mut r = route.clone();
    if let Some(tile) = super::super::linear_mma_exact::mma_substitute(&r, n, k) {
        r.kernel = ExactKernel::Mma(tile);
    }
    if matches!(r.kernel, ExactKernel::Ring(_)) && !k.is_multiple_of(1024) {
        r = r.stream_fallback();
    }
    for _ in 0..2 {
        match stream_substitute(&r, n, k, false) {
            Some(t) => r.kernel = ExactKernel::Stream(t),
            None => break,
        }
    }
    r
}

/// A one-column bench launch's inputs: rotation copies of a random `[n, k]` weight, x (two
/// rows' worth, for the SwiGLU prologue), a norm weight, y and the residual (used with that
/// epilogue), drawn in that order.
struct OneColumnCase {
    layout: Layout,
    weights: Vec<DeviceWeight>,
    kind: PrologueKind,
    epilogue: Epilogue,
    x: CudaSlice<f32>,
    nw: CudaSlice<f32>,
    y: CudaSlice<f32>,
    r: CudaSlice<f32>,
}

impl OneColumnCase {
    fn new(
        gpu: &Gpu,
        format: &'static Format,
        (n, k): (usize, usize),
        kind: PrologueKind,
        epilogue: Epilogue,
        rng: &mut impl Rng,
    ) -> Result<Self, GpuError> {
        let (layout, weights) = rotated_weights(gpu, format, (n, k), rng)?;
        let xs: Vec<f32> = (0..2 * k).map(|_| rng.sample(StandardNormal)).collect();
        let nw: Vec<f32> = (0..k).map(|_| rng.sample(StandardNormal)).collect();
        Ok(OneColumnCase {
            layout,
            weights,
            kind,
            epilogue,
            x: gpu.upload(&xs)?,
            nw: gpu.upload(&nw)?,
            y: gpu.alloc_zeros(n)?,
            r: gpu.alloc_zeros(n)?,
        })
    }

    fn x(&self, gpu: &Gpu) -> u64 {
        dptr(gpu, &self.x)
    }

    fn y(&self, gpu: &Gpu) -> u64 {
        dptr(gpu, &self.y)
    }

    fn residual(&self, gpu: &Gpu) -> Option<u64> {
        (self.epilogue == Epilogue::Residual).then(|| dptr(gpu, &self.r))
    }

    fn prologue(&self, gpu: &Gpu) -> Prologue {
        Prologue::of_kind(self.kind, dptr(gpu, &self.nw), 1e-6, (0, 0))
    }
}

/// The one-column decode linears with their prologues and epilogues, 20 launches back to
/// back per sample (as a captured decode step runs them, PDL included), q4_g64: SmolLM2's
/// five (qkv, o, gate_up, down, the head) and 576 -> 1536 + RMSNorm, each by the route the
/// engine takes (name suffixed ` (route)`) and by every one-column stream split launched as
/// it is (the direct splits where K fits); and the 27B's two fused shapes (the route and
/// the stream split it replaced).
fn bench_prologues(
    ctx: &BenchCtx,
    filter: Option<&str>,
    rng: &mut impl Rng,
) -> Result<Vec<BenchRecord>, GpuError> {
    let gpu = ctx.gpu;
    let what = "linear_exact prologue q4_g64 x20";
    let mut records = Vec::new();
    if !crate::bench::filter_may_keep(filter, &[what]) {
        return Ok(records);
    }
    let q4 = crate::formats::format("q4_g64").expect("registered");
    let zc = PrologueKind::RmsNorm(NormWeight::ZeroCentred);
    let plain = PrologueKind::RmsNorm(NormWeight::Plain);
    let none = PrologueKind::None;
    let cases = [
        ((960, 576), plain, Epilogue::None),
        ((576, 576), none, Epilogue::Residual),
        ((3072, 576), plain, Epilogue::None),
        ((576, 1536), PrologueKind::Swiglu, Epilogue::Residual),
        ((49152, 576), plain, Epilogue::None),
        ((1536, 576), plain, Epilogue::None),
        ((17408, 5120), zc, Epilogue::None),
        ((5120, 17408), PrologueKind::Swiglu, Epilogue::Residual),
    ];
    for ((n, k), kind, epilogue) in cases {
        let case = OneColumnCase::new(gpu, q4, (n, k), kind, epilogue, rng)?;
        let (layout, weights, sets) = (case.layout, &case.weights, case.weights.len());
        let (xp, yp, res, prologue) = (
            case.x(gpu),
            case.y(gpu),
            case.residual(gpu),
            case.prologue(gpu),
        );
        let chosen = ExactRoute::choose_with(q4, 1, epilogue, kind).expect("instantiated");
        // (route, label, launched as it is)
        let mut runs = vec![(
            chosen.clone(),
            format!("{} (route)", launched_route(&chosen, n, k).spec().entry),
            false,
        )];
        let splits: Vec<StreamTile> = if k <= 2048 {
            stream_tiles(1)
                .iter()
                .copied()
                .filter(|&t| !t.direct || direct_fits(t, 1, k))
                .collect()
        } else {
            vec![stream_tile(1)]
        };
        for tile in splits {
            let route = ExactRoute {
                kernel: ExactKernel::Stream(tile),
                ..chosen.clone()
            };
            runs.push((route.clone(), route.spec().entry, true));
        }
        for (route, label, exact_tile) in runs {
            let over = Override {
                exact_tile,
                ..Override::default()
            };
            let us = median_batched_us(gpu, 15, |i| {
                launch_inner(
                    gpu,
                    &route,
                    &weights[i % sets],
                    xp,
                    &prologue,
                    res,
                    yp,
                    1,
                    over,
                )
            })?;
            let bytes = (layout.total_bytes + k * 4 + n * 4) as f64;
            records.push(ctx.record(
                what,
                label,
                format!("T=1 N={n} K={k}"),
                us,
                bytes,
                2.0 * (n * k) as f64,
            ));
        }
    }
    Ok(records)
}

/// The 27B's MLP at one column (q4_g64, the default ring splits, 20 launches back to back
/// per sample): gate_up 34816x5120 with RMSNorm(1 + w), without and with the SwiGLU
/// epilogue ([`ring_with_swiglu_epilogue`]), and down 5120x17408 + residual with the SwiGLU
/// prologue and without it (reading gate_up's silu(g) * u): the two forms of the pair.
fn bench_ring_mlp(
    ctx: &BenchCtx,
    filter: Option<&str>,
    rng: &mut impl Rng,
) -> Result<Vec<BenchRecord>, GpuError> {
    let gpu = ctx.gpu;
    let what = "linear_exact ring mlp q4_g64 x20";
    let mut records = Vec::new();
    if !crate::bench::filter_may_keep(filter, &[what]) {
        return Ok(records);
    }
    let q4 = crate::formats::format("q4_g64").expect("registered");
    let zc = PrologueKind::RmsNorm(NormWeight::ZeroCentred);
    let cases = [
        ((34816, 5120), zc, Epilogue::None),
        ((34816, 5120), zc, Epilogue::Swiglu),
        ((5120, 17408), PrologueKind::Swiglu, Epilogue::Residual),
        ((5120, 17408), PrologueKind::None, Epilogue::Residual),
    ];
    for ((n, k), kind, epilogue) in cases {
        let case = OneColumnCase::new(gpu, q4, (n, k), kind, epilogue, rng)?;
        let (layout, weights, sets) = (case.layout, &case.weights, case.weights.len());
        let (xp, yp, res, prologue) = (
            case.x(gpu),
            case.y(gpu),
            case.residual(gpu),
            case.prologue(gpu),
        );
        let route = if epilogue == Epilogue::Swiglu {
            let plain = ExactRoute::choose_with(q4, 1, Epilogue::None, kind).expect("instantiated");
            ring_with_swiglu_epilogue(&plain, &weights[0]).expect("a ring split of even rows")
        } else {
            ExactRoute::choose_with(q4, 1, epilogue, kind).expect("instantiated")
        };
        let us = median_batched_us(gpu, 15, |i| {
            launch_inner(
                gpu,
                &route,
                &weights[i % sets],
                xp,
                &prologue,
                res,
                yp,
                1,
                Override::default(),
            )
        })?;
        let n_out = if epilogue == Epilogue::Swiglu {
            n / 2
        } else {
            n
        };
        let bytes = (layout.total_bytes + k * 4 + n_out * 4) as f64;
        records.push(ctx.record(
            what,
            route.spec().entry,
            format!("T=1 N={n} K={k}"),
            us,
            bytes,
            2.0 * (n * k) as f64,
        ));
    }
    Ok(records)
}
