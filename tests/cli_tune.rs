//! `ninfer tune` the way a user runs it, without a GPU: `tune check` judges profiles against
//! a device described by flags through the same `tune::resolve` the engine calls at start-up
//! (a profile for another device or template set is ignored with a notice that names the
//! field; a matching one is used, its routes mapped to this build's kernels), `tune
//! --dry-run` lists the keys a model's shapes give, `tune compare` judges two runs, and bad
//! input is refused with a sentence and exit status 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ninfer::tune::{exact, Fingerprint, Profile, Route};

fn ninfer_in(dir: &Path, envs: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ninfer"));
    c.current_dir(dir)
        .args(args)
        .env_remove("NINFER_PROFILE_DIR");
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("the binary runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// This build's template-set hash (what the binary fingerprints with).
fn templates() -> String {
    ninfer::jit::TemplateSet::from_env()
        .unwrap()
        .hash()
        .to_string()
}

/// The device the tests describe by flags: no real GPU has this name, so the profiles
/// committed under tuning/ never match it.
fn device(templates: &str) -> Fingerprint {
    Fingerprint {
        name: "CI Test GPU".into(),
        compute_capability: (9, 0),
        sm_count: 132,
        nvrtc_version: (13, 0),
        template_set_hash: templates.into(),
    }
}

const DEVICE_FLAGS: [&str; 8] = [
    "--device-name",
    "CI Test GPU",
    "--cc",
    "9.0",
    "--sms",
    "132",
    "--nvrtc",
    "13.0",
];

/// A profile for `fp` with one route: a challenger split of the q4_g64 stream kernel at
/// T = 1, as `ninfer tune` writes it.
fn write_profile(fp: &Fingerprint, path: &Path) {
    let q4 = ninfer::formats::format("q4_g64").unwrap();
    let c = exact::candidates(q4, 1);
    let mut p = Profile::new(fp);
    p.set_route(Route {
        key: exact::key(q4, 1, 576, 576).to_string(),
        entry: c[1].spec().entry,
        median_us: 3.0,
        default_entry: c[0].spec().entry,
        default_us: 5.0,
        candidates: c.len() as u32,
        times_us: (0..c.len())
            .map(|i| if i == 1 { 3.0 } else { 5.0 + i as f64 })
            .collect(),
        sources: None,
    });
    p.save_merged(path).unwrap();
}

fn check(dir: &Path, envs: &[(&str, &Path)], profile: Option<&Path>) -> Output {
    let mut args: Vec<&str> = vec!["tune", "check"];
    let p;
    if let Some(path) = profile {
        p = path.to_str().unwrap().to_string();
        args.push(&p);
    }
    args.extend(DEVICE_FLAGS);
    ninfer_in(dir, envs, &args)
}

#[test]
fn a_matching_profile_is_used_and_its_route_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ci-test-gpu.toml");
    write_profile(&device(&templates()), &path);
    let out = check(dir.path(), &[], Some(&path));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("device: CI Test GPU (cc 9.0, 132 SMs, NVRTC 13.0)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("uses tuning profile {} (1 route)", path.display())),
        "{stdout}"
    );
    assert!(!stderr.contains("note:"), "{stderr}");
}

#[test]
fn a_profile_with_the_wrong_fingerprint_is_ignored_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    // Measured with another template set (any kernel template edit changes the hash).
    let stale = dir.path().join("stale.toml");
    write_profile(&device("0123456789abcdef-old-templates"), &stale);
    let out = check(dir.path(), &[], Some(&stale));
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("uses the built-in heuristics"), "{stdout}");
    assert!(stderr.contains("note: ignored"), "{stderr}");
    assert!(stderr.contains("stale.toml is for CI Test GPU"), "{stderr}");
    assert!(
        stderr.contains("(differs in template set; it records no route's sources to carry over)"),
        "{stderr}"
    );
    assert!(stderr.contains("run `ninfer tune`"), "{stderr}");
    assert!(
        stderr.contains("error: no tuning profile applies"),
        "{stderr}"
    );

    // The same profile stamped with the sources its route's candidates render to in this
    // build: carried over, with a notice that counts what was kept.
    let mut p = Profile::load(&stale).unwrap();
    let stamped = p.stamp(&|r: &Route| {
        let key = r.key.parse().unwrap();
        ninfer::tune::sources::sources_hash(ninfer::jit::Jit::global().unwrap(), &key)
    });
    assert_eq!(stamped, 1);
    p.save(&stale).unwrap();
    let out = check(dir.path(), &[], Some(&stale));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "uses tuning profile {} (1 route)",
            stale.display()
        )),
        "{stdout}"
    );
    assert!(stderr.contains("1 of its 1 routes kept"), "{stderr}");
    // Stamped with sources this build does not render: nothing to carry.
    let text_now = std::fs::read_to_string(&stale).unwrap();
    let sources = p.routes[0].sources.clone().unwrap();
    std::fs::write(&stale, text_now.replace(&sources, "0000000000000000")).unwrap();
    let out = check(dir.path(), &[], Some(&stale));
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("has the kernel sources it was timed on"),
        "{stderr}"
    );

    // Another SM count: the field is named.
    let other = dir.path().join("other.toml");
    let mut fp = device(&templates());
    fp.sm_count = 114;
    write_profile(&fp, &other);
    let out = check(dir.path(), &[], Some(&other));
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("(differs in SM count)"), "{stderr}");

    // A profile whose fields were edited by hand no longer matches its own id.
    let edited = dir.path().join("edited.toml");
    write_profile(&device(&templates()), &edited);
    let t = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, t.replace("sm_count = 132", "sm_count = 131")).unwrap();
    let out = check(dir.path(), &[], Some(&edited));
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("does not match its own fields"), "{stderr}");
}

#[test]
fn the_search_skips_wrong_profiles_and_takes_the_matching_one() {
    let work = tempfile::tempdir().unwrap();
    let profiles: PathBuf = work.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    write_profile(&device("stale"), &profiles.join("a-stale.toml"));
    let envs = [("NINFER_PROFILE_DIR", profiles.as_path())];
    let out = check(work.path(), &envs, None);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("searched: {}", profiles.display())),
        "{stdout}"
    );
    assert!(
        stderr.contains("a-stale.toml is for CI Test GPU"),
        "{stderr}"
    );
    assert!(stderr.contains("differs in template set"), "{stderr}");

    // ./tuning is searched after $NINFER_PROFILE_DIR.
    std::fs::create_dir(work.path().join("tuning")).unwrap();
    write_profile(
        &device(&templates()),
        &work.path().join("tuning/ci-test-gpu.toml"),
    );
    let out = check(work.path(), &envs, None);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("uses tuning profile tuning/ci-test-gpu.toml (1 route)"),
        "{stdout}"
    );

    // A matching profile in the cache's tuning/ (where `ninfer tune` writes) is taken
    // before ./tuning's, which stands for the committed ones.
    let cache = work.path().join("cache");
    std::fs::create_dir_all(cache.join("tuning")).unwrap();
    write_profile(
        &device(&templates()),
        &cache.join("tuning/ci-test-gpu.toml"),
    );
    let out = check(work.path(), &[("NINFER_CACHE_DIR", cache.as_path())], None);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let taken = cache.join("tuning/ci-test-gpu.toml");
    assert!(
        stdout.contains(&format!(
            "uses tuning profile {} (1 route)",
            taken.display()
        )),
        "{stdout}"
    );
}

#[test]
fn dry_run_lists_the_keys_of_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let out = ninfer_in(
        dir.path(),
        &[],
        &[
            "tune",
            "--synthetic",
            "smollm2-135m",
            "--weights",
            "q8_g32",
            "--tokens",
            "1,5",
            "--dry-run",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for key in [
        "linear_exact/q8_g32/t1/n960/k576",
        "linear_exact/q8_g32/t8/n960/k576",
        "linear_exact/q8_g32/t1/n49152/k576",
        "linear_exact/q8_g32/t1/n576/k1536",
        // The attention layers' split at each default context bucket.
        "attn_split/f32/h9/kv3/t1/n512/k64",
        "attn_split/f32/h9/kv3/t1/n4096/k64",
        "attn_split/f32/h9/kv3/t1/n32768/k64",
    ] {
        assert!(stdout.contains(key), "{key} in\n{stdout}");
    }
    assert!(!stdout.contains("/t2/"), "{stdout}");
    assert!(stdout.contains("17 keys"), "{stdout}");
    assert!(stderr.contains("7 linear shapes in q8_g32"), "{stderr}");
    assert!(
        stderr.contains("attention layers nH=9 nKV=3 hd=64"),
        "{stderr}"
    );
}

#[test]
fn dry_run_lists_linear_a16_keys_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let out = ninfer_in(
        dir.path(),
        &[],
        &[
            "tune",
            "--synthetic",
            "smollm2-135m",
            "--family",
            "linear_a16",
            "--prefill-tokens",
            "40,64,3000",
            "--dry-run",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for key in [
        "linear_a16/q4_g64/t64/n960/k576",
        "linear_a16/q4_g64/t4096/n960/k576",
        "linear_a16/q4_g64/t4096/n576/k1536",
    ] {
        assert!(stdout.contains(key), "{key} in\n{stdout}");
    }
    assert!(
        !stdout.contains("/t256/") && !stdout.contains("linear_exact/"),
        "{stdout}"
    );
    assert!(!stdout.contains("attn_split/"), "{stdout}");
    // The heuristics' tile is listed as the default: q4_g64 takes the warpgroup kernel
    // (which runs as the pipelined one off Hopper).
    let line = stdout
        .lines()
        .find(|l| l.starts_with("linear_a16/q4_g64/t64/n960/k576"))
        .unwrap();
    assert!(line.ends_with(" wgmma_256x128_g4"), "{line}");
    assert!(
        stderr.contains("linear shapes for linear_a16 in q4_g64"),
        "{stderr}"
    );

    // Opt-in: not in the default families.
    let out = ninfer_in(
        dir.path(),
        &[],
        &["tune", "--synthetic", "smollm2-135m", "--dry-run"],
    );
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert!(!stdout.contains("linear_a16/"), "{stdout}");

    let out = ninfer_in(
        dir.path(),
        &[],
        &[
            "tune",
            "--synthetic",
            "smollm2-135m",
            "--family",
            "linear_a16",
            "--prefill-tokens",
            "32",
            "--dry-run",
        ],
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--prefill-tokens 32"), "{stderr}");
}

#[test]
fn dry_run_lists_gdn_keys_of_a_gdn_model_only() {
    let dir = tempfile::tempdir().unwrap();
    let out = ninfer_in(
        dir.path(),
        &[],
        &[
            "tune",
            "--synthetic",
            "qwen3.6-27b,qwen3.6-35b-a3b",
            "--family",
            "gdn_step",
            "--lanes",
            "1,8",
            "--dry-run",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for key in [
        "gdn_step/f32/hk16/hv48/t1/n128/k128",
        "gdn_step/f16/hk16/hv48/t8/n128/k128",
        "gdn_step/f32/hk16/hv32/t8/n128/k128",
        "gdn_step/f16/hk16/hv32/t1/n128/k128",
    ] {
        assert!(stdout.contains(key), "{key} in\n{stdout}");
    }
    assert!(!stdout.contains("linear_exact/"), "{stdout}");
    assert!(stdout.contains("8 keys"), "{stdout}");
    // One lane: the per-tile kernel is the default; eight: the split step.
    let default_of = |key: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().last())
            .unwrap()
            .to_string()
    };
    assert_eq!(default_of("gdn_step/f32/hk16/hv48/t1/"), "l16e8r2w8v");
    assert_eq!(default_of("gdn_step/f32/hk16/hv48/t8/"), "l16e8r2w2vx");
    assert!(
        stderr.contains("GDN layers HK=16 HV=48 dk=128 dv=128"),
        "{stderr}"
    );

    // Both families by default; a model without GDN layers adds no gdn_step key.
    let out = ninfer_in(
        dir.path(),
        &[],
        &["tune", "--synthetic", "smollm2-135m", "--dry-run"],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("gdn_step"), "{stdout}");
    let out = ninfer_in(
        dir.path(),
        &[],
        &[
            "tune",
            "--synthetic",
            "qwen3.6-27b",
            "--lanes",
            "2",
            "--dry-run",
        ],
    );
    let (stdout, _) = text(&out);
    assert!(stdout.contains("linear_exact/q4_g64/t1/n"), "{stdout}");
    assert!(
        stdout.contains("gdn_step/f16/hk16/hv48/t2/n128/k128"),
        "{stdout}"
    );
}

#[test]
fn a_gdn_route_for_a_retired_tile_is_ignored_with_a_notice() {
    use ninfer::ops::gdn::{StateType, QWEN36_27B};
    use ninfer::tune::gdn;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ci-test-gpu.toml");
    write_profile(&device(&templates()), &path);
    let mut p = Profile::load(&path).unwrap();
    let c = gdn::candidates(StateType::F32, &QWEN36_27B, 8);
    let gdn_route = |lanes: usize, entry: String| Route {
        key: gdn::key(StateType::F32, &QWEN36_27B, lanes).to_string(),
        entry,
        median_us: 20.0,
        default_entry: c[0].spec().entry,
        default_us: 21.0,
        candidates: c.len() as u32,
        times_us: Vec::new(),
        sources: None,
    };
    p.set_route(gdn_route(8, c[1].spec().entry));
    // bench/gdn run 5 dropped the g12s6 tile: a profile that names it is not trusted.
    p.set_route(gdn_route(4, "gdn_step_f32_l16e8r2w8vg12s6_k4".into()));
    p.save_merged(&path).unwrap();
    let out = check(dir.path(), &[], Some(&path));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("(2 routes, 1 not taken)"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("routes by family: linear_exact 1, gdn_step 1"),
        "{stdout}"
    );
    assert!(
        stderr.contains("1 route name a kernel this build does not offer for their key"),
        "{stderr}"
    );
    assert!(
        stderr.contains("gdn_step/f32/hk16/hv48/t4/n128/k128 -> gdn_step_f32_l16e8r2w8vg12s6_k4"),
        "{stderr}"
    );
}

#[test]
fn bad_input_is_one_sentence_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            vec![
                "tune",
                "--synthetic",
                "smollm2-135m",
                "--tokens",
                "9",
                "--dry-run",
            ],
            "1 to 8",
        ),
        (
            vec![
                "tune",
                "--synthetic",
                "smollm2-135m",
                "--weights",
                "bf16",
                "--dry-run",
            ],
            "no tuned route serves bf16",
        ),
        (vec!["tune", "--synthetic", "nope", "--dry-run"], "nope"),
        (
            vec![
                "tune",
                "--synthetic",
                "smollm2-135m",
                "--family",
                "gdn_step",
                "--dry-run",
            ],
            "no GDN layer",
        ),
        (
            vec![
                "tune",
                "--synthetic",
                "qwen3.6-27b",
                "--lanes",
                "0",
                "--dry-run",
            ],
            "--lanes 0",
        ),
        (
            vec![
                "tune",
                "--synthetic",
                "qwen3.6-27b",
                "--gdn-state",
                "bf16",
                "--dry-run",
            ],
            "--gdn-state bf16",
        ),
        (
            vec![
                "tune",
                "--synthetic",
                "qwen3.6-27b",
                "--family",
                "attn",
                "--dry-run",
            ],
            "--family attn",
        ),
        (vec!["tune", "--shape", "12", "--dry-run"], "--shape 12"),
        (
            vec![
                "tune",
                "--synthetic",
                "smollm2-135m",
                "--contexts",
                "0",
                "--dry-run",
            ],
            "--contexts 0",
        ),
        (
            vec![
                "tune",
                "--synthetic",
                "smollm2-135m",
                "--kv",
                "f64",
                "--dry-run",
            ],
            "--kv f64",
        ),
        (
            vec![
                "tune",
                "check",
                "--device-name",
                "X",
                "--cc",
                "nine",
                "--sms",
                "1",
                "--nvrtc",
                "13.0",
            ],
            "--cc nine",
        ),
    ] {
        let out = ninfer_in(dir.path(), &[], &args);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}\n{stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn compare_judges_two_runs() {
    let dir = tempfile::tempdir().unwrap();
    let fp = device("t");
    let q4 = ninfer::formats::format("q4_g64").unwrap();
    let c = exact::candidates(q4, 1);
    assert!(c.len() >= 3, "the test needs three candidates at T = 1");
    // Run A and run B: the same picks, B 1% slower across the board; 24 keys, so that the
    // one key whose timings differ in run C stays out of the noise estimate.
    let run = |scale: f64, path: &Path, swap_clear: bool| {
        let mut p = Profile::new(&fp);
        for i in 0..24usize {
            let n = 64 * (i + 1);
            let mut times: Vec<f64> = (0..c.len()).map(|j| 10.0 + j as f64 + i as f64).collect();
            let w = if i == 0 {
                // A clear winner at candidate 1 (or 2 in the swapped run).
                let w = if swap_clear { 2 } else { 1 };
                times[w] = 5.0;
                w
            } else {
                0
            };
            let times: Vec<f64> = times.iter().map(|t| t * scale).collect();
            p.set_route(Route {
                key: exact::key(q4, 1, n, 576).to_string(),
                entry: c[w].spec().entry,
                median_us: times[w],
                default_entry: c[0].spec().entry,
                default_us: times[0],
                candidates: c.len() as u32,
                times_us: times,
                sources: None,
            });
        }
        p.save_merged(path).unwrap();
    };
    let (a, b, swapped) = (
        dir.path().join("a.toml"),
        dir.path().join("b.toml"),
        dir.path().join("swapped.toml"),
    );
    run(1.0, &a, false);
    run(1.01, &b, false);
    run(1.0, &swapped, true);
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let out = ninfer_in(dir.path(), &[], &["tune", "compare", &s(&a), &s(&b)]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("same winner 24"), "{stdout}");
    assert!(stdout.contains("different beyond it 0"), "{stdout}");
    assert!(
        stdout.contains("50.0%"),
        "the clear winner halves the time: {stdout}"
    );

    let out = ninfer_in(dir.path(), &[], &["tune", "compare", &s(&a), &s(&swapped)]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("DIFFER beyond noise"), "{stdout}");
    assert!(
        stderr.contains("disagree beyond the noise at 1 keys"),
        "{stderr}"
    );
}

#[test]
fn a_pinned_profile_is_never_re_tuned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pinned.toml");
    write_profile(&device(&templates()), &path);
    let unpinned = std::fs::read_to_string(&path).unwrap();
    let pinned = unpinned.replace("pinned = false", "pinned = true");
    assert_ne!(pinned, unpinned, "the profile names its pinned flag");
    std::fs::write(&path, &pinned).unwrap();
    let out = ninfer_in(
        dir.path(),
        &[],
        &[
            "tune",
            "--synthetic",
            "smollm2-135m",
            "--out",
            path.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("is pinned (`pinned = true`)"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), pinned);
}
