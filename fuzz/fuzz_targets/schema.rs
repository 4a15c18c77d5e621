//! Any JSON an upstream may publish as a tool's input schema: the lint and the normaliser
//! never panic, and for every provider the normalised schema (what the gateway serves) is
//! lint-clean, or normalising refuses with an error. The lint holds Gemini's rules (one type,
//! nothing beside `anyOf`, objects with properties, string enums, its formats), so Gemini's
//! `parameters` obey them; a schema they cannot express is served as `parametersJsonSchema`,
//! which must then be clean as full JSON Schema.
#![no_main]

use engine::schema::normalize::NormalizeError;
use engine::schema::{Provider, lint, normalize};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    for provider in Provider::ALL {
        for strict in [false, true] {
            let _ = lint::lint(&schema, provider, strict);
            let served = match normalize::normalize(&schema, provider, strict) {
                Err(NormalizeError::Inexpressible(_)) if provider == Provider::Gemini => {
                    let fallback = normalize::normalize(&schema, Provider::Mcp, false);
                    let fallback = fallback.expect("what Gemini cannot express normalises as JSON Schema");
                    (fallback, Provider::Mcp)
                }
                Ok(normalized) => (normalized, provider),
                Err(_) => continue,
            };
            let (normalized, rules) = served;
            let findings = lint::lint(&normalized, rules, strict);
            assert!(findings.is_empty(), "{provider:?} strict={strict}: {findings:?} in {normalized}");
        }
    }
});
