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

/// A kernel that exercises the interface: one thread per (row, group) of an `[N, K]` payload
/// decodes its group into `out[N*K]` and dots it with `x[K]` into `dots[N*K/FMT_GROUP]`,
/// finding the rows through the template's own plane-offset functions.
const PROBE: &str = r#"
extern "C" __global__ void probe(const u8* w, const float* x, float* out, float* dots, int N, int K) {
    const int groups = K / FMT_GROUP;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= N * groups) return;
    const int row = t / groups, g = t % groups;
    const u8* q = w + (long long)row * fmt_q_row_bytes(K);
    const u8* s = w + fmt_s_plane_offset(N, K) + (long long)row * fmt_s_row_bytes(K);
    float v[FMT_GROUP];
    fmt_decode_group(q, s, g, v);
    for (int i = 0; i < FMT_GROUP; ++i) out[(long long)row * K + g * FMT_GROUP + i] = v[i];
    dots[t] = fmt_dot_group(q, s, g, x + g * FMT_GROUP);
}
"#;

/// For the GPU check: a random `[N, K]` payload of `f`, the host's decoding of it, and `x`.
fn dump_probe_data(dir: &Path, f: &ninfer::formats::Format) {
    use ninfer::formats::{decode, encode};
    let (n, k) = (5, 512);
    let mut st = 0x9e37_79b9u32 ^ f.name.len() as u32;
    let mut rnd = || {
        st ^= st << 13;
        st ^= st >> 17;
        st ^= st << 5;
        (st % 20001) as f32 / 10000.0 - 1.0
    };
    let w: Vec<f32> = (0..n * k)
        .map(|i| rnd() * if i % 97 == 0 { 8.0 } else { 1.0 })
        .collect();
    let x: Vec<f32> = (0..k).map(|_| rnd()).collect();
    let p = encode(f, &w, n, k).unwrap();
    let y = decode(f, &p, n, k).unwrap();
    let le = |v: &[f32]| v.iter().flat_map(|a| a.to_le_bytes()).collect::<Vec<u8>>();
    std::fs::write(dir.join(format!("{}.payload", f.name)), &p).unwrap();
    std::fs::write(dir.join(format!("{}.decoded", f.name)), le(&y)).unwrap();
    std::fs::write(dir.join(format!("{}.x", f.name)), le(&x)).unwrap();
    write(
        dir,
        &format!("{}.json", f.name),
        &format!("{{\"n\": {n}, \"k\": {k}}}"),
    );
}

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
            dump_probe_data(dir, f);
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}
