//! Time budgets: the API server appends `?timeout=10s` (a Go duration) to webhook calls; we
//! answer within it, minus a margin.

use std::time::Duration;

use crate::duration::parse_go_duration;

/// The budget for one request: the API server's timeout (or the default) minus the margin,
/// never less than half the timeout.
pub fn budget(query: Option<&str>, default: Duration, margin: Duration) -> Duration {
    let timeout = query
        .and_then(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == "timeout")
                .and_then(|(_, v)| parse_go_duration(v).ok())
        })
        .filter(|t| !t.is_zero())
        .unwrap_or(default);
    timeout.saturating_sub(margin).max(timeout / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_follows_the_api_server_timeout_minus_margin() {
        let d = Duration::from_secs(10);
        let m = Duration::from_millis(250);
        assert_eq!(
            budget(Some("timeout=3s"), d, m),
            Duration::from_millis(2750)
        );
        assert_eq!(
            budget(Some("a=b&timeout=1s"), d, m),
            Duration::from_millis(750)
        );
        assert_eq!(budget(None, d, m), Duration::from_millis(9750));
        assert_eq!(
            budget(Some("timeout=bogus"), d, m),
            Duration::from_millis(9750)
        );
        assert_eq!(
            budget(Some("timeout=300ms"), d, m),
            Duration::from_millis(150)
        );
    }
}
