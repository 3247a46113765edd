//! Route selection per device. For now: the device fingerprint that profiles are keyed by.

pub mod fingerprint;

pub use fingerprint::Fingerprint;
