//! The kernel pipeline: render (Tera) -> key (blake3) -> compile (NVRTC) -> cache -> load.
//!
//! [`Jit::cubin`] turns a [`KernelSpec`] and a target [`Arch`] into CUBIN bytes, compiling
//! each distinct kernel once per machine: an in-memory map holds one once-initialised cell
//! per key (so concurrent askers wait for one compile), backed by the [`disk_cache`].
//! Loading a CUBIN into a context is the GPU layer's job ([`crate::gpu`]).

pub mod disk_cache;
pub mod key;
pub mod nvrtc;
pub mod registry;
pub mod spec;
pub mod templates;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use once_cell::sync::{Lazy, OnceCell};

pub use disk_cache::{DiskCache, Lookup, Receipt};
pub use key::{kernel_key, KernelKey, KeyInputs, OutputKind, CACHE_SCHEMA_VERSION};
pub use spec::{Arch, KernelSpec};
pub use templates::TemplateSet;

/// For tests that compile kernels: a JIT over the embedded templates with an in-memory
/// cache. Panics where NVRTC is not loadable (the test command installs it,
/// `scripts/test.sh`), so a missing NVRTC fails such a test instead of skipping it.
#[cfg(test)]
pub(crate) fn test_jit() -> Jit {
    assert!(
        nvrtc::is_available(),
        "NVRTC is not loadable: source scripts/nvrtc-env.sh"
    );
    Jit::new(TemplateSet::embedded(), DiskCache::memory_only()).unwrap()
}

/// For tests: `spec` rendered, compiled to a cubin for sm_90 (a panic names the entry
/// where it does not compile), and its PTX for compute_90, for tests that read the code
/// (local memory, PDL waits).
#[cfg(test)]
pub(crate) fn test_sm90_ptx(jit: &Jit, spec: &KernelSpec) -> String {
    let src = jit.render(spec).unwrap();
    if let Err(e) = jit.cubin(spec, Arch::new(9, 0)) {
        panic!("{} does not compile: {e}", spec.entry);
    }
    cudarc::nvrtc::compile_ptx_with_opts(
        src,
        cudarc::nvrtc::CompileOptions {
            arch: Some("compute_90"),
            options: nvrtc::base_options(),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}: PTX: {e:?}", spec.entry))
    .to_src()
}

/// Why the pipeline could not produce a kernel.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    #[error("the NVRTC library (libnvrtc.so) cannot be loaded; install the CUDA toolkit's NVRTC or the nvidia-cuda-nvrtc wheel and put its lib directory on LD_LIBRARY_PATH (scripts/nvrtc-env.sh does this)")]
    NvrtcMissing,
    #[error("NVRTC failed: {what}")]
    Nvrtc { what: String },
    #[error("templates: {what}")]
    Templates { what: String },
    #[error("cannot render {spec}: {what}")]
    Render { spec: String, what: String },
    #[error("{0}")]
    Compile(Box<CompileError>),
    #[error("kernel {entry} exists from sm_{}{} on, not for {arch}", need.0, need.1)]
    ArchTooOld {
        entry: String,
        arch: String,
        need: (u32, u32),
    },
}

/// A kernel that NVRTC rejected, with everything needed to find the fault.
#[derive(Debug)]
pub struct CompileError {
    pub family: String,
    pub entry: String,
    pub params: String,
    pub arch: String,
    pub log: String,
    pub source: String,
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "NVRTC could not compile kernel {} for {} (family {}, params: {})",
            self.entry, self.arch, self.family, self.params
        )?;
        writeln!(f, "--- NVRTC log ---\n{}", self.log.trim_end())?;
        writeln!(f, "--- rendered source ---")?;
        for (i, line) in self.source.lines().enumerate() {
            writeln!(f, "{:5} | {line}", i + 1)?;
        }
        Ok(())
    }
}

/// Where a kernel came from on this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    Compiled,
    DiskCache,
    Memory,
}

/// A compiled kernel: its key, CUBIN and entry point.
#[derive(Debug)]
pub struct CompiledKernel {
    pub key: KernelKey,
    pub entry: String,
    pub arch: Arch,
    pub cubin: Vec<u8>,
}

/// Counters since this [`Jit`] was made.
#[derive(Debug, Default)]
pub struct JitStats {
    pub compiled: AtomicU64,
    pub disk_hits: AtomicU64,
    pub memory_hits: AtomicU64,
    pub corrupt_rebuilt: AtomicU64,
    pub compile_nanos: AtomicU64,
}

/// A plain copy of [`JitStats`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StatsSnapshot {
    pub compiled: u64,
    pub disk_hits: u64,
    pub memory_hits: u64,
    pub corrupt_rebuilt: u64,
    /// Time spent inside NVRTC, summed over threads.
    pub compile_seconds: f64,
}

type Cell = Arc<OnceCell<Arc<CompiledKernel>>>;

/// The pipeline: one template set, one disk cache, one in-memory map.
pub struct Jit {
    templates: TemplateSet,
    tera: tera::Tera,
    disk: DiskCache,
    memory: DashMap<KernelKey, Cell>,
    nvrtc_version: OnceCell<(i32, i32)>,
    stats: JitStats,
}

static GLOBAL: Lazy<Result<Jit, String>> = Lazy::new(|| {
    let templates = TemplateSet::from_env().map_err(|e| e.to_string())?;
    Jit::new(templates, DiskCache::open(disk_cache::default_cache_root()))
        .map_err(|e| e.to_string())
});

impl Jit {
    pub fn new(templates: TemplateSet, disk: DiskCache) -> Result<Self, JitError> {
        let tera = templates.tera()?;
        Ok(Jit {
            templates,
            tera,
            disk,
            memory: DashMap::new(),
            nvrtc_version: OnceCell::new(),
            stats: JitStats::default(),
        })
    }

    /// The process-wide pipeline: `$NINFER_TEMPLATES` (or the embedded set) and the user's
    /// cache directory (`$NINFER_CACHE_DIR`).
    pub fn global() -> Result<&'static Jit, JitError> {
        GLOBAL
            .as_ref()
            .map_err(|e| JitError::Templates { what: e.clone() })
    }

    pub fn templates(&self) -> &TemplateSet {
        &self.templates
    }

    pub fn disk(&self) -> &DiskCache {
        &self.disk
    }

    pub fn nvrtc_version(&self) -> Result<(i32, i32), JitError> {
        self.nvrtc_version.get_or_try_init(nvrtc::version).copied()
    }

    pub fn stats(&self) -> StatsSnapshot {
        let s = &self.stats;
        StatsSnapshot {
            compiled: s.compiled.load(Ordering::SeqCst),
            disk_hits: s.disk_hits.load(Ordering::SeqCst),
            memory_hits: s.memory_hits.load(Ordering::SeqCst),
            corrupt_rebuilt: s.corrupt_rebuilt.load(Ordering::SeqCst),
            compile_seconds: s.compile_nanos.load(Ordering::SeqCst) as f64 * 1e-9,
        }
    }

    /// The exact CUDA source of an instantiation.
    pub fn render(&self, spec: &KernelSpec) -> Result<String, JitError> {
        let render_err = |what: String| JitError::Render {
            spec: spec.to_string(),
            what,
        };
        if self.templates.get(spec.template).is_none() {
            return Err(render_err(format!("no template {}", spec.template)));
        }
        let mut ctx = tera::Context::from_serialize(&spec.params)
            .map_err(|e| render_err(templates::tera_error_chain(&e)))?;
        ctx.insert("kernel_name", &spec.entry);
        ctx.insert("family", spec.family);
        // A `format` param brings in that weight format: its descriptor as `fmt` and its
        // device functions, rendered from `formats/<name>.cuh`, as `format_code` (Tera's
        // include takes only literal names, so the kernel template writes `{{ format_code }}`).
        if let Some(name) = spec.params.get("format").and_then(|v| v.as_str()) {
            let fmt = crate::formats::format(name).map_err(|e| render_err(e.to_string()))?;
            ctx.insert("fmt", fmt);
            let code = self
                .tera
                .render(&fmt.template_path(), &ctx)
                .map_err(|e| render_err(templates::tera_error_chain(&e)))?;
            ctx.insert("format_code", &code);
        }
        let body = self
            .tera
            .render(spec.template, &ctx)
            .map_err(|e| render_err(templates::tera_error_chain(&e)))?;
        if spec.programmatic && !calls_pdl_wait(&body) {
            return Err(render_err(
                "the spec is marked programmatic but its template never calls NINFER_PDL_WAIT() \
                 (templates/common/pdl.cuh)"
                    .into(),
            ));
        }
        Ok(format!(
            "// ninfer kernel {} (family {}, template {})\n// params: {}\n{}",
            spec.entry,
            spec.family,
            spec.template,
            spec.params_line(),
            body
        ))
    }

    /// The full NVRTC option list for a target.
    pub fn options(arch: Arch) -> Vec<String> {
        let mut opts = nvrtc::base_options();
        opts.push(format!("--gpu-architecture={arch}"));
        opts
    }

    /// Renders and keys a spec without compiling it.
    pub fn key_for(&self, spec: &KernelSpec, arch: Arch) -> Result<(KernelKey, String), JitError> {
        let arch = arch.for_spec(spec);
        let source = self.render(spec)?;
        let options = Self::options(arch);
        let arch_s = arch.to_string();
        let key = kernel_key(&KeyInputs {
            schema: CACHE_SCHEMA_VERSION,
            crate_version: env!("CARGO_PKG_VERSION"),
            template_set_hash: self.templates.hash(),
            family: spec.family,
            source: &source,
            options: &options,
            arch: &arch_s,
            nvrtc_version: self.nvrtc_version()?,
            output: OutputKind::Cubin,
        });
        Ok((key, source))
    }

    /// The CUBIN for `spec` on `arch`, compiled at most once per key in this process and,
    /// through the disk cache, once per machine.
    pub fn cubin(
        &self,
        spec: &KernelSpec,
        arch: Arch,
    ) -> Result<(Arc<CompiledKernel>, Provenance), JitError> {
        if let Some(need) = spec.min_arch.filter(|_| !spec.builds_for(arch)) {
            return Err(JitError::ArchTooOld {
                entry: spec.entry.clone(),
                arch: arch.to_string(),
                need,
            });
        }
        let target = arch.for_spec(spec);
        let (key, source) = self.key_for(spec, arch)?;
        let cell: Cell = self.memory.entry(key.clone()).or_default().clone();
        let mut provenance = Provenance::Memory;
        let kernel = cell.get_or_try_init(|| {
            let (k, p) = self.load_or_compile(spec, target, &key, &source)?;
            provenance = p;
            Ok::<_, JitError>(k)
        })?;
        if provenance == Provenance::Memory {
            self.stats.memory_hits.fetch_add(1, Ordering::SeqCst);
        }
        Ok((kernel.clone(), provenance))
    }

    fn load_or_compile(
        &self,
        spec: &KernelSpec,
        arch: Arch,
        key: &KernelKey,
        source: &str,
    ) -> Result<(Arc<CompiledKernel>, Provenance), JitError> {
        let nvrtc_version = self.nvrtc_version()?;
        let arch_s = arch.to_string();
        let make = |cubin: Vec<u8>| {
            Arc::new(CompiledKernel {
                key: key.clone(),
                entry: spec.entry.clone(),
                arch,
                cubin,
            })
        };
        match self.disk.lookup(key, &arch_s, nvrtc_version) {
            Lookup::Hit(cubin) => {
                self.stats.disk_hits.fetch_add(1, Ordering::SeqCst);
                return Ok((make(cubin), Provenance::DiskCache));
            }
            Lookup::Corrupt => {
                tracing::warn!(
                    "cached kernel {} ({arch_s}) failed its hash check; rebuilding it",
                    spec.entry
                );
                self.stats.corrupt_rebuilt.fetch_add(1, Ordering::SeqCst);
            }
            Lookup::Miss => {}
        }
        let options = Self::options(arch);
        let started = std::time::Instant::now();
        let cubin = nvrtc::compile_cubin(source, &format!("{}.cu", spec.entry), &options)?
            .map_err(|failure| {
                JitError::Compile(Box::new(CompileError {
                    family: spec.family.to_string(),
                    entry: spec.entry.clone(),
                    params: spec.params_line(),
                    arch: arch_s.clone(),
                    log: failure.log,
                    source: source.to_string(),
                }))
            })?;
        self.stats
            .compile_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::SeqCst);
        self.stats.compiled.fetch_add(1, Ordering::SeqCst);
        let receipt = Receipt {
            schema: CACHE_SCHEMA_VERSION,
            key: key.to_string(),
            family: spec.family.to_string(),
            entry: spec.entry.clone(),
            params: spec.params_line(),
            arch: arch_s.clone(),
            nvrtc_version: format!("{}.{}", nvrtc_version.0, nvrtc_version.1),
            options,
            template_set_hash: self.templates.hash().to_string(),
            crate_version: env!("CARGO_PKG_VERSION").to_string(),
            source_blake3: blake3::hash(source.as_bytes()).to_hex().to_string(),
            cubin_blake3: blake3::hash(&cubin).to_hex().to_string(),
            cubin_bytes: cubin.len() as u64,
        };
        self.disk.store(&receipt, &cubin, &arch_s, nvrtc_version);
        Ok((make(cubin), Provenance::Compiled))
    }
}

/// Whether rendered source calls `NINFER_PDL_WAIT()` outside a comment or a `#define` (the
/// header `common/pdl.cuh` names it in both, which must not count as a call).
pub fn calls_pdl_wait(source: &str) -> bool {
    source.lines().any(|line| {
        let code = line.split("//").next().unwrap_or("").trim_start();
        code.contains("NINFER_PDL_WAIT()") && !code.starts_with('#')
    })
}

#[cfg(test)]
mod pdl_tests {
    use super::*;

    #[test]
    fn the_pdl_header_alone_is_no_call_of_the_wait() {
        let set = TemplateSet::embedded();
        let header = set.get("common/pdl.cuh").expect("the header exists");
        assert!(header.contains("NINFER_PDL_WAIT()"));
        assert!(!calls_pdl_wait(header));
        assert!(calls_pdl_wait(&format!(
            "{header}\n    NINFER_PDL_WAIT();\n"
        )));
        assert!(!calls_pdl_wait("    // NINFER_PDL_WAIT();\n"));
    }

    #[test]
    fn a_kernel_is_refused_for_an_earlier_arch_than_it_needs() {
        let jit = Jit::new(TemplateSet::embedded(), DiskCache::memory_only()).unwrap();
        let probe = crate::ops::mma_probe::instantiations()
            .remove(0)
            .needs_arch(9, 0);
        let err = jit.cubin(&probe, Arch::new(8, 0)).unwrap_err().to_string();
        assert!(
            err.contains(&probe.entry) && err.contains("sm_90") && err.contains("sm_80"),
            "{err}"
        );
    }

    #[test]
    fn a_programmatic_spec_whose_template_never_waits_is_refused() {
        let jit = Jit::new(TemplateSet::embedded(), DiskCache::memory_only()).unwrap();
        // rmsnorm's template waits: fine with or without the flag.
        let norm = crate::ops::rmsnorm::RmsNormRoute::choose(
            crate::ops::rmsnorm::NormWeight::Plain,
            crate::ops::DType::F32,
            crate::ops::DType::F32,
            576,
        )
        .spec();
        assert!(norm.programmatic);
        jit.render(&norm).unwrap();
        // The mma self-test never waits: marking it programmatic is an error.
        let probe = crate::ops::mma_probe::instantiations()
            .remove(0)
            .programmatic();
        let err = jit.render(&probe).unwrap_err().to_string();
        assert!(err.contains("NINFER_PDL_WAIT"), "{err}");
    }
}
