//! Backends and generation: the [`backend::Backend`] trait the architectures run on, the
//! [`cpu`] backend (the oracle, and the engine's way to run without a GPU), and
//! [`generate`] (greedy and sampled decoding, stop tokens, streaming text).

pub mod backend;
pub mod cpu;
pub mod cuda;
pub mod generate;

pub use backend::{AttnShape, Backend, Rope, RopeStyle};
pub use cpu::{CpuBackend, Mat};
pub use generate::{generate, GenerateOptions, Generation, Sampling, StopReason, TextStream};
