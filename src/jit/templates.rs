//! The template set: every file under `templates/`, embedded at build time or read from
//! `$NINFER_TEMPLATES` at run time, with the hash that identifies the whole set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::JitError;

include!(concat!(env!("OUT_DIR"), "/embedded_templates.rs"));

/// Where a template set came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateOrigin {
    Embedded,
    Directory(PathBuf),
}

/// All template files (path relative to `templates/` -> text) and their set hash.
#[derive(Debug, Clone)]
pub struct TemplateSet {
    files: BTreeMap<String, String>,
    hash: String,
    origin: TemplateOrigin,
}

/// blake3 over each file's relative path and bytes in sorted order, length-prefixed.
/// build.rs computes the same thing for the embedded set.
pub fn hash_template_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut hasher = blake3::Hasher::new();
    for (rel, text) in files {
        hasher.update(&(rel.len() as u64).to_le_bytes());
        hasher.update(rel.as_bytes());
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    hasher.finalize().to_hex().to_string()
}

impl TemplateSet {
    /// The templates compiled into this binary.
    pub fn embedded() -> Self {
        let files = EMBEDDED_TEMPLATES
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        TemplateSet {
            files,
            hash: EMBEDDED_TEMPLATE_SET_HASH.to_string(),
            origin: TemplateOrigin::Embedded,
        }
    }

    /// Every file under `dir`, for template development without rebuilding.
    pub fn from_dir(dir: &Path) -> Result<Self, JitError> {
        let mut files = BTreeMap::new();
        read_tree(dir, dir, &mut files).map_err(|e| JitError::Templates {
            what: format!("cannot read the template directory {}: {e}", dir.display()),
        })?;
        if files.is_empty() {
            return Err(JitError::Templates {
                what: format!("the template directory {} holds no files", dir.display()),
            });
        }
        let hash = hash_template_files(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        Ok(TemplateSet {
            files,
            hash,
            origin: TemplateOrigin::Directory(dir.to_path_buf()),
        })
    }

    /// `$NINFER_TEMPLATES` when set, else the embedded set.
    pub fn from_env() -> Result<Self, JitError> {
        match std::env::var_os("NINFER_TEMPLATES") {
            Some(dir) if !dir.is_empty() => Self::from_dir(Path::new(&dir)),
            _ => Ok(Self::embedded()),
        }
    }

    pub fn hash(&self) -> &str {
        &self.hash
    }

    pub fn origin(&self) -> &TemplateOrigin {
        &self.origin
    }

    pub fn get(&self, path: &str) -> Option<&str> {
        self.files.get(path).map(String::as_str)
    }

    pub fn files(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files.iter().map(|(p, t)| (p.as_str(), t.as_str()))
    }

    /// A Tera instance holding every CUDA template (`.cu`, `.cuh`).
    pub fn tera(&self) -> Result<tera::Tera, JitError> {
        let mut tera = tera::Tera::default();
        tera.autoescape_on(vec![]);
        let sources = self
            .files
            .iter()
            .filter(|(p, _)| p.ends_with(".cu") || p.ends_with(".cuh"));
        tera.add_raw_templates(sources.map(|(p, t)| (p.as_str(), t.as_str())))
            .map_err(|e| JitError::Templates {
                what: format!("a template does not parse: {}", tera_error_chain(&e)),
            })?;
        Ok(tera)
    }
}

/// Tera hides the useful part of an error in its source chain.
pub fn tera_error_chain(e: &tera::Error) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

fn read_tree(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            read_tree(&path, root, out)?;
        } else {
            let rel = path
                .strip_prefix(root)
                .expect("walked from root")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read_to_string(&path)?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_hash_matches_the_runtime_hash_of_the_same_files() {
        let set = TemplateSet::embedded();
        let again = hash_template_files(set.files());
        assert_eq!(set.hash(), again, "build.rs and the run-time hash disagree");
    }

    #[test]
    fn a_directory_copy_has_the_embedded_hash_and_an_edit_changes_it() {
        let set = TemplateSet::embedded();
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in set.files() {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let copy = TemplateSet::from_dir(dir.path()).unwrap();
        assert_eq!(copy.hash(), set.hash());
        std::fs::write(dir.path().join("common/extra.cuh"), "// new\n").unwrap();
        let edited = TemplateSet::from_dir(dir.path()).unwrap();
        assert_ne!(edited.hash(), set.hash());
    }

    #[test]
    fn every_template_parses() {
        TemplateSet::embedded().tera().unwrap();
    }
}
