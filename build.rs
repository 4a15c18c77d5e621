//! Links Toolgate's binary with its relative relocations packed (`DT_RELR`): a position-
//! independent executable of this size has ~95,000 of them, 2.2 MB of `.rela.dyn` that the
//! dynamic loader reads at every start and that then stays resident; packed, they take a few
//! KB. Needs GNU ld 2.38 or lld 15 and glibc 2.36 (Debian 12 has both).

fn main() {
    // Run again only when this file changes, not with every file of the package.
    println!("cargo:rerun-if-changed=build.rs");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
