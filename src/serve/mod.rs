//! `ninfer-serve`: an OpenAI-compatible HTTP server over one loaded model.
//!
//! - [`engine`]: the thread that owns the backend and the model and runs jobs in order;
//! - [`openai`]: the wire format (requests, answers, stream chunks, errors) and its checks;
//! - [`http`]: the routes, and a job's events as a JSON answer or a server-sent-event stream;
//! - [`stop`]: stop strings over streamed text.
//!
//! Requests are served one at a time, in arrival order (the others wait in the queue);
//! decoding several requests together as lanes is the engine's next step here.

pub mod engine;
pub mod http;
pub mod openai;
pub mod stop;
