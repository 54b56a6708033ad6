use super::*;

#[test]
fn every_cache_lists_with_consistent_reads() {
    assert_eq!(config().list_semantic, watcher::ListSemantic::MostRecent);
}

/// A watch of Services against a scripted API server: each list answers one Service at
/// resourceVersion 5; the n-th watch request answers `watches[n]` (the last one repeats).
mod scripted {
    use std::sync::Mutex;

    use k8s_openapi::api::core::v1::Service;
    use kube::client::Body;

    use super::super::super::kept::{self, KeptService};
    use super::*;

    /// How a watch request is answered.
    #[derive(Clone, Copy)]
    pub enum Answer {
        /// HTTP 500.
        Refused,
        /// 200, then nothing for ever (a quiet cluster).
        Quiet,
        /// 200 with one ERROR event, 410 Expired.
        Expired,
    }

    #[derive(Default)]
    pub struct Server {
        pub lists: usize,
        pub watches: usize,
    }

    fn response(status: u16, body: axum::body::Body) -> axum::http::Response<axum::body::Body> {
        axum::http::Response::builder()
            .status(status)
            .body(body)
            .unwrap()
    }

    /// A client whose API server answers as described; the requests it saw.
    pub fn client(script: Vec<Answer>) -> (kube::Client, Arc<Mutex<Server>>) {
        let seen = Arc::new(Mutex::new(Server::default()));
        let server = seen.clone();
        let service = tower::service_fn(move |req: axum::http::Request<Body>| {
            let watch = req.uri().query().is_some_and(|q| q.contains("watch=true"));
            let mut server = server.lock().unwrap();
            let answer = if watch {
                server.watches += 1;
                let answer = script[(server.watches - 1).min(script.len() - 1)];
                match answer {
                    Answer::Refused => response(
                        500,
                        axum::body::Body::from(
                            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"boom","reason":"InternalError","code":500}"#,
                        ),
                    ),
                    Answer::Quiet => response(
                        200,
                        axum::body::Body::from_stream(futures::stream::pending::<
                            Result<axum::body::Bytes, std::io::Error>,
                        >()),
                    ),
                    Answer::Expired => response(
                        200,
                        axum::body::Body::from(
                            "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"too old resource version: 5 (9)\",\"reason\":\"Expired\",\"code\":410}}\n",
                        ),
                    ),
                }
            } else {
                server.lists += 1;
                response(
                    200,
                    axum::body::Body::from(
                        r#"{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"web","namespace":"shop","uid":"u1","resourceVersion":"5"}}]}"#,
                    ),
                )
            };
            async move { Ok::<_, std::convert::Infallible>(answer) }
        });
        (kube::Client::new(service, "default"), seen)
    }

    fn name_of(s: &KeptService) -> Option<&str> {
        Some(s.name())
    }

    /// Runs a watch of Services through `client` into a store of `grace`, settling after 1 s;
    /// the store, and the number of failures it reported.
    pub fn run(client: kube::Client, grace: Duration) -> (Store<KeptService>, Arc<Mutex<usize>>) {
        let store = Store::new(name_of);
        store.set_patience(super::super::super::health::Patience {
            grace,
            settle: Duration::from_secs(1),
        });
        let watch = Watch {
            cluster: "m1".into(),
            resource: "services",
            api: kube::Api::<Service>::all(client),
            config: watcher::Config::default(),
            store: store.clone(),
            keep: kept::service,
            mirror: None,
            wake: Arc::default(),
        };
        let failures = Arc::new(Mutex::new(0));
        let counted = failures.clone();
        tokio::spawn(watch.run(move |news| {
            if let News::Failed { .. } = news {
                *counted.lock().unwrap() += 1;
            }
        }));
        (store, failures)
    }
}

#[tokio::test]
async fn a_quiet_retry_resumes_the_watch_from_its_version_without_a_list() {
    use scripted::Answer::{Quiet, Refused};
    let (client, server) = scripted::client(vec![Refused, Quiet]);
    let (store, failures) = scripted::run(client, Duration::from_secs(30));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(store.failing().is_some(), "the first watch request failed");
    assert_eq!(store.health(), Health::Synced, "readable within the grace");
    assert_eq!(store.len(), 1);
    // The retry (after 0.4 to 0.6 s) is quiet: 1 s later the watch counts as working.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(store.failing().is_some(), "not proven yet");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(store.failing(), None, "resumed");
    let server = server.lock().unwrap();
    assert_eq!((server.lists, server.watches), (1, 2), "no list again");
    assert_eq!(*failures.lock().unwrap(), 1, "one error, counted once");
}

#[tokio::test]
async fn a_watch_answered_410_lists_again_and_stays_readable() {
    use scripted::Answer::{Expired, Quiet};
    let (client, server) = scripted::client(vec![Expired, Quiet]);
    let (store, _) = scripted::run(client, Duration::from_secs(30));
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(store.health(), Health::Synced, "never unreadable");
    }
    assert_eq!(store.failing(), None, "the new list ended the failure");
    assert_eq!(
        server.lock().unwrap().lists,
        2,
        "listed again after the 410"
    );
}

#[tokio::test]
async fn a_watch_refused_past_the_grace_makes_the_store_unreadable() {
    use scripted::Answer::Refused;
    let (client, _) = scripted::client(vec![Refused]);
    let (store, failures) = scripted::run(client, Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(store.health(), Health::Synced);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let Health::Broken(failure) = store.health() else {
        panic!("unreadable past the grace");
    };
    assert!(failure.message.contains("boom"), "{}", failure.message);
    assert!(*failures.lock().unwrap() >= 2, "retried with a backoff");
    assert_eq!(store.len(), 1, "kept");
}
