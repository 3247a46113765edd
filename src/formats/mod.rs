//! Weight formats: the registry, host codecs, transcode and GGUF block decoders.
//!
//! - [`registry`]: the descriptors of `templates/formats/formats.toml` ([`Format`], [`registry()`]).
//! - [`layout`]: the row-split (planar) byte layout of an `[N, K]` weight ([`Layout`]).
//! - [`codec`]: host encode/decode for every format ([`encode`], [`decode`], ...).
//! - [`transcode`]: `q8_g32` -> narrower group-64 formats with clipped scales.
//! - [`gguf_blocks`]: GGUF block decoders and GGUF tensor -> engine format conversion.
//! - [`oracle`]: f64 references (linear `X W^T`, embedding gather) on decoded weights.
//! - [`error`]: the error type, [`FormatError`].

pub mod codec;
pub mod error;
pub mod gguf_blocks;
pub mod layout;
pub mod oracle;
pub mod registry;
pub mod transcode;

pub use codec::{decode, decode_row, decode_rows, encode, encode_into, encode_row};
pub use error::{FormatError, Result};
pub use gguf_blocks::GgufType;
pub use layout::Layout;
pub use registry::{format, registry, DenseType, Format, FormatKind, FormatRegistry, ScaleType};
pub use transcode::{transcode_q8_g32, transcode_q8_g32_into, transcode_q8_g32_row};
