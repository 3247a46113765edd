//! Every format in the registry has a template that renders (Tera, with the format's
//! descriptor as `fmt`) to self-contained device code defining the fixed interface.
//!
//! With `NINFER_DUMP_FORMAT_SOURCES=dir` set, the rendered sources are also written there (one
//! `<name>.cu` each, with a small kernel that calls the interface) for an NVRTC compile check.

use std::path::{Path, PathBuf};

use ninfer::formats::{registry, FormatKind};

fn templates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("templates")
}

fn tera_with(dirs: &[&str]) -> tera::Tera {
    let mut t = tera::Tera::default();
    let root = templates_dir();
    let mut files = Vec::new();
    for d in dirs {
        for e in std::fs::read_dir(root.join(d)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "cuh") {
                let rel = p
                    .strip_prefix(&root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .replace('\\', "/");
                files.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    t.add_raw_templates(files).expect("format templates parse");
    t
}

/// A kernel that exercises the interface, so a compile check instantiates every function.
const PROBE: &str = r#"
extern "C" __global__ void probe(const u8* q, const u8* s, const float* x, float* out, int K) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= K / FMT_GROUP) return;
    float w[FMT_GROUP];
    fmt_decode_group(q, s, g, w);
    for (int i = 0; i < FMT_GROUP; ++i) out[g * FMT_GROUP + i] = w[i];
    out[K + g] = fmt_dot_group(q, s, g, x + g * FMT_GROUP);
    if (g == 0) out[K + K / FMT_GROUP] = (float)(fmt_q_row_bytes(K) + fmt_s_row_bytes(K) + fmt_s_plane_offset(1, K));
}
"#;

#[test]
fn every_format_template_renders_the_interface() {
    let tera = tera_with(&["common", "formats"]);
    let dump = std::env::var_os("NINFER_DUMP_FORMAT_SOURCES").map(PathBuf::from);
    for f in registry().iter() {
        let path = f.template_path();
        assert!(
            templates_dir().join(&path).is_file(),
            "format {} has no template {path}",
            f.name
        );
        let mut ctx = tera::Context::new();
        ctx.insert("fmt", f);
        let src = tera
            .render(&path, &ctx)
            .unwrap_or_else(|e| panic!("{path}: {e:?}"));
        for needle in [
            "fmt_decode_group(",
            "fmt_dot_group(",
            "fmt_q_row_bytes(",
            "fmt_s_row_bytes(",
            "#define FMT_GROUP",
        ] {
            assert!(src.contains(needle), "{path} lacks {needle}");
        }
        assert!(
            !src.contains("{{") && !src.contains("{%"),
            "{path}: unrendered Tera tag"
        );
        assert!(
            !src.contains("#include"),
            "{path}: device code must be header-free"
        );
        assert!(!src.contains("#pragma once"), "{path}: use include guards");
        match f.kind {
            FormatKind::SymInt => {
                assert!(
                    src.contains(&format!("#define FMT_BITS {}", f.bits)),
                    "{path}"
                );
                assert!(
                    src.contains(&format!("#define FMT_GROUP {}", f.group)),
                    "{path}"
                );
            }
            FormatKind::Affine => assert!(
                src.contains(&format!("#define FMT_GROUP {}", f.group)),
                "{path}"
            ),
            _ => {}
        }
        // Rendering twice in one translation unit is harmless (include guards).
        let twice = format!("{src}\n{src}");
        assert_eq!(twice.matches("fmt_decode_group(const").count(), 2);
        if let Some(dir) = &dump {
            write(dir, &format!("{}.cu", f.name), &format!("{src}\n{PROBE}"));
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}
