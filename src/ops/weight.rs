//! A weight on the device in one of the engine's formats: the planar payload (quant plane,
//! then scale plane) and its layout. Plus random payloads for qualification and benchmarks.

use rand::Rng;
use rand_distr::StandardNormal;

use crate::formats::{DenseType, Format, FormatKind, Layout, ScaleType};
use crate::gpu::{CudaSlice, Gpu, GpuError};

/// An `[N, K]` weight uploaded in its format.
pub struct DeviceWeight {
    pub format: &'static Format,
    pub layout: Layout,
    pub data: CudaSlice<u8>,
}

impl DeviceWeight {
    pub fn upload(
        gpu: &Gpu,
        format: &'static Format,
        layout: Layout,
        payload: &[u8],
    ) -> Result<Self, GpuError> {
        assert_eq!(
            payload.len(),
            layout.total_bytes,
            "payload does not match its layout"
        );
        // Dense formats have no scale plane; keep one byte so the pointer is valid.
        let data = if payload.is_empty() {
            gpu.upload(&[0u8])?
        } else {
            gpu.upload(payload)?
        };
        Ok(DeviceWeight {
            format,
            layout,
            data,
        })
    }

    /// Device addresses of the quant plane and the scale plane.
    pub fn planes(&self, gpu: &Gpu) -> (u64, u64) {
        use cudarc::driver::DevicePtr;
        let base = self.data.device_ptr(gpu.stream()).0;
        let s = if self.layout.s_row_bytes == 0 {
            base
        } else {
            base + self.layout.s_offset as u64
        };
        (base + self.layout.q_offset as u64, s)
    }

    pub fn bytes(&self) -> usize {
        self.layout.total_bytes
    }
}

/// A fresh random weight of `[n, k]` in `fmt` on the device, and its payload (for the
/// routes' qualification checks).
pub fn random_weight(
    gpu: &Gpu,
    fmt: &'static Format,
    n: usize,
    k: usize,
    rng: &mut impl Rng,
) -> Result<(DeviceWeight, Vec<u8>), GpuError> {
    let layout = Layout::new(fmt, n, k).expect("qualify shapes fit every format");
    let payload = random_payload(fmt, &layout, rng);
    Ok((DeviceWeight::upload(gpu, fmt, layout, &payload)?, payload))
}

/// Copies of one random `[n, k]` weight in `fmt`, enough to rotate past L2, so that a timed
/// launch never finds its weights cached by the one before (benchmarks).
pub fn rotated_weights(
    gpu: &Gpu,
    fmt: &'static Format,
    (n, k): (usize, usize),
    rng: &mut impl Rng,
) -> Result<(Layout, Vec<DeviceWeight>), GpuError> {
    let layout = Layout::new(fmt, n, k).expect("bench shapes fit");
    let payload = random_payload(fmt, &layout, rng);
    let weights = (0..crate::bench::rotation_sets(gpu, layout.total_bytes))
        .map(|_| DeviceWeight::upload(gpu, fmt, layout, &payload))
        .collect::<Result<_, _>>()?;
    Ok((layout, weights))
}

/// The cuBLAS peer's bf16 `[n, k]` weight, in copies rotated past L2 as `rotated_weights`'.
/// Timing needs non-zero values, not fresh ones: one random block is repeated rather than
/// 1.3 G normals drawn for the head.
pub fn rotated_bf16_weights(
    gpu: &Gpu,
    (n, k): (usize, usize),
    rng: &mut impl Rng,
) -> Result<Vec<CudaSlice<u16>>, GpuError> {
    let (block, _) = random_bf16(1 << 20, 0.05, rng);
    let wb: Vec<u16> = block.iter().copied().cycle().take(n * k).collect();
    (0..crate::bench::rotation_sets(gpu, n * k * 2))
        .map(|_| gpu.upload(&wb))
        .collect()
}

/// A random but valid payload: random codes in the quant plane, finite scales of weight-like
/// size in the scale plane, normal values for dense formats. Any payload is a weight, so
/// this exercises every code path without the cost of encoding floats.
pub fn random_payload(fmt: &Format, layout: &Layout, rng: &mut impl Rng) -> Vec<u8> {
    let mut p = vec![0u8; layout.total_bytes];
    match fmt.kind {
        FormatKind::Dense => {
            let dt = fmt.dtype.expect("dense formats have a dtype");
            let width = (dt.bits() / 8) as usize;
            for chunk in p[layout.q_plane()].chunks_exact_mut(width) {
                let v = rng.sample::<f32, _>(StandardNormal) * 0.05;
                match dt {
                    DenseType::F32 => chunk.copy_from_slice(&v.to_le_bytes()),
                    DenseType::F16 => {
                        chunk.copy_from_slice(&half::f16::from_f32(v).to_bits().to_le_bytes())
                    }
                    DenseType::Bf16 => {
                        chunk.copy_from_slice(&half::bf16::from_f32(v).to_bits().to_le_bytes())
                    }
                }
            }
        }
        _ => {
            rng.fill(&mut p[layout.q_plane()]);
            // Scales (and the affine mins) of the size real weights have: |x| ~ 0.05.
            let qmax = fmt.qmax().max(1) as f32;
            let s_plane = layout.s_plane();
            match fmt.scale {
                ScaleType::F16 => {
                    for chunk in p[s_plane].chunks_exact_mut(2) {
                        let v = rng.random_range(-1.0f32..1.0) * 0.1 / qmax;
                        chunk.copy_from_slice(&half::f16::from_f32(v).to_bits().to_le_bytes());
                    }
                }
                ScaleType::F32 => {
                    for chunk in p[s_plane].chunks_exact_mut(4) {
                        let v = rng.random_range(0.2f32..1.0) * 0.1 / qmax;
                        chunk.copy_from_slice(&v.to_le_bytes());
                    }
                }
                ScaleType::None => {}
            }
        }
    }
    p
}

/// Random bf16 activations (as raw bits and as the exact f64 values they hold).
pub fn random_bf16(len: usize, scale: f32, rng: &mut impl Rng) -> (Vec<u16>, Vec<f64>) {
    let bits: Vec<u16> = (0..len)
        .map(|_| half::bf16::from_f32(rng.sample::<f32, _>(StandardNormal) * scale).to_bits())
        .collect();
    let vals = bits
        .iter()
        .map(|&b| half::bf16::from_bits(b).to_f64())
        .collect();
    (bits, vals)
}
