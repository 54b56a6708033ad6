//! `Warning` response headers, as the apiserver's `warning.AddWarning` collects them while a
//! request is served (unknown fields a custom resource's schema pruned, finalizer names that
//! are not domain-qualified) and its warning filter writes them: `299 - "<text>"`, each
//! distinct text once, in the order added.
//!
//! Handlers run synchronously on one thread while they hold the store lock, so the warnings of
//! the request being served are collected per thread, between [`collect`]'s start and end.

use std::cell::RefCell;

use axum::http::HeaderValue;
use axum::http::header::WARNING;
use axum::response::Response;

thread_local! {
    static PENDING: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Runs `serve` collecting the warnings it adds, then adds them to its response.
pub fn collect(serve: impl FnOnce() -> Response) -> Response {
    let outer = PENDING.with(|p| p.borrow_mut().replace(Vec::new()));
    let mut response = serve();
    let warnings = PENDING.with(|p| std::mem::replace(&mut *p.borrow_mut(), outer));
    for text in warnings.unwrap_or_default() {
        if let Ok(value) = HeaderValue::from_str(&header_value(&text)) {
            response.headers_mut().append(WARNING, value);
        }
    }
    response
}

/// Adds a warning to the request being served (ignored outside [`collect`]).
pub fn add(text: impl Into<String>) {
    let text = text.into();
    PENDING.with(|p| {
        if let Some(pending) = p.borrow_mut().as_mut().filter(|p| !p.contains(&text)) {
            pending.push(text);
        }
    });
}

/// `299 - "<text>"`, the text quoted as Go's `%q` would (backslashes and quotes escaped).
fn header_value(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    format!("299 - \"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;

    #[test]
    fn warnings_added_while_serving_become_headers_once_each() {
        let response = collect(|| {
            add("unknown field \"spec.bogus\"");
            add("unknown field \"spec.bogus\"");
            add("second");
            "ok".into_response()
        });
        let headers: Vec<&str> = response
            .headers()
            .get_all(WARNING)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(
            headers,
            vec![
                "299 - \"unknown field \\\"spec.bogus\\\"\"",
                "299 - \"second\""
            ]
        );
    }

    #[test]
    fn warnings_outside_a_request_are_dropped() {
        add("nobody listens");
        let response = collect(|| "ok".into_response());
        assert!(response.headers().get(WARNING).is_none());
    }
}
