//! Embedding gather: `out[t, :] = decode(W[ids[t], :])` from any weight format, ids read on
//! the device (so a captured graph replays with new ids). Template: `embedding/gather.cu`.

use rand::Rng;

use super::weight::{random_payload, DeviceWeight};
use super::DType;
use crate::formats::{Format, Layout};
use cudarc::driver::DevicePtr;

use crate::gpu::{AnyBuffer, CudaSlice, Gpu, GpuError, Graph, LaunchConfig};
use crate::jit::KernelSpec;
use crate::qualify::{allowance_for, Outcome};

const BLOCK: u32 = 128;

/// One gather instantiation.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingRoute {
    pub format: &'static Format,
    pub output: DType,
}

impl EmbeddingRoute {
    pub fn spec(&self) -> KernelSpec {
        KernelSpec::new(
            "embedding",
            "embedding/gather.cu",
            format!("embedding_{}_{}", self.format.name, self.output.short()),
        )
        .param("format", &self.format.name)
        .param("out_type", self.output.cuda_type())
        .param("block", BLOCK)
        .programmatic()
    }
}

fn all_routes() -> Vec<EmbeddingRoute> {
    crate::formats::registry()
        .iter()
        .flat_map(|format| DType::ALL.map(|output| EmbeddingRoute { format, output }))
        .collect()
}

pub fn instantiations() -> Vec<KernelSpec> {
    all_routes().iter().map(EmbeddingRoute::spec).collect()
}

/// Queues the gather of `ids.len()` rows into `out` (`[T, H]` of the route's type).
pub fn launch(
    gpu: &Gpu,
    route: &EmbeddingRoute,
    w: &DeviceWeight,
    ids: &CudaSlice<i32>,
    t: usize,
    out: &mut AnyBuffer,
) -> Result<(), GpuError> {
    assert!(ids.len() >= t);
    launch_at(gpu, route, w, ids.device_ptr(gpu.stream()).0, t, out)
}

/// As [`launch`] with the ids at a device address (`t` i32 values), e.g. a captured decode
/// step's input slot.
pub fn launch_at(
    gpu: &Gpu,
    route: &EmbeddingRoute,
    w: &DeviceWeight,
    ids: u64,
    t: usize,
    out: &mut AnyBuffer,
) -> Result<(), GpuError> {
    let (vocab, h) = (w.layout.n, w.layout.k);
    assert!(out.len() >= t * h && out.dtype() == route.output);
    if t == 0 {
        return Ok(());
    }
    let f = gpu.kernel(&route.spec())?;
    let (q, s) = w.planes(gpu);
    let (qs, ss) = (w.layout.q_row_bytes as i64, w.layout.s_row_bytes as i64);
    let (vi, hi) = (vocab as i32, h as i32);
    let o = out.device_ptr(gpu);
    let cfg = LaunchConfig {
        grid_dim: (t as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.launch(&f);
    b.arg(&q)
        .arg(&s)
        .arg(&qs)
        .arg(&ss)
        .arg(&ids)
        .arg(&vi)
        .arg(&hi)
        .arg(&o);
    // SAFETY: arguments match the template; ids are bounds-checked on the device.
    unsafe { b.launch(cfg) }
        .map_err(|e| GpuError::driver(format!("launching {}", route.spec().entry), e))?;
    Ok(())
}

/// The reference: decoded rows in f64.
pub fn reference(fmt: &Format, layout: &Layout, payload: &[u8], ids: &[i32]) -> Vec<f64> {
    let mut out = Vec::with_capacity(ids.len() * layout.k);
    let mut row = vec![0f32; layout.k];
    for &id in ids {
        crate::formats::decode_row(fmt, layout, payload, id as usize, &mut row);
        out.extend(row.iter().map(|&v| v as f64));
    }
    out
}

/// Every route at SmolLM2's and a 27B-sized table, then one route under graph replay with
/// new ids, which must equal an eager gather bit for bit.
pub fn qualify(
    gpu: &Gpu,
    rng: &mut impl Rng,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<Outcome>, GpuError> {
    let mut outcomes = Vec::new();
    for route in all_routes() {
        if !wanted(&route.spec().entry) {
            continue;
        }
        for (vocab, h, t) in [(49152usize, 576usize, 7usize), (248320, 5120, 3)] {
            if route.format.kind == crate::formats::FormatKind::Dense
                && vocab > 100_000
                && route.format.name != "bf16"
            {
                continue; // 5 GB of f32 table buys nothing the bf16 and small-table runs do not
            }
            let layout = Layout::new(route.format, vocab, h).expect("embedding shapes fit");
            let payload = random_payload(route.format, &layout, rng);
            let w = DeviceWeight::upload(gpu, route.format, layout, &payload)?;
            let mut ids: Vec<i32> = (0..t).map(|_| rng.random_range(0..vocab as i32)).collect();
            ids[0] = vocab as i32 - 1;
            let dids = gpu.upload(&ids)?;
            let mut out = AnyBuffer::poisoned(gpu, route.output, t * h)?;
            launch(gpu, &route, &w, &dids, t, &mut out)?;
            gpu.synchronize()?;
            let want = reference(route.format, &layout, &payload, &ids);
            let want: Vec<f64> = want
                .iter()
                .map(|&v| route.output.round(v as f32) as f64)
                .collect();
            outcomes.push(Outcome::compare(
                route.spec().entry,
                format!("vocab={vocab} H={h} T={t}"),
                &out.download(gpu)?,
                &want,
                allowance_for(route.output),
            ));
        }
    }
    if wanted("embedding_q4_g64_bf16 (graph replay = eager, bitwise)") {
        outcomes.push(graph_replay_is_bit_identical(gpu, rng)?);
    }
    Ok(outcomes)
}

fn graph_replay_is_bit_identical(gpu: &Gpu, rng: &mut impl Rng) -> Result<Outcome, GpuError> {
    let fmt = crate::formats::format("q4_g64").expect("registered");
    let route = EmbeddingRoute {
        format: fmt,
        output: DType::Bf16,
    };
    let (vocab, h, t) = (248320usize, 5120usize, 8usize);
    let layout = Layout::new(fmt, vocab, h).expect("fits");
    let payload = random_payload(fmt, &layout, rng);
    let w = DeviceWeight::upload(gpu, fmt, layout, &payload)?;
    let mut ids = gpu.upload(&vec![0i32; t])?;
    let mut graph_out = AnyBuffer::poisoned(gpu, DType::Bf16, t * h)?;
    let graph = Graph::capture(gpu, || launch(gpu, &route, &w, &ids, t, &mut graph_out))?;
    let mut identical = true;
    let mut last = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let new_ids: Vec<i32> = (0..t).map(|_| rng.random_range(0..vocab as i32)).collect();
        gpu.stream()
            .memcpy_htod(&new_ids, &mut ids)
            .map_err(|e| GpuError::driver("writing ids", e))?;
        graph.replay()?;
        let eager_ids = gpu.upload(&new_ids)?;
        let mut eager = AnyBuffer::poisoned(gpu, DType::Bf16, t * h)?;
        launch(gpu, &route, &w, &eager_ids, t, &mut eager)?;
        gpu.synchronize()?;
        let (AnyBuffer::Bf16(g), AnyBuffer::Bf16(e)) = (&graph_out, &eager) else {
            unreachable!()
        };
        let (gb, eb) = (gpu.download(g)?, gpu.download(e)?);
        identical &= gb == eb;
        last = (gb, new_ids);
    }
    // Judge the last replay against the reference too, and fail outright on any bit difference.
    let want: Vec<f64> = reference(fmt, &layout, &payload, &last.1)
        .iter()
        .map(|&v| DType::Bf16.round(v as f32) as f64)
        .collect();
    let mut got: Vec<f32> = last
        .0
        .iter()
        .map(|&b| half::bf16::from_bits(b).to_f32())
        .collect();
    if !identical {
        got[0] = f32::NAN;
    }
    Ok(Outcome::compare(
        format!("{} (graph replay = eager, bitwise)", route.spec().entry),
        format!("vocab={vocab} H={h} T={t}"),
        &got,
        &want,
        0.0,
    ))
}
