//! HF checkpoints (config.json + safetensors + tokenizer.json) through the public loading path,
//! on small synthetic folders written by hand here.

use std::path::Path;

use ninfer::model::{
    open_model, resolve_model, Architecture, ChatMessage, Dtype, LayerType, ModelError,
    ModelLocation, TensorDtype,
};
use serde_json::json;

/// Safetensors bytes for `(name, dtype, shape)`; each tensor's data is its index repeated.
fn safetensors(tensors: &[(&str, &str, Vec<usize>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (i, (name, dtype, shape)) in tensors.iter().enumerate() {
        let width = match *dtype {
            "F32" => 4,
            "BF16" | "F16" => 2,
            "I8" | "U8" => 1,
            d => panic!("{d}"),
        };
        let n = shape.iter().product::<usize>() * width;
        header.insert(
            name.to_string(),
            json!({"dtype": dtype, "shape": shape, "data_offsets": [data.len(), data.len() + n]}),
        );
        data.extend(std::iter::repeat_n(i as u8, n));
    }
    let mut h = serde_json::to_vec(&header).unwrap();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend(data);
    out
}

const TOKENIZER_JSON: &str = r#"{"version":"1.0","truncation":null,"padding":null,
"added_tokens":[{"id":0,"content":"<eos>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
"normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
"post_processor":null,"decoder":{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true},
"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,
"fuse_unk":false,"byte_fallback":false,"vocab":{"<eos>":0,"a":1,"b":2,"ab":3,"Ġ":4,"Ġab":5},"merges":["a b","Ġ ab"]}}"#;

fn llama_tensors(q_rows: usize) -> Vec<(&'static str, &'static str, Vec<usize>)> {
    vec![
        ("model.embed_tokens.weight", "BF16", vec![6, 4]),
        ("model.norm.weight", "F32", vec![4]),
        ("model.layers.0.input_layernorm.weight", "F32", vec![4]),
        (
            "model.layers.0.post_attention_layernorm.weight",
            "F32",
            vec![4],
        ),
        (
            "model.layers.0.self_attn.q_proj.weight",
            "BF16",
            vec![q_rows, 4],
        ),
        ("model.layers.0.self_attn.k_proj.weight", "BF16", vec![2, 4]),
        ("model.layers.0.self_attn.v_proj.weight", "BF16", vec![2, 4]),
        ("model.layers.0.self_attn.o_proj.weight", "BF16", vec![4, 4]),
        ("model.layers.0.mlp.gate_proj.weight", "BF16", vec![8, 4]),
        ("model.layers.0.mlp.up_proj.weight", "BF16", vec![8, 4]),
        ("model.layers.0.mlp.down_proj.weight", "BF16", vec![4, 8]),
    ]
}

/// A one-layer llama folder: hidden 4, 2 heads of 2, 1 kv head, ffn 8, vocab 6, tied.
fn llama_dir(dir: &Path, q_rows: usize) {
    let config = json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 8,
        "vocab_size": 6, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": true,
        "eos_token_id": 0, "torch_dtype": "bfloat16"});
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    std::fs::write(
        dir.join("model.safetensors"),
        safetensors(&llama_tensors(q_rows)),
    )
    .unwrap();
    std::fs::write(dir.join("tokenizer.json"), TOKENIZER_JSON).unwrap();
    let tok_cfg = json!({"eos_token": {"content": "<eos>", "special": true}, "bos_token": null,
        "chat_template": "{% for m in messages %}{{ m.role }}: {{ m.content | trim }}{{ eos_token }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"});
    std::fs::write(dir.join("tokenizer_config.json"), tok_cfg.to_string()).unwrap();
    std::fs::write(
        dir.join("generation_config.json"),
        r#"{"eos_token_id": [0, 5]}"#,
    )
    .unwrap();
}

#[test]
fn llama_folder_loads_everything() {
    let d = tempfile::tempdir().unwrap();
    llama_dir(d.path(), 4);
    let loc = resolve_model(Some(d.path())).unwrap();
    assert_eq!(loc, ModelLocation::HfDir(d.path().to_path_buf()));
    let m = open_model(&loc).unwrap();
    assert_eq!(m.config.architecture, Architecture::Llama);
    assert_eq!(
        (m.config.head_dim, m.config.vocab_size, m.config.rope_theta),
        (2, 6, 500000.0)
    );
    assert_eq!(m.weights.len(), 11);
    let q = m
        .weights
        .tensor("model.layers.0.self_attn.q_proj.weight")
        .unwrap();
    assert_eq!(q.shape, vec![4, 4]);
    assert_eq!(q.dtype, TensorDtype::Safetensors(Dtype::BF16));
    assert_eq!(q.data, &[4u8; 32][..], "the 5th tensor's bytes");
    assert_eq!(m.tokenizer.encode("ab ab", true).unwrap(), vec![3, 5]);
    assert_eq!(m.tokenizer.decode(&[3, 5, 0], true).unwrap(), "ab ab");
    assert_eq!(m.tokenizer.eos_id(), Some(0));
    assert_eq!(m.tokenizer.stop_ids(), &[0, 5]);
    let chat = m.chat_template.as_ref().unwrap();
    let out = chat
        .render(
            &[
                ChatMessage::new("user", " hi "),
                ChatMessage::new("assistant", "yo"),
            ],
            true,
        )
        .unwrap();
    assert_eq!(out, "user: hi<eos>\nassistant: yo<eos>\nassistant:");
    // config.json itself also names the folder.
    assert_eq!(
        resolve_model(Some(&d.path().join("config.json"))).unwrap(),
        loc
    );
}

#[test]
fn sharded_folder_loads_and_a_wrong_index_is_explained() {
    let d = tempfile::tempdir().unwrap();
    llama_dir(d.path(), 4);
    std::fs::remove_file(d.path().join("model.safetensors")).unwrap();
    let all = llama_tensors(4);
    let (a, b) = all.split_at(5);
    std::fs::write(
        d.path().join("model-00001-of-00002.safetensors"),
        safetensors(a),
    )
    .unwrap();
    std::fs::write(
        d.path().join("model-00002-of-00002.safetensors"),
        safetensors(b),
    )
    .unwrap();
    let mut map = serde_json::Map::new();
    for (i, (name, _, _)) in all.iter().enumerate() {
        let shard = if i < 5 { 1 } else { 2 };
        map.insert(
            name.to_string(),
            json!(format!("model-0000{shard}-of-00002.safetensors")),
        );
    }
    let index = json!({"metadata": {"total_size": 0}, "weight_map": map});
    std::fs::write(
        d.path().join("model.safetensors.index.json"),
        index.to_string(),
    )
    .unwrap();
    let m = open_model(&ModelLocation::HfDir(d.path().to_path_buf())).unwrap();
    assert_eq!(m.weights.len(), 11);
    // Data of the first tensor of the second shard is its index there (0).
    let t = m
        .weights
        .tensor("model.layers.0.self_attn.k_proj.weight")
        .unwrap();
    assert_eq!(t.data, &[0u8; 16][..]);

    // An index that puts a tensor in the wrong shard.
    map.insert(
        "model.norm.weight".into(),
        json!("model-00002-of-00002.safetensors"),
    );
    let index = json!({"weight_map": map});
    std::fs::write(
        d.path().join("model.safetensors.index.json"),
        index.to_string(),
    )
    .unwrap();
    let e = open_model(&ModelLocation::HfDir(d.path().to_path_buf())).unwrap_err();
    assert!(matches!(e, ModelError::Safetensors { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("puts \"model.norm.weight\" in model-00002-of-00002.safetensors"),
        "{e}"
    );

    // A shard that is cut short.
    map.insert(
        "model.norm.weight".into(),
        json!("model-00001-of-00002.safetensors"),
    );
    std::fs::write(
        d.path().join("model.safetensors.index.json"),
        json!({"weight_map": map}).to_string(),
    )
    .unwrap();
    let shard = d.path().join("model-00002-of-00002.safetensors");
    let bytes = std::fs::read(&shard).unwrap();
    std::fs::write(&shard, &bytes[..bytes.len() - 3]).unwrap();
    let e = open_model(&ModelLocation::HfDir(d.path().to_path_buf())).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} is not a valid safetensors file: the tensor data does not fill the file exactly (truncated or padded)",
            shard.display()
        )
    );
}

#[test]
fn folder_problems_are_one_sentence() {
    let d = tempfile::tempdir().unwrap();
    llama_dir(d.path(), 6);
    let loc = ModelLocation::HfDir(d.path().to_path_buf());
    let e = open_model(&loc).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "tensor \"model.layers.0.self_attn.q_proj.weight\" in {} has shape [6, 4], but the config implies [4, 4]",
            d.path().join("model.safetensors").display()
        )
    );

    llama_dir(d.path(), 4);
    std::fs::remove_file(d.path().join("tokenizer.json")).unwrap();
    let e = open_model(&loc).unwrap_err();
    assert!(matches!(e, ModelError::MissingTokenizer { .. }), "{e}");

    llama_dir(d.path(), 4);
    std::fs::write(
        d.path().join("config.json"),
        r#"{"model_type": "llama", "hidden_size": 4}"#,
    )
    .unwrap();
    let e = open_model(&loc).unwrap_err();
    assert!(
        e.to_string()
            .contains("the required field num_hidden_layers is missing"),
        "{e}"
    );

    llama_dir(d.path(), 4);
    std::fs::write(d.path().join("config.json"), r#"{"model_type": "mamba"}"#).unwrap();
    let e = open_model(&loc).unwrap_err();
    assert!(matches!(e, ModelError::UnknownArchitecture { .. }), "{e}");

    llama_dir(d.path(), 4);
    std::fs::remove_file(d.path().join("model.safetensors")).unwrap();
    let e = open_model(&loc).unwrap_err();
    assert!(matches!(e, ModelError::NotAModel { .. }), "{e}");
}

/// Shapes written out by hand from MODEL_SPEC.md for a 2-layer Qwen3.5 (GDN, then attention):
/// hidden 8, 2 heads of 4, 1 kv head, GDN 1 key head / 2 value heads of 4, conv 4, ffn 16.
fn qwen35_tensors(skip: &str) -> Vec<(String, &'static str, Vec<usize>)> {
    let p = "model.language_model.";
    let mut t: Vec<(String, &'static str, Vec<usize>)> = vec![
        (format!("{p}embed_tokens.weight"), "BF16", vec![6, 8]),
        (format!("{p}norm.weight"), "BF16", vec![8]),
        ("lm_head.weight".into(), "BF16", vec![6, 8]),
        (
            "model.visual.blocks.0.attn.qkv.weight".into(),
            "BF16",
            vec![3, 3],
        ),
        ("mtp.fc.weight".into(), "BF16", vec![8, 16]),
    ];
    for i in 0..2 {
        let l = format!("{p}layers.{i}.");
        for (n, s) in [
            ("input_layernorm.weight", vec![8]),
            ("post_attention_layernorm.weight", vec![8]),
            ("mlp.gate_proj.weight", vec![16, 8]),
            ("mlp.up_proj.weight", vec![16, 8]),
            ("mlp.down_proj.weight", vec![8, 16]),
        ] {
            t.push((format!("{l}{n}"), "BF16", s));
        }
    }
    let g = format!("{p}layers.0.linear_attn.");
    for (n, dtype, s) in [
        ("in_proj_qkv.weight", "BF16", vec![16, 8]), // 2*key_dim(4) + value_dim(8)
        ("in_proj_z.weight", "BF16", vec![8, 8]),
        ("in_proj_b.weight", "BF16", vec![2, 8]),
        ("in_proj_a.weight", "BF16", vec![2, 8]),
        ("conv1d.weight", "BF16", vec![16, 1, 4]),
        ("A_log", "F32", vec![2]),
        ("dt_bias", "BF16", vec![2]),
        ("norm.weight", "F32", vec![4]),
        ("out_proj.weight", "BF16", vec![8, 8]),
    ] {
        t.push((format!("{g}{n}"), dtype, s));
    }
    let a = format!("{p}layers.1.self_attn.");
    for (n, s) in [
        ("q_proj.weight", vec![16, 8]), // query and gate: 2 * heads(2) * head_dim(4)
        ("k_proj.weight", vec![4, 8]),
        ("v_proj.weight", vec![4, 8]),
        ("o_proj.weight", vec![8, 8]),
        ("q_norm.weight", vec![4]),
        ("k_norm.weight", vec![4]),
    ] {
        t.push((format!("{a}{n}"), "BF16", s));
    }
    t.retain(|(n, _, _)| !n.ends_with(skip) || skip.is_empty());
    t
}

fn qwen35_dir(dir: &Path, skip: &str) {
    let config = json!({"model_type": "qwen3_5", "tie_word_embeddings": false,
        "vision_config": {"hidden_size": 3},
        "text_config": {"model_type": "qwen3_5_text", "hidden_size": 8, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 16,
            "vocab_size": 6, "rms_norm_eps": 1e-6, "linear_num_key_heads": 1, "linear_num_value_heads": 2,
            "linear_key_head_dim": 4, "linear_value_head_dim": 4, "linear_conv_kernel_dim": 4,
            "layer_types": ["linear_attention", "full_attention"], "mtp_num_hidden_layers": 1,
            "rope_parameters": {"rope_theta": 10000000, "partial_rotary_factor": 0.5}}});
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let t = qwen35_tensors(skip);
    let refs: Vec<(&str, &str, Vec<usize>)> = t
        .iter()
        .map(|(n, d, s)| (n.as_str(), *d, s.clone()))
        .collect();
    std::fs::write(dir.join("model.safetensors"), safetensors(&refs)).unwrap();
    std::fs::write(dir.join("tokenizer.json"), TOKENIZER_JSON).unwrap();
}

#[test]
fn qwen35_wrapper_folder_loads_with_text_config_flattened() {
    let d = tempfile::tempdir().unwrap();
    qwen35_dir(d.path(), "");
    let m = open_model(&ModelLocation::HfDir(d.path().to_path_buf())).unwrap();
    let c = &m.config;
    assert_eq!(c.architecture, Architecture::Qwen35);
    assert!(c.text_config_nested && c.qk_norm && !c.tie_word_embeddings);
    assert_eq!(
        c.layer_types,
        vec![LayerType::LinearAttention, LayerType::FullAttention]
    );
    assert_eq!(
        (c.rope_theta, c.rotary_dim(), c.mtp_num_hidden_layers),
        (1e7, 2, 1)
    );
    assert!(m.chat_template.is_none());

    qwen35_dir(d.path(), "linear_attn.A_log");
    let e = open_model(&ModelLocation::HfDir(d.path().to_path_buf())).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} has no tensor \"model.language_model.layers.0.linear_attn.A_log\", which the config requires",
            d.path().join("model.safetensors").display()
        )
    );
}
