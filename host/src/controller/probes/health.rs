//! Liveness and readiness of one `sync` replica, for Kubernetes probes: `GET /healthz` and
//! `GET /readyz`, served beside `/metrics` on `--metrics-listen` (see `docs/sync.md`, "Probes").
//!
//! - `/healthz` answers 200 whenever the process serves at all: a replica that is slow to
//!   sync, or waiting for the Lease, is alive and must not be restarted.
//! - `/readyz` answers 200 when this replica is where it should be: a follower waiting for the
//!   leader Lease while its election can read the Lease, or the leader once it has read its
//!   members (a membership refresh succeeded) and the hub's caches have listed; 503 with the
//!   reason otherwise (starting, a follower that cannot reach the Lease, leading but not synced
//!   yet, stopping). A follower that cannot read the Lease could not take over from a failing
//!   leader: it is not a spare, and says so.
//!
//! The controller reports its steps ([`Health::following`], [`Health::leading`],
//! [`Health::synced`], [`Health::stopping`]); the handlers only read.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;

/// Where this replica is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Loading the component, reaching the hub; not electing yet.
    Starting,
    /// Waiting for the leader Lease; the election runs.
    Following,
    /// Leading, before it has read its members and its hub caches have listed.
    Leading,
    /// Leading and synced.
    Synced,
    /// Shutting down, or leadership lost: the process is about to exit.
    Stopping,
}

/// This replica's health, shared by the controller and the probe handlers.
#[derive(Debug)]
pub struct Health {
    phase: Mutex<Phase>,
    /// Why the election cannot read or write the Lease, while it cannot.
    lease_problem: Mutex<Option<String>>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            phase: Mutex::new(Phase::Starting),
            lease_problem: Mutex::new(None),
        }
    }
}

impl Health {
    /// The election runs; this replica waits for the Lease.
    pub fn following(&self) {
        self.set(|phase| (phase == Phase::Starting).then_some(Phase::Following));
    }

    /// This replica leads (at once without `--leader-elect`) and starts syncing.
    pub fn leading(&self) {
        self.set(|phase| (phase != Phase::Stopping).then_some(Phase::Leading));
    }

    /// The leader has read its members and its hub caches have listed: it syncs.
    pub fn synced(&self) {
        self.set(|phase| (phase == Phase::Leading).then_some(Phase::Synced));
    }

    /// Why the election cannot reach the Lease (`None`: it can).
    pub fn lease_problem(&self, problem: Option<String>) {
        *self.lease_problem.lock().unwrap_or_else(|p| p.into_inner()) = problem;
    }

    /// Shutting down, or leadership lost; final.
    pub fn stopping(&self) {
        self.set(|_| Some(Phase::Stopping));
    }

    /// `Ok` with what it is doing when ready, `Err` with why not.
    pub fn readiness(&self) -> Result<String, String> {
        let said = |s: &str| s.to_string();
        match self.phase() {
            Phase::Starting => Err(said(
                "starting: loading the policy component, reaching the hub",
            )),
            Phase::Following => {
                match &*self.lease_problem.lock().unwrap_or_else(|p| p.into_inner()) {
                    None => Ok(said("following: waiting for the leader lease")),
                    Some(problem) => Err(format!(
                        "following, but the leader lease is out of reach: {problem}"
                    )),
                }
            }
            Phase::Leading => Err(said(
                "leading: the member clusters or the caches are not read yet",
            )),
            Phase::Synced => Ok(said("leading: syncing")),
            Phase::Stopping => Err(said("stopping")),
        }
    }

    fn phase(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Moves to what `next` says, if anything, from the current phase.
    fn set(&self, next: impl FnOnce(Phase) -> Option<Phase>) {
        let mut phase = self.phase.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(next) = next(*phase) {
            *phase = next;
        }
    }
}

/// `GET /healthz` and `GET /readyz` over `health`.
pub fn routes(health: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(health): State<Arc<Health>>) -> impl IntoResponse {
    match health.readiness() {
        Ok(what) => (StatusCode::OK, format!("ok: {what}\n")),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use axum::body::{Body, to_bytes};
    use axum::http::Request;
    use tower::ServiceExt;

    use super::*;

    /// Status and body of `GET path` against the probe routes over `health`.
    async fn ask(health: &Arc<Health>, path: &str) -> (StatusCode, String) {
        let request = Request::get(path).body(Body::empty()).unwrap();
        let response = routes(health.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        let body = to_bytes(response.into_body(), 1 << 16).await.unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_leader_is_ready_once_synced_and_alive_all_along() {
        let health = Arc::new(Health::default());
        let (status, body) = ask(&health, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.starts_with("not ready: starting"), "{body}");
        assert_eq!(ask(&health, "/healthz").await.0, StatusCode::OK);

        health.leading();
        let (status, body) = ask(&health, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(body.contains("not read yet"), "{body}");

        health.synced();
        assert_eq!(
            ask(&health, "/readyz").await,
            (StatusCode::OK, "ok: leading: syncing\n".to_string())
        );
        assert_eq!(ask(&health, "/healthz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn a_follower_waiting_for_the_lease_is_ready() {
        let health = Arc::new(Health::default());
        health.following();
        let (status, body) = ask(&health, "/readyz").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("waiting for the leader lease"), "{body}");
        // A sync that reports before this replica leads changes nothing.
        health.synced();
        assert!(health.readiness().unwrap().starts_with("following"));
        health.leading();
        assert!(
            health.readiness().is_err(),
            "a new leader reads its members first"
        );
    }

    #[tokio::test]
    async fn a_follower_that_cannot_reach_the_lease_is_not_ready_until_it_can() {
        let health = Arc::new(Health::default());
        health.following();
        health.lease_problem(Some("reading lease mcs-system/mcs-policy-sync: 403".into()));
        let (status, body) = ask(&health, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains("out of reach"), "{body}");
        assert!(body.contains("403"), "{body}");
        assert_eq!(ask(&health, "/healthz").await.0, StatusCode::OK);
        health.lease_problem(None);
        assert_eq!(ask(&health, "/readyz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn stopping_is_final_and_not_ready_but_alive() {
        let health = Arc::new(Health::default());
        health.leading();
        health.synced();
        health.stopping();
        for late in [Health::following, Health::leading, Health::synced] {
            late(&health);
            assert_eq!(health.readiness(), Err("stopping".to_string()));
        }
        assert_eq!(
            ask(&health, "/readyz").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "not ready: stopping\n".to_string()
            )
        );
        assert_eq!(
            ask(&health, "/healthz").await,
            (StatusCode::OK, "ok\n".to_string())
        );
    }
}
