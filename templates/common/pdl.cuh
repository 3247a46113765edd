// Programmatic dependent launch (Hopper, sm_90 and later; nothing below sm_90).
//
// A kernel launched with the programmatic-serialization attribute may start before the
// kernel ahead of it on the stream has finished, so that its launch and any work that does
// not depend on its predecessor overlap the predecessor's tail. The device side is two
// PTX instructions:
//
//   NINFER_PDL_WAIT()     griddepcontrol.wait: returns once every grid this one depends
//                         on has completed and its memory is visible. Before it a kernel
//                         may only READ what no kernel of the step writes (weights,
//                         constants, the host-written position slot) and compute; it must
//                         not WRITE global memory (the predecessor may still read it: a
//                         freed buffer comes back from the stream-ordered pool).
//   NINFER_PDL_TRIGGER()  griddepcontrol.launch_dependents: lets the next programmatic
//                         launch start now instead of when this grid exits.
//
// Rules (they keep "everything two launches back has completed" true at every wait, so
// a kernel's pre-wait reads of older data are safe):
//   1. Every thread executes NINFER_PDL_WAIT() exactly once before it returns, on every
//      path (no early return ahead of it).
//   2. NINFER_PDL_TRIGGER() only after NINFER_PDL_WAIT().
//   3. Without the launch attribute (below sm_90, --no-pdl, NINFER_NO_PDL=1) both are
//      no-ops, so the same CUBIN runs either way.
//
// Opting a kernel in (how the linear family is wired):
//   template:  the Tera include of "common/pdl.cuh" at the top, then in the kernel body
//              (after the loads that depend on nothing the step writes, e.g. weights):
//                  NINFER_PDL_WAIT();
//                  NINFER_PDL_TRIGGER();
//   host:      the route's KernelSpec gets `.programmatic()` (src/jit/spec.rs), and the op
//              launches through `gpu.kernel(&spec)?` + `crate::gpu::Launch` (src/gpu/launch.rs)
//              instead of `stream().launch_builder`. The JIT refuses to render a programmatic
//              spec whose source has no call of the wait (a line calling it that is not a
//              comment or a #define), and the launch takes the attribute
//              from the spec, so the attribute cannot reach a kernel that does not wait.
//
// ninfer_prefetch_l2(p): a hint to bring p's 128-byte line into L2; always safe (no data
// dependence), useful before the wait for data the kernel will read after it.
#ifndef NINFER_COMMON_PDL
#define NINFER_COMMON_PDL

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define NINFER_PDL_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define NINFER_PDL_TRIGGER() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define NINFER_PDL_WAIT() do { } while (0)
#define NINFER_PDL_TRIGGER() do { } while (0)
#endif

__device__ __forceinline__ void ninfer_prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" :: "l"(p));
}

#endif
