#!/usr/bin/env bash
# The GCIDE dictionary collection of `make demo` and its test: prepares the entries and the
# embedder once (bench/prepare_gcide.py, cached under ~/.cache/shoal/gcide-demo), then builds
# the segment with the given shoal binary into target/gcide-demo/ (gcide.shoal, and embed/ with
# the page's tokenizer and token table), and lays out target/demo-site/: the only folder the
# demo's server shows (`--static-dir`), links to the page, the npm package and that data.
#
#   scripts/gcide-demo-data.sh SHOAL_BINARY
set -euo pipefail
shoal=$1
cache=${SHOAL_CACHE:-$HOME/.cache/shoal}/gcide-demo
out=target/gcide-demo
python3 bench/prepare_gcide.py --out "$cache"
mkdir -p "$out/embed"
cp "$cache"/embed/{tokenizer.json,table.bin} "$out/embed/"
"$shoal" build "$cache/vectors.npy" --metric cosine --fields "$(cat "$cache/fields.json")" \
  --payloads "$cache/payloads.jsonl" --index ivf-rabitq --quiet --out "$out/gcide.shoal"
site=target/demo-site
rm -rf "$site" && mkdir -p "$site/examples" "$site/bindings-js" "$site/target"
ln -s "$PWD/examples/gcide" "$site/examples/gcide"
ln -s "$PWD/bindings-js/js" "$site/bindings-js/js"
ln -s "$PWD/bindings-js/pkg" "$site/bindings-js/pkg"
ln -s "$PWD/$out" "$site/target/gcide-demo"
echo "gcide-demo: $out/gcide.shoal ($(wc -c < "$out/gcide.shoal") bytes), $out/embed/, $site/"
