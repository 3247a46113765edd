//! The `attn_split` route family: the decode attention's split-K width (keys per block,
//! `ops::attention::DECODE_SPLITS`) per cache type, head layout, rows bucket and context
//! bucket. The split sets how many blocks a launch spreads the cache over (with the
//! workspace's cap, `MAX_SPLITS`), so the best one depends on the context: a short cache in
//! wide splits leaves SMs idle, a long one in narrow splits pays more combine traffic.
//!
//! Key: `attn_split/<kv>/h<H>/kv<KV>/t<rows>/n<ctx>/k<head_dim>`, e.g.
//! `attn_split/f32/h9/kv3/t1/n512/k64` (SmolLM2, one row, a cache planned for up to 512
//! keys). `ctx` is the bucket of the keys the launch plans its grid for, the next power of
//! two: a graph-captured decode step plans for the cache's capacity (a power of two, at
//! least 256), a launch outside a graph for the keys it sees. `rows` is the query rows'
//! token bucket (the decode route serves up to 8; the engine's decode step runs 1 per lane).
//!
//! Candidates: the decode route at every split of `DECODE_SPLITS`, the heuristics' choice
//! (`AttnRoute::choose`) first. The profile records the plain decode kernel's entry
//! (`attn_decode_f32_d64_s128`); the split it names also serves the decode kernel with RoPE
//! and the KV append folded in, which the engine runs for one row (the fold adds the same
//! per-launch work to every split). An entry maps back to a split by comparing it with this
//! build's candidates' entries, never by reading the name.

use crate::ops::attention::{AttnDims, AttnKind, AttnRoute, KvType, DECODE_SPLITS, HEAD_DIMS};

use super::bucket::{t_bucket, ShapeKey};

/// The op name's family part.
pub const FAMILY: &str = "attn_split";

/// The smallest context bucket (the engine's smallest cache capacity).
pub const MIN_CTX: usize = 256;

/// The context bucket of a launch that plans for `keys` keys.
pub fn ctx_bucket(keys: usize) -> usize {
    keys.max(1).next_power_of_two().max(MIN_CTX)
}

/// The op name of a key: `attn_split/<kv>/h<H>/kv<KV>`.
pub fn op(kv: KvType, d: &AttnDims) -> String {
    format!("{FAMILY}/{}/h{}/kv{}", kv.short(), d.n_heads, d.n_kv_heads)
}

/// The key of the decode route for `kv` at `d` with `rows` query rows and a grid planned for
/// `keys` keys (both bucketed here).
pub fn key(kv: KvType, d: &AttnDims, rows: usize, keys: usize) -> ShapeKey {
    ShapeKey {
        op: op(kv, d),
        t_bucket: t_bucket(rows),
        n: ctx_bucket(keys),
        k: d.head_dim,
    }
}

/// What a key of this family names: the cache type, the dims, the rows bucket and the
/// context bucket; `None` for a key of another family, or one this build has no kernel for.
pub fn parse(key: &ShapeKey) -> Option<(KvType, AttnDims, u32, usize)> {
    let rest = key.op.strip_prefix(FAMILY)?.strip_prefix('/')?;
    let mut parts = rest.split('/');
    let kv_name = parts.next()?;
    let kv = KvType::ALL.into_iter().find(|k| k.short() == kv_name)?;
    let num = |p: Option<&str>, prefix: &str| -> Option<usize> {
        p?.strip_prefix(prefix)?
            .parse::<usize>()
            .ok()
            .filter(|&v| v > 0)
    };
    let h = num(parts.next(), "h")?;
    let hkv = num(parts.next(), "kv")?;
    let ok = parts.next().is_none()
        && h.is_multiple_of(hkv)
        && HEAD_DIMS.contains(&key.k)
        && key.n >= MIN_CTX
        && key.n.is_power_of_two();
    ok.then_some((kv, AttnDims::new(h, hkv, key.k), key.t_bucket, key.n))
}

/// Whether this family has anything to tune at `d` (a head size with a kernel, whole GQA
/// groups).
pub fn tunable(d: &AttnDims) -> bool {
    HEAD_DIMS.contains(&d.head_dim) && d.n_kv_heads > 0 && d.n_heads.is_multiple_of(d.n_kv_heads)
}

/// The decode routes for `kv` at `d`, the heuristics' choice first.
pub fn candidates(kv: KvType, d: &AttnDims) -> Vec<AttnRoute> {
    if !tunable(d) {
        return Vec::new();
    }
    let base = AttnRoute::choose(kv, *d, 1);
    let mut v = vec![base];
    for split in DECODE_SPLITS {
        let r = AttnRoute {
            kind: AttnKind::Decode { split },
            ..base
        };
        if r != base {
            v.push(r);
        }
    }
    v
}

/// The split of the candidate whose entry is `entry`, if any.
pub fn split_for(kv: KvType, d: &AttnDims, entry: &str) -> Option<usize> {
    candidates(kv, d)
        .into_iter()
        .find(|r| r.spec().entry == entry)
        .and_then(|r| match r.kind {
            AttnKind::Decode { split } => Some(split),
            _ => None,
        })
}

/// A short name of a candidate for tables (`s128`).
pub fn short(route: &AttnRoute) -> String {
    match route.kind {
        AttnKind::Decode { split } => format!("s{split}"),
        _ => route.spec().entry,
    }
}

/// `route` with the split the table chose for its key, where the table has one and `route`
/// is the heuristics' decode route for `rows` rows; `capacity`: the KV cache's capacity (a
/// captured step plans its grid for it; a launch outside a graph at the same capacity takes
/// the same split, so the op-by-op step before a capture loads the kernel the capture
/// launches). A route the caller chose otherwise is left as it is.
pub fn apply(
    table: &super::RouteTable,
    route: &mut AttnRoute,
    d: AttnDims,
    rows: usize,
    capacity: usize,
) {
    if !matches!(route.kind, AttnKind::Decode { .. }) || rows == 0 {
        return;
    }
    let Some(split) = table.attn(route.kv, &d, rows, capacity) else {
        return;
    };
    if *route == AttnRoute::choose(route.kv, d, rows) {
        route.kind = AttnKind::Decode { split };
    }
}

/// Loads the kernels (`spec_of` a route) of every split the table names for `route`'s cache
/// type and head layout at `rows` rows, at any context. For the engine, outside a capture: a
/// cache that grows is captured again without an op-by-op step first, at a context bucket
/// whose split may differ, and a module cannot be loaded inside a capture.
pub fn preload(
    table: &super::RouteTable,
    gpu: &crate::gpu::Gpu,
    route: &AttnRoute,
    d: AttnDims,
    rows: usize,
    spec_of: impl Fn(&AttnRoute) -> crate::jit::KernelSpec,
) -> Result<(), crate::gpu::GpuError> {
    if !matches!(route.kind, AttnKind::Decode { .. }) || rows == 0 {
        return Ok(());
    }
    for split in table.attn_splits(route.kv, &d, rows) {
        let r = AttnRoute {
            kind: AttnKind::Decode { split },
            ..*route
        };
        gpu.kernel(&spec_of(&r))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::attention::{QWEN36_27B, SMOLLM2};
    use crate::tune::{Fingerprint, Profile, Route, RouteTable};

    #[test]
    fn keys_round_trip_and_bucket_the_context() {
        let k = key(KvType::F32, &SMOLLM2, 1, 300);
        assert_eq!(k.to_string(), "attn_split/f32/h9/kv3/t1/n512/k64");
        let back: ShapeKey = k.to_string().parse().unwrap();
        assert_eq!(back, k);
        assert_eq!(parse(&back), Some((KvType::F32, SMOLLM2, 1, 512)));
        assert_eq!(key(KvType::Bf16, &QWEN36_27B, 3, 10).n, MIN_CTX);
        assert_eq!(key(KvType::Bf16, &QWEN36_27B, 3, 10).t_bucket, 4);
        assert_eq!(ctx_bucket(4096), 4096);
        assert_eq!(ctx_bucket(4097), 8192);
        for bad in [
            "attn_split/f64/h9/kv3/t1/n512/k64",   // cache type
            "attn_split/f32/h9/kv4/t1/n512/k64",   // not whole groups
            "attn_split/f32/h9/kv3/t1/n500/k64",   // not a bucket
            "attn_split/f32/h9/kv3/t1/n128/k64",   // below the smallest
            "attn_split/f32/h9/kv3/t1/n512/k80",   // no kernel
            "attn_split/f32/h9/kv3/x/t1/n512/k64", // extra part
            "linear_exact/q4_g64/t1/n576/k576",
        ] {
            assert_eq!(parse(&bad.parse().unwrap()), None, "{bad}");
        }
    }

    #[test]
    fn candidates_start_with_the_default_and_cover_every_split() {
        for d in [SMOLLM2, QWEN36_27B, AttnDims::new(32, 8, 128)] {
            for kv in KvType::ALL {
                let c = candidates(kv, &d);
                assert_eq!(c[0], AttnRoute::choose(kv, d, 1));
                assert_eq!(c.len(), DECODE_SPLITS.len());
                let mut splits: Vec<usize> = c
                    .iter()
                    .map(|r| split_for(kv, &d, &r.spec().entry).unwrap())
                    .collect();
                splits.sort();
                assert_eq!(splits, DECODE_SPLITS);
            }
        }
        assert!(candidates(KvType::F32, &AttnDims::new(9, 3, 80)).is_empty());
        // Another cache type's or head size's entry is not a candidate here.
        let e = candidates(KvType::Bf16, &SMOLLM2)[1].spec().entry;
        assert_eq!(split_for(KvType::F32, &SMOLLM2, &e), None);
    }

    #[test]
    fn the_engine_takes_the_tuned_split_for_its_key_only() {
        let fp = Fingerprint {
            name: "Test GPU".into(),
            compute_capability: (9, 0),
            sm_count: 1,
            nvrtc_version: (13, 0),
            template_set_hash: "t".into(),
        };
        let c = candidates(KvType::F32, &SMOLLM2);
        let mut p = Profile::new(&fp);
        p.set_route(Route {
            key: key(KvType::F32, &SMOLLM2, 1, 512).to_string(),
            entry: c[2].spec().entry,
            median_us: 1.0,
            default_entry: c[0].spec().entry,
            default_us: 2.0,
            candidates: c.len() as u32,
            times_us: Vec::new(),
            sources: None,
        });
        let (table, notice) = RouteTable::from_profile(&p, std::path::Path::new("p"));
        assert!(notice.is_none(), "{notice:?}");
        assert_eq!(table.family_counts(), [(FAMILY, 1)]);
        let heuristic = AttnRoute::choose(KvType::F32, SMOLLM2, 1);
        // A captured step at capacity 512 (any live position), or a host launch of 300 keys.
        for keys in [512, 300] {
            let mut r = heuristic;
            apply(&table, &mut r, SMOLLM2, 1, keys);
            assert_eq!(r, c[2], "{keys}");
        }
        // Another context bucket, cache type or head layout keeps the heuristics.
        let mut r = heuristic;
        apply(&table, &mut r, SMOLLM2, 1, 1024);
        assert_eq!(r, heuristic);
        let mut r = AttnRoute::choose(KvType::Bf16, SMOLLM2, 1);
        apply(&table, &mut r, SMOLLM2, 1, 512);
        assert_eq!(r, AttnRoute::choose(KvType::Bf16, SMOLLM2, 1));
        // Another rows bucket: not tuned, kept.
        let mut r = AttnRoute::choose(KvType::F32, SMOLLM2, 2);
        apply(&table, &mut r, SMOLLM2, 2, 512);
        assert_eq!(r, AttnRoute::choose(KvType::F32, SMOLLM2, 2));
        // A prefill route is never changed.
        let mut r = AttnRoute::choose(KvType::F32, SMOLLM2, 64);
        apply(&table, &mut r, SMOLLM2, 64, 512);
        assert_eq!(r, AttnRoute::choose(KvType::F32, SMOLLM2, 64));
    }
}
