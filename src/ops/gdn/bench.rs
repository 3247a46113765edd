//! GDN kernel benchmarks at the Qwen3.6-27B shape: the fused decode step at 1 and 8 lanes
//! (f32 and f16 state, every vector tile) and the chunked prefill at 512 and 4096 tokens.
//! Each is timed as the replay of a CUDA graph of several launches over state sets that
//! together exceed twice the L2, so that every launch reads its state from memory.

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::drift::realistic_params;
use super::*;
use crate::bench::{median_us, rotation_sets, BenchCtx, BenchRecord};
use crate::gpu::Graph;

pub const DECODE_WHAT: &str = "gdn decode";
pub const PREFILL_WHAT: &str = "gdn prefill";
pub const PREFILL_STAGE_WHAT: &str = "gdn prefill stage";

/// The `shape` string of a decode record (the peer script writes the same).
pub fn decode_shape(lanes: usize, d: &GdnDims, st: StateType) -> String {
    format!("lanes={lanes} {} state={}", d.describe(), st.short())
}

/// The `shape` string of a prefill record.
pub fn prefill_shape(t: usize, d: &GdnDims, st: StateType) -> String {
    format!("T={t} seqs=1 {} state={}", d.describe(), st.short())
}

/// Bytes one decode step must move per lane: the state read and written, the conv state
/// read and written, the inputs and the output.
pub fn decode_bytes(d: &GdnDims, st: StateType) -> (f64, f64) {
    let state = 2.0 * (d.state_len() * st.bytes()) as f64;
    let other =
        (2 * d.conv_state_len() * 4 + d.conv_dim() * 4 + 2 * d.hv * 4 + d.value_dim() * 4) as f64;
    (state, other)
}

/// Flops of the chunked prefill for one sequence of `t` tokens (what the kernels execute:
/// the two Gram matrices, the solve, W S, Q S, P V', K^T V').
pub fn prefill_flops(d: &GdnDims, t: usize) -> f64 {
    let (c, dk, dv) = (64.0, d.dk as f64, d.dv as f64);
    let per_chunk = 2.0
        * (2.0 * c * c * dk
            + 0.5 * c * c * (dk + dv)
            + 2.0 * c * dk * dv
            + 0.5 * c * c * dv
            + c * dk * dv);
    per_chunk * (t as f64 / c) * d.hv as f64
}

/// `lanes` lanes of random state (uniform in +-0.3) and conv state, seeded.
pub fn random_state(
    gpu: &Gpu,
    d: &GdnDims,
    ty: StateType,
    lanes: usize,
    seed: u64,
) -> Result<GdnState, GpuError> {
    use rand::Rng;
    let mut rng = StdRng::seed_from_u64(seed);
    let s: Vec<f32> = (0..lanes * d.state_len())
        .map(|_| rng.random_range(-0.3..0.3))
        .collect();
    let c: Vec<f32> = (0..lanes * d.conv_state_len())
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    Ok(GdnState {
        lanes,
        s: StateBuf::upload(gpu, ty, &s)?,
        conv: gpu.upload(&c)?,
        counters: gpu.alloc_zeros(lanes * d.hk)?,
        prep: Some(Box::new(super::PrepBufs::zeros(gpu, d, lanes)?)),
    })
}

/// `n` random f32 in +-2, seeded.
pub fn random_f32(gpu: &Gpu, n: usize, seed: u64) -> Result<CudaSlice<f32>, GpuError> {
    use rand::Rng;
    let mut rng = StdRng::seed_from_u64(seed);
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-2.0..2.0)).collect();
    gpu.upload(&v)
}

/// Times one decode configuration with `route`; returns the median per launch in us.
pub fn time_decode(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    lanes: usize,
) -> Result<f64, GpuError> {
    time_step_launches(gpu, route, w, lanes, |st, raw, op| {
        launch_recurrent(gpu, route, w, st, raw, 1, Some(op), None, None)
    })
}

/// Which launches of the split step [`time_split_half`] times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitHalf {
    /// The first launch alone: `gdn/prep.cu`, or `gdn/conv_step.cu` (`Tile::gin`).
    Prep,
    /// `gdn/update.cu` alone (on the inputs one first launch left).
    Update,
}

/// Times one half of a split-step route the way [`time_decode`] times the whole step
/// (median per step in us): where the step's time goes, by difference.
pub fn time_split_half(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    lanes: usize,
    half: SplitHalf,
) -> Result<f64, GpuError> {
    assert!(route.tile.split, "{route:?} is not a split-step route");
    time_step_launches(gpu, route, w, lanes, |st, raw, op| match half {
        SplitHalf::Prep => launch_split_prep(gpu, route, w, st, raw),
        SplitHalf::Update => launch_split_update(gpu, route, w, st, raw, op),
    })
}

/// Times `launch` (one decode step's launches for a state) in a graph over enough states
/// to pass L2; `route` sizes the states. Median per step in us.
fn time_step_launches(
    gpu: &Gpu,
    route: &RecurrentRoute,
    w: &GdnWeights,
    lanes: usize,
    launch: impl Fn(&mut GdnState, RawInputs, u64) -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    let d = &w.dims;
    let (sb, ob) = decode_bytes(d, route.state);
    let sets = rotation_sets(gpu, (lanes as f64 * (sb + ob) / 2.0) as usize).max(2);
    let mut states = (0..sets)
        .map(|i| random_state(gpu, d, route.state, lanes, 100 + i as u64))
        .collect::<Result<Vec<_>, _>>()?;
    let mixed = random_f32(gpu, lanes * d.conv_dim(), 1)?;
    let a = random_f32(gpu, lanes * d.hv, 2)?;
    let b = random_f32(gpu, lanes * d.hv, 3)?;
    let o: CudaSlice<f32> = gpu.alloc_zeros(lanes * d.value_dim())?;
    let raw = RawInputs {
        mixed: dptr(gpu, &mixed),
        a: dptr(gpu, &a),
        b: dptr(gpu, &b),
        ..Default::default()
    };
    let op = dptr(gpu, &o);
    // Load the kernels before capture (and leave every state's prepared inputs in place).
    for st in states.iter_mut() {
        launch_recurrent(gpu, route, w, st, raw, 1, Some(op), None, None)?;
    }
    gpu.synchronize()?;
    let graph = Graph::capture(gpu, || {
        for st in states.iter_mut() {
            launch(st, raw, op)?;
        }
        Ok(())
    })?;
    let us = median_us(gpu, 3, 25, |_| graph.replay())?;
    Ok(us / sets as f64)
}

/// Times the chunked prefill of one sequence of `t` tokens; median per prefill in us.
pub fn time_prefill(gpu: &Gpu, w: &GdnWeights, ty: StateType, t: usize) -> Result<f64, GpuError> {
    time_prefill_stages(gpu, w, ty, t, PrefillStages::ALL)
}

/// [`time_prefill`] of only `stages` (the workspace holds a whole prefill's intermediates
/// first, so each stage reads real data).
pub fn time_prefill_stages(
    gpu: &Gpu,
    w: &GdnWeights,
    ty: StateType,
    t: usize,
    stages: PrefillStages,
) -> Result<f64, GpuError> {
    let d = &w.dims;
    let in_bytes = t * (d.conv_dim() + 2 * d.hv) * 4;
    let sets = rotation_sets(gpu, in_bytes).min(8);
    let inputs = (0..sets)
        .map(|i| -> Result<_, GpuError> {
            Ok((
                random_f32(gpu, t * d.conv_dim(), 10 + i as u64)?,
                random_f32(gpu, t * d.hv, 20 + i as u64)?,
                random_f32(gpu, t * d.hv, 30 + i as u64)?,
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut st = random_state(gpu, d, ty, 1, 5)?;
    // The whole route first, so that each stage timed alone reads what its route's stages
    // write (q and k in the route's form), not an uninitialised workspace. A stage set
    // without the scan names no scan width: the route's own then.
    let whole = PrefillStages {
        prep: true,
        wu: true,
        scan: true,
        scan_dvt: match stages.scan {
            true => stages.scan_dvt,
            false => PrefillStages::route(stages.wu_math, stages.scan_math).scan_dvt,
        },
        ..stages
    };
    let mut ws = PrefillWorkspace::new(gpu, d, 1, t, ty, &[whole])?;
    let o: CudaSlice<f32> = gpu.alloc_zeros(t * d.value_dim())?;
    let op = dptr(gpu, &o);
    let raws: Vec<RawInputs> = inputs
        .iter()
        .map(|(m, a, b)| RawInputs {
            mixed: dptr(gpu, m),
            a: dptr(gpu, a),
            b: dptr(gpu, b),
            ..Default::default()
        })
        .collect();
    launch_prefill_stages(gpu, w, &mut st, raws[0], &mut ws, op, whole)?;
    gpu.synchronize()?;
    let graph = Graph::capture(gpu, || {
        for raw in &raws {
            launch_prefill_stages(gpu, w, &mut st, *raw, &mut ws, op, stages)?;
        }
        Ok(())
    })?;
    let us = median_us(gpu, 2, 15, |_| graph.replay())?;
    Ok(us / sets as f64)
}

/// Decode at 1 and 8 lanes (f32 and f16 state, every vector tile) and chunked prefill at
/// 512 and 4096 tokens, at the 27B shape.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<BenchRecord>, GpuError> {
    let w = bench_weights(ctx.gpu)?;
    let mut out = bench_decode(ctx, &w)?;
    out.extend(bench_prefill(ctx, &w)?);
    Ok(out)
}

/// The 27B layer's weights the benchmarks use (seeded).
pub fn bench_weights(gpu: &Gpu) -> Result<GdnWeights, GpuError> {
    let d = QWEN36_27B;
    let mut rng = StdRng::seed_from_u64(7);
    let p = realistic_params(&d, &mut rng);
    GdnWeights::upload(gpu, d, &p)
}

/// The decode step at 1 and 8 lanes, f32 and f16 state, every vector tile. The graph's
/// launches follow each other directly, so with PDL on (the device switch) each overlaps
/// its predecessor's tail as the engine's decode step does (`NINFER_NO_PDL=1`: without).
pub fn bench_decode(ctx: &BenchCtx, w: &GdnWeights) -> Result<Vec<BenchRecord>, GpuError> {
    let (gpu, d) = (ctx.gpu, w.dims);
    let mut out = Vec::new();
    for lanes in [1usize, 8] {
        for ty in StateType::ALL {
            for route in RecurrentRoute::all_for(Mode::Step, ty, &d) {
                if !route.tile.vec {
                    continue;
                }
                let us = time_decode(gpu, &route, w, lanes)?;
                let (sb, ob) = decode_bytes(&d, ty);
                let flops = (lanes * d.hv * d.dk * d.dv * 8) as f64;
                out.push(ctx.record(
                    DECODE_WHAT,
                    route.spec().entry,
                    decode_shape(lanes, &d, ty),
                    us,
                    lanes as f64 * (sb + ob),
                    flops,
                ));
                if lanes == 8 && route.tile.split {
                    out.extend(split_halves(ctx, w, &route, lanes)?);
                }
            }
        }
    }
    Ok(out)
}

/// A split-step route's halves, each timed alone ([`time_split_half`]): `<entry> prep only`
/// or, with the gates in the update (`Tile::gin`), `<entry> conv only` (bytes: its inputs,
/// outputs and conv-state windows), and `<entry> update only` (the state read and written,
/// its inputs and output).
fn split_halves(
    ctx: &BenchCtx,
    w: &GdnWeights,
    route: &RecurrentRoute,
    lanes: usize,
) -> Result<Vec<BenchRecord>, GpuError> {
    let d = w.dims;
    let shape = decode_shape(lanes, &d, route.state);
    // What the update reads besides the state: the prep's q, k, v, g and beta, or the
    // conv's q, k and v and the raw a and b.
    let prepared = 2 * d.hk * d.dk + d.value_dim() + 2 * d.hv;
    let first_in = d.conv_dim() + 2 * d.conv_state_len();
    let (first, first_bytes) = match route.tile.gin {
        true => ("conv only", (first_in + d.conv_dim()) * 4),
        false => ("prep only", (first_in + 2 * d.hv + prepared) * 4),
    };
    let (sb, _) = decode_bytes(&d, route.state);
    let update_bytes = sb + ((prepared + d.value_dim()) * 4) as f64;
    let mut out = Vec::new();
    for (half, name, bytes) in [
        (SplitHalf::Prep, first, first_bytes as f64),
        (SplitHalf::Update, "update only", update_bytes),
    ] {
        let us = time_split_half(ctx.gpu, route, w, lanes, half)?;
        let entry = format!("{} {name}", route.spec().entry);
        out.push(ctx.record(
            DECODE_WHAT,
            entry,
            shape.clone(),
            us,
            lanes as f64 * bytes,
            0.0,
        ));
    }
    Ok(out)
}

/// The chunked prefill at 512 and 4096 tokens (27B shape, both storage types), every route
/// of [`PrefillStages::ROUTES`], then each stage alone.
pub fn bench_prefill(ctx: &BenchCtx, w: &GdnWeights) -> Result<Vec<BenchRecord>, GpuError> {
    let (gpu, d) = (ctx.gpu, w.dims);
    let mut out = Vec::new();
    for t in [512usize, 4096] {
        for route in PrefillStages::ROUTES
            .into_iter()
            .filter(|r| r.runs_on(gpu, &d))
        {
            for ty in StateType::ALL {
                let us = time_prefill_stages(gpu, w, ty, t, route)?;
                let bytes = (t * (d.conv_dim() + 2 * d.hv + d.value_dim()) * 4) as f64
                    + 2.0 * (d.state_len() * ty.bytes() + d.conv_state_len() * 4) as f64;
                out.push(ctx.record(
                    PREFILL_WHAT,
                    route.route_name(),
                    prefill_shape(t, &d, ty),
                    us,
                    bytes,
                    prefill_flops(&d, t),
                ));
            }
        }
        // Each stage alone (f32 state), to say where the time goes.
        let one = |prep, wu, scan, scan_dvt, math| PrefillStages {
            prep,
            wu,
            scan,
            scan_dvt,
            wu_math: math,
            scan_math: math,
            scan_bufs: 2,
            scan_wgmma: false,
            scan_two_wg: false,
            u_half: false,
        };
        let mut stages = vec![
            (
                "prep".to_string(),
                one(true, false, false, 0, ChunkMath::F32),
            ),
            (
                "prep_qkvh".to_string(),
                one(true, false, false, 0, ChunkMath::F16),
            ),
            (
                "chunk_wu".to_string(),
                one(false, true, false, 0, ChunkMath::F32),
            ),
        ];
        for dvt in CHUNK_DVTS {
            let s = one(false, false, true, dvt, ChunkMath::F32);
            stages.push((format!("chunk_scan_v{dvt}"), s));
        }
        for math in [ChunkMath::Tf32, ChunkMath::Tf32x3] {
            let s = one(false, true, false, 0, math);
            stages.push((format!("chunk_wu_{}", math.short()), s));
            for dvt in CHUNK_TC_DVTS {
                let s = one(false, false, true, dvt, math);
                stages.push((format!("chunk_scan_{}_v{dvt}", math.short()), s));
            }
        }
        stages.push((
            "chunk_wu_f16".to_string(),
            one(false, true, false, 0, ChunkMath::F16),
        ));
        for dvt in CHUNK_F16_DVTS {
            let s = one(false, false, true, dvt, ChunkMath::F16);
            stages.push((format!("chunk_scan_f16_v{dvt}"), s));
            let s = s.with_scan(dvt, 1);
            stages.push((format!("chunk_scan_f16_v{dvt}_b1"), s));
        }
        for n in CHUNK_WG_STAGE_COUNTS {
            let wg = one(false, false, true, 64, ChunkMath::F16).with_wgmma_stages(n);
            if wg.runs_on(gpu, &d) {
                stages.push((format!("chunk_scan_wg_v64_s{n}"), wg));
                let wgs = wg.with_two_warpgroups();
                stages.push((format!("chunk_scan_wgs_v64_s{n}"), wgs));
                let u16 = wgs.with_half_u();
                stages.push((format!("chunk_scan_wgs_v64_s{n}_u16"), u16));
                let wu16 = PrefillStages {
                    wu: true,
                    scan: false,
                    ..u16
                };
                stages.push((format!("chunk_wu_f16_u16_s{n}"), wu16));
            }
        }
        for (name, stages) in stages {
            let us = time_prefill_stages(gpu, w, StateType::F32, t, stages)?;
            out.push(ctx.record(
                PREFILL_STAGE_WHAT,
                name,
                prefill_shape(t, &d, StateType::F32),
                us,
                0.0,
                0.0,
            ));
        }
    }
    Ok(out)
}
