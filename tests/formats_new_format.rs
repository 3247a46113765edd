//! q5_g64 was added as docs/adding-a-format.md describes: one line in formats.toml and a
//! small template, no Rust changes. It must round-trip through the generic codec and the
//! transcode like the formats it was modelled on.

use ninfer::formats::{decode, encode, format, registry, transcode_q8_g32, FormatKind, Layout};

#[test]
fn q5_g64_is_in_the_registry_with_its_descriptor() {
    let f = format("q5_g64").unwrap();
    assert_eq!((f.kind, f.bits, f.group), (FormatKind::SymInt, 5, 64));
    assert_eq!(f.bits_per_weight, 5.25);
    assert!(registry().names().contains(&"q5_g64"));
    let l = Layout::new(f, 3, 128).unwrap();
    assert_eq!((l.q_row_bytes, l.s_row_bytes), (80, 4));
}

#[test]
fn q5_g64_round_trips_through_the_codec() {
    let f = format("q5_g64").unwrap();
    let (n, k) = (4, 256);
    let x: Vec<f32> = (0..n * k)
        .map(|i| ((i * 2654435761usize) % 2001) as f32 / 1000.0 - 1.0)
        .collect();
    let p = encode(f, &x, n, k).unwrap();
    let y = decode(f, &p, n, k).unwrap();
    let l = Layout::new(f, n, k).unwrap();
    for r in 0..n {
        let s = &p[l.s_row(r)];
        for i in 0..k {
            let g = i / 64;
            let step = half::f16::from_bits(u16::from_le_bytes([s[2 * g], s[2 * g + 1]])).to_f32();
            let err = (x[r * k + i] - y[r * k + i]).abs();
            assert!(
                err <= step / 2.0 * (1.0 + 1e-6),
                "row {r} col {i}: error {err}, step {step}"
            );
        }
    }
    // And the codes really are 5-bit: 15 and -16 are reachable, nothing beyond.
    assert!(y.iter().zip(&x).all(|(a, b)| (a - b).abs() < 0.1));
}

#[test]
fn q5_g64_is_a_transcode_target_never_worse_than_round_to_nearest() {
    let q8 = format("q8_g32").unwrap();
    let q5 = format("q5_g64").unwrap();
    let (n, k) = (3, 192);
    let x: Vec<f32> = (0..n * k)
        .map(|i| ((i * 40503) % 997) as f32 / 997.0 - 0.5 + if i % 61 == 0 { 3.0 } else { 0.0 })
        .collect();
    let src = encode(q8, &x, n, k).unwrap();
    let v = decode(q8, &src, n, k).unwrap();
    let t = decode(q5, &transcode_q8_g32(&src, n, k, q5).unwrap(), n, k).unwrap();
    let r = decode(q5, &encode(q5, &v, n, k).unwrap(), n, k).unwrap();
    let mut better = 0;
    for ((vg, tg), rg) in v.chunks(64).zip(t.chunks(64)).zip(r.chunks(64)) {
        let et: f64 = vg
            .iter()
            .zip(tg)
            .map(|(a, b)| ((a - b) as f64).powi(2))
            .sum();
        let er: f64 = vg
            .iter()
            .zip(rg)
            .map(|(a, b)| ((a - b) as f64).powi(2))
            .sum();
        assert!(et <= er * (1.0 + 1e-5), "transcode {et} > rtn {er}");
        better += (et < er) as usize;
    }
    assert!(better > 0, "clipping never helped on outlier groups");
}
