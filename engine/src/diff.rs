//! The fields in which two JSON values differ: what an audit event changed, what a
//! configuration apply would change, what the schema renderer changed.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

/// One field that differs: its path (`ceiling.tags`), and its value before and after (`None`:
/// it was not there).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    pub path: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// The fields that differ between `before` and `after`, in path order; objects are compared
/// field by field, anything else as a whole.
pub fn field_changes(before: Option<&Value>, after: Option<&Value>) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    diff(String::new(), before, after, &mut changes);
    changes
}

fn diff(path: String, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<FieldChange>) {
    if before.is_none_or(Value::is_object) && after.is_none_or(Value::is_object) {
        let (before, after) = (before.and_then(Value::as_object), after.and_then(Value::as_object));
        let keys: BTreeSet<&String> = before.into_iter().chain(after).flat_map(|o| o.keys()).collect();
        for key in keys {
            let inner = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            diff(inner, before.and_then(|o| o.get(key)), after.and_then(|o| o.get(key)), out);
        }
    } else if before != after {
        out.push(FieldChange { path, before: before.cloned(), after: after.cloned() });
    }
}
