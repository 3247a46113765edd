//! ninfer: an LLM inference engine for one NVIDIA GPU.
//!
//! Its kernels are Tera templates (`templates/`), rendered and compiled at run time by
//! NVRTC ([`jit`]), cached by content hash, and launched through the [`gpu`] layer. Every
//! op ([`ops`]) has a CPU reference that is the oracle its GPU routes are qualified against
//! ([`qualify`]).

pub mod bench;
pub mod cli;
pub mod engine;
pub mod formats;
pub mod gpu;
pub mod jit;
pub mod model;
pub mod ops;
pub mod perplexity;
pub mod qualify;
pub mod serve;
pub mod tune;
