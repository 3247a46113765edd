//! The cpu backend: plain f32 ops with f64 accumulation where it is cheap (norms, softmax,
//! attention), rayon-parallel over rows and output features.

use rayon::prelude::*;

use super::backend::{AttnShape, Backend, Rope, RopeStyle};
use crate::ops::gdn::cpu::{step as gdn_step, CpuState, CpuWeights};
use crate::ops::gdn::{GdnDims, StateType};
use crate::ops::rmsnorm::NormWeight;

/// A row-major f32 matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Mat {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

impl Mat {
    pub fn new(rows: usize, cols: usize, data: Vec<f32>) -> Self {
        assert_eq!(
            rows * cols,
            data.len(),
            "matrix data does not match its shape"
        );
        Mat { rows, cols, data }
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }
}

/// One sequence's K/V for every attention layer: `k[layer]` is `[len, nKV*hd]`.
#[derive(Debug, Clone)]
pub struct CpuKvCache {
    pub shape: AttnShape,
    pub len: usize,
    pub k: Vec<Vec<f32>>,
    pub v: Vec<Vec<f32>>,
}

/// The cpu backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuBackend;

/// `sum a[i] * b[i]` in f32 with eight independent accumulators.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0f32; 8];
    let n8 = a.len() / 8 * 8;
    for (ca, cb) in a[..n8].chunks_exact(8).zip(b[..n8].chunks_exact(8)) {
        for j in 0..8 {
            acc[j] += ca[j] * cb[j];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in a[n8..].iter().zip(&b[n8..]) {
        s += x * y;
    }
    s
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

impl Backend for CpuBackend {
    type Act = Mat;
    type Linear = Mat;
    type Vector = Vec<f32>;
    type KvCache = CpuKvCache;
    type GdnWeights = (GdnDims, CpuWeights);
    type GdnState = CpuState;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn linear_from_f32(&self, rows: usize, cols: usize, data: Vec<f32>) -> Mat {
        Mat::new(rows, cols, data)
    }

    /// Encoded and decoded back, so the cpu computes with exactly the values a GPU holding
    /// the weight in `format` does.
    fn linear_from_f32_in(
        &self,
        rows: usize,
        cols: usize,
        data: Vec<f32>,
        format: &'static crate::formats::Format,
    ) -> Mat {
        let payload = crate::formats::encode(format, &data, rows, cols).unwrap_or_else(|e| {
            panic!(
                "cpu backend: a [{rows}, {cols}] weight as {}: {e}",
                format.name
            )
        });
        let values = crate::formats::decode(format, &payload, rows, cols)
            .expect("a payload just encoded decodes");
        Mat::new(rows, cols, values)
    }

    fn vector_from_f32(&self, data: Vec<f32>) -> Vec<f32> {
        data
    }

    fn act_from_f32(&self, rows: usize, cols: usize, data: Vec<f32>) -> Mat {
        Mat::new(rows, cols, data)
    }

    fn new_kv_cache(&self, layers: usize, shape: AttnShape) -> CpuKvCache {
        CpuKvCache {
            shape,
            len: 0,
            k: vec![Vec::new(); layers],
            v: vec![Vec::new(); layers],
        }
    }

    fn gdn_weights(
        &self,
        dims: GdnDims,
        conv_w: Vec<f32>,
        a_log: Vec<f32>,
        dt_bias: Vec<f32>,
        norm_w: Vec<f32>,
        eps: f64,
    ) -> (GdnDims, CpuWeights) {
        dims.check_params(&conv_w, &a_log, &dt_bias, &norm_w);
        (
            dims,
            CpuWeights {
                conv_w,
                a_log,
                dt_bias,
                norm_w,
                eps: eps as f32,
            },
        )
    }

    fn new_gdn_state(&self, dims: GdnDims, ty: StateType) -> CpuState {
        CpuState::zeros(&dims, ty)
    }

    fn kv_len(&self, cache: &CpuKvCache) -> usize {
        cache.len
    }

    fn to_host(&self, x: &Mat) -> Vec<f32> {
        x.data.clone()
    }

    fn rows(&self, x: &Mat) -> usize {
        x.rows
    }

    fn cols(&self, x: &Mat) -> usize {
        x.cols
    }

    fn slice_rows(&self, x: &Mat, start: usize, n: usize) -> Mat {
        assert!(start + n <= x.rows, "row slice out of range");
        Mat::new(
            n,
            x.cols,
            x.data[start * x.cols..(start + n) * x.cols].to_vec(),
        )
    }

    fn slice_cols(&self, x: &Mat, start: usize, n: usize) -> Mat {
        assert!(start + n <= x.cols, "column slice out of range");
        let mut data = Vec::with_capacity(x.rows * n);
        for r in 0..x.rows {
            data.extend_from_slice(&x.row(r)[start..start + n]);
        }
        Mat::new(x.rows, n, data)
    }

    fn embedding(&self, table: &Mat, ids: &[u32]) -> Mat {
        let mut data = Vec::with_capacity(ids.len() * table.cols);
        for &id in ids {
            assert!(
                (id as usize) < table.rows,
                "token id {id} is outside the vocabulary ({})",
                table.rows
            );
            data.extend_from_slice(table.row(id as usize));
        }
        Mat::new(ids.len(), table.cols, data)
    }

    fn rmsnorm(&self, x: &Mat, w: &Vec<f32>, eps: f64, conv: NormWeight) -> Mat {
        let width = w.len();
        assert!(
            width > 0 && x.cols.is_multiple_of(width),
            "norm width does not divide the row"
        );
        let mut out = vec![0f32; x.data.len()];
        out.par_chunks_mut(width)
            .zip(x.data.par_chunks(width))
            .for_each(|(y, v)| {
                let ms = v.iter().map(|&a| (a as f64) * (a as f64)).sum::<f64>() / width as f64;
                let inv = (1.0 / (ms + eps).sqrt()) as f32;
                for ((yo, &a), &wi) in y.iter_mut().zip(v).zip(w) {
                    let f = match conv {
                        NormWeight::Plain => wi,
                        NormWeight::ZeroCentred => 1.0 + wi,
                    };
                    *yo = (a * inv) * f;
                }
            });
        Mat::new(x.rows, x.cols, out)
    }

    fn linear(&self, x: &Mat, w: &Mat, bias: Option<&Vec<f32>>) -> Mat {
        assert_eq!(x.cols, w.cols, "linear: input width != weight columns");
        let (t, n) = (x.rows, w.rows);
        // Parallel over blocks of output features; each weight row is read once per block
        // of tokens (cache-friendly for prefill, memory-bound for decode).
        let mut out_t = vec![0f32; n * t]; // [n, t], transposed at the end
        const BLK: usize = 16;
        out_t
            .par_chunks_mut(BLK * t)
            .enumerate()
            .for_each(|(bi, chunk)| {
                for (j, o) in chunk.chunks_mut(t).enumerate() {
                    let r = bi * BLK + j;
                    let wr = w.row(r);
                    let b = bias.map_or(0.0, |b| b[r]);
                    for (i, oi) in o.iter_mut().enumerate() {
                        *oi = dot(x.row(i), wr) + b;
                    }
                }
            });
        if t == 1 {
            return Mat::new(1, n, out_t);
        }
        let mut out = vec![0f32; t * n];
        for r in 0..n {
            for i in 0..t {
                out[i * n + r] = out_t[r * t + i];
            }
        }
        Mat::new(t, n, out)
    }

    fn add_assign(&self, x: &mut Mat, y: &Mat) {
        assert_eq!((x.rows, x.cols), (y.rows, y.cols), "add: shapes differ");
        x.data.iter_mut().zip(&y.data).for_each(|(a, b)| *a += b);
    }

    fn swiglu(&self, gate: &Mat, up: &Mat) -> Mat {
        assert_eq!(
            (gate.rows, gate.cols),
            (up.rows, up.cols),
            "swiglu: shapes differ"
        );
        let data = gate
            .data
            .iter()
            .zip(&up.data)
            .map(|(&g, &u)| silu(g) * u)
            .collect();
        Mat::new(gate.rows, gate.cols, data)
    }

    fn sigmoid_gate(&self, x: &Mat, gate: &Mat) -> Mat {
        assert_eq!(
            (x.rows, x.cols),
            (gate.rows, gate.cols),
            "gate: shapes differ"
        );
        let data = x
            .data
            .iter()
            .zip(&gate.data)
            .map(|(&a, &g)| a * sigmoid(g))
            .collect();
        Mat::new(x.rows, x.cols, data)
    }

    fn rope(&self, x: &mut Mat, n_heads: usize, head_dim: usize, pos0: usize, rope: &Rope) {
        assert_eq!(
            x.cols,
            n_heads * head_dim,
            "rope: row is not n_heads * head_dim"
        );
        let rd = rope.rotary_dim;
        assert!(
            rd <= head_dim && rd.is_multiple_of(2),
            "rope: bad rotary_dim"
        );
        let half = rd / 2;
        // inv_freq as HF computes it: theta^(-2i/rd) in f32.
        let inv_freq: Vec<f32> = (0..half)
            .map(|i| 1.0 / (rope.theta.powf((2 * i) as f64 / rd as f64)) as f32)
            .collect();
        let cols = x.cols;
        x.data
            .par_chunks_mut(cols)
            .enumerate()
            .for_each(|(i, row)| {
                let pos = (pos0 + i) as f32;
                let cs: Vec<(f32, f32)> = inv_freq
                    .iter()
                    .map(|&f| {
                        let a = pos * f;
                        (a.cos(), a.sin())
                    })
                    .collect();
                for h in row.chunks_mut(head_dim) {
                    for (j, &(c, s)) in cs.iter().enumerate() {
                        let (a, b) = match rope.style {
                            RopeStyle::Neox => (j, j + half),
                            RopeStyle::Interleaved => (2 * j, 2 * j + 1),
                        };
                        let (x0, x1) = (h[a], h[b]);
                        h[a] = x0 * c - x1 * s;
                        h[b] = x1 * c + x0 * s;
                    }
                }
            });
    }

    fn attention(&self, cache: &mut CpuKvCache, layer: usize, q: &Mat, k: &Mat, v: &Mat) -> Mat {
        let AttnShape {
            n_heads,
            n_kv_heads,
            head_dim: hd,
        } = cache.shape;
        let kvw = n_kv_heads * hd;
        assert_eq!(q.cols, n_heads * hd, "attention: q width");
        assert_eq!((k.cols, v.cols), (kvw, kvw), "attention: k/v width");
        let t = q.rows;
        let base = cache.len;
        let (kc, vc) = (&mut cache.k[layer], &mut cache.v[layer]);
        assert_eq!(kc.len(), base * kvw, "attention: layer cache out of step");
        kc.extend_from_slice(&k.data);
        vc.extend_from_slice(&v.data);
        let (kc, vc) = (&*kc, &*vc);
        let rep = n_heads / n_kv_heads;
        let scale = 1.0 / (hd as f64).sqrt();
        let mut out = vec![0f32; t * n_heads * hd];
        out.par_chunks_mut(hd).enumerate().for_each(|(idx, o)| {
            let (i, h) = (idx / n_heads, idx % n_heads);
            let g = h / rep;
            let qh = &q.row(i)[h * hd..(h + 1) * hd];
            let n = base + i + 1;
            let mut s: Vec<f64> = (0..n)
                .map(|p| dot(qh, &kc[p * kvw + g * hd..p * kvw + (g + 1) * hd]) as f64 * scale)
                .collect();
            let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let mut z = 0.0;
            for e in s.iter_mut() {
                *e = (*e - m).exp();
                z += *e;
            }
            let mut acc = vec![0f64; hd];
            for (p, &e) in s.iter().enumerate() {
                let w = e / z;
                for (a, &vv) in acc
                    .iter_mut()
                    .zip(&vc[p * kvw + g * hd..p * kvw + (g + 1) * hd])
                {
                    *a += w * vv as f64;
                }
            }
            for (oo, a) in o.iter_mut().zip(acc) {
                *oo = a as f32;
            }
        });
        Mat::new(t, n_heads * hd, out)
    }

    fn kv_advance(&self, cache: &mut CpuKvCache, n: usize) {
        cache.len += n;
    }

    fn split_heads(&self, x: &Mat, n_heads: usize, first: usize, second: usize) -> (Mat, Mat) {
        let w = first + second;
        assert_eq!(
            x.cols,
            n_heads * w,
            "split_heads: row is not n_heads * (first + second)"
        );
        let (mut a, mut b) = (
            Vec::with_capacity(x.rows * n_heads * first),
            Vec::with_capacity(x.rows * n_heads * second),
        );
        for r in 0..x.rows {
            for h in x.row(r).chunks(w) {
                a.extend_from_slice(&h[..first]);
                b.extend_from_slice(&h[first..]);
            }
        }
        (
            Mat::new(x.rows, n_heads * first, a),
            Mat::new(x.rows, n_heads * second, b),
        )
    }

    fn gdn(
        &self,
        w: &(GdnDims, CpuWeights),
        state: &mut CpuState,
        mixed: &Mat,
        z: &Mat,
        a: &Mat,
        b: &Mat,
    ) -> Mat {
        let (d, cw) = w;
        let t = mixed.rows;
        assert_eq!(mixed.cols, d.conv_dim(), "gdn: mixed width");
        assert_eq!(z.cols, d.value_dim(), "gdn: z width");
        assert_eq!((a.cols, b.cols), (d.hv, d.hv), "gdn: a/b width");
        let y = gdn_step(d, cw, state, &mixed.data, &z.data, &a.data, &b.data, t);
        Mat::new(t, d.value_dim(), y)
    }

    fn concat_rows(&self, parts: &[Mat]) -> Mat {
        let cols = parts.first().map_or(0, |m| m.cols);
        assert!(
            parts.iter().all(|m| m.cols == cols),
            "concat_rows: widths differ"
        );
        let data: Vec<f32> = parts.iter().flat_map(|m| m.data.iter().copied()).collect();
        Mat::new(parts.iter().map(|m| m.rows).sum(), cols, data)
    }

    fn concat_cols(&self, a: &Mat, b: &Mat) -> Mat {
        assert_eq!(a.rows, b.rows, "concat_cols: row counts differ");
        let mut data = Vec::with_capacity(a.rows * (a.cols + b.cols));
        for r in 0..a.rows {
            data.extend_from_slice(a.row(r));
            data.extend_from_slice(b.row(r));
        }
        Mat::new(a.rows, a.cols + b.cols, data)
    }

    fn zeros(&self, rows: usize, cols: usize) -> Mat {
        Mat::new(rows, cols, vec![0.0; rows * cols])
    }

    fn gather_rows(&self, x: &Mat, rows: &[usize]) -> Mat {
        let mut data = Vec::with_capacity(rows.len() * x.cols);
        for &r in rows {
            data.extend_from_slice(x.row(r));
        }
        Mat::new(rows.len(), x.cols, data)
    }

    fn scatter_add_rows(&self, out: &mut Mat, x: &Mat, rows: &[usize], scale: &[f32]) {
        assert_eq!(out.cols, x.cols, "scatter_add_rows: widths differ");
        assert_eq!(
            (rows.len(), scale.len()),
            (x.rows, x.rows),
            "scatter_add_rows: counts"
        );
        let c = out.cols;
        for (i, (&r, &s)) in rows.iter().zip(scale).enumerate() {
            for (o, v) in out.data[r * c..(r + 1) * c].iter_mut().zip(x.row(i)) {
                *o += s * v;
            }
        }
    }

    fn softmax(&self, x: &Mat) -> Mat {
        let mut out = x.data.clone();
        out.par_chunks_mut(x.cols).for_each(softmax_in_place);
        Mat::new(x.rows, x.cols, out)
    }
}

/// Softmax of one row, in place, f64 accumulation.
pub fn softmax_in_place(r: &mut [f32]) {
    let m = r.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let mut z = 0f64;
    for v in r.iter_mut() {
        let e = ((*v - m) as f64).exp();
        z += e;
        *v = e as f32;
    }
    for v in r.iter_mut() {
        *v = (*v as f64 / z) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::backend::Backend;

    fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 33) as f64 / (1u64 << 31) as f64 * 2.0 - 1.0) as f32
            })
            .collect()
    }

    #[test]
    fn linear_in_a_format_holds_the_decoded_encoding() {
        let b = CpuBackend;
        let (rows, cols) = (5, 128);
        let data = rand_vec(rows * cols, 7);
        for name in ["q4_g64", "q6_g64", "q8_g32", "bf16", "f32"] {
            let f = crate::formats::format(name).unwrap();
            let w = b.linear_from_f32_in(rows, cols, data.clone(), f);
            let payload = crate::formats::encode(f, &data, rows, cols).unwrap();
            let want = crate::formats::decode(f, &payload, rows, cols).unwrap();
            assert_eq!((w.rows, w.cols), (rows, cols));
            assert_eq!(w.data, want, "{name}");
            if name.starts_with('q') {
                assert_ne!(w.data, data, "{name} rounds the values");
            }
        }
        let f32f = crate::formats::format("f32").unwrap();
        assert_eq!(
            b.linear_from_f32_in(rows, cols, data.clone(), f32f).data,
            data
        );
    }

    /// The trait's `split_cols` (what the cpu backend runs) takes consecutive column blocks
    /// from column 0, a zero width giving an empty part, and leaves the columns past them.
    #[test]
    fn split_cols_takes_consecutive_column_blocks() {
        let b = CpuBackend;
        let x = Mat::new(3, 11, rand_vec(3 * 11, 5));
        let parts = b.split_cols(&x, &[4, 0, 5]);
        assert_eq!(parts.len(), 3);
        for (part, (start, w)) in parts.iter().zip([(0, 4), (4, 0), (4, 5)]) {
            assert_eq!((part.rows, part.cols), (3, w));
            for i in 0..3 {
                assert_eq!(part.row(i), &x.row(i)[start..start + w]);
            }
        }
    }

    #[test]
    fn linear_matches_naive() {
        let b = CpuBackend;
        let x = Mat::new(3, 37, rand_vec(3 * 37, 1));
        let w = Mat::new(21, 37, rand_vec(21 * 37, 2));
        let bias = rand_vec(21, 3);
        let y = b.linear(&x, &w, Some(&bias));
        for i in 0..3 {
            for (r, &br) in bias.iter().enumerate() {
                let e: f64 = (0..37)
                    .map(|c| x.row(i)[c] as f64 * w.row(r)[c] as f64)
                    .sum::<f64>()
                    + br as f64;
                assert!((y.row(i)[r] as f64 - e).abs() < 1e-5, "{i} {r}");
            }
        }
    }

    /// GGUF llama files permute q/k rows so that interleaved-pair RoPE on them equals
    /// rotate-half RoPE on the HF rows: check that identity with llama.cpp's permutation.
    #[test]
    fn interleaved_rope_on_permuted_rows_equals_neox() {
        let b = CpuBackend;
        let (heads, hd) = (3, 8);
        let x = rand_vec(2 * heads * hd, 7);
        // GGUF row (per head) 2i <- HF row i, 2i+1 <- HF row i + hd/2.
        let permute = |v: &[f32]| {
            let mut out = vec![0f32; v.len()];
            for (o, h) in out.chunks_mut(hd).zip(v.chunks(hd)) {
                for i in 0..hd / 2 {
                    o[2 * i] = h[i];
                    o[2 * i + 1] = h[i + hd / 2];
                }
            }
            out
        };
        let rope = |style| Rope {
            style,
            theta: 10000.0,
            rotary_dim: hd,
        };
        let mut neox = Mat::new(2, heads * hd, x.clone());
        b.rope(&mut neox, heads, hd, 5, &rope(RopeStyle::Neox));
        let mut inter = Mat::new(2, heads * hd, permute(&x));
        b.rope(&mut inter, heads, hd, 5, &rope(RopeStyle::Interleaved));
        assert_eq!(permute(&neox.data), inter.data);
        // And the two styles differ on the same rows (the test can fail).
        let mut other = Mat::new(2, heads * hd, x.clone());
        b.rope(&mut other, heads, hd, 5, &rope(RopeStyle::Interleaved));
        assert_ne!(other.data, neox.data);
    }

    #[test]
    fn attention_single_key_returns_value_and_is_causal() {
        let b = CpuBackend;
        let shape = AttnShape {
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 4,
        };
        let mut c = b.new_kv_cache(1, shape);
        let q = Mat::new(2, 16, rand_vec(32, 3));
        let k = Mat::new(2, 8, rand_vec(16, 4));
        let v = Mat::new(2, 8, rand_vec(16, 5));
        let o = b.attention(&mut c, 0, &q, &k, &v);
        // Row 0 sees only token 0: output = v0 of the head's kv group (repeat-interleave).
        for h in 0..4 {
            let g = h / 2;
            for d in 0..4 {
                assert!((o.row(0)[h * 4 + d] - v.row(0)[g * 4 + d]).abs() < 1e-6);
            }
        }
        // Prefill of 2 == two decode steps.
        let mut c2 = b.new_kv_cache(1, shape);
        let o0 = b.attention(
            &mut c2,
            0,
            &b.slice_rows(&q, 0, 1),
            &b.slice_rows(&k, 0, 1),
            &b.slice_rows(&v, 0, 1),
        );
        b.kv_advance(&mut c2, 1);
        let o1 = b.attention(
            &mut c2,
            0,
            &b.slice_rows(&q, 1, 1),
            &b.slice_rows(&k, 1, 1),
            &b.slice_rows(&v, 1, 1),
        );
        assert_eq!(o0.data, o.row(0));
        for (a, e) in o1.data.iter().zip(o.row(1)) {
            assert!((a - e).abs() < 1e-6);
        }
    }
}
