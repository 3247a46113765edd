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
        box_cols as usize * 2 <= 128,
        "a swizzled TMA box is at most 128 bytes wide"
    );
    encode_2d(
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        ptr,
        (rows, cols),
        row_bytes,
        (box_rows, box_cols),
        sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    )
}

/// The map of a byte matrix `[rows, cols]` at `ptr` (a weight plane: rows `row_bytes`
/// apart), copied in boxes of `box_rows x box_cols` bytes, in the 128-byte swizzle where
/// `swizzle128` holds (`box_cols` at most 128) and as stored otherwise (`box_cols` a
/// multiple of 16). Bytes past the matrix are filled with zeros.
pub fn u8_2d(
    ptr: u64,
    (rows, cols): (usize, usize),
    row_bytes: usize,
    (box_rows, box_cols): (u32, u32),
    swizzle128: bool,
) -> Result<TensorMap, GpuError> {
    let swizzle = if swizzle128 {
        assert!(
            box_cols <= 128,
            "a swizzled TMA box is at most 128 bytes wide"
        );
        sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B
    } else {
        assert!(
            box_cols.is_multiple_of(16),
            "a TMA box row is whole 16 bytes"
        );
        sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE
    };
    encode_2d(
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        ptr,
        (rows, cols),
        row_bytes,
        (box_rows, box_cols),
        swizzle,
    )
}

/// The map of a byte plane of `rows` rows of `row_len` used bytes (`row_bytes` apart) seen
/// as 128-byte pieces, `[row_len / 128 pieces][rows][128 bytes]`: a box of `box_rows` rows x
/// `box_pieces` pieces (at coordinates (0, row, piece)) lands piece by piece, each piece's
/// rows in the 128-byte swizzle, so one copy takes a run of K for a group of rows.
pub fn u8_row_pieces(
    ptr: u64,
    rows: usize,
    row_len: usize,
    row_bytes: usize,
    (box_rows, box_pieces): (u32, u32),
) -> Result<TensorMap, GpuError> {
    assert!(row_len.is_multiple_of(128), "whole 128-byte pieces");
    assert!(
        ptr.is_multiple_of(16) && row_bytes.is_multiple_of(16),
        "TMA needs 16-byte aligned rows"
    );
    let dims = [128u64, rows as u64, (row_len / 128) as u64];
    let strides = [row_bytes as u64, 128];
    let boxes = [128u32, box_rows, box_pieces];
    encode(
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        ptr,
        &dims,
        &strides,
        &boxes,
        sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    )
}

fn encode_2d(
    dtype: sys::CUtensorMapDataType,
    ptr: u64,
    (rows, cols): (usize, usize),
    row_bytes: usize,
    (box_rows, box_cols): (u32, u32),
    swizzle: sys::CUtensorMapSwizzle,
) -> Result<TensorMap, GpuError> {
    assert!(
        ptr.is_multiple_of(16) && row_bytes.is_multiple_of(16),
        "TMA needs 16-byte aligned rows"
    );
    let dims = [cols as u64, rows as u64];
    let strides = [row_bytes as u64];
    let boxes = [box_cols, box_rows];
    encode(dtype, ptr, &dims, &strides, &boxes, swizzle)
}

/// A tiled map of rank `dims.len()` (innermost first; `strides` in bytes for the outer
/// dimensions), every element stride 1, zeros past the tensor.
fn encode(
    dtype: sys::CUtensorMapDataType,
    ptr: u64,
    dims: &[u64],
    strides: &[u64],
    boxes: &[u32],
    swizzle: sys::CUtensorMapSwizzle,
) -> Result<TensorMap, GpuError> {
    assert!(dims.len() == boxes.len() && strides.len() + 1 == dims.len());
    assert!(
        boxes.iter().all(|&b| b <= 256),
        "a TMA box is at most 256 a side"
    );
    let elem_strides = vec![1u32; dims.len()];
    // SAFETY: all-zero bits are a valid (unencoded) map; the driver fills it below.
    let mut map: TensorMap = unsafe { std::mem::zeroed() };
    // SAFETY: the arrays hold rank entries (strides rank - 1), live across the call.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            dims.len() as u32,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    r.result()
        .map_err(|e| GpuError::driver("encoding a TMA tensor map", e))?;
    Ok(map)
}
