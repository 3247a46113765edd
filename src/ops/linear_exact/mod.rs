//! The exact linear route: `Y[T,N] = X[T,K] * W[N,K]^T` with f32 activations in and out,
//! W in any weight format, f32 accumulation: the cuda backend's reference mode uses it so
//! that the GPU engine can be compared with the cpu backend to rounding error (bf16
//! activations would hide a real bug inside their own 1e-2 noise). Larger T is tiled over
//! launches of `tt` columns.
//!
//! Four kernels:
//! - `mma` (`templates/linear/gemv_mma.cu`, host side in [`super::linear_mma_exact`]):
//!   q4_g64 and q8_g32 on tensor cores, the f32 activations split into three exact bf16
//!   (hi + mid + lo) so the products stay f32-accurate; weights read once for up to 32
//!   columns. [`ExactRoute::choose`] takes it from [`MMA_MIN_T`] columns.
//! - `ring` (`templates/linear/gemv_ring.cu`): 4- and 8-bit codes (q4_g64, q8_g32) at
//!   T <= 4 with K a multiple of 1024: weights through a per-warp cp.async ring in shared
//!   memory, codes used as subnormal floats (no conversion arithmetic), rows balanced per
//!   block. [`ExactRoute::choose`] takes it for those formats below [`MMA_MIN_T`] columns
//!   (and with a prologue up to 4); a launch on a shape it does not take runs the stream
//!   kernel's default split instead.
//! - `stream` (`templates/linear/gemv_stream.cu`): the bandwidth-first GEMV for the
//!   symmetric integer formats whose groups are whole 32-weight chunks (q4_g64, q5_g64,
//!   q6_g64, q8_g32): 16-byte streamed weight loads issued ahead of use, codes converted by
//!   the magic-number trick (no int-to-float unit), activations read once per lane for
//!   several rows. [`ExactRoute::choose`] takes it wherever the format allows and the ring
//!   kernel does not. At one column and K <= 2048 its default split runs a small-K split
//!   instead ([`small_k_tile`]: the direct mode, a warp per row group with the whole row in
//!   registers, or one row per warp): SmolLM2's decode linears.
//! - `gemv` (`templates/linear/gemv.cu` with `act = "f32"`): every other format (dense,
//!   row-scaled, affine). Dense formats take any K; the others need whole groups.
//!
//! Prologues (stream and ring kernels): the op before the GEMV applied while the
//! activations are staged, so that it needs no launch of its own: RMSNorm (both weight
//! conventions) and SwiGLU of a gate_up matrix. See [`Prologue`],
//! [`ExactRoute::choose_with`], [`launch_with`].
//!
//! The stream and ring kernels launch programmatically (PDL, `templates/common/pdl.cuh`):
//! they issue their first weight loads, then wait for the kernel before them ahead of any
//! read of the activations or residual and any store, so that a launch's start and its
//! first weights overlap the previous kernel's end. `gemv` does not.

use std::collections::HashMap;
use std::sync::Mutex;

use super::linear::Epilogue;
pub use super::rmsnorm::NormWeight;
use super::weight::DeviceWeight;
use crate::formats::{Format, FormatKind};
use crate::gpu::{CudaFunction, Gpu, GpuError, LaunchConfig};
use crate::jit::KernelSpec;

mod bench;
mod qualify;

pub use bench::{bench, launched_route};
pub(super) use bench::{median_batched_us, BATCH};
pub use qualify::qualify;
pub(super) use qualify::Case;

/// Column tiles of the generic kernel: one token (decode) and eight (prefill, tiled).
pub const TILES: [u32; 2] = [1, 8];
const WARPS: u32 = 4;
/// Column tiles of the stream kernel.
pub const STREAM_TT: [u32; 4] = [1, 2, 4, 8];

/// The stream kernel's work split: `rows` output rows per warp, `warps` per block,
/// `unroll` chunks (32 weights) of every row loaded per lane before any is used.
/// `persistent`: the grid is about as many blocks as fit on the device at once (balanced
/// so that every block walks the same number of row groups, give or take one), each block
/// looping over row groups; the activations are staged once per block when the whole row
/// fits the shared memory (the opt-in budget [`STREAM_SMEM_PERSISTENT`] where the device
/// grants it). Otherwise one block per row group, slabs of at most [`STREAM_SMEM`].
/// `direct` (one column, K of at most `32 * unroll` chunks; other launches of it run the
/// default split): each warp holds the whole activation row in registers and walks groups
/// of `rows` rows, no shared memory and no barrier; the grid is capped at what fits at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamTile {
    pub rows: u32,
    pub warps: u32,
    pub unroll: u32,
    pub persistent: bool,
    pub direct: bool,
}

/// The ring kernel's split (`templates/linear/gemv_ring.cu`): `rows` output rows per pass
/// of a warp, `warps` per block, `stages` ring slots per warp (`stages - 1` stages of
/// weights in flight per warp while one is computed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RingTile {
    pub rows: u32,
    pub warps: u32,
    pub stages: u32,
}

/// What the stream kernel computes on the activations as it stages them (the kind; the
/// launch's operands are in [`Prologue`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrologueKind {
    None,
    /// `X = x * rsqrt(mean_k(x^2) + eps) * g` per column, `g = w` (plain) or `1 + w`
    /// (zero-centred), as `templates/norm/rmsnorm.cu` computes it (f32).
    RmsNorm(NormWeight),
    /// `X = silu(gate) * up` of a gate_up input `[T, 2K]` (gate in columns `[0, K)`), as
    /// the elementwise swiglu computes it (f32).
    Swiglu,
    /// The GDN mixer's output norm, `X = x * rsqrt(mean_g(x^2) + eps) * w * silu(z)` over
    /// each group of [`GATED_NORM_GROUP`] (one value head), as `templates/gdn/out_norm.cu`
    /// computes it (f32): ring routes only ([`PrologueKind::RING_ONLY`]).
    GatedNorm,
}

/// The gated norm prologue's group: one value head (dv = 128 in every model here).
pub const GATED_NORM_GROUP: usize = 128;

impl PrologueKind {
    /// The prologues that are instantiated (beside `None`), each with one epilogue:
    /// RMSNorm with none (a norm feeds a projection), SwiGLU with the residual (the MLP's
    /// down projection).
    pub const FUSED: [(PrologueKind, Epilogue); 3] = [
        (PrologueKind::RmsNorm(NormWeight::Plain), Epilogue::None),
        (
            PrologueKind::RmsNorm(NormWeight::ZeroCentred),
            Epilogue::None,
        ),
        (PrologueKind::Swiglu, Epilogue::Residual),
    ];

    /// The prologues only the ring kernel instantiates, each with one epilogue: the gated
    /// norm with the residual (the GDN mixer's out projection, one lane or a few).
    pub const RING_ONLY: [(PrologueKind, Epilogue); 1] =
        [(PrologueKind::GatedNorm, Epilogue::Residual)];

    /// The template's `prologue` parameter.
    pub fn param(self) -> &'static str {
        match self {
            PrologueKind::None => "none",
            PrologueKind::RmsNorm(NormWeight::Plain) => "rmsnorm",
            PrologueKind::RmsNorm(NormWeight::ZeroCentred) => "rmsnorm1p",
            PrologueKind::Swiglu => "swiglu",
            PrologueKind::GatedNorm => "gatednorm",
        }
    }

    /// Whether this prologue is instantiated with `epilogue` (see [`Self::FUSED`]).
    pub fn instantiated_with(self, epilogue: Epilogue) -> bool {
        self == PrologueKind::None || Self::FUSED.contains(&(self, epilogue))
    }
}

/// A launch's prologue with its operands (device addresses).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prologue {
    None,
    /// `weight`: the norm's f32 weight `[K]`; `conv`: its convention.
    RmsNorm {
        weight: u64,
        eps: f32,
        conv: NormWeight,
    },
    /// The input `x` is `[T, 2K]` (gate, then up, per row).
    Swiglu,
    /// `weight`: the norm's f32 weight `[GATED_NORM_GROUP]`; `z`: the gate, row `t` at
    /// `z + 4 * t * z_ld` (16-byte aligned rows).
    GatedNorm {
        weight: u64,
        eps: f32,
        z: u64,
        z_ld: usize,
    },
}

impl Prologue {
    /// The prologue of `kind`, an RMSNorm reading its weight `[K]` at `weight` with `eps`
    /// (ignored by the other kinds; the gated norm's gate at `z`, rows `z_ld` apart).
    pub fn of_kind(kind: PrologueKind, weight: u64, eps: f32, (z, z_ld): (u64, usize)) -> Prologue {
        match kind {
            PrologueKind::None => Prologue::None,
            PrologueKind::RmsNorm(conv) => Prologue::RmsNorm { weight, eps, conv },
            PrologueKind::Swiglu => Prologue::Swiglu,
            PrologueKind::GatedNorm => Prologue::GatedNorm {
                weight,
                eps,
                z,
                z_ld,
            },
        }
    }

    pub fn kind(&self) -> PrologueKind {
        match *self {
            Prologue::None => PrologueKind::None,
            Prologue::RmsNorm { conv, .. } => PrologueKind::RmsNorm(conv),
            Prologue::Swiglu => PrologueKind::Swiglu,
            Prologue::GatedNorm { .. } => PrologueKind::GatedNorm,
        }
    }
}

/// Which kernel an exact route runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExactKernel {
    /// `linear/gemv.cu`, one warp per row, the format's generic group decode.
    Gemv,
    /// `linear/gemv_stream.cu`.
    Stream(StreamTile),
    /// `linear/gemv_ring.cu`: 4- and 8-bit codes, K a multiple of 1024, up to 4 columns;
    /// other shapes launch the stream kernel's default split instead (see [`launch_with`]).
    Ring(RingTile),
    /// `linear/gemv_mma.cu`: 4- and 8-bit codes, tensor cores with three-way bf16 splits
    /// of the activations, up to 32 columns (see [`super::linear_mma_exact`]).
    Mma(MmaTile),
}

pub use super::linear_mma_exact::{
    mma_enabled, mma_supports, mma_tile, mma_tt, MmaTile, MMA_MAX_T, MMA_MIN_T, MMA_TT,
};

/// One instantiation.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactRoute {
    pub format: &'static Format,
    pub tt: u32,
    /// `None` or `Residual` (`Y = X W^T + R`, R may be Y itself).
    pub epilogue: Epilogue,
    pub kernel: ExactKernel,
    /// Stream and ring kernels only; [`PrologueKind::None`] for the generic one.
    pub prologue: PrologueKind,
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
            persistent: false,
            direct: false,
        }
    }
    const fn pt(rows: u32, warps: u32, unroll: u32) -> StreamTile {
        StreamTile {
            persistent: true,
            ..st(rows, warps, unroll)
        }
    }
    const T1: [StreamTile; 8] = [
        pt(4, 4, 2),
        st(4, 4, 2),
        pt(4, 8, 2),
        DIRECT_T1[0],
        DIRECT_T1[1],
        DIRECT_T1[2],
        DIRECT_T1[3],
        SMALL_K_T1,
    ];
    const T2: [StreamTile; 3] = [st(4, 8, 1), st(4, 4, 1), pt(4, 8, 1)];
    const T4: [StreamTile; 2] = [pt(4, 8, 1), st(2, 8, 1)];
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

/// The direct splits at one column (1, 2, 4 and 8 rows per warp, 4 warps, one chunk per
/// lane: K up to 1024), which the default split runs instead where K fits (see
/// [`small_k_tile`]).
pub const DIRECT_T1: [StreamTile; 4] = [dt(1), dt(2), dt(4), dt(8)];
const fn dt(rows: u32) -> StreamTile {
    StreamTile {
        rows,
        warps: 4,
        unroll: 1,
        persistent: true,
        direct: true,
    }
}
/// The block-staged split the default runs instead at one column where K takes 33 to 64
/// chunks (the direct split does not fit) or the prologue is SwiGLU (whose silu a direct
/// warp would compute for the whole row): one row per warp, 8 warps sharing the staging.
pub const SMALL_K_T1: StreamTile = StreamTile {
    rows: 1,
    warps: 8,
    unroll: 2,
    persistent: false,
    direct: false,
};

/// Whether a direct split takes a launch: one column, and every chunk of the row held by
/// the warp's lanes (at least one).
fn direct_fits(tile: StreamTile, tt: u32, k: usize) -> bool {
    let chunks = k / 32;
    tt == 1 && chunks >= 1 && chunks <= 32 * tile.unroll as usize
}

/// The split the default one-column split runs on a small-K shape, `None` where it keeps
/// its own (K past 2048, another tile, or `NINFER_STREAM_SMALL=0`): a direct split where K
/// fits one chunk per lane and the prologue is not SwiGLU, with 4 rows per warp, or 1
/// without a prologue at N <= 1024 (`NINFER_STREAM_SMALL=r1|r2|r4|r8` forces one, for A/B
/// runs); else [`SMALL_K_T1`] up to 64 chunks.
pub fn small_k_tile(route: &ExactRoute, n: usize, k: usize) -> Option<StreamTile> {
    if route.tt != 1 || route.kernel != ExactKernel::Stream(stream_tile(1)) {
        return None;
    }
    if let Some(choice) = shape_overrides().get(&(n, k)) {
        // (The default split itself, or a direct one past its K, would launch the default
        // split again: no substitute.)
        return choice.filter(|&t| t != stream_tile(1) && (!t.direct || direct_fits(t, 1, k)));
    }
    let mode = small_k_mode();
    if mode == Some(0) {
        return None;
    }
    let chunks = k / 32;
    if chunks <= 32 && route.prologue != PrologueKind::Swiglu {
        // Measured on SmolLM2's decode step (bench/kernels/README.md, v9 run 3): 4 rows per
        // warp after RMSNorm (qkv, gate_up; 1 row: 240 and 768 blocks, each warp reading
        // the norm weight, ran slower) and on large N (the head); 1 row without a prologue
        // at N <= 1024 (o).
        let one = route.prologue == PrologueKind::None && n <= 1024;
        let rows = mode.unwrap_or(if one { 1 } else { 4 });
        return DIRECT_T1.iter().copied().find(|t| t.rows == rows);
    }
    (chunks <= 64).then_some(SMALL_K_T1)
}

/// The direct split a launch of `route` on an `[n, k]` weight runs, if it runs one: what
/// `launch_with` substitutes ([`launched_route`]), without a GPU. A ring route on a K that
/// is not a multiple of 1024 launches the stream default (the ring takes none of those),
/// and the stream default at one column takes [`small_k_tile`]'s split.
pub fn launched_direct(route: &ExactRoute, n: usize, k: usize) -> Option<StreamTile> {
    match launched_route(route, n, k).kernel {
        ExactKernel::Stream(t) if t.direct => Some(t),
        _ => None,
    }
}

/// The split a launch of the stream route `route` on an `[n, k]` weight runs instead of its
/// own, if any: a direct split past its K (or at more than one column) runs the default
/// split; the default split at one column runs the small-K split where one applies, unless
/// `exact_tile` (qualify's launches, each split by name). `None` for other kernels.
fn stream_substitute(
    route: &ExactRoute,
    n: usize,
    k: usize,
    exact_tile: bool,
) -> Option<StreamTile> {
    let ExactKernel::Stream(tile) = route.kernel else {
        return None;
    };
    if tile.direct && !direct_fits(tile, route.tt, k) {
        Some(stream_tile(route.tt))
    } else if exact_tile {
        None
    } else {
        small_k_tile(route, n, k)
    }
}

/// `NINFER_STREAM_SMALL`: unset (the rule of [`small_k_tile`]), `0` (off: the default split
/// everywhere, the route before v9) or `r1` / `r2` / `r4` (that many rows per warp on every
/// direct shape): an A/B switch for whole-model benchmarks.
fn small_k_mode() -> Option<u32> {
    use std::sync::OnceLock;
    static MODE: OnceLock<Option<u32>> = OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("NINFER_STREAM_SMALL").as_deref() {
        Ok("0") => Some(0),
        Ok("r1") => Some(1),
        Ok("r2") => Some(2),
        Ok("r4") => Some(4),
        Ok("r8") => Some(8),
        _ => None,
    })
}

/// The one-column split's short name (`r4_w4_u2_p`, `r1_w4_u1_d`).
pub fn tile_name(t: StreamTile) -> String {
    let p = match (t.direct, t.persistent) {
        (true, _) => "_d",
        (false, true) => "_p",
        (false, false) => "",
    };
    format!("r{}_w{}_u{}{p}", t.rows, t.warps, t.unroll)
}

/// `NINFER_STREAM_T1=NxK=split,...` (e.g. `960x576=r1_w4_u1_d,576x1536=-`): per shape, the
/// one-column split the default split runs instead (`-`: its own), ahead of the rule and of
/// `NINFER_STREAM_SMALL`; for A/B runs of one shape at a time. Unknown names are ignored.
fn shape_overrides() -> &'static HashMap<(usize, usize), Option<StreamTile>> {
    use std::sync::OnceLock;
    static MAP: OnceLock<HashMap<(usize, usize), Option<StreamTile>>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map = HashMap::new();
        let spec = std::env::var("NINFER_STREAM_T1").unwrap_or_default();
        for item in spec.split(',').filter(|i| !i.is_empty()) {
            let Some((shape, name)) = item.split_once('=') else {
                continue;
            };
            let Some((n, k)) = shape.split_once('x') else {
                continue;
            };
            let (Ok(n), Ok(k)) = (n.trim().parse(), k.trim().parse()) else {
                continue;
            };
            let choice = if name == "-" {
                None
            } else {
                match stream_tiles(1).iter().find(|&&t| tile_name(t) == name) {
                    Some(&t) => Some(t),
                    None => continue,
                }
            };
            map.insert((n, k), choice);
        }
        map
    })
}

/// Column tiles of the ring kernel.
pub const RING_TT: [u32; 3] = [1, 2, 4];

/// The ring kernel's splits per format width and column tile, the default first (all
/// instantiated with both epilogues and the prologues, qualified, timed by the benchmark).
/// 8-bit stages are twice the bytes, hence fewer warps or rows for the same ring. The T = 1
/// defaults are the splits that won most of the 27B shapes in bench/kernels/v6/run1; since
/// v28 the shallow `r4_w16_s2` / `r4_w8_s2` beat them at T = 1 on most shapes but the head
/// and gate_up (34816 rows), which the tuning profile chooses per shape.
pub fn ring_tiles(bits: u32, tt: u32) -> &'static [RingTile] {
    const fn rt(rows: u32, warps: u32, stages: u32) -> RingTile {
        RingTile {
            rows,
            warps,
            stages,
        }
    }
    // Measured in bench/kernels v26-v28 (x20 chains): the 32-warp splits (twice the warps
    // an SM, 64 registers) lose 5-10%; the two-stage ones, ~2 KB a warp in flight, win
    // where the rows per block are few (17408x5120 16.9 -> 16.3 us, 4096x14336 12.8 ->
    // 11.2); `r2_w16_s2` keeps too little in flight.
    const Q4_T1: [RingTile; 8] = [
        rt(8, 16, 2),
        rt(4, 16, 3),
        rt(4, 8, 4),
        rt(4, 16, 4),
        rt(4, 32, 2),
        rt(4, 16, 2),
        rt(4, 8, 2),
        rt(2, 16, 2),
    ];
    const Q4_TN: [RingTile; 1] = [rt(4, 16, 3)];
    const Q8_T1: [RingTile; 5] = [
        rt(2, 16, 3),
        rt(4, 8, 3),
        rt(2, 16, 4),
        rt(2, 32, 2),
        rt(2, 16, 2),
    ];
    const Q8_TN: [RingTile; 1] = [rt(4, 8, 3)];
    match (bits, tt) {
        (4, 1) => &Q4_T1,
        (4, _) => &Q4_TN,
        (_, 1) => &Q8_T1,
        _ => &Q8_TN,
    }
}

/// The ring kernel's default split.
pub fn ring_tile(bits: u32, tt: u32) -> RingTile {
    ring_tiles(bits, tt)[0]
}

/// Whether the ring kernel takes this format: 4- or 8-bit symmetric integers with f16
/// scales in groups of 32, 64 or 128 (so one row's scales of 32 chunks are whole 16-byte
/// copies).
pub fn ring_supports(format: &Format) -> bool {
    format.kind == FormatKind::SymInt
        && (format.bits == 4 || format.bits == 8)
        && [32, 64, 128].contains(&format.group)
        && format.scale == crate::formats::registry::ScaleType::F16
}

/// Bytes of one ring stage: `rows` rows of 32 chunks and their scales.
fn ring_stage_bytes(format: &Format, rows: u32) -> usize {
    let chunk = format.bits as usize * 4;
    let scales = 32 / (format.group / 32) * 2;
    rows as usize * (32 * chunk + scales)
}

/// K-slices per row stream for the ring kernel: the split whose busiest warp streams the
/// fewest bytes (rows x rounds) and computes the fewest passes, fewer slices on a tie.
fn ring_ks(n: usize, rounds: usize, grid: usize, tile: RingTile) -> u32 {
    let rows = tile.rows as usize;
    let mut best = (usize::MAX, 1);
    for ks in 1..=rounds.min(tile.warps as usize) {
        let streams = grid * (tile.warps as usize / ks);
        let per = n.div_ceil(streams.max(1));
        let cost = rounds.div_ceil(ks) * (per + per.div_ceil(rows) * rows);
        if cost < best.0 {
            best = (cost, ks);
        }
    }
    best.1 as u32
}

/// Shared memory the stream kernel may take for its staged activations (no opt-in needed).
pub const STREAM_SMEM: usize = 48 * 1024;
/// Shared memory a persistent stream launch may take to stage a whole activation row once
/// per block, where the device grants it by opt-in (sm_90 up to 227 KB per block): at most
/// half an SM's, so that two blocks still fit.
pub const STREAM_SMEM_PERSISTENT: usize = 112 * 1024;
/// Warps per SM a persistent launch keeps when it stages a whole row past 48 KB.
const STREAM_MIN_WARPS: usize = 16;
/// Bytes of one staged chunk: 32 f32 activations and a 16-byte pad.
const STAGED_CHUNK_BYTES: usize = 36 * 4;

/// How the stream kernel cuts K into slabs for `tt` columns: (chunks per slab, shared
/// bytes). Even slabs under [`STREAM_SMEM`], rounded up to whole lane rounds (32 chunks)
/// when K takes several.
pub fn stream_slab(tt: u32, k: usize) -> (usize, usize) {
    stream_slab_within(tt, k, STREAM_SMEM)
}

/// [`stream_slab`] under a shared-memory budget of `budget` bytes.
pub fn stream_slab_within(tt: u32, k: usize, budget: usize) -> (usize, usize) {
    let chunks = k / 32;
    let max = (budget / (tt as usize * STAGED_CHUNK_BYTES)).max(1);
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

/// An A/B switch: on unless the environment sets `var` to `0`, read once into `cell`.
pub(super) fn switch_on(cell: &'static std::sync::OnceLock<bool>, var: &str) -> bool {
    *cell.get_or_init(|| std::env::var(var).map_or(true, |v| v != "0"))
}

/// An opt-in switch read once: on only where the environment sets `var` to something other
/// than empty or `0` (a path kept for A/B runs that lost its measurement).
pub(super) fn switch_opt_in(cell: &'static std::sync::OnceLock<bool>, var: &str) -> bool {
    *cell.get_or_init(|| crate::gpu::env_switch(var))
}

/// Whether [`ExactRoute::choose`] takes the ring kernel: yes unless the environment sets
/// `NINFER_EXACT_RING=0` (an A/B switch for whole-model benchmarks in one run).
pub fn ring_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    switch_on(&ON, "NINFER_EXACT_RING")
}

/// Whether the engine runs the GDN mixer's output norm as the ring kernel's prologue of
/// its out projection ([`PrologueKind::GatedNorm`]): yes unless the environment sets
/// `NINFER_GATED_NORM=0` (an A/B switch for whole-model benchmarks in one run).
pub fn gated_norm_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    switch_on(&ON, "NINFER_GATED_NORM")
}

/// `NINFER_RING_BLOCKS_PER_SM=n` (n >= 1): a ring launch takes at most `n` blocks per SM
/// even where more fit, so that the next launch's blocks can become resident beside it
/// and issue their first weight stages (before their PDL wait) while it drains. An A/B
/// switch for the cross-launch overlap experiment (bench/kernels v11); unset or 0: as
/// many blocks as fit.
pub fn ring_blocks_per_sm_cap() -> Option<usize> {
    use std::sync::OnceLock;
    static CAP: OnceLock<Option<usize>> = OnceLock::new();
    *CAP.get_or_init(|| {
        parse_blocks_cap(&std::env::var("NINFER_RING_BLOCKS_PER_SM").unwrap_or_default())
    })
}

/// The value of `NINFER_RING_BLOCKS_PER_SM`: a positive count, else no cap.
fn parse_blocks_cap(v: &str) -> Option<usize> {
    v.trim().parse::<usize>().ok().filter(|&n| n > 0)
}

impl ExactRoute {
    /// Whether the route's kernel writes `silu(gate) * up` of a stacked gate_up weight
    /// (`[2I, K]`, outputs `[T, I]`): [`Epilogue::Swiglu`] on the mma register kernel (see
    /// `templates/linear/gemv_mma.cu`) or on a ring split of an even number of rows (the
    /// pairs of `templates/linear/gemv_ring.cu`). No other exact kernel takes that epilogue.
    pub fn has_swiglu_epilogue(&self) -> bool {
        self.epilogue == Epilogue::Swiglu
            && match self.kernel {
                ExactKernel::Mma(MmaTile { mt, .. }) => mt == 0,
                ExactKernel::Ring(tile) => tile.rows.is_multiple_of(2),
                _ => false,
            }
    }

    /// Whether the route rounds its activations to bf16 (an mma tile of the bf16 mode):
    /// not exact, and never a tuning candidate for the exact route.
    pub fn rounds_activations(&self) -> bool {
        matches!(self.kernel, ExactKernel::Mma(MmaTile { bf16: true, .. }))
    }

    pub fn spec(&self) -> KernelSpec {
        let e = match self.epilogue {
            Epilogue::None => "plain",
            Epilogue::Residual => "res",
            Epilogue::Swiglu => {
                assert!(
                    self.has_swiglu_epilogue(),
                    "only the mma register kernel and even ring splits have the SwiGLU epilogue"
                );
                "swiglu"
            }
            Epilogue::Conv => {
                assert!(
                    matches!(self.kernel, ExactKernel::Mma(MmaTile { mt: 0, .. })),
                    "only the mma register kernel has the conv epilogue"
                );
                "conv"
            }
        };
        let f = &self.format.name;
        assert!(
            self.prologue == PrologueKind::None || self.kernel != ExactKernel::Gemv,
            "only the stream, ring and mma kernels have prologues"
        );
        let pro = match self.prologue {
            PrologueKind::None => String::new(),
            k => format!("_{}", k.param()),
        };
        // The mma kernels with activations rounded to bf16 (only they carry `parts`, so the
        // exact instantiations keep their specs).
        let bf16 = self.rounds_activations();
        let b16 = if bf16 { "_b16" } else { "" };
        let spec = match self.kernel {
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
                persistent,
                direct,
            }) => {
                let p = match (direct, persistent) {
                    (true, _) => "_d",
                    (false, true) => "_p",
                    (false, false) => "",
                };
                let spec = KernelSpec::new(
                    "linear_exact",
                    "linear/gemv_stream.cu",
                    format!(
                        "linear_exact_stream_{f}_{e}_t{}_r{rows}_w{warps}_u{unroll}{p}{pro}",
                        self.tt
                    ),
                )
                .param("rows", rows)
                .param("warps", warps)
                .param("unroll", unroll)
                .param("prologue", self.prologue.param())
                .programmatic();
                // Only the direct splits carry the param (the others' specs stay as they were).
                if direct {
                    spec.param("direct", true)
                } else {
                    spec
                }
            }
            ExactKernel::Ring(RingTile {
                rows,
                warps,
                stages,
            }) => KernelSpec::new(
                "linear_exact",
                "linear/gemv_ring.cu",
                format!(
                    "linear_exact_ring_{f}_{e}_t{}_r{rows}_w{warps}_s{stages}{pro}",
                    self.tt
                ),
            )
            .param("rows", rows)
            .param("warps", warps)
            .param("stages", stages)
            .param("prologue", self.prologue.param())
            .programmatic(),
            ExactKernel::Mma(MmaTile {
                warps,
                unroll,
                mt: 0,
                cluster,
                ..
            }) => {
                // Only tiles in clusters carry the param (the others' specs stay as they were).
                let c = if cluster > 1 {
                    format!("_c{cluster}")
                } else {
                    String::new()
                };
                let spec = KernelSpec::new(
                    "linear_exact",
                    "linear/gemv_mma.cu",
                    format!(
                        "linear_exact_mma_{f}_{e}_t{}_w{warps}_u{unroll}{c}{pro}{b16}",
                        self.tt
                    ),
                )
                .param("warps", warps)
                .param("unroll", unroll)
                .param("prologue", self.prologue.param())
                .programmatic();
                if cluster > 1 {
                    // Thread block clusters are sm_90's.
                    spec.param("cluster", cluster).needs_arch(9, 0)
                } else {
                    spec
                }
            }
            ExactKernel::Mma(MmaTile { warps, mt, .. }) => KernelSpec::new(
                "linear_exact",
                "linear/gemv_mma_ring.cu",
                format!(
                    "linear_exact_mmaring_{f}_{e}_t{}_w{warps}_m{mt}{pro}{b16}",
                    self.tt
                ),
            )
            .param("warps", warps)
            .param("mt", mt)
            .param("prologue", self.prologue.param())
            .programmatic(),
        }
        .param("format", f)
        .param("tt", self.tt)
        .param("epilogue", self.epilogue)
        .param("act", "f32");
        // Only the conv epilogue carries its window (the others' specs stay as they were).
        let spec = match self.epilogue {
            Epilogue::Conv => spec.param("kc", super::linear_mma_exact::CONV_KC),
            _ => spec,
        };
        if bf16 {
            spec.param("parts", 1u32)
        } else {
            spec
        }
    }

    /// The stream kernel wherever the format allows (the smallest column tile that holds
    /// T, up to 8), else the generic kernel: one column for decode, eight otherwise.
    pub fn choose(format: &'static Format, t: usize, epilogue: Epilogue) -> Self {
        Self::choose_with(format, t, epilogue, PrologueKind::None)
            .expect("every format has a route without a prologue")
    }

    /// [`Self::choose`] with a prologue: always `Some` for [`PrologueKind::None`]. A
    /// prologue needs the stream kernel (a format for which [`stream_supports`]) and one
    /// of the instantiated pairs [`PrologueKind::FUSED`] (RMSNorm with epilogue none,
    /// SwiGLU with the residual): `None` otherwise, and the caller runs the op unfused.
    pub fn choose_with(
        format: &'static Format,
        t: usize,
        epilogue: Epilogue,
        prologue: PrologueKind,
    ) -> Option<Self> {
        if PrologueKind::RING_ONLY.contains(&(prologue, epilogue)) {
            // The ring kernel's own prologues: its default split where it runs T, else none.
            let tt = (t.max(1) as u32).next_power_of_two();
            let ring = ring_supports(format) && RING_TT.contains(&tt) && ring_enabled();
            return ring.then(|| ExactRoute {
                format,
                tt,
                epilogue,
                kernel: ExactKernel::Ring(ring_tile(format.bits, tt)),
                prologue,
            });
        }
        if stream_supports(format) {
            if !prologue.instantiated_with(epilogue) {
                return None;
            }
            if let Some(route) = super::linear_mma_exact::choose(format, t, epilogue, prologue) {
                return Some(route);
            }
            let tt = (t.clamp(1, 8) as u32).next_power_of_two();
            let kernel = if ring_supports(format) && RING_TT.contains(&tt) && ring_enabled() {
                ExactKernel::Ring(ring_tile(format.bits, tt))
            } else {
                ExactKernel::Stream(stream_tile(tt))
            };
            return Some(ExactRoute {
                format,
                tt,
                epilogue,
                kernel,
                prologue,
            });
        }
        (prologue == PrologueKind::None).then_some(ExactRoute {
            format,
            tt: if t <= 1 { 1 } else { 8 },
            epilogue,
            kernel: ExactKernel::Gemv,
            prologue,
        })
    }

    /// Rows one block covers (generic kernel).
    fn rows_per_block(&self) -> usize {
        match self.kernel {
            ExactKernel::Gemv => WARPS as usize,
            ExactKernel::Stream(st) => (st.rows * st.warps) as usize,
            ExactKernel::Ring(rt) => (rt.rows * rt.warps) as usize,
            ExactKernel::Mma(mt) => 16 * mt.warps as usize,
        }
    }

    fn threads(&self) -> u32 {
        match self.kernel {
            ExactKernel::Gemv => WARPS * 32,
            ExactKernel::Stream(st) => st.warps * 32,
            ExactKernel::Ring(rt) => rt.warps * 32,
            ExactKernel::Mma(mt) => mt.warps * 32,
        }
    }

    /// The stream kernel's default route with this route's format, tile, epilogue and
    /// prologue (what a ring route runs on shapes the ring kernel does not take; an mma
    /// route with unaligned weight rows runs it at a tile of at most 8).
    fn stream_fallback(&self) -> Self {
        ExactRoute {
            kernel: ExactKernel::Stream(stream_tile(self.tt)),
            ..self.clone()
        }
    }
}

/// Every instantiated route (the tuner's `linear_exact` family takes its candidates from
/// here, so a kernel added here is tuned without a list of its own).
pub fn all_routes() -> Vec<ExactRoute> {
    let mut v = Vec::new();
    for format in crate::formats::registry().iter() {
        for tt in TILES {
            for epilogue in [Epilogue::None, Epilogue::Residual] {
                v.push(ExactRoute {
                    format,
                    tt,
                    epilogue,
                    kernel: ExactKernel::Gemv,
                    prologue: PrologueKind::None,
                });
            }
        }
    }
    v.extend(stream_routes());
    v.extend(ring_routes());
    v.extend(super::linear_mma_exact::routes());
    v
}

/// The prologues instantiated with the ring kernel's SwiGLU epilogue (the gate_up
/// projection's norms; the engine takes them through [`ring_with_swiglu_epilogue`]).
const RING_SWIGLU_EPILOGUE_PROLOGUES: [PrologueKind; 2] = [
    PrologueKind::RmsNorm(NormWeight::Plain),
    PrologueKind::RmsNorm(NormWeight::ZeroCentred),
];

/// The gate_up projection's form of `route` (a ring route with an RMSNorm prologue and no
/// epilogue, for a stacked gate_up `w` of `[2I, K]`): the same split with the SwiGLU
/// epilogue, writing `silu(gate) * up` (`[T, I]`) so that the down projection needs no
/// SwiGLU prologue. `None` where the split has an odd number of rows or the ring kernel
/// would not take the shape (it would fall back to the stream kernel, which has no such
/// epilogue).
pub fn ring_with_swiglu_epilogue(route: &ExactRoute, w: &DeviceWeight) -> Option<ExactRoute> {
    let ExactKernel::Ring(tile) = route.kernel else {
        return None;
    };
    let takes = matches!(route.prologue, PrologueKind::RmsNorm(_))
        && route.epilogue == Epilogue::None
        && tile.rows.is_multiple_of(2)
        && ring_swiglu_takes(w);
    takes.then(|| ExactRoute {
        epilogue: Epilogue::Swiglu,
        ..route.clone()
    })
}

/// Whether the ring kernel itself takes `w`: a ring format, whole 1024-weight rounds of K
/// and 16-byte rows (what `ring_geometry` asks of the weight, so a launch of a prologue or
/// epilogue only the ring kernel has never falls back to the stream kernel).
fn ring_takes(w: &DeviceWeight) -> bool {
    ring_supports(w.format)
        && w.layout.k.is_multiple_of(1024)
        && w.layout.q_row_bytes.is_multiple_of(16)
        && w.layout.s_row_bytes.is_multiple_of(16)
        && w.layout.q_offset.is_multiple_of(16)
}

/// Whether the ring kernel's SwiGLU epilogue takes the stacked gate_up `w`: [`ring_takes`]
/// and an even number of rows.
pub fn ring_swiglu_takes(w: &DeviceWeight) -> bool {
    ring_takes(w) && w.layout.n.is_multiple_of(2)
}

/// Whether the ring kernel takes `w` with the gated norm prologue: [`ring_takes`] and K a
/// whole number of norm groups.
pub fn ring_gated_takes(w: &DeviceWeight) -> bool {
    ring_takes(w) && w.layout.k.is_multiple_of(GATED_NORM_GROUP)
}

/// The ring kernel's routes: every format it takes, every column tile and split, both
/// epilogues, the fused prologues ([`PrologueKind::FUSED`]) and its own
/// ([`PrologueKind::RING_ONLY`]); on the splits of an even
/// number of rows also the RMSNorm prologues with the SwiGLU epilogue.
fn ring_routes() -> Vec<ExactRoute> {
    let mut v = Vec::new();
    for format in crate::formats::registry()
        .iter()
        .filter(|f| ring_supports(f))
    {
        for tt in RING_TT {
            for &tile in ring_tiles(format.bits, tt) {
                let mut kinds = vec![
                    (PrologueKind::None, Epilogue::None),
                    (PrologueKind::None, Epilogue::Residual),
                ];
                kinds.extend(PrologueKind::FUSED);
                kinds.extend(PrologueKind::RING_ONLY);
                if tile.rows.is_multiple_of(2) {
                    kinds.extend(RING_SWIGLU_EPILOGUE_PROLOGUES.map(|p| (p, Epilogue::Swiglu)));
                }
                for (prologue, epilogue) in kinds {
                    v.push(ExactRoute {
                        format,
                        tt,
                        epilogue,
                        kernel: ExactKernel::Ring(tile),
                        prologue,
                    });
                }
            }
        }
    }
    v
}

/// The stream kernel's routes for every format it takes: every column tile, every split,
/// both epilogues; and the prologues ([`PrologueKind::FUSED`], each with its epilogue) for
/// every split at one column and the default split at 2, 4 and 8.
fn stream_routes() -> Vec<ExactRoute> {
    let mut v = Vec::new();
    for format in crate::formats::registry()
        .iter()
        .filter(|f| stream_supports(f))
    {
        for tt in STREAM_TT {
            for (i, &tile) in stream_tiles(tt).iter().enumerate() {
                let mut kinds = vec![
                    (PrologueKind::None, Epilogue::None),
                    (PrologueKind::None, Epilogue::Residual),
                ];
                if tt == 1 || i == 0 {
                    kinds.extend(PrologueKind::FUSED);
                }
                for (prologue, epilogue) in kinds {
                    v.push(ExactRoute {
                        format,
                        tt,
                        epilogue,
                        kernel: ExactKernel::Stream(tile),
                        prologue,
                    });
                }
            }
        }
    }
    v
}

pub fn instantiations() -> Vec<KernelSpec> {
    let mut v: Vec<KernelSpec> = all_routes().iter().map(ExactRoute::spec).collect();
    for epilogue in [Epilogue::None, Epilogue::Residual] {
        for rms in [false, true] {
            v.push(super::linear_mma_exact::sum_spec(epilogue, rms));
        }
    }
    // The conv epilogue's (its routes all have the RMSNorm prologue).
    v.push(super::linear_mma_exact::sum_spec(Epilogue::Conv, true));
    v
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
    launch_with(gpu, route, w, x, &Prologue::None, residual, y, t)
}

/// Queues `y = prologue(x) w^T (+ r)`: `y [t, N]`, `r [t, N]` f32 device addresses; `x` is
/// `[t, K]` f32, or `[t, 2K]` (gate, then up, per row) for [`Prologue::Swiglu`]. The
/// prologue's kind must be the route's ([`ExactRoute::choose_with`]).
#[allow(clippy::too_many_arguments)]
pub fn launch_with(
    gpu: &Gpu,
    route: &ExactRoute,
    w: &DeviceWeight,
    x: u64,
    prologue: &Prologue,
    residual: Option<u64>,
    y: u64,
    t: usize,
) -> Result<(), GpuError> {
    launch_inner(
        gpu,
        route,
        w,
        x,
        prologue,
        residual,
        y,
        t,
        Override::default(),
    )
}

/// What a launch takes beyond the common arguments: qualification's handles on the launch
/// geometry (a smaller shared-memory budget, to make K take several slabs, and a smaller
/// grid, to make a persistent block loop, ...), and the conv epilogue's window
/// ([`launch_conv`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Override {
    pub(super) smem_budget: Option<usize>,
    pub(super) max_grid: Option<u32>,
    /// Ring kernel: K-slices per row stream instead of [`ring_ks`]'s choice.
    pub(super) ks: Option<u32>,
    /// Stream kernel: launch the route's own split (no small-K substitute, see
    /// [`small_k_tile`]); a direct split past its K still runs the default one. Mma ring
    /// tile: the ring kernel past [`super::linear_mma_exact::MMA_RING_MAX_WEIGHTS`] too.
    pub(super) exact_tile: bool,
    /// Mma kernel: K-ranges instead of [`super::linear_mma_exact::plan`]'s choice (1: one
    /// K-range of several slabs, the path without the scratch).
    pub(super) k_ranges: Option<u32>,
    /// Mma kernel: who adds a split launch's K-ranges: `Some(true)` the second launch
    /// (`splitk_sum.cu`), `Some(false)` the kernel's last block of each m-range, `None` what
    /// the process takes ([`super::linear_mma_exact::splitk_fused_enabled`]).
    pub(super) split_sum: Option<bool>,
    /// Qualification: launch twice (the first into another buffer, then, but for the SwiGLU
    /// epilogue, once with [`Override::split_sum`] into a third), checking the last (the
    /// split-K counters left zero) and that all have the same bits.
    pub(super) twice: bool,
    /// The conv epilogue's arguments ([`launch_conv`]); none for every other launch.
    pub(super) conv: Option<ConvWindow>,
}

/// The GDN conv of [`Epilogue::Conv`]: weights `[channels][CONV_KC]` f32 and the lanes'
/// windows `[T][channels][CONV_KC - 1]` f32 (device addresses), `channels` the first outputs
/// of each column it takes.
#[derive(Debug, Clone, Copy)]
pub struct ConvWindow {
    pub weights: u64,
    pub state: u64,
    pub channels: usize,
}

impl ConvWindow {
    /// The kernel arguments, in the order both conv epilogues take them after the others
    /// (`conv_w`, `conv_state`, `conv_ch`: linear/mma_exact.cuh, linear/splitk_sum.cu).
    pub(super) fn kernel_args(self) -> (u64, u64, i32) {
        (self.weights, self.state, self.channels as i32)
    }
}

/// [`launch_with`] for a route with the conv epilogue
/// ([`super::linear_mma_exact::with_conv_epilogue`]): column `t` of x is lane `t`'s token,
/// `t` at most the route's column tile (one launch).
#[allow(clippy::too_many_arguments)]
pub fn launch_conv(
    gpu: &Gpu,
    route: &ExactRoute,
    w: &DeviceWeight,
    x: u64,
    prologue: &Prologue,
    conv: ConvWindow,
    y: u64,
    t: usize,
) -> Result<(), GpuError> {
    assert!(
        t <= route.tt as usize,
        "the conv epilogue runs the lanes in one launch"
    );
    assert!(conv.channels <= w.layout.n, "conv channels past N");
    let over = Override {
        conv: Some(conv),
        ..Override::default()
    };
    launch_inner(gpu, route, w, x, prologue, None, y, t, over)
}

/// Blocks of `f` resident per SM with `smem` dynamic shared bytes, per device and entry.
pub(super) fn blocks_per_sm(
    gpu: &Gpu,
    f: &CudaFunction,
    entry: &str,
    threads: u32,
    smem: usize,
) -> Result<u32, GpuError> {
    type Cache = HashMap<(usize, usize), HashMap<String, u32>>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let mut cache = CACHE.lock().expect("occupancy cache");
    let per = cache
        .get_or_insert_with(HashMap::new)
        .entry((gpu.props().ordinal, smem))
        .or_default();
    if let Some(&b) = per.get(entry) {
        return Ok(b);
    }
    let b = f
        .occupancy_max_active_blocks_per_multiprocessor(threads, smem, None)
        .map_err(|e| GpuError::driver(format!("occupancy of {entry}"), e))?
        .max(1);
    per.insert(entry.to_string(), b);
    Ok(b)
}

/// The stream kernel's geometry for one launch: (grid, chunks per slab, shared bytes).
fn stream_geometry(
    gpu: &Gpu,
    f: &CudaFunction,
    route: &ExactRoute,
    entry: &str,
    tile: StreamTile,
    (n, k): (usize, usize),
    over: Override,
) -> Result<(u32, usize, usize), GpuError> {
    let groups = n.div_ceil((tile.rows * tile.warps) as usize);
    if tile.direct {
        // No shared memory; warps walk their groups, so the grid is what fits at once.
        let sms = gpu.props().sm_count as usize;
        if groups <= sms && over.max_grid.is_none() {
            return Ok((groups as u32, 0, 0));
        }
        let resident = blocks_per_sm(gpu, f, entry, tile.warps * 32, 0)? as usize * sms;
        let resident = over.max_grid.map_or(resident, |g| resident.min(g as usize));
        let waves = groups.div_ceil(resident.max(1));
        return Ok((groups.div_ceil(waves.max(1)) as u32, 0, 0));
    }
    if !tile.persistent {
        let (slab, smem) = stream_slab_within(route.tt, k, over.smem_budget.unwrap_or(STREAM_SMEM));
        return Ok((groups as u32, slab, smem));
    }
    // The whole row in one slab where it fits 48 KB, or the opt-in budget while at least
    // STREAM_MIN_WARPS warps per SM still fit beside it (measured: K = 17408 at one column,
    // 78 KB, 2 blocks of 4 warps per SM, ran 33% slower than in 48 KB slabs; K = 5120 at
    // four columns, 92 KB, 2 blocks of 8 warps, 25% faster). Else 48 KB slabs.
    let whole = route.tt as usize * (k / 32) * STAGED_CHUNK_BYTES;
    let optin = (gpu.props().smem_per_block_optin as usize).min(STREAM_SMEM_PERSISTENT);
    let per_sm = gpu.props().smem_per_sm as usize;
    let warps_beside = per_sm / (whole + 1024).max(1) * tile.warps as usize;
    let fits = whole <= STREAM_SMEM || (whole <= optin && warps_beside >= STREAM_MIN_WARPS);
    let budget = over
        .smem_budget
        .unwrap_or(if fits { whole } else { STREAM_SMEM });
    let (slab, smem) = stream_slab_within(route.tt, k, budget);
    gpu.grant_shared_memory(f, smem, entry)?;
    let sms = gpu.props().sm_count as usize;
    if groups <= sms && over.max_grid.is_none() {
        // One group per block fits in one wave whatever the occupancy: no query.
        return Ok((groups as u32, slab, smem));
    }
    let resident = blocks_per_sm(gpu, f, entry, tile.warps * 32, smem)? as usize
        * gpu.props().sm_count as usize;
    let resident = over.max_grid.map_or(resident, |g| resident.min(g as usize));
    // Balanced: every block walks `waves` groups or one fewer.
    let waves = groups.div_ceil(resident.max(1));
    Ok((groups.div_ceil(waves.max(1)) as u32, slab, smem))
}

/// The ring kernel's geometry for one launch: (grid, K-slices, shared bytes), or `None`
/// where it does not take the shape (K not a multiple of 1024, planes not 16-byte aligned,
/// or more shared memory than the device grants a block).
#[allow(clippy::too_many_arguments)]
fn ring_geometry(
    gpu: &Gpu,
    f: &CudaFunction,
    route: &ExactRoute,
    entry: &str,
    tile: RingTile,
    w: &DeviceWeight,
    (q, s): (u64, u64),
    over: Override,
) -> Result<Option<(u32, i32, usize)>, GpuError> {
    let (n, k) = (w.layout.n, w.layout.k);
    // Settled once per loaded function and shape: the attribute calls and occupancy
    // queries below cost the host microseconds per launch otherwise.
    type Key = (usize, usize, usize, bool, Option<u32>, Option<u32>);
    type Cache = HashMap<Key, Option<(u32, i32, usize)>>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let aligned = q.is_multiple_of(16) && s.is_multiple_of(16);
    let key: Key = (
        f.cu_function() as usize,
        n,
        k,
        aligned,
        over.max_grid,
        over.ks,
    );
    if let Some(&hit) = CACHE
        .lock()
        .expect("ring geometry cache")
        .get_or_insert_with(HashMap::new)
        .get(&key)
    {
        return Ok(hit);
    }
    let got = ring_geometry_uncached(gpu, f, route, entry, tile, w, aligned, over)?;
    CACHE
        .lock()
        .expect("ring geometry cache")
        .get_or_insert_with(HashMap::new)
        .insert(key, got);
    Ok(got)
}

#[allow(clippy::too_many_arguments)]
fn ring_geometry_uncached(
    gpu: &Gpu,
    f: &CudaFunction,
    route: &ExactRoute,
    entry: &str,
    tile: RingTile,
    w: &DeviceWeight,
    aligned: bool,
    over: Override,
) -> Result<Option<(u32, i32, usize)>, GpuError> {
    let (n, k) = (w.layout.n, w.layout.k);
    let tt = route.tt as usize;
    if !k.is_multiple_of(1024)
        || !aligned
        || !w.layout.q_row_bytes.is_multiple_of(16)
        || !w.layout.s_row_bytes.is_multiple_of(16)
    {
        return Ok(None);
    }
    let rounds = k / 1024;
    let base = tt * (k / 32) * STAGED_CHUNK_BYTES
        + (tile.warps * tile.stages) as usize * ring_stage_bytes(route.format, tile.rows);
    let optin = gpu.props().smem_per_block_optin as usize;
    if base > optin {
        return Ok(None);
    }
    let sms = gpu.props().sm_count as usize;
    let threads = tile.warps * 32;
    // About as many blocks as fit at once; the slices' sums (rows per block x slices) add
    // to the shared memory, so settle the grid in a few rounds. The function's opt-in
    // only ever grows (`Gpu::grant_shared_memory`): geometry cached for another shape must
    // stay launchable.
    let grant = |bytes: usize| gpu.grant_shared_memory(f, bytes, entry);
    // Rows of the slice sums a block of `grid` keeps: its share of the N rows, or with the
    // SwiGLU epilogue both rows of its share of the N / 2 pairs.
    let swiglu = route.epilogue == Epilogue::Swiglu;
    let rows_of = |grid: usize| {
        if swiglu {
            2 * (n / 2).div_ceil(grid)
        } else {
            n.div_ceil(grid)
        }
    };
    grant(base)?;
    let mut grid = blocks_per_sm(gpu, f, entry, threads, base)? as usize * sms;
    let mut smem = base;
    let mut ks = 1;
    for _ in 0..3 {
        if let Some(g) = over.max_grid {
            grid = grid.min(g as usize);
        }
        if let Some(cap) = ring_blocks_per_sm_cap() {
            grid = grid.min(cap * sms);
        }
        ks = over.ks.unwrap_or_else(|| ring_ks(n, rounds, grid, tile)) as usize;
        let sums = if ks > 1 {
            rows_of(grid) * ks * tt * 4
        } else {
            0
        };
        if base + sums > optin {
            // More blocks (in waves) rather than more rows per block.
            let rows_fit = (optin - base) / (ks * tt * 4);
            grid = n.div_ceil(rows_fit.max(1));
            smem = base + rows_of(grid) * ks * tt * 4;
            break;
        }
        smem = base + sums;
        grant(smem)?;
        let fit = blocks_per_sm(gpu, f, entry, threads, smem)? as usize * sms;
        if fit >= grid {
            break;
        }
        grid = fit;
    }
    grant(smem)?;
    Ok(Some((grid.max(1) as u32, ks as i32, smem)))
}

#[allow(clippy::too_many_arguments)]
pub(super) fn launch_inner(
    gpu: &Gpu,
    route: &ExactRoute,
    w: &DeviceWeight,
    x: u64,
    prologue: &Prologue,
    residual: Option<u64>,
    y: u64,
    t: usize,
    over: Override,
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
    if matches!(route.kernel, ExactKernel::Ring(_)) {
        assert!(
            ring_supports(w.format),
            "{} is not a ring-kernel format",
            w.format.name
        );
    }
    if matches!(route.kernel, ExactKernel::Mma(_)) {
        assert!(
            mma_supports(w.format),
            "{} is not an mma-kernel format",
            w.format.name
        );
    }
    assert_eq!(
        residual.is_some(),
        route.epilogue == Epilogue::Residual,
        "a residual launch needs the residual and only it"
    );
    assert_eq!(
        prologue.kind(),
        route.prologue,
        "the launch's prologue differs from the route's"
    );
    let swiglu = route.epilogue == Epilogue::Swiglu;
    let conv = over.conv;
    assert_eq!(
        conv.is_some(),
        route.epilogue == Epilogue::Conv,
        "a conv launch needs the conv window and only it"
    );
    if conv.is_some() {
        assert!(
            matches!(route.kernel, ExactKernel::Mma(MmaTile { mt: 0, .. }))
                && t <= route.tt as usize,
            "the conv epilogue runs on the mma register kernel, the lanes in one launch"
        );
    }
    if swiglu {
        let takes = match route.kernel {
            ExactKernel::Ring(_) => ring_swiglu_takes(w),
            _ => swiglu_epilogue_takes(w),
        };
        assert!(
            route.has_swiglu_epilogue() && takes,
            "the SwiGLU epilogue runs on the mma register kernel or an even ring split, an even N and 16-byte rows"
        );
    }
    // The sums of a SwiGLU launch must be whole before the silu: several K-ranges only
    // where the kernel's last block adds them (the second launch has no silu). The conv
    // epilogue keeps its K-ranges either way: the second launch applies it too (bench/gdn
    // run 52: forced to one K-range, the 27B's in-projection made its 8-lane step 866 us
    // longer on an H100).
    let fused = over
        .split_sum
        .map_or_else(super::linear_mma_exact::splitk_fused_enabled, |second| {
            !second
        });
    let over = if swiglu && !fused {
        Override {
            k_ranges: Some(1),
            ..over
        }
    } else {
        over
    };
    // Outputs a column: N, or I = N / 2 with the SwiGLU epilogue.
    let y_row = if swiglu { n / 2 } else { n };
    if t == 0 || n == 0 {
        return Ok(());
    }
    if let Some(tile) = stream_substitute(route, n, k, over.exact_tile) {
        let other = ExactRoute {
            kernel: ExactKernel::Stream(tile),
            ..route.clone()
        };
        return launch_inner(gpu, &other, w, x, prologue, residual, y, t, over);
    }
    if matches!(route.kernel, ExactKernel::Mma(tile) if tile.cluster > 1)
        && gpu.props().compute_capability.0 < 9
    {
        // Clusters are sm_90's: their kernels do not exist for this GPU.
        let (other, over) = without_clusters(route, over);
        return launch_inner(gpu, &other, w, x, prologue, residual, y, t, over);
    }
    let entry = route.spec();
    // Stream and ring routes launch programmatically (their specs opt in; gemv.cu does not).
    let kernel = gpu.kernel(&entry)?;
    let f = kernel.function();
    let (q, s) = w.planes(gpu);
    let ring = match route.kernel {
        ExactKernel::Ring(tile) => {
            match ring_geometry(gpu, f, route, &entry.entry, tile, w, (q, s), over)? {
                Some(g) => Some(g),
                None if swiglu => {
                    return Err(GpuError::Driver {
                        what: format!("launching {}", entry.entry),
                        err: "the ring kernel does not take this gate_up (K, alignment or \
                              shared memory) and no other split has its SwiGLU epilogue"
                            .into(),
                    })
                }
                None if route.prologue == PrologueKind::GatedNorm => {
                    return Err(GpuError::Driver {
                        what: format!("launching {}", entry.entry),
                        err: "the ring kernel does not take this weight (K, alignment or \
                              shared memory) and no other kernel has the gated norm prologue"
                            .into(),
                    })
                }
                None => {
                    let fallback = route.stream_fallback();
                    return launch_inner(gpu, &fallback, w, x, prologue, residual, y, t, over);
                }
            }
        }
        ExactKernel::Mma(_)
            if !(q.is_multiple_of(16) && w.layout.q_row_bytes.is_multiple_of(16)) =>
        {
            // The mma kernel's 16-byte weight loads need 16-byte aligned rows.
            let fallback = ExactRoute {
                tt: route.tt.min(8),
                ..route.stream_fallback()
            };
            return launch_inner(gpu, &fallback, w, x, prologue, residual, y, t, over);
        }
        _ => None,
    };
    let (stride_q, stride_s) = (w.layout.q_row_bytes as i64, w.layout.s_row_bytes as i64);
    let (ni, ki) = (n as i32, k as i32);
    let r0 = residual.unwrap_or(y);
    // K-ranges of a split-K mma launch (1: none), where their sums go, and the counters of
    // its m-ranges where its last blocks add them (0: the second launch adds).
    let (mut kr, mut part, mut counters) = (1usize, 0u64, 0u64);
    let (grid, slab, smem) = match route.kernel {
        ExactKernel::Gemv => (n.div_ceil(route.rows_per_block()) as u32, 0, 0),
        ExactKernel::Stream(tile) => {
            stream_geometry(gpu, f, route, &entry.entry, tile, (n, k), over)?
        }
        ExactKernel::Ring(_) => {
            let (grid, ks, smem) = ring.expect("ring geometry");
            (grid, ks as usize, smem)
        }
        ExactKernel::Mma(tile) => {
            if let Some(tile) =
                super::linear_mma_exact::mma_substitute(route, n, k).filter(|_| !over.exact_tile)
            {
                let other = ExactRoute {
                    kernel: ExactKernel::Mma(tile),
                    ..route.clone()
                };
                return launch_inner(gpu, &other, w, x, prologue, residual, y, t, over);
            }
            let (p, scratch) =
                super::linear_mma_exact::geometry(gpu, f, route, &entry.entry, tile, (n, k), over)?;
            if !p.clusters_fit {
                // A plan clusters cannot run (several slabs a K-range, or not one whole
                // cluster resident).
                let (other, over) = without_clusters(route, over);
                return launch_inner(gpu, &other, w, x, prologue, residual, y, t, over);
            }
            if tile.mt > 0 && !p.one_slab(k / w.format.group) {
                // The ring kernel stages its whole K-range: without room for that (no scratch
                // for K-ranges' sums, e.g. a first use inside a graph capture) the register
                // kernel runs the launch.
                let other = ExactRoute {
                    kernel: ExactKernel::Mma(
                        super::linear_mma_exact::mma_tile(route.tt).rounding(tile.bf16),
                    ),
                    ..route.clone()
                };
                return launch_inner(gpu, &other, w, x, prologue, residual, y, t, over);
            }
            if p.kr > 1 {
                (kr, part) = (p.kr, scratch);
                // One counter a m-range (grid / kr of them; at most the resident blocks).
                let mranges = p.grid as usize / p.kr;
                if fused && mranges <= Gpu::SPLITK_COUNTERS {
                    counters = gpu.splitk_counters()?.unwrap_or(0);
                } else if swiglu {
                    let one = Override {
                        k_ranges: Some(1),
                        ..over
                    };
                    return launch_inner(gpu, route, w, x, prologue, residual, y, t, one);
                }
            }
            (p.grid, p.slab, p.smem)
        }
    };
    let slab = slab as i32;
    let (pw, eps) = match *prologue {
        Prologue::RmsNorm { weight, eps, .. } | Prologue::GatedNorm { weight, eps, .. } => {
            (weight, eps)
        }
        _ => (0u64, 0f32),
    };
    // The gated norm's z, in the two arguments where gemv.cu takes a second pair of weight
    // planes (the other kernels get the weights' again and do not read them).
    let gate = match *prologue {
        Prologue::GatedNorm { z, z_ld, .. } => {
            assert!(
                z.is_multiple_of(16) && z_ld.is_multiple_of(4),
                "the gated norm's z needs 16-byte aligned rows"
            );
            Some((z, z_ld))
        }
        _ => None,
    };
    // Row stride of x in elements.
    let x_row = if route.prologue == PrologueKind::Swiglu {
        2 * k
    } else {
        k
    };
    let cfg = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (route.threads(), 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let step = route.tt as usize;
    let mut col = 0;
    while col < t {
        let cols = step.min(t - col) as i32;
        let (xc, rc, yc) = (
            x + (col * x_row * 4) as u64,
            r0 + (col * n * 4) as u64,
            y + (col * y_row * 4) as u64,
        );
        let (x2, x2_ld) = match gate {
            Some((z, z_ld)) => (z + (col * z_ld * 4) as u64, z_ld as i64),
            None => (q, s as i64),
        };
        let mut b = gpu.launch(&kernel);
        b.arg(&q)
            .arg(&s)
            .arg(&x2)
            .arg(&x2_ld)
            .arg(&stride_q)
            .arg(&stride_s)
            .arg(&xc)
            .arg(&rc)
            .arg(&yc)
            .arg(&cols)
            .arg(&ni)
            .arg(&ki);
        if route.kernel != ExactKernel::Gemv {
            b.arg(&slab).arg(&pw).arg(&eps);
        }
        let kr_i = kr as i32;
        if let ExactKernel::Mma(tile) = route.kernel {
            b.arg(&kr_i).arg(&part).arg(&counters);
            // The plan's grid is a whole number of clusters (`clusters_fit` above).
            b.cluster(tile.cluster);
        }
        let conv_args = conv.map(ConvWindow::kernel_args);
        if let Some((cw, cs, ch)) = &conv_args {
            b.arg(cw).arg(cs).arg(ch);
        }
        // SAFETY: matches the signature of gemv.cu, and of gemv_stream.cu with its slab,
        // (gemv_mma.cu the same, its groups per slab and shared memory from
        // linear_mma_exact::geometry, whole groups checked by `supports`, then its
        // K-ranges and the scratch for their sums, kr x cols x N floats by the plan, and
        // the scratch's zeroed counters, one a m-range, or 0),
        // norm weight and eps arguments (its shared memory sized by stream_slab_within and
        // granted above past 48 KB), and of gemv_ring.cu (the same, `slab` read as its
        // K-slices, shared memory sized and granted by ring_geometry, K a multiple of 1024
        // and 16-byte aligned planes checked there); the kernels guard rows past N and columns past `cols`;
        // the caller sizes x (2K per row for SwiGLU), y, r to t rows and the norm weight to K.
        unsafe { b.launch(cfg) }
            .map_err(|e| GpuError::driver(format!("launching {}", entry.entry), e))?;
        if kr > 1 && counters == 0 {
            let len = cols as usize * n;
            let rms = matches!(route.prologue, PrologueKind::RmsNorm(_)).then_some((k, eps));
            super::linear_mma_exact::launch_sum(
                gpu,
                route.epilogue,
                rms,
                part,
                rc,
                yc,
                (len, n),
                kr,
                conv,
            )?;
        }
        col += step;
    }
    Ok(())
}

/// `route`'s mma tile without clusters, launched as named (`exact_tile`: not swapped back
/// into clusters by `mma_substitute`).
fn without_clusters(route: &ExactRoute, over: Override) -> (ExactRoute, Override) {
    let ExactKernel::Mma(tile) = route.kernel else {
        unreachable!("only mma tiles run in clusters")
    };
    let route = ExactRoute {
        kernel: ExactKernel::Mma(tile.clustered(1)),
        ..route.clone()
    };
    let over = Override {
        exact_tile: true,
        ..over
    };
    (route, over)
}

/// Whether the SwiGLU epilogue takes the stacked gate_up `w`: an mma-kernel format, an
/// even number of rows (gate, then up) and 16-byte aligned rows (the mma kernel's loads;
/// the stream kernel that runs unaligned rows has no such epilogue).
pub fn swiglu_epilogue_takes(w: &DeviceWeight) -> bool {
    mma_supports(w.format)
        && w.layout.n.is_multiple_of(2)
        && w.layout.q_row_bytes.is_multiple_of(16)
        && w.layout.q_offset.is_multiple_of(16)
}

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
                let mma = mma_supports(f) && t >= MMA_MIN_T;
                let ring = ring_supports(f) && t <= 4 && !mma;
                assert_eq!(
                    matches!(r.kernel, ExactKernel::Ring(_)),
                    ring,
                    "{name} T={t}"
                );
                assert_eq!(matches!(r.kernel, ExactKernel::Mma(_)), mma, "{name} T={t}");
                assert!(
                    ring || mma || matches!(r.kernel, ExactKernel::Stream(_)),
                    "{name} T={t}"
                );
                if !mma {
                    assert!(r.tt as usize >= t.min(8) && r.tt <= 8);
                }
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
    fn ring_blocks_cap_takes_a_positive_count_only() {
        assert_eq!(parse_blocks_cap("1"), Some(1));
        assert_eq!(parse_blocks_cap(" 2 "), Some(2));
        for off in ["", "0", "-1", "one", "1.5"] {
            assert_eq!(parse_blocks_cap(off), None, "{off:?}");
        }
    }

    #[test]
    fn ring_slices_follow_the_shape() {
        let t = ring_tile(4, 1);
        // 17408x5120 on 132 blocks: five slices of one round; the head: one slice.
        assert_eq!(ring_ks(17408, 5, 132, t), 5);
        assert_eq!(ring_ks(248320, 5, 132, t), 1);
        for (n, rounds) in [(5120, 17), (4096, 14), (1000, 2), (7, 1)] {
            let ks = ring_ks(n, rounds, 132, t) as usize;
            assert!(
                ks >= 1 && ks <= rounds && ks <= t.warps as usize,
                "{n} {rounds}: {ks}"
            );
        }
        let q4 = crate::formats::format("q4_g64").unwrap();
        let q8 = crate::formats::format("q8_g32").unwrap();
        assert!(ring_supports(q4) && ring_supports(q8));
        assert_eq!(ring_stage_bytes(q4, 4), 4 * (512 + 32));
        assert_eq!(ring_stage_bytes(q8, 4), 4 * (1024 + 64));
    }

    #[test]
    fn ring_kernel_reads_only_weights_before_the_wait() {
        // PDL (common/pdl.cuh): before the wait a kernel may only read what no kernel
        // writes. The ring kernel's first stages (weights and scales) come before it, the
        // activations after (bench/kernels/README.md v10 tried issuing more there).
        // Compiled for sm_80 and sm_90.
        let jit = crate::jit::test_jit();
        let q4 = crate::formats::format("q4_g64").unwrap();
        let q8 = crate::formats::format("q8_g32").unwrap();
        let a = ExactRoute::choose(q4, 1, Epilogue::None);
        let b = ExactRoute::choose_with(q8, 1, Epilogue::Residual, PrologueKind::Swiglu).unwrap();
        for r in [a, b] {
            assert!(matches!(r.kernel, ExactKernel::Ring(_)));
            let spec = r.spec();
            let src = jit.render(&spec).unwrap();
            let at = |needle: &str| {
                src.find(needle)
                    .unwrap_or_else(|| panic!("{}: no {needle}", spec.entry))
            };
            // The kernel's call is the last mention (common/pdl.cuh, included first, names it).
            let wait = src.rfind("NINFER_PDL_WAIT();").expect("a PDL wait");
            assert!(at("for (int i = 0; i < STAGES - 1; ++i) issue();") < wait);
            assert!(wait < at("load_x8(x + "));
            for arch in [crate::jit::Arch::new(8, 0), crate::jit::Arch::new(9, 0)] {
                jit.cubin(&spec, arch)
                    .unwrap_or_else(|e| panic!("{} {arch:?}: {e}", spec.entry));
            }
        }
    }

    #[test]
    fn ring_swiglu_epilogue_on_even_splits_only() {
        // The epilogue pairs a gate row with its up row in one pass's slots: every split of
        // an even number of rows carries it with both RMSNorm prologues (the gate_up
        // projection's), and it compiles; no odd split is offered one.
        let jit = crate::jit::test_jit();
        let all = ring_routes();
        let epi: Vec<&ExactRoute> = all
            .iter()
            .filter(|r| r.epilogue == Epilogue::Swiglu)
            .collect();
        assert!(!epi.is_empty());
        for r in &epi {
            let ExactKernel::Ring(tile) = r.kernel else {
                unreachable!()
            };
            assert!(tile.rows.is_multiple_of(2) && r.has_swiglu_epilogue());
            assert!(matches!(r.prologue, PrologueKind::RmsNorm(_)));
        }
        let q4 = crate::formats::format("q4_g64").unwrap();
        let chosen = ExactRoute::choose_with(
            q4,
            1,
            Epilogue::None,
            PrologueKind::RmsNorm(NormWeight::ZeroCentred),
        )
        .unwrap();
        let with = ExactRoute {
            epilogue: Epilogue::Swiglu,
            ..chosen
        };
        assert!(
            epi.contains(&&with),
            "the default T = 1 split has the epilogue"
        );
        jit.cubin(&with.spec(), crate::jit::Arch::new(9, 0))
            .unwrap_or_else(|e| panic!("{}: {e}", with.spec().entry));
        let odd = ExactRoute {
            kernel: ExactKernel::Ring(RingTile {
                rows: 1,
                warps: 16,
                stages: 2,
            }),
            ..with
        };
        assert!(!odd.has_swiglu_epilogue());
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
    fn prologues_choose_instantiated_stream_routes_only() {
        let specs = instantiations();
        let has = |e: &str| specs.iter().any(|s| s.entry == e);
        let q4 = crate::formats::format("q4_g64").unwrap();
        for t in [1, 2, 3, 4, 5, 8, 9] {
            for (kind, epilogue) in PrologueKind::FUSED {
                let r = ExactRoute::choose_with(q4, t, epilogue, kind).expect("fused pair");
                assert_eq!(r.prologue, kind);
                let entry = r.spec().entry;
                assert!(has(&entry), "{entry} is chosen but not registered");
                assert!(entry.ends_with(kind.param()), "{entry}");
                // Every split at one column carries the prologues too (the tuner's candidates).
                for &tile in stream_tiles(1) {
                    let r1 = ExactRoute {
                        kernel: ExactKernel::Stream(tile),
                        tt: 1,
                        ..r.clone()
                    };
                    assert!(has(&r1.spec().entry), "{}", r1.spec().entry);
                }
            }
            // Pairs that are not instantiated, and formats without the stream kernel.
            let zc = PrologueKind::RmsNorm(NormWeight::ZeroCentred);
            assert!(ExactRoute::choose_with(q4, t, Epilogue::Residual, zc).is_none());
            assert!(ExactRoute::choose_with(q4, t, Epilogue::None, PrologueKind::Swiglu).is_none());
            let bf16 = crate::formats::format("bf16").unwrap();
            assert!(ExactRoute::choose_with(bf16, t, Epilogue::None, zc).is_none());
            assert!(ExactRoute::choose_with(bf16, t, Epilogue::None, PrologueKind::None).is_some());
        }
        let none = ExactRoute::choose(q4, 1, Epilogue::None);
        assert_eq!(none.prologue, PrologueKind::None);
        assert!(!none.spec().entry.contains("rms") && !none.spec().entry.contains("swiglu"));
    }

    #[test]
    fn the_gated_norm_is_a_ring_route_with_the_residual_only() {
        let q4 = crate::formats::format("q4_g64").unwrap();
        let gn = PrologueKind::GatedNorm;
        let all = all_routes();
        for t in [1, 2, 3, 4] {
            let r = ExactRoute::choose_with(q4, t, Epilogue::Residual, gn).unwrap();
            assert!(matches!(r.kernel, ExactKernel::Ring(_)), "T = {t}: {r:?}");
            assert!(r.spec().entry.ends_with("_gatednorm"), "{}", r.spec().entry);
            assert_eq!(r.spec().params["prologue"], "gatednorm");
            assert!(
                all.contains(&r),
                "T = {t}: the chosen route is instantiated"
            );
        }
        // Past the ring kernel's columns, with another epilogue, or a format the ring kernel
        // does not take: no route (the caller runs the norm and the projection apart).
        assert!(ExactRoute::choose_with(q4, 8, Epilogue::Residual, gn).is_none());
        assert!(ExactRoute::choose_with(q4, 1, Epilogue::None, gn).is_none());
        let bf16 = crate::formats::format("bf16").unwrap();
        assert!(ExactRoute::choose_with(bf16, 1, Epilogue::Residual, gn).is_none());
        // No stream or mma route has it.
        assert!(all.iter().filter(|r| r.prologue == gn).all(|r| matches!(
            r.kernel,
            ExactKernel::Ring(_)
        ) && r.epilogue
            == Epilogue::Residual));
        assert_eq!(PrologueKind::GatedNorm.param(), "gatednorm");
    }

    #[test]
    fn persistent_slabs_take_the_whole_row_within_the_opt_in_budget() {
        // 17408 at one column fits 112 KB in one slab; at two it does not.
        let whole = 17408 / 32 * 144;
        assert!(whole <= STREAM_SMEM_PERSISTENT);
        assert_eq!(stream_slab_within(1, 17408, whole), (544, whole));
        assert!(2 * whole > STREAM_SMEM_PERSISTENT);
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

    #[test]
    fn small_k_shapes_run_a_direct_or_one_row_split() {
        // (The rule as unset NINFER_STREAM_SMALL gives it.)
        if std::env::var("NINFER_STREAM_SMALL").is_ok() || std::env::var("NINFER_STREAM_T1").is_ok()
        {
            return;
        }
        let specs = instantiations();
        let has = |r: &ExactRoute| specs.iter().any(|s| s.entry == r.spec().entry);
        let q4 = crate::formats::format("q4_g64").unwrap();
        let q6 = crate::formats::format("q6_g64").unwrap();
        let rms = PrologueKind::RmsNorm(NormWeight::Plain);
        let direct =
            |rows| ExactKernel::Stream(DIRECT_T1.into_iter().find(|t| t.rows == rows).unwrap());
        // SmolLM2's decode linears: qkv, o, gate_up, down, head (the ring falls back first).
        for (f, (n, k), pro, epi, want) in [
            (q4, (960, 576), rms, Epilogue::None, direct(4)),
            (
                q4,
                (576, 576),
                PrologueKind::None,
                Epilogue::Residual,
                direct(1),
            ),
            (q4, (3072, 576), rms, Epilogue::None, direct(4)),
            (
                q4,
                (576, 1536),
                PrologueKind::Swiglu,
                Epilogue::Residual,
                ExactKernel::Stream(SMALL_K_T1),
            ),
            (q4, (49152, 576), rms, Epilogue::None, direct(4)),
            (q6, (960, 576), rms, Epilogue::None, direct(4)),
            (
                q6,
                (960, 576),
                PrologueKind::None,
                Epilogue::None,
                direct(1),
            ),
            (
                q6,
                (2048, 512),
                PrologueKind::None,
                Epilogue::None,
                direct(4),
            ),
            (
                q6,
                (576, 1536),
                PrologueKind::None,
                Epilogue::None,
                ExactKernel::Stream(SMALL_K_T1),
            ),
        ] {
            let chosen = ExactRoute::choose_with(f, 1, epi, pro).unwrap();
            let r = launched_route(&chosen, n, k);
            assert_eq!(r.kernel, want, "{} {n}x{k}", f.name);
            assert!(has(&r), "{} is launched but not registered", r.spec().entry);
            assert_eq!((r.prologue, r.epilogue), (pro, epi));
        }
        // K past 2048, more columns, other splits: unchanged.
        let ring = ExactRoute::choose(q4, 1, Epilogue::None);
        assert_eq!(launched_route(&ring, 17408, 5120), ring);
        let q6r = ExactRoute::choose(q6, 1, Epilogue::None);
        assert_eq!(launched_route(&q6r, 5120, 17408), q6r);
        let two = ExactRoute::choose(q6, 2, Epilogue::None);
        assert_eq!(launched_route(&two, 576, 576), two);
        let other = ExactRoute {
            kernel: ExactKernel::Stream(stream_tiles(1)[1]),
            ..q6r.clone()
        };
        assert_eq!(launched_route(&other, 576, 576), other);
    }

    #[test]
    fn direct_splits_take_one_column_of_at_most_one_chunk_per_lane() {
        let d = DIRECT_T1[0];
        assert!(d.direct && d.unroll == 1);
        assert!(direct_fits(d, 1, 32) && direct_fits(d, 1, 576) && direct_fits(d, 1, 1024));
        assert!(!direct_fits(d, 1, 1056) && !direct_fits(d, 1, 0) && !direct_fits(d, 2, 576));
        let q4 = crate::formats::format("q4_g64").unwrap();
        for &tile in &DIRECT_T1 {
            let r = ExactRoute {
                kernel: ExactKernel::Stream(tile),
                ..ExactRoute::choose(q4, 1, Epilogue::None)
            };
            let spec = r.spec();
            assert!(spec.entry.ends_with("_u1_d"), "{}", spec.entry);
            assert!(spec.params_line().contains("direct=true"));
        }
        // The block-staged splits keep their params (no `direct`).
        let r = ExactRoute {
            kernel: ExactKernel::Stream(stream_tile(1)),
            ..ExactRoute::choose(q4, 1, Epilogue::None)
        };
        assert!(!r.spec().params_line().contains("direct"));
    }

    /// The small-K splits (direct and one-row) of a 4- and a 6-bit format, every epilogue
    /// and prologue, render and compile for sm_90 through NVRTC, keep their arrays in
    /// registers (no local-memory frame), and wait on their predecessor (PDL) once.
    #[test]
    fn small_k_splits_compile_for_sm_90() {
        let jit = crate::jit::test_jit();
        let small: Vec<ExactKernel> = DIRECT_T1
            .iter()
            .chain([&SMALL_K_T1])
            .map(|&t| ExactKernel::Stream(t))
            .collect();
        let specs: Vec<KernelSpec> = all_routes()
            .iter()
            .filter(|r| ["q4_g64", "q6_g64"].contains(&r.format.name.as_str()))
            .filter(|r| small.contains(&r.kernel))
            .map(ExactRoute::spec)
            .collect();
        assert_eq!(specs.len(), 2 * 5 * 5);
        for spec in specs {
            let ptx = crate::jit::test_sm90_ptx(&jit, &spec);
            assert!(!ptx.contains(".local"), "{} uses local memory", spec.entry);
            assert!(ptx.contains("griddepcontrol.wait"), "{}", spec.entry);
        }
    }
}
