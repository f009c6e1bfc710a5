//! Cross-target conformance, golden-file and end-to-end tests live in `tests/tests/`.
