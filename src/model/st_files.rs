//! HF safetensors weights: one `model.safetensors`, or shards listed by
//! `model.safetensors.index.json`, memory-mapped. The header is parsed by the `safetensors`
//! crate ([`parse_safetensors_header`] takes the whole file as bytes, so it can be fuzzed).
//! Shapes are as safetensors stores them: row-major, outermost first (`[out, in]` for a linear).

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
pub use safetensors::Dtype;
use safetensors::SafeTensors;

use super::error::ModelError;

/// One tensor's entry: dtype, shape and absolute byte range in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StTensorInfo {
    pub name: String,
    pub dtype: Dtype,
    /// Row-major, outermost first.
    pub shape: Vec<usize>,
    /// Absolute byte range in the file.
    pub range: Range<usize>,
}

/// Parses and checks a whole safetensors file held in `bytes` (header length, JSON header,
/// contiguous in-bounds tensor data whose sizes match dtypes and shapes). Tensors come back in
/// the order of their data.
pub fn parse_safetensors_header(bytes: &[u8]) -> Result<Vec<StTensorInfo>, String> {
    let (n, metadata) = SafeTensors::read_metadata(bytes).map_err(|e| describe(&e))?;
    let base = 8 + n;
    let infos = metadata.tensors();
    metadata
        .offset_keys()
        .into_iter()
        .map(|name| {
            let info = infos[&name];
            let (s, e) = info.data_offsets;
            let range = base + s..base + e;
            if range.end > bytes.len() {
                return Err(format!("tensor {name:?} runs past the end of the file"));
            }
            Ok(StTensorInfo {
                dtype: info.dtype,
                shape: info.shape.clone(),
                range,
                name,
            })
        })
        .collect()
}

fn describe(e: &safetensors::SafeTensorError) -> String {
    use safetensors::SafeTensorError as E;
    match e {
        E::HeaderTooSmall => "it is shorter than the 8-byte header length".into(),
        E::HeaderTooLarge => "its header length is larger than 100 MB".into(),
        E::InvalidHeaderLength => "its header length runs past the end of the file".into(),
        E::MetadataIncompleteBuffer => {
            "the tensor data does not fill the file exactly (truncated or padded)".into()
        }
        other => format!("{other}"),
    }
}

/// A tensor's entry and bytes.
#[derive(Debug, Clone, Copy)]
pub struct StTensor<'a> {
    pub info: &'a StTensorInfo,
    pub data: &'a [u8],
    /// The shard it lives in.
    pub path: &'a Path,
}

struct Shard {
    path: PathBuf,
    mmap: Mmap,
}

/// All safetensors shards of a checkpoint, mapped.
pub struct SafetensorsModel {
    shards: Vec<Shard>,
    tensors: Vec<(usize, StTensorInfo)>,
    index: HashMap<String, usize>,
}

impl std::fmt::Debug for SafetensorsModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SafetensorsModel")
            .field(
                "shards",
                &self.shards.iter().map(|s| &s.path).collect::<Vec<_>>(),
            )
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

/// Name of the index of a sharded checkpoint.
pub const INDEX_FILE: &str = "model.safetensors.index.json";
/// Name of a single-file checkpoint.
pub const SINGLE_FILE: &str = "model.safetensors";

impl SafetensorsModel {
    /// Opens `dir/model.safetensors`, or every shard that `dir/model.safetensors.index.json`
    /// names (each tensor must be in the shard the index says).
    pub fn open_dir(dir: impl AsRef<Path>) -> Result<Self, ModelError> {
        let dir = dir.as_ref();
        let index_path = dir.join(INDEX_FILE);
        if index_path.is_file() {
            let text =
                std::fs::read_to_string(&index_path).map_err(|e| ModelError::io(&index_path, e))?;
            let bad = |problem: String| ModelError::Safetensors {
                path: index_path.clone(),
                problem,
            };
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| bad(format!("the index is not valid JSON ({e})")))?;
            let map = v
                .get("weight_map")
                .and_then(|m| m.as_object())
                .ok_or_else(|| bad("the index has no weight_map object".into()))?;
            let mut files: Vec<String> = Vec::new();
            let mut wanted: Vec<(String, String)> = Vec::new();
            for (name, file) in map {
                let file = file
                    .as_str()
                    .ok_or_else(|| bad(format!("weight_map[{name:?}] is not a file name")))?;
                if file.contains('/') || file.contains('\\') || file == ".." {
                    return Err(bad(format!(
                        "weight_map[{name:?}] = {file:?} is not a plain file name"
                    )));
                }
                if !files.iter().any(|f| f == file) {
                    files.push(file.to_string());
                }
                wanted.push((name.clone(), file.to_string()));
            }
            if files.is_empty() {
                return Err(bad("the index lists no tensors".into()));
            }
            let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
            let model = Self::open_files(&paths)?;
            for (name, file) in wanted {
                match model.tensor(&name) {
                    Some(t)
                        if t.path.file_name().and_then(|f| f.to_str()) == Some(file.as_str()) => {}
                    Some(t) => {
                        return Err(bad(format!(
                            "the index puts {name:?} in {file}, but it is in {}",
                            t.path.display()
                        )))
                    }
                    None => {
                        return Err(bad(format!(
                            "{file} has no tensor {name:?}, which the index lists"
                        )))
                    }
                }
            }
            return Ok(model);
        }
        let single = dir.join(SINGLE_FILE);
        if single.is_file() {
            return Self::open_files(&[single]);
        }
        Err(ModelError::NotAModel {
            path: dir.to_path_buf(),
        })
    }

    /// Opens the given files; a tensor name found in two of them is an error.
    pub fn open_files(paths: &[PathBuf]) -> Result<Self, ModelError> {
        let mut shards = Vec::with_capacity(paths.len());
        let mut tensors = Vec::new();
        let mut index = HashMap::new();
        for (si, path) in paths.iter().enumerate() {
            let file = File::open(path).map_err(|e| ModelError::io(path, e))?;
            // SAFETY: read-only map; the files must not be rewritten while the model is open.
            let mmap = unsafe { Mmap::map(&file) }.map_err(|e| ModelError::io(path, e))?;
            let infos =
                parse_safetensors_header(&mmap).map_err(|problem| ModelError::Safetensors {
                    path: path.clone(),
                    problem,
                })?;
            for info in infos {
                if index.insert(info.name.clone(), tensors.len()).is_some() {
                    return Err(ModelError::Safetensors {
                        path: path.clone(),
                        problem: format!("tensor {:?} is also in another shard", info.name),
                    });
                }
                tensors.push((si, info));
            }
            shards.push(Shard {
                path: path.clone(),
                mmap,
            });
        }
        Ok(SafetensorsModel {
            shards,
            tensors,
            index,
        })
    }

    pub fn paths(&self) -> Vec<&Path> {
        self.shards.iter().map(|s| s.path.as_path()).collect()
    }

    /// Every tensor's entry, shard by shard in data order.
    pub fn tensor_infos(&self) -> impl Iterator<Item = &StTensorInfo> {
        self.tensors.iter().map(|(_, i)| i)
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    pub fn tensor(&self, name: &str) -> Option<StTensor<'_>> {
        let &i = self.index.get(name)?;
        let (si, info) = &self.tensors[i];
        let shard = &self.shards[*si];
        Some(StTensor {
            info,
            data: &shard.mmap[info.range.clone()],
            path: &shard.path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A safetensors file written by hand (not by the crate), to check the reader against.
    pub(crate) fn build(tensors: &[(&str, &str, &[usize], Vec<u8>)]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        let mut off = 0usize;
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            header.insert(
                name.to_string(),
                serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [off, off + bytes.len()]}),
            );
            off += bytes.len();
            data.extend_from_slice(bytes);
        }
        header.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
        let mut h = serde_json::to_vec(&serde_json::Value::Object(header)).unwrap();
        while !h.len().is_multiple_of(8) {
            h.push(b' ');
        }
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&h);
        out.extend_from_slice(&data);
        out
    }

    #[test]
    fn reads_tensors_in_data_order() {
        let bytes = build(&[
            ("b", "F32", &[2, 2], (0..16).collect()),
            ("a", "BF16", &[3], vec![9; 6]),
        ]);
        let infos = parse_safetensors_header(&bytes).unwrap();
        assert_eq!(infos.len(), 2);
        assert_eq!(infos[0].name, "b");
        assert_eq!(infos[0].shape, vec![2, 2]);
        assert_eq!(infos[1].dtype, Dtype::BF16);
        assert_eq!(
            &bytes[infos[0].range.clone()],
            &(0..16).collect::<Vec<u8>>()[..]
        );
        assert_eq!(&bytes[infos[1].range.clone()], &[9; 6]);
    }

    #[test]
    fn rejects_truncated_and_inconsistent_files() {
        let bytes = build(&[("w", "F32", &[4], vec![0; 16])]);
        assert!(parse_safetensors_header(&bytes[..bytes.len() - 1]).is_err());
        assert!(parse_safetensors_header(&bytes[..4]).is_err());
        let e = parse_safetensors_header(&bytes[..20]).unwrap_err();
        assert!(e.contains("header length runs past"), "{e}");
        let wrong = build(&[("w", "F32", &[5], vec![0; 16])]);
        assert!(parse_safetensors_header(&wrong).is_err());
    }

    #[test]
    fn survives_random_and_mutated_inputs() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5afe);
        let base = build(&[
            ("x.weight", "F16", &[2, 3], vec![1; 12]),
            ("y", "I8", &[5], vec![2; 5]),
        ]);
        for i in 0..3000 {
            let mut bytes = if i % 3 == 0 {
                (0..rng.random_range(0..120))
                    .map(|_| rng.random())
                    .collect()
            } else {
                base.clone()
            };
            if i % 3 != 0 {
                for _ in 0..rng.random_range(1..4) {
                    if bytes.is_empty() {
                        break;
                    }
                    let p = rng.random_range(0..bytes.len());
                    match rng.random_range(0..3) {
                        0 => bytes[p] = rng.random(),
                        1 => bytes.truncate(p),
                        _ => bytes[p] = b"{}[]\",:0123456789"[rng.random_range(0..17)],
                    }
                }
            }
            if let Ok(infos) = parse_safetensors_header(&bytes) {
                for t in infos {
                    assert!(t.range.end <= bytes.len());
                }
            }
        }
    }
}
