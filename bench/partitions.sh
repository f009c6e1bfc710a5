#!/usr/bin/env bash
# Partition counts at equal recall: glove-400k (4-bit codes) and gcide-256 (1-bit) each built
# with the default 2√n partitions, twice and four times as many, swept around their frontiers
# one after another on one pinned core (docs/benchmarks.md, "How many partitions, and would
# spilled assignments help?"). Copies the results to
# bench/results/partitions-<dataset>-b<bits>-p<partitions>.json.
#
#   bash bench/partitions.sh [cpu, default 0]
set -euo pipefail
cd "$(dirname "$0")/.."
CPU=${1:-0}
RESULTS=${SHOAL_CACHE:-$HOME/.cache/shoal}/results
python3 bench/datasets.py --only glove-400k,gcide-256
run() {
  local ds=$1 bits=$2 parts=$3 sweep=$4
  SHOAL_ANN_DATASETS=$ds SHOAL_ANN_BITS=$bits SHOAL_ANN_PARTITIONS=$parts SHOAL_ANN_SWEEP=$sweep \
    SHOAL_ANN_REPEATS=3 taskset -c "$CPU" cargo bench -q -p shoal-host --bench ann
  local name=shoal-$ds$([ "$bits" = 1 ] || echo "-b$bits").json
  cp "$RESULTS/$name" "bench/results/partitions-$ds-b$bits-p$parts.json"
}
run glove-400k 4 1265 32:2,48:2,64:2,64:4,96:2,96:4,128:4,160:4,192:4,192:8,256:4,256:8
run glove-400k 4 2530 48:2,64:2,96:2,96:4,128:4,160:4,192:4,256:4,256:8,320:4,384:4,384:8,512:8
run glove-400k 4 5060 64:2,96:2,128:2,128:4,192:4,256:4,320:4,384:4,512:4,512:8,640:8,768:8
run gcide-256 1 690 32:16,64:16,96:16,128:16,160:16,160:32,192:32,256:32,384:32,512:32,512:64,690:32
run gcide-256 1 1380 64:16,96:16,128:16,160:16,192:16,192:32,256:32,320:32,384:32,512:32,768:32,1024:32,1024:64
run gcide-256 1 2760 96:16,128:16,192:16,256:16,320:16,384:32,512:32,768:32,1024:32,1536:32,2048:32,2048:64
