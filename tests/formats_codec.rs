//! The host codecs against an independent decoder written from the templates' header
//! comments (it reads bits one at a time and computes the plane offsets itself), property
//! tests of the round-to-nearest error bound, and the transcode against an independent
//! scalar implementation of its documented arithmetic.

use half::{bf16, f16};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

use ninfer::formats::{
    decode, encode, format, registry, transcode_q8_g32, Format, FormatError, FormatKind,
};

// ---------------------------------------------------------------- independent decoder

fn bit(bytes: &[u8], j: usize) -> u32 {
    ((bytes[j / 8] >> (j % 8)) & 1) as u32
}

/// Field `i` of width `b` of a little-endian bit stream.
fn field(bytes: &[u8], i: usize, b: usize) -> u32 {
    (0..b).map(|t| bit(bytes, i * b + t) << t).sum()
}

fn signed(v: u32, b: usize) -> i32 {
    if v >= 1 << (b - 1) {
        v as i32 - (1 << b)
    } else {
        v as i32
    }
}

fn f16_at(b: &[u8], o: usize) -> f32 {
    f16::from_bits(b[o] as u16 | (b[o + 1] as u16) << 8).to_f32()
}

fn f32_at(b: &[u8], o: usize) -> f32 {
    f32::from_bits(u32::from_le_bytes(b[o..o + 4].try_into().unwrap()))
}

/// (quant row bytes, scale row bytes, scale plane offset, total) from the header comments.
fn planes(f: &Format, n: usize, k: usize) -> (usize, usize, usize, usize) {
    let q_row = k * f.bits as usize / 8;
    let s_row = match f.kind {
        FormatKind::SymInt => k / f.group * 2,
        FormatKind::Affine => k / f.group * 4,
        FormatKind::RowScaled => 4,
        FormatKind::Dense => 0,
    };
    if s_row == 0 {
        return (q_row, 0, n * q_row, n * q_row);
    }
    let s_off = (n * q_row).div_ceil(16) * 16;
    (q_row, s_row, s_off, s_off + n * s_row)
}

fn independent_decode(f: &Format, p: &[u8], n: usize, k: usize) -> Vec<f32> {
    let (q_row, s_row, s_off, total) = planes(f, n, k);
    assert_eq!(p.len(), total, "{}: payload size", f.name);
    let b = f.bits as usize;
    let mut out = Vec::with_capacity(n * k);
    for r in 0..n {
        let q = &p[r * q_row..(r + 1) * q_row];
        let s = &p[s_off + r * s_row..s_off + (r + 1) * s_row];
        for i in 0..k {
            let v = match f.kind {
                FormatKind::SymInt => {
                    f16_at(s, 2 * (i / f.group)) * signed(field(q, i, b), b) as f32
                }
                FormatKind::RowScaled => f32_at(s, 0) * signed(field(q, i, b), b) as f32,
                FormatKind::Affine => {
                    let g = i / f.group;
                    f16_at(s, 4 * g) * field(q, i, b) as f32 + f16_at(s, 4 * g + 2)
                }
                FormatKind::Dense => match f.name.as_str() {
                    "f32" => f32_at(q, 4 * i),
                    "f16" => f16_at(q, 2 * i),
                    "bf16" => {
                        bf16::from_bits(q[2 * i] as u16 | (q[2 * i + 1] as u16) << 8).to_f32()
                    }
                    other => panic!("unknown dense format {other}"),
                },
            };
            out.push(v);
        }
    }
    out
}

/// A random payload: random quant bytes, random finite scales (dense: random finite values).
fn random_payload(f: &Format, n: usize, k: usize, rng: &mut impl Rng) -> Vec<u8> {
    let (q_row, s_row, s_off, total) = planes(f, n, k);
    let mut p = vec![0u8; total];
    rng.fill(&mut p[..n * q_row]);
    if f.kind == FormatKind::Dense {
        let w = (f.bits / 8) as usize;
        for c in p.chunks_exact_mut(w) {
            let v: f32 = rng.random_range(-4.0..4.0);
            match f.name.as_str() {
                "f32" => c.copy_from_slice(&v.to_le_bytes()),
                "f16" => c.copy_from_slice(&f16::from_f32(v).to_bits().to_le_bytes()),
                _ => c.copy_from_slice(&bf16::from_f32(v).to_bits().to_le_bytes()),
            }
        }
        return p;
    }
    let sb = if f.kind == FormatKind::RowScaled {
        4
    } else {
        2
    };
    for c in p[s_off..s_off + n * s_row].chunks_exact_mut(sb) {
        let v: f32 = rng.random_range(-0.1..0.1);
        if sb == 4 {
            c.copy_from_slice(&v.to_le_bytes());
        } else {
            c.copy_from_slice(&f16::from_f32(v).to_bits().to_le_bytes());
        }
    }
    p
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn codec_agrees_with_the_independent_decoder_on_random_payloads() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for f in registry().iter() {
        for (n, k) in [(1, 64), (3, 128), (5, 320)] {
            for _ in 0..4 {
                let p = random_payload(f, n, k, &mut rng);
                let got = decode(f, &p, n, k).unwrap();
                assert_eq!(
                    bits(&got),
                    bits(&independent_decode(f, &p, n, k)),
                    "{} [{n}, {k}]",
                    f.name
                );
            }
        }
    }
}

#[test]
fn codec_agrees_with_the_independent_decoder_on_encoded_payloads() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    for f in registry().iter() {
        let (n, k) = (4, 192);
        let x: Vec<f32> = (0..n * k).map(|_| rng.random_range(-2.0f32..2.0)).collect();
        let p = encode(f, &x, n, k).unwrap();
        assert_eq!(
            bits(&decode(f, &p, n, k).unwrap()),
            bits(&independent_decode(f, &p, n, k)),
            "{}",
            f.name
        );
    }
}

// ---------------------------------------------------------------- error bound properties

/// Checks the round-to-nearest bound of one encoded row set: each element inside the clamp
/// range is within half a step of its decoded value.
fn check_rtn_bound(f: &Format, x: &[f32], n: usize, k: usize) -> Result<(), TestCaseError> {
    let p = encode(f, x, n, k).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let y = decode(f, &p, n, k).unwrap();
    let (_, s_row, s_off, _) = planes(f, n, k);
    for r in 0..n {
        let s = &p[s_off + r * s_row..s_off + (r + 1) * s_row];
        for i in 0..k {
            let (xv, yv) = (x[r * k + i], y[r * k + i]);
            let (step, inside) = match f.kind {
                FormatKind::SymInt | FormatKind::RowScaled => {
                    let d = if f.kind == FormatKind::SymInt {
                        f16_at(s, 2 * (i / f.group))
                    } else {
                        f32_at(s, 0)
                    };
                    let t = xv as f64 / d as f64;
                    (
                        d as f64,
                        d == 0.0 || (t >= f.qmin() as f64 - 0.5 && t <= f.qmax() as f64 + 0.5),
                    )
                }
                FormatKind::Affine => {
                    let g = i / f.group;
                    let (d, m) = (f16_at(s, 4 * g), f16_at(s, 4 * g + 2));
                    let t = (xv as f64 - m as f64) / d as f64;
                    (
                        d as f64,
                        d == 0.0 || (-0.5..=f.qmax() as f64 + 0.5).contains(&t),
                    )
                }
                FormatKind::Dense => continue,
            };
            if !inside {
                continue;
            }
            // Half a step, plus the f32 roundings of the quotient and of the decode.
            let tol = step / 2.0 * (1.0 + 1e-6) + 4.0 * f32::EPSILON as f64 * xv.abs() as f64;
            let err = (xv as f64 - yv as f64).abs();
            prop_assert!(
                err <= tol,
                "{} row {r} col {i}: x {xv}, decoded {yv}, step {step}",
                f.name
            );
        }
    }
    Ok(())
}

fn heavy_row(seed: u64, len: usize, outlier_rate: f64, scale: f32) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len)
        .map(|_| {
            let v: f32 = rng.sample::<f32, _>(rand_distr::StandardNormal) * scale;
            if rng.random_bool(outlier_rate) {
                v * 25.0
            } else {
                v
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn rtn_error_is_at_most_half_a_step(seed in any::<u64>(), rows in 1usize..4, scale_exp in -8i32..4,
                                        outliers in prop_oneof![Just(0.0f64), Just(0.02)]) {
        for f in registry().iter() {
            if f.kind == FormatKind::Dense {
                continue;
            }
            let k = 128;
            let x = heavy_row(seed, rows * k, outliers, (scale_exp as f32).exp2());
            check_rtn_bound(f, &x, rows, k)?;
        }
    }

    #[test]
    fn rtn_bound_holds_on_arbitrary_finite_values(x in proptest::collection::vec(-1.0e3f32..1.0e3, 64)) {
        for f in registry().iter().filter(|f| f.kind != FormatKind::Dense) {
            check_rtn_bound(f, &x, 1, 64)?;
        }
    }
}

// ---------------------------------------------------------------- transcode

/// The documented transcode arithmetic (src/formats/transcode.rs), written out plainly.
fn reference_transcode(src_vals: &[f32], target: &Format) -> (Vec<i32>, Vec<u16>) {
    let g = target.group;
    let qmax = ((1 << (target.bits - 1)) - 1) as f32;
    let qmin = -qmax - 1.0;
    let (mut codes, mut scales) = (Vec::new(), Vec::new());
    for v in src_vals.chunks(g) {
        let absmax = v
            .iter()
            .fold(0f32, |m, x| if x.abs() > m { x.abs() } else { m });
        let base = absmax / qmax;
        let quant = |s: f32| -> Vec<i32> {
            v.iter()
                .map(|&x| {
                    if s == 0.0 {
                        0
                    } else {
                        (x / s).clamp(qmin, qmax).round_ties_even() as i32
                    }
                })
                .collect()
        };
        let err = |s: f32, q: &[i32]| -> f32 {
            let mut a = [0f32; 16];
            for (i, (&x, &qi)) in v.iter().zip(q).enumerate() {
                let e = x - s * qi as f32;
                a[i % 16] += e * e;
            }
            let b: Vec<f32> = (0..8).map(|l| a[l] + a[l + 8]).collect();
            ((b[0] + b[4]) + (b[2] + b[6])) + ((b[1] + b[5]) + (b[3] + b[7]))
        };
        let cand = |j: usize| f16::from_f32(base * ((70 + 2 * j) as f32 / 100.0));
        let mut best = cand(15);
        let mut best_err = err(best.to_f32(), &quant(best.to_f32()));
        for j in 0..25 {
            let h = cand(j);
            if !h.is_finite() {
                continue;
            }
            let e = err(h.to_f32(), &quant(h.to_f32()));
            if e < best_err {
                best = h;
                best_err = e;
            }
        }
        codes.extend(quant(best.to_f32()));
        scales.push(best.to_bits());
    }
    (codes, scales)
}

fn group_sq_err(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
        .sum()
}

fn check_transcode(x: &[f32], n: usize, k: usize, target_name: &str) -> Result<(), TestCaseError> {
    let q8 = format("q8_g32").unwrap();
    let target = format(target_name).unwrap();
    let src = encode(q8, x, n, k).unwrap();
    let v = decode(q8, &src, n, k).unwrap();
    let t = transcode_q8_g32(&src, n, k, target).unwrap();
    // Bytes: exactly the reference arithmetic, read back through the independent decoder.
    let (q_row, s_row, s_off, _) = planes(target, n, k);
    for r in 0..n {
        let (codes, scales) = reference_transcode(&v[r * k..(r + 1) * k], target);
        let q = &t[r * q_row..(r + 1) * q_row];
        let s = &t[s_off + r * s_row..s_off + (r + 1) * s_row];
        for (i, &c) in codes.iter().enumerate() {
            prop_assert_eq!(
                signed(field(q, i, target.bits as usize), target.bits as usize),
                c,
                "row {} code {}",
                r,
                i
            );
        }
        for (g, &h) in scales.iter().enumerate() {
            prop_assert_eq!(
                u16::from_le_bytes([s[2 * g], s[2 * g + 1]]),
                h,
                "row {} scale {}",
                r,
                g
            );
        }
    }
    // Quality: never worse than round-to-nearest, per group, in exact (f64) squared error.
    let rtn = decode(target, &encode(target, &v, n, k).unwrap(), n, k).unwrap();
    let tc = independent_decode(target, &t, n, k);
    for (gi, ((vg, rg), tg)) in v
        .chunks(target.group)
        .zip(rtn.chunks(target.group))
        .zip(tc.chunks(target.group))
        .enumerate()
    {
        let (e_t, e_r) = (group_sq_err(vg, tg), group_sq_err(vg, rg));
        prop_assert!(
            e_t <= e_r * (1.0 + 1e-5) + 1e-30,
            "{} group {}: transcode {} > rtn {}",
            target_name,
            gi,
            e_t,
            e_r
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn transcode_is_the_documented_arithmetic_and_never_worse_than_rtn(
        seed in any::<u64>(), scale_exp in -10i32..6, outliers in prop_oneof![Just(0.0f64), Just(0.01), Just(0.1)]) {
        let (n, k) = (2, 256);
        let x = heavy_row(seed, n * k, outliers, (scale_exp as f32).exp2());
        for target in ["q4_g64", "q6_g64"] {
            check_transcode(&x, n, k, target)?;
        }
    }
}

#[test]
fn transcode_improves_heavy_tailed_weights_overall() {
    // Not a bound, a sanity check that clipping does something on outlier-heavy rows.
    let (n, k) = (16, 512);
    let x = heavy_row(99, n * k, 0.02, 0.02);
    let q8 = format("q8_g32").unwrap();
    let q4 = format("q4_g64").unwrap();
    let src = encode(q8, &x, n, k).unwrap();
    let v = decode(q8, &src, n, k).unwrap();
    let e_t = group_sq_err(
        &v,
        &decode(q4, &transcode_q8_g32(&src, n, k, q4).unwrap(), n, k).unwrap(),
    );
    let e_r = group_sq_err(
        &v,
        &decode(q4, &encode(q4, &v, n, k).unwrap(), n, k).unwrap(),
    );
    assert!(e_t < e_r * 0.97, "transcode {e_t} vs rtn {e_r}");
}

// ---------------------------------------------------------------- bad input

#[test]
fn bad_input_is_a_sentence_for_every_format() {
    for f in registry().iter() {
        let k = 64;
        let mut x = vec![0.25f32; 2 * k];
        x[k + 3] = f32::NAN;
        match encode(f, &x, 2, k) {
            Err(FormatError::NonFinite { row: 1, col: 3, .. }) => {}
            other => panic!("{}: NaN gave {other:?}", f.name),
        }
        x[k + 3] = f32::NEG_INFINITY;
        assert!(
            matches!(encode(f, &x, 2, k), Err(FormatError::NonFinite { .. })),
            "{}",
            f.name
        );
        let e = decode(f, &[0u8; 7], 2, k).unwrap_err();
        assert!(
            matches!(e, FormatError::PayloadSize { actual: 7, .. }),
            "{}: {e}",
            f.name
        );
        assert!(e.to_string().ends_with("bytes"), "{e}");
        assert!(
            matches!(
                encode(f, &x[..10], 2, k),
                Err(FormatError::ValueCount { .. })
            ),
            "{}",
            f.name
        );
        if f.group > 1 {
            let e = encode(f, &vec![0.0; f.group + 16], 1, f.group + 16).unwrap_err();
            assert!(
                matches!(e, FormatError::GroupDoesNotDivide { .. }),
                "{}: {e}",
                f.name
            );
        }
    }
    assert!(matches!(
        format("q4_g63"),
        Err(FormatError::UnknownFormat { .. })
    ));
    let q8 = format("q8_g32").unwrap();
    let e = transcode_q8_g32(&[0u8; 3], 1, 64, format("q4_g64").unwrap()).unwrap_err();
    assert!(matches!(e, FormatError::PayloadSize { .. }), "{e}");
    let e = transcode_q8_g32(
        &encode(q8, &[0.0; 64], 1, 64).unwrap(),
        1,
        64,
        format("bf16").unwrap(),
    )
    .unwrap_err();
    assert!(matches!(e, FormatError::UnsupportedTranscode { .. }), "{e}");
}
