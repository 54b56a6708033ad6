//! An index from label key and value to the objects carrying that label, kept in step with
//! every write, so that a `key=value` or `key in (...)` selector looks at the objects it can
//! match rather than at every object of the resource.

use std::collections::{BTreeSet, HashMap};

use crate::object::Labels;
use crate::selector::LabelSelector;
use crate::stored::ObjectKey;

/// Label key → label value → the objects carrying that label.
#[derive(Debug, Default)]
pub struct LabelIndex(HashMap<String, HashMap<String, BTreeSet<ObjectKey>>>);

impl LabelIndex {
    pub fn add(&mut self, key: &ObjectKey, labels: &Labels) {
        for (k, v) in labels {
            let values = self.0.entry(k.clone()).or_default();
            values.entry(v.clone()).or_default().insert(key.clone());
        }
    }

    pub fn remove(&mut self, key: &ObjectKey, labels: &Labels) {
        for (k, v) in labels {
            let Some(values) = self.0.get_mut(k) else {
                continue;
            };
            if let Some(keys) = values.get_mut(v) {
                keys.remove(key);
                if keys.is_empty() {
                    values.remove(v);
                }
            }
            if values.is_empty() {
                self.0.remove(k);
            }
        }
    }

    /// The keys of the objects labelled `key=value` (in every namespace).
    fn labelled(&self, key: &str, value: &str) -> Option<&BTreeSet<ObjectKey>> {
        self.0.get(key)?.get(value)
    }

    /// With a `key=value` or `key in (...)` requirement: the keys of the objects in `namespace`
    /// (None: all) that can meet the tightest one, in key order (None: the selector has no
    /// such requirement).
    pub fn candidates(
        &self,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Option<Vec<&ObjectKey>> {
        let sets = |(key, values): (&str, &[String])| -> Vec<&BTreeSet<ObjectKey>> {
            values
                .iter()
                .filter_map(|v| self.labelled(key, v))
                .collect()
        };
        let total = |sets: &Vec<&BTreeSet<ObjectKey>>| sets.iter().map(|s| s.len()).sum::<usize>();
        let tightest = selector.equality_terms().map(sets).min_by_key(total)?;
        let mut keys: Vec<&ObjectKey> = Vec::new();
        for set in &tightest {
            match namespace {
                None => keys.extend(set.iter()),
                Some(ns) => keys.extend(
                    set.range(ObjectKey::namespace_start(ns)..)
                        .take_while(|k| k.namespace == ns),
                ),
            }
        }
        // Sets of different values of one key are disjoint; merged, they need sorting.
        if tightest.len() > 1 {
            keys.sort_unstable();
        }
        Some(keys)
    }

    /// Every indexed `key=value` with the objects carrying it, sorted (for tests).
    #[cfg(test)]
    pub fn entries(&self) -> Vec<String> {
        let mut entries: Vec<String> = self
            .0
            .iter()
            .flat_map(|(k, values)| {
                values.iter().map(move |(v, keys)| {
                    let keys: Vec<String> = keys.iter().map(|k| k.relative(true)).collect();
                    format!("{k}={v}: {}", keys.join(" "))
                })
            })
            .collect();
        entries.sort();
        entries
    }
}
