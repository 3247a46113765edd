//! The engine thread: it owns the backend and the loaded model and decodes up to
//! `lanes` jobs together, each a lane of one batched step ([`CausalLm::forward_lanes`]:
//! every weight read once for all lanes), sending each job's text back as it is produced.
//!
//! Between steps the thread admits queued jobs (in arrival order) into free lanes: a new
//! job's prompt runs through the model on its own state, then the job joins the next step.
//! A lane leaves at its stop token, stop string or `max_tokens`, or when its client has
//! gone. The backend is opened on the thread itself (a GPU context stays with the thread
//! that made it), and the HTTP side only ever holds the job queue's sender.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, TryRecvError};
use std::thread;

use rand::rngs::StdRng;
use rand::SeedableRng;
use tokio::sync::mpsc::UnboundedSender;

use super::stop::StopMatcher;
use crate::cli::run::{choose_backend, Chosen, Device, GpuArgs};
use crate::cli::CliError;
use crate::engine::generate::{sample, Sampling, TextStream};
use crate::engine::Backend;
use crate::model::arch::{self, forward_chunked, CausalLm, LogitsWanted};
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
        lanes: usize,
    ) -> Result<Engine, CliError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready_tx, ready) = mpsc::channel::<Result<ModelInfo, CliError>>();
        thread::Builder::new()
            .name("ninfer-engine".into())
            .spawn(move || {
                let info = |device| ModelInfo {
                    id,
                    context: files.config.max_position_embeddings,
                    device,
                };
                match choose_backend(device, &gpu, &precision) {
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                    Ok(Chosen::Cpu(b)) => {
                        serve_on(&b, &files, &precision, info("cpu"), lanes, ready_tx, queue)
                    }
                    Ok(Chosen::Cuda(b)) => {
                        serve_on(&b, &files, &precision, info("cuda"), lanes, ready_tx, queue)
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

/// Loads the model on `backend`, reports ready, then serves jobs in lanes until the queue
/// closes.
#[allow(clippy::too_many_arguments)]
fn serve_on<B: Backend>(
    backend: &B,
    files: &ModelFiles,
    precision: &PrecisionOptions,
    info: ModelInfo,
    lanes: usize,
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
    let admit = |job: Job| Lane::admit(&model, files, precision, context, job);
    let mut running: Vec<Lane<'_, _>> = Vec::new();
    loop {
        // Free lanes take queued jobs; with none running, wait for one.
        while running.len() < lanes {
            let job = if running.is_empty() {
                match queue.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                }
            } else {
                match queue.try_recv() {
                    Ok(job) => job,
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            };
            let events = job.events.clone();
            match std::panic::catch_unwind(AssertUnwindSafe(|| admit(job))) {
                Ok(Some(lane)) => running.push(lane),
                Ok(None) => {}
                Err(panic) => {
                    let _ = events.send(Event::Refused {
                        message: panic_message(panic),
                        bad_request: false,
                    });
                }
            }
        }
        if running.is_empty() {
            continue;
        }
        // One step for every lane; a failure inside it ends them all (their states are
        // then in doubt).
        let stepped = std::panic::catch_unwind(AssertUnwindSafe(|| step(&model, &mut running)));
        if let Err(panic) = stepped {
            let message = panic_message(panic);
            for mut lane in running.drain(..) {
                lane.refuse(message.clone(), false);
            }
        }
        running.retain(|lane| !lane.ended);
    }
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "the engine failed".into())
}

/// The token ids a prompt stands for, or why it cannot run.
fn encode_prompt(files: &ModelFiles, prompt: &Prompt) -> Result<Vec<u32>, String> {
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

/// A job being decoded: its sequence state and what turns its tokens into events.
struct Lane<'a, S> {
    events: UnboundedSender<Event>,
    state: S,
    text: TextStream<'a>,
    stops: StopMatcher,
    stop_ids: &'a [u32],
    sampling: Sampling,
    rng: StdRng,
    max_tokens: usize,
    /// Tokens generated so far (the stop token not counted).
    generated: usize,
    /// The token the next step feeds.
    next: u32,
    ended: bool,
}

impl<'a, S> Lane<'a, S> {
    /// Checks and encodes a job, runs its prompt, and takes its first token: the lane, or
    /// `None` where the job was refused or already ended.
    fn admit<B: Backend, M: CausalLm<B, State = S>>(
        model: &M,
        files: &'a ModelFiles,
        precision: &PrecisionOptions,
        context: Option<usize>,
        job: Job,
    ) -> Option<Lane<'a, S>> {
        let refuse = |message: String| {
            let _ = job.events.send(Event::Refused {
                message,
                bad_request: true,
            });
            None
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
        let started = Event::Started {
            prompt_tokens: ids.len(),
        };
        if job.events.send(started).is_err() {
            return None;
        }
        let mut state = model.new_state();
        let logits = forward_chunked(
            model,
            &mut state,
            &ids,
            LogitsWanted::Last,
            precision.prefill_chunk,
        );
        let mut lane = Lane {
            events: job.events,
            state,
            text: TextStream::new(&files.tokenizer, true),
            stops: StopMatcher::new(&job.stop),
            stop_ids: files.tokenizer.stop_ids(),
            sampling: job.sampling,
            rng: StdRng::seed_from_u64(job.sampling.seed),
            max_tokens: job.max_tokens,
            generated: 0,
            next: 0,
            ended: false,
        };
        lane.take(&logits);
        (!lane.ended).then_some(lane)
    }

    /// Samples the lane's next token from `logits` and sends what it adds to the text; ends
    /// the lane at a stop token, a stop string, `max_tokens`, or a client that has gone.
    /// (The same order of checks as `generate`: the stop token first, then the text, then
    /// the length.)
    fn take(&mut self, logits: &[f32]) {
        let id = sample(logits, &self.sampling, &mut self.rng);
        self.take_id(id);
    }

    /// As [`Lane::take`] for a token already picked (a greedy lane's, on the device).
    fn take_id(&mut self, id: u32) {
        if self.stop_ids.contains(&id) {
            return self.finish(Finish::Stop);
        }
        self.generated += 1;
        let piece = match self.text.push(id) {
            Ok(piece) => self.stops.push(&piece),
            Err(e) => return self.refuse(e.to_string(), false),
        };
        if !piece.is_empty() && self.events.send(Event::Text(piece)).is_err() {
            self.ended = true;
            return;
        }
        if self.stops.stopped() {
            return self.finish(Finish::Stop);
        }
        if self.generated >= self.max_tokens {
            return self.finish(Finish::Length);
        }
        self.next = id;
    }

    /// Sends the rest of the text and the end.
    fn finish(&mut self, finish: Finish) {
        self.ended = true;
        let tail = match self.text.finish() {
            Ok(tail) => tail,
            Err(e) => return self.refuse(e.to_string(), false),
        };
        let mut rest = self.stops.push(&tail);
        rest.push_str(&self.stops.finish());
        if !rest.is_empty() {
            let _ = self.events.send(Event::Text(rest));
        }
        let _ = self.events.send(Event::Done {
            finish,
            completion_tokens: self.generated,
        });
    }

    fn refuse(&mut self, message: String, bad_request: bool) {
        self.ended = true;
        let _ = self.events.send(Event::Refused {
            message,
            bad_request,
        });
    }
}

/// One decode step of every running lane: the single-sequence path for one lane (its
/// captured graph on the GPU), the batched one for more.
fn step<B: Backend, M: CausalLm<B>>(model: &M, running: &mut [Lane<'_, M::State>]) {
    // Greedy lanes read back their tokens, not their logits.
    let greedy = running.iter().all(|l| l.sampling.is_greedy());
    if let [lane] = running {
        if greedy {
            let id = model.forward_greedy(&mut lane.state, lane.next);
            return lane.take_id(id);
        }
        let logits = model.forward(&mut lane.state, &[lane.next], LogitsWanted::Last);
        lane.take(&logits);
        return;
    }
    tracing::debug!("serve: a step of {} lanes", running.len());
    let ids: Vec<u32> = running.iter().map(|l| l.next).collect();
    let mut states: Vec<&mut M::State> = running.iter_mut().map(|l| &mut l.state).collect();
    if greedy {
        let next = model.forward_lanes_greedy(&mut states, &ids);
        for (lane, id) in running.iter_mut().zip(next) {
            lane.take_id(id);
        }
        return;
    }
    let logits = model.forward_lanes(&mut states, &ids);
    for (lane, logits) in running.iter_mut().zip(&logits) {
        lane.take(logits);
    }
}
