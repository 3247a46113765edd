//! The kernel key: blake3 over a canonical encoding of everything that can change the binary.
//!
//! In the key: cache schema version, crate version, template-set hash, family, rendered
//! source, NVRTC options, target arch, NVRTC version, output kind. Nothing else (no
//! timestamps, no paths), so the same inputs give the same key in every process.

/// Bumped whenever the cache layout or receipt format changes.
pub const CACHE_SCHEMA_VERSION: u32 = 1;

/// What NVRTC is asked to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    Cubin,
}

impl OutputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputKind::Cubin => "cubin",
        }
    }
}

/// Every input of one compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInputs<'a> {
    pub schema: u32,
    pub crate_version: &'a str,
    pub template_set_hash: &'a str,
    pub family: &'a str,
    pub source: &'a str,
    pub options: &'a [String],
    pub arch: &'a str,
    pub nvrtc_version: (i32, i32),
    pub output: OutputKind,
}

/// A kernel key: 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelKey(pub String);

impl KernelKey {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for KernelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Each field is tagged and length-prefixed, so no two different inputs encode alike.
pub fn kernel_key(k: &KeyInputs<'_>) -> KernelKey {
    let mut h = blake3::Hasher::new();
    let mut field = |tag: &str, bytes: &[u8]| {
        h.update(tag.as_bytes());
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field("schema", &k.schema.to_le_bytes());
    field("crate", k.crate_version.as_bytes());
    field("templates", k.template_set_hash.as_bytes());
    field("family", k.family.as_bytes());
    field("source", k.source.as_bytes());
    field("options", &(k.options.len() as u64).to_le_bytes());
    for opt in k.options {
        field("option", opt.as_bytes());
    }
    field("arch", k.arch.as_bytes());
    field(
        "nvrtc",
        format!("{}.{}", k.nvrtc_version.0, k.nvrtc_version.1).as_bytes(),
    );
    field("output", k.output.as_str().as_bytes());
    KernelKey(h.finalize().to_hex().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base_options() -> Vec<String> {
        vec!["--std=c++17".into(), "--gpu-architecture=sm_90".into()]
    }

    fn with<'a>(opts: &'a [String], f: impl FnOnce(&mut KeyInputs<'a>)) -> KernelKey {
        let mut k = KeyInputs {
            schema: CACHE_SCHEMA_VERSION,
            crate_version: "0.1.0",
            template_set_hash: "abc",
            family: "rmsnorm",
            source: "extern \"C\" __global__ void k() {}",
            options: opts,
            arch: "sm_90",
            nvrtc_version: (13, 0),
            output: OutputKind::Cubin,
        };
        f(&mut k);
        kernel_key(&k)
    }

    #[test]
    fn every_input_changes_the_key() {
        let opts = base_options();
        let other_opts = vec!["--std=c++17".to_string(), "--fmad=false".to_string()];
        let base = with(&opts, |_| {});
        assert_eq!(base, with(&opts, |_| {}), "same inputs, same key");
        let variants = [
            with(&opts, |k| k.schema += 1),
            with(&opts, |k| k.crate_version = "0.1.1"),
            with(&opts, |k| k.template_set_hash = "abd"),
            with(&opts, |k| k.family = "rmsnorm2"),
            with(&opts, |k| k.source = "extern \"C\" __global__ void k() { }"),
            with(&other_opts, |_| {}),
            with(&opts, |k| k.arch = "sm_86"),
            with(&opts, |k| k.nvrtc_version = (13, 1)),
            with(&opts, |k| k.nvrtc_version = (12, 9)),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(&base, v, "variant {i} did not change the key");
        }
    }

    #[test]
    fn field_boundaries_cannot_be_shifted() {
        let opts = base_options();
        let a = with(&opts, |k| {
            k.family = "ab";
            k.source = "c";
        });
        let b = with(&opts, |k| {
            k.family = "a";
            k.source = "bc";
        });
        assert_ne!(a, b);
    }
}
