//! The GPU layer: device discovery and properties, a context with its stream, typed
//! device buffers (cudarc's `CudaSlice<T>`), kernel loading and launch (with programmatic
//! dependent launch where a kernel opts in: `launch`), events and CUDA graphs.
//!
//! The driver is loaded at run time; without it, or without a device, every entry point
//! returns [`GpuError`] with one sentence instead of panicking.

mod buffer;
mod cublas;
mod device;
mod graph;
mod launch;
mod timing;
pub mod tma;

pub use buffer::{dptr, AnyBuffer};
pub use cublas::Blas;
pub use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
pub use device::{list_devices, DeviceProps, Gpu};
pub use graph::Graph;
pub use launch::{
    env_switch, env_usize, pdl_disabled_by_env, pdl_supported, Kernel, KernelArg, Launch,
    NO_PDL_ENV,
};
pub use timing::EventTimer;

/// Why the GPU cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(
        "no CUDA driver found (libcuda.so.1 cannot be loaded); this machine cannot run GPU work"
    )]
    NoDriver,
    #[error("the CUDA driver found no GPU")]
    NoDevice,
    #[error("there is no GPU {ordinal}; this machine has {count}")]
    BadOrdinal { ordinal: usize, count: usize },
    #[error("CUDA error in {what}: {err}")]
    Driver { what: String, err: String },
    #[error(transparent)]
    Jit(#[from] crate::jit::JitError),
}

impl GpuError {
    pub fn driver(what: impl Into<String>, err: cudarc::driver::DriverError) -> Self {
        GpuError::Driver {
            what: what.into(),
            err: format!("{err:?}"),
        }
    }
}

/// Whether `libcuda` can be loaded.
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Adds context to a driver error.
pub trait DriverContext<T> {
    fn ctx(self, what: &str) -> Result<T, GpuError>;
}

impl<T> DriverContext<T> for Result<T, cudarc::driver::DriverError> {
    fn ctx(self, what: &str) -> Result<T, GpuError> {
        self.map_err(|e| GpuError::driver(what, e))
    }
}
