//! What a tuned route's choice rests on in the template set: the CUDA sources its candidates
//! render to. A profile records, beside each route, a hash of those sources (`sources`), so
//! that a build whose template set differs can still trust the routes whose candidates did
//! not change (a GDN kernel's edit says nothing about which GEMV split wins), and drop the
//! others to the heuristics. DESIGN.md section 5 keys a whole profile to the template set;
//! this narrows that to what each choice was measured on.
//!
//! The hash covers, in candidate order, each candidate's rendered source (which names the
//! entry and its params and inlines every template it includes). The candidate list itself
//! comes from the family's module, so a build that adds or removes a candidate changes the
//! hash too: the choice was made among other kernels.

use crate::jit::{Jit, KernelSpec};

use super::bucket::ShapeKey;
use super::profile::Route;
use super::{a16, attn, exact, family_of, gdn};

/// The kernels timed for `key`, in candidate order; `None` for a key this build has no
/// family or no candidates for.
pub fn candidate_specs(key: &ShapeKey) -> Option<Vec<KernelSpec>> {
    let specs: Vec<KernelSpec> = match family_of(&key.op) {
        exact::FAMILY => {
            let format = exact::format_of(key)?;
            exact::candidates(format, key.t_bucket)
                .iter()
                .map(|r| r.spec())
                .collect()
        }
        a16::FAMILY => {
            let format = a16::format_of(key)?;
            a16::candidates(format).iter().map(|r| r.spec()).collect()
        }
        gdn::FAMILY => {
            let (state, d, bucket) = gdn::parse(key)?;
            gdn::candidates(state, &d, bucket as usize)
                .iter()
                .map(|r| r.spec())
                .collect()
        }
        attn::FAMILY => {
            let (kv, d, _, _) = attn::parse(key)?;
            attn::candidates(kv, &d).iter().map(|r| r.spec()).collect()
        }
        _ => return None,
    };
    (!specs.is_empty()).then_some(specs)
}

/// The sources hash of `key` in `jit`'s template set: the first 16 hex digits of blake3 over
/// the candidates' rendered sources without their blank lines, each length-prefixed. `None`
/// where the key has no candidates here or one of them does not render (then no recorded
/// hash can match).
pub fn sources_hash(jit: &Jit, key: &ShapeKey) -> Option<String> {
    let specs = candidate_specs(key)?;
    let mut h = blake3::Hasher::new();
    for spec in &specs {
        let source = without_blank_lines(&jit.render(spec).ok()?);
        h.update(&(source.len() as u64).to_le_bytes());
        h.update(source.as_bytes());
    }
    Some(h.finalize().to_hex()[..16].to_string())
}

/// `source` without its blank (empty or whitespace-only) lines, which the compiler never
/// sees but template refactors move about (a Tera include leaves one where its tag stood).
/// A blank line that ends a backslash-continued line is kept: it ends a macro.
fn without_blank_lines(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut continued = false;
    for line in source.lines() {
        if continued || !line.trim().is_empty() {
            out.push_str(line);
            out.push('\n');
        }
        continued = line.trim_end().ends_with('\\');
    }
    out
}

/// The sources hash to stamp on `route`, a route of a profile timed with this process's
/// template set: `None` where its candidates here are not the ones it records (another
/// count, or its entry or default not among them), since then this build's candidate lists
/// changed after the timing and the hash would vouch for kernels that were not timed.
pub fn stamp_for(route: &Route) -> Option<String> {
    let key = route.key.parse::<ShapeKey>().ok()?;
    let specs = candidate_specs(&key)?;
    let has = |entry: &str| specs.iter().any(|s| s.entry == entry);
    let same =
        specs.len() == route.candidates as usize && has(&route.entry) && has(&route.default_entry);
    same.then(|| sources_hash(Jit::global().ok()?, &key))?
}

/// [`sources_hash`] of a key in its string form, in this process's template set; `None` where
/// the key does not parse, the templates do not load, or as [`sources_hash`].
pub fn current_sources(key: &str) -> Option<String> {
    let key = key.parse::<ShapeKey>().ok()?;
    sources_hash(Jit::global().ok()?, &key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jit::{DiskCache, TemplateSet};

    fn exact_key() -> ShapeKey {
        exact::key(crate::formats::format("q4_g64").unwrap(), 1, 17408, 5120)
    }

    /// A Jit over the embedded templates with `edit` applied (`Some(text)`: the new text of
    /// that file).
    fn jit_with(edit: impl Fn(&str, &str) -> Option<String>) -> Jit {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in TemplateSet::embedded().files() {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, edit(rel, text).unwrap_or_else(|| text.to_string())).unwrap();
        }
        let set = TemplateSet::from_dir(dir.path()).unwrap();
        Jit::new(set, DiskCache::memory_only()).unwrap()
    }

    #[test]
    fn blank_lines_do_not_count_unless_they_end_a_macro() {
        let a = "#define A 1\nint x;\n";
        assert_eq!(without_blank_lines("\n#define A 1\n   \n\nint x;\n\n"), a);
        assert_eq!(without_blank_lines(a), a);
        // The blank line ends the macro; without it `int x;` would join the definition.
        let m = "#define B(v) \\\n  (v)\n\nint x;\n";
        let joined = "#define B(v) \\\n  (v)\nint x;\n";
        assert_eq!(
            without_blank_lines(m),
            joined,
            "only the blank after the macro goes"
        );
        let m2 = "#define B(v) \\\n\nint x;\n";
        assert_eq!(without_blank_lines(m2), m2);
    }

    #[test]
    fn every_family_has_candidates_for_its_keys() {
        let d = crate::ops::gdn::QWEN36_27B;
        let keys = [
            exact_key(),
            a16::key(crate::formats::format("q4_g64").unwrap(), 4096, 17408, 5120),
            gdn::key(crate::ops::gdn::StateType::F32, &d, 1),
            attn::key(
                crate::ops::attention::KvType::F32,
                &crate::ops::attention::AttnDims::new(24, 4, 256),
                1,
                4096,
            ),
        ];
        for key in &keys {
            let specs = candidate_specs(key).unwrap_or_else(|| panic!("{key}"));
            assert!(specs.len() > 1, "{key}: {} candidates", specs.len());
        }
        let other: ShapeKey = "rmsnorm/f32/t1/n4096/k1".parse().unwrap();
        assert!(candidate_specs(&other).is_none());
    }

    #[test]
    fn the_hash_follows_the_sources_a_route_rests_on() {
        let base = jit_with(|_, _| None);
        let key = exact_key();
        let gdn_key = gdn::key(
            crate::ops::gdn::StateType::F32,
            &crate::ops::gdn::QWEN36_27B,
            1,
        );
        let h = sources_hash(&base, &key).unwrap();
        assert_eq!(h.len(), 16);
        assert_eq!(sources_hash(&base, &key), Some(h.clone()), "deterministic");
        // An edit to a GDN template leaves the GEMV's hash alone and changes the GDN step's.
        let gdn_edit = jit_with(|rel, text| {
            rel.starts_with("gdn/")
                .then(|| format!("{text}\n// an edit\n"))
        });
        assert_ne!(base.templates().hash(), gdn_edit.templates().hash());
        assert_eq!(sources_hash(&gdn_edit, &key), Some(h.clone()));
        assert_ne!(
            sources_hash(&gdn_edit, &gdn_key),
            sources_hash(&base, &gdn_key)
        );
        // Blank lines added to a GDN template change nothing.
        let blank_edit =
            jit_with(|rel, text| rel.starts_with("gdn/").then(|| text.replace('\n', "\n\n")));
        assert_eq!(
            sources_hash(&blank_edit, &gdn_key),
            sources_hash(&base, &gdn_key)
        );
        // An edit to a file the GEMV includes changes its hash.
        let common_edit = jit_with(|rel, text| {
            (rel == "common/types.cuh").then(|| format!("{text}\n// an edit\n"))
        });
        assert_ne!(sources_hash(&common_edit, &key), Some(h));
    }
}
