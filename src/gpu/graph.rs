//! CUDA graph capture and replay on the GPU's stream.

use cudarc::driver::{sys, CudaGraph};

use super::{DriverContext, Gpu, GpuError};

/// A captured sequence of launches, replayed as one.
pub struct Graph {
    graph: CudaGraph,
}

impl Graph {
    /// Captures what `work` queues on the GPU's stream (nothing runs during capture).
    pub fn capture(
        gpu: &Gpu,
        work: impl FnOnce() -> Result<(), GpuError>,
    ) -> Result<Graph, GpuError> {
        let stream = gpu.stream();
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .ctx("beginning graph capture")?;
        let queued = work();
        let ended = stream.end_capture(sys::CUgraphInstantiate_flags(0));
        queued?;
        let graph = ended
            .ctx("ending graph capture")?
            .ok_or_else(|| GpuError::Driver {
                what: "graph capture".into(),
                err: "nothing was captured".into(),
            })?;
        graph.upload().ctx("uploading a graph")?;
        Ok(Graph { graph })
    }

    /// Starts capturing what is queued on the GPU's stream from this thread (nothing runs
    /// until the graph is replayed); [`Graph::end_capture`] ends it. For captures whose
    /// work is not one closure (the cuda backend's decode step spans several calls).
    pub fn begin_capture(gpu: &Gpu) -> Result<(), GpuError> {
        gpu.stream()
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .ctx("beginning graph capture")
    }

    /// Ends the capture [`Graph::begin_capture`] started and instantiates it.
    pub fn end_capture(gpu: &Gpu) -> Result<Graph, GpuError> {
        let graph = gpu
            .stream()
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .ctx("ending graph capture")?
            .ok_or_else(|| GpuError::Driver {
                what: "graph capture".into(),
                err: "nothing was captured".into(),
            })?;
        graph.upload().ctx("uploading a graph")?;
        Ok(Graph { graph })
    }

    /// Queues one replay on the stream it was captured on.
    pub fn replay(&self) -> Result<(), GpuError> {
        self.graph.launch().ctx("replaying a graph")
    }
}
