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

    /// How many of the graph's edges are programmatic (kernel to kernel launches that PDL
    /// lets overlap): the check that capture kept them.
    pub fn programmatic_edges(&self) -> Result<usize, GpuError> {
        let g = self.graph.cu_graph();
        let mut n = 0usize;
        // SAFETY: a first call with null arrays asks for the count; the second fills arrays
        // of that many entries.
        unsafe {
            sys::cuGraphGetEdges_v2(
                g,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut n,
            )
            .result()
            .ctx("counting a graph's edges")?;
            let mut from = vec![std::ptr::null_mut(); n];
            let mut to = vec![std::ptr::null_mut(); n];
            let mut data = vec![std::mem::zeroed::<sys::CUgraphEdgeData>(); n];
            sys::cuGraphGetEdges_v2(
                g,
                from.as_mut_ptr(),
                to.as_mut_ptr(),
                data.as_mut_ptr(),
                &mut n,
            )
            .result()
            .ctx("reading a graph's edges")?;
            let programmatic =
                sys::CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC as u8;
            Ok(data[..n].iter().filter(|e| e.type_ == programmatic).count())
        }
    }

    /// Queues one replay on the stream it was captured on.
    pub fn replay(&self) -> Result<(), GpuError> {
        self.graph.launch().ctx("replaying a graph")
    }
}
