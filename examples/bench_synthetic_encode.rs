//! Host time to make and encode one synthetic weight, the work a `--synthetic` model's load
//! repeats for every linear: `cargo run --release --example bench_synthetic_encode
//! [-- MODEL FORMAT TENSOR]` (default `qwen3.6-27b q4_g64 layers.0.mlp.gate_proj`: the
//! first tensor whose name contains TENSOR). Prints the values' and the encode's wall
//! times, each the best of three, and the rayon thread count. Then the stacking the loader
//! does for gate_up (gate and up of the tensor's layer, when it is an MLP projection): the
//! parts made apart and stacked by a serial copy, against `stacked_f32` making them in
//! place into a new buffer, and `stacked_f32_into` into a reused one (what a load's
//! `LoadScratch` does).

use std::time::{Duration, Instant};

use ninfer::formats::{encode, format};
use ninfer::model::arch::{stacked_f32, stacked_f32_into};
use ninfer::model::synthetic::SyntheticWeights;
use ninfer::model::Weights;

fn best_of_three<T>(mut f: impl FnMut() -> T) -> (T, Duration) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..3 {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed());
        out = Some(v);
    }
    (out.expect("ran three times"), best)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
    let (model, fmt_name, want) = (
        arg(0, "qwen3.6-27b"),
        arg(1, "q4_g64"),
        arg(2, "layers.0.mlp.gate_proj"),
    );
    let weights = SyntheticWeights::new(&model, 0).unwrap_or_else(|e| panic!("{e}"));
    let fmt = format(&fmt_name).unwrap_or_else(|e| panic!("{e}"));
    let name = weights
        .names()
        .find(|n| n.contains(want.as_str()))
        .unwrap_or_else(|| panic!("no tensor of {model} contains {want}"))
        .to_string();
    let shape = weights.shape(&name).expect("listed").to_vec();
    let (n, k) = (shape[0], shape[1..].iter().product::<usize>());
    let (values, made) = best_of_three(|| weights.values(&name).expect("listed"));
    let (payload, encoded) = best_of_three(|| encode(fmt, &values, n, k).expect("encodes"));
    let per = |d: Duration| d.as_secs_f64() * 1e9 / values.len() as f64;
    println!(
        "{name} [{n}, {k}] -> {fmt_name} ({} bytes), {} rayon threads: values {:.1} ms ({:.2} ns a weight), encode {:.1} ms ({:.2} ns a weight)",
        payload.len(),
        rayon::current_num_threads(),
        made.as_secs_f64() * 1e3,
        per(made),
        encoded.as_secs_f64() * 1e3,
        per(encoded),
    );
    let Some(layer) = name.strip_suffix("gate_proj.weight") else {
        return;
    };
    let parts = [
        format!("{layer}gate_proj.weight"),
        format!("{layer}up_proj.weight"),
    ];
    let (apart, copied) = best_of_three(|| {
        let mut data = Vec::new();
        for p in &parts {
            data.extend(weights.values(p).expect("listed"));
        }
        data
    });
    let w = Weights::Synthetic(Box::new(weights));
    let ((in_place, _), made) = best_of_three(|| stacked_f32(&w, &parts, None).expect("stacks"));
    assert!(apart == in_place, "the same values either way");
    let mut scratch = Vec::new();
    stacked_f32_into(&w, &parts, None, &mut scratch).expect("stacks");
    let (_, reused) =
        best_of_three(|| stacked_f32_into(&w, &parts, None, &mut scratch).expect("stacks"));
    assert!(scratch == in_place, "the same values in a reused buffer");
    println!(
        "gate_up stacked [{}, {k}]: made apart and copied {:.1} ms, made in place {:.1} ms, \
         into a reused buffer {:.1} ms",
        in_place.len() / k,
        copied.as_secs_f64() * 1e3,
        made.as_secs_f64() * 1e3,
        reused.as_secs_f64() * 1e3,
    );
}
