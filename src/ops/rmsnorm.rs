//! RMSNorm over the last dimension, in both weight conventions (MODEL_SPEC.md section 3):
//!
//! - plain (llama family, the GDN output norm): `y = x * rsqrt(mean(x^2) + eps) * w`
//! - zero-centred (every other qwen3.5/3.6 norm): `y = x * rsqrt(mean(x^2) + eps) * (1 + w)`
//!
//! computed in f32 (f64 in the reference), f32 or bf16 in and out, f32 weights.

use rand::Rng;
use rand_distr::StandardNormal;
use serde::Serialize;

use super::DType;
use crate::gpu::{AnyBuffer, CudaSlice, Gpu, GpuError, LaunchConfig};
use crate::jit::KernelSpec;
use crate::qualify::{allowance_for, Outcome};

/// Which weight convention a norm uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NormWeight {
    Plain,
    ZeroCentred,
}

impl NormWeight {
    pub const ALL: [NormWeight; 2] = [NormWeight::Plain, NormWeight::ZeroCentred];

    fn short(self) -> &'static str {
        match self {
            NormWeight::Plain => "plain",
            NormWeight::ZeroCentred => "zc",
        }
    }

    /// The factor a stored weight `w` applies.
    pub fn factor(self, w: f64) -> f64 {
        match self {
            NormWeight::Plain => w,
            NormWeight::ZeroCentred => 1.0 + w,
        }
    }
}

/// One RMSNorm kernel instantiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RmsNormRoute {
    pub weight: NormWeight,
    pub input: DType,
    pub output: DType,
    /// Threads per block (one block per row).
    pub block: u32,
}

/// Block sizes the family is instantiated with.
pub const BLOCKS: [u32; 2] = [128, 512];

impl RmsNormRoute {
    pub fn spec(&self) -> KernelSpec {
        let entry = format!(
            "rmsnorm_{}_{}_{}_b{}",
            self.weight.short(),
            self.input.short(),
            self.output.short(),
            self.block
        );
        KernelSpec::new("rmsnorm", "norm/rmsnorm.cu", entry)
            .param("weight", self.weight)
            .param("in_type", self.input.cuda_type())
            .param("out_type", self.output.cuda_type())
            .param("block", self.block)
            .programmatic()
    }

    /// The built-in heuristic: small rows get the small block.
    pub fn choose(weight: NormWeight, input: DType, output: DType, width: usize) -> Self {
        let block = if width >= 2048 { 512 } else { 128 };
        RmsNormRoute {
            weight,
            input,
            output,
            block,
        }
    }

    fn all() -> Vec<RmsNormRoute> {
        let mut routes = Vec::new();
        for weight in NormWeight::ALL {
            for input in DType::ALL {
                for output in DType::ALL {
                    for block in BLOCKS {
                        routes.push(RmsNormRoute {
                            weight,
                            input,
                            output,
                            block,
                        });
                    }
                }
            }
        }
        routes
    }
}

/// Every registered instantiation of the family.
pub fn instantiations() -> Vec<KernelSpec> {
    RmsNormRoute::all().iter().map(RmsNormRoute::spec).collect()
}

/// The f64 reference: `x` is `[rows, width]` row-major.
pub fn reference(x: &[f64], w: &[f64], width: usize, eps: f64, weight: NormWeight) -> Vec<f64> {
    assert_eq!(w.len(), width, "weight length must equal the row width");
    assert_eq!(
        x.len() % width.max(1),
        0,
        "input is not a whole number of rows"
    );
    let mut y = Vec::with_capacity(x.len());
    for row in x.chunks(width) {
        let mean_sq = row.iter().map(|v| v * v).sum::<f64>() / width as f64;
        let inv_rms = 1.0 / (mean_sq + eps).sqrt();
        y.extend(
            row.iter()
                .zip(w)
                .map(|(v, wi)| v * inv_rms * weight.factor(*wi)),
        );
    }
    y
}

/// The CPU op (f32 in and out, f64 inside).
pub fn rmsnorm_cpu(x: &[f32], w: &[f32], width: usize, eps: f32, weight: NormWeight) -> Vec<f32> {
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let w64: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    reference(&x64, &w64, width, eps as f64, weight)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// The rows an RMSNorm launch covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormShape {
    pub rows: usize,
    pub width: usize,
    pub eps: f32,
}

/// Queues `y = rmsnorm(x) * w` on the GPU's stream. `x` and `y` hold `rows * width`
/// elements of the route's types; `w` holds `width`.
pub fn launch(
    gpu: &Gpu,
    route: &RmsNormRoute,
    x: &AnyBuffer,
    w: &CudaSlice<f32>,
    y: &mut AnyBuffer,
    shape: NormShape,
) -> Result<(), GpuError> {
    let NormShape { rows, width, .. } = shape;
    assert_eq!(
        x.dtype(),
        route.input,
        "input type differs from the route's"
    );
    assert_eq!(
        y.dtype(),
        route.output,
        "output type differs from the route's"
    );
    assert!(x.len() >= rows * width && y.len() >= rows * width);
    launch_at(gpu, route, x.device_ptr(gpu), w, y.device_ptr(gpu), shape)
}

/// As [`launch`] with `x` and `y` at device addresses (each `rows * width` elements of the
/// route's types), e.g. a view into a larger buffer.
pub fn launch_at(
    gpu: &Gpu,
    route: &RmsNormRoute,
    xp: u64,
    w: &CudaSlice<f32>,
    yp: u64,
    shape: NormShape,
) -> Result<(), GpuError> {
    let NormShape { rows, width, eps } = shape;
    assert!(w.len() >= width);
    if rows == 0 {
        return Ok(());
    }
    let f = gpu.kernel(&route.spec())?;
    let cfg = LaunchConfig {
        grid_dim: (rows as u32, 1, 1),
        block_dim: (route.block, 1, 1),
        shared_mem_bytes: 0,
    };
    let width_i = width as i32;
    let mut b = gpu.launch(&f);
    b.arg(&xp).arg(w).arg(&yp).arg(&width_i).arg(&eps);
    // SAFETY: the argument list matches the template's signature; the asserts above
    // bound every access to the buffers.
    unsafe { b.launch(cfg) }
        .map_err(|e| GpuError::driver(format!("launching {}", route.spec().entry), e))?;
    Ok(())
}

/// Shapes (rows, width) every route is checked at: odd widths, tiny and real ones
/// (SmolLM2 576, Qwen3.6 head_dim 256 and hidden 5120, and the MLP width 17408).
pub const QUALIFY_SHAPES: [(usize, usize); 7] = [
    (1, 1),
    (3, 7),
    (5, 576),
    (64, 256),
    (2, 1000),
    (4, 5120),
    (2, 17408),
];

/// Runs every route at every qualify shape against the f64 reference.
pub fn qualify(gpu: &Gpu, rng: &mut impl Rng) -> Result<Vec<Outcome>, GpuError> {
    let eps = 1e-6f32;
    let mut outcomes = Vec::new();
    for route in RmsNormRoute::all() {
        for &(rows, width) in &QUALIFY_SHAPES {
            let x: Vec<f32> = (0..rows * width)
                .map(|_| {
                    route
                        .input
                        .round(rng.sample::<f32, _>(StandardNormal) * 2.0)
                })
                .collect();
            let w: Vec<f32> = (0..width)
                .map(|_| {
                    let n = rng.sample::<f32, _>(StandardNormal) * 0.1;
                    match route.weight {
                        NormWeight::Plain => 1.0 + n,
                        NormWeight::ZeroCentred => n,
                    }
                })
                .collect();
            let dx = AnyBuffer::upload(gpu, route.input, &x)?;
            let dw = gpu.upload(&w)?;
            let mut dy = AnyBuffer::poisoned(gpu, route.output, rows * width)?;
            launch(
                gpu,
                &route,
                &dx,
                &dw,
                &mut dy,
                NormShape { rows, width, eps },
            )?;
            gpu.synchronize()?;
            let got = dy.download(gpu)?;
            let want = reference(
                &x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                &w.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                width,
                eps as f64,
                route.weight,
            );
            outcomes.push(Outcome::compare(
                route.spec().entry,
                format!("rows={rows} width={width}"),
                &got,
                &want,
                allowance_for(route.output),
            ));
        }
    }
    outcomes.push(qualify_graph_replay(gpu, rng)?);
    Ok(outcomes)
}

/// The same launch captured once in a CUDA graph and replayed on new input data written
/// into the captured buffers: what the decode step will do every token.
fn qualify_graph_replay(gpu: &Gpu, rng: &mut impl Rng) -> Result<Outcome, GpuError> {
    let (rows, width, eps) = (8usize, 5120usize, 1e-6f32);
    let route = RmsNormRoute::choose(NormWeight::ZeroCentred, DType::F32, DType::Bf16, width);
    let mut draw = |n: usize, s: f32| -> Vec<f32> {
        (0..n)
            .map(|_| rng.sample::<f32, _>(StandardNormal) * s)
            .collect()
    };
    let w = draw(width, 0.1);
    let dw = gpu.upload(&w)?;
    let mut dx = AnyBuffer::upload(gpu, DType::F32, &vec![0.0; rows * width])?;
    let mut dy = AnyBuffer::poisoned(gpu, DType::Bf16, rows * width)?;
    let graph = crate::gpu::Graph::capture(gpu, || {
        launch(
            gpu,
            &route,
            &dx,
            &dw,
            &mut dy,
            NormShape { rows, width, eps },
        )
    })?;
    let mut worst: Option<Outcome> = None;
    for _ in 0..3 {
        let x = draw(rows * width, 2.0);
        dx.write(gpu, &x)?;
        dy.write(gpu, &vec![f32::NAN; rows * width])?;
        graph.replay()?;
        gpu.synchronize()?;
        let want = reference(
            &x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            &w.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            width,
            eps as f64,
            NormWeight::ZeroCentred,
        );
        let o = Outcome::compare(
            format!("{} (graph replay)", route.spec().entry),
            format!("rows={rows} width={width}"),
            &dy.download(gpu)?,
            &want,
            allowance_for(DType::Bf16),
        );
        if worst.as_ref().is_none_or(|w| w.rel_l2 < o.rel_l2) {
            worst = Some(o);
        }
    }
    Ok(worst.expect("three replays ran"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_normalises_to_unit_rms_with_unit_weight() {
        let x = [3.0, -4.0, 0.0, 12.0];
        let y = reference(&x, &[1.0; 4], 4, 0.0, NormWeight::Plain);
        let rms = (y.iter().map(|v| v * v).sum::<f64>() / 4.0).sqrt();
        assert!((rms - 1.0).abs() < 1e-12);
        // Zero-centred with w = 0 is the same as plain with w = 1.
        let z = reference(&x, &[0.0; 4], 4, 0.0, NormWeight::ZeroCentred);
        assert_eq!(y, z);
    }

    #[test]
    fn reference_matches_a_hand_computation() {
        // rows [1, 2] and [2, 2]; mean squares 2.5 and 4; eps 0.5.
        let x = [1.0, 2.0, 2.0, 2.0];
        let w = [2.0, -1.0];
        let y = reference(&x, &w, 2, 0.5, NormWeight::Plain);
        let want = [
            1.0 / 3f64.sqrt() * 2.0,
            -(2.0 / 3f64.sqrt()),
            2.0 / 4.5f64.sqrt() * 2.0,
            -(2.0 / 4.5f64.sqrt()),
        ];
        for (a, b) in y.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        let zc = reference(&x, &w, 2, 0.5, NormWeight::ZeroCentred);
        assert!(
            (zc[1] - 0.0).abs() < 1e-12,
            "1 + w = 0 must zero the element"
        );
    }

    #[test]
    fn every_combination_is_registered_once() {
        let specs = instantiations();
        assert_eq!(specs.len(), 2 * 2 * 2 * BLOCKS.len());
    }
}
