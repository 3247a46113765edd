//! A check of the tensor-core wrappers in `templates/common/mma.cuh`: a small
//! `Y[M,N] = A[M,K] * B[N,K]^T` (bf16 in, f32 out), one warp per 16x8 tile. Qualifying it
//! proves the fragment layout that the real GEMM kernels build on.

use half::bf16;
use rand::Rng;
use rand_distr::StandardNormal;

use crate::gpu::{Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::jit::KernelSpec;
use crate::qualify::{Outcome, ALLOW_F32};

pub fn spec() -> KernelSpec {
    KernelSpec::new(
        "mma_probe",
        "selftest/mma_bf16.cu",
        "mma_probe_bf16_m16n8k16",
    )
}

pub fn instantiations() -> Vec<KernelSpec> {
    vec![spec()]
}

/// f64 reference of `A * B^T` for row-major `a [m,k]`, `b [n,k]`.
pub fn reference(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut y = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            y[i * n + j] = (0..k).map(|p| a[i * k + p] * b[j * k + p]).sum();
        }
    }
    y
}

/// Runs the probe on the GPU. Needs `m % 16 == 0`, `n % 8 == 0`, `k % 16 == 0`.
pub fn run(
    gpu: &Gpu,
    a: &[u16],
    b: &[u16],
    m: usize,
    n: usize,
    k: usize,
) -> Result<Vec<f32>, GpuError> {
    assert!(
        m.is_multiple_of(16) && n.is_multiple_of(8) && k.is_multiple_of(16),
        "probe shape not tile-aligned"
    );
    let f = gpu.function(&spec())?;
    let da = gpu.upload(a)?;
    let db = gpu.upload(b)?;
    let mut dy = gpu.upload(&vec![f32::NAN; m * n])?;
    let cfg = LaunchConfig {
        grid_dim: ((n / 8) as u32, (m / 16) as u32, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let mut builder = gpu.stream().launch_builder(&f);
    builder
        .arg(&da)
        .arg(&db)
        .arg(&mut dy)
        .arg(&mi)
        .arg(&ni)
        .arg(&ki);
    // SAFETY: arguments match the template's signature; the shape assert bounds the tiles.
    unsafe { builder.launch(cfg) }.map_err(|e| GpuError::driver("launching mma_probe", e))?;
    gpu.synchronize()?;
    gpu.download(&dy)
}

pub const QUALIFY_SHAPES: [(usize, usize, usize); 3] = [(16, 8, 16), (64, 40, 256), (32, 64, 1024)];

pub fn qualify(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    let mut outcomes = Vec::new();
    for &(m, n, k) in &QUALIFY_SHAPES {
        let mut draw = |len: usize| -> Vec<u16> {
            (0..len)
                .map(|_| bf16::from_f32(rng.sample::<f32, _>(StandardNormal)).to_bits())
                .collect()
        };
        let (a, b) = (draw(m * k), draw(n * k));
        let got = run(gpu, &a, &b, m, n, k)?;
        let to64 =
            |v: &[u16]| -> Vec<f64> { v.iter().map(|&x| bf16::from_bits(x).to_f64()).collect() };
        let want = reference(&to64(&a), &to64(&b), m, n, k);
        outcomes.push(Outcome::compare(
            spec().entry,
            format!("m={m} n={n} k={k}"),
            &got,
            &want,
            ALLOW_F32,
        ));
    }
    Ok(outcomes)
}
