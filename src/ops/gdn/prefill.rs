//! The GDN chunked prefill (the CUDA routes for T >= a chunk): the chunk stages' kernel
//! specs and shared-memory sizes, [`ChunkMath`], the workspace, [`PrefillStages`] (the
//! route: which `wu` and which scan), and their launches. The prefill's prologue
//! (`gdn/prep_warp.cu`, shared with the split decode step's spec builder) and the state
//! types are in the parent module.

use super::*;
pub(super) const CHUNK_DKMAX: usize = 128;
/// Columns of S per scan block: 16 (bench/gdn run 5, 4096 tokens: 1.72 ms; 32: 1.84 ms;
/// 64: 2.39 ms).
pub(super) const CHUNK_DVT: usize = 16;
/// Scan column widths that are compiled (the bench times each; the op uses CHUNK_DVT).
pub const CHUNK_DVTS: [usize; 3] = [16, 32, 64];
/// Column widths of the tensor-core scan that are compiled (each with both splits): 64
/// only (bench/gdn run 8, 4096 tokens, TF32: 562 us; 32: 859 us; 16: 1156 us; the losers
/// were dropped, as they were only timed, not qualified, there).
pub const CHUNK_TC_DVTS: [usize; 1] = [64];
/// Columns of S per tensor-core scan block.
pub(super) const CHUNK_TC_DVT: usize = 64;
/// Column widths of the f16 scan that are compiled; the route takes [`CHUNK_TC_DVT`].
pub const CHUNK_F16_DVTS: [usize; 2] = [64, 32];
/// Warps of an f16 scan block: 16 (bench/gdn run 16: 8 warps, one block an SM, issued
/// an instruction every 7.1 cycles a warp; the scan is latency bound).
const CHUNK_F16_WARPS: usize = 16;

/// How a chunk stage of the prefill does its products (`wu`: the Gram matrices and, on
/// tensor cores, T = (I + A)^-1 times the right-hand sides; scan: W S, Q S, P V', K^T V').
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ChunkMath {
    /// f32 FMAs on CUDA cores (`gdn/chunk.cu`; `wu` solves by forward substitution).
    F32,
    /// Tensor cores, TF32 inputs (10 mantissa bits), f32 accumulation (`gdn/chunk_tc.cu`).
    Tf32,
    /// Tensor cores, 3xTF32: each input split into hi + lo TF32 parts, three products
    /// (about f32 accuracy at three times the tensor-core work).
    Tf32x3,
    /// Tensor cores, f16 operands (10 mantissa bits, as TF32; f32 accumulation) fed by
    /// ldmatrix (`wu`: `gdn/chunk_wu_f16.cu`; the scan: `gdn/chunk_f16.cu`, the state in
    /// registers). The two stages pass W, P, Q and K as f16 (rounded once, where the scan
    /// would round them for its products anyway), so an f16 stage pairs only with the
    /// other f16 stage.
    F16,
}

impl ChunkMath {
    pub const ALL: [ChunkMath; 4] = [
        ChunkMath::F32,
        ChunkMath::Tf32,
        ChunkMath::Tf32x3,
        ChunkMath::F16,
    ];

    pub fn short(self) -> &'static str {
        match self {
            ChunkMath::F32 => "f32",
            ChunkMath::Tf32 => "tf32",
            ChunkMath::Tf32x3 => "3xtf32",
            ChunkMath::F16 => "f16",
        }
    }

    fn split(self) -> usize {
        match self {
            ChunkMath::Tf32 => 1,
            ChunkMath::Tf32x3 => 3,
            ChunkMath::F32 => panic!("the f32 chunk stages are gdn/chunk.cu"),
            ChunkMath::F16 => panic!("the f16 stages are gdn/chunk_wu_f16.cu and chunk_f16.cu"),
        }
    }
}

/// The route the engine's prefill takes: (`wu`, scan). Both chunk stages on tensor cores in
/// 3xTF32, which keeps the f32 route's accuracy (bench/gdn run 8: worst relative L2 1.4e-6
/// against 1.2e-6, allowance 1e-4), so the engine's exact mode (GPU = CPU to ~1e-6) holds,
/// in 0.57x the f32 route's time at 4096 tokens. [`PrefillStages::FAST`] (both stages on
/// f16 operands) takes 0.41x this route's time with an error of one 10-bit rounding
/// (~6e-4): for inexact modes.
pub const PREFILL_DEFAULT: (ChunkMath, ChunkMath) = (ChunkMath::Tf32x3, ChunkMath::Tf32x3);

pub(super) fn chunk_wu_spec() -> KernelSpec {
    KernelSpec::new("gdn_chunk", "gdn/chunk.cu", "gdn_chunk_wu_d128")
        .param("stage", "wu")
        .param("dkmax", CHUNK_DKMAX)
}

pub(super) fn chunk_scan_spec(dvt: usize) -> KernelSpec {
    KernelSpec::new(
        "gdn_chunk",
        "gdn/chunk.cu",
        format!("gdn_chunk_scan_d{CHUNK_DKMAX}_v{dvt}"),
    )
    .param("stage", "scan")
    .param("dkmax", CHUNK_DKMAX)
    .param("dvt", dvt)
}

pub(super) fn chunk_tc_spec(dvt: usize, math: ChunkMath) -> KernelSpec {
    KernelSpec::new(
        "gdn_chunk_tc",
        "gdn/chunk_tc.cu",
        format!("gdn_chunk_scan_{}_d{CHUNK_DKMAX}_v{dvt}", math.short()),
    )
    .param("stage", "scan")
    .param("dkmax", CHUNK_DKMAX)
    .param("dvt", dvt)
    .param("split", math.split())
}

/// Warps of an f16 scan block of `dvt` columns: 16 need dvt / 4 columns a warp in pairs
/// of n-tiles, so dvt 32 keeps 8.
fn f16_scan_warps(dvt: usize) -> usize {
    if dvt >= 64 {
        CHUNK_F16_WARPS
    } else {
        8
    }
}

/// The f16 scan of `dvt` columns with `bufs` (2: every input prefetched a chunk ahead
/// into a second buffer; 1: one buffer, two 32-column blocks an SM).
pub(super) fn chunk_f16_spec(dvt: usize, bufs: usize) -> KernelSpec {
    let warps = f16_scan_warps(dvt);
    let (suffix, min_blocks) = match (bufs, dvt) {
        (2, _) => ("", 1),
        (_, 32) => ("_b1", 2),
        _ => ("_b1", 1),
    };
    KernelSpec::new(
        "gdn_chunk_f16",
        "gdn/chunk_f16.cu",
        format!("gdn_chunk_scan_f16_d{CHUNK_DKMAX}_v{dvt}_w{warps}{suffix}"),
    )
    .param("dvt", dvt)
    .param("warps", warps)
    .param("bufs", bufs)
    .param("min_blocks", min_blocks)
}

pub(super) fn chunk_wu_tc_spec(math: ChunkMath) -> KernelSpec {
    KernelSpec::new(
        "gdn_chunk_tc",
        "gdn/chunk_tc.cu",
        format!("gdn_chunk_wu_{}_d{CHUNK_DKMAX}", math.short()),
    )
    .param("stage", "wu")
    .param("dkmax", CHUNK_DKMAX)
    .param("split", math.split())
}

/// The f16 `wu` stage; `u_half`: U stored as f16 as well, W and U in whole sectors (for
/// the two-warpgroup scan's `u_half` form).
pub(super) fn chunk_wu_f16_spec(u_half: bool) -> KernelSpec {
    KernelSpec::new(
        "gdn_chunk_f16",
        "gdn/chunk_wu_f16.cu",
        format!("gdn_chunk_wu_f16_d{CHUNK_DKMAX}{}", u16_suffix(u_half)),
    )
    .param("u_half", u_half)
}

/// The entry-name suffix of the kernels that pass U as f16 (`u_half`).
fn u16_suffix(u_half: bool) -> &'static str {
    if u_half {
        "_u16"
    } else {
        ""
    }
}

/// Dynamic shared memory of the f16 `wu` stage: A and T's two scalings as f16 (V's f32
/// staging over them until they are written), G, beta, and K and Q as f16 (V over Q
/// later; padded rows; see `gdn/chunk_wu_f16.cu`). Three blocks fit an SM.
pub(super) fn chunk_wu_f16_smem() -> usize {
    let (d, c) = (CHUNK_DKMAX, 64);
    let a_t = 4 * c * (c + 4) + 2 * 2 * c * (c + 8);
    a_t.max(4 * c * d) + 4 * 2 * c + 2 * 2 * c * (d + 8)
}

/// Dynamic shared memory of the tensor-core `wu` stage: K and Q (the right-hand sides
/// over them later), A, T, G and beta (see `gdn/chunk_wu_tc.cuh`).
pub(super) fn chunk_wu_tc_smem() -> usize {
    let (d, c, nb) = (CHUNK_DKMAX, 64, 256);
    4 * ((2 * c * (d + 4)).max(c * (nb + 8)) + 2 * c * (c + 4) + 2 * c)
}

/// Dynamic shared memory of the tensor-core scan: W, Q, K, P (padded rows), S, V', G and
/// the decays (see `gdn/chunk_tc.cu`).
pub(super) fn chunk_tc_smem(dvt: usize) -> usize {
    let (d, c, ls) = (CHUNK_DKMAX, 64, dvt + 8);
    4 * (2 * c * (d + 4) + c * (d + 8) + c * (c + 4) + d * ls + c * ls + 2 * c)
}

/// Dynamic shared memory of the f16 scan: two chunks' W, Q, K and P, then S, V' and
/// diag(dec) V', all f16 (padded rows); two chunks' U tiles (f32, padded rows) and G (see
/// `gdn/chunk_f16.cu`).
pub(super) fn chunk_f16_smem(dvt: usize, bufs: usize) -> usize {
    let (d, c, lv) = (CHUNK_DKMAX, 64, dvt + 8);
    2 * (bufs * (3 * c * (d + 8) + c * (c + 8)) + d * lv + 2 * c * lv) + 4 * bufs * c * (lv + 1)
}

/// The f16 scan on warpgroup tensor cores (sm_90a; `gdn/chunk_wg.cu`): 64 columns of S a
/// block, `stages` chunks' inputs in flight.
pub(super) fn chunk_wg_spec(stages: usize) -> KernelSpec {
    KernelSpec::new(
        "gdn_chunk_wg",
        "gdn/chunk_wg.cu",
        format!("gdn_chunk_scan_wg_d{CHUNK_DKMAX}_v64_s{stages}"),
    )
    .param("stages", stages)
    .arch_specific()
}

/// The wgmma scan with the chunk split over two warpgroups (sm_90a;
/// `gdn/chunk_wgs.cu`): the state's chain in one, the chunk's output in the other.
/// `u_half`: U's tile as f16 (the f16 `wu`'s `u_half` form).
pub(super) fn chunk_wgs_spec(stages: usize, u_half: bool) -> KernelSpec {
    KernelSpec::new(
        "gdn_chunk_wgs",
        "gdn/chunk_wgs.cu",
        format!(
            "gdn_chunk_scan_wgs_d{CHUNK_DKMAX}_v64_s{stages}{}",
            u16_suffix(u_half)
        ),
    )
    .param("stages", stages)
    .param("u_half", u_half)
    .arch_specific()
}

/// Dynamic shared memory of the two-warpgroup scan: the one-warpgroup scan's, and S^T
/// (64 x 128) and two V'^T (64 x 64) as f16 for the output's warpgroup.
pub(super) fn chunk_wgs_smem(stages: usize) -> usize {
    chunk_wg_smem(stages) + 64 * CHUNK_DKMAX * 2 + 2 * 64 * 64 * 2
}

/// Input stages of the wgmma scan's route, and those compiled (the bench times each).
const CHUNK_WG_STAGES: usize = 2;
pub const CHUNK_WG_STAGE_COUNTS: [usize; 1] = [2];

/// Dynamic shared memory of the wgmma scan: `stages` x (W, Q, K, P and U's tile in the
/// 128-byte swizzle, G) rounded to 1 KB, two o staging tiles, and 1 KB to align the first
/// (see `gdn/chunk_wg.cu`).
pub(super) fn chunk_wg_smem(stages: usize) -> usize {
    let (c, d, v) = (64, CHUNK_DKMAX, 64);
    let stage = (3 * c * d * 2 + c * 128 + c * v * 4 + c * 4).div_ceil(1024) * 1024;
    stages * stage + 2 * c * v * 4 + 1024
}

/// Dynamic shared memory of the `wu` stage: q and k slices, A, the solve's columns, G and
/// beta (see `gdn/chunk.cu`).
fn chunk_wu_smem() -> usize {
    let (c, nt) = (64, 256);
    4 * (2 * c * 33 + c * (c + 4) + c * nt + 2 * c)
}

fn chunk_scan_smem(dvt: usize) -> usize {
    let (d, v, c) = (CHUNK_DKMAX, dvt, 64);
    4 * (3 * c * d + d * (v + 1) + c * c + c * (v + 1) + 2 * c)
}

pub(super) fn convert_spec(to_f32: bool) -> KernelSpec {
    let dir = if to_f32 { "to_f32" } else { "to_f16" };
    KernelSpec::new("gdn_convert", "gdn/convert.cu", format!("gdn_state_{dir}"))
        .param("direction", dir)
}

/// Device workspace of the chunked prefill for `seqs` x `t` tokens, sized for the routes it
/// was made for (see [`PrefillWorkspace::new`]).
pub struct PrefillWorkspace {
    pub seqs: usize,
    pub t: usize,
    /// q and k [token][HK][dk], v [token][HV][dv], W [token][HV][dk], P [token][HV][64]: f32,
    /// or f16 in their first half on the f16 route (which passes them between its stages as
    /// f16; then sized for that half where no route served is f32).
    pub q: CudaSlice<f32>,
    pub k: CudaSlice<f32>,
    pub v: CudaSlice<f32>,
    pub w: CudaSlice<f32>,
    pub p: CudaSlice<f32>,
    pub g: CudaSlice<f32>,
    pub beta: CudaSlice<f32>,
    pub u: CudaSlice<f32>,
    pub gc: CudaSlice<f32>,
    /// The f32 staging copy of an f16 state.
    pub s32: Option<CudaSlice<f32>>,
}

impl PrefillWorkspace {
    /// A workspace that serves each of `routes`. Not initialised: every element a stage
    /// reads, the stage before it wrote (qualify checks this on a workspace filled with NaN,
    /// [`PrefillWorkspace::poison`]), and a zero fill would cost a memset of the whole
    /// workspace (~450 MB at 4096 tokens of the 27B layer) on each prefill.
    pub fn new(
        gpu: &Gpu,
        d: &GdnDims,
        seqs: usize,
        t: usize,
        state: StateType,
        routes: &[PrefillStages],
    ) -> Result<Self, GpuError> {
        let n = seqs * t;
        let any_f32 = routes.iter().any(|r| !r.f16_intermediates());
        // The buffers that the f16 route passes as f16, in f32 elements.
        let wide = |len: usize| if any_f32 { len } else { len.div_ceil(2) };
        Ok(PrefillWorkspace {
            seqs,
            t,
            q: alloc_uninit(gpu, wide(n * d.key_dim()))?,
            k: alloc_uninit(gpu, wide(n * d.key_dim()))?,
            v: alloc_uninit(gpu, wide(n * d.value_dim()))?,
            w: alloc_uninit(gpu, wide(n * d.hv * d.dk))?,
            p: alloc_uninit(gpu, wide(n * d.hv * 64))?,
            g: alloc_uninit(gpu, n * d.hv)?,
            beta: alloc_uninit(gpu, n * d.hv)?,
            u: alloc_uninit(gpu, n * d.value_dim())?,
            gc: alloc_uninit(gpu, n * d.hv)?,
            s32: match state {
                StateType::F32 => None,
                StateType::F16 => Some(alloc_uninit(gpu, seqs * d.state_len())?),
            },
        })
    }

    /// Whether this workspace holds what `stages` reads and writes (q, k, v, W and P at
    /// the route's width).
    pub fn serves(&self, d: &GdnDims, stages: &PrefillStages) -> bool {
        let n = self.seqs * self.t;
        let per = if stages.f16_intermediates() { 2 } else { 1 };
        let holds = |b: &CudaSlice<f32>, len: usize| b.len() * per >= len;
        holds(&self.q, n * d.key_dim())
            && holds(&self.k, n * d.key_dim())
            && holds(&self.v, n * d.value_dim())
            && holds(&self.w, n * d.hv * d.dk)
            && holds(&self.p, n * d.hv * 64)
    }

    /// Fills every buffer with NaN (all-ones bytes, a NaN in f32 and in f16), so that a
    /// stage reading what no stage wrote shows in the result.
    pub fn poison(&mut self, gpu: &Gpu) -> Result<(), GpuError> {
        let s32 = self.s32.iter_mut();
        let all = [
            &mut self.q,
            &mut self.k,
            &mut self.v,
            &mut self.w,
            &mut self.p,
            &mut self.g,
            &mut self.beta,
            &mut self.u,
            &mut self.gc,
        ];
        for b in all.into_iter().chain(s32) {
            let bytes = b.len() * std::mem::size_of::<f32>();
            let (ptr, _sync) = b.device_ptr_mut(gpu.stream());
            // SAFETY: `ptr` addresses `bytes` bytes of this buffer, on this stream.
            unsafe { sys::cuMemsetD8Async(ptr, 0xff, bytes, gpu.stream().cu_stream()) }
                .result()
                .map_err(|e| GpuError::driver("poisoning the prefill workspace", e))?;
        }
        Ok(())
    }
}

/// A device buffer of `n` elements (at least one), not initialised.
fn alloc_uninit<T: DeviceRepr>(gpu: &Gpu, n: usize) -> Result<CudaSlice<T>, GpuError> {
    // SAFETY: the prefill's stages write each element before any stage reads it (see
    // PrefillWorkspace::new).
    unsafe { gpu.stream().alloc::<T>(n.max(1)) }
        .map_err(|e| GpuError::driver("allocating the prefill workspace", e))
}

/// Whether the chunked prefill serves these dims (its asserts, as a question).
pub fn prefill_supports(d: &GdnDims) -> bool {
    d.dk <= CHUNK_DKMAX
        && d.dk <= PREP_CHANNELS
        && d.dv <= PREP_CHANNELS
        && d.kc == 4
        && d.hk > 0
        && d.hv.is_multiple_of(d.hk)
}

/// Entry names of the default prefill's kernels, for reports.
pub fn prefill_route_name() -> String {
    PrefillStages::ALL.route_name()
}

/// Queues the chunked prefill of `seqs` sequences of `t` tokens each (the state's lanes
/// are the sequences): prologue (conv, gates, norms) then the two chunk stages, writing
/// `o [seqs][t][HV][dv]` f32 (before the output norm) and updating both states.
pub fn launch_prefill(
    gpu: &Gpu,
    w: &GdnWeights,
    st: &mut GdnState,
    x: RawInputs,
    ws: &mut PrefillWorkspace,
    out: u64,
) -> Result<(), GpuError> {
    launch_prefill_stages(gpu, w, st, x, ws, out, PrefillStages::ALL)
}

/// Which stages of the chunked prefill a launch queues (the benchmark times each alone;
/// the op always runs all three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefillStages {
    pub prep: bool,
    pub wu: bool,
    pub scan: bool,
    /// Columns of S per scan block (one of [`CHUNK_DVTS`], or of [`CHUNK_TC_DVTS`] on
    /// tensor cores).
    pub scan_dvt: usize,
    /// The `wu` stage's arithmetic.
    pub wu_math: ChunkMath,
    /// The scan's arithmetic.
    pub scan_math: ChunkMath,
    /// Input buffers of the f16 scan (2, or 1: see `gdn/chunk_f16.cu`; the wgmma scan's
    /// stages).
    pub scan_bufs: usize,
    /// The f16 scan on warpgroup tensor cores (`gdn/chunk_wg.cu`, sm_90a only, 64
    /// columns a block): see [`PrefillStages::runs_on`].
    pub scan_wgmma: bool,
    /// With `scan_wgmma`: the chunk over two warpgroups (`gdn/chunk_wgs.cu`).
    pub scan_two_wg: bool,
    /// The f16 `wu` stores U as f16 (one more rounding, half its bytes), and the scan,
    /// the two-warpgroup one only, reads it so.
    pub u_half: bool,
}

/// Whether [`PrefillStages::fastest`] takes U as f16 where it runs: only where the
/// environment sets `NINFER_GDN_HALF_U` (read once; an A/B switch for the engine's
/// `compare` until that route is the default, bench/gdn run 45).
fn half_u_opted_in() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| crate::gpu::env_switch("NINFER_GDN_HALF_U"))
}

/// One chunk stage's kernel as a route launches it.
struct StageKernel {
    spec: KernelSpec,
    smem: usize,
    threads: u32,
}

impl PrefillStages {
    /// The whole prefill, as the engine runs it.
    pub const ALL: PrefillStages = PrefillStages::route(PREFILL_DEFAULT.0, PREFILL_DEFAULT.1);

    /// Both chunk stages on f16 tensor cores (the scan two-buffer, 64 columns a block): the
    /// fastest route, within `qualify::ALLOW_CHUNK_TF32` of the oracle instead of the f32
    /// allowance (bench/gdn run 16e, H200: 608 us at 4096 tokens on the 27B layer, against
    /// 1,493 for [`PrefillStages::ALL`] and 788 with a TF32 `wu`; run 22, H100, with the
    /// f16 v of run 19: 514.0 us, the one-buffer 32-column scan's route 518.5-522.4).
    pub const FAST: PrefillStages = PrefillStages::route(ChunkMath::F16, ChunkMath::F16);

    /// The whole prefill with each chunk stage's products done as `wu` and `scan` say.
    /// Panics where one stage is f16 and the other is not (the f16 stages pass f16
    /// intermediates).
    pub const fn route(wu: ChunkMath, scan: ChunkMath) -> PrefillStages {
        let f16 = (
            wu as u8 == ChunkMath::F16 as u8,
            scan as u8 == ChunkMath::F16 as u8,
        );
        assert!(
            f16.0 == f16.1,
            "an f16 chunk stage pairs only with the other f16 stage"
        );
        PrefillStages {
            prep: true,
            wu: true,
            scan: true,
            scan_dvt: match scan {
                ChunkMath::F32 => CHUNK_DVT,
                _ => CHUNK_TC_DVT,
            },
            wu_math: wu,
            scan_math: scan,
            scan_bufs: 2,
            scan_wgmma: false,
            scan_two_wg: false,
            u_half: false,
        }
    }

    /// The f16 route with its scan on warpgroup tensor cores.
    pub const fn with_wgmma_scan(self) -> PrefillStages {
        self.with_wgmma_stages(CHUNK_WG_STAGES)
    }

    /// The same with `stages` chunks' inputs in flight (one of [`CHUNK_WG_STAGE_COUNTS`]).
    pub const fn with_wgmma_stages(self, stages: usize) -> PrefillStages {
        assert!(self.scan_math as u8 == ChunkMath::F16 as u8);
        PrefillStages {
            scan_dvt: 64,
            scan_bufs: stages,
            scan_wgmma: true,
            ..self
        }
    }

    /// The wgmma scan with the chunk over two warpgroups.
    pub const fn with_two_warpgroups(self) -> PrefillStages {
        assert!(self.scan_wgmma);
        PrefillStages {
            scan_two_wg: true,
            ..self
        }
    }

    /// The two-warpgroup scan's route with U as f16 between the stages, and `wu`'s W and U
    /// in whole-sector stores (bench/gdn run 45, H100, 27B layer, 4096 tokens: the route
    /// 388 -> 346 us, `wu` 161 -> 128, the scan 127 -> 118; worst relative L2 5.0e-4).
    pub const fn with_half_u(self) -> PrefillStages {
        assert!(self.wu_math as u8 == ChunkMath::F16 as u8);
        PrefillStages {
            u_half: true,
            ..self
        }
    }

    /// Whether the route's kernels run on `gpu` at `d`: the wgmma scan needs sm_90 and dk
    /// <= 128 a multiple of 8, dv a multiple of 4 (its 16-byte copies; of 8 with U as
    /// f16); the others run anywhere the prefill does.
    pub fn runs_on(&self, gpu: &Gpu, d: &GdnDims) -> bool {
        !self.scan_wgmma
            || (gpu.props().compute_capability == (9, 0)
                && d.dk <= CHUNK_DKMAX
                && d.dk.is_multiple_of(8)
                && d.dv.is_multiple_of(if self.u_half { 8 } else { 4 }))
    }

    /// [`PrefillStages::FAST`] with its scan on warpgroup tensor cores, the chunk over two
    /// warpgroups, where that runs (bench/gdn run 43, H100, 27B layer, 4096 tokens: the
    /// scan 146 -> 127 us against one warpgroup, the route 405 -> 386). With U as f16
    /// ([`PrefillStages::with_half_u`], run 45: the route 388 -> 346 us, qualified) only
    /// under `NINFER_GDN_HALF_U=1`: with it the engine's 8-lane `compare` on the bf16
    /// qwen3.6-mini flips one pick past the near-tie rule at the compare's own seed (lead
    /// 4.36x the row's RMS difference, 4 allowed), though over two seeds it flips fewer
    /// picks than U as f32 (run 46: 12 against 15).
    pub fn fastest(gpu: &Gpu, d: &GdnDims) -> PrefillStages {
        let wgs = PrefillStages::FAST.with_wgmma_scan().with_two_warpgroups();
        let u16 = wgs.with_half_u();
        if half_u_opted_in() && u16.runs_on(gpu, d) {
            return u16;
        }
        match wgs.runs_on(gpu, d) {
            true => wgs,
            false => PrefillStages::FAST,
        }
    }

    /// The same with the scan's columns a block and (f16) input buffers.
    pub const fn with_scan(self, dvt: usize, bufs: usize) -> PrefillStages {
        PrefillStages {
            scan_dvt: dvt,
            scan_bufs: bufs,
            ..self
        }
    }

    /// The routes qualify covers and the bench times: f32 throughout, the scan alone on
    /// tensor cores, both chunk stages on tensor cores (TF32, 3xTF32, f16).
    pub const ROUTES: [PrefillStages; 10] = [
        PrefillStages::route(ChunkMath::F32, ChunkMath::F32),
        PrefillStages::route(ChunkMath::F32, ChunkMath::Tf32),
        PrefillStages::route(ChunkMath::F32, ChunkMath::Tf32x3),
        PrefillStages::route(ChunkMath::Tf32, ChunkMath::Tf32),
        PrefillStages::route(ChunkMath::Tf32x3, ChunkMath::Tf32x3),
        PrefillStages::route(ChunkMath::F16, ChunkMath::F16),
        PrefillStages::route(ChunkMath::F16, ChunkMath::F16).with_scan(32, 1),
        PrefillStages::route(ChunkMath::F16, ChunkMath::F16).with_wgmma_scan(),
        PrefillStages::route(ChunkMath::F16, ChunkMath::F16)
            .with_wgmma_scan()
            .with_two_warpgroups(),
        PrefillStages::route(ChunkMath::F16, ChunkMath::F16)
            .with_wgmma_scan()
            .with_two_warpgroups()
            .with_half_u(),
    ];

    /// Whether the stages pass q, k, v, W and P as f16 (the f16 chunk stages take them as
    /// mma operands; the prologue then writes q, k and v as f16): the f16 route.
    pub const fn f16_intermediates(&self) -> bool {
        self.wu_math as u8 == ChunkMath::F16 as u8
    }

    /// A short name: `f32`, `wu f32 + scan tf32`, ...
    pub fn math_name(&self) -> String {
        if self.scan_two_wg {
            let u = if self.u_half { ", U f16" } else { "" };
            format!("{} (scan wgmma, two warpgroups{u})", self.wu_math.short())
        } else if self.scan_wgmma {
            format!("{} (scan wgmma)", self.wu_math.short())
        } else if self.scan_bufs == 1 {
            format!(
                "{} (scan v{}, one buffer)",
                self.wu_math.short(),
                self.scan_dvt
            )
        } else if self.wu_math == self.scan_math {
            self.wu_math.short().to_string()
        } else {
            format!(
                "wu {} + scan {}",
                self.wu_math.short(),
                self.scan_math.short()
            )
        }
    }

    /// The `wu` stage's kernel, its dynamic shared memory and block size.
    fn wu_kernel(&self) -> StageKernel {
        let (spec, smem) = match self.wu_math {
            ChunkMath::F32 => (chunk_wu_spec(), chunk_wu_smem()),
            ChunkMath::F16 => (chunk_wu_f16_spec(self.u_half), chunk_wu_f16_smem()),
            m => (chunk_wu_tc_spec(m), chunk_wu_tc_smem()),
        };
        StageKernel {
            spec,
            smem,
            threads: 256,
        }
    }

    /// The scan's kernel, its dynamic shared memory and block size.
    fn scan_kernel(&self) -> StageKernel {
        assert!(
            !self.u_half || self.scan_two_wg,
            "U as f16 is read by the two-warpgroup scan only"
        );
        let dvt = self.scan_dvt;
        match self.scan_math {
            ChunkMath::F32 => StageKernel {
                spec: chunk_scan_spec(dvt),
                smem: chunk_scan_smem(dvt),
                threads: 256,
            },
            ChunkMath::F16 if self.scan_two_wg => StageKernel {
                spec: chunk_wgs_spec(self.scan_bufs, self.u_half),
                smem: chunk_wgs_smem(self.scan_bufs),
                threads: 256,
            },
            ChunkMath::F16 if self.scan_wgmma => StageKernel {
                spec: chunk_wg_spec(self.scan_bufs),
                smem: chunk_wg_smem(self.scan_bufs),
                threads: 128,
            },
            ChunkMath::F16 => StageKernel {
                spec: chunk_f16_spec(dvt, self.scan_bufs),
                smem: chunk_f16_smem(dvt, self.scan_bufs),
                threads: 32 * f16_scan_warps(dvt) as u32,
            },
            m => StageKernel {
                spec: chunk_tc_spec(dvt, m),
                smem: chunk_tc_smem(dvt),
                threads: 256,
            },
        }
    }

    /// Entry names of the kernels of a whole prefill with this scan, for reports.
    pub fn route_name(&self) -> String {
        format!(
            "{}+{}+{}",
            prep_spec(4, self.wu_math == ChunkMath::F16).entry,
            self.wu_kernel().spec.entry,
            self.scan_kernel().spec.entry
        )
    }
}

/// [`launch_prefill`], queueing only the stages `stages` names (each stage reads what the
/// one before wrote into `ws`).
pub fn launch_prefill_stages(
    gpu: &Gpu,
    w: &GdnWeights,
    st: &mut GdnState,
    x: RawInputs,
    ws: &mut PrefillWorkspace,
    out: u64,
    stages: PrefillStages,
) -> Result<(), GpuError> {
    let d = &w.dims;
    let (seqs, t) = (ws.seqs, ws.t);
    assert_eq!(st.lanes, seqs);
    assert!(
        d.dk <= CHUNK_DKMAX,
        "the chunked prefill takes dk <= {CHUNK_DKMAX}"
    );
    assert!(d.dk <= PREP_CHANNELS && d.dv <= PREP_CHANNELS);
    assert!(d.kc == 4 && d.hv.is_multiple_of(d.hk));
    if seqs == 0 || t == 0 {
        return Ok(());
    }
    let dims_i = [t as i32, d.hk as i32, d.hv as i32, d.dk as i32, d.dv as i32];
    assert!(
        ws.serves(d, &stages),
        "the prefill workspace was not made for the route {}",
        stages.route_name()
    );
    // Prologue.
    if stages.prep {
        let out = PrepOut {
            q: dptr(gpu, &ws.q),
            k: dptr(gpu, &ws.k),
            v: dptr(gpu, &ws.v),
            g: &ws.g,
            beta: &ws.beta,
        };
        // (PrefillWorkspace::new sized the outputs for seqs x t, f16 or f32 as the route
        // passes them.)
        let kernel = PrepKernel::prefill(d, stages.f16_intermediates());
        launch_prep(gpu, kernel, w, &st.conv, x, out, seqs, t)?;
    }
    if stages.wu {
        let StageKernel {
            spec,
            smem,
            threads,
        } = stages.wu_kernel();
        let f = gpu.function(&spec)?;
        gpu.grant_shared_memory(&f, smem, &spec.entry)?;
        let cfg = LaunchConfig {
            grid_dim: (t.div_ceil(64) as u32, d.hv as u32, seqs as u32),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: smem as u32,
        };
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&ws.q)
            .arg(&ws.k)
            .arg(&ws.v)
            .arg(&ws.g)
            .arg(&ws.beta)
            .arg(&ws.w)
            .arg(&ws.u)
            .arg(&ws.p)
            .arg(&ws.gc);
        for v in &dims_i {
            b.arg(v);
        }
        // SAFETY: matches gdn/chunk.cu (wu) and gdn/chunk_wu_tc.cuh (same arguments), and
        // gdn/chunk_wu_f16.cu (the same with q, k and v f16, as the prologue wrote them, W
        // and P f16: each in the first half of its f32 buffer); buffers sized by
        // PrefillWorkspace::new.
        unsafe { b.launch(cfg) }.map_err(launch_err(&spec))?;
    }
    if !stages.scan {
        return Ok(());
    }
    // The scan works on an f32 state; f16 storage is staged through ws.s32.
    let n_state = (seqs * d.state_len()) as i64;
    let state_ptr = match (&st.s, &ws.s32) {
        (StateBuf::F32(s), _) => dptr(gpu, s),
        (StateBuf::F16(s), Some(s32)) => {
            launch_convert(gpu, true, dptr(gpu, s), dptr(gpu, s32), n_state)?;
            dptr(gpu, s32)
        }
        (StateBuf::F16(_), None) => panic!("an f16 state needs a workspace made for f16"),
    };
    if stages.scan_wgmma {
        launch_wg_scan(gpu, d, ws, stages, state_ptr, out)?;
    } else {
        let dvt = stages.scan_dvt;
        let StageKernel {
            spec,
            smem,
            threads,
        } = stages.scan_kernel();
        let f = gpu.function(&spec)?;
        gpu.grant_shared_memory(&f, smem, &spec.entry)?;
        let cfg = LaunchConfig {
            grid_dim: (d.dv.div_ceil(dvt) as u32, d.hv as u32, seqs as u32),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: smem as u32,
        };
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&ws.q)
            .arg(&ws.k)
            .arg(&ws.w)
            .arg(&ws.u)
            .arg(&ws.p)
            .arg(&ws.gc)
            .arg(&state_ptr)
            .arg(&out);
        for v in &dims_i {
            b.arg(v);
        }
        // SAFETY: matches gdn/chunk.cu (scan) and gdn/chunk_tc.cu (same arguments), and
        // gdn/chunk_f16.cu (q, k, W and P f16, as the f16 `wu` wrote them); the state holds
        // seqs * state_len elements.
        unsafe { b.launch(cfg) }.map_err(launch_err(&spec))?;
    }
    if let (StateBuf::F16(s), Some(s32)) = (&st.s, &ws.s32) {
        launch_convert(gpu, false, dptr(gpu, s32), dptr(gpu, s), n_state)?;
    }
    Ok(())
}

/// The wgmma scan (`gdn/chunk_wg.cu`): its inputs and o through TMA tensor maps of the
/// workspace's buffers (4-D: columns, heads, tokens, sequences), made for this launch.
fn launch_wg_scan(
    gpu: &Gpu,
    d: &GdnDims,
    ws: &PrefillWorkspace,
    stages: PrefillStages,
    state_ptr: u64,
    out: u64,
) -> Result<(), GpuError> {
    use crate::gpu::tma::{tiled_4d_swizzle128 as map4, TmaElem};
    let (seqs, t) = (ws.seqs, ws.t);
    assert!(stages.runs_on(gpu, d), "the wgmma scan does not run here");
    let StageKernel {
        spec,
        smem,
        threads,
    } = stages.scan_kernel();
    let kernel = gpu.kernel(&spec)?;
    gpu.grant_shared_memory(kernel.function(), smem, &spec.entry)?;
    // Every map is [seqs][t][heads][cols], boxes of 64 tokens of one head: 64 f16 columns
    // or 32 f32 ones (128 bytes, the swizzle's width).
    let map = |ptr: u64, elem: TmaElem, cols: usize, heads: usize| {
        let box_cols = if elem == TmaElem::F16 { 64 } else { 32 };
        map4(ptr, elem, [cols, heads, t, seqs], [box_cols, 1, 64, 1])
    };
    let wmap = map(dptr(gpu, &ws.w), TmaElem::F16, d.dk, d.hv)?;
    let qmap = map(dptr(gpu, &ws.q), TmaElem::F16, d.dk, d.hk)?;
    let kmap = map(dptr(gpu, &ws.k), TmaElem::F16, d.dk, d.hk)?;
    let pmap = map(dptr(gpu, &ws.p), TmaElem::F16, 64, d.hv)?;
    let u_elem = match stages.u_half {
        true => TmaElem::F16,
        false => TmaElem::F32,
    };
    let umap = map(dptr(gpu, &ws.u), u_elem, d.dv, d.hv)?;
    let omap = map(out, TmaElem::F32, d.dv, d.hv)?;
    let cfg = LaunchConfig {
        grid_dim: (d.dv.div_ceil(64) as u32, d.hv as u32, seqs as u32),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let dims_i = [t as i32, d.hk as i32, d.hv as i32, d.dk as i32, d.dv as i32];
    let mut b = gpu.launch(&kernel);
    b.arg(&ws.gc).arg(&state_ptr);
    for v in &dims_i {
        b.arg(v);
    }
    b.arg(&wmap)
        .arg(&qmap)
        .arg(&kmap)
        .arg(&pmap)
        .arg(&umap)
        .arg(&omap);
    // SAFETY: matches gdn/chunk_wg.cu (and chunk_wgs.cu); the maps describe the workspace's
    // q, k (f16, as the f16 prologue wrote them), W and P (f16, as the f16 `wu` wrote them),
    // U (f32; with `u_half` f16 in its first half, as that `wu` wrote it) and the output
    // (seqs x t x HV x dv f32), each sized by PrefillWorkspace::new for this route; the
    // state holds seqs * state_len elements.
    unsafe { b.launch(cfg) }.map_err(launch_err(&spec))?;
    Ok(())
}

fn launch_convert(gpu: &Gpu, to_f32: bool, src: u64, dst: u64, n: i64) -> Result<(), GpuError> {
    let spec = convert_spec(to_f32);
    let f = gpu.function(&spec)?;
    let blocks = ((n as usize).div_ceil(256)).min(gpu.props().sm_count as usize * 8) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks.max(1), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.stream().launch_builder(&f);
    b.arg(&src).arg(&dst).arg(&n);
    // SAFETY: matches gdn/convert.cu; both buffers hold n elements.
    unsafe { b.launch(cfg) }.map_err(launch_err(&spec))?;
    Ok(())
}
