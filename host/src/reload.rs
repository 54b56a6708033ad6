//! Watching files for changes by content (mtime is unreliable for Kubernetes Secret volumes,
//! which swap symlinks). A change fires only once the files read back fully.

use std::path::PathBuf;
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Digest of the concatenated contents, or `None` while any file is unreadable.
fn fingerprint(paths: &[PathBuf]) -> Option<[u8; 32]> {
    let mut hasher = Sha256::new();
    for p in paths {
        hasher.update(std::fs::read(p).ok()?);
    }
    Some(hasher.finalize().into())
}

/// Polls `paths` every `interval` and calls `on_change` when their contents change, until
/// `stop` resolves.
pub async fn watch_files(
    paths: Vec<PathBuf>,
    interval: Duration,
    mut on_change: impl FnMut() + Send,
    stop: impl std::future::Future<Output = ()>,
) {
    let mut last = fingerprint(&paths);
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = ticker.tick() => {}
        }
        let now = fingerprint(&paths);
        if now.is_some() && now != last {
            last = now;
            on_change();
        }
    }
}
