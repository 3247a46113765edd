//! Embeds every file under `templates/` into the binary, with the template-set hash.
//!
//! The hash (blake3 over each file's relative path and bytes, in sorted order) goes into
//! every kernel key, so editing any template invalidates every cached kernel built from the
//! embedded set.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, root: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, root, out);
        } else {
            let rel = path.strip_prefix(root).expect("under templates/");
            let rel = rel
                .to_str()
                .expect("template paths are UTF-8")
                .replace('\\', "/");
            out.push((rel, path));
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("templates");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();

    let mut hasher = blake3::Hasher::new();
    let mut table = String::from("pub static EMBEDDED_TEMPLATES: &[(&str, &str)] = &[\n");
    for (rel, path) in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let bytes = std::fs::read(path).unwrap();
        hasher.update(&(rel.len() as u64).to_le_bytes());
        hasher.update(rel.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
        writeln!(
            table,
            "    ({rel:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    table.push_str("];\n");
    writeln!(
        table,
        "pub const EMBEDDED_TEMPLATE_SET_HASH: &str = {:?};",
        hasher.finalize().to_hex().to_string()
    )
    .unwrap();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded_templates.rs");
    std::fs::write(out, table).unwrap();
}
