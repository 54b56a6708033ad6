//! The `/_sim/` admin API tests use to steer the server: fault injection, ending watches,
//! simulated unreachability, a restart, compaction, the request log, a state dump and a reset.
//! Never needs a token, never faulted, never logged.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::App;
use crate::faults::FaultSpec;
use crate::network::WatchEnd;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route(
            "/faults",
            post(add_fault).get(list_faults).delete(clear_faults),
        )
        .route("/drop-watches", post(drop_watches))
        .route("/unreachable", post(set_unreachable).get(unreachable_state))
        .route("/restart", post(restart))
        .route("/state", get(state))
        .route("/reset", post(reset))
        .route("/compact", post(compact))
        .route("/requests", get(list_requests).delete(clear_requests))
        .fallback(|| async {
            answer(
                StatusCode::NOT_FOUND,
                json!({"error": "unknown /_sim/ endpoint"}),
            )
        })
}

fn answer(code: StatusCode, body: Value) -> Response {
    (code, axum::Json(body)).into_response()
}

fn bad_request(message: String) -> Response {
    answer(StatusCode::BAD_REQUEST, json!({"error": message}))
}

async fn add_fault(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let fault: FaultSpec = match serde_json::from_slice(&body) {
        Ok(fault) => fault,
        Err(e) => return bad_request(format!("invalid fault: {e}")),
    };
    if let Some(problem) = fault.problem() {
        return bad_request(problem);
    }
    tracing::info!(?fault, "fault queued");
    app.faults.push(fault.clone());
    answer(StatusCode::CREATED, json!({"queued": fault}))
}

async fn list_faults(State(app): State<Arc<App>>) -> Response {
    answer(StatusCode::OK, json!({"faults": app.faults.pending()}))
}

async fn clear_faults(State(app): State<Arc<App>>) -> Response {
    app.faults.clear();
    answer(StatusCode::OK, json!({"faults": []}))
}

async fn drop_watches(State(app): State<Arc<App>>) -> Response {
    let dropped = app.network.end_watches(WatchEnd::Graceful);
    tracing::info!(dropped, "watches dropped");
    answer(StatusCode::OK, json!({"dropped": dropped}))
}

/// `{"seconds": S}` for a timed outage, `{"on": true}` / `{"on": false}` to switch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Unreachable {
    seconds: Option<f64>,
    on: Option<bool>,
}

async fn set_unreachable(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let request: Unreachable = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            return bad_request(format!(
                "expected {{\"seconds\": S}} or {{\"on\": true|false}}: {e}"
            ));
        }
    };
    match (request.seconds, request.on) {
        (Some(seconds), None) if seconds.is_finite() && seconds >= 0.0 => {
            app.network
                .set_unreachable(Some(Duration::from_secs_f64(seconds)));
        }
        (None, Some(true)) => app.network.set_unreachable(None),
        (None, Some(false)) => app.network.set_reachable(),
        _ => return bad_request("give either a non-negative \"seconds\" or \"on\"".to_owned()),
    }
    tracing::info!(?request, "reachability changed");
    unreachable_state(State(app)).await
}

/// `{"seconds": S}`: the API server restarts, down for S seconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Restart {
    seconds: f64,
}

/// Restarts the API server as kube-apiserver restarts over the same etcd: open watches are cut,
/// every request is refused for `seconds`, the objects stay, and the new watch caches start at
/// the current revision, so a watch resuming from an older resourceVersion gets 410 Expired
/// and must list again.
async fn restart(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let request: Restart = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return bad_request(format!("expected {{\"seconds\": S}}: {e}")),
    };
    if !(request.seconds.is_finite() && request.seconds >= 0.0) {
        return bad_request("\"seconds\" must be a non-negative number".to_owned());
    }
    app.network
        .set_unreachable(Some(Duration::from_secs_f64(request.seconds)));
    app.write().restart_watch_caches();
    tracing::info!(?request, "restarting");
    unreachable_state(State(app)).await
}

async fn unreachable_state(State(app): State<Arc<App>>) -> Response {
    let body = json!({"unreachable": app.network.is_unreachable(), "secondsLeft": app.network.seconds_left()});
    answer(StatusCode::OK, body)
}

async fn state(State(app): State<Arc<App>>) -> Response {
    let store = app.read();
    let body = json!({
        "resourceVersion": store.resource_version().to_string(),
        "compactedRevision": store.compacted_revision().to_string(),
        "openWatches": app.network.open_watches(),
        "unreachable": app.network.is_unreachable(),
        "resources": store.dump(),
    });
    answer(StatusCode::OK, body)
}

/// Compacts at the current revision, as an etcd compaction would: lists at an older exact
/// resourceVersion (and continue tokens into one) then get 410 Expired.
async fn compact(State(app): State<Arc<App>>) -> Response {
    let mut store = app.write();
    let current = store.resource_version();
    let compacted = store.compact(current);
    tracing::info!(compacted, "compacted");
    answer(StatusCode::OK, json!({"compacted": compacted.to_string()}))
}

/// The authorization checks recorded so far (`crate::request_log`), oldest first.
async fn list_requests(State(app): State<Arc<App>>) -> Response {
    answer(StatusCode::OK, app.requests.to_json())
}

async fn clear_requests(State(app): State<Arc<App>>) -> Response {
    app.requests.clear();
    answer(StatusCode::OK, app.requests.to_json())
}

async fn reset(State(app): State<Arc<App>>) -> Response {
    app.reset();
    app.network.set_reachable();
    app.network.end_watches(WatchEnd::Graceful);
    tracing::info!("reset");
    answer(StatusCode::OK, json!({"reset": true}))
}
