use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::client::Body;
use serde_json::json;

use super::*;
use crate::controller::cache::kept::{self, Cached};
use crate::controller::cache::store::Store;
use crate::controller::cache::watch::Watch;
use crate::controller::cache::{Health, News};

#[test]
fn a_crd_serves_its_resource_once_established_and_serving_the_version() {
    let crd = |conditions: serde_json::Value, served: bool| {
        json!({
            "spec": {"versions": [{"name": "v1alpha1", "served": true},
                                  {"name": "v1beta1", "served": served}]},
            "status": {"conditions": conditions},
        })
    };
    let ready = json!([{"type": "NamesAccepted", "status": "True"},
                       {"type": "Established", "status": "True"}]);
    assert!(established(&crd(ready.clone(), true)));
    assert!(serves_version(&crd(ready.clone(), true), "v1beta1"));
    assert!(!serves_version(&crd(ready, false), "v1beta1"));
    assert!(!established(&crd(json!(null), true)), "just created");
    assert!(!established(&crd(
        json!([{"type": "Established", "status": "False"}]),
        true
    )));
}

#[tokio::test]
async fn a_crd_being_deleted_does_not_serve_its_resource() {
    let crd = |deleting: bool, terminating: bool| {
        let mut conditions = vec![json!({"type": "Established", "status": "True"})];
        if terminating {
            conditions.push(json!({"type": "Terminating", "status": "True"}));
        }
        let mut object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "serviceexports.multicluster.x-k8s.io"},
            "spec": {"versions": [{"name": "v1beta1", "served": true}]},
            "status": {"conditions": conditions},
        }))
        .unwrap();
        if deleting {
            object.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ));
        }
        object
    };
    let (client, _) = server(CrdAnswer::Watched);
    let watched = Crd::of(client, &exports());
    assert!(watched.serves(&crd(false, false)));
    assert!(!watched.serves(&crd(true, false)), "deletionTimestamp set");
    assert!(!watched.serves(&crd(false, true)), "Terminating=True");
}

#[test]
fn the_versions_a_crd_serves_are_listed_in_its_order() {
    let crd = json!({"spec": {"versions": [{"name": "v1alpha1", "served": true},
                                            {"name": "v1beta1", "served": false},
                                            {"name": "v1", "served": true}]}});
    assert_eq!(served_versions(&crd), ["v1alpha1", "v1"]);
    assert!(served_versions(&json!({})).is_empty());
}

fn exports() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("multicluster.x-k8s.io", "v1beta1", "ServiceExport"),
        "serviceexports",
    )
}

#[tokio::test]
async fn the_crd_of_a_resource_is_named_plural_dot_group() {
    let (client, _) = server(CrdAnswer::Watched);
    assert_eq!(
        Crd::of(client, &exports()).name(),
        "serviceexports.multicluster.x-k8s.io"
    );
}

/// How the scripted server answers requests for the CRD.
#[derive(Clone, Copy)]
enum CrdAnswer {
    /// Lists none, then its watch delivers the CRD once `installed` says so.
    Watched,
    /// 403 Forbidden: the member's RBAC does not grant it.
    Forbidden,
}

/// What the scripted server was asked.
#[derive(Default, Debug, PartialEq, Eq)]
struct Asked {
    lists: usize,
    watches: usize,
    crd_lists: usize,
    crd_watches: usize,
    /// The field selector of the CRD requests.
    crd_selector: Option<String>,
}

fn response(status: u16, body: axum::body::Body) -> axum::http::Response<axum::body::Body> {
    axum::http::Response::builder()
        .status(status)
        .body(body)
        .unwrap()
}

fn status(code: u16, reason: &str) -> axum::http::Response<axum::body::Body> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": "refused", "reason": reason, "code": code});
    response(code, axum::body::Body::from(body.to_string()))
}

/// A body that sends `lines` once `installed` is true, then nothing for ever.
fn after_install(installed: tokio::sync::watch::Receiver<bool>, lines: String) -> axum::body::Body {
    let first = futures::stream::once(async move {
        let mut installed = installed;
        installed.wait_for(|i| *i).await.ok();
        Ok::<_, std::io::Error>(axum::body::Bytes::from(lines))
    });
    axum::body::Body::from_stream(first.chain(futures::stream::pending()))
}

/// A cluster that does not serve ServiceExports until its CRD is installed (`installed`), and
/// whose CRD requests are answered as `crd` says.
fn server(
    crd: CrdAnswer,
) -> (
    kube::Client,
    (Arc<Mutex<Asked>>, tokio::sync::watch::Sender<bool>),
) {
    let asked = Arc::new(Mutex::new(Asked::default()));
    let (install, installed) = tokio::sync::watch::channel(false);
    let seen = asked.clone();
    let service = tower::service_fn(move |req: axum::http::Request<Body>| {
        let watch = req.uri().query().is_some_and(|q| q.contains("watch=true"));
        let is_crd = req.uri().path().contains("customresourcedefinitions");
        let mut asked = seen.lock().unwrap();
        let installed = installed.clone();
        let answer = if is_crd {
            asked.crd_selector = req.uri().query().and_then(|q| {
                q.split('&')
                    .find(|p| p.starts_with("fieldSelector="))
                    .map(str::to_string)
            });
            match (crd, watch) {
                (CrdAnswer::Forbidden, _) => {
                    asked.crd_lists += usize::from(!watch);
                    asked.crd_watches += usize::from(watch);
                    status(403, "Forbidden")
                }
                (CrdAnswer::Watched, false) => {
                    asked.crd_lists += 1;
                    let list = json!({"kind": "CustomResourceDefinitionList",
                        "apiVersion": "apiextensions.k8s.io/v1",
                        "metadata": {"resourceVersion": "1"}, "items": []});
                    response(200, axum::body::Body::from(list.to_string()))
                }
                (CrdAnswer::Watched, true) => {
                    asked.crd_watches += 1;
                    let object = |rv: &str, conditions: serde_json::Value| {
                        json!({"apiVersion": "apiextensions.k8s.io/v1",
                            "kind": "CustomResourceDefinition",
                            "metadata": {"name": "serviceexports.multicluster.x-k8s.io",
                                         "resourceVersion": rv},
                            "spec": {"versions": [{"name": "v1beta1", "served": true}]},
                            "status": {"conditions": conditions}})
                    };
                    let added = json!({"type": "ADDED", "object": object("2", json!(null))});
                    let established = json!({"type": "MODIFIED", "object": object("3",
                        json!([{"type": "Established", "status": "True"}]))});
                    response(
                        200,
                        after_install(installed, format!("{added}\n{established}\n")),
                    )
                }
            }
        } else if watch {
            asked.watches += 1;
            response(
                200,
                axum::body::Body::from_stream(futures::stream::pending::<
                    Result<axum::body::Bytes, std::io::Error>,
                >()),
            )
        } else {
            asked.lists += 1;
            if *installed.borrow() {
                let list = json!({"kind": "ServiceExportList",
                    "apiVersion": "multicluster.x-k8s.io/v1beta1",
                    "metadata": {"resourceVersion": "7"}, "items": []});
                response(200, axum::body::Body::from(list.to_string()))
            } else {
                status(404, "NotFound")
            }
        };
        async move { Ok::<_, std::convert::Infallible>(answer) }
    });
    (kube::Client::new(service, "default"), (asked, install))
}

/// Runs the watch of ServiceExports through `client`, served by their CRD; its store, and the
/// failures it reported.
fn run(client: kube::Client) -> (Store<DynamicObject>, Arc<Mutex<usize>>) {
    fn name_of(o: &DynamicObject) -> Option<&str> {
        Some(o.name())
    }
    let store = Store::new(name_of);
    let watch = Watch {
        cluster: "m1".into(),
        resource: "serviceexports",
        api: kube::Api::all_with(client.clone(), &exports()),
        config: crate::controller::cache::watch::config(),
        store: store.clone(),
        keep: kept::mcs,
        mirror: None,
        wake: Arc::default(),
    };
    let failures = Arc::new(Mutex::new(0));
    let counted = failures.clone();
    let crd = Crd::of(client, &exports());
    tokio::spawn(watch.run_served_by(crd, move |news| {
        if let News::Failed { .. } = news {
            *counted.lock().unwrap() += 1;
        }
    }));
    (store, failures)
}

#[tokio::test]
async fn a_resource_not_served_waits_for_its_crd_without_listing_again_and_lists_once_it_is_established()
 {
    let (client, (asked, install)) = server(CrdAnswer::Watched);
    let (store, failures) = run(client);
    // Longer than every backoff step a failing watch would take (0.5 s, 1 s).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    {
        let asked = asked.lock().unwrap();
        assert_eq!(
            (
                asked.lists,
                asked.watches,
                asked.crd_lists,
                asked.crd_watches
            ),
            (1, 0, 1, 1),
            "one 404, then one list and one open watch of the CRD: nothing more at rest"
        );
        assert_eq!(
            asked.crd_selector.as_deref(),
            Some("fieldSelector=metadata.name%3Dserviceexports.multicluster.x-k8s.io")
        );
    }
    assert_eq!(*failures.lock().unwrap(), 1);
    assert!(matches!(store.health(), Health::Broken(f) if f.not_served));

    install.send_replace(true);
    for _ in 0..100 {
        if store.health() == Health::Synced {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        store.health(),
        Health::Synced,
        "listed once the CRD is established"
    );
    let asked = asked.lock().unwrap();
    assert_eq!((asked.lists, asked.crd_lists, asked.crd_watches), (2, 1, 1));
}

#[tokio::test]
async fn a_crd_that_cannot_be_watched_falls_back_to_listing_again_in_a_minute() {
    let (client, (asked, _install)) = server(CrdAnswer::Forbidden);
    let (store, failures) = run(client);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let asked = asked.lock().unwrap();
    assert_eq!(
        (asked.lists, asked.crd_lists, asked.crd_watches),
        (1, 1, 0),
        "the 403 is not retried in a loop, nor the 404"
    );
    assert_eq!(*failures.lock().unwrap(), 1);
    assert!(matches!(store.health(), Health::Broken(f) if f.not_served));
}
