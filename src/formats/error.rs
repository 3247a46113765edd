//! The one error type of the formats module: every bad input is a sentence, never a panic.

use thiserror::Error;

/// What went wrong while loading, encoding, decoding or converting weights.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FormatError {
    #[error("unknown weight format `{name}`; known formats: {known}")]
    UnknownFormat { name: String, known: String },

    #[error("the format registry is invalid: {0}")]
    Registry(String),

    #[error(
        "format `{format}` stores K in groups of {group}, but K = {k} is not a multiple of {group}"
    )]
    GroupDoesNotDivide {
        format: String,
        group: usize,
        k: usize,
    },

    #[error(
        "a [{n}, {k}] weight in format `{format}` takes {expected} bytes, but the payload has {actual} bytes"
    )]
    PayloadSize {
        format: String,
        n: usize,
        k: usize,
        expected: usize,
        actual: usize,
    },

    #[error("a [{n}, {k}] weight has {expected} values, but {actual} values were given")]
    ValueCount {
        n: usize,
        k: usize,
        expected: usize,
        actual: usize,
    },

    #[error("the output buffer for {what} holds {actual} elements, but {expected} are needed")]
    OutputSize {
        what: String,
        expected: usize,
        actual: usize,
    },

    #[error("weight at row {row}, column {col} is {value}, which cannot be stored in format `{format}`; weights must be finite")]
    NonFinite {
        format: String,
        row: usize,
        col: usize,
        value: f32,
    },

    #[error("the scale of row {row}, group {group} in format `{format}` would be {scale:e}, beyond the largest value its {scale_type} scale can hold")]
    ScaleOverflow {
        format: String,
        row: usize,
        group: usize,
        scale: f32,
        scale_type: String,
    },

    #[error("weight at row {row}, column {col} is {value:e}, beyond the largest value format `{format}` can hold")]
    ValueOverflow {
        format: String,
        row: usize,
        col: usize,
        value: f32,
    },

    #[error("cannot transcode from `{from}` to `{to}`: {why}")]
    UnsupportedTranscode {
        from: String,
        to: String,
        why: String,
    },

    #[error("unknown GGUF tensor type id {0}")]
    UnknownGgufType(u32),

    #[error("GGUF type {ty} is not supported by the block decoders")]
    UnsupportedGgufType { ty: String },

    #[error("GGUF type {ty} stores {block} elements per block, but the tensor has {n_elements} elements, which is not a multiple of {block}")]
    GgufElementCount {
        ty: String,
        block: usize,
        n_elements: usize,
    },

    #[error("GGUF type {ty}: {n_elements} elements take {expected} bytes, but {actual} bytes were given")]
    GgufPayloadSize {
        ty: String,
        n_elements: usize,
        expected: usize,
        actual: usize,
    },

    #[error("row {row} is out of range for a weight with {n} rows")]
    RowOutOfRange { row: usize, n: usize },

    #[error("token id {id} is out of range for an embedding with {n} rows")]
    TokenOutOfRange { id: usize, n: usize },
}

/// Result with [`FormatError`].
pub type Result<T, E = FormatError> = std::result::Result<T, E>;
