//! Timing GPU work with CUDA events.

use cudarc::driver::{sys, CudaEvent};

use super::{DriverContext, Gpu, GpuError};

/// A pair of events around work on the GPU's stream.
pub struct EventTimer {
    start: CudaEvent,
    stop: CudaEvent,
}

impl EventTimer {
    pub fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        Ok(EventTimer {
            start: gpu.context().new_event(flags).ctx("creating an event")?,
            stop: gpu.context().new_event(flags).ctx("creating an event")?,
        })
    }

    /// Milliseconds the GPU spent on what `work` queued (waits for it).
    pub fn time_ms(
        &self,
        gpu: &Gpu,
        work: impl FnOnce() -> Result<(), GpuError>,
    ) -> Result<f32, GpuError> {
        self.start.record(gpu.stream()).ctx("recording an event")?;
        work()?;
        self.stop.record(gpu.stream()).ctx("recording an event")?;
        self.stop.synchronize().ctx("waiting for timed work")?;
        self.start.elapsed_ms(&self.stop).ctx("reading an event")
    }
}
