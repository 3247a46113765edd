//! The f16-storage drift test: many synthetic decode steps through the real op with the
//! state stored as f16 against the same steps with f32 storage. Judged by the worst
//! per-step relative L2 error of the mixer output (limit 1%) and by its growth over the
//! run (the mean error of the last quarter of the steps must stay within 1.5x that of the
//! first quarter: drift that accumulates fails).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use serde::Serialize;

use super::reference::GdnParams;
use super::GdnDims;

pub const DRIFT_LIMIT: f64 = 0.01;
pub const GROWTH_LIMIT: f64 = 1.5;

#[derive(Debug, Clone, Serialize)]
pub struct DriftReport {
    pub width: usize,
    pub steps: usize,
    pub worst: f64,
    pub first_quarter_mean: f64,
    pub last_quarter_mean: f64,
    pub pass: bool,
}

impl DriftReport {
    /// Judges per-step errors.
    pub fn judge(width: usize, errors: &[f64]) -> Self {
        let n = errors.len();
        let q = (n / 4).max(1);
        let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len().max(1) as f64;
        let worst =
            errors.iter().cloned().fold(
                0.0,
                |a: f64, b| {
                    if b.is_nan() {
                        f64::INFINITY
                    } else {
                        a.max(b)
                    }
                },
            );
        let first = mean(&errors[..q.min(n)]);
        let last = mean(&errors[n.saturating_sub(q)..]);
        DriftReport {
            width,
            steps: n,
            worst,
            first_quarter_mean: first,
            last_quarter_mean: last,
            pass: n > 0 && worst <= DRIFT_LIMIT && last <= GROWTH_LIMIT * first,
        }
    }

    pub fn line(&self) -> String {
        format!(
            "width {}: {} steps, worst {:.3}%, mean first quarter {:.3}%, last quarter {:.3}%: {}",
            self.width,
            self.steps,
            self.worst * 100.0,
            self.first_quarter_mean * 100.0,
            self.last_quarter_mean * 100.0,
            if self.pass { "pass" } else { "FAIL" }
        )
    }
}

/// Weights with the decay spread of a real layer: `A = exp(A_log)` in [1, 16],
/// `dt = softplus(dt_bias)` in [0.001, 0.1] (the Mamba-style init), so some heads keep
/// their state for thousands of tokens and others for a few.
pub fn realistic_params(d: &GdnDims, rng: &mut impl Rng) -> GdnParams {
    let conv_w = (0..d.conv_dim() * d.kc)
        .map(|_| rng.random_range(-0.5..0.5))
        .collect();
    let a_log = (0..d.hv)
        .map(|_| rng.random_range(1.0f64..16.0).ln())
        .collect();
    let dt_bias = (0..d.hv)
        .map(|_| {
            let dt = (rng.random_range(0.001f64.ln()..0.1f64.ln())).exp();
            dt.exp_m1().ln() // softplus^-1
        })
        .collect();
    let norm_w = (0..d.dv)
        .map(|_| 1.0 + rng.random_range(-0.1..0.1))
        .collect();
    GdnParams {
        conv_w,
        a_log,
        dt_bias,
        norm_w,
        eps: 1e-6,
    }
}

/// A pool of synthetic per-token inputs (`mixed`, `z`, `a`, `b`), `width` tokens a set.
pub struct InputPool {
    pub sets: usize,
    pub width: usize,
    pub mixed: Vec<f32>,
    pub z: Vec<f32>,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
}

impl InputPool {
    pub fn new(d: &GdnDims, sets: usize, width: usize, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = sets * width;
        let mut draw = |len: usize, s: f32| -> Vec<f32> {
            (0..len)
                .map(|_| rng.sample::<f32, _>(StandardNormal) * s)
                .collect()
        };
        InputPool {
            sets,
            width,
            mixed: draw(n * d.conv_dim(), 1.0),
            z: draw(n * d.value_dim(), 1.0),
            a: draw(n * d.hv, 0.5),
            b: draw(n * d.hv, 1.5),
        }
    }

    /// The set step `s` uses (a fixed pseudo-random walk over the pool).
    pub fn set_for(&self, s: usize) -> usize {
        (s.wrapping_mul(2_654_435_761) >> 7) % self.sets
    }
}

/// Relative L2 of `got` against `want` (both f32).
pub fn rel(got: &[f32], want: &[f32]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        num += (g as f64 - w as f64).powi(2);
        den += (w as f64).powi(2);
    }
    if got.iter().any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    if den == 0.0 {
        return if num == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (num / den).sqrt()
}

/// The CPU drift run: `steps` steps of `width` tokens through [`super::cpu::step`].
pub fn cpu_drift(d: &GdnDims, steps: usize, width: usize, seed: u64) -> DriftReport {
    use super::cpu::{step, CpuState, CpuWeights};
    use super::StateType;
    let mut rng = StdRng::seed_from_u64(seed);
    let p = realistic_params(d, &mut rng);
    let w = CpuWeights::from_params(&p);
    let pool = InputPool::new(d, 61, width, seed ^ 0x5eed);
    let mut s32 = CpuState::zeros(d, StateType::F32);
    let mut s16 = CpuState::zeros(d, StateType::F16);
    let (cd, vd, hv) = (d.conv_dim(), d.value_dim(), d.hv);
    let mut errors = Vec::with_capacity(steps);
    for s in 0..steps {
        let k = pool.set_for(s);
        let sl = |v: &[f32], per: usize| v[k * width * per..(k + 1) * width * per].to_vec();
        let (m, z, a, b) = (
            sl(&pool.mixed, cd),
            sl(&pool.z, vd),
            sl(&pool.a, hv),
            sl(&pool.b, hv),
        );
        let y32 = step(d, &w, &mut s32, &m, &z, &a, &b, width);
        let y16 = step(d, &w, &mut s16, &m, &z, &a, &b, width);
        errors.push(rel(&y16, &y32));
    }
    DriftReport::judge(width, &errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_catches_growth_and_nan() {
        let flat = vec![0.003; 100];
        assert!(DriftReport::judge(1, &flat).pass);
        let growing: Vec<f64> = (0..100).map(|i| 0.001 + i as f64 * 0.0001).collect();
        assert!(!DriftReport::judge(1, &growing).pass);
        let mut nan = flat.clone();
        nan[50] = f64::NAN;
        assert!(!DriftReport::judge(1, &nan).pass);
        assert!(!DriftReport::judge(1, &[0.02]).pass);
    }
}
