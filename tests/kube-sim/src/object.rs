//! Small accessors and generators for object metadata kept as `serde_json::Value`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The labels of an object as selectors see them: the string-valued entries of
/// `metadata.labels` (anything else there counts as absent).
pub type Labels = BTreeMap<String, String>;

/// `metadata.name`, or "" when absent.
pub fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

/// `metadata.namespace`, or "" when absent (cluster-scoped objects).
pub fn namespace(obj: &Value) -> &str {
    obj["metadata"]["namespace"].as_str().unwrap_or_default()
}

/// `metadata.resourceVersion`, or "" when absent.
pub fn resource_version(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
}

/// `metadata.uid`, or "" when absent.
pub fn uid(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().unwrap_or_default()
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].is_string()
}

/// Whether `metadata.finalizers` has any entry.
pub fn has_finalizers(obj: &Value) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty())
}

/// The `metadata` map of an object, created when missing or not a map.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"]
        .as_object_mut()
        .expect("metadata was just made a map")
}

/// The labels of an object (see [`Labels`]).
pub fn labels(obj: &Value) -> Labels {
    let Some(labels) = obj["metadata"]["labels"].as_object() else {
        return Labels::new();
    };
    labels
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect()
}

/// The current time as the apiserver writes timestamps: RFC 3339, UTC, whole seconds.
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A random RFC 4122 version 4 UID.
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `prefix` plus five random characters, from the alphabet the apiserver uses for generateName.
pub fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let random = uuid::Uuid::new_v4();
    let suffix: String = random
        .as_bytes()
        .iter()
        .take(5)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_the_string_valued_entries_of_metadata_labels() {
        let obj = json!({"metadata": {"labels": {"app": "web", "n": 3, "none": null}}});
        let expected = Labels::from([("app".to_owned(), "web".to_owned())]);
        assert_eq!(labels(&obj), expected);
        assert!(labels(&json!({"metadata": {"labels": "app"}})).is_empty());
        assert!(labels(&json!({})).is_empty());
    }

    #[test]
    fn generated_names_keep_the_prefix_and_add_five_characters() {
        let generated = generate_name("web-");
        assert!(generated.starts_with("web-"));
        assert_eq!(generated.len(), 9);
        assert_ne!(generate_name("web-"), generate_name("web-"));
    }

    #[test]
    fn timestamps_are_whole_seconds_utc() {
        let now = now();
        assert_eq!(now.len(), "2024-01-01T00:00:00Z".len(), "{now}");
        assert!(now.ends_with('Z'));
    }
}
