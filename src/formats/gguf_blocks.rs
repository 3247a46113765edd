//! GGUF block decoders, and the conversion of a GGUF tensor to an engine format.
//!
//! Block layouts (all little-endian; `f16` is IEEE binary16; "element j" is the j-th value of
//! the block in tensor order):
//!
//! | type | elements/block | bytes | layout | value |
//! |---|---|---|---|---|
//! | F32, F16, BF16 | 1 | 4, 2, 2 | the value | widened to f32 |
//! | Q8_0 | 32 | 34 | `d: f16, qs: [i8; 32]` | `qs[j] * d` |
//! | Q4_0 | 32 | 18 | `d: f16, qs: [u8; 16]` | element j<16: low nibble of `qs[j]`, j>=16: high nibble of `qs[j-16]`; `(nib - 8) * d` |
//! | Q4_1 | 32 | 20 | `d: f16, m: f16, qs: [u8; 16]` | nibbles as Q4_0; `d * nib + m` |
//! | Q5_0 | 32 | 22 | `d: f16, qh: u32, qs: [u8; 16]` | nibbles as Q4_0, bit 4 is bit j of `qh`; `(q - 16) * d` |
//! | Q5_1 | 32 | 24 | `d: f16, m: f16, qh: u32, qs: [u8; 16]` | as Q5_0 without the offset; `d * q + m` |
//! | Q4_K | 256 | 144 | `d: f16, dmin: f16, scales: [u8; 12], qs: [u8; 128]` | 8 sub-blocks of 32 with 6-bit scale `sc` and min `mn`; `(d*sc) * q - (dmin*mn)` |
//! | Q5_K | 256 | 176 | `d, dmin, scales[12], qh: [u8; 32], qs: [u8; 128]` | as Q4_K, bit 4 of element `32*s + l` is bit `s` of `qh[l]` |
//! | Q6_K | 256 | 210 | `ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: f16` | 16 sub-blocks of 16; `(d*sc) * (q - 32)` |
//!
//! K-quant details: in Q4_K/Q5_K the 12 scale bytes hold eight 6-bit (scale, min) pairs: for
//! sub-block `s < 4`, `sc = b[s] & 63`, `mn = b[s+4] & 63`; for `s >= 4`,
//! `sc = (b[s+4] & 15) | ((b[s-4] >> 6) << 4)`, `mn = (b[s+4] >> 4) | ((b[s] >> 6) << 4)`. The
//! 128 `qs` bytes are four runs of 32: run `r` holds sub-block `2r` in its low nibbles and
//! `2r+1` in its high nibbles. In Q6_K each half of 128 elements uses 64 `ql` bytes and 32
//! `qh` bytes: for `l < 32`, elements `l`, `l+32`, `l+64`, `l+96` of the half take the low
//! nibble of `ql[l]`, low of `ql[l+32]`, high of `ql[l]`, high of `ql[l+32]`, and bits
//! `0-1`, `2-3`, `4-5`, `6-7` of `qh[l]` as bits 4-5; sub-block scale `scales[e / 16]`.
//!
//! Arithmetic is f32 with one rounding per operation in the order written (products of the
//! f16 scales with the small integers first), which is what ggml and the `gguf` Python
//! package compute; the fixtures under `tests/fixtures/gguf_blocks/` check it bit for bit.

use half::{bf16, f16};
use rayon::prelude::*;

use super::codec::{encode_row, pack_bits};
use super::error::{FormatError, Result};
use super::layout::Layout;
use super::registry::{Format, FormatKind};

/// GGUF tensor types, with GGUF's type ids.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum GgufType {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
}

impl GgufType {
    /// Every type this enum knows.
    pub const ALL: [GgufType; 32] = [
        Self::F32,
        Self::F16,
        Self::Q4_0,
        Self::Q4_1,
        Self::Q5_0,
        Self::Q5_1,
        Self::Q8_0,
        Self::Q8_1,
        Self::Q2_K,
        Self::Q3_K,
        Self::Q4_K,
        Self::Q5_K,
        Self::Q6_K,
        Self::Q8_K,
        Self::IQ2_XXS,
        Self::IQ2_XS,
        Self::IQ3_XXS,
        Self::IQ1_S,
        Self::IQ4_NL,
        Self::IQ3_S,
        Self::IQ2_S,
        Self::IQ4_XS,
        Self::I8,
        Self::I16,
        Self::I32,
        Self::I64,
        Self::F64,
        Self::IQ1_M,
        Self::BF16,
        Self::TQ1_0,
        Self::TQ2_0,
        Self::MXFP4,
    ];

    /// The types [`dequantize`] decodes.
    pub const DECODED: [GgufType; 11] = [
        Self::F32,
        Self::F16,
        Self::BF16,
        Self::Q8_0,
        Self::Q4_0,
        Self::Q4_1,
        Self::Q5_0,
        Self::Q5_1,
        Self::Q4_K,
        Self::Q5_K,
        Self::Q6_K,
    ];

    /// GGUF's type id.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The type with GGUF type id `id`.
    pub fn from_id(id: u32) -> Result<GgufType> {
        Self::ALL
            .iter()
            .copied()
            .find(|t| t.id() == id)
            .ok_or(FormatError::UnknownGgufType(id))
    }

    /// GGUF's name of the type ("Q4_K", ...).
    pub fn name(self) -> String {
        format!("{self:?}")
    }

    /// `(elements per block, bytes per block)`, as GGUF defines them.
    pub fn block(self) -> (usize, usize) {
        use GgufType::*;
        match self {
            F32 => (1, 4),
            F16 | BF16 => (1, 2),
            Q4_0 => (32, 18),
            Q4_1 => (32, 20),
            Q5_0 => (32, 22),
            Q5_1 => (32, 24),
            Q8_0 => (32, 34),
            Q8_1 => (32, 40),
            Q2_K => (256, 84),
            Q3_K => (256, 110),
            Q4_K => (256, 144),
            Q5_K => (256, 176),
            Q6_K => (256, 210),
            Q8_K => (256, 292),
            IQ2_XXS => (256, 66),
            IQ2_XS => (256, 74),
            IQ3_XXS => (256, 98),
            IQ1_S => (256, 50),
            IQ4_NL => (32, 18),
            IQ3_S => (256, 110),
            IQ2_S => (256, 82),
            IQ4_XS => (256, 136),
            I8 => (1, 1),
            I16 => (1, 2),
            I32 => (1, 4),
            I64 | F64 => (1, 8),
            IQ1_M => (256, 56),
            TQ1_0 => (256, 54),
            TQ2_0 => (256, 66),
            MXFP4 => (32, 17),
        }
    }

    pub fn block_elements(self) -> usize {
        self.block().0
    }

    pub fn block_bytes(self) -> usize {
        self.block().1
    }

    /// Whether [`dequantize`] decodes this type.
    pub fn is_decoded(self) -> bool {
        Self::DECODED.contains(&self)
    }

    /// Bytes of `n_elements` values, or an error where they do not fill whole blocks.
    pub fn bytes_for(self, n_elements: usize) -> Result<usize> {
        let (be, bb) = self.block();
        if !n_elements.is_multiple_of(be) {
            return Err(FormatError::GgufElementCount {
                ty: self.name(),
                block: be,
                n_elements,
            });
        }
        Ok(n_elements / be * bb)
    }
}

#[inline]
fn h(b: &[u8], o: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[o], b[o + 1]])).to_f32()
}

/// The (scale, min) pair of sub-block `s` of a Q4_K / Q5_K block's 12 scale bytes.
#[inline]
fn k_scale_min(b: &[u8], s: usize) -> (u8, u8) {
    if s < 4 {
        (b[s] & 63, b[s + 4] & 63)
    } else {
        (
            (b[s + 4] & 15) | ((b[s - 4] >> 6) << 4),
            (b[s + 4] >> 4) | ((b[s] >> 6) << 4),
        )
    }
}

/// Decodes one block `b` of type `ty` into `y` (`ty.block_elements()` values).
fn decode_block(ty: GgufType, b: &[u8], y: &mut [f32]) {
    use GgufType::*;
    match ty {
        F32 => y[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        F16 => y[0] = h(b, 0),
        BF16 => y[0] = bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32(),
        Q8_0 => {
            let d = h(b, 0);
            for j in 0..32 {
                y[j] = (b[2 + j] as i8) as f32 * d;
            }
        }
        Q4_0 => {
            let d = h(b, 0);
            for j in 0..16 {
                y[j] = ((b[2 + j] & 15) as i32 - 8) as f32 * d;
                y[j + 16] = ((b[2 + j] >> 4) as i32 - 8) as f32 * d;
            }
        }
        Q4_1 => {
            let (d, m) = (h(b, 0), h(b, 2));
            for j in 0..16 {
                y[j] = d * (b[4 + j] & 15) as f32 + m;
                y[j + 16] = d * (b[4 + j] >> 4) as f32 + m;
            }
        }
        Q5_0 | Q5_1 => {
            let (d, m, o) = if ty == Q5_0 {
                (h(b, 0), 0.0, 2)
            } else {
                (h(b, 0), h(b, 2), 4)
            };
            let qh = u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
            let qs = &b[o + 4..o + 20];
            for j in 0..16 {
                let lo = (qs[j] & 15) as u32 | (((qh >> j) & 1) << 4);
                let hi = (qs[j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4);
                if ty == Q5_0 {
                    y[j] = (lo as i32 - 16) as f32 * d;
                    y[j + 16] = (hi as i32 - 16) as f32 * d;
                } else {
                    y[j] = d * lo as f32 + m;
                    y[j + 16] = d * hi as f32 + m;
                }
            }
        }
        Q4_K | Q5_K => {
            let (d, dmin) = (h(b, 0), h(b, 2));
            let sc = &b[4..16];
            let (qh, qs) = if ty == Q4_K {
                (&b[0..0], &b[16..144])
            } else {
                (&b[16..48], &b[48..176])
            };
            for s in 0..8 {
                let (a, mn) = k_scale_min(sc, s);
                let (dl, ml) = (d * a as f32, dmin * mn as f32);
                let run = &qs[32 * (s / 2)..32 * (s / 2) + 32];
                for l in 0..32 {
                    let mut q = if s % 2 == 0 { run[l] & 15 } else { run[l] >> 4 } as u32;
                    if ty == Q5_K {
                        q |= ((qh[l] >> s) as u32 & 1) << 4;
                    }
                    y[32 * s + l] = dl * q as f32 - ml;
                }
            }
        }
        Q6_K => {
            let d = h(b, 208);
            for half in 0..2 {
                let ql = &b[64 * half..64 * half + 64];
                let qh = &b[128 + 32 * half..128 + 32 * half + 32];
                let sc = &b[192 + 8 * half..192 + 8 * half + 8];
                let yh = &mut y[128 * half..128 * half + 128];
                for l in 0..32 {
                    let q = [
                        (ql[l] & 15) | ((qh[l] & 3) << 4),
                        (ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4),
                        (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4),
                        (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4),
                    ];
                    for (p, &qv) in q.iter().enumerate() {
                        let e = l + 32 * p;
                        let dl = d * (sc[e / 16] as i8) as f32;
                        yh[e] = dl * (qv as i32 - 32) as f32;
                    }
                }
            }
        }
        _ => unreachable!("checked by the caller"),
    }
}

/// Decodes `n_elements` values of type `ty` from `bytes` (exactly their size) into `out`.
pub fn dequantize_into(ty: GgufType, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    if !ty.is_decoded() {
        return Err(FormatError::UnsupportedGgufType { ty: ty.name() });
    }
    let expected = ty.bytes_for(out.len())?;
    if bytes.len() != expected {
        return Err(FormatError::GgufPayloadSize {
            ty: ty.name(),
            n_elements: out.len(),
            expected,
            actual: bytes.len(),
        });
    }
    let (be, bb) = ty.block();
    // Chunks of whole blocks, large enough to amortise rayon.
    let per_chunk = (1 << 16) / be.max(1);
    out.par_chunks_mut(per_chunk * be)
        .zip(bytes.par_chunks(per_chunk * bb))
        .for_each(|(y, b)| {
            for (yb, bb) in y.chunks_exact_mut(be).zip(b.chunks_exact(bb)) {
                decode_block(ty, bb, yb);
            }
        });
    Ok(())
}

/// Decodes `n_elements` values of type `ty` from `bytes`.
pub fn dequantize(ty: GgufType, bytes: &[u8], n_elements: usize) -> Result<Vec<f32>> {
    let mut out = vec![0f32; n_elements];
    dequantize_into(ty, bytes, &mut out)?;
    Ok(out)
}

/// Converts a GGUF tensor of `n` rows of `k` values (GGUF shape `[k, n]`) to `target`.
///
/// Q8_0 -> `q8_g32` and Q4_1 -> `q4_1_g32` move the stored numbers bit for bit (the decoded
/// values are identical); every other pair decodes each row and encodes it with the codec.
pub fn to_format(
    ty: GgufType,
    bytes: &[u8],
    n: usize,
    k: usize,
    target: &Format,
) -> Result<Vec<u8>> {
    let layout = Layout::new(target, n, k)?;
    let row_bytes = ty.bytes_for(k)?;
    if bytes.len() != row_bytes * n {
        return Err(FormatError::GgufPayloadSize {
            ty: ty.name(),
            n_elements: n * k,
            expected: row_bytes * n,
            actual: bytes.len(),
        });
    }
    if !ty.is_decoded() {
        return Err(FormatError::UnsupportedGgufType { ty: ty.name() });
    }
    let mut out = vec![0u8; layout.total_bytes];
    if n == 0 || k == 0 {
        return Ok(out);
    }
    let (qp, rest) = out.split_at_mut(layout.s_offset);
    let qp = &mut qp[..n * layout.q_row_bytes];
    let sp = &mut rest[..n * layout.s_row_bytes];
    let q_rows = qp.par_chunks_mut(layout.q_row_bytes);
    let srb = layout.s_row_bytes.max(1);
    // Dense targets have no scale plane: hand each row an empty slice.
    let mut empty: Vec<&mut [u8]> = Vec::new();
    let s_rows: Vec<&mut [u8]> = if layout.s_row_bytes == 0 {
        (0..n).for_each(|_| empty.push(&mut []));
        empty
    } else {
        sp.chunks_mut(srb).collect()
    };
    let same_numbers = matches!(
        (ty, target.kind, target.name.as_str()),
        (GgufType::Q8_0, FormatKind::SymInt, "q8_g32")
            | (GgufType::Q4_1, FormatKind::Affine, "q4_1_g32")
    ) && target.group == 32;
    q_rows
        .zip(s_rows.into_par_iter())
        .enumerate()
        .try_for_each(|(r, (q, s))| {
            let src = &bytes[r * row_bytes..(r + 1) * row_bytes];
            if same_numbers && ty == GgufType::Q8_0 {
                for (g, blk) in src.chunks_exact(34).enumerate() {
                    s[2 * g..2 * g + 2].copy_from_slice(&blk[0..2]);
                    q[32 * g..32 * g + 32].copy_from_slice(&blk[2..34]);
                }
                Ok(())
            } else if same_numbers && ty == GgufType::Q4_1 {
                let mut codes = [0u8; 32];
                for (g, blk) in src.chunks_exact(20).enumerate() {
                    s[4 * g..4 * g + 4].copy_from_slice(&blk[0..4]);
                    for j in 0..16 {
                        codes[j] = blk[4 + j] & 15;
                        codes[j + 16] = blk[4 + j] >> 4;
                    }
                    pack_bits(&codes, 4, &mut q[16 * g..16 * g + 16]);
                }
                Ok(())
            } else {
                let mut row = vec![0f32; k];
                dequantize_into(ty, src, &mut row)?;
                encode_row(target, &layout, r, &row, q, s)
            }
        })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::codec::decode;
    use crate::formats::registry::format;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_errors() {
        for t in GgufType::ALL {
            assert_eq!(GgufType::from_id(t.id()).unwrap(), t);
        }
        assert_eq!(GgufType::Q4_K.id(), 12);
        assert_eq!(GgufType::BF16.id(), 30);
        assert!(matches!(
            GgufType::from_id(4),
            Err(FormatError::UnknownGgufType(4))
        ));
    }

    #[test]
    fn size_errors_are_sentences() {
        let e = dequantize(GgufType::Q4_K, &[0u8; 144], 200).unwrap_err();
        assert!(matches!(e, FormatError::GgufElementCount { .. }), "{e}");
        let e = dequantize(GgufType::Q4_K, &[0u8; 143], 256).unwrap_err();
        assert!(e.to_string().contains("144 bytes"), "{e}");
        let e = dequantize(GgufType::IQ2_XXS, &[0u8; 66], 256).unwrap_err();
        assert!(matches!(e, FormatError::UnsupportedGgufType { .. }), "{e}");
    }

    #[test]
    fn q8_0_to_q8_g32_moves_the_numbers() {
        // Two rows of 64: d = 0.5 and 0.25, codes i - 16.
        let mut bytes = Vec::new();
        for g in 0..4 {
            bytes.extend_from_slice(&f16::from_f32(0.5 / (g + 1) as f32).to_bits().to_le_bytes());
            bytes.extend((0..32).map(|i| (i as i8 - 16) as u8));
        }
        let want = dequantize(GgufType::Q8_0, &bytes, 128).unwrap();
        let f = format("q8_g32").unwrap();
        let p = to_format(GgufType::Q8_0, &bytes, 2, 64, f).unwrap();
        let got = decode(f, &p, 2, 64).unwrap();
        assert_eq!(
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}
