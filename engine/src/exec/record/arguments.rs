//! What of a call's arguments an invocation record keeps: at most [`RECORDED_ARGUMENTS`] bytes
//! as JSON text (larger arguments as their size, hash and beginning), and a notice instead of
//! arguments PostgreSQL would refuse to store.

use std::io::Write;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::RECORDED_ARGUMENTS;

/// How much of arguments too large to keep is kept, as text.
const KEPT_BEGINNING: usize = 1024;

/// What stands for arguments PostgreSQL would refuse to store (a U+0000 in a string).
pub(super) fn unrecordable() -> Value {
    json!({"unrecorded": "the arguments contained U+0000"})
}

/// `arguments` as they may be kept elsewhere (an audit event), bounded as an invocation
/// record keeps them.
pub(crate) fn keepable(arguments: &Value) -> Value {
    if crate::exec::has_nul(arguments) {
        return unrecordable();
    }
    let mut kept = arguments.clone();
    kept_arguments(&mut kept);
    kept
}

/// Replaces `arguments` larger than [`RECORDED_ARGUMENTS`] as JSON text by a notice with their
/// size, SHA-256 and beginning; returns the size of what is kept.
pub(super) fn kept_arguments(arguments: &mut Value) -> usize {
    let size = json_size(arguments);
    if size <= RECORDED_ARGUMENTS {
        return size;
    }
    let text = serde_json::to_string(arguments).expect("it serialised above");
    let mut end = KEPT_BEGINNING;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let sha256: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    *arguments = json!({
        "truncated": format!("{size} bytes of arguments, more than the {RECORDED_ARGUMENTS} a record keeps"),
        "bytes": size,
        "sha256": sha256,
        "beginning": &text[..end],
    });
    json_size(arguments)
}

/// The size of `value` as JSON text, without writing it anywhere.
fn json_size(value: &Value) -> usize {
    let mut size = Counted(0);
    serde_json::to_writer(&mut size, value).expect("counting cannot fail");
    size.0
}

/// Counts the bytes written to it.
struct Counted(usize);

impl Write for Counted {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_too_large_to_keep_are_kept_as_their_size_hash_and_beginning() {
        let mut small = json!({"path": "a.txt"});
        assert_eq!(kept_arguments(&mut small), 16);
        assert_eq!(small, json!({"path": "a.txt"}));

        let mut large = json!({"text": "é".repeat(RECORDED_ARGUMENTS)});
        let text = serde_json::to_string(&large).unwrap();
        let kept = kept_arguments(&mut large);
        assert_eq!(kept, serde_json::to_string(&large).unwrap().len());
        assert!(kept < 4 * KEPT_BEGINNING, "{kept}");
        assert_eq!(large["bytes"], text.len());
        let sha256: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(large["sha256"], sha256);
        let beginning = large["beginning"].as_str().unwrap();
        assert!(text.starts_with(beginning) && beginning.len() > KEPT_BEGINNING - 2, "{beginning}");
        assert!(large["truncated"].as_str().unwrap().contains("more than the 65536 a record keeps"));
    }
}
