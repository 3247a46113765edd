//! Linear layers: `Y[T,N] = X[T,K] * W[N,K]^T`, W in any weight format, X and Y bf16,
//! f32 accumulation, with the fused epilogues the models need (residual add; SwiGLU of a
//! gate and an up projection computed in one launch).
//!
//! Two kernel families: `linear_gemv` (`templates/linear/gemv.cu`, T = 1..8, CUDA cores,
//! each weight group decoded once for all columns) and `linear_mma` (`templates/linear/
//! mma_tiled.cu`, T > 8 and prefill: weight tiles decoded to bf16 in shared memory,
//! `mma.sync` m16n8k16), the tensor-core GEMV `linear_mmv` (`templates/linear/mmv.cu`) and
//! `linear_stream` (`templates/linear/gemv_stream.cu`, the exact route's bandwidth-first
//! kernel with bf16 activations; registered, qualified and timed beside `linear_mmv`;
//! launched programmatically, as in the exact route). Past 32 rows, for 4- and 8-bit
//! symmetric integer weights: `linear_pipe` (`templates/linear/a16_pipe.cu`, `mma.sync` fed
//! by a three-stage pipeline) and, on Hopper, `linear_wgmma` (`templates/linear/
//! a16_wgmma.cu`: wgmma from swizzled shared memory, X by TMA, the default there).
//! Routes are chosen by [`LinearRoute::choose`] until the autotuner supplies a table.

use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::weight::{
    random_bf16, random_weight, rotated_bf16_weights, rotated_weights, DeviceWeight,
};
use crate::bench::{median_us, BenchCtx, BenchRecord};
use crate::formats::{Format, Layout};
use crate::gpu::{CudaSlice, Gpu, GpuError, LaunchConfig};
use crate::jit::KernelSpec;
use crate::qualify::{Outcome, ALLOW_BF16};

/// What happens to the accumulated product before it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Epilogue {
    None,
    /// `Y = X W^T + R`
    Residual,
    /// `Y = silu(X Wg^T) * (X Wu^T)`: the first weight is the gate, the second the up.
    Swiglu,
    /// The GDN in-projection at its lanes (column t is lane t, one token each): its first
    /// `conv_ch` outputs of each column through the causal conv with the lane's window and
    /// SiLU, the window moved on (`gdn/conv_step.cu`'s arithmetic). The exact route's mma
    /// register kernel only (`linear_mma_exact::with_conv_epilogue`); not in [`Self::ALL`].
    Conv,
}

impl Epilogue {
    pub const ALL: [Epilogue; 3] = [Epilogue::None, Epilogue::Residual, Epilogue::Swiglu];
    fn short(self) -> &'static str {
        match self {
            Epilogue::None => "plain",
            Epilogue::Residual => "res",
            Epilogue::Swiglu => "swiglu",
            Epilogue::Conv => "conv",
        }
    }
}

/// Tile shape of a linear kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinearTile {
    /// CUDA-core kernel for up to `tt` columns; `rows` output rows per warp.
    Gemv { tt: u32, rows: u32, warps: u32 },
    /// Tensor-core kernel: a `bm x bn` tile of Y per block, `wm x wn` warps.
    Mma { bm: u32, bn: u32, wm: u32, wn: u32 },
    /// The pipelined tensor-core kernel (`linear/a16_pipe.cu`): the same tiling, three
    /// stages in dynamic shared memory. 4- and 8-bit sym_int formats, no SwiGLU.
    Pipe { bm: u32, bn: u32, wm: u32, wn: u32 },
    /// Hopper's warpgroup tensor cores (`linear/a16_wgmma.cu`, sm_90a only): a `bm x bn`
    /// tile per block, `wgs` warpgroups along T, four stages of swizzled shared memory. The
    /// formats and epilogues of [`LinearTile::Pipe`]; elsewhere it runs as that kernel.
    Wgmma { bm: u32, bn: u32, wgs: u32 },
    /// Tensor-core GEMV for up to `8 * nt` columns: 16 rows per block, `kw` warps splitting
    /// K, `unroll` groups per iteration. Formats with the lane-pairs interface only.
    Mmv { nt: u32, kw: u32, unroll: u32 },
    /// The bandwidth-first CUDA-core GEMV (`linear/gemv_stream.cu` with bf16 activations,
    /// the exact route's kernel) for up to `tt` columns; epilogues none and residual.
    Stream {
        tt: u32,
        tile: super::linear_exact::StreamTile,
    },
}

/// Column tiles of 8 the tensor-core GEMV is instantiated with.
pub const MMV_NT: [u32; 3] = [1, 2, 4];
/// (warps splitting K, groups per iteration) variants of the tensor-core GEMV.
pub const MMV_SPLITS: [(u32, u32); 2] = [(4, 4), (8, 2)];

/// Whether a format's template offers `fmt_lane_pairs` (the tensor-core GEMV interface).
pub fn has_lane_pairs(format: &Format) -> bool {
    format.kind == crate::formats::FormatKind::SymInt
}

/// The split of the stream kernel with bf16 activations (`linear_stream`) per column tile:
/// the ones qualified and timed on the H200 (bench/kernels/README.md, v4).
pub fn stream_bf16_tile(tt: u32) -> super::linear_exact::StreamTile {
    super::linear_exact::StreamTile {
        rows: 4,
        warps: 8,
        unroll: if tt == 1 { 2 } else { 1 },
        persistent: false,
        direct: false,
    }
}

/// The gemv column tiles that are instantiated.
pub const GEMV_TT: [u32; 4] = [1, 2, 4, 8];
/// The tensor-core tiles that are instantiated: small T (decode with several lanes) and prefill.
pub const MMA_TILES: [(u32, u32, u32, u32); 2] = [(32, 64, 1, 4), (64, 128, 2, 4)];
/// The pipelined kernel's tiles (bm, bn, warps along T, warps along N), the prefill default
/// first: warp tiles of 64x32 (16 warps, one block an SM: bench/kernels v36), 32x32 (8
/// warps; the tile for GPUs whose blocks cannot have the default's shared memory, see
/// [`launch`]) and 64x32 (8 warps).
pub const PIPE_TILES: [(u32, u32, u32, u32); 3] =
    [(256, 128, 4, 4), (64, 128, 2, 4), (128, 128, 2, 4)];

/// The warpgroup kernel's tiles (bm, bn, warpgroups): 256 x 128 (the W tile decoded once
/// for 256 rows of X) as two m64 x n128 wgmmas a warpgroup over two warpgroups, or one over
/// four (twice the warps to hide the decode's latency, 128 registers a thread); and 128 x
/// 256, one m64 x n256 a warpgroup.
pub const WGMMA_TILES: [(u32, u32, u32); 3] = [(256, 128, 4), (256, 128, 2), (128, 256, 2)];

/// Whether the pipelined tensor-core kernel takes `format` with `epilogue`: 4- or 8-bit
/// symmetric integers in groups of a multiple of 32, the plain and residual epilogues.
pub fn pipe_supports(format: &Format, epilogue: Epilogue) -> bool {
    format.kind == crate::formats::FormatKind::SymInt
        && (format.bits == 4 || format.bits == 8)
        && format.group.is_multiple_of(32)
        && epilogue != Epilogue::Swiglu
}

/// The prefill (more than 32 tokens) tiles for `format` with the plain epilogue: every tile
/// of [`MMA_TILES`] and, where the pipelined kernel takes the format, of [`PIPE_TILES`]
/// (what the prefill bench times and the a16 tuner chooses from).
pub fn prefill_tiles(format: &Format) -> Vec<LinearTile> {
    let mma = MMA_TILES.map(|(bm, bn, wm, wn)| LinearTile::Mma { bm, bn, wm, wn });
    let pipe = PIPE_TILES.map(|(bm, bn, wm, wn)| LinearTile::Pipe { bm, bn, wm, wn });
    let wgmma = WGMMA_TILES.map(|(bm, bn, wgs)| LinearTile::Wgmma { bm, bn, wgs });
    let pipes = pipe_supports(format, Epilogue::None);
    mma.into_iter()
        .chain(pipe.into_iter().filter(|_| pipes))
        .chain(wgmma.into_iter().filter(|_| pipes))
        .collect()
}

/// Dynamic shared memory of a pipelined launch: three stages of a `bm x 64` X tile and a
/// `bn x 64` W tile in bf16, rows padded to 72.
fn pipe_smem(bm: u32, bn: u32) -> usize {
    3 * (bm + bn) as usize * 72 * 2
}

/// Dynamic shared memory of a warpgroup launch: four stages of a `bm x 64` X tile and a
/// `bn x 64` W tile in bf16 (128-byte rows, swizzled), and 1024 bytes to align them.
fn wgmma_smem(bm: u32, bn: u32) -> usize {
    4 * (bm + bn) as usize * 128 + 1024
}

/// Dynamic shared memory of a tensor-core launch with stages (the pipelined and warpgroup
/// tiles); the other tiles' launches size theirs themselves.
fn staged_smem(tile: LinearTile) -> Option<usize> {
    match tile {
        LinearTile::Pipe { bm, bn, .. } => Some(pipe_smem(bm, bn)),
        LinearTile::Wgmma { bm, bn, .. } => Some(wgmma_smem(bm, bn)),
        _ => None,
    }
}

/// Whether `gpu` runs the warpgroup kernel: wgmma is sm_90a's (Hopper) alone, and the
/// environment may switch it off (`NINFER_WGMMA=0`, an A/B switch: the pipelined kernel's
/// default tile instead).
fn has_wgmma(gpu: &Gpu) -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    gpu.props().compute_capability == (9, 0) && super::linear_exact::switch_on(&ON, "NINFER_WGMMA")
}

/// One linear kernel instantiation.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearRoute {
    pub format: &'static Format,
    pub tile: LinearTile,
    pub epilogue: Epilogue,
}

impl LinearRoute {
    pub fn spec(&self) -> KernelSpec {
        let f = &self.format.name;
        let e = self.epilogue.short();
        match self.tile {
            LinearTile::Gemv { tt, rows, warps } => KernelSpec::new(
                "linear_gemv",
                "linear/gemv.cu",
                format!("linear_gemv_{f}_{e}_t{tt}_r{rows}_w{warps}"),
            )
            .param("tt", tt)
            .param("rows", rows)
            .param("warps", warps),
            LinearTile::Mma { bm, bn, wm, wn } => KernelSpec::new(
                "linear_mma",
                "linear/mma_tiled.cu",
                format!("linear_mma_{f}_{e}_{bm}x{bn}_w{wm}x{wn}"),
            )
            .param("bm", bm)
            .param("bn", bn)
            .param("warps_m", wm)
            .param("warps_n", wn),
            LinearTile::Pipe { bm, bn, wm, wn } => KernelSpec::new(
                "linear_pipe",
                "linear/a16_pipe.cu",
                format!("linear_pipe_{f}_{e}_{bm}x{bn}_w{wm}x{wn}"),
            )
            .param("bm", bm)
            .param("bn", bn)
            .param("warps_m", wm)
            .param("warps_n", wn),
            LinearTile::Wgmma { bm, bn, wgs } => KernelSpec::new(
                "linear_wgmma",
                "linear/a16_wgmma.cu",
                format!("linear_wgmma_{f}_{e}_{bm}x{bn}_g{wgs}"),
            )
            .param("bm", bm)
            .param("bn", bn)
            .param("wgs", wgs)
            .param("acc", bn / 2)
            .arch_specific(),
            LinearTile::Mmv { nt, kw, unroll } => KernelSpec::new(
                "linear_mmv",
                "linear/mmv.cu",
                format!("linear_mmv_{f}_{e}_n{nt}_k{kw}_u{unroll}"),
            )
            .param("nt", nt)
            .param("kw", kw)
            .param("unroll", unroll),
            LinearTile::Stream { tt, tile } => KernelSpec::new(
                "linear_stream",
                "linear/gemv_stream.cu",
                format!(
                    "linear_stream_{f}_{e}_t{tt}_r{}_w{}_u{}",
                    tile.rows, tile.warps, tile.unroll
                ),
            )
            .param("tt", tt)
            .param("rows", tile.rows)
            .param("warps", tile.warps)
            .param("unroll", tile.unroll)
            .param("act", "bf16")
            .programmatic(),
        }
        .param("format", f)
        .param("epilogue", self.epilogue)
    }

    /// The built-in heuristic (the autotuner's default).
    pub fn choose(format: &'static Format, t: usize, epilogue: Epilogue) -> LinearRoute {
        // The stream kernel at T = 1 for the sym_int formats that mmv decodes through the
        // generic integer path (widths other than 4 and 8 bits): q6_g64 measured 50 us
        // against mmv's 121 us at 17408x5120 on the H200 (v4). At 4 and 8 bits, and at
        // T > 1, mmv is as fast or faster.
        let slow_mmv = format.bits != 4 && format.bits != 8;
        let tile = if t <= 1
            && slow_mmv
            && epilogue != Epilogue::Swiglu
            && super::linear_exact::stream_supports(format)
        {
            LinearTile::Stream {
                tt: 1,
                tile: stream_bf16_tile(1),
            }
        } else if t <= 32 && has_lane_pairs(format) {
            let nt = (t.max(1).div_ceil(8) as u32).next_power_of_two();
            let (kw, unroll) = MMV_SPLITS[0];
            LinearTile::Mmv { nt, kw, unroll }
        } else if t <= 8 {
            let tt = (t.max(1) as u32).next_power_of_two();
            LinearTile::Gemv {
                tt,
                rows: 1,
                warps: 4,
            }
        } else if t <= 32 {
            let (bm, bn, wm, wn) = MMA_TILES[0];
            LinearTile::Mma { bm, bn, wm, wn }
        } else if pipe_supports(format, epilogue) {
            // The warpgroup kernel (on Hopper; its launch runs PIPE_TILES[0] elsewhere).
            let (bm, bn, wgs) = WGMMA_TILES[0];
            LinearTile::Wgmma { bm, bn, wgs }
        } else {
            let (bm, bn, wm, wn) = MMA_TILES[1];
            LinearTile::Mma { bm, bn, wm, wn }
        };
        LinearRoute {
            format,
            tile,
            epilogue,
        }
    }

    /// Columns one launch can take (more are split over launches by [`launch`]).
    fn max_columns(&self) -> usize {
        match self.tile {
            LinearTile::Gemv { tt, .. } => tt as usize,
            LinearTile::Mma { .. } | LinearTile::Pipe { .. } | LinearTile::Wgmma { .. } => {
                usize::MAX
            }
            LinearTile::Mmv { nt, .. } => 8 * nt as usize,
            LinearTile::Stream { tt, .. } => tt as usize,
        }
    }

    fn all_for(format: &'static Format) -> Vec<LinearRoute> {
        let mut routes = Vec::new();
        for epilogue in Epilogue::ALL {
            for tt in GEMV_TT {
                routes.push(LinearRoute {
                    format,
                    tile: LinearTile::Gemv {
                        tt,
                        rows: 1,
                        warps: 4,
                    },
                    epilogue,
                });
            }
            for (bm, bn, wm, wn) in MMA_TILES {
                routes.push(LinearRoute {
                    format,
                    tile: LinearTile::Mma { bm, bn, wm, wn },
                    epilogue,
                });
            }
            if pipe_supports(format, epilogue) {
                for (bm, bn, wm, wn) in PIPE_TILES {
                    routes.push(LinearRoute {
                        format,
                        tile: LinearTile::Pipe { bm, bn, wm, wn },
                        epilogue,
                    });
                }
                for (bm, bn, wgs) in WGMMA_TILES {
                    routes.push(LinearRoute {
                        format,
                        tile: LinearTile::Wgmma { bm, bn, wgs },
                        epilogue,
                    });
                }
            }
            if super::linear_exact::stream_supports(format) && epilogue != Epilogue::Swiglu {
                for tt in super::linear_exact::STREAM_TT {
                    routes.push(LinearRoute {
                        format,
                        tile: LinearTile::Stream {
                            tt,
                            tile: stream_bf16_tile(tt),
                        },
                        epilogue,
                    });
                }
            }
            if has_lane_pairs(format) {
                for nt in MMV_NT {
                    for (i, (kw, unroll)) in MMV_SPLITS.into_iter().enumerate() {
                        // The second split is a tuning candidate for the plain epilogue only.
                        if i == 0 || epilogue == Epilogue::None {
                            routes.push(LinearRoute {
                                format,
                                tile: LinearTile::Mmv { nt, kw, unroll },
                                epilogue,
                            });
                        }
                    }
                }
            }
        }
        routes
    }
}

fn all_routes() -> Vec<LinearRoute> {
    crate::formats::registry()
        .iter()
        .flat_map(LinearRoute::all_for)
        .collect()
}

/// Every registered instantiation of both families.
pub fn instantiations() -> Vec<KernelSpec> {
    all_routes().iter().map(LinearRoute::spec).collect()
}

/// The operands of one linear launch.
pub struct LinearArgs<'a> {
    pub w: &'a DeviceWeight,
    /// The up projection for [`Epilogue::Swiglu`] (same format and shape as `w`).
    pub w_up: Option<&'a DeviceWeight>,
    /// `[T, K]` bf16 bits.
    pub x: &'a CudaSlice<u16>,
    /// `[T, N]` bf16 bits, for [`Epilogue::Residual`]; may be the output itself.
    pub residual: Option<&'a CudaSlice<u16>>,
    pub t: usize,
}

/// The route a launch of `route` runs on `gpu`. The warpgroup kernel runs on Hopper alone
/// and reads X by TMA (16-byte aligned rows, `x_aligned`): elsewhere the pipelined kernel's
/// default tile takes its launches. A pipelined tile whose stages do not fit this GPU's
/// blocks (sm_86 and sm_89 opt in to 99 KB) runs as the smallest pipelined tile, which fits
/// every sm_80+ GPU.
fn runnable(gpu: &Gpu, route: &LinearRoute, x_aligned: bool) -> LinearRoute {
    let pipe = |(bm, bn, wm, wn): (u32, u32, u32, u32)| LinearRoute {
        tile: LinearTile::Pipe { bm, bn, wm, wn },
        ..route.clone()
    };
    let r = match route.tile {
        LinearTile::Wgmma { .. } if !has_wgmma(gpu) || !x_aligned => pipe(PIPE_TILES[0]),
        _ => route.clone(),
    };
    match r.tile {
        LinearTile::Pipe { bm, bn, .. }
            if pipe_smem(bm, bn) > gpu.props().smem_per_block_optin as usize =>
        {
            pipe(PIPE_TILES[1])
        }
        _ => r,
    }
}

/// Queues `y = epilogue(x * w^T)` on the GPU's stream.
pub fn launch(
    gpu: &Gpu,
    route: &LinearRoute,
    a: &LinearArgs,
    y: &mut CudaSlice<u16>,
) -> Result<(), GpuError> {
    use cudarc::driver::DevicePtr;
    let (n, k) = (a.w.layout.n, a.w.layout.k);
    assert_eq!(
        a.w.format.name, route.format.name,
        "weight format differs from the route's"
    );
    assert!(
        a.x.len() >= a.t * k && y.len() >= a.t * n,
        "activation buffers too small"
    );
    assert!(
        k % 64 == 0
            || matches!(
                route.tile,
                LinearTile::Gemv { .. } | LinearTile::Stream { .. }
            ),
        "the tensor-core route needs K % 64 == 0"
    );
    if let LinearTile::Stream { .. } = route.tile {
        assert!(
            super::linear_exact::stream_supports(a.w.format) && route.epilogue != Epilogue::Swiglu,
            "the stream route takes sym_int formats and no SwiGLU"
        );
    }
    if let LinearTile::Pipe { .. } | LinearTile::Wgmma { .. } = route.tile {
        assert!(
            pipe_supports(a.w.format, route.epilogue),
            "the pipelined route takes 4- and 8-bit sym_int formats and no SwiGLU"
        );
    }
    let up = match route.epilogue {
        Epilogue::Swiglu => {
            let up = a.w_up.expect("a SwiGLU launch needs the up projection");
            assert!(
                up.layout == a.w.layout && up.format.name == a.w.format.name,
                "gate and up differ"
            );
            up
        }
        _ => a.w,
    };
    if route.epilogue == Epilogue::Residual {
        assert!(
            a.residual.is_some_and(|r| r.len() >= a.t * n),
            "a residual launch needs [T, N] residuals"
        );
    }
    let x_aligned = a.x.device_ptr(gpu.stream()).0.is_multiple_of(16);
    let runs = runnable(gpu, route, x_aligned);
    let route = &runs;
    // The stream tile launches programmatically (its spec opts in); the others do not.
    let spec = route.spec();
    let f = gpu.kernel(&spec)?;
    if let Some(bytes) = staged_smem(route.tile) {
        gpu.grant_shared_memory(f.function(), bytes, &spec.entry)?;
    }
    let (q, s) = a.w.planes(gpu);
    let (q2, s2) = up.planes(gpu);
    let stride_q = a.w.layout.q_row_bytes as i64;
    let stride_s = a.w.layout.s_row_bytes as i64;
    let x0 = a.x.device_ptr(gpu.stream()).0;
    let y0 = y.device_ptr(gpu.stream()).0;
    let r0 = a
        .residual
        .map(|r| r.device_ptr(gpu.stream()).0)
        .unwrap_or(y0);
    let (ni, ki) = (n as i32, k as i32);
    let step = route.max_columns();
    let slab = match route.tile {
        LinearTile::Stream { tt, .. } => super::linear_exact::stream_slab(tt, k).0 as i32,
        _ => 0,
    };
    let mut col = 0;
    while col < a.t {
        let cols = step.min(a.t - col);
        let cfg = match route.tile {
            LinearTile::Gemv { rows, warps, .. } => {
                let rows_per_block = (rows * warps) as usize;
                LaunchConfig {
                    grid_dim: (n.div_ceil(rows_per_block) as u32, 1, 1),
                    block_dim: (warps * 32, 1, 1),
                    shared_mem_bytes: 0,
                }
            }
            LinearTile::Mma { bm, bn, wm, wn } | LinearTile::Pipe { bm, bn, wm, wn } => {
                LaunchConfig {
                    grid_dim: (
                        n.div_ceil(bn as usize) as u32,
                        cols.div_ceil(bm as usize) as u32,
                        1,
                    ),
                    block_dim: (wm * wn * 32, 1, 1),
                    shared_mem_bytes: staged_smem(route.tile).unwrap_or(0) as u32,
                }
            }
            LinearTile::Wgmma { bm, bn, wgs } => LaunchConfig {
                grid_dim: (
                    n.div_ceil(bn as usize) as u32,
                    cols.div_ceil(bm as usize) as u32,
                    1,
                ),
                block_dim: (wgs * 128, 1, 1),
                shared_mem_bytes: staged_smem(route.tile).unwrap_or(0) as u32,
            },
            LinearTile::Mmv { kw, .. } => LaunchConfig {
                grid_dim: (n.div_ceil(16) as u32, 1, 1),
                block_dim: (kw * 32, 1, 1),
                shared_mem_bytes: 0,
            },
            LinearTile::Stream { tt, tile } => LaunchConfig {
                grid_dim: (n.div_ceil((tile.rows * tile.warps) as usize) as u32, 1, 1),
                block_dim: (tile.warps * 32, 1, 1),
                shared_mem_bytes: super::linear_exact::stream_slab(tt, k).1 as u32,
            },
        };
        let (xc, yc, rc) = (
            x0 + (col * k * 2) as u64,
            y0 + (col * n * 2) as u64,
            r0 + (col * n * 2) as u64,
        );
        let ti = cols as i32;
        // The stream kernel's norm weight and eps (its prologue is none here).
        let (pw, eps) = (0u64, 0f32);
        let mut b = gpu.launch(&f);
        b.arg(&q)
            .arg(&s)
            .arg(&q2)
            .arg(&s2)
            .arg(&stride_q)
            .arg(&stride_s)
            .arg(&xc)
            .arg(&rc)
            .arg(&yc)
            .arg(&ti)
            .arg(&ni)
            .arg(&ki);
        if let LinearTile::Stream { .. } = route.tile {
            b.arg(&slab).arg(&pw).arg(&eps);
        }
        let x_map = match route.tile {
            LinearTile::Wgmma { bm, .. } => Some(crate::gpu::tma::bf16_2d_swizzle128(
                xc,
                (cols, k),
                k * 2,
                (bm, 64),
            )?),
            _ => None,
        };
        if let Some(m) = &x_map {
            b.arg(m);
        }
        // SAFETY: the arguments match the template's signature (the stream kernel's with its
        // slab and unused prologue operands, its shared memory sized by stream_slab; the
        // warpgroup kernel's with X's tensor map, T = `cols` rows from `xc`); sizes
        // are asserted above and the kernels guard rows and columns past N and T.
        unsafe { b.launch(cfg) }
            .map_err(|e| GpuError::driver(format!("launching {}", spec.entry), e))?;
        col += cols;
    }
    Ok(())
}

/// The f32-activation routes' check of one launch's output `all` (`[T, N]`): the rows to
/// compare (every row up to `full_below`, else `samples` random ones plus the first and
/// last), their values from `all` and the f64 reference from the decoded weight rows. An
/// unwritten (non-finite) output anywhere makes the comparison fail.
#[allow(clippy::too_many_arguments)]
pub fn sampled_check_f32(
    rng: &mut impl Rng,
    format: &'static Format,
    layout: &Layout,
    payload: &[u8],
    x: &[f32],
    r: &[f32],
    all: &[f32],
    (t, n, k): (usize, usize, usize),
    epilogue: Epilogue,
    (full_below, samples): (usize, usize),
) -> (Vec<f32>, Vec<f64>) {
    let rows: Vec<usize> = if n <= full_below {
        (0..n).collect()
    } else {
        let mut v: Vec<usize> = (0..samples).map(|_| rng.random_range(0..n)).collect();
        v.extend([0, n - 1]);
        v
    };
    let w_rows: Vec<Vec<f32>> = rows
        .iter()
        .map(|&i| {
            let mut row = vec![0f32; k];
            crate::formats::decode_row(format, layout, payload, i, &mut row);
            row
        })
        .collect();
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let want = reference_rows(
        &x64,
        (t, k),
        &w_rows,
        None,
        epilogue,
        |ti, row| r[ti * n + row] as f64,
        &rows,
    );
    let mut got: Vec<f32> = Vec::with_capacity(want.len());
    for ti in 0..t {
        for &row in &rows {
            got.push(all[ti * n + row]);
        }
    }
    if all.iter().any(|v| !v.is_finite()) {
        got[0] = f32::NAN; // an unwritten (poisoned) output anywhere fails the check
    }
    (got, want)
}

/// f64 reference for the output rows `rows` (all T columns): `x` is `[T, K]`, `w_rows[i]`
/// the decoded weight row `rows[i]`, same for `up_rows`.
pub fn reference_rows(
    x: &[f64],
    (t, k): (usize, usize),
    w_rows: &[Vec<f32>],
    up_rows: Option<&[Vec<f32>]>,
    epilogue: Epilogue,
    residual: impl Fn(usize, usize) -> f64,
    rows: &[usize],
) -> Vec<f64> {
    let dot = |ti: usize, w: &[f32]| -> f64 { (0..k).map(|i| x[ti * k + i] * w[i] as f64).sum() };
    let mut out = Vec::with_capacity(t * rows.len());
    for ti in 0..t {
        for (i, &row) in rows.iter().enumerate() {
            let g = dot(ti, &w_rows[i]);
            out.push(match epilogue {
                Epilogue::None => g,
                Epilogue::Residual => g + residual(ti, row),
                Epilogue::Swiglu => {
                    let u = dot(ti, &up_rows.expect("swiglu reference needs up rows")[i]);
                    g / (1.0 + (-g).exp()) * u
                }
                Epilogue::Conv => panic!("the conv epilogue's reference is the GDN's"),
            });
        }
    }
    out
}

fn decode_rows(w: &DeviceWeight, payload: &[u8], rows: &[usize]) -> Vec<Vec<f32>> {
    rows.iter()
        .map(|&r| {
            let mut out = vec![0f32; w.layout.k];
            crate::formats::decode_row(w.format, &w.layout, payload, r, &mut out);
            out
        })
        .collect()
}

/// Runs one route at one shape on fresh random inputs and checks sampled output rows (and
/// that every output was written) against the f64 reference.
fn check(
    gpu: &Gpu,
    route: &LinearRoute,
    (t, n, k): (usize, usize, usize),
    rng: &mut impl Rng,
) -> Result<Outcome, GpuError> {
    let (w, wp) = random_weight(gpu, route.format, n, k, rng)?;
    let up = match route.epilogue {
        Epilogue::Swiglu => Some(random_weight(gpu, route.format, n, k, rng)?),
        _ => None,
    };
    let (xb, xv) = random_bf16(t * k, 1.0, rng);
    let (rb, rv) = random_bf16(t * n, 1.0, rng);
    let x = gpu.upload(&xb)?;
    let residual = gpu.upload(&rb)?;
    let mut y = gpu.upload(&vec![0x7fc0u16; t * n])?; // bf16 NaN
    let args = LinearArgs {
        w: &w,
        w_up: up.as_ref().map(|u| &u.0),
        x: &x,
        residual: Some(&residual),
        t,
    };
    launch(gpu, route, &args, &mut y)?;
    gpu.synchronize()?;
    let got_all = gpu.download(&y)?;

    // Sample rows: the first, the last and random ones (all rows when N is small).
    let mut rows: Vec<usize> = if n <= 256 {
        (0..n).collect()
    } else {
        (0..62).map(|_| rng.random_range(0..n)).collect()
    };
    if n > 256 {
        rows.extend([0, n - 1]);
    }
    let w_rows = decode_rows(&w, &wp, &rows);
    let up_rows = up.as_ref().map(|(u, p)| decode_rows(u, p, &rows));
    let want = reference_rows(
        &xv,
        (t, k),
        &w_rows,
        up_rows.as_deref(),
        route.epilogue,
        |ti, r| rv[ti * n + r],
        &rows,
    );
    let unwritten = got_all
        .iter()
        .any(|&b| !half::bf16::from_bits(b).is_finite());
    let mut got: Vec<f32> = Vec::with_capacity(want.len());
    for ti in 0..t {
        for &r in &rows {
            got.push(half::bf16::from_bits(got_all[ti * n + r]).to_f32());
        }
    }
    if unwritten {
        got[0] = f32::NAN; // an unwritten (poisoned) output anywhere fails the check
    }
    Ok(Outcome::compare(
        route.spec().entry,
        format!("T={t} N={n} K={k}"),
        &got,
        &want,
        ALLOW_BF16,
    ))
}

/// Real projection shapes `(N, K)`: SmolLM2-135M, Qwen3.6-27B, and 14336->4096.
pub const SHAPES_SMOLLM2: [(usize, usize); 3] = [(1536, 576), (576, 1536), (192, 576)];
pub const SHAPES_27B: [(usize, usize); 4] =
    [(17408, 5120), (5120, 17408), (10240, 5120), (5120, 6144)];
pub const SHAPE_LLAMA_BENCH: (usize, usize) = (4096, 14336);
pub const SHAPE_HEAD_27B: (usize, usize) = (248320, 5120);

/// Every route, every T bucket it serves, on real shapes.
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
        let ts: Vec<usize> = match route.tile {
            LinearTile::Gemv { tt, .. } | LinearTile::Stream { tt, .. } => {
                ((tt / 2 + 1) as usize..=tt as usize).collect()
            }
            LinearTile::Mma { bm: 32, .. } => vec![9, 16, 17, 24, 32],
            LinearTile::Mma { .. } | LinearTile::Pipe { .. } => vec![33, 64, 100, 256],
            // Several T tiles and a partial last one (300 = 256 + 44).
            LinearTile::Wgmma { .. } => vec![33, 64, 100, 256, 300],
            LinearTile::Mmv { nt, .. } => match nt {
                1 => (1..=8).collect(),
                2 => (9..=16).collect(),
                _ => vec![17, 20, 25, 31, 32],
            },
        };
        // Cycle the shapes over the T values so each route sees several real shapes.
        let shapes: Vec<(usize, usize)> = SHAPES_SMOLLM2
            .iter()
            .chain(SHAPES_27B.iter())
            .chain([SHAPE_LLAMA_BENCH].iter())
            .copied()
            .collect();
        for (i, &t) in ts.iter().enumerate() {
            let (n, k) = shapes[(i + route.format.name.len()) % shapes.len()];
            out.push(check(gpu, &route, (t, n, k), rng)?);
        }
    }
    // Long prefill and the big head, on the formats the models use there.
    for name in ["q4_g64", "q6_g64", "q8_g32", "bf16"] {
        let fmt = crate::formats::format(name).expect("registered");
        for (t, (n, k)) in [
            (512, (17408, 5120)),
            (4096, (17408, 5120)),
            (1, SHAPE_HEAD_27B),
        ] {
            let route = LinearRoute::choose(fmt, t, Epilogue::None);
            if wanted(&route.spec().entry) {
                out.push(check(gpu, &route, (t, n, k), rng)?);
            }
        }
    }
    Ok(out)
}

/// Decode-shape and prefill benchmarks with cuBLAS bf16 on the same shapes as the peer.
pub fn bench(ctx: &BenchCtx, filter: Option<&str>) -> Result<Vec<BenchRecord>, GpuError> {
    let gpu = ctx.gpu;
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let blas = crate::gpu::Blas::new(gpu)?;
    let mut records = Vec::new();
    let mut cases: Vec<(&str, usize, (usize, usize))> = Vec::new();
    for t in [1, 8, 32] {
        cases.push(("q4_g64", t, (17408, 5120)));
    }
    cases.push(("q4_g64", 1, SHAPE_HEAD_27B));
    cases.push(("q4_g64", 1, SHAPE_LLAMA_BENCH));
    cases.push(("q8_g32", 1, (17408, 5120)));
    cases.push(("q6_g64", 1, (17408, 5120)));
    cases.push(("q4_g64", 4096, (17408, 5120)));
    cases.push(("bf16", 4096, (17408, 5120)));
    for (name, t, (n, k)) in cases {
        let what = format!("linear {name}");
        if !crate::bench::filter_may_keep(filter, &[&what]) {
            continue;
        }
        let fmt = crate::formats::format(name).expect("registered");
        let route = LinearRoute::choose(fmt, t, Epilogue::None);
        // The stream kernel (bf16 activations) beside the chosen route where it applies.
        let mut routes = vec![route];
        if t <= 8 && super::linear_exact::stream_supports(fmt) {
            let tt = (t as u32).next_power_of_two();
            let stream = LinearRoute {
                format: fmt,
                tile: LinearTile::Stream {
                    tt,
                    tile: stream_bf16_tile(tt),
                },
                epilogue: Epilogue::None,
            };
            if stream != routes[0] {
                routes.push(stream);
            }
        }
        // Prefill: every tensor-core tile beside the chosen one (the a16 tuner's candidates).
        if t > 32 {
            for tile in prefill_tiles(fmt) {
                let r = LinearRoute {
                    format: fmt,
                    tile,
                    epilogue: Epilogue::None,
                };
                if !routes.contains(&r) {
                    routes.push(r);
                }
            }
        }
        let (layout, weights) = rotated_weights(gpu, fmt, (n, k), &mut rng)?;
        let sets = weights.len();
        let (xb, _) = random_bf16(t * k, 1.0, &mut rng);
        let x = gpu.upload(&xb)?;
        let mut y: CudaSlice<u16> = gpu.alloc_zeros(t * n)?;
        let mut timed = Vec::new();
        for route in &routes {
            let us = median_us(gpu, 5, 50, |i| {
                let args = LinearArgs {
                    w: &weights[i % sets],
                    w_up: None,
                    x: &x,
                    residual: None,
                    t,
                };
                launch(gpu, route, &args, &mut y)
            })?;
            timed.push((route.spec().entry, us));
        }
        drop(weights);
        let bytes = (layout.total_bytes + t * k * 2 + t * n * 2) as f64;
        let flops = 2.0 * (t * n * k) as f64;
        let shape = format!("T={t} N={n} K={k}");

        // cuBLAS bf16 on the same shape, weights rotated the same way.
        let wdev = rotated_bf16_weights(gpu, (n, k), &mut rng)?;
        let wsets = wdev.len();
        let peer_us = median_us(gpu, 5, 50, |i| {
            blas.gemm_bf16(gpu, &wdev[i % wsets], &x, &mut y, (t, n, k))
        })?;
        for (entry, us) in timed {
            let mut rec = ctx.record(what.clone(), entry, shape.clone(), us, bytes, flops);
            rec.peer = Some("cuBLAS bf16 (cublasGemmEx)".into());
            rec.peer_median_us = Some(peer_us);
            rec.speedup_vs_peer = Some(peer_us / us);
            records.push(rec);
        }
    }
    // The exact (f32 activation) route's stream kernel at the same decode shapes.
    records.extend(super::linear_exact::bench(ctx, filter)?);
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chosen_route_is_instantiated() {
        let specs = instantiations();
        for fmt in crate::formats::registry().iter() {
            for t in [1, 2, 3, 8, 9, 16, 17, 32, 33, 512, 4096] {
                for e in Epilogue::ALL {
                    let entry = LinearRoute::choose(fmt, t, e).spec().entry;
                    assert!(
                        specs.iter().any(|s| s.entry == entry),
                        "{entry} is chosen but not registered"
                    );
                }
            }
        }
    }

    #[test]
    fn prefill_takes_the_warpgroup_kernel_where_the_pipelined_one_applies() {
        for fmt in crate::formats::registry().iter() {
            for e in Epilogue::ALL {
                let pipes = pipe_supports(fmt, e);
                assert_eq!(
                    pipes,
                    ["q4_g64", "q8_g32"].contains(&fmt.name.as_str()) && e != Epilogue::Swiglu,
                    "{} {e:?}",
                    fmt.name
                );
                for t in [33, 512, 4096] {
                    let tile = LinearRoute::choose(fmt, t, e).tile;
                    let want = if pipes {
                        let (bm, bn, wgs) = WGMMA_TILES[0];
                        LinearTile::Wgmma { bm, bn, wgs }
                    } else {
                        let (bm, bn, wm, wn) = MMA_TILES[1];
                        LinearTile::Mma { bm, bn, wm, wn }
                    };
                    assert_eq!(tile, want, "{} {e:?} T={t}", fmt.name);
                }
            }
        }
        // The fallback tile fits the 99 KB blocks of sm_86 and sm_89, every tile sm_90's
        // (the warpgroup tiles with their 32 bytes of mbarriers).
        let (bm, bn, ..) = PIPE_TILES[1];
        assert!(pipe_smem(bm, bn) <= 99 * 1024);
        assert!(PIPE_TILES
            .iter()
            .all(|&(bm, bn, ..)| pipe_smem(bm, bn) <= 227 * 1024));
        assert!(WGMMA_TILES
            .iter()
            .all(|&(bm, bn, _)| wgmma_smem(bm, bn) + 32 <= 227 * 1024));
    }

    /// The warpgroup kernels compile for sm_90a with their wgmmas and nothing in local
    /// memory, and for another target (sm_80) as the stub the launch never reaches.
    #[test]
    fn warpgroup_kernels_compile_for_sm_90a_and_stub_elsewhere() {
        let jit = crate::jit::test_jit();
        let specs: Vec<KernelSpec> = instantiations()
            .into_iter()
            .filter(|s| s.family == "linear_wgmma")
            .collect();
        // q4_g64 and q8_g32, plain and residual, two tiles.
        assert_eq!(specs.len(), 2 * 2 * WGMMA_TILES.len());
        for spec in &specs {
            assert!(spec.arch_specific, "{}", spec.entry);
            let src = jit.render(spec).unwrap();
            jit.cubin(spec, crate::jit::Arch::new(9, 0))
                .unwrap_or_else(|e| panic!("{}: {e}", spec.entry));
            jit.cubin(spec, crate::jit::Arch::new(8, 0))
                .unwrap_or_else(|e| panic!("{} (sm_80 stub): {e}", spec.entry));
            let ptx = cudarc::nvrtc::compile_ptx_with_opts(
                src,
                cudarc::nvrtc::CompileOptions {
                    arch: Some("compute_90a"),
                    options: crate::jit::nvrtc::base_options(),
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("{}: PTX: {e:?}", spec.entry))
            .to_src();
            assert!(ptx.contains("wgmma.mma_async"), "{}", spec.entry);
            assert!(!ptx.contains(".local"), "{} spills", spec.entry);
        }
    }

    #[test]
    fn reference_applies_each_epilogue() {
        let x = [1.0, 2.0]; // T = 1, K = 2
        let w = vec![vec![3.0f32, -1.0]]; // row 0: dot = 1
        let up = vec![vec![2.0f32, 2.0]]; // dot = 6
        let plain = reference_rows(&x, (1, 2), &w, None, Epilogue::None, |_, _| 0.0, &[0]);
        assert_eq!(plain, vec![1.0]);
        let res = reference_rows(&x, (1, 2), &w, None, Epilogue::Residual, |_, _| 0.5, &[0]);
        assert_eq!(res, vec![1.5]);
        let sw = reference_rows(
            &x,
            (1, 2),
            &w,
            Some(&up),
            Epilogue::Swiglu,
            |_, _| 0.0,
            &[0],
        );
        let silu1 = 1.0 / (1.0 + (-1.0f64).exp());
        assert!((sw[0] - silu1 * 6.0).abs() < 1e-12);
    }
}
