//! The webhook configurations of a self-managed server. The chart (or the manifests) creates
//! and deletes them; the server only reads what they trust and patches the `caBundle` of their
//! webhooks, with a JSON patch that names nothing else, so it owns no other field and never
//! brings back a configuration that an upgrade or an uninstall removed. And
//! `mcs-policy unregister`, which deletes configurations that carry our label.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Api, DeleteParams, Preconditions};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::manifests::MANAGED_BY;

/// The field manager of our `caBundle` patches.
pub const FIELD_MANAGER: &str = "mcs-policy";

#[derive(Debug, thiserror::Error)]
pub enum ConfigurationError {
    #[error("{verb} {kind} {name:?} failed: {source}")]
    Api {
        verb: &'static str,
        kind: &'static str,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("{kind} {name:?} does not decode: {source}")]
    Decode {
        kind: &'static str,
        name: String,
        source: serde_json::Error,
    },
}

/// What [`patch_ca_bundle`] did to one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Patched {
    /// Every webhook already had the `caBundle`.
    Unchanged,
    /// The `caBundle` of at least one webhook was set.
    Patched,
    /// There is no such configuration: nothing to patch (the chart or the manifests create it;
    /// this server never does).
    Missing,
    /// It changed between our read and our patch (its resourceVersion test failed).
    Changed,
}

/// Both configurations named `name` as the API server has them (`None`: not there), the
/// validating one first.
pub async fn read(client: &Client, name: &str) -> Result<[Option<Value>; 2], ConfigurationError> {
    Ok([
        get::<ValidatingWebhookConfiguration>(client, name).await?,
        get::<MutatingWebhookConfiguration>(client, name).await?,
    ])
}

/// Sets `caBundle` to `ca_pem` in every webhook of both configurations `read` returned, and
/// nothing else: one JSON patch per configuration that tests its resourceVersion (so a
/// configuration changed meanwhile is left for the next round) and replaces only
/// `webhooks[i].clientConfig.caBundle` where it differs. A missing configuration is left
/// missing.
pub async fn patch_ca_bundle(
    client: &Client,
    read: &[Option<Value>; 2],
    ca_pem: &[u8],
) -> Result<[Patched; 2], ConfigurationError> {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    Ok([
        patch_one::<ValidatingWebhookConfiguration>(client, read[0].as_ref(), &ca).await?,
        patch_one::<MutatingWebhookConfiguration>(client, read[1].as_ref(), &ca).await?,
    ])
}

/// The JSON patch that gives every webhook of `configuration` the base64 `caBundle` `ca`; `None`
/// when every one has it already.
fn ca_bundle_patch(configuration: &Value, ca: &str) -> Option<Value> {
    let webhooks = configuration["webhooks"].as_array()?;
    let mut operations = vec![json!({
        "op": "test",
        "path": "/metadata/resourceVersion",
        "value": configuration["metadata"]["resourceVersion"],
    })];
    for (i, webhook) in webhooks.iter().enumerate() {
        if webhook
            .pointer("/clientConfig/caBundle")
            .and_then(Value::as_str)
            == Some(ca)
        {
            continue;
        }
        // Whose caBundle: the webhook at i must still be the one read.
        operations.push(json!({
            "op": "test",
            "path": format!("/webhooks/{i}/name"),
            "value": webhook["name"],
        }));
        let op = if webhook.get("clientConfig").is_some() {
            json!({"op": "add", "path": format!("/webhooks/{i}/clientConfig/caBundle"), "value": ca})
        } else {
            json!({"op": "add", "path": format!("/webhooks/{i}/clientConfig"), "value": {"caBundle": ca}})
        };
        operations.push(op);
    }
    (operations.len() > 1).then_some(Value::Array(operations))
}

/// The CAs (DER) both configurations trust today: those in the `caBundle` of every webhook of
/// each (the validating one has two, the MultiClusterService's and the ServiceExport's); empty
/// when either configuration is missing.
pub fn trusted(read: &[Option<Value>; 2]) -> Vec<Vec<u8>> {
    trusted_by_every_webhook(read)
}

/// The DER CAs that every webhook of every one of `configurations` trusts; empty when one is
/// missing or has no webhook.
fn trusted_by_every_webhook(configurations: &[Option<Value>]) -> Vec<Vec<u8>> {
    let bundle = |webhook: &Value| -> Vec<Vec<u8>> {
        let pem = webhook
            .pointer("/clientConfig/caBundle")
            .and_then(Value::as_str)
            .and_then(|b64| {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.decode(b64).ok()
            })
            .unwrap_or_default();
        super::material::trusted_ders(&String::from_utf8_lossy(&pem))
    };
    let mut trusted: Option<Vec<Vec<u8>>> = None;
    for configuration in configurations {
        let webhooks = configuration
            .as_ref()
            .and_then(|c| c["webhooks"].as_array())
            .filter(|w| !w.is_empty());
        let Some(webhooks) = webhooks else {
            return Vec::new();
        };
        for webhook in webhooks {
            let these = bundle(webhook);
            trusted = Some(match trusted {
                None => these,
                Some(so_far) => so_far
                    .into_iter()
                    .filter(|der| these.contains(der))
                    .collect(),
            });
        }
    }
    trusted.unwrap_or_default()
}

/// What `unregister` did with one configuration.
#[derive(Debug, PartialEq, Eq)]
pub enum Removed {
    Deleted,
    Absent,
    /// It exists but does not carry our label: left alone.
    NotOurs,
}

/// Deletes both configurations named `name` that carry our label, each with its uid and
/// resourceVersion as preconditions (a configuration replaced meanwhile is not deleted).
pub async fn unregister(
    client: &Client,
    name: &str,
) -> Result<[(&'static str, Removed); 2], ConfigurationError> {
    Ok([
        (
            "ValidatingWebhookConfiguration",
            remove::<ValidatingWebhookConfiguration>(client, name).await?,
        ),
        (
            "MutatingWebhookConfiguration",
            remove::<MutatingWebhookConfiguration>(client, name).await?,
        ),
    ])
}

trait Kind: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope> {
    const KIND: &'static str;
}
impl Kind for ValidatingWebhookConfiguration {
    const KIND: &'static str = "ValidatingWebhookConfiguration";
}
impl Kind for MutatingWebhookConfiguration {
    const KIND: &'static str = "MutatingWebhookConfiguration";
}

fn api_error(
    verb: &'static str,
    kind: &'static str,
    name: &str,
) -> impl FnOnce(kube::Error) -> ConfigurationError {
    let name = name.to_string();
    move |source| ConfigurationError::Api {
        verb,
        kind,
        name,
        source: Box::new(source),
    }
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}

async fn get<K>(client: &Client, name: &str) -> Result<Option<Value>, ConfigurationError>
where
    K: Kind + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    match api.get(name).await {
        Ok(object) => Ok(Some(serde_json::to_value(object).map_err(|source| {
            ConfigurationError::Decode {
                kind: K::KIND,
                name: name.to_string(),
                source,
            }
        })?)),
        Err(err) if is_not_found(&err) => Ok(None),
        Err(err) => Err(api_error("reading", K::KIND, name)(err)),
    }
}

async fn patch_one<K>(
    client: &Client,
    existing: Option<&Value>,
    ca: &str,
) -> Result<Patched, ConfigurationError>
where
    K: Kind + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let Some(existing) = existing else {
        return Ok(Patched::Missing);
    };
    let Some(patch) = ca_bundle_patch(existing, ca) else {
        return Ok(Patched::Unchanged);
    };
    let name = existing["metadata"]["name"].as_str().unwrap_or_default();
    // A plain request: kube's typed JSON patch is behind a feature the workspace does not build.
    let request = hyper::Request::builder()
        .method(hyper::Method::PATCH)
        .uri(format!(
            "{}/{name}?fieldManager={FIELD_MANAGER}",
            K::url_path(&(), None)
        ))
        .header(hyper::header::CONTENT_TYPE, "application/json-patch+json")
        .body(patch.to_string().into_bytes())
        .expect("a valid request");
    match client.request::<Value>(request).await {
        Ok(_) => Ok(Patched::Patched),
        // Gone, or changed since it was read (a failed test is a 422; a conflict a 409).
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Patched::Missing),
        Err(kube::Error::Api(status)) if matches!(status.code, 409 | 422) => Ok(Patched::Changed),
        Err(err) => Err(api_error("patching the caBundle of", K::KIND, name)(err)),
    }
}

async fn remove<K>(client: &Client, name: &str) -> Result<Removed, ConfigurationError>
where
    K: Kind + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let Some(existing) = get::<K>(client, name).await? else {
        return Ok(Removed::Absent);
    };
    if existing.pointer(&format!(
        "/metadata/labels/{}",
        MANAGED_BY.0.replace('/', "~1")
    )) != Some(&Value::from(MANAGED_BY.1))
    {
        return Ok(Removed::NotOurs);
    }
    let text = |pointer: &str| {
        existing
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(String::from)
    };
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: text("/metadata/uid"),
            resource_version: text("/metadata/resourceVersion"),
        }),
        ..DeleteParams::default()
    };
    let api: Api<K> = Api::all(client.clone());
    match api.delete(name, &params).await {
        Ok(_) => Ok(Removed::Deleted),
        Err(err) if is_not_found(&err) => Ok(Removed::Absent),
        Err(err) => Err(api_error("deleting", K::KIND, name)(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_patch_tests_the_version_and_names_only_the_ca_bundles_that_differ() {
        let configuration = json!({
            "metadata": {"name": "mcs-policy", "resourceVersion": "7"},
            "webhooks": [
                {"name": "a", "clientConfig": {"service": {"name": "s"}, "caBundle": "Q0E="}},
                {"name": "b", "clientConfig": {"url": "https://x"}},
                {"name": "c"},
            ],
        });
        assert_eq!(
            ca_bundle_patch(&configuration, "Q0E="),
            Some(json!([
                {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                {"op": "test", "path": "/webhooks/1/name", "value": "b"},
                {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "Q0E="},
                {"op": "test", "path": "/webhooks/2/name", "value": "c"},
                {"op": "add", "path": "/webhooks/2/clientConfig", "value": {"caBundle": "Q0E="}},
            ]))
        );
        let mut patched = configuration.clone();
        patched["webhooks"][1]["clientConfig"]["caBundle"] = json!("Q0E=");
        patched["webhooks"][2]["clientConfig"] = json!({"caBundle": "Q0E="});
        assert_eq!(
            ca_bundle_patch(&patched, "Q0E="),
            None,
            "nothing left to patch"
        );
        assert_eq!(ca_bundle_patch(&json!({"metadata": {}}), "Q0E="), None);
    }

    #[test]
    fn a_ca_is_trusted_only_when_every_webhook_of_both_configurations_trusts_it() {
        use base64::Engine as _;
        let pem = |names: &[&str]| -> (String, Vec<Vec<u8>>) {
            let mut text = String::new();
            let mut ders = Vec::new();
            for name in names {
                let cert = rcgen::generate_simple_self_signed(vec![name.to_string()])
                    .unwrap()
                    .cert;
                text.push_str(&cert.pem());
                ders.push(cert.der().to_vec());
            }
            (text, ders)
        };
        let (both, ders) = pem(&["old", "new"]);
        let only_old = {
            let mut text = String::new();
            text.push_str(
                both.split_inclusive("-----END CERTIFICATE-----\n")
                    .next()
                    .unwrap(),
            );
            text
        };
        let config = |bundles: &[&str]| -> Option<Value> {
            let webhooks: Vec<Value> = bundles
                .iter()
                .map(|b| {
                    json!({"clientConfig": {
                        "caBundle": base64::engine::general_purpose::STANDARD.encode(b)}})
                })
                .collect();
            Some(json!({ "webhooks": webhooks }))
        };
        assert_eq!(
            trusted_by_every_webhook(&[config(&[&both, &both]), config(&[&both])]),
            ders
        );
        // The ServiceExport webhook still on the old CA alone: only that one is trusted.
        assert_eq!(
            trusted_by_every_webhook(&[config(&[&both, &only_old]), config(&[&both])]),
            ders[..1].to_vec()
        );
        assert!(trusted_by_every_webhook(&[None, config(&[&both])]).is_empty());
        assert!(trusted_by_every_webhook(&[config(&[]), config(&[&both])]).is_empty());
    }
}
