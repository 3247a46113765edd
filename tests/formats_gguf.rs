//! The GGUF block decoders against the `gguf` Python package's dequantization, on the fixtures
//! made by `tools/make_gguf_vectors.py` (random blocks of every decoded type, and rows sampled
//! from SmolLM2-135M-Instruct's own tensors). Bit-exact. A missing fixture fails the test.

use std::collections::BTreeSet;
use std::path::PathBuf;

use ninfer::formats::gguf_blocks::{dequantize, to_format, GgufType};
use ninfer::formats::{decode, format};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf_blocks")
}

struct Case {
    name: String,
    ty: GgufType,
    n_elements: usize,
    row_elements: Option<usize>,
    blocks: Vec<u8>,
    values: Vec<f32>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(dir().join("manifest.json")).expect("fixture manifest.json");
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    m["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let ty = GgufType::from_id(c["type_id"].as_u64().unwrap() as u32).unwrap();
            assert_eq!(ty.name(), c["type"].as_str().unwrap());
            let blocks = std::fs::read(dir().join(c["blocks"].as_str().unwrap())).unwrap();
            let raw = std::fs::read(dir().join(c["values"].as_str().unwrap())).unwrap();
            let values = raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            Case {
                name: c["name"].as_str().unwrap().to_string(),
                ty,
                n_elements: c["n_elements"].as_u64().unwrap() as usize,
                row_elements: c
                    .get("row_elements")
                    .and_then(|v| v.as_u64())
                    .map(|v| v as usize),
                blocks,
                values,
            }
        })
        .collect()
}

fn assert_bits_eq(name: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{name}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "{name}: element {i}: decoded {g:e}, gguf says {w:e}"
        );
    }
}

#[test]
fn every_decoded_type_matches_gguf_bit_for_bit() {
    let cases = cases();
    let covered: BTreeSet<String> = cases
        .iter()
        .filter(|c| !c.name.starts_with("smollm2_"))
        .map(|c| c.ty.name())
        .collect();
    for ty in GgufType::DECODED {
        assert!(covered.contains(&ty.name()), "no fixture for {}", ty.name());
    }
    for c in &cases {
        assert_eq!(c.values.len(), c.n_elements, "{}", c.name);
        let got = dequantize(c.ty, &c.blocks, c.n_elements).unwrap();
        assert_bits_eq(&c.name, &got, &c.values);
    }
}

#[test]
fn smollm2_tensors_match_gguf_and_convert_exactly() {
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| c.name.starts_with("smollm2_"))
        .collect();
    let types: BTreeSet<String> = cases.iter().map(|c| c.ty.name()).collect();
    for want in ["Q8_0", "Q4_1", "F32"] {
        assert!(types.contains(want), "no SmolLM2 sample of type {want}");
    }
    for c in &cases {
        let got = dequantize(c.ty, &c.blocks, c.n_elements).unwrap();
        assert_bits_eq(&c.name, &got, &c.values);
        // Conversion to the engine format: the same numbers, bit for bit.
        let k = c
            .row_elements
            .expect("SmolLM2 samples record their row length");
        let n = c.n_elements / k;
        let target = match c.ty {
            GgufType::Q8_0 => "q8_g32",
            GgufType::Q4_1 => "q4_1_g32",
            _ => "f32",
        };
        let f = format(target).unwrap();
        let payload = to_format(c.ty, &c.blocks, n, k, f).unwrap();
        let back = decode(f, &payload, n, k).unwrap();
        assert_bits_eq(&format!("{} as {target}", c.name), &back, &c.values);
    }
}

#[test]
fn other_types_convert_by_decode_and_reencode() {
    // Q4_K rows to q4_g64 and q8_g32: within each target's rounding of the decoded values.
    let c = cases()
        .into_iter()
        .find(|c| c.ty == GgufType::Q4_K)
        .unwrap();
    let k = 256;
    let n = c.n_elements / k;
    for target in ["q8_g32", "q4_g64", "bf16"] {
        let f = format(target).unwrap();
        let p = to_format(c.ty, &c.blocks, n, k, f).unwrap();
        let back = decode(f, &p, n, k).unwrap();
        let direct = ninfer::formats::encode(f, &c.values, n, k).unwrap();
        assert_eq!(
            p, direct,
            "{target}: conversion equals encoding the decoded values"
        );
        assert_eq!(back.len(), c.values.len());
    }
}
