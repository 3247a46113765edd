//! The precision flags the binaries share (`#[command(flatten)]` this into a subcommand's
//! arguments). Only the vocabulary flags exist yet; the others DESIGN.md lists
//! (`--mtp-experts-q4`, `--gdn-state-fp16`, `--prefill-cublas`, `--mlp-a8-decode`,
//! `--no-prefill-a8`, `--prefill-chunk N`) join this struct when their features land.

use clap::Args;

use super::CliError;
use crate::model::binder::BindError;
use crate::model::precision::PrecisionOptions;

/// The vocabulary precision flags.
#[derive(Debug, Clone, Default, Args)]
pub struct PrecisionArgs {
    /// Store the token embedding as q4_g64 (4.25 bits/weight), transcoded from q8_g32 at load.
    #[arg(long, conflicts_with = "embedding_q6")]
    pub embedding_q4: bool,
    /// Store the token embedding as q6_g64 (6.25 bits/weight), transcoded from q8_g32 at load.
    #[arg(long)]
    pub embedding_q6: bool,
    /// Store the output head as q4_g64 (4.25 bits/weight), transcoded from q8_g32 at load.
    #[arg(long, conflicts_with = "lm_head_q6")]
    pub lm_head_q4: bool,
    /// Store the output head as q6_g64 (6.25 bits/weight), transcoded from q8_g32 at load.
    #[arg(long)]
    pub lm_head_q6: bool,
}

impl PrecisionArgs {
    /// The options these flags ask for; a usage error (exit 2) where both of a pair are set.
    pub fn options(&self) -> Result<PrecisionOptions, CliError> {
        PrecisionOptions::from_flags(
            self.embedding_q4,
            self.embedding_q6,
            self.lm_head_q4,
            self.lm_head_q6,
        )
        .map_err(|e| CliError::usage(e.to_string()))
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
}
