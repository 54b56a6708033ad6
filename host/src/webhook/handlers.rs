//! HTTP handlers. An admission call: parse the review (400 if it is not one), wait briefly for
//! an evaluation slot (answer "overloaded" at once if none frees up), run the component on a
//! blocking thread within the request's budget, and build the response (pure, in `review`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use super::review::{self, Review, ReviewOut};
use super::{AppState, deadline};

/// Longest wait for a free evaluation slot before answering "overloaded".
const MAX_QUEUE_WAIT: Duration = Duration::from_millis(500);

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

async fn admit(state: AppState, hook: Hook, uri: Uri, body: Bytes) -> Response {
    let path = uri.path().to_string();
    let started = Instant::now();
    let budget = deadline::budget(uri.query(), state.default_timeout, state.timeout_margin);
    let review = match review::parse_review(&body) {
        Ok(review) => review,
        Err(err) => {
            state.metrics.request(&path, "bad_request");
            tracing::info!(path, error = %err, "refused a request that is not an AdmissionReview");
            return (
                StatusCode::BAD_REQUEST,
                Json(review::bad_request_response(&err)),
            )
                .into_response();
        }
    };
    let review = Arc::new(review);
    let out = evaluate(&state, hook, &review, started, budget).await;
    let outcome = out.outcome();
    state.metrics.request(&path, outcome);
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
    Json(out).into_response()
}

async fn evaluate(
    state: &AppState,
    hook: Hook,
    review: &Arc<Review>,
    started: Instant,
    budget: Duration,
) -> ReviewOut {
    let wait = (budget / 4).min(MAX_QUEUE_WAIT);
    let permit = match tokio::time::timeout(wait, state.slots.clone().acquire_owned()).await {
        Ok(Ok(permit)) => permit,
        _ => {
            state.metrics.overload();
            return review::overload_response(review);
        }
    };
    let remaining = budget.saturating_sub(started.elapsed());
    let engine = state.engine.clone();
    let policy = state.policy.clone();
    let context = state.context.for_object(&review.namespace, &review.name);
    // Shared, not copied: the object may be megabytes.
    let job_review = Arc::clone(review);
    let job = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let t = Instant::now();
        let out = match hook {
            Hook::Validate => engine
                .validate(&job_review.request, &policy.settings, &context, remaining)
                .map(|verdict| review::validation_response(&job_review, verdict)),
            Hook::Mutate => engine
                .mutate(&job_review.request, &policy.settings, remaining)
                .map(|patch| review::mutation_response(&job_review, patch)),
        };
        (out, t.elapsed())
    });
    match job.await {
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
