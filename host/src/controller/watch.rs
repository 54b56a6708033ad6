//! Triggers: a pass runs on every resync tick and, sooner, when a MultiClusterService in the
//! hub or a Service's EndpointSlice in a member changes. Events carry no data on purpose: a
//! pass re-reads everything, so a burst of events costs one extra pass, not one per event.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::read::{SERVICE_NAME_LABEL, mcs_resource};
use crate::clusters::Registry;

/// Starts the watches; each change wakes `notify`. Abort the handles to stop them.
pub fn spawn(registry: &Registry, notify: &Arc<Notify>) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    let hub = &registry.hub;
    let mcs: Api<DynamicObject> = Api::all_with(hub.client.clone(), &mcs_resource());
    tasks.push(tokio::spawn(forward(
        hub.name.clone(),
        mcs,
        watcher::Config::default(),
        notify.clone(),
    )));
    for member in &registry.members {
        tasks.push(tokio::spawn(forward(
            member.name.clone(),
            slices(&member.client),
            watcher::Config::default().labels(SERVICE_NAME_LABEL),
            notify.clone(),
        )));
    }
    tasks
}

fn slices(client: &Client) -> Api<EndpointSlice> {
    Api::all(client.clone())
}

/// Wakes `notify` on every event of one watch; errors back off and re-watch (kube-runtime).
async fn forward<K>(cluster: String, api: Api<K>, config: watcher::Config, notify: Arc<Notify>)
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut events = watcher(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(_) => notify.notify_one(),
            Err(err) => tracing::debug!(cluster = %cluster, error = %err, "watch failed; retrying"),
        }
    }
}
