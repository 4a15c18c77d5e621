//! Any JSON an upstream may publish as a tool's input schema: the lint and the normaliser
//! never panic, and for every provider the normalised schema (what the gateway serves) is
//! lint-clean, or normalising refuses with an error.
#![no_main]

use engine::schema::{Provider, lint, normalize};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    for provider in Provider::ALL {
        for strict in [false, true] {
            let _ = lint::lint(&schema, provider, strict);
            if let Ok(normalized) = normalize::normalize(&schema, provider, strict) {
                let findings = lint::lint(&normalized, provider, strict);
                assert!(findings.is_empty(), "{provider:?} strict={strict}: {findings:?} in {normalized}");
            }
        }
    }
});
