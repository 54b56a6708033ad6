//! Waiting for a CustomResourceDefinition: what a watch of a custom resource the cluster does
//! not serve (404 to its list: the CRD is not installed) does instead of listing again.
//!
//! A member without the upstream Multi-Cluster Services API's CRDs would otherwise be listed
//! again every [`NOT_SERVED_RECHECK`]: three lists per member a minute, for nothing. Instead the watch opens one watch on the CRD itself, by name
//! (`fieldSelector=metadata.name=serviceexports.multicluster.x-k8s.io`), and lists its resource
//! again only when that CRD is established and serves the version watched. At rest a member
//! without the CRDs costs no request: each such watch is one long-lived request (renewed when
//! the server ends it, every few minutes, as any watch), and the resource's own list is not
//! repeated.
//!
//! Why a watch of the CRD rather than one discovery GET of the group per resync interval: the
//! watch costs nothing at rest and brings a CRD installed later in at once, where discovery
//! would cost a request per member every interval and bring it in only at the next one. Its
//! price is a narrow RBAC rule in each member: `get`, `list`, `watch` on
//! `customresourcedefinitions` with the three CRDs' `resourceNames` (a list or watch is
//! authorized by `resourceNames` only with a `metadata.name` field selector, hence one watch
//! per CRD, never a watch of every CRD).
//!
//! A CRD counts as serving the version when it is `Established`, is not being deleted (no
//! `deletionTimestamp`, no `Terminating=True` condition: its resource is about to go) and lists
//! the version as served. A CRD that is established but does not serve the version watched (a
//! member whose Multi-Cluster Services CRDs serve only `v1alpha1`) is *reported*: the watch's
//! owner is told the versions it serves ([`Crd::reporting`]), and told again (`None`) once the
//! CRD serves the version or is deleted.
//!
//! A CRD watch that fails (its RBAC not granted: 403; the API server down) gives up: the
//! resource is then listed again [`NOT_SERVED_RECHECK`] after its 404, as without this, and a
//! new 404 opens a new CRD watch. A CRD that is established and served while its resource's list
//! still answers 404 (a server that has not caught up) waits the watch's ordinary backoff.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Api, Client};
use serde_json::Value;
use tokio::sync::Notify;

#[cfg(doc)]
use super::retry::NOT_SERVED_RECHECK;
use crate::clusters::api_error::chain;

/// The CRD that serves a watched custom resource, in one cluster.
#[derive(Clone)]
pub struct Crd {
    client: Client,
    /// `<plural>.<group>`, the CRD's name.
    name: String,
    /// The version the watch lists.
    version: String,
    /// Told the versions an established CRD serves when the watched one is not among them,
    /// `None` when it serves it or is deleted.
    report: Option<Report>,
}

/// What is told of a CRD that does not serve the version watched: the versions it serves, or
/// `None` once it does (or is gone).
pub type Report = Arc<dyn Fn(Option<Vec<String>>) + Send + Sync>;

/// How a wait for a CRD ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Served {
    /// The CRD was established and served the version when the wait began: the resource's
    /// 404 came from a server that has not caught up (list again after a backoff).
    Already,
    /// The CRD became established and serves the version: list now.
    Appeared,
    /// The CRD could not be watched (the error, as the logs show it): the resource is listed
    /// again [`NOT_SERVED_RECHECK`] after its 404 instead.
    Unwatchable(String),
    /// The membership found the cluster answering again: list now.
    Woken,
}

impl Crd {
    /// The CRD of `resource` in the cluster of `client`.
    pub fn of(client: Client, resource: &ApiResource) -> Crd {
        Crd {
            client,
            name: format!("{}.{}", resource.plural, resource.group),
            version: resource.version.clone(),
            report: None,
        }
    }

    /// This CRD, telling `report` when it is established without serving the version watched.
    pub fn reporting(mut self, report: Report) -> Crd {
        self.report = Some(report);
        self
    }

    fn report(&self, served: Option<Vec<String>>) {
        if let Some(report) = &self.report {
            report(served);
        }
    }

    /// The CRD's name, `<plural>.<group>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits until the CRD is established and serves the version watched, or the cluster is
    /// woken; returns at once, [`Served::Unwatchable`], when the CRD cannot be watched.
    pub async fn served(&self, wake: &Notify) -> Served {
        tokio::select! {
            served = self.watch() => served,
            () = wake.notified() => Served::Woken,
        }
    }

    /// Watches the CRD by name until it serves the version.
    async fn watch(&self) -> Served {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &crd_resource());
        let by_name = format!("metadata.name={}", self.name);
        // A consistent list, as every cache's ([`super::watch::config`]).
        let config = watcher::Config::default()
            .list_semantic(watcher::ListSemantic::MostRecent)
            .fields(&by_name);
        let mut events = watcher(api, config).boxed();
        let mut listing = true;
        loop {
            match events.next().await {
                Some(Ok(Event::InitApply(crd))) if self.serves(&crd) => {
                    self.report(None);
                    return Served::Already;
                }
                Some(Ok(Event::Apply(crd))) if self.serves(&crd) => {
                    self.report(None);
                    return if listing {
                        Served::Already
                    } else {
                        Served::Appeared
                    };
                }
                Some(Ok(Event::InitApply(crd) | Event::Apply(crd))) => {
                    if established(&crd.data) && !being_deleted(&crd) {
                        self.report(Some(served_versions(&crd.data)));
                    } else {
                        self.report(None);
                    }
                }
                Some(Ok(Event::Delete(_))) => self.report(None),
                Some(Ok(Event::InitDone)) => listing = false,
                Some(Ok(_)) => {}
                Some(Err(err)) => return Served::Unwatchable(watch_error(&err)),
                None => return Served::Unwatchable("the watch ended".to_string()),
            }
        }
    }

    /// Whether `crd` is established, not being deleted, and serves the version watched.
    fn serves(&self, crd: &DynamicObject) -> bool {
        established(&crd.data) && !being_deleted(crd) && serves_version(&crd.data, &self.version)
    }
}

/// The CustomResourceDefinitions' resource.
fn crd_resource() -> ApiResource {
    ApiResource::erase::<CustomResourceDefinition>(&())
}

/// Whether a CRD's `status.conditions` say `Established` is `True`.
fn established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
}

/// Whether a CRD is being deleted: a `deletionTimestamp`, or `Terminating=True` (the API server
/// removes its objects, then the CRD).
fn being_deleted(crd: &DynamicObject) -> bool {
    crd.metadata.deletion_timestamp.is_some()
        || crd
            .data
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c["type"] == "Terminating" && c["status"] == "True")
            })
}

/// The versions a CRD's `spec.versions` serve, in its order.
fn served_versions(crd: &Value) -> Vec<String> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true)
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect()
}

/// Whether a CRD's `spec.versions` serve `version`.
fn serves_version(crd: &Value, version: &str) -> bool {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .is_some_and(|versions| {
            versions
                .iter()
                .any(|v| v["name"] == version && v["served"] == true)
        })
}

/// A CRD watch's error, with its causes.
fn watch_error(err: &watcher::Error) -> String {
    use watcher::Error;
    match err {
        Error::InitialListFailed(e) | Error::WatchStartFailed(e) | Error::WatchFailed(e) => {
            chain(e)
        }
        other => chain(other),
    }
}

#[cfg(test)]
mod tests;
