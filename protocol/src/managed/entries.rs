//! `metadata.managedFields` entries: decoding and validating them, kube's manager
//! identity, the order kube writes them in, and the cap on `Update` entries.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde_json::{Map, Value};

use super::fieldset::FieldSet;
use super::path::go_json_string;
use crate::names::go_quote;

/// kube's `DefaultMaxUpdateManagers`: past this many `Update` entries the oldest are merged
/// into one `ancient-changes` entry per API version, so managedFields cannot grow without
/// bound on objects written by many clients.
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager the oldest `Update` entries are merged into once there are too many.
pub const ANCIENT_CHANGES_MANAGER: &str = "ancient-changes";

/// kube's `FieldManagerMaxLength`: the longest manager name, in bytes.
pub const MANAGER_MAX_BYTES: usize = 128;

/// kube's `MaxSubresourceNameLength`, in bytes.
pub const SUBRESOURCE_MAX_BYTES: usize = 256;

/// How the fields of an entry were last written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OperationType {
    /// Server-side apply (`PATCH` with `application/apply-patch+yaml`).
    Apply,
    /// Any other write: create, update, or a non-apply patch.
    Update,
}

impl OperationType {
    /// The wire name: `Apply` or `Update`.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationType::Apply => "Apply",
            OperationType::Update => "Update",
        }
    }
}

/// One `metadata.managedFields` entry, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedFieldsEntry {
    /// The field manager's name (`kubectl`, `kube-controller-manager`, …).
    pub manager: String,
    /// Whether the fields were applied or updated.
    pub operation: OperationType,
    /// The API version the fields are expressed in (`v1`, `apps/v1`).
    pub api_version: String,
    /// When the entry last gained fields (RFC 3339), if ever recorded.
    pub time: Option<String>,
    /// The subresource written through (`status`), empty for the main resource.
    pub subresource: String,
    /// The fields the manager owns.
    pub fields: FieldSet,
}

impl ManagedFieldsEntry {
    /// kube's manager identifier (`BuildManagerIdentifier`): the entry's JSON without fields,
    /// time and fields type, and without the API version for appliers, so an applier is one
    /// manager whatever version it applies in, while updaters are one per version.
    pub fn identifier(&self) -> String {
        identifier(&self.manager, self.operation, &self.api_version, &self.subresource)
    }

    /// How kube names the manager in conflict messages (`printManager`): `"kubectl"` for
    /// appliers, `"kubectl" using v1` for updaters, with ` with subresource "status"` after
    /// the name when written through a subresource.
    pub fn display_name(&self) -> String {
        let mut name = go_quote(&self.manager);
        if !self.subresource.is_empty() {
            name = format!("{name} with subresource {}", go_quote(&self.subresource));
        }
        match self.operation {
            OperationType::Apply => name,
            OperationType::Update => format!("{name} using {}", self.api_version),
        }
    }

    /// The entry as kube writes it ([`entry_value`]).
    pub fn to_value(&self) -> Value {
        let time = self.time.as_deref();
        entry_value(
            &self.manager,
            self.operation,
            &self.api_version,
            time,
            &self.subresource,
            self.fields.to_fields_v1(),
        )
    }

    /// The entry's time in whole seconds since the epoch; unparsable or missing is 0, as a
    /// nil time is in kube's orderings.
    fn time_seconds(&self) -> i64 {
        self.time.as_deref().and_then(|time| jiff::Timestamp::from_str(time).ok()).map_or(0, |time| time.as_second())
    }
}

/// An entry as kube writes it: `manager`, `operation`, `apiVersion`, `time`, `fieldsType`,
/// `fieldsV1`, `subresource`, empty values left out.
pub(super) fn entry_value(
    manager: &str,
    operation: OperationType,
    api_version: &str,
    time: Option<&str>,
    subresource: &str,
    fields_v1: Value,
) -> Value {
    let mut entry = Map::with_capacity(7);
    if !manager.is_empty() {
        entry.insert("manager".into(), Value::String(manager.into()));
    }
    entry.insert("operation".into(), Value::String(operation.as_str().into()));
    entry.insert("apiVersion".into(), Value::String(api_version.into()));
    if let Some(time) = time {
        entry.insert("time".into(), Value::String(time.into()));
    }
    entry.insert("fieldsType".into(), Value::String("FieldsV1".into()));
    entry.insert("fieldsV1".into(), fields_v1);
    if !subresource.is_empty() {
        entry.insert("subresource".into(), Value::String(subresource.into()));
    }
    Value::Object(entry)
}

/// [`ManagedFieldsEntry::identifier`] from its parts.
pub(super) fn identifier(manager: &str, operation: OperationType, api_version: &str, subresource: &str) -> String {
    // Written straight out (in ManagedFieldsEntry's field order, empty fields left out)
    // rather than through a JSON map: every write computes at least one.
    let update_version = if operation == OperationType::Update { api_version } else { "" };
    let fields = [
        ("manager", manager),
        ("operation", operation.as_str()),
        ("apiVersion", update_version),
        ("subresource", subresource),
    ];
    let mut id = String::with_capacity(96);
    for (name, value) in fields.into_iter().filter(|(_, value)| !value.is_empty()) {
        id.push(if id.is_empty() { '{' } else { ',' });
        id.push('"');
        id.push_str(name);
        id.push_str("\":");
        id.push_str(&go_json_string(value));
    }
    id.push('}');
    id
}

/// Why `metadata.managedFields` could not be decoded. The texts are field errors in kube's
/// format; kube answers them with 422 Invalid where it validates them, while its write path
/// silently falls back to the stored entries (see [`super::update()`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagedFieldsError {
    /// `managedFields` is not a list, or an entry is not an object or has a field of the
    /// wrong type.
    #[error("metadata.managedFields{at}: Invalid value: {value}: {reason}")]
    Malformed {
        /// Where: empty, `[0]` or `[0].manager`.
        at: String,
        /// The offending JSON.
        value: String,
        /// What was expected.
        reason: String,
    },
    /// An operation other than `Apply` or `Update`.
    #[error("metadata.managedFields[{index}].operation: Invalid value: {}: must be `Apply` or `Update`", go_quote(.value))]
    Operation {
        /// The entry's position.
        index: usize,
        /// The operation given.
        value: String,
    },
    /// No `apiVersion`.
    #[error("metadata.managedFields[{index}].apiVersion: Required value: apiVersion must not be empty")]
    MissingApiVersion {
        /// The entry's position.
        index: usize,
    },
    /// No `fieldsType`.
    #[error("metadata.managedFields[{index}].fieldsType: Required value: missing fieldsType in managed fields entry {index}")]
    MissingFieldsType {
        /// The entry's position.
        index: usize,
    },
    /// A `fieldsType` other than `FieldsV1`.
    #[error("metadata.managedFields[{index}].fieldsType: Invalid value: {}: must be `FieldsV1`", go_quote(.value))]
    FieldsType {
        /// The entry's position.
        index: usize,
        /// The fields type given.
        value: String,
    },
    /// A manager name over [`MANAGER_MAX_BYTES`] or with a non-printable character.
    #[error("metadata.managedFields[{index}].manager: {reason}")]
    Manager {
        /// The entry's position.
        index: usize,
        /// kube's message (`Too long: may not be more than 128 bytes`, …).
        reason: String,
    },
    /// A subresource name over [`SUBRESOURCE_MAX_BYTES`].
    #[error(
        "metadata.managedFields[{index}].subresource: Too long: may not be more than {} bytes",
        SUBRESOURCE_MAX_BYTES
    )]
    SubresourceTooLong {
        /// The entry's position.
        index: usize,
    },
    /// A `fieldsV1` that is not a valid field set.
    #[error("metadata.managedFields[{index}].fieldsV1: Invalid value: {reason}")]
    FieldsV1 {
        /// The entry's position.
        index: usize,
        /// Why it does not decode.
        reason: String,
    },
}

/// Decodes and validates `metadata.managedFields` (absent or `null` is no entries), with
/// kube's decoding rules (`DecodeManagedFields`) and validation (`ValidateManagedFields`).
pub fn decode_managed_fields(value: Option<&Value>) -> Result<Vec<ManagedFieldsEntry>, ManagedFieldsError> {
    let entries = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(entries)) => entries,
        Some(other) => return Err(malformed(String::new(), other, "must be a list")),
    };
    entries.iter().enumerate().map(|(index, entry)| decode_entry(index, entry)).collect()
}

fn malformed(at: String, value: &Value, reason: &str) -> ManagedFieldsError {
    ManagedFieldsError::Malformed { at, value: value.to_string(), reason: reason.into() }
}

fn decode_entry(index: usize, entry: &Value) -> Result<ManagedFieldsEntry, ManagedFieldsError> {
    let Value::Object(entry) = entry else {
        return Err(malformed(format!("[{index}]"), entry, "must be an object"));
    };
    let text = |field: &str| -> Result<String, ManagedFieldsError> {
        match entry.get(field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(other) => Err(malformed(format!("[{index}].{field}"), other, "must be a string")),
        }
    };
    let operation = match text("operation")?.as_str() {
        "Apply" => OperationType::Apply,
        "Update" => OperationType::Update,
        other => return Err(ManagedFieldsError::Operation { index, value: other.into() }),
    };
    let api_version = text("apiVersion")?;
    if api_version.is_empty() {
        return Err(ManagedFieldsError::MissingApiVersion { index });
    }
    match text("fieldsType")?.as_str() {
        "FieldsV1" => {}
        "" => return Err(ManagedFieldsError::MissingFieldsType { index }),
        other => return Err(ManagedFieldsError::FieldsType { index, value: other.into() }),
    }
    let manager = text("manager")?;
    validate_manager(&manager).map_err(|reason| ManagedFieldsError::Manager { index, reason })?;
    let subresource = text("subresource")?;
    if subresource.len() > SUBRESOURCE_MAX_BYTES {
        return Err(ManagedFieldsError::SubresourceTooLong { index });
    }
    let fields = match entry.get("fieldsV1") {
        None | Some(Value::Null) => FieldSet::new(),
        Some(fields) => {
            FieldSet::from_fields_v1(fields).map_err(|reason| ManagedFieldsError::FieldsV1 { index, reason })?
        }
    };
    let time = Some(text("time")?).filter(|time| !time.is_empty());
    Ok(ManagedFieldsEntry { manager, operation, api_version, time, subresource, fields })
}

/// kube's `ValidateFieldManager`: at most 128 bytes, printable characters only.
fn validate_manager(manager: &str) -> Result<(), String> {
    if manager.len() > MANAGER_MAX_BYTES {
        return Err(format!("Too long: may not be more than {MANAGER_MAX_BYTES} bytes"));
    }
    // Go's unicode.IsPrint allows the ASCII space but no other space or control character.
    match manager.char_indices().find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' ')) {
        Some((position, c)) => Err(format!(
            "Invalid value: {}: invalid character U+{:04X} (at position {position})",
            go_quote(manager),
            u32::from(c)
        )),
        None => Ok(()),
    }
}

/// Whether `managedFields` in a request asks to clear tracking: an empty list, or a list of
/// one empty entry (kube's `isResetManagedFields`; `[{}]` is what the docs recommend).
pub(super) fn is_reset(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Array(entries)) => match entries.as_slice() {
            [] => true,
            [Value::Object(entry)] => entry.values().all(|value| matches!(value, Value::Null) || value == ""),
            _ => false,
        },
        _ => false,
    }
}

/// Entries by manager identifier. A later entry with the same identity replaces an earlier
/// one, as in kube's decoding.
pub(super) type Managers = BTreeMap<String, ManagedFieldsEntry>;

/// Indexes decoded entries by identity.
pub(super) fn index(entries: Vec<ManagedFieldsEntry>) -> Managers {
    entries.into_iter().map(|entry| (entry.identifier(), entry)).collect()
}

/// The entries in kube's stored order (`sortEncodedManagedFields`): operation (`Apply`
/// first), time in seconds, manager, API version, subresource.
pub(super) fn encode(managers: &Managers) -> Vec<Value> {
    let mut entries: Vec<&ManagedFieldsEntry> = managers.values().collect();
    entries.sort_by(|a, b| {
        (a.operation.as_str(), a.time_seconds(), &a.manager, &a.api_version, &a.subresource).cmp(&(
            b.operation.as_str(),
            b.time_seconds(),
            &b.manager,
            &b.api_version,
            &b.subresource,
        ))
    });
    entries.into_iter().map(ManagedFieldsEntry::to_value).collect()
}

/// kube's `capManagersManager`: while there are more than `max` `Update` entries, the
/// oldest (by time, then identity) are merged into an `ancient-changes` entry of their API
/// version, which takes the time of the newest entry merged into it.
pub(super) fn cap_update_managers(managers: &mut Managers, max: usize) {
    // Counted before anything is built: almost every write is far below the cap, and the
    // list below parses every entry's time.
    if managers.values().filter(|entry| entry.operation == OperationType::Update).count() <= max {
        return;
    }
    let mut updaters: Vec<(i64, String)> = managers
        .iter()
        .filter(|(_, entry)| entry.operation == OperationType::Update)
        .map(|(id, entry)| (entry.time_seconds(), id.clone()))
        .collect();
    if updaters.len() <= max {
        return;
    }
    updaters.sort();
    let mut remaining = updaters.len();
    let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
    for (_, id) in updaters {
        if remaining <= max {
            break;
        }
        let Some(entry) = managers.get(&id).cloned() else {
            continue;
        };
        let Some(first) = first_of_version.get(&entry.api_version).cloned() else {
            first_of_version.insert(entry.api_version.clone(), id);
            continue;
        };
        let bucket_id = identifier(ANCIENT_CHANGES_MANAGER, OperationType::Update, &entry.api_version, "");
        if !managers.contains_key(&bucket_id) {
            if let Some(mut bucket) = managers.remove(&first) {
                bucket.manager = ANCIENT_CHANGES_MANAGER.into();
                bucket.subresource = String::new();
                managers.insert(bucket_id.clone(), bucket);
            }
        }
        managers.remove(&id);
        if let Some(bucket) = managers.get_mut(&bucket_id) {
            bucket.fields = bucket.fields.union(&entry.fields);
            bucket.time = entry.time;
        }
        remaining -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_the_documented_entry_and_writes_it_back_in_kube_order() {
        // The ConfigMap example of kube's Server-Side Apply documentation.
        let documented = json!([{
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": "2010-10-10T0:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:test-label": {}}}, "f:data": {"f:key": {}}}
        }]);
        let entries = decode_managed_fields(Some(&documented)).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].identifier(), r#"{"manager":"kubectl","operation":"Apply"}"#);
        assert_eq!(entries[0].display_name(), r#""kubectl""#);
        assert_eq!(
            entries[0].to_value().to_string(),
            r#"{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2010-10-10T0:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}}"#
        );
        let updater = ManagedFieldsEntry {
            manager: "kubelet".into(),
            operation: OperationType::Update,
            api_version: "v1".into(),
            time: None,
            subresource: "status".into(),
            fields: FieldSet::new(),
        };
        assert_eq!(
            updater.identifier(),
            r#"{"manager":"kubelet","operation":"Update","apiVersion":"v1","subresource":"status"}"#
        );
        assert_eq!(updater.display_name(), r#""kubelet" with subresource "status" using v1"#);
        // Go's encoder escapes what serde_json leaves alone; an applier names no version.
        assert_eq!(
            identifier("a&b <\"c\">", OperationType::Update, "v1", ""),
            r#"{"manager":"a\u0026b \u003c\"c\"\u003e","operation":"Update","apiVersion":"v1"}"#
        );
        assert_eq!(
            identifier("", OperationType::Apply, "v1", "scale"),
            r#"{"operation":"Apply","subresource":"scale"}"#
        );
    }

    #[test]
    fn rejects_malformed_entries_with_field_errors() {
        let cases = [
            (json!({}), r#"metadata.managedFields: Invalid value: {}: must be a list"#),
            (json!([1]), "metadata.managedFields[0]: Invalid value: 1: must be an object"),
            (
                json!([{"operation": "Bad", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
                r#"metadata.managedFields[0].operation: Invalid value: "Bad": must be `Apply` or `Update`"#,
            ),
            (
                json!([{"operation": "Apply", "fieldsType": "FieldsV1"}]),
                "metadata.managedFields[0].apiVersion: Required value: apiVersion must not be empty",
            ),
            (
                json!([{"operation": "Apply", "apiVersion": "v1"}]),
                "metadata.managedFields[0].fieldsType: Required value: missing fieldsType in managed fields entry 0",
            ),
            (
                json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"}]),
                r#"metadata.managedFields[0].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`"#,
            ),
            (
                json!([{"manager": "a".repeat(129), "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
                "metadata.managedFields[0].manager: Too long: may not be more than 128 bytes",
            ),
            (
                json!([{"manager": "a\u{7}", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
                r#"metadata.managedFields[0].manager: Invalid value: "a\a": invalid character U+0007 (at position 1)"#,
            ),
            (
                json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:a": []}}]),
                r#"metadata.managedFields[0].fieldsV1: Invalid value: fieldsV1 value at "f:a" must be a JSON object"#,
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(decode_managed_fields(Some(&value)).unwrap_err().to_string(), expected, "{value}");
        }
        assert!(decode_managed_fields(None).unwrap().is_empty());
        assert!(is_reset(Some(&json!([]))) && is_reset(Some(&json!([{}]))));
        assert!(!is_reset(None) && !is_reset(Some(&json!([{"manager": "x"}]))));
    }

    #[test]
    fn caps_update_entries_into_ancient_changes() {
        let entry = |name: &str, second: u32, version: &str| ManagedFieldsEntry {
            manager: name.into(),
            operation: OperationType::Update,
            api_version: version.into(),
            time: Some(format!("2024-01-01T00:00:{second:02}Z")),
            subresource: String::new(),
            fields: FieldSet::from_paths([&[super::super::path::PathElement::field(name)][..]]),
        };
        let mut entries: Vec<ManagedFieldsEntry> = (0..12).map(|i| entry(&format!("m{i:02}"), i, "v1")).collect();
        entries.push(ManagedFieldsEntry { operation: OperationType::Apply, ..entry("applier", 0, "v1") });
        let mut managers = index(entries);
        cap_update_managers(&mut managers, MAX_UPDATE_MANAGERS);
        let names: Vec<&str> = managers.values().map(|entry| entry.manager.as_str()).collect();
        assert_eq!(names.len(), 11);
        assert!(names.contains(&"applier") && names.contains(&ANCIENT_CHANGES_MANAGER) && !names.contains(&"m02"));
        let bucket = managers.values().find(|entry| entry.manager == ANCIENT_CHANGES_MANAGER).unwrap();
        assert_eq!(bucket.fields.len(), 3);
        assert_eq!(bucket.time.as_deref(), Some("2024-01-01T00:00:02Z"));
    }
}
