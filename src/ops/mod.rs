//! Ops: one module per op family, each with its public API, its CPU reference (the oracle
//! its GPU routes are qualified against) and its CUDA routes.

pub mod attention;
pub mod elementwise;
pub mod embedding;
pub mod gdn;
pub mod linear;
pub mod linear_exact;
pub mod mma_probe;
pub mod rmsnorm;
pub mod rope;
pub mod weight;

use serde::Serialize;

/// Element type of an activation buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum DType {
    F32,
    Bf16,
}

impl DType {
    /// The type's name in templates (`common/types.cuh`).
    pub fn cuda_type(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::Bf16 => "bf16_t",
        }
    }

    /// Short name used in kernel entry names.
    pub fn short(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::Bf16 => "bf16",
        }
    }

    /// Rounds `v` to what this type can hold.
    pub fn round(self, v: f32) -> f32 {
        match self {
            DType::F32 => v,
            DType::Bf16 => half::bf16::from_f32(v).to_f32(),
        }
    }

    pub const ALL: [DType; 2] = [DType::F32, DType::Bf16];
}
