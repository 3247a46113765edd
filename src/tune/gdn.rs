//! The `gdn_step` route family: the tile of the Gated DeltaNet decode step (`ops::gdn`'s
//! recurrent kernel in step mode, one token per lane) per state storage type, lanes bucket
//! and GDN layer dims. The registered tiles' times differ by shape, lanes and state type
//! (`bench/gdn`, runs 4 and 5: the per-tile 32-column kernel wins at one lane, the grouped
//! g6 kernel at eight), which is what the tuner settles per device.
//!
//! Key: `gdn_step/<state>/hk<HK>/hv<HV>/t<L>/n<dv>/k<dk>`, e.g.
//! `gdn_step/f32/hk16/hv48/t1/n128/k128`: `state` is `f32` or `f16`, `L` the bucket of the
//! lanes (sequences advanced one token each by one launch; 1, 2, 3-4 -> 4, 5-8 -> 8, ...),
//! and each head's state is a `dv x dk` matrix, hence `n` and `k`. The form is a
//! [`ShapeKey`]'s, so a build that does not know the family still reads the profile and
//! counts these routes as not taken.
//!
//! Candidates: [`RecurrentRoute::all_for`] the state type and dims (every registered tile
//! that fits dk), the heuristics' choice
//! ([`RecurrentRoute::choose_for_lanes`]) first. A profile's entry maps back to a tile by
//! comparing it with the entry names of this build's candidates for the key, never by
//! reading the name: a tile that is no longer registered is not used.
//!
//! Only the decode step is tuned (T = 1 per lane, conv width 4, as in every model); a launch
//! of several tokens per lane (a short prefill) keeps the heuristics' tile.

use crate::ops::gdn::{GdnDims, Mode, RecurrentRoute, StateType, Tile};

use super::bucket::{t_bucket, ShapeKey};

/// The op name's family part.
pub const FAMILY: &str = "gdn_step";

/// The conv width the candidates are built and timed with (every model's).
pub const KC: usize = 4;

/// The op name of a key: `gdn_step/<state>/hk<HK>/hv<HV>`.
pub fn op(state: StateType, d: &GdnDims) -> String {
    format!("{FAMILY}/{}/hk{}/hv{}", state.short(), d.hk, d.hv)
}

/// The key of the step route for `state` at `d` with `lanes` lanes (bucketed here).
pub fn key(state: StateType, d: &GdnDims, lanes: usize) -> ShapeKey {
    ShapeKey {
        op: op(state, d),
        t_bucket: t_bucket(lanes),
        n: d.dv,
        k: d.dk,
    }
}

/// What a key of this family names: the state type, the dims (conv width [`KC`]) and the
/// lanes bucket; `None` for a key of another family or one whose op does not parse.
pub fn parse(key: &ShapeKey) -> Option<(StateType, GdnDims, u32)> {
    let rest = key.op.strip_prefix(FAMILY)?.strip_prefix('/')?;
    let mut parts = rest.split('/');
    let state = match parts.next()? {
        "f32" => StateType::F32,
        "f16" => StateType::F16,
        _ => return None,
    };
    let num = |p: Option<&str>, prefix: &str| -> Option<usize> {
        p?.strip_prefix(prefix)?
            .parse::<usize>()
            .ok()
            .filter(|&v| v > 0)
    };
    let hk = num(parts.next(), "hk")?;
    let hv = num(parts.next(), "hv")?;
    if parts.next().is_some() || key.n == 0 || key.k == 0 || !hv.is_multiple_of(hk) {
        return None;
    }
    let mut d = GdnDims::new(hk, hv, key.k, key.n);
    d.kc = KC;
    Some((state, d, key.t_bucket))
}

/// The lanes a bucket is timed at (its upper bound) and checked at (also its smallest).
pub fn check_lanes(bucket: u32) -> Vec<usize> {
    let hi = bucket as usize;
    let lo = hi / 2 + 1;
    if lo < hi {
        vec![hi, lo]
    } else {
        vec![hi]
    }
}

/// Whether the family serves these dims (a tile fits, HV a multiple of HK, conv width
/// [`KC`]).
pub fn tunable(d: &GdnDims) -> bool {
    d.kc == KC
        && d.hk > 0
        && d.hv.is_multiple_of(d.hk)
        && RecurrentRoute::choose(Mode::Step, StateType::F32, d).is_some()
}

/// The candidate routes for `state` at `d` and `lanes` lanes, the heuristics' choice first;
/// empty where no tile fits.
pub fn candidates(state: StateType, d: &GdnDims, lanes: usize) -> Vec<RecurrentRoute> {
    if !tunable(d) {
        return Vec::new();
    }
    let Some(base) = RecurrentRoute::choose_for_lanes(Mode::Step, state, d, lanes) else {
        return Vec::new();
    };
    let mut v = vec![base];
    // The split step with the gates in the update (`Tile::gin`) from 5 lanes, where the
    // heuristics take the split step: at one lane the fused kernel's single launch wins
    // (the H200 profile's 1-lane times: the split tiles 6-10% slower than the fused r2w8).
    v.extend(
        RecurrentRoute::all_for(Mode::Step, state, d)
            .into_iter()
            .filter(|r| r.tile != base.tile && (!r.tile.gin || lanes >= 5)),
    );
    v
}

/// The tile a profile entry names at `key`: the candidate whose entry name is `entry`.
pub fn tile_for(key: &ShapeKey, entry: &str) -> Option<(StateType, GdnDims, u32, Tile)> {
    let (state, d, bucket) = parse(key)?;
    candidates(state, &d, bucket as usize)
        .into_iter()
        .find(|r| r.spec().entry == entry)
        .map(|r| (state, d, bucket, r.tile))
}

/// A short name of a step entry for tables: the tile part (`l16e8r2w8vg6` of
/// `gdn_step_f32_l16e8r2w8vg6_k4`, `l16e8r2w2vx` of the split step's
/// `gdn_update_f32_l16e8r2w2vx`); `None` for another family's entry. Display only.
pub fn short_entry(entry: &str) -> Option<&str> {
    let rest = entry
        .strip_prefix("gdn_step_")
        .or_else(|| entry.strip_prefix("gdn_update_"))?;
    let rest = rest.split_once('_').map(|(_, r)| r)?;
    Some(rest.rsplit_once("_k").map(|(t, _)| t).unwrap_or(rest))
}

/// The short name of a candidate (its tile).
pub fn short(route: &RecurrentRoute) -> String {
    let entry = route.spec().entry;
    short_entry(&entry).unwrap_or(&entry).to_string()
}

/// `route` with the tile the table chose for its state type, dims and lanes, where the table
/// has one and `route` is a decode step (`t` = 1) on the heuristics' tile. Anything else
/// (several tokens per lane, another conv width, a route the caller chose otherwise) is left
/// as it is.
pub fn apply(
    table: &super::RouteTable,
    route: &mut RecurrentRoute,
    d: &GdnDims,
    lanes: usize,
    t: usize,
) {
    if t != 1 || lanes == 0 || route.mode != Mode::Step || d.kc != KC || route.kc != KC {
        return;
    }
    let Some(tile) = table.gdn(route.state, d, lanes) else {
        return;
    };
    if tile == route.tile || !tile.fits(d.dk) {
        return;
    }
    let heuristic = |r: Option<RecurrentRoute>| r.is_some_and(|h| h == *route);
    if heuristic(RecurrentRoute::choose(Mode::Step, route.state, d))
        || heuristic(RecurrentRoute::choose_for_lanes(
            Mode::Step,
            route.state,
            d,
            lanes,
        ))
    {
        route.tile = tile;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gdn::{tiles, QWEN36_27B, QWEN36_35B_A3B};

    #[test]
    fn keys_name_state_dims_and_lanes_bucket() {
        let k = key(StateType::F32, &QWEN36_27B, 1);
        assert_eq!(k.to_string(), "gdn_step/f32/hk16/hv48/t1/n128/k128");
        let k8 = key(StateType::F16, &QWEN36_35B_A3B, 7);
        assert_eq!(k8.to_string(), "gdn_step/f16/hk16/hv32/t8/n128/k128");
        for k in [k, k8] {
            let back: ShapeKey = k.to_string().parse().unwrap();
            assert_eq!(back, k);
            let (state, d, b) = parse(&back).unwrap();
            assert_eq!(key(state, &d, b as usize), k);
        }
        let (_, d, b) = parse(&key(StateType::F32, &GdnDims::new(3, 6, 24, 20), 3)).unwrap();
        assert_eq!((d, b), (GdnDims::new(3, 6, 24, 20), 4));
        assert_eq!((d.hk, d.hv, d.dk, d.dv), (3, 6, 24, 20), "n is dv, k is dk");
        for bad in [
            "linear_exact/q4_g64/t1/n128/k128",
            "gdn_step/bf16/hk16/hv48/t1/n128/k128",
            "gdn_step/f32/hk16/t1/n128/k128",
            "gdn_step/f32/hk16/hv48/x/t1/n128/k128",
            "gdn_step/f32/hk0/hv48/t1/n128/k128",
            "gdn_step/f32/hk16/hv40/t1/n128/k128",
            "gdn_step/f32/hk16/hv48/t1/n0/k128",
            "gdn_stepx/f32/hk16/hv48/t1/n128/k128",
        ] {
            let k: ShapeKey = bad.parse().unwrap();
            assert!(parse(&k).is_none(), "{bad}");
        }
    }

    #[test]
    fn lanes_buckets_are_checked_at_both_ends() {
        assert_eq!(check_lanes(1), vec![1]);
        assert_eq!(check_lanes(2), vec![2]);
        assert_eq!(check_lanes(4), vec![4, 3]);
        assert_eq!(check_lanes(8), vec![8, 5]);
    }

    #[test]
    fn candidates_start_with_the_lanes_heuristic_and_cover_every_tile() {
        for state in StateType::ALL {
            for d in [QWEN36_27B, QWEN36_35B_A3B] {
                for lanes in [1, 2, 4, 8] {
                    let c = candidates(state, &d, lanes);
                    let h = RecurrentRoute::choose_for_lanes(Mode::Step, state, &d, lanes);
                    assert_eq!(Some(c[0]), h, "{state:?} {lanes}");
                    // Every tile fits dk 128; the gates-in split tiles from 5 lanes.
                    let gin = tiles(state).iter().filter(|t| t.gin).count();
                    let all = tiles(state).len();
                    assert!(gin > 0);
                    assert_eq!(c.len(), if lanes >= 5 { all } else { all - gin });
                    let mut e: Vec<String> = c.iter().map(|r| r.spec().entry).collect();
                    e.sort();
                    e.dedup();
                    assert_eq!(e.len(), c.len(), "distinct entries");
                    for r in &c {
                        assert_eq!((r.mode, r.state, r.kc), (Mode::Step, state, KC));
                    }
                }
            }
            // One lane: the fused per-tile kernel; eight: the split step (bench/kernels v44).
            let one = candidates(state, &QWEN36_27B, 1)[0].tile;
            assert!(one.group == 0 && !one.split);
            assert!(candidates(state, &QWEN36_27B, 8)[0].tile.split);
        }
        let mut odd = QWEN36_27B;
        odd.kc = 3;
        assert!(candidates(StateType::F32, &odd, 1).is_empty());
    }

    #[test]
    fn entries_map_back_only_by_exact_name() {
        let k = key(StateType::F32, &QWEN36_27B, 8);
        for r in candidates(StateType::F32, &QWEN36_27B, 8) {
            let (s, d, b, t) = tile_for(&k, &r.spec().entry).unwrap();
            assert_eq!((s, d, b, t), (StateType::F32, QWEN36_27B, 8, r.tile));
        }
        let f16 = candidates(StateType::F16, &QWEN36_27B, 8)[0].spec().entry;
        assert!(tile_for(&k, &f16).is_none(), "another state type's entry");
        assert!(
            tile_for(&k, "gdn_step_f32_l16e8r2w8vg12s6_k4").is_none(),
            "retired tile"
        );
    }

    #[test]
    fn short_names() {
        assert_eq!(
            short_entry("gdn_step_f32_l16e8r2w8vg6_k4"),
            Some("l16e8r2w8vg6")
        );
        assert_eq!(
            short_entry("gdn_step_f16_l16e8r2w8vm3g4s4_k4"),
            Some("l16e8r2w8vm3g4s4")
        );
        assert_eq!(
            short_entry("gdn_update_f16_l16e8r4w4vx"),
            Some("l16e8r4w4vx")
        );
        assert_eq!(
            short_entry("linear_exact_stream_q4_g64_plain_t1_r4_w4_u2"),
            None
        );
        let r = candidates(StateType::F32, &QWEN36_27B, 1)[0];
        assert_eq!(short(&r), "l16e8r2w8v");
    }
}
