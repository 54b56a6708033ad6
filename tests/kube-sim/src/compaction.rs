//! Periodic compaction, as kube-apiserver's compactor (`etcd3/compact.go`, every
//! `--etcd-compaction-interval`, 5 minutes by default) does it: each interval, compact at the
//! revision seen one interval earlier (nothing at the first), so the last interval's history
//! stays readable and memory stays bounded however long kube-sim runs.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{Instant, interval_at};

use crate::app::App;

/// Starts compacting every `interval` (never when zero).
pub fn spawn(app: Arc<App>, interval: Duration) {
    if interval.is_zero() {
        return;
    }
    tokio::spawn(async move {
        let mut ticks = interval_at(Instant::now() + interval, interval);
        let mut seen = 0;
        loop {
            ticks.tick().await;
            let current = app.read().resource_version();
            if seen > 0 {
                let compacted = app.write().compact(seen);
                tracing::debug!(compacted, "compacted");
            }
            seen = current;
        }
    });
}
