//! The shared server state (store, faults, network switches, request log, settings) and the
//! HTTP router.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;

use crate::builtin;
use crate::faults::Faults;
use crate::network::Network;
use crate::registry::Registry;
use crate::request_log::RequestLog;
use crate::store::Store;
use crate::types;
use crate::types::service::ServiceCidr;

/// Largest accepted request body.
const BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Settings fixed at startup.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The bearer token every API request must carry, if any.
    pub token: Option<String>,
    /// `host:port` clients reach the server at.
    pub server_address: String,
    pub bookmark_interval: Duration,
    pub history_limit: usize,
    pub service_cidr: ServiceCidr,
}

/// Everything the handlers share.
#[derive(Debug)]
pub struct App {
    store: RwLock<Store>,
    pub faults: Faults,
    pub network: Network,
    /// What a real server's authorizer would have been asked ([`RequestLog`]).
    pub requests: RequestLog,
    pub settings: Settings,
}

impl App {
    pub fn new(settings: Settings) -> Arc<Self> {
        let store = fresh_store(&settings);
        Arc::new(Self {
            store: RwLock::new(store),
            faults: Faults::default(),
            network: Network::default(),
            requests: RequestLog::default(),
            settings,
        })
    }

    pub fn read(&self) -> RwLockReadGuard<'_, Store> {
        self.store
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, Store> {
        self.store
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Back to a fresh cluster: built-in types and default namespaces only, no faults, an
    /// empty request log. resourceVersions keep increasing.
    pub fn reset(&self) {
        let mut store = self.write();
        store.reset(Registry::with_types(builtin::builtin_types()));
        create_default_namespaces(&mut store, &self.settings.server_address);
        self.faults.clear();
        self.requests.clear();
    }
}

/// The router: the `/_sim/` admin API, everything else is the Kubernetes API.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .nest("/_sim", crate::admin::router())
        .fallback(crate::api::handle)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(app)
}

fn fresh_store(settings: &Settings) -> Store {
    let mut store = Store::new(
        Registry::with_types(builtin::builtin_types()),
        settings.history_limit,
    );
    store.service_cidr = settings.service_cidr;
    create_default_namespaces(&mut store, &settings.server_address);
    store
}

fn create_default_namespaces(store: &mut Store, server_address: &str) {
    let port = server_address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    types::seed(store, port);
}
