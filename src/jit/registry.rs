//! Every kernel instantiation the engine may use, so that `ninfer kernels build` can compile
//! them all ahead of a run and CI can check that every template compiles.

use super::KernelSpec;

/// All registered instantiations, in a stable order, with unique entry names.
pub fn all() -> Vec<KernelSpec> {
    let mut specs = Vec::new();
    specs.extend(crate::ops::rmsnorm::instantiations());
    specs.extend(crate::ops::mma_probe::instantiations());
    specs.extend(crate::ops::linear::instantiations());
    specs.extend(crate::ops::linear_exact::instantiations());
    specs.extend(crate::ops::linear_sgemm::instantiations());
    specs.extend(crate::ops::linear_cublas::instantiations());
    specs.extend(crate::ops::embedding::instantiations());
    specs.extend(crate::ops::gdn::instantiations());
    specs.extend(crate::ops::attention::instantiations());
    specs.extend(crate::ops::elementwise::instantiations());
    specs.extend(crate::ops::rope::instantiations());
    specs.extend(crate::ops::loss::instantiations());
    specs
}

/// The instantiation with this entry name.
pub fn find(entry: &str) -> Option<KernelSpec> {
    all().into_iter().find(|s| s.entry == entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_are_unique_and_c_identifiers() {
        let specs = all();
        let mut names: Vec<_> = specs.iter().map(|s| s.entry.as_str()).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len(), "duplicate entry names");
        for name in names {
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !name.starts_with(|c: char| c.is_ascii_digit()),
                "{name} is not a C identifier"
            );
        }
    }

    #[test]
    fn every_instantiation_renders() {
        let jit = super::super::Jit::new(
            super::super::TemplateSet::embedded(),
            super::super::DiskCache::memory_only(),
        )
        .unwrap();
        for spec in all() {
            let src = jit.render(&spec).unwrap();
            assert!(
                src.contains(&format!("{}(", spec.entry)),
                "{} does not define its entry point",
                spec.entry
            );
            assert!(
                !src.contains("#include <"),
                "{} includes a toolkit header",
                spec.entry
            );
            // A programmatic launch is only for a kernel that waits (render refuses the
            // other way round); the decode step's kernels wait, the exact-mode GEMVs
            // (stream and ring, every route, and the bf16 stream route) and the GDN step and
            // its output norm included.
            assert!(!spec.programmatic || crate::jit::calls_pdl_wait(&src));
            if [
                "attention/flash.cu",
                "rope/rope.cu",
                "norm/rmsnorm.cu",
                "embedding/gather.cu",
                "linear/gemv_stream.cu",
                "linear/gemv_ring.cu",
                "linear/gemv_mma.cu",
                "gdn/recurrent.cu",
                "gdn/grouped.cu",
                "gdn/staged.cu",
                "gdn/prep.cu",
                "gdn/prep_warp.cu",
                "gdn/conv_step.cu",
                "gdn/update.cu",
                "gdn/out_norm.cu",
            ]
            .contains(&spec.template)
            {
                assert!(
                    spec.programmatic,
                    "{} is not launched programmatically",
                    spec.entry
                );
            }
        }
    }
}
