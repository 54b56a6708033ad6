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

/// A YAML document (a server-side apply body) as the YAML decoder reads it, taking the JSON
/// decoder's path when the text is JSON. JSON is YAML, and clients (kube-rs, client-go) send
/// apply bodies as JSON: serde_json reads them several times faster than serde_yaml, which
/// took 6% of the kube-sims' CPU in `scripts/bench-sync.sh`. A text with a repeated key
/// (where YAML decoders disagree with one another) and anything that is not JSON go to
/// serde_yaml, so the answer is always the one serde_yaml gives.
pub fn from_yaml_text(body: &[u8]) -> Result<Value, serde_yaml::Error> {
    match serde_json::from_slice::<UniqueKeys>(body) {
        Ok(UniqueKeys(value)) => Ok(value),
        Err(_) => serde_yaml::from_slice(body),
    }
}

/// A JSON value whose objects repeat no key (a repeated key is an error).
struct UniqueKeys(Value);

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(UniqueKeysVisitor)
            .map(UniqueKeys)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(UniqueKeys(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let UniqueKeys(value) = map.next_value()?;
            if object.insert(key, value).is_some() {
                return Err(serde::de::Error::custom("a repeated key"));
            }
        }
        Ok(Value::Object(object))
    }
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
    fn an_apply_body_reads_the_same_through_either_decoder() {
        let cases: [&[u8]; 7] = [
            br#"{"a": {"b": [1, -2, 3.5, "x\u00e9", null, true]}, "c": 18446744073709551615}"#,
            br#"{"big": 1e400}"#,
            br#"  {"apiVersion": "v1", "metadata": {"labels": {"k": "v"}}}  "#,
            b"a:\n  b: [1]\n",
            b"[1, 2]",
            br#""text""#,
            b"{}",
        ];
        for body in cases {
            let yaml: Result<Value, _> = serde_yaml::from_slice(body);
            let ours = from_yaml_text(body);
            assert_eq!(
                ours.as_ref().ok(),
                yaml.as_ref().ok(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn a_repeated_key_is_read_as_the_yaml_decoder_reads_it() {
        for body in [
            &br#"{"a": 1, "b": {"c": 1, "c": 2}}"#[..],
            br#"{"a": 1, "a": {"c": 1}}"#,
            b"{\"a\": 1,",
        ] {
            let yaml = serde_yaml::from_slice::<Value>(body).map_err(|e| e.to_string());
            let ours = from_yaml_text(body).map_err(|e| e.to_string());
            assert_eq!(ours, yaml, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn protobuf_bodies_are_unsupported_media() {
        let error =
            decode_object(&headers("application/vnd.kubernetes.protobuf"), b"k8s\0").unwrap_err();
        assert_eq!(error.code, 415);
    }
}
