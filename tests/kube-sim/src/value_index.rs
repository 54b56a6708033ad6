//! An index from values that must stay unique across a resource (a Service's cluster IPs and
//! node ports, which the Service registry's allocators hand out) to the objects holding them,
//! kept in step with every write: checking whether a value is free is a map lookup rather than
//! a walk of every object, and since the index is derived from what is stored, nothing needs
//! releasing when a write fails or an object goes (unlike the apiserver's allocators, which
//! keep their own state and repair it).

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::stored::ObjectKey;

/// The values an object holds.
pub type Extract = fn(&Value) -> Vec<String>;

/// Value → the objects holding it.
#[derive(Debug)]
pub struct ValueIndex {
    extract: Extract,
    holders: HashMap<String, BTreeSet<ObjectKey>>,
}

impl ValueIndex {
    pub fn new(extract: Extract) -> Self {
        Self {
            extract,
            holders: HashMap::new(),
        }
    }

    pub fn add(&mut self, key: &ObjectKey, obj: &Value) {
        for value in (self.extract)(obj) {
            self.holders.entry(value).or_default().insert(key.clone());
        }
    }

    pub fn remove(&mut self, key: &ObjectKey, obj: &Value) {
        for value in (self.extract)(obj) {
            if let Some(keys) = self.holders.get_mut(&value) {
                keys.remove(key);
                if keys.is_empty() {
                    self.holders.remove(&value);
                }
            }
        }
    }

    /// Whether an object other than `except` holds `value`.
    pub fn held_by_other(&self, value: &str, except: &ObjectKey) -> bool {
        self.holders
            .get(value)
            .is_some_and(|keys| keys.iter().any(|k| k != except))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ports(obj: &Value) -> Vec<String> {
        let ports = obj["ports"].as_array().into_iter().flatten();
        ports.map(ToString::to_string).collect()
    }

    #[test]
    fn values_are_held_until_their_objects_drop_them() {
        let mut index = ValueIndex::new(ports);
        let (a, b) = (ObjectKey::new("ns", "a"), ObjectKey::new("ns", "b"));
        let first = json!({"ports": [1, 2]});
        index.add(&a, &first);
        index.add(&b, &json!({"ports": [2]}));
        assert!(index.held_by_other("1", &b));
        assert!(!index.held_by_other("1", &a), "a's own value");
        assert!(index.held_by_other("2", &a), "b holds it too");
        index.remove(&a, &first);
        assert!(!index.held_by_other("1", &b));
        assert!(index.held_by_other("2", &a));
        assert!(!index.held_by_other("3", &a));
    }
}
