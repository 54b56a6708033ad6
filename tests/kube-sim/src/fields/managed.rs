//! `metadata.managedFields` as apimachinery's fieldmanager keeps it (`managedfields.go`,
//! `capmanagers.go`): one entry per manager identifier (manager, operation, the apiVersion of
//! Update entries, subresource), decoded from and encoded into the object, entries sorted by
//! operation, time (seconds), manager, apiVersion and subresource.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::fieldsv1;
use super::set::FieldSet;

/// `managedFields[].operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// What tells managers apart (`BuildManagerIdentifier`): an applier is one manager whatever
/// apiVersion it applies with, an updater is one per apiVersion.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManagerId {
    pub manager: String,
    pub operation: Operation,
    /// Empty for appliers.
    pub api_version: String,
    pub subresource: String,
}

impl ManagerId {
    pub fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        let api_version = match operation {
            Operation::Apply => "",
            Operation::Update => api_version,
        };
        Self {
            manager: manager.to_owned(),
            operation,
            api_version: api_version.to_owned(),
            subresource: subresource.to_owned(),
        }
    }

    /// The identifier as the fieldmanager spells it (a JSON `ManagedFieldsEntry`), which is
    /// also how conflicting managers are ordered in messages.
    pub fn spelling(&self) -> String {
        let mut entry = Map::new();
        let mut put = |key: &str, value: &str| {
            if !value.is_empty() {
                entry.insert(key.into(), json!(value));
            }
        };
        put("manager", &self.manager);
        put("operation", self.operation.as_str());
        put("apiVersion", &self.api_version);
        put("subresource", &self.subresource);
        let order = ["manager", "operation", "apiVersion", "subresource"];
        let fields: Vec<String> = order
            .iter()
            .filter_map(|k| Some(format!("{}:{}", json!(k), entry.get(*k)?)))
            .collect();
        format!("{{{}}}", fields.join(","))
    }
}

/// One manager's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub fields: FieldSet,
    pub api_version: String,
    pub time: Option<String>,
}

/// Every manager's fields.
pub type Managed = BTreeMap<ManagerId, Entry>;

/// The managers of a `managedFields` value (absent or null: none), or why it is invalid
/// (`DecodeManagedFields`).
pub fn decode(value: Option<&Value>) -> Result<Managed, String> {
    let mut managed = Managed::new();
    let entries = match value {
        None | Some(Value::Null) => return Ok(managed),
        Some(Value::Array(entries)) => entries,
        Some(_) => return Err("managedFields must be a list".into()),
    };
    for (i, entry) in entries.iter().enumerate() {
        let text = |key: &str| entry[key].as_str().unwrap_or_default();
        let operation = match text("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err("operation must be `Apply` or `Update`".into()),
        };
        if text("apiVersion").is_empty() {
            return Err("apiVersion must not be empty".into());
        }
        match text("fieldsType") {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => {
                return Err(format!(
                    "invalid fieldsType {other:?} in managed fields entry {i}"
                ));
            }
        }
        let fields = match entry.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(fields) => fieldsv1::decode(fields)?,
        };
        let id = ManagerId::new(
            text("manager"),
            operation,
            text("apiVersion"),
            text("subresource"),
        );
        let time = entry["time"].as_str().map(str::to_owned);
        let api_version = text("apiVersion").to_owned();
        managed.insert(
            id,
            Entry {
                fields,
                api_version,
                time,
            },
        );
    }
    Ok(managed)
}

/// Whether a client's `managedFields` asks to reset them: `[]` or `[{}]`
/// (`isResetManagedFields`).
pub fn is_reset(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Array(entries)) => match entries.as_slice() {
            [] => true,
            [only] => only.as_object().is_some_and(Map::is_empty),
            _ => false,
        },
        _ => false,
    }
}

/// The `managedFields` value of `managed`, sorted; `None` when there are no managers.
pub fn encode(managed: &Managed) -> Option<Value> {
    if managed.is_empty() {
        return None;
    }
    let mut entries: Vec<(&ManagerId, &Entry)> = managed.iter().collect();
    entries.sort_by(|(a, ea), (b, eb)| {
        (
            a.operation,
            seconds(&ea.time),
            &a.manager,
            &ea.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                seconds(&eb.time),
                &b.manager,
                &eb.api_version,
                &b.subresource,
            ))
    });
    let encoded = entries
        .into_iter()
        .map(|(id, entry)| {
            let mut out = Map::new();
            if !id.manager.is_empty() {
                out.insert("manager".into(), json!(id.manager));
            }
            out.insert("operation".into(), json!(id.operation.as_str()));
            out.insert("apiVersion".into(), json!(entry.api_version));
            if let Some(time) = &entry.time {
                out.insert("time".into(), json!(time));
            }
            out.insert("fieldsType".into(), json!("FieldsV1"));
            out.insert("fieldsV1".into(), fieldsv1::encode(&entry.fields));
            if !id.subresource.is_empty() {
                out.insert("subresource".into(), json!(id.subresource));
            }
            Value::Object(out)
        })
        .collect();
    Some(Value::Array(encoded))
}

/// An entry time in Unix seconds (none, or unreadable: 0).
fn seconds(time: &Option<String>) -> i64 {
    time.as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(0, |t| t.as_second())
}

/// The most Update managers kept (`DefaultMaxUpdateManagers`); older ones are merged into
/// `ancient-changes` entries, one per apiVersion.
const MAX_UPDATE_MANAGERS: usize = 10;

/// Merges the oldest Update managers into `ancient-changes` until at most ten are left
/// (`capManagersManager.capUpdateManagers`).
pub fn cap_updaters(managed: &mut Managed) {
    let mut updaters: Vec<ManagerId> = managed
        .keys()
        .filter(|id| id.operation == Operation::Update)
        .cloned()
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by_key(|id| (seconds(&managed[id].time), id.spelling()));
    let mut first_of_version: BTreeMap<String, ManagerId> = BTreeMap::new();
    let mut count = updaters.len();
    for id in updaters {
        if count <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managed.get(&id).cloned() else {
            continue;
        };
        let bucket = ManagerId::new("ancient-changes", Operation::Update, &entry.api_version, "");
        let Some(first) = first_of_version.get(&entry.api_version) else {
            first_of_version.insert(entry.api_version.clone(), id);
            continue;
        };
        if !managed.contains_key(&bucket)
            && let Some(moved) = managed.remove(first)
        {
            managed.insert(bucket.clone(), moved);
        }
        managed.remove(&id);
        if let Some(target) = managed.get_mut(&bucket) {
            target.fields = entry.fields.union(&target.fields);
            target.time = entry.time;
        }
        count -= 1;
    }
}

#[cfg(test)]
#[path = "managed_tests.rs"]
mod tests;
