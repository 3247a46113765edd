//! GGUF reader (versions 2 and 3), memory-mapped.
//!
//! Layout of a GGUF file, all little-endian:
//!
//! ```text
//! magic "GGUF" | version u32 | tensor_count u64 | metadata_count u64
//! metadata_count x (key: string, value_type u32, value)
//! tensor_count x (name: string, n_dims u32, dims u64 x n_dims, ggml_type u32, offset u64)
//! padding to `general.alignment` (default 32)
//! tensor data: each tensor at data_start + offset (offsets are multiples of the alignment)
//! ```
//!
//! A string is a u64 byte length then UTF-8 bytes; an array is an element type u32, a u64 count
//! and the elements. [`parse_gguf`] reads and checks all of it from a byte slice (it is what the
//! fuzz target calls); [`GgufFile`] maps a file and hands out tensor bytes.
//!
//! Shapes: GGUF lists dimensions innermost first (`ne[0]` is the contiguous one, the number of
//! columns of a matrix). [`GgufTensorInfo::shape`] gives them the way the rest of the engine
//! writes shapes, row-major and outermost first, i.e. reversed: a GGUF `token_embd.weight` with
//! dims `[576, 49152]` has shape `[49152, 576]` = `[rows, cols]`. [`GgufTensorInfo::dims`] keeps
//! the file's order.
//!
//! Tensor types are kept as the raw GGML type id (`u32`); the block decoders and the type enum
//! live in `crate::formats`. This reader needs only each type's block size and bytes per block,
//! from its own table ([`ggml_type_info`]), to know how many bytes a tensor spans.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::error::{GgufError, ModelError};

/// The four bytes a GGUF file starts with.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
/// Alignment of the tensor data when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Deepest nesting of arrays the parser accepts (real files use 1).
pub const MAX_ARRAY_DEPTH: usize = 8;

/// One GGML tensor type: how many elements a block holds and how many bytes a block takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgmlTypeInfo {
    pub id: u32,
    pub name: &'static str,
    pub block_size: u64,
    pub type_size: u64,
}

/// `(id, name, elements per block, bytes per block)` for the GGML types a GGUF may hold.
///
/// Block byte counts follow ggml's block structs: e.g. Q8_0 = fp16 scale + 32 int8 = 34 bytes,
/// Q4_1 = fp16 scale + fp16 min + 16 bytes of nibbles = 20 bytes, Q6_K = 128 + 64 + 16 + 2 = 210
/// bytes per 256 elements. Ids 4, 5 (Q4_2, Q4_3) and 31-33, 36-38 (the old repacked layouts) were
/// removed from ggml and are rejected.
const GGML_TYPES: &[(u32, &str, u64, u64)] = &[
    (0, "F32", 1, 4),
    (1, "F16", 1, 2),
    (2, "Q4_0", 32, 18),
    (3, "Q4_1", 32, 20),
    (6, "Q5_0", 32, 22),
    (7, "Q5_1", 32, 24),
    (8, "Q8_0", 32, 34),
    (9, "Q8_1", 32, 36),
    (10, "Q2_K", 256, 84),
    (11, "Q3_K", 256, 110),
    (12, "Q4_K", 256, 144),
    (13, "Q5_K", 256, 176),
    (14, "Q6_K", 256, 210),
    (15, "Q8_K", 256, 292),
    (16, "IQ2_XXS", 256, 66),
    (17, "IQ2_XS", 256, 74),
    (18, "IQ3_XXS", 256, 98),
    (19, "IQ1_S", 256, 50),
    (20, "IQ4_NL", 32, 18),
    (21, "IQ3_S", 256, 110),
    (22, "IQ2_S", 256, 82),
    (23, "IQ4_XS", 256, 136),
    (24, "I8", 1, 1),
    (25, "I16", 1, 2),
    (26, "I32", 1, 4),
    (27, "I64", 1, 8),
    (28, "F64", 1, 8),
    (29, "IQ1_M", 256, 56),
    (30, "BF16", 1, 2),
    (34, "TQ1_0", 256, 54),
    (35, "TQ2_0", 256, 66),
    (39, "MXFP4", 32, 17),
];

/// Block size and bytes per block of GGML type `id`, or `None` for an id ninfer does not know.
pub fn ggml_type_info(id: u32) -> Option<GgmlTypeInfo> {
    GGML_TYPES
        .iter()
        .find(|t| t.0 == id)
        .map(|&(id, name, block_size, type_size)| GgmlTypeInfo {
            id,
            name,
            block_size,
            type_size,
        })
}

/// The type tag of a metadata value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgufValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl GgufValueType {
    pub fn from_id(id: u32) -> Option<Self> {
        use GgufValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// Fewest bytes one value of this type takes in the file.
    fn min_size(self) -> usize {
        use GgufValueType::*;
        match self {
            U8 | I8 | Bool => 1,
            U16 | I16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | String => 8,
            Array => 12,
        }
    }
}

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    /// Element type and elements (the type is kept so that an empty array still has one).
    Array(GgufValueType, Vec<GgufValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl GgufValue {
    pub fn value_type(&self) -> GgufValueType {
        use GgufValue as V;
        use GgufValueType as T;
        match self {
            V::U8(_) => T::U8,
            V::I8(_) => T::I8,
            V::U16(_) => T::U16,
            V::I16(_) => T::I16,
            V::U32(_) => T::U32,
            V::I32(_) => T::I32,
            V::F32(_) => T::F32,
            V::Bool(_) => T::Bool,
            V::String(_) => T::String,
            V::Array(..) => T::Array,
            V::U64(_) => T::U64,
            V::I64(_) => T::I64,
            V::F64(_) => T::F64,
        }
    }

    /// An integer of any width, signed or not, as i128 (no float, no bool).
    pub fn as_int(&self) -> Option<i128> {
        use GgufValue as V;
        Some(match *self {
            V::U8(v) => v.into(),
            V::I8(v) => v.into(),
            V::U16(v) => v.into(),
            V::I16(v) => v.into(),
            V::U32(v) => v.into(),
            V::I32(v) => v.into(),
            V::U64(v) => v.into(),
            V::I64(v) => v.into(),
            _ => return None,
        })
    }

    /// A non-negative integer that fits `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        self.as_int().and_then(|v| u64::try_from(v).ok())
    }

    /// Any number (integers are converted).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(v.into()),
            GgufValue::F64(v) => Some(v),
            _ => self.as_int().map(|v| v as f64),
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            GgufValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[GgufValue]> {
        match self {
            GgufValue::Array(_, v) => Some(v),
            _ => None,
        }
    }
}

/// One tensor's entry in the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufTensorInfo {
    pub name: String,
    /// Dimensions as the file lists them: innermost (contiguous) first.
    pub dims: Vec<u64>,
    /// Raw GGML type id (see [`ggml_type_info`]; the decoders are in `crate::formats`).
    pub type_id: u32,
    /// Offset of the data from the start of the data section.
    pub offset: u64,
    /// Bytes the data spans.
    pub n_bytes: u64,
}

impl GgufTensorInfo {
    /// Row-major shape, outermost first (the reverse of [`Self::dims`]): `[rows, cols]` for a
    /// matrix.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }

    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }

    /// The GGML type's name ("Q4_1", "F32", ...).
    pub fn type_name(&self) -> &'static str {
        ggml_type_info(self.type_id).map_or("?", |t| t.name)
    }
}

/// Everything before the tensor data, parsed and checked.
#[derive(Debug, Clone)]
pub struct GgufHeader {
    pub version: u32,
    /// Metadata in file order.
    pub metadata: Vec<(String, GgufValue)>,
    /// Tensors in file order.
    pub tensors: Vec<GgufTensorInfo>,
    pub alignment: u64,
    /// Absolute file offset of the data section.
    pub data_offset: u64,
    meta_index: HashMap<String, usize>,
    tensor_index: HashMap<String, usize>,
}

impl GgufHeader {
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.meta_index.get(key).map(|&i| &self.metadata[i].1)
    }

    pub fn tensor_info(&self, name: &str) -> Option<&GgufTensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    /// Absolute byte range of a tensor's data in the file.
    pub fn tensor_range(&self, info: &GgufTensorInfo) -> std::ops::Range<usize> {
        let start = (self.data_offset + info.offset) as usize;
        start..start + info.n_bytes as usize
    }
}

/// A cursor over the header bytes that never reads past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &dyn Fn() -> String) -> Result<&'a [u8], GgufError> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.bytes.len() => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            _ => Err(GgufError::Truncated {
                what: what(),
                offset: self.pos as u64,
                len: self.bytes.len() as u64,
            }),
        }
    }

    fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N], GgufError> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String, GgufError> {
        let len = self.u64(what)?;
        let start = self.pos as u64;
        let len = usize::try_from(len).map_err(|_| GgufError::Truncated {
            what: what(),
            offset: start,
            len: self.bytes.len() as u64,
        })?;
        let s = self.take(len, what)?;
        String::from_utf8(s.to_vec()).map_err(|_| GgufError::BadUtf8 {
            what: what(),
            offset: start,
        })
    }

    fn value(
        &mut self,
        ty: GgufValueType,
        key: &str,
        depth: usize,
    ) -> Result<GgufValue, GgufError> {
        use GgufValueType as T;
        let what = || format!("the value of metadata {key:?}");
        Ok(match ty {
            T::U8 => GgufValue::U8(self.array::<1>(&what)?[0]),
            T::I8 => GgufValue::I8(self.array::<1>(&what)?[0] as i8),
            T::Bool => GgufValue::Bool(self.array::<1>(&what)?[0] != 0),
            T::U16 => GgufValue::U16(u16::from_le_bytes(self.array(&what)?)),
            T::I16 => GgufValue::I16(i16::from_le_bytes(self.array(&what)?)),
            T::U32 => GgufValue::U32(u32::from_le_bytes(self.array(&what)?)),
            T::I32 => GgufValue::I32(i32::from_le_bytes(self.array(&what)?)),
            T::F32 => GgufValue::F32(f32::from_le_bytes(self.array(&what)?)),
            T::U64 => GgufValue::U64(u64::from_le_bytes(self.array(&what)?)),
            T::I64 => GgufValue::I64(i64::from_le_bytes(self.array(&what)?)),
            T::F64 => GgufValue::F64(f64::from_le_bytes(self.array(&what)?)),
            T::String => GgufValue::String(self.string(&what)?),
            T::Array => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(GgufError::TooDeep(MAX_ARRAY_DEPTH));
                }
                let elem_id = self.u32(&what)?;
                let elem =
                    GgufValueType::from_id(elem_id).ok_or_else(|| GgufError::BadValueType {
                        key: key.to_string(),
                        type_id: elem_id,
                    })?;
                let count = self.u64(&what)?;
                // Never trust the count for the allocation: each element takes at least
                // `min_size` bytes, so the rest of the file bounds how many there can be.
                let fits = (self.remaining() / elem.min_size()) as u64;
                if count > fits {
                    return Err(GgufError::Truncated {
                        what: format!("the {count} elements of metadata array {key:?}"),
                        offset: self.pos as u64,
                        len: self.bytes.len() as u64,
                    });
                }
                let mut values = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    values.push(self.value(elem, key, depth + 1)?);
                }
                GgufValue::Array(elem, values)
            }
        })
    }
}

/// Parses and checks a whole GGUF file held in `bytes`: header, metadata, tensor infos, and
/// that every tensor's data lies inside `bytes`, aligned, without overlap of the header.
pub fn parse_gguf(bytes: &[u8]) -> Result<GgufHeader, GgufError> {
    let mut r = Reader { bytes, pos: 0 };
    if bytes.len() < 4 || bytes[..4] != GGUF_MAGIC {
        let found = bytes
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ");
        return Err(GgufError::BadMagic {
            found: if found.is_empty() {
                "(none: the file is empty)".into()
            } else {
                found
            },
        });
    }
    r.pos = 4;
    let version = r.u32(&|| "the version".into())?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::UnsupportedVersion(version));
    }
    let tensor_count = r.u64(&|| "the tensor count".into())?;
    let meta_count = r.u64(&|| "the metadata count".into())?;

    // Each metadata entry takes at least 8 (key length) + 4 (type) + 1 bytes, each tensor info
    // at least 8 + 4 + 4 + 8: counts beyond what fits are a truncated file, not an allocation.
    let rest = r.remaining() as u64;
    if meta_count > rest / 13 {
        return Err(GgufError::Truncated {
            what: format!("{meta_count} metadata entries"),
            offset: r.pos as u64,
            len: bytes.len() as u64,
        });
    }
    let mut metadata = Vec::with_capacity(meta_count as usize);
    let mut meta_index = HashMap::with_capacity(meta_count as usize);
    for i in 0..meta_count {
        let key = r.string(&|| format!("the key of metadata entry {i}"))?;
        let ty_id = r.u32(&|| format!("the value type of metadata {key:?}"))?;
        let ty = GgufValueType::from_id(ty_id).ok_or_else(|| GgufError::BadValueType {
            key: key.clone(),
            type_id: ty_id,
        })?;
        let value = r.value(ty, &key, 0)?;
        if meta_index.insert(key.clone(), metadata.len()).is_some() {
            return Err(GgufError::DuplicateKey(key));
        }
        metadata.push((key, value));
    }

    let alignment = match meta_index.get("general.alignment").map(|&i| &metadata[i].1) {
        None => DEFAULT_ALIGNMENT,
        Some(v) => {
            let a = v.as_u64().ok_or_else(|| GgufError::BadMetadata {
                key: "general.alignment".into(),
                expected: "an unsigned integer".into(),
            })?;
            if a == 0 || !a.is_power_of_two() || a > 1 << 20 {
                return Err(GgufError::BadAlignment(a));
            }
            a
        }
    };

    let rest = r.remaining() as u64;
    if tensor_count > rest / 24 {
        return Err(GgufError::Truncated {
            what: format!("{tensor_count} tensor infos"),
            offset: r.pos as u64,
            len: bytes.len() as u64,
        });
    }
    let mut tensors = Vec::with_capacity(tensor_count as usize);
    let mut tensor_index = HashMap::with_capacity(tensor_count as usize);
    for i in 0..tensor_count {
        let name = r.string(&|| format!("the name of tensor {i}"))?;
        let what = || format!("the info of tensor {name:?}");
        let n_dims = r.u32(&what)?;
        if n_dims > 4 {
            return Err(GgufError::TooManyDims { name, n_dims });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(r.u64(&what)?);
        }
        let type_id = r.u32(&what)?;
        let offset = r.u64(&what)?;
        let info = ggml_type_info(type_id).ok_or_else(|| GgufError::UnknownType {
            name: name.clone(),
            type_id,
        })?;
        let overflow = || GgufError::Overflow { name: name.clone() };
        let n_elements = dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(overflow)?;
        let inner = dims.first().copied().unwrap_or(1);
        if inner % info.block_size != 0 {
            return Err(GgufError::BadBlockShape {
                name,
                shape: dims,
                block: info.block_size,
            });
        }
        let n_bytes = (n_elements / info.block_size)
            .checked_mul(info.type_size)
            .ok_or_else(overflow)?;
        if offset % alignment != 0 {
            return Err(GgufError::Misaligned {
                name,
                offset,
                alignment,
            });
        }
        if tensor_index.insert(name.clone(), tensors.len()).is_some() {
            return Err(GgufError::DuplicateTensor(name));
        }
        tensors.push(GgufTensorInfo {
            name,
            dims,
            type_id,
            offset,
            n_bytes,
        });
    }

    let header_end = r.pos as u64;
    let data_offset = header_end.div_ceil(alignment) * alignment;
    let len = bytes.len() as u64;
    for t in &tensors {
        let start = data_offset.checked_add(t.offset);
        let end = start.and_then(|s| s.checked_add(t.n_bytes));
        match (start, end) {
            (Some(_), Some(end)) if end <= len => {}
            _ => {
                return Err(GgufError::DataOutOfBounds {
                    name: t.name.clone(),
                    start: data_offset.saturating_add(t.offset),
                    end: data_offset
                        .saturating_add(t.offset)
                        .saturating_add(t.n_bytes),
                    len,
                })
            }
        }
    }

    Ok(GgufHeader {
        version,
        metadata,
        tensors,
        alignment,
        data_offset,
        meta_index,
        tensor_index,
    })
}

/// A tensor's header entry and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct GgufTensor<'a> {
    pub info: &'a GgufTensorInfo,
    pub data: &'a [u8],
}

/// A GGUF file mapped into memory, parsed and checked.
pub struct GgufFile {
    path: PathBuf,
    mmap: Mmap,
    header: GgufHeader,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("path", &self.path)
            .field("version", &self.header.version)
            .field("tensors", &self.header.tensors.len())
            .field("metadata", &self.header.metadata.len())
            .finish()
    }
}

impl GgufFile {
    /// Maps `path` and parses it; every problem is a [`ModelError`] naming the file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| ModelError::io(&path, e))?;
        // SAFETY: the map is read-only; like every mmap-based loader we rely on the file not
        // being truncated or rewritten while it is open (model files are not edited in place).
        let mmap = unsafe { Mmap::map(&file) }.map_err(|e| ModelError::io(&path, e))?;
        let header = parse_gguf(&mmap).map_err(|problem| ModelError::Gguf {
            path: path.clone(),
            problem,
        })?;
        Ok(GgufFile { path, mmap, header })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &GgufHeader {
        &self.header
    }

    pub fn version(&self) -> u32 {
        self.header.version
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        &self.mmap
    }

    pub fn metadata(&self) -> &[(String, GgufValue)] {
        &self.header.metadata
    }

    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.header.get(key)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(GgufValue::as_str)
    }

    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(GgufValue::as_u64)
    }

    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(GgufValue::as_f64)
    }

    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(GgufValue::as_bool)
    }

    /// `general.architecture` ("llama", ...).
    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    pub fn tensors(&self) -> &[GgufTensorInfo] {
        &self.header.tensors
    }

    pub fn tensor_info(&self, name: &str) -> Option<&GgufTensorInfo> {
        self.header.tensor_info(name)
    }

    /// The bytes of one tensor (bounds were checked when the file was opened).
    pub fn tensor_data(&self, info: &GgufTensorInfo) -> &[u8] {
        &self.mmap[self.header.tensor_range(info)]
    }

    pub fn tensor(&self, name: &str) -> Option<GgufTensor<'_>> {
        let info = self.tensor_info(name)?;
        Some(GgufTensor {
            info,
            data: self.tensor_data(info),
        })
    }

    /// A metadata error naming this file.
    pub(crate) fn bad_metadata(&self, key: &str, expected: &str) -> ModelError {
        ModelError::Gguf {
            path: self.path.clone(),
            problem: GgufError::BadMetadata {
                key: key.into(),
                expected: expected.into(),
            },
        }
    }

    /// A string array from the metadata (e.g. `tokenizer.ggml.tokens`).
    pub fn get_str_array(&self, key: &str) -> Result<Option<Vec<&str>>, ModelError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let arr = v
            .as_array()
            .ok_or_else(|| self.bad_metadata(key, "an array of strings"))?;
        arr.iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| self.bad_metadata(key, "an array of strings"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// An integer array from the metadata (e.g. `tokenizer.ggml.token_type`).
    pub fn get_int_array(&self, key: &str) -> Result<Option<Vec<i64>>, ModelError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let arr = v
            .as_array()
            .ok_or_else(|| self.bad_metadata(key, "an array of integers"))?;
        arr.iter()
            .map(|v| {
                v.as_int()
                    .and_then(|i| i64::try_from(i).ok())
                    .ok_or_else(|| self.bad_metadata(key, "an array of integers"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// Builds GGUF bytes; used by tests (and handy to write small synthetic models).
#[derive(Debug, Default, Clone)]
pub struct GgufBuilder {
    pub version: u32,
    pub alignment: Option<u64>,
    metadata: Vec<(String, GgufValue)>,
    tensors: Vec<(String, Vec<u64>, u32, Vec<u8>)>,
}

impl GgufBuilder {
    pub fn new() -> Self {
        GgufBuilder {
            version: 3,
            ..Default::default()
        }
    }

    pub fn meta(&mut self, key: &str, value: GgufValue) -> &mut Self {
        self.metadata.push((key.to_string(), value));
        self
    }

    /// Adds a tensor; `dims` innermost first, as GGUF stores them.
    pub fn tensor(&mut self, name: &str, dims: &[u64], type_id: u32, data: Vec<u8>) -> &mut Self {
        self.tensors
            .push((name.to_string(), dims.to_vec(), type_id, data));
        self
    }

    fn put_str(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    fn type_id(t: GgufValueType) -> u32 {
        use GgufValueType::*;
        match t {
            U8 => 0,
            I8 => 1,
            U16 => 2,
            I16 => 3,
            U32 => 4,
            I32 => 5,
            F32 => 6,
            Bool => 7,
            String => 8,
            Array => 9,
            U64 => 10,
            I64 => 11,
            F64 => 12,
        }
    }

    fn put_value(out: &mut Vec<u8>, v: &GgufValue) {
        match v {
            GgufValue::U8(x) => out.push(*x),
            GgufValue::I8(x) => out.push(*x as u8),
            GgufValue::Bool(x) => out.push(*x as u8),
            GgufValue::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::String(s) => Self::put_str(out, s),
            GgufValue::Array(t, vs) => {
                out.extend_from_slice(&Self::type_id(*t).to_le_bytes());
                out.extend_from_slice(&(vs.len() as u64).to_le_bytes());
                for v in vs {
                    Self::put_value(out, v);
                }
            }
        }
    }

    /// The file's bytes. Tensor data is laid out in order, each at the next aligned offset.
    pub fn build(&self) -> Vec<u8> {
        let align = self.alignment.unwrap_or(DEFAULT_ALIGNMENT).max(1);
        let mut out = Vec::new();
        out.extend_from_slice(&GGUF_MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        let mut meta = self.metadata.clone();
        if let Some(a) = self.alignment {
            meta.push(("general.alignment".into(), GgufValue::U32(a as u32)));
        }
        out.extend_from_slice(&(meta.len() as u64).to_le_bytes());
        for (k, v) in &meta {
            Self::put_str(&mut out, k);
            out.extend_from_slice(&Self::type_id(v.value_type()).to_le_bytes());
            Self::put_value(&mut out, v);
        }
        let mut offset = 0u64;
        let mut offsets = Vec::new();
        for (name, dims, ty, data) in &self.tensors {
            Self::put_str(&mut out, name);
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            offsets.push(offset);
            offset = (offset + data.len() as u64).div_ceil(align) * align;
        }
        let data_start = (out.len() as u64).div_ceil(align) * align;
        out.resize(data_start as usize, 0);
        for ((_, _, _, data), off) in self.tensors.iter().zip(offsets) {
            out.resize((data_start + off) as usize, 0);
            out.extend_from_slice(data);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn sample() -> Vec<u8> {
        let mut b = GgufBuilder::new();
        b.meta("general.architecture", GgufValue::String("llama".into()))
            .meta("x.u8", GgufValue::U8(7))
            .meta("x.i8", GgufValue::I8(-7))
            .meta("x.u16", GgufValue::U16(700))
            .meta("x.i16", GgufValue::I16(-700))
            .meta("x.i32", GgufValue::I32(-70000))
            .meta("x.f32", GgufValue::F32(1.5))
            .meta("x.bool", GgufValue::Bool(true))
            .meta("x.u64", GgufValue::U64(1 << 40))
            .meta("x.i64", GgufValue::I64(-(1 << 40)))
            .meta("x.f64", GgufValue::F64(-2.25))
            .meta(
                "x.arr",
                GgufValue::Array(
                    GgufValueType::String,
                    vec![
                        GgufValue::String("a".into()),
                        GgufValue::String("bé".into()),
                    ],
                ),
            )
            .meta(
                "x.nested",
                GgufValue::Array(
                    GgufValueType::Array,
                    vec![GgufValue::Array(
                        GgufValueType::I32,
                        vec![GgufValue::I32(1)],
                    )],
                ),
            )
            .meta("x.empty", GgufValue::Array(GgufValueType::U8, vec![]));
        b.tensor("a", &[4, 2], 0, (0..32).collect())
            .tensor("q", &[64, 3], 8, vec![1u8; 34 * 2 * 3])
            .tensor("v", &[5], 1, vec![2u8; 10]);
        b.build()
    }

    #[test]
    fn round_trips_every_value_type_and_tensor() {
        let bytes = sample();
        let h = parse_gguf(&bytes).unwrap();
        assert_eq!(h.version, 3);
        assert_eq!(h.alignment, 32);
        assert_eq!(h.data_offset % 32, 0);
        assert_eq!(h.get("x.u8"), Some(&GgufValue::U8(7)));
        assert_eq!(h.get("x.i16").unwrap().as_int(), Some(-700));
        assert_eq!(h.get("x.f32").unwrap().as_f64(), Some(1.5));
        assert_eq!(h.get("x.u64").unwrap().as_u64(), Some(1 << 40));
        assert_eq!(h.get("x.i64").unwrap().as_u64(), None);
        assert_eq!(h.get("x.bool").unwrap().as_bool(), Some(true));
        assert_eq!(h.get("x.f64").unwrap().as_f64(), Some(-2.25));
        let arr = h.get("x.arr").unwrap().as_array().unwrap();
        assert_eq!(arr[1].as_str(), Some("bé"));
        assert_eq!(
            h.get("x.empty"),
            Some(&GgufValue::Array(GgufValueType::U8, vec![]))
        );
        let nested = h.get("x.nested").unwrap().as_array().unwrap();
        assert_eq!(nested[0].as_array().unwrap()[0], GgufValue::I32(1));

        let a = h.tensor_info("a").unwrap();
        assert_eq!(a.dims, vec![4, 2]);
        assert_eq!(a.shape(), vec![2, 4]);
        assert_eq!(a.n_bytes, 32);
        assert_eq!(&bytes[h.tensor_range(a)], &(0..32).collect::<Vec<u8>>()[..]);
        let q = h.tensor_info("q").unwrap();
        assert_eq!(q.type_name(), "Q8_0");
        assert_eq!(q.n_bytes, 34 * 2 * 3);
        assert_eq!(q.shape(), vec![3, 64]);
        assert_eq!(h.tensor_info("v").unwrap().n_bytes, 10);
    }

    #[test]
    fn honours_general_alignment() {
        let mut b = GgufBuilder::new();
        b.alignment = Some(64);
        b.tensor("a", &[3], 0, vec![1; 12])
            .tensor("b", &[3], 0, vec![2; 12]);
        let bytes = b.build();
        let h = parse_gguf(&bytes).unwrap();
        assert_eq!(h.alignment, 64);
        assert_eq!(h.data_offset % 64, 0);
        assert_eq!(h.tensor_info("b").unwrap().offset, 64);
        assert_eq!(bytes[h.tensor_range(h.tensor_info("b").unwrap())], [2; 12]);
    }

    #[test]
    fn rejects_bad_files_with_clear_errors() {
        assert!(matches!(parse_gguf(b""), Err(GgufError::BadMagic { .. })));
        assert!(matches!(
            parse_gguf(b"PK\x03\x04rest"),
            Err(GgufError::BadMagic { .. })
        ));
        let mut v1 = sample();
        v1[4] = 1;
        assert_eq!(
            parse_gguf(&v1).unwrap_err(),
            GgufError::UnsupportedVersion(1)
        );
        let mut v9 = sample();
        v9[4] = 9;
        assert_eq!(
            parse_gguf(&v9).unwrap_err(),
            GgufError::UnsupportedVersion(9)
        );

        let full = sample();
        let h = parse_gguf(&full).unwrap();
        let e = parse_gguf(&full[..h.data_offset as usize + 1]).unwrap_err();
        assert!(matches!(e, GgufError::DataOutOfBounds { .. }), "{e}");
        // Cut inside the header: truncated; cut inside the data: out of bounds.
        for cut in [5, 20, 100] {
            let e = parse_gguf(&full[..cut]).unwrap_err();
            assert!(matches!(e, GgufError::Truncated { .. }), "{cut}: {e}");
        }
        let e = parse_gguf(&full[..full.len() - 1]).unwrap_err();
        assert!(matches!(e, GgufError::DataOutOfBounds { .. }), "{e}");

        let mut b = GgufBuilder::new();
        b.tensor("w", &[33], 8, vec![0; 34]);
        assert!(matches!(
            parse_gguf(&b.build()),
            Err(GgufError::BadBlockShape { .. })
        ));
        let mut b = GgufBuilder::new();
        b.tensor("w", &[4], 4, vec![0; 16]);
        assert!(matches!(
            parse_gguf(&b.build()),
            Err(GgufError::UnknownType { type_id: 4, .. })
        ));
        let mut b = GgufBuilder::new();
        b.tensor("w", &[4], 0, vec![0; 16])
            .tensor("w", &[4], 0, vec![0; 16]);
        assert!(matches!(
            parse_gguf(&b.build()),
            Err(GgufError::DuplicateTensor(_))
        ));
        let mut b = GgufBuilder::new();
        b.alignment = Some(48);
        assert_eq!(
            parse_gguf(&b.build()).unwrap_err(),
            GgufError::BadAlignment(48)
        );

        // A huge array count must be an error, not an allocation.
        let mut b = GgufBuilder::new();
        b.meta(
            "k",
            GgufValue::Array(GgufValueType::U64, vec![GgufValue::U64(1)]),
        );
        let mut bytes = b.build();
        let pos = bytes.len() - 16;
        bytes[pos..pos + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            parse_gguf(&bytes),
            Err(GgufError::Truncated { .. })
        ));
    }

    #[test]
    fn messages_are_sentences() {
        let e = parse_gguf(b"GGUF\x01\0\0\0").unwrap_err();
        let m = ModelError::Gguf {
            path: "/m/x.gguf".into(),
            problem: e,
        };
        assert_eq!(
            m.to_string(),
            "/m/x.gguf is not a valid GGUF file: it is GGUF version 1, and ninfer reads versions 2 and 3"
        );
    }

    /// A few thousand random and mutated inputs: the parser returns, never panics, and whatever
    /// it accepts has every tensor inside the buffer.
    #[test]
    fn survives_random_and_mutated_inputs() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x6767_7566);
        let base = sample();
        let mut accepted = 0;
        for i in 0..4000 {
            let mut bytes = if i % 4 == 0 {
                let n = rng.random_range(0..200);
                let mut v: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                if rng.random_bool(0.5) && v.len() >= 8 {
                    v[..4].copy_from_slice(b"GGUF");
                    v[4..8].copy_from_slice(&3u32.to_le_bytes());
                }
                v
            } else {
                base.clone()
            };
            if i % 4 != 0 {
                for _ in 0..rng.random_range(1..6) {
                    let p = rng.random_range(0..bytes.len());
                    match rng.random_range(0..4) {
                        0 => bytes[p] = rng.random(),
                        1 => bytes[p] ^= 1 << rng.random_range(0..8),
                        2 => bytes.truncate(p.max(1)),
                        _ => {
                            let v = [0u8, 0xff, 0x7f, 0x80][rng.random_range(0..4)];
                            let end = (p + 8).min(bytes.len());
                            bytes[p..end].fill(v);
                        }
                    }
                }
            }
            if let Ok(h) = parse_gguf(&bytes) {
                accepted += 1;
                for t in &h.tensors {
                    let r = h.tensor_range(t);
                    assert!(r.end <= bytes.len());
                }
            }
        }
        // Some single-byte mutations (in data or string contents) keep the file valid.
        assert!(accepted > 0);
    }
}
