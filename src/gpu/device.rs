//! Devices, their properties, and [`Gpu`]: one context, its stream and its loaded kernels.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{sys, DevicePtr, ValidAsZeroBits};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, PinnedHostSlice,
};
use dashmap::DashMap;

use super::{driver_available, DriverContext, GpuError};
use crate::jit::{Arch, Jit, KernelKey, KernelSpec};

/// What the engine needs to know about a device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeviceProps {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    pub l2_bytes: u64,
    pub smem_per_block_optin: u64,
    pub smem_per_sm: u64,
    pub total_memory: u64,
    pub memory_bus_bits: u32,
    /// (major, minor) of the CUDA driver API version.
    pub driver_version: (u32, u32),
    /// (major, minor) of NVRTC, when it loads.
    pub nvrtc_version: Option<(i32, i32)>,
}

impl DeviceProps {
    /// The compile target for this device.
    pub fn arch(&self) -> Arch {
        Arch::new(self.compute_capability.0, self.compute_capability.1)
    }
}

fn init_driver() -> Result<usize, GpuError> {
    if !driver_available() {
        return Err(GpuError::NoDriver);
    }
    cudarc::driver::result::init().ctx("cuInit")?;
    let count = cudarc::driver::result::device::get_count().ctx("cuDeviceGetCount")? as usize;
    if count == 0 {
        return Err(GpuError::NoDevice);
    }
    Ok(count)
}

fn driver_version() -> Result<(u32, u32), GpuError> {
    let mut v = 0i32;
    // SAFETY: the driver is loaded; `v` is valid for writes.
    unsafe { sys::cuDriverGetVersion(&mut v) }
        .result()
        .ctx("cuDriverGetVersion")?;
    Ok(((v / 1000) as u32, ((v % 1000) / 10) as u32))
}

fn props_of(ctx: &Arc<CudaContext>) -> Result<DeviceProps, GpuError> {
    let attr = |a: Attr| -> Result<u64, GpuError> {
        ctx.attribute(a)
            .map(|v| v as u64)
            .ctx("cuDeviceGetAttribute")
    };
    let (major, minor) = ctx.compute_capability().ctx("compute capability")?;
    Ok(DeviceProps {
        ordinal: ctx.ordinal(),
        name: ctx.name().ctx("cuDeviceGetName")?,
        compute_capability: (major as u32, minor as u32),
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        smem_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        smem_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        total_memory: ctx.total_mem().ctx("cuDeviceTotalMem")? as u64,
        memory_bus_bits: attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as u32,
        driver_version: driver_version()?,
        nvrtc_version: crate::jit::nvrtc::version().ok(),
    })
}

/// Properties of every device the driver sees.
pub fn list_devices() -> Result<Vec<DeviceProps>, GpuError> {
    let count = init_driver()?;
    (0..count)
        .map(|i| {
            let ctx = CudaContext::new(i).ctx("creating a context")?;
            props_of(&ctx)
        })
        .collect()
}

/// One device: its context, the stream all work is ordered on, and the kernels loaded so far.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    props: DeviceProps,
    functions: DashMap<KernelKey, CudaFunction>,
    /// Loaded functions by entry name, so a launch costs no template render or hash once
    /// its kernel is loaded (the op-by-op engine launches hundreds per token).
    by_spec: DashMap<String, CudaFunction>,
    /// Programmatic dependent launch for the kernels that opt in (`super::launch`).
    pdl: AtomicBool,
    /// Dynamic shared memory granted per loaded function (by `CUfunction`), above the
    /// default 48 KB (see [`Gpu::grant_shared_memory`]).
    smem_granted: DashMap<usize, usize>,
    /// One launch's intermediate results (the mma GEMV's split-K sums): see [`Gpu::scratch`].
    scratch: std::sync::Mutex<Option<CudaSlice<u8>>>,
}

/// Stream-ordered frees return memory to the device's default pool, which by default hands
/// it back to the driver at every synchronisation; ops allocate their outputs on the stream,
/// so every window or step would map its memory again. Keep it in the pool instead.
fn keep_freed_memory(ctx: &CudaContext) -> Result<(), GpuError> {
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let mut threshold = u64::MAX;
    // SAFETY: the device handle is the context's; `pool` is written by the driver before
    // use; the attribute takes a pointer to a u64.
    unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
            .result()
            .ctx("cuDeviceGetDefaultMemPool")?;
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
        .result()
        .ctx("setting the memory pool's release threshold")?;
    }
    Ok(())
}

impl Gpu {
    /// Opens device `ordinal` with a fresh stream.
    pub fn open(ordinal: usize) -> Result<Gpu, GpuError> {
        let count = init_driver()?;
        if ordinal >= count {
            return Err(GpuError::BadOrdinal { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).ctx("creating a context")?;
        // Per-buffer event tracking breaks graph capture when several streams exist
        // (CUDA_ERROR_STREAM_CAPTURE_ISOLATION); we order work on our own streams instead.
        // SAFETY: called before any buffer or stream work on this context.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().ctx("creating a stream")?;
        keep_freed_memory(&ctx)?;
        let props = props_of(&ctx)?;
        let pdl = super::launch::pdl_supported(props.compute_capability)
            && !super::launch::pdl_disabled_by_env();
        Ok(Gpu {
            ctx,
            stream,
            props,
            functions: DashMap::new(),
            by_spec: DashMap::new(),
            pdl: AtomicBool::new(pdl),
            smem_granted: DashMap::new(),
            scratch: std::sync::Mutex::new(None),
        })
    }

    /// Whether kernels that opt in are launched programmatically (PDL): on by default where
    /// the compute capability is 9.0 or more, unless `NINFER_NO_PDL` is set.
    pub fn pdl(&self) -> bool {
        self.pdl.load(Ordering::Relaxed)
    }

    /// Turns programmatic launches off, or back on where the device has them.
    pub fn set_pdl(&self, on: bool) {
        let on = on && super::launch::pdl_supported(self.props.compute_capability);
        self.pdl.store(on, Ordering::Relaxed);
    }

    pub fn props(&self) -> &DeviceProps {
        &self.props
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The kernel for `spec`, compiled for this device (through the JIT caches) and loaded
    /// once per context.
    pub fn function(&self, spec: &KernelSpec) -> Result<CudaFunction, GpuError> {
        // The template set is fixed for the life of the process and entry names are unique
        // across the registry (`jit::registry` tests it), so the entry names one kernel and
        // a hit costs one hash of it, no allocation.
        if let Some(f) = self.by_spec.get(spec.entry.as_str()) {
            return Ok(f.clone());
        }
        let f = self.load_function(spec)?;
        self.by_spec.insert(spec.entry.clone(), f.clone());
        Ok(f)
    }

    fn load_function(&self, spec: &KernelSpec) -> Result<CudaFunction, GpuError> {
        let jit = Jit::global()?;
        let (kernel, _) = jit.cubin(spec, self.props.arch())?;
        if let Some(f) = self.functions.get(&kernel.key) {
            return Ok(f.clone());
        }
        let module: Arc<CudaModule> = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(kernel.cubin.clone()))
            .ctx(&format!("loading kernel {}", spec.entry))?;
        let f = module
            .load_function(&spec.entry)
            .ctx(&format!("finding entry point {}", spec.entry))?;
        self.functions.insert(kernel.key.clone(), f.clone());
        Ok(f)
    }

    /// Copies a host slice to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>, GpuError> {
        self.stream.clone_htod(host).ctx("copying to the device")
    }

    /// Copies a device buffer back (waits for the stream).
    pub fn download<T: DeviceRepr + Default + Clone>(
        &self,
        dev: &CudaSlice<T>,
    ) -> Result<Vec<T>, GpuError> {
        self.stream.clone_dtoh(dev).ctx("copying from the device")
    }

    /// Lets `f` (the kernel `entry`) launch with `bytes` of dynamic shared memory: the
    /// function's opt-in above the default 48 KB. The limit only ever grows, so that a
    /// smaller launch never lowers it under a larger one made or captured before, and a
    /// launch within what was granted makes no driver call.
    pub fn grant_shared_memory(
        &self,
        f: &CudaFunction,
        bytes: usize,
        entry: &str,
    ) -> Result<(), GpuError> {
        const DEFAULT: usize = 48 * 1024;
        let mut granted = self
            .smem_granted
            .entry(f.cu_function() as usize)
            .or_insert(DEFAULT);
        if bytes > *granted {
            f.set_attribute(
                sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .ctx(&format!("shared memory of {entry}"))?;
            *granted = bytes;
        }
        Ok(())
    }

    /// Page-locked host memory for `len` f32, for results read back again and again (a
    /// captured step's logits): the copy lands in it directly, where a copy into pageable
    /// memory goes through the driver's staging buffers. Plain cached pages: cudarc's
    /// default, write-combined memory, is slow for the host to read.
    pub fn alloc_pinned(&self, len: usize) -> Result<PinnedHostSlice<f32>, GpuError> {
        // SAFETY: the slice is only read (by `download_via`) after a copy has filled it.
        unsafe { self.ctx.alloc_pinned_with_flags::<f32>(len, 0) }
            .ctx("allocating page-locked host memory")
    }

    /// Copies the first `len` elements of `dev` through the page-locked `host` (at least
    /// `len` long) into a new `Vec` (waits for the stream).
    pub fn download_via(
        &self,
        dev: &CudaSlice<f32>,
        len: usize,
        host: &mut PinnedHostSlice<f32>,
    ) -> Result<Vec<f32>, GpuError> {
        assert!(
            len <= dev.len() && len <= host.len(),
            "download_via: {len} elements"
        );
        self.stream
            .memcpy_dtoh(&dev.slice(0..len), host)
            .ctx("copying from the device")?;
        // The copy is asynchronous, and with the context's event tracking off (see
        // `Gpu::new`) `as_slice` does not wait for it: wait for the stream here.
        self.synchronize()?;
        Ok(host.as_slice().ctx("reading the copy")?[..len].to_vec())
    }

    /// The address of this stream's scratch buffer ([`Gpu::SCRATCH_BYTES`]), where a kernel
    /// leaves results for the next kernel of the same op (the mma GEMV's split-K sums for
    /// its adding kernel). One op at a time uses it: stream order, and under programmatic
    /// launch no kernel writes before its wait, by which the one before it has finished.
    /// Allocated on first use (followed by the split-K counters, [`Gpu::splitk_counters`]);
    /// `None` where that first use falls inside a graph capture (the caller then takes a
    /// route without it).
    pub fn scratch(&self) -> Result<Option<u64>, GpuError> {
        let mut s = self.scratch.lock().expect("scratch");
        if s.is_none() {
            let capturing = self
                .stream
                .capture_status()
                .ctx("reading the capture status")?
                != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
            if capturing {
                return Ok(None);
            }
            // Zeroed: the split-K counters after the sums must start at zero (the sums
            // themselves are written before they are read).
            let buf = self
                .stream
                .alloc_zeros::<u8>(Self::SCRATCH_BYTES + 4 * Self::SPLITK_COUNTERS)
                .ctx("allocating the scratch buffer")?;
            *s = Some(buf);
        }
        let buf = s.as_ref().expect("allocated above");
        let (ptr, _record) = buf.device_ptr(&self.stream);
        Ok(Some(ptr))
    }

    /// Bytes of [`Gpu::scratch`].
    pub const SCRATCH_BYTES: usize = 16 << 20;

    /// u32 counters that follow the scratch's [`Gpu::SCRATCH_BYTES`] (at
    /// [`Gpu::splitk_counters`]): one a m-range of a split-K mma GEMV whose last block adds
    /// the K-ranges' sums (`templates/linear/mma_exact.cuh`, `splitk_finish`). Zeroed when
    /// the scratch is allocated; each launch leaves them zero again, so they serve every
    /// later launch and graph replay on this stream.
    pub const SPLITK_COUNTERS: usize = 4096;

    /// The address of the split-K counters ([`Gpu::SPLITK_COUNTERS`] u32 after the
    /// scratch), `None` where there is no scratch (see [`Gpu::scratch`]).
    pub fn splitk_counters(&self) -> Result<Option<u64>, GpuError> {
        Ok(self.scratch()?.map(|p| p + Self::SCRATCH_BYTES as u64))
    }

    /// A zeroed device buffer of `len` elements.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>, GpuError> {
        self.stream.alloc_zeros(len).ctx("allocating device memory")
    }

    /// Waits for all queued work and reports any error it raised (a faulting kernel
    /// surfaces here, not at its launch).
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream.synchronize().ctx("running queued GPU work")
    }
}
