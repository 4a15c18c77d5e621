//! The schema inspector's view of a tool for one provider: its schemas at each step, what the
//! provider would reject, and what the renderer changed and why.

use serde::Serialize;
use serde_json::Value;

use super::CatalogTool;
use crate::schema;

impl CatalogTool {
    /// Everything the schema inspector shows for `provider`: the raw schema, the one the
    /// tenant's LLM sees (presets removed), the normalised one, the rendering the tenant's
    /// clients get (on MCP the published schemas unless `portable_mcp`), and what the provider
    /// would reject in the unnormalised schema.
    pub fn inspect(
        &self,
        provider: schema::Provider,
        portable_mcp: bool,
    ) -> Result<Inspection, schema::normalize::NormalizeError> {
        let portable = provider != schema::Provider::Mcp || portable_mcp;
        // Served as published, a schema the normaliser refuses is still inspected.
        let (rendering, normalised) = match self.render(provider) {
            Ok(normalised) if portable => {
                let schema = schema::render::input_schema(&normalised, provider).clone();
                (normalised, schema)
            }
            Ok(normalised) => {
                (self.published_mcp(), schema::render::input_schema(&normalised, provider).clone())
            }
            Err(_) if !portable => (self.published_mcp(), Value::Null),
            Err(err) => return Err(err),
        };
        let llm_schema = self.input_schema.value();
        let findings = schema::lint::lint_tool(&self.exposed_name, &llm_schema, provider, self.strict);
        Ok(Inspection {
            tool: self.exposed_name.clone(),
            provider: provider.as_str(),
            raw: self.raw_input_schema.value(),
            changes: match normalised {
                Value::Null => Vec::new(),
                _ => render_changes(&llm_schema, &normalised, &findings),
            },
            llm_schema,
            normalised,
            rendering,
            portable,
            findings,
        })
    }
}

/// What the renderer changed in the schema the LLM sees to make it one the provider accepts:
/// each field that differs, with the provider's rules broken at that place of the schema (the
/// lint's findings there: why a keyword moved into the description, say). A change with no
/// rule broken there (strict mode closing an object, an inlined `$ref`) has none.
fn render_changes(declared: &Value, sent: &Value, findings: &[schema::lint::Finding]) -> Vec<RenderChange> {
    crate::diff::field_changes(Some(declared), Some(sent))
        .into_iter()
        .map(|change| {
            let (place, key) = change.path.rsplit_once('.').unwrap_or(("", change.path.as_str()));
            // A finding's pointer may end at the keyword it is about; its place is the node.
            let place_of = |f: &schema::lint::Finding| {
                let mut segments: Vec<String> = f
                    .pointer
                    .split('/')
                    .skip(1)
                    .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
                    .collect();
                if segments.last() == Some(&f.keyword) {
                    segments.pop();
                }
                segments.join(".")
            };
            let here: Vec<_> = findings.iter().filter(|f| place_of(f) == place).collect();
            // A keyword's own rule; for anything else there (its description), all of them.
            let own: Vec<_> = here.iter().filter(|f| f.keyword == key).collect();
            let mut why: Vec<String> = if own.is_empty() {
                here.iter().map(|f| f.message.clone()).collect()
            } else {
                own.iter().map(|f| f.message.clone()).collect()
            };
            if why.is_empty() {
                // The outermost keyword that explains it: `$defs.a.type` went with the `$defs`.
                why.extend(change.path.split('.').find_map(usual_reason).map(str::to_string));
            }
            if why.is_empty() && change.after.is_none() {
                why.push("moved into the description, in words the LLM reads".into());
            }
            RenderChange { path: change.path, declared: change.before, sent: change.after, why }
        })
        .collect()
}

/// Why the renderer changes a keyword when no rule of the provider is broken right there.
fn usual_reason(key: &str) -> Option<&'static str> {
    Some(match key {
        "$defs" | "definitions" | "$ref" => "references are inlined: a provider reads the schema whole",
        "$schema" | "$id" | "$comment" => "the schema's own metadata says nothing to an LLM",
        "description" => "what the provider takes no keyword for is kept here, in words the LLM reads",
        "required" | "additionalProperties" => {
            "strict mode: every property required (optional ones nullable), every object closed"
        }
        "type" | "nullable" => "written as the provider reads types: one type, optional values nullable",
        "anyOf" | "oneOf" | "allOf" => "compositions are merged, or written as `anyOf`",
        _ => return None,
    })
}

/// One field of the schema the renderer changed for a provider, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenderChange {
    pub path: String,
    /// As declared (presets removed); `None`: not there.
    pub declared: Option<Value>,
    /// As sent; `None`: removed.
    pub sent: Option<Value>,
    /// The provider's rules the declared schema broke at that place.
    pub why: Vec<String>,
}

/// A tool's schema for one provider, as the inspector shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    pub tool: String,
    pub provider: &'static str,
    pub raw: Value,
    pub llm_schema: Value,
    /// `null` where the normaliser refuses a schema MCP clients get as published.
    pub normalised: Value,
    pub rendering: Value,
    /// Whether `rendering` carries the normalised schema: always but on MCP, where the tenant
    /// chooses portable schemas or gets them as published.
    pub portable: bool,
    pub findings: Vec<schema::lint::Finding>,
    /// What the renderer changed for the provider (or would, with portable schemas on MCP),
    /// and why.
    pub changes: Vec<RenderChange>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::render_changes;
    use crate::schema::{Provider, lint::lint, normalize::normalize};

    /// Each change says why: the provider's rule broken at that place, or the renderer's usual
    /// reason for the keyword.
    #[test]
    fn what_the_renderer_changed_says_why() {
        let declared = json!({
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date-time", "pattern": "^2"},
                "count": {"type": "integer", "multipleOf": 5}
            },
            "$defs": {"unused": {"type": "string"}}
        });
        let sent = normalize(&declared, Provider::Gemini, false).unwrap();
        let changes = render_changes(&declared, &sent, &lint(&declared, Provider::Gemini, false));
        let why = |path: &str| {
            changes.iter().find(|c| c.path == path).map(|c| c.why.join("; ")).unwrap_or_default()
        };
        assert!(why("properties.count.multipleOf").contains("multipleOf"), "{changes:#?}");
        assert_eq!(why("properties.when.pattern"), "moved into the description, in words the LLM reads");
        assert_eq!(
            why("properties.count.description"),
            why("properties.count.multipleOf"),
            "moved there for it"
        );
        assert!(why("$defs.unused.type").starts_with("references are inlined"), "{changes:#?}");
        assert!(changes.iter().all(|c| !c.why.is_empty()), "{changes:#?}");
    }
}
