//! Route selection per device (DESIGN.md section 5): the device fingerprint that profiles are
//! keyed by, the shape buckets routes are keyed by, the profile file that maps one to the
//! other, the route families and their candidates ([`exact`]), the tuner that times them
//! ([`measure`]) on the shapes of a model ([`shapes`]), and the route table the engine runs
//! with ([`routes`]).

pub mod bucket;
pub mod compare;
pub mod exact;
pub mod fingerprint;
pub mod measure;
pub mod profile;
pub mod routes;
pub mod shapes;

pub use bucket::{t_bucket, ShapeKey};
pub use fingerprint::Fingerprint;
pub use profile::{choose_winner, select, select_in, Profile, ProfileChoice, ProfileError, Route};
pub use routes::{resolve, search_dirs, ProfileRequest, Resolved, RouteTable};
