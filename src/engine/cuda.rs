//! The cuda backend: the [`Backend`] ops on one GPU through the JIT kernels.
//!
//! This is the op-by-op engine: every call queues kernels on the device's stream and
//! returns device buffers; nothing comes back to the host but logits (and the MoE router's
//! probabilities, which the architectures read to route). Activations are f32 between ops.
//! Linear layers run in one of two modes:
//!
//! - exact (the default): the f32-activation route, so the backend agrees with the cpu
//!   backend to rounding error whatever the weight format; the GPU engine's reference, and
//!   what faster paths are checked against;
//! - bf16: linears of up to 32 rows in the formats the exact route's mma GEMV takes
//!   (q4_g64, q8_g32: decode, several lanes) run that GEMV as exact mode does, fused, with
//!   its activations rounded to bf16 (one n-tile a token instead of three; one and two rows
//!   keep the exact CUDA-core kernels, as fast); the others round their inputs to bf16 for
//!   the tensor-core routes (`ops::linear`: the mma GEMV for small T, the tiled A16 route for
//!   prefill), outputs widened back to f32; layers whose width the tensor-core routes cannot
//!   take (K not a multiple of 64) stay exact.
//!
//! With `prefill_cublas` (`--prefill-cublas`), the exact mode's linears of at least
//! `linear_cublas::MIN_T` rows (prompts, perplexity windows; never decode) run on cuBLAS
//! instead, weights dequantized to bf16 per tile of rows and activations rounded to bf16:
//! lossy, opt-in. The fused ops fall back to the plain linear there, so they take it too.
//!
//! Every op allocates its output on the stream (stream-ordered, so allocation is cheap) and
//! launches on its own. Single-token steps are captured once per sequence as a CUDA graph
//! and replayed (`graphs` option): the second such step is recorded (the first runs op by
//! op, so that every kernel is compiled and loaded before a capture), and every later one is
//! one graph launch. A captured step reads its token id and position from a small device
//! buffer the host writes before each replay, so RoPE, the KV append and attention take
//! their position from device memory ([`Pos::Device`]) and the attention's split grid is
//! planned for the cache's whole capacity; allocations inside the step become the graph's
//! own memory nodes. A cache that must grow makes the next step capture again.
//!
//! The trait's ops cannot fail, so a GPU error here is a panic whose message names the
//! failing op and the driver's error.

use std::sync::{Arc, Mutex, OnceLock, RwLock};

use cudarc::driver::{DevicePtr, PinnedHostSlice};

use super::backend::{
    check_lanes, gated_attention_apart, AttnShape, Backend, GatedCaches, QkNorms, Rope,
};
use crate::formats::{Format, Layout};
use crate::gpu::{env_switch, AnyBuffer, CudaSlice, Gpu, GpuError, Graph};
use crate::ops::attention::{self, AttnDims, AttnRoute, AttnWorkspace, KvType};
use crate::ops::embedding::{self, EmbeddingRoute};
use crate::ops::gdn::{self, GdnDims, Mode, RawInputs, RecurrentRoute, StateType};
use crate::ops::linear::{self, Epilogue, LinearArgs, LinearRoute};
use crate::ops::linear_cublas::PrefillCublas;
use crate::ops::linear_exact::{self, ExactKernel, ExactRoute, Prologue, PrologueKind};
use crate::ops::linear_sgemm::{self, SgemmRoute};
use crate::ops::rmsnorm::{self, NormShape, NormWeight, RmsNormRoute};
use crate::ops::weight::DeviceWeight;
use crate::ops::{elementwise, rope, DType, Pos};
use crate::tune::attn as tune_attn;
use crate::tune::RouteTable;

/// How the backend stores what the model hands it.
#[derive(Debug, Clone, Copy)]
pub struct CudaOptions {
    /// Weight format of every linear layer and embedding table (f32 keeps the source
    /// values exactly; a layer whose width the format cannot take stays f32).
    pub weights: &'static Format,
    /// Storage of the KV cache.
    pub kv: KvType,
    /// How linear layers see their inputs.
    pub act: LinearActivations,
    /// Capture single-token steps as CUDA graphs and replay them.
    pub graphs: bool,
    /// Fold RMSNorm and SwiGLU into the load of the linear that consumes them, where the
    /// linear's route can (`Backend::norm_linear`, `Backend::swiglu_linear_add`).
    pub fused: bool,
    /// `--prefill-cublas`: exact-mode linears of many rows on cuBLAS with bf16 weights and
    /// activations (`ops::linear_cublas`); lossy.
    pub prefill_cublas: bool,
    /// Programmatic dependent launch for the kernels that opt in, where the device has it
    /// (sm_90 and later; `crate::gpu::Launch`). Off: every launch waits for the one before.
    pub pdl: bool,
}

/// The precision of linear layers' inputs and outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LinearActivations {
    /// f32 in and out (CUDA cores): matches the cpu backend to rounding error.
    Exact,
    /// bf16 in and out around the tensor-core routes: the fast path (synthetic 27B q4_g64
    /// on an H200: 937 tokens/s at 8 lanes against 662 exact, prompt 4096 at 5,195
    /// tokens/s; `bench/kernels` v70, v71) for +0.009% (decode routes) and +0.013%
    /// (prefill routes) perplexity on SmolLM2 q4_g64 (`docs/quality-trades.md`); 1e-2 to
    /// 3e-2 from the cpu in logits over long prompts.
    Bf16,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions {
            weights: crate::formats::format("f32").expect("f32 is a registered format"),
            kv: KvType::F32,
            act: LinearActivations::Exact,
            graphs: true,
            fused: true,
            prefill_cublas: false,
            pdl: true,
        }
    }
}

/// An elementwise op of two inputs: `(gpu, a, b, out, n)`.
type PointwiseOp = fn(&Gpu, u64, u64, u64, usize) -> Result<(), GpuError>;

/// Set (to anything but `0`), decode steps run RoPE + KV append and attention as two launches
/// instead of the one fused decode kernel (an A/B switch for timing; `--unfused` also does).
pub const ROPE_ATTENTION_APART_ENV: &str = "NINFER_ROPE_ATTENTION_APART";

fn rope_attention_apart() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| env_switch(ROPE_ATTENTION_APART_ENV))
}

/// Set (to anything but `0`), a lanes step runs its decode attention as one launch per lane
/// instead of one launch for all lanes (an A/B switch for timing).
pub const LANES_ATTENTION_APART_ENV: &str = "NINFER_LANES_ATTENTION_APART";

/// Set (to anything but `0`), a captured step's logits are read back into pageable memory
/// as before the page-locked buffer (an A/B switch for timing).
pub const PAGEABLE_LOGITS_ENV: &str = "NINFER_PAGEABLE_LOGITS";

fn pageable_logits() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| env_switch(PAGEABLE_LOGITS_ENV))
}

fn lanes_attention_apart() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| env_switch(LANES_ATTENTION_APART_ENV))
}

/// Blocks of at least this many tokens go through the chunked GDN prefill (chunk 64).
const GDN_CHUNKED_MIN_T: usize = 64;

/// The cuda backend (cheap to clone: the device is shared).
#[derive(Clone)]
pub struct CudaBackend {
    gpu: Arc<Gpu>,
    opts: CudaOptions,
    /// Set while a decode step is being captured (shared by the clones the model holds).
    capturing: Arc<Mutex<Option<Capturing>>>,
    /// The tuned routes of this device's profile (empty: the built-in heuristics), shared
    /// by the clones the model holds so that `bench model --profile-ab` can switch them.
    routes: Arc<RwLock<Arc<RouteTable>>>,
    /// The cuBLAS prefill route's handle and scratch, with `prefill_cublas`.
    prefill: Option<Arc<PrefillCublas>>,
    /// Where a captured step's activations are carved from (set while capturing).
    arena: Arc<Mutex<Option<StepArena>>>,
    /// Batches (their caches' ids) whose lanes step has run op by op: every kernel it
    /// launches is loaded and its GDN states sit in slabs.
    lanes_warmed: Arc<Mutex<Vec<Vec<u64>>>>,
    /// Bumped whenever GDN states move into a slab (`gdn_epoch`).
    gdn_epoch: Arc<std::sync::atomic::AtomicU64>,
    /// Whether the lanes' GDN in-projection runs the causal conv in its epilogue (from
    /// `NINFER_GDN_CONV_EPILOGUE`; shared by the clones the model holds so that `bench model
    /// --conv-epilogue-ab` can switch it).
    conv_epilogue: Arc<std::sync::atomic::AtomicBool>,
}

/// Where a lanes attention launch reads each lane's q, k and v (device addresses of lane
/// 0's rows, and the floats between lanes' rows).
#[derive(Debug, Clone, Copy)]
struct LaneInputs {
    q: u64,
    k: u64,
    v: u64,
    strides: attention::LaneStrides,
}

/// A batch's lanes-step graph bookkeeping, kept in the first lane's cache: the batch that
/// lane leads decodes together for many steps; another batch (other caches behind it, or a
/// cache that grew) captures again.
#[derive(Default)]
struct LanesGraph {
    /// `i32 [ids of the lanes; their positions]`, written by the host before each replay.
    io: Option<CudaSlice<i32>>,
    /// Every lane's logits, lane after lane.
    out: Option<CudaSlice<f32>>,
    /// Every lane's greedy next token (the argmax of its logits).
    ids: Option<CudaSlice<u32>>,
    /// Page-locked host memory the logits are read through.
    host: Option<PinnedHostSlice<f32>>,
    captured: Option<CapturedLanes>,
    /// The captured step's activations (see [`StepArena`]).
    arena: Option<Arc<AnyBuffer>>,
    arena_need: usize,
}

/// A captured lanes step: the caches it names (by id) and the capacities it planned for.
struct CapturedLanes {
    graph: Graph,
    /// The GDN epoch it was captured in.
    epoch: u64,
    caches: Vec<(u64, usize)>,
    out_len: usize,
}

/// Ids that tell caches apart (a captured lanes step names its caches' buffers).
static NEXT_CACHE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One buffer that every activation of a captured step is a slice of, so that the graph
/// holds no memory-allocation nodes between its kernels: an allocation node between two
/// kernels is what the second one depends on, and it would keep the kernel-to-kernel
/// edge (and so a programmatic launch) from forming.
struct StepArena {
    buf: Arc<AnyBuffer>,
    /// f32 elements handed out so far.
    used: usize,
    /// f32 elements the step asked for (more than `buf` holds: the next capture's size).
    need: usize,
}

/// Activations in the arena start at multiples of this many f32 (256 bytes).
const ARENA_ALIGN: usize = 64;
/// The first arena of a sequence, in f32 elements (4 MB; a step that needs more gets
/// stream allocations for the rest, and the next capture a larger arena).
const ARENA_FIRST: usize = 1 << 20;

/// What differs while a step is captured: where its inputs and logits live.
#[derive(Debug, Clone, Copy)]
struct Capturing {
    /// `i32 [token ids; positions]` (one of each per lane), written by the host before each
    /// replay.
    io: u64,
    /// Lanes of the step (1 for a single sequence's step).
    lanes: usize,
    /// The position slot of the lane whose attention is being recorded.
    pos: u64,
    /// Where the step's logits are copied (f32, `out_cap` of them).
    out: u64,
    out_cap: usize,
    /// Where each row's argmax goes (u32, one a lane): the greedy next token, for a replay
    /// that reads back nothing else.
    ids: u64,
    /// The KV capacity of the lane whose attention is being recorded (attention plans its
    /// grid for it).
    capacity: usize,
    /// Logits the step produced (set by `to_host`, which the forward calls once).
    out_len: Option<usize>,
}

/// A sequence's captured single-token step.
struct CapturedStep {
    graph: Graph,
    /// The GDN epoch it was captured in (a later move of GDN states invalidates it).
    epoch: u64,
    /// The cache capacity it was captured at: the buffers it names, and the most
    /// positions its attention grid covers.
    capacity: usize,
    out_len: usize,
}

/// A sequence's decode-graph bookkeeping (kept in its KV cache, which is per sequence).
#[derive(Default)]
struct StepGraph {
    /// A single-token step has run op by op (the first always does: kernels load then,
    /// and module loads cannot be captured).
    warmed: bool,
    /// `i32 [id, pos]` and the logits slot, made at the first capture.
    io: Option<CudaSlice<i32>>,
    out: Option<CudaSlice<f32>>,
    /// The greedy next token (the logits' argmax).
    ids: Option<CudaSlice<u32>>,
    /// Page-locked host memory the logits are read through.
    host: Option<PinnedHostSlice<f32>>,
    captured: Option<CapturedStep>,
    /// The captured step's activations (see [`StepArena`]); lives as long as its graph.
    arena: Option<Arc<AnyBuffer>>,
    /// f32 elements the last captured step allocated.
    arena_need: usize,
}

/// An f32 activation matrix on the device: its own buffer, or a view into another's (the
/// columns of a one-row matrix are contiguous, so `slice_cols` of a decode step's row is
/// free; writing through a view writes the matrix it came from).
pub struct CudaAct {
    rows: usize,
    cols: usize,
    buf: Arc<AnyBuffer>,
    /// Elements of `buf` before this matrix's first.
    offset: usize,
}

impl CudaAct {
    fn new(rows: usize, cols: usize, buf: AnyBuffer) -> Self {
        CudaAct {
            rows,
            cols,
            buf: Arc::new(buf),
            offset: 0,
        }
    }

    /// The buffer of a matrix just made (never a view), for launches that take one.
    fn own_buf(&mut self) -> &mut AnyBuffer {
        assert_eq!(self.offset, 0, "a view has no buffer of its own");
        Arc::get_mut(&mut self.buf).expect("a fresh activation is not shared")
    }
}

/// One sequence's KV cache: per layer, K and V of `capacity` positions.
pub struct CudaKvCache {
    /// Unique among caches (a captured lanes step names the caches it was recorded on).
    id: u64,
    shape: AttnShape,
    len: usize,
    capacity: usize,
    k: Vec<CudaSlice<u8>>,
    v: Vec<CudaSlice<u8>>,
    /// Split-K scratch for the whole capacity (sized with it in `kv_reserve`).
    ws: Option<AttnWorkspace>,
    step: StepGraph,
    /// The captured lanes step of the batch this cache leads (as lane 0).
    lanes: LanesGraph,
}

/// A GDN layer's parameters on the device.
pub struct CudaGdnWeights(gdn::GdnWeights);

/// One sequence's state of one GDN layer: a buffer of its own (one lane), or lane `lane` of
/// a slab that holds a batch's states side by side (`gdn::GdnState` of `lanes` lanes, the
/// layout one recurrent launch steps every lane of). A batch's first lanes step moves its
/// states into a slab; the sequence's own ops then work on its slot.
pub struct CudaGdnState(GdnSlot);

enum GdnSlot {
    Own(gdn::GdnState),
    Slab {
        slab: Arc<Mutex<gdn::GdnState>>,
        lane: usize,
    },
}

fn ok<T>(what: &str, r: Result<T, GpuError>) -> T {
    r.unwrap_or_else(|e| panic!("cuda backend: {what}: {e}"))
}

/// The widths the GDN mixer's inputs must have: `mixed` the conv channels, `z` the value
/// heads, `a` and `b` one per value head.
fn check_gdn_inputs(d: &GdnDims, mixed: &CudaAct, z: &CudaAct, a: &CudaAct, b: &CudaAct) {
    assert_eq!(mixed.cols, d.conv_dim(), "gdn: mixed width");
    assert_eq!(z.cols, d.value_dim(), "gdn: z width");
    assert_eq!((a.cols, b.cols), (d.hv, d.hv), "gdn: a/b width");
}

impl CudaBackend {
    /// Opens GPU `ordinal`.
    pub fn open(ordinal: usize, opts: CudaOptions) -> Result<Self, GpuError> {
        let gpu = Gpu::open(ordinal)?;
        if !opts.pdl {
            gpu.set_pdl(false);
        }
        let gpu = Arc::new(gpu);
        let prefill = match opts.prefill_cublas {
            true => Some(Arc::new(PrefillCublas::new(&gpu)?)),
            false => None,
        };
        Ok(CudaBackend {
            gpu,
            opts,
            capturing: Arc::new(Mutex::new(None)),
            routes: Arc::new(RwLock::new(Arc::new(RouteTable::heuristics()))),
            prefill,
            arena: Arc::new(Mutex::new(None)),
            lanes_warmed: Arc::new(Mutex::new(Vec::new())),
            gdn_epoch: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            conv_epilogue: Arc::new(std::sync::atomic::AtomicBool::new(
                crate::ops::linear_mma_exact::conv_epilogue_enabled(),
            )),
        })
    }

    /// Switches the cuBLAS prefill route on or off (a backend opened with `prefill_cublas`;
    /// `bench model --prefill-cublas-ab` times both over one load). Returns whether it can.
    pub fn set_prefill_cublas(&self, on: bool) -> bool {
        match &self.prefill {
            Some(p) => {
                p.set_on(on);
                true
            }
            None => false,
        }
    }

    /// Takes the routes of a tuning profile (`crate::tune::resolve`), for this backend and
    /// every clone of it (the model's). Steps captured before keep the routes they were
    /// captured with: switch between sequences, not inside one.
    pub fn set_routes(&self, routes: Arc<RouteTable>) {
        *self.routes.write().expect("route table lock") = routes;
    }

    /// The route table in use.
    pub fn routes(&self) -> Arc<RouteTable> {
        self.routes.read().expect("route table lock").clone()
    }

    /// Whether the lanes' GDN in-projection runs the causal conv in its epilogue where it
    /// can (the default from `NINFER_GDN_CONV_EPILOGUE`), for this backend and every clone
    /// of it. As with [`Self::set_routes`], steps captured before keep their form: switch
    /// between sequences.
    pub fn set_conv_epilogue(&self, on: bool) {
        self.conv_epilogue
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the conv epilogue is on ([`Self::set_conv_epilogue`]).
    pub fn conv_epilogue(&self) -> bool {
        self.conv_epilogue
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Starts capturing a step: its activations come from `arena` (grown to the size the
    /// last capture needed, at least [`ARENA_FIRST`]) and `capture` says where its inputs
    /// and logits live. Panics if a capture is already in progress.
    fn start_capture(&self, arena: &mut Option<Arc<AnyBuffer>>, need: usize, capture: Capturing) {
        let want = need.max(ARENA_FIRST);
        if arena.as_ref().is_none_or(|a| a.len() < want) {
            let buf = ok(
                "allocating the step arena",
                self.gpu.alloc_zeros::<f32>(want),
            );
            *arena = Some(Arc::new(AnyBuffer::F32(buf)));
        }
        // The step ends with the logits' argmax: its kernel loads now, outside the capture.
        ok(
            "loading the argmax kernel",
            elementwise::preload_argmax(&self.gpu, capture.out_cap / capture.lanes.max(1)),
        );
        *self.arena.lock().expect("arena") = Some(StepArena {
            buf: arena.clone().expect("made above"),
            used: 0,
            need: 0,
        });
        let mut guard = self.capturing.lock().expect("capture state");
        assert!(
            guard.is_none(),
            "cuda backend: a capture is already in progress"
        );
        *guard = Some(capture);
        drop(guard);
        ok(
            "beginning the step capture",
            Graph::begin_capture(&self.gpu),
        );
    }

    /// The capture in progress, if any.
    fn capturing(&self) -> Option<Capturing> {
        *self.capturing.lock().expect("capture state")
    }

    /// Where a position-dependent op finds its position: the host's value, or the
    /// captured step's device slot.
    fn pos(&self, host: usize) -> Pos {
        match self.capturing() {
            Some(c) => Pos::Device {
                ptr: c.pos,
                max_keys: c.capacity,
            },
            None => Pos::Host(host),
        }
    }

    /// Panics if a capture is in progress: for the ops that must talk to the host (MoE
    /// routing), which `arch::Model` never captures.
    fn not_capturing(&self, op: &str) {
        assert!(
            self.capturing().is_none(),
            "cuda backend: {op} cannot be captured in a graph"
        );
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    fn ptr(&self, x: &CudaAct) -> u64 {
        x.buf.device_ptr(&self.gpu) + (x.offset * 4) as u64
    }

    fn slice_ptr<T>(&self, s: &CudaSlice<T>) -> u64 {
        s.device_ptr(self.gpu.stream()).0
    }

    /// A new `[rows, cols]` activation for an op to write in full (not initialised: a
    /// memset per op would double the launches).
    fn alloc(&self, rows: usize, cols: usize) -> CudaAct {
        if let Some(a) = self.arena.lock().expect("arena").as_mut() {
            let n = (rows * cols).max(1).next_multiple_of(ARENA_ALIGN);
            a.need += n;
            if a.used + n <= a.buf.len() {
                let offset = a.used;
                a.used += n;
                return CudaAct {
                    rows,
                    cols,
                    buf: a.buf.clone(),
                    offset,
                };
            }
        }
        self.alloc_own(rows, cols)
    }

    /// As [`Self::alloc`], always a buffer of its own (never a slice of the step arena).
    fn alloc_own(&self, rows: usize, cols: usize) -> CudaAct {
        // SAFETY: every caller hands the buffer to an op that writes all `rows * cols`
        // elements before anything reads it (`zeros` uses `alloc_zeroed`).
        let buf = ok(
            "allocating",
            unsafe { self.gpu.stream().alloc::<f32>((rows * cols).max(1)) }
                .map_err(|e| GpuError::driver("allocating device memory", e)),
        );
        CudaAct::new(rows, cols, AnyBuffer::F32(buf))
    }

    /// A new `[rows, cols]` activation of zeros.
    fn alloc_zeroed(&self, rows: usize, cols: usize) -> CudaAct {
        let buf = ok(
            "allocating",
            self.gpu.alloc_zeros::<f32>((rows * cols).max(1)),
        );
        CudaAct::new(rows, cols, AnyBuffer::F32(buf))
    }

    fn upload_i32(&self, v: &[usize]) -> CudaSlice<i32> {
        let ids: Vec<i32> = v.iter().map(|&i| i as i32).collect();
        ok("uploading indices", self.gpu.upload(&ids))
    }

    /// `dst[r, dst_col..] = src[r, src_col..]` for `cols` columns of every row.
    #[allow(clippy::too_many_arguments)]
    fn copy_block(
        &self,
        src: &CudaAct,
        src_row: usize,
        src_col: usize,
        dst: &CudaAct,
        dst_row: usize,
        dst_col: usize,
        rows: usize,
        cols: usize,
    ) {
        let s = self.ptr(src) + ((src_row * src.cols + src_col) * 4) as u64;
        let d = self.ptr(dst) + ((dst_row * dst.cols + dst_col) * 4) as u64;
        ok(
            "copy2d",
            elementwise::copy2d(&self.gpu, s, src.cols, d, dst.cols, rows, cols),
        );
    }

    /// Uploads `data` in `format`, or in f32 where the exact route cannot take `format` at
    /// this width.
    fn upload_weight(
        &self,
        rows: usize,
        cols: usize,
        data: &[f32],
        format: &'static Format,
    ) -> DeviceWeight {
        let f32f = crate::formats::format("f32").expect("registered");
        let fmt = if linear_exact::supports(format, cols) {
            format
        } else {
            f32f
        };
        let layout = Layout::new(fmt, rows, cols)
            .unwrap_or_else(|e| panic!("cuda backend: a [{rows}, {cols}] weight: {e}"));
        let payload = crate::formats::encode(fmt, data, rows, cols)
            .unwrap_or_else(|e| panic!("cuda backend: encoding a weight: {e}"));
        ok(
            "uploading a weight",
            DeviceWeight::upload(&self.gpu, fmt, layout, &payload),
        )
    }

    /// `y = x w^T (+ bias)` through the bf16 tensor-core routes.
    fn linear_bf16(&self, x: &CudaAct, w: &DeviceWeight, bias: Option<&CudaSlice<f32>>) -> CudaAct {
        let (t, n, k) = (x.rows, w.layout.n, w.layout.k);
        let alloc16 = |len: usize| {
            // SAFETY: written in full by the conversion or the linear kernel below.
            ok(
                "allocating",
                unsafe { self.gpu.stream().alloc::<u16>(len.max(1)) }
                    .map_err(|e| GpuError::driver("allocating device memory", e)),
            )
        };
        let xb = alloc16(t * k);
        let mut yb = alloc16(t * n);
        ok(
            "to bf16",
            elementwise::f32_to_bf16(&self.gpu, self.ptr(x), self.slice_ptr(&xb), t * k),
        );
        let mut route = LinearRoute::choose(w.format, t, Epilogue::None);
        crate::tune::a16::apply(&self.routes(), &mut route, t, n, k);
        let args = LinearArgs {
            w,
            w_up: None,
            x: &xb,
            residual: None,
            t,
        };
        ok("linear", linear::launch(&self.gpu, &route, &args, &mut yb));
        let y = self.alloc(t, n);
        ok(
            "to f32",
            elementwise::bf16_to_f32(&self.gpu, self.slice_ptr(&yb), self.ptr(&y), t * n),
        );
        if let Some(b) = bias {
            let r = self.alloc(t, n);
            ok(
                "bias",
                elementwise::copy2d(&self.gpu, self.slice_ptr(b), 0, self.ptr(&r), n, t, n),
            );
            ok(
                "bias",
                elementwise::add_assign(&self.gpu, self.ptr(&y), self.ptr(&r), t * n),
            );
        }
        y
    }

    /// The GDN output's gated RMSNorm: `o [t, HV*dv]` with `z` into a new activation.
    fn gdn_out_norm(&self, w: &CudaGdnWeights, o: &CudaAct, z: &CudaAct, t: usize) -> CudaAct {
        self.gdn_out_norm_at(w, o, (self.ptr(z), None), t)
    }

    /// [`Self::gdn_out_norm`] with `z` at a device address, its token rows `z_ld` floats
    /// apart (`None`: dense).
    fn gdn_out_norm_at(
        &self,
        w: &CudaGdnWeights,
        o: &CudaAct,
        (z, z_ld): (u64, Option<usize>),
        t: usize,
    ) -> CudaAct {
        let d = w.0.dims;
        let y = self.alloc(t, d.value_dim());
        ok(
            "gdn output norm",
            gdn::launch_out_norm(
                &self.gpu,
                DType::F32,
                self.ptr(o),
                z,
                &w.0,
                self.ptr(&y),
                t * d.hv,
                z_ld,
            ),
        );
        y
    }

    /// The recurrent route a step of `lanes` lanes of `ty` state runs (the tuned tile where
    /// the profile has one).
    fn gdn_lanes_route(&self, d: &GdnDims, ty: StateType, lanes: usize) -> RecurrentRoute {
        let mut route = RecurrentRoute::choose_for_lanes(Mode::Step, ty, d, lanes)
            .unwrap_or_else(|| panic!("cuda backend: no recurrent GDN tile fits dk = {}", d.dk));
        crate::tune::gdn::apply(&self.routes(), &mut route, d, lanes, 1);
        route
    }

    fn gdn_state_type(&self, st: &CudaGdnState) -> StateType {
        match &st.0 {
            GdnSlot::Own(s) => s.s.ty(),
            GdnSlot::Slab { slab, .. } => slab.lock().expect("gdn slab").s.ty(),
        }
    }

    /// One decode step of every lane from the raw inputs `x` (row `i` lane `i`'s, rows as
    /// `x`'s strides say): the mixer's output before its norm, `[lanes, HV*dv]`.
    fn gdn_lanes_step(
        &self,
        w: &CudaGdnWeights,
        states: &mut [&mut CudaGdnState],
        x: RawInputs,
    ) -> CudaAct {
        let d = w.0.dims;
        let n = states.len();
        let o = self.alloc(n, d.value_dim());
        // The lanes' states side by side in one slab (moved there at the batch's first
        // step, which is never captured): one launch steps every lane. Rows of the inputs
        // and of `o` are the lanes, as the kernel's `[lanes][t = 1]` layout wants.
        let mut slab = Self::common_slab(states);
        if slab.is_none() && self.capturing().is_none() {
            self.move_into_slab(states, &d);
            slab = Self::common_slab(states);
        }
        let step = |st: &mut gdn::GdnState, x: RawInputs, out: u64| {
            let route = self.gdn_lanes_route(&d, st.s.ty(), st.lanes);
            ok(
                "gdn",
                gdn::launch_recurrent(&self.gpu, &route, &w.0, st, x, 1, Some(out), None, None),
            );
        };
        match slab {
            Some(slab) => step(&mut slab.lock().expect("gdn slab"), x, self.ptr(&o)),
            None => {
                // Lanes of no common slab inside a capture: one launch per lane.
                for (i, st) in states.iter_mut().enumerate() {
                    let out = self.ptr(&o) + (i * d.value_dim() * 4) as u64;
                    self.with_lane(st, &d, |st| step(st, x.row(i, &d), out));
                }
            }
        }
        o
    }

    /// `op(a, b)` elementwise into a new activation of their (equal) shape.
    fn pointwise(&self, name: &str, op: PointwiseOp, a: &CudaAct, b: &CudaAct) -> CudaAct {
        assert_eq!((a.rows, a.cols), (b.rows, b.cols), "{name}: shapes differ");
        let y = self.alloc(a.rows, a.cols);
        let n = a.rows * a.cols;
        ok(
            name,
            op(&self.gpu, self.ptr(a), self.ptr(b), self.ptr(&y), n),
        );
        y
    }

    /// Room for `t` more rows in the cache, and the position they take (on the device
    /// while a step is captured). Marks the cache warmed by a single-token step run op by op.
    fn attention_pos(&self, cache: &mut CudaKvCache, t: usize) -> Pos {
        let pos0 = cache.len;
        self.kv_reserve(cache, pos0 + t);
        let pos = self.pos(pos0);
        if t == 1 && matches!(pos, Pos::Host(_)) {
            cache.step.warmed = true;
        }
        pos
    }

    fn kv_ptrs(&self, cache: &CudaKvCache, layer: usize) -> (u64, u64) {
        (
            self.slice_ptr(&cache.k[layer]),
            self.slice_ptr(&cache.v[layer]),
        )
    }

    /// Attention of `q` against the cache of `layer`, whose rows up to `pos + t` are in.
    fn attend(&self, cache: &mut CudaKvCache, layer: usize, q: &CudaAct, pos: Pos) -> CudaAct {
        let shape = cache.shape;
        assert_eq!(q.cols, shape.n_heads * shape.head_dim, "attention: q width");
        let t = q.rows;
        let dims = Self::attn_dims(shape);
        let (kc, vc) = self.kv_ptrs(cache, layer);
        let out = self.alloc(t, q.cols);
        let mut route = AttnRoute::choose(self.opts.kv, dims, t);
        tune_attn::apply(&self.routes(), &mut route, dims, t, cache.capacity);
        if self.capturing().is_none() {
            let load = tune_attn::preload(&self.routes(), &self.gpu, &route, dims, t, |r| r.spec());
            ok("loading the tuned attention kernels", load);
        }
        let ws = cache.ws.as_mut().expect("made by kv_reserve");
        let scale = 1.0 / (shape.head_dim as f32).sqrt();
        ok(
            "attention",
            attention::launch_attention(
                &self.gpu,
                &route,
                ws,
                self.ptr(q),
                kc,
                vc,
                self.ptr(&out),
                t,
                pos,
                dims,
                scale,
            ),
        );
        out
    }

    /// One decode row: RoPE, the KV append and attention in one launch (the decode route
    /// with both folded in; q and k stay unrotated in memory, which nothing reads again).
    #[allow(clippy::too_many_arguments)]
    fn attend_rope(
        &self,
        cache: &mut CudaKvCache,
        layer: usize,
        q: &CudaAct,
        k: &CudaAct,
        v: &CudaAct,
        pos: Pos,
        rope: &Rope,
    ) -> CudaAct {
        let out = self.alloc(1, q.cols);
        let inputs = (self.ptr(q), self.ptr(k), self.ptr(v));
        self.attend_rope_to(cache, layer, inputs, None, pos, rope, self.ptr(&out));
        out
    }

    /// [`Self::attend_rope`] on the device addresses `(q, k, v)` of its row, writing it at
    /// `out`. With `gated`, the gated-attention launch instead: `inputs.0` is the row of the
    /// stacked `[q+gate | k | v]` projection (the rest unused).
    #[allow(clippy::too_many_arguments)]
    fn attend_rope_to(
        &self,
        cache: &mut CudaKvCache,
        layer: usize,
        inputs: (u64, u64, u64),
        gated: Option<attention::QkNorm>,
        pos: Pos,
        rope: &Rope,
        out: u64,
    ) {
        let shape = cache.shape;
        let dims = Self::attn_dims(shape);
        let (kc, vc) = self.kv_ptrs(cache, layer);
        let mut route = AttnRoute::choose(self.opts.kv, dims, 1);
        tune_attn::apply(&self.routes(), &mut route, dims, 1, cache.capacity);
        if self.capturing().is_none() {
            let spec = |r: &AttnRoute| match gated {
                Some(_) => r.gated_spec(rope.style),
                None => r.rope_spec(rope.style),
            };
            let load = tune_attn::preload(&self.routes(), &self.gpu, &route, dims, 1, spec);
            ok("loading the tuned attention kernels", load);
        }
        let ws = cache.ws.as_mut().expect("made by kv_reserve");
        let scale = 1.0 / (shape.head_dim as f32).sqrt();
        let (q, k, v) = inputs;
        if let Some(norm) = gated {
            ok(
                "gated attention",
                attention::launch_gated_attention(
                    &self.gpu, &route, ws, q, norm, rope, kc, vc, out, pos, dims, scale,
                ),
            );
            return;
        }
        let new = attention::NewKv { k, v, rope };
        ok(
            "rope attention",
            attention::launch_rope_attention(
                &self.gpu, &route, ws, q, new, kc, vc, out, pos, dims, scale,
            ),
        );
    }

    /// Whether a gated attention layer of `shape` (norms `norms`, RoPE `rope`) on the stacked
    /// projection `qkv` runs as one launch: the fused decode routes are on, the norms are
    /// Qwen3.5's (zero-centred, one weight a head element), the rotation is the style the
    /// gated kernels are built for, and `qkv` is the `[q+gate | k | v]` row the launch reads
    /// in place. The norms as the launch takes them.
    fn gated_fusion(
        &self,
        qkv: &CudaAct,
        norms: QkNorms<'_, CudaSlice<f32>>,
        shape: AttnShape,
        rope: &Rope,
    ) -> Option<attention::QkNorm> {
        let hd = shape.head_dim;
        let width = 2 * (shape.n_heads + shape.n_kv_heads) * hd;
        let on = self.opts.fused && !rope_attention_apart() && attention::gated_fusion_enabled();
        let fits = norms.conv == NormWeight::ZeroCentred
            && rope.style == attention::GATED_STYLE
            && norms.q.len() == hd
            && norms.k.len() == hd
            && qkv.cols == width
            && hd.is_multiple_of(4)
            && self.ptr(qkv).is_multiple_of(16);
        (on && fits).then(|| attention::QkNorm {
            q: self.slice_ptr(norms.q),
            k: self.slice_ptr(norms.k),
            eps: norms.eps as f32,
        })
    }

    /// Every lane's decode row (row `i` of `q`, `k`, `v` is lane `i`'s) in one launch: RoPE,
    /// the KV append and attention against each lane's own cache at its own position (the
    /// position slots while a lanes step is captured, the grid planned for the largest
    /// capacity among the lanes). The partials go to the workspace of that largest cache
    /// (its rows serve as the lanes). `None` where the shapes do not fit the route.
    ///
    /// With `gated`, the gated-attention launch instead: `inputs.q` is lane 0's row of the
    /// stacked `[q+gate | k | v]` projection and `inputs.strides.q` its width (k, v unused).
    #[allow(clippy::too_many_arguments)]
    fn attend_rope_lanes(
        &self,
        caches: &mut [&mut CudaKvCache],
        layer: usize,
        inputs: LaneInputs,
        gated: Option<attention::QkNorm>,
        rope: &Rope,
    ) -> Option<CudaAct> {
        let n = caches.len();
        let shape = caches.first()?.shape;
        if n > attention::MAX_LANES || caches.iter().any(|c| c.shape != shape) {
            return None;
        }
        let capturing = self.capturing();
        if capturing.is_some_and(|c| c.lanes != n) {
            return None;
        }
        let dims = Self::attn_dims(shape);
        // Room for the row first, and each lane's host position.
        let host: Vec<usize> = caches
            .iter_mut()
            .map(|c| {
                let p = c.len;
                self.attention_pos(c, 1);
                p
            })
            .collect();
        let widest = (0..n).max_by_key(|&i| (caches[i].capacity, std::cmp::Reverse(i)))?;
        let max_cap = caches[widest].capacity;
        let pos = match capturing {
            Some(c) => attention::LanePos::Device {
                ptr: c.io + 4 * n as u64,
                max_keys: max_cap,
            },
            None => attention::LanePos::Host(&host),
        };
        let mut route = AttnRoute::choose(self.opts.kv, dims, 1);
        tune_attn::apply(&self.routes(), &mut route, dims, 1, max_cap);
        if capturing.is_none() {
            let spec = |r: &AttnRoute| match gated {
                Some(_) => r.gated_lanes_spec(rope.style),
                None => r.rope_lanes_spec(rope.style),
            };
            let load = tune_attn::preload(&self.routes(), &self.gpu, &route, dims, 1, spec);
            ok("loading the tuned attention kernels", load);
        }
        let table: Vec<(u64, u64)> = caches.iter().map(|c| self.kv_ptrs(c, layer)).collect();
        let out = self.alloc(n, dims.q_width());
        let op = self.ptr(&out);
        let ws = caches[widest].ws.as_mut().expect("made by kv_reserve");
        let scale = 1.0 / (shape.head_dim as f32).sqrt();
        let (q, strides) = (inputs.q, inputs.strides);
        if let Some(norm) = gated {
            ok(
                "gated attention lanes",
                attention::launch_gated_attention_lanes(
                    &self.gpu, &route, ws, q, strides.q, norm, rope, &table, op, pos, dims, scale,
                ),
            );
            return Some(out);
        }
        let new = attention::NewKv {
            k: inputs.k,
            v: inputs.v,
            rope,
        };
        ok(
            "rope attention lanes",
            attention::launch_rope_attention_lanes(
                &self.gpu, &route, ws, q, new, strides, &table, op, pos, dims, scale,
            ),
        );
        Some(out)
    }

    /// The first `len` logits of a captured step's slot `out`, read through page-locked
    /// memory kept with the step (made at the first read).
    fn read_logits(
        &self,
        out: &CudaSlice<f32>,
        len: usize,
        host: &mut Option<PinnedHostSlice<f32>>,
    ) -> Vec<f32> {
        if pageable_logits() {
            let mut logits = ok("reading the step's logits", self.gpu.download(out));
            logits.truncate(len);
            return logits;
        }
        if host.as_ref().is_none_or(|h| h.len() < len) {
            *host = Some(ok(
                "allocating the logits' host buffer",
                self.gpu.alloc_pinned(out.len()),
            ));
        }
        let host = host.as_mut().expect("made above");
        ok(
            "reading the step's logits",
            self.gpu.download_via(out, len, host),
        )
    }

    /// Runs this sequence's captured step for token `id` at the cache's position, the
    /// cache advanced by one; its logits and greedy token stay on the device. `None` (and
    /// the capture dropped) when there is no valid capture.
    fn run_step_graph(&self, cache: &mut CudaKvCache, id: u32) -> Option<()> {
        let pos = cache.len;
        let (capacity, epoch) = {
            let c = cache.step.captured.as_ref()?;
            (c.capacity, c.epoch)
        };
        if capacity != cache.capacity || pos + 1 > capacity || epoch != self.gdn_epoch() {
            // The cache grew (new buffers) or is about to: capture again.
            cache.step.captured = None;
            return None;
        }
        let io = cache.step.io.as_mut().expect("made by begin_step_capture");
        // From pageable host memory: staged before the call returns, and ordered before
        // the replay on the one stream.
        ok(
            "writing the step's input",
            self.gpu
                .stream()
                .memcpy_htod(&[id as i32, pos as i32], io)
                .map_err(|e| GpuError::driver("writing the step's input", e)),
        );
        let step = cache.step.captured.as_ref().expect("checked above");
        ok("replaying the decode step", step.graph.replay());
        cache.len += 1;
        Some(())
    }

    /// Runs the captured lanes step of this batch for `ids` (see [`Self::run_lanes_graph`]);
    /// `None` (and the capture dropped) when there is no valid capture for these caches.
    fn replay_lanes_graph(&self, caches: &mut [&mut CudaKvCache], ids: &[u32]) -> Option<()> {
        check_lanes(caches.len(), ids.len(), "replay_lanes");
        let now: Vec<(u64, usize)> = caches.iter().map(|c| (c.id, c.capacity)).collect();
        let room = caches.iter().all(|c| c.len < c.capacity);
        let g = &mut caches.first_mut()?.lanes;
        let step = g.captured.as_ref()?;
        // A capture whose activations outgrew its arena holds allocation nodes (no
        // kernel-to-kernel edges there): capture again, now with an arena that fits.
        let arena_short = g.arena.as_ref().is_some_and(|a| a.len() < g.arena_need);
        let moved = step.epoch != self.gdn_epoch();
        if step.caches != now || !room || arena_short || moved {
            // Other caches, or one grew (new buffers) or is about to: capture again.
            g.captured = None;
            return None;
        }
        self.run_lanes_graph(caches, ids);
        Some(())
    }

    /// Runs the lanes graph kept in `caches[0]` (checked valid for these caches) for `ids`,
    /// every cache advanced by one; its logits and greedy tokens stay on the device
    /// ([`Self::lanes_logits`], [`Self::lanes_greedy`]).
    fn run_lanes_graph(&self, caches: &mut [&mut CudaKvCache], ids: &[u32]) {
        let input: Vec<i32> = ids
            .iter()
            .map(|&id| id as i32)
            .chain(caches.iter().map(|c| c.len as i32))
            .collect();
        let g = &mut caches[0].lanes;
        let io = g.io.as_mut().expect("made by begin_lanes_capture");
        ok(
            "writing the lanes step's input",
            self.gpu
                .stream()
                .memcpy_htod(&input, io)
                .map_err(|e| GpuError::driver("writing the lanes step's input", e)),
        );
        let step = g.captured.as_ref().expect("a captured lanes step");
        ok("replaying the lanes step", step.graph.replay());
        for c in caches.iter_mut() {
            c.len += 1;
        }
    }

    /// The logits of the lanes step just replayed (every lane's, lane after lane).
    fn lanes_logits(&self, g: &mut LanesGraph) -> Vec<f32> {
        let out_len = g.captured.as_ref().expect("a captured lanes step").out_len;
        let out = g.out.as_ref().expect("made by begin_lanes_capture");
        self.read_logits(out, out_len, &mut g.host)
    }

    /// Each lane's greedy next token from the lanes step just replayed.
    fn lanes_greedy(&self, g: &LanesGraph) -> Vec<u32> {
        let ids = g.ids.as_ref().expect("made by begin_lanes_capture");
        ok("reading the step's tokens", self.gpu.download(ids))
    }

    /// Whether the lanes' GDN step reads its inputs in place from the stacked
    /// in-projection: where it reads them only through its prologue (the split route, which
    /// takes strides): one lane's row, or the lanes' slab on the split tile.
    fn gdn_lanes_in_place(&self, d: &GdnDims, states: &[&mut CudaGdnState], n: usize) -> bool {
        let ty = self.gdn_state_type(states[0]);
        elementwise::split_cols_enabled() && (n == 1 || self.gdn_lanes_route(d, ty, n).tile.split)
    }

    /// The GDN in-projection of the lanes with the causal conv in its epilogue
    /// (`linear_mma_exact::with_conv_epilogue`), where the lanes take the gates-in split
    /// step (`Tile::gin`) on one slab and the in-projection runs the mma kernel with the
    /// RMSNorm prologue: the stacked rows (q, k and v convolved, the slab's conv windows
    /// moved on), the step's route and the slab. `None` (nothing launched): the norm, the
    /// projection and the step as they are.
    fn gdn_in_proj_conv(
        &self,
        x: &CudaAct,
        (norm, eps, conv): (&CudaSlice<f32>, f64, NormWeight),
        in_proj: &DeviceWeight,
        w: &CudaGdnWeights,
        states: &mut [&mut CudaGdnState],
        widths: [usize; 4],
    ) -> Option<(CudaAct, RecurrentRoute, Arc<Mutex<gdn::GdnState>>)> {
        use crate::ops::linear_mma_exact::{with_conv_epilogue, CONV_KC, CONV_TT};
        let d = w.0.dims;
        let n = x.rows;
        let (big_n, k) = (in_proj.layout.n, in_proj.layout.k);
        let dense = widths == [d.conv_dim(), d.value_dim(), d.hv, d.hv];
        if !self.conv_epilogue()
            || !dense
            || !(5..=CONV_TT as usize).contains(&n)
            || states.len() != n
            || d.kc != CONV_KC
            || norm.len() != x.cols
            || !big_n.is_multiple_of(4)
            || widths.iter().sum::<usize>() > big_n
        {
            return None;
        }
        let ty = self.gdn_state_type(states[0]);
        let route = self.gdn_lanes_route(&d, ty, n);
        if !(route.tile.split && route.tile.gin) {
            return None;
        }
        let fused = self.fused_route(in_proj, n, Epilogue::None, PrologueKind::RmsNorm(conv))?;
        let conv_route = with_conv_epilogue(&fused, big_n, k)?;
        let mut slab = Self::common_slab(states);
        if slab.is_none() && self.capturing().is_none() {
            self.move_into_slab(states, &d);
            slab = Self::common_slab(states);
        }
        let slab = slab?;
        let window = {
            let st = slab.lock().expect("gdn slab");
            st.prep.as_ref()?;
            linear_exact::ConvWindow {
                weights: self.slice_ptr(&w.0.conv_w),
                state: self.slice_ptr(&st.conv),
                channels: d.conv_dim(),
            }
        };
        let all = self.alloc(n, big_n);
        let prologue = self.rms_prologue((norm, eps, conv));
        let launched = linear_exact::launch_conv(
            &self.gpu,
            &conv_route,
            in_proj,
            self.ptr(x),
            &prologue,
            window,
            self.ptr(&all),
            n,
        );
        ok("gdn in-projection with the conv", launched);
        Some((all, route, slab))
    }

    /// The lanes' GDN step on the stacked in-projection `all` read in place
    /// ([`Self::gdn_lanes_in_place`]): their `o [n, HV*dv]` before the output norm.
    fn gdn_lanes_step_in_place(
        &self,
        w: &CudaGdnWeights,
        states: &mut [&mut CudaGdnState],
        all: &CudaAct,
    ) -> CudaAct {
        let x = self.stacked_inputs(&w.0.dims, all);
        self.gdn_lanes_step(w, states, x)
    }

    /// The GDN step's inputs as rows of the stacked in-projection `all` (q, k and v, then z,
    /// then b and a, each lane's row `all.cols` floats), read in place.
    fn stacked_inputs(&self, d: &GdnDims, all: &CudaAct) -> RawInputs {
        let base = self.ptr(all);
        let b = base + ((d.conv_dim() + d.value_dim()) * 4) as u64;
        RawInputs {
            mixed: base,
            a: b + (d.hv * 4) as u64,
            b,
            mixed_ld: all.cols,
            ab_ld: all.cols,
        }
    }

    /// [`Backend::gdn`] on one lane's state (its own, or an alias of its slot).
    fn gdn_one(
        &self,
        w: &CudaGdnWeights,
        st: &mut gdn::GdnState,
        mixed: &CudaAct,
        z: &CudaAct,
        a: &CudaAct,
        b: &CudaAct,
    ) -> CudaAct {
        let o = self.gdn_one_unnormed(w, st, mixed, a, b);
        self.gdn_out_norm(w, &o, z, mixed.rows)
    }

    /// [`Self::gdn_one`] before its output norm: the mixer's `o [t, HV*dv]`.
    fn gdn_one_unnormed(
        &self,
        w: &CudaGdnWeights,
        st: &mut gdn::GdnState,
        mixed: &CudaAct,
        a: &CudaAct,
        b: &CudaAct,
    ) -> CudaAct {
        let d = w.0.dims;
        let t = mixed.rows;
        let o = self.alloc(t, d.value_dim());
        let x = RawInputs {
            mixed: self.ptr(mixed),
            a: self.ptr(a),
            b: self.ptr(b),
            ..Default::default()
        };
        if t >= GDN_CHUNKED_MIN_T && gdn::prefill_supports(&d) {
            // Long blocks: the chunked (WY) prefill instead of T sequential steps.
            // Chunk products on f16 operands (10-bit: relative error ~6e-4, bench/gdn run
            // 16) where the mode already trades exactness for speed; 3xTF32 (f32-accurate)
            // otherwise.
            let inexact = self.opts.act == LinearActivations::Bf16
                || self.prefill.as_deref().is_some_and(|p| p.is_on());
            let stages = match inexact {
                true => gdn::PrefillStages::fastest(&self.gpu, &d),
                false => gdn::PrefillStages::ALL,
            };
            let mut ws = ok(
                "gdn prefill workspace",
                gdn::PrefillWorkspace::new(&self.gpu, &d, 1, t, st.s.ty(), &[stages]),
            );
            ok(
                "gdn prefill",
                gdn::launch_prefill_stages(&self.gpu, &w.0, st, x, &mut ws, self.ptr(&o), stages),
            );
            return o;
        }
        let mut route = RecurrentRoute::choose(Mode::Step, st.s.ty(), &d)
            .unwrap_or_else(|| panic!("cuda backend: no recurrent GDN tile fits dk = {}", d.dk));
        crate::tune::gdn::apply(&self.routes(), &mut route, &d, st.lanes, t);
        ok(
            "gdn",
            gdn::launch_recurrent(
                &self.gpu,
                &route,
                &w.0,
                st,
                x,
                t,
                Some(self.ptr(&o)),
                None,
                None,
            ),
        );
        o
    }

    /// Runs `f` on the state of one lane: its own, or a one-lane alias of its slot in a slab
    /// (views of the slab's buffers, forgotten, never freed, afterwards).
    fn with_lane<R>(
        &self,
        state: &mut CudaGdnState,
        d: &GdnDims,
        f: impl FnOnce(&mut gdn::GdnState) -> R,
    ) -> R {
        let (slab, lane) = match &mut state.0 {
            GdnSlot::Own(st) => return f(st),
            GdnSlot::Slab { slab, lane } => (slab.clone(), *lane),
        };
        let g = slab.lock().expect("gdn slab");
        assert!(lane < g.lanes, "gdn slot {lane} of {} lanes", g.lanes);
        let (sl, cl, hk) = (d.state_len(), d.conv_state_len(), d.hk);
        let stream = self.gpu.stream();
        // SAFETY: each view lies inside its slab buffer (lane < lanes) and is never dropped
        // as an owner (`ManuallyDrop`, then `leak`); the slab outlives it (locked here).
        let alias = unsafe {
            let s = match &g.s {
                gdn::StateBuf::F32(x) => gdn::StateBuf::F32(
                    stream.upgrade_device_ptr(self.slice_ptr(x) + (lane * sl * 4) as u64, sl),
                ),
                gdn::StateBuf::F16(x) => gdn::StateBuf::F16(
                    stream.upgrade_device_ptr(self.slice_ptr(x) + (lane * sl * 2) as u64, sl),
                ),
            };
            gdn::GdnState {
                lanes: 1,
                s,
                conv: stream
                    .upgrade_device_ptr(self.slice_ptr(&g.conv) + (lane * cl * 4) as u64, cl),
                counters: stream
                    .upgrade_device_ptr(self.slice_ptr(&g.counters) + (lane * hk * 4) as u64, hk),
                prep: None,
            }
        };
        let mut alias = std::mem::ManuallyDrop::new(alias);
        let r = f(&mut alias);
        let alias = std::mem::ManuallyDrop::into_inner(alias);
        match alias.s {
            gdn::StateBuf::F32(x) => {
                x.leak();
            }
            gdn::StateBuf::F16(x) => {
                x.leak();
            }
        }
        alias.conv.leak();
        alias.counters.leak();
        drop(g);
        r
    }

    /// The slab whose lanes `0..n` are `states` in order, if they are.
    fn common_slab(states: &[&mut CudaGdnState]) -> Option<Arc<Mutex<gdn::GdnState>>> {
        let GdnSlot::Slab { slab, .. } = &states.first()?.0 else {
            return None;
        };
        let all = states.iter().enumerate().all(|(i, st)| {
            matches!(&st.0, GdnSlot::Slab { slab: s, lane } if Arc::ptr_eq(s, slab) && *lane == i)
        });
        let lanes = slab.lock().expect("gdn slab").lanes;
        (all && lanes == states.len()).then(|| slab.clone())
    }

    /// Moves `states` into a new slab of `states.len()` lanes, lane `i` the contents of
    /// `states[i]`, and makes every captured graph replay no more (they name the old
    /// buffers).
    fn move_into_slab(&self, states: &mut [&mut CudaGdnState], d: &GdnDims) {
        self.not_capturing("moving gdn states into a slab");
        let n = states.len();
        let ty = match &states[0].0 {
            GdnSlot::Own(st) => st.s.ty(),
            GdnSlot::Slab { slab, .. } => slab.lock().expect("gdn slab").s.ty(),
        };
        let slab = ok(
            "allocating a gdn slab",
            gdn::GdnState::zeros(&self.gpu, d, ty, n),
        );
        let (sl, cl, hk) = (d.state_len(), d.conv_state_len(), d.hk);
        let sb = sl * ty.bytes();
        let state_ptr = |s: &gdn::StateBuf| match s {
            gdn::StateBuf::F32(x) => self.slice_ptr(x),
            gdn::StateBuf::F16(x) => self.slice_ptr(x),
        };
        let copy = |to: u64, from: u64, bytes: usize| {
            // SAFETY: both ranges lie inside live buffers of at least `bytes` (slots of the
            // same dims); stream-ordered with every launch on them.
            let r = unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    to,
                    from,
                    bytes,
                    self.gpu.stream().cu_stream(),
                )
            };
            ok(
                "copying a gdn state",
                r.map_err(|e| GpuError::driver("copying a gdn state", e)),
            );
        };
        let base = (
            state_ptr(&slab.s),
            self.slice_ptr(&slab.conv),
            self.slice_ptr(&slab.counters),
        );
        for (i, st) in states.iter_mut().enumerate() {
            self.with_lane(st, d, |src| {
                copy(base.0 + (i * sb) as u64, state_ptr(&src.s), sb);
                copy(
                    base.1 + (i * cl * 4) as u64,
                    self.slice_ptr(&src.conv),
                    cl * 4,
                );
                copy(
                    base.2 + (i * hk * 4) as u64,
                    self.slice_ptr(&src.counters),
                    hk * 4,
                );
            });
        }
        let slab = Arc::new(Mutex::new(slab));
        for (lane, st) in states.iter_mut().enumerate() {
            st.0 = GdnSlot::Slab {
                slab: slab.clone(),
                lane,
            };
        }
        self.gdn_epoch
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many times GDN states have moved into slabs (a graph captured before a move
    /// names buffers that may be gone).
    fn gdn_epoch(&self) -> u64 {
        self.gdn_epoch.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// While a lanes step is captured, points the position-dependent ops at lane `lane`'s
    /// slot and its cache's capacity.
    fn capture_lane(&self, lane: usize, capacity: usize) {
        if let Some(c) = self.capturing.lock().expect("capture state").as_mut() {
            assert!(lane < c.lanes, "lane {lane} of a {}-lane capture", c.lanes);
            c.pos = c.io + 4 * (c.lanes + lane) as u64;
            c.capacity = capacity;
        }
    }

    /// `y = x w^T (+ r)` with f32 activations (the exact mode): the tiled GEMM from
    /// `linear_sgemm::MIN_T` rows (weights read once per tile of tokens, not once per eight),
    /// the GEMV below that.
    fn linear_f32(
        &self,
        w: &DeviceWeight,
        x: u64,
        r: Option<u64>,
        y: u64,
        t: usize,
        epilogue: Epilogue,
    ) {
        if let Some(p) = self.prefill_route(w, t) {
            return ok("linear (cublas)", p.launch(&self.gpu, w, x, r, y, t));
        }
        let launched = match self.tiled_route(w, t, epilogue) {
            Some(route) => linear_sgemm::launch(&self.gpu, &route, w, x, r, y, t),
            None => {
                let mut route = ExactRoute::choose(w.format, t, epilogue);
                crate::tune::exact::apply(&self.routes(), &mut route, w.layout.n, w.layout.k);
                self.round_activations(&mut route);
                linear_exact::launch(&self.gpu, &route, w, x, r, y, t)
            }
        };
        ok("linear", launched);
    }

    /// The tiled GEMM's route for `t` rows of `w`, where it takes them.
    fn tiled_route(&self, w: &DeviceWeight, t: usize, epilogue: Epilogue) -> Option<SgemmRoute> {
        SgemmRoute::choose(w.format, t, epilogue)
            .filter(|_| linear_sgemm::supports(w.format, w.layout.k) && !self.rounds_mma(w, t))
    }

    /// The cuBLAS prefill route, where it is on and takes `t` rows of `w`.
    fn prefill_route(&self, w: &DeviceWeight, t: usize) -> Option<&PrefillCublas> {
        self.prefill
            .as_deref()
            .filter(|p| p.takes(w.format, w.layout.k, t))
    }

    /// Whether `t` rows of `w` run on `ops::linear`'s tensor-core routes with bf16
    /// activations (bf16 mode, K a multiple of 64), converted around them. Not where the
    /// exact route's mma GEMV takes the format at up to 32 rows: those stay on the exact
    /// route's kernels, fused, with the mma GEMV's activations rounded to bf16 there
    /// ([`Self::round_activations`]; one and two rows keep the exact CUDA-core kernels,
    /// which are as fast). Every other linear runs exact.
    fn runs_bf16(&self, w: &DeviceWeight, t: usize) -> bool {
        self.opts.act == LinearActivations::Bf16
            && w.layout.k.is_multiple_of(64)
            && !self.rounds_mma(w, t)
    }

    /// Whether `t` rows of `w` run the exact route's mma GEMV with bf16-rounded activations
    /// (bf16 mode, a format the mma GEMV takes, up to its 32 columns).
    fn rounds_mma(&self, w: &DeviceWeight, t: usize) -> bool {
        self.opts.act == LinearActivations::Bf16
            && t <= linear_exact::MMA_MAX_T
            && linear_exact::mma_supports(w.format)
            && linear_exact::mma_enabled()
    }

    /// In bf16 mode, rounds the activations of an exact mma route to bf16 where that tile
    /// is instantiated (a third of its tensor-core work: `linear_mma_exact::rounded`);
    /// other routes stay exact.
    fn round_activations(&self, route: &mut ExactRoute) {
        if self.opts.act != LinearActivations::Bf16 {
            return;
        }
        if let Some(r) = crate::ops::linear_mma_exact::rounded(route) {
            *route = r;
        }
    }

    /// The stream route that runs `w` for `t` rows with `prologue` folded into its load of
    /// the input (exact mode, below the tiled GEMM's row count, a stream-kernel format),
    /// with the tuned split where `tune::exact::apply` gives one; `None` where the op must
    /// run unfused.
    fn fused_route(
        &self,
        w: &DeviceWeight,
        t: usize,
        epilogue: Epilogue,
        prologue: PrologueKind,
    ) -> Option<ExactRoute> {
        if !self.opts.fused
            || self.runs_bf16(w, t)
            || self.tiled_route(w, t, epilogue).is_some()
            || self.prefill_route(w, t).is_some()
            || t == 0
            || !linear_exact::supports(w.format, w.layout.k)
        {
            return None;
        }
        let mut route = ExactRoute::choose_with(w.format, t, epilogue, prologue)?;
        crate::tune::exact::apply(&self.routes(), &mut route, w.layout.n, w.layout.k);
        self.round_activations(&mut route);
        Some(route)
    }

    /// The RMSNorm prologue of an exact route: the norm's weight, eps and convention.
    fn rms_prologue(&self, (norm, eps, conv): (&CudaSlice<f32>, f64, NormWeight)) -> Prologue {
        Prologue::RmsNorm {
            weight: self.slice_ptr(norm),
            eps: eps as f32,
            conv,
        }
    }

    /// `route` (an exact route with an RMSNorm prologue) on `x` and `w` into a new
    /// activation of `cols` columns a row (N, or N / 2 with the SwiGLU epilogue).
    fn launch_norm_route(
        &self,
        route: &ExactRoute,
        x: &CudaAct,
        (norm, eps, conv): (&CudaSlice<f32>, f64, NormWeight),
        w: &DeviceWeight,
        cols: usize,
    ) -> CudaAct {
        let y = self.alloc(x.rows, cols);
        let prologue = self.rms_prologue((norm, eps, conv));
        let launched = linear_exact::launch_with(
            &self.gpu,
            route,
            w,
            self.ptr(x),
            &prologue,
            None,
            self.ptr(&y),
            x.rows,
        );
        ok("norm_linear", launched);
        y
    }

    /// The ring route of the GDN out projection `w` at `t` rows with the mixer's output norm
    /// as its prologue (`PrologueKind::GatedNorm`), where the projection alone would run the
    /// ring kernel (fused ops on, a lane or a few) and the kernel takes the weight and the
    /// gate's rows (`z`, `z_ld` floats apart); `None`: the norm and the projection apart.
    fn gated_norm_route(
        &self,
        w: &DeviceWeight,
        t: usize,
        gw: &CudaGdnWeights,
        (z, z_ld): (u64, usize),
    ) -> Option<ExactRoute> {
        let d = gw.0.dims;
        if !linear_exact::gated_norm_enabled()
            || d.dv != linear_exact::GATED_NORM_GROUP
            || w.layout.k != d.value_dim()
            || !linear_exact::ring_gated_takes(w)
            || !z.is_multiple_of(16)
            || !z_ld.is_multiple_of(4)
        {
            return None;
        }
        let plain = self.fused_route(w, t, Epilogue::Residual, PrologueKind::None)?;
        // The same tuned ring split with the prologue (every ring split instantiates it).
        matches!(plain.kernel, ExactKernel::Ring(_)).then(|| ExactRoute {
            prologue: PrologueKind::GatedNorm,
            ..plain
        })
    }

    /// `x += (o's gated norm with z) w^T` on `route` ([`Self::gated_norm_route`]).
    fn gated_norm_linear_add(
        &self,
        x: &mut CudaAct,
        route: &ExactRoute,
        o: &CudaAct,
        gw: &CudaGdnWeights,
        (z, z_ld): (u64, usize),
        w: &DeviceWeight,
    ) {
        assert_eq!(
            (x.rows, x.cols),
            (o.rows, w.layout.n),
            "gdn_out_add: shapes"
        );
        let prologue = Prologue::GatedNorm {
            weight: self.slice_ptr(&gw.0.norm_w),
            eps: gw.0.eps,
            z,
            z_ld,
        };
        let xp = self.ptr(x);
        let launched = linear_exact::launch_with(
            &self.gpu,
            route,
            w,
            self.ptr(o),
            &prologue,
            Some(xp),
            xp,
            o.rows,
        );
        ok("gdn out projection", launched);
    }

    /// The gate_up launch of an MLP that writes `silu(gate) * up` itself, where the fused
    /// RMSNorm route takes the SwiGLU epilogue: a ring route of an even split (one column or
    /// a few lanes: `linear_exact::ring_with_swiglu_epilogue`, exact, as the slices' sums of
    /// a block are whole before the silu), or an mma route
    /// (`linear_mma_exact::with_swiglu_epilogue`). The exact mode's mma plans split gate_up's
    /// K (bench/kernels v62: 2 K-ranges), whose sums must be whole before the silu: the
    /// kernel's last block of each m-range adds them first
    /// (`linear_mma_exact::splitk_fused_enabled`); with that switched off only the bf16 mode
    /// takes the epilogue, and the exact mode keeps SwiGLU in the down projection's staging.
    /// `None`: the unfused pair of launches.
    fn gate_up_swiglu_route(
        &self,
        x: &CudaAct,
        norm: &CudaSlice<f32>,
        conv: NormWeight,
        gate_up: &DeviceWeight,
    ) -> Option<ExactRoute> {
        if !crate::ops::linear_mma_exact::swiglu_epilogue_enabled() || norm.len() != x.cols {
            return None;
        }
        let (n, k) = (gate_up.layout.n, gate_up.layout.k);
        let route =
            self.fused_route(gate_up, x.rows, Epilogue::None, PrologueKind::RmsNorm(conv))?;
        if let linear_exact::ExactKernel::Ring(_) = route.kernel {
            return linear_exact::ring_with_swiglu_epilogue(&route, gate_up);
        }
        if !linear_exact::swiglu_epilogue_takes(gate_up)
            || (!route.rounds_activations()
                && !crate::ops::linear_mma_exact::splitk_fused_enabled())
        {
            return None;
        }
        crate::ops::linear_mma_exact::with_swiglu_epilogue(&route, n, k)
    }

    fn attn_dims(shape: AttnShape) -> AttnDims {
        AttnDims {
            n_heads: shape.n_heads,
            n_kv_heads: shape.n_kv_heads,
            head_dim: shape.head_dim,
        }
    }

    /// Makes room for `need` positions in every layer (doubling, old rows copied).
    fn kv_reserve(&self, c: &mut CudaKvCache, need: usize) {
        if need <= c.capacity {
            return;
        }
        let cap = need.next_power_of_two().max(256);
        let row = c.shape.n_kv_heads * c.shape.head_dim * self.opts.kv.bytes();
        assert!(
            self.capturing().is_none(),
            "cuda backend: the kv cache cannot grow inside a captured step"
        );
        let grow = |old: &mut CudaSlice<u8>| {
            let mut new = ok(
                "growing the kv cache",
                self.gpu.alloc_zeros::<u8>(cap * row),
            );
            if c.len > 0 {
                let src = old.slice(..c.len * row);
                let mut dst = new.slice_mut(..c.len * row);
                ok(
                    "copying the kv cache",
                    self.gpu
                        .stream()
                        .memcpy_dtod(&src, &mut dst)
                        .map_err(|e| GpuError::driver("copying the kv cache", e)),
                );
            }
            *old = new;
        };
        for k in c.k.iter_mut() {
            grow(k);
        }
        for v in c.v.iter_mut() {
            grow(v);
        }
        c.capacity = cap;
        // The decode workspace covers every position the cache can hold (it caps its own
        // rows and splits, so this is its largest size for these dims).
        let ws = AttnWorkspace::new(
            &self.gpu,
            Self::attn_dims(c.shape),
            attention::DECODE_MAX_T,
            cap,
        );
        c.ws = Some(ok("attention workspace", ws));
    }
}

impl Backend for CudaBackend {
    type Act = CudaAct;
    type Linear = DeviceWeight;
    type Vector = CudaSlice<f32>;
    type KvCache = CudaKvCache;
    type GdnWeights = CudaGdnWeights;
    type GdnState = CudaGdnState;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn linear_from_f32(&self, rows: usize, cols: usize, data: Vec<f32>) -> DeviceWeight {
        self.linear_from_f32_ref(rows, cols, &data, None)
    }

    fn linear_from_f32_in(
        &self,
        rows: usize,
        cols: usize,
        data: Vec<f32>,
        format: &'static Format,
    ) -> DeviceWeight {
        self.linear_from_f32_ref(rows, cols, &data, Some(format))
    }

    /// Encoded on the host and uploaded: the values are only read.
    fn linear_from_f32_ref(
        &self,
        rows: usize,
        cols: usize,
        data: &[f32],
        format: Option<&'static Format>,
    ) -> DeviceWeight {
        let Some(format) = format else {
            return self.upload_weight(rows, cols, data, self.opts.weights);
        };
        if !linear_exact::supports(format, cols) {
            tracing::warn!(
                "a [{rows}, {cols}] weight cannot be held as {} on the GPU (rows of {cols}); it stays f32",
                format.name
            );
        }
        self.upload_weight(rows, cols, data, format)
    }

    fn vector_from_f32(&self, data: Vec<f32>) -> CudaSlice<f32> {
        ok("uploading a vector", self.gpu.upload(&data))
    }

    fn act_from_f32(&self, rows: usize, cols: usize, data: Vec<f32>) -> CudaAct {
        assert_eq!(
            rows * cols,
            data.len(),
            "activation data does not match its shape"
        );
        CudaAct::new(
            rows,
            cols,
            ok(
                "uploading an activation",
                AnyBuffer::upload(&self.gpu, DType::F32, &data),
            ),
        )
    }

    fn new_kv_cache(&self, layers: usize, shape: AttnShape) -> CudaKvCache {
        let mut c = CudaKvCache {
            id: NEXT_CACHE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            shape,
            len: 0,
            capacity: 0,
            k: (0..layers)
                .map(|_| ok("kv", self.gpu.alloc_zeros::<u8>(1)))
                .collect(),
            v: (0..layers)
                .map(|_| ok("kv", self.gpu.alloc_zeros::<u8>(1)))
                .collect(),
            ws: None,
            step: StepGraph::default(),
            lanes: LanesGraph::default(),
        };
        self.kv_reserve(&mut c, 256);
        c
    }

    fn kv_len(&self, cache: &CudaKvCache) -> usize {
        cache.len
    }

    fn gdn_weights(
        &self,
        dims: GdnDims,
        conv_w: Vec<f32>,
        a_log: Vec<f32>,
        dt_bias: Vec<f32>,
        norm_w: Vec<f32>,
        eps: f64,
    ) -> CudaGdnWeights {
        dims.check_params(&conv_w, &a_log, &dt_bias, &norm_w);
        let up = |v: &[f32]| ok("uploading gdn weights", self.gpu.upload(v));
        CudaGdnWeights(gdn::GdnWeights {
            dims,
            conv_w: up(&conv_w),
            a_log: up(&a_log),
            dt_bias: up(&dt_bias),
            norm_w: up(&norm_w),
            eps: eps as f32,
        })
    }

    fn new_gdn_state(&self, dims: GdnDims, ty: StateType) -> CudaGdnState {
        CudaGdnState(GdnSlot::Own(ok(
            "allocating gdn state",
            gdn::GdnState::zeros(&self.gpu, &dims, ty, 1),
        )))
    }

    fn to_host(&self, x: &CudaAct) -> Vec<f32> {
        if let Some(c) = self.capturing.lock().expect("capture state").as_mut() {
            // The step's result: copied (in the graph) to the slot the replay reads.
            let n = x.rows * x.cols;
            assert!(c.out_len.is_none(), "a captured step reads back once");
            assert!(n <= c.out_cap, "captured logits exceed their slot");
            ok(
                "copying the logits",
                elementwise::copy2d(&self.gpu, self.ptr(x), n, c.out, n, 1, n),
            );
            // And each row's greedy token, for the replays that read back only that.
            assert!(x.rows <= c.lanes, "captured logits have a row a lane");
            ok(
                "the logits' argmax",
                elementwise::argmax_rows(&self.gpu, self.ptr(x), c.ids, x.rows, x.cols),
            );
            c.out_len = Some(n);
            return Vec::new();
        }
        let v = ok("downloading", x.buf.download(&self.gpu));
        v[x.offset..x.offset + x.rows * x.cols].to_vec()
    }

    fn rows(&self, x: &CudaAct) -> usize {
        x.rows
    }

    fn cols(&self, x: &CudaAct) -> usize {
        x.cols
    }

    fn slice_rows(&self, x: &CudaAct, start: usize, n: usize) -> CudaAct {
        assert!(start + n <= x.rows, "row slice out of range");
        // Rows are contiguous: a view.
        CudaAct {
            rows: n,
            cols: x.cols,
            buf: x.buf.clone(),
            offset: x.offset + start * x.cols,
        }
    }

    fn slice_cols(&self, x: &CudaAct, start: usize, n: usize) -> CudaAct {
        assert!(start + n <= x.cols, "column slice out of range");
        if x.rows == 1 {
            // One row: the columns are contiguous, so a view needs no copy.
            return CudaAct {
                rows: 1,
                cols: n,
                buf: x.buf.clone(),
                offset: x.offset + start,
            };
        }
        let y = self.alloc(x.rows, n);
        self.copy_block(x, 0, start, &y, 0, 0, x.rows, n);
        y
    }

    fn split_cols(&self, x: &CudaAct, widths: &[usize]) -> Vec<CudaAct> {
        let total: usize = widths.iter().sum();
        assert!(total <= x.cols, "split_cols: parts wider than the row");
        if x.rows == 1 || !elementwise::split_cols_enabled() {
            // One row: views, as slice_cols gives (or a copy a part, switched so).
            let mut start = 0;
            return widths
                .iter()
                .map(|&w| {
                    start += w;
                    self.slice_cols(x, start - w, w)
                })
                .collect();
        }
        let parts: Vec<CudaAct> = widths.iter().map(|&w| self.alloc(x.rows, w)).collect();
        let segments: Vec<(u64, usize)> = parts
            .iter()
            .zip(widths)
            .map(|(p, &w)| (self.ptr(p), w))
            .collect();
        ok(
            "split_cols",
            elementwise::split_cols(&self.gpu, self.ptr(x), x.cols, x.rows, &segments),
        );
        parts
    }

    fn embedding(&self, table: &DeviceWeight, ids: &[u32]) -> CudaAct {
        for &id in ids {
            assert!(
                (id as usize) < table.layout.n,
                "token id {id} is outside the vocabulary ({})",
                table.layout.n
            );
        }
        let route = EmbeddingRoute {
            format: table.format,
            output: DType::F32,
        };
        // The step's first kernel: nothing precedes it in the graph, so its output may be
        // a buffer of its own (the launch writes through `own_buf`).
        let mut y = self.alloc_own(ids.len(), table.layout.k);
        if let Some(c) = self.capturing() {
            assert_eq!(
                ids.len(),
                c.lanes,
                "a captured step takes one token per lane"
            );
            ok(
                "embedding",
                embedding::launch_at(&self.gpu, &route, table, c.io, c.lanes, y.own_buf()),
            );
            return y;
        }
        let ids_i32: Vec<i32> = ids.iter().map(|&i| i as i32).collect();
        let dev_ids = ok("uploading token ids", self.gpu.upload(&ids_i32));
        ok(
            "embedding",
            embedding::launch(&self.gpu, &route, table, &dev_ids, ids.len(), y.own_buf()),
        );
        y
    }

    fn rmsnorm(&self, x: &CudaAct, w: &CudaSlice<f32>, eps: f64, conv: NormWeight) -> CudaAct {
        let width = w.len();
        assert!(
            width > 0 && x.cols.is_multiple_of(width),
            "norm width does not divide the row"
        );
        let route = RmsNormRoute::choose(conv, DType::F32, DType::F32, width);
        let y = self.alloc(x.rows, x.cols);
        let shape = NormShape {
            rows: x.rows * x.cols / width,
            width,
            eps: eps as f32,
        };
        ok(
            "rmsnorm",
            rmsnorm::launch_at(&self.gpu, &route, self.ptr(x), w, self.ptr(&y), shape),
        );
        y
    }

    fn linear(&self, x: &CudaAct, w: &DeviceWeight, bias: Option<&CudaSlice<f32>>) -> CudaAct {
        assert_eq!(x.cols, w.layout.k, "linear: input width != weight columns");
        if self.runs_bf16(w, x.rows) {
            return self.linear_bf16(x, w, bias);
        }
        let (t, n) = (x.rows, w.layout.n);
        let y = self.alloc(t, n);
        let residual = bias.map(|b| {
            assert_eq!(b.len(), n, "linear: bias length");
            // The bias broadcast to every row, added by the residual epilogue.
            let r = self.alloc(t, n);
            ok(
                "bias",
                elementwise::copy2d(&self.gpu, self.slice_ptr(b), 0, self.ptr(&r), n, t, n),
            );
            r
        });
        let epilogue = if residual.is_some() {
            Epilogue::Residual
        } else {
            Epilogue::None
        };
        let r = residual.as_ref().map(|r| self.ptr(r));
        self.linear_f32(w, self.ptr(x), r, self.ptr(&y), t, epilogue);
        y
    }

    fn add_assign(&self, x: &mut CudaAct, y: &CudaAct) {
        assert_eq!((x.rows, x.cols), (y.rows, y.cols), "add: shapes differ");
        ok(
            "add",
            elementwise::add_assign(&self.gpu, self.ptr(x), self.ptr(y), x.rows * x.cols),
        );
    }

    fn linear_add(
        &self,
        x: &mut CudaAct,
        a: &CudaAct,
        w: &DeviceWeight,
        bias: Option<&CudaSlice<f32>>,
    ) {
        let fusable = bias.is_none() && !self.runs_bf16(w, a.rows);
        if !fusable {
            let y = self.linear(a, w, bias);
            return self.add_assign(x, &y);
        }
        assert_eq!(a.cols, w.layout.k, "linear: input width != weight columns");
        assert_eq!((x.rows, x.cols), (a.rows, w.layout.n), "linear_add: shapes");
        // The residual epilogue in place (each output element reads its residual before
        // writing it): one launch instead of a linear and an add.
        let xp = self.ptr(x);
        self.linear_f32(w, self.ptr(a), Some(xp), xp, a.rows, Epilogue::Residual);
    }

    fn norm_linear(
        &self,
        x: &CudaAct,
        norm: &CudaSlice<f32>,
        eps: f64,
        conv: NormWeight,
        w: &DeviceWeight,
    ) -> CudaAct {
        let fused = (norm.len() == x.cols)
            .then(|| self.fused_route(w, x.rows, Epilogue::None, PrologueKind::RmsNorm(conv)))
            .flatten();
        let Some(route) = fused else {
            return self.linear(&self.rmsnorm(x, norm, eps, conv), w, None);
        };
        assert_eq!(
            x.cols, w.layout.k,
            "norm_linear: input width != weight columns"
        );
        self.launch_norm_route(&route, x, (norm, eps, conv), w, w.layout.n)
    }

    fn swiglu_linear_add(&self, x: &mut CudaAct, gate_up: &CudaAct, w: &DeviceWeight) {
        let fused = (gate_up.cols == 2 * w.layout.k)
            .then(|| self.fused_route(w, gate_up.rows, Epilogue::Residual, PrologueKind::Swiglu))
            .flatten();
        let Some(route) = fused else {
            let inter = gate_up.cols / 2;
            let (g, u) = (
                self.slice_cols(gate_up, 0, inter),
                self.slice_cols(gate_up, inter, inter),
            );
            return self.linear_add(x, &self.swiglu(&g, &u), w, None);
        };
        assert_eq!(
            (x.rows, x.cols),
            (gate_up.rows, w.layout.n),
            "swiglu_linear_add: shapes"
        );
        let xp = self.ptr(x);
        let launched = linear_exact::launch_with(
            &self.gpu,
            &route,
            w,
            self.ptr(gate_up),
            &Prologue::Swiglu,
            Some(xp),
            xp,
            gate_up.rows,
        );
        ok("swiglu_linear_add", launched);
    }

    fn norm_mlp_add(
        &self,
        x: &mut CudaAct,
        norm: &CudaSlice<f32>,
        eps: f64,
        conv: NormWeight,
        gate_up: &DeviceWeight,
        down: &DeviceWeight,
    ) {
        let Some(route) = self.gate_up_swiglu_route(x, norm, conv, gate_up) else {
            let gu = self.norm_linear(x, norm, eps, conv, gate_up);
            return self.swiglu_linear_add(x, &gu, down);
        };
        // silu(gate) * up written by the gate_up launch; the down projection reads it as is.
        let h = self.launch_norm_route(&route, x, (norm, eps, conv), gate_up, gate_up.layout.n / 2);
        self.linear_add(x, &h, down, None);
    }

    fn swiglu(&self, gate: &CudaAct, up: &CudaAct) -> CudaAct {
        self.pointwise("swiglu", elementwise::swiglu, gate, up)
    }

    fn sigmoid_gate(&self, x: &CudaAct, gate: &CudaAct) -> CudaAct {
        self.pointwise("sigmoid_gate", elementwise::sigmoid_gate, x, gate)
    }

    fn rope(&self, x: &mut CudaAct, n_heads: usize, head_dim: usize, pos0: usize, rope: &Rope) {
        assert_eq!(
            x.cols,
            n_heads * head_dim,
            "rope: row is not n_heads * head_dim"
        );
        ok(
            "rope",
            rope::launch_rope(
                &self.gpu,
                self.ptr(x),
                x.rows,
                n_heads,
                head_dim,
                self.pos(pos0),
                rope,
            ),
        );
    }

    fn attention(
        &self,
        cache: &mut CudaKvCache,
        layer: usize,
        q: &CudaAct,
        k: &CudaAct,
        v: &CudaAct,
    ) -> CudaAct {
        let shape = cache.shape;
        let kvw = shape.n_kv_heads * shape.head_dim;
        assert_eq!((k.cols, v.cols), (kvw, kvw), "attention: k/v width");
        let pos = self.attention_pos(cache, q.rows);
        let (kc, vc) = self.kv_ptrs(cache, layer);
        ok(
            "kv append",
            attention::launch_kv_append(
                &self.gpu,
                self.opts.kv,
                self.ptr(k),
                self.ptr(v),
                kc,
                vc,
                pos,
                q.rows,
                kvw,
            ),
        );
        self.attend(cache, layer, q, pos)
    }

    fn rope_attention(
        &self,
        cache: &mut CudaKvCache,
        layer: usize,
        q: &mut CudaAct,
        k: &mut CudaAct,
        v: &CudaAct,
        head_dim: usize,
        rope: &Rope,
    ) -> CudaAct {
        let shape = cache.shape;
        assert_eq!(head_dim, shape.head_dim, "rope_attention: head_dim");
        let kvw = shape.n_kv_heads * shape.head_dim;
        assert_eq!((k.cols, v.cols), (kvw, kvw), "attention: k/v width");
        assert_eq!(q.cols, shape.n_heads * head_dim, "attention: q width");
        let pos = self.attention_pos(cache, q.rows);
        if q.rows == 1 && self.opts.fused && !rope_attention_apart() {
            return self.attend_rope(cache, layer, q, k, v, pos, rope);
        }
        let (kc, vc) = self.kv_ptrs(cache, layer);
        // One launch rotates q, rotates k into the cache and stores v (k stays unrotated,
        // which nothing reads again).
        ok(
            "rope + kv append",
            rope::launch_rope_append(
                &self.gpu,
                self.ptr(q),
                q.rows,
                shape.n_heads,
                head_dim,
                pos,
                rope,
                (self.ptr(k), self.ptr(v)),
                (kc, vc),
                shape.n_kv_heads,
                self.opts.kv,
            ),
        );
        self.attend(cache, layer, q, pos)
    }

    fn kv_advance(&self, cache: &mut CudaKvCache, n: usize) {
        cache.len += n;
        assert!(
            cache.len <= cache.capacity,
            "kv_advance past what was appended"
        );
    }

    fn split_heads(
        &self,
        x: &CudaAct,
        n_heads: usize,
        first: usize,
        second: usize,
    ) -> (CudaAct, CudaAct) {
        let w = first + second;
        assert_eq!(
            x.cols,
            n_heads * w,
            "split_heads: row is not n_heads * (first + second)"
        );
        let rows = x.rows * n_heads;
        let (a, b) = (
            self.alloc(x.rows, n_heads * first),
            self.alloc(x.rows, n_heads * second),
        );
        // Viewed as [rows * n_heads, first + second], the halves are one column split.
        let segments = [(self.ptr(&a), first), (self.ptr(&b), second)];
        ok(
            "split_heads",
            elementwise::split_cols(&self.gpu, self.ptr(x), w, rows, &segments),
        );
        (a, b)
    }

    fn gdn(
        &self,
        w: &CudaGdnWeights,
        state: &mut CudaGdnState,
        mixed: &CudaAct,
        z: &CudaAct,
        a: &CudaAct,
        b: &CudaAct,
    ) -> CudaAct {
        let d = w.0.dims;
        check_gdn_inputs(&d, mixed, z, a, b);
        self.with_lane(state, &d, |st| self.gdn_one(w, st, mixed, z, a, b))
    }

    fn gdn_out_add(
        &self,
        x: &mut CudaAct,
        w: &CudaGdnWeights,
        state: &mut CudaGdnState,
        mixed: &CudaAct,
        z: &CudaAct,
        a: &CudaAct,
        b: &CudaAct,
        out: &DeviceWeight,
    ) {
        let gate = (self.ptr(z), z.cols);
        let Some(route) = self.gated_norm_route(out, mixed.rows, w, gate) else {
            let o = self.gdn(w, state, mixed, z, a, b);
            return self.linear_add(x, &o, out, None);
        };
        let d = w.0.dims;
        check_gdn_inputs(&d, mixed, z, a, b);
        let o = self.with_lane(state, &d, |st| self.gdn_one_unnormed(w, st, mixed, a, b));
        self.gated_norm_linear_add(x, &route, &o, w, gate, out);
    }

    fn concat_rows(&self, parts: &[CudaAct]) -> CudaAct {
        let cols = parts.first().map_or(0, |m| m.cols);
        assert!(
            parts.iter().all(|m| m.cols == cols),
            "concat_rows: widths differ"
        );
        let y = self.alloc(parts.iter().map(|m| m.rows).sum(), cols);
        let mut row = 0;
        for m in parts {
            self.copy_block(m, 0, 0, &y, row, 0, m.rows, cols);
            row += m.rows;
        }
        y
    }

    fn rope_attention_lanes(
        &self,
        caches: &mut [&mut CudaKvCache],
        layer: usize,
        q: &CudaAct,
        k: &CudaAct,
        v: &CudaAct,
        head_dim: usize,
        rope: &Rope,
    ) -> CudaAct {
        check_lanes(caches.len(), q.rows, "rope_attention_lanes");
        assert_eq!(
            (k.rows, v.rows),
            (q.rows, q.rows),
            "rope_attention_lanes: rows"
        );
        let fused = self.opts.fused && !rope_attention_apart();
        if fused && !lanes_attention_apart() {
            assert!(
                caches.iter().all(|c| c.shape.head_dim == head_dim),
                "rope_attention_lanes: head_dim"
            );
            let inputs = LaneInputs {
                q: self.ptr(q),
                k: self.ptr(k),
                v: self.ptr(v),
                strides: attention::LaneStrides {
                    q: q.cols,
                    kv: k.cols,
                },
            };
            if let Some(out) = self.attend_rope_lanes(caches, layer, inputs, None, rope) {
                return out;
            }
        }
        let out = self.alloc(q.rows, q.cols);
        // The fallback: one launch per lane, each at its own position (from its slot while captured) into
        // its row of the output.
        for (i, cache) in caches.iter_mut().enumerate() {
            let shape = cache.shape;
            assert_eq!(head_dim, shape.head_dim, "rope_attention_lanes: head_dim");
            self.capture_lane(i, cache.capacity);
            let (mut qi, mut ki, vi) = (
                self.slice_rows(q, i, 1),
                self.slice_rows(k, i, 1),
                self.slice_rows(v, i, 1),
            );
            if fused {
                let pos = self.attention_pos(cache, 1);
                let row = self.ptr(&out) + (i * q.cols * 4) as u64;
                let inputs = (self.ptr(&qi), self.ptr(&ki), self.ptr(&vi));
                self.attend_rope_to(cache, layer, inputs, None, pos, rope, row);
            } else {
                let a = self.rope_attention(cache, layer, &mut qi, &mut ki, &vi, head_dim, rope);
                self.copy_block(&a, 0, 0, &out, i, 0, 1, q.cols);
            }
        }
        out
    }

    fn rope_attention_lanes_qkv(
        &self,
        caches: &mut [&mut CudaKvCache],
        layer: usize,
        qkv: &CudaAct,
        q_cols: usize,
        kv_cols: usize,
        head_dim: usize,
        rope: &Rope,
    ) -> CudaAct {
        check_lanes(caches.len(), qkv.rows, "rope_attention_lanes_qkv");
        assert_eq!(
            qkv.cols,
            q_cols + 2 * kv_cols,
            "rope_attention_lanes_qkv: width"
        );
        let one_launch = self.opts.fused && !rope_attention_apart() && !lanes_attention_apart();
        if one_launch && caches.iter().all(|c| c.shape.head_dim == head_dim) {
            // The launch reads each lane's q, k and v in place, as column blocks of its row
            // of the stacked projection: no copies of them.
            let base = self.ptr(qkv);
            let inputs = LaneInputs {
                q: base,
                k: base + (q_cols * 4) as u64,
                v: base + ((q_cols + kv_cols) * 4) as u64,
                strides: attention::LaneStrides {
                    q: qkv.cols,
                    kv: qkv.cols,
                },
            };
            let widths = caches.first().map(|c| {
                let d = Self::attn_dims(c.shape);
                (d.q_width(), d.kv_width())
            });
            // (Column blocks at 16-byte boundaries, as the launch's vector loads want.)
            let aligned = q_cols.is_multiple_of(4) && kv_cols.is_multiple_of(4);
            if aligned && widths == Some((q_cols, kv_cols)) {
                if let Some(out) = self.attend_rope_lanes(caches, layer, inputs, None, rope) {
                    return out;
                }
            }
        }
        let q = self.slice_cols(qkv, 0, q_cols);
        let k = self.slice_cols(qkv, q_cols, kv_cols);
        let v = self.slice_cols(qkv, q_cols + kv_cols, kv_cols);
        self.rope_attention_lanes(caches, layer, &q, &k, &v, head_dim, rope)
    }

    fn gated_attention(
        &self,
        cache: &mut CudaKvCache,
        layer: usize,
        qkv: &CudaAct,
        norms: QkNorms<'_, CudaSlice<f32>>,
        shape: AttnShape,
        rope: &Rope,
    ) -> CudaAct {
        // A decode row: one launch reading q, gate, k and v in place from qkv.
        let fused = (qkv.rows == 1 && cache.shape == shape)
            .then(|| self.gated_fusion(qkv, norms, shape, rope))
            .flatten();
        if let Some(norm) = fused {
            let pos = self.attention_pos(cache, 1);
            let out = self.alloc(1, shape.n_heads * shape.head_dim);
            let inputs = (self.ptr(qkv), 0, 0);
            let op = self.ptr(&out);
            self.attend_rope_to(cache, layer, inputs, Some(norm), pos, rope, op);
            return out;
        }
        let c = GatedCaches::One(cache);
        gated_attention_apart(self, c, layer, qkv, norms, shape, rope)
    }

    fn gated_attention_lanes(
        &self,
        caches: &mut [&mut CudaKvCache],
        layer: usize,
        qkv: &CudaAct,
        norms: QkNorms<'_, CudaSlice<f32>>,
        shape: AttnShape,
        rope: &Rope,
    ) -> CudaAct {
        check_lanes(caches.len(), qkv.rows, "gated_attention_lanes");
        let fused = (!lanes_attention_apart() && caches.iter().all(|c| c.shape == shape))
            .then(|| self.gated_fusion(qkv, norms, shape, rope))
            .flatten();
        if let Some(norm) = fused {
            // Every lane in one launch; k and v are found from q's row by the launch.
            let inputs = LaneInputs {
                q: self.ptr(qkv),
                k: 0,
                v: 0,
                strides: attention::LaneStrides {
                    q: qkv.cols,
                    kv: qkv.cols,
                },
            };
            if let Some(out) = self.attend_rope_lanes(caches, layer, inputs, Some(norm), rope) {
                return out;
            }
        }
        // (More lanes than one launch takes, or a capture of another batch: the ops apart,
        // whose RoPE + attention still runs per lane fused.)
        let c = GatedCaches::Lanes(caches);
        gated_attention_apart(self, c, layer, qkv, norms, shape, rope)
    }

    fn gdn_lanes(
        &self,
        w: &CudaGdnWeights,
        states: &mut [&mut CudaGdnState],
        mixed: &CudaAct,
        z: &CudaAct,
        a: &CudaAct,
        b: &CudaAct,
    ) -> CudaAct {
        let d = w.0.dims;
        let n = mixed.rows;
        check_lanes(states.len(), n, "gdn_lanes");
        check_gdn_inputs(&d, mixed, z, a, b);
        assert_eq!((z.rows, a.rows, b.rows), (n, n, n), "gdn_lanes: rows");
        let x = RawInputs {
            mixed: self.ptr(mixed),
            a: self.ptr(a),
            b: self.ptr(b),
            ..Default::default()
        };
        let o = self.gdn_lanes_step(w, states, x);
        self.gdn_out_norm_at(w, &o, (self.ptr(z), None), n)
    }

    fn gdn_lanes_stacked(
        &self,
        w: &CudaGdnWeights,
        states: &mut [&mut CudaGdnState],
        all: &CudaAct,
        widths: [usize; 4],
    ) -> CudaAct {
        let d = w.0.dims;
        let n = all.rows;
        check_lanes(states.len(), n, "gdn_lanes_stacked");
        let dense = [d.conv_dim(), d.value_dim(), d.hv, d.hv];
        assert_eq!(widths, dense, "gdn_lanes_stacked: widths");
        assert!(
            dense.iter().sum::<usize>() <= all.cols,
            "gdn_lanes_stacked: width"
        );
        if !self.gdn_lanes_in_place(&d, states, n) {
            let parts = self.split_cols(all, &widths);
            return self.gdn_lanes(w, states, &parts[0], &parts[1], &parts[3], &parts[2]);
        }
        let o = self.gdn_lanes_step_in_place(w, states, all);
        let z = self.ptr(all) + (d.conv_dim() * 4) as u64;
        self.gdn_out_norm_at(w, &o, (z, Some(all.cols)), n)
    }

    fn gdn_lanes_stacked_out_add(
        &self,
        x: &mut CudaAct,
        w: &CudaGdnWeights,
        states: &mut [&mut CudaGdnState],
        all: &CudaAct,
        widths: [usize; 4],
        out: &DeviceWeight,
    ) {
        let d = w.0.dims;
        let n = all.rows;
        let gate = (self.ptr(all) + (d.conv_dim() * 4) as u64, all.cols);
        check_lanes(states.len(), n, "gdn_lanes_stacked");
        let dense = widths == [d.conv_dim(), d.value_dim(), d.hv, d.hv];
        let route = (dense && self.gdn_lanes_in_place(&d, states, n))
            .then(|| self.gated_norm_route(out, n, w, gate))
            .flatten();
        let Some(route) = route else {
            let o = self.gdn_lanes_stacked(w, states, all, widths);
            return self.linear_add(x, &o, out, None);
        };
        let o = self.gdn_lanes_step_in_place(w, states, all);
        self.gated_norm_linear_add(x, &route, &o, w, gate, out);
    }

    fn gdn_lanes_layer_add(
        &self,
        x: &mut CudaAct,
        (norm, eps, conv): (&CudaSlice<f32>, f64, NormWeight),
        in_proj: &DeviceWeight,
        w: &CudaGdnWeights,
        states: &mut [&mut CudaGdnState],
        widths: [usize; 4],
        out: &DeviceWeight,
    ) {
        let in_conv = self.gdn_in_proj_conv(x, (norm, eps, conv), in_proj, w, states, widths);
        let Some((all, route, slab)) = in_conv else {
            let all = self.norm_linear(x, norm, eps, conv, in_proj);
            return self.gdn_lanes_stacked_out_add(x, w, states, &all, widths, out);
        };
        // The in-projection convolved q, k and v in place: the gates-in update reads them
        // and the raw gates from its rows, then the output norm and the out projection.
        let d = w.0.dims;
        let n = all.rows;
        let convolved = self.stacked_inputs(&d, &all);
        let o = self.alloc(n, d.value_dim());
        let mut st = slab.lock().expect("gdn slab");
        let launched =
            gdn::launch_update_convolved(&self.gpu, &route, &w.0, &mut st, convolved, self.ptr(&o));
        ok("gdn", launched);
        drop(st);
        let gate = (convolved.mixed + (d.conv_dim() * 4) as u64, all.cols);
        match self.gated_norm_route(out, n, w, gate) {
            Some(r) => self.gated_norm_linear_add(x, &r, &o, w, gate, out),
            None => {
                let y = self.gdn_out_norm_at(w, &o, (gate.0, Some(gate.1)), n);
                self.linear_add(x, &y, out, None);
            }
        }
    }

    fn concat_cols(&self, a: &CudaAct, b: &CudaAct) -> CudaAct {
        assert_eq!(a.rows, b.rows, "concat_cols: row counts differ");
        let y = self.alloc(a.rows, a.cols + b.cols);
        self.copy_block(a, 0, 0, &y, 0, 0, a.rows, a.cols);
        self.copy_block(b, 0, 0, &y, 0, a.cols, b.rows, b.cols);
        y
    }

    fn zeros(&self, rows: usize, cols: usize) -> CudaAct {
        self.alloc_zeroed(rows, cols)
    }

    fn gather_rows(&self, x: &CudaAct, rows: &[usize]) -> CudaAct {
        assert!(
            rows.iter().all(|&r| r < x.rows),
            "gather_rows: row out of range"
        );
        let y = self.alloc(rows.len(), x.cols);
        if rows.is_empty() {
            return y;
        }
        self.not_capturing("gather_rows");
        let ids = self.upload_i32(rows);
        ok(
            "gather_rows",
            elementwise::gather_rows(
                &self.gpu,
                self.ptr(x),
                self.slice_ptr(&ids),
                self.ptr(&y),
                rows.len(),
                x.cols,
            ),
        );
        y
    }

    fn scatter_add_rows(&self, out: &mut CudaAct, x: &CudaAct, rows: &[usize], scale: &[f32]) {
        assert_eq!(out.cols, x.cols, "scatter_add_rows: widths differ");
        assert_eq!(
            (rows.len(), scale.len()),
            (x.rows, x.rows),
            "scatter_add_rows: counts"
        );
        assert!(
            rows.iter().all(|&r| r < out.rows),
            "scatter_add_rows: row out of range"
        );
        if rows.is_empty() {
            return;
        }
        let mut seen = rows.to_vec();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(
            seen.len(),
            rows.len(),
            "scatter_add_rows: rows must be distinct"
        );
        self.not_capturing("scatter_add_rows");
        let ids = self.upload_i32(rows);
        let sc = ok("uploading scales", self.gpu.upload(scale));
        ok(
            "scatter_add_rows",
            elementwise::scatter_add_rows(
                &self.gpu,
                self.ptr(out),
                self.ptr(x),
                self.slice_ptr(&ids),
                self.slice_ptr(&sc),
                rows.len(),
                x.cols,
            ),
        );
    }

    fn softmax(&self, x: &CudaAct) -> CudaAct {
        let y = self.alloc(x.rows, x.cols);
        ok(
            "softmax",
            elementwise::softmax_rows(&self.gpu, self.ptr(x), self.ptr(&y), x.rows, x.cols),
        );
        y
    }

    fn nll_rows(&self, logits: &CudaAct, targets: &[u32]) -> Vec<f64> {
        super::backend::check_nll_targets(logits.rows, logits.cols, targets);
        if targets.is_empty() {
            return Vec::new();
        }
        self.not_capturing("nll_rows");
        let t = ok("uploading targets", self.gpu.upload(targets));
        // SAFETY: the kernel writes one value per row.
        let out = ok(
            "allocating",
            unsafe { self.gpu.stream().alloc::<f64>(logits.rows) }
                .map_err(|e| GpuError::driver("allocating device memory", e)),
        );
        ok(
            "nll_rows",
            crate::ops::loss::nll_rows(
                &self.gpu,
                self.ptr(logits),
                self.slice_ptr(&t),
                self.slice_ptr(&out),
                logits.rows,
                logits.cols,
            ),
        );
        ok("downloading the nlls", self.gpu.download(&out))
    }

    fn replay_step(&self, cache: &mut CudaKvCache, id: u32) -> Option<Vec<f32>> {
        self.run_step_graph(cache, id)?;
        let out_len = cache.step.captured.as_ref().expect("just replayed").out_len;
        let out = cache.step.out.as_ref().expect("made by begin_step_capture");
        Some(self.read_logits(out, out_len, &mut cache.step.host))
    }

    fn replay_step_greedy(&self, cache: &mut CudaKvCache, id: u32) -> Option<u32> {
        self.run_step_graph(cache, id)?;
        let ids = cache.step.ids.as_ref().expect("made by begin_step_capture");
        let ids = ok("reading the step's token", self.gpu.download(ids));
        Some(ids[0])
    }

    fn begin_step_capture(&self, cache: &mut CudaKvCache, logits: usize) -> bool {
        if !self.opts.graphs || !cache.step.warmed {
            return false;
        }
        // Room for this step first: growing the cache cannot happen inside the graph.
        self.kv_reserve(cache, cache.len + 1);
        // The input and output slots, made outside the capture so that they outlive it.
        let step = &mut cache.step;
        if step.out.as_ref().is_none_or(|o| o.len() != logits) {
            step.out = Some(ok(
                "allocating the step's logits",
                self.gpu.alloc_zeros(logits),
            ));
        }
        let io = step
            .io
            .get_or_insert_with(|| ok("allocating step inputs", self.gpu.alloc_zeros(2)));
        let io = self.slice_ptr(io);
        let ids = step
            .ids
            .get_or_insert_with(|| ok("allocating the step's token", self.gpu.alloc_zeros(1)));
        let ids = self.slice_ptr(ids);
        let (out, out_cap) = (self.slice_ptr(step.out.as_ref().unwrap()), logits);
        self.start_capture(
            &mut step.arena,
            step.arena_need,
            Capturing {
                io,
                lanes: 1,
                pos: io + 4,
                out,
                out_cap,
                ids,
                capacity: cache.capacity,
                out_len: None,
            },
        );
        true
    }

    fn replay_lanes(&self, caches: &mut [&mut CudaKvCache], ids: &[u32]) -> Option<Vec<f32>> {
        self.replay_lanes_graph(caches, ids)?;
        Some(self.lanes_logits(&mut caches[0].lanes))
    }

    fn replay_lanes_greedy(
        &self,
        caches: &mut [&mut CudaKvCache],
        ids: &[u32],
    ) -> Option<Vec<u32>> {
        self.replay_lanes_graph(caches, ids)?;
        Some(self.lanes_greedy(&caches[0].lanes))
    }

    fn begin_lanes_capture(&self, caches: &mut [&mut CudaKvCache], logits: usize) -> bool {
        let n = caches.len();
        if !self.opts.graphs || n == 0 {
            return false;
        }
        {
            let ids: Vec<u64> = caches.iter().map(|c| c.id).collect();
            let mut warmed = self.lanes_warmed.lock().expect("lanes warm-up");
            if !warmed.contains(&ids) {
                // This batch's first step runs op by op (loading its kernels, moving its GDN
                // states into slabs); the next one is captured.
                warmed.push(ids);
                return false;
            }
        }
        // Room for this step first: a cache cannot grow inside the graph.
        for c in caches.iter_mut() {
            self.kv_reserve(c, c.len + 1);
        }
        let capacity = caches[0].capacity;
        let g = &mut caches[0].lanes;
        g.captured = None;
        if g.out.as_ref().is_none_or(|o| o.len() != n * logits) {
            g.out = Some(ok(
                "allocating the lanes step's logits",
                self.gpu.alloc_zeros(n * logits),
            ));
        }
        if g.io.as_ref().is_none_or(|io| io.len() != 2 * n) {
            g.io = Some(ok(
                "allocating lanes step inputs",
                self.gpu.alloc_zeros(2 * n),
            ));
        }
        if g.ids.as_ref().is_none_or(|ids| ids.len() != n) {
            g.ids = Some(ok(
                "allocating the lanes step's tokens",
                self.gpu.alloc_zeros(n),
            ));
        }
        let io = self.slice_ptr(g.io.as_ref().expect("made above"));
        let out = self.slice_ptr(g.out.as_ref().expect("made above"));
        let ids = self.slice_ptr(g.ids.as_ref().expect("made above"));
        self.start_capture(
            &mut g.arena,
            g.arena_need,
            Capturing {
                io,
                lanes: n,
                pos: io + 4 * n as u64,
                out,
                out_cap: n * logits,
                ids,
                capacity,
                out_len: None,
            },
        );
        true
    }

    fn end_lanes_capture(&self, caches: &mut [&mut CudaKvCache], ids: &[u32]) -> Vec<f32> {
        let graph = Graph::end_capture(&self.gpu);
        let need = self.arena.lock().expect("arena").take().map(|a| a.need);
        let c = self
            .capturing
            .lock()
            .expect("capture state")
            .take()
            .expect("end_lanes_capture without begin_lanes_capture");
        let graph = ok("capturing the lanes step", graph);
        let out_len = c
            .out_len
            .expect("the captured lanes step produced no logits");
        let named = caches.iter().map(|c| (c.id, c.capacity)).collect();
        let g = &mut caches[0].lanes;
        if let Some(need) = need {
            g.arena_need = need;
        }
        g.captured = Some(CapturedLanes {
            graph,
            epoch: self.gdn_epoch(),
            caches: named,
            out_len,
        });
        tracing::info!("lanes step captured ({} lanes)", caches.len());
        // The host side ran the step (every cache is one longer); run the device side.
        for c in caches.iter_mut() {
            c.len -= 1;
        }
        self.run_lanes_graph(caches, ids);
        self.lanes_logits(&mut caches[0].lanes)
    }

    fn end_step_capture(&self, cache: &mut CudaKvCache, id: u32) -> Vec<f32> {
        let graph = Graph::end_capture(&self.gpu);
        if let Some(a) = self.arena.lock().expect("arena").take() {
            cache.step.arena_need = a.need;
        }
        let c = self
            .capturing
            .lock()
            .expect("capture state")
            .take()
            .expect("end_step_capture without begin_step_capture");
        let graph = ok("capturing the decode step", graph);
        // Whether capture kept the programmatic launches as programmatic edges.
        match graph.programmatic_edges() {
            Ok(n) => tracing::info!(
                "decode step captured: {n} programmatic edges (pdl {})",
                self.gpu.pdl()
            ),
            Err(e) => tracing::info!("decode step captured; its edges unreadable: {e}"),
        }
        let out_len = c.out_len.expect("the captured step produced no logits");
        cache.step.captured = Some(CapturedStep {
            graph,
            epoch: self.gdn_epoch(),
            capacity: c.capacity,
            out_len,
        });
        // The host side ran the step (the cache is one longer); run the device side.
        cache.len -= 1;
        self.replay_step(cache, id)
            .expect("a step just captured replays")
    }
}
