//! Selecting one page of a list from objects in key order, as the watch cache's `GetList`
//! does: objects of the request's namespace (or all), matching the label and field
//! selectors, from a continue token's start key, at most `limit` of them.
//!
//! Like the cacher, a full page says more follow as soon as *any* object of the range comes
//! after its last item (matching or not), and counts the objects left (`remainingItemCount`)
//! only when the request has no selector (`storage.PrepareContinueToken`).

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::field_selector::FieldSelector;
use crate::label_index::LabelIndex;
use crate::selector::LabelSelector;
use crate::stored::{ObjectKey, Stored};

/// What a list asks for.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The request's namespace; None across all namespaces (and for cluster-scoped types).
    pub namespace: Option<&'a str>,
    pub labels: &'a LabelSelector,
    pub fields: &'a FieldSelector,
    /// The first key to consider (from a continue token).
    pub start: Option<&'a ObjectKey>,
    /// At most this many items; None for all.
    pub limit: Option<usize>,
}

/// One page of a list.
#[derive(Debug, Default)]
pub struct Page {
    pub items: Vec<Stored>,
    /// When more objects follow the page: the key of its last item.
    pub more_after: Option<ObjectKey>,
    /// How many objects follow the page, when the query has no selector.
    pub remaining: Option<u64>,
}

impl Query<'_> {
    fn first_key(&self) -> ObjectKey {
        let namespace_start = ObjectKey::namespace_start(self.namespace.unwrap_or_default());
        match self.start {
            Some(start) if *start > namespace_start => start.clone(),
            _ => namespace_start,
        }
    }

    fn in_namespace(&self, key: &ObjectKey) -> bool {
        self.namespace.is_none_or(|ns| key.namespace == ns)
    }

    /// The objects of the query's range, from its first key on, in key order.
    fn range<'m>(
        &self,
        objects: &'m BTreeMap<ObjectKey, Stored>,
        after: Bound<ObjectKey>,
    ) -> impl Iterator<Item = &'m Stored> {
        objects
            .range((after, Bound::Unbounded))
            .take_while(|(k, _)| self.in_namespace(k))
            .map(|(_, s)| s)
    }

    fn matches(&self, stored: &Stored) -> bool {
        self.labels.matches(&stored.labels) && self.fields.matches_stored(stored)
    }
}

/// The page of `objects` the query selects; `index` (the label index of `objects`, if any)
/// narrows the objects looked at when the label selector has an equality term.
pub fn page(
    objects: &BTreeMap<ObjectKey, Stored>,
    index: Option<&LabelIndex>,
    query: &Query<'_>,
) -> Page {
    let first = query.first_key();
    let candidates: Box<dyn Iterator<Item = &Stored>> =
        match index.and_then(|i| i.candidates(query.namespace, query.labels)) {
            Some(keys) => {
                let from = keys.partition_point(|k| **k < first);
                Box::new(keys.into_iter().skip(from).filter_map(|k| objects.get(k)))
            }
            None => Box::new(query.range(objects, Bound::Included(first.clone()))),
        };
    let limit = query.limit.filter(|l| *l > 0);
    let mut items = Vec::new();
    for stored in candidates.filter(|s| query.matches(s)) {
        items.push(stored.clone());
        if limit.is_some_and(|l| items.len() >= l) {
            break;
        }
    }
    let mut page = Page::default();
    if let (Some(limit), Some(last)) = (limit, items.last()) {
        let last_key = (*last.key).clone();
        let after_last = Bound::Excluded(last_key.clone());
        let full = items.len() >= limit;
        if full && query.range(objects, after_last).next().is_some() {
            if query.labels.is_empty() && query.fields.is_empty() {
                let from_first = query.range(objects, Bound::Included(first)).count();
                page.remaining = Some((from_first - limit) as u64);
            }
            page.more_after = Some(last_key);
        }
    }
    page.items = items;
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn objects(specs: &[(&str, &str, Value)]) -> (BTreeMap<ObjectKey, Stored>, LabelIndex) {
        let mut map = BTreeMap::new();
        let mut index = LabelIndex::default();
        for (ns, name, labels) in specs {
            let stored =
                Stored::new(json!({"metadata": {"namespace": ns, "name": name, "labels": labels}}));
            index.add(&stored.key, &stored.labels);
            map.insert((*stored.key).clone(), stored);
        }
        (map, index)
    }

    fn names(page: &Page) -> Vec<String> {
        page.items.iter().map(|s| s.key.relative(true)).collect()
    }

    fn query<'a>(
        namespace: Option<&'a str>,
        labels: &'a LabelSelector,
        fields: &'a FieldSelector,
    ) -> Query<'a> {
        Query {
            namespace,
            labels,
            fields,
            start: None,
            limit: None,
        }
    }

    #[test]
    fn pages_follow_key_order_and_count_what_is_left_without_selectors() {
        let (map, index) = objects(&[
            ("a", "x", json!({})),
            ("a", "y", json!({})),
            ("a", "z", json!({})),
            ("b", "x", json!({})),
        ]);
        let (labels, fields) = (LabelSelector::default(), FieldSelector::default());
        let mut q = query(Some("a"), &labels, &fields);
        q.limit = Some(2);
        let first = page(&map, Some(&index), &q);
        assert_eq!(names(&first), vec!["a/x", "a/y"]);
        assert_eq!(first.remaining, Some(1));
        let after = first.more_after.unwrap();
        let start = ObjectKey::new("a", &format!("{}\u{0}", after.name));
        q.start = Some(&start);
        let second = page(&map, Some(&index), &q);
        assert_eq!(names(&second), vec!["a/z"]);
        assert!(second.more_after.is_none() && second.remaining.is_none());
        let all = page(&map, None, &query(None, &labels, &fields));
        assert_eq!(names(&all), vec!["a/x", "a/y", "a/z", "b/x"]);
    }

    #[test]
    fn a_full_page_with_a_selector_says_more_follow_if_anything_follows() {
        let (map, index) = objects(&[
            ("a", "x", json!({"app": "web"})),
            ("a", "y", json!({"app": "db"})),
        ]);
        let labels = LabelSelector::parse("app=web").unwrap();
        let fields = FieldSelector::default();
        let mut q = query(Some("a"), &labels, &fields);
        q.limit = Some(1);
        let first = page(&map, Some(&index), &q);
        assert_eq!(names(&first), vec!["a/x"]);
        assert_eq!(
            first.more_after.as_ref().map(|k| k.name.as_str()),
            Some("x")
        );
        assert_eq!(first.remaining, None, "not counted with a selector");
        q.limit = Some(2);
        let whole = page(&map, Some(&index), &q);
        assert!(whole.more_after.is_none());
    }
}
