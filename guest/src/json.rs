//! A JSON document as a tree that borrows from its text: the decoder's input (`decode.rs`).
//!
//! Why not `serde_json::Value`: building a `Value` copies every string and inserts every key
//! into a `BTreeMap`; for an admission request that was most of the component's decoding work
//! and the largest single stage of a webhook request (BENCHMARKS.md, "Where the CPU goes").
//! Here a string without escapes is a slice of the text and an object is a list of its
//! entries in document order. The text is read by the same serde_json parser, driven the same
//! way (`deserialize_any` at every level), so what is accepted, the error messages and
//! positions, and the recursion limit are serde_json's; numbers become the same
//! `serde_json::Number`. Objects answer as a `serde_json::Map` would: a repeated key's last
//! value wins, and [`Object::sorted`] gives the entries in key order.
//!
//! One quirk of serde_json is not kept: with its `raw_value` feature (which the workspace
//! enables for the host), a `Value` whose first key is `$serde_json::private::RawValue` is
//! replaced by the JSON its value holds. Here such a key is an ordinary (unknown) key, as it is
//! to Go.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

/// A JSON value whose strings borrow from the text they were parsed from where they can.
#[derive(Clone, Debug, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
}

/// A JSON object: its entries in document order, repeated keys included.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

/// `{}`, for what decodes as an empty object.
pub static EMPTY_OBJECT: Object<'static> = Object(Vec::new());

/// Parses JSON text (serde_json's grammar and errors; trailing characters are an error).
pub fn parse(text: &str) -> Result<Json<'_>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Parse.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

impl<'a> Json<'a> {
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Json::Object(object) => Some(object),
            _ => None,
        }
    }

    /// The word Go uses for this value's JSON type in unmarshal errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "bool",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }
}

impl<'a> Object<'a> {
    /// The value of `key`; of its last occurrence when it is repeated.
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The entries in document order, repeated keys included.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Json<'a>)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    /// The entries in key order, each key once with its last value.
    pub fn sorted(&self) -> BTreeMap<&str, &Json<'a>> {
        self.entries().collect()
    }
}

/// Room for this many entries or items before the first growth. serde_json gives no size
/// hint; a Kubernetes object's maps and lists are mostly this small, and in the component a
/// vector that grows after its children were allocated is copied (the bump allocator only
/// grows the most recent block in place).
const FIRST_CAPACITY: usize = 8;

/// The seed that parses any value; also the `Visitor` of that value.
#[derive(Clone, Copy)]
struct Parse;

impl<'de> DeserializeSeed<'de> for Parse {
    type Value = Json<'de>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Json<'de>, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Parse {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Json<'de>, E> {
        // JSON text has no NaN or infinity; serde_json's `Value` maps them to null too.
        Ok(Number::from_f64(n).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_string())))
    }

    fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(FIRST_CAPACITY));
        while let Some(item) = seq.next_element_seed(Parse)? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(FIRST_CAPACITY));
        while let Some(key) = map.next_key_seed(Key)? {
            entries.push((key, map.next_value_seed(Parse)?));
        }
        Ok(Json::Object(Object(entries)))
    }
}

/// The seed of an object key: borrowed unless it had escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Cow<'de, str>, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(s.to_string()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The tree as a `serde_json::Value`, to compare with serde_json's own parse.
    fn to_value(json: &Json<'_>) -> Value {
        match json {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(to_value).collect()),
            Json::Object(object) => Value::Object(
                object
                    .sorted()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), to_value(v)))
                    .collect(),
            ),
        }
    }

    fn same_as_serde_json(text: &str) {
        let ours = parse(text).map(|j| to_value(&j)).map_err(|e| e.to_string());
        let theirs = serde_json::from_str::<Value>(text).map_err(|e| e.to_string());
        assert_eq!(ours, theirs, "{text:?}");
    }

    #[test]
    fn parses_as_serde_json_does() {
        for text in [
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e\u00e9\n"},"f":-2,"g":1.5e3}"#,
            r#"{"a":1,"a":{"b":2}}"#,
            r#" [1, 18446744073709551615, -9223372036854775808, 1e400] "#,
            r#"{"a":1"#,
            r#"{"a":1}x"#,
            r#"{"a":"\ud800"}"#,
            r#"{"\u0061":1,"a":2}"#,
            "",
            "-0",
            "0.1000000000000000055511151231257827021181583404541015625",
        ] {
            same_as_serde_json(text);
        }
    }

    #[test]
    fn keeps_serde_jsons_recursion_limit() {
        same_as_serde_json(&format!("{}{}", "[".repeat(128), "]".repeat(128)));
        same_as_serde_json(&format!("{}{}", "[".repeat(129), "]".repeat(129)));
        same_as_serde_json(&format!("{}1{}", r#"{"a":"#.repeat(129), "}".repeat(129)));
    }

    #[test]
    fn strings_without_escapes_borrow_from_the_text() {
        let text = r#"{"plain":"abc","escaped":"a\"c"}"#;
        let json = parse(text).unwrap();
        let object = json.as_object().unwrap();
        assert!(matches!(
            object.get("plain"),
            Some(Json::String(Cow::Borrowed("abc")))
        ));
        assert!(matches!(object.get("escaped"), Some(Json::String(Cow::Owned(s))) if s == "a\"c"));
    }

    #[test]
    fn a_repeated_key_answers_its_last_value_and_sorts_once() {
        let json = parse(r#"{"b":1,"a":2,"b":3}"#).unwrap();
        let object = json.as_object().unwrap();
        assert_eq!(object.get("b").and_then(Json::as_i64), Some(3));
        let sorted: Vec<(&str, Option<i64>)> = object
            .sorted()
            .into_iter()
            .map(|(k, v)| (k, v.as_i64()))
            .collect();
        assert_eq!(sorted, vec![("a", Some(2)), ("b", Some(3))]);
    }
}
