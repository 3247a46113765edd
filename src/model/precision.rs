//! The precision options: what the user asked the weight binder, the architectures and the
//! engine to store or compute narrower (or in smaller pieces) than the default.
//!
//! Implemented here (they act in [`crate::model::binder`] and in
//! [`crate::model::arch::load_with`]):
//!
//! - `--embedding-q4` / `--embedding-q6` (mutually exclusive): the token embedding table is
//!   stored as `q4_g64` (4.25 bits/weight) or `q6_g64` (6.25). The binder transcodes it from
//!   `q8_g32`; the architectures encode it from the decoded f32 values.
//! - `--lm-head-q4` / `--lm-head-q6` (mutually exclusive): the same for the output head. With
//!   tied embeddings the head keeps working from the embedding's source, in its own format.
//! - `--gdn-state-fp16`: the Gated DeltaNet recurrent state is stored in fp16 between calls
//!   (a model without GDN layers refuses it).
//! - `--prefill-chunk N`: a forward over more than N tokens (a prompt, a perplexity window)
//!   runs as consecutive chunks of at most N tokens: the same results up to rounding, with
//!   activation memory bounded by N tokens.
//! - `--prefill-cublas`: the GPU engine runs linears of many rows (prompts, perplexity
//!   windows) on cuBLAS with bf16 weights and activations (`crate::ops::linear_cublas`);
//!   lossy, GPU only (the cpu backend refuses it).
//!
//! Not implemented yet (owned elsewhere; listed so that the one options type grows here):
//! `--mtp-experts-q4` (MTP layer experts in `q4_g64`), `--no-prefill-cublas-projections`
//! (keep the projections off the cuBLAS prefill route), `--mlp-a8-decode`
//! (8-bit activations in decode MLPs) and `--no-prefill-a8` (turn off the default
//! integer-activation prefill routes).

use thiserror::Error;

/// A narrower format for a vocabulary tensor (embedding or head).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VocabQuant {
    /// `q4_g64`: 4-bit, group 64, f16 scale (4.25 bits/weight).
    Q4,
    /// `q6_g64`: 6-bit, group 64, f16 scale (6.25 bits/weight).
    Q6,
}

impl VocabQuant {
    /// The engine format this asks for.
    pub fn format_name(self) -> &'static str {
        match self {
            VocabQuant::Q4 => "q4_g64",
            VocabQuant::Q6 => "q6_g64",
        }
    }

    /// `q4` or `q6`, as in the flags' names.
    pub fn suffix(self) -> &'static str {
        match self {
            VocabQuant::Q4 => "q4",
            VocabQuant::Q6 => "q6",
        }
    }
}

/// Which vocabulary tensor a flag acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VocabTensor {
    Embedding,
    LmHead,
}

impl VocabTensor {
    /// The flag for this tensor and format, e.g. `--lm-head-q6`.
    pub fn flag(self, q: VocabQuant) -> String {
        match self {
            VocabTensor::Embedding => format!("--embedding-{}", q.suffix()),
            VocabTensor::LmHead => format!("--lm-head-{}", q.suffix()),
        }
    }
}

/// A contradictory set of precision flags.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PrecisionError {
    #[error("{first} and {second} cannot be used together; pick one")]
    Exclusive {
        first: &'static str,
        second: &'static str,
    },
    #[error("--prefill-chunk must be at least 1 (tokens per chunk); it is {0}")]
    ZeroChunk(usize),
}

/// The precision options. `Default` is the default precision (every tensor in its stored
/// engine format, f32 GDN state, prompts run whole).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PrecisionOptions {
    /// `--embedding-q4` / `--embedding-q6`.
    pub embedding: Option<VocabQuant>,
    /// `--lm-head-q4` / `--lm-head-q6`.
    pub lm_head: Option<VocabQuant>,
    /// `--gdn-state-fp16`: GDN recurrent state stored in fp16 (Qwen3.5 family only).
    pub gdn_state_fp16: bool,
    /// `--prefill-chunk N`: most tokens per forward of a prompt or window (`None`: whole).
    pub prefill_chunk: Option<usize>,
    /// `--prefill-cublas`: long linears on cuBLAS in bf16 (GPU engine only).
    pub prefill_cublas: bool,
    /// The registered format (by name) every weight matrix is held in where its width
    /// allows, f32 elsewhere: what the GPU engine does with `--weights`. `ninfer compare`
    /// sets it for both sides, so that the cpu reference computes with the GPU's values.
    pub held_weights: Option<&'static str>,
}

impl PrecisionOptions {
    /// Options from the four vocabulary flags; an error where both flags of a pair are set.
    pub fn from_flags(
        embedding_q4: bool,
        embedding_q6: bool,
        lm_head_q4: bool,
        lm_head_q6: bool,
    ) -> Result<Self, PrecisionError> {
        let pick = |q4: bool, q6: bool, n4: &'static str, n6: &'static str| match (q4, q6) {
            (true, true) => Err(PrecisionError::Exclusive {
                first: n4,
                second: n6,
            }),
            (true, false) => Ok(Some(VocabQuant::Q4)),
            (false, true) => Ok(Some(VocabQuant::Q6)),
            (false, false) => Ok(None),
        };
        Ok(PrecisionOptions {
            embedding: pick(
                embedding_q4,
                embedding_q6,
                "--embedding-q4",
                "--embedding-q6",
            )?,
            lm_head: pick(lm_head_q4, lm_head_q6, "--lm-head-q4", "--lm-head-q6")?,
            ..Default::default()
        })
    }

    /// These options with `--gdn-state-fp16` and `--prefill-chunk` as given; an error where
    /// the chunk is 0.
    pub fn with_engine_flags(
        self,
        gdn_state_fp16: bool,
        prefill_chunk: Option<usize>,
    ) -> Result<Self, PrecisionError> {
        if let Some(n) = prefill_chunk.filter(|&n| n == 0) {
            return Err(PrecisionError::ZeroChunk(n));
        }
        Ok(PrecisionOptions {
            gdn_state_fp16,
            prefill_chunk,
            ..self
        })
    }

    /// These options with `--prefill-cublas` as given.
    pub fn with_prefill_cublas(self, prefill_cublas: bool) -> Self {
        PrecisionOptions {
            prefill_cublas,
            ..self
        }
    }

    /// The flag (if any) for one vocabulary tensor.
    pub fn vocab(&self, which: VocabTensor) -> Option<VocabQuant> {
        match which {
            VocabTensor::Embedding => self.embedding,
            VocabTensor::LmHead => self.lm_head,
        }
    }

    /// Every valid combination of the vocabulary flags (3 x 3 = 9), default first.
    pub fn vocabulary_combinations() -> Vec<PrecisionOptions> {
        let choices = [None, Some(VocabQuant::Q4), Some(VocabQuant::Q6)];
        let mut out = Vec::with_capacity(9);
        for embedding in choices {
            for lm_head in choices {
                out.push(PrecisionOptions {
                    embedding,
                    lm_head,
                    ..Default::default()
                });
            }
        }
        out
    }

    /// The flags that produce these options, space-separated ("" for the default).
    pub fn flags(&self) -> String {
        let mut v = Vec::new();
        if let Some(q) = self.embedding {
            v.push(VocabTensor::Embedding.flag(q));
        }
        if let Some(q) = self.lm_head {
            v.push(VocabTensor::LmHead.flag(q));
        }
        if self.gdn_state_fp16 {
            v.push("--gdn-state-fp16".to_string());
        }
        if let Some(n) = self.prefill_chunk {
            v.push(format!("--prefill-chunk {n}"));
        }
        if self.prefill_cublas {
            v.push("--prefill-cublas".to_string());
        }
        v.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_exclusive_and_combinations_round_trip() {
        let e = PrecisionOptions::from_flags(true, true, false, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--embedding-q4 and --embedding-q6 cannot be used together; pick one"
        );
        let e = PrecisionOptions::from_flags(false, false, true, true).unwrap_err();
        assert!(e.to_string().starts_with("--lm-head-q4 and --lm-head-q6"));
        let combos = PrecisionOptions::vocabulary_combinations();
        assert_eq!(combos.len(), 9);
        for (i, c) in combos.iter().enumerate() {
            assert!(!combos[..i].contains(c));
            let f = c.flags();
            let has = |s: &str| f.split(' ').any(|x| x == s);
            let back = PrecisionOptions::from_flags(
                has("--embedding-q4"),
                has("--embedding-q6"),
                has("--lm-head-q4"),
                has("--lm-head-q6"),
            )
            .unwrap();
            assert_eq!(&back, c, "{f}");
        }
    }

    #[test]
    fn engine_flags_refuse_a_zero_chunk_and_show_in_flags() {
        let o = PrecisionOptions::default()
            .with_engine_flags(true, Some(3))
            .unwrap();
        assert!(o.gdn_state_fp16);
        assert_eq!(o.prefill_chunk, Some(3));
        assert_eq!(o.flags(), "--gdn-state-fp16 --prefill-chunk 3");
        let o = o.with_prefill_cublas(true);
        assert!(o.prefill_cublas && o.gdn_state_fp16);
        assert_eq!(
            o.flags(),
            "--gdn-state-fp16 --prefill-chunk 3 --prefill-cublas"
        );
        let e = PrecisionOptions::default()
            .with_engine_flags(false, Some(0))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--prefill-chunk must be at least 1 (tokens per chunk); it is 0"
        );
    }
}
