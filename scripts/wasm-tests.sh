#!/usr/bin/env bash
# The core crates' Rust tests inside JavaScript engines: `wasm-pack test` runs the
# wasm-bindgen-test suites — kernel equivalence and the canonical order (shoal-kernels), the
# golden segments and the conformance scenario (shoal-tests) — for both builds of the package
# (SIMD128 and scalar) in Node and in headless Chromium (Debian's chromium-driver). Every run
# must report passing tests: wasm-bindgen-test-runner "skips" a suite that is configured for
# another engine and still exits 0, so a run without a "test result: ok. N passed" line for
# each suite, or with any "skipping" notice, fails here. Prints one line per run:
#   wasm-pack test [simd128/node] shoal-kernels: 26 passed; shoal-tests: 6 passed
#
# Environment: SHOAL_WASM_TEST_ENGINES (default "node chrome"), SHOAL_WASM_TEST_BUILDS
# (default "simd128 scalar").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"
engines="${SHOAL_WASM_TEST_ENGINES:-node chrome}"
builds="${SHOAL_WASM_TEST_BUILDS:-simd128 scalar}"
# A scenario run takes seconds per kernel variant; the runner's default limit is 20 s.
export WASM_BINDGEN_TEST_TIMEOUT=600

# crate path, then its test targets: each suite must report at least one passing test.
suites=("crates/shoal-kernels --test equivalence --test canonical_order" "tests --test golden --test conformance")

summary=()
for build in $builds; do
  for engine in $engines; do
    line="wasm-pack test [$build/$engine]"
    for suite in "${suites[@]}"; do
      read -r -a args <<< "$suite"
      crate="${args[0]}"
      label="$(basename "$crate")"; [ "$label" = tests ] && label=shoal-tests
      log="$root/target/wasm-tests-$build-$engine-$label.log"
      mkdir -p "$root/target"
      engine_args=(--node)
      engine_env=()
      if [ "$engine" = chrome ]; then
        engine_args=(--headless --chrome --chromedriver /usr/bin/chromedriver)
        engine_env=(WASM_BINDGEN_USE_BROWSER=1)
      fi
      build_env=()
      if [ "$build" = scalar ]; then
        # An empty RUSTFLAGS overrides .cargo/config.toml's +simd128; its own target dir keeps
        # the two builds from evicting each other.
        build_env=(RUSTFLAGS= CARGO_TARGET_DIR="$root/target/wasm-tests-scalar")
      fi
      echo "wasm-tests: [$build/$engine] wasm-pack test $crate ${args[*]:1}"
      status=0
      env "${build_env[@]}" "${engine_env[@]}" wasm-pack test "${engine_args[@]}" --mode no-install \
        "$crate" "${args[@]:1}" > "$log" 2>&1 || status=$?
      grep -E "^test |^test result" "$log" || true
      if [ "$status" -ne 0 ]; then
        tail -n 60 "$log"
        echo "wasm-tests: [$build/$engine] $crate failed (log: $log)" >&2
        exit 1
      fi
      if grep -qi "skipping" "$log"; then
        grep -i -B2 -A2 "skipping" "$log"
        echo "wasm-tests: [$build/$engine] $crate: a suite was skipped" >&2
        exit 1
      fi
      suites_run=$(grep -c "^test result: ok\. [1-9]" "$log" || true)
      wanted=$(( (${#args[@]} - 1) / 2 ))
      if [ "$suites_run" -ne "$wanted" ]; then
        echo "wasm-tests: [$build/$engine] $crate: $suites_run of $wanted suites reported passing tests" >&2
        exit 1
      fi
      passed=$(grep -o "^test result: ok\. [0-9]*" "$log" | awk '{s += $4} END {print s}')
      line="$line; $label: $passed passed"
    done
    summary+=("${line/]; /]: }")
  done
done
printf '%s\n' "${summary[@]}"
