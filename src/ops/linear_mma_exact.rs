//! The exact route's tensor-core GEMV (`templates/linear/gemv_mma.cu`): 4- and 8-bit
//! symmetric integer weights, f32 activations split into three bf16 (hi + mid + lo, exact)
//! so that `mma.sync` gives f32-accurate products with f32 accumulation, and the weights are
//! read and converted once for all T columns (up to 32 per launch). The CUDA-core kernels
//! (ring, stream) spend T FMAs per weight; this one spends 3T/8 columns of one mma per 16
//! rows x 16 k, so T = 8 costs about what T = 1 does once the weights stream.
//!
//! [`choose`] takes it from [`MMA_MIN_T`] columns up (`NINFER_EXACT_MMA=0` switches it
//! off), with the prologues at the column tiles [`MMA_PROLOGUE_TT`] (T = 3, 4 with a
//! prologue keep the ring kernel); everything else stays with the ring and stream kernels
//! (`super::linear_exact`).
//!
//! At [`MMA_RING_TT`] the route is `templates/linear/gemv_mma_ring.cu`, the same contract
//! with the weights streamed through a per-warp cp.async ring ([`mma_ring_tile`]), on
//! launches of at most [`MMA_RING_MAX_WEIGHTS`]; larger ones run the register kernel
//! ([`mma_substitute`]). `NINFER_MMA_RING=0` takes the register kernel everywhere, `all`
//! the ring kernel everywhere.
//!
//! The same kernels with [`MmaTile::bf16`] round each activation to bf16 instead of
//! splitting it (one column a token, a third of the mma work and staging): not exact, the
//! engine's bf16 mode at [`MMA_BF16_TT`] (bench/kernels v56: 17408x5120 at T = 8 26.8 us
//! against 36.3 exact; +0.009% perplexity on SmolLM2 q4_g64, v58). They are qualified at
//! the bf16 allowance and are never the exact route's tuning candidates. Their register
//! tile at T = 8, 16, 32 launches in thread block clusters of [`cluster_size`] blocks that
//! stage their shared K-range of activations together ([`mma_substitute`]).

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use std::collections::HashMap;
use std::sync::Mutex;

use super::linear::Epilogue;
use super::linear_exact::{
    blocks_per_sm, launch, median_batched_us, Case, ExactKernel, ExactRoute, Override,
    PrologueKind, BATCH,
};
use super::weight::{random_bf16, rotated_bf16_weights, rotated_weights};
use crate::bench::{BenchCtx, BenchRecord};
use crate::formats::{Format, FormatKind, Layout};
use crate::gpu::{dptr, CudaFunction, CudaSlice, Gpu, GpuError, LaunchConfig};
use crate::jit::KernelSpec;

/// The mma kernel's split: `warps` per block; `mt` 0 for `gemv_mma.cu` (each warp loads
/// `unroll` groups of weights into registers before any is used), or the m-tiles a warp
/// multiplies at once in `gemv_mma_ring.cu` (weights through a cp.async ring). With `bf16`
/// the activations are rounded to bf16, one column a token instead of three exact pieces
/// (the templates' `parts = 1`): the bf16 mode's precision trade, a third of the mma work
/// and of the staged activations. With `cluster` > 1 (the register kernel only) the blocks
/// run in thread block clusters of that many, which stage their shared K-range of
/// activations together (`gemv_mma.cu`'s header): see [`cluster_size`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MmaTile {
    pub warps: u32,
    pub unroll: u32,
    pub mt: u32,
    pub bf16: bool,
    pub cluster: u32,
}

impl MmaTile {
    /// This split with the activations rounded to bf16 where `bf16` holds.
    pub fn rounding(self, bf16: bool) -> MmaTile {
        MmaTile { bf16, ..self }
    }

    /// This split in clusters of `cluster` blocks (1: none).
    pub fn clustered(self, cluster: u32) -> MmaTile {
        MmaTile { cluster, ..self }
    }

    /// Split columns a token: three exact bf16 pieces, or one rounded.
    pub fn parts(self) -> u32 {
        if self.bf16 {
            1
        } else {
            3
        }
    }
}

/// Column tiles of the mma kernel (T = 1, 2, 4 for the benchmark's comparison; the route
/// takes 8, 16 and 32).
pub const MMA_TT: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Column tiles instantiated with activations rounded to bf16 too (the bf16 mode's, from
/// [`MMA_MIN_T`] columns: see `engine::cuda`).
pub const MMA_BF16_TT: [u32; 4] = [4, 8, 16, 32];
/// The most columns one launch takes (more run as launches of this many).
pub const MMA_MAX_T: usize = MMA_TT[MMA_TT.len() - 1] as usize;
/// Column tiles that carry the fused prologues.
pub const MMA_PROLOGUE_TT: [u32; 3] = [8, 16, 32];
/// The fewest columns for which [`choose`] takes the mma kernel: measured faster than the
/// ring/stream route from T = 4 on every 27B shape (17408x5120 35.5 vs 43.1 us, 5120x17408
/// 45.7 vs 101.6, 4096x14336 32.4 vs 44.6; T = 3 runs the same T = 4 launch), not at T = 2
/// on 17408x5120 (30.5 vs 22.7 us): bench/kernels/v7/run2.
pub const MMA_MIN_T: usize = 3;
/// Shared memory a block may take for its staged activations: most of the SM's, as its
/// registers allow one block per SM anyway (16 warps at up to 128 registers; at T = 32, 8
/// warps at ~170: NVRTC 13.0, sm_90, no spills).
const MMA_SMEM: usize = 200 * 1024;

/// Whether the mma kernel takes this format: 4- or 8-bit symmetric integers with f16
/// scales and 32-byte groups (q4_g64, q8_g32: the kernel loads two groups of a row per
/// 16-byte load of each lane of a quad).
pub fn mma_supports(format: &Format) -> bool {
    format.kind == FormatKind::SymInt
        && (format.bits == 4 || format.bits == 8)
        && format.group * format.bits as usize == 256
        && format.scale == crate::formats::registry::ScaleType::F16
}

/// Whether [`choose`] takes the mma kernel: yes unless the environment sets
/// `NINFER_EXACT_MMA=0` (an A/B switch for whole-model benchmarks).
pub fn mma_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    super::linear_exact::switch_on(&ON, "NINFER_EXACT_MMA")
}

/// Whether [`plan`] may split K: yes unless the environment sets `NINFER_MMA_SPLIT_K=0`
/// (an A/B switch: one K-range, as before split K).
pub fn split_k_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    super::linear_exact::switch_on(&ON, "NINFER_MMA_SPLIT_K")
}

/// Whether a split-K launch adds its K-ranges' sums itself (the last block of each m-range,
/// `templates/linear/mma_exact.cuh`'s `splitk_finish`; the SwiGLU epilogue then takes split
/// plans): only where the environment sets `NINFER_SPLITK_FUSED=1`. Off by default, so the
/// second launch (`splitk_sum.cu`) adds them and the SwiGLU epilogue runs one K-range: the
/// fused form qualifies but made the synthetic 27B's 8-lane bf16 step 485 us slower on the
/// H200 (8,559 -> 9,044 us, `bench/kernels` v87; the finish code raises every T = 8 mma
/// kernel's register spills). Kept for A/B runs while that is fixed.
pub fn splitk_fused_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    super::linear_exact::switch_opt_in(&ON, "NINFER_SPLITK_FUSED")
}

/// The split per column tile: 16 warps (one block per SM) up to 16 columns; at 32 columns
/// the 48 accumulators per lane need the registers of 8-warp blocks.
pub fn mma_tile(tt: u32) -> MmaTile {
    MmaTile {
        warps: if tt >= 32 { 8 } else { 16 },
        unroll: 8,
        mt: 0,
        bf16: false,
        cluster: 1,
    }
}

/// Column tiles whose register tile with activations rounded to bf16 runs in clusters
/// ([`cluster_size`], through [`mma_substitute`]).
pub const CLUSTER_TT: [u32; 3] = [8, 16, 32];

/// The cluster size of the register kernel's bf16 tiles at [`CLUSTER_TT`], from
/// `NINFER_MMA_CLUSTER` (read once): `1` no clusters, `2` or `4`; unset, [`CLUSTER_DEFAULT`].
/// A launch whose plan a cluster cannot run (several slabs a K-range, or too few clusters
/// resident) runs the same tile without clusters. Only the bf16 tiles: the exact ones
/// (three split columns a token: three times the fragments each block stores into every
/// block of its cluster) lost with clusters on the H200 (bench/kernels v88: 17408x5120 at
/// T = 8 37.2 us without, 38.0 with 2, 41.1 with 4; the bf16 tile 26.8, 25.6, 26.6).
pub fn cluster_size() -> u32 {
    static SIZE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| parse_cluster(std::env::var("NINFER_MMA_CLUSTER").ok().as_deref()))
}

/// The default cluster size: 2, measured on the H200 (bench/kernels v88: x20 at T = 8, 2.5-5%
/// off the bf16 tiles with 2, 4 slower than 2 everywhere; the synthetic 27B q4_g64 bf16 at 8
/// lanes 8,489.7 -> 8,354.4 us a step).
pub const CLUSTER_DEFAULT: u32 = 2;

/// The value of `NINFER_MMA_CLUSTER`: 1, 2 or 4; anything else (or unset) the default.
fn parse_cluster(v: Option<&str>) -> u32 {
    match v.map(str::trim) {
        Some("1") => 1,
        Some("2") => 2,
        Some("4") => 4,
        _ => CLUSTER_DEFAULT,
    }
}

/// Column tiles with the ring kernel (`gemv_mma_ring.cu`), which [`choose`] takes there.
pub const MMA_RING_TT: [u32; 1] = [8];

/// The ring kernel's split: 12 warps, two m-tiles a warp unit (bench/kernels v46: 12 warps
/// 22.5 us, 16 warps 30 us at the T = 8 shape; the pair of m-tiles shares each B fragment).
pub fn mma_ring_tile() -> MmaTile {
    MmaTile {
        warps: 12,
        unroll: 0,
        mt: 2,
        bf16: false,
        cluster: 1,
    }
}

/// Where the ring kernel runs, from `NINFER_MMA_RING` (read once): unset, the route at
/// [`MMA_RING_TT`] on launches up to [`MMA_RING_MAX_WEIGHTS`]; `0`, nowhere (the register
/// kernel: an A/B switch for whole-model benchmarks); `all`, on every shape (for measuring
/// it past the rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RingMode {
    Off,
    SmallShapes,
    Everywhere,
}

fn ring_mode() -> RingMode {
    static MODE: std::sync::OnceLock<RingMode> = std::sync::OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("NINFER_MMA_RING").as_deref() {
        Ok("0") => RingMode::Off,
        Ok("all") => RingMode::Everywhere,
        _ => RingMode::SmallShapes,
    })
}

/// Whether [`choose`] takes the ring kernel at [`MMA_RING_TT`] (see `RingMode`).
pub fn mma_ring_enabled() -> bool {
    ring_mode() != RingMode::Off
}

/// The split [`choose`] runs at tile `tt`.
pub fn chosen_tile(tt: u32) -> MmaTile {
    if MMA_RING_TT.contains(&tt) && mma_ring_enabled() {
        mma_ring_tile()
    } else {
        mma_tile(tt)
    }
}

/// The most weights (n x k) a ring-kernel launch takes; larger shapes run the register
/// kernel at the same tile. Measured on the H200 (bench/kernels v48, T = 8, x20): the ring
/// kernel made synthetic SmolLM2's 8-lane step 8-11% shorter (1,244-1,246 against
/// 1,350-1,388 us; every linear there is under 1M weights), and lost on four of the five
/// 27B-sized launches (17408x5120 38.2 against 36.3 us, 4096x14336 28.2 / 26.3, gate_up
/// 34816x5120 72.9 / 69.4, in_proj 16480x5120 38.6 / 36.8; won 5120x17408, 36.9 / 40.6).
pub const MMA_RING_MAX_WEIGHTS: usize = 4 << 20;

/// The tile a launch of the mma route `route` on an `[n, k]` weight runs instead of its own:
/// the register tile for a ring tile on a shape past [`MMA_RING_MAX_WEIGHTS`] (unless
/// `NINFER_MMA_RING=all`), and a bf16 register tile at [`CLUSTER_TT`] in clusters of
/// [`cluster_size`]; `None` where it runs its own.
pub fn mma_substitute(route: &ExactRoute, n: usize, k: usize) -> Option<MmaTile> {
    let ExactKernel::Mma(tile) = route.kernel else {
        return None;
    };
    let mut run = tile;
    if run.mt > 0 && n * k > MMA_RING_MAX_WEIGHTS && ring_mode() != RingMode::Everywhere {
        run = mma_tile(route.tt).rounding(tile.bf16);
    }
    if run.mt == 0 && run.bf16 && run.cluster == 1 && CLUSTER_TT.contains(&route.tt) {
        run = run.clustered(cluster_size());
    }
    (run != tile).then_some(run)
}

/// Bytes of a ring kernel's weight stages (two a warp, 16 mt rows x 128 bytes each).
fn ring_bytes(tile: MmaTile) -> usize {
    if tile.mt == 0 {
        0
    } else {
        tile.warps as usize * 2 * 16 * tile.mt as usize * 128
    }
}

/// The column tile for T columns: the smallest of [`MMA_TT`] that holds them (32 past 32:
/// launches of 32).
pub fn mma_tt(t: usize) -> u32 {
    MMA_TT
        .iter()
        .copied()
        .find(|&tt| tt as usize >= t)
        .unwrap_or(32)
}

/// The mma route for `t` columns, where it is the choice: the format is taken, T is at
/// least [`MMA_MIN_T`], the kernel is enabled and the prologue instantiated at the tile.
pub fn choose(
    format: &'static Format,
    t: usize,
    epilogue: Epilogue,
    prologue: PrologueKind,
) -> Option<ExactRoute> {
    if !mma_supports(format) || t < MMA_MIN_T || !mma_enabled() {
        return None;
    }
    let tt = mma_tt(t);
    if prologue != PrologueKind::None && !MMA_PROLOGUE_TT.contains(&tt) {
        return None;
    }
    Some(ExactRoute {
        format,
        tt,
        epilogue,
        kernel: ExactKernel::Mma(chosen_tile(tt)),
        prologue,
    })
}

/// The gate_up projection's form of `route` (an mma route with an RMSNorm prologue and no
/// epilogue, for a stacked gate_up `[n, k]`): the same launch with the SwiGLU epilogue,
/// writing `silu(gate) * up` (`[T, n / 2]`) so that the down projection needs no SwiGLU
/// prologue. On the register tile the launch runs (a ring tile only where
/// [`mma_substitute`] swaps it for the register one); `None` for other routes. The launch
/// keeps its plan's K-ranges where the kernel adds them ([`splitk_fused_enabled`]: the
/// sums are whole before the silu), else runs one K-range.
pub fn with_swiglu_epilogue(route: &ExactRoute, n: usize, k: usize) -> Option<ExactRoute> {
    let ExactKernel::Mma(tile) = route.kernel else {
        return None;
    };
    let tile = if tile.mt > 0 {
        mma_substitute(route, n, k)?
    } else {
        tile
    };
    let takes = matches!(route.prologue, PrologueKind::RmsNorm(_))
        && route.epilogue == Epilogue::None
        && MMA_PROLOGUE_TT.contains(&route.tt)
        && n.is_multiple_of(2);
    takes.then(|| ExactRoute {
        epilogue: Epilogue::Swiglu,
        kernel: ExactKernel::Mma(tile),
        ..route.clone()
    })
}

/// The conv window of the GDN in-projection's conv epilogue ([`Epilogue::Conv`]): every
/// model's (the epilogue's kernels are built for it).
pub const CONV_KC: usize = 4;
/// The column tile of the conv epilogue's instantiations: the lanes (at most 8) of one
/// launch.
pub const CONV_TT: u32 = 8;

/// The GDN in-projection's form of `route` (an mma route with an RMSNorm prologue and no
/// epilogue): the same launch with the causal conv + SiLU on the first outputs of each
/// column ([`Epilogue::Conv`]), so that the GDN step needs no conv launch. On the register
/// tile, as [`with_swiglu_epilogue`]; `None` for other routes. The launch keeps its
/// K-ranges: the conv needs the whole sums, so the kernel's last blocks or the second launch
/// (`splitk_sum.cu`, with the conv too) apply it. Unlike the SwiGLU form, a ring
/// tile below [`MMA_RING_MAX_WEIGHTS`] also gives way to the register tile: a launch saved
/// is worth more than the ring's lead there (2-5% of a few-us launch).
pub fn with_conv_epilogue(route: &ExactRoute, n: usize, k: usize) -> Option<ExactRoute> {
    let ExactKernel::Mma(tile) = route.kernel else {
        return None;
    };
    let tile = if tile.mt > 0 {
        mma_substitute(route, n, k).unwrap_or(mma_tile(route.tt).rounding(tile.bf16))
    } else {
        tile
    };
    let takes = matches!(route.prologue, PrologueKind::RmsNorm(_))
        && route.epilogue == Epilogue::None
        && route.tt == CONV_TT
        && tile.mt == 0;
    takes.then(|| ExactRoute {
        epilogue: Epilogue::Conv,
        kernel: ExactKernel::Mma(tile),
        ..route.clone()
    })
}

/// Whether the engine takes [`with_conv_epilogue`] for a GDN in-projection at lanes (with
/// the gates-in split step): yes unless the environment sets `NINFER_GDN_CONV_EPILOGUE=0`
/// (then the step's first launch runs the conv). History, all on an H100 (synthetic 27B,
/// 8 lanes): the epilogue first lost 419 us a step (bench/gdn runs 52-53); runs 55-56 put
/// that in the split-K sum's late window load and cured it (exact mode, -65 us); in bf16
/// mode the in-projection runs at one K-range and the GEMV's own conv (`write_pass`) stored
/// each window while its load was in flight (+801 us, runs 57-59). With the two-phase
/// `write_pass` (run 60) it gains in both modes: -122 us a step exact (13,158 against
/// 13,280), -86 us bf16 (9,571 against 9,657). Not measured on an H200.
pub fn conv_epilogue_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    super::linear_exact::switch_on(&ON, "NINFER_GDN_CONV_EPILOGUE")
}

/// Whether the engine takes [`with_swiglu_epilogue`] for gate_up: yes unless the environment
/// sets `NINFER_SWIGLU_EPILOGUE=0` (an A/B switch: SwiGLU in the down projection's staging).
pub fn swiglu_epilogue_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    super::linear_exact::switch_on(&ON, "NINFER_SWIGLU_EPILOGUE")
}

/// The prologues instantiated with the SwiGLU epilogue (the gate_up projection's norms).
const SWIGLU_EPILOGUE_PROLOGUES: [PrologueKind; 2] = [
    PrologueKind::RmsNorm(crate::ops::rmsnorm::NormWeight::Plain),
    PrologueKind::RmsNorm(crate::ops::rmsnorm::NormWeight::ZeroCentred),
];

/// Every instantiation: each format it takes, each column tile, both epilogues; the fused
/// prologues ([`PrologueKind::FUSED`]) at [`MMA_PROLOGUE_TT`], and there on the register
/// tiles the RMSNorm prologues with the SwiGLU epilogue ([`with_swiglu_epilogue`]).
pub fn routes() -> Vec<ExactRoute> {
    let mut v = Vec::new();
    for format in crate::formats::registry()
        .iter()
        .filter(|f| mma_supports(f))
    {
        for tt in MMA_TT {
            let mut kinds = vec![
                (PrologueKind::None, Epilogue::None),
                (PrologueKind::None, Epilogue::Residual),
            ];
            if MMA_PROLOGUE_TT.contains(&tt) {
                kinds.extend(PrologueKind::FUSED);
            }
            let mut tiles = vec![mma_tile(tt)];
            if MMA_RING_TT.contains(&tt) {
                tiles.push(mma_ring_tile());
            }
            if MMA_BF16_TT.contains(&tt) {
                // The bf16 mode's tiles: the same splits with rounded activations.
                let rounded: Vec<MmaTile> = tiles.iter().map(|t| t.rounding(true)).collect();
                tiles.extend(rounded);
                if CLUSTER_TT.contains(&tt) && cluster_size() > 1 {
                    // The register tile in clusters, which mma_substitute launches.
                    tiles.push(mma_tile(tt).rounding(true).clustered(cluster_size()));
                }
            }
            for tile in tiles {
                let mut kinds = kinds.clone();
                if MMA_PROLOGUE_TT.contains(&tt) && tile.mt == 0 {
                    kinds.extend(SWIGLU_EPILOGUE_PROLOGUES.map(|p| (p, Epilogue::Swiglu)));
                }
                if tt == CONV_TT && tile.mt == 0 {
                    // The GDN in-projection at its lanes (8 at most: one column tile).
                    kinds.extend(SWIGLU_EPILOGUE_PROLOGUES.map(|p| (p, Epilogue::Conv)));
                }
                for &(prologue, epilogue) in &kinds {
                    v.push(ExactRoute {
                        format,
                        tt,
                        epilogue,
                        kernel: ExactKernel::Mma(tile),
                        prologue,
                    });
                }
            }
        }
    }
    v
}

/// 8-column n-tiles of a launch of `tt` columns (`parts` split columns per token).
fn n_tiles(tt: u32, parts: u32) -> usize {
    (parts as usize * tt as usize).div_ceil(8)
}

/// Shared bytes of one staged group (every n-tile's fragments) and of the rest: the final
/// reduction (16 rows a warp, 16 mt with the ring kernel) and the ring kernel's stages.
fn smem_parts(format: &Format, tt: u32, tile: MmaTile, rms: bool) -> (usize, usize) {
    let nt = n_tiles(tt, tile.parts());
    // With RMSNorm, each staging unit's sum of squares: tt columns x 4 units a group.
    let squares = if rms { tt as usize * 4 * 4 } else { 0 };
    let rows = 16 * tile.mt.max(1) as usize;
    (
        nt * format.group * 16 + squares,
        tile.warps as usize * rows * (8 * nt + 1) * 4 + ring_bytes(tile),
    )
}

/// How one launch covers the shape: `grid` blocks, `kr` K-ranges (the grid is m-ranges x
/// kr; kr > 1 leaves the K-ranges' sums in the scratch, added by the kernel's last block of
/// each m-range or by `launch_sum`), `slab` groups
/// staged at a time and `smem` dynamic shared bytes (one slab, then the slices' sums).
/// `clusters_fit` is whether a tile with clusters can run it (one slab a K-range, m-ranges
/// a whole number of clusters); always true without clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmaPlan {
    pub grid: u32,
    pub kr: usize,
    pub slab: usize,
    pub smem: usize,
    pub clusters_fit: bool,
}

/// What a launch may take: `resident` blocks at once, `smem` shared bytes a block (the
/// slab's budget), `scratch` bytes for the K-ranges' sums (0: none to be had).
#[derive(Debug, Clone, Copy)]
pub struct Room {
    pub resident: usize,
    pub smem: usize,
    pub scratch: usize,
}

/// The plan for `(n, k)` at `tt` columns within `room`.
///
/// K is cut into as many K-ranges as its staged activations need slabs, so that every
/// block stages its K-range once and streams all its m-tiles from it (in passes of up to
/// one m-tile a warp): one wave of `resident` blocks, m-ranges x K-ranges. Without room
/// for the sums (or with `kr` forced to 1) a K of several slabs keeps one K-range, and then
/// at most one m-tile a warp (more blocks instead), as every pass would stage every slab
/// again. `force_kr` (qualification) replaces the choice, within what fits.
///
/// The ring kernel (`tile.mt` > 0) stages its whole K-range at once: a plan whose slab is
/// smaller than its K-range ([`MmaPlan::one_slab`] false) is not one it can run. A tile in
/// clusters (`resident` then counts the blocks of the clusters that fit at once) stages its
/// K-range once too, and takes the m-ranges down to a whole number of clusters.
pub fn plan(
    format: &Format,
    tt: u32,
    tile: MmaTile,
    rms: bool,
    (n, k): (usize, usize),
    room: Room,
    force_kr: Option<u32>,
) -> MmaPlan {
    let Room {
        resident,
        smem: budget,
        scratch,
    } = room;
    let warps = tile.warps;
    let (per_group, red) = smem_parts(format, tt, tile, rms);
    let groups = (k / format.group).max(1);
    // m-tiles, or the ring kernel's chunks of mt m-tiles.
    let mtiles = n.div_ceil(16 * tile.mt.max(1) as usize).max(1);
    let resident = resident.max(1);
    let slab_max = (budget.saturating_sub(red) / per_group).max(1);
    let want = force_kr.map_or_else(
        || {
            groups
                .div_ceil(slab_max)
                .max(few_mtiles_k_ranges(tt, tile, mtiles, resident, n * k))
        },
        |f| f as usize,
    );
    // The K-ranges' sums, and with RMSNorm their sums of squares.
    let fits = |kr: usize| kr * tt as usize * (n + 1) * 4 <= scratch;
    let kr = want.clamp(1, groups.min(resident));
    let kr = if kr > 1 && fits(kr) { kr } else { 1 };
    let range = groups.div_ceil(kr);
    let slabs = range.div_ceil(slab_max);
    let slab = range.div_ceil(slabs);
    let cluster = tile.cluster.max(1) as usize;
    let (grid, clusters_fit) = if kr == 1 && slabs > 1 {
        let grid = resident.max(mtiles.div_ceil(warps as usize)).min(mtiles);
        (grid, cluster == 1)
    } else {
        let mr = (resident / kr).clamp(1, mtiles);
        let whole = mr / cluster * cluster;
        let fit = cluster == 1 || (slabs == 1 && whole > 0);
        (if cluster > 1 && fit { whole } else { mr } * kr, fit)
    };
    MmaPlan {
        grid: grid as u32,
        kr,
        slab,
        smem: slab * per_group + red,
        clusters_fit,
    }
}

/// At least this many K-ranges for a register-kernel launch at T = 8 with few m-tiles a
/// block (at most 3 a resident block: the 27B's 5120-row outputs at 132 blocks) and at least
/// 4M weights: each block then stages a third of the activations and its warps take longer
/// runs of K. Measured at T = 8 only (`bench/kernels` v62, x20, us, plan then 3 K-ranges:
/// 5120x6144 bf16 15.65 -> 13.42, exact 18.13 -> 16.92; 5120x17408 bf16 28.72 -> 27.33,
/// exact 39.92 -> 39.53; the sums' launch included), so other T keep the slab rule.
fn few_mtiles_k_ranges(
    tt: u32,
    tile: MmaTile,
    mtiles: usize,
    resident: usize,
    weights: usize,
) -> usize {
    let few = mtiles <= 3 * resident;
    if tt == 8 && tile.mt == 0 && few && weights >= 1 << 22 {
        3
    } else {
        1
    }
}

impl MmaPlan {
    /// Whether every K-range of `groups` fits one slab (what the ring kernel needs).
    pub fn one_slab(&self, groups: usize) -> bool {
        self.slab >= groups.div_ceil(self.kr)
    }
}

/// The launch plan, settled once per loaded function and shape (the occupancy query and
/// attribute call cost microseconds), and the device's scratch (0 where there is none, see
/// [`Gpu::scratch`]), where a plan with K-ranges leaves their sums.
pub(super) fn geometry(
    gpu: &Gpu,
    f: &CudaFunction,
    route: &ExactRoute,
    entry: &str,
    tile: MmaTile,
    (n, k): (usize, usize),
    over: Override,
) -> Result<(MmaPlan, u64), GpuError> {
    type Key = (
        usize,
        usize,
        usize,
        Option<usize>,
        Option<u32>,
        Option<u32>,
        bool,
    );
    type Cache = HashMap<Key, MmaPlan>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let part = gpu.scratch()?.unwrap_or(0);
    let scratch = if part == 0 { 0 } else { Gpu::SCRATCH_BYTES };
    let key: Key = (
        f.cu_function() as usize,
        n,
        k,
        over.smem_budget,
        over.max_grid,
        over.k_ranges,
        scratch > 0,
    );
    if let Some(&hit) = CACHE
        .lock()
        .expect("mma geometry cache")
        .get_or_insert_with(HashMap::new)
        .get(&key)
    {
        return Ok((hit, part));
    }
    let optin = gpu.props().smem_per_block_optin as usize;
    // The ring kernel's stages come out of the same budget: it takes all a block may have.
    let budget = over
        .smem_budget
        .unwrap_or(if tile.mt > 0 { optin } else { MMA_SMEM })
        .min(optin);
    let threads = tile.warps * 32;
    // Residency at the largest shared size the plan can take.
    let alone = Room {
        resident: 1,
        smem: budget,
        scratch: 0,
    };
    let rms = matches!(route.prologue, PrologueKind::RmsNorm(_));
    let most = plan(route.format, route.tt, tile, rms, (n, k), alone, Some(1)).smem;
    gpu.grant_shared_memory(f, most, entry)?;
    let resident = if tile.cluster > 1 {
        let c = gpu
            .max_active_clusters(f, tile.cluster, threads, most as u32)
            .map_err(|e| GpuError::driver(format!("cluster occupancy of {entry}"), e))?;
        c as usize * tile.cluster as usize
    } else {
        blocks_per_sm(gpu, f, entry, threads, most)? as usize * gpu.props().sm_count as usize
    };
    let resident = over.max_grid.map_or(resident, |g| resident.min(g as usize));
    let force = over.k_ranges.or_else(|| (!split_k_enabled()).then_some(1));
    let room = Room {
        resident,
        smem: budget,
        scratch,
    };
    let got = plan(route.format, route.tt, tile, rms, (n, k), room, force);
    CACHE
        .lock()
        .expect("mma geometry cache")
        .get_or_insert_with(HashMap::new)
        .insert(key, got);
    Ok((got, part))
}

/// The kernel that adds a split-K launch's K-range sums (and the residual) into y; with
/// `rms`, scaled by each column's 1 / rms from the K-ranges' sums of squares; with the conv
/// epilogue, the GDN conv applied to the whole sums (the in-projection keeps its K-ranges).
pub fn sum_spec(epilogue: Epilogue, rms: bool) -> KernelSpec {
    let e = match epilogue {
        Epilogue::None => "plain",
        Epilogue::Residual => "res",
        Epilogue::Conv => "conv",
        Epilogue::Swiglu => panic!("the second launch has no SwiGLU epilogue"),
    };
    let r = if rms { "_rms" } else { "" };
    let spec = KernelSpec::new(
        "linear_exact",
        "linear/splitk_sum.cu",
        format!("linear_exact_splitk_sum_{e}{r}"),
    )
    .param("epilogue", epilogue)
    .param("rms", rms)
    .programmatic();
    // Only the conv form carries its kernel size (the others' specs stay as they were).
    match epilogue {
        Epilogue::Conv => spec.param("kc", CONV_KC),
        _ => spec,
    }
}

/// `y[i] = sum over kr K-ranges of part[r][i]` (times the column's 1 / rms where `rms`
/// holds K and eps) `(+ residual[i])`, `i < len = T x n` outputs of `n` a column; with the
/// conv epilogue (`conv`: its weights, the lanes' windows and its channels), output c of
/// column t through lane t's conv where c is one of its channels.
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_sum(
    gpu: &Gpu,
    epilogue: Epilogue,
    rms: Option<(usize, f32)>,
    part: u64,
    residual: u64,
    y: u64,
    (len, n): (usize, usize),
    kr: usize,
    conv: Option<super::linear_exact::ConvWindow>,
) -> Result<(), GpuError> {
    assert_eq!(
        conv.is_some(),
        epilogue == Epilogue::Conv,
        "the conv sum needs the conv window and only it"
    );
    let spec = sum_spec(epilogue, rms.is_some());
    let kernel = gpu.kernel(&spec)?;
    let blocks = len
        .div_ceil(256)
        .min(4 * gpu.props().sm_count as usize)
        .max(1) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let (k, eps) = rms.unwrap_or((0, 0.0));
    let (len_i, kr_i, n_i, k_i) = (len as i64, kr as i32, n as i32, k as i32);
    let mut b = gpu.launch(&kernel);
    b.arg(&part)
        .arg(&residual)
        .arg(&y)
        .arg(&len_i)
        .arg(&kr_i)
        .arg(&n_i)
        .arg(&k_i)
        .arg(&eps);
    let conv_args = conv.map(super::linear_exact::ConvWindow::kernel_args);
    if let Some((cw, cs, ch)) = &conv_args {
        b.arg(cw).arg(cs).arg(ch);
    }
    // SAFETY: matches splitk_sum.cu's signature; part holds kr x len floats written by the
    // GEMV just before (then kr x T sums of squares with rms), residual (read only with the
    // residual epilogue) and y len floats; the conv window's weights hold channels x
    // CONV_KC floats and its state (len / n) x channels x (CONV_KC - 1), channels <= n
    // (launch_conv checks both).
    unsafe { b.launch(cfg) }.map_err(|e| GpuError::driver(format!("launching {}", spec.entry), e))
}

/// The mma routes' qualification cases. Without a prologue: the 27B's 17408x5120,
/// 5120x17408, 5120->10240, 6144->5120 and 14336->4096 (epilogue none) at T = the tile
/// and at an odd T inside it; SmolLM2's 576 -> 1536, 1536 -> 576 and 576 -> 960 (and back), with T past the
/// tile (host tiling, a partial last launch); N = 144 with K = 64 (one group, a partial
/// m-tile); N = 1000 with K = 2048 in slabs of 16 KB (several) on a grid of 5 blocks (many
/// m-tiles a block, fewer slices), split in 5 K-ranges and in one. Split K is what the plan
/// takes wherever K needs more than one slab (T = 8: K = 5120 and up), the K-ranges' sums
/// added by the last block of each m-range ([`splitk_fused_enabled`]); 17408x5120 also
/// runs as one K-range and with the sums added by `splitk_sum.cu`, 5120x6144 twice in a
/// row (the counters left zero, the same bits), 1536 -> 576 in three K-ranges. RMSNorm:
/// 17408x5120 (also by `splitk_sum.cu`), 6144 -> 5120 twice, SmolLM2's 576 -> 1536 (also
/// in three K-ranges), the odd case; SwiGLU (with the residual): 5120x17408, 1536 -> 576,
/// the odd case. The SwiGLU epilogue: stacked gate_up shapes, split K included.
pub(super) fn cases(route: &ExactRoute) -> Vec<Case> {
    let tt = route.tt as usize;
    let odd = if tt <= 2 { tt } else { tt / 2 + 1 };
    let plain = Override::default();
    let forced = Override {
        smem_budget: Some(16 * 1024),
        max_grid: Some(5),
        ks: None,
        exact_tile: false,
        k_ranges: None,
        split_sum: None,
        twice: false,
        conv: None,
    };
    // One K-range of several slabs: the path without the scratch.
    let one_range = Override {
        k_ranges: Some(1),
        ..plain
    };
    let forced_one = Override {
        k_ranges: Some(1),
        ..forced
    };
    // Three K-ranges and the same launched twice in a row (the split-K counters reset, the
    // same bits), both added by the kernel's last blocks (whatever the process default);
    // and the plan's K-ranges added by the second launch (splitk_sum.cu) and by the last
    // blocks.
    let fused = Override {
        split_sum: Some(false),
        ..plain
    };
    let three = Override {
        k_ranges: Some(3),
        ..fused
    };
    let twice = Override {
        twice: true,
        ..fused
    };
    let split_sum = Override {
        split_sum: Some(true),
        ..plain
    };
    let mut v: Vec<Case> = vec![(odd, 1000, 2048, forced_one)];
    if route.epilogue == Epilogue::Conv {
        // The GDN in-projections at their lanes (each launch moves the windows on: never
        // twice): the 27B's 16480 x 5120 (the plan's K-ranges added by the process
        // default, by the last blocks and by the second launch, and one K-range), the
        // 35B-A3B's 12352 x 2048, and SmolLM2-sized 1000 x 2048 in three K-ranges (by the
        // last blocks and by the second launch), in 16 KB slabs on a grid of 5 blocks, and
        // at 5 lanes.
        v.push((tt, 16480, 5120, plain));
        v.push((tt, 16480, 5120, fused));
        v.push((tt, 16480, 5120, split_sum));
        v.push((tt, 16480, 5120, one_range));
        v.push((odd, 12352, 2048, plain));
        v.push((tt, 1000, 2048, three));
        v.push((
            tt,
            1000,
            2048,
            Override {
                k_ranges: Some(3),
                ..split_sum
            },
        ));
        v.push((odd, 1000, 2048, forced));
        return v;
    }
    if route.epilogue == Epilogue::Swiglu {
        // Stacked gate_up shapes: the 27B's 2 x 17408 x 5120 (the plan's K-ranges, added by
        // the last block of each m-range before the silu, and one K-range) and SmolLM2's
        // 2 x 1536 x 576 (one slab: one K-range, and three forced, also twice); the first
        // case has I = 500, a partial pair of m-tiles, several slabs and many pairs a block,
        // then the same in K-ranges on a grid of 5 blocks (one m-range of every pair).
        v.push((tt, 34816, 5120, plain));
        v.push((tt, 34816, 5120, fused));
        v.push((tt, 34816, 5120, one_range));
        v.push((odd, 3072, 576, plain));
        v.push((odd, 3072, 576, three));
        v.push((
            tt,
            3072,
            576,
            Override {
                twice: true,
                ..three
            },
        ));
        v.push((odd, 1000, 2048, forced));
        return v;
    }
    match route.prologue {
        PrologueKind::None => {
            v.push((tt, 17408, 5120, plain));
            v.push((tt, 17408, 5120, one_range));
            v.push((tt, 17408, 5120, split_sum));
            v.push((tt, 17408, 5120, fused));
            v.push((tt, 5120, 6144, twice));
            v.push((odd, 576, 1536, three));
            v.push((odd, 5120, 17408, plain));
            v.push((odd, 10240, 5120, plain));
            v.push((tt, 5120, 6144, plain));
            if route.epilogue == Epilogue::None {
                // Every row is checked at N <= 4096: the host reference is the cost.
                v.push((odd, 4096, 14336, plain));
            }
            v.push((2 * tt + 1, 1536, 576, plain));
            v.push((odd, 576, 1536, plain));
            v.push((tt, 960, 576, plain));
            v.push((odd, 576, 960, plain));
            v.push((tt, 144, 64, plain));
            v.push((odd, 1000, 2048, forced));
        }
        PrologueKind::RmsNorm(_) => {
            v.push((tt, 17408, 5120, plain));
            v.push((tt, 17408, 5120, split_sum));
            v.push((tt, 17408, 5120, fused));
            v.push((odd, 5120, 6144, twice));
            v.push((odd, 1536, 576, plain));
            v.push((odd, 1536, 576, three));
            v.push((odd, 1000, 2048, forced));
        }
        PrologueKind::Swiglu => {
            v.push((tt, 5120, 17408, plain));
            v.push((odd, 576, 1536, plain));
            v.push((odd, 1000, 2048, forced));
        }
        // A ring route's only prologue: no mma route has it.
        PrologueKind::GatedNorm => {}
    }
    if matches!(route.kernel, ExactKernel::Mma(MmaTile { mt: 1.., .. })) {
        // The ring kernel runs as named on every shape (no swap to the register kernel past
        // MMA_RING_MAX_WEIGHTS), and only in its own plans: the forced budgets and the
        // single K-range of several slabs are plans it cannot run (the launch would hand
        // them to the register kernel, which its own routes qualify).
        v.retain(|&(_, _, _, o)| o.smem_budget.is_none() && o.k_ranges.is_none());
        for case in &mut v {
            case.3.exact_tile = true;
        }
    }
    v
}

/// The old choice (ring or stream) for `t` columns: what the mma kernel replaces.
fn without_mma(format: &'static Format, t: usize) -> ExactRoute {
    let tt = (t.clamp(1, 8) as u32).next_power_of_two();
    let kernel = if super::linear_exact::ring_supports(format)
        && super::linear_exact::RING_TT.contains(&tt)
    {
        ExactKernel::Ring(super::linear_exact::ring_tile(format.bits, tt))
    } else {
        ExactKernel::Stream(super::linear_exact::stream_tile(tt))
    };
    ExactRoute {
        format,
        tt,
        epilogue: Epilogue::None,
        kernel,
        prologue: PrologueKind::None,
    }
}

/// The mma kernel (exact, and with bf16-rounded activations at [`MMA_BF16_TT`]) against
/// the ring/stream route it replaces and cuBLAS bf16, at T = 1, 2, 4, 8, 16, 32, 20 launches back to back per sample (as a captured decode step runs them):
/// q4_g64 at 17408x5120, 5120x17408 and 14336->4096, q8_g32 at 17408x5120.
pub fn bench(ctx: &BenchCtx, filter: Option<&str>) -> Result<Vec<BenchRecord>, GpuError> {
    let gpu = ctx.gpu;
    let mut records = Vec::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let blas = crate::gpu::Blas::new(gpu)?;
    let q4 = crate::formats::format("q4_g64").expect("registered");
    let q8 = crate::formats::format("q8_g32").expect("registered");
    let plan: [(&'static Format, (usize, usize), &[usize]); 4] = [
        (q4, (17408, 5120), &[1, 2, 4, 8, 16, 32]),
        (q4, (5120, 17408), &[1, 2, 4, 8, 16, 32]),
        (q4, (4096, 14336), &[1, 2, 4, 8, 16, 32]),
        (q8, (17408, 5120), &[1, 8, 32]),
    ];
    for (fmt, (n, k), ts) in plan {
        let what = format!("linear_exact_mma {} x{BATCH}", fmt.name);
        if !crate::bench::filter_may_keep(filter, &[&what]) {
            continue;
        }
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
            let peer_us = median_batched_us(gpu, 15, |i| {
                blas.gemm_bf16(gpu, &wdev[i % wsets], &xb, &mut yb, (t, n, k))
            })?;
            let (xp, yp) = (dptr(gpu, &x), dptr(gpu, &y));
            let exact = plain_mma_route(fmt, t);
            let mut routes = vec![exact.clone(), without_mma(fmt, t)];
            if let Some(r) = rounded(&exact) {
                routes.push(r);
            }
            for route in routes {
                let us = median_batched_us(gpu, 15, |i| {
                    launch(gpu, &route, &weights[i % sets], xp, None, yp, t)
                })?;
                let ran = super::linear_exact::launched_route(&route, n, k)
                    .spec()
                    .entry;
                let mut rec = gemv_record(ctx, &what, ran, (t, n, k), &layout, us);
                rec.peer = Some("cuBLAS bf16 (cublasGemmEx)".into());
                rec.peer_median_us = Some(peer_us);
                rec.speedup_vs_peer = Some(peer_us / us);
                records.push(rec);
            }
        }
    }
    records.extend(bench_k_ranges(ctx, filter)?);
    records.extend(bench_step_launches(ctx, filter)?);
    Ok(records)
}

/// `route` with its activations rounded to bf16, where that tile is instantiated (an mma
/// route at [`MMA_BF16_TT`]); the bf16 mode's and the benches' one rule.
pub fn rounded(route: &ExactRoute) -> Option<ExactRoute> {
    match route.kernel {
        ExactKernel::Mma(tile) if MMA_BF16_TT.contains(&route.tt) => Some(ExactRoute {
            kernel: ExactKernel::Mma(tile.rounding(true)),
            ..route.clone()
        }),
        _ => None,
    }
}

/// The mma route for `t` columns with no prologue or epilogue (the benches' plain shape).
fn plain_mma_route(format: &'static Format, t: usize) -> ExactRoute {
    ExactRoute {
        format,
        tt: mma_tt(t),
        epilogue: Epilogue::None,
        kernel: ExactKernel::Mma(chosen_tile(mma_tt(t))),
        prologue: PrologueKind::None,
    }
}

/// A GEMV bench record of `label` at `t` x `[n, k]`: the weights, x and y as its bytes.
fn gemv_record(
    ctx: &BenchCtx,
    what: &str,
    label: impl Into<String>,
    (t, n, k): (usize, usize, usize),
    layout: &Layout,
    us: f64,
) -> BenchRecord {
    let bytes = (layout.total_bytes + t * k * 4 + t * n * 4) as f64;
    ctx.record(
        what.to_string(),
        label,
        format!("T={t} N={n} K={k}"),
        us,
        bytes,
        2.0 * (t * n * k) as f64,
    )
}

/// The K-ranges the k-ranges benches force after the plan's own choice.
const SWEPT_K_RANGES: [u32; 8] = [1, 2, 3, 4, 5, 6, 8, 10];

/// The four mma launches of a 27B layer at 8 lanes (T = 8, q4_g64), as the engine makes
/// them: gate_up 34816x5120 and in_proj 16480x5120 with RMSNorm(1 + w), down 5120x17408
/// with SwiGLU and the residual, out 5120x6144 with the residual; each exact and with its
/// activations rounded to bf16 (the bf16 mode's launch). The `step k-ranges` records time
/// the same launches with 1..10 K-ranges forced (the plan clamps them to what fits), so
/// that the plan's K-ranges are measured with the prologues' staging, not only plain.
fn bench_step_launches(ctx: &BenchCtx, filter: Option<&str>) -> Result<Vec<BenchRecord>, GpuError> {
    use super::linear_exact::{NormWeight, Prologue};
    let what = format!("linear_exact_mma step q4_g64 x{BATCH}");
    let sweep = format!("linear_exact_mma step k-ranges q4_g64 x{BATCH}");
    let mut records = Vec::new();
    let (plain, swept) = (
        crate::bench::filter_may_keep(filter, &[&what]),
        crate::bench::filter_may_keep(filter, &[&sweep]),
    );
    if !plain && !swept {
        return Ok(records);
    }
    let gpu = ctx.gpu;
    let mut rng = rand::rngs::StdRng::seed_from_u64(23);
    let q4 = crate::formats::format("q4_g64").expect("registered");
    let t = 8;
    let zc = PrologueKind::RmsNorm(NormWeight::ZeroCentred);
    // The step's four launches, then the MLP's pair as the bf16 mode runs it with gate_up's
    // SwiGLU epilogue ([`with_swiglu_epilogue`]): gate_up writing silu(g) * u, and down
    // reading it with no prologue.
    let cases = [
        ((34816, 5120), zc, Epilogue::None),
        ((16480, 5120), zc, Epilogue::None),
        ((5120, 17408), PrologueKind::Swiglu, Epilogue::Residual),
        ((5120, 6144), PrologueKind::None, Epilogue::Residual),
        ((34816, 5120), zc, Epilogue::Swiglu),
        ((5120, 17408), PrologueKind::None, Epilogue::Residual),
    ];
    for ((n, k), kind, epilogue) in cases {
        let (layout, weights) = rotated_weights(gpu, q4, (n, k), &mut rng)?;
        let sets = weights.len();
        let xs: Vec<f32> = (0..t * 2 * k).map(|_| rng.sample(StandardNormal)).collect();
        let nw: Vec<f32> = (0..k).map(|_| rng.sample(StandardNormal)).collect();
        let (x, nw) = (gpu.upload(&xs)?, gpu.upload(&nw)?);
        let y: CudaSlice<f32> = gpu.alloc_zeros(t * n)?;
        let r: CudaSlice<f32> = gpu.alloc_zeros(t * n)?;
        let (xp, yp, rp) = (dptr(gpu, &x), dptr(gpu, &y), dptr(gpu, &r));
        let prologue = Prologue::of_kind(kind, dptr(gpu, &nw), 1e-6, (0, 0));
        let res = (epilogue == Epilogue::Residual).then_some(rp);
        let swiglu = epilogue == Epilogue::Swiglu;
        let exact = if swiglu {
            let norm = choose(q4, t, Epilogue::None, kind).expect("an mma route at T = 8");
            with_swiglu_epilogue(&norm, n, k).expect("gate_up's SwiGLU epilogue")
        } else {
            choose(q4, t, epilogue, kind).expect("an mma route at T = 8")
        };
        let bf16 = rounded(&exact).expect("a bf16 tile at T = 8");
        for route in [exact, bf16] {
            let entry = super::linear_exact::launched_route(&route, n, k)
                .spec()
                .entry;
            // The SwiGLU epilogue takes K-ranges only where the kernel adds them (without,
            // the launch runs one whatever is forced: not swept).
            let forced = SWEPT_K_RANGES
                .map(Some)
                .into_iter()
                .filter(|_| swept && (!swiglu || splitk_fused_enabled()));
            for kr in std::iter::once(None).chain(forced) {
                let over = Override {
                    k_ranges: kr,
                    ..Override::default()
                };
                let us = median_batched_us(gpu, 15, |i| {
                    super::linear_exact::launch_inner(
                        gpu,
                        &route,
                        &weights[i % sets],
                        xp,
                        &prologue,
                        res,
                        yp,
                        t,
                        over,
                    )
                })?;
                let (name, label) = match kr {
                    None if plain => (&what, entry.clone()),
                    None => (&sweep, format!("{entry} k-ranges=plan")),
                    Some(r) => (&sweep, format!("{entry} k-ranges={r}")),
                };
                records.push(gemv_record(ctx, name, label, (t, n, k), &layout, us));
            }
        }
    }
    Ok(records)
}

/// The split K's K-ranges at T = 8 (q4_g64, the 27B's gate_up, up, down and out shapes),
/// exact and bf16-rounded tiles: the plan's own choice, then 1..10 K-ranges as forced (the
/// plan clamps them to what fits); so that the plan's rule "as many K-ranges as slabs" is
/// measured against its neighbours.
fn bench_k_ranges(ctx: &BenchCtx, filter: Option<&str>) -> Result<Vec<BenchRecord>, GpuError> {
    let what = format!("linear_exact_mma k-ranges q4_g64 x{BATCH}");
    let mut records = Vec::new();
    if !crate::bench::filter_may_keep(filter, &[&what]) {
        return Ok(records);
    }
    let gpu = ctx.gpu;
    let mut rng = rand::rngs::StdRng::seed_from_u64(19);
    let q4 = crate::formats::format("q4_g64").expect("registered");
    let t = 8;
    for (n, k) in [(34816, 5120), (17408, 5120), (5120, 17408), (5120, 6144)] {
        let (layout, weights) = rotated_weights(gpu, q4, (n, k), &mut rng)?;
        let sets = weights.len();
        let xs: Vec<f32> = (0..t * k).map(|_| rng.sample(StandardNormal)).collect();
        let x = gpu.upload(&xs)?;
        let y: CudaSlice<f32> = gpu.alloc_zeros(t * n)?;
        let (xp, yp) = (dptr(gpu, &x), dptr(gpu, &y));
        let plain = plain_mma_route(q4, t);
        let bf16 = rounded(&plain).expect("T = 8 has a bf16 tile");
        let forced = SWEPT_K_RANGES.map(Some);
        for (route, kr) in [plain, bf16]
            .iter()
            .flat_map(|r| std::iter::once(None).chain(forced).map(move |kr| (r, kr)))
        {
            let over = Override {
                k_ranges: kr,
                ..Override::default()
            };
            let us = median_batched_us(gpu, 15, |i| {
                super::linear_exact::launch_inner(
                    gpu,
                    route,
                    &weights[i % sets],
                    xp,
                    &super::linear_exact::Prologue::None,
                    None,
                    yp,
                    t,
                    over,
                )
            })?;
            let label = match kr {
                None => format!("{} k-ranges=plan", route.spec().entry),
                Some(r) => format!("{} k-ranges={r}", route.spec().entry),
            };
            records.push(gemv_record(ctx, &what, label, (t, n, k), &layout, us));
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mma_kernel_takes_t_from_three_on_for_4_and_8_bits() {
        for name in ["q4_g64", "q8_g32"] {
            let f = crate::formats::format(name).unwrap();
            assert!(mma_supports(f));
            for t in 1..=70 {
                let r = ExactRoute::choose(f, t, Epilogue::Residual);
                let mma = matches!(r.kernel, ExactKernel::Mma(_));
                assert_eq!(mma, t >= MMA_MIN_T, "{name} T={t}");
                if mma {
                    assert_eq!(r.tt, mma_tt(t));
                    assert!(r.tt as usize >= t.min(32));
                }
            }
        }
        for name in ["q6_g64", "q5_g64", "q4_1_g32", "bf16"] {
            let f = crate::formats::format(name).unwrap();
            assert!(!mma_supports(f), "{name}");
            let r = ExactRoute::choose(f, 8, Epilogue::None);
            assert!(!matches!(r.kernel, ExactKernel::Mma(_)), "{name}");
        }
        assert_eq!(
            (mma_tt(5), mma_tt(8), mma_tt(9), mma_tt(17), mma_tt(33)),
            (8, 8, 16, 32, 32)
        );
    }

    #[test]
    fn the_ring_kernel_takes_small_shapes_at_eight_columns() {
        let q4 = crate::formats::format("q4_g64").unwrap();
        let r = ExactRoute::choose(q4, 8, Epilogue::None);
        assert_eq!(r.kernel, ExactKernel::Mma(mma_ring_tile()));
        assert!(r.spec().entry.starts_with("linear_exact_mmaring_"));
        // SmolLM2's linears run it; the 27B's run the register kernel under the same route.
        for (n, k) in [(1536, 576), (576, 1536), (3072, 576), (576, 576)] {
            assert_eq!(mma_substitute(&r, n, k), None, "{n}x{k}");
            assert_eq!(super::super::linear_exact::launched_route(&r, n, k), r);
        }
        for (n, k) in [(17408, 5120), (5120, 17408), (34816, 5120), (49152, 576)] {
            assert_eq!(mma_substitute(&r, n, k), Some(mma_tile(8)), "{n}x{k}");
            let ran = super::super::linear_exact::launched_route(&r, n, k);
            assert_eq!(ran.kernel, ExactKernel::Mma(mma_tile(8)));
        }
        // Other tiles keep the register kernel.
        for t in [4, 16, 32] {
            let r = ExactRoute::choose(q4, t, Epilogue::None);
            assert!(
                matches!(r.kernel, ExactKernel::Mma(MmaTile { mt: 0, .. })),
                "T={t}"
            );
            assert_eq!(mma_substitute(&r, 576, 576), None);
        }
    }

    #[test]
    fn ring_routes_qualify_their_own_kernel() {
        for r in routes() {
            let ring = matches!(r.kernel, ExactKernel::Mma(MmaTile { mt: 1.., .. }));
            let cases = cases(&r);
            assert!(!cases.is_empty(), "{}", r.spec().entry);
            for (t, n, k, o) in cases {
                if ring {
                    assert!(o.exact_tile, "{} {t} {n}x{k}", r.spec().entry);
                    assert!(o.smem_budget.is_none() && o.k_ranges.is_none());
                    // As named, even past the shape rule.
                    let over = mma_substitute(&r, n, k).filter(|_| !o.exact_tile);
                    assert_eq!(over, None);
                }
            }
        }
    }

    #[test]
    fn mma_prologues_are_instantiated_where_chosen() {
        let specs = super::super::linear_exact::instantiations();
        let has = |e: &str| specs.iter().any(|s| s.entry == e);
        let q4 = crate::formats::format("q4_g64").unwrap();
        for t in [3, 4, 5, 8, 9, 16, 17, 32, 40] {
            for (kind, epilogue) in PrologueKind::FUSED {
                let r = ExactRoute::choose_with(q4, t, epilogue, kind).expect("fused pair");
                // No prologue instantiation at the tile of 4 columns: the ring kernel.
                assert_eq!(matches!(r.kernel, ExactKernel::Mma(_)), t > 4, "T={t}");
                assert!(has(&r.spec().entry), "{}", r.spec().entry);
                assert!(r.spec().programmatic);
            }
        }
    }

    /// The GDN in-projection's conv epilogue: on the register tile at T = 8 (a ring tile
    /// gives way to it), instantiated, and qualified only at one launch of up to 8 lanes.
    #[test]
    fn gdn_in_proj_conv_epilogue_routes() {
        use super::super::linear_exact::NormWeight;
        let specs = super::super::linear_exact::instantiations();
        let q4 = crate::formats::format("q4_g64").unwrap();
        let zc = PrologueKind::RmsNorm(NormWeight::ZeroCentred);
        let r8 = choose(q4, 8, Epilogue::None, zc).unwrap();
        // The 27B's in-projection and a small one (ring tile below the cap): the register
        // tile with the conv, instantiated.
        for (n, k) in [(16480, 5120), (3088, 1024)] {
            let c = with_conv_epilogue(&r8, n, k).expect("in-projection");
            assert_eq!(c.kernel, ExactKernel::Mma(mma_tile(8)), "{n}x{k}");
            assert_eq!(
                (c.epilogue, c.prologue, c.tt),
                (Epilogue::Conv, zc, CONV_TT)
            );
            assert!(
                specs.iter().any(|s| s.entry == c.spec().entry),
                "{}",
                c.spec().entry
            );
        }
        // Only the RMSNorm prologue with no epilogue, at the lanes' column tile.
        let r16 = choose(q4, 16, Epilogue::None, zc).unwrap();
        assert_eq!(with_conv_epilogue(&r16, 16480, 5120), None);
        let res = choose(q4, 8, Epilogue::Residual, PrologueKind::None).unwrap();
        assert_eq!(with_conv_epilogue(&res, 16480, 5120), None);
        for r in routes().iter().filter(|r| r.epilogue == Epilogue::Conv) {
            assert!(matches!(r.kernel, ExactKernel::Mma(MmaTile { mt: 0, .. })));
            assert!(cases(r).iter().all(|&(t, _, _, o)| t <= 8 && !o.twice));
        }
    }

    /// gate_up's SwiGLU epilogue: on the register kernel the launch runs (the 27B's
    /// 34816x5120 substitutes it for the T = 8 ring tile; SmolLM2's 3072x576 keeps the ring
    /// kernel, so it has none), only for an RMSNorm route without an epilogue and an even N;
    /// every such route is instantiated, and the exact and bf16 ones compile for sm_90 with
    /// the paired m-tiles (and the split-K reduction's silu).
    #[test]
    fn gate_up_swiglu_epilogue_routes() {
        use super::super::linear_exact::NormWeight;
        let jit = crate::jit::test_jit();
        let specs = super::super::linear_exact::instantiations();
        let q4 = crate::formats::format("q4_g64").unwrap();
        let zc = PrologueKind::RmsNorm(NormWeight::ZeroCentred);
        let r8 = choose(q4, 8, Epilogue::None, zc).unwrap();
        assert!(
            r8.kernel != ExactKernel::Mma(mma_tile(8)),
            "T = 8 chooses the ring tile"
        );
        let s8 = with_swiglu_epilogue(&r8, 34816, 5120).expect("27B gate_up");
        assert_eq!(s8.kernel, ExactKernel::Mma(mma_tile(8)));
        assert!(s8.has_swiglu_epilogue() && s8.epilogue == Epilogue::Swiglu);
        assert_eq!(with_swiglu_epilogue(&r8, 3072, 576), None);
        assert_eq!(with_swiglu_epilogue(&r8, 34815, 5120), None, "odd N");
        let r16 = choose(
            q4,
            16,
            Epilogue::None,
            PrologueKind::RmsNorm(NormWeight::Plain),
        );
        assert!(with_swiglu_epilogue(&r16.unwrap(), 3072, 576).is_some());
        let res = choose(q4, 16, Epilogue::Residual, PrologueKind::None).unwrap();
        assert_eq!(with_swiglu_epilogue(&res, 34816, 5120), None);
        let mut compiled = 0;
        for r in routes().iter().filter(|r| r.epilogue == Epilogue::Swiglu) {
            assert!(r.has_swiglu_epilogue(), "{}", r.spec().entry);
            assert!(specs.iter().any(|s| s.entry == r.spec().entry));
            assert!(cases(r).iter().all(|&(_, n, _, _)| n % 2 == 0));
            // Split K before the silu, also launched twice in a row.
            assert!(
                cases(r)
                    .iter()
                    .any(|c| c.3.k_ranges.is_some_and(|kr| kr > 1) && c.3.twice),
                "{}",
                r.spec().entry
            );
            if r.format.name == "q4_g64" && r.tt == 8 && r.prologue == zc {
                let spec = r.spec();
                let src = jit.render(&spec).unwrap();
                assert!(src.contains("#define EPI_SWIGLU 1"), "{}", spec.entry);
                jit.cubin(&spec, crate::jit::Arch::new(9, 0))
                    .unwrap_or_else(|e| panic!("{}: {e}", spec.entry));
                compiled += 1;
            }
        }
        let tiles = if cluster_size() > 1 { 3 } else { 2 };
        assert_eq!(
            compiled, tiles,
            "the exact and the bf16 tile (and that in clusters)"
        );
    }

    #[test]
    fn cluster_plans_stage_one_slab_in_whole_clusters() {
        let q4 = crate::formats::format("q4_g64").unwrap();
        let room = |resident, scratch| Room {
            resident,
            smem: MMA_SMEM,
            scratch,
        };
        for c in [2u32, 4] {
            for bf16 in [false, true] {
                let tile = mma_tile(8).rounding(bf16).clustered(c);
                for (n, k) in [(17408, 5120), (5120, 17408), (5120, 6144), (34816, 5120)] {
                    for resident in [132, 130, 128] {
                        let p = plan(
                            q4,
                            8,
                            tile,
                            true,
                            (n, k),
                            room(resident, Gpu::SCRATCH_BYTES),
                            None,
                        );
                        let what = format!("c{c} bf16 {bf16} {n}x{k} {resident}");
                        assert!(p.clusters_fit, "{what}");
                        assert!(p.one_slab(k / q4.group), "{what}");
                        let mr = p.grid as usize / p.kr;
                        assert!(mr.is_multiple_of(c as usize) && mr > 0, "{what}");
                        assert!(p.grid as usize <= resident, "{what}");
                        // Without clusters the same plan but for the whole clusters.
                        let one = plan(
                            q4,
                            8,
                            tile.clustered(1),
                            true,
                            (n, k),
                            room(resident, Gpu::SCRATCH_BYTES),
                            None,
                        );
                        assert_eq!((one.kr, one.slab), (p.kr, p.slab), "{what}");
                        assert_eq!(
                            one.grid as usize / one.kr / c as usize,
                            mr / c as usize,
                            "{what}"
                        );
                    }
                }
                // Several slabs a K-range (no scratch for K-ranges' sums): not for clusters.
                let p = plan(q4, 8, tile, false, (5120, 17408), room(132, 0), None);
                assert!(!p.clusters_fit && !p.one_slab(17408 / q4.group));
                // Fewer resident blocks than one cluster.
                let p = plan(
                    q4,
                    8,
                    tile,
                    false,
                    (17408, 5120),
                    room(1, Gpu::SCRATCH_BYTES),
                    Some(1),
                );
                assert!(!p.clusters_fit || c == 1);
            }
        }
        // Without clusters every plan fits.
        let p = plan(
            q4,
            8,
            mma_tile(8).clustered(1),
            false,
            (34816, 5120),
            room(132, 0),
            None,
        );
        assert!(p.clusters_fit);
    }

    #[test]
    fn only_bf16_register_tiles_launch_in_clusters() {
        let q4 = crate::formats::format("q4_g64").unwrap();
        let c = cluster_size();
        for tt in MMA_TT {
            for bf16 in [false, true] {
                let route = ExactRoute {
                    format: q4,
                    tt,
                    epilogue: Epilogue::None,
                    kernel: ExactKernel::Mma(mma_tile(tt).rounding(bf16)),
                    prologue: PrologueKind::None,
                };
                let got = mma_substitute(&route, 17408, 5120);
                if bf16 && c > 1 && CLUSTER_TT.contains(&tt) {
                    assert_eq!(
                        got,
                        Some(mma_tile(tt).rounding(true).clustered(c)),
                        "T={tt}"
                    );
                    // The clustered tile is a route of its own (qualified by name).
                    let named = ExactRoute {
                        kernel: ExactKernel::Mma(got.unwrap()),
                        ..route.clone()
                    };
                    assert!(routes().contains(&named), "T={tt}");
                    assert_eq!(mma_substitute(&named, 17408, 5120), None);
                } else {
                    assert_eq!(got, None, "T={tt} bf16 {bf16}");
                }
            }
        }
        // A ring tile past the ring's limit runs the register tile, in clusters where bf16.
        let ring = ExactRoute {
            format: q4,
            tt: 8,
            epilogue: Epilogue::None,
            kernel: ExactKernel::Mma(mma_ring_tile().rounding(true)),
            prologue: PrologueKind::None,
        };
        let want = mma_tile(8).rounding(true).clustered(c);
        assert_eq!(mma_substitute(&ring, 17408, 5120), Some(want));
        assert_eq!(mma_substitute(&ring, 576, 576), None);
    }

    #[test]
    fn the_cluster_switch_takes_1_2_or_4() {
        assert_eq!(parse_cluster(Some("1")), 1);
        assert_eq!(parse_cluster(Some(" 4 ")), 4);
        assert_eq!(parse_cluster(Some("2")), 2);
        assert_eq!(parse_cluster(Some("3")), CLUSTER_DEFAULT);
        assert_eq!(parse_cluster(None), CLUSTER_DEFAULT);
    }

    #[test]
    fn plans_fit_and_split_k_where_k_needs_slabs() {
        let q4 = crate::formats::format("q4_g64").unwrap();
        let q8 = crate::formats::format("q8_g32").unwrap();
        let scratch = Gpu::SCRATCH_BYTES;
        for f in [q4, q8] {
            for (tt, rms) in MMA_TT.iter().flat_map(|&tt| [(tt, false), (tt, true)]) {
                let w = mma_tile(tt);
                let (per, red) = smem_parts(f, tt, w, rms);
                for (n, k) in [
                    (144, 64),
                    (576, 1536),
                    (1000, 2048),
                    (17408, 5120),
                    (5120, 17408),
                ] {
                    for (resident, s, force) in [
                        (132, scratch, None),
                        (132, 0, None),
                        (5, scratch, None),
                        (132, scratch, Some(1)),
                    ] {
                        let room = Room {
                            resident,
                            smem: MMA_SMEM,
                            scratch: s,
                        };
                        let p = plan(f, tt, w, rms, (n, k), room, force);
                        let groups = k / f.group;
                        let mtiles = n.div_ceil(16);
                        let what =
                            format!("{} T={tt} {rms} {n}x{k} {resident} {s} {force:?}", f.name);
                        assert!(p.smem <= MMA_SMEM.max(per + red), "{what}");
                        assert_eq!(p.smem, p.slab * per + red, "{what}");
                        assert!(
                            p.kr >= 1 && (p.grid as usize).is_multiple_of(p.kr),
                            "{what}"
                        );
                        let mr = p.grid as usize / p.kr;
                        assert!(mr >= 1 && mr <= mtiles, "{what}");
                        assert!(p.kr == 1 || p.kr * tt as usize * (n + 1) * 4 <= s, "{what}");
                        assert!(p.slab >= 1 && p.slab <= groups.div_ceil(p.kr), "{what}");
                        if p.kr > 1 || groups <= p.slab {
                            // One wave: split K always fits the resident blocks.
                            assert!(p.grid as usize <= resident.max(p.kr), "{what}");
                        }
                    }
                }
            }
        }
        let room = |scratch| Room {
            resident: 132,
            smem: MMA_SMEM,
            scratch,
        };
        // T = 8, q4_g64: 3072 bytes a group, 25.6 KB of sums; 56 groups fit 200 KB.
        let p = plan(
            q4,
            8,
            mma_tile(8),
            false,
            (17408, 5120),
            room(scratch),
            None,
        );
        assert_eq!((p.kr, p.slab, p.grid), (2, 40, 132));
        let p = plan(
            q4,
            8,
            mma_tile(8),
            false,
            (5120, 17408),
            room(scratch),
            None,
        );
        assert_eq!((p.kr, p.slab, p.grid), (5, 55, 130));
        // Without the scratch: one K-range in slabs, at most one m-tile a warp.
        let p = plan(q4, 8, mma_tile(8), false, (34816, 5120), room(0), None);
        assert_eq!((p.kr, p.slab, p.grid), (1, 40, 136));
        let p = plan(
            q4,
            8,
            mma_tile(8),
            false,
            (34816, 5120),
            room(scratch),
            None,
        );
        assert_eq!((p.kr, p.grid), (2, 132));
        // One slab's K: no split, every m-tile in one wave.
        let p = plan(q4, 8, mma_tile(8), false, (49152, 576), room(scratch), None);
        assert_eq!((p.kr, p.slab, p.grid), (1, 9, 132));
        // Few m-tiles a block at T = 8 (5120 rows: 320 m-tiles, at most 3 a block): three
        // K-ranges, exact and bf16 alike; not at other T, nor with many m-tiles.
        for tile in [mma_tile(8), mma_tile(8).rounding(true)] {
            let p = plan(q4, 8, tile, false, (5120, 6144), room(scratch), None);
            assert_eq!((p.kr, p.grid), (3, 132), "{tile:?}");
            let p = plan(q4, 8, tile, false, (5120, 6144), room(scratch), Some(1));
            assert_eq!(p.kr, 1, "forced: {tile:?}");
        }
        let reg = mma_tile(8);
        assert_eq!(
            few_mtiles_k_ranges(16, mma_tile(16), 320, 132, 5120 * 6144),
            1
        );
        assert_eq!(few_mtiles_k_ranges(8, reg, 320, 132, 5120 * 6144), 3);
        assert_eq!(few_mtiles_k_ranges(8, reg, 320, 132, 576 * 576), 1, "small");
        assert_eq!(
            few_mtiles_k_ranges(8, mma_ring_tile(), 40, 132, 5120 * 6144),
            1
        );
        let p = plan(
            q4,
            8,
            mma_tile(8).rounding(true),
            false,
            (17408, 5120),
            room(scratch),
            None,
        );
        assert_eq!(p.kr, 1, "{p:?}");

        // The ring kernel at T = 8 in sm_90's 227 KB: 96 KB of stages and 37.5 KB of sums
        // leave 31 groups, so K = 5120 takes 3 K-ranges of one slab, K = 17408 nine.
        let ring = mma_ring_tile();
        let full = |scratch| Room {
            resident: 132,
            smem: 227 * 1024,
            scratch,
        };
        let p = plan(q4, 8, ring, false, (17408, 5120), full(scratch), None);
        assert_eq!((p.kr, p.slab, p.grid), (3, 27, 132));
        assert!(p.one_slab(80) && p.smem <= 227 * 1024);
        let p = plan(q4, 8, ring, false, (5120, 17408), full(scratch), None);
        assert_eq!((p.kr, p.slab, p.grid), (9, 31, 126));
        assert!(p.one_slab(272));
        let p = plan(q4, 8, ring, true, (34816, 5120), full(scratch), None);
        assert!(p.one_slab(80) && p.smem <= 227 * 1024, "{p:?}");
        // Without the scratch a long K needs slabs: not a plan the ring kernel can run.
        let p = plan(q4, 8, ring, false, (17408, 5120), full(0), None);
        assert!(!p.one_slab(80), "{p:?}");
    }

    /// Seven instantiations (q4 T = 8 plain and q8 T = 8 SwiGLU + residual in the ring
    /// kernel, q4 T = 16 RMSNorm(1 + w), q8 T = 32 SwiGLU + residual, q4 T = 8 plain in the
    /// register kernel, two with bf16-rounded activations) and the K-range sums with and without RMSNorm render, wait for the
    /// previous kernel once, and compile with NVRTC for sm_90.
    #[test]
    fn mma_kernels_compile_with_nvrtc() {
        use super::super::linear_exact::NormWeight;
        let jit = crate::jit::test_jit();
        let q4 = crate::formats::format("q4_g64").unwrap();
        let q8 = crate::formats::format("q8_g32").unwrap();
        let zc = PrologueKind::RmsNorm(NormWeight::ZeroCentred);
        let mut specs: Vec<KernelSpec> = [
            choose(q4, 8, Epilogue::None, PrologueKind::None),
            choose(q8, 8, Epilogue::Residual, PrologueKind::Swiglu),
            choose(q4, 16, Epilogue::None, zc),
            choose(q8, 32, Epilogue::Residual, PrologueKind::Swiglu),
        ]
        .into_iter()
        .map(|r| r.unwrap().spec())
        .collect();
        // The register kernel at T = 8 (the tile's larger shapes run it).
        specs.push(
            ExactRoute {
                format: q4,
                tt: 8,
                epilogue: Epilogue::None,
                kernel: ExactKernel::Mma(mma_tile(8)),
                prologue: PrologueKind::None,
            }
            .spec(),
        );
        // The bf16 mode's tiles: the ring kernel at T = 8 with RMSNorm(1 + w), the
        // register kernel at T = 32 with SwiGLU and the residual.
        for (tt, kind, epilogue) in [
            (8, zc, Epilogue::None),
            (32, PrologueKind::Swiglu, Epilogue::Residual),
        ] {
            let exact = choose(q4, tt, epilogue, kind).unwrap();
            let bf16 = rounded(&exact).unwrap();
            assert!(bf16.rounds_activations() && !exact.rounds_activations());
            assert!(bf16.spec().entry.ends_with("_b16"), "{}", bf16.spec().entry);
            let src = jit.render(&bf16.spec()).unwrap();
            assert!(src.contains("#define PARTS 1"), "{}", bf16.spec().entry);
            assert!(jit
                .render(&exact.spec())
                .unwrap()
                .contains("#define PARTS 3"));
            specs.push(bf16.spec());
        }
        specs.push(sum_spec(Epilogue::None, true));
        specs.push(sum_spec(Epilogue::Residual, false));
        specs.push(sum_spec(Epilogue::Conv, true));
        for spec in specs {
            let src = jit.render(&spec).unwrap();
            assert!(crate::jit::calls_pdl_wait(&src), "{}", spec.entry);
            jit.cubin(&spec, crate::jit::Arch::new(9, 0))
                .unwrap_or_else(|e| panic!("{}: {e}", spec.entry));
        }
    }
}
