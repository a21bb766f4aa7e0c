//! The window's TypeScript bindings (`ui/src/bindings.ts`) are generated from the Rust
//! commands and types; this test fails when the committed file is stale. To regenerate:
//! `GATEHOUSE_BLESS=1 cargo test --test bindings`.

use std::path::Path;

#[test]
fn the_committed_bindings_match_the_rust_commands_and_types() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed = root.join(gatehouse_desktop::BINDINGS_FILE);
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("bindings.ts");
    gatehouse_desktop::export_bindings(&fresh).unwrap();
    let fresh = std::fs::read_to_string(&fresh).unwrap();
    if std::env::var_os("GATEHOUSE_BLESS").is_some() {
        std::fs::write(&committed, &fresh).unwrap();
    }
    let old = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(old == fresh, "{} is stale: run `GATEHOUSE_BLESS=1 cargo test --test bindings` and commit it", committed.display());
}
