//! Timestamps as Go's `metav1.Time` (RFC 3339, whole seconds, UTC) and `metav1.MicroTime`
//! (RFC 3339 with six fractional digits, UTC) serialize them: what the apiserver stores and
//! returns for whatever RFC 3339 text a client sent. Zero times serialize as `null`.

use serde_json::Value;

/// A `metav1.Time` field as stored: `null` stays `null`, a parsable time is re-rendered,
/// anything else is kept as sent.
pub fn time(value: &Value) -> Value {
    render(value, "%Y-%m-%dT%H:%M:%SZ")
}

/// A `metav1.MicroTime` field as stored.
pub fn micro_time(value: &Value) -> Value {
    render(value, "%Y-%m-%dT%H:%M:%S.%6fZ")
}

fn render(value: &Value, format: &str) -> Value {
    let Some(text) = value.as_str() else {
        return Value::Null;
    };
    match text.parse::<jiff::Timestamp>() {
        Ok(t) => Value::from(t.strftime(format).to_string()),
        Err(_) => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_render_like_go() {
        assert_eq!(
            time(&json!("2026-01-01T00:00:00.5+01:00")),
            json!("2025-12-31T23:00:00Z")
        );
        assert_eq!(
            micro_time(&json!("2026-01-01T00:00:00Z")),
            json!("2026-01-01T00:00:00.000000Z")
        );
        assert_eq!(
            micro_time(&json!("2026-01-01T00:05:00.000000Z")),
            json!("2026-01-01T00:05:00.000000Z")
        );
        assert_eq!(time(&Value::Null), Value::Null);
    }
}
