//! Route selection per device (DESIGN.md section 5): the device fingerprint that profiles are
//! keyed by, the shape buckets routes are keyed by, the profile file that maps one to the
//! other, the route families and their candidates ([`exact`]: the linear layers' GEMV splits;
//! [`gdn`]: the GDN decode step's tiles; [`attn`]: the decode attention's split-K width;
//! [`a16`]: the bf16-activation tensor-core tile for more than 32 tokens), the tuners that
//! time them ([`measure`] and its siblings) on the shapes of a model ([`shapes`]), what each
//! route's choice rests on in the templates ([`sources`]: a profile made with another
//! template set keeps the routes whose candidates render alike), and the route table the
//! engine runs with ([`routes`]).

pub mod a16;
pub mod attn;
pub mod bucket;
pub mod compare;
pub mod exact;
pub mod fingerprint;
pub mod gdn;
pub mod measure;
pub mod measure_a16;
pub mod measure_attn;
pub mod measure_gdn;
pub mod profile;
pub mod routes;
pub mod shapes;
pub mod sources;

pub use bucket::{t_bucket, ShapeKey};
pub use fingerprint::Fingerprint;
pub use profile::{choose_winner, select, select_in, Profile, ProfileChoice, ProfileError, Route};
pub use routes::{resolve, search_dirs, ProfileRequest, Resolved, RouteTable};

/// The family of a route key: its op's first part (`linear_exact`, `gdn_step`).
pub fn family_of(key: &str) -> &str {
    key.split('/').next().unwrap_or(key)
}
