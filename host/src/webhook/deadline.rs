//! Time budgets: the API server appends `?timeout=10s` (a Go duration) to webhook calls; we
//! answer within it, minus a margin.

use std::time::Duration;

/// Parses a Go duration such as `10s`, `500ms`, `1m30s`, `1.5s`.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let invalid = || format!("invalid duration {s:?}: expected e.g. 10s, 500ms, 1m30s");
    if s.is_empty() {
        return Err(invalid());
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let value: f64 = rest[..num_len].parse().map_err(|_| invalid())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        total += value * seconds;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| invalid())
}

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
    fn parses_go_durations() {
        assert_eq!(parse_go_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_go_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_go_duration("10").is_err());
        assert!(parse_go_duration("s").is_err());
        assert!(parse_go_duration("10x").is_err());
    }

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
