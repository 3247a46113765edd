//! Tuning profiles: save/load, merge, atomic and pinned writes, and which profile `select`
//! trusts (a profile with the wrong fingerprint is ignored with a notice; one of this device
//! made with another template set keeps the routes whose candidates' sources are unchanged).

use std::fs;
use std::path::Path;

use ninfer::tune::{
    select, select_in, t_bucket, Fingerprint, Profile, ProfileChoice, Route, ShapeKey,
};

fn h200(templates: &str) -> Fingerprint {
    Fingerprint {
        name: "NVIDIA H200".into(),
        compute_capability: (9, 0),
        sm_count: 132,
        nvrtc_version: (13, 0),
        template_set_hash: templates.into(),
    }
}

fn route(key: &str, entry: &str, us: f64) -> Route {
    Route {
        key: key.into(),
        entry: entry.into(),
        median_us: us,
        default_entry: "gemm_default".into(),
        default_us: 2.0 * us,
        candidates: 4,
        times_us: Vec::new(),
        sources: None,
    }
}

fn profile(fp: &Fingerprint, routes: &[(&str, &str)]) -> Profile {
    let mut p = Profile::new(fp);
    for (k, e) in routes {
        p.set_route(route(k, e, 10.0));
    }
    p
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const K1: &str = "linear/t8/n17408/k5120";
const K2: &str = "linear/t1/n5120/k17408";
const K3: &str = "linear/t64/n4096/k4096";

#[test]
fn buckets_and_keys() {
    assert_eq!(
        [1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65].map(t_bucket),
        [1, 2, 4, 4, 8, 8, 16, 16, 32, 32, 64, 64, 128]
    );
    let key = ShapeKey::new("linear", 6, 17408, 5120);
    assert_eq!(key.to_string(), K1);
    assert_eq!(K1.parse::<ShapeKey>().unwrap(), key);
}

#[test]
fn save_then_load_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nvidia-h200.toml");
    let mut p = profile(&h200("ab12"), &[(K1, "gemm_a"), (K2, "gemm_b")]);
    p.routes[0].default_us = f64::INFINITY; // a failed default is written as `inf`
    p.save_merged(&path).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("schema = 1"), "{text}");
    let back = Profile::load(&path).unwrap();
    // Saved routes are sorted by key.
    let mut want = p.clone();
    want.routes.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(back, want);
    assert_eq!(back.route_for(&K1.parse().unwrap()), Some("gemm_a"));
    assert_eq!(back.route_for(&K3.parse().unwrap()), None);
    assert_eq!(back.device.id, h200("ab12").id());
    // The write left no temporary file behind.
    assert_eq!(file_names(dir.path()), ["nvidia-h200.toml"]);
}

#[test]
fn merge_keeps_other_keys_and_replaces_same_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    let fp = h200("ab12");
    profile(&fp, &[(K1, "old_a"), (K2, "old_b")])
        .save_merged(&path)
        .unwrap();
    profile(&fp, &[(K2, "new_b"), (K3, "new_c")])
        .save_merged(&path)
        .unwrap();
    let p = Profile::load(&path).unwrap();
    let got = |k: &str| p.route_for(&k.parse().unwrap()).map(str::to_string);
    assert_eq!(got(K1).as_deref(), Some("old_a"));
    assert_eq!(got(K2).as_deref(), Some("new_b"));
    assert_eq!(got(K3).as_deref(), Some("new_c"));
    assert_eq!(p.routes.len(), 3);

    // A profile for another fingerprint is replaced, not merged.
    profile(&h200("cd34"), &[(K3, "other")])
        .save_merged(&path)
        .unwrap();
    let p = Profile::load(&path).unwrap();
    assert_eq!(p.routes.len(), 1);
    assert_eq!(p.route_for(&K3.parse().unwrap()), Some("other"));
    assert_eq!(file_names(dir.path()), ["p.toml"]);
}

#[test]
fn pinned_profile_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    let fp = h200("ab12");
    let mut pinned = profile(&fp, &[(K1, "pinned_a")]);
    pinned.pinned = true;
    pinned.save_merged(&path).unwrap();
    let before = fs::read_to_string(&path).unwrap();
    let err = profile(&fp, &[(K1, "new_a")])
        .save_merged(&path)
        .unwrap_err();
    assert!(err.to_string().contains("pinned"), "{err}");
    assert_eq!(fs::read_to_string(&path).unwrap(), before);
    assert_eq!(file_names(dir.path()), ["p.toml"]);
}

#[test]
fn failed_save_leaves_the_old_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("ro");
    fs::create_dir(&sub).unwrap();
    let path = sub.join("p.toml");
    let fp = h200("ab12");
    profile(&fp, &[(K1, "old_a")]).save_merged(&path).unwrap();
    let before = fs::read_to_string(&path).unwrap();
    fs::set_permissions(&sub, fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores directory permissions, so there the read-only directory cannot make the
    // write fail and this sub-check is skipped (the unit test
    // `failed_write_leaves_old_file_and_no_temp` in src/tune/profile.rs covers a failed
    // write without relying on permissions).
    let root_can_write = fs::write(sub.join("probe"), b"").is_ok();
    if !root_can_write {
        let err = profile(&fp, &[(K1, "new_a")])
            .save_merged(&path)
            .unwrap_err();
        assert!(err.to_string().contains("could not"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), before);
        assert_eq!(file_names(&sub), ["p.toml"]);
    }
    fs::set_permissions(&sub, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn load_errors_are_sentences() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Profile::load(&dir.path().join("none.toml")).unwrap_err();
    assert!(
        missing.to_string().contains("there is no tuning profile"),
        "{missing}"
    );

    let bad = dir.path().join("bad.toml");
    fs::write(&bad, "schema = 1\n[device\n").unwrap();
    let e = Profile::load(&bad).unwrap_err();
    assert!(e.to_string().contains("not valid profile TOML"), "{e}");

    let newer = dir.path().join("newer.toml");
    fs::write(&newer, "schema = 2\n").unwrap();
    let e = Profile::load(&newer).unwrap_err();
    assert!(
        e.to_string()
            .contains("schema 2, this build reads schema 1"),
        "{e}"
    );

    let no_schema = dir.path().join("noschema.toml");
    fs::write(&no_schema, "pinned = false\n").unwrap();
    let e = Profile::load(&no_schema).unwrap_err();
    assert!(e.to_string().contains("no `schema = 1`"), "{e}");
}

#[test]
fn select_ignores_a_wrong_fingerprint_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    profile(&h200("ab12ab12ab12ab12"), &[(K1, "gemm_a")])
        .save_merged(&dir.path().join("nvidia-h200.toml"))
        .unwrap();
    let current = h200("cd34cd34cd34cd34");
    match select(&current, dir.path(), None) {
        ProfileChoice::Heuristics { notice } => {
            assert!(
                notice.contains("nvidia-h200.toml is for NVIDIA H200"),
                "{notice}"
            );
            assert!(notice.contains("ab12ab12ab12"), "{notice}");
            assert!(notice.contains("cd34cd34cd34"), "{notice}");
            assert!(notice.contains("differs in template set"), "{notice}");
            assert!(notice.contains("ninfer tune"), "{notice}");
        }
        other => panic!("expected heuristics, got {other:?}"),
    }
    // Another SM count is named too.
    let mut fewer_sms = h200("ab12ab12ab12ab12");
    fewer_sms.sm_count = 114;
    match select(&fewer_sms, dir.path(), None) {
        ProfileChoice::Heuristics { notice } => {
            assert!(notice.contains("differs in SM count"), "{notice}")
        }
        other => panic!("expected heuristics, got {other:?}"),
    }
}

#[test]
fn select_uses_a_matching_profile() {
    let dir = tempfile::tempdir().unwrap();
    let fp = h200("ab12");
    profile(&h200("other"), &[(K1, "wrong")])
        .save_merged(&dir.path().join("a-other.toml"))
        .unwrap();
    profile(&fp, &[(K1, "gemm_a")])
        .save_merged(&dir.path().join("b-h200.toml"))
        .unwrap();
    fs::write(dir.path().join("notes.txt"), "not a profile").unwrap();
    match select(&fp, dir.path(), None) {
        ProfileChoice::Use(p) => assert_eq!(p.route_for(&K1.parse().unwrap()), Some("gemm_a")),
        other => panic!("expected the profile, got {other:?}"),
    }
    // An override is looked at alone.
    let over = dir.path().join("a-other.toml");
    assert!(matches!(
        select(&fp, dir.path(), Some(&over)),
        ProfileChoice::Heuristics { .. }
    ));
    let over = dir.path().join("b-h200.toml");
    assert!(matches!(
        select(&fp, Path::new("/nonexistent"), Some(&over)),
        ProfileChoice::Use(_)
    ));
}

#[test]
fn select_never_panics_on_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let fp = h200("ab12");
    match select(&fp, dir.path(), None) {
        ProfileChoice::Heuristics { notice } => {
            assert!(notice.contains("no tuning profile in"), "{notice}");
            assert!(notice.contains("ninfer tune"), "{notice}");
        }
        other => panic!("{other:?}"),
    }
    fs::write(dir.path().join("corrupt.toml"), "\u{0}[[[ not toml").unwrap();
    fs::write(dir.path().join("badkey.toml"), {
        let mut p = profile(&fp, &[]);
        p.routes.push(route("linear/t3/n1/k1", "x", 1.0));
        toml::to_string(&p).unwrap()
    })
    .unwrap();
    let mut edited = profile(&fp, &[(K1, "x")]);
    edited.device.sm_count = 1; // fields no longer match the stored id
    fs::write(
        dir.path().join("edited.toml"),
        toml::to_string(&edited).unwrap(),
    )
    .unwrap();
    match select(&fp, dir.path(), None) {
        ProfileChoice::Heuristics { notice } => {
            assert!(
                notice.contains("corrupt.toml is not valid profile TOML"),
                "{notice}"
            );
            assert!(notice.contains("badkey.toml has a bad route"), "{notice}");
            assert!(notice.contains("does not match its own fields"), "{notice}");
            assert!(notice.contains("ninfer tune"), "{notice}");
        }
        other => panic!("{other:?}"),
    }
    // A missing override is a notice too.
    match select(&fp, dir.path(), Some(&dir.path().join("gone.toml"))) {
        ProfileChoice::Heuristics { notice } => {
            assert!(notice.contains("there is no tuning profile at"), "{notice}")
        }
        other => panic!("{other:?}"),
    }
}

/// A profile with both families, as `ninfer tune` writes it, round-trips through the file,
/// and the route table maps each key back to this build's kernels.
#[test]
fn round_trip_with_gdn_keys() {
    use ninfer::ops::gdn::{StateType, QWEN36_27B};
    use ninfer::tune::{exact, gdn, RouteTable};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nvidia-h200.toml");
    let fp = h200("ab12");
    let c = gdn::candidates(StateType::F32, &QWEN36_27B, 8);
    let q4 = ninfer::formats::format("q4_g64").unwrap();
    let lin = exact::candidates(q4, 1);
    let mut p = Profile::new(&fp);
    let gkey = gdn::key(StateType::F32, &QWEN36_27B, 8).to_string();
    assert_eq!(gkey, "gdn_step/f32/hk16/hv48/t8/n128/k128");
    p.set_route(Route {
        key: gkey.clone(),
        entry: c[1].spec().entry,
        median_us: 20.5,
        default_entry: c[0].spec().entry,
        default_us: 21.2,
        candidates: c.len() as u32,
        times_us: (0..c.len()).map(|i| 21.2 - (i == 1) as u8 as f64).collect(),
        sources: None,
    });
    p.set_route(route(
        &exact::key(q4, 1, 576, 576).to_string(),
        &lin[1].spec().entry,
        3.0,
    ));
    p.save_merged(&path).unwrap();
    let back = Profile::load(&path).unwrap();
    let mut want = p.clone();
    want.routes.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(back, want);
    let (table, notice) = RouteTable::from_profile(&back, &path);
    assert!(notice.is_none(), "{notice:?}");
    assert_eq!(table.len(), 2);
    assert_eq!(table.gdn(StateType::F32, &QWEN36_27B, 6), Some(c[1].tile));
    assert_eq!(table.exact(q4, 1, 576, 576), Some(lin[1].kernel));
}

/// Every committed profile (`tuning/*.toml`) loads (schema, fingerprint consistent with its
/// own fields, named after its device), and every key is of a family this build knows, at a
/// shape that family can name; which families and keys it holds is up to the run that made
/// it.
#[test]
fn the_committed_profiles_load_and_their_keys_are_known() {
    use ninfer::tune::{a16, attn, exact, family_of, gdn};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tuning");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    let names: Vec<_> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"nvidia-h200.toml".to_string()), "{names:?}");
    assert!(
        names.contains(&"nvidia-h100-80gb-hbm3.toml".to_string()),
        "{names:?}"
    );
    for path in &paths {
        let p = Profile::load(path).unwrap();
        let file = path.file_stem().unwrap().to_string_lossy();
        assert_eq!(file, ninfer::tune::routes::device_slug(&p.device.name));
        assert!(!p.routes.is_empty(), "{file}");
        assert_eq!(p.device.id, p.device.fingerprint().id(), "{file}");
        assert_eq!(p.device.template_set_hash.len(), 64, "a blake3 hex digest");
        for r in &p.routes {
            let key: ShapeKey = r.key.parse().unwrap();
            let known = match family_of(&r.key) {
                f if f == exact::FAMILY => {
                    exact::format_of(&key).is_some() && exact::TILES.contains(&key.t_bucket)
                }
                f if f == a16::FAMILY => a16::format_of(&key).is_some(),
                f if f == gdn::FAMILY => gdn::parse(&key).is_some(),
                f if f == attn::FAMILY => attn::parse(&key).is_some(),
                _ => false,
            };
            assert!(known, "{file}: {}: not a key of a known family", r.key);
            assert!(
                !r.entry.is_empty() && !r.default_entry.is_empty(),
                "{file}: {}",
                r.key
            );
            assert!(
                r.candidates as usize >= r.times_us.len(),
                "{file}: {}",
                r.key
            );
        }
    }
}

/// A profile with attn_split keys round-trips, and the route table maps them back to splits;
/// a key of a family this build does not know is loaded but not taken, with a notice.
#[test]
fn round_trip_with_attn_keys_and_an_unknown_family() {
    use ninfer::ops::attention::{AttnKind, KvType, SMOLLM2};
    use ninfer::tune::{attn, RouteTable};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nvidia-h200.toml");
    let c = attn::candidates(KvType::F32, &SMOLLM2);
    let mut p = Profile::new(&h200("ab12"));
    let akey = attn::key(KvType::F32, &SMOLLM2, 1, 4096).to_string();
    assert_eq!(akey, "attn_split/f32/h9/kv3/t1/n4096/k64");
    p.set_route(Route {
        key: akey,
        entry: c[1].spec().entry,
        median_us: 9.5,
        default_entry: c[0].spec().entry,
        default_us: 11.0,
        candidates: c.len() as u32,
        times_us: vec![11.0, 9.5, 10.0],
        sources: None,
    });
    p.set_route(route("future_family/op/t1/n8/k8", "some_kernel", 1.0));
    p.save_merged(&path).unwrap();
    let back = Profile::load(&path).unwrap();
    assert_eq!(back.routes.len(), 2);
    let (table, notice) = RouteTable::from_profile(&back, &path);
    let notice = notice.expect("the unknown family is reported");
    assert!(
        notice.contains("1 route belong to an op family this build does not tune"),
        "{notice}"
    );
    assert_eq!(table.family_counts(), [(attn::FAMILY, 1)]);
    let AttnKind::Decode { split } = c[1].kind else {
        panic!("decode candidates")
    };
    assert_eq!(table.attn(KvType::F32, &SMOLLM2, 1, 3000), Some(split));
    assert_eq!(table.attn(KvType::F32, &SMOLLM2, 1, 5000), None);
    assert_eq!(table.attn_splits(KvType::F32, &SMOLLM2, 1), [split]);
    // An entry this build does not offer for the key is not taken either.
    let mut stale = back.clone();
    stale.routes[0].entry = "attn_decode_f32_d64_s999".into();
    let (table, notice) = RouteTable::from_profile(&stale, &path);
    assert!(table.is_empty());
    assert!(notice
        .unwrap()
        .contains("name a kernel this build does not offer"));
}

/// A profile of this device made with other templates: the routes recorded with the sources
/// they were timed on that this build still renders are kept, the rest dropped and counted.
#[test]
fn select_carries_over_the_routes_whose_sources_are_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nvidia-h200.toml");
    let mut p = profile(
        &h200("ab12ab12ab12ab12"),
        &[(K1, "gemm_a"), (K2, "gemm_b"), (K3, "gemm_c")],
    );
    let then = |r: &Route| match r.key.as_str() {
        K1 => Some("s1".to_string()),
        K2 => Some("s2".to_string()),
        _ => None,
    };
    assert_eq!(p.stamp(&then), 2, "K3 has no candidates, so no hash");
    p.save_merged(&path).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains("sources = \"s1\""), "{text}");
    // Now K2's candidates render otherwise.
    let now = |key: &str| match key {
        K1 => Some("s1".to_string()),
        K2 => Some("s2-edited".to_string()),
        _ => None,
    };
    let current = h200("cd34cd34cd34cd34");
    match select_in(&current, &[dir.path().to_path_buf()], None, &now) {
        (ProfileChoice::Carried { profile, notice }, Some(at)) => {
            assert_eq!(at, path);
            let keys: Vec<&str> = profile.routes.iter().map(|r| r.key.as_str()).collect();
            assert_eq!(keys, [K1]);
            assert!(notice.contains("1 of its 3 routes kept"), "{notice}");
            assert!(notice.contains("linear 2"), "{notice}");
            assert!(notice.contains("ab12ab12ab12"), "{notice}");
            assert!(notice.contains("cd34cd34cd34"), "{notice}");
        }
        other => panic!("expected a carried profile, got {other:?}"),
    }
    // Nothing survives: the heuristics, and the notice says why.
    let none = |_: &str| Some("other".to_string());
    match select_in(&current, &[dir.path().to_path_buf()], None, &none) {
        (ProfileChoice::Heuristics { notice }, None) => {
            assert!(notice.contains("no route of"), "{notice}")
        }
        other => panic!("expected heuristics, got {other:?}"),
    }
    // Another device is never carried over, whatever the sources.
    let mut fewer_sms = h200("cd34cd34cd34cd34");
    fewer_sms.sm_count = 114;
    match select_in(&fewer_sms, &[dir.path().to_path_buf()], None, &now) {
        (ProfileChoice::Heuristics { notice }, None) => {
            assert!(notice.contains("SM count"), "{notice}")
        }
        other => panic!("expected heuristics, got {other:?}"),
    }
    // The same template set: the profile as it is, every route.
    match select_in(
        &h200("ab12ab12ab12ab12"),
        &[dir.path().to_path_buf()],
        None,
        &now,
    ) {
        (ProfileChoice::Use(p), _) => assert_eq!(p.routes.len(), 3),
        other => panic!("expected the profile, got {other:?}"),
    }
}

/// Re-timing one family after a template edit: the earlier profile's routes of this device
/// whose sources are unchanged stay beside the new ones; the stale ones and any route the
/// new run re-timed are not taken from it. Another device's profile is still replaced.
#[test]
fn save_merged_carrying_keeps_the_unchanged_routes_of_other_templates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nvidia-h200.toml");
    let mut old = profile(
        &h200("ab12ab12ab12ab12"),
        &[(K1, "gemm_a"), (K2, "gemm_b"), (K3, "gemm_c")],
    );
    let then = |r: &Route| Some(format!("s-{}", r.entry));
    assert_eq!(old.stamp(&then), 3);
    old.save_merged(&path).unwrap();
    // K2's candidates now render otherwise; K3 is re-timed by the new run.
    let now = |key: &str| match key {
        K1 => Some("s-gemm_a".to_string()),
        K3 => Some("s-gemm_c".to_string()),
        _ => Some("edited".to_string()),
    };
    let fresh = profile(&h200("cd34cd34cd34cd34"), &[(K3, "gemm_c2")]);
    assert_eq!(fresh.save_merged_carrying(&path, &now).unwrap(), 1);
    let back = Profile::load(&path).unwrap();
    assert_eq!(back.device.id, h200("cd34cd34cd34cd34").id());
    let got: Vec<(&str, &str)> = back
        .routes
        .iter()
        .map(|r| (r.key.as_str(), r.entry.as_str()))
        .collect();
    assert_eq!(got, [(K3, "gemm_c2"), (K1, "gemm_a")]);
    assert_eq!(back.routes[1].sources.as_deref(), Some("s-gemm_a"));

    // The plain merge carries nothing from another template set.
    old.save_merged(&path).unwrap();
    fresh.save_merged(&path).unwrap();
    assert_eq!(Profile::load(&path).unwrap().routes.len(), 1);

    // Nor does carrying from another device, whatever the sources say.
    old.save_merged(&path).unwrap();
    let mut other = h200("cd34cd34cd34cd34");
    other.sm_count = 114;
    let fresh = profile(&other, &[(K3, "gemm_c2")]);
    assert_eq!(fresh.save_merged_carrying(&path, &now).unwrap(), 0);
    assert_eq!(Profile::load(&path).unwrap().routes.len(), 1);
}

/// An unstamped profile of another template set says it has nothing to carry over.
#[test]
fn an_unstamped_profile_of_other_templates_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    profile(&h200("ab12ab12ab12ab12"), &[(K1, "gemm_a")])
        .save_merged(&dir.path().join("nvidia-h200.toml"))
        .unwrap();
    let now = |_: &str| Some("s1".to_string());
    match select_in(
        &h200("cd34cd34cd34cd34"),
        &[dir.path().to_path_buf()],
        None,
        &now,
    ) {
        (ProfileChoice::Heuristics { notice }, None) => {
            assert!(notice.contains("records no route's sources"), "{notice}")
        }
        other => panic!("expected heuristics, got {other:?}"),
    }
}
