use super::*;

const SETTLE: Duration = Duration::from_secs(12);

#[test]
fn an_error_makes_the_watch_failing_until_an_event_proves_it_works() {
    let mut state = Failing::default();
    assert!(
        !state.item(Proof::Event, false),
        "not failing: nothing ends"
    );
    assert!(state.failed(), "the first error in a row");
    assert!(!state.failed(), "a failed retry is not a new failure");
    assert!(
        state.item(Proof::Event, false),
        "an event: the watch is open again"
    );
    assert!(!state.failing);
}

#[test]
fn during_a_list_only_its_end_proves_the_watch_works() {
    let mut state = Failing::default();
    state.failed();
    let now = Instant::now();
    state.retrying(now);
    assert!(
        !state.item(Proof::Nothing, true),
        "Init: a list starts (410)"
    );
    assert_eq!(state.quiet_at(SETTLE), None, "a quiet list proves nothing");
    assert!(!state.quiet());
    assert!(!state.item(Proof::Nothing, false), "an object of the list");
    assert!(state.item(Proof::Listed, false), "the list is complete");
    assert!(!state.failing && !state.listing);
}

#[test]
fn a_retry_quiet_for_the_settle_time_proves_the_watch_resumed() {
    let mut state = Failing::default();
    assert_eq!(state.quiet_at(SETTLE), None, "not failing");
    state.failed();
    assert_eq!(state.quiet_at(SETTLE), None, "backing off: no retry yet");
    assert!(!state.quiet(), "no retry under way");
    let now = Instant::now();
    state.retrying(now);
    assert_eq!(state.quiet_at(SETTLE), Some(now + SETTLE));
    // The retry fails: the quiet time starts again with the next retry.
    state.failed();
    assert_eq!(state.quiet_at(SETTLE), None);
    let later = now + Duration::from_secs(3);
    state.retrying(later);
    assert_eq!(state.quiet_at(SETTLE), Some(later + SETTLE));
    assert!(state.quiet(), "quiet until then: resumed");
    assert_eq!(state.quiet_at(SETTLE), None, "working: no timer");
}

#[test]
fn the_backoff_doubles_to_its_cap_with_jitter_and_resets() {
    let mut backoff = Backoff::default();
    let mut base = BACKOFF_FIRST;
    for _ in 0..8 {
        let wait = backoff.next_wait();
        let (low, high) = (base.mul_f64(1.0 - JITTER), base.mul_f64(1.0 + JITTER));
        assert!(
            wait >= low && wait <= high.min(BACKOFF_MAX),
            "{wait:?} for {base:?}"
        );
        base = (base * 2).min(BACKOFF_MAX);
    }
    assert!(backoff.next_wait() >= BACKOFF_MAX.mul_f64(1.0 - JITTER));
    backoff.reset();
    assert!(backoff.next_wait() <= BACKOFF_FIRST.mul_f64(1.0 + JITTER));
    // The jitter spreads: 20 draws are not all the same.
    let waits: std::collections::BTreeSet<Duration> =
        (0..20).map(|_| Backoff::default().next_wait()).collect();
    assert!(waits.len() > 1, "{waits:?}");
}

#[test]
fn only_a_skipped_event_or_a_refused_version_needs_a_new_list() {
    let status = |code: u16| {
        Box::new(kube::core::Status {
            code,
            ..Default::default()
        })
    };
    let serde = serde_json::from_str::<u8>("x").unwrap_err();
    assert!(needs_new_list(&watcher::Error::WatchFailed(
        kube::Error::SerdeError(serde)
    )));
    assert!(needs_new_list(&watcher::Error::WatchFailed(
        kube::Error::LinesCodecMaxLineLengthExceeded
    )));
    assert!(needs_new_list(&watcher::Error::WatchStartFailed(
        kube::Error::Api(status(410))
    )));
    // The watcher resumes from its version (or lists, on a 410 ERROR event) by itself.
    assert!(!needs_new_list(&watcher::Error::WatchStartFailed(
        kube::Error::Api(status(500))
    )));
    assert!(!needs_new_list(&watcher::Error::WatchError(status(410))));
    assert!(gone(&watcher::Error::WatchError(status(410))));
    assert!(!gone(&watcher::Error::WatchError(status(500))));
    assert!(!needs_new_list(&watcher::Error::InitialListFailed(
        kube::Error::Api(status(503))
    )));
    let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
    assert!(!needs_new_list(&watcher::Error::WatchFailed(
        kube::Error::ReadEvents(io)
    )));
}

#[test]
fn every_cache_lists_with_consistent_reads() {
    assert_eq!(config().list_semantic, watcher::ListSemantic::MostRecent);
}

#[test]
fn a_resource_the_server_does_not_serve_is_checked_again_after_a_minute_not_the_backoff() {
    let api = |code: u16| {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            ..Default::default()
        }))
    };
    assert!(not_served(&watcher::Error::InitialListFailed(api(404))));
    assert!(!not_served(&watcher::Error::InitialListFailed(api(500))));
    assert!(!not_served(&watcher::Error::WatchStartFailed(api(404))));
    for _ in 0..100 {
        let wait = jittered(NOT_SERVED_RECHECK);
        assert!(wait >= NOT_SERVED_RECHECK.mul_f64(1.0 - JITTER) && wait > BACKOFF_MAX);
        assert!(wait <= NOT_SERVED_RECHECK.mul_f64(1.0 + JITTER));
    }
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
