//! Kernel launches with or without programmatic dependent launch (PDL).
//!
//! On sm_90 and later a launch may carry `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`:
//! the kernel may then start while the one ahead of it on the stream finishes, and must
//! execute `griddepcontrol.wait` before it reads that kernel's output
//! (`templates/common/pdl.cuh`). Stream capture keeps these as programmatic edges of the
//! captured graph, so the decode step's replays get the overlap too.
//!
//! The attribute comes from the kernel's [`KernelSpec::programmatic`] flag (the JIT refuses
//! to render a flagged spec whose template does not wait) and from the device's switch
//! ([`Gpu::pdl`]: on where the compute capability is 9.0 or more, unless `NINFER_NO_PDL` is
//! set or the engine's `--no-pdl` turned it off), so an op cannot give it to a kernel that
//! does not wait.

use std::ffi::c_void;
use std::marker::PhantomData;

use cudarc::driver::{sys, CudaFunction, CudaSlice, DevicePtr, DriverError, LaunchConfig};

use super::{Gpu, GpuError};
use crate::jit::KernelSpec;

/// The environment variable that turns programmatic launches off (any value but `0` or empty).
pub const NO_PDL_ENV: &str = "NINFER_NO_PDL";

/// Whether the environment turns PDL off.
pub fn pdl_disabled_by_env() -> bool {
    env_switch(NO_PDL_ENV)
}

/// Whether the on/off environment switch `name` is on: set to anything but empty or `0`.
pub fn env_switch(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The environment setting `name` as a number, where it is set to one.
pub fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Whether a device of this compute capability can launch programmatically.
pub fn pdl_supported(compute_capability: (u32, u32)) -> bool {
    compute_capability.0 >= 9
}

/// A loaded kernel and whether its spec opted into programmatic launch.
#[derive(Clone)]
pub struct Kernel {
    func: CudaFunction,
    programmatic: bool,
}

impl Kernel {
    pub fn function(&self) -> &CudaFunction {
        &self.func
    }

    /// The spec's opt-in (whether the launch also uses it depends on the device switch).
    pub fn programmatic(&self) -> bool {
        self.programmatic
    }
}

impl Gpu {
    /// The kernel for `spec` (as [`Gpu::function`]), with the spec's PDL opt-in.
    pub fn kernel(&self, spec: &KernelSpec) -> Result<Kernel, GpuError> {
        Ok(Kernel {
            func: self.function(spec)?,
            programmatic: spec.programmatic,
        })
    }

    /// A launch of `kernel` on this GPU's stream; add arguments with [`Launch::arg`].
    pub fn launch<'a>(&'a self, kernel: &'a Kernel) -> Launch<'a> {
        Launch {
            gpu: self,
            kernel,
            args: Vec::new(),
            ptrs: Vec::new(),
            cluster: 1,
            _borrow: PhantomData,
        }
    }

    /// How many clusters of `cluster` blocks of `f` (`threads` a block, `smem` dynamic
    /// shared bytes, granted beforehand) can be resident at once (sm_90's thread block
    /// clusters: a cluster's blocks run together on SMs of one GPC, so this can be less
    /// than the resident blocks over `cluster`).
    pub fn max_active_clusters(
        &self,
        f: &CudaFunction,
        cluster: u32,
        threads: u32,
        smem: u32,
    ) -> Result<u32, DriverError> {
        self.context().bind_to_thread()?;
        let mut attr = cluster_attribute(cluster);
        let config = sys::CUlaunchConfig {
            gridDimX: cluster,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: smem,
            // As the H200 runs of bench/kernels v88 passed it (a query queues nothing).
            hStream: self.stream().cu_stream(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        let mut n: std::ffi::c_int = 0;
        // SAFETY: the config and its one attribute outlive the call; `n` is written.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, f.cu_function(), &config) }.result()?;
        Ok(n.max(0) as u32)
    }
}

/// The launch attribute that groups blocks into clusters of `cluster` along x.
fn cluster_attribute(cluster: u32) -> sys::CUlaunchAttribute {
    // SAFETY: all-zero bits are a valid attribute (id 0 = ignored) before we set it.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    attr
}

/// Whether a launch carries the attribute: the kernel waits and the device switch is on.
pub fn uses_pdl(kernel_waits: bool, device_pdl: bool) -> bool {
    kernel_waits && device_pdl
}

/// A kernel launch being assembled (the counterpart of cudarc's `LaunchArgs`, which has no
/// way to pass launch attributes).
pub struct Launch<'a> {
    gpu: &'a Gpu,
    kernel: &'a Kernel,
    /// One entry per kernel parameter.
    args: Vec<Param>,
    /// Device addresses of buffer arguments (`Param::Buffer` indexes them).
    ptrs: Vec<u64>,
    /// Blocks a thread block cluster (1: no cluster attribute).
    cluster: u32,
    _borrow: PhantomData<&'a ()>,
}

/// Where a kernel parameter's value lives.
enum Param {
    /// A value the caller lends for the launch.
    Value(*mut c_void),
    /// A buffer's device address, held by the launch.
    Buffer(usize),
}

/// One pointer per parameter, to its value (valid while `ptrs` is neither moved nor grown).
fn param_pointers(args: &[Param], ptrs: &mut [u64]) -> Vec<*mut c_void> {
    let base = ptrs.as_mut_ptr();
    args.iter()
        .map(|a| match *a {
            Param::Value(p) => p,
            // SAFETY: `i` indexes `ptrs` (pushed together with the `Param`).
            Param::Buffer(i) => unsafe { base.add(i) }.cast(),
        })
        .collect()
}

/// A value that can be one kernel parameter.
///
/// # Safety
/// `push` must add exactly one pointer to a value laid out as the kernel's parameter.
pub unsafe trait KernelArg {
    fn push<'a>(&'a self, launch: &mut Launch<'a>);
}

macro_rules! plain_args {
    ($($t:ty),*) => {$(
        // SAFETY: a plain value is its own parameter.
        unsafe impl KernelArg for $t {
            fn push<'a>(&'a self, launch: &mut Launch<'a>) {
                launch.args.push(Param::Value(self as *const $t as *mut c_void));
            }
        }
    )*};
}
plain_args!(i32, u32, i64, u64, f32, f64);

// SAFETY: a tensor map is passed by value, its 128 bytes as the kernel declares them.
unsafe impl KernelArg for super::tma::TensorMap {
    fn push<'a>(&'a self, launch: &mut Launch<'a>) {
        launch
            .args
            .push(Param::Value(self as *const Self as *mut c_void));
    }
}

// SAFETY: a buffer is passed as its device address (event tracking is off on our
// contexts, see `Gpu::open`, so the guard of `device_ptr` does nothing).
unsafe impl<T> KernelArg for CudaSlice<T> {
    fn push<'a>(&'a self, launch: &mut Launch<'a>) {
        let p = self.device_ptr(launch.gpu.stream()).0;
        launch.args.push(Param::Buffer(launch.ptrs.len()));
        launch.ptrs.push(p);
    }
}

impl<'a> Launch<'a> {
    /// Adds the next kernel parameter.
    pub fn arg<A: KernelArg + ?Sized>(&mut self, a: &'a A) -> &mut Self {
        a.push(self);
        self
    }

    /// Whether this launch carries the programmatic attribute.
    pub fn programmatic(&self) -> bool {
        uses_pdl(self.kernel.programmatic, self.gpu.pdl())
    }

    /// Launches the grid in thread block clusters of `cluster` blocks along x (sm_90; the
    /// grid's x a multiple of it). 1, the default, launches without clusters.
    pub fn cluster(&mut self, cluster: u32) -> &mut Self {
        self.cluster = cluster.max(1);
        self
    }

    /// Queues the kernel.
    ///
    /// # Safety
    /// The arguments must match the kernel's signature, and every access the kernel makes
    /// with them must be in bounds (as for cudarc's `LaunchArgs::launch`).
    pub unsafe fn launch(&mut self, cfg: LaunchConfig) -> Result<(), DriverError> {
        let stream = self.gpu.stream();
        self.gpu.context().bind_to_thread()?;
        let f = self.kernel.func.cu_function();
        // The parameter pointers, taken now that `ptrs` no longer grows.
        let mut params = param_pointers(&self.args, &mut self.ptrs);
        if !self.programmatic() && self.cluster == 1 {
            return cudarc::driver::result::launch_kernel(
                f,
                cfg.grid_dim,
                cfg.block_dim,
                cfg.shared_mem_bytes,
                stream.cu_stream(),
                &mut params,
            );
        }
        let mut attrs: Vec<sys::CUlaunchAttribute> = Vec::with_capacity(2);
        if self.programmatic() {
            // SAFETY: all-zero bits are a valid attribute (id 0 = ignored) before we set it.
            let mut attr: sys::CUlaunchAttribute = std::mem::zeroed();
            attr.id =
                sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attr.value.programmaticStreamSerializationAllowed = 1;
            attrs.push(attr);
        }
        if self.cluster > 1 {
            attrs.push(cluster_attribute(self.cluster));
        }
        let config = sys::CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: cfg.grid_dim.1,
            gridDimZ: cfg.grid_dim.2,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: stream.cu_stream(),
            attrs: attrs.as_mut_ptr(),
            numAttrs: attrs.len() as u32,
        };
        sys::cuLaunchKernelEx(&config, f, params.as_mut_ptr(), std::ptr::null_mut()).result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attribute_needs_both_the_kernel_and_the_device() {
        assert!(uses_pdl(true, true));
        assert!(!uses_pdl(true, false));
        assert!(!uses_pdl(false, true));
        assert!(!uses_pdl(false, false));
    }

    #[test]
    fn parameters_point_at_their_values() {
        let (a, b) = (7i32, 2.5f64);
        let args = [
            Param::Value(&a as *const i32 as *mut c_void),
            Param::Buffer(1),
            Param::Value(&b as *const f64 as *mut c_void),
            Param::Buffer(0),
        ];
        let mut ptrs = vec![0xdead_0000u64, 0xbeef_0000u64];
        let p = param_pointers(&args, &mut ptrs);
        // SAFETY: each pointer is to the value of the type pushed.
        unsafe {
            assert_eq!(*(p[0] as *const i32), 7);
            assert_eq!(*(p[1] as *const u64), 0xbeef_0000);
            assert_eq!(*(p[2] as *const f64), 2.5);
            assert_eq!(*(p[3] as *const u64), 0xdead_0000);
        }
    }

    #[test]
    fn pdl_starts_at_hopper() {
        assert!(!pdl_supported((8, 0)));
        assert!(!pdl_supported((8, 9)));
        assert!(pdl_supported((9, 0)));
        assert!(pdl_supported((10, 0)));
        assert!(pdl_supported((12, 0)));
    }
}
