//! JSON kept as its text.

use std::fmt;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON value kept as its compact text, for what is mostly passed on and seldom looked into:
/// a tool's schemas and annotations, held by the catalog for every tool. A [`Value`] takes a
/// B-tree node of 632 bytes for each object however small: a schema of 170 bytes of text takes
/// about 3 KB. Serialised, it is written as it is; [`JsonText::value`] parses it for what looks
/// inside. Clones share the text; equal values have equal texts (a `Value`'s objects are
/// written in key order).
#[derive(Clone)]
pub struct JsonText(Arc<RawValue>);

impl JsonText {
    pub fn new(value: &Value) -> JsonText {
        let raw = serde_json::value::to_raw_value(value).expect("a Value serialises");
        JsonText(Arc::from(raw))
    }

    /// The value, parsed anew.
    pub fn value(&self) -> Value {
        // Written from a `Value`, which was itself parsed within serde_json's nesting limit.
        serde_json::from_str(self.0.get()).expect("the text of a Value parses")
    }

    pub fn as_str(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for JsonText {}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_survives_its_text_and_is_written_as_it_was() {
        let schema = json!({"type": "object", "properties": {"q": {"type": "string", "maximum": 1.5}}, "required": ["q"]});
        let text = JsonText::new(&schema);
        assert_eq!(text.value(), schema);
        assert_eq!(
            serde_json::to_string(&json!({"inputSchema": text})).unwrap(),
            json!({"inputSchema": schema}).to_string()
        );
        assert_eq!(serde_json::to_value(&text).unwrap(), schema);
    }

    #[test]
    fn texts_are_equal_when_their_values_are() {
        let (a, b) = (json!({"b": 1, "a": [true, null]}), json!({"a": [true, null], "b": 1}));
        assert_eq!(JsonText::new(&a), JsonText::new(&b));
        assert_ne!(JsonText::new(&a), JsonText::new(&json!({"a": [true, null], "b": 1.0})));
    }
}
