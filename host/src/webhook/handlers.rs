//! HTTP handlers. An admission call: parse the review (400 if it is not one), wait briefly for
//! an evaluation slot (answer "overloaded" at once if none frees up), run the component within
//! the request's budget, and build the response (pure, in `review`).
//!
//! Where the component runs: a small request is evaluated right on the async worker thread,
//! with a deadline of one epoch tick ([`INLINE_SLICE`]). A real evaluation of a small object
//! takes tens of microseconds, far below that, and handing it to a blocking thread and back
//! cost more CPU than the evaluation itself (two thread wake-ups and context switches per
//! request; BENCHMARKS.md). A request that runs out of that slice (a pathological object, a
//! hostile component) is evaluated again from scratch on a blocking thread with the rest of its
//! budget: the component is a pure function and every call gets a fresh instance, so the retry
//! gives the same answer, and a worker is never held for more than about two ticks. Large
//! bodies ([`INLINE_MAX_BODY`]) go to a blocking thread directly.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use super::review::{self, Review, ReviewOut};
use super::{AppState, deadline};
use crate::engine::INLINE_SLICE;

/// Longest wait for a free evaluation slot before answering "overloaded".
const MAX_QUEUE_WAIT: Duration = Duration::from_millis(500);

/// Bodies larger than this are evaluated on a blocking thread from the start.
const INLINE_MAX_BODY: usize = 64 << 10;

#[derive(Clone, Copy)]
enum Hook {
    Validate,
    Mutate,
}

impl Hook {
    fn function(self) -> &'static str {
        match self {
            Hook::Validate => "validate",
            Hook::Mutate => "mutate",
        }
    }
}

pub async fn validate(State(state): State<AppState>, uri: Uri, body: Bytes) -> Response {
    admit(state, Hook::Validate, uri, body).await
}

pub async fn mutate(State(state): State<AppState>, uri: Uri, body: Bytes) -> Response {
    admit(state, Hook::Mutate, uri, body).await
}

/// The route a request came in on, as a metrics label.
fn route(uri: &Uri) -> &'static str {
    match uri.path() {
        "/validate" => "/validate",
        "/validate-multiclusterservice" => "/validate-multiclusterservice",
        "/mutate" => "/mutate",
        "/mutate-multiclusterservice" => "/mutate-multiclusterservice",
        _ => "other",
    }
}

async fn admit(state: AppState, hook: Hook, uri: Uri, body: Bytes) -> Response {
    let path = route(&uri);
    let started = Instant::now();
    let budget = deadline::budget(uri.query(), state.default_timeout, state.timeout_margin);
    let review = match review::parse_review(&body) {
        Ok(review) => review,
        Err(err) => {
            state.metrics.request(path, "bad_request");
            tracing::info!(path, error = %err, "refused a request that is not an AdmissionReview");
            return json_response(StatusCode::BAD_REQUEST, &review::bad_request_response(&err));
        }
    };
    let inline = body.len() <= INLINE_MAX_BODY;
    drop(body);
    let review = Arc::new(review);
    let out = evaluate(&state, hook, &review, started, budget, inline).await;
    let outcome = out.outcome();
    state.metrics.request(path, outcome);
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if matches!(outcome, "allowed" | "patched") {
        tracing::debug!(uid = %review.request.uid, path, outcome, elapsed_ms, "admission answered");
    } else {
        tracing::info!(
            uid = %review.request.uid,
            path,
            outcome,
            elapsed_ms,
            namespace = %review.namespace,
            name = %review.name,
            message = %out.response.status.message,
            "admission answered"
        );
    }
    json_response(StatusCode::OK, &out)
}

/// A JSON response with `body` serialized once into a buffer of the right size (axum's `Json`
/// starts at 128 bytes and grows).
fn json_response(status: StatusCode, body: &ReviewOut) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_json(),
    )
        .into_response()
}

async fn evaluate(
    state: &AppState,
    hook: Hook,
    review: &Arc<Review>,
    started: Instant,
    budget: Duration,
    inline: bool,
) -> ReviewOut {
    let wait = (budget / 4).min(MAX_QUEUE_WAIT);
    let permit = match state.slots.clone().try_acquire_owned() {
        Ok(permit) => permit,
        Err(_) => match tokio::time::timeout(wait, state.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            _ => {
                state.metrics.overload();
                return review::overload_response(review);
            }
        },
    };
    let context = state.context.for_object(&review.namespace, &review.name);
    let remaining = budget.saturating_sub(started.elapsed());
    let mut answer = None;
    if inline && remaining > INLINE_SLICE {
        let t = Instant::now();
        match run(state, hook, review, &context, INLINE_SLICE) {
            Err(crate::engine::EngineError::Timeout { .. }) => {
                tracing::debug!(uid = %review.request.uid, "evaluation moved to a blocking thread after its inline slice");
            }
            out => answer = Some((out, t.elapsed())),
        }
    }
    let answer = match answer {
        Some(answer) => Ok(answer),
        None => {
            let remaining = budget.saturating_sub(started.elapsed());
            let job_state = state.clone();
            // Shared, not copied: the object may be megabytes.
            let job_review = Arc::clone(review);
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                let t = Instant::now();
                let out = run(&job_state, hook, &job_review, &context, remaining);
                (out, t.elapsed())
            })
            .await
        }
    };
    match answer {
        Ok((Ok(out), took)) => {
            state
                .metrics
                .evaluation(hook.function(), took.as_secs_f64());
            out
        }
        Ok((Err(err), took)) => {
            state
                .metrics
                .evaluation(hook.function(), took.as_secs_f64());
            state.metrics.engine_failure(err.kind());
            tracing::warn!(uid = %review.request.uid, error = %err, "policy evaluation failed");
            review::engine_failure_response(review, &err)
        }
        Err(join) => {
            state.metrics.engine_failure("panic");
            tracing::error!(uid = %review.request.uid, error = %join, "policy evaluation thread failed");
            review::engine_failure_response(
                review,
                &crate::engine::EngineError::Trap {
                    function: hook.function(),
                    message: join.to_string(),
                },
            )
        }
    }
}

/// One evaluation in a fresh instance within `budget`, and the response it makes.
fn run(
    state: &AppState,
    hook: Hook,
    review: &Review,
    context: &crate::engine::types::Context,
    budget: Duration,
) -> Result<ReviewOut, crate::engine::EngineError> {
    match hook {
        Hook::Validate => state
            .engine
            .validate(&review.request, &state.policy.settings, context, budget)
            .map(|verdict| review::validation_response(review, verdict)),
        Hook::Mutate => state
            .engine
            .mutate(&review.request, &state.policy.settings, budget)
            .map(|patch| review::mutation_response(review, patch)),
    }
}

pub async fn healthz() -> &'static str {
    "ok"
}

pub async fn readyz(State(state): State<AppState>) -> Response {
    if state.ready.load(Ordering::Relaxed) {
        "ok".into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response()
    }
}

pub async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}

pub async fn not_found(uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!(
            "no such path {}: use POST /validate, /mutate (or Karmada's /validate-multiclusterservice, /mutate-multiclusterservice), GET /healthz, /readyz, /metrics\n",
            uri.path()
        ),
    )
        .into_response()
}
