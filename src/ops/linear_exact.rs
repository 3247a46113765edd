//! The exact linear route: `Y[T,N] = X[T,K] * W[N,K]^T` with f32 activations in and out,
//! W in any weight format, f32 accumulation. It is `templates/linear/gemv.cu` with
//! `act = "f32"`: the cuda backend's reference mode uses it so that the GPU engine can be
//! compared with the cpu backend to rounding error (bf16 activations would hide a real
//! bug inside their own 1e-2 noise). Dense formats take any K; the others need whole
//! groups. Larger T is tiled over launches of `tt` columns.

use rand::Rng;
use rand_distr::StandardNormal;

use super::linear::{reference_rows, Epilogue};
use super::weight::{random_payload, DeviceWeight};
use crate::formats::{Format, Layout};
use crate::gpu::{Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::jit::KernelSpec;
use crate::qualify::{Outcome, ALLOW_F32};

/// Column tiles instantiated: one token (decode) and eight (prefill, tiled).
pub const TILES: [u32; 2] = [1, 8];
const WARPS: u32 = 4;

/// One instantiation.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactRoute {
    pub format: &'static Format,
    pub tt: u32,
    /// `None` or `Residual` (`Y = X W^T + R`, R may be Y itself).
    pub epilogue: Epilogue,
}

impl ExactRoute {
    pub fn spec(&self) -> KernelSpec {
        let e = match self.epilogue {
            Epilogue::None => "plain",
            Epilogue::Residual => "res",
            Epilogue::Swiglu => panic!("the exact route has no SwiGLU epilogue"),
        };
        KernelSpec::new(
            "linear_exact",
            "linear/gemv.cu",
            format!("linear_exact_{}_{e}_t{}", self.format.name, self.tt),
        )
        .param("format", &self.format.name)
        .param("tt", self.tt)
        .param("rows", 1u32)
        .param("warps", WARPS)
        .param("epilogue", self.epilogue)
        .param("act", "f32")
    }

    /// One column for decode, eight otherwise.
    pub fn choose(format: &'static Format, t: usize, epilogue: Epilogue) -> Self {
        ExactRoute {
            format,
            tt: if t <= 1 { 1 } else { 8 },
            epilogue,
        }
    }
}

fn all_routes() -> Vec<ExactRoute> {
    let mut v = Vec::new();
    for format in crate::formats::registry().iter() {
        for tt in TILES {
            for epilogue in [Epilogue::None, Epilogue::Residual] {
                v.push(ExactRoute {
                    format,
                    tt,
                    epilogue,
                });
            }
        }
    }
    v
}

pub fn instantiations() -> Vec<KernelSpec> {
    all_routes().iter().map(ExactRoute::spec).collect()
}

/// Whether `w` can run on this route family: 16-byte aligned activation rows, and for
/// every non-dense format whole decode groups (the scale group, at least the 32-element
/// unit of `fmt_decode_group`, which row-scaled formats use too).
pub fn supports(format: &Format, k: usize) -> bool {
    let dense = format.kind == crate::formats::FormatKind::Dense;
    k.is_multiple_of(4) && (dense || k.is_multiple_of(format.group.max(32)))
}

/// Queues `y = x w^T (+ r)`: `x [t, K]`, `y [t, N]`, `r [t, N]` f32 device addresses.
pub fn launch(
    gpu: &Gpu,
    route: &ExactRoute,
    w: &DeviceWeight,
    x: u64,
    residual: Option<u64>,
    y: u64,
    t: usize,
) -> Result<(), GpuError> {
    let (n, k) = (w.layout.n, w.layout.k);
    assert_eq!(w.format.name, route.format.name, "weight format differs");
    assert!(
        supports(w.format, k),
        "K = {k} does not fit {}",
        w.format.name
    );
    assert_eq!(
        residual.is_some(),
        route.epilogue == Epilogue::Residual,
        "a residual launch needs the residual and only it"
    );
    if t == 0 || n == 0 {
        return Ok(());
    }
    let f = gpu.function(&route.spec())?;
    let (q, s) = w.planes(gpu);
    let (stride_q, stride_s) = (w.layout.q_row_bytes as i64, w.layout.s_row_bytes as i64);
    let (ni, ki) = (n as i32, k as i32);
    let r0 = residual.unwrap_or(y);
    let cfg = LaunchConfig {
        grid_dim: (n.div_ceil(WARPS as usize) as u32, 1, 1),
        block_dim: (WARPS * 32, 1, 1),
        shared_mem_bytes: 0,
    };
    let step = route.tt as usize;
    let mut col = 0;
    while col < t {
        let cols = step.min(t - col) as i32;
        let (xc, rc, yc) = (
            x + (col * k * 4) as u64,
            r0 + (col * n * 4) as u64,
            y + (col * n * 4) as u64,
        );
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&q)
            .arg(&s)
            .arg(&q)
            .arg(&s)
            .arg(&stride_q)
            .arg(&stride_s)
            .arg(&xc)
            .arg(&rc)
            .arg(&yc)
            .arg(&cols)
            .arg(&ni)
            .arg(&ki);
        // SAFETY: matches gemv.cu's signature; the kernel guards rows past N and columns
        // past `cols`; the caller sizes x, y and r to t rows.
        unsafe { b.launch(cfg) }
            .map_err(|e| GpuError::driver(format!("launching {}", route.spec().entry), e))?;
        col += step;
    }
    Ok(())
}

/// Shapes `(T, N, K)`: the tiny fixtures' odd widths (48, 144), SmolLM2's and a 27B one,
/// with T past one tile so the host tiling is covered.
const QUALIFY_SHAPES: [(usize, usize, usize); 6] = [
    (1, 64, 48),
    (3, 144, 64),
    (8, 1536, 576),
    (13, 576, 1536),
    (1, 5120, 17408),
    (5, 384, 144),
];

/// Every route at every shape its format can take, outputs poisoned, all rows checked.
pub fn qualify(
    gpu: &Gpu,
    rng: &mut impl Rng,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<Outcome>, GpuError> {
    let mut out = Vec::new();
    for route in all_routes() {
        if !wanted(&route.spec().entry) {
            continue;
        }
        for &(t, n, k) in &QUALIFY_SHAPES {
            if !supports(route.format, k) || (route.tt == 1 && t > 3) {
                continue;
            }
            let layout = Layout::new(route.format, n, k).expect("qualify shapes fit");
            let payload = random_payload(route.format, &layout, rng);
            let w = DeviceWeight::upload(gpu, route.format, layout, &payload)?;
            let draw = |rng: &mut dyn rand::RngCore, len: usize| -> Vec<f32> {
                (0..len).map(|_| rng.sample(StandardNormal)).collect()
            };
            let x = draw(rng, t * k);
            let r = draw(rng, t * n);
            let dx = gpu.upload(&x)?;
            let dr = gpu.upload(&r)?;
            let dy = gpu.upload(&vec![f32::NAN; t * n])?;
            let res = (route.epilogue == Epilogue::Residual).then(|| super::gdn::dptr(gpu, &dr));
            launch(
                gpu,
                &route,
                &w,
                super::gdn::dptr(gpu, &dx),
                res,
                super::gdn::dptr(gpu, &dy),
                t,
            )?;
            gpu.synchronize()?;
            let got = gpu.download(&dy)?;
            let rows: Vec<usize> = (0..n).collect();
            let w_rows: Vec<Vec<f32>> = rows
                .iter()
                .map(|&i| {
                    let mut row = vec![0f32; k];
                    crate::formats::decode_row(route.format, &w.layout, &payload, i, &mut row);
                    row
                })
                .collect();
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let want = reference_rows(
                &x64,
                (t, k),
                &w_rows,
                None,
                route.epilogue,
                |ti, row| r[ti * n + row] as f64,
                &rows,
            );
            out.push(Outcome::compare(
                route.spec().entry,
                format!("T={t} N={n} K={k}"),
                &got,
                &want,
                ALLOW_F32,
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supports_whole_groups_and_any_dense_width() {
        let f32f = crate::formats::format("f32").unwrap();
        let q4 = crate::formats::format("q4_g64").unwrap();
        assert!(supports(f32f, 48) && supports(f32f, 144));
        assert!(!supports(f32f, 6), "rows must stay 16-byte aligned");
        assert!(supports(q4, 128) && !supports(q4, 48));
        let i8r = crate::formats::format("i8_row").unwrap();
        assert!(
            supports(i8r, 64) && !supports(i8r, 48),
            "row-scaled decodes 32 at a time"
        );
    }

    #[test]
    fn the_f32_act_param_names_a_distinct_kernel() {
        let f = crate::formats::format("bf16").unwrap();
        let a = ExactRoute::choose(f, 1, Epilogue::None).spec();
        let b = ExactRoute::choose(f, 9, Epilogue::Residual).spec();
        assert_ne!(a.entry, b.entry);
        assert!(a.entry.starts_with("linear_exact_bf16_plain_t1"));
    }
}
