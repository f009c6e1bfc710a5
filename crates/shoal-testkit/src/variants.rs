//! Which kernel variants a test suite runs, and the check that none it must run is missing.
//!
//! A suite that compares kernel variants runs every variant the machine has
//! ([`Kernels::available`]). A variant the machine lacks cannot run, so on its own a suite would
//! pass without it; `SHOAL_REQUIRE_KERNELS=sse2,avx2,avx512` (names as [`Kernels::name`] gives
//! them) turns such a missing variant into a failure, and `make test` sets it to every variant
//! the machine's CPU flags say it has. A wasm build compiled with `+simd128` always requires
//! `simd128` (it has no environment to read).
//!
//! This file is compiled into `shoal-testkit` and, by path, into `shoal-kernels`' own tests
//! (which cannot depend on the testkit): it uses nothing but `shoal_kernels` and `std`.

use shoal_kernels::Kernels;

/// The variant names a suite must run here: `SHOAL_REQUIRE_KERNELS` (comma-separated, blanks
/// ignored) plus `simd128` in a wasm build with SIMD128.
pub fn required() -> Vec<String> {
    let mut names: Vec<String> = std::env::var("SHOAL_REQUIRE_KERNELS")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if cfg!(all(target_family = "wasm", target_feature = "simd128")) && !names.iter().any(|n| n == "simd128") {
        names.push("simd128".to_string());
    }
    names
}

/// Panics when `name` is required here; for a variant a suite found missing.
pub fn missing(suite: &str, name: &str) {
    assert!(
        !required().iter().any(|r| r == name),
        "{suite}: kernel variant {name} is required (SHOAL_REQUIRE_KERNELS) but not available on this machine"
    );
}

/// Every variant usable here, the scalar reference first; panics when a required variant is
/// missing (or is not a variant name at all).
///
/// `SHOAL_ONLY_KERNELS=neon` (names as for `SHOAL_REQUIRE_KERNELS`) keeps only the named
/// variants, for a suite too slow to run every variant where it runs (the end-to-end conformance
/// scenario under QEMU: there the kernel equivalence suite still compares every variant to the
/// scalar one, and each kept variant is still held to the committed digests).
pub fn under_test(suite: &str) -> Vec<Kernels> {
    let mut available: Vec<Kernels> = Kernels::available().collect();
    let only: Vec<String> = std::env::var("SHOAL_ONLY_KERNELS")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if !only.is_empty() {
        for name in &only {
            assert!(
                available.iter().any(|k| k.name() == name),
                "{suite}: kernel variant {name} (SHOAL_ONLY_KERNELS) is not available on this machine"
            );
        }
        available.retain(|k| only.iter().any(|n| n == k.name()));
    }
    for name in required() {
        assert!(
            available.iter().any(|k| k.name() == name),
            "{suite}: kernel variant {name} is required (SHOAL_REQUIRE_KERNELS) but not available on this \
             machine; available: {:?}",
            available.iter().map(|k| k.name()).collect::<Vec<_>>()
        );
    }
    available
}

/// Writes `"{suite}: kernel variants run: a, b, c"` to the process's standard error, past the
/// test harness's capture (which hides what passing tests print), so the log of every run
/// names the variants it compared. On wasm it returns the line for the caller to log.
pub fn report(suite: &str, ran: &[Kernels]) -> String {
    let names: Vec<&str> = ran.iter().map(|k| k.name()).collect();
    let mut line = format!("{suite}: kernel variants run: {}", names.join(", "));
    let required = required();
    if !required.is_empty() {
        line.push_str(&format!(" (required: {})", required.join(", ")));
    }
    #[cfg(not(target_family = "wasm"))]
    {
        use std::io::Write;
        // `eprintln!` is captured by libtest for passing tests; a direct write is not.
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    line
}
