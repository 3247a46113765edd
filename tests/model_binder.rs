//! The weight binder and materializer: for every combination of the vocabulary options the
//! planned bytes equal the materialized bytes (SmolLM2's real GGUF, and synthetic GGUFs with an
//! untied head of several stored types); `--embedding-q4` takes SmolLM2's embedding from 8.5 to
//! 4.25 bits per weight; materialized bytes are what the formats module makes of the source.
//!
//! The expected `q8_g32` payload of a `Q8_0` tensor is built here from the raw GGUF blocks by
//! hand (scale bytes to the scale plane, code bytes to the quant plane), not with the binder's
//! conversion, so the bit-exact path is checked against an independent construction.

use std::sync::OnceLock;

use half::{bf16, f16};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use ninfer::formats::gguf_blocks::dequantize;
use ninfer::formats::{self, decode, encode, transcode_q8_g32, GgufType, Layout};
use ninfer::model::binder::{plan_weights, BindError, TensorRole, WeightPlan, ARENA_ALIGN};
use ninfer::model::gguf::{GgufBuilder, GgufValue};
use ninfer::model::materialize::{materialize, Materialized};
use ninfer::model::precision::{PrecisionOptions, VocabQuant};
use ninfer::model::{check_shapes, load_model, GgufFile, ModelConfig, ModelFiles, Weights};

fn smollm2() -> &'static ModelFiles {
    static FILES: OnceLock<ModelFiles> = OnceLock::new();
    FILES.get_or_init(|| load_model(None).expect("the default model must load"))
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The `q8_g32` payload of `[n, k]` Q8_0 blocks, built by hand.
fn q8_from_q8_0(raw: &[u8], n: usize, k: usize) -> Vec<u8> {
    let l = Layout::new(formats::format("q8_g32").unwrap(), n, k).unwrap();
    let mut out = vec![0u8; l.total_bytes];
    let groups = k / 32;
    for r in 0..n {
        for g in 0..groups {
            let b = &raw[(r * groups + g) * 34..(r * groups + g + 1) * 34];
            let s = l.s_row(r).start + 2 * g;
            out[s..s + 2].copy_from_slice(&b[..2]);
            let q = l.q_row(r).start + 32 * g;
            out[q..q + 32].copy_from_slice(&b[2..]);
        }
    }
    out
}

/// The `q8_g32` form of any decodable tensor: by hand for Q8_0, else decode then encode.
fn q8_of(ty: GgufType, raw: &[u8], n: usize, k: usize) -> Vec<u8> {
    if ty == GgufType::Q8_0 {
        q8_from_q8_0(raw, n, k)
    } else {
        let x = dequantize(ty, raw, n * k).unwrap();
        encode(formats::format("q8_g32").unwrap(), &x, n, k).unwrap()
    }
}

/// Plan-level invariants: aligned, inside the arena, owners disjoint, sizes from the layouts.
fn check_plan(plan: &WeightPlan) {
    let mut owned: Vec<(usize, usize)> = Vec::new();
    for t in &plan.tensors {
        assert_eq!(t.offset % ARENA_ALIGN, 0, "{}", t.name);
        assert!(t.offset + t.bytes <= plan.arena_bytes, "{}", t.name);
        let l = Layout::new(t.format, t.n, t.k).unwrap();
        assert_eq!(t.bytes, l.total_bytes, "{}", t.name);
        match t.shared_with {
            None => owned.push((t.offset, t.offset + t.bytes)),
            Some(o) => {
                let owner = &plan.tensors[o];
                assert_eq!(
                    (owner.offset, owner.bytes, owner.format.name.as_str()),
                    (t.offset, t.bytes, t.format.name.as_str())
                );
                assert_eq!(owner.source, t.source);
            }
        }
    }
    owned.sort();
    for w in owned.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlapping tensors in the arena");
    }
    assert_eq!(plan.arena_bytes % ARENA_ALIGN, 0);
}

/// Materializes `plan` and checks planned bytes == materialized bytes, tensor by tensor.
fn materialize_checked(plan: WeightPlan, weights: &Weights) -> Materialized {
    check_plan(&plan);
    let planned_total = plan.tensor_bytes();
    let arena_bytes = plan.arena_bytes;
    let planned: Vec<(String, usize)> = plan
        .tensors
        .iter()
        .map(|t| (t.name.clone(), t.bytes))
        .collect();
    let m = materialize(plan, weights).unwrap();
    assert_eq!(m.arena().len(), arena_bytes);
    assert_eq!(m.written_bytes(), planned_total);
    for (name, bytes) in planned {
        assert_eq!(m.written_for(&name), Some(bytes), "{name}");
        assert_eq!(m.tensor(&name).unwrap().1.len(), bytes, "{name}");
    }
    m
}

fn vocab_format(q: Option<VocabQuant>, default: &str) -> String {
    q.map_or(default.to_string(), |q| q.format_name().to_string())
}

#[test]
fn smollm2_every_vocab_combination_materializes_its_plan() {
    let files = smollm2();
    let w = &files.weights;
    let c = &files.config;
    assert!(c.tie_word_embeddings && w.tensor("output.weight").is_none());
    let emb = w.tensor("token_embd.weight").unwrap();
    let (n, k) = (c.vocab_size, c.hidden_size);
    assert_eq!((n, k), (49152, 576));

    let q8 = q8_from_q8_0(&emb.data, n, k);
    let want_q4 = transcode_q8_g32(&q8, n, k, formats::format("q4_g64").unwrap()).unwrap();
    let want_q6 = transcode_q8_g32(&q8, n, k, formats::format("q6_g64").unwrap()).unwrap();
    let want = |q: Option<VocabQuant>| match q {
        None => &q8,
        Some(VocabQuant::Q4) => &want_q4,
        Some(VocabQuant::Q6) => &want_q6,
    };
    let mut default_arena = 0;
    for opts in PrecisionOptions::vocabulary_combinations() {
        let flags = opts.flags();
        let plan = plan_weights(c, w, &opts).unwrap();
        assert!(plan.notices.is_empty(), "{flags}: {:?}", plan.notices);
        let e = plan.get("token_embd.weight").unwrap();
        let h = plan.get("output.weight").unwrap();
        assert_eq!((e.role, h.role), (TensorRole::Embedding, TensorRole::Head));
        assert_eq!(h.source, "token_embd.weight");
        assert_eq!(
            e.format.name,
            vocab_format(opts.embedding, "q8_g32"),
            "{flags}"
        );
        assert_eq!(
            h.format.name,
            vocab_format(opts.lm_head, "q8_g32"),
            "{flags}"
        );
        // One copy where both uses want the same format, two otherwise.
        assert_eq!(
            h.shared_with.is_some(),
            opts.embedding == opts.lm_head,
            "{flags}"
        );
        let bpw = |q: Option<VocabQuant>| match q {
            None => 8.5,
            Some(VocabQuant::Q4) => 4.25,
            Some(VocabQuant::Q6) => 6.25,
        };
        assert_eq!(e.bits_per_weight(), bpw(opts.embedding), "{flags}");
        assert_eq!(h.bits_per_weight(), bpw(opts.lm_head), "{flags}");
        if opts == PrecisionOptions::default() {
            default_arena = plan.arena_bytes;
        }

        let m = materialize_checked(plan, w);
        assert_eq!(
            m.bits_per_weight("token_embd.weight"),
            Some(bpw(opts.embedding))
        );
        assert_eq!(m.bits_per_weight("output.weight"), Some(bpw(opts.lm_head)));
        let (_, eb) = m.tensor("token_embd.weight").unwrap();
        let (_, hb) = m.tensor("output.weight").unwrap();
        assert!(
            eb == want(opts.embedding).as_slice(),
            "{flags}: embedding bytes"
        );
        assert!(hb == want(opts.lm_head).as_slice(), "{flags}: head bytes");
        println!(
            "[{flags}] arena {} B, tensors {} B planned = {} B materialized; embedding {} bits/weight, head {}",
            m.arena().len(),
            m.plan().tensor_bytes(),
            m.written_bytes(),
            m.bits_per_weight("token_embd.weight").unwrap(),
            m.bits_per_weight("output.weight").unwrap()
        );

        if opts == PrecisionOptions::default() {
            // The bit-exact paths: Q8_0 -> q8_g32 and Q4_1 -> q4_1_g32 decode to what the GGUF
            // blocks dequantize to.
            let dq = dequantize(GgufType::Q8_0, &emb.data, n * k).unwrap();
            let got = decode(formats::format("q8_g32").unwrap(), eb, n, k).unwrap();
            assert!(
                bits(&got) == bits(&dq),
                "q8_g32 embedding differs from Q8_0"
            );
            let (t, b) = m.tensor("blk.7.ffn_down.weight").unwrap();
            assert_eq!(t.format.name, "q4_1_g32");
            let src = w.tensor("blk.7.ffn_down.weight").unwrap();
            let dq = dequantize(GgufType::Q4_1, &src.data, t.n * t.k).unwrap();
            let got = decode(t.format, b, t.n, t.k).unwrap();
            assert!(bits(&got) == bits(&dq), "q4_1_g32 differs from Q4_1");
            let (t, b) = m.tensor("blk.0.attn_norm.weight").unwrap();
            assert_eq!(t.format.name, "f32");
            assert_eq!(b, &*w.tensor("blk.0.attn_norm.weight").unwrap().data);
        }
    }
    // The flag shrinks the arena before anything is allocated.
    let q4 = plan_weights(
        c,
        w,
        &PrecisionOptions {
            embedding: Some(VocabQuant::Q4),
            lm_head: Some(VocabQuant::Q4),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(q4.arena_bytes < default_arena);
    assert_eq!(
        default_arena - q4.arena_bytes,
        (30_081_024 - 15_040_512),
        "one shared vocabulary copy, 8.5 -> 4.25 bits/weight"
    );
}

// ---- synthetic GGUFs ----

const HIDDEN: usize = 256;
const FFN: usize = 512;
const VOCAB: usize = 96;

fn f16b(x: f32) -> [u8; 2] {
    f16::from_f32(x).to_bits().to_le_bytes()
}

/// Random blocks of `ty` for `n_elements` values, with finite, small scales.
fn random_tensor(rng: &mut StdRng, ty: GgufType, n_elements: usize) -> Vec<u8> {
    let (be, bb) = ty.block();
    let mut out = Vec::with_capacity(n_elements / be * bb);
    for _ in 0..n_elements / be {
        let mut b: Vec<u8> = (0..bb).map(|_| rng.random()).collect();
        let d = rng.random_range(0.001f32..0.02);
        match ty {
            GgufType::F32 => b.copy_from_slice(&rng.random_range(-1f32..1.0).to_le_bytes()),
            GgufType::F16 => b.copy_from_slice(&f16b(rng.random_range(-1f32..1.0))),
            GgufType::BF16 => b.copy_from_slice(
                &bf16::from_f32(rng.random_range(-1f32..1.0))
                    .to_bits()
                    .to_le_bytes(),
            ),
            GgufType::Q8_0 | GgufType::Q5_0 => b[..2].copy_from_slice(&f16b(d)),
            GgufType::Q4_1 | GgufType::Q4_K => {
                b[..2].copy_from_slice(&f16b(d));
                b[2..4].copy_from_slice(&f16b(-8.0 * d));
            }
            GgufType::Q6_K => b[208..].copy_from_slice(&f16b(d)),
            other => panic!("no generator for {other:?}"),
        }
        out.extend(b);
    }
    out
}

/// A one-layer llama GGUF (no tokenizer: the config reads the vocabulary from the embedding).
/// `head`: the stored type of an untied `output.weight`, or `None` for tied embeddings.
/// `hidden` must be a multiple of 256 when `mixed` (K-quants), else of 32.
fn synthetic(head: Option<GgufType>, hidden: usize, mixed: bool) -> (tempfile::TempDir, Weights) {
    let mut rng = StdRng::seed_from_u64(head.map_or(99, |t| t.id() as u64) + hidden as u64);
    let heads = (hidden / 64).max(1);
    let kv_heads = (hidden / 128).max(1);
    let mut b = GgufBuilder::new();
    b.meta("general.architecture", GgufValue::String("llama".into()));
    for (key, v) in [
        ("embedding_length", hidden as u32),
        ("block_count", 1),
        ("attention.head_count", heads as u32),
        ("attention.head_count_kv", kv_heads as u32),
        ("feed_forward_length", FFN as u32),
    ] {
        b.meta(&format!("llama.{key}"), GgufValue::U32(v));
    }
    b.meta("llama.rope.freq_base", GgufValue::F32(10000.0));
    b.meta(
        "llama.attention.layer_norm_rms_epsilon",
        GgufValue::F32(1e-5),
    );
    let kv = kv_heads * (hidden / heads);
    let h = hidden;
    let pick = |t: GgufType| if mixed { t } else { GgufType::Q8_0 };
    let mut list: Vec<(String, Vec<usize>, GgufType)> = vec![
        ("token_embd.weight".into(), vec![VOCAB, h], GgufType::Q8_0),
        ("output_norm.weight".into(), vec![h], GgufType::F32),
        ("blk.0.attn_norm.weight".into(), vec![h], GgufType::F32),
        ("blk.0.ffn_norm.weight".into(), vec![h], GgufType::F32),
        (
            "blk.0.attn_q.weight".into(),
            vec![h, h],
            pick(GgufType::Q4_1),
        ),
        (
            "blk.0.attn_k.weight".into(),
            vec![kv, h],
            pick(GgufType::F16),
        ),
        (
            "blk.0.attn_v.weight".into(),
            vec![kv, h],
            pick(GgufType::Q4_K),
        ),
        (
            "blk.0.attn_output.weight".into(),
            vec![h, h],
            pick(GgufType::BF16),
        ),
        (
            "blk.0.ffn_gate.weight".into(),
            vec![FFN, h],
            pick(GgufType::Q5_0),
        ),
        ("blk.0.ffn_up.weight".into(), vec![FFN, h], GgufType::Q8_0),
        (
            "blk.0.ffn_down.weight".into(),
            vec![h, FFN],
            pick(GgufType::Q6_K),
        ),
    ];
    if let Some(t) = head {
        list.insert(1, ("output.weight".into(), vec![VOCAB, h], t));
    }
    for (name, shape, ty) in list {
        let data = random_tensor(&mut rng, ty, shape.iter().product());
        let dims: Vec<u64> = shape.iter().rev().map(|&d| d as u64).collect();
        b.tensor(&name, &dims, ty.id(), data);
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("synthetic.gguf");
    std::fs::write(&p, b.build()).unwrap();
    let g = GgufFile::open(&p).unwrap();
    (dir, Weights::Gguf(g))
}

fn config_of(w: &Weights) -> ModelConfig {
    let Weights::Gguf(g) = w else { unreachable!() };
    let c = ModelConfig::from_gguf(g).unwrap();
    check_shapes(&c, w).unwrap();
    c
}

#[test]
fn synthetic_untied_heads_every_vocab_combination() {
    for head_ty in [
        GgufType::Q8_0,
        GgufType::Q6_K,
        GgufType::Q4_1,
        GgufType::BF16,
    ] {
        let (_dir, w) = synthetic(Some(head_ty), HIDDEN, true);
        let c = config_of(&w);
        assert!(!c.tie_word_embeddings);
        let head_raw = w.tensor("output.weight").unwrap().data.to_vec();
        let head_q8 = q8_of(head_ty, &head_raw, VOCAB, HIDDEN);
        let emb_q8 = q8_of(
            GgufType::Q8_0,
            &w.tensor("token_embd.weight").unwrap().data,
            VOCAB,
            HIDDEN,
        );
        let default_head = match head_ty {
            GgufType::Q4_1 => "q4_1_g32",
            GgufType::BF16 => "bf16",
            _ => "q8_g32",
        };
        for opts in PrecisionOptions::vocabulary_combinations() {
            let flags = format!("{head_ty:?} head [{}]", opts.flags());
            let planned = plan_weights(&c, &w, &opts);
            if head_ty == GgufType::Q4_1 && opts.lm_head == Some(VocabQuant::Q6) {
                let e = planned.unwrap_err();
                assert!(matches!(e, BindError::Rejected { .. }), "{flags}: {e}");
                assert_eq!(
                    e.to_string(),
                    format!(
                        "--lm-head-q6 cannot apply to tensor \"output.weight\" in {}: it is stored as Q4_1 at 5 bits per weight, so q6_g64 (6.25 bits per weight) would lose precision without saving memory",
                        w.path().display()
                    )
                );
                continue;
            }
            let plan = planned.unwrap_or_else(|e| panic!("{flags}: {e}"));
            let noop = head_ty == GgufType::Q6_K && opts.lm_head == Some(VocabQuant::Q6);
            if noop {
                assert_eq!(plan.notices.len(), 1, "{flags}");
                assert!(
                    plan.notices[0].starts_with("--lm-head-q6 changes nothing for tensor \"output.weight\": it is stored as Q6_K already"),
                    "{}",
                    plan.notices[0]
                );
            } else {
                assert!(plan.notices.is_empty(), "{flags}: {:?}", plan.notices);
            }
            let h = plan.get("output.weight").unwrap();
            let e = plan.get("token_embd.weight").unwrap();
            assert_eq!(h.shared_with, None);
            assert_eq!(h.source, "output.weight");
            let head_fmt = if noop {
                default_head.to_string()
            } else {
                vocab_format(opts.lm_head, default_head)
            };
            assert_eq!(h.format.name, head_fmt, "{flags}");
            assert_eq!(e.format.name, vocab_format(opts.embedding, "q8_g32"));
            // The default rule for the other tensors.
            for (name, f) in [
                ("blk.0.attn_q.weight", "q4_1_g32"),
                ("blk.0.attn_k.weight", "f16"),
                ("blk.0.attn_v.weight", "q8_g32"),
                ("blk.0.attn_output.weight", "bf16"),
                ("blk.0.ffn_gate.weight", "q8_g32"),
                ("blk.0.ffn_up.weight", "q8_g32"),
                ("blk.0.ffn_down.weight", "q8_g32"),
                ("blk.0.ffn_norm.weight", "f32"),
                ("output_norm.weight", "f32"),
            ] {
                assert_eq!(plan.get(name).unwrap().format.name, f, "{name}");
            }

            let m = materialize_checked(plan, &w);
            let (ht, hb) = m.tensor("output.weight").unwrap();
            match opts.lm_head.filter(|_| !noop) {
                Some(q) => {
                    let want = transcode_q8_g32(
                        &head_q8,
                        VOCAB,
                        HIDDEN,
                        formats::format(q.format_name()).unwrap(),
                    )
                    .unwrap();
                    assert!(hb == want.as_slice(), "{flags}: transcoded head bytes");
                }
                None => {
                    let dq = dequantize(head_ty, &head_raw, VOCAB * HIDDEN).unwrap();
                    let got = decode(ht.format, hb, VOCAB, HIDDEN).unwrap();
                    if head_ty == GgufType::Q6_K {
                        // Re-encoded to q8_g32: what the codec makes of the decoded values.
                        assert!(hb == head_q8.as_slice(), "{flags}");
                    } else {
                        assert!(bits(&got) == bits(&dq), "{flags}: head not bit-exact");
                    }
                }
            }
            let (_, eb) = m.tensor("token_embd.weight").unwrap();
            let want_e = match opts.embedding {
                None => emb_q8.clone(),
                Some(q) => transcode_q8_g32(
                    &emb_q8,
                    VOCAB,
                    HIDDEN,
                    formats::format(q.format_name()).unwrap(),
                )
                .unwrap(),
            };
            assert!(eb == want_e.as_slice(), "{flags}: embedding bytes");
            if opts == PrecisionOptions::default() {
                // Re-encoded K-quant / Q5_0 linears and exact dense ones.
                for name in [
                    "blk.0.attn_v.weight",
                    "blk.0.ffn_gate.weight",
                    "blk.0.ffn_down.weight",
                ] {
                    let (t, b) = m.tensor(name).unwrap();
                    let raw = w.tensor(name).unwrap().data;
                    assert!(
                        b == q8_of(t.source_type, &raw, t.n, t.k).as_slice(),
                        "{name}"
                    );
                }
                for name in [
                    "blk.0.attn_k.weight",
                    "blk.0.attn_output.weight",
                    "blk.0.attn_q.weight",
                ] {
                    let (t, b) = m.tensor(name).unwrap();
                    let dq = dequantize(t.source_type, &w.tensor(name).unwrap().data, t.n * t.k)
                        .unwrap();
                    assert!(
                        bits(&decode(t.format, b, t.n, t.k).unwrap()) == bits(&dq),
                        "{name}"
                    );
                }
            }
        }
    }
}

#[test]
fn vocab_flags_are_rejected_where_rows_do_not_fill_groups_of_64() {
    // Hidden 96: q8_g32 (groups of 32) holds it, q4_g64 / q6_g64 cannot.
    let (_dir, w) = synthetic(None, 96, false);
    let c = config_of(&w);
    assert!(c.tie_word_embeddings);
    for (opts, flag, name) in [
        (
            PrecisionOptions {
                embedding: None,
                lm_head: Some(VocabQuant::Q4),
                ..Default::default()
            },
            "--lm-head-q4",
            "output.weight",
        ),
        (
            PrecisionOptions {
                embedding: Some(VocabQuant::Q6),
                lm_head: None,
                ..Default::default()
            },
            "--embedding-q6",
            "token_embd.weight",
        ),
    ] {
        let e = plan_weights(&c, &w, &opts).unwrap_err();
        let group = if flag.ends_with("q4") {
            "q4_g64"
        } else {
            "q6_g64"
        };
        assert_eq!(
            e.to_string(),
            format!(
                "{flag} cannot apply to tensor \"{name}\" in {}: its rows have 96 values, which is not a multiple of the {group} group of 64",
                w.path().display()
            )
        );
    }
    // Without flags the tied model plans and materializes, head sharing the embedding.
    let plan = plan_weights(&c, &w, &PrecisionOptions::default()).unwrap();
    let h = plan.get("output.weight").unwrap();
    assert_eq!(
        h.shared_with,
        plan.tensors
            .iter()
            .position(|t| t.name == "token_embd.weight")
    );
    let m = materialize_checked(plan, &w);
    assert_eq!(
        m.tensor("output.weight").unwrap().1,
        m.tensor("token_embd.weight").unwrap().1
    );
}

#[test]
fn materializing_other_weights_than_planned_is_an_error() {
    let (_d1, w1) = synthetic(Some(GgufType::Q8_0), HIDDEN, true);
    let (_d2, w2) = synthetic(Some(GgufType::BF16), HIDDEN, true);
    let plan = plan_weights(&config_of(&w1), &w1, &PrecisionOptions::default()).unwrap();
    let e = materialize(plan, &w2).unwrap_err();
    assert!(matches!(e, BindError::SourceChanged { .. }), "{e}");
    assert!(e.to_string().contains("\"output.weight\""), "{e}");
}
