#!/usr/bin/env bash
# Builds the npm package's WebAssembly modules with wasm-pack, each twice:
#   pkg/simd           the main module (crate shoal-js) compiled with +simd128 (kernels: simd128)
#   pkg/scalar         the same without it (kernels: scalar), for engines without SIMD128
#   pkg/remote-simd    the module of `Collection.openRemote` (crate shoal-js-remote: segments
#   pkg/remote-scalar  read by byte ranges), loaded only by pages that open a remote segment
# Each one: `wasm-pack build --target web --profile wasm-release --mode no-install` (cargo build
# for wasm32-unknown-unknown, then the pinned wasm-bindgen-cli; no package.json, no .gitignore —
# the npm package is bindings-js/ itself), then wasm-opt -Oz from the npm package binaryen
# (wasm-pack's own wasm-opt step is off: it would download binaryen, and Debian's binaryen
# breaks the output). What is left here is what wasm-pack cannot do: the two RUSTFLAGS
# variants, wasm-opt, and the size report.
#
# Environment:
#   SHOAL_JS_TARGET_DIR  cargo target dir of the SIMD build (default: <repo>/target/js); the
#                        scalar build uses "$SHOAL_JS_TARGET_DIR-scalar" so the two builds do
#                        not evict each other.
#   SHOAL_JS_PROFILE     cargo profile (default: wasm-release)
#   SHOAL_JS_ONLY        "simd" or "scalar" to build one kind of each module
#   SHOAL_JS_FEATURES    cargo features of shoal-js (e.g. "bench": the kernel benchmark exports)
#   SHOAL_JS_PKG         the output folder under bindings-js/ (default: pkg, the published one;
#                        a build with features goes elsewhere, e.g. pkg-bench)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" # bindings-js/
root="$(cd "$here/.." && pwd)"
target_base="${SHOAL_JS_TARGET_DIR:-$root/target/js}"
profile="${SHOAL_JS_PROFILE:-wasm-release}"
only="${SHOAL_JS_ONLY:-}"
features="${SHOAL_JS_FEATURES:-}"
pkg="${SHOAL_JS_PKG:-pkg}"
if [ -n "$features" ] && [ "$pkg" = pkg ]; then
  echo "build.sh: a build with features ($features) must not replace the published pkg/ (set SHOAL_JS_PKG)" >&2
  exit 1
fi
feature_args=()
if [ -n "$features" ]; then feature_args=(-- --features "$features"); fi
wasm_bindgen_version="0.2.130"
wasm_pack_version="0.15.1"

export PATH="$HOME/.cargo/bin:$PATH"

# --- tools --------------------------------------------------------------------------------
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  echo "build.sh: installing the rustup target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $wasm_bindgen_version" ]; then
  echo "build.sh: installing wasm-bindgen-cli $wasm_bindgen_version (takes a few minutes)"
  # No --locked: one of its locked dependencies is not on the registry here.
  cargo install wasm-bindgen-cli --version "$wasm_bindgen_version"
fi

if [ "$(wasm-pack --version 2>/dev/null || true)" != "wasm-pack $wasm_pack_version" ]; then
  echo "build.sh: installing wasm-pack $wasm_pack_version (takes a few minutes)"
  # The npm package `wasm-pack` downloads its binary from GitHub at install: not here.
  cargo install wasm-pack --version "$wasm_pack_version"
fi

wasm_opt=""
for candidate in "$root/node_modules/.bin/wasm-opt" "$here/node_modules/.bin/wasm-opt"; do
  if [ -x "$candidate" ]; then wasm_opt="$candidate"; break; fi
done
if [ -z "$wasm_opt" ]; then
  echo "build.sh: installing npm dependencies (for binaryen's wasm-opt)"
  (cd "$root" && npm install --no-audit --no-fund)
  wasm_opt="$root/node_modules/.bin/wasm-opt"
fi
case "$("$wasm_opt" --version)" in
  *"version 132"*) ;;
  *) echo "build.sh: expected binaryen 132's wasm-opt, got: $("$wasm_opt" --version)" >&2; exit 1 ;;
esac

# Features rustc 1.95 enables by default on wasm32-unknown-unknown; wasm-opt must accept them.
base_features=(--enable-mutable-globals --enable-nontrapping-float-to-int --enable-sign-ext
  --enable-bulk-memory --enable-bulk-memory-opt --enable-reference-types --enable-multivalue
  --enable-call-indirect-overlong)

# -Oz, then binaryen's whole-program type flow analysis (GUFA: constants and unreachable code
# found across calls) and -Oz again: 0.5 KB gzipped less than -Oz alone. And:
#   --converge           the passes again while the module shrinks (0.4 KB).
#   --reorder-functions-by-name  the functions in name order, so a crate's and a module's
#                        functions sit next to each other for gzip (2.1 KB; the raw size barely
#                        moves). The order of functions does not change what they compute.
#   --low-memory-unused  assume addresses below 1 KiB are never used, so constant offsets fold
#                        into loads and stores (1.3 KB). That changes only an access whose
#                        address wraps past 4 GiB into that KiB: the stack is placed first
#                        (`__stack_pointer` starts at 1 MiB, the data above it), so only a stack
#                        pointer that has overflowed below 0 does that, and it then traps
#                        instead of corrupting memory. Its effect on the kernels is mixed (in
#                        Node, dot_batch 5% slower, l2_sq_batch 8% faster); on whole searches
#                        it is within this machine's noise (glove-100k in Node, 2026-11-29,
#                        medians of 3 alternating runs: 1-bit 3,439 QPS with it, 2,989 without;
#                        4-bit 3,774 and 3,689; one build's runs spread 2,196-3,407).
passes=(-Oz --gufa -Oz --converge --reorder-functions-by-name --low-memory-unused)

# --- one build ----------------------------------------------------------------------------
# build CRATE_DIR NAME VARIANT RUSTFLAGS [wasm-opt flags]: the module NAME_bg.wasm of the crate
# in CRATE_DIR into pkg/VARIANT.
build() {
  local crate="$1" name="$2" variant="$3" rustflags="$4"
  shift 4
  local target_dir="$target_base"
  case "$variant" in *scalar) target_dir="$target_base-scalar" ;; esac
  local out="$here/$pkg/$variant"
  echo "build.sh: [$variant] wasm-pack build (RUSTFLAGS='$rustflags', profile $profile)"
  # Keep the `target_features` section for wasm-bindgen (the profile's `strip = true` would
  # drop it); wasm-opt strips it, debug info and producers afterwards.
  rm -rf "$out"
  RUSTFLAGS="$rustflags" CARGO_TARGET_DIR="$target_dir" CARGO_PROFILE_WASM_RELEASE_STRIP=false \
    wasm-pack --log-level warn build "$crate" --target web --out-dir "$out" --profile "$profile" \
    --mode no-install --no-pack --no-gitignore --no-opt "${feature_args[@]}"
  echo "build.sh: [$variant] wasm-opt ${passes[*]}"
  if [ "$variant" = simd ] && [ "$pkg" = pkg ]; then
    # The same optimisation keeping the function names (-g), for the per-function size report
    # of sizes.sh (twiggy); the package's module is optimised without -g below (-g changes a
    # few of wasm-opt's choices, so stripping this one would not give the same bytes).
    mkdir -p "$root/target/js-sizes"
    "$wasm_opt" "${passes[@]}" -g "${base_features[@]}" "$@" "$out/${name}_bg.wasm" -o "$root/target/js-sizes/simd.named.wasm"
  fi
  "$wasm_opt" "${passes[@]}" --strip-debug --strip-producers --strip-target-features "${base_features[@]}" "$@" "$out/${name}_bg.wasm" -o "$out/${name}_bg.wasm.opt"
  mv "$out/${name}_bg.wasm.opt" "$out/${name}_bg.wasm"
  if [ -f "$root/target/js-sizes/simd.named.wasm" ] && [ "$variant" = simd ] && [ "$pkg" = pkg ]; then
    touch "$root/target/js-sizes/simd.named.wasm" # the report's module goes with this build
  fi
  echo "build.sh: [$variant] $(wc -c < "$out/${name}_bg.wasm") bytes"
}

# The main module (shoal-js), then the module of `Collection.openRemote` (shoal-js-remote, not
# in builds with features: those are for benchmarks of the main module).
remote=true
if [ -n "$features" ]; then remote=false; fi
if [ -z "$only" ] || [ "$only" = simd ]; then
  build "$here" shoal_js simd "-C target-feature=+simd128" --enable-simd
  if $remote; then build "$here/remote" shoal_js_remote remote-simd "-C target-feature=+simd128" --enable-simd; fi
fi
if [ -z "$only" ] || [ "$only" = scalar ]; then
  # An empty RUSTFLAGS overrides .cargo/config.toml's +simd128.
  build "$here" shoal_js scalar ""
  if $remote; then build "$here/remote" shoal_js_remote remote-scalar ""; fi
fi

# `js/load.js` imports the SIMD build's glue for both builds (and `js/remote.js` the remote
# SIMD build's): each pair must be the same file.
for pair in "simd/shoal_js.js scalar/shoal_js.js" "remote-simd/shoal_js_remote.js remote-scalar/shoal_js_remote.js"; do
  set -- $pair
  if [ -f "$here/$pkg/$1" ] && [ -f "$here/$pkg/$2" ] && ! cmp -s "$here/$pkg/$1" "$here/$pkg/$2"; then
    echo "build.sh: the glue of $1 and $2 differ; the package uses one for both" >&2
    exit 1
  fi
done

# --- sizes (raw and gzipped; the budget is checked by `make test-edge`) ----------------------
if [ "$pkg" = pkg ]; then bash "$here/scripts/sizes.sh" || true; fi
