//! Route selection per device: the device fingerprint that profiles are keyed by, the shape
//! buckets routes are keyed by, and the profile file that maps one to the other.

pub mod bucket;
pub mod fingerprint;
pub mod profile;

pub use bucket::{t_bucket, ShapeKey};
pub use fingerprint::Fingerprint;
pub use profile::{choose_winner, select, Profile, ProfileChoice, ProfileError, Route};
