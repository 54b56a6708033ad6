//! How soon kube-runtime's Controller, as `runtime.rs` builds it, starts a pass for a trigger:
//! at once, with no timer in between (the change to the vendored kube-runtime,
//! vendor/README.md). Unpatched, a trigger waits for the next tick of tokio's millisecond
//! timer, ~2 ms. The tests ask whether the item is there without waiting at all, so they are
//! not timed: no wall-clock threshold, and a slow machine only gives the patched code more
//! time, never less.

use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use futures::{FutureExt, StreamExt, stream};
use kube::api::DynamicObject;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{ObjectRef, store::Writer};
use kube::runtime::scheduler::{ScheduleRequest, scheduler};
use kube::runtime::watcher;
use tokio::time::{Duration, Instant};

use crate::controller::names::mcs_resource;

/// The sender of a scheduler's requests: the scheduler ends when it is dropped.
type Requests = mpsc::UnboundedSender<ScheduleRequest<&'static str>>;

/// kube-runtime's scheduler, given a request for the message `"a"` due `after` each of these
/// durations from now, and the sender of its requests. "Now" is taken after the scheduler
/// exists: a request due before its timer started would come out at once, patched or not.
fn scheduler_given(
    after: &[Duration],
) -> (
    Requests,
    impl futures::Stream<Item = &'static str> + Unpin + use<>,
) {
    let (requests, incoming) = mpsc::unbounded();
    let scheduler = scheduler(incoming);
    for after in after {
        let request = ScheduleRequest {
            message: "a",
            run_at: Instant::now() + *after,
        };
        requests.unbounded_send(request).unwrap();
    }
    (requests, scheduler)
}

const NOW: Duration = Duration::ZERO;
const IN_AN_HOUR: Duration = Duration::from_secs(3600);

#[tokio::test(flavor = "current_thread")]
async fn a_request_due_now_is_emitted_on_the_first_poll() {
    let (_requests, mut scheduler) = scheduler_given(&[NOW]);
    assert_eq!(scheduler.next().now_or_never(), Some(Some("a")));
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_due_now_replaces_the_same_message_scheduled_later() {
    let (_requests, mut scheduler) = scheduler_given(&[IN_AN_HOUR, NOW]);
    assert_eq!(scheduler.next().now_or_never(), Some(Some("a")));
    // Emitted once: the copy for later is gone with it.
    assert_eq!(scheduler.next().now_or_never(), None);
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_for_later_still_waits() {
    let (_requests, mut scheduler) = scheduler_given(&[IN_AN_HOUR]);
    assert_eq!(scheduler.next().now_or_never(), None);
}

/// The MCS names whose passes started, in order.
type Started = Arc<Mutex<Vec<String>>>;

/// What the test's passes share: who started, and a gate each pass waits at before it ends
/// (open unless the test closes it).
#[derive(Default)]
struct Passes {
    started: Started,
    gate: tokio::sync::RwLock<()>,
}

/// A Controller built as `runtime.rs` builds it, over a store holding `names`, triggered only
/// through `reconcile_on`; each pass records its MCS's name.
fn controller(
    names: &[&str],
    passes: Arc<Passes>,
) -> (
    mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
    tokio::task::JoinHandle<()>,
) {
    let mut writer = Writer::new(mcs_resource());
    let reader = writer.as_reader();
    writer.apply_watcher_event(&watcher::Event::Init);
    for name in names {
        let mcs = DynamicObject::new(name, &mcs_resource()).within("default");
        writer.apply_watcher_event(&watcher::Event::InitApply(mcs));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    let (triggers, on) = mpsc::unbounded();
    let run = Controller::for_stream_with(stream::pending(), reader, mcs_resource())
        .with_config(controller::Config::default().concurrency(4))
        .reconcile_on(on)
        .run(
            |mcs: Arc<DynamicObject>, passes: Arc<Passes>| async move {
                let name = mcs.metadata.name.clone().unwrap_or_default();
                passes.started.lock().unwrap().push(name);
                drop(passes.gate.read().await);
                Ok::<_, kube::Error>(Action::await_change())
            },
            |_, _, _| Action::await_change(),
            passes,
        )
        .for_each(|_| async {});
    (triggers, tokio::spawn(run))
}

fn reference(name: &str) -> ObjectRef<DynamicObject> {
    ObjectRef::new_with(name, mcs_resource()).within("default")
}

/// Lets the other tasks of this single-threaded runtime run until they wait again.
async fn let_others_run() {
    for _ in 0..32 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_trigger_starts_its_pass_before_any_timer_could_fire() {
    let passes = Arc::new(Passes::default());
    let (triggers, run) = controller(&["a", "b"], passes.clone());
    let started = passes.started.clone();
    let_others_run().await;
    for (n, name) in ["a", "b", "a"].into_iter().enumerate() {
        triggers.unbounded_send(reference(name)).unwrap();
        // Yielding lets ready tasks run and never waits: unpatched, the pass would wait for
        // a timer ~2 ms away, which these few microseconds of yields do not reach.
        let_others_run().await;
        assert_eq!(
            started.lock().unwrap().get(n).map(String::as_str),
            Some(name)
        );
    }
    run.abort();
}

#[tokio::test(flavor = "current_thread")]
async fn triggers_during_a_pass_give_exactly_one_more_pass_after_it() {
    let passes = Arc::new(Passes::default());
    let (triggers, run) = controller(&["a"], passes.clone());
    let_others_run().await;
    let closed = passes.gate.write().await;
    triggers.unbounded_send(reference("a")).unwrap();
    let_others_run().await;
    // Three more changes while the first pass waits at the gate: never a second pass at once.
    for _ in 0..3 {
        triggers.unbounded_send(reference("a")).unwrap();
        let_others_run().await;
    }
    assert_eq!(passes.started.lock().unwrap().len(), 1);
    drop(closed);
    let_others_run().await;
    let_others_run().await;
    assert_eq!(*passes.started.lock().unwrap(), ["a", "a"]);
    run.abort();
}

// The backlog ([`super::backlog`]): bulk passes go to the Controller a few at a time, behind
// live changes.

use crate::controller::cache::triggers::Changes;
use crate::controller::schedule::backlog::Bulk;

/// What the backlog tests' passes share: the backlog, the live changes, who started, a gate.
struct BulkPasses {
    bulk: Bulk,
    changes: Arc<Changes>,
    passes: Passes,
}

/// A Controller built as `mod.rs` builds it (live triggers and the backlog through two
/// `reconcile_on`, `ObjectNotFound` told to the backlog) with `workers` workers, over a store
/// holding `names`; each pass takes its change, tells the backlog it runs, records its name and
/// waits at the gate. Returns the live triggers' sender.
fn controller_with_backlog(
    names: &[&str],
    workers: u16,
    shared: Arc<BulkPasses>,
) -> (
    mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
    tokio::task::JoinHandle<()>,
) {
    let mut writer = Writer::new(mcs_resource());
    let reader = writer.as_reader();
    writer.apply_watcher_event(&watcher::Event::Init);
    for name in names {
        let mcs = DynamicObject::new(name, &mcs_resource()).within("default");
        writer.apply_watcher_event(&watcher::Event::InitApply(mcs));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    let (live, on) = mpsc::unbounded();
    let (fed, from_backlog) = mpsc::unbounded();
    let outcomes = shared.clone();
    let run = Controller::for_stream_with(stream::pending(), reader, mcs_resource())
        .with_config(controller::Config::default().concurrency(workers))
        .reconcile_on(on)
        .reconcile_on(from_backlog)
        .run(
            |mcs: Arc<DynamicObject>, shared: Arc<BulkPasses>| async move {
                let name = mcs.metadata.name.clone().unwrap_or_default();
                let key = format!("default/{name}");
                shared.changes.take(&key);
                let _running = shared.bulk.running(&key);
                shared.passes.started.lock().unwrap().push(name);
                drop(shared.passes.gate.read().await);
                Ok::<_, kube::Error>(Action::await_change())
            },
            |_, _, _| Action::await_change(),
            shared.clone(),
        )
        .for_each(move |outcome| {
            if let Err(controller::Error::ObjectNotFound(reference)) = &outcome {
                outcomes
                    .bulk
                    .not_found(&format!("default/{}", reference.name));
            }
            async {}
        });
    let run = tokio::spawn(async move {
        tokio::select! {
            () = run => {}
            () = shared.bulk.feed(fed) => {}
        }
    });
    (live, run)
}

fn bulk_passes(workers: u16) -> Arc<BulkPasses> {
    let changes = Arc::new(Changes::default());
    Arc::new(BulkPasses {
        bulk: Bulk::new(usize::from(workers), changes.clone(), mcs_resource()),
        changes,
        passes: Passes::default(),
    })
}

fn keys(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| format!("default/{n}")).collect()
}

/// Lets the runtime run until everything started has ended (the gate is open).
async fn let_all_run() {
    for _ in 0..16 {
        let_others_run().await;
    }
}

const NAMES: [&str; 6] = ["m0", "m1", "m2", "m3", "m4", "m5"];

#[tokio::test(flavor = "current_thread")]
async fn a_live_change_starts_before_the_backlog_and_satisfies_its_place_in_it() {
    let shared = bulk_passes(1);
    let (live, run) = controller_with_backlog(&NAMES, 1, shared.clone());
    let closed = shared.passes.gate.write().await;
    // Queued out of order: served by name.
    shared
        .bulk
        .queue_all(keys(&["m5", "m3", "m4", "m0", "m1", "m2"]));
    let_others_run().await;
    assert_eq!(*shared.passes.started.lock().unwrap(), ["m0"]);
    // A live change of m5, the last of the backlog, while m0's pass runs.
    shared.changes.seen("default/m5", std::time::Instant::now());
    live.unbounded_send(reference("m5")).unwrap();
    drop(closed);
    let_all_run().await;
    assert_eq!(
        *shared.passes.started.lock().unwrap(),
        ["m0", "m5", "m1", "m2", "m3", "m4"],
        "m5 next, and not again"
    );
    assert!(shared.bulk.is_empty());
    run.abort();
}

#[tokio::test(flavor = "current_thread")]
async fn a_live_change_of_a_key_in_the_backlogs_tail_takes_it_out_at_once_and_runs_it_next() {
    let shared = bulk_passes(2);
    let (live, run) = controller_with_backlog(&NAMES, 2, shared.clone());
    let closed = shared.passes.gate.write().await;
    shared.bulk.queue_all(keys(&NAMES));
    let_others_run().await;
    // Both handed out at once: kube-runtime starts them in its hash order.
    let mut first = shared.passes.started.lock().unwrap().clone();
    first.sort_unstable();
    assert_eq!(first, ["m0", "m1"]);
    assert_eq!(shared.bulk.len(), 4);
    // A live change of m5, the tail, while both workers are busy: m5 leaves the backlog at
    // once, before any worker is free.
    shared.changes.seen("default/m5", std::time::Instant::now());
    live.unbounded_send(reference("m5")).unwrap();
    let_others_run().await;
    assert_eq!(shared.bulk.len(), 3, "m2, m3 and m4 wait; m5 does not");
    // A resync meanwhile does not put it back: its live pass is still to come.
    shared.bulk.queue_all(keys(&["m5"]));
    assert_eq!(shared.bulk.len(), 3);
    drop(closed);
    let_all_run().await;
    let started = shared.passes.started.lock().unwrap().clone();
    assert_eq!(started.len(), NAMES.len(), "each once: {started:?}");
    assert_eq!(started[2], "m5", "before the keys ahead of it: {started:?}");
    let mut rest = started[3..].to_vec();
    rest.sort_unstable();
    assert_eq!(rest, ["m2", "m3", "m4"], "the rest still drains");
    assert!(shared.bulk.is_empty());
    assert!(shared.changes.is_empty());
    run.abort();
}

#[tokio::test(flavor = "current_thread")]
async fn an_mcs_deleted_while_queued_loses_nothing_and_keeps_no_worker() {
    let shared = bulk_passes(1);
    let (_live, run) = controller_with_backlog(&NAMES[..3], 1, shared.clone());
    // "gone" and "m00" are not in the Controller's store (deleted since the resync read it):
    // the Controller reports them not found, and the next ones go.
    shared
        .bulk
        .queue_all(keys(&["m2", "gone", "m1", "m00", "m0"]));
    let_all_run().await;
    assert_eq!(*shared.passes.started.lock().unwrap(), ["m0", "m1", "m2"]);
    shared.bulk.queue_all(keys(&["m1"]));
    let_all_run().await;
    assert_eq!(
        *shared.passes.started.lock().unwrap(),
        ["m0", "m1", "m2", "m1"],
        "the one worker is free"
    );
    run.abort();
}

#[tokio::test(flavor = "current_thread")]
async fn a_resync_while_the_backlog_is_served_adds_no_second_pass() {
    let shared = bulk_passes(2);
    let (_live, run) = controller_with_backlog(&NAMES, 2, shared.clone());
    let closed = shared.passes.gate.write().await;
    shared.bulk.queue_all(keys(&NAMES));
    let_others_run().await;
    let running: Vec<String> = shared.passes.started.lock().unwrap().clone();
    assert_eq!(running.len(), 2, "two workers");
    // The resync: the two running passes started before it and go again, at the end; the
    // rest waits already.
    shared.bulk.queue_all(keys(&NAMES));
    drop(closed);
    let_all_run().await;
    let started = shared.passes.started.lock().unwrap().clone();
    assert_eq!(started.len(), NAMES.len() + 2, "{started:?}");
    let mut first: Vec<&str> = started[..NAMES.len()].iter().map(String::as_str).collect();
    first.sort_unstable();
    assert_eq!(first, NAMES);
    let mut again = started[NAMES.len()..].to_vec();
    again.sort_unstable();
    let mut ran_first = running;
    ran_first.sort_unstable();
    assert_eq!(again, ran_first);
    run.abort();
}

#[tokio::test(flavor = "current_thread")]
async fn the_change_of_an_mcs_deleted_before_its_pass_holds_nothing() {
    let shared = bulk_passes(1);
    let (live, run) = controller_with_backlog(&NAMES[..1], 1, shared.clone());
    // A change of an MCS the Controller no longer has: reported not found, its change dropped.
    shared
        .changes
        .seen("default/gone", std::time::Instant::now());
    live.unbounded_send(reference("gone")).unwrap();
    let_all_run().await;
    assert!(shared.changes.is_empty(), "no change waits");
    // So the backlog is not held behind it.
    shared.bulk.queue_all(keys(&["m0"]));
    let_all_run().await;
    assert_eq!(*shared.passes.started.lock().unwrap(), ["m0"]);
    run.abort();
}

#[tokio::test(flavor = "current_thread")]
async fn the_clustersets_backlog_hands_out_its_own_objects_behind_its_live_changes() {
    let resource = crate::controller::clusterset::keys::key_resource();
    let changes = Arc::new(Changes::default());
    let bulk = Bulk::new(2, changes.clone(), resource.clone());
    let (fed, mut handed) = mpsc::unbounded();
    bulk.queue_all(keys(&["b", "a", "c"]));
    // A live change of c: out of the backlog before anything is handed out.
    changes.seen("default/c", std::time::Instant::now());
    let feeder = bulk.feed(fed);
    futures::pin_mut!(feeder);
    assert!(futures::poll!(feeder.as_mut()).is_pending());
    assert!(handed.try_recv().is_err(), "held behind the live change");
    assert_eq!(bulk.len(), 2, "a and b wait; c does not");
    // c's pass (live) starts and ends: a and b go, as synthetic objects of the clusterset.
    changes.take("default/c");
    drop(bulk.running("default/c"));
    let _ = futures::poll!(feeder.as_mut());
    let mut out = Vec::new();
    while let Ok(reference) = handed.try_recv() {
        assert_eq!(reference.dyntype, resource);
        out.push(format!(
            "{}/{}",
            reference.namespace.unwrap(),
            reference.name
        ));
    }
    assert_eq!(out, keys(&["a", "b"]));
}
