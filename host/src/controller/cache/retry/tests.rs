use kube::runtime::watcher;

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
