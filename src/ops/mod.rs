//! Ops: one module per op family, each with its public API, its CPU reference (the oracle
//! its GPU routes are qualified against) and its CUDA routes.

pub mod attention;
pub mod elementwise;
pub mod embedding;
pub mod gdn;
pub mod linear;
pub mod linear_cublas;
pub mod linear_exact;
pub mod linear_mma_exact;
pub mod linear_sgemm;
pub mod loss;
pub mod mma_probe;
pub mod rmsnorm;
pub mod rope;
pub mod weight;

use serde::Serialize;

/// Where a position-dependent launch (RoPE, KV append, attention) finds the position of its
/// first row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pos {
    /// Known on the host: a kernel argument.
    Host(usize),
    /// An `i32` in device memory at `ptr`, read by the kernel, so that a captured CUDA graph
    /// replays at whatever position the host writes there. `max_keys` bounds the keys any
    /// replay attends over (the attention decode plans its fixed split grid for it).
    Device { ptr: u64, max_keys: usize },
}

impl Pos {
    /// The host part of the position and the device pointer (0 when none), as the kernels
    /// take them (`pos0 + *pos_dev`).
    pub fn kernel_args(self) -> (usize, u64) {
        match self {
            Pos::Host(p) => (p, 0),
            Pos::Device { ptr, .. } => (0, ptr),
        }
    }

    /// The most keys a launch at this position with `t` rows can see.
    pub fn max_keys(self, t: usize) -> usize {
        match self {
            Pos::Host(p) => p + t,
            Pos::Device { max_keys, .. } => max_keys,
        }
    }
}

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
