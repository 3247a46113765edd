//! The batched decode step (`CausalLm::forward_lanes`) on the cpu backend with the tiny
//! fixtures: lanes at different positions, decoded together, give each lane the tokens and
//! (to rounding) the logits of its own single-sequence run; the greedy steps
//! (`forward_greedy`, `forward_lanes_greedy`) give the same tokens.

use std::path::PathBuf;

use ninfer::engine::generate::argmax;
use ninfer::engine::CpuBackend;
use ninfer::model::arch::{self, CausalLm, LogitsWanted};
use ninfer::model::{open_model, ModelLocation};

fn rel_l2(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den).sqrt()
}

/// Three lanes (prompts of 3, 5 and 8 tokens), `steps` greedy steps decoded together,
/// against each lane decoded alone.
fn lanes_match_single(name: &str, steps: usize) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tiny")
        .join(name);
    let files = open_model(&ModelLocation::HfDir(dir)).unwrap();
    let model = arch::load(&CpuBackend, &files).unwrap();
    let vocab = model.vocab_size() as u32;
    let prompts: Vec<Vec<u32>> = [3usize, 5, 8]
        .iter()
        .enumerate()
        .map(|(l, &n)| {
            (0..n as u32)
                .map(|i| (7 * i + 3 * l as u32 + 1) % vocab)
                .collect()
        })
        .collect();

    // Each lane alone: its greedy tokens and every step's logits.
    let alone: Vec<(Vec<u32>, Vec<Vec<f32>>)> = prompts
        .iter()
        .map(|p| {
            let mut st = model.new_state();
            let mut logits = model.forward(&mut st, p, LogitsWanted::Last);
            let (mut toks, mut rows) = (Vec::new(), Vec::new());
            for _ in 0..steps {
                let t = argmax(&logits);
                toks.push(t);
                logits = model.forward(&mut st, &[t], LogitsWanted::Last);
                rows.push(logits.clone());
            }
            (toks, rows)
        })
        .collect();

    // Together: prefill each, then one batched step per token.
    let mut states: Vec<_> = prompts.iter().map(|_| model.new_state()).collect();
    let mut last: Vec<Vec<f32>> = prompts
        .iter()
        .zip(states.iter_mut())
        .map(|(p, s)| model.forward(s, p, LogitsWanted::Last))
        .collect();
    let mut refs: Vec<_> = states.iter_mut().collect();
    for k in 0..steps {
        let ids: Vec<u32> = last.iter().map(|l| argmax(l)).collect();
        for (lane, &id) in ids.iter().enumerate() {
            assert_eq!(id, alone[lane].0[k], "{name}: lane {lane} token {k}");
        }
        last = model.forward_lanes(&mut refs, &ids);
        for (lane, l) in last.iter().enumerate() {
            let e = rel_l2(l, &alone[lane].1[k]);
            assert!(e < 1e-5, "{name}: lane {lane} step {k}: rel L2 {e:.3e}");
        }
    }
    for (lane, s) in refs.iter().enumerate() {
        assert_eq!(
            model.position(s),
            prompts[lane].len() + steps,
            "{name}: lane {lane}"
        );
    }

    // The greedy steps (`forward_greedy` alone, `forward_lanes_greedy` together) pick the
    // same tokens as the argmax of the logits, and advance the states alike.
    let first: Vec<u32> = prompts
        .iter()
        .map(|p| argmax(&model.forward(&mut model.new_state(), p, LogitsWanted::Last)))
        .collect();
    for (lane, p) in prompts.iter().enumerate() {
        let mut st = model.new_state();
        model.forward(&mut st, p, LogitsWanted::Last);
        let mut t = first[lane];
        for k in 0..steps.saturating_sub(1) {
            t = model.forward_greedy(&mut st, t);
            assert_eq!(
                t,
                alone[lane].0[k + 1],
                "{name}: lane {lane} greedy token {}",
                k + 1
            );
        }
    }
    let mut states: Vec<_> = prompts.iter().map(|_| model.new_state()).collect();
    for (p, s) in prompts.iter().zip(states.iter_mut()) {
        model.forward(s, p, LogitsWanted::Last);
    }
    let mut refs: Vec<_> = states.iter_mut().collect();
    let mut ids = first;
    for k in 0..steps.saturating_sub(1) {
        ids = model.forward_lanes_greedy(&mut refs, &ids);
        for (lane, &id) in ids.iter().enumerate() {
            assert_eq!(
                id,
                alone[lane].0[k + 1],
                "{name}: lane {lane} lanes greedy token {}",
                k + 1
            );
        }
    }
    for (lane, s) in refs.iter().enumerate() {
        assert_eq!(
            model.position(s),
            prompts[lane].len() + steps - 1,
            "{name}: lane {lane}"
        );
    }
}

#[test]
fn llama_lanes_match_single_sequences() {
    lanes_match_single("llama", 6);
}

#[test]
fn qwen3_lanes_match_single_sequences() {
    lanes_match_single("qwen3", 4);
}

#[test]
fn qwen35_lanes_match_single_sequences() {
    lanes_match_single("qwen35_r2", 6);
}

#[test]
fn qwen35_moe_lanes_match_single_sequences() {
    lanes_match_single("qwen35_moe", 4);
}

#[test]
fn qwen3_next_lanes_match_single_sequences() {
    lanes_match_single("qwen3_next", 4);
}
