//! Resync at rest (the third measure): one `--resync-interval` window with nothing changed, its
//! requests and CPU.

use super::*;

/// The controller's counter `name` now.
pub(crate) async fn counter(fleet: &Fleet, name: &str) -> f64 {
    metric(&fleet.metrics().await, name).unwrap_or(0.0)
}

/// How often the benchmark reads the controller's metrics while it waits for a resync. Each
/// read costs the controller ~0.2 ms of CPU (the text encoding and `mallinfo2` over a 100 MB
/// heap): ~0.1 s over a 30 s window, so the idle rate is taken at the same cadence and the
/// subtraction takes them out of the resync's own CPU.
pub(crate) const RESYNC_POLL: Duration = Duration::from_millis(50);

/// Waits until the resync counter moves past `passes`, then until the reconciles counter has
/// not moved for a second; `None` after `limit`.
pub(crate) async fn await_resync_done(fleet: &Fleet, passes: f64, limit: Duration) -> Option<()> {
    let deadline = Instant::now() + limit;
    while counter(fleet, "mcs_policy_sync_passes_total").await <= passes {
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(RESYNC_POLL).await;
    }
    let mut last = counter(fleet, "mcs_policy_sync_reconciles_total").await;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = counter(fleet, "mcs_policy_sync_reconciles_total").await;
        if now == last {
            return Some(());
        }
        if Instant::now() > deadline {
            return None;
        }
        last = now;
    }
}

/// The controller's CPU-seconds per second over `span` with nothing to do, its metrics read
/// every [`RESYNC_POLL`] as while a resync is awaited.
pub(crate) async fn idle_rate(fleet: &Fleet, pid: u32, span: Duration) -> f64 {
    let (start, from) = (Instant::now(), cpu_seconds(pid));
    while start.elapsed() < span {
        counter(fleet, "mcs_policy_sync_passes_total").await;
        tokio::time::sleep(RESYNC_POLL).await;
    }
    (cpu_seconds(pid) - from) / start.elapsed().as_secs_f64()
}

/// One `--resync-interval` window holding one resync of every MCS, nothing changed: its
/// requests and CPU.
pub(crate) async fn resync_at_rest(
    fleet: &Fleet,
    pid: u32,
    mcs: usize,
    limit: Duration,
) -> Option<ResyncRow> {
    let passes = counter(fleet, "mcs_policy_sync_passes_total").await;
    await_resync_done(fleet, passes, limit).await?;
    // 10 s: /proc counts CPU in 10 ms ticks, so a tick more or less moves the rate by 0.001
    // s/s and the resync's own CPU by ~0.03 s (over 3 s, by ~0.09 s). It must end before the
    // next resync starts: `SYNC_BENCH_RESYNC` well above 10 s, as its default 30 s is.
    let idle_rate = idle_rate(fleet, pid, Duration::from_secs(10)).await;
    let passes = counter(fleet, "mcs_policy_sync_passes_total").await;
    let reconciles = counter(fleet, "mcs_policy_sync_reconciles_total").await;
    let quiet = counter(fleet, "mcs_policy_sync_quiet_reconciles_total").await;
    fleet.clear_request_logs().await;
    let (start, cpu) = (Instant::now(), cpu_seconds(pid));
    await_resync_done(fleet, passes, limit).await?;
    let row = ResyncRow {
        window: start.elapsed(),
        cpu: cpu_seconds(pid) - cpu,
        idle_rate,
        reconciles: counter(fleet, "mcs_policy_sync_reconciles_total").await - reconciles,
        requests: 0,
        reads: 0,
    };
    let quiet = counter(fleet, "mcs_policy_sync_quiet_reconciles_total").await - quiet;
    let requests = fleet.request_logs().await;
    let requests: Vec<_> = requests.into_iter().filter(|r| r.verb != "watch").collect();
    let row = ResyncRow {
        requests: requests.len(),
        reads: requests.iter().filter(|r| r.is_read()).count(),
        ..row
    };
    println!(
        "resync at rest ({mcs} MCS): {} passes ({quiet:.0} skipped as quiet), {} API requests ({} reads) in a {:.1} s window; controller CPU {:.2} s in the window, idle {:.3} s/s => the resync's own ~{:.2} s",
        row.reconciles,
        row.requests,
        row.reads,
        row.window.as_secs_f64(),
        row.cpu,
        row.idle_rate,
        row.cpu - row.idle_rate * row.window.as_secs_f64()
    );
    Some(row)
}
