//! The names tools are exposed under: what an LLM sees and calls.
//!
//! LLM APIs accept tool names matching `^[a-zA-Z0-9_-]{1,64}$`. An MCP server's tools are
//! namespaced `<prefix>_<tool>` (an empty prefix keeps the upstream name). The mapping is
//! deterministic and never drops a tool:
//! - characters outside the pattern become `_`, and because that can merge two names
//!   (`a.b`, `a_b`), a name that needed any mapping also gets a short hash of the original;
//! - a name longer than 64 is cut and ends in a hash of the whole name.
//!
//! Calls resolve the other way through the snapshot's reverse map (exposed name -> tool), built
//! from these same names, so resolution is the inverse of naming by construction.

use sha2::{Digest, Sha256};

pub const MAX_LEN: usize = 64;
/// Hex digits of the hash suffix.
const HASH_LEN: usize = 8;

/// Whether `name` is acceptable to every LLM API as a tool name.
pub fn is_valid(name: &str) -> bool {
    (1..=MAX_LEN).contains(&name.len()) && name.bytes().all(is_name_byte)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(HASH_LEN / 2).map(|b| format!("{b:02x}")).collect()
}

/// The exposed name of upstream tool `upstream` from a source with `prefix`.
pub fn exposed_name(prefix: &str, upstream: &str) -> String {
    let mut name = String::with_capacity(prefix.len() + upstream.len() + 1);
    if !prefix.is_empty() {
        name.push_str(prefix);
        name.push('_');
    }
    if !upstream.is_empty() && upstream.bytes().all(is_name_byte) {
        name.push_str(upstream);
    } else {
        name.extend(upstream.chars().map(|c| if c.is_ascii() && is_name_byte(c as u8) { c } else { '_' }));
        name.push('_');
        name.push_str(&hash(upstream));
    }
    shorten(name)
}

/// Cuts a name over [`MAX_LEN`] and appends a hash of the whole, so distinct long names stay
/// distinct.
fn shorten(name: String) -> String {
    if name.len() <= MAX_LEN {
        return name;
    }
    // Every byte is ASCII here, so any cut is a char boundary.
    let keep = MAX_LEN - HASH_LEN - 1;
    format!("{}_{}", &name[..keep], hash(&name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn plain_names_are_prefixed_and_kept() {
        assert_eq!(exposed_name("everything", "get-sum"), "everything_get-sum");
        assert_eq!(exposed_name("", "echo"), "echo");
    }

    #[test]
    fn mapped_characters_get_a_hash_so_names_do_not_merge() {
        let dotted = exposed_name("fs", "read.file");
        let underscored = exposed_name("fs", "read_file");
        assert!(dotted.starts_with("fs_read_file_"), "{dotted}");
        assert_eq!(underscored, "fs_read_file");
        assert_ne!(dotted, underscored);
        assert!(is_valid(&exposed_name("", "résumé/édition")));
    }

    #[test]
    fn long_names_are_shortened_not_dropped() {
        let long = "a".repeat(100);
        let name = exposed_name("server", &long);
        assert_eq!(name.len(), MAX_LEN);
        assert!(is_valid(&name));
        let other = exposed_name("server", &format!("{long}b"));
        assert_ne!(name, other, "names differing past the cut stay distinct");
        assert_eq!(name, exposed_name("server", &long), "deterministic");
    }

    #[test]
    fn empty_upstream_name_still_gets_a_valid_name() {
        assert!(is_valid(&exposed_name("", "")));
    }

    proptest! {
        #[test]
        fn exposed_names_always_match_the_pattern(prefix in "[A-Za-z0-9_-]{0,32}", upstream in any::<String>()) {
            let name = exposed_name(&prefix, &upstream);
            prop_assert!(is_valid(&name), "{:?}", name);
        }

        #[test]
        fn resolving_an_exposed_name_gives_back_its_upstream_name(
            prefix in "[a-z]{0,8}",
            upstreams in proptest::collection::hash_set(any::<String>(), 1..40),
        ) {
            let reverse: HashMap<String, &String> =
                upstreams.iter().map(|u| (exposed_name(&prefix, u), u)).collect();
            prop_assert_eq!(reverse.len(), upstreams.len(), "no two upstream names merged");
            for upstream in &upstreams {
                prop_assert_eq!(reverse[&exposed_name(&prefix, upstream)], upstream);
            }
        }
    }
}
