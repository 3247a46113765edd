//! The exact linear route for prefill: a tiled f32 GEMM on CUDA cores,
//! `Y[T,N] = X[T,K] W[N,K]^T (+ R)`, f32 activations in and out, W in any weight format,
//! f32 FMA accumulation (`templates/linear/sgemm.cu`). It replaces the exact GEMV tiled 8
//! columns per launch (`linear_exact`) from T = 9 up: that one reads the weights T/8 times;
//! this one reads each weight tile once per 64 or 128 tokens, out of L2 after the first.
//!
//! Tiles: 128 weight rows x `bt` tokens (64 for T <= 64, else 128) x 32 along K, 256
//! threads, an 8 x `bt`/16 register tile per thread; weight tiles decoded into shared memory
//! as f32 by the format's own `fmt_decode_group` (so every route sees the same weights to
//! the bit), next tile staged in registers while the current one is multiplied.
//!
//! Counting (H200: 132 SMs, f32 FMA peak about 67 TFLOP/s at boost, HBM about 4.3 TB/s):
//! - flops `2 T N K`; per k-tile a thread issues 64 FMA (bt 128) against 4 `LDS.128`, so the
//!   shared-memory pipe is not the limit; one decode group per weight row per k-tile costs
//!   the 128 weight threads ~2-4 instructions per weight against bt FMAs per weight.
//! - bytes: W once per T tile from DRAM at worst (f32 17408x5120 at T = 4096: 32 x 356 MB
//!   = 11 GB, 2.7 ms against 21 ms of FMA; quantized formats 4-8x less), X per N tile out of
//!   L2.
//! - Registers (ptxas -v, sm_90): bt = 128 needs 141-151 registers uncapped, so one 8-warp
//!   block per SM; the default build caps them at 128 (`__launch_bounds__(256, 2)`: two
//!   blocks, 16 warps per SM, each block's barriers and decode hidden behind the other's
//!   FMAs), which the dense formats take with no spill and the quantized ones with a 64-byte
//!   spill reloaded once per k-tile (per 2048 FMAs). The `_b1` routes are the uncapped build,
//!   for the benchmark to compare.
//! - Prediction, not yet measured: 30-40 TFLOP/s (45-60 % of peak) on 1536x576 and
//!   17408x5120 at T = 4096, any format, about 200 us and 20 ms; 576x1536 less (N = 576 is
//!   4.5 row tiles: 160 blocks on 264 slots, 61 % of the SMs busy), about 20-25 TFLOP/s. At
//!   T = 512 the SmolLM2 shapes give only 48-60 blocks (under half the SMs), so 8-12
//!   TFLOP/s. SmolLM2 prefill needs ~0.27 GFLOP per token in its linears, so 52 k tokens/s
//!   asks ~14 TFLOP/s of them.

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use super::linear::Epilogue;
use super::linear_exact::ExactRoute;
use super::weight::{
    random_bf16, random_weight, rotated_bf16_weights, rotated_weights, DeviceWeight,
};
use crate::bench::{median_us, BenchCtx, BenchRecord};
use crate::formats::{Format, FormatKind, Layout};
use crate::gpu::{dptr, CudaSlice, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::jit::KernelSpec;
use crate::qualify::{Outcome, ALLOW_F32};

/// Weight rows per block.
pub const BN: usize = 128;
/// K per shared-memory tile.
pub const BK: usize = 32;
/// Token tiles.
pub const BT: [u32; 2] = [64, 128];
/// Threads per block.
const THREADS: u32 = 256;
/// The default `__launch_bounds__` blocks per SM.
pub const DEFAULT_MINB: u32 = 2;
/// The smallest T this route takes (below it the exact GEMV reads the weights once).
pub const MIN_T: usize = 9;

/// One instantiation.
#[derive(Debug, Clone, PartialEq)]
pub struct SgemmRoute {
    pub format: &'static Format,
    /// `None` or `Residual` (`Y = X W^T + R`, R may be Y itself).
    pub epilogue: Epilogue,
    /// Tokens per block tile (64 or 128).
    pub bt: u32,
    /// Blocks per SM the kernel is built for (`__launch_bounds__`): 2 (the default: at most
    /// 128 registers, 16 warps per SM) or 1 (no cap; about 150 registers, 8 warps), the
    /// latter instantiated at bt = 128 so that the benchmark can time one against the other.
    pub minb: u32,
}

/// Elements one `fmt_decode_group` call writes: the format's group, at least 32 (dense and
/// row-scaled formats decode 32 at a time).
pub fn decode_unit(format: &Format) -> usize {
    format.group.max(32)
}

/// The staging registers of one decode group: (u32 words of quants, u16 halves of scales),
/// from the format's own layout of a `[1, unit]` weight.
pub fn staging(format: &Format) -> (usize, usize) {
    let unit = decode_unit(format);
    let l = Layout::new(format, 1, unit).expect("one decode group is a valid row");
    assert!(
        l.q_row_bytes.is_multiple_of(4) && l.s_row_bytes.is_multiple_of(2),
        "{}: a decode group is not whole words",
        format.name
    );
    (l.q_row_bytes / 4, l.s_row_bytes / 2)
}

impl SgemmRoute {
    pub fn spec(&self) -> KernelSpec {
        let e = match self.epilogue {
            Epilogue::None => "plain",
            Epilogue::Residual => "res",
            Epilogue::Swiglu | Epilogue::Conv => {
                panic!("the sgemm route has no {:?} epilogue", self.epilogue)
            }
        };
        let (qw, sh) = staging(self.format);
        let b = if self.minb == DEFAULT_MINB {
            String::new()
        } else {
            format!("_b{}", self.minb)
        };
        KernelSpec::new(
            "linear_sgemm",
            "linear/sgemm.cu",
            format!("linear_sgemm_{}_{e}_t{}{b}", self.format.name, self.bt),
        )
        .param("format", &self.format.name)
        .param("epilogue", self.epilogue)
        .param("bt", self.bt)
        .param("qw", qw as u32)
        .param("sh", sh as u32)
        .param("minb", self.minb)
    }

    /// The route for `t` tokens: None below [`MIN_T`] (the GEMV's ground) and for SwiGLU;
    /// 64-token tiles up to T = 64, 128 beyond.
    pub fn choose(format: &'static Format, t: usize, epilogue: Epilogue) -> Option<SgemmRoute> {
        if t < MIN_T || epilogue == Epilogue::Swiglu {
            return None;
        }
        let unit = decode_unit(format);
        if unit != 32 && unit != 64 {
            return None;
        }
        Some(SgemmRoute {
            format,
            epilogue,
            bt: if t <= 64 { 64 } else { 128 },
            minb: DEFAULT_MINB,
        })
    }

    /// The launch grid for `(t, n)`: row tiles in x, token tiles in y.
    pub fn grid(&self, t: usize, n: usize) -> (u32, u32, u32) {
        (
            n.div_ceil(BN) as u32,
            t.div_ceil(self.bt as usize) as u32,
            1,
        )
    }
}

/// Every format with a 32- or 64-wide decode group, both epilogues, both token tiles at the
/// default occupancy, and bt = 128 at one block per SM.
fn all_routes() -> Vec<SgemmRoute> {
    let mut v = Vec::new();
    for format in crate::formats::registry().iter() {
        if ![32, 64].contains(&decode_unit(format)) {
            continue;
        }
        for (bt, minb) in [(64, DEFAULT_MINB), (128, DEFAULT_MINB), (128, 1)] {
            for epilogue in [Epilogue::None, Epilogue::Residual] {
                v.push(SgemmRoute {
                    format,
                    epilogue,
                    bt,
                    minb,
                });
            }
        }
    }
    v
}

pub fn instantiations() -> Vec<KernelSpec> {
    all_routes().iter().map(SgemmRoute::spec).collect()
}

/// Whether a `[N, K]` weight in `format` can run here: the rule of
/// [`super::linear_exact::supports`] (16-byte aligned activation rows; whole decode groups
/// for every non-dense format, so a 32-wide k-tile never ends inside a group).
pub fn supports(format: &Format, k: usize) -> bool {
    let dense = format.kind == FormatKind::Dense;
    k.is_multiple_of(4) && (dense || k.is_multiple_of(decode_unit(format)))
}

/// Queues `y = x w^T (+ r)`: `x [t, K]`, `y [t, N]`, `r [t, N]` f32 device addresses, `x`
/// 16-byte aligned; `r` may equal `y`.
pub fn launch(
    gpu: &Gpu,
    route: &SgemmRoute,
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
    assert_eq!(
        residual.is_some(),
        route.epilogue == Epilogue::Residual,
        "a residual launch needs the residual and only it"
    );
    assert!(x.is_multiple_of(16), "x must be 16-byte aligned");
    assert!(
        t * n.max(k) < i32::MAX as usize && n < i32::MAX as usize,
        "sizes exceed the kernel's int arguments"
    );
    if t == 0 || n == 0 {
        return Ok(());
    }
    let f = gpu.function(&route.spec())?;
    let (q, s) = w.planes(gpu);
    let (stride_q, stride_s) = (w.layout.q_row_bytes as i64, w.layout.s_row_bytes as i64);
    let r0 = residual.unwrap_or(y);
    let vec = (n.is_multiple_of(4) && y.is_multiple_of(16) && r0.is_multiple_of(16)) as i32;
    let (ti, ni, ki) = (t as i32, n as i32, k as i32);
    let cfg = LaunchConfig {
        grid_dim: route.grid(t, n),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.stream().launch_builder(&f);
    b.arg(&q)
        .arg(&s)
        .arg(&stride_q)
        .arg(&stride_s)
        .arg(&x)
        .arg(&r0)
        .arg(&y)
        .arg(&ti)
        .arg(&ni)
        .arg(&ki)
        .arg(&vec);
    // SAFETY: matches the signature of sgemm.cu (static shared memory only); the kernel
    // clamps loads to rows < N, tokens < T and k < K and guards every store; the caller
    // sizes x to t*K and y, r to t*N floats.
    unsafe { b.launch(cfg) }
        .map_err(|e| GpuError::driver(format!("launching {}", route.spec().entry), e))?;
    Ok(())
}

/// Shapes `(T, N, K)` every route is qualified on: linear_exact's odd small ones (K = 48
/// and 36 end inside a k-tile: dense formats only), N not a multiple of 4 (scalar
/// stores) nor of a row tile, T just past a token tile, an odd count of 32-wide k-tiles in
/// group-64 formats (K = 192), and SmolLM2's projections at T = 512 and 4096 (rows
/// subsampled above 1024).
const QUALIFY_SHAPES: [(usize, usize, usize); 9] = [
    (9, 64, 48),
    (17, 96, 36),
    (13, 144, 64),
    (33, 67, 128),
    (130, 130, 192),
    (65, 384, 576),
    (512, 576, 576),
    (200, 576, 1536),
    (4096, 1536, 576),
];

/// Runs `route` on `t` tokens with fresh random inputs and compares with the f64 oracle:
/// every row when N <= 1024, else the first, the last and 126 random ones (and then any
/// non-finite output anywhere fails the check). The output is poisoned with NaN first; with
/// `in_place` (residual routes) it holds the residual instead and the launch passes Y as R.
fn check(
    gpu: &Gpu,
    route: &SgemmRoute,
    w: &DeviceWeight,
    payload: &[u8],
    t: usize,
    in_place: bool,
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
    let dy = if in_place {
        gpu.upload(&r)?
    } else {
        gpu.upload(&vec![f32::NAN; t * n])?
    };
    let yp = dptr(gpu, &dy);
    let res =
        (route.epilogue == Epilogue::Residual).then(|| if in_place { yp } else { dptr(gpu, &dr) });
    launch(gpu, route, w, dptr(gpu, &dx), res, yp, t)?;
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
        (1024, 126),
    );
    let place = if in_place { " R=Y" } else { "" };
    Ok(Outcome::compare(
        route.spec().entry,
        format!("T={t} N={n} K={k}{place}"),
        &got,
        &want,
        ALLOW_F32,
    ))
}

/// Every route at every qualify shape its format takes, outputs poisoned, against the f64
/// oracle; residual routes also in place (R = Y) at one odd shape; the default q4_g64 and
/// f32 routes also at the 27B MLP up shape 17408x5120 (T = 256, rows subsampled).
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
        let mut cases: Vec<(usize, usize, usize, bool)> = QUALIFY_SHAPES
            .iter()
            .map(|&(t, n, k)| (t, n, k, false))
            .collect();
        if route.epilogue == Epilogue::Residual {
            cases.push((130, 130, 192, true));
            cases.push((70, 576, 576, true));
        }
        if route.bt == 128
            && route.minb == DEFAULT_MINB
            && route.epilogue == Epilogue::None
            && ["q4_g64", "f32"].contains(&route.format.name.as_str())
        {
            cases.push((256, 17408, 5120, false));
        }
        for (t, n, k, in_place) in cases {
            if !supports(route.format, k) {
                continue;
            }
            let (w, payload) = random_weight(gpu, route.format, n, k, rng)?;
            out.push(check(gpu, &route, &w, &payload, t, in_place, rng)?);
        }
    }
    Ok(out)
}

/// The GEMM at prefill shapes (T = 512 and 4096 on SmolLM2's projections, 4096 on the 27B
/// MLP up) in f32, q8_g32 and q4_g64, both token tiles where T allows, against cuBLAS bf16 at
/// the same shape in the same run (a peer of lower precision: the ceiling, not a rival);
/// and the exact GEMV it replaces once, at T = 512 on 1536x576.
pub fn bench(ctx: &BenchCtx, filter: Option<&str>) -> Result<Vec<BenchRecord>, GpuError> {
    let gpu = ctx.gpu;
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let names: Vec<&str> = ["f32", "q8_g32", "q4_g64"]
        .into_iter()
        .filter(|n| {
            // `what` ("linear_sgemm f32") or a route name ("linear_sgemm_f32_plain_t128").
            let route = format!("linear_sgemm_{n}_");
            crate::bench::filter_may_keep(filter, &[&format!("linear_sgemm {n}"), &route])
        })
        .collect();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let blas = crate::gpu::Blas::new(gpu)?;
    let mut records = Vec::new();
    let shapes: [((usize, usize), &[usize]); 3] = [
        ((1536, 576), &[512, 4096]),
        ((576, 1536), &[512, 4096]),
        ((17408, 5120), &[4096]),
    ];
    for name in names {
        let fmt = crate::formats::format(name).expect("registered");
        let what = format!("linear_sgemm {name}");
        for &((n, k), ts) in &shapes {
            let (layout, weights) = rotated_weights(gpu, fmt, (n, k), &mut rng)?;
            let sets = weights.len();
            let wdev = rotated_bf16_weights(gpu, (n, k), &mut rng)?;
            let wsets = wdev.len();
            for &t in ts {
                let xs: Vec<f32> = (0..t * k).map(|_| rng.sample(StandardNormal)).collect();
                let x = gpu.upload(&xs)?;
                let y: CudaSlice<f32> = gpu.alloc_zeros(t * n)?;
                let (xb, _) = random_bf16(t * k, 1.0, &mut rng);
                let xb = gpu.upload(&xb)?;
                let mut yb: CudaSlice<u16> = gpu.alloc_zeros(t * n)?;
                let peer_us = median_us(gpu, 3, 20, |i| {
                    blas.gemm_bf16(gpu, &wdev[i % wsets], &xb, &mut yb, (t, n, k))
                })?;
                let (xp, yp) = (dptr(gpu, &x), dptr(gpu, &y));
                let bytes = (layout.total_bytes + t * k * 4 + t * n * 4) as f64;
                let flops = 2.0 * (t * n * k) as f64;
                let shape = format!("T={t} N={n} K={k}");
                // The chosen route first, then the other tile and occupancy.
                let chosen = SgemmRoute::choose(fmt, t, Epilogue::None).expect("T >= 9");
                let mut routes = vec![chosen.clone()];
                for (bt, minb) in [(64, DEFAULT_MINB), (128, DEFAULT_MINB), (128, 1)] {
                    let r = SgemmRoute {
                        format: fmt,
                        epilogue: Epilogue::None,
                        bt,
                        minb,
                    };
                    if r != chosen {
                        routes.push(r);
                    }
                }
                let mut timed: Vec<(String, f64)> = Vec::new();
                for route in routes {
                    let us = median_us(gpu, 3, 20, |i| {
                        launch(gpu, &route, &weights[i % sets], xp, None, yp, t)
                    })?;
                    timed.push((route.spec().entry, us));
                }
                if name == "f32" && t == 512 && (n, k) == (1536, 576) {
                    let route = ExactRoute::choose(fmt, t, Epilogue::None);
                    let us = median_us(gpu, 2, 5, |i| {
                        super::linear_exact::launch(
                            gpu,
                            &route,
                            &weights[i % sets],
                            xp,
                            None,
                            yp,
                            t,
                        )
                    })?;
                    timed.push((route.spec().entry, us));
                }
                for (entry, us) in timed {
                    let mut rec = ctx.record(what.clone(), entry, shape.clone(), us, bytes, flops);
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

    fn fmt(name: &str) -> &'static Format {
        crate::formats::format(name).unwrap()
    }

    #[test]
    fn supports_matches_the_exact_route() {
        for f in crate::formats::registry().iter() {
            for k in [
                4usize, 36, 48, 64, 96, 128, 144, 192, 576, 1536, 5120, 17408,
            ] {
                assert_eq!(
                    supports(f, k),
                    super::super::linear_exact::supports(f, k),
                    "{} K={k}",
                    f.name
                );
            }
        }
        assert!(supports(fmt("f32"), 36) && !supports(fmt("f32"), 6));
        assert!(supports(fmt("q4_g64"), 192) && !supports(fmt("q4_g64"), 96));
        assert!(supports(fmt("i8_row"), 64) && !supports(fmt("i8_row"), 48));
    }

    #[test]
    fn staging_holds_one_decode_group() {
        let cases = [
            ("f32", 32, 0),
            ("bf16", 16, 0),
            ("f16", 16, 0),
            ("q8_g32", 8, 1),
            ("q4_g64", 8, 1),
            ("q6_g64", 12, 1),
            ("q5_g64", 10, 1),
            ("q4_1_g32", 4, 2),
            ("i8_row", 8, 2),
        ];
        for (name, qw, sh) in cases {
            assert_eq!(staging(fmt(name)), (qw, sh), "{name}");
        }
        // Every registered format has a route (a new one with a wider group must say so).
        for f in crate::formats::registry().iter() {
            assert!(
                SgemmRoute::choose(f, 9, Epilogue::None).is_some(),
                "{}",
                f.name
            );
        }
    }

    #[test]
    fn choose_takes_t_from_nine_and_picks_the_token_tile() {
        let f = fmt("q4_g64");
        for t in 0..9 {
            assert!(SgemmRoute::choose(f, t, Epilogue::None).is_none(), "T={t}");
        }
        assert!(SgemmRoute::choose(f, 100, Epilogue::Swiglu).is_none());
        assert_eq!(SgemmRoute::choose(f, 9, Epilogue::None).unwrap().bt, 64);
        assert_eq!(SgemmRoute::choose(f, 64, Epilogue::None).unwrap().bt, 64);
        assert_eq!(
            SgemmRoute::choose(f, 65, Epilogue::Residual).unwrap().bt,
            128
        );
        assert_eq!(SgemmRoute::choose(f, 4096, Epilogue::None).unwrap().bt, 128);
    }

    #[test]
    fn the_grid_covers_every_output_once() {
        let r = SgemmRoute::choose(fmt("f32"), 4096, Epilogue::None).unwrap();
        assert_eq!(r.grid(4096, 1536), (12, 32, 1));
        assert_eq!(r.grid(4096, 576), (5, 32, 1));
        assert_eq!(r.grid(130, 130), (2, 2, 1));
        for (t, n) in [
            (9usize, 64usize),
            (65, 67),
            (128, 128),
            (129, 129),
            (4096, 17408),
        ] {
            for bt in BT {
                let r = SgemmRoute {
                    format: fmt("q8_g32"),
                    epilogue: Epilogue::None,
                    bt,
                    minb: DEFAULT_MINB,
                };
                let (gx, gy, _) = r.grid(t, n);
                let (gx, gy) = (gx as usize, gy as usize);
                assert!(gx * BN >= n && (gx - 1) * BN < n, "T={t} N={n}");
                assert!(gy * bt as usize >= t && (gy - 1) * (bt as usize) < t);
                assert!(gy <= 65535);
            }
        }
    }

    #[test]
    fn every_chosen_route_is_instantiated_once() {
        let specs = instantiations();
        assert_eq!(specs.len(), crate::formats::registry().iter().count() * 6);
        for f in crate::formats::registry().iter() {
            for t in [9, 13, 64, 65, 512, 4096] {
                for e in [Epilogue::None, Epilogue::Residual] {
                    let entry = SgemmRoute::choose(f, t, e).unwrap().spec().entry;
                    assert!(specs.iter().any(|s| s.entry == entry), "{entry}");
                }
            }
        }
        let mut names: Vec<_> = specs.iter().map(|s| s.entry.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(
            names.len(),
            specs.len(),
            "an entry name is registered twice"
        );
        assert!(names.iter().all(|n| n.starts_with("linear_sgemm_")));
        // `--filter sgemm` selects these and nothing else.
        let others = crate::jit::registry::all()
            .into_iter()
            .filter(|s| s.entry.contains("sgemm") && s.family != "linear_sgemm")
            .count();
        assert_eq!(others, 0);
    }

    /// Every instantiation renders and compiles for sm_90 through NVRTC, and its PTX keeps
    /// the staging and accumulator arrays in registers (no local-memory frame).
    #[test]
    fn every_instantiation_compiles_for_sm_90() {
        let jit = crate::jit::test_jit();
        for spec in instantiations() {
            let src = jit.render(&spec).unwrap();
            assert!(src.contains(&format!("{}(", spec.entry)));
            let ptx = crate::jit::test_sm90_ptx(&jit, &spec);
            assert!(
                !ptx.contains(".local"),
                "{} keeps an array in local memory",
                spec.entry
            );
        }
    }
}
