//! `Warning` response headers, as the apiserver's `warning.AddWarning(ctx, ...)` collects them
//! during a request: code whose caller cannot pass them back (validation deep in a write) adds
//! them here, and the request handler sends them as `Warning: 299 - "text"` headers. Requests
//! are served synchronously on one thread, so a thread-local list is the request's list.

use std::cell::RefCell;

use axum::http::HeaderValue;
use axum::response::Response;

thread_local! {
    static WARNINGS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Adds a warning to the current request's answer (once: repeats are dropped, as the
/// apiserver's recorder does).
pub fn add(text: String) {
    WARNINGS.with(|w| {
        let mut list = w.borrow_mut();
        if !list.contains(&text) {
            list.push(text);
        }
    });
}

/// Runs `serve` with a fresh warning list and puts what it collected on its response.
pub fn around(serve: impl FnOnce() -> Response) -> Response {
    WARNINGS.with(|w| w.borrow_mut().clear());
    let mut response = serve();
    let collected = WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut()));
    for text in collected {
        if let Ok(value) = HeaderValue::from_str(&header_text(&text)) {
            response.headers_mut().append("warning", value);
        }
    }
    response
}

/// `299 - "text"` with `"` and `\` escaped (RFC 7234 warn-text).
fn header_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    format!("299 - \"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;

    #[test]
    fn warnings_become_headers_once_each() {
        let response = around(|| {
            add("a \"b\"".to_owned());
            add("a \"b\"".to_owned());
            "ok".into_response()
        });
        let values: Vec<&str> = response
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(values, vec!["299 - \"a \\\"b\\\"\""]);
        let clean = around(|| "ok".into_response());
        assert!(clean.headers().get("warning").is_none());
    }
}
