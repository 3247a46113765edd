//! The device fingerprint (DESIGN.md section 5): a tuning profile is trusted only on a
//! device with the same name, compute capability, SM count, NVRTC major.minor and
//! template set.

use serde::Serialize;

use crate::gpu::DeviceProps;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fingerprint {
    pub name: String,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    pub nvrtc_version: (i32, i32),
    pub template_set_hash: String,
}

impl Fingerprint {
    pub fn of(props: &DeviceProps, nvrtc_version: (i32, i32), template_set_hash: &str) -> Self {
        Fingerprint {
            name: props.name.clone(),
            compute_capability: props.compute_capability,
            sm_count: props.sm_count,
            nvrtc_version,
            template_set_hash: template_set_hash.to_string(),
        }
    }

    /// The fingerprint of a device this process has opened: the NVRTC this process loads
    /// and the template set it compiles from (`$NINFER_TEMPLATES` or the embedded one).
    pub fn of_device(props: &DeviceProps) -> Result<Self, String> {
        let nvrtc = props
            .nvrtc_version
            .ok_or_else(|| "NVRTC is not available, so no kernel can be compiled".to_string())?;
        Ok(Self::of(props, nvrtc, &template_set_hash()?))
    }

    /// A short stable id: the first 16 hex digits of blake3 over the fields.
    pub fn id(&self) -> String {
        let canonical = format!(
            "name={}\ncc={}.{}\nsms={}\nnvrtc={}.{}\ntemplates={}\n",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sm_count,
            self.nvrtc_version.0,
            self.nvrtc_version.1,
            self.template_set_hash
        );
        blake3::hash(canonical.as_bytes()).to_hex()[..16].to_string()
    }
}

/// The hash of the template set this process compiles kernels from.
pub fn template_set_hash() -> Result<String, String> {
    crate::jit::Jit::global()
        .map(|j| j.templates().hash().to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> Fingerprint {
        Fingerprint {
            name: "NVIDIA H200".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            nvrtc_version: (13, 0),
            template_set_hash: "t".into(),
        }
    }

    #[test]
    fn each_field_changes_the_id() {
        let base = h200().id();
        assert_eq!(base, h200().id());
        let mut f = h200();
        f.sm_count = 114;
        assert_ne!(f.id(), base);
        let mut f = h200();
        f.nvrtc_version = (13, 1);
        assert_ne!(f.id(), base);
        let mut f = h200();
        f.template_set_hash = "u".into();
        assert_ne!(f.id(), base);
        let mut f = h200();
        f.name = "NVIDIA H100".into();
        assert_ne!(f.id(), base);
        let mut f = h200();
        f.compute_capability = (9, 1);
        assert_ne!(f.id(), base);
    }
}
