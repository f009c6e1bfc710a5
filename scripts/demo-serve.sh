#!/usr/bin/env bash
# The native host part of `make demo`: serves the imported GloVe collection over HTTP, asks it
# (and its Qdrant-compatible routes) for the neighbours of a few words, then keeps serving the
# browser example beside it until Ctrl-C (when run from a terminal; otherwise it stops).
#
#   scripts/demo-serve.sh DATA_DIR WORDS_FILE [PORT]
set -euo pipefail
data=$1 words=$2 port=${3:-6333}
shoal=target/release/shoal
log=$(mktemp)
"$shoal" serve --data "$data" --addr "127.0.0.1:$port" --static-dir . 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q '"listening"' "$log" && break; sleep 0.1; done
grep -q '"listening"' "$log" || { cat "$log"; exit 1; }
base="http://127.0.0.1:$port"
echo "shoal serve on $base: $(curl -s "$base/collections")"
for word in king france computer; do
  row=$(grep -n -x -m1 "$word" "$words" | cut -d: -f1)
  id=$((row - 1))
  vector=$(curl -s -X POST "$base/collections/glove/points" -H 'content-type: application/json' \
    -d "{\"ids\": [$id], \"with_vector\": true}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"][0]["vector"])')
  curl -s -X POST "$base/collections/glove/search" -H 'content-type: application/json' \
    -d "{\"vector\": $vector, \"limit\": 8}" |
    python3 -c '
import json, sys
words = open(sys.argv[1]).read().split("\n")
res = json.load(sys.stdin)
hits = [(words[p["id"]], p["score"]) for p in res["points"][1:]]
print(sys.argv[2].ljust(9), " ".join("%s (%.3f)" % h for h in hits))
' "$words" "$word"
done
echo "Qdrant-style count: $(curl -s -X POST "$base/collections/glove/points/count" -H 'content-type: application/json' -d '{}')"
if [ -t 0 ] && [ -z "${CI:-}" ]; then
  echo "browser example: $base/ui/examples/browser/   metrics: $base/metrics   (Ctrl-C stops)"
  wait $pid
fi
