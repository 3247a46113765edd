//! The FP64 oracle: references computed in f64 on decoded weights, against which GPU routes
//! are qualified. Plain loops, rayon-parallel over output rows.

use rayon::prelude::*;

use super::codec::{decode, decode_row};
use super::error::{FormatError, Result};
use super::layout::Layout;
use super::registry::Format;

/// `Y = X * W^T` in f64: `x` is `[t, k]` row-major, `w` is `[n, k]` row-major (decoded
/// weights); returns `[t, n]` row-major.
pub fn linear_f64(x: &[f32], t: usize, k: usize, w: &[f32], n: usize) -> Result<Vec<f64>> {
    if x.len() != t * k {
        return Err(FormatError::ValueCount {
            n: t,
            k,
            expected: t * k,
            actual: x.len(),
        });
    }
    if w.len() != n * k {
        return Err(FormatError::ValueCount {
            n,
            k,
            expected: n * k,
            actual: w.len(),
        });
    }
    let mut y = vec![0f64; t * n];
    if n == 0 {
        return Ok(y);
    }
    y.par_chunks_mut(n).enumerate().for_each(|(i, yr)| {
        let xr = &x[i * k..(i + 1) * k];
        for (j, o) in yr.iter_mut().enumerate() {
            let wr = &w[j * k..(j + 1) * k];
            *o = xr.iter().zip(wr).map(|(&a, &b)| a as f64 * b as f64).sum();
        }
    });
    Ok(y)
}

/// `Y = X * W^T` in f64 with `W` given as a payload in `fmt` (decoded first).
pub fn linear_f64_encoded(
    x: &[f32],
    t: usize,
    fmt: &Format,
    payload: &[u8],
    n: usize,
    k: usize,
) -> Result<Vec<f64>> {
    let w = decode(fmt, payload, n, k)?;
    linear_f64(x, t, k, &w, n)
}

/// Embedding gather in f64: rows `ids` of a `[n_vocab, dim]` payload in `fmt`; returns
/// `[ids.len(), dim]` row-major. Only the named rows are decoded.
pub fn embedding_f64(
    ids: &[u32],
    fmt: &Format,
    payload: &[u8],
    n_vocab: usize,
    dim: usize,
) -> Result<Vec<f64>> {
    let layout = Layout::new(fmt, n_vocab, dim)?;
    layout.check_payload(fmt, payload.len())?;
    if let Some(&id) = ids.iter().find(|&&id| id as usize >= n_vocab) {
        return Err(FormatError::TokenOutOfRange {
            id: id as usize,
            n: n_vocab,
        });
    }
    let mut out = vec![0f64; ids.len() * dim];
    if dim == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(dim)
        .zip(ids.par_iter())
        .for_each(|(o, &id)| {
            let mut row = vec![0f32; dim];
            decode_row(fmt, &layout, payload, id as usize, &mut row);
            for (a, b) in o.iter_mut().zip(&row) {
                *a = *b as f64;
            }
        });
    Ok(out)
}

/// Relative L2 error `||got - want|| / ||want||` (0 where both are zero).
pub fn rel_l2(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len(), "rel_l2 needs equal lengths");
    let (mut num, mut den) = (0f64, 0f64);
    for (&g, &w) in got.iter().zip(want) {
        num += (g as f64 - w) * (g as f64 - w);
        den += w * w;
    }
    if den == 0.0 {
        if num == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (num / den).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::codec::encode;
    use crate::formats::registry::format;

    #[test]
    fn linear_matches_a_hand_computed_product() {
        // x = [[1, 2], [3, 4]], w = [[1, 0], [0, 1], [1, 1]] -> y = [[1, 2, 3], [3, 4, 7]]
        let y = linear_f64(
            &[1.0, 2.0, 3.0, 4.0],
            2,
            2,
            &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
            3,
        )
        .unwrap();
        assert_eq!(y, vec![1.0, 2.0, 3.0, 3.0, 4.0, 7.0]);
        assert!(linear_f64(&[1.0], 2, 2, &[0.0; 6], 3).is_err());
    }

    #[test]
    fn encoded_linear_and_embedding_use_the_decoded_weights() {
        let f = format("q4_g64").unwrap();
        let (n, k) = (3, 64);
        let w: Vec<f32> = (0..n * k).map(|i| ((i % 13) as f32 - 6.0) / 7.0).collect();
        let p = encode(f, &w, n, k).unwrap();
        let wd = decode(f, &p, n, k).unwrap();
        let x: Vec<f32> = (0..k).map(|i| (i as f32).sin()).collect();
        assert_eq!(
            linear_f64_encoded(&x, 1, f, &p, n, k).unwrap(),
            linear_f64(&x, 1, k, &wd, n).unwrap()
        );
        let e = embedding_f64(&[2, 0], f, &p, n, k).unwrap();
        assert_eq!(
            e[..k],
            wd[2 * k..3 * k]
                .iter()
                .map(|&v| v as f64)
                .collect::<Vec<_>>()[..]
        );
        assert_eq!(
            e[k..],
            wd[..k].iter().map(|&v| v as f64).collect::<Vec<_>>()[..]
        );
        assert!(matches!(
            embedding_f64(&[3], f, &p, n, k),
            Err(FormatError::TokenOutOfRange { .. })
        ));
        assert_eq!(rel_l2(&[1.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
