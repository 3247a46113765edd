//! Tensor maps for Hopper's tensor memory accelerator (TMA): the descriptor a kernel takes
//! by value (`__grid_constant__`) to copy a 2-D tile from global memory into shared memory
//! with one instruction, swizzled as wgmma reads it.

use cudarc::driver::sys;

use super::GpuError;

/// A tensor map, passed to a kernel as one parameter (128 bytes, aligned as the driver
/// wants it).
pub type TensorMap = sys::CUtensorMap;

/// The map of a row-major bf16 matrix `[rows, cols]` at device address `ptr` (rows
/// `row_bytes` apart), copied in boxes of `box_rows x box_cols` into shared memory in the
/// 128-byte swizzle (so `box_cols` * 2 must be at most 128). Elements past the matrix are
/// filled with zeros.
pub fn bf16_2d_swizzle128(
    ptr: u64,
    (rows, cols): (usize, usize),
    row_bytes: usize,
    (box_rows, box_cols): (u32, u32),
) -> Result<TensorMap, GpuError> {
    assert!(
        box_cols as usize * 2 <= 128 && box_rows <= 256,
        "a swizzled TMA box is at most 128 bytes wide and 256 rows"
    );
    assert!(
        ptr.is_multiple_of(16) && row_bytes.is_multiple_of(16),
        "TMA needs 16-byte aligned rows"
    );
    encode_swizzle128(
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        ptr,
        &[cols as u64, rows as u64],
        &[row_bytes as u64],
        &[box_cols, box_rows],
    )
}

/// A tiled map of `ty` elements at `ptr`: `dims` innermost first, `strides` (bytes) of the
/// outer dimensions, `boxes` elements a box in each, landing in the 128-byte swizzle; no
/// interleave, L2 promotion of 256 bytes, out-of-range elements read as zero.
fn encode_swizzle128(
    ty: sys::CUtensorMapDataType,
    ptr: u64,
    dims: &[u64],
    strides: &[u64],
    boxes: &[u32],
) -> Result<TensorMap, GpuError> {
    let rank = dims.len();
    assert!(strides.len() + 1 == rank && boxes.len() == rank && (1..=5).contains(&rank));
    let elem_strides = [1u32; 5];
    // SAFETY: all-zero bits are a valid (unencoded) map; the driver fills it below.
    let mut map: TensorMap = unsafe { std::mem::zeroed() };
    // SAFETY: the arrays hold rank entries (strides rank - 1), live across the call.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            ty,
            rank as u32,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    r.result()
        .map_err(|e| GpuError::driver("encoding a TMA tensor map", e))?;
    Ok(map)
}

/// The element types of [`tiled_4d_swizzle128`]'s tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TmaElem {
    F16,
    F32,
}

impl TmaElem {
    fn bytes(self) -> usize {
        match self {
            TmaElem::F16 => 2,
            TmaElem::F32 => 4,
        }
    }
}

/// A 4-D tensor map (`dims` innermost first, row-major, dense: each dimension's stride is
/// the product of the ones inside it) whose boxes of `boxes` elements land in shared
/// memory in the 128-byte swizzle. Out-of-range elements of a box read as zero and are not
/// written by stores.
pub fn tiled_4d_swizzle128(
    ptr: u64,
    elem: TmaElem,
    dims: [usize; 4],
    boxes: [u32; 4],
) -> Result<TensorMap, GpuError> {
    let e = elem.bytes();
    assert!(
        boxes[0] as usize * e <= 128 && boxes.iter().all(|&b| (1..=256).contains(&b)),
        "a swizzled TMA box is at most 128 bytes wide and 256 elements a dimension"
    );
    assert!(
        ptr.is_multiple_of(16) && (dims[0] * e).is_multiple_of(16),
        "TMA needs 16-byte aligned rows"
    );
    let strides = [
        (dims[0] * e) as u64,
        (dims[0] * dims[1] * e) as u64,
        (dims[0] * dims[1] * dims[2] * e) as u64,
    ];
    let ty = match elem {
        TmaElem::F16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        TmaElem::F32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    };
    encode_swizzle128(ty, ptr, &dims.map(|d| d as u64), &strides, &boxes)
}
