//! Transcode throughput: a random `q8_g32` weight of the Qwen3.6-27B head shape
//! (248320 x 5120, 1.27 G weights) to `q4_g64` and `q6_g64` on the host path.
//!
//! `cargo run --release --example bench_transcode [-- N K]` (default N = 248320, K = 5120).
//! Prints weights/s in total and per rayon thread.

use std::time::Instant;

use ninfer::formats::{format, transcode_q8_g32_into, Layout};
use rayon::prelude::*;

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// This process's CPU time (user + system) in seconds, from /proc/self/stat (Linux).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("N and K are integers"))
        .collect();
    let (n, k) = match args.as_slice() {
        [] => (248_320, 5_120),
        [n, k] => (*n, *k),
        _ => panic!("usage: bench_transcode [N K]"),
    };
    let threads = rayon::current_num_threads();
    let q8 = format("q8_g32").unwrap();
    let sl = Layout::new(q8, n, k).unwrap();
    let weights = (n * k) as f64;

    // Random q8_g32 input, generated row-parallel: codes from a bell-ish distribution (sum of
    // two uniforms) with a rare outlier, scales log-uniform around 2^-7.
    let t0 = Instant::now();
    let mut src = vec![0u8; sl.total_bytes];
    {
        let (qp, sp) = src.split_at_mut(sl.s_offset);
        qp[..n * k]
            .par_chunks_mut(k)
            .enumerate()
            .for_each(|(r, row)| {
                let mut st = splitmix(r as u64 + 1);
                for c in row.chunks_mut(8) {
                    st = splitmix(st);
                    for (i, b) in c.iter_mut().enumerate() {
                        let byte = (st >> (8 * i)) as u8;
                        let a = (byte & 0x0f) as i32 + (byte >> 4) as i32 - 15; // -15..=15
                        *b = if byte == 0xff {
                            127
                        } else {
                            (a * 4) as i8 as u8
                        };
                    }
                }
            });
        sp[..n * sl.s_row_bytes]
            .par_chunks_mut(sl.s_row_bytes)
            .enumerate()
            .for_each(|(r, row)| {
                let mut st = splitmix(!(r as u64));
                for s in row.chunks_mut(2) {
                    st = splitmix(st);
                    let e = -9.0 + (st % 1000) as f32 / 250.0; // 2^-9 .. 2^-5
                    s.copy_from_slice(&half::f16::from_f32(e.exp2()).to_bits().to_le_bytes());
                }
            });
    }
    println!(
        "input: q8_g32 [{n}, {k}] = {:.3} G weights, {:.2} GB, generated in {:.1} s",
        weights / 1e9,
        sl.total_bytes as f64 / 1e9,
        t0.elapsed().as_secs_f64()
    );
    println!("rayon threads: {threads}");

    for name in ["q4_g64", "q6_g64"] {
        let target = format(name).unwrap();
        let tl = Layout::new(target, n, k).unwrap();
        let mut dst = vec![0u8; tl.total_bytes];
        // Touch the output once so page faults are not timed.
        dst.par_chunks_mut(1 << 20).for_each(|c| c.fill(1));
        let c0 = cpu_seconds();
        let t = Instant::now();
        transcode_q8_g32_into(&src, n, k, target, &mut dst).unwrap();
        let s = t.elapsed().as_secs_f64();
        let cpu = c0.and_then(|c0| cpu_seconds().map(|c1| c1 - c0));
        let checksum = dst
            .iter()
            .step_by(4097)
            .fold(0u64, |a, &b| a.wrapping_mul(31).wrapping_add(b as u64));
        println!(
            "q8_g32 -> {name}: {:.2} s, {:.1} M weights/s total, {:.1} M weights/s per thread ({} threads), output {:.2} GB, checksum {checksum:016x}",
            s,
            weights / s / 1e6,
            weights / s / 1e6 / threads as f64,
            threads,
            tl.total_bytes as f64 / 1e9
        );
        if let Some(cpu) = cpu {
            println!(
                "    CPU time {cpu:.2} s ({:.2} cores busy on average): {:.1} M weights per CPU-second",
                cpu / s,
                weights / cpu / 1e6
            );
        }
    }
}
