//! Any bytes into the GGUF parser: it must return (Ok or a GgufError), never panic, and every
//! tensor it accepts must lie inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer::model::gguf::parse_gguf;

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = parse_gguf(data) {
        for t in &header.tensors {
            let range = header.tensor_range(t);
            assert!(range.end <= data.len());
            let _ = t.shape();
        }
        for (key, value) in &header.metadata {
            let _ = (key.len(), value.as_f64(), value.as_str(), value.as_array());
        }
    }
});
