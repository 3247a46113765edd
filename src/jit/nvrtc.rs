//! NVRTC: CUDA source straight to CUBIN for one exact arch.
//!
//! NVRTC is loaded at run time (cudarc's dynamic loading), so every entry point first asks
//! whether the library is there and turns its absence into a sentence instead of a panic.

use std::ffi::{c_char, CString};

use cudarc::nvrtc::{result, sys};

use super::JitError;

/// Whether `libnvrtc` can be loaded.
pub fn is_available() -> bool {
    // SAFETY: only tries to dlopen the library; it calls nothing in it.
    unsafe { sys::is_culib_present() }
}

fn require() -> Result<(), JitError> {
    if is_available() {
        Ok(())
    } else {
        Err(JitError::NvrtcMissing)
    }
}

/// NVRTC's (major, minor) version.
pub fn version() -> Result<(i32, i32), JitError> {
    require()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; both pointers are valid for writes.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| JitError::Nvrtc {
            what: format!("nvrtcVersion failed: {e:?}"),
        })?;
    Ok((major, minor))
}

/// The options every compile uses besides the arch; they are part of the key.
pub fn base_options() -> Vec<String> {
    vec!["--std=c++17".into(), "--fmad=true".into()]
}

/// A failed compile: NVRTC's log, to be shown with the family, params and numbered source.
#[derive(Debug)]
pub struct CompileFailure {
    pub log: String,
}

fn c_chars_to_string(v: &[c_char]) -> String {
    let bytes: Vec<u8> = v
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Compiles `source` to a CUBIN with `options` (which must name the arch).
pub fn compile_cubin(
    source: &str,
    name: &str,
    options: &[String],
) -> Result<Result<Vec<u8>, CompileFailure>, JitError> {
    require()?;
    let src = CString::new(source).map_err(|_| JitError::Nvrtc {
        what: "the rendered source holds a NUL byte".into(),
    })?;
    let cname = CString::new(name).unwrap_or_else(|_| CString::new("kernel.cu").unwrap());
    let prog = result::create_program(&src, Some(&cname)).map_err(|e| JitError::Nvrtc {
        what: format!("nvrtcCreateProgram failed: {e:?}"),
    })?;
    // SAFETY: `prog` was created above and is destroyed exactly once, below.
    let outcome = unsafe {
        match result::compile_program(prog, options) {
            Ok(()) => {
                let mut size = 0usize;
                let cubin = sys::nvrtcGetCUBINSize(prog, &mut size)
                    .result()
                    .and_then(|_| {
                        let mut buf = vec![0u8; size];
                        sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut c_char)
                            .result()
                            .map(|_| buf)
                    });
                match cubin {
                    Ok(buf) if !buf.is_empty() => Ok(Ok(buf)),
                    Ok(_) => Err(JitError::Nvrtc {
                        what: "NVRTC produced an empty CUBIN".into(),
                    }),
                    Err(e) => Err(JitError::Nvrtc {
                        what: format!("nvrtcGetCUBIN failed: {e:?}"),
                    }),
                }
            }
            Err(_) => {
                let log = result::get_program_log(prog)
                    .map(|l| c_chars_to_string(&l))
                    .unwrap_or_else(|e| format!("(no log: {e:?})"));
                Ok(Err(CompileFailure { log }))
            }
        }
    };
    // SAFETY: created above, not destroyed before.
    let _ = unsafe { result::destroy_program(prog) };
    outcome
}
