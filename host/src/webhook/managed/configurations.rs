//! The webhook configurations a self-managed server keeps: created when missing, replaced (with
//! their resourceVersion, so a concurrent writer gets a 409 instead of being overwritten) when
//! what we set differs; and `mcs-policy unregister`, which deletes them.
//!
//! "What we set differs" compares only the fields our configuration names: the API server
//! fills in defaults (`matchPolicy`, selectors, ...) that we neither send nor fight over.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::manifests::{self, Endpoint, MANAGED_BY};

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

/// What one apply did to one configuration.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    Unchanged,
    Created,
    Updated,
    /// Missing, and left missing (`create` was false).
    Absent,
}

/// Makes both configurations say what [`manifests::configurations`] says for `ca_pem`. A
/// missing configuration is created only when `create` is true: a server creates them when it
/// starts, and afterwards only keeps them current, so that `mcs-policy unregister` (uninstall)
/// deleting them while the server is still running is not undone.
pub async fn apply(
    client: &Client,
    name: &str,
    endpoint: &Endpoint,
    ca_pem: &[u8],
    create: bool,
) -> Result<[Applied; 2], ConfigurationError> {
    let [validating, mutating] = manifests::configurations(name, endpoint, ca_pem);
    Ok([
        apply_one::<ValidatingWebhookConfiguration>(client, validating, create).await?,
        apply_one::<MutatingWebhookConfiguration>(client, mutating, create).await?,
    ])
}

/// The PEM CAs both configurations trust today, as DER: those in the `caBundle` of every
/// webhook of each (the validating one has two, the MultiClusterService's and the
/// ServiceExport's); empty when either configuration is missing.
pub async fn trusted(client: &Client, name: &str) -> Result<Vec<Vec<u8>>, ConfigurationError> {
    let validating = get::<ValidatingWebhookConfiguration>(client, name).await?;
    let mutating = get::<MutatingWebhookConfiguration>(client, name).await?;
    Ok(trusted_by_every_webhook(&[validating, mutating]))
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

async fn apply_one<K>(
    client: &Client,
    desired: Value,
    create: bool,
) -> Result<Applied, ConfigurationError>
where
    K: Kind + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let name = desired["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let decode = |value: Value| {
        serde_json::from_value::<K>(value).map_err(|source| ConfigurationError::Decode {
            kind: K::KIND,
            name: name.clone(),
            source,
        })
    };
    let api: Api<K> = Api::all(client.clone());
    let Some(existing) = get::<K>(client, &name).await? else {
        if !create {
            return Ok(Applied::Absent);
        }
        api.create(&PostParams::default(), &decode(desired)?)
            .await
            .map_err(api_error("creating", K::KIND, &name))?;
        return Ok(Applied::Created);
    };
    if contains(&existing, &desired) {
        return Ok(Applied::Unchanged);
    }
    let mut replacement = desired.clone();
    replacement["metadata"] = existing["metadata"].clone();
    if let Some(labels) = desired["metadata"]["labels"].as_object() {
        for (key, value) in labels {
            replacement["metadata"]["labels"][key] = value.clone();
        }
    }
    api.replace(&name, &PostParams::default(), &decode(replacement)?)
        .await
        .map_err(api_error("updating", K::KIND, &name))?;
    Ok(Applied::Updated)
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

/// Whether `have` holds everything `want` names, with the same values: objects key by key,
/// arrays element by element (same length).
fn contains(have: &Value, want: &Value) -> bool {
    match (have, want) {
        (Value::Object(have), Value::Object(want)) => want
            .iter()
            .all(|(key, value)| have.get(key).is_some_and(|h| contains(h, value))),
        (Value::Array(have), Value::Array(want)) => {
            have.len() == want.len() && have.iter().zip(want).all(|(h, w)| contains(h, w))
        }
        (have, want) => have == want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_the_server_adds_do_not_count_as_a_difference() {
        let want = json!({"webhooks": [{"name": "a", "rules": [{"scope": "Namespaced"}]}]});
        let have = json!({"webhooks": [{"name": "a", "matchPolicy": "Equivalent",
            "rules": [{"scope": "Namespaced", "x": 1}]}], "metadata": {"uid": "u"}});
        assert!(contains(&have, &want));
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

    #[test]
    fn a_changed_value_or_an_extra_webhook_counts() {
        let want = json!({"webhooks": [{"name": "a", "timeoutSeconds": 3}]});
        assert!(!contains(
            &json!({"webhooks": [{"name": "a", "timeoutSeconds": 10}]}),
            &want
        ));
        assert!(!contains(
            &json!({"webhooks": [{"name": "a", "timeoutSeconds": 3}, {"name": "b"}]}),
            &want
        ));
        assert!(!contains(&json!({}), &want));
    }
}
