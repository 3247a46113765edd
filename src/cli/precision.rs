//! The precision flags the binaries share (`#[command(flatten)]` this into a subcommand's
//! arguments): the vocabulary flags, `--gdn-state-fp16`, `--prefill-chunk N` and
//! `--prefill-cublas`. The others DESIGN.md lists (`--mtp-experts-q4`,
//! `--no-prefill-cublas-projections`, `--mlp-a8-decode`, `--no-prefill-a8`) join this struct
//! when their features land.

use clap::Args;

use super::CliError;
use crate::model::arch::ArchError;
use crate::model::binder::BindError;
use crate::model::precision::PrecisionOptions;

/// The precision flags.
#[derive(Debug, Clone, Default, Args)]
pub struct PrecisionArgs {
    /// Store the token embedding as q4_g64 (4.25 bits/weight), encoded at load.
    #[arg(long, conflicts_with = "embedding_q6")]
    pub embedding_q4: bool,
    /// Store the token embedding as q6_g64 (6.25 bits/weight), encoded at load.
    #[arg(long)]
    pub embedding_q6: bool,
    /// Store the output head as q4_g64 (4.25 bits/weight), encoded at load (with tied
    /// embeddings, a copy of the embedding in that format).
    #[arg(long, conflicts_with = "lm_head_q6")]
    pub lm_head_q4: bool,
    /// Store the output head as q6_g64 (6.25 bits/weight), encoded at load (with tied
    /// embeddings, a copy of the embedding in that format).
    #[arg(long)]
    pub lm_head_q6: bool,
    /// Store the Gated DeltaNet recurrent state in fp16 between tokens (Qwen3.5 family only).
    #[arg(long)]
    pub gdn_state_fp16: bool,
    /// Run a prompt (or a perplexity window) longer than N tokens as consecutive chunks of at
    /// most N tokens: the same results up to rounding, activation memory bounded by N.
    #[arg(long, value_name = "N")]
    pub prefill_chunk: Option<usize>,
    /// GPU only: run the linear layers of prompts and perplexity windows (64 tokens or more)
    /// on cuBLAS with weights and activations rounded to bf16: faster, not exact (about
    /// 2e-3 relative error per linear; measure it with `ninfer compare` and perplexity).
    #[arg(long)]
    pub prefill_cublas: bool,
}

impl PrecisionArgs {
    /// The options these flags ask for; a usage error (exit 2) where both of a pair are set
    /// or the prefill chunk is 0.
    pub fn options(&self) -> Result<PrecisionOptions, CliError> {
        PrecisionOptions::from_flags(
            self.embedding_q4,
            self.embedding_q6,
            self.lm_head_q4,
            self.lm_head_q6,
        )
        .and_then(|o| o.with_engine_flags(self.gdn_state_fp16, self.prefill_chunk))
        .map(|o| o.with_prefill_cublas(self.prefill_cublas))
        .map_err(|e| CliError::usage(e.to_string()))
    }
}

impl From<ArchError> for CliError {
    /// A precision option the model cannot take is the user's to fix (exit 2); a model that
    /// cannot be built is a failure (exit 1).
    fn from(e: ArchError) -> Self {
        match e {
            ArchError::Precision { .. } => CliError::usage(e.to_string()),
            _ => CliError::failed(e.to_string()),
        }
    }
}

impl From<BindError> for CliError {
    /// Bad flags and bad model files are the user's to fix (exit 2); a plan/size disagreement
    /// is the engine's fault (exit 1).
    fn from(e: BindError) -> Self {
        match e {
            BindError::SizeMismatch { .. } => CliError::failed(e.to_string()),
            _ => CliError::usage(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::precision::VocabQuant;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        precision: PrecisionArgs,
    }

    #[test]
    fn flags_parse_and_pairs_conflict() {
        let c = Cli::try_parse_from(["x", "--embedding-q4", "--lm-head-q6"]).unwrap();
        let o = c.precision.options().unwrap();
        assert_eq!(o.embedding, Some(VocabQuant::Q4));
        assert_eq!(o.lm_head, Some(VocabQuant::Q6));
        assert_eq!(
            Cli::try_parse_from(["x"])
                .unwrap()
                .precision
                .options()
                .unwrap(),
            PrecisionOptions::default()
        );
        for pair in [
            ["--embedding-q4", "--embedding-q6"],
            ["--lm-head-q6", "--lm-head-q4"],
        ] {
            let e = Cli::try_parse_from(["x", pair[0], pair[1]]).err().unwrap();
            assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
            assert_eq!(e.exit_code(), 2);
        }
        // Built without clap's check, the library still refuses the pair.
        let a = PrecisionArgs {
            lm_head_q4: true,
            lm_head_q6: true,
            ..Default::default()
        };
        let e = a.options().unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.contains("--lm-head-q4 and --lm-head-q6"),
            "{}",
            e.message
        );
    }

    #[test]
    fn engine_flags_parse_and_a_zero_chunk_is_a_usage_error() {
        let c = Cli::try_parse_from(["x", "--gdn-state-fp16", "--prefill-chunk", "16"]).unwrap();
        let o = c.precision.options().unwrap();
        assert!(o.gdn_state_fp16);
        assert_eq!(o.prefill_chunk, Some(16));
        let c = Cli::try_parse_from(["x", "--prefill-chunk", "0"]).unwrap();
        let e = c.precision.options().unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("at least 1"), "{}", e.message);
        assert!(Cli::try_parse_from(["x", "--prefill-chunk", "-1"]).is_err());
        let c = Cli::try_parse_from(["x", "--prefill-cublas"]).unwrap();
        assert!(c.precision.options().unwrap().prefill_cublas);
        assert!(
            !Cli::try_parse_from(["x"])
                .unwrap()
                .precision
                .options()
                .unwrap()
                .prefill_cublas
        );
    }
}
