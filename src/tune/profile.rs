//! Tuning profiles (DESIGN.md section 5): `tuning/<device>.toml` maps shape keys to the kernel
//! entry that won on one device fingerprint. A profile is trusted only where its fingerprint
//! id matches the running device; otherwise the built-in heuristics serve, with one notice.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::bucket::ShapeKey;
use super::fingerprint::Fingerprint;

/// The schema version this build reads and writes.
pub const SCHEMA: u32 = 1;

const SUGGESTION: &str =
    "using the built-in heuristics (run `ninfer tune` to make a profile for this device)";

/// The `[device]` table: the fingerprint fields and their id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceTable {
    pub id: String,
    pub name: String,
    pub compute_capability: [u32; 2],
    pub sm_count: u32,
    pub nvrtc_version: [i32; 2],
    pub template_set_hash: String,
}

impl DeviceTable {
    pub fn of(fp: &Fingerprint) -> Self {
        DeviceTable {
            id: fp.id(),
            name: fp.name.clone(),
            compute_capability: [fp.compute_capability.0, fp.compute_capability.1],
            sm_count: fp.sm_count,
            nvrtc_version: [fp.nvrtc_version.0, fp.nvrtc_version.1],
            template_set_hash: fp.template_set_hash.clone(),
        }
    }

    /// The fingerprint the fields describe (its id may differ from `id` if edited by hand).
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            name: self.name.clone(),
            compute_capability: (self.compute_capability[0], self.compute_capability[1]),
            sm_count: self.sm_count,
            nvrtc_version: (self.nvrtc_version[0], self.nvrtc_version[1]),
            template_set_hash: self.template_set_hash.clone(),
        }
    }
}

/// One `[[route]]`: the winner for one shape key, with the default it was measured against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// A `ShapeKey` in its string form, e.g. `linear/t8/n17408/k5120`.
    pub key: String,
    /// The kernel entry chosen.
    pub entry: String,
    /// Its median time in microseconds.
    pub median_us: f64,
    /// The entry the heuristics would have used.
    pub default_entry: String,
    /// The default's median in microseconds (`inf` where it failed).
    pub default_us: f64,
    /// How many candidates were timed.
    pub candidates: u32,
    /// Every candidate's median in microseconds, in candidate order (`inf`: failed its
    /// qualification or did not run). Optional: `ninfer tune compare` reads it to tell a
    /// clear choice from one within the noise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub times_us: Vec<f64>,
    /// A hash of the kernel sources its candidates rendered to when they were timed
    /// (`tune::sources`). Optional: with it, a build with another template set keeps this
    /// route where its candidates' sources are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub schema: u32,
    /// A pinned profile is never re-tuned: `save_merged` refuses to overwrite it.
    #[serde(default)]
    pub pinned: bool,
    pub device: DeviceTable,
    #[serde(default, rename = "route")]
    pub routes: Vec<Route>,
}

#[derive(Debug)]
pub enum ProfileError {
    Missing {
        path: PathBuf,
    },
    Io {
        path: PathBuf,
        what: &'static str,
        source: io::Error,
    },
    Toml {
        path: PathBuf,
        message: String,
    },
    Schema {
        path: PathBuf,
        found: Option<i64>,
    },
    BadKey {
        path: PathBuf,
        message: String,
    },
    Pinned {
        path: PathBuf,
    },
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::Missing { path } => {
                write!(f, "there is no tuning profile at {}", path.display())
            }
            ProfileError::Io { path, what, source } => {
                write!(
                    f,
                    "could not {what} the tuning profile {}: {source}",
                    path.display()
                )
            }
            ProfileError::Toml { path, message } => write!(
                f,
                "the tuning profile {} is not valid profile TOML: {}",
                path.display(),
                message.trim_end()
            ),
            ProfileError::Schema {
                path,
                found: Some(v),
            } => write!(
                f,
                "the tuning profile {} has schema {v}, this build reads schema {SCHEMA}",
                path.display()
            ),
            ProfileError::Schema { path, found: None } => write!(
                f,
                "the tuning profile {} has no `schema = {SCHEMA}` line",
                path.display()
            ),
            ProfileError::BadKey { path, message } => {
                write!(
                    f,
                    "the tuning profile {} has a bad route: {message}",
                    path.display()
                )
            }
            ProfileError::Pinned { path } => write!(
                f,
                "the tuning profile {} is pinned (`pinned = true`), so it is never re-tuned; \
                 set `pinned = false` in it or write the new profile elsewhere",
                path.display()
            ),
        }
    }
}

impl std::error::Error for ProfileError {}

impl Profile {
    /// An empty, unpinned profile for `fp`.
    pub fn new(fp: &Fingerprint) -> Self {
        Profile {
            schema: SCHEMA,
            pinned: false,
            device: DeviceTable::of(fp),
            routes: Vec::new(),
        }
    }

    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = fs::read_to_string(path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ProfileError::Missing { path: path.into() },
            _ => ProfileError::Io {
                path: path.into(),
                what: "read",
                source: e,
            },
        })?;
        Self::parse(&text, path)
    }

    /// Parses profile text; `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        let toml_err = |e: toml::de::Error| ProfileError::Toml {
            path: path.into(),
            message: e.to_string(),
        };
        // The schema first, so that a newer file says so instead of listing field errors.
        let table: toml::Table = toml::from_str(text).map_err(toml_err)?;
        match table.get("schema").and_then(|v| v.as_integer()) {
            Some(v) if v == SCHEMA as i64 => {}
            found => {
                return Err(ProfileError::Schema {
                    path: path.into(),
                    found,
                })
            }
        }
        let profile: Profile = toml::from_str(text).map_err(toml_err)?;
        for r in &profile.routes {
            r.key
                .parse::<ShapeKey>()
                .map_err(|message| ProfileError::BadKey {
                    path: path.into(),
                    message,
                })?;
        }
        Ok(profile)
    }

    /// Sets the route for `key`, replacing one with the same key.
    pub fn set_route(&mut self, route: Route) {
        match self.routes.iter_mut().find(|r| r.key == route.key) {
            Some(r) => *r = route,
            None => self.routes.push(route),
        }
    }

    /// Records each route's sources hash as `sources` gives it for the route (`None`: no
    /// hash, e.g. its key has no candidates in this build). Returns how many routes were
    /// stamped. Only for a profile timed on the template set `sources` renders from: the
    /// hash vouches that the route's candidates were those sources.
    pub fn stamp(&mut self, sources: &dyn Fn(&Route) -> Option<String>) -> usize {
        for r in &mut self.routes {
            r.sources = sources(r);
        }
        self.routes.iter().filter(|r| r.sources.is_some()).count()
    }

    /// Keeps the routes whose recorded sources hash equals what `sources` gives for their key
    /// now (a route with no recorded hash is dropped: nothing says what it was timed on).
    /// Returns the keys dropped.
    pub fn carry_over(&mut self, sources: SourcesOf) -> Vec<String> {
        let mut dropped = Vec::new();
        self.routes.retain(|r| {
            let keep = r.sources.is_some() && sources(&r.key) == r.sources;
            if !keep {
                dropped.push(r.key.clone());
            }
            keep
        });
        dropped
    }

    /// Writes this profile to `path` as it is (atomically), pinned or not.
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let text = toml::to_string(self).map_err(|e| ProfileError::Toml {
            path: path.into(),
            message: e.to_string(),
        })?;
        write_atomic(path, |f| f.write_all(text.as_bytes()))
    }

    /// The entry chosen for `key`, if this profile has one.
    pub fn route_for(&self, key: &ShapeKey) -> Option<&str> {
        let key = key.to_string();
        self.routes
            .iter()
            .find(|r| r.key == key)
            .map(|r| r.entry.as_str())
    }

    /// Writes this profile to `path`. Where a profile for the same fingerprint id is already
    /// there, its routes are kept except those this one replaces; anything else there (another
    /// device, another template set, an unreadable file) is replaced. A pinned profile there
    /// is never overwritten. The write goes to a temporary file in the same folder, renamed
    /// over `path`.
    pub fn save_merged(&self, path: &Path) -> Result<(), ProfileError> {
        self.save_merged_carrying(path, &|_| None).map(|_| ())
    }

    /// [`save_merged`](Self::save_merged), and where the profile there is of this device
    /// with another template set, its routes whose recorded sources `sources` still gives
    /// ([`carry_over`](Self::carry_over)) are kept too: re-timing one family after a
    /// template edit does not lose the other families' routes. Returns how many old routes
    /// were carried over this way.
    pub fn save_merged_carrying(
        &self,
        path: &Path,
        sources: SourcesOf,
    ) -> Result<usize, ProfileError> {
        let mut merged = self.clone();
        let mut carried = 0;
        let old_routes = match Profile::load(path) {
            Ok(old) if old.pinned => return Err(ProfileError::Pinned { path: path.into() }),
            Ok(old) if old.device.id == self.device.id => old.routes,
            Ok(mut old)
                if same_device_other_templates(
                    &old.device.fingerprint(),
                    &self.device.fingerprint(),
                ) =>
            {
                old.carry_over(sources);
                carried = old
                    .routes
                    .iter()
                    .filter(|r| self.routes.iter().all(|n| n.key != r.key))
                    .count();
                old.routes
            }
            _ => Vec::new(),
        };
        let mut by_key: BTreeMap<String, Route> =
            old_routes.into_iter().map(|r| (r.key.clone(), r)).collect();
        for r in &self.routes {
            by_key.insert(r.key.clone(), r.clone());
        }
        merged.routes = by_key.into_values().collect();
        merged.save(path)?;
        Ok(carried)
    }
}

/// Writes through `fill` into a temporary file next to `path`, then renames it over `path`:
/// a reader sees the old file or the new one, never a part. On failure the temporary file is
/// removed and `path` is untouched.
fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut fs::File) -> io::Result<()>,
) -> Result<(), ProfileError> {
    let io_err = |what, source| ProfileError::Io {
        path: path.into(),
        what,
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".profile-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| io_err("create a temporary file next to", e))?;
    fill(tmp.as_file_mut()).map_err(|e| io_err("write", e))?;
    tmp.as_file().sync_all().map_err(|e| io_err("flush", e))?;
    tmp.persist(path).map_err(|e| io_err("replace", e.error))?;
    Ok(())
}

/// What serves the routes on this device.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileChoice {
    Use(Profile),
    /// A profile of this device made with another template set, cut to the routes whose
    /// candidates' sources are unchanged ([`Profile::carry_over`]); `notice` says how many
    /// were kept and which families lost routes.
    Carried {
        profile: Profile,
        notice: String,
    },
    Heuristics {
        notice: String,
    },
}

/// The sources hash of a route key in this build (`tune::sources::current_sources`), or a
/// stand-in for tests; `None`: the key has no candidates here.
pub type SourcesOf<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Picks the profile for `current`: the one at `override_path` (`--profile PATH`) if given,
/// else the first `*.toml` in `dir` (by file name) whose fingerprint id matches. Profiles for
/// another device or template set, and unreadable ones, are named in the notice.
pub fn select(current: &Fingerprint, dir: &Path, override_path: Option<&Path>) -> ProfileChoice {
    select_in(current, &[dir.to_path_buf()], override_path, &|_| None).0
}

/// [`select`] over several folders searched in order (the first match wins; a folder that
/// does not exist is skipped). Also returns the path of the profile chosen. Where no
/// profile matches, the first one of this device that differs only in the template set and
/// records its routes' sources is carried over ([`Profile::carry_over`] with `sources`), if
/// any of its routes survive.
pub fn select_in(
    current: &Fingerprint,
    dirs: &[PathBuf],
    override_path: Option<&Path>,
    sources: SourcesOf,
) -> (ProfileChoice, Option<PathBuf>) {
    let paths: Vec<PathBuf> = match override_path {
        Some(p) => vec![p.to_path_buf()],
        None => dirs.iter().flat_map(|d| profiles_in(d)).collect(),
    };
    if paths.is_empty() {
        let places: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let notice = match places.len() {
            0 => format!("no tuning profile was looked for; {SUGGESTION}"),
            1 => format!("no tuning profile in {}; {SUGGESTION}", places[0]),
            _ => format!("no tuning profile in {}; {SUGGESTION}", places.join(", ")),
        };
        return (ProfileChoice::Heuristics { notice }, None);
    }
    let id = current.id();
    let mut reasons = Vec::new();
    let mut carry: Option<(Profile, PathBuf)> = None;
    for path in &paths {
        match Profile::load(path) {
            Err(e) => reasons.push(format!("{e}")),
            Ok(p) => {
                let theirs = p.device.fingerprint();
                if theirs.id() != p.device.id {
                    reasons.push(format!(
                        "{}: its device id {} does not match its own fields (edited by hand?)",
                        path.display(),
                        p.device.id
                    ));
                } else if p.device.id == id {
                    return (ProfileChoice::Use(p), Some(path.clone()));
                } else {
                    let differs = differences(&theirs, current);
                    let stamped = p.routes.iter().any(|r| r.sources.is_some());
                    reasons.push(format!(
                        "{} is for {}, this is {} (differs in {}{})",
                        path.display(),
                        describe(&theirs),
                        describe(current),
                        differs.join(", "),
                        match (differs == ["template set"], stamped) {
                            (true, false) => "; it records no route's sources to carry over",
                            _ => "",
                        }
                    ));
                    if differs == ["template set"] && stamped && carry.is_none() {
                        carry = Some((p, path.clone()));
                    }
                }
            }
        }
    }
    if let Some((mut p, path)) = carry {
        let total = p.routes.len();
        let dropped = p.carry_over(sources);
        if !p.routes.is_empty() {
            let notice = format!(
                "tuning profile {} was made with template set {}..., this build's is {}...: \
                 {} of its {total} routes kept (their candidates' kernel sources are \
                 unchanged){}",
                path.display(),
                short_hash(&p.device.template_set_hash),
                short_hash(&current.template_set_hash),
                p.routes.len(),
                match dropped.is_empty() {
                    true => String::new(),
                    false => format!(
                        ", the others use the built-in heuristics ({}; run `ninfer tune` to re-time them)",
                        dropped_by_family(&dropped)
                    ),
                }
            );
            return (ProfileChoice::Carried { profile: p, notice }, Some(path));
        }
        reasons.push(format!(
            "no route of {} has the kernel sources it was timed on",
            path.display()
        ));
    }
    let notice = format!("ignored {}; {SUGGESTION}", reasons.join("; "));
    (ProfileChoice::Heuristics { notice }, None)
}

/// The first 12 hex digits of a template-set hash, as notices print it.
pub fn short_hash(h: &str) -> String {
    h.chars().take(12).collect()
}

/// `gdn_step 2, linear_exact 1`: the dropped keys counted by family, most first.
fn dropped_by_family(keys: &[String]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for k in keys {
        *counts.entry(super::family_of(k)).or_default() += 1;
    }
    let mut v: Vec<(&str, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(f, n)| format!("{f} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `*.toml` files of `dir`, by file name (none where `dir` cannot be read).
fn profiles_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// One line for a fingerprint: name, compute capability, SMs, NVRTC, template set.
pub fn describe(fp: &Fingerprint) -> String {
    format!(
        "{} (cc {}.{}, {} SMs, NVRTC {}.{}) with template set {}...",
        fp.name,
        fp.compute_capability.0,
        fp.compute_capability.1,
        fp.sm_count,
        fp.nvrtc_version.0,
        fp.nvrtc_version.1,
        short_hash(&fp.template_set_hash)
    )
}

/// Whether `a` and `b` are one device whose profiles differ only in the template set they
/// were made with (the case where routes can be carried over).
pub fn same_device_other_templates(a: &Fingerprint, b: &Fingerprint) -> bool {
    differences(a, b) == ["template set"]
}

pub fn differences(a: &Fingerprint, b: &Fingerprint) -> Vec<&'static str> {
    let mut d = Vec::new();
    if a.name != b.name {
        d.push("device name");
    }
    if a.compute_capability != b.compute_capability {
        d.push("compute capability");
    }
    if a.sm_count != b.sm_count {
        d.push("SM count");
    }
    if a.nvrtc_version != b.nvrtc_version {
        d.push("NVRTC version");
    }
    if a.template_set_hash != b.template_set_hash {
        d.push("template set");
    }
    d
}

/// The deterministic choice among timed candidates. `medians[i]` is candidate i's median time;
/// `None` (or a non-finite or negative time) means it failed qualification or did not run, and
/// counts as infinitely slow. The default is kept unless some candidate's median is below
/// `default_median * (1 - margin)`; among those the fastest wins, ties to the lowest index.
/// If the default failed, the fastest passing candidate wins (ties to the lowest index); if
/// all failed, the default index is returned.
pub fn choose_winner(default: usize, medians: &[Option<f64>], margin: f64) -> usize {
    assert!(
        default < medians.len(),
        "choose_winner: default index {default} is out of range for {} candidates",
        medians.len()
    );
    let time = |i: usize| medians[i].filter(|v| v.is_finite() && *v >= 0.0);
    let fastest_below = |bound: f64| {
        let mut best: Option<(usize, f64)> = None;
        for i in 0..medians.len() {
            if let Some(v) = time(i) {
                // Strictly faster only, so the earlier candidate keeps a tie.
                if v < bound && best.is_none_or(|(_, b)| v < b) {
                    best = Some((i, v));
                }
            }
        }
        best.map(|(i, _)| i)
    };
    match time(default) {
        Some(d) => fastest_below(d * (1.0 - margin)).unwrap_or(default),
        None => fastest_below(f64::INFINITY).unwrap_or(default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_kept_within_margin() {
        let m = [Some(100.0), Some(98.0), Some(97.5)];
        assert_eq!(choose_winner(0, &m, 0.03), 0);
    }

    #[test]
    fn challenger_beyond_margin_wins_fastest() {
        let m = [Some(100.0), Some(90.0), Some(80.0), Some(96.0)];
        assert_eq!(choose_winner(0, &m, 0.03), 2);
        // The default need not be candidate 0.
        assert_eq!(choose_winner(3, &m, 0.03), 2);
    }

    #[test]
    fn ties_go_to_the_lowest_index() {
        let m = [Some(100.0), Some(50.0), Some(50.0)];
        assert_eq!(choose_winner(0, &m, 0.03), 1);
        let m = [None, Some(7.0), Some(7.0)];
        assert_eq!(choose_winner(0, &m, 0.03), 1);
    }

    #[test]
    fn failed_default_gives_fastest_passing() {
        let m = [Some(9.0), None, Some(8.5), None];
        // No margin applies against a failed default: 8.5 beats 9.0 outright.
        assert_eq!(choose_winner(1, &m, 0.03), 2);
        let m = [Some(f64::NAN), Some(3.0)];
        assert_eq!(choose_winner(0, &m, 0.03), 1);
    }

    #[test]
    fn all_failed_keeps_default() {
        assert_eq!(choose_winner(2, &[None, None, None], 0.03), 2);
    }

    #[test]
    fn failed_challengers_never_win() {
        let m = [Some(100.0), None, Some(f64::INFINITY)];
        assert_eq!(choose_winner(0, &m, 0.03), 0);
    }

    #[test]
    fn failed_write_leaves_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        fs::write(&path, "old").unwrap();
        let err = write_atomic(&path, |f| {
            f.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("could not write"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
