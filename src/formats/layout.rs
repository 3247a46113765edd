//! Where the bytes of an `[N, K]` weight lie: the row-split (planar) layout.
//!
//! A payload is two planes, one after the other:
//!
//! ```text
//! [ quant plane: N rows x q_row_bytes ] [ zero padding to 16 bytes ] [ scale plane: N rows x s_row_bytes ]
//! ```
//!
//! Row `r`'s quantized values are the contiguous bytes `q_offset + r*q_row_bytes ..`, its
//! scales the contiguous bytes `s_offset + r*s_row_bytes ..`. Both planes start 16-byte
//! aligned. Because a group fills whole 32-bit words (checked by the registry), every row of
//! a grouped format's quant plane starts 4-byte aligned, and 16-byte aligned whenever
//! `K * bits / 8` is a multiple of 16: always for q8_g32, q6_g64, q4_g64 and q4_1_g32 (their
//! group's bytes are multiples of 16), and for any format when K is a multiple of 128.
//! Dense formats have no scale plane: the payload is exactly `N * K * bits / 8` bytes.
//!
//! Per row:
//! - sym_int: `q_row_bytes = K*bits/8`, `s_row_bytes = (K/group) * scale bytes`
//! - row_scaled: `q_row_bytes = K*bits/8`, `s_row_bytes = scale bytes` (one scale)
//! - affine: `q_row_bytes = K*bits/8`, `s_row_bytes = (K/group) * 2 * 2` (f16 scale then f16 min)
//! - dense: `q_row_bytes = K*bits/8`, `s_row_bytes = 0`

use std::ops::Range;

use super::error::{FormatError, Result};
use super::registry::{Format, FormatKind};

/// Alignment of each plane's start, in bytes.
pub const PLANE_ALIGN: usize = 16;

/// Byte sizes and offsets of an `[N, K]` weight in one format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub n: usize,
    pub k: usize,
    /// Elements per scale (K for row-scaled and dense).
    pub group_len: usize,
    /// Groups per row (1 for row-scaled and dense).
    pub groups_per_row: usize,
    /// Bytes of one row in the quant plane.
    pub q_row_bytes: usize,
    /// Bytes of one row in the scale plane (0 for dense formats).
    pub s_row_bytes: usize,
    /// Offset of the quant plane (always 0).
    pub q_offset: usize,
    /// Offset of the scale plane (16-byte aligned; equals `total_bytes` for dense formats).
    pub s_offset: usize,
    /// The whole payload.
    pub total_bytes: usize,
}

fn align_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

impl Layout {
    /// The layout of an `[n, k]` weight in `fmt`; an error where the format's group does not
    /// divide `k`, or `k` values do not fill whole bytes.
    pub fn new(fmt: &Format, n: usize, k: usize) -> Result<Layout> {
        let group_len = fmt.group_len(k);
        if matches!(fmt.kind, FormatKind::SymInt | FormatKind::Affine)
            && !k.is_multiple_of(fmt.group)
        {
            return Err(FormatError::GroupDoesNotDivide {
                format: fmt.name.clone(),
                group: fmt.group,
                k,
            });
        }
        if !(k * fmt.bits as usize).is_multiple_of(8) {
            return Err(FormatError::GroupDoesNotDivide {
                format: fmt.name.clone(),
                group: 8,
                k,
            });
        }
        let groups_per_row = k.checked_div(group_len).unwrap_or(0);
        let q_row_bytes = k * fmt.bits as usize / 8;
        let sb = fmt.scale.bytes();
        let s_row_bytes = match fmt.kind {
            FormatKind::SymInt => groups_per_row * sb,
            FormatKind::Affine => groups_per_row * 2 * sb,
            FormatKind::RowScaled => sb,
            FormatKind::Dense => 0,
        };
        let q_bytes = n * q_row_bytes;
        let (s_offset, total_bytes) = if s_row_bytes == 0 {
            (q_bytes, q_bytes)
        } else {
            let s_offset = align_up(q_bytes, PLANE_ALIGN);
            (s_offset, s_offset + n * s_row_bytes)
        };
        Ok(Layout {
            n,
            k,
            group_len,
            groups_per_row,
            q_row_bytes,
            s_row_bytes,
            q_offset: 0,
            s_offset,
            total_bytes,
        })
    }

    /// Byte range of row `r` in the quant plane.
    pub fn q_row(&self, r: usize) -> Range<usize> {
        let a = self.q_offset + r * self.q_row_bytes;
        a..a + self.q_row_bytes
    }

    /// Byte range of row `r` in the scale plane.
    pub fn s_row(&self, r: usize) -> Range<usize> {
        let a = self.s_offset + r * self.s_row_bytes;
        a..a + self.s_row_bytes
    }

    /// Byte range of the whole quant plane.
    pub fn q_plane(&self) -> Range<usize> {
        self.q_offset..self.q_offset + self.n * self.q_row_bytes
    }

    /// Byte range of the whole scale plane.
    pub fn s_plane(&self) -> Range<usize> {
        self.s_offset..self.s_offset + self.n * self.s_row_bytes
    }

    /// An error unless `payload_len` is this layout's size.
    pub fn check_payload(&self, fmt: &Format, payload_len: usize) -> Result<()> {
        if payload_len != self.total_bytes {
            return Err(FormatError::PayloadSize {
                format: fmt.name.clone(),
                n: self.n,
                k: self.k,
                expected: self.total_bytes,
                actual: payload_len,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::registry::format;

    #[test]
    fn sizes_of_the_seed_formats() {
        let l = Layout::new(format("q4_g64").unwrap(), 3, 128).unwrap();
        assert_eq!(
            (l.q_row_bytes, l.s_row_bytes, l.s_offset, l.total_bytes),
            (64, 4, 192, 204)
        );
        let l = Layout::new(format("q8_g32").unwrap(), 3, 64).unwrap();
        assert_eq!(
            (l.q_row_bytes, l.s_row_bytes, l.s_offset, l.total_bytes),
            (64, 4, 192, 204)
        );
        let l = Layout::new(format("q6_g64").unwrap(), 1, 64).unwrap();
        assert_eq!(
            (l.q_row_bytes, l.s_row_bytes, l.s_offset, l.total_bytes),
            (48, 2, 48, 50)
        );
        let l = Layout::new(format("q4_1_g32").unwrap(), 1, 64).unwrap();
        assert_eq!(
            (l.q_row_bytes, l.s_row_bytes, l.s_offset, l.total_bytes),
            (32, 8, 32, 40)
        );
        let l = Layout::new(format("i8_row").unwrap(), 5, 10).unwrap();
        assert_eq!(
            (l.q_row_bytes, l.s_row_bytes, l.s_offset, l.total_bytes),
            (10, 4, 64, 84)
        );
        let l = Layout::new(format("bf16").unwrap(), 5, 10).unwrap();
        assert_eq!((l.q_row_bytes, l.s_row_bytes, l.total_bytes), (20, 0, 100));
    }

    #[test]
    fn group_must_divide_k() {
        let e = Layout::new(format("q4_g64").unwrap(), 2, 96).unwrap_err();
        assert!(
            matches!(
                e,
                FormatError::GroupDoesNotDivide {
                    group: 64,
                    k: 96,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("not a multiple of 64"));
    }
}
