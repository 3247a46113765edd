//! The route table the engine runs with: the routes of the profile that matches the device,
//! resolved against this build's candidates, or nothing (the built-in heuristics).
//!
//! Which profile: `--profile PATH` alone when given; none with `--no-profile`; otherwise the
//! first profile whose fingerprint matches in, in order, `$NINFER_PROFILE_DIR`,
//! `<cache>/tuning` (`$NINFER_CACHE_DIR`, else the user's cache folder `ninfer`: where `ninfer
//! tune` writes, so a profile measured on this machine comes before any shipped one),
//! `tuning/` in the current folder, and the `tuning/` folder of the source tree the binary
//! was built from (the committed profiles). See `tuning/README.md`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::formats::Format;
use crate::ops::attention::{AttnDims, KvType};
use crate::ops::gdn::{GdnDims, StateType, Tile};
use crate::ops::linear::LinearTile;
use crate::ops::linear_exact::ExactKernel;

use super::a16;
use super::attn;
use super::bucket::{t_bucket, ShapeKey};
use super::exact;
use super::fingerprint::Fingerprint;
use super::gdn;
use super::profile::{select_in, Profile, ProfileChoice};

/// Where the routes come from, as the command line asks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProfileRequest {
    /// The first matching profile in [`search_dirs`].
    #[default]
    Search,
    /// This file only (`--profile PATH`).
    Path(PathBuf),
    /// No profile: the built-in heuristics, silently (`--no-profile`).
    Off,
}

/// `(format name, column tile, N, K)`.
type ExactKey = (&'static str, u32, usize, usize);

/// `(format name, prefill bucket, N, K)`.
type A16Key = (&'static str, u32, usize, usize);

/// `(state type, lanes bucket, HK, HV, dk, dv)`.
type GdnKey = (StateType, u32, usize, usize, usize, usize);

/// `(cache type, rows bucket, heads, KV heads, head size, context bucket)`.
type AttnKey = (KvType, u32, usize, usize, usize, usize);

/// The routes a profile chose, by family, keyed for a lookup without allocation.
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    exact: HashMap<ExactKey, ExactKernel>,
    /// The bf16-activation tensor-core tile for more than 32 tokens.
    a16: HashMap<A16Key, LinearTile>,
    gdn: HashMap<GdnKey, Tile>,
    /// The decode attention's split (keys per block).
    attn: HashMap<AttnKey, usize>,
    /// The profile they came from (`None`: the heuristics).
    origin: Option<PathBuf>,
    /// Routes of the profile this build did not take.
    skipped: usize,
}

impl RouteTable {
    /// No routes: every op takes the heuristics' choice.
    pub fn heuristics() -> Self {
        Self::default()
    }

    /// The routes of `profile` that this build can serve. Returns the table and, where some
    /// routes are not taken, one sentence that says how many and why.
    pub fn from_profile(profile: &Profile, origin: &Path) -> (Self, Option<String>) {
        let mut table = RouteTable {
            origin: Some(origin.to_path_buf()),
            ..Self::default()
        };
        let mut unknown_family = 0usize;
        let mut unmatched: Vec<String> = Vec::new();
        for r in &profile.routes {
            let Ok(key) = r.key.parse::<ShapeKey>() else {
                unknown_family += 1; // `Profile::parse` already refuses these
                continue;
            };
            if super::family_of(&r.key) == gdn::FAMILY {
                match gdn::tile_for(&key, &r.entry) {
                    Some((state, d, bucket, tile)) => {
                        table
                            .gdn
                            .insert((state, bucket, d.hk, d.hv, d.dk, d.dv), tile);
                    }
                    None => unmatched.push(format!("{} -> {}", r.key, r.entry)),
                }
                continue;
            }
            if super::family_of(&r.key) == attn::FAMILY {
                match attn::parse(&key).and_then(|(kv, d, t, ctx)| {
                    Some((kv, d, t, ctx, attn::split_for(kv, &d, &r.entry)?))
                }) {
                    Some((kv, d, t, ctx, split)) => {
                        table
                            .attn
                            .insert((kv, t, d.n_heads, d.n_kv_heads, d.head_dim, ctx), split);
                    }
                    None => unmatched.push(format!("{} -> {}", r.key, r.entry)),
                }
                continue;
            }
            if super::family_of(&r.key) == a16::FAMILY {
                match a16::format_of(&key).and_then(|f| a16::tile_for(f, &r.entry).map(|t| (f, t)))
                {
                    Some((f, tile)) => {
                        table
                            .a16
                            .insert((f.name.as_str(), key.t_bucket, key.n, key.k), tile);
                    }
                    None => unmatched.push(format!("{} -> {}", r.key, r.entry)),
                }
                continue;
            }
            if !key.op.starts_with(exact::FAMILY) {
                unknown_family += 1;
                continue;
            }
            let tt = key.t_bucket;
            match exact::format_of(&key)
                .filter(|_| exact::TILES.contains(&tt))
                .and_then(|f| exact::kernel_for(f, tt, &r.entry).map(|k| (f, k)))
            {
                Some((f, kernel)) => {
                    table
                        .exact
                        .insert((f.name.as_str(), tt, key.n, key.k), kernel);
                }
                None => unmatched.push(format!("{} -> {}", r.key, r.entry)),
            }
        }
        table.skipped = unknown_family + unmatched.len();
        let mut why = Vec::new();
        if !unmatched.is_empty() {
            why.push(format!(
                "{} name a kernel this build does not offer for their key (e.g. {}), so they use the heuristics; re-run `ninfer tune`",
                plural(unmatched.len(), "route"),
                unmatched[0]
            ));
        }
        if unknown_family > 0 {
            why.push(format!(
                "{} belong to an op family this build does not tune",
                plural(unknown_family, "route")
            ));
        }
        let notice = (!why.is_empty())
            .then(|| format!("tuning profile {}: {}", origin.display(), why.join("; ")));
        (table, notice)
    }

    /// The stream kernel's split for `format` launched with column tile `tt` on an `[n, k]`
    /// weight, where the profile chose one.
    pub fn exact(&self, format: &Format, tt: u32, n: usize, k: usize) -> Option<ExactKernel> {
        if self.exact.is_empty() {
            return None;
        }
        self.exact.get(&(format.name.as_str(), tt, n, k)).copied()
    }

    /// The bf16-activation tensor-core tile for `format` at `t` tokens (more than 32) on an
    /// `[n, k]` weight, where the profile chose one.
    pub fn a16(&self, format: &Format, t: usize, n: usize, k: usize) -> Option<LinearTile> {
        if self.a16.is_empty() || t < a16::MIN_T {
            return None;
        }
        self.a16
            .get(&(format.name.as_str(), a16::bucket(t), n, k))
            .copied()
    }

    /// The GDN decode step's tile for `state` at `d` with `lanes` lanes, where the profile
    /// chose one.
    pub fn gdn(&self, state: StateType, d: &GdnDims, lanes: usize) -> Option<Tile> {
        if self.gdn.is_empty() || lanes == 0 {
            return None;
        }
        self.gdn
            .get(&(state, t_bucket(lanes), d.hk, d.hv, d.dk, d.dv))
            .copied()
    }

    /// The decode attention's split (keys per block) for `kv` at `d` with `rows` query rows
    /// and a grid planned for `max_keys` keys, where the profile chose one.
    pub fn attn(&self, kv: KvType, d: &AttnDims, rows: usize, max_keys: usize) -> Option<usize> {
        if self.attn.is_empty() || rows == 0 {
            return None;
        }
        self.attn
            .get(&(
                kv,
                t_bucket(rows),
                d.n_heads,
                d.n_kv_heads,
                d.head_dim,
                attn::ctx_bucket(max_keys),
            ))
            .copied()
    }

    /// The distinct splits the table names for `kv` at `d` with `rows` rows, at any context
    /// bucket (sorted).
    pub fn attn_splits(&self, kv: KvType, d: &AttnDims, rows: usize) -> Vec<usize> {
        if self.attn.is_empty() || rows == 0 {
            return Vec::new();
        }
        let want = (kv, t_bucket(rows), d.n_heads, d.n_kv_heads, d.head_dim);
        let mut v: Vec<usize> = self
            .attn
            .iter()
            .filter(|(k, _)| (k.0, k.1, k.2, k.3, k.4) == want)
            .map(|(_, &s)| s)
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Routes in the table.
    pub fn len(&self) -> usize {
        self.exact.len() + self.a16.len() + self.gdn.len() + self.attn.len()
    }

    /// Routes in the table per family, in a fixed order (families without routes left out).
    pub fn family_counts(&self) -> Vec<(&'static str, usize)> {
        [
            (exact::FAMILY, self.exact.len()),
            (a16::FAMILY, self.a16.len()),
            (gdn::FAMILY, self.gdn.len()),
            (attn::FAMILY, self.attn.len()),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The profile the routes came from.
    pub fn origin(&self) -> Option<&Path> {
        self.origin.as_deref()
    }

    /// One phrase for logs and bench headers: where the routes come from.
    pub fn describe(&self) -> String {
        match &self.origin {
            Some(p) => format!(
                "tuning profile {} ({}{})",
                p.display(),
                plural(self.len(), "route"),
                if self.skipped > 0 {
                    format!(", {} not taken", self.skipped)
                } else {
                    String::new()
                }
            ),
            None => "built-in heuristics".into(),
        }
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The folders searched for a profile, in order (see the module docs); duplicates dropped.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("NINFER_PROFILE_DIR").filter(|d| !d.is_empty()) {
        v.push(PathBuf::from(d));
    }
    // Where `ninfer tune` writes by default: this machine's own measurements first.
    if let Ok(c) = crate::model::default_model::cache_dir() {
        v.push(c.join("tuning"));
    }
    v.push(PathBuf::from("tuning"));
    v.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("tuning"));
    let mut seen: Vec<PathBuf> = Vec::new();
    v.retain(|d| {
        let id = d.canonicalize().unwrap_or_else(|_| d.clone());
        if seen.contains(&id) {
            false
        } else {
            seen.push(id);
            true
        }
    });
    v
}

/// Where `ninfer tune` writes a device's profile by default: `$NINFER_PROFILE_DIR`, else
/// `<cache>/tuning`, as `<device-slug>.toml`.
pub fn default_profile_path(fp: &Fingerprint) -> Option<PathBuf> {
    let dir = match std::env::var_os("NINFER_PROFILE_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => crate::model::default_model::cache_dir()
            .ok()?
            .join("tuning"),
    };
    Some(dir.join(format!("{}.toml", device_slug(&fp.name))))
}

/// A device name as a file name: lower case, runs of anything but letters and digits as one
/// `-` (`NVIDIA H200` -> `nvidia-h200`).
pub fn device_slug(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.is_empty() && !s.ends_with('-') {
            s.push('-');
        }
    }
    while s.ends_with('-') {
        s.pop();
    }
    if s.is_empty() {
        "device".into()
    } else {
        s
    }
}

/// What the engine runs with, and what to tell the user about it.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub table: RouteTable,
    /// One sentence for stderr: no matching profile, a profile ignored and why, or routes of
    /// the chosen profile that were not taken. `None`: nothing to say.
    pub notice: Option<String>,
}

/// The route table for the device `current` as `request` asks, searching `dirs`.
pub fn resolve(current: &Fingerprint, request: &ProfileRequest, dirs: &[PathBuf]) -> Resolved {
    let override_path = match request {
        ProfileRequest::Off => {
            return Resolved {
                table: RouteTable::heuristics(),
                notice: None,
            }
        }
        ProfileRequest::Path(p) => Some(p.as_path()),
        ProfileRequest::Search => None,
    };
    match select_in(
        current,
        dirs,
        override_path,
        &super::sources::current_sources,
    ) {
        (ProfileChoice::Use(p), Some(path)) => {
            let (table, notice) = RouteTable::from_profile(&p, &path);
            Resolved { table, notice }
        }
        (ProfileChoice::Carried { profile, notice }, Some(path)) => {
            let (table, more) = RouteTable::from_profile(&profile, &path);
            let notice = match more {
                Some(m) => format!("{notice}; {m}"),
                None => notice,
            };
            Resolved {
                table,
                notice: Some(notice),
            }
        }
        (ProfileChoice::Use(_) | ProfileChoice::Carried { .. }, None) => {
            unreachable!("a chosen profile has a path")
        }
        (ProfileChoice::Heuristics { notice }, _) => Resolved {
            table: RouteTable::heuristics(),
            notice: Some(notice),
        },
    }
}

/// Prints `notice` on stderr as `note: ...` once per process (a binary may open the backend
/// more than once).
pub fn print_notice_once(notice: &str) {
    use std::sync::Mutex;
    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.iter().any(|s| s == notice) {
        eprintln!("note: {notice}");
        seen.push(notice.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::profile::Route;

    fn fp(templates: &str) -> Fingerprint {
        Fingerprint {
            name: "Test GPU".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            nvrtc_version: (13, 0),
            template_set_hash: templates.into(),
        }
    }

    fn route(key: &str, entry: &str) -> Route {
        Route {
            key: key.into(),
            entry: entry.into(),
            median_us: 1.0,
            default_entry: entry.into(),
            default_us: 1.0,
            candidates: 2,
            times_us: vec![1.0, 2.0],
            sources: None,
        }
    }

    /// A profile `ninfer tune` wrote on this machine (the cache) is found before the source
    /// tree's committed ones, so a fresh tuning of a card is not shadowed by a shipped
    /// profile of the same device.
    #[test]
    fn this_machines_profiles_come_before_the_shipped_ones() {
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let dirs: Vec<PathBuf> = search_dirs().iter().map(|d| canon(d)).collect();
        let cache = canon(
            &crate::model::default_model::cache_dir()
                .unwrap()
                .join("tuning"),
        );
        let shipped = canon(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tuning"));
        let at = |d: &PathBuf| dirs.iter().position(|x| x == d);
        let (c, s) = (at(&cache), at(&shipped));
        assert!(c.is_some() && s.is_some(), "{dirs:?}");
        assert!(c < s, "the cache's tuning/ first: {dirs:?}");
    }

    #[test]
    fn slugs() {
        assert_eq!(device_slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(
            device_slug("NVIDIA H100 80GB HBM3"),
            "nvidia-h100-80gb-hbm3"
        );
        assert_eq!(device_slug("  A/B  "), "a-b");
        assert_eq!(device_slug("???"), "device");
    }

    #[test]
    fn a_profile_becomes_a_table_of_the_candidates_it_names() {
        let q4 = crate::formats::format("q4_g64").unwrap();
        let q8 = crate::formats::format("q8_g32").unwrap();
        let c1 = exact::candidates(q4, 1);
        let c8 = exact::candidates(q8, 8);
        let mut p = Profile::new(&fp("t"));
        p.set_route(route(
            "linear_exact/q4_g64/t1/n576/k576",
            &c1[1].spec().entry,
        ));
        p.set_route(route(
            "linear_exact/q8_g32/t8/n1536/k576",
            &c8[0].spec().entry,
        ));
        // An entry of another tile, a made-up entry, an unknown family, an unknown format.
        p.set_route(route(
            "linear_exact/q4_g64/t2/n576/k576",
            &c1[1].spec().entry,
        ));
        p.set_route(route("linear_exact/q4_g64/t4/n576/k576", "gemv_made_up"));
        p.set_route(route("attention_split/t1/n8/k128", "anything"));
        p.set_route(route("linear_exact/q9_g99/t1/n576/k576", "anything"));
        let (t, notice) = RouteTable::from_profile(&p, Path::new("x.toml"));
        assert_eq!(t.len(), 2);
        assert_eq!(t.exact(q4, 1, 576, 576), Some(c1[1].kernel));
        assert_eq!(t.exact(q8, 8, 1536, 576), Some(c8[0].kernel));
        assert_eq!(t.exact(q4, 2, 576, 576), None);
        assert_eq!(t.exact(q4, 1, 576, 1536), None, "exact N and K");
        assert_eq!(t.exact(q8, 1, 576, 576), None, "per format");
        let notice = notice.unwrap();
        assert!(
            notice.contains("3 routes name a kernel this build does not offer"),
            "{notice}"
        );
        assert!(notice.contains("1 route belong"), "{notice}");
        assert!(
            t.describe().contains("2 routes, 4 not taken"),
            "{}",
            t.describe()
        );
        assert_eq!(RouteTable::heuristics().describe(), "built-in heuristics");
    }

    #[test]
    fn gdn_routes_resolve_to_registered_tiles_only() {
        use crate::ops::gdn::{Mode, RecurrentRoute, QWEN36_27B, QWEN36_35B_A3B};
        let c8 = gdn::candidates(StateType::F32, &QWEN36_27B, 8);
        let c1 = gdn::candidates(StateType::F16, &QWEN36_35B_A3B, 1);
        let mut p = Profile::new(&fp("t"));
        let k8 = gdn::key(StateType::F32, &QWEN36_27B, 8).to_string();
        p.set_route(route(&k8, &c8[2].spec().entry));
        let k1 = gdn::key(StateType::F16, &QWEN36_35B_A3B, 1).to_string();
        p.set_route(route(&k1, &c1[0].spec().entry));
        // A tile that is no longer registered (bench/gdn run 5 dropped g12s6), and another
        // state type's entry: never trusted.
        let k4 = gdn::key(StateType::F32, &QWEN36_27B, 4).to_string();
        p.set_route(route(&k4, "gdn_step_f32_l16e8r2w8vg12s6_k4"));
        let k2 = gdn::key(StateType::F32, &QWEN36_27B, 2).to_string();
        p.set_route(route(&k2, &c1[1].spec().entry));
        let (t, notice) = RouteTable::from_profile(&p, Path::new("g.toml"));
        assert_eq!(t.len(), 2);
        assert_eq!(t.family_counts(), vec![(gdn::FAMILY, 2)]);
        assert_eq!(t.gdn(StateType::F32, &QWEN36_27B, 8), Some(c8[2].tile));
        assert_eq!(
            t.gdn(StateType::F32, &QWEN36_27B, 5),
            Some(c8[2].tile),
            "bucket 5-8"
        );
        assert_eq!(t.gdn(StateType::F32, &QWEN36_27B, 4), None, "retired tile");
        assert_eq!(t.gdn(StateType::F32, &QWEN36_27B, 2), None, "f16 entry");
        assert_eq!(
            t.gdn(StateType::F16, &QWEN36_27B, 8),
            None,
            "per state type"
        );
        assert_eq!(t.gdn(StateType::F32, &QWEN36_35B_A3B, 8), None, "per dims");
        assert_eq!(t.gdn(StateType::F16, &QWEN36_35B_A3B, 1), Some(c1[0].tile));
        let notice = notice.unwrap();
        assert!(
            notice.contains("2 routes name a kernel this build does not offer"),
            "{notice}"
        );
        assert!(notice.contains("g12s6"), "{notice}");

        // The engine's step route takes the tuned tile at T = 1 only.
        let d = QWEN36_27B;
        let base = RecurrentRoute::choose(Mode::Step, StateType::F32, &d).unwrap();
        let mut r = base;
        gdn::apply(&t, &mut r, &d, 8, 1);
        assert_eq!(r.tile, c8[2].tile);
        assert_eq!((r.mode, r.state, r.kc), (base.mode, base.state, base.kc));
        let mut r = base;
        gdn::apply(&t, &mut r, &d, 8, 2);
        assert_eq!(r, base, "several tokens per lane keep the heuristics");
        let mut r = base;
        gdn::apply(&t, &mut r, &d, 1, 1);
        assert_eq!(r, base, "no route for one lane");
        let mut r = RecurrentRoute {
            tile: c8[3].tile,
            ..base
        };
        gdn::apply(&t, &mut r, &d, 8, 1);
        assert_eq!(r.tile, c8[3].tile, "a route the caller chose is left alone");
        let mut r = base;
        gdn::apply(&RouteTable::heuristics(), &mut r, &d, 8, 1);
        assert_eq!(r, base);
    }

    #[test]
    fn resolve_follows_the_request() {
        let dir = tempfile::tempdir().unwrap();
        let q4 = crate::formats::format("q4_g64").unwrap();
        let entry = exact::candidates(q4, 1)[1].spec().entry;
        let mut p = Profile::new(&fp("good"));
        p.set_route(route("linear_exact/q4_g64/t1/n576/k576", &entry));
        let path = dir.path().join("test-gpu.toml");
        p.save_merged(&path).unwrap();
        let dirs = vec![dir.path().join("missing"), dir.path().to_path_buf()];

        let r = resolve(&fp("good"), &ProfileRequest::Search, &dirs);
        assert_eq!(r.table.len(), 1);
        assert_eq!(r.table.origin(), Some(path.as_path()));
        assert!(r.notice.is_none(), "{:?}", r.notice);

        let r = resolve(&fp("stale"), &ProfileRequest::Search, &dirs);
        assert!(r.table.is_empty() && r.table.origin().is_none());
        let n = r.notice.unwrap();
        assert!(n.contains("differs in template set"), "{n}");
        assert!(n.contains("ninfer tune"), "{n}");

        let r = resolve(&fp("good"), &ProfileRequest::Off, &dirs);
        assert!(r.table.is_empty() && r.notice.is_none());

        let r = resolve(
            &fp("good"),
            &ProfileRequest::Path(path.clone()),
            &[dir.path().join("missing")],
        );
        assert_eq!(r.table.len(), 1);

        let r = resolve(&fp("good"), &ProfileRequest::Search, &dirs[..1]);
        assert!(r.table.is_empty());
        assert!(r.notice.unwrap().contains("no tuning profile in"));
    }
}
