//! A device buffer whose element type is chosen at run time (f32 or bf16 bits), for ops
//! that take either.

use cudarc::driver::{CudaSlice, DevicePtr};
use half::bf16;

use super::{Gpu, GpuError};
use crate::ops::DType;

/// The device address of a buffer (event tracking is off on our contexts).
pub fn dptr<T>(gpu: &Gpu, s: &CudaSlice<T>) -> u64 {
    s.device_ptr(gpu.stream()).0
}

/// A typed device buffer of f32 or bf16 (stored as raw `u16` bits).
pub enum AnyBuffer {
    F32(CudaSlice<f32>),
    Bf16(CudaSlice<u16>),
}

impl AnyBuffer {
    /// Uploads `values` converted to `dtype` (round to nearest even for bf16).
    pub fn upload(gpu: &Gpu, dtype: DType, values: &[f32]) -> Result<Self, GpuError> {
        Ok(match dtype {
            DType::F32 => AnyBuffer::F32(gpu.upload(values)?),
            DType::Bf16 => {
                let bits: Vec<u16> = values
                    .iter()
                    .map(|&v| bf16::from_f32(v).to_bits())
                    .collect();
                AnyBuffer::Bf16(gpu.upload(&bits)?)
            }
        })
    }

    /// A buffer of `len` NaNs: whatever a kernel leaves unwritten shows up in the check.
    pub fn poisoned(gpu: &Gpu, dtype: DType, len: usize) -> Result<Self, GpuError> {
        Self::upload(gpu, dtype, &vec![f32::NAN; len])
    }

    pub fn dtype(&self) -> DType {
        match self {
            AnyBuffer::F32(_) => DType::F32,
            AnyBuffer::Bf16(_) => DType::Bf16,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            AnyBuffer::F32(s) => s.len(),
            AnyBuffer::Bf16(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw device address, for passing to a kernel as a pointer argument.
    pub fn device_ptr(&self, gpu: &Gpu) -> u64 {
        // Event tracking is off on our contexts (see Gpu::open), so the guard is a no-op;
        // ordering comes from using the one stream.
        match self {
            AnyBuffer::F32(s) => s.device_ptr(gpu.stream()).0,
            AnyBuffer::Bf16(s) => s.device_ptr(gpu.stream()).0,
        }
    }

    /// Overwrites the buffer's first `values.len()` elements (converted to its type) in
    /// place, keeping its address: how captured graphs get new inputs.
    pub fn write(&mut self, gpu: &Gpu, values: &[f32]) -> Result<(), GpuError> {
        assert!(
            values.len() <= self.len(),
            "write past the end of a device buffer"
        );
        let res = match self {
            AnyBuffer::F32(s) => gpu.stream().memcpy_htod(values, s),
            AnyBuffer::Bf16(s) => {
                let bits: Vec<u16> = values
                    .iter()
                    .map(|&v| bf16::from_f32(v).to_bits())
                    .collect();
                gpu.stream().memcpy_htod(&bits, s)
            }
        };
        res.map_err(|e| GpuError::driver("copying to the device", e))
    }

    /// Copies back as f32.
    pub fn download(&self, gpu: &Gpu) -> Result<Vec<f32>, GpuError> {
        Ok(match self {
            AnyBuffer::F32(s) => gpu.download(s)?,
            AnyBuffer::Bf16(s) => gpu
                .download(s)?
                .into_iter()
                .map(|b| bf16::from_bits(b).to_f32())
                .collect(),
        })
    }
}
