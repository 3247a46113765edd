//! `ninfer-serve`: an OpenAI-compatible HTTP server over one loaded model.
//!
//! - [`engine`]: the thread that owns the backend and the model and decodes up to
//!   `--lanes` jobs together as lanes of one batched step, admitting queued ones in order;
//! - [`openai`]: the wire format (requests, answers, stream chunks, errors) and its checks;
//! - [`http`]: the routes, and a job's events as a JSON answer or a server-sent-event stream;
//! - [`stop`]: stop strings over streamed text.

pub mod engine;
pub mod http;
pub mod openai;
pub mod stop;
