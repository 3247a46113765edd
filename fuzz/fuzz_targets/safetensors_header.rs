//! Any bytes into the safetensors header parser: Ok or an error message, never a panic, and
//! every tensor it accepts lies inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer::model::st_files::parse_safetensors_header;

fuzz_target!(|data: &[u8]| {
    if let Ok(tensors) = parse_safetensors_header(data) {
        for t in tensors {
            assert!(t.range.start <= t.range.end && t.range.end <= data.len());
        }
    }
});
