//! The `linear_a16` route family: the tile of the tensor-core linear kernels with bf16
//! activations (`linear/mma_tiled.cu`, [`LinearTile::Mma`]; `linear/a16_pipe.cu`,
//! [`LinearTile::Pipe`], and on Hopper `linear/a16_wgmma.cu`, [`LinearTile::Wgmma`], for the
//! formats they take) that the engine's bf16 path (`--activations bf16`) runs for more than
//! 32 tokens, per weight format, prefill bucket and exact weight shape. The heuristics
//! ([`LinearRoute::choose`]) take the first warpgroup tile where the pipelined kernels take
//! the format (off Hopper its launch runs the first pipelined tile), else the larger of the
//! old kernel's tiles; a profile may name another.
//!
//! Key: `linear_a16/<format>/t<bucket>/n<N>/k<K>`, where `bucket` is one of [`BUCKETS`]
//! ([`bucket`]: the smallest that holds T, the largest for more tokens). The candidates are
//! [`prefill_tiles`](crate::ops::linear::prefill_tiles) with the plain epilogue, the
//! heuristics' choice first; a profile's entry is mapped back to a tile by comparing it with
//! the candidates' entry names, never by reading the name.

use crate::formats::Format;
use crate::ops::linear::{Epilogue, LinearRoute, LinearTile};

use super::bucket::ShapeKey;

/// The op name's family part.
pub const FAMILY: &str = "linear_a16";

/// The token buckets the family is tuned at (the prefill sizes a chunk sees), each named by
/// its upper bound; T above the last one uses the last.
pub const BUCKETS: [u32; 4] = [64, 256, 1024, 4096];

/// The fewest tokens the family serves: below, the heuristics take other kernels.
pub const MIN_T: usize = 33;

/// The bucket of `t` tokens (`t` >= [`MIN_T`]): 33-64 -> 64, 65-256 -> 256, 257-1024 ->
/// 1024, more -> 4096.
pub fn bucket(t: usize) -> u32 {
    assert!(
        t >= MIN_T,
        "linear_a16: {t} tokens is below the family's {MIN_T}"
    );
    BUCKETS
        .into_iter()
        .find(|&b| t <= b as usize)
        .unwrap_or(BUCKETS[BUCKETS.len() - 1])
}

/// The op name of a key: `linear_a16/<format>`.
pub fn op(format: &Format) -> String {
    format!("{FAMILY}/{}", format.name)
}

/// The key of the route for `format` at bucket `b` on an `[n, k]` weight.
pub fn key(format: &Format, b: u32, n: usize, k: usize) -> ShapeKey {
    assert!(
        BUCKETS.contains(&b),
        "linear_a16: {b} is not a bucket ({BUCKETS:?})"
    );
    ShapeKey {
        op: op(format),
        t_bucket: b,
        n,
        k,
    }
}

/// The format a key names, if the key is of this family, its bucket one of [`BUCKETS`], and
/// the format registered.
pub fn format_of(key: &ShapeKey) -> Option<&'static Format> {
    let name = key.op.strip_prefix(FAMILY)?.strip_prefix('/')?;
    if !BUCKETS.contains(&key.t_bucket) {
        return None;
    }
    crate::formats::format(name).ok()
}

/// Whether the family has anything to tune at `[n, k]`: the tensor-core kernel needs
/// K % 64 == 0 (every registered format has its tiles).
pub fn tunable(n: usize, k: usize) -> bool {
    n > 0 && k > 0 && k.is_multiple_of(64)
}

/// The candidate routes for `format` (plain epilogue): its prefill tiles, the heuristics'
/// choice for more than 32 tokens first.
pub fn candidates(format: &'static Format) -> Vec<LinearRoute> {
    let base = LinearRoute::choose(format, MIN_T, Epilogue::None);
    debug_assert!(matches!(
        base.tile,
        LinearTile::Mma { .. } | LinearTile::Pipe { .. } | LinearTile::Wgmma { .. }
    ));
    let mut v = vec![base];
    for tile in crate::ops::linear::prefill_tiles(format) {
        let r = LinearRoute {
            format,
            tile,
            epilogue: Epilogue::None,
        };
        if !v.contains(&r) {
            v.push(r);
        }
    }
    v
}

/// The tile a profile entry names for `format`: the candidate whose entry name is `entry`.
pub fn tile_for(format: &'static Format, entry: &str) -> Option<LinearTile> {
    candidates(format)
        .into_iter()
        .find(|r| r.spec().entry == entry)
        .map(|r| r.tile)
}

/// A short name of a candidate for tables (`64x128_w2x4`; display only).
pub fn short(route: &LinearRoute) -> String {
    match route.tile {
        LinearTile::Mma { bm, bn, wm, wn } => format!("{bm}x{bn}_w{wm}x{wn}"),
        LinearTile::Pipe { bm, bn, wm, wn } => format!("pipe_{bm}x{bn}_w{wm}x{wn}"),
        LinearTile::Wgmma { bm, bn, wgs } => format!("wgmma_{bm}x{bn}_g{wgs}"),
        _ => route.spec().entry,
    }
}

/// `route` with the tile the table chose for `t` tokens on an `[n, k]` weight, where the
/// table has one and `route` is the heuristics' tensor-core route for its format with the
/// plain epilogue (what was timed). Any other route is left as it is.
pub fn apply(table: &super::RouteTable, route: &mut LinearRoute, t: usize, n: usize, k: usize) {
    if t < MIN_T || route.epilogue != Epilogue::None {
        return;
    }
    let Some(tile) = table.a16(route.format, t, n, k) else {
        return;
    };
    if *route == LinearRoute::choose(route.format, t, Epilogue::None) {
        route.tile = tile;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::linear::{pipe_supports, MMA_TILES, PIPE_TILES, WGMMA_TILES};
    use crate::tune::{Fingerprint, Profile, Route, RouteTable};

    fn q4() -> &'static Format {
        crate::formats::format("q4_g64").unwrap()
    }

    fn table(routes: &[(String, String)]) -> RouteTable {
        let fp = Fingerprint {
            name: "Test GPU".into(),
            compute_capability: (9, 0),
            sm_count: 1,
            nvrtc_version: (13, 0),
            template_set_hash: "t".into(),
        };
        let mut p = Profile::new(&fp);
        for (key, entry) in routes {
            p.set_route(Route {
                key: key.clone(),
                entry: entry.clone(),
                median_us: 1.0,
                default_entry: entry.clone(),
                default_us: 2.0,
                candidates: 2,
                times_us: Vec::new(),
                sources: None,
            });
        }
        RouteTable::from_profile(&p, std::path::Path::new("p")).0
    }

    #[test]
    fn buckets_of_token_counts() {
        for (t, b) in [
            (33, 64),
            (64, 64),
            (65, 256),
            (256, 256),
            (257, 1024),
            (1024, 1024),
            (1025, 4096),
            (4096, 4096),
            (100_000, 4096),
        ] {
            assert_eq!(bucket(t), b, "t = {t}");
        }
    }

    #[test]
    #[should_panic(expected = "below the family")]
    fn small_t_has_no_bucket() {
        bucket(32);
    }

    #[test]
    fn keys_round_trip_and_bad_ones_are_refused() {
        let k = key(q4(), 256, 17408, 5120);
        assert_eq!(k.to_string(), "linear_a16/q4_g64/t256/n17408/k5120");
        let back: ShapeKey = k.to_string().parse().unwrap();
        assert_eq!(back, k);
        assert_eq!(format_of(&back).unwrap().name, "q4_g64");
        for s in [
            "linear_a16/q4_g64/t128/n1/k64",  // not a bucket of this family
            "linear_a16/q9_g7/t64/n1/k64",    // unknown format
            "linear_exact/q4_g64/t64/n1/k64", // another family
            "linear_a16x/q4_g64/t64/n1/k64",  // not this family's op
        ] {
            let key: ShapeKey = s.parse().unwrap();
            assert!(format_of(&key).is_none(), "{s}");
        }
        assert!("linear_a16/q4_g64/t100/n1/k64".parse::<ShapeKey>().is_err());
    }

    #[test]
    #[should_panic(expected = "not a bucket")]
    fn a_key_needs_a_bucket() {
        key(q4(), 128, 1, 64);
    }

    #[test]
    fn candidates_start_with_the_default_and_cover_every_tile() {
        for name in ["q4_g64", "q6_g64", "q8_g32", "bf16", "q4_1_g32"] {
            let f = crate::formats::format(name).unwrap();
            let c = candidates(f);
            assert_eq!(
                c[0],
                LinearRoute::choose(f, MIN_T, Epilogue::None),
                "{name}"
            );
            let pipes = pipe_supports(f, Epilogue::None);
            assert_eq!(pipes, name == "q4_g64" || name == "q8_g32", "{name}");
            let want = MMA_TILES.len()
                + if pipes {
                    PIPE_TILES.len() + WGMMA_TILES.len()
                } else {
                    0
                };
            assert_eq!(c.len(), want, "{name}");
            for (bm, bn, wm, wn) in MMA_TILES {
                assert!(c
                    .iter()
                    .any(|r| r.tile == LinearTile::Mma { bm, bn, wm, wn }));
            }
            for (bm, bn, wm, wn) in PIPE_TILES {
                let has = c
                    .iter()
                    .any(|r| r.tile == LinearTile::Pipe { bm, bn, wm, wn });
                assert_eq!(has, pipes, "{name}");
            }
            for (bm, bn, wgs) in WGMMA_TILES {
                let has = c
                    .iter()
                    .any(|r| r.tile == LinearTile::Wgmma { bm, bn, wgs });
                assert_eq!(has, pipes, "{name}");
            }
            let mut entries: Vec<String> = c.iter().map(|r| r.spec().entry).collect();
            assert!(c.iter().all(|r| r.epilogue == Epilogue::None));
            entries.sort();
            entries.dedup();
            assert_eq!(entries.len(), c.len(), "distinct entries");
            for r in &c {
                assert_eq!(tile_for(f, &r.spec().entry), Some(r.tile));
            }
        }
        // Another format's entry is not this format's candidate.
        let q8 = crate::formats::format("q8_g32").unwrap();
        assert_eq!(tile_for(q8, &candidates(q4())[0].spec().entry), None);
    }

    #[test]
    fn the_table_changes_only_the_plain_route_of_its_key() {
        let f = q4();
        let c = candidates(f);
        let other = c[1].tile;
        let t = table(&[(key(f, 256, 576, 1536).to_string(), c[1].spec().entry)]);
        assert_eq!(t.family_counts(), [(FAMILY, 1)]);
        for tokens in [65, 200, 256] {
            let mut r = LinearRoute::choose(f, tokens, Epilogue::None);
            apply(&t, &mut r, tokens, 576, 1536);
            assert_eq!(r.tile, other, "t = {tokens}");
        }
        // Another bucket, shape or format, a small T, another epilogue: the heuristics.
        for (tokens, n, k) in [(64, 576, 1536), (257, 576, 1536), (256, 1536, 576)] {
            let mut r = LinearRoute::choose(f, tokens, Epilogue::None);
            apply(&t, &mut r, tokens, n, k);
            assert_eq!(r, LinearRoute::choose(f, tokens, Epilogue::None));
        }
        let q8 = crate::formats::format("q8_g32").unwrap();
        let mut r = LinearRoute::choose(q8, 256, Epilogue::None);
        apply(&t, &mut r, 256, 576, 1536);
        assert_eq!(r, LinearRoute::choose(q8, 256, Epilogue::None));
        let mut r = LinearRoute::choose(f, 256, Epilogue::Residual);
        apply(&t, &mut r, 256, 576, 1536);
        assert_eq!(r, LinearRoute::choose(f, 256, Epilogue::Residual));
        let mut r = LinearRoute::choose(f, 16, Epilogue::None);
        apply(&t, &mut r, 16, 576, 1536);
        assert_eq!(r, LinearRoute::choose(f, 16, Epilogue::None));
    }

    #[test]
    fn an_entry_no_candidate_has_is_not_taken() {
        let f = q4();
        let k = key(f, 64, 576, 1536).to_string();
        let t = table(&[(k.clone(), "linear_mma_q4_g64_none_16x16_w1x1".into())]);
        assert!(t.is_empty());
        let mut r = LinearRoute::choose(f, 64, Epilogue::None);
        apply(&t, &mut r, 64, 576, 1536);
        assert_eq!(r, LinearRoute::choose(f, 64, Epilogue::None));
    }
}
