//! Phase `fleet` at rest: the controller's RSS over fewer or empty members (the baselines of
//! RSS per member), and the API requests it makes while nothing changes.

use super::*;

/// `(VmRSS, VmHWM)` of process `pid`, KiB.
pub(crate) fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    (
        proc_field(&status, "VmRSS").unwrap_or(0),
        proc_field(&status, "VmHWM").unwrap_or(0),
    )
}

/// How long a controller is left at rest before its RSS is read.
const SETTLE: Duration = Duration::from_secs(3);

/// Starts the controller over the hub and the first `members` members (as they are: the
/// baselines run before anything is preloaded), waits until its first resync has run (its
/// caches listed; at most `limit`), then [`SETTLE`], and returns its VmRSS (KiB) and its heap
/// (bytes, its metric); stops it.
pub(crate) async fn rss_over(
    fleet: &mut Fleet,
    settings: &Settings,
    members: usize,
    limit: Duration,
) -> (u64, f64) {
    fleet.start_over(&settings.bin, members, settings.workers[0], settings);
    let pid = fleet.controller_pid();
    let start = Instant::now();
    while counter(fleet, "mcs_policy_sync_passes_total").await < 1.0 {
        if start.elapsed() > limit {
            println!("  (no resync within {limit:?}: RSS read anyway)");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ready = start.elapsed();
    tokio::time::sleep(SETTLE).await;
    let (rss, _) = rss_kib(pid);
    let heap = counter(fleet, "mcs_policy_sync_heap_bytes").await;
    println!(
        "  controller over the hub and {members} members: first resync after {:.2} s, VmRSS {:.1} MB and heap {:.1} MB {:.0} s later",
        ready.as_secs_f64(),
        rss as f64 / 1024.0,
        heap / 1e6,
        SETTLE.as_secs_f64()
    );
    fleet.controller = None;
    (rss, heap)
}

/// The converged fleet at rest: the API requests every cluster received (watches left out)
/// from just after convergence through one resync, and in one `--resync-interval` window
/// holding one resync (from just after one resync to just after the next), with the
/// controller's CPU in that window.
pub(crate) struct Rest {
    /// From the start of the rest to the end of the window.
    pub(crate) span: Duration,
    pub(crate) requests: Vec<Request>,
    pub(crate) window: Duration,
    pub(crate) window_requests: Vec<Request>,
    pub(crate) window_cpu: f64,
}

/// Measures [`Rest`]; `None` when no resync came within `limit` (twice).
pub(crate) async fn at_rest(fleet: &Fleet, pid: u32, limit: Duration) -> Option<Rest> {
    let no_watch = |all: Vec<Request>| -> Vec<Request> {
        all.into_iter().filter(|r| r.verb != "watch").collect()
    };
    fleet.clear_request_logs().await;
    let start = Instant::now();
    let passes = counter(fleet, "mcs_policy_sync_passes_total").await;
    await_resync_done(fleet, passes, limit).await?;
    let mut requests = no_watch(fleet.request_logs().await);
    fleet.clear_request_logs().await;
    let passes = counter(fleet, "mcs_policy_sync_passes_total").await;
    let (window_start, cpu) = (Instant::now(), cpu_seconds(pid));
    await_resync_done(fleet, passes, limit).await?;
    let window_cpu = cpu_seconds(pid) - cpu;
    let window = window_start.elapsed();
    let window_requests = no_watch(fleet.request_logs().await);
    requests.extend(window_requests.iter().cloned());
    let rest = Rest {
        span: start.elapsed(),
        requests,
        window,
        window_requests,
        window_cpu,
    };
    println!(
        "at rest: {} API requests over {:.1} s ({:?}); in one resync window of {:.1} s: {} ({:?}), controller CPU {:.2} s",
        rest.requests.len(),
        rest.span.as_secs_f64(),
        by_kind(rest.requests.iter()),
        rest.window.as_secs_f64(),
        rest.window_requests.len(),
        by_kind(rest.window_requests.iter()),
        rest.window_cpu
    );
    Some(rest)
}
