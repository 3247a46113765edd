//! Qualification: every registered GPU route run on fresh random inputs, outputs poisoned
//! first, against the op's f64 CPU reference; the relative L2 error is judged against the
//! route's allowance.

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

use crate::gpu::{Gpu, GpuError};
use crate::ops::DType;

/// f32 outputs and accumulation.
pub const ALLOW_F32: f64 = 1e-5;
/// bf16 outputs or activations.
pub const ALLOW_BF16: f64 = 1e-2;

/// The allowance for a route by the type it writes.
pub fn allowance_for(output: DType) -> f64 {
    match output {
        DType::F32 => ALLOW_F32,
        DType::Bf16 => ALLOW_BF16,
    }
}

/// `||got - want|| / ||want||`; NaN or infinity anywhere in `got` gives infinity, and a
/// length mismatch too, so unwritten (poisoned) outputs can never pass.
pub fn rel_l2(got: &[f32], want: &[f64]) -> f64 {
    if got.len() != want.len() || got.iter().any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        num += (g as f64 - w).powi(2);
        den += w * w;
    }
    if den == 0.0 {
        return if num == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (num / den).sqrt()
}

/// One route at one shape.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub route: String,
    pub shape: String,
    pub rel_l2: f64,
    pub allowance: f64,
    pub pass: bool,
}

impl Outcome {
    pub fn compare(
        route: String,
        shape: String,
        got: &[f32],
        want: &[f64],
        allowance: f64,
    ) -> Self {
        let rel = rel_l2(got, want);
        Outcome {
            route,
            shape,
            rel_l2: rel,
            allowance,
            pass: rel <= allowance,
        }
    }
}

/// Every op family's qualification, in registry order. With a filter, families none of
/// whose instantiations match it are skipped, and only matching outcomes are kept.
pub fn run_all(gpu: &Gpu, seed: u64, filter: Option<&str>) -> Result<Vec<Outcome>, GpuError> {
    use crate::ops;
    let mut rng = StdRng::seed_from_u64(seed);
    // A filter is one or more comma-separated substrings of route names.
    let matches = |route: &str| filter.is_none_or(|f| f.split(',').any(|p| route.contains(p)));
    let wanted =
        |specs: Vec<crate::jit::KernelSpec>| -> bool { specs.iter().any(|s| matches(&s.entry)) };
    let mut outcomes = Vec::new();
    // Each family's checks as they finish, on stderr: a whole run takes minutes, and the
    // table comes only at the end.
    let mut family = |name: &str, run: &mut dyn FnMut() -> Result<Vec<Outcome>, GpuError>| {
        let start = std::time::Instant::now();
        let got = run()?;
        let kept: Vec<Outcome> = got.into_iter().filter(|o| matches(&o.route)).collect();
        let failed = kept.iter().filter(|o| !o.pass).count();
        eprintln!(
            "  {name}: {} checks, {failed} failed, {:.1} s",
            kept.len(),
            start.elapsed().as_secs_f64()
        );
        outcomes.extend(kept);
        Ok::<(), GpuError>(())
    };
    if wanted(ops::rmsnorm::instantiations()) {
        family("rmsnorm", &mut || ops::rmsnorm::qualify(gpu, &mut rng))?;
    }
    if wanted(ops::mma_probe::instantiations()) {
        family("mma_probe", &mut || ops::mma_probe::qualify(gpu, &mut rng))?;
    }
    if wanted(ops::linear::instantiations()) {
        family("linear", &mut || {
            ops::linear::qualify(gpu, &mut rng, &matches)
        })?;
    }
    if wanted(ops::linear_exact::instantiations()) {
        family("linear_exact", &mut || {
            ops::linear_exact::qualify(gpu, &mut rng, &matches)
        })?;
    }
    if wanted(ops::linear_sgemm::instantiations()) {
        family("linear_sgemm", &mut || {
            ops::linear_sgemm::qualify(gpu, &mut rng, &matches)
        })?;
    }
    if wanted(ops::linear_cublas::instantiations()) {
        family("linear_cublas", &mut || {
            ops::linear_cublas::qualify(gpu, &mut rng, &matches)
        })?;
    }
    if wanted(ops::embedding::instantiations()) {
        family("embedding", &mut || {
            ops::embedding::qualify(gpu, &mut rng, &matches)
        })?;
    }
    if wanted(ops::gdn::instantiations()) {
        family("gdn", &mut || ops::gdn::qualify(gpu, &mut rng))?;
    }
    if wanted(ops::attention::instantiations()) {
        family("attention", &mut || {
            ops::attention::qualify_matching(gpu, &mut rng, &matches)
        })?;
    }
    if wanted(ops::elementwise::instantiations()) {
        family("elementwise", &mut || {
            ops::elementwise::qualify(gpu, &mut rng)
        })?;
    }
    if wanted(ops::rope::instantiations()) {
        family("rope", &mut || ops::rope::qualify(gpu, &mut rng))?;
    }
    if wanted(ops::loss::instantiations()) {
        family("loss", &mut || ops::loss::qualify(gpu, &mut rng))?;
    }
    Ok(outcomes)
}

/// The table `ninfer qualify` prints.
pub fn format_table(outcomes: &[Outcome]) -> String {
    let width = outcomes
        .iter()
        .map(|o| o.route.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let shape_w = outcomes
        .iter()
        .map(|o| o.shape.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut s = format!(
        "{:width$}  {:shape_w$}  {:>10}  {:>9}  verdict\n",
        "route", "shape", "rel_l2", "allowance"
    );
    for o in outcomes {
        s.push_str(&format!(
            "{:width$}  {:shape_w$}  {:>10.3e}  {:>9.0e}  {}\n",
            o.route,
            o.shape,
            o.rel_l2,
            o.allowance,
            if o.pass { "pass" } else { "FAIL" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poison_and_mismatch_never_pass() {
        assert_eq!(rel_l2(&[1.0, f32::NAN], &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(rel_l2(&[1.0], &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(rel_l2(&[1.0, f32::INFINITY], &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(rel_l2(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        let r = rel_l2(&[1.0, 2.2], &[1.0, 2.0]);
        assert!((r - 0.2 / 5f64.sqrt()).abs() < 1e-6);
        assert!(!Outcome::compare("r".into(), "s".into(), &[f32::NAN], &[1.0], 1.0).pass);
    }
}
