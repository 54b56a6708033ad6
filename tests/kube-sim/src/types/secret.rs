//! Secrets (`core/v1`), as kube-apiserver's conversion, defaults, strategy and validation treat
//! them (`pkg/apis/core/v1/conversion.go`, `defaults.go`, `pkg/registry/core/secret/strategy.go`,
//! `pkg/apis/core/validation.ValidateSecret`/`ValidateSecretUpdate`,
//! `pkg/api/secret.GetWarningsForSecret`), recorded in `23-secret-tls`:
//!
//! - decoding merges `stringData` into `data` (base64, overriding the same keys) and drops it;
//!   a missing or empty `type` is `Opaque`;
//! - data keys follow `IsConfigMapKey`, the data is at most 1 MiB;
//! - `kubernetes.io/tls` Secrets need `data[tls.crt]` and `data[tls.key]` (422 `Required
//!   value`); `type` cannot change (`field is immutable`); an `immutable: true` Secret keeps
//!   its `data` and stays immutable;
//! - a TLS Secret stored with keys that hold no PEM data gets the warning `tls.X509KeyPair`'s
//!   error gives (`tls: failed to find any PEM data in certificate input`). Only the PEM
//!   framing is looked at: whether the certificate parses and the key matches it is not.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::field::{ErrorList, FieldError};

pub const TYPE_TLS: &str = "kubernetes.io/tls";
const TLS_CERT_KEY: &str = "tls.crt";
const TLS_KEY_KEY: &str = "tls.key";

/// `Convert_v1_Secret_To_core_Secret`'s `stringData` merge and `SetDefaults_Secret`.
pub fn decode_defaults(obj: &mut Value) {
    let Some(secret) = obj.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(string_data)) = secret.remove("stringData") {
        let data = secret
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        if !data.is_object() {
            *data = Value::Object(Map::new());
        }
        if let Some(data) = data.as_object_mut() {
            for (key, value) in string_data {
                let text = value.as_str().unwrap_or_default();
                let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                data.insert(key, json!(encoded));
            }
        }
    }
    if secret
        .get("type")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        secret.insert("type".to_owned(), json!("Opaque"));
    }
}

fn has_data_key(obj: &Value, key: &str) -> bool {
    obj["data"].as_object().is_some_and(|d| d.contains_key(key))
}

/// The largest total size of a Secret's data (`core.MaxSecretSize`).
const MAX_SIZE: usize = 1024 * 1024;

/// `ValidateSecret` after the metadata: data keys, total size, the TLS keys.
pub fn validate(obj: &Value) -> ErrorList {
    let mut errors = ErrorList::new();
    let mut total = 0;
    for (key, value) in obj["data"].as_object().into_iter().flatten() {
        for problem in super::names::config_map_key(key) {
            errors.push(FieldError::invalid(
                &format!("data[{key}]"),
                key.as_str(),
                problem,
            ));
        }
        // The decoded size: base64 of n bytes is 4 * ceil(n / 3) characters.
        let text = value.as_str().unwrap_or_default();
        let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
        total += (text.len() / 4 * 3).saturating_sub(padding);
    }
    if total > MAX_SIZE {
        errors.push(FieldError::too_long("data", MAX_SIZE));
    }
    if obj["type"].as_str() == Some(TYPE_TLS) {
        for key in [TLS_CERT_KEY, TLS_KEY_KEY] {
            if !has_data_key(obj, key) {
                errors.push(FieldError::required(&format!("data[{key}]"), ""));
            }
        }
    }
    errors
}

/// `ValidateSecretUpdate` after the metadata: `type` immutable, `immutable` Secrets frozen,
/// then [`validate`].
pub fn validate_update(new: &Value, old: &Value) -> ErrorList {
    let mut errors = ErrorList::new();
    if new["type"] != old["type"] {
        errors.push(FieldError::invalid(
            "type",
            new["type"].clone(),
            "field is immutable",
        ));
    }
    if old["immutable"] == true {
        if new["immutable"] != true {
            errors.push(FieldError::forbidden(
                "immutable",
                "field is immutable when `immutable` is set",
            ));
        }
        let empty = |v: &Value| v.as_object().is_none_or(Map::is_empty);
        if new["data"] != old["data"] && !(empty(&new["data"]) && empty(&old["data"])) {
            errors.push(FieldError::forbidden(
                "data",
                "field is immutable when `immutable` is set",
            ));
        }
    }
    errors.extend(validate(new));
    errors
}

/// The warnings of `WarningsOnCreate`/`WarningsOnUpdate` for a stored Secret.
pub fn warnings(obj: &Value) -> Vec<String> {
    if obj["type"].as_str() != Some(TYPE_TLS) {
        return Vec::new();
    }
    let decoded = |key: &str| {
        obj["data"][key]
            .as_str()
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    };
    key_pair_error(&decoded(TLS_CERT_KEY), &decoded(TLS_KEY_KEY))
        .into_iter()
        .collect()
}

/// The types of the PEM blocks in `text`, in order (`pem.Decode` in a loop; only the framing).
fn pem_block_types(text: &str) -> Vec<String> {
    let mut types = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + "-----BEGIN ".len()..];
        let Some(end) = after.find("-----") else {
            break;
        };
        let block_type = &after[..end];
        let footer = format!("-----END {block_type}-----");
        let Some(close) = after.find(&footer) else {
            break;
        };
        types.push(block_type.to_owned());
        rest = &after[close + footer.len()..];
    }
    types
}

/// The error `tls.X509KeyPair` returns while looking for the PEM blocks, if any.
fn key_pair_error(cert: &str, key: &str) -> Option<String> {
    let cert_blocks = pem_block_types(cert);
    if !cert_blocks.iter().any(|t| t == "CERTIFICATE") {
        return Some(if cert_blocks.is_empty() {
            "tls: failed to find any PEM data in certificate input".to_owned()
        } else if cert_blocks.iter().any(|t| t.ends_with("PRIVATE KEY")) {
            "tls: failed to find certificate PEM data in certificate input, but did find a \
             private key; PEM inputs may have been switched"
                .to_owned()
        } else {
            format!(
                "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after \
                 skipping PEM blocks of the following types: [{}]",
                cert_blocks.join(" ")
            )
        });
    }
    let key_blocks = pem_block_types(key);
    if key_blocks
        .iter()
        .any(|t| t == "PRIVATE KEY" || t.ends_with(" PRIVATE KEY"))
    {
        return None;
    }
    Some(if key_blocks.is_empty() {
        "tls: failed to find any PEM data in key input".to_owned()
    } else if key_blocks.iter().any(|t| t == "CERTIFICATE") {
        "tls: found a certificate rather than a key in the PEM for the private key".to_owned()
    } else {
        format!(
            "tls: failed to find PEM block with type ending in \"PRIVATE KEY\" in key input \
             after skipping PEM blocks of the following types: [{}]",
            key_blocks.join(" ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: &ErrorList) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    #[test]
    fn string_data_is_merged_into_data_and_type_defaults_to_opaque() {
        let mut secret = json!({"metadata": {"name": "s"}, "type": null, "data": {"a": "MQ==", "b": "MQ=="}, "stringData": {"b": "x"}});
        decode_defaults(&mut secret);
        assert_eq!(
            secret,
            json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "MQ==", "b": "eA=="}})
        );
    }

    #[test]
    fn tls_secrets_need_both_keys_and_keep_their_type() {
        let secret = json!({"type": TYPE_TLS, "data": {"tls.crt": "eA=="}});
        assert_eq!(
            messages(&validate(&secret)),
            vec!["data[tls.key]: Required value"]
        );
        let old = json!({"type": TYPE_TLS, "data": {"tls.crt": "eA==", "tls.key": "eA=="}});
        let mut new = old.clone();
        new["type"] = json!("Opaque");
        assert_eq!(
            messages(&validate_update(&new, &old)),
            vec!["type: Invalid value: \"Opaque\": field is immutable"]
        );
    }

    #[test]
    fn data_keys_must_be_config_keys() {
        let secret = json!({"type": "Opaque", "data": {"a/b": "eA=="}});
        assert_eq!(
            messages(&validate(&secret)),
            vec![
                "data[a/b]: Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ]
        );
    }

    #[test]
    fn keys_without_pem_data_are_warned_about() {
        let secret = json!({"type": TYPE_TLS, "data": {"tls.crt": "eA==", "tls.key": "eQ=="}});
        assert_eq!(
            warnings(&secret),
            vec!["tls: failed to find any PEM data in certificate input"]
        );
        let pem = |t: &str| format!("-----BEGIN {t}-----\nAAAA\n-----END {t}-----\n");
        let b64 = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
        let secret = json!({"type": TYPE_TLS, "data": {"tls.crt": b64(pem("CERTIFICATE")), "tls.key": b64(pem("EC PRIVATE KEY"))}});
        assert!(warnings(&secret).is_empty());
        let secret = json!({"type": TYPE_TLS, "data": {"tls.crt": b64(pem("CERTIFICATE")), "tls.key": "eQ=="}});
        assert_eq!(
            warnings(&secret),
            vec!["tls: failed to find any PEM data in key input"]
        );
    }
}
