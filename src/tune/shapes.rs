//! The weight shapes `(N, K)` of a model's linear layers, read from its tensor list (shapes
//! only: no weight is read or made), and the dims of its GDN and attention layers, read from its config,
//! for `ninfer tune` to time the routes at.
//!
//! Every 2-D tensor but the norms and the embedding table is a linear layer; the embedding
//! table is the head where the model has no head of its own (tied). Fused tensors are cut as
//! the architectures cut them: MoE experts `[E, 2I, H]` / `[E, H, I]` into `[I, H]` and
//! `[H, I]`, Qwen3-Next's `in_proj_qkvz` / `in_proj_ba` into the GDN projections. Layers the
//! engine may hold stacked by rows (one launch for several projections of one input: q/k/v,
//! gate/up, the GDN input projections) add their stacked shape too; a shape no layer runs
//! at costs tuning time only, never a wrong route.

use std::collections::{BTreeSet, HashMap};

use crate::model::ModelFiles;
use crate::ops::gdn::GdnDims;

/// Projections of one input that an architecture may hold stacked by rows (the suffixes of
/// the tensor names after a shared prefix).
const STACKS: &[&[&str]] = &[
    &["q_proj.weight", "k_proj.weight", "v_proj.weight"],
    &["gate_proj.weight", "up_proj.weight"],
    &["attn_q.weight", "attn_k.weight", "attn_v.weight"],
    &["ffn_gate.weight", "ffn_up.weight"],
    &["in_proj_qkv.weight", "in_proj_z.weight"],
    &[
        "in_proj_qkv.weight",
        "in_proj_z.weight",
        "in_proj_b.weight",
        "in_proj_a.weight",
    ],
];

fn is_embedding(name: &str) -> bool {
    name.ends_with("embed_tokens.weight") || name == "token_embd.weight"
}

fn is_head(name: &str) -> bool {
    name == "lm_head.weight" || name == "output.weight"
}

/// The distinct `(N, K)` of the linear layers of `files`, sorted.
pub fn linear_shapes(files: &ModelFiles) -> Vec<(usize, usize)> {
    let w = &files.weights;
    let meta: HashMap<&str, Vec<usize>> = w
        .tensor_names()
        .into_iter()
        .filter_map(|n| w.tensor_meta(n).map(|(s, _)| (n, s)))
        .collect();
    shapes_of(&meta, files.config.gdn.as_ref())
}

/// The dims of the model's Gated DeltaNet layers (every GDN layer of a model has the same;
/// none for a model without them), for the `gdn_step` family.
pub fn gdn_dims(files: &ModelFiles) -> Vec<GdnDims> {
    files
        .config
        .gdn
        .as_ref()
        .map(|g| GdnDims {
            hk: g.num_key_heads,
            hv: g.num_value_heads,
            dk: g.key_head_dim,
            dv: g.value_head_dim,
            kc: g.conv_kernel_dim,
        })
        .into_iter()
        .collect()
}

/// The head layout of the model's softmax-attention layers (none for a model without them),
/// for the `attn_split` family.
pub fn attn_dims(files: &ModelFiles) -> Vec<crate::ops::attention::AttnDims> {
    let c = &files.config;
    let any = c.layer_types.is_empty()
        || c.layer_types
            .contains(&crate::model::config::LayerType::FullAttention);
    (any && c.num_attention_heads > 0 && c.num_key_value_heads > 0 && c.head_dim > 0)
        .then(|| {
            crate::ops::attention::AttnDims::new(
                c.num_attention_heads,
                c.num_key_value_heads,
                c.head_dim,
            )
        })
        .into_iter()
        .collect()
}

/// [`linear_shapes`] over a name -> shape map.
fn shapes_of(
    meta: &HashMap<&str, Vec<usize>>,
    gdn: Option<&crate::model::GdnConfig>,
) -> Vec<(usize, usize)> {
    let mut out = BTreeSet::new();
    let tied = !meta.keys().any(|n| is_head(n));
    for (&name, shape) in meta {
        match *shape.as_slice() {
            [n, k] => {
                if is_embedding(name) {
                    if tied {
                        out.insert((n, k));
                    }
                } else if name.contains("norm") {
                    // Norm weights are 1-D; a 2-D one is not a linear layer either.
                } else if name.ends_with("in_proj_qkvz.weight") {
                    if let Some(g) = gdn {
                        out.insert((g.conv_dim(), k));
                        out.insert((g.value_dim(), k));
                    }
                } else if name.ends_with("in_proj_ba.weight") {
                    if let Some(g) = gdn {
                        out.insert((g.num_value_heads, k));
                    }
                } else {
                    out.insert((n, k));
                }
            }
            [_, two_i, h] if name.ends_with("experts.gate_up_proj") => {
                out.insert((two_i / 2, h));
            }
            [_, h, i] if name.ends_with("experts.down_proj") => {
                out.insert((h, i));
            }
            _ => {}
        }
    }
    for &stack in STACKS {
        for (&name, _) in meta.iter() {
            let Some(prefix) = name.strip_suffix(stack[0]) else {
                continue;
            };
            let parts: Option<Vec<&Vec<usize>>> = stack
                .iter()
                .map(|s| meta.get(format!("{prefix}{s}").as_str()))
                .collect();
            let Some(parts) = parts else { continue };
            if parts.iter().all(|s| s.len() == 2 && s[1] == parts[0][1]) {
                out.insert((parts.iter().map(|s| s[0]).sum(), parts[0][1]));
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{open_model, ModelLocation};

    fn synthetic(name: &str) -> Vec<(usize, usize)> {
        linear_shapes(&open_model(&ModelLocation::synthetic(name, 0)).unwrap())
    }

    #[test]
    fn smollm2_projections_stacks_and_tied_head() {
        let s = synthetic("smollm2-135m");
        for shape in [
            (576, 576),   // q, o
            (192, 576),   // k, v
            (960, 576),   // q/k/v stacked
            (1536, 576),  // gate, up
            (3072, 576),  // gate/up stacked
            (576, 1536),  // down
            (49152, 576), // the tied head
        ] {
            assert!(s.contains(&shape), "{shape:?} in {s:?}");
        }
        assert_eq!(s.len(), 7, "{s:?}");
    }

    #[test]
    fn qwen_27b_gdn_attention_mlp_and_head() {
        let s = synthetic("qwen3.6-27b");
        for shape in [
            (12288, 5120),  // gated q
            (1024, 5120),   // k, v
            (5120, 6144),   // o, GDN out
            (10240, 5120),  // GDN in_proj_qkv
            (6144, 5120),   // GDN z
            (48, 5120),     // GDN a, b
            (17408, 5120),  // gate, up
            (5120, 17408),  // down
            (248320, 5120), // head
            (14336, 5120),  // q/k/v stacked
            (34816, 5120),  // gate/up stacked
        ] {
            assert!(s.contains(&shape), "{shape:?} in {s:?}");
        }
        // GDN input projections stacked: qkv + z, and all four.
        assert!(
            s.contains(&(16384, 5120)) && s.contains(&(16480, 5120)),
            "{s:?}"
        );
    }

    #[test]
    fn gdn_dims_come_from_the_config() {
        let dims = |name: &str| gdn_dims(&open_model(&ModelLocation::synthetic(name, 0)).unwrap());
        assert_eq!(dims("qwen3.6-27b"), vec![crate::ops::gdn::QWEN36_27B]);
        assert_eq!(
            dims("qwen3.6-35b-a3b"),
            vec![crate::ops::gdn::QWEN36_35B_A3B]
        );
        assert!(dims("smollm2-135m").is_empty(), "no GDN layers, no keys");
    }

    #[test]
    fn moe_experts_router_and_shared_expert() {
        let s = synthetic("qwen3.6-35b-a3b");
        for shape in [
            (512, 2048),    // expert and shared-expert gate/up
            (2048, 512),    // their down
            (1024, 2048),   // gate/up stacked
            (256, 2048),    // router
            (1, 2048),      // shared-expert gate
            (248320, 2048), // head
        ] {
            assert!(s.contains(&shape), "{shape:?} in {s:?}");
        }
    }

    #[test]
    fn fused_experts_and_qwen3_next_projections_are_cut() {
        let m: HashMap<&str, Vec<usize>> = [
            ("model.layers.0.mlp.experts.gate_up_proj", vec![8, 64, 32]),
            ("model.layers.0.mlp.experts.down_proj", vec![8, 32, 32]),
            ("model.embed_tokens.weight", vec![100, 32]),
            ("lm_head.weight", vec![100, 32]),
            ("model.norm.weight", vec![32]),
        ]
        .into_iter()
        .collect();
        assert_eq!(shapes_of(&m, None), vec![(32, 32), (100, 32)]);
    }
}
