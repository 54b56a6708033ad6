//! List continue tokens, as `storage.EncodeContinue` / `storage.DecodeContinue` make and read
//! them: unpadded URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}`,
//! where the start key is relative to the list's key prefix (`name` in a namespace,
//! `namespace/name` across namespaces) and `rv` is the resourceVersion of the listed state
//! (-1: continue at the latest state). Invalid tokens are refused with the apiserver's
//! `invalid continue token: ...` messages.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::status::ApiError;
use crate::stored::ObjectKey;

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

#[derive(Serialize)]
struct Encoded<'a> {
    v: &'a str,
    rv: i64,
    start: &'a str,
}

/// A decoded continue token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continue {
    /// The resourceVersion of the listed state; negative: the latest.
    pub resource_version: i64,
    /// Where the next page starts.
    pub start: ObjectKey,
}

/// The token continuing a list of `namespace` (None: all namespaces) at `rv` after `last`.
pub fn encode(last: &ObjectKey, namespace: Option<&str>, rv: i64) -> String {
    let start = format!("{}\u{0}", last.relative(namespace.is_none()));
    let json = serde_json::to_vec(&Encoded {
        v: TOKEN_VERSION,
        rv,
        start: &start,
    })
    .unwrap_or_default();
    base64_url_encode(&json)
}

/// Reads a token of a list of `namespace` (None: all namespaces).
pub fn decode(token: &str, namespace: Option<&str>) -> Result<Continue, ApiError> {
    let invalid = |why: String| ApiError::bad_request(format!("invalid continue token: {why}"));
    let bytes = base64_url_decode(token).map_err(|at| {
        invalid(format!(
            "continue key is not valid: illegal base64 data at input byte {at}"
        ))
    })?;
    let parsed: TokenFields = serde_json::from_slice(&bytes)
        .map_err(|e| invalid(format!("continue key is not valid: {}", json_error(&e))))?;
    if parsed.v != TOKEN_VERSION {
        return Err(invalid(format!(
            "continue key is not valid: server does not recognize this encoded version {}",
            parsed.v
        )));
    }
    if parsed.rv == 0 {
        return Err(invalid(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)".to_owned(),
        ));
    }
    if parsed.start.is_empty() {
        return Err(invalid(
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
                .to_owned(),
        ));
    }
    if !is_clean(&parsed.start) {
        return Err(invalid(format!(
            "continue key is not valid: {}",
            parsed.start
        )));
    }
    let start = parsed.start.trim_start_matches('/');
    let start = match namespace {
        Some(ns) => ObjectKey::new(ns, start),
        None => match start.split_once('/') {
            Some((ns, name)) => ObjectKey::new(ns, name),
            None => ObjectKey::new("", start),
        },
    };
    Ok(Continue {
        resource_version: parsed.rv,
        start,
    })
}

#[derive(Deserialize)]
struct TokenFields {
    #[serde(default)]
    v: String,
    #[serde(default)]
    rv: i64,
    #[serde(default)]
    start: String,
}

/// Whether `path.Clean("/" + key)` leaves the key as it is (no `.`, `..` or empty segments).
fn is_clean(key: &str) -> bool {
    let key = key.strip_prefix('/').unwrap_or(key);
    key.split('/')
        .enumerate()
        .all(|(i, segment)| !matches!(segment, "." | "..") && (i == 0 || !segment.is_empty()))
        && !key.ends_with('/')
}

/// Close to Go's `encoding/json` wording for the common failures.
fn json_error(error: &serde_json::Error) -> String {
    if error.is_syntax() || error.is_eof() {
        return match error.classify() {
            serde_json::error::Category::Eof => "unexpected end of JSON input".to_owned(),
            _ => "invalid character looking for beginning of value".to_owned(),
        };
    }
    error.to_string()
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `base64.RawURLEncoding.EncodeToString`.
fn base64_url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 4 / 3 + 3);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

/// `base64.RawURLEncoding.DecodeString`: the decoded bytes, or the offset Go's
/// `CorruptInputError` reports (line breaks are skipped, as Go does).
fn base64_url_decode(text: &str) -> Result<Vec<u8>, usize> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut buffer, mut held, mut last_at) = (0u32, 0usize, 0usize);
    for (i, c) in text.bytes().enumerate() {
        if matches!(c, b'\n' | b'\r') {
            continue;
        }
        let value = ALPHABET.iter().position(|a| *a == c).ok_or(i)?;
        buffer = buffer << 6 | value as u32;
        held += 1;
        last_at = i;
        if held == 4 {
            out.extend_from_slice(&buffer.to_be_bytes()[1..]);
            (buffer, held) = (0, 0);
        }
    }
    match held {
        0 => {}
        1 => return Err(last_at),
        2 => out.push((buffer >> 4) as u8),
        _ => out.extend_from_slice(&(buffer >> 2).to_be_bytes()[2..]),
    }
    Ok(out)
}

/// The Status of a list whose continue token points into a compacted revision: 410 Expired
/// with a token continuing at the latest state (`handleCompactedErrorForPaging`).
pub fn expired_continue(start: &ObjectKey, namespace: Option<&str>) -> Value {
    let token = encode_start(start, namespace, -1);
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {"continue": token},
        "status": "Failure",
        "message": "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        "reason": "Expired",
        "code": 410,
    })
}

/// A token starting exactly at `start` (already past the last item listed).
fn encode_start(start: &ObjectKey, namespace: Option<&str>, rv: i64) -> String {
    let json = serde_json::to_vec(&Encoded {
        v: TOKEN_VERSION,
        rv,
        start: &start.relative(namespace.is_none()),
    })
    .unwrap_or_default();
    base64_url_encode(&json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_go_raw_url_encoding() {
        for text in ["", "a", "ab", "abc", "abcd", "{\"v\":\"x\u{0}\"}?>"] {
            let encoded = base64_url_encode(text.as_bytes());
            assert!(!encoded.contains('='));
            assert_eq!(base64_url_decode(&encoded).unwrap(), text.as_bytes());
        }
        assert_eq!(base64_url_encode(b"\xfb\xff"), "-_8");
        assert_eq!(base64_url_decode("bogus"), Err(4));
        assert_eq!(base64_url_decode("ab=c"), Err(2));
        assert_eq!(base64_url_decode("ab+c"), Err(2));
    }

    #[test]
    fn tokens_round_trip_within_a_namespace_and_across_namespaces() {
        let last = ObjectKey::new("ns", "a1");
        let token = encode(&last, Some("ns"), 42);
        let decoded = decode(&token, Some("ns")).unwrap();
        assert_eq!(decoded.resource_version, 42);
        assert_eq!(decoded.start, ObjectKey::new("ns", "a1\u{0}"));
        let raw = String::from_utf8(base64_url_decode(&token).unwrap()).unwrap();
        assert_eq!(
            raw,
            "{\"v\":\"meta.k8s.io/v1\",\"rv\":42,\"start\":\"a1\\u0000\"}"
        );
        let across = decode(&encode(&last, None, 7), None).unwrap();
        assert_eq!(across.start, ObjectKey::new("ns", "a1\u{0}"));
    }

    #[test]
    fn invalid_tokens_are_bad_requests_worded_like_the_apiserver() {
        let message = |token: &str| decode(token, Some("ns")).unwrap_err().message;
        assert_eq!(
            message("bogus"),
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 4"
        );
        let token = |json: &str| base64_url_encode(json.as_bytes());
        assert_eq!(
            message(&token(
                "{\"v\":\"meta.k8s.io/v1\",\"rv\":0,\"start\":\"a\"}"
            )),
            "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
        assert_eq!(
            message(&token("{\"v\":\"meta.k8s.io/v1\",\"rv\":1,\"start\":\"\"}")),
            "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        );
        assert_eq!(
            message(&token("{\"v\":\"v2\",\"rv\":1,\"start\":\"a\"}")),
            "invalid continue token: continue key is not valid: server does not recognize this encoded version v2"
        );
        assert!(
            message(&token(
                "{\"v\":\"meta.k8s.io/v1\",\"rv\":1,\"start\":\"../x\"}"
            ))
            .ends_with("../x")
        );
    }
}
