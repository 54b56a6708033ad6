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
