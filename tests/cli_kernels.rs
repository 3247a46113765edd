//! `ninfer kernels` and `ninfer devices` run the way a user runs them. These need NVRTC
//! (scripts/test.sh installs it) and no GPU.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

const ALL_ARCHS: [&str; 8] = [
    "--arch", "sm_80", "--arch", "sm_86", "--arch", "sm_89", "--arch", "sm_90",
];

fn ninfer(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ninfer"))
        .args(args)
        .env("NINFER_CACHE_DIR", cache)
        .env_remove("NINFER_TEMPLATES")
        .output()
        .expect("the ninfer binary runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// "(N) compiled, (M) from the disk cache" from the build summary.
fn counts(stdout: &str) -> (usize, usize) {
    let line = stdout
        .lines()
        .find(|l| l.contains(" compiled, "))
        .unwrap_or_else(|| panic!("no summary line in {stdout}"));
    let num_before = |word: &str| -> usize {
        let head = &line[..line.find(word).unwrap()];
        head.split_whitespace().last().unwrap().parse().unwrap()
    };
    (num_before(" compiled"), num_before(" from the disk cache"))
}

#[test]
fn build_all_for_four_archs_then_again_compiles_nothing_and_is_ten_times_faster() {
    let cache = tempfile::tempdir().unwrap();
    let mut args = vec!["kernels", "build", "--all"];
    args.extend(ALL_ARCHS);

    let t0 = Instant::now();
    let first = ninfer(cache.path(), &args);
    let cold = t0.elapsed();
    let (out, err) = text(&first);
    assert!(first.status.success(), "{out}\n{err}");
    let (compiled, from_disk) = counts(&out);
    assert!(compiled > 0 && from_disk == 0, "{out}");

    let t1 = Instant::now();
    let second = ninfer(cache.path(), &args);
    let warm = t1.elapsed();
    let (out2, err2) = text(&second);
    assert!(second.status.success(), "{out2}\n{err2}");
    assert_eq!(counts(&out2), (0, compiled), "{out2}");
    assert!(
        warm * 10 < cold,
        "a warm build took {warm:?}, not under a tenth of the cold {cold:?}"
    );

    let stats = ninfer(cache.path(), &["kernels", "cache", "stats"]);
    let (sout, _) = text(&stats);
    assert!(sout.contains(&format!("{compiled} kernels")), "{sout}");
    let cleared = ninfer(cache.path(), &["kernels", "cache", "clear"]);
    assert!(cleared.status.success());
    let (cout, _) = text(&ninfer(cache.path(), &["kernels", "stats"]));
    assert!(cout.contains("0 kernels"), "{cout}");
}

#[test]
fn two_processes_share_one_cache_directory() {
    let cache = tempfile::tempdir().unwrap();
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_ninfer"))
            .args(["kernels", "build", "rmsnorm", "--arch", "sm_89"])
            .env("NINFER_CACHE_DIR", cache.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (oa, ob) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(
        oa.status.success() && ob.status.success(),
        "{:?}\n{:?}",
        text(&oa),
        text(&ob)
    );
    let (ca, _) = counts(&text(&oa).0);
    let (cb, _) = counts(&text(&ob).0);
    let total = ninfer::jit::registry::all()
        .iter()
        .filter(|s| s.family == "rmsnorm")
        .count();
    // Racing processes may both compile a kernel, but every kernel ends up committed once.
    assert!(ca + cb >= total, "{ca} + {cb} < {total}");
    let third = ninfer(
        cache.path(),
        &["kernels", "build", "rmsnorm", "--arch", "sm_89"],
    );
    assert_eq!(counts(&text(&third).0), (0, total));
}

#[test]
fn an_unwritable_cache_directory_works_in_memory_and_warns_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let cache = file.join("cache");
    let out = ninfer(
        &cache,
        &[
            "kernels", "build", "rmsnorm", "--arch", "sm_80", "--arch", "sm_90",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stderr.matches("not writable").count(), 1, "{stderr}");
    assert!(stdout.contains("memory only"), "{stdout}");
    let (compiled, _) = counts(&stdout);
    let family = ninfer::jit::registry::all()
        .iter()
        .filter(|s| s.family == "rmsnorm")
        .count();
    assert_eq!(compiled, 2 * family);
}

#[test]
fn keys_are_stable_across_processes() {
    let cache = tempfile::tempdir().unwrap();
    let a = text(&ninfer(
        cache.path(),
        &["kernels", "list", "--keys", "--arch", "sm_90"],
    ))
    .0;
    let b = text(&ninfer(
        cache.path(),
        &["kernels", "list", "--keys", "--arch", "sm_90"],
    ))
    .0;
    assert!(a.lines().count() > 1 && a.contains("rmsnorm_"), "{a}");
    assert_eq!(a, b);
    let c = text(&ninfer(
        cache.path(),
        &["kernels", "list", "--keys", "--arch", "sm_86"],
    ))
    .0;
    assert_ne!(a, c);
}

#[test]
fn bad_usage_is_one_sentence_and_exit_status_two() {
    let cache = tempfile::tempdir().unwrap();
    for args in [
        vec!["kernels", "build"],
        vec!["kernels", "build", "--all", "--arch", "sm90"],
        vec!["kernels", "build", "--all", "--arch", "sm_75"],
        vec!["kernels", "build", "no_such_family", "--arch", "sm_90"],
        vec![
            "kernels",
            "build",
            "rmsnorm",
            "no_such_family",
            "--arch",
            "sm_90",
        ],
        vec![
            "kernels",
            "build",
            "--all",
            "--filter",
            "no_such_entry",
            "--arch",
            "sm_90",
        ],
        vec![
            "kernels", "build", "rmsnorm", "--filter", "linear_", "--arch", "sm_90",
        ],
        vec!["kernels", "render", "no_such_kernel"],
        vec!["kernels", "frobnicate"],
    ] {
        let out = ninfer(cache.path(), &args);
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "{args:?}: {err}"
        );
        assert!(err.starts_with("error"), "{args:?}: {err}");
    }
    // Each says what it could not find: the unknown family, or the filter that matched
    // nothing.
    for (args, names) in [
        (
            vec!["kernels", "build", "rmsnorm", "no_such_family"],
            "family is named no_such_family;",
        ),
        (
            vec!["kernels", "build", "--all", "--filter", "no_such_entry"],
            "of the registry contains any of \"no_such_entry\"",
        ),
        (
            vec!["kernels", "build", "rmsnorm", "--filter", "linear_"],
            "of rmsnorm contains any of \"linear_\"",
        ),
    ] {
        let (_, err) = text(&ninfer(cache.path(), &args));
        assert!(err.contains(names), "{args:?}: {err}");
    }
}

#[test]
fn render_prints_the_source_with_its_entry_point() {
    let cache = tempfile::tempdir().unwrap();
    let list = text(&ninfer(cache.path(), &["kernels", "list"])).0;
    let entry = list
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let out = ninfer(cache.path(), &["kernels", "render", &entry]);
    let (src, _) = text(&out);
    assert!(out.status.success());
    assert!(
        src.contains(&format!("{entry}(")) && src.contains("extern \"C\""),
        "{src}"
    );
    assert!(
        !src.contains("{%") && !src.contains("{{"),
        "unrendered Tera left: {src}"
    );
}

#[test]
fn devices_and_qualify_without_a_gpu_say_so_without_panicking() {
    let cache = tempfile::tempdir().unwrap();
    let out = ninfer(cache.path(), &["devices"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let has_gpu = stdout.contains("GPU 0:");
    assert!(
        has_gpu || stdout.contains("no CUDA driver") || stdout.contains("found no GPU"),
        "{stdout}"
    );
    if !has_gpu {
        let q = ninfer(cache.path(), &["qualify"]);
        let (_, qerr) = text(&q);
        assert_eq!(q.status.code(), Some(1), "{qerr}");
        assert!(
            qerr.starts_with("error: ") && !qerr.contains("panicked"),
            "{qerr}"
        );
    }
}
