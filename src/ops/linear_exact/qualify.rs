//! Qualification of the exact linear routes against the f64 oracle (`ninfer qualify`).

use super::*;
use rand::Rng;
use rand_distr::StandardNormal;

use super::super::weight::random_weight;
use crate::gpu::dptr;
use crate::qualify::{Outcome, ALLOW_BF16, ALLOW_F32};

/// Shapes `(T, N, K)` of the generic kernel: the tiny fixtures' odd widths (48, 144),
/// SmolLM2's and a 27B one, with T past one tile so the host tiling is covered.
const QUALIFY_SHAPES: [(usize, usize, usize); 6] = [
    (1, 64, 48),
    (3, 144, 64),
    (8, 1536, 576),
    (13, 576, 1536),
    (1, 5120, 17408),
    (5, 384, 144),
];

/// One qualification case: `(T, N, K)` and the launch overrides.
pub(in crate::ops) type Case = (usize, usize, usize, Override);

/// The f64 activations the prologue makes of `x` (`[t, K]`, or `[t, 2K]` for SwiGLU) with
/// the norm weight `nw` and `eps` (the gated norm's gate: `z`, rows `z_ld` apart).
fn prologue_reference(
    kind: PrologueKind,
    x: &[f32],
    nw: &[f32],
    eps: f32,
    (z, z_ld): (&[f32], usize),
    (t, k): (usize, usize),
) -> Vec<f64> {
    let mut out = Vec::with_capacity(t * k);
    for ti in 0..t {
        match kind {
            PrologueKind::None => out.extend(x[ti * k..(ti + 1) * k].iter().map(|&v| v as f64)),
            PrologueKind::RmsNorm(conv) => {
                let row = &x[ti * k..(ti + 1) * k];
                let ms = row.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>() / k as f64;
                let inv = 1.0 / (ms + eps as f64).sqrt();
                out.extend(
                    row.iter()
                        .zip(nw)
                        .map(|(&v, &g)| v as f64 * inv * conv.factor(g as f64)),
                );
            }
            PrologueKind::Swiglu => {
                let row = &x[ti * 2 * k..(ti + 1) * 2 * k];
                out.extend((0..k).map(|i| {
                    let (g, u) = (row[i] as f64, row[k + i] as f64);
                    g / (1.0 + (-g).exp()) * u
                }));
            }
            PrologueKind::GatedNorm => {
                let row = &x[ti * k..(ti + 1) * k];
                let zr = &z[ti * z_ld..ti * z_ld + k];
                for (xg, zg) in row
                    .chunks(GATED_NORM_GROUP)
                    .zip(zr.chunks(GATED_NORM_GROUP))
                {
                    let ms = xg.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>()
                        / GATED_NORM_GROUP as f64;
                    let inv = 1.0 / (ms + eps as f64).sqrt();
                    out.extend(xg.iter().zip(zg).zip(nw).map(|((&v, &g), &w)| {
                        let g = g as f64;
                        v as f64 * inv * w as f64 * (g / (1.0 + (-g).exp()))
                    }));
                }
            }
        }
    }
    out
}

/// Runs `route` on `(t, n, k)` with fresh random inputs (a random norm weight for RMSNorm,
/// a `[t, 2K]` gate_up for SwiGLU) and a poisoned output, and compares with the f64 oracle
/// (prologue, then the product): every row when N is small, else the first, the last and
/// 254 random ones (and then any unwritten output anywhere fails the check).
fn check(
    gpu: &Gpu,
    route: &ExactRoute,
    w: &DeviceWeight,
    payload: &[u8],
    t: usize,
    over: Override,
    rng: &mut impl Rng,
) -> Result<Outcome, GpuError> {
    let (n, k) = (w.layout.n, w.layout.k);
    let draw = |rng: &mut dyn rand::RngCore, len: usize| -> Vec<f32> {
        (0..len).map(|_| rng.sample(StandardNormal)).collect()
    };
    let kx = if route.prologue == PrologueKind::Swiglu {
        2 * k
    } else {
        k
    };
    let x = draw(rng, t * kx);
    let r = draw(rng, t * n);
    // Norm weights about their convention's identity (1 plain, 0 zero-centred).
    let nw: Vec<f32> = match route.prologue {
        PrologueKind::RmsNorm(conv) => {
            let centre = if conv == NormWeight::Plain { 1.0 } else { 0.0 };
            draw(rng, k).iter().map(|v| centre + 0.25 * v).collect()
        }
        PrologueKind::GatedNorm => draw(rng, GATED_NORM_GROUP)
            .iter()
            .map(|v| 1.0 + 0.25 * v)
            .collect(),
        _ => vec![0.0],
    };
    // The gated norm's gate, in rows wider than K (read in place from a stacked
    // projection, as the engine does).
    let z_ld = k + 64;
    let z = match route.prologue {
        PrologueKind::GatedNorm => draw(rng, t * z_ld),
        _ => vec![0.0],
    };
    let eps = 1e-6f32;
    let dx = gpu.upload(&x)?;
    let dr = gpu.upload(&r)?;
    let dnw = gpu.upload(&nw)?;
    let dz = gpu.upload(&z)?;
    // Outputs a column: N, or I = N / 2 (gate rows, then up rows) with the SwiGLU epilogue.
    let swiglu = route.epilogue == Epilogue::Swiglu;
    let n_out = if swiglu { n / 2 } else { n };
    let dy = gpu.upload(&vec![f32::NAN; t * n_out])?;
    let res = (route.epilogue == Epilogue::Residual).then(|| dptr(gpu, &dr));
    let prologue = Prologue::of_kind(route.prologue, dptr(gpu, &dnw), eps, (dptr(gpu, &dz), z_ld));
    // The conv epilogue: the first 5/8 of the rows (a multiple of 4) through the conv, with
    // random weights and windows, one window a column (lane).
    let kc = super::super::linear_mma_exact::CONV_KC;
    let conv_ch = if route.epilogue == Epilogue::Conv {
        n * 5 / 8 / 4 * 4
    } else {
        0
    };
    let conv_w: Vec<f32> = draw(rng, conv_ch * kc).iter().map(|v| 0.5 * v).collect();
    let win0 = draw(rng, t * conv_ch * (kc - 1));
    let (dcw, dwin) = (gpu.upload(&conv_w)?, gpu.upload(&win0)?);
    let over = Override {
        conv: (conv_ch > 0).then(|| super::ConvWindow {
            weights: dptr(gpu, &dcw),
            state: dptr(gpu, &dwin),
            channels: conv_ch,
        }),
        ..over
    };
    assert!(
        !(over.twice && conv_ch > 0),
        "a conv launch moves the windows: once"
    );
    // Each route's own kernel (no small-K substitute): every split is qualified by name.
    let over = Override {
        exact_tile: true,
        ..over
    };
    // Twice: a first launch into its own poisoned buffer, then the checked one straight
    // after (a split-K counter left non-zero would leave the second's outputs unwritten);
    // and, where the second launch can add the K-ranges (not the SwiGLU epilogue), one more
    // with it (splitk_sum.cu), so that all three must have the same bits.
    let others = if over.twice {
        let mut v = vec![(gpu.upload(&vec![f32::NAN; t * n_out])?, over)];
        if !swiglu {
            let second = Override {
                split_sum: Some(true),
                ..over
            };
            v.push((gpu.upload(&vec![f32::NAN; t * n_out])?, second));
        }
        v
    } else {
        Vec::new()
    };
    for (out, o) in others.iter().map(|(b, o)| (b, *o)).chain([(&dy, over)]) {
        launch_inner(
            gpu,
            route,
            w,
            dptr(gpu, &dx),
            &prologue,
            res,
            dptr(gpu, out),
            t,
            o,
        )?;
    }
    gpu.synchronize()?;
    let all = gpu.download(&dy)?;
    // The launches' bits alike: the K-ranges' sums are added in a fixed order.
    let mut same = true;
    for (out, _) in &others {
        same &= gpu
            .download(out)?
            .iter()
            .zip(&all)
            .all(|(a, b)| a.to_bits() == b.to_bits());
    }
    let (mut got, want) = if route.prologue == PrologueKind::None && !swiglu {
        super::super::linear::sampled_check_f32(
            rng,
            route.format,
            &w.layout,
            payload,
            &x,
            &r,
            &all,
            (t, n, k),
            route.epilogue,
            (4096, 254),
        )
    } else {
        // The same rows as sampled_check_f32 picks, against the prologue's activations
        // (SwiGLU: output rows, each from gate row i and up row I + i).
        let rows: Vec<usize> = if n_out <= 4096 {
            (0..n_out).collect()
        } else {
            let mut v: Vec<usize> = (0..254).map(|_| rng.random_range(0..n_out)).collect();
            v.extend([0, n_out - 1]);
            v
        };
        let decode = |i: usize| {
            let mut row = vec![0f32; k];
            crate::formats::decode_row(route.format, &w.layout, payload, i, &mut row);
            row
        };
        let w_rows: Vec<Vec<f32>> = rows.iter().map(|&i| decode(i)).collect();
        let up_rows: Option<Vec<Vec<f32>>> =
            swiglu.then(|| rows.iter().map(|&i| decode(n_out + i)).collect());
        let xe = prologue_reference(route.prologue, &x, &nw, eps, (&z, z_ld), (t, k));
        let product = match route.epilogue {
            Epilogue::Conv => Epilogue::None,
            e => e,
        };
        let mut want = super::super::linear::reference_rows(
            &xe,
            (t, k),
            &w_rows,
            up_rows.as_deref(),
            product,
            |ti, row| r[ti * n + row] as f64,
            &rows,
        );
        let mut got: Vec<f32> = Vec::with_capacity(want.len());
        for ti in 0..t {
            for &row in &rows {
                got.push(all[ti * n_out + row]);
            }
        }
        if conv_ch > 0 {
            // The conv rows: silu(w . window + w_last y) of the product y; and each window
            // after, (window[1..], y), against the GPU's.
            let win = gpu.download(&dwin)?;
            let h = kc - 1;
            for ti in 0..t {
                for (i, &row) in rows.iter().enumerate() {
                    if row >= conv_ch {
                        continue;
                    }
                    let at = ti * rows.len() + i;
                    let y = want[at];
                    let w0 = &conv_w[row * kc..][..kc];
                    let old = &win0[(ti * conv_ch + row) * h..][..h];
                    let acc = (0..h).map(|j| w0[j] as f64 * old[j] as f64).sum::<f64>()
                        + w0[h] as f64 * y;
                    want[at] = acc / (1.0 + (-acc).exp());
                    let new = &win[(ti * conv_ch + row) * h..][..h];
                    got.extend_from_slice(new);
                    want.extend(old[1..].iter().map(|&v| v as f64));
                    want.push(y);
                }
            }
        }
        if all.iter().any(|v| !v.is_finite()) {
            got[0] = f32::NAN; // an unwritten (poisoned) output anywhere fails the check
        }
        (got, want)
    };
    if !same {
        got[0] = f32::NAN; // two launches of the same inputs differ: fails the check
    }
    let mut shape = format!("T={t} N={n} K={k}");
    if let Some(kr) = over.k_ranges {
        shape += &format!(" kr={kr}");
    }
    match over.split_sum {
        Some(true) => shape += " splitk_sum",
        Some(false) => shape += " fused",
        None => {}
    }
    if over.twice {
        shape += " x2";
    }
    if conv_ch > 0 {
        shape += &format!(" conv={conv_ch}");
    }
    if let Some(b) = over.smem_budget {
        shape += &format!(" smem<={b}");
    }
    if let Some(g) = over.max_grid {
        shape += &format!(" grid<={g}");
    }
    if let Some(ks) = over.ks {
        shape += &format!(" ks={ks}");
    }
    // Activations rounded to bf16 are held to the bf16 allowance, every other route to f32's.
    let allow = if route.rounds_activations() {
        ALLOW_BF16
    } else {
        ALLOW_F32
    };
    Ok(Outcome::compare(
        route.spec().entry,
        shape,
        &got,
        &want,
        allow,
    ))
}

/// The stream routes' cases. Without a prologue: an odd small shape (N not a multiple of a
/// block's rows, two chunks per row), SmolLM2's K = 576 with T past two tiles (host tiling,
/// a partial last tile), each T of the bucket on a real shape (K = 17408 takes several
/// slabs at every tile but the persistent ones at one column), the default q4_g64 routes
/// also at the 27B head. Persistent splits also loop: a grid of 7 blocks at K = 576, and of
/// 5 with K = 17408 in 48 KB slabs. RMSNorm: SmolLM2's 576 -> 1536, the 27B's 5120 ->
/// 17408, and the latter in 16 KB slabs (two or more). SwiGLU (with the residual): SmolLM2's
/// 1536 -> 576, the 27B's 17408 -> 5120, and the latter in 48 KB slabs. At one column also
/// SmolLM2's decode shapes ([`smollm2_cases`]); the direct splits: [`direct_cases`].
fn stream_cases(route: &ExactRoute, tile: StreamTile) -> Vec<Case> {
    if tile.direct {
        return direct_cases(route);
    }
    let mut cases = block_cases(route, tile);
    if route.tt == 1 {
        cases.extend(smollm2_cases(route));
    }
    cases
}

/// SmolLM2's one-column shapes with their prologue and epilogue as a decode step runs
/// them: qkv (960 x 576) and gate_up (3072 x 576) after RMSNorm, o (576 x 576, with the
/// residual when the route has it), down (576 x 1536 after SwiGLU, with the residual); the
/// head (49152 x 576 after RMSNorm) for q4_g64.
fn smollm2_cases(route: &ExactRoute) -> Vec<Case> {
    let plain = Override::default();
    match route.prologue {
        PrologueKind::None => vec![(1, 576, 576, plain)],
        PrologueKind::RmsNorm(_) => {
            let mut v = vec![(1, 960, 576, plain), (1, 3072, 576, plain)];
            if route.format.name == "q4_g64" {
                v.push((1, 49152, 576, plain));
            }
            v
        }
        PrologueKind::Swiglu => vec![(1, 576, 1536, plain)],
        // A ring route's only prologue: no stream route has it.
        PrologueKind::GatedNorm => Vec::new(),
    }
}

/// The direct splits' cases: the odd small shape (two chunks, N not a multiple of a
/// block's rows), K = 576 with T = 3 (three one-column launches), SmolLM2's shapes
/// ([`smollm2_cases`]; down's K = 1536 runs the default split), K = 1024 (32 chunks: every
/// lane), a grid of 7 blocks (warps walking many groups, the next group's weights in
/// flight), and K = 5120, past the direct split (the default split runs).
fn direct_cases(route: &ExactRoute) -> Vec<Case> {
    let plain = Override::default();
    let looped = Override {
        max_grid: Some(7),
        ..plain
    };
    let mut cases: Vec<Case> = vec![(1, 144, 64, plain), (3, 1536, 576, plain)];
    cases.extend(smollm2_cases(route));
    cases.push((1, 1000, 1024, plain));
    cases.push((1, 1000, 1024, looped));
    cases.push((1, 3072, 576, looped));
    cases.push((1, 5120, 5120, plain));
    cases
}

/// The block-staged splits' cases (see [`stream_cases`]).
fn block_cases(route: &ExactRoute, tile: StreamTile) -> Vec<Case> {
    let tt = route.tt as usize;
    let (lo, hi) = match tt {
        1 => (1, 1),
        2 => (2, 2),
        4 => (3, 4),
        _ => (5, 8),
    };
    let plain = Override::default();
    let slabs = |b: usize| Override {
        smem_budget: Some(b),
        max_grid: tile.persistent.then_some(5),
        ..Override::default()
    };
    let mut cases: Vec<Case> = vec![(tt, 144, 64, plain)];
    match route.prologue {
        PrologueKind::None => {
            cases.push((2 * tt + 1, 1536, 576, plain));
            cases.push((hi, 5120, 17408, plain));
            let seed = route.format.name.len() + tt + route.epilogue as usize;
            let (n, k) = STREAM_SHAPES[seed % (STREAM_SHAPES.len() - 1)];
            cases.push((lo, n, k, plain));
            let is_default = route.kernel == ExactKernel::Stream(stream_tile(route.tt));
            if route.format.name == "q4_g64"
                && is_default
                && route.epilogue == Epilogue::None
                && (tt == 1 || tt == 8)
            {
                let (n, k) = STREAM_SHAPES[6];
                cases.push((tt, n, k, plain));
            }
            if tile.persistent {
                cases.push((lo, 5120, 17408, slabs(STREAM_SMEM)));
            }
        }
        PrologueKind::RmsNorm(_) => {
            cases.push((2 * tt + 1, 1536, 576, plain));
            cases.push((hi, 17408, 5120, plain));
            cases.push((lo, 17408, 5120, slabs(16 * 1024)));
        }
        PrologueKind::Swiglu => {
            cases.push((2 * tt + 1, 576, 1536, plain));
            cases.push((hi, 5120, 17408, plain));
            cases.push((lo, 5120, 17408, slabs(STREAM_SMEM)));
        }
        // A ring route's only prologue: no stream route has it.
        PrologueKind::GatedNorm => {}
    }
    if tile.persistent {
        let (n, k) = match route.prologue {
            PrologueKind::Swiglu => (576, 1536),
            _ => (1536, 576),
        };
        let looped = Override {
            max_grid: Some(7),
            ..Override::default()
        };
        cases.push((hi, n, k, looped));
    }
    cases
}

/// The ring routes' cases (K a multiple of 1024 unless named): the 27B's 17408x5120 (five
/// slices of one round) and 5120x17408 (few slices of many rounds) and 14336->4096 at T
/// = the tile; an odd N = 1000 with K = 2048 at the smallest T of the tile, forced to one
/// slice on a 7-block grid (many passes per warp, a partial last pass) and to two slices
/// on 5 blocks (the slices' sums in shared memory); K = 576, which the ring kernel does not
/// take (the launch falls back to the stream kernel); the default q4_g64 T = 1 route also
/// at the 248320x5120 head. Prologues: RMSNorm at 17408x5120, SwiGLU + residual at
/// 5120x17408, both also at N = 1000, K = 2048 with two slices.
fn ring_cases(route: &ExactRoute) -> Vec<Case> {
    let tt = route.tt as usize;
    let lo = if tt == 1 { 1 } else { tt / 2 + 1 };
    let plain = Override::default();
    let forced = |ks: u32, grid: u32| Override {
        max_grid: Some(grid),
        ks: Some(ks),
        ..Override::default()
    };
    let mut cases: Vec<Case> = Vec::new();
    if route.epilogue == Epilogue::Swiglu {
        // Stacked gate_up shapes: the 27B's 2 x 17408 x 5120; I = 1000 in slices (ks = 2,
        // the slice sums of pairs); I = 1001 on 7 blocks (a stream's last pass partial).
        cases.push((tt, 34816, 5120, plain));
        cases.push((lo, 2000, 2048, forced(2, 5)));
        cases.push((tt, 2002, 1024, forced(1, 7)));
        return cases;
    }
    match route.prologue {
        PrologueKind::None => {
            cases.push((tt, 17408, 5120, plain));
            cases.push((lo, 5120, 17408, plain));
            cases.push((tt, 4096, 14336, plain));
            cases.push((lo, 1000, 2048, forced(1, 7)));
            cases.push((tt, 1000, 2048, forced(2, 5)));
            cases.push((2 * tt + 1, 1536, 576, plain));
            cases.push((2 * tt + 1, 1024, 1024, plain));
            let is_default =
                route.kernel == ExactKernel::Ring(ring_tile(route.format.bits, route.tt));
            if route.format.name == "q4_g64"
                && is_default
                && route.epilogue == Epilogue::None
                && tt == 1
            {
                cases.push((1, 248320, 5120, plain));
            }
        }
        PrologueKind::RmsNorm(_) => {
            cases.push((tt, 17408, 5120, plain));
            cases.push((lo, 1000, 2048, forced(2, 5)));
        }
        PrologueKind::Swiglu => {
            cases.push((tt, 5120, 17408, plain));
            cases.push((lo, 1000, 2048, forced(2, 5)));
        }
        PrologueKind::GatedNorm => {
            // The 27B's GDN out projection (48 heads), slices of pairs on 5 blocks, and
            // more columns than the tile (several launches, z advancing with them).
            cases.push((tt, 5120, 6144, plain));
            cases.push((lo, 1000, 2048, forced(2, 5)));
            cases.push((2 * tt + 1, 1024, 1024, plain));
        }
    }
    cases
}

/// Every route at every shape its format can take, outputs poisoned, against the oracle
/// (the stream routes' cases: `stream_cases`). Random weights are shared by the routes of
/// one format (each check draws fresh activations).
pub fn qualify(
    gpu: &Gpu,
    rng: &mut impl Rng,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<Outcome>, GpuError> {
    let mut out = Vec::new();
    let mut weights: HashMap<(usize, usize), (DeviceWeight, Vec<u8>)> = HashMap::new();
    let mut weights_of = "";
    for route in all_routes() {
        if !wanted(&route.spec().entry) {
            continue;
        }
        let cases: Vec<Case> = match route.kernel {
            ExactKernel::Gemv => QUALIFY_SHAPES
                .iter()
                .filter(|&&(t, _, k)| supports(route.format, k) && !(route.tt == 1 && t > 3))
                .map(|&(t, n, k)| (t, n, k, Override::default()))
                .collect(),
            ExactKernel::Stream(tile) => stream_cases(&route, tile),
            ExactKernel::Ring(_) => ring_cases(&route),
            ExactKernel::Mma(_) => super::super::linear_mma_exact::cases(&route),
        };
        if weights_of != route.format.name.as_str() {
            weights.clear();
            weights_of = route.format.name.as_str();
        }
        for (t, n, k, over) in cases {
            if !supports(route.format, k) {
                continue;
            }
            // The head is used once per format: not kept.
            if n * k > 1 << 28 {
                let (w, payload) = random_weight(gpu, route.format, n, k, rng)?;
                out.push(check(gpu, &route, &w, &payload, t, over, rng)?);
                continue;
            }
            let (w, payload) = match weights.entry((n, k)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(random_weight(gpu, route.format, n, k, rng)?)
                }
            };
            out.push(check(gpu, &route, w, payload, t, over, rng)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prologue_reference_normalises_and_gates() {
        let x = [3.0f32, 4.0, -1.0, 2.0];
        let nw = [1.0f32, 0.5];
        let p = PrologueKind::RmsNorm(NormWeight::Plain);
        let v = prologue_reference(p, &x, &nw, 0.0, (&[], 0), (2, 2));
        let inv = 1.0 / (12.5f64).sqrt();
        assert!((v[0] - 3.0 * inv).abs() < 1e-12 && (v[1] - 2.0 * inv).abs() < 1e-12);
        let zc = prologue_reference(
            PrologueKind::RmsNorm(NormWeight::ZeroCentred),
            &x,
            &nw,
            0.0,
            (&[], 0),
            (2, 2),
        );
        assert!((zc[1] - 4.0 * inv * 1.5).abs() < 1e-12);
        let s = prologue_reference(PrologueKind::Swiglu, &x, &[], 0.0, (&[], 0), (1, 2));
        let silu = |g: f64| g / (1.0 + (-g).exp());
        assert!((s[0] - -silu(3.0)).abs() < 1e-12 && (s[1] - silu(4.0) * 2.0).abs() < 1e-12);
        // The gated norm: per group of 128, the gate's rows z_ld apart (here two rows of 256:
        // two groups each, the second row's gate after a gap).
        let g = GATED_NORM_GROUP;
        let x: Vec<f32> = (0..4 * g).map(|i| ((i % 7) as f32 - 3.0) * 0.5).collect();
        let z_ld = 2 * g + 8;
        let z: Vec<f32> = (0..2 * z_ld)
            .map(|i| ((i % 5) as f32 - 2.0) * 0.7)
            .collect();
        let w: Vec<f32> = (0..g).map(|i| 1.0 + (i % 3) as f32 * 0.1).collect();
        let eps = 1e-6f32;
        let gn = prologue_reference(PrologueKind::GatedNorm, &x, &w, eps, (&z, z_ld), (2, 2 * g));
        for (i, &got) in gn.iter().enumerate() {
            let (row, col) = (i / (2 * g), i % (2 * g));
            let group = &x[row * 2 * g + col / g * g..][..g];
            let ms = group.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / g as f64;
            let want = x[i] as f64 / (ms + eps as f64).sqrt()
                * w[col % g] as f64
                * silu(z[row * z_ld + col] as f64);
            assert!((got - want).abs() < 1e-12, "{i}: {got} vs {want}");
        }
    }
}
