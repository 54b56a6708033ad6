//! Namespaces: the `NamespaceLifecycle` admission plugin (no creates in a namespace that does
//! not exist or is being deleted), the Namespace defaults (`SetDefaults_Namespace`, the
//! registry's `PrepareForCreate` / `PrepareForUpdate`) and the Namespace registry's DELETE,
//! which only marks the namespace Terminating while `spec.finalizers` is not empty. With no
//! namespace controller (as in an envtest control plane) nothing ever empties it, so a deleted
//! namespace stays Terminating, and so does what is in it.

use serde_json::{Value, json};

use crate::object;
use crate::registry::{GroupResource, ResourceType, Special};
use crate::status::ApiError;
use crate::store::Store;

/// The label every namespace carries with its own name (`v1.LabelMetadataName`).
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The finalizer the namespace controller removes once a namespace is empty.
const KUBERNETES_FINALIZER: &str = "kubernetes";

/// Namespaces that can never be deleted (the plugin's `immortalNamespaces`).
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

fn namespaces() -> GroupResource {
    GroupResource::new("", "namespaces")
}

fn is_namespace(rt: &ResourceType) -> bool {
    rt.special == Special::Namespace
}

/// `SetDefaults_Namespace`: the name label (when the namespace has a name).
pub fn decode_defaults(obj: &mut Value) {
    let name = object::name(obj).to_owned();
    if name.is_empty() {
        return;
    }
    let meta = object::metadata_mut(obj);
    if !meta.get("labels").is_some_and(Value::is_object) {
        meta.insert("labels".into(), json!({}));
    }
    meta["labels"][NAME_LABEL] = json!(name);
}

/// The registry's `PrepareForCreate`: phase Active, the `kubernetes` finalizer in `spec`.
pub fn prepare_create(obj: &mut Value) {
    decode_defaults(obj);
    let finalizers = &mut obj["spec"]["finalizers"];
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    if let Some(list) = finalizers.as_array_mut()
        && !list.iter().any(|f| f == KUBERNETES_FINALIZER)
    {
        list.push(json!(KUBERNETES_FINALIZER));
    }
    obj["status"] = json!({"phase": "Active"});
}

/// The registry's `PrepareForUpdate`: `spec.finalizers` (changed only through `/finalize`) and
/// the status stay as they are.
pub fn prepare_update(old: &Value, new: &mut Value) {
    decode_defaults(new);
    match old["spec"].get("finalizers") {
        Some(finalizers) => new["spec"]["finalizers"] = finalizers.clone(),
        None => {
            if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("finalizers");
            }
        }
    }
    if let Some(status) = old.get("status") {
        new["status"] = status.clone();
    }
}

/// NamespaceLifecycle for a write that creates an object (POST, an apply or a PUT that would
/// create): the namespace must exist (404 on the namespace) and not be terminating (403).
/// `name` is the requested name ("" for a generateName create).
pub fn admit_create(
    store: &Store,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    if !rt.namespaced || namespace.is_empty() || is_namespace(rt) {
        return Ok(());
    }
    let ns = existing(store, namespace)?;
    if ns["status"]["phase"] != "Terminating" {
        return Ok(());
    }
    let why = format!(
        "unable to create new content in namespace {namespace} because it is being terminated"
    );
    let cause = json!({
        "reason": "NamespaceTerminating",
        "message": format!("namespace {namespace} is being terminated"),
        "field": "metadata.namespace",
    });
    Err(ApiError::forbidden(
        &rt.group_resource(),
        name,
        &why,
        vec![cause],
    ))
}

/// NamespaceLifecycle for an update of an existing object: its namespace must still exist.
pub fn admit_update(store: &Store, rt: &ResourceType, namespace: &str) -> Result<(), ApiError> {
    if !rt.namespaced || namespace.is_empty() || is_namespace(rt) {
        return Ok(());
    }
    existing(store, namespace).map(|_| ())
}

/// NamespaceLifecycle for a DELETE: the immortal namespaces are refused (403).
pub fn admit_delete(rt: &ResourceType, name: &str) -> Result<(), ApiError> {
    if is_namespace(rt) && IMMORTAL.contains(&name) {
        return Err(ApiError::forbidden(
            &namespaces(),
            name,
            "this namespace may not be deleted",
            Vec::new(),
        ));
    }
    Ok(())
}

fn existing(store: &Store, namespace: &str) -> Result<std::sync::Arc<Value>, ApiError> {
    store
        .get(&namespaces(), "", namespace)
        .ok_or_else(|| ApiError::not_found(&namespaces(), namespace))
}

/// The Namespace registry's DELETE of `current`: the first one marks it (deletionTimestamp,
/// phase Terminating); later ones leave it as it is while `spec.finalizers` holds it.
/// None when the namespace is to be deleted as any object is.
pub fn terminate(rt: &ResourceType, current: &Value, now: &str) -> Option<Value> {
    if !is_namespace(rt) {
        return None;
    }
    if object::is_deleting(current) {
        return held_by_spec(current).then(|| current.clone());
    }
    let mut marked = current.clone();
    object::metadata_mut(&mut marked).insert("deletionTimestamp".into(), json!(now));
    marked["status"]["phase"] = json!("Terminating");
    Some(marked)
}

/// Whether `spec.finalizers` keeps a namespace marked for deletion from being removed.
pub fn held_by_spec(obj: &Value) -> bool {
    obj["spec"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;
    use crate::registry::Registry;

    const NOW: &str = "2024-01-01T00:00:00Z";

    fn store_with(namespace: Value) -> Store {
        let mut store = Store::new(Registry::with_types(builtin::builtin_types()), 10);
        store.put(&namespaces(), namespace);
        store
    }

    fn rt(plural: &str) -> ResourceType {
        builtin::builtin_types()
            .into_iter()
            .find(|t| t.plural == plural)
            .unwrap()
    }

    #[test]
    fn creates_get_the_label_the_finalizer_and_phase_active() {
        let mut ns = json!({"metadata": {"name": "prod", "labels": {"a": "b"}}});
        prepare_create(&mut ns);
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"a": "b", NAME_LABEL: "prod"})
        );
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["status"], json!({"phase": "Active"}));
    }

    #[test]
    fn updates_keep_spec_finalizers_and_status() {
        let mut old = json!({"metadata": {"name": "prod"}});
        prepare_create(&mut old);
        let mut new = json!({"metadata": {"name": "prod"}, "spec": {"finalizers": []}, "status": {"phase": "x"}});
        prepare_update(&old, &mut new);
        assert_eq!(new["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(new["status"]["phase"], "Active");
        assert_eq!(new["metadata"]["labels"][NAME_LABEL], "prod");
    }

    #[test]
    fn creating_in_a_missing_namespace_is_not_found_on_the_namespace() {
        let store = store_with(json!({"metadata": {"name": "a"}, "status": {"phase": "Active"}}));
        let error = admit_create(&store, &rt("services"), "b", "web").unwrap_err();
        assert_eq!(error.code, 404);
        assert_eq!(error.message, "namespaces \"b\" not found");
        assert!(admit_create(&store, &rt("services"), "a", "web").is_ok());
        assert_eq!(
            admit_update(&store, &rt("services"), "b").unwrap_err().code,
            404
        );
        assert!(admit_create(&store, &rt("namespaces"), "", "b").is_ok());
    }

    #[test]
    fn creating_in_a_terminating_namespace_is_forbidden() {
        let store =
            store_with(json!({"metadata": {"name": "a"}, "status": {"phase": "Terminating"}}));
        let error = admit_create(&store, &rt("endpointslices"), "a", "s").unwrap_err();
        assert_eq!(error.code, 403);
        assert_eq!(
            error.message,
            "endpointslices.discovery.k8s.io \"s\" is forbidden: unable to create new content in namespace a because it is being terminated"
        );
        assert_eq!(
            error.details.unwrap()["causes"][0]["reason"],
            "NamespaceTerminating"
        );
        assert!(admit_update(&store, &rt("endpointslices"), "a").is_ok());
    }

    #[test]
    fn deletion_marks_terminating_and_keeps_the_namespace() {
        let mut ns = json!({"metadata": {"name": "a"}});
        prepare_create(&mut ns);
        let marked = terminate(&rt("namespaces"), &ns, NOW).unwrap();
        assert_eq!(marked["metadata"]["deletionTimestamp"], NOW);
        assert_eq!(marked["status"]["phase"], "Terminating");
        assert!(
            marked["metadata"]
                .get("deletionGracePeriodSeconds")
                .is_none()
        );
        assert_eq!(
            terminate(&rt("namespaces"), &marked, NOW),
            Some(marked.clone())
        );
        assert!(terminate(&rt("services"), &ns, NOW).is_none());
        assert_eq!(
            admit_delete(&rt("namespaces"), "default").unwrap_err().code,
            403
        );
        assert!(admit_delete(&rt("namespaces"), "a").is_ok());
    }
}
