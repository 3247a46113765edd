//! The HTTP side: routes, request parsing, and turning a job's events into a JSON answer or
//! a server-sent-event stream.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_stream::StreamExt;

use super::engine::{Engine, Event, Finish, Job};
use super::openai::*;

/// What every handler shares.
pub struct AppState {
    pub engine: Engine,
    /// `max_tokens` of a chat request that gives none.
    pub default_max_tokens: usize,
    /// Numbers the answers' ids (and the seed of a request that gives none).
    requests: AtomicU64,
}

impl AppState {
    pub fn new(engine: Engine, default_max_tokens: usize) -> Self {
        AppState {
            engine,
            default_max_tokens,
            requests: AtomicU64::new(0),
        }
    }
}

/// The server's routes.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/completions", post(completions))
        .fallback(not_found)
        .with_state(state)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let kind = if status.is_client_error() {
        "invalid_request_error"
    } else {
        "server_error"
    };
    (status, Json(ErrorBody::new(message, kind))).into_response()
}

fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, String> {
    serde_json::from_slice(body)
        .map_err(|e| format!("the request body is not a valid request: {e}"))
}

async fn health() -> &'static str {
    "ok"
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such endpoint: this server answers GET /v1/models, POST /v1/chat/completions, POST /v1/completions and GET /health",
    )
}

async fn models(State(s): State<Arc<AppState>>) -> Json<ModelList> {
    Json(ModelList {
        object: "list",
        data: vec![ModelCard {
            id: s.engine.info.id.clone(),
            object: "model",
            created: 0,
            owned_by: "ninfer",
        }],
    })
}

/// A queued job: its events, and the prompt's token count once the engine has taken it.
struct Running {
    events: UnboundedReceiver<Event>,
    prompt_tokens: usize,
}

/// Queues `checked` and waits until the engine has accepted it (so that a refusal is an
/// HTTP status, not a stream that ends at once).
async fn start(s: &AppState, checked: Checked) -> Result<Running, Response> {
    let (tx, mut events) = unbounded_channel();
    let job = Job {
        prompt: checked.prompt,
        max_tokens: checked.max_tokens,
        sampling: checked.sampling,
        stop: checked.stop,
        events: tx,
    };
    if s.engine.submit(job).is_err() {
        return Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the engine has stopped; restart the server",
        ));
    }
    match events.recv().await {
        Some(Event::Started { prompt_tokens }) => Ok(Running {
            events,
            prompt_tokens,
        }),
        Some(Event::Refused {
            message,
            bad_request,
        }) => Err(refused(message, bad_request)),
        Some(other) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the engine answered out of order ({other:?})"),
        )),
        None => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the engine dropped the request",
        )),
    }
}

/// Parses and checks a request body (`check` gets the request's number, which names its
/// answer and seeds it where it gives no seed), queues it and waits until the engine has
/// taken it: (the number, whether to stream, the running job).
async fn accept<R: DeserializeOwned>(
    s: &AppState,
    body: &Bytes,
    check: impl FnOnce(&R, u64) -> Result<Checked, String>,
) -> Result<(u64, bool, Running), Response> {
    let request: R = parse(body).map_err(|e| error(StatusCode::BAD_REQUEST, e))?;
    let n = s.requests.fetch_add(1, Ordering::Relaxed);
    let checked = check(&request, n).map_err(|e| error(StatusCode::BAD_REQUEST, e))?;
    let stream = checked.stream;
    Ok((n, stream, start(s, checked).await?))
}

fn refused(message: String, bad_request: bool) -> Response {
    let status = if bad_request {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    error(status, message)
}

/// The whole text of a job that runs to its end, its finish and completion token count.
async fn collect(run: &mut Running) -> Result<(String, Finish, usize), Response> {
    let mut text = String::new();
    while let Some(ev) = run.events.recv().await {
        match ev {
            Event::Text(t) => text.push_str(&t),
            Event::Done {
                finish,
                completion_tokens,
            } => return Ok((text, finish, completion_tokens)),
            Event::Refused {
                message,
                bad_request,
            } => return Err(refused(message, bad_request)),
            Event::Started { .. } => {}
        }
    }
    Err(error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the engine stopped before the answer was complete",
    ))
}

fn sse_json<T: Serialize>(value: &T) -> Result<SseEvent, Infallible> {
    Ok(SseEvent::default().data(serde_json::to_string(value).expect("answers serialise")))
}

/// The events of a running job as a stream of `data:` events: `first` (if any), one per
/// text piece, the last made by `last` from the finish, then `[DONE]`. An engine failure
/// mid-stream becomes an error object in the stream (the status was already sent).
fn stream_events<F, L>(run: Running, first: Option<SseEvent>, piece: F, last: L) -> Response
where
    F: Fn(String) -> Result<SseEvent, Infallible> + Send + 'static,
    L: Fn(Finish) -> Result<SseEvent, Infallible> + Send + 'static,
{
    let body = UnboundedReceiverStream::new(run.events).filter_map(move |ev| match ev {
        Event::Text(t) => Some(piece(t)),
        Event::Done { finish, .. } => Some(last(finish)),
        Event::Refused { message, .. } => Some(sse_json(&ErrorBody::new(message, "server_error"))),
        Event::Started { .. } => None,
    });
    let head = tokio_stream::iter(first.map(Ok));
    let done = tokio_stream::once(Ok(SseEvent::default().data("[DONE]")));
    Sse::new(head.chain(body).chain(done)).into_response()
}

async fn chat_completions(State(s): State<Arc<AppState>>, body: Bytes) -> Response {
    let default_max = s.default_max_tokens;
    let check = |r: &ChatRequest, n| r.check(default_max, n);
    let (n, stream, mut run) = match accept(&s, &body, check).await {
        Ok(accepted) => accepted,
        Err(e) => return e,
    };
    let (id, created, model) = (format!("chatcmpl-{n}"), now(), s.engine.info.id.clone());
    if !stream {
        return match collect(&mut run).await {
            Ok((content, finish, completion_tokens)) => Json(ChatCompletion {
                id,
                object: "chat.completion",
                created,
                model,
                choices: vec![ChatChoice {
                    index: 0,
                    message: AssistantMessage {
                        role: "assistant",
                        content,
                    },
                    finish_reason: finish_reason(finish),
                }],
                usage: Usage::new(run.prompt_tokens, completion_tokens),
            })
            .into_response(),
            Err(e) => e,
        };
    }
    let chunk = move |delta: Delta, finish: Option<&'static str>| ChatChunk {
        id: id.clone(),
        object: "chat.completion.chunk",
        created,
        model: model.clone(),
        choices: vec![ChunkChoice {
            index: 0,
            delta,
            finish_reason: finish,
        }],
    };
    let first = sse_json(&chunk(
        Delta {
            role: Some("assistant"),
            content: Some(String::new()),
        },
        None,
    ))
    .ok();
    let c1 = chunk.clone();
    stream_events(
        run,
        first,
        move |t| {
            sse_json(&c1(
                Delta {
                    role: None,
                    content: Some(t),
                },
                None,
            ))
        },
        move |f| sse_json(&chunk(Delta::default(), Some(finish_reason(f)))),
    )
}

async fn completions(State(s): State<Arc<AppState>>, body: Bytes) -> Response {
    let check = |r: &CompletionRequest, n| r.check(n);
    let (n, stream, mut run) = match accept(&s, &body, check).await {
        Ok(accepted) => accepted,
        Err(e) => return e,
    };
    let (id, created, model) = (format!("cmpl-{n}"), now(), s.engine.info.id.clone());
    let answer =
        move |text: String, finish: Option<&'static str>, usage: Option<Usage>| TextCompletion {
            id: id.clone(),
            object: "text_completion",
            created,
            model: model.clone(),
            choices: vec![TextChoice {
                index: 0,
                text,
                logprobs: None,
                finish_reason: finish,
            }],
            usage,
        };
    if !stream {
        return match collect(&mut run).await {
            Ok((text, finish, completion_tokens)) => Json(answer(
                text,
                Some(finish_reason(finish)),
                Some(Usage::new(run.prompt_tokens, completion_tokens)),
            ))
            .into_response(),
            Err(e) => e,
        };
    }
    let a1 = answer.clone();
    stream_events(
        run,
        None,
        move |t| sse_json(&a1(t, None, None)),
        move |f| sse_json(&answer(String::new(), Some(finish_reason(f)), None)),
    )
}
