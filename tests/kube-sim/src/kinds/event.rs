//! Events: core/v1 `events` and `events.k8s.io/v1` `events` are one storage (the apiserver
//! stores both as core Events and converts between the two APIs), so kube-sim stores core/v1
//! Events and converts `events.k8s.io/v1` ones on the way in and out, with the field mappings
//! of `k8s.io/kubernetes/pkg/apis/events/v1` conversion: note↔message,
//! regarding↔involvedObject, reportingController↔reportingComponent,
//! deprecatedSource↔source, deprecatedFirstTimestamp↔firstTimestamp,
//! deprecatedLastTimestamp↔lastTimestamp, deprecatedCount↔count.
//!
//! Both forms are rendered as Go's `encoding/json` renders the v1 structs: times as `null`
//! when unset, struct fields (`source`, `regarding`) always present, empty strings and zero
//! counts omitted where the field is `omitempty`, `reportingComponent`/`reportingInstance`
//! always present in core/v1. Unknown fields are dropped with an `unknown field` warning.

use serde_json::{Map, Value, json};

use super::go_time;
use crate::registry::GroupResource;
use crate::warning;

pub const GROUP: &str = "events.k8s.io";

/// Whether `group`/`resource` is one of the two Event APIs.
pub fn is_event(group: &str, resource: &str) -> bool {
    resource == "events" && (group.is_empty() || group == GROUP)
}

/// Where Events of either API are stored: core `events`.
pub fn storage_resource() -> GroupResource {
    GroupResource::new("", "events")
}

const OBJECT_REFERENCE: [&str; 7] = [
    "kind",
    "namespace",
    "name",
    "uid",
    "apiVersion",
    "resourceVersion",
    "fieldPath",
];

/// A core/v1 Event as the apiserver stores and returns it (`obj` is a core/v1 Event body).
pub fn core(obj: &Value) -> Value {
    warn_unknown(obj, &CORE_FIELDS);
    let mut out = Map::new();
    out.insert("kind".into(), json!("Event"));
    out.insert("apiVersion".into(), json!("v1"));
    out.insert("metadata".into(), obj["metadata"].clone());
    out.insert("involvedObject".into(), reference(&obj["involvedObject"]));
    string_if_set(&mut out, "reason", &obj["reason"]);
    string_if_set(&mut out, "message", &obj["message"]);
    out.insert("source".into(), source(&obj["source"]));
    out.insert(
        "firstTimestamp".into(),
        go_time::time(&obj["firstTimestamp"]),
    );
    out.insert("lastTimestamp".into(), go_time::time(&obj["lastTimestamp"]));
    count_if_set(&mut out, "count", &obj["count"]);
    string_if_set(&mut out, "type", &obj["type"]);
    out.insert("eventTime".into(), go_time::micro_time(&obj["eventTime"]));
    if let Some(series) = series(&obj["series"], true) {
        out.insert("series".into(), series);
    }
    string_if_set(&mut out, "action", &obj["action"]);
    if obj["related"].is_object() {
        out.insert("related".into(), reference(&obj["related"]));
    }
    out.insert(
        "reportingComponent".into(),
        string(&obj["reportingComponent"]),
    );
    out.insert(
        "reportingInstance".into(),
        string(&obj["reportingInstance"]),
    );
    Value::Object(out)
}

/// The core/v1 Event an `events.k8s.io/v1` Event body stands for.
pub fn from_events_v1(obj: &Value) -> Value {
    warn_unknown(obj, &EVENTS_V1_FIELDS);
    let renamed = json!({
        "metadata": obj["metadata"],
        "involvedObject": obj["regarding"],
        "reason": obj["reason"],
        "message": obj["note"],
        "source": obj["deprecatedSource"],
        "firstTimestamp": obj["deprecatedFirstTimestamp"],
        "lastTimestamp": obj["deprecatedLastTimestamp"],
        "count": obj["deprecatedCount"],
        "type": obj["type"],
        "eventTime": obj["eventTime"],
        "series": obj["series"],
        "action": obj["action"],
        "related": obj["related"],
        "reportingComponent": obj["reportingController"],
        "reportingInstance": obj["reportingInstance"],
    });
    core(&renamed)
}

/// A stored (core/v1) Event as `events.k8s.io/v1` returns it.
pub fn to_events_v1(stored: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("Event"));
    out.insert("apiVersion".into(), json!(format!("{GROUP}/v1")));
    out.insert("metadata".into(), stored["metadata"].clone());
    out.insert(
        "eventTime".into(),
        go_time::micro_time(&stored["eventTime"]),
    );
    if let Some(series) = series(&stored["series"], false) {
        out.insert("series".into(), series);
    }
    string_if_set(
        &mut out,
        "reportingController",
        &stored["reportingComponent"],
    );
    string_if_set(&mut out, "reportingInstance", &stored["reportingInstance"]);
    string_if_set(&mut out, "action", &stored["action"]);
    string_if_set(&mut out, "reason", &stored["reason"]);
    out.insert("regarding".into(), reference(&stored["involvedObject"]));
    if stored["related"].is_object() {
        out.insert("related".into(), reference(&stored["related"]));
    }
    string_if_set(&mut out, "note", &stored["message"]);
    string_if_set(&mut out, "type", &stored["type"]);
    out.insert("deprecatedSource".into(), source(&stored["source"]));
    out.insert(
        "deprecatedFirstTimestamp".into(),
        go_time::time(&stored["firstTimestamp"]),
    );
    out.insert(
        "deprecatedLastTimestamp".into(),
        go_time::time(&stored["lastTimestamp"]),
    );
    count_if_set(&mut out, "deprecatedCount", &stored["count"]);
    Value::Object(out)
}

const CORE_FIELDS: [&str; 17] = [
    "kind",
    "apiVersion",
    "metadata",
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "series",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
];

const EVENTS_V1_FIELDS: [&str; 17] = [
    "kind",
    "apiVersion",
    "metadata",
    "eventTime",
    "series",
    "reportingController",
    "reportingInstance",
    "action",
    "reason",
    "regarding",
    "related",
    "note",
    "type",
    "deprecatedSource",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
    "deprecatedCount",
];

fn warn_unknown(obj: &Value, known: &[&str]) {
    let Some(map) = obj.as_object() else {
        return;
    };
    for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
        warning::add(format!("unknown field {key:?}"));
    }
}

/// An `ObjectReference` (known fields, empty ones omitted).
fn reference(value: &Value) -> Value {
    let mut out = Map::new();
    for key in OBJECT_REFERENCE {
        string_if_set(&mut out, key, &value[key]);
    }
    Value::Object(out)
}

/// An `EventSource`: always an object.
fn source(value: &Value) -> Value {
    let mut out = Map::new();
    string_if_set(&mut out, "component", &value["component"]);
    string_if_set(&mut out, "host", &value["host"]);
    Value::Object(out)
}

/// An `EventSeries` (core: count omitted when zero; events.k8s.io: always).
fn series(value: &Value, core: bool) -> Option<Value> {
    if !value.is_object() {
        return None;
    }
    let mut out = Map::new();
    if core {
        count_if_set(&mut out, "count", &value["count"]);
    } else {
        out.insert("count".into(), json!(value["count"].as_i64().unwrap_or(0)));
    }
    out.insert(
        "lastObservedTime".into(),
        go_time::micro_time(&value["lastObservedTime"]),
    );
    Some(Value::Object(out))
}

fn string(value: &Value) -> Value {
    json!(value.as_str().unwrap_or_default())
}

fn string_if_set(out: &mut Map<String, Value>, key: &str, value: &Value) {
    if let Some(s) = value.as_str().filter(|s| !s.is_empty()) {
        out.insert(key.into(), json!(s));
    }
}

fn count_if_set(out: &mut Map<String, Value>, key: &str, value: &Value) {
    if let Some(n) = value.as_i64().filter(|n| *n != 0) {
        out.insert(key.into(), json!(n));
    }
}

#[cfg(test)]
mod tests;
