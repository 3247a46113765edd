//! Host codecs: one generic codec for the symmetric integer formats (sym_int and row_scaled,
//! driven by the descriptor's bits, group and scale type), the affine codec (q4_1_g32, GGUF
//! Q4_1 numbers) and the dense codecs. The packing is the one stated in the templates' header
//! comments (`templates/formats/sym_int.cuh`, `q4_1_g32.cuh`, `dense.cuh`):
//!
//! - **Quant plane bit order**: a row's values form one little-endian bit stream: value `i`
//!   occupies bits `[i*bits, (i+1)*bits)`, bit `j` of the stream being bit `j % 8` of byte
//!   `j / 8`. So 8-bit values are plain bytes, 4-bit values are two per byte (even index in the
//!   low nibble), 6-bit values are four per 3 bytes. Signed kinds store two's complement
//!   `bits`-bit integers; the affine kind stores unsigned integers.
//! - **Scale plane**: per row, one scale per group in group order (little-endian f16 or f32);
//!   affine: per group the f16 scale `d` then the f16 min `m`; row-scaled: one scale per row.
//!
//! **Encoding** (all arithmetic in f32, IEEE round-to-nearest-even, no fused multiply-add):
//! - symmetric: `absmax = max |x|` over the group; `scale = absmax / qmax` (f32 division,
//!   `qmax = 2^(bits-1) - 1`); an f16 scale is that value rounded to nearest-even f16 and the
//!   f16 value is what quantizes; then `q = round_half_even(clamp(x / scale, -2^(bits-1), qmax))`,
//!   and `q = 0` where the scale is 0.
//! - affine: `m = f16(min x)`, `d = f16((max x - min x) / (2^bits - 1))`;
//!   `q = round_half_even(clamp((x - m) / d, 0, 2^bits - 1))`, 0 where `d` is 0.
//! - dense: round-to-nearest-even to the element type (f32 is stored as is).
//!
//! **Decoding**: symmetric `x = scale * q` (one f32 multiply); affine `x = d * q + m` (multiply,
//! then add: two roundings, as ggml's Q4_1); dense: widen to f32.
//!
//! Non-finite weights, scales beyond the scale type's range, and values beyond a dense type's
//! range are errors; payload and shape mismatches are errors.

use std::ops::Range;

use half::{bf16, f16};
use rayon::prelude::*;

use super::error::{FormatError, Result};
use super::layout::Layout;
use super::registry::{DenseType, Format, FormatKind, ScaleType};

/// Packs the low `bits` bits of each value into a little-endian bit stream (see module docs).
/// `out` must hold exactly `vals.len() * bits / 8` bytes.
pub fn pack_bits(vals: &[u8], bits: u32, out: &mut [u8]) {
    debug_assert_eq!(out.len() * 8, vals.len() * bits as usize);
    match bits {
        8 => out.copy_from_slice(vals),
        4 => {
            for (o, p) in out.iter_mut().zip(vals.chunks_exact(2)) {
                *o = (p[0] & 0x0f) | (p[1] << 4);
            }
        }
        _ if vals.len().is_multiple_of(8) => {
            // Eight values fill exactly `bits` bytes.
            let mask = (1u64 << bits) - 1;
            for (v, o) in vals
                .chunks_exact(8)
                .zip(out.chunks_exact_mut(bits as usize))
            {
                let mut w = 0u64;
                for (i, &x) in v.iter().enumerate() {
                    w |= (x as u64 & mask) << (i as u32 * bits);
                }
                o.copy_from_slice(&w.to_le_bytes()[..bits as usize]);
            }
        }
        _ => {
            let mask = (1u64 << bits) - 1;
            let (mut acc, mut nb, mut j) = (0u64, 0u32, 0usize);
            for &v in vals {
                acc |= (v as u64 & mask) << nb;
                nb += bits;
                while nb >= 8 {
                    out[j] = acc as u8;
                    j += 1;
                    acc >>= 8;
                    nb -= 8;
                }
            }
            if nb > 0 {
                out[j] = acc as u8;
            }
        }
    }
}

/// Inverse of [`pack_bits`]: the raw (unsigned) `bits`-bit fields, one per output byte.
pub fn unpack_bits(bytes: &[u8], bits: u32, out: &mut [u8]) {
    debug_assert_eq!(bytes.len() * 8, out.len() * bits as usize);
    match bits {
        8 => out.copy_from_slice(bytes),
        4 => {
            for (b, o) in bytes.iter().zip(out.chunks_exact_mut(2)) {
                o[0] = b & 0x0f;
                o[1] = b >> 4;
            }
        }
        _ if out.len().is_multiple_of(8) => {
            let mask = (1u64 << bits) - 1;
            for (b, o) in bytes
                .chunks_exact(bits as usize)
                .zip(out.chunks_exact_mut(8))
            {
                let mut w = [0u8; 8];
                w[..bits as usize].copy_from_slice(b);
                let w = u64::from_le_bytes(w);
                for (i, x) in o.iter_mut().enumerate() {
                    *x = ((w >> (i as u32 * bits)) & mask) as u8;
                }
            }
        }
        _ => {
            let mask = (1u64 << bits) - 1;
            let (mut acc, mut nb, mut j) = (0u64, 0u32, 0usize);
            for o in out.iter_mut() {
                while nb < bits {
                    acc |= (bytes[j] as u64) << nb;
                    j += 1;
                    nb += 8;
                }
                *o = (acc & mask) as u8;
                acc >>= bits;
                nb -= bits;
            }
        }
    }
}

/// Sign-extends a `bits`-bit two's complement field.
#[inline]
pub fn sign_extend(v: u8, bits: u32) -> i32 {
    let sh = 8 - bits;
    (((v << sh) as i8) >> sh) as i32
}

/// `round_half_even(clamp(t, lo, hi))` for a finite `t` (lo, hi integers).
#[inline]
pub fn quantize_value(x: f32, scale: f32, lo: f32, hi: f32) -> i32 {
    if scale == 0.0 {
        return 0;
    }
    let t = x / scale;
    let t = if t < lo {
        lo
    } else if t > hi {
        hi
    } else {
        t
    };
    round_half_even_small(t) as i32
}

/// `t.round_ties_even()` for `|t| < 2^22` (callers clamp to a code range first), without
/// the library call that baseline x86-64 (no SSE4.1 `roundss`) makes for it: adding
/// 1.5 * 2^23 leaves the sum's unit in the last place at 1, so the addition itself rounds to
/// the nearest integer, ties to even (the default rounding mode), and subtracting it back is
/// exact. (-0.5 gives +0, which compares and converts as -0.) With the call, encoding took
/// most of a synthetic model's load (`examples/bench_synthetic_encode.rs`).
#[inline(always)]
pub(crate) fn round_half_even_small(t: f32) -> f32 {
    const SHIFT: f32 = 12_582_912.0; // 1.5 * 2^23
    (t + SHIFT) - SHIFT
}

fn check_values(values: &[f32], n: usize, k: usize) -> Result<()> {
    if values.len() != n * k {
        return Err(FormatError::ValueCount {
            n,
            k,
            expected: n * k,
            actual: values.len(),
        });
    }
    Ok(())
}

fn check_finite(fmt: &Format, row: usize, x: &[f32]) -> Result<()> {
    if let Some(col) = x.iter().position(|v| !v.is_finite()) {
        return Err(FormatError::NonFinite {
            format: fmt.name.clone(),
            row,
            col,
            value: x[col],
        });
    }
    Ok(())
}

/// Writes a scale to `dst` in the format's scale type and returns the value that quantizes.
fn store_scale(fmt: &Format, row: usize, group: usize, scale: f32, dst: &mut [u8]) -> Result<f32> {
    match fmt.scale {
        ScaleType::F16 => {
            let h = f16::from_f32(scale);
            if !h.is_finite() {
                return Err(FormatError::ScaleOverflow {
                    format: fmt.name.clone(),
                    row,
                    group,
                    scale,
                    scale_type: "f16".into(),
                });
            }
            dst.copy_from_slice(&h.to_bits().to_le_bytes());
            Ok(h.to_f32())
        }
        ScaleType::F32 => {
            if !scale.is_finite() {
                return Err(FormatError::ScaleOverflow {
                    format: fmt.name.clone(),
                    row,
                    group,
                    scale,
                    scale_type: "f32".into(),
                });
            }
            dst.copy_from_slice(&scale.to_le_bytes());
            Ok(scale)
        }
        ScaleType::None => unreachable!("quantized formats have scales (checked by the registry)"),
    }
}

#[inline]
fn load_scale(st: ScaleType, b: &[u8]) -> f32 {
    match st {
        ScaleType::F16 => f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32(),
        ScaleType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        ScaleType::None => 1.0,
    }
}

/// Encodes one row (`x.len() == layout.k`) into its quant-plane bytes `q` and scale-plane
/// bytes `s`. `row` only names the row in errors.
pub fn encode_row(
    fmt: &Format,
    layout: &Layout,
    row: usize,
    x: &[f32],
    q: &mut [u8],
    s: &mut [u8],
) -> Result<()> {
    check_finite(fmt, row, x)?;
    let g = layout.group_len;
    match fmt.kind {
        FormatKind::SymInt | FormatKind::RowScaled => {
            let sb = fmt.scale.bytes();
            let (lo, hi) = (fmt.qmin() as f32, fmt.qmax() as f32);
            let mut codes = vec![0u8; x.len()];
            for (gi, (xs, cs)) in x.chunks_exact(g).zip(codes.chunks_exact_mut(g)).enumerate() {
                let absmax = xs.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let scale = store_scale(fmt, row, gi, absmax / hi, &mut s[gi * sb..(gi + 1) * sb])?;
                for (c, &v) in cs.iter_mut().zip(xs) {
                    *c = quantize_value(v, scale, lo, hi) as i8 as u8;
                }
            }
            pack_bits(&codes, fmt.bits, q);
        }
        FormatKind::Affine => {
            let hi = fmt.qmax() as f32;
            let mut codes = vec![0u8; x.len()];
            for (gi, (xs, cs)) in x.chunks_exact(g).zip(codes.chunks_exact_mut(g)).enumerate() {
                let mn = xs.iter().fold(f32::INFINITY, |m, &v| m.min(v));
                let mx = xs.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
                let d = store_scale(fmt, row, gi, (mx - mn) / hi, &mut s[gi * 4..gi * 4 + 2])?;
                let m = store_scale(fmt, row, gi, mn, &mut s[gi * 4 + 2..gi * 4 + 4])?;
                for (c, &v) in cs.iter_mut().zip(xs) {
                    *c = quantize_value(v - m, d, 0.0, hi) as u8;
                }
            }
            pack_bits(&codes, fmt.bits, q);
        }
        FormatKind::Dense => {
            let dt = fmt.dtype.expect("dense formats have a dtype");
            for (col, (&v, o)) in x
                .iter()
                .zip(q.chunks_exact_mut((dt.bits() / 8) as usize))
                .enumerate()
            {
                let overflow = || FormatError::ValueOverflow {
                    format: fmt.name.clone(),
                    row,
                    col,
                    value: v,
                };
                match dt {
                    DenseType::F32 => o.copy_from_slice(&v.to_le_bytes()),
                    DenseType::F16 => {
                        let h = f16::from_f32(v);
                        if !h.is_finite() {
                            return Err(overflow());
                        }
                        o.copy_from_slice(&h.to_bits().to_le_bytes());
                    }
                    DenseType::Bf16 => {
                        let h = bf16::from_f32(v);
                        if !h.is_finite() {
                            return Err(overflow());
                        }
                        o.copy_from_slice(&h.to_bits().to_le_bytes());
                    }
                }
            }
        }
    }
    Ok(())
}

/// Decodes row `r` of `payload` (already size-checked against `layout`) into `out` (K floats).
pub fn decode_row(fmt: &Format, layout: &Layout, payload: &[u8], r: usize, out: &mut [f32]) {
    let q = &payload[layout.q_row(r)];
    let s = &payload[layout.s_row(r)];
    decode_row_planes(fmt, layout, q, s, out);
}

/// Decodes one row from its quant-plane bytes `q` and scale-plane bytes `s`.
pub fn decode_row_planes(fmt: &Format, layout: &Layout, q: &[u8], s: &[u8], out: &mut [f32]) {
    let g = layout.group_len;
    match fmt.kind {
        FormatKind::SymInt | FormatKind::RowScaled => {
            let sb = fmt.scale.bytes();
            let mut codes = vec![0u8; out.len()];
            unpack_bits(q, fmt.bits, &mut codes);
            for (gi, (os, cs)) in out
                .chunks_exact_mut(g)
                .zip(codes.chunks_exact(g))
                .enumerate()
            {
                let scale = load_scale(fmt.scale, &s[gi * sb..]);
                for (o, &c) in os.iter_mut().zip(cs) {
                    *o = scale * sign_extend(c, fmt.bits) as f32;
                }
            }
        }
        FormatKind::Affine => {
            let mut codes = vec![0u8; out.len()];
            unpack_bits(q, fmt.bits, &mut codes);
            for (gi, (os, cs)) in out
                .chunks_exact_mut(g)
                .zip(codes.chunks_exact(g))
                .enumerate()
            {
                let d = load_scale(ScaleType::F16, &s[gi * 4..]);
                let m = load_scale(ScaleType::F16, &s[gi * 4 + 2..]);
                for (o, &c) in os.iter_mut().zip(cs) {
                    *o = d * c as f32 + m;
                }
            }
        }
        FormatKind::Dense => match fmt.dtype.expect("dense formats have a dtype") {
            DenseType::F32 => {
                for (o, b) in out.iter_mut().zip(q.chunks_exact(4)) {
                    *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            DenseType::F16 => {
                for (o, b) in out.iter_mut().zip(q.chunks_exact(2)) {
                    *o = f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
                }
            }
            DenseType::Bf16 => {
                for (o, b) in out.iter_mut().zip(q.chunks_exact(2)) {
                    *o = bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
                }
            }
        },
    }
}

/// Encodes a row-major `[n, k]` weight into `fmt` (rayon-parallel over rows).
pub fn encode(fmt: &Format, values: &[f32], n: usize, k: usize) -> Result<Vec<u8>> {
    let layout = Layout::new(fmt, n, k)?;
    let mut out = vec![0u8; layout.total_bytes];
    encode_into(fmt, values, n, k, &mut out)?;
    Ok(out)
}

/// Like [`encode`], into a caller's buffer of exactly the layout's size (padding is zeroed).
pub fn encode_into(fmt: &Format, values: &[f32], n: usize, k: usize, out: &mut [u8]) -> Result<()> {
    let layout = Layout::new(fmt, n, k)?;
    check_values(values, n, k)?;
    layout.check_payload(fmt, out.len())?;
    if n == 0 || k == 0 {
        out.fill(0);
        return Ok(());
    }
    let (qp, rest) = out.split_at_mut(layout.s_offset);
    let sp = &mut rest[..n * layout.s_row_bytes];
    qp[n * layout.q_row_bytes..].fill(0);
    let qrows = qp[..n * layout.q_row_bytes].par_chunks_mut(layout.q_row_bytes);
    if layout.s_row_bytes == 0 {
        qrows
            .zip(values.par_chunks(k))
            .enumerate()
            .try_for_each(|(r, (q, x))| encode_row(fmt, &layout, r, x, q, &mut []))
    } else {
        qrows
            .zip(sp.par_chunks_mut(layout.s_row_bytes))
            .zip(values.par_chunks(k))
            .enumerate()
            .try_for_each(|(r, ((q, s), x))| encode_row(fmt, &layout, r, x, q, s))
    }
}

/// Decodes a whole `[n, k]` payload to row-major f32 (rayon-parallel over rows).
pub fn decode(fmt: &Format, payload: &[u8], n: usize, k: usize) -> Result<Vec<f32>> {
    decode_rows(fmt, payload, n, k, 0..n)
}

/// Decodes rows `rows` of an `[n, k]` payload to row-major f32.
pub fn decode_rows(
    fmt: &Format,
    payload: &[u8],
    n: usize,
    k: usize,
    rows: Range<usize>,
) -> Result<Vec<f32>> {
    let layout = Layout::new(fmt, n, k)?;
    layout.check_payload(fmt, payload.len())?;
    if rows.end > n || rows.start > rows.end {
        return Err(FormatError::RowOutOfRange {
            row: rows.end.max(rows.start),
            n,
        });
    }
    let mut out = vec![0f32; rows.len() * k];
    if k == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(k)
        .enumerate()
        .for_each(|(i, o)| decode_row(fmt, &layout, payload, rows.start + i, o));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::registry::{format, registry};

    fn ramp(n: usize, k: usize) -> Vec<f32> {
        (0..n * k)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 137.0)
            .collect()
    }

    /// The shifted rounding is `round_ties_even` on every value near every integer and
    /// half-integer of the codes' range (and past it, below 2^22), the ties included.
    #[test]
    fn the_shifted_rounding_is_round_ties_even() {
        let mut checked = 0;
        let mut check = |t: f32| {
            assert_eq!(round_half_even_small(t), t.round_ties_even(), "{t}");
            checked += 1;
        };
        for i in -1024..=1024 {
            for base in [i as f32, i as f32 + 0.5] {
                let (mut lo, mut hi) = (base, base);
                for _ in 0..64 {
                    check(lo);
                    check(hi);
                    lo = lo.next_down();
                    hi = hi.next_up();
                }
            }
        }
        for e in 0..22 {
            let p = (1u32 << e) as f32;
            for t in [p, -p, p + 0.5, -p - 0.5, p.next_down(), -p.next_down()] {
                check(t);
            }
        }
        assert!(checked > 500_000);
    }

    #[test]
    fn pack_unpack_round_trip_every_width() {
        for bits in 2..=8u32 {
            let vals: Vec<u8> = (0..64u32)
                .map(|i| ((i * 37 + 5) % (1 << bits)) as u8)
                .collect();
            let mut bytes = vec![0u8; 64 * bits as usize / 8];
            pack_bits(&vals, bits, &mut bytes);
            let mut back = vec![0u8; 64];
            unpack_bits(&bytes, bits, &mut back);
            assert_eq!(vals, back, "bits {bits}");
        }
    }

    #[test]
    fn every_format_round_trips_within_its_resolution() {
        let (n, k) = (5, 128);
        let x = ramp(n, k);
        for fmt in registry().iter() {
            let p = encode(fmt, &x, n, k).unwrap();
            assert_eq!(p.len(), Layout::new(fmt, n, k).unwrap().total_bytes);
            let y = decode(fmt, &p, n, k).unwrap();
            let tol = match fmt.kind {
                FormatKind::Dense => 4.0 / 256.0 * 4.0,
                _ => 4.0 / fmt.qmax() as f32,
            };
            for (a, b) in x.iter().zip(&y) {
                assert!((a - b).abs() <= tol, "{}: {a} vs {b}", fmt.name);
            }
        }
    }

    #[test]
    fn bad_inputs_are_sentences() {
        let f = format("q4_g64").unwrap();
        let e = encode(f, &[0.0; 100], 2, 50).unwrap_err();
        assert!(matches!(e, FormatError::GroupDoesNotDivide { .. }), "{e}");
        let e = encode(f, &[0.0; 100], 2, 64).unwrap_err();
        assert!(
            matches!(
                e,
                FormatError::ValueCount {
                    expected: 128,
                    actual: 100,
                    ..
                }
            ),
            "{e}"
        );
        let mut x = vec![0.5; 128];
        x[70] = f32::NAN;
        let e = encode(f, &x, 2, 64).unwrap_err();
        assert!(
            matches!(e, FormatError::NonFinite { row: 1, col: 6, .. }),
            "{e}"
        );
        x[70] = f32::INFINITY;
        assert!(encode(f, &x, 2, 64).is_err());
        let e = decode(f, &[0u8; 10], 2, 64).unwrap_err();
        assert!(matches!(e, FormatError::PayloadSize { .. }), "{e}");
        assert!(e.to_string().contains("takes 68 bytes"), "{e}");
        let e = encode(f, &[1.0e9; 64], 1, 64).unwrap_err();
        assert!(matches!(e, FormatError::ScaleOverflow { .. }), "{e}");
        let e = encode(format("f16").unwrap(), &[1.0e6], 1, 1).unwrap_err();
        assert!(matches!(e, FormatError::ValueOverflow { .. }), "{e}");
    }

    #[test]
    fn zero_groups_encode_to_zero() {
        for name in ["q4_g64", "q8_g32", "i8_row", "q4_1_g32"] {
            let f = format(name).unwrap();
            let p = encode(f, &[0.0; 64], 1, 64).unwrap();
            assert!(
                decode(f, &p, 1, 64).unwrap().iter().all(|&v| v == 0.0),
                "{name}"
            );
        }
    }
}
