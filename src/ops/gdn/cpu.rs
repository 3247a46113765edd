//! The CPU op: the fused decode/batch step in f32 arithmetic, in the same order as the
//! recurrent kernel, with the state stored as f32 or f16 between calls (`--gdn-state-fp16`
//! on the CPU backend). The drift test runs it.

use super::reference::GdnParams;
use super::{GdnDims, StateType};

/// One layer's f32 weights.
#[derive(Debug, Clone)]
pub struct CpuWeights {
    pub conv_w: Vec<f32>,
    pub a_log: Vec<f32>,
    pub dt_bias: Vec<f32>,
    pub norm_w: Vec<f32>,
    pub eps: f32,
}

impl CpuWeights {
    pub fn from_params(p: &GdnParams) -> Self {
        let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        CpuWeights {
            conv_w: f(&p.conv_w),
            a_log: f(&p.a_log),
            dt_bias: f(&p.dt_bias),
            norm_w: f(&p.norm_w),
            eps: p.eps as f32,
        }
    }
}

/// One sequence's state; `s` holds values already rounded to the storage type.
#[derive(Debug, Clone)]
pub struct CpuState {
    pub ty: StateType,
    pub conv: Vec<f32>,
    pub s: Vec<f32>,
}

impl CpuState {
    pub fn zeros(d: &GdnDims, ty: StateType) -> Self {
        CpuState {
            ty,
            conv: vec![0.0; d.conv_state_len()],
            s: vec![0.0; d.state_len()],
        }
    }
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// `t` tokens of one sequence: returns `y [t][HV*dv]` after the gated norm. The state is
/// kept in f32 across the `t` tokens and rounded to its storage type at the end, as the
/// GPU step does.
#[allow(clippy::too_many_arguments)]
pub fn step(
    d: &GdnDims,
    w: &CpuWeights,
    st: &mut CpuState,
    mixed: &[f32],
    z: &[f32],
    a: &[f32],
    b: &[f32],
    t: usize,
) -> Vec<f32> {
    let (cd, kc, kd, dk, dv) = (d.conv_dim(), d.kc, d.key_dim(), d.dk, d.dv);
    let r = d.hv / d.hk;
    let hist = kc - 1;
    let mut y = vec![0.0f32; t * d.value_dim()];
    let mut conv_out = vec![0.0f32; cd];
    let scale = 1.0 / (dk as f32).sqrt();
    for tok in 0..t {
        for (c, co) in conv_out.iter_mut().enumerate() {
            let x = mixed[tok * cd + c];
            let win = &mut st.conv[c * hist..(c + 1) * hist];
            let mut acc = 0.0f32;
            for (wj, xj) in w.conv_w[c * kc..c * kc + hist].iter().zip(win.iter()) {
                acc = wj.mul_add(*xj, acc);
            }
            acc = w.conv_w[c * kc + hist].mul_add(x, acc);
            win.rotate_left(1.min(hist));
            if hist > 0 {
                win[hist - 1] = x;
            }
            *co = silu(acc);
        }
        let mut qn = vec![0.0f32; kd];
        let mut kn = vec![0.0f32; kd];
        for h in 0..d.hk {
            let q = &conv_out[h * dk..(h + 1) * dk];
            let k = &conv_out[kd + h * dk..kd + (h + 1) * dk];
            let iq = scale / (q.iter().map(|v| v * v).sum::<f32>() + 1e-6).sqrt();
            let ik = 1.0 / (k.iter().map(|v| v * v).sum::<f32>() + 1e-6).sqrt();
            for i in 0..dk {
                qn[h * dk + i] = q[i] * iq;
                kn[h * dk + i] = k[i] * ik;
            }
        }
        for h in 0..d.hv {
            let kh = h / r;
            let q = &qn[kh * dk..(kh + 1) * dk];
            let k = &kn[kh * dk..(kh + 1) * dk];
            let v = &conv_out[2 * kd + h * dv..2 * kd + (h + 1) * dv];
            let beta = 1.0 / (1.0 + (-b[tok * d.hv + h]).exp());
            let eg = (-w.a_log[h].exp() * softplus(a[tok * d.hv + h] + w.dt_bias[h])).exp();
            let kq: f32 = q.iter().zip(k).map(|(x, y)| x * y).sum();
            let s = &mut st.s[h * dv * dk..(h + 1) * dv * dk];
            let orow = &mut y[(tok * d.hv + h) * dv..(tok * d.hv + h + 1) * dv];
            for j in 0..dv {
                let col = &mut s[j * dk..(j + 1) * dk];
                let sa: f32 = col.iter().zip(k).map(|(x, y)| x * y).sum();
                let sb: f32 = col.iter().zip(q).map(|(x, y)| x * y).sum();
                let delta = beta * (v[j] - eg * sa);
                orow[j] = kq.mul_add(delta, eg * sb);
                for (e, ki) in col.iter_mut().zip(k) {
                    *e = ki.mul_add(delta, eg * *e);
                }
            }
            // Gated norm of this head's row.
            let ms = orow.iter().map(|v| v * v).sum::<f32>() / dv as f32;
            let inv = 1.0 / (ms + w.eps).sqrt();
            let zrow = &z[(tok * d.hv + h) * dv..(tok * d.hv + h + 1) * dv];
            for j in 0..dv {
                orow[j] = orow[j] * inv * w.norm_w[j] * silu(zrow[j]);
            }
        }
    }
    let ty = st.ty;
    st.s.iter_mut().for_each(|v| *v = ty.round(*v));
    y
}

#[cfg(test)]
mod tests {
    use super::super::reference;
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn f32_op_matches_the_f64_reference() {
        let d = GdnDims::new(2, 4, 16, 12);
        let mut rng = StdRng::seed_from_u64(9);
        let mut draw = |n: usize, s: f64| -> Vec<f64> {
            (0..n).map(|_| rng.random_range(-1.0..1.0) * s).collect()
        };
        let p = GdnParams {
            conv_w: draw(d.conv_dim() * 4, 0.6),
            a_log: draw(d.hv, 1.0),
            dt_bias: draw(d.hv, 1.0),
            norm_w: draw(d.dv, 1.0),
            eps: 1e-6,
        };
        let t = 9;
        let mixed = draw(t * d.conv_dim(), 2.0);
        let z = draw(t * d.value_dim(), 2.0);
        let a = draw(t * d.hv, 2.0);
        let b = draw(t * d.hv, 2.0);
        let (mut c64, mut s64) = (vec![0.0; d.conv_state_len()], vec![0.0; d.state_len()]);
        let want = reference::mixer(&d, &p, &mut c64, &mut s64, &mixed, &z, &a, &b, t, None);
        let w = CpuWeights::from_params(&p);
        let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        let mut st = CpuState::zeros(&d, StateType::F32);
        // Two calls (4 + 5 tokens) against one reference call.
        let cd = d.conv_dim();
        let mut got = step(
            &d,
            &w,
            &mut st,
            &f(&mixed[..4 * cd]),
            &f(&z[..4 * d.value_dim()]),
            &f(&a[..4 * d.hv]),
            &f(&b[..4 * d.hv]),
            4,
        );
        got.extend(step(
            &d,
            &w,
            &mut st,
            &f(&mixed[4 * cd..]),
            &f(&z[4 * d.value_dim()..]),
            &f(&a[4 * d.hv..]),
            &f(&b[4 * d.hv..]),
            5,
        ));
        let rel = crate::qualify::rel_l2(&got, &want);
        assert!(rel < 1e-5, "y rel {rel}");
        let rel_s = crate::qualify::rel_l2(&st.s, &s64);
        assert!(rel_s < 1e-5, "state rel {rel_s}");
        let rel_c = crate::qualify::rel_l2(&st.conv, &c64);
        assert!(rel_c < 1e-7, "conv rel {rel_c}");
    }
}
