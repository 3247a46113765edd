//! Rotary position embedding on the GPU, in place, exactly the cpu backend's
//! `CpuBackend::rope` in meaning: Neox pairs `(j, j + rotary_dim/2)` or interleaved pairs
//! `(2j, 2j + 1)`, only the first `rotary_dim` dims of each head rotate (Qwen3.5: 64 of
//! 256), `inv_freq[j] = 1 / f32(theta^(2j/rotary_dim))`, angle = the f32 product
//! `f32(pos) * inv_freq[j]` (positions reach 262144, where that rounding is the dominant
//! error and must be the cpu's), cos/sin of that f32 angle. Template: `templates/rope/rope.cu`.

use rand::Rng;
use rand_distr::StandardNormal;

use crate::engine::backend::{Rope, RopeStyle};
use crate::gpu::dptr;
use crate::gpu::{Gpu, GpuError, LaunchConfig};
use crate::jit::KernelSpec;
use crate::ops::attention::{launch_kv_append, KvType};
use crate::ops::Pos;
use crate::qualify::{rel_l2, Outcome, ALLOW_F32};

/// Threads per block (fixed in the template).
const BLOCK: u32 = 256;
/// The largest `rotary_dim / 2` the template's shared cos/sin table holds.
pub const MAX_HALF: usize = 512;

fn style_name(style: RopeStyle) -> &'static str {
    match style {
        RopeStyle::Neox => "neox",
        RopeStyle::Interleaved => "interleaved",
    }
}

pub fn spec(style: RopeStyle) -> KernelSpec {
    let name = style_name(style);
    KernelSpec::new("rope", "rope/rope.cu", format!("rope_{name}"))
        .param("style", name)
        .param("append", false)
        .param("kv_type", "float")
        .programmatic()
}

/// The rotation of q and k fused with the KV append (see [`launch_rope_append`]).
pub fn append_spec(style: RopeStyle, kv: KvType) -> KernelSpec {
    let name = style_name(style);
    KernelSpec::new(
        "rope",
        "rope/rope.cu",
        format!("rope_append_{name}_{}", kv.short()),
    )
    .param("style", name)
    .param("append", true)
    .param("kv_type", kv.cuda_type())
    .programmatic()
}

/// Every registered instantiation of the family.
pub fn instantiations() -> Vec<KernelSpec> {
    let mut v = Vec::new();
    for style in [RopeStyle::Neox, RopeStyle::Interleaved] {
        v.push(spec(style));
        for kv in KvType::ALL {
            v.push(append_spec(style, kv));
        }
    }
    v
}

/// Rotates each head of each row of `x` (`[t, n_heads*head_dim]` f32, device address) in
/// place; row `i` is at position `pos0 + i`.
pub fn launch_rope(
    gpu: &Gpu,
    x: u64,
    t: usize,
    n_heads: usize,
    head_dim: usize,
    pos: Pos,
    rope: &Rope,
) -> Result<(), GpuError> {
    let rd = rope.rotary_dim;
    assert!(
        rd <= head_dim && rd.is_multiple_of(2),
        "rope: bad rotary_dim {rd} for head_dim {head_dim}"
    );
    assert!(
        rd / 2 <= MAX_HALF,
        "rope: rotary_dim {rd} above the kernel's table"
    );
    assert!(
        n_heads * head_dim <= i32::MAX as usize,
        "rope: row too wide"
    );
    if t == 0 || rd == 0 || n_heads == 0 {
        return Ok(());
    }
    let spec = spec(rope.style);
    let f = gpu.kernel(&spec)?;
    let cfg = LaunchConfig {
        grid_dim: (u32::try_from(t).expect("rows fit a grid"), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let (nh, hd, rdi) = (n_heads as i32, head_dim as i32, rd as i32);
    let (pos0, pos_dev) = pos.kernel_args();
    let pos0 = pos0 as i64;
    let theta = rope.theta;
    let mut b = gpu.launch(&f);
    b.arg(&x)
        .arg(&nh)
        .arg(&hd)
        .arg(&rdi)
        .arg(&pos0)
        .arg(&pos_dev)
        .arg(&theta);
    // SAFETY: matches rope/rope.cu; the caller sizes x to t * n_heads * head_dim.
    unsafe { b.launch(cfg) }
        .map_err(|e| GpuError::driver(format!("launching {}", spec.entry), e))?;
    Ok(())
}

/// The rotation of an attention layer's block fused with its KV append: rotates `q`
/// (`[t, n_heads*head_dim]`) in place, rotates `k` (`[t, n_kv*head_dim]`, left as it was)
/// and stores it at cache rows `pos .. pos + t` of `k_cache`, and stores `v` there in
/// `v_cache` (caches of `kv` elements). The same bits as [`launch_rope`] on q and k followed
/// by [`crate::ops::attention::launch_kv_append`].
#[allow(clippy::too_many_arguments)]
pub fn launch_rope_append(
    gpu: &Gpu,
    q: u64,
    t: usize,
    n_heads: usize,
    head_dim: usize,
    pos: Pos,
    rope: &Rope,
    kv_in: (u64, u64),
    cache: (u64, u64),
    n_kv: usize,
    kv: KvType,
) -> Result<(), GpuError> {
    let rd = rope.rotary_dim;
    assert!(
        rd <= head_dim && rd.is_multiple_of(2) && rd / 2 <= MAX_HALF,
        "rope: bad rotary_dim {rd} for head_dim {head_dim}"
    );
    assert!(
        pos.max_keys(t) * n_kv * head_dim < i32::MAX as usize
            && n_heads * head_dim <= i32::MAX as usize,
        "rope append: sizes exceed the kernel's int arguments"
    );
    if t == 0 {
        return Ok(());
    }
    let spec = append_spec(rope.style, kv);
    let f = gpu.kernel(&spec)?;
    let cfg = LaunchConfig {
        grid_dim: (u32::try_from(t).expect("rows fit a grid"), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let (nh, hd, rdi, nkv) = (n_heads as i32, head_dim as i32, rd as i32, n_kv as i32);
    let (pos0, pos_dev) = pos.kernel_args();
    let pos0 = pos0 as i64;
    let theta = rope.theta;
    let mut b = gpu.launch(&f);
    b.arg(&q)
        .arg(&nh)
        .arg(&hd)
        .arg(&rdi)
        .arg(&pos0)
        .arg(&pos_dev)
        .arg(&theta)
        .arg(&kv_in.0)
        .arg(&kv_in.1)
        .arg(&cache.0)
        .arg(&cache.1)
        .arg(&nkv);
    // SAFETY: matches rope/rope.cu with append; q holds t rows of n_heads heads, k and v t
    // rows of n_kv heads, the caches rows up to pos + t.
    unsafe { b.launch(cfg) }
        .map_err(|e| GpuError::driver(format!("launching {}", spec.entry), e))?;
    Ok(())
}

/// `inv_freq` exactly as the cpu backend computes it.
pub fn inv_freq(rope: &Rope) -> Vec<f32> {
    let rd = rope.rotary_dim;
    (0..rd / 2)
        .map(|i| 1.0f32 / (rope.theta.powf((2 * i) as f64 / rd as f64) as f32))
        .collect()
}

/// The f64 reference: the cpu's f32 angle (`f32(pos) * inv_freq`, rounded to f32), then
/// cos, sin and the rotation in f64. Dims past `rotary_dim` pass through.
pub fn reference(x: &[f32], n_heads: usize, head_dim: usize, pos0: usize, rope: &Rope) -> Vec<f64> {
    let cols = n_heads * head_dim;
    assert_eq!(x.len() % cols.max(1), 0, "rope: not a whole number of rows");
    let half = rope.rotary_dim / 2;
    let freqs = inv_freq(rope);
    let mut y: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    for (i, row) in y.chunks_mut(cols).enumerate() {
        let pos = (pos0 + i) as f32;
        for h in row.chunks_mut(head_dim) {
            for (j, &f) in freqs.iter().enumerate() {
                let a = (pos * f) as f64;
                let (s, c) = a.sin_cos();
                let (p, q) = match rope.style {
                    RopeStyle::Neox => (j, j + half),
                    RopeStyle::Interleaved => (2 * j, 2 * j + 1),
                };
                let (x0, x1) = (h[p], h[q]);
                h[p] = x0 * c - x1 * s;
                h[q] = x1 * c + x0 * s;
            }
        }
    }
    y
}

/// Head shapes `(head_dim, rotary_dim, theta)`: full rotary at 64 (SmolLM2-like) and 128
/// (qwen3), and Qwen3.5's partial 64 of 256.
const HEADS: [(usize, usize, f64); 3] = [
    (64, 64, 10_000.0),
    (128, 128, 1_000_000.0),
    (256, 64, 10_000_000.0),
];
/// `(t, pos0)`: first token, a block across 4096, a prefill chunk deep in the context,
/// and the last position of a 256k context.
const POSITIONS: [(usize, usize); 4] = [(1, 0), (5, 4093), (64, 100_000), (1, 262_143)];
const HEAD_COUNTS: [usize; 3] = [1, 3, 24];

/// Every style at every head shape, head count and position block against the f64
/// reference; the widest case of each style also against the cpu backend's own op.
pub fn qualify(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    use crate::engine::backend::Backend;
    use crate::engine::cpu::{CpuBackend, Mat};
    let mut outcomes = Vec::new();
    for style in [RopeStyle::Neox, RopeStyle::Interleaved] {
        let entry = spec(style).entry;
        for &(head_dim, rotary_dim, theta) in &HEADS {
            let rope = Rope {
                style,
                theta,
                rotary_dim,
            };
            for &n_heads in &HEAD_COUNTS {
                for &(t, pos0) in &POSITIONS {
                    let cols = n_heads * head_dim;
                    let x: Vec<f32> = (0..t * cols)
                        .map(|_| rng.sample::<f32, _>(StandardNormal))
                        .collect();
                    // One element of padding: x starts off 16-byte alignment.
                    let mut host = vec![0f32];
                    host.extend_from_slice(&x);
                    let dx = gpu.upload(&host)?;
                    let x_ptr = dptr(gpu, &dx) + 4;
                    launch_rope(gpu, x_ptr, t, n_heads, head_dim, Pos::Host(pos0), &rope)?;
                    let got = gpu.download(&dx)?[1..].to_vec();
                    let shape = format!(
                        "t={t} pos0={pos0} heads={n_heads} head_dim={head_dim} rotary={rotary_dim}"
                    );
                    if n_heads == 3 {
                        // The graph-replay form (position read from device memory) must
                        // give the same bits.
                        let dx2 = gpu.upload(&host)?;
                        let pos_buf = gpu.upload(&[pos0 as i32])?;
                        let pos = Pos::Device {
                            ptr: dptr(gpu, &pos_buf),
                            max_keys: pos0 + t,
                        };
                        launch_rope(gpu, dptr(gpu, &dx2) + 4, t, n_heads, head_dim, pos, &rope)?;
                        let same = gpu.download(&dx2)?[1..] == got[..];
                        outcomes.push(Outcome {
                            route: format!("{entry} (device position = host position)"),
                            shape: shape.clone(),
                            rel_l2: if same { 0.0 } else { f64::INFINITY },
                            allowance: 0.0,
                            pass: same,
                        });
                    }
                    outcomes.push(Outcome::compare(
                        entry.clone(),
                        shape.clone(),
                        &got,
                        &reference(&x, n_heads, head_dim, pos0, &rope),
                        ALLOW_F32,
                    ));
                    if n_heads == 24 && t == 64 {
                        let mut cpu = Mat::new(t, cols, x.clone());
                        CpuBackend.rope(&mut cpu, n_heads, head_dim, pos0, &rope);
                        let want: Vec<f64> = cpu.data.iter().map(|&v| v as f64).collect();
                        let rel = rel_l2(&got, &want);
                        outcomes.push(Outcome {
                            route: format!("{entry} (= cpu backend)"),
                            shape,
                            rel_l2: rel,
                            allowance: 1e-6,
                            pass: rel <= 1e-6,
                        });
                    }
                }
            }
        }
    }
    outcomes.extend(qualify_append(gpu, rng)?);
    Ok(outcomes)
}

/// [`launch_rope_append`] against the three launches it replaces, bit for bit (q and both
/// caches), at host and device positions, for both styles and cache types.
fn qualify_append(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    let mut outcomes = Vec::new();
    let normals = |rng: &mut dyn rand::RngCore, n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| rng.sample::<f32, _>(StandardNormal))
            .collect()
    };
    for style in [RopeStyle::Neox, RopeStyle::Interleaved] {
        for kv in KvType::ALL {
            // (t, pos0, n_heads, n_kv, head_dim, rotary_dim, theta)
            for (t, pos0, nh, nkv, hd, rd, theta) in [
                (1, 0, 9, 3, 64, 64, 10_000.0),
                (1, 4093, 24, 4, 256, 64, 10_000_000.0),
                (7, 300, 16, 8, 128, 128, 1_000_000.0),
            ] {
                let rope = Rope {
                    style,
                    theta,
                    rotary_dim: rd,
                };
                let kvw = nkv * hd;
                let cap = pos0 + t + 2;
                let q = normals(rng, t * nh * hd);
                let k = normals(rng, t * kvw);
                let v = normals(rng, t * kvw);
                let cache0 = normals(rng, cap * kvw);
                let up_cache = |gpu: &Gpu| crate::gpu::AnyBuffer::upload(gpu, kv.dtype(), &cache0);
                // The reference: three launches.
                let (q1, k1, v1) = (gpu.upload(&q)?, gpu.upload(&k)?, gpu.upload(&v)?);
                let (kc1, vc1) = (up_cache(gpu)?, up_cache(gpu)?);
                launch_rope(gpu, dptr(gpu, &q1), t, nh, hd, Pos::Host(pos0), &rope)?;
                launch_rope(gpu, dptr(gpu, &k1), t, nkv, hd, Pos::Host(pos0), &rope)?;
                launch_kv_append(
                    gpu,
                    kv,
                    dptr(gpu, &k1),
                    dptr(gpu, &v1),
                    kc1.device_ptr(gpu),
                    vc1.device_ptr(gpu),
                    Pos::Host(pos0),
                    t,
                    kvw,
                )?;
                let want_q = gpu.download(&q1)?;
                let (want_k, want_v) = (kc1.download(gpu)?, vc1.download(gpu)?);
                for device_pos in [false, true] {
                    let (q2, k2, v2) = (gpu.upload(&q)?, gpu.upload(&k)?, gpu.upload(&v)?);
                    let (kc2, vc2) = (up_cache(gpu)?, up_cache(gpu)?);
                    let pos_buf = gpu.upload(&[pos0 as i32])?;
                    let pos = if device_pos {
                        Pos::Device {
                            ptr: dptr(gpu, &pos_buf),
                            max_keys: cap,
                        }
                    } else {
                        Pos::Host(pos0)
                    };
                    launch_rope_append(
                        gpu,
                        dptr(gpu, &q2),
                        t,
                        nh,
                        hd,
                        pos,
                        &rope,
                        (dptr(gpu, &k2), dptr(gpu, &v2)),
                        (kc2.device_ptr(gpu), vc2.device_ptr(gpu)),
                        nkv,
                        kv,
                    )?;
                    let same = gpu.download(&q2)? == want_q
                        && kc2.download(gpu)? == want_k
                        && vc2.download(gpu)? == want_v;
                    let where_ = if device_pos { "device" } else { "host" };
                    outcomes.push(Outcome {
                        route: append_spec(style, kv).entry,
                        shape: format!(
                            "t={t} pos0={pos0} ({where_}) heads={nh}/{nkv} head_dim={hd} rotary={rd} (= rope, rope, kv append; bit-exact)"
                        ),
                        rel_l2: if same { 0.0 } else { f64::INFINITY },
                        allowance: 0.0,
                        pass: same,
                    });
                }
            }
        }
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::backend::Backend;
    use crate::engine::cpu::{CpuBackend, Mat};

    fn rope(style: RopeStyle, rotary_dim: usize) -> Rope {
        Rope {
            style,
            theta: 10_000.0,
            rotary_dim,
        }
    }

    #[test]
    fn position_zero_is_the_identity() {
        let x: Vec<f32> = (0..16).map(|i| i as f32 - 3.5).collect();
        for style in [RopeStyle::Neox, RopeStyle::Interleaved] {
            let y = reference(&x, 2, 8, 0, &rope(style, 8));
            assert!(y.iter().zip(&x).all(|(a, &b)| *a == b as f64));
        }
    }

    #[test]
    fn hand_computed_rotation() {
        // head_dim 4, full rotary: inv_freq = [1, 1/100]; position 1.
        let x = [1.0f32, 2.0, 3.0, 4.0];
        let (c0, s0) = (1f64.cos(), 1f64.sin());
        let a1 = (1.0f32 * 0.01f32) as f64;
        let (c1, s1) = (a1.cos(), a1.sin());
        let y = reference(&x, 1, 4, 1, &rope(RopeStyle::Neox, 4));
        // Neox pairs (0, 2) and (1, 3).
        let want = [
            1.0 * c0 - 3.0 * s0,
            2.0 * c1 - 4.0 * s1,
            3.0 * c0 + 1.0 * s0,
            4.0 * c1 + 2.0 * s1,
        ];
        for (a, b) in y.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        // Interleaved pairs (0, 1) and (2, 3).
        let y = reference(&x, 1, 4, 1, &rope(RopeStyle::Interleaved, 4));
        let want = [
            1.0 * c0 - 2.0 * s0,
            2.0 * c0 + 1.0 * s0,
            3.0 * c1 - 4.0 * s1,
            4.0 * c1 + 3.0 * s1,
        ];
        for (a, b) in y.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }

    #[test]
    fn partial_rotary_passes_the_tail_through_and_matches_the_cpu() {
        let (t, heads, hd, rd) = (3, 2, 16, 4);
        let x: Vec<f32> = (0..t * heads * hd)
            .map(|i| ((i * 37) % 11) as f32 - 5.0)
            .collect();
        for style in [RopeStyle::Neox, RopeStyle::Interleaved] {
            let r = rope(style, rd);
            let y = reference(&x, heads, hd, 262_140, &r);
            for (i, (a, &b)) in y.iter().zip(&x).enumerate() {
                if i % hd >= rd {
                    assert_eq!(*a, b as f64, "dim {} of a head rotated", i % hd);
                }
            }
            let mut cpu = Mat::new(t, heads * hd, x.clone());
            CpuBackend.rope(&mut cpu, heads, hd, 262_140, &r);
            assert!(rel_l2(&cpu.data, &y) < 1e-6);
        }
    }

    #[test]
    fn both_styles_are_registered_plain_and_fused() {
        let names: Vec<String> = instantiations().into_iter().map(|s| s.entry).collect();
        assert_eq!(
            names,
            [
                "rope_neox",
                "rope_append_neox_f32",
                "rope_append_neox_bf16",
                "rope_interleaved",
                "rope_append_interleaved_f32",
                "rope_append_interleaved_bf16",
            ]
        );
    }
}
