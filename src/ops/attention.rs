//! Causal GQA attention of a block of query rows against one layer's KV cache (the
//! `self_attn` of the llama family and of Qwen3.5/3.6's full-attention layers).
//!
//! Activations are f32 row-major: `q` and the output are `[t, n_heads * head_dim]`. The
//! cache of a layer is two buffers `k_cache`, `v_cache`, each `[capacity, n_kv * head_dim]`
//! (row p = position p) stored as f32 or bf16 ([`KvType`]). Query row i sits at position
//! `pos0 + i` and attends to positions `0 ..= pos0 + i` (the caller has appended the
//! block's own k/v rows first, [`launch_kv_append`]); head h reads KV head
//! `h / (n_heads / n_kv)`; softmax of `scale * q.k` in f32 with a running max.
//!
//! Three routes, two templates:
//! - decode (small t, `attention/flash.cu` mode "split"): split-K over the cache, each
//!   block a range of keys for the GQA group of a few rows, partials to an
//!   [`AttnWorkspace`], merged by the last block of each group to finish (one launch; the
//!   combine is folded into the kernel);
//! - prefill (`attention/flash.cu` mode "direct"): a block of query vectors (rows x group
//!   heads) scans all its keys, with K/V tiles in shared memory reused by every vector of
//!   the block; G lanes per vector (shared-memory bound). Kept for head sizes 32 and 48;
//! - tiled prefill (`attention/flash_prefill.cu`): the same blocks, but each thread owns a
//!   small block of scores (several vectors x 4 keys) and of the output, so each value read
//!   from shared memory feeds several FMAs; K/V loads overlap the arithmetic. The prefill
//!   route for head sizes 64, 128 and 256.

use rand::Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use serde::Serialize;

use super::{DType, Pos};
use crate::engine::backend::{Rope, RopeStyle};
use crate::gpu::dptr;
use crate::gpu::{AnyBuffer, CudaSlice, Gpu, GpuError, LaunchConfig};
use crate::jit::KernelSpec;
use crate::qualify::{Outcome, ALLOW_BF16, ALLOW_F32};

/// Storage type of the KV cache; arithmetic is f32 either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KvType {
    F32,
    Bf16,
}

impl KvType {
    pub const ALL: [KvType; 2] = [KvType::F32, KvType::Bf16];

    /// Bytes per stored element.
    pub fn bytes(self) -> usize {
        match self {
            KvType::F32 => 4,
            KvType::Bf16 => 2,
        }
    }

    /// The element type's name in templates (`common/types.cuh`).
    pub fn cuda_type(self) -> &'static str {
        self.dtype().cuda_type()
    }

    pub fn short(self) -> &'static str {
        self.dtype().short()
    }

    /// The activation type with the same storage.
    pub fn dtype(self) -> DType {
        match self {
            KvType::F32 => DType::F32,
            KvType::Bf16 => DType::Bf16,
        }
    }

    /// Rounds an f32 to what the cache stores (round to nearest even for bf16).
    pub fn round(self, v: f32) -> f32 {
        self.dtype().round(v)
    }
}

/// Head counts and head size of one attention layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttnDims {
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub head_dim: usize,
}

impl AttnDims {
    pub const fn new(n_heads: usize, n_kv_heads: usize, head_dim: usize) -> Self {
        AttnDims {
            n_heads,
            n_kv_heads,
            head_dim,
        }
    }
    /// Query heads per KV head.
    pub fn rep(&self) -> usize {
        self.n_heads / self.n_kv_heads
    }
    /// Width of a q or output row.
    pub fn q_width(&self) -> usize {
        self.n_heads * self.head_dim
    }
    /// Width of a k or v cache row.
    pub fn kv_width(&self) -> usize {
        self.n_kv_heads * self.head_dim
    }
    pub fn describe(&self) -> String {
        format!(
            "nH={} nKV={} hd={}",
            self.n_heads, self.n_kv_heads, self.head_dim
        )
    }
    /// Panics with a clear message for dims no route serves.
    fn check(&self) {
        assert!(
            HEAD_DIMS.contains(&self.head_dim),
            "attention: head_dim {} has no kernel (instantiated: {HEAD_DIMS:?})",
            self.head_dim
        );
        assert!(
            self.n_kv_heads > 0 && self.n_heads.is_multiple_of(self.n_kv_heads),
            "attention: n_heads {} is not a multiple of n_kv_heads {}",
            self.n_heads,
            self.n_kv_heads
        );
    }
}

/// SmolLM2-135M.
pub const SMOLLM2: AttnDims = AttnDims::new(9, 3, 64);
/// Qwen3.6-27B's full-attention layers.
pub const QWEN36_27B: AttnDims = AttnDims::new(24, 4, 256);
/// Llama-3-8B.
pub const LLAMA_8B: AttnDims = AttnDims::new(32, 8, 128);

/// Head sizes the template is instantiated for.
/// 32 and 48 serve the tiny test models (and small real ones).
pub const HEAD_DIMS: [usize; 5] = [32, 48, 64, 128, 256];
/// Keys per split of the decode route (tuner candidates; the first is the smallest). 32
/// (one shared-memory tile a split) doubles the blocks of a short cache with few KV heads.
pub const DECODE_SPLITS: [usize; 4] = [32, 64, 128, 256];
/// Query vectors per block of the flash prefill route (tuner candidates); instantiated
/// for the head sizes the tiled route does not serve.
pub const PREFILL_TILES: [usize; 3] = [16, 32, 64];
/// Head sizes the tiled prefill template is instantiated for (and where it replaces the
/// flash prefill: 2.7x faster at SmolLM2's shape, 1.7x at head size 256 on the H200).
pub const TILED_HEAD_DIMS: [usize; 3] = [64, 128, 256];
/// Query vectors per block of the tiled prefill route. 64 was never more than 2% faster
/// than 32 and up to 1.4x slower at t = 512 (bench/kernels/attn-v2/run1): not instantiated.
pub const TILED_TILES: [usize; 1] = [32];
/// The tiled prefill route's default block.
const TILED_DEFAULT: usize = 32;
/// The largest t the built-in heuristic sends to the decode route.
pub const DECODE_MAX_T: usize = 8;
/// Most splits one decode launch uses; longer caches get wider splits.
pub const MAX_SPLITS: usize = 256;
/// Keys per shared-memory tile.
const KT: usize = 32;
/// Decode blocks: query vectors per block and lanes per vector.
const DECODE_NQ: usize = 8;
const DECODE_G: usize = 16;
/// Lanes per query vector in the prefill route.
const PREFILL_G: usize = 8;

/// Lanes per query vector for head size `hd`: the largest power of two up to `wanted`
/// with `hd % (4 * g) == 0` (each lane owns whole float4 chunks of the output row).
fn lanes_for(hd: usize, wanted: usize) -> usize {
    let mut g = wanted;
    while g > 1 && !hd.is_multiple_of(4 * g) {
        g /= 2;
    }
    g
}
const APPEND_BLOCK: u32 = 256;

/// Tiled prefill: (keys per tile, vectors per thread) for head size `hd`. Each thread
/// scores 4 keys, so `bk / 4` lanes share a vector group and own `hd / bk` output columns
/// each: 64 keys for hd 64 and 128; 32 keys and 2 vectors at hd 256 (a tile of 64 would
/// need 64 KiB for K alone, and 4 vectors x 32 columns too many registers).
fn tiled_shape(hd: usize) -> (usize, usize) {
    if hd >= 256 {
        (32, 2)
    } else {
        (64, 4)
    }
}

/// Which of the two kernels a route runs, with its tuning parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttnKind {
    /// Split-K over the cache: `split` keys per block, the last block of each group merging
    /// the partials.
    Decode { split: usize },
    /// `q_tile` query vectors (rows x GQA-group heads) per block share the K/V tiles.
    Prefill { q_tile: usize },
    /// As `Prefill`, register-tiled (`attention/flash_prefill.cu`).
    Tiled { q_tile: usize },
}

/// One attention route: the cache type, the head size, and the kernel with its tiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttnRoute {
    pub kv: KvType,
    pub head_dim: usize,
    pub kind: AttnKind,
}

impl AttnRoute {
    /// The built-in heuristic: split-K decode for a few rows, the tiled prefill beyond
    /// (the flash prefill for head sizes it does not serve). Panics for a head_dim that
    /// has no kernel.
    pub fn choose(kv: KvType, dims: AttnDims, t: usize) -> AttnRoute {
        dims.check();
        let kind = if t <= DECODE_MAX_T {
            // Enough blocks to fill the GPU at long contexts with few KV heads; wider
            // splits halve the combine's traffic where there are heads enough.
            let split = if dims.n_kv_heads >= 8 { 128 } else { 64 };
            AttnKind::Decode { split }
        } else if TILED_HEAD_DIMS.contains(&dims.head_dim) {
            AttnKind::Tiled {
                q_tile: TILED_DEFAULT,
            }
        } else {
            AttnKind::Prefill { q_tile: 32 }
        };
        AttnRoute {
            kv,
            head_dim: dims.head_dim,
            kind,
        }
    }

    /// The main kernel (flash, in split or direct mode, or the tiled prefill).
    pub fn spec(&self) -> KernelSpec {
        let (hd, kv) = (self.head_dim, self.kv);
        if let AttnKind::Tiled { q_tile } = self.kind {
            let (bk, rq) = tiled_shape(hd);
            return KernelSpec::new(
                "attention",
                "attention/flash_prefill.cu",
                format!("attn_tiled_{}_d{hd}_q{q_tile}", kv.short()),
            )
            .param("hd", hd)
            .param("kv_type", kv.cuda_type())
            .param("bq", q_tile)
            .param("bk", bk)
            .param("rq", rq);
        }
        match self.kind {
            AttnKind::Decode { split } => KernelSpec::new(
                "attention",
                "attention/flash.cu",
                format!("attn_decode_{}_d{hd}_s{split}", kv.short()),
            )
            .param("mode", "split")
            .param("split", split)
            .param("nq", DECODE_NQ)
            .param("g", lanes_for(hd, DECODE_G)),
            AttnKind::Prefill { q_tile } => KernelSpec::new(
                "attention",
                "attention/flash.cu",
                format!("attn_prefill_{}_d{hd}_q{q_tile}", kv.short()),
            )
            .param("mode", "direct")
            .param("split", 0)
            .param("nq", q_tile)
            .param("g", lanes_for(hd, PREFILL_G)),
            AttnKind::Tiled { .. } => unreachable!("returned above"),
        }
        .param("hd", hd)
        .param("kv_type", kv.cuda_type())
        .param("kt", KT)
        .param("rope", "")
        // attention/flash.cu waits for its predecessor (common/pdl.cuh).
        .programmatic()
    }

    /// The decode kernel with RoPE and the KV append folded in (one row; see
    /// [`launch_rope_attention`]). Panics for a route that is not `Decode`.
    pub fn rope_spec(&self, style: RopeStyle) -> KernelSpec {
        let AttnKind::Decode { split } = self.kind else {
            panic!("only the decode route folds RoPE in")
        };
        let name = match style {
            RopeStyle::Neox => "neox",
            RopeStyle::Interleaved => "interleaved",
        };
        let mut spec = self.spec().param("rope", name);
        spec.entry = format!(
            "attn_decode_rope_{name}_{}_d{}_s{split}",
            self.kv.short(),
            self.head_dim
        );
        spec
    }

    /// The decode kernel with RoPE and the KV append folded in, for up to [`MAX_LANES`]
    /// separate sequences in one launch (see [`launch_rope_attention_lanes`]). Panics for a
    /// route that is not `Decode`.
    pub fn rope_lanes_spec(&self, style: RopeStyle) -> KernelSpec {
        let mut spec = self.rope_spec(style).param("lanes", 1);
        spec.entry = spec
            .entry
            .replacen("attn_decode_rope_", "attn_decode_rope_lanes_", 1);
        spec
    }

    /// The decode kernel with RoPE, the KV append and Qwen3.5's gated-attention core folded
    /// in (per-head q/k RMSNorm, the q/gate split, the sigmoid output gate; see
    /// [`launch_gated_attention`]). Panics for a route that is not `Decode`.
    pub fn gated_spec(&self, style: RopeStyle) -> KernelSpec {
        let mut spec = self.rope_spec(style).param("gated", 1);
        spec.entry = spec
            .entry
            .replacen("attn_decode_rope_", "attn_decode_gated_", 1);
        spec
    }

    /// [`AttnRoute::gated_spec`] for up to [`MAX_LANES`] sequences in one launch (see
    /// [`launch_gated_attention_lanes`]).
    pub fn gated_lanes_spec(&self, style: RopeStyle) -> KernelSpec {
        let mut spec = self.rope_lanes_spec(style).param("gated", 1);
        spec.entry = spec
            .entry
            .replacen("attn_decode_rope_lanes_", "attn_decode_gated_lanes_", 1);
        spec
    }

    /// Every kernel the route launches, in launch order.
    pub fn specs(&self) -> Vec<KernelSpec> {
        match self.kind {
            AttnKind::Decode { .. } | AttnKind::Prefill { .. } | AttnKind::Tiled { .. } => {
                vec![self.spec()]
            }
        }
    }

    /// (query vectors per block, threads per block).
    fn tile(&self) -> (usize, usize) {
        let hd = self.head_dim;
        match self.kind {
            AttnKind::Decode { .. } => (DECODE_NQ, DECODE_NQ * lanes_for(hd, DECODE_G)),
            AttnKind::Prefill { q_tile } => (q_tile, q_tile * lanes_for(hd, PREFILL_G)),
            AttnKind::Tiled { q_tile } => {
                let (bk, rq) = tiled_shape(hd);
                (q_tile, (q_tile / rq) * (bk / 4))
            }
        }
    }

    /// Dynamic shared memory of the main kernel: Q and K tiles (padded rows), the V tile
    /// and the probabilities.
    pub fn smem_bytes(&self) -> usize {
        let (nq, _) = self.tile();
        let hd = self.head_dim;
        let qs = hd + 4;
        match self.kind {
            AttnKind::Tiled { .. } => {
                let (bk, _) = tiled_shape(hd);
                4 * (nq * qs + bk * qs + bk * hd + bk * (nq + 4))
            }
            _ => 4 * (nq * qs + KT * qs + KT * hd + nq * (KT + 1)),
        }
    }

    fn all() -> Vec<AttnRoute> {
        let mut routes = Vec::new();
        for kv in KvType::ALL {
            for head_dim in HEAD_DIMS {
                for split in DECODE_SPLITS {
                    routes.push(AttnRoute {
                        kv,
                        head_dim,
                        kind: AttnKind::Decode { split },
                    });
                }
                if TILED_HEAD_DIMS.contains(&head_dim) {
                    for q_tile in TILED_TILES {
                        routes.push(AttnRoute {
                            kv,
                            head_dim,
                            kind: AttnKind::Tiled { q_tile },
                        });
                    }
                } else {
                    for q_tile in PREFILL_TILES {
                        routes.push(AttnRoute {
                            kv,
                            head_dim,
                            kind: AttnKind::Prefill { q_tile },
                        });
                    }
                }
            }
        }
        routes
    }
}

fn append_spec(kv: KvType) -> KernelSpec {
    KernelSpec::new(
        "attention",
        "attention/kv_append.cu",
        format!("attn_kv_append_{}", kv.short()),
    )
    .param("kv_type", kv.cuda_type())
    .param("block", APPEND_BLOCK)
    .programmatic()
}

/// Whether the cuda backend runs a decode step's gated attention core (q/k norms, RoPE,
/// attention, output gate) as one launch: only where the environment sets
/// `NINFER_FUSED_ATTN=1`. Off by default: qualified and identical in the compare runs, but
/// slower than the separate launches (split_heads, two rmsnorms, the RoPE attention launch
/// and sigmoid_gate) on the synthetic 27B, H200, bf16 mode: one lane +89 us a step, 8 lanes
/// +146 to +415 us (`bench/kernels` v87). Kept for A/B runs while its cost is understood.
pub fn gated_fusion_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    super::linear_exact::switch_opt_in(&ON, "NINFER_FUSED_ATTN")
}

/// The one RoPE style the gated kernels are instantiated for (Qwen3.5/3.6's); another
/// style runs the ops apart.
pub const GATED_STYLE: RopeStyle = RopeStyle::Neox;

/// Every registered instantiation of the family.
pub fn instantiations() -> Vec<KernelSpec> {
    let routes = AttnRoute::all();
    let mut specs: Vec<KernelSpec> = routes.iter().map(AttnRoute::spec).collect();
    for r in routes
        .iter()
        .filter(|r| matches!(r.kind, AttnKind::Decode { .. }))
    {
        specs.extend([RopeStyle::Neox, RopeStyle::Interleaved].map(|s| r.rope_spec(s)));
        specs.extend([RopeStyle::Neox, RopeStyle::Interleaved].map(|s| r.rope_lanes_spec(s)));
        // Qwen3.5/3.6 (the only gated-attention models) rotate NeoX style.
        specs.extend([r.gated_spec(GATED_STYLE), r.gated_lanes_spec(GATED_STYLE)]);
    }
    specs.extend(KvType::ALL.map(append_spec));
    specs
}

fn launch_err(entry: &str) -> impl FnOnce(cudarc::driver::DriverError) -> GpuError + '_ {
    move |e| GpuError::driver(format!("launching {entry}"), e)
}

/// Queues `k_cache[pos0 + i] = k[i]`, `v_cache[pos0 + i] = v[i]` for `i < t`: `k`, `v` are
/// f32 `[t, width]`, the caches `[capacity, width]` of type `kv` (bf16: round to nearest
/// even).
#[allow(clippy::too_many_arguments)]
pub fn launch_kv_append(
    gpu: &Gpu,
    kv: KvType,
    k: u64,
    v: u64,
    k_cache: u64,
    v_cache: u64,
    pos: Pos,
    t: usize,
    width: usize,
) -> Result<(), GpuError> {
    let n = t * width;
    if n == 0 {
        return Ok(());
    }
    let (pos0, pos_dev) = pos.kernel_args();
    assert!(
        pos.max_keys(t) * width < i32::MAX as usize,
        "kv append: cache offsets exceed the kernel's int arguments"
    );
    let spec = append_spec(kv);
    let f = gpu.kernel(&spec)?;
    let blocks = n.div_ceil(APPEND_BLOCK as usize).min(4 * 1024) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (APPEND_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let (pos0_i, t_i, width_i) = (pos0 as i32, t as i32, width as i32);
    let mut b = gpu.launch(&f);
    b.arg(&k)
        .arg(&v)
        .arg(&k_cache)
        .arg(&v_cache)
        .arg(&pos0_i)
        .arg(&pos_dev)
        .arg(&t_i)
        .arg(&width_i);
    // SAFETY: matches the template's signature; the caller owns the address ranges
    // (t rows of k/v, rows pos0..pos0+t of the caches).
    unsafe { b.launch(cfg) }.map_err(launch_err(&spec.entry))?;
    Ok(())
}

/// Scratch of the decode route's split-K partials, sized once so that a launch allocates
/// nothing (and can be captured in a CUDA graph).
pub struct AttnWorkspace {
    dims: AttnDims,
    /// Rows one decode launch takes; larger t is done in chunks of this many rows.
    rows: usize,
    /// Split slots per (row, head).
    max_splits: usize,
    acc: CudaSlice<f32>,
    ml: CudaSlice<f32>,
    /// One arrival counter per (query tile, KV head) of a launch: zeros between launches.
    counters: CudaSlice<i32>,
}

impl AttnWorkspace {
    /// A workspace for up to `max_t` rows per call (decode takes at most
    /// [`DECODE_MAX_T`] at a time) and caches up to `max_ctx` positions (longer ones
    /// still work, with wider splits).
    pub fn new(gpu: &Gpu, dims: AttnDims, max_t: usize, max_ctx: usize) -> Result<Self, GpuError> {
        dims.check();
        let rows = max_t.clamp(1, DECODE_MAX_T);
        let max_splits = max_ctx.div_ceil(DECODE_SPLITS[0]).clamp(1, MAX_SPLITS);
        let slots = rows * dims.n_heads * max_splits;
        Ok(AttnWorkspace {
            dims,
            rows,
            max_splits,
            acc: gpu.alloc_zeros(slots * dims.head_dim)?,
            ml: gpu.alloc_zeros(slots * 2)?,
            // Tiles per KV head <= rows * rep, so rows * n_heads pairs at most.
            counters: gpu.alloc_zeros(rows * dims.n_heads)?,
        })
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        4 * (self.acc.len() + self.ml.len() + self.counters.len())
    }
}

/// How a decode launch covers `n_keys` keys with splits of `split` keys and at most
/// `max_splits` of them: (splits, split multiplier).
fn split_plan(n_keys: usize, split: usize, max_splits: usize) -> (usize, usize) {
    let base = n_keys.div_ceil(split).max(1);
    let mult = base.div_ceil(max_splits);
    (n_keys.div_ceil(split * mult).max(1), mult)
}

/// Queues the attention of `q` `[t, n_heads * head_dim]` against the caches (positions
/// `0 .. pos0 + t` must hold this layer's keys and values), writing `out` `[t, n_heads *
/// head_dim]` f32. Addresses are device pointers, 16-byte aligned.
#[allow(clippy::too_many_arguments)]
pub fn launch_attention(
    gpu: &Gpu,
    route: &AttnRoute,
    ws: &mut AttnWorkspace,
    q: u64,
    k_cache: u64,
    v_cache: u64,
    out: u64,
    t: usize,
    pos: Pos,
    dims: AttnDims,
    scale: f32,
) -> Result<(), GpuError> {
    launch_attention_with(
        gpu, route, ws, q, k_cache, v_cache, out, t, pos, dims, scale, None, None,
    )
}

/// The step's key and value, unrotated, for [`launch_rope_attention`].
#[derive(Debug, Clone, Copy)]
pub struct NewKv<'a> {
    /// f32 `[1, n_kv * head_dim]` device addresses.
    pub k: u64,
    pub v: u64,
    pub rope: &'a Rope,
}

/// One decode row with RoPE and the KV append folded into the decode route: rotates `q`
/// (`[1, n_heads * head_dim]`, left unrotated in memory) and `new.k`, stores the rotated
/// key and `new.v` at cache row `pos`, and writes the attention of that row to `out`. The
/// same bits as `rope::launch_rope_append` followed by [`launch_attention`], in one launch.
/// `route` must be a `Decode` route.
#[allow(clippy::too_many_arguments)]
pub fn launch_rope_attention(
    gpu: &Gpu,
    route: &AttnRoute,
    ws: &mut AttnWorkspace,
    q: u64,
    new: NewKv,
    k_cache: u64,
    v_cache: u64,
    out: u64,
    pos: Pos,
    dims: AttnDims,
    scale: f32,
) -> Result<(), GpuError> {
    let rd = new.rope.rotary_dim;
    assert!(
        rd <= dims.head_dim && rd.is_multiple_of(2),
        "rope attention: bad rotary_dim {rd} for head_dim {}",
        dims.head_dim
    );
    assert!(
        matches!(route.kind, AttnKind::Decode { .. }),
        "rope attention: a decode route only"
    );
    launch_attention_with(
        gpu,
        route,
        ws,
        q,
        k_cache,
        v_cache,
        out,
        1,
        pos,
        dims,
        scale,
        Some(new),
        None,
    )
}

/// The zero-centred per-head norms of a gated attention layer's q and k (f32 `[head_dim]`
/// device addresses) and their epsilon.
#[derive(Debug, Clone, Copy)]
pub struct QkNorm {
    pub q: u64,
    pub k: u64,
    pub eps: f32,
}

/// Device addresses of the q (with gates), k and v column blocks of a row of a stacked
/// `[2 q_width | kv_width | kv_width]` projection at `qkv`.
fn gated_blocks(qkv: u64, dims: AttnDims) -> (u64, u64, u64) {
    let k = qkv + (2 * dims.q_width() * 4) as u64;
    (qkv, k, k + (dims.kv_width() * 4) as u64)
}

/// One decode row of Qwen3.5/3.6's gated attention in one launch, from the row of the
/// stacked projection at `qkv` (`[2 n_heads * head_dim | n_kv * head_dim | n_kv *
/// head_dim]`: per q head its query then its gate, then k, then v; read in place): the
/// zero-centred RMSNorm of each q and k head (`norm`), RoPE of both, the KV append at `pos`,
/// attention, and the output times `sigmoid(gate)`, written to `out` (`[1, n_heads *
/// head_dim]`). The values of split_heads, two rmsnorms, [`launch_rope_attention`] and
/// sigmoid_gate up to the order of the norms' sums of squares. `route` must be `Decode`,
/// `rope.style` [`GATED_STYLE`].
#[allow(clippy::too_many_arguments)]
pub fn launch_gated_attention(
    gpu: &Gpu,
    route: &AttnRoute,
    ws: &mut AttnWorkspace,
    qkv: u64,
    norm: QkNorm,
    rope: &Rope,
    k_cache: u64,
    v_cache: u64,
    out: u64,
    pos: Pos,
    dims: AttnDims,
    scale: f32,
) -> Result<(), GpuError> {
    let rd = rope.rotary_dim;
    assert!(
        rd <= dims.head_dim && rd.is_multiple_of(2),
        "gated attention: bad rotary_dim {rd} for head_dim {}",
        dims.head_dim
    );
    assert!(
        matches!(route.kind, AttnKind::Decode { .. }),
        "gated attention: a decode route only"
    );
    assert_eq!(rope.style, GATED_STYLE, "gated attention: rope style");
    let (q, k, v) = gated_blocks(qkv, dims);
    launch_attention_with(
        gpu,
        route,
        ws,
        q,
        k_cache,
        v_cache,
        out,
        1,
        pos,
        dims,
        scale,
        Some(NewKv { k, v, rope }),
        Some(norm),
    )
}

#[allow(clippy::too_many_arguments)]
fn launch_attention_with(
    gpu: &Gpu,
    route: &AttnRoute,
    ws: &mut AttnWorkspace,
    q: u64,
    k_cache: u64,
    v_cache: u64,
    out: u64,
    t: usize,
    pos: Pos,
    dims: AttnDims,
    scale: f32,
    new: Option<NewKv>,
    gated: Option<QkNorm>,
) -> Result<(), GpuError> {
    dims.check();
    assert!(
        gated.is_none() || (new.is_some() && t == 1),
        "attention: the gated kernel takes one row with RoPE"
    );
    let (pos0, pos_dev) = pos.kernel_args();
    assert_eq!(
        route.head_dim, dims.head_dim,
        "attention: the route's head_dim differs from the layer's"
    );
    assert!(
        [q, k_cache, v_cache, out].iter().all(|p| p % 16 == 0),
        "attention: q, caches and out must be 16-byte aligned"
    );
    assert!(
        pos.max_keys(t) * dims.kv_width().max(dims.q_width()) < i32::MAX as usize * 4,
        "attention: sizes exceed the kernel's int arguments"
    );
    if t == 0 {
        return Ok(());
    }
    let spec = match (new, gated) {
        (Some(n), Some(_)) => route.gated_spec(n.rope.style),
        (Some(n), None) => route.rope_spec(n.rope.style),
        (None, _) => route.spec(),
    };
    let f = gpu.kernel(&spec)?;
    let smem = route.smem_bytes();
    gpu.grant_shared_memory(f.function(), smem, &spec.entry)?;
    let (nq, threads) = route.tile();
    let rep = dims.rep();
    let scale_log2 = scale * std::f32::consts::LOG2_E;
    let (n_heads, n_kv) = (dims.n_heads as i32, dims.n_kv_heads as i32);
    let row_bytes = (dims.q_width() * 4) as u64;
    match route.kind {
        AttnKind::Tiled { .. } => {
            // Tile-major, KV head fastest: the kernel starts the heaviest tiles of every
            // head first.
            let tiles = (t * rep).div_ceil(nq);
            let cfg = LaunchConfig {
                grid_dim: ((tiles * dims.n_kv_heads) as u32, 1, 1),
                block_dim: (threads as u32, 1, 1),
                shared_mem_bytes: smem as u32,
            };
            let (t_i, pos0_i) = (t as i32, pos0 as i32);
            let mut b = gpu.launch(&f);
            b.arg(&q)
                .arg(&k_cache)
                .arg(&v_cache)
                .arg(&out)
                .arg(&t_i)
                .arg(&pos0_i)
                .arg(&pos_dev)
                .arg(&n_heads)
                .arg(&n_kv)
                .arg(&scale_log2);
            // SAFETY: matches the template; the kernel reads q rows < t, cache rows
            // < pos0 + t and writes out rows < t.
            unsafe { b.launch(cfg) }.map_err(launch_err(&spec.entry))?;
        }
        AttnKind::Prefill { .. } => {
            let cfg = LaunchConfig {
                grid_dim: ((t * rep).div_ceil(nq) as u32, dims.n_kv_heads as u32, 1),
                block_dim: (threads as u32, 1, 1),
                shared_mem_bytes: smem as u32,
            };
            let (null, t_i, pos0_i, zero, one) = (0u64, t as i32, pos0 as i32, 0i32, 1i32);
            let mut b = gpu.launch(&f);
            b.arg(&q)
                .arg(&k_cache)
                .arg(&v_cache)
                .arg(&out)
                .arg(&null)
                .arg(&t_i)
                .arg(&pos0_i)
                .arg(&pos_dev)
                .arg(&n_heads)
                .arg(&n_kv)
                .arg(&zero)
                .arg(&one)
                .arg(&scale_log2)
                .arg(&null)
                .arg(&null);
            // SAFETY: matches the template; the kernel reads q rows < t, cache rows
            // < pos0 + t and writes out rows < t.
            unsafe { b.launch(cfg) }.map_err(launch_err(&spec.entry))?;
        }
        AttnKind::Decode { split } => {
            assert_eq!(ws.dims, dims, "attention: workspace made for other dims");
            let (acc, ml) = (dptr(gpu, &ws.acc), dptr(gpu, &ws.ml));
            let counters = dptr(gpu, &ws.counters);
            let rope_args = new.map(|n| (n.k, n.v, n.rope.rotary_dim as i32, n.rope.theta));
            // Rows in chunks the workspace holds; each chunk is a shorter block at a
            // later position.
            for r0 in (0..t).step_by(ws.rows) {
                let rows = ws.rows.min(t - r0);
                let p0 = pos0 + r0;
                // A device position plans for the most keys a replay may see (splits past
                // the live keys find nothing and weigh zero in the combine).
                let keys = match pos {
                    Pos::Host(_) => p0 + rows,
                    Pos::Device { max_keys, .. } => max_keys,
                };
                let (splits, mult) = split_plan(keys, split, ws.max_splits);
                let (qc, oc) = (q + r0 as u64 * row_bytes, out + r0 as u64 * row_bytes);
                let cfg = LaunchConfig {
                    grid_dim: (
                        (rows * rep).div_ceil(nq) as u32,
                        dims.n_kv_heads as u32,
                        splits as u32,
                    ),
                    block_dim: (threads as u32, 1, 1),
                    shared_mem_bytes: smem as u32,
                };
                let (rows_i, p0_i) = (rows as i32, p0 as i32);
                let (ms_i, mult_i) = (ws.max_splits as i32, mult as i32);
                let mut b = gpu.launch(&f);
                b.arg(&qc)
                    .arg(&k_cache)
                    .arg(&v_cache)
                    .arg(&acc)
                    .arg(&ml)
                    .arg(&rows_i)
                    .arg(&p0_i)
                    .arg(&pos_dev)
                    .arg(&n_heads)
                    .arg(&n_kv)
                    .arg(&ms_i)
                    .arg(&mult_i)
                    .arg(&scale_log2)
                    .arg(&oc)
                    .arg(&counters);
                if let Some((k_new, v_new, rd, theta)) = &rope_args {
                    assert_eq!(t, 1, "rope attention: one row");
                    b.arg(k_new).arg(v_new).arg(rd).arg(theta);
                }
                if let Some(n) = &gated {
                    b.arg(&n.q).arg(&n.k).arg(&n.eps);
                }
                // SAFETY: matches the template; partial slots (row < rows, head,
                // split < splits <= max_splits) lie inside the workspace, counters cover
                // the grid's (tile, KV head) pairs (at most rows * n_heads), and the
                // merging blocks write out rows r0 .. r0 + rows.
                unsafe { b.launch(cfg) }.map_err(launch_err(&spec.entry))?;
            }
        }
    }
    Ok(())
}

/// Floats from one lane's input row to the next in [`launch_rope_attention_lanes`]: q's, and
/// the step's k's and v's. Separate `[lanes, width]` buffers ([`LaneStrides::dense`]), or
/// column blocks of one `[lanes, q + 2 kv]` activation (both strides its row width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneStrides {
    pub q: usize,
    pub kv: usize,
}

impl LaneStrides {
    /// Rows of separate, contiguous q, k and v buffers.
    pub fn dense(dims: AttnDims) -> LaneStrides {
        LaneStrides {
            q: dims.q_width(),
            kv: dims.kv_width(),
        }
    }
}

/// Most lanes one [`launch_rope_attention_lanes`] serves (the template's `LANES_MAX`).
pub const MAX_LANES: usize = 8;

/// The lanes kernel's by-value table (the template's `LaneTable`): per lane, its layer's K
/// and V cache addresses and its host position (0 where the position is on the device).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneTable {
    pub k: [u64; MAX_LANES],
    pub v: [u64; MAX_LANES],
    pub pos: [i32; MAX_LANES],
}

impl LaneTable {
    /// The table of `caches` (K, V addresses per lane) at `pos`. Panics for more than
    /// [`MAX_LANES`] lanes, or host positions that do not match the lanes.
    pub fn new(caches: &[(u64, u64)], pos: LanePos) -> LaneTable {
        assert!(
            (1..=MAX_LANES).contains(&caches.len()),
            "attention lanes: {} lanes (1..={MAX_LANES})",
            caches.len()
        );
        let mut t = LaneTable {
            k: [0; MAX_LANES],
            v: [0; MAX_LANES],
            pos: [0; MAX_LANES],
        };
        for (i, &(k, v)) in caches.iter().enumerate() {
            t.k[i] = k;
            t.v[i] = v;
        }
        if let LanePos::Host(p) = pos {
            assert_eq!(
                p.len(),
                caches.len(),
                "attention lanes: one position per lane"
            );
            for (i, &x) in p.iter().enumerate() {
                t.pos[i] = i32::try_from(x).expect("attention lanes: position fits an i32");
            }
        }
        t
    }
}

// SAFETY: pushes one pointer, to the table's first byte; `LaneTable` is `repr(C)` with the
// template struct's layout (8 x u64, 8 x u64, 8 x i32: 160 bytes, no padding), and the
// driver copies the parameter's size from that address.
unsafe impl crate::gpu::KernelArg for LaneTable {
    fn push<'a>(&'a self, launch: &mut crate::gpu::Launch<'a>) {
        self.k[0].push(launch);
    }
}

/// The positions of a lanes launch: one per lane on the host, or `i32 [lanes]` in device
/// memory at `ptr` (a captured step's position slots) with `max_keys` bounding the keys
/// any lane of any replay sees (the largest capacity among the lanes).
#[derive(Debug, Clone, Copy)]
pub enum LanePos<'a> {
    Host(&'a [usize]),
    Device { ptr: u64, max_keys: usize },
}

impl LanePos<'_> {
    /// The most keys any lane sees: the grid is planned for it (a lane with fewer keys finds
    /// nothing in the extra splits, which weigh zero in the combine).
    pub fn max_keys(&self) -> usize {
        match *self {
            LanePos::Host(p) => p.iter().map(|&x| x + 1).max().unwrap_or(1),
            LanePos::Device { max_keys, .. } => max_keys,
        }
    }
}

/// The grid of a lanes launch: (query tiles, lanes x KV heads, splits) and the split
/// multiplier, for `lanes` lanes of `dims` with splits of `split` keys and at most
/// `max_splits` slots.
pub fn lanes_grid(
    lanes: usize,
    max_keys: usize,
    dims: AttnDims,
    split: usize,
    max_splits: usize,
) -> ((u32, u32, u32), usize) {
    let (splits, mult) = split_plan(max_keys, split, max_splits);
    let tiles = dims.rep().div_ceil(DECODE_NQ);
    (
        (
            tiles as u32,
            (lanes * dims.n_kv_heads) as u32,
            splits as u32,
        ),
        mult,
    )
}

/// One decode row for each of up to [`MAX_LANES`] separate sequences in one launch, RoPE and
/// the KV append folded in: lane `i` rotates its row of `q` (`n_heads * head_dim` floats at
/// `q + i * strides.q`) and of `new.k` (`n_kv * head_dim` at `new.k + i * strides.kv`; its
/// value at `new.v + i * strides.kv`), stores its key and value at its cache
/// `caches[i]` row `pos[i]`, and writes its attention to row `i` of `out`. Each lane's
/// result has the bits of [`launch_rope_attention`] on that lane with a grid planned for
/// the same keys. `ws` holds the partials of every lane (as rows: at least `lanes` rows).
#[allow(clippy::too_many_arguments)]
pub fn launch_rope_attention_lanes(
    gpu: &Gpu,
    route: &AttnRoute,
    ws: &mut AttnWorkspace,
    q: u64,
    new: NewKv,
    strides: LaneStrides,
    caches: &[(u64, u64)],
    out: u64,
    pos: LanePos,
    dims: AttnDims,
    scale: f32,
) -> Result<(), GpuError> {
    lanes_with(
        gpu, route, ws, q, new, strides, caches, out, pos, dims, scale, None,
    )
}

/// [`launch_gated_attention`] for up to [`MAX_LANES`] separate sequences in one launch: lane
/// `i`'s row of the stacked projection starts at `qkv + i * row_stride` floats (the
/// projection's row width, a multiple of 4); the rest as [`launch_rope_attention_lanes`].
/// Each lane's result has the bits of [`launch_gated_attention`] on that lane with a grid
/// planned for the same keys.
#[allow(clippy::too_many_arguments)]
pub fn launch_gated_attention_lanes(
    gpu: &Gpu,
    route: &AttnRoute,
    ws: &mut AttnWorkspace,
    qkv: u64,
    row_stride: usize,
    norm: QkNorm,
    rope: &Rope,
    caches: &[(u64, u64)],
    out: u64,
    pos: LanePos,
    dims: AttnDims,
    scale: f32,
) -> Result<(), GpuError> {
    assert_eq!(rope.style, GATED_STYLE, "gated attention lanes: rope style");
    assert!(
        row_stride >= 2 * dims.q_width() + 2 * dims.kv_width(),
        "gated attention lanes: rows of {row_stride} floats overlap"
    );
    let (q, k, v) = gated_blocks(qkv, dims);
    let strides = LaneStrides {
        q: row_stride,
        kv: row_stride,
    };
    let new = NewKv { k, v, rope };
    lanes_with(
        gpu,
        route,
        ws,
        q,
        new,
        strides,
        caches,
        out,
        pos,
        dims,
        scale,
        Some(norm),
    )
}

#[allow(clippy::too_many_arguments)]
fn lanes_with(
    gpu: &Gpu,
    route: &AttnRoute,
    ws: &mut AttnWorkspace,
    q: u64,
    new: NewKv,
    strides: LaneStrides,
    caches: &[(u64, u64)],
    out: u64,
    pos: LanePos,
    dims: AttnDims,
    scale: f32,
    gated: Option<QkNorm>,
) -> Result<(), GpuError> {
    dims.check();
    let AttnKind::Decode { split } = route.kind else {
        panic!("rope attention lanes: a decode route only")
    };
    let lanes = caches.len();
    let table = LaneTable::new(caches, pos);
    let rd = new.rope.rotary_dim;
    assert!(
        rd <= dims.head_dim && rd.is_multiple_of(2),
        "rope attention lanes: bad rotary_dim {rd} for head_dim {}",
        dims.head_dim
    );
    assert_eq!(route.head_dim, dims.head_dim, "attention lanes: head_dim");
    assert_eq!(
        ws.dims, dims,
        "attention lanes: workspace made for other dims"
    );
    assert!(
        ws.rows >= lanes,
        "attention lanes: a workspace of {} rows for {lanes} lanes",
        ws.rows
    );
    assert!(
        [q, out, new.k, new.v].iter().all(|p| p % 16 == 0)
            && caches.iter().all(|&(k, v)| k % 16 == 0 && v % 16 == 0),
        "attention lanes: q, caches and out must be 16-byte aligned"
    );
    assert!(
        strides.q >= dims.q_width()
            && strides.kv >= dims.kv_width()
            && strides.q.is_multiple_of(4)
            && strides.kv.is_multiple_of(4),
        "attention lanes: input rows of {strides:?} overlap or lose 16-byte alignment"
    );
    let max_keys = pos.max_keys();
    assert!(
        max_keys * dims.kv_width().max(dims.q_width()) < i32::MAX as usize * 4,
        "attention lanes: sizes exceed the kernel's int arguments"
    );
    let spec = match gated {
        Some(_) => route.gated_lanes_spec(new.rope.style),
        None => route.rope_lanes_spec(new.rope.style),
    };
    let f = gpu.kernel(&spec)?;
    let smem = route.smem_bytes();
    gpu.grant_shared_memory(f.function(), smem, &spec.entry)?;
    let (_, threads) = route.tile();
    let (grid, mult) = lanes_grid(lanes, max_keys, dims, split, ws.max_splits);
    let cfg = LaunchConfig {
        grid_dim: grid,
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let pos_dev = match pos {
        LanePos::Host(_) => 0u64,
        LanePos::Device { ptr, .. } => ptr,
    };
    let (acc, ml) = (dptr(gpu, &ws.acc), dptr(gpu, &ws.ml));
    let counters = dptr(gpu, &ws.counters);
    let (null, one, zero) = (0u64, 1i32, 0i32);
    let (n_heads, n_kv) = (dims.n_heads as i32, dims.n_kv_heads as i32);
    let (ms_i, mult_i) = (ws.max_splits as i32, mult as i32);
    let scale_log2 = scale * std::f32::consts::LOG2_E;
    let rd_i = rd as i32;
    let (q_stride, kv_stride) = (strides.q as i64, strides.kv as i64);
    let mut b = gpu.launch(&f);
    b.arg(&q)
        .arg(&null)
        .arg(&null)
        .arg(&acc)
        .arg(&ml)
        .arg(&one)
        .arg(&zero)
        .arg(&pos_dev)
        .arg(&n_heads)
        .arg(&n_kv)
        .arg(&ms_i)
        .arg(&mult_i)
        .arg(&scale_log2)
        .arg(&out)
        .arg(&counters)
        .arg(&new.k)
        .arg(&new.v)
        .arg(&rd_i)
        .arg(&new.rope.theta)
        .arg(&table)
        .arg(&q_stride)
        .arg(&kv_stride);
    if let Some(n) = &gated {
        b.arg(&n.q).arg(&n.k).arg(&n.eps);
    }
    // SAFETY: matches the template (lanes mode); lane i's partial slots are workspace rows
    // i < lanes <= ws.rows (splits <= max_splits), counters cover lanes x n_kv x tiles <=
    // rows x n_heads pairs, each lane reads and writes its own cache (rows <= its position)
    // and its rows of q, k, v (rows `strides` apart, each inside its stride) and out.
    unsafe { b.launch(cfg) }.map_err(launch_err(&spec.entry))?;
    Ok(())
}

/// The f64 reference. `q` is `[t, n_heads * hd]`; the caches hold at least `pos0 + t`
/// rows of `n_kv * hd`. Returns `[t, n_heads * hd]`.
pub fn reference(
    q: &[f64],
    k_cache: &[f64],
    v_cache: &[f64],
    t: usize,
    pos0: usize,
    dims: AttnDims,
    scale: f64,
) -> Vec<f64> {
    let (hd, kvw, qw) = (dims.head_dim, dims.kv_width(), dims.q_width());
    assert!(dims.n_kv_heads > 0 && dims.n_heads.is_multiple_of(dims.n_kv_heads));
    assert_eq!(q.len(), t * qw, "q is not [t, n_heads * head_dim]");
    let n = pos0 + t;
    assert!(
        k_cache.len() >= n * kvw && v_cache.len() >= n * kvw,
        "caches shorter than pos0 + t rows"
    );
    let rep = dims.rep();
    let mut out = vec![0f64; t * qw];
    out.par_chunks_mut(hd).enumerate().for_each(|(idx, o)| {
        let (i, h) = (idx / dims.n_heads, idx % dims.n_heads);
        let g = h / rep;
        let qh = &q[i * qw + h * hd..][..hd];
        let keys = pos0 + i + 1;
        let s: Vec<f64> = (0..keys)
            .map(|p| {
                let kr = &k_cache[p * kvw + g * hd..][..hd];
                qh.iter().zip(kr).map(|(a, b)| a * b).sum::<f64>() * scale
            })
            .collect();
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
        let z: f64 = w.iter().sum();
        for (p, wp) in w.iter().enumerate() {
            let vr = &v_cache[p * kvw + g * hd..][..hd];
            for (a, b) in o.iter_mut().zip(vr) {
                *a += wp / z * b;
            }
        }
    });
    out
}

/// (t, pos0) every route is checked at.
pub const QUALIFY_CASES: [(usize, usize); 10] = [
    (1, 0),
    (1, 4095),
    (3, 17),
    (8, 1000),
    (9, 0),
    (64, 0),
    (77, 300),
    (512, 0),
    (333, 1234),
    (2, 8190),
];

/// Dims every route of a matching head_dim is checked at (SmolLM2, Qwen3.6-27B, Llama-8B,
/// GQA ratios of 1 and 8 at head sizes 64 and 256).
/// The tiny test models' head sizes (32, 48) come last.
pub const QUALIFY_DIMS: [AttnDims; 8] = [
    SMOLLM2,
    QWEN36_27B,
    LLAMA_8B,
    AttnDims::new(4, 4, 64),
    AttnDims::new(8, 1, 64),
    AttnDims::new(16, 2, 256),
    AttnDims::new(4, 2, 32),
    AttnDims::new(4, 2, 48),
];

fn normals(rng: &mut impl Rng, n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|_| rng.sample::<f32, _>(StandardNormal) * scale)
        .collect()
}

fn to_f64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// One random attention problem on the device: the cache holds `pos0` history rows, then
/// the block's `t` rows appended by [`launch_kv_append`], then NaN rows that no kernel
/// may read.
struct Problem {
    t: usize,
    pos0: usize,
    dims: AttnDims,
    kv: KvType,
    q: CudaSlice<f32>,
    k_new: CudaSlice<f32>,
    v_new: CudaSlice<f32>,
    k_cache: AnyBuffer,
    v_cache: AnyBuffer,
    want: Vec<f64>,
}

/// Rows of NaN past the filled part of a qualify cache.
const POISON_ROWS: usize = 40;

impl Problem {
    fn new(
        gpu: &Gpu,
        rng: &mut impl Rng,
        dims: AttnDims,
        kv: KvType,
        t: usize,
        pos0: usize,
    ) -> Result<Problem, GpuError> {
        let kvw = dims.kv_width();
        let n = pos0 + t;
        // q scaled up so the softmax is peaked, not a flat average.
        let q = normals(rng, t * dims.q_width(), 2.0);
        let kh: Vec<f32> = normals(rng, n * kvw, 1.0)
            .into_iter()
            .map(|x| kv.round(x))
            .collect();
        let vh: Vec<f32> = normals(rng, n * kvw, 1.0)
            .into_iter()
            .map(|x| kv.round(x))
            .collect();
        let mut kc = kh.clone();
        let mut vc = vh.clone();
        // The block's rows are appended by the kernel, not uploaded: poison them.
        for x in kc[pos0 * kvw..].iter_mut().chain(&mut vc[pos0 * kvw..]) {
            *x = f32::NAN;
        }
        kc.extend(std::iter::repeat_n(f32::NAN, POISON_ROWS * kvw));
        vc.extend(std::iter::repeat_n(f32::NAN, POISON_ROWS * kvw));
        // The appended rows in f32: the kernel rounds them (bf16) exactly as kv.round.
        let k_new: Vec<f32> = kh[pos0 * kvw..].to_vec();
        let v_new: Vec<f32> = vh[pos0 * kvw..].to_vec();
        let scale = 1.0 / (dims.head_dim as f64).sqrt();
        let want = reference(
            &to_f64(&q),
            &to_f64(&kh),
            &to_f64(&vh),
            t,
            pos0,
            dims,
            scale,
        );
        Ok(Problem {
            t,
            pos0,
            dims,
            kv,
            q: gpu.upload(&q)?,
            k_new: gpu.upload(&k_new)?,
            v_new: gpu.upload(&v_new)?,
            k_cache: AnyBuffer::upload(gpu, kv.dtype(), &kc)?,
            v_cache: AnyBuffer::upload(gpu, kv.dtype(), &vc)?,
            want,
        })
    }

    fn append(&self, gpu: &Gpu) -> Result<(), GpuError> {
        launch_kv_append(
            gpu,
            self.kv,
            dptr(gpu, &self.k_new),
            dptr(gpu, &self.v_new),
            self.k_cache.device_ptr(gpu),
            self.v_cache.device_ptr(gpu),
            Pos::Host(self.pos0),
            self.t,
            self.dims.kv_width(),
        )
    }

    fn attend(
        &self,
        gpu: &Gpu,
        route: &AttnRoute,
        ws: &mut AttnWorkspace,
        out: &CudaSlice<f32>,
        pos: Pos,
    ) -> Result<(), GpuError> {
        launch_attention(
            gpu,
            route,
            ws,
            dptr(gpu, &self.q),
            self.k_cache.device_ptr(gpu),
            self.v_cache.device_ptr(gpu),
            dptr(gpu, out),
            self.t,
            pos,
            self.dims,
            1.0 / (self.dims.head_dim as f32).sqrt(),
        )
    }

    fn shape(&self) -> String {
        format!("{} t={} pos0={}", self.dims.describe(), self.t, self.pos0)
    }
}

/// Fills the workspace with NaN, so a partial the combine reads but no block wrote fails.
fn poison_workspace(gpu: &Gpu, ws: &mut AttnWorkspace) -> Result<(), GpuError> {
    let (na, nm) = (ws.acc.len(), ws.ml.len());
    let s = gpu.stream();
    s.memcpy_htod(&vec![f32::NAN; na], &mut ws.acc)
        .and_then(|_| s.memcpy_htod(&vec![f32::NAN; nm], &mut ws.ml))
        .map_err(|e| GpuError::driver("poisoning the attention workspace", e))
}

/// Runs one route on a problem with a poisoned output and compares with the reference.
/// `device_pos_keys`: read the position from device memory, the split grid planned for
/// that many keys (as a graph-captured decode step does), instead of passing it.
fn check(
    gpu: &Gpu,
    p: &Problem,
    route: &AttnRoute,
    ws: &mut AttnWorkspace,
    note: &str,
    device_pos_keys: Option<usize>,
) -> Result<Outcome, GpuError> {
    let out = gpu.upload(&vec![f32::NAN; p.t * p.dims.q_width()])?;
    let pos_buf = gpu.upload(&[p.pos0 as i32])?;
    let pos = match device_pos_keys {
        Some(max_keys) => Pos::Device {
            ptr: dptr(gpu, &pos_buf),
            max_keys,
        },
        None => Pos::Host(p.pos0),
    };
    p.attend(gpu, route, ws, &out, pos)?;
    gpu.synchronize()?;
    Ok(Outcome::compare(
        format!("{}{note}", route.spec().entry),
        p.shape(),
        &gpu.download(&out)?,
        &p.want,
        ALLOW_F32,
    ))
}

/// The decode routes `routes` (one cache type) checked as a graph-captured decode step runs
/// them (the tuner's qualification): one row at `pos0` with fresh random inputs, the
/// position on the device and the split grid planned for `max_keys`, output and workspace
/// poisoned, against the f64 reference.
pub fn check_decode_routes(
    gpu: &Gpu,
    routes: &[AttnRoute],
    dims: AttnDims,
    pos0: usize,
    max_keys: usize,
    rng: &mut impl Rng,
) -> Result<Vec<Outcome>, GpuError> {
    let Some(kv) = routes.first().map(|r| r.kv) else {
        return Ok(Vec::new());
    };
    let p = Problem::new(gpu, rng, dims, kv, 1, pos0)?;
    p.append(gpu)?;
    let mut ws = AttnWorkspace::new(gpu, dims, 1, max_keys)?;
    let note = format!(" (device position, grid for {max_keys} keys)");
    let mut outcomes = Vec::with_capacity(routes.len());
    for route in routes {
        assert_eq!(route.kv, kv, "check_decode_routes: one cache type");
        poison_workspace(gpu, &mut ws)?;
        outcomes.push(check(gpu, &p, route, &mut ws, &note, Some(max_keys))?);
    }
    Ok(outcomes)
}

/// Every route at every qualify case and dims of its head size, for both cache types;
/// the KV append bit for bit; a decode step captured in a CUDA graph and replayed.
pub fn qualify(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    let mut outcomes = qualify_append(gpu, rng)?;
    let routes = AttnRoute::all();
    let max_ctx = QUALIFY_CASES.iter().map(|&(t, p)| t + p).max().unwrap();
    for dims in QUALIFY_DIMS {
        let mut ws = AttnWorkspace::new(gpu, dims, DECODE_MAX_T, max_ctx)?;
        // Too few split slots for the long cases: exercises wider splits.
        let mut small_ws = AttnWorkspace::new(gpu, dims, 3, 512)?;
        for kv in KvType::ALL {
            for &(t, pos0) in &QUALIFY_CASES {
                let p = Problem::new(gpu, rng, dims, kv, t, pos0)?;
                p.append(gpu)?;
                poison_workspace(gpu, &mut ws)?;
                for route in routes
                    .iter()
                    .filter(|r| r.kv == kv && r.head_dim == dims.head_dim)
                {
                    outcomes.push(check(gpu, &p, route, &mut ws, "", None)?);
                }
                if t <= DECODE_MAX_T {
                    // The graph-replay form: position on the device, grid for the whole
                    // workspace (most splits past the live keys).
                    poison_workspace(gpu, &mut ws)?;
                    let route = AttnRoute::choose(kv, dims, t);
                    let note = format!(" (device position, grid for {max_ctx} keys)");
                    outcomes.push(check(gpu, &p, &route, &mut ws, &note, Some(max_ctx))?);
                }
                if pos0 >= 1000 || t > DECODE_MAX_T {
                    poison_workspace(gpu, &mut small_ws)?;
                    let route = AttnRoute::choose(kv, dims, 1);
                    outcomes.push(check(
                        gpu,
                        &p,
                        &route,
                        &mut small_ws,
                        " (small workspace)",
                        None,
                    )?);
                }
            }
        }
    }
    outcomes.push(qualify_graph_replay(gpu, rng)?);
    outcomes.extend(qualify_rope_attention(gpu, rng)?);
    Ok(outcomes)
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// [`launch_rope_attention`] against the two launches it replaces (`rope::launch_rope_append`
/// then [`launch_attention`]) on the same inputs: output and both caches bit for bit, at a
/// host position and at a device position with the grid planned for a long context; and its
/// output against the f64 oracle (RoPE and attention in f64 over the caches the separate
/// launches made).
fn qualify_rope_attention(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    use crate::ops::rope::launch_rope_append;
    const MAX_CTX: usize = 8192;
    let mut outcomes = Vec::new();
    // (dims, rotary_dim, theta, pos0)
    let cases = [
        (SMOLLM2, 64, 100_000.0, 0),
        (SMOLLM2, 64, 100_000.0, 531),
        (LLAMA_8B, 128, 500_000.0, 1000),
        (QWEN36_27B, 64, 10_000_000.0, 4095),
        (AttnDims::new(4, 2, 32), 32, 10_000.0, 37),
        (AttnDims::new(4, 2, 48), 48, 10_000.0, 64),
    ];
    for style in [RopeStyle::Neox, RopeStyle::Interleaved] {
        for kv in KvType::ALL {
            for &(dims, rotary_dim, theta, pos0) in &cases {
                let rope = Rope {
                    style,
                    theta,
                    rotary_dim,
                };
                let (kvw, qw) = (dims.kv_width(), dims.q_width());
                let route = AttnRoute::choose(kv, dims, 1);
                let mut ws = AttnWorkspace::new(gpu, dims, 1, MAX_CTX)?;
                let q = normals(rng, qw, 2.0);
                let (k, v) = (normals(rng, kvw, 1.0), normals(rng, kvw, 1.0));
                let mut cache: Vec<f32> = normals(rng, pos0 * kvw, 1.0)
                    .into_iter()
                    .map(|x| kv.round(x))
                    .collect();
                let mut vcache: Vec<f32> = normals(rng, pos0 * kvw, 1.0)
                    .into_iter()
                    .map(|x| kv.round(x))
                    .collect();
                // The step's row and rows past it: NaN, which no kernel may read.
                cache.extend(std::iter::repeat_n(f32::NAN, 4 * kvw));
                vcache.extend(std::iter::repeat_n(f32::NAN, 4 * kvw));
                let (dk, dv) = (gpu.upload(&k)?, gpu.upload(&v)?);
                let pos_buf = gpu.upload(&[pos0 as i32])?;
                let scale = 1.0 / (dims.head_dim as f32).sqrt();
                let dims_s = format!("{} rotary={rotary_dim} pos0={pos0}", dims.describe());
                for device in [false, true] {
                    let pos = if device {
                        Pos::Device {
                            ptr: dptr(gpu, &pos_buf),
                            max_keys: MAX_CTX,
                        }
                    } else {
                        Pos::Host(pos0)
                    };
                    // (output, k cache, v cache) of one path.
                    let mut run = |fused: bool| -> Result<[Vec<f32>; 3], GpuError> {
                        let dq = gpu.upload(&q)?;
                        let kc = AnyBuffer::upload(gpu, kv.dtype(), &cache)?;
                        let vc = AnyBuffer::upload(gpu, kv.dtype(), &vcache)?;
                        let out = gpu.upload(&vec![f32::NAN; qw])?;
                        poison_workspace(gpu, &mut ws)?;
                        let (kcp, vcp) = (kc.device_ptr(gpu), vc.device_ptr(gpu));
                        if fused {
                            let new = NewKv {
                                k: dptr(gpu, &dk),
                                v: dptr(gpu, &dv),
                                rope: &rope,
                            };
                            launch_rope_attention(
                                gpu,
                                &route,
                                &mut ws,
                                dptr(gpu, &dq),
                                new,
                                kcp,
                                vcp,
                                dptr(gpu, &out),
                                pos,
                                dims,
                                scale,
                            )?;
                        } else {
                            launch_rope_append(
                                gpu,
                                dptr(gpu, &dq),
                                1,
                                dims.n_heads,
                                dims.head_dim,
                                pos,
                                &rope,
                                (dptr(gpu, &dk), dptr(gpu, &dv)),
                                (kcp, vcp),
                                dims.n_kv_heads,
                                kv,
                            )?;
                            launch_attention(
                                gpu,
                                &route,
                                &mut ws,
                                dptr(gpu, &dq),
                                kcp,
                                vcp,
                                dptr(gpu, &out),
                                1,
                                pos,
                                dims,
                                scale,
                            )?;
                        }
                        gpu.synchronize()?;
                        Ok([gpu.download(&out)?, kc.download(gpu)?, vc.download(gpu)?])
                    };
                    let apart = run(false)?;
                    let fused = run(true)?;
                    let same = (0..3).all(|i| same_bits(&apart[i], &fused[i]));
                    let entry = route.rope_spec(style).entry;
                    let note = if device { " (device position)" } else { "" };
                    outcomes.push(Outcome {
                        route: format!("{entry} (= rope append + decode, bits){note}"),
                        shape: dims_s.clone(),
                        rel_l2: if same { 0.0 } else { f64::INFINITY },
                        allowance: 0.0,
                        pass: same,
                    });
                    if !device {
                        let n = (pos0 + 1) * kvw;
                        let qr = crate::ops::rope::reference(
                            &q,
                            dims.n_heads,
                            dims.head_dim,
                            pos0,
                            &rope,
                        );
                        let want = reference(
                            &qr,
                            &to_f64(&fused[1][..n]),
                            &to_f64(&fused[2][..n]),
                            1,
                            pos0,
                            dims,
                            scale as f64,
                        );
                        outcomes.push(Outcome::compare(
                            entry,
                            dims_s.clone(),
                            &fused[0],
                            &want,
                            ALLOW_F32,
                        ));
                    }
                }
            }
        }
    }
    Ok(outcomes)
}

/// The family's qualification for `ninfer qualify`, run by parts that a filter wants: the
/// whole family (as [`qualify`]) where any of its other kernels match, the lanes kernel's
/// cases ([`qualify_rope_attention_lanes`]) where one of its instantiations matches.
pub fn qualify_matching(
    gpu: &Gpu,
    rng: &mut impl Rng,
    matches: &dyn Fn(&str) -> bool,
) -> Result<Vec<Outcome>, GpuError> {
    let (gated, plain): (Vec<KernelSpec>, Vec<KernelSpec>) = instantiations()
        .into_iter()
        .partition(|s| s.params.contains_key("gated"));
    let (lanes, rest): (Vec<KernelSpec>, Vec<KernelSpec>) = plain
        .into_iter()
        .partition(|s| s.params.contains_key("lanes"));
    let mut outcomes = Vec::new();
    if rest.iter().any(|s| matches(&s.entry)) {
        outcomes.extend(qualify(gpu, rng)?);
    }
    if lanes.iter().any(|s| matches(&s.entry)) {
        outcomes.extend(qualify_rope_attention_lanes(gpu, rng)?);
    }
    if gated.iter().any(|s| matches(&s.entry)) {
        outcomes.extend(qualify_gated_attention(gpu, rng)?);
    }
    Ok(outcomes)
}

/// Positions of the lanes qualify cases (a lane at 0, lanes far apart, 1 to 8 lanes).
const LANES_CASES: [&[usize]; 5] = [
    &[0],
    &[531, 0],
    &[17, 4095, 1],
    &[0, 63, 64, 65, 2000],
    &[0, 17, 531, 1000, 4095, 3, 64, 2000],
];

/// [`launch_rope_attention_lanes`] on 1 to 8 lanes, each a separate cache of its own
/// capacity (rows from its position on poisoned with NaN), output and workspace poisoned,
/// with fresh random inputs (half the cases as column blocks of one packed qkv activation),
/// positions on the host and on the device (the grid planned for a
/// long context, as a captured lanes step plans it): every lane's output and caches bit for
/// bit against [`launch_rope_attention`] on that lane alone (same plan), and every lane's
/// output against the f64 oracle (RoPE and attention in f64 over the caches it wrote).
pub fn qualify_rope_attention_lanes(
    gpu: &Gpu,
    rng: &mut impl Rng,
) -> Result<Vec<Outcome>, GpuError> {
    const MAX_CTX: usize = 8192;
    let mut outcomes = Vec::new();
    // (dims, rotary_dim, theta): head sizes 64 and 256, GQA ratios 3 and 6.
    let cases = [(SMOLLM2, 64, 100_000.0), (QWEN36_27B, 64, 10_000_000.0)];
    for (ci, &(dims, rotary_dim, theta)) in cases.iter().enumerate() {
        for kv in KvType::ALL {
            for (li, &positions) in LANES_CASES.iter().enumerate() {
                let style = if (ci + li) % 2 == 0 {
                    RopeStyle::Neox
                } else {
                    RopeStyle::Interleaved
                };
                let rope = Rope {
                    style,
                    theta,
                    rotary_dim,
                };
                let n = positions.len();
                let (kvw, qw) = (dims.kv_width(), dims.q_width());
                let route = AttnRoute::choose(kv, dims, 1);
                let q = normals(rng, n * qw, 2.0);
                let (k, v) = (normals(rng, n * kvw, 1.0), normals(rng, n * kvw, 1.0));
                // Lane i's caches: its history, then NaN from its row on (capacities differ).
                let caches: Vec<[Vec<f32>; 2]> = positions
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| {
                        [0, 1].map(|_| {
                            let mut c: Vec<f32> = normals(rng, p * kvw, 1.0)
                                .into_iter()
                                .map(|x| kv.round(x))
                                .collect();
                            c.extend(std::iter::repeat_n(f32::NAN, (1 + 37 * i) * kvw));
                            c
                        })
                    })
                    .collect();
                // Half the cases hand the inputs as a step with a stacked qkv projection does
                // (column blocks of one [lanes, q + 2 kv] activation), half as separate buffers.
                let (strides, inputs) = if li % 2 == 1 {
                    let w = qw + 2 * kvw;
                    let mut x = Vec::with_capacity(n * w);
                    for i in 0..n {
                        x.extend_from_slice(&q[i * qw..][..qw]);
                        x.extend_from_slice(&k[i * kvw..][..kvw]);
                        x.extend_from_slice(&v[i * kvw..][..kvw]);
                    }
                    let blocks = [0, qw, qw + kvw];
                    (LaneStrides { q: w, kv: w }, (x, blocks))
                } else {
                    let x = [&q[..], &k[..], &v[..]].concat();
                    let blocks = [0, n * qw, n * (qw + kvw)];
                    (LaneStrides::dense(dims), (x, blocks))
                };
                let pos_i32: Vec<i32> = positions.iter().map(|&p| p as i32).collect();
                let pos_buf = gpu.upload(&pos_i32)?;
                let scale = 1.0 / (dims.head_dim as f32).sqrt();
                let entry = route.rope_lanes_spec(style).entry;
                for device in [false, true] {
                    let lane_pos = if device {
                        LanePos::Device {
                            ptr: dptr(gpu, &pos_buf),
                            max_keys: MAX_CTX,
                        }
                    } else {
                        LanePos::Host(positions)
                    };
                    let max_keys = lane_pos.max_keys();
                    // (every lane's output row, K caches, V caches) of one path.
                    let run = |lanes: bool| -> Result<Vec<[Vec<f32>; 3]>, GpuError> {
                        let din = gpu.upload(&inputs.0)?;
                        let [qb, kb, vb] = inputs.1.map(|o| dptr(gpu, &din) + (o * 4) as u64);
                        let bufs: Vec<[AnyBuffer; 2]> = caches
                            .iter()
                            .map(|[kc, vc]| -> Result<_, GpuError> {
                                Ok([
                                    AnyBuffer::upload(gpu, kv.dtype(), kc)?,
                                    AnyBuffer::upload(gpu, kv.dtype(), vc)?,
                                ])
                            })
                            .collect::<Result<_, _>>()?;
                        let ptrs: Vec<(u64, u64)> = bufs
                            .iter()
                            .map(|[a, b]| (a.device_ptr(gpu), b.device_ptr(gpu)))
                            .collect();
                        let out = gpu.upload(&vec![f32::NAN; n * qw])?;
                        let mut ws = AttnWorkspace::new(gpu, dims, DECODE_MAX_T, MAX_CTX)?;
                        poison_workspace(gpu, &mut ws)?;
                        let new = |row: usize| NewKv {
                            k: kb + (row * strides.kv * 4) as u64,
                            v: vb + (row * strides.kv * 4) as u64,
                            rope: &rope,
                        };
                        if lanes {
                            launch_rope_attention_lanes(
                                gpu,
                                &route,
                                &mut ws,
                                qb,
                                new(0),
                                strides,
                                &ptrs,
                                dptr(gpu, &out),
                                lane_pos,
                                dims,
                                scale,
                            )?;
                        } else {
                            // One lane at a time, its grid planned for the same keys.
                            for (i, &(kc, vc)) in ptrs.iter().enumerate() {
                                let pos = Pos::Device {
                                    ptr: dptr(gpu, &pos_buf) + 4 * i as u64,
                                    max_keys,
                                };
                                launch_rope_attention(
                                    gpu,
                                    &route,
                                    &mut ws,
                                    qb + (i * strides.q * 4) as u64,
                                    new(i),
                                    kc,
                                    vc,
                                    dptr(gpu, &out) + (i * qw * 4) as u64,
                                    pos,
                                    dims,
                                    scale,
                                )?;
                            }
                        }
                        gpu.synchronize()?;
                        let o = gpu.download(&out)?;
                        bufs.iter()
                            .enumerate()
                            .map(|(i, [a, b])| {
                                Ok([
                                    o[i * qw..][..qw].to_vec(),
                                    a.download(gpu)?,
                                    b.download(gpu)?,
                                ])
                            })
                            .collect()
                    };
                    let apart = run(false)?;
                    let together = run(true)?;
                    let same = apart
                        .iter()
                        .zip(&together)
                        .all(|(a, b)| (0..3).all(|j| same_bits(&a[j], &b[j])));
                    let note = if device { " (device positions)" } else { "" };
                    let shape = format!(
                        "{} {} lanes at {positions:?}{}",
                        dims.describe(),
                        kv.short(),
                        if li % 2 == 1 { ", packed qkv rows" } else { "" }
                    );
                    outcomes.push(Outcome {
                        route: format!("{entry} (= per-lane rope decode, bits){note}"),
                        shape: shape.clone(),
                        rel_l2: if same { 0.0 } else { f64::INFINITY },
                        allowance: 0.0,
                        pass: same,
                    });
                    for (i, &p) in positions.iter().enumerate() {
                        let [o, kc, vc] = &together[i];
                        let keys = (p + 1) * kvw;
                        let qr = crate::ops::rope::reference(
                            &q[i * qw..][..qw],
                            dims.n_heads,
                            dims.head_dim,
                            p,
                            &rope,
                        );
                        let want = reference(
                            &qr,
                            &to_f64(&kc[..keys]),
                            &to_f64(&vc[..keys]),
                            1,
                            p,
                            dims,
                            scale as f64,
                        );
                        // Rows past the lane's own must still hold the poison.
                        let untouched = kc[keys..].iter().chain(&vc[keys..]).all(|x| x.is_nan());
                        let mut o = Outcome::compare(
                            format!("{entry}{note}"),
                            format!("{shape}, lane {i}"),
                            o,
                            &want,
                            ALLOW_F32,
                        );
                        if !untouched {
                            o.pass = false;
                            o.shape.push_str(" (wrote past its row)");
                        }
                        outcomes.push(o);
                    }
                }
            }
        }
    }
    Ok(outcomes)
}

/// Positions of the gated qualify cases: one sequence (`launch_gated_attention`) where there
/// is one, else lanes (`launch_gated_attention_lanes`).
const GATED_CASES: [&[usize]; 6] = [
    &[0],
    &[531],
    &[4095],
    &[531, 0],
    &[17, 4095, 1],
    &[0, 17, 531, 1000, 4095, 3, 64, 2000],
];

/// The f64 oracle of one lane's gated attention core, the ops apart on the host: `row` is
/// the lane's `[q+gate | k | v]` projection row at position `pos`, `k_cache` / `v_cache`
/// its caches as the kernel left them (rows `..= pos`). Returns (the output, the step's
/// key after its norm and RoPE).
#[allow(clippy::too_many_arguments)]
fn gated_reference(
    row: &[f32],
    qn: &[f32],
    kn: &[f32],
    eps: f64,
    k_cache: &[f32],
    v_cache: &[f32],
    pos: usize,
    dims: AttnDims,
    rope: &Rope,
) -> (Vec<f64>, Vec<f64>) {
    let (hd, nh, nkv) = (dims.head_dim, dims.n_heads, dims.n_kv_heads);
    // The zero-centred RMSNorm of one head in f64, rounded to f32 as the op's output is.
    let norm = |x: &[f32], w: &[f32]| -> Vec<f32> {
        let ms = x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / hd as f64;
        let inv = 1.0 / (ms + eps).sqrt();
        x.iter()
            .zip(w)
            .map(|(&v, &w)| (v as f64 * inv * (1.0 + w as f64)) as f32)
            .collect()
    };
    let head = |h: usize| &row[h * 2 * hd..][..2 * hd];
    let q: Vec<f32> = (0..nh).flat_map(|h| norm(&head(h)[..hd], qn)).collect();
    let k0 = 2 * nh * hd;
    let k: Vec<f32> = (0..nkv)
        .flat_map(|g| norm(&row[k0 + g * hd..][..hd], kn))
        .collect();
    let qr = crate::ops::rope::reference(&q, nh, hd, pos, rope);
    let kr = crate::ops::rope::reference(&k, nkv, hd, pos, rope);
    let n = (pos + 1) * dims.kv_width();
    let scale = 1.0 / (hd as f64).sqrt();
    let a = reference(
        &qr,
        &to_f64(&k_cache[..n]),
        &to_f64(&v_cache[..n]),
        1,
        pos,
        dims,
        scale,
    );
    let out = a
        .iter()
        .enumerate()
        .map(|(e, &x)| {
            let gate = head(e / hd)[hd + e % hd] as f64;
            x / (1.0 + (-gate).exp())
        })
        .collect();
    (out, kr)
}

/// The gated decode kernels ([`launch_gated_attention`], [`launch_gated_attention_lanes`])
/// at head sizes 256 (Qwen3.6-27B's 24/4 heads, and 16/2) and 64, both cache types, one
/// sequence and 2 to 8 lanes at several positions, positions on the host and on the device
/// (the grid planned for a long context, as a captured step plans it): fresh random packed
/// `[q+gate | k | v]` rows and norm weights, caches poisoned from each lane's row on,
/// output and workspace poisoned. Every lane's output against the f64 oracle of the ops
/// apart (norms, RoPE, attention over the caches the kernel wrote, gate), its stored key
/// against the oracle's normed and rotated key, its stored value exactly, rows past its own
/// untouched; and the lanes launch bit for bit against one gated launch per lane.
pub fn qualify_gated_attention(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    const MAX_CTX: usize = 8192;
    let mut outcomes = Vec::new();
    // (dims, rotary_dim, theta, eps)
    let cases = [
        (QWEN36_27B, 64, 10_000_000.0, 1e-6),
        (AttnDims::new(16, 2, 256), 64, 10_000_000.0, 1e-6),
        (AttnDims::new(8, 2, 64), 32, 1_000_000.0, 1e-5),
    ];
    for &(dims, rotary_dim, theta, eps) in &cases {
        let rope = Rope {
            style: GATED_STYLE,
            theta,
            rotary_dim,
        };
        let (hd, kvw, qw) = (dims.head_dim, dims.kv_width(), dims.q_width());
        let width = 2 * qw + 2 * kvw;
        let scale = 1.0 / (hd as f32).sqrt();
        for kv in KvType::ALL {
            let route = AttnRoute::choose(kv, dims, 1);
            for &positions in &GATED_CASES {
                let n = positions.len();
                // Rows of different magnitudes (the norms take them out) and weights near 0.
                let rows: Vec<f32> = (0..n)
                    .flat_map(|i| normals(rng, width, 0.5 + i as f32))
                    .collect();
                let (qn, kn) = (normals(rng, hd, 0.1), normals(rng, hd, 0.1));
                let norm_bufs = (gpu.upload(&qn)?, gpu.upload(&kn)?);
                let norm = QkNorm {
                    q: dptr(gpu, &norm_bufs.0),
                    k: dptr(gpu, &norm_bufs.1),
                    eps: eps as f32,
                };
                let caches: Vec<[Vec<f32>; 2]> = positions
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| {
                        [0, 1].map(|_| {
                            let mut c: Vec<f32> = normals(rng, p * kvw, 1.0)
                                .into_iter()
                                .map(|x| kv.round(x))
                                .collect();
                            c.extend(std::iter::repeat_n(f32::NAN, (1 + 37 * i) * kvw));
                            c
                        })
                    })
                    .collect();
                let pos_i32: Vec<i32> = positions.iter().map(|&p| p as i32).collect();
                let pos_buf = gpu.upload(&pos_i32)?;
                let entry = if n == 1 {
                    route.gated_spec(GATED_STYLE).entry
                } else {
                    route.gated_lanes_spec(GATED_STYLE).entry
                };
                for device in [false, true] {
                    let lane_pos = if device {
                        LanePos::Device {
                            ptr: dptr(gpu, &pos_buf),
                            max_keys: MAX_CTX,
                        }
                    } else {
                        LanePos::Host(positions)
                    };
                    let max_keys = lane_pos.max_keys();
                    // (every lane's output row, K cache, V cache) of one path: the lanes
                    // launch, or one gated launch per lane (the one-sequence kernel).
                    let run = |lanes: bool| -> Result<Vec<[Vec<f32>; 3]>, GpuError> {
                        let din = gpu.upload(&rows)?;
                        let bufs: Vec<[AnyBuffer; 2]> = caches
                            .iter()
                            .map(|[kc, vc]| -> Result<_, GpuError> {
                                Ok([
                                    AnyBuffer::upload(gpu, kv.dtype(), kc)?,
                                    AnyBuffer::upload(gpu, kv.dtype(), vc)?,
                                ])
                            })
                            .collect::<Result<_, _>>()?;
                        let ptrs: Vec<(u64, u64)> = bufs
                            .iter()
                            .map(|[a, b]| (a.device_ptr(gpu), b.device_ptr(gpu)))
                            .collect();
                        let out = gpu.upload(&vec![f32::NAN; n * qw])?;
                        let mut ws = AttnWorkspace::new(gpu, dims, DECODE_MAX_T, MAX_CTX)?;
                        poison_workspace(gpu, &mut ws)?;
                        if lanes {
                            launch_gated_attention_lanes(
                                gpu,
                                &route,
                                &mut ws,
                                dptr(gpu, &din),
                                width,
                                norm,
                                &rope,
                                &ptrs,
                                dptr(gpu, &out),
                                lane_pos,
                                dims,
                                scale,
                            )?;
                        } else {
                            for (i, &(kc, vc)) in ptrs.iter().enumerate() {
                                let pos = match lane_pos {
                                    LanePos::Host(p) => Pos::Host(p[i]),
                                    LanePos::Device { ptr, .. } => Pos::Device {
                                        ptr: ptr + 4 * i as u64,
                                        max_keys,
                                    },
                                };
                                launch_gated_attention(
                                    gpu,
                                    &route,
                                    &mut ws,
                                    dptr(gpu, &din) + (i * width * 4) as u64,
                                    norm,
                                    &rope,
                                    kc,
                                    vc,
                                    dptr(gpu, &out) + (i * qw * 4) as u64,
                                    pos,
                                    dims,
                                    scale,
                                )?;
                            }
                        }
                        gpu.synchronize()?;
                        let o = gpu.download(&out)?;
                        bufs.iter()
                            .enumerate()
                            .map(|(i, [a, b])| {
                                Ok([
                                    o[i * qw..][..qw].to_vec(),
                                    a.download(gpu)?,
                                    b.download(gpu)?,
                                ])
                            })
                            .collect()
                    };
                    let note = if device { " (device positions)" } else { "" };
                    let shape = format!(
                        "{} {} rotary={rotary_dim} at {positions:?}",
                        dims.describe(),
                        kv.short()
                    );
                    let got = run(n > 1)?;
                    if n > 1 {
                        // Only a host-position per-lane run plans another grid than the lanes
                        // launch (for each lane's own keys), so compare bits on the device form.
                        if device {
                            let apart = run(false)?;
                            let same = apart
                                .iter()
                                .zip(&got)
                                .all(|(a, b)| (0..3).all(|j| same_bits(&a[j], &b[j])));
                            outcomes.push(Outcome {
                                route: format!("{entry} (= per-lane gated decode, bits){note}"),
                                shape: shape.clone(),
                                rel_l2: if same { 0.0 } else { f64::INFINITY },
                                allowance: 0.0,
                                pass: same,
                            });
                        }
                    }
                    for (i, &p) in positions.iter().enumerate() {
                        let [o, kc, vc] = &got[i];
                        let row = &rows[i * width..][..width];
                        let (want, key) =
                            gated_reference(row, &qn, &kn, eps, kc, vc, p, dims, &rope);
                        let lane = format!("{shape}, lane {i}");
                        let mut out = Outcome::compare(
                            format!("{entry}{note}"),
                            lane.clone(),
                            o,
                            &want,
                            ALLOW_F32,
                        );
                        let keys = (p + 1) * kvw;
                        // Rows past the lane's own must still hold the poison.
                        if !kc[keys..].iter().chain(&vc[keys..]).all(|x| x.is_nan()) {
                            out.pass = false;
                            out.shape.push_str(" (wrote past its row)");
                        }
                        outcomes.push(out);
                        let allow = match kv {
                            KvType::F32 => ALLOW_F32,
                            KvType::Bf16 => ALLOW_BF16,
                        };
                        outcomes.push(Outcome::compare(
                            format!("{entry} (stored key){note}"),
                            lane.clone(),
                            &kc[p * kvw..keys],
                            &key,
                            allow,
                        ));
                        let v0 = 2 * qw + kvw;
                        let v_want: Vec<f32> =
                            row[v0..][..kvw].iter().map(|&x| kv.round(x)).collect();
                        let same = same_bits(&vc[p * kvw..keys], &v_want);
                        outcomes.push(Outcome {
                            route: format!("{entry} (stored value, bits){note}"),
                            shape: lane,
                            rel_l2: if same { 0.0 } else { f64::INFINITY },
                            allowance: 0.0,
                            pass: same,
                        });
                    }
                }
            }
        }
    }
    Ok(outcomes)
}

/// [`launch_kv_append`] against host conversion, bit for bit, rows outside the block
/// untouched.
fn qualify_append(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    let mut outcomes = Vec::new();
    for kv in KvType::ALL {
        for (t, pos0, width) in [(1, 0, 192), (5, 7, 192), (3, 4095, 1024), (512, 100, 1024)] {
            let cap = pos0 + t + 3;
            let sentinel: Vec<f32> = (0..cap * width).map(|i| -777.0 + (i % 97) as f32).collect();
            let k = normals(rng, t * width, 3.0);
            let v = normals(rng, t * width, 0.01);
            let (dk, dv) = (gpu.upload(&k)?, gpu.upload(&v)?);
            let kc = AnyBuffer::upload(gpu, kv.dtype(), &sentinel)?;
            let vc = AnyBuffer::upload(gpu, kv.dtype(), &sentinel)?;
            launch_kv_append(
                gpu,
                kv,
                dptr(gpu, &dk),
                dptr(gpu, &dv),
                kc.device_ptr(gpu),
                vc.device_ptr(gpu),
                Pos::Host(pos0),
                t,
                width,
            )?;
            gpu.synchronize()?;
            let mut exact = true;
            for (cache, src) in [(&kc, &k), (&vc, &v)] {
                let got = cache.download(gpu)?;
                let mut want: Vec<f32> = sentinel.iter().map(|&x| kv.round(x)).collect();
                for (w, &s) in want[pos0 * width..].iter_mut().zip(src) {
                    *w = kv.round(s);
                }
                exact &= got.len() == want.len()
                    && got
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
            }
            outcomes.push(Outcome {
                route: append_spec(kv).entry,
                shape: format!("t={t} pos0={pos0} width={width} (bit-exact)"),
                rel_l2: if exact { 0.0 } else { f64::INFINITY },
                allowance: 0.0,
                pass: exact,
            });
        }
    }
    Ok(outcomes)
}

/// A decode step (append + attention) captured once in a CUDA graph and replayed on new
/// q, new rows and a new history written into the captured buffers.
fn qualify_graph_replay(gpu: &Gpu, rng: &mut impl Rng) -> Result<Outcome, GpuError> {
    let (dims, kv, t, pos0) = (QWEN36_27B, KvType::Bf16, 1, 2000);
    let route = AttnRoute::choose(kv, dims, t);
    let mut ws = AttnWorkspace::new(gpu, dims, t, 4096)?;
    let mut p = Problem::new(gpu, rng, dims, kv, t, pos0)?;
    let mut out = gpu.upload(&vec![f32::NAN; t * dims.q_width()])?;
    let graph = crate::gpu::Graph::capture(gpu, || {
        p.append(gpu)?;
        p.attend(gpu, &route, &mut ws, &out, Pos::Host(pos0))
    })?;
    let mut worst: Option<Outcome> = None;
    for _ in 0..3 {
        // New data into the same buffers.
        let fresh = Problem::new(gpu, rng, dims, kv, t, pos0)?;
        let s = gpu.stream();
        let copy = |e| GpuError::driver("refreshing graph inputs", e);
        s.memcpy_dtod(&fresh.q, &mut p.q).map_err(copy)?;
        s.memcpy_dtod(&fresh.k_new, &mut p.k_new).map_err(copy)?;
        s.memcpy_dtod(&fresh.v_new, &mut p.v_new).map_err(copy)?;
        for (dst, src) in [
            (&mut p.k_cache, &fresh.k_cache),
            (&mut p.v_cache, &fresh.v_cache),
        ] {
            match (dst, src) {
                (AnyBuffer::Bf16(d), AnyBuffer::Bf16(s2)) => s.memcpy_dtod(s2, d),
                (AnyBuffer::F32(d), AnyBuffer::F32(s2)) => s.memcpy_dtod(s2, d),
                _ => unreachable!("same cache type"),
            }
            .map_err(copy)?;
        }
        s.memcpy_htod(&vec![f32::NAN; out.len()], &mut out)
            .map_err(copy)?;
        poison_workspace(gpu, &mut ws)?;
        graph.replay()?;
        gpu.synchronize()?;
        let o = Outcome::compare(
            format!("{} (graph replay)", route.spec().entry),
            p.shape(),
            &gpu.download(&out)?,
            &fresh.want,
            ALLOW_F32,
        );
        if worst.as_ref().is_none_or(|w| w.rel_l2 < o.rel_l2) {
            worst = Some(o);
        }
    }
    Ok(worst.expect("three replays ran"))
}

/// Attention timings: decode steps (t = 1) at growing contexts, judged by the bytes of the
/// cache they must read, and prefill blocks from position 0, judged by their flops. Every
/// tuner candidate of the route's kind runs; caches rotate over sets larger than L2.
pub fn bench(
    ctx: &crate::bench::BenchCtx,
    filter: Option<&str>,
) -> Result<Vec<crate::bench::BenchRecord>, GpuError> {
    use crate::bench::{median_us, rotation_sets};
    let gpu = ctx.gpu;
    let mut records = Vec::new();
    let mut cases: Vec<(AttnDims, KvType, usize, usize)> = Vec::new();
    for (dims, kv) in [
        (LLAMA_8B, KvType::Bf16),
        (QWEN36_27B, KvType::Bf16),
        (QWEN36_27B, KvType::F32),
        (SMOLLM2, KvType::F32),
    ] {
        for ctx_len in [512, 4096, 8192, 32768] {
            cases.push((dims, kv, 1, ctx_len - 1));
        }
        cases.push((dims, kv, 512, 0));
        cases.push((dims, kv, 4096, 0));
    }
    for (dims, kv, t, pos0) in cases {
        let chosen = AttnRoute::choose(kv, dims, t);
        let what = format!(
            "attention {}",
            if t <= DECODE_MAX_T {
                "decode"
            } else {
                "prefill"
            }
        );
        let n = pos0 + t;
        let shape = format!("{} {} t={t} ctx={n}", dims.describe(), kv.short());
        // Every candidate of the decode kind, or of both prefill kinds, that the filter
        // keeps (by "what shape" or by entry), before any upload.
        let is_decode = |k: &AttnKind| matches!(k, AttnKind::Decode { .. });
        let key = format!("{what} {shape}");
        let candidates: Vec<AttnRoute> = AttnRoute::all()
            .into_iter()
            .filter(|r| {
                r.kv == kv
                    && r.head_dim == dims.head_dim
                    && is_decode(&r.kind) == is_decode(&chosen.kind)
                    && crate::bench::filter_may_keep(filter, &[&key, &r.spec().entry])
            })
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let kvw = dims.kv_width();
        let cache_bytes = 2 * n * kvw * kv.bytes();
        let sets = rotation_sets(gpu, cache_bytes);
        let caches: Vec<(CudaSlice<u8>, CudaSlice<u8>)> = (0..sets)
            .map(|_| -> Result<_, GpuError> {
                // Random bits would hold NaNs; small normals converted to the type.
                let vals: Vec<f32> = (0..n * kvw)
                    .map(|i| ((i * 7919) % 101) as f32 * 0.01 - 0.5)
                    .collect();
                let bytes: Vec<u8> = match kv {
                    KvType::F32 => vals.iter().flat_map(|v| v.to_le_bytes()).collect(),
                    KvType::Bf16 => vals
                        .iter()
                        .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
                        .collect(),
                };
                Ok((gpu.upload(&bytes)?, gpu.upload(&bytes)?))
            })
            .collect::<Result<_, _>>()?;
        let q = gpu.upload(&vec![0.05f32; t * dims.q_width()])?;
        let out: CudaSlice<f32> = gpu.alloc_zeros(t * dims.q_width())?;
        let mut ws = AttnWorkspace::new(gpu, dims, t, n)?;
        let scale = 1.0 / (dims.head_dim as f32).sqrt();
        for route in candidates {
            let entry = route.spec().entry;
            // Timed as CUDA graph replays, as the decode step runs: the launches' host
            // cost (kernel lookup, argument packing) is not the kernel's.
            let graphs: Vec<crate::gpu::Graph> = caches
                .iter()
                .map(|(kc, vc)| {
                    crate::gpu::Graph::capture(gpu, || {
                        launch_attention(
                            gpu,
                            &route,
                            &mut ws,
                            dptr(gpu, &q),
                            dptr(gpu, kc),
                            dptr(gpu, vc),
                            dptr(gpu, &out),
                            t,
                            Pos::Host(pos0),
                            dims,
                            scale,
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            let us = median_us(gpu, 3, 30, |i| graphs[i % sets].replay())?;
            // Keys each row sees, summed: the causal triangle.
            let pairs = (0..t).map(|i| (pos0 + i + 1) as f64).sum::<f64>();
            let flops = 4.0 * pairs * dims.n_heads as f64 * dims.head_dim as f64;
            let bytes = (cache_bytes + 2 * t * dims.q_width() * 4) as f64;
            let mut rec = ctx.record(what.clone(), entry.clone(), shape.clone(), us, bytes, flops);
            if route == chosen {
                rec.route.push_str(" (default)");
            }
            records.push(rec);
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_first_row_returns_its_groups_value() {
        // Row 0 at position 0 sees one key: the output is that key's value row.
        let dims = AttnDims::new(4, 2, 2);
        let q = [1.0, 2.0, -3.0, 0.5, 7.0, 7.0, 0.0, 1.0];
        let k = [0.3, -0.1, 2.0, 1.0];
        let v = [1.0, 2.0, 3.0, 4.0];
        let o = reference(&q, &k, &v, 1, 0, dims, 0.7);
        assert_eq!(o, vec![1.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 4.0]);
    }

    #[test]
    fn reference_matches_a_hand_computed_softmax() {
        // One head, hd 1, two keys; row 1 at position 1 sees both.
        let dims = AttnDims::new(1, 1, 1);
        let (q, k, v) = ([5.0, 2.0], [1.0, 3.0], [10.0, -4.0]);
        let o = reference(&q, &k, &v, 2, 0, dims, 0.5);
        assert_eq!(o[0], 10.0);
        let (a, b) = ((2.0f64 * 1.0 * 0.5).exp(), (2.0f64 * 3.0 * 0.5).exp());
        let want = (a * 10.0 + b * -4.0) / (a + b);
        assert!((o[1] - want).abs() < 1e-12, "{} vs {want}", o[1]);
        // The same row as a decode step at pos0 = 1 gives the same value.
        let o1 = reference(&q[1..], &k, &v, 1, 1, dims, 0.5);
        assert!((o1[0] - want).abs() < 1e-12);
    }

    #[test]
    fn reference_matches_the_cpu_backend() {
        use crate::engine::backend::{AttnShape, Backend};
        use crate::engine::cpu::{CpuBackend, Mat};
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let dims = AttnDims::new(6, 2, 8);
        let (t0, t1) = (3, 4);
        let b = CpuBackend;
        let shape = AttnShape {
            n_heads: 6,
            n_kv_heads: 2,
            head_dim: 8,
        };
        let mut cache = b.new_kv_cache(1, shape);
        let q = normals(&mut rng, (t0 + t1) * 48, 1.0);
        let k = normals(&mut rng, (t0 + t1) * 16, 1.0);
        let v = normals(&mut rng, (t0 + t1) * 16, 1.0);
        let _ = b.attention(
            &mut cache,
            0,
            &Mat::new(t0, 48, q[..t0 * 48].to_vec()),
            &Mat::new(t0, 16, k[..t0 * 16].to_vec()),
            &Mat::new(t0, 16, v[..t0 * 16].to_vec()),
        );
        b.kv_advance(&mut cache, t0);
        let got = b.attention(
            &mut cache,
            0,
            &Mat::new(t1, 48, q[t0 * 48..].to_vec()),
            &Mat::new(t1, 16, k[t0 * 16..].to_vec()),
            &Mat::new(t1, 16, v[t0 * 16..].to_vec()),
        );
        let want = reference(
            &to_f64(&q[t0 * 48..]),
            &to_f64(&k),
            &to_f64(&v),
            t1,
            t0,
            dims,
            1.0 / 8f64.sqrt(),
        );
        assert!(crate::qualify::rel_l2(&got.data, &want) < 1e-6);
    }

    #[test]
    fn choose_splits_small_t_and_rejects_unknown_head_dims() {
        for t in [1, 2, 8] {
            assert!(matches!(
                AttnRoute::choose(KvType::F32, LLAMA_8B, t).kind,
                AttnKind::Decode { .. }
            ));
        }
        for t in [9, 64, 4096] {
            assert!(matches!(
                AttnRoute::choose(KvType::Bf16, SMOLLM2, t).kind,
                AttnKind::Tiled { .. }
            ));
            assert!(matches!(
                AttnRoute::choose(KvType::F32, AttnDims::new(4, 2, 48), t).kind,
                AttnKind::Prefill { .. }
            ));
        }
        // The flash prefill is instantiated only where the tiled one is not.
        for r in AttnRoute::all() {
            let tiled = TILED_HEAD_DIMS.contains(&r.head_dim);
            assert!(
                !matches!(r.kind, AttnKind::Prefill { .. }) || !tiled,
                "{r:?}"
            );
            assert!(!matches!(r.kind, AttnKind::Tiled { .. }) || tiled, "{r:?}");
        }
        let r =
            std::panic::catch_unwind(|| AttnRoute::choose(KvType::F32, AttnDims::new(8, 8, 96), 1));
        let msg = r.unwrap_err();
        let msg = msg.downcast_ref::<String>().unwrap();
        assert!(msg.contains("head_dim 96"), "{msg}");
    }

    #[test]
    fn every_chosen_route_is_registered_and_fits_shared_memory() {
        let specs = instantiations();
        for kv in KvType::ALL {
            for dims in QUALIFY_DIMS {
                for t in [1, 8, 9, 512] {
                    for s in AttnRoute::choose(kv, dims, t).specs() {
                        assert!(
                            specs.contains(&s),
                            "{} is chosen but not registered",
                            s.entry
                        );
                    }
                }
            }
        }
        for r in AttnRoute::all() {
            assert!(
                r.smem_bytes() <= 227 * 1024,
                "{:?} needs too much shared memory",
                r
            );
            let (nq, threads) = r.tile();
            let hd = r.head_dim;
            match r.kind {
                AttnKind::Tiled { .. } => {
                    // The template's #error conditions.
                    let (bk, rq) = tiled_shape(hd);
                    let tk = bk / 4;
                    assert!(threads <= 1024 && threads.is_multiple_of(32), "{r:?}");
                    assert!(32usize.is_multiple_of(tk) && hd.is_multiple_of(4 * tk));
                    assert!(nq.is_multiple_of(rq) && (rq == 2 || rq == 4));
                    assert!((bk * hd / 4).is_multiple_of(threads));
                }
                _ => {
                    let g = threads / nq;
                    assert!(
                        threads <= 1024
                            && 32usize.is_multiple_of(g)
                            && hd.is_multiple_of(4 * g)
                            && KT.is_multiple_of(g)
                    );
                }
            }
        }
        assert!(DECODE_SPLITS.iter().all(|s| s % KT == 0));
    }

    #[test]
    fn split_plan_covers_every_key_within_the_slots() {
        for n in [1, 63, 64, 65, 4096, 8192, 100_000] {
            for split in DECODE_SPLITS {
                for max in [1, 7, 8, 256] {
                    let (splits, mult) = split_plan(n, split, max);
                    assert!(
                        splits <= max && splits >= 1,
                        "n={n} split={split} max={max}"
                    );
                    assert!(splits * split * mult >= n);
                    assert!((splits - 1) * split * mult < n, "an empty split");
                }
            }
        }
        assert_eq!(split_plan(4096, 64, 256), (64, 1));
        assert_eq!(split_plan(4096, 64, 8), (8, 8));
    }

    #[test]
    fn lane_table_holds_each_lanes_caches_and_host_position() {
        let caches = [(0x1000, 0x2000), (0x3000, 0x4000), (0x5000, 0x6000)];
        let t = LaneTable::new(&caches, LanePos::Host(&[7, 0, 4095]));
        assert_eq!(&t.k[..3], &[0x1000, 0x3000, 0x5000]);
        assert_eq!(&t.v[..3], &[0x2000, 0x4000, 0x6000]);
        assert_eq!(&t.pos[..3], &[7, 0, 4095]);
        assert!(t.k[3..].iter().chain(&t.v[3..]).all(|&p| p == 0));
        // Device positions: the host parts are zero (the kernel adds pos_dev[lane]).
        let d = LaneTable::new(
            &caches,
            LanePos::Device {
                ptr: 64,
                max_keys: 512,
            },
        );
        assert_eq!(d.pos, [0; MAX_LANES]);
        // The template's struct: 8 + 8 pointers and 8 ints, no padding.
        assert_eq!(std::mem::size_of::<LaneTable>(), 160);
        let too_many = vec![(16u64, 32u64); MAX_LANES + 1];
        let r = std::panic::catch_unwind(|| LaneTable::new(&too_many, LanePos::Host(&[0; 9])));
        assert!(r.is_err());
        let r = std::panic::catch_unwind(|| LaneTable::new(&caches, LanePos::Host(&[0, 1])));
        assert!(r.is_err(), "a position per lane");
    }

    #[test]
    fn lanes_grid_plans_for_the_lane_with_the_most_keys() {
        // Host positions: the grid covers the longest lane (4096 keys); lanes x KV heads in y.
        let pos = LanePos::Host(&[0, 4095, 17]);
        assert_eq!(pos.max_keys(), 4096);
        let (grid, mult) = lanes_grid(3, pos.max_keys(), SMOLLM2, 64, 256);
        assert_eq!(grid, (1, 9, 64));
        assert_eq!(mult, 1);
        // The same plan as the per-lane launch of the longest lane.
        assert_eq!((grid.2 as usize, mult), split_plan(4096, 64, 256));
        // A captured step plans for the largest capacity; rep 6 over 8 vectors is one tile.
        let dev = LanePos::Device {
            ptr: 0,
            max_keys: 8192,
        };
        let (grid, mult) = lanes_grid(8, dev.max_keys(), QWEN36_27B, 64, 8);
        assert_eq!(grid, (1, 32, 8));
        assert_eq!(mult, 16);
        // rep 8 needs one tile, rep 16 two; counters (y * x) stay within lanes x n_heads.
        for dims in QUALIFY_DIMS {
            let (g, _) = lanes_grid(MAX_LANES, 1, dims, 64, 1);
            assert!((g.0 * g.1) as usize <= MAX_LANES * dims.n_heads, "{dims:?}");
        }
    }

    #[test]
    fn lanes_specs_are_registered_and_named_apart() {
        let specs = instantiations();
        for kv in KvType::ALL {
            for dims in QUALIFY_DIMS {
                let r = AttnRoute::choose(kv, dims, 1);
                for style in [RopeStyle::Neox, RopeStyle::Interleaved] {
                    let s = r.rope_lanes_spec(style);
                    assert!(
                        s.entry.starts_with("attn_decode_rope_lanes_"),
                        "{}",
                        s.entry
                    );
                    assert_ne!(s.entry, r.rope_spec(style).entry);
                    assert!(specs.contains(&s), "{} not registered", s.entry);
                }
            }
        }
        // `qualify --filter attn_decode_rope_lanes` selects the lanes cases alone (the gated
        // lanes kernels have their own cases).
        for s in &specs {
            let lanes = s.params.contains_key("lanes") && !s.params.contains_key("gated");
            assert_eq!(
                lanes,
                s.entry.contains("attn_decode_rope_lanes"),
                "{}",
                s.entry
            );
        }
    }

    #[test]
    fn gated_specs_are_registered_and_named_apart() {
        let specs = instantiations();
        for kv in KvType::ALL {
            for dims in QUALIFY_DIMS {
                let r = AttnRoute::choose(kv, dims, 1);
                let (one, lanes) = (r.gated_spec(GATED_STYLE), r.gated_lanes_spec(GATED_STYLE));
                assert!(
                    one.entry.starts_with("attn_decode_gated_neox_"),
                    "{}",
                    one.entry
                );
                assert!(
                    lanes.entry.starts_with("attn_decode_gated_lanes_neox_"),
                    "{}",
                    lanes.entry
                );
                assert!(specs.contains(&one), "{} not registered", one.entry);
                assert!(specs.contains(&lanes), "{} not registered", lanes.entry);
            }
        }
        // `qualify --filter attn_decode_gated` selects the gated cases alone, and every
        // gated kernel is a rope decode kernel.
        for s in &specs {
            let gated = s.params.contains_key("gated");
            assert_eq!(gated, s.entry.contains("attn_decode_gated"), "{}", s.entry);
            assert!(!gated || s.params.contains_key("rope"), "{}", s.entry);
        }
    }

    /// `cargo test --release --lib ops::attention::tests::gpu_bench -- --ignored --nocapture`
    /// on a machine with a GPU: the bench table without the CLI.
    #[test]
    #[ignore = "needs a GPU"]
    fn gpu_bench() {
        let gpu = Gpu::open(0).unwrap();
        let copy = crate::bench::measure_copy_bandwidth(&gpu).unwrap();
        let ctx = crate::bench::BenchCtx {
            gpu: &gpu,
            copy_bytes_per_s: copy,
            gemm_flops_per_s: Some(crate::bench::measure_gemm_rate(&gpu).unwrap()),
            rev: "test".into(),
            command: "gpu_bench".into(),
        };
        let filter = std::env::var("ATTN_BENCH_FILTER").ok();
        let records = bench(&ctx, filter.as_deref()).unwrap();
        for r in &records {
            println!(
                "{:34} {:40} {:>10.2} us  {:>5.1}% of {}",
                r.route,
                r.shape,
                r.median_us,
                100.0 * r.fraction,
                r.ceiling
            );
        }
    }

    /// `qualify` without the CLI (same as `ninfer qualify --filter attn_`).
    #[test]
    #[ignore = "needs a GPU"]
    fn gpu_qualify() {
        use rand::SeedableRng;
        let gpu = Gpu::open(0).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let outcomes = qualify(&gpu, &mut rng).unwrap();
        let worst = outcomes
            .iter()
            .filter(|o| o.allowance > 0.0)
            .map(|o| o.rel_l2)
            .fold(0.0, f64::max);
        let failed: Vec<_> = outcomes.iter().filter(|o| !o.pass).collect();
        println!(
            "{} checks, {} failed, worst rel L2 {worst:.3e}",
            outcomes.len(),
            failed.len()
        );
        for o in &failed {
            println!("FAIL {} {} {:.3e}", o.route, o.shape, o.rel_l2);
        }
        assert!(failed.is_empty());
    }
}
