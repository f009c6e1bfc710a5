#!/usr/bin/env bash
# Shoal (1- and 4-bit codes) and hnswlib, one after another on one pinned core, per dataset: the
# head-to-head of docs/benchmarks.md ("Shoal against hnswlib in one run"). Copies the results to
# bench/results/same-run-{shoal,peers}-<dataset>*.json, then redraws the table and plot.
#
#   bash bench/same_run.sh [datasets, default glove-100k,gcide-256,glove-400k] [cpu, default 0]
#
# The sets of 400k rows and more sweep only the points around their frontiers (a full sweep runs
# to every partition).
set -euo pipefail
cd "$(dirname "$0")/.."
DATASETS=${1:-glove-100k,gcide-256,glove-400k,synthetic-1m-128}
CPU=${2:-0}
RESULTS=${SHOAL_CACHE:-$HOME/.cache/shoal}/results
pip install -q -r bench/requirements-bench.txt
python3 bench/datasets.py --only "$DATASETS"
for ds in ${DATASETS//,/ }; do
  case $ds in
    glove-400k)
      sweep1=32:32,64:64,96:64,128:64,160:128,192:128,192:256,256:128,256:256
      sweep4=32:2,48:2,64:2,64:4,96:2,96:4,128:4,160:4,192:4,192:8,256:4,256:8 ;;
    synthetic-1m-128)
      sweep1=1:16,2:16,2:32,4:16,4:32,4:64,8:32,8:64,16:64,16:128
      sweep4=1:2,2:2,2:4,4:2,4:4,4:8,8:4,8:8,16:8,16:16 ;;
    *) sweep1=; sweep4= ;;
  esac
  for bits in 1 4; do
    sweep=$([ "$bits" = 1 ] && echo "$sweep1" || echo "$sweep4")
    env SHOAL_ANN_DATASETS="$ds" SHOAL_ANN_BITS="$bits" ${sweep:+SHOAL_ANN_SWEEP=$sweep} \
      taskset -c "$CPU" cargo bench -p shoal-host --bench ann
  done
  python3 bench/peers.py "$ds" --peers hnswlib --pin "$CPU"
  # Renamed in the cache too: `plots.py --collect` must not take these (hnswlib alone, short
  # sweeps) for the full peers run's files.
  for f in "shoal-$ds" "shoal-$ds-b4" "peers-$ds"; do
    mv "$RESULTS/$f.json" "$RESULTS/same-run-$f.json"
    cp "$RESULTS/same-run-$f.json" "bench/results/same-run-$f.json"
  done
done
python3 bench/plots.py
