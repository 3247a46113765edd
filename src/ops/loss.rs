//! Losses over logits on the GPU: the per-row negative log-likelihood that perplexity
//! scores (`Backend::nll_rows`), so that a window's logits never leave the device.
//! Template: `templates/loss/nll.cu`.
//!
//! The host reference is [`crate::perplexity::nll_of`] (f64 throughout, max subtracted);
//! the kernel takes the max in f32 (exact), each `exp` in f32 and the sum in f64, and
//! writes f64, so it is qualified against that reference with an allowance far below f32's.

use rand::Rng;
use rand_distr::StandardNormal;

use crate::gpu::dptr;
use crate::gpu::{Gpu, GpuError, LaunchConfig};
use crate::jit::KernelSpec;
use crate::qualify::Outcome;

const FAMILY: &str = "loss";
/// Block sizes of the one-block-per-row kernel: wide rows (a vocabulary) get 1024 threads.
pub const BLOCKS: [u32; 2] = [128, 1024];

/// The relative L2 error (over a case's rows) the NLLs may have against the f64 reference.
/// The kernel's error is that of its f32 `exp` terms, ~1e-7 nats at worst and far less in
/// practice (the terms' roundings are independent), against NLLs of order 1-10; one term
/// missing from a flat row of 248320 (the `flat` case) is off by 4e-6 nats of 12.4, 3e-7.
pub const ALLOW_NLL: f64 = 1e-7;

pub fn nll_spec(block: u32) -> KernelSpec {
    KernelSpec::new(FAMILY, "loss/nll.cu", format!("loss_nll_b{block}"))
        .param("block", block)
        .programmatic()
}

/// The block for rows of `cols` logits.
fn block_for(cols: usize) -> u32 {
    if cols >= 8192 {
        BLOCKS[1]
    } else {
        BLOCKS[0]
    }
}

/// Every registered instantiation of the family.
pub fn instantiations() -> Vec<KernelSpec> {
    BLOCKS.iter().map(|&b| nll_spec(b)).collect()
}

/// Per row `r` of `x [rows, cols]` (f32 logits): `out[r] = logsumexp(x[r]) - x[r][targets[r]]`
/// as f64 (`targets`: device u32 `[rows]`, `out`: device f64 `[rows]`). A NaN or infinite
/// logit in a row, or a target outside it, gives a non-finite value, as the host reference
/// does. Queued on `gpu.stream()`; allocates nothing.
pub fn nll_rows(
    gpu: &Gpu,
    x: u64,
    targets: u64,
    out: u64,
    rows: usize,
    cols: usize,
) -> Result<(), GpuError> {
    if rows == 0 {
        return Ok(());
    }
    assert!(cols > 0, "nll_rows: empty rows");
    let block = block_for(cols);
    let spec = nll_spec(block);
    let f = gpu.kernel(&spec)?;
    let cfg = LaunchConfig {
        grid_dim: (u32::try_from(rows).expect("rows fit a grid"), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    };
    let cols = i32::try_from(cols).expect("a row fits in i32");
    let mut lb = gpu.launch(&f);
    lb.arg(&x).arg(&targets).arg(&out).arg(&cols);
    // SAFETY: matches loss/nll.cu (x, targets, out, cols); the caller sizes x to
    // rows * cols f32, targets to rows u32 and out to rows f64.
    unsafe { lb.launch(cfg) }
        .map_err(|e| GpuError::driver(format!("launching {}", spec.entry), e))?;
    Ok(())
}

/// The f64 reference: [`crate::perplexity::nll_of`] of each row; NaN for a target outside
/// its row (what the kernel writes there).
pub fn reference(x: &[f32], cols: usize, targets: &[u32]) -> Vec<f64> {
    x.chunks(cols)
        .zip(targets)
        .map(|(row, &t)| match (t as usize) < cols {
            true => crate::perplexity::nll_of(row, t as usize),
            false => f64::NAN,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Qualification.

/// `||got - want|| / ||want||` in f64; a non-finite value in `got` or a length mismatch
/// gives infinity (poisoned outputs never pass).
fn rel_l2_f64(got: &[f64], want: &[f64]) -> f64 {
    if got.len() != want.len() || got.iter().any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (g, w) in got.iter().zip(want) {
        num += (g - w).powi(2);
        den += w * w;
    }
    if den == 0.0 {
        return if num == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (num / den).sqrt()
}

/// How a case's rows are made.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rows {
    /// N(0, 9) logits, one row in three shifted by +120 (the max subtraction must carry
    /// it); targets random, the first row's at 0, the last's at the end.
    Normal,
    /// Constant rows (NLL = ln cols): a term skipped or counted twice shows.
    Flat,
    /// One logit 40 above N(0, 1) others, the target on it (NLL near 0) or off it (near 40).
    Peaked,
    /// Non-finite rows: a NaN, a +inf, all -inf, a -inf target, a target outside the row.
    NonFinite,
}

/// Cases `(rows, cols, offset in elements, kind)`: tiny and odd widths, the vocabularies
/// of SmolLM2 (49152) and Qwen3.5/3.6 (248320), an odd one (248321), rows off 16-byte
/// alignment.
const CASES: [(usize, usize, usize, Rows); 12] = [
    (1, 1, 0, Rows::Normal),
    (3, 7, 1, Rows::Normal),
    (5, 1000, 2, Rows::Normal),
    (6, 8191, 3, Rows::Normal),
    (64, 49152, 0, Rows::Normal),
    (7, 49152, 3, Rows::Normal),
    (9, 248320, 1, Rows::Normal),
    (5, 248321, 2, Rows::Normal),
    (4, 248320, 0, Rows::Flat),
    (3, 49152, 1, Rows::Flat),
    (6, 248321, 3, Rows::Peaked),
    (5, 49152, 2, Rows::NonFinite),
];

/// The logits and targets of a case.
fn case_rows(rng: &mut impl Rng, rows: usize, cols: usize, kind: Rows) -> (Vec<f32>, Vec<u32>) {
    let mut x = Vec::with_capacity(rows * cols);
    let mut t = Vec::with_capacity(rows);
    for r in 0..rows {
        let target = match r {
            0 => 0,
            _ if r == rows - 1 => cols - 1,
            _ => rng.random_range(0..cols),
        };
        let mut row: Vec<f32> = match kind {
            Rows::Flat => vec![0.75; cols],
            _ => (0..cols)
                .map(|_| {
                    rng.sample::<f32, _>(StandardNormal)
                        * if kind == Rows::Peaked { 1.0 } else { 3.0 }
                })
                .collect(),
        };
        let mut target = target as u32;
        match kind {
            Rows::Normal if r % 3 == 1 => row.iter_mut().for_each(|v| *v += 120.0),
            Rows::Peaked => {
                let p = rng.random_range(0..cols);
                row[p] += 40.0;
                if r % 2 == 0 {
                    target = p as u32;
                }
            }
            Rows::NonFinite => match r % 5 {
                0 => row[cols / 2] = f32::NAN,
                1 => row[cols - 1] = f32::INFINITY,
                2 => row.iter_mut().for_each(|v| *v = f32::NEG_INFINITY),
                3 => row[target as usize] = f32::NEG_INFINITY,
                _ => target = cols as u32 + 5,
            },
            _ => {}
        }
        x.extend(row);
        t.push(target);
    }
    (x, t)
}

/// Device copies of `data` after `pad` leading elements: the address of the first.
fn placed<T: cudarc::driver::DeviceRepr + Default + Clone>(
    gpu: &Gpu,
    data: &[T],
    pad: usize,
) -> Result<(crate::gpu::CudaSlice<T>, u64), GpuError> {
    let mut host = vec![T::default(); pad];
    host.extend_from_slice(data);
    let buf = gpu.upload(&host)?;
    let addr = dptr(gpu, &buf) + (pad * std::mem::size_of::<T>()) as u64;
    Ok((buf, addr))
}

/// Every case, outputs poisoned first (NaN for the finite cases; a finite sentinel for the
/// non-finite ones, which must come back non-finite wherever the reference is), against
/// the f64 reference.
pub fn qualify(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    let mut out = Vec::new();
    for &(rows, cols, pad, kind) in &CASES {
        let (x, targets) = case_rows(rng, rows, cols, kind);
        let want = reference(&x, cols, &targets);
        let (_dx, px) = placed(gpu, &x, pad)?;
        let (_dt, pt) = placed(gpu, &targets, pad % 2)?;
        let poison = if kind == Rows::NonFinite {
            12345.0
        } else {
            f64::NAN
        };
        let (dy, py) = placed(gpu, &vec![poison; rows], (pad + 1) % 2)?;
        nll_rows(gpu, px, pt, py, rows, cols)?;
        let got = gpu.download(&dy)?[(pad + 1) % 2..].to_vec();
        let entry = nll_spec(block_for(cols)).entry;
        let shape = format!("rows={rows} cols={cols} offset={pad} {kind:?}").to_lowercase();
        out.push(if kind == Rows::NonFinite {
            // Every reference row is non-finite: each output must be the same infinity,
            // or NaN where the reference is NaN (the finite poison never passes).
            let same = |g: &f64, w: &f64| (g.is_nan() && w.is_nan()) || (w.is_infinite() && g == w);
            let bad = got.iter().zip(&want).filter(|(g, w)| !same(g, w)).count();
            let pass = bad == 0 && got.len() == rows;
            Outcome {
                route: entry,
                shape: format!("{shape} ({bad} of {rows} rows differ)"),
                rel_l2: if pass { 0.0 } else { f64::INFINITY },
                allowance: 0.0,
                pass,
            }
        } else {
            let rel = rel_l2_f64(&got, &want);
            Outcome {
                route: entry,
                shape,
                rel_l2: rel,
                allowance: ALLOW_NLL,
                pass: rel <= ALLOW_NLL,
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_cases_mean_what_they_say() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        // Flat rows: ln(cols) exactly, whatever the target.
        let (x, t) = case_rows(&mut rng, 3, 1000, Rows::Flat);
        for v in reference(&x, 1000, &t) {
            assert!((v - 1000f64.ln()).abs() < 1e-12, "{v}");
        }
        // Every non-finite row has a non-finite reference (the kernel's contract).
        let (x, t) = case_rows(&mut rng, 5, 64, Rows::NonFinite);
        let r = reference(&x, 64, &t);
        assert!(r.iter().all(|v| !v.is_finite()), "{r:?}");
        // Peaked rows: near 0 on the peak, near 40 off it.
        let (x, t) = case_rows(&mut rng, 4, 500, Rows::Peaked);
        let r = reference(&x, 500, &t);
        assert!(r[0] < 1e-6 && r[2] < 1e-6, "{r:?}");
        assert!(r[1] > 30.0, "{r:?}");
        // Normal rows: the first target is 0 and the last the end of its row.
        let (_, t) = case_rows(&mut rng, 4, 77, Rows::Normal);
        assert_eq!((t[0], t[3]), (0, 76));
    }

    #[test]
    fn poisoned_or_short_outputs_never_pass() {
        assert_eq!(rel_l2_f64(&[1.0, f64::NAN], &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(rel_l2_f64(&[1.0], &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(rel_l2_f64(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    }

    #[test]
    fn entry_names_are_unique() {
        let names: Vec<String> = instantiations().into_iter().map(|s| s.entry).collect();
        assert_eq!(names, ["loss_nll_b128", "loss_nll_b1024"]);
    }
}
