//! The `linear_exact` route family: the stream or ring GEMV's work split per weight format,
//! column tile and exact weight shape (`ops::linear_exact`). The engine's decode path runs
//! every linear layer of at most 8 rows through it (`engine::cuda`), with the split
//! [`ExactRoute::choose`] takes unless a profile says otherwise.
//!
//! Key: `linear_exact/<format>/t<tt>/n<N>/k<K>`, where `tt` is the column tile the kernel
//! is launched with (1, 2, 4 or 8: the smallest that holds T, so it equals T's bucket for
//! T <= 8; a T of 9 or more that the tiled sgemm route cannot take runs as several launches
//! of 8 columns and uses the `t8` route). The candidates are every route
//! [`all_routes`] instantiates for the format and tile with the plain epilogue and no
//! prologue (the stream kernel's splits and, for the formats and tiles the ring kernel takes,
//! the ring's), but the generic GEMV, the default first: that entry name is what a profile
//! records. The split it names
//! serves both epilogues (the residual one adds one read of T x N floats to a kernel that
//! streams N x K weights).
//!
//! A profile's entry is mapped back to a split by comparing it with the entry names of this
//! build's candidates, never by reading the name: an entry no candidate has (the candidate
//! list or the kernel's naming changed) is not used.

use crate::formats::Format;
use crate::ops::linear::Epilogue;
use crate::ops::linear_exact::{
    all_routes, launched_direct, stream_supports, ExactKernel, ExactRoute, PrologueKind,
};

use super::bucket::ShapeKey;

/// The op name's family part.
pub const FAMILY: &str = "linear_exact";

/// The column tiles the family is tuned at, which are also its token buckets.
pub const TILES: [u32; 4] = [1, 2, 4, 8];

/// The op name of a key: `linear_exact/<format>`.
pub fn op(format: &Format) -> String {
    format!("{FAMILY}/{}", format.name)
}

/// The key of the route for `format` launched with column tile `tt` on an `[n, k]` weight.
pub fn key(format: &Format, tt: u32, n: usize, k: usize) -> ShapeKey {
    assert!(
        TILES.contains(&tt),
        "linear_exact: {tt} is not a column tile (1, 2, 4, 8)"
    );
    ShapeKey {
        op: op(format),
        t_bucket: tt,
        n,
        k,
    }
}

/// The format a key names, if the key is of this family and the format is registered.
pub fn format_of(key: &ShapeKey) -> Option<&'static Format> {
    let name = key.op.strip_prefix(FAMILY)?.strip_prefix('/')?;
    crate::formats::format(name).ok()
}

/// Whether this family has anything to tune for `format` (the stream kernel takes it).
pub fn tunable(format: &Format) -> bool {
    stream_supports(format)
}

/// The candidate routes for `format` at column tile `tt` (plain epilogue, no prologue): every
/// route `linear_exact` instantiates there but the generic GEMV and the mma tiles that round
/// their activations to bf16 (the bf16 mode's, not exact), the heuristics' choice
/// first, the others in `linear_exact::all_routes`' order (so a kernel that module adds is a
/// candidate without a list here); empty where the stream kernel does not take the format.
pub fn candidates(format: &'static Format, tt: u32) -> Vec<ExactRoute> {
    if !tunable(format) || !TILES.contains(&tt) {
        return Vec::new();
    }
    let base = ExactRoute::choose(format, tt as usize, Epilogue::None);
    let mut v = vec![base.clone()];
    for r in all_routes() {
        let here = r.format.name == format.name
            && r.tt == tt
            && r.epilogue == Epilogue::None
            && r.prologue == PrologueKind::None
            && r.kernel != ExactKernel::Gemv
            && !r.rounds_activations();
        if here && !v.contains(&r) {
            v.push(r);
        }
    }
    v
}

/// The split a profile entry names for `format` at tile `tt`: the candidate whose entry name
/// is `entry`, if any.
pub fn kernel_for(format: &'static Format, tt: u32, entry: &str) -> Option<ExactKernel> {
    candidates(format, tt)
        .into_iter()
        .find(|r| r.spec().entry == entry)
        .map(|r| r.kernel)
}

/// A short name of a candidate for tables: the part of its entry name after the column
/// tile (`r4_w4_u2`; display only, nothing is read back from it).
pub fn short(route: &ExactRoute) -> String {
    let entry = route.spec().entry;
    let tile = format!("_t{}_", route.tt);
    match entry.rfind(&tile) {
        Some(i) => entry[i + tile.len()..].to_string(),
        None => entry,
    }
}

/// `route` with the split the table chose for its shape, where the table has one and
/// `route` is the heuristics' route for its format, tile, epilogue and prologue.
/// Tuning times the plain kernel, and a fused prologue costs the stream kernel's splits
/// differently (its direct mode sums a norm's squares in one warp, the block-staged splits
/// behind a block barrier: run 12 measured SmolLM2's qkv projection with its RMSNorm
/// slower on the plain shape's winner), so a prologue route changes split only from one
/// ring split to another: every ring split stages the whole row once per block with the
/// prologue applied in that same pass, no barrier of its own, so the prologue adds one
/// more row read per block to each (more with more blocks). bench/kernels v30: on the 27B,
/// whose qkv and gate_up carry the RMSNorm and its down projection the SwiGLU, this took
/// the 1-lane step from -0.9% to -1.1% against the heuristics.
/// A route whose launch runs a direct split (one column, K of at most 1024:
/// [`launched_direct`]) takes only another direct split: the block-staged splits put a
/// barrier between the activations' load and the first multiply, which the tuner's
/// back-to-back timing hides and a decode step's chain of launches does not. bench/kernels
/// v41 job 2: the installed profile's staged pick for SmolLM2's 576x576 shape (3.7% under
/// the direct split in its tuning run) made the o projection with its residual ~1 us a
/// layer slower in the step (3.41 against 3.00 us alone under ncu; the 1-lane step at 256
/// steps 546-552 us against 515-522 without the pick).
/// A route the caller chose otherwise is left as it is.
pub fn apply(table: &super::RouteTable, route: &mut ExactRoute, n: usize, k: usize) {
    let Some(kernel) = table.exact(route.format, route.tt, n, k) else {
        return;
    };
    if kernel == route.kernel || route.kernel == ExactKernel::Gemv {
        return;
    }
    let to_direct = matches!(kernel, ExactKernel::Stream(t) if t.direct);
    if launched_direct(route, n, k).is_some() && !to_direct {
        return;
    }
    let ring_to_ring = matches!(
        (route.kernel, kernel),
        (ExactKernel::Ring(_), ExactKernel::Ring(_))
    );
    if route.prologue != PrologueKind::None && !ring_to_ring {
        return;
    }
    let heuristic = ExactRoute::choose_with(
        route.format,
        route.tt as usize,
        route.epilogue,
        route.prologue,
    );
    if heuristic.as_ref() == Some(&*route) {
        route.kernel = kernel;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::linear_exact::{ring_supports, ring_tiles, stream_tiles, RING_TT};

    fn q4() -> &'static Format {
        crate::formats::format("q4_g64").unwrap()
    }

    #[test]
    fn keys_name_the_format_and_the_tile() {
        let k = key(q4(), 4, 17408, 5120);
        assert_eq!(k.to_string(), "linear_exact/q4_g64/t4/n17408/k5120");
        let back: ShapeKey = k.to_string().parse().unwrap();
        assert_eq!(back, k);
        assert_eq!(format_of(&back).unwrap().name, "q4_g64");
        let other: ShapeKey = "linear/t4/n1/k2".parse().unwrap();
        assert!(format_of(&other).is_none());
        let unknown: ShapeKey = "linear_exact/q9_g7/t4/n1/k2".parse().unwrap();
        assert!(format_of(&unknown).is_none());
    }

    /// A route table from a profile with one route: `tuned` for its key at `(n, k)`, over
    /// `default`.
    fn table_of_one(
        tuned: &ExactRoute,
        default: &ExactRoute,
        n: usize,
        k: usize,
    ) -> crate::tune::RouteTable {
        use crate::tune::{Profile, Route};
        let fp = crate::tune::Fingerprint {
            name: "Test GPU".into(),
            compute_capability: (9, 0),
            sm_count: 1,
            nvrtc_version: (13, 0),
            template_set_hash: "t".into(),
        };
        let mut p = Profile::new(&fp);
        p.set_route(Route {
            key: key(tuned.format, tuned.tt, n, k).to_string(),
            entry: tuned.spec().entry,
            median_us: 1.0,
            default_entry: default.spec().entry,
            default_us: 2.0,
            candidates: 2,
            times_us: Vec::new(),
            sources: None,
        });
        super::super::RouteTable::from_profile(&p, std::path::Path::new("p")).0
    }

    #[test]
    fn the_table_changes_only_the_plain_route_of_its_key() {
        let f = q4();
        let c = candidates(f, 1);
        // (A K past the direct splits': see the next test for those.)
        assert_eq!(launched_direct(&c[0], 576, 1536), None);
        let table = table_of_one(&c[1], &c[0], 576, 1536);
        for epilogue in [Epilogue::None, Epilogue::Residual] {
            let mut r = ExactRoute::choose(f, 1, epilogue);
            apply(&table, &mut r, 576, 1536);
            assert_eq!(r.kernel, c[1].kernel, "{epilogue:?}");
            assert_eq!(r.epilogue, epilogue);
            // Another shape or tile keeps the default.
            let mut r = ExactRoute::choose(f, 1, epilogue);
            apply(&table, &mut r, 576, 3072);
            assert_eq!(r.kernel, c[0].kernel);
            let mut r = ExactRoute::choose(f, 2, epilogue);
            apply(&table, &mut r, 576, 1536);
            assert_eq!(r, ExactRoute::choose(f, 2, epilogue));
        }
        // A route the caller did not take from the heuristics is left alone.
        let mut r = c[c.len() - 1].clone();
        apply(&table, &mut r, 576, 1536);
        assert_eq!(r, c[c.len() - 1]);
        // A fused prologue keeps the heuristics' stream split: tuning timed the plain kernel.
        for (prologue, epilogue) in [
            (
                PrologueKind::RmsNorm(crate::ops::rmsnorm::NormWeight::Plain),
                Epilogue::None,
            ),
            (PrologueKind::Swiglu, Epilogue::Residual),
        ] {
            let heuristic = ExactRoute::choose_with(f, 1, epilogue, prologue).unwrap();
            let mut r = heuristic.clone();
            apply(&table, &mut r, 576, 1536);
            assert_eq!(r, heuristic, "{prologue:?}");
        }
    }

    #[test]
    fn a_launch_on_a_direct_split_takes_only_a_direct_split() {
        let f = q4();
        let (n, k) = (576, 576); // SmolLM2's o projection: K = 18 chunks of 32
        let c = candidates(f, 1);
        let staged = c
            .iter()
            .find(|r| matches!(r.kernel, ExactKernel::Stream(t) if !t.direct))
            .expect("a staged stream split");
        let direct = c
            .iter()
            .find(|r| {
                matches!(r.kernel, ExactKernel::Stream(t) if t.direct)
                    && Some(r.kernel) != launched_direct(&c[0], n, k).map(ExactKernel::Stream)
            })
            .expect("another direct split");
        for epilogue in [Epilogue::None, Epilogue::Residual] {
            let heuristic = ExactRoute::choose(f, 1, epilogue);
            assert!(launched_direct(&heuristic, n, k).is_some(), "{epilogue:?}");
            let mut r = heuristic.clone();
            apply(&table_of_one(staged, &c[0], n, k), &mut r, n, k);
            assert_eq!(r, heuristic, "a staged pick is not taken ({epilogue:?})");
            let mut r = heuristic.clone();
            apply(&table_of_one(direct, &c[0], n, k), &mut r, n, k);
            assert_eq!(r.kernel, direct.kernel, "a direct pick is ({epilogue:?})");
        }
    }

    #[test]
    fn launched_direct_follows_the_launch_substitutions() {
        let f = q4();
        let ring = ExactRoute::choose(f, 1, Epilogue::None);
        assert!(matches!(ring.kernel, ExactKernel::Ring(_)), "{ring:?}");
        // K of 18 chunks: the ring launches the stream default, which takes a direct split.
        assert!(launched_direct(&ring, 576, 576).is_some());
        // K = 1536 (48 chunks) takes the staged small-K split; K = 5120 the ring itself.
        assert_eq!(launched_direct(&ring, 576, 1536), None);
        assert_eq!(launched_direct(&ring, 17408, 5120), None);
        // More than one column never runs a direct split.
        assert_eq!(
            launched_direct(&ExactRoute::choose(f, 2, Epilogue::None), 576, 576),
            None
        );
    }

    #[test]
    fn a_fused_prologue_takes_a_tuned_ring_split_from_the_default_ring_split() {
        let f = q4();
        let (n, k) = (10240, 5120);
        let default = ExactRoute::choose(f, 1, Epilogue::None);
        assert!(
            matches!(default.kernel, ExactKernel::Ring(_)),
            "{default:?}"
        );
        let tuned = candidates(f, 1)
            .into_iter()
            .find(|c| matches!(c.kernel, ExactKernel::Ring(_)) && c.kernel != default.kernel)
            .expect("a second ring split");
        let table = table_of_one(&tuned, &default, n, k);
        for (prologue, epilogue) in [
            (
                PrologueKind::RmsNorm(crate::ops::rmsnorm::NormWeight::Plain),
                Epilogue::None,
            ),
            (PrologueKind::Swiglu, Epilogue::Residual),
        ] {
            let heuristic = ExactRoute::choose_with(f, 1, epilogue, prologue).unwrap();
            assert!(matches!(heuristic.kernel, ExactKernel::Ring(_)));
            let mut r = heuristic.clone();
            apply(&table, &mut r, n, k);
            assert_eq!(r.kernel, tuned.kernel, "{prologue:?}");
            assert_eq!((r.prologue, r.epilogue), (prologue, epilogue));
        }
    }

    #[test]
    #[should_panic(expected = "not a column tile")]
    fn a_key_needs_a_column_tile() {
        key(q4(), 3, 1, 1);
    }

    #[test]
    fn candidates_start_with_the_default_and_cover_every_split() {
        for name in ["q4_g64", "q8_g32", "q6_g64"] {
            let f = crate::formats::format(name).unwrap();
            for tt in TILES {
                let c = candidates(f, tt);
                let default = ExactRoute::choose(f, tt as usize, Epilogue::None);
                assert_eq!(c[0], default, "{name} t{tt}");
                let ring = if ring_supports(f) && RING_TT.contains(&tt) {
                    ring_tiles(f.bits, tt).len()
                } else {
                    0
                };
                // The mma kernel (linear_mma_exact) is a candidate wherever it has a tile.
                let mma = crate::ops::linear_mma_exact::routes()
                    .iter()
                    .filter(|r| r.format.name == name && r.tt == tt)
                    .filter(|r| r.epilogue == Epilogue::None && r.prologue == PrologueKind::None)
                    .filter(|r| !r.rounds_activations())
                    .count();
                assert_eq!(c.len(), stream_tiles(tt).len() + ring + mma, "{name} t{tt}");
                for r in &c {
                    assert_eq!((r.tt, r.epilogue), (tt, Epilogue::None));
                }
                let mut entries: Vec<String> = c.iter().map(|r| r.spec().entry).collect();
                entries.sort();
                entries.dedup();
                assert_eq!(entries.len(), c.len(), "distinct entries");
            }
        }
        // Formats the stream kernel does not take have nothing to tune.
        for name in ["f32", "bf16", "q4_1_g32", "i8_row"] {
            assert!(candidates(crate::formats::format(name).unwrap(), 1).is_empty());
        }
    }

    #[test]
    fn entries_map_back_to_their_split_only_by_exact_name() {
        let f = q4();
        for tt in TILES {
            for r in candidates(f, tt) {
                assert_eq!(kernel_for(f, tt, &r.spec().entry), Some(r.kernel));
            }
        }
        let e = candidates(f, 1)[0].spec().entry;
        assert_eq!(kernel_for(f, 1, &format!("{e}x")), None);
        // Another tile's entry is not this tile's candidate.
        let t8 = candidates(f, 8)[0].spec().entry;
        assert_eq!(kernel_for(f, 1, &t8), None);
        // Nor is another format's.
        let q8 = crate::formats::format("q8_g32").unwrap();
        assert_eq!(kernel_for(q8, 1, &e), None);
    }
}
