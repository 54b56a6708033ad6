//! Defaulting (docs/defaulting.md): the permanent-id label, as a minimal RFC 6902 patch against the object
//! as sent. Deterministic: the id comes from the old object (UPDATE) or from the request uid.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::decode::{Mcs, decode_mcs};
use crate::{AdmissionRequest, Operation, PatchOp, PatchOperation};

pub const PERMANENT_ID_LABEL: &str = "multiclusterservice.karmada.io/permanent-id";

/// Names the UUIDv5 namespace of permanent ids, so they cannot collide with other v5 ids.
const ID_NAMESPACE_NAME: &[u8] = b"multiclusterservice.karmada.io/permanent-id";

/// The patch for an admission request (WIT `mutate`), or the decode error of a malformed object.
pub fn default_request(request: &AdmissionRequest) -> Result<Vec<PatchOperation>, String> {
    let (uid, old_object) = (&request.uid, request.old_object.as_deref());
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Ok(Vec::new());
    }
    let new = decode_mcs(&request.object)?;
    let old_id = match request.operation {
        Operation::Update => old_object
            .and_then(|o| decode_mcs(o).ok())
            .and_then(|old| current_id(&old).map(str::to_string)),
        _ => None,
    };
    let wanted = old_id
        .or_else(|| current_id(&new).map(str::to_string))
        .unwrap_or_else(|| permanent_id_for(uid));
    Ok(label_patch(&new, &wanted).into_iter().collect())
}

/// The UUID (lower-case 8-4-4-4-12) a CREATE with this request uid gets.
pub fn permanent_id_for(request_uid: &str) -> String {
    let namespace = Uuid::new_v5(&Uuid::NAMESPACE_URL, ID_NAMESPACE_NAME);
    Uuid::new_v5(&namespace, request_uid.as_bytes()).to_string()
}

fn current_id(mcs: &Mcs) -> Option<&str> {
    mcs.meta
        .labels
        .get(PERMANENT_ID_LABEL)
        .map(String::as_str)
        .filter(|id| !id.is_empty())
}

/// The smallest operation that makes the label equal `id`, if it is not already.
fn label_patch(mcs: &Mcs, id: &str) -> Option<PatchOperation> {
    let value = Value::String(id.to_string()).to_string();
    if mcs.meta.absent {
        return Some(PatchOperation {
            op: PatchOp::Add,
            path: "/metadata".to_string(),
            value: json!({ "labels": { PERMANENT_ID_LABEL: id } }).to_string(),
        });
    }
    if mcs.meta.labels_absent {
        return Some(PatchOperation {
            op: PatchOp::Add,
            path: "/metadata/labels".to_string(),
            value: json!({ PERMANENT_ID_LABEL: id }).to_string(),
        });
    }
    let path = format!("/metadata/labels/{}", escape_pointer(PERMANENT_ID_LABEL));
    match mcs.meta.labels.get(PERMANENT_ID_LABEL) {
        Some(current) if current == id => None,
        Some(_) => Some(PatchOperation {
            op: PatchOp::Replace,
            path,
            value,
        }),
        None => Some(PatchOperation {
            op: PatchOp::Add,
            path,
            value,
        }),
    }
}

/// RFC 6901: `~` → `~0`, `/` → `~1`.
fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        operation: Operation,
        _uid: &str,
        object: &str,
        old_object: Option<&str>,
    ) -> Result<Vec<PatchOperation>, String> {
        default_request(&AdmissionRequest {
            uid: UID.to_string(),
            operation,
            object: object.to_string(),
            old_object: old_object.map(str::to_string),
        })
    }

    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

    fn obj(meta: &str) -> String {
        format!(
            r#"{{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService"{meta}}}"#
        )
    }

    fn is_uuid(s: &str) -> bool {
        let parts: Vec<&str> = s.split('-').collect();
        parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
            && s.chars()
                .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
    }

    #[test]
    fn derives_a_stable_lowercase_uuid_from_the_request_uid() {
        let a = permanent_id_for(UID);
        assert!(is_uuid(&a), "{a}");
        assert_eq!(a, permanent_id_for(UID));
        assert_ne!(a, permanent_id_for("another-uid"));
    }

    #[test]
    fn creates_the_labels_map_when_absent() {
        let ops = run(
            Operation::Create,
            UID,
            &obj(r#","metadata":{"name":"a"}"#),
            None,
        )
        .unwrap();
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].op, PatchOp::Add);
        assert_eq!(ops[0].path, "/metadata/labels");
        let v: Value = serde_json::from_str(&ops[0].value).unwrap();
        assert_eq!(v[PERMANENT_ID_LABEL], permanent_id_for(UID));
    }

    #[test]
    fn adds_the_label_with_an_escaped_key_when_labels_exist() {
        let ops = run(
            Operation::Create,
            UID,
            &obj(r#","metadata":{"labels":{"app":"x"}}"#),
            None,
        )
        .unwrap();
        assert_eq!(
            ops,
            vec![PatchOperation {
                op: PatchOp::Add,
                path: "/metadata/labels/multiclusterservice.karmada.io~1permanent-id".into(),
                value: format!("\"{}\"", permanent_id_for(UID)),
            }]
        );
    }

    #[test]
    fn replaces_an_empty_id_and_keeps_a_set_one() {
        let empty = obj(&format!(
            r#","metadata":{{"labels":{{"{PERMANENT_ID_LABEL}":""}}}}"#
        ));
        let ops = run(Operation::Create, UID, &empty, None).unwrap();
        assert_eq!(ops[0].op, PatchOp::Replace);
        let set = obj(&format!(
            r#","metadata":{{"labels":{{"{PERMANENT_ID_LABEL}":"keep"}}}}"#
        ));
        assert!(run(Operation::Create, UID, &set, None).unwrap().is_empty());
    }

    #[test]
    fn restores_the_old_id_on_update() {
        let old = obj(&format!(
            r#","metadata":{{"labels":{{"{PERMANENT_ID_LABEL}":"old-id"}}}}"#
        ));
        let cleared = obj(r#","metadata":{"labels":{}}"#);
        let ops = run(Operation::Update, UID, &cleared, Some(&old)).unwrap();
        assert_eq!(ops[0].value, "\"old-id\"");
        let changed = obj(&format!(
            r#","metadata":{{"labels":{{"{PERMANENT_ID_LABEL}":"new-id"}}}}"#
        ));
        let ops = run(Operation::Update, UID, &changed, Some(&old)).unwrap();
        assert_eq!(ops[0].op, PatchOp::Replace);
        assert_eq!(ops[0].value, "\"old-id\"");
    }

    #[test]
    fn creates_metadata_when_the_object_has_none() {
        let ops = run(Operation::Create, UID, &obj(""), None).unwrap();
        assert_eq!(ops[0].path, "/metadata");
    }

    #[test]
    fn malformed_objects_are_errors_and_other_operations_pass() {
        assert!(
            run(
                Operation::Create,
                UID,
                r#"{"kind":"Service","apiVersion":"v1"}"#,
                None
            )
            .is_err()
        );
        assert!(run(Operation::Delete, UID, "", None).unwrap().is_empty());
    }
}
