//! Who hears the caches' watches ([`Listener`]), and the tasks that run a watch and tell a
//! listener its news.

use tokio::task::JoinHandle;

use super::kept::Cached;
use super::scope::Scope;
use super::watch::{News, Watch};

/// Who hears what the caches' watches see: every piece of news of every store, with the
/// cluster it comes from. The triggers ([`super::triggers::Reactions`]) turn it into passes; the
/// caches know nothing of passes.
pub trait Listener: Clone + Send + Sync + 'static {
    /// One piece of news of a watch of `cluster`.
    fn hear<K: Cached>(&self, cluster: &str, news: News<'_, K>);

    /// The objects of group `namespace/name` of a store of `cluster` were listed: the group
    /// can be read ([`super::scope`]).
    fn filled(&self, _cluster: &str, _namespace: &str, _name: &str) {}

    /// The wanted groups the members' stores keep; `None`: they keep everything.
    fn scope(&self) -> Option<Scope> {
        None
    }
}

/// Runs `watch` once the hub's MCSs have listed (the wanted groups are known), telling
/// `listener` its news.
pub(super) fn spawn_after<K, C, L>(
    scope: &Scope,
    watch: Watch<K, C>,
    cluster: &str,
    listener: &L,
) -> JoinHandle<()>
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    C: Cached,
    L: Listener,
{
    let listener = listener.clone();
    let cluster = cluster.to_string();
    let scope = scope.clone();
    tokio::spawn(async move {
        scope.ready().await;
        watch.run(move |news| listener.hear(&cluster, news)).await;
    })
}

/// Runs `watch`, telling `listener` its news.
pub(super) fn spawn_heard<K, C, L>(
    watch: Watch<K, C>,
    cluster: &str,
    listener: &L,
) -> JoinHandle<()>
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    C: Cached,
    L: Listener,
{
    let listener = listener.clone();
    let cluster = cluster.to_string();
    tokio::spawn(watch.run(move |news| listener.hear(&cluster, news)))
}
