//! A schema and arguments, both arbitrary JSON (the first line is the schema, the rest the
//! arguments): compiling the validator and checking the arguments never panic, and a refusal
//! always says what was wrong.
#![no_main]

use engine::schema::validate::ArgumentValidator;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(split) = data.iter().position(|b| *b == b'\n') else { return };
    let (Ok(schema), Ok(arguments)) = (
        serde_json::from_slice::<serde_json::Value>(&data[..split]),
        serde_json::from_slice::<serde_json::Value>(&data[split + 1..]),
    ) else {
        return;
    };
    let validator = ArgumentValidator::new(&schema);
    if let Err(message) = validator.check(&arguments) {
        assert!(!message.is_empty());
    }
});
