//! Gated DeltaNet (the `linear_attn` mixer of Qwen3.5/3.6, MODEL_SPEC.md section 4).
//!
//! - [`reference`]: the f64 oracle of the whole mixer (conv, gating, L2 norm, recurrence in
//!   both the recurrent and the chunked form, gated RMSNorm).
//! - [`cpu`]: the CPU op in f32 arithmetic with f32 or f16 state storage (what the CPU
//!   backend runs, and the subject of the CPU drift test).
//! - CUDA decode routes (this file): the fused recurrent kernel
//!   (`templates/gdn/recurrent.cu`, modes step / record / replay, templated on the state
//!   storage type and the tile; the same kernel grouped by key head, `gdn/grouped.cu`, and
//!   with a cp.async pipeline, `gdn/staged.cu`, selected by [`Tile::group`] and
//!   [`Tile::stages`]), the split step (`gdn/prep.cu` or `gdn/conv_step.cu`, then
//!   `gdn/update.cu`), the prefill prologue (`gdn/prep_warp.cu`) and the output norm
//!   (`gdn/out_norm.cu`); the registry of every instantiation.
//! - `prefill` (re-exported here): the chunked prefill (`gdn/chunk.cu`, chunk 64, WY/UT
//!   form, f32 interface: f16 storage is staged through an f32 workspace, `gdn/convert.cu`;
//!   its stages also on tensor cores, see [`ChunkMath`] and [`PrefillStages`]).
//!
//! Activations are f32 (`mixed`, `z`, `a`, `b` in; `y` out as f32 or bf16). The state
//! layout is `[lanes][HV][dv][dk]` (one column of S contiguous), the conv state
//! `[lanes][conv_dim][Kc-1]`; [`reference`] documents both.

pub mod bench;
pub mod cpu;
pub mod drift;
mod prefill;
mod qualify;
pub mod reference;

pub use bench::bench;
pub use prefill::*;
pub use qualify::{check_step_route, qualify, qualify_decode, qualify_prefill};

use cudarc::driver::{sys, DevicePtrMut, DeviceRepr, ValidAsZeroBits};
use serde::Serialize;

use crate::gpu::{dptr, CudaSlice, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::jit::KernelSpec;

/// Head counts and dims of one GDN layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GdnDims {
    pub hk: usize,
    pub hv: usize,
    pub dk: usize,
    pub dv: usize,
    /// Conv width (`linear_conv_kernel_dim`, 4 in every model).
    pub kc: usize,
}

impl GdnDims {
    pub const fn new(hk: usize, hv: usize, dk: usize, dv: usize) -> Self {
        GdnDims {
            hk,
            hv,
            dk,
            dv,
            kc: 4,
        }
    }
    pub fn key_dim(&self) -> usize {
        self.hk * self.dk
    }
    pub fn value_dim(&self) -> usize {
        self.hv * self.dv
    }
    pub fn conv_dim(&self) -> usize {
        2 * self.key_dim() + self.value_dim()
    }
    pub fn state_len(&self) -> usize {
        self.hv * self.dk * self.dv
    }
    pub fn conv_state_len(&self) -> usize {
        self.conv_dim() * (self.kc - 1)
    }
    /// Panics unless the layer's small parameters have these dims' sizes: `conv_w
    /// [conv_dim, kc]`, `a_log` and `dt_bias [HV]`, `norm_w [dv]` (every backend's check).
    pub fn check_params(&self, conv_w: &[f32], a_log: &[f32], dt_bias: &[f32], norm_w: &[f32]) {
        assert_eq!(
            conv_w.len(),
            self.conv_dim() * self.kc,
            "gdn: conv weight size"
        );
        assert_eq!(
            (a_log.len(), dt_bias.len()),
            (self.hv, self.hv),
            "gdn: A_log/dt_bias"
        );
        assert_eq!(norm_w.len(), self.dv, "gdn: norm weight size");
    }

    pub fn describe(&self) -> String {
        format!(
            "HK={} HV={} dk={} dv={}",
            self.hk, self.hv, self.dk, self.dv
        )
    }
}

/// Qwen3.6-27B's GDN layer.
pub const QWEN36_27B: GdnDims = GdnDims::new(16, 48, 128, 128);
/// Qwen3.6-35B-A3B's GDN layer.
pub const QWEN36_35B_A3B: GdnDims = GdnDims::new(16, 32, 128, 128);

/// Storage type of the recurrent state (`--gdn-state-fp16` selects `F16`); arithmetic is
/// f32 either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StateType {
    F32,
    F16,
}

impl StateType {
    pub const ALL: [StateType; 2] = [StateType::F32, StateType::F16];

    /// The op-level form of `--gdn-state-fp16`.
    pub fn from_fp16_flag(fp16: bool) -> Self {
        if fp16 {
            StateType::F16
        } else {
            StateType::F32
        }
    }
    pub fn cuda_type(self) -> &'static str {
        match self {
            StateType::F32 => "float",
            StateType::F16 => "f16_t",
        }
    }
    pub fn short(self) -> &'static str {
        match self {
            StateType::F32 => "f32",
            StateType::F16 => "f16",
        }
    }
    pub fn bytes(self) -> usize {
        match self {
            StateType::F32 => 4,
            StateType::F16 => 2,
        }
    }
    /// Rounds an f32 to what the storage holds.
    pub fn round(self, v: f32) -> f32 {
        match self {
            StateType::F32 => v,
            StateType::F16 => half::f16::from_f32(v).to_f32(),
        }
    }
}

/// What a launch of the recurrent kernel does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// T tokens per lane (T = 1: the direct decode step; T > 1: batch update), in place.
    Step,
    /// The state (and conv window) after each of T verify columns; the state is untouched.
    Record,
    /// Fold `counts[lane]` of T recorded columns into the state, in place.
    Replay,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Step, Mode::Record, Mode::Replay];
    fn short(self) -> &'static str {
        match self {
            Mode::Step => "step",
            Mode::Record => "record",
            Mode::Replay => "replay",
        }
    }
}

/// How the recurrent kernel spreads a state column over lanes and columns over a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Tile {
    /// Lanes sharing one column of S.
    pub lpr: u32,
    /// Elements of the column per lane (`lpr * ept` = the largest dk).
    pub ept: u32,
    /// Columns per lane.
    pub rows: u32,
    pub warps: u32,
    /// 16-byte state accesses (needs `dk % ept == 0`).
    pub vec: bool,
    /// Blocks per SM the compiler must fit (a register cap); 0: none.
    pub minb: u32,
    /// 0: one block per column tile (`gdn/recurrent.cu`). n > 0: one block per `n`
    /// consecutive tiles of one key head's value heads, the q/k conv and norm done once
    /// per block and the next tile's state loaded while the current one computes
    /// (`gdn/grouped.cu`; 16-byte slices only).
    pub group: u32,
    /// With `group > 0`: 0 = the next tile prefetched in registers (`gdn/grouped.cu`);
    /// n >= 2 = tiles copied into shared memory by cp.async `n` stages deep
    /// (`gdn/staged.cu`).
    pub stages: u32,
    /// The step in two launches (one token per lane, mode step only): `gdn/prep.cu` (the
    /// conv, the gates and the q/k norms, the lanes as its sequences) into the state's
    /// workspace, then the recurrence alone, `gdn/update.cu` (16 lanes x 8 elements a
    /// column, `rows` columns a half-warp; no block barrier).
    pub split: bool,
    /// With `split`, the other division of the step: the causal conv + SiLU alone first
    /// (`gdn/conv_step.cu`, one thread a channel, into [`PrepBufs::mixed`]), then the
    /// recurrence with the q/k norms and the gates in it (`gdn/update.cu` with `gin`), as
    /// flash-linear-attention's decode layer divides it.
    pub gin: bool,
}

impl Tile {
    /// How far ahead this tile's update prefetches state into L2 (percent of the resident
    /// blocks; 0: none): `NINFER_GDN_PREFETCH` where set, else [`GIN_PREFETCH_PERCENT`] for
    /// the gates-in split tiles and none for every other.
    pub fn prefetch_percent(&self) -> usize {
        match prefetch_env() {
            Some(pct) => pct,
            None if self.split && self.gin => GIN_PREFETCH_PERCENT,
            None => 0,
        }
    }

    pub fn dk_max(&self) -> usize {
        (self.lpr * self.ept) as usize
    }
    /// Columns of S per block.
    pub fn cols_per_block(&self) -> usize {
        (self.warps * self.rows * (32 / self.lpr)) as usize
    }
    pub fn fits(&self, dk: usize) -> bool {
        dk <= self.dk_max()
            && (!self.vec || dk.is_multiple_of(self.ept as usize))
            && (self.group == 0 || self.vec)
            && (self.stages == 0 || self.stages >= 2)
            && (!self.split || (self.lpr, self.ept, self.vec, self.group) == (16, 8, true, 0))
            && (!self.gin || self.split)
    }
    /// Whether a route of this tile serves `mode` with `t` tokens a lane: the split step
    /// takes one token in mode step only.
    pub fn serves(&self, mode: Mode, t: usize) -> bool {
        !self.split || (mode == Mode::Step && t == 1)
    }
    /// Blocks of the grouped kernel per (lane, key head): the `r` value heads' column
    /// tiles split `group` to a block.
    pub fn parts(&self, d: &GdnDims) -> usize {
        let units = (d.hv / d.hk) * d.dv.div_ceil(self.cols_per_block());
        units.div_ceil(self.group.max(1) as usize)
    }
    fn short(&self) -> String {
        let cap = if self.minb > 0 {
            format!("m{}", self.minb)
        } else {
            String::new()
        };
        let group = match (self.group, self.stages, self.split) {
            (_, _, true) if self.gin => "xg".to_string(),
            (_, _, true) => "x".to_string(),
            (0, _, _) => String::new(),
            (g, 0, _) => format!("g{g}"),
            (g, s, _) => format!("g{g}s{s}"),
        };
        format!(
            "l{}e{}r{}w{}{}{cap}{group}",
            self.lpr,
            self.ept,
            self.rows,
            self.warps,
            if self.vec { "v" } else { "s" }
        )
    }
}

/// The registered tiles per storage type: the first fitting one is the default (one lane:
/// the per-tile kernel is fastest there). The grouped g6 tile and the staged g4s4m3 one
/// are the best of bench/gdn runs 4 and 5 at 8 lanes (g1, g3, g3s3m3, g6s4m3, g12s6 and the
/// 4-warp / 64-column grouped tiles lost everywhere and were dropped). The 16-column
/// per-tile tiles (r1w8, r1w4: more, smaller blocks, as fla launches) lost everywhere in
/// bench/gdn run 9 (1 lane 4-53% slower than r2w8, 8 lanes 45-100%) and were dropped.
pub fn tiles(state: StateType) -> Vec<Tile> {
    let t = |lpr, ept, rows, warps, vec| Tile {
        lpr,
        ept,
        rows,
        warps,
        vec,
        minb: 0,
        group: 0,
        stages: 0,
        split: false,
        gin: false,
    };
    let g = |group, stages, minb| Tile {
        lpr: 16,
        ept: 8,
        rows: 2,
        warps: 8,
        vec: true,
        minb,
        group,
        stages,
        split: false,
        gin: false,
    };
    match state {
        StateType::F32 => vec![
            t(16, 8, 2, 8, true),
            t(16, 8, 4, 4, true),
            t(16, 8, 4, 8, true),
            t(32, 4, 2, 4, false),
            g(6, 0, 0),
            g(4, 4, 3),
            split_tile(2, 2),
            split_tile(4, 4),
            split_gin_tile(2, 2),
            split_gin_tile(4, 4),
        ],
        StateType::F16 => vec![
            t(16, 8, 2, 8, true),
            t(16, 8, 4, 4, true),
            t(16, 8, 4, 8, true),
            t(32, 4, 2, 4, false),
            g(6, 0, 0),
            g(4, 4, 3),
            split_tile(4, 4),
            split_tile(2, 2),
            split_gin_tile(4, 4),
            split_gin_tile(2, 2),
        ],
    }
}

/// Whether the heuristics' split step takes the gates in the update (`Tile::gin`): only
/// where the environment sets `NINFER_GDN_GATES_IN=1` until its GPU qualification and
/// timings (bench/gdn run 52) decide; the tuner times it beside the prep form either way.
pub fn gates_in_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::ops::linear_exact::switch_opt_in(&ON, "NINFER_GDN_GATES_IN")
}

/// How far ahead the split step's update prefetches state into L2 before its wait, in
/// percent of the blocks that fit on the GPU at once, where the environment says:
/// `NINFER_GDN_PREFETCH` (read once; 0: no prefetch, and the update kernels render as
/// without the option). Unset: each tile's own ([`Tile::prefetch_percent`]).
fn prefetch_env() -> Option<usize> {
    static PCT: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *PCT.get_or_init(|| crate::gpu::env_usize("NINFER_GDN_PREFETCH"))
}

/// The gates-in split tiles' prefetch distance, percent of the resident blocks. bench/gdn
/// run 52 (H100, 8 lanes, 27B shape): at 100 the gin steps f32 r2w2 21.90 -> 20.76 us, f16
/// r4w4 13.35 -> 12.02; the prep tiles' f32 steps +0.2..1.05 us, so they keep none.
pub const GIN_PREFETCH_PERCENT: usize = 100;

/// A split-step tile (`Tile::split`): `rows` columns a half-warp, `warps` warps. The f32
/// state's best in bench/gdn run 10 is 2 x 2, the f16 state's 4 x 4 (standalone, 8 lanes,
/// 27B shape).
pub const fn split_tile(rows: u32, warps: u32) -> Tile {
    Tile {
        lpr: 16,
        ept: 8,
        rows,
        warps,
        vec: true,
        minb: 0,
        group: 0,
        stages: 0,
        split: true,
        gin: false,
    }
}

/// [`split_tile`] in the division with the gates in the update (`Tile::gin`).
pub const fn split_gin_tile(rows: u32, warps: u32) -> Tile {
    Tile {
        gin: true,
        ..split_tile(rows, warps)
    }
}

/// One instantiation of the recurrent kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecurrentRoute {
    pub mode: Mode,
    pub state: StateType,
    pub tile: Tile,
    pub kc: usize,
}

impl RecurrentRoute {
    pub fn spec(&self) -> KernelSpec {
        let entry = format!(
            "gdn_{}_{}_{}_k{}",
            self.mode.short(),
            self.state.short(),
            self.tile.short(),
            self.kc
        );
        // Grouped tiles (several column tiles of one key head per block) have their own
        // template, staged through shared memory when `stages` is set; the rest take the
        // per-tile kernel, which alone has the scalar/vector choice.
        // Every step template waits (PDL) after the loads of what the step does not write.
        let spec = |family: &'static str, template: &'static str| {
            KernelSpec::new(family, template, entry.clone())
                .programmatic()
                .param("mode", self.mode)
                .param("state", self.state.cuda_type())
                .param("lpr", self.tile.lpr)
                .param("ept", self.tile.ept)
                .param("rows", self.tile.rows)
                .param("warps", self.tile.warps)
                .param("minb", self.tile.minb)
                .param("kc", self.kc)
        };
        if self.tile.split {
            // (gdn/prep.cu or gdn/conv_step.cu, the first launch, has its own spec.)
            let spec = KernelSpec::new(
                "gdn_update",
                "gdn/update.cu",
                format!("gdn_update_{}_{}", self.state.short(), self.tile.short()),
            )
            .programmatic()
            .param("state", self.state.cuda_type())
            .param("rows", self.tile.rows)
            .param("warps", self.tile.warps);
            let spec = match self.tile.gin {
                true => spec.param("gin", true),
                false => spec,
            };
            return match self.tile.prefetch_percent() {
                0 => spec,
                _ => {
                    let mut spec = spec.param("prefetch", true);
                    spec.entry.push('p');
                    spec
                }
            };
        }
        match (self.tile.group > 0, self.tile.stages > 0) {
            (true, true) => spec("gdn_staged", "gdn/staged.cu")
                .param("group", self.tile.group)
                .param("stages", self.tile.stages),
            (true, false) => spec("gdn_grouped", "gdn/grouped.cu").param("group", self.tile.group),
            (false, _) => spec("gdn_recurrent", "gdn/recurrent.cu").param("vec", self.tile.vec),
        }
    }

    /// The built-in heuristic: the first registered tile that fits dk.
    pub fn choose(mode: Mode, state: StateType, dims: &GdnDims) -> Option<Self> {
        tiles(state)
            .into_iter()
            .find(|t| t.fits(dims.dk))
            .map(|tile| RecurrentRoute {
                mode,
                state,
                tile,
                kc: dims.kc,
            })
    }

    /// The heuristic by batch size, from the H200 runs: the per-tile 32-column kernel at
    /// 1-4 lanes (1 lane, 27B: f32 4.28 us, f16 3.36 us with PDL, bench/kernels v44; at 4
    /// lanes it beat g6 on both models and state types, by 8-40%, in the tuner's run-10
    /// timings, `bench/tune/README.md`), the split step from 5 lanes in mode step (8 lanes,
    /// 27B, bench/kernels v45: f32 17.6 us, f16 11.4 us, against 20.0 / 14.2 for the best
    /// fused tile, r4w4), else the grouped g6 kernel (bench/gdn run 5: 8 lanes f32 21.2 us
    /// against 23.9 for the per-tile kernel then; too few blocks for 132 SMs at 4 lanes).
    pub fn choose_for_lanes(
        mode: Mode,
        state: StateType,
        dims: &GdnDims,
        lanes: usize,
    ) -> Option<Self> {
        let grouped = Tile {
            lpr: 16,
            ept: 8,
            rows: 2,
            warps: 8,
            vec: true,
            minb: 0,
            group: 6,
            stages: 0,
            split: false,
            gin: false,
        };
        // The split step from 5 lanes (bench/gdn run 10, standalone, 27B shape, 8 lanes:
        // f32 16.8 us against 20.1 for the best fused tile, f16 10.1 against 14.2).
        // Its division with the gates in the update (`Tile::gin`; bench/gdn run 52).
        let (rows, warps) = match state {
            StateType::F32 => (2, 2),
            StateType::F16 => (4, 4),
        };
        let split = match gates_in_enabled() {
            true => split_gin_tile(rows, warps),
            false => split_tile(rows, warps),
        };
        if lanes >= 5 && mode == Mode::Step && split.fits(dims.dk) {
            return Some(RecurrentRoute {
                mode,
                state,
                tile: split,
                kc: dims.kc,
            });
        }
        if lanes >= 5 && grouped.fits(dims.dk) {
            return Some(RecurrentRoute {
                mode,
                state,
                tile: grouped,
                kc: dims.kc,
            });
        }
        Self::choose(mode, state, dims)
    }

    /// Every registered route that can run `dims`.
    pub fn all_for(mode: Mode, state: StateType, dims: &GdnDims) -> Vec<Self> {
        tiles(state)
            .into_iter()
            .filter(|t| t.fits(dims.dk) && t.serves(mode, 1))
            .map(|tile| RecurrentRoute {
                mode,
                state,
                tile,
                kc: dims.kc,
            })
            .collect()
    }
}

/// The prefill's prologue (`gdn/prep_warp.cu`): a warp per channel group (q, k or v of
/// one head) and 4 tokens, 4 warps a block, 4 channels a lane.
const PREP_WARPS: u32 = 4;
const PREP_TPW: usize = 4;
const PREP_LANE_CH: usize = 4;
/// Channels of one group the prefill's prologue takes (dk and dv at most): 32 lanes x 4.
const PREP_CHANNELS: usize = 32 * PREP_LANE_CH;
const NORM_BLOCK: u32 = 128;

/// The split decode step's prologue: `gdn/prep.cu` for one token, one channel a thread
/// (the prefill takes `gdn/prep_warp.cu`, a warp per channel group and 4 tokens).
const PREP_DECODE_BLOCK: u32 = 256;
fn prep_decode_spec(kc: usize) -> KernelSpec {
    KernelSpec::new(
        "gdn_prep",
        "gdn/prep.cu",
        format!("gdn_prep_b{PREP_DECODE_BLOCK}_t1_k{kc}"),
    )
    .programmatic()
    .param("block", PREP_DECODE_BLOCK)
    .param("tokc", 1)
    .param("kc", kc)
    .param("chmax", 1)
}

/// The first launch of the split step with the gates in the update (`Tile::gin`):
/// `gdn/conv_step.cu`, one channel a thread.
const CONV_STEP_BLOCK: u32 = 256;
fn conv_step_spec(kc: usize) -> KernelSpec {
    KernelSpec::new(
        "gdn_conv_step",
        "gdn/conv_step.cu",
        format!("gdn_conv_step_b{CONV_STEP_BLOCK}_k{kc}"),
    )
    .programmatic()
    .param("block", CONV_STEP_BLOCK)
    .param("kc", kc)
}

/// The prefill's prologue; with `f16_out` it writes q, k and v as f16 (for the f16 chunk
/// stages, which take them as mma operands).
fn prep_spec(kc: usize, f16_out: bool) -> KernelSpec {
    let suffix = if f16_out { "_qkvh" } else { "" };
    KernelSpec::new(
        "gdn_prep",
        "gdn/prep_warp.cu",
        format!("gdn_prep_warp_w{PREP_WARPS}_t{PREP_TPW}_k{kc}{suffix}"),
    )
    .programmatic()
    .param("warps", PREP_WARPS)
    .param("tpw", PREP_TPW)
    .param("kc", kc)
    .param("chmax", PREP_LANE_CH)
    .param("f16_out", f16_out as u32)
}

fn norm_spec(out: crate::ops::DType) -> KernelSpec {
    KernelSpec::new(
        "gdn_out_norm",
        "gdn/out_norm.cu",
        format!("gdn_out_norm_{}_b{NORM_BLOCK}", out.short()),
    )
    .param("out_type", out.cuda_type())
    .param("block", NORM_BLOCK)
    .programmatic()
}

/// Every registered instantiation of the GDN families.
pub fn instantiations() -> Vec<KernelSpec> {
    let mut specs = Vec::new();
    for mode in Mode::ALL {
        for state in StateType::ALL {
            for tile in tiles(state).into_iter().filter(|t| t.serves(mode, 1)) {
                specs.push(
                    RecurrentRoute {
                        mode,
                        state,
                        tile,
                        kc: 4,
                    }
                    .spec(),
                );
            }
        }
    }
    specs.push(prep_spec(4, false));
    specs.push(prep_spec(4, true));
    specs.push(prep_decode_spec(4));
    specs.push(conv_step_spec(4));
    specs.push(chunk_wu_spec());
    for dvt in CHUNK_DVTS {
        specs.push(chunk_scan_spec(dvt));
    }
    for math in [ChunkMath::Tf32, ChunkMath::Tf32x3] {
        specs.push(chunk_wu_tc_spec(math));
        for dvt in CHUNK_TC_DVTS {
            specs.push(chunk_tc_spec(dvt, math));
        }
    }
    specs.push(chunk_wu_f16_spec(false));
    specs.push(chunk_wu_f16_spec(true));
    for stages in CHUNK_WG_STAGE_COUNTS {
        specs.push(chunk_wg_spec(stages));
        specs.push(chunk_wgs_spec(stages, false));
        specs.push(chunk_wgs_spec(stages, true));
    }
    for dvt in CHUNK_F16_DVTS {
        specs.push(chunk_f16_spec(dvt, 2));
        specs.push(chunk_f16_spec(dvt, 1));
    }
    for out in crate::ops::DType::ALL {
        specs.push(norm_spec(out));
    }
    specs.push(convert_spec(true));
    specs.push(convert_spec(false));
    specs
}

fn launch_err(spec: &KernelSpec) -> impl FnOnce(cudarc::driver::DriverError) -> GpuError + '_ {
    move |e| GpuError::driver(format!("launching {}", spec.entry), e)
}

/// A layer's GDN weights on the device (f32).
pub struct GdnWeights {
    pub dims: GdnDims,
    pub conv_w: CudaSlice<f32>,
    pub a_log: CudaSlice<f32>,
    pub dt_bias: CudaSlice<f32>,
    pub norm_w: CudaSlice<f32>,
    pub eps: f32,
}

impl GdnWeights {
    pub fn upload(gpu: &Gpu, dims: GdnDims, p: &reference::GdnParams) -> Result<Self, GpuError> {
        let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        Ok(GdnWeights {
            dims,
            conv_w: gpu.upload(&f(&p.conv_w))?,
            a_log: gpu.upload(&f(&p.a_log))?,
            dt_bias: gpu.upload(&f(&p.dt_bias))?,
            norm_w: gpu.upload(&f(&p.norm_w))?,
            eps: p.eps as f32,
        })
    }
}

/// The recurrent state of `lanes` sequences in one storage type.
pub enum StateBuf {
    F32(CudaSlice<f32>),
    F16(CudaSlice<u16>),
}

impl StateBuf {
    pub fn zeros(gpu: &Gpu, ty: StateType, len: usize) -> Result<Self, GpuError> {
        Ok(match ty {
            StateType::F32 => StateBuf::F32(gpu.alloc_zeros(len)?),
            StateType::F16 => StateBuf::F16(gpu.alloc_zeros(len)?),
        })
    }
    pub fn upload(gpu: &Gpu, ty: StateType, v: &[f32]) -> Result<Self, GpuError> {
        Ok(match ty {
            StateType::F32 => StateBuf::F32(gpu.upload(v)?),
            StateType::F16 => StateBuf::F16(
                gpu.upload(
                    &v.iter()
                        .map(|&x| half::f16::from_f32(x).to_bits())
                        .collect::<Vec<_>>(),
                )?,
            ),
        })
    }
    pub fn ty(&self) -> StateType {
        match self {
            StateBuf::F32(_) => StateType::F32,
            StateBuf::F16(_) => StateType::F16,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            StateBuf::F32(s) => s.len(),
            StateBuf::F16(s) => s.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn ptr(&self, gpu: &Gpu) -> u64 {
        match self {
            StateBuf::F32(s) => dptr(gpu, s),
            StateBuf::F16(s) => dptr(gpu, s),
        }
    }
    pub fn download(&self, gpu: &Gpu) -> Result<Vec<f32>, GpuError> {
        Ok(match self {
            StateBuf::F32(s) => gpu.download(s)?,
            StateBuf::F16(s) => gpu
                .download(s)?
                .into_iter()
                .map(|b| half::f16::from_bits(b).to_f32())
                .collect(),
        })
    }
    /// Overwrites the whole buffer in place.
    pub fn write(&mut self, gpu: &Gpu, v: &[f32]) -> Result<(), GpuError> {
        let r = match self {
            StateBuf::F32(s) => gpu.stream().memcpy_htod(v, s),
            StateBuf::F16(s) => gpu.stream().memcpy_htod(
                &v.iter()
                    .map(|&x| half::f16::from_f32(x).to_bits())
                    .collect::<Vec<_>>(),
                s,
            ),
        };
        r.map_err(|e| GpuError::driver("copying to the device", e))
    }
}

/// Per-sequence GDN state for `lanes` sequence slots: recurrent state, conv state and the
/// kernel's group counters.
pub struct GdnState {
    pub lanes: usize,
    pub s: StateBuf,
    pub conv: CudaSlice<f32>,
    pub counters: CudaSlice<u32>,
    /// The split step's workspace (`Tile::split`); `None` in views of one lane of a slab,
    /// which take the fused kernel instead.
    pub prep: Option<Box<PrepBufs>>,
}

impl GdnState {
    pub fn zeros(gpu: &Gpu, dims: &GdnDims, ty: StateType, lanes: usize) -> Result<Self, GpuError> {
        Ok(GdnState {
            lanes,
            s: StateBuf::zeros(gpu, ty, lanes * dims.state_len())?,
            conv: gpu.alloc_zeros(lanes * dims.conv_state_len())?,
            counters: gpu.alloc_zeros(lanes * dims.hk)?,
            prep: Some(Box::new(PrepBufs::zeros(gpu, dims, lanes)?)),
        })
    }
}

/// The split step's workspace for one token a lane (f32). `gdn/prep.cu`'s outputs: q, k
/// `[lanes][HK][dk]`, v `[lanes][HV][dv]`, g, beta `[lanes][HV]` (33 KB a lane at the
/// 27B's dims); `gdn/conv_step.cu`'s: mixed `[lanes][conv_ld]`, each lane's q, k and v
/// convolved (41 KB a lane).
pub struct PrepBufs {
    pub q: CudaSlice<f32>,
    pub k: CudaSlice<f32>,
    pub v: CudaSlice<f32>,
    pub g: CudaSlice<f32>,
    pub beta: CudaSlice<f32>,
    pub mixed: CudaSlice<f32>,
}

impl PrepBufs {
    pub fn zeros(gpu: &Gpu, d: &GdnDims, lanes: usize) -> Result<Self, GpuError> {
        Ok(PrepBufs {
            q: alloc(gpu, lanes * d.key_dim())?,
            k: alloc(gpu, lanes * d.key_dim())?,
            v: alloc(gpu, lanes * d.value_dim())?,
            g: alloc(gpu, lanes * d.hv)?,
            beta: alloc(gpu, lanes * d.hv)?,
            mixed: alloc(gpu, lanes * conv_ld(d))?,
        })
    }
}

/// [`PrepBufs::mixed`]'s row: conv_dim rounded up to 4 floats, so that every row starts
/// 16 bytes aligned (the update with the gates in reads q and k in 16-byte slices).
pub fn conv_ld(d: &GdnDims) -> usize {
    d.conv_dim().next_multiple_of(4)
}

/// Raw device inputs of the mixer for `lanes` x `t` tokens (addresses, so that callers can
/// point into larger buffers): `mixed [lanes][t][conv_dim]`, `a`, `b [lanes][t][HV]`, their
/// token rows `mixed_ld` and `ab_ld` floats apart (0: dense, conv_dim and HV). Only the
/// prologues (`gdn/prep.cu`, `gdn/prep_warp.cu`: the split step's first half and the
/// prefill's) read rows further apart, e.g. the stacked in-projection's column blocks in
/// place; the fused recurrent kernels take dense inputs.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawInputs {
    pub mixed: u64,
    pub a: u64,
    pub b: u64,
    pub mixed_ld: usize,
    pub ab_ld: usize,
}

impl RawInputs {
    /// Whether the rows are dense (what the fused recurrent kernels read).
    pub fn dense(&self, d: &GdnDims) -> bool {
        [0, d.conv_dim()].contains(&self.mixed_ld) && [0, d.hv].contains(&self.ab_ld)
    }

    /// The token rows' strides in floats, `(mixed, a and b)`, 0 read as dense.
    pub fn strides(&self, d: &GdnDims) -> (usize, usize) {
        let or = |ld: usize, dense: usize| if ld == 0 { dense } else { ld };
        (or(self.mixed_ld, d.conv_dim()), or(self.ab_ld, d.hv))
    }

    /// Token row `i` alone (one token: dense, its strides do not matter).
    pub fn row(&self, i: usize, d: &GdnDims) -> RawInputs {
        let (mixed_ld, ab_ld) = self.strides(d);
        RawInputs {
            mixed: self.mixed + (i * mixed_ld * 4) as u64,
            a: self.a + (i * ab_ld * 4) as u64,
            b: self.b + (i * ab_ld * 4) as u64,
            ..Default::default()
        }
    }
}

/// Where a record launch writes: `[lanes][t][HV][dv][dk]` states of the state's type and
/// `[lanes][t][conv_dim][kc-1]` conv windows.
#[derive(Debug, Clone, Copy)]
pub struct RecordBufs {
    pub state: u64,
    pub conv: u64,
}

/// Queues the fused recurrent kernel. `out` (`[lanes][t][HV][dv]` f32) is required for
/// step and record, `rec` for record, `counts` (`[lanes]` i32, each <= t) for replay.
///
/// The launch is programmatic (PDL) where the device takes it: the kernel reads the state,
/// the conv state and the weights before it waits for the kernel ahead of it. So that
/// kernel must not write `st` (two launches on the same state need another kernel, e.g.
/// the output norm, or a host copy, between them); the inputs, `out`, `rec` and `counts`
/// may come from it.
#[allow(clippy::too_many_arguments)]
pub fn launch_recurrent(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    st: &mut GdnState,
    x: RawInputs,
    t: usize,
    out: Option<u64>,
    rec: Option<RecordBufs>,
    counts: Option<u64>,
) -> Result<(), GpuError> {
    let d = &w.dims;
    assert_eq!(
        st.s.ty(),
        route.state,
        "state type differs from the route's"
    );
    assert!(route.tile.fits(d.dk), "dk {} does not fit the tile", d.dk);
    assert_eq!(d.kc, route.kc);
    assert!(
        d.hk > 0 && d.hv.is_multiple_of(d.hk),
        "HV must be a multiple of HK"
    );
    assert_eq!(st.s.len(), st.lanes * d.state_len());
    match route.mode {
        Mode::Step => assert!(out.is_some()),
        Mode::Record => assert!(out.is_some() && rec.is_some()),
        Mode::Replay => assert!(counts.is_some()),
    }
    if st.lanes == 0 || t == 0 {
        return Ok(());
    }
    if route.tile.split {
        assert!(
            route.tile.serves(route.mode, t),
            "the split GDN step takes one token a lane in mode step"
        );
        if st.prep.is_none() {
            // A one-lane view of a slab has no workspace: the fused kernel serves it.
            let fused = RecurrentRoute::choose(route.mode, route.state, d)
                .expect("a fused tile fits wherever the split one does");
            return launch_recurrent(gpu, &fused, w, st, x, t, out, rec, counts);
        }
        return launch_split(gpu, route, w, st, x, out.expect("asserted above"));
    }
    assert!(
        x.dense(d) || st.lanes * t == 1,
        "the fused recurrent kernels read dense inputs (only the prologues take strides)"
    );
    let spec = route.spec();
    let kernel = gpu.kernel(&spec)?;
    let cfg = if route.tile.group > 0 {
        // gdn/grouped.cu: q/k of every token, q.k and the gates in dynamic shared memory;
        // gdn/staged.cu: the stages before them.
        let mut smem = 4 * t * (2 * route.tile.dk_max() + 1 + 2 * (d.hv / d.hk));
        if route.tile.stages > 0 {
            let rows = route.tile.cols_per_block();
            let stage = rows * route.tile.dk_max() * route.state.bytes() + rows * 2 * d.kc * 4;
            smem += route.tile.stages as usize * stage;
        }
        gpu.grant_shared_memory(kernel.function(), smem, &spec.entry)?;
        LaunchConfig {
            grid_dim: ((d.hk * route.tile.parts(d)) as u32, 1, st.lanes as u32),
            block_dim: (route.tile.warps * 32, 1, 1),
            shared_mem_bytes: smem as u32,
        }
    } else {
        column_tiles(route, d, st.lanes)
    };
    let sp = st.s.ptr(gpu);
    let (out_p, rec_s, rec_c, cnt) = (
        out.unwrap_or(0),
        rec.map(|r| r.state).unwrap_or(0),
        rec.map(|r| r.conv).unwrap_or(0),
        counts.unwrap_or(0),
    );
    let dims_i = [t as i32, d.hk as i32, d.hv as i32, d.dk as i32, d.dv as i32];
    let mut b = gpu.launch(&kernel);
    b.arg(&x.mixed)
        .arg(&x.a)
        .arg(&x.b)
        .arg(&w.conv_w)
        .arg(&w.a_log)
        .arg(&w.dt_bias)
        .arg(&st.conv)
        .arg(&sp)
        .arg(&out_p)
        .arg(&rec_s)
        .arg(&rec_c)
        .arg(&cnt)
        .arg(&st.counters);
    for v in &dims_i {
        b.arg(v);
    }
    // SAFETY: the arguments match the template's signature; the asserts above and the
    // callers' buffer sizes bound every access.
    unsafe { b.launch(cfg) }.map_err(launch_err(&spec))?;
    Ok(())
}

/// The launch of a kernel with one block per column tile of one value head of one lane
/// (`gdn/recurrent.cu` and `gdn/update.cu`): grid (tiles, HV, lanes).
fn column_tiles(route: &RecurrentRoute, d: &GdnDims, lanes: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            d.dv.div_ceil(route.tile.cols_per_block()) as u32,
            d.hv as u32,
            lanes as u32,
        ),
        block_dim: (route.tile.warps * 32, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The prologues' five outputs (`gdn/prep.cu`, `gdn/prep_warp.cu`), in a prefill
/// workspace or a state's [`PrepBufs`].
struct PrepOut<'a> {
    /// q, k and v: f32, or f16 where the prologue's `f16_out` says (device pointers).
    q: u64,
    k: u64,
    v: u64,
    g: &'a CudaSlice<f32>,
    beta: &'a CudaSlice<f32>,
}

/// A prologue instantiation (`gdn/prep.cu` or `gdn/prep_warp.cu`: one signature) and its
/// launch shape, made by [`PrepKernel::decode`] or [`PrepKernel::prefill`].
struct PrepKernel {
    spec: KernelSpec,
    /// Threads a block.
    block: u32,
    /// Tokens a block.
    tokc: usize,
    /// Blocks along x: the kernel's channel groups (`prep.cu`: HK + HV heads;
    /// `prep_warp.cu`: q, k and v apart, 2 HK + HV).
    groups: usize,
}

impl PrepKernel {
    /// The split decode step's: `gdn/prep.cu`, one token, a block of 256 per head.
    fn decode(d: &GdnDims) -> Self {
        PrepKernel {
            spec: prep_decode_spec(d.kc),
            block: PREP_DECODE_BLOCK,
            tokc: 1,
            groups: d.hk + d.hv,
        }
    }

    /// The prefill's: `gdn/prep_warp.cu`, 4 warps of 4 tokens, a block per channel group;
    /// q, k and v as f16 with `f16_out`.
    fn prefill(d: &GdnDims, f16_out: bool) -> Self {
        PrepKernel {
            spec: prep_spec(d.kc, f16_out),
            block: PREP_WARPS * 32,
            tokc: PREP_TPW * PREP_WARPS as usize,
            groups: 2 * d.hk + d.hv,
        }
    }
}

/// Queues a prologue over `seqs` sequences of `t` tokens: `out` gets their prepared inputs
/// (sized for `seqs x t` by the caller), `conv` (`[seqs][conv_dim][kc-1]`) the sequences'
/// new windows.
#[allow(clippy::too_many_arguments)]
fn launch_prep(
    gpu: &Gpu,
    PrepKernel {
        spec,
        block,
        tokc,
        groups,
    }: PrepKernel,
    w: &GdnWeights,
    conv: &CudaSlice<f32>,
    x: RawInputs,
    out: PrepOut,
    seqs: usize,
    t: usize,
) -> Result<(), GpuError> {
    let d = &w.dims;
    let kernel = gpu.kernel(&spec)?;
    let cfg = LaunchConfig {
        grid_dim: (groups as u32, seqs as u32, t.div_ceil(tokc) as u32),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    };
    let dims_i = [t as i32, d.hk as i32, d.hv as i32, d.dk as i32, d.dv as i32];
    let (in_ld, ab_ld) = x.strides(d);
    let (in_ld, ab_ld) = (in_ld as i64, ab_ld as i64);
    let mut b = gpu.launch(&kernel);
    b.arg(&x.mixed)
        .arg(&x.a)
        .arg(&x.b)
        .arg(&w.conv_w)
        .arg(&w.a_log)
        .arg(&w.dt_bias)
        .arg(conv)
        .arg(&out.q)
        .arg(&out.k)
        .arg(&out.v)
        .arg(out.g)
        .arg(out.beta);
    for v in &dims_i {
        b.arg(v);
    }
    b.arg(&in_ld).arg(&ab_ld);
    // SAFETY: matches the prologues' signature; the caller sized the outputs and the conv
    // state for seqs x t, the inputs hold [seqs][t][...] rows as RawInputs says.
    unsafe { b.launch(cfg) }.map_err(launch_err(&spec))?;
    Ok(())
}

/// The split step (`Tile::split`): its first launch over the lanes as sequences of one
/// token (it also advances the conv state), then `gdn/update.cu`. Both launch
/// programmatically: the first loads the conv weights and windows before it waits for the
/// kernel ahead, the update its state slice before it waits for the first.
fn launch_split(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    st: &mut GdnState,
    x: RawInputs,
    out: u64,
) -> Result<(), GpuError> {
    let d = &w.dims;
    assert!(
        2 * d.dk <= PREP_DECODE_BLOCK as usize && d.dv <= PREP_DECODE_BLOCK as usize,
        "the split step's prep takes 2 dk and dv up to {PREP_DECODE_BLOCK}"
    );
    launch_split_prep(gpu, route, w, st, x)?;
    launch_split_update(gpu, route, w, st, x, out)
}

/// The split step's first half into the state's [`PrepBufs`]: `gdn/prep.cu` (the conv,
/// the gates and the q/k norms), or with `gin` `gdn/conv_step.cu` (the conv alone).
pub(super) fn launch_split_prep(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    st: &GdnState,
    x: RawInputs,
) -> Result<(), GpuError> {
    let d = &w.dims;
    let p = st.prep.as_ref().expect("the caller checked");
    if route.tile.gin {
        let spec = conv_step_spec(d.kc);
        let kernel = gpu.kernel(&spec)?;
        let cfg = LaunchConfig {
            grid_dim: (
                d.conv_dim().div_ceil(CONV_STEP_BLOCK as usize) as u32,
                st.lanes as u32,
                1,
            ),
            block_dim: (CONV_STEP_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let (in_ld, _) = x.strides(d);
        let (cd, in_ld, y_ld) = (d.conv_dim() as i32, in_ld as i64, conv_ld(d) as i64);
        let mut b = gpu.launch(&kernel);
        b.arg(&x.mixed)
            .arg(&w.conv_w)
            .arg(&st.conv)
            .arg(&p.mixed)
            .arg(&cd)
            .arg(&in_ld)
            .arg(&y_ld);
        // SAFETY: matches gdn/conv_step.cu; the conv state holds st.lanes windows, the
        // inputs st.lanes token rows as RawInputs says, PrepBufs::mixed st.lanes rows of
        // conv_ld.
        unsafe { b.launch(cfg) }.map_err(launch_err(&spec))?;
        return Ok(());
    }
    let prepared = PrepOut {
        q: dptr(gpu, &p.q),
        k: dptr(gpu, &p.k),
        v: dptr(gpu, &p.v),
        g: &p.g,
        beta: &p.beta,
    };
    // (PrepBufs::zeros sized the outputs for st.lanes sequences of one token.)
    launch_prep(
        gpu,
        PrepKernel::decode(d),
        w,
        &st.conv,
        x,
        prepared,
        st.lanes,
        1,
    )
}

/// The split step's second half: `gdn/update.cu` from the state's [`PrepBufs`], with
/// `gin` also from the raw gates of `x` (the step's inputs: its a and b rows).
pub(super) fn launch_split_update(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    st: &mut GdnState,
    x: RawInputs,
    out: u64,
) -> Result<(), GpuError> {
    let p = st.prep.as_ref().expect("the caller checked");
    let inputs = match route.tile.gin {
        true => UpdateInputs::Convolved(RawInputs {
            mixed: dptr(gpu, &p.mixed),
            mixed_ld: conv_ld(&w.dims),
            ..x
        }),
        false => UpdateInputs::Prepared(p),
    };
    launch_update(gpu, route, w, st, inputs, out)
}

/// The gates-in update (`gdn/update.cu` with `gin`, a split route with `Tile::gin`) of
/// every lane of `st`, one token each: `x.mixed` holds each lane's q, k and v convolved
/// (SiLU applied, not normed), rows `x.mixed_ld` floats apart, 16-byte aligned; `x.a` and
/// `x.b` the raw gates. Its inputs convolved by `gdn/conv_step.cu` (the split step) or by
/// the in-projection's conv epilogue (`linear_mma_exact::with_conv_epilogue`).
pub fn launch_update_convolved(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    st: &mut GdnState,
    x: RawInputs,
    out: u64,
) -> Result<(), GpuError> {
    launch_update(gpu, route, w, st, UpdateInputs::Convolved(x), out)
}

/// What `gdn/update.cu` reads besides the state.
enum UpdateInputs<'a> {
    /// `gdn/prep.cu`'s outputs (q, k and v normed, the gates).
    Prepared(&'a PrepBufs),
    /// With `gin`: q, k and v convolved, the raw gates ([`launch_update_convolved`]).
    Convolved(RawInputs),
}

fn launch_update(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    st: &GdnState,
    inputs: UpdateInputs,
    out: u64,
) -> Result<(), GpuError> {
    let d = &w.dims;
    assert!(route.tile.split, "{route:?} is not a split-step route");
    let spec = route.spec();
    let kernel = gpu.kernel(&spec)?;
    let cfg = column_tiles(route, d, st.lanes);
    let sp = st.s.ptr(gpu);
    let dims_i = [d.hk as i32, d.hv as i32, d.dk as i32, d.dv as i32];
    let mut b = gpu.launch(&kernel);
    let mut strides = None;
    match &inputs {
        UpdateInputs::Prepared(p) => {
            assert!(!route.tile.gin, "{route:?} takes convolved inputs");
            b.arg(&p.q).arg(&p.k).arg(&p.v).arg(&p.g).arg(&p.beta);
        }
        UpdateInputs::Convolved(x) => {
            assert!(route.tile.gin, "{route:?} takes prepared inputs");
            let (in_ld, ab_ld) = x.strides(d);
            assert!(
                x.mixed.is_multiple_of(16) && in_ld.is_multiple_of(4),
                "the gates-in update reads q and k in 16-byte slices: rows 16-byte aligned"
            );
            strides = Some((in_ld as i64, ab_ld as i64));
            b.arg(&x.mixed)
                .arg(&x.a)
                .arg(&x.b)
                .arg(&w.a_log)
                .arg(&w.dt_bias);
        }
    }
    b.arg(&sp).arg(&out);
    for v in &dims_i {
        b.arg(v);
    }
    if let Some((in_ld, ab_ld)) = &strides {
        b.arg(in_ld).arg(ab_ld);
    }
    let ahead = match route.tile.prefetch_percent() {
        0 => None,
        pct => Some(prefetch_ahead(gpu, &kernel, &spec, &cfg, pct)?),
    };
    if let Some(ahead) = &ahead {
        b.arg(ahead);
    }
    // SAFETY: matches gdn/update.cu (with `gin` for convolved inputs: st.lanes rows of them
    // and of the gates as RawInputs says, aligned as asserted); the state holds st.lanes x
    // HV x dv x dk (asserted by the caller), `out` [lanes][HV][dv] as for the fused step.
    unsafe { b.launch(cfg) }.map_err(launch_err(&spec))?;
    Ok(())
}

/// The update's `ahead` ([`Tile::prefetch_percent`]): `pct` percent of the
/// blocks that fit on the GPU at once, at most the grid.
fn prefetch_ahead(
    gpu: &Gpu,
    kernel: &crate::gpu::Kernel,
    spec: &KernelSpec,
    cfg: &LaunchConfig,
    pct: usize,
) -> Result<i32, GpuError> {
    let per_sm = crate::ops::linear_exact::blocks_per_sm(
        gpu,
        kernel.function(),
        &spec.entry,
        cfg.block_dim.0,
        0,
    )? as usize;
    let resident = per_sm * gpu.props().sm_count as usize;
    let grid = (cfg.grid_dim.0 * cfg.grid_dim.1 * cfg.grid_dim.2) as usize;
    Ok((resident * pct / 100).min(grid) as i32)
}

/// Queues the gated RMSNorm: `y[r] = o[r] * rsqrt(mean(o[r]^2) + eps) * w * silu(z[r])`
/// over `rows` rows of dv (f32 in; `y` f32 or bf16 per `out`), rows = tokens x HV; `z`'s
/// token rows `z_ld` floats apart (`None`: dense, HV x dv).
#[allow(clippy::too_many_arguments)]
pub fn launch_out_norm(
    gpu: &Gpu,
    out: crate::ops::DType,
    o: u64,
    z: u64,
    w: &GdnWeights,
    y: u64,
    rows: usize,
    z_ld: Option<usize>,
) -> Result<(), GpuError> {
    if rows == 0 {
        return Ok(());
    }
    let spec = norm_spec(out);
    let kernel = gpu.kernel(&spec)?;
    let cfg = LaunchConfig {
        grid_dim: (rows as u32, 1, 1),
        block_dim: (NORM_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let dv = w.dims.dv as i32;
    let heads = w.dims.hv as i32;
    let z_ld = z_ld.unwrap_or(w.dims.value_dim()) as i64;
    let mut b = gpu.launch(&kernel);
    b.arg(&o)
        .arg(&z)
        .arg(&w.norm_w)
        .arg(&y)
        .arg(&dv)
        .arg(&w.eps)
        .arg(&heads)
        .arg(&z_ld);
    // SAFETY: matches the template; the caller sizes o, y to rows * dv and z to rows / HV
    // token rows of z_ld floats (rows a multiple of HV).
    unsafe { b.launch(cfg) }.map_err(launch_err(&spec))?;
    Ok(())
}

fn alloc<T: DeviceRepr + ValidAsZeroBits>(gpu: &Gpu, n: usize) -> Result<CudaSlice<T>, GpuError> {
    gpu.alloc_zeros(n.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_names_are_unique() {
        let specs = instantiations();
        let mut names: Vec<_> = specs.iter().map(|s| s.entry.clone()).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
    }

    #[test]
    #[should_panic(expected = "pairs only with the other f16 stage")]
    fn an_f16_scan_needs_the_f16_wu() {
        PrefillStages::route(ChunkMath::Tf32, ChunkMath::F16);
    }

    #[test]
    fn only_the_f16_route_writes_q_k_and_v_as_f16() {
        // The f16 `wu` and scan read q, k and v as f16, which only the `_qkvh` prologue
        // writes.
        for route in PrefillStages::ROUTES {
            let f16 = route.wu_math == ChunkMath::F16;
            assert_eq!(route.f16_intermediates(), f16);
            let prep = route.route_name();
            assert_eq!(prep.contains("_qkvh+"), f16, "{prep}");
        }
        let names: Vec<_> = instantiations().into_iter().map(|s| s.entry).collect();
        assert!(names.contains(&prep_spec(4, true).entry));
        assert!(names.contains(&prep_spec(4, false).entry));
    }

    #[test]
    fn the_tensor_core_chunk_stages_fit_their_shared_memory() {
        // One scan block per SM, two TF32 wu blocks and three f16 ones per SM (sm_90: 227 KB
        // per block, 228 KB per SM).
        for dvt in CHUNK_F16_DVTS {
            assert!(chunk_f16_smem(dvt, 2) <= 227 * 1024, "f16 dvt {dvt}");
        }
        assert_eq!(chunk_f16_smem(64, 2), 197_120);
        // Two one-buffer 32-column blocks an SM (228 KB, 1 KB reserved a block).
        assert!(2 * (chunk_f16_smem(32, 1) + 1024) <= 228 * 1024);
        for dvt in CHUNK_TC_DVTS {
            assert!(chunk_tc_smem(dvt) <= 227 * 1024, "dvt {dvt}");
        }
        assert!(2 * (chunk_wu_tc_smem() + 1024) <= 228 * 1024);
        assert!(3 * (chunk_wu_f16_smem() + 1024) <= 228 * 1024);
        // The wgmma scan: one block an SM (its stages, two o tiles and the alignment).
        for stages in CHUNK_WG_STAGE_COUNTS {
            assert!(
                chunk_wg_smem(stages) <= 227 * 1024,
                "wgmma scan, {stages} stages"
            );
            assert!(
                chunk_wgs_smem(stages) <= 227 * 1024,
                "two-warpgroup wgmma scan, {stages} stages"
            );
        }
        assert_eq!(chunk_wg_smem(2), 2 * 74_752 + 32_768 + 1024);
        assert!(PrefillStages::ROUTES.contains(&PrefillStages::FAST.with_wgmma_scan()));
        assert!(CHUNK_TC_DVTS.contains(&CHUNK_TC_DVT));
        assert!(PrefillStages::ROUTES.contains(&PrefillStages::ALL));
        assert!(PrefillStages::ROUTES.contains(&PrefillStages::FAST));
        assert!(
            PrefillStages::ROUTES.contains(&PrefillStages::route(ChunkMath::F32, ChunkMath::F32))
        );
    }

    #[test]
    fn the_decode_step_and_its_norm_launch_programmatically() {
        // Their templates wait (PDL) after the loads of what the step does not write; the
        // registry test checks that each such spec's source calls the wait.
        for mode in Mode::ALL {
            for state in StateType::ALL {
                for tile in tiles(state) {
                    let r = RecurrentRoute {
                        mode,
                        state,
                        tile,
                        kc: 4,
                    };
                    assert!(r.spec().programmatic, "{}", r.spec().entry);
                }
            }
        }
        for out in crate::ops::DType::ALL {
            assert!(norm_spec(out).programmatic);
        }
        // The prefill's chunk stages do not wait: they stay plain launches.
        assert!(!chunk_scan_spec(CHUNK_DVT).programmatic);
    }

    #[test]
    fn the_real_shapes_get_vector_tiles() {
        for st in StateType::ALL {
            for d in [QWEN36_27B, QWEN36_35B_A3B] {
                let r = RecurrentRoute::choose(Mode::Step, st, &d).unwrap();
                assert!(r.tile.vec);
            }
            // Odd dk falls back to the scalar tile.
            let r = RecurrentRoute::choose_for_lanes(Mode::Step, st, &QWEN36_27B, 8).unwrap();
            assert!(
                tiles(st).contains(&r.tile),
                "the heuristic picks a registered tile"
            );
            let r = RecurrentRoute::choose(Mode::Step, st, &GdnDims::new(1, 1, 5, 7)).unwrap();
            assert!(!r.tile.vec);
        }
        assert_eq!(StateType::from_fp16_flag(true), StateType::F16);
    }

    #[test]
    fn the_split_step_serves_one_token_in_step_mode_from_five_lanes() {
        let d = QWEN36_27B;
        for st in StateType::ALL {
            let r = RecurrentRoute::choose_for_lanes(Mode::Step, st, &d, 8).unwrap();
            assert!(r.tile.split && r.tile.fits(d.dk), "{st:?}");
            assert!(
                r.spec().entry.starts_with("gdn_update_"),
                "{}",
                r.spec().entry
            );
            assert!(r.tile.serves(Mode::Step, 1));
            assert!(!r.tile.serves(Mode::Step, 2) && !r.tile.serves(Mode::Record, 1));
            // Fewer lanes, or another mode: a fused tile.
            assert!(
                !RecurrentRoute::choose_for_lanes(Mode::Step, st, &d, 4)
                    .unwrap()
                    .tile
                    .split
            );
            assert!(
                !RecurrentRoute::choose_for_lanes(Mode::Record, st, &d, 8)
                    .unwrap()
                    .tile
                    .split
            );
            assert!(RecurrentRoute::all_for(Mode::Step, st, &d)
                .iter()
                .any(|r| r.tile.split));
            for mode in [Mode::Record, Mode::Replay] {
                assert!(RecurrentRoute::all_for(mode, st, &d)
                    .iter()
                    .all(|r| !r.tile.split));
            }
        }
        // The update kernel's column group is 16 lanes of 8 elements: dk up to 128, a
        // multiple of 8.
        let t = split_tile(2, 2);
        assert!(t.fits(128) && t.fits(64) && !t.fits(256) && !t.fits(60));
        assert_eq!(t.cols_per_block(), 8);
        // Instantiated in step mode only.
        let entries: Vec<String> = instantiations().into_iter().map(|s| s.entry).collect();
        assert!(
            entries.iter().any(|e| e == "gdn_update_f32_l16e8r2w2vx"),
            "{entries:?}"
        );
        assert!(
            entries.iter().all(|e| !e.contains("vx_k")),
            "no record/replay split entries"
        );
    }

    #[test]
    fn the_gates_in_split_tiles_render_their_own_update_and_leave_the_prep_forms_alone() {
        let jit = crate::jit::Jit::global().expect("templates");
        for st in StateType::ALL {
            let route = |tile| RecurrentRoute {
                mode: Mode::Step,
                state: st,
                tile,
                kc: 4,
            };
            let (prep, gin) = (route(split_tile(2, 2)), route(split_gin_tile(2, 2)));
            assert!(gin.tile.fits(128) && gin.tile.serves(Mode::Step, 1));
            assert!(!gin.tile.serves(Mode::Step, 2));
            // (The tiles' own prefetch: this process has no NINFER_GDN_PREFETCH.)
            assert_eq!(
                prefetch_env(),
                None,
                "run the tests without NINFER_GDN_PREFETCH"
            );
            assert_eq!(
                (prep.tile.prefetch_percent(), gin.tile.prefetch_percent()),
                (0, GIN_PREFETCH_PERCENT)
            );
            let (ep, eg) = (prep.spec().entry, gin.spec().entry);
            assert_eq!(
                eg,
                format!("{ep}gp"),
                "the gin entry: the prep form's + g, prefetching"
            );
            let (sp, sg) = (
                jit.render(&prep.spec()).unwrap(),
                jit.render(&gin.spec()).unwrap(),
            );
            // The gin kernel takes the raw gates and the stacked rows; the prep form keeps
            // the prepared inputs (and its source, which the tuning profile's hash covers).
            assert!(sg.contains("a_in") && sg.contains("in_ld") && !sg.contains("beta["));
            assert!(!sp.contains("a_in") && sp.contains("beta["));
            // The prefetch adds its argument and its hint: to the gin form by default, to
            // the prep form only where asked (its default source is what the profile's
            // hashes cover).
            let pf = jit.render(&prep.spec().param("prefetch", true)).unwrap();
            for (src, prefetches) in [(&sp, false), (&pf, true), (&sg, true)] {
                assert_eq!(src.contains(", int ahead)"), prefetches);
                assert_eq!(src.contains("cp.async.bulk.prefetch.L2"), prefetches);
            }
        }
        let conv = jit.render(&conv_step_spec(4)).unwrap();
        assert!(conv.contains("gdn_conv_step_b256_k4(") && crate::jit::calls_pdl_wait(&conv));
        // A gin tile is a split tile.
        let bad = Tile {
            split: false,
            ..split_gin_tile(2, 2)
        };
        assert!(!bad.fits(128));
    }
}
