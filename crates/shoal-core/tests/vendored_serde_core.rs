//! The root `Cargo.toml` patches `serde_core` with `third_party/serde_core`, whose `Unexpected`
//! message does not print an `f64` (that one `write!` linked the standard library's float
//! printing into the wasm package: 8.5 KB gzipped). A patch whose version no longer matches the
//! `serde_core` that `serde` asks for is not an error: cargo warns "patch was not used" and
//! quietly builds the crates.io copy. This test tells the two apart by that message, so an
//! update of serde cannot drop the patch unnoticed (third_party/serde_core/README.md says how to
//! upgrade it).

#[test]
fn the_patched_serde_core_is_the_one_linked() {
    let message = serde::de::Unexpected::Float(1.5).to_string();
    assert_eq!(
        message, "floating point",
        "serde_core is not the patched copy in third_party/serde_core (crates.io's prints the value); \
         re-vendor it for the serde version in Cargo.lock"
    );
}
