//! `meta.k8s.io/v1` Table responses (Name and Age columns), which kubectl asks for with
//! `Accept: application/json;as=Table;...` to print `kubectl get` output.

use std::sync::Arc;

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use super::params::Params;

/// Whether the client asked for a Table.
pub fn wanted(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok());
    accept
        .flat_map(|v| v.split(','))
        .any(|media| media.split(';').any(|p| p.trim() == "as=Table"))
}

/// A Table of `objects`; `with_columns` false omits the column definitions (later watch events).
pub fn table(
    objects: &[Arc<Value>],
    resource_version: Option<u64>,
    with_columns: bool,
    params: &Params,
) -> Value {
    let columns = if with_columns {
        column_definitions()
    } else {
        json!([])
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| row(o, params.get("includeObject")))
        .collect();
    let metadata = resource_version.map_or_else(
        || json!({}),
        |rv| json!({"resourceVersion": rv.to_string()}),
    );
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "columnDefinitions": columns, "rows": rows})
}

fn column_definitions() -> Value {
    json!([
        {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0},
        {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0},
    ])
}

fn row(obj: &Value, include: Option<&str>) -> Value {
    let created = obj["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let age = created.map_or_else(
        || "<unknown>".to_owned(),
        |t| human_age(jiff::Timestamp::now().duration_since(t).as_secs()),
    );
    let cells = json!([obj["metadata"]["name"], age]);
    match include {
        Some("None") => json!({"cells": cells}),
        Some("Object") => json!({"cells": cells, "object": obj}),
        _ => json!({
            "cells": cells,
            "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]},
        }),
    }
}

/// An age as kubectl shows it (`45s`, `3m20s`, `2h5m`, `3d`).
fn human_age(seconds: i64) -> String {
    let (minutes, hours) = (seconds / 60, seconds / 3600);
    match seconds {
        ..0 => "0s".to_owned(),
        0..120 => format!("{seconds}s"),
        _ if minutes < 10 && seconds % 60 != 0 => format!("{minutes}m{}s", seconds % 60),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 && minutes % 60 != 0 => format!("{hours}h{}m", minutes % 60),
        _ if hours < 48 => format!("{hours}h"),
        _ => format!("{}d", hours / 24),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn kubectl_accept_header_asks_for_a_table() {
        let mut headers = HeaderMap::new();
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        headers.insert(header::ACCEPT, HeaderValue::from_static(accept));
        assert!(wanted(&headers));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(!wanted(&headers));
    }

    #[test]
    fn ages_read_like_kubectl_ages() {
        assert_eq!(human_age(-3), "0s");
        assert_eq!(human_age(45), "45s");
        assert_eq!(human_age(200), "3m20s");
        assert_eq!(human_age(600), "10m");
        assert_eq!(human_age(2 * 3600 + 300), "125m");
        assert_eq!(human_age(5 * 3600 + 300), "5h5m");
        assert_eq!(human_age(30 * 3600), "30h");
        assert_eq!(human_age(80 * 3600), "3d");
    }

    #[test]
    fn rows_carry_partial_metadata_by_default() {
        let obj = Arc::new(
            json!({"metadata": {"name": "web", "creationTimestamp": "2024-01-01T00:00:00Z"}}),
        );
        let table = table(&[obj], Some(3), true, &Params::default());
        assert_eq!(table["rows"][0]["cells"][0], "web");
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(table["metadata"]["resourceVersion"], "3");
    }
}
