//! The small f32 ops of the CUDA backend, each the cpu backend's op (`engine::cpu`) in
//! meaning: bf16 conversions, `add_assign`, `swiglu`, `sigmoid_gate`, strided 2-D copies,
//! row gather / scatter-add, row softmax and row argmax.
//!
//! Every operand is a raw device address (`u64`, see [`crate::gpu::dptr`]) so callers
//! can point into larger buffers; every launch is queued on `gpu.stream()` and allocates
//! nothing, so a CUDA graph can capture it. Templates: `templates/elementwise/`.
//!
//! Where the cpu op is a fixed sequence of IEEE operations (conversions, sums, copies,
//! the scatter's product-then-add) the kernels perform the same operations unfused and are
//! qualified bit for bit; the ones built on `exp` are qualified against f64 references.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_distr::StandardNormal;

use crate::gpu::dptr;
use crate::gpu::{CudaSlice, Gpu, GpuError, Graph, LaunchConfig};
use crate::jit::KernelSpec;
use crate::qualify::{Outcome, ALLOW_F32};

const FAMILY: &str = "elementwise";
/// Threads per block of the pointwise and row-copy kernels (fixed in their templates).
const BLOCK: u32 = 256;
/// Block sizes of the one-block-per-row kernels (softmax, argmax).
pub const ROW_BLOCKS: [u32; 2] = [128, 1024];

/// The pointwise kernels (`elementwise/pointwise.cu`).
const POINTWISE: [&str; 5] = [
    "f32_to_bf16",
    "bf16_to_f32",
    "add_assign",
    "swiglu",
    "sigmoid_gate",
];
/// The row-copy kernels (`elementwise/rows.cu`).
const ROWS: [&str; 3] = ["copy2d", "gather_rows", "scatter_add_rows"];

fn pointwise_spec(op: &str) -> KernelSpec {
    KernelSpec::new(
        FAMILY,
        "elementwise/pointwise.cu",
        format!("elementwise_{op}"),
    )
    .param("op", op)
    .programmatic()
}

fn rows_spec(op: &str) -> KernelSpec {
    KernelSpec::new(FAMILY, "elementwise/rows.cu", format!("elementwise_{op}"))
        .param("op", op)
        .programmatic()
}

fn split_cols_spec() -> KernelSpec {
    KernelSpec::new(
        FAMILY,
        "elementwise/split_cols.cu",
        "elementwise_split_cols",
    )
    .programmatic()
}

fn softmax_spec(block: u32) -> KernelSpec {
    KernelSpec::new(
        FAMILY,
        "elementwise/softmax.cu",
        format!("elementwise_softmax_b{block}"),
    )
    .param("block", block)
    .programmatic()
}

fn argmax_spec(block: u32) -> KernelSpec {
    KernelSpec::new(
        FAMILY,
        "elementwise/argmax.cu",
        format!("elementwise_argmax_b{block}"),
    )
    .param("block", block)
    .programmatic()
}

/// The block of a one-block-per-row kernel: wide rows (the vocabulary) get 1024 threads
/// to keep enough loads in flight on the one SM that reads the row.
fn row_block(cols: usize) -> u32 {
    if cols >= 8192 {
        ROW_BLOCKS[1]
    } else {
        ROW_BLOCKS[0]
    }
}

/// Every registered instantiation of the family.
pub fn instantiations() -> Vec<KernelSpec> {
    let mut specs: Vec<KernelSpec> = POINTWISE.iter().map(|op| pointwise_spec(op)).collect();
    specs.extend(ROWS.iter().map(|op| rows_spec(op)));
    specs.push(split_cols_spec());
    specs.extend(ROW_BLOCKS.iter().map(|&b| softmax_spec(b)));
    specs.extend(ROW_BLOCKS.iter().map(|&b| argmax_spec(b)));
    specs
}

fn launch_err(spec: &KernelSpec) -> impl FnOnce(cudarc::driver::DriverError) -> GpuError + '_ {
    move |e| GpuError::driver(format!("launching {}", spec.entry), e)
}

fn i32_of(v: usize, what: &str) -> i32 {
    i32::try_from(v).unwrap_or_else(|_| panic!("{what} ({v}) does not fit in i32"))
}

/// Queues a pointwise kernel over `n` elements (`b` is 0 where the op has no second input).
fn launch_pointwise(
    gpu: &Gpu,
    op: &str,
    a: u64,
    b: u64,
    out: u64,
    n: usize,
) -> Result<(), GpuError> {
    if n == 0 {
        return Ok(());
    }
    let spec = pointwise_spec(op);
    let f = gpu.kernel(&spec)?;
    // A grid-stride loop: enough blocks to fill the GPU a few times over, no more.
    let blocks = n
        .div_ceil(BLOCK as usize)
        .min(gpu.props().sm_count as usize * 16) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let n = n as i64;
    let mut lb = gpu.launch(&f);
    lb.arg(&a).arg(&b).arg(&out).arg(&n);
    // SAFETY: matches elementwise/pointwise.cu; the caller's buffers hold n elements.
    unsafe { lb.launch(cfg) }.map_err(launch_err(&spec))?;
    Ok(())
}

/// `y[i] = bf16(x[i])` (`y` holds u16 bf16 bits), round to nearest even, bit for bit
/// `half::bf16::from_f32` (NaNs included).
pub fn f32_to_bf16(gpu: &Gpu, x: u64, y: u64, n: usize) -> Result<(), GpuError> {
    launch_pointwise(gpu, "f32_to_bf16", x, 0, y, n)
}

/// `y[i] = f32(x[i])` from u16 bf16 bits (exact; NaNs quieted like `half`).
pub fn bf16_to_f32(gpu: &Gpu, x: u64, y: u64, n: usize) -> Result<(), GpuError> {
    launch_pointwise(gpu, "bf16_to_f32", x, 0, y, n)
}

/// `x += y`.
pub fn add_assign(gpu: &Gpu, x: u64, y: u64, n: usize) -> Result<(), GpuError> {
    launch_pointwise(gpu, "add_assign", x, y, x, n)
}

/// `out = silu(gate) * up`, `silu(v) = v / (1 + exp(-v))`.
pub fn swiglu(gpu: &Gpu, gate: u64, up: u64, out: u64, n: usize) -> Result<(), GpuError> {
    launch_pointwise(gpu, "swiglu", gate, up, out, n)
}

/// `out = x * sigmoid(gate)`.
pub fn sigmoid_gate(gpu: &Gpu, x: u64, gate: u64, out: u64, n: usize) -> Result<(), GpuError> {
    launch_pointwise(gpu, "sigmoid_gate", x, gate, out, n)
}

/// The grid of the row-structured kernels (`rows.cu`, `split_cols.cu`): blocks of BLOCK
/// threads along the columns, one a row along y (grid-stride past 65535 rows).
fn row_grid(rows: usize, cols: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            cols.div_ceil(BLOCK as usize) as u32,
            rows.min(65535) as u32,
            1,
        ),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Queues a row-copy kernel: `n_rows` rows of `cols` f32.
#[allow(clippy::too_many_arguments)]
fn launch_rows(
    gpu: &Gpu,
    op: &str,
    src: u64,
    src_ld: usize,
    dst: u64,
    dst_ld: usize,
    rows: u64,
    scale: u64,
    n_rows: usize,
    cols: usize,
) -> Result<(), GpuError> {
    if n_rows == 0 || cols == 0 {
        return Ok(());
    }
    let spec = rows_spec(op);
    let f = gpu.kernel(&spec)?;
    let cfg = row_grid(n_rows, cols);
    let (src_ld, dst_ld) = (src_ld as i64, dst_ld as i64);
    let (n_rows, cols) = (i32_of(n_rows, "rows"), i32_of(cols, "cols"));
    let mut lb = gpu.launch(&f);
    lb.arg(&src)
        .arg(&src_ld)
        .arg(&dst)
        .arg(&dst_ld)
        .arg(&rows)
        .arg(&scale)
        .arg(&n_rows)
        .arg(&cols);
    // SAFETY: matches elementwise/rows.cu; the caller guarantees every addressed row exists.
    unsafe { lb.launch(cfg) }.map_err(launch_err(&spec))?;
    Ok(())
}

/// 2-D strided copy of f32: for `r < rows`, `j < cols`:
/// `dst[r*dst_ld + j] = src[r*src_ld + j]` (slice_rows/cols, concat_cols, split_heads).
/// `src_ld == 0` broadcasts one source row to every destination row (a bias).
pub fn copy2d(
    gpu: &Gpu,
    src: u64,
    src_ld: usize,
    dst: u64,
    dst_ld: usize,
    rows: usize,
    cols: usize,
) -> Result<(), GpuError> {
    assert!(
        (src_ld >= cols || src_ld == 0) && dst_ld >= cols,
        "copy2d: leading dimension below cols"
    );
    launch_rows(gpu, "copy2d", src, src_ld, dst, dst_ld, 0, 0, rows, cols)
}

/// Whether the cuda backend splits a stacked projection's outputs in one [`split_cols`]
/// launch: yes unless the environment sets `NINFER_SPLIT_COLS=0` (an A/B switch: a copy a
/// part, as before).
pub fn split_cols_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    super::linear_exact::switch_on(&ON, "NINFER_SPLIT_COLS")
}

/// The segments a [`split_cols`] launch takes (more are split over several launches).
pub const SPLIT_SEGMENTS: usize = 4;

/// Splits the leading columns of `src` (`rows` rows, `src_ld` f32 apart) into dense
/// matrices, in order: segment `(dst, w)` takes the next `w` columns into `dst`
/// (`[rows, w]`). One launch per [`SPLIT_SEGMENTS`] segments (`elementwise/split_cols.cu`).
pub fn split_cols(
    gpu: &Gpu,
    src: u64,
    src_ld: usize,
    rows: usize,
    segments: &[(u64, usize)],
) -> Result<(), GpuError> {
    let total: usize = segments.iter().map(|&(_, w)| w).sum();
    assert!(total <= src_ld, "split_cols: segments wider than the row");
    if rows == 0 || total == 0 {
        return Ok(());
    }
    let spec = split_cols_spec();
    let f = gpu.kernel(&spec)?;
    let mut col = 0;
    for chunk in segments.chunks(SPLIT_SEGMENTS) {
        let mut d = [0u64; SPLIT_SEGMENTS];
        let mut w = [0i32; SPLIT_SEGMENTS];
        for (i, &(dst, width)) in chunk.iter().enumerate() {
            (d[i], w[i]) = (dst, i32_of(width, "cols"));
        }
        let width: usize = chunk.iter().map(|&(_, w)| w).sum();
        if width > 0 {
            let cfg = row_grid(rows, width);
            let (s, ld, n) = (src + (col * 4) as u64, src_ld as i64, i32_of(rows, "rows"));
            let mut lb = gpu.launch(&f);
            lb.arg(&s).arg(&ld);
            for p in &d {
                lb.arg(p);
            }
            for v in &w {
                lb.arg(v);
            }
            lb.arg(&n);
            // SAFETY: matches elementwise/split_cols.cu; the caller sizes each destination
            // to rows x its width and src to rows rows of src_ld (its columns checked above).
            unsafe { lb.launch(cfg) }.map_err(launch_err(&spec))?;
        }
        col += width;
    }
    Ok(())
}

/// `out[i] = x[rows[i]]` (`rows`: device i32 `[n_out]`, each row `cols` f32 wide).
pub fn gather_rows(
    gpu: &Gpu,
    x: u64,
    rows: u64,
    out: u64,
    n_out: usize,
    cols: usize,
) -> Result<(), GpuError> {
    launch_rows(gpu, "gather_rows", x, cols, out, cols, rows, 0, n_out, cols)
}

/// `out[rows[i]] += scale[i] * x[i]` for `i < n` (`rows` i32 and `scale` f32 on the
/// device). The rows of one call must be distinct: no atomics are used.
pub fn scatter_add_rows(
    gpu: &Gpu,
    out: u64,
    x: u64,
    rows: u64,
    scale: u64,
    n: usize,
    cols: usize,
) -> Result<(), GpuError> {
    launch_rows(
        gpu,
        "scatter_add_rows",
        x,
        cols,
        out,
        cols,
        rows,
        scale,
        n,
        cols,
    )
}

fn launch_per_row(
    gpu: &Gpu,
    spec: &KernelSpec,
    x: u64,
    y: u64,
    rows: usize,
    cols: usize,
) -> Result<(), GpuError> {
    if rows == 0 {
        return Ok(());
    }
    assert!(cols > 0, "{}: empty rows", spec.entry);
    let block: u32 = spec.params["block"]
        .as_u64()
        .expect("row kernels have a block param") as u32;
    let f = gpu.kernel(spec)?;
    let cfg = LaunchConfig {
        grid_dim: (u32::try_from(rows).expect("rows fit a grid"), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    };
    let cols = i32_of(cols, "cols");
    let mut lb = gpu.launch(&f);
    lb.arg(&x).arg(&y).arg(&cols);
    // SAFETY: matches elementwise/softmax.cu and argmax.cu (x, y, cols); the caller sizes
    // x to rows * cols and y to rows * cols (softmax) or rows (argmax).
    unsafe { lb.launch(cfg) }.map_err(launch_err(spec))?;
    Ok(())
}

/// Row-wise softmax of `x [rows, cols]` into `y` (f32; `y` may equal `x`), max-subtracted,
/// f32 accumulation.
pub fn softmax_rows(gpu: &Gpu, x: u64, y: u64, rows: usize, cols: usize) -> Result<(), GpuError> {
    launch_per_row(gpu, &softmax_spec(row_block(cols)), x, y, rows, cols)
}

/// Per row of `x [rows, cols]`: the index of the largest value as u32 into `ids[row]`,
/// exactly [`crate::engine::generate::argmax`] (first index on ties, NaNs never win, a
/// NaN at index 0 gives 0).
pub fn argmax_rows(gpu: &Gpu, x: u64, ids: u64, rows: usize, cols: usize) -> Result<(), GpuError> {
    launch_per_row(gpu, &argmax_spec(row_block(cols)), x, ids, rows, cols)
}

/// Loads the kernel [`argmax_rows`] takes for rows of `cols` values, so that a launch of it
/// can be captured in a graph (a module cannot be loaded while a stream is captured).
pub fn preload_argmax(gpu: &Gpu, cols: usize) -> Result<(), GpuError> {
    gpu.kernel(&argmax_spec(row_block(cols))).map(|_| ())
}

/// f64 references of the ops whose numbers go through `exp`.
pub mod reference {
    pub fn silu(v: f64) -> f64 {
        v / (1.0 + (-v).exp())
    }

    pub fn sigmoid(v: f64) -> f64 {
        1.0 / (1.0 + (-v).exp())
    }

    pub fn swiglu(gate: &[f32], up: &[f32]) -> Vec<f64> {
        gate.iter()
            .zip(up)
            .map(|(&g, &u)| silu(g as f64) * u as f64)
            .collect()
    }

    pub fn sigmoid_gate(x: &[f32], gate: &[f32]) -> Vec<f64> {
        x.iter()
            .zip(gate)
            .map(|(&a, &g)| a as f64 * sigmoid(g as f64))
            .collect()
    }

    /// Row-wise softmax of `x [rows, cols]`, max-subtracted, all in f64.
    pub fn softmax_rows(x: &[f32], cols: usize) -> Vec<f64> {
        let mut y = Vec::with_capacity(x.len());
        for row in x.chunks(cols) {
            let m = row
                .iter()
                .map(|&v| v as f64)
                .fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = row.iter().map(|&v| (v as f64 - m).exp()).collect();
            let z: f64 = e.iter().sum();
            y.extend(e.iter().map(|v| v / z));
        }
        y
    }
}

// ---------------------------------------------------------------------------------------
// Qualification.

/// Sizes the pointwise ops are checked at: tiny, odd, and the real widths (3 rows of
/// hidden 5120, 8 rows of the 17408 MLP).
pub const QUALIFY_N: [usize; 4] = [1, 33, 5120 * 3, 17408 * 8];

/// An outcome that is exact or not at all: rel error 0 or infinity.
fn exact(route: String, shape: String, mismatches: usize, total: usize) -> Outcome {
    let shape = if mismatches == 0 {
        shape
    } else {
        format!("{shape} ({mismatches} of {total} differ)")
    };
    Outcome {
        route,
        shape,
        rel_l2: if mismatches == 0 { 0.0 } else { f64::INFINITY },
        allowance: 0.0,
        pass: mismatches == 0,
    }
}

fn mismatches<T: PartialEq>(got: &[T], want: &[T]) -> usize {
    if got.len() != want.len() {
        return got.len().max(want.len()).max(1);
    }
    got.iter().zip(want).filter(|(a, b)| a != b).count()
}

fn f32_bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn normals(rng: &mut impl Rng, n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|_| rng.sample::<f32, _>(StandardNormal) * scale)
        .collect()
}

/// A device buffer holding `data` after `pad` leading elements, and the address of its
/// first element: kernels must work on operands that start inside larger buffers (and
/// off 16-byte alignment).
struct Placed<T> {
    buf: CudaSlice<T>,
    pad: usize,
}

impl<T: cudarc::driver::DeviceRepr + Default + Clone> Placed<T> {
    fn new(gpu: &Gpu, data: &[T], pad: usize) -> Result<Self, GpuError> {
        let mut host = vec![T::default(); pad];
        host.extend_from_slice(data);
        Ok(Placed {
            buf: gpu.upload(&host)?,
            pad,
        })
    }

    fn addr(&self, gpu: &Gpu) -> u64 {
        dptr(gpu, &self.buf) + (self.pad * std::mem::size_of::<T>()) as u64
    }

    fn read(&self, gpu: &Gpu) -> Result<Vec<T>, GpuError> {
        Ok(gpu.download(&self.buf)?[self.pad..].to_vec())
    }
}

/// f32 inputs for the bf16 rounding check: normals at several scales, random bit patterns
/// (NaNs, infinities and subnormals among them), and the hand-picked edge cases first.
fn bf16_inputs(rng: &mut impl Rng, n: usize) -> Vec<f32> {
    let edges = [
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        -f32::MAX,
        f32::MIN_POSITIVE,
        1e-40,
        -1e-40,
        f32::from_bits(0x3f80_8000), // tie, rounds down to even
        f32::from_bits(0x3f81_8000), // tie, rounds up to even
        f32::from_bits(0x3f80_8001), // just above a tie
        f32::from_bits(0x7f7f_8000), // rounds up to infinity
        f32::from_bits(0x7fc0_0000),
        f32::from_bits(0xffa1_2345), // signalling NaN with payload
        f32::from_bits(0x7f80_0001),
    ];
    (0..n)
        .map(|i| match (i < edges.len(), i % 3) {
            (true, _) => edges[i],
            (false, 0) => f32::from_bits(rng.random::<u32>()),
            (false, 1) => rng.sample::<f32, _>(StandardNormal),
            _ => rng.sample::<f32, _>(StandardNormal) * 1e4,
        })
        .collect()
}

fn qualify_pointwise(
    gpu: &Gpu,
    rng: &mut impl Rng,
    out: &mut Vec<Outcome>,
) -> Result<(), GpuError> {
    for (k, &n) in QUALIFY_N.iter().enumerate() {
        let pad = [0, 3, 1, 2][k];
        let shape = format!("n={n} offset={pad}");

        // f32 -> bf16, bit for bit. Poison 0xffbf: a NaN that no conversion produces
        // (converted NaNs have the quiet bit 0x40 set).
        let x = bf16_inputs(rng, n);
        let dx = Placed::new(gpu, &x, pad)?;
        let dy = Placed::new(gpu, &vec![0xffbfu16; n], pad)?;
        f32_to_bf16(gpu, dx.addr(gpu), dy.addr(gpu), n)?;
        let want: Vec<u16> = x
            .iter()
            .map(|&v| half::bf16::from_f32(v).to_bits())
            .collect();
        let got = dy.read(gpu)?;
        out.push(exact(
            pointwise_spec("f32_to_bf16").entry,
            shape.clone(),
            mismatches(&got, &want),
            n,
        ));

        // bf16 -> f32, bit for bit: every bf16 pattern at the largest size. Poison
        // 0xffffffff has low bits no conversion sets.
        let hb: Vec<u16> = if n >= 65536 {
            (0..n).map(|i| (i % 65536) as u16).collect()
        } else {
            (0..n).map(|_| rng.random::<u16>()).collect()
        };
        let dx = Placed::new(gpu, &hb, pad)?;
        let dy = Placed::new(gpu, &vec![u32::MAX; n], pad)?;
        bf16_to_f32(gpu, dx.addr(gpu), dy.addr(gpu), n)?;
        let want: Vec<u32> = hb
            .iter()
            .map(|&b| half::bf16::from_bits(b).to_f32().to_bits())
            .collect();
        let got = dy.read(gpu)?;
        out.push(exact(
            pointwise_spec("bf16_to_f32").entry,
            shape.clone(),
            mismatches(&got, &want),
            n,
        ));

        // x += y, bit for bit against the f32 sum (an unwritten x keeps its old value).
        let (a, b) = (normals(rng, n, 1.0), normals(rng, n, 3.0));
        let da = Placed::new(gpu, &a, pad)?;
        let db = Placed::new(gpu, &b, pad + 1)?;
        add_assign(gpu, da.addr(gpu), db.addr(gpu), n)?;
        let want: Vec<f32> = a.iter().zip(&b).map(|(p, q)| p + q).collect();
        let got = da.read(gpu)?;
        out.push(exact(
            pointwise_spec("add_assign").entry,
            shape.clone(),
            mismatches(&f32_bits(&got), &f32_bits(&want)),
            n,
        ));

        // swiglu and sigmoid_gate against f64; inputs out to +-40 so exp overflows too.
        for op in ["swiglu", "sigmoid_gate"] {
            let a = normals(rng, n, 2.0);
            let mut b = normals(rng, n, 4.0);
            if let Some(v) = b.first_mut() {
                *v = -40.0;
            }
            if n > 1 {
                b[n - 1] = 40.0;
            }
            let da = Placed::new(gpu, &a, pad)?;
            let db = Placed::new(gpu, &b, pad + 2)?;
            let dy = Placed::new(gpu, &vec![f32::NAN; n], pad + 1)?;
            let want = if op == "swiglu" {
                swiglu(gpu, db.addr(gpu), da.addr(gpu), dy.addr(gpu), n)?;
                reference::swiglu(&b, &a)
            } else {
                sigmoid_gate(gpu, da.addr(gpu), db.addr(gpu), dy.addr(gpu), n)?;
                reference::sigmoid_gate(&a, &b)
            };
            out.push(Outcome::compare(
                pointwise_spec(op).entry,
                shape.clone(),
                &dy.read(gpu)?,
                &want,
                ALLOW_F32,
            ));
        }
    }
    Ok(())
}

/// `copy2d` cases `(rows, cols, src_ld, dst_ld)`: ld = cols, ld > cols on either side, the
/// split_heads / concat_cols shapes, and more rows than one grid dimension holds.
const COPY2D_CASES: [(usize, usize, usize, usize); 7] = [
    (1, 1, 1, 1),
    (3, 7, 10, 9),
    (5, 33, 33, 40),
    (8, 256, 512, 256),
    (9, 5120, 10243, 5120),
    (7, 17408, 17408, 34816),
    (70001, 1, 3, 2),
];

fn qualify_copy2d(gpu: &Gpu, rng: &mut impl Rng, out: &mut Vec<Outcome>) -> Result<(), GpuError> {
    for (k, &(rows, cols, src_ld, dst_ld)) in COPY2D_CASES.iter().enumerate() {
        let pad = k % 3;
        let src = normals(rng, rows * src_ld, 1.0);
        // Covered elements poisoned, the gaps a sentinel that must survive.
        let sentinel = -7.25f32;
        let mut dst = vec![sentinel; rows * dst_ld];
        let mut want = dst.clone();
        for r in 0..rows {
            for j in 0..cols {
                dst[r * dst_ld + j] = f32::NAN;
                want[r * dst_ld + j] = src[r * src_ld + j];
            }
        }
        let ds = Placed::new(gpu, &src, pad)?;
        let dd = Placed::new(gpu, &dst, pad + 1)?;
        copy2d(gpu, ds.addr(gpu), src_ld, dd.addr(gpu), dst_ld, rows, cols)?;
        let got = dd.read(gpu)?;
        out.push(exact(
            rows_spec("copy2d").entry,
            format!("rows={rows} cols={cols} src_ld={src_ld} dst_ld={dst_ld}"),
            mismatches(&f32_bits(&got), &f32_bits(&want)),
            want.len(),
        ));
    }
    Ok(())
}

/// `split_cols` cases `(rows, src_ld, widths)`: the 27B's GDN in_proj at 8 lanes (q/k/v,
/// z, b, a), its attention qkv (query+gate, k, v), odd widths with unused columns after
/// them, a zero-width segment, six segments (two launches), and more rows than one grid
/// dimension holds.
fn split_cols_cases() -> Vec<(usize, usize, Vec<usize>)> {
    vec![
        (8, 16480, vec![10240, 6144, 48, 48]),
        (8, 14336, vec![12288, 1024, 1024]),
        (3, 40, vec![7, 0, 13, 1]),
        (5, 300, vec![1, 33, 257, 2, 3, 4]),
        (1, 9, vec![9]),
        (70001, 5, vec![2, 1]),
    ]
}

fn qualify_split_cols(
    gpu: &Gpu,
    rng: &mut impl Rng,
    out: &mut Vec<Outcome>,
) -> Result<(), GpuError> {
    for (k, (rows, src_ld, widths)) in split_cols_cases().into_iter().enumerate() {
        let src = normals(rng, rows * src_ld, 1.0);
        let ds = Placed::new(gpu, &src, k % 3)?;
        // Each destination poisoned, one sentinel past its end that must survive.
        let sentinel = -7.25f32;
        let dsts = widths
            .iter()
            .map(|&w| {
                let mut v = vec![f32::NAN; rows * w];
                v.push(sentinel);
                Placed::new(gpu, &v, 1)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let segments: Vec<(u64, usize)> = dsts
            .iter()
            .zip(&widths)
            .map(|(d, &w)| (d.addr(gpu), w))
            .collect();
        split_cols(gpu, ds.addr(gpu), src_ld, rows, &segments)?;
        let (mut got, mut want) = (Vec::new(), Vec::new());
        let mut c0 = 0;
        for (d, &w) in dsts.iter().zip(&widths) {
            got.extend(d.read(gpu)?);
            for r in 0..rows {
                want.extend_from_slice(&src[r * src_ld + c0..r * src_ld + c0 + w]);
            }
            want.push(sentinel);
            c0 += w;
        }
        out.push(exact(
            split_cols_spec().entry,
            format!("rows={rows} src_ld={src_ld} widths={widths:?}"),
            mismatches(&f32_bits(&got), &f32_bits(&want)),
            want.len(),
        ));
    }
    Ok(())
}

/// Gather / scatter cases `(table rows, picked rows, cols)`.
const GATHER_CASES: [(usize, usize, usize); 5] = [
    (1, 1, 1),
    (50, 37, 33),
    (300, 256, 5120),
    (64, 64, 2048),
    (70000, 66000, 2),
];

fn qualify_gather_scatter(
    gpu: &Gpu,
    rng: &mut impl Rng,
    out: &mut Vec<Outcome>,
) -> Result<(), GpuError> {
    for (k, &(table, n, cols)) in GATHER_CASES.iter().enumerate() {
        let pad = k % 2;
        let shape = format!("table={table} n={n} cols={cols}");
        let mut perm: Vec<i32> = (0..table as i32).collect();
        perm.shuffle(rng);
        let picked = &perm[..n];
        let dr = Placed::new(gpu, picked, pad)?;

        // gather: out[i] = x[rows[i]]
        let x = normals(rng, table * cols, 1.0);
        let dx = Placed::new(gpu, &x, pad + 1)?;
        let dy = Placed::new(gpu, &vec![f32::NAN; n * cols], pad)?;
        gather_rows(gpu, dx.addr(gpu), dr.addr(gpu), dy.addr(gpu), n, cols)?;
        let want: Vec<f32> = picked
            .iter()
            .flat_map(|&r| {
                x[r as usize * cols..(r as usize + 1) * cols]
                    .iter()
                    .copied()
            })
            .collect();
        out.push(exact(
            rows_spec("gather_rows").entry,
            shape.clone(),
            mismatches(&f32_bits(&dy.read(gpu)?), &f32_bits(&want)),
            want.len(),
        ));

        // scatter-add: o[rows[i]] += scale[i] * xs[i], the cpu's f32 product then sum.
        let o = normals(rng, table * cols, 1.0);
        let xs = normals(rng, n * cols, 1.0);
        let scale = normals(rng, n, 0.5);
        let do_ = Placed::new(gpu, &o, pad)?;
        let dxs = Placed::new(gpu, &xs, pad + 2)?;
        let dsc = Placed::new(gpu, &scale, pad + 1)?;
        scatter_add_rows(
            gpu,
            do_.addr(gpu),
            dxs.addr(gpu),
            dr.addr(gpu),
            dsc.addr(gpu),
            n,
            cols,
        )?;
        let mut want = o.clone();
        for (i, &r) in picked.iter().enumerate() {
            let r = r as usize;
            for j in 0..cols {
                want[r * cols + j] += scale[i] * xs[i * cols + j];
            }
        }
        out.push(exact(
            rows_spec("scatter_add_rows").entry,
            shape,
            mismatches(&f32_bits(&do_.read(gpu)?), &f32_bits(&want)),
            want.len(),
        ));
    }
    // gather with repeated rows (decode of several sequences may pick one row twice).
    let (table, cols) = (5usize, 40usize);
    let picked: Vec<i32> = vec![3, 3, 0, 4, 3, 1];
    let x = normals(rng, table * cols, 1.0);
    let (dx, dr) = (Placed::new(gpu, &x, 0)?, Placed::new(gpu, &picked, 0)?);
    let dy = Placed::new(gpu, &vec![f32::NAN; picked.len() * cols], 0)?;
    gather_rows(
        gpu,
        dx.addr(gpu),
        dr.addr(gpu),
        dy.addr(gpu),
        picked.len(),
        cols,
    )?;
    let want: Vec<f32> = picked
        .iter()
        .flat_map(|&r| {
            x[r as usize * cols..(r as usize + 1) * cols]
                .iter()
                .copied()
        })
        .collect();
    out.push(exact(
        rows_spec("gather_rows").entry,
        format!("table={table} n={} cols={cols} repeated rows", picked.len()),
        mismatches(&f32_bits(&dy.read(gpu)?), &f32_bits(&want)),
        want.len(),
    ));
    Ok(())
}

/// Softmax cases `(rows, cols, in place)`.
const SOFTMAX_CASES: [(usize, usize, bool); 7] = [
    (1, 1, false),
    (3, 1, true),
    (3, 7, true),
    (5, 256, false),
    (4, 8191, false),
    (2, 248320, false),
    (1, 248320, true),
];

fn qualify_softmax(gpu: &Gpu, rng: &mut impl Rng, out: &mut Vec<Outcome>) -> Result<(), GpuError> {
    for (k, &(rows, cols, in_place)) in SOFTMAX_CASES.iter().enumerate() {
        let pad = k % 4;
        let mut x = normals(rng, rows * cols, 3.0);
        // One row far from zero: the max subtraction must carry it.
        if rows > 1 {
            x[cols..2 * cols].iter_mut().for_each(|v| *v += 120.0);
        }
        let dx = Placed::new(gpu, &x, pad)?;
        // Even cases: y in x's 16-byte phase (float4 stores); odd: out of it (scalar).
        let dy = Placed::new(gpu, &vec![f32::NAN; rows * cols], pad + [4, 1][k % 2])?;
        let got = if in_place {
            softmax_rows(gpu, dx.addr(gpu), dx.addr(gpu), rows, cols)?;
            dx.read(gpu)?
        } else {
            softmax_rows(gpu, dx.addr(gpu), dy.addr(gpu), rows, cols)?;
            dy.read(gpu)?
        };
        out.push(Outcome::compare(
            softmax_spec(row_block(cols)).entry,
            format!(
                "rows={rows} cols={cols}{}",
                if in_place { " in place" } else { "" }
            ),
            &got,
            &reference::softmax_rows(&x, cols),
            ALLOW_F32,
        ));
    }
    Ok(())
}

/// Argmax cases `(rows, cols, offset)`: offsets put rows off 16-byte alignment.
const ARGMAX_CASES: [(usize, usize, usize); 7] = [
    (1, 1, 0),
    (3, 7, 1),
    (10, 1000, 0),
    (10, 8192, 2),
    (10, 248320, 0),
    (10, 248321, 1),
    (2, 248320, 3),
];

/// A row for the argmax check; `kind` picks random data, planted ties, the maximum at an
/// edge, constant rows, and NaNs (which the cpu argmax skips unless at index 0).
fn argmax_row(rng: &mut impl Rng, cols: usize, kind: usize) -> Vec<f32> {
    fn at(r: &mut [f32], i: usize, v: f32) {
        if let Some(x) = r.get_mut(i) {
            *x = v;
        }
    }
    let mut r = normals(rng, cols, 1.0);
    match kind {
        1 => {
            // a tie between two random positions, and a few more copies further on
            let (p, q) = (rng.random_range(0..cols), rng.random_range(0..cols));
            for i in [p, q, (p + q) / 2, cols - 1] {
                at(&mut r, i, 9.0);
            }
        }
        2 => at(&mut r, cols - 1, 9.0),
        3 => r.iter_mut().for_each(|v| *v = 0.5),
        4 => r.iter_mut().for_each(|v| *v = f32::NEG_INFINITY),
        5 => {
            let p = rng.random_range(0..cols);
            at(&mut r, p, f32::NAN);
            at(&mut r, cols / 2, 9.0);
            at(&mut r, cols - 1, f32::NAN);
        }
        6 => {
            at(&mut r, 0, f32::NAN);
            at(&mut r, cols / 2, 9.0);
        }
        7 => {
            // -0.0 and 0.0 tie
            r.iter_mut().for_each(|v| *v = -v.abs());
            at(&mut r, cols / 3, -0.0);
            at(&mut r, cols / 2, 0.0);
        }
        _ => {}
    }
    r
}

fn qualify_argmax(gpu: &Gpu, rng: &mut impl Rng, out: &mut Vec<Outcome>) -> Result<(), GpuError> {
    for &(rows, cols, pad) in &ARGMAX_CASES {
        let x: Vec<f32> = (0..rows).flat_map(|r| argmax_row(rng, cols, r)).collect();
        let dx = Placed::new(gpu, &x, pad)?;
        let di = Placed::new(gpu, &vec![u32::MAX; rows], 0)?;
        argmax_rows(gpu, dx.addr(gpu), di.addr(gpu), rows, cols)?;
        let want: Vec<u32> = x
            .chunks(cols)
            .map(crate::engine::generate::argmax)
            .collect();
        out.push(exact(
            argmax_spec(row_block(cols)).entry,
            format!("rows={rows} cols={cols} offset={pad}"),
            mismatches(&di.read(gpu)?, &want),
            rows,
        ));
    }
    Ok(())
}

/// A decode-step shaped sequence (swiglu, a copy out to a wider buffer and back, softmax
/// in place, argmax) captured once in a CUDA graph and replayed on new inputs: it must
/// allocate nothing and equal the eager launches bit for bit.
fn qualify_graph_replay(gpu: &Gpu, rng: &mut impl Rng) -> Result<Outcome, GpuError> {
    let (rows, cols, ld) = (2usize, 248320usize, 248325usize);
    let n = rows * cols;
    let run = |gate: u64, up: u64, h: u64, wide: u64, ids: u64| -> Result<(), GpuError> {
        swiglu(gpu, gate, up, h, n)?;
        copy2d(gpu, h, cols, wide, ld, rows, cols)?;
        copy2d(gpu, wide, ld, h, cols, rows, cols)?;
        softmax_rows(gpu, h, h, rows, cols)?;
        argmax_rows(gpu, h, ids, rows, cols)
    };
    let mut gate = gpu.upload(&vec![0f32; n])?;
    let mut up = gpu.upload(&vec![0f32; n])?;
    let h = gpu.upload(&vec![0f32; n])?;
    let wide = gpu.upload(&vec![0f32; rows * ld])?;
    let ids = gpu.upload(&vec![0u32; rows])?;
    let graph = Graph::capture(gpu, || {
        run(
            dptr(gpu, &gate),
            dptr(gpu, &up),
            dptr(gpu, &h),
            dptr(gpu, &wide),
            dptr(gpu, &ids),
        )
    })?;
    let mut diffs = 0;
    for _ in 0..3 {
        let (g, u) = (normals(rng, n, 3.0), normals(rng, n, 1.0));
        let stream = gpu.stream();
        stream
            .memcpy_htod(&g, &mut gate)
            .map_err(|e| GpuError::driver("writing gate", e))?;
        stream
            .memcpy_htod(&u, &mut up)
            .map_err(|e| GpuError::driver("writing up", e))?;
        graph.replay()?;
        let (graph_h, graph_ids) = (gpu.download(&h)?, gpu.download(&ids)?);
        let (eg, eu) = (gpu.upload(&g)?, gpu.upload(&u)?);
        let eh = gpu.upload(&vec![f32::NAN; n])?;
        let ew = gpu.upload(&vec![f32::NAN; rows * ld])?;
        let ei = gpu.upload(&vec![u32::MAX; rows])?;
        run(
            dptr(gpu, &eg),
            dptr(gpu, &eu),
            dptr(gpu, &eh),
            dptr(gpu, &ew),
            dptr(gpu, &ei),
        )?;
        let (eager_h, eager_ids) = (gpu.download(&eh)?, gpu.download(&ei)?);
        diffs += mismatches(&f32_bits(&graph_h), &f32_bits(&eager_h));
        diffs += mismatches(&graph_ids, &eager_ids);
        // And the eager ids are the cpu argmax of what the GPU computed.
        let cpu_ids: Vec<u32> = eager_h
            .chunks(cols)
            .map(crate::engine::generate::argmax)
            .collect();
        diffs += mismatches(&cpu_ids, &eager_ids);
    }
    Ok(exact(
        "elementwise (graph replay = eager, bitwise)".into(),
        format!("swiglu+copy2d+softmax+argmax rows={rows} cols={cols}"),
        diffs,
        3 * (n + 2 * rows),
    ))
}

/// Every op at tiny, odd and real sizes, outputs poisoned first, against the cpu op (bit
/// for bit where the cpu's operations are reproduced exactly) or an f64 reference.
pub fn qualify(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    let mut out = Vec::new();
    qualify_pointwise(gpu, rng, &mut out)?;
    qualify_copy2d(gpu, rng, &mut out)?;
    qualify_split_cols(gpu, rng, &mut out)?;
    qualify_gather_scatter(gpu, rng, &mut out)?;
    qualify_softmax(gpu, rng, &mut out)?;
    qualify_argmax(gpu, rng, &mut out)?;
    out.push(qualify_graph_replay(gpu, rng)?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn references_match_hand_values() {
        assert_eq!(reference::silu(0.0), 0.0);
        assert!((reference::silu(1.0) - 1.0 / (1.0 + (-1f64).exp())).abs() < 1e-15);
        assert_eq!(reference::sigmoid(0.0), 0.5);
        let s = reference::swiglu(&[0.0, 2.0], &[5.0, 3.0]);
        assert_eq!(s[0], 0.0);
        assert!((s[1] - 3.0 * 2.0 / (1.0 + (-2f64).exp())).abs() < 1e-12);
        let g = reference::sigmoid_gate(&[4.0], &[0.0]);
        assert_eq!(g, vec![2.0]);
        // softmax of [0, ln 3] is [1/4, 3/4]; of a single element, 1; shift invariant.
        let y = reference::softmax_rows(&[0.0, 3f32.ln(), 100.0, 100.0 + 3f32.ln(), 7.0], 1);
        assert!(y.iter().all(|&v| v == 1.0));
        let y = reference::softmax_rows(&[0.0, 3f32.ln(), 100.0, 100.0 + 3f32.ln()], 2);
        for (a, b) in y.iter().zip([0.25, 0.75, 0.25, 0.75]) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
    }

    #[test]
    fn references_agree_with_the_cpu_backend() {
        use crate::engine::backend::Backend;
        use crate::engine::cpu::{CpuBackend, Mat};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let (gate, up) = (normals(&mut rng, 64, 3.0), normals(&mut rng, 64, 1.0));
        let m = |v: &[f32]| Mat::new(4, 16, v.to_vec());
        let cpu = CpuBackend.swiglu(&m(&gate), &m(&up));
        assert!(crate::qualify::rel_l2(&cpu.data, &reference::swiglu(&gate, &up)) < 1e-6);
        let cpu = CpuBackend.sigmoid_gate(&m(&up), &m(&gate));
        assert!(crate::qualify::rel_l2(&cpu.data, &reference::sigmoid_gate(&up, &gate)) < 1e-6);
        let cpu = CpuBackend.softmax(&m(&gate));
        assert!(crate::qualify::rel_l2(&cpu.data, &reference::softmax_rows(&gate, 16)) < 1e-6);
    }

    #[test]
    fn argmax_rows_keep_their_meaning() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let argmax = crate::engine::generate::argmax;
        assert_eq!(argmax(&argmax_row(&mut rng, 100, 3)), 0, "constant row");
        assert_eq!(argmax(&argmax_row(&mut rng, 100, 4)), 0, "all -inf");
        assert_eq!(argmax(&argmax_row(&mut rng, 100, 6)), 0, "NaN at 0");
        assert_eq!(argmax(&argmax_row(&mut rng, 100, 2)), 99, "max at the end");
        assert_eq!(argmax(&argmax_row(&mut rng, 100, 5)), 50, "NaNs skipped");
        assert_eq!(argmax(&argmax_row(&mut rng, 99, 7)), 33, "-0 before 0 ties");
        let tie = argmax_row(&mut rng, 1000, 1);
        let first = tie.iter().position(|&v| v == 9.0).unwrap() as u32;
        assert_eq!(argmax(&tie), first);
    }

    #[test]
    fn exact_outcomes_pass_only_without_mismatches() {
        assert!(exact("r".into(), "s".into(), 0, 4).pass);
        let o = exact("r".into(), "s".into(), 1, 4);
        assert!(!o.pass && o.rel_l2.is_infinite());
        assert_eq!(mismatches(&[1u32, 2], &[1, 2]), 0);
        assert_eq!(mismatches(&[1u32, 2], &[1, 3]), 1);
        assert!(mismatches(&[1u32], &[1, 2]) > 0);
    }

    /// The column split renders, waits for its predecessor once and compiles for sm_90.
    #[test]
    fn split_cols_compiles_with_nvrtc() {
        let jit = crate::jit::test_jit();
        let spec = split_cols_spec();
        assert!(crate::jit::calls_pdl_wait(&jit.render(&spec).unwrap()));
        jit.cubin(&spec, crate::jit::Arch::new(9, 0))
            .unwrap_or_else(|e| panic!("{}: {e}", spec.entry));
    }

    #[test]
    fn entry_names_are_unique() {
        let mut names: Vec<String> = instantiations().into_iter().map(|s| s.entry).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(n, names.len());
    }
}
