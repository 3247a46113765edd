//! A kernel instantiation: a family's template plus concrete parameters.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// One instantiation of a kernel family: everything needed to render its source.
///
/// `params` is an ordered map, so its serialisation (and hence the kernel key) does not
/// depend on the order in which a family inserted them. The entry point is `extern "C"`
/// and named by the family from its params, so nothing is mangled and the name says
/// what the kernel is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelSpec {
    /// Family name, e.g. `rmsnorm`.
    pub family: &'static str,
    /// Template path under `templates/`, e.g. `norm/rmsnorm.cu`.
    pub template: &'static str,
    /// The `extern "C"` entry point; also passed to the template as `kernel_name`.
    pub entry: String,
    /// Template parameters (the Tera context besides `kernel_name`).
    pub params: BTreeMap<String, serde_json::Value>,
    /// Needs the architecture-specific target (`sm_90a`) for wgmma and friends.
    pub arch_specific: bool,
    /// Launched with programmatic dependent launch where the device has it (sm_90+): the
    /// template calls `NINFER_PDL_WAIT()` (`templates/common/pdl.cuh`), which the JIT checks
    /// when it renders the spec, and the launch (`crate::gpu::Launch`) takes the attribute
    /// from here.
    pub programmatic: bool,
    /// The earliest architecture the kernel exists for (`None`: every one): its template uses
    /// features an earlier target lacks (thread block clusters: sm_90), so `ninfer kernels
    /// build` skips it there and the JIT refuses it with a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_arch: Option<(u32, u32)>,
}

impl KernelSpec {
    pub fn new(family: &'static str, template: &'static str, entry: impl Into<String>) -> Self {
        KernelSpec {
            family,
            template,
            entry: entry.into(),
            params: BTreeMap::new(),
            arch_specific: false,
            programmatic: false,
            min_arch: None,
        }
    }

    /// The kernel exists from sm_`major``minor` on (see [`KernelSpec::min_arch`]).
    pub fn needs_arch(mut self, major: u32, minor: u32) -> Self {
        self.min_arch = Some((major, minor));
        self
    }

    /// Whether the kernel exists for `arch`.
    pub fn builds_for(&self, arch: Arch) -> bool {
        self.min_arch
            .is_none_or(|need| (arch.major, arch.minor) >= need)
    }

    /// Marks the spec for programmatic dependent launch (its template must call
    /// `NINFER_PDL_WAIT()`; see `templates/common/pdl.cuh`).
    pub fn programmatic(mut self) -> Self {
        self.programmatic = true;
        self
    }

    /// Marks the spec for the architecture-specific target (`sm_90a`: wgmma).
    pub fn arch_specific(mut self) -> Self {
        self.arch_specific = true;
        self
    }

    /// Adds one template parameter.
    pub fn param(mut self, name: &str, value: impl Serialize) -> Self {
        let value = serde_json::to_value(value).expect("kernel params serialise to JSON");
        self.params.insert(name.to_string(), value);
        self
    }

    /// The params as one canonical line (sorted keys, compact JSON values).
    pub fn params_line(&self) -> String {
        self.params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Display for KernelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (family {}, {})",
            self.entry,
            self.family,
            self.params_line()
        )
    }
}

/// A compilation target, `sm_XY` or the architecture-specific `sm_XYa`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
    pub specific: bool,
}

impl Arch {
    pub fn new(major: u32, minor: u32) -> Self {
        Arch {
            major,
            minor,
            specific: false,
        }
    }

    /// The target a spec needs on this arch: `sm_90a` for arch-specific kernels on sm_90.
    pub fn for_spec(self, spec: &KernelSpec) -> Arch {
        Arch {
            specific: spec.arch_specific && self.major >= 9,
            ..self
        }
    }

    pub fn parse(s: &str) -> Option<Arch> {
        let rest = s.trim().strip_prefix("sm_")?;
        let (digits, specific) = match rest.strip_suffix('a') {
            Some(d) => (d, true),
            None => (rest, false),
        };
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (maj, min) = digits.split_at(digits.len() - 1);
        Some(Arch {
            major: maj.parse().ok()?,
            minor: min.parse().ok()?,
            specific,
        })
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suffix = if self.specific { "a" } else { "" };
        write!(f, "sm_{}{}{}", self.major, self.minor, suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_needing_sm_90_builds_only_there_and_later() {
        let any = KernelSpec::new("f", "t.cu", "e");
        let clusters = KernelSpec::new("f", "t.cu", "e").needs_arch(9, 0);
        for (arch, later) in [
            ("sm_80", false),
            ("sm_89", false),
            ("sm_90", true),
            ("sm_90a", true),
            ("sm_100", true),
            ("sm_120a", true),
        ] {
            let a = Arch::parse(arch).unwrap();
            assert!(any.builds_for(a), "{arch}");
            assert_eq!(clusters.builds_for(a), later, "{arch}");
        }
    }

    #[test]
    fn arch_parses_and_prints() {
        for s in [
            "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120a",
        ] {
            assert_eq!(Arch::parse(s).unwrap().to_string(), s);
        }
        for bad in ["", "sm_", "sm_9", "90", "sm_x0", "compute_90"] {
            assert!(Arch::parse(bad).is_none(), "{bad} parsed");
        }
    }

    #[test]
    fn params_line_is_independent_of_insertion_order() {
        let a = KernelSpec::new("f", "t.cu", "k")
            .param("b", 2)
            .param("a", "x");
        let b = KernelSpec::new("f", "t.cu", "k")
            .param("a", "x")
            .param("b", 2);
        assert_eq!(a.params_line(), b.params_line());
        assert_eq!(a.params_line(), "a=\"x\" b=2");
    }
}
