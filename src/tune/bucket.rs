//! Shape buckets (DESIGN.md section 5): a route serves one op at one token-count bucket and
//! exact weight dimensions N and K (weights are static, token counts are not).

use std::fmt;
use std::str::FromStr;

/// The bucket of a token count, named by its upper bound: 1, 2, 3-4 -> 4, 5-8 -> 8,
/// 9-16 -> 16, 17-32 -> 32, then powers of two (33-64 -> 64, ...).
pub fn t_bucket(t: usize) -> u32 {
    assert!(
        t > 0,
        "t_bucket: a token count of 0 has no bucket (a batch has at least one token)"
    );
    let upper = t.next_power_of_two();
    u32::try_from(upper).unwrap_or_else(|_| panic!("t_bucket: token count {t} is too large"))
}

/// One op at one shape bucket, the key of a route in a profile.
/// Its string form is `op/t<bucket>/n<N>/k<K>`, e.g. `linear/t8/n17408/k5120`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShapeKey {
    pub op: String,
    pub t_bucket: u32,
    pub n: usize,
    pub k: usize,
}

impl ShapeKey {
    /// The key for `t` tokens (bucketed here) and exact `n`, `k`.
    pub fn new(op: &str, t: usize, n: usize, k: usize) -> Self {
        ShapeKey {
            op: op.to_string(),
            t_bucket: t_bucket(t),
            n,
            k,
        }
    }
}

impl fmt::Display for ShapeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/t{}/n{}/k{}", self.op, self.t_bucket, self.n, self.k)
    }
}

impl FromStr for ShapeKey {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("`{s}` is not a shape key (`op/t<bucket>/n<N>/k<K>`): {why}");
        // Split from the right so that an op name may itself contain '/'.
        let mut parts = s.rsplitn(4, '/');
        let (k, n, t, op) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(k), Some(n), Some(t), Some(op)) => (k, n, t, op),
            _ => return Err(bad("it needs four parts separated by '/'")),
        };
        if op.is_empty() {
            return Err(bad("the op name is empty"));
        }
        let num = |part: &str, prefix: char, what: &str| -> Result<usize, String> {
            part.strip_prefix(prefix)
                .and_then(|d| d.parse::<usize>().ok())
                .ok_or_else(|| {
                    bad(&format!(
                        "the {what} part `{part}` is not `{prefix}<number>`"
                    ))
                })
        };
        let t = num(t, 't', "token bucket")?;
        if t == 0 || t_bucket(t) as usize != t {
            return Err(bad(&format!(
                "{t} is not a token bucket (1, 2, 4, 8, ... )"
            )));
        }
        Ok(ShapeKey {
            op: op.to_string(),
            t_bucket: t as u32,
            n: num(n, 'n', "N")?,
            k: num(k, 'k', "K")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_at_each_boundary() {
        let cases = [
            (1, 1),
            (2, 2),
            (3, 4),
            (4, 4),
            (5, 8),
            (8, 8),
            (9, 16),
            (16, 16),
            (17, 32),
            (32, 32),
            (33, 64),
            (64, 64),
            (65, 128),
            (4096, 4096),
            (4097, 8192),
        ];
        for (t, b) in cases {
            assert_eq!(t_bucket(t), b, "t = {t}");
        }
    }

    #[test]
    #[should_panic(expected = "token count of 0")]
    fn zero_tokens_panics() {
        t_bucket(0);
    }

    #[test]
    fn key_round_trip() {
        let key = ShapeKey::new("linear", 7, 17408, 5120);
        assert_eq!(key.to_string(), "linear/t8/n17408/k5120");
        assert_eq!("linear/t8/n17408/k5120".parse::<ShapeKey>().unwrap(), key);
        let nested = ShapeKey::new("moe/up", 1, 3, 4);
        assert_eq!(nested.to_string().parse::<ShapeKey>().unwrap(), nested);
    }

    #[test]
    fn bad_keys_are_refused() {
        for s in [
            "",
            "linear",
            "linear/t8/n1",
            "/t8/n1/k2",
            "linear/t3/n1/k2",
            "linear/t0/n1/k2",
            "linear/8/n1/k2",
            "linear/t8/nx/k2",
        ] {
            assert!(s.parse::<ShapeKey>().is_err(), "{s}");
        }
    }
}
