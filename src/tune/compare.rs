//! Two tuning runs of one device side by side (`ninfer tune compare A B`): whether they
//! picked the same winners wherever the choice was clear of the noise, and how the routes run
//! A picked fare against the heuristics' in run B's measurements (held-out: run A's
//! measurements of its own winners are biased toward them).
//!
//! Times are compared relative to the default of the same run and key, so a uniform drift
//! between the runs (clocks, temperature) cancels. The noise is the 90th percentile, over
//! every non-default candidate timed in both runs, of `|ln(rA / rB)|` where `r` is the
//! candidate's time over the default's (at least 0.5%), estimated per route family (the
//! families are timed differently: one kernel's launches back to back, or a graph of GDN
//! steps) and used for that family's keys. A choice is clear in a run when it
//! would survive that much change in any candidate's relative time: the kept default is
//! beaten by no challenger's time within the noise of the margin's bound; a challenger that won
//! beats the bound and every other challenger by more than the noise. A key whose picks
//! differ is a disagreement when both runs were clear, else it is within the noise.
//!
//! Candidate 0 of each route's `times_us` is the default (`ninfer tune` lists the default
//! first); the winner is the candidate whose time is the route's `median_us`.

use serde::Serialize;

use super::profile::{Profile, Route};

/// The smallest noise assumed.
pub const MIN_NOISE: f64 = 0.005;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Both runs picked the same entry.
    Same,
    /// Different picks, but at least one run's choice was within the noise.
    WithinNoise,
    /// Different picks, each clear of the noise in its own run.
    Disagree,
    /// Different picks and no candidate times to judge them by.
    Unknown,
}

#[derive(Debug, Clone, Serialize)]
pub struct KeyComparison {
    pub key: String,
    /// The key's route family, whose noise judges it.
    pub family: String,
    pub noise: f64,
    pub default_entry: String,
    pub pick_a: String,
    pub pick_b: String,
    /// Run B's median of the default.
    pub default_us_b: Option<f64>,
    /// Run B's median of run A's pick.
    pub pick_a_us_b: Option<f64>,
    /// `1 - pick_a_us_b / default_us_b`.
    pub gain_b: Option<f64>,
    /// How far each run's choice is from changing, as a log ratio (see the module docs).
    pub clarity_a: Option<f64>,
    pub clarity_b: Option<f64>,
    pub verdict: Verdict,
}

/// One route family's noise.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyNoise {
    pub family: String,
    pub noise: f64,
    /// Candidate pairs it was estimated from.
    pub samples: usize,
    /// Keys of the family in both runs.
    pub keys: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The noise over every family's candidates together (each key is judged by its own
    /// family's, in `families`).
    pub noise: f64,
    /// Candidate pairs the noise was estimated from.
    pub noise_samples: usize,
    /// Per family, in the order their keys first appear.
    pub families: Vec<FamilyNoise>,
    pub keys: Vec<KeyComparison>,
    /// Keys in one profile only.
    pub only_a: usize,
    pub only_b: usize,
}

impl Comparison {
    pub fn count(&self, v: Verdict) -> usize {
        self.keys.iter().filter(|k| k.verdict == v).count()
    }

    /// Keys where run A's pick was slower than the default, in run B, by more than the noise.
    pub fn slower_beyond_noise(&self) -> Vec<&KeyComparison> {
        self.keys
            .iter()
            .filter(|k| k.gain_b.is_some_and(|g| g < -k.noise))
            .collect()
    }
}

/// The winner's index among `r.times_us`: 0 where the default was kept, else the first
/// candidate whose time is the route's median.
fn winner_index(r: &Route) -> Option<usize> {
    if r.times_us.is_empty() {
        return None;
    }
    if r.entry == r.default_entry {
        return Some(0);
    }
    r.times_us
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, &t)| t == r.median_us)
        .map(|(i, _)| i)
}

/// How clear the choice of run `r` is (log ratio; `INFINITY` where nothing competed).
fn clarity(r: &Route, margin: f64) -> Option<f64> {
    let w = winner_index(r)?;
    let t = &r.times_us;
    let ok = |v: f64| v.is_finite() && v > 0.0;
    let others = |skip: &[usize]| {
        (0..t.len())
            .filter(|i| !skip.contains(i) && ok(t[*i]))
            .collect::<Vec<_>>()
    };
    if !ok(t[w]) {
        return None;
    }
    if !ok(t[0]) {
        // A failed default: the fastest passing candidate won outright.
        return Some(
            others(&[0, w])
                .iter()
                .map(|&c| (t[c] / t[w]).ln())
                .fold(f64::INFINITY, f64::min),
        );
    }
    let bound = t[0] * (1.0 - margin);
    if w == 0 {
        Some(
            others(&[0])
                .iter()
                .map(|&c| (t[c] / bound).ln())
                .fold(f64::INFINITY, f64::min),
        )
    } else {
        let beats_bound = (bound / t[w]).ln();
        Some(
            others(&[0, w])
                .iter()
                .map(|&c| (t[c] / t[w]).ln())
                .fold(beats_bound, f64::min),
        )
    }
}

/// Candidate times relative to the default's, where both runs timed the same number of
/// candidates and the default ran in both.
fn relative(a: &Route, b: &Route) -> Option<(Vec<f64>, Vec<f64>)> {
    let (ta, tb) = (&a.times_us, &b.times_us);
    if ta.is_empty() || ta.len() != tb.len() {
        return None;
    }
    let ok = |v: f64| v.is_finite() && v > 0.0;
    if !ok(ta[0]) || !ok(tb[0]) {
        return None;
    }
    Some((
        ta.iter().map(|v| v / ta[0]).collect(),
        tb.iter().map(|v| v / tb[0]).collect(),
    ))
}

/// Compares the routes of two profiles of the same device, at `margin` (the tuning margin).
pub fn compare(a: &Profile, b: &Profile, margin: f64) -> Comparison {
    let find = |p: &Profile, key: &str| p.routes.iter().find(|r| r.key == key).cloned();
    let pairs: Vec<(Route, Route)> = a
        .routes
        .iter()
        .filter_map(|ra| find(b, &ra.key).map(|rb| (ra.clone(), rb)))
        .collect();
    let (noise, noise_samples) = noise_of(pairs.iter());
    let mut families: Vec<FamilyNoise> = Vec::new();
    for (ra, _) in &pairs {
        let f = super::family_of(&ra.key);
        if families.iter().any(|x| x.family == f) {
            continue;
        }
        let of_family = pairs.iter().filter(|(r, _)| super::family_of(&r.key) == f);
        let (noise, samples) = noise_of(of_family.clone());
        families.push(FamilyNoise {
            family: f.to_string(),
            noise,
            samples,
            keys: of_family.count(),
        });
    }
    let keys = pairs
        .iter()
        .map(|(ra, rb)| {
            let family = super::family_of(&ra.key);
            let noise = families
                .iter()
                .find(|x| x.family == family)
                .map_or(noise, |x| x.noise);
            let (ca, cb) = (clarity(ra, margin), clarity(rb, margin));
            let verdict = if ra.entry == rb.entry {
                Verdict::Same
            } else {
                match (ca, cb) {
                    (Some(x), Some(y)) if x > noise && y > noise => Verdict::Disagree,
                    (Some(_), Some(_)) => Verdict::WithinNoise,
                    _ => Verdict::Unknown,
                }
            };
            let same_list = ra.times_us.len() == rb.times_us.len();
            let at_b = |i: usize| {
                rb.times_us
                    .get(i)
                    .copied()
                    .filter(|v| same_list && v.is_finite())
            };
            let default_us_b = at_b(0);
            let pick_a_us_b = winner_index(ra).and_then(at_b);
            KeyComparison {
                key: ra.key.clone(),
                family: family.to_string(),
                noise,
                default_entry: ra.default_entry.clone(),
                pick_a: ra.entry.clone(),
                pick_b: rb.entry.clone(),
                default_us_b,
                pick_a_us_b,
                gain_b: default_us_b.zip(pick_a_us_b).map(|(d, p)| 1.0 - p / d),
                clarity_a: ca,
                clarity_b: cb,
                verdict,
            }
        })
        .collect();
    Comparison {
        noise,
        noise_samples,
        families,
        keys,
        only_a: a
            .routes
            .iter()
            .filter(|r| find(b, &r.key).is_none())
            .count(),
        only_b: b
            .routes
            .iter()
            .filter(|r| find(a, &r.key).is_none())
            .count(),
    }
}

/// The noise over these key pairs (see the module docs) and how many candidate pairs it was
/// estimated from.
fn noise_of<'a>(pairs: impl Iterator<Item = &'a (Route, Route)>) -> (f64, usize) {
    let mut ratios: Vec<f64> = Vec::new();
    for (ra, rb) in pairs {
        if let Some((xa, xb)) = relative(ra, rb) {
            for c in 1..xa.len() {
                if xa[c].is_finite() && xb[c].is_finite() {
                    ratios.push((xa[c] / xb[c]).ln().abs());
                }
            }
        }
    }
    ratios.sort_by(f64::total_cmp);
    let noise = if ratios.is_empty() {
        MIN_NOISE
    } else {
        let i = ((ratios.len() as f64 * 0.9).ceil() as usize).clamp(1, ratios.len()) - 1;
        ratios[i].max(MIN_NOISE)
    };
    (noise, ratios.len())
}

/// The part of an entry name after its column tile (`..._t1_r4_w4_u2_p` gives
/// `r4_w4_u2_p`), or a GDN step entry's tile (`gdn_step_f32_l16e8r2w8vg6_k4` gives
/// `l16e8r2w8vg6`), for tables; the whole name where it has neither. Display only.
pub fn split_part(entry: &str) -> &str {
    if let Some(tile) = super::gdn::short_entry(entry) {
        return tile;
    }
    let b = entry.as_bytes();
    let mut i = entry.len();
    while let Some(at) = entry[..i].rfind("_t") {
        let digits = b[at + 2..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 && b.get(at + 2 + digits) == Some(&b'_') {
            return &entry[at + 3 + digits..];
        }
        i = at;
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::Fingerprint;

    fn fp() -> Fingerprint {
        Fingerprint {
            name: "Test GPU".into(),
            compute_capability: (9, 0),
            sm_count: 1,
            nvrtc_version: (13, 0),
            template_set_hash: "t".into(),
        }
    }

    /// A route as `ninfer tune` writes it: candidate `i` is entry `e{i}`, 0 the default.
    /// A key without a family (`k1`) is taken as a `linear_exact` one.
    fn route(key: &str, times: &[f64], margin: f64) -> Route {
        let medians: Vec<Option<f64>> = times.iter().map(|&t| Some(t)).collect();
        let w = crate::tune::choose_winner(0, &medians, margin);
        let key = if key.contains('/') {
            key.to_string()
        } else {
            format!("linear_exact/{key}")
        };
        Route {
            key,
            entry: format!("e{w}"),
            median_us: times[w],
            default_entry: "e0".into(),
            default_us: times[0],
            candidates: times.len() as u32,
            times_us: times.to_vec(),
            sources: None,
        }
    }

    fn profile(routes: Vec<Route>) -> Profile {
        let mut p = Profile::new(&fp());
        for r in routes {
            p.set_route(r);
        }
        p
    }

    const M: f64 = 0.03;

    #[test]
    fn same_winners_agree_and_noise_comes_from_relative_times() {
        // Run B is 10% slower across the board: relative times are equal, noise is minimal.
        let a = profile(vec![
            route("k1", &[10.0, 6.0, 12.0], M),
            route("k2", &[10.0, 11.0, 12.0], M),
        ]);
        let b = profile(vec![
            route("k1", &[11.0, 6.6, 13.2], M),
            route("k2", &[11.0, 12.1, 13.2], M),
            route("k3", &[1.0, 2.0], M),
        ]);
        let c = compare(&a, &b, M);
        assert_eq!(c.noise, MIN_NOISE);
        assert_eq!(c.noise_samples, 4);
        assert_eq!(c.count(Verdict::Same), 2);
        assert_eq!((c.only_a, c.only_b), (0, 1));
        let k1 = &c.keys[0];
        assert_eq!((k1.pick_a.as_str(), k1.pick_b.as_str()), ("e1", "e1"));
        assert!((k1.gain_b.unwrap() - 0.4).abs() < 1e-9);
        assert!(c.slower_beyond_noise().is_empty());
    }

    #[test]
    fn a_choice_at_the_margin_is_within_the_noise() {
        // k1: challenger 3.5% faster in A (wins), 2.5% faster in B (default kept): both
        // within the noise of the margin's bound. k2 fixes the noise at about 2%.
        let a = profile(vec![
            route("k1", &[100.0, 96.5], M),
            route("k2", &[100.0, 150.0], M),
        ]);
        let b = profile(vec![
            route("k1", &[100.0, 97.5], M),
            route("k2", &[100.0, 153.0], M),
        ]);
        let c = compare(&a, &b, M);
        assert!(c.noise > 0.015 && c.noise < 0.025, "{}", c.noise);
        assert_eq!(c.keys[0].verdict, Verdict::WithinNoise);
        assert_eq!(c.keys[1].verdict, Verdict::Same);
        // A's pick measured in B: 2.5% faster than the default, not slower.
        assert!(c.slower_beyond_noise().is_empty());
    }

    /// Twenty keys timed alike in both runs (about 1% apart): the noise.
    fn steady(run: usize) -> Vec<Route> {
        (0..20)
            .map(|i| {
                let x = 120.0 + i as f64 + if run == 0 { 0.0 } else { 1.0 };
                route(&format!("s{i:02}"), &[100.0, x], M)
            })
            .collect()
    }

    #[test]
    fn clear_choices_that_differ_are_a_disagreement() {
        let mut a = steady(0);
        a.push(route("k1", &[100.0, 50.0, 80.0], M));
        let mut b = steady(1);
        b.push(route("k1", &[100.0, 80.0, 50.0], M));
        let c = compare(&profile(a.clone()), &profile(b), M);
        assert!(c.noise < 0.01, "{}", c.noise);
        assert_eq!(c.count(Verdict::Same), 20);
        let k1 = c.keys.iter().find(|k| k.key.ends_with("/k1")).unwrap();
        assert_eq!(k1.verdict, Verdict::Disagree);
        // A's pick (e1) runs at 80 in B against a default of 100: still faster.
        assert!((k1.gain_b.unwrap() - 0.2).abs() < 1e-9);
        // The same picks slower than the default in B would be flagged.
        let mut b = steady(1);
        b.push(route("k1", &[50.0, 80.0, 100.0], M));
        let c = compare(&profile(a), &profile(b), M);
        assert_eq!(c.slower_beyond_noise().len(), 1);
    }

    #[test]
    fn each_family_is_judged_by_its_own_noise() {
        // The linear keys agree to 1%; the GDN keys' relative times move by 10% between
        // runs. A GDN key whose picks differ by 8% is within the GDN noise, not a
        // disagreement; the linear noise stays at its own level.
        let mut a = steady(0);
        let mut b = steady(1);
        for i in 0..10 {
            let key = format!("gdn_step/f32/hk16/hv48/t{}/n128/k{}", 1, 128 + i);
            a.push(route(&key, &[100.0, 130.0], M));
            b.push(route(&key, &[100.0, 143.0], M));
        }
        a.push(route(
            "gdn_step/f32/hk16/hv48/t8/n128/k128",
            &[100.0, 80.0, 87.0],
            M,
        ));
        b.push(route(
            "gdn_step/f32/hk16/hv48/t8/n128/k128",
            &[100.0, 87.0, 80.0],
            M,
        ));
        let c = compare(&profile(a), &profile(b), M);
        let fam: Vec<(&str, usize)> = c
            .families
            .iter()
            .map(|f| (f.family.as_str(), f.keys))
            .collect();
        assert_eq!(fam, [("linear_exact", 20), ("gdn_step", 11)]);
        assert!(c.families[0].noise < 0.01, "{}", c.families[0].noise);
        assert!(c.families[1].noise > 0.08, "{}", c.families[1].noise);
        assert_eq!(c.count(Verdict::Same), 30);
        let k = c.keys.iter().find(|k| k.key.contains("/t8/")).unwrap();
        assert_eq!(k.verdict, Verdict::WithinNoise);
        assert_eq!(k.family, "gdn_step");
        assert!(c.slower_beyond_noise().is_empty());
    }

    #[test]
    fn failed_candidates_and_missing_times() {
        let inf = f64::INFINITY;
        let a = profile(vec![route("k1", &[10.0, inf, 5.0], M)]);
        let b = profile(vec![route("k1", &[10.0, 4.0, 5.0], M)]);
        let c = compare(&a, &b, M);
        // e2 vs e1: clear in B (4 vs 5), and in A e1 failed: nothing competes with e2.
        assert_eq!(c.keys[0].verdict, Verdict::Disagree);
        let mut bare = route("k1", &[10.0, 4.0], M);
        bare.times_us.clear();
        let c = compare(&a, &profile(vec![bare]), M);
        assert_eq!(c.keys[0].verdict, Verdict::Unknown);
        assert_eq!(c.keys[0].gain_b, None);
    }

    #[test]
    fn split_parts() {
        assert_eq!(
            split_part("linear_exact_stream_q4_g64_plain_t1_r4_w4_u2"),
            "r4_w4_u2"
        );
        assert_eq!(
            split_part("linear_exact_stream_q8_g32_plain_t8_r2_w8_u1_p"),
            "r2_w8_u1_p"
        );
        assert_eq!(split_part("x_tail_t12_y"), "y");
        assert_eq!(split_part("no_tile"), "no_tile");
        assert_eq!(
            split_part("gdn_step_f16_l16e8r2w8vm3g4s4_k4"),
            "l16e8r2w8vm3g4s4"
        );
    }
}
