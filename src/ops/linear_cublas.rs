//! The cuBLAS prefill route (`--prefill-cublas`, opt-in, lossy): `Y[T,N] = X[T,K] W[N,K]^T
//! (+ R)` for long prompts and perplexity windows on the tensor cores. Per tile of weight
//! rows, the weight is dequantized to bf16 into a reusable scratch (`templates/linear/
//! dequant.cu`, the format's own `fmt_decode_group` rounded to nearest even, written out
//! through shared memory in coalesced 16-byte words); the f32 activations are rounded to
//! bf16 once per call (`templates/linear/act_bf16.cu`, 8 per thread); cuBLAS `GemmEx` multiplies them (bf16 A
//! and B, f32 accumulation) straight into the f32 output, whose columns for the tile are a
//! strided block of it (`ldc = N`), with `beta = 1` on the residual already there.
//!
//! Precision: bf16 weights and activations, each rounding a relative error of at most 2^-9
//! (rms about 2^-9/sqrt(3)); a dot product's relative error is about their root sum of
//! squares, ~1.6e-3, against the f32 routes' ~1e-6. Qualified against the f64 oracle with
//! the bf16 allowance (1e-2). A hi+lo split of the activations (two GEMMs) would take only
//! the activations' share of that error away, for twice the GEMM time; not done.
//!
//! Counting (H200; cuBLAS bf16 measured about 790 TFLOP/s at large shapes):
//! - GEMM: `2 T N K` flops; the 27B's linears are ~54 GFLOP per token, 221 TFLOP per
//!   4096-token window: ~0.3-0.4 s at 550-750 TFLOP/s.
//! - Dequant: per weight, its stored bytes read plus 2 bytes written and read back by cuBLAS
//!   (out of L2 at best): 27B params at q4_g64 ~ 0.56 + 2 bytes each, ~70 GB per window
//!   at ~4 TB/s, ~17 ms; per token of a 4096 window it is noise, at T = 64 the dequant
//!   costs as much as ~30 % of the GEMM, hence [`MIN_T`].
//! - Activations: T K (4 + 2) bytes per linear, under 1 % of the window.

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::linear::Epilogue;
use super::linear_sgemm::decode_unit;
use super::weight::{random_weight, DeviceWeight};
use crate::bench::{median_us, BenchCtx, BenchRecord};
use crate::formats::Format;
use crate::gpu::{dptr, Blas, CudaSlice, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::jit::KernelSpec;
use crate::qualify::{Outcome, ALLOW_BF16};

/// The fewest tokens the route takes: below it the f32 tiled GEMM (whose weight traffic is
/// the stored bytes, not 4.5 bytes per weight) is as fast, and exact.
pub const MIN_T: usize = 64;
/// Most bf16 elements of the weight scratch (128 MiB): a tile of rows is as many whole
/// rows as fit, in multiples of [`ROW_ALIGN`] (the 248320 x 5120 head runs in 20 tiles).
pub const SCRATCH_ELEMS: usize = 64 << 20;
/// Tile heights are multiples of this (cuBLAS's output tiles; keeps `ldc` offsets aligned).
pub const ROW_ALIGN: usize = 256;
const BLOCK: u32 = 256;

/// The dequantization kernel of one format.
#[derive(Debug, Clone, PartialEq)]
pub struct DequantRoute {
    pub format: &'static Format,
}

impl DequantRoute {
    pub fn spec(&self) -> KernelSpec {
        KernelSpec::new(
            "prefill_cublas",
            "linear/dequant.cu",
            format!("prefill_cublas_dequant_{}", self.format.name),
        )
        .param("format", &self.format.name)
        .param("block", BLOCK)
    }
}

fn all_routes() -> Vec<DequantRoute> {
    crate::formats::registry()
        .iter()
        .filter(|f| [32, 64].contains(&decode_unit(f)))
        .map(|format| DequantRoute { format })
        .collect()
}

/// The activations' conversion to bf16 (`templates/linear/act_bf16.cu`).
pub fn act_spec() -> KernelSpec {
    KernelSpec::new(
        "prefill_cublas",
        "linear/act_bf16.cu",
        "prefill_cublas_act_bf16",
    )
}

pub fn instantiations() -> Vec<KernelSpec> {
    let mut v: Vec<KernelSpec> = all_routes().iter().map(DequantRoute::spec).collect();
    v.push(act_spec());
    v
}

/// Queues `y[i] = bf16(x[i])` for `n` f32 at `x` into u16 bf16 bits at `y`: 8 per thread
/// where `n` is a multiple of 8 and both addresses 16-byte aligned, else elementwise's
/// one-per-thread kernel (the same values).
pub fn launch_act_bf16(gpu: &Gpu, x: u64, y: u64, n: usize) -> Result<(), GpuError> {
    if !(n.is_multiple_of(8) && x.is_multiple_of(16) && y.is_multiple_of(16)) {
        return super::elementwise::f32_to_bf16(gpu, x, y, n);
    }
    if n == 0 {
        return Ok(());
    }
    let spec = act_spec();
    let f = gpu.function(&spec)?;
    let n8 = (n / 8) as i64;
    let blocks = (n / 8)
        .div_ceil(256)
        .min(gpu.props().sm_count as usize * 32) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.stream().launch_builder(&f);
    b.arg(&x).arg(&y).arg(&n8);
    // SAFETY: matches act_bf16.cu; the caller sizes x to n f32 and y to n u16, both
    // 16-byte aligned (checked above), n a multiple of 8.
    unsafe { b.launch(cfg) }
        .map_err(|e| GpuError::driver(format!("launching {}", spec.entry), e))?;
    Ok(())
}

/// Whether a `[N, K]` weight in `format` can take this route: whole decode groups per row
/// (so every group's bf16 output is whole 16-byte words), which also keeps cuBLAS's leading
/// dimensions multiples of 8 elements.
pub fn supports(format: &Format, k: usize) -> bool {
    let unit = decode_unit(format);
    (unit == 32 || unit == 64) && k > 0 && k.is_multiple_of(unit)
}

/// Weight rows per tile for rows of `k` values with a scratch of `cap` elements: all `n`
/// when they fit, else the most multiples of [`ROW_ALIGN`] that fit (at least one).
pub fn tile_rows(n: usize, k: usize, cap: usize) -> usize {
    if n * k <= cap {
        return n.max(1);
    }
    ((cap / k) / ROW_ALIGN * ROW_ALIGN).max(ROW_ALIGN).min(n)
}

/// Queues the bf16 decode of rows `[row0, row0 + rows)` of `w` into `out` (a device address
/// of `rows * K` bf16, 16-byte aligned).
pub fn launch_dequant(
    gpu: &Gpu,
    w: &DeviceWeight,
    row0: usize,
    rows: usize,
    out: u64,
) -> Result<(), GpuError> {
    let (n, k) = (w.layout.n, w.layout.k);
    assert!(
        supports(w.format, k),
        "K = {k} does not fit {}",
        w.format.name
    );
    assert!(row0 + rows <= n, "rows past the weight");
    assert!(out.is_multiple_of(16), "the output must be 16-byte aligned");
    let items = rows * (k / decode_unit(w.format));
    if items == 0 {
        return Ok(());
    }
    let route = DequantRoute { format: w.format };
    let f = gpu.function(&route.spec())?;
    let (q, s) = w.planes(gpu);
    let (stride_q, stride_s) = (w.layout.q_row_bytes as i64, w.layout.s_row_bytes as i64);
    let (r0, ri, ki) = (row0 as i32, rows as i32, k as i32);
    let cfg = LaunchConfig {
        grid_dim: (items.div_ceil(BLOCK as usize) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.stream().launch_builder(&f);
    b.arg(&q)
        .arg(&s)
        .arg(&stride_q)
        .arg(&stride_s)
        .arg(&r0)
        .arg(&ri)
        .arg(&ki)
        .arg(&out);
    // SAFETY: matches dequant.cu; rows are bounds-checked above, the grid's tail threads
    // return, the caller sizes `out` to rows * K bf16.
    unsafe { b.launch(cfg) }
        .map_err(|e| GpuError::driver(format!("launching {}", route.spec().entry), e))?;
    Ok(())
}

/// The route's state on one GPU: the cuBLAS handle and the weight scratch (grown on first
/// need up to [`SCRATCH_ELEMS`], then reused: every use is ordered on the one stream), and
/// whether the route is on (the backend switches it; `bench model --prefill-cublas-ab`
/// times both routes over one load).
pub struct PrefillCublas {
    blas: Blas,
    scratch: Mutex<Option<CudaSlice<u16>>>,
    on: AtomicBool,
}

impl PrefillCublas {
    pub fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        Ok(PrefillCublas {
            blas: Blas::new(gpu)?,
            scratch: Mutex::new(None),
            on: AtomicBool::new(true),
        })
    }

    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    pub fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// Whether `t` rows of a `[_, k]` weight in `format` take this route (when it is on).
    pub fn takes(&self, format: &Format, k: usize, t: usize) -> bool {
        self.is_on() && t >= MIN_T && supports(format, k)
    }

    /// Queues `y = x w^T (+ r)`: `x [t, K]`, `y [t, N]`, `r [t, N]` f32 device addresses;
    /// `r` may equal `y` (in place).
    pub fn launch(
        &self,
        gpu: &Gpu,
        w: &DeviceWeight,
        x: u64,
        residual: Option<u64>,
        y: u64,
        t: usize,
    ) -> Result<(), GpuError> {
        self.launch_tiled(gpu, w, x, residual, y, t, SCRATCH_ELEMS)
    }

    /// [`Self::launch`] with a scratch of at most `cap` elements (qualify takes a small one
    /// to run several tiles at small shapes).
    #[allow(clippy::too_many_arguments)]
    pub fn launch_tiled(
        &self,
        gpu: &Gpu,
        w: &DeviceWeight,
        x: u64,
        residual: Option<u64>,
        y: u64,
        t: usize,
        cap: usize,
    ) -> Result<(), GpuError> {
        let (n, k) = (w.layout.n, w.layout.k);
        if t == 0 || n == 0 {
            return Ok(());
        }
        let rows = tile_rows(n, k, cap);
        // SAFETY: written in full by the conversion before cuBLAS reads it.
        let xb = unsafe { gpu.stream().alloc::<u16>(t * k) }
            .map_err(|e| GpuError::driver("allocating device memory", e))?;
        let xbp = dptr(gpu, &xb);
        launch_act_bf16(gpu, x, xbp, t * k)?;
        let beta = match residual {
            None => 0.0,
            Some(r) => {
                if r != y {
                    super::elementwise::copy2d(gpu, r, n, y, n, t, n)?;
                }
                1.0
            }
        };
        let mut scratch = self.scratch.lock().expect("scratch lock");
        if scratch.as_ref().is_none_or(|s| s.len() < rows * k) {
            // SAFETY: every tile is written by the dequant before cuBLAS reads it.
            *scratch = Some(
                unsafe { gpu.stream().alloc::<u16>(rows * k) }
                    .map_err(|e| GpuError::driver("allocating the bf16 weight scratch", e))?,
            );
        }
        let wb = dptr(gpu, scratch.as_ref().expect("allocated above"));
        for n0 in (0..n).step_by(rows) {
            let nt = rows.min(n - n0);
            launch_dequant(gpu, w, n0, nt, wb)?;
            self.blas
                .gemm_bf16_f32_at(wb, xbp, y + (n0 * 4) as u64, n, (t, nt, k), beta)?;
        }
        drop(xb);
        Ok(())
    }
}

/// Shapes `(T, N, K)` of the route's check: T at the route's floor and just past a cuBLAS
/// tile, N not a multiple of 4, K of odd group counts, SmolLM2's projections at 512 and
/// 4096 tokens (rows subsampled above 1024).
const QUALIFY_SHAPES: [(usize, usize, usize); 6] = [
    (64, 96, 64),
    (130, 67, 192),
    (65, 384, 576),
    (512, 576, 576),
    (200, 576, 1536),
    (4096, 1536, 576),
];

/// The dequant kernel against the host decode rounded to bf16 (`half`, round to nearest
/// even), bit for bit: rows `[row0, row0 + rows)` of a fresh random weight, into a scratch
/// poisoned with bf16 NaN (a value never written stays NaN and fails).
fn check_dequant(
    gpu: &Gpu,
    route: &DequantRoute,
    (n, k, row0, rows): (usize, usize, usize, usize),
    rng: &mut impl Rng,
) -> Result<Outcome, GpuError> {
    let (w, payload) = random_weight(gpu, route.format, n, k, rng)?;
    let out = gpu.upload(&vec![0x7fc0u16; rows * k])?;
    launch_dequant(gpu, &w, row0, rows, dptr(gpu, &out))?;
    gpu.synchronize()?;
    let got_bits = gpu.download(&out)?;
    let mut row = vec![0f32; k];
    let mut want_bits = Vec::with_capacity(rows * k);
    for r in row0..row0 + rows {
        crate::formats::decode_row(route.format, &w.layout, &payload, r, &mut row);
        want_bits.extend(row.iter().map(|&v| half::bf16::from_f32(v).to_bits()));
    }
    let differ = got_bits
        .iter()
        .zip(&want_bits)
        .filter(|(a, b)| a != b)
        .count();
    Ok(Outcome {
        route: route.spec().entry,
        shape: format!("N={n} K={k} rows {row0}..{} (bits differing)", row0 + rows),
        rel_l2: differ as f64,
        allowance: 0.0,
        pass: differ == 0 && got_bits.len() == want_bits.len(),
    })
}

/// The activation conversion against `half::bf16::from_f32`, bit for bit: fresh normal
/// values with ties, subnormals, infinities and NaNs (payloads and signs) planted, into a
/// poisoned output (0x7f81, a NaN `half` never makes); `n` a multiple of 8 (the 8-wide
/// kernel) or not (the fallback).
fn check_act(gpu: &Gpu, n: usize, rng: &mut impl Rng) -> Result<Outcome, GpuError> {
    let mut x: Vec<f32> = (0..n).map(|_| rng.sample(StandardNormal)).collect();
    let special = [
        f32::from_bits(0x3f80_8000), // a tie, rounds to even (down)
        f32::from_bits(0x3f81_8000), // a tie, rounds to even (up)
        f32::from_bits(0x0000_0001), // the smallest subnormal
        f32::from_bits(0x007f_ffff), // the largest subnormal
        f32::MAX,                    // rounds to infinity
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(0x7fc0_0001),
        f32::from_bits(0xff80_0001), // a signalling NaN, negative
        f32::from_bits(0x7fa1_2345),
        -0.0,
    ];
    for (i, &v) in special.iter().enumerate() {
        let at = (i * 7919) % n;
        x[at] = v;
    }
    let dx = gpu.upload(&x)?;
    let dy = gpu.upload(&vec![0x7f81u16; n])?;
    launch_act_bf16(gpu, dptr(gpu, &dx), dptr(gpu, &dy), n)?;
    gpu.synchronize()?;
    let got = gpu.download(&dy)?;
    let differ = got
        .iter()
        .zip(&x)
        .filter(|&(&g, &v)| g != half::bf16::from_f32(v).to_bits())
        .count();
    Ok(Outcome {
        route: act_spec().entry,
        shape: format!("n={n} (bits differing)"),
        rel_l2: differ as f64,
        allowance: 0.0,
        pass: differ == 0 && got.len() == n,
    })
}

/// The whole route (dequant, activation rounding, cuBLAS, residual) on fresh random inputs
/// against the f64 oracle of the unrounded weights and activations, bf16 allowance. The
/// output is poisoned with NaN, or holds the residual when `in_place` (then R = Y).
#[allow(clippy::too_many_arguments)]
fn check_route(
    gpu: &Gpu,
    p: &PrefillCublas,
    format: &'static Format,
    (t, n, k): (usize, usize, usize),
    epilogue: Epilogue,
    in_place: bool,
    cap: usize,
    rng: &mut impl Rng,
) -> Result<Outcome, GpuError> {
    let (w, payload) = random_weight(gpu, format, n, k, rng)?;
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
    let res = (epilogue == Epilogue::Residual).then(|| if in_place { yp } else { dptr(gpu, &dr) });
    p.launch_tiled(gpu, &w, dptr(gpu, &dx), res, yp, t, cap)?;
    gpu.synchronize()?;
    let all = gpu.download(&dy)?;
    let (got, want) = super::linear::sampled_check_f32(
        rng,
        format,
        &w.layout,
        &payload,
        &x,
        &r,
        &all,
        (t, n, k),
        epilogue,
        (1024, 126),
    );
    let e = if epilogue == Epilogue::Residual {
        "res"
    } else {
        "plain"
    };
    let tiles = n.div_ceil(tile_rows(n, k, cap));
    let place = if in_place { " R=Y" } else { "" };
    Ok(Outcome::compare(
        format!("prefill_cublas_{}_{e}", format.name),
        format!("T={t} N={n} K={k}{place} tiles={tiles}"),
        &got,
        &want,
        ALLOW_BF16,
    ))
}

/// Every dequant instantiation bit for bit (a row range inside a weight, and SmolLM2's and
/// the 27B's widths); then the whole route per format at every shape it takes, both
/// epilogues (residual also in place), once with a small scratch (several row tiles, the
/// last partial), and q4_g64 at the 27B MLP up shape 17408x5120 (T = 256, rows sampled).
pub fn qualify(
    gpu: &Gpu,
    rng: &mut impl Rng,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<Outcome>, GpuError> {
    let mut out = Vec::new();
    let mut srng = rand::rngs::StdRng::seed_from_u64(rng.random());
    for route in all_routes() {
        if !wanted(&route.spec().entry) {
            continue;
        }
        for case in [(300, 576, 37, 200), (64, 5120, 0, 64), (17, 192, 16, 1)] {
            if supports(route.format, case.1) {
                out.push(check_dequant(gpu, &route, case, &mut srng)?);
            }
        }
    }
    if wanted(&act_spec().entry) {
        for n in [4096 * 576, 1000, 8 * 12345] {
            out.push(check_act(gpu, n, &mut srng)?);
        }
    }
    let p = PrefillCublas::new(gpu)?;
    for route in all_routes() {
        let f = route.format;
        if !wanted(&format!("prefill_cublas_{}_", f.name)) {
            continue;
        }
        // (shape, epilogue, in place, scratch elements)
        type Case = ((usize, usize, usize), Epilogue, bool, usize);
        let mut cases: Vec<Case> = Vec::new();
        for &shape in &QUALIFY_SHAPES {
            cases.push((shape, Epilogue::None, false, SCRATCH_ELEMS));
        }
        cases.push(((130, 67, 192), Epilogue::Residual, false, SCRATCH_ELEMS));
        cases.push(((200, 576, 576), Epilogue::Residual, true, SCRATCH_ELEMS));
        // 1000 rows of 576 in tiles of 256 rows: four tiles, the last of 232.
        cases.push(((96, 1000, 576), Epilogue::Residual, true, 256 * 576));
        if f.name == "q4_g64" {
            cases.push(((256, 17408, 5120), Epilogue::None, false, SCRATCH_ELEMS));
        }
        for (shape, epilogue, in_place, cap) in cases {
            if !supports(f, shape.2) {
                continue;
            }
            out.push(check_route(
                gpu, &p, f, shape, epilogue, in_place, cap, &mut srng,
            )?);
        }
    }
    Ok(out)
}

/// The 27B's linear layers `(N, K, how many)`: attention q (with its gate), k, v stacked;
/// attention o; GDN in_proj (q, k, v, z, a, b stacked); GDN out; MLP gate and up; down.
pub const QWEN27B_LINEARS: [(usize, usize, usize); 6] = [
    (14336, 5120, 16),
    (5120, 6144, 16),
    (16480, 5120, 48),
    (5120, 6144, 48),
    (34816, 5120, 64),
    (5120, 17408, 64),
];

/// Where the route's time goes at the 27B's shapes (q4_g64, T = 512 and 4096): the whole
/// route, the dequant, the activations' conversion and the GEMMs alone per shape, and the whole route summed over
/// the model's linears (one prompt window's linear time, a per-op profile of that part).
pub fn bench(ctx: &BenchCtx, filter: Option<&str>) -> Result<Vec<BenchRecord>, GpuError> {
    let what = "prefill_cublas q4_g64";
    if !crate::bench::filter_may_keep(filter, &[what, "prefill_cublas"]) {
        return Ok(Vec::new());
    }
    let gpu = ctx.gpu;
    let fmt = crate::formats::format("q4_g64").expect("registered");
    let p = PrefillCublas::new(gpu)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(23);
    let block: Vec<f32> = (0..1 << 20).map(|_| rng.sample(StandardNormal)).collect();
    let mut records = Vec::new();
    let ts = [512usize, 4096];
    let mut window_us = [0.0f64; 2];
    let mut window_flops = [0.0f64; 2];
    for &(n, k, count) in &QWEN27B_LINEARS {
        let (w, _) = random_weight(gpu, fmt, n, k, &mut rng)?;
        let rows = tile_rows(n, k, SCRATCH_ELEMS);
        let scratch: CudaSlice<u16> = gpu.alloc_zeros(rows * k)?;
        let wb = dptr(gpu, &scratch);
        for (ti, &t) in ts.iter().enumerate() {
            let xs: Vec<f32> = block.iter().copied().cycle().take(t * k).collect();
            let x = gpu.upload(&xs)?;
            drop(xs);
            let y: CudaSlice<f32> = gpu.alloc_zeros(t * n)?;
            let xb: CudaSlice<u16> = gpu.alloc_zeros(t * k)?;
            let (xp, yp, xbp) = (dptr(gpu, &x), dptr(gpu, &y), dptr(gpu, &xb));
            let route_us = median_us(gpu, 2, 10, |_| p.launch(gpu, &w, xp, None, yp, t))?;
            let dequant_us = median_us(gpu, 2, 10, |_| {
                for n0 in (0..n).step_by(rows) {
                    launch_dequant(gpu, &w, n0, rows.min(n - n0), wb)?;
                }
                Ok(())
            })?;
            let act_us = median_us(gpu, 2, 10, |_| launch_act_bf16(gpu, xp, xbp, t * k))?;
            let gemm_us = median_us(gpu, 2, 10, |_| {
                for n0 in (0..n).step_by(rows) {
                    let nt = rows.min(n - n0);
                    p.blas
                        .gemm_bf16_f32_at(wb, xbp, yp + (n0 * 4) as u64, n, (t, nt, k), 0.0)?;
                }
                Ok(())
            })?;
            let flops = 2.0 * (t * n * k) as f64;
            let shape = format!("T={t} N={n} K={k} (x{count} in the 27B)");
            let wbytes = w.bytes() as f64;
            records.push(ctx.record(
                what,
                format!("prefill_cublas_{}_plain", fmt.name),
                shape.clone(),
                route_us,
                wbytes + (n * k * 4) as f64 + (t * k * 6 + t * n * 4) as f64,
                flops,
            ));
            records.push(ctx.record(
                what,
                format!("prefill_cublas_dequant_{}", fmt.name),
                shape.clone(),
                dequant_us,
                wbytes + (n * k * 2) as f64,
                0.0,
            ));
            records.push(ctx.record(
                what,
                act_spec().entry,
                shape.clone(),
                act_us,
                (t * k * 6) as f64,
                0.0,
            ));
            records.push(ctx.record(
                what,
                "cublasGemmEx bf16 x bf16 -> f32",
                shape,
                gemm_us,
                (n * k * 2 + t * k * 2 + t * n * 4) as f64,
                flops,
            ));
            window_us[ti] += route_us * count as f64;
            window_flops[ti] += flops * count as f64;
        }
    }
    for (ti, &t) in ts.iter().enumerate() {
        records.push(ctx.record(
            what,
            format!("prefill_cublas_{}_plain", fmt.name),
            format!("T={t}: the 27B's 256 linears of one window, summed (no head)"),
            window_us[ti],
            0.0,
            window_flops[ti],
        ));
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
    fn every_format_the_engine_stores_has_a_dequant_kernel() {
        let specs = instantiations();
        for name in ["q4_g64", "q6_g64", "q8_g32", "q4_1_g32", "bf16", "f32"] {
            let entry = format!("prefill_cublas_dequant_{name}");
            assert!(specs.iter().any(|s| s.entry == entry), "{entry}");
        }
        let mut names: Vec<_> = specs.iter().map(|s| s.entry.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), specs.len());
        assert_eq!(specs.len(), crate::formats::registry().iter().count() + 1);
        assert!(names.iter().all(|n| n.starts_with("prefill_cublas_")));
    }

    #[test]
    fn supports_whole_decode_groups_only() {
        assert!(supports(fmt("q4_g64"), 5120) && supports(fmt("q4_g64"), 192));
        assert!(!supports(fmt("q4_g64"), 96) && !supports(fmt("q4_g64"), 0));
        assert!(supports(fmt("f32"), 576) && !supports(fmt("f32"), 36));
        assert!(supports(fmt("q8_g32"), 96) && supports(fmt("q4_1_g32"), 1536));
        // Never wider than the exact routes: a weight held in its format runs here or not
        // at all, never needs another format.
        for f in crate::formats::registry().iter() {
            for k in [32usize, 36, 64, 96, 192, 576, 1536, 5120, 17408] {
                if supports(f, k) {
                    assert!(super::super::linear_sgemm::supports(f, k), "{} {k}", f.name);
                }
            }
        }
    }

    #[test]
    fn tiles_cover_every_row_within_the_scratch() {
        assert_eq!(tile_rows(576, 576, SCRATCH_ELEMS), 576);
        let head = tile_rows(248320, 5120, SCRATCH_ELEMS);
        assert_eq!(head % ROW_ALIGN, 0);
        assert!(head * 5120 <= SCRATCH_ELEMS);
        assert_eq!(248320usize.div_ceil(head), 20);
        assert_eq!(tile_rows(1000, 576, 256 * 576), 256);
        // A row wider than the scratch still gets one aligned tile.
        assert_eq!(tile_rows(1000, 1 << 20, 1 << 18), 256);
        for (n, k) in [
            (17408usize, 5120usize),
            (34816, 5120),
            (5120, 17408),
            (67, 192),
        ] {
            let rows = tile_rows(n, k, SCRATCH_ELEMS);
            assert!(rows >= 1 && rows <= n);
            assert!(rows * k <= SCRATCH_ELEMS || rows == ROW_ALIGN.min(n));
        }
    }

    /// Every instantiation renders and compiles for sm_90 through NVRTC, with no
    /// local-memory frame (the decoded group stays in registers).
    #[test]
    fn every_instantiation_compiles_for_sm_90() {
        let jit = crate::jit::test_jit();
        for spec in instantiations() {
            let ptx = crate::jit::test_sm90_ptx(&jit, &spec);
            assert!(
                !ptx.contains(".local"),
                "{} keeps an array in local memory",
                spec.entry
            );
        }
    }
}
