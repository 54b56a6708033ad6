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

/// `fingerprint` on a blocking thread: reading and hashing a component takes milliseconds,
/// which on an async worker would hold up the requests queued behind it.
async fn fingerprint_off_worker(paths: &[PathBuf]) -> Option<[u8; 32]> {
    let paths = paths.to_vec();
    tokio::task::spawn_blocking(move || fingerprint(&paths))
        .await
        .ok()
        .flatten()
}

/// Polls `paths` every `interval` and calls `on_change` when their contents change, until
/// `stop` resolves.
pub async fn watch_files(
    paths: Vec<PathBuf>,
    interval: Duration,
    mut on_change: impl FnMut() + Send,
    stop: impl std::future::Future<Output = ()>,
) {
    let mut last = fingerprint_off_worker(&paths).await;
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = ticker.tick() => {}
        }
        let now = fingerprint_off_worker(&paths).await;
        if now.is_some() && now != last {
            last = now;
            on_change();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    async fn settle(fired: &AtomicUsize, want: usize) -> usize {
        for _ in 0..100 {
            if fired.load(Ordering::SeqCst) >= want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // A few more ticks, to see a second firing if there were one.
        tokio::time::sleep(Duration::from_millis(60)).await;
        fired.load(Ordering::SeqCst)
    }

    /// Replaces the file's contents at once, as a Kubernetes volume update does (a plain
    /// `fs::write` truncates first, and a tick may see the empty file in between).
    fn replace(file: &std::path::Path, contents: &str) {
        let next = file.with_extension("next");
        std::fs::write(&next, contents).unwrap();
        std::fs::rename(&next, file).unwrap();
    }

    #[tokio::test]
    async fn fires_once_per_change_of_contents() {
        let dir = std::env::temp_dir().join(format!("mcs-policy-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("watched");
        std::fs::write(&file, "one").unwrap();
        let fired = Arc::new(AtomicUsize::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let watcher = tokio::spawn(watch_files(
            vec![file.clone()],
            Duration::from_millis(10),
            {
                let fired = Arc::clone(&fired);
                move || {
                    fired.fetch_add(1, Ordering::SeqCst);
                }
            },
            async {
                let _ = stopped.await;
            },
        ));

        assert_eq!(settle(&fired, 0).await, 0, "nothing changed yet");
        replace(&file, "two");
        assert_eq!(settle(&fired, 1).await, 1, "new contents fire once");
        replace(&file, "two");
        assert_eq!(
            settle(&fired, 2).await,
            1,
            "the same contents rewritten do not fire"
        );

        stop.send(()).unwrap();
        watcher.await.unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
