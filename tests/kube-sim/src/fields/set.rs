//! A set of field paths, as structured-merge-diff's `fieldpath.Set` keeps them: a tree whose
//! nodes are path elements, each either a *member* of the set (the field itself is owned) or
//! only a parent of members, or both.
//!
//! Path elements are kept in their FieldsV1 spelling (`f:name`, `k:{"port":80}`, `v:"x"`,
//! `i:0`, see [`super::path`]): two elements are equal exactly when their spellings are, which
//! the canonical spelling of keys and values guarantees. The set operations are those of
//! `fieldpath.Set`: plain leaf-wise `difference` and `intersection`, and `recursive_difference`
//! that also drops everything below a removed member.

use std::collections::{BTreeMap, BTreeSet};

/// One path element in its FieldsV1 spelling.
pub type Element = String;

/// A set of field paths. Children are never empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<Element>,
    children: BTreeMap<Element, FieldSet>,
}

impl FieldSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds the field at `path` (not its parents); the empty path (the whole object) is never
    /// a member.
    pub fn insert(&mut self, path: &[Element]) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut node = self;
        for element in parents {
            node = node.children.entry(element.clone()).or_default();
        }
        node.members.insert(last.clone());
    }

    /// Whether the field at `path` is a member.
    #[cfg(test)]
    pub fn has(&self, path: &[Element]) -> bool {
        let Some((last, parents)) = path.split_last() else {
            return false;
        };
        let mut node = self;
        for element in parents {
            match node.children.get(element) {
                Some(child) => node = child,
                None => return false,
            }
        }
        node.members.contains(last)
    }

    /// Whether `element` (directly below the root of this set) is a member.
    pub fn has_member(&self, element: &str) -> bool {
        self.members.contains(element)
    }

    /// The members below `element`, if any.
    pub fn child(&self, element: &str) -> Option<&FieldSet> {
        self.children.get(element)
    }

    pub fn members(&self) -> impl Iterator<Item = &Element> {
        self.members.iter()
    }

    pub fn children(&self) -> impl Iterator<Item = (&Element, &FieldSet)> {
        self.children.iter()
    }

    /// Adds `element` as a member (used when building sets node by node).
    pub fn insert_member(&mut self, element: Element) {
        self.members.insert(element);
    }

    /// Puts `child` below `element`, merged with what is there (nothing when empty).
    pub fn insert_child(&mut self, element: Element, child: FieldSet) {
        if child.is_empty() {
            return;
        }
        match self.children.get_mut(&element) {
            Some(existing) => *existing = existing.union(&child),
            None => {
                self.children.insert(element, child);
            }
        }
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            out.insert_child(element.clone(), child.clone());
        }
        out
    }

    /// The members of both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let common = child.intersection(other.children.get(element)?);
                (!common.is_empty()).then(|| (element.clone(), common))
            })
            .collect();
        FieldSet { members, children }
    }

    /// The members of `self` that are not members of `other` (leaf by leaf: removing a parent
    /// does not remove its children).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let rest = match other.children.get(element) {
                    Some(removed) => child.difference(removed),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (element.clone(), rest))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Like [`Self::difference`], but a member of `other` also removes everything below it.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(element, _)| !other.members.contains(*element))
            .filter_map(|(element, child)| {
                let rest = match other.children.get(element) {
                    Some(removed) => child.recursive_difference(removed),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (element.clone(), rest))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Every member path, members of a node before those of its children (preorder, as
    /// `fieldpath.Set.Iterate`).
    pub fn paths(&self) -> Vec<Vec<Element>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<Element>, out: &mut Vec<Vec<Element>>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }
}

#[cfg(test)]
pub(crate) fn path(elements: &[&str]) -> Vec<Element> {
    elements.iter().map(|e| (*e).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&[&str]]) -> FieldSet {
        let mut set = FieldSet::new();
        for p in paths {
            set.insert(&path(p));
        }
        set
    }

    #[test]
    fn insert_adds_the_field_but_not_its_parents() {
        let s = set(&[&["f:spec", "f:type"]]);
        assert!(s.has(&path(&["f:spec", "f:type"])));
        assert!(!s.has(&path(&["f:spec"])));
        assert!(!s.is_empty());
        assert!(FieldSet::new().is_empty());
    }

    #[test]
    fn difference_is_leaf_wise_and_drops_emptied_nodes() {
        let a = set(&[&["f:spec"], &["f:spec", "f:type"], &["f:data", "f:k"]]);
        let b = set(&[&["f:spec"], &["f:data", "f:k"]]);
        assert_eq!(a.difference(&b), set(&[&["f:spec", "f:type"]]));
        assert_eq!(a.difference(&a), FieldSet::new());
    }

    #[test]
    fn recursive_difference_removes_whole_subtrees() {
        let a = set(&[&["f:status", "f:phase"], &["f:spec", "f:type"]]);
        let b = set(&[&["f:status"]]);
        assert_eq!(a.recursive_difference(&b), set(&[&["f:spec", "f:type"]]));
        assert_eq!(a.difference(&b), a, "a plain difference keeps the children");
    }

    #[test]
    fn union_and_intersection() {
        let a = set(&[&["f:a"], &["f:m", "f:x"]]);
        let b = set(&[&["f:b"], &["f:m", "f:x"], &["f:m", "f:y"]]);
        let u = a.union(&b);
        assert_eq!(u.paths().len(), 4);
        assert_eq!(a.intersection(&b), set(&[&["f:m", "f:x"]]));
    }

    #[test]
    fn paths_list_members_before_children() {
        let s = set(&[
            &["f:spec", "f:ports", "k:{\"port\":80}"],
            &["f:addressType"],
        ]);
        assert_eq!(
            s.paths(),
            vec![
                path(&["f:addressType"]),
                path(&["f:spec", "f:ports", "k:{\"port\":80}"])
            ]
        );
    }
}
