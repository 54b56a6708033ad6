//! The filler of a scoped store: lists on its own each group wanted since the store listed
//! ([`super::scope`] has the rules), a few at a time, and retries a failed list after a
//! backoff.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::time::Instant;

use super::groups::Fill;
use super::kept::Cached;
use super::listener::Listener;
use super::store::Store;

/// Fills of one store running at once, at most.
const FILLS_AT_ONCE: usize = 8;
/// The wait before a failed fill is tried again; it doubles up to [`FILL_RETRY_MAX`].
const FILL_RETRY_FIRST: Duration = Duration::from_millis(500);
/// The longest wait before a failed fill is tried again.
const FILL_RETRY_MAX: Duration = Duration::from_secs(10);

/// Fills `store`'s groups owed a fill for ever (abort the task to stop it): `fetch` lists a
/// group's objects in `cluster`, the answer is merged ([`Store::fill_done`]) and `listener`
/// told ([`Listener::filled`]). A failed fill is tried again after a backoff.
pub async fn fill<C, L, F, Fut>(cluster: String, store: Store<C>, fetch: F, listener: L)
where
    C: Cached,
    L: Listener,
    F: Fn(String, String) -> Fut,
    Fut: Future<Output = Result<Vec<C>, kube::Error>>,
{
    let Some(wake) = store.fill_wake() else {
        return;
    };
    let mut running = FuturesUnordered::new();
    let mut in_flight: HashSet<(String, String)> = HashSet::new();
    // Failures in a row, and when to try again.
    let mut failed: HashMap<(String, String), (u32, Instant)> = HashMap::new();
    loop {
        let now = Instant::now();
        let owed = store.unfilled();
        failed.retain(|group, _| {
            owed.iter()
                .any(|(ns, g, _)| (ns, g) == (&group.0, &group.1))
        });
        for (namespace, group, token) in owed {
            if running.len() >= FILLS_AT_ONCE {
                break;
            }
            let id = (namespace, group);
            if in_flight.contains(&id) || failed.get(&id).is_some_and(|(_, at)| *at > now) {
                continue;
            }
            in_flight.insert(id.clone());
            let answer = fetch(id.0.clone(), id.1.clone());
            running.push(async move { (id, token, answer.await) });
        }
        let retry = failed
            .values()
            .map(|(_, at)| *at)
            .filter(|at| *at > now)
            .min();
        tokio::select! {
            () = wake.notified() => {}
            Some(((namespace, group), token, answer)) = running.next(), if !running.is_empty() => {
                let id = (namespace, group);
                in_flight.remove(&id);
                let error = match answer {
                    Ok(objects) => match store.fill_done(&id.0, &id.1, token, objects) {
                        Fill::Merged => {
                            failed.remove(&id);
                            listener.filled(&cluster, &id.0, &id.1);
                            None
                        }
                        Fill::Stale => None,
                        Fill::Later => Some("the cluster's watch is failing or listing".to_string()),
                    },
                    Err(err) => Some(crate::clusters::api_error::chain(&err)),
                };
                if let Some(error) = error {
                    let entry = failed.entry(id.clone()).or_insert((0, now));
                    entry.0 += 1;
                    let wait = FILL_RETRY_FIRST
                        .saturating_mul(1 << entry.0.saturating_sub(1).min(8))
                        .min(FILL_RETRY_MAX);
                    entry.1 = Instant::now() + wait;
                    tracing::warn!(%cluster, namespace = %id.0, group = %id.1, %error, retry_in = ?wait,
                        "listing the objects of a name a MultiClusterService names failed; they are not read until listed");
                }
            }
            () = tokio::time::sleep_until(retry.unwrap_or(now)), if retry.is_some() => {}
        }
    }
}
