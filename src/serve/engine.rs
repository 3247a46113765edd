//! The engine thread: it owns the backend and the loaded model and runs generation jobs one
//! at a time, in arrival order, sending each job's text back as it is produced.
//!
//! The backend is opened on the thread itself (a GPU context stays with the thread that
//! made it), and the HTTP side only ever holds the job queue's sender.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::thread;

use tokio::sync::mpsc::UnboundedSender;

use super::stop::StopMatcher;
use crate::cli::run::{choose_backend, Chosen, Device, GpuArgs};
use crate::cli::CliError;
use crate::engine::generate::{
    generate_chunked, GenerateOptions, Sampling, StopReason, TextStream,
};
use crate::engine::Backend;
use crate::model::arch::{self, CausalLm};
use crate::model::precision::PrecisionOptions;
use crate::model::{ChatMessage, ModelFiles};

/// What a job generates from.
#[derive(Debug, Clone)]
pub enum Prompt {
    /// A conversation, rendered through the model's chat template.
    Chat(Vec<ChatMessage>),
    /// Plain text, encoded as it is (with the tokenizer's start token where it has one).
    Text(String),
}

/// One generation request.
#[derive(Debug)]
pub struct Job {
    pub prompt: Prompt,
    pub max_tokens: usize,
    pub sampling: Sampling,
    /// Strings that end the text (not included in it).
    pub stop: Vec<String>,
    /// Where the job's events go; generation stops once nobody listens.
    pub events: UnboundedSender<Event>,
}

/// Why the text ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The model's stop token or one of the job's stop strings.
    Stop,
    /// `max_tokens` tokens were generated.
    Length,
}

/// What a job reports, in this order: `Started`, any number of `Text`, then `Done`; or
/// `Refused` alone (or after `Started`, where generation itself failed).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Started {
        prompt_tokens: usize,
    },
    Text(String),
    Done {
        finish: Finish,
        completion_tokens: usize,
    },
    /// The job did not run to its end; `bad_request` when the request was at fault.
    Refused {
        message: String,
        bad_request: bool,
    },
}

/// What the server says about its model.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    /// The name clients see (`/v1/models`).
    pub id: String,
    /// Whether the model has a chat template (`/v1/chat/completions` needs one).
    pub chat: bool,
    /// The longest context the model was trained for, where its config says.
    pub context: Option<usize>,
    /// The backend it runs on: `cpu` or `cuda`.
    pub device: &'static str,
}

/// The handle of the running engine thread.
pub struct Engine {
    jobs: mpsc::Sender<Job>,
    pub info: ModelInfo,
}

impl Engine {
    /// Opens the backend and loads the model on a new thread; returns once it is ready to
    /// take jobs, or with the error that stopped it.
    pub fn start(
        files: ModelFiles,
        id: String,
        precision: PrecisionOptions,
        device: Device,
        gpu: GpuArgs,
    ) -> Result<Engine, CliError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready_tx, ready) = mpsc::channel::<Result<ModelInfo, CliError>>();
        thread::Builder::new()
            .name("ninfer-engine".into())
            .spawn(move || {
                let info = |device| ModelInfo {
                    id,
                    chat: files.chat_template.is_some(),
                    context: files.config.max_position_embeddings,
                    device,
                };
                match choose_backend(device, &gpu, &precision) {
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                    Ok(Chosen::Cpu(b)) => {
                        serve_on(&b, &files, &precision, info("cpu"), ready_tx, queue)
                    }
                    Ok(Chosen::Cuda(b)) => {
                        serve_on(&b, &files, &precision, info("cuda"), ready_tx, queue)
                    }
                }
            })
            .map_err(|e| CliError::failed(format!("cannot start the engine thread: {e}")))?;
        let info = ready
            .recv()
            .map_err(|_| CliError::failed("the engine thread stopped while loading the model"))??;
        Ok(Engine { jobs, info })
    }

    /// Queues a job; gives it back if the engine thread has stopped.
    pub fn submit(&self, job: Job) -> Result<(), Job> {
        self.jobs.send(job).map_err(|e| e.0)
    }
}

/// Loads the model on `backend`, reports ready, then runs jobs until the queue closes.
fn serve_on<B: Backend>(
    backend: &B,
    files: &ModelFiles,
    precision: &PrecisionOptions,
    info: ModelInfo,
    ready: mpsc::Sender<Result<ModelInfo, CliError>>,
    queue: mpsc::Receiver<Job>,
) {
    let model = match arch::load_with(backend, files, precision) {
        Ok(m) => m,
        Err(e) => {
            let _ = ready.send(Err(e.into()));
            return;
        }
    };
    let context = info.context;
    if ready.send(Ok(info)).is_err() {
        return;
    }
    for job in queue {
        let events = job.events.clone();
        // A failure inside one job (a bad state, an engine error) is that job's answer;
        // the next job starts from a fresh state.
        let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
            run_job(&model, files, precision, context, job)
        }));
        if let Err(panic) = ran {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "the engine failed".into());
            let _ = events.send(Event::Refused {
                message,
                bad_request: false,
            });
        }
    }
}

/// The token ids a prompt stands for, or why it cannot run.
pub fn encode_prompt(files: &ModelFiles, prompt: &Prompt) -> Result<Vec<u32>, String> {
    let (text, special) = match prompt {
        Prompt::Chat(messages) => {
            let template = files
                .chat_template
                .as_ref()
                .ok_or("this model has no chat template; use /v1/completions for plain text")?;
            (
                template.render(messages, true).map_err(|e| e.to_string())?,
                false,
            )
        }
        Prompt::Text(text) => (text.clone(), true),
    };
    let ids = files
        .tokenizer
        .encode(&text, special)
        .map_err(|e| e.to_string())?;
    if ids.is_empty() {
        return Err("the prompt encodes to no tokens".into());
    }
    Ok(ids)
}

fn run_job<B: Backend, M: CausalLm<B>>(
    model: &M,
    files: &ModelFiles,
    precision: &PrecisionOptions,
    context: Option<usize>,
    job: Job,
) {
    let refuse = |message: String| {
        let _ = job.events.send(Event::Refused {
            message,
            bad_request: true,
        });
    };
    let ids = match encode_prompt(files, &job.prompt) {
        Ok(ids) => ids,
        Err(e) => return refuse(e),
    };
    if let Some(ctx) = context {
        if ids.len() + job.max_tokens > ctx {
            return refuse(format!(
                "the prompt's {} tokens and max_tokens {} exceed the model's context of {ctx} tokens",
                ids.len(),
                job.max_tokens
            ));
        }
    }
    if job
        .events
        .send(Event::Started {
            prompt_tokens: ids.len(),
        })
        .is_err()
    {
        return;
    }
    let opts = GenerateOptions {
        max_new_tokens: job.max_tokens,
        sampling: job.sampling,
        stop_ids: files.tokenizer.stop_ids().to_vec(),
    };
    let mut state = model.new_state();
    let mut text = TextStream::new(&files.tokenizer, true);
    let mut stops = StopMatcher::new(&job.stop);
    let mut failure = None;
    let mut listening = true;
    let send = |piece: String, listening: &mut bool| {
        if !piece.is_empty() && job.events.send(Event::Text(piece)).is_err() {
            *listening = false;
        }
    };
    let generation = generate_chunked(
        model,
        &mut state,
        &ids,
        &opts,
        precision.prefill_chunk,
        |id| {
            match text.push(id) {
                Ok(piece) => send(stops.push(&piece), &mut listening),
                Err(e) => failure = Some(e.to_string()),
            }
            listening && failure.is_none() && !stops.stopped()
        },
    );
    if let Some(message) = failure {
        let _ = job.events.send(Event::Refused {
            message,
            bad_request: false,
        });
        return;
    }
    if !listening {
        return;
    }
    match text.finish() {
        Ok(tail) => {
            let mut rest = stops.push(&tail);
            rest.push_str(&stops.finish());
            send(rest, &mut listening);
        }
        Err(e) => {
            let _ = job.events.send(Event::Refused {
                message: e.to_string(),
                bad_request: false,
            });
            return;
        }
    }
    let finish = match generation.reason {
        _ if stops.stopped() => Finish::Stop,
        StopReason::StopToken => Finish::Stop,
        StopReason::Length | StopReason::Callback => Finish::Length,
    };
    let _ = job.events.send(Event::Done {
        finish,
        completion_tokens: generation.tokens.len(),
    });
}
