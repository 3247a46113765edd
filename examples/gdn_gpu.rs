//! The GDN job on the GPU machine (until `ninfer bench kernels` calls `gdn::bench`):
//! qualify every GDN route (including record/replay exactness and the 27B drift run),
//! measure the ceilings, run the GDN benchmarks, merge the peer's timings, print a table
//! and write JSON lines.
//!
//! `gdn_gpu [--seed N] [--peer PEER.jsonl] [--peer-called CALLED.jsonl] [--json BENCH.jsonl]
//!          [--qualify-json QUALIFY.jsonl] [--rev REV] [--skip-qualify] [--skip-bench]
//!          [--prefill-only | --decode-only]`

use std::process::ExitCode;

use ninfer::bench::{merge_peers, BenchCtx, BenchRecord, PeerTiming};
use ninfer::gpu::Gpu;
use ninfer::ops::gdn::{self, StateType, QWEN36_27B};
use rand::rngs::StdRng;
use rand::SeedableRng;

fn read_peers(path: &str) -> Vec<PeerTiming> {
    std::fs::read_to_string(path)
        .map(|s| {
            s.lines()
                .filter(|l| !l.trim().is_empty())
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_else(|e| {
            eprintln!("no peer timings from {path}: {e}");
            Vec::new()
        })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| -> Option<String> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let flag = |name: &str| args.iter().any(|a| a == name);
    let gpu = match Gpu::open(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let seed: u64 = opt("--seed").and_then(|s| s.parse().ok()).unwrap_or(5);
    // Compile every GDN kernel up front, in parallel (NVRTC is single-threaded per call).
    {
        use rayon::prelude::*;
        let t0 = std::time::Instant::now();
        let arch = gpu.props().arch();
        let errs: Vec<String> = gdn::instantiations()
            .par_iter()
            .filter_map(|spec| match ninfer::jit::Jit::global() {
                Ok(jit) => jit
                    .cubin(spec, arch)
                    .err()
                    .map(|e| format!("{}: {e}", spec.entry)),
                Err(e) => Some(e.to_string()),
            })
            .collect();
        eprintln!(
            "compiled {} GDN kernels in {:.1} s",
            gdn::instantiations().len(),
            t0.elapsed().as_secs_f64()
        );
        for e in &errs {
            eprintln!("error: {e}");
        }
        if !errs.is_empty() {
            return ExitCode::from(1);
        }
    }
    let mut failed = false;
    let mut summary = String::new();
    if !flag("--skip-qualify") {
        let mut rng = StdRng::seed_from_u64(seed);
        let t0 = std::time::Instant::now();
        let q = if flag("--prefill-only") {
            gdn::qualify_prefill(&gpu, &mut rng)
        } else if flag("--decode-only") {
            gdn::qualify_decode(&gpu, &mut rng)
        } else {
            gdn::qualify(&gpu, &mut rng)
        };
        match q {
            Ok(outcomes) => {
                print!("{}", ninfer::qualify::format_table(&outcomes));
                let fails = outcomes.iter().filter(|o| !o.pass).count();
                summary += &format!(
                    "qualify (seed {seed}): {}/{} pass, {:.1} s\n",
                    outcomes.len() - fails,
                    outcomes.len(),
                    t0.elapsed().as_secs_f64()
                );
                for o in outcomes.iter().filter(|o| o.route.contains("drift")) {
                    summary += &format!(
                        "  {}: worst {:.3}% ({})\n",
                        o.route,
                        o.rel_l2 * 100.0,
                        if o.pass { "pass" } else { "FAIL" }
                    );
                }
                for o in outcomes.iter().filter(|o| !o.pass).take(20) {
                    summary += &format!("  FAIL {} [{}] rel {:.3e}\n", o.route, o.shape, o.rel_l2);
                }
                failed |= fails > 0;
                if let Some(p) = opt("--qualify-json") {
                    let s: String = outcomes
                        .iter()
                        .map(|o| serde_json::to_string(o).unwrap() + "\n")
                        .collect();
                    let _ = std::fs::write(p, s);
                }
            }
            Err(e) => {
                summary += &format!("qualify error: {e}\n");
                failed = true;
            }
        }
    }
    if !flag("--skip-bench") {
        let run = || -> Result<(f64, Vec<BenchRecord>), ninfer::gpu::GpuError> {
            let copy = ninfer::bench::measure_copy_bandwidth(&gpu)?;
            let gemm = ninfer::bench::measure_gemm_rate(&gpu).ok();
            let ctx = BenchCtx {
                gpu: &gpu,
                copy_bytes_per_s: copy,
                gemm_flops_per_s: gemm,
                rev: opt("--rev").unwrap_or_else(|| "unknown".into()),
                command: args.join(" "),
            };
            summary_ceilings(copy, gemm);
            let recs = if flag("--prefill-only") {
                let mut rng = StdRng::seed_from_u64(7);
                let p = gdn::drift::realistic_params(&QWEN36_27B, &mut rng);
                let w = gdn::GdnWeights::upload(&gpu, QWEN36_27B, &p)?;
                gdn::bench::bench_prefill(&ctx, &w)?
            } else if flag("--decode-only") {
                gdn::bench::bench_decode(&ctx, &gdn::bench::bench_weights(&gpu)?)?
            } else {
                gdn::bench(&ctx)?
            };
            Ok((copy, recs))
        };
        match run() {
            Ok((copy, mut records)) => {
                let peers = opt("--peer").map(|p| read_peers(&p)).unwrap_or_default();
                let called = opt("--peer-called")
                    .map(|p| read_peers(&p))
                    .unwrap_or_default();
                merge_peers(&mut records, &peers);
                if let Some(p) = opt("--json") {
                    let s: String = records
                        .iter()
                        .map(|r| serde_json::to_string(r).unwrap() + "\n")
                        .collect();
                    let _ = std::fs::write(p, s);
                }
                summary += &format!("copy {:.0} GB/s\n", copy * 1e-9);
                summary += &format!(
                    "{:11} {:44} {:34} {:>9} {:>7} {:>6} {:>9} {:>9} {:>7}\n",
                    "what",
                    "shape",
                    "route",
                    "us",
                    "GB/s",
                    "st.frac",
                    "fla graph",
                    "fla call",
                    "speedup"
                );
                for r in &records {
                    let d = QWEN36_27B;
                    let state_frac = if r.what == gdn::bench::DECODE_WHAT {
                        let ty = if r.shape.ends_with("f16") {
                            StateType::F16
                        } else {
                            StateType::F32
                        };
                        let lanes: f64 = r
                            .shape
                            .split_whitespace()
                            .next()
                            .and_then(|s| s.strip_prefix("lanes="))
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(1.0);
                        let (sb, _) = gdn::bench::decode_bytes(&d, ty);
                        format!("{:.2}", lanes * sb / (r.median_us * 1e-6) / copy)
                    } else {
                        "-".into()
                    };
                    let call = called
                        .iter()
                        .find(|p| p.what == r.what && p.shape == r.shape)
                        .map(|p| format!("{:.1}", p.median_us))
                        .unwrap_or_else(|| "-".into());
                    summary += &format!(
                        "{:11} {:44} {:34} {:9.2} {:7.0} {:>6} {:>9} {:>9} {:>7}\n",
                        r.what,
                        r.shape,
                        r.route.chars().take(34).collect::<String>(),
                        r.median_us,
                        r.bytes / (r.median_us * 1e-6) * 1e-9,
                        state_frac,
                        r.peer_median_us
                            .map(|v| format!("{v:.1}"))
                            .unwrap_or_else(|| "-".into()),
                        call,
                        r.speedup_vs_peer
                            .map(|v| format!("{v:.2}x"))
                            .unwrap_or_else(|| "-".into()),
                    );
                }
            }
            Err(e) => {
                summary += &format!("bench error: {e}\n");
                failed = true;
            }
        }
    }
    println!("\n{summary}");
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn summary_ceilings(copy: f64, gemm: Option<f64>) {
    eprintln!(
        "ceilings: copy {:.0} GB/s, bf16 GEMM {}",
        copy * 1e-9,
        gemm.map(|g| format!("{:.0} TFLOP/s", g * 1e-12))
            .unwrap_or_else(|| "not measured".into())
    );
}
