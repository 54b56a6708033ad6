//! Decoding request bodies: JSON, or YAML when the content type says so (JSON is YAML too).

use axum::http::{HeaderMap, header};
use serde_json::Value;

use crate::status::ApiError;

/// The media type of a request body, without parameters (`application/json` when absent).
pub fn content_type(headers: &HeaderMap) -> String {
    let value = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// An object body (create, update), as JSON or YAML.
pub fn decode_object(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    match content_type(headers).as_str() {
        "application/json" | "" | "*/*" => decode_json(body),
        "application/yaml" | "application/x-yaml" | "text/yaml" => decode_yaml(body),
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

pub fn decode_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))
}

pub fn decode_yaml(body: &[u8]) -> Result<Value, ApiError> {
    serde_yaml::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML body: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(content_type).unwrap(),
        );
        headers
    }

    #[test]
    fn json_and_yaml_bodies_decode_to_the_same_value() {
        let json = decode_object(
            &headers("application/json; charset=utf-8"),
            br#"{"a": {"b": [1]}}"#,
        )
        .unwrap();
        let yaml = decode_object(&headers("application/yaml"), b"a:\n  b: [1]\n").unwrap();
        assert_eq!(json, yaml);
    }

    #[test]
    fn protobuf_bodies_are_unsupported_media() {
        let error =
            decode_object(&headers("application/vnd.kubernetes.protobuf"), b"k8s\0").unwrap_err();
        assert_eq!(error.code, 415);
    }
}
