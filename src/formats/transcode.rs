//! Transcode a `q8_g32` payload to a narrower symmetric group format (`q4_g64`, `q6_g64`, or
//! any `sym_int` format with f16 scales whose group is a multiple of 32) with clipped scales.
//!
//! # The arithmetic (the GPU twin must reproduce these bytes exactly)
//!
//! All arithmetic is IEEE binary32 with round-to-nearest-even, and no fused multiply-add.
//! For each target group of `G` elements (spanning `G / 32` whole source groups) of a row:
//!
//! 1. `v[i] = f32(d) * f32(c[i])`: the source group's f16 scale `d` times the int8 code (exact).
//! 2. `absmax = max_i |v[i]|`; `base = absmax / qmax` with `qmax = 2^(bits-1) - 1`.
//! 3. For `j = 0..25`: `r[j] = f32(70 + 2j) / 100.0` (so `r[15] = 1.0` exactly, `r` spans
//!    0.70..=1.18 in steps of 0.02); `s[j] = f32(f16_rne(base * r[j]))`: the product rounded
//!    to f32, then to the nearest-even f16, then widened. A candidate whose f16 is infinite is
//!    skipped (if `j = 15` is infinite, the group cannot be stored: an error).
//! 4. `q[j][i] = 0` if `s[j] == 0`, else `round_half_even(clamp(v[i] / s[j], -2^(bits-1), qmax))`.
//! 5. `e = v[i] - s[j] * q[j][i]` (the product is exact); `err[j]` sums `e * e` in a fixed order:
//!    sixteen partial sums `a[l]`, `l = i % 16`, each accumulated in increasing `i` from `0.0`;
//!    then `b[l] = a[l] + a[l + 8]` for `l < 8`, and
//!    `err = ((b0 + b4) + (b2 + b6)) + ((b1 + b5) + (b3 + b7))`.
//! 6. The winner starts as `j = 15` (ratio 1.0); then `j` ascends over `0..25` and a candidate
//!    replaces the winner only if its `err` is strictly smaller. So ties keep ratio 1.0, then
//!    the smallest ratio. The group stores `f16(s[winner])` and `q[winner][..]`.
//!
//! With `j = 15`, steps 2-4 are exactly the round-to-nearest encoder of [`super::codec`], so a
//! transcoded group's error is never larger than round-to-nearest's (as summed in step 5).
//!
//! The host path is parallel over rows (rayon) and streams: it reads the source in place and
//! writes the target rows directly, with per-row scratch only.

use half::f16;
use rayon::prelude::*;

// Round-half-even of a clamped code (`|t| < 2^22`).
use super::codec::{pack_bits, round_half_even_small as rne};
use super::error::{FormatError, Result};
use super::layout::Layout;
use super::registry::{format, Format, FormatKind, ScaleType};

/// Number of clipping ratios tried per group.
pub const N_RATIOS: usize = 25;
/// Index of ratio 1.0 (the round-to-nearest scale).
pub const RATIO_ONE: usize = 15;

/// The clipping ratios `f32(70 + 2j) / 100`, `j = 0..25`.
pub fn clip_ratios() -> [f32; N_RATIOS] {
    std::array::from_fn(|j| (70 + 2 * j) as f32 / 100.0)
}

/// Whether `target` can be produced from `q8_g32` by [`transcode_q8_g32`].
pub fn check_target(target: &Format) -> Result<()> {
    let bad = |why: &str| {
        Err(FormatError::UnsupportedTranscode {
            from: "q8_g32".into(),
            to: target.name.clone(),
            why: why.into(),
        })
    };
    if target.kind != FormatKind::SymInt || target.scale != ScaleType::F16 {
        return bad("the target must be a symmetric integer format with f16 scales");
    }
    if !target.group.is_multiple_of(32) {
        return bad("the target's group must span whole source groups of 32");
    }
    Ok(())
}

#[inline(always)]
fn quant(v: f32, s: f32, lo: f32, hi: f32) -> f32 {
    let t = v / s;
    let t = if t < lo { lo } else { t };
    let t = if t > hi { hi } else { t };
    rne(t)
}

/// Step 5's error of scale `s` (non-zero) over one group, in the fixed summation order.
#[inline(always)]
fn group_err_scalar(v: &[f32], s: f32, lo: f32, hi: f32) -> f32 {
    let mut a = [0f32; 16];
    for c in v.chunks_exact(16) {
        for l in 0..16 {
            let q = quant(c[l], s, lo, hi);
            let e = c[l] - s * q;
            a[l] += e * e;
        }
    }
    tree16(&a)
}

/// The fixed reduction of sixteen partial sums: `b[l] = a[l] + a[l+8]`, then
/// `((b0 + b4) + (b2 + b6)) + ((b1 + b5) + (b3 + b7))`.
#[inline(always)]
fn tree16(a: &[f32; 16]) -> f32 {
    let b: [f32; 8] = std::array::from_fn(|l| a[l] + a[l + 8]);
    ((b[0] + b[4]) + (b[2] + b[6])) + ((b[1] + b[5]) + (b[3] + b[7]))
}

/// [`group_err_scalar`] for `B` scales at once, eight lanes at a time: two accumulators per
/// candidate (even and odd chunks of 8) hold its sixteen partial sums, so the bits are the same.
///
/// The quotient `t = x / s` is first estimated as `t' = x * (1/s)`, within `|t| * 2^-22` of
/// `t`. Where `|t| <= 256` that is below `2^-14`, and clamping is 1-Lipschitz, so wherever
/// `clamp(t')` lies more than `2^-12` from a half-integer it rounds exactly as `clamp(t)`;
/// where `|t| > 256` both clamp to the same bound (an integer, far from any tie). Only
/// vectors with a lane too close to a tie are recomputed with the exact division. Rounding is
/// the instruction's round-to-nearest-even, the same function as the magic-number `rne`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn group_err_avx2<const B: usize>(v: &[f32], s: &[f32; B], lo: f32, hi: f32) -> [f32; B] {
    use std::arch::x86_64::*;
    let vlo = _mm256_set1_ps(lo);
    let vhi = _mm256_set1_ps(hi);
    let near_tie = _mm256_set1_ps(0.5 - 1.0 / 4096.0);
    let abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
    let vs: [__m256; B] = std::array::from_fn(|c| _mm256_set1_ps(s[c]));
    let inv: [__m256; B] = std::array::from_fn(|c| _mm256_set1_ps(1.0 / s[c]));
    let mut acc = [[_mm256_setzero_ps(); 2]; B];
    for (ci, ch) in v.chunks_exact(8).enumerate() {
        // SAFETY: `ch` holds exactly 8 floats.
        let x = _mm256_loadu_ps(ch.as_ptr());
        for c in 0..B {
            let tp = _mm256_mul_ps(x, inv[c]);
            // For non-NaN t these are exactly the clamps of `quant`.
            let t = _mm256_min_ps(_mm256_max_ps(tp, vlo), vhi);
            let mut q = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(t);
            let d = _mm256_and_ps(_mm256_sub_ps(t, q), abs_mask);
            if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(d, near_tie)) != 0 {
                let t = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(x, vs[c]), vlo), vhi);
                q = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(t);
            }
            // s * q is exact (an f16 times a small integer), so the fused form rounds once,
            // exactly like `x - s * q`.
            let e = _mm256_fnmadd_ps(vs[c], q, x);
            acc[c][ci & 1] = _mm256_add_ps(acc[c][ci & 1], _mm256_mul_ps(e, e));
        }
    }
    std::array::from_fn(|c| tree8_m256(_mm256_add_ps(acc[c][0], acc[c][1])))
}

/// [`tree16`]'s reduction after its first step: `b` holds `b[l] = a[l] + a[l+8]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn tree8_m256(b: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    // c[l] = b[l] + b[l+4]; d = (c0 + c2, c1 + c3); d0 + d1.
    let c = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps::<1>(b));
    let d = _mm_add_ps(c, _mm_movehl_ps(c, c));
    _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps::<1>(d, d)))
}

/// [`group_err_avx2`] sixteen lanes at a time (lane `l` is partial sum `a[l]`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2")]
unsafe fn group_err_avx512<const B: usize>(v: &[f32], s: &[f32; B], lo: f32, hi: f32) -> [f32; B] {
    use std::arch::x86_64::*;
    let vlo = _mm512_set1_ps(lo);
    let vhi = _mm512_set1_ps(hi);
    let near_tie = _mm512_set1_ps(0.5 - 1.0 / 4096.0);
    let vs: [__m512; B] = std::array::from_fn(|c| _mm512_set1_ps(s[c]));
    let inv: [__m512; B] = std::array::from_fn(|c| _mm512_set1_ps(1.0 / s[c]));
    let mut acc = [_mm512_setzero_ps(); B];
    for ch in v.chunks_exact(16) {
        // SAFETY: `ch` holds exactly 16 floats.
        let x = _mm512_loadu_ps(ch.as_ptr());
        for c in 0..B {
            let tp = _mm512_mul_ps(x, inv[c]);
            let t = _mm512_min_ps(_mm512_max_ps(tp, vlo), vhi);
            let mut q =
                _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(t);
            let d = _mm512_abs_ps(_mm512_sub_ps(t, q));
            if _mm512_cmp_ps_mask::<_CMP_GT_OQ>(d, near_tie) != 0 {
                let t = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(x, vs[c]), vlo), vhi);
                q = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(t);
            }
            let e = _mm512_fnmadd_ps(vs[c], q, x);
            acc[c] = _mm512_add_ps(acc[c], _mm512_mul_ps(e, e));
        }
    }
    std::array::from_fn(|c| {
        let b = _mm256_add_ps(
            _mm512_castps512_ps256(acc[c]),
            _mm512_extractf32x8_ps::<1>(acc[c]),
        );
        tree8_m256(b)
    })
}

/// Step 4's codes for one group with scale `s` (finite, non-zero), eight lanes at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn group_codes_avx2(v: &[f32], s: f32, lo: f32, hi: f32, out: &mut [u8]) {
    use std::arch::x86_64::*;
    let vlo = _mm256_set1_ps(lo);
    let vhi = _mm256_set1_ps(hi);
    let magic = _mm256_set1_ps(12582912.0);
    let vs = _mm256_set1_ps(s);
    for (ch, o) in v.chunks_exact(8).zip(out.chunks_exact_mut(8)) {
        let x = _mm256_loadu_ps(ch.as_ptr());
        let t = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(x, vs), vlo), vhi);
        let q = _mm256_cvtps_epi32(_mm256_sub_ps(_mm256_add_ps(t, magic), magic));
        let mut qi = [0i32; 8];
        _mm256_storeu_si256(qi.as_mut_ptr() as *mut __m256i, q);
        for l in 0..8 {
            o[l] = qi[l] as i8 as u8;
        }
    }
}

/// Candidates evaluated together by the AVX2 path (divides `N_RATIOS`).
const BATCH: usize = 5;

/// Step 5's errors of all candidates (each `s[j]` a finite, non-zero f16 value).
#[inline(always)]
fn all_errs(
    v: &[f32],
    s: &[f32; N_RATIOS],
    lo: f32,
    hi: f32,
    avx2: bool,
    avx512: bool,
) -> [f32; N_RATIOS] {
    #[cfg(target_arch = "x86_64")]
    {
        if avx2 {
            let mut out = [0f32; N_RATIOS];
            for b in 0..N_RATIOS / BATCH {
                let sb: &[f32; BATCH] = s[BATCH * b..BATCH * b + BATCH].try_into().unwrap();
                // SAFETY: `avx2` is only true where the CPU reports AVX2, `avx512` where it
                // reports AVX-512F.
                let e = unsafe {
                    if avx512 {
                        group_err_avx512::<BATCH>(v, sb, lo, hi)
                    } else {
                        group_err_avx2::<BATCH>(v, sb, lo, hi)
                    }
                };
                out[BATCH * b..BATCH * b + BATCH].copy_from_slice(&e);
            }
            return out;
        }
    }
    let _ = (avx2, avx512);
    std::array::from_fn(|j| group_err_scalar(v, s[j], lo, hi))
}

fn zero_err(v: &[f32]) -> f32 {
    let mut a = [0f32; 16];
    for c in v.chunks_exact(16) {
        for l in 0..16 {
            a[l] += c[l] * c[l];
        }
    }
    tree16(&a)
}

/// Picks the winning scale for one group of decoded values; `None` if ratio 1.0 overflows f16.
/// The 25 candidate scales of step 3 for `base`: f16 bits and their f32 values.
#[inline(always)]
fn candidates(
    base: f32,
    ratios: &[f32; N_RATIOS],
    f16c: bool,
) -> ([u16; N_RATIOS], [f32; N_RATIOS]) {
    let mut p = [0f32; 32];
    for j in 0..N_RATIOS {
        p[j] = base * ratios[j];
    }
    let mut h = [0u16; 32];
    let mut f = [0f32; 32];
    #[cfg(target_arch = "x86_64")]
    {
        if f16c {
            // SAFETY: `f16c` is only true where the CPU reports F16C and AVX.
            unsafe { f16_round_trip_f16c(&p, &mut h, &mut f) };
            return (
                h[..N_RATIOS].try_into().unwrap(),
                f[..N_RATIOS].try_into().unwrap(),
            );
        }
    }
    let _ = f16c;
    for j in 0..N_RATIOS {
        let x = f16::from_f32(p[j]);
        h[j] = x.to_bits();
        f[j] = x.to_f32();
    }
    (
        h[..N_RATIOS].try_into().unwrap(),
        f[..N_RATIOS].try_into().unwrap(),
    )
}

/// f32 -> f16 (round to nearest even) -> f32 for 32 values with the F16C instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_round_trip_f16c(p: &[f32; 32], h: &mut [u16; 32], f: &mut [f32; 32]) {
    use std::arch::x86_64::*;
    for i in 0..4 {
        let x = _mm256_loadu_ps(p.as_ptr().add(8 * i));
        let hx = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
        _mm_storeu_si128(h.as_mut_ptr().add(8 * i) as *mut __m128i, hx);
        _mm256_storeu_ps(f.as_mut_ptr().add(8 * i), _mm256_cvtph_ps(hx));
    }
}

/// Steps 2-6 for one group of decoded values: the winning scale's f16 bits and f32 value, or
/// `None` if the ratio-1.0 scale overflows f16.
/// `max |v|` (values are finite).
#[inline(always)]
fn absmax(v: &[f32]) -> f32 {
    let mut m = [0f32; 8];
    for c in v.chunks_exact(8) {
        for l in 0..8 {
            let a = c[l].abs();
            m[l] = if a > m[l] { a } else { m[l] };
        }
    }
    m.iter().fold(0f32, |a, &b| if b > a { b } else { a })
}

#[inline(always)]
fn best_scale(
    v: &[f32],
    ratios: &[f32; N_RATIOS],
    lo: f32,
    hi: f32,
    avx2: bool,
    avx512: bool,
) -> Option<(u16, f32)> {
    let base = absmax(v) / hi;
    let (hb, sf) = candidates(base, ratios, avx2);
    if !sf[RATIO_ONE].is_finite() {
        return None;
    }
    // The candidates grow with j (f16 rounding is monotone), so all are finite and non-zero
    // exactly when the first is non-zero and the last finite: the common case.
    let errs = if sf[0] != 0.0 && sf[N_RATIOS - 1].is_finite() {
        all_errs(v, &sf, lo, hi, avx2, avx512)
    } else {
        // Zero or infinite candidates are evaluated apart; 1.0 stands in for them in the batch.
        let usable = |x: f32| x.is_finite() && x != 0.0;
        let s: [f32; N_RATIOS] = std::array::from_fn(|j| if usable(sf[j]) { sf[j] } else { 1.0 });
        let mut errs = all_errs(v, &s, lo, hi, avx2, avx512);
        for j in 0..N_RATIOS {
            if !sf[j].is_finite() {
                errs[j] = f32::INFINITY;
            } else if sf[j] == 0.0 {
                errs[j] = zero_err(v);
            }
        }
        errs
    };
    // Step 6: start at ratio 1.0, ascend, replace only on a strictly smaller error. That is:
    // the first index of the minimum if the minimum is below ratio 1.0's error, else 15.
    let m = errs
        .iter()
        .fold(f32::INFINITY, |a, &b| if b < a { b } else { a });
    let best = if m < errs[RATIO_ONE] {
        errs.iter().position(|&e| e == m).unwrap()
    } else {
        RATIO_ONE
    };
    Some((hb[best], sf[best]))
}

fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx2()
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Scratch for one row.
struct RowScratch {
    /// Whether the CPU has AVX2, FMA and F16C (then the error sums run eight lanes at a time and the
    /// f16 roundings use F16C; same bits).
    avx2: bool,
    /// Whether the CPU has AVX-512F and DQ (the error sums then run sixteen lanes at a time).
    avx512: bool,
    v: Vec<f32>,
    codes: Vec<u8>,
}

#[inline(always)]
fn transcode_row_body(
    target: &Format,
    row: usize,
    src_q: &[u8],
    src_s: &[u8],
    dst_q: &mut [u8],
    dst_s: &mut [u8],
    scratch: &mut RowScratch,
) -> Result<()> {
    let k = src_q.len();
    let g = target.group;
    let (lo, hi) = (target.qmin() as f32, target.qmax() as f32);
    let ratios = clip_ratios();
    let avx2 = scratch.avx2;
    let scratch_avx512 = scratch.avx512;
    let v = &mut scratch.v;
    v.resize(k, 0.0);
    for (sg, (vs, cs)) in v
        .chunks_exact_mut(32)
        .zip(src_q.chunks_exact(32))
        .enumerate()
    {
        let d = f16::from_bits(u16::from_le_bytes([src_s[2 * sg], src_s[2 * sg + 1]])).to_f32();
        for (o, &c) in vs.iter_mut().zip(cs) {
            *o = d * (c as i8) as f32;
        }
    }
    let codes = &mut scratch.codes;
    codes.resize(k, 0);
    for (gi, (vs, cs)) in v.chunks_exact(g).zip(codes.chunks_exact_mut(g)).enumerate() {
        let Some(h) = best_scale(vs, &ratios, lo, hi, avx2, scratch_avx512) else {
            let absmax = vs.iter().fold(0f32, |m, x| m.max(x.abs()));
            return Err(FormatError::ScaleOverflow {
                format: target.name.clone(),
                row,
                group: gi,
                scale: absmax / hi,
                scale_type: "f16".into(),
            });
        };
        let (h, s) = h;
        dst_s[2 * gi..2 * gi + 2].copy_from_slice(&h.to_le_bytes());
        #[cfg(target_arch = "x86_64")]
        if avx2 && s != 0.0 {
            // SAFETY: `avx2` is only true where the CPU reports AVX2.
            unsafe { group_codes_avx2(vs, s, lo, hi, cs) };
            continue;
        }
        for (c, &x) in cs.iter_mut().zip(vs) {
            *c = if s == 0.0 {
                0
            } else {
                // SAFETY: `quant` returns an integer in [lo, hi], inside i32.
                (unsafe { quant(x, s, lo, hi).to_int_unchecked::<i32>() }) as i8 as u8
            };
        }
    }
    pack_bits(codes, target.bits, dst_q);
    Ok(())
}

/// [`transcode_row_body`] compiled for AVX-512 (the helpers inline into it, and the plain
/// loops around them vectorise wider). Same arithmetic, same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma,f16c")]
unsafe fn transcode_row_avx512(
    target: &Format,
    row: usize,
    src_q: &[u8],
    src_s: &[u8],
    dst_q: &mut [u8],
    dst_s: &mut [u8],
    scratch: &mut RowScratch,
) -> Result<()> {
    transcode_row_body(target, row, src_q, src_s, dst_q, dst_s, scratch)
}

/// [`transcode_row_body`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn transcode_row_avx2(
    target: &Format,
    row: usize,
    src_q: &[u8],
    src_s: &[u8],
    dst_q: &mut [u8],
    dst_s: &mut [u8],
    scratch: &mut RowScratch,
) -> Result<()> {
    transcode_row_body(target, row, src_q, src_s, dst_q, dst_s, scratch)
}

fn transcode_row(
    target: &Format,
    row: usize,
    src_q: &[u8],
    src_s: &[u8],
    dst_q: &mut [u8],
    dst_s: &mut [u8],
    scratch: &mut RowScratch,
) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the flags are only set where the CPU reports the features.
        if scratch.avx512 {
            return unsafe {
                transcode_row_avx512(target, row, src_q, src_s, dst_q, dst_s, scratch)
            };
        }
        if scratch.avx2 {
            return unsafe { transcode_row_avx2(target, row, src_q, src_s, dst_q, dst_s, scratch) };
        }
    }
    transcode_row_body(target, row, src_q, src_s, dst_q, dst_s, scratch)
}

/// Transcodes one row: `src_q`/`src_s` are the row's q8_g32 quant bytes (K) and scale bytes
/// (K/32 f16); `dst_q`/`dst_s` the target row's planes. `row` only names the row in errors.
pub fn transcode_q8_g32_row(
    target: &Format,
    row: usize,
    src_q: &[u8],
    src_s: &[u8],
    dst_q: &mut [u8],
    dst_s: &mut [u8],
) -> Result<()> {
    check_target(target)?;
    let k = src_q.len();
    let tl = Layout::new(target, 1, k)?;
    if src_s.len() != k / 32 * 2
        || !k.is_multiple_of(32)
        || dst_q.len() != tl.q_row_bytes
        || dst_s.len() != tl.s_row_bytes
    {
        return Err(FormatError::PayloadSize {
            format: target.name.clone(),
            n: 1,
            k,
            expected: tl.q_row_bytes + tl.s_row_bytes,
            actual: dst_q.len() + dst_s.len(),
        });
    }
    let mut scratch = RowScratch {
        avx2: has_avx2(),
        avx512: has_avx512(),
        v: Vec::new(),
        codes: Vec::new(),
    };
    transcode_row(target, row, src_q, src_s, dst_q, dst_s, &mut scratch)
}

/// Transcodes a whole `[n, k]` q8_g32 payload to `target`, returning the target payload.
pub fn transcode_q8_g32(src: &[u8], n: usize, k: usize, target: &Format) -> Result<Vec<u8>> {
    check_target(target)?;
    let tl = Layout::new(target, n, k)?;
    let mut out = vec![0u8; tl.total_bytes];
    transcode_q8_g32_into(src, n, k, target, &mut out)?;
    Ok(out)
}

/// Like [`transcode_q8_g32`], into a caller's buffer of exactly the target layout's size
/// (so a loader can plan and allocate the target before reading the source).
pub fn transcode_q8_g32_into(
    src: &[u8],
    n: usize,
    k: usize,
    target: &Format,
    dst: &mut [u8],
) -> Result<()> {
    check_target(target)?;
    let q8 = format("q8_g32")?;
    let sl = Layout::new(q8, n, k)?;
    sl.check_payload(q8, src.len())?;
    let tl = Layout::new(target, n, k)?;
    tl.check_payload(target, dst.len())?;
    if n == 0 || k == 0 {
        dst.fill(0);
        return Ok(());
    }
    let (dq, rest) = dst.split_at_mut(tl.s_offset);
    dq[n * tl.q_row_bytes..].fill(0);
    let dq = &mut dq[..n * tl.q_row_bytes];
    let ds = &mut rest[..n * tl.s_row_bytes];
    dq.par_chunks_mut(tl.q_row_bytes)
        .zip(ds.par_chunks_mut(tl.s_row_bytes))
        .enumerate()
        .try_for_each_init(
            || RowScratch {
                avx2: has_avx2(),
                avx512: has_avx512(),
                v: Vec::with_capacity(k),
                codes: Vec::with_capacity(k),
            },
            |scratch, (r, (q, s))| {
                transcode_row(
                    target,
                    r,
                    &src[sl.q_row(r)],
                    &src[sl.s_row(r)],
                    q,
                    s,
                    scratch,
                )
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::codec::{decode, encode};

    #[test]
    fn ratios_are_evenly_spaced_and_contain_one() {
        let r = clip_ratios();
        assert_eq!(r[RATIO_ONE], 1.0);
        assert_eq!(r[0], 0.70);
        assert_eq!(r[24], 1.18);
        for w in r.windows(2) {
            assert!((w[1] - w[0] - 0.02).abs() < 1e-6);
        }
    }

    #[test]
    fn magic_rounding_is_round_half_even() {
        let mut t = -130.0f32;
        while t < 130.0 {
            assert_eq!(rne(t), t.round_ties_even(), "{t}");
            t += 0.125 / 3.0;
        }
        for t in [-0.5f32, 0.5, 1.5, 2.5, -2.5, 126.5, -127.5] {
            assert_eq!(rne(t), t.round_ties_even());
        }
    }

    /// The SIMD paths must give the scalar definition's bits, also on values built to sit at
    /// or next to rounding ties.
    #[test]
    fn simd_paths_match_the_scalar_definition() {
        let ratios = clip_ratios();
        let mut st = 0x1234_5678_9abc_def0u64;
        let mut rnd = || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        let (avx2, avx512) = (has_avx2(), has_avx512());
        for (bits, case) in (0..600).map(|i| ([4u32, 6, 5, 3][i % 4], i)) {
            let hi = ((1 << (bits - 1)) - 1) as f32;
            let lo = -hi - 1.0;
            let d = f16::from_f32(0.001 + (rnd() % 1000) as f32 * 1e-5).to_f32();
            let mut v: Vec<f32> = (0..64)
                .map(|_| d * ((rnd() % 255) as i32 - 127) as f32)
                .collect();
            if case % 3 == 0 {
                // Put values exactly on half-integers of some candidate scale.
                let base = absmax(&v) / hi;
                let s = f16::from_f32(base * ratios[(rnd() % 25) as usize]).to_f32();
                for x in v.iter_mut().step_by(3) {
                    let k = (rnd() % 15) as f32 - 7.0;
                    *x = s * (k + 0.5);
                    if case % 2 == 0 {
                        *x = f32::from_bits(x.to_bits() + 1);
                    }
                }
            }
            let reference = best_scale(&v, &ratios, lo, hi, false, false);
            assert_eq!(
                best_scale(&v, &ratios, lo, hi, avx2, false),
                reference,
                "avx2, case {case}"
            );
            assert_eq!(
                best_scale(&v, &ratios, lo, hi, avx2, avx512),
                reference,
                "avx512, case {case}"
            );
            // Any f16 scales (the SIMD paths rely on `s * q` being exact).
            let scales = ratios.map(|r| f16::from_f32(r * 0.01 + 0.003).to_f32());
            let scalar_errs = all_errs(&v, &scales, lo, hi, false, false);
            let simd_errs = all_errs(&v, &scales, lo, hi, avx2, avx512);
            assert_eq!(
                scalar_errs.map(f32::to_bits),
                simd_errs.map(f32::to_bits),
                "case {case}"
            );
        }
    }

    #[test]
    fn clipping_beats_round_to_nearest_on_an_outlier_group() {
        let q8 = format("q8_g32").unwrap();
        let q4 = format("q4_g64").unwrap();
        let k = 64;
        let mut x: Vec<f32> = (0..k)
            .map(|i| ((i * 37 % 64) as f32 - 32.0) / 32.0)
            .collect();
        x[5] = 1.3;
        let src = encode(q8, &x, 1, k).unwrap();
        let v = decode(q8, &src, 1, k).unwrap();
        let t = transcode_q8_g32(&src, 1, k, q4).unwrap();
        let rtn = encode(q4, &v, 1, k).unwrap();
        let err = |p: &[u8]| -> f64 {
            decode(q4, p, 1, k)
                .unwrap()
                .iter()
                .zip(&v)
                .map(|(a, b)| ((a - b) as f64).powi(2))
                .sum()
        };
        assert!(err(&t) < err(&rtn), "{} vs {}", err(&t), err(&rtn));
    }

    #[test]
    fn rejects_bad_targets_and_sizes() {
        assert!(matches!(
            transcode_q8_g32(&[], 0, 64, format("q4_1_g32").unwrap()),
            Err(FormatError::UnsupportedTranscode { .. })
        ));
        assert!(matches!(
            transcode_q8_g32(&[0u8; 10], 1, 64, format("q4_g64").unwrap()),
            Err(FormatError::PayloadSize { .. })
        ));
        assert!(matches!(
            transcode_q8_g32(&[0u8; 100], 1, 96, format("q4_g64").unwrap()),
            Err(FormatError::GroupDoesNotDivide { .. })
        ));
    }
}
