#!/usr/bin/env bash
# The served part of `make demo`: imports the GCIDE dictionary segment (scripts/gcide-demo-data.sh)
# into a fresh `shoal serve` data folder, serves it with the demo page beside it, asks it two
# queries from the terminal, then keeps serving until Ctrl-C (when run from a terminal;
# otherwise it stops).
#
#   scripts/demo-serve.sh SEGMENT DATA_DIR [PORT]
set -euo pipefail
segment=$1 data=$2 port=${3:-6333}
shoal=target/release/shoal
rm -rf "$data"
"$shoal" import --data "$data" --name gcide "$segment"
log=$(mktemp)
# Only target/demo-site is served (the page, the package and the data; scripts/gcide-demo-data.sh).
"$shoal" serve --data "$data" --addr "127.0.0.1:$port" --static-dir target/demo-site 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q '"listening"' "$log" && break; sleep 0.1; done
grep -q '"listening"' "$log" || { cat "$log"; exit 1; }
base="http://127.0.0.1:$port"
ask() {
  echo "POST /collections/gcide/search $1"
  curl -s -X POST "$base/collections/gcide/search" -H 'content-type: application/json' -d "$1" |
    python3 -c '
import json, sys
for p in json.load(sys.stdin)["points"]:
    d = p["payload"]
    print("  %-14s %-9s %.4f  %s" % (d["headword"], d["pos"], p["score"], d["definition"][:70]))
'
}
ask '{"text": "musical instrument with strings", "limit": 5, "with_payload": true}'
ask '{"text": "move quickly", "limit": 5, "with_payload": true, "filter": {"must": [{"key": "pos", "match": {"value": "verb"}}, {"key": "letters", "range": {"lte": 5}}]}}'
echo "Qdrant-style count: $(curl -s -X POST "$base/collections/gcide/points/count" -H 'content-type: application/json' -d '{}')"
if [ -t 0 ] && [ -z "${CI:-}" ]; then
  echo
  echo "The demo page (WebAssembly in the tab beside this server, answers compared):"
  echo "    $base/ui/examples/gcide/"
  echo "metrics: $base/metrics    (Ctrl-C stops)"
  wait $pid
fi
