//! The kernel pipeline's promises, checked through the library: one compile per key
//! however many threads ask, corrupt cache entries rebuilt, keys stable and sensitive.
//! These tests compile with NVRTC (scripts/test.sh installs it); they need no GPU.

use std::sync::{Arc, Barrier};

use ninfer::jit::{registry, Arch, DiskCache, Jit, Provenance, TemplateSet};

fn jit_in(dir: &std::path::Path) -> Jit {
    assert!(
        ninfer::jit::nvrtc::is_available(),
        "NVRTC is not loadable: run the tests through scripts/test.sh"
    );
    Jit::new(
        TemplateSet::embedded(),
        DiskCache::open(Some(dir.to_path_buf())),
    )
    .unwrap()
}

fn some_spec() -> ninfer::jit::KernelSpec {
    registry::all()
        .into_iter()
        .next()
        .expect("at least one kernel is registered")
}

const SM86: Arch = Arch {
    major: 8,
    minor: 6,
    specific: false,
};

#[test]
fn sixteen_threads_asking_for_one_kernel_compile_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let jit = Arc::new(jit_in(dir.path()));
    let spec = some_spec();
    let barrier = Arc::new(Barrier::new(16));
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let (jit, spec, barrier) = (jit.clone(), spec.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                jit.cubin(&spec, SM86).unwrap()
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let stats = jit.stats();
    assert_eq!(stats.compiled, 1, "{stats:?}");
    assert_eq!(stats.memory_hits, 15, "{stats:?}");
    let compiled = results
        .iter()
        .filter(|(_, p)| *p == Provenance::Compiled)
        .count();
    assert_eq!(compiled, 1);
    let first = &results[0].0;
    assert!(
        results.iter().all(|(k, _)| Arc::ptr_eq(k, first)),
        "all share one kernel"
    );
    assert!(
        first.cubin.starts_with(b"\x7fELF"),
        "a CUBIN is an ELF image"
    );
}

#[test]
fn a_second_pipeline_on_the_same_directory_reads_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let spec = some_spec();
    let (a, pa) = jit_in(dir.path()).cubin(&spec, SM86).unwrap();
    assert_eq!(pa, Provenance::Compiled);
    let second = jit_in(dir.path());
    let (b, pb) = second.cubin(&spec, SM86).unwrap();
    assert_eq!(pb, Provenance::DiskCache);
    assert_eq!(a.cubin, b.cubin);
    assert_eq!(a.key, b.key);
    assert_eq!(second.stats().compiled, 0);
}

fn damage_and_rebuild(damage: impl Fn(&std::path::Path)) {
    let dir = tempfile::tempdir().unwrap();
    let spec = some_spec();
    let first = jit_in(dir.path());
    let (good, _) = first.cubin(&spec, SM86).unwrap();
    let nvrtc = first.nvrtc_version().unwrap();
    let (cubin_path, receipt_path) = first.disk().entry_paths(&good.key, "sm_86", nvrtc).unwrap();
    assert!(cubin_path.exists() && receipt_path.exists());
    damage(&cubin_path);

    let again = jit_in(dir.path());
    let (rebuilt, provenance) = again.cubin(&spec, SM86).unwrap();
    assert_eq!(
        provenance,
        Provenance::Compiled,
        "a damaged entry must not be used"
    );
    assert_eq!(again.stats().corrupt_rebuilt, 1);
    assert_eq!(rebuilt.cubin, good.cubin);
    assert_eq!(
        std::fs::read(&cubin_path).unwrap(),
        good.cubin,
        "the entry is rewritten"
    );

    let third = jit_in(dir.path());
    assert_eq!(third.cubin(&spec, SM86).unwrap().1, Provenance::DiskCache);
}

#[test]
fn a_truncated_cubin_is_detected_and_rebuilt() {
    damage_and_rebuild(|p| {
        let bytes = std::fs::read(p).unwrap();
        std::fs::write(p, &bytes[..bytes.len() / 2]).unwrap();
    });
}

#[test]
fn an_altered_cubin_is_detected_and_rebuilt() {
    damage_and_rebuild(|p| {
        let mut bytes = std::fs::read(p).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x5a;
        std::fs::write(p, &bytes).unwrap();
    });
}

#[test]
fn the_key_depends_on_arch_and_on_the_template_set() {
    let dir = tempfile::tempdir().unwrap();
    let jit = jit_in(dir.path());
    let spec = some_spec();
    let (k86, src) = jit.key_for(&spec, SM86).unwrap();
    let (k90, _) = jit.key_for(&spec, Arch::new(9, 0)).unwrap();
    assert_ne!(k86, k90);

    // The same templates from a directory: same hash, same key. An edited template: both change.
    let tdir = tempfile::tempdir().unwrap();
    for (rel, text) in TemplateSet::embedded().files() {
        let p = tdir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let copy = Jit::new(
        TemplateSet::from_dir(tdir.path()).unwrap(),
        DiskCache::memory_only(),
    )
    .unwrap();
    assert_eq!(copy.key_for(&spec, SM86).unwrap().0, k86);
    let path = tdir.path().join(spec.template);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n// edited\n")).unwrap();
    let edited = Jit::new(
        TemplateSet::from_dir(tdir.path()).unwrap(),
        DiskCache::memory_only(),
    )
    .unwrap();
    let (k_edit, src_edit) = edited.key_for(&spec, SM86).unwrap();
    assert_ne!(k_edit, k86);
    assert_ne!(src_edit, src);
}

#[test]
fn a_compile_error_shows_the_log_family_params_and_numbered_source() {
    let tdir = tempfile::tempdir().unwrap();
    for (rel, text) in TemplateSet::embedded().files() {
        let p = tdir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let spec = some_spec();
    let path = tdir.path().join(spec.template);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\nthis_is_not_cuda;\n")).unwrap();
    let jit = Jit::new(
        TemplateSet::from_dir(tdir.path()).unwrap(),
        DiskCache::memory_only(),
    )
    .unwrap();
    let err = jit.cubin(&spec, SM86).unwrap_err().to_string();
    assert!(err.contains(&spec.entry), "{err}");
    assert!(err.contains(&format!("family {}", spec.family)), "{err}");
    assert!(err.contains(&spec.params_line()), "{err}");
    assert!(err.contains("this_is_not_cuda"), "{err}");
    assert!(err.contains("error"), "the NVRTC log is shown: {err}");
    assert!(err.contains("    1 | "), "source lines are numbered: {err}");
}
