//! cuBLAS as the peer and the matrix-rate ceiling: bf16 GEMM/GEMV with f32 accumulation,
//! in the engine's row-major convention `Y[T,N] = X[T,K] * W[N,K]^T`; and the GEMM of the
//! `--prefill-cublas` route (`ops::linear_cublas`): bf16 in, f32 out, `beta` for the residual.

use std::ffi::c_void;

use cudarc::cublas::{result, sys, CudaBlas};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

use super::{Gpu, GpuError};

/// A cuBLAS handle bound to the GPU's stream.
pub struct Blas {
    blas: CudaBlas,
}

impl Blas {
    pub fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { sys::is_culib_present() } {
            return Err(GpuError::Driver {
                what: "loading cuBLAS".into(),
                err: "libcublas.so cannot be loaded".into(),
            });
        }
        let blas = CudaBlas::new(gpu.stream().clone()).map_err(|e| GpuError::Driver {
            what: "creating a cuBLAS handle".into(),
            err: format!("{e:?}"),
        })?;
        Ok(Blas { blas })
    }

    /// `y[t,n] = sum_k x[t,k] * w[n,k]`, all bf16 (raw bits), f32 accumulation.
    pub fn gemm_bf16(
        &self,
        gpu: &Gpu,
        w: &CudaSlice<u16>,
        x: &CudaSlice<u16>,
        y: &mut CudaSlice<u16>,
        (t, n, k): (usize, usize, usize),
    ) -> Result<(), GpuError> {
        assert!(w.len() >= n * k && x.len() >= t * k && y.len() >= t * n);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let stream = gpu.stream();
        let (wp, _gw) = w.device_ptr(stream);
        let (xp, _gx) = x.device_ptr(stream);
        let (yp, _gy) = y.device_ptr_mut(stream);
        // cuBLAS is column-major: row-major W [n,k] is a k x n matrix A, used transposed;
        // row-major X [t,k] is a k x t matrix B; row-major Y [t,n] is the n x t result C.
        // SAFETY: the sizes are asserted above; the pointers live for the call.
        unsafe {
            result::gemm_ex(
                *self.blas.handle(),
                sys::cublasOperation_t::CUBLAS_OP_T,
                sys::cublasOperation_t::CUBLAS_OP_N,
                n as i32,
                t as i32,
                k as i32,
                &alpha as *const f32 as *const c_void,
                wp as *const c_void,
                sys::cudaDataType::CUDA_R_16BF,
                k as i32,
                xp as *const c_void,
                sys::cudaDataType::CUDA_R_16BF,
                k as i32,
                &beta as *const f32 as *const c_void,
                yp as *mut c_void,
                sys::cudaDataType::CUDA_R_16BF,
                n as i32,
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| GpuError::Driver {
            what: "cublasGemmEx".into(),
            err: format!("{e:?}"),
        })
    }

    /// `y[t, n] = sum_k x[t,k] * w[n,k] + beta * y[t, n]` at device addresses: `w` bf16
    /// `[n, k]` (row stride `k`), `x` bf16 `[t, k]` (row stride `k`), `y` f32 with row
    /// stride `ldy` (>= n: the columns of a wider output, for a tile of weight rows). f32
    /// accumulation; cuBLAS takes an f32 C with bf16 A and B under `CUBLAS_COMPUTE_32F`.
    /// The caller keeps the buffers alive and sized until the stream has run the call.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_bf16_f32_at(
        &self,
        w: u64,
        x: u64,
        y: u64,
        ldy: usize,
        (t, n, k): (usize, usize, usize),
        beta: f32,
    ) -> Result<(), GpuError> {
        assert!(ldy >= n, "the output's row stride is narrower than a row");
        let dim = |v: usize| i32::try_from(v).expect("GEMM dimension fits an int");
        let alpha = 1.0f32;
        // Column-major view as in `gemm_bf16`: C (n x t, ldc = ldy) = W^T-as-A (k x n)^T * X.
        // SAFETY: the caller guarantees the sizes; the scalars live for the call.
        unsafe {
            result::gemm_ex(
                *self.blas.handle(),
                sys::cublasOperation_t::CUBLAS_OP_T,
                sys::cublasOperation_t::CUBLAS_OP_N,
                dim(n),
                dim(t),
                dim(k),
                &alpha as *const f32 as *const c_void,
                w as *const c_void,
                sys::cudaDataType::CUDA_R_16BF,
                dim(k),
                x as *const c_void,
                sys::cudaDataType::CUDA_R_16BF,
                dim(k),
                &beta as *const f32 as *const c_void,
                y as *mut c_void,
                sys::cudaDataType::CUDA_R_32F,
                dim(ldy),
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| GpuError::Driver {
            what: "cublasGemmEx (bf16 in, f32 out)".into(),
            err: format!("{e:?}"),
        })
    }
}
