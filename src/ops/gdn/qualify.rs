//! Qualification of every GDN route against the f64 reference, at small and odd dims and
//! at the 27B and 35B-A3B shapes; record + replay against the direct path bit for bit
//! (f32 storage); the f16-storage drift run at the 27B shape.

use rand::Rng;
use rand_distr::StandardNormal;

use super::drift::{realistic_params, DriftReport, InputPool};
use super::reference::{self, GdnParams};
use super::*;
use crate::ops::DType;
use crate::qualify::Outcome;

/// Relative L2 allowed for f32 outputs of the recurrent routes (f32 arithmetic over a few
/// tokens) and for anything compared with an f32-storage state.
pub const ALLOW_REC_F32: f64 = 2e-5;
/// The chunked prefill (f32, a triangular solve and longer sums). The 3xTF32 scan is held
/// to the same allowance: its split products are meant to be as accurate as f32 FMAs.
pub const ALLOW_CHUNK_F32: f64 = 1e-4;
/// The chunked prefill with chunk products on TF32 tensor cores (inputs rounded to 10
/// mantissa bits, unit roundoff 2^-11 = 4.9e-4, f32 accumulation). bench/gdn run 7: worst
/// 5.3e-4 over 580 outcomes (every shape, T = 1 to 4096, both storage types), 4.3e-4 at
/// 4096 tokens on the 27B shape; the allowance keeps a 4x margin and stays under a bf16
/// rounding (3.9e-3).
pub const ALLOW_CHUNK_TF32: f64 = 2e-3;
/// A state stored as f16 (unit roundoff 2^-11 = 4.9e-4 per element).
pub const ALLOW_STATE_F16: f64 = 1e-3;

/// The shapes every route is qualified at.
pub fn shapes() -> Vec<(&'static str, GdnDims)> {
    vec![
        ("tiny", GdnDims::new(1, 1, 5, 7)),
        ("odd", GdnDims::new(3, 6, 24, 20)),
        ("mid", GdnDims::new(2, 6, 64, 33)),
        ("27B", QWEN36_27B),
        ("35B-A3B", QWEN36_35B_A3B),
    ]
}

struct Case {
    d: GdnDims,
    p: GdnParams,
    lanes: usize,
    t: usize,
    s0: Vec<f32>,
    c0: Vec<f32>,
    mixed: Vec<f32>,
    z: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
}

fn normal(rng: &mut impl Rng, n: usize, s: f32) -> Vec<f32> {
    (0..n)
        .map(|_| rng.sample::<f32, _>(StandardNormal) * s)
        .collect()
}

impl Case {
    fn new(
        d: GdnDims,
        p: &GdnParams,
        lanes: usize,
        t: usize,
        ty: StateType,
        rng: &mut impl Rng,
    ) -> Self {
        let s0 = normal(rng, lanes * d.state_len(), 0.3)
            .into_iter()
            .map(|v| ty.round(v))
            .collect();
        Case {
            d,
            p: p.clone(),
            lanes,
            t,
            s0,
            c0: normal(rng, lanes * d.conv_state_len(), 1.0),
            mixed: normal(rng, lanes * t * d.conv_dim(), 1.0),
            z: normal(rng, lanes * t * d.value_dim(), 1.0),
            a: normal(rng, lanes * t * d.hv, 1.0),
            b: normal(rng, lanes * t * d.hv, 1.5),
        }
    }

    /// Per lane, token by token: o, y (lane-major, like the GPU), the state after each
    /// token `[lanes][t][state]` and the conv state after each token.
    /// o, y and the final states only, over all `t` tokens (no per-token states: a long
    /// case's would not fit in memory), the value heads' recurrences in parallel.
    fn reference_final(&self) -> RefOut {
        use rayon::prelude::*;
        let d = &self.d;
        let f = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let (cd, vd, hv, t) = (d.conv_dim(), d.value_dim(), d.hv, self.t);
        let (dk, dv, r) = (d.dk, d.dv, d.hv / d.hk);
        let one = GdnDims::new(1, 1, dk, dv);
        let mut out = RefOut::default();
        for l in 0..self.lanes {
            let mut s = f(&self.s0[l * d.state_len()..(l + 1) * d.state_len()]);
            let mut c = f(&self.c0[l * d.conv_state_len()..(l + 1) * d.conv_state_len()]);
            let x = reference::prepare(
                d,
                &self.p,
                &mut c,
                &f(&self.mixed[l * t * cd..(l + 1) * t * cd]),
                &f(&self.a[l * t * hv..(l + 1) * t * hv]),
                &f(&self.b[l * t * hv..(l + 1) * t * hv]),
                t,
            );
            let per_head: Vec<Vec<f64>> = s
                .par_chunks_mut(dk * dv)
                .enumerate()
                .map(|(h, sh)| {
                    let kh = h / r;
                    let gather = |v: &[f64], heads: usize, hi: usize, n: usize| {
                        (0..t)
                            .flat_map(|k| v[(k * heads + hi) * n..][..n].iter().copied())
                            .collect::<Vec<f64>>()
                    };
                    let xh = reference::Prepared {
                        q: gather(&x.q, d.hk, kh, dk),
                        k: gather(&x.k, d.hk, kh, dk),
                        v: gather(&x.v, hv, h, dv),
                        g: gather(&x.g, hv, h, 1),
                        beta: gather(&x.beta, hv, h, 1),
                    };
                    reference::recurrent(&one, sh, &xh)
                })
                .collect();
            let mut o = vec![0.0; t * vd];
            for (h, oh) in per_head.iter().enumerate() {
                for k in 0..t {
                    o[(k * hv + h) * dv..][..dv].copy_from_slice(&oh[k * dv..][..dv]);
                }
            }
            let y = reference::gated_norm(
                d,
                &o,
                &f(&self.z[l * t * vd..(l + 1) * t * vd]),
                &self.p.norm_w,
                self.p.eps,
            );
            out.o.extend(o);
            out.y.extend(y);
            out.final_state.extend_from_slice(&s);
            out.final_conv.extend_from_slice(&c);
        }
        out
    }

    fn reference(&self, tokens: usize) -> RefOut {
        let d = &self.d;
        let f = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let (cd, vd, hv, t) = (d.conv_dim(), d.value_dim(), d.hv, self.t);
        let mut out = RefOut::default();
        for l in 0..self.lanes {
            let mut s = f(&self.s0[l * d.state_len()..(l + 1) * d.state_len()]);
            let mut c = f(&self.c0[l * d.conv_state_len()..(l + 1) * d.conv_state_len()]);
            for k in 0..tokens {
                let tok = l * t + k;
                let x = reference::prepare(
                    d,
                    &self.p,
                    &mut c,
                    &f(&self.mixed[tok * cd..(tok + 1) * cd]),
                    &f(&self.a[tok * hv..(tok + 1) * hv]),
                    &f(&self.b[tok * hv..(tok + 1) * hv]),
                    1,
                );
                let o = reference::recurrent(d, &mut s, &x);
                let y = reference::gated_norm(
                    d,
                    &o,
                    &f(&self.z[tok * vd..(tok + 1) * vd]),
                    &self.p.norm_w,
                    self.p.eps,
                );
                out.o.extend(o);
                out.y.extend(y);
                out.states.extend_from_slice(&s);
                out.convs.extend_from_slice(&c);
            }
            out.final_state.extend_from_slice(&s);
            out.final_conv.extend_from_slice(&c);
        }
        out
    }
}

#[derive(Default)]
struct RefOut {
    o: Vec<f64>,
    y: Vec<f64>,
    states: Vec<f64>,
    convs: Vec<f64>,
    final_state: Vec<f64>,
    final_conv: Vec<f64>,
}

struct DevCase {
    w: GdnWeights,
    st: GdnState,
    mixed: CudaSlice<f32>,
    z: CudaSlice<f32>,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    /// The inputs as one stacked in-projection's rows (`[mixed | z | b | a | pad]`, read
    /// in place by the split step's prologue and the output norm), where the case asks.
    stacked: Option<(CudaSlice<f32>, usize)>,
}

/// Spare floats after a stacked row, so that its width is no sum of the parts'.
const STACK_PAD: usize = 3;

impl DevCase {
    fn new(gpu: &Gpu, c: &Case, ty: StateType) -> Result<Self, GpuError> {
        Self::with_layout(gpu, c, ty, false)
    }

    /// With `stacked`, the inputs are also uploaded as the rows of one stacked
    /// in-projection output, and [`Self::raw`] and [`Self::z`] point into it.
    fn with_layout(gpu: &Gpu, c: &Case, ty: StateType, stacked: bool) -> Result<Self, GpuError> {
        let d = &c.d;
        let stacked = if stacked {
            let (cd, vd, hv) = (d.conv_dim(), d.value_dim(), d.hv);
            let width = cd + vd + 2 * hv + STACK_PAD;
            let rows = c.mixed.len() / cd;
            let mut all = vec![f32::NAN; rows * width];
            for r in 0..rows {
                let row = &mut all[r * width..(r + 1) * width];
                row[..cd].copy_from_slice(&c.mixed[r * cd..(r + 1) * cd]);
                row[cd..cd + vd].copy_from_slice(&c.z[r * vd..(r + 1) * vd]);
                row[cd + vd..cd + vd + hv].copy_from_slice(&c.b[r * hv..(r + 1) * hv]);
                row[cd + vd + hv..cd + vd + 2 * hv].copy_from_slice(&c.a[r * hv..(r + 1) * hv]);
            }
            Some((gpu.upload(&all)?, width))
        } else {
            None
        };
        Ok(DevCase {
            stacked,
            w: GdnWeights::upload(gpu, c.d, &c.p)?,
            st: GdnState {
                lanes: c.lanes,
                s: StateBuf::upload(gpu, ty, &c.s0)?,
                conv: gpu.upload(&c.c0)?,
                counters: gpu.alloc_zeros(c.lanes * c.d.hk)?,
                prep: Some(Box::new(super::PrepBufs::zeros(gpu, &c.d, c.lanes)?)),
            },
            mixed: gpu.upload(&c.mixed)?,
            z: gpu.upload(&c.z)?,
            a: gpu.upload(&c.a)?,
            b: gpu.upload(&c.b)?,
        })
    }
    fn raw(&self, gpu: &Gpu) -> RawInputs {
        match &self.stacked {
            Some((all, width)) => {
                let d = &self.w.dims;
                let base = dptr(gpu, all);
                let b = base + ((d.conv_dim() + d.value_dim()) * 4) as u64;
                RawInputs {
                    mixed: base,
                    a: b + (d.hv * 4) as u64,
                    b,
                    mixed_ld: *width,
                    ab_ld: *width,
                }
            }
            None => RawInputs {
                mixed: dptr(gpu, &self.mixed),
                a: dptr(gpu, &self.a),
                b: dptr(gpu, &self.b),
                ..Default::default()
            },
        }
    }

    /// The output norm's z and its token rows' stride (`None`: dense).
    fn z(&self, gpu: &Gpu) -> (u64, Option<usize>) {
        match &self.stacked {
            Some((all, width)) => {
                let at = dptr(gpu, all) + (self.w.dims.conv_dim() * 4) as u64;
                (at, Some(*width))
            }
            None => (dptr(gpu, &self.z), None),
        }
    }
}

fn nan_buf(gpu: &Gpu, n: usize) -> Result<CudaSlice<f32>, GpuError> {
    gpu.upload(&vec![f32::NAN; n.max(1)])
}

/// Step mode (direct at t = 1, batch update at t > 1) against the reference: o, y (f32 and
/// bf16), the state and the conv state.
fn check_step(
    gpu: &Gpu,
    route: &RecurrentRoute,
    c: &Case,
    label: &str,
    outcomes: &mut Vec<Outcome>,
) -> Result<(), GpuError> {
    check_step_with(gpu, route, c, label, false, outcomes)
}

/// [`check_step`], with `stacked` the inputs read in place from one stacked in-projection
/// output (the engine's split step at lanes: `RawInputs` strides, the norm's `z_ld`).
fn check_step_with(
    gpu: &Gpu,
    route: &RecurrentRoute,
    c: &Case,
    label: &str,
    stacked: bool,
    outcomes: &mut Vec<Outcome>,
) -> Result<(), GpuError> {
    let d = &c.d;
    let mut dc = DevCase::with_layout(gpu, c, route.state, stacked)?;
    let (zp, z_ld) = dc.z(gpu);
    let label = &if stacked {
        format!("{label} stacked")
    } else {
        label.to_string()
    };
    let rows = c.lanes * c.t * d.hv;
    let o = nan_buf(gpu, rows * d.dv)?;
    let raw = dc.raw(gpu);
    launch_recurrent(
        gpu,
        route,
        &dc.w,
        &mut dc.st,
        raw,
        c.t,
        Some(dptr(gpu, &o)),
        None,
        None,
    )?;
    let y32 = nan_buf(gpu, rows * d.dv)?;
    let y16 = crate::gpu::AnyBuffer::poisoned(gpu, DType::Bf16, rows * d.dv)?;
    launch_out_norm(
        gpu,
        DType::F32,
        dptr(gpu, &o),
        zp,
        &dc.w,
        dptr(gpu, &y32),
        rows,
        z_ld,
    )?;
    launch_out_norm(
        gpu,
        DType::Bf16,
        dptr(gpu, &o),
        zp,
        &dc.w,
        y16.device_ptr(gpu),
        rows,
        z_ld,
    )?;
    gpu.synchronize()?;
    let r = c.reference(c.t);
    let name = route.spec().entry;
    let shape = format!("{label} {} lanes={} T={}", d.describe(), c.lanes, c.t);
    let state_allow = match route.state {
        StateType::F32 => ALLOW_REC_F32,
        StateType::F16 => ALLOW_STATE_F16,
    };
    outcomes.push(Outcome::compare(
        format!("{name} o"),
        shape.clone(),
        &gpu.download(&o)?,
        &r.o,
        ALLOW_REC_F32,
    ));
    outcomes.push(Outcome::compare(
        norm_spec(DType::F32).entry,
        shape.clone(),
        &gpu.download(&y32)?,
        &r.y,
        ALLOW_REC_F32,
    ));
    outcomes.push(Outcome::compare(
        norm_spec(DType::Bf16).entry,
        shape.clone(),
        &y16.download(gpu)?,
        &r.y,
        crate::qualify::ALLOW_BF16,
    ));
    outcomes.push(Outcome::compare(
        format!("{name} state"),
        shape.clone(),
        &dc.st.s.download(gpu)?,
        &r.final_state,
        state_allow,
    ));
    outcomes.push(Outcome::compare(
        format!("{name} conv state"),
        shape.clone(),
        &gpu.download(&dc.st.conv)?,
        &r.final_conv,
        0.0,
    ));
    let counters = gpu.download(&dc.st.counters)?;
    let ok = counters.iter().all(|&v| v == 0);
    outcomes.push(Outcome {
        route: format!("{name} counters back to 0"),
        shape,
        rel_l2: if ok { 0.0 } else { f64::INFINITY },
        allowance: 0.0,
        pass: ok,
    });
    Ok(())
}

/// One step route's checks (as [`qualify`] runs them) at `d` with `lanes` lanes of `t`
/// tokens: fresh random inputs and realistic parameters, outputs poisoned, o, the output
/// norm, the state, the conv state and the group counters against the f64 reference. For
/// `ninfer tune`, which times only candidates that pass.
pub fn check_step_route(
    gpu: &Gpu,
    route: &RecurrentRoute,
    d: &GdnDims,
    lanes: usize,
    t: usize,
    rng: &mut impl Rng,
) -> Result<Vec<Outcome>, GpuError> {
    let p = realistic_params(d, rng);
    let c = Case::new(*d, &p, lanes, t, route.state, rng);
    let mut outcomes = Vec::new();
    check_step(gpu, route, &c, "tune", &mut outcomes)?;
    Ok(outcomes)
}

/// Record over T columns and replay of n = lane (0..=T) columns, against the direct path
/// run token by token (t = 1 launches of the step route with the same tile): exact for f32
/// storage; against the reference within the storage's allowance for f16.
fn check_record_replay(
    gpu: &Gpu,
    tile: Tile,
    state: StateType,
    c: &Case,
    label: &str,
    outcomes: &mut Vec<Outcome>,
) -> Result<(), GpuError> {
    let d = &c.d;
    let (lanes, t) = (c.lanes, c.t);
    assert_eq!(lanes, t + 1);
    let route = |mode| RecurrentRoute {
        mode,
        state,
        tile,
        kc: d.kc,
    };
    let shape = format!("{label} {} lanes={lanes} T={t}", d.describe());
    let (cd, hv, vd) = (d.conv_dim(), d.hv, d.value_dim());
    // Direct: one launch per column, on per-column copies of the inputs.
    let mut direct = DevCase::new(gpu, c, state)?;
    let mut direct_states = vec![direct.st.s.download(gpu)?];
    let mut direct_convs = vec![gpu.download(&direct.st.conv)?];
    let mut direct_o = vec![f32::NAN; lanes * t * vd];
    for k in 0..t {
        let col = |v: &[f32], per: usize| -> Vec<f32> {
            (0..lanes)
                .flat_map(|l| v[(l * t + k) * per..(l * t + k + 1) * per].to_vec())
                .collect()
        };
        let m = gpu.upload(&col(&c.mixed, cd))?;
        let a = gpu.upload(&col(&c.a, hv))?;
        let b = gpu.upload(&col(&c.b, hv))?;
        let o = nan_buf(gpu, lanes * vd)?;
        let raw = RawInputs {
            mixed: dptr(gpu, &m),
            a: dptr(gpu, &a),
            b: dptr(gpu, &b),
            ..Default::default()
        };
        launch_recurrent(
            gpu,
            &route(Mode::Step),
            &direct.w,
            &mut direct.st,
            raw,
            1,
            Some(dptr(gpu, &o)),
            None,
            None,
        )?;
        let od = gpu.download(&o)?;
        for l in 0..lanes {
            direct_o[(l * t + k) * vd..(l * t + k + 1) * vd]
                .copy_from_slice(&od[l * vd..(l + 1) * vd]);
        }
        direct_states.push(direct.st.s.download(gpu)?);
        direct_convs.push(gpu.download(&direct.st.conv)?);
    }
    // Record.
    let mut rec = DevCase::new(gpu, c, state)?;
    let o = nan_buf(gpu, lanes * t * vd)?;
    let rec_s = StateBuf::upload(gpu, state, &vec![f32::NAN; lanes * t * d.state_len()])?;
    let rec_c = nan_buf(gpu, lanes * t * d.conv_state_len())?;
    let raw = rec.raw(gpu);
    launch_recurrent(
        gpu,
        &route(Mode::Record),
        &rec.w,
        &mut rec.st,
        raw,
        t,
        Some(dptr(gpu, &o)),
        Some(RecordBufs {
            state: rec_s.ptr(gpu),
            conv: dptr(gpu, &rec_c),
        }),
        None,
    )?;
    // Replay n = lane columns.
    let mut rep = DevCase::new(gpu, c, state)?;
    let counts: Vec<i32> = (0..lanes as i32).collect();
    let counts_d = gpu.upload(&counts)?;
    let raw = rep.raw(gpu);
    launch_recurrent(
        gpu,
        &route(Mode::Replay),
        &rep.w,
        &mut rep.st,
        raw,
        t,
        None,
        None,
        Some(dptr(gpu, &counts_d)),
    )?;
    gpu.synchronize()?;

    let (sl, cl) = (d.state_len(), d.conv_state_len());
    let rec_states = rec_s.download(gpu)?;
    let rec_convs = gpu.download(&rec_c)?;
    let rep_state = rep.st.s.download(gpu)?;
    let rep_conv = gpu.download(&rep.st.conv)?;
    let rec_o = gpu.download(&o)?;
    // Gather, per lane l, what record/replay say about n = l and n = every column.
    let mut want_rec = Vec::new();
    let mut got_rec = Vec::new();
    let mut want_rec_conv = Vec::new();
    let mut got_rec_conv = Vec::new();
    let mut want_rep = Vec::new();
    let mut want_rep_conv = Vec::new();
    for l in 0..lanes {
        for n in 1..=t {
            want_rec.extend_from_slice(&direct_states[n][l * sl..(l + 1) * sl]);
            got_rec.extend_from_slice(&rec_states[((l * t) + n - 1) * sl..][..sl]);
            want_rec_conv.extend_from_slice(&direct_convs[n][l * cl..(l + 1) * cl]);
            got_rec_conv.extend_from_slice(&rec_convs[((l * t) + n - 1) * cl..][..cl]);
        }
        want_rep.extend_from_slice(&direct_states[l][l * sl..(l + 1) * sl]);
        want_rep_conv.extend_from_slice(&direct_convs[l][l * cl..(l + 1) * cl]);
    }
    let exact = |what: &str, got: &[f32], want: &[f32]| -> Outcome {
        let bits_equal = got.len() == want.len()
            && got
                .iter()
                .zip(want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
        let w64: Vec<f64> = want.iter().map(|&v| v as f64).collect();
        let mut o = Outcome::compare(
            format!("{what} == direct (bitwise)"),
            shape.clone(),
            got,
            &w64,
            0.0,
        );
        o.pass = bits_equal;
        o
    };
    match state {
        StateType::F32 => {
            let rs = route(Mode::Record).spec().entry;
            let ps = route(Mode::Replay).spec().entry;
            outcomes.push(exact(&format!("{rs} states"), &got_rec, &want_rec));
            outcomes.push(exact(&format!("{rs} conv"), &got_rec_conv, &want_rec_conv));
            outcomes.push(exact(&format!("{rs} o"), &rec_o, &direct_o));
            outcomes.push(exact(&format!("{ps} state, n=0..T"), &rep_state, &want_rep));
            outcomes.push(exact(
                &format!("{ps} conv, n=0..T"),
                &rep_conv,
                &want_rep_conv,
            ));
        }
        StateType::F16 => {
            // The f16 direct path rounds after every token, record/replay keep f32 in
            // registers across columns: both are judged against the reference.
            let r = c.reference(t);
            let mut want_rec = Vec::new();
            let mut want_rep = Vec::new();
            for l in 0..lanes {
                for n in 1..=t {
                    want_rec.extend_from_slice(&r.states[(l * t + n - 1) * sl..][..sl]);
                }
                if l == 0 {
                    want_rep.extend(c.s0[..sl].iter().map(|&v| v as f64));
                } else {
                    want_rep.extend_from_slice(&r.states[(l * t + l - 1) * sl..][..sl]);
                }
            }
            outcomes.push(Outcome::compare(
                route(Mode::Record).spec().entry,
                shape.clone(),
                &got_rec,
                &want_rec,
                ALLOW_STATE_F16,
            ));
            outcomes.push(Outcome::compare(
                format!("{} o", route(Mode::Record).spec().entry),
                shape.clone(),
                &rec_o,
                &r.o,
                ALLOW_REC_F32,
            ));
            outcomes.push(Outcome::compare(
                route(Mode::Replay).spec().entry,
                shape.clone(),
                &rep_state,
                &want_rep,
                ALLOW_STATE_F16,
            ));
            outcomes.push(exact(
                &format!("{} conv, n=0..T", route(Mode::Replay).spec().entry),
                &rep_conv,
                &want_rep_conv,
            ));
        }
    }
    Ok(())
}

/// The allowance of the chunked prefill's f32 outputs on `route` (the looser of its two
/// chunk stages').
pub fn allow_chunk(route: &PrefillStages) -> f64 {
    let one = |m: ChunkMath| match m {
        ChunkMath::F32 | ChunkMath::Tf32x3 => ALLOW_CHUNK_F32,
        ChunkMath::Tf32 | ChunkMath::F16 => ALLOW_CHUNK_TF32,
    };
    one(route.wu_math).max(one(route.scan_math))
}

/// The chunked prefill (prologue, WY/UT chunks, output norm) against the recurrent
/// reference, every route of [`PrefillStages::ROUTES`] on the same inputs.
fn check_prefill(
    gpu: &Gpu,
    state: StateType,
    c: &Case,
    label: &str,
    outcomes: &mut Vec<Outcome>,
) -> Result<(), GpuError> {
    let r = c.reference_final();
    // (A route whose kernels do not run on this GPU or at these dims is not one the engine
    // takes there: the wgmma scan on other than sm_90, or at dk not a multiple of 8.)
    for route in PrefillStages::ROUTES
        .into_iter()
        .filter(|r| r.runs_on(gpu, &c.d))
    {
        check_prefill_route(gpu, state, c, &r, route, label, outcomes)?;
    }
    Ok(())
}

fn check_prefill_route(
    gpu: &Gpu,
    state: StateType,
    c: &Case,
    r: &RefOut,
    route: PrefillStages,
    label: &str,
    outcomes: &mut Vec<Outcome>,
) -> Result<(), GpuError> {
    let d = &c.d;
    let mut dc = DevCase::new(gpu, c, state)?;
    // NaN in every workspace element, so that a stage reading what no stage wrote fails.
    let mut ws = PrefillWorkspace::new(gpu, d, c.lanes, c.t, state, &[route])?;
    ws.poison(gpu)?;
    let rows = c.lanes * c.t * d.hv;
    let o = nan_buf(gpu, rows * d.dv)?;
    let y = nan_buf(gpu, rows * d.dv)?;
    let raw = dc.raw(gpu);
    launch_prefill_stages(gpu, &dc.w, &mut dc.st, raw, &mut ws, dptr(gpu, &o), route)?;
    launch_out_norm(
        gpu,
        DType::F32,
        dptr(gpu, &o),
        dptr(gpu, &dc.z),
        &dc.w,
        dptr(gpu, &y),
        rows,
        None,
    )?;
    gpu.synchronize()?;
    let allow = allow_chunk(&route);
    let name = format!("gdn prefill {} {}", route.math_name(), state.short());
    let shape = format!("{label} {} seqs={} T={}", d.describe(), c.lanes, c.t);
    let state_allow = match state {
        StateType::F32 => allow,
        StateType::F16 => allow.max(ALLOW_STATE_F16),
    };
    outcomes.push(Outcome::compare(
        format!("{name} o ({})", route.route_name()),
        shape.clone(),
        &gpu.download(&o)?,
        &r.o,
        allow,
    ));
    outcomes.push(Outcome::compare(
        format!("{name} y"),
        shape.clone(),
        &gpu.download(&y)?,
        &r.y,
        allow,
    ));
    outcomes.push(Outcome::compare(
        format!("{name} state"),
        shape.clone(),
        &dc.st.s.download(gpu)?,
        &r.final_state,
        state_allow,
    ));
    outcomes.push(Outcome::compare(
        format!("{name} conv state"),
        shape,
        &gpu.download(&dc.st.conv)?,
        &r.final_conv,
        0.0,
    ));
    Ok(())
}

/// The long case: one 4096-token sequence at the 27B shape, f32 state, every route (what
/// each route's error grows to over 64 chunks).
fn check_prefill_long(
    gpu: &Gpu,
    rng: &mut impl Rng,
    outcomes: &mut Vec<Outcome>,
) -> Result<(), GpuError> {
    let d = QWEN36_27B;
    let p = realistic_params(&d, rng);
    let c = Case::new(d, &p, 1, 4096, StateType::F32, rng);
    check_prefill(gpu, StateType::F32, &c, "27B long", outcomes)
}

/// The GPU drift run at `d`: `steps` decode steps of `width` tokens (one lane), f16
/// storage against f32, through the step route and the output norm.
pub fn gpu_drift(
    gpu: &Gpu,
    d: &GdnDims,
    steps: usize,
    width: usize,
    seed: u64,
) -> Result<DriftReport, GpuError> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let p = realistic_params(d, &mut rng);
    let pool = InputPool::new(d, 64, width, seed ^ 0x5eed);
    let (cd, vd, hv) = (d.conv_dim(), d.value_dim(), d.hv);
    let mixed = gpu.upload(&pool.mixed)?;
    let z = gpu.upload(&pool.z)?;
    let a = gpu.upload(&pool.a)?;
    let b = gpu.upload(&pool.b)?;
    let per_step = width * vd;
    let mut ys = Vec::new();
    for ty in StateType::ALL {
        let route = RecurrentRoute::choose(Mode::Step, ty, d).expect("a tile fits");
        let w = GdnWeights::upload(gpu, *d, &p)?;
        let mut st = GdnState::zeros(gpu, d, ty, 1)?;
        let o = nan_buf(gpu, per_step)?;
        let y = nan_buf(gpu, steps * per_step)?;
        for s in 0..steps {
            let k = pool.set_for(s) * width;
            let raw = RawInputs {
                mixed: dptr(gpu, &mixed) + (k * cd * 4) as u64,
                a: dptr(gpu, &a) + (k * hv * 4) as u64,
                b: dptr(gpu, &b) + (k * hv * 4) as u64,
                ..Default::default()
            };
            launch_recurrent(
                gpu,
                &route,
                &w,
                &mut st,
                raw,
                width,
                Some(dptr(gpu, &o)),
                None,
                None,
            )?;
            launch_out_norm(
                gpu,
                DType::F32,
                dptr(gpu, &o),
                dptr(gpu, &z) + (k * vd * 4) as u64,
                &w,
                dptr(gpu, &y) + (s * per_step * 4) as u64,
                width * hv,
                None,
            )?;
        }
        gpu.synchronize()?;
        ys.push(gpu.download(&y)?);
    }
    let errors: Vec<f64> = (0..steps)
        .map(|s| {
            let r = s * per_step..(s + 1) * per_step;
            super::drift::rel(&ys[1][r.clone()], &ys[0][r])
        })
        .collect();
    Ok(DriftReport::judge(width, &errors))
}

/// Only the chunked prefill, at every qualify shape (both storage types).
pub fn qualify_prefill(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    let mut outcomes = Vec::new();
    for (label, d) in shapes() {
        let p = realistic_params(&d, rng);
        for state in StateType::ALL {
            let (seqs, t) = match label {
                "27B" => (1, 200),
                "35B-A3B" => (2, 70),
                _ => (2, 130),
            };
            let c = Case::new(d, &p, seqs, t, state, rng);
            check_prefill(gpu, state, &c, label, &mut outcomes)?;
            if d.hv < 32 {
                for t in [1, 3, 64] {
                    let c = Case::new(d, &p, 1, t, state, rng);
                    check_prefill(gpu, state, &c, label, &mut outcomes)?;
                }
            }
        }
    }
    check_prefill_long(gpu, rng, &mut outcomes)?;
    Ok(outcomes)
}

/// Every GDN route at every qualify shape, record/replay exactness, and the GPU drift run.
pub fn qualify(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    qualify_routes(gpu, rng, true)
}

/// [`qualify`] without the prefill routes: the decode step (direct, batch update,
/// record/replay), the output norm and the drift run.
pub fn qualify_decode(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    qualify_routes(gpu, rng, false)
}

fn qualify_routes(gpu: &Gpu, rng: &mut impl Rng, prefill: bool) -> Result<Vec<Outcome>, GpuError> {
    let mut outcomes = Vec::new();
    for (label, d) in shapes() {
        let big = d.hv >= 32;
        let p = realistic_params(&d, rng);
        for state in StateType::ALL {
            for route in RecurrentRoute::all_for(Mode::Step, state, &d) {
                let c = Case::new(d, &p, 3, 1, state, rng);
                check_step(gpu, &route, &c, label, &mut outcomes)?;
                if !route.tile.serves(Mode::Step, 5) {
                    // The split step (one token a lane, no record/replay): also at the 8
                    // lanes it is chosen for, its inputs read in place from the stacked
                    // in-projection as the engine runs it.
                    let c = Case::new(d, &p, 8, 1, state, rng);
                    check_step_with(gpu, &route, &c, label, true, &mut outcomes)?;
                    continue;
                }
                let c = Case::new(d, &p, 2, 5, state, rng);
                check_step(gpu, &route, &c, label, &mut outcomes)?;
                let t = if big { 3 } else { 4 };
                let c = Case::new(d, &p, t + 1, t, state, rng);
                check_record_replay(gpu, route.tile, state, &c, label, &mut outcomes)?;
            }
            if prefill && d.dk <= CHUNK_DKMAX {
                let (seqs, t) = match label {
                    "27B" => (1, 200),
                    "35B-A3B" => (2, 70),
                    _ => (2, 130),
                };
                let c = Case::new(d, &p, seqs, t, state, rng);
                check_prefill(gpu, state, &c, label, &mut outcomes)?;
                if !big {
                    for t in [1, 3, 64] {
                        let c = Case::new(d, &p, 1, t, state, rng);
                        check_prefill(gpu, state, &c, label, &mut outcomes)?;
                    }
                }
            }
        }
    }
    if prefill {
        check_prefill_long(gpu, rng, &mut outcomes)?;
    }
    let seed: u64 = rng.random();
    for width in [1, 4] {
        let r = gpu_drift(gpu, &QWEN36_27B, 4096, width, seed)?;
        outcomes.push(Outcome {
            route: format!(
                "gdn drift f16 vs f32 storage, width {width} (worst rel; growth {:.2}x)",
                r.last_quarter_mean / r.first_quarter_mean.max(1e-30)
            ),
            shape: format!("27B {} {} steps", QWEN36_27B.describe(), r.steps),
            rel_l2: r.worst,
            allowance: super::drift::DRIFT_LIMIT,
            pass: r.pass,
        });
    }
    Ok(outcomes)
}
