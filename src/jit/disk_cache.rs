//! The on-disk kernel cache, shared by every process on the machine.
//!
//! Layout: `<root>/kernels/<arch>/nvrtc-<maj>.<min>/<hh>/<key>.cubin` plus `<key>.json`,
//! the receipt. Both are written to a temp file in the same directory and renamed into
//! place; the receipt goes last and is the commit marker. A cubin whose blake3 does not
//! match its receipt is a miss: both files are deleted and the kernel is recompiled. Any
//! number of processes may read and write concurrently: renames are atomic, and the worst
//! a race can do is make two processes compile the same kernel.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use super::key::KernelKey;

/// What a receipt records about one cached cubin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub schema: u32,
    pub key: String,
    pub family: String,
    pub entry: String,
    pub params: String,
    pub arch: String,
    pub nvrtc_version: String,
    pub options: Vec<String>,
    pub template_set_hash: String,
    pub crate_version: String,
    pub source_blake3: String,
    pub cubin_blake3: String,
    pub cubin_bytes: u64,
}

/// The result of a lookup.
#[derive(Debug)]
pub enum Lookup {
    Hit(Vec<u8>),
    Miss,
    /// The entry was damaged (hash mismatch or unreadable receipt); it has been removed.
    Corrupt,
}

/// The cache directory, or nothing when it cannot be written (memory-only mode).
#[derive(Debug)]
pub struct DiskCache {
    root: Option<PathBuf>,
    warned: AtomicBool,
}

/// `$NINFER_CACHE_DIR`, else the user cache directory's `ninfer`.
pub fn default_cache_root() -> Option<PathBuf> {
    match std::env::var_os("NINFER_CACHE_DIR") {
        Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => dirs::cache_dir().map(|d| d.join("ninfer")),
    }
}

impl DiskCache {
    /// Opens (creating) `<root>/kernels`; an unusable directory gives a memory-only cache
    /// and one warning.
    pub fn open(root: Option<PathBuf>) -> Self {
        let cache = DiskCache {
            root: None,
            warned: AtomicBool::new(false),
        };
        let Some(root) = root else {
            cache.warn_once("no user cache directory is known; kernels are cached in memory only");
            return cache;
        };
        let kernels = root.join("kernels");
        match probe_writable(&kernels) {
            Ok(()) => DiskCache {
                root: Some(kernels),
                ..cache
            },
            Err(e) => {
                cache.warn_once(&format!(
                    "the kernel cache directory {} is not writable ({e}); kernels are cached in memory only",
                    kernels.display()
                ));
                cache
            }
        }
    }

    /// A cache that never touches the disk (and never warns).
    pub fn memory_only() -> Self {
        DiskCache {
            root: None,
            warned: AtomicBool::new(true),
        }
    }

    /// `<root>/kernels`, when the disk is in use.
    pub fn dir(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    fn warn_once(&self, msg: &str) {
        if !self.warned.swap(true, Ordering::SeqCst) {
            tracing::warn!("{msg}");
        }
    }

    fn entry_dir(&self, key: &KernelKey, arch: &str, nvrtc: (i32, i32)) -> Option<PathBuf> {
        let root = self.root.as_ref()?;
        Some(
            root.join(arch)
                .join(format!("nvrtc-{}.{}", nvrtc.0, nvrtc.1))
                .join(&key.as_str()[..2]),
        )
    }

    /// Paths of the cubin and the receipt for a key.
    pub fn entry_paths(
        &self,
        key: &KernelKey,
        arch: &str,
        nvrtc: (i32, i32),
    ) -> Option<(PathBuf, PathBuf)> {
        let dir = self.entry_dir(key, arch, nvrtc)?;
        Some((
            dir.join(format!("{key}.cubin")),
            dir.join(format!("{key}.json")),
        ))
    }

    pub fn lookup(&self, key: &KernelKey, arch: &str, nvrtc: (i32, i32)) -> Lookup {
        let Some((cubin_path, receipt_path)) = self.entry_paths(key, arch, nvrtc) else {
            return Lookup::Miss;
        };
        let receipt_text = match std::fs::read_to_string(&receipt_path) {
            Ok(t) => t,
            // No receipt: never committed (or a writer is between its two renames).
            Err(_) => return Lookup::Miss,
        };
        let verified = serde_json::from_str::<Receipt>(&receipt_text)
            .ok()
            .filter(|r| r.key == key.as_str())
            .and_then(|r| {
                let bytes = std::fs::read(&cubin_path).ok()?;
                let ok = bytes.len() as u64 == r.cubin_bytes
                    && blake3::hash(&bytes).to_hex().as_str() == r.cubin_blake3;
                ok.then_some(bytes)
            });
        match verified {
            Some(bytes) => Lookup::Hit(bytes),
            None => {
                let _ = std::fs::remove_file(&receipt_path);
                let _ = std::fs::remove_file(&cubin_path);
                Lookup::Corrupt
            }
        }
    }

    /// Stores a cubin and then its receipt. Failure is not fatal: the kernel still runs
    /// from memory, and the first failure warns.
    pub fn store(&self, receipt: &Receipt, cubin: &[u8], arch: &str, nvrtc: (i32, i32)) {
        let key = KernelKey(receipt.key.clone());
        let Some((cubin_path, receipt_path)) = self.entry_paths(&key, arch, nvrtc) else {
            return;
        };
        let result = (|| -> std::io::Result<()> {
            let dir = cubin_path.parent().expect("entry has a directory");
            std::fs::create_dir_all(dir)?;
            write_atomically(&cubin_path, cubin)?;
            let text = serde_json::to_string_pretty(receipt).expect("receipt serialises");
            write_atomically(&receipt_path, text.as_bytes())
        })();
        if let Err(e) = result {
            self.warn_once(&format!(
                "cannot write to the kernel cache {} ({e}); this kernel stays in memory only",
                cubin_path.display()
            ));
        }
    }
}

fn probe_writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut f = tempfile::NamedTempFile::new_in(dir)?;
    f.write_all(b"probe")?;
    Ok(())
}

/// Writes `bytes` to a temp file beside `path`, then renames it over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Counts and bytes of the committed entries under a cache directory.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DiskUsage {
    pub entries: u64,
    pub bytes: u64,
    /// (arch, nvrtc-x.y) -> entry count
    pub by_target: std::collections::BTreeMap<(String, String), u64>,
}

pub fn disk_usage(kernels_dir: &Path) -> DiskUsage {
    let mut usage = DiskUsage::default();
    let Ok(archs) = std::fs::read_dir(kernels_dir) else {
        return usage;
    };
    for arch in archs.flatten() {
        let Ok(nvrtcs) = std::fs::read_dir(arch.path()) else {
            continue;
        };
        for nvrtc in nvrtcs.flatten() {
            let Ok(shards) = std::fs::read_dir(nvrtc.path()) else {
                continue;
            };
            for shard in shards.flatten() {
                let Ok(files) = std::fs::read_dir(shard.path()) else {
                    continue;
                };
                for f in files.flatten() {
                    let path = f.path();
                    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
                    usage.bytes += size;
                    if path.extension().is_some_and(|e| e == "json") {
                        usage.entries += 1;
                        let target = (
                            arch.file_name().to_string_lossy().into_owned(),
                            nvrtc.file_name().to_string_lossy().into_owned(),
                        );
                        *usage.by_target.entry(target).or_default() += 1;
                    }
                }
            }
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt_for(key: &str, cubin: &[u8]) -> Receipt {
        Receipt {
            schema: 1,
            key: key.into(),
            family: "f".into(),
            entry: "k".into(),
            params: String::new(),
            arch: "sm_90".into(),
            nvrtc_version: "13.0".into(),
            options: vec![],
            template_set_hash: "t".into(),
            crate_version: "0".into(),
            source_blake3: "s".into(),
            cubin_blake3: blake3::hash(cubin).to_hex().to_string(),
            cubin_bytes: cubin.len() as u64,
        }
    }

    #[test]
    fn store_then_hit_and_corruption_is_a_miss_that_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(Some(dir.path().to_path_buf()));
        let key = KernelKey("ab".repeat(32));
        let cubin = b"not really a cubin but bytes".to_vec();
        assert!(matches!(cache.lookup(&key, "sm_90", (13, 0)), Lookup::Miss));
        cache.store(&receipt_for(key.as_str(), &cubin), &cubin, "sm_90", (13, 0));
        match cache.lookup(&key, "sm_90", (13, 0)) {
            Lookup::Hit(b) => assert_eq!(b, cubin),
            other => panic!("expected a hit, got {other:?}"),
        }
        // Another arch or NVRTC version is another entry.
        assert!(matches!(cache.lookup(&key, "sm_86", (13, 0)), Lookup::Miss));
        assert!(matches!(cache.lookup(&key, "sm_90", (13, 1)), Lookup::Miss));

        let (cubin_path, receipt_path) = cache.entry_paths(&key, "sm_90", (13, 0)).unwrap();
        std::fs::write(&cubin_path, b"not really a cubin but byteZ").unwrap();
        assert!(matches!(
            cache.lookup(&key, "sm_90", (13, 0)),
            Lookup::Corrupt
        ));
        assert!(!cubin_path.exists() && !receipt_path.exists());
    }

    #[test]
    fn a_cubin_without_receipt_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(Some(dir.path().to_path_buf()));
        let key = KernelKey("cd".repeat(32));
        let (cubin_path, _) = cache.entry_paths(&key, "sm_80", (13, 0)).unwrap();
        std::fs::create_dir_all(cubin_path.parent().unwrap()).unwrap();
        std::fs::write(&cubin_path, b"orphan").unwrap();
        assert!(matches!(cache.lookup(&key, "sm_80", (13, 0)), Lookup::Miss));
    }

    #[test]
    fn an_unusable_directory_gives_memory_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"x").unwrap();
        let cache = DiskCache::open(Some(file.join("below-a-file")));
        assert!(cache.dir().is_none());
        assert!(cache.warned.load(Ordering::SeqCst));
    }
}
