use serde_json::json;

use super::*;

fn regarding() -> Value {
    json!({"apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService", "name": "web", "namespace": "rec-11", "uid": "u", "resourceVersion": "1"})
}

#[test]
fn core_events_render_nulls_and_always_present_fields() {
    let body = json!({
        "metadata": {"name": "web.1", "namespace": "rec-11"},
        "involvedObject": regarding(),
        "message": "m", "type": "Warning",
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1,
    });
    let stored = core(&body);
    assert_eq!(
        stored,
        json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": "web.1", "namespace": "rec-11"},
            "involvedObject": regarding(),
            "message": "m", "source": {},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1,
            "type": "Warning", "eventTime": null,
            "reportingComponent": "", "reportingInstance": "",
        })
    );
}

#[test]
fn events_k8s_io_events_round_trip_through_the_core_form() {
    let body = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.2", "namespace": "rec-11"},
        "action": "Reconcile", "reason": "SyncServiceFailed", "note": "n",
        "eventTime": "2026-01-01T00:00:00.000000Z", "regarding": regarding(),
        "reportingController": "mcs-policy", "reportingInstance": "mcs-policy-0", "type": "Warning",
        "series": {"count": 2, "lastObservedTime": "2026-01-01T00:05:00.000000Z"},
    });
    let stored = from_events_v1(&body);
    assert_eq!(stored["message"], "n");
    assert_eq!(stored["involvedObject"], regarding());
    assert_eq!(stored["reportingComponent"], "mcs-policy");
    assert_eq!(stored["firstTimestamp"], Value::Null);
    assert_eq!(stored["source"], json!({}));
    let shown = to_events_v1(&stored);
    let mut expected = body.clone();
    expected["deprecatedSource"] = json!({});
    expected["deprecatedFirstTimestamp"] = Value::Null;
    expected["deprecatedLastTimestamp"] = Value::Null;
    assert_eq!(shown, expected);
}

#[test]
fn core_events_read_through_events_k8s_io_keep_their_deprecated_fields() {
    let stored = core(&json!({
        "metadata": {"name": "web.1", "namespace": "rec-11"},
        "involvedObject": regarding(), "reason": "R", "message": "m", "type": "Warning",
        "source": {"component": "mcs-policy"}, "count": 2,
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:05:00Z",
        "reportingComponent": "mcs-policy",
    }));
    let shown = to_events_v1(&stored);
    assert_eq!(shown["deprecatedCount"], 2);
    assert_eq!(
        shown["deprecatedSource"],
        json!({"component": "mcs-policy"})
    );
    assert_eq!(shown["eventTime"], Value::Null);
    assert_eq!(shown["reportingController"], "mcs-policy");
    assert!(shown.get("reportingInstance").is_none());
    assert!(shown.get("action").is_none());
}
