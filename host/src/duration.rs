//! Durations on the command line, in Go's syntax (`10s`, `500ms`, `1m30s`, `1.5s`), as
//! Kubernetes tools and the API server's `?timeout=` write them. Shared by every argument group
//! that takes a duration and by the webhook's time budget.

use std::time::Duration;

/// Parses a Go duration such as `10s`, `500ms`, `1m30s`, `1.5s` (`0` alone needs no unit).
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

/// A Go duration that must be positive (e.g. a resync interval).
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_go_duration(s)? {
        d if d.is_zero() => Err(format!("{s:?}: the duration must be positive")),
        d => Ok(d),
    }
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
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn refuses_durations_without_a_known_unit() {
        assert!(parse_go_duration("").is_err());
        assert!(parse_go_duration("10").is_err());
        assert!(parse_go_duration("s").is_err());
        assert!(parse_go_duration("10x").is_err());
    }

    #[test]
    fn positive_durations_refuse_zero() {
        assert!(parse_positive_duration("0").is_err());
        assert!(parse_positive_duration("0s").is_err());
        assert_eq!(parse_positive_duration("1h"), Ok(Duration::from_secs(3600)));
    }
}
