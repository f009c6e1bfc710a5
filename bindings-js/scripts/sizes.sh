#!/usr/bin/env bash
# Prints the raw and gzipped (gzip -9) size of each build of the npm package's wasm module,
# against the budget: <= 250 KB (250,000 bytes) gzipped (SHOAL_WASM_GZIP_BUDGET overrides it),
# and of the remote module (`Collection.openRemote`) against its own, 220 KB
# (SHOAL_REMOTE_GZIP_BUDGET),
# and where the SIMD build's bytes go: the largest functions and data segments (twiggy, over the
# same optimisation with names kept, which build.sh leaves in target/js-sizes/). Exits 1 when a
# build is over the budget.
#   bash bindings-js/scripts/sizes.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
budget=${SHOAL_WASM_GZIP_BUDGET:-250000}
status=0
remote_budget=${SHOAL_REMOTE_GZIP_BUDGET:-220000}
for variant in simd scalar remote-simd remote-scalar; do
  wasm="$here/pkg/$variant/shoal_js_bg.wasm"
  budget=${SHOAL_WASM_GZIP_BUDGET:-250000}
  case "$variant" in remote-*) wasm="$here/pkg/$variant/shoal_js_remote_bg.wasm"; budget=$remote_budget ;; esac
  if [ ! -f "$wasm" ]; then echo "sizes: pkg/$variant: not built"; continue; fi
  raw=$(wc -c < "$wasm")
  gz=$(gzip -9 -c "$wasm" | wc -c)
  verdict="within the ${budget}-byte gzip budget"
  if [ "$gz" -gt "$budget" ]; then verdict="OVER the ${budget}-byte gzip budget"; status=1; fi
  awk -v v="$variant" -v raw="$raw" -v gz="$gz" -v verdict="$verdict" 'BEGIN {
    printf "sizes: pkg/%-13s wasm %8d bytes raw (%6.1f KiB), %7d bytes gzipped (%6.1f KiB) - %s\n", v, raw, raw / 1024, gz, gz / 1024, verdict
  }'
done
named="$here/../target/js-sizes/simd.named.wasm"
if ! command -v twiggy >/dev/null; then
  echo "sizes: no per-function report: twiggy is not installed (make setup-rust installs it)"
elif [ ! -f "$named" ] || [ "$named" -ot "$here/pkg/simd/shoal_js_bg.wasm" ]; then
  echo "sizes: no per-function report: $named is missing or older than pkg/simd (run build.sh)"
else
  echo "sizes: pkg/simd, the largest items (sizes with function names kept, before stripping them):"
  twiggy top -n "${SHOAL_SIZES_TOP:-25}" "$named" | sed 's/^/sizes:   /'
fi
exit "$status"
