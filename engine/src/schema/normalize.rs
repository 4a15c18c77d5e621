//! The normaliser: turns any tool schema into one a provider accepts, keeping what it can.
//!
//! Local `$ref`s are inlined (recursion is refused with a clear error), `oneOf` becomes
//! `anyOf`, `allOf` is merged, a top-level union becomes one object, and every keyword the
//! provider rejects moves into the description (`format: email`, `default: 10`, ...) so the LLM
//! still reads it. For OpenAI strict mode every property becomes required (optional ones
//! nullable) and every object closed. For Gemini, optional values become `nullable`, a type
//! list becomes one type or an `anyOf`, what stands beside an `anyOf` moves into each of its
//! branches, and enums become strings; an object without properties has no form in Gemini's
//! `parameters` ([`NormalizeError::Inexpressible`]). The lint of the result is clean for that
//! provider.

use serde_json::{Map, Value, json};

use super::{Provider, as_object_schema, is_object_schema};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NormalizeError {
    /// A `$ref` leads back to itself; such a schema cannot be written without references.
    #[error("`$ref` {0} is recursive: the schema cannot be inlined for this provider")]
    Recursive(String),
    /// A `$ref` points outside the schema or to nothing.
    #[error(
        "`$ref` {0} cannot be resolved (only references into the schema itself, `#/...` or `#anchor`, are)"
    )]
    Unresolved(String),
    /// Inlining would build a schema too big or too deep to serve (definitions that each use
    /// the next several times grow exponentially).
    #[error(
        "the schema is too large once its `$ref`s are inlined (over {MAX_NODES} nodes or {MAX_DEPTH} levels deep)"
    )]
    TooLarge,
    /// Gemini's `parameters` cannot say "any object": a free-form object (no properties)
    /// below the root has no form there (the renderer serves `parametersJsonSchema` instead).
    #[error("the object at `{0}` has no properties, which gemini's schema subset cannot express")]
    Inexpressible(String),
}

/// The most nodes an inlined schema may have.
const MAX_NODES: usize = 50_000;
/// The deepest an inlined schema may nest.
const MAX_DEPTH: usize = 100;

/// What inlining may still build.
struct Budget {
    nodes: usize,
}

pub fn normalize(schema: &Value, provider: Provider, strict: bool) -> Result<Value, NormalizeError> {
    let mut root = as_object_schema(schema);
    // References point into the schema as published (`#/$defs/A`, `#/properties/b`, ...).
    let document = Value::Object(root.clone());
    for key in ["$defs", "definitions"] {
        root.remove(key);
    }
    let mut root = Value::Object(root);
    inline_refs(&mut root, &document, &mut Vec::new(), &mut Budget { nodes: MAX_NODES }, 0)?;
    let Value::Object(mut root) = root else { unreachable!("inlining keeps the root an object") };
    // A union can also come from a part of a top-level allOf.
    merge_all_of(&mut root);
    note_malformed_compositions(&mut root);
    flatten_top_level_union(&mut root);
    root.insert("type".into(), json!("object"));
    let normaliser = Normaliser { provider, strict: strict && provider == Provider::OpenAi };
    normaliser.node(&mut root, 1);
    let root = Value::Object(root);
    if provider == Provider::Gemini
        && let Some(at) = object_without_properties(&root, "")
    {
        return Err(NormalizeError::Inexpressible(if at.is_empty() { "/".into() } else { at }));
    }
    Ok(root)
}

/// Replaces every `$ref` under `node` (at `depth`) by what it points to in `document`,
/// counting what it builds against `budget`.
fn inline_refs(
    node: &mut Value,
    document: &Value,
    stack: &mut Vec<String>,
    budget: &mut Budget,
    depth: usize,
) -> Result<(), NormalizeError> {
    budget.nodes = budget.nodes.checked_sub(1).ok_or(NormalizeError::TooLarge)?;
    if depth > MAX_DEPTH {
        return Err(NormalizeError::TooLarge);
    }
    match node {
        Value::Object(map) => {
            // Keywords beside the $ref (often a description) win over the definition's.
            let mut inlined = Map::new();
            if let Some(Value::String(reference)) = map.get("$ref").cloned() {
                map.remove("$ref");
                if stack.contains(&reference) {
                    return Err(NormalizeError::Recursive(reference));
                }
                let mut target = reference
                    .strip_prefix('#')
                    .and_then(|fragment| match fragment {
                        "" => Some(document),
                        pointer if pointer.starts_with('/') => document.pointer(pointer),
                        anchor => anchored(document, anchor),
                    })
                    .cloned()
                    .ok_or_else(|| NormalizeError::Unresolved(reference.clone()))?;
                stack.push(reference);
                inline_refs(&mut target, document, stack, budget, depth)?;
                stack.pop();
                if let Value::Object(target) = target {
                    inlined = target;
                }
            }
            for value in map.values_mut() {
                inline_refs(value, document, stack, budget, depth + 1)?;
            }
            for (key, value) in inlined {
                map.entry(key).or_insert(value);
            }
        }
        Value::Array(items) => {
            for item in items {
                inline_refs(item, document, stack, budget, depth + 1)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The subschema of `node` (or `node` itself) that declares `"$anchor": anchor`.
fn anchored<'a>(node: &'a Value, anchor: &str) -> Option<&'a Value> {
    match node {
        Value::Object(map) if map.get("$anchor").is_some_and(|a| a == anchor) => Some(node),
        Value::Object(map) => map.values().find_map(|value| anchored(value, anchor)),
        Value::Array(items) => items.iter().find_map(|item| anchored(item, anchor)),
        _ => None,
    }
}

fn required_of(node: &Map<String, Value>) -> Vec<String> {
    node.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Merges `other`'s properties and required list into `node`.
fn merge_object(node: &mut Map<String, Value>, other: &Map<String, Value>, required: &mut Vec<String>) {
    if let Some(Value::Object(props)) = other.get("properties") {
        let target = node.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(target) = target {
            for (name, schema) in props {
                target.entry(name.clone()).or_insert_with(|| schema.clone());
            }
        }
    }
    for name in required_of(other) {
        if !required.contains(&name) {
            required.push(name);
        }
    }
}

fn append_description(node: &mut Map<String, Value>, note: &str) {
    let description = match node.get("description").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing} ({note})"),
        _ => note.to_string(),
    };
    node.insert("description".into(), Value::String(description));
}

/// An `allOf` is merged into its schema: properties and requirements of every part, and the
/// first value of any other keyword.
fn merge_all_of(node: &mut Map<String, Value>) {
    let Some(Value::Array(parts)) = node.get("allOf") else { return };
    let parts = parts.clone();
    node.remove("allOf");
    let mut required = required_of(node);
    for part in parts.iter().filter_map(Value::as_object) {
        merge_object(node, part, &mut required);
        for (key, value) in part {
            if !matches!(key.as_str(), "properties" | "required") {
                node.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    if !required.is_empty() {
        node.insert("required".into(), json!(required));
    }
}

/// `anyOf`, `oneOf` or `allOf` with anything but a list of schemas says nothing a provider
/// can use: it moves into the description.
fn note_malformed_compositions(node: &mut Map<String, Value>) {
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if let Some(value) = node.get(keyword).filter(|v| !v.is_array()).cloned() {
            node.remove(keyword);
            append_description(node, &format!("{keyword}: {}", compact(&value)));
        }
    }
}

/// A top-level `anyOf`/`oneOf` of objects becomes one object with every variant's properties;
/// only what every variant requires stays required, and the description says to pick one.
fn flatten_top_level_union(root: &mut Map<String, Value>) {
    let variants = match (root.remove("anyOf"), root.remove("oneOf")) {
        (Some(Value::Array(a)), _) | (None, Some(Value::Array(a))) => a,
        _ => return,
    };
    let mut required: Option<Vec<String>> = None;
    let mut summaries = Vec::new();
    for variant in variants.iter().filter_map(Value::as_object) {
        let mut ignored = Vec::new();
        merge_object(root, variant, &mut ignored);
        let variant_required = required_of(variant);
        summaries.push(format!("[{}]", variant_required.join(", ")));
        required = Some(match required {
            None => variant_required,
            Some(so_far) => so_far.into_iter().filter(|r| variant_required.contains(r)).collect(),
        });
    }
    let mut all_required = required_of(root);
    all_required.extend(required.unwrap_or_default());
    if !all_required.is_empty() {
        root.insert("required".into(), json!(all_required));
    }
    append_description(
        root,
        &format!("provide the required fields of exactly one of: {}", summaries.join(" or ")),
    );
}

struct Normaliser {
    provider: Provider,
    strict: bool,
}

impl Normaliser {
    fn node(&self, node: &mut Map<String, Value>, depth: usize) {
        if depth >= Provider::MAX_DEPTH {
            let nested =
                ["properties", "required", "items", "anyOf", "oneOf", "allOf", "additionalProperties"];
            let removed = nested.iter().filter(|key| node.remove(**key).is_some()).count();
            if removed > 0 {
                append_description(node, "deeper structure omitted");
            }
        }
        merge_all_of(node);
        note_malformed_compositions(node);
        if let Some(one_of) = node.remove("oneOf") {
            match node.get_mut("anyOf") {
                Some(Value::Array(any)) => any.extend(one_of.as_array().cloned().unwrap_or_default()),
                _ => {
                    node.insert("anyOf".into(), one_of);
                }
            }
        }
        if let Some(Value::Array(values)) = node.get("enum")
            && values.len() > Provider::MAX_ENUM_VALUES
        {
            let examples: Vec<String> = values.iter().take(5).map(Value::to_string).collect();
            let note = format!("one of {} allowed values, e.g. {}", values.len(), examples.join(", "));
            node.remove("enum");
            append_description(node, &note);
        }
        let gemini = self.provider == Provider::Gemini;
        if gemini {
            gemini_single_type(node);
            gemini_string_enum(node);
            if node.get("additionalProperties") == Some(&Value::Bool(false)) {
                node.remove("additionalProperties");
            }
        }
        self.move_rejected_keywords(node);
        self.children(node, depth);
        if gemini {
            gemini_fold_any_of(node);
        }
        if self.strict && is_object_schema(node) {
            strict_object(node);
        }
    }

    fn move_rejected_keywords(&self, node: &mut Map<String, Value>) {
        let rejected: Vec<String> = node.keys().filter(|k| !self.provider.accepts(k)).cloned().collect();
        let mut notes = Vec::new();
        for keyword in rejected {
            let value = node.remove(&keyword).expect("key listed above");
            match keyword.as_str() {
                // Only metadata: a title stands in for a missing description, $schema/$id go,
                // and so does `x-mcp-header` (which HTTP header an MCP client mirrors the value
                // into: Toolgate's own upstream client sends it, the LLM has no use for it).
                "title" if !node.contains_key("description") => {
                    node.insert("description".into(), value);
                }
                "title" | "$schema" | "$id" | "$comment" | "x-mcp-header" => {}
                _ => notes.push(format!("{keyword}: {}", compact(&value))),
            }
        }
        if !notes.is_empty() {
            append_description(node, &notes.join("; "));
        }
    }

    fn children(&self, node: &mut Map<String, Value>, depth: usize) {
        if let Some(Value::Object(properties)) = node.get_mut("properties") {
            for child in properties.values_mut() {
                self.child(child, depth);
            }
        }
        for keyword in ["items", "additionalProperties"] {
            if let Some(child @ Value::Object(_)) = node.get_mut(keyword) {
                self.child(child, depth);
            }
        }
        if let Some(Value::Array(variants)) = node.get_mut("anyOf") {
            for child in variants {
                self.child(child, depth);
            }
        }
    }

    fn child(&self, child: &mut Value, depth: usize) {
        if !child.is_object() {
            // `true`/`false` schemas: anything / nothing; say so in portable terms.
            *child = json!({"description": format!("(any value: {child})")});
        }
        if let Value::Object(node) = child {
            self.node(node, depth + 1);
        }
    }
}

/// Where the first object schema without properties is under `node`, if anywhere.
fn object_without_properties(node: &Value, pointer: &str) -> Option<String> {
    let Value::Object(map) = node else { return None };
    let empty = map.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty());
    if map.get("type") == Some(&json!("object")) && empty {
        return Some(pointer.to_string());
    }
    let properties = map.get("properties").and_then(Value::as_object).into_iter().flatten();
    let items = map.get("items").map(|items| ("items".to_string(), items));
    let branches = map.get("anyOf").and_then(Value::as_array).into_iter().flatten().enumerate();
    properties
        .map(|(name, child)| (format!("properties/{name}"), child))
        .chain(items)
        .chain(branches.map(|(i, child)| (format!("anyOf/{i}"), child)))
        .find_map(|(step, child)| object_without_properties(child, &format!("{pointer}/{step}")))
}

/// Gemini takes one type per schema: `null` among the types becomes `nullable`, several
/// others become an `anyOf` of one type each.
fn gemini_single_type(node: &mut Map<String, Value>) {
    let Some(Value::Array(kinds)) = node.get("type") else { return };
    let mut kinds = kinds.clone();
    node.remove("type");
    if kinds.iter().any(|k| k == "null") {
        node.insert("nullable".into(), json!(true));
        kinds.retain(|k| k != "null");
    }
    match kinds.len() {
        0 => {}
        1 => {
            node.insert("type".into(), kinds.remove(0));
        }
        _ => {
            let variants = kinds.into_iter().map(|kind| json!({"type": kind}));
            match node.get_mut("anyOf") {
                Some(Value::Array(existing)) => existing.extend(variants),
                _ => {
                    node.insert("anyOf".into(), Value::Array(variants.collect()));
                }
            }
        }
    }
}

/// Gemini's enums are strings: other values move into the description.
fn gemini_string_enum(node: &mut Map<String, Value>) {
    let Some(Value::Array(values)) = node.get("enum") else { return };
    if values.iter().all(Value::is_string) {
        return;
    }
    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
    node.remove("enum");
    append_description(node, &format!("one of: {}", listed.join(", ")));
}

/// Gemini refuses keywords beside `anyOf`: a `null` branch becomes `nullable`, a single
/// remaining branch replaces the `anyOf`, and everything else beside it moves into each branch.
fn gemini_fold_any_of(node: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = node.remove("anyOf") else { return };
    let (nulls, mut branches): (Vec<Value>, Vec<Value>) =
        branches.into_iter().partition(|b| b["type"] == "null");
    if !nulls.is_empty() {
        node.insert("nullable".into(), json!(true));
    }
    match branches.len() {
        0 => {}
        1 => {
            let Value::Object(only) = branches.remove(0) else { return };
            let beside = std::mem::take(node);
            *node = only;
            push_into(node, &beside);
        }
        _ => {
            let beside = std::mem::take(node);
            for branch in branches.iter_mut().filter_map(Value::as_object_mut) {
                push_into(branch, &beside);
            }
            node.insert("anyOf".into(), Value::Array(branches));
        }
    }
}

/// Adds the keywords of `beside` to a branch (into each of its own branches when it is a
/// union itself); descriptions are joined, the branch's own keywords win.
fn push_into(branch: &mut Map<String, Value>, beside: &Map<String, Value>) {
    if beside.is_empty() {
        return;
    }
    if let Some(Value::Array(inner)) = branch.get_mut("anyOf") {
        for inner in inner.iter_mut().filter_map(Value::as_object_mut) {
            push_into(inner, beside);
        }
        return;
    }
    for (key, value) in beside {
        match (key.as_str(), branch.get("description").and_then(Value::as_str), value.as_str()) {
            ("description", Some(own), Some(outer)) if !own.is_empty() => {
                let joined = format!("{outer} ({own})");
                branch.insert("description".into(), Value::String(joined));
            }
            _ => {
                branch.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
}

/// OpenAI strict mode: every property required, the optional ones made nullable, no extra
/// properties.
fn strict_object(node: &mut Map<String, Value>) {
    let mut required = required_of(node);
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for (name, schema) in properties.iter_mut() {
            if !required.contains(name) {
                make_nullable(schema);
                required.push(name.clone());
            }
        }
    }
    node.insert("required".into(), json!(required));
    node.insert("additionalProperties".into(), json!(false));
}

fn make_nullable(schema: &mut Value) {
    let Value::Object(node) = schema else { return };
    match node.get_mut("type") {
        Some(Value::String(kind)) => {
            let kind = kind.clone();
            node.insert("type".into(), json!([kind, "null"]));
        }
        Some(Value::Array(kinds)) if !kinds.contains(&json!("null")) => kinds.push(json!("null")),
        Some(_) => {}
        // Without a type, null is allowed already unless a union or an enum says otherwise;
        // those take null in place (wrapping the node would nest it a level deeper).
        None => match node.get_mut("anyOf") {
            Some(Value::Array(branches)) => {
                if !branches.iter().any(|b| b["type"] == "null") {
                    branches.push(json!({"type": "null"}));
                }
            }
            _ => {
                if let Some(Value::Array(values)) = node.get_mut("enum")
                    && !values.contains(&Value::Null)
                {
                    values.push(Value::Null);
                }
            }
        },
    }
}

fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
